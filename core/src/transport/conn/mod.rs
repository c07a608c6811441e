//! The command connection: one multiplexed connection (to the server, or to the
//! master the sentinels name) or one cluster connection, replaced by a fresh one
//! whenever it breaks or a request on it times out.
//!
//! redis-rs's `ConnectionManager` reconnects only after an I/O error, keeps a
//! stalled connection after a timeout (every later command queues behind the stalled
//! reply) and has no hook to run commands on a new connection. This one does what a
//! lock needs: a timed-out request retires its connection, so read-backs after a
//! lost reply never wait behind it; and each handle carries its own request
//! timeout, so a renewal can stay in flight until its hold's deadline while other
//! calls keep the client's response timeout. Under Sentinel, "fresh" means asking
//! the sentinels again, so commands follow a failover; a cluster connection
//! follows MOVED/ASK itself.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt, Shared};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use super::command::{evalsha_of, Command};
use super::failover::Failovers;
use super::host::HostLink;
use super::replicas::{self, Facts, Known};
use super::Target;
use crate::config::Config;
use crate::metrics::Recorder;

mod acked;
mod connect;
mod hosts;
mod loading;
mod masters;
mod readonly;

pub(crate) use acked::{Acked, Unconfirmed};

use connect::connect;
use hosts::HostEntry;

/// One live connection of any topology.
#[derive(Clone)]
enum Link {
    Node(MultiplexedConnection),
    Cluster(ClusterConnection),
}

/// A connection, what the acknowledgement knows of its master (Sentinel) and the
/// scripts its server lacks.
type Connecting = Shared<BoxFuture<'static, RedisResult<(Link, Option<Facts>, u64)>>>;

enum Slot {
    Idle,
    Connecting(Connecting, u64),
    Ready(Link, u64),
}

struct Inner {
    target: Arc<Target>,
    /// CLIENT SETNAME of every connection made.
    name: Arc<str>,
    metrics: Arc<Recorder>,
    /// A connection was made before: the next one is a reconnect.
    connected: std::sync::atomic::AtomicBool,
    connect_timeout: Duration,
    db: i64,
    /// What the replica acknowledgement knows of the masters (replicas.rs).
    known: Known,
    /// Where noticed failovers are told (a reconnect onto another master is one).
    failovers: Arc<Failovers>,
    /// The current connection (or the attempt to make one) and its epoch: a failure
    /// retires only the connection it happened on.
    slot: Mutex<Slot>,
    epochs: std::sync::atomic::AtomicU64,
    /// The scripts the current connection's server lacks (loading.rs).
    missing_scripts: std::sync::atomic::AtomicU64,
    /// The hosts' connections (host/), one per host thread: a call polled on a
    /// host's thread uses that thread's.
    hosts: std::sync::RwLock<Vec<HostEntry>>,
}

impl Inner {
    fn close_hosts(&self) {
        let hosts = std::mem::take(&mut *self.hosts.write().unwrap_or_else(|p| p.into_inner()));
        for entry in hosts {
            entry.link.close("the client closed");
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.close_hosts();
    }
}

/// A handle on the client's command connection with its own request timeout.
/// Cheap to clone; every clone shares the one connection.
#[derive(Clone)]
pub(crate) struct Conn {
    inner: Arc<Inner>,
    timeout: Duration,
    /// A request of this handle that times out retires the connection (see [`Conn::best_effort`]).
    retires: bool,
}

impl Conn {
    pub(super) fn new(
        target: Arc<Target>,
        db: i64,
        config: &Config,
        name: Arc<str>,
        metrics: Arc<Recorder>,
        failovers: Arc<Failovers>,
    ) -> Conn {
        let inner = Inner {
            target,
            name,
            metrics,
            connected: Default::default(),
            connect_timeout: config.connect_timeout,
            db,
            known: Known::default(),
            failovers,
            slot: Mutex::new(Slot::Idle),
            epochs: std::sync::atomic::AtomicU64::new(0),
            missing_scripts: Default::default(),
            hosts: Default::default(),
        };
        Conn { inner: Arc::new(inner), timeout: config.response_timeout, retires: true }
    }

