//! `ferrolock status`: what NAME is (a lock, a fair lock, a read-write lock, a
//! semaphore, a permit-expirable semaphore or a count-down latch), told from its
//! keys as Redisson lays them out, and its holders, permits or count and waiters;
//! with several URLs, a Redlock's plain lock on each of them.
//!
//! Telling the kind needs raw reads of helper keys (TYPE, the `mode` field, the
//! fair queue, the permits' zset, channel subscribers) that core does not offer:
//! they go over a connection of their own, on one-server URLs. Behind Sentinel or
//! on a Cluster NAME is read as a lock, as before.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrolock::{Client, Error, ErrorKind, LockStatus};
use redis::aio::MultiplexedConnection;
use serde_json::json;

use crate::args::StatusKind;
use crate::exit;
use crate::target::{self, redact, Target};

/// What NAME turned out to be, with what `status` shows of it.
enum Status {
    /// A lock (RLock, RFencedLock) or, read with no probe, whatever core reads as one.
    Lock(LockStatus),
    /// A fair lock: the lock and its queue of waiters (owner fields, first first).
    Fair(LockStatus, Vec<String>),
    /// A read-write lock: the lock, the side that holds it, clients waiting on its channel.
    ReadWrite { lock: LockStatus, mode: Option<String>, waiters: u64 },
    Semaphore { name: String, free: i64, waiters: u64 },
    PermitSemaphore { name: String, free: i64, out: Vec<PermitOut>, waiters: u64 },
    Latch { name: String, count: i64, waiters: u64 },
    /// A number that may be either a semaphore's free permits or a latch's count.
    SemaphoreOrLatch { name: String, value: i64 },
}

/// A permit of a permit-expirable semaphore that is out: its id and its expiry.
struct PermitOut {
    id: String,
    /// Milliseconds left on its lease (negative: expired, back at the next acquire);
    /// `None`: no lease.
    left_ms: Option<i64>,
}

/// The score Redisson gives a permit without a lease.
const NO_LEASE: f64 = 922_337_203_685_477.0;

