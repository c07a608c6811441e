//! What `top` shows of each object: one row, sorted by the longest wait then the
//! longest hold, as text lines for people and as JSON for scripts.

use std::cmp::Reverse;
use std::time::Duration;

use ferrolock::{Inspection, ObjectKind};
use serde_json::json;


/// One holder: an owner field (or a permit's id) with its count and note.
pub(super) struct Holder {
    pub owner: String,
    pub count: u64,
    /// Who it is for people (its note described), when it left a note.
    pub who: Option<String>,
    /// How long it has held, by its note (the server's clock).
    pub held_for: Option<Duration>,
    pub json: serde_json::Value,
}

pub(super) struct Row {
    pub name: String,
    pub kind: ObjectKind,
    pub state: String,
    pub holders: Vec<Holder>,
    /// How long the current holders have been seen (live view only).
    pub held_for: Option<Duration>,
    /// `Duration::MAX`: no expiry.
    pub lease_left: Option<Duration>,
    pub waiters: u64,
    /// How long waiters have been seen (live view only).
    pub waiting_for: Option<Duration>,
    pub last_token: Option<u64>,
    pub permits: Option<i64>,
    pub count: Option<i64>,
}

impl Row {
    pub fn new(found: Inspection) -> Row {
        let state = match found.kind {
            ObjectKind::ReadWriteLock => found.mode.clone().unwrap_or_else(|| "free".into()),
            kind if kind.is_lock() => if found.holders().is_empty() { "free" } else { "held" }.into(),
            ObjectKind::CountDownLatch => match found.count {
                Some(count) if count > 0 => format!("count:{count}"),
                _ => "open".into(),
            },
            ObjectKind::SemaphoreOrLatch => format!("value:{}", found.permits.unwrap_or(0)),
            _ => format!("free:{}", found.permits.unwrap_or(0)),
        };
        let mut holders: Vec<Holder> =
            found.holders().iter().map(|h| Holder {
                owner: h.owner.clone(),
                count: h.count,
                who: h.info.is_some().then(|| h.describe()),
                held_for: h.held_for,
                json: crate::status::holder_json(h),
            }).collect();
        holders.extend(found.permits_out.iter().map(|p| Holder {
            owner: p.id.clone(),
            count: 1,
            who: None,
            held_for: None,
            json: json!({"owner": p.id, "count": 1, "info": null}),
        }));
        let lease_left = match found.kind {
            // The permit whose lease ends last.
            ObjectKind::PermitExpirableSemaphore if !found.permits_out.is_empty() => {
                let lasts = found.permits_out.iter().map(|p| p.lease_left_ms.map_or(Duration::MAX, |ms| Duration::from_millis(ms.max(0) as u64)));
                lasts.max()
            }
            _ => found.lease_left(),
        };
        Row {
            state,
            holders,
            held_for: None,
            lease_left,
            waiters: found.waiters,
            waiting_for: None,
            last_token: found.last_token(),
            permits: found.permits,
            count: found.count,
            kind: found.kind,
            name: found.name,
        }
    }

    /// The holders for people: each one's note (described as `status` does) or owner.
    pub fn holders_text(&self) -> String {
        let each = self.holders.iter().map(|h| {
            let who = h.who.clone().unwrap_or_else(|| h.owner.clone());
            if h.count > 1 { format!("{who} (x{})", h.count) } else { who }
        });
        each.collect::<Vec<_>>().join("; ")
    }

    /// Kept by a filter: its name, kind or holders contain `text`.
    pub fn matches(&self, text: &str) -> bool {
        text.is_empty() || [self.name.as_str(), self.kind.as_str(), &self.holders_text()].iter().any(|s| s.contains(text))
    }

