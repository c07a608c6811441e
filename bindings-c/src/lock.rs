//! Lock handles: create (by kind), free, acquire, release and query. C's holder is
//! (handle, OS thread), like a recursive pthread mutex: a handle keeps one core
//! `Lock`, with its own holder id, per thread that holds (or lost) it through it.
//! A multi-lock handle (multi.rs) does the same: its core `Lock` for a thread is the
//! core multi-lock over each member handle's core `Lock` for that thread.

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use ferrolock::{validate, AcquireOptions, Client, Error, ErrorKind, Lock, LockKind, LockOptions, Quorum};

use crate::client::{client_arg, ferrolock_client};
use crate::ffi::{self, answer, answer_new, block_on, c_str, invalid, lock_ignoring_poison, optional_millis, reclaim};
use crate::handle::{Kind, Registry};
use crate::holder::HolderText;
use crate::kind::{ferrolock_lock_kind, FerrolockLockKindArg};
use crate::lost::LostSlot;
use crate::status::ferrolock_status;

/// A handle on one lock name, or on a multi-lock over several handles
/// (`ferrolock_multilock_new()`). The holder is (this handle, the calling OS thread):
/// like a recursive pthread mutex, each thread holds, re-enters and releases on its own.
/// Opaque: a handle value, not a pointer to memory (see "Ownership" at the top).
pub struct ferrolock_lock {
    _opaque: [u8; 0],
}

/// What a handle stands for; kept by the registry until the handle is freed, and
/// after that by the multi-lock handles made over it, as long as they exist.
/// Not part of the C API (C sees `ferrolock_lock` only).
pub struct LockState {
    /// The lock's client (a multi-lock: its first member's).
    pub(crate) client: Client,
    /// The lock name (a multi-lock: its members' names joined by ",").
    pub(crate) name: String,
    pub(crate) name_c: CString,
    base: Base,
    /// This handle's holder for each thread that holds (or lost) the lock through it.
    threads: Mutex<HashMap<ThreadId, Lock>>,
    pub(crate) on_lost: Arc<LostSlot>,
    /// The read and write handles of one `ferrolock_rwlock_new()` share this: each
    /// thread is one holder (one holder id) on both sides, so that a writer may also
    /// take read holds, as Redisson allows. `None`: the handle's holders are its own.
    shared_ids: Option<Arc<SharedIds>>,
    /// The label its holders' notes give with their OS thread id (`ferrolock_lock_set_label()`).
    pub(crate) label: Mutex<Option<Box<str>>>,
    /// Who held the lock when each thread's latest acquire with a wait timed out
    /// (`ferrolock_lock_holder_info()`): only that thread replaces its entry, so the
    /// strings it was handed stay put until its next such timeout.
    pub(crate) last_holders: Mutex<HashMap<ThreadId, Arc<HolderText>>>,
}

/// The live lock handles (handle.rs).
pub(crate) static LOCKS: Registry<LockState> = Registry::new(Kind::Lock);

/// The holder id of each thread on the two sides of one read-write lock, with how
/// many of the two handles have a holder for that thread (the id is forgotten with
/// the last of them, so ids of exited threads do not pile up).
#[derive(Default)]
struct SharedIds(Mutex<HashMap<ThreadId, (u64, u32)>>);

impl SharedIds {
    fn take(&self, client: &Client) -> u64 {
        let mut ids = lock_ignoring_poison(&self.0);
        let entry = ids.entry(std::thread::current().id()).or_insert_with(|| (client.new_holder_id(), 0));
        entry.1 += 1;
        entry.0
    }

    fn put_back(&self, thread: ThreadId) {
        let mut ids = lock_ignoring_poison(&self.0);
        if let Some(entry) = ids.get_mut(&thread) {
            entry.1 -= 1;
            if entry.1 == 0 {
                ids.remove(&thread);
            }
        }
    }
}

enum Base {
    /// A holder that never acquires: answers the holder-independent queries (and the kind).
    One(Lock),
    /// A multi-lock over these member handles.
    Multi { members: Vec<Arc<LockState>>, quorum: Quorum },
}

const _: () = ffi::shared_between_threads::<LockState>();

