//! The client: connect, lock handles (every kind), the other shapes' handles,
//! lost-hold notifications, close.

use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{LockKind, LockOptions};
use napi::bindgen_prelude::{Buffer, BufferSlice, Either, PromiseRaw};
use napi::Env;
use napi_derive::napi;

use crate::election::NativeElection;
use crate::errors::{caught, client_closed, invalid, millis, IntoJs, Result};
use crate::executor::promise;
use crate::family::{NativeLatch, NativePermitSemaphore, NativeSemaphore};
use crate::host::{Host, HostAddress, WakeFn};
use crate::lock::new_handle;
use crate::lost::{LostFn, Shared};

/// Longest wait for releasing a client's locks when its JS environment ends.
const SHUTDOWN_ON_EXIT: Duration = Duration::from_secs(2);

/// Settings for `connect`: durations in milliseconds, the drift factor (a
/// fraction of the lease, range-checked by the core builder), the sentinels' own
/// credentials, and the replica acknowledgement behind Sentinel and on a Cluster.
#[napi(object)]
pub struct ConnectOptions {
    pub watchdog_timeout_ms: Option<f64>,
    pub response_timeout_ms: Option<f64>,
    pub connect_timeout_ms: Option<f64>,
    pub retry_window_ms: Option<f64>,
    pub drift_factor: Option<f64>,
    pub sentinel_username: Option<String>,
    pub sentinel_password: Option<String>,
    /// "off", "one", "majority" or "all" (core reads the name); true is "one", false "off".
    #[napi(ts_type = "'off' | 'one' | 'majority' | 'all' | boolean")]
    pub replica_ack: Option<Either<String, bool>>,
    pub replica_ack_aof: Option<bool>,
    pub replica_ack_timeout_ms: Option<f64>,
    /// Connections are named `ferrolock:<client id>:<appName>` (core checks the name).
    pub app_name: Option<String>,
    /// "off", "long" or "always" (core reads the name).
    #[napi(ts_type = "'off' | 'long' | 'always'")]
    pub holder_notes: Option<String>,
    pub holder_note_after_ms: Option<f64>,
    /// `false`: never log a slow wait.
    #[napi(ts_type = "number | false")]
    pub slow_wait_log_ms: Option<Either<f64, bool>>,
}

/// Counts of one duration, in seconds (core's histogram).
#[napi(object)]
pub struct Histogram {
    /// Upper bounds, ascending.
    pub bounds: Vec<f64>,
    /// Observations per bucket, not cumulative; one more than `bounds` (the last: above them).
    pub counts: Vec<f64>,
    pub sum: f64,
    pub count: f64,
}

impl From<ferrolock::Histogram> for Histogram {
    fn from(h: ferrolock::Histogram) -> Self {
        Histogram {
            bounds: h.bounds,
            counts: h.counts.into_iter().map(|c| c as f64).collect(),
            sum: h.sum,
            count: h.count as f64,
        }
    }
}

/// What a client's locks did since it connected (core's `Metrics`, camelCase).
#[napi(object)]
pub struct Metrics {
    pub client_id: String,
    pub acquired: f64,
    pub not_acquired: f64,
    pub failed: f64,
    pub cancelled: f64,
    /// Seconds from an acquire call to its outcome, every outcome.
    pub wait: Histogram,
    /// Seconds from an acquisition to its release or loss.
    pub hold: Histogram,
    pub holds_now: f64,
    pub waiters_now: f64,
    pub renewals: f64,
    pub renewal_failures: f64,
    pub losses: f64,
    pub reconnects: f64,
    /// Failovers noticed (each checks every hold at once).
    pub failovers_noticed: f64,
    /// Seconds from noticing a failover to reporting a hold it lost, per hold lost.
    pub failover_loss_report: Histogram,
}

