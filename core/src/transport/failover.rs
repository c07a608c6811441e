//! Failovers the client noticed: Sentinel's `+switch-master` (sentinel/watch.rs), a
//! reconnect that lands on another master or on a restarted one (another run id:
//! conn/mod.rs), a cluster whose slots changed masters (cluster.rs). Each is counted
//! once (the client's metrics) and told to whoever listens: the client checks every
//! hold at once (ctx.rs), the subscriber connection starts over on the new master
//! (waiting/subscriber.rs).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use crate::metrics::Recorder;

/// The latest failover noticed.
#[derive(Debug, Clone)]
pub(crate) struct Notice {
    /// How many were noticed so far (0: none yet).
    pub seq: u64,
    /// When the latest was noticed.
    pub at: Instant,
    /// What was noticed, for the log.
    pub why: String,
}

/// Where failovers are told. Cheap to share.
pub(crate) struct Failovers {
    tx: watch::Sender<Notice>,
    metrics: Arc<Recorder>,
    /// Something that may mean a failover (a cluster node's connection broke, a MOVED
    /// or a server-side SUNSUBSCRIBE): the cluster's watcher looks at the slot map now.
    hints: tokio::sync::Notify,
}

impl Failovers {
    pub fn new(metrics: Arc<Recorder>) -> Failovers {
        let (tx, _) = watch::channel(Notice { seq: 0, at: Instant::now(), why: String::new() });
        Failovers { tx, metrics, hints: tokio::sync::Notify::new() }
    }

    /// One failover noticed: counted, logged, and told to every listener.
    pub fn notice(&self, why: String) {
        tracing::info!(%why, "failover noticed; checking every hold on the new master now");
        self.metrics.failover_noticed();
        self.tx.send_modify(|notice| {
            notice.seq += 1;
            notice.at = Instant::now();
            notice.why = why;
        });
    }

    /// Something that may mean a failover happened or is under way (see `hints`).
    pub fn hint(&self) {
        self.hints.notify_one();
    }

    /// Resolves at the next hint (or at one given since the last wait).
    pub async fn hinted(&self) {
        self.hints.notified().await
    }

    /// Listens for the next ones (not for those before).
    pub fn subscribe(&self) -> watch::Receiver<Notice> {
        self.tx.subscribe()
    }
}
