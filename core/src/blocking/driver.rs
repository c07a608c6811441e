//! A blocking call does its own I/O, as redis-py does: the calling thread polls the
//! core future and, while it waits, reads and writes a connection of its own to the
//! server (a host link, transport/host, one per thread and client, made on first use). Without it every request went to a runtime thread and every reply
//! came back through one: two thread wake-ups per round-trip on top of the network's.
//!
//! The thread waits in poll(2) on its sockets and on a wake-up pipe, which core's
//! threads write when they complete something the call waits for (a hand-off, a
//! reply on the client's own connection). Renewals, resolvers of lost replies and
//! calls made while a link is down keep the client's connection; a link that fails
//! or stays silent past the response timeout fails its requests as lost replies,
//! which core settles, and the next call makes a new one (after a pause if it never
//! came up). Unix only: elsewhere calls block on the runtime as before.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use super::socket::Socket;
use crate::transport::HostLink;

/// How often a waiting thread looks for overdue replies (a timer per request would
/// wake a runtime thread on every call).
const OVERDUE_CHECK: Duration = Duration::from_millis(100);

thread_local! {
    static DRIVER: RefCell<Option<Driver>> = const { RefCell::new(None) };
    /// The signal of the driver polling on this thread, if any: its wakes need no pipe.
    static DRIVING: Cell<*const Signal> = const { Cell::new(std::ptr::null()) };
}

/// What one slice of driving gave.
pub enum Slice<T> {
    /// The call finished with this.
    Done(T),
    /// The slice ran out first.
    Pending,
    /// This thread cannot drive (no pipe, or a call already drives it): block on the runtime.
    Unavailable,
}

/// One blocking call's driving, slice after slice.
pub struct Drive {
    next_check: Instant,
}

impl Drive {
    /// The driving of a call that starts now.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Drive {
        // Replies that came while the thread was away are read before anything is overdue.
        Drive {
            next_check: Instant::now() + OVERDUE_CHECK,
        }
    }

    /// Polls `fut` on this thread until it completes or `slice` passed, doing the I/O
    /// of this thread's links meanwhile. Call inside the runtime's context.
    pub fn slice<F: Future + ?Sized>(
        &mut self,
        mut fut: Pin<&mut F>,
        slice: Duration,
    ) -> Slice<F::Output> {
        // Not at all while the thread's locals are being destroyed (a finaliser's call).
        let driven = DRIVER.try_with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return Slice::Unavailable;
            };
            if slot
                .as_ref()
                .is_none_or(|driver| driver.pid != std::process::id())
            {
                // A forked child forgets the parent's sockets (closing its copies of them
                // leaves the parent's connections alone).
                *slot = Driver::new();
            }
            let Some(driver) = slot.as_mut() else {
                return Slice::Unavailable;
            };
            let end = Instant::now() + slice;
            let previous = DRIVING.replace(Arc::as_ptr(&driver.signal));
            let result = loop {
                driver.signal.woken.store(false, Ordering::SeqCst);
                let mut cx = Context::from_waker(&driver.waker);
                let (poll, made) = HostLink::driving(|| fut.as_mut().poll(&mut cx));
                for link in made {
                    driver.adopt(link);
                }
                driver.flush();
                if let Poll::Ready(value) = poll {
                    break Slice::Done(value);
                }
                if driver.signal.woken.load(Ordering::SeqCst) {
                    continue;
                }
                let now = Instant::now();
                if now >= end {
                    break Slice::Pending;
                }
                driver.wait(end.min(self.next_check) - now);
                let now = Instant::now();
                if now >= self.next_check {
                    driver.expire_overdue();
                    self.next_check = now + OVERDUE_CHECK;
                }
            };
            DRIVING.set(previous);
            result
        });
        driven.unwrap_or(Slice::Unavailable)
    }
}

/// How long a finished call keeps serving replies still due on its thread's links
/// (a request its future left behind, e.g. an acquire that timed out while its
/// script ran): only this thread reads them, and it may now go idle.
const SETTLE: Duration = Duration::from_millis(100);

/// After a call: serves this thread's links until nothing is due on them, for up to
/// `SETTLE`; a link still waiting then is closed, which fails its requests as lost
/// replies and leaves them to core's resolvers on the client's own connection.
pub fn settle() {
    with_driver(|driver| {
        let until = Instant::now() + SETTLE;
        while driver.links.iter().any(|served| served.link.in_flight() > 0) {
            let now = Instant::now();
            if now >= until {
                driver.close_in_flight("a call ended with a reply still due");
                return;
            }
            driver.flush();
            driver.wait(until - now);
        }
    });
}

/// After an interrupted call (Ctrl-C): what its future left in flight is settled by
/// core's resolvers, not by this thread, which may not call again for a long time.
pub fn interrupted() {
    with_driver(|driver| driver.close_in_flight("the call was interrupted"));
}