/// Connects a client to the deployment `url` names (`redis://`, `redis+sentinel://`,
/// `redis+cluster://`, and their TLS forms); fails fast on an unreachable server or a bad URL.
#[napi]
pub fn connect<'env>(
    env: &'env Env,
    url: String,
    options: Option<ConnectOptions>,
) -> napi::Result<PromiseRaw<'env, NativeClient>> {
    promise(env, async move {
        let mut builder = ferrolock::Client::builder(url);
        if let Some(o) = options {
            if let Some(d) = millis(o.watchdog_timeout_ms, "watchdogTimeoutMs")? {
                builder = builder.watchdog_timeout(d);
            }
            if let Some(d) = millis(o.response_timeout_ms, "responseTimeoutMs")? {
                builder = builder.response_timeout(d);
            }
            if let Some(d) = millis(o.connect_timeout_ms, "connectTimeoutMs")? {
                builder = builder.connect_timeout(d);
            }
            if let Some(d) = millis(o.retry_window_ms, "retryWindowMs")? {
                builder = builder.retry_window(d);
            }
            if let Some(f) = o.drift_factor {
                builder = builder.drift_factor(f);
            }
            if let Some(user) = o.sentinel_username {
                builder = builder.sentinel_username(user);
            }
            if let Some(password) = o.sentinel_password {
                builder = builder.sentinel_password(password);
            }
            match o.replica_ack {
                Some(Either::A(policy)) => builder = builder.replica_ack(policy.parse::<ferrolock::ReplicaAck>().js()?),
                Some(Either::B(on)) => {
                    builder = builder.replica_ack(if on { ferrolock::ReplicaAck::One } else { ferrolock::ReplicaAck::Off })
                }
                None => {}
            }
            if let Some(on) = o.replica_ack_aof {
                builder = builder.replica_ack_aof(on);
            }
            if let Some(d) = millis(o.replica_ack_timeout_ms, "replicaAckTimeoutMs")? {
                // Core's range, said in this binding's spelling and unit.
                let (min, max) = ferrolock::Config::REPLICA_ACK_TIMEOUT;
                if d < min || d > max {
                    return Err(invalid(format!(
                        "replicaAckTimeoutMs = {} ms is out of range; give {} to {} (default 1000)",
                        d.as_millis(),
                        min.as_millis(),
                        max.as_millis()
                    )));
                }
                builder = builder.replica_ack_timeout(d);
            }
            if let Some(name) = o.app_name {
                builder = builder.app_name(name);
            }
            if let Some(mode) = o.holder_notes {
                builder = builder.holder_notes(mode.parse::<ferrolock::HolderNotes>().js()?);
            }
            if let Some(d) = millis(o.holder_note_after_ms, "holderNoteAfterMs")? {
                builder = builder.holder_note_after(d);
            }
            match o.slow_wait_log_ms {
                Some(Either::A(ms)) if ms < 1.0 && ms >= 0.0 => {
                    return Err(invalid(format!("slowWaitLogMs = {ms}; give at least 1 ms, or false to never log")))
                }
                Some(Either::A(ms)) => builder = builder.slow_wait_log(millis(Some(ms), "slowWaitLogMs")?),
                Some(Either::B(false)) => builder = builder.slow_wait_log(None),
                Some(Either::B(true)) => return Err(invalid("slowWaitLogMs = true; give a number of milliseconds, or false to never log")),
                None => {}
            }
        }
        let client = builder.connect().await.js()?;
        Ok(NativeClient {
            shared: Arc::new(Shared::new(client.clone())),
            client,
            hooked: AtomicBool::new(false),
            host: Mutex::new(None),
        })
    })
}

#[napi]
pub struct NativeClient {
    client: ferrolock::Client,
    shared: Arc<Shared>,
    hooked: AtomicBool,
    /// The current host connection (lib/host.js owns its socket).
    host: Mutex<Option<Arc<Host>>>,
}

impl NativeClient {
    /// Refuses new handles from the moment close() is called, before core's shutdown
    /// starts, as `closed` says.
    fn open(&self) -> Result<()> {
        if self.closed() {
            return Err(client_closed());
        }
        Ok(())
    }

    /// The id of a new handle on `lock` (lock.rs).
    fn wrap(&self, lock: ferrolock::Lock) -> u32 {
        new_handle(lock, self.shared.clone(), Vec::new())
    }
}

fn bytes(name: &Either<String, Buffer>) -> &[u8] {
    match name {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => &b[..],
    }
}

fn holder(holder_id: Option<i64>) -> Result<Option<u64>> {
    match holder_id {
        Some(id) if id < 0 => Err(invalid(format!("holderId = {id} is negative"))),
        other => Ok(other.map(|id| id as u64)),
    }
}

