//! The command line as clap reads it: the subcommands, their options and the
//! duration parsers, with the help text (main.rs dispatches).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::exit;

mod elect;
mod help;
mod top;

use help::{ABOUT, EXAMPLES, RUN_HELP};
pub(crate) use elect::{ElectArgs, LeaderArgs};
pub(crate) use top::TopArgs;

#[derive(Parser)]
#[command(name = "ferrolock", version, about = ABOUT, after_help = format!("{EXAMPLES}\n\n{}", exit::TABLE))]
pub(crate) struct Cli {
    /// Redis URL: redis://[user:password@]host[:port][/db] (rediss:// for TLS),
    /// redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>] or
    /// redis+cluster://[user:password@]host:port[,host:port...] (see below)
    /// [default: $REDIS_URL, else redis://127.0.0.1:6379]. Repeat it (or separate URLs
    /// by commas) for several independent masters: a Redlock over them (see below)
    #[arg(long, value_name = "URL")]
    pub(crate) url: Vec<String>,

    /// Sentinel only: the user name for the sentinels themselves (the URL's user and
    /// password are the data nodes'). Their password comes from
    /// $FERROLOCK_SENTINEL_PASSWORD, never from an option: other users can see a command line
    #[arg(long, global = true, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) sentinel_username: Option<String>,

    /// Sentinel and Cluster: how many of the master's replicas must acknowledge an
    /// acquire: off, one, majority (floor(n/2)+1 of the n replicas the master should
    /// have) or all; exit 76 when fewer did within --replica-ack-timeout, or when the
    /// master has none [default: one]
    #[arg(long, global = true, value_name = "POLICY", value_parser = parse_replica_ack)]
    pub(crate) replica_ack: Option<ferrolock::ReplicaAck>,

    /// Sentinel and Cluster: do not wait for replicas to acknowledge the acquire (the
    /// same as --replica-ack off)
    #[arg(long, global = true, conflicts_with = "replica_ack")]
    pub(crate) no_replica_ack: bool,

    /// Sentinel and Cluster: count only replicas that fsynced the acquire to their
    /// append-only file (WAITAOF, Redis 7.2 or later; an older server fails the acquire
    /// with a message naming its version)
    #[arg(long, global = true, conflicts_with = "no_replica_ack")]
    pub(crate) replica_ack_aof: bool,

    /// Sentinel and Cluster: how long an acquire waits for its replicas to acknowledge
    /// it, in seconds (0.001 to 600) [default: 1]
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_replica_ack_timeout,
          allow_negative_numbers = true, conflicts_with = "no_replica_ack")]
    pub(crate) replica_ack_timeout: Option<Duration>,

    /// Names this process's Redis connections `ferrolock:<client id>:NAME` (CLIENT SETNAME),
    /// so that CLIENT LIST tells which application holds which connection: 1 to 64 of
    /// A-Z a-z 0-9 . _ - [default: $FERROLOCK_APP_NAME; without it `ferrolock:<client id>`]
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) app_name: Option<String>,

    /// Refused with a pointer to $FERROLOCK_SENTINEL_PASSWORD (hidden: only there so
    /// that the mistake gets a useful message).
    #[arg(long, global = true, hide = true, value_name = "PASSWORD")]
    pub(crate) sentinel_password: Option<String>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    Run(RunArgs),
    Status(StatusArgs),
    Unlock(UnlockArgs),
    Latch(LatchArgs),
    Top(TopArgs),
    Demo(DemoArgs),
    Elect(ElectArgs),
    Leader(LeaderArgs),
}

