//! Signal handling for `run`.
//!
//! Installed before connecting, so that no signal's default action can kill
//! ferrolock while it waits or holds the lock: the lock would then linger until its
//! lease ran out, and waiters elsewhere would sit idle that long.
//!
//! A plain handler is not enough to forward signals well: a Ctrl-C on the terminal
//! goes to the whole foreground process group, which includes CMD (it stays in our
//! group so that it can use the terminal). Forwarding that SIGINT too would hit CMD
//! twice, and many programs take a second Ctrl-C as "abort now, skip clean-up". So
//! the handler records whether the kernel sent the signal (the terminal driver does,
//! `SI_KERNEL`) or a process did (`kill`, `SI_USER`); only the latter is forwarded.
//! A process that signals the whole group itself (`kill -- -PGID`, systemd stopping
//! a unit's cgroup) still reaches CMD both directly and through us: nothing in the
//! signal tells a group kill from a kill of ferrolock alone.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::c_int;
use tokio::sync::mpsc;

/// Signals that neither kill ferrolock nor get lost: while waiting they cancel the
/// wait, while CMD runs they go to CMD.
pub const HANDLED: [c_int; 6] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

#[cfg(any(target_os = "linux", target_os = "android"))]
const SI_KERNEL: c_int = libc::SI_KERNEL;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const SI_KERNEL: c_int = c_int::MIN; // no such distinction known: forward everything

/// One received signal.
#[derive(Debug, Clone, Copy)]
pub struct Signal {
    pub number: c_int,
    /// Sent by the kernel to our whole process group (typically the terminal: Ctrl-C,
    /// Ctrl-\, hang-up), so CMD, in the same group, got it as well.
    pub to_group: bool,
}

impl Signal {
    pub fn name(&self) -> String {
        name(self.number)
    }
}

/// The received signals, in order.
pub struct Signals {
    rx: mpsc::UnboundedReceiver<Signal>,
}

/// Write end of the self-pipe; the only thing the handler touches.
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(number: c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let errno = errno_ptr();
    // SAFETY: errno_ptr is this thread's errno; info is the kernel's siginfo for this delivery.
    unsafe {
        let saved = if errno.is_null() { 0 } else { *errno };
        let to_group = !info.is_null() && (*info).si_code == SI_KERNEL;
        let record = [number as u8, to_group as u8];
        let fd = PIPE_WRITE.load(Ordering::Relaxed);
        if fd >= 0 {
            // Async-signal-safe; a 2-byte write to a pipe is atomic. If the pipe is full
            // (thousands of pending signals) dropping one is fine.
            libc::write(fd, record.as_ptr().cast(), record.len());
        }
        if !errno.is_null() {
            *errno = saved;
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn errno_ptr() -> *mut c_int {
    // SAFETY: always valid for the calling thread.
    unsafe { libc::__errno_location() }
}

#[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
fn errno_ptr() -> *mut c_int {
    // SAFETY: always valid for the calling thread.
    unsafe { libc::__error() }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "ios", target_os = "freebsd")))]
fn errno_ptr() -> *mut c_int {
    std::ptr::null_mut()
}

impl Signals {
    /// Installs the handlers for [`HANDLED`]. Call once, early.
    pub fn install() -> std::io::Result<Signals> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: plain libc calls on fds we own; the handler only reads PIPE_WRITE.
        unsafe {
            if libc::pipe(fds.as_mut_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for fd in fds {
                // CMD must not inherit the pipe.
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
            let flags = libc::fcntl(fds[1], libc::F_GETFL);
            libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        PIPE_WRITE.store(fds[1], Ordering::Relaxed);

        let (tx, rx) = mpsc::unbounded_channel();
        // SAFETY: fds[0] is the read end we just created and nothing else owns it.
        let mut read_end = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        std::thread::Builder::new().name("ferrolock-signals".into()).spawn(move || {
            let mut record = [0u8; 2];
            while read_end.read_exact(&mut record).is_ok() {
                let signal = Signal { number: c_int::from(record[0]), to_group: record[1] != 0 };
                if tx.send(signal).is_err() {
                    return;
                }
            }
        })?;

        for number in HANDLED {
            // SAFETY: a zeroed sigaction with our handler, an empty mask and SA_SIGINFO is valid.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(number, &action, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(Signals { rx })
    }

    /// The next signal (never resolves if the reader thread died).
    pub async fn recv(&mut self) -> Signal {
        match self.rx.recv().await {
            Some(signal) => signal,
            None => std::future::pending().await,
        }
    }

    /// A signal already received, if any.
    pub fn try_recv(&mut self) -> Option<Signal> {
        self.rx.try_recv().ok()
    }
}

/// Sends `number` to process `pid`.
pub fn send(pid: u32, number: c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions. The caller only passes the
    // pid of a child it has not reaped yet, so the pid cannot have been reused.
    unsafe {
        libc::kill(pid as libc::pid_t, number);
    }
}

/// "SIGTERM" for 15, "signal 40" for what we have no name for.
pub fn name(number: c_int) -> String {
    let known = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
    ];
    known
        .iter()
        .find(|(n, _)| *n == number)
        .map_or_else(|| format!("signal {number}"), |(_, name)| name.to_string())
}