    fn json(&self) -> serde_json::Value {
        let ms = |d: Option<Duration>| d.map(|d| if d == Duration::MAX { -1 } else { d.as_millis() as i64 });
        json!({
            "name": self.name,
            "kind": self.kind.as_str(),
            "state": self.state,
            "holders": self.holders.iter().map(|h| h.json.clone()).collect::<Vec<_>>(),
            "held_for_ms": ms(self.held_for),
            "lease_left_ms": ms(self.lease_left),
            "waiters": self.waiters,
            "waiting_for_ms": ms(self.waiting_for),
            "last_token": self.last_token,
            "permits": self.permits,
            "count": self.count,
        })
    }
}

/// Longest wait first, then longest hold, then by name. Without a live view's
/// observations, objects with waiters come first, then held ones.
pub(super) fn sort(rows: &mut [Row]) {
    rows.sort_by_key(|row| {
        let wait = row.waiting_for.or((row.waiters > 0).then_some(Duration::ZERO));
        let hold = row.held_for.or((!row.holders.is_empty()).then_some(Duration::ZERO));
        (Reverse(wait), Reverse(hold), row.name.clone())
    });
}

pub(super) fn json(prefix: &str, rows: &[Row]) -> String {
    json!({"prefix": prefix, "objects": rows.iter().map(Row::json).collect::<Vec<_>>()}).to_string()
}

/// `12.3s`, `4m05s`, `2h10m`; `never` for no expiry, `-` for nothing.
pub(super) fn duration(d: Option<Duration>) -> String {
    let Some(d) = d else { return "-".into() };
    if d == Duration::MAX {
        return "never".into();
    }
    let secs = d.as_secs();
    match secs {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// The column heads and one line per row, aligned.
pub(super) fn table_of(rows: &[&Row]) -> Vec<String> {
    let name_width = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(0).clamp(4, 48);
    let kind_width = rows.iter().map(|r| r.kind.as_str().len()).max().unwrap_or(0).max(4);
    let state_width = rows.iter().map(|r| r.state.len()).max().unwrap_or(0).max(5);
    let line = |cells: [&str; 9]| {
        format!(
            "{:<name_width$}  {:<kind_width$}  {:<state_width$}  {:>7}  {:>7}  {:>7}  {:>7}  {:>5}  {}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8]
        )
        .trim_end()
        .to_string()
    };
    let mut lines = vec![line(["NAME", "KIND", "STATE", "HELD", "LEASE", "WAITERS", "WAITING", "TOKEN", "HOLDERS"])];
    for row in rows {
        let token = row.last_token.map_or_else(|| "-".to_string(), |t| t.to_string());
        let waiters = row.waiters.to_string();
        let (held, lease, waiting) = (duration(row.held_for), duration(row.lease_left), duration(row.waiting_for));
        let holders = row.holders_text();
        let holders = if holders.is_empty() { "-".to_string() } else { holders };
        lines.push(line([&row.name, row.kind.as_str(), &row.state, &held, &lease, &waiters, &waiting, &token, &holders]));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, waiters: u64, waiting: Option<u64>, held: Option<u64>) -> Row {
        Row {
            name: name.into(),
            kind: ObjectKind::Lock,
            state: "held".into(),
            holders: vec![Holder { owner: "c:1".into(), count: 1, who: None, held_for: None, json: serde_json::Value::Null }],
            held_for: held.map(Duration::from_secs),
            lease_left: None,
            waiters,
            waiting_for: waiting.map(Duration::from_secs),
            last_token: None,
            permits: None,
            count: None,
        }
    }

    #[test]
    fn longest_wait_first_then_longest_hold() {
        let mut rows = vec![row("a", 0, None, Some(50)), row("b", 1, Some(3), Some(1)), row("c", 2, Some(9), Some(2)), row("d", 0, None, Some(70))];
        sort(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["c", "b", "d", "a"]);
    }

    #[test]
    fn durations_read_short() {
        assert_eq!(duration(Some(Duration::from_millis(1234))), "1.2s");
        assert_eq!(duration(Some(Duration::from_secs(245))), "4m05s");
        assert_eq!(duration(Some(Duration::from_secs(7800))), "2h10m");
        assert_eq!(duration(Some(Duration::MAX)), "never");
        assert_eq!(duration(None), "-");
    }
}
