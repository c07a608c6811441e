#!/usr/bin/env bash
# Builds the Python binding from a fresh clone into bindings-python/.venv:
#   bash bindings-python/build.sh
# Needs python3 (with venv), cargo, and access to PyPI. Creates (or reuses) the
# venv, installs maturin, the test tools and the pinned peer libraries
# (requirements-dev.txt), then `pip install`s
# ./bindings-python (a PEP 517 release build, incremental across runs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
py="$venv/bin/python"
export PATH="$venv/bin:$PATH"  # the maturin build backend runs the maturin binary
"$py" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-dev.txt"

# FERROLOCK_PYTHON_WHEEL: install that release wheel (scripts/package.sh's) instead of
# building, the way a user gets it: from the file, no index, nothing compiled.
if [ -n "${FERROLOCK_PYTHON_WHEEL:-}" ]; then
    echo "build.sh: installing the release wheel $(basename "$FERROLOCK_PYTHON_WHEEL") (no build)"
    "$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall \
        "$FERROLOCK_PYTHON_WHEEL"
    exit 0
fi
command -v cargo >/dev/null || { echo "build.sh: cargo is not on PATH" >&2; exit 1; }

# The release build: maturin from the venv (no isolated build env to download),
# incremental so that re-runs only rebuild what changed.
export CARGO_PROFILE_RELEASE_INCREMENTAL="${CARGO_PROFILE_RELEASE_INCREMENTAL:-true}"
cd "$repo"
echo "build.sh: building and installing ./bindings-python"
"$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./bindings-python