impl LockState {
    unsafe fn new(client: *mut ferrolock_client, name: *const c_char, kind: FerrolockLockKindArg) -> Result<Self, Error> {
        let kind_arg = kind;
        let kind = ferrolock_lock_kind::from_int(kind);
        Self::of_kind(client, name, None, |name| {
            kind.ok_or_else(|| {
                invalid(format!(
                    "kind = {kind_arg} for lock \"{name}\" is not a ferrolock_lock_kind; give one of {}",
                    ferrolock_lock_kind::choices()
                ))
            })
        })
    }

    unsafe fn of_kind(
        client: *mut ferrolock_client,
        name: *const c_char,
        shared_ids: Option<Arc<SharedIds>>,
        kind: impl FnOnce(&str) -> Result<LockKind, Error>,
    ) -> Result<Self, Error> {
        let client = &client_arg(client)?.client;
        // Before the core is asked for anything: in a forked child its locks may have
        // been held by a thread that does not exist there.
        client.check_process()?;
        let name = c_str(name, "lock name")?;
        let kind = kind(name)?;
        let state = LockState {
            shared_ids,
            base: Base::One(client.lock_with(name.as_bytes(), LockOptions::kind(kind))?),
            client: client.clone(),
            name: name.to_string(),
            name_c: CString::new(name).map_err(|_| invalid("lock name contains a NUL byte"))?,
            threads: Mutex::new(HashMap::new()),
            on_lost: Arc::new(LostSlot::default()),
            label: Mutex::new(None),
            last_holders: Mutex::new(HashMap::new()),
        };
        Ok(state)
    }

    /// A multi-lock handle over `members` (see multi.rs, which checks the arguments).
    pub(crate) fn multi(members: &[Arc<LockState>], quorum: Quorum) -> Result<Self, Error> {
        let mut singles = Vec::with_capacity(members.len());
        for (i, member) in members.iter().enumerate() {
            match &member.base {
                Base::One(base) => singles.push(base.clone()),
                Base::Multi { .. } => {
                    return Err(invalid(format!(
                        "members[{i}] (\"{}\") is a multi-lock handle; a multi-lock's members must be \
                         single lock handles",
                        member.name
                    )))
                }
            }
            for (j, other) in members[..i].iter().enumerate() {
                if Arc::ptr_eq(member, other) {
                    return Err(invalid(format!(
                        "members[{j}] and members[{i}] are the same handle (lock \"{}\"); give each \
                         member once: one handle per Redis server",
                        member.name
                    )));
                }
            }
        }
        // The core checks the members as it would for every thread's multi-lock (the same
        // client and name twice is refused), now rather than at the first acquire.
        let probe = Lock::multi(singles, quorum)?;
        let name = probe.name().to_string();
        let state = LockState {
            client: members[0].client.clone(),
            name_c: CString::new(name.clone()).map_err(|_| invalid("lock name contains a NUL byte"))?,
            name,
            base: Base::Multi { members: members.to_vec(), quorum },
            threads: Mutex::new(HashMap::new()),
            on_lost: Arc::new(LostSlot::default()),
            shared_ids: None,
            label: Mutex::new(None),
            last_holders: Mutex::new(HashMap::new()),
        };
        Ok(state)
    }
    /// This thread's holder on this handle; created on first use when `create`. A
    /// multi-lock handle's is the core multi-lock over its members' holders for
    /// this thread (so a thread that holds the multi-lock re-enters a member).
    pub(crate) fn thread_lock(&self, create: bool) -> Result<Option<Lock>, Error> {
        let id = std::thread::current().id();
        let mut threads = lock_ignoring_poison(&self.threads);
        if let Some(lock) = threads.get(&id) {
            return Ok(Some(lock.clone()));
        }
        if !create {
            return Ok(None);
        }
        // Refused before the core is asked for a holder: in a forked child its locks
        // may have been taken by a thread that does not exist there.
        self.client.check_process()?;
        let lock = match &self.base {
            Base::One(base) => {
                let holder_id = match &self.shared_ids {
                    Some(ids) => ids.take(&self.client),
                    None => self.client.new_holder_id(),
                };
                let options = LockOptions { kind: base.kind(), holder_id: Some(holder_id), ..LockOptions::default() };
                match self.client.lock_with(self.name.as_bytes(), options) {
                    Ok(lock) => lock,
                    Err(e) => {
                        if let Some(ids) = &self.shared_ids {
                            ids.put_back(id);
                        }
                        return Err(e);
                    }
                }
            }
            Base::Multi { members, quorum } => {
                let mut holders = Vec::with_capacity(members.len());
                for member in members {
                    member.client.check_process()?;
                    holders.push(member.thread_lock(true)?.expect("created on demand"));
                }
                Lock::multi(holders, *quorum)?
            }
        };
        // A multi-lock handle without a label of its own leaves its members' labels.
        if !self.is_multi() || lock_ignoring_poison(&self.label).is_some() {
            lock.set_holder_label(Some(&note_label(lock_ignoring_poison(&self.label).as_deref())))?;
        }
        // Every per-thread holder's loss goes to this handle's C callback (lost.rs).
        lock.set_on_lost(Some(self.on_lost.forwarder(self.name_c.clone())));
        threads.insert(id, lock.clone());
        Ok(Some(lock))
    }

