//! `ferrolock top [PREFIX]`: every lock-family object under PREFIX (core's
//! `Client::scan`, then `Client::inspect` of each), refreshed every second in the
//! terminal, or printed once (`--once`, `--json`). How long a hold or a wait has
//! lasted is what the live view has seen: the server keeps no such time.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use ferrolock::{Client, ErrorKind};

use crate::args::TopArgs;
use crate::exit;
use crate::target::{self, redact, Target};

mod term;
mod view;

use term::{Key, Screen};
use view::Row;

const REFRESH: Duration = Duration::from_secs(1);

pub fn main(targets: Vec<Target>, args: TopArgs) -> i32 {
    if targets.len() > 1 {
        exit::say(&format!("top takes one URL, not {}: it lists the objects of one deployment", targets.len()));
        return exit::USAGE;
    }
    let live = !(args.once || args.json);
    // SAFETY: isatty only looks at the descriptors.
    if live && unsafe { libc::isatty(0) == 0 || libc::isatty(1) == 0 } {
        exit::say("top needs a terminal for its live view; give --once (one screen) or --json (the data once)");
        return exit::USAGE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            exit::say(&format!("cannot start the async runtime: {e}"));
            return exit::INTERNAL;
        }
    };
    let prefix = args.prefix.as_deref().map(|p| p.as_bytes().to_vec()).unwrap_or_default();
    let target = targets.into_iter().next().expect("resolve gives one URL at least");
    runtime.block_on(async move {
        let client = match target::connect(&target, None).await {
            Ok(client) => client,
            Err(code) => return code,
        };
        let code = if live { watch(&client, &target, &prefix).await } else { once(&client, &target, &prefix, args.json).await };
        let _ = client.shutdown().await;
        code
    })
}

async fn once(client: &Client, target: &Target, prefix: &[u8], as_json: bool) -> i32 {
    let mut rows = match read(client, prefix).await {
        Ok(rows) => rows,
        Err(e) => return exit::fail(&e),
    };
    view::sort(&mut rows);
    let shown = String::from_utf8_lossy(prefix);
    if as_json {
        println!("{}", view::json(&shown, &rows));
    } else {
        println!("{}", screen(target, &shown, &rows, None, "").join("\n"));
    }
    0
}

