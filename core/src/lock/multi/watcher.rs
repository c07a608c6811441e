//! Watching a multi-hold's members: the hold is lost once fewer than its quorum of
//! members are still held.

use std::sync::Weak;

use futures_util::future::{select_all, FutureExt};
use tokio::sync::watch;

use super::Multi;
use crate::error::Error;

/// One member of a hold, as its watcher sees it: its loss signal, and its client's
/// shutdown (which releases the member behind the multi-lock's back).
pub(super) struct Member {
    pub index: usize,
    pub lost: watch::Receiver<Option<Error>>,
    pub closed: watch::Receiver<bool>,
}

impl Member {
    /// Why this member is no longer held, if it is not.
    fn gone(&self) -> Option<String> {
        if let Some(e) = self.lost.borrow().as_ref() {
            return Some(e.message().to_string());
        }
        (*self.closed.borrow()).then(|| "its client shut down".to_string())
    }
}

/// Watches the members of hold `generation`: once fewer than the quorum are still
/// held, the multi-hold is lost, with the members that went named.
pub(super) async fn watch_members(multi: Weak<Multi>, generation: u64, mut members: Vec<Member>) {
    loop {
        let Some(this) = multi.upgrade() else { return };
        {
            let st = this.state.lock().unwrap();
            if st.generation != generation || st.levels.is_empty() {
                return;
            }
        }
        let lost: Vec<String> = members
            .iter()
            .filter_map(|m| m.gone().map(|why| format!("member {} ({}): {why}", m.index + 1, this.members[m.index].name())))
            .collect();
        if members.len() - lost.len() < this.needed {
            let reason = format!("{} of its members are no longer held: {}", lost.len(), lost.join("; "));
            this.mark_lost(generation, reason);
            return;
        }
        drop(this);
        // Members already gone need no watching (and their channels may be closed).
        let changes = members.iter_mut().filter(|m| m.gone().is_none()).flat_map(|m| {
            [async { m.lost.changed().await.is_err() }.boxed(), async { m.closed.changed().await.is_err() }.boxed()]
        });
        let (closed, _, _) = select_all(changes).await;
        if closed {
            // A signal's sender went away with its client: that client is gone.
            return;
        }
    }
}

