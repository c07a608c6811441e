#!/usr/bin/env bash
# Tests of the C binding (issues 5, 15, 17), from a fresh clone: builds libferrolock (debug),
# checks the committed header is what cbindgen generates, installs into a temp
# PREFIX (versioned shared library with its SONAME), checks the header declares every
# function the library exports, compiles the header as C11 and C++, runs the C test
# programs and the C++ RAII wrapper's tests (tests/cxx_raii.cpp, cxx_family.cpp) under AddressSanitizer +
# UndefinedBehaviorSanitizer (each starts its own redis-server; sentinel.c also a
# replica and a sentinel, redlock.c three servers; the fault_*.c tests also
# tests/harness's fault-proxy, built here), five under
# valgrind memcheck, and builds + runs examples/legacy_job.c through
# pkg-config. Needs cargo, gcc, g++, redis-server, valgrind, pkg-config, nm, readelf on PATH.
#
#   bash bindings-c/test.sh          # last line: "N passed, 0 failed"
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BUILD=$CARGO_TARGET_DIR/ferrolock-c-tests
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ferrolock-c-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$BUILD"

missing=()
for tool in cargo gcc g++ cc redis-server valgrind pkg-config make timeout nm readelf; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "bindings-c/test.sh: missing tools: ${missing[*]}" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
failed_names=()

# check NAME CMD...: runs CMD in a subshell (with errexit in force: it would be
# ignored inside an `if`) and its output in a log; prints the log's last line on
# success, the log's tail on failure.
check() {
    local name=$1
    shift
    local log="$WORK/$name.log"
    local start=$SECONDS
    ("$@") >"$log" 2>&1 &
    if wait $!; then
        passed=$((passed + 1))
        printf 'ok   %-22s %3ss  %s\n' "$name" $((SECONDS - start)) "$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)"
    else
        failed=$((failed + 1))
        failed_names+=("$name")
        printf 'FAIL %-22s %3ss\n' "$name" $((SECONDS - start))
        tail -n 60 "$log" | sed 's/^/    /'
        return 1
    fi
}

# check_two FUNC NAME...: `check asan-NAME FUNC NAME` for each NAME, two programs at
# a time (each waits on its redis-server and timers more than it computes), reported
# in order as each finishes.
check_two() {
    local func=$1
    shift
    local name pids=()
    for name in "$@"; do
        while (($(jobs -rp | wc -l) >= 2)); do wait -n || true; done
        (
            set +e
            start=$SECONDS
            (set -e; "$func" "$name") >"$WORK/asan-$name.log" 2>&1
            echo "$? $((SECONDS - start))" >"$WORK/asan-$name.rc"
        ) &
        pids+=($!)
    done
    local i=0 rc took
    for name in "$@"; do
        wait "${pids[i]}" || true
        i=$((i + 1))
        read -r rc took <"$WORK/asan-$name.rc" || { rc=1; took=0; }
        if ((rc == 0)); then
            passed=$((passed + 1))
            printf 'ok   %-22s %3ss  %s\n' "asan-$name" "$took" "$(grep -v '^[[:space:]]*$' "$WORK/asan-$name.log" | tail -n 1)"
        else
            failed=$((failed + 1))
            failed_names+=("asan-$name")
            printf 'FAIL %-22s %3ss\n' "asan-$name" "$took"
            tail -n 60 "$WORK/asan-$name.log" | sed 's/^/    /'
        fi
    done
}

finish() {
    if ((failed)); then
        echo "failed: ${failed_names[*]}"
    fi
    echo "$passed passed, $failed failed"
    ((failed == 0))
}


# 1. Build, generating the header into a temp file on the way (build.rs + cbindgen).
build_lib() {
    cd "$ROOT"
    FERROLOCK_C_HEADER="$WORK/ferrolock.h" cargo build -p ferrolock-c --features generate-header
}
if ! check build build_lib; then finish; exit 1; fi

header_up_to_date() {
    if cmp "$WORK/ferrolock.h" "$HERE/include/ferrolock.h"; then
        echo "include/ferrolock.h matches cbindgen's output"
    else
        diff -u "$HERE/include/ferrolock.h" "$WORK/ferrolock.h" | head -n 40
        echo "include/ferrolock.h is stale: run make -C bindings-c header and commit it"
        return 1
    fi
}
check header-up-to-date header_up_to_date || true

