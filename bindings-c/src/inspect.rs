//! Inspecting: `ferrolock_inspect()` (core's `Client::inspect`, `inspect_as`) into a
//! `ferrolock_inspection`, a snapshot read through accessors, and
//! `ferrolock_scan_new()` (core's `Client::scan`) into a `ferrolock_scan` iterator of
//! names. Both are handles like the others (handle.rs): immutable once made, so their
//! strings stay put until the handle is freed, and any thread may read them.

use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrolock::{Error, ErrorKind, Inspection, ObjectKind};

use crate::client::{client_arg, ferrolock_client};
use crate::ffi::{self, answer, answer_new, block_on, internal, invalid};
use crate::handle::{Kind, Registry};
use crate::holder::{self, ferrolock_holder, HolderText};
use crate::status::ferrolock_status;

/// What a name holds, as `ferrolock_inspect()` tells it from its keys. The numeric
/// values are part of the ABI: new kinds are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_object_kind {
    /// A reentrant lock (Redisson `RLock`), or a free name: nothing tells them apart.
    FERROLOCK_OBJECT_LOCK = 0,
    /// A lock with a fencing-token counter (`RFencedLock`).
    FERROLOCK_OBJECT_FENCED_LOCK = 1,
    /// A fair lock (`RFairLock`): a queue of waiters.
    FERROLOCK_OBJECT_FAIR_LOCK = 2,
    /// A read-write lock (`RReadWriteLock`).
    FERROLOCK_OBJECT_READ_WRITE_LOCK = 3,
    /// A semaphore (`RSemaphore`).
    FERROLOCK_OBJECT_SEMAPHORE = 4,
    /// A permit-expirable semaphore (`RPermitExpirableSemaphore`).
    FERROLOCK_OBJECT_PERMIT_EXPIRABLE_SEMAPHORE = 5,
    /// A count-down latch (`RCountDownLatch`).
    FERROLOCK_OBJECT_COUNT_DOWN_LATCH = 6,
    /// A number nothing waits on: a semaphore's free permits or a latch's count
    /// (nothing tells which; `ferrolock_inspect_as()` reads it as either).
    FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH = 7,
}

/// An object kind as passed in from C: any int, since C may hand over a value outside
/// the enum. Shown as `ferrolock_object_kind` in the header (see cbindgen.toml).
pub type FerrolockObjectKindArg = i32;

impl ferrolock_object_kind {
    /// Every kind, in numeric order, with the core kind it stands for.
    const ALL: [(ferrolock_object_kind, ObjectKind); 8] = [
        (ferrolock_object_kind::FERROLOCK_OBJECT_LOCK, ObjectKind::Lock),
        (ferrolock_object_kind::FERROLOCK_OBJECT_FENCED_LOCK, ObjectKind::FencedLock),
        (ferrolock_object_kind::FERROLOCK_OBJECT_FAIR_LOCK, ObjectKind::FairLock),
        (ferrolock_object_kind::FERROLOCK_OBJECT_READ_WRITE_LOCK, ObjectKind::ReadWriteLock),
        (ferrolock_object_kind::FERROLOCK_OBJECT_SEMAPHORE, ObjectKind::Semaphore),
        (ferrolock_object_kind::FERROLOCK_OBJECT_PERMIT_EXPIRABLE_SEMAPHORE, ObjectKind::PermitExpirableSemaphore),
        (ferrolock_object_kind::FERROLOCK_OBJECT_COUNT_DOWN_LATCH, ObjectKind::CountDownLatch),
        (ferrolock_object_kind::FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH, ObjectKind::SemaphoreOrLatch),
    ];

    fn from_int(value: FerrolockObjectKindArg) -> Option<(ferrolock_object_kind, ObjectKind)> {
        Self::ALL.iter().find(|(c, _)| *c as i32 == value).copied()
    }

    fn of(kind: ObjectKind) -> Result<ferrolock_object_kind, Error> {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == kind)
            .map(|(c, _)| *c)
            .ok_or_else(|| internal(format!("the object kind {} has no ferrolock_object_kind", kind.as_str())))
    }
}