    /// The same connection with another request timeout (a renewal may wait until
    /// its hold's deadline).
    pub fn with_timeout(&self, timeout: Duration) -> Conn {
        Conn { inner: self.inner.clone(), timeout: timeout.max(Duration::from_millis(1)), retires: self.retires }
    }

    /// The same connection for requests whose answer nothing waits on (holder notes,
    /// reply latches' deletion): one of them timing out does not retire it. Over a
    /// link slower than the response timeout, such a timeout says nothing of a stalled
    /// connection, and a retired one made the next renewal wait for a new one's set-up
    /// (three round-trips: its holds were lost at their deadline).
    pub fn best_effort(&self) -> Conn {
        Conn { retires: false, ..self.clone() }
    }

    /// Connects first if the call would wait for a connection's set-up: a call that
    /// counts a lease from when it was sent takes its send time after this, not
    /// before the set-up's round-trips (three on a new connection). A call this
    /// thread's host link carries needs nothing once the client asked which scripts
    /// the server lacks (loading.rs). A failure here sent nothing.
    pub async fn ready(&self) -> RedisResult<()> {
        if matches!(&*self.inner.slot.lock().unwrap(), Slot::Ready(..)) {
            return Ok(());
        }
        if self.inner.connected.load(Ordering::Relaxed) && self.host_here().is_some() {
            return Ok(());
        }
        match self.current().await {
            // The host link may still carry the call (as in `claim_missing`).
            Err(e) if self.host_here().is_none() => Err(e),
            _ => Ok(()),
        }
    }

    /// True while a connection is made and not retired, or this thread's host link
    /// to the server is open.
    pub fn is_ready(&self) -> bool {
        matches!(&*self.inner.slot.lock().unwrap(), Slot::Ready(..)) || self.host_open_here()
    }

    async fn current(&self) -> RedisResult<(Link, u64)> {
        let (attempt, epoch) = {
            let mut slot = self.inner.slot.lock().unwrap();
            match &*slot {
                Slot::Ready(conn, epoch) => return Ok((conn.clone(), *epoch)),
                Slot::Connecting(attempt, epoch) => (attempt.clone(), *epoch),
                Slot::Idle => {
                    let epoch = self.inner.epochs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    let attempt = connect(self.inner.target.clone(), self.inner.name.clone(), self.inner.connect_timeout)
                        .boxed()
                        .shared();
                    *slot = Slot::Connecting(attempt.clone(), epoch);
                    (attempt, epoch)
                }
            }
        };
        let result = attempt.await;
        let mut slot = self.inner.slot.lock().unwrap();
        let current = matches!(&*slot, Slot::Connecting(_, e) if *e == epoch);
        match result {
            Ok((conn, facts, missing)) => {
                if current {
                    self.inner.known.clear();
                    if let Some(facts) = facts {
                        self.inner.known.set(None, facts);
                    }
                    self.inner.missing_scripts.store(missing, Ordering::Relaxed);
                    *slot = Slot::Ready(conn.clone(), epoch);
                    if self.inner.connected.swap(true, Ordering::Relaxed) {
                        self.inner.metrics.reconnected();
                        tracing::info!("command connection made again");
                    }
                }
                Ok((conn, epoch))
            }
            Err(e) => {
                if current {
                    *slot = Slot::Idle;
                }
                Err(e)
            }
        }
    }

    /// Retires the connection of `epoch` (broken or stalled): the next request
    /// makes a fresh one. Requests still in flight on it finish or time out there.
    fn retire(&self, epoch: u64) {
        let mut slot = self.inner.slot.lock().unwrap();
        if matches!(&*slot, Slot::Ready(_, e) if *e == epoch) {
            tracing::info!("the command connection failed or stalled; the next request reconnects");
            *slot = Slot::Idle;
        }
    }

    /// Retires the current connection whatever its epoch (the master it is on was
    /// failed over: `+switch-master`, a changed slot map), or the attempt at one under
    /// way (it may be waiting on the stopped old master), and forgets what it knew of
    /// the masters: the next request connects afresh.
    pub fn retire_now(&self) {
        let mut slot = self.inner.slot.lock().unwrap();
        if !matches!(&*slot, Slot::Idle) {
            *slot = Slot::Idle;
        }
        drop(slot);
        self.inner.known.clear();
    }

