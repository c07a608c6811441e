//! Multi-locks over independent redis-servers (each test starts its own): Redlock
//! (majority) and MultiLock (all) — exclusion, progress with members down, loss,
//! validity, the documented unsafe case of a member restarted without
//! persistence (the test reproduces it, so it can see it), with its mitigation, and
//! the hand-off of every member to the next holder of the same multi-lock in a client.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Client, ErrorKind, HolderNotes, Lock, Quorum};
use redis::AsyncCommands;

/// One ferrolock client per server: a process's view of N masters.
async fn clients_for(urls: &[String], watchdog_ms: u64) -> Vec<Client> {
    let mut clients = Vec::new();
    for url in urls {
        clients.push(client(url, watchdog_ms).await);
    }
    clients
}

fn redlock(clients: &[Client], name: &str) -> Lock {
    Lock::multi(clients.iter().map(|c| c.lock(name).unwrap()).collect(), Quorum::Majority).unwrap()
}

fn servers(n: usize) -> Vec<RedisServer> {
    (0..n).map(|_| RedisServer::start()).collect()
}

async fn exists(server: &RedisServer, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query_async::<bool>(&mut server.raw().await).await.unwrap()
}

fn urls(servers: &[RedisServer]) -> Vec<String> {
    servers.iter().map(RedisServer::url).collect()
}

