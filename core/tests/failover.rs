//! Failovers as a client sees them: the master a majority of the sentinels name is
//! followed (not a stray sentinel's, not the first answer), `+switch-master` and a
//! reconnect onto a restarted master make the client check every hold at once (the
//! loss is reported by that check, before any renewal), a cluster whose slots changed
//! masters is noticed, a read-back after a lost acquire never adopts a leftover hold,
//! and a force-unlock is learned at the holder's next renewal (its window, measured).

mod common;

use std::time::{Duration, Instant};

use common::replicated::{ask, Replicated};
use common::*;
use ferrolock::{Client, ErrorKind, Released, ReplicaAck};
use redis::AsyncCommands;

fn sentinel_url(ports: &[u16]) -> String {
    let hosts: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    format!("redis+sentinel://{}/mymaster", hosts.join(","))
}

async fn connect(url: &str, watchdog_ms: u64, policy: ReplicaAck) -> Client {
    builder(url, watchdog_ms)
        .connect_timeout(Duration::from_secs(1))
        .response_timeout(Duration::from_secs(2))
        .replica_ack(policy)
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sentinels_majority_is_followed_not_a_stray_sentinel() {
    let set = Replicated::start(1).await;
    let stray = RedisServer::start();
    let s: Vec<u16> = set.sentinels.iter().map(|s| s.port).collect();
    // Sentinel 0 now names a stray, empty master (as a stale sentinel names a
    // restarted old master for a moment after a failover).
    ask::<()>(s[0], redis::cmd("SENTINEL").arg("REMOVE").arg("mymaster")).await.unwrap();
    let monitor = redis::cmd("SENTINEL").arg("MONITOR").arg("mymaster").arg("127.0.0.1").arg(stray.port).arg(2).clone();
    ask::<()>(s[0], &monitor).await.unwrap();
    let mut master = set.raw_master().await;
    let mut stray_conn = stray.raw().await;

    // The stray sentinel answers first in the URL: the majority's master is taken.
    let client = connect(&sentinel_url(&s), 10_000, ReplicaAck::One).await;
    let guard = client.lock("d:lock").unwrap().acquire().await.unwrap();
    assert!(master.exists::<_, bool>("d:lock").await.unwrap(), "taken on the master the majority names");
    assert!(keys(&mut stray_conn).await.is_empty(), "nothing on the stray master");
    guard.release().await.unwrap();

    // Asked alone, the stray sentinel is its own majority: its master has no replica,
    // so no acquire is acknowledged there, and none is sent.
    let lone = connect(&sentinel_url(&s[..1]), 10_000, ReplicaAck::One).await;
    let err = lone.lock("d:lock").unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotReplicated, "{err:?}");
    assert_eq!(err.replica_shortfall().map(|s| s.replicas), Some(0), "{err:?}");
    assert!(keys(&mut stray_conn).await.is_empty(), "nothing written on the stray master");

    // One of the two agreeing sentinels stops: no majority, and the error says what each said.
    set.sentinels[1].pause();
    let err = builder(&sentinel_url(&s), 10_000).connect_timeout(Duration::from_millis(500)).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err:?}");
    let m = err.message();
    assert!(m.contains("no majority (2 of 3)"), "{m}");
    assert!(m.contains(&format!("names 127.0.0.1:{}", stray.port)) && m.contains(&format!("names 127.0.0.1:{}", set.master().port)), "{m}");
    assert!(m.contains(&format!("sentinel 127.0.0.1:{} did not answer", s[1])), "{m}");
    set.sentinels[1].resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_master_checks_every_hold_at_once() {
    let mut set = SentinelSet::start().await;
    // A 60 s lease: the watchdog's first renewal would come 20 s after the acquire.
    let holder = connect(&set.url(), 60_000, ReplicaAck::Off).await;
    holder.lock("w:warm").unwrap().acquire().await.unwrap().release().await.unwrap();
    // The hold is written to the master only (the replica stopped, its link cut).
    set.pause_replica().await;
    let mut master = set.raw_master().await;
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica").query_async(&mut master).await.unwrap();
    let guard = holder.lock("w:lost").unwrap().acquire().await.unwrap();
    let old = set.kill_master().await;
    set.resume_replica().await;
    set.wait_for_new_master(old, Duration::from_secs(30)).await;
    eventually(Duration::from_secs(30), "the holder told of the loss", || async { guard.lock().is_lost() }).await;
    let m = holder.metrics();
    assert!(m.failovers_noticed >= 1, "{m:?}");
    // Reported by the check the failover started, not by a renewal (which would have
    // found the hold gone first, leaving the check nothing to report).
    assert_eq!((m.failover_loss_report.count, m.renewals), (1, 0), "{m:?}");
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_onto_a_restarted_master_is_a_failover_noticed() {
    let mut set = Replicated::start(1).await;
    let holder = connect(&set.url(), 60_000, ReplicaAck::One).await;
    let guard = holder.lock("r:held").unwrap().acquire().await.unwrap();
    // Killed and started again at once, empty (no persistence): the same address, a
    // new run id, and the replica resyncs from it (empty too).
    set.data[0].restart();
    let other = holder.lock("r:other").unwrap();
    eventually(Duration::from_secs(30), "the holder told of the loss", || {
        let (other, guard) = (other.clone(), guard.lock().clone());
        async move {
            // Any call reconnects; it may be refused while the replica resyncs.
            if let Ok(Some(g)) = other.try_acquire().await {
                let _ = g.release().await;
            }
            guard.is_lost()
        }
    })
    .await;
    let m = holder.metrics();
    assert!(m.failovers_noticed >= 1 && m.failover_loss_report.count == 1, "{m:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_failover_is_noticed_and_the_holds_checked() {
    let cluster = Cluster::start().await;
    let holder = connect(&cluster.url(), 60_000, ReplicaAck::One).await;
    let guard = holder.lock("{n}:held").unwrap().acquire().await.unwrap();
    let owner = cluster.owner_of(b"{n}").await;
    cluster.failover(owner).await;
    eventually(Duration::from_secs(30), "the slot map's change noticed", || async { holder.metrics().failovers_noticed >= 1 }).await;
    // A manual failover loses nothing: the check renewed the hold on the new master.
    eventually(Duration::from_secs(30), "the check to renew the hold", || async { holder.metrics().renewals >= 1 }).await;
    assert!(!guard.lock().is_lost());
    assert_eq!(holder.metrics().failover_loss_report.count, 0);
    guard.release().await.unwrap();
}

/// A read-back after a lost acquire looks for that acquire's own grant, never for the
/// holder's field, which a release lost in a failover may have left behind: adopting
/// it handed the previous fencing token out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_back_never_adopts_a_leftover_hold() {
    // master <- proxy <- (sentinel, replica, client): every connection to the master
    // goes through the proxy, so one request can be dropped or its reply cut.
    let master = RedisServer::start_with(&["--repl-diskless-sync-delay", "0"]);
    let proxy = FaultProxy::start(master.port).await;
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &proxy.port.to_string()]);
    let config = format!("sentinel monitor mymaster 127.0.0.1 {} 1\nsentinel down-after-milliseconds mymaster 60000\n", proxy.port);
    let sentinel = RedisServer::try_start_with_config(&config, &["--sentinel"]).unwrap();
    eventually(Duration::from_secs(30), "the replica linked and the sentinel knowing it", || async {
        let listed = ask::<Vec<Vec<String>>>(sentinel.port, redis::cmd("SENTINEL").arg("REPLICAS").arg("mymaster")).await;
        let info: String = ask(replica.port, redis::cmd("INFO").arg("replication")).await.unwrap_or_default();
        info.contains("master_link_status:up") && listed.is_ok_and(|l| l.len() == 1)
    })
    .await;
    let client = connect(&sentinel_url(&[sentinel.port]), 30_000, ReplicaAck::One).await;
    let lock = client.fenced_lock("rb:lock").unwrap();
    let first = lock.acquire().await.unwrap();
    let token = first.token().unwrap();
    let owner = lock.owner().to_string();
    first.release().await.unwrap();
    // The release is lost in a failover: the holder's field is back, the counter as it was.
    let mut raw = master.raw().await;
    let _: () = redis::pipe().hset("rb:lock", &owner, 1).pexpire("rb:lock", 30_000).query_async(&mut raw).await.unwrap();

    // The acquire never reaches Redis and its connection closes: the read-back finds no
    // grant and sends it again, which takes a new token.
    proxy.drop_next_request_to(b"rb:lock");
    let second = lock.acquire().await.unwrap();
    assert_eq!(proxy.cuts.load(std::sync::atomic::Ordering::SeqCst), 1, "the request was dropped");
    assert!(second.token().unwrap() > token, "token {:?} handed out again (was {token})", second.token());
    let second_token = second.token().unwrap();
    assert_eq!(lock.local_hold_count(), 1, "the leftover level is not adopted");
    assert_eq!(second.release().await.unwrap(), Released::Unlocked, "one release frees it");
    assert!(!raw.exists::<_, bool>("rb:lock").await.unwrap());

    // The same leftover, and the acquire runs but its reply is cut: its own grant is
    // found, confirmed by the replica, and adopted with the token it took.
    let _: () = redis::pipe().hset("rb:lock", &owner, 1).pexpire("rb:lock", 30_000).query_async(&mut raw).await.unwrap();
    proxy.cut_next_reply_to(b"rb:lock");
    let third = lock.acquire().await.unwrap();
    assert_eq!(proxy.cuts.load(std::sync::atomic::Ordering::SeqCst), 2, "the reply was cut");
    assert_eq!(third.token(), Some(second_token + 1), "the token this acquire took");
    assert_eq!(lock.local_hold_count(), 1, "the leftover level is not adopted");
    assert_eq!(third.release().await.unwrap(), Released::Unlocked, "one release frees it");
    assert!(!raw.exists::<_, bool>("rb:lock").await.unwrap());
}