/// A snapshot of what a name is and what is going on there, from
/// `ferrolock_inspect()`: read it with the `ferrolock_inspection_*()` accessors, free
/// it with `ferrolock_inspection_free()`. Immutable: thread-safe. Opaque.
pub struct ferrolock_inspection {
    _opaque: [u8; 0],
}

/// The names `ferrolock_scan_new()` found, handed out one by one by
/// `ferrolock_scan_next()`; free it with `ferrolock_scan_free()`. Thread-safe (each
/// name goes to one caller). Opaque.
pub struct ferrolock_scan {
    _opaque: [u8; 0],
}

/// What a `ferrolock_inspection` handle stands for: the core's `Inspection` with its
/// strings made C strings once, so the accessors hand out pointers into it.
pub(crate) struct InspectionState {
    name: CString,
    kind: ferrolock_object_kind,
    holders: Vec<HolderText>,
    lease_left_ms: i64,
    waiters: u64,
    queue: Vec<CString>,
    mode: Option<CString>,
    permits: Option<i64>,
    count: Option<i64>,
    permits_out: Vec<(CString, i64)>,
    last_token: u64,
    eviction_policy: Option<CString>,
    busy: bool,
}

/// What a `ferrolock_scan` handle stands for: the names and the next one's index.
pub(crate) struct ScanState {
    names: Vec<CString>,
    next: AtomicUsize,
}

/// The live handles of each kind (handle.rs).
pub(crate) static INSPECTIONS: Registry<InspectionState> = Registry::new(Kind::Inspection);
pub(crate) static SCANS: Registry<ScanState> = Registry::new(Kind::Scan);

const _: () = ffi::shared_between_threads::<InspectionState>();
const _: () = ffi::shared_between_threads::<ScanState>();

/// A string from Redis as a C string (a NUL inside shows as `\0`, as in messages).
fn c_string(s: String) -> CString {
    holder::c_string(&s)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl InspectionState {
    fn of(found: Inspection) -> Result<Self, Error> {
        let busy = found.is_busy();
        let lease_left_ms = found.lease_left().map_or(-1, millis);
        let last_token = found.last_token().unwrap_or(0);
        let holders = found
            .holders()
            .iter()
            .map(HolderText::of)
            .collect();
        Ok(InspectionState {
            name: c_string(found.name),
            kind: ferrolock_object_kind::of(found.kind)?,
            holders,
            lease_left_ms,
            waiters: found.waiters,
            queue: found.queue.into_iter().map(c_string).collect(),
            mode: found.mode.map(c_string),
            permits: found.permits,
            count: found.count,
            permits_out: found
                .permits_out
                .into_iter()
                .map(|p| (c_string(p.id), p.lease_left_ms.unwrap_or(i64::MAX)))
                .collect(),
            last_token,
            eviction_policy: found.eviction_policy.map(c_string),
            busy,
        })
    }

    fn kind_name(&self) -> &'static str {
        ferrolock_object_kind::ALL.iter().find(|(c, _)| *c == self.kind).map_or("object", |(_, k)| k.as_str())
    }
}

fn inspection_arg(inspection: *const ferrolock_inspection) -> Result<Arc<InspectionState>, Error> {
    INSPECTIONS.get(inspection.addr(), "inspection")
}

/// A name or prefix as bytes: names are bytes to Redis, so a name another client
/// wrote in another encoding can be read too.
unsafe fn c_bytes<'a>(ptr: *const c_char, what: &str) -> Result<&'a [u8], Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    Ok(CStr::from_ptr(ptr).to_bytes())
}

/// `list[index]`, or `InvalidArgument` naming the length.
fn item<'a, T>(list: &'a [T], index: usize, what: &str) -> Result<&'a T, Error> {
    list.get(index).ok_or_else(|| invalid(format!("index = {index} is out of range: the inspection has {} {what}", list.len())))
}

