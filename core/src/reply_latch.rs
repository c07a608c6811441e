//! Reply latches (Redisson's "unlock latch", `redisson_unlock_latch:{n}:<request>`):
//! a release writes its answer there so that a retry after a lost reply gets the
//! first answer. Once a release is answered its latch is useless; this deletes them
//! in the background, in batches, so releases stay one round-trip and latches
//! never pile up (they also expire by themselves). Not to be confused with a
//! count-down latch.

use crate::transport::Conn;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

enum Job {
    Delete(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

pub(crate) struct ReplyLatches {
    tx: mpsc::UnboundedSender<Job>,
}

const BATCH: usize = 256;
/// How long the sweeper gathers latches before one UNLINK: sequential releases
/// then share a command instead of adding one each.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

impl ReplyLatches {
    pub fn start(runtime: &Handle, mut conn: Conn) -> (ReplyLatches, JoinHandle<()>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = runtime.spawn(async move {
            let mut keys = Vec::with_capacity(BATCH);
            let mut flushes = Vec::new();
            while let Some(job) = rx.recv().await {
                let gather_until = tokio::time::Instant::now() + GATHER;
                let mut next = Some(job);
                while let Some(job) = next.take() {
                    match job {
                        Job::Delete(key) => keys.push(key),
                        Job::Flush(done) => flushes.push(done),
                    }
                    if keys.len() < BATCH && flushes.is_empty() {
                        next = tokio::time::timeout_at(gather_until, rx.recv()).await.ok().flatten();
                    }
                }
                if !keys.is_empty() {
                    let result: redis::RedisResult<i64> = redis::cmd("UNLINK").arg(&keys).query_async(&mut conn).await;
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "could not delete unlock latches; they expire by themselves");
                    }
                    keys.clear();
                }
                for done in flushes.drain(..) {
                    let _ = done.send(());
                }
            }
        });
        (ReplyLatches { tx }, task)
    }

    pub fn remove_later(&self, latch: Vec<u8>) {
        let _ = self.tx.send(Job::Delete(latch));
    }

    /// Waits until every latch queued so far has been deleted.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Job::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }
}
