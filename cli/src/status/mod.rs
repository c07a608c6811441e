//! `ferrolock status`: what NAME is (a lock, a fair lock, a read-write lock, a
//! semaphore, a permit-expirable semaphore or a count-down latch), told from its
//! keys by core's `Client::inspect`, and its holders, permits or count and waiters;
//! with several URLs, a Redlock's plain lock on each of them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use ferrolock::{Client, Error, HolderEntry, Inspection, LockStatus, ObjectKind, PermitOut};
use serde_json::json;

use crate::args::StatusKind;
use crate::exit;
use crate::target::{self, redact, Target};

mod render;

pub use render::holder_json;
use render::*;

/// What NAME turned out to be, with what `status` shows of it.
enum Status {
    /// A lock (RLock, RFencedLock).
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
    let status = read(&client, name, kind).await;
    let _ = client.shutdown().await;
    let (status, eviction) = match status {
        Ok(read) => read,
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
    let eviction = eviction.as_deref();
    println!("{}", if as_json { status_json(&status, eviction).to_string() } else { status_text(&status, eviction) });
    match (check, locked) {
        (true, Some(false)) => exit::CONFLICT,
        _ => 0,
    }
}

/// Reads NAME as `kind`, or as what its keys say it is; with the server's eviction
/// policy when it may evict NAME's keys.
async fn read(client: &Client, name: &OsStr, kind: Option<StatusKind>) -> ferrolock::Result<(Status, Option<String>)> {
    let found = match kind {
        None => client.inspect(name.as_bytes()).await?,
        Some(kind) => client.inspect_as(name.as_bytes(), object_kind(kind)).await?,
    };
    let eviction = found.eviction_policy.clone();
    Ok((from_inspection(found), eviction))
}

fn object_kind(kind: StatusKind) -> ObjectKind {
    match kind {
        StatusKind::Lock => ObjectKind::Lock,
        StatusKind::Fair => ObjectKind::FairLock,
        StatusKind::ReadWrite => ObjectKind::ReadWriteLock,
        StatusKind::Semaphore => ObjectKind::Semaphore,
        StatusKind::PermitSemaphore => ObjectKind::PermitExpirableSemaphore,
        StatusKind::Latch => ObjectKind::CountDownLatch,
    }
}

fn from_inspection(found: Inspection) -> Status {
    let Inspection { name, kind, lock, mode, queue, waiters, permits, permits_out, count, .. } = found;
    let (free, count) = (permits.unwrap_or(0), count.unwrap_or(0));
    match (kind, lock) {
        (ObjectKind::FairLock, Some(lock)) => Status::Fair(lock, queue),
        (ObjectKind::ReadWriteLock, Some(lock)) => Status::ReadWrite { lock, mode, waiters },
        (_, Some(lock)) => Status::Lock(lock),
        (ObjectKind::PermitExpirableSemaphore, None) => Status::PermitSemaphore { name, free, out: permits_out, waiters },
        (ObjectKind::CountDownLatch, None) => Status::Latch { name, count, waiters },
        (ObjectKind::SemaphoreOrLatch, None) => Status::SemaphoreOrLatch { name, value: free },
        (_, None) => Status::Semaphore { name, free, waiters },
    }
}

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