#[napi]
impl NativeClient {
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.client.id().to_string()
    }

    /// Sets the function told about lost holds, and ties the client to this JS
    /// environment: when the environment ends (a worker exits) the client shuts down.
    #[napi]
    pub fn set_lost_handler(
        &self,
        env: Env,
        #[napi(ts_arg_type = "(lockId: number, seq: number, message: string, reason: string) => void")] callback: LostFn,
    ) -> Result<()> {
        caught(|| {
            self.shared.set_on_lost(callback);
            if !self.hooked.swap(true, Ordering::AcqRel) {
                env.add_env_cleanup_hook(self.shared.clone(), |shared| {
                    if let Some(client) = shared.take() {
                        // Releases what this environment still holds, synchronously: this hook
                        // runs before the environment's objects are finalized, and the client
                        // keeps every held holder alive, so `shutdown` releases them all before
                        // the worker or process goes. (Left to the finalizers, the last handle's
                        // drop would only start a shutdown that the exit does not wait for.)
                        // Bounded, so an unreachable Redis cannot hold up a worker's or the
                        // process's exit.
                        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            napi::bindgen_prelude::block_on(async move {
                                let _ = tokio::time::timeout(SHUTDOWN_ON_EXIT, client.shutdown()).await;
                            })
                        }));
                    }
                })
                .js()?;
            }
            Ok(())
        })
    }

    /// A lock handle, by id (lock.rs): a new holder. `kind` is "reentrant", "fenced",
    /// "fair", "read" or "write"; `holderId` / `owner` pick an explicit holder.
    #[napi]
    pub fn lock(
        &self,
        name: Either<String, Buffer>,
        kind: String,
        holder_id: Option<i64>,
        owner: Option<String>,
    ) -> Result<u32> {
        caught(|| {
            self.open()?;
            let options =
                LockOptions { kind: LockKind::from_str(&kind).js()?, holder_id: holder(holder_id)?, owner, ..LockOptions::default() };
            let lock = self.client.lock_with(bytes(&name), options).js()?;
            Ok(self.wrap(lock))
        })
    }

    /// Both sides of the read-write lock `name`, `[read, write]` (lock handle ids), on
    /// one holder (a new one, or the one `holderId` / `owner` pick), so that a writer
    /// may take read holds.
    #[napi]
    pub fn read_write_lock(
        &self,
        name: Either<String, Buffer>,
        holder_id: Option<i64>,
        owner: Option<String>,
    ) -> Result<Vec<u32>> {
        caught(|| {
            self.open()?;
            let holder_id = holder(holder_id)?;
            let (read, write) = if holder_id.is_none() && owner.is_none() {
                let rw = self.client.read_write_lock(bytes(&name)).js()?;
                (rw.read(), rw.write())
            } else {
                let side = |kind| LockOptions { kind, holder_id, owner: owner.clone(), ..LockOptions::default() };
                let read = self.client.lock_with(bytes(&name), side(LockKind::Read)).js()?;
                (read, self.client.lock_with(bytes(&name), side(LockKind::Write)).js()?)
            };
            Ok(vec![self.wrap(read), self.wrap(write)])
        })
    }

    /// A new candidate in the leader election `name`; its fenced lock is the lock
    /// handle `lockId` of the result (a new holder).
    #[napi]
    pub fn election(&self, name: Either<String, Buffer>) -> Result<NativeElection> {
        caught(|| {
            self.open()?;
            let election = self.client.election(bytes(&name)).js()?;
            let lock_id = self.wrap(election.lock().clone());
            Ok(NativeElection::new(election, lock_id))
        })
    }

    /// A handle on the semaphore `name` (Redisson's `RSemaphore`).
    #[napi]
    pub fn semaphore(&self, name: Either<String, Buffer>) -> Result<NativeSemaphore> {
        caught(|| {
            self.open()?;
            Ok(NativeSemaphore::new(self.client.semaphore(bytes(&name)).js()?))
        })
    }

    /// A handle on the permit-expirable semaphore `name` (Redisson's `RPermitExpirableSemaphore`).
    #[napi]
    pub fn permit_expirable_semaphore(&self, name: Either<String, Buffer>) -> Result<NativePermitSemaphore> {
        caught(|| {
            self.open()?;
            Ok(NativePermitSemaphore::new(self.client.permit_expirable_semaphore(bytes(&name)).js()?))
        })
    }

    /// A handle on the count-down latch `name` (Redisson's `RCountDownLatch`).
    #[napi]
    pub fn count_down_latch(&self, name: Either<String, Buffer>) -> Result<NativeLatch> {
        caught(|| {
            self.open()?;
            Ok(NativeLatch::new(self.client.count_down_latch(bytes(&name)).js()?))
        })
    }

    /// Releases what this client holds, stops its waits (they reject with
    /// `ERR_CLIENT_CLOSED`) and closes its connections. Idempotent.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let client = self.shared.take();
        promise(env, async move {
            if let Some(client) = client {
                client.shutdown().await.js()?;
            }
            Ok(())
        })
    }

    /// Opens a host connection (a new one replaces the last): calls made on this JS
    /// thread then send on the socket lib/host.js opens at the address returned.
    /// `wake()` is called when output waits that the addon could not write itself
    /// (or the link closed): then call `hostFlush`. `null` when this client cannot have one (TLS, Sentinel,
    /// Cluster): its calls use core's connection.
    #[napi]
    pub fn host_connect(&self, env: Env, #[napi(ts_arg_type = "() => void")] wake: WakeFn<'_>) -> Result<Option<HostAddress>> {
        caught(|| {
            self.open()?;
            let Some((host, address)) = Host::open(&env, &self.client, wake).js()? else { return Ok(None) };
            *self.host.lock().unwrap() = Some(host);
            Ok(Some(address))
        })
    }

    /// The host connection's flush (after `wake()`): writes what waits straight to
    /// the socket when it can. Answers 0 (done), 1 (JS must write `hostLeft()`), or 2
    /// (the connection must close: a reply is overdue).
    #[napi]
    pub fn host_flush(&self) -> u32 {
        let host = self.host.lock().unwrap().clone();
        host.map_or(crate::host::CLOSE, |host| host.flush())
    }

    /// The bytes JS must write on the host connection's socket (after `hostFlush`
    /// answered 1), in order.
    #[napi]
    pub fn host_left<'env>(&self, env: &'env Env) -> napi::Result<BufferSlice<'env>> {
        let host = self.host.lock().unwrap().clone();
        match host {
            Some(host) => host.left(env),
            None => BufferSlice::copy_from(env, []),
        }
    }

    /// Nothing JS wrote on the host connection's socket is still queued; `fd` is its
    /// descriptor (`socket._handle.fd`, -1 when there is none): the addon may write
    /// there itself until it hands JS bytes again.
    #[napi]
    pub fn host_direct(&self, fd: i32) {
        let host = self.host.lock().unwrap().clone();
        if let Some(host) = host {
            host.direct(fd);
        }
    }

    /// What the host connection's socket read.
    #[napi]
    pub fn host_feed(&self, env: Env, data: BufferSlice) {
        let host = self.host.lock().unwrap().clone();
        if let Some(host) = host {
            host.feed(&env, &data);
        }
    }

    /// Fails the host connection if a reply is overdue (`hostFlush` then says to
    /// close the socket).
    #[napi]
    pub fn host_check(&self, env: Env) {
        let host = self.host.lock().unwrap().clone();
        if let Some(host) = host {
            host.check(&env);
        }
    }

    /// The host connection's socket closed (or failed).
    #[napi]
    pub fn host_closed(&self, env: Env, reason: String) {
        let host = self.host.lock().unwrap().take();
        if let Some(host) = host {
            host.closed(&env, &reason);
        }
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Lock channels the client's pub/sub connection is subscribed to now.
    #[napi]
    pub fn subscribed_channels(&self) -> u32 {
        self.client.subscribed_channels() as u32
    }

    /// Locks this client holds now.
    #[napi]
    pub fn held_count(&self) -> u32 {
        self.client.held_count() as u32
    }

    /// A snapshot of this client's metrics (readable after close).
    #[napi]
    pub fn metrics(&self) -> Result<Metrics> {
        let m = caught(|| Ok(self.client.metrics()))?;
        Ok(Metrics {
            client_id: m.client_id,
            acquired: m.acquired as f64,
            not_acquired: m.not_acquired as f64,
            failed: m.failed as f64,
            cancelled: m.cancelled as f64,
            wait: m.wait.into(),
            hold: m.hold.into(),
            holds_now: m.holds_now as f64,
            waiters_now: m.waiters_now as f64,
            renewals: m.renewals as f64,
            renewal_failures: m.renewal_failures as f64,
            losses: m.losses as f64,
            reconnects: m.reconnects as f64,
            failovers_noticed: m.failovers_noticed as f64,
            failover_loss_report: m.failover_loss_report.into(),
        })
    }

    /// The metrics in Prometheus' text exposition format, as core renders them.
    #[napi]
    pub fn metrics_text(&self) -> Result<String> {
        caught(|| Ok(self.client.metrics().to_prometheus()))
    }

    /// What `name` is, told from its keys, and what is going on there (see lib/client.js).
    #[napi]
    pub fn inspect<'env>(&self, env: &'env Env, name: Either<String, Buffer>, kind: Option<String>) -> napi::Result<PromiseRaw<'env, Inspection>> {
        let client = self.client.clone();
        let name = bytes(&name).to_vec();
        let checked = caught(|| {
            self.open()?;
            kind.as_deref().map(object_kind).transpose()
        });
        promise(env, async move {
            let found = match checked? {
                Some(kind) => client.inspect_as(&name, kind).await.js()?,
                None => client.inspect(&name).await.js()?,
            };
            Ok(Inspection::from(found))
        })
    }

    /// The names of every lock-family object under `prefix` (see lib/client.js).
    #[napi]
    pub fn scan<'env>(&self, env: &'env Env, prefix: Option<Either<String, Buffer>>) -> napi::Result<PromiseRaw<'env, Vec<String>>> {
        let client = self.client.clone();
        let prefix = prefix.as_ref().map(|p| bytes(p).to_vec()).unwrap_or_default();
        let open = caught(|| self.open());
        promise(env, async move {
            open?;
            let names = client.scan(&prefix).await.js()?;
            Ok(names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect())
        })
    }
}

