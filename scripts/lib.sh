# Shared set-up for the project's scripts: sourced, not run.

# Installs redis-server from Debian's packages when it is missing (needs root or sudo).
ensure_redis_server() {
  command -v redis-server >/dev/null 2>&1 && return 0
  echo "redis-server not found; installing it from Debian's packages" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
  command -v redis-server >/dev/null 2>&1 || { echo "could not install redis-server" >&2; exit 1; }
}

# Starts a throw-away redis-server on a free loopback port; sets REDIS_PORT and
# REDIS_PID and stops it when the calling shell exits.
start_scratch_redis() {
  REDIS_DIR=$(mktemp -d)
  REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$REDIS_DIR" >"$REDIS_DIR/log" 2>&1 &
  REDIS_PID=$!
  trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null; rm -rf "$REDIS_DIR"' EXIT
  for _ in $(seq 1 500); do
    timeout 1 redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0
    sleep 0.01
  done
  echo "redis-server did not start" >&2; cat "$REDIS_DIR/log" >&2; exit 1
}
