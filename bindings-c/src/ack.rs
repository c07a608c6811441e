//! Replica-acknowledgement policies as C passes them: `ferrolock_replica_ack`, the
//! values of `ferrolock_options.replica_ack` (read from a plain int).

use ferrolock::ReplicaAck;

/// The replica-acknowledgement policies of `ferrolock_options.replica_ack` (the
/// core's `ReplicaAck`). The numeric values are part of the ABI: new policies are only
/// ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_replica_ack {
    /// No acknowledgement: an acquire returns as soon as the master has it.
    FERROLOCK_REPLICA_ACK_OFF = 0,
    /// At least one replica (Redisson's `checkLockSyncedSlaves`; the default).
    FERROLOCK_REPLICA_ACK_ONE = 1,
    /// floor(n/2)+1 of the n replicas the master should have.
    FERROLOCK_REPLICA_ACK_MAJORITY = 2,
    /// All n replicas.
    FERROLOCK_REPLICA_ACK_ALL = 3,
}

impl ferrolock_replica_ack {
    /// Every policy, by its C value.
    const ALL: [(ferrolock_replica_ack, ReplicaAck); 4] = [
        (ferrolock_replica_ack::FERROLOCK_REPLICA_ACK_OFF, ReplicaAck::Off),
        (ferrolock_replica_ack::FERROLOCK_REPLICA_ACK_ONE, ReplicaAck::One),
        (ferrolock_replica_ack::FERROLOCK_REPLICA_ACK_MAJORITY, ReplicaAck::Majority),
        (ferrolock_replica_ack::FERROLOCK_REPLICA_ACK_ALL, ReplicaAck::All),
    ];

    pub(crate) fn from_int(value: i32) -> Option<ReplicaAck> {
        Self::ALL.iter().find(|(c, _)| *c as i32 == value).map(|(_, policy)| *policy)
    }

    pub(crate) fn of(policy: ReplicaAck) -> i32 {
        Self::ALL.iter().find(|(_, p)| *p == policy).map_or(1, |(c, _)| *c as i32)
    }
}
