#!/usr/bin/env bash
# Verifies the Node artifacts in $DIST/node/ (scripts/package/node.sh) the way a
# user gets them, with cargo and rustc off PATH (stand-ins that fail and leave a
# mark, so a build attempted anywhere is caught):
#   - the addon in the platform tarball: NEEDED only libc, libm, libgcc_s,
#     libpthread, libdl, librt and the dynamic loader; no GLIBC_ symbol version
#     newer than 2.17;
#   - a fresh npm project in a temp dir installs the two tarballs: no install
#     script anywhere, the optional dependency resolved from the local tarball;
#   - the binding's test suite (bindings-node/test), copied into the installed
#     node_modules/ferrolock/test so that its require('..') is the installed copy,
#     runs there with FERROLOCK_NODE_PACKAGE naming it (test/package.test.js first:
#     it checks that this is what the tests load).
# --smoke (scripts/package.sh --ci): of the suite, only test/package.test.js,
# test/loader.test.js and test/locks.test.js.
# Called by scripts/package/verify.sh; alone: bash scripts/package/verify-node.sh
# [--smoke] (DIST defaults to dist/, scripts/package/env.sh). Needs node, npm,
# readelf, redis-server, the npm registry (the tests' own dependencies: ioredis,
# typescript, @types/node, at bindings-node's pinned versions), and for the full
# suite tests/harness's fault-proxy: $FERROLOCK_FAULT_PROXY, else
# target/debug/fault-proxy (cargo build -p ferrolock-harness --bin fault-proxy).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
root="$ROOT"
cd "$root"
smoke=0
case "${1:-}" in
  --smoke) smoke=1 ;;
  "") ;;
  *) echo "usage: verify-node.sh [--smoke]" >&2; exit 2 ;;
esac

platform=linux-x64-gnu
addon="ferrolock.$platform.node"
version=$(node -p "require('./bindings-node/package.json').version")
main_tgz="$DIST/node/ferrolock-$version.tgz"
platform_tgz="$DIST/node/ferrolock-ferrolock-$platform-$version.tgz"
for f in "$main_tgz" "$platform_tgz"; do
  test -f "$f" || { echo "verify-node.sh: no $f (run scripts/package/node.sh)" >&2; exit 1; }
done
if ((!smoke)); then
  export FERROLOCK_FAULT_PROXY="${FERROLOCK_FAULT_PROXY:-${CARGO_TARGET_DIR:-$root/target}/debug/fault-proxy}"
  [ -x "$FERROLOCK_FAULT_PROXY" ] || { echo "verify-node.sh: no fault-proxy at $FERROLOCK_FAULT_PROXY (test/faults.test.js needs it): cargo build -p ferrolock-harness --bin fault-proxy" >&2; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ferrolock-node-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT

# PATH without the directories that hold cargo or rustc, then stand-ins for both.
tripwire="$work/cargo-was-run"
mkdir "$work/bin"
for tool in cargo rustc; do
  printf '#!/bin/sh\necho "%s $*" >> %s\necho "verify-node.sh: %s is off PATH" >&2\nexit 127\n' "$tool" "$tripwire" "$tool" >"$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done
path="$work/bin"
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && { [ -x "$d/cargo" ] || [ -x "$d/rustc" ]; } && continue
  path="$path:$d"
done
export PATH="$path"
for tool in node npm readelf redis-server; do
  command -v "$tool" >/dev/null 2>&1 || { echo "verify-node.sh: $tool is not on PATH (cargo and rustc dirs removed)" >&2; exit 1; }
done
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

echo "== the addon: NEEDED libraries and the glibc floor"
mkdir "$work/unpacked"
tar -xzf "$platform_tgz" -C "$work/unpacked"
listed=$(tar -tzf "$platform_tgz" | sort | tr '\n' ' ')
[ "$listed" = "package/LICENSE package/README.md package/$addon package/package.json " ] ||
  { echo "verify-node.sh: unexpected files in the platform package: $listed" >&2; exit 1; }
so="$work/unpacked/package/$addon"
needed=$(readelf -d -W "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "NEEDED: $needed"
for lib in $needed; do
  case "$lib" in
    libc.so.6 | libm.so.6 | libgcc_s.so.1 | libpthread.so.0 | libdl.so.2 | librt.so.1 | ld-linux-x86-64.so.2) ;;
    *) echo "verify-node.sh: the addon needs $lib" >&2; exit 1 ;;
  esac
