//! Keeping the server and the local view together when callers go away.
//!
//! Every call that changes a hold runs under its holder's operation lock
//! ([`detached`]) and applies the reply to the local state itself. It runs in the
//! caller's task (a spawned task per call costs thread hops on every lock and
//! unlock); only if the caller drops it half-way is the rest moved to a task. An
//! acquisition on its way to a caller that has gone is undone when it is dropped
//! ([`Pending`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::runtime::Handle;
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::ctx::{CallGuard, Ctx};
use crate::error::Result;

/// What an acquisition nobody took does when dropped.
pub(crate) trait Undo: Send + 'static {
    fn undo(self);
}

/// An acquisition on its way to the caller, undone if dropped before it is taken.
pub(crate) struct Pending<T: Undo>(Option<T>);

impl<T: Undo> Pending<T> {
    pub fn new(value: T) -> Self {
        Pending(Some(value))
    }

    pub fn take(mut self) -> T {
        self.0.take().expect("taken once")
    }
}

impl<T: Undo> Drop for Pending<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            value.undo();
        }
    }
}

/// Held through one call that changes a hold: the holder's operation lock and the
/// client's count of calls in flight (shutdown waits for them). Both are let go
/// when the last clone drops.
#[derive(Clone)]
pub(crate) struct OpGuard(#[allow(dead_code)] Arc<(OwnedMutexGuard<()>, CallGuard)>);

/// Runs `op` holding the operation lock `op_lock`, to completion even if the caller
/// goes away. `op` gets a clone of the guard to keep the lock past the call (an
/// acquire whose outcome is unknown passes it to its resolver).
pub(crate) async fn detached<T, F, Fut>(ctx: &Arc<Ctx>, op_lock: &Arc<Mutex<()>>, op: F) -> Result<T>
where
    F: FnOnce(OpGuard) -> Fut,
    Fut: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let call = ctx.begin_call();
    let guard = OpGuard(Arc::new((op_lock.clone().lock_owned().await, call)));
    let held = guard.clone();
    let call = op(guard);
    let call = async move {
        let result = call.await;
        drop(held);
        result
    };
    FinishInBackground::new(call, ctx.runtime.clone()).await
}

/// Runs `call` to completion even if the caller goes away (counted as a call in
/// flight, so shutdown waits for it), for primitives without holders to serialise.
pub(crate) async fn to_completion<T, Fut>(ctx: &Arc<Ctx>, call: Fut) -> T
where
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let guard = ctx.begin_call();
    let call = async move {
        let output = call.await;
        drop(guard);
        output
    };
    FinishInBackground::new(call, ctx.runtime.clone()).await
}

/// A future that, if dropped before it completes, finishes in a spawned task: the
/// operation's effects (and the undo of an acquisition nobody takes) still happen.
struct FinishInBackground<T: Send + 'static> {
    future: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    runtime: Handle,
}

impl<T: Send + 'static> FinishInBackground<T> {
    fn new(future: impl Future<Output = T> + Send + 'static, runtime: Handle) -> Self {
        FinishInBackground { future: Some(Box::pin(future)), runtime }
    }
}

impl<T: Send + 'static> Future for FinishInBackground<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let future = self.future.as_mut().expect("FinishInBackground polled after completion");
        let output = std::task::ready!(future.as_mut().poll(cx));
        self.future = None;
        Poll::Ready(output)
    }
}

impl<T: Send + 'static> Drop for FinishInBackground<T> {
    fn drop(&mut self) {
        if let Some(rest) = self.future.take() {
            // The output (e.g. an acquisition) is dropped there, which undoes it.
            self.runtime.spawn(async move {
                drop(rest.await);
            });
        }
    }
}
