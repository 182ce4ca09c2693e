"""Faults on a real control plane (issue 28, item 3): the decider down or hung, the API server
restarted mid-run, a JobSet edited while the shim cannot see it, the shim killed. In each the
shim waits, says so (its log, /readyz, the shim.decider.errors metric, as docs/shim.md says),
loses nothing, and the JobSet converges once the fault is gone.

These stop and restart components, so they run on a control plane of this module's own
(tools/controlplane/restart.py), with jobset-decider installed from deploy/ as the session's is.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.faults_support import Own, counter, http_get, namespace, own_control_plane
from tests.e2e.framework import (
    EXIT_CODE,
    JOBSETS,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tools.controlplane import product, restart
from tools.controlplane.processes import free_ports, listening

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

# The shim's Lease outlives an API server restart here. A leader that cannot renew for
# --leader-elect-renew-deadline (10 s by default) exits by design, for its kubelet to restart
# it as a standby; no kubelet runs here, and a restart on a busy machine takes longer than that,
# so with deploy/'s defaults the API server scenario would test a dead shim, not its watches.
LEASE_ARGS = ["--leader-elect-lease-duration=120", "--leader-elect-renew-deadline=100"]


@pytest.fixture(scope="module")
def own() -> Iterator[Own]:
    with own_control_plane("faults") as own:
        own.product = product.install(own.cluster)
        (metrics_port,) = free_ports(1)
        shim = own.state.find("shim")
        readyz = own.product["shim_healthz"] + "/readyz"
        # deploy/'s shim, plus a metrics port to read shim.decider.errors from.
        restart.restart(own.state, "shim", ready=lambda: http_get(readyz)[0] == 200,
                        argv=[*shim["argv"], f"--metrics-port={metrics_port}", *LEASE_ARGS],
                        ports=[metrics_port])
        own.product["shim_metrics"] = f"http://127.0.0.1:{metrics_port}/metrics"
        yield own


def running(own: Own, ns: str, name: str, count: int) -> list[dict[str, Any]]:
    return eventually(f"{count} pods of {name} Running", lambda: own.kube.pods(ns, name),
                      lambda ps: len(ps) == count
                      and set(phases(ps).values()) == {"Running"}, show=phases)


def succeed(own: Own, ns: str, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        own.kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                       {"metadata": {"annotations": {EXIT_CODE: "0"}}})


def job_states(jobs: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, str]]]:
    return {j["metadata"]["name"]: conditions(j) for j in jobs}


def decider_errors(own: Own, code: str) -> float:
    status, text = http_get(own.product["shim_metrics"])
    assert status == 200, (status, text[:300])
    return counter(text, "shim_decider_errors_total", rpc_grpc_status_code=code)


def decider_ready(own: Own) -> bool:
    host, port = own.product["decider_address"].rsplit(":", 1)
    return listening(int(port), host) and listening(own.product["webhook_port"])


def completed(own: Own, ns: str, name: str) -> dict[str, Any]:
    return eventually(f"JobSet {name} Completed", lambda: own.kube.jobset(ns, name),
                      lambda j: has_condition(j, "Completed"), show=conditions)


def test_decider_down_the_shim_waits_reports_and_converges(own):
    kube = own.kube
    with namespace(own, "decider-down") as ns:
        kube.create_jobset(jobset(ns, "patient", [replicated_job("w", replicas=2)]))
        pods = running(own, ns, "patient", 2)
        uids = {j["metadata"]["uid"] for j in kube.jobs(ns, "patient")}
        before = decider_errors(own, "UNAVAILABLE")
        stopped = restart.stop(own.state, "decider")

        # Its webhook is down too: failurePolicy Fail, so the API server refuses new JobSets.
        with pytest.raises(ApiException) as refused:
            kube.create_jobset(jobset(ns, "refused", [replicated_job("w")]))
        assert refused.value.status == 500, refused.value.body
        assert "failed calling webhook" in refused.value.body, refused.value.body

        # The workload goes on without us: the Job controller completes both Jobs.
        succeed(own, ns, pods)
        eventually("both Jobs Complete", lambda: kube.jobs(ns, "patient"),
                   lambda js: len(js) == 2 and all(has_condition(j, "Complete") for j in js),
                   show=job_states)
        mark = len(own.log_text("shim"))
        failed = f"{ns}/patient: decider call failed (StatusCode.UNAVAILABLE)"
        eventually("the shim's log naming the failed pass", lambda: own.log_text("shim")[mark:],
                   lambda text: failed in text, show=lambda text: text[-600:])
        status, body = eventually("/readyz 503 naming the decider", lambda: http_get(
            own.product["shim_healthz"] + "/readyz"), lambda r: r[0] == 503 and
            "UNAVAILABLE" in r[1])
        assert own.product["decider_address"] in body, body
        assert decider_errors(own, "UNAVAILABLE") > before
        # Nothing was decided, so nothing was written: the JobSet is not finished yet.
        js = kube.jobset(ns, "patient")
        assert not has_condition(js, "Completed"), conditions(js)
        assert not js["status"].get("terminalState"), js["status"]
        # Its last status is from before the outage: both Jobs still counted active.
        assert [(r["active"], r.get("succeeded", 0)) for r in js["status"][
            "replicatedJobsStatus"]] == [(2, 0)], js["status"]

        # A decider away is transient: retried on the fast backoff, told on no event (an
        # event is for a decider that refuses, docs/shim.md).
        assert [e["reason"] for e in kube.events(ns)
                if e["involvedObject"]["kind"] == "JobSet"
                and e.get("type") == "Warning"] == []

        restart.start_again(own.state, stopped, ready=lambda: decider_ready(own))
        completed(own, ns, "patient")
        assert {j["metadata"]["uid"] for j in kube.jobs(ns, "patient")} == uids
        eventually("/readyz 200 again", lambda: http_get(own.product["shim_healthz"]
                                                         + "/readyz"), lambda r: r[0] == 200)


def test_decider_hung_the_shim_times_out_and_converges(own):
    kube = own.kube
    with namespace(own, "decider-hung") as ns:
        kube.create_jobset(jobset(ns, "slow", [replicated_job("w", replicas=2)]))
        pods = running(own, ns, "slow", 2)
        before = decider_errors(own, "DEADLINE_EXCEEDED")
        # SIGSTOP: connections are accepted, nothing answers; each Decide meets the shim's
        # --decider-timeout.
        restart.pause(own.state, "decider")
        try:
            succeed(own, ns, pods)
            eventually("both Jobs Complete", lambda: kube.jobs(ns, "slow"),
                       lambda js: len(js) == 2 and all(has_condition(j, "Complete")
                                                      for j in js), show=job_states)
            mark = len(own.log_text("shim"))
            failed = f"{ns}/slow: decider call failed (StatusCode.DEADLINE_EXCEEDED)"
            eventually("the shim's log naming the timed-out pass",
                       lambda: own.log_text("shim")[mark:], lambda text: failed in text,
                       show=lambda text: text[-600:])
            assert decider_errors(own, "DEADLINE_EXCEEDED") > before
            js = kube.jobset(ns, "slow")
            assert not has_condition(js, "Completed"), conditions(js)
        finally:
            restart.resume(own.state, "decider")
        completed(own, ns, "slow")


def apiserver_ready(own: Own) -> bool:
    ctx: ssl.SSLContext = own.cluster.ssl_context()
    with urllib.request.urlopen(own.cluster.server + "/readyz", context=ctx, timeout=5) as r:
        return r.status == 200


def test_apiserver_restarted_mid_run_and_a_jobset_edited_before_the_shim_sees_it(own):
    kube = own.kube
    with namespace(own, "apiserver-restart") as ns:
        path = f"{JOBSETS}/namespaces/{ns}/jobsets/through"
        kube.create_jobset(jobset(ns, "through", [replicated_job("w", replicas=2)]))
        running(own, ns, "through", 2)
        uids = {j["metadata"]["uid"] for j in kube.jobs(ns, "through")}
        shim = own.state.find("shim")
        mark = len(own.log_text("shim"))

        restart.restart(own.state, "kube-apiserver", ready=lambda: apiserver_ready(own))
        # At once, while the shim's watches are still broken and backing off: an edit and a
        # new JobSet that only a recovered watch (or its re-list) brings to the shim.
        kube.patch(path, {"spec": {"suspend": True}})
        kube.create_jobset(jobset(ns, "after", [replicated_job("w")]))
        eventually("the Jobs suspended and their pods gone",
                   lambda: (kube.jobs(ns, "through"), kube.pods(ns, "through")),
                   lambda seen: len(seen[0]) == 2 and all(j["spec"].get("suspend")
                                                          for j in seen[0]) and not seen[1],
                   show=lambda seen: ({j["metadata"]["name"]: j["spec"].get("suspend")
                                       for j in seen[0]}, phases(seen[1])))
        eventually("JobSet through Suspended", lambda: kube.jobset(ns, "through"),
                   lambda j: has_condition(j, "Suspended"), show=conditions)
        # Until the new API server's RBAC caches synced it refused the shim's watches (403);
        # the shim acted since, so a refusal from here on would be a real one.
        own.refusals_expected.append((mark, len(own.log_text("shim"))))
        # The same shim process, its watches recovered: not a restart that hid the outage.
        assert own.state.find("shim")["pid"] == shim["pid"]
        assert "lost the lease" not in own.log_text("shim")

        kube.patch(path, {"spec": {"suspend": False}})
        succeed(own, ns, running(own, ns, "through", 2))
        succeed(own, ns, running(own, ns, "after", 1))
        completed(own, ns, "through")
        completed(own, ns, "after")
        assert {j["metadata"]["uid"] for j in kube.jobs(ns, "through")} == uids


def test_shim_killed_while_creating_and_the_jobset_edited_before_it_is_back(own):
    kube = own.kube
    replicas = 12
    with namespace(own, "shim-killed") as ns:
        path = f"{JOBSETS}/namespaces/{ns}/jobsets/many"
        seen: set[str] = set()

        def jobs() -> list[dict[str, Any]]:
            found = kube.jobs(ns, "many")
            seen.update(j["metadata"]["uid"] for j in found)
            return found

        # At 2 requests a second the shim's creates take seconds, so the kill lands among
        # them, not after (at deploy/'s 500 it was either); the shim that comes back has
        # deploy/'s rate again.
        usual = own.state.find("shim")["argv"]
        restart.restart(own.state, "shim", ready=lambda: http_get(
            own.product["shim_healthz"] + "/readyz")[0] == 200, argv=product.adapted_args(
                usual, {"--kube-api-qps": "2", "--kube-api-burst": "2"}, []))
        kube.create_jobset(jobset(ns, "many", [replicated_job("w", replicas=replicas)]))
        eventually("the first Job", jobs, bool, interval=0.05)
        killed = restart.kill(own.state, "shim")
        at_kill = {j["metadata"]["uid"] for j in jobs()}
        assert 0 < len(at_kill) < replicas, f"{len(at_kill)} Jobs when killed"
        # Edited while no shim runs: the new one must act on the edit, not on what it missed;
        # and a JobSet made meanwhile gets its Jobs from it.
        kube.patch(path, {"spec": {"suspend": True}})
        kube.create_jobset(jobset(ns, "meanwhile", [replicated_job("w", replicas=2)]))
        assert kube.jobs(ns, "meanwhile") == []
        restart.start_again(own.state, killed, argv=usual, ready=lambda: http_get(
            own.product["shim_healthz"] + "/readyz")[0] == 200)

        eventually(f"{replicas} suspended Jobs", jobs,
                   lambda js: len(js) == replicas and all(j["spec"].get("suspend")
                                                          for j in js),
                   show=lambda js: {j["metadata"]["name"]: j["spec"].get("suspend")
                                    for j in js})
        eventually("JobSet many Suspended", lambda: kube.jobset(ns, "many"),
                   lambda j: has_condition(j, "Suspended"), show=conditions)
        kube.patch(path, {"spec": {"suspend": False}})
        succeed(own, ns, running(own, ns, "many", replicas))
        js = completed(own, ns, "many")
        final = jobs()
        # No Job was made twice, none deleted and made again: every uid ever seen is one of
        # the final Jobs, and the Jobs made before the kill are among them.
        assert len(final) == replicas
        assert seen == {j["metadata"]["uid"] for j in final}, (len(seen), replicas)
        assert at_kill <= seen
        assert sorted(j["metadata"]["name"] for j in final) == sorted(
            f"many-w-{i}" for i in range(replicas))
        assert js["status"].get("restarts", 0) == 0
        succeed(own, ns, running(own, ns, "meanwhile", 2))
        assert completed(own, ns, "meanwhile")["status"].get("restarts", 0) == 0
        assert sorted(j["metadata"]["name"] for j in kube.jobs(ns, "meanwhile")) == [
            "meanwhile-w-0", "meanwhile-w-1"]


def test_apiserver_away_past_the_renew_deadline_the_shim_exits_and_its_restart_converges(own):
    """deploy/'s Lease timings (renew deadline 10 s): an API server away longer costs the
    leader its Lease, and it exits for its kubelet to restart it (docs/shim.md); started again
    as a kubelet would, it takes the work up where it was."""
    kube = own.kube
    usual = own.state.find("shim")["argv"]
    healthy = lambda: http_get(own.product["shim_healthz"] + "/readyz")[0] == 200  # noqa: E731
    shim = restart.restart(own.state, "shim", ready=healthy,
                           argv=[a for a in usual if a not in LEASE_ARGS])
    with namespace(own, "apiserver-away") as ns:
        kube.create_jobset(jobset(ns, "outlived", [replicated_job("w", replicas=2)]))
        pods = running(own, ns, "outlived", 2)
        uids = {j["metadata"]["uid"] for j in kube.jobs(ns, "outlived")}
        mark = len(own.log_text("shim"))

        apiserver = restart.stop(own.state, "kube-apiserver")
        try:
            # Held away until the shim has given up, however long the machine takes. The shim
            # runs under the harness's supervisor (a kubelet's restart), which stays up and
            # logs the exit: the log, not the process table, says the shim process ended.
            eventually("the shim exiting on its lost Lease",
                       lambda: own.log_text("shim")[mark:],
                       lambda text: "lost the lease" in text
                       and "supervise: shim exited with status 1" in text,
                       timeout=120, show=lambda text: text[-400:])
        finally:
            restart.start_again(own.state, apiserver, ready=lambda: apiserver_ready(own))
        # As its kubelet would: the same container started again.
        restart.start_again(own.state, restart.stop(own.state, "shim"), argv=shim["argv"],
                            ready=healthy)
        own.refusals_expected.append((mark, len(own.log_text("shim"))))

        succeed(own, ns, pods)
        completed(own, ns, "outlived")
        assert {j["metadata"]["uid"] for j in kube.jobs(ns, "outlived")} == uids
    restart.restart(own.state, "shim", ready=healthy, argv=usual)
