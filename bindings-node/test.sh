#!/usr/bin/env bash
# Node binding: install npm deps (which builds the addon from source), run the
# node:test suite, then check that `npm install ./bindings-node` from another
# project builds and loads it (require and import).
#
# Needs node >= 20 with npm, cargo, redis-server on PATH, and the npm registry.
# Env: FERROLOCK_NODE_PROFILE=debug|release (default debug here), CARGO_TARGET_DIR.
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

# devDependencies are pinned to exact versions in package.json. No lockfile is
# committed: npm 11 leaves @napi-rs/cli's optional platform packages out of it,
# and `npm ci` then refuses it.
echo "== npm install (builds the addon, $FERROLOCK_NODE_PROFILE)"
npm install --no-fund --no-audit --no-package-lock
test -f ferrolock.node

echo "== node:test"
# --expose-gc: test/gc.test.js collects garbage to show that holds survive it.
node --expose-gc --test --test-concurrency=1 --test-reporter=spec test/*.test.js

echo "== npm install ./bindings-node from another project"
app="$(mktemp -d "${TMPDIR:-/tmp}/ferrolock-node-app.XXXXXX")"
trap 'rm -rf "$app"' EXIT
rm -f ferrolock.node # the install below must build it again
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
echo "== bindings-node: all green"
