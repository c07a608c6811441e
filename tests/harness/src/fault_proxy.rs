//! A TCP proxy in front of a server for network faults, used by the Rust tests directly
//! and by every binding's tests through the `fault-proxy` program (src/bin/fault-proxy.rs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A TCP proxy in front of a server for network faults: cut the connection right
/// after a request (the command runs, the reply never arrives), delay one reply,
/// add a one-way delay to everything, or hold all traffic (a blackhole: bytes are
/// kept, as TCP would retransmit them, and delivered in order when it ends); drop
/// every open connection, refuse new ones, or cut replies into pieces.
pub struct FaultProxy {
    pub port: u16,
    faults: Arc<Faults>,
    pub cuts: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

struct Faults {
    cut_marker: std::sync::Mutex<Option<Vec<u8>>>,
    drop_marker: std::sync::Mutex<Option<Vec<u8>>>,
    delay_marker: std::sync::Mutex<Option<(Vec<u8>, Duration)>>,
    one_way: std::sync::Mutex<Duration>,
    blackhole: tokio::sync::watch::Sender<bool>,
    /// Bumped by [`FaultProxy::reset`]: a connection opened under an older value ends.
    generation: tokio::sync::watch::Sender<u64>,
    refuse: tokio::sync::watch::Sender<bool>,
    /// Whether the port is open: follows `refuse`, once the accept loop has acted on it.
    listening: tokio::sync::watch::Sender<bool>,
    split: AtomicBool,
    open: AtomicU64,
    /// Open connections by the generation they were opened under.
    open_by_generation: std::sync::Mutex<std::collections::BTreeMap<u64, u64>>,
    accepted: AtomicU64,
}

impl FaultProxy {
    pub async fn start(upstream_port: u16) -> FaultProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Faults {
            cut_marker: std::sync::Mutex::new(None),
            drop_marker: std::sync::Mutex::new(None),
            delay_marker: std::sync::Mutex::new(None),
            one_way: std::sync::Mutex::new(Duration::ZERO),
            blackhole: tokio::sync::watch::channel(false).0,
            generation: tokio::sync::watch::channel(0).0,
            refuse: tokio::sync::watch::channel(false).0,
            listening: tokio::sync::watch::channel(true).0,
            open_by_generation: Default::default(),
            split: AtomicBool::new(false),
            open: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        });
        let cuts = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        tokio::spawn(accept_loop(listener, upstream_port, faults.clone(), cuts.clone(), stop.clone()));
        FaultProxy {
            port,
            faults,
            cuts,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The next request containing `marker` runs on the server but its connection is cut
    /// before the reply reaches the client.
    pub fn cut_next_reply_to(&self, marker: &[u8]) {
        *self.faults.cut_marker.lock().unwrap() = Some(marker.to_vec());
    }

    /// The next request containing `marker` never reaches the server (nor anything sent
    /// with it, or after it on that connection): its connection is closed instead, so
    /// the client cannot tell whether it ran. Counted in `cuts`.
    pub fn drop_next_request_to(&self, marker: &[u8]) {
        *self.faults.drop_marker.lock().unwrap() = Some(marker.to_vec());
    }

    /// The reply to the next request containing `marker` reaches the client `delay`
    /// late (the command runs at once; later replies on that connection queue behind it).
    pub fn delay_next_reply_to(&self, marker: &[u8], delay: Duration) {
        *self.faults.delay_marker.lock().unwrap() = Some((marker.to_vec(), delay));
    }

    /// Every byte, both ways, arrives `delay` after it was sent (0: no delay).
    pub fn set_one_way_delay(&self, delay: Duration) {
        *self.faults.one_way.lock().unwrap() = delay;
    }

    /// While on, nothing goes through either way; what was sent meanwhile is
    /// delivered, in order, when it is turned off.
    pub fn set_blackhole(&self, on: bool) {
        self.faults.blackhole.send_replace(on);
    }

    /// Closes every connection open now, both sides, dropping what was in flight;
    /// returns once they are closed.
    pub async fn reset(&self) {
        let mut generation = 0;
        self.faults.generation.send_modify(|g| {
            *g += 1;
            generation = *g;
        });
        while self.faults.open_by_generation.lock().unwrap().range(..generation).next().is_some() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// While on, the proxy's port is closed: connecting fails with "connection refused".
    /// Open connections are left alone. Turning it off listens again on the same port.
    /// Returns once the port is in the state asked for.
    pub async fn set_refuse(&self, on: bool) {
        self.faults.refuse.send_replace(on);
        let _ = self.faults.listening.subscribe().wait_for(|listening| *listening != on).await;
    }

    /// While on, each reply is written to the client in pieces cut at random points,
    /// a moment apart, so the client reads them separately.
    pub fn set_split(&self, on: bool) {
        self.faults.split.store(on, Ordering::SeqCst);
    }

    /// Connections open through the proxy now.
    pub fn open_connections(&self) -> u64 {
        self.faults.open.load(Ordering::SeqCst)
    }

    /// Connections accepted since the start.
    pub fn accepted_connections(&self) -> u64 {
        self.faults.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.faults.blackhole.send_replace(false);
        self.faults.refuse.send_replace(false);
    }
}

async fn accept_loop(
    mut listener: tokio::net::TcpListener,
    upstream_port: u16,
    faults: Arc<Faults>,
    cuts: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) {
    let port = listener.local_addr().unwrap().port();
    let mut refuse = faults.refuse.subscribe();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => Some(accepted),
            _ = refuse.wait_for(|on| *on) => None,
        };
        let Some(accepted) = accepted else {
            drop(listener); // the kernel now answers connects with RST
            faults.listening.send_replace(false);
            if refuse.wait_for(|on| !*on).await.is_err() {
                return;
            }
            listener = match rebind(port).await {
                Some(l) => l,
                None => return,
            };
            faults.listening.send_replace(true);
            continue;
        };
        let Ok((inbound, _)) = accepted else {
            return;
        };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let (f, c) = (faults.clone(), cuts.clone());
        tokio::spawn(async move {
            let Ok(outbound) = tokio::net::TcpStream::connect(("127.0.0.1", upstream_port)).await else {
                return;
            };
            let _ = inbound.set_nodelay(true); // pieces of a split reply leave one by one
            f.accepted.fetch_add(1, Ordering::SeqCst);
            f.open.fetch_add(1, Ordering::SeqCst);
            let mut generation = f.generation.subscribe();
            let born = *generation.borrow_and_update();
            *f.open_by_generation.lock().unwrap().entry(born).or_default() += 1;
            tokio::select! {
                _ = pump(inbound, outbound, f.clone(), c) => {}
                _ = generation.changed() => {}
            }
            f.open.fetch_sub(1, Ordering::SeqCst);
            let mut open = f.open_by_generation.lock().unwrap();
            let n = open.get_mut(&born).unwrap();
            *n -= 1;
            if *n == 0 {
                open.remove(&born);
            }
        });
    }
}

