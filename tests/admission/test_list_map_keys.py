"""listtype validation of the lists upstream's CRD marks x-kubernetes-list-type map (with
x-kubernetes-list-map-keys, one key or several) or set, down in the Job and pod templates.

The API server refuses a repeated key with `Duplicate value: <key as JSON>` at the second
item (apiextensions' listtype validation), before any webhook. A composite key is the object of
its key fields, printed by json.Marshal (fields sorted, which for these keys is also the CRD's
order), and compared after defaulting: ports' protocol defaults to TCP.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.core.admission import default_jobset, validate_create, validate_update

from .jobsets import chain, jobset, put

ROOT = Path(__file__).resolve().parents[2]
JOB = "spec.replicatedJobs[0].template.spec"
POD = f"{JOB}.template.spec"
MAIN = f"{POD}.containers[0]"
Mutator = Any


def _dup(path: str, key: dict[str, Any] | int) -> tuple[str, str]:
    """The expected error: the key shown as Go's json.Marshal writes it (compact, sorted)."""
    return path, "Duplicate value: " + json.dumps(key, separators=(",", ":"), sort_keys=True)


def _ports(*ports: dict[str, Any], container: str = "containers") -> Mutator:
    if container == "containers":
        return put(f"{MAIN}.ports", list(ports))
    # An init or ephemeral container of its own, next to the main one.
    return put(f"{POD}.{container}", [{"name": "extra", "image": "busybox",
                                       "ports": list(ports)}])


def _spread(*pairs: tuple[str, str], max_skew: int = 1) -> Mutator:
    return put(f"{POD}.topologySpreadConstraints", [
        {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when} for key, when in pairs
    ])


def _pvc_conditions(*types: str) -> Mutator:
    """A volume claim policy (mounted, as the webhook requires) whose PVC template carries
    status conditions: the CRD keys them on type."""
    return chain(
        put("spec.volumeClaimPolicies", [{
            "templates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"]},
                "status": {"conditions": [{"type": t, "status": "True"} for t in types]},
            }],
        }]),
        put(f"{MAIN}.volumeMounts", [{"name": "data", "mountPath": "/data"}]),
    )


TCP80 = {"containerPort": 80, "protocol": "TCP"}

