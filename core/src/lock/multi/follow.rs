//! Handing a whole multi-lock to the next holder of the same multi-lock in this
//! client. An acquire that must wait, holding no member yet, waits on one member,
//! where a release of its client may hand that member to it (handoff.rs); it offers
//! itself there as a [`Follower`]. A release that ends a hold of a multi-lock over
//! the same members and finds a follower first in line on that member hands it
//! every member it still holds at once: each member's release script gives the
//! member to the follower's holder of it, so the follower makes no call of its own.
//! Each member keeps the single lock's rules (handoff.rs): a member lost (or at the
//! end of its streak, which lets other clients in) is not handed, and the follower
//! tries for what it did not get. Handing only the member waited on left the
//! follower a round-trip to the others per hand-off (issue 30: 8 holders x 1 ms on a
//! Redlock over 5 servers spent a quarter of the wall between holds).

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use super::Multi;
use crate::hold::Hold;
use crate::lock::handoff::{Candidate, Directed, STREAK};
use crate::lock::holder::Holder;
use crate::waiting::hub::Claimed;
use crate::waiting::Successor;

/// A waiting acquire of a multi-lock, as the releases of its client see it.
pub(super) struct Follower {
    /// Its holder of each member.
    holders: Vec<Arc<Holder>>,
    lease_ms: Option<u64>,
    /// When a release first chose it, before releasing anything: every member it is
    /// given (or then takes itself) was taken after this, the clock of its validity.
    chosen_at: Mutex<Option<Instant>>,
    /// The members besides the one waited on that releases are handing to it.
    handed: Mutex<Vec<(usize, Arc<Candidate>)>>,
    /// Told as each of those hand-offs settles.
    settled: Notify,
}

impl Follower {
    pub fn new(multi: &Multi, lease_ms: Option<u64>) -> Arc<Follower> {
        let holders = multi.members.iter().map(|m| m.one().expect("members are single locks").clone()).collect();
        Arc::new(Follower { holders, lease_ms, chosen_at: Mutex::new(None), handed: Mutex::new(Vec::new()), settled: Notify::new() })
    }

    /// What its acquire of `member` offers the client's releases.
    pub fn candidate(self: &Arc<Self>, member: usize) -> Arc<Candidate> {
        let follower: Arc<dyn Any + Send + Sync> = self.clone();
        Candidate::following(self.holders[member].clone(), self.lease_ms, Some(follower))
    }

    /// True if it waits on `lead` of a multi-lock over the same members as `multi`
    /// (the same names on the same clients) through `candidate`, holding nothing.
    fn follows(&self, multi: &Multi, lead: usize, candidate: &Candidate) -> bool {
        let same = |(mine, theirs): (&crate::lock::Lock, &Arc<Holder>)| {
            mine.one().is_ok_and(|m| Arc::ptr_eq(&m.ctx, &theirs.ctx) && m.names.name == theirs.names.name && m.kind == theirs.kind)
        };
        self.holders.len() == multi.members.len()
            && multi.members.iter().zip(&self.holders).all(same)
            && Arc::ptr_eq(&self.holders[lead], &candidate.holder)
            // Stable while claimed: the claim holds its operation lock.
            && candidate.holder.cell.state.lock().unwrap().count == 0
    }

    /// Once its acquire of the member it waited on is over: when a release chose it
    /// (the clock of its validity), and the other members handed to it, waiting for
    /// each hand-off under way to settle. Cancel-safe: a hold not taken here is
    /// released again when its candidate goes.
    pub async fn collect(&self) -> (Option<Instant>, Vec<(usize, Hold)>) {
        let chosen_at = *self.chosen_at.lock().unwrap();
        let handed = std::mem::take(&mut *self.handed.lock().unwrap());
        for (_, candidate) in &handed {
            crate::until::until(&self.settled, || !candidate.is_claimed()).await;
        }
        // After the last await: what is taken out of its candidate must reach the caller.
        let holds = handed.into_iter().filter_map(|(i, c)| c.take_handed().map(|p| (i, p.take().hold))).collect();
        (chosen_at, holds)
    }
}

impl Multi {
    /// The successor of each member release of a hold ending now (`members`, in
    /// release order; none for members released plainly). When the first member's
    /// next holder in this client is a [`Follower`] of a multi-lock over the same
    /// members, every member still held goes to its holder of that member.
    pub(super) fn successors(&self, members: &[usize]) -> Vec<Option<Directed>> {
        let mut directed: Vec<Option<Directed>> = members.iter().map(|_| None).collect();
        let Some((at, lead)) = members.iter().copied().enumerate().min_by_key(|(_, i)| *i) else { return directed };
        let Ok(mine) = self.members[lead].one() else { return directed };
        if !mine.kind.hands_off() || !may_hand(mine) || mine.ctx.is_shut_down() {
            return directed;
        }
        let Some(claimed) = mine.ctx.hub.claim_successor(&mine.names.channel(), mine.uid) else { return directed };
        let follower = claimed.successor.clone().as_any().downcast::<Candidate>().ok().and_then(|candidate| {
            let follower = candidate.follower()?.clone().downcast::<Follower>().ok()?;
            follower.follows(self, lead, &candidate).then_some(follower)
        });
        directed[at] = Some(Directed::new(claimed));
        let Some(follower) = follower else { return directed };
        follower.chosen_at.lock().unwrap().get_or_insert_with(Instant::now);
        let mut handed = follower.handed.lock().unwrap();
        for (at, &i) in members.iter().enumerate() {
            let Ok(mine) = self.members[i].one() else { continue };
            if i == lead || !may_hand(mine) {
                continue;
            }
            let candidate = Candidate::new(follower.holders[i].clone(), follower.lease_ms);
            if !candidate.try_claim(mine.uid) {
                continue;
            }
            let told = follower.clone();
            let wake = Box::new(move || told.settled.notify_waiters());
            directed[at] = Some(Directed::new(Claimed { successor: candidate.clone(), wake }));
            handed.push((i, candidate));
        }
        directed
    }
}

/// True if `h`'s release may hand its hold over: held once, not lost, its streak not over.
fn may_hand(h: &Holder) -> bool {
    let st = h.cell.state.lock().unwrap();
    st.count == 1 && st.streak < STREAK
}
