"""The owned index files an object under its own namespace and its controlling JobSet's UID."""

from __future__ import annotations

from typing import Any

from shim.owned import OwnedIndex, jobset_owner


def _job(name: str, ns: str, uid: str, kind: str = "JobSet", group: str = "jobset.x-k8s.io"):
    ref: dict[str, Any] = {
        "apiVersion": f"{group}/v1alpha2",
        "kind": kind,
        "name": "js",
        "uid": uid,
        "controller": True,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": [ref]},
    }


def test_an_object_in_another_namespace_is_not_the_jobsets_whatever_uid_it_names():
    index = OwnedIndex()
    index.update(_job("js-0", "default", "u1"), None, False)
    index.update(_job("js-0", "attacker", "u1"), None, False)
    assert [o["metadata"]["namespace"] for o in index.controlled("default", "u1")] == ["default"]
    assert [o["metadata"]["namespace"] for o in index.controlled("attacker", "u1")] == ["attacker"]


def test_only_jobset_controllers_are_indexed():
    assert jobset_owner(_job("a", "default", "u1", kind="Deployment", group="apps")) is None
    assert jobset_owner(_job("a", "default", "u1", group="evil.example.com")) is None
    assert jobset_owner(_job("a", "default", "u1")) == ("default", "u1")
    index = OwnedIndex()
    index.update(_job("a", "default", "u1", kind="Deployment", group="apps"), None, False)
    assert index.controlled("default", "u1") == []


def test_a_changed_controller_moves_the_object_and_a_delete_removes_it():
    index = OwnedIndex()
    first = _job("js-0", "default", "u1")
    index.update(first, None, False)
    moved = _job("js-0", "default", "u2")
    index.update(moved, first, False)
    assert index.controlled("default", "u1") == []
    assert index.controlled("default", "u2") == [moved]
    index.update(moved, moved, True)
    assert index.controlled("default", "u2") == []
