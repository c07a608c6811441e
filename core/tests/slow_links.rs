//! Renewals over slow links: a hold is renewed on a schedule counted from each
//! renewal's send time, with renewals overlapping, so it is kept while the
//! round-trip stays under about two thirds of its lease (minus the drift margin),
//! and reported lost, before anyone else can take it, when it does not.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, LostEvent};
use redis::AsyncCommands;

const LEASE: Duration = Duration::from_millis(1500);

/// The lease of the holds kept over a round-trip that is a fraction of it. Longer than
/// LEASE: at 0.6 of the lease the schedule leaves 5% of it to spare (a renewal sent a
/// third of a lease after the previous one answers at 0.93 of a lease, the deadline is
/// at 0.98), 75 ms of a 1.5 s lease, which a busy machine's scheduling took (CI).
const KEPT_LEASE: Duration = Duration::from_millis(6000);

fn builder_over(proxy: &FaultProxy) -> ferrolock::ClientBuilder {
    builder_with(proxy, LEASE)
}

fn builder_with(proxy: &FaultProxy, lease: Duration) -> ferrolock::ClientBuilder {
    builder(&proxy.url(), lease.as_millis() as u64).response_timeout(Duration::from_secs(3))
}

/// Takes a lock through a proxy, then holds it for four leases while the proxy adds
/// `round_trip / 2` each way: the hold must stay on the server all along, renewed,
/// and never be reported lost. (Taken over the fast link: a renewal can only follow
/// the acquire's reply, so a hold taken over a link slower than about half its lease
/// is lost at its first renewal.) `response_timeout` bounds the client's other calls;
/// a renewal waits up to a lease, whatever it is.
async fn kept_over(name: &str, lease: Duration, round_trip: Duration, response_timeout: Duration) {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let c = builder_with(&proxy, lease).response_timeout(response_timeout).connect().await.unwrap();
    let lock = c.lock(name).unwrap();
    let lost = Arc::new(Mutex::new(Vec::new()));
    let events = lost.clone();
    lock.set_on_lost(Some(Arc::new(move |e: &LostEvent| events.lock().unwrap().push(e.reason.clone()))));
    let guard = lock.acquire().await.unwrap();
    proxy.set_one_way_delay(round_trip / 2);
    let renewals = script_calls(&mut raw).await;
    let until = Instant::now() + lease * 4;
    // The server's view, straight from it: the field never goes, the key never expires.
    while Instant::now() < until {
        let field: Option<u32> = raw.hget(name, lock.owner()).await.unwrap();
        assert_eq!(field, Some(1), "the hold left the server over a {round_trip:?} round-trip");
        assert!(!guard.is_lost(), "reported lost over a {round_trip:?} round-trip: {:?}", lost.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let renewed = script_calls(&mut raw).await - renewals;
    assert!(renewed >= 9, "renewed about three times a lease: {renewed} renewals in four leases");
    proxy.set_one_way_delay(Duration::ZERO);
    guard.release().await.unwrap();
    c.shutdown().await.unwrap();
    assert!(lost.lock().unwrap().is_empty(), "no loss reported: {:?}", lost.lock().unwrap());
    assert!(!raw.exists::<_, bool>(name).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_is_kept_over_a_round_trip_of_a_third_of_its_lease() {
    kept_over("slow-0.35", KEPT_LEASE, KEPT_LEASE.mul_f64(0.35), Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_is_kept_over_a_round_trip_of_three_fifths_of_its_lease() {
    kept_over("slow-0.6", KEPT_LEASE, KEPT_LEASE.mul_f64(0.6), Duration::from_secs(3)).await;
}

/// The response timeout shorter than the round-trip (300 ms against 250 ms each way):
/// the client's other requests on the connection the renewals use (holder notes,
/// written in the watchdog's rounds once a hold lasts a second; the deletion of reply
/// latches) time out there, and a timed-out request used to retire the connection,
/// so the next renewal waited for a new one's set-up (three round-trips) and the hold
/// was reported lost about two seconds in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_is_kept_over_a_round_trip_longer_than_the_response_timeout() {
    // The 1.5 s lease: a new connection's set-up over this link (1.5 s) outlasts it.
    kept_over("slow-past-timeout", LEASE, Duration::from_millis(500), Duration::from_millis(300)).await;
}

/// A client made over the slow link (0.35 of the lease each round-trip): its first
/// acquire connects first (three round-trips of set-up), and its lease counts from
/// when the acquire was sent, not from before connecting, so the first renewal is in
/// time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_clients_first_hold_over_a_slow_link_is_kept() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let name = "slow-fresh";
    proxy.set_one_way_delay(LEASE.mul_f64(0.35) / 2);
    let c = builder_over(&proxy).connect_timeout(Duration::from_secs(3)).connect().await.unwrap();
    let lock = c.lock(name).unwrap();
    let guard = lock.acquire().await.unwrap();
    let until = Instant::now() + LEASE * 3;
    while Instant::now() < until {
        assert!(!guard.is_lost(), "the first hold was reported lost");
        let field: Option<u32> = raw.hget(name, lock.owner()).await.unwrap();
        assert_eq!(field, Some(1), "the hold left the server");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    proxy.set_one_way_delay(Duration::ZERO);
    guard.release().await.unwrap();
    c.shutdown().await.unwrap();
    assert!(!raw.exists::<_, bool>(name).await.unwrap());
}

/// A round-trip longer than the lease: no renewal can be confirmed in time, so the
/// holder is told of its loss, and that comes before the key expires on the server
/// and before another client can take the lock. Renewals still in flight may land
/// after the loss: they only extend a field that exists, and the holder deletes what
/// they kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_over_a_round_trip_longer_than_its_lease_is_reported_lost_before_anyone_else_can_take_it() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let name = "slow-1.1";
    let c = builder_over(&proxy).connect().await.unwrap();
    let other = client(&server.url(), 30_000).await;
    let lock = c.lock(name).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Mutex::new(Some(tx));
    lock.set_on_lost(Some(Arc::new(move |e: &LostEvent| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(e.at);
        }
    })));
    let guard = lock.acquire().await.unwrap();
    proxy.set_one_way_delay(LEASE.mul_f64(1.1) / 2);
    let slowed = Instant::now();
    // Watch the key and try the other client every 2 ms: the send time of its first
    // success is no later than the moment Redis granted it.
    let theirs = other.lock(name).unwrap();
    let mut expired_seen = None;
    let (sent, their_guard) = loop {
        if expired_seen.is_none() && !raw.exists::<_, bool>(name).await.unwrap() {
            expired_seen = Some(Instant::now());
        }
        let sent = Instant::now();
        if let Some(g) = theirs.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_secs(10))).await.unwrap() {
            break (sent, g);
        }
        assert!(slowed.elapsed() < LEASE * 6, "the other client got in eventually");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let lost_at = tokio::time::timeout(LEASE, rx).await.expect("the loss was told").unwrap();
    assert!(guard.is_lost());
    assert!(lost_at < sent, "the loss was told {:?} after the other client's winning attempt was sent", lost_at - sent);
    if let Some(expired) = expired_seen {
        assert!(lost_at < expired, "the loss was told {:?} after the key was gone", lost_at - expired);
    }
    // Whatever renewals were still in flight, only the new holder's field is there.
    proxy.set_one_way_delay(Duration::ZERO);
    let pttl: i64 = raw.pttl(name).await.unwrap();
    let fields: std::collections::HashMap<String, u32> = raw.hgetall(name).await.unwrap();
    assert_eq!(fields, std::collections::HashMap::from([(theirs.owner().to_string(), 1)]), "only the new holder");
    assert!(pttl > LEASE.as_millis() as i64, "late renewals did not touch the new holder's lease: PTTL {pttl}");
    their_guard.release().await.unwrap();
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}