# (mutator, expected Duplicate errors): an empty list means the object is admitted.
ROWS = [
    # containers[].ports: keyed on [containerPort, protocol], protocol defaulted to TCP.
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 80}),
                 [_dup(f"{MAIN}.ports[1]", TCP80)], id="ports/default-protocol-twice"),
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}),
                 [_dup(f"{MAIN}.ports[1]", TCP80)], id="ports/default-and-explicit-TCP"),
    pytest.param(_ports({"containerPort": 80, "name": "a"}, {"containerPort": 80, "name": "b"}),
                 [_dup(f"{MAIN}.ports[1]", TCP80)], id="ports/name-is-not-part-of-the-key"),
    pytest.param(_ports({"containerPort": 53, "protocol": "UDP"},
                        {"containerPort": 53, "protocol": "UDP"}),
                 [_dup(f"{MAIN}.ports[1]", {"containerPort": 53, "protocol": "UDP"})],
                 id="ports/UDP-twice"),
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 80}, {"containerPort": 80}),
                 [_dup(f"{MAIN}.ports[1]", TCP80)], id="ports/reported-once-at-second-item"),
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}),
                 [], id="ports/TCP-and-UDP-differ"),
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 81}), [],
                 id="ports/different-ports"),
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 80}, container="initContainers"),
                 [_dup(f"{POD}.initContainers[0].ports[1]", TCP80)], id="initContainers-ports"),
    pytest.param(_ports({"containerPort": 80}, {"containerPort": 80},
                        container="ephemeralContainers"),
                 [_dup(f"{POD}.ephemeralContainers[0].ports[1]", TCP80)],
                 id="ephemeralContainers-ports"),
    # topologySpreadConstraints: keyed on [topologyKey, whenUnsatisfiable].
    pytest.param(_spread(("zone", "DoNotSchedule"), ("zone", "DoNotSchedule")),
                 [_dup(f"{POD}.topologySpreadConstraints[1]",
                       {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"})],
                 id="topologySpreadConstraints/same-key-and-action"),
    pytest.param(chain(_spread(("zone", "DoNotSchedule"), ("zone", "DoNotSchedule")),
                       put(f"{POD}.topologySpreadConstraints[1].maxSkew", 2)),
                 [_dup(f"{POD}.topologySpreadConstraints[1]",
                       {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"})],
                 id="topologySpreadConstraints/maxSkew-is-not-part-of-the-key"),
    pytest.param(_spread(("zone", "DoNotSchedule"), ("zone", "ScheduleAnyway")), [],
                 id="topologySpreadConstraints/different-action"),
    pytest.param(_spread(("zone", "DoNotSchedule"), ("host", "DoNotSchedule")), [],
                 id="topologySpreadConstraints/different-key"),
    # Single-key list maps of the pod spec.
    pytest.param(put(f"{POD}.hostAliases", [{"ip": "10.0.0.1", "hostnames": ["a"]},
                                            {"ip": "10.0.0.1", "hostnames": ["b"]}]),
                 [_dup(f"{POD}.hostAliases[1]", {"ip": "10.0.0.1"})], id="hostAliases/same-ip"),
    pytest.param(put(f"{POD}.hostAliases", [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]), [],
                 id="hostAliases/different-ip"),
    pytest.param(put(f"{POD}.imagePullSecrets", [{"name": "regcred"}, {"name": "regcred"}]),
                 [_dup(f"{POD}.imagePullSecrets[1]", {"name": "regcred"})],
                 id="imagePullSecrets/same-name"),
    pytest.param(put(f"{POD}.imagePullSecrets", [{}, {"name": ""}]),
                 [_dup(f"{POD}.imagePullSecrets[1]", {"name": ""})],
                 id="imagePullSecrets/name-defaulted-to-empty"),
    pytest.param(put(f"{POD}.imagePullSecrets", [{"name": "a"}, {"name": "b"}]), [],
                 id="imagePullSecrets/different-names"),
    pytest.param(put(f"{POD}.resourceClaims", [{"name": "gpu", "resourceClaimName": "a"},
                                               {"name": "gpu", "resourceClaimName": "b"}]),
                 [_dup(f"{POD}.resourceClaims[1]", {"name": "gpu"})],
                 id="resourceClaims/same-name"),
    pytest.param(put(f"{POD}.resourceClaims", [{"name": "gpu"}, {"name": "tpu"}]), [],
                 id="resourceClaims/different-names"),
    pytest.param(put(f"{POD}.resources", {"claims": [{"name": "gpu"}, {"name": "gpu"}]}),
                 [_dup(f"{POD}.resources.claims[1]", {"name": "gpu"})],
                 id="pod-resources-claims/same-name"),
    # Single-key list maps of a container.
    pytest.param(put(f"{MAIN}.volumeDevices", [{"name": "a", "devicePath": "/dev/x"},
                                               {"name": "b", "devicePath": "/dev/x"}]),
                 [_dup(f"{MAIN}.volumeDevices[1]", {"devicePath": "/dev/x"})],
                 id="volumeDevices/same-devicePath"),
    pytest.param(put(f"{MAIN}.volumeDevices", [{"name": "a", "devicePath": "/dev/x"},
                                               {"name": "a", "devicePath": "/dev/y"}]),
                 [], id="volumeDevices/same-name-different-devicePath"),
    pytest.param(put(f"{MAIN}.resources", {"claims": [{"name": "gpu", "request": "a"},
                                                      {"name": "gpu", "request": "b"}]}),
                 [_dup(f"{MAIN}.resources.claims[1]", {"name": "gpu"})],
                 id="container-resources-claims/same-name"),
    pytest.param(put(f"{MAIN}.env", [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}]),
                 [_dup(f"{MAIN}.env[1]", {"name": "a"})], id="env/same-name-as-before"),
    # list-type set of scalars: the item itself is shown, an integer as Go's %v prints it.
    pytest.param(put(f"{JOB}.podFailurePolicy", {"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2, 1]}}]}),
                 [_dup(f"{JOB}.podFailurePolicy.rules[0].onExitCodes.values[2]", 1)],
                 id="podFailurePolicy-onExitCodes-values/set"),
    pytest.param(put(f"{JOB}.podFailurePolicy", {"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2]}}]}),
                 [], id="podFailurePolicy-onExitCodes-values/distinct"),
    pytest.param(put(f"{MAIN}.restartPolicyRules", [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42, 42]}}]),
                 [_dup(f"{MAIN}.restartPolicyRules[0].exitCodes.values[1]", 42)],
                 id="restartPolicyRules-exitCodes-values/set"),
    # Outside the templates, the one list map JobSet's schema did not enforce either.
    pytest.param(_pvc_conditions("Resizing", "Resizing"),
                 [_dup("spec.volumeClaimPolicies[0].templates[0].status.conditions[1]",
                       {"type": "Resizing"})],
                 id="volumeClaimPolicies-template-status-conditions/same-type"),
    pytest.param(_pvc_conditions("Resizing", "FileSystemResizePending"), [],
                 id="volumeClaimPolicies-template-status-conditions/different-types"),
]


@pytest.mark.parametrize(("mutate", "expected"), ROWS)
def test_create_refuses_each_repeated_list_map_key(mutate: Mutator,
                                                   expected: list[tuple[str, str]]) -> None:
    js = jobset()
    mutate(js)
    before = copy.deepcopy(js)
    errors = [(e.field, e.message) for e in validate_create(js)]
    # Nothing else is wrong with these objects: the duplicates are the only errors.
    assert errors == expected
    assert js == before, "validate_create must not mutate its input"


@pytest.mark.parametrize(("mutate", "expected"), [r for r in ROWS if r.values[1]])
def test_update_refuses_each_repeated_list_map_key(mutate: Mutator,
                                                   expected: list[tuple[str, str]]) -> None:
    # The API server checks list types on every write; an update fails on the duplicate
    # whatever else (immutability of the templates) it is refused for.
    old = default_jobset(jobset())
    new = copy.deepcopy(old)
    mutate(new)
    errors = [(e.field, e.message) for e in validate_update(new, old)]
    assert set(expected) <= set(errors), errors


def _reported_jobset() -> dict[str, Any]:
    """The reported reproduction: examples/leader-workers.yaml with three repeated keys."""
    js = yaml.safe_load((ROOT / "examples" / "leader-workers.yaml").read_text())
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["imagePullSecrets"] = [{"name": "regcred"}, {"name": "regcred"}]
    pod["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
         "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
         "whenUnsatisfiable": "DoNotSchedule"},
    ]
    pod["containers"][0]["ports"] = [{"containerPort": 80}, {"containerPort": 80}]
    return js


REPORTED_ERRORS = [
    {"field": f"{MAIN}.ports[1]",
     "message": 'Duplicate value: {"containerPort":80,"protocol":"TCP"}'},
    {"field": f"{POD}.topologySpreadConstraints[1]",
     "message": 'Duplicate value: {"topologyKey":"topology.kubernetes.io/zone",'
                '"whenUnsatisfiable":"DoNotSchedule"}'},
    {"field": f"{POD}.imagePullSecrets[1]", "message": 'Duplicate value: {"name":"regcred"}'},
]


@pytest.mark.waits
def test_reported_jobset_is_refused_once_per_list_by_decider_validate() -> None:
    out = subprocess.run([sys.executable, "-m", "decider.cli", "validate", "-f", "-"],
                         input=json.dumps(_reported_jobset()), capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["valid"] is False
    assert sorted(result["errors"], key=lambda e: e["field"]) == \
        sorted(REPORTED_ERRORS, key=lambda e: e["field"])
