//! The client: one reconnecting command connection, one lazily started pub/sub
//! connection, one watchdog, and the registry of this client's holders.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{ClientBuilder, Config};
use crate::error::{Error, ErrorKind, Result};
use crate::holder::Holder;
use crate::latch::LatchSweeper;
use crate::lock::{Lock, LockOptions};
use crate::pubsub::PubSubHub;
use crate::transport::Conn;
use crate::watchdog::{self, RenewalReport};

/// A connection to one Redis deployment, shared by all locks made from it.
/// Cheap to clone; all clones are the same client (same client id, same watchdog).
///
/// The client shuts down (releasing what it holds) on [`Client::shutdown`], or by
/// itself once every `Client` and [`Lock`] handle of it is gone.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
    alive: Arc<Alive>,
}

/// Shared by every `Client` and `Lock` handle of one client. The client keeps its
/// held holders alive (holds end only by release, lease end or shutdown), which ties
/// them to it in a cycle; when the last user handle goes, this shuts the client down.
pub(crate) struct Alive(Arc<ClientInner>);

impl Drop for Alive {
    fn drop(&mut self) {
        let inner = self.0.clone();
        if inner.is_shut_down() {
            return;
        }
        if inner.check_process().is_err() {
            // Forked child: the parent's runtime and sockets do not exist here.
            inner.held.lock().unwrap().clear();
            return;
        }
        tracing::debug!(client = %inner.id, "last handle of the client dropped; shutting it down");
        let runtime = inner.runtime.clone();
        runtime.spawn(async move { inner.close().await });
    }
}

pub(crate) struct ClientInner {
    pub id: String,
    /// The process that created the client: its runtime and sockets live there only.
    pid: u32,
    pub config: Config,
    pub runtime: Handle,
    /// Taken out at shutdown, which closes the connection once in-flight calls end.
    conn: RwLock<Option<Conn>>,
    pub pubsub: PubSubHub,
    pub latches: LatchSweeper,
    pub shutdown: watch::Sender<bool>,
    next_holder: AtomicU64,
    next_request: AtomicU64,
    /// Every live holder: handles for the same holder share state.
    holders: Mutex<HashMap<HolderKey, Weak<Holder>>>,
    /// Holders that currently hold their lock: renewed by the watchdog, released at
    /// shutdown, and kept alive here, so that dropping every handle of a holder
    /// (a garbage-collected binding object, an ended thread) never ends its hold.
    held: Mutex<HashMap<u64, Arc<Holder>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Acquire/release calls in flight; shutdown waits for them to settle.
    inflight: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One detached call in flight (see `ClientInner::begin_call`).
pub(crate) struct CallGuard(Arc<ClientInner>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        // Only shutdown waits for idleness: spare the hot path the notification otherwise.
        if self.0.inflight.fetch_sub(1, Ordering::AcqRel) == 1 && self.0.is_shut_down() {
            self.0.idle.notify_waiters();
        }
    }
}

/// (lock name, owner field, fenced)
type HolderKey = (Vec<u8>, String, bool);

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        for task in self.tasks.get_mut().map(std::mem::take).unwrap_or_default() {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("id", &self.inner.id).finish_non_exhaustive()
    }
}

impl Client {
    /// Connects with default settings. See [`ClientBuilder`] for the URL forms and settings.
    pub async fn connect(url: impl Into<String>) -> Result<Client> {
        ClientBuilder::new(url).connect().await
    }

    /// A builder for non-default settings.
    pub fn builder(url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(url)
    }

