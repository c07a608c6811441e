//! Elections: `ferrolock_election`, one candidate (core's `Election`: the fenced
//! lock of the election's name for one holder, the handle itself, whichever thread
//! calls), and `ferrolock_observer`, its leadership changes. Who leads is told as a
//! `ferrolock_holder` plus the term.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use ferrolock::{Election, Error, ErrorKind, Leader, Observer};

use crate::client::{client_arg, ferrolock_client};
use crate::ffi::{self, answer, answer_new, block_on, c_str, invalid, lock_ignoring_poison, optional_millis, out, reclaim};
use crate::handle::{Kind, Registry};
use crate::holder::{ferrolock_holder, HolderText};
use crate::lost::{ferrolock_lost_cb, LostSlot};
use crate::status::ferrolock_status;

/// A candidate in a leader election: `ferrolock_election_new()`. The candidate is
/// the handle (any thread may campaign or resign through it, one campaign at a time).
/// Opaque: a handle value, not a pointer to memory (see "Ownership" at the top).
pub struct ferrolock_election {
    _opaque: [u8; 0],
}

/// The leadership changes of one election: `ferrolock_observer_new()`. Opaque.
pub struct ferrolock_observer {
    _opaque: [u8; 0],
}

pub(crate) struct ElectionState {
    client: ferrolock::Client,
    election: Election,
    on_lost: Arc<LostSlot>,
    /// Who led when each thread last asked (`ferrolock_election_leader()`): only that
    /// thread replaces its entry, so the strings it was handed stay put until then.
    leaders: Mutex<HashMap<ThreadId, Arc<HolderText>>>,
}

pub(crate) struct ObserverState {
    client: ferrolock::Client,
    observer: Mutex<Observer>,
    /// The leader of the latest change told (its strings, until the next change).
    told: Mutex<Option<Arc<HolderText>>>,
}

/// The live handles of each kind (handle.rs).
pub(crate) static ELECTIONS: Registry<ElectionState> = Registry::new(Kind::Election);
pub(crate) static OBSERVERS: Registry<ObserverState> = Registry::new(Kind::Observer);

const _: () = ffi::shared_between_threads::<ElectionState>();
const _: () = ffi::shared_between_threads::<ObserverState>();

fn election_arg(election: *mut ferrolock_election) -> Result<Arc<ElectionState>, Error> {
    let state = ELECTIONS.get(election.addr(), "election")?;
    if state.client.is_closed() {
        return Err(Error::new(ErrorKind::ClientClosed, "the ferrolock client is closed; create a new client"));
    }
    Ok(state)
}

/// Writes a leader (or nobody) into `term` and the caller's holder struct.
unsafe fn tell(leader: Option<&Leader>, text: Option<&HolderText>, term: *mut u64, h: *mut ferrolock_holder, size: u32, function: &str) -> Result<(), Error> {
    let term = out(term, "term")?;
    HolderText::write(text, h, size, function)?;
    *term = leader.map_or(0, |l| l.term);
    Ok(())
}

/// Creates a candidate in the leader election `name`: the fenced lock of that name
/// (Redisson `RFencedLock`; an `RLock` of the name excludes it and is excluded by a
/// leader), for a holder of its own. Sends nothing to Redis.
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param out receives the handle, or NULL on failure. Free it with `ferrolock_election_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, bad name);
///         `FERROLOCK_ERR_CLIENT_CLOSED`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_election,
) -> ferrolock_status {
    ffi!({
        answer_new(out, &ELECTIONS, || {
            let client = client_arg(client)?;
            let name = c_str(name, "name")?;
            let election = client.client.election(name)?;
            let on_lost = Arc::new(LostSlot::default());
            election.set_on_lost(Some(on_lost.forwarder(crate::holder::c_string(name))));
            Ok(ElectionState { client: client.client.clone(), election, on_lost, leaders: Mutex::default() })
        })
    })
}

/// Frees a candidate; if it leads, it resigns first (blocking, bounded by the
/// client's timeouts). NULL is fine.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for a
///         handle that was already freed.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_free(election: *mut ferrolock_election) -> ferrolock_status {
    ffi!({
        let Some(state) = reclaim(election, &ELECTIONS, "election", |s| &s.client)? else { return Ok(()) };
        state.on_lost.set(None);
        if state.election.is_leading() && !state.client.is_closed() {
            let election = state.election.clone();
            let _ = block_on(Some(&state.client), async move { election.resign().await });
        }
        Ok(())
    })
}

/// Campaigns until this candidate leads: waits (on pub/sub, as an acquire does) for
/// the leader to resign or its lease to run out.
///
/// @param wait_ms -1: as long as it takes; 0: one try; otherwise the longest wait in ms.
/// @param term receives the leadership's term (its fencing token: larger than every
///        earlier leader's) when it leads.
/// @return `FERROLOCK_OK` (leading); `FERROLOCK_NOT_ACQUIRED` (another led all along);
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, freed handle, `wait_ms`
///         out of range, this candidate leads already or campaigns on another thread);
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_WRONG_TYPE`;
///         `FERROLOCK_ERR_NOT_REPLICATED`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks the calling thread. The leadership lasts until `ferrolock_election_resign()`,
/// `ferrolock_election_free()`, the client's free, or its loss (told by
/// `ferrolock_election_on_lost()` and `ferrolock_election_is_lost()`).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_campaign(election: *mut ferrolock_election, wait_ms: i64, term: *mut u64) -> ferrolock_status {
    ffi!({
        let state = election_arg(election)?;
        let term = out(term, "term")?;
        let wait = optional_millis(wait_ms, "wait_ms", "as long as it takes", 0)?;
        let election = state.election.clone();
        let led = block_on(Some(&state.client), async move { election.campaign_hold(wait).await })??;
        match led.and_then(|hold| hold.token()) {
            Some(token) => {
                *term = token;
                Ok(())
            }
            None => Err(Error::new(
                ErrorKind::NotAcquired,
                format!("election \"{}\": another candidate led for all of {wait_ms} ms", state.election.name()),
            )),
        }
    })
}

