//! Redisson's key and channel names (DESIGN §2), in one place. A helper key with
//! prefix `p` is `p:{n}`, or `p:n` when the name already contains `{`, so every key
//! and channel of one lock lands in the cluster slot of its name.

use std::sync::Arc;

/// The names that belong to one lock. Only the name is kept (a handle is made per
/// holder, and a client may keep many): the helper keys and channels are written
/// when a call needs them, an allocation per call against a round-trip.
#[derive(Debug, Clone)]
pub(crate) struct LockNames {
    /// The lock name as given: also the key of the lock hash. Shared with the
    /// client's holder registry and the hold's loss messages.
    pub name: Arc<[u8]>,
    /// The name for messages when it is not UTF-8 (lossy); none when it is.
    lossy: Option<Box<str>>,
}

const CHANNEL: &str = "redisson_lock__channel";
const TOKEN: &str = "redisson_lock_token";
const LATCH: &str = "redisson_unlock_latch";
const INFO: &str = "ferrolock_holder_info";
const GRANT: &str = "ferrolock_grant";
const QUEUE: &str = "redisson_lock_queue";
const QUEUE_TIMEOUTS: &str = "redisson_lock_timeout";
const RW_CHANNEL: &str = "redisson_rwlock";
const LEADER_CHANNEL: &str = "ferrolock_leader";

impl LockNames {
    pub fn new(name: &[u8]) -> Self {
        Self::shared(Arc::from(name))
    }

    pub fn shared(name: Arc<[u8]>) -> Self {
        let lossy = std::str::from_utf8(&name).is_err().then(|| String::from_utf8_lossy(&name).into());
        LockNames { name, lossy }
    }

    /// The name for messages (lossy UTF-8).
    pub fn display(&self) -> &str {
        match &self.lossy {
            Some(lossy) => lossy,
            None => std::str::from_utf8(&self.name).unwrap_or_default(),
        }
    }

    /// `redisson_lock__channel:{n}`: release messages.
    pub fn channel(&self) -> Vec<u8> {
        prefixed(CHANNEL, &self.name)
    }

    /// `redisson_lock_token:{n}`: fencing-token counter.
    pub fn token(&self) -> Vec<u8> {
        prefixed(TOKEN, &self.name)
    }

    /// Fair lock: `redisson_lock_queue:{n}`, waiters in order.
    pub fn queue(&self) -> Vec<u8> {
        prefixed(QUEUE, &self.name)
    }

    /// Fair lock: `redisson_lock_timeout:{n}`, waiter -> when it counts as gone.
    pub fn queue_timeouts(&self) -> Vec<u8> {
        prefixed(QUEUE_TIMEOUTS, &self.name)
    }

    /// Read-write lock: `redisson_rwlock:{n}`, the channel of both sides.
    pub fn rw_channel(&self) -> Vec<u8> {
        prefixed(RW_CHANNEL, &self.name)
    }

    /// A fair-lock waiter's own channel: `redisson_lock__channel:{n}:<owner field>`.
    pub fn waiter_channel(&self, field: &str) -> Vec<u8> {
        joined(&self.channel(), field)
    }

    /// A reader's timeout-key prefix `{n}:<owner>:rwlock_timeout` (one key per read hold, `:<k>`).
    pub fn read_timeouts(&self, owner: &str) -> Vec<u8> {
        suffixed(&self.name, &format!("{owner}:rwlock_timeout"))
    }

    /// The prefix of every reader's timeout keys: `{n}` (or `n` when it carries a tag).
    pub fn tag(&self) -> Vec<u8> {
        let mut key = suffixed(&self.name, "");
        key.pop();
        key
    }

    /// `ferrolock_holder_info:{n}:<owner>`: the note about one holder (see
    /// scripts/lock/holder_info.lua), ours only; in the slot of the latches.
    pub fn holder_info(&self, owner: &str) -> Vec<u8> {
        joined(&prefixed(INFO, &self.name), owner)
    }