# 2. The Rust side's own checks (a panic becomes FERROLOCK_ERR_INTERNAL).
rust_unit_tests() {
    cd "$ROOT"
    cargo test -p ferrolock-c --lib
}
check rust-unit-tests rust_unit_tests || true

# 3. Install into a temp PREFIX (debug build, to reuse the compiled crates).
PREFIX="$WORK/prefix"
install_step() {
    make -C "$HERE" install PREFIX="$PREFIX" PROFILE=debug
    test -f "$PREFIX/include/ferrolock.h" && test -f "$PREFIX/include/ferrolock.hpp" &&
        test -f "$PREFIX/lib/libferrolock.so" && test -f "$PREFIX/lib/libferrolock.a" &&
        test -f "$PREFIX/lib/pkgconfig/ferrolock.pc"
    PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --modversion ferrolock
}
if ! check install install_step; then finish; exit 1; fi
LIBDIR="$PREFIX/lib"
INC="$PREFIX/include"

# The shared library is versioned: libferrolock.so.<version>, its SONAME
# libferrolock.so.<major> (libferrolock.so.0.<minor> while the major is 0) and the
# link-time libferrolock.so both symlinks to it.
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
SOVERSION=${VERSION%%.*}
if [ "$SOVERSION" = 0 ]; then SOVERSION=$(cut -d. -f1,2 <<<"$VERSION"); fi
SONAME=libferrolock.so.$SOVERSION
soname() {
    local version real
    version=$(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --modversion ferrolock)
    test "$version" = "$VERSION"
    real="$LIBDIR/libferrolock.so.$version"
    test -f "$real" && ! test -L "$real"
    test "$(readlink "$LIBDIR/$SONAME")" = "libferrolock.so.$version"
    test "$(readlink "$LIBDIR/libferrolock.so")" = "libferrolock.so.$version"
    readelf -d "$real" | grep -F "Library soname: [$SONAME]"
    # ferrolock_version() is the workspace version too.
    printf '#include <stdio.h>\n#include <ferrolock.h>\nint main(void) { puts(ferrolock_version()); return 0; }\n' |
        gcc -x c - -I"$PREFIX/include" -L"$LIBDIR" -lferrolock -Wl,-rpath,"$LIBDIR" -o "$BUILD/version"
    test "$("$BUILD/version")" = "$VERSION"
    echo "ferrolock_version() = $VERSION = Cargo.toml's"
}
check soname soname || true
STRICT=(-Wall -Wextra -Werror -pedantic)

