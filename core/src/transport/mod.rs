//! Where a client's commands and messages go. Everything above asks four questions
//! of it and never which deployment it is: the command connection ([`Conn`]), a
//! subscriber connection ([`Transport::subscriber`]), the publish command handed to
//! the scripts, and the cluster slot of a key (`None` off a cluster, used to group
//! multi-key calls). Only the single-server variant exists so far (`single.rs`);
//! Sentinel and Cluster plug in here.

mod single;

pub(crate) use single::Conn;

use futures_util::StreamExt;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo};

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};

/// One deployment's connections, as the client sees it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Transport {
    redis: redis::Client,
    /// `host:port` (or the socket path), for messages; never the URL (it may hold a password).
    pub server: String,
}

impl Transport {
    /// Parses the URL and checks, with one plain connection and a PING, that the
    /// address, TLS and credentials work (fails fast: no retry loop). Returns the
    /// transport and its command connection (connected lazily).
    pub async fn connect(url: &str, config: &Config) -> Result<(Transport, Conn)> {
        if url.contains('\0') {
            return Err(Error::invalid("the Redis URL contains a NUL byte"));
        }
        let info = url.into_connection_info().map_err(|e| {
            // redis-rs may echo parts of the URL: keep only its error kind, never the URL.
            Error::invalid(format!(
                "invalid Redis URL ({:?}); expected redis://[user:password@]host[:port][/db] or rediss://...",
                e.kind()
            ))
        })?;
        let server = describe(info.addr());
        let redis = redis::Client::open(info)
            .map_err(|e| Error::invalid(format!("invalid Redis URL for {server} ({:?})", e.kind())))?;
        let probe_config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.response_timeout));
        // The PING also catches a server that wants a password the URL does not give.
        let probe = tokio::time::timeout(config.connect_timeout + config.response_timeout, async {
            let mut conn = redis.get_multiplexed_async_connection_with_config(&probe_config).await?;
            redis::cmd("PING").query_async::<()>(&mut conn).await
        })
        .await;
        match probe {
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Connection,
                    format!("timed out connecting to Redis at {server}; check that it is running and reachable"),
                ))
            }
            Ok(Err(e)) => return Err(Error::from_redis(&e, &format!("cannot connect to Redis at {server}"))),
            Ok(Ok(_)) => {}
        }
        let conn = Conn::new(redis.clone(), config.connect_timeout, config.response_timeout);
        Ok((Transport { redis, server }, conn))
    }

    /// A new subscriber connection (messages in order, subscriptions changed on the side).
    pub async fn subscriber(&self) -> redis::RedisResult<(SubscriberSink, SubscriberStream)> {
        let (sink, stream) = self.redis.get_async_pubsub().await?.split();
        Ok((SubscriberSink(sink), SubscriberStream(stream)))
    }

    /// The command the scripts publish with: PUBLISH here, SPUBLISH on a cluster.
    pub fn publish_command(&self) -> &'static str {
        "publish"
    }

    /// The command counting a channel's subscribers: PUBSUB NUMSUB (SHARDNUMSUB on a cluster).
    pub fn numsub_command(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("PUBSUB");
        cmd.arg("NUMSUB");
        cmd
    }

    /// The cluster slot of a key; `None` off a cluster (every key is on one server).
    pub fn slot_of(&self, _key: &[u8]) -> Option<u16> {
        None
    }
}

/// Changes the subscriptions of a subscriber connection.
pub(crate) struct SubscriberSink(redis::aio::PubSubSink);

impl SubscriberSink {
    pub async fn subscribe(&mut self, channels: &[Vec<u8>]) -> redis::RedisResult<()> {
        self.0.subscribe(channels).await
    }

    pub async fn unsubscribe(&mut self, channel: &[u8]) -> redis::RedisResult<()> {
        self.0.unsubscribe(channel).await
    }
}

/// The messages of a subscriber connection: `(channel, payload)`; `None` once it broke.
pub(crate) struct SubscriberStream(redis::aio::PubSubStream);

impl SubscriberStream {
    pub async fn next(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        loop {
            let msg = self.0.next().await?;
            if let Ok(channel) = msg.get_channel::<Vec<u8>>() {
                return Some((channel, msg.get_payload_bytes().to_vec()));
            }
        }
    }
}

fn describe(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (TLS)"),
        ConnectionAddr::Unix(path) => path.display().to_string(),
        _ => "the configured address".to_string(),
    }
}
