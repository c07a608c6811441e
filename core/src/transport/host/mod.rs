//! A command connection whose socket belongs to the host's event loop (Node's libuv
//! loop, where ioredis and node-redlock do their I/O too). Core writes requests into
//! it; the host writes them to its socket and feeds the replies back. A call polled
//! on the host's thread uses it: its request leaves with no hop to a runtime thread
//! and its reply wakes the host's loop directly, so a call costs one wake-up per
//! side, as in a client written in the host's language. Everything else (renewals,
//! resolvers of lost replies, calls made while it is down) keeps the client's own
//! connection, which is also where a call goes when this one fails: a closed or
//! silent link fails its requests as lost replies (core's read-backs and retries
//! settle them) and the host opens a new one when it likes.
//!
//! Two kinds of host: an event loop that opens its link itself (`Client::host_link`,
//! Node) and polls calls inside [`HostLink::polling`]; and a thread that blocks in
//! each call and does its I/O meanwhile (Python), polling inside
//! [`HostLink::driving`]: there each client makes the thread a link on demand, and
//! the thread connects and serves it (scope.rs). A client keeps one link per host
//! thread and closes them all when it shuts down.
//!
//! One server only, over plain TCP or a Unix socket, RESP2: the host connects to
//! [`HostLink::address`]; the handshake (AUTH, SELECT, CLIENT SETNAME) is the first
//! output, and requests use the link once every handshake reply came back OK.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, ConnectionInfo, Pipeline, RedisResult, Value};
use tokio::sync::oneshot;

mod scope;
mod state;

pub(crate) use scope::this_thread;
pub(crate) use state::lost;
use state::{ReplyTo, State, Waiter, LATCH_BATCH};


/// Where the host connects its socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostAddress {
    /// A TCP address.
    Tcp {
        /// Host name or IP address.
        host: String,
        /// TCP port.
        port: u16,
    },
    /// A Unix socket's path.
    Unix(std::path::PathBuf),
}

/// The host's connection, as core and the host share it. Cheap to clone.
#[derive(Clone)]
pub struct HostLink {
    shared: Arc<Shared>,
}

type Notify = Box<dyn Fn() + Send + Sync>;

struct Shared {
    /// The host's thread: only calls polled there use the link.
    thread: ThreadId,
    address: HostAddress,
    /// The client's connect timeout, for a host that connects by blocking.
    connect_timeout: Duration,
    state: Mutex<State>,
    /// The host will open no other link on this thread (the thread ended).
    abandoned: std::sync::atomic::AtomicBool,
    /// Told (on the host's thread) when output is waiting or the link closed itself.
    notify: Mutex<Option<Arc<Notify>>>,
    /// Told once, on whichever thread closes the link.
    on_close: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl HostLink {
    /// A link for the calling thread to `info`'s server, its handshake queued;
    /// `None` for TLS (the host's socket would need the client's TLS settings).
    pub(crate) fn new(info: &ConnectionInfo, name: &str, connect_timeout: Duration) -> Option<HostLink> {
        let address = match info.addr() {
            ConnectionAddr::Tcp(host, port) => HostAddress::Tcp { host: host.clone(), port: *port },
            ConnectionAddr::Unix(path) => HostAddress::Unix(path.clone()),
            _ => return None,
        };
        let settings = info.redis_settings();
        let mut state = State::default();
        let mut handshake = Vec::new();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            handshake.push(auth.arg(password).clone());
        }
        if settings.db() != 0 {
            handshake.push(redis::cmd("SELECT").arg(settings.db()).clone());
        }
        handshake.push(redis::cmd("CLIENT").arg("SETNAME").arg(name).clone());
        // The host has its connect timeout; once connected, the server answers at once.
        let deadline = Instant::now() + Duration::from_secs(60);
        for cmd in &handshake {
            cmd.write_packed_command(&mut state.out);
            state.waiting.push_back(Waiter { deadline, reply: ReplyTo::Handshake });
        }
        state.handshake = handshake.len();
        let shared = Shared {
            thread: scope::this_thread(),
            address,
            connect_timeout,
            state: Mutex::new(state),
            abandoned: Default::default(),
            notify: Mutex::new(None),
            on_close: Mutex::new(None),
        };
        Some(HostLink { shared: Arc::new(shared) })
    }

