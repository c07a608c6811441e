#!/usr/bin/env bash
# Runs every runnable example of the docs against a scratch redis-server: the blocks
# marked `<!-- run -->` in docs/site/ (Python, Node, C, shell), the complete C and Python
# programs of the READMEs, and the Rust guide's block as a doctest of core
# (--cfg docs_examples). Which blocks count: docs/site/about.md. Uses what the test
# command builds: bindings-python/.venv, the in-tree Node addon, target/debug/libferrolock_c.so
# and target/debug/ferrolock. Prints how many ran per language, then 'N passed, M failed'.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
ensure_commands gcc:gcc node:nodejs readelf:binutils
TARGET=${CARGO_TARGET_DIR:-$PWD/target}

PYTHON=$PWD/bindings-python/.venv/bin/python
"$PYTHON" -c 'import ferrolock' 2>/dev/null || bash bindings-python/build.sh
test -f bindings-node/ferrolock.node || (cd bindings-node && npm install --no-fund --no-audit --no-package-lock && node scripts/build.js)
test -f "$TARGET/debug/libferrolock_c.so" || cargo build -p ferrolock-c
test -x "$TARGET/debug/ferrolock" || cargo build -p ferrolock-cli

WORK=$(mktemp -d)
start_scratch_redis
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null; rm -rf "$REDIS_DIR" "$WORK"' EXIT
URL="redis://127.0.0.1:$REDIS_PORT"

# require('ferrolock') resolves to the in-tree package.
mkdir -p "$WORK/node_modules"
ln -s "$PWD/bindings-node" "$WORK/node_modules/ferrolock"
# The C library under its SONAME, as a program linked against it looks for it.
mkdir -p "$WORK/lib"
soname=$(readelf -d "$TARGET/debug/libferrolock_c.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
ln -s "$TARGET/debug/libferrolock_c.so" "$WORK/lib/${soname:-libferrolock_c.so}"
ln -sf "$TARGET/debug/libferrolock_c.so" "$WORK/lib/libferrolock.so"

set +e
PYTHON=$PYTHON NODE_PATH="$WORK/node_modules" PATH="$TARGET/debug:$PATH" \
  FERROLOCK_CFLAGS="-I$PWD/bindings-c/include" FERROLOCK_LIBS="-L$WORK/lib -lferrolock -Wl,-rpath,$WORK/lib" \
  python3 scripts/docs/run_examples.py "$URL" "$WORK"
read -r passed failed < "$WORK/counts"
set -e

# Rust: the guide's blocks are doctests of core, compiled only with --cfg docs_examples.
echo "== rust (doctests of docs/site/guides/getting-started-rust.md)"
if REDIS_URL=$URL RUSTDOCFLAGS="${RUSTDOCFLAGS:-} --cfg docs_examples" \
    cargo test -q -p ferrolock --doc docs_examples 2>&1 | tee "$WORK/rust.log" | grep -E "^(test |test result)"; then :; fi
rust_passed=$(sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1/p' "$WORK/rust.log" | tail -1)
rust_failed=$(sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\2/p' "$WORK/rust.log" | tail -1)
if [ -z "$rust_passed" ]; then cat "$WORK/rust.log"; rust_passed=0; rust_failed=1; fi
echo "examples: rust: $((rust_passed + rust_failed)) ran, $rust_passed passed, $rust_failed failed"
passed=$((passed + rust_passed)); failed=$((failed + rust_failed))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
