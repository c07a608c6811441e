//! How a status is shown: the kind's name, the text for people and the JSON for scripts.

use super::*;

pub(super) fn kind_text(status: &Status) -> &'static str {
    match status {
        Status::Lock(_) => "a lock",
        Status::Fair(..) => "a fair lock",
        Status::ReadWrite { .. } => "a read-write lock",
        Status::Semaphore { .. } => "a semaphore",
        Status::PermitSemaphore { .. } => "a permit-expirable semaphore",
        Status::Latch { .. } => "a count-down latch",
        Status::SemaphoreOrLatch { .. } => "a semaphore or a count-down latch",
    }
}

/// The `--json` shape of each kind, documented in `ferrolock status --help`;
/// `eviction`: the server's eviction policy when it may evict NAME's keys (a lock's
/// own status carries it).
pub(super) fn status_json(status: &Status, eviction: Option<&str>) -> serde_json::Value {
    let mut shown = kind_json(status);
    if let serde_json::Value::Object(fields) = &mut shown {
        fields.entry("eviction_policy").or_insert(json!(eviction));
    }
    shown
}

fn kind_json(status: &Status) -> serde_json::Value {
    let with_kind = |kind: &str, lock: &LockStatus, extra: serde_json::Value| {
        let mut fields = serde_json::Map::new();
        fields.insert("name".into(), json!(lock.name));
        fields.insert("kind".into(), json!(kind));
        if let serde_json::Value::Object(rest) = to_json(lock) {
            fields.extend(rest.into_iter().filter(|(k, _)| k != "name"));
        }
        if let serde_json::Value::Object(extra) = extra {
            fields.extend(extra);
        }
        serde_json::Value::Object(fields)
    };
    match status {
        Status::Lock(lock) => with_kind("lock", lock, json!({})),
        Status::Fair(lock, queue) => with_kind("fair_lock", lock, json!({"waiters": queue.len(), "queue": queue})),
        Status::ReadWrite { lock, mode, waiters } => with_kind("read_write_lock", lock, json!({"mode": mode, "waiters": waiters})),
        Status::Semaphore { name, free, waiters } => json!({"name": name, "kind": "semaphore", "free": free, "waiters": waiters}),
        Status::PermitSemaphore { name, free, out, waiters } => json!({
            "name": name,
            "kind": "permit_expirable_semaphore",
            "free": free,
            "out": out.iter().map(|p| json!({"id": p.id, "lease_left_ms": p.lease_left_ms})).collect::<Vec<_>>(),
            "waiters": waiters,
        }),
        Status::Latch { name, count, waiters } => {
            json!({"name": name, "kind": "count_down_latch", "count": count, "open": *count <= 0, "waiters": waiters})
        }
        Status::SemaphoreOrLatch { name, value } => json!({"name": name, "kind": "semaphore_or_latch", "value": value}),
    }
}

pub(super) fn status_text(status: &Status, eviction: Option<&str>) -> String {
    let mut lines: Vec<(&str, String)> = match status {
        Status::Lock(lock) => return to_text(lock),
        Status::Fair(lock, queue) => {
            let waiters = format!("{} in the queue, in this order:", queue.len());
            let mut text = lock_text(lock, Some(waiters), &[("kind", "fair lock".to_string())]);
            // The queue under the waiters line, before the last token.
            let last = text.rfind('\n').unwrap_or(text.len());
            let queued: String = queue.iter().enumerate().map(|(i, owner)| format!("\n{}", line(&format!("  {}", i + 1), owner))).collect();
            text.insert_str(last, &queued);
            return text;
        }
        Status::ReadWrite { lock, mode, waiters } => {
            let mode = match mode.as_deref() {
                Some("read") => "read (shared by the holders below)",
                Some("write") => "write (one holder, its read holds included)",
                Some(other) => other,
                None => "none (free)",
            };
            let waiters = format!("{waiters} (clients subscribed to the read-write lock's channel)");
            return lock_text(lock, Some(waiters), &[("kind", "read-write lock".to_string()), ("mode", mode.to_string())]);
        }
        Status::Semaphore { name, free, waiters } => vec![
            ("semaphore", name.clone()),
            ("kind", "semaphore".into()),
            ("free", format!("{free} permits")),
            ("waiters", format!("{waiters} (clients subscribed to its channel)")),
        ],
        Status::PermitSemaphore { name, free, out, waiters } => {
            let mut lines = vec![
                ("semaphore", name.clone()),
                ("kind", "permit-expirable semaphore".into()),
                ("free", format!("{free} permits")),
                ("out", format!("{} permits", out.len())),
            ];
            for permit in out {
                let lease = match permit.lease_left_ms {
                    None => "no lease".to_string(),
                    Some(ms) if ms < 0 => "expired (back at the next acquire)".to_string(),
                    Some(ms) => format!("lease {:.1} s left", ms as f64 / 1000.0),
                };
                lines.push(("  permit", format!("{} ({lease})", permit.id)));
            }
            lines.push(("waiters", format!("{waiters} (clients subscribed to its channel)")));
            lines
        }
        Status::Latch { name, count, waiters } => vec![
            ("latch", name.clone()),
            ("kind", "count-down latch".into()),
            ("count", if *count <= 0 { "0 (open)".to_string() } else { format!("{count} (counting down)") }),
            ("waiters", format!("{waiters} (clients subscribed to its channel)")),
        ],
        Status::SemaphoreOrLatch { name, value } => vec![
            ("key", name.clone()),
            ("kind", "a semaphore or a count-down latch (nothing tells which: give --kind)".into()),
            ("value", format!("{value} (free permits, or the count)")),
        ],
    };
    if let Some(policy) = eviction {
        lines.push(("eviction", eviction_text(policy)));
    }
    lines.iter().map(|(label, value)| line(label, value)).collect::<Vec<_>>().join("\n")
}