    pub(crate) async fn open(url: String, config: Config) -> Result<Client> {
        let runtime = Handle::try_current().map_err(|_| {
            Error::internal("ferrolock::Client must be created inside a tokio runtime")
        })?;
        if url.contains('\0') {
            return Err(Error::invalid("the Redis URL contains a NUL byte"));
        }
        let info = url.as_str().into_connection_info().map_err(|e| {
            // redis-rs may echo parts of the URL: keep only its error kind, never the URL.
            Error::invalid(format!(
                "invalid Redis URL ({:?}); expected redis://[user:password@]host[:port][/db] or rediss://...",
                e.kind()
            ))
        })?;
        let server = describe(info.addr());
        let redis_client = redis::Client::open(info)
            .map_err(|e| Error::invalid(format!("invalid Redis URL for {server} ({:?})", e.kind())))?;

        // Fail fast: one plain connection attempt (no retry loop) proves the address,
        // TLS and credentials before anything else starts.
        let probe_config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.response_timeout));
        // The PING also catches a server that wants a password the URL does not give.
        let probe = tokio::time::timeout(config.connect_timeout + config.response_timeout, async {
            let mut conn = redis_client.get_multiplexed_async_connection_with_config(&probe_config).await?;
            redis::cmd("PING").query_async::<()>(&mut conn).await
        })
        .await;
        match probe {
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Connection,
                    format!("timed out connecting to Redis at {server}; check that it is running and reachable"),
                ))
            }
            Ok(Err(e)) => return Err(Error::from_redis(&e, &format!("cannot connect to Redis at {server}"))),
            Ok(Ok(_)) => {}
        }

        let conn = Conn::new(redis_client.clone(), config.connect_timeout, config.response_timeout);

        let (shutdown, _) = watch::channel(false);
        let (latches, sweeper_task) = LatchSweeper::start(&runtime, conn.clone());
        let inner = Arc::new(ClientInner {
            id: uuid::Uuid::new_v4().to_string(),
            pid: std::process::id(),
            pubsub: PubSubHub::new(redis_client, config.clone(), runtime.clone(), shutdown.subscribe()),
            config,
            runtime,
            conn: RwLock::new(Some(conn)),
            latches,
            shutdown,
            next_holder: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            holders: Mutex::new(HashMap::new()),
            held: Mutex::new(HashMap::new()),
            tasks: Mutex::new(vec![sweeper_task]),
            inflight: std::sync::atomic::AtomicUsize::new(0),
            idle: tokio::sync::Notify::new(),
        });
        let wd = inner.runtime.spawn(watchdog::run(Arc::downgrade(&inner), inner.shutdown.subscribe()));
        inner.tasks.lock().unwrap().push(wd);
        tracing::debug!(client = %inner.id, %server, "ferrolock client connected");
        let alive = Arc::new(Alive(inner.clone()));
        Ok(Client { inner, alive })
    }

    /// This client's id: a random UUID v4, the first half of every owner field it writes.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// `Ok` in the process that created this client; after `fork()` the child gets
    /// `InvalidArgument`, since the client's threads and sockets stayed in the parent.
    /// Blocking bindings call this before waiting on the client.
    pub fn check_process(&self) -> Result<()> {
        self.inner.check_process()
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// A reentrant lock handle for `name` (1 to 4096 bytes). The handle is a new holder.
    pub fn lock(&self, name: impl AsRef<[u8]>) -> Result<Lock> {
        self.lock_with(name, LockOptions::default())
    }

    /// A fenced lock handle: every acquisition yields a strictly increasing token.
    pub fn fenced_lock(&self, name: impl AsRef<[u8]>) -> Result<Lock> {
        self.lock_with(name, LockOptions { fenced: true, ..LockOptions::default() })
    }

    /// A lock handle with explicit options (fenced, explicit holder id or owner field).
    /// Handles for the same name and holder on one client share their hold.
    pub fn lock_with(&self, name: impl AsRef<[u8]>, options: LockOptions) -> Result<Lock> {
        let name = name.as_ref();
        crate::validate::lock_name(name)?;
        let owner = match (options.holder_id, options.owner) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid("give either a holder id or an owner field, not both"))
            }
            (_, Some(owner)) => {
                if owner.is_empty() || owner.len() > 1024 {
                    return Err(Error::invalid(format!(
                        "owner field is {} bytes long; give 1 to 1024 bytes",
                        owner.len()
                    )));
                }
                owner
            }
            (Some(id), None) => self.owner_field(id),
            (None, None) => self.owner_field(self.new_holder_id()),
        };
        let key = (name.to_vec(), owner, options.fenced);
        let mut holders = self.inner.holders.lock().unwrap();
        if let Some(existing) = holders.get(&key).and_then(Weak::upgrade) {
            return Ok(Lock::from_holder(existing, self.alive.clone()));
        }
        let holder = Holder::new(self.inner.clone(), name, key.1.clone(), options.fenced);
        holders.insert(key, Arc::downgrade(&holder));
        Ok(Lock::from_holder(holder, self.alive.clone()))
    }

    /// A fresh holder id, unique within this client (bindings map threads or tasks to these).
    pub fn new_holder_id(&self) -> u64 {
        self.inner.next_holder.fetch_add(1, Ordering::Relaxed)
    }

    /// The owner field `<client-id>:<holder-id>` this client writes for a holder id.
    pub fn owner_field(&self, holder_id: u64) -> String {
        format!("{}:{holder_id}", self.inner.id)
    }

    /// Runs one watchdog renewal round now (the watchdog also runs it every
    /// watchdog_timeout / 3). Reports how many script calls it made and how long it took.
    pub async fn renew_held_locks(&self) -> Result<RenewalReport> {
        self.inner.conn()?;
        Ok(watchdog::renew_all(&self.inner, None).await)
    }

    /// Number of lock channels this client's pub/sub connection is subscribed to.
    pub fn subscribed_channels(&self) -> usize {
        self.inner.pubsub.subscribed_channels()
    }

    /// Number of locks this client currently holds (any depth counts once).
    pub fn held_count(&self) -> usize {
        self.inner.held_holders().len()
    }

    /// Stops the watchdog, releases every lock this client still holds (best effort,
    /// bounded by the response timeout), stops waiting acquires with `Cancelled`, and
    /// closes the connections. Later calls on this client fail with `Cancelled`.
    pub async fn shutdown(&self) -> Result<()> {
        self.inner.close().await;
        Ok(())
    }
}

