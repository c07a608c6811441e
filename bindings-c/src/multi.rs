//! Multi-locks: `ferrolock_multilock_new()` over member handles, usually one lock
//! name on several independent Redis servers (one client each): a Redlock
//! (`FERROLOCK_QUORUM_MAJORITY`) or a MultiLock (`FERROLOCK_QUORUM_ALL`). The result
//! is an ordinary `ferrolock_lock` (lock.rs builds its per-thread core multi-lock).

use ferrolock::{Error, Quorum};

use crate::ffi::{answer_new, invalid};
use crate::lock::{ferrolock_lock, LockState, LOCKS};
use crate::status::ferrolock_status;

/// How many members a multi-lock needs, for `ferrolock_multilock_new()`.
/// The numeric values are part of the ABI: new quorums are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_quorum {
    /// More than half of the members, N/2 + 1: the Redlock algorithm (Redisson's
    /// `RedissonRedLock`).
    FERROLOCK_QUORUM_MAJORITY = 0,
    /// Every member (Redisson's `RedissonMultiLock`).
    FERROLOCK_QUORUM_ALL = 1,
}

/// A quorum as passed in from C: any int, since C may hand over a value outside the
/// enum (which would be undefined behaviour as a Rust enum). Shown as
/// `ferrolock_quorum` in the header (see cbindgen.toml).
pub type FerrolockQuorumArg = i32;

impl ferrolock_quorum {
    /// The core quorum for a value from C, if it is one.
    pub(crate) fn from_int(value: FerrolockQuorumArg) -> Option<Quorum> {
        const MAJORITY: i32 = ferrolock_quorum::FERROLOCK_QUORUM_MAJORITY as i32;
        const ALL: i32 = ferrolock_quorum::FERROLOCK_QUORUM_ALL as i32;
        match value {
            MAJORITY => Some(Quorum::Majority),
            ALL => Some(Quorum::All),
            _ => None,
        }
    }
}

/// The most members a multi-lock takes (a Redlock runs on a handful of servers).
const MAX_MEMBERS: usize = 1024;

unsafe fn new_multi(members: *const *mut ferrolock_lock, n: usize, quorum: FerrolockQuorumArg) -> Result<LockState, Error> {
    if members.is_null() {
        return Err(invalid("members is NULL; pass an array of n lock handles"));
    }
    if n == 0 {
        return Err(invalid("n = 0: a multi-lock needs at least one member lock handle (usually 3 or 5)"));
    }
    if n > MAX_MEMBERS {
        return Err(invalid(format!("n = {n} members is too many; give 1 to {MAX_MEMBERS}")));
    }
    let quorum = ferrolock_quorum::from_int(quorum).ok_or_else(|| {
        invalid(format!(
            "quorum = {quorum} is not a ferrolock_quorum; give FERROLOCK_QUORUM_MAJORITY (0) or \
             FERROLOCK_QUORUM_ALL (1)"
        ))
    })?;
    let members = std::slice::from_raw_parts(members, n);
    let mut handles = Vec::with_capacity(n);
    for (i, member) in members.iter().enumerate() {
        let handle = LOCKS.get(member.addr(), &format!("members[{i}]"))?;
        handle.client.check_process()?;
        handle.check_open()?;
        handles.push(handle);
    }
    LockState::multi(&handles, quorum)
}

