#!/usr/bin/env bash
# The CLI into $DIST/cli: ferrolock-<version>-x86_64-linux-gnu.tar.gz with the
# stripped `ferrolock` binary (glibc 2.17 floor), its licence and README, from the
# dist build scripts/package.sh made.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$DIST/cli"
name=ferrolock-$VERSION-$PLATFORM
install -d "$work/$name"
install -m 755 "$RUST_OUT/ferrolock" "$work/$name/ferrolock"
strip --strip-unneeded "$work/$name/ferrolock"
install -m 644 "$ROOT/LICENSE" "$ROOT/CHANGELOG.md" "$work/$name/"
cat >"$work/$name/README.md" <<README
# ferrolock $VERSION — the command line (x86_64 Linux, glibc >= $GLIBC_FLOOR)

A distributed flock on Redis, speaking Redisson's lock protocol. Put \`ferrolock\` on
your PATH, then:

    ferrolock run nightly-report -- ./report.sh        # waits, holds it while report.sh runs
    ferrolock run nightly-report --wait 0 -- ./report.sh   # exit 1 at once if it is held
    ferrolock status nightly-report --json
    ferrolock --help                                    # every command, option and exit code

The Redis URL comes from --url, else REDIS_URL, else redis://127.0.0.1:6379.
README
tar -C "$work" --owner=0 --group=0 -czf "$DIST/cli/$name.tar.gz" "$name"
ls "$DIST/cli"
