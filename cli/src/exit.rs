//! The exit-code table. Codes follow flock(1) for conflicts, shells for commands
//! that cannot run or die of a signal, and sysexits.h for the rest, so scripts can
//! tell "someone else has it" (1) from "Redis is down" (69) from "we lost it" (75)
//! from "no replica has it yet, try again" (76) from "Redis refuses this user" (77)
//! from "CMD ran, but the lock stays" (74).
//!
//! Not-replicated gets a code of its own rather than 75 (EX_TEMPFAIL, whose meaning
//! would fit): 75 already says "the lock was lost while CMD ran", and a script must be
//! able to tell "CMD ran, unprotected for a while" from "CMD never started". Of the
//! free sysexits codes, 76 (EX_PROTOCOL, "remote error in protocol") comes closest:
//! the master did not get the acknowledgement the acquire's WAIT asked for.

use ferrolock::{Error, ErrorKind};

/// The lock was not acquired within --wait (unless --conflict-exit-code says otherwise);
/// `status --check`: the lock is free.
pub const CONFLICT: i32 = 1;
/// Bad command line: unknown option, missing CMD, bad duration, bad URL or lock name.
pub const USAGE: i32 = 2;
/// The key at the name holds something that is not a lock (or semaphore, latch) (EX_DATAERR).
pub const WRONG_TYPE: i32 = 65;
/// Redis unreachable, refused, timed out or rejected the credentials (EX_UNAVAILABLE).
pub const UNAVAILABLE: i32 = 69;
/// A bug in ferrolock or a reply it does not understand (EX_SOFTWARE).
pub const INTERNAL: i32 = 70;
/// The release at the end failed (Redis down or refused it): CMD ran, but the lock
/// may stay held until its lease ends (EX_IOERR).
pub const NOT_RELEASED: i32 = 74;
/// The lock was lost while CMD ran, or its release found it gone (EX_TEMPFAIL).
pub const LOST: i32 = 75;
/// Behind Sentinel or on a Cluster, too few replicas acknowledged the acquire within its
/// timeout for --replica-ack (or the master has none), so it was undone: CMD did not
/// run, nothing is held, and retrying is safe (EX_PROTOCOL).
pub const NOT_REPLICATED: i32 = 76;
/// A Redis ACL refused a command, key or channel the lock needs (EX_NOPERM).
pub const NO_PERMISSION: i32 = 77;
/// CMD exists but cannot be executed.
pub const CANNOT_EXECUTE: i32 = 126;
/// CMD was not found.
pub const NOT_FOUND: i32 = 127;
/// CMD (or ferrolock, while waiting) was ended by signal N: 128 + N.
pub const SIGNAL_BASE: i32 = 128;

/// The table as shown by `--help`.
pub const TABLE: &str = "\
Exit status:
  0 or CMD's   run: CMD's own exit status; status, unlock: 0 whether locked or not;
               status --check: 0 held; elect: CMD's status (--once, or once stopped
               by a signal); leader: 0 with or without a leader
  1            run: lock not acquired within --wait (change with --conflict-exit-code);
               status --check: 1 free; latch --count: still counting down;
               latch --wait --timeout: still counting down at the timeout
  2            usage error (bad option, missing CMD, bad duration, URL or name;
               --shared/--exclusive/--fair/--semaphore/latch with several URLs)
  65           the key at the name is not what was asked for (another type of Redis key)
  69           Redis unavailable: connection refused or timed out, bad credentials
  70           internal error (a ferrolock bug or an unexpected reply)
  74           run: the lock could not be released at the end (Redis down or refused it);
               it may stay held until its lease ends (CMD's exit status is on stderr)
  75           run: the lock was lost while CMD ran (CMD got SIGTERM), or was gone at release;
               elect --once: leadership was lost while CMD ran
  76           run, behind Sentinel or on a Cluster: too few replicas acknowledged the
               acquire within --replica-ack-timeout for --replica-ack (or the master has
               none); CMD did not run, nothing is held, retrying is safe
  77           a Redis ACL refused a command, key or channel (NOPERM); stderr names the rule
  126          run: CMD found but not executable
  127          run: CMD not found
  128+N        CMD died of signal N, or ferrolock got signal N while waiting";

/// The exit code for a core error.
pub fn for_kind(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::Connection => UNAVAILABLE,
        ErrorKind::InvalidArgument => USAGE,
        ErrorKind::WrongType => WRONG_TYPE,
        ErrorKind::LockLost => LOST,
        ErrorKind::PermissionDenied => NO_PERMISSION,
        ErrorKind::NotReplicated => NOT_REPLICATED,
        ErrorKind::NotAcquired => CONFLICT,
        _ => INTERNAL,
    }
}

/// Reports a core error on stderr and returns its exit code.
pub fn fail(err: &Error) -> i32 {
    say(err.message());
    for_kind(err.kind())
}

/// One diagnostic line on stderr.
pub fn say(message: &str) {
    eprintln!("ferrolock: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_code_and_the_table_lists_it() {
        let kinds = [
            (ErrorKind::NotAcquired, CONFLICT),
            (ErrorKind::InvalidArgument, USAGE),
            (ErrorKind::WrongType, WRONG_TYPE),
            (ErrorKind::Connection, UNAVAILABLE),
            (ErrorKind::Internal, INTERNAL),
            (ErrorKind::LockLost, LOST),
            (ErrorKind::NotReplicated, NOT_REPLICATED),
            (ErrorKind::PermissionDenied, NO_PERMISSION),
        ];
        for (kind, code) in kinds {
            assert_eq!(for_kind(kind), code, "{kind:?}");
            assert!(TABLE.contains(&format!("\n  {code} ")), "the exit table lacks {code}");
        }
        // Each failure its own code (1 and 2 are shared by design with conflicts and usage).
        let mut codes: Vec<i32> = kinds.iter().map(|(_, c)| *c).collect();
        codes.push(NOT_RELEASED);
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), kinds.len() + 1);
    }
}
