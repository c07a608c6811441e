# Shared set-up for the project's scripts: sourced, not run.

# Installs the Debian packages whose commands are missing (needs root or sudo).
# Arguments: command:package pairs.
ensure_commands() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing from Debian's packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || { echo "could not install ${pair##*:}" >&2; exit 1; }
  done
}

ensure_redis_server() {
  ensure_commands redis-server:redis-server redis-cli:redis-tools
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

# Debian's python3 lacks venv/ensurepip until python3-venv is installed.
ensure_python_venv() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing from Debian's packages: python3-venv" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
}