/// Creates a multi-lock handle: one lock over `n` member lock handles, usually the
/// same name on `n` independent Redis servers (one client each, so 3 or 5 clients).
/// Sends nothing to Redis.
///
/// With `FERROLOCK_QUORUM_MAJORITY` it is a Redlock: held while more than half of the
/// members (n/2 + 1) are; with `FERROLOCK_QUORUM_ALL` a MultiLock: every member must
/// be taken. It speaks Redisson's protocol member by member, so Redisson's
/// `RedissonRedLock` / `RedissonMultiLock` over the same names and servers exclude it.
///
/// The result is an ordinary `ferrolock_lock`, held by (handle, thread) like any
/// other: `ferrolock_lock_acquire()` (members are taken in order, each waiting at
/// most its share of `wait_ms`; a round that falls short gives back what it took
/// and tries again until `wait_ms` ends; when so many members fail that the quorum
/// is out of reach it fails at once, e.g. `FERROLOCK_ERR_CONNECTION`, holding
/// nothing), `ferrolock_lock_release()` (a MultiLock: `FERROLOCK_ERR_NOT_OWNER` if
/// any member was no longer held; a Redlock: OK when the quorum was released),
/// re-entry, `ferrolock_lock_is_lost()` and `ferrolock_lock_on_lost()` (lost once
/// fewer than the quorum of members are still held) and `ferrolock_lock_free()`
/// work on it. A hold only counts if `lease - time spent acquiring - drift` is left,
/// and every member is renewed by its own client's watchdog. It has no fencing token
/// (`ferrolock_lock_token()`: `FERROLOCK_ERR_INVALID_ARGUMENT`), and the calls that
/// read or change one server (`ferrolock_lock_is_locked()`, `_is_held()`,
/// `_hold_count()`, `_remaining_lease_ms()`, `_force_unlock()`) return
/// `FERROLOCK_ERR_INVALID_ARGUMENT`: call them on the member handles.
///
/// A thread's holds on the multi-lock use that thread's holder on each member
/// handle: a thread that holds the multi-lock re-enters a member it took when it
/// acquires that member handle directly.
///
/// Not safe against everything (see README "When Redlock is not safe"): a member that
/// restarts without persistence before the lease ran out comes back empty and lets
/// another client take a majority (restart crashed members only after the longest
/// lease, or run them with `appendonly yes` and `appendfsync always`); a server clock
/// that jumps forward expires a member early; a process paused longer than the
/// validity keeps working without the lock (where a stale holder must never write,
/// use a fenced lock on one server and check its token).
///
/// @param members `n` single lock handles (not multi-lock handles), each lock at most
///        once: not the same handle twice, nor two handles on the same client and
///        name (give each member its own server). The array is read during the call
///        only. The multi-lock handle keeps what it needs of each member: a member
///        may be freed before it (its holds are then released when the last
///        multi-lock handle over it is freed).
/// @param n number of members, 1 to 1024.
/// @param quorum `FERROLOCK_QUORUM_MAJORITY` or `FERROLOCK_QUORUM_ALL`.
/// @param out receives the handle, or NULL on failure. Free it with `ferrolock_lock_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL `members`, `out` or
///         member, `n` 0 or too large, `quorum` not a `ferrolock_quorum`, a member
///         given twice or on the same client and name as another, a multi-lock
///         handle as a member, a pre-fork client); `FERROLOCK_ERR_INTERNAL`.
///
/// Thread-safe (the members may be in use by other threads meanwhile).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_multilock_new(
    members: *const *mut ferrolock_lock,
    n: usize,
    quorum: FerrolockQuorumArg,
    out: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    ffi!({
        // Checks `out` (and clears `*out`) before anything else.
        answer_new(out, &LOCKS, || new_multi(members, n, quorum))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_from_c_ints() {
        // The ABI: C programs compiled against an older header keep working.
        assert_eq!(ferrolock_quorum::FERROLOCK_QUORUM_MAJORITY as i32, 0);
        assert_eq!(ferrolock_quorum::FERROLOCK_QUORUM_ALL as i32, 1);
        assert_eq!(ferrolock_quorum::from_int(0), Some(Quorum::Majority));
        assert_eq!(ferrolock_quorum::from_int(1), Some(Quorum::All));
        for value in [-1, 2, 42, i32::MIN, i32::MAX] {
            assert_eq!(ferrolock_quorum::from_int(value), None, "{value}");
        }
    }
}
