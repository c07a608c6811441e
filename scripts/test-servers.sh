#!/usr/bin/env bash
# Runs the server-facing suites against every server ferrolock supports: Redis
# 6.2.16, 7.2.6 and 7.4.1 and Valkey 7.2.7 and 8.0.1 (built from source tarballs:
# scripts/servers.sh; cached in target/servers/), and Debian's redis-server 7.0.15
# (the one scripts/test.sh tests), each on one server, behind Sentinel and on a
# Cluster. Prints one row per server and topology (passed / failed / not supported,
# with why) with its time, and exits non-zero when a row failed.
#
#   bash scripts/test-servers.sh                  # every server
#   bash scripts/test-servers.sh redis-6.2.16     # some of them (debian-7.0.15 names Debian's)
#   bash scripts/test-servers.sh --quick valkey-8.0.1
#                                                 # scripts/test.sh's: one server and a
#                                                 # Cluster, core's tests only (CORE_QUICK)
#
# Every suite finds redis-server on PATH (the Rust harness, Python's shutil.which,
# Node's spawn, the C harness's execvp): each row puts the server's bin/ first on
# PATH, and nothing else changes between rows. What runs per row (the subset, and
# why it is one, in docs/site/guides/operating.md, "Supported servers"):
#   single    core's integration tests whose outcome the server decides (scripts,
#             errors, pub/sub, ACL, TLS, INFO: CORE_SINGLE below), the Python, Node
#             and C tests of the family, status and errors, the CLI tests, and the
#             quick cross-language test (one wake-up across every language pair);
#   sentinel  core's Sentinel tests (failover, replica acknowledgement, passwords, ACL users);
#   cluster   core's Cluster tests (sharded or classic pub/sub, resharding, failover, ACL)
#             and Redisson in cluster mode beside ferrolock (the mixed fleet).
# Logs of every suite: target/servers/logs/<server>-<topology>/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/servers.sh
ensure_redis_server
ensure_commands gcc:gcc make:make node:nodejs npm:npm