/// `check`: the exit status says held (0) or free (1) instead of 0 for both.
pub async fn run(targets: Vec<Target>, name: &OsStr, as_json: bool, check: bool, kind: Option<StatusKind>) -> i32 {
    if targets.len() > 1 {
        return run_each(&targets, name, as_json, check).await;
    }
    let target = &targets[0];
    let client = match target::connect(target, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let status = read(&client, target, name, kind).await;
    let _ = client.shutdown().await;
    let status = match status {
        Ok(status) => status,
        Err(e) => return exit::fail(&e),
    };
    let locked = match &status {
        Status::Lock(lock) | Status::Fair(lock, _) | Status::ReadWrite { lock, .. } => Some(lock.is_locked()),
        _ => None,
    };
    if check && locked.is_none() {
        exit::say(&format!(
            "--check tells a held lock from a free one; \"{}\" is {}, not a lock",
            name.to_string_lossy(),
            kind_text(&status)
        ));
        return exit::USAGE;
    }
    println!("{}", if as_json { status_json(&status).to_string() } else { status_text(&status) });
    match (check, locked) {
        (true, Some(false)) => exit::CONFLICT,
        _ => 0,
    }
}

/// Reads NAME as `kind`, or as what its keys say it is.
async fn read(client: &Client, target: &Target, name: &OsStr, kind: Option<StatusKind>) -> ferrolock::Result<Status> {
    let lock_status = || async { client.lock(name.as_bytes())?.status().await };
    // main refused --kind other than lock where the keys cannot be read.
    let Some(mut raw) = probe_connection(target).await? else {
        return Ok(Status::Lock(lock_status().await?));
    };
    let key = name.as_bytes();
    let shown = name.to_string_lossy().into_owned();
    let context = format!("reading \"{shown}\"");
    let key_type: String = match redis::cmd("TYPE").arg(key).query_async(&mut raw).await {
        Ok(key_type) => key_type,
        // A cluster node given as redis://: core took it as the cluster's seed.
        Err(e) if matches!(e.code(), Some("MOVED") | Some("ASK")) && matches!(kind, None | Some(StatusKind::Lock)) => {
            return Ok(Status::Lock(lock_status().await?));
        }
        Err(e) if matches!(e.code(), Some("MOVED") | Some("ASK")) => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{context}: the server is a cluster node; --kind needs one server (a cluster is read as a lock)"),
            ))
        }
        Err(e) => return Err(redis_error(&e, &context)),
    };
    let is_lock_type = matches!(key_type.as_str(), "hash" | "none");
    let is_counter_type = matches!(key_type.as_str(), "string" | "none");
    let not = |what: &str| {
        Error::new(
            ErrorKind::WrongType,
            format!("the key at \"{shown}\" holds a {key_type}, not {what}"),
        )
    };
    let kind = match kind {
        Some(kind) => kind,
        None => match key_type.as_str() {
            "hash" | "none" => {
                let mode: Option<String> = query(&mut raw, redis::cmd("HGET").arg(key).arg("mode"), &context).await?;
                let queued: bool = query(&mut raw, redis::cmd("EXISTS").arg(prefixed("redisson_lock_queue", key)), &context).await?;
                match (mode, queued) {
                    (Some(_), _) => StatusKind::ReadWrite,
                    (None, true) => StatusKind::Fair,
                    (None, false) => StatusKind::Lock,
                }
            }
            "string" => {
                let permits_out: bool = query(&mut raw, redis::cmd("EXISTS").arg(suffixed(key, "timeout")), &context).await?;
                if permits_out {
                    StatusKind::PermitSemaphore
                } else {
                    let value = read_number(&mut raw, key, &context).await?;
                    let semaphore_waiters = numsub(&mut raw, &prefixed("redisson_sc", key), &context).await?;
                    let latch_waiters = numsub(&mut raw, &latch_channel(key), &context).await?;
                    // A latch at 0 is deleted, so 0 is a semaphore with every permit out.
                    match (value, semaphore_waiters, latch_waiters) {
                        (0, _, _) => StatusKind::Semaphore,
                        (_, s, 0) if s > 0 => StatusKind::Semaphore,
                        (_, 0, l) if l > 0 => StatusKind::Latch,
                        _ => return Ok(Status::SemaphoreOrLatch { name: shown, value }),
                    }
                }
            }
            _ => return Err(not("a lock, a semaphore or a latch")),
        },
    };
    let is_lock_kind = matches!(kind, StatusKind::Lock | StatusKind::Fair | StatusKind::ReadWrite);
    if is_lock_kind && !is_lock_type {
        return Err(not(&format!("a {}", kind_name(kind))));
    }
    if !is_lock_kind && !is_counter_type {
        return Err(not(&format!("a {}", kind_name(kind))));
    }
    Ok(match kind {
        StatusKind::Lock => Status::Lock(lock_status().await?),
        StatusKind::Fair => {
            let queue: Vec<String> =
                query(&mut raw, redis::cmd("LRANGE").arg(prefixed("redisson_lock_queue", key)).arg(0).arg(-1), &context).await?;
            Status::Fair(lock_status().await?, queue)
        }
        StatusKind::ReadWrite => {
            let mode: Option<String> = query(&mut raw, redis::cmd("HGET").arg(key).arg("mode"), &context).await?;
            let waiters = numsub(&mut raw, &prefixed("redisson_rwlock", key), &context).await?;
            Status::ReadWrite { lock: lock_status().await?, mode, waiters }
        }
        StatusKind::Semaphore => Status::Semaphore {
            free: read_number(&mut raw, key, &context).await?,
            waiters: numsub(&mut raw, &prefixed("redisson_sc", key), &context).await?,
            name: shown,
        },
        StatusKind::PermitSemaphore => {
            let ids: Vec<(Vec<u8>, f64)> =
                query(&mut raw, redis::cmd("ZRANGE").arg(suffixed(key, "timeout")).arg(0).arg(-1).arg("WITHSCORES"), &context)
                    .await?;
            let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
            let out = ids
                .into_iter()
                .map(|(id, score)| PermitOut {
                    id: id.iter().map(|b| format!("{b:02x}")).collect(),
                    left_ms: (score < NO_LEASE).then(|| score as i64 - now_ms),
                })
                .collect();
            Status::PermitSemaphore {
                free: read_number(&mut raw, key, &context).await?,
                out,
                waiters: numsub(&mut raw, &prefixed("redisson_sc", key), &context).await?,
                name: shown,
            }
        }
        StatusKind::Latch => Status::Latch {
            count: read_number(&mut raw, key, &context).await?,
            waiters: numsub(&mut raw, &latch_channel(key), &context).await?,
            name: shown,
        },
    })
}

