//! The harness's command line.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::{FaultKind, NodeSettings, Timers, FAULT_KINDS};

pub const USAGE: &str = "\
usage: ferrolock-failover [OPTIONS]   (bash scripts/failover.sh [OPTIONS] builds what it runs)

  --short                  the test command's run: both topologies, policy `all` under
                           kill9-replica, sigstop and partition until 5 real failovers
                           (each kind at least once),
                           required to show 0 overlaps, 0 token anomalies and no lock left
                           held; a 5 s control
                           (kill9-restart and manual need --policy all --aof: the guide)
  --topology T             sentinel, cluster or both (default both)
  --policy P[,P...]        the modes: replica-ack policies passed to the bindings as they
                           are (off, one, majority, all, ...); `default` gives no option
                           (default: default,off)
  --expect-zero P[,P...]   modes that must show 0 overlaps, 0 duplicate or regressed tokens
                           and no lock left held (semaphore permits a failover leaked are
                           reported, not failed) (default: none)
  --duration SECS          longest run per mode and topology (default 300)
  --per-kind N             end a mode once every fault kind ran N times (default 0: no)
  --until-failovers N      end a mode after N real failovers, once every kind ran (default 0)
  --min-failovers N        fail a mode with fewer real failovers (default 0)
  --faults K[,K...]        fault kinds to rotate (default all): kill9-restart, kill9-replica,
                           sigstop, manual, partition
  --pause MS-MS            pause between faults (default 2000-4000)
  --timers fast|default    Sentinel/Cluster failure detection (default fast: down-after 1 s,
                           failover-timeout 2.5 s, node timeout 1.5 s; default: 30 s, 180 s, 15 s)
  --aof                    appendonly yes, appendfsync always on the data nodes
  --workers N              client processes, alternately Python and Node (default 6)
  --hold MS-MS             time inside a critical section (default 20-200)
  --wait-ms MS             bound of each acquire's wait (default 2000)
  --watchdog-ms MS         the clients' watchdog lease (default 30000, the library's)
  --control SECS           negative control's length (no lock; default 5, 0: none)
  --stop-limit SECS        how long a worker may take to finish once stopped (default 60)
  --python-option NAME=JSON, --node-option NAME=JSON
                           more connect options for the Python / Node clients
  --logs DIR               where logs go (default target/failover/<unix time>)
  --seed N                 the fault timing's random seed (default: from the clock)
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    Sentinel,
    Cluster,
}

impl Topology {
    pub fn name(self) -> &'static str {
        match self {
            Topology::Sentinel => "sentinel",
            Topology::Cluster => "cluster",
        }
    }
}

pub struct Options {
    pub repo: PathBuf,
    pub topologies: Vec<Topology>,
    pub policies: Vec<String>,
    pub expect_zero: Vec<String>,
    pub duration: Duration,
    pub per_kind: usize,
    pub until_failovers: usize,
    pub min_failovers: usize,
    pub faults: Vec<FaultKind>,
    pub pause: (Duration, Duration),
    pub timers: Timers,
    pub settings: NodeSettings,
    pub workers: usize,
    pub hold: (u64, u64),
    pub wait_ms: u64,
    pub watchdog_ms: u64,
    pub control: Duration,
    pub stop_limit: Duration,
    pub python_options: serde_json::Map<String, serde_json::Value>,
    pub node_options: serde_json::Map<String, serde_json::Value>,
    pub logs: PathBuf,
    pub seed: u64,
}

