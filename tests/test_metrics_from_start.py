"""Metrics a dashboard can trust (issue 20, item 7): every counter series the dashboard reads
exists at 0 from the start, so Prometheus' increase() sees its first event. A series born at 1
hides that event: the first restart of a fresh decider read 0, and the dropped-log-lines panel
said "No data"."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from properties.strategies import to_request

from decider.contract.methods import METHODS
from decider.core.model import Observed, Options
from decider.telemetry.counters import DECISION_COUNTERS, increments, when
from decider_api.names import ACTION_NAMES
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from support.builders import NOW, job, jobset, rjob

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int) -> Series:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(series: Series, name: str, **labels: str) -> float | None:
    """A series' value; None when the scrape does not have it (Prometheus: no sample)."""
    want = set(labels.items())
    hits = [v for (n, ls), v in series.items() if n == name and want <= ls
            and {k for k, _ in ls} - {"otel_scope_name", "otel_scope_version",
                                      "otel_scope_schema_url"} == set(labels)]
    assert len(hits) <= 1, (name, labels, hits)
    return hits[0] if hits else None


def _increase(before: Series, after: Series, name: str, **labels: str) -> float:
    """What Prometheus' increase() over the two scrapes sees: nothing unless the series was in
    both."""
    first, last = _value(before, name, **labels), _value(after, name, **labels)
    return 0.0 if first is None or last is None else last - first


def _restarting(rules: list[dict] | None = None, failed: bool = True) -> object:
    policy: dict = {"maxRestarts": 3}
    if rules is not None:
        policy["rules"] = rules
    js = jobset(rjob("workers", 2), failurePolicy=policy)
    jobs = [job("workers", 0, state="failed" if failed else "active",
                reason="PodFailurePolicy"), job("workers", 1)]
    return to_request(Observed(jobset=js, now=NOW, jobs=jobs))


@pytest.fixture
def fresh(tmp_path: Path):  # noqa: ANN201
    """A fresh decider with a metrics port and a decision log it cannot write (/dev/full:
    every line is dropped)."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--workers", "1", "--drain-delay", "0",
                             "--metrics-port", str(port), "--decision-log", "/dev/full"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=ROOT, env={**os.environ, "OTEL_TRACES_EXPORTER": "none"})
    assert proc.stdout is not None
    target = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    try:
        with grpc.insecure_channel(target) as channel:
            yield pb_grpc.DeciderStub(channel), port
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        proc.stdout.close()


def _wait(port: int, done) -> Series:  # noqa: ANN001
    deadline = time.monotonic() + 60
    while True:
        series = _scrape(port)
        if done(series) or time.monotonic() > deadline:
            return series
        time.sleep(0.1)


def test_the_first_restart_and_the_first_dropped_line_show_in_increase(fresh) -> None:
    stub, port = fresh
    before = _scrape(port)
    # Every series the dashboard reads is there before anything happened, at 0.
    for method in METHODS:
        for outcome in ("ok", "invalid", "error"):
            assert _value(before, "decider_decisions_total", rpc_method=method,
                          outcome=outcome) == 0, (method, outcome)
    for action in ACTION_NAMES.values():
        assert _value(before, "decider_actions_total", action_type=action) == 0, action
    for state in ("Completed", "Failed"):
        assert _value(before, "decider_jobsets_finished_total", terminal_state=state) == 0
    assert _value(before, "decider_restarts_total", failure_policy_action="RestartJobSet",
                  failure_policy_rule="") == 0
    assert _value(before, "decider_decision_log_dropped_total") == 0
    assert _value(before, "decider_workers_replaced_total") == 0

    # The first restart (no rule matched: the default action), its log line dropped.
    answer = stub.Decide(_restarting(rules=[]), timeout=30)
    assert answer.status.restarts == 1
    after = _wait(port, lambda s: _value(s, "decider_decision_log_dropped_total") == 1)
    assert _increase(before, after, "decider_restarts_total",
                     failure_policy_action="RestartJobSet", failure_policy_rule="") == 1
    assert _increase(before, after, "decider_decision_log_dropped_total") == 1
    assert _increase(before, after, "decider_decisions_total", rpc_method="Decide",
                     outcome="ok") == 1
    assert _increase(before, after, "decider_actions_total", action_type="UpdateStatus") == 1


def test_a_rules_first_restart_shows_once_the_jobset_was_decided_before(fresh) -> None:
    """A rule's name is the JobSet's own, not known in advance; its series is made at 0 when
    the decider first sees the rule, which is before the JobSet's first failure."""
    stub, port = fresh
    rules = [{"name": "oom", "action": "RestartJobSet",
              "onJobFailureReasons": ["PodFailurePolicy"]},
             {"name": "fatal", "action": "FailJobSet", "onJobFailureReasons": ["Fatal"]}]
    stub.Decide(_restarting(rules=rules, failed=False), timeout=30)
    before = _wait(port, lambda s: _value(s, "decider_restarts_total",
                                          failure_policy_action="RestartJobSet",
                                          failure_policy_rule="oom") is not None)
    assert _value(before, "decider_restarts_total", failure_policy_action="RestartJobSet",
                  failure_policy_rule="oom") == 0
    # A rule that fails the JobSet never restarts it: no series of its own.
    assert _value(before, "decider_restarts_total", failure_policy_action="FailJobSet",
                  failure_policy_rule="fatal") is None
    stub.Decide(_restarting(rules=rules), timeout=30)
    after = _scrape(port)
    assert _increase(before, after, "decider_restarts_total",
                     failure_policy_action="RestartJobSet", failure_policy_rule="oom") == 1


