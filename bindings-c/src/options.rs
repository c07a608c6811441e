//! Connect options: `ferrolock_options`, a struct that grows without breaking the ABI.
//!
//! The struct starts with its own size, as the program was compiled. The library
//! reads only the fields that lie within that size (the others take their defaults),
//! so a program built against an older, smaller `ferrolock_options` keeps working
//! with a newer library. A program built against a newer, larger one runs on an
//! older library as long as it left the fields this library does not know at zero
//! (as `ferrolock_options_init()` leaves them); otherwise the connect refuses it
//! instead of silently ignoring a setting.
//!
//! `ferrolock_options_init()` is a `static inline` in the header (see cbindgen.toml)
//! that passes `sizeof *o` to `ferrolock_options_init_sized()`: the library can then
//! never write past the caller's struct, however much it has grown since.

use std::ffi::c_char;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::time::Duration;

use ferrolock::{ClientBuilder, Config, Error, HolderNotes};

use crate::ack::ferrolock_replica_ack;

use crate::ffi::{c_str, invalid, optional_millis};

/// Settings for `ferrolock_client_connect_opts()`. Fill it with
/// `ferrolock_options_init()` first (defaults, and `size`), then change what you need.
///
/// New fields are only ever appended; the library reads only the fields within
/// `size` bytes (the rest take their defaults). Durations are in milliseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ferrolock_options {
    /// `sizeof(ferrolock_options)` as the program was compiled; set by
    /// `ferrolock_options_init()`. Do not change it.
    pub size: u32,
    /// Lease of locks acquired without an explicit lease, renewed every third of it
    /// while held. Default 30000; 30 ms to 7 days.
    pub watchdog_timeout_ms: i64,
    /// How long one connection attempt may take. Default 2000; 1 ms to 600 s.
    pub connect_timeout_ms: i64,
    /// How long one command may take before it counts as failed. Default 2000;
    /// 1 ms to 600 s.
    pub response_timeout_ms: i64,
    /// How long a release whose reply was lost is retried (also the unlock latch's
    /// TTL). Default 5000; 1 ms to 1 day.
    pub retry_window_ms: i64,
    /// Clock drift allowance as a fraction of the lease: a hold counts as lost
    /// `lease x drift_factor + 2 ms` before Redis would expire it. Default 0.01; 0 to 0.5.
    pub drift_factor: f64,
    /// User name for the sentinels themselves (a `redis+sentinel://` URL's
    /// credentials are the data nodes'). NULL or "" (the default): none. Copied.
    pub sentinel_username: *const c_char,
    /// Password for the sentinels themselves (their `requirepass`). NULL or "" (the
    /// default): none. Copied; never appears in error messages.
    pub sentinel_password: *const c_char,
    /// Behind Sentinel and on a Cluster, how many of the master's replicas must
    /// acknowledge an acquire (`WAIT`) before it returns, a `ferrolock_replica_ack`:
    /// `FERROLOCK_REPLICA_ACK_ONE` (1, the default), `FERROLOCK_REPLICA_ACK_MAJORITY`
    /// (2: floor(n/2)+1 of the n replicas the master should have),
    /// `FERROLOCK_REPLICA_ACK_ALL` (3) or `FERROLOCK_REPLICA_ACK_OFF` (0: no wait). An
    /// acquire that falls short within `replica_ack_timeout_ms` is undone and fails
    /// with `FERROLOCK_ERR_NOT_REPLICATED`, as does every acquire while the master has
    /// no replica (but under OFF). Any other value is `FERROLOCK_ERR_INVALID_ARGUMENT`.
    pub replica_ack: i32,
    /// How long that acknowledgement may take. Default 1000; 1 ms to 600 s.
    pub replica_ack_timeout_ms: i64,
    /// A name for this program in Redis's `CLIENT LIST`: every connection is named
    /// `ferrolock:<client id>:<app_name>` (without it, `ferrolock:<client id>`).
    /// 1 to 64 characters of `A-Z a-z 0-9 . _ -`. NULL or "" (the default): none.
    /// Copied. (Added in 0.1.0 after `replica_ack_timeout_ms`: a program built with
    /// an older header passes a smaller `size`, and has none.)
    pub app_name: *const c_char,
    /// When a holder leaves a note (app, host, pid, thread, since when) beside its
    /// hold for operators and waiters: "off", "long" (holds that outlive
    /// `holder_note_after_ms`: a short hold writes nothing) or "always" (every hold:
    /// one more call per acquisition). NULL or "" (the default): "long". Copied.
    pub holder_notes: *const c_char,
    /// With "long" notes: how long a hold lasts before its note is written (the
    /// watchdog's next round writes it). Default 1000; 0 ms to 7 days.
    pub holder_note_after_ms: i64,
    /// An acquire that has waited this long logs, at INFO, the lock and who holds it
    /// (see `ferrolock_set_logger()`), and again each time its wait doubles.
    /// Default 10000; 1 ms to 7 days, or -1: never.
    pub slow_wait_log_ms: i64,
    /// 1: with `replica_ack`, count only replicas that fsynced the acquire to their
    /// append-only file (`WAITAOF`, Redis 7.2 or later; an older server fails acquires
    /// with `FERROLOCK_ERR_INVALID_ARGUMENT` naming its version). 0 (the default):
    /// `WAIT`. Any other value is `FERROLOCK_ERR_INVALID_ARGUMENT`. (Appended after
    /// `slow_wait_log_ms`: a program built with an older header passes a smaller
    /// `size`, and gets 0.)
    pub replica_ack_aof: i32,
}