BUILT=(redis-6.2.16 redis-7.2.6 redis-7.4.1 valkey-7.2.7 valkey-8.0.1)
DEBIAN=debian-7.0.15
quick=false
if [ "${1:-}" = --quick ]; then quick=true; shift; fi
if (($#)); then SERVERS=("$@"); else SERVERS=("${BUILT[@]}" "$DEBIAN"); fi

CORE_SINGLE=(protocol servers acl waiting fair rwlock semaphore permits latch inspect holder_notes script_loading host_link
  host_driving conveniences close release_outage watchdog semaphore_handoff redlock_concurrent)
CORE_SENTINEL=(sentinel acl_sentinel replica_ack)
CORE_CLUSTER=(cluster cluster_family acl_cluster)
# Python: every file but test_close_many.py (20,000 holds with a 2 s lease: a test of
# the close's speed on a quiet machine, not of the server) and test_sentinel.py (the
# Sentinel row's).
PY_SKIP=(test_close_many.py test_sentinel.py)
NODE_TESTS=(locks.test.js kinds.test.js status.test.js inspection.test.js errors.test.js semaphore.test.js
  permits.test.js latch.test.js notes.test.js)
C_TESTS=(counter reentrancy wait lease lost fenced kind statuses thread_exit thread_connection acl options handles closed
  extend metrics inspect notes rwlock fair semaphore permits latch)
# --quick: what the test command adds per extra server, within a few minutes.
CORE_QUICK=(protocol servers acl waiting fair rwlock semaphore permits latch inspect)

LOGS=$PWD/target/servers/logs
ROOT=$PWD
target=${CARGO_TARGET_DIR:-$PWD/target}
elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# 1. The servers, built up front and alone (make uses every core): timed.
echo "== servers (target/servers/; built once, then reused)"
start=$SECONDS
for id in "${SERVERS[@]}"; do
  [ "$id" = "$DEBIAN" ] && continue
  build_server "$id"
done
# Debian's: its binaries under the same layout, so every row finds its server the same way.
debian_bin=$(server_bin "$DEBIAN")
mkdir -p "$debian_bin"
ln -sf "$(command -v redis-server)" "$debian_bin/redis-server"
ln -sf "$(command -v redis-cli)" "$debian_bin/redis-cli"
echo "servers ready in $(elapsed $((SECONDS - start)))"

# 2. Everything the suites run, built once (debug; incremental when built before).
mkdir -p "$LOGS"
start=$SECONDS
if $quick; then
  echo "== build: core's test binaries"
  { cargo test -p ferrolock --no-run $(printf -- '--test %s ' "${CORE_QUICK[@]}" "${CORE_CLUSTER[@]}") &&
    cargo build -p ferrolock --example hold; } >"$LOGS/build.log" 2>&1 || { tail -n 40 "$LOGS/build.log"; exit 1; }
else
echo "== build: the suites' programs (scripts/build.sh, core's and the CLI's test binaries, the C tests)"
if ! {
  bash scripts/build.sh
  cargo test -p ferrolock --no-run $(printf -- '--test %s ' "${CORE_SINGLE[@]}" "${CORE_SENTINEL[@]}" "${CORE_CLUSTER[@]}")
  cargo test -p ferrolock-tests --no-run --test cli --test xlang --test redisson
  cargo build -p ferrolock --example hold                        # protocol.rs and watchdog.rs run it
  cargo build -p ferrolock-harness --bin fault-proxy             # Python's test_release_outage.py steers it
  c_prefix=$target/servers/c-prefix
  make -C bindings-c install PREFIX="$c_prefix" PROFILE=debug
  mkdir -p "$target/servers/c-tests"
  for t in "${C_TESTS[@]}" sentinel; do
    # Compiled again only when its source, the harness or the library changed.
    [ "$target/servers/c-tests/$t" -nt "bindings-c/tests/$t.c" ] && [ "$target/servers/c-tests/$t" -nt "$c_prefix/lib/libferrolock.so" ] &&
      [ "$target/servers/c-tests/$t" -nt bindings-c/tests/harness.h ] && [ "$target/servers/c-tests/$t" -nt bindings-c/tests/family.h ] &&
      continue
    gcc -std=c11 -g -O1 -Wall -Wextra -Werror -pedantic -fsanitize=address,undefined -fno-sanitize-recover=all \
      -fno-omit-frame-pointer -I"$c_prefix/include" "bindings-c/tests/$t.c" -L"$c_prefix/lib" -lferrolock \
      -Wl,-rpath,"$c_prefix/lib" -lpthread -o "$target/servers/c-tests/$t"
  done
} >"$LOGS/build.log" 2>&1; then
  tail -n 40 "$LOGS/build.log"
  echo "building the suites failed (all of it: $LOGS/build.log)"
  exit 1
fi
fi
echo "built in $(elapsed $((SECONDS - start)))"
export FERROLOCK_FAULT_PROXY=$target/debug/fault-proxy

# One suite of a row: its output in the row's log directory, its time in the row's
# `times`; failures are listed.
suite() { # NAME CMD...
  local name=$1 start=$SECONDS rc=0
  shift
  ("$@") >"$row_logs/$name.log" 2>&1 || rc=$?
  echo "$name $((SECONDS - start))s$( ((rc)) && echo " FAILED")" >>"$row_logs/times"
  ((rc == 0)) || row_failed+=("$name")
}

core_tests() { cargo test -q --no-fail-fast -p ferrolock $(printf -- '--test %s ' "$@"); }

# Core's single-server tests for server $id: script_loading counts SCRIPT LOAD in INFO
# commandstats, which counts it apart from SCRIPT EXISTS only from Redis 7.0.
core_single() {
  local t
  for t in "${CORE_SINGLE[@]}"; do
    [[ "$id" == redis-6.* && "$t" == script_loading ]] && continue
    echo "$t"
  done
}

# pytest over FILES (under bindings-python/tests), from a directory outside the tree.
python_tests() { (cd "$(mktemp -d)" && "$ROOT/bindings-python/.venv/bin/python" -m pytest -q -p no:cacheprovider "${@/#/$ROOT/bindings-python/tests/}"); }
node_tests() { (cd "$ROOT/bindings-node" && node --expose-gc --test --test-concurrency=1 "${@/#/test/}"); }
c_test() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TMPDIR=$row_logs \
    timeout 120 "$target/servers/c-tests/$1"
}

single_row() {
  suite core core_tests $(core_single)
  local py=() t
  for t in bindings-python/tests/test_*.py; do
    [[ " ${PY_SKIP[*]} " == *" ${t##*/} "* ]] || py+=("${t##*/}")
  done
  suite python python_tests "${py[@]}"
  suite node node_tests "${NODE_TESTS[@]}"
  for t in "${C_TESTS[@]}"; do
    suite "c-$t" c_test "$t"
  done
  suite cli cargo test -q -p ferrolock-tests --test cli
  suite xlang cargo test -q -p ferrolock-tests --test xlang -- --exact wake_up_across_languages
}
sentinel_row() {
  suite core core_tests "${CORE_SENTINEL[@]}"
  suite python python_tests test_sentinel.py
  suite node node_tests sentinel.test.js
  suite c-sentinel c_test sentinel
}
cluster_row() {
  suite core core_tests "${CORE_CLUSTER[@]}"
  $quick || suite redisson cargo test -q -p ferrolock-tests --test redisson -- mixed_fleet_on_a_cluster
}
quick_single_row() { suite core core_tests "${CORE_QUICK[@]}"; }

# What a server cannot run, and why (empty: it runs every topology).
unsupported() { # SERVER TOPOLOGY
  return 1
}

rows=()
failed=0
total=$SECONDS
for id in "${SERVERS[@]}"; do
  bin=$(server_bin "$id")
  version=$("$bin/redis-server" --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
  topologies=(single sentinel cluster)
  $quick && topologies=(single cluster)
  for topology in "${topologies[@]}"; do
    if why=$(unsupported "$id" "$topology"); then
      rows+=("$(printf '%-14s %-9s %-14s %s' "$id" "$topology" "not supported" "$why")")
      continue
    fi
    row_logs=$LOGS/$id-$topology
    rm -rf "$row_logs" && mkdir -p "$row_logs"
    row_failed=()
    echo "== $id ($version) $topology"
    start=$SECONDS
    run=${topology}_row
    $quick && [ "$topology" = single ] && run=quick_single_row
    (unset REDIS_SERVER; export PATH="$bin:$PATH"; "$run"; printf '%s\n' "${row_failed[@]}" >"$row_logs/failed") || true
    took=$(elapsed $((SECONDS - start)))
    mapfile -t row_failed < <(grep -v '^$' "$row_logs/failed" || true)
    if ((${#row_failed[@]})); then
      failed=$((failed + 1))
      rows+=("$(printf '%-14s %-9s %-14s %7s  %s' "$id" "$topology" "FAILED" "$took" "${row_failed[*]} (logs: $row_logs)")")
      for name in "${row_failed[@]}"; do
        echo "-- $id $topology: $name failed; its last lines:"
        tail -n 30 "$row_logs/$name.log" | sed 's/^/   /'
      done
    else
      rows+=("$(printf '%-14s %-9s %-14s %7s' "$id" "$topology" "passed" "$took")")
    fi
    echo "${rows[-1]}"
    echo "   suites: $(tr '\n' ' ' <"$row_logs/times")"
  done
done

echo
echo "== servers x topologies ($(elapsed $((SECONDS - total))) for the rows)"
printf '%s\n' "${rows[@]}"
((failed == 0))
