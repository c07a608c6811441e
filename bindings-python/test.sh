#!/usr/bin/env bash
# Builds and tests the Python binding from a fresh clone:
#   bash bindings-python/test.sh
# Needs python3 (with venv), cargo and redis-server on PATH, and access to PyPI.
# Creates (or reuses) bindings-python/.venv, installs maturin and the test tools,
# `pip install`s ./bindings-python (a PEP 517 release build), then runs
# mypy --strict, stubtest (the stub matches the extension) and pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv"

command -v redis-server >/dev/null || { echo "test.sh: redis-server is not on PATH" >&2; exit 1; }
command -v cargo >/dev/null || { echo "test.sh: cargo is not on PATH" >&2; exit 1; }

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
py="$venv/bin/python"
export PATH="$venv/bin:$PATH"  # the maturin build backend runs the maturin binary
"$py" -m pip install --quiet --disable-pip-version-check \
    "maturin>=1.9.4,<2" "pytest>=8" "pytest-timeout>=2" "mypy>=1.10" "redis>=5" "python-redis-lock>=4"

# The release build: maturin from the venv (no isolated build env to download),
# incremental so that re-runs only rebuild what changed.
export CARGO_PROFILE_RELEASE_INCREMENTAL="${CARGO_PROFILE_RELEASE_INCREMENTAL:-true}"
cd "$repo"
echo "test.sh: building and installing ./bindings-python"
"$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./bindings-python

cd "$here"
echo "test.sh: mypy --strict"
"$py" -m mypy --strict python/ferrolock tests examples bench.py
echo "test.sh: stubtest ferrolock._native"
"$py" -m mypy.stubtest ferrolock._native
echo "test.sh: pytest"
"$py" -m pytest -p no:cacheprovider tests