done
glibc_max=$(readelf -V -W "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
echo "highest GLIBC_ version needed: $glibc_max"
if [ "$(printf '%s\n2.17\n' "$glibc_max" | sort -V | tail -n 1)" != "2.17" ]; then
  echo "verify-node.sh: the addon needs GLIBC_$glibc_max, newer than 2.17" >&2
  exit 1
fi
if readelf -S -W "$so" | grep -q '\.debug_'; then echo "verify-node.sh: the addon is not stripped" >&2; exit 1; fi
if tar -tzf "$main_tgz" | grep -q '\.node$'; then echo "verify-node.sh: the main package holds an addon" >&2; exit 1; fi

echo "== npm install of the main tarball alone: the platform package is missing, the error says so"
bare="$work/bare"
mkdir "$bare"
(
  cd "$bare"
  npm init -y >/dev/null
  # --offline: npm cannot fetch its optional dependency, skips it (no error), as it
  # does when the registry does not have it.
  npm install --offline --no-fund --no-audit --loglevel=error "$main_tgz"
  node -e "
    try { require('ferrolock'); } catch (e) {
      for (const want of ['platform $(node -p process.platform), arch $(node -p process.arch), libc glibc', 'linux-x64-gnu', 'npm/cli/issues/4828', 'npm run build']) {
        if (!e.message.includes(want)) throw new Error('the error does not say ' + want + ':\n' + e.message);
      }
      if (e.cause?.code !== 'MODULE_NOT_FOUND') throw new Error('cause: ' + e.cause);
      console.log('require(\"ferrolock\") without its platform package: ' + e.message.split('\n')[0]);
      process.exit(0);
    }
    throw new Error('ferrolock loaded without its platform package');
  "
)

echo "== npm install of the two tarballs in a fresh project"
app="$work/app"
mkdir "$app"
cd "$app"
npm init -y >/dev/null
# The platform package is not on the registry (nothing is published): given as a
# tarball in the same install, it is the node that satisfies the main package's
# optional dependency on it at $version: --offline shows npm fetches nothing.
npm install --offline --no-fund --no-audit --foreground-scripts "$platform_tgz" "$main_tgz"
test ! -e "$tripwire" || { echo "verify-node.sh: the install ran: $(cat "$tripwire")" >&2; exit 1; }
node -e "
  const fs = require('node:fs');
  const path = require('node:path');
  const lock = require('./package-lock.json').packages;
  const plat = lock['node_modules/@ferrolock/ferrolock-$platform'];
  if (!plat || !String(plat.resolved).startsWith('file:')) throw new Error('platform package not from the local tarball: ' + JSON.stringify(plat));
  if (lock['node_modules/ferrolock'].optionalDependencies['@ferrolock/ferrolock-$platform'] !== '$version') throw new Error('optionalDependencies pin');
  // No package in the tree has an install-time script.
  for (const [where, p] of Object.entries(lock)) {
    if (where && p.hasInstallScript) throw new Error(where + ' has an install script');
  }
  if (fs.existsSync('node_modules/ferrolock/ferrolock.node')) throw new Error('an addon was built into node_modules/ferrolock');
  const f = require('ferrolock');
  if (f.version !== '$version') throw new Error('version ' + f.version);
  console.log('require(\"ferrolock\") ok, version ' + f.version + ', addon from ' +
    path.relative(process.cwd(), Object.keys(require.cache).find((k) => k.endsWith('.node'))));
"

echo "== the binding's test suite against node_modules/ferrolock"
# The tests' own dependencies, at the versions bindings-node pins.
deps=$(node -p "const d = require('$root/bindings-node/package.json').devDependencies; ['ioredis', 'typescript', '@types/node'].map((n) => n + '@' + d[n]).join(' ')")
# shellcheck disable=SC2086
npm install --no-fund --no-audit --no-save $deps
pkg="$app/node_modules/ferrolock"
cp -r "$root/bindings-node/test" "$pkg/test"
export FERROLOCK_NODE_PACKAGE="$pkg" FERROLOCK_WORKSPACE="$root"
started=$(date +%s)
node --test --test-reporter=spec "$pkg/test/package.test.js"
if ((smoke)); then
  node --test --test-concurrency=1 --test-reporter=dot "$pkg/test/loader.test.js" "$pkg/test/locks.test.js"
else
  # --expose-gc: test/gc.test.js collects garbage to show that holds survive it.
  node --expose-gc --test --test-concurrency=1 --test-reporter=dot "$pkg"/test/*.test.js
fi
test ! -e "$tripwire" || { echo "verify-node.sh: the tests ran: $(cat "$tripwire")" >&2; exit 1; }
echo "node test suite on the installed package: $(( $(date +%s) - started )) s"
echo "== Node artifacts verified"
