"""charts/jobset-decider renders the kustomize install, object for object, and lints clean.

Each chart configuration is compared with the kustomize install that does the same thing:
defaults with deploy/install-standalone.yaml, the beside-upstream values with
deploy/install-beside-upstream.yaml, cert-manager, telemetry and namespaced RBAC with deploy/'s
components and shim-namespaced composed as docs/install.md says. The comparison is semantic
(`normalise`): objects by kind, namespace and name; Helm's own labels dropped; container args as
the decider's and the shim's own parsers read them; env as a map. Every difference left is one
listed here with its reason. Every configuration is validated offline as .ci/check-manifests
validates deploy/ (kubernetes-validate, strict). What each value does: test_helm_values.py.

Needs the helm .ci/ensure-helm builds: under CI (CI=true) a missing helm fails, else it skips.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import helm as H

DEPLOY = H.ROOT / "deploy"
NS = H.NAMESPACE
KUBECTL = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
K8S_VERSIONS = ("1.30.0", "1.35.0")
# Labels Helm's conventions add (chart, manager, release, version): kustomize has no release.
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version")
Key = tuple[str, str, str]

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.fixture(scope="module")
def helm() -> Path:
    return H.require()


def kustomized(tmp_path: Path, resources: list[str], components: tuple[str, ...] = (),
               patches: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """deploy/ pieces composed in a kustomization of the user's own, as docs/install.md says."""
    rel = os.path.relpath(DEPLOY, tmp_path)
    k = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
         "resources": [f"{rel}/{r}" for r in resources],
         "components": [f"{rel}/components/{c}" for c in components],
         "patches": list(patches)}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(k))
    out = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def installed(overlay: str) -> list[dict[str, Any]]:
    text = (DEPLOY / f"install-{overlay}.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


# ---- the semantic comparison ---------------------------------------------------------------

def normalise(doc: dict[str, Any]) -> dict[str, Any]:
    """An object as the API server would act on it, less what only says who installed it.

    Dropped: Helm's labels (HELM_LABELS), from the object and its pod template. Read as the
    program reads them: each container's args (by the decider's or the shim's own parser) and
    env (a map by name). Nothing else: the certificate data a render generates (mode helm)
    is not in any configuration compared here, and is checked for what it is instead."""
    d = copy.deepcopy(doc)
    metas = [d["metadata"]]
    template = (d.get("spec") or {}).get("template") if d["kind"] == "Deployment" else None
    if template:
        metas.append(template["metadata"])
    for meta in metas:
        labels = {k: v for k, v in (meta.pop("labels", None) or {}).items()
                  if k not in HELM_LABELS}
        if labels:
            meta["labels"] = labels
    if template:
        for c in template["spec"]["containers"]:
            c["args"] = H.parsed_args(c)
            c["env"] = H.env_map(c)
    return d


def by_key(docs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    out: dict[Key, dict[str, Any]] = {}
    for d in docs:
        key = (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
        assert key not in out, f"{key} twice"
        out[key] = normalise(d)
    return out


def differences(chart: list[dict[str, Any]], kustomize: list[dict[str, Any]]) -> dict[str, Any]:
    c, k = by_key(chart), by_key(kustomize)
    return {"only in the chart": sorted(c.keys() - k.keys()),
            "only in kustomize": sorted(k.keys() - c.keys()),
            "unequal": {str(key): {"chart": c[key], "kustomize": k[key]}
                        for key in sorted(c.keys() & k.keys()) if c[key] != k[key]}}


# Differences kept deliberately, in every configuration:
# - the Namespace: Helm stores its release record in the release namespace before it creates
#   anything, so a chart cannot create its own (`helm install --create-namespace` does; label it
#   for the restricted Pod Security Standard as docs/install.md says);
# - the shim's Lease: deploy/ leaves it to the shim and `kubectl delete` takes it with the
#   namespace; Helm leaves the namespace, so the release owns the Lease and uninstall deletes it.
LEASE = ("Lease", NS, "jobset-decider-shim")
NAMESPACE = ("Namespace", "", NS)


def assert_same(chart: list[dict[str, Any]], kustomize: list[dict[str, Any]],
                also_in_chart: tuple[Key, ...] = ()) -> None:
    assert differences(chart, kustomize) == {
        "only in the chart": sorted([LEASE, *also_in_chart]),
        "only in kustomize": [NAMESPACE], "unequal": {}}


@pytest.mark.waits
def test_the_default_values_render_the_standalone_install(helm: Path) -> None:
    assert_same(H.rendered(helm), installed("standalone"))


@pytest.mark.waits
def test_beside_upstream_values_render_the_beside_upstream_install(helm: Path) -> None:
    assert_same(H.rendered(helm, H.VARIANTS["beside-upstream"]), installed("beside-upstream"))


@pytest.mark.waits
@needs_kubectl
def test_cert_manager_mode_renders_the_cert_manager_component(helm: Path,
                                                              tmp_path: Path) -> None:
    chart = H.rendered(helm, H.VARIANTS["cert-manager"])
    kustomize = kustomized(tmp_path, ["standalone"], ("cert-manager",))
    # The Secret cert-manager fills, created empty so the release owns it: cert-manager leaves
    # the Secrets it made behind when their Certificate is deleted.
    assert_same(chart, kustomize, also_in_chart=(("Secret", NS, "jobset-decider-webhook-tls"),))


@pytest.mark.waits
@needs_kubectl
def test_telemetry_values_render_the_telemetry_component(helm: Path, tmp_path: Path) -> None:
    chart = H.rendered(helm, {"telemetry.enabled": True})
    assert_same(chart, kustomized(tmp_path, ["standalone"], ("telemetry",)))


@pytest.mark.waits
@needs_kubectl
def test_namespaced_rbac_renders_shim_namespaced(helm: Path, tmp_path: Path) -> None:
    chart = H.rendered(helm, {"rbac.scope": "namespaced", "shim.namespaces": ["team-a", "team-b"]})
    # deploy/shim-namespaced in place of deploy/shim's ClusterRole: its namespace directories
    # and its own patches (read from it, so they are compared as they are).
    patches = yaml.safe_load((DEPLOY / "shim-namespaced" / "kustomization.yaml").read_text())[
        "patches"]
    kustomize = kustomized(tmp_path, ["standalone", "shim-namespaced/team-a",
                                      "shim-namespaced/team-b"], patches=tuple(patches))
    assert_same(chart, kustomize)


@pytest.mark.waits
def test_the_comparison_does_see_a_difference(helm: Path) -> None:
    chart = H.rendered(helm, {"shim.kubeAPI.qps": 50, "decider.workers": 3})
    found = differences(chart, installed("standalone"))["unequal"]
    shim, decider = str(("Deployment", NS, "decider-shim")), str(("Deployment", NS,
                                                                  "jobset-decider"))
    assert sorted(found) == [shim, decider]

    def arg(side: str, key: str, name: str) -> Any:
        return found[key][side]["spec"]["template"]["spec"]["containers"][0]["args"][name]

    assert [arg(side, shim, "kube_api_qps") for side in ("chart", "kustomize")] == [50.0, 500.0]
    assert [arg(side, decider, "workers") for side in ("chart", "kustomize")] == [3, 2]
    labelled = copy.deepcopy(installed("standalone"))
    labelled[-1]["metadata"]["labels"] = {"app.kubernetes.io/name": "other"}
    assert differences(labelled, installed("standalone"))["unequal"]


# ---- every configuration validates and lints -----------------------------------------------

# Kinds kubernetes-validate has no schema for: cert-manager's.
FOREIGN = {"cert-manager.io/v1"}


@pytest.mark.waits
@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("variant", list(H.VARIANTS))
def test_every_configuration_validates_offline(helm: Path, variant: str, version: str) -> None:
    import kubernetes_validate as kv

    problems = []
    for d in H.rendered(helm, H.VARIANTS[variant]):
        try:
            kv.validate(d, version, strict=True)
        except kv.SchemaNotFoundError:
            assert d["apiVersion"] in FOREIGN, d["kind"]
        except kv.ValidationError as exc:
            problems.append(f"{d['kind']}/{d['metadata']['name']}: {exc.message}")
    assert problems == []


@pytest.mark.waits
@pytest.mark.parametrize("variant", list(H.VARIANTS))
def test_helm_lint_is_clean(helm: Path, variant: str) -> None:
    out = H.run(helm, "lint", "--strict", str(H.CHART), "--namespace", NS,
                *H.set_args(H.VARIANTS[variant]))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout, out.stdout


@pytest.mark.waits
@pytest.mark.parametrize("variant", list(H.VARIANTS))
def test_every_object_a_process_creates_belongs_to_the_release(helm: Path,
                                                               variant: str) -> None:
    """What `helm uninstall` deletes is what the release rendered. The objects our processes
    write at run time (the shim's Lease, the decider's certificate Secret, cert-manager's
    Secret) are among them, so nothing of ours outlives the release."""
    from decider.webhook import certs

    docs = H.rendered(helm, H.VARIANTS[variant])
    keys = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs}
    shim = H.shim_config(H.container(docs, "decider-shim"))
    if shim.leader_elect:
        # The Lease's namespace is the pod's (POD_NAMESPACE): the release's.
        assert ("Lease", NS, shim.leader_elect_name) in keys
    if H.parsed_args(H.container(docs, "jobset-decider"))["webhook_self_signed"]:
        assert ("Secret", NS, certs.SelfSigned(namespace=NS).secret) in keys
    for d in docs:
        if d["kind"] == "Certificate":
            assert ("Secret", NS, d["spec"]["secretName"]) in keys
        assert d["metadata"]["labels"]["app.kubernetes.io/instance"] == H.RELEASE, d["kind"]
