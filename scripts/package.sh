#!/usr/bin/env bash
# Builds every release artifact into dist/ from a clean clone on x86_64 Linux, then
# verifies each one the way a user installs it (scripts/package/verify.sh, with cargo
# and rustc off PATH) and prints a table of the artifacts and their sizes.
#
#   bash scripts/package.sh              # build + verify everything (about 25 min on 2 cores)
#   bash scripts/package.sh --verify     # verify what dist/ already holds
#   bash scripts/package.sh --no-verify  # build only
#   bash scripts/package.sh --ci         # what the test command runs: build everything (in
#                                        # the ci profile, Cargo.toml) but the sdist's
#                                        # source build; static checks and one
#                                        # install-and-run per artifact (the Python suite
#                                        # then runs on the wheel: bindings-python/test.sh)
#
# dist/python  ferrolock-<v>-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl, ferrolock-<v>.tar.gz
# dist/node    ferrolock-<v>.tgz, ferrolock-ferrolock-linux-x64-gnu-<v>.tgz
# dist/c       libferrolock-<v>-x86_64-linux-gnu.tar.gz, libferrolock_<v>_amd64.deb
# dist/cli     ferrolock-cli-<v>-x86_64-linux-gnu.tar.gz
#
# Only x86_64-unknown-linux-gnu (glibc >= 2.17) is built: it is the one Rust target
# this machine has. Other platforms build from source (docs/releasing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/package/env.sh
export ROOT DIST

build=1 verify=1 ci=0
case "${1:-}" in
    --verify) build=0 ;;
    --no-verify) verify=0 ;;
    --ci) ci=1 ;;
    "") ;;
    *) echo "usage: bash scripts/package.sh [--verify | --no-verify | --ci]" >&2; exit 2 ;;
esac

if ((ci)); then
    export FERROLOCK_PACKAGE_PROFILE=${FERROLOCK_PACKAGE_PROFILE:-ci}
    . scripts/package/env.sh
fi
ensure_redis_server
ensure_commands gcc:gcc g++:g++ make:make pkg-config:pkg-config readelf:binutils node:nodejs npm:npm dpkg-deb:dpkg
python3 -c 'import venv, ensurepip' 2>/dev/null || ensure_python_venv
started=$(date +%s)
step() { printf '\n== [%4ss] %s\n' $(( $(date +%s) - started )) "$*"; }

if ((build)); then
    command -v cargo >/dev/null || { echo "package.sh: building needs cargo (rustup.rs)" >&2; exit 1; }
    step "release tools (maturin, zig, cargo-zigbuild, auditwheel, twine) in $TOOLS"
    package_tools
    rm -rf "$DIST"
    mkdir -p "$DIST"
    step "Rust artifacts for $TRIPLE.$GLIBC_FLOOR, one $PACKAGE_PROFILE build: the Node addon, libferrolock, the CLI"
    if ((ci)); then
        # napi-derive writes the addon's type definitions as it compiles it (forced to
        # recompile it, so the folder fills): bindings-node/test.sh renders and checks
        # its declarations from them instead of building the addon again.
        rm -rf "$ROOT/target/package/node-type-defs"
        mkdir -p "$ROOT/target/package/node-type-defs"
        export NAPI_TYPE_DEF_TMP_FOLDER=$ROOT/target/package/node-type-defs NAPI_FORCE_BUILD_FERROLOCK_NODE=$(date +%s%N)
    fi
    cargo zigbuild --locked --profile "$PACKAGE_PROFILE" --target "$TRIPLE.$GLIBC_FLOOR" \
        -p ferrolock-node -p ferrolock-c -p ferrolock-cli --features ferrolock-c/soname
    unset NAPI_TYPE_DEF_TMP_FOLDER NAPI_FORCE_BUILD_FERROLOCK_NODE
    step "Python: wheel (maturin --zig) and sdist"
    bash scripts/package/python.sh
    step "Node: main and platform packages"
    FERROLOCK_NODE_ADDON=$RUST_OUT/libferrolock_node.so bash scripts/package/node.sh
    step "C: tarball and .deb"
    bash scripts/package/c.sh
    step "CLI: tarball"
    bash scripts/package/cli.sh
fi
if ((build && !ci)); then
    step "sdist builds from source (pip, cargo)"
    sdist_venv=$(mktemp -d)
    python3 -m venv "$sdist_venv"
    CARGO_TARGET_DIR=$ROOT/target/sdist "$sdist_venv/bin/pip" install --quiet --disable-pip-version-check \
        "$DIST/python/ferrolock-$VERSION.tar.gz"
    (cd "$sdist_venv" && bin/python -c 'import ferrolock; assert ferrolock.__version__ == "'"$VERSION"'"; print("sdist build imports:", ferrolock.__file__)')
    rm -rf "$sdist_venv"
fi

if ((ci)); then
    step "verify: static checks, one install-and-run per artifact (cargo and rustc off PATH)"
    bash scripts/package/verify.sh static node_smoke c_examples cli
elif ((verify)); then
    step "verify (cargo and rustc off PATH)"
    bash scripts/package/verify.sh
fi

step "artifacts"
printf '%-72s %10s\n' artifact bytes
(cd "$DIST" && find . -type f | sort | while read -r f; do printf '%-72s %10s\n' "${f#./}" "$(stat -c %s "$f")"; done)
echo "done in $(( $(date +%s) - started )) s"
