//! The failover harness (tests/failover/README.md; run it with `bash scripts/failover.sh`):
//! Python and Node client processes contend on fenced, fair and write locks and a
//! semaphore of 2 permits behind Sentinel or Cluster while faults rotate, and an outside
//! observer counts holders inside each critical section. Prints one table per mode
//! (replica-ack policy) and topology; exits 1 when a mode's expectation fails, 2 on bad
//! arguments.

mod cluster;
mod common;
mod observer;
mod options;
mod proxy;
mod report;
mod sentinel;
mod workers;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{FaultKind, FaultRecord, NodeSettings, Rng};
use observer::Observer;
use options::{Options, Topology};
use report::{Expect, Left, ModeRun};
use workers::{Ended, Programs, Worker};

/// The resources every worker contends on: (kind, holders allowed inside).
const RESOURCES: [(&str, u64); 4] = [("fenced", 1), ("fair", 1), ("write", 1), ("semaphore", 2)];

enum Topo {
    Sentinel(sentinel::SentinelTopo),
    Cluster(cluster::ClusterTopo),
}

impl Topo {
    fn url(&self) -> String {
        match self {
            Topo::Sentinel(t) => t.url(),
            Topo::Cluster(t) => t.url(),
        }
    }

    async fn fault(&mut self, kind: FaultKind, rng: &mut Rng) -> Result<(u16, u16, String), String> {
        match self {
            Topo::Sentinel(t) => t.fault(kind, rng).await,
            Topo::Cluster(t) => t.fault(kind, rng).await,
        }
    }

    /// Direct ports of the masters now.
    async fn masters(&self) -> Result<Vec<u16>, String> {
        match self {
            Topo::Sentinel(t) => t.master_direct().await.map(|p| vec![p]),
            Topo::Cluster(t) => t.master_ports().await,
        }
    }
}

/// Resource names, all in the first third of the slots (one cluster shard, the one the
/// faults hit): the first free suffix per kind.
fn resource_names() -> Vec<(String, &'static str, u64)> {
    RESOURCES
        .iter()
        .map(|(kind, allowed)| {
            let name = (0..).map(|k| format!("fo-{kind}-{k}")).find(|n| cluster::slot_of(n) < 5461).expect("a name");
            (name, *kind, *allowed)
        })
        .collect()
}

fn main() {
    let opts = match options::parse(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ferrolock-failover: {e}\n\n{}", options::USAGE);
            std::process::exit(2);
        }
    };
    // Two threads: the proxies carry every client's traffic; blocking harness calls
    // (process starts and signals) run in block_in_place.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    let status = runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (mut int, mut term, mut hup) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()));
        let (int, term, hup) = (int.as_mut().expect("SIGINT"), term.as_mut().expect("SIGTERM"), hup.as_mut().expect("SIGHUP"));
        // Interrupted: dropping the run kills every server and worker it started.
        tokio::select! {
            failed = run(opts) => if failed { 1 } else { 0 },
            _ = int.recv() => 130,
            _ = term.recv() => 143,
            _ = hup.recv() => 129,
        }
    });
    if status > 1 {
        eprintln!("ferrolock-failover: interrupted; every server and worker it started is stopped");
    }
    std::process::exit(status);
}

