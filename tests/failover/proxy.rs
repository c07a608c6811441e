//! The proxies every data node is reached through: each node announces its proxy's
//! port (replica-announce-port, the sentinels' monitor address, cluster-announce-port
//! and -bus-port), so clients, replicas, sentinels and cluster peers all connect
//! through them. A proxy tells peer connections from clients by what they send first,
//! so the harness can cut a master off from its replicas, sentinels and cluster peers
//! while its clients still reach it (the split-brain fault).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What a proxy stands in front of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// A data node's client port: clients, replicas (REPLCONF, PSYNC) and sentinels
    /// (`CLIENT SETNAME sentinel-...`).
    Data,
    /// A cluster node's bus port: only peers, each naming itself in its messages.
    Bus,
}

/// Who is cut off: the proxies of one node.
#[derive(Clone, Debug)]
pub struct Isolation {
    /// Its data proxy: peer connections to it are cut, clients' stay.
    pub data_proxy: u16,
    /// Its bus proxy (cluster): every connection to it is cut.
    pub bus_proxy: Option<u16>,
    /// Its cluster node id: its own connections to the other nodes' buses are cut.
    pub node_id: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Unknown,
    Peer,
}

struct Conn {
    proxy: u16,
    kind: Kind,
    class: Class,
    /// A bus connection's sender (the node id in its first message).
    sender: Option<String>,
    kill: Arc<Notify>,
}

#[derive(Default)]
struct Shared {
    conns: Mutex<HashMap<u64, Conn>>,
    isolation: Mutex<Option<Isolation>>,
    next_id: AtomicU64,
    cut: AtomicU64,
}

/// Every proxy of one topology, sharing one isolation state.
#[derive(Clone, Default)]
pub struct Proxies {
    shared: Arc<Shared>,
    upstreams: Arc<Mutex<HashMap<u16, Arc<AtomicU16>>>>,
}

impl Proxies {
    /// A proxy on a free loopback port in front of `upstream` (0: set later with
    /// [`Proxies::set_upstream`]); returns its port.
    pub async fn add(&self, kind: Kind, upstream: u16) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a proxy port");
        let port = listener.local_addr().unwrap().port();
        let target = Arc::new(AtomicU16::new(upstream));
        self.upstreams.lock().unwrap().insert(port, target.clone());
        tokio::spawn(accept(listener, port, kind, target, self.shared.clone()));
        port
    }

    /// Points the proxy on `port` at `upstream` from the next connection on.
    pub fn set_upstream(&self, port: u16, upstream: u16) {
        self.upstreams.lock().unwrap()[&port].store(upstream, Ordering::SeqCst);
    }

    /// Cuts the node off from its peers (`Some`), or lets them reconnect (`None`).
    /// Returns once every connection it cuts is closed.
    pub async fn isolate(&self, isolation: Option<Isolation>) {
        *self.shared.isolation.lock().unwrap() = isolation;
        let kills: Vec<Arc<Notify>> = {
            let iso = self.shared.isolation.lock().unwrap();
            let conns = self.shared.conns.lock().unwrap();
            conns.values().filter(|c| must_cut(c, iso.as_ref())).map(|c| c.kill.clone()).collect()
        };
        for k in &kills {
            k.notify_one();
        }
        // Closed once they left the registry.
        loop {
            let open = {
                let iso = self.shared.isolation.lock().unwrap();
                self.shared.conns.lock().unwrap().values().any(|c| must_cut(c, iso.as_ref()))
            };
            if !open {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Peer connections cut so far.
    pub fn cuts(&self) -> u64 {
        self.shared.cut.load(Ordering::Relaxed)
    }
}

fn must_cut(c: &Conn, iso: Option<&Isolation>) -> bool {
    let Some(iso) = iso else { return false };
    match c.kind {
        Kind::Data => c.proxy == iso.data_proxy && c.class == Class::Peer,
        Kind::Bus => Some(c.proxy) == iso.bus_proxy || (c.sender.is_some() && c.sender == iso.node_id),
    }
}

async fn accept(listener: TcpListener, port: u16, kind: Kind, target: Arc<AtomicU16>, shared: Arc<Shared>) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else { return };
        let upstream = target.load(Ordering::SeqCst);
        let shared = shared.clone();
        tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(("127.0.0.1", upstream)).await else { return };
            let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
            let kill = Arc::new(Notify::new());
            let conn = Conn { proxy: port, kind, class: Class::Unknown, sender: None, kill: kill.clone() };
            let cut_now = must_cut(&conn, shared.isolation.lock().unwrap().as_ref());
            shared.conns.lock().unwrap().insert(id, conn);
            if !cut_now {
                pump(inbound, outbound, id, kind, &shared, &kill).await;
            } else {
                shared.cut.fetch_add(1, Ordering::Relaxed);
            }
            shared.conns.lock().unwrap().remove(&id);
        });
    }
}

/// Copies both ways until either side closes or the connection is cut; classifies the
/// connection from the first bytes its opener sends.
async fn pump(inbound: TcpStream, outbound: TcpStream, id: u64, kind: Kind, shared: &Shared, kill: &Notify) {
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (mut ci, mut co) = inbound.into_split();
    let (mut si, mut so) = outbound.into_split();
    let up = async {
        let mut buf = vec![0u8; 16 * 1024];
        let mut head: Vec<u8> = Vec::new();
        let mut classifying = true;
        loop {
            let n = match ci.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if classifying {
                head.extend_from_slice(&buf[..n]);
                let (class, sender) = classify(kind, &head);
                if class == Class::Peer || head.len() >= 4096 {
                    classifying = false;
                    let cut = {
                        let iso = shared.isolation.lock().unwrap();
                        let mut conns = shared.conns.lock().unwrap();
                        let c = conns.get_mut(&id).expect("registered");
                        c.class = class;
                        c.sender = sender;
                        must_cut(c, iso.as_ref())
                    };
                    if cut {
                        shared.cut.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
            }
            if so.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match si.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if co.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
        _ = kill.notified() => { shared.cut.fetch_add(1, Ordering::Relaxed); }
    }
}

/// A data connection is a peer's when it replicates (REPLCONF, PSYNC, SYNC) or names
/// itself a sentinel; a bus connection's first message (header "RCmb") names its sender
/// in the 40 bytes at offset 40 (struct clusterMsg: sig, totlen, ver, port, type,
/// count, currentEpoch, configEpoch, offset, sender).
fn classify(kind: Kind, head: &[u8]) -> (Class, Option<String>) {
    match kind {
        Kind::Data => {
            let upper = head.to_ascii_uppercase();
            let has = |needle: &[u8]| upper.windows(needle.len()).any(|w| w == needle);
            let peer = has(b"REPLCONF") || has(b"PSYNC") || has(b"\r\nSYNC\r\n") || (has(b"SETNAME") && has(b"SENTINEL-"));
            (if peer { Class::Peer } else { Class::Unknown }, None)
        }
        Kind::Bus if head.len() >= 80 && head.starts_with(b"RCmb") => {
            (Class::Peer, Some(String::from_utf8_lossy(&head[40..80]).into_owned()))
        }
        Kind::Bus => (Class::Unknown, None),
    }
}