    /// Forgets this thread's holder once it neither holds nor has a loss to report
    /// (a multi-lock handle: also its members' holders for this thread, when idle).
    fn forget_if_idle(&self, holder: &Lock) {
        if holder.local_hold_count() != 0 || holder.is_lost() {
            return;
        }
        let id = std::thread::current().id();
        {
            let mut threads = lock_ignoring_poison(&self.threads);
            match threads.get(&id) {
                Some(l) if l.owner() == holder.owner() => {
                    threads.remove(&id);
                    if let Some(ids) = &self.shared_ids {
                        ids.put_back(id);
                    }
                }
                _ => return,
            }
        }
        if let Base::Multi { members, .. } = &self.base {
            for (member, member_holder) in members.iter().zip(holder.members()) {
                member.forget_if_idle(member_holder);
            }
        }
    }

    /// Runs `call` on the server as `holder`, then forgets the holder for this thread
    /// once it neither holds nor has a loss to report.
    fn call_as<F, T>(&self, holder: Lock, call: impl FnOnce(Lock) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send,
        T: Send,
    {
        let result = block_on(Some(&self.client), call(holder.clone()));
        self.forget_if_idle(&holder);
        result?
    }

    /// Like [`Self::call_as`] with this thread's holder, created for the call if needed.
    fn call_as_thread<F, T>(&self, call: impl FnOnce(Lock) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send,
        T: Send,
    {
        self.call_as(self.thread_lock(true)?.expect("created on demand"), call)
    }

    /// The holder-independent handle of a single lock, for a call that reads or
    /// changes one server (`what`); `InvalidArgument` for a multi-lock handle.
    fn single(&self, what: &str) -> Result<&Lock, Error> {
        match &self.base {
            Base::One(base) => Ok(base),
            Base::Multi { members, quorum } => Err(invalid(format!(
                "{what}() does not apply to {}: it reads or changes one Redis server, and a \
                 multi-lock spans {} (call it on each member handle instead)",
                self.describe_multi(*quorum, members.len()),
                members.len()
            ))),
        }
    }

    /// "redlock \"a,a,a\" (2 of 3 members needed)", or "lock \"a\"".
    fn what(&self) -> String {
        match &self.base {
            Base::One(_) => format!("lock \"{}\"", self.name),
            Base::Multi { members, quorum } => self.describe_multi(*quorum, members.len()),
        }
    }

    fn describe_multi(&self, quorum: Quorum, n: usize) -> String {
        let kind = match quorum {
            Quorum::Majority => "redlock",
            _ => "multi-lock",
        };
        format!("{kind} \"{}\" ({} of {n} members needed)", self.name, quorum.of(n))
    }

    /// `ClientClosed` once the client (a multi-lock: any member's) was freed.
    pub(crate) fn check_open(&self) -> Result<(), Error> {
        let closed = self.client.is_closed()
            || matches!(&self.base, Base::Multi { members, .. } if members.iter().any(|m| m.client.is_closed()));
        if closed {
            // The core's own message for its ClientClosed errors.
            return Err(Error::new(ErrorKind::ClientClosed, "the ferrolock client is closed; create a new client"));
        }
        Ok(())
    }

    pub(crate) fn is_multi(&self) -> bool {
        matches!(self.base, Base::Multi { .. })
    }

    /// A holder-independent query on the server.
    fn ask<T: Send>(&self, query: impl Future<Output = Result<T, Error>> + Send) -> Result<T, Error> {
        block_on(Some(&self.client), query)?
    }

    /// This thread's token (fenced locks).
    fn token(&self) -> Result<u64, Error> {
        let base = match &self.base {
            Base::One(base) => base,
            Base::Multi { members, quorum } => {
                return Err(invalid(format!(
                    "{} has no fencing token: tokens of independent servers do not compose into \
                     one safe token; where a stale holder must never write, use a fenced lock \
                     on one server",
                    self.describe_multi(*quorum, members.len())
                )))
            }
        };
        if base.kind() != LockKind::Fenced {
            let how = "create it with ferrolock_fenced_lock_new() to get tokens";
            return Err(invalid(format!("lock \"{}\" is not a fenced lock (it is {}); {how}", self.name, base.kind())));
        }
        let holder = self.thread_lock(false)?;
        if let Some(token) = holder.as_ref().and_then(Lock::token) {
            return Ok(token);
        }
        Err(holder.and_then(|h| h.lost_error()).unwrap_or_else(|| self.not_held(", so it has no token")))
    }

    fn not_held(&self, so: &str) -> Error {
        Error::new(
            ErrorKind::NotOwner,
            format!("lock \"{}\" is not held by this thread through this handle{so}", self.name),
        )
    }
}

/// What a holder's notes say of its thread: the handle's label, if any, and the OS
/// thread id of the calling thread, e.g. "worker-3, tid 4243" or "tid 4243".
fn note_label(label: Option<&str>) -> String {
    thread_local! {
        static TID: u64 = os_thread_id();
    }
    let tid = TID.with(|t| *t);
    match label {
        Some(label) => format!("{label}, tid {tid}"),
        None => format!("tid {tid}"),
    }
}

/// The calling thread's id as the OS tells it (Linux: gettid(), as `ps -L` and
/// `top -H` show it).
fn os_thread_id() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions. By syscall: glibc wraps it only from
        // 2.30, and the release library links against glibc 2.17.
        unsafe { libc::syscall(libc::SYS_gettid) as u64 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: pthread_self has no preconditions.
        unsafe { libc::pthread_self() as u64 }
    }
}

/// The live lock behind a handle; NULL, freed and foreign handles are refused, and
/// every call on a handle whose client was freed is `ClientClosed` (even those that
/// only look at local state, so a program sees one answer for all of them).
pub(crate) fn lock_arg(lock: *mut ferrolock_lock) -> Result<Arc<LockState>, Error> {
    let state = LOCKS.get(lock.addr(), "lock")?;
    state.check_open()?;
    Ok(state)
}

/// Creates a handle on the lock `name` of the given kind. Sends nothing to Redis.
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param kind `FERROLOCK_LOCK_REENTRANT` (Redisson `RLock`), `FERROLOCK_LOCK_FENCED`
///        (`RFencedLock`), `FERROLOCK_LOCK_FAIR` (`RFairLock`), `FERROLOCK_LOCK_READ` or
///        `FERROLOCK_LOCK_WRITE` (one side of `RReadWriteLock`; `ferrolock_rwlock_new()`
///        makes both sides for one holder). Every `ferrolock_lock_*` call works on
///        every kind (`ferrolock_lock_token()` needs a fenced lock).
/// @param out receives the handle, or NULL on failure. Free it with `ferrolock_lock_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, empty,
///         too long or non-UTF-8 name, `kind` not a `ferrolock_lock_kind`);
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_INTERNAL`.
///
/// A handle may be shared by any number of threads: each thread is its own holder.
/// Reentrant, fenced and fair locks of one name share its key and exclude each other;
/// a key that holds something that is not a lock is `FERROLOCK_ERR_WRONG_TYPE` at
/// the first call that reads it.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_new_kind(
    client: *mut ferrolock_client,
    name: *const c_char,
    kind: FerrolockLockKindArg,
    out: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    ffi!({ answer_new(out, &LOCKS, || LockState::new(client, name, kind)) })
}

/// Creates a handle on the reentrant lock `name` (Redisson `RLock`). Sends nothing
/// to Redis.
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param out receives the handle, or NULL on failure. Free it with `ferrolock_lock_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, empty,
///         too long or non-UTF-8 name); `FERROLOCK_ERR_INTERNAL`.
///
/// A handle may be shared by any number of threads: each thread is its own holder.
///
/// Shorthand for `ferrolock_lock_new_kind(client, name, FERROLOCK_LOCK_REENTRANT, out)`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    ferrolock_lock_new_kind(client, name, ferrolock_lock_kind::FERROLOCK_LOCK_REENTRANT as FerrolockLockKindArg, out)
}

