//! `ferrolock top`: one screen and the JSON without a terminal, and the live view in a
//! real pseudo-terminal (tmux: keys sent, the pane captured) showing a holder come
//! and go and a waiter count change within 2 s, on one server and on a Cluster.
//! Needs tmux (scripts/test.sh checks for it). Build first: `cargo build -p ferrolock-cli`.

use std::process::Command;
use std::time::{Duration, Instant};

use ferrolock::Client;
use ferrolock_harness::{eventually, finish, target_binary, Cluster, RedisServer, SentinelSet};

/// How soon the live view (refreshed every second) shows a change.
const SHOWN_WITHIN: Duration = Duration::from_secs(2);
const LIMIT: Duration = Duration::from_secs(10);

async fn connect(url: &str) -> Client {
    Client::builder(url).connect_timeout(Duration::from_secs(2)).response_timeout(Duration::from_secs(2)).connect().await.unwrap()
}

fn top(url: &str, args: &[&str]) -> ferrolock_harness::Finished {
    finish(Command::new(target_binary("ferrolock")).args(["--url", url, "top"]).args(args))
}

/// The cells of the line of `name` in a screen: NAME KIND STATE HELD LEASE WAITERS
/// WAITING TOKEN HOLDERS...
fn row<'a>(screen: &'a str, name: &str) -> Option<Vec<&'a str>> {
    screen.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).find(|cells| cells.first() == Some(&name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_and_json_show_holders_and_waiters_without_a_terminal() {
    let server = RedisServer::start();
    let url = server.url();
    let (a, b) = (connect(&url).await, connect(&url).await);
    let lock = a.lock("tp:held").unwrap();
    let _held = lock.acquire().await.unwrap();
    lock.set_holder_info(Some(r#"{"host":"h9","pid":9,"cmd":"job-9"}"#)).await.unwrap();
    let waiter = b.lock("tp:held").unwrap();
    let _waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    eventually(LIMIT, "the waiter to subscribe", || async { a.inspect("tp:held").await.unwrap().waiters == 1 }).await;
    assert!(a.semaphore("tp:sem").unwrap().try_set_permits(2).await.unwrap());
    let _all = a.semaphore("tp:sem").unwrap().acquire(2).await.unwrap();
    let _other = a.lock("other:x").unwrap().acquire().await.unwrap();

    let out = top(&url, &["tp:", "--once"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("ferrolock top: names under \"tp:\""), "{out:?}");
    let held = row(&out.stdout, "tp:held").unwrap_or_else(|| panic!("{out:?}"));
    assert_eq!(&held[1..3], ["lock", "held"], "{out:?}");
    assert_eq!(held[5], "1", "one waiter: {out:?}");
    assert!(out.stdout.contains("h9 pid 9: job-9"), "{out:?}");
    assert_eq!(&row(&out.stdout, "tp:sem").unwrap()[1..3], ["semaphore", "free:0"], "{out:?}");
    assert!(!out.stdout.contains("other:x"), "{out:?}");
    // The one with waiters first.
    assert!(out.stdout.find("tp:held").unwrap() < out.stdout.find("tp:sem").unwrap(), "{out:?}");

    let out = top(&url, &["tp:", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let data: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(data["prefix"], "tp:");
    let objects = data["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2, "{data}");
    let held = &objects[0];
    assert_eq!((held["name"].as_str(), held["kind"].as_str(), held["waiters"].as_u64()), (Some("tp:held"), Some("lock"), Some(1)), "{data}");
    assert_eq!(held["holders"][0]["owner"], lock.owner());
    assert_eq!(held["holders"][0]["info"], serde_json::json!({"host": "h9", "pid": 9, "cmd": "job-9"}));
    assert!(held["lease_left_ms"].as_i64().is_some_and(|ms| ms > 0), "{data}");
    assert_eq!((objects[1]["kind"].as_str(), objects[1]["permits"].as_i64()), (Some("semaphore"), Some(0)), "{data}");

    // The live view needs a terminal; one deployment at a time.
    let out = top(&url, &["tp:"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--once"), "{out:?}");
    let out = top(&url, &["--url", &url.replace("127.0.0.1", "localhost"), "--once"]);
    assert_eq!(out.code, 2, "{out:?}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Behind Sentinel the names are listed on the master the sentinels name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_behind_sentinel() {
    let sentinels = SentinelSet::start().await;
    let url = sentinels.url();
    let client = connect(&url).await;
    let lock = client.fenced_lock("ts:job").unwrap();
    let _held = lock.acquire().await.unwrap();
    lock.set_holder_info(Some("a plain note")).await.unwrap();
    assert!(client.count_down_latch("ts:ready").unwrap().try_set_count(3).await.unwrap());
    let out = top(&url, &["ts:", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let data: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let objects = data["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2, "{data}");
    assert_eq!((objects[0]["name"].as_str(), objects[0]["kind"].as_str()), (Some("ts:job"), Some("fenced_lock")), "{data}");
    assert_eq!((objects[0]["holders"][0]["info"].as_str(), objects[0]["last_token"].as_u64()), (Some("a plain note"), Some(1)), "{data}");
    assert_eq!((objects[1]["kind"].as_str(), objects[1]["state"].as_str()), (Some("semaphore_or_latch"), Some("value:3")), "{data}");
    let out = top(&url, &["ts:", "--once"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(&row(&out.stdout, "ts:job").unwrap()[1..3], ["fenced_lock", "held"], "{out:?}");
    assert!(out.stdout.contains("a plain note"), "{out:?}");
    client.shutdown().await.unwrap();
}

/// A tmux server of its own running `ferrolock top` in a 250 x 40 pane; killed when dropped.
struct Pane {
    socket: String,
}

impl Pane {
    fn start(url: &str, prefix: &str) -> Pane {
        static PANES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = PANES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("ferrolock-top-{}-{n}", std::process::id());
        let bin = target_binary("ferrolock");
        let command = format!("'{}' --url '{url}' top '{prefix}'", bin.display());
        let pane = Pane { socket };
        pane.tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "top", "-x", "250", "-y", "40", &command]);
        pane
    }

    fn tmux(&self, args: &[&str]) -> ferrolock_harness::Finished {
        finish(Command::new("tmux").args(["-L", &self.socket]).args(args))
    }

    fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "top"]).stdout
    }

    fn keys(&self, keys: &[&str]) {
        let out = self.tmux(&[&["send-keys", "-t", "top"][..], keys].concat());
        assert_eq!(out.code, 0, "{out:?}");
    }

    fn running(&self) -> bool {
        self.tmux(&["has-session", "-t", "top"]).code == 0
    }

    /// Waits (at most `limit`) until the screen satisfies `check`; returns it.
    async fn shows(&self, limit: Duration, what: &str, check: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if check(&screen) {
                return screen;
            }
            assert!(start.elapsed() < limit, "the live view did not show {what} within {limit:?}:\n{screen}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

fn waiters(screen: &str, name: &str) -> Option<String> {
    row(screen, name).map(|cells| cells[5].to_string())
}

async fn live_view(url: &str) {
    let (a, b) = (connect(url).await, connect(url).await);
    let pane = Pane::start(url, "tpl:");
    pane.shows(LIMIT, "its first screen", |s| s.contains("ferrolock top: names under \"tpl:\"") && s.contains("q quit")).await;

    // A holder appears, with its note.
    let lock = a.lock("tpl:job").unwrap();
    let held = lock.acquire().await.unwrap();
    lock.set_holder_info(Some(r#"{"host":"h1","pid":1,"cmd":"live-job"}"#)).await.unwrap();
    pane.shows(SHOWN_WITHIN, "the holder", |s| s.contains("h1 pid 1: live-job") && waiters(s, "tpl:job").as_deref() == Some("0")).await;

    // A waiter comes.
    let waiter = b.lock("tpl:job").unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap() });
    eventually(LIMIT, "the waiter to park", || async { b.waiting_acquires() == 1 }).await;
    pane.shows(SHOWN_WITHIN, "one waiter", |s| waiters(s, "tpl:job").as_deref() == Some("1")).await;

    // The holder goes: the waiter holds it now, nobody waits.
    held.release().await.unwrap();
    let second = tokio::time::timeout(LIMIT, waiting).await.unwrap().unwrap();
    pane.shows(SHOWN_WITHIN, "the first holder gone and no waiter", |s| {
        !s.contains("live-job") && waiters(s, "tpl:job").as_deref() == Some("0")
    })
    .await;

    // `/` filters (at once, on the key), Esc clears.
    pane.keys(&["/", "z", "z", "z", "Enter"]);
    pane.shows(SHOWN_WITHIN, "the filter", |s| s.contains("filtered by \"zzz\"") && row(s, "tpl:job").is_none()).await;
    pane.keys(&["Escape"]);
    pane.shows(SHOWN_WITHIN, "the filter cleared", |s| row(s, "tpl:job").is_some()).await;

    // Released: the lock is gone from the list.
    second.release().await.unwrap();
    pane.shows(SHOWN_WITHIN, "the lock gone", |s| row(s, "tpl:job").is_none() && s.contains("(0 objects)")).await;

    pane.keys(&["q"]);
    let start = Instant::now();
    while pane.running() {
        assert!(start.elapsed() < LIMIT, "q did not end top:\n{}", pane.capture());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_view_on_one_server() {
    let server = RedisServer::start();
    live_view(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_view_on_a_cluster() {
    let cluster = Cluster::start().await;
    live_view(&cluster.url()).await;
}
