"""Success policy (upstream success_policy.go).

Jobs that count are the current attempt's successful Jobs whose replicated Job is a target (all
replicated Jobs when no targets are listed). Operator Any needs one of them; All needs the sum of
the targeted replicated Jobs' replicas — so All over targets with zero replicas is met by the
first success of any Job.
"""

from __future__ import annotations

from collections.abc import Collection

from decider.core import conditions
from decider.core import constants as c
from decider.core.model import ObservedJob
from decider.core.state import PassState


def _targeted(targets: Collection[str], rjob_name: str) -> bool:
    return not targets or rjob_name in targets


def jobs_expected(st: PassState) -> int:
    js = st.js
    if js.success_operator == "Any":
        return 1
    targets = frozenset(js.success_targets)
    return sum(rj.replicas for rj in js.replicated_jobs if _targeted(targets, rj.name))


def execute(st: PassState, successful: list[ObservedJob]) -> bool:
    """Mark the JobSet Completed when the policy is met; return whether it was."""
    targets = st.js.success_targets
    # A set: asked once per successful Job.
    wanted = frozenset(targets)
    matching = sum(1 for job in successful
                   if _targeted(wanted, job.labels.get(c.REPLICATED_JOB_NAME, "")))
    expected = jobs_expected(st)
    if matching < expected:
        return False
    conditions.set_completed(st)
    scope = ", ".join(targets) if targets else "all replicated jobs"
    st.explain(f"success policy {st.js.success_operator} over {scope} is met "
               f"({matching} of {expected} required jobs succeeded): the JobSet completes")
    return True
