#!/usr/bin/env bash
# The main job until the CLI lands: two holders hand one lock over on a scratch
# redis-server. Holder B waits on pub/sub and gets the lock as soon as A releases.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
cargo build -q -p ferrolock --example hold
start_scratch_redis
hold="${CARGO_TARGET_DIR:-target}/debug/examples/hold"
url="redis://127.0.0.1:$REDIS_PORT"
echo "scratch redis-server on $url"
"$hold" --url "$url" --name demo --fenced --hold-ms 1500 | sed 's/^/[A] /' &
a=$!
# B starts once A holds the lock, then waits for it.
until [ "$(timeout 1 redis-cli -p "$REDIS_PORT" exists demo)" = "1" ]; do sleep 0.01; done
start=$(date +%s%N)
"$hold" --url "$url" --name demo --fenced --hold-ms 200 | while read -r line; do
  echo "[B] $line (after $(( ($(date +%s%N) - start) / 1000000 )) ms)"
done
wait $a
echo "fencing token counter: $(timeout 1 redis-cli -p "$REDIS_PORT" get 'redisson_lock_token:{demo}')"
