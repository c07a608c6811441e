#!/usr/bin/env bash
# The Node release artifacts, into $DIST/node/:
#   ferrolock-<version>.tgz: the main package (JS, declarations; no addon, no build
#     script), naming the platform package in optionalDependencies at <version>;
#   ferrolock-ferrolock-linux-x64-gnu-<version>.tgz: @ferrolock/ferrolock-linux-x64-gnu,
#     the release addon only (ferrolock.linux-x64-gnu.node, stripped), built by
#     cargo-zigbuild against glibc 2.17 (Node 20's own binaries need 2.28).
# Both are packed from staged copies, with the workspace's LICENSE: the source tree
# is left as it was. Nothing is published. scripts/package/verify-node.sh checks them.
#
# Called by scripts/package.sh with FERROLOCK_NODE_ADDON naming the addon its one
# dist build made ($RUST_OUT/libferrolock_node.so); alone (bash scripts/package/node.sh)
# it builds that itself: cargo zigbuild, the dist profile, $TRIPLE.$GLIBC_FLOOR.
# DIST defaults to dist/ (scripts/package/env.sh). Needs node and npm; for the build,
# cargo (the release tools come from env.sh's venv).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

platform=linux-x64-gnu
addon="ferrolock.$platform.node"
for tool in node npm strip; do
  command -v "$tool" >/dev/null 2>&1 || { echo "node.sh: $tool is not on PATH" >&2; exit 1; }
done
version=$(node -p "require('./bindings-node/package.json').version")
[ "$version" = "$VERSION" ] || { echo "node.sh: bindings-node/package.json is $version, Cargo.toml $VERSION" >&2; exit 1; }

out="$DIST/node"
rm -rf "$out"
mkdir -p "$out"
stage=$(mktemp -d "${TMPDIR:-/tmp}/ferrolock-node-stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

built=${FERROLOCK_NODE_ADDON:-}
if [ -z "$built" ]; then
  package_tools
  echo "== the addon: cargo zigbuild, dist profile, $TRIPLE.$GLIBC_FLOOR ($(cargo-zigbuild --version), zig $(python3 -m ziglang version))"
  started=$(date +%s)
  cargo zigbuild --locked --profile dist -p ferrolock-node --target "$TRIPLE.$GLIBC_FLOOR"
  echo "addon build: $(( $(date +%s) - started )) s"
  built="$RUST_OUT/libferrolock_node.so"
fi
[ -f "$built" ] || { echo "node.sh: no addon at $built" >&2; exit 1; }

echo "== platform package @ferrolock/ferrolock-$platform"
plat="$stage/$platform"
mkdir "$plat"
cp "bindings-node/npm/$platform/package.json" "bindings-node/npm/$platform/README.md" LICENSE "$plat/"
cp "$built" "$plat/$addon"
strip --strip-unneeded "$plat/$addon"
echo "$addon: $(stat -c %s "$built") bytes built, $(stat -c %s "$plat/$addon") stripped"

echo "== main package ferrolock"
main="$stage/ferrolock"
mkdir "$main"
# Exactly the files npm would pack from bindings-node (its `files`), plus the licence.
(cd bindings-node && npm pack --dry-run --json --ignore-scripts) |
  node -e "for (const f of JSON.parse(require('fs').readFileSync(0, 'utf8'))[0].files) console.log(f.path)" |
  while IFS= read -r f; do
    mkdir -p "$main/$(dirname "$f")"
    cp "bindings-node/$f" "$main/$f"
  done
cp LICENSE "$main/"
if find "$main" -name '*.node' | grep -q .; then echo "node.sh: the main package holds an addon" >&2; exit 1; fi

for dir in "$plat" "$main"; do
  (cd "$dir" && npm pack --ignore-scripts --pack-destination "$out" --loglevel=warn >/dev/null)
done
for tgz in "ferrolock-$version.tgz" "ferrolock-ferrolock-$platform-$version.tgz"; do
  test -f "$out/$tgz" || { echo "node.sh: npm pack did not write $out/$tgz" >&2; exit 1; }
  echo "$tgz: $(stat -c %s "$out/$tgz") bytes"
done
