//! The client: connects (transport), wires the parts every primitive shares
//! (ctx.rs), and makes the primitives. The only module that knows all of them.

use std::sync::Arc;

use tokio::runtime::Handle;

use crate::config::{ClientBuilder, Config};
use crate::ctx::{Alive, Ctx};
use crate::election::Election;
use crate::error::{Error, Result};
use crate::lock::holder::Holders;
use crate::lock::{Lock, LockKind, LockOptions, ReadWriteLock};
use crate::latch::CountDownLatch;
use crate::metrics::Metrics;
use crate::semaphore::{PermitExpirableSemaphore, Semaphore};
use crate::renewal::RenewalReport;
use crate::transport::{HostLink, Transport};

/// A connection to one Redis deployment, shared by all locks made from it.
/// Cheap to clone; all clones are the same client (same client id, same watchdog).
///
/// The client shuts down (releasing what it holds) on [`Client::shutdown`], or by
/// itself once every `Client` and [`Lock`] handle of it is gone.
#[derive(Clone)]
pub struct Client {
    ctx: Arc<Ctx>,
    holders: Arc<Holders>,
    alive: Arc<Alive>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("id", &self.ctx.id).finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Validates the settings, connects, and checks the server answers (fails fast
    /// on an unreachable server or a wrong password). Must run inside a tokio runtime.
    pub async fn connect(self) -> Result<Client> {
        self.config.validate()?;
        Client::open(self.url, self.config, self.sentinel_auth).await
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

    async fn open(url: String, config: Config, sentinel_auth: crate::config::SentinelAuth) -> Result<Client> {
        let runtime = Handle::try_current()
            .map_err(|_| Error::internal("ferrolock::Client must be created inside a tokio runtime"))?;
        let id = uuid::Uuid::new_v4().to_string();
        let name = match &config.app_name {
            Some(app) => format!("ferrolock:{id}:{app}"),
            None => format!("ferrolock:{id}"),
        };
        let metrics = Arc::default();
        let (transport, conn) = Transport::connect(&url, &config, &sentinel_auth, name, metrics).await?;
        let server = transport.server.clone();
        let ctx = Ctx::start(id, transport, conn, config, runtime);
        tracing::debug!(client = %ctx.id, %server, "ferrolock client connected");
        let alive = Arc::new(Alive(ctx.clone()));
        Ok(Client { ctx, holders: Arc::default(), alive })
    }

    /// This client's id: a random UUID v4, the first half of every owner field it writes.
    pub fn id(&self) -> &str {
        &self.ctx.id
    }

    /// `Ok` in the process that created this client; after `fork()` the child gets
    /// `InvalidArgument`, since the client's threads and sockets stayed in the parent.
    /// Blocking bindings call this before waiting on the client.
    pub fn check_process(&self) -> Result<()> {
        self.ctx.check_process()
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &Config {
        &self.ctx.config
    }

    /// A reentrant lock handle for `name` (1 to 4096 bytes). The handle is a new holder.
    pub fn lock(&self, name: impl AsRef<[u8]>) -> Result<Lock> {
        self.lock_with(name, LockOptions::default())
    }

    /// A fenced lock handle: every acquisition yields a strictly increasing token.
    pub fn fenced_lock(&self, name: impl AsRef<[u8]>) -> Result<Lock> {
        self.lock_with(name, LockOptions::kind(LockKind::Fenced))
    }

    /// A fair lock handle: granted in the order of arrival, across clients and processes.
    pub fn fair_lock(&self, name: impl AsRef<[u8]>) -> Result<Lock> {
        self.lock_with(name, LockOptions::kind(LockKind::Fair))
    }

    /// Both sides of a read-write lock for one new holder: many readers or one writer.
    pub fn read_write_lock(&self, name: impl AsRef<[u8]>) -> Result<ReadWriteLock> {
        let id = self.new_holder_id();
        let side = |kind| LockOptions { kind, holder_id: Some(id), ..LockOptions::default() };
        let (name, read_kind, write_kind) = (name.as_ref(), LockKind::Read, LockKind::Write);
        Ok(ReadWriteLock { read: self.lock_with(name, side(read_kind))?, write: self.lock_with(name, side(write_kind))? })
    }

    /// A lock handle with explicit options (kind, explicit holder id or owner field).
    /// Handles for the same name, holder and kind on one client share their hold.
    pub fn lock_with(&self, name: impl AsRef<[u8]>, options: LockOptions) -> Result<Lock> {
        self.open_check()?;
        let name = name.as_ref();
        crate::validate::lock_name(name)?;
        if self.ctx.transport.is_cluster() {
            crate::names::LockNames::new(name).check_one_slot()?;
        }
        let owner = match (options.holder_id, options.owner) {
            (Some(_), Some(_)) => return Err(Error::invalid("give either a holder id or an owner field, not both")),
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
        let fair_wait = options.fair_wait_timeout.unwrap_or(LockOptions::FAIR_WAIT_TIMEOUT);
        let fair_wait_ms = crate::validate::lease(fair_wait)
            .map_err(|_| Error::invalid(format!("fair_wait_timeout {fair_wait:?} is out of range; give 1 ms to 7 days")))?;
        let holder = self.holders.get_or_create(&self.ctx, name, owner, options.kind, fair_wait_ms);
        Ok(Lock::from_holder(holder, self.alive.clone()))
    }

    /// A new candidate in the leader election `name`: the fenced lock of that name,
    /// for a new holder (a Redisson `RLock` of the name excludes it and is excluded).
    /// See [`Election`].
    pub fn election(&self, name: impl AsRef<[u8]>) -> Result<Election> {
        let lock = self.lock_with(name, LockOptions::kind(LockKind::Fenced))?;
        Ok(Election::new(lock, self.alive.clone()))
    }

    /// A handle on the semaphore `name` (Redisson's `RSemaphore`). Permits are not owned.
    pub fn semaphore(&self, name: impl AsRef<[u8]>) -> Result<Semaphore> {
        self.open_check()?;
        Semaphore::new(self.ctx.clone(), name.as_ref(), self.alive.clone())
    }

    /// A handle on the permit-expirable semaphore `name` (Redisson's
    /// `RPermitExpirableSemaphore`): permits with ids and optional leases.
    pub fn permit_expirable_semaphore(&self, name: impl AsRef<[u8]>) -> Result<PermitExpirableSemaphore> {
        self.open_check()?;
        PermitExpirableSemaphore::new(self.ctx.clone(), name.as_ref(), self.alive.clone())
    }

    /// A handle on the count-down latch `name` (Redisson's `RCountDownLatch`).
    pub fn count_down_latch(&self, name: impl AsRef<[u8]>) -> Result<CountDownLatch> {
        self.open_check()?;
        CountDownLatch::new(self.ctx.clone(), name.as_ref(), self.alive.clone())
    }

    /// What `name` is, told from its keys (a lock, fenced, fair or read-write lock, a
    /// semaphore, a permit-expirable semaphore or a count-down latch), and what is going
    /// on there: holders with their notes, lease left, waiters, permits or count, last
    /// fencing token. Reads only; works on every topology. `WrongType` if the key holds
    /// something else.
    pub async fn inspect(&self, name: impl AsRef<[u8]>) -> Result<crate::Inspection> {
        self.open_check()?;
        crate::inspect::inspect(&self.ctx, name.as_ref(), None).await
    }

    /// [`Client::inspect`] reading `name` as `kind` (a number nothing waits on cannot
    /// tell a semaphore from a latch). `WrongType` if its key cannot be one.
    pub async fn inspect_as(&self, name: impl AsRef<[u8]>, kind: crate::ObjectKind) -> Result<crate::Inspection> {
        self.open_check()?;
        crate::inspect::inspect(&self.ctx, name.as_ref(), Some(kind)).await
    }

    /// The names of every lock-family object whose name starts with `prefix` (empty:
    /// all), sorted: lock hashes, free fenced locks (their token counter), fair locks'
    /// queues, and keys holding a number (a semaphore or latch, or any such counter).
    /// One SCAN pass over the server, Sentinel's master, or each master of a cluster.
    pub async fn scan(&self, prefix: impl AsRef<[u8]>) -> Result<Vec<Vec<u8>>> {
        self.open_check()?;
        crate::inspect::scan(&self.ctx, prefix.as_ref()).await
    }

    fn open_check(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::shut_down());
        }
        Ok(())
    }

    /// A fresh holder id, unique within this client (bindings map threads or tasks to these).
    pub fn new_holder_id(&self) -> u64 {
        self.ctx.new_holder_id()
    }

    /// The owner field `<client-id>:<holder-id>` this client writes for a holder id.
    pub fn owner_field(&self, holder_id: u64) -> String {
        self.ctx.owner_field(holder_id)
    }

    /// Runs one watchdog renewal round over every held lock now (the watchdog renews
    /// each a third of its lease after it sent its previous renewal). Reports how many
    /// script calls it made and how long it took.
    pub async fn renew_held_locks(&self) -> Result<RenewalReport> {
        self.ctx.conn()?;
        Ok(self.ctx.renew(None).await)
    }

    /// Number of lock channels this client's pub/sub connection is subscribed to (a
    /// channel stays subscribed for 100 ms after its last waiter leaves).
    pub fn subscribed_channels(&self) -> usize {
        self.ctx.hub.subscribed_channels()
    }

    /// Number of acquires of this client waiting right now for a release (on any
    /// lock): tried, subscribed, and parked until a message, a lease's end or their deadline.
    pub fn waiting_acquires(&self) -> usize {
        self.ctx.hub.parked()
    }

    /// What this client's locks did since it connected (see [`Metrics`]);
    /// [`Metrics::to_prometheus`] renders it for a scrape endpoint.
    pub fn metrics(&self) -> Metrics {
        self.ctx.transport.metrics.snapshot(&self.ctx.id, self.held_count() as u64, self.waiting_acquires() as u64)
    }

    /// Number of locks this client currently holds (any depth counts once).
    pub fn held_count(&self) -> usize {
        self.ctx.held.count()
    }

    /// A command connection for an event loop that does its own I/O (Node's): calls
    /// this client makes while polled on the calling thread send on it, everything
    /// else keeps the client's connection (see `transport/host.rs`). The host connects
    /// to its address, writes what `take_output` gives and feeds back what it reads;
    /// a new link replaces (closes) the previous one. `None` unless the client talks
    /// to one server without TLS: then every call stays on the client's connection.
    pub fn host_link(&self) -> Result<Option<HostLink>> {
        Ok(self.ctx.conn()?.attach_host())
    }

    /// True once the client was shut down: every call on it fails with `ClientClosed`.
    pub fn is_closed(&self) -> bool {
        self.ctx.is_shut_down()
    }

    /// Releases every lock this client still holds (best effort, bounded by the
    /// response timeout; the watchdog renews them until then), stops waiting acquires
    /// with `ClientClosed`, stops the watchdog, and closes the connections. Later calls
    /// on this client fail with `ClientClosed`.
    pub async fn shutdown(&self) -> Result<()> {
        self.ctx.close().await;
        Ok(())
    }
}