async fn run(mut opts: Options) -> bool {
    std::fs::create_dir_all(&opts.logs).expect("the log directory");
    // The servers' --logfile is read after they chdir to their own directory.
    opts.logs = opts.logs.canonicalize().expect("the log directory");
    println!("failover harness: logs in {} (seed {})", opts.logs.display(), opts.seed);
    let programs = Programs::find(&opts.repo);
    let observer = match Observer::start().await {
        Ok(o) => o,
        Err(e) => {
            eprintln!("the observer did not start: {e}");
            return true;
        }
    };
    let mut rng = Rng::new(opts.seed);
    let mut summary: Vec<(String, Vec<String>)> = Vec::new();
    if opts.control > Duration::ZERO {
        let title = format!("negative control: no lock, {} workers, {} s, no faults", opts.workers, opts.control.as_secs());
        let failed = run_mode(&opts, &programs, &observer, None, "none", &title, &mut rng).await;
        summary.push((title, failed));
    }
    for topology in &opts.topologies {
        for policy in &opts.policies {
            let title = format!(
                "{}, policy {policy}, {} timers{}, {} workers",
                topology.name(),
                if opts.timers.fast { "fast" } else { "default" },
                if opts.settings.aof { ", AOF always" } else { ", no persistence" },
                opts.workers
            );
            let failed = run_mode(&opts, &programs, &observer, Some(*topology), policy, &title, &mut rng).await;
            summary.push((title, failed));
        }
    }
    println!("\n== summary");
    let mut any = false;
    for (title, failed) in &summary {
        println!("{}: {title}", if failed.is_empty() { "ok    " } else { "FAILED" });
        // The reasons again: a CI log's tail may hold only the summary.
        for why in failed {
            println!("        {why}");
        }
        any |= !failed.is_empty();
    }
    any
}

/// One mode: a fresh topology (none for the control), the workers, the faults until the
/// run's end, the workers stopped, the check for what was left, the table.
async fn run_mode(opts: &Options, programs: &Programs, observer: &Observer, topology: Option<Topology>, policy: &str, title: &str, rng: &mut Rng) -> Vec<String> {
    let resources = resource_names();
    let mut run = ModeRun {
        title: title.to_string(),
        recorded: Default::default(),
        faults: Vec::new(),
        ended: Vec::new(),
        from_us: 0,
        to_us: 0,
        left: Vec::new(),
        allowed: resources.iter().map(|(n, _, a)| (n.clone(), *a)).collect(),
        problems: Vec::new(),
    };
    let control = topology.is_none();
    let expect = Expect { zero: !control && opts.expect_zero.iter().any(|p| p == policy), control, min_failovers: if control { 0 } else { opts.min_failovers } };
    let tag = topology.map(|t| format!("{}-{policy}", t.name())).unwrap_or_else(|| "control".into());
    let settings = NodeSettings { log_dir: opts.logs.join(&tag), ..opts.settings.clone() };
    let _ = std::fs::create_dir_all(settings.log_dir());
    let started = match topology {
        None => Ok(None),
        Some(Topology::Sentinel) => sentinel::SentinelTopo::start(settings.clone(), opts.timers).await.map(|t| Some(Topo::Sentinel(t))),
        Some(Topology::Cluster) => {
            let target = cluster::slot_of(&resources[0].0);
            cluster::ClusterTopo::start(settings.clone(), opts.timers, target).await.map(|t| Some(Topo::Cluster(t)))
        }
    };
    let mut topo = match started {
        Ok(t) => t,
        Err(e) => return report_problem(&mut run, &expect, format!("the topology did not start: {e}")),
    };
    if let Err(e) = observer.reset().await {
        return report_problem(&mut run, &expect, format!("observer: {e}"));
    }
    let url = topo.as_ref().map(Topo::url).unwrap_or_default();
    let mut workers = Vec::new();
    for n in 0..opts.workers {
        let lang = if n % 2 == 0 { "python" } else { "node" };
        let config = serde_json::json!({
            "id": format!("{}{n}", &lang[..2]),
            "url": url,
            "observer_port": observer.port(),
            "sha": observer.sha,
            "policy": policy,
            "lock": if control { "none" } else { "ferrolock" },
            "watchdog_ms": opts.watchdog_ms,
            "hold_ms": [opts.hold.0, opts.hold.1],
            "wait_ms": opts.wait_ms,
            "resources": resources.iter().map(|(name, kind, allowed)| serde_json::json!({"name": name, "kind": kind, "allowed": allowed})).collect::<Vec<_>>(),
            "python_options": opts.python_options,
            "node_options": opts.node_options,
        });
        let stderr = std::fs::File::create(settings.log_dir().join(format!("worker-{n}.stderr"))).expect("a log file");
        match Worker::start(programs, lang, &config, stderr).await {
            Ok(w) => workers.push(w),
            Err(e) => {
                run.problems.push(e);
                break;
            }
        }
    }
    let policies: BTreeMap<&str, String> = workers.iter().map(|w| (w.lang, w.policy.clone())).collect();
    if !control {
        let bindings: Vec<String> = policies.iter().map(|(l, p)| format!("{l}: {p}")).collect();
        run.title = format!("{} ({})", run.title, bindings.join("; "));
    }
    run.from_us = observer.now_us().await.unwrap_or(0);
    if run.problems.is_empty() {
        match topo.as_mut() {
            Some(t) => run.problems.extend(rotate_faults(opts, observer, t, rng, &mut run.faults, &settings, &mut workers).await),
            None => tokio::time::sleep(opts.control).await, // the control's length: no state to wait for
        }
    }
    run.to_us = observer.now_us().await.unwrap_or(0);
    let stops = workers.into_iter().map(|w| w.stop(opts.stop_limit));
    run.ended = futures_util::future::join_all(stops).await;
    if let Some(t) = &topo {
        match leftovers(t, &resources).await {
            Ok(left) => run.left = left,
            Err(e) => run.problems.push(format!("the end-of-run check failed: {e}")),
        }
    }
    // The semaphore of each epoch (one per fault) is a resource of its own to the observer.
    let mut names = Vec::new();
    for (name, kind, allowed) in &resources {
        if *kind == "semaphore" {
            for epoch in 0..=run.faults.len() {
                names.push(semaphore_name(name, epoch));
                run.allowed.insert(semaphore_name(name, epoch), *allowed);
            }
        } else {
            names.push(name.clone());
        }
    }
    match observer.recorded(&names).await {
        Ok(r) => run.recorded = r,
        Err(e) => run.problems.push(format!("observer: {e}")),
    }
    write_logs(&settings, &run);
    report::report(&run, &expect)
}