/// The largest `size` taken: anything bigger is not a `ferrolock_options` (most
/// likely one that was never initialised).
const MAX_SIZE: usize = 4096;

/// A duration in whole milliseconds, for C.
fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Calls `$each!` with every field after `size`, in declaration order: the one
/// list that reading and initialising a caller's struct both walk.
macro_rules! every_field {
    ($each:ident) => {
        $each!(
            watchdog_timeout_ms,
            connect_timeout_ms,
            response_timeout_ms,
            retry_window_ms,
            drift_factor,
            sentinel_username,
            sentinel_password,
            replica_ack,
            replica_ack_timeout_ms,
            app_name,
            holder_notes,
            holder_note_after_ms,
            slow_wait_log_ms,
            replica_ack_aof
        )
    };
}

impl ferrolock_options {
    /// The defaults: the core's, as C sees them.
    pub(crate) fn defaults() -> Self {
        let c = Config::default();
        ferrolock_options {
            size: size_of::<ferrolock_options>() as u32,
            watchdog_timeout_ms: ms(c.watchdog_timeout),
            connect_timeout_ms: ms(c.connect_timeout),
            response_timeout_ms: ms(c.response_timeout),
            retry_window_ms: ms(c.retry_window),
            drift_factor: c.drift_factor,
            sentinel_username: ptr::null(),
            sentinel_password: ptr::null(),
            replica_ack: ferrolock_replica_ack::of(c.replica_ack),
            replica_ack_timeout_ms: ms(c.replica_ack_timeout),
            app_name: ptr::null(),
            holder_notes: ptr::null(),
            holder_note_after_ms: ms(c.holder_note_after),
            slow_wait_log_ms: c.slow_wait_log.map_or(-1, ms),
            replica_ack_aof: i32::from(c.replica_ack_aof),
        }
    }

