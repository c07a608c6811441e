#!/usr/bin/env bash
# The main job: builds what the demo needs on a fresh machine (scripts/build.sh),
# then runs `ferrolock demo`: workers in Rust, Python, Node and C contend on one
# lock on a scratch redis-server. Arguments go to `ferrolock demo`
# (e.g. --seconds 30, --url redis://host:6379).
set -euo pipefail
cd "$(dirname "$0")/.."
# Release builds: the demo shows hand-off times.
export FERROLOCK_PROFILE=release
bash scripts/build.sh >&2
exec "${CARGO_TARGET_DIR:-$PWD/target}/release/ferrolock" demo "$@"