/// 4 processes' worth of clients x 100 non-atomic increments under one Redlock.
async fn count_under_redlock(sets: &[Vec<Client>], rounds: u64) -> u64 {
    let counter = Arc::new(Mutex::new(0u64));
    let mut tasks = Vec::new();
    for clients in sets {
        let (lock, counter) = (redlock(clients, "rl:count"), counter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(60))).await.unwrap().expect("acquired");
                let seen = *counter.lock().unwrap();
                tokio::task::yield_now().await;
                *counter.lock().unwrap() = seen + 1;
                guard.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let total = *counter.lock().unwrap();
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_over_five_masters_keeps_an_exact_count_even_with_one_down() {
    let mut masters = servers(5);
    let mut sets = Vec::new();
    for _ in 0..4 {
        sets.push(clients_for(&urls(&masters), 5_000).await);
    }
    let started = Instant::now();
    assert_eq!(count_under_redlock(&sets, 100).await, 400);
    eprintln!("4 x 100 under a redlock over 5 masters: {:?}", started.elapsed());
    masters[4].kill();
    let started = Instant::now();
    assert_eq!(count_under_redlock(&sets, 50).await, 200, "one master down: still exact, still progressing");
    eprintln!("4 x 50 with one master down: {:?}", started.elapsed());
    for server in &masters[..4] {
        assert!(!exists(server, "rl:count").await, "nothing left behind");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_down_fails_clearly_and_leaves_nothing_held() {
    let mut masters = servers(5);
    let clients = clients_for(&urls(&masters), 5_000).await;
    for server in &mut masters[2..] {
        server.kill();
    }
    let lock = redlock(&clients, "rl:down");
    let started = Instant::now();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err:?}");
    assert!(err.message().contains("3 member(s) failed") && err.message().contains("quorum"), "{}", err.message());
    assert!(started.elapsed() < Duration::from_secs(10));
    for server in &masters[..2] {
        assert!(!exists(server, "rl:down").await, "nothing held on a live master");
    }
    assert_eq!(lock.local_hold_count(), 0);
}

/// A master shut down while the Redlock is held: the release succeeds as soon as the
/// live majority released (not after the retry window the unreachable member spends
/// on its own release, which goes on in the background), and says nothing settles
/// that keeps anyone out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_with_a_master_down_succeeds_once_the_majority_released() {
    let mut masters = servers(3);
    let mut clients = Vec::new();
    for url in urls(&masters) {
        clients.push(builder(&url, 5_000).retry_window(Duration::from_secs(10)).connect().await.unwrap());
    }
    let lock = redlock(&clients, "rl:gone");
    let guard = lock.acquire().await.unwrap();
    masters[2].kill();
    let started = Instant::now();
    assert_eq!(guard.release().await.unwrap(), ferrolock::Released::Unlocked);
    let took = started.elapsed();
    // The member left retries for its retry window (10 s) before giving up.
    assert!(took < Duration::from_secs(5), "the release waited for the unreachable member: {took:?}");
    assert!(!lock.is_settling(), "the member still settling keeps nobody out of a Redlock");
    for server in &masters[..2] {
        assert!(!exists(server, "rl:gone").await, "released on the live masters");
    }
}

/// A member whose server stops answering while its connection stays up (a black-holed
/// link; a server killed but not yet noticed looks the same): the release answers once
/// the quorum released and the member's response timeout ran out, not after the retry
/// window the member then spends on its release, which lands once the link is back.
/// (A CI run of the test above on a busy machine took 9.7 s: the killed member's
/// connection was still up when the quorum had answered.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_with_a_silent_member_answers_after_its_response_timeout() {
    let masters = servers(3);
    let proxy = FaultProxy::start(masters[2].port).await;
    let mut member_urls = urls(&masters);
    member_urls[2] = proxy.url();
    let mut clients = Vec::new();
    for url in &member_urls {
        let builder = builder(url, 5_000).response_timeout(Duration::from_secs(1)).retry_window(Duration::from_secs(10));
        clients.push(builder.connect().await.unwrap());
    }
    let lock = redlock(&clients, "rl:silent");
    let guard = lock.acquire().await.unwrap();
    proxy.set_blackhole(true);
    let started = Instant::now();
    assert_eq!(guard.release().await.unwrap(), ferrolock::Released::Unlocked);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "the release waited for the silent member: {took:?}");
    for server in &masters[..2] {
        assert!(!exists(server, "rl:silent").await, "released on the answering masters");
    }
    proxy.set_blackhole(false);
    let deadline = Instant::now() + Duration::from_secs(20);
    while exists(&masters[2], "rl:silent").await {
        assert!(Instant::now() < deadline, "the silent member's release never landed once its link was back");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A holder with 3 of 5 keeps the others out; when it vanishes (its connections
/// black-holed, as after kill -9), another gets the lock once the lease ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_holder_blocks_others_until_its_lease_ends() {
    let masters = servers(5);
    let mut proxies = Vec::new();
    for server in &masters {
        proxies.push(FaultProxy::start(server.port).await);
    }
    let proxied: Vec<String> = proxies.iter().map(FaultProxy::url).collect();
    let holder = clients_for(&proxied, 1_500).await;
    let other = clients_for(&urls(&masters), 1_500).await;
    // The holder reaches only the first three.
    for proxy in &proxies[3..] {
        proxy.set_blackhole(true);
    }
    let lock = redlock(&holder, "rl:vanish");
    let guard = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(10))).await.unwrap().expect("3 of 5");
    let theirs = redlock(&other, "rl:vanish");
    assert!(theirs.try_acquire().await.unwrap().is_none(), "no majority for another while 3 are held");
    for proxy in &proxies {
        proxy.set_blackhole(true);
    }
    let vanished = Instant::now();
    let got = theirs.acquire_with(AcquireOptions::wait(Duration::from_secs(20))).await.unwrap().expect("after the lease");
    assert!(vanished.elapsed() >= Duration::from_millis(500), "not before the lease ran out: {:?}", vanished.elapsed());
    got.release().await.unwrap();
    std::mem::forget(guard); // its client can never release it
}

