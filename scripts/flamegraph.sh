#!/usr/bin/env bash
# Flame graphs of the hot paths, for finding per-call costs (issue 18's method):
#
#   bash scripts/flamegraph.sh core   # the core bench's 256-task phase (--only throughput)
#   bash scripts/flamegraph.sh node   # 8 async Node workers, uncontended, on their own names
#
# Builds with frame pointers and line tables (its own target dir, so the normal
# builds are untouched), records with `perf record -g` on a scratch redis-server,
# and writes target/flamegraphs/<what>.svg (every thread of the process; redis-server
# is not recorded) plus <what>.txt, the top frames by inclusive share. Needs perf
# (Debian's linux-perf) and inferno (`cargo install inferno`); says so when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

what="${1:-}"
case "$what" in
  core | node) ;;
  *) echo "usage: bash scripts/flamegraph.sh core|node" >&2; exit 2 ;;
esac
for tool in perf inferno-collapse-perf inferno-flamegraph; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "flamegraph.sh: $tool is not on PATH (perf: apt-get install linux-perf; inferno: cargo install inferno)" >&2
    exit 1
  }
done
ensure_redis_server

out="$PWD/target/flamegraphs"
mkdir -p "$out"
export CARGO_TARGET_DIR="$PWD/target/profiling"
export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only RUSTFLAGS="-C force-frame-pointers=yes"
start_scratch_redis
url="redis://127.0.0.1:$REDIS_PORT"

case "$what" in
  core)
    cargo build -q --release -p ferrolock --example bench
    perf record -q -F 1999 -g -o "$out/core.data" -- \
      "$CARGO_TARGET_DIR/release/examples/bench" --url "$url" --only throughput --seconds 5
    ;;
  node)
    (cd bindings-node && node scripts/build.js --release >/dev/null)
    perf record -q -F 1999 -g -o "$out/node.data" -- \
      node --perf-basic-prof bindings-node/scripts/workers.js "$url" 8 5
    ;;
esac
perf script -i "$out/$what.data" 2>/dev/null | inferno-collapse-perf >"$out/$what.folded"
inferno-flamegraph --title "ferrolock $what" <"$out/$what.folded" >"$out/$what.svg"
# Inclusive share of each frame, once per stack: the text twin of the picture.
python3 - "$out/$what.folded" >"$out/$what.txt" <<'EOF'
import collections, sys
total, share = 0, collections.Counter()
for line in open(sys.argv[1]):
    stack, n = line.rsplit(' ', 1)
    total += int(n)
    for frame in set(stack.split(';')):
        share[frame] += int(n)
for frame, n in share.most_common(60):
    print(f'{100 * n / total:5.1f}%  {frame[:160]}')
EOF
echo "flame graph: $out/$what.svg (top frames: $out/$what.txt)"
