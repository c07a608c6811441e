//! Watching a multi-hold's members: the hold is lost once fewer than its quorum of
//! members are still held.
//!
//! Nothing waits per hold: a member's loss is pushed (a hook on its hold's loss
//! signal, hold/mod.rs, which has the multi-lock check its quorum), and one task per
//! multi-lock, started by its first hold and ending with the lock, waits for the
//! members' clients to shut down (which releases members behind its back). A task
//! per hold, woken again when the next hold replaced its members' signals, cost an
//! uncontended Redlock cycle two wake-ups of a runtime thread (issue 30).

use std::sync::{Arc, Weak};

use futures_util::future::{select, select_all, FutureExt};
use tokio::sync::{watch, Notify};

use super::Multi;
use crate::hold::Hold;

impl Multi {
    /// Has hold `generation`'s members tell it when they are lost.
    pub(super) fn watch_members(self: &Arc<Self>, generation: u64, members: &[(usize, Hold)]) {
        let runtime = self.members[0].runtime();
        for (_, hold) in members {
            let (multi, runtime) = (Arc::downgrade(self), runtime.clone());
            // Runs under the member holder's lock: the check goes to the runtime.
            hold.on_lost(Box::new(move || {
                runtime.spawn(async move {
                    if let Some(multi) = multi.upgrade() {
                        multi.check(generation);
                    }
                });
            }));
        }
        if !self.closes_watched.swap(true, std::sync::atomic::Ordering::AcqRel) {
            let closes = self.members.iter().map(|m| m.one().expect("members are single locks").ctx.shutdown.subscribe()).collect();
            runtime.spawn(watch_closes(Arc::downgrade(self), self.gone.clone(), closes));
        }
    }

    /// Marks hold `generation` lost if fewer than the quorum of its members are still held.
    pub(super) fn check(&self, generation: u64) {
        let reason = {
            let st = self.state.lock().unwrap();
            if st.generation != generation || st.levels.is_empty() {
                return;
            }
            let lost: Vec<String> = st
                .members
                .iter()
                .filter_map(|(i, hold)| self.gone(*i, hold).map(|why| format!("member {} ({}): {why}", i + 1, self.members[*i].name())))
                .collect();
            if st.members.len() - lost.len() >= self.needed {
                return;
            }
            format!("{} of its members are no longer held: {}", lost.len(), lost.join("; "))
        };
        self.mark_lost(generation, reason);
    }

    /// Why member `index` (held as `hold`) is no longer held, if it is not.
    fn gone(&self, index: usize, hold: &Hold) -> Option<String> {
        if let Some(e) = hold.lost_error() {
            return Some(e.message().to_string());
        }
        let closed = self.members[index].one().is_ok_and(|h| h.ctx.is_shut_down());
        closed.then(|| "its client shut down".to_string())
    }

    fn current_generation(&self) -> u64 {
        self.state.lock().unwrap().generation
    }
}

/// Checks the current hold whenever a member's client shuts down; ends with the
/// lock (`gone` is notified when it drops) or once every client has.
async fn watch_closes(multi: Weak<Multi>, gone: Arc<Notify>, mut closes: Vec<watch::Receiver<bool>>) {
    loop {
        {
            let Some(this) = multi.upgrade() else { return };
            this.check(this.current_generation());
        }
        // A client shut down (or gone: only with the lock) needs no more watching.
        closes.retain(|c| !*c.borrow() && c.has_changed().is_ok());
        if closes.is_empty() {
            return;
        }
        let changes = select_all(closes.iter_mut().map(|c| c.changed().boxed()));
        let _ = select(std::pin::pin!(gone.notified()), changes).await;
    }
}
