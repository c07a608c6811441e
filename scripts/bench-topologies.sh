#!/usr/bin/env bash
# Runs the Sentinel and Cluster benchmark (release build); it starts both
# topologies itself on loopback (redis-server from the system).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
cargo build -q --release -p ferrolock --example topology_bench
"${CARGO_TARGET_DIR:-target}/release/examples/topology_bench" "$@"
