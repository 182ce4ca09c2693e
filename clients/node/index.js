'use strict';
// Node client of the jobset-decider contract (proto/decider/v1/decider.proto).
//
// The .proto is loaded at run time with @grpc/proto-loader, so there is no generated code to
// keep fresh: from the package's own proto/ (copied in at pack time, scripts/copy-proto.js) or,
// in a checkout of the repository, from ../../proto, the one source every client shares.
//
// Field names are lowerCamelCase (jobsetJson, observedJson), enums are their names
// ("ACTION_TYPE_CREATE_JOB"), and 64-bit integers are decimal strings ("30"), as in protobuf's
// JSON mapping: a JavaScript number would round quota totals above 2^53. A request's integer
// and enum fields are checked before it is sent (protobufjs would send another value in their
// place), and so are its field names (protobufjs would drop one it does not know): a bad one
// rejects the call with a TypeError or RangeError naming the field.

const fs = require('node:fs');
const path = require('node:path');
const { inspect } = require('node:util');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_FILE = path.join('decider', 'v1', 'decider.proto');
const PROTO_ROOTS = [path.join(__dirname, 'proto'), path.join(__dirname, '..', '..', 'proto')];
const DEFAULT_DEADLINE_MS = 5000;
const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
// grpc-js sends a deadline as grpc-timeout, at most 8 digits of hours; past that it throws
// "Deadline is too far in the future" from a callback, out of reach of the call's promise, and
// the process dies.
const MAX_DEADLINE_MS = 1e8 * 3600 * 1000;

/** The directory holding decider/v1/decider.proto: the packed copy, else the repository's. */
function protoRoot() {
  for (const root of PROTO_ROOTS) {
    if (fs.existsSync(path.join(root, PROTO_FILE))) return root;
  }
  throw new Error(`decider.proto not found under ${PROTO_ROOTS.join(' or ')}`);
}

