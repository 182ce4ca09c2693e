'use strict';
// Every RPC of a real decider (`python -m decider.cli serve`) called from Node. The server is
// the repository's: DECIDER_PYTHON names its interpreter (default: the repository's .venv).
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

const {
  DeciderClient, decideRequest, simulateRequest, timestamp, status,
} = require('..');

const ROOT = path.join(__dirname, '..', '..', '..');
const PYTHON = process.env.DECIDER_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
const NOW = '2026-01-01T00:00:00Z';
const UID = 'js-uid-1';

let server;
let client;
let address;

before(async () => {
  server = spawn(PYTHON, ['-m', 'decider.cli', 'serve', '--host', '127.0.0.1', '--port', '0',
    '--drain-delay', '0', '--workers', '1'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (chunk) => { stderr += chunk; });
  const first = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: server.stdout });
    lines.once('line', resolve);
    server.once('exit', (code) => reject(new Error(`decider exited (${code}): ${stderr}`)));
  });
  // "decider: serving decider.v1.Decider on HOST:PORT": the last word is the address.
  const match = /^decider: serving decider\.v1\.Decider on (\S+)$/.exec(first);
  assert.ok(match, `unexpected first line: ${first}`);
  address = match[1];
  client = new DeciderClient(address, { deadlineMs: 20000 });
});

after(async () => {
  client?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
});

function rjob(name, replicas, parallelism = 1, podSpec = undefined) {
  return {
    name, replicas,
    template: { spec: {
      parallelism, completions: parallelism, completionMode: 'Indexed',
      template: { spec: podSpec ?? { restartPolicy: 'OnFailure',
        containers: [{ name: 'main', image: 'busybox' }] } },
    } },
  };
}

function jobset(spec = {}, status = undefined) {
  const js = {
    apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet',
    metadata: { name: 'trainer', namespace: 'default', uid: UID, resourceVersion: '7' },
    spec: { replicatedJobs: [rjob('leader', 1), rjob('workers', 2)], ...spec },
  };
  if (status) js.status = status;
  return js;
}

const FAILURE_POLICY = {
  maxRestarts: 2,
  rules: [{ name: 'no-retry', action: 'FailJobSet', onJobFailureReasons: ['PodFailurePolicy'] }],
};

// A child Job exactly as the API server serves it: the client forwards it, nothing more.
function childJob(rjobName, index, attempt, extraStatus = {}) {
  return {
    apiVersion: 'batch/v1', kind: 'Job',
    metadata: {
      name: `trainer-${rjobName}-${index}`, namespace: 'default',
      uid: `uid-${rjobName}-${index}`, resourceVersion: '5',
      creationTimestamp: '2025-12-31T23:00:00Z',
      labels: {
        'jobset.sigs.k8s.io/jobset-name': 'trainer',
        'jobset.sigs.k8s.io/replicatedjob-name': rjobName,
        'jobset.sigs.k8s.io/job-index': String(index),
        'jobset.sigs.k8s.io/restart-attempt': String(attempt),
      },
      ownerReferences: [{ apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet',
        name: 'trainer', uid: UID, controller: true, blockOwnerDeletion: true }],
    },
    spec: { parallelism: 1, completions: 1, suspend: false,
      template: { spec: { containers: [{ name: 'main', image: 'busybox' }] } } },
    status: { active: 1, ready: 1, startTime: '2025-12-31T23:00:05Z', ...extraStatus },
  };
}

const SERVICE = { apiVersion: 'v1', kind: 'Service',
  metadata: { name: 'trainer', namespace: 'default', uid: 'svc-uid' } };

function running(attempt, failed = {}) {
  return [childJob('leader', 0, attempt), childJob('workers', 0, attempt),
    childJob('workers', 1, attempt, failed), SERVICE];
}

