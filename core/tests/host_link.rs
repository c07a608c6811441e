//! The host link (core/src/transport/host.rs): a command connection whose socket an
//! event-loop host owns. Here a plain thread plays the host (as Node's JS thread
//! does): it polls a call, writes the link's output to its socket and feeds back
//! what it reads. Calls polled there go over that socket; calls polled anywhere
//! else, and every call once the link is closed, keep the client's own connection.

mod common;

use std::future::Future;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::TcpStream;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Client, HostAddress, HostLink, Released};

/// A host: one thread, one socket, polling a call and moving its bytes.
struct Host {
    link: HostLink,
    socket: TcpStream,
    runtime: tokio::runtime::Handle,
    /// False: the host stops reading (a stalled server, as far as the link can tell).
    reading: bool,
}

struct Flag;
impl Wake for Flag {
    fn wake(self: Arc<Self>) {}
}

impl Host {
    /// Opens the client's host link on this thread and connects its socket.
    fn open(client: &Client, runtime: tokio::runtime::Handle) -> Host {
        let link = client.host_link().unwrap().expect("a host link to one server over TCP");
        let HostAddress::Tcp { host, port } = link.address().clone() else { panic!("a TCP address") };
        let socket = TcpStream::connect((host.as_str(), port)).unwrap();
        // The host's event loop, played by short blocking reads.
        socket.set_read_timeout(Some(Duration::from_millis(2))).unwrap();
        Host { link, socket, runtime, reading: true }
    }

    /// Writes the handshake and reads its replies: the link then takes requests (or
    /// closed, if the server refused it).
    fn handshake(&mut self) {
        self.settle();
    }

    /// Writes what waits and reads until every request of the link is answered.
    fn settle(&mut self) {
        self.socket.write_all(&self.link.take_output()).unwrap();
        let mut buf = [0u8; 4096];
        let give_up = Instant::now() + Duration::from_secs(10);
        while self.link.in_flight() > 0 && self.link.closed().is_none() {
            assert!(Instant::now() < give_up, "no reply");
            match self.socket.read(&mut buf) {
                Ok(0) => self.link.close("the server closed the connection"),
                Ok(n) => self.link.feed(&buf[..n]),
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn local_port(&self) -> u16 {
        self.socket.local_addr().unwrap().port()
    }

    /// Runs `call` to completion on this thread, as an event loop would.
    fn run<F: Future>(&mut self, call: F) -> F::Output {
        let _runtime = self.runtime.enter();
        let waker = Waker::from(Arc::new(Flag));
        let mut call = pin!(call);
        let mut buf = [0u8; 4096];
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < give_up, "the call did not finish");
            if let Poll::Ready(out) = HostLink::polling(|| call.as_mut().poll(&mut Context::from_waker(&waker))) {
                return out;
            }
            let out = self.link.take_output();
            if !out.is_empty() {
                self.socket.write_all(&out).unwrap();
            }
            if !self.reading {
                self.link.expire_overdue();
                std::thread::yield_now();
                continue;
            }
            match self.socket.read(&mut buf) {
                Ok(0) => self.link.close("the server closed the connection"),
                Ok(n) => self.link.feed(&buf[..n]),
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
                Err(e) => self.link.close(&e.to_string()),
            }
        }
    }
}

/// `CLIENT LIST` fields of the connection from local port `port`.
async fn connection_from(raw: &mut redis::aio::MultiplexedConnection, port: u16) -> String {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(raw).await.unwrap();
    list.lines().find(|l| l.contains(&format!(" addr=127.0.0.1:{port} "))).unwrap_or_default().to_string()
}

/// The last command of every connection named like `client`'s, but the one from `except`.
async fn others_commands(raw: &mut redis::aio::MultiplexedConnection, client: &Client, except: u16) -> Vec<String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(raw).await.unwrap();
    list.lines()
        .filter(|l| l.contains(&format!(" name=ferrolock:{} ", client.id())) && !l.contains(&format!(":{except} ")))
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("cmd=")).map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_polled_on_the_host_thread_send_on_its_link_with_auth_and_db() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let url = format!("redis://:s3cret@127.0.0.1:{}/2", server.port);
    let client = builder(&url, 30_000).connect().await.unwrap();
    let lock = client.lock("host:a").unwrap();
    // The host (and its socket) outlives the call, as a host's connection does. Until
    // its handshake is answered, calls keep the client's connection (HostThread::open).
    let host = HostThread::open(&client);
    let (port, hold_count) = {
        let lock = lock.clone();
        host.with(move |host| {
            let hold = host.run(lock.acquire_hold(AcquireOptions::default())).unwrap().unwrap();
            (host.local_port(), hold.hold_count())
        })
        .await
    };
    assert_eq!(hold_count, 1);
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let seen = connection_from(&mut raw, port).await;
    assert!(seen.contains(&format!(" name=ferrolock:{} ", client.id())), "the handshake named it: {seen}");
    assert!(seen.contains(" db=2 "), "the handshake selected the URL's database: {seen}");
    assert!(seen.contains(" cmd=evalsha "), "the acquire's script went over the host's socket: {seen}");
    assert!(!others_commands(&mut raw, &client, port).await.iter().any(|c| c == "evalsha"));
    let count: Option<i64> = redis::cmd("HGET").arg("host:a").arg(lock.owner()).query_async(&mut raw).await.unwrap();
    assert_eq!(count, Some(1));
    // A server that forgot the scripts answers NOSCRIPT on the link: loaded there, sent again.
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    let released = {
        let lock = lock.clone();
        host.with(move |host| host.run(lock.release()).unwrap()).await
    };
    assert_eq!(released, Released::Unlocked);
    assert!(connection_from(&mut raw, port).await.contains(" cmd=evalsha "), "the release went over the link too");
    assert_eq!(redis::cmd("EXISTS").arg("host:a").query_async::<i64>(&mut raw).await.unwrap(), 0);
    assert!(!others_commands(&mut raw, &client, port).await.iter().any(|c| c == "evalsha"), "nor on another connection");
    host.with(|host| host.link.close("test over")).await;
    client.shutdown().await.unwrap();
}

