//! Input checks shared by the Rust API and every binding, so that bad input gets
//! the same `InvalidArgument` message in every language.

use std::time::Duration;

use crate::error::{Error, Result};

/// Longest lock name, in bytes.
pub const MAX_NAME_LEN: usize = 4096;
/// Longest lease and longest wait.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Shortest lease.
pub const MIN_LEASE: Duration = Duration::from_millis(1);

/// Checks a lock name: 1 to 4096 bytes.
pub fn lock_name(name: &[u8]) -> Result<()> {
    self::name("lock", name)
}

/// Checks the name of a lock, semaphore or latch (`what`): 1 to 4096 bytes.
pub fn name(what: &str, name: &[u8]) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("{what} name is empty; give a name of 1 to 4096 bytes")));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "{what} name is {} bytes long; the limit is {MAX_NAME_LEN} bytes",
            name.len()
        )));
    }
    Ok(())
}

/// Checks a number of permits or a count (`what`): `min` to i64::MAX (Redis's integers).
pub fn count(what: &str, value: u64, min: u64) -> Result<u64> {
    if value < min || value > i64::MAX as u64 {
        return Err(Error::invalid(format!("{what} = {value} is out of range; give {min} to {}", i64::MAX)));
    }
    Ok(value)
}

/// Checks a lease: 1 ms to 7 days. Returns it in whole milliseconds.
pub fn lease(lease: Duration) -> Result<u64> {
    if lease < MIN_LEASE || lease > MAX_DURATION {
        return Err(Error::invalid(format!(
            "lease {lease:?} is out of range; give 1 ms to 7 days"
        )));
    }
    Ok(lease.as_millis() as u64)
}

/// Checks a wait bound: 0 to 7 days.
pub fn wait(wait: Duration) -> Result<Duration> {
    if wait > MAX_DURATION {
        return Err(Error::invalid(format!("wait {wait:?} is out of range; give 0 to 7 days")));
    }
    Ok(wait)
}

/// A duration given in milliseconds by a binding; `what` names the argument in the message.
/// Negative, or above 7 days: `InvalidArgument`.
pub fn millis(value: i64, what: &str) -> Result<Duration> {
    if value < 0 {
        return Err(Error::invalid(format!("{what} = {value} ms is negative")));
    }
    let d = Duration::from_millis(value as u64);
    if d > MAX_DURATION {
        return Err(Error::invalid(format!("{what} = {value} ms is more than 7 days")));
    }
    Ok(d)
}

/// A duration given in seconds by a binding (Python floats, CLI arguments).
/// NaN, infinite, negative, or above 7 days: `InvalidArgument`.
pub fn seconds(value: f64, what: &str) -> Result<Duration> {
    if !value.is_finite() || value < 0.0 {
        return Err(Error::invalid(format!("{what} = {value} s is not a duration of 0 to 7 days")));
    }
    if value > MAX_DURATION.as_secs_f64() {
        return Err(Error::invalid(format!("{what} = {value} s is more than 7 days")));
    }
    Ok(Duration::from_secs_f64(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(lock_name(b"").is_err());
        assert!(lock_name(&[b'a'; 4096]).is_ok());
        assert!(lock_name(&[b'a'; 4097]).is_err());
        assert!(lease(Duration::from_micros(999)).is_err());
        assert_eq!(lease(Duration::from_millis(1)).unwrap(), 1);
        assert!(lease(MAX_DURATION + Duration::from_millis(1)).is_err());
        assert!(wait(Duration::ZERO).is_ok());
        assert!(millis(-1, "wait_ms").unwrap_err().message().contains("wait_ms = -1"));
        assert!(seconds(f64::NAN, "timeout").is_err());
        assert!(seconds(-0.5, "timeout").is_err());
        assert!(seconds(1.5, "timeout").is_ok());
        assert!(count("permits", 0, 1).unwrap_err().message().contains("permits = 0"));
        assert_eq!(count("permits", 0, 0).unwrap(), 0);
        assert!(count("count", i64::MAX as u64 + 1, 1).is_err());
    }
}