/// The names under the prefix, each inspected (all at once); a name that changed
/// kind or went away between the two reads is left out of this round.
async fn read(client: &Client, prefix: &[u8]) -> ferrolock::Result<Vec<Row>> {
    let mut reads = tokio::task::JoinSet::new();
    for name in client.scan(prefix).await? {
        let client = client.clone();
        reads.spawn(async move { client.inspect(&name).await });
    }
    let mut rows = Vec::new();
    while let Some(done) = reads.join_next().await {
        match done.map_err(|e| ferrolock::Error::new(ErrorKind::Internal, format!("inspecting: {e}")))? {
            Ok(found) => rows.push(Row::new(found)),
            Err(e) if matches!(e.kind(), ErrorKind::WrongType | ErrorKind::InvalidArgument) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(rows)
}

/// What the live view has seen of one name: its holders since when, waiters since when.
#[derive(Default)]
struct Seen {
    holders: Vec<String>,
    held_since: Option<Instant>,
    waiting_since: Option<Instant>,
}

/// Fills in how long each hold and wait has been seen, and forgets names gone.
fn observe(seen: &mut HashMap<String, Seen>, rows: &mut [Row], now: Instant) {
    seen.retain(|name, _| rows.iter().any(|r| &r.name == name));
    for row in rows {
        let entry = seen.entry(row.name.clone()).or_default();
        let holders: Vec<String> = row.holders.iter().map(|h| h.owner.clone()).collect();
        if holders.is_empty() {
            entry.held_since = None;
        } else if holders != entry.holders || entry.held_since.is_none() {
            entry.held_since = Some(now);
        }
        entry.holders = holders;
        entry.waiting_since = match (row.waiters, entry.waiting_since) {
            (0, _) => None,
            (_, Some(since)) => Some(since),
            (_, None) => Some(now),
        };
        // The holders' notes know since when (the server's clock); else since top saw them.
        let noted = row.holders.iter().filter_map(|h| h.held_for).max();
        row.held_for = entry.held_since.map(|since| now - since).max(noted);
        row.waiting_for = entry.waiting_since.map(|since| now - since);
    }
}

/// The filter: being typed (`editing`) or kept.
struct Controls {
    filter: String,
    editing: bool,
}

async fn watch(client: &Client, target: &Target, prefix: &[u8]) -> i32 {
    let screen = match Screen::open() {
        Ok(screen) => screen,
        Err(e) => {
            exit::say(&format!("cannot put the terminal in raw mode ({e}); give --once or --json"));
            return exit::USAGE;
        }
    };
    let mut keys = term::keys();
    let mut seen = HashMap::new();
    let mut controls = Controls { filter: String::new(), editing: false };
    let shown = String::from_utf8_lossy(prefix).into_owned();
    let mut rows: Vec<Row> = Vec::new();
    let mut error: Option<String> = None;
    let mut tick = tokio::time::interval(REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                match read(client, prefix).await {
                    Ok(mut fresh) => {
                        observe(&mut seen, &mut fresh, Instant::now());
                        view::sort(&mut fresh);
                        rows = fresh;
                        error = None;
                    }
                    // Kept on screen, with the last rows, until a refresh works again.
                    Err(e) => error = Some(e.message().to_string()),
                }
            }
            key = keys.recv() => match key {
                None | Some(Key::Interrupt) => break,
                Some(Key::Char('q')) if !controls.editing => break,
                Some(Key::Char('/')) if !controls.editing => {
                    controls.editing = true;
                    controls.filter.clear();
                }
                Some(Key::Char(c)) if controls.editing => controls.filter.push(c),
                Some(Key::Backspace) if controls.editing => {
                    controls.filter.pop();
                }
                Some(Key::Enter) => controls.editing = false,
                Some(Key::Escape) => {
                    controls.editing = false;
                    controls.filter.clear();
                }
                Some(_) => {}
            }
        }
        let kept: Vec<&Row> = rows.iter().filter(|r| r.matches(&controls.filter)).collect();
        let mut lines = screen_of(target, &shown, &kept, error.as_deref(), &controls.filter);
        lines.push(match (controls.editing, controls.filter.is_empty()) {
            (true, _) => format!("/{}", controls.filter),
            (false, true) => "q quit  / filter".to_string(),
            (false, false) => format!("q quit  / filter (now: {}; Esc clears)", controls.filter),
        });
        screen.draw(&lines);
    }
    drop(screen);
    0
}

fn screen(target: &Target, prefix: &str, rows: &[Row], error: Option<&str>, filter: &str) -> Vec<String> {
    screen_of(target, prefix, &rows.iter().collect::<Vec<_>>(), error, filter)
}

/// A head line (where, what, when), the error of the last refresh if any, the table.
fn screen_of(target: &Target, prefix: &str, rows: &[&Row], error: Option<&str>, filter: &str) -> Vec<String> {
    let under = if prefix.is_empty() { "every name".to_string() } else { format!("names under \"{prefix}\"") };
    let filtered = if filter.is_empty() { String::new() } else { format!(", filtered by \"{filter}\"") };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let clock = format!("{:02}:{:02}:{:02} UTC", now / 3600 % 24, now / 60 % 60, now % 60);
    let mut lines = vec![format!("ferrolock top: {} on {}{filtered} ({} objects) at {clock}", under, redact(&target.url), rows.len())];
    if let Some(error) = error {
        lines.push(format!("error: {error}"));
    }
    lines.push(String::new());
    lines.extend(view::table_of(rows));
    lines
}