async fn latch_count(raw: &mut redis::aio::MultiplexedConnection) -> usize {
    let keys: Vec<String> = redis::cmd("KEYS").arg("redisson_unlock_latch:*").query_async(raw).await.unwrap();
    keys.len()
}

/// A host on a thread of its own, as an event loop is: a link serves only calls polled
/// on the thread that opened it, and `spawn_blocking` may run each closure on another
/// pooled thread (whose calls then quietly keep the client's connection).
struct HostThread {
    jobs: Option<std::sync::mpsc::Sender<Box<dyn FnOnce(&mut Host) + Send>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HostThread {
    /// Opens `client`'s host link on a new thread and answers its handshake.
    fn open(client: &Client) -> HostThread {
        let (client, runtime) = (client.clone(), tokio::runtime::Handle::current());
        let (jobs, queued) = std::sync::mpsc::channel::<Box<dyn FnOnce(&mut Host) + Send>>();
        let thread = std::thread::spawn(move || {
            let mut host = Host::open(&client, runtime);
            host.handshake();
            for job in queued {
                job(&mut host);
            }
        });
        HostThread { jobs: Some(jobs), thread: Some(thread) }
    }

    /// Runs `job` on the host's thread; waits for it without blocking the runtime.
    async fn with<T: Send + 'static>(&self, job: impl FnOnce(&mut Host) -> T + Send + 'static) -> T {
        let (done, result) = tokio::sync::oneshot::channel();
        let job = Box::new(move |host: &mut Host| {
            let _ = done.send(job(host));
        });
        self.jobs.as_ref().unwrap().send(job).expect("the host thread is gone");
        result.await.expect("the host thread panicked (its message is above)")
    }
}

