//! Redisson's key and channel names for one lock (DESIGN §2). Every key of a lock
//! lands in the cluster slot of the lock name.

/// The names that belong to one lock, computed once per lock handle.
#[derive(Debug, Clone)]
pub(crate) struct LockKeys {
    /// The lock name as given: also the key of the lock hash.
    pub name: Vec<u8>,
    /// The name for messages (lossy UTF-8).
    pub display: String,
    /// `redisson_lock__channel:{n}`: release messages.
    pub channel: Vec<u8>,
    /// `redisson_lock_token:{n}`: fencing-token counter.
    pub token: Vec<u8>,
    /// `redisson_unlock_latch:{n}`: prefix of per-release latches (`<prefix>:<request-id>`).
    latch_prefix: Vec<u8>,
}

impl LockKeys {
    pub fn new(name: &[u8]) -> Self {
        LockKeys {
            name: name.to_vec(),
            display: String::from_utf8_lossy(name).into_owned(),
            channel: prefixed("redisson_lock__channel", name),
            token: prefixed("redisson_lock_token", name),
            latch_prefix: prefixed("redisson_unlock_latch", name),
        }
    }

    /// The unlock latch of one release request.
    pub fn latch(&self, request_id: &str) -> Vec<u8> {
        let mut key = self.latch_prefix.clone();
        key.push(b':');
        key.extend_from_slice(request_id.as_bytes());
        key
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_redisson() {
        let k = LockKeys::new(b"orders:42");
        assert_eq!(k.channel, b"redisson_lock__channel:{orders:42}");
        assert_eq!(k.token, b"redisson_lock_token:{orders:42}");
        assert_eq!(k.latch("r1"), b"redisson_unlock_latch:{orders:42}:r1");
        let t = LockKeys::new(b"{tag}x");
        assert_eq!(t.channel, b"redisson_lock__channel:{tag}x");
    }
}
