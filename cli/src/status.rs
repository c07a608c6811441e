//! `ferrolock status`: who holds a lock, for how long still, and who waits; with
//! several URLs, on each of them.

use std::ffi::OsStr;
use std::time::Duration;

use ferrolock::{Error, LockStatus};
use serde_json::json;

use crate::exit;
use crate::target::{self, redact, Target};

/// `check`: the exit status says held (0) or free (1) instead of 0 for both.
pub async fn run(targets: Vec<Target>, name: &OsStr, as_json: bool, check: bool) -> i32 {
    if targets.len() > 1 {
        return run_each(&targets, name, as_json, check).await;
    }
    match target::with_lock(&targets[0], name, |lock| async move { lock.status().await }).await {
        Err(code) => code,
        Ok(Ok(status)) => {
            println!("{}", if as_json { to_json(&status).to_string() } else { to_text(&status) });
            match (check, status.is_locked()) {
                (true, false) => exit::CONFLICT,
                _ => 0,
            }
        }
        Ok(Err(e)) => exit::fail(&e),
    }
}

/// `status --check` over `n` servers, `locked` and `free` of which answered: held
/// means held on a majority (what a Redlock needs); free means on so many that no
/// majority can hold it; anything in between cannot be told (`None`: the error decides).
fn check_several(n: usize, locked: usize, free: usize) -> Option<i32> {
    let majority = n / 2 + 1;
    if locked >= majority {
        Some(0)
    } else if free > n - majority {
        Some(exit::CONFLICT)
    } else {
        None
    }
}

/// Several URLs: the lock's status on each server (one client each), in order. A
/// server that cannot be read is shown with its error, and its exit code (the
/// first such) is the exit status once every server was shown.
async fn run_each(targets: &[Target], name: &OsStr, as_json: bool, check: bool) -> i32 {
    let mut tasks = Vec::with_capacity(targets.len());
    for t in targets {
        let target = t.clone();
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
    let free = results.iter().filter(|r| r.as_ref().is_ok_and(|s| !s.is_locked())).count();
    let n = targets.len();
    let code = match check {
        true => check_several(n, locked, free).unwrap_or(code),
        false => code,
    };
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
    if results.iter().any(Result::is_err) {
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
        "holders": status.holders.iter().map(|h| json!({"owner": h.owner, "count": h.count, "info": info_json(h.info.as_deref())})).collect::<Vec<_>>(),
        "remaining_lease_ms": lease_ms,
        "waiters": status.subscribers,
        "last_token": status.last_token,
    })
}

/// A holder's info in `--json`: a JSON object stays one (a `ferrolock run` stores
/// {host, pid, cmd, renewed}); any other text is a string.
fn info_json(info: Option<&str>) -> serde_json::Value {
    match info.map(serde_json::from_str::<serde_json::Value>) {
        None => serde_json::Value::Null,
        Some(Ok(object @ serde_json::Value::Object(_))) => object,
        Some(_) => json!(info),
    }
}

/// A holder's info for people: "ferrolock run on web1, pid 4242: ./deploy.sh" for
/// what a `ferrolock run` stored, the text itself otherwise.
pub fn describe_info(info: &str) -> String {
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_str(info) else { return info.to_string() };
    match (fields.get("host").and_then(|v| v.as_str()), fields.get("pid").and_then(|v| v.as_u64()), fields.get("cmd").and_then(|v| v.as_str())) {
        (Some(host), Some(pid), Some(cmd)) => format!("ferrolock run on {host}, pid {pid}: {cmd}"),
        _ => info.to_string(),
    }
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
        if let Some(info) = holder.info.as_deref() {
            lines.push(("  info", describe_info(info)));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_over_several_servers_answers_only_what_the_answers_prove() {
        // 3 servers: a majority is 2.
        assert_eq!(check_several(3, 2, 0), Some(0));
        assert_eq!(check_several(3, 2, 1), Some(0));
        assert_eq!(check_several(3, 0, 2), Some(exit::CONFLICT));
        assert_eq!(check_several(3, 1, 2), Some(exit::CONFLICT));
        // One held, one free, one unreadable: a Redlock may or may not hold it.
        assert_eq!(check_several(3, 1, 1), None);
        assert_eq!(check_several(3, 0, 1), None);
        // 2 servers: a majority is 2, so one free server already rules it out.
        assert_eq!(check_several(2, 1, 1), Some(exit::CONFLICT));
        assert_eq!(check_several(2, 1, 0), None);
    }
}
