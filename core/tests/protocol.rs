//! Wire protocol, reentrancy, ownership, fencing and input errors, seen from a
//! raw connection to a real redis-server.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use ferrolock::{AcquireOptions, ErrorKind, LockOptions, Released};
use redis::AsyncCommands;

#[tokio::test]
async fn layout_matches_redisson() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    for name in ["orders:42", "{tag}orders"] {
        let lock = client.lock(name).unwrap();
        let guard = lock.acquire().await.unwrap();
        let fields: HashMap<String, i64> = raw.hgetall(name).await.unwrap();
        assert_eq!(fields, HashMap::from([(lock.owner().to_string(), 1)]));
        assert!(lock.owner().starts_with(&format!("{}:", client.id())));
        let pttl: i64 = raw.pttl(name).await.unwrap();
        assert!(pttl > 2000 && pttl <= 3000, "watchdog lease is the PTTL, got {pttl}");

        // A waiter subscribes to Redisson's channel for this name.
        let channel = if name.contains('{') {
            format!("redisson_lock__channel:{name}")
        } else {
            format!("redisson_lock__channel:{{{name}}}")
        };
        let waiter_lock = client.lock(name).unwrap();
        let waiting = tokio::spawn(async move { waiter_lock.acquire().await.map(|g| (waiter_lock.clone(), g.into_hold())) });
        eventually(Duration::from_secs(5), "waiter subscribed", || {
            let mut raw = raw.clone();
            let channel = channel.clone();
            async move { numsub(&mut raw, &channel).await == 1 }
        })
        .await;
        let channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").query_async(&mut raw).await.unwrap();
        assert_eq!(channels, vec![channel.clone()]);
        guard.release().await.unwrap();
        // The waiter's handle still holds it.
        let (_waiter_lock, _hold) = waiting.await.unwrap().unwrap();
        let other = client.lock(name).unwrap();
        assert!(other.is_locked().await.unwrap());
        other.force_unlock().await.unwrap();
        eventually(Duration::from_secs(5), "channel unsubscribed", || {
            let mut raw = raw.clone();
            let channel = channel.clone();
            async move { numsub(&mut raw, &channel).await == 0 }
        })
        .await;
    }
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn reentrancy_to_depth_ten_and_one_release_too_many() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("reentrant").unwrap();
    let mut holds = Vec::new();
    for depth in 1..=10u32 {
        let hold = lock.acquire_hold(AcquireOptions::wait(Duration::ZERO)).await.unwrap().expect("re-entry never waits");
        assert_eq!(hold.hold_count(), depth);
        holds.push(hold);
    }
    let count: i64 = raw.hget("reentrant", lock.owner()).await.unwrap();
    assert_eq!(count, 10);
    assert_eq!(lock.hold_count().await.unwrap(), 10);
    for left in (1..10u32).rev() {
        assert_eq!(lock.release().await.unwrap(), Released::StillHeld(left));
    }
    assert_eq!(lock.release().await.unwrap(), Released::Unlocked);
    assert!(!lock.is_locked().await.unwrap());
    let err = lock.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwner);
    assert!(err.message().contains("reentrant"), "message names the lock: {err}");
    assert!(!holds[0].is_lost());
    // Clones of a handle are the same holder.
    let guard = lock.acquire().await.unwrap();
    let clone = lock.clone();
    assert_eq!(clone.try_acquire().await.unwrap().unwrap().into_hold().hold_count(), 2);
    clone.release().await.unwrap();
    guard.release().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn other_holders_cannot_release_or_enter() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    let mine = a.lock("shared").unwrap();
    let _guard = mine.acquire().await.unwrap();
    for other in [a.lock("shared").unwrap(), b.lock("shared").unwrap()] {
        assert!(other.try_acquire().await.unwrap().is_none());
        assert_eq!(other.release().await.unwrap_err().kind(), ErrorKind::NotOwner);
        assert!(other.is_locked().await.unwrap());
        assert!(!other.is_held().await.unwrap());
    }
    let fields: HashMap<String, i64> = raw.hgetall("shared").await.unwrap();
    assert_eq!(fields, HashMap::from([(mine.owner().to_string(), 1)]), "no side effect");
    // An explicit owner field of another client's handle makes it the same holder (hand-over):
    // it may release a level without shortening the lease it does not know.
    mine.try_acquire().await.unwrap().unwrap().into_hold();
    let same = b.lock_with("shared", LockOptions { owner: Some(mine.owner().to_string()), ..Default::default() }).unwrap();
    assert!(same.is_held().await.unwrap());
    assert_eq!(same.release().await.unwrap(), Released::StillHeld(0));
    let pttl: i64 = raw.pttl("shared").await.unwrap();
    assert!(pttl > 2000, "lease kept: {pttl}");
    assert_eq!(mine.hold_count().await.unwrap(), 1);
    // Force unlock from anyone frees it, and the holder is told.
    assert!(b.lock("shared").unwrap().force_unlock().await.unwrap());
    assert!(!b.lock("shared").unwrap().force_unlock().await.unwrap());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// A release a failover lost after it was answered leaves the holder's field on the
