#!/usr/bin/env bash
# The failover harness (tests/failover/README.md): Python and Node clients contend on
# ferrolock's exclusive primitives behind Sentinel and Cluster while masters are killed,
# stopped, failed over and cut off; an outside observer counts overlaps and fencing-token
# anomalies. Builds what it runs, then runs it with the given options:
#
#   bash scripts/failover.sh --short          # the test command's run (under 3 minutes)
#   bash scripts/failover.sh --help           # every option
#   bash scripts/failover.sh --policy default,off --duration 600
#
# Builds in debug (FERROLOCK_PROFILE=release for release builds): the orchestrator, the
# Node addon and the Python extension in one cargo build. scripts/test.sh passes the
# release artifacts it tests instead (FERROLOCK_PYTHON_WHEEL, FERROLOCK_NODE_ADDON):
# then only the orchestrator is built. Nothing is downloaded, nothing installed into
# bindings-python/.venv or bindings-node.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
ensure_commands node:nodejs python3:python3

profile="${FERROLOCK_PROFILE:-debug}"
case "$profile" in
  debug) cargo_profile=() ;;
  release) cargo_profile=(--release) ;;
  *) echo "FERROLOCK_PROFILE must be debug or release" >&2; exit 2 ;;
esac
target="${CARGO_TARGET_DIR:-$PWD/target}/$profile"
packages=(-p ferrolock-tests)
[ -n "${FERROLOCK_NODE_ADDON:-}" ] || packages+=(-p ferrolock-node)
[ -n "${FERROLOCK_PYTHON_WHEEL:-}" ] || packages+=(-p ferrolock-python)
echo "== build ($profile): ${packages[*]}" >&2
if [ -n "${FERROLOCK_PYTHON_WHEEL:-}" ]; then
  cargo build "${cargo_profile[@]}" "${packages[@]}" >&2
else
  # The extension is built the way maturin builds it (no libpython linked).
  PYO3_BUILD_EXTENSION_MODULE=1 cargo build "${cargo_profile[@]}" "${packages[@]}" >&2
fi

# The workers' bindings, side by side under target/failover: the Python package (from
# the wheel, or the sources with this build's extension) on PYTHONPATH, the Node addon
# through FERROLOCK_NATIVE_LIBRARY_PATH (bindings-node's loader honours it).
work="${CARGO_TARGET_DIR:-$PWD/target}/failover"
rm -rf "$work/python" && mkdir -p "$work/python"
if [ -n "${FERROLOCK_PYTHON_WHEEL:-}" ]; then
  python3 -m zipfile -e "$FERROLOCK_PYTHON_WHEEL" "$work/python"
else
  cp -r bindings-python/python/ferrolock "$work/python/"
  cp "$target/libferrolock_python.so" "$work/python/ferrolock/_native.abi3.so"
fi
cp "${FERROLOCK_NODE_ADDON:-$target/libferrolock_node.so}" "$work/ferrolock.node.tmp"
mv "$work/ferrolock.node.tmp" "$work/ferrolock.node"

export FAILOVER_PYTHON=python3 PYTHONPATH="$work/python" FERROLOCK_NATIVE_LIBRARY_PATH="$work/ferrolock.node"
exec "$target/ferrolock-failover" "$@"
