//! The election's measuring program (`bash scripts/election-bench.sh`): per language
//! three candidates (and a mixed run), the leader killed with kill -9 KILLS times and
//! RESIGNS resignations, with the outside fence and an observer (run.rs). Prints, per
//! run, the time to a new leader after a kill and after a resignation (p50, p99, max)
//! and the safety checks; exits 1 if a check failed.
//!
//!     election-bench [KILLS [RESIGNS [LEASE_MS [RUNS]]]]   (defaults 20 20 1000 all)
//!
//! RUNS picks runs by name, comma-separated: rust, python, node, c, mixed.

mod run;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let picked: Option<Vec<String>> = (args.len() > 3).then(|| args.remove(3).split(',').map(str::to_string).collect());
    let args: Vec<u64> = args.iter().map(|a| a.parse().expect("KILLS, RESIGNS and LEASE_MS are numbers")).collect();
    let (kills, resigns, lease_ms) = (args.first().copied().unwrap_or(20), args.get(1).copied().unwrap_or(20), args.get(2).copied().unwrap_or(1000));
    let runs: [(&str, Vec<&'static str>); 5] = [
        ("rust", vec!["rust"; 3]),
        ("python", vec!["python"; 3]),
        ("node", vec!["node"; 3]),
        ("c", vec!["c"; 3]),
        ("mixed", vec!["rust", "python", "node", "c"]),
    ];
    let bound = lease_ms + lease_ms / 3;
    println!("lease {lease_ms} ms (a new leader after a kill is promised within lease + one renewal interval = {bound} ms); {kills} kills, {resigns} resignations per run");
    let mut failed = false;
    for (label, langs) in runs {
        if picked.as_ref().is_some_and(|p| !p.iter().any(|l| l == label)) {
            continue;
        }
        let config = run::Config { langs, kills: kills as usize, resigns: resigns as usize, lease_ms, lead_ms: 100 };
        let report = run::run(&config);
        let (f50, f99) = run::percentiles(&report.failover_ms);
        let (h50, h99) = run::percentiles(&report.handover_ms);
        let fmax = report.failover_ms.iter().max().copied().unwrap_or(0);
        let check = report.check();
        println!(
            "{label:7} kill -9 -> new leader: p50 {f50} ms, p99 {f99} ms, max {fmax} ms (within {bound}: {}/{}); \
             resign -> new leader: p50 {h50} ms, p99 {h99} ms ({} resignations); {} terms, {} fence writes; {}",
            report.failover_ms.iter().filter(|&&ms| ms <= bound).count(),
            report.failover_ms.len(),
            report.handover_ms.len(),
            report.terms.len(),
            report.writes,
            match &check {
                Ok(()) => "terms grow, no overlap, no stale write, observer told every leader in order".to_string(),
                Err(e) => format!("FAILED: {e}"),
            }
        );
        failed |= check.is_err();
    }
    std::process::exit(i32::from(failed));
}
