#!/usr/bin/env bash
# Cron on many hosts, measured (issue 42): two "hosts" run the same job every tick
# with `ferrolock run -n --min-hold MIN_HOLD`, each from a cron of its own whose clock
# is skewed by libfaketime (a new offset from 0 to SKEW seconds per host and tick, so
# the two fire up to SKEW apart), and the job writes the tick it ran for. Counts the
# runs of each tick: exactly one is the target.
#
#   bash scripts/cron-ticks.sh [TICKS]        # default 100 ticks
#
# The time scale is compressed 2.5x from the issue's setting (--min-hold 5, clocks up
# to 2 s apart): MIN_HOLD=2.0 s, SKEW=0.8 s, a tick every PERIOD=3.0 s (a tick must be
# longer than the minimum hold plus the skew), so 100 ticks take about 5 minutes. Not
# more: a host's ferrolock (a debug build) may start a few hundred ms late on a loaded
# machine, which the minimum hold must cover on top of the skew.
# Override with the environment: MIN_HOLD, SKEW, PERIOD, JOB (seconds the job runs,
# default 0.05: shorter than the skew, the case a plain lock gets wrong), FERROLOCK
# (the binary, default target/debug/ferrolock), APART (fixed offsets: host a that
# many seconds ahead, host b none). Prints one line per tick with both
# hosts' offsets, then "runs per tick: ..." and "exactly one run in N of N ticks";
# exits 1 otherwise. A tick that ran twice shows how far apart the runs started (by
# /proc/uptime, which libfaketime leaves alone): a run later than the minimum hold
# means a host's ferrolock itself started that late (a loaded machine: the compressed
# scale leaves it 1 s). tests/cron.rs runs it with a few ticks.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis_server
ensure_commands faketime:faketime
TICKS=${1:-100}
export MIN_HOLD=${MIN_HOLD:-2.0} SKEW=${SKEW:-0.8} PERIOD=${PERIOD:-3.0} JOB=${JOB:-0.05}
export FERROLOCK=${FERROLOCK:-$PWD/target/debug/ferrolock}
[ -x "$FERROLOCK" ] || cargo build -p ferrolock-cli
start_scratch_redis
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
python3 - "$TICKS" <<'EOF'
import os, random, subprocess, sys, tempfile, time

ticks = int(sys.argv[1])
min_hold, skew, period, job = (float(os.environ[k]) for k in ("MIN_HOLD", "SKEW", "PERIOD", "JOB"))
assert period > min_hold + skew, "a tick must be longer than the minimum hold plus the skew"
work = tempfile.mkdtemp()
log = os.path.join(work, "runs")
# Each host's cron: under its skewed clock, sleep until that clock reads the tick's
# time, then run the job under the lock, trying once.
cron = (
    'now=$(date +%s.%N); sleep $(python3 -c "print(max(0.0, $1 - $now))"); '
    'exec "$FERROLOCK" run -n --min-hold "$MIN_HOLD" cron-ticks -- '
    'sh -c "read up idle < /proc/uptime; echo $2 $3 \\$up >> $4; sleep $JOB"'
)
first = time.time() + 1.0
procs, offsets = [], []
for k in range(ticks):
    boundary = first + k * period
    # Start the hosts' crons half a tick ahead (ferrolock starts in milliseconds).
    time.sleep(max(0.0, boundary - period / 2 - time.time()))
    apart = os.environ.get("APART")
    if apart:  # fixed: host a fires APART s before host b (tests/cron.rs's control)
        offs = {"a": float(apart), "b": 0.0}
    else:
        offs = {host: random.uniform(0.0, skew) for host in ("a", "b")}
    offsets.append(offs)
    for host, off in offs.items():
        # A clock `off` ahead fires `off` early: the two fire up to SKEW apart.
        cmd = ["faketime", "-f", f"+{off:.3f}s", "sh", "-c", cron, "cron", f"{boundary:.6f}", str(k), host, log]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
codes = [p.wait() for p in procs]
said = [(c, p.stderr.read().decode().strip()) for p, c in zip(procs, codes)]
# A skip (exit 1 under -n) says nothing when stderr is not a terminal: anything said is news.
for code, text in said:
    if text:
        print(f"ferrolock (exit {code}): {text}")
if any(c not in (0, 1) for c, _ in said):
    sys.exit(1)
runs = {k: [] for k in range(ticks)}
started = {k: [] for k in range(ticks)}
for line in open(log).read().split("\n"):
    if line:
        k, host, uptime = line.split()
        runs[int(k)].append(host)
        started[int(k)].append(float(uptime))  # /proc/uptime: a clock libfaketime leaves alone
for k in range(ticks):
    a, b = offsets[k]["a"], offsets[k]["b"]
    gap = f" (the runs {max(started[k]) - min(started[k]):.3f} s apart)" if len(started[k]) > 1 else ""
    print(f"tick {k:3}: host a {a:+.3f} s, host b {b:+.3f} s (apart {abs(a - b):.3f} s): ran on {','.join(runs[k]) or 'none'}{gap}")
counts = [len(runs[k]) for k in range(ticks)]
exact = sum(1 for c in counts if c == 1)
spread = max(abs(o["a"] - o["b"]) for o in offsets)
print(f"runs per tick: {dict(sorted({c: counts.count(c) for c in set(counts)}.items()))} "
      f"(min-hold {min_hold} s, skew up to {skew} s, largest apart {spread:.3f} s, tick {period} s, job {job} s)")
print(f"exactly one run in {exact} of {ticks} ticks")
sys.exit(0 if exact == ticks else 1)
EOF
