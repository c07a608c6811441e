#!/usr/bin/env bash
# Leader election, measured (issue 42): per language three candidates (Rust, Python,
# Node, C; then a mixed run of all four), the leader killed with kill -9 KILLS times,
# then leaders that resign after 100 ms, RESIGNS times; an outside fence (a redis-server
# of its own to which every leader writes its term, through one constant Lua script
# that refuses a lower term: tests/election/fence.lua) and a core observer watch.
# Prints per run the time from a kill to the next leader and from a resignation to the
# next leader (p50, p99), and whether terms only grew, no two leaders were inside at
# once, no stale write was accepted and the observer told every leader in order.
#
#   bash scripts/election-bench.sh [KILLS [RESIGNS [LEASE_MS]]]   # default 20 20 1000
#
# A new leader after a kill is promised within the lease plus one renewal interval
# (lease/3). Builds what it runs (scripts/build.sh: the workers, debug builds).
# `cargo test -p ferrolock-tests --test election` is its short version (3 kills, 5
# resignations, safety checks only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
cargo build -q -p ferrolock-tests --bin election-bench
"${CARGO_TARGET_DIR:-target}/debug/election-bench" "$@"
