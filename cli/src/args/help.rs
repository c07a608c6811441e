//! The help texts of the command line (long enough to read better on their own).

pub(crate) const ABOUT: &str = "A distributed flock(1) on Redis: run a command while holding a lock that \
Redisson (Java) and ferrolock clients in Python, Node.js, C and Rust respect.";

pub(crate) const EXAMPLES: &str = "\
Examples:
  ferrolock run nightly-report -- ./report.sh --full    # wait as long as it takes
  ferrolock run -n deploy -- make deploy                 # give up at once if busy (exit 1)
  ferrolock --url redis://:secret@redis:6379 status deploy --json
  ferrolock unlock --force deploy
  ferrolock run --semaphore 3 gpu -- ./train.sh          # at most 3 at once
  ferrolock latch ready --wait --timeout 60              # until the services counted down
  ferrolock elect scheduler -- ./scheduler               # one leader among the hosts runs it
  ferrolock leader scheduler --watch                     # who leads, and each change
  ferrolock run -n --min-hold 60 nightly -- ./nightly.sh # cron on many hosts: once per tick
  FERROLOCK_SENTINEL_PASSWORD=... ferrolock --url redis+sentinel://s1,s2,s3/mymaster \\
      run nightly-report -- ./report.sh
  ferrolock --url redis://a:6379 --url redis://b:6379 --url redis://c:6379 \\
      run nightly-report -- ./report.sh                 # a Redlock over three masters

The Redis URL is --url, else $REDIS_URL, else redis://127.0.0.1:6379. It is one of
  redis://[user:password@]host[:port][/db]          one server (rediss:// for TLS)
  redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]
                                                    the master the sentinels name
                                                    (rediss+sentinel:// for TLS)
  redis+cluster://[user:password@]host:port[,host:port...]
                                                    a cluster (rediss+cluster:// for TLS)
A Sentinel URL's user and password are the data nodes'. The sentinels' own password
is read from $FERROLOCK_SENTINEL_PASSWORD: there is no option for it, since other
users on the machine can see a command line.

Several URLs (--url repeated, or comma-separated in one value or in $REDIS_URL) are
independent masters, one client each: run takes a Redlock over them (a majority,
N/2 + 1; --all: every one, a MultiLock), status shows the lock on each, unlock --force
breaks it on each. A master that does not answer counts against the quorum. There is
no fencing token over several masters (--fenced is refused). Redlock is not safe when
a master restarts without persistence before the lease ran out (restart it only
after the longest lease, or run it with appendonly yes + appendfsync always), when a
server clock jumps forward, or when the holder pauses longer than the lease.

Logs are off unless $RUST_LOG asks for them (a tracing filter, e.g. RUST_LOG=ferrolock=info):
reconnects and resubscribes at info, renewals that failed and lost holds at warn,
connection details at debug; on stderr, never with a password. Every connection is
named ferrolock:<client id>[:<app name>] (--app-name, else $FERROLOCK_APP_NAME), so
CLIENT LIST on the server tells which process holds which connection.";

pub(crate) const RUN_HELP: &str = "\
While waiting on a terminal, a status line shows the holder (with its host, pid
and command when it is a ferrolock run) and its lease: \"held, lease renewed\" while
a watchdog keeps renewing it, a countdown for an explicit lease; nothing is printed
when stderr is not a terminal (as in cron). While holding, ferrolock stores its
host, pid and command beside the lock (Redisson ignores it) for `status` to show,
kept as long as the hold and removed with it.

While CMD runs, the lock is renewed by a watchdog (or kept for the --lease) and
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to ferrolock are passed
to CMD (signals from the terminal reach CMD directly and are not sent twice). The
same signals received while still waiting stop the wait: exit 128+N, nothing held.
If the lock is lost while CMD runs (expired, force-unlocked, Redis lost it), CMD
gets SIGTERM (and SIGKILL after --kill-after, if given) and ferrolock exits 75.
If ferrolock itself dies while CMD runs (SIGKILL, the OOM killer), CMD gets SIGTERM
from the kernel (Linux) and, with --kill-after, SIGKILL that long after from a guard
process (`ferrolock __cmd-guard`, started with CMD): nothing renews the lock then.
If the lock cannot be released when CMD ends (Redis down or refusing, after a few
seconds of retries), ferrolock says so on stderr with how long the lock may stay
held (until its lease ends) and CMD's exit status, and exits 74.
Behind Sentinel (a redis+sentinel:// URL) and on a Cluster, an acquire also waits
until enough of the master's replicas have the lock (--replica-ack one, the
default; majority: floor(n/2)+1 of the n replicas the master should have; all;
--replica-ack-aof: fsynced to their AOF, WAITAOF, Redis 7.2 or later), for at most
--replica-ack-timeout (1 s by default): when too few acknowledged it, or the master
has no replica, the acquire is undone, CMD does not run and ferrolock exits 76
(retrying is safe); --no-replica-ack (--replica-ack off) turns this off.

With several URLs (--url repeated, or comma-separated in $REDIS_URL), the lock is a
Redlock over those independent masters, one client each: it is held once a
majority of them (N/2 + 1) is, within the lease minus the time spent acquiring,
and lost (CMD gets SIGTERM, exit 75) once fewer than that are still held. --all
needs every master (a MultiLock). A master that does not answer counts against the
quorum: with 1 of 3 down CMD still runs (with a warning on stderr), with 2 of 3
down (or any with --all) ferrolock exits 69 without running it. No fencing token:
--fenced takes one URL. Redlock's limits: a master restarted without persistence
before the lease ran out comes back empty and lets a second holder in (restart it
only after the longest lease, or run it with appendonly yes + appendfsync always);
a server clock jumping forward, or a pause longer than the lease, shortens the hold.

CMD gets FERROLOCK_LOCK (NAME) in its environment (and FERROLOCK_TOKEN with --fenced).
--min-hold SECS keeps the lock until SECS after it was acquired even if CMD ends
sooner: the lock is left with a fixed lease for the rest and ferrolock exits (nothing
keeps running). A cron job scheduled on several hosts runs once per tick when every
host runs it with -n and a --min-hold longer than the hosts' clock skew (and shorter
than the period minus that skew): a host whose cron fires late finds the lock held
and skips (exit 1, or -E 0 to skip quietly). See the guide \"Cron on many hosts\".

