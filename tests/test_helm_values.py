"""charts/jobset-decider: what each value does, and the values it refuses.

The same rendering as test_helm_chart.py, which compares the configurations deploy/ also has;
here what kustomize has no counterpart for (the optional RBAC following the gates and the gang
target, leader election off, fixed replicas), read back by the programs that will use it (the
shim's and the decider's argument parsers, the telemetry set-up). The certificate Helm makes:
test_helm_certificate.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import helm as H

DEPLOY = H.ROOT / "deploy"
NS = H.NAMESPACE


@pytest.fixture(scope="module")
def helm() -> Path:
    return H.require()


@pytest.mark.waits
def test_feature_gates_reach_the_shim_and_the_webhook_alike(helm: Path) -> None:
    gates = {"RestartJob": True, "ElasticJobSet": False}
    docs = H.rendered(helm, {"featureGates": gates})
    assert H.shim_config(H.container(docs, "decider-shim")).feature_gates == gates
    from decider.cli.common import parse_gates

    serve = H.parsed_args(H.container(docs, "jobset-decider"))
    assert parse_gates(serve["webhook_feature_gates"]) == gates


def _rules(path: Path) -> list[Any]:
    return next(d for d in yaml.safe_load_all(path.read_text()) if d and "rules" in d)["rules"]


@pytest.mark.waits
@pytest.mark.parametrize(("scope", "kind"), [("cluster", "ClusterRole"), ("namespaced", "Role")],
                         ids=["cluster-wide", "namespaced"])
def test_in_place_restart_and_podgroup_targets_grant_what_deploy_grants(
        helm: Path, scope: str, kind: str) -> None:
    values: dict[str, Any] = {"rbac.scope": scope, "shim.namespaces": ["team-a"]}
    plain = {(d["kind"], d["metadata"]["name"]) for d in H.rendered(helm, values)}
    assert (kind, "decider-shim-pods") not in plain
    assert (kind, "decider-shim-gang-targets") not in plain
    docs = H.rendered(helm, {**values, "featureGates": {"InPlaceRestart": True},
                           "shim.gangTarget": "scheduler-plugins"})
    where = DEPLOY / ("shim" if scope == "cluster" else "shim-namespaced/rbac")
    prefix = "clusterrole" if scope == "cluster" else "role"
    namespace = None if scope == "cluster" else "team-a"
    for name, file in (("decider-shim-pods", f"{prefix}-pods.yaml"),
                       ("decider-shim-gang-targets", f"{prefix}-gang-targets.yaml")):
        assert H.one(docs, kind, name, namespace)["rules"] == _rules(where / file)
        binding = H.one(docs, f"{kind}Binding", name, namespace)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": kind,
                                      "name": name}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "decider-shim",
                                        "namespace": NS}]


@pytest.mark.waits
def test_namespaced_rbac_creates_nothing_cluster_scoped_for_the_shim(helm: Path) -> None:
    docs = H.rendered(helm, {"rbac.scope": "namespaced", "shim.namespaces": ["team-a", "team-b"]})
    assert H.shim_config(H.container(docs, "decider-shim")).namespaces == ["team-a", "team-b"]
    shim_cluster = [d["metadata"]["name"] for d in docs
                    if d["kind"].startswith("ClusterRole") and "shim" in d["metadata"]["name"]]
    assert shim_cluster == []
    assert H.one(docs, "Role", "decider-shim", "team-b")["rules"] == _rules(
        DEPLOY / "shim" / "clusterrole.yaml")


@pytest.mark.waits
def test_telemetry_values_turn_both_processes_on_with_the_sampler_asked(helm: Path) -> None:
    from opentelemetry.sdk.trace import sampling

    from decider_telemetry import config

    docs = H.rendered(helm, H.VARIANTS["telemetry-sampled"])
    for deployment in ("jobset-decider", "decider-shim"):
        env = {k: v["value"] for k, v in H.env_map(H.container(docs, deployment)).items()
               if "value" in v}
        assert config.exporters(env, "traces") == ["otlp"]
        assert config.exporters(env, "metrics") == ["otlp"]
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"http://otel-collector.{NS}:4317"
        chosen = config.sampler(env)
        assert isinstance(chosen, sampling.ParentBasedTraceIdRatio)
        assert "0.1" in chosen.get_description()
    off = H.rendered(helm)
    assert H.env_map(H.container(off, "jobset-decider"))["OTEL_TRACES_EXPORTER"] == {
        "value": "none"}
    assert not any(k.startswith("OTEL_") for k in H.env_map(H.container(off, "decider-shim")))


@pytest.mark.waits
def test_leader_election_off_and_fixed_replicas(helm: Path) -> None:
    docs = H.rendered(helm, H.VARIANTS["no-autoscaler-no-leader-election"])
    assert H.shim_config(H.container(docs, "decider-shim")).leader_elect is False
    assert not [d for d in docs if d["kind"] == "Lease" or "leader-election" in d["metadata"][
        "name"]]
    assert H.one(docs, "Deployment", "jobset-decider")["spec"]["replicas"] == 3
    assert not [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
    for deployment, port in (("jobset-decider", 9464), ("decider-shim", 9465)):
        c = H.container(docs, deployment)
        assert H.parsed_args(c)["metrics_port"] == port
        assert {"name": "metrics", "containerPort": port} in c["ports"]


@pytest.mark.waits
@pytest.mark.parametrize(("period", "expected"), [(None, 0.5), (0, 0.0), (2.5, 2.5)],
                         ids=["shim-default", "zero-is-off-not-unset", "set"])
def test_workers_and_the_update_batch_period_reach_the_shim(helm: Path, period: float | None,
                                                            expected: float) -> None:
    values: dict[str, Any] = {"shim.workers": 8, "shim.ownedUpdateBatchPeriod": period}
    config = H.shim_config(H.container(H.rendered(helm, values), "decider-shim"))
    assert config.workers == 8
    assert config.owned_update_batch_period == expected


@pytest.mark.waits
def test_integers_past_a_million_reach_the_programs_as_digits(helm: Path) -> None:
    # Helm holds every number as a float and prints 1000000 as 1e+06, which an integer flag
    # refuses: the pod would crash-loop on a value the schema admitted.
    docs = H.rendered(helm, {"decider.workers": 1_000_000, "shim.workers": 1_000_000,
                             "shim.kubeAPI.burst": 2_000_000})
    assert H.parsed_args(H.container(docs, "jobset-decider"))["workers"] == 1_000_000
    config = H.shim_config(H.container(docs, "decider-shim"))
    assert (config.workers, config.kube_api_burst) == (1_000_000, 2_000_000)


@pytest.mark.waits
@pytest.mark.parametrize(("keep", "annotated"), [(False, False), (True, True)],
                         ids=["deleted-at-uninstall", "kept"])
def test_the_crd_is_deploys_and_kept_only_when_asked(helm: Path, keep: bool,
                                                     annotated: bool) -> None:
    crd = H.one(H.rendered(helm, {"crd.keep": keep}), "CustomResourceDefinition",
               "jobsets.jobset.x-k8s.io")
    ours = yaml.safe_load((DEPLOY / "crd" / "jobset.x-k8s.io_jobsets.yaml").read_text())
    assert crd["spec"] == ours["spec"]
    policy = (crd["metadata"].get("annotations") or {}).get("helm.sh/resource-policy")
    assert (policy == "keep") is annotated


# Refused at render time, naming what is wrong (values.schema.json, or the chart's own checks).
REFUSED = [
    ({"featureGates": {"RestartJobs": True}}, "RestartJobs"),
    ({"webhook.certificate.mode": "self-signed"}, "mode"),
    ({"shim.gangTarget": "yunikorn"}, "gangTarget"),
    ({"shim.replicaCount": 2}, "replicaCount"),
    ({"rbac.scope": "namespaced"}, "shim.namespaces"),
    ({"shim.leaderElection.enabled": False}, "every replica would act"),
    ({"telemetry.sampler": "sometimes"}, "sampler"),
    ({"telemetry.samplerArg": 2}, "samplerArg"),
    ({"shim.ownedUpdateBatchPeriod": 500}, "ownedUpdateBatchPeriod"),
    ({"shim.workers": 0}, "workers"),
    # Past int32 Helm's int64 conversion would wrap around to a negative count.
    ({"shim.workers": 2**31}, "workers"),
]


@pytest.mark.waits
@pytest.mark.parametrize(("values", "named"), REFUSED,
                         ids=["unknown-gate", "unknown-cert-mode", "unknown-gang-target",
                              "unknown-key", "namespaced-without-namespaces",
                              "two-shims-without-leader", "unknown-sampler",
                              "sampler-ratio-above-one", "batch-period-above-a-minute",
                              "no-workers", "workers-past-int32"])
def test_wrong_values_are_refused_naming_them(helm: Path, values: dict[str, Any],
                                              named: str) -> None:
    out = H.template(helm, values)
    assert out.returncode != 0
    assert named in out.stderr, out.stderr


@pytest.mark.waits
def test_a_cluster_older_than_matchconditions_is_refused(helm: Path) -> None:
    out = H.template(helm, extra=("--kube-version", "1.29.0"))
    assert out.returncode != 0 and "kubeVersion" in out.stderr, out.stderr
    assert H.template(helm, extra=("--kube-version", "1.30.0")).returncode == 0


@pytest.mark.waits
def test_release_namespace_and_image_are_followed(helm: Path) -> None:
    docs = H.render(helm, {"image.tag": "0.2.0", "image.repository": "registry.example/jd"},
                    namespace="batch-system")
    shim = H.shim_config(H.container(docs, "decider-shim"))
    assert shim.decider_address == "dns:///jobset-decider.batch-system.svc:50051"
    for d in docs:
        if d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            assert d["webhooks"][0]["clientConfig"]["service"]["namespace"] == "batch-system"
        elif d["kind"] not in ("CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"):
            assert d["metadata"]["namespace"] == "batch-system", d["kind"]
        for s in d.get("subjects") or ():
            assert s["namespace"] == "batch-system"
    for deployment in ("jobset-decider", "decider-shim"):
        assert H.container(docs, deployment)["image"] == "registry.example/jd:0.2.0"


# ---- the chart's files ------------------------------------------------------------------------

def test_the_schema_knows_exactly_the_deciders_gates_and_the_sdks_samplers() -> None:
    from decider.core.constants import GATE_DEFAULTS
    from decider_telemetry.config import SAMPLERS

    schema = json.loads((H.CHART / "values.schema.json").read_text())["properties"]
    assert sorted(schema["featureGates"]["propertyNames"]["enum"]) == sorted(GATE_DEFAULTS)
    assert sorted(schema["telemetry"]["properties"]["sampler"]["enum"]) == sorted(
        ["", *SAMPLERS])


def test_the_chart_installs_this_version_of_the_image() -> None:
    from importlib import metadata

    chart = yaml.safe_load((H.CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == metadata.version("jobset-decider")
    base = yaml.safe_load((DEPLOY / "base" / "kustomization.yaml").read_text())
    (image,) = base["images"]
    values = yaml.safe_load((H.CHART / "values.yaml").read_text())
    assert values["image"]["repository"] == image["name"]
    assert image["newTag"] == chart["appVersion"]


def test_the_charts_crd_is_deploys() -> None:
    copy = H.CHART / "files" / "jobset.x-k8s.io_jobsets.yaml"
    assert copy.read_bytes() == (DEPLOY / "crd" / "jobset.x-k8s.io_jobsets.yaml").read_bytes(), (
        f"{copy.relative_to(H.ROOT)} is stale: run deploy/render-install.sh")
