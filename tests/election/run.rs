//! Candidates of the language workers (tests/workers, `elect`) in one election, a
//! leader killed with kill -9 again and again, then leaders that resign, with the
//! outside fence (fence.lua, a redis-server of its own) and a core observer watching.
//! Shared by the test (tests/election.rs: a short run, its safety checks) and the
//! measuring program (election/bench.rs, `bash scripts/election-bench.sh`).

use std::time::{Duration, Instant};

use ferrolock_harness::{RedisServer, Worker};

/// One run: which candidates, how many kills and resignations, the lease.
pub struct Config {
    /// The language of each candidate (three per run; a mixed run names several).
    pub langs: Vec<&'static str>,
    pub kills: usize,
    pub resigns: usize,
    /// The candidates' watchdog lease.
    pub lease_ms: u64,
    /// How long a leader leads before it resigns, in the resignation phase.
    pub lead_ms: u64,
}

/// What one run saw.
#[derive(Debug, Default)]
pub struct Report {
    /// Per kill: ms from the kill (the fence's clock) to the next leader's enter.
    pub failover_ms: Vec<u64>,
    /// Per resignation: ms from the leader's leave (just before its resign()) to the next enter.
    pub handover_ms: Vec<u64>,
    /// Every leader's term, in the order the fence saw them enter.
    pub terms: Vec<u64>,
    /// The leaders' terms the observer told, in order.
    pub observed: Vec<u64>,
    /// Writes refused for a stale term, enters while another live leader was inside,
    /// writes by a candidate that was not the one inside; writes accepted.
    pub refused: u64,
    pub overlaps: u64,
    pub foreign: u64,
    pub writes: u64,
}

impl Report {
    /// The safety promises: terms only grow, no two leaders inside at once, no stale
    /// write, and the observer told every leader in order. `Err` says which failed.
    pub fn check(&self) -> Result<(), String> {
        if !self.terms.windows(2).all(|w| w[0] < w[1]) {
            return Err(format!("terms did not only grow: {:?}", self.terms));
        }
        if self.refused + self.overlaps + self.foreign > 0 {
            return Err(format!("{} stale writes refused, {} overlaps, {} writes by another than the leader", self.refused, self.overlaps, self.foreign));
        }
        if self.observed != self.terms {
            return Err(format!("the observer told {:?}; the leaders were {:?}", self.observed, self.terms));
        }
        Ok(())
    }
}

/// p50 and p99 of some durations (ms), nearest rank (the bench prints them).
#[allow(dead_code)]
pub fn percentiles(values: &[u64]) -> (u64, u64) {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = |p: f64| sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    if sorted.is_empty() {
        (0, 0)
    } else {
        (rank(0.50), rank(0.99))
    }
}

const NAME: &str = "bench-election";

struct Fence {
    server: RedisServer,
    conn: redis::Connection,
    sha: String,
}

impl Fence {
    fn start() -> Fence {
        let server = RedisServer::start();
        let mut conn = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
        let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(include_str!("fence.lua")).query(&mut conn).unwrap();
        Fence { server, conn, sha }
    }

