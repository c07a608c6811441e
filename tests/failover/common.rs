//! What the topologies and the orchestrator share: fault kinds, timers, waiting for a
//! state, a small random generator, and the settings every data node gets.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The faults, rotated in this order.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// `kill -9` of the master, restarted with its old config (a master, empty without
    /// AOF) at once or within 1.5 x down-after, as a supervisor would.
    KillRestart,
    /// `kill -9` of the master, restarted as a replica once another was promoted.
    KillReplica,
    /// SIGSTOP of the master until another is promoted, then SIGCONT.
    Stop,
    /// `SENTINEL FAILOVER` / `CLUSTER FAILOVER` (on the master's replica).
    Manual,
    /// The master cut off from its replicas, sentinels and cluster peers (its clients
    /// still reach it) until another is promoted, then joined again.
    Partition,
}

pub const FAULT_KINDS: [FaultKind; 5] =
    [FaultKind::KillRestart, FaultKind::KillReplica, FaultKind::Stop, FaultKind::Manual, FaultKind::Partition];

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::KillRestart => "kill9-restart",
            FaultKind::KillReplica => "kill9-replica",
            FaultKind::Stop => "sigstop",
            FaultKind::Manual => "manual",
            FaultKind::Partition => "partition",
        }
    }

    pub fn parse(s: &str) -> Option<FaultKind> {
        FAULT_KINDS.into_iter().find(|k| k.name() == s)
    }
}

/// Failure-detection timers: Sentinel's down-after / failover-timeout, Cluster's node timeout.
#[derive(Clone, Copy, Debug)]
pub struct Timers {
    pub down_after: Duration,
    pub failover_timeout: Duration,
    pub node_timeout: Duration,
    /// Sentinel's internal periods shortened (SENTINEL DEBUG): fast runs only.
    pub fast: bool,
}

impl Timers {
    /// Short timers for the short run: failovers within seconds.
    pub fn fast() -> Timers {
        Timers {
            down_after: Duration::from_millis(1000),
            failover_timeout: Duration::from_millis(2500),
            node_timeout: Duration::from_millis(1500),
            fast: true,
        }
    }

    /// Redis's defaults: down-after 30 s, failover-timeout 180 s, cluster-node-timeout 15 s.
    pub fn defaults() -> Timers {
        Timers {
            down_after: Duration::from_secs(30),
            failover_timeout: Duration::from_secs(180),
            node_timeout: Duration::from_secs(15),
            fast: false,
        }
    }

    /// How long one fault may take to settle before the run calls it stuck.
    pub fn settle_limit(&self) -> Duration {
        self.failover_timeout * 2 + self.down_after * 4 + self.node_timeout * 4 + Duration::from_secs(60)
    }
}

/// Settings shared by every data node of a run.
#[derive(Clone, Debug)]
pub struct NodeSettings {
    /// appendonly yes + appendfsync always.
    pub aof: bool,
    /// Where the servers write their logs (kept after the run, for tracing).
    pub log_dir: PathBuf,
}

impl NodeSettings {
    /// Arguments every data node gets, its log named `name`.
    pub fn args(&self, name: &str) -> Vec<String> {
        let mut args: Vec<String> = ["--repl-diskless-sync-delay", "0", "--logfile"].map(String::from).to_vec();
        args.push(self.log_dir.join(format!("{name}.log")).display().to_string());
        if self.aof {
            args.extend(["--appendonly", "yes", "--appendfsync", "always"].map(String::from));
        }
        args
    }

    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }
}

/// Polls `check` every 50 ms until it returns `Ok`, or `Err` naming `what` and the last
/// state seen once `limit` has passed.
pub async fn until<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(v) => return Ok(v),
            Err(seen) if started.elapsed() >= limit => {
                return Err(format!("timed out after {limit:?} waiting for {what}; last seen: {seen}"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// xorshift64*: fault timing and choices need variety, not quality; seeded so a run can be repeated.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let span = high.saturating_sub(low).as_millis() as u64;
        low + Duration::from_millis(if span == 0 { 0 } else { self.next() % (span + 1) })
    }
}

/// Runs a blocking harness call (process start, kill, signal) without stalling the proxies.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// The outcome of one fault.
#[derive(Clone, Debug)]
pub struct FaultRecord {
    pub kind: FaultKind,
    /// The master's address (its proxy port) before and after.
    pub before: u16,
    pub after: u16,
    /// Observer times (us) of the fault's start and of the topology settled again.
    pub start_us: u64,
    pub end_us: u64,
    /// What happened, for the run's log.
    pub detail: String,
}

impl FaultRecord {
    pub fn failed_over(&self) -> bool {
        self.before != self.after
    }
}
