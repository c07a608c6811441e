# Builds the Redis and Valkey servers the project is tested against, from source
# tarballs outside the repository: sourced, not run (by scripts/test-servers.sh and
# scripts/test.sh).
#
# The tarballs (redis-6.2.16.tar.gz, valkey-8.0.1.tar.gz, ...) are read from
# tests/servers/ (valkey-8.0.1, which the test command runs) or from
# $FERROLOCK_SERVER_SOURCES, by default ../shared/servers next to the repository.
# Each server is built once, with plain `make` (TLS on, so the TLS tests run too; no
# network), into target/servers/<name>-<version>/bin/, which holds redis-server and
# redis-cli (Valkey's valkey-server and valkey-cli, with redis-server and redis-cli
# links to them, as Valkey's own `make install` makes), so a suite finds the server
# by putting that bin/ first on PATH. A later run reuses the build; it is rebuilt
# only when missing.

SERVERS_DIR=${SERVERS_DIR:-$PWD/target/servers}

server_sources() {
  echo "${FERROLOCK_SERVER_SOURCES:-$PWD/../shared/servers}"
}

# Where NAME-VERSION's tarball is: the repository's own copy (tests/servers/, checked
# against its SHA256SUMS), else server_sources().
server_tarball() {
  local id=$1
  if [ -f "$PWD/tests/servers/$id.tar.gz" ]; then
    (cd "$PWD/tests/servers" && grep " $id.tar.gz\$" SHA256SUMS | sha256sum --check --quiet) >&2 || return 1
    echo "$PWD/tests/servers/$id.tar.gz"
  else
    echo "$(server_sources)/$id.tar.gz"
  fi
}

# The bin/ directory of a built server (whether built yet or not).
server_bin() {
  echo "$SERVERS_DIR/$1/bin"
}

# build_server NAME-VERSION: builds it unless already built; prints nothing when
# cached, else one line with the build time. Fails, saying where it looked, when
# the tarball is missing.
build_server() {
  local id=$1 bin
  bin=$(server_bin "$id")
  [ -x "$bin/redis-server" ] && return 0
  local tarball
  tarball=$(server_tarball "$id") || { echo "cannot build $id: tests/servers/$id.tar.gz does not match tests/servers/SHA256SUMS" >&2; return 1; }
  if [ ! -f "$tarball" ]; then
    echo "cannot build $id: no $tarball." >&2
    echo "The server source tarballs live outside the repository (the developers' guide hands them over);" >&2
    echo "set FERROLOCK_SERVER_SOURCES to the directory holding $id.tar.gz." >&2
    return 1
  fi
  local work start
  start=$SECONDS
  mkdir -p "$SERVERS_DIR"
  work=$(mktemp -d "$SERVERS_DIR/.build-$id.XXXXXX")
  tar -C "$work" -xzf "$tarball"
  if ! make -C "$work/$id" -j"$(nproc)" BUILD_TLS=yes >"$work/make.log" 2>&1; then
    echo "building $id failed; the last lines of $work/make.log:" >&2
    tail -n 30 "$work/make.log" >&2
    return 1
  fi
  # Valkey names its binaries valkey-*; its `make install` links redis-* to them,
  # the names the suites run.
  local flavour=redis
  [ -x "$work/$id/src/valkey-server" ] && flavour=valkey
  mkdir -p "$work/bin"
  cp "$work/$id/src/$flavour-server" "$work/$id/src/$flavour-cli" "$work/bin/"
  if [ $flavour = valkey ]; then
    ln -s valkey-server "$work/bin/redis-server"
    ln -s valkey-cli "$work/bin/redis-cli"
  fi
  rm -rf "$SERVERS_DIR/$id"
  mkdir -p "$SERVERS_DIR/$id"
  mv "$work/bin" "$SERVERS_DIR/$id/bin"
  rm -rf "$work"
  echo "built $id in $((SECONDS - start))s"
}