/// Deleting the lock on 3 of 5 masters while held: the holder is told within
/// about one renewal interval (lease / 3), with the members named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_quorum_is_reported_with_the_members() {
    let masters = servers(5);
    let clients = clients_for(&urls(&masters), 1_500).await;
    let lock = redlock(&clients, "rl:lost");
    let guard = lock.acquire().await.unwrap();
    assert_eq!(guard.token(), None, "fencing tokens do not compose across servers");
    let told = Arc::new(Mutex::new(None));
    let sink = told.clone();
    lock.set_on_lost(Some(Arc::new(move |event: &ferrolock::LostEvent| {
        *sink.lock().unwrap() = Some(event.error.clone());
    })));
    for server in &masters[..2] {
        let _: i64 = redis::cmd("DEL").arg("rl:lost").query_async(&mut server.raw().await).await.unwrap();
    }
    // Two gone: still a majority.
    for client in &clients {
        client.renew_held_locks().await.unwrap();
    }
    assert!(!guard.is_lost(), "3 of 5 still held");
    let _: i64 = redis::cmd("DEL").arg("rl:lost").query_async(&mut masters[2].raw().await).await.unwrap();
    let deleted = Instant::now();
    eventually(Duration::from_secs(3), "the holder told of the loss", || async { guard.is_lost() }).await;
    assert!(deleted.elapsed() < Duration::from_millis(1_500), "within about one renewal interval: {:?}", deleted.elapsed());
    let error = told.lock().unwrap().clone().expect("the callback ran");
    assert_eq!(error.kind(), ErrorKind::LockLost);
    assert!(error.message().contains("member 3"), "{}", error.message());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    for server in &masters {
        assert!(!exists(server, "rl:lost").await, "the members still held were released");
    }
}

/// Replies delayed so long that they come after the lease: no validity is left
/// (every member is tried at once, so it is one round-trip against the lease),
/// so the acquire reports "not acquired" and releases what it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquisition_slower_than_its_lease_is_not_a_hold() {
    let masters = servers(5);
    let mut proxies = Vec::new();
    for server in &masters {
        proxies.push(FaultProxy::start(server.port).await);
    }
    let proxied: Vec<String> = proxies.iter().map(FaultProxy::url).collect();
    let clients: Vec<Client> = {
        let mut v = Vec::new();
        for url in &proxied {
            // Connections made within their timeout over the slow link: it is the
            // acquire's answer that comes too late.
            let slow = builder(url, 5_000).response_timeout(Duration::from_secs(3)).connect_timeout(Duration::from_secs(3));
            v.push(slow.connect().await.unwrap());
        }
        v
    };
    let lease = Duration::from_millis(1_000);
    for proxy in &proxies {
        proxy.set_one_way_delay(Duration::from_millis(550)); // replies 1.1 x lease late
    }
    let lock = redlock(&clients, "rl:slow");
    let taken = lock.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(lease)).await.unwrap();
    assert!(taken.is_none(), "replies 1.1 x lease late leave no validity for a majority");
    for proxy in &proxies {
        proxy.set_one_way_delay(Duration::ZERO);
    }
    eventually(Duration::from_secs(10), "what it took released", || async {
        let mut held = false;
        for server in &masters {
            held |= exists(server, "rl:slow").await;
        }
        !held
    })
    .await;
    let held = lock.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(lease)).await.unwrap();
    assert!(held.is_some(), "without the delay the same acquire succeeds");
}

/// A holds members 1-3 (4 and 5 unreachable for it). Member 3 crashes and comes
/// back at once without persistence, and B takes 3-5: two holders at once — the
/// documented Redlock hazard, reproduced. Restarted only after the longest lease,
/// member 3's loss is known to A before B can use it: never two holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_restarted_without_persistence_double_grants_unless_restart_is_delayed() {
    let (double, _) = restart_trial(false).await;
    assert!(double, "an immediate restart without persistence lets B in while A still holds");
    let mut doubles = 0;
    for _ in 0..20 {
        let (double, _) = restart_trial(true).await;
        doubles += double as u32;
    }
    assert_eq!(doubles, 0, "with the restart delayed past the lease, never two holders");
}