/// Run CMD while holding lock NAME; exit with CMD's status.
#[derive(Args)]
#[command(
    override_usage = "ferrolock run [OPTIONS] <NAME> [--] <CMD> [ARGS]...\n       ferrolock run [OPTIONS] <NAME> -c <SHELL_COMMAND>",
    after_help = format!("{RUN_HELP}\n\n{}", exit::TABLE)
)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Lock name (the Redis key; Redisson's RLock/RFencedLock of the same name excludes it too)
    pub(crate) name: OsString,

    /// Give up after waiting SECS (fractions allowed; 0 = try once) [default: wait forever]
    #[arg(short, long, value_name = "SECS", value_parser = parse_wait, allow_negative_numbers = true)]
    pub(crate) wait: Option<Duration>,

    /// Do not wait: the same as --wait 0
    #[arg(short = 'n', long, conflicts_with = "wait")]
    pub(crate) nonblock: bool,

    /// Hold the lock at most SECS, with no renewal: if CMD runs longer it loses the lock
    /// (exit 75) [default: renewed by the watchdog for as long as CMD runs]
    #[arg(long, value_name = "SECS", value_parser = parse_lease, allow_negative_numbers = true)]
    pub(crate) lease: Option<Duration>,

    /// Lease of the watchdog-renewed lock, renewed every third of it: how long the lock
    /// outlives a crashed or cut-off ferrolock [default: 30]
    #[arg(long, value_name = "SECS", value_parser = parse_watchdog, allow_negative_numbers = true, conflicts_with = "lease")]
    pub(crate) watchdog: Option<Duration>,

    /// Take the lock as a fenced lock: CMD gets its fencing token (strictly increasing
    /// per lock name) in FERROLOCK_TOKEN. One URL only: a Redlock has no token
    #[arg(long)]
    pub(crate) fenced: bool,

    /// With several URLs: take the lock on every one of them (a MultiLock) instead of a
    /// majority (a Redlock); any master down then fails the run (exit 69)
    #[arg(long, conflicts_with = "fenced")]
    pub(crate) all: bool,

    /// Take the read side of the read-write lock NAME (Redisson's RReadWriteLock), shared
    /// with other --shared runs and readers, like `flock -s`. One URL only
    #[arg(long, conflicts_with_all = ["fenced", "all", "exclusive", "fair", "semaphore"])]
    pub(crate) shared: bool,

    /// Take the write side of the read-write lock NAME: alone, no reader inside, like
    /// `flock -x`. One URL only
    #[arg(long, conflicts_with_all = ["fenced", "all", "fair", "semaphore"])]
    pub(crate) exclusive: bool,

    /// Take the fair lock NAME (Redisson's RFairLock): waiters get it in the order they
    /// came, across machines. One URL only
    #[arg(long, conflicts_with_all = ["fenced", "all", "semaphore"])]
    pub(crate) fair: bool,

    /// Hold one of N permits of the semaphore NAME (Redisson's RSemaphore) instead of a
    /// lock: at most N such commands run at once. A semaphore that does not exist yet gets
    /// N permits; an existing one is left as it is. One URL only; no --lease/--watchdog
    /// (permits have no lease: see below)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64),
          conflicts_with_all = ["fenced", "all", "lease", "watchdog", "kill_after"])]
    pub(crate) semaphore: Option<u64>,

    /// Exit status when the lock was not acquired within --wait
    #[arg(short = 'E', long, value_name = "N", default_value_t = exit::CONFLICT as u8)]
    pub(crate) conflict_exit_code: u8,

    /// After the lock is lost (or ferrolock died) and CMD got SIGTERM, send SIGKILL if it
    /// still runs after SECS [default: wait for CMD however long it takes]
    #[arg(long, value_name = "SECS", value_parser = parse_wait, allow_negative_numbers = true)]
    pub(crate) kill_after: Option<Duration>,

    /// Keep the lock until SECS after it was acquired even when CMD ends sooner (by a
    /// fixed lease for the rest: nothing keeps running): with -n on every host of a
    /// cron job, a host whose clock or cron fires up to SECS late finds it held and skips.
    /// One URL only
    #[arg(long, value_name = "SECS", value_parser = parse_lease, allow_negative_numbers = true, conflicts_with_all = ["semaphore", "shared"])]
    pub(crate) min_hold: Option<Duration>,

    /// Run SHELL_COMMAND with `sh -c` instead of CMD, like `flock -c` (CMD and -c exclude each other)
    #[arg(short = 'c', long = "command", value_name = "SHELL_COMMAND", conflicts_with = "command")]
    pub(crate) shell: Option<OsString>,

    /// The command to run and its arguments (put them after `--` when they start with `-`)
    #[arg(value_name = "CMD", required_unless_present = "shell", num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) command: Vec<OsString>,
}

