import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ActionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_TYPE_UNSPECIFIED: _ClassVar[ActionType]
    ACTION_TYPE_CREATE_JOB: _ClassVar[ActionType]
    ACTION_TYPE_DELETE_JOB: _ClassVar[ActionType]
    ACTION_TYPE_SUSPEND_JOB: _ClassVar[ActionType]
    ACTION_TYPE_RESUME_JOB: _ClassVar[ActionType]
    ACTION_TYPE_PATCH_JOB: _ClassVar[ActionType]
    ACTION_TYPE_CREATE_SERVICE: _ClassVar[ActionType]
    ACTION_TYPE_CREATE_PVC: _ClassVar[ActionType]
    ACTION_TYPE_CREATE_WORKLOAD: _ClassVar[ActionType]
    ACTION_TYPE_CREATE_POD_GROUP: _ClassVar[ActionType]
    ACTION_TYPE_DELETE_WORKLOAD: _ClassVar[ActionType]
    ACTION_TYPE_DELETE_POD_GROUP: _ClassVar[ActionType]
    ACTION_TYPE_UPDATE_STATUS: _ClassVar[ActionType]
    ACTION_TYPE_DELETE_JOB_SET: _ClassVar[ActionType]
    ACTION_TYPE_EVENT: _ClassVar[ActionType]
    ACTION_TYPE_PATCH_WORKLOAD: _ClassVar[ActionType]
    ACTION_TYPE_PATCH_POD_GROUP: _ClassVar[ActionType]
    ACTION_TYPE_UPDATE_SERVICE: _ClassVar[ActionType]
    ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP: _ClassVar[ActionType]
    ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP: _ClassVar[ActionType]
    ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP: _ClassVar[ActionType]

class SimulationEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIMULATION_EVENT_TYPE_UNSPECIFIED: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOB_FAILED: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOB_SUCCEEDED: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOB_READY: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOB_SUSPENDED: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOB_RESUMED: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOBSET_SUSPENDED: _ClassVar[SimulationEventType]
    SIMULATION_EVENT_TYPE_JOBSET_RESUMED: _ClassVar[SimulationEventType]
ACTION_TYPE_UNSPECIFIED: ActionType
ACTION_TYPE_CREATE_JOB: ActionType
ACTION_TYPE_DELETE_JOB: ActionType
ACTION_TYPE_SUSPEND_JOB: ActionType
ACTION_TYPE_RESUME_JOB: ActionType
ACTION_TYPE_PATCH_JOB: ActionType
ACTION_TYPE_CREATE_SERVICE: ActionType
ACTION_TYPE_CREATE_PVC: ActionType
ACTION_TYPE_CREATE_WORKLOAD: ActionType
ACTION_TYPE_CREATE_POD_GROUP: ActionType
ACTION_TYPE_DELETE_WORKLOAD: ActionType
ACTION_TYPE_DELETE_POD_GROUP: ActionType
ACTION_TYPE_UPDATE_STATUS: ActionType
ACTION_TYPE_DELETE_JOB_SET: ActionType
ACTION_TYPE_EVENT: ActionType
ACTION_TYPE_PATCH_WORKLOAD: ActionType
ACTION_TYPE_PATCH_POD_GROUP: ActionType
ACTION_TYPE_UPDATE_SERVICE: ActionType
ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP: ActionType
ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP: ActionType
ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP: ActionType
SIMULATION_EVENT_TYPE_UNSPECIFIED: SimulationEventType
SIMULATION_EVENT_TYPE_JOB_FAILED: SimulationEventType
SIMULATION_EVENT_TYPE_JOB_SUCCEEDED: SimulationEventType
SIMULATION_EVENT_TYPE_JOB_READY: SimulationEventType
SIMULATION_EVENT_TYPE_JOB_SUSPENDED: SimulationEventType
SIMULATION_EVENT_TYPE_JOB_RESUMED: SimulationEventType
SIMULATION_EVENT_TYPE_JOBSET_SUSPENDED: SimulationEventType
SIMULATION_EVENT_TYPE_JOBSET_RESUMED: SimulationEventType

class Options(_message.Message):
    __slots__ = ("controller_name", "feature_gates", "gang_api_version", "gang_target")
    class FeatureGatesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bool
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bool] = ...) -> None: ...
    CONTROLLER_NAME_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GATES_FIELD_NUMBER: _ClassVar[int]
    GANG_API_VERSION_FIELD_NUMBER: _ClassVar[int]
    GANG_TARGET_FIELD_NUMBER: _ClassVar[int]
    controller_name: str
    feature_gates: _containers.ScalarMap[str, bool]
    gang_api_version: str
    gang_target: str
    def __init__(self, controller_name: _Optional[str] = ..., feature_gates: _Optional[_Mapping[str, bool]] = ..., gang_api_version: _Optional[str] = ..., gang_target: _Optional[str] = ...) -> None: ...