/// Writes `value` to `out` when it is not NULL.
unsafe fn maybe<T>(out: *mut T, value: T) {
    if let Some(out) = out.as_mut() {
        *out = value;
    }
}

fn or_null(s: Option<&CString>) -> *const c_char {
    s.map_or(std::ptr::null(), |s| s.as_ptr())
}

unsafe fn inspect(
    client: *const ferrolock_client,
    name: *const c_char,
    kind: Result<Option<ObjectKind>, Error>,
    out: *mut *mut ferrolock_inspection,
) -> Result<(), Error> {
    answer_new(out, &INSPECTIONS, || {
        let client = client_arg(client)?;
        let name = c_bytes(name, "name")?;
        let client = &client.client;
        let found = match kind? {
            Some(kind) => block_on(Some(client), client.inspect_as(name, kind))??,
            None => block_on(Some(client), client.inspect(name))??,
        };
        InspectionState::of(found)
    })
}

/// Reads what `name` is, told from its keys (a lock, fenced, fair or read-write
/// lock, a semaphore, a permit-expirable semaphore or a count-down latch), and what
/// is going on there: holders with their notes, lease left, waiters, permits or
/// count, last fencing token. Reads only; works on every topology.
///
/// @param client a live client.
/// @param name NUL-terminated, 1 to 4096 bytes (any bytes: a name from
///        `ferrolock_scan_next()` that another client wrote in another encoding too).
/// @param out receives the snapshot, or NULL on failure. Free it with
///        `ferrolock_inspection_free()`.
/// @return `FERROLOCK_OK` (a name with no keys is a free `FERROLOCK_OBJECT_LOCK`);
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, empty or too long name,
///         freed client); `FERROLOCK_ERR_WRONG_TYPE` (the key holds something that is
///         none of these); `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for a few round-trips. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspect(
    client: *const ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_inspection,
) -> ferrolock_status {
    ffi!({ inspect(client, name, Ok(None), out) })
}

/// `ferrolock_inspect()` reading `name` as `kind`: a number nothing waits on cannot
/// tell a semaphore from a latch (`FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH`), and a
/// free name cannot tell its lock kind.
///
/// @return like `ferrolock_inspect()`; `FERROLOCK_ERR_INVALID_ARGUMENT` also for a
///         `kind` that is not a `ferrolock_object_kind`, `FERROLOCK_ERR_WRONG_TYPE`
///         for a key that cannot be one.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspect_as(
    client: *const ferrolock_client,
    name: *const c_char,
    kind: FerrolockObjectKindArg,
    out: *mut *mut ferrolock_inspection,
) -> ferrolock_status {
    ffi!({
        let kind = ferrolock_object_kind::from_int(kind).map(|(_, k)| Some(k)).ok_or_else(|| {
            invalid(format!(
                "kind = {kind} is not a ferrolock_object_kind; give FERROLOCK_OBJECT_LOCK (0) to \
                 FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH (7)"
            ))
        });
        inspect(client, name, kind, out)
    })
}

/// Frees a snapshot (and the strings its accessors returned). NULL is fine.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for a
///         snapshot that was already freed (or never was one).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_free(inspection: *mut ferrolock_inspection) -> ferrolock_status {
    ffi!({
        drop(INSPECTIONS.remove(inspection.addr(), "inspection")?);
        Ok(())
    })
}

/// The name inspected (NUL-terminated; a NUL inside the name shows as `\0`).
///
/// @param out receives a string owned by the snapshot, valid until it is freed.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, freed
///         snapshot). Every accessor answers like this, without blocking.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_name(inspection: *const ferrolock_inspection, out: *mut *const c_char) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.name.as_ptr())) })
}

/// What the name holds (or what `ferrolock_inspect_as()` was asked to read).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_kind(
    inspection: *const ferrolock_inspection,
    out: *mut ferrolock_object_kind,
) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.kind)) })
}

/// Whether it is busy: a lock with holders, a permit-expirable semaphore with
/// permits out, a latch still counting down (a plain semaphore: never told).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_is_busy(inspection: *const ferrolock_inspection, out: *mut bool) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.busy)) })
}