/// `status --check` over `n` servers, `locked` and `free` of which answered: held
/// means held on a majority (what a Redlock needs); free means on so many that no
/// majority can hold it; anything in between cannot be told (`None`: the error decides).

pub(super) fn to_json(status: &LockStatus) -> serde_json::Value {
    let lease_ms = match status.remaining_lease {
        None => serde_json::Value::Null,
        Some(Duration::MAX) => json!(-1),
        Some(lease) => json!(lease.as_millis() as u64),
    };
    json!({
        "name": status.name,
        "locked": status.is_locked(),
        "holders": status.holders.iter().map(holder_json).collect::<Vec<_>>(),
        "remaining_lease_ms": lease_ms,
        "waiters": status.subscribers,
        "last_token": status.last_token,
        "eviction_policy": status.eviction_policy,
    })
}

/// A holder in `--json`: its owner field and count, its note as stored (`info`), how
/// long it has held (`held_for_ms`, from its note) and who it is for people (`description`).
pub fn holder_json(h: &HolderEntry) -> serde_json::Value {
    json!({
        "owner": h.owner,
        "count": h.count,
        "info": info_json(h.info.as_deref()),
        "held_for_ms": h.held_for.map(|d| d.as_millis() as u64),
        "description": h.info.is_some().then(|| h.describe()),
    })
}

/// A holder's info in `--json`: a JSON object stays one (a `ferrolock run` stores
/// {host, pid, cmd, renewed}); any other text is a string.
pub fn info_json(info: Option<&str>) -> serde_json::Value {
    match info.map(serde_json::from_str::<serde_json::Value>) {
        None => serde_json::Value::Null,
        Some(Ok(object @ serde_json::Value::Object(_))) => object,
        Some(_) => json!(info),
    }
}

/// The warning line of a server that may evict lock keys.
fn eviction_text(policy: &str) -> String {
    format!("WARNING: maxmemory-policy {policy} lets the server evict lock keys (a held lock can vanish); set maxmemory-policy noeviction")
}

pub(super) fn line(label: &str, value: &str) -> String {
    format!("{:<12}{value}", format!("{label}:"))
}

pub(super) fn to_text(status: &LockStatus) -> String {
    lock_text(status, None, &[])
}

/// A lock's lines: `kind` (after the state) and `waiters` (in place of the
/// subscribers of the lock's channel) when the kind says more than that.
pub(super) fn lock_text(status: &LockStatus, waiters: Option<String>, extra: &[(&str, String)]) -> String {
    let mut lines = vec![
        ("lock", status.name.clone()),
        ("state", if status.is_locked() { "held" } else { "free" }.to_string()),
    ];
    lines.extend(extra.iter().cloned());
    for holder in &status.holders {
        lines.push(("holder", format!("{} (count {})", holder.owner, holder.count)));
        if holder.info.is_some() {
            lines.push(("  who", holder.describe()));
        }
    }
    match status.remaining_lease {
        None => {}
        Some(Duration::MAX) => lines.push(("lease", "no expiry".to_string())),
        Some(lease) => lines.push(("lease", format!("{:.1} s left", lease.as_secs_f64()))),
    }
    let waiters = waiters.unwrap_or_else(|| format!("{} (clients subscribed to the lock's channel)", status.subscribers));
    lines.push(("waiters", waiters));
    lines.push(("last token", status.last_token.map_or_else(|| "none".to_string(), |t| t.to_string())));
    if let Some(policy) = &status.eviction_policy {
        lines.push(("eviction", eviction_text(policy)));
    }
    lines.iter().map(|(label, value)| line(label, value)).collect::<Vec<_>>().join("\n")
}