    /// Where to connect.
    pub fn address(&self) -> &HostAddress {
        &self.shared.address
    }

    /// How long a host that connects by blocking should try.
    pub fn connect_timeout(&self) -> Duration {
        self.shared.connect_timeout
    }

    /// `f` is called on the host's thread whenever output starts waiting (after
    /// [`HostLink::take_output`] emptied it) or core closed the link (a reply did not
    /// come within the response timeout): the host then writes, or closes its socket.
    pub fn on_event(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.shared.notify.lock().unwrap() = Some(Arc::new(Box::new(f)));
    }

    /// `f` is called once when the link closes, on the thread that closes it (at once
    /// if it is closed): a host whose thread may be busy elsewhere shuts its socket
    /// down from there.
    pub fn on_close(&self, f: impl FnOnce() + Send + 'static) {
        *self.shared.on_close.lock().unwrap() = Some(Box::new(f));
        if self.closed().is_some() {
            self.closed_now();
        }
    }

    fn closed_now(&self) {
        let hook = self.shared.on_close.lock().unwrap().take();
        if let Some(f) = hook {
            f();
        }
    }

    /// The bytes to write to the socket, in order (empty when none).
    pub fn take_output(&self) -> Vec<u8> {
        let mut st = self.shared.state.lock().unwrap();
        st.unsent = 0;
        std::mem::take(&mut st.out)
    }

    /// [`HostLink::take_output`] into `buf` (cleared first): the two buffers trade
    /// places, so neither is allocated again per write.
    pub fn swap_output(&self, buf: &mut Vec<u8>) {
        buf.clear();
        let mut st = self.shared.state.lock().unwrap();
        st.unsent = 0;
        std::mem::swap(&mut st.out, buf);
    }

    /// Requests written or waiting whose replies have not come yet.
    pub fn in_flight(&self) -> usize {
        self.shared.state.lock().unwrap().waiting.len()
    }

    /// Requests the host took (wrote) whose replies have not come yet: 0 means the
    /// server is idle as far as this link goes, so new output is best written at once.
    pub fn sent_in_flight(&self) -> usize {
        let st = self.shared.state.lock().unwrap();
        st.waiting.len() - st.unsent
    }

    /// Why the link is closed, once it is.
    pub fn closed(&self) -> Option<String> {
        self.shared.state.lock().unwrap().closed.clone()
    }

    /// Bytes read from the socket: completes the requests they answer. A reply that
    /// is not RESP2, or that nothing waits for, closes the link.
    pub fn feed(&self, bytes: &[u8]) {
        // A read usually answers several calls (one per worker in flight).
        let mut done = Vec::with_capacity(16);
        let failure = {
            let mut st = self.shared.state.lock().unwrap();
            if st.closed.is_some() {
                return;
            }
            st.input.extend_from_slice(bytes);
            let failure = st.take_replies(&mut done);
            if let Some(reason) = &failure {
                st.close(reason, &mut done);
            }
            failure
        };
        for d in done {
            d.send();
        }
        if failure.is_some() {
            self.closed_now();
            self.notify();
        }
    }

    /// The host's socket closed or failed: every request still waiting fails as a
    /// lost reply (core settles those), and no call uses the link any more.
    pub fn close(&self, reason: &str) {
        let mut done = Vec::new();
        self.shared.state.lock().unwrap().close(reason, &mut done);
        for d in done {
            d.send();
        }
        self.closed_now();
    }

    /// Closes the link for good: its thread will make no other (it is ending), so the
    /// client forgets it instead of keeping its place for a reconnect.
    pub fn abandon(&self, reason: &str) {
        self.shared.abandoned.store(true, std::sync::atomic::Ordering::Relaxed);
        self.close(reason);
    }