class Condition(_message.Message):
    __slots__ = ("type", "status", "reason", "message", "last_transition_time")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., last_transition_time: _Optional[str] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect", "toleration_seconds")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TOLERATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., toleration_seconds: _Optional[int] = ...) -> None: ...

class PodTemplateSummary(_message.Message):
    __slots__ = ("labels", "annotations", "node_selector", "tolerations", "scheduling_gates", "containers_json", "init_containers_json", "scheduling_group")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_GATES_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_JSON_FIELD_NUMBER: _ClassVar[int]
    INIT_CONTAINERS_JSON_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_GROUP_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    node_selector: _containers.ScalarMap[str, str]
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    scheduling_gates: _containers.RepeatedScalarFieldContainer[str]
    containers_json: str
    init_containers_json: str
    scheduling_group: PodSchedulingGroup
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., scheduling_gates: _Optional[_Iterable[str]] = ..., containers_json: _Optional[str] = ..., init_containers_json: _Optional[str] = ..., scheduling_group: _Optional[_Union[PodSchedulingGroup, _Mapping]] = ...) -> None: ...

class PodSchedulingGroup(_message.Message):
    __slots__ = ("pod_group_name",)
    POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    pod_group_name: str
    def __init__(self, pod_group_name: _Optional[str] = ...) -> None: ...

class ObservedJob(_message.Message):
    __slots__ = ("name", "uid", "controller_uid", "labels", "annotations", "suspend", "parallelism", "completions", "active", "ready", "succeeded", "failed", "conditions", "creation_timestamp", "deletion_timestamp", "start_time", "pod_template", "resource_version")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_UID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DELETION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    POD_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    controller_uid: str
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    suspend: bool
    parallelism: int
    completions: int
    active: int
    ready: int
    succeeded: int
    failed: int
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    creation_timestamp: str
    deletion_timestamp: str
    start_time: str
    pod_template: PodTemplateSummary
    resource_version: str
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., controller_uid: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., suspend: _Optional[bool] = ..., parallelism: _Optional[int] = ..., completions: _Optional[int] = ..., active: _Optional[int] = ..., ready: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., creation_timestamp: _Optional[str] = ..., deletion_timestamp: _Optional[str] = ..., start_time: _Optional[str] = ..., pod_template: _Optional[_Union[PodTemplateSummary, _Mapping]] = ..., resource_version: _Optional[str] = ...) -> None: ...

class ObservedObject(_message.Message):
    __slots__ = ("api_version", "kind", "name", "uid", "controller_uid", "object_json")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_UID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    name: str
    uid: str
    controller_uid: str
    object_json: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., controller_uid: _Optional[str] = ..., object_json: _Optional[str] = ...) -> None: ...

class ObservedPod(_message.Message):
    __slots__ = ("name", "phase", "annotations", "max_container_restarts")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONTAINER_RESTARTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    phase: str
    annotations: _containers.ScalarMap[str, str]
    max_container_restarts: int
    def __init__(self, name: _Optional[str] = ..., phase: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ..., max_container_restarts: _Optional[int] = ...) -> None: ...

