//! What a grant must have reached before an acquire returns it, behind Sentinel or on
//! a Cluster: the replica-acknowledgement policy, and what an acquire that fell short
//! of it reports (DESIGN §3, "Topologies"). A leaf: the transport counts, the
//! primitives undo, the error carries the numbers.

/// How many of the master's replicas must acknowledge an acquire (`WAIT`, or `WAITAOF`
/// with [`crate::Config::replica_ack_aof`]) before it is returned, behind Sentinel and
/// on a Cluster (off them there are no replicas to ask). `n` is the replicas the master
/// should have: those connected now or, if more, those its sentinels (or the cluster's
/// nodes) know as healthy. A master with no replica is never taken as acknowledged
/// under any policy but [`ReplicaAck::Off`]: the acquire is refused, nothing is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ReplicaAck {
    /// No acknowledgement: an acquire returns as soon as the master has it.
    Off,
    /// At least one replica (Redisson's `checkLockSyncedSlaves`; the default).
    #[default]
    One,
    /// floor(n/2)+1 of the n replicas.
    Majority,
    /// All n replicas.
    All,
}

impl ReplicaAck {
    /// Every policy, in the order of [`ReplicaAck::as_str`]'s names.
    pub const ALL: [ReplicaAck; 4] = [ReplicaAck::Off, ReplicaAck::One, ReplicaAck::Majority, ReplicaAck::All];

    /// The policy's name, as `FromStr` reads it: "off", "one", "majority", "all".
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaAck::Off => "off",
            ReplicaAck::One => "one",
            ReplicaAck::Majority => "majority",
            ReplicaAck::All => "all",
        }
    }

    /// The acknowledgements needed of a master that should have `replicas` replicas;
    /// `None` when nothing is asked (off). Never 0 otherwise: with no replica the
    /// answer is 1, which no `WAIT` can reach.
    pub fn needed(self, replicas: u32) -> Option<u32> {
        let n = match self {
            ReplicaAck::Off => return None,
            ReplicaAck::One => 1,
            ReplicaAck::Majority => replicas / 2 + 1,
            ReplicaAck::All => replicas,
        };
        Some(n.max(1))
    }
}

impl std::fmt::Display for ReplicaAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an acquire failed with [`crate::ErrorKind::NotReplicated`]: how many replicas
/// acknowledged it, out of how many the master should have, against the policy's
/// need ([`crate::Error::replica_shortfall`]). The acquire was undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaShortfall {
    /// Replicas that acknowledged it within `replica_ack_timeout` (0 when it was not
    /// sent because too few replicas were connected to meet the policy).
    pub acknowledged: u32,
    /// The replicas the master should have (connected now, or more that its sentinels
    /// or the cluster's nodes know as healthy).
    pub replicas: u32,
    /// Acknowledgements the policy needed of them.
    pub needed: u32,
    /// The policy.
    pub policy: ReplicaAck,
    /// Whether the replicas had to have it in their append-only file (`WAITAOF`).
    pub aof: bool,
}

impl std::fmt::Display for ReplicaShortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.aof { "fsynced to their AOF" } else { "acknowledged" };
        write!(
            f,
            "{} of the master's {} replica(s) {what} it, the replica_ack policy \"{}\" needs {}",
            self.acknowledged, self.replicas, self.policy, self.needed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::ReplicaAck;

    #[test]
    fn each_policy_needs_its_count() {
        let needs = |p: ReplicaAck| (0..=5).map(|n| p.needed(n)).collect::<Vec<_>>();
        assert_eq!(needs(ReplicaAck::Off), [None; 6]);
        assert_eq!(needs(ReplicaAck::One), [Some(1); 6]);
        assert_eq!(needs(ReplicaAck::Majority), [1, 1, 2, 2, 3, 3].map(Some));
        assert_eq!(needs(ReplicaAck::All), [1, 1, 2, 3, 4, 5].map(Some));
    }
}
