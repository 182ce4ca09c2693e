"""The superseded draft of ``spec.scheduling`` (jobset#1250 before its composite API, which this
project accepted until it followed upstream's newest code): which fields are gone, and what
replaced each, so a JobSet written for the draft is refused naming the new spelling.

Admission meets them as unknown fields (strict decoding, admission/create); PlanGang and Decide
read stored objects without strict decoding and refuse them here with the same words.
"""

from __future__ import annotations

from typing import Any

from decider.core.errors import FieldError

# Fields of the superseded draft (#1250 before its composite API, and what this project
# accepted until then): strict decoding calls them unknown; these say what replaced them.
_DRAFT_HINTS: tuple[tuple[str, str], ...] = (
    (".schedulingPolicy.gang.minCount",
     "a composite policy carries no pod count since jobset#1250's composite API: the "
     "PodGroup's minCount is derived from the pods it covers (parallelism x replicas) and "
     "patched on every pass; remove it (minGroupCount counts child groups, and needs "
     "JobSetGangOfGangs), or set spec.scheduling.replicatedJobs[].job.schedulingPolicy.gang."
     "minCount for a quorum per Job"),
    (".resourceClaims",
     "shared claims moved to spec.scheduling.replicatedJobs[].job.resourceClaims (one "
     "PodGroup per Job), the only level that has them"),
    (".replicatedJobPolicies",
     "renamed spec.scheduling.replicatedJobs, each entry naming its targetReplicatedJobs"),
    (".targetReplicatedJob",
     "renamed targetReplicatedJobs, a list of ReplicatedJob names"),
    (".policy", "renamed schedulingPolicy"),
    (".constraints", "renamed schedulingConstraints"),
    (".disruption", "renamed disruptionMode"),
)


def draft_hint(path: str) -> str | None:
    """What replaced an unknown field of spec.scheduling, if it is a superseded spelling."""
    if not path.startswith("spec.scheduling."):
        return None
    for suffix, hint in _DRAFT_HINTS:
        if path.endswith(suffix):
            return hint
    return None



_TOP_ONLY = (".resourceClaims", ".policy", ".constraints", ".disruption",
             ".replicatedJobPolicies")
_ENTRY = (".resourceClaims", ".policy", ".constraints", ".disruption", ".targetReplicatedJob")


def _min_count(obj: dict[str, Any], path: str, out: list[str]) -> None:
    policy = obj.get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, dict) else None
    if isinstance(gang, dict) and "minCount" in gang:
        out.append(f"{path}.schedulingPolicy.gang.minCount")


def draft_fields(raw: Any) -> list[str]:
    """Paths of the draft's fields in a spec.scheduling (none for a malformed one: the type
    checks say what is wrong with that)."""
    if not isinstance(raw, dict):
        return []
    out: list[str] = []
    path = "spec.scheduling"
    _min_count(raw, path, out)
    out.extend(f"{path}{key}" for key in _TOP_ONLY if key[1:] in raw)
    entries = raw.get("replicatedJobs")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            continue
        epath = f"{path}.replicatedJobs[{i}]"
        _min_count(entry, epath, out)
        out.extend(f"{epath}{key}" for key in _ENTRY if key[1:] in entry)
    return sorted(out)


def unknown_field_message(path: str) -> str:
    """Strict decoding's words, with what replaced a superseded spelling."""
    message = f'strict decoding error: unknown field "{path}"'
    hint = draft_hint(path)
    return f"{message}; {hint}" if hint else message


def draft_errors(raw: Any) -> list[FieldError]:
    return [FieldError(p, unknown_field_message(p)) for p in draft_fields(raw)]


__all__ = ["draft_errors", "draft_fields", "draft_hint", "unknown_field_message"]
