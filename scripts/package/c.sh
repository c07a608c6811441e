#!/usr/bin/env bash
# The C artifacts into $DIST/c, from the dist build scripts/package.sh made:
# libferrolock-<version>-x86_64-linux-gnu.tar.gz (top directory of the same name;
# include/, lib/ with the versioned
# shared library, its SONAME and link-name symlinks, the static archive, a .pc that
# works wherever the tree is unpacked, share/doc/ferrolock/) and a .deb of the same
# files under /usr.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$DIST/c"
name=$C_NAME
make -s -C "$ROOT/bindings-c" install-files PROFILE="$PACKAGE_PROFILE" TARGET="$TRIPLE" PREFIX="$work/$name" RELOCATABLE=1
docs() { # DIR: the licence and the C documentation
    install -d "$1"
    install -m 644 "$ROOT/LICENSE" "$ROOT/CHANGELOG.md" "$1/"
    install -m 644 "$ROOT/bindings-c/README.md" "$1/README.md"
    install -m 644 "$ROOT/bindings-c/examples/legacy_job.c" "$1/"
}
docs "$work/$name/share/doc/ferrolock"
tar -C "$work" --owner=0 --group=0 -czf "$DIST/c/$name.tar.gz" "$name"

# The .deb: the same files under /usr (multiarch libdir), for dpkg -i / apt install ./
deb=$work/deb
make -s -C "$ROOT/bindings-c" install-files PROFILE="$PACKAGE_PROFILE" TARGET="$TRIPLE" PREFIX=/usr \
    LIBDIR=/usr/lib/$PLATFORM DESTDIR="$deb"
docs "$deb/usr/share/doc/libferrolock"
install -d "$deb/DEBIAN"
cat >"$deb/DEBIAN/control" <<CONTROL
Package: libferrolock
Version: $VERSION
Architecture: amd64
Maintainer: ferrolock maintainers <maintainers@ferrolock.invalid>
Depends: libc6 (>= $GLIBC_FLOOR), libgcc-s1
Section: libs
Priority: optional
Description: Redisson-compatible distributed locks on Redis (C API)
 libferrolock: reentrant, fenced, fair and read-write locks, semaphores, a
 count-down latch and Redlock over Redis, speaking Redisson's wire protocol.
 Headers (ferrolock.h, ferrolock.hpp), shared and static library, pkg-config file.
CONTROL
dpkg-deb --root-owner-group --build "$deb" "$DIST/c/libferrolock_${VERSION}_amd64.deb" >/dev/null
ls "$DIST/c"