impl ClientInner {
    /// See [`Client::shutdown`].
    async fn close(self: &Arc<Self>) {
        if self.shutdown.send_replace(true) {
            return;
        }
        // No attempt starts from here on; the ones in flight may still acquire, so
        // let them settle before and after releasing what is held.
        let settle = self.config.response_timeout * 2;
        let _ = tokio::time::timeout(settle, self.settled()).await;
        let held = self.held_holders();
        let releases = held.into_iter().map(|h| async move {
            let _ = tokio::time::timeout(h.client.config.response_timeout * 2, h.release_all()).await;
        });
        futures_util::future::join_all(releases).await;
        let _ = tokio::time::timeout(settle, self.settled()).await;
        // Whatever could not be released stays until its lease ends; drop the
        // references so that nothing keeps this client alive any more.
        self.held.lock().unwrap().clear();
        let conn = self.conn.write().unwrap().take();
        let _ = tokio::time::timeout(self.config.response_timeout, self.latches.flush()).await;
        for task in std::mem::take(&mut *self.tasks.lock().unwrap()) {
            task.abort();
        }
        self.pubsub.stop();
        drop(conn);
        tracing::debug!(client = %self.id, "ferrolock client shut down");
    }

    pub fn check_process(&self) -> Result<()> {
        if std::process::id() != self.pid {
            return Err(Error::invalid(
                "this ferrolock client was created in the parent process before fork(); create a new client in this process",
            ));
        }
        Ok(())
    }

    /// The command connection, or `Cancelled` after shutdown.
    pub fn conn(&self) -> Result<Conn> {
        self.check_process()?;
        self.conn.read().unwrap().clone().ok_or_else(Error::shut_down)
    }

    /// A release request id, unique across clients (the client id makes it so).
    pub fn new_request_id(&self) -> String {
        format!("{}:{}", self.id, self.next_request.fetch_add(1, Ordering::Relaxed))
    }

    /// Counts a detached acquire/release call until the returned guard drops.
    pub fn begin_call(self: &Arc<Self>) -> CallGuard {
        self.inflight.fetch_add(1, Ordering::AcqRel);
        CallGuard(self.clone())
    }

    /// Resolves when no acquire/release call is in flight.
    async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.inflight.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }

    pub fn is_shut_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    pub fn register_held(&self, holder: &Arc<Holder>) {
        self.held.lock().unwrap().insert(holder.uid, holder.clone());
    }

    pub fn unregister_held(&self, uid: u64) {
        self.held.lock().unwrap().remove(&uid);
    }

    pub fn held_holders(&self) -> Vec<Arc<Holder>> {
        self.held.lock().unwrap().values().cloned().collect()
    }

    pub fn forget_holder(&self, name: &[u8], owner: &str, fenced: bool) {
        let mut holders = self.holders.lock().unwrap();
        let key = (name.to_vec(), owner.to_string(), fenced);
        if holders.get(&key).is_some_and(|w| w.strong_count() == 0) {
            holders.remove(&key);
        }
    }
}

fn describe(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (TLS)"),
        ConnectionAddr::Unix(path) => path.display().to_string(),
        _ => "the configured address".to_string(),
    }
}
