//! The client's host connection, native side: core's `HostLink` (a command
//! connection whose socket lib/host.js owns on the JS thread) and the JS function
//! that writes its output. Calls polled on the JS thread (executor.rs) send on it;
//! what it reads comes back through `NativeClient.hostFeed`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use napi::bindgen_prelude::{Buffer, BufferSlice, Function, FunctionRef};
use napi::Env;
use napi_derive::napi;

use crate::executor::{self, AfterRun, Executor};

/// What `hostFlush` answers.
pub const FLUSHED: u32 = 0;
pub const JS_WRITES: u32 = 1;
pub const CLOSE: u32 = 2;

/// Where lib/host.js connects, and the handshake to write first.
#[napi(object)]
pub struct HostAddress {
    pub host: Option<String>,
    pub port: Option<u32>,
    /// A Unix socket's path (instead of host and port).
    pub path: Option<String>,
    pub handshake: Buffer,
}

/// Called (no arguments) when output waits that the addon could not write itself,
/// or the link closed: lib/host.js then calls `hostFlush` on the next tick.
pub type WakeFn<'a> = Function<'a, (), ()>;

pub(crate) struct Host {
    pub link: ferrolock::HostLink,
    wake: FunctionRef<(), ()>,
    /// JS was asked to flush (what the socket did not take, or a close) and has not yet.
    scheduled: AtomicBool,
    /// The write after the current round of polls ([`schedule_flush`]), made once, and
    /// whether it is queued.
    flush: AfterRun,
    flush_queued: AtomicBool,
    io: Mutex<Io>,
}

/// How output reaches the socket: written by the addon straight to its file
/// descriptor while lib/host.js has nothing queued on it (no JS call, no Buffer, no
/// stream machinery: a good part of a call's cost), else handed to JS's
/// `socket.write` until JS says its queue drained.
struct Io {
    /// Our own duplicate of the socket's descriptor: libuv closing its descriptor
    /// (whose number may then be reused by another socket) never leaves us writing
    /// to someone else's. Closed when the socket closes.
    fd: Option<i32>,
    /// Bytes were handed to JS and it has not said they are out.
    js_queued: bool,
    /// Output for JS to write (on its flush), in order before any later output.
    left: Vec<u8>,
    /// The link's output being written (kept for its capacity).
    out: Vec<u8>,
}

impl Host {
    /// Opens core's host link for `client` on this JS thread; `None` when the client
    /// cannot have one (TLS, Sentinel, Cluster): its calls keep core's connection.
    pub fn open(env: &Env, client: &ferrolock::Client, wake: WakeFn<'_>) -> napi::Result<Option<(Arc<Host>, HostAddress)>> {
        let Some(link) = client.host_link().map_err(|e| napi::Error::from_reason(e.message().to_string()))? else {
            return Ok(None);
        };
        let handshake = link.take_output();
        let (host, port, path) = match link.address() {
            ferrolock::HostAddress::Tcp { host, port } => (Some(host.clone()), Some(u32::from(*port)), None),
            ferrolock::HostAddress::Unix(path) => (None, None, Some(path.to_string_lossy().into_owned())),
        };
        let io = Mutex::new(Io { fd: None, js_queued: true, left: Vec::new(), out: Vec::new() }); // the handshake goes through JS
        let wake = wake.create_ref()?;
        let state = Arc::new_cyclic(|host: &Weak<Host>| {
            let host = host.clone();
            let flush: AfterRun = Arc::new(move |env: &Env| flush_now(&host, env));
            Host { link, wake, scheduled: AtomicBool::new(false), flush, flush_queued: AtomicBool::new(false), io }
        });
        let executor = Executor::here(env)?;
        let weak = Arc::downgrade(&state);
        state.link.on_event(move || schedule_flush(&executor, &weak));
        Ok(Some((state, HostAddress { host, port, path, handshake: handshake.into() })))
    }

    /// Bytes the socket read: completes the calls they answer, then runs them.
    pub fn feed(&self, env: &Env, data: &[u8]) {
        executor::drive(env, || self.link.feed(data));
    }

    /// The socket closed: its calls fail as lost replies (core settles them).
    pub fn closed(&self, env: &Env, reason: &str) {
        self.io.lock().unwrap().forget_fd();
        executor::drive(env, || self.link.close(reason));
    }

    /// Closes the link if a reply is overdue (lib/host.js asks every 100 ms).
    pub fn check(&self, env: &Env) {
        executor::drive(env, || {
            self.link.expire_overdue();
        });
    }

    /// JS's queue on the socket is empty and `fd` is the socket's descriptor (-1:
    /// none, e.g. on Windows): output may go straight to it.
    pub fn direct(&self, fd: i32) {
        let mut io = self.io.lock().unwrap();
        if io.fd.is_none() && self.link.closed().is_none() {
            io.fd = dup_fd(fd);
        }
        io.js_queued = false;
    }