/// Like `ferrolock_lock_new()` for a fenced lock (Redisson `RFencedLock`): every
/// acquisition gets a fencing token greater than any before it on this name; read
/// it with `ferrolock_lock_token()` and pass it to the resource you protect.
///
/// Shorthand for `ferrolock_lock_new_kind(client, name, FERROLOCK_LOCK_FENCED, out)`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_fenced_lock_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    ferrolock_lock_new_kind(client, name, ferrolock_lock_kind::FERROLOCK_LOCK_FENCED as FerrolockLockKindArg, out)
}

/// Creates the two sides of the read-write lock `name` (Redisson `RReadWriteLock`)
/// as two lock handles: `*out_read` (`FERROLOCK_LOCK_READ`: many readers at once)
/// and `*out_write` (`FERROLOCK_LOCK_WRITE`: one writer alone). Sends nothing to Redis.
///
/// Each calling thread is one holder on both handles, so a thread that holds the
/// write side may also take the read side (and keep it after releasing the write
/// side: a downgrade), as Redisson allows; a thread that holds only the read side
/// waits for the write side like anyone else (an upgrade waits until it times out).
/// Every `ferrolock_lock_*` call works on both; free each with `ferrolock_lock_free()`.
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param out_read receives the read side, or NULL on failure.
/// @param out_write receives the write side, or NULL on failure.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, empty,
///         too long or non-UTF-8 name, the same pointer for both outputs);
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_INTERNAL`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_rwlock_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out_read: *mut *mut ferrolock_lock,
    out_write: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    ffi!({
        // Raw writes: the two may be the same pointer (refused below), and two `&mut`
        // to one place must never exist.
        for out in [out_read, out_write] {
            if !out.is_null() {
                *out = std::ptr::null_mut();
            }
        }
        ffi::out(out_read, "out_read")?;
        ffi::out(out_write, "out_write")?;
        if std::ptr::eq(out_read, out_write) {
            return Err(invalid("out_read and out_write are the same pointer; give one for each side"));
        }
        let ids = Arc::new(SharedIds::default());
        let read = LockState::of_kind(client, name, Some(ids.clone()), |_| Ok(LockKind::Read))?;
        let write = LockState::of_kind(client, name, Some(ids), |_| Ok(LockKind::Write))?;
        let read = LOCKS.insert(read)?;
        let write = match LOCKS.insert(write) {
            Ok(write) => write,
            Err(e) => {
                drop(LOCKS.remove(read, "out_read"));
                return Err(e);
            }
        };
        *out_read = std::ptr::without_provenance_mut(read);
        *out_write = std::ptr::without_provenance_mut(write);
        Ok(())
    })
}

/// Frees a lock handle. NULL is fine. Every hold still taken through it, by any
/// thread (also threads that have exited), is released first. Best effort: when
/// Redis does not answer it gives up after about 5 s, and such a hold stays (renewed)
/// until `ferrolock_client_free()`, or until its explicit lease runs out. After it
/// returns, its on_lost callback is not running and will not be called again.
///
/// A member of multi-lock handles (`ferrolock_multilock_new()`) may be freed before
/// them: they keep what they need of it, and its holds (its own and those the
/// multi-locks took through it) are released when the last of them is freed.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for a
///         handle that was already freed (or never was a lock handle): nothing
///         happens then, and the program does not crash. Programs may ignore the result.
///
/// Other threads should not use the handle during or after this call (a call that
/// is running keeps it alive until it returns; later calls are refused). Must not
/// be called from the handle's own on_lost callback.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_free(lock: *mut ferrolock_lock) -> ferrolock_status {
    ffi!({
        let Some(lock) = reclaim(lock, &LOCKS, "lock", |l| &l.client)? else { return Ok(()) };
        lock.on_lost.set(None);
        // The holds go with the state (`Drop for LockState`): now, unless multi-lock
        // handles over this one still use it.
        drop(lock);
        Ok(())
    })
}

impl Drop for LockState {
    /// Releases every hold still taken through the handle (see `ferrolock_lock_free()`).
    fn drop(&mut self) {
        let threads: Vec<Lock> = lock_ignoring_poison(&self.threads)
            .drain()
            .map(|(id, l)| {
                if let Some(ids) = &self.shared_ids {
                    ids.put_back(id);
                }
                l
            })
            .collect();
        let held: Vec<Lock> = threads.iter().filter(|l| l.local_hold_count() > 0).cloned().collect();
        if !held.is_empty() {
            let _ = block_on(Some(&self.client), async move {
                for l in held {
                    let _ = l.release_all().await;
                }
            });
        }
    }
}

/// Acquires the lock for the calling thread. Re-entrant: a thread that already
/// holds it through this handle gets it again and must release it as often.
///
/// @param wait_ms -1: wait as long as it takes; 0: try once; otherwise the longest
///        wait in ms (up to 7 days). Waiting wakes on the release message and on the
///        holder's lease expiry, it does not poll.
/// @param lease_ms -1: watchdog lease (the client's watchdog timeout, renewed while
///        held); otherwise 1 ms to 7 days, after which the lock expires by itself
///        (no renewal) and the hold counts as lost.
/// @return `FERROLOCK_OK` (acquired); `FERROLOCK_NOT_ACQUIRED` (someone else still
///         holds it after `wait_ms`); `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed
///         lock handle, duration out of range, pre-fork client);
///         `FERROLOCK_ERR_CLIENT_CLOSED` (its client was freed, also while this call
///         waited); `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION` (a Redis ACL refused a
///         command, key or channel the lock needs; the message names the rule to add;
///         nothing is held); `FERROLOCK_ERR_WRONG_TYPE` (the key is not a lock);
///         `FERROLOCK_ERR_NOT_REPLICATED` (behind Sentinel or on a Cluster: fewer
///         replicas acknowledged the acquire within `replica_ack_timeout_ms` than the
///         `replica_ack` policy needs, so it was undone and nothing is held; retrying
///         is safe); `FERROLOCK_ERR_INTERNAL`.
///         A multi-lock handle (`ferrolock_multilock_new()`) returns
///         `FERROLOCK_NOT_ACQUIRED` when too few members could be taken within
///         `wait_ms`, and fails at once, with the status of its members' failure
///         (`FERROLOCK_ERR_CONNECTION` when servers are down), when so many members
///         failed that its quorum is out of reach; nothing is held then.
///
/// Blocks the calling thread. Thread-safe.
///
/// A hold belongs to (handle, thread), not to the call, and lasts (unless it is
/// lost) until it is released, until `ferrolock_lock_free()` of its handle or
/// `ferrolock_client_free()` of its client releases it, or until an explicit lease
/// runs out: a thread that exits while holding keeps the hold (renewed, with the
/// watchdog lease), like a recursive pthread mutex left locked by an exited thread.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_acquire(lock: *mut ferrolock_lock, wait_ms: i64, lease_ms: i64) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let wait = optional_millis(wait_ms, "wait_ms", "wait forever", 0)?;
        let lease = optional_millis(lease_ms, "lease_ms", "watchdog lease", 1)?;
        let options = AcquireOptions { wait, lease };
        let waited = wait.is_none_or(|w| !w.is_zero());
        let (acquired, seen) = lock.call_as_thread(|h| async move {
            let hold = h.acquire_hold(options).await?;
            // Read before the idle holder is forgotten (call_as).
            Ok((hold.is_some(), if hold.is_none() && waited { h.last_holder() } else { None }))
        })?;
        let mut held_by = String::new();
        if !acquired && waited {
            let mut last = lock_ignoring_poison(&lock.last_holders);
            let id = std::thread::current().id();
            match seen {
                Some(seen) => {
                    held_by = format!(" (held by {})", seen.describe());
                    last.insert(id, Arc::new(HolderText::of(&seen)))
                }
                None => last.remove(&id),
            };
        }
        match acquired {
            true => Ok(()),
            false if lock.is_multi() => Err(Error::new(
                ErrorKind::NotAcquired,
                format!(
                    "{} was not acquired within {wait_ms} ms: too few of its members could be taken \
                     (someone else holds them){held_by}",
                    lock.what()
                ),
            )),
            false => Err(Error::new(
                ErrorKind::NotAcquired,
                format!("lock \"{}\" was not acquired within {wait_ms} ms: someone else holds it{held_by}", lock.name),
            )),
        }
    })
}