/// Ends this candidate's leadership: the next candidate may lead at once.
///
/// @param resigned receives true if it led, false if it did not (any more: a lost
///        leadership was told by its callback); may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT`; `FERROLOCK_ERR_CLIENT_CLOSED`;
///         `FERROLOCK_ERR_CONNECTION` (nothing was sent: it still leads).
///
/// Blocks the calling thread. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_resign(election: *mut ferrolock_election, resigned: *mut bool) -> ferrolock_status {
    ffi!({
        let state = election_arg(election)?;
        let election = state.election.clone();
        let done = block_on(Some(&state.client), async move { election.resign().await })??;
        if let Some(resigned) = resigned.as_mut() {
            *resigned = done;
        }
        Ok(())
    })
}

/// The term of this candidate's leadership while it leads (local view: until it
/// resigns or learns of a loss).
///
/// @param term receives the term, or 0 when it does not lead.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument).
///
/// Does not block. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_term(election: *mut ferrolock_election, term: *mut u64) -> ferrolock_status {
    ffi!({
        let state = election_arg(election)?;
        answer(term, || Ok(state.election.term().unwrap_or(0)))
    })
}

/// Whether this candidate's latest leadership was lost (until it leads again).
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument).
/// Does not block. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_is_lost(election: *mut ferrolock_election, out: *mut bool) -> ferrolock_status {
    ffi!({
        let state = election_arg(election)?;
        answer(out, || Ok(state.election.lost_error().is_some()))
    })
}

/// Sets the callback told when a leadership of this candidate is lost (as
/// `ferrolock_lock_on_lost()` for a lock: on a library thread, with the election's
/// name, before another candidate can lead); `cb` NULL removes it. Once this
/// returns, the previous callback is not running and will not be called again.
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL election).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_on_lost(election: *mut ferrolock_election, cb: ferrolock_lost_cb, user: *mut c_void) -> ferrolock_status {
    ffi!({
        election_arg(election)?.on_lost.set(cb.map(|cb| (cb, user as usize)));
        Ok(())
    })
}

/// Names this candidate in its leader note (what `ferrolock leader`, other
/// languages' `leader()` and observers show). Sends nothing to Redis.
///
/// @param label NUL-terminated UTF-8, at most 600 bytes; NULL or "" removes it. Copied.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle,
///         invalid UTF-8, too long).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_set_label(election: *mut ferrolock_election, label: *const c_char) -> ferrolock_status {
    ffi!({
        let state = election_arg(election)?;
        let label = if label.is_null() { "" } else { c_str(label, "label")? };
        state.election.set_label((!label.is_empty()).then_some(label))
    })
}

