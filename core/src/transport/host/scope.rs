//! Where a call may use a host link: polled on the link's thread, inside the host's
//! [`HostLink::polling`] (or [`HostLink::driving`], for a host that also takes links
//! made on demand).

use super::HostLink;

thread_local! {
    static POLLING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Inside [`HostLink::driving`]: links made for this thread's host on demand,
    /// which the host has not taken yet.
    static DRIVEN: std::cell::RefCell<Option<Vec<HostLink>>> = const { std::cell::RefCell::new(None) };
    /// This thread's id, read per request (`std::thread::current` clones a handle).
    static THREAD: std::thread::ThreadId = std::thread::current().id();
}

/// The calling thread's id.
pub(crate) fn this_thread() -> std::thread::ThreadId {
    THREAD.with(|id| *id)
}

impl HostLink {
    /// Runs `poll` as the host's event loop polling calls: only calls polled inside
    /// it use the link. (Other code on the host's thread, such as a blocking shutdown
    /// when the host exits, must not send where nobody will write or read.)
    pub fn polling<R>(poll: impl FnOnce() -> R) -> R {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                POLLING.set(self.0);
            }
        }
        let _reset = Reset(POLLING.replace(true));
        poll()
    }

    /// True when a call polled here may send on the link: on the host's thread,
    /// inside [`HostLink::polling`].
    pub(crate) fn usable_here(&self) -> bool {
        POLLING.get() && this_thread() == self.shared.thread
    }

    /// [`HostLink::polling`] for a host that does the I/O of every client it calls
    /// (a thread blocked in a call, as in Python): a client with no link for this
    /// thread makes one (after a pause if the last one never came up) and the call
    /// that asked uses the client's connection meanwhile. Gives `poll`'s result and
    /// the links made, which the host then connects and serves as [`HostLink::polling`]'s.
    pub fn driving<R>(poll: impl FnOnce() -> R) -> (R, Vec<HostLink>) {
        struct Reset(Option<Vec<HostLink>>);
        impl Drop for Reset {
            fn drop(&mut self) {
                DRIVEN.set(self.0.take());
            }
        }
        let reset = Reset(DRIVEN.replace(Some(Vec::new())));
        let result = HostLink::polling(poll);
        let made = DRIVEN.with_borrow_mut(|made| made.as_mut().map(std::mem::take).unwrap_or_default());
        drop(reset);
        (result, made)
    }

    /// True inside [`HostLink::polling`] on this thread.
    pub(crate) fn polling_here() -> bool {
        POLLING.get()
    }

    /// True inside [`HostLink::driving`] on this thread (links may be made here).
    pub(crate) fn driven_here() -> bool {
        POLLING.get() && DRIVEN.with_borrow(|made| made.is_some())
    }

    /// Hands a link made on demand to the host driving this thread.
    pub(crate) fn hand_to_host(link: HostLink) {
        DRIVEN.with_borrow_mut(|made| made.get_or_insert_with(Vec::new).push(link));
    }
}