/// Releases one level of the calling thread's hold; the lock is free once every
/// acquisition of this thread has been released.
///
/// @return `FERROLOCK_OK` (one level released, whether or not levels remain; also
///         when Redis did not answer within `retry_window_ms`: the level is released here
///         and the library completes the release on the server as soon as Redis answers);
///         `FERROLOCK_ERR_NOT_OWNER` (this thread does not hold it through this
///         handle; nothing changes); `FERROLOCK_ERR_LOCK_LOST` (the hold was lost
///         before this release: the critical section was not protected, once per
///         level that was held); `FERROLOCK_ERR_INVALID_ARGUMENT`;
///         `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION` (a Redis ACL refused
///         the release; the message names the rule to add); `FERROLOCK_ERR_INTERNAL`.
///         After `FERROLOCK_ERR_CONNECTION` (the connection was refused: nothing was
///         sent) or `FERROLOCK_ERR_PERMISSION` this thread still holds the level (see
///         `ferrolock_lock_acquire()` on how holds end): release again once Redis answers.
///         A multi-lock handle releases the level on every member it took: a MultiLock
///         (`FERROLOCK_QUORUM_ALL`) fails (`FERROLOCK_ERR_NOT_OWNER`, or the member's
///         error) if any member was no longer held, a Redlock succeeds when a majority
///         of its members was released.
///
/// Blocks the calling thread. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_release(lock: *mut ferrolock_lock) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let holder = lock.thread_lock(false)?.ok_or_else(|| lock.not_held("; acquire it before releasing it"))?;
        lock.call_as(holder, |h| async move { h.release().await })?;
        Ok(())
    })
}

