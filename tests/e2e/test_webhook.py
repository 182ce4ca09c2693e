"""The admission webhook installed from deploy/, called by a real API server over TLS with
the configuration's caBundle: what the API server stores is what `decider validate` says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.e2e.framework import jobset, replicated_job

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

DECIDER = str(Path(sys.executable).parent / "decider")


def validate(manifest: dict, tmp_path: Path) -> dict:
    path = tmp_path / "jobset.yaml"
    path.write_text(yaml.safe_dump(manifest))
    done = subprocess.run([DECIDER, "validate", "-f", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["valid"] is True, answer
    return answer["object"]


@pytest.mark.parametrize("spec", [
    pytest.param({}, id="bare-replicated-jobs"),
    pytest.param({"successPolicy": {"operator": "Any"},
                  "failurePolicy": {"maxRestarts": 2}}, id="policies-partly-given"),
])
def test_stored_jobset_equals_decider_validate_defaults(e2e, ns, tmp_path, spec):
    manifest = jobset(ns, "defaults", [
        {"name": "w", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "registry.invalid/e2e:1"}]}}}}},
        replicated_job("x", replicas=2)], **spec)
    expected = validate(manifest, tmp_path)
    stored = e2e.kube.create_jobset(manifest)
    assert stored["spec"] == expected["spec"]
    for field in ("labels", "annotations"):
        assert stored["metadata"].get(field) == expected["metadata"].get(field), field
    # Read back, not only the create's answer: the stored object is the same.
    assert e2e.kube.jobset(ns, "defaults")["spec"] == expected["spec"]


def test_invalid_jobset_is_refused_with_decider_validate_errors(e2e, ns, tmp_path):
    # Valid for the CRD's schema and CEL rules (which the API server checks before any
    # validating webhook); only the webhook knows that no replicated Job is named `nope`.
    manifest = jobset(ns, "bad", [replicated_job("w")],
                      successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(manifest))
    done = subprocess.run([DECIDER, "validate", "-f", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = json.loads(done.stdout)["errors"]
    assert errors

    with pytest.raises(ApiException) as refused:
        e2e.kube.create_jobset(manifest)
    status = json.loads(refused.value.body)
    assert refused.value.status == 422, status
    assert status["reason"] == "Invalid"
    assert 'admission webhook "vjobset.jobset-decider.io" denied the request' \
        in status["message"], status
    assert sorted(c["field"] for c in status["details"]["causes"]) \
        == sorted(e["field"] for e in errors), status
    for error in errors:
        assert error["message"] in status["message"], (error, status["message"])
    assert e2e.kube.jobset(ns, "bad") is None