fn report_problem(run: &mut ModeRun, expect: &Expect, problem: String) -> Vec<String> {
    run.problems.push(problem);
    report::report(run, expect)
}

/// Runs faults, a pause between each, until the run's length or its failover targets;
/// returns what went wrong (a fault that did not settle ends the mode).
async fn rotate_faults(
    opts: &Options,
    observer: &Observer,
    topo: &mut Topo,
    rng: &mut Rng,
    faults: &mut Vec<FaultRecord>,
    settings: &NodeSettings,
    workers: &mut [Worker],
) -> Vec<String> {
    let started = Instant::now();
    let mut timeline = String::new();
    let mut problems = Vec::new();
    for (n, kind) in opts.faults.iter().cycle().enumerate() {
        let ran = |k: FaultKind| faults.iter().filter(|f| f.kind == k).count();
        let failovers = faults.iter().filter(|f| f.failed_over()).count();
        let every_kind_ran = opts.faults.iter().all(|k| ran(*k) >= 1);
        let done = started.elapsed() >= opts.duration
            || (opts.per_kind > 0 && opts.faults.iter().all(|k| ran(*k) >= opts.per_kind))
            || (opts.until_failovers > 0 && failovers >= opts.until_failovers && every_kind_ran);
        if done {
            break;
        }
        // The pause between faults: clients run on a settled topology (the fault rotation's rhythm).
        tokio::time::sleep(rng.between(opts.pause.0, opts.pause.1)).await;
        let start_us = observer.now_us().await.unwrap_or(0);
        let outcome = topo.fault(*kind, rng).await;
        let end_us = observer.now_us().await.unwrap_or(0);
        match outcome {
            Ok((before, after, detail)) => {
                let f = FaultRecord { kind: *kind, before, after, start_us, end_us, detail };
                let line = format!("{n:>3} {:<14} {before} -> {after} {:>6} ms  {}", kind.name(), (end_us - start_us) / 1000, f.detail);
                eprintln!("  fault {line}");
                timeline += &format!("{start_us} {end_us} {line}\n");
                faults.push(f);
                for w in workers.iter_mut() {
                    w.send(&format!("epoch {}", faults.len())).await;
                }
            }
            Err(e) => {
                problems.push(format!("fault {n} ({}) did not settle: {e}", kind.name()));
                break;
            }
        }
    }
    let _ = std::fs::write(settings.log_dir().join("faults.txt"), timeline);
    problems
}