/// Whether `status` can read NAME's keys itself: a one-server URL.
pub fn reads_keys(target: &Target) -> bool {
    ["redis://", "rediss://", "redis+unix://", "unix://"].iter().any(|s| target.url.starts_with(s))
}

/// A connection of its own for the probe, on one-server URLs; `None` behind
/// Sentinel or on a Cluster. Core has already connected with the same URL, so a
/// failure here is rare; it is reported like core's.
async fn probe_connection(target: &Target) -> ferrolock::Result<Option<MultiplexedConnection>> {
    if !reads_keys(target) {
        return Ok(None);
    }
    let context = "connecting to read the keys";
    let client = redis::Client::open(target.url.as_str())
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("invalid Redis URL ({:?})", e.kind())))?;
    let connecting = client.get_multiplexed_async_connection();
    match tokio::time::timeout(Duration::from_secs(5), connecting).await {
        Ok(Ok(conn)) => Ok(Some(conn)),
        Ok(Err(e)) => Err(redis_error(&e, context)),
        Err(_) => Err(Error::new(ErrorKind::Connection, format!("{context}: timed out"))),
    }
}

async fn query<T: redis::FromRedisValue>(conn: &mut MultiplexedConnection, cmd: &redis::Cmd, context: &str) -> ferrolock::Result<T> {
    cmd.query_async(conn).await.map_err(|e| redis_error(&e, context))
}

/// A redis-rs error as core would classify it, for the exit status.
fn redis_error(e: &redis::RedisError, context: &str) -> Error {
    let kind = match e.code() {
        Some("NOPERM") => ErrorKind::PermissionDenied,
        Some("WRONGTYPE") => ErrorKind::WrongType,
        _ if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() => ErrorKind::Connection,
        _ if e.kind() == redis::ErrorKind::AuthenticationFailed => ErrorKind::Connection,
        _ => ErrorKind::Internal,
    };
    if kind == ErrorKind::PermissionDenied {
        // As core says it: what was refused and the rule that allows it.
        let text = e.to_string();
        let command = text.split("to run the '").nth(1).and_then(|rest| rest.split('\'').next());
        let hint = match command {
            Some(command) => format!("the ACL user needs +{command} (ACL SETUSER <user> +{command})"),
            None => "grant the ACL user read access to NAME and its helper keys and PUBSUB NUMSUB".to_string(),
        };
        return Error::new(kind, format!("{context}: Redis refused it ({text}); {hint}"));
    }
    Error::new(kind, format!("{context}: {e}"))
}

/// The number a semaphore or latch key holds (0 when it does not exist).
async fn read_number(conn: &mut MultiplexedConnection, key: &[u8], context: &str) -> ferrolock::Result<i64> {
    let value: Option<String> = query(conn, redis::cmd("GET").arg(key), context).await?;
    match value {
        None => Ok(0),
        Some(text) => text.parse().map_err(|_| {
            Error::new(ErrorKind::WrongType, format!("{context}: the key holds {text:?}, not a number of permits or a count"))
        }),
    }
}