    /// `ferrolock_grant:{n}:<request-id>`: what one acquire took, behind Sentinel or on a
    /// Cluster (the scripts write it with the lease; a read-back after a lost reply
    /// looks for it). Ours only, in the slot of the latches.
    pub fn grant(&self, request: RequestId<'_>) -> Vec<u8> {
        request.key(&prefixed(GRANT, &self.name))
    }

    /// `ferrolock_leader:{n}`: an election's new leaders announce themselves there
    /// (ours only: Redisson decodes every message on the lock channel as a number,
    /// `0` waking one waiter and `1` all, so announcements keep off that channel).
    pub fn leader_channel(&self) -> Vec<u8> {
        prefixed(LEADER_CHANNEL, &self.name)
    }

    /// `redisson_unlock_latch:{n}:<request-id>`: the reply latch of one release request.
    pub fn latch(&self, request: RequestId<'_>) -> Vec<u8> {
        request.key(&prefixed(LATCH, &self.name))
    }
}

/// The names of a semaphore or a count-down latch: its key, its channel, and the
/// prefix of ferrolock's own reply latches for its calls (Redisson's scripts for
/// these have none; ours answer a retry after a lost reply with the first answer).
#[derive(Debug, Clone)]
pub(crate) struct CounterNames {
    pub name: Vec<u8>,
    pub display: String,
    /// `redisson_sc:{n}` (semaphores) or `redisson_countdownlatch__channel__{n}` (latches).
    pub channel: Vec<u8>,
    /// `ferrolock_reply:{n}`: `<prefix>:<request-id>` per call.
    reply_prefix: Vec<u8>,
}

impl CounterNames {
    pub fn semaphore(name: &[u8]) -> Self {
        Self::with_channel(name, prefixed("redisson_sc", name))
    }

    /// Redisson writes this channel literally, whatever braces the name holds.
    pub fn count_down_latch(name: &[u8]) -> Self {
        let mut channel = b"redisson_countdownlatch__channel__{".to_vec();
        channel.extend_from_slice(name);
        channel.push(b'}');
        Self::with_channel(name, channel)
    }

    fn with_channel(name: &[u8], channel: Vec<u8>) -> Self {
        CounterNames {
            name: name.to_vec(),
            display: String::from_utf8_lossy(name).into_owned(),
            channel,
            reply_prefix: prefixed("ferrolock_reply", name),
        }
    }

    /// The reply latch under `id` (a permit's id, say).
    pub fn reply(&self, id: &str) -> Vec<u8> {
        joined(&self.reply_prefix, id)
    }

    /// The reply latch of one call.
    pub fn request_reply(&self, request: RequestId<'_>) -> Vec<u8> {
        request.key(&self.reply_prefix)
    }

    /// As [`LockNames::check_one_slot`]: on a cluster the key, its channel and its
    /// reply latches must share a slot.
    pub fn check_one_slot(&self, what: &str) -> crate::error::Result<()> {
        let first = slot(&self.name);
        if [&self.channel, &self.reply_prefix].iter().all(|key| slot(key) == first) {
            return Ok(());
        }
        Err(crate::error::Error::invalid(format!(
            "{what} name {:?} cannot be used on a Redis Cluster: with its braces, Redisson's channel for it \
             ({:?}) falls in another cluster slot than the {what} itself; remove the braces",
            self.display,
            String::from_utf8_lossy(&self.channel),
        )))
    }
}

/// A request id, `<client-id>:<n>` (ctx.rs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestId<'a> {
    pub client: &'a str,
    pub n: u64,
}

impl RequestId<'_> {
    /// `<prefix>:<client-id>:<n>`, written at once (every release names one: a
    /// `format!` and a second key cost a good part of a release's own work).
    fn key(self, prefix: &[u8]) -> Vec<u8> {
        let mut n = itoa::Buffer::new();
        let n = n.format(self.n).as_bytes();
        let mut key = Vec::with_capacity(prefix.len() + self.client.len() + n.len() + 2);
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(self.client.as_bytes());
        key.push(b':');
        key.extend_from_slice(n);
        key
    }
}

