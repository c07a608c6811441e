//! What every primitive gets from its client: the command connection and the rest
//! of the transport, the pub/sub hub, the registry of held holds (renewed by the
//! watchdog, released at shutdown), the reply latches, the settings, the runtime,
//! and the ids. Primitives hold an `Arc<Ctx>`; nothing below the client needs the
//! client itself.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::names::RequestId;
use crate::renewal::{self, Deadlines, Registry};
use crate::reply_latch::ReplyLatches;
use crate::transport::{Conn, Transport};
use crate::waiting::hub::Hub;

pub(crate) struct Ctx {
    /// The client id: a random UUID v4, the first half of every owner field.
    pub id: String,
    /// The process that created the client (its runtime and sockets live there only),
    /// as the count of forks seen when it was created.
    forks: u64,
    pub config: Config,
    pub runtime: Handle,
    pub transport: Transport,
    /// Taken out at shutdown, which closes the connection once in-flight calls end.
    conn: RwLock<Option<Conn>>,
    pub hub: Hub,
    pub held: Registry,
    /// The one timer that reports held holds lost at their local deadlines.
    pub deadlines: Arc<Deadlines>,
    latches: ReplyLatches,
    pub shutdown: watch::Sender<bool>,
    next_holder: AtomicU64,
    next_request: AtomicU64,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Acquire/release calls in flight; shutdown waits for them to settle.
    inflight: AtomicUsize,
    idle: Notify,
}

impl Ctx {
    /// Wires a client's parts together and starts its background tasks (reply-latch
    /// sweeper, watchdog). Must run inside the client's runtime.
    pub fn start(id: String, transport: Transport, conn: Conn, config: Config, runtime: Handle) -> Arc<Ctx> {
        let (shutdown, _) = watch::channel(false);
        // Deleting latches is best effort: its timeouts do not retire the connection.
        let (latches, sweeper) = ReplyLatches::start(&runtime, conn.best_effort());
        let hub = Hub::new(transport.clone(), config.clone(), runtime.clone(), shutdown.subscribe());
        let ctx = Arc::new(Ctx {
            id,
            forks: forks(),
            config,
            runtime,
            transport,
            conn: RwLock::new(Some(conn)),
            hub,
            held: Registry::default(),
            deadlines: Arc::new(Deadlines::new()),
            latches,
            shutdown,
            next_holder: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            tasks: Mutex::new(vec![sweeper]),
            inflight: AtomicUsize::new(0),
            idle: Notify::new(),
        });
        let watchdog = ctx.runtime.spawn(watchdog(Arc::downgrade(&ctx)));
        let deadlines = ctx.runtime.spawn(deadline_timer(Arc::downgrade(&ctx), ctx.deadlines.clone()));
        let checks = ctx.runtime.spawn(failover_checks(Arc::downgrade(&ctx), ctx.transport.failovers()));
        ctx.tasks.lock().unwrap().extend([watchdog, deadlines, checks]);
        let holding = Arc::downgrade(&ctx);
        let busy = move || holding.upgrade().is_some_and(|ctx| ctx.held.count() > 0);
        if let Some(watcher) = ctx.conn().ok().and_then(|conn| ctx.transport.watcher(conn, busy)) {
            let watcher = ctx.runtime.spawn(watcher);
            ctx.tasks.lock().unwrap().push(watcher);
        }
        ctx
    }

