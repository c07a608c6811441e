//! Leader election: campaigns wait on pub/sub and lead with strictly increasing
//! terms, `leader()` answers right after a campaign, observers hear every change in
//! order without polling, a lost leadership is told before another candidate leads,
//! and the election's lock excludes (and is excluded by) a plain lock of the name.
//! Against real redis-servers.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Election, ErrorKind, Leader};

/// Waits until `observer` tells a change that satisfies `wanted`, returning every
/// change told up to and including it (10 s at most).
async fn changes_until(observer: &mut ferrolock::Observer, wanted: impl Fn(&Option<Leader>) -> bool) -> Vec<Option<Leader>> {
    let mut seen = Vec::new();
    loop {
        let change = tokio::time::timeout(Duration::from_secs(10), observer.next()).await.expect("a change within 10 s").unwrap();
        let done = wanted(&change);
        seen.push(change);
        if done {
            return seen;
        }
    }
}

fn terms(changes: &[Option<Leader>]) -> Vec<Option<u64>> {
    changes.iter().map(|c| c.as_ref().map(|l| l.term)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_take_turns_with_growing_terms_and_leader_answers_at_once() {
    let server = RedisServer::start();
    let clients = [
        builder(&server.url(), 5000).app_name("svc-a").connect().await.unwrap(),
        client(&server.url(), 5000).await,
        client(&server.url(), 5000).await,
    ];
    let candidates: Vec<Election> = clients.iter().map(|c| c.election("scheduler").unwrap()).collect();
    candidates[0].set_label(Some("replica-0")).unwrap();
    assert!(candidates[0].leader().await.unwrap().is_none(), "nobody leads yet");

    let first = candidates[0].campaign().await.unwrap();
    assert_eq!(candidates[0].term(), Some(first.term()));
    // The note is written by the campaign itself: leader() knows at once (the
    // client's notes mode would write it only after a second).
    let leader = candidates[1].leader().await.unwrap().expect("a leader");
    assert_eq!(leader.term, first.term());
    assert_eq!(leader.holder.owner, candidates[0].lock().owner());
    let note = leader.holder.note.clone().expect("written by the campaign");
    assert_eq!((note.app.as_deref(), note.thread.as_deref()), (Some("svc-a"), Some("replica-0")));
    assert_eq!(note.pid, Some(u64::from(std::process::id())));
    assert!(leader.lease_left.is_some_and(|l| l <= Duration::from_secs(5)), "{leader:?}");
    assert!(leader.describe().starts_with(&format!("term {}: svc-a", first.term())), "{}", leader.describe());

    // The others wait (a try says no at once); each resignation hands over at once.
    assert!(candidates[1].campaign_with(Some(Duration::ZERO)).await.unwrap().is_none());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for (i, candidate) in candidates.iter().enumerate().skip(1) {
        let (candidate, tx) = (candidate.clone(), tx.clone());
        tokio::spawn(async move {
            let hold = candidate.campaign_hold(None).await.unwrap().unwrap();
            let _ = tx.send((i, hold.token().unwrap(), Instant::now()));
        });
    }
    eventually(Duration::from_secs(5), "both others subscribed", || {
        let clients = clients.clone();
        async move { clients[1].waiting_acquires() == 1 && clients[2].waiting_acquires() == 1 }
    })
    .await;
    let mut terms_won = vec![first.term()];
    let mut resigned_at = Instant::now();
    assert!(first.resign().await.unwrap());
    for _ in 0..2 {
        // Woken by the release's message, not by the lease's end (5 s).
        let (i, term, at) = tokio::time::timeout(Duration::from_secs(3), rx.recv()).await.expect("a new leader").unwrap();
        assert!(at - resigned_at < Duration::from_secs(2), "took {:?}", at - resigned_at);
        assert_eq!(candidates[i].term(), Some(term));
        terms_won.push(term);
        resigned_at = Instant::now();
        assert!(candidates[i].resign().await.unwrap());
    }
    assert!(terms_won.windows(2).all(|w| w[0] < w[1]), "terms grow: {terms_won:?}");
    for c in &candidates {
        c.resign().await.unwrap();
    }
    assert!(candidates[0].leader().await.unwrap().is_none());
    assert!(!candidates[0].resign().await.unwrap(), "resigning without leading changes nothing");
    for c in &clients {
        c.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_lock_of_the_name_excludes_candidates_and_is_excluded_by_a_leader() {
    let server = RedisServer::start();
    let client = client(&server.url(), 5000).await;
    let plain = client.lock("jobs").unwrap();
    let candidate = client.election("jobs").unwrap();

    plain.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    assert!(candidate.campaign_with(Some(Duration::from_millis(100))).await.unwrap().is_none());
    // The plain holder shows as the leader, with the latest term (it took none).
    let seen = candidate.leader().await.unwrap().unwrap();
    assert_eq!((seen.holder.owner.as_str(), seen.term), (plain.owner(), 0));
    plain.release().await.unwrap();

    let leading = candidate.campaign().await.unwrap();
    assert!(plain.try_acquire().await.unwrap().is_none(), "the leader's lock excludes the plain lock");
    drop(leading); // resigns in the background
    eventually(Duration::from_secs(5), "the dropped leadership resigned", || {
        let plain = plain.clone();
        async move { !plain.is_locked().await.unwrap() }
    })
    .await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_campaign_at_a_time_and_none_while_leading() {
    let server = RedisServer::start();
    let client = client(&server.url(), 5000).await;
    let candidate = client.election("single").unwrap();
    let other = client.election("single").unwrap();
    let led = other.campaign().await.unwrap();
    let waiting = {
        let candidate = candidate.clone();
        tokio::spawn(async move { candidate.campaign().await })
    };
    eventually(Duration::from_secs(5), "the campaign waits", || async { client.waiting_acquires() == 1 }).await;
    let again = candidate.campaign_with(Some(Duration::ZERO)).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::InvalidArgument, "{again}");
    assert!(again.message().contains("already under way"), "{again}");
    led.resign().await.unwrap();
    let mine = waiting.await.unwrap().unwrap();
    let twice = candidate.campaign().await.unwrap_err();
    assert_eq!(twice.kind(), ErrorKind::InvalidArgument);
    assert!(twice.message().contains(&format!("already leads election \"single\" (term {})", mine.term())), "{twice}");
    mine.resign().await.unwrap();
    // A close ends a leadership and ends a waiting campaign.
    let mine = candidate.campaign().await.unwrap();
    let waiting = {
        let other = other.clone();
        tokio::spawn(async move { other.campaign().await })
    };
    eventually(Duration::from_secs(5), "the campaign waits", || async { client.waiting_acquires() == 1 }).await;
    client.shutdown().await.unwrap();
    assert_eq!(waiting.await.unwrap().unwrap_err().kind(), ErrorKind::ClientClosed);
    assert!(!mine.resign().await.unwrap_or(false));
    let mut raw = server.raw().await;
    assert!(keys(&mut raw).await.iter().all(|k| !k.starts_with("single") && !k.starts_with("ferrolock_holder_info")), "{:?}", keys(&mut raw).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_hears_every_leader_in_order_resignations_and_expiries_alike() {
    let server = RedisServer::start();
    let watcher = client(&server.url(), 5000).await;
    let mut observer = watcher.election("ring").unwrap().observe().await.unwrap();
    assert_eq!(terms(&[observer.next().await.unwrap()]), [None], "nobody leads at first");

    // Three candidates lead in turn; each resigns as soon as it leads, so terms
    // are short (shorter than an observer's read of the lock): every one is told.
    let clients = [client(&server.url(), 5000).await, client(&server.url(), 5000).await, client(&server.url(), 5000).await];
    let mut won = Vec::new();
    for round in 0..12 {
        let candidate = clients[round % 3].election("ring").unwrap();
        let led = candidate.campaign().await.unwrap();
        won.push(led.term());
        led.resign().await.unwrap();
    }
    let last = *won.last().unwrap();
    let told = changes_until(&mut observer, |c| c.as_ref().is_some_and(|l| l.term == last)).await;
    let leaders: Vec<u64> = told.iter().flatten().map(|l| l.term).collect();
    assert_eq!(leaders, won, "every leader, in order: {:?}", terms(&told));

    // A leader cut off from Redis: it learns of its loss before the next leads, and
    // the observer reads the lock at the lease's end (an expiry publishes nothing).
    let proxy = FaultProxy::start(server.port).await;
    let cut = client(&proxy.url(), 600).await;
    let doomed = cut.election("ring").unwrap();
    let led = doomed.campaign().await.unwrap();
    let lost_at = Arc::new(Mutex::new(None));
    {
        let lost_at = lost_at.clone();
        doomed.set_on_lost(Some(Arc::new(move |_| *lost_at.lock().unwrap() = Some(Instant::now()))));
    }
    let next = clients[0].election("ring").unwrap();
    let waiting = tokio::spawn(async move {
        let led = next.campaign().await.unwrap();
        (Instant::now(), led)
    });
    let told = changes_until(&mut observer, |c| c.as_ref().is_some_and(|l| l.term == led.term())).await;
    assert_eq!(terms(&told).last(), Some(&Some(led.term())));
    proxy.set_blackhole(true);
    let (next_at, next_led) = waiting.await.unwrap();
    let lost = lost_at.lock().unwrap().expect("the cut-off leader was told of its loss");
    assert!(lost < next_at, "loss told {:?} after the next leader began", lost - next_at);
    assert!(led.is_lost());
    let told = changes_until(&mut observer, |c| c.as_ref().is_some_and(|l| l.term == next_led.term())).await;
    // The vacancy (if the observer read the lock before the next campaign took it),
    // then the next leader.
    let expected = [&[Some(next_led.term())][..], &[None, Some(next_led.term())]];
    assert!(expected.contains(&&terms(&told)[..]), "{:?}", terms(&told));
    assert!(next_led.term() > led.term());
    proxy.set_blackhole(false);
    next_led.resign().await.unwrap();
    cut.shutdown().await.unwrap();
    for c in &clients {
        c.shutdown().await.unwrap();
    }
    // Closing the client ends the observer.
    watcher.shutdown().await.unwrap();
    assert_eq!(observer.next().await.unwrap_err().kind(), ErrorKind::ClientClosed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_observer_sends_nothing_and_reads_once_per_lease_while_someone_leads() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let watcher = client(&server.url(), 5000).await;
    let mut observer = watcher.election("quiet").unwrap().observe().await.unwrap();
    assert!(observer.next().await.unwrap().is_none());
    // Nobody leads: nothing but the subscriber's liveness PING (every response
    // timeout, 500 ms here, as for any waiting acquire) for 1.5 s.
    let idle = ["ping", "info"];
    let everything = |info: String| -> u64 {
        info.lines()
            .filter(|l| l.starts_with("cmdstat_") && !idle.iter().any(|c| l.starts_with(&format!("cmdstat_{c}:"))))
            .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
            .sum()
    };
    let stats = |raw: &mut redis::aio::MultiplexedConnection| {
        let mut raw = raw.clone();
        async move { redis::cmd("INFO").arg("commandstats").query_async::<String>(&mut raw).await.unwrap() }
    };
    let before = everything(stats(&mut raw).await);
    let next = tokio::time::timeout(Duration::from_millis(1500), observer.next()).await;
    assert!(next.is_err(), "no change: {next:?}");
    assert_eq!(everything(stats(&mut raw).await) - before, 0, "an idle observer sent commands while nobody leads");

    // A leader (lease 600 ms, renewed every 200 ms): the observer reads the lock at
    // each lease end it knows of, i.e. about once per 400-600 ms; a poll would not be
    // bounded by the lease. HGETALL runs only in the observer's read (scripts/election/leader.lua).
    let leader_client = client(&server.url(), 600).await;
    let led = leader_client.election("quiet").unwrap().campaign().await.unwrap();
    assert_eq!(observer.next().await.unwrap().map(|l| l.term), Some(led.term()));
    let reads_before = command_calls(&mut raw, &["hgetall"]).await;
    let window = Duration::from_secs(3);
    let next = tokio::time::timeout(window, observer.next()).await;
    assert!(next.is_err(), "no change while the leader renews: {next:?}");
    let reads = command_calls(&mut raw, &["hgetall"]).await - reads_before;
    let bound = (window.as_millis() / 400 + 2) as u64;
    assert!((1..=bound).contains(&reads), "{reads} reads in {window:?} (at most {bound}: one per lease end)");
    led.resign().await.unwrap();
    assert!(observer.next().await.unwrap().is_none(), "the resignation is told");
    leader_client.shutdown().await.unwrap();
    watcher.shutdown().await.unwrap();
}

/// What the bindings run on their runtimes must be `Send`.
#[allow(dead_code)]
fn calls_are_send(election: Election, mut observer: ferrolock::Observer) {
    fn send<T: Send>(_: T) {}
    send(async move {
        let _ = election.campaign_hold(None).await;
        let _ = election.observe().await;
        let _ = election.leader().await;
        let _ = election.resign().await;
        let _ = observer.next().await;
    });
}