Other kinds (one URL each; they exclude each other and --fenced): --shared and
--exclusive take the read and the write side of the read-write lock NAME (many
--shared runs at once, or one --exclusive run), as flock -s / -x do on a file;
--fair takes the fair lock NAME, granted in the order the waiters came. All three
are renewed, lost and released like the plain lock. --semaphore N holds one of N
permits of the semaphore NAME: at most N such commands run at once. The semaphore
gets N permits when it does not exist yet; an existing one is used as it is (a
semaphore only stores its free permits, so a different N can be told only when
more than N are free: that is said on stderr). A permit is nobody's and has no
lease: it is given back when CMD ends, also after signals, but a ferrolock killed
with SIGKILL (or cut off from Redis at the end: exit 74) leaves the semaphore one
permit short until someone releases one.

Examples:
  ferrolock run backup -- tar czf /srv/backup.tgz /srv/data
  ferrolock run backup -c 'pg_dump app > /srv/app.sql'   # a shell command, like flock -c
  ferrolock run --wait 30 -E 0 cron-job -- ./job.sh   # skip quietly if busy for 30 s
  ferrolock run --fenced ledger -- sh -c 'write --fence \"$FERROLOCK_TOKEN\"'
  ferrolock run --lease 600 migrate -- ./migrate.sh   # never held longer than 10 min
  ferrolock run --url redis://a --url redis://b --url redis://c job -- ./job.sh   # Redlock
  ferrolock run --shared config -- ./read-config.sh   # with other readers
  ferrolock run --exclusive config -- ./rewrite-config.sh
  ferrolock run --semaphore 3 gpu -- ./train.sh       # at most 3 at once
  ferrolock run -n -E 0 --min-hold 30 report -- ./report.sh   # in every host's crontab";