/// new master (written back here, as the failover harness saw it). The holder's next
/// acquire must take one level, not adopt the leftover too: adopted, the caller's
/// release left the lock held and renewed by a holder whose caller believed it free
/// (the harness saw a holder end with 137 levels and a fencing token given twice).
#[tokio::test]
async fn an_acquire_does_not_adopt_levels_a_lost_release_left() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let count = |raw: &mut redis::aio::MultiplexedConnection, name: &'static str, owner: String| {
        let mut raw = raw.clone();
        async move { raw.hget::<_, _, Option<i64>>(name, owner).await.unwrap() }
    };
    for (name, fenced) in [("leftover", false), ("leftover:fenced", true)] {
        let lock = if fenced { client.fenced_lock(name) } else { client.lock(name) }.unwrap();
        let owner = lock.owner().to_string();
        let first = lock.acquire().await.unwrap();
        let first_token = first.token();
        assert_eq!(first.release().await.unwrap(), Released::Unlocked);
        let _: () = redis::pipe().hset(name, &owner, 1).pexpire(name, 3000).query_async(&mut raw).await.unwrap();

        // A fresh acquire: one level here, and the leftover released on the server.
        let second = lock.acquire().await.unwrap();
        assert_eq!(lock.local_hold_count(), 1, "{name}");
        assert_eq!(count(&mut raw, name, owner.clone()).await, Some(1), "{name}: the leftover level is released");
        assert!(!fenced || second.token() > first_token, "{name}: a new token");
        assert_eq!(second.release().await.unwrap(), Released::Unlocked, "{name}");
        assert!(!raw.exists::<_, bool>(name).await.unwrap(), "{name}: free after the caller's one release");

        // Re-entered: the inner release's write is lost, the next re-entry takes one level.
        let outer = lock.acquire().await.unwrap().into_hold();
        lock.acquire().await.unwrap().release().await.unwrap();
        let _: () = raw.hincr(name, &owner, 1).await.unwrap();
        let inner = lock.acquire().await.unwrap();
        assert_eq!(lock.local_hold_count(), 2, "{name}");
        assert_eq!(count(&mut raw, name, owner.clone()).await, Some(2), "{name}");
        assert_eq!(inner.release().await.unwrap(), Released::StillHeld(1));
        drop(outer);
        assert_eq!(lock.release().await.unwrap(), Released::Unlocked, "{name}");
        assert!(!raw.exists::<_, bool>(name).await.unwrap(), "{name}");

        // A level the holder does not count appears while it holds (nothing can release
        // it): the caller's last release ends the hold here, and nothing renews the rest.
        let held = lock.acquire().await.unwrap();
        let _: () = raw.hincr(name, &owner, 1).await.unwrap();
        assert_eq!(held.release().await.unwrap(), Released::StillHeld(0), "{name}");
        assert_eq!(lock.local_hold_count(), 0, "{name}");
        assert_eq!(client.held_count(), 0, "{name}: no longer kept or renewed");
        assert_eq!(count(&mut raw, name, owner.clone()).await, Some(1), "{name}");
        let pttl: i64 = raw.pttl(name).await.unwrap();
        assert!(pttl > 0 && pttl <= 3000, "{name}: it expires with its lease: {pttl}");
        let _: () = raw.del(name).await.unwrap();
    }

    // A field of another client's (an explicit owner: a hand-over) keeps the levels
    // that client took: they are adopted, not released.
    let other = common::client(&server.url(), 3000).await;
    let theirs = other.lock("handed").unwrap();
    let _kept = theirs.acquire().await.unwrap().into_hold();
    let same = client.lock_with("handed", LockOptions { owner: Some(theirs.owner().to_string()), ..Default::default() }).unwrap();
    same.acquire().await.unwrap().into_hold();
    assert_eq!(same.local_hold_count(), 2);
    assert_eq!(count(&mut raw, "handed", theirs.owner().to_string()).await, Some(2));
    same.release_all().await.unwrap();
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn remaining_lease_and_explicit_lease() {
    let server = RedisServer::start();
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("leased").unwrap();
    assert_eq!(lock.remaining_lease().await.unwrap(), None);
    let guard = lock.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_secs(60))).await.unwrap().unwrap();
    let left = lock.remaining_lease().await.unwrap().unwrap();
    assert!(left > Duration::from_secs(59) && left <= Duration::from_secs(60), "{left:?}");
    guard.release().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn fencing_tokens_strictly_increase_across_holders() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    let mut last = 0;
    for i in 0..20 {
        let c = if i % 2 == 0 { &a } else { &b };
        let lock = c.fenced_lock("fenced").unwrap();
        let guard = lock.acquire().await.unwrap();
        let token = guard.token().unwrap();
        assert!(token > last, "token {token} after {last}");
        assert_eq!(lock.token(), Some(token));
        // A re-entry yields its own, newer token.
        let again = lock.try_acquire().await.unwrap().unwrap().into_hold();
        assert!(again.token().unwrap() > token);
        last = again.token().unwrap();
        lock.release().await.unwrap();
        guard.release().await.unwrap();
    }
    let counter: u64 = raw.get("redisson_lock_token:{fenced}").await.unwrap();
    assert_eq!(counter, last);
    // Plain locks have no token.
    let plain = a.lock("plain").unwrap().acquire().await.unwrap();
    assert_eq!(plain.token(), None);
    plain.release().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_invalid_argument() {
    let server = RedisServer::start();
    let client = client(&server.url(), 3000).await;
    let kind = |r: ferrolock::Result<ferrolock::Lock>| r.unwrap_err().kind();
    assert_eq!(kind(client.lock("")), ErrorKind::InvalidArgument);
    assert_eq!(kind(client.lock(vec![b'x'; 4097])), ErrorKind::InvalidArgument);
    assert!(client.lock(vec![b'x'; 4096]).is_ok());
    assert!(client.lock([0xff, 0xfe, 0]).is_ok(), "names are bytes");
    assert_eq!(
        kind(client.lock_with("n", LockOptions { holder_id: Some(1), owner: Some("x".into()), ..Default::default() })),
        ErrorKind::InvalidArgument
    );
    assert_eq!(kind(client.lock_with("n", LockOptions { owner: Some(String::new()), ..Default::default() })), ErrorKind::InvalidArgument);
    let lock = client.lock("n").unwrap();
    for options in [
        AcquireOptions::wait(Duration::ZERO).with_lease(Duration::ZERO),
        AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_micros(500)),
        AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_secs(7 * 86_400 + 1)),
        AcquireOptions::wait(Duration::from_secs(7 * 86_400 + 1)),
    ] {
        let err = lock.acquire_with(options).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{options:?}");
        assert!(err.message().contains("lease") || err.message().contains("wait"), "{err}");
    }
    assert!(!lock.is_locked().await.unwrap(), "nothing was taken");
    for bad in ["", "http://x", "redis://:pw@[bad", "redis://host\0:1"] {
        let err = ferrolock::Client::connect(bad).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}: {err}");
    }
    let err = builder(&server.url(), 10).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("watchdog_timeout"), "{err}");
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn wrong_type_key_is_wrong_type() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let _: () = raw.set("a-string", "user data").await.unwrap();
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("a-string").unwrap();
    let kinds = [
        lock.acquire_with(AcquireOptions::wait(Duration::from_millis(50))).await.map(|_| ()).unwrap_err().kind(),
        lock.release().await.map(|_| ()).unwrap_err().kind(),
        lock.is_locked().await.map(|_| ()).unwrap_err().kind(),
        lock.is_held().await.map(|_| ()).unwrap_err().kind(),
        lock.remaining_lease().await.map(|_| ()).unwrap_err().kind(),
        lock.force_unlock().await.map(|_| ()).unwrap_err().kind(),
    ];
    assert!(kinds.iter().all(|k| *k == ErrorKind::WrongType), "{kinds:?}");
    // A broken fencing counter fails the acquire before it writes a hold.
    let _: () = raw.set("redisson_lock_token:{fenced-broken}", "not a number").await.unwrap();
    let fenced = client.fenced_lock("fenced-broken").unwrap();
    assert!(fenced.try_acquire().await.is_err());
    assert!(!fenced.is_locked().await.unwrap(), "no orphaned hold");
    let value: String = raw.get("a-string").await.unwrap();
    assert_eq!(value, "user data", "the foreign key is untouched");
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn unreachable_server_and_wrong_password_fail_fast() {
    let port = free_port();
    let started = std::time::Instant::now();
    let err = ferrolock::Client::connect(format!("redis://127.0.0.1:{port}")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    assert!(err.message().contains(&port.to_string()), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "fails fast");

    let server = RedisServer::start_with(&["--requirepass", "s3cret-pass"]);
    let err = ferrolock::Client::connect(format!("redis://:wrong-pass-xyz@127.0.0.1:{}", server.port)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    assert!(!err.message().contains("wrong-pass-xyz"), "no password in messages: {err}");
    assert!(err.message().contains("password"), "says what to check: {err}");
    let err = ferrolock::Client::connect(server.url()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "a missing password fails at connect");
    let ok = ferrolock::Client::connect(format!("redis://:s3cret-pass@127.0.0.1:{}/3", server.port)).await.unwrap();
    let guard = ok.lock("authed").unwrap().acquire().await.unwrap();
    guard.release().await.unwrap();
    ok.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_retried_release_gets_the_first_answer_and_publishes_once() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let client = client(&proxy.url(), 3000).await;
    let lock = client.lock("latched").unwrap();
    let guard = lock.acquire().await.unwrap();

    let mut pubsub = redis::Client::open(server.url()).unwrap().get_async_pubsub().await.unwrap();
    pubsub.subscribe("redisson_lock__channel:{latched}").await.unwrap();
    // The release runs on the server, then its reply is cut: the client retries with
    // the same request id and must get "released", with no second publish.
    proxy.cut_next_reply_to(b"redisson_unlock_latch");
    assert_eq!(guard.release().await.unwrap(), Released::Unlocked);
    assert_eq!(proxy.cuts.load(std::sync::atomic::Ordering::SeqCst), 1, "the reply was cut");
    let _: i64 = raw.publish("redisson_lock__channel:{latched}", "end").await.unwrap();
    let mut messages = Vec::new();
    {
        use futures_util::StreamExt;
        let mut stream = pubsub.on_message();
        while let Some(msg) = stream.next().await {
            let payload: String = msg.get_payload().unwrap();
            if payload == "end" {
                break;
            }
            messages.push(payload);
        }
    }
    assert_eq!(messages, vec!["0".to_string()], "exactly one release message");
    client.shutdown().await.unwrap();
    // Latches are deleted once answered.
    assert_eq!(keys(&mut raw).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_retried_partial_release_takes_one_level_only() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let client = client(&proxy.url(), 3000).await;
    let lock = client.lock("latched-twice").unwrap();
    let outer = lock.acquire().await.unwrap();
    let inner = lock.acquire().await.unwrap();
    // The first attempt takes a level and writes its latch; the retry finds one level
    // left (which, alone, it would release entirely), meets the latch and answers
    // "still held" without touching the hold.
    proxy.cut_next_reply_to(b"redisson_unlock_latch");
    assert_eq!(inner.release().await.unwrap(), Released::StillHeld(1));
    assert_eq!(proxy.cuts.load(std::sync::atomic::Ordering::SeqCst), 1, "the reply was cut");
    let count: i64 = raw.hget("latched-twice", lock.owner()).await.unwrap();
    assert_eq!(count, 1, "one level released, not two");
    assert_eq!(outer.release().await.unwrap(), Released::Unlocked);
    client.shutdown().await.unwrap();
}

/// A copy of a release attempt that reaches Redis after its retry ran (say, a
/// segment retransmitted on the old connection) must change nothing while the
/// latch is there, even if the holder took the lock again since.
#[tokio::test]
async fn a_late_copy_of_a_release_meets_its_latch_and_changes_nothing() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let release = redis::Script::new(include_str!("../src/scripts/lock/release.lua"));
    let (name, channel, latch, owner) = ("late", "redisson_lock__channel:{late}", "redisson_unlock_latch:{late}:req-1", "c:1");
    let run = |raw: &mut redis::aio::MultiplexedConnection| {
        let mut call = release.key(name);
        call.key(channel).key(latch).arg(owner).arg(30_000).arg("publish").arg(5_000).arg("1");
        let mut raw = raw.clone();
        async move { call.invoke_async::<Option<i64>>(&mut raw).await.unwrap() }
    };
    let _: () = raw.hset(name, owner, 1).await.unwrap();
    assert_eq!(run(&mut raw).await, Some(1), "released");
    assert_eq!(raw.get::<_, Option<String>>(latch).await.unwrap().as_deref(), Some("1"));
    // Taken again by the same owner; then the late copy of the same request arrives.
    let _: () = raw.hset(name, owner, 1).await.unwrap();
    assert_eq!(run(&mut raw).await, Some(1), "the first answer");
    assert_eq!(raw.hget::<_, _, Option<i64>>(name, owner).await.unwrap(), Some(1), "the new hold is intact");
    // Not the owner, and no latch: nil, and still no latch.
    let _: () = raw.del(&[name, latch]).await.unwrap();
    assert_eq!(run(&mut raw).await, None);
    assert!(!raw.exists::<_, bool>(latch).await.unwrap());
}

#[tokio::test]
async fn a_lost_acquire_reply_is_resolved_by_reading_the_hold() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let client = client(&proxy.url(), 3000).await;
    let lock = client.fenced_lock("ambiguous").unwrap();
    proxy.cut_next_reply_to(b"ambiguous");
    let guard = lock.acquire().await.unwrap();
    assert_eq!(proxy.cuts.load(std::sync::atomic::Ordering::SeqCst), 1);
    let count: i64 = raw.hget("ambiguous", lock.owner()).await.unwrap();
    assert_eq!(count, 1, "acquired exactly once");
    let token: u64 = raw.get("redisson_lock_token:{ambiguous}").await.unwrap();
    assert_eq!(guard.token(), Some(token));
    // The same on a re-entry.
    proxy.cut_next_reply_to(b"ambiguous");
    let again = lock.try_acquire().await.unwrap().unwrap();
    let count: i64 = raw.hget("ambiguous", lock.owner()).await.unwrap();
    assert_eq!(count, 2);
    again.release().await.unwrap();
    guard.release().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn scripts_survive_script_flush() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("flushed").unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    let guard = lock.acquire().await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    assert_eq!(client.renew_held_locks().await.unwrap().renewed, 1);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    guard.release().await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    let _kept = lock.acquire().await.unwrap().into_hold();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_releases_what_it_holds() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let a = client.lock("s1").unwrap();
    let b = client.fenced_lock("s2").unwrap();
    let _ga = a.acquire().await.unwrap().into_hold();
    let _gb = b.acquire().await.unwrap().into_hold();
    a.try_acquire().await.unwrap().unwrap().into_hold();
    assert_eq!(client.held_count(), 2);
    client.shutdown().await.unwrap();
    assert_eq!(keys(&mut raw).await, vec!["redisson_lock_token:{s2}".to_string()]);
    assert!(client.is_closed());
    for err in [
        a.acquire().await.unwrap_err(),
        a.status().await.unwrap_err(),
        client.lock("s3").unwrap_err(),
        client.fenced_lock("s3").unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::ClientClosed, "{err}");
        assert_eq!(err.message(), "the ferrolock client is closed; create a new client");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_auth_on_every_connection() {
    let server = RedisServer::start_tls("tls-secret");
    let url = format!("rediss://:tls-secret@127.0.0.1:{}/#insecure", server.port);
    let a = ferrolock::Client::connect(url.clone()).await.unwrap();
    let b = ferrolock::Client::connect(url.clone()).await.unwrap();
    let held = a.fenced_lock("tls").unwrap().acquire().await.unwrap();
    // The waiter's pub/sub connection is TLS + AUTH too: it is woken by the release message.
    let lock = b.fenced_lock("tls").unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(|g| g.into_hold()) }
    });
    eventually(Duration::from_secs(5), "waiter subscribed over TLS", || {
        let n = b.subscribed_channels();
        async move { n == 1 }
    })
    .await;
    let first = held.token().unwrap();
    held.release().await.unwrap();
    let hold = tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken by message").unwrap().unwrap();
    assert!(hold.token().unwrap() > first);
    lock.release().await.unwrap();
    // Plain TCP to a TLS port, and a wrong password over TLS, fail fast and clearly.
    let err = ferrolock::Client::connect(format!("rediss://:nope@127.0.0.1:{}/#insecure", server.port)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    assert!(!err.message().contains("nope"), "{err}");
    let started = std::time::Instant::now();
    let err = builder(&format!("redis://:tls-secret@127.0.0.1:{}", server.port), 3000).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    assert!(started.elapsed() < Duration::from_secs(3), "no hang: {:?}", started.elapsed());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// rustls verifies the server: against the system roots (which do not know the test
/// CA: refused, a Connection error naming the certificate), and against a CA file given
/// by `SSL_CERT_FILE` (accepted). The child process keeps that variable out of this one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_verifies_the_server_certificate() {
    let server = RedisServer::start_tls("tls-secret");
    let url = format!("rediss://:tls-secret@127.0.0.1:{}", server.port);
    let err = builder(&url, 3000).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");
    assert!(!err.to_string().contains("tls-secret"), "{err}");

    for host in ["127.0.0.1", "localhost"] {
        let url = format!("rediss://:tls-secret@{host}:{}", server.port);
        let out = std::process::Command::new(example_binary("hold"))
            .args(["--url", &url, "--name", "verified", "--hold-ms", "0"])
            .env("SSL_CERT_FILE", server.tls_ca())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{host}: {stdout} {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.starts_with("acquired owner=") && stdout.contains("released"), "{stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_while_holding_keeps_the_hold_until_shutdown() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 1500).await;
    let owner = {
        let lock = client.lock("dropped").unwrap();
        let _hold = lock.acquire().await.unwrap().into_hold();
        lock.try_acquire().await.unwrap().unwrap().into_hold();
        lock.owner().to_string()
    }; // the only handle goes away while holding two levels
    // Still held, and still renewed by the client.
    let other = client.lock("dropped").unwrap();
    let report = client.renew_held_locks().await.unwrap();
    assert_eq!(report.renewed, 1, "the client still renews the hold");
    assert_eq!(raw.hget::<_, _, Option<u32>>("dropped", &owner).await.unwrap(), Some(2));
    assert!(other.try_acquire().await.unwrap().is_none());
    assert_eq!(client.held_count(), 1);
    // The same holder can be reached again by its owner field and released.
    let again = client.lock_with("dropped", LockOptions { owner: Some(owner.clone()), ..LockOptions::default() }).unwrap();
    assert_eq!(again.local_hold_count(), 2, "the same holder, kept by the client");
    drop(again);
    client.shutdown().await.unwrap(); // releases it
    assert_eq!(keys(&mut raw).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_client_and_lock_handle_shuts_the_client_down() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    {
        let client = client(&server.url(), 1500).await;
        let lock = client.lock("abandoned").unwrap();
        lock.acquire().await.unwrap().into_hold();
    } // no handle left: the client shuts down by itself and releases
    eventually(Duration::from_secs(5), "released by the implicit shutdown", || {
        let mut raw = raw.clone();
        async move { keys(&mut raw).await.is_empty() }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_a_pending_waiter_leaves_nothing_held() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    for _ in 0..10 {
        let client = client(&server.url(), 3000).await;
        let holder = client.lock("pending").unwrap();
        let _hold = holder.acquire().await.unwrap().into_hold();
        let waiter = client.lock("pending").unwrap();
        let waiting = tokio::spawn(async move { waiter.acquire().await.map(|g| g.into_hold()) });
        eventually(Duration::from_secs(5), "waiter subscribed", || {
            let n = client.subscribed_channels();
            async move { n == 1 }
        })
        .await;
        client.shutdown().await.unwrap();
        let outcome = waiting.await.unwrap();
        assert_eq!(outcome.map(|_| ()).unwrap_err().kind(), ErrorKind::ClientClosed);
        assert_eq!(keys(&mut raw).await, Vec::<String>::new(), "shutdown released everything");
    }
}
