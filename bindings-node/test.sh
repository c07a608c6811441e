#!/usr/bin/env bash
# Node binding: install npm deps, build the addon from source (npm install builds
# nothing: releases ship it prebuilt) and its TypeScript declarations, check that
# the committed native.d.ts is what the build generates and that index.d.ts agrees
# with it, run the node:test suite, then check that `npm install ./bindings-node`
# from another project loads that build (require and import) and that the
# package's `files` hold every file the entry point loads.
#
# Needs node >= 20 with npm, cargo, redis-server on PATH, and the npm registry.
# Env: FERROLOCK_NODE_PROFILE=debug|release (default debug here), CARGO_TARGET_DIR;
# FERROLOCK_NODE_ADDON and FERROLOCK_NODE_TYPE_DEFS (scripts/test.sh): test that addon,
# from scripts/package.sh's build, instead of building one. The migration pages' peers
# (test/migration) come from their own lockfile: npm ci there.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

for tool in node npm cargo redis-server; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "bindings-node/test.sh: $tool is not on PATH" >&2
    exit 1
  fi
done

export FERROLOCK_NODE_PROFILE="${FERROLOCK_NODE_PROFILE:-debug}"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

scratch="$(mktemp -d "${TMPDIR:-/tmp}/ferrolock-node-test.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

# devDependencies are pinned to exact versions in package.json. No lockfile is
# committed: npm 11 leaves @napi-rs/cli's optional platform packages out of it,
# and `npm ci` then refuses it.

# The optional dependency on the prebuilt platform package is not on the registry
# before a release: npm skips it (a clone uses its own build, ferrolock.node).
echo "== npm install (dependencies only)"
npm install --no-fund --no-audit --no-package-lock
if [ -n "${FERROLOCK_NODE_ADDON:-}" ]; then
  # The test command (scripts/test.sh): the addon scripts/package.sh built (cargo
  # zigbuild, glibc 2.17), with napi-derive's type definitions written on the way into
  # FERROLOCK_NODE_TYPE_DEFS; @napi-rs/cli renders them as `napi build --dts` does. No
  # second build of the addon.
  echo "== the packaged addon $FERROLOCK_NODE_ADDON and its declarations (no build)"
  cp "$FERROLOCK_NODE_ADDON" ferrolock.node.tmp
  mv ferrolock.node.tmp ferrolock.node
  node -e "
    const [dir, out] = process.argv.slice(1);
    require('@napi-rs/cli').generateTypeDef({ typeDefDir: dir, cwd: process.cwd(), declareBindingTarget: false })
      .then(({ dts }) => require('node:fs').writeFileSync(out, dts));
  " "${FERROLOCK_NODE_TYPE_DEFS:?with FERROLOCK_NODE_ADDON}" "$scratch/native.d.ts"
else
  echo "== build the addon ($FERROLOCK_NODE_PROFILE) and its declarations"
  node scripts/build.js --dts "$scratch/native.d.ts"
fi
test -f ferrolock.node

echo "== native.d.ts is what the build generates"
if ! diff -u native.d.ts "$scratch/native.d.ts"; then
  echo "bindings-node/native.d.ts is stale: run \`npm run dts\` in bindings-node and commit it" >&2
  exit 1
fi

echo "== index.d.ts agrees with native.d.ts (tsc)"
node node_modules/typescript/bin/tsc -p test/types

echo "== fault-proxy (tests/harness), for test/faults.test.js"
(cd .. && cargo build -p ferrolock-harness --bin fault-proxy)
export FERROLOCK_FAULT_PROXY="${CARGO_TARGET_DIR:-$here/../target}/debug/fault-proxy"
test -x "$FERROLOCK_FAULT_PROXY"

echo "== node:test"
# --expose-gc: test/gc.test.js collects garbage to show that holds survive it.
node --expose-gc --test --test-concurrency=1 --test-reporter=spec test/*.test.js

echo "== migration pages: node-redlock and redis-semaphore against ferrolock (test/migration, peers pinned by its lockfile)"
(cd test/migration && npm ci --no-fund --no-audit --silent)
node --test --test-concurrency=1 --test-reporter=spec test/migration/*.test.js

echo "== npm install ./bindings-node from another project"
app="$scratch/app"
mkdir "$app"
(
  cd "$app"
  npm init -y >/dev/null
  npm install --no-fund --no-audit "$here"
  test -f node_modules/ferrolock/ferrolock.node
  node -e "
    const f = require('ferrolock');
    if (typeof f.Client.connect !== 'function' || new f.NotOwnerError('x').code !== 'ERR_NOT_OWNER') process.exit(1);
    console.log('require(\"ferrolock\") ok');
  "
  node --input-type=module -e "
    import { Client, FerrolockError } from 'ferrolock';
    import ferrolock from 'ferrolock';
    if (typeof Client.connect !== 'function' || ferrolock.FerrolockError !== FerrolockError) process.exit(1);
    console.log('import { Client } from \"ferrolock\" ok');
  "
)
echo "== the package's files hold what the entry points load"
node -e "
  const path = require('node:path');
  const { execFileSync } = require('node:child_process');
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' }));
  const packed = new Set(pack.files.map((f) => f.path));
  require('./index.js');
  const loaded = Object.keys(require.cache)
    .map((f) => path.relative(process.cwd(), f))
    .filter((f) => !f.startsWith('..') && !f.startsWith('node_modules') && f !== 'ferrolock.node');
  const missing = ['index.mjs', 'index.d.ts', 'index.d.mts', ...loaded].filter((f) => !packed.has(f));
  if (missing.length) { console.error('not in package.json files:', missing.join(', ')); process.exit(1); }
  console.log(loaded.length + ' loaded files, all packed');
"
echo "== bindings-node: all green"