/// Who leads now (one read): the term and the leader's note. Call it through
/// `ferrolock_election_leader(election, &term, &holder)` (inline in the header).
///
/// @param term receives the leader's term, 0 when nobody leads.
/// @param out receives the leader (`out->owner` NULL when nobody leads); its strings
///        are owned by the handle, valid until this thread's next call of this
///        function on it, or until the handle is freed.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, freed
///         handle, a `size` under 4 or over 4096); `FERROLOCK_ERR_CLIENT_CLOSED`;
///         `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_WRONG_TYPE`; `FERROLOCK_ERR_PERMISSION`.
///
/// Blocks the calling thread (two round-trips). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_election_leader_sized(
    election: *mut ferrolock_election,
    term: *mut u64,
    out: *mut ferrolock_holder,
    size: u32,
) -> ferrolock_status {
    ffi!({
        let state = election_arg(election)?;
        let election = state.election.clone();
        let leader = block_on(Some(&state.client), async move { election.leader().await })??;
        let text = leader.as_ref().map(|l| Arc::new(HolderText::of(&l.holder)));
        let mut kept = lock_ignoring_poison(&state.leaders);
        let id = std::thread::current().id();
        match &text {
            Some(text) => kept.insert(id, text.clone()),
            None => kept.remove(&id),
        };
        tell(leader.as_ref(), text.as_deref(), term, out, size, "ferrolock_election_leader_sized")
    })
}

/// An observer of this election's leadership changes, subscribed from now on: the
/// first `ferrolock_observer_next()` tells who leads now, each later one the next
/// change (a new leader, or nobody), in order. It is woken by Redis (a new leader's
/// announcement, a release) and by the leader's lease end, never by polling.
///
/// @param out receives the observer, or NULL on failure. Free it with `ferrolock_observer_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT`; `FERROLOCK_ERR_CLIENT_CLOSED`;
///         `FERROLOCK_ERR_CONNECTION`.
///
/// Blocks until subscribed (bounded by the response timeout). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_observer_new(election: *mut ferrolock_election, out: *mut *mut ferrolock_observer) -> ferrolock_status {
    ffi!({
        answer_new(out, &OBSERVERS, || {
            let state = election_arg(election)?;
            let election = state.election.clone();
            let observer = block_on(Some(&state.client), async move { election.observe().await })??;
            Ok(ObserverState { client: state.client.clone(), observer: Mutex::new(observer), told: Mutex::default() })
        })
    })
}

/// The next leadership change. Call it through `ferrolock_observer_next(observer,
/// timeout_ms, &term, &holder)` (inline in the header).
///
/// @param timeout_ms -1: as long as it takes; otherwise the longest wait in ms.
/// @param term receives the new leader's term, 0 when nobody leads now.
/// @param out receives the new leader (`out->owner` NULL when nobody leads); its
///        strings are owned by the observer, valid until its next change is told or
///        it is freed.
/// @return `FERROLOCK_OK` (a change); `FERROLOCK_NOT_ACQUIRED` (none within
///         `timeout_ms`: nothing written, no change lost); `FERROLOCK_ERR_INVALID_ARGUMENT`;
///         `FERROLOCK_ERR_CLIENT_CLOSED` (also when the client is freed meanwhile);
///         `FERROLOCK_ERR_CONNECTION`.
///
/// Blocks the calling thread. Calls on one observer are taken one at a time.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_observer_next_sized(
    observer: *mut ferrolock_observer,
    timeout_ms: i64,
    term: *mut u64,
    out: *mut ferrolock_holder,
    size: u32,
) -> ferrolock_status {
    ffi!({
        let state = OBSERVERS.get(observer.addr(), "observer")?;
        let timeout = optional_millis(timeout_ms, "timeout_ms", "as long as it takes", 0)?;
        if out.is_null() || term.is_null() {
            return Err(invalid("term or out is NULL; pass pointers to store the change"));
        }
        let mut observer = lock_ignoring_poison(&state.observer);
        let next = observer.next();
        let change = block_on(Some(&state.client), async move {
            match timeout {
                Some(limit) => tokio::time::timeout(limit, next).await.ok(),
                None => Some(next.await),
            }
        })?;
        let Some(change) = change else {
            return Err(Error::new(ErrorKind::NotAcquired, format!("no leadership change within {timeout_ms} ms")));
        };
        let leader = change?;
        let text = leader.as_ref().map(|l| Arc::new(HolderText::of(&l.holder)));
        *lock_ignoring_poison(&state.told) = text.clone();
        tell(leader.as_ref(), text.as_deref(), term, out, size, "ferrolock_observer_next_sized")
    })
}

/// Frees an observer (it leaves its channels). NULL is fine.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for an
///         observer that was already freed.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_observer_free(observer: *mut ferrolock_observer) -> ferrolock_status {
    ffi!({
        drop(reclaim(observer, &OBSERVERS, "observer", |s| &s.client)?);
        Ok(())
    })
}
