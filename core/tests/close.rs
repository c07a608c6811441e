//! Closing a client: bounded when the server does not answer, however many holds.

mod common;

use std::time::Instant;

use common::*;

/// A close releases its holds a bounded number at a time, each release bounded by
/// twice the response timeout: with the server stopped (SIGSTOP: connections are
/// accepted, nothing is answered), the close must give up after about one such
/// window, not one per batch of releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_with_the_server_stopped_gives_up_after_about_one_window_however_many_holds() {
    let server = RedisServer::start();
    let c = client(&server.url(), 30_000).await;
    let response_timeout = c.config().response_timeout;
    let locks: Vec<_> = (0..2000).map(|i| c.lock(format!("cut-off-close:{i}")).unwrap()).collect();
    for chunk in locks.chunks(500) {
        for guard in futures_util::future::join_all(chunk.iter().map(|l| l.acquire())).await {
            guard.unwrap().into_hold();
        }
    }
    server.pause();
    let started = Instant::now();
    c.shutdown().await.unwrap();
    let took = started.elapsed();
    // One window (2 x response timeout) for the releases, one response timeout for the
    // reply latches, and slack; a window per 256 releases would be 8 of them.
    assert!(took < response_timeout * 12, "the close took {took:?} (response timeout {response_timeout:?})");
    assert!(c.is_closed());
    // What the server was sent meanwhile runs now (releases sent at the close); clean up.
    server.resume();
    drop(locks);
    let mut raw = server.raw().await;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut raw).await.unwrap();
}

/// A close whose releases and renewals answer late (a link slowed to a round-trip of
/// 0.8 of the lease as the close starts): the renewals still reach the server, so no
/// hold expires there, but none is confirmed before its local deadline, and the
/// releases' answers come after it too. The close ends every hold, and each release's
/// answer tells whether it was lost: none is reported lost (the deadline used to
/// report every hold still queued for its release, which then was never sent), and
/// nothing is left held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_whose_answers_come_after_the_deadlines_reports_no_loss_and_leaves_nothing() {
    const HOLDS: usize = 400;
    let lease = std::time::Duration::from_secs(3);
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let c = builder(&proxy.url(), lease.as_millis() as u64)
        .response_timeout(std::time::Duration::from_secs(6))
        .connect()
        .await
        .unwrap();
    let lost = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut locks = Vec::new();
    for i in 0..HOLDS {
        let lock = c.lock(format!("slow-close:{i}")).unwrap();
        let count = lost.clone();
        lock.set_on_lost(Some(std::sync::Arc::new(move |_: &ferrolock::LostEvent| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })));
        locks.push(lock);
    }
    for guard in futures_util::future::join_all(locks.iter().map(|l| l.acquire())).await {
        guard.unwrap().into_hold();
    }
    proxy.set_one_way_delay(lease.mul_f64(0.4));
    c.shutdown().await.unwrap();
    assert_eq!(lost.load(std::sync::atomic::Ordering::SeqCst), 0, "holds reported lost by the close");
    assert!(locks.iter().all(|l| !l.is_lost()));
    proxy.set_one_way_delay(std::time::Duration::ZERO);
    let mut raw = server.raw().await;
    assert_eq!(keys(&mut raw).await, Vec::<String>::new(), "every hold released");
}