class DecideRequest(_message.Message):
    __slots__ = ("jobset_json", "jobs", "objects", "pods", "now", "options", "observed_json")
    JOBSET_JSON_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_JSON_FIELD_NUMBER: _ClassVar[int]
    jobset_json: str
    jobs: _containers.RepeatedCompositeFieldContainer[ObservedJob]
    objects: _containers.RepeatedCompositeFieldContainer[ObservedObject]
    pods: _containers.RepeatedCompositeFieldContainer[ObservedPod]
    now: _timestamp_pb2.Timestamp
    options: Options
    observed_json: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobset_json: _Optional[str] = ..., jobs: _Optional[_Iterable[_Union[ObservedJob, _Mapping]]] = ..., objects: _Optional[_Iterable[_Union[ObservedObject, _Mapping]]] = ..., pods: _Optional[_Iterable[_Union[ObservedPod, _Mapping]]] = ..., now: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., options: _Optional[_Union[Options, _Mapping]] = ..., observed_json: _Optional[_Iterable[str]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("type", "name", "namespace", "api_version", "kind", "uid", "object_json", "patch_json", "clear_start_time", "propagation_policy", "reason", "event", "status", "on_failure")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    PATCH_JSON_FIELD_NUMBER: _ClassVar[int]
    CLEAR_START_TIME_FIELD_NUMBER: _ClassVar[int]
    PROPAGATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    type: ActionType
    name: str
    namespace: str
    api_version: str
    kind: str
    uid: str
    object_json: str
    patch_json: str
    clear_start_time: bool
    propagation_policy: str
    reason: str
    event: Event
    status: JobSetStatus
    on_failure: Event
    def __init__(self, type: _Optional[_Union[ActionType, str]] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., api_version: _Optional[str] = ..., kind: _Optional[str] = ..., uid: _Optional[str] = ..., object_json: _Optional[str] = ..., patch_json: _Optional[str] = ..., clear_start_time: _Optional[bool] = ..., propagation_policy: _Optional[str] = ..., reason: _Optional[str] = ..., event: _Optional[_Union[Event, _Mapping]] = ..., status: _Optional[_Union[JobSetStatus, _Mapping]] = ..., on_failure: _Optional[_Union[Event, _Mapping]] = ...) -> None: ...

class ReplicatedJobStatus(_message.Message):
    __slots__ = ("name", "ready", "succeeded", "failed", "active", "suspended", "job_restarts", "job_restarts_count_towards_max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    SUSPENDED_FIELD_NUMBER: _ClassVar[int]
    JOB_RESTARTS_FIELD_NUMBER: _ClassVar[int]
    JOB_RESTARTS_COUNT_TOWARDS_MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    ready: int
    succeeded: int
    failed: int
    active: int
    suspended: int
    job_restarts: _containers.RepeatedScalarFieldContainer[int]
    job_restarts_count_towards_max: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., ready: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., active: _Optional[int] = ..., suspended: _Optional[int] = ..., job_restarts: _Optional[_Iterable[int]] = ..., job_restarts_count_towards_max: _Optional[_Iterable[int]] = ...) -> None: ...

class JobSetStatus(_message.Message):
    __slots__ = ("conditions", "restarts", "restarts_count_towards_max", "terminal_state", "replicated_jobs_status", "previous_in_place_restart_attempt", "current_in_place_restart_attempt", "execution_attempts", "start_time")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_COUNT_TOWARDS_MAX_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_STATE_FIELD_NUMBER: _ClassVar[int]
    REPLICATED_JOBS_STATUS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_IN_PLACE_RESTART_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_IN_PLACE_RESTART_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    restarts: int
    restarts_count_towards_max: int
    terminal_state: str
    replicated_jobs_status: _containers.RepeatedCompositeFieldContainer[ReplicatedJobStatus]
    previous_in_place_restart_attempt: int
    current_in_place_restart_attempt: int
    execution_attempts: int
    start_time: str
    def __init__(self, conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., restarts: _Optional[int] = ..., restarts_count_towards_max: _Optional[int] = ..., terminal_state: _Optional[str] = ..., replicated_jobs_status: _Optional[_Iterable[_Union[ReplicatedJobStatus, _Mapping]]] = ..., previous_in_place_restart_attempt: _Optional[int] = ..., current_in_place_restart_attempt: _Optional[int] = ..., execution_attempts: _Optional[int] = ..., start_time: _Optional[str] = ...) -> None: ...

class FailurePolicyDecision(_message.Message):
    __slots__ = ("job", "reason", "message", "rule", "action")
    JOB_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    job: str
    reason: str
    message: str
    rule: str
    action: str
    def __init__(self, job: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., rule: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class DecideResponse(_message.Message):
    __slots__ = ("actions", "status", "requeue_after_seconds", "explanation", "resource_version", "decision_id", "failure_policy", "requeue_after")
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REQUEUE_AFTER_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_POLICY_FIELD_NUMBER: _ClassVar[int]
    REQUEUE_AFTER_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[Action]
    status: JobSetStatus
    requeue_after_seconds: int
    explanation: _containers.RepeatedScalarFieldContainer[str]
    resource_version: str
    decision_id: str
    failure_policy: FailurePolicyDecision
    requeue_after: _duration_pb2.Duration
    def __init__(self, actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., status: _Optional[_Union[JobSetStatus, _Mapping]] = ..., requeue_after_seconds: _Optional[int] = ..., explanation: _Optional[_Iterable[str]] = ..., resource_version: _Optional[str] = ..., decision_id: _Optional[str] = ..., failure_policy: _Optional[_Union[FailurePolicyDecision, _Mapping]] = ..., requeue_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class FieldError(_message.Message):
    __slots__ = ("field", "message")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    field: str
    message: str
    def __init__(self, field: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ValidateRequest(_message.Message):
    __slots__ = ("object_json", "old_object_json", "options", "objects")
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    OLD_OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    object_json: str
    old_object_json: str
    options: Options
    objects: _containers.RepeatedCompositeFieldContainer[ObservedObject]
    def __init__(self, object_json: _Optional[str] = ..., old_object_json: _Optional[str] = ..., options: _Optional[_Union[Options, _Mapping]] = ..., objects: _Optional[_Iterable[_Union[ObservedObject, _Mapping]]] = ...) -> None: ...

class ValidateResponse(_message.Message):
    __slots__ = ("valid", "errors", "object_json")
    VALID_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    valid: bool
    errors: _containers.RepeatedCompositeFieldContainer[FieldError]
    object_json: str
    def __init__(self, valid: _Optional[bool] = ..., errors: _Optional[_Iterable[_Union[FieldError, _Mapping]]] = ..., object_json: _Optional[str] = ...) -> None: ...

class PlanGangRequest(_message.Message):
    __slots__ = ("object_json", "objects", "options")
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    object_json: str
    objects: _containers.RepeatedCompositeFieldContainer[ObservedObject]
    options: Options
    def __init__(self, object_json: _Optional[str] = ..., objects: _Optional[_Iterable[_Union[ObservedObject, _Mapping]]] = ..., options: _Optional[_Union[Options, _Mapping]] = ...) -> None: ...

class ObjectRef(_message.Message):
    __slots__ = ("api_version", "kind", "name", "uid")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    name: str
    uid: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class ObjectPatch(_message.Message):
    __slots__ = ("object", "patch_type", "patch_json")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    PATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    PATCH_JSON_FIELD_NUMBER: _ClassVar[int]
    object: ObjectRef
    patch_type: str
    patch_json: str
    def __init__(self, object: _Optional[_Union[ObjectRef, _Mapping]] = ..., patch_type: _Optional[str] = ..., patch_json: _Optional[str] = ...) -> None: ...

class PodTemplatePatch(_message.Message):
    __slots__ = ("job_name", "patch_json")
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    PATCH_JSON_FIELD_NUMBER: _ClassVar[int]
    job_name: str
    patch_json: str
    def __init__(self, job_name: _Optional[str] = ..., patch_json: _Optional[str] = ...) -> None: ...

class JobAnnotations(_message.Message):
    __slots__ = ("job_name", "annotations")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    job_name: str
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, job_name: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PlanGangResponse(_message.Message):
    __slots__ = ("objects_json", "pod_template_patches", "explanation", "warnings", "job_annotations", "updates", "deletes", "mode")
    OBJECTS_JSON_FIELD_NUMBER: _ClassVar[int]
    POD_TEMPLATE_PATCHES_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    JOB_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    DELETES_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    objects_json: _containers.RepeatedScalarFieldContainer[str]
    pod_template_patches: _containers.RepeatedCompositeFieldContainer[PodTemplatePatch]
    explanation: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    job_annotations: _containers.RepeatedCompositeFieldContainer[JobAnnotations]
    updates: _containers.RepeatedCompositeFieldContainer[ObjectPatch]
    deletes: _containers.RepeatedCompositeFieldContainer[ObjectRef]
    mode: str
    def __init__(self, objects_json: _Optional[_Iterable[str]] = ..., pod_template_patches: _Optional[_Iterable[_Union[PodTemplatePatch, _Mapping]]] = ..., explanation: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ..., job_annotations: _Optional[_Iterable[_Union[JobAnnotations, _Mapping]]] = ..., updates: _Optional[_Iterable[_Union[ObjectPatch, _Mapping]]] = ..., deletes: _Optional[_Iterable[_Union[ObjectRef, _Mapping]]] = ..., mode: _Optional[str] = ...) -> None: ...

class PodSetsRequest(_message.Message):
    __slots__ = ("object_json", "options")
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    object_json: str
    options: Options
    def __init__(self, object_json: _Optional[str] = ..., options: _Optional[_Union[Options, _Mapping]] = ...) -> None: ...

class PodSetGang(_message.Message):
    __slots__ = ("pod_group", "template", "min_count", "pod_sets", "composite_groups", "pod_groups")
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    POD_SETS_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_GROUPS_FIELD_NUMBER: _ClassVar[int]
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    pod_group: str
    template: str
    min_count: int
    pod_sets: _containers.RepeatedScalarFieldContainer[str]
    composite_groups: _containers.RepeatedCompositeFieldContainer[PodSetCompositeGroup]
    pod_groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pod_group: _Optional[str] = ..., template: _Optional[str] = ..., min_count: _Optional[int] = ..., pod_sets: _Optional[_Iterable[str]] = ..., composite_groups: _Optional[_Iterable[_Union[PodSetCompositeGroup, _Mapping]]] = ..., pod_groups: _Optional[_Iterable[str]] = ...) -> None: ...

class PodSetCompositeGroup(_message.Message):
    __slots__ = ("name", "template", "min_group_count", "children")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MIN_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    name: str
    template: str
    min_group_count: int
    children: int
    def __init__(self, name: _Optional[str] = ..., template: _Optional[str] = ..., min_group_count: _Optional[int] = ..., children: _Optional[int] = ...) -> None: ...

class PodSet(_message.Message):
    __slots__ = ("name", "count", "replicated_job", "gang", "warnings", "pod_requests", "total_requests", "node_selector", "tolerations", "topology_request", "min_count")
    class PodRequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class TotalRequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REPLICATED_JOB_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    POD_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_REQUEST_FIELD_NUMBER: _ClassVar[int]
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    replicated_job: str
    gang: PodSetGang
    warnings: _containers.RepeatedScalarFieldContainer[str]
    pod_requests: _containers.ScalarMap[str, int]
    total_requests: _containers.ScalarMap[str, int]
    node_selector: _containers.ScalarMap[str, str]
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    topology_request: PodSetTopologyRequest
    min_count: int
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., replicated_job: _Optional[str] = ..., gang: _Optional[_Union[PodSetGang, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ..., pod_requests: _Optional[_Mapping[str, int]] = ..., total_requests: _Optional[_Mapping[str, int]] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., topology_request: _Optional[_Union[PodSetTopologyRequest, _Mapping]] = ..., min_count: _Optional[int] = ...) -> None: ...

class PodSetTopologyRequest(_message.Message):
    __slots__ = ("required", "preferred", "unconstrained", "pod_index_label", "sub_group_index_label", "sub_group_count", "pod_set_group_name", "pod_set_slice_required_topology", "pod_set_slice_size", "podset_slice_required_topology_constraints")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_FIELD_NUMBER: _ClassVar[int]
    UNCONSTRAINED_FIELD_NUMBER: _ClassVar[int]
    POD_INDEX_LABEL_FIELD_NUMBER: _ClassVar[int]
    SUB_GROUP_INDEX_LABEL_FIELD_NUMBER: _ClassVar[int]
    SUB_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    POD_SET_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_SET_SLICE_REQUIRED_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    POD_SET_SLICE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    required: str
    preferred: str
    unconstrained: bool
    pod_index_label: str
    sub_group_index_label: str
    sub_group_count: int
    pod_set_group_name: str
    pod_set_slice_required_topology: str
    pod_set_slice_size: int
    podset_slice_required_topology_constraints: _containers.RepeatedCompositeFieldContainer[PodsetSliceRequiredTopologyConstraint]
    def __init__(self, required: _Optional[str] = ..., preferred: _Optional[str] = ..., unconstrained: _Optional[bool] = ..., pod_index_label: _Optional[str] = ..., sub_group_index_label: _Optional[str] = ..., sub_group_count: _Optional[int] = ..., pod_set_group_name: _Optional[str] = ..., pod_set_slice_required_topology: _Optional[str] = ..., pod_set_slice_size: _Optional[int] = ..., podset_slice_required_topology_constraints: _Optional[_Iterable[_Union[PodsetSliceRequiredTopologyConstraint, _Mapping]]] = ...) -> None: ...

class PodsetSliceRequiredTopologyConstraint(_message.Message):
    __slots__ = ("topology", "size")
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    topology: str
    size: int
    def __init__(self, topology: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class PodSetsResponse(_message.Message):
    __slots__ = ("pod_sets",)
    POD_SETS_FIELD_NUMBER: _ClassVar[int]
    pod_sets: _containers.RepeatedCompositeFieldContainer[PodSet]
    def __init__(self, pod_sets: _Optional[_Iterable[_Union[PodSet, _Mapping]]] = ...) -> None: ...

class SimulateRequest(_message.Message):
    __slots__ = ("observed", "events", "max_passes")
    OBSERVED_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    MAX_PASSES_FIELD_NUMBER: _ClassVar[int]
    observed: DecideRequest
    events: _containers.RepeatedCompositeFieldContainer[SimulationEvent]
    max_passes: int
    def __init__(self, observed: _Optional[_Union[DecideRequest, _Mapping]] = ..., events: _Optional[_Iterable[_Union[SimulationEvent, _Mapping]]] = ..., max_passes: _Optional[int] = ...) -> None: ...

class SimulationEvent(_message.Message):
    __slots__ = ("at_seconds", "type", "job", "reason", "message")
    AT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    at_seconds: int
    type: SimulationEventType
    job: str
    reason: str
    message: str
    def __init__(self, at_seconds: _Optional[int] = ..., type: _Optional[_Union[SimulationEventType, str]] = ..., job: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SimulationStep(_message.Message):
    __slots__ = ("pass_number", "time", "at_seconds", "events", "plan")
    PASS_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    AT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    pass_number: int
    time: str
    at_seconds: int
    events: _containers.RepeatedCompositeFieldContainer[SimulationEvent]
    plan: DecideResponse
    def __init__(self, pass_number: _Optional[int] = ..., time: _Optional[str] = ..., at_seconds: _Optional[int] = ..., events: _Optional[_Iterable[_Union[SimulationEvent, _Mapping]]] = ..., plan: _Optional[_Union[DecideResponse, _Mapping]] = ...) -> None: ...

class RecreatedJob(_message.Message):
    __slots__ = ("name", "restart_attempt", "job_restart_attempt")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESTART_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_RESTART_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    name: str
    restart_attempt: int
    job_restart_attempt: int
    def __init__(self, name: _Optional[str] = ..., restart_attempt: _Optional[int] = ..., job_restart_attempt: _Optional[int] = ...) -> None: ...

class SimulationOutcome(_message.Message):
    __slots__ = ("terminal_state", "reason", "restarts", "restarts_count_towards_max", "restarts_left", "recreated_jobs", "deleted_jobs", "failure_policy", "summary", "passes", "settled", "end_time", "jobset_deleted", "events_not_applied", "deadline_exceeded_time")
    TERMINAL_STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_COUNT_TOWARDS_MAX_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_LEFT_FIELD_NUMBER: _ClassVar[int]
    RECREATED_JOBS_FIELD_NUMBER: _ClassVar[int]
    DELETED_JOBS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PASSES_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    JOBSET_DELETED_FIELD_NUMBER: _ClassVar[int]
    EVENTS_NOT_APPLIED_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_EXCEEDED_TIME_FIELD_NUMBER: _ClassVar[int]
    terminal_state: str
    reason: str
    restarts: int
    restarts_count_towards_max: int
    restarts_left: int
    recreated_jobs: _containers.RepeatedCompositeFieldContainer[RecreatedJob]
    deleted_jobs: _containers.RepeatedScalarFieldContainer[str]
    failure_policy: _containers.RepeatedCompositeFieldContainer[FailurePolicyDecision]
    summary: str
    passes: int
    settled: bool
    end_time: str
    jobset_deleted: bool
    events_not_applied: _containers.RepeatedScalarFieldContainer[str]
    deadline_exceeded_time: str
    def __init__(self, terminal_state: _Optional[str] = ..., reason: _Optional[str] = ..., restarts: _Optional[int] = ..., restarts_count_towards_max: _Optional[int] = ..., restarts_left: _Optional[int] = ..., recreated_jobs: _Optional[_Iterable[_Union[RecreatedJob, _Mapping]]] = ..., deleted_jobs: _Optional[_Iterable[str]] = ..., failure_policy: _Optional[_Iterable[_Union[FailurePolicyDecision, _Mapping]]] = ..., summary: _Optional[str] = ..., passes: _Optional[int] = ..., settled: _Optional[bool] = ..., end_time: _Optional[str] = ..., jobset_deleted: _Optional[bool] = ..., events_not_applied: _Optional[_Iterable[str]] = ..., deadline_exceeded_time: _Optional[str] = ...) -> None: ...

class SimulateResponse(_message.Message):
    __slots__ = ("steps", "outcome")
    STEPS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[SimulationStep]
    outcome: SimulationOutcome
    def __init__(self, steps: _Optional[_Iterable[_Union[SimulationStep, _Mapping]]] = ..., outcome: _Optional[_Union[SimulationOutcome, _Mapping]] = ...) -> None: ...