/// Whether anyone holds the lock (any client, any thread).
///
/// @param out receives the answer.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_WRONG_TYPE`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION` (a Redis ACL refused the read; the message
///         names the rule to add); `FERROLOCK_ERR_INVALID_ARGUMENT` (also for a
///         multi-lock handle: this reads one server, ask each member handle);
///         `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_is_locked(lock: *mut ferrolock_lock, out: *mut bool) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        answer(out, || lock.ask(lock.single("ferrolock_lock_is_locked")?.is_locked()))
    })
}

/// Whether the calling thread holds the lock through this handle, as the server
/// sees it.
///
/// @param out receives the answer.
/// @return like `ferrolock_lock_is_locked()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_is_held(lock: *mut ferrolock_lock, out: *mut bool) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        lock.single("ferrolock_lock_is_held")?;
        answer(out, || lock.call_as_thread(|h| async move { h.is_held().await }))
    })
}

/// How many times the calling thread holds the lock through this handle (0 when not
/// held), as the server sees it.
///
/// @param out receives the count.
/// @return like `ferrolock_lock_is_locked()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_hold_count(lock: *mut ferrolock_lock, out: *mut u32) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        lock.single("ferrolock_lock_hold_count")?;
        answer(out, || lock.call_as_thread(|h| async move { h.hold_count().await }))
    })
}

