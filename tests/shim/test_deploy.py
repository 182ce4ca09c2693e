"""The shim's kustomizations render, and namespaced RBAC grants nothing cluster-wide."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def render(path: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [KUBECTL, "kustomize", str(ROOT / path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _one(docs: list[dict[str, Any]], kind: str, name: str, ns: str | None = None) -> dict:
    found = [
        d
        for d in docs
        if d["kind"] == kind
        and d["metadata"]["name"] == name
        and (ns is None or d["metadata"].get("namespace") == ns)
    ]
    assert len(found) == 1, (kind, name, ns, len(found))
    return found[0]


def _namespaces_flag(docs: list[dict[str, Any]]) -> list[str]:
    args = _one(docs, "Deployment", "decider-shim")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    flags = [a for a in args if a.startswith("--namespaces=")]
    assert len(flags) <= 1
    return flags[0].removeprefix("--namespaces=").split(",") if flags else []


def test_cluster_wide_install_renders_with_its_cluster_role():
    docs = render("deploy/shim")
    kinds = Counter(d["kind"] for d in docs)
    assert kinds["ClusterRole"] == 1 and kinds["ClusterRoleBinding"] == 1
    assert _namespaces_flag(docs) == []  # watches every namespace, as its rights allow


def test_namespaced_install_has_a_role_and_binding_per_watched_namespace_and_nothing_cluster_wide():
    docs = render("deploy/shim-namespaced")
    kinds = Counter(d["kind"] for d in docs)
    assert kinds["ClusterRole"] == 0 and kinds["ClusterRoleBinding"] == 0
    # Nothing else cluster-scoped either: every object has a namespace.
    assert [d["kind"] for d in docs if not d["metadata"].get("namespace")] == []

    watched = _namespaces_flag(docs)
    assert watched == ["team-a", "team-b"]
    roles = {d["metadata"]["namespace"] for d in docs if d["kind"] == "Role"}
    assert roles == {"jobset-decider", *watched}  # the Lease's Role, and one per watched ns
    cluster_rules = _one(render("deploy/shim"), "ClusterRole", "decider-shim")["rules"]
    for ns in watched:
        assert _one(docs, "Role", "decider-shim", ns)["rules"] == cluster_rules
        binding = _one(docs, "RoleBinding", "decider-shim", ns)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "decider-shim",
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "decider-shim", "namespace": "jobset-decider"}
        ]
    # Leader election is untouched: its Lease lives in the shim's own namespace.
    _one(docs, "Role", "decider-shim-leader-election", "jobset-decider")


@pytest.mark.parametrize(
    ("cluster_file", "role_file"),
    [
        ("clusterrole-pods.yaml", "role-pods.yaml"),
        ("clusterrole-gang-targets.yaml", "role-gang-targets.yaml"),
    ],
)
def test_optional_namespaced_roles_grant_what_their_cluster_roles_do(cluster_file, role_file):
    cluster = [d for d in yaml.safe_load_all((ROOT / "deploy/shim" / cluster_file).read_text())]
    role = [
        d
        for d in yaml.safe_load_all((ROOT / "deploy/shim-namespaced/rbac" / role_file).read_text())
    ]
    assert [d["kind"] for d in cluster] == ["ClusterRole", "ClusterRoleBinding"]
    assert [d["kind"] for d in role] == ["Role", "RoleBinding"]
    assert role[0]["rules"] == cluster[0]["rules"]
    assert role[1]["subjects"] == cluster[1]["subjects"]
