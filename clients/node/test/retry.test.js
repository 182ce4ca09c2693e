'use strict';
// The retry policy against a decider that sheds load (`serve --workers 1 --max-pending 1`):
// a burst of calls without retries meets RESOURCE_EXHAUSTED with the server's 100 ms pushback;
// with the client's policy every call of a flood completes, and the retries are counted.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const grpc = require('@grpc/grpc-js');

const {
  DeciderClient, decideRequest, retryPolicy, retryDelay, NO_RETRY, RETRY_SERVICE_CONFIG, status,
} = require('..');

const ROOT = path.join(__dirname, '..', '..', '..');
const PYTHON = process.env.DECIDER_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');

let server;
let address;

before(async () => {
  server = spawn(PYTHON, ['-m', 'decider.cli', 'serve', '--host', '127.0.0.1', '--port', '0',
    '--drain-delay', '0', '--workers', '1', '--max-pending', '1'],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (chunk) => { stderr += chunk; });
  const first = await new Promise((resolve, reject) => {
    readline.createInterface({ input: server.stdout }).once('line', resolve);
    server.once('exit', (code) => reject(new Error(`decider exited (${code}): ${stderr}`)));
  });
  address = /^decider: serving decider\.v1\.Decider on (\S+)$/.exec(first)?.[1];
  assert.ok(address, `unexpected first line: ${first}`);
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
});

const JOBSET = {
  apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet',
  metadata: { name: 'trainer', namespace: 'default', uid: 'js-uid-1' },
  spec: { replicatedJobs: [{ name: 'workers', replicas: 3, template: { spec: {
    parallelism: 1, completions: 1,
    template: { spec: { containers: [{ name: 'main', image: 'busybox' }] } } } } }] },
};

/** `wave` calls at once, up to `waves` times, until `enough()`: every call's outcome. */
async function flood(client, wave, waves, enough) {
  const outcomes = [];
  for (let w = 0; w < waves && !enough(); w += 1) {
    // eslint-disable-next-line no-await-in-loop
    const got = await Promise.allSettled(Array.from({ length: wave }, () => client.decide(
      decideRequest({ jobset: JOBSET, now: '2026-01-01T00:00:00Z' }), { deadlineMs: 60000 })));
    outcomes.push(...got);
  }
  return outcomes;
}

test('the policy is the service config every client ships', () => {
  assert.deepEqual(retryPolicy(), {
    maxAttempts: 5, initialBackoffMs: 100, maxBackoffMs: 1000, backoffMultiplier: 2,
    retryableStatusCodes: [status.UNAVAILABLE, status.RESOURCE_EXHAUSTED],
  });
  assert.equal(RETRY_SERVICE_CONFIG.methodConfig[0].name[0].service, 'decider.v1.Decider');
  assert.throws(() => retryPolicy({ methodConfig: [{ retryPolicy: { maxAttempts: 0 } }] }),
    /maxAttempts: must be 1 or more/);
  assert.throws(() => retryPolicy({ methodConfig: [{ retryPolicy: { maxAttempts: 2,
    backoffMultiplier: 2, initialBackoff: 'soon', maxBackoff: '1s' } }] }), /initialBackoff/);
});

test('pushback, backoff and the codes never retried', () => {
  const p = retryPolicy();
  const md = (...values) => {
    const m = new grpc.Metadata();
    for (const v of values) m.add('grpc-retry-pushback-ms', v);
    return m;
  };
  assert.deepEqual(retryDelay(p, status.RESOURCE_EXHAUSTED, md('100'), 3), { ms: 100, pushed: true });
  assert.deepEqual(retryDelay(p, status.RESOURCE_EXHAUSTED, md('500'), 0), { ms: 500, pushed: true });
  assert.deepEqual(retryDelay(p, status.UNAVAILABLE, md('0'), 0), { ms: 0, pushed: true });
  for (const bad of [md('-1'), md('soon'), md('100', '200')]) {
    assert.equal(retryDelay(p, status.RESOURCE_EXHAUSTED, bad, 0), null);
  }
  // Without a pushback, RESOURCE_EXHAUSTED is an input over a limit: never sent again.
  assert.equal(retryDelay(p, status.RESOURCE_EXHAUSTED, new grpc.Metadata(), 0), null);
  assert.equal(retryDelay(p, status.INVALID_ARGUMENT, md('100'), 0), null);
  assert.equal(retryDelay(p, status.DEADLINE_EXCEEDED, new grpc.Metadata(), 0), null);
  for (let i = 0; i < 50; i += 1) {
    const first = retryDelay(p, status.UNAVAILABLE, new grpc.Metadata(), 0);
    assert.ok(!first.pushed && first.ms >= 0 && first.ms < 100, `${first.ms}`);
    assert.ok(retryDelay(p, status.UNAVAILABLE, undefined, 2).ms < 400);
    assert.ok(retryDelay(p, status.UNAVAILABLE, undefined, 30).ms < 1000);
  }
});

test('a shed request succeeds on retry: every call of a flood completes, retries counted',
  async () => {
    const bare = new DeciderClient(address, { retry: NO_RETRY });
    let shed = 0;
    try {
      for (const o of await flood(bare, 6, 20, () => shed > 0)) {
        if (o.status === 'rejected') {
          assert.equal(o.reason.code, status.RESOURCE_EXHAUSTED, o.reason.message);
          assert.deepEqual(o.reason.metadata.get('grpc-retry-pushback-ms'), ['100']);
          shed += 1;
        }
      }
      assert.ok(shed > 0, '20 waves of 6 calls at once: none was shed');
      assert.equal(bare.retries, 0);
    } finally {
      bare.close();
    }

    const client = new DeciderClient(address);
    try {
      const outcomes = await flood(client, 6, 20, () => client.retries > 0);
      const failed = outcomes.filter((o) => o.status === 'rejected');
      assert.deepEqual(failed.map((o) => o.reason.message), [],
        `${failed.length} of ${outcomes.length} calls failed despite ${client.retries} retries`);
      assert.ok(client.retries > 0, `${outcomes.length} calls, none retried`);
      console.log(`flood: ${outcomes.length} calls completed, ${client.retries} retries`);
    } finally {
      client.close();
    }
  });

test('an INVALID_ARGUMENT is not retried', async () => {
  const client = new DeciderClient(address);
  try {
    const unnamed = { ...JOBSET, spec: { replicatedJobs: [{ ...JOBSET.spec.replicatedJobs[0], name: '' }] } };
    await assert.rejects(client.decide(decideRequest({ jobset: unnamed })),
      (err) => err.code === status.INVALID_ARGUMENT
        && err.details === 'spec.replicatedJobs[0].name: Required value');
    assert.equal(client.retries, 0);
  } finally {
    client.close();
  }
});
