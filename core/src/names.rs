//! Redisson's key and channel names (DESIGN §2), in one place. A helper key with
//! prefix `p` is `p:{n}`, or `p:n` when the name already contains `{`, so every key
//! and channel of one lock lands in the cluster slot of its name.

/// The names that belong to one lock, computed once per lock handle.
#[derive(Debug, Clone)]
pub(crate) struct LockNames {
    /// The lock name as given: also the key of the lock hash.
    pub name: Vec<u8>,
    /// The name for messages (lossy UTF-8).
    pub display: String,
    /// `redisson_lock__channel:{n}`: release messages.
    pub channel: Vec<u8>,
    /// `redisson_lock_token:{n}`: fencing-token counter.
    pub token: Vec<u8>,
    /// `redisson_unlock_latch:{n}`: prefix of per-release reply latches (`<prefix>:<request-id>`).
    latch_prefix: Vec<u8>,
}

impl LockNames {
    pub fn new(name: &[u8]) -> Self {
        LockNames {
            name: name.to_vec(),
            display: String::from_utf8_lossy(name).into_owned(),
            channel: prefixed("redisson_lock__channel", name),
            token: prefixed("redisson_lock_token", name),
            latch_prefix: prefixed("redisson_unlock_latch", name),
        }
    }

    /// The reply latch of one release request.
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

    /// Every name, for a plain name and for one that carries its own hash tag.
    #[test]
    fn names_follow_redisson() {
        let table: [(&[u8], fn(&LockNames) -> Vec<u8>, &[u8], &[u8]); 4] = [
            (b"lock hash", |n| n.name.clone(), b"orders:42", b"{tag}x"),
            (b"channel", |n| n.channel.clone(), b"redisson_lock__channel:{orders:42}", b"redisson_lock__channel:{tag}x"),
            (b"token", |n| n.token.clone(), b"redisson_lock_token:{orders:42}", b"redisson_lock_token:{tag}x"),
            (b"reply latch", |n| n.latch("r1"), b"redisson_unlock_latch:{orders:42}:r1", b"redisson_unlock_latch:{tag}x:r1"),
        ];
        let (plain, tagged) = (LockNames::new(b"orders:42"), LockNames::new(b"{tag}x"));
        for (what, name_of, want_plain, want_tagged) in table {
            let what = String::from_utf8_lossy(what);
            assert_eq!(name_of(&plain), want_plain, "{what}");
            assert_eq!(name_of(&tagged), want_tagged, "{what}");
        }
        assert_eq!(plain.display, "orders:42");
    }
}
