//! Which host link (transport/host) a call on this thread uses: a client keeps one
//! per host thread, made by the host (an event loop) or on demand for a thread that
//! drives its own calls (`HostLink::driving`), and replaced after a pause when one
//! never came up.

use std::time::{Duration, Instant};

use super::{Conn, HostLink, Target};

/// A host thread's place in the client's list of host links.
pub(super) struct HostEntry {
    pub(super) link: HostLink,
    /// When a driving host (`HostLink::driving`) may get a new link after this one closed.
    retry_at: Option<Instant>,
    /// The pause before the next link, doubled while links fail to come up.
    pause: Duration,
}

/// The pause before a new link after one that never came up; doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

impl Conn {
    /// This thread's host link, for a call polled by an event loop that opened it
    /// (not a driving host's: its thread serves the link only while it blocks in a call).
    pub fn polled_host_here(&self) -> Option<HostLink> {
        if HostLink::driven_here() {
            return None;
        }
        self.host_here()
    }

    /// The reply latches every host link still gathers (the client is closing).
    pub fn take_host_latches(&self) -> Vec<Vec<u8>> {
        self.inner.hosts.read().unwrap().iter().flat_map(|entry| entry.link.take_latches()).collect()
    }

    /// A new connection for the calling thread's event loop (host.rs), replacing the
    /// one before (closed); `None` unless this is one server without TLS.
    pub fn attach_host(&self) -> Option<HostLink> {
        let link = self.new_host_link()?;
        let mut hosts = self.inner.hosts.write().unwrap();
        hosts.retain(|entry| !entry.link.is_abandoned());
        let entry = HostEntry { link: link.clone(), retry_at: None, pause: FIRST_PAUSE };
        match hosts.iter_mut().find(|entry| entry.link.thread() == link.thread()) {
            Some(old) => std::mem::replace(old, entry).link.close("replaced by a new one"),
            None => hosts.push(entry),
        }
        Some(link)
    }

    /// Closes every host's link (the client is shutting down).
    pub fn close_hosts(&self) {
        self.inner.close_hosts();
    }

    fn new_host_link(&self) -> Option<HostLink> {
        let Target::Single(client) = &*self.inner.target else { return None };
        HostLink::new(client.get_connection_info(), &self.inner.name, self.inner.connect_timeout)
    }

    /// This thread's host link, when a call polled here may use it. A driving host
    /// gets one made on demand: the call that asked goes on the client's connection.
    /// Whether this thread has an open host link to the server (none is made here).
    pub(super) fn host_open_here(&self) -> bool {
        if !HostLink::polling_here() {
            return false;
        }
        let thread = crate::transport::host::this_thread();
        self.inner.hosts.read().unwrap().iter().any(|entry| entry.link.thread() == thread && entry.link.closed().is_none())
    }

    pub(super) fn host_here(&self) -> Option<HostLink> {
        if !HostLink::polling_here() {
            return None;
        }
        let thread = crate::transport::host::this_thread();
        {
            let hosts = self.inner.hosts.read().unwrap();
            if let Some(entry) = hosts.iter().find(|entry| entry.link.thread() == thread) {
                if entry.link.closed().is_none() {
                    return Some(entry.link.clone()).filter(|link| link.usable_here());
                }
            }
        }
        if HostLink::driven_here() {
            self.drive_new_host_link(thread);
        }
        None
    }

    /// A new link for the driving host of `thread`, unless the pause after the last
    /// one's failure is still running.
    fn drive_new_host_link(&self, thread: std::thread::ThreadId) {
        let now = Instant::now();
        let mut hosts = self.inner.hosts.write().unwrap();
        hosts.retain(|entry| !entry.link.is_abandoned());
        let entry = hosts.iter_mut().find(|entry| entry.link.thread() == thread);
        if let Some(entry) = &entry {
            if entry.link.closed().is_none() {
                return;
            }
        }
        let pause = match entry {
            Some(entry) => {
                let retry_at = *entry.retry_at.get_or_insert_with(|| {
                    entry.pause = if entry.link.was_up() { Duration::ZERO } else { (entry.pause * 2).clamp(FIRST_PAUSE, MAX_PAUSE) };
                    now + entry.pause
                });
                if now < retry_at {
                    return;
                }
                entry.pause
            }
            None => Duration::ZERO,
        };
        let Some(link) = self.new_host_link() else { return };
        hosts.retain(|entry| entry.link.thread() != thread);
        hosts.push(HostEntry { link: link.clone(), retry_at: None, pause });
        HostLink::hand_to_host(link);
    }
}