    pub fn check_process(&self) -> Result<()> {
        if forks() != self.forks {
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

    /// Deletes an answered request's reply latch later: on the host link of the
    /// event loop polling this call if it has one (transport/host), else by the
    /// client's sweeper.
    pub fn remove_latch_later(&self, latch: Vec<u8>) {
        let link = self.conn.read().unwrap().as_ref().and_then(Conn::polled_host_here);
        let latch = match link {
            Some(link) => match link.remove_latch(latch, self.config.response_timeout) {
                Ok(()) => return,
                Err(latch) => latch,
            },
            None => latch,
        };
        self.latches.remove_later(latch);
    }

    /// Whether acquires are acknowledged by replicas (a policy, behind Sentinel or on a
    /// Cluster: transport/conn/acked.rs).
    pub fn acknowledged(&self) -> bool {
        self.config.replica_ack != crate::ack::ReplicaAck::Off && self.transport.has_replicas()
    }

    pub fn is_shut_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// A fresh holder id, unique within this client.
    pub fn new_holder_id(&self) -> u64 {
        self.next_holder.fetch_add(1, Ordering::Relaxed)
    }

    /// The owner field `<client-id>:<holder-id>` this client writes for a holder id.
    pub fn owner_field(&self, holder_id: u64) -> String {
        format!("{}:{holder_id}", self.id)
    }

    /// A fresh request id, unique across clients (the client id makes it so): a
    /// release's or a call's reply latch is named after it (names.rs).
    pub fn next_request(&self) -> RequestId<'_> {
        RequestId { client: &self.id, n: self.next_request.fetch_add(1, Ordering::Relaxed) }
    }

    /// Counts a call that changes a hold until the returned guard drops.
    pub fn begin_call(self: &Arc<Self>) -> CallGuard {
        self.inflight.fetch_add(1, Ordering::AcqRel);
        CallGuard(self.clone())
    }

    /// Resolves when no call that changes a hold is in flight.
    async fn settled(&self) {
        crate::until::until(&self.idle, || self.inflight.load(Ordering::Acquire) == 0).await
    }

    /// One renewal round (see renewal.rs) over the holds due before `horizon`, or all.
    pub async fn renew(&self, horizon: Option<Instant>) -> renewal::RenewalReport {
        self.round(horizon, None).await
    }

    async fn round(&self, horizon: Option<Instant>, noticed: Option<Instant>) -> renewal::RenewalReport {
        renewal::renew_all(&self.held, || self.conn(), &self.transport, self.config.watchdog_ms(), horizon, noticed).await
    }

    /// Releases everything held (best effort, bounded by the response timeout),
    /// ends waits with `Cancelled`, stops the watchdog and closes the connections.
    pub async fn close(self: &Arc<Self>) {
        if self.shutdown.send_replace(true) {
            return;
        }
        // No attempt starts from here on; the ones in flight may still acquire, so
        // let them settle before and after releasing what is held. The watchdog and
        // the deadline timer go on meanwhile: a hold waiting for its release is still
        // renewed, so the close never lets one expire and reports it lost.
        let settle = self.config.response_timeout * 2;
        let _ = tokio::time::timeout(settle, self.settled()).await;
        self.release_held(settle).await;
        let _ = tokio::time::timeout(settle, self.settled()).await;
        // Whatever could not be released stays until its lease ends; drop the
        // references so that nothing keeps this client alive any more.
        self.held.clear();
        let conn = self.conn.write().unwrap().take();
        for latch in conn.iter().flat_map(Conn::take_host_latches) {
            self.latches.remove_later(latch);
        }
        let _ = tokio::time::timeout(self.config.response_timeout, self.latches.flush()).await;
        for task in std::mem::take(&mut *self.tasks.lock().unwrap()) {
            task.abort();
        }
        self.hub.stop();
        if let Some(conn) = &conn {
            conn.close_hosts();
        }
        drop(conn);
        tracing::debug!(client = %self.id, "ferrolock client shut down");
    }

    /// Releases every held hold, [`CLOSE_RELEASES`] at a time, each bounded by
    /// `settle`. Gives up on the rest once `settle` passes without a release ending
    /// in time, so that an unreachable server holds a close up about one window,
    /// not one per [`CLOSE_RELEASES`] holds.
    async fn release_held(&self, settle: Duration) {
        use futures_util::StreamExt;
        // Made up front: a closure in the stream's type makes the future not `Send`.
        let releases: Vec<_> = self.held.all().into_iter().map(|held| tokio::time::timeout(settle, held.release_all())).collect();
        let mut ended = futures_util::stream::iter(releases).buffer_unordered(CLOSE_RELEASES);
        let mut stalled_at = tokio::time::Instant::now() + settle;
        loop {
            match tokio::time::timeout_at(stalled_at, ended.next()).await {
                Ok(Some(Ok(()))) => stalled_at = tokio::time::Instant::now() + settle,
                Ok(Some(Err(_))) => {}
                Ok(None) | Err(_) => return,
            }
        }
    }
}

/// Releases a close has in flight at once. Started all at once, every call polled by
/// the one closing task, the close spent its time polling calls that waited for the
/// connection's send queue, quadratic in the holds (71 s for 100,000 from Python);
/// this many keep the connection busy.
const CLOSE_RELEASES: usize = 256;

impl Drop for Ctx {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        for task in self.tasks.get_mut().map(std::mem::take).unwrap_or_default() {
            task.abort();
        }
    }
}

