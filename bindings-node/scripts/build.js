#!/usr/bin/env node
// Builds the native addon from source into ./ferrolock.node, which lib/native.js
// prefers to the prebuilt platform package (@ferrolock/ferrolock-<platform>).
//
// Opt-in: `npm run build` (or `node scripts/build.js`) in a clone's bindings-node;
// `npm install` builds nothing (releases ship the addon prebuilt, see
// scripts/package/node.sh). Needs the workspace around it (core is a path
// dependency), so it is not in the published package. Uses @napi-rs/cli when it is
// installed (our own `npm install`), else runs cargo itself, the same build.
//
// With @napi-rs/cli, the build also generates the TypeScript declarations of the
// addon (napi-derive's type-def feature): into --dts FILE (or $FERROLOCK_NODE_DTS)
// when given, else into a temporary file that is thrown away. `npm run dts`
// regenerates the committed native.d.ts; test.sh checks that it is up to date.
//
// Options: --release / --debug (default: release, or $FERROLOCK_NODE_PROFILE),
// --dts FILE. Honors $CARGO_TARGET_DIR. $FERROLOCK_NODE_SKIP_BUILD=1 skips the build.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const out = path.join(root, 'ferrolock.node');

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: opts.capture ? ['ignore', 'pipe', 'inherit'] : 'inherit', encoding: 'utf8' });
  if (r.error) {
    throw new Error(`ferrolock: cannot run ${cmd}: ${r.error.message}` +
      (cmd === 'cargo' ? ' (a Rust toolchain is needed to build ferrolock from source: https://rustup.rs)' : ''));
  }
  if (r.status !== 0) {
    throw new Error(`ferrolock: ${cmd} ${args.join(' ')} failed with status ${r.status}`);
  }
  return r.stdout;
}

function main() {
  if (process.env.FERROLOCK_NODE_SKIP_BUILD === '1') {
    console.log('ferrolock: FERROLOCK_NODE_SKIP_BUILD=1, not building the addon');
    return;
  }
  const argv = process.argv.slice(2);
  let profile = process.env.FERROLOCK_NODE_PROFILE || 'release';
  if (argv.includes('--debug')) profile = 'debug';
  if (argv.includes('--release')) profile = 'release';
  if (profile !== 'release' && profile !== 'debug') {
    throw new Error(`ferrolock: FERROLOCK_NODE_PROFILE must be release or debug, not ${profile}`);
  }
  const dtsAt = argv.indexOf('--dts');
  const dts = dtsAt >= 0 ? argv[dtsAt + 1] : process.env.FERROLOCK_NODE_DTS || undefined;
  if (dtsAt >= 0 && !dts) throw new Error('ferrolock: --dts needs a file name');

  const napiBin = path.join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js');
  if (fs.existsSync(napiBin)) {
    // napi build always writes declarations (index.d.ts unless told otherwise, which
    // would overwrite ours); --dts is relative to --output-dir.
    const scratch = dts ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'ferrolock-dts-'));
    const dtsFile = dts ? path.resolve(dts) : path.join(scratch, 'native.d.ts');
    const args = [napiBin, 'build', '--output-dir', '.', '--package', 'ferrolock-node', '--dts', path.relative(root, dtsFile)];
    if (profile === 'release') args.push('--release');
    try {
      run(process.execPath, args);
    } finally {
      if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    }
    if (dts) console.log(`ferrolock: declarations of the addon in ${dtsFile}`);
  } else if (dts) {
    throw new Error('ferrolock: generating declarations (--dts) needs @napi-rs/cli: run `npm install` in bindings-node');
  } else {
    const args = ['build', '--package', 'ferrolock-node', '--manifest-path', path.join(root, 'Cargo.toml')];
    if (profile === 'release') args.push('--release');
    run('cargo', args);
    const meta = JSON.parse(run('cargo', ['metadata', '--format-version', '1', '--no-deps',
      '--manifest-path', path.join(root, 'Cargo.toml')], { capture: true }));
    const lib = { darwin: 'libferrolock_node.dylib', win32: 'ferrolock_node.dll' }[process.platform] || 'libferrolock_node.so';
    const built = path.join(meta.target_directory, profile, lib);
    // Copy to a temp name and rename: a running process may have the old file mapped.
    const tmp = `${out}.tmp-${process.pid}`;
    fs.copyFileSync(built, tmp);
    fs.renameSync(tmp, out);
  }
  if (!fs.existsSync(out)) throw new Error(`ferrolock: the build did not produce ${out}`);
  console.log(`ferrolock: built ${path.relative(process.cwd(), out) || out} (${profile})`);
}

try {
  main();
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
