//! Leader election across languages, the short version of `scripts/election-bench.sh`
//! (tests/election/run.rs): three candidates of three languages (Rust, Python, Node;
//! C in the second run with two more), the leader killed with kill -9 a few times,
//! then leaders that resign. Checks the safety promises only (terms only grow, the
//! outside fence saw no two leaders at once and accepted no stale write, the observer
//! told every leader in order); the times are the bench's to measure. Needs every
//! worker built (`bash scripts/build.sh`).

#[path = "election/run.rs"]
mod run;

fn short(langs: Vec<&'static str>) {
    let config = run::Config { langs, kills: 3, resigns: 5, lease_ms: 600, lead_ms: 100 };
    let report = run::run(&config);
    println!("{:?}: failover {:?} ms, handover {:?} ms, terms {:?}", config.langs, report.failover_ms, report.handover_ms, report.terms);
    report.check().unwrap_or_else(|e| panic!("{e}\n{report:?}"));
    assert_eq!(report.failover_ms.len(), config.kills, "{report:?}");
    assert!(report.handover_ms.len() >= config.resigns.min(1), "{report:?}");
    assert!(report.writes > 0, "the leaders wrote to the fence: {report:?}");
}

#[test]
fn mixed_candidates_survive_kills_and_hand_over_on_resignation() {
    short(vec!["rust", "python", "node"]);
}

#[test]
fn c_candidates_with_the_others() {
    short(vec!["c", "c", "rust"]);
}