impl Drop for HostThread {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A job of `cycles` acquire+release cycles of `lock`, for [`HostThread::with`].
fn cycles(lock: &ferrolock::Lock, cycles: usize) -> impl FnOnce(&mut Host) + Send + 'static {
    let lock = lock.clone();
    move |host: &mut Host| {
        for _ in 0..cycles {
            host.run(lock.acquire_hold(AcquireOptions::default())).unwrap().unwrap();
            assert_eq!(host.run(lock.release()).unwrap(), Released::Unlocked);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_polled_on_the_host_delete_their_latches_on_its_link_in_batches() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await;
    let lock = client.lock("host:latches").unwrap();
    let mut raw = server.raw().await;
    let host = HostThread::open(&client);
    // 40 releases: the first 32 latches go in one UNLINK on the link (answered before
    // the later calls' replies), 8 stay gathered until the host's next check.
    host.with(cycles(&lock, 40)).await;
    assert_eq!(latch_count(&mut raw).await, 8, "one UNLINK of 32 went over the link, the rest is gathered");
    let port = host
        .with(|host| {
            assert!(!host.link.expire_overdue(), "nothing is overdue");
            host.settle();
            host.local_port()
        })
        .await;
    assert_eq!(latch_count(&mut raw).await, 0, "the host's check sent the rest");
    assert!(connection_from(&mut raw, port).await.contains(" cmd=unlink "), "on the host's socket");
    // Latches still gathered when the client shuts down are deleted by its sweeper.
    host.with(cycles(&lock, 3)).await;
    assert_eq!(latch_count(&mut raw).await, 3);
    client.shutdown().await.unwrap();
    assert_eq!(latch_count(&mut raw).await, 0, "the client's sweeper deleted what the link had gathered");
    drop(host);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_polled_elsewhere_keep_the_clients_connection_and_a_closed_link_is_left() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await;
    let runtime = tokio::runtime::Handle::current();
    // The host opens its link (answered handshake: it takes requests), and then
    // neither polls nor reads: a call that went over it would never finish.
    type Job = Box<dyn FnOnce() + Send>;
    let (opened_tx, opened_rx) = tokio::sync::oneshot::channel::<HostLink>();
    let (call_on_host, jobs) = std::sync::mpsc::channel::<Job>();
    let host_thread = {
        let client = client.clone();
        std::thread::spawn(move || {
            let mut host = Host::open(&client, runtime);
            host.handshake();
            opened_tx.send(host.link.clone()).ok().unwrap();
            // Runs what it is asked to, outside its polling; ends when the channel closes.
            for job in jobs {
                job();
            }
            drop(host);
        })
    };
    let link = opened_rx.await.unwrap();
    let lock = client.lock("host:elsewhere").unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(5), lock.acquire()).await.expect("not sent on the idle link").unwrap();
    guard.release().await.unwrap();
    // On the host's thread too, a call polled outside the host's polling keeps the
    // client's connection (e.g. a blocking shutdown while the host exits).
    let on_host_thread = {
        let lock = lock.clone();
        let runtime = tokio::runtime::Handle::current();
        let (tx, rx) = tokio::sync::oneshot::channel();
        call_on_host.send(Box::new(move || {
            let held = runtime.block_on(lock.acquire_hold(AcquireOptions::default())).unwrap().unwrap();
            let _ = tx.send(held.hold_count());
        })).unwrap();
        tokio::time::timeout(Duration::from_secs(5), rx).await.expect("not sent on the idle link").unwrap()
    };
    assert_eq!(on_host_thread, 1);
    assert_eq!(lock.release().await.unwrap(), Released::Unlocked);
    assert_eq!(link.in_flight(), 0, "nothing was sent on the host's link");
    assert!(link.closed().is_none());
    drop(call_on_host);
    host_thread.join().unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overdue_reply_closes_the_link_and_the_call_settles_once_on_the_clients_connection() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await; // response timeout 500 ms
    let runtime = tokio::runtime::Handle::current();
    let lock = client.lock("host:late").unwrap();
    let (closed, count) = {
        let (client, lock) = (client.clone(), lock.clone());
        tokio::task::spawn_blocking(move || {
            let mut host = Host::open(&client, runtime);
            host.handshake();
            // From now on the host never reads: the acquire's reply stays in the socket.
            host.reading = false;
            let hold = host.run(lock.acquire_hold(AcquireOptions::default())).unwrap().unwrap();
            (host.link.closed(), hold.hold_count())
        })
        .await
        .unwrap()
    };
    let reason = closed.expect("the overdue reply closed the link");
    assert!(reason.contains("overdue"), "{reason}");
    // The script ran once on the server; the read-back on the client's connection saw it.
    assert_eq!(count, 1);
    let mut raw = server.raw().await;
    let field: Option<i64> = redis::cmd("HGET").arg("host:late").arg(lock.owner()).query_async(&mut raw).await.unwrap();
    assert_eq!(field, Some(1));
    assert_eq!(lock.release().await.unwrap(), Released::Unlocked);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handshake_closes_the_link_and_calls_keep_working() {
    let server = RedisServer::start_with(&["--requirepass", "first"]);
    let url = format!("redis://:first@127.0.0.1:{}", server.port);
    let client = builder(&url, 30_000).connect().await.unwrap();
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    client.lock("host:warm").unwrap().acquire().await.unwrap().release().await.unwrap();
    // The client's own connection is authenticated already; a new one is refused.
    let _: () = redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("second").query_async(&mut raw).await.unwrap();
    let runtime = tokio::runtime::Handle::current();
    let lock = client.lock("host:refused").unwrap();
    let (closed, hold) = {
        let (client, lock) = (client.clone(), lock.clone());
        tokio::task::spawn_blocking(move || {
            let mut host = Host::open(&client, runtime);
            host.handshake();
            let hold = host.run(lock.acquire_hold(AcquireOptions::default())).unwrap();
            (host.link.closed(), hold.map(|h| h.hold_count()))
        })
        .await
        .unwrap()
    };
    let reason = closed.unwrap();
    assert!(reason.contains("handshake was refused"), "{reason}");
    assert!(!reason.contains("first") && !reason.contains("second"), "no password in: {reason}");
    assert_eq!(hold, Some(1));
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_clients_have_no_host_link() {
    let server = RedisServer::start_tls("tls-secret");
    let url = format!("rediss://:tls-secret@127.0.0.1:{}/#insecure", server.port);
    let client = Client::connect(url).await.unwrap();
    assert!(client.host_link().unwrap().is_none());
    client.shutdown().await.unwrap();
}
