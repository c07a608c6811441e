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

pub struct Spinner {
    latest: Arc<Mutex<Option<(LockStatus, Instant)>>>,
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
        *self.latest.lock().unwrap() = Some((status, Instant::now()));
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

fn draw_until_stopped(name: &str, latest: &Mutex<Option<(LockStatus, Instant)>>, stopped: &mpsc::Receiver<()>) {
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

fn describe(name: &str, waited: Duration, latest: Option<&(LockStatus, Instant)>) -> String {
    let head = format!("waiting {} s for lock \"{name}\"", waited.as_secs());
    let Some((status, at)) = latest else { return head };
    let Some(first) = status.holders.first() else { return format!("{head}: free, acquiring") };
    // The lease first: on a narrow terminal the long owner field is what gets cut.
    let lease = match status.remaining_lease {
        Some(Duration::MAX) => "no expiry".to_string(),
        // Counted down between refreshes so the line moves smoothly.
        Some(lease) => format!("{:.1} s lease left", lease.saturating_sub(at.elapsed()).as_secs_f64()),
        None => "lease unknown".to_string(),
    };
    let mut text = format!("{head}: {lease}, held by {}", first.owner);
    if first.count > 1 {
        text.push_str(&format!(" (x{})", first.count));
    }
    if status.holders.len() > 1 {
        text.push_str(&format!(" and {} more", status.holders.len() - 1));
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