test('Decide on a new JobSet creates the Service and every Job', async () => {
  const plan = await client.decide(decideRequest({ jobset: jobset(), now: NOW }));
  const creates = plan.actions.filter((a) => a.type === 'ACTION_TYPE_CREATE_JOB').map((a) => a.name);
  assert.deepEqual(creates, ['trainer-leader-0', 'trainer-workers-0', 'trainer-workers-1']);
  assert.ok(plan.actions.some((a) => a.type === 'ACTION_TYPE_CREATE_SERVICE'));
  const worker = JSON.parse(plan.actions.find((a) => a.name === 'trainer-workers-1').objectJson);
  assert.equal(worker.metadata.labels['jobset.sigs.k8s.io/restart-attempt'], '0');
  assert.equal(plan.requeueAfterSeconds, '0');
  assert.equal(plan.requeueAfter, null);
  assert.equal(plan.failurePolicy, null);
});

test('Decide on a finished JobSet requeues for exactly the time its TTL has left', async () => {
  const completed = { type: 'Completed', status: 'True', reason: 'AllJobsCompleted',
    message: 'jobset completed successfully', lastTransitionTime: NOW };
  const plan = await client.decide(decideRequest({
    jobset: jobset({ ttlSecondsAfterFinished: 5 }, { terminalState: 'Completed',
      conditions: [completed] }),
    now: '2026-01-01T00:00:00.988Z',
  }));
  assert.deepEqual(plan.requeueAfter, { seconds: '4', nanos: 12000000 });
  assert.equal(plan.requeueAfterSeconds, '5');
});

test('Decide with raw Kubernetes objects applies the failure policy', async () => {
  const failed = { active: 0, ready: 0, failed: 1, conditions: [
    { type: 'FailureTarget', status: 'True', reason: 'PodFailurePolicy', message: 'evicted',
      lastTransitionTime: '2025-12-31T23:30:00Z' },
    { type: 'Failed', status: 'True', reason: 'PodFailurePolicy', message: 'evicted',
      lastTransitionTime: '2025-12-31T23:30:00Z' }] };
  const plan = await client.decide(decideRequest({
    jobset: jobset({ failurePolicy: FAILURE_POLICY }, { restarts: 1, restartsCountTowardsMax: 1 }),
    observed: running(1, failed),
    now: new Date(NOW),
  }));
  assert.equal(plan.status.terminalState, 'Failed');
  assert.deepEqual(plan.failurePolicy, { job: 'trainer-workers-1', reason: 'PodFailurePolicy',
    message: 'evicted', rule: 'no-retry', action: 'FailJobSet' });
});

test('Decide refuses a malformed raw object, naming it', async () => {
  const bad = childJob('workers', 0, 0);
  bad.metadata.labels.x = 1;
  await assert.rejects(
    client.decide(decideRequest({ jobset: jobset(), observed: [bad], now: NOW })),
    (err) => err.code === status.INVALID_ARGUMENT
      && err.details.startsWith('observed_json[0].metadata.labels[x]: must be a string'));
});

test('a passed deadline is DEADLINE_EXCEEDED', async () => {
  await assert.rejects(
    client.decide(decideRequest({ jobset: jobset(), now: NOW }), { deadlineMs: -1 }),
    (err) => err.code === status.DEADLINE_EXCEEDED);
});

test('a bad deadlineMs rejects the call naming it, and Infinity means no deadline', async () => {
  const request = { objectJson: JSON.stringify(jobset()) };
  // 1e15 made grpc-js throw "Deadline is too far in the future" out of reach, killing the
  // process; a string ("5000" from an environment variable) was concatenated to Date.now().
  for (const [deadlineMs, name] of [[1e15, 'RangeError'], [-1e16, 'RangeError'],
    ['5000', 'TypeError'], [NaN, 'TypeError'], [-Infinity, 'TypeError']]) {
    await assert.rejects(client.validate(request, { deadlineMs }), (err) => err.name === name
      && err.message.startsWith('deadlineMs: ') && err.message.endsWith(`got ${
        typeof deadlineMs === 'string' ? `'${deadlineMs}'` : deadlineMs}`), String(deadlineMs));
  }
  assert.equal((await client.validate(request, { deadlineMs: Infinity })).valid, true);
  assert.equal((await client.validate(request, { deadlineMs: 3.6e14 - 1 })).valid, true);
});

