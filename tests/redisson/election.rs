//! An election against Redisson's RLock and RFencedLock of the election's name: a
//! Java hold keeps every candidate out (and shows as the leader), its release wakes a
//! campaign, a leader keeps Java out and its resignation wakes a waiting Java thread;
//! terms and Java's fencing tokens grow together.

use std::time::{Duration, Instant};

use ferrolock_harness::{eventually, numsub};

use crate::driver::{wake_up, LEASE};
use crate::Scene;

pub async fn election(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-election";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let candidate = s.client.election(name).unwrap();
    let mut observer = candidate.observe().await.unwrap();
    assert!(observer.next().await.unwrap().is_none());
    let java = s.java.owner().await;

    // A Java RLock of the name: no candidate leads; it shows as the holder.
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "ok");
    assert!(candidate.campaign_with(Some(Duration::ZERO)).await.unwrap().is_none(), "Redisson's hold excludes candidates");
    let seen = candidate.leader().await.unwrap().expect("the Java holder");
    assert_eq!(seen.holder.owner, java);
    // Its release wakes a waiting campaign (by message: the wait is 30 s).
    let waiting = {
        let candidate = candidate.clone();
        tokio::spawn(async move {
            let led = candidate.campaign_with(Some(LEASE)).await.unwrap().expect("led within 30 s");
            (led, Instant::now())
        })
    };
    s.ferrolock_waits(1).await;
    let released = Instant::now();
    assert_eq!(s.java.call(&format!("lock unlock {name}")).await, "ok");
    let (led, at) = waiting.await.unwrap();
    wake_up(version, "election: Redisson unlock -> campaign", at - released);

    // A leader keeps Java out; its resignation wakes a waiting Java thread.
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "busy", "the leader excludes Redisson");
    assert_eq!(s.java.call(&format!("fenced try {name} 0")).await, "busy");
    // Waiting: subscribed beside the observer (Redisson's "0" releases a permit of its
    // latch, so a message between its subscribe and its park is not lost).
    s.java.send(&format!("fenced try {name} {}", LEASE.as_millis()));
    let raw = s.raw.clone();
    eventually(Duration::from_secs(20), "Redisson waiting beside the observer", || {
        let (mut raw, channel) = (raw.clone(), channel.clone());
        async move { numsub(&mut raw, &channel).await >= 2 }
    })
    .await;
    let released = Instant::now();
    let term = led.term();
    assert!(led.resign().await.unwrap());
    let java_token: u64 = s.java.reply(LEASE).await.parse().expect("Redisson's fencing token");
    wake_up(version, "election: resignation -> Redisson waiter", released.elapsed());
    assert!(java_token > term, "Redisson's token {java_token} after term {term}");
    assert_eq!(s.java.call(&format!("fenced unlock {name}")).await, "ok");

    // The next leader's term is larger than Java's token; the observer told both of ours
    // (a Java holder takes the lock without an announcement: seen if a read finds it).
    let next = candidate.campaign().await.unwrap();
    assert!(next.term() > java_token, "term {} after Redisson's token {java_token}", next.term());
    let mut told = Vec::new();
    while told.last() != Some(&next.term()) {
        if let Some(leader) = tokio::time::timeout(Duration::from_secs(10), observer.next()).await.unwrap().unwrap() {
            told.push(leader.term);
        }
    }
    assert!(told.contains(&term) && told.windows(2).all(|w| w[0] <= w[1]), "{told:?}");
    next.resign().await.unwrap();
}
