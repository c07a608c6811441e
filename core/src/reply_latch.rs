//! Reply latches (Redisson's "unlock latch", `redisson_unlock_latch:{n}:<request>`):
//! a release writes its answer there so that a retry after a lost reply gets the
//! first answer. Once a release is answered its latch is useless; this deletes them
//! in the background, in batches, so releases stay one round-trip and latches
//! never pile up (they also expire by themselves). Not to be confused with a
//! count-down latch.
//!
//! A release only pushes its latch onto a shared list; the sweeper is woken when the
//! list stops being empty, gathers for [`GATHER`], then deletes the lot. (A channel
//! message per release, each waking the sweeper and arming a gather timer of its
//! own, cost the hot path a cross-thread wake-up and a timer per release.)

use std::sync::{Arc, Mutex};

use crate::transport::Conn;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

#[derive(Default)]
struct Queue {
    keys: Vec<Vec<u8>>,
    flushes: Vec<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Notify,
}

pub(crate) struct ReplyLatches {
    shared: Arc<Shared>,
}

const BATCH: usize = 256;
/// How long the sweeper gathers latches before deleting them: sequential releases
/// then share an UNLINK instead of adding one each.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

impl ReplyLatches {
    pub fn start(runtime: &Handle, mut conn: Conn) -> (ReplyLatches, JoinHandle<()>) {
        let shared = Arc::new(Shared::default());
        let sweeper = shared.clone();
        let task = runtime.spawn(async move {
            let mut keys = Vec::with_capacity(BATCH);
            loop {
                sweeper.wake.notified().await;
                let flushing = !sweeper.queue.lock().unwrap().flushes.is_empty();
                if !flushing {
                    tokio::time::sleep(GATHER).await;
                }
                let flushes = {
                    let mut queue = sweeper.queue.lock().unwrap();
                    std::mem::swap(&mut keys, &mut queue.keys);
                    std::mem::take(&mut queue.flushes)
                };
                for batch in keys.chunks(BATCH) {
                    let result: redis::RedisResult<i64> = redis::cmd("UNLINK").arg(batch).query_async(&mut conn).await;
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "could not delete unlock latches; they expire by themselves");
                    }
                }
                keys.clear();
                for done in flushes {
                    let _ = done.send(());
                }
            }
        });
        (ReplyLatches { shared }, task)
    }

    pub fn remove_later(&self, latch: Vec<u8>) {
        let first = {
            let mut queue = self.shared.queue.lock().unwrap();
            queue.keys.push(latch);
            queue.keys.len() == 1
        };
        // The sweeper is gathering already unless this is the first latch since it deleted.
        if first {
            self.shared.wake.notify_one();
        }
    }

    /// Waits until every latch queued so far has been deleted.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        self.shared.queue.lock().unwrap().flushes.push(done);
        self.shared.wake.notify_one();
        let _ = wait.await;
    }
}
