//! Waiting on a [`Notify`] until a condition holds, without missing a wake-up
//! that lands between the check and the wait.

use tokio::sync::Notify;

/// Resolves once `done()` is true, checking it again at every notification. The
/// notification is registered (`enable`) before each check, so a `notify_waiters`
/// sent after a check that saw false still wakes this wait.
pub(crate) async fn until(notify: &Notify, mut done: impl FnMut() -> bool) {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if done() {
            return;
        }
        notified.await;
    }
}