/// One trial; returns (B acquired while A still believed it held, A was told).
async fn restart_trial(delay_restart: bool) -> (bool, bool) {
    const LEASE_MS: u64 = 600;
    let mut masters = servers(5);
    let mut proxies = Vec::new();
    for server in &masters {
        proxies.push(FaultProxy::start(server.port).await);
    }
    let a = clients_for(&proxies.iter().map(FaultProxy::url).collect::<Vec<_>>(), LEASE_MS).await;
    let b = clients_for(&urls(&masters), LEASE_MS).await;
    for proxy in &proxies[3..] {
        proxy.set_blackhole(true);
    }
    let a_lock = redlock(&a, "rl:restart");
    let a_guard = a_lock.acquire_with(AcquireOptions::wait(Duration::from_secs(5))).await.unwrap().expect("A holds 1-3");
    // A loses sight of member 3 as it crashes (its renewals there stay unanswered).
    proxies[2].set_blackhole(true);
    masters[2].kill();
    if delay_restart {
        // Down for longer than any lease: every hold it had has expired by itself.
        tokio::time::sleep(Duration::from_millis(LEASE_MS + 200)).await;
    }
    masters[2].restart();
    let b_lock = Lock::multi(vec![b[2].lock("rl:restart").unwrap(), b[3].lock("rl:restart").unwrap(), b[4].lock("rl:restart").unwrap(), b[0].lock("rl:restart").unwrap(), b[1].lock("rl:restart").unwrap()], Quorum::Majority).unwrap();
    let b_guard = b_lock.try_acquire().await.unwrap();
    let double = b_guard.is_some() && !a_guard.is_lost();
    if let Some(g) = b_guard {
        let _ = g.release().await;
    }
    let told = a_guard.is_lost();
    let _ = a_guard.release().await;
    (double, told)
}

/// MultiLock: every member or nothing; one member held elsewhere blocks it, and
/// releasing with a member not held reports NotOwner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multilock_needs_every_member() {
    let masters = servers(3);
    let clients = clients_for(&urls(&masters), 5_000).await;
    let others = clients_for(&urls(&masters), 5_000).await;
    let all = Lock::multi(clients.iter().map(|c| c.lock("ml:x").unwrap()).collect(), Quorum::All).unwrap();
    let blocker = others[1].lock("ml:x").unwrap().acquire().await.unwrap();
    assert!(all.try_acquire().await.unwrap().is_none(), "one member busy: not acquired");
    eventually(Duration::from_secs(5), "the member it took released", || async { !exists(&masters[0], "ml:x").await }).await;
    let waiter = tokio::spawn({
        let all = all.clone();
        async move { all.acquire_with(AcquireOptions::wait(Duration::from_secs(10))).await.map(|g| g.map(|g| g.into_hold())) }
    });
    blocker.release().await.unwrap();
    let hold = waiter.await.unwrap().unwrap().expect("acquired once the member was free");
    assert_eq!(hold.hold_count(), 1);
    // Re-entrant: members re-enter.
    let again = all.acquire().await.unwrap();
    assert_eq!(all.local_hold_count(), 2);
    again.release().await.unwrap();
    // A member freed behind its back: the release says NotOwner.
    let _: i64 = redis::cmd("DEL").arg("ml:x").query_async(&mut masters[2].raw().await).await.unwrap();
    let err = all.release().await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotOwner | ErrorKind::LockLost), "{err:?}");
    for server in &masters {
        assert!(!exists(server, "ml:x").await);
    }
    assert!(Lock::multi(vec![], Quorum::All).is_err());
    let twice = Lock::multi(vec![clients[0].lock("d").unwrap(), clients[0].lock("d").unwrap()], Quorum::All);
    assert_eq!(twice.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

/// A Redlock over 3 masters held, then the client of member `first` shut down:
/// 2 of 3 still held.
async fn held_then_one_client_shut_down(name: &str, first: usize) -> (Vec<RedisServer>, Vec<Client>, ferrolock::Guard) {
    let masters = servers(3);
    let clients = clients_for(&urls(&masters), 5_000).await;
    let guard = redlock(&clients, name).acquire().await.unwrap();
    clients[first].shutdown().await.unwrap();
    assert!(!guard.is_lost(), "2 of 3 still held");
    (masters, clients, guard)
}

/// A member's client shutting down releases that member behind the multi-lock's
/// back: it counts as no longer held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_client_shutting_down_counts_against_the_quorum() {
    let (masters, clients, guard) = held_then_one_client_shut_down("rl:closed", 0).await;
    let _: i64 = redis::cmd("DEL").arg("rl:closed").query_async(&mut masters[1].raw().await).await.unwrap();
    clients[1].renew_held_locks().await.unwrap();
    eventually(Duration::from_secs(5), "the loss told", || async { guard.is_lost() }).await;
    let error = guard.lock().lost_error().unwrap();
    assert!(error.message().contains("client shut down"), "{}", error.message());
}

