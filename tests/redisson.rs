//! Interop with real Redisson 4.7.0 (Java, from Maven Central; built by
//! tests/redisson/build.sh, which scripts/build.sh runs): Redisson's
//! RedissonRedLock and RedissonMultiLock over the same names and servers exclude
//! ferrolock's multi-locks, and the other way round.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use ferrolock::{AcquireOptions, Client, Lock, Quorum};
use ferrolock_harness::{repo_root, RedisServer};

/// The Java driver (tests/redisson/Interop.java), one RedissonClient per server.
struct Redisson {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Redisson {
    fn start(urls: &[String]) -> Redisson {
        let dir = repo_root().join("tests/redisson/target");
        assert!(
            dir.join("classes/Interop.class").exists(),
            "the Redisson driver is not built: run tests/redisson/build.sh (scripts/build.sh does)"
        );
        let classpath = format!("{}:{}/*", dir.join("classes").display(), dir.join("lib").display());
        let mut child = Command::new("java")
            .args(["-cp", &classpath, "Interop"])
            .args(urls)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("java runs (tests/redisson/build.sh installs a JDK)");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut redisson = Redisson { child, stdin, stdout };
        assert_eq!(redisson.line(), "ready");
        redisson
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    fn call(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.line()
    }
}

impl Drop for Redisson {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn multi(urls: &[String], name: &str, quorum: Quorum) -> Lock {
    let mut members = Vec::new();
    for url in urls {
        members.push(Client::connect(url.clone()).await.unwrap().lock(name).unwrap());
    }
    Lock::multi(members, quorum).unwrap()
}

async fn exclusion(kind: &str, quorum: Quorum) {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let mut java = tokio::task::block_in_place(|| Redisson::start(&urls));
    let name = format!("interop:{kind}");
    let ours = multi(&urls, &name, quorum).await;

    // Redisson holds: ferrolock cannot get it, then gets it once Redisson releases.
    assert_eq!(tokio::task::block_in_place(|| java.call(&format!("{kind} {name} 0"))), "ok");
    assert!(ours.try_acquire().await.unwrap().is_none(), "Redisson's {kind} excludes ferrolock's");
    let waiter = tokio::spawn({
        let ours = ours.clone();
        async move { ours.acquire_with(AcquireOptions::wait(Duration::from_secs(20))).await.map(|g| g.map(|g| g.into_hold())) }
    });
    assert_eq!(tokio::task::block_in_place(|| java.call("unlock")), "ok");
    let hold = waiter.await.unwrap().unwrap().expect("ferrolock acquires after Redisson's release");
    drop(hold);

    // ferrolock holds: Redisson cannot get it, then can once ferrolock releases.
    assert_eq!(tokio::task::block_in_place(|| java.call(&format!("{kind} {name} 0"))), "busy");
    ours.release().await.unwrap();
    assert_eq!(tokio::task::block_in_place(|| java.call(&format!("{kind} {name} 5000"))), "ok");
    assert_eq!(tokio::task::block_in_place(|| java.call("unlock")), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_redlock_and_ferrolock_redlock_exclude_each_other() {
    exclusion("redlock", Quorum::Majority).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_multilock_and_ferrolock_multilock_exclude_each_other() {
    exclusion("multilock", Quorum::All).await;
}
