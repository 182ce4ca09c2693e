'use strict';
// At pack time, copy the repository's proto/ and LICENSE into the package, so a published
// tarball is self-contained; the repository keeps one copy of each (`--clean` removes the
// copies, after packing).
const fs = require('node:fs');
const path = require('node:path');

const repository = path.join(__dirname, '..', '..', '..');
const pkg = path.join(__dirname, '..');

fs.rmSync(path.join(pkg, 'proto'), { recursive: true, force: true });
fs.rmSync(path.join(pkg, 'LICENSE'), { force: true });
if (!process.argv.includes('--clean')) {
  fs.cpSync(path.join(repository, 'proto', 'decider'), path.join(pkg, 'proto', 'decider'),
    { recursive: true, filter: (p) => !p.endsWith('.sh') });
  fs.copyFileSync(path.join(repository, 'LICENSE'), path.join(pkg, 'LICENSE'));
}