/// Nothing waits per hold of a multi-lock: many holds leave no tasks behind,
/// and a loss in a later hold is still told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losses_are_watched_across_holds_with_no_task_per_hold() {
    let masters = servers(3);
    let clients = clients_for(&urls(&masters), 1_500).await;
    let lock = redlock(&clients, "rl:watched");
    let told = Arc::new(Mutex::new(0));
    let sink = told.clone();
    lock.set_on_lost(Some(Arc::new(move |_: &ferrolock::LostEvent| *sink.lock().unwrap() += 1)));
    lock.acquire().await.unwrap().release().await.unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks = metrics.num_alive_tasks();
    for _ in 0..200 {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    let grown = metrics.num_alive_tasks().saturating_sub(tasks);
    assert!(grown < 50, "{grown} more tasks alive after 200 holds");
    let guard = lock.acquire().await.unwrap();
    for server in &masters[..2] {
        let _: i64 = redis::cmd("DEL").arg("rl:watched").query_async(&mut server.raw().await).await.unwrap();
    }
    for client in &clients {
        client.renew_held_locks().await.unwrap();
    }
    eventually(Duration::from_secs(5), "the loss told", || async { guard.is_lost() }).await;
    let error = guard.lock().lost_error().unwrap();
    assert!(error.message().contains("member 1"), "{}", error.message());
    eventually(Duration::from_secs(5), "the callback told once", || async { *told.lock().unwrap() == 1 }).await;
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    // The next hold is a new one, not lost.
    let again = lock.acquire().await.unwrap();
    assert!(!again.is_lost());
    again.release().await.unwrap();
    assert_eq!(*told.lock().unwrap(), 1, "told once");
}

/// Members' clients shutting down are told without any renewal or loss of a member:
/// two of three gone loses the hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn most_member_clients_shutting_down_lose_the_hold() {
    let (_masters, clients, guard) = held_then_one_client_shut_down("rl:closing", 2).await;
    clients[0].shutdown().await.unwrap();
    eventually(Duration::from_secs(5), "the loss told", || async { guard.is_lost() }).await;
    let error = guard.lock().lost_error().unwrap();
    assert!(error.message().contains("member 1") && error.message().contains("member 3"), "{}", error.message());
}

/// Clients without holder notes: a test that counts script calls must not see a
/// note written because the machine was slow.
async fn quiet_clients(urls: &[String]) -> Vec<Client> {
    let mut clients = Vec::new();
    for url in urls {
        clients.push(builder(url, 10_000).holder_notes(HolderNotes::Off).connect().await.unwrap());
    }
    clients
}

async fn raws(masters: &[RedisServer]) -> Vec<redis::aio::MultiplexedConnection> {
    let mut raws = Vec::new();
    for server in masters {
        raws.push(server.raw().await);
    }
    raws
}

/// Spawns `lock.acquire_with(options)` and returns once it waits on the first
/// member (parked in the client of that member, `first`).
async fn spawn_waiting(first: &Client, lock: &Lock, options: AcquireOptions) -> tokio::task::JoinHandle<ferrolock::Result<ferrolock::Hold>> {
    let parked = first.waiting_acquires();
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire_with(options).await.map(|g| g.expect("acquired within its wait").into_hold()) }
    });
    eventually(Duration::from_secs(5), "the acquire waits on the first member", || async { first.waiting_acquires() == parked + 1 }).await;
    waiting
}