/// Show what NAME is (a lock of any kind, a semaphore or a latch), who holds it or
/// how many permits or counts are left, and who waits.
#[derive(Args)]
#[command(after_help = "\
NAME's kind is told from its keys, as Redisson lays them out: a hash with a `mode`
field is a read-write lock (its mode, read or write, is shown, and its waiters are
the clients on its own channel); a lock with a queue (redisson_lock_queue:{NAME}) is
a fair lock, shown with its queue in order (a fair lock nobody waits for looks like
any lock); a number with permits out in {NAME}:timeout is a permit-expirable
semaphore, shown with each permit's id and lease; any other number is a semaphore
(its free permits) or a count-down latch (its count): 0 free permits, or clients
waiting on one's channel, tell which; otherwise it is shown as either, and --kind
says which it is. --kind reads NAME as that kind (65 when its key is of another
type). Kinds are told the same way on one server, behind Sentinel and on a
Cluster (core's Client::inspect reads them). --check is for
locks of every kind; on a semaphore or latch it is a usage error (2).

--json adds \"kind\" to a lock's fields below (\"lock\", \"fair_lock\" with \"queue\": [owner,
...] and \"waiters\" its length, \"read_write_lock\" with \"mode\": \"read\"|\"write\"|null); others are
  {\"name\": \"gpu\", \"kind\": \"semaphore\", \"free\": 2, \"waiters\": 0}
  {\"name\": \"quota\", \"kind\": \"permit_expirable_semaphore\", \"free\": 1,
   \"out\": [{\"id\": \"<32 hex digits>\", \"lease_left_ms\": 5400}], \"waiters\": 0}   (null: no lease)
  {\"name\": \"ready\", \"kind\": \"count_down_latch\", \"count\": 2, \"open\": false, \"waiters\": 1}
  {\"name\": \"n\", \"kind\": \"semaphore_or_latch\", \"value\": 3}

For a lock, it shows: held or free; each holder (owner field <client-id>:<holder-id>) with its
hold count; the remaining lease; the number of clients subscribed to the lock's
release channel (each client with at least one waiter counts once); the last
fencing token handed out for NAME; a holder that stored who it is (a `ferrolock run`
stores its host, pid and command) is shown with it. Exits 0 whether the lock is held
or free; with --check, 0 when held and 1 when free, so a script can test it:
  if ferrolock status --check deploy >/dev/null; then echo busy; fi
Errors keep their codes either way (69 unreachable, 77 refused by an ACL, ...).

With several URLs (a Redlock's masters), it shows that for each server, headed by
its URL (password masked), after a line saying on how many it is held; a server
that cannot be read shows its error, and the exit status is then that error's
(69 when unreachable). With --check it is 0 when held on a majority (N/2 + 1), 1
when free on enough servers that no majority can hold it, and the first error's
code when the servers that answered cannot tell. --json then prints
  {\"name\": \"deploy\", \"locked_on\": 2, \"servers\": [{\"url\": \"redis://a:6379\",
   \"locked\": true, ...the fields below...}, {\"url\": \"redis://c:6379\", \"error\": \"...\"}]}

--json prints one line:
  {\"name\": \"deploy\", \"kind\": \"lock\", \"locked\": true, \"holders\": [{\"owner\": \"…:1\", \"count\": 1,
   \"info\": {\"host\": \"web1\", \"pid\": 4242, \"cmd\": \"./deploy.sh\", \"renewed\": true}}],
   \"remaining_lease_ms\": 29417, \"waiters\": 1, \"last_token\": 12, \"eviction_policy\": null}
remaining_lease_ms is null when the lock is free and -1 when it has no expiry;
last_token is null when NAME was never taken as a fenced lock; a holder's info is
null when it stored none, an object when it stored a JSON object (as `ferrolock run`
does: renewed is false under --lease), its text otherwise. Every kind's JSON has
eviction_policy: the server's maxmemory-policy when it may evict NAME's keys
(maxmemory set and a policy other than noeviction: a held lock can vanish), else
null; the text then ends with an \"eviction: WARNING: ...\" line.

Examples:
  ferrolock status deploy
  ferrolock status deploy --json | jq .holders
  ferrolock status --check deploy >/dev/null; echo $?   # 0 held, 1 free")]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Name of the lock, semaphore or latch
    pub(crate) name: OsString,

    /// Print the status as JSON (see below)
    #[arg(long)]
    pub(crate) json: bool,

    /// Exit status for scripts: 0 when the lock is held, 1 when it is free (errors keep
    /// their codes: 69 unreachable, ...). The status is still printed. Locks only
    #[arg(long)]
    pub(crate) check: bool,

    /// Read NAME as this kind instead of telling it from the keys (needed to tell a
    /// semaphore from a count-down latch when nothing else does)
    #[arg(long, value_enum, value_name = "KIND")]
    pub(crate) kind: Option<StatusKind>,
}

/// What `status --kind` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StatusKind {
    /// A lock (RLock, RFencedLock)
    Lock,
    /// A fair lock (RFairLock)
    Fair,
    /// A read-write lock (RReadWriteLock)
    ReadWrite,
    /// A semaphore (RSemaphore)
    Semaphore,
    /// A permit-expirable semaphore (RPermitExpirableSemaphore)
    PermitSemaphore,
    /// A count-down latch (RCountDownLatch)
    Latch,
}

/// Set, count down or wait for the count-down latch NAME.
#[derive(Args)]
#[command(
    group(clap::ArgGroup::new("action").required(true).args(["count", "count_down", "wait"])),
    after_help = "\
A count-down latch (Redisson's RCountDownLatch) is open when its count is 0 (it then
does not exist in Redis). Scripts use it to wait until N services are ready:
  ferrolock latch ready --count 3                 # once, before the services start
  ferrolock latch ready --count-down              # each service, when it is ready
  ferrolock latch ready --wait --timeout 60 && ./start-frontend.sh

--count N sets the count of an open latch and prints `set NAME to N`; a latch still
counting down keeps its count (stderr says how much is left) and the exit status is 1.
--count-down prints the count left (0: it is open now, or was already).
--wait returns as soon as the latch is open (woken by Redis, no polling) and prints
`open`; with --timeout it gives up after SECS with exit status 1.

Exit status: 0 done (set, counted down, open); 1 not set (still counting down) or
still counting down at --timeout; 2 usage error (also several URLs); 65 the key at
NAME is not a latch; 69 Redis unavailable; 77 refused by an ACL; 128+N a signal
stopped the wait."
)]
pub(crate) struct LatchArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Latch name
    pub(crate) name: OsString,

    /// Set the count to N (1 or more) if the latch is open
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64))]
    pub(crate) count: Option<u64>,

    /// Count down by one
    #[arg(long)]
    pub(crate) count_down: bool,

    /// Wait until the latch is open
    #[arg(long)]
    pub(crate) wait: bool,

    /// With --wait: give up after SECS (fractions allowed) with exit status 1 [default: wait forever]
    #[arg(long, value_name = "SECS", value_parser = parse_wait, allow_negative_numbers = true, conflicts_with_all = ["count", "count_down"])]
    pub(crate) timeout: Option<std::time::Duration>,
}

