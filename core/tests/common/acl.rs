//! The least-privilege users of the operating guide ("Least-privilege ACL users"),
//! one per topology, written as there; what runs as them (the whole family, every
//! waiter woken by its message); and the check that no node or sentinel refused
//! them anything (ACL LOG), not even what ferrolock would have done without.

use std::time::{Duration, Instant};

use ferrolock::{AcquireOptions, Client};
use redis::aio::MultiplexedConnection;
use redis::Value;

/// One server: the whole family, for names under `app:`.
pub const ONE_SERVER: &str = "on >locker-pw resetkeys resetchannels -@all \
    +ping +client|setname +info +command|info +script|load +script|exists +evalsha \
    +time +get +mget +set +del +unlink +exists +type +pttl +pexpire +rename +incr +incrby +decr +decrby \
    +hget +hgetall +hset +hdel +hexists +hincrby +hlen +hkeys +lindex +lpop +rpush +lrange +lrem \
    +zadd +zrem +zscore +zrange +zrangebyscore +zincrby \
    +publish +subscribe +unsubscribe +pubsub|numsub \
    ~app:* ~{app:* ~redisson_*{app:* ~ferrolock_*{app:* &redisson_*{app:* &ferrolock_*{app:*";

/// Behind Sentinel, on both data nodes: one server's, and what the replica
/// acknowledgement of every acquire sends (WAIT, ROLE).
pub const SENTINEL_DATA: &str = "on >locker-pw resetkeys resetchannels -@all \
    +ping +client|setname +info +command|info +script|load +script|exists +evalsha \
    +time +get +mget +set +del +unlink +exists +type +pttl +pexpire +rename +incr +incrby +decr +decrby \
    +hget +hgetall +hset +hdel +hexists +hincrby +hlen +hkeys +lindex +lpop +rpush +lrange +lrem \
    +zadd +zrem +zscore +zrange +zrangebyscore +zincrby \
    +publish +subscribe +unsubscribe +pubsub|numsub +role +wait \
    ~app:* ~{app:* ~redisson_*{app:* ~ferrolock_*{app:* &redisson_*{app:* &ferrolock_*{app:*";

/// On every sentinel: where the master is, and its failovers as they happen.
pub const SENTINELS: &str = "on >watcher-pw resetchannels -@all \
    +sentinel|get-master-addr-by-name +sentinel|replicas +subscribe &+switch-master";

/// On every node of a Redis 7.0+ Cluster: sharded pub/sub instead of the classic,
/// and the slot map.
pub const CLUSTER_NODES: &str = "on >locker-pw resetkeys resetchannels -@all \
    +ping +client|setname +info +command|info +script|load +script|exists +evalsha \
    +time +get +mget +set +del +unlink +exists +type +pttl +pexpire +rename +incr +incrby +decr +decrby \
    +hget +hgetall +hset +hdel +hexists +hincrby +hlen +hkeys +lindex +lpop +rpush +lrange +lrem \
    +zadd +zrem +zscore +zrange +zrangebyscore +zincrby \
    +spublish +ssubscribe +sunsubscribe +pubsub|shardnumsub +role +wait +cluster|slots +cluster|nodes +asking \
    ~app:* ~{app:* ~redisson_*{app:* ~ferrolock_*{app:* &redisson_*{app:* &ferrolock_*{app:*";

/// A Redis 6.2 Cluster has no sharded pub/sub: the classic commands instead.
pub fn cluster_nodes_for(version: (u32, u32, u32)) -> String {
    if version >= (7, 0, 0) {
        return CLUSTER_NODES.to_string();
    }
    CLUSTER_NODES.replace("+spublish +ssubscribe +sunsubscribe +pubsub|shardnumsub", "+publish +subscribe +unsubscribe +pubsub|numsub")
}

/// ACL SETUSER `user` with `rules` (as written in the guide) on one node.
pub async fn set_user(raw: &mut MultiplexedConnection, user: &str, rules: &str) {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER").arg(user);
    for rule in rules.split_whitespace() {
        cmd.arg(rule);
    }
    let said: Result<(), _> = cmd.query_async(raw).await;
    said.unwrap_or_else(|e| panic!("ACL SETUSER {user} {rules}: {e}"));
}

/// What the ACL refused `user` on one node (ACL LOG: reason, context and object of
/// each entry). CLIENT SETINFO is left out: redis-rs sends it on every connect and
/// goes on without it; it cannot be granted on servers before 7.2, which lack it
/// (6.2 logs the refusal as `client`, without the subcommand: every other CLIENT
/// call of ferrolock is SETNAME, granted).
pub async fn refused(raw: &mut MultiplexedConnection, user: &str) -> Vec<String> {
    let log: Vec<Value> = redis::cmd("ACL").arg("LOG").query_async(raw).await.unwrap();
    let mut refused = Vec::new();
    for entry in log {
        let fields: Vec<(String, String)> = match entry {
            Value::Map(pairs) => pairs.into_iter().map(|(k, v)| (text(k), text(v))).collect(),
            Value::Array(items) => items.chunks(2).map(|kv| (text(kv[0].clone()), text(kv.get(1).cloned().unwrap_or(Value::Nil)))).collect(),
            _ => continue,
        };
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
        let setinfo = match field("object").as_str() {
            "client|setinfo" => true,
            "client" => super::redis_server_version() < (7, 0, 0),
            _ => false,
        };
        if field("username") == user && !setinfo {
            refused.push(format!("{} {} {}", field("reason"), field("context"), field("object")));
        }
    }
    refused
}