/// `<prefix>:<rest>`: a per-holder (or per-permit) key under a prefix of one name.
fn joined(prefix: &[u8], rest: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + rest.len() + 1);
    key.extend_from_slice(prefix);
    key.push(b':');
    key.extend_from_slice(rest.as_bytes());
    key
}

/// `p:{n}`, or `p:n` when `n` already carries a hash tag.
pub(crate) fn prefixed(prefix: &str, name: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + name.len() + 3);
    key.extend_from_slice(prefix.as_bytes());
    key.push(b':');
    if name.contains(&b'{') {
        key.extend_from_slice(name);
    } else {
        key.push(b'{');
        key.extend_from_slice(name);
        key.push(b'}');
    }
    key
}

/// Redisson's `suffixName`: `{n}:s`, or `n:s` when `n` already carries a hash tag.
pub(crate) fn suffixed(name: &[u8], suffix: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + suffix.len() + 3);
    if name.contains(&b'{') {
        key.extend_from_slice(name);
    } else {
        key.push(b'{');
        key.extend_from_slice(name);
        key.push(b'}');
    }
    key.push(b':');
    key.extend_from_slice(suffix.as_bytes());
    key
}

/// What a key met while listing names (SCAN) is: `None` for a key that may be an
/// object's own (a lock hash, a semaphore's or latch's number); `Some(Some(n))` for
/// a helper key that alone stands for the object `n` (a free fenced lock keeps only
/// its token counter, a fair lock's waiters their queue); `Some(None)` for any other
/// helper key (notes, reply latches, timeouts, leases of read holds and permits).
pub(crate) fn helper_key_of(key: &[u8]) -> Option<Option<Vec<u8>>> {
    const STANDS_FOR_ITS_OBJECT: [&str; 2] = ["redisson_lock_token", "redisson_lock_queue"];
    const OTHERS: [&str; 8] = [
        "redisson_unlock_latch",
        "ferrolock_holder_info",
        "ferrolock_grant",
        "ferrolock_reply",
        "redisson_lock_timeout",
        "redisson_lock__channel",
        "redisson_rwlock",
        "redisson_sc",
    ];
    let under = |prefix: &str| key.strip_prefix(prefix.as_bytes()).and_then(|rest| rest.strip_prefix(b":"));
    for prefix in STANDS_FOR_ITS_OBJECT {
        if let Some(rest) = under(prefix) {
            // `p:{n}` for a plain name, `p:n` for one that carries its own tag.
            let plain = rest.strip_prefix(b"{").and_then(|r| r.strip_suffix(b"}")).filter(|n| !n.contains(&b'{'));
            return Some(Some(plain.unwrap_or(rest).to_vec()));
        }
    }
    let suffix_of_a_tagged_name = |suffix: &[u8]| key.ends_with(suffix) && key.contains(&b'}');
    if OTHERS.iter().any(|prefix| under(prefix).is_some())
        || suffix_of_a_tagged_name(b":timeout")
        || key.windows(b":rwlock_timeout".len()).any(|w| w == b":rwlock_timeout")
    {
        return Some(None);
    }
    None
}

/// The cluster slot of a key: CRC16 (XMODEM) of its hash tag (the part between the
/// first `{` and the next `}`, when not empty) or of the whole key, mod 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| key[open + 1..].iter().position(|&b| b == b'}').map(|len| &key[open + 1..open + 1 + len]))
        .filter(|tag| !tag.is_empty());
    crc16(tagged.unwrap_or(key)) % 16384
}

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (0..8).fold(crc ^ ((b as u16) << 8), |crc, _| if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 })
    })
}

impl LockNames {
    /// Every key and channel of this lock (the latch prefix for its latches), for
    /// the one-slot check on a cluster.
    pub fn all(&self) -> [Vec<u8>; 7] {
        let latch_prefix = prefixed(LATCH, &self.name);
        [self.name.to_vec(), self.channel(), self.token(), latch_prefix, self.queue(), self.queue_timeouts(), self.rw_channel()]
    }

