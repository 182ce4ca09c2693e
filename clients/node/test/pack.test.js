'use strict';
// The package as a scheduler author gets it: `npm pack` makes a tarball that carries its own
// .proto (and the LICENSE), `npm install <tarball>` puts it in a project of its own, and that
// project calls a real decider with it, far from this repository's proto/.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const PACKAGE = path.join(__dirname, '..');
const ROOT = path.join(PACKAGE, '..', '..');
const PYTHON = process.env.DECIDER_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');

let work;
let server;
let address;

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'decider-node-pack-'));
  server = spawn(PYTHON, ['-m', 'decider.cli', 'serve', '--host', '127.0.0.1', '--port', '0',
    '--drain-delay', '0', '--workers', '1'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (chunk) => { stderr += chunk; });
  const first = await new Promise((resolve, reject) => {
    readline.createInterface({ input: server.stdout }).once('line', resolve);
    server.once('exit', (code) => reject(new Error(`decider exited (${code}): ${stderr}`)));
  });
  address = /^decider: serving decider\.v1\.Decider on (\S+)$/.exec(first)[1];
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

function npm(args, cwd) {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The package and what its pack script copies in, laid out as in the repository, so that
 * packing (which adds proto/ to the package folder and removes it) never touches the folder the
 * other test files load the .proto from while they run. */
function stage() {
  const repo = path.join(work, 'repo');
  const pkg = path.join(repo, 'clients', 'node');
  fs.cpSync(path.join(ROOT, 'proto'), path.join(repo, 'proto'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'LICENSE'), path.join(repo, 'LICENSE'));
  fs.cpSync(PACKAGE, pkg, { recursive: true,
    filter: (p) => !/[/\\](node_modules|proto)$/.test(p) && !p.endsWith('LICENSE') });
  return pkg;
}

test('the tarball carries the proto and installs into a project that calls the decider', () => {
  const staged = stage();
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], staged))[0];
  const files = packed.files.map((f) => f.path);
  for (const wanted of ['proto/decider/v1/decider.proto', 'index.js', 'index.d.ts',
    'package.json', 'LICENSE']) {
    assert.ok(files.includes(wanted), `${wanted} not in ${files}`);
  }
  assert.deepEqual(files.filter((f) => /^(test|scripts|node_modules)\//.test(f)), []);
  // postpack removed the copies: the repository keeps one proto/ and one LICENSE.
  assert.ok(!fs.existsSync(path.join(staged, 'proto')));
  assert.ok(!fs.existsSync(path.join(staged, 'LICENSE')));

  const app = path.join(work, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  npm(['install', '--no-audit', '--no-fund', '--prefer-offline',
    path.join(work, packed.filename)], app);

  const program = `
    const path = require('node:path');
    const fs = require('node:fs');
    const where = path.dirname(require.resolve('@jobset-decider/client'));
    const { DeciderClient, decideRequest } = require('@jobset-decider/client');
    const jobset = { apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet',
      metadata: { name: 'trainer', namespace: 'default', uid: 'u-1' },
      spec: { replicatedJobs: [{ name: 'workers', replicas: 2, template: { spec: {
        template: { spec: { restartPolicy: 'OnFailure',
          containers: [{ name: 'main', image: 'busybox' }] } } } } }] } };
    const client = new DeciderClient(process.argv[1], { deadlineMs: 20000 });
    client.decide(decideRequest({ jobset, now: new Date('2026-01-01T00:00:00Z') }))
      .then((plan) => {
        console.log(JSON.stringify({ where,
          proto: fs.existsSync(path.join(where, 'proto', 'decider', 'v1', 'decider.proto')),
          actions: plan.actions.map((a) => [a.type, a.name]) }));
        client.close();
      }, (err) => { console.error(err); process.exit(1); });`;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', program, address],
    { cwd: app, encoding: 'utf8' }));
  assert.equal(out.where, fs.realpathSync(path.join(app, 'node_modules', '@jobset-decider',
    'client')));
  assert.equal(out.proto, true);
  assert.deepEqual(out.actions, [
    ['ACTION_TYPE_CREATE_SERVICE', 'trainer'], ['ACTION_TYPE_CREATE_JOB', 'trainer-workers-0'],
    ['ACTION_TYPE_CREATE_JOB', 'trainer-workers-1'], ['ACTION_TYPE_UPDATE_STATUS', 'trainer']]);
});