    fn call(&mut self, op: &str, term: u64, who: &str) -> i64 {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&self.sha).arg(3).arg("fence").arg("fence:dead").arg("fence:events").arg(op).arg(term).arg(who);
        cmd.query(&mut self.conn).unwrap()
    }

    fn inside(&mut self) -> Option<String> {
        redis::cmd("HGET").arg("fence").arg("inside").query(&mut self.conn).unwrap()
    }

    fn counter(&mut self, field: &str) -> u64 {
        let value: Option<u64> = redis::cmd("HGET").arg("fence").arg(field).query(&mut self.conn).unwrap();
        value.unwrap_or(0)
    }

    /// Events from `from` on: (what, term, who, ms).
    fn events(&mut self, from: usize) -> Vec<(String, u64, String, u64)> {
        let lines: Vec<String> = redis::cmd("LRANGE").arg("fence:events").arg(from).arg(-1).query(&mut self.conn).unwrap();
        lines
            .iter()
            .map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                (f[0].to_string(), f[1].parse().unwrap(), f[2].to_string(), f[3].parse().unwrap())
            })
            .collect()
    }

    /// Waits (polling the fence, 10 s at most) until `ready` holds for the events so far.
    fn wait_for(&mut self, what: &str, mut ready: impl FnMut(&[(String, u64, String, u64)]) -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready(&self.events(0)) {
            assert!(Instant::now() < until, "timed out waiting for {what}: {:?}", self.events(0));
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// One candidate: its worker and its name at the fence.
struct Candidate {
    worker: Worker,
    who: String,
}

fn candidate(lang: &'static str, url: &str, config: &Config, fence: &Fence, who: String, lead_ms: u64) -> Candidate {
    let mut worker = Worker::start(lang, url, config.lease_ms);
    let reply = worker.call(&format!("elect {NAME} {} {} {who} {lead_ms}", fence.server.port, fence.sha));
    assert_eq!(reply, "ok", "{lang} worker: elect");
    Candidate { worker, who }
}

/// Kills a candidate's worker with SIGKILL and tells the fence.
fn kill(candidate: Candidate, fence: &mut Fence) {
    // SAFETY: kill(2) on the pid of a worker this process started and has not reaped.
    unsafe { libc::kill(candidate.worker.pid as libc::pid_t, libc::SIGKILL) };
    fence.call("dead", 0, &candidate.who);
    drop(candidate); // reaps it
}

/// Runs one election as configured; panics if something does not run at all (the
/// safety checks are the caller's: [`Report::check`]).
pub fn run(config: &Config) -> Report {
    let server = RedisServer::start();
    let url = server.url();
    let mut fence = Fence::start();
    // The observer: a core client of its own, telling every change from the start.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (observed_tx, observed_rx) = std::sync::mpsc::channel();
    let watcher = runtime.block_on(async {
        let client = ferrolock::Client::connect(url.as_str()).await.unwrap();
        let mut observer = client.election(NAME).unwrap().observe().await.unwrap();
        assert!(observer.next().await.unwrap().is_none());
        tokio::spawn(async move {
            while let Ok(change) = observer.next().await {
                if let Some(leader) = change {
                    let _ = observed_tx.send(leader.term);
                }
            }
        });
        client
    });

    let mut report = Report::default();
    let mut slots: Vec<Candidate> = Vec::new();
    for (i, lang) in config.langs.iter().enumerate() {
        slots.push(candidate(lang, &url, config, &fence, format!("{lang}-{i}-0"), 0));
    }
    // Kills: the leader inside the fence dies with SIGKILL; its slot gets a new candidate.
    for k in 0..config.kills {
        fence.wait_for("a leader", |events| events.iter().filter(|e| e.0 == "enter").count() > k);
        let who = fence.inside().expect("a leader inside the fence");
        let slot = slots.iter().position(|c| c.who == who).unwrap_or_else(|| panic!("{who} is no candidate of this run"));
        let lang = slots[slot].worker.lang;
        let new = candidate(lang, &url, config, &fence, format!("{lang}-{slot}-{}", k + 1), 0);
        kill(std::mem::replace(&mut slots[slot], new), &mut fence);
    }
    fence.wait_for("the leader after the last kill", |events| events.iter().filter(|e| e.0 == "enter").count() > config.kills);
    // Resignations: new candidates that lead `lead_ms`, resign, and campaign again.
    // The others go first, killed as well: a worker that quits closes its client, which
    // resigns without its candidate loop knowing (it would write once more, stale).
    for c in slots.drain(..) {
        kill(c, &mut fence);
    }
    for (i, lang) in config.langs.iter().enumerate() {
        slots.push(candidate(lang, &url, config, &fence, format!("{lang}-{i}-r"), config.lead_ms));
    }
    let resigned = |events: &[(String, u64, String, u64)]| {
        events.windows(2).filter(|w| w[0].0 == "leave" && w[0].2.ends_with("-r") && w[1].0 == "enter").count()
    };
    fence.wait_for("the resignations", |events| resigned(events) >= config.resigns);
    for c in slots.drain(..) {
        kill(c, &mut fence);
    }

    let events = fence.events(0);
    for (i, e) in events.iter().enumerate() {
        let next_enter = || events[i + 1..].iter().find(|n| n.0 == "enter");
        match e.0.as_str() {
            "enter" => report.terms.push(e.1),
            // The kills of the kill phase come first (then those that end the phases).
            "dead" if report.failover_ms.len() < config.kills => {
                report.failover_ms.push(next_enter().expect("a leader after each kill").3 - e.3)
            }
            "leave" if e.2.ends_with("-r") && report.handover_ms.len() < config.resigns => {
                if let Some(next) = events.get(i + 1).filter(|n| n.0 == "enter") {
                    report.handover_ms.push(next.3 - e.3);
                }
            }
            _ => {}
        }
    }
    report.refused = fence.counter("refused");
    report.overlaps = fence.counter("overlaps");
    report.foreign = fence.counter("foreign");
    report.writes = fence.counter("writes");
    // Every leader's announcement reached the observer before its resignation or death did.
    let last = *report.terms.last().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while report.observed.last() != Some(&last) && Instant::now() < until {
        if let Ok(term) = observed_rx.recv_timeout(Duration::from_millis(100)) {
            report.observed.push(term);
        }
    }
    runtime.block_on(watcher.shutdown()).unwrap();
    report
}
