// Types of @jobset-decider/client. Field meanings: proto/decider/v1/decider.proto, documented
// field by field. Names are lowerCamelCase, enums their names, int64 values decimal strings.
import type { ChannelCredentials, status as grpcStatus, credentials as grpcCredentials } from '@grpc/grpc-js';

/** int64 fields travel as decimal strings: quota totals may exceed 2^53. */
export type Int64 = string;

export interface Timestamp { seconds: Int64; nanos: number; }
/** A google.protobuf.Duration: seconds and the nanoseconds past them. */
export interface Duration { seconds: Int64; nanos: number; }

export interface Options {
  controllerName?: string;
  featureGates?: Record<string, boolean>;
  gangApiVersion?: string;
  gangTarget?: string;
}

export interface Condition {
  type: string; status: string; reason: string; message: string; lastTransitionTime: string;
}

export interface Toleration {
  key: string; operator: string; value: string; effect: string; tolerationSeconds?: Int64;
}

export interface PodTemplateSummary {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  schedulingGates?: string[];
  /** Suspended Jobs only: spec.template.spec.containers / initContainers as JSON lists. */
  containersJson?: string; initContainersJson?: string;
}

/** A child Job summarized by the caller; send `observedJson` instead to skip summarizing. */
export interface ObservedJob {
  name: string; uid?: string; controllerUid?: string;
  labels?: Record<string, string>; annotations?: Record<string, string>;
  suspend?: boolean; parallelism?: number; completions?: number;
  active?: number; ready?: number; succeeded?: number; failed?: number;
  conditions?: Condition[];
  creationTimestamp?: string; deletionTimestamp?: string; startTime?: string;
  podTemplate?: PodTemplateSummary; resourceVersion?: string;
}

export interface ObservedObject {
  apiVersion: string; kind: string; name: string; uid?: string; controllerUid?: string;
  objectJson?: string;
}

export interface ObservedPod {
  name: string; phase?: string; annotations?: Record<string, string>;
  maxContainerRestarts?: number;
}

export interface DecideRequest {
  jobsetJson: string;
  jobs?: ObservedJob[];
  objects?: ObservedObject[];
  pods?: ObservedPod[];
  now: Timestamp;
  options?: Options;
  /** Jobs, Pods, Services, PVCs, Workloads, PodGroups as the API server serves them (JSON). */
  observedJson?: string[];
}

export type ActionType =
  | 'ACTION_TYPE_CREATE_JOB' | 'ACTION_TYPE_DELETE_JOB' | 'ACTION_TYPE_SUSPEND_JOB'
  | 'ACTION_TYPE_RESUME_JOB' | 'ACTION_TYPE_PATCH_JOB' | 'ACTION_TYPE_CREATE_SERVICE'
  | 'ACTION_TYPE_CREATE_PVC' | 'ACTION_TYPE_CREATE_WORKLOAD' | 'ACTION_TYPE_CREATE_POD_GROUP'
  | 'ACTION_TYPE_DELETE_WORKLOAD' | 'ACTION_TYPE_DELETE_POD_GROUP' | 'ACTION_TYPE_UPDATE_STATUS'
  | 'ACTION_TYPE_DELETE_JOB_SET' | 'ACTION_TYPE_EVENT' | 'ACTION_TYPE_PATCH_WORKLOAD'
  | 'ACTION_TYPE_PATCH_POD_GROUP' | 'ACTION_TYPE_UPDATE_SERVICE';

export interface Action {
  type: ActionType; name: string; namespace: string; apiVersion: string; kind: string;
  uid: string; objectJson: string; patchJson: string; clearStartTime: boolean;
  propagationPolicy: string; reason: string;
  event: { type: string; reason: string; message: string } | null;
  /** UpdateStatus: the status to write at this point of the plan; null: the response's. */
  status: JobSetStatus | null;
  /** An event to record if the action fails; '{error}' stands for the API server's error. */
  onFailure: { type: string; reason: string; message: string } | null;
}

export interface ReplicatedJobStatus {
  name: string; ready: number; succeeded: number; failed: number; active: number;
  suspended: number; jobRestarts: number[]; jobRestartsCountTowardsMax: number[];
}

export interface JobSetStatus {
  conditions: Condition[]; restarts: number; restartsCountTowardsMax: number;
  terminalState: string; replicatedJobsStatus: ReplicatedJobStatus[];
  previousInPlaceRestartAttempt?: number; currentInPlaceRestartAttempt?: number;
  /** ExecutionAttemptsTracking: unset while the JobSet never ran. */
  executionAttempts?: number;
  /** JobSetActiveDeadlineSeconds: RFC 3339, '' when unset. */
  startTime: string;
}