/// Break lock NAME whoever holds it, and wake its waiters.
#[derive(Args)]
#[command(after_help = "\
The holder loses the lock: a `ferrolock run` holder sends SIGTERM to its command
and exits 75; other ferrolock and Redisson clients report the hold as lost. Prints
`unlocked NAME` or `NAME was not locked` and exits 0 either way. With several URLs
it unlocks NAME on each (`unlocked NAME on URL`), and exits with the first failure's
status if a server could not be reached.

Example:
  ferrolock status deploy && ferrolock unlock --force deploy")]
pub(crate) struct UnlockArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Lock name
    pub(crate) name: OsString,

    /// Required: confirms that the current holder may lose the lock mid-work
    #[arg(long)]
    pub(crate) force: bool,
}

/// Watch workers in several languages hand a lock over on Redis.
#[derive(Args)]
#[command(after_help = "\
Uses --url or $REDIS_URL when given; otherwise starts a scratch redis-server of its own.
The workers connect with the URL alone: the Sentinel options are not used here.

The workers are those of the repository this binary was built from (an installed
`cargo install --path cli` binary too), built by `bash scripts/build.sh` with
FERROLOCK_PROFILE set to this binary's profile (release for an installed one);
when something is missing the demo lists it with that command before starting.
`bash scripts/demo.sh` builds everything and runs the demo.