# Every function the library exports is declared in the header: cbindgen does not
# expand macros, so an export a macro made would be missing from both the header
# and the drift check above (each is written out, its body in ffi!: src/ffi.rs).
header_has_every_export() {
    local exported missing=()
    exported=$(nm -D --defined-only "$LIBDIR/libferrolock.so" | awk '$2 == "T" && $3 ~ /^ferrolock_/ {print $3}')
    for sym in $exported; do
        grep -qE "^[a-z][^(]*[ *]$sym\(" "$INC/ferrolock.h" || missing+=("$sym")
    done
    if ((${#missing[@]})); then
        echo "exported but not declared in include/ferrolock.h: ${missing[*]}"
        return 1
    fi
    echo "all $(wc -w <<<"$exported") exported functions are declared in ferrolock.h"
}
check header-all-exports header_has_every_export || true

# The ABI: the library exports exactly the committed list (only ferrolock_*: rustc's
# version script for a cdylib hides the rest). A change here is an ABI change.
exports_match_abi_list() {
    local exported
    exported=$(nm -D --defined-only "$LIBDIR/libferrolock.so" | awk '{print $3}' | sort)
    if grep -v '^ferrolock_' <<<"$exported"; then
        echo "libferrolock.so exports symbols beyond ferrolock_* (above)"
        return 1
    fi
    if ! diff -u "$HERE/abi/symbols.txt" - <<<"$exported"; then
        echo "the exports differ from bindings-c/abi/symbols.txt: an ABI change (docs/releasing.md); update the list"
        return 1
    fi
    echo "exports exactly bindings-c/abi/symbols.txt ($(wc -l <"$HERE/abi/symbols.txt") ferrolock_* symbols)"
}
check exports-abi-list exports_match_abi_list || true

# 4. The header as C11 and as C++.
header_c11() {
    gcc -std=c11 "${STRICT[@]}" -I"$INC" -c "$HERE/tests/header_c11.c" -o "$BUILD/header_c11.o"
    gcc -std=c99 "${STRICT[@]}" -I"$INC" -fsyntax-only "$HERE/tests/header_c11.c"
    echo "ferrolock.h compiles as strict C11 and C99"
}
check header-c11 header_c11 || true
cpp_check() {
    g++ -std=c++11 "${STRICT[@]}" -I"$INC" "$HERE/tests/cpp_check.cpp" -L"$LIBDIR" -lferrolock \
        -Wl,-rpath,"$LIBDIR" -o "$BUILD/cpp_check"
    g++ -std=c++20 "${STRICT[@]}" -I"$INC" -fsyntax-only "$HERE/tests/cpp_check.cpp"
    "$BUILD/cpp_check"
}
check header-cxx cpp_check || true

# 5. C tests under ASan + UBSan, each against its own redis-server (its temp dir
#    under $WORK, so even a killed test leaves nothing behind).
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
compile_test() { # NAME OUT EXTRA-FLAGS...
    local name=$1 out=$2
    shift 2
    gcc -std=c11 -g -O1 "${STRICT[@]}" "$@" -I"$INC" "$HERE/tests/$name.c" -L"$LIBDIR" -lferrolock \
        -Wl,-rpath,"$LIBDIR" -lpthread -o "$out"
}
run_asan() {
    local name=$1
    compile_test "$name" "$BUILD/$name" "${SAN[@]}"
    TMPDIR="$WORK" timeout 120 "$BUILD/$name"
}
check_two run_asan counter reentrancy wait lease lost fenced kind statuses thread_exit thread_connection acl options sentinel \
    redlock handles closed extend metrics inspect notes rwlock fair semaphore permits latch election

# The fault tests (tests/fault_*.c, issue 29) steer tests/harness's fault-proxy, in
# front of their redis-server, over its stdin (tests/fault_proxy.h).
build_fault_proxy() {
    cd "$ROOT"
    cargo build -p ferrolock-harness --bin fault-proxy
}
export FERROLOCK_FAULT_PROXY=$CARGO_TARGET_DIR/debug/fault-proxy
if check fault-proxy build_fault_proxy; then
    check_two run_asan fault_exclusion fault_replies fault_outage fault_restart fault_threads fault_slow_link
fi

# ferrolock.hpp (C++17, for std::scoped_lock) under ASan + UBSan, against a redis-server.
cxx_raii() {
    g++ -std=c++17 -g -O1 "${STRICT[@]}" "${SAN[@]}" -I"$INC" "$HERE/tests/cxx_raii.cpp" -L"$LIBDIR" \
        -lferrolock -Wl,-rpath,"$LIBDIR" -lpthread -o "$BUILD/cxx_raii"
    g++ -std=c++11 "${STRICT[@]}" -I"$INC" -x c++ -fsyntax-only - <<<'#include "ferrolock.hpp"'
    TMPDIR="$WORK" timeout 120 "$BUILD/cxx_raii"
}
check asan-cxx-raii cxx_raii || true

# The family in ferrolock.hpp (semaphore RAII, shared_mutex, permits, latch), C++17.
cxx_family() {
    g++ -std=c++17 -g -O1 "${STRICT[@]}" "${SAN[@]}" -I"$INC" "$HERE/tests/cxx_family.cpp" -L"$LIBDIR" \
        -lferrolock -Wl,-rpath,"$LIBDIR" -lpthread -o "$BUILD/cxx_family"
    TMPDIR="$WORK" timeout 120 "$BUILD/cxx_family"
}
check asan-cxx-family cxx_family || true

# 6. valgrind memcheck: no definite or indirect leaks, no memory errors.
run_valgrind() {
    local name=$1
    compile_test "$name" "$BUILD/$name-vg"
    local vglog="$WORK/valgrind-$name.txt"
    local rc=0
    TMPDIR="$WORK" timeout 240 valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --log-file="$vglog" \
        "$BUILD/$name-vg" || rc=$?
    grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|still reachable" "$vglog" || true
    grep -qE "LEAK SUMMARY|All heap blocks were freed" "$vglog" # valgrind ran the program itself
    if grep -qE "(definitely|indirectly) lost: [1-9]" "$vglog"; then
        cat "$vglog"
        return 1
    fi
    if ((rc != 0)); then
        cat "$vglog"
        return 1
    fi
    echo "valgrind: no definite/indirect leaks, $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$vglog")"
}
check valgrind-reentrancy run_valgrind reentrancy || true
check valgrind-lost run_valgrind lost || true
check valgrind-thread_exit run_valgrind thread_exit || true
check valgrind-kind run_valgrind kind || true
check valgrind-permits run_valgrind permits || true

# 7. examples/legacy_job.c built through pkg-config after the install step, run
#    against a redis-server of its own.
legacy_job() {
    gcc -std=c11 "${STRICT[@]}" "$HERE/tests/with_redis.c" -I"$INC" -L"$LIBDIR" -lferrolock \
        -Wl,-rpath,"$LIBDIR" -o "$BUILD/with_redis"
    local flags
    flags=$(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --cflags --libs ferrolock)
    echo "cc \$(pkg-config --cflags --libs ferrolock) = $flags"
    # shellcheck disable=SC2086
    cc "$HERE/examples/legacy_job.c" $flags -o "$BUILD/legacy_job"
    # It needs the SONAME, and loads it from the install's lib directory.
    readelf -d "$BUILD/legacy_job" | grep -F "Shared library: [$SONAME]"
    LD_LIBRARY_PATH="$LIBDIR" ldd "$BUILD/legacy_job" | grep -F "$SONAME => $LIBDIR/$SONAME"
    local out
    out=$(TMPDIR="$WORK" LD_LIBRARY_PATH="$LIBDIR" timeout 60 "$BUILD/with_redis" "$BUILD/legacy_job")
    echo "$out"
    grep -q "nightly report generated" <<<"$out"
}
check legacy-job-pkg-config legacy_job || true

# The static archive links too (with the .pc file's Libs.private), and the job runs.
legacy_job_static() {
    export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
    # shellcheck disable=SC2046
    cc "$HERE/examples/legacy_job.c" $(pkg-config --cflags ferrolock) \
        "$(pkg-config --variable=libdir ferrolock)/libferrolock.a" \
        $(pkg-config --static --libs-only-l ferrolock | sed 's/-lferrolock //') -o "$BUILD/legacy_job_static"
    if ldd "$BUILD/legacy_job_static" | grep -q libferrolock; then
        echo "legacy_job_static is linked to the shared library"
        return 1
    fi
    local out
    out=$(TMPDIR="$WORK" timeout 60 "$BUILD/with_redis" "$BUILD/legacy_job_static")
    echo "$out"
    grep -q "nightly report generated" <<<"$out"
}
check legacy-job-static legacy_job_static || true

# 8. The release install (`make install`: LTO, one codegen unit, debug info
#    stripped): the archive stays small (44 MB before LTO and strip, 9.5-14.5 MB
#    after) and a program linked against it statically runs. A release build of
#    its own (about 2.5 min of CPU the first time), unless FERROLOCK_C_TARBALL names
#    the release tarball scripts/package.sh made (the test command's, built without
#    LTO): then that tarball's library is the one linked and run, and its size is
#    bounded by scripts/package/verify.sh for LTO builds.
release_static() {
    local rel="$WORK/release" size max=$((20 * 1024 * 1024))
    if [ -n "${FERROLOCK_C_TARBALL:-}" ]; then
        mkdir -p "$rel" && tar -C "$rel" --strip-components=1 -xzf "$FERROLOCK_C_TARBALL"
        max=0
    else
        make -C "$HERE" install PREFIX="$rel" PROFILE=release
    fi
    size=$(stat -c %s "$rel/lib/libferrolock.a")
    echo "release libferrolock.a: $size bytes, libferrolock.so: $(stat -L -c %s "$rel/lib/libferrolock.so") bytes"
    if ((max && size > max)); then
        echo "libferrolock.a is $size bytes, over $max: is the Makefile's release LTO gone?"
        return 1
    fi
    readelf -d "$rel/lib/libferrolock.so" | grep -F "Library soname: [$SONAME]"
    # shellcheck disable=SC2046
    cc "$HERE/examples/legacy_job.c" -I"$rel/include" "$rel/lib/libferrolock.a" \
        $(PKG_CONFIG_PATH="$rel/lib/pkgconfig" pkg-config --static --libs-only-l ferrolock | sed 's/-lferrolock //') \
        -o "$BUILD/legacy_job_release"
    local out
    out=$(TMPDIR="$WORK" timeout 60 "$BUILD/with_redis" "$BUILD/legacy_job_release")
    echo "$out"
    grep -q "nightly report generated" <<<"$out"
    echo "release libferrolock.a: $size bytes${FERROLOCK_C_TARBALL:+ (from $(basename "$FERROLOCK_C_TARBALL"))}"
}
check release-static release_static || true

finish