/// How many holders a lock has: 0 when free, and for every kind that is not a lock
/// (a read-write lock's readers are one holder each).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_holders_len(inspection: *const ferrolock_inspection, out: *mut usize) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.holders.len())) })
}

/// One holder of a lock. Each out parameter may be NULL (not wanted).
///
/// @param index 0 to `ferrolock_inspection_holders_len()` - 1.
/// @param out_owner receives its owner field: `<client id>:<holder id>` for
///        ferrolock, `<uuid>:<thread id>` for Redisson.
/// @param out_count receives how many times it holds (re-entries included).
/// @param out_note receives the note it left (JSON: see `ferrolock_holder`, which
///        `ferrolock_inspection_holder_info()` fills with its fields), or NULL when it
///        left none (a short hold, by default; Redisson never does).
///        Strings are owned by the snapshot, valid until it is freed.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (freed snapshot,
///         `index` out of range: nothing is written).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_holder(
    inspection: *const ferrolock_inspection,
    index: usize,
    out_owner: *mut *const c_char,
    out_count: *mut u64,
    out_note: *mut *const c_char,
) -> ferrolock_status {
    ffi!({
        let state = inspection_arg(inspection)?;
        let holder = item(&state.holders, index, "holders")?;
        maybe(out_owner, holder.owner().as_ptr());
        maybe(out_count, holder.count());
        maybe(out_note, or_null(holder.info()));
        Ok(())
    })
}

/// One holder of a lock with its note read into fields (app, host, pid, thread,
/// command, since when), how long it has held the lock and a description for
/// people, e.g. "billing on host-7 pid 4242 (thread worker-3, tid 4243) for 5 m 12 s".
///
/// Call it through `ferrolock_inspection_holder_info(inspection, index, &holder)`
/// (inline in the header), which passes `sizeof holder` as the program was compiled.
///
/// @param index 0 to `ferrolock_inspection_holders_len()` - 1.
/// @param out receives the holder; its strings are owned by the snapshot, valid
///        until it is freed.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (freed snapshot, NULL
///         `out`, `index` out of range, a `size` under 4 or over 4096 bytes:
///         nothing is written).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_holder_info_sized(
    inspection: *const ferrolock_inspection,
    index: usize,
    out: *mut ferrolock_holder,
    size: u32,
) -> ferrolock_status {
    ffi!({
        let state = inspection_arg(inspection)?;
        let holder = item(&state.holders, index, "holders")?;
        HolderText::write(Some(holder), out, size, "ferrolock_inspection_holder_info_sized")
    })
}

/// Time left on a lock's lease: ms, `INT64_MAX` when the key has no expiry, -1 when
/// free or not a lock (as `ferrolock_lock_remaining_lease_ms()`).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_lease_left_ms(inspection: *const ferrolock_inspection, out: *mut i64) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.lease_left_ms)) })
}

/// Clients waiting: a fair lock's queue length; for every other kind the client
/// connections subscribed to its channel (one per client with waiters, ferrolock's
/// and Redisson's alike; ferrolock's stays subscribed 100 ms after its last waiter left).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_waiters(inspection: *const ferrolock_inspection, out: *mut u64) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.waiters)) })
}

/// The length of a fair lock's queue of waiters (0 for every other kind).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_queue_len(inspection: *const ferrolock_inspection, out: *mut usize) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.queue.len())) })
}

/// The owner field of one waiter in a fair lock's queue, first in line at index 0.
///
/// @param index 0 to `ferrolock_inspection_queue_len()` - 1 (else
///        `FERROLOCK_ERR_INVALID_ARGUMENT`).
/// @param out receives a string owned by the snapshot, valid until it is freed.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_queue_at(
    inspection: *const ferrolock_inspection,
    index: usize,
    out: *mut *const c_char,
) -> ferrolock_status {
    ffi!({
        let state = inspection_arg(inspection)?;
        answer(out, || Ok(item(&state.queue, index, "queued waiters")?.as_ptr()))
    })
}

