//! `ferrolock top`'s options and help.

use std::ffi::OsString;

use clap::Args;

use super::UrlArgs;

/// A live view of every lock, semaphore and latch under PREFIX, refreshed every second.
#[derive(Args)]
#[command(after_help = "\
Lists every lock-family object whose name starts with PREFIX (all of them without
one): locks (fenced, fair and read-write too), semaphores, permit-expirable
semaphores and count-down latches, found with SCAN on the server, on Sentinel's
master or on every master of a Cluster, and told apart from their keys as `status`
does. One line each:

  NAME  KIND  STATE  HELD  LEASE  WAITERS  WAITING  TOKEN  HOLDERS

KIND is lock, fenced_lock, fair_lock, read_write_lock, semaphore,
permit_expirable_semaphore, count_down_latch or semaphore_or_latch; STATE is held or
free (read or write for a read-write lock), free:N for a semaphore's free permits,
count:N or open for a latch, value:N for a number nothing tells; HELD is how long top has seen the current holders (a permit's
holders are its ids); LEASE the time left on the lease (never: no expiry); WAITERS
the clients waiting (a fair lock's queue, else the clients subscribed to its
channel); WAITING how long top has seen waiters there; TOKEN the last fencing token;
HOLDERS each holder's note (a `ferrolock run`: host, pid and command; else what the
holder stored with set_holder_info) or its owner field. Sorted by the longest wait,
then the longest hold, then the name. '-' is nothing (or not seen yet).

Keys: q (or Ctrl-C) quits; / filters: type text, the lines whose name, kind or
holders contain it stay (Enter keeps the filter, Esc clears it).

--once prints one screen (no terminal needed) and exits; --json prints the same data
once, as one JSON line:
  {\"prefix\": \"jobs:\", \"objects\": [{\"name\": \"jobs:1\", \"kind\": \"lock\", \"state\": \"held\",
   \"holders\": [{\"owner\": \"…:1\", \"count\": 1, \"info\": {\"host\": \"web1\", \"pid\": 4242, \"cmd\": \"./job\"}}],
   \"held_for_ms\": null, \"lease_left_ms\": 29417, \"waiters\": 1, \"waiting_for_ms\": null,
   \"last_token\": null, \"permits\": null, \"count\": null}]}
(held_for_ms and waiting_for_ms are what a live view has seen: null in one snapshot;
lease_left_ms is -1 without expiry.)

Exit status: 0; 2 usage error (several URLs, no terminal without --once or --json);
69 Redis unavailable; 77 refused by an ACL (top needs SCAN, TYPE, GET, HGETALL,
LRANGE, ZRANGE, PTTL, EXISTS and PUBSUB on the keys it lists).")]
pub(crate) struct TopArgs {
    #[command(flatten)]
    pub(crate) url: UrlArgs,

    /// Only names that start with PREFIX (all names without it)
    pub(crate) prefix: Option<OsString>,

    /// Print one screen and exit (no terminal needed)
    #[arg(long)]
    pub(crate) once: bool,

    /// Print the data once as JSON (see below) and exit
    #[arg(long)]
    pub(crate) json: bool,
}
