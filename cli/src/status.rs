//! `ferrolock status`: who holds a lock, for how long still, and who waits; with
//! several URLs, on each of them.

use std::ffi::OsStr;
use std::time::Duration;

use ferrolock::{Error, LockStatus};
use serde_json::json;

use crate::exit;
use crate::target::{self, redact, Target};

pub async fn run(targets: Vec<Target>, name: &OsStr, as_json: bool) -> i32 {
    if targets.len() > 1 {
        return run_each(&targets, name, as_json).await;
    }
    match target::with_lock(&targets[0], name, |lock| async move { lock.status().await }).await {
        Err(code) => code,
        Ok(Ok(status)) => {
            println!("{}", if as_json { to_json(&status).to_string() } else { to_text(&status) });
            0
        }
        Ok(Err(e)) => exit::fail(&e),
    }
}

/// Several URLs: the lock's status on each server (one client each), in order. A
/// server that cannot be read is shown with its error, and its exit code (the
/// first such) is the exit status once every server was shown.
async fn run_each(targets: &[Target], name: &OsStr, as_json: bool) -> i32 {
    let mut tasks = Vec::with_capacity(targets.len());
    for t in targets {
        let target = Target { url: t.url.clone(), source: t.source, sentinel: t.sentinel.clone() };
        let name = name.to_os_string();
        tasks.push(tokio::spawn(async move {
            target::try_with_lock(&target, &name, |lock| async move { lock.status().await }).await
        }));
    }
    let mut results: Vec<Result<LockStatus, Error>> = Vec::with_capacity(tasks.len());
    for task in tasks {
        results.push(task.await.unwrap_or_else(|e| Err(Error::new(ferrolock::ErrorKind::Internal, format!("status task failed: {e}")))));
    }
    // The first server that could not be read decides the exit status (after all are shown).
    let code = results.iter().find_map(|r| r.as_ref().err()).map_or(0, |e| exit::for_kind(e.kind()));
    let shown = name.to_string_lossy();
    let locked = results.iter().filter(|r| r.as_ref().is_ok_and(LockStatus::is_locked)).count();
    let n = targets.len();
    if as_json {
        let servers: Vec<serde_json::Value> = targets
            .iter()
            .zip(&results)
            .map(|(t, r)| {
                let mut entry = serde_json::Map::new();
                entry.insert("url".into(), json!(redact(&t.url)));
                match r {
                    Ok(status) => {
                        if let serde_json::Value::Object(fields) = to_json(status) {
                            entry.extend(fields.into_iter().filter(|(k, _)| k != "name"));
                        }
                    }
                    Err(e) => {
                        entry.insert("error".into(), json!(e.message()));
                    }
                }
                serde_json::Value::Object(entry)
            })
            .collect();
        println!("{}", json!({"name": shown, "locked_on": locked, "servers": servers}));
    } else {
        let mut blocks = vec![format!(
            "{}\n{}",
            line("lock", &shown),
            line("servers", &format!("{n}; held on {locked} (a redlock needs {}, --all {n})", n / 2 + 1))
        )];
        for (target, result) in targets.iter().zip(&results) {
            let head = line("server", &redact(&target.url));
            blocks.push(match result {
                Ok(status) => format!("{head}\n{}", to_text(status)),
                Err(e) => format!("{head}\n{}", line("error", e.message())),
            });
        }
        println!("{}", blocks.join("\n\n"));
    }
    if code != 0 {
        for (target, result) in targets.iter().zip(&results) {
            if let Err(e) = result {
                exit::say(&format!("{}: {}", redact(&target.url), e.message()));
            }
        }
    }
    code
}

/// The `--json` shape, documented in `ferrolock status --help`.
fn to_json(status: &LockStatus) -> serde_json::Value {
    let lease_ms = match status.remaining_lease {
        None => serde_json::Value::Null,
        Some(Duration::MAX) => json!(-1),
        Some(lease) => json!(lease.as_millis() as u64),
    };
    json!({
        "name": status.name,
        "locked": status.is_locked(),
        "holders": status.holders.iter().map(|h| json!({"owner": h.owner, "count": h.count})).collect::<Vec<_>>(),
        "remaining_lease_ms": lease_ms,
        "waiters": status.subscribers,
        "last_token": status.last_token,
    })
}

fn line(label: &str, value: &str) -> String {
    format!("{:<12}{value}", format!("{label}:"))
}

fn to_text(status: &LockStatus) -> String {
    let mut lines = vec![
        ("lock", status.name.clone()),
        ("state", if status.is_locked() { "held" } else { "free" }.to_string()),
    ];
    for holder in &status.holders {
        lines.push(("holder", format!("{} (count {})", holder.owner, holder.count)));
    }
    match status.remaining_lease {
        None => {}
        Some(Duration::MAX) => lines.push(("lease", "no expiry".to_string())),
        Some(lease) => lines.push(("lease", format!("{:.1} s left", lease.as_secs_f64()))),
    }
    lines.push(("waiters", format!("{} (clients subscribed to the lock's channel)", status.subscribers)));
    lines.push(("last token", status.last_token.map_or_else(|| "none".to_string(), |t| t.to_string())));
    lines.iter().map(|(label, value)| line(label, value)).collect::<Vec<_>>().join("\n")
}