test('the client refuses a bad default deadlineMs when it is made', () => {
  assert.throws(() => new DeciderClient(address, { deadlineMs: '5000' }),
    { name: 'TypeError', message: /^deadlineMs: .*got '5000'$/ });
  assert.throws(() => new DeciderClient(address, { deadlineMs: 1e15 }),
    { name: 'RangeError', message: /^deadlineMs: / });
  const forever = new DeciderClient(address, { deadlineMs: Infinity });
  assert.equal(forever.deadlineMs, Infinity);
  forever.close();
});

test('Validate defaults a JobSet and refuses a duplicate replicated Job', async () => {
  const ok = await client.validate({ objectJson: JSON.stringify(jobset()) });
  assert.equal(ok.valid, true);
  assert.equal(JSON.parse(ok.objectJson).spec.successPolicy.operator, 'All');
  const dup = jobset({ replicatedJobs: [rjob('a', 1), rjob('a', 1)] });
  const bad = await client.validate({ objectJson: JSON.stringify(dup) });
  assert.equal(bad.valid, false);
  // As upstream's list-map validation reports it: at the repeated item, naming its key.
  assert.equal(bad.errors[0].field, 'spec.replicatedJobs[1]');
  assert.equal(bad.errors[0].message, 'Duplicate value: {"name":"a"}');
});

test('PlanGang builds the Workload and PodGroups of a gang JobSet', async () => {
  const js = jobset();
  js.metadata.annotations = { 'jobset-decider.io/gang-policy': 'JobSetGangPerReplicatedJob' };
  const plan = await client.planGang({ objectJson: JSON.stringify(js),
    options: { gangApiVersion: 'scheduling.k8s.io/v1beta1' } });
  const kinds = plan.objectsJson.map((o) => JSON.parse(o).kind);
  assert.equal(kinds[0], 'Workload');
  assert.ok(kinds.slice(1).every((k) => k === 'PodGroup') && kinds.length > 1, kinds.join());
  assert.equal(plan.podTemplatePatches.length, 3);
});

test('PodSets carries counts, requests and the topology request', async () => {
  const js = jobset({ replicatedJobs: [rjob('workers', 2, 3, {
    containers: [{ name: 'c', image: 'i', resources: { requests: { cpu: '500m' },
      limits: { memory: '1Gi', 'nvidia.com/gpu': '1' } } }],
    nodeSelector: { pool: 'gpu' },
    tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }],
  })] });
  js.spec.replicatedJobs[0].template.spec.template.metadata = {
    annotations: { 'kueue.x-k8s.io/podset-required-topology': 'rack' } };
  const { podSets } = await client.podSets({ objectJson: JSON.stringify(js) });
  assert.equal(podSets.length, 1);
  const [ps] = podSets;
  assert.equal(ps.name, 'workers');
  assert.equal(ps.count, '6');
  assert.deepEqual(ps.podRequests, { cpu: '500', memory: String(2 ** 30), 'nvidia.com/gpu': '1' });
  assert.deepEqual(ps.totalRequests, { cpu: '3000', memory: String(6 * 2 ** 30),
    'nvidia.com/gpu': '6' });
  assert.deepEqual(ps.nodeSelector, { pool: 'gpu' });
  assert.equal(ps.tolerations[0].key, 'gpu');
  assert.equal(ps.topologyRequest.required, 'rack');
  assert.equal(ps.topologyRequest.subGroupCount, 2);
});

test('Simulate: an unmatched failure spends the last restart; a FailJobSet rule fails at once',
  async () => {
    const input = {
      jobset: jobset({ failurePolicy: FAILURE_POLICY }, { restarts: 1, restartsCountTowardsMax: 1 }),
      observed: running(1),
      now: NOW,
    };
    const restart = await client.simulate(simulateRequest({
      ...input, events: [{ type: 'JobFailed', job: 'trainer-workers-1' }] }));
    const o = restart.outcome;
    assert.equal(o.terminalState, '');
    assert.equal(o.restarts, 2);
    assert.equal(o.restartsLeft, 0);
    assert.deepEqual(o.recreatedJobs.map((j) => [j.name, j.restartAttempt]), [
      ['trainer-leader-0', 2], ['trainer-workers-0', 2], ['trainer-workers-1', 2]]);
    assert.ok(o.settled);

    const twice = await client.simulate(simulateRequest({ ...input, events: [
      { type: 'JobFailed', job: 'trainer-workers-1' },
      { type: 'JobFailed', job: 'trainer-workers-0', at: 60 }] }));
    assert.equal(twice.outcome.terminalState, 'Failed');
    assert.equal(twice.outcome.reason, 'ReachedMaxRestarts');
    assert.equal(twice.outcome.endTime, '2026-01-01T00:01:00Z');

    const rule = await client.simulate(simulateRequest({ ...input, events: [
      { type: 'JobFailed', job: 'trainer-workers-1', reason: 'PodFailurePolicy' }] }));
    assert.equal(rule.steps[0].plan.status.terminalState, 'Failed');
    assert.equal(rule.outcome.failurePolicy[0].rule, 'no-retry');
    assert.match(rule.outcome.summary, /^job trainer-workers-1 fails with PodFailurePolicy: rule no-retry matches, action FailJobSet: the JobSet fails/);
  });