/// A force-unlock publishes on the lock's channel but tells the holder nothing: it
/// learns at its next renewal. The window, measured: from the force-unlock to the
/// holder's loss report, while another client holds the lock meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_unlock_is_learned_at_the_next_renewal() {
    let server = RedisServer::start();
    let lease = Duration::from_millis(3_000);
    let holder = client(&server.url(), lease.as_millis() as u64).await;
    let other = client(&server.url(), lease.as_millis() as u64).await;
    let guard = holder.lock("fu:lock").unwrap().acquire().await.unwrap();
    let breaker = other.lock("fu:lock").unwrap();
    assert!(breaker.force_unlock().await.unwrap());
    let broken = Instant::now();
    let taken = breaker.try_acquire().await.unwrap().expect("free after the force-unlock");
    assert!(!guard.lock().is_lost(), "the holder is not told at once: the window is real");
    eventually(Duration::from_secs(10), "the holder told at a renewal", || async { guard.lock().is_lost() }).await;
    let window = broken.elapsed();
    let m = holder.metrics();
    assert_eq!((m.losses, m.failover_loss_report.count), (1, 0), "{m:?}");
    eprintln!("force-unlock window: {window:?} with a {lease:?} watchdog lease (renewed every {:?})", lease / 3);
    taken.release().await.unwrap();
}
