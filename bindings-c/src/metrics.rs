//! A client's metrics: `ferrolock_metrics`, a plain snapshot that grows like
//! `ferrolock_options` (its first field is its size as the program was compiled,
//! and only the fields within it are written), and the Prometheus text rendering.

use std::ffi::{c_char, CString};
use std::mem::{offset_of, size_of};
use std::ptr;

use ferrolock::{Error, Metrics};

use crate::client::{client_arg, ferrolock_client};
use crate::ffi::{answer, internal, invalid};
use crate::status::ferrolock_status;

/// A snapshot of a client's counters, for `ferrolock_client_metrics()`. Acquires
/// are counted by outcome; wait time runs from an acquire call to its outcome
/// (every outcome), hold time from an acquisition to its release or loss. The
/// bucketed histograms are in `ferrolock_client_metrics_text()`.
///
/// New fields are only ever appended; the library writes only the fields within
/// `size` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ferrolock_metrics {
    /// `sizeof(ferrolock_metrics)` as the program was compiled; set by
    /// `ferrolock_client_metrics()`.
    pub size: u32,
    /// Acquires that took the lock.
    pub acquired: u64,
    /// Acquires whose wait ran out while someone else held it.
    pub not_acquired: u64,
    /// Acquires that failed with an error.
    pub failed: u64,
    /// Acquires stopped before an outcome (a client freed under a waiting acquire).
    pub cancelled: u64,
    /// Holds taken through this client right now.
    pub holds_now: u64,
    /// Acquires waiting right now.
    pub waiters_now: u64,
    /// Watchdog lease renewals that succeeded.
    pub renewals: u64,
    /// Watchdog lease renewals that failed (the hold is kept until its deadline and retried).
    pub renewal_failures: u64,
    /// Holds lost (lease ran out, force-unlocked, lost by the server).
    pub losses: u64,
    /// Connections re-established.
    pub reconnects: u64,
    /// Observations of the wait-time histogram (acquire call to outcome).
    pub wait_count: u64,
    /// Total seconds of the wait-time histogram.
    pub wait_sum_seconds: f64,
    /// Observations of the hold-time histogram (acquisition to release or loss).
    pub hold_count: u64,
    /// Total seconds of the hold-time histogram.
    pub hold_sum_seconds: f64,
    /// Failovers this client noticed (Sentinel's `+switch-master`, a reconnect onto
    /// another or a restarted master, a cluster slot that changed masters); each makes
    /// it check every hold at once. (Appended after `hold_sum_seconds`.)
    pub failovers_noticed: u64,
    /// Holds reported lost by the check after a noticed failover (observations of
    /// the noticed-to-loss-reported histogram; its buckets are in the text).
    pub failover_loss_count: u64,
    /// Total seconds from noticing a failover to reporting each of those losses.
    pub failover_loss_sum_seconds: f64,
}

/// The largest `size` taken (anything bigger is not a `ferrolock_metrics`).
const MAX_SIZE: usize = 4096;

/// Calls `$each!` with every field after `size`, in declaration order.
macro_rules! every_field {
    ($each:ident) => {
        $each!(
            acquired,
            not_acquired,
            failed,
            cancelled,
            holds_now,
            waiters_now,
            renewals,
            renewal_failures,
            losses,
            reconnects,
            wait_count,
            wait_sum_seconds,
            hold_count,
            hold_sum_seconds,
            failovers_noticed,
            failover_loss_count,
            failover_loss_sum_seconds
        )
    };
}

impl ferrolock_metrics {
    fn of(m: &Metrics) -> Self {
        ferrolock_metrics {
            size: size_of::<Self>() as u32,
            acquired: m.acquired,
            not_acquired: m.not_acquired,
            failed: m.failed,
            cancelled: m.cancelled,
            holds_now: m.holds_now,
            waiters_now: m.waiters_now,
            renewals: m.renewals,
            renewal_failures: m.renewal_failures,
            losses: m.losses,
            reconnects: m.reconnects,
            wait_count: m.wait.count,
            wait_sum_seconds: m.wait.sum,
            hold_count: m.hold.count,
            hold_sum_seconds: m.hold.sum,
            failovers_noticed: m.failovers_noticed,
            failover_loss_count: m.failover_loss_report.count,
            failover_loss_sum_seconds: m.failover_loss_report.sum,
        }
    }