/// Time left on the lock's lease, whoever holds it.
///
/// @param out receives the ms left; -1 when the lock is not locked; `INT64_MAX`
///        when the key has no expiry.
/// @return like `ferrolock_lock_is_locked()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_remaining_lease_ms(lock: *mut ferrolock_lock, out: *mut i64) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        answer(out, || match lock.ask(lock.single("ferrolock_lock_remaining_lease_ms")?.remaining_lease())? {
            None => Ok(-1),
            Some(left) => Ok(i64::try_from(left.as_millis()).unwrap_or(i64::MAX)),
        })
    })
}

/// Deletes the lock whoever holds it and wakes one waiter. The holder finds its hold
/// lost at its next renewal or release (and its on_lost callback runs).
///
/// @param out_was_locked receives whether it was locked; may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION` (a
///         Redis ACL refused it; the message names the rule to add);
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (also for a multi-lock handle: force
///         unlock each member handle); `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_force_unlock(lock: *mut ferrolock_lock, out_was_locked: *mut bool) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let was_locked = lock.ask(lock.single("ferrolock_lock_force_unlock")?.force_unlock())?;
        if let Some(out) = out_was_locked.as_mut() {
            *out = was_locked;
        }
        Ok(())
    })
}

/// The fencing token of the calling thread's current hold (fenced locks).
///
/// @param out receives the token.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_NOT_OWNER` (this thread does not hold it
///         through this handle); `FERROLOCK_ERR_LOCK_LOST` (its hold was lost);
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, not a fenced lock, or a
///         multi-lock handle: tokens of independent servers do not compose, so a
///         multi-lock has none).
///
/// Does not block (local view). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_token(lock: *mut ferrolock_lock, out: *mut u64) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        answer(out, || lock.token())
    })
}