test('Simulate refuses an event without its Job, naming the field', async () => {
  await assert.rejects(
    client.simulate(simulateRequest({ jobset: jobset(), now: NOW,
      events: [{ type: 'JobFailed' }] })),
    (err) => err.code === status.INVALID_ARGUMENT && err.details.startsWith('events[0].job:'));
});

test('simulateRequest refuses what protobuf would send as another number or type', () => {
  const sim = (event, maxPasses) => simulateRequest({ jobset: jobset(), now: NOW, maxPasses,
    events: event ? [{ type: 'JobFailed', job: 'trainer-workers-1', ...event }] : [] });
  // Each was sent as another valid request: 'abc' as 0, 1e21 as 1, 2^64+1 as 1, 1.5 as 1.
  assert.throws(() => sim({ at: 1.5 }), { name: 'TypeError',
    message: 'events[0].at: must be an integer of seconds (int64), got 1.5' });
  assert.throws(() => sim({ at: 'abc' }), { name: 'TypeError', message: /^events\[0\]\.at: / });
  assert.throws(() => sim({ at: 1e21 }), { name: 'TypeError', message: /^events\[0\]\.at: / });
  assert.throws(() => sim({ at: '18446744073709551617' }),
    { name: 'RangeError', message: /^events\[0\]\.at: .*within int64/ });
  assert.throws(() => sim(undefined, 2 ** 32 + 3), { name: 'RangeError', message: /^maxPasses: / });
  assert.throws(() => sim(undefined, 1.9), { name: 'TypeError', message: /^maxPasses: / });
  for (const type of ['Bogus', 'toString', undefined]) {
    assert.throws(() => sim({ type }), { name: 'TypeError',
      message: /^events\[0\]\.type: must be one of JobFailed, .*, got / }, String(type));
  }
  // Exact integers in any form are kept: int64 travels as a decimal string, int32 as a number.
  assert.equal(sim({ at: 9007199254740993n }).events[0].atSeconds, '9007199254740993');
  assert.equal(sim({ at: '60' }).events[0].atSeconds, '60');
  assert.equal(sim(undefined, '3').maxPasses, 3);
  assert.equal(sim({ type: 'SIMULATION_EVENT_TYPE_JOB_READY' }).events[0].type,
    'SIMULATION_EVENT_TYPE_JOB_READY');
});

test('what the contract allows but the server refuses is the server\'s to name', async () => {
  await assert.rejects(client.simulate(simulateRequest({ jobset: jobset(), now: NOW,
    events: [{ type: 'JobFailed', job: 'trainer-workers-1', at: -5 }] })),
  (err) => err.code === status.INVALID_ARGUMENT
    && err.details.startsWith('events[0].at_seconds: must be between 0'));
  const request = decideRequest({ jobset: jobset(), now: NOW });
  await assert.rejects(client.decide({ ...request, now: { seconds: '0', nanos: -1 } }),
    (err) => err.code === status.INVALID_ARGUMENT && err.details.startsWith('now.nanos:'));
});