/// A Redlock's release gives every member to the next holder of the same Redlock
/// in its client: one release script per member and nothing else (the next holder
/// sends no try of its own), no message, each member's field that holder's, with its
/// own lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_every_member_to_the_next_holder_of_the_same_redlock() {
    let masters = servers(3);
    let mut raws = raws(&masters).await;
    let clients = quiet_clients(&urls(&masters)).await;
    let (a, b) = (redlock(&clients, "rl:handed"), redlock(&clients, "rl:handed"));
    // Scripts loaded first: the first call of a script counts twice (NOSCRIPT, then the call).
    a.acquire().await.unwrap().release().await.unwrap();
    // Explicit leases: no renewal lands among the counted calls. A long wait: its
    // share per member (a third) outlasts a slow machine.
    let lease = AcquireOptions { wait: Some(Duration::from_secs(30)), lease: Some(Duration::from_secs(10)) };
    let held = a.acquire_with(lease).await.unwrap().expect("free");
    let waiting = spawn_waiting(&clients[0], &b, lease).await;
    let mut before = Vec::new();
    for raw in &mut raws {
        before.push((script_calls(raw).await, command_calls(raw, &["publish"]).await));
    }

    held.release().await.unwrap();
    let hold = waiting.await.unwrap().unwrap();

    for (i, raw) in raws.iter_mut().enumerate() {
        let owner = b.members()[i].owner().to_string();
        let fields: HashMap<String, i64> = raw.hgetall("rl:handed").await.unwrap();
        assert_eq!(fields, HashMap::from([(owner, 1)]), "member {i} handed to the next holder");
        let pttl: i64 = raw.pttl("rl:handed").await.unwrap();
        assert!(pttl > 8_000 && pttl <= 10_000, "member {i}: the next holder's own lease, PTTL {pttl}");
        assert_eq!(command_calls(raw, &["publish"]).await, before[i].1, "member {i} never went free: nothing published");
        if i > 0 {
            // Member 0 may also see a late message of the warm-up wake its waiter for a try.
            assert_eq!(script_calls(raw).await - before[i].0, 1, "member {i}: the release script alone, no try of the next holder");
        }
    }
    assert!(!hold.is_lost());
    assert_eq!((b.local_hold_count(), a.local_hold_count()), (1, 0));
    assert!(b.members().iter().all(|m| m.local_hold_count() == 1));
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::NotOwner);
    b.release().await.unwrap();
    for server in &masters {
        assert!(!exists(server, "rl:handed").await);
    }
}

/// A member the releaser has lost is not handed: the next holder gets the others
/// (a majority), and nothing of the lost one, which another client holds now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_member_is_not_handed_over() {
    let masters = servers(3);
    let mut raws = raws(&masters).await;
    let clients = quiet_clients(&urls(&masters)).await;
    let (a, b) = (redlock(&clients, "rl:part"), redlock(&clients, "rl:part"));
    let held = a.acquire().await.unwrap();
    let _: i64 = raws[2].del("rl:part").await.unwrap();
    clients[2].renew_held_locks().await.unwrap();
    assert!(a.members()[2].is_lost() && !held.is_lost(), "member 3 lost, 2 of 3 still held");
    let other = client(&masters[2].url(), 10_000).await;
    let theirs = other.lock("rl:part").unwrap().acquire().await.unwrap();
    let waiting = spawn_waiting(&clients[0], &b, AcquireOptions::wait(Duration::from_secs(30))).await;
    let tried = script_calls(&mut raws[1]).await;

    held.release().await.unwrap();
    let hold = waiting.await.unwrap().unwrap();

    assert!(!hold.is_lost(), "2 of 3 handed");
    assert_eq!(script_calls(&mut raws[1]).await - tried, 1, "member 2 handed by the release script alone");
    for i in 0..2 {
        let fields: HashMap<String, i64> = raws[i].hgetall("rl:part").await.unwrap();
        assert_eq!(fields, HashMap::from([(b.members()[i].owner().to_string(), 1)]), "member {i}");
    }
    let fields: HashMap<String, i64> = raws[2].hgetall("rl:part").await.unwrap();
    assert_eq!(fields, HashMap::from([(theirs.lock().owner().to_string(), 1)]), "the lost member is the other client's");
    let (third, handed) = (&b.members()[2], b.members()[1].local_hold_count());
    assert_eq!((third.local_hold_count(), third.is_lost(), handed), (0, false, 1), "nothing of the lost member given to the next holder");
    b.release().await.unwrap();
    theirs.release().await.unwrap();
}

