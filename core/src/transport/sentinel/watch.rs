//! Following `+switch-master` at once: a subscription on every configured sentinel
//! (each publishes it when it takes the new configuration), for as long as the
//! client lives. The first that names a new master for our name retires the
//! client's connections (the next request asks the sentinels again; the subscriber
//! starts over and its waiters try again at once) and counts as a failover noticed,
//! which checks every hold at once (ctx.rs); the others find the client there already.

use std::time::Duration;

use futures_util::StreamExt;
use redis::ConnectionInfo;

use super::Master;

const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

impl Master {
    /// Listens on every sentinel until the future is dropped; `retire` ends the
    /// client's current command connection.
    pub async fn watch(&self, retire: impl Fn() + Send + Sync) {
        futures_util::future::join_all(self.sentinels.iter().map(|s| self.watch_one(s, &retire))).await;
    }

    async fn watch_one(&self, sentinel: &ConnectionInfo, retire: &(impl Fn() + Send + Sync)) {
        let mut pause = FIRST_PAUSE;
        loop {
            let subscribed = async {
                let mut pubsub = redis::Client::open(sentinel.clone())?.get_async_pubsub().await?;
                pubsub.subscribe("+switch-master").await?;
                redis::RedisResult::Ok(pubsub)
            };
            match tokio::time::timeout(self.connect_timeout, subscribed).await {
                Ok(Ok(mut pubsub)) => {
                    pause = FIRST_PAUSE;
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let payload: String = message.get_payload().unwrap_or_default();
                        // `<name> <old ip> <old port> <new ip> <new port>`
                        let words: Vec<&str> = payload.split_whitespace().collect();
                        if let [name, old_ip, old_port, new_ip, new_port] = words[..] {
                            if name != self.name {
                                continue;
                            }
                            if let Some(why) = self.switched(&address(old_ip, old_port), &address(new_ip, new_port)) {
                                // Off the old master before anyone is told: the check of
                                // every hold must not renew them there.
                                retire();
                                self.failovers.notice(why);
                            }
                        }
                    }
                    tracing::debug!(sentinel = %super::super::describe(sentinel.addr()), "the +switch-master subscription ended; subscribing again");
                }
                Ok(Err(e)) if e.code() == Some("NOPERM") => {
                    if !self.refusal_told.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        tracing::warn!(
                            sentinel = %super::super::describe(sentinel.addr()),
                            "a sentinel refused the subscription to +switch-master ({e}): failovers are noticed only when a command fails; \
                             the sentinels' user needs +subscribe &+switch-master"
                        );
                    }
                }
                Ok(Err(e)) => tracing::debug!(sentinel = %super::super::describe(sentinel.addr()), error = %e, "cannot subscribe to +switch-master; retrying"),
                Err(_) => tracing::debug!(sentinel = %super::super::describe(sentinel.addr()), "timed out subscribing to +switch-master; retrying"),
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

/// `ip:port` as the sentinels' GET-MASTER-ADDR-BY-NAME answers are written (IPv6 in brackets).
fn address(ip: &str, port: &str) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}
