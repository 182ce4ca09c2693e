"""The shim never acts on a JobSet admission would refuse.

On a cluster where our webhook runs, the API server refused such a JobSet already. Where none
ran (the CRD alone, a webhook with failurePolicy Ignore that was down, a JobSet created before
the webhook was installed), the shim asks the decider's Validate once per generation of each
JobSet: the same admission as `decider validate` and the webhook. An invalid generation gets
nothing created, patched or deleted, a Warning event `InvalidJobSet` naming every field error,
and no further pass until a new generation (an edit of the spec) arrives.

A later generation is validated as an update against the last generation this shim found
valid, so an edit admission would refuse (a changed `replicas`, say) is caught too; without one
(the shim just started) it is validated as a create.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import grpc

from decider_api.v1 import decider_pb2 as pb
from shim.events import EventRecorder
from shim.kube import Obj
from shim.refusals import as_refusal

log = logging.getLogger(__name__)

INVALID_REASON = "InvalidJobSet"
# One event per invalid generation: passes of that generation are not retried anyway, and an
# event lives an hour by default.
EVENT_INTERVAL = 24 * 3600.0
# Generations remembered; past this the oldest are validated again when seen again.
MAX_ENTRIES = 16384


def admission_view(jobset: Obj) -> Obj:
    """What admission judges: the spec, and the metadata a user writes (not status, not the
    server-set fields)."""
    meta = jobset.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "generateName", "namespace", "labels", "annotations")
            if k in meta}
    return {"apiVersion": jobset.get("apiVersion"), "kind": jobset.get("kind"),
            "metadata": kept, "spec": jobset.get("spec")}


class SpecCheck:
    def __init__(self, decider: Any, recorder: EventRecorder, feature_gates: dict[str, bool],
                 timeout: float, existing_pvcs: Callable[[Obj], list[Obj]] | None = None,
                 traced: Callable[[str], AbstractContextManager[list[tuple[str, str]]]]
                 | None = None) -> None:
        self.decider = decider
        # The Validate call as a client span whose metadata carries the trace
        # (ShimTelemetry.decider_call); none: untraced.
        self.traced = traced or (lambda method: nullcontext([]))
        # PVCs of the JobSet's volumeClaimPolicies' names that it does not control: a create is
        # judged against them, as upstream's webhook does (Retain and the same spec, or refused).
        self.existing_pvcs = existing_pvcs
        self.recorder = recorder
        self.feature_gates = dict(feature_gates)
        self.timeout = timeout
        # (uid, generation) -> the field errors ("" list: valid)
        self._verdicts: OrderedDict[tuple[str, int], tuple[str, ...]] = OrderedDict()
        # uid -> (generation, the admission view of the last valid generation)
        self._accepted: OrderedDict[str, tuple[int, Obj]] = OrderedDict()
        self._lock = threading.Lock()
        self.validations = 0

    def admissible(self, jobset: Obj) -> bool:
        """Whether a pass may act on this generation; asks the decider once per generation.
        A failed call raises (grpc.RpcError, or DecisionRefused for a refusal): the pass is
        retried as any other."""
        meta = jobset["metadata"]
        uid, generation = str(meta.get("uid", "")), int(meta.get("generation") or 0)
        with self._lock:
            verdict = self._verdicts.get((uid, generation))
            accepted = self._accepted.get(uid)
        if verdict is None:
            view = admission_view(jobset)
            old = accepted[1] if accepted is not None and accepted[0] < generation else None
            verdict = self._validate(jobset, view, old)
            with self._lock:
                self._remember(self._verdicts, (uid, generation), verdict)
                if not verdict and (accepted is None or accepted[0] < generation):
                    self._remember(self._accepted, uid, (generation, view))
            if verdict:
                log.warning("%s/%s generation %d: invalid, not acted on: %s",
                            meta.get("namespace"), meta.get("name"), generation,
                            "; ".join(verdict))
        if verdict:
            self.recorder.warn_once(jobset, INVALID_REASON, self.message(generation, verdict),
                                    ("invalid", generation), EVENT_INTERVAL)
        return not verdict

    @staticmethod
    def message(generation: int, errors: tuple[str, ...]) -> str:
        return (f"spec (generation {generation}) is invalid; nothing is created, changed or "
                "deleted for it until a new generation fixes it: " + "; ".join(errors))

    def _validate(self, jobset: Obj, view: Obj, old: Obj | None) -> tuple[str, ...]:
        request = pb.ValidateRequest(object_json=json.dumps(view, separators=(",", ":")))
        request.options.feature_gates.update(self.feature_gates)
        if old is not None:
            request.old_object_json = json.dumps(old, separators=(",", ":"))
        elif self.existing_pvcs is not None:
            for pvc in self.existing_pvcs(jobset):
                request.objects.add(api_version="v1", kind="PersistentVolumeClaim",
                                    name=str(pvc["metadata"].get("name", "")),
                                    object_json=json.dumps(pvc, separators=(",", ":")))
        self.validations += 1
        try:
            with self.traced("Validate") as metadata:
                response = self.decider.validate(request, timeout=self.timeout,
                                                 metadata=metadata)
        except grpc.RpcError as exc:
            refused = as_refusal(jobset, exc)
            if refused is not None:
                raise refused from exc
            raise
        return tuple(f"{e.field}: {e.message}" if e.field else e.message
                     for e in response.errors) if not response.valid else ()

    @staticmethod
    def _remember(table: OrderedDict[Any, Any], key: Any, value: Any) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > MAX_ENTRIES:
            table.popitem(last=False)
