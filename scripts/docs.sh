#!/usr/bin/env bash
# Builds the documentation site into target/site/ from the repo's files: the guides and
# migration pages (docs/site/), the API references generated from the code (Rust: rustdoc
# of core; Python: mkdocstrings over ferrolock and ferrolock.aio; Node: TypeDoc over
# bindings-node/index.d.ts; C: scripts/docs/c_api.py over ferrolock.h) and the
# measurements of docs/perf/. Fails when a public name has no documentation, a link
# inside the site is broken, a migration page's row names no test (check_rows.py), an
# option or exit code of the `ferrolock` command is missing from the CLI reference
# (check_cli.py, from the debug build's --help), or a README that ships in an artifact
# tells its reader to build from a checkout (check_readmes.py). Installs its pinned
# tools itself (scripts/docs/requirements.txt into target/docs-venv,
# scripts/docs/package*.json into target/docs-node). Needs no Redis and no built binding.
# Open target/site/index.html, or: python3 -m http.server -d target/site
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_commands python3:python3 node:nodejs npm:npm
python3 -c 'import venv, ensurepip' 2>/dev/null || ensure_python_venv

VENV=target/docs-venv
NODE_TOOLS=target/docs-node
SRC=target/docs-src
SITE=target/site

# Pinned tools, reinstalled when their pins change.
if ! cmp -s scripts/docs/requirements.txt "$VENV/requirements.txt" 2>/dev/null; then
  echo "== installing MkDocs and mkdocstrings into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r scripts/docs/requirements.txt
  cp scripts/docs/requirements.txt "$VENV/requirements.txt"
fi
if ! cmp -s scripts/docs/package-lock.json "$NODE_TOOLS/package-lock.json" 2>/dev/null; then
  echo "== installing TypeDoc into $NODE_TOOLS"
  rm -rf "$NODE_TOOLS"
  mkdir -p "$NODE_TOOLS"
  cp scripts/docs/package.json scripts/docs/package-lock.json "$NODE_TOOLS/"
  (cd "$NODE_TOOLS" && npm ci --no-audit --no-fund --silent)
fi

echo "== migration pages: every table row names a test, every test a row"
python3 scripts/docs/check_rows.py
echo "== packaged READMEs: nothing to build from a checkout"
python3 scripts/docs/check_readmes.py
echo "== the CLI reference has every option and exit code of ferrolock --help"
cargo build -q -p ferrolock-cli
python3 scripts/docs/check_cli.py "${CARGO_TARGET_DIR:-target}/debug/ferrolock" docs/site/guides/cli.md

rm -rf "$SRC" "$SITE"
mkdir -p "$SRC"
cp -r docs/site/. "$SRC/"
cp -r docs/perf "$SRC/perf"

echo "== Rust API (rustdoc of core; missing_docs is an error)"
RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D missing_docs -D rustdoc::broken_intra_doc_links" \
  cargo doc -p ferrolock --no-deps --quiet
mkdir -p "$SRC/api/rust"
cp -r "${CARGO_TARGET_DIR:-target}/doc/." "$SRC/api/rust/"

echo "== Node API (TypeDoc over bindings-node/index.d.ts; an undocumented name is an error)"
cat > "$SRC/../docs-tsconfig.json" <<JSON
{ "compilerOptions": { "target": "es2022", "module": "node16", "moduleResolution": "node16",
    "types": ["node"], "typeRoots": ["$PWD/$NODE_TOOLS/node_modules/@types"],
    "skipLibCheck": true, "strict": true },
  "files": ["$PWD/bindings-node/index.d.ts"] }
JSON
"$NODE_TOOLS/node_modules/.bin/typedoc" --tsconfig "$SRC/../docs-tsconfig.json" \
  --entryPoints bindings-node/index.d.ts --out "$SRC/api/node" --name "ferrolock (Node.js)" \
  --readme none --disableSources --logLevel Warn \
  --validation.notDocumented --treatWarningsAsErrors

echo "== Python API (mkdocstrings; every public name of ferrolock and ferrolock.aio must have a docstring)"
"$VENV/bin/python" scripts/docs/python_api.py bindings-python/python "$SRC/api"

echo "== C API (ferrolock.h's comments; every function, type, value and field must have one)"
python3 scripts/docs/c_api.py bindings-c/include/ferrolock.h "$SRC/api/c.md"

echo "== site (mkdocs build --strict: a broken link between pages fails it)"
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict -f mkdocs.yml

echo "== links"
python3 scripts/docs/check_links.py "$SITE"
echo "site: $SITE/index.html (or: python3 -m http.server -d $SITE)"
