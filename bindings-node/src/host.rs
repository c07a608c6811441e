//! The client's host connection, native side: core's `HostLink` (a command
//! connection whose socket lib/host.js owns on the JS thread) and the JS function
//! that writes its output. Calls polled on the JS thread (executor.rs) send on it;
//! what it reads comes back through `NativeClient.hostFeed`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::{Buffer, BufferSlice, Function, FunctionRef};
use napi::Env;
use napi_derive::napi;

use crate::executor::{self, Executor};

/// Where lib/host.js connects, and the handshake to write first.
#[napi(object)]
pub struct HostAddress {
    pub host: Option<String>,
    pub port: Option<u32>,
    /// A Unix socket's path (instead of host and port).
    pub path: Option<String>,
    pub handshake: Buffer,
}

/// Called (no arguments) when output is waiting or the link closed: lib/host.js
/// then takes it with `hostTakeOutput` on the next tick.
pub type WakeFn<'a> = Function<'a, (), ()>;

pub(crate) struct Host {
    pub link: ferrolock::HostLink,
    wake: FunctionRef<(), ()>,
    /// JS was told already, and has not taken the output since.
    scheduled: AtomicBool,
}

impl Host {
    /// Opens core's host link for `client` on this JS thread; `None` when the client
    /// cannot have one (TLS, Sentinel, Cluster): its calls keep core's connection.
    pub fn open(env: &Env, client: &ferrolock::Client, wake: WakeFn<'_>) -> napi::Result<Option<(Arc<Host>, HostAddress)>> {
        let Some(link) = client.host_link().map_err(|e| napi::Error::from_reason(e.message().to_string()))? else {
            return Ok(None);
        };
        let handshake = link.take_output();
        let (host, port, path) = match link.address() {
            ferrolock::HostAddress::Tcp { host, port } => (Some(host.clone()), Some(u32::from(*port)), None),
            ferrolock::HostAddress::Unix(path) => (None, None, Some(path.to_string_lossy().into_owned())),
        };
        let state = Arc::new(Host { link, wake: wake.create_ref()?, scheduled: AtomicBool::new(false) });
        let executor = Executor::here(env)?;
        let weak = Arc::downgrade(&state);
        state.link.on_event(move || schedule_flush(&executor, &weak));
        Ok(Some((state, HostAddress { host, port, path, handshake: handshake.into() })))
    }

    /// Bytes the socket read: completes the calls they answer, then runs them.
    pub fn feed(&self, env: &Env, data: &[u8]) {
        executor::drive(env, || self.link.feed(data));
    }

    /// The socket closed: its calls fail as lost replies (core settles them).
    pub fn closed(&self, env: &Env, reason: &str) {
        executor::drive(env, || self.link.close(reason));
    }

    /// Closes the link if a reply is overdue (lib/host.js asks every 100 ms).
    pub fn check(&self, env: &Env) {
        executor::drive(env, || {
            self.link.expire_overdue();
        });
    }

    /// What to write now: the output gathered since the last call (empty if none),
    /// or `None` once core closed the link (the socket must go: a reply is overdue
    /// and everything behind it would wait).
    pub fn take_output<'env>(&self, env: &'env Env) -> napi::Result<Option<BufferSlice<'env>>> {
        self.scheduled.store(false, Ordering::Release);
        if self.link.closed().is_some() {
            return Ok(None);
        }
        Ok(Some(BufferSlice::copy_from(env, self.link.take_output())?))
    }

    fn wake(&self, env: &Env) -> napi::Result<()> {
        self.wake.borrow_back(env)?.call(())
    }
}

/// Output is waiting (or the link closed): tells lib/host.js once, which takes the
/// output on the next tick, so that every request of a tick goes out in one write
/// (eight workers' acquires: one call into JS, one write, one read by the server).
fn schedule_flush(executor: &Executor, host: &Weak<Host>) {
    let Some(state) = host.upgrade() else { return };
    if state.scheduled.swap(true, Ordering::AcqRel) {
        return;
    }
    let host = host.clone();
    executor.after_run(Arc::new(move |env: &Env| {
        if let Some(state) = host.upgrade() {
            if let Err(e) = state.wake(env) {
                tracing::debug!(error = %e, "could not tell JS that the host connection has output");
            }
        }
    }));
}