/// A permit out, as `inspect()` reports it.
#[napi(object)]
pub struct PermitOut {
    pub id: String,
    /// Ms left on its lease (negative: expired); absent: no lease.
    pub lease_left_ms: Option<f64>,
}

/// What `inspect()` resolves with (lib/client.js makes absent fields null).
#[napi(object)]
pub struct Inspection {
    pub name: String,
    pub kind: String,
    pub holders: Vec<crate::lock::HolderStatus>,
    pub lease_left_ms: Option<f64>,
    pub waiters: f64,
    pub queue: Vec<String>,
    pub mode: Option<String>,
    pub permits: Option<f64>,
    pub permits_out: Vec<PermitOut>,
    pub count: Option<f64>,
    pub last_token: Option<napi::bindgen_prelude::BigInt>,
    pub eviction_policy: Option<String>,
}

impl From<ferrolock::Inspection> for Inspection {
    fn from(found: ferrolock::Inspection) -> Inspection {
        let holders = found
            .holders()
            .iter()
            .map(|h| crate::lock::HolderStatus::from(h.clone()))
            .collect();
        let lease_left_ms = found.lease_left().map(|d| if d == Duration::MAX { f64::INFINITY } else { d.as_millis() as f64 });
        let last_token = found.last_token().map(napi::bindgen_prelude::BigInt::from);
        Inspection {
            kind: found.kind.as_str().to_string(),
            holders,
            lease_left_ms,
            waiters: found.waiters as f64,
            queue: found.queue,
            mode: found.mode,
            permits: found.permits.map(|p| p as f64),
            permits_out: found.permits_out.into_iter().map(|p| PermitOut { id: p.id, lease_left_ms: p.lease_left_ms.map(|ms| ms as f64) }).collect(),
            count: found.count.map(|c| c as f64),
            last_token,
            eviction_policy: found.eviction_policy,
            name: found.name,
        }
    }
}

fn object_kind(kind: &str) -> Result<ferrolock::ObjectKind> {
    use ferrolock::ObjectKind as K;
    let all = [K::Lock, K::FencedLock, K::FairLock, K::ReadWriteLock, K::Semaphore, K::PermitExpirableSemaphore, K::CountDownLatch];
    all.into_iter().find(|k| k.as_str() == kind).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|k| k.as_str()).collect();
        invalid(format!("unknown kind {kind:?}: expected one of {}", names.join(", "))).into()
    })
}