    /// The options behind `p`, which the caller says are `p->size` bytes: the fields
    /// within that size, the defaults for the rest. NULL: all defaults.
    pub(crate) unsafe fn read(p: *const ferrolock_options) -> Result<Self, Error> {
        let mut o = Self::defaults();
        if p.is_null() {
            return Ok(o);
        }
        // Only `size` bytes are the caller's: never make a reference to the whole struct.
        let size = ptr::addr_of!((*p).size).read_unaligned() as usize;
        if size < size_of::<u32>() || size > MAX_SIZE {
            return Err(invalid(format!(
                "ferrolock_options.size = {size} is not the size of a ferrolock_options; \
                 fill the options with ferrolock_options_init() first"
            )));
        }
        let ours = size_of::<ferrolock_options>();
        if size > ours {
            // Built against a newer header: refuse settings this library does not know.
            let base = p.cast::<u8>();
            if let Some(at) = (ours..size).find(|&i| base.add(i).read() != 0) {
                return Err(invalid(format!(
                    "ferrolock_options sets a field at byte {at}, which this libferrolock ({}) does \
                     not know (it knows {ours} bytes; the program's header has {size}): upgrade \
                     libferrolock, or leave that field as ferrolock_options_init() set it",
                    env!("CARGO_PKG_VERSION")
                )));
            }
        }
        macro_rules! take {
            ($($field:ident),*) => {$(
                if offset_of!(ferrolock_options, $field) + size_of_val(&o.$field) <= size {
                    o.$field = ptr::addr_of!((*p).$field).read_unaligned();
                }
            )*};
        }
        every_field!(take);
        o.size = size as u32;
        Ok(o)
    }

    /// Writes the defaults into the `size` bytes at `p`: the fields that fit, zero
    /// for every other byte (fields of a newer header this library does not know).
    pub(crate) unsafe fn init(p: *mut ferrolock_options, size: u32) -> Result<(), Error> {
        if p.is_null() {
            return Err(invalid("ferrolock_options_init: the options pointer is NULL"));
        }
        let size = size as usize;
        if size < size_of::<u32>() || size > MAX_SIZE {
            return Err(invalid(format!(
                "ferrolock_options_init: size = {size} is not the size of a ferrolock_options; \
                 call ferrolock_options_init(&options), which passes sizeof options"
            )));
        }
        ptr::write_bytes(p.cast::<u8>(), 0, size);
        let d = Self::defaults();
        macro_rules! put {
            ($($field:ident),*) => {$(
                if offset_of!(ferrolock_options, $field) + size_of_val(&d.$field) <= size {
                    ptr::addr_of_mut!((*p).$field).write_unaligned(d.$field);
                }
            )*};
        }
        every_field!(put);
        ptr::addr_of_mut!((*p).size).write_unaligned(size as u32);
        Ok(())
    }

    /// A client builder for `url` with these settings. Each bad value is refused
    /// naming its field; the core checks the ranges (and names the setting too).
    pub(crate) unsafe fn builder(&self, url: &str) -> Result<ClientBuilder, Error> {
        let duration = |value: i64, field: &str| ferrolock::validate::millis(value, field);
        let mut b = ferrolock::Client::builder(url)
            .watchdog_timeout(duration(self.watchdog_timeout_ms, "watchdog_timeout_ms")?)
            .connect_timeout(duration(self.connect_timeout_ms, "connect_timeout_ms")?)
            .response_timeout(duration(self.response_timeout_ms, "response_timeout_ms")?)
            .retry_window(duration(self.retry_window_ms, "retry_window_ms")?)
            .drift_factor(self.drift_factor)
            .replica_ack_timeout(duration(self.replica_ack_timeout_ms, "replica_ack_timeout_ms")?);
        b = match ferrolock_replica_ack::from_int(self.replica_ack) {
            Some(policy) => b.replica_ack(policy),
            None => {
                return Err(invalid(format!(
                    "replica_ack = {} is not a policy; give FERROLOCK_REPLICA_ACK_OFF (0), FERROLOCK_REPLICA_ACK_ONE \
                     (1, the default), FERROLOCK_REPLICA_ACK_MAJORITY (2) or FERROLOCK_REPLICA_ACK_ALL (3)",
                    self.replica_ack
                )))
            }
        };
        b = match self.replica_ack_aof {
            0 => b.replica_ack_aof(false),
            1 => b.replica_ack_aof(true),
            other => return Err(invalid(format!("replica_ack_aof = {other} is not 0 (WAIT, the default) or 1 (WAITAOF)"))),
        };
        if let Some(user) = optional_str(self.sentinel_username, "sentinel_username")? {
            b = b.sentinel_username(user);
        }
        if let Some(password) = optional_str(self.sentinel_password, "sentinel_password")? {
            b = b.sentinel_password(password);
        }
        if let Some(name) = optional_str(self.app_name, "app_name")? {
            b = b.app_name(name);
        }
        if let Some(mode) = optional_str(self.holder_notes, "holder_notes")? {
            let mode = mode.parse::<HolderNotes>().map_err(|_| {
                invalid(format!("holder_notes = {mode:?} is not a mode; give \"off\", \"long\" (the default) or \"always\""))
            })?;
            b = b.holder_notes(mode);
        }
        b = b.holder_note_after(duration(self.holder_note_after_ms, "holder_note_after_ms")?);
        b = b.slow_wait_log(optional_millis(self.slow_wait_log_ms, "slow_wait_log_ms", "never", 1)?);
        Ok(b)
    }
}

