//! `ferrolock elect` and `ferrolock leader`: their options and help.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;

use super::{parse_wait, parse_watchdog, UrlArgs};

/// Run CMD while this process leads election NAME; campaign again when it ends.
#[derive(Args)]
#[command(
    override_usage = "ferrolock elect [OPTIONS] <NAME> [--] <CMD> [ARGS]...",
    after_help = "\
Every process running `ferrolock elect NAME -- CMD` is a candidate; one at a time
leads and runs CMD. Leading is holding the fenced lock NAME (Redisson's RLock or
RFencedLock of that name excludes it, and is excluded), renewed by the watchdog
(--watchdog, default 30 s) while CMD runs. CMD gets FERROLOCK_LOCK (NAME) and
FERROLOCK_TERM (the leadership's term: the lock's fencing token, larger than every
earlier leader's; also in FERROLOCK_TOKEN) in its environment: pass the term to
whatever the leader writes, so that a stale leader's writes can be refused.

A campaign waits for the leader to resign (woken by Redis at once) or, when the
leader died, for its lease to run out: a new leader within the watchdog lease plus
one renewal interval of a leader's death. The leader stores its host, pid and CMD
beside the lock at once: `ferrolock leader NAME` shows it.

If leadership is lost while CMD runs (the lock expired, was force-unlocked, Redis
lost it), CMD gets SIGTERM (and SIGKILL after --kill-after, if given) and, once it
ended, ferrolock campaigns again (--once: exits 75). When CMD exits by itself,
ferrolock resigns (another candidate leads at once) and campaigns again after
--restart-delay (--once: exits with CMD's status). SIGINT, SIGTERM, SIGHUP and
SIGQUIT are passed to CMD while it runs; once it ended, ferrolock resigns and exits
with CMD's status (while campaigning they stop the campaign: exit 128+N, nothing
held). SIGUSR1 and SIGUSR2 are only passed on. A campaign that meets Redis down
(after the first) is tried again every second until Redis answers.

Examples:
  ferrolock elect scheduler -- ./scheduler --term-from-env
  ferrolock elect --watchdog 10 --kill-after 5 consumer -- ./consume.sh
  ferrolock elect --once migrate -- ./migrate.sh   # one leader runs it, once")]
pub(crate) struct ElectArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Election name (the lock's name)
    pub(crate) name: OsString,

    /// Lease of the leadership, renewed every third of it while CMD runs: how long a
    /// crashed or cut-off leader keeps the others waiting [default: 30]
    #[arg(long, value_name = "SECS", value_parser = parse_watchdog, allow_negative_numbers = true)]
    pub(crate) watchdog: Option<Duration>,

    /// After leadership is lost and CMD got SIGTERM, send SIGKILL if it still runs after
    /// SECS [default: wait for CMD however long it takes]
    #[arg(long, value_name = "SECS", value_parser = parse_wait, allow_negative_numbers = true)]
    pub(crate) kill_after: Option<Duration>,

    /// Lead once: exit with CMD's status when it ends (75 when leadership was lost)
    #[arg(long)]
    pub(crate) once: bool,

    /// After CMD exited by itself and ferrolock resigned, wait SECS before campaigning
    /// again (a CMD that fails at once does not spin) [default: 1]
    #[arg(long, value_name = "SECS", value_parser = parse_wait, allow_negative_numbers = true, conflicts_with = "once")]
    pub(crate) restart_delay: Option<Duration>,

    /// The command to run while leading, and its arguments (after `--` when they start with `-`)
    #[arg(value_name = "CMD", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) command: Vec<OsString>,
}

/// Show who leads election NAME (and each change with --watch).
#[derive(Args)]
#[command(after_help = "\
Prints the leader's term and who it is (its note: app, host, pid, label or command,
and for how long it has led), or `no leader`. With --watch it prints who leads now,
then one line per change (a new leader, or `no leader` when one resigned or its
lease ran out), until interrupted: it is woken by Redis (a new leader's announcement,
a release) and by the current leader's lease end, never by polling.

--json prints one object per line:
  {\"name\": \"scheduler\", \"leader\": {\"term\": 7, \"owner\": \"…:1\", \"info\": {\"host\":
   \"web1\", \"pid\": 4242, \"cmd\": \"./scheduler\", \"since\": 1767000000000, \"term\": 7},
   \"description\": \"web1 pid 4242 for 5 s: ./scheduler\", \"held_for_ms\": 5012,
   \"lease_left_ms\": 29000}}
  {\"name\": \"scheduler\", \"leader\": null}
held_for_ms is null in a change told by the new leader's announcement (it just
began); lease_left_ms is null for a lock without expiry.

Exit status: 0 (with --watch: when interrupted, 130); 65 the key at NAME is not a
lock; 69 Redis unavailable; 77 refused by an ACL.

Examples:
  ferrolock leader scheduler
  ferrolock leader scheduler --watch --json | jq -c .leader.term")]
pub(crate) struct LeaderArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Election name
    pub(crate) name: OsString,

    /// Print each change of leader as it happens
    #[arg(long)]
    pub(crate) watch: bool,

    /// Print JSON (one object per line)
    #[arg(long)]
    pub(crate) json: bool,
}
