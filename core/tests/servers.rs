//! What ferrolock learns from the server at connect and what it does with it, on
//! whichever redis-server is first on PATH (scripts/test-servers.sh runs this file
//! against Redis 6.2 to 7.4 and Valkey 7.2 and 8.0): a server that may evict lock
//! keys is named in `status` and `inspect` and warned about once per client; a
//! demoted master's READONLY, which Redis before 7.0 hides in a script error's text,
//! still retires the connection and is a connection error.

mod common;


use common::*;
use ferrolock::ErrorKind;

async fn config_set(raw: &mut redis::aio::MultiplexedConnection, key: &str, value: &str) {
    let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query_async(raw).await.unwrap();
}

/// Every lock key has a TTL, so `volatile-*` evicts it as surely as `allkeys-*`:
/// both are named; `noeviction`, or no `maxmemory`, is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_may_evict_lock_keys_is_named_and_warned_about_once_per_client() {
    let log = warnings();
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let said = |port: u16| -> Vec<String> {
        let at = format!("127.0.0.1:{port}");
        log.lock().unwrap().iter().filter(|m| m.contains("may evict lock keys") && m.contains(&at)).cloned().collect()
    };
    let safe = client(&server.url(), 1500).await;
    assert_eq!(safe.lock("ev").unwrap().status().await.unwrap().eviction_policy, None);
    config_set(&mut raw, "maxmemory-policy", "allkeys-lru").await;
    assert_eq!(client(&server.url(), 1500).await.inspect("ev").await.unwrap().eviction_policy, None, "no maxmemory: nothing evicted");
    assert!(said(server.port).is_empty(), "{:?}", said(server.port));
    config_set(&mut raw, "maxmemory", "1gb").await;
    for policy in ["volatile-lru", "allkeys-lfu"] {
        config_set(&mut raw, "maxmemory-policy", policy).await;
        let before = said(server.port).len();
        let c = client(&server.url(), 1500).await;
        let lock = c.lock("ev").unwrap();
        let guard = lock.acquire().await.unwrap();
        assert_eq!(lock.status().await.unwrap().eviction_policy.as_deref(), Some(policy));
        let seen = c.inspect("ev").await.unwrap();
        assert_eq!(seen.eviction_policy.as_deref(), Some(policy));
        assert_eq!(seen.lock.unwrap().eviction_policy.as_deref(), Some(policy));
        let permits = format!("ev-permits-{policy}");
        let sem = c.semaphore(&permits).unwrap();
        assert!(sem.try_set_permits(1).await.unwrap());
        assert_eq!(c.inspect(&permits).await.unwrap().eviction_policy.as_deref(), Some(policy));
        guard.release().await.unwrap();
        let warned = said(server.port);
        assert_eq!(warned.len(), before + 1, "one warning for this client: {warned:?}");
        let last = warned.last().unwrap();
        assert!(last.contains(policy) && last.contains("noeviction"), "names the policy and what to set: {last}");
        c.shutdown().await.unwrap();
    }
    config_set(&mut raw, "maxmemory-policy", "noeviction").await;
    assert_eq!(client(&server.url(), 1500).await.lock("ev").unwrap().status().await.unwrap().eviction_policy, None);
    // The client made before the change still says what it read at connect.
    assert_eq!(safe.lock("ev").unwrap().status().await.unwrap().eviction_policy, None);
}

/// A master demoted under a client's connection (what a failover does to the old
/// master) refuses the acquire script with READONLY: a connection error, and the
/// connection is retired so the next request connects afresh (behind Sentinel: to
/// the new master). Before Redis 7.0 the code is only in the script error's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_master_s_readonly_is_a_connection_error_and_retires_the_connection() {
    let master = RedisServer::start();
    let demoted = RedisServer::start();
    let c = client(&demoted.url(), 1500).await;
    let lock = c.lock("ro").unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    let reconnects = c.metrics().reconnects;
    let mut raw = demoted.raw().await;
    let _: () = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(master.port).query_async(&mut raw).await.unwrap();
    let err = lock.try_acquire().await.map(|_| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("read only replica"), "{err}");
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async(&mut raw).await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(c.metrics().reconnects, reconnects + 1, "READONLY retired the connection");
    lock.acquire().await.unwrap().release().await.unwrap();
    c.shutdown().await.unwrap();
}
