//! The "waiting for lock" line shown on a terminal while `run` waits.
//!
//! It draws from a thread of its own: a terminal that stops reading (Ctrl-S,
//! a paused tmux pane) blocks the writes, and that must never stall the async
//! tasks that acquire or renew the lock.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferrolock::LockStatus;

const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
const TICK: Duration = Duration::from_millis(100);
/// Acquisitions that succeed quickly show nothing instead of a flash.
const SHOW_AFTER: Duration = Duration::from_millis(200);

/// Renewal shows as a lease left that grew (PTTL only ever shrinks otherwise); the
/// margin covers the time between reading the lease and taking `Instant::now()`.
const GROWTH_MARGIN: Duration = Duration::from_millis(100);

/// The latest snapshot, and whether the lease of its (first) holder is being renewed.
struct Seen {
    status: LockStatus,
    at: Instant,
    renewed: bool,
}

pub struct Spinner {
    latest: Arc<Mutex<Option<Seen>>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts the line for lock `name`, or `None` when stderr is not a terminal.
    pub fn start(name: &str) -> Option<Spinner> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let latest = Arc::new(Mutex::new(None));
        let (stop, stopped) = mpsc::channel();
        let (name, shared) = (name.to_string(), latest.clone());
        let thread = std::thread::Builder::new()
            .name("ferrolock-spinner".into())
            .spawn(move || draw_until_stopped(&name, &shared, &stopped))
            .ok()?;
        Some(Spinner { latest, stop: Some(stop), thread: Some(thread) })
    }

    /// Shows the holder and lease of this snapshot from now on.
    pub fn show(&self, status: LockStatus) {
        let at = Instant::now();
        let mut latest = self.latest.lock().unwrap();
        let renewed = holder_says_renewed(&status)
            .unwrap_or_else(|| latest.as_ref().is_some_and(|before| renewed_since(before, &status, at)));
        *latest = Some(Seen { status, at, renewed });
    }

    /// Clears the line (after this, stderr is free for messages).
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.finish();
    }
}

fn draw_until_stopped(name: &str, latest: &Mutex<Option<Seen>>, stopped: &mpsc::Receiver<()>) {
    let started = Instant::now();
    if !matches!(stopped.recv_timeout(SHOW_AFTER), Err(RecvTimeoutError::Timeout)) {
        return;
    }
    let mut stderr = std::io::stderr();
    for frame in FRAMES.iter().cycle() {
        let text = describe(name, started.elapsed(), latest.lock().unwrap().as_ref());
        let line: String = format!("{frame} {text}").chars().take(width().saturating_sub(1)).collect();
        let _ = write!(stderr, "\r{line}\x1b[K");
        let _ = stderr.flush();
        if !matches!(stopped.recv_timeout(TICK), Err(RecvTimeoutError::Timeout)) {
            break;
        }
    }
    let _ = write!(stderr, "\r\x1b[K");
    let _ = stderr.flush();
}

/// Whether the holder's lease is renewed by a watchdog, as far as the holder says
/// (every client's note says `"renewed"`); `None`: it left no note.
fn holder_says_renewed(status: &LockStatus) -> Option<bool> {
    status.holders.first()?.note.as_ref()?.renewed
}

/// Whether the lease grew between two snapshots of the same holder: only a renewal does that.
fn renewed_since(before: &Seen, now: &LockStatus, at: Instant) -> bool {
    let same_holder = matches!((before.status.holders.first(), now.holders.first()), (Some(a), Some(b)) if a.owner == b.owner);
    if !same_holder {
        return false;
    }
    if before.renewed {
        return true;
    }
    match (before.status.remaining_lease, now.remaining_lease) {
        (Some(then), Some(left)) if then != Duration::MAX && left != Duration::MAX => {
            left > then.saturating_sub(at.duration_since(before.at)) + GROWTH_MARGIN
        }
        _ => false,
    }
}

fn describe(name: &str, waited: Duration, latest: Option<&Seen>) -> String {
    let head = format!("waiting {} s for lock \"{name}\"", waited.as_secs());
    let Some(Seen { status, at, renewed }) = latest else { return head };
    let Some(first) = status.holders.first() else { return format!("{head}: free, acquiring") };
    // The lease first: on a narrow terminal the long owner field is what gets cut.
    let lease = match status.remaining_lease {
        Some(Duration::MAX) => "held, no expiry, by".to_string(),
        // A countdown that jumps back up at every renewal would only mislead.
        Some(_) if *renewed => "held, lease renewed, by".to_string(),
        // Counted down between refreshes so the line moves smoothly.
        Some(lease) => format!("{:.1} s lease left, held by", lease.saturating_sub(at.elapsed()).as_secs_f64()),
        None => "lease unknown, held by".to_string(),
    };
    let mut text = format!("{head}: {lease} {}", first.owner);
    if first.count > 1 {
        text.push_str(&format!(" (x{})", first.count));
    }
    if status.holders.len() > 1 {
        text.push_str(&format!(" and {} more", status.holders.len() - 1));
    }
    if let Some(who) = first.info.is_some().then(|| first.describe()) {
        text.push_str(&format!(" ({who})"));
    }
    text
}

/// Columns of the terminal on stderr: a line longer than that would wrap, and `\r`
/// would then redraw only its last row.
fn width() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize; a zeroed one is a valid starting value.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}