/// Keys left on the masters once every client closed, but the fencing-token counters and
/// the semaphores (which live on, by design); a semaphore with other than its permits free
/// is reported too. A hold left by a release that a failover lost shows with its expiry.
async fn leftovers(topo: &Topo, resources: &[(String, &'static str, u64)]) -> Result<Vec<Left>, String> {
    let mut left = Vec::new();
    for port in topo.masters().await? {
        let keys: Vec<String> = ferrolock_harness::query(port, None, redis::cmd("KEYS").arg("*")).await?;
        for key in keys {
            if key.starts_with("redisson_lock_token:") {
                continue;
            }
            let semaphore = |n: &str| key.strip_prefix(&format!("{{{n}}}.e")).is_some_and(|e| e.parse::<u64>().is_ok());
            if let Some((_, _, permits)) = resources.iter().find(|(n, k, _)| *k == "semaphore" && semaphore(n)) {
                let free: String = ferrolock_harness::query(port, None, redis::cmd("GET").arg(&key)).await?;
                if free != permits.to_string() {
                    let leaked = free.parse::<u64>().is_ok_and(|f| f < *permits);
                    left.push(Left { key, what: format!("{free} of {permits} permits free"), held: true, semaphore: true, leaked });
                }
                continue;
            }
            if key.starts_with("redisson_lock_queue:") {
                continue; // the waiters in it are the timeout zset's, below
            }
            if key.starts_with("redisson_lock_timeout:") {
                // Fair-lock waiters queued when their clients closed (a leave a failover lost):
                // the next acquire drops them once their turn passed, none holds the lock.
                let timeouts: Vec<(String, i64)> = ferrolock_harness::query(port, None, redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES")).await?;
                let (s, us): (i64, i64) = ferrolock_harness::query(port, None, &redis::cmd("TIME")).await?;
                let last = timeouts.iter().map(|(_, t)| t - (s * 1000 + us / 1000)).max().unwrap_or(0);
                let what = format!("fair-lock queue of {} waiters, the last one's turn {} {} ms", timeouts.len(), if last > 0 { "ends in" } else { "ended" }, last.abs());
                left.push(Left { key, what, held: false, semaphore: false, leaked: false });
                continue;
            }
            let ttl: i64 = ferrolock_harness::query(port, None, redis::cmd("PTTL").arg(&key)).await?;
            // A lock (its hash) is held; a holder's note, say, only waits for its expiry.
            let held = resources.iter().any(|(n, _, _)| *n == key);
            left.push(Left { key, what: if ttl == -1 { "no expiry".into() } else { format!("expires in {ttl} ms") }, held, semaphore: false, leaked: false });
        }
    }
    Ok(left)
}

/// The semaphore `base` of one epoch, in the cluster slot of `base` (as the workers name it).
fn semaphore_name(base: &str, epoch: usize) -> String {
    format!("{{{base}}}.e{epoch}")
}

fn write_logs(settings: &NodeSettings, run: &ModeRun) {
    let _ = std::fs::write(settings.log_dir().join("observer.log"), run.recorded.log.join("\n"));
    let ended: Vec<String> = run.ended.iter().map(|e: &Ended| format!("{} {} {:?}", e.id, e.lang, e.result)).collect();
    let _ = std::fs::write(settings.log_dir().join("workers.txt"), ended.join("\n"));
    let left: Vec<String> = run.left.iter().map(|l| format!("{} {} ({})", if l.held { "held" } else { "left" }, l.key, l.what)).collect();
    let _ = std::fs::write(settings.log_dir().join("left.txt"), left.join("\n"));
}
