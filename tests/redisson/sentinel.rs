//! Redisson behind Sentinel (`checkLockSyncedSlaves` on, its default: the acquire is
//! followed by WAIT) and ferrolock under each replica-ack policy on the same lock
//! names: each excludes the other and wakes the other's waiter by its release message.

use std::time::{Duration, Instant};

use ferrolock::{AcquireOptions, Client, ReplicaAck};
use ferrolock_harness::{eventually, SentinelSet, MASTER_NAME};

use crate::driver::{wake_up, Redisson, LEASE};

pub async fn replica_ack_policies_behind_sentinel(version: &'static str) {
    let set = SentinelSet::start().await;
    let sentinels: Vec<String> = set.sentinel_ports().iter().map(|p| format!("redis://127.0.0.1:{p}")).collect();
    let mut java = Redisson::start(version, LEASE, &[format!("sentinel:{MASTER_NAME}:{}", sentinels.join(","))]).await;
    assert_eq!(java.call("config synced").await, "true", "Redisson checks its locks' replication by default");
    for policy in [ReplicaAck::Off, ReplicaAck::One, ReplicaAck::Majority, ReplicaAck::All] {
        let client = Client::builder(set.url()).watchdog_timeout(LEASE).replica_ack(policy).connect().await.unwrap();
        for kind in ["lock", "fenced"] {
            let name = format!("sentinel-{kind}-{policy:?}");
            let ours = if kind == "lock" { client.lock(&name).unwrap() } else { client.fenced_lock(&name).unwrap() };

            // Redisson holds: ferrolock's try finds it held; its waiter wakes on Redisson's release.
            let java_token = took(&java.call(&format!("{kind} try {name} 0")).await, kind, policy);
            let tried = ours.acquire_hold(AcquireOptions::wait(Duration::ZERO)).await.unwrap();
            assert!(tried.is_none(), "{policy:?} {kind}: acquired a lock Redisson holds");
            let lock = ours.clone();
            let waiter = tokio::spawn(async move {
                let hold = lock.acquire_hold(AcquireOptions::wait(LEASE)).await.unwrap().expect("acquired within the wait");
                (hold, Instant::now())
            });
            eventually(Duration::from_secs(20), "the ferrolock acquire parked", || async { client.waiting_acquires() == 1 }).await;
            let released = Instant::now();
            assert_eq!(java.call(&format!("{kind} unlock {name}")).await, "ok");
            let (hold, acquired) = waiter.await.unwrap();
            if kind == "fenced" {
                assert!(hold.token().unwrap() > java_token.unwrap(), "{policy:?}: ferrolock's token after Redisson's");
            }
            wake_up(version, &format!("Redisson's release -> ferrolock ({policy:?}, behind Sentinel)"), acquired - released);

            // ferrolock holds: Redisson's try finds it held, then gets it after the release.
            assert_eq!(java.call(&format!("{kind} try {name} 0")).await, "busy", "{policy:?} {kind}");
            let token = hold.token();
            ours.release().await.unwrap();
            drop(hold);
            let java_token = took(&java.call(&format!("{kind} try {name} 0")).await, kind, policy);
            if kind == "fenced" {
                assert!(java_token.unwrap() > token.unwrap(), "{policy:?}: Redisson's token after ferrolock's");
            }
            assert_eq!(java.call(&format!("{kind} unlock {name}")).await, "ok");
            assert!(!ours.is_locked().await.unwrap(), "{policy:?} {kind}");
        }
        client.shutdown().await.unwrap();
    }
}

/// What Redisson's try answered when it took the lock: "ok", or a fenced lock's token.
fn took(reply: &str, kind: &str, policy: ReplicaAck) -> Option<u64> {
    match kind {
        "fenced" => Some(reply.parse().unwrap_or_else(|_| panic!("{policy:?}: Redisson's fenced try answered {reply:?}"))),
        _ => {
            assert_eq!(reply, "ok", "{policy:?} {kind}");
            None
        }
    }
}
