#!/usr/bin/env bash
# Runs the core benchmark (release build) against a scratch redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
cargo build -q --release -p ferrolock --example bench
start_scratch_redis
"${CARGO_TARGET_DIR:-target}/release/examples/bench" --url "redis://127.0.0.1:$REDIS_PORT" "$@"