def test_an_active_deadline_shows_in_increase_the_first_time_it_passes(fresh) -> None:
    """jobset_active_deadline_exceeded_total is by JobSet (upstream's labels), so no series is
    known in advance: a JobSet's is made at 0 when a JobSet with a deadline is decided before
    the deadline passes, and the pass that fails it for the deadline shows in increase()."""
    stub, port = fresh
    gates = Options(feature_gates={"JobSetActiveDeadlineSeconds": True})
    start = (NOW - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    js = jobset(rjob("workers", 1), name="late", activeDeadlineSeconds=10,
                status={"startTime": start})
    running = [job("workers", 0, js_name="late")]
    stub.Decide(to_request(Observed(jobset=js, now=NOW, jobs=running, options=gates)),
                timeout=30)
    labels = {"jobset_name": "late", "namespace": "default"}
    before = _wait(port, lambda s: _value(s, "jobset_active_deadline_exceeded_total",
                                          **labels) is not None)
    assert _value(before, "jobset_active_deadline_exceeded_total", **labels) == 0
    later = NOW + timedelta(seconds=10)
    answer = stub.Decide(to_request(Observed(jobset=js, now=later, jobs=running,
                                             options=gates)), timeout=30)
    assert answer.status.terminal_state == "Failed"
    after = _scrape(port)
    assert _increase(before, after, "jobset_active_deadline_exceeded_total", **labels) == 1


def test_a_counter_of_a_fact_is_one_row() -> None:
    """How a counter of a fact is added: `when(fact, ...)` counts the decisions whose fact is
    true, and exists at 0 from the start."""
    row = when("jobset.suspended", "jobset.suspensions", "{jobset}",
               "Decisions that suspended a JobSet")
    assert row.spec.prometheus_series() == ("jobset_suspensions_total",)
    assert row.known == ((),)
    assert list(row.count({"jobset.suspended": True})) == [(1, ())]
    assert list(row.count({"jobset.suspended": False})) == []
    assert list(row.count({})) == []
    # The table's rows are what increments() writes, by name.
    facts = {"decider.actions.CreateJob": 4, "decider.actions.total": 4,
             "jobset.terminal_state": "Completed", "jobset.terminal_state.before": ""}
    assert increments(facts) == {"decider.actions": [[4, ["CreateJob"]]],
                                 "decider.jobsets.finished": [[1, ["Completed"]]]}
    assert {c.spec.name for c in DECISION_COUNTERS} == {
        "decider.actions", "decider.restarts", "decider.jobsets.finished",
        "jobset.active_deadline_exceeded"}