    /// On a cluster every key of one lock must be in one slot (a script touches them
    /// together). Redisson's rule keeps them there unless the name's braces do not
    /// form a non-empty `{...}` tag (`{`, `}{`, `x{`, `{}`, `a}b`): those are refused
    /// there, since other names for the helper keys would not interoperate with Redisson.
    pub fn check_one_slot(&self) -> crate::error::Result<()> {
        let first = slot(&self.name);
        if self.all().iter().all(|key| slot(key) == first) {
            return Ok(());
        }
        Err(crate::error::Error::invalid(format!(
            "lock name {:?} cannot be used on a Redis Cluster: its braces do not form a non-empty {{...}} hash tag, \
             so Redisson's helper keys for it (e.g. {:?}) fall in another cluster slot than the lock itself; \
             remove the braces or give a complete tag such as {{orders}}",
            self.display(),
            String::from_utf8_lossy(&self.channel()),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name, for a plain name and for one that carries its own hash tag.
    #[test]
    fn names_follow_redisson() {
        let table: [(&[u8], fn(&LockNames) -> Vec<u8>, &[u8], &[u8]); 4] = [
            (b"lock hash", |n| n.name.to_vec(), b"orders:42", b"{tag}x"),
            (b"channel", |n| n.channel(), b"redisson_lock__channel:{orders:42}", b"redisson_lock__channel:{tag}x"),
            (b"token", |n| n.token(), b"redisson_lock_token:{orders:42}", b"redisson_lock_token:{tag}x"),
            (b"reply latch", |n| n.latch(RequestId { client: "c", n: 17 }), b"redisson_unlock_latch:{orders:42}:c:17", b"redisson_unlock_latch:{tag}x:c:17"),
        ];
        let (plain, tagged) = (LockNames::new(b"orders:42"), LockNames::new(b"{tag}x"));
        for (what, name_of, want_plain, want_tagged) in table {
            let what = String::from_utf8_lossy(what);
            assert_eq!(name_of(&plain), want_plain, "{what}");
            assert_eq!(name_of(&tagged), want_tagged, "{what}");
        }
        assert_eq!(plain.display(), "orders:42");
        assert_eq!(LockNames::new(b"a\xffb").display(), "a\u{fffd}b");
    }

    /// Slots as CLUSTER KEYSLOT answers them (redis.io's examples and Redis 7.0 replies).
    #[test]
    fn slots_follow_redis() {
        assert_eq!(slot(b"123456789"), 12739);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_ne!(slot(b"foo{}{bar}"), slot(b"bar"));
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
    }

    #[test]
    fn helper_keys_name_their_object() {
        let n = LockNames::new(b"jobs:1");
        assert_eq!(helper_key_of(&n.token()), Some(Some(b"jobs:1".to_vec())));
        assert_eq!(helper_key_of(&LockNames::new(b"{t}x").queue()), Some(Some(b"{t}x".to_vec())));
        let grant = n.grant(RequestId { client: "c", n: 3 });
        assert_eq!(grant, b"ferrolock_grant:{jobs:1}:c:3");
        assert_eq!(slot(&grant), slot(b"jobs:1"));
        for other in [n.holder_info("c:1"), n.read_timeouts("c:1"), suffixed(b"jobs:1", "timeout"), n.queue_timeouts(), grant] {
            assert_eq!(helper_key_of(&other), Some(None), "{}", String::from_utf8_lossy(&other));
        }
        assert_eq!(helper_key_of(b"jobs:1"), None);
        assert_eq!(helper_key_of(b"{t}x"), None);
    }

    #[test]
    fn names_without_a_complete_tag_are_refused_on_a_cluster() {
        for good in [&b"orders:42"[..], b"{tag}x", b"a{b}c{", b"a{b}}"] {
            LockNames::new(good).check_one_slot().unwrap();
        }
        for bad in [&b"{"[..], b"}{", b"x{", b"{}", b"a}b", b"}"] {
            let e = LockNames::new(bad).check_one_slot().unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
            assert!(e.message().contains("Cluster"), "{}", e.message());
        }
    }
}