    /// JS's flush (after a wake): writes what is waiting straight to the socket when
    /// it can. Answers `FLUSHED`, `JS_WRITES` (take the bytes with [`Host::left`]) or
    /// `CLOSE` once core closed the link (the socket must go: a reply is overdue and
    /// everything behind it would wait).
    pub fn flush(&self) -> u32 {
        self.scheduled.store(false, Ordering::Release);
        if self.link.closed().is_some() {
            self.io.lock().unwrap().forget_fd();
            return CLOSE;
        }
        if self.write_output() {
            FLUSHED
        } else {
            JS_WRITES
        }
    }

    /// What JS must write itself, in order; from now until JS says its queue drained,
    /// every output goes through JS.
    pub fn left<'env>(&self, env: &'env Env) -> napi::Result<BufferSlice<'env>> {
        let left = {
            let mut io = self.io.lock().unwrap();
            io.js_queued = true;
            std::mem::take(&mut io.left)
        };
        BufferSlice::copy_from(env, left)
    }

    /// Writes the link's output straight to the socket if nothing is queued before
    /// it (in JS, or left for it); what the socket does not take now is left for
    /// JS, in order. True if nothing is left for JS.
    fn write_output(&self) -> bool {
        let mut io = self.io.lock().unwrap();
        let io = &mut *io;
        self.link.swap_output(&mut io.out);
        if io.out.is_empty() {
            return io.left.is_empty();
        }
        let written = match io.fd {
            Some(fd) if !io.js_queued && io.left.is_empty() => write_fd(fd, &io.out),
            _ => 0,
        };
        io.left.extend_from_slice(&io.out[written..]);
        io.left.is_empty()
    }

    fn wake(&self, env: &Env) -> napi::Result<()> {
        self.wake.borrow_back(env)?.call(())
    }
}

impl Io {
    fn forget_fd(&mut self) {
        if let Some(fd) = self.fd.take() {
            close_fd(fd);
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        self.forget_fd();
    }
}

#[cfg(unix)]
fn dup_fd(fd: i32) -> Option<i32> {
    if fd < 0 {
        return None;
    }
    let own = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    (own >= 0).then_some(own)
}

#[cfg(not(unix))]
fn dup_fd(_fd: i32) -> Option<i32> {
    None
}

#[cfg(unix)]
fn close_fd(fd: i32) {
    unsafe { libc::close(fd) };
}

#[cfg(not(unix))]
fn close_fd(_fd: i32) {}

/// Writes as much of `bytes` as the socket takes now (it is non-blocking); answers how much.
#[cfg(unix)]
fn write_fd(fd: i32, bytes: &[u8]) -> usize {
    #[cfg(target_os = "linux")]
    const FLAGS: i32 = libc::MSG_NOSIGNAL;
    #[cfg(not(target_os = "linux"))]
    const FLAGS: i32 = 0;
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        let n = unsafe { libc::send(fd, rest.as_ptr().cast(), rest.len(), FLAGS) };
        if n > 0 {
            done += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            break; // full (EAGAIN) or failing: JS writes the rest, and sees any error
        }
    }
    done
}

#[cfg(not(unix))]
fn write_fd(_fd: i32, _bytes: &[u8]) -> usize {
    0
}

/// Output is waiting (or the link closed): it goes out at once, straight to the
/// socket, as ioredis writes each command. (Gathering a tick's requests into one
/// write saved the server little and cost throughput: the server idled while JS
/// finished the tick. Measured with 8 workers: 40k cycles/s written at once, 33-35k
/// with the rest of the tick gathered, 27k gathering whenever a reply was pending.)
/// JS is woken only for what the socket did not take, or to close it.
fn schedule_flush(executor: &Executor, host: &Weak<Host>) {
    let Some(state) = host.upgrade() else { return };
    if state.scheduled.load(Ordering::Acquire) {
        return; // JS's flush takes it, in order
    }
    if !state.flush_queued.swap(true, Ordering::AcqRel) {
        executor.after_run(state.flush.clone());
    }
}

/// The write [`schedule_flush`] queued, after the round of polls that made the output.
fn flush_now(host: &Weak<Host>, env: &Env) {
    let Some(state) = host.upgrade() else { return };
    state.flush_queued.store(false, Ordering::Release);
    if state.scheduled.load(Ordering::Acquire) {
        return;
    }
    if state.link.closed().is_none() && state.write_output() {
        return;
    }
    state.scheduled.store(true, Ordering::Release);
    if let Err(e) = state.wake(env) {
        tracing::debug!(error = %e, "could not tell JS that the host connection has output");
    }
}
