'use strict';
// At pack time, copy the repository's proto/ into the package, so a published tarball is
// self-contained; the repository keeps one copy of the contract (`--clean` removes the copy).
const fs = require('node:fs');
const path = require('node:path');

const source = path.join(__dirname, '..', '..', '..', 'proto', 'decider');
const target = path.join(__dirname, '..', 'proto', 'decider');

fs.rmSync(path.join(__dirname, '..', 'proto'), { recursive: true, force: true });
if (!process.argv.includes('--clean')) {
  fs.cpSync(source, target, { recursive: true, filter: (p) => !p.endsWith('.sh') });
}
