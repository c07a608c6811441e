#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what is missing,
# builds, and runs each part's suite against redis-server processes the tests start.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
ensure_commands gcc:gcc g++:g++ make:make pkg-config:pkg-config valgrind:valgrind openssl:openssl node:nodejs npm:npm

echo "== core (Rust)"
cargo test -p ferrolock -p ferrolock-harness

echo "== C binding"
bash bindings-c/test.sh

echo "== Python binding"
bash bindings-python/test.sh

echo "== Node binding"
bash bindings-node/test.sh

echo "== cross-language suite and CLI"
bash scripts/build.sh
cargo test -p ferrolock-tests -p ferrolock-cli