impl LockState {
    /// The body of extend / set_lease / reacquire: `change` on this thread's hold,
    /// the new remaining lease into `out` (may be NULL).
    unsafe fn change_lease<F>(&self, what: &str, out: *mut i64, change: impl FnOnce(Lock) -> F) -> Result<(), Error>
    where
        F: Future<Output = Result<Duration, Error>> + Send,
    {
        let holder = self.thread_lock(false)?.ok_or_else(|| self.not_held(&format!(", so {what}() has no lease to change")))?;
        let left = self.call_as(holder, change)?;
        if let Some(out) = out.as_mut() {
            *out = i64::try_from(left.as_millis()).unwrap_or(i64::MAX);
        }
        Ok(())
    }
}

/// Adds `by_ms` to the lease left on the calling thread's hold (taken with an
/// explicit `lease_ms`), like redis-py's `extend()`. The whole hold, every
/// re-entered level, gets the new lease; on a multi-lock handle, every member.
///
/// @param by_ms 1 ms to 7 days.
/// @param out_lease_ms receives the lease now left in ms; may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_NOT_OWNER` (this thread does not hold it
///         through this handle); `FERROLOCK_ERR_LOCK_LOST` (the hold was lost; it
///         is marked lost, see `ferrolock_lock_is_lost()`);
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle, `by_ms` out of
///         range, or a hold renewed by the watchdog, i.e. taken with `lease_ms` -1:
///         it has no lease of its own to change); `FERROLOCK_ERR_CLIENT_CLOSED`;
///         `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip (per member). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_extend(lock: *mut ferrolock_lock, by_ms: i64, out_lease_ms: *mut i64) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let by = validate::millis(by_ms, "by_ms")?;
        lock.change_lease("ferrolock_lock_extend", out_lease_ms, |h| async move { h.extend(by).await })
    })
}

/// Replaces the lease left on the calling thread's hold (taken with an explicit
/// `lease_ms`) with `lease_ms`, like redis-py's `extend(..., replace_ttl=True)`.
///
/// @param lease_ms 1 ms to 7 days.
/// @param out_lease_ms receives the lease now left in ms; may be NULL.
/// @return like `ferrolock_lock_extend()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_set_lease(lock: *mut ferrolock_lock, lease_ms: i64, out_lease_ms: *mut i64) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let lease = validate::millis(lease_ms, "lease_ms")?;
        lock.change_lease("ferrolock_lock_set_lease", out_lease_ms, |h| async move { h.set_lease(lease).await })
    })
}

/// Resets the lease left on the calling thread's hold to the `lease_ms` it was
/// acquired with, like redis-py's `reacquire()`.
///
/// @param out_lease_ms receives the lease now left in ms; may be NULL.
/// @return like `ferrolock_lock_extend()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_reacquire(lock: *mut ferrolock_lock, out_lease_ms: *mut i64) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        lock.change_lease("ferrolock_lock_reacquire", out_lease_ms, |h| async move { h.reacquire().await })
    })
}