/// Listens again on the port given up by a refusal (SO_REUSEADDR, as TcpListener::bind).
async fn rebind(port: u16) -> Option<tokio::net::TcpListener> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => return Some(l),
            Err(e) if Instant::now() > deadline => {
                eprintln!("fault proxy: cannot listen on port {port} again: {e}");
                return None;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A small xorshift generator: the cut points need no quality, only variety.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// One direction of a proxied connection: bytes read are written out in order,
/// each no sooner than its `ready_at`, never while the blackhole is on; toward the
/// client, in random pieces while splitting is on.
async fn forward(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(Instant, Vec<u8>)>,
    mut out: tokio::net::tcp::OwnedWriteHalf,
    faults: Arc<Faults>,
    to_client: bool,
) {
    use tokio::io::AsyncWriteExt;
    let mut blackhole = faults.blackhole.subscribe();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut seed = (now.as_nanos() as u64 ^ (std::process::id() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
    while let Some((ready_at, bytes)) = rx.recv().await {
        tokio::time::sleep_until(ready_at.into()).await;
        if blackhole.wait_for(|on| !*on).await.is_err() {
            return;
        }
        if to_client && faults.split.load(Ordering::SeqCst) && bytes.len() > 1 {
            // One to three cut points, anywhere, even inside a length prefix or "\r\n".
            let mut cuts: Vec<usize> =
                (0..1 + next_random(&mut seed) % 3).map(|_| 1 + (next_random(&mut seed) as usize) % (bytes.len() - 1)).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut from = 0;
            for at in cuts.into_iter().chain([bytes.len()]) {
                if out.write_all(&bytes[from..at]).await.is_err() {
                    return;
                }
                from = at;
                if from < bytes.len() {
                    // Apart in time, or the client's read would join them again.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        } else if out.write_all(&bytes).await.is_err() {
            return;
        }
    }
}

async fn pump(
    inbound: tokio::net::TcpStream,
    outbound: tokio::net::TcpStream,
    faults: Arc<Faults>,
    cuts: Arc<AtomicU64>,
) {
    use tokio::io::AsyncReadExt;
    let (mut ci, co) = inbound.into_split();
    let (mut si, so) = outbound.into_split();
    let (to_server, server_rx) = tokio::sync::mpsc::unbounded_channel();
    let (to_client, client_rx) = tokio::sync::mpsc::unbounded_channel();
    let drop_reply = Arc::new(AtomicBool::new(false));
    let reply_delay = Arc::new(std::sync::Mutex::new(None::<Duration>));
    let upstream = {
        let (faults, drop_reply, reply_delay, cuts) = (faults.clone(), drop_reply.clone(), reply_delay.clone(), cuts.clone());
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match ci.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                {
                    let mut m = faults.drop_marker.lock().unwrap();
                    if m.as_ref().is_some_and(|needle| contains(chunk, needle)) {
                        *m = None;
                        cuts.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
                {
                    let mut m = faults.cut_marker.lock().unwrap();
                    if m.as_ref().is_some_and(|needle| contains(chunk, needle)) {
                        *m = None;
                        drop_reply.store(true, Ordering::SeqCst);
                    }
                }
                {
                    let mut m = faults.delay_marker.lock().unwrap();
                    if m.as_ref().is_some_and(|(needle, _)| contains(chunk, needle)) {
                        *reply_delay.lock().unwrap() = m.take().map(|(_, d)| d);
                    }
                }
                let ready_at = Instant::now() + *faults.one_way.lock().unwrap();
                if to_server.send((ready_at, chunk.to_vec())).is_err() {
                    return;
                }
                if drop_reply.load(Ordering::SeqCst) {
                    // Let the server run it and answer; the downstream half drops the answer.
                    std::future::pending::<()>().await;
                }
            }
        }
    };
    let downstream = {
        let faults = faults.clone();
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match si.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if drop_reply.load(Ordering::SeqCst) {
                    cuts.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                let extra = reply_delay.lock().unwrap().take().unwrap_or_default();
                let ready_at = Instant::now() + *faults.one_way.lock().unwrap() + extra;
                if to_client.send((ready_at, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    };
    // A client that closes its connection still gets what it sent delivered (as TCP
    // would); a cut or a server that closes ends it at once.
    tokio::select! {
        _ = async { tokio::join!(upstream, forward(server_rx, so, faults.clone(), false)) } => {}
        _ = async { tokio::join!(downstream, forward(client_rx, co, faults.clone(), true)) } => {}
    }
}
