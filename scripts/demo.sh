#!/usr/bin/env bash
# The main job: builds what the demo needs on a fresh machine (scripts/build.sh),
# then runs `ferrolock demo`: workers in Rust, Python, Node and C contend on one
# lock on a scratch redis-server. Arguments go to `ferrolock demo`
# (e.g. --seconds 30, --url redis://host:6379).
#
# The build's output goes to a log file (FERROLOCK_DEMO_LOG, default
# target/demo-build.log); the terminal gets one line per build step, and the
# log's last lines if the build fails. FERROLOCK_PROFILE (default release: the
# demo shows hand-off times) and FERROLOCK_DEMO_BUILD (the build command, default
# `bash scripts/build.sh`; its lines starting "== " are the steps) are for tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export FERROLOCK_PROFILE="${FERROLOCK_PROFILE:-release}"
build="${FERROLOCK_DEMO_BUILD:-bash scripts/build.sh --demo}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
log="${FERROLOCK_DEMO_LOG:-$target/demo-build.log}"
mkdir -p "$(dirname "$log")"

echo "Building the ferrolock CLI, the four workers and their bindings ($FERROLOCK_PROFILE; full output in $log)"
started=$SECONDS
# build.sh announces each step with a line starting "== "; those reach the terminal,
# and cargo's progress as a count of compiled crates every 25 (with the time so far).
progress() {
  local line crates=0 start=$SECONDS
  while IFS= read -r line; do
    if [[ $line =~ ^==\ (build[^:]*:\ )?(.*)$ ]]; then
      echo "  building ${BASH_REMATCH[2]}"
    elif [[ $line =~ ^\ *Compiling\  ]] && (( ++crates % 25 == 0 )); then
      echo "    $crates crates compiled ($((SECONDS - start)) s)"
    fi
  done
}
if ! $build 2>&1 | tee "$log" | progress; then
    echo "The build failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
echo "Built in $((SECONDS - started)) s."
echo
exec "$target/$FERROLOCK_PROFILE/ferrolock" demo "$@"
