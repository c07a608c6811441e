#!/usr/bin/env bash
# Builds and tests the Python binding from a fresh clone:
#   bash bindings-python/test.sh
# Needs python3 (with venv), cargo and redis-server on PATH, and access to PyPI.
# build.sh makes bindings-python/.venv and installs the binding into it; then
# this runs mypy --strict, stubtest (the stub matches the extension) and pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"

command -v redis-server >/dev/null || { echo "test.sh: redis-server is not on PATH" >&2; exit 1; }
bash "$here/build.sh"
py="$venv/bin/python"
echo "test.sh: fault-proxy (tests/harness), for tests/test_release_outage.py"
(cd "$here/.." && cargo build -p ferrolock-harness --bin fault-proxy)
export FERROLOCK_FAULT_PROXY="${CARGO_TARGET_DIR:-$here/../target}/debug/fault-proxy"

cd "$here"
echo "test.sh: mypy --strict"
"$py" -m mypy --strict python/ferrolock tests examples bench.py
echo "test.sh: stubtest ferrolock._native"
"$py" -m mypy.stubtest ferrolock._native
# The suite runs against the installed package, as a user's code would: from a
# directory outside the tree, with cargo and rustc off PATH.
. "$here/../scripts/package/env.sh"
echo "test.sh: pytest (from a temp dir, no cargo on PATH)"
cwd=$(mktemp -d)
trap 'rm -rf "$cwd"' EXIT
(cd "$cwd" && PATH=$(path_without_rust) "$py" -m pytest -p no:cacheprovider "$here/tests")