    pub(crate) fn is_abandoned(&self) -> bool {
        self.shared.abandoned.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// True if its handshake was answered at some point: a link that closes after
    /// that may be replaced at once, one that never came up only after a pause.
    pub(crate) fn was_up(&self) -> bool {
        self.shared.state.lock().unwrap().was_up
    }

    pub(crate) fn thread(&self) -> ThreadId {
        self.shared.thread
    }

    /// Closes the link if a reply is overdue (the host calls this now and then, e.g.
    /// every 100 ms): a per-request timer would wake core's runtime thread on every
    /// call, which is what this link exists to avoid. True if it closed.
    pub fn expire_overdue(&self) -> bool {
        let now = Instant::now();
        let mut done = Vec::new();
        {
            let mut st = self.shared.state.lock().unwrap();
            let Some(late) = st.waiting.iter().map(|w| w.deadline).filter(|d| *d <= now).min() else {
                // Latches gathered since the last check go now, batch or not.
                let wrote = st.closed.is_none() && st.unlink_latches();
                drop(st);
                if wrote {
                    self.notify();
                }
                return false;
            };
            let waited = now - late;
            st.close(&format!("a reply was overdue (by {waited:?})"), &mut done);
        }
        for d in done {
            d.send();
        }
        self.closed_now();
        self.notify();
        true
    }

    fn send(&self, pack: impl FnOnce(&mut Vec<u8>), waiter: Waiter) -> bool {
        let was_empty = {
            let mut st = self.shared.state.lock().unwrap();
            if st.closed.is_some() || st.handshake > 0 {
                return false;
            }
            let was_empty = st.out.is_empty();
            pack(&mut st.out);
            st.waiting.push_back(waiter);
            st.unsent += 1;
            was_empty
        };
        if was_empty {
            self.notify();
        }
        true
    }

    /// Deletes `latch` (an answered release's reply latch) on this link, with others
    /// in one UNLINK once [`LATCH_BATCH`] are gathered or at the host's next
    /// [`HostLink::expire_overdue`], sent among the link's requests: the client's
    /// sweeper (reply_latch.rs) would wake core's runtime thread for it, which on
    /// a busy host costs the event loop's thread or the server a core now and then.
    /// Gives `latch` back when the link cannot take it (closed, or not up yet).
    pub(crate) fn remove_latch(&self, latch: Vec<u8>, timeout: Duration) -> Result<(), Vec<u8>> {
        let wrote = {
            let mut st = self.shared.state.lock().unwrap();
            if st.closed.is_some() || st.handshake > 0 {
                return Err(latch);
            }
            st.latches.push(latch);
            st.latch_timeout = st.latch_timeout.max(timeout);
            st.latches.len() >= LATCH_BATCH && st.unlink_latches()
        };
        if wrote {
            self.notify();
        }
        Ok(())
    }

    /// The latches not deleted yet (for the client's sweeper, when the client closes).
    pub(crate) fn take_latches(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.shared.state.lock().unwrap().latches)
    }

    /// Queues the command `pack` writes, to be answered within `timeout`; `None` if the
    /// link cannot take it (closed, or its handshake not answered yet).
    pub(crate) fn send_one(&self, pack: impl FnOnce(&mut Vec<u8>), timeout: Duration) -> Option<oneshot::Receiver<RedisResult<Value>>> {
        let (tx, rx) = oneshot::channel();
        let waiter = Waiter { deadline: Instant::now() + timeout, reply: ReplyTo::One(tx) };
        self.send(pack, waiter).then_some(rx)
    }

    /// Queues a (non-transaction) pipeline answering `count` replies.
    pub(crate) fn send_many(&self, pipeline: &Pipeline, count: usize, timeout: Duration) -> Option<oneshot::Receiver<RedisResult<Vec<Value>>>> {
        let (tx, rx) = oneshot::channel();
        let reply = ReplyTo::Many { want: count, got: Vec::with_capacity(count), reply: tx };
        let waiter = Waiter { deadline: Instant::now() + timeout, reply };
        self.send(|out| out.extend_from_slice(&pipeline.get_packed_pipeline()), waiter).then_some(rx)
    }

    fn notify(&self) {
        let notify = self.shared.notify.lock().unwrap().clone();
        if let Some(f) = notify {
            f();
        }
    }
}
