"""Upstream names and enum values admission checks against (kubernetes-sigs/jobset v1alpha2)."""

from __future__ import annotations

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"

# Feature gates and their upstream defaults (pkg/features).
GATE_IN_PLACE_RESTART = "InPlaceRestart"
GATE_RESTART_JOB = "RestartJob"
GATE_ELASTIC_JOBSET = "ElasticJobSet"
GATE_TLS_OPTIONS = "TLSOptions"
KNOWN_GATES: dict[str, bool] = {
    GATE_IN_PLACE_RESTART: False,
    GATE_RESTART_JOB: False,
    GATE_ELASTIC_JOBSET: False,
    GATE_TLS_OPTIONS: True,
}

# Enums of the CRD's structural schema, in the CRD's order (error messages list them so).
OPERATORS = ("All", "Any")
FAILURE_ACTIONS = (
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
)
RESTART_JOB_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")
IN_PLACE_RESTART = "InPlaceRestart"
RESTART_STRATEGIES = ("Recreate", "BlockingRecreate", "InPlaceRestart")
STARTUP_ORDERS = ("AnyOrder", "InOrder")
DEPENDS_ON_STATUSES = ("Ready", "Complete")
RETENTION_POLICIES = ("Delete", "Retain")

# Values the webhook accepts in onJobFailureReasons (batch/v1 Job failure reasons).
JOB_FAILURE_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)

# Per-Job independent suspend (seed 000, KEP-1172): the PR's release-note spelling and the
# KEP text's older spelling. Either hands child Jobs' spec.suspend to another controller.
RECONCILIATION_MODE = "jobset.sigs.k8s.io/reconciliation-mode"
RECONCILIATION_MODE_INDEPENDENT = "Independent"
SKIP_SUSPEND_RECONCILIATION = "jobset.sigs.k8s.io/skip-suspend-reconciliation"

COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"
INDEXED = "Indexed"
MAX_INT32 = 2**31 - 1
# Length limits of the webhook.
MAX_MANAGED_BY_LENGTH = 63
MAX_PVC_NAME_LENGTH = 63
MAX_REPLICAS_WITH_RESTART_JOB = 1024
MIN_RULE_NAME_LENGTH = 1
MAX_RULE_NAME_LENGTH = 128
RULE_NAME_PATTERN = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
# The API server appends 5 random characters to generateName, after cutting it to 58.
GENERATE_NAME_MAX_PREFIX = 58
GENERATE_NAME_SUFFIX_LENGTH = 5