test('a request built by hand is checked too, naming the field', async () => {
  const request = decideRequest({ jobset: jobset(), now: NOW });
  // nanos 2^40 was sent as 0, an unknown enum name as 0 and active 2^32+1 as 1.
  await assert.rejects(client.decide({ ...request, now: { seconds: '0', nanos: 2 ** 40 } }),
    { name: 'RangeError',
      message: 'now.nanos: must be an integer within int32, got 1099511627776' });
  await assert.rejects(client.decide({ ...request, jobs: [{ name: 'a', active: 2 ** 32 + 1 }] }),
    { name: 'RangeError', message: /^jobs\[0\]\.active: / });
  await assert.rejects(client.simulate({ observed: request, events: [{ type: 'Bogus' }] }),
    { name: 'TypeError', message: /^events\[0\]\.type: must be one of SIMULATION_EVENT_TYPE_/ });
  await assert.rejects(client.simulate({ observed: request, maxPasses: 1.9 }),
    { name: 'TypeError', message: /^maxPasses: / });
  // A BigInt, which protobufjs would read as 0, is sent as the integer it is.
  const tolerations = [{ key: 'gpu', operator: 'Exists', tolerationSeconds: 30n }];
  const plan = await client.decide({ ...request, now: { seconds: 1767225600n, nanos: 0 },
    jobs: [{ name: 'other', podTemplate: { tolerations } }] });
  assert.ok(plan.actions.length > 0);
});

test('bool and string fields are checked, not converted into other values', async () => {
  // protobufjs sent 'false' as true (a feature gate turned on by the word "false") and an
  // object as the string "[object Object]".
  const request = decideRequest({ jobset: jobset(), now: NOW,
    options: { featureGates: { RestartJob: 'false' } } });
  await assert.rejects(client.decide(request),
    { name: 'TypeError', message: "options.featureGates[RestartJob]: must be a boolean, got 'false'" });
  const named = decideRequest({ jobset: jobset(), now: NOW });
  await assert.rejects(client.decide({ ...named, jobs: [{ name: { first: 'a' } }] }),
    { name: 'TypeError', message: /^jobs\[0\]\.name: must be a string, got/ });
  const fine = decideRequest({ jobset: jobset(), now: NOW,
    options: { featureGates: { RestartJob: false } } });
  assert.ok((await client.decide(fine)).actions.length > 0);
});

test('field names are checked: a misspelt one is refused, the .proto spelling is taken',
  async () => {
    const request = decideRequest({ jobset: jobset(), now: NOW });
    // protobufjs dropped an unknown key: the JobSet went unsent and the server named it
    // missing, a Job's misspelt field was decided as absent.
    const { jobsetJson, ...rest } = request;
    await assert.rejects(client.decide({ ...rest, jobSetJson: jobsetJson }),
      { name: 'TypeError',
        message: 'jobSetJson: not a field of DecideRequest; did you mean jobsetJson?' });
    await assert.rejects(client.decide({ ...request, jobs: [{ name: 'a', sucess: 1 }] }),
      { name: 'TypeError', message: /^jobs\[0\]\.sucess: not a field of ObservedJob; its fields are name, / });
    await assert.rejects(client.decide({ ...request, options: { feature_gates: {}, featureGates: {} } }),
      { name: 'TypeError', message: 'options.feature_gates: given twice, as feature_gates and as featureGates' });
    await assert.rejects(client.simulate({ observed: { ...request, deadline: 5 } }),
      { name: 'TypeError', message: /^observed\.deadline: not a field of DecideRequest; / });
    // As the .proto spells them, and undefined for "not set", as protobufjs reads it.
    const plan = await client.decide({ ...rest, jobset_json: jobsetJson, jobs: undefined,
      options: { feature_gates: { RestartJob: false } } });
    assert.deepEqual(plan, await client.decide({ ...request,
      options: { featureGates: { RestartJob: false } } }));
  });

test('timestamp reads Dates and RFC 3339 strings alike', () => {
  assert.deepEqual(timestamp('2026-01-01T00:00:01.5Z'), { seconds: '1767225601', nanos: 5e8 });
  assert.deepEqual(timestamp(new Date(0)), { seconds: '0', nanos: 0 });
  assert.throws(() => timestamp('soon'), TypeError);
  assert.deepEqual(timestamp(1500), { seconds: '1', nanos: 5e8 });
  // new Date() reads null as 1970 and 1.5 as 1 ms.
  for (const when of [null, 1.5, true]) assert.throws(() => timestamp(when), TypeError);
});
