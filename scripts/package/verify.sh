#!/usr/bin/env bash
# Verifies what scripts/package.sh put in dist/ the way users meet it: with cargo and
# rustc off PATH, in temporary directories outside the clone.
#   static: auditwheel, twine, NEEDED lists, highest GLIBC_ version, exported symbols;
#   python: a fresh venv installs the wheel with --no-index and runs the binding's
#           suite (and stubtest) against the installed copy;
#   node:   scripts/package/verify-node.sh (a fresh npm project installs both tarballs
#           and runs the binding's suite against node_modules/ferrolock);
#   c:      the tarball unpacked, the C tests and the example built with pkg-config
#           from the unpacked tree (C11; the C++ header as C++17) and run; the .deb's
#           contents;
#   cli:    the binary runs `ferrolock run` and `status` against a scratch redis-server.
# The tests' own tool (the fault proxy) is built before cargo leaves PATH.
# Usage: verify.sh [static|python|node|node_smoke|c|c_tests|c_examples|cli ...] (default: all but the
# smoke variants).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
. "$ROOT/scripts/lib.sh"
package_tools
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(static python node c cli)
work=$(mktemp -d "${TMPDIR:-/tmp}/ferrolock-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT

name=$C_NAME
wheel=$DIST/python/ferrolock-$VERSION-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
sdist=$DIST/python/ferrolock-$VERSION.tar.gz
ctar=$DIST/c/$name.tar.gz
deb=$DIST/c/libferrolock_${VERSION}_amd64.deb
clitar=$DIST/cli/$CLI_NAME.tar.gz
for f in "$wheel" "$sdist" "$ctar" "$deb" "$clitar"; do
    [ -f "$f" ] || { echo "verify: $f is missing: run scripts/package.sh first" >&2; exit 1; }
done

if [ -z "${FERROLOCK_FAULT_PROXY:-}" ]; then
    (cd "$ROOT" && cargo build --quiet -p ferrolock-harness --bin fault-proxy)
    export FERROLOCK_FAULT_PROXY=$ROOT/target/debug/fault-proxy
fi
export PATH=$(path_without_rust)
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "verify: cargo or rustc is still on PATH" >&2; exit 1
fi
echo "verify: PATH has no cargo and no rustc"

# elf_checks WHAT FILE: the shared checks, one line of output.
elf_checks() {
    needed_ok "$2" && glibc_ok "$2"
    printf '  %-34s NEEDED %s; highest GLIBC_%s\n' "$1" \
        "$(readelf -d "$2" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')" "$(glibc_max "$2")"
}

verify_static() {
    echo "== static checks"
    local shown
    shown=$(auditwheel show "$wheel" | tr '\n' ' ')
    grep -q 'platform tag: "manylinux_2_17_x86_64"' <<<"$shown" ||
        { echo "$shown"; echo "the wheel is not manylinux_2_17" >&2; return 1; }
    echo "  auditwheel: $(grep -o 'consistent with the following platform tag: "[^"]*"' <<<"$shown")"
    twine --no-color check --strict "$wheel" "$sdist" | sed 's/^/  /'
    mkdir -p "$work/wheel"
    (cd "$work/wheel" && python3 -m zipfile -e "$wheel" .)
    if compgen -G "$work/wheel/*.libs" >/dev/null; then echo "the wheel grafts libraries" >&2; return 1; fi
    elf_checks "wheel: ferrolock/_native.abi3.so" "$work/wheel/ferrolock/_native.abi3.so"
    # (Listings are read whole: `producer | grep -q` fails under pipefail when grep
    # stops reading early.)
    local listing
    listing=$(tar tzf "$sdist")
    grep -q "^ferrolock-$VERSION/core/src/lib.rs$" <<<"$listing" || { echo "the sdist lacks core/" >&2; return 1; }
    grep -q "^ferrolock-$VERSION/LICENSE$" <<<"$listing" || { echo "the sdist lacks the licence" >&2; return 1; }
    echo "  sdist: $(wc -l <<<"$listing") files, core/ and LICENSE among them"

    local platform_tgz
    platform_tgz=$(ls "$DIST"/node/*linux-x64-gnu-"$VERSION".tgz)
    mkdir -p "$work/npm" && tar -C "$work/npm" -xzf "$platform_tgz"
    elf_checks "npm: ferrolock.linux-x64-gnu.node" "$(ls "$work"/npm/package/*.node)"

    mkdir -p "$work/c" && tar -C "$work/c" -xzf "$ctar"
    local lib=$work/c/$name/lib
    elf_checks "c: libferrolock.so.$VERSION" "$lib/libferrolock.so.$VERSION"
    local foreign
    foreign=$(nm -D --defined-only "$lib/libferrolock.so.$VERSION" | awk '{print $3}' | grep -v '^ferrolock_' || true)
    [ -z "$foreign" ] || { echo "libferrolock.so exports more than ferrolock_*: $foreign" >&2; return 1; }
    nm -D --defined-only "$lib/libferrolock.so.$VERSION" | awk '{print $3}' | sort |
        diff -u "$ROOT/bindings-c/abi/symbols.txt" - || { echo "exports differ from bindings-c/abi/symbols.txt" >&2; return 1; }
    echo "  c: exports exactly bindings-c/abi/symbols.txt ($(wc -l <"$ROOT/bindings-c/abi/symbols.txt") ferrolock_* symbols)"
    local archive
    archive=$(stat -c %s "$lib/libferrolock.a")
    if [ "$PACKAGE_PROFILE" = dist ] && ((archive > 20 * 1024 * 1024)); then
        echo "libferrolock.a is $archive bytes, over 20 MiB: is the dist profile's LTO gone?" >&2
        return 1
    fi
    echo "  c: libferrolock.a $archive bytes ($PACKAGE_PROFILE profile; LTO builds are bounded by 20 MiB)"
    cmp "$work/c/$name/include/ferrolock.h" "$ROOT/bindings-c/include/ferrolock.h"
    echo "  c: include/ferrolock.h is the committed (generated, drift-checked) header"

    mkdir -p "$work/cli" && tar -C "$work/cli" -xzf "$clitar"
    elf_checks "cli: ferrolock" "$work/cli/$CLI_NAME/ferrolock"
}

verify_python() {
    echo "== python: the wheel in a fresh venv, the suite against it"
    local venv=$work/py
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --only-binary :all: \
        --find-links "$DIST/python" "ferrolock==$VERSION"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/bindings-python/requirements-dev.txt"
    (cd "$work" && "$venv/bin/python" -c 'import ferrolock; print("  installed", ferrolock.__version__, "at", ferrolock.__file__)')
    (cd "$work" && "$venv/bin/python" -m mypy.stubtest ferrolock._native)
    (cd "$work" && "$venv/bin/python" -m pytest -p no:cacheprovider -q "$ROOT/bindings-python/tests")
}

verify_node() {
    echo "== node: both tarballs in a fresh npm project, the suite against node_modules/ferrolock"
    bash "$ROOT/scripts/package/verify-node.sh"
}

# c_unpack: the C tarball unpacked afresh, PKG_CONFIG_PATH at it; sets flags, libdir, bin.
c_unpack() {
    rm -rf "$work/cu" && mkdir -p "$work/cu" && tar -C "$work/cu" -xzf "$ctar"
    export PKG_CONFIG_PATH=$work/cu/$name/lib/pkgconfig
    [ "$(pkg-config --modversion ferrolock)" = "$VERSION" ]
    flags=$(pkg-config --cflags --libs ferrolock)
    libdir=$(pkg-config --variable=libdir ferrolock)
    bin=$work/cbin
    mkdir -p "$bin"
}

verify_node_smoke() {
    echo "== node: both tarballs in a fresh npm project, a smoke test against node_modules/ferrolock"
    bash "$ROOT/scripts/package/verify-node.sh" --smoke
}

verify_c() {
    verify_c_tests
    verify_c_examples
}

verify_c_tests() {
    echo "== c: the tarball unpacked, the C and C++ tests built with pkg-config and run"
    local flags libdir bin passed=0
    c_unpack
    echo "  pkg-config --cflags --libs ferrolock = $flags"
    for src in "$ROOT"/bindings-c/tests/*.c "$ROOT"/bindings-c/tests/*.cpp; do
        local t std compiler
        t=$(basename "${src%.*}")
        grep -q 'int main' "$src" || continue
        case $t in with_redis | cpp_check) continue ;; esac
        case $src in *.cpp) compiler=g++ std=c++17 ;; *) compiler=cc std=c11 ;; esac
        # shellcheck disable=SC2086
        $compiler -std=$std -O1 -Wall -Wextra -Werror "$src" $flags -Wl,-rpath,"$libdir" -lpthread -o "$bin/$t"
        if [ "$t" = header_c11 ]; then continue; fi
        TMPDIR=$work timeout 180 "$bin/$t" >"$work/c-$t.log" 2>&1 ||
            { tail -n 30 "$work/c-$t.log"; echo "C test $t failed against the tarball" >&2; return 1; }
        passed=$((passed + 1))
    done
    echo "  $passed C/C++ test programs passed against the unpacked tarball"
}

# run_job PROGRAM: the example against a redis-server of its own (tests/with_redis.c).
run_job() {
    local out
    out=$(TMPDIR=$work timeout 60 "$bin/with_redis" "$1")
    grep -q "nightly report generated" <<<"$out" || { echo "$out"; echo "$1 did not run the job" >&2; return 1; }
}

verify_c_examples() {
    echo "== c: the example built with pkg-config from the unpacked tarball (shared, static) and the .deb"
    local flags libdir bin
    c_unpack
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Werror "$ROOT/bindings-c/tests/with_redis.c" $flags -Wl,-rpath,"$libdir" -o "$bin/with_redis"
    # shellcheck disable=SC2086
    cc -std=c11 "$work/cu/$name/share/doc/ferrolock/legacy_job.c" $flags -Wl,-rpath,"$libdir" -o "$bin/legacy_job"
    run_job "$bin/legacy_job"
    # shellcheck disable=SC2046
    cc -std=c11 "$work/cu/$name/share/doc/ferrolock/legacy_job.c" $(pkg-config --cflags ferrolock) \
        "$libdir/libferrolock.a" $(pkg-config --static --libs-only-l ferrolock | sed 's/-lferrolock //') \
        -o "$bin/legacy_job_static"
    if [[ $(ldd "$bin/legacy_job_static") == *libferrolock* ]]; then echo "linked to the shared library" >&2; return 1; fi
    run_job "$bin/legacy_job_static"
    echo "  examples/legacy_job.c runs linked shared (rpath) and static (pkg-config --static)"
    local contents
    contents=$(dpkg-deb --contents "$deb")
    grep -q "usr/lib/$PLATFORM/libferrolock.so.$VERSION" <<<"$contents"
    grep -q "usr/include/ferrolock.h" <<<"$contents"
    mkdir -p "$work/debroot" && dpkg-deb -x "$deb" "$work/debroot"
    # shellcheck disable=SC2046
    cc -std=c11 "$work/cu/$name/share/doc/ferrolock/legacy_job.c" -I"$work/debroot/usr/include" \
        -L"$work/debroot/usr/lib/$PLATFORM" -lferrolock -Wl,-rpath,"$work/debroot/usr/lib/$PLATFORM" -o "$bin/legacy_job_deb"
    run_job "$bin/legacy_job_deb"
    echo "  the .deb: $(dpkg-deb --field "$deb" Package Version Depends | tr '\n' ' ')— its files build and run the example"
}

verify_cli() {
    echo "== cli: the binary against a scratch redis-server"
    rm -rf "$work/cl" && mkdir -p "$work/cl" && tar -C "$work/cl" -xzf "$clitar"
    local bin=$work/cl/$CLI_NAME/ferrolock out
    [ "$("$bin" --version)" = "ferrolock $VERSION" ]
    (
        start_scratch_redis
        export REDIS_URL=redis://127.0.0.1:$REDIS_PORT
        out=$("$bin" run release-check --fenced -c 'echo "inside token=$FERROLOCK_TOKEN"')
        grep -q '^inside token=1$' <<<"$out"
        "$bin" status release-check --check >/dev/null && { echo "still held after run" >&2; exit 1; }
        local status
        status=$("$bin" status release-check --json)
        [[ $status == *'"locked":false'* && $status == *'"last_token":1'* ]] || { echo "status: $status" >&2; exit 1; }
        echo "  ferrolock run --fenced: $out; ferrolock status --json: $status"
    )
}

for part in "${parts[@]}"; do
    "verify_$part"
done
echo "verify: ${parts[*]}: passed"