fn text(v: Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::SimpleString(s) => s,
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// Asserts that no node refused `user` anything.
pub async fn nothing_refused(raws: &mut [(u16, MultiplexedConnection)], user: &str) {
    let mut all = Vec::new();
    for (port, raw) in raws.iter_mut() {
        all.extend(refused(raw, user).await.into_iter().map(|r| format!("{port}: {r}")));
    }
    assert!(all.is_empty(), "refused to {user}:\n{}", all.join("\n"));
}

/// Waits until `client` has one acquire (or campaign, or latch wait) parked on a
/// message, runs `release`, and checks the waiter was woken by the message: far
/// sooner than the holders' leases (10 s) would have let it in.
pub async fn woken<F>(client: &Client, waiter: tokio::task::JoinHandle<()>, release: F)
where
    F: std::future::Future<Output = ()>,
{
    super::eventually(Duration::from_secs(10), "the waiter to park", || async { client.waiting_acquires() == 1 }).await;
    let released = Instant::now();
    release.await;
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken by the message").unwrap();
    assert!(released.elapsed() < Duration::from_secs(3), "woken by the message: {:?}", released.elapsed());
}

/// The whole family as `a` and `b` (two clients of the same user, watchdog 10 s),
/// on names under `prefix` (`app:`): reentrant lock with a holder note, fenced lock,
/// fair lock, read-write lock, semaphore, expirable permits, count-down latch and an
/// election (leader, observer), each with a waiter woken by the release's message;
/// `inspect` of a name.
pub async fn run_family(a: &Client, b: &Client, prefix: &str) {
    let name = |n: &str| format!("{prefix}{n}");

    let lock = a.lock(&name("lock")).unwrap();
    let guard = lock.acquire().await.unwrap();
    lock.acquire().await.unwrap().into_hold();
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    lock.set_holder_info(Some("host-1")).await.unwrap();
    assert_eq!(lock.status().await.unwrap().holders[0].info.as_deref(), Some("host-1"));
    lock.release().await.unwrap();
    let theirs = b.lock(&name("lock")).unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire().await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(b, waiter, async { guard.release().await.map(|_| ()).unwrap() }).await;

    let fenced = a.fenced_lock(&name("fenced")).unwrap();
    let token = fenced.acquire().await.unwrap().into_hold().token().unwrap();
    assert!(fenced.force_unlock().await.unwrap());
    let next = b.fenced_lock(&name("fenced")).unwrap().acquire().await.unwrap();
    assert_eq!(next.token(), Some(token + 1));
    next.release().await.unwrap();
    let leased = a.lock(&name("lease")).unwrap();
    let guard = leased.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_secs(5))).await.unwrap().unwrap();
    assert!(leased.extend(Duration::from_secs(5)).await.unwrap() > Duration::from_secs(5));
    guard.release().await.unwrap();

    let fair = a.fair_lock(&name("fair")).unwrap().acquire().await.unwrap();
    assert_eq!(b.inspect(&name("fair")).await.unwrap().lock.map(|l| l.holders.len()), Some(1));
    let theirs = b.fair_lock(&name("fair")).unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire().await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(b, waiter, async { fair.release().await.map(|_| ()).unwrap() }).await;

    let rw = a.read_write_lock(&name("rw")).unwrap();
    let read = rw.read().acquire().await.unwrap();
    read.release().await.unwrap();
    let write = rw.write().acquire().await.unwrap();
    let theirs = b.read_write_lock(&name("rw")).unwrap().read();
    let waiter = tokio::spawn(async move { theirs.acquire().await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(b, waiter, async { write.release().await.map(|_| ()).unwrap() }).await;

    let sem = a.semaphore(&name("sem")).unwrap();
    assert!(sem.try_set_permits(0).await.unwrap());
    let theirs = b.semaphore(&name("sem")).unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire(1).await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(b, waiter, async { sem.release(1).await.map(|_| ()).unwrap() }).await;
    assert_eq!(sem.available().await.unwrap(), 1);
    assert_eq!(sem.drain().await.unwrap(), 1);

    let permits = a.permit_expirable_semaphore(&name("permits")).unwrap();
    assert!(permits.try_set_permits(1).await.unwrap());
    let held = permits.acquire(Some(Duration::from_secs(10))).await.unwrap();
    let theirs = b.permit_expirable_semaphore(&name("permits")).unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire(None).await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(b, waiter, async { held.release().await.map(|_| ()).unwrap() }).await;
    assert_eq!(permits.available().await.unwrap(), 1);
    assert_eq!(b.inspect(&name("permits")).await.unwrap().permits, Some(1));

    let latch = a.count_down_latch(&name("latch")).unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    let theirs = b.count_down_latch(&name("latch")).unwrap();
    let waiter = tokio::spawn(async move { assert!(theirs.wait(None).await.unwrap()) });
    woken(b, waiter, async { latch.count_down().await.map(|_| ()).unwrap() }).await;
    assert_eq!(latch.count().await.unwrap(), 0);

    let mut observer = b.election(&name("leader")).unwrap().observe().await.unwrap();
    assert!(observer.next().await.unwrap().is_none(), "nobody leads at first");
    let mine = a.election(&name("leader")).unwrap();
    let led = mine.campaign().await.unwrap();
    let told = tokio::time::timeout(Duration::from_secs(5), observer.next()).await.expect("the announcement").unwrap();
    assert_eq!(told.map(|l| l.term), Some(led.term()));
    let theirs = b.election(&name("leader")).unwrap();
    assert_eq!(theirs.leader().await.unwrap().map(|l| l.term), Some(led.term()));
    let waiter = tokio::spawn(async move { theirs.campaign().await.unwrap().resign().await.map(|_| ()).unwrap() });
    woken(b, waiter, async { led.resign().await.map(|_| ()).unwrap() }).await;
}
