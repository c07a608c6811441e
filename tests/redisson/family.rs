//! The driver's commands for RFairLock, RReadWriteLock and RPermitExpirableSemaphore,
//! whose ferrolock side is still to come (issue 16): each runs real Redisson and
//! leaves the layout the wire captures (../shared/redisson-wire) describe, read here
//! from a raw connection. When ferrolock has these objects, their interop tests
//! follow locks.rs and counters.rs on these same commands.

use redis::AsyncCommands;

use crate::driver::LEASE;
use crate::Scene;

async fn pttl(raw: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    raw.pttl(key).await.unwrap()
}

fn assert_watchdog_pttl(pttl: i64, what: &str) {
    let lease = LEASE.as_millis() as i64;
    assert!(pttl > lease - 10_000 && pttl <= lease, "{what}: PTTL {pttl}");
}

pub async fn the_rest_of_the_family_on_the_wire(version: &'static str) {
    let mut s = Scene::start(version).await;
    let owner = s.java.owner().await;
    let raw = &mut s.raw;

    // RFairLock: the RLock hash (owner field -> count), re-entrant, renewed lease.
    let fair = "interop-fair";
    assert_eq!(s.java.call(&format!("fair try {fair} 0")).await, "ok");
    assert_eq!(s.java.call(&format!("fair try {fair} 0")).await, "ok");
    assert_eq!(s.java.call(&format!("fair holds {fair}")).await, "2");
    let fields: Vec<(String, String)> = raw.hgetall(fair).await.unwrap();
    assert_eq!(fields, [(owner.clone(), "2".to_string())]);
    assert_watchdog_pttl(pttl(raw, fair).await, "fair lock");
    assert_eq!(s.java.call(&format!("fair unlock {fair}")).await, "ok");
    assert_eq!(s.java.call(&format!("fair unlock {fair}")).await, "ok");
    assert_eq!(s.java.call(&format!("fair locked {fair}")).await, "false");
    let left: i64 = raw.exists(fair).await.unwrap();
    assert_eq!(left, 0);

    // RReadWriteLock: mode read with the reader's field and one timeout key per read hold.
    let rw = "interop-rw";
    assert_eq!(s.java.call(&format!("read try {rw} 0")).await, "ok");
    let mode: String = raw.hget(rw, "mode").await.unwrap();
    assert_eq!(mode, "read");
    let count: String = raw.hget(rw, &owner).await.unwrap();
    assert_eq!(count, "1");
    let timeout_key = format!("{{{rw}}}:{owner}:rwlock_timeout:1");
    assert_watchdog_pttl(pttl(raw, &timeout_key).await, "read hold's timeout key");
    assert_eq!(s.java.call(&format!("write try {rw} 0")).await, "busy", "a reader cannot take the write lock");
    assert_eq!(s.java.call(&format!("read unlock {rw}")).await, "ok");
    let left: i64 = raw.exists(&[rw, timeout_key.as_str()]).await.unwrap();
    assert_eq!(left, 0);
    // Mode write with the `<owner>:write` field; the writer may also read.
    assert_eq!(s.java.call(&format!("write try {rw} 0")).await, "ok");
    let mode: String = raw.hget(rw, "mode").await.unwrap();
    assert_eq!(mode, "write");
    let count: String = raw.hget(rw, format!("{owner}:write")).await.unwrap();
    assert_eq!(count, "1");
    assert_watchdog_pttl(pttl(raw, rw).await, "write lock");
    assert_eq!(s.java.call(&format!("read try {rw} 0")).await, "ok", "the writer takes a read hold");
    assert_eq!(s.java.call(&format!("read holds {rw}")).await, "1");
    assert_eq!(s.java.call(&format!("write holds {rw}")).await, "1");
    assert_eq!(s.java.call(&format!("read unlock {rw}")).await, "ok");
    assert_eq!(s.java.call(&format!("write unlock {rw}")).await, "ok");
    assert_eq!(s.java.call(&format!("write locked {rw}")).await, "false");

    // RPermitExpirableSemaphore: a string of free permits, a zset of permit id -> expiry.
    let sem = "interop-expirable";
    let timeouts = format!("{{{sem}}}:timeout");
    assert_eq!(s.java.call(&format!("expirable set {sem} 2")).await, "true");
    assert_eq!(s.java.call(&format!("expirable set {sem} 3")).await, "false");
    let leased = s.java.call(&format!("expirable acquire {sem} 0 60000")).await;
    let unleased = s.java.call(&format!("expirable acquire {sem} 0 -1")).await;
    for id in [&leased, &unleased] {
        assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "permit id {id:?}");
    }
    assert_eq!(s.java.call(&format!("expirable acquire {sem} 0 -1")).await, "busy", "2 permits, 2 taken");
    assert_eq!(s.java.call(&format!("expirable available {sem}")).await, "0");
    let free: String = raw.get(sem).await.unwrap();
    assert_eq!(free, "0");
    let expiries: Vec<(Vec<u8>, i64)> = raw.zrange_withscores(&timeouts, 0, -1).await.unwrap();
    assert_eq!(expiries.len(), 2, "one member per permit");
    assert!(expiries.iter().all(|(member, _)| member.len() == 16), "members are the 16 raw bytes of the ids");
    let (time, _): (String, String) = redis::cmd("TIME").query_async(raw).await.unwrap();
    let now_ms = time.parse::<i64>().unwrap() * 1000;
    assert!(
        (now_ms + 40_000..=now_ms + 62_000).contains(&expiries[0].1),
        "the leased permit expires in 60 s: {expiries:?}, now {now_ms}"
    );
    assert_eq!(expiries[1].1, 922_337_203_685_477, "no lease: {expiries:?}");
    assert_eq!(s.java.call(&format!("expirable release {sem} {leased}")).await, "ok");
    assert_eq!(s.java.call(&format!("expirable release {sem} {unleased}")).await, "ok");
    assert_eq!(s.java.call(&format!("expirable available {sem}")).await, "2");
    let left: i64 = raw.zcard(&timeouts).await.unwrap();
    assert_eq!(left, 0);
}
