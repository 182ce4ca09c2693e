"""The shim's flags and environment fallbacks: a bad value is exit 2 naming it, never a
traceback, a silent default or a value no loop can use."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shim.flags import parse_args

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv,env,needle", [
    (["--decider-timeout", "nan"], {}, "--decider-timeout: 'nan' (the flag or DECIDER_TIMEOUT) "
                                       "is not a finite number"),
    (["--decider-timeout", "0"], {}, "--decider-timeout: must be greater than 0, got 0"),
    ([], {"DECIDER_TIMEOUT": "abc"}, "--decider-timeout: 'abc' (the flag or DECIDER_TIMEOUT) "
                                     "is not a number"),
    (["--kube-api-qps", "inf"], {}, "--kube-api-qps: 'inf'"),
    ([], {"SHIM_KUBE_API_BURST": "1.5"}, "'1.5' (the flag or SHIM_KUBE_API_BURST) is not an "
                                         "integer"),
    (["--kube-api-max-retries", "-1"], {}, "--kube-api-max-retries: must be at least 0"),
    (["--kube-api-max-retry-wait", "nan"], {}, "--kube-api-max-retry-wait: 'nan'"),
    (["--workers", "0"], {}, "--workers: must be at least 1, got 0"),
    (["--owned-update-batch-period", "-0.5"], {}, "--owned-update-batch-period: must be at "
                                                  "least 0, got -0.5"),
    ([], {"SHIM_OWNED_UPDATE_BATCH_PERIOD": "500"}, "--owned-update-batch-period: must be at "
                                                    "most 60, got 500 (the flag or "
                                                    "SHIM_OWNED_UPDATE_BATCH_PERIOD)"),
    (["--owned-update-batch-period", "nan"], {}, "--owned-update-batch-period: 'nan'"),
    ([], {"SHIM_MAX_PARALLEL_WRITES": "-3"}, "--max-parallel-writes: must be at least 1, got -3 "
                                             "(the flag or SHIM_MAX_PARALLEL_WRITES)"),
    (["--leader-elect-lease-duration", "nan"], {}, "--leader-elect-lease-duration: 'nan'"),
    (["--leader-elect-renew-deadline", "20"], {}, "--leader-elect-retry-period < "
                                                  "--leader-elect-renew-deadline < "
                                                  "--leader-elect-lease-duration must hold"),
    (["--metrics-port", "99999"], {}, "--metrics-port: 99999 is not a port"),
    ([], {"SHIM_HEALTHZ_PORT": "-1"}, "--healthz-port: must be at least 0"),
    ([], {"SHIM_LEADER_ELECT": "ture"}, "environment variable SHIM_LEADER_ELECT: 'ture' is not "
                                        "a boolean"),
    ([], {"DECIDER_TLS": "maybe"}, "environment variable DECIDER_TLS: 'maybe'"),
    (["--feature-gates", "InPlaceRestart"], {}, "--feature-gates: feature gate 'InPlaceRestart' "
                                                "needs =true or =false"),
    (["--feature-gates", "InPlaceRestart=ture"], {}, "feature gate 'InPlaceRestart': 'ture' is "
                                                     "not a boolean"),
    (["--log-level", "LOUD"], {}, "--log-level: 'LOUD' is not one of DEBUG, INFO"),
], ids=["nan-timeout", "zero-timeout", "env-timeout-not-a-number", "infinite-qps",
        "env-fractional-burst", "negative-retries", "nan-retry-wait", "no-workers",
        "negative-batch-period", "env-batch-period-past-a-minute", "nan-batch-period",
        "env-negative-writes", "nan-lease", "renew-past-lease", "port-out-of-range",
        "env-negative-port", "env-mistyped-leader-elect", "env-mistyped-tls", "gate-no-value",
        "gate-mistyped-value", "unknown-log-level"])
def test_a_bad_value_exits_2_naming_it(argv, env, needle, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, env=env)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_good_values_from_flags_and_environment() -> None:
    cfg = parse_args(["--leader-elect-lease-duration", "30", "--feature-gates",
                      "InPlaceRestart=T,ElasticJobSet=off"],
                     env={"DECIDER_TIMEOUT": "2.5", "SHIM_WORKERS": "8", "SHIM_LEADER_ELECT": "0",
                          "DECIDER_TLS": "yes", "SHIM_KUBE_API_QPS": "-1",
                          "SHIM_METRICS_PORT": "9090"})
    assert cfg.decider_timeout == 2.5 and cfg.workers == 8 and isinstance(cfg.workers, int)
    assert cfg.leader_elect is False and cfg.decider_tls is True
    assert cfg.kube_api_qps == -1 and cfg.metrics_port == 9090
    assert cfg.lease_duration == 30 and math.isfinite(cfg.renew_deadline)
    assert cfg.feature_gates == {"InPlaceRestart": True, "ElasticJobSet": False}
    defaults = parse_args([], env={})
    assert (defaults.decider_timeout, defaults.workers, defaults.leader_elect) == (5.0, 4, True)


@pytest.mark.waits
def test_the_real_command_says_it_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "shim.main", "--once"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60,
                          env=dict(os.environ, DECIDER_TIMEOUT="abc"))
    assert done.returncode == 2
    assert "argument --decider-timeout: 'abc' (the flag or DECIDER_TIMEOUT)" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_api_limit_defaults_to_upstream_jobsets_manager() -> None:
    # kubernetes-sigs/jobset api/config/v1alpha1/defaults.go: clientConnection QPS 500, burst
    # 500. client-go's library default (5/10) made 1,000 Jobs take 4.7x upstream's time.
    cfg = parse_args([], env={})
    assert (cfg.kube_api_qps, cfg.kube_api_burst) == (500.0, 500)
    # The limiter stays for an operator who lowers it.
    low = parse_args(["--kube-api-qps=5", "--kube-api-burst=10"], env={})
    assert (low.kube_api_qps, low.kube_api_burst) == (5.0, 10)
    deployment = (ROOT / "deploy" / "shim" / "deployment.yaml").read_text()
    assert "--kube-api-qps=500" in deployment and "--kube-api-burst=500" in deployment