The end shows the table, the hand-off times, the checks (no lost update, fencing
tokens in order), one line per term, a timeline of who held the lock (one row per
language, one character per time slice) and a histogram of the waits. Then a second
act, for half as long: the same workers share a semaphore of 3 permits (each takes
one, stays inside 2 ms, gives it back), and the demo shows how often each language
was inside, the most inside at once (never more than 3), that every permit came
back, and a line of how many were inside at once over time.

Example:
  ferrolock demo --seconds 5")]
pub(crate) struct DemoArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// How long the demo runs, in seconds (1 to 3600)
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) seconds: u64,

    /// Directory with the worker launchers [default: tests/workers of the repository this binary was built from]
    #[arg(long, value_name = "DIR")]
    pub(crate) workers: Option<PathBuf>,

    /// Keep the workers' section logs (DIR/<n>-<language>.log, one line per critical
    /// section: TOKEN WAIT_FROM_NS ACQUIRED_NS RELEASED_NS; the second act's in
    /// DIR/permits-<n>-<language>.log) and the counter file in DIR
    #[arg(long, value_name = "DIR")]
    pub(crate) logs: Option<PathBuf>,
}

pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    let max = ferrolock::validate::MAX_DURATION.as_secs();
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && (0.0..=max as f64).contains(&secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("give a number of seconds from 0 to {max} (7 days), like 5 or 0.5")),
    }
}

pub(crate) fn parse_wait(text: &str) -> Result<Duration, String> {
    parse_seconds(text)
}

pub(crate) fn parse_lease(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        lease if lease < ferrolock::validate::MIN_LEASE => Err("a lease must be at least 0.001 s".to_string()),
        lease => Ok(lease),
    }
}

pub(crate) fn parse_replica_ack(text: &str) -> Result<ferrolock::ReplicaAck, String> {
    text.parse().map_err(|_| "give off, one, majority or all".to_string())
}

pub(crate) fn parse_replica_ack_timeout(text: &str) -> Result<Duration, String> {
    // The client's range: WAIT takes whole milliseconds, and 10 min is already no answer.
    const MAX: Duration = Duration::from_secs(600);
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.001 && secs <= MAX.as_secs_f64() => Ok(Duration::from_secs_f64(secs)),
        _ => Err("give a number of seconds from 0.001 to 600, like 1 or 0.25".to_string()),
    }
}

pub(crate) fn parse_watchdog(text: &str) -> Result<Duration, String> {
    // The client's lower bound: renewing every 10 ms is already a lot of traffic.
    match parse_seconds(text)? {
        lease if lease < Duration::from_millis(30) => Err("the watchdog lease must be at least 0.03 s".to_string()),
        lease => Ok(lease),
    }
}

/// `--url` after the subcommand. Not a global option: clap would let the values after
/// the subcommand replace those before it, and several URLs must add up.
#[derive(Args)]
pub(crate) struct UrlArgs {
    /// Redis URL (see `ferrolock --help`); repeat it for several independent masters
    /// (a Redlock). Adds to the --url given before the subcommand
    #[arg(long = "url", value_name = "URL")]
    pub(crate) urls: Vec<String>,
}

/// Parses the command line; usage errors exit 2 with the `ferrolock:` prefix.
pub(crate) fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if err.use_stderr() => {
            let text = err.render().to_string();
            match text.strip_prefix("error: ") {
                Some(rest) => eprint!("ferrolock: {rest}"),
                None => eprint!("{text}"),
            }
            std::process::exit(exit::USAGE);
        }
        Err(err) => err.exit(), // --help, --version
    }
}

