#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what is missing,
# builds, and runs each part's suite against redis-server processes the tests start.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server

echo "== core (Rust)"
cargo test -p ferrolock
