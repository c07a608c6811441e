//! Memory per held lock: this process's RSS before and after taking `holds` locks on
//! distinct names on one client with an explicit lease (no renewal), divided by the
//! count (issue 30's target: <= 2 KB per hold in each binding; this is the core's part).

use std::time::Duration;

use ferrolock::{AcquireOptions, Client};

/// Resident bytes of this process (/proc/self/statm, Linux), None elsewhere.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split(' ').nth(1)?.parse().ok()?;
    Some(pages * 4096) // the page size of every Linux this runs on (x86-64, aarch64 default)
}

pub async fn section(client: &Client, holds: usize) {
    let options = AcquireOptions { wait: None, lease: Some(Duration::from_secs(600)) };
    let warm = client.lock("bench:mem:warm").unwrap(); // scripts loaded, registry allocated
    warm.acquire_with(options).await.unwrap().unwrap().release().await.unwrap();
    // The handles first, then the holds: the two shares of the figure.
    let before = rss_bytes();
    let locks: Vec<_> = (0..holds).map(|i| client.lock(format!("bench:mem:{i}")).unwrap()).collect();
    let handles = rss_bytes();
    let mut held = Vec::with_capacity(holds);
    // Batches of 500 take them quickly without one huge burst of pending futures.
    for chunk in locks.chunks(500) {
        let batch = chunk.iter().map(|lock| async move {
            let guard = lock.acquire_with(options).await.unwrap().expect("an unbounded wait returns only when acquired");
            (lock, guard)
        });
        held.extend(futures_util::future::join_all(batch).await);
    }
    let after = rss_bytes();
    println!("== memory, {holds} held locks (distinct names, one client, explicit lease)");
    match (before, handles, after) {
        (Some(before), Some(handles), Some(after)) => {
            let per = |from: u64, to: u64| to.saturating_sub(from) as f64 / holds as f64;
            let per_hold = per(before, after);
            let met = if per_hold <= 2048.0 { "met" } else { "NOT met" };
            println!("RSS per hold                    {per_hold:.0} B   (target <= 2 KB in each binding: {met})");
            println!("  of which the Lock handle      {:.0} B, the hold on top {:.0} B", per(before, handles), per(handles, after));
        }
        _ => println!("RSS per hold                    unknown (no /proc/self/statm)"),
    }
    while !held.is_empty() {
        let batch: Vec<_> = held.drain(..held.len().min(500)).map(|(_lock, guard)| guard.release()).collect();
        for released in futures_util::future::join_all(batch).await {
            released.unwrap();
        }
    }
}
