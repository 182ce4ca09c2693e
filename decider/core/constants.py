"""Upstream JobSet's names: labels, annotations, condition types, reasons and messages.

Tools outside this project (kubectl, Kueue, dashboards) match on these strings, so they are
spelled exactly as kubernetes-sigs/jobset v0.12 spells them, and live in one place.
"""

from __future__ import annotations

GROUP = "jobset.x-k8s.io"
API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"
UPSTREAM_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"

_P = "jobset.sigs.k8s.io/"
JOBSET_NAME = _P + "jobset-name"
JOBSET_UID = _P + "jobset-uid"
REPLICATED_JOB_NAME = _P + "replicatedjob-name"
REPLICATED_JOB_REPLICAS = _P + "replicatedjob-replicas"
GLOBAL_REPLICAS = _P + "global-replicas"
JOB_INDEX = _P + "job-index"
JOB_GLOBAL_INDEX = _P + "job-global-index"
JOB_KEY = _P + "job-key"
GROUP_NAME = _P + "group-name"
GROUP_REPLICAS = _P + "group-replicas"
JOB_GROUP_INDEX = _P + "job-group-index"
RESTART_ATTEMPT = _P + "restart-attempt"
JOB_RESTART_ATTEMPT = _P + "job-restart-attempt"
COORDINATOR = _P + "coordinator"
IN_PLACE_RESTART_ATTEMPT = _P + "in-place-restart-attempt"
# ExecutionAttemptsTracking (#1283): the Job's and its pod template's annotation (no label).
EXECUTION_ATTEMPT = _P + "execution-attempt"

EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT = "alpha.jobset.sigs.k8s.io/no-schedule"

# Per-Job independent suspend (seed 000): the KEP-1172 PR's release note spelling, and the
# older spelling from the KEP text; either hands each child Job's spec.suspend to someone else.
RECONCILIATION_MODE = _P + "reconciliation-mode"
RECONCILIATION_MODE_INDEPENDENT = "Independent"
SKIP_SUSPEND_RECONCILIATION = _P + "skip-suspend-reconciliation"

# Feature gates and their upstream defaults.
GATE_RESTART_JOB = "RestartJob"
GATE_IN_PLACE_RESTART = "InPlaceRestart"
GATE_ELASTIC_JOBSET = "ElasticJobSet"
GATE_TLS_OPTIONS = "TLSOptions"
# Gates of upstream's work after v0.12 (spec/upstream-next.md §1.8), all alpha and off:
# execution attempts (KEP-1282, #1283), activeDeadlineSeconds (KEP-1186, #1320), container
# resources mutable while suspended (KEP-1150, #1273), spec.scheduling (KEP-969, #1250) and its
# CompositePodGroup tree (KEP-969 alpha 2).
GATE_EXECUTION_ATTEMPTS = "ExecutionAttemptsTracking"
GATE_ACTIVE_DEADLINE = "JobSetActiveDeadlineSeconds"
GATE_MUTABLE_POD_RESOURCES = "MutablePodResourcesForSuspendedJobSets"
GATE_WORKLOAD_AWARE_SCHEDULING = "JobSetWorkloadAwareSchedulingAPI"
GATE_GANG_OF_GANGS = "JobSetGangOfGangs"
GATE_DEFAULTS: dict[str, bool] = {
    GATE_IN_PLACE_RESTART: False,
    GATE_RESTART_JOB: False,
    GATE_ELASTIC_JOBSET: False,
    GATE_TLS_OPTIONS: True,
    GATE_EXECUTION_ATTEMPTS: False,
    GATE_ACTIVE_DEADLINE: False,
    GATE_MUTABLE_POD_RESOURCES: False,
    GATE_WORKLOAD_AWARE_SCHEDULING: False,
    GATE_GANG_OF_GANGS: False,
}

# Condition types.
COMPLETED = "Completed"
FAILED = "Failed"
SUSPENDED = "Suspended"
STARTUP_IN_PROGRESS = "StartupPolicyInProgress"
STARTUP_COMPLETED = "StartupPolicyCompleted"
RESTARTING = "RestartingJobSet"

# Failure policy actions.
FAIL_JOBSET = "FailJobSet"
RESTART_JOBSET = "RestartJobSet"
RESTART_JOBSET_IGNORE_MAX = "RestartJobSetAndIgnoreMaxRestarts"
RESTART_JOB = "RestartJob"
RESTART_JOB_IGNORE_MAX = "RestartJobAndIgnoreMaxRestarts"
FAILURE_ACTIONS = (
    FAIL_JOBSET,
    RESTART_JOBSET,
    RESTART_JOBSET_IGNORE_MAX,
    RESTART_JOB,
    RESTART_JOB_IGNORE_MAX,
)

