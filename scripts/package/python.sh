#!/usr/bin/env bash
# The Python artifacts into $DIST/python: an abi3 wheel for CPython >= 3.10 with a
# glibc 2.17 floor (maturin --zig, the dist profile unless FERROLOCK_PACKAGE_PROFILE says otherwise, stripped), and the sdist (builds
# from source with cargo where no wheel fits). Run by scripts/package.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
package_tools
mkdir -p "$DIST/python"
cd "$ROOT"
maturin build --quiet --profile "$PACKAGE_PROFILE" --strip --zig --target "$TRIPLE" --compatibility manylinux_2_17 \
    --auditwheel check -m bindings-python/Cargo.toml --out "$DIST/python"
# maturin names the tags manylinux2014 first; auditwheel's (and the usual) order is
# manylinux_2_17 first. The same tag set: pip reads either.
for whl in "$DIST"/python/*-manylinux2014_x86_64.manylinux_2_17_x86_64.whl; do
    [ -e "$whl" ] && mv "$whl" "${whl%-manylinux2014_x86_64.manylinux_2_17_x86_64.whl}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
done
maturin sdist -m bindings-python/Cargo.toml --out "$DIST/python"
ls "$DIST/python"