    /// On a cluster, a node that broke or stalled may be failing over: its watcher
    /// looks at the slot map now (cluster.rs).
    fn hint_cluster(&self) {
        if matches!(*self.inner.target, Target::Cluster(_)) {
            self.inner.failovers.hint();
        }
    }

    /// A request's outcome; a failure that leaves the connection unusable retires it,
    /// and so does a demoted master's READONLY (readonly.rs).
    fn settle<T: readonly::Replies>(&self, reply: Result<RedisResult<T>, tokio::time::error::Elapsed>, epoch: u64) -> RedisResult<T> {
        match reply {
            Ok(Ok(value)) => {
                if value.readonly() {
                    self.retire(epoch);
                }
                Ok(value)
            }
            Ok(Err(e)) => {
                if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() || readonly::is_readonly(&e) {
                    self.retire(epoch);
                    self.hint_cluster();
                }
                Err(e)
            }
            Err(_) => {
                // The reply may still come, but everything sent after it would queue
                // behind it: later requests go to a fresh connection.
                if self.retires {
                    self.retire(epoch);
                }
                self.hint_cluster();
                Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply within the response timeout").into())
            }
        }
    }
}

impl Conn {
    /// Sends `cmd` and reads its reply: on this thread's host link when a call polled
    /// here may use it, else on the client's connection. (What `ConnectionLike` does,
    /// without boxing the future.)
    pub async fn request(&self, cmd: &Cmd) -> RedisResult<Value> {
        if let Some(source) = self.claim_missing(|| evalsha_of(cmd)).await? {
            return self.load_and_send(source, |out| cmd.write_packed_command(out), || std::borrow::Cow::Borrowed(cmd)).await;
        }
        self.note_load(cmd);
        if let Some(reply) = self.send_on_host(|out| cmd.write_packed_command(out)) {
            return reply.await;
        }
        self.request_here(cmd).await
    }

    /// [`Conn::request`] for a [`Command`]: every script call of a lock comes through here.
    pub async fn request_command(&self, command: &Command) -> RedisResult<Value> {
        if let Some(source) = self.claim_missing(|| command.evalsha()).await? {
            return self.load_and_send(source, |out| command.write_to(out), || command.to_cmd()).await;
        }
        if let Some(reply) = self.send_on_host(|out| command.write_to(out)) {
            return reply.await;
        }
        self.request_here(&command.to_cmd()).await
    }

    /// Queues a request on this thread's host link, if a call polled here may use it.
    fn send_on_host(&self, pack: impl FnOnce(&mut Vec<u8>)) -> Option<impl std::future::Future<Output = RedisResult<Value>>> {
        let reply = self.host_here()?.send_one(pack, self.timeout)?;
        Some(async move { host_reply(reply.await) })
    }

    /// A request on the client's own connection.
    async fn request_here(&self, cmd: &Cmd) -> RedisResult<Value> {
        let (mut conn, epoch) = self.current().await?;
        let reply = tokio::time::timeout(self.timeout, conn.req_packed_command(cmd)).await;
        self.settle(reply, epoch)
    }
}

/// A host link's answer: a reply, or the link closed before it came (a lost reply).
fn host_reply<T>(reply: Result<RedisResult<T>, tokio::sync::oneshot::error::RecvError>) -> RedisResult<T> {
    reply.unwrap_or_else(|_| Err(super::host::lost("the host's connection closed")))
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.request(cmd))
    }

    fn req_packed_commands<'a>(&'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            if let Some(host) = self.host_here().filter(|_| offset == 0 && !pipeline.is_transaction()) {
                if let Some(reply) = host.send_many(pipeline, count, self.timeout) {
                    return host_reply(reply.await);
                }
            }
            let (mut conn, epoch) = self.current().await?;
            let reply = tokio::time::timeout(self.timeout, conn.req_packed_commands(pipeline, offset, count)).await;
            self.settle(reply, epoch)
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.db
    }
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Node(conn) => conn.req_packed_command(cmd),
            Link::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(&'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Node(conn) => conn.req_packed_commands(pipeline, offset, count),
            Link::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Node(conn) => conn.get_db(),
            Link::Cluster(conn) => conn.get_db(),
        }
    }
}