    /// Writes the fields that fit in the caller's `size` bytes at `p`, zero for
    /// the bytes past this library's struct, and `size`.
    unsafe fn write(&self, p: *mut ferrolock_metrics, size: u32) -> Result<(), Error> {
        let size = size as usize;
        if size < size_of::<u32>() || size > MAX_SIZE {
            return Err(invalid(format!(
                "ferrolock_client_metrics_sized: size = {size} is not the size of a ferrolock_metrics; \
                 call ferrolock_client_metrics(client, &metrics), which passes sizeof metrics"
            )));
        }
        ptr::write_bytes(p.cast::<u8>(), 0, size);
        macro_rules! put {
            ($($field:ident),*) => {$(
                if offset_of!(ferrolock_metrics, $field) + size_of_val(&self.$field) <= size {
                    ptr::addr_of_mut!((*p).$field).write_unaligned(self.$field);
                }
            )*};
        }
        every_field!(put);
        ptr::addr_of_mut!((*p).size).write_unaligned(size as u32);
        Ok(())
    }
}

/// Writes a snapshot of the client's metrics into the first `size` bytes at `out`.
///
/// Call it through `ferrolock_client_metrics(client, &metrics)` (inline in the
/// header), which passes `sizeof metrics` as the program was compiled, so the
/// library never writes past the struct, however much it grows in later versions.
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed client,
///         NULL `out`, a `size` under 4 or over 4096 bytes: nothing is written).
///
/// Does not block (local counters). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_metrics_sized(
    client: *const ferrolock_client,
    out: *mut ferrolock_metrics,
    size: u32,
) -> ferrolock_status {
    ffi!({
        let client = client_arg(client)?;
        if out.is_null() {
            return Err(invalid("out is NULL; pass a pointer to a ferrolock_metrics"));
        }
        ferrolock_metrics::of(&client.client.metrics()).write(out, size)
    })
}

/// The client's metrics in the Prometheus text exposition format (metric names
/// `ferrolock_*`, label `client="<client id>"`), with the wait-time, hold-time and
/// failover-to-loss-report histograms' buckets, for a program to serve from its own HTTP endpoint.
///
/// @param out receives a NUL-terminated string owned by the caller: free it with
///        `ferrolock_string_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed client,
///         NULL `out`).
///
/// Does not block (local counters). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_metrics_text(client: *const ferrolock_client, out: *mut *mut c_char) -> ferrolock_status {
    ffi!({
        let client = client_arg(client)?;
        answer(out, || {
            let text = client.client.metrics().to_prometheus();
            Ok(CString::new(text).map_err(|_| internal("the metrics text contains a NUL byte"))?.into_raw())
        })
    })
}

/// Frees a string the library returned for the caller to free
/// (`ferrolock_client_metrics_text()`). NULL is fine. Only for those strings: never
/// for `ferrolock_last_error()`, `ferrolock_client_id()` or other library-owned ones.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_string_free(s: *mut c_char) {
    ffi!(void, {
        if !s.is_null() {
            drop(CString::from_raw(s));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_layout_is_the_abi() {
        assert_eq!(offset_of!(ferrolock_metrics, acquired), 8);
        assert_eq!(offset_of!(ferrolock_metrics, reconnects), 80);
        assert_eq!(offset_of!(ferrolock_metrics, hold_sum_seconds), 112);
        assert_eq!(offset_of!(ferrolock_metrics, failovers_noticed), 120);
        assert_eq!(offset_of!(ferrolock_metrics, failover_loss_sum_seconds), 136);
        assert_eq!(size_of::<ferrolock_metrics>(), 144);
    }

    #[test]
    fn only_the_fields_within_size_are_written() {
        let m = ferrolock_metrics { acquired: 3, losses: 2, hold_sum_seconds: 1.5, ..Default::default() };
        let mut out = [0xabu8; 200];
        let p = out.as_mut_ptr().cast::<ferrolock_metrics>();
        let older = offset_of!(ferrolock_metrics, losses) as u32; // ends before `losses`
        unsafe { m.write(p, older).unwrap() };
        let got = unsafe { ptr::read_unaligned(p) };
        assert_eq!((got.size, got.acquired), (older, 3));
        assert_eq!(out[older as usize], 0xab, "past size: untouched");
        unsafe { m.write(p, 160).unwrap() }; // a newer, larger struct
        let got = unsafe { ptr::read_unaligned(p) };
        assert_eq!((got.losses, got.hold_sum_seconds), (2, 1.5));
        assert!(out[120..160].iter().all(|&b| b == 0) && out[160] == 0xab);
        assert!(unsafe { m.write(p, 2) }.is_err());
    }
}
