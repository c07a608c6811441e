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

mod keys;
mod render;

use keys::*;
pub use render::{describe_info, kind_option};
use render::*;

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