pub fn parse(args: Vec<String>) -> Result<Options, String> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let repo = repo.canonicalize().unwrap_or(repo);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut o = Options {
        logs: repo.join("target/failover").join(now.as_secs().to_string()),
        repo,
        topologies: vec![Topology::Sentinel, Topology::Cluster],
        policies: vec!["default".into(), "off".into()],
        expect_zero: Vec::new(),
        duration: Duration::from_secs(300),
        per_kind: 0,
        until_failovers: 0,
        min_failovers: 0,
        faults: FAULT_KINDS.to_vec(),
        pause: (Duration::from_millis(2000), Duration::from_millis(4000)),
        timers: Timers::fast(),
        settings: NodeSettings { aof: false, log_dir: PathBuf::new() },
        workers: 6,
        hold: (20, 200),
        wait_ms: 2000,
        watchdog_ms: 30000,
        control: Duration::from_secs(5),
        stop_limit: Duration::from_secs(60),
        python_options: Default::default(),
        node_options: Default::default(),
        seed: now.as_nanos() as u64,
    };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--short" => {
                // The strict promise (docs/site/guides/failover.md): every replica
                // acknowledged the grant, so whichever one is promoted has it. The default
                // (`one`) can lose a token when Sentinel promotes the replica that had not
                // acknowledged yet, and an empty restart or a manual failover needs AOF as
                // well: measured by longer runs, not required here.
                o.policies = vec!["all".into()];
                o.faults = vec![FaultKind::KillReplica, FaultKind::Stop, FaultKind::Partition];
                o.expect_zero = vec!["all".into()];
                // It ends at the 5th real failover (about 40 s a topology, quiet or under
                // the test command's load); the length is only a cap, with room for the
                // repeated Sentinel elections a busy machine can cause.
                o.duration = Duration::from_secs(200);
                o.until_failovers = 5;
                o.min_failovers = 5;
                o.pause = (Duration::from_millis(1000), Duration::from_millis(2000));
            }
            "--topology" => {
                o.topologies = match value()?.as_str() {
                    "sentinel" => vec![Topology::Sentinel],
                    "cluster" => vec![Topology::Cluster],
                    "both" => vec![Topology::Sentinel, Topology::Cluster],
                    t => return Err(format!("unknown topology {t}")),
                }
            }
            "--policy" => o.policies = list(&value()?),
            "--expect-zero" => o.expect_zero = list(&value()?),
            "--duration" => o.duration = Duration::from_secs(number(&value()?)?),
            "--per-kind" => o.per_kind = number(&value()?)? as usize,
            "--until-failovers" => o.until_failovers = number(&value()?)? as usize,
            "--min-failovers" => o.min_failovers = number(&value()?)? as usize,
            "--faults" => {
                o.faults = list(&value()?).iter().map(|k| FaultKind::parse(k).ok_or(format!("unknown fault kind {k}"))).collect::<Result<_, _>>()?
            }
            "--pause" => {
                let (a, b) = range(&value()?)?;
                o.pause = (Duration::from_millis(a), Duration::from_millis(b));
            }
            "--timers" => {
                o.timers = match value()?.as_str() {
                    "fast" => Timers::fast(),
                    "default" => Timers::defaults(),
                    t => return Err(format!("unknown timers {t}")),
                }
            }
            "--aof" => o.settings.aof = true,
            "--workers" => o.workers = number(&value()?)? as usize,
            "--hold" => o.hold = range(&value()?)?,
            "--wait-ms" => o.wait_ms = number(&value()?)?,
            "--watchdog-ms" => o.watchdog_ms = number(&value()?)?,
            "--control" => o.control = Duration::from_secs(number(&value()?)?),
            "--stop-limit" => o.stop_limit = Duration::from_secs(number(&value()?)?),
            "--python-option" => option(&value()?, &mut o.python_options)?,
            "--node-option" => option(&value()?, &mut o.node_options)?,
            "--logs" => o.logs = PathBuf::from(value()?),
            "--seed" => o.seed = number(&value()?)?,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.workers < 2 || o.faults.is_empty() || o.policies.is_empty() || o.hold.0 > o.hold.1 {
        return Err("need at least 2 workers, one fault kind, one policy, and a hold range low-high".into());
    }
    Ok(o)
}

fn list(s: &str) -> Vec<String> {
    s.split(',').filter(|p| !p.is_empty()).map(String::from).collect()
}

fn number(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("{s} is not a whole number"))
}

fn range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once('-').ok_or_else(|| format!("{s} is not a range LOW-HIGH"))?;
    let (a, b) = (number(a)?, number(b)?);
    if a > b {
        return Err(format!("{s}: LOW is above HIGH"));
    }
    Ok((a, b))
}

fn option(s: &str, into: &mut serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
    let (name, json) = s.split_once('=').ok_or_else(|| format!("{s} is not NAME=JSON"))?;
    let value = serde_json::from_str(json).map_err(|e| format!("{s}: {e}"))?;
    into.insert(name.to_string(), value);
    Ok(())
}