export interface FailurePolicyDecision {
  job: string; reason: string; message: string; rule: string; action: string;
}

export interface DecideResponse {
  actions: Action[]; status: JobSetStatus;
  /** The requeue delay rounded up to whole seconds ('0': none), for clients that predate requeueAfter. */
  requeueAfterSeconds: Int64;
  /** The exact requeue delay (a TTL's remainder); null when no requeue is asked. */
  requeueAfter: Duration | null;
  explanation: string[]; resourceVersion: string;
  failurePolicy: FailurePolicyDecision | null;
}

export interface ValidateRequest {
  objectJson: string; oldObjectJson?: string; options?: Options; objects?: ObservedObject[];
}
export interface ValidateResponse {
  valid: boolean; errors: { field: string; message: string }[]; objectJson: string;
}

export interface PlanGangRequest { objectJson: string; objects?: ObservedObject[]; options?: Options; }
export interface ObjectRef { apiVersion: string; kind: string; name: string; uid: string; }
export interface PlanGangResponse {
  objectsJson: string[];
  podTemplatePatches: { jobName: string; patchJson: string }[];
  explanation: string[]; warnings: string[];
  jobAnnotations: { jobName: string; annotations: Record<string, string> }[];
  updates: { object: ObjectRef; patchType: string; patchJson: string }[];
  deletes: ObjectRef[]; mode: string;
}

export interface PodSetsRequest { objectJson: string; options?: Options; }
export interface PodSetTopologyRequest {
  required?: string; preferred?: string; unconstrained?: boolean; podIndexLabel?: string;
  subGroupIndexLabel?: string; subGroupCount?: number; podSetGroupName?: string;
  podSetSliceRequiredTopology?: string; podSetSliceSize?: number;
  /** Kueue's multi-layer slices, coarsest first (empty unless the annotation is set). */
  podsetSliceRequiredTopologyConstraints: { topology: string; size: number }[];
}
export interface PodSet {
  name: string; count: Int64; replicatedJob?: string;
  /** Kueue's minCount for partial admission: a Job's kueue.x-k8s.io/job-min-parallelism. */
  minCount?: number;
  gang: { podGroup: string; template: string; minCount?: Int64; podSets: string[] } | null;
  warnings: string[];
  /** One pod's requests: millicores for cpu, whole units (bytes for memory) otherwise. */
  podRequests: Record<string, Int64>;
  totalRequests: Record<string, Int64>;
  nodeSelector: Record<string, string>;
  tolerations: Toleration[];
  topologyRequest: PodSetTopologyRequest | null;
}
export interface PodSetsResponse { podSets: PodSet[]; }

export type SimulationEventType =
  | 'SIMULATION_EVENT_TYPE_JOB_FAILED' | 'SIMULATION_EVENT_TYPE_JOB_SUCCEEDED'
  | 'SIMULATION_EVENT_TYPE_JOB_READY' | 'SIMULATION_EVENT_TYPE_JOB_SUSPENDED'
  | 'SIMULATION_EVENT_TYPE_JOB_RESUMED' | 'SIMULATION_EVENT_TYPE_JOBSET_SUSPENDED'
  | 'SIMULATION_EVENT_TYPE_JOBSET_RESUMED';

export interface SimulationEvent {
  atSeconds: Int64; type: SimulationEventType; job: string; reason: string; message: string;
}
export interface SimulateRequest {
  observed: DecideRequest; events?: SimulationEvent[]; maxPasses?: number;
}
export interface SimulationStep {
  passNumber: number; time: string; atSeconds: Int64; events: SimulationEvent[];
  plan: DecideResponse;
}
export interface SimulationOutcome {
  terminalState: string; reason: string; restarts: number; restartsCountTowardsMax: number;
  restartsLeft: number;
  recreatedJobs: { name: string; restartAttempt: number; jobRestartAttempt?: number }[];
  deletedJobs: string[]; failurePolicy: FailurePolicyDecision[]; summary: string;
  passes: number; settled: boolean; endTime: string; jobsetDeleted: boolean;
  eventsNotApplied: string[];
  /** When activeDeadlineSeconds failed the JobSet (RFC 3339); '' when it did not. */
  deadlineExceededTime: string;
}
export interface SimulateResponse { steps: SimulationStep[]; outcome: SimulationOutcome; }

