//! Lock kinds as C passes them: `ferrolock_lock_kind`, read from a plain int.

use ferrolock::LockKind;

/// Which lock a handle is, for `ferrolock_lock_new_kind()`; the same kinds as the
/// core's `LockKind`. The numeric values are part of the ABI: new kinds are only
/// ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_lock_kind {
    /// Redisson's `RLock`: re-entrant, renewed by the watchdog while held.
    FERROLOCK_LOCK_REENTRANT = 0,
    /// Redisson's `RFencedLock`: an `RLock` whose every acquisition gets a fencing
    /// token greater than any before it on the name (`ferrolock_lock_token()`).
    FERROLOCK_LOCK_FENCED = 1,
    /// Redisson's `RFairLock`: granted in the order of arrival, across clients and
    /// processes.
    FERROLOCK_LOCK_FAIR = 2,
    /// The read side of Redisson's `RReadWriteLock`: held by many readers at once,
    /// never together with another holder's write side. A handle of this kind alone
    /// is a reader only; `ferrolock_rwlock_new()` makes both sides for one holder.
    FERROLOCK_LOCK_READ = 3,
    /// The write side of Redisson's `RReadWriteLock`: held by one holder alone.
    FERROLOCK_LOCK_WRITE = 4,
}

/// A kind as passed in from C: any int, since C may hand over a value outside the
/// enum (which would be undefined behaviour as a Rust enum). Shown as
/// `ferrolock_lock_kind` in the header (see cbindgen.toml).
pub type FerrolockLockKindArg = i32;

impl ferrolock_lock_kind {
    /// Every kind, in numeric order, with the core kind it stands for.
    const ALL: [(ferrolock_lock_kind, LockKind); 5] = [
        (ferrolock_lock_kind::FERROLOCK_LOCK_REENTRANT, LockKind::Reentrant),
        (ferrolock_lock_kind::FERROLOCK_LOCK_FENCED, LockKind::Fenced),
        (ferrolock_lock_kind::FERROLOCK_LOCK_FAIR, LockKind::Fair),
        (ferrolock_lock_kind::FERROLOCK_LOCK_READ, LockKind::Read),
        (ferrolock_lock_kind::FERROLOCK_LOCK_WRITE, LockKind::Write),
    ];

    /// The core kind for a value from C, if it is one.
    pub(crate) fn from_int(value: FerrolockLockKindArg) -> Option<LockKind> {
        Self::ALL.iter().find(|(c, _)| *c as i32 == value).map(|(_, kind)| *kind)
    }

    /// "FERROLOCK_LOCK_REENTRANT (0), ..., FERROLOCK_LOCK_WRITE (4)", for messages.
    pub(crate) fn choices() -> String {
        let names: Vec<String> = Self::ALL.iter().map(|(c, _)| format!("{c:?} ({})", *c as i32)).collect();
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_c_ints() {
        // The ABI: C programs compiled against an older header keep working.
        assert_eq!(ferrolock_lock_kind::FERROLOCK_LOCK_REENTRANT as i32, 0);
        assert_eq!(ferrolock_lock_kind::FERROLOCK_LOCK_FENCED as i32, 1);
        assert_eq!(ferrolock_lock_kind::FERROLOCK_LOCK_FAIR as i32, 2);
        assert_eq!(ferrolock_lock_kind::FERROLOCK_LOCK_READ as i32, 3);
        assert_eq!(ferrolock_lock_kind::FERROLOCK_LOCK_WRITE as i32, 4);
        let want = [LockKind::Reentrant, LockKind::Fenced, LockKind::Fair, LockKind::Read, LockKind::Write];
        for (i, kind) in want.into_iter().enumerate() {
            assert_eq!(ferrolock_lock_kind::from_int(i as i32), Some(kind));
        }
        // Every core kind has its C value.
        assert_eq!(LockKind::ALL.len(), ferrolock_lock_kind::ALL.len());
        for value in [-1, 5, 42, i32::MIN, i32::MAX] {
            assert_eq!(ferrolock_lock_kind::from_int(value), None, "{value}");
        }
        assert!(ferrolock_lock_kind::choices().ends_with("FERROLOCK_LOCK_WRITE (4)"));
    }
}
