'use strict';
// Node client of the jobset-decider contract (proto/decider/v1/decider.proto).
//
// The .proto is loaded at run time with @grpc/proto-loader, so there is no generated code to
// keep fresh: from the package's own proto/ (copied in at pack time, scripts/copy-proto.js) or,
// in a checkout of the repository, from ../../proto, the one source every client shares.
//
// Field names are lowerCamelCase (jobsetJson, observedJson), enums are their names
// ("ACTION_TYPE_CREATE_JOB"), and 64-bit integers are decimal strings ("30"), as in protobuf's
// JSON mapping: a JavaScript number would round quota totals above 2^53.

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_FILE = path.join('decider', 'v1', 'decider.proto');
const PROTO_ROOTS = [path.join(__dirname, 'proto'), path.join(__dirname, '..', '..', 'proto')];
const DEFAULT_DEADLINE_MS = 5000;
const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** The directory holding decider/v1/decider.proto: the packed copy, else the repository's. */
function protoRoot() {
  for (const root of PROTO_ROOTS) {
    if (fs.existsSync(path.join(root, PROTO_FILE))) return root;
  }
  throw new Error(`decider.proto not found under ${PROTO_ROOTS.join(' or ')}`);
}

let service;
/** The decider.v1.Decider service definition, loaded once. */
function deciderService() {
  if (!service) {
    const definition = protoLoader.loadSync(PROTO_FILE, {
      includeDirs: [protoRoot()],
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    service = grpc.loadPackageDefinition(definition).decider.v1.Decider;
  }
  return service;
}

/**
 * A google.protobuf.Timestamp from a Date or an RFC 3339 string (every other time in the
 * contract is an RFC 3339 string; `now` is the one Timestamp).
 * @param {Date|string} when
 */
function timestamp(when) {
  const date = when instanceof Date ? when : new Date(when);
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new TypeError(`not a time: ${String(when)}`);
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: (ms - seconds * 1000) * 1e6 };
}

function toJson(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A DecideRequest from what a client watched: the JobSet and every object around it (Jobs,
 * Pods, the headless Service, PVCs, Workloads, PodGroups) as the API server served them. The
 * decider summarizes them itself (observed_json), exactly as the Python client would.
 * @param {import('./index').DecideInput} input
 */
function decideRequest({ jobset, observed = [], now = new Date(), options = {} }) {
  if (jobset === undefined || jobset === null) throw new TypeError('jobset is required');
  return {
    jobsetJson: toJson(jobset),
    observedJson: observed.map(toJson),
    now: timestamp(now),
    options,
  };
}

const EVENT_TYPES = {
  JobFailed: 'SIMULATION_EVENT_TYPE_JOB_FAILED',
  JobSucceeded: 'SIMULATION_EVENT_TYPE_JOB_SUCCEEDED',
  JobReady: 'SIMULATION_EVENT_TYPE_JOB_READY',
  JobSuspended: 'SIMULATION_EVENT_TYPE_JOB_SUSPENDED',
  JobResumed: 'SIMULATION_EVENT_TYPE_JOB_RESUMED',
  JobSetSuspended: 'SIMULATION_EVENT_TYPE_JOBSET_SUSPENDED',
  JobSetResumed: 'SIMULATION_EVENT_TYPE_JOBSET_RESUMED',
};

/**
 * A SimulateRequest: the DecideRequest's input, and hypothetical events such as
 * `{type: 'JobFailed', job: 'trainer-workers-1', reason: 'PodFailurePolicy', at: 30}`.
 * @param {import('./index').SimulateInput} input
 */
function simulateRequest({ events = [], maxPasses = 0, ...input }) {
  return {
    observed: decideRequest(input),
    events: events.map((e) => ({
      atSeconds: String(e.at ?? 0),
      type: EVENT_TYPES[e.type] ?? e.type,
      job: e.job ?? '',
      reason: e.reason ?? '',
      message: e.message ?? '',
    })),
    maxPasses,
  };
}

function metadataOf(headers) {
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(headers ?? {})) md.add(key, value);
  return md;
}

/** A client of the Decider service. Every call takes a deadline (default 5 s). */
class DeciderClient {
  /**
   * @param {string} target e.g. "localhost:50051" or "dns:///decider.ns.svc:50051"
   * @param {import('./index').ClientOptions} [opts]
   */
  constructor(target, opts = {}) {
    const Decider = deciderService();
    const max = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.deadlineMs = opts.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.stub = new Decider(target, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      ...(opts.channelOptions ?? {}),
    });
  }

  call(method, request, { deadlineMs, metadata } = {}) {
    const deadline = new Date(Date.now() + (deadlineMs ?? this.deadlineMs));
    return new Promise((resolve, reject) => {
      this.stub[method](request, metadataOf(metadata), { deadline }, (err, response) => {
        if (err) reject(err);
        else resolve(response);
      });
    });
  }

  /** One reconcile pass: the plan. */
  decide(request, callOptions) { return this.call('Decide', request, callOptions); }

  /** Admission: defaulting and validation of a JobSet (or a Job's gang rules). */
  validate(request, callOptions) { return this.call('Validate', request, callOptions); }

  /** The Workload/PodGroup objects a Job or JobSet needs. */
  planGang(request, callOptions) { return this.call('PlanGang', request, callOptions); }

  /** Kueue's pod sets, with requests, node selectors, tolerations and topology requests. */
  podSets(request, callOptions) { return this.call('PodSets', request, callOptions); }

  /** "What if?": Decide passes rolled forward under hypothetical events, to an outcome. */
  simulate(request, callOptions) { return this.call('Simulate', request, callOptions); }

  close() { this.stub.close(); }
}

module.exports = {
  DeciderClient,
  decideRequest,
  simulateRequest,
  timestamp,
  protoRoot,
  EVENT_TYPES,
  status: grpc.status,
  credentials: grpc.credentials,
};
