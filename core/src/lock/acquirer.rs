//! One acquire of a lock as the waiting engine drives it ([`LockAcquire`]): its
//! tries, the same-client hand-off it may be given while queued, leaving a fair
//! lock's queue when it gives up, and the log of a long wait (slow_wait.rs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::handoff::Candidate;
use super::holder::{Holder, PendingHold};
use super::{slow_wait, LockKind};
use crate::error::Result;
use crate::waiting::{self, Attempt, Successor};

/// One acquire of a lock, as the waiting engine drives it. Queued, it offers a
/// [`Candidate`] that a release of this client may hand the lock to.
pub(crate) struct LockAcquire<'a> {
    pub(crate) holder: &'a Arc<Holder>,
    pub(crate) lease_ms: Option<u64>,
    /// Made when the acquire starts waiting (the uncontended path needs none).
    pub(crate) candidate: OnceLock<Arc<Candidate>>,
    /// A fair lock's last try queued it: leaving without the lock leaves the queue.
    pub(crate) queued: AtomicBool,
    pub(crate) deadline: Option<Instant>,
    /// Logs who is in the way while the wait is long (started when it starts waiting).
    pub(crate) reporter: OnceLock<Option<slow_wait::Reporter>>,
}

impl Drop for LockAcquire<'_> {
    fn drop(&mut self) {
        if self.queued.load(Ordering::Acquire) {
            // After any try still in flight (the operation lock orders them).
            let holder = self.holder.clone();
            let runtime = holder.ctx.runtime.clone();
            runtime.spawn(async move { holder.leave_queue().await });
        }
    }
}

impl LockAcquire<'_> {
    fn candidate(&self) -> &Arc<Candidate> {
        self.candidate.get_or_init(|| Candidate::new(self.holder.clone(), self.lease_ms))
    }
}

impl waiting::Acquire for LockAcquire<'_> {
    type Output = PendingHold;

    fn attempt(&self) -> impl std::future::Future<Output = Result<Attempt<PendingHold>>> + Send {
        let attempt = self.holder.attempt(self.lease_ms);
        let fair = self.holder.kind == LockKind::Fair;
        async move {
            // A try may queue us before its reply is read: if the caller goes away in
            // between (an abort once the line shows us), leaving must still happen.
            if fair {
                self.queued.store(true, Ordering::Release);
            }
            let outcome = attempt.await;
            if fair {
                if let Ok(tried) = &outcome {
                    self.queued.store(matches!(tried, Attempt::Busy(_)), Ordering::Release);
                }
            }
            outcome
        }
    }

    /// A re-entry never queues behind other waiters.
    fn queue_behind(&self) -> bool {
        self.holder.cell.state.lock().unwrap().count == 0
    }

    fn successor(&self) -> Option<Arc<dyn Successor>> {
        // Asked once, when the acquire starts waiting: the uncontended path starts no timer.
        self.reporter.get_or_init(|| slow_wait::start(self.holder, self.deadline));
        Some(self.candidate().clone())
    }

    fn handed(&self) -> Option<PendingHold> {
        self.candidate.get()?.take_handed()
    }

    fn begin_attempt(&self) -> bool {
        self.candidate.get().is_none_or(|c| c.begin_attempt())
    }

    fn end_attempt(&self) {
        if let Some(c) = self.candidate.get() {
            c.end_attempt();
        }
    }

    fn being_handed(&self) -> bool {
        self.candidate.get().is_some_and(|c| c.is_claimed())
    }

    fn give_up(&self) -> bool {
        self.candidate.get().is_none_or(|c| c.close())
    }

    async fn while_waiting(&self) {
        match self.reporter.get() {
            Some(Some(reporter)) => reporter.run(self.holder).await,
            _ => std::future::pending().await,
        }
    }
}