/// Holders of one client handing a Redlock round among themselves still let
/// another client in (each member's streak, as for a single lock), keep the count
/// exact, and most releases hand over (few publish, on every member).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_clients_get_in_between_streaks_of_redlock_hand_offs() {
    let masters = servers(3);
    let mut raws = raws(&masters).await;
    let ours = clients_for(&urls(&masters), 10_000).await;
    let theirs = clients_for(&urls(&masters), 10_000).await;
    let (sections, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let counter = Arc::new(Mutex::new(0u64));
    let publishes = command_calls(&mut raws[1], &["publish"]).await;
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (lock, sections, stop, counter) = (redlock(&ours, "rl:streak"), sections.clone(), stop.clone(), counter.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Acquire) {
                    let guard = lock.acquire().await.unwrap();
                    let seen = *counter.lock().unwrap();
                    tokio::task::yield_now().await;
                    *counter.lock().unwrap() = seen + 1;
                    sections.fetch_add(1, Ordering::AcqRel);
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    eventually(Duration::from_secs(20), "our holders took turns", || async { sections.load(Ordering::Acquire) >= 100 }).await;
    let (done, published) = (sections.load(Ordering::Acquire), command_calls(&mut raws[1], &["publish"]).await - publishes);
    eprintln!("member 2: {published} messages for {done} sections");
    assert!(published * 3 < done, "most releases of member 2 handed over: {published} messages for {done} sections");
    let other = redlock(&theirs, "rl:streak");
    let got = other.acquire_with(AcquireOptions::wait(Duration::from_secs(10))).await.unwrap();
    assert!(got.is_some(), "another client got in between streaks");
    let seen = *counter.lock().unwrap();
    *counter.lock().unwrap() = seen + 1;
    got.unwrap().release().await.unwrap();
    stop.store(true, Ordering::Release);
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(*counter.lock().unwrap(), sections.load(Ordering::Acquire) + 1, "never two holders");
}

/// A waiter of the same Redlock that goes away while a release hands it every
/// member (aborted at the same moment, many times over) leaves nothing held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_aborted_during_a_redlock_hand_off_leaves_nothing_held() {
    let masters = servers(3);
    let clients = quiet_clients(&urls(&masters)).await;
    let (a, b) = (redlock(&clients, "rl:abort"), redlock(&clients, "rl:abort"));
    let (mut handed, mut aborted) = (0, 0);
    for _ in 0..20 {
        let held = a.acquire().await.unwrap();
        let waiting = spawn_waiting(&clients[0], &b, AcquireOptions::wait(Duration::from_secs(30))).await;
        let (released, ()) = tokio::join!(held.release(), async { waiting.abort() });
        released.unwrap();
        match waiting.await {
            Ok(hold) => {
                assert!(!hold.unwrap().is_lost());
                b.release().await.unwrap();
                handed += 1;
            }
            Err(e) => {
                assert!(e.is_cancelled());
                aborted += 1;
            }
        }
        eventually(Duration::from_secs(5), "nothing held by the waiter that went away", || async {
            b.members().iter().all(|m| m.local_hold_count() == 0 && !m.is_settling())
        })
        .await;
        for server in &masters {
            eventually(Duration::from_secs(5), "no member left on a server", || async { !exists(server, "rl:abort").await }).await;
        }
    }
    eprintln!("{handed} handed before the abort, {aborted} aborted");
}
