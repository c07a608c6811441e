//! Lock kinds as C passes them: `ferrolock_lock_kind`, read from a plain int.

use ferrolock::LockKind;

/// Which lock a handle is, for `ferrolock_lock_new_kind()`.
/// The numeric values are part of the ABI: new kinds are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_lock_kind {
    /// Redisson's `RLock`: re-entrant, renewed by the watchdog while held.
    FERROLOCK_LOCK_REENTRANT = 0,
    /// Redisson's `RFencedLock`: an `RLock` whose every acquisition gets a fencing
    /// token greater than any before it on the name (`ferrolock_lock_token()`).
    FERROLOCK_LOCK_FENCED = 1,
}

/// A kind as passed in from C: any int, since C may hand over a value outside the
/// enum (which would be undefined behaviour as a Rust enum). Shown as
/// `ferrolock_lock_kind` in the header (see cbindgen.toml).
pub type FerrolockLockKindArg = i32;

impl ferrolock_lock_kind {
    /// The core kind for a value from C, if it is one.
    pub(crate) fn from_int(value: FerrolockLockKindArg) -> Option<LockKind> {
        const REENTRANT: i32 = ferrolock_lock_kind::FERROLOCK_LOCK_REENTRANT as i32;
        const FENCED: i32 = ferrolock_lock_kind::FERROLOCK_LOCK_FENCED as i32;
        match value {
            REENTRANT => Some(LockKind::Reentrant),
            FENCED => Some(LockKind::Fenced),
            _ => None,
        }
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
        assert_eq!(ferrolock_lock_kind::from_int(0), Some(LockKind::Reentrant));
        assert_eq!(ferrolock_lock_kind::from_int(1), Some(LockKind::Fenced));
        for value in [-1, 2, 42, i32::MIN, i32::MAX] {
            assert_eq!(ferrolock_lock_kind::from_int(value), None, "{value}");
        }
    }
}