/// How many times this process is a forked child of the process that counted first
/// (pthread_atfork's child handler counts): every call checks that it runs in its
/// client's process, and a getpid system call per call cost about 3% of the client's
/// CPU in the 256-task benchmark. Elsewhere than unix, the process id.
fn forks() -> u64 {
    #[cfg(unix)]
    {
        use std::sync::atomic::AtomicU64 as Counter;
        static FORKS: Counter = Counter::new(0);
        static HOOK: std::sync::Once = std::sync::Once::new();
        extern "C" fn child() {
            FORKS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: registers a handler that only increments an atomic (async-signal-safe).
        HOOK.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(child));
        });
        FORKS.load(Ordering::Acquire)
    }
    #[cfg(not(unix))]
    {
        std::process::id() as u64
    }
}

/// One call in flight (see [`Ctx::begin_call`]).
pub(crate) struct CallGuard(Arc<Ctx>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        // Only shutdown waits for idleness: spare the hot path the notification otherwise.
        if self.0.inflight.fetch_sub(1, Ordering::AcqRel) == 1 && self.0.is_shut_down() {
            self.0.idle.notify_waiters();
        }
    }
}

/// Shared by every user handle of one client (`Client`, `Lock`, ...). The client
/// keeps its held holds alive (holds end only by release, lease end or shutdown),
/// which ties them to it in a cycle; when the last user handle goes, this shuts
/// the client down.
pub(crate) struct Alive(pub Arc<Ctx>);

impl Drop for Alive {
    fn drop(&mut self) {
        let ctx = self.0.clone();
        if ctx.is_shut_down() {
            return;
        }
        if ctx.check_process().is_err() {
            // Forked child: the parent's runtime and sockets do not exist here.
            ctx.held.clear();
            return;
        }
        tracing::debug!(client = %ctx.id, "last handle of the client dropped; shutting it down");
        let runtime = ctx.runtime.clone();
        runtime.spawn(async move { ctx.close().await });
    }
}

/// The watchdog: renews each hold a third of the lease after its previous renewal
/// (or acquisition) was sent, like Redisson's per-lock timers. It looks every twelfth
/// of the lease and renews together every hold due before its next look. Rounds do
/// not wait for each other: on a slow link a hold's renewals overlap (renewal.rs).
async fn watchdog(ctx: Weak<Ctx>) {
    let Some(look) = ctx.upgrade().map(|c| (c.config.renew_interval() / 4).max(Duration::from_millis(1))) else {
        return;
    };
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + look, look);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        // Not stopped by the shutdown flag: a close renews what it has yet to release
        // (and aborts this when it is done).
        let Some(ctx) = ctx.upgrade() else { return };
        let horizon = Instant::now() + look;
        let runtime = ctx.runtime.clone();
        runtime.spawn(async move {
            let report = ctx.renew(Some(horizon)).await;
            if report.failed > 0 {
                tracing::warn!(failed = report.failed, "watchdog could not renew some locks before their deadline");
            }
        });
    }
}

/// Checks every hold at once when the client notices a failover (transport/failover.rs),
/// instead of at each one's next renewal: a hold whose field the new master lacks is
/// reported lost then, and the time from the notice to that report is recorded for
/// each (renewal.rs).
async fn failover_checks(ctx: Weak<Ctx>, mut notices: watch::Receiver<crate::transport::Notice>) {
    while notices.changed().await.is_ok() {
        let noticed = notices.borrow_and_update().at;
        let Some(ctx) = ctx.upgrade() else { return };
        let report = ctx.round(None, Some(noticed)).await;
        let after = noticed.elapsed();
        tracing::info!(renewed = report.renewed, lost = report.lost, failed = report.failed, ?after, "holds checked after a failover");
    }
}

/// The deadline timer: sleeps until the earliest deadline armed (renewal.rs,
/// [`Deadlines`]), then marks lost every hold whose deadline passed and re-arms. It
/// holds no strong reference to the client while it sleeps.
async fn deadline_timer(ctx: Weak<Ctx>, deadlines: Arc<Deadlines>) {
    loop {
        // A hold armed after this (earlier than what we sleep for) wakes us.
        let armed = deadlines.wake.notified();
        match deadlines.next() {
            None => {
                armed.await;
                continue;
            }
            Some(at) if at > Instant::now() => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at.into()) => {}
                    _ = armed => continue,
                }
            }
            Some(_) => {}
        }
        let Some(ctx) = ctx.upgrade() else { return };
        renewal::expire_due(&ctx.held, &deadlines);
    }
}
