#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what is missing,
# builds, and runs each part's suite against redis-server processes the tests start.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
# A run builds everything once: incremental caches would only fill the disk (several GB).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
ensure_redis_server
# Everything the steps below install, first: the packaging build runs beside the
# core suites and must not start an apt-get of its own meanwhile.
ensure_commands gcc:gcc g++:g++ make:make pkg-config:pkg-config valgrind:valgrind openssl:openssl node:nodejs npm:npm tmux:tmux \
    readelf:binutils dpkg-deb:dpkg pgrep:procps
python3 -c 'import venv, ensurepip' 2>/dev/null || ensure_python_venv
# Each part's heading carries the time spent so far, so the slow parts show.
section() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

section "import circles (scripts/check_imports.py: the files of each binding and of the CLI import one another one way; core's are core/tests/layers.rs's)"
python3 scripts/check_imports.py

# Builds run in the background, started early so that they fill the cores the suites
# leave idle (the suites mostly wait on servers and timers, and they pass with both
# cores busy: their waits are for states, not for amounts of time): the release
# artifacts and Valkey from the start, the documentation site from after them; later one
# lane of suites runs beside the other (below). Each one's log is printed, in order,
# where the steps that need its result begin.
mkdir -p target
declare -A bg_pid=() bg_log=()
background() {
    local name=$1
    shift
    bg_log[$name]=$PWD/target/test-$name.log
    "$@" >"${bg_log[$name]}" 2>&1 &
    bg_pid[$name]=$!
}
collect() {
    local name=$1 status=0
    wait "${bg_pid[$name]}" || status=$?
    unset "bg_pid[$name]"
    cat "${bg_log[$name]}"
    if ((status)); then
        echo "the background step '$name' failed with status $status (its log above)" >&2
        exit 1
    fi
}
# An early exit (a failed suite) stops what still runs behind: cargo, zig, npm and their children.
kill_tree() { local child; for child in $(pgrep -P "$1"); do kill_tree "$child"; done; kill "$1" 2>/dev/null || true; }
trap 'for pid in "${bg_pid[@]}"; do kill_tree "$pid"; done' EXIT

# scripts/package.sh --ci: built as a release is, in the ci profile; static checks, one
# install-and-run each.
# The builds run niced: the suites in front get a core whenever they want one.
background package nice -n 15 bash scripts/package.sh --ci
# Valkey 8.0.1 for its step below (make; cached in target/servers/).
background valkey nice -n 15 bash -c '. scripts/servers.sh && build_server valkey-8.0.1'

section "core (Rust)"
cargo test -p ferrolock -p ferrolock-harness
# The acquire spans exist only with the `spans` feature (for OpenTelemetry).
cargo test -p ferrolock --features spans --test spans

section "Valkey 8.0.1: one server and a Cluster (scripts/test-servers.sh --quick: core's tests; the server built once into target/servers/ from tests/servers/valkey-8.0.1.tar.gz)"
collect valkey
bash scripts/test-servers.sh --quick valkey-8.0.1

section "release artifacts (scripts/package.sh --ci, built in the background since the start: its log)"
collect package
# The site's build (rustdoc, mkdocs, TypeDoc) needs no binding built: it runs beside the suites below.
background docs nice -n 15 bash scripts/docs.sh
# The Python suites (the binding's, and the cross-language workers) run on that wheel,
# installed; the C tests link the tarball's static library instead of building their own.
FERROLOCK_PYTHON_WHEEL=$(ls "$PWD"/dist/python/ferrolock-*-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl)
FERROLOCK_C_TARBALL=$(ls "$PWD"/dist/c/libferrolock-*-x86_64-linux-gnu.tar.gz)
# The Node suites (the binding's, the cross-language workers) load the platform
# package's addon, its declarations checked from the type definitions that build wrote.
rm -rf target/package/node-addon && mkdir -p target/package/node-addon
tar -C target/package/node-addon -xzf "$(ls dist/node/ferrolock-ferrolock-linux-x64-gnu-*.tgz)"
FERROLOCK_NODE_ADDON=$PWD/target/package/node-addon/package/ferrolock.linux-x64-gnu.node
FERROLOCK_NODE_TYPE_DEFS=$PWD/target/package/node-type-defs
export FERROLOCK_PYTHON_WHEEL FERROLOCK_C_TARBALL FERROLOCK_NODE_ADDON FERROLOCK_NODE_TYPE_DEFS

# The suites below mostly wait on their servers: they run in two lanes at once, each
# lane's steps in order. One lane: C, Node, the failover harness (its log printed when
# it ends); the other: Python, then what reinstalls Python's venv and builds the
# Redisson driver (the cross-language suite), then Redisson's interop.
lane_c_node_failover() {
    section "C binding"
    bash bindings-c/test.sh
    section "Node binding"
    bash bindings-node/test.sh
    section "failover harness (scripts/failover.sh --short): replica ack 'all' through kill9-replica, sigstop and partition: 0 overlaps, 0 token anomalies, no lock left held; the negative control must catch overlaps, every client process must finish"
    # On the release artifacts above (the wheel, the addon).
    bash scripts/failover.sh --short
}
background lane lane_c_node_failover

section "Python binding"
bash bindings-python/test.sh

section "cross-language suite and CLI"
bash scripts/build.sh
# Every test target of tests/Cargo.toml but the Redisson one (next step), then the CLI crate's own.
# migration_flock: the flock(1) migration page's rows, flock and ferrolock run side by side.
# election: candidates in every language through kill -9s and resignations with an outside
# fence; cron: two libfaketime-skewed hosts per tick with --min-hold, and its control.
cargo test -p ferrolock-tests --bins --test xlang --test cli --test demo --test top --test script_loads --test migration_flock --test election --test cron
cargo test -p ferrolock-cli

section "Redisson interop (4.7.0 and 3.52.0)"
# Built first so that `time` shows what the suite itself costs; --nocapture prints the
# measured wake-up times.
cargo test -p ferrolock-tests --test redisson --no-run
time cargo test -p ferrolock-tests --test redisson -- --nocapture

section "the other lane: C binding, Node binding, failover harness (run beside the steps above: its log)"
collect lane

section "documentation: the site builds (every public name documented, no broken link; built in the background since the release artifacts: its log) and its examples run"
collect docs
bash scripts/docs-examples.sh