async fn numsub(conn: &mut MultiplexedConnection, channel: &[u8], context: &str) -> ferrolock::Result<u64> {
    let (_, n): (Vec<u8>, u64) = query(conn, redis::cmd("PUBSUB").arg("NUMSUB").arg(channel), context).await?;
    Ok(n)
}

/// Redisson's `p:{n}`, or `p:n` when the name already carries braces.
fn prefixed(prefix: &str, name: &[u8]) -> Vec<u8> {
    let mut key = format!("{prefix}:").into_bytes();
    if name.contains(&b'{') {
        key.extend_from_slice(name);
    } else {
        key.push(b'{');
        key.extend_from_slice(name);
        key.push(b'}');
    }
    key
}

/// Redisson's `{n}:s`, or `n:s` when the name already carries braces.
fn suffixed(name: &[u8], suffix: &str) -> Vec<u8> {
    let mut key = prefixed("", name);
    key.remove(0);
    key.extend_from_slice(format!(":{suffix}").as_bytes());
    key
}

/// Redisson writes a latch's channel with literal braces, whatever the name holds.
fn latch_channel(name: &[u8]) -> Vec<u8> {
    let mut channel = b"redisson_countdownlatch__channel__{".to_vec();
    channel.extend_from_slice(name);
    channel.push(b'}');
    channel
}

pub fn kind_option(kind: StatusKind) -> &'static str {
    match kind {
        StatusKind::Lock => "lock",
        StatusKind::Fair => "fair",
        StatusKind::ReadWrite => "read-write",
        StatusKind::Semaphore => "semaphore",
        StatusKind::PermitSemaphore => "permit-semaphore",
        StatusKind::Latch => "latch",
    }
}

fn kind_name(kind: StatusKind) -> &'static str {
    match kind {
        StatusKind::Lock => "lock",
        StatusKind::Fair => "fair lock",
        StatusKind::ReadWrite => "read-write lock",
        StatusKind::Semaphore => "semaphore",
        StatusKind::PermitSemaphore => "permit-expirable semaphore",
        StatusKind::Latch => "count-down latch",
    }
}

fn kind_text(status: &Status) -> &'static str {
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

/// The `--json` shape of each kind, documented in `ferrolock status --help`.
fn status_json(status: &Status) -> serde_json::Value {
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
            "out": out.iter().map(|p| json!({"id": p.id, "lease_left_ms": p.left_ms})).collect::<Vec<_>>(),
            "waiters": waiters,
        }),
        Status::Latch { name, count, waiters } => {
            json!({"name": name, "kind": "count_down_latch", "count": count, "open": *count <= 0, "waiters": waiters})
        }
        Status::SemaphoreOrLatch { name, value } => json!({"name": name, "kind": "semaphore_or_latch", "value": value}),
    }
}

fn status_text(status: &Status) -> String {
    let lines: Vec<(&str, String)> = match status {
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
                let lease = match permit.left_ms {
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
    lines.iter().map(|(label, value)| line(label, value)).collect::<Vec<_>>().join("\n")
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
    lock_text(status, None, &[])
}

/// A lock's lines: `kind` (after the state) and `waiters` (in place of the
/// subscribers of the lock's channel) when the kind says more than that.
fn lock_text(status: &LockStatus, waiters: Option<String>, extra: &[(&str, String)]) -> String {
    let mut lines = vec![
        ("lock", status.name.clone()),
        ("state", if status.is_locked() { "held" } else { "free" }.to_string()),
    ];
    lines.extend(extra.iter().cloned());
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
    let waiters = waiters.unwrap_or_else(|| format!("{} (clients subscribed to the lock's channel)", status.subscribers));
    lines.push(("waiters", waiters));
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
