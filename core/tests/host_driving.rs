//! A driving host (`HostLink::driving`, core/src/transport/host/scope.rs): a thread
//! that blocks in its calls and does their I/O itself, as Python's blocking calls do.
//! A client with no link for that thread makes one on the thread's first call (the
//! call itself keeps the client's connection); one that never came up is replaced
//! only after a pause that doubles; closing the client closes every thread's link.

mod common;

use std::future::Future;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::TcpStream;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Client, HostAddress, HostLink};

struct Flag;
impl Wake for Flag {
    fn wake(self: Arc<Self>) {}
}

/// A driving host: its thread, the links core gave it and their sockets.
struct Driver {
    runtime: tokio::runtime::Handle,
    links: Vec<(HostLink, TcpStream)>,
    /// False: links core makes are closed at once, as if the server could not be reached.
    connect: bool,
}

impl Driver {
    fn new(runtime: tokio::runtime::Handle) -> Driver {
        Driver {
            runtime,
            links: Vec::new(),
            connect: true,
        }
    }

    /// Runs `call` to completion on this thread, serving links; gives the links made meanwhile.
    fn run<F: Future>(&mut self, call: F) -> (F::Output, Vec<HostLink>) {
        let _runtime = self.runtime.enter();
        let waker = Waker::from(Arc::new(Flag));
        let mut call = pin!(call);
        let give_up = Instant::now() + Duration::from_secs(20);
        let mut made_all = Vec::new();
        loop {
            assert!(Instant::now() < give_up, "the call did not finish");
            let (poll, made) =
                HostLink::driving(|| call.as_mut().poll(&mut Context::from_waker(&waker)));
            for link in made {
                made_all.push(link.clone());
                if !self.connect {
                    link.close("could not connect (test)");
                    continue;
                }
                let HostAddress::Tcp { host, port } = link.address().clone() else {
                    panic!("a TCP address")
                };
                let socket = TcpStream::connect((host.as_str(), port)).unwrap();
                socket
                    .set_read_timeout(Some(Duration::from_millis(1)))
                    .unwrap();
                self.links.push((link, socket));
            }
            self.links.retain(|(link, _)| link.closed().is_none());
            let mut buf = [0u8; 4096];
            for (link, socket) in &mut self.links {
                let out = link.take_output();
                if !out.is_empty() {
                    socket.write_all(&out).unwrap();
                }
                match socket.read(&mut buf) {
                    Ok(0) => link.close("the server closed the connection"),
                    Ok(n) => link.feed(&buf[..n]),
                    Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
                    Err(e) => link.close(&e.to_string()),
                }
            }
            if let Poll::Ready(out) = poll {
                return (out, made_all);
            }
            if self.links.is_empty() {
                std::thread::sleep(Duration::from_millis(1)); // nothing to read: the call is on core's threads
            }
        }
    }

    /// Calls until the thread's link takes requests: its handshake, queued when it
    /// was made, was answered.
    fn until_up(&mut self, client: &Client) -> HostLink {
        let lock = client.lock("driving:probe").unwrap();
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < give_up, "no link came up");
            self.run(lock.is_locked()).0.unwrap();
            if let Some((link, _)) = self
                .links
                .iter()
                .find(|(link, _)| link.in_flight() == 0 && link.closed().is_none())
            {
                return link.clone();
            }
        }
    }
}

/// The last command of the connection from local port `port`.
async fn last_command(raw: &mut redis::aio::MultiplexedConnection, port: u16) -> String {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(raw)
        .await
        .unwrap();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" addr=127.0.0.1:{port} ")))
        .unwrap_or_default();
    line.split(' ')
        .find_map(|f| f.strip_prefix("cmd="))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_driving_thread_gets_its_own_link_on_its_first_call() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await;
    let (mut ports, mut drivers) = (Vec::new(), Vec::new());
    for t in 0..2 {
        let (client, runtime) = (client.clone(), tokio::runtime::Handle::current());
        // Threads of their own: a pooled blocking thread may be one that had a link before.
        let thread = std::thread::spawn(move || {
            let mut driver = Driver::new(runtime);
            let lock = client.lock(format!("driving:own:{t}")).unwrap();
            // The first call makes the thread's link and goes over the client's connection.
            let (hold, made) = driver.run(lock.acquire_hold(AcquireOptions::default()));
            assert_eq!(hold.unwrap().unwrap().hold_count(), 1);
            assert_eq!(
                driver.run(lock.release()).0.unwrap(),
                ferrolock::Released::Unlocked
            );
            driver.until_up(&client);
            let (hold, made_again) = driver.run(lock.acquire_hold(AcquireOptions::default()));
            assert!(made_again.is_empty(), "one link per thread");
            assert_eq!(hold.unwrap().unwrap().hold_count(), 1);
            // The driver (and its socket) outlives the call, as a thread's connection does.
            (
                driver.links[0].1.local_addr().unwrap().port(),
                made.len(),
                driver,
            )
        });
        let (port, made_first, driver) =
            tokio::task::spawn_blocking(move || thread.join().unwrap())
                .await
                .unwrap();
        assert_eq!(made_first, 1);
        let mut raw = server.raw().await;
        assert_eq!(
            last_command(&mut raw, port).await,
            "evalsha",
            "thread {t}'s acquire went over its link"
        );
        ports.push(port);
        drivers.push(driver);
    }
    assert_ne!(ports[0], ports[1]);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_that_never_came_up_is_replaced_after_a_doubling_pause_one_that_did_at_once() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut driver = Driver::new(runtime);
        let lock = client.lock("driving:pause").unwrap();
        driver.connect = false;
        // Each new link is closed unconnected; the next comes no sooner than the pause.
        let mut closed_at = None;
        let mut pauses = Vec::new();
        while pauses.len() < 3 {
            let (locked, made) = driver.run(lock.is_locked());
            assert!(
                !locked.unwrap(),
                "calls keep working on the client's connection"
            );
            if made.is_empty() {
                continue;
            }
            assert_eq!(made.len(), 1);
            let now = Instant::now();
            if let Some(at) = closed_at {
                pauses.push(now - at);
            }
            closed_at = Some(now);
        }
        for (pause, least) in pauses.iter().zip([100, 200, 400]) {
            assert!(*pause >= Duration::from_millis(least), "pauses {pauses:?}");
        }
        // A link that came up and then closed is replaced on the next call.
        driver.connect = true;
        let link = driver.until_up(&client);
        link.close("the server closed the connection");
        let (_, made) = driver.run(lock.is_locked());
        assert_eq!(made.len(), 1, "replaced at once");
        shut_down(&client);
    })
    .await
    .unwrap();
}

/// Shuts `client` down from a blocking thread.
fn shut_down(client: &Client) {
    tokio::runtime::Handle::current()
        .block_on(client.shutdown())
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_closes_every_threads_link_and_tells_its_host() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await;
    let runtime = tokio::runtime::Handle::current();
    let told = Arc::new(AtomicBool::new(false));
    let (link, _driver) = {
        let (client, told) = (client.clone(), told.clone());
        tokio::task::spawn_blocking(move || {
            let mut driver = Driver::new(runtime);
            let link = driver.until_up(&client);
            link.on_close(move || told.store(true, Ordering::SeqCst));
            (link, driver)
        })
        .await
        .unwrap()
    };
    assert!(!told.load(Ordering::SeqCst));
    client.shutdown().await.unwrap();
    assert!(told.load(Ordering::SeqCst), "the host was told");
    assert_eq!(link.closed().as_deref(), Some("the client closed"));
}