fn with_driver(f: impl FnOnce(&mut Driver)) {
    let _ = DRIVER.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            if let Some(driver) = slot.as_mut().filter(|driver| driver.pid == std::process::id()) {
                f(driver);
            }
        }
    });
}

/// Wakes the driving thread: a flag, plus a byte down the pipe from other threads.
struct Signal {
    woken: AtomicBool,
    pipe: UnixStream,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::SeqCst) && DRIVING.get() != Arc::as_ptr(self) {
            // A full pipe already holds a wake-up.
            let _ = (&self.pipe).write(&[1]);
        }
    }
}

/// A thread's links and its wake-up pipe.
struct Driver {
    pid: u32,
    signal: Arc<Signal>,
    waker: Waker,
    wakes: UnixStream,
    links: Vec<Served>,
    fds: Vec<libc::pollfd>,
}

/// A link and its socket.
struct Served {
    link: HostLink,
    socket: Socket,
    /// Output the socket did not take yet.
    pending: Vec<u8>,
}

impl Driver {
    fn new() -> Option<Driver> {
        let (wakes, pipe) = UnixStream::pair().ok()?;
        wakes.set_nonblocking(true).ok()?;
        pipe.set_nonblocking(true).ok()?;
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(false),
            pipe,
        });
        let waker = Waker::from(signal.clone());
        Some(Driver {
            pid: std::process::id(),
            signal,
            waker,
            wakes,
            links: Vec::new(),
            fds: Vec::new(),
        })
    }

    /// Connects a link core made for this thread; its handshake goes out with the next flush.
    fn adopt(&mut self, link: HostLink) {
        let socket = match Socket::connect(link.address(), link.connect_timeout()) {
            Ok(socket) => socket,
            Err(e) => return link.close(&format!("could not connect ({e})")),
        };
        // The client may close the link while this thread is elsewhere: the socket is
        // shut down from there, so that no connection outlives its client.
        if let Ok(handle) = socket.shutdown_handle() {
            let pid = std::process::id();
            link.on_close(move || {
                // A forked child's copy of the socket is the parent's connection.
                if std::process::id() == pid {
                    // SAFETY: `handle` is an open descriptor this closure owns.
                    unsafe { libc::shutdown(handle.as_raw_fd(), libc::SHUT_RDWR) };
                }
            });
        }
        self.links.push(Served {
            link,
            socket,
            pending: Vec::new(),
        });
    }

    /// Writes what the links have to send, as far as the sockets take it.
    fn flush(&mut self) {
        for served in &mut self.links {
            let out = served.link.take_output();
            if served.pending.is_empty() {
                served.pending = out;
            } else {
                served.pending.extend_from_slice(&out);
            }
            served.write_pending();
        }
        self.forget_closed();
    }

    /// Waits up to `timeout` for a reply, a wake-up or room to write, and handles them.
    fn wait(&mut self, timeout: Duration) {
        self.fds.clear();
        self.fds.push(libc::pollfd {
            fd: self.wakes.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for served in &self.links {
            let events = if served.pending.is_empty() {
                libc::POLLIN
            } else {
                libc::POLLIN | libc::POLLOUT
            };
            self.fds.push(libc::pollfd {
                fd: served.socket.fd(),
                events,
                revents: 0,
            });
        }
        // Rounded up: a 0 ms poll would spin through the last fraction of a slice.
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` holds `fds.len()` initialised pollfd structs.
        let ready =
            unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        if ready <= 0 {
            return; // timed out, or EINTR: the caller looks at signals and deadlines
        }
        if self.fds[0].revents != 0 {
            let mut drain = [0u8; 64];
            while matches!((&self.wakes).read(&mut drain), Ok(n) if n > 0) {}
        }
        for (served, fd) in self.links.iter_mut().zip(&self.fds[1..]) {
            if fd.revents & libc::POLLOUT != 0 {
                served.write_pending();
            }
            if fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                served.read_replies();
            }
        }
        self.forget_closed();
    }

    fn close_in_flight(&mut self, reason: &str) {
        for served in &self.links {
            if served.link.in_flight() > 0 {
                served.link.close(reason);
            }
        }
        self.forget_closed();
    }

    fn expire_overdue(&mut self) {
        for served in &self.links {
            served.link.expire_overdue();
        }
        self.forget_closed();
    }

    /// Drops the sockets of links that closed (core closed them, or they failed).
    fn forget_closed(&mut self) {
        self.links.retain(|served| served.link.closed().is_none());
    }
}

impl Served {
    fn write_pending(&mut self) {
        while !self.pending.is_empty() {
            match self.socket.write(&self.pending) {
                Ok(n) => drop(self.pending.drain(..n)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.link.close(&format!("writing failed ({e})")),
            }
        }
    }

    fn read_replies(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.socket.read(&mut buf) {
                Ok(0) => return self.link.close("the server closed the connection"),
                Ok(n) => self.link.feed(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.link.close(&format!("reading failed ({e})")),
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            return; // the parent's links: not this process's to close
        }
        for served in &self.links {
            served.link.abandon("its thread ended");
        }
    }
}
