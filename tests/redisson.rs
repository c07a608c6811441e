//! Interop with real Redisson (Java, from Maven Central), versions 4.7.0 and
//! 3.52.0: tests/redisson/build.sh (which scripts/build.sh runs) builds the driver
//! tests/redisson/Interop.java once per version, and every test here runs against
//! both. A Java side and a ferrolock side on the same name, on a redis-server the
//! test starts:
//!
//! - exclude / limit each other, with exact counts (hold counts, permits, counts);
//! - wake each other by message, both ways, measured and printed: well under
//!   1 s where the lease and the wait are 30 s, so only the message could do it;
//! - see each other's state (owner fields with hold counts, tokens strictly
//!   increasing across both sides, free permits, counts).
//!
//! Objects: the reentrant and fenced locks (locks.rs), the semaphore and the
//! count-down latch (counters.rs), RedissonRedLock / RedissonMultiLock (multi.rs),
//! the fair lock, the read-write lock and the permit-expirable semaphore (family.rs);
//! the calls of docs/site/migration/redisson.md those do not make (api.rs); an election on the
//! name of an RLock and RFencedLock (election.rs); RLock and RFencedLock behind Sentinel
//! against ferrolock under each replica-ack policy (sentinel.rs); and a mixed
//! fleet on a Cluster, Redisson in cluster mode (cluster.rs). Each test names the rows
//! of that page it backs (`// row: redisson/ID`; scripts/docs/check_rows.py).
//!
//! Run with `-- --nocapture` to see the measured wake-up times.

#[path = "redisson/api.rs"]
mod api;
#[path = "redisson/cluster.rs"]
mod cluster;
#[path = "redisson/counters.rs"]
mod counters;
#[path = "redisson/driver.rs"]
mod driver;
#[path = "redisson/election.rs"]
mod election;
#[path = "redisson/family.rs"]
mod family;
#[path = "redisson/locks.rs"]
mod locks;
#[path = "redisson/multi.rs"]
mod multi;
#[path = "redisson/sentinel.rs"]
mod sentinel;

use std::time::Duration;

use driver::{Redisson, LEASE};
use ferrolock::Client;
use ferrolock_harness::{eventually, numsub, script_calls, RedisServer};

/// One test's world: a redis-server, the Java driver and a ferrolock client on it.
pub struct Scene {
    pub java: Redisson,
    pub client: Client,
    pub raw: redis::aio::MultiplexedConnection,
    pub version: &'static str,
    _server: RedisServer,
}

impl Scene {
    /// Both sides with a 30 s watchdog lease.
    pub async fn start(version: &'static str) -> Scene {
        let server = RedisServer::start();
        let java = Redisson::start(version, LEASE, &[server.url()]).await;
        let client = Client::builder(server.url()).watchdog_timeout(LEASE).connect().await.unwrap();
        let raw = server.raw().await;
        Scene { java, client, raw, version, _server: server }
    }

    /// Sends a Java command that blocks on `channel` and returns once Redisson has
    /// subscribed to it (nobody else is on it before: checked first).
    pub async fn java_waits(&mut self, command: &str, channel: &str) {
        let raw = self.raw.clone();
        let subscribers = move || {
            let mut raw = raw.clone();
            let channel = channel.to_string();
            async move { numsub(&mut raw, &channel).await }
        };
        eventually(Duration::from_secs(10), &format!("nobody subscribed to {channel}"), || {
            let n = subscribers();
            async move { n.await == 0 }
        })
        .await;
        self.java.send(command);
        eventually(Duration::from_secs(20), &format!("Redisson waiting on {channel} ({command})"), || {
            let n = subscribers();
            async move { n.await >= 1 }
        })
        .await;
    }

    /// Like [`Scene::java_waits`], and returns only once Redisson has also tried again
    /// after subscribing (its second acquire script): a "wake all" message (`1`, a
    /// write release) releases only the waiters already parked on Redisson's latch
    /// (`release(getQueueLength())`), so one published while the Java thread is still
    /// between subscribing and parking is lost, and Redisson waits out the lease; its
    /// own writers have the same window. Nothing else runs scripts meanwhile.
    pub async fn java_waits_parked(&mut self, command: &str, channel: &str) {
        let before = script_calls(&mut self.raw).await;
        self.java_waits(command, channel).await;
        let raw = self.raw.clone();
        eventually(Duration::from_secs(20), &format!("Redisson's retry after subscribing ({command})"), || {
            let mut raw = raw.clone();
            async move { script_calls(&mut raw).await >= before + 2 }
        })
        .await;
    }

    /// Returns once `n` acquires of the ferrolock client are parked waiting for a message.
    pub async fn ferrolock_waits(&self, n: usize) {
        let client = &self.client;
        eventually(Duration::from_secs(20), &format!("{n} ferrolock acquire(s) parked"), || async move {
            client.waiting_acquires() == n
        })
        .await;
    }
}

/// For each `module::test` (an `async fn(version: &'static str)`), one test per
/// Redisson version: `redisson_4_7_0::test` and `redisson_3_52_0::test` (the
/// versions tests/redisson/build.sh builds).
macro_rules! for_each_version {
    ($($module:ident :: $test:ident),* $(,)?) => {
        mod redisson_4_7_0 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::$module::$test("4.7.0").await;
                }
            )*
        }
        mod redisson_3_52_0 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::$module::$test("3.52.0").await;
                }
            )*
        }
    };
}

for_each_version! {
    locks::reentrant_lock,
    locks::fenced_lock,
    counters::semaphore,
    counters::count_down_latch,
    multi::redlock,
    multi::multilock,
    family::fair_lock,
    family::read_write_lock,
    family::permit_expirable_semaphore,
    api::explicit_lease,
    api::force_unlock,
    api::hold_queries,
    api::interruptible,
    api::async_api,
    api::expirable_permits,
    api::synced_slaves_default,
    cluster::mixed_fleet_on_a_cluster,
    sentinel::replica_ack_policies_behind_sentinel,
    election::election,
}
