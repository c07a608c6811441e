//! What becomes of CMD if ferrolock itself dies while CMD runs (SIGKILL, the OOM
//! killer, a crash): nothing renews the lock any more, so CMD must stop, as it does
//! when the lock is lost. Linux only (elsewhere CMD goes on running).
//!
//! - CMD is started with a parent-death signal (`PR_SET_PDEATHSIG`): the kernel sends
//!   it SIGTERM when ferrolock goes. The kernel ties that signal to the *thread* that
//!   forked CMD, not the process: CMD is forked from the main thread (the one that
//!   runs `block_on` in main.rs, which ends only with the process), and elsewhere the
//!   signal is not set (the guard below sends the SIGTERM instead).
//! - With `--kill-after`, a guard process waits for ferrolock to go and sends SIGKILL
//!   if CMD still runs that long after: nothing else would once ferrolock is dead.
//!   It is ferrolock itself (`/proc/self/exe`, which stays valid even if the binary is
//!   replaced meanwhile), started with the hidden first argument [`GUARD_ARG`]; it
//!   learns of ferrolock's end by its stdin, a pipe whose only writer is ferrolock
//!   (end of file: ferrolock is gone, whatever the reason), and holds CMD by a pidfd
//!   made while CMD was ferrolock's unreaped child, so it can never signal another
//!   process that got CMD's pid after CMD ended. After a normal exit CMD has ended
//!   already: the guard finds that and leaves quietly. Only the one SIGTERM is sent
//!   (by the kernel, or by the guard when the kernel could not be asked): a second one
//!   makes some programs skip their clean-up.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The hidden first argument that makes this process CMD's guard:
/// `ferrolock <GUARD_ARG> <kill after, ms> <term|no-term>`, CMD's pidfd as fd 3.
pub const GUARD_ARG: &str = "__cmd-guard";

/// The fd the guard finds CMD's pidfd on.
const PIDFD: RawFd = 3;

/// How CMD is protected, decided before it is started.
pub struct Protection {
    /// The kernel sends CMD SIGTERM when ferrolock's main thread (its forking thread) ends.
    pdeathsig: bool,
    kill_after: Option<Duration>,
}

impl Protection {
    /// Made on the thread that will fork CMD.
    pub fn here(kill_after: Option<Duration>) -> Protection {
        #[cfg(target_os = "linux")]
        // SAFETY: plain system calls. gettid by syscall: glibc has a wrapper only from
        // 2.30, and the release binaries link against glibc 2.17.
        let main_thread = unsafe { libc::syscall(libc::SYS_gettid) == libc::getpid() as libc::c_long };
        #[cfg(not(target_os = "linux"))]
        let main_thread = false;
        Protection { pdeathsig: main_thread, kill_after }
    }

    /// Run in CMD between fork and exec (async-signal-safe calls only): asks the kernel
    /// for SIGTERM when ferrolock goes, and gives up if it went already (before the
    /// request, which then never fires).
    pub fn in_child(&self, parent: libc::pid_t) -> std::io::Result<()> {
        if !self.pdeathsig {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        // SAFETY: prctl and getppid are async-signal-safe system calls.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        Ok(())
    }

    /// Once CMD (`pid`, not reaped yet) runs: starts its guard when one is needed.
    /// A guard that cannot be started is said on stderr; CMD runs all the same.
    pub fn guard(&self, pid: u32) {
        if cfg!(not(target_os = "linux")) || (self.pdeathsig && self.kill_after.is_none()) {
            return;
        }
        if let Err(e) = start_guard(pid, self.kill_after, !self.pdeathsig) {
            crate::exit::say(&format!(
                "warning: cannot start the process that stops the command (pid {pid}) if ferrolock dies: {e}"
            ));
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn start_guard(_pid: u32, _kill_after: Option<Duration>, _term: bool) -> std::io::Result<()> {
    Ok(())
}

#[cfg(target_os = "linux")]
fn start_guard(pid: u32, kill_after: Option<Duration>, term: bool) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    // SAFETY: pidfd_open returns a new fd (close-on-exec) or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if pidfd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    let raw = pidfd.as_raw_fd();
    let after_ms = kill_after.map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as i64);
    let mut cmd = std::process::Command::new("/proc/self/exe");
    cmd.arg(GUARD_ARG)
        .arg(after_ms.to_string())
        .arg(if term { "term" } else { "no-term" })
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        // Not in our process group: a Ctrl-C meant for ferrolock and CMD passes it by.
        .process_group(0);
    // SAFETY: dup2 is async-signal-safe; it leaves the copy open across exec.
    unsafe {
        cmd.pre_exec(move || match libc::dup2(raw, PIDFD) {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
    let mut guard = cmd.spawn()?;
    // The pipe's write end stays open until this process ends, however it ends.
    std::mem::forget(guard.stdin.take());
    Ok(())
}

/// The guard's life, when this process was started as one: `Some(exit code)`.
pub fn guard_main(args: &[OsString]) -> Option<i32> {
    if args.get(1).is_none_or(|a| a != GUARD_ARG) {
        return None;
    }
    let after_ms: i64 = args.get(2)?.to_str()?.parse().ok()?;
    let term = args.get(3).is_some_and(|a| a == "term");
    #[cfg(target_os = "linux")]
    guard(after_ms, term);
    Some(0)
}

/// Waits for ferrolock to go, then stops CMD (see the module comment).
#[cfg(target_os = "linux")]
fn guard(after_ms: i64, term: bool) {
    // SAFETY: plain system calls on our own process and the fds we were given.
    unsafe {
        for signal in crate::signals::HANDLED.into_iter().chain([libc::SIGPIPE]) {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin().lock();
    // Ends when ferrolock is gone (it never writes).
    while !matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {}
    // SAFETY: fd 3 is CMD's pidfd (see `start_guard`).
    unsafe {
        let ended = |wait_ms: libc::c_int| {
            let mut fd = libc::pollfd { fd: PIDFD, events: libc::POLLIN, revents: 0 };
            libc::poll(&mut fd, 1, wait_ms) != 0
        };
        if ended(0) {
            return;
        }
        let send = |signal: libc::c_int| libc::syscall(libc::SYS_pidfd_send_signal, PIDFD, signal, std::ptr::null::<libc::siginfo_t>(), 0);
        if term {
            send(libc::SIGTERM);
        }
        if after_ms >= 0 && !ended(after_ms.min(libc::c_int::MAX as i64) as libc::c_int) {
            crate::exit::say("ferrolock ended while the command ran; it outlived --kill-after: sending SIGKILL");
            send(libc::SIGKILL);
        }
    }
}