/// The side that holds a read-write lock: "read" or "write"; NULL when free or not a
/// read-write lock. The string is owned by the snapshot, valid until it is freed.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_mode(inspection: *const ferrolock_inspection, out: *mut *const c_char) -> ferrolock_status {
    ffi!({ answer(out, || Ok(or_null(inspection_arg(inspection)?.mode.as_ref()))) })
}

/// The server's `maxmemory-policy` when it may evict the name's keys (`maxmemory` set
/// and a policy other than `noeviction`: a held lock could vanish under memory
/// pressure; set `noeviction`), e.g. "allkeys-lru"; NULL when it cannot, or its ACL
/// refuses INFO (read once when the client connected). The string is owned by the
/// snapshot, valid until it is freed.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_eviction_policy(
    inspection: *const ferrolock_inspection,
    out: *mut *const c_char,
) -> ferrolock_status {
    ffi!({ answer(out, || Ok(or_null(inspection_arg(inspection)?.eviction_policy.as_ref()))) })
}

/// A semaphore's free permits (also a `FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH`'s
/// number). May be negative: Redisson's `reducePermits` goes below 0.
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_WRONG_TYPE` when the kind has no permits
///         (a lock or a latch: nothing is written); `FERROLOCK_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_permits(inspection: *const ferrolock_inspection, out: *mut i64) -> ferrolock_status {
    ffi!({
        let state = inspection_arg(inspection)?;
        answer(out, || state.permits.ok_or_else(|| none_of(&state, "permits")))
    })
}

/// A count-down latch's count, 0 once open (also a
/// `FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH`'s number).
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_WRONG_TYPE` when the kind has no count
///         (a lock or a semaphore: nothing is written); `FERROLOCK_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_count(inspection: *const ferrolock_inspection, out: *mut i64) -> ferrolock_status {
    ffi!({
        let state = inspection_arg(inspection)?;
        answer(out, || state.count.ok_or_else(|| none_of(&state, "count")))
    })
}

fn none_of(state: &InspectionState, what: &str) -> Error {
    let kind = state.kind_name();
    Error::new(ErrorKind::WrongType, format!("\"{}\" is a {kind}, which has no {what}", state.name.to_string_lossy()))
}

/// How many permits of a permit-expirable semaphore are out (0 for every other kind).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_permits_out_len(
    inspection: *const ferrolock_inspection,
    out: *mut usize,
) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.permits_out.len())) })
}

/// One permit out of a permit-expirable semaphore. Each out parameter may be NULL.
///
/// @param index 0 to `ferrolock_inspection_permits_out_len()` - 1 (else
///        `FERROLOCK_ERR_INVALID_ARGUMENT`).
/// @param out_id receives its id (32 hex digits), owned by the snapshot, valid until
///        it is freed.
/// @param out_lease_left_ms receives the ms left on its lease by this machine's
///        clock (negative: expired, back at the next acquire); `INT64_MAX`: no lease.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_permit_out(
    inspection: *const ferrolock_inspection,
    index: usize,
    out_id: *mut *const c_char,
    out_lease_left_ms: *mut i64,
) -> ferrolock_status {
    ffi!({
        let state = inspection_arg(inspection)?;
        let (id, lease_left_ms) = item(&state.permits_out, index, "permits out")?;
        maybe(out_id, id.as_ptr());
        maybe(out_lease_left_ms, *lease_left_ms);
        Ok(())
    })
}

/// The last fencing token handed out on the name; 0 when none was (tokens start at 1).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_inspection_last_token(inspection: *const ferrolock_inspection, out: *mut u64) -> ferrolock_status {
    ffi!({ answer(out, || Ok(inspection_arg(inspection)?.last_token)) })
}

