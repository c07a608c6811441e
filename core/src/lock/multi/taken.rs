//! The members one acquire round took: given back if the round falls short (or is
//! dropped), kept once it wins.

use futures_util::future::join_all;

use super::Multi;
use crate::hold::Hold;

/// Members taken in one round: released in the background if the round is
/// dropped or falls short, kept on success.
pub(super) struct Taken<'a> {
    multi: &'a Multi,
    holds: Vec<(usize, Hold)>,
}

impl<'a> Taken<'a> {
    pub fn new(multi: &'a Multi) -> Self {
        Taken { multi, holds: Vec::new() }
    }

    pub fn push(&mut self, member: usize, hold: Hold) {
        self.holds.push((member, hold));
    }

    pub fn len(&self) -> usize {
        self.holds.len()
    }

    pub fn has(&self, member: usize) -> bool {
        self.holds.iter().any(|(i, _)| *i == member)
    }

    /// The members taken, in the members' order (as a loss names them).
    pub fn keep(mut self) -> Vec<(usize, Hold)> {
        let mut holds = std::mem::take(&mut self.holds);
        holds.sort_unstable_by_key(|(i, _)| *i);
        holds
    }

    /// Gives back every member taken, all at once.
    pub async fn release(mut self) {
        let holds = std::mem::take(&mut self.holds);
        self.give_back(holds).await;
    }

    /// Gives back the members after `member` (in the members' order), all at once.
    pub async fn release_after(&mut self, member: usize) {
        let (after, kept) = std::mem::take(&mut self.holds).into_iter().partition(|(i, _)| *i > member);
        self.holds = kept;
        self.give_back(after).await;
    }

    async fn give_back(&self, holds: Vec<(usize, Hold)>) {
        let members = &self.multi.members;
        join_all(holds.iter().map(|(i, _)| members[*i].release())).await;
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        for (i, _) in self.holds.drain(..) {
            let member = self.multi.members[i].clone();
            member.runtime().clone().spawn(async move {
                let _ = member.release().await;
            });
        }
    }
}
