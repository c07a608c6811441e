//! RedissonRedLock and RedissonMultiLock over the same names on three servers
//! exclude ferrolock's multi-locks, and the other way round.

use std::time::Duration;

use ferrolock::{AcquireOptions, Client, Lock, Quorum};
use ferrolock_harness::RedisServer;

use crate::driver::{Redisson, REPLY_WITHIN};

async fn multi(urls: &[String], name: &str, quorum: Quorum) -> Lock {
    let mut members = Vec::new();
    for url in urls {
        members.push(Client::connect(url.clone()).await.unwrap().lock(name).unwrap());
    }
    Lock::multi(members, quorum).unwrap()
}

async fn exclusion(version: &'static str, kind: &str, quorum: Quorum) {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    // Redisson's multi-locks wait member by member; a short watchdog keeps their waits short.
    let mut java = Redisson::start(version, Duration::from_secs(3), &urls).await;
    let name = format!("interop:{kind}");
    let ours = multi(&urls, &name, quorum).await;

    // Redisson holds: ferrolock cannot get it, then gets it once Redisson releases.
    assert_eq!(java.call(&format!("{kind} try {name} 0")).await, "ok");
    assert!(ours.try_acquire().await.unwrap().is_none(), "Redisson's {kind} excludes ferrolock's");
    let waiter = tokio::spawn({
        let ours = ours.clone();
        async move { ours.acquire_hold(AcquireOptions::wait(Duration::from_secs(20))).await }
    });
    assert_eq!(java.call("multi unlock").await, "ok");
    waiter.await.unwrap().unwrap().expect("ferrolock acquires after Redisson's release");

    // ferrolock holds: Redisson cannot get it, then can once ferrolock releases.
    assert_eq!(java.call(&format!("{kind} try {name} 0")).await, "busy");
    ours.release().await.unwrap();
    java.send(&format!("{kind} try {name} 5000"));
    assert_eq!(java.reply(REPLY_WITHIN).await, "ok");
    assert_eq!(java.call("multi unlock").await, "ok");
}

// row: redisson/redlock
pub async fn redlock(version: &'static str) {
    exclusion(version, "redlock", Quorum::Majority).await;
}

// row: redisson/multilock
pub async fn multilock(version: &'static str) {
    exclusion(version, "multilock", Quorum::All).await;
}
