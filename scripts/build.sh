#!/usr/bin/env bash
# Builds everything the demo and the cross-language tests run, from a fresh clone
# (FERROLOCK_PROFILE=debug, the default, for the tests; release for the demo; the
# Python extension is always a release build, pip's default):
# the `ferrolock` CLI, the Rust worker, libferrolock + the C worker, the Python
# binding into bindings-python/.venv, the Redisson interop driver and the Node
# addon. Installs missing tools.
#
#   bash scripts/build.sh          # everything the tests run
#   bash scripts/build.sh --demo   # only what `ferrolock demo` runs: the Rust parts in one
#                                  # cargo build (the Python extension and the Node addon
#                                  # too; release at opt-level 1), no Java, no npm or pip downloads
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
ensure_commands gcc:gcc make:make node:nodejs npm:npm
python3 -c 'import venv, ensurepip' 2>/dev/null || ensure_python_venv

profile="${FERROLOCK_PROFILE:-debug}"
case "$profile" in
  debug) cargo_profile=() ;;
  release) cargo_profile=(--release) ;;
  *) echo "FERROLOCK_PROFILE must be debug or release" >&2; exit 2 ;;
esac
target="${CARGO_TARGET_DIR:-$PWD/target}/$profile"

build_c_worker() {
  echo "== build: C worker"
  gcc -std=c11 -O2 -Wall -Wextra -Werror -Ibindings-c/include tests/workers/worker.c \
      -L"$target" -lferrolock_c -Wl,-rpath,"$target" -lpthread -o "$target/ferrolock-worker-c"
}

if [ "${1:-}" = --demo ]; then
  # One cargo invocation compiles the shared dependencies once for all five crates, and
  # only the targets the demo runs (not the tests crate's other programs). The extension
  # is built the way maturin builds it (no libpython linked). A release build here is at
  # opt-level 1 (FERROLOCK_DEMO_OPT_LEVEL) for the library, the workers and what a
  # hand-off runs (tokio, redis-rs, pyo3, napi, ...), and at 0 for the crates it does not
  # run (TLS, URL and argument parsing) and for this CLI's own code (it starts the workers
  # and reads their logs; the figures are the workers'). From a fresh clone on the
  # project's 2-core VM the first demo line came after 219 s (267 s with everything at 1,
  # 395 s at 3; everything at 0: 92 s, but a 3x slower hand-off misstates the library).
  # The demo names the levels it ran at; its artifacts sit beside opt-level 3's in
  # target/release/deps (cargo hashes the levels in).
  levels=()
  unset FERROLOCK_COLD_OPT_LEVEL # set below only when the cold crates really are built lower
  if [ "$profile" = release ]; then
    export CARGO_PROFILE_RELEASE_OPT_LEVEL="${FERROLOCK_DEMO_OPT_LEVEL:-1}"
    if [ "$CARGO_PROFILE_RELEASE_OPT_LEVEL" != 3 ]; then
      # Read by cli/build.rs for the demo's "measured with" line.
      export FERROLOCK_COLD_OPT_LEVEL=0
      for crate in ferrolock-cli clap clap_builder clap_lex anstyle rustls rustls-webpki rustls-pki-types \
          rustls-native-certs openssl-probe ring untrusted subtle zeroize url form_urlencoded idna idna_adapter \
          utf8_iter icu_collections icu_locale_core icu_normalizer icu_normalizer_data icu_properties \
          icu_properties_data icu_provider zerovec zerotrie yoke tinystr writeable litemap potential_utf \
          regex-automata regex-syntax matchers semver unicode-segmentation libloading; do
        levels+=(--config "profile.release.package.$crate.opt-level=$FERROLOCK_COLD_OPT_LEVEL")
      done
    fi
  fi
  echo "== build ($profile${CARGO_PROFILE_RELEASE_OPT_LEVEL:+ at opt-level $CARGO_PROFILE_RELEASE_OPT_LEVEL}${FERROLOCK_COLD_OPT_LEVEL:+, crates a hand-off does not run at $FERROLOCK_COLD_OPT_LEVEL}, one cargo build): ferrolock CLI, Rust worker, libferrolock, Node addon, Python extension"
  PYO3_BUILD_EXTENSION_MODULE=1 cargo build "${cargo_profile[@]}" "${levels[@]}" \
      -p ferrolock-cli -p ferrolock-tests -p ferrolock-c -p ferrolock-node -p ferrolock-python \
      --lib --bin ferrolock --bin ferrolock-worker
  build_c_worker
  echo "== build: Node addon (bindings-node/ferrolock.node, the loader's local build)"
  cp "$target/libferrolock_node.so" bindings-node/ferrolock.node
  echo "== build: Python binding (into bindings-python/.venv, the extension from the same build)"
  venv=bindings-python/.venv
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$site/ferrolock"
  cp -r bindings-python/python/ferrolock/. "$site/ferrolock/"
  cp "$target/libferrolock_python.so" "$site/ferrolock/_native.abi3.so"
  exit 0
fi

echo "== build ($profile): ferrolock CLI, Rust worker, libferrolock"
cargo build "${cargo_profile[@]}" -p ferrolock-cli -p ferrolock-tests -p ferrolock-c

build_c_worker

echo "== build: Python binding (bindings-python/.venv)"
bash bindings-python/build.sh

echo "== build: Redisson interop driver (Java, Redisson 4.7.0 and 3.52.0 from Maven Central)"
bash tests/redisson/build.sh

echo "== build: Node addon"
if [ -n "${FERROLOCK_NODE_ADDON:-}" ]; then
  # scripts/test.sh: the addon scripts/package.sh built (bindings-node/test.sh copied it
  # to bindings-node/ferrolock.node too), not a build of its own.
  echo "the packaged addon $FERROLOCK_NODE_ADDON (no build)"
  cp "$FERROLOCK_NODE_ADDON" bindings-node/ferrolock.node.tmp && mv bindings-node/ferrolock.node.tmp bindings-node/ferrolock.node
else
  (cd bindings-node && npm install --no-fund --no-audit --no-package-lock --loglevel=error && FERROLOCK_NODE_PROFILE="$profile" node scripts/build.js)
fi