/// Fills the first `size` bytes at `options` with the defaults (fields this library
/// does not know are zeroed) and sets `options->size = size`.
///
/// Call it through `ferrolock_options_init(&options)`, which passes
/// `sizeof options` as the program was compiled, so the library never writes past
/// the struct, however much it grows in later versions. Languages that cannot use the
/// header's inline function call this one with the struct's size.
///
/// NULL `options`, or a `size` that cannot be a `ferrolock_options` (under 4 or over
/// 4096 bytes), writes nothing and sets the last error.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_options_init_sized(options: *mut ferrolock_options, size: u32) {
    ffi!(void, { ferrolock_options::init(options, size) })
}

/// An optional C string setting: NULL and "" are unset. The message names the
/// field, never the text (it may be a password).
unsafe fn optional_str<'a>(ptr: *const c_char, field: &str) -> Result<Option<&'a str>, Error> {
    if ptr.is_null() {
        return Ok(None);
    }
    let text = c_str(ptr, field)?;
    Ok((!text.is_empty()).then_some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    fn read(o: &ferrolock_options) -> Result<ferrolock_options, Error> {
        unsafe { ferrolock_options::read(o) }
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_layout_is_the_abi() {
        // A program compiled against this header sees these offsets; new fields go after.
        assert_eq!(offset_of!(ferrolock_options, size), 0);
        assert_eq!(offset_of!(ferrolock_options, watchdog_timeout_ms), 8);
        assert_eq!(offset_of!(ferrolock_options, drift_factor), 40);
        assert_eq!(offset_of!(ferrolock_options, sentinel_username), 48);
        assert_eq!(offset_of!(ferrolock_options, replica_ack), 64);
        assert_eq!(offset_of!(ferrolock_options, replica_ack_timeout_ms), 72);
        assert_eq!(offset_of!(ferrolock_options, app_name), 80);
        assert_eq!(offset_of!(ferrolock_options, holder_notes), 88);
        assert_eq!(offset_of!(ferrolock_options, holder_note_after_ms), 96);
        assert_eq!(offset_of!(ferrolock_options, slow_wait_log_ms), 104);
        assert_eq!(offset_of!(ferrolock_options, replica_ack_aof), 112);
        assert_eq!(size_of::<ferrolock_options>(), 120);
        use ferrolock::ReplicaAck;
        for (value, policy) in [(0, ReplicaAck::Off), (1, ReplicaAck::One), (2, ReplicaAck::Majority), (3, ReplicaAck::All)] {
            assert_eq!(ferrolock_replica_ack::from_int(value), Some(policy));
            assert_eq!(ferrolock_replica_ack::of(policy), value);
        }
        assert_eq!(ferrolock_replica_ack::from_int(4), None);
    }

    #[test]
    fn fields_past_size_take_defaults() {
        let mut o = ferrolock_options::defaults();
        o.watchdog_timeout_ms = 1234;
        o.replica_ack = 0;
        o.replica_ack_timeout_ms = 77;
        o.size = offset_of!(ferrolock_options, replica_ack) as u32; // an "older" struct
        let got = read(&o).unwrap();
        assert_eq!(got.watchdog_timeout_ms, 1234);
        assert_eq!(got.replica_ack, 1);
        assert_eq!(got.replica_ack_timeout_ms, 1000);
        // The size of the struct before app_name was appended: app_name is not read.
        let garbage = c"not read";
        o.app_name = garbage.as_ptr();
        o.size = offset_of!(ferrolock_options, app_name) as u32;
        let got = read(&o).unwrap();
        assert_eq!((got.replica_ack_timeout_ms, got.app_name), (77, ptr::null()));
        o.size = 10; // cuts watchdog_timeout_ms in half: not read
        assert_eq!(read(&o).unwrap().watchdog_timeout_ms, 30_000);
        for size in [0, 3, MAX_SIZE as u32 + 1, u32::MAX] {
            o.size = size;
            let e = read(&o).unwrap_err();
            assert!(e.message().contains("ferrolock_options.size"), "{}", e.message());
        }
    }

    #[test]
    fn a_newer_struct_must_leave_unknown_fields_zero() {
        #[repr(C)]
        struct Newer {
            old: ferrolock_options,
            extra: i64,
        }
        let mut newer = Newer { old: ferrolock_options::defaults(), extra: 0 };
        unsafe { ferrolock_options::init(&mut newer.old, size_of::<Newer>() as u32).unwrap() };
        assert_eq!(newer.old.size as usize, size_of::<Newer>());
        assert_eq!(newer.extra, 0);
        assert!(unsafe { ferrolock_options::read(&newer.old) }.is_ok());
        newer.extra = 5;
        let e = unsafe { ferrolock_options::read(&newer.old) }.unwrap_err();
        assert!(e.message().contains("byte 120"), "{}", e.message());
    }

    #[test]
    fn bad_values_name_their_field_and_never_the_password() {
        let check = |o: ferrolock_options, needle: &str| {
            let e = match unsafe { o.builder("redis://127.0.0.1") } {
                Ok(_) => panic!("{needle}: accepted"),
                Err(e) => e,
            };
            assert!(e.message().contains(needle), "{needle}: {}", e.message());
        };
        let d = ferrolock_options::defaults;
        check(ferrolock_options { connect_timeout_ms: -1, ..d() }, "connect_timeout_ms = -1");
        check(ferrolock_options { replica_ack_timeout_ms: i64::MIN, ..d() }, "replica_ack_timeout_ms");
        check(ferrolock_options { retry_window_ms: i64::MAX, ..d() }, "retry_window_ms");
        check(ferrolock_options { replica_ack: 4, ..d() }, "replica_ack = 4");
        check(ferrolock_options { replica_ack: -1, ..d() }, "replica_ack = -1");
        check(ferrolock_options { replica_ack_aof: 2, ..d() }, "replica_ack_aof = 2");
        check(ferrolock_options { holder_notes: c"sometimes".as_ptr(), ..d() }, "holder_notes = \"sometimes\"");
        check(ferrolock_options { holder_note_after_ms: -1, ..d() }, "holder_note_after_ms = -1");
        check(ferrolock_options { slow_wait_log_ms: 0, ..d() }, "slow_wait_log_ms = 0");
        check(ferrolock_options { slow_wait_log_ms: -2, ..d() }, "slow_wait_log_ms = -2");
        let bad = CString::new(b"s3cret\xff".to_vec()).unwrap();
        check(ferrolock_options { sentinel_password: bad.as_ptr(), ..d() }, "sentinel_password is not valid UTF-8");
        let e = unsafe { ferrolock_options { sentinel_password: bad.as_ptr(), ..d() }.builder("x") }.err().unwrap();
        assert!(!e.message().contains("s3cret"));
    }
}
