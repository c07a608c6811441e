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
