#!/usr/bin/env bash
# The CLI into $DIST/cli: ferrolock-cli-<version>-x86_64-linux-gnu.tar.gz (top directory
# of the same name) with the stripped `ferrolock` binary (glibc 2.17 floor), its licence,
# the changelog and cli/README.md, from the dist build scripts/package.sh made.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$DIST/cli"
name=$CLI_NAME
install -d "$work/$name"
install -m 755 "$RUST_OUT/ferrolock" "$work/$name/ferrolock"
strip --strip-unneeded "$work/$name/ferrolock"
install -m 644 "$ROOT/LICENSE" "$ROOT/CHANGELOG.md" "$work/$name/"
install -m 644 "$ROOT/cli/README.md" "$work/$name/README.md"
tar -C "$work" --owner=0 --group=0 -czf "$DIST/cli/$name.tar.gz" "$name"
ls "$DIST/cli"
