//! `ferrolock status`: who holds a lock, for how long still, and who waits.

use std::ffi::OsStr;
use std::time::Duration;

use ferrolock::LockStatus;
use serde_json::json;

use crate::exit;
use crate::target::{self, Target};

pub async fn run(target: Target, name: &OsStr, as_json: bool) -> i32 {
    match target::with_lock(&target, name, |lock| async move { lock.status().await }).await {
        Err(code) => code,
        Ok(Ok(status)) => {
            println!("{}", if as_json { to_json(&status).to_string() } else { to_text(&status) });
            0
        }
        Ok(Err(e)) => exit::fail(&e),
    }
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
    lines.iter().map(|(label, value)| format!("{:<12}{value}", format!("{label}:"))).collect::<Vec<_>>().join("\n")
}
