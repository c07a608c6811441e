//! The subscriber connection's two halves: the sink that changes subscriptions (and
//! PINGs the servers behind them) and the stream of what they report.

use futures_util::StreamExt;
use redis::cluster_async::ClusterConnection;
use redis::{PushInfo, PushKind, Value};
use tokio::sync::mpsc;

/// Changes the subscriptions of a subscriber connection.
pub(crate) enum SubscriberSink {
    /// RESP2, for servers without RESP3.
    Node(redis::aio::PubSubSink),
    /// RESP3 on one server: an ordinary connection whose messages come as pushes.
    Push(redis::aio::MultiplexedConnection),
    /// A cluster's, RESP3: sharded, one SSUBSCRIBE per channel (channels of different
    /// slots live on different nodes); else classic SUBSCRIBE, which any node serves.
    Cluster { conn: ClusterConnection, sharded: bool },
}

impl SubscriberSink {
    pub async fn subscribe(&mut self, channels: &[Vec<u8>]) -> redis::RedisResult<()> {
        match self {
            SubscriberSink::Node(sink) => sink.subscribe(channels).await,
            SubscriberSink::Push(conn) => conn.subscribe(channels).await,
            SubscriberSink::Cluster { conn, sharded } => {
                for channel in channels {
                    if *sharded {
                        conn.ssubscribe(channel).await?;
                    } else {
                        conn.subscribe(channel).await?;
                    }
                }
                Ok(())
            }
        }
    }

    pub async fn unsubscribe(&mut self, channel: &[u8]) -> redis::RedisResult<()> {
        match self {
            SubscriberSink::Node(sink) => sink.unsubscribe(channel).await,
            SubscriberSink::Push(conn) => conn.unsubscribe(channel).await,
            SubscriberSink::Cluster { conn, sharded: true } => conn.sunsubscribe(channel).await,
            SubscriberSink::Cluster { conn, sharded: false } => conn.unsubscribe(channel).await,
        }
    }

    /// Whether every server this connection subscribes on still answers (PING, on a
    /// cluster to every master), within `timeout`. A stopped or cut-off server keeps
    /// its sockets open: without asking, its subscriptions would look alive forever.
    pub async fn check(&mut self, timeout: std::time::Duration) -> redis::RedisResult<()> {
        let ping = async {
            match self {
                SubscriberSink::Node(sink) => sink.ping::<Value>().await.map(|_| ()),
                SubscriberSink::Push(conn) => redis::cmd("PING").query_async::<Value>(conn).await.map(|_| ()),
                SubscriberSink::Cluster { conn, .. } => redis::cmd("PING").query_async::<Value>(conn).await.map(|_| ()),
            }
        };
        match tokio::time::timeout(timeout, ping).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer to PING").into()),
        }
    }
}

/// What a subscriber connection reports.
pub(crate) enum Event {
    /// A message: `(channel, payload)`.
    Message(Vec<u8>, Vec<u8>),
    /// The server ended a subscription (a cluster moved the channel's slot or
    /// failed its node over), or confirmed our own unsubscribe.
    Unsubscribed(Vec<u8>),
}

/// The events of a subscriber connection; `None` once it broke (on a cluster: once
/// any node's connection broke, since messages may have been lost there).
pub(crate) enum SubscriberStream {
    Node(redis::aio::PubSubStream),
    /// RESP3 pushes, of one server or of a cluster's nodes.
    Push(mpsc::UnboundedReceiver<PushInfo>),
}

impl SubscriberStream {
    pub async fn next(&mut self) -> Option<Event> {
        match self {
            SubscriberStream::Node(stream) => loop {
                let msg = stream.next().await?;
                if let Ok(channel) = msg.get_channel::<Vec<u8>>() {
                    return Some(Event::Message(channel, msg.get_payload_bytes().to_vec()));
                }
            },
            SubscriberStream::Push(pushes) => loop {
                let push = pushes.recv().await?;
                let channel = match push.data.first() {
                    Some(Value::BulkString(channel)) => channel.clone(),
                    _ => Vec::new(),
                };
                match push.kind {
                    PushKind::Disconnection => return None,
                    PushKind::Message | PushKind::SMessage => {
                        if let Some(Value::BulkString(payload)) = push.data.get(1) {
                            return Some(Event::Message(channel, payload.clone()));
                        }
                    }
                    PushKind::Unsubscribe | PushKind::SUnsubscribe => return Some(Event::Unsubscribed(channel)),
                    _ => {}
                }
            },
        }
    }
}