export interface ClientOptions {
  /**
   * Default deadline of every call, in milliseconds (5000); Infinity for none. Anything but a
   * number within ±10^8 hours (gRPC's limit) throws a TypeError or RangeError.
   */
  deadlineMs?: number;
  /** TLS: grpc.credentials.createSsl(...); plaintext by default. */
  credentials?: ChannelCredentials;
  maxMessageBytes?: number;
  channelOptions?: Record<string, unknown>;
  /**
   * The retry policy (default: retryPolicy(), the service config every client ships; NO_RETRY:
   * each call once). A call ending UNAVAILABLE or RESOURCE_EXHAUSTED is sent again after the
   * server's pushback (grpc-retry-pushback-ms), else an exponential backoff, within its deadline;
   * RESOURCE_EXHAUSTED without a pushback (an input over a limit) is not.
   */
  retry?: RetryPolicy;
}

/** gRPC's retryPolicy (gRFC A6), durations in milliseconds. */
export interface RetryPolicy {
  maxAttempts: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  backoffMultiplier?: number;
  retryableStatusCodes: number[];
}

export interface CallOptions {
  /**
   * This call's deadline in milliseconds from now (the client's default otherwise); Infinity
   * for none. Anything but a number within ±10^8 hours rejects the call with a TypeError or
   * RangeError.
   */
  deadlineMs?: number;
  /** gRPC metadata, e.g. { traceparent: '00-...' }. */
  metadata?: Record<string, string>;
}

export declare class DeciderClient {
  constructor(target: string, opts?: ClientOptions);
  readonly deadlineMs: number;
  readonly retry: RetryPolicy;
  /** Calls sent again since the client was made (each retry once). */
  readonly retries: number;
  decide(request: DecideRequest, opts?: CallOptions): Promise<DecideResponse>;
  validate(request: ValidateRequest, opts?: CallOptions): Promise<ValidateResponse>;
  planGang(request: PlanGangRequest, opts?: CallOptions): Promise<PlanGangResponse>;
  podSets(request: PodSetsRequest, opts?: CallOptions): Promise<PodSetsResponse>;
  simulate(request: SimulateRequest, opts?: CallOptions): Promise<SimulateResponse>;
  close(): void;
}

/** Kubernetes objects are plain JSON values; strings are sent as they are. */
export type KubeObject = Record<string, unknown> | string;

export interface DecideInput {
  jobset: KubeObject;
  /** Everything watched around the JobSet, as served: Jobs, Pods, Service, PVCs, ... */
  observed?: KubeObject[];
  /** Default: now. A number is integer milliseconds since the epoch (Date.now()). */
  now?: Date | string | number;
  options?: Options;
}

export interface SimEvent {
  type: 'JobFailed' | 'JobSucceeded' | 'JobReady' | 'JobSuspended' | 'JobResumed'
    | 'JobSetSuspended' | 'JobSetResumed' | SimulationEventType;
  /** Whole seconds after `now` (default 0): a safe integer, a BigInt or a decimal string. */
  at?: number | bigint | string;
  job?: string;
  reason?: string;
  message?: string;
}

export interface SimulateInput extends DecideInput {
  events?: SimEvent[];
  maxPasses?: number;
}

export declare function decideRequest(input: DecideInput): DecideRequest;
export declare function simulateRequest(input: SimulateInput): SimulateRequest;
export declare function timestamp(when: Date | string | number): Timestamp;
export declare function protoRoot(): string;
export declare const EVENT_TYPES: Record<string, SimulationEventType>;
/** The retry service config every client of the decider ships (retry-service-config.json). */
export declare const RETRY_SERVICE_CONFIG: Record<string, unknown>;
/** Every call sent once. */
export declare const NO_RETRY: RetryPolicy;
/** The retryPolicy of a service config's first methodConfig (default: RETRY_SERVICE_CONFIG). */
export declare function retryPolicy(config?: Record<string, unknown>): RetryPolicy;
/** Milliseconds to wait before a retry, and whether a pushback said so; null: no retry. */
export declare function retryDelay(policy: RetryPolicy, code: number,
  trailers: { get(key: string): unknown[] } | undefined, backoffs: number): { ms: number; pushed: boolean } | null;
export declare const status: typeof grpcStatus;
export declare const credentials: typeof grpcCredentials;