# Failure actions that restart one Job, and so need the RestartJob gate.
RESTART_JOB_ACTIONS = (RESTART_JOB, RESTART_JOB_IGNORE_MAX)

# Restart strategies.
RECREATE = "Recreate"
BLOCKING_RECREATE = "BlockingRecreate"
IN_PLACE_RESTART = "InPlaceRestart"

# Enums of the CRD's structural schema, in the CRD's order: admission's error messages and the
# core's InvalidInput messages list them so, and both check against these same tuples.
RESTART_STRATEGIES = (RECREATE, BLOCKING_RECREATE, IN_PLACE_RESTART)
OPERATOR_ALL = "All"
OPERATOR_ANY = "Any"
OPERATORS = (OPERATOR_ALL, OPERATOR_ANY)
ANY_ORDER = "AnyOrder"
IN_ORDER = "InOrder"
STARTUP_ORDERS = (ANY_ORDER, IN_ORDER)
DEPENDS_ON_READY = "Ready"
DEPENDS_ON_COMPLETE = "Complete"
DEPENDS_ON_STATUSES = (DEPENDS_ON_READY, DEPENDS_ON_COMPLETE)
RETENTION_DELETE = "Delete"
RETENTION_RETAIN = "Retain"
RETENTION_POLICIES = (RETENTION_DELETE, RETENTION_RETAIN)

# batch/v1 completionMode of every child Job the webhook defaults.
INDEXED = "Indexed"

# Kubernetes int32 fields (replicas, parallelism, counters) stop here.
MAX_INT32 = 2**31 - 1
# ... and int64 ones (activeDeadlineSeconds) here.
MAX_INT64 = 2**63 - 1

# Reasons.
REASON_ALL_JOBS_COMPLETED = "AllJobsCompleted"
REASON_FAILED_JOBS = "FailedJobs"
REASON_FAIL_JOBSET_ACTION = "FailJobSetFailurePolicyAction"
REASON_REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
REASON_SUSPENDED_JOBS = "SuspendedJobs"
REASON_RESUME_JOBS = "ResumeJobs"
REASON_IN_ORDER_IN_PROGRESS = "InOrderStartupPolicyInProgress"
REASON_IN_ORDER_COMPLETED = "InOrderStartupPolicyCompleted"
REASON_DEFAULT_FAILURE_POLICY = "DefaultFailurePolicy"
REASON_RULE_PREFIX = "FailurePolicy_"
REASON_JOBS_READY = "JobsReady"
REASON_JOBSET_FAILED = "JobSetFailed"
REASON_JOBSET_COMPLETED = "JobSetCompleted"
REASON_JOBSET_SUSPENDED = "JobSetSuspended"
# JobSetActiveDeadlineSeconds (KEP-1186, #1320): the Failed condition's reason.
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"

# Messages.
MSG_COMPLETED = "jobset completed successfully"
MSG_SUSPENDED = "jobset is suspended"
MSG_RESUMED = "jobset is resumed"
MSG_IN_ORDER_IN_PROGRESS = "in order startup policy is in progress"
MSG_IN_ORDER_COMPLETED = "in order startup policy has completed"
MSG_JOBS_READY = "all jobs are ready"
MSG_JOBSET_FAILED = "jobset failed"
MSG_REACHED_MAX_RESTARTS = "jobset failed due to reaching max number of restarts"
# Formatted with spec.activeDeadlineSeconds.
MSG_DEADLINE_EXCEEDED = "JobSet was active for longer than the specified deadline of {} seconds"

# Event reasons besides the conditions'.
# MutablePodResourcesForSuspendedJobSets (#1273): a resume's write of new container resources
# was refused; formatted with the Job's name, "{error}" left for the API server's error text.
REASON_FAILED_RESOURCE_PROPAGATION = "FailedResourcePropagation"
MSG_FAILED_RESOURCE_PROPAGATION = (
    "Failed to propagate mutated resources to child Job {}: {{error}}. Ensure "
    "MutablePodResourcesForSuspendedJobs is enabled on the API server.")

# Job conditions (batch/v1).
JOB_COMPLETE = "Complete"
JOB_FAILED = "Failed"

# Event types.
NORMAL = "Normal"
WARNING = "Warning"

# Upstream's allowed values of onJobFailureReasons (batch/v1 Job failure reasons).
JOB_FAILURE_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)

FOREGROUND = "Foreground"
BACKGROUND = "Background"