let service;
let definition;
/** The decider.v1.Decider service definition, loaded once. */
function deciderService() {
  if (!service) {
    definition = protoLoader.loadSync(PROTO_FILE, {
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
 * `value` as an integer field of `kind` ('int32' | 'int64') holds it: a number for int32, a
 * decimal string for int64. protobufjs, which encodes requests, would turn anything else into
 * another valid value ('abc' to 0, 2**32+3 to 3, 1.5 to 1) where Python's protobuf raises, so
 * this throws naming `field`. Ranges the contract sets (0 or more...) are the server's to check.
 */
function integer(value, field, kind, what = 'an integer') {
  let n;
  if (typeof value === 'bigint') n = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) n = BigInt(value);
  else if (typeof value === 'string' && /^-?\d+$/.test(value)) n = BigInt(value);
  else {
    // Above 2^53 a number is already rounded: only a BigInt or a string says which integer.
    const hint = Number.isInteger(value) ? ' (inexact: pass a BigInt or a string)' : '';
    throw new TypeError(`${field}: must be ${what} (${kind}), got ${inspect(value)}${hint}`);
  }
  const bound = kind === 'int32' ? 2n ** 31n : 2n ** 63n;
  if (n < -bound || n >= bound) {
    throw new RangeError(`${field}: must be ${what} within ${kind}, got ${inspect(value)}`);
  }
  return kind === 'int32' ? Number(n) : String(n);
}

/** A message type or enum of the contract by the name a field gives it. */
function protoType(name) {
  deciderService();
  return (definition[`decider.v1.${name}`] ?? definition[name]).type;
}

/**
 * A copy of `message` (of descriptor `type`) with its field names and its integer, enum,
 * bool and string fields checked, in the form protobufjs encodes exactly. Other mistakes (a string for a list...) make protobufjs
 * throw, which grpc-js reports as the call's INTERNAL error, so they are left to it.
 */
function conform(type, message, field) {
  if (message === null || typeof message !== 'object') return message;
  const out = renamed(type, message, field);
  message = out;
  for (const f of type.field) {
    const value = message[f.name];
    const at = field ? `${field}.${f.name}` : f.name;
    // A map is a repeated field of a nested entry type: its values are checked one by one.
    const entry = type.nestedType.find((n) => n.name === f.typeName && n.options?.mapEntry);
    if (value === undefined || value === null) continue;
    if (entry) {
      if (typeof value === 'object') {
        out[f.name] = Object.fromEntries(Object.entries(value).map(
          ([k, v]) => [k, conformValue(entry.field[1], v, `${at}[${k}]`)]));
      }
    } else if (f.label === 'LABEL_REPEATED') {
      if (Array.isArray(value)) {
        out[f.name] = value.map((v, i) => conformValue(f, v, `${at}[${i}]`));
      }
    } else {
      out[f.name] = conformValue(f, value, at);
    }
  }
  return out;
}

/** A proto field name as protoc writes it: jobsetJson -> jobset_json. */
function snakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * A copy of `message` with every key a field of `type`. protobufjs drops a key it does not
 * know without a word, so a misspelt or misplaced field (`jobsJson`, `deadline` in a request)
 * would be sent as absent and answered as if it were. Keys spelt as in the .proto
 * (`jobset_json`) are taken, as protobuf's JSON parsers take them; anything else throws,
 * naming the key.
 */
function renamed(type, message, field) {
  const names = new Map();
  for (const f of type.field) {
    names.set(f.name, f.name);
    names.set(snakeCase(f.name), f.name);
  }
  const out = {};
  for (const [key, value] of Object.entries(message)) {
    const at = field ? `${field}.${key}` : key;
    const name = names.get(key);
    if (name === undefined) {
      // Undefined says "not set" wherever it appears, as protobufjs reads it.
      if (value === undefined) continue;
      const loose = key.replace(/_/g, '').toLowerCase();
      const near = type.field.find((f) => f.name.toLowerCase() === loose);
      const hint = near ? `did you mean ${near.name}?`
        : `its fields are ${type.field.map((f) => f.name).join(', ')}`;
      throw new TypeError(`${at}: not a field of ${type.name}; ${hint}`);
    }
    if (name !== key && Object.hasOwn(message, name)) {
      throw new TypeError(`${at}: given twice, as ${key} and as ${name}`);
    }
    out[name] = value;
  }
  return out;
}

function conformValue(f, value, at) {
  switch (f.type) {
    case 'TYPE_INT32': return integer(value, at, 'int32');
    case 'TYPE_INT64': return integer(value, at, 'int64');
    case 'TYPE_MESSAGE': return conform(protoType(f.typeName), value, at);
    case 'TYPE_ENUM': {
      // A name protobufjs does not know is sent as 0, and the server then names 0, not it.
      const names = protoType(f.typeName).value.map((v) => v.name);
      if (names.includes(value)) return value;
      if (typeof value === 'number') return integer(value, at, 'int32');
      throw new TypeError(`${at}: must be one of ${names.join(', ')}, got ${inspect(value)}`);
    }
    // protobufjs sends any truthy value as true ('false' included) and any value as a string
    // ('[object Object]'): where Python's protobuf raises, this throws naming the field.
    case 'TYPE_BOOL':
      if (typeof value !== 'boolean') {
        throw new TypeError(`${at}: must be a boolean, got ${inspect(value)}`);
      }
      return value;
    case 'TYPE_STRING':
      if (typeof value !== 'string') {
        throw new TypeError(`${at}: must be a string, got ${inspect(value)}`);
      }
      return value;
    default: return value;
  }
}

/**
 * A call's deadline in milliseconds from now, checked: a number within what grpc-js can send,
 * or Infinity (no deadline). 0 or less is a deadline already passed (DEADLINE_EXCEEDED).
 */
function checkDeadlineMs(value) {
  if (value === Infinity) return value;
  // A string (from an environment variable) would be concatenated to Date.now(), not added.
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError('deadlineMs: must be a number of milliseconds, or Infinity for no '
      + `deadline, got ${inspect(value)}`);
  }
  if (Math.abs(value) >= MAX_DEADLINE_MS) {
    throw new RangeError(`deadlineMs: must be within ±${MAX_DEADLINE_MS} exclusive (10^8 hours, `
      + `gRPC's limit), or Infinity for no deadline, got ${inspect(value)}`);
  }
  return value;
}

/**
 * A google.protobuf.Timestamp from a Date or an RFC 3339 string (every other time in the
 * contract is an RFC 3339 string; `now` is the one Timestamp), or integer milliseconds since
 * the epoch (Date.now()).
 * @param {Date|string|number} when
 */
function timestamp(when) {
  // new Date() reads null as 1970 and 1.5 as 1 ms: only what names a time exactly.
  const exact = when instanceof Date || typeof when === 'string' || Number.isSafeInteger(when);
  const date = when instanceof Date ? when : new Date(exact ? when : NaN);
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
  const names = protoType('SimulationEventType').value.map((v) => v.name);
  return {
    observed: decideRequest(input),
    events: events.map((e, i) => {
      // hasOwn: 'toString' is no event type. An unknown one would be sent as 0 (unspecified).
      const type = Object.hasOwn(EVENT_TYPES, e.type) ? EVENT_TYPES[e.type] : e.type;
      if (!names.includes(type)) {
        throw new TypeError(`events[${i}].type: must be one of `
          + `${Object.keys(EVENT_TYPES).join(', ')} (or its SIMULATION_EVENT_TYPE_ name), `
          + `got ${inspect(e.type)}`);
      }
      return {
        atSeconds: integer(e.at ?? 0, `events[${i}].at`, 'int64', 'an integer of seconds'),
        type,
        job: e.job ?? '',
        reason: e.reason ?? '',
        message: e.message ?? '',
      };
    }),
    maxPasses: integer(maxPasses, 'maxPasses', 'int32'),
  };
}

// The retry policy every client of the decider ships, written as gRPC's retry service config
// (gRFC A6): the same document as the Go and Python clients' (tests/test_client_retry.py checks
// they agree). The client applies it itself (DeciderClient.call) rather than handing it to
// grpc-js: grpc-js retries below every interceptor, so no application can count them, and the
// decider's RESOURCE_EXHAUSTED without a pushback (an input over a limit) must not be retried,
// which a service config cannot say.
const RETRY_SERVICE_CONFIG = JSON.parse(
  fs.readFileSync(path.join(__dirname, 'retry-service-config.json'), 'utf8'));
// The trailer a server sends to say when to try again: the decider sends 100 (ms) when it
// sheds load past --max-pending, 500 when a decision worker was lost.
const PUSHBACK = 'grpc-retry-pushback-ms';

/** Seconds of a service config duration ("0.1s"). */
function durationMs(text, field) {
  const match = typeof text === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(text) : null;
  if (!match || !(Number(match[1]) > 0)) {
    throw new TypeError(`${field}: must be a positive duration such as "0.1s", got ${inspect(text)}`);
  }
  return Number(match[1]) * 1000;
}

/**
 * The retry policy of a gRPC service config's first methodConfig, in milliseconds:
 * { maxAttempts, initialBackoffMs, maxBackoffMs, backoffMultiplier, retryableStatusCodes }.
 */
function retryPolicy(config = RETRY_SERVICE_CONFIG) {
  const field = 'methodConfig[0].retryPolicy';
  const p = config?.methodConfig?.[0]?.retryPolicy;
  if (!p) throw new TypeError(`${field}: missing`);
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1) {
    throw new TypeError(`${field}.maxAttempts: must be 1 or more, got ${inspect(p.maxAttempts)}`);
  }
  if (typeof p.backoffMultiplier !== 'number' || !(p.backoffMultiplier > 0)) {
    throw new TypeError(`${field}.backoffMultiplier: must be positive, got ${inspect(p.backoffMultiplier)}`);
  }
  const codes = (p.retryableStatusCodes ?? []).map((name) => {
    if (!Object.hasOwn(grpc.status, name)) {
      throw new TypeError(`${field}.retryableStatusCodes: not a status code: ${inspect(name)}`);
    }
    return grpc.status[name];
  });
  return {
    maxAttempts: p.maxAttempts,
    initialBackoffMs: durationMs(p.initialBackoff, `${field}.initialBackoff`),
    maxBackoffMs: durationMs(p.maxBackoff, `${field}.maxBackoff`),
    backoffMultiplier: p.backoffMultiplier,
    retryableStatusCodes: codes,
  };
}

/** Every call sent once. */
const NO_RETRY = Object.freeze({ maxAttempts: 1, retryableStatusCodes: [] });

/**
 * Milliseconds to wait before sending again a call that ended with `code` and `trailers`
 * (grpc.Metadata), and whether a pushback said so; null when it is not to be sent again.
 * `backoffs`: the retries since the last pushback. As gRFC A6: a pushback of 0 or more is the
 * wait (and starts the backoff over), a negative or malformed one forbids a retry; one rule
 * more, RESOURCE_EXHAUSTED without a pushback (an input over the decider's limits, a message
 * over gRPC's) is never retried.
 */
function retryDelay(policy, code, trailers, backoffs) {
  if (!policy.retryableStatusCodes.includes(code)) return null;
  const pushback = trailers?.get(PUSHBACK) ?? [];
  if (pushback.length > 0) {
    const text = String(pushback[0]);
    if (pushback.length > 1 || !/^\d+$/.test(text)) return null;
    return { ms: Number(text), pushed: true };
  }
  if (code === grpc.status.RESOURCE_EXHAUSTED) return null;
  const limit = Math.min(policy.initialBackoffMs * policy.backoffMultiplier ** Math.min(backoffs, 64),
    policy.maxBackoffMs);
  return { ms: Math.random() * limit, pushed: false };
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
    this.deadlineMs = checkDeadlineMs(opts.deadlineMs ?? DEFAULT_DEADLINE_MS);
    this.retry = opts.retry ?? retryPolicy();
    /** Calls sent again since the client was made (each retry once). */
    this.retries = 0;
    this.stub = new Decider(target, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      ...(opts.channelOptions ?? {}),
    });
  }

  /**
   * One RPC under the retry policy. Every attempt runs within the call's one deadline; a retry
   * that could only start after it is not waited for: the call rejects with the last attempt's
   * error, the server's code, details and trailers (err.metadata) intact.
   */
  async call(method, request, { deadlineMs, metadata } = {}) {
    const ms = checkDeadlineMs(deadlineMs ?? this.deadlineMs);
    const deadline = ms === Infinity ? Infinity : new Date(Date.now() + ms);
    const message = conform(this.stub.constructor.service[method].requestType.type, request, '');
    let backoffs = 0;
    for (let attempt = 1; ; attempt += 1) {
      try {
        // eslint-disable-next-line no-await-in-loop
        return await new Promise((resolve, reject) => {
          this.stub[method](message, metadataOf(metadata), { deadline }, (err, response) => {
            if (err) reject(err);
            else resolve(response);
          });
        });
      } catch (err) {
        if (attempt >= this.retry.maxAttempts) throw err;
        const wait = retryDelay(this.retry, err.code, err.metadata, backoffs);
        if (wait === null) throw err;
        backoffs = wait.pushed ? 0 : backoffs + 1;
        if (deadline !== Infinity && deadline.getTime() - Date.now() <= wait.ms) throw err;
        // eslint-disable-next-line no-await-in-loop
        await new Promise((resolve) => { setTimeout(resolve, wait.ms); });
        this.retries += 1;
      }
    }
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
  RETRY_SERVICE_CONFIG,
  NO_RETRY,
  retryPolicy,
  retryDelay,
  status: grpc.status,
  credentials: grpc.credentials,
};