/// A static name for an object kind as `ferrolock status --json` writes it, e.g.
/// "fair_lock"; "unknown" for a value that is not a `ferrolock_object_kind`. Never NULL.
#[no_mangle]
pub extern "C" fn ferrolock_object_kind_str(kind: FerrolockObjectKindArg) -> *const c_char {
    const NAMES: [&CStr; 8] = [
        c"lock",
        c"fenced_lock",
        c"fair_lock",
        c"read_write_lock",
        c"semaphore",
        c"permit_expirable_semaphore",
        c"count_down_latch",
        c"semaphore_or_latch",
    ];
    usize::try_from(kind).ok().and_then(|i| NAMES.get(i)).map_or(c"unknown", |n| n).as_ptr()
}

/// Lists the names of every lock-family object whose name starts with `prefix`,
/// sorted: lock hashes, free fenced locks (their token counter), fair locks' queues,
/// and keys holding a number (a semaphore or latch, or any such counter). One SCAN
/// pass over the server, Sentinel's master, or every master of a cluster, made here;
/// `ferrolock_scan_next()` then hands the names out without a round-trip.
///
/// @param client a live client.
/// @param prefix NUL-terminated bytes; "" lists every name. Not a pattern: `*`, `?`
///        and `[` match themselves.
/// @param out receives the iterator, or NULL on failure. Free it with
///        `ferrolock_scan_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, freed
///         client); `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION` (the ACL user may not run SCAN, TYPE or GET);
///         `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for the SCAN: a round-trip per 1000 keys of each master. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_scan_new(
    client: *const ferrolock_client,
    prefix: *const c_char,
    out: *mut *mut ferrolock_scan,
) -> ferrolock_status {
    ffi!({
        answer_new(out, &SCANS, || {
            let client = client_arg(client)?;
            let prefix = c_bytes(prefix, "prefix")?;
            let names = block_on(Some(&client.client), client.client.scan(prefix))??;
            // A name with a NUL inside cannot be a C string (nor passed back to ferrolock_inspect()).
            let names = names.into_iter().filter_map(|n| CString::new(n).ok()).collect();
            Ok(ScanState { names, next: AtomicUsize::new(0) })
        })
    })
}

/// The next name of a scan.
///
/// @param out receives the name (NUL-terminated bytes, owned by the iterator, valid
///        until it is freed), or NULL once every name was handed out (and on every
///        call after that).
/// @return `FERROLOCK_OK`, also at the end; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL
///         argument, freed iterator). Does not block.
///
/// The loop: `while ((s = ferrolock_scan_next(it, &name)) == FERROLOCK_OK && name)`,
/// then `s` tells an error from the end.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_scan_next(scan: *mut ferrolock_scan, out: *mut *const c_char) -> ferrolock_status {
    ffi!({
        let state = SCANS.get(scan.addr(), "scan")?;
        answer(out, || {
            let len = state.names.len();
            let taken = state.next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |i| (i < len).then_some(i + 1));
            Ok(or_null(taken.ok().and_then(|i| state.names.get(i))))
        })
    })
}

/// Frees a scan iterator (and its names). NULL is fine.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for an
///         iterator that was already freed (or never was one).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_scan_free(scan: *mut ferrolock_scan) -> ferrolock_status {
    ffi!({
        drop(SCANS.remove(scan.addr(), "scan")?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_c_ints() {
        // The ABI: C programs compiled against an older header keep working.
        for (i, (c, kind)) in ferrolock_object_kind::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
            assert_eq!(ferrolock_object_kind::from_int(i as i32), Some((*c, *kind)));
            assert_eq!(ferrolock_object_kind::of(*kind).unwrap(), *c);
            let name = unsafe { CStr::from_ptr(ferrolock_object_kind_str(i as i32)) };
            assert_eq!(name.to_str().unwrap(), kind.as_str());
        }
        for value in [-1, 8, i32::MIN, i32::MAX] {
            assert_eq!(ferrolock_object_kind::from_int(value), None, "{value}");
            let name = unsafe { CStr::from_ptr(ferrolock_object_kind_str(value)) };
            assert_eq!(name.to_str().unwrap(), "unknown");
        }
    }
}
