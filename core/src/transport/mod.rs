//! Where a client's commands and messages go. Everything above asks four questions
//! of it and never which deployment it is: the command connection ([`Conn`]), a
//! subscriber connection ([`Transport::subscriber`]), the publish command handed to
//! the scripts, and the cluster slot of a key (`None` off a cluster, used to group
//! multi-key calls). Three deployments plug in here: one server, a master behind
//! Sentinel (`sentinel.rs`) and a Cluster (`cluster.rs`); `url.rs` tells which a URL names.
//! What the server supports (`caps.rs`) is asked once at connect, and picks the
//! pub/sub flavour: sharded on a Cluster that has it, classic elsewhere.

mod caps;
mod cluster;
mod command;
mod conn;
mod failover;
mod host;
mod replicas;
mod resp;
mod sentinel;
mod subscriber;
mod url;

pub(crate) use caps::Capabilities;
pub(crate) use command::Command;
pub(crate) use conn::{Acked, Conn, Unconfirmed};
pub(crate) use failover::Notice;
pub use host::{HostAddress, HostLink};
pub(crate) use subscriber::{Event, SubscriberSink, SubscriberStream};

use std::sync::Arc;

use redis::{AsyncConnectionConfig, ConnectionAddr, Value};
use tokio::sync::mpsc;

use crate::config::{Config, SentinelAuth};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::Recorder;

/// The deployment a client talks to.
pub(crate) enum Target {
    Single(redis::Client),
    Sentinel(sentinel::Master),
    Cluster(cluster::Nodes),
}

/// One deployment's connections, as the client sees it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Transport {
    target: Arc<Target>,
    /// What the client talks to (`host:port`, the sentinels' master or the cluster's
    /// seeds), for messages; never the URL (it may hold a password).
    pub server: String,
    /// The name every connection gives itself (CLIENT SETNAME), for operators.
    name: Arc<str>,
    /// The client's counters (reconnects are counted here).
    pub metrics: Arc<Recorder>,
    /// Host links (host/) can reach this server: one server over TCP or a Unix socket.
    host_links: bool,
    /// Failovers noticed (failover.rs).
    failovers: Arc<failover::Failovers>,
    /// What the server supports, asked once at connect.
    caps: Arc<Capabilities>,
}

impl Transport {
    /// Parses the URL and checks, with one connection and a PING, that the address,
    /// TLS and credentials work (fails fast: no retry loop). A `redis://` URL that
    /// points at a cluster node is used as the cluster's seed. Returns the transport
    /// and its command connection (connected lazily). Every connection is named `name`.
    pub async fn connect(
        url: &str,
        config: &Config,
        sentinel_auth: &SentinelAuth,
        name: String,
        metrics: Arc<Recorder>,
    ) -> Result<(Transport, Conn)> {
        let failovers = Arc::new(failover::Failovers::new(metrics.clone()));
        let (target, db, caps) = match url::parse(url)? {
            url::Endpoint::Single(info) => {
                let server = describe(info.addr());
                let db = info.redis_settings().db();
                let client = redis::Client::open(info.clone())
                    .map_err(|e| Error::invalid(format!("invalid Redis URL for {server} ({:?})", e.kind())))?;
                let (cluster, caps) = probe(&server, config, async { single_probe(&client, config).await }).await?;
                if cluster {
                    tracing::info!(%server, "the Redis URL names a cluster node (cluster_enabled:1); using it as the cluster's seed");
                    if db != 0 {
                        return Err(Error::invalid(format!(
                            "{server} is a cluster node and a cluster has only database 0: remove /{db} from the URL"
                        )));
                    }
                    (Target::Cluster(cluster::Nodes::new(vec![info], config.connect_timeout, config.response_timeout)), 0, caps)
                } else {
                    (Target::Single(client), db, caps)
                }
            }
            url::Endpoint::Sentinel { sentinels, master, data } => {
                let db = data.redis_settings().db();
                let master =
                    sentinel::Master::new(sentinels, master, &data, sentinel_auth, config.connect_timeout, failovers.clone())?;
                let server = master.describe.clone();
                let (_, caps) = probe(&server, config, async {
                    let client = master.client().await?;
                    single_probe(&client, config).await
                })
                .await
                .map_err(|e| {
                    if !e.message().contains("username and password") {
                        return e;
                    }
                    // Two sets of credentials here: say which goes where.
                    Error::new(e.kind(), format!(
                        "{} (the URL's credentials are the data nodes'; the sentinels' own are the sentinel username/password options)",
                        e.message()
                    ))
                })?;
                (Target::Sentinel(master), db, caps)
            }
            url::Endpoint::Cluster { nodes } => {
                let nodes = cluster::Nodes::new(nodes, config.connect_timeout, config.response_timeout);
                let caps = probe(&nodes.describe.clone(), config, async {
                    let mut conn = nodes.connection().await?;
                    redis::cmd("PING").query_async::<Value>(&mut conn).await?;
                    nodes.capabilities().await
                })
                .await?;
                (Target::Cluster(nodes), 0, caps)
            }
        };
        let server = match &target {
            Target::Single(client) => describe(client.get_connection_info().addr()),
            Target::Sentinel(master) => master.describe.clone(),
            Target::Cluster(nodes) => nodes.describe.clone(),
        };
        if matches!(target, Target::Cluster(_)) && caps.sharded_pubsub && !caps.resp3 {
            // redis-rs delivers sharded messages only as RESP3 pushes.
            let need = format!("waiting on the cluster at {server} (sharded pub/sub, which ferrolock receives over RESP3)");
            return Err(caps.lacks(&need, "HELLO", "enable HELLO on the servers (rename-command may have disabled it)"));
        }
        caps.log(&server);
        let caps = Arc::new(caps);
        let target = Arc::new(target);
        let name: Arc<str> = name.into();
        let host_links = matches!(&*target, Target::Single(client)
            if matches!(client.get_connection_info().addr(), ConnectionAddr::Tcp(..) | ConnectionAddr::Unix(..)));
        let conn = Conn::new(target.clone(), db, config, name.clone(), metrics.clone(), failovers.clone());
        Ok((Transport { target, server, name, metrics, host_links, failovers, caps }, conn))
    }

    /// What watches for failovers for as long as the client lives (none on one
    /// server): Sentinel's `+switch-master` on every sentinel, or a cluster's slot map
    /// (looked at while `busy`, the client holding something, and after hints).
    pub fn watcher(&self, conn: Conn, busy: impl Fn() -> bool + Send + Sync + 'static) -> Option<futures_util::future::BoxFuture<'static, ()>> {
        use futures_util::FutureExt;
        let target = self.target.clone();
        match &*self.target {
            Target::Single(_) => None,
            Target::Sentinel(_) => Some(
                async move {
                    if let Target::Sentinel(master) = &*target {
                        master.watch(|| conn.retire_now()).await;
                    }
                }
                .boxed(),
            ),
            Target::Cluster(_) => {
                let failovers = self.failovers.clone();
                Some(
                    async move {
                        if let Target::Cluster(nodes) = &*target {
                            cluster::watch(conn, nodes, failovers, busy).await;
                        }
                    }
                    .boxed(),
                )
            }
        }
    }

    /// Listens for failovers noticed from now on.
    pub fn failovers(&self) -> tokio::sync::watch::Receiver<Notice> {
        self.failovers.subscribe()
    }

    /// Something that may mean a failover (see `Failovers::hint`).
    pub fn hint_failover(&self) {
        if self.is_cluster() {
            self.failovers.hint();
        }
    }

    /// What the server supports, as it said at connect.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// True on a cluster whose lock messages are sharded (SSUBSCRIBE/SPUBLISH, Redis
    /// 7.0+); a cluster before 7.0 broadcasts classic PUBLISH to every node, as
    /// Redisson falls back to there.
    fn sharded(&self) -> bool {
        self.is_cluster() && self.caps.sharded_pubsub
    }

    /// An empty command in the form a call polled here will most likely send: RESP
    /// when a host polls it and this client may have a host link (one server, no TLS),
    /// else a redis-rs `Cmd` (command.rs).
    pub fn command(&self) -> Command {
        Command::new(self.host_links && HostLink::polling_here())
    }

    /// True on a cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(*self.target, Target::Cluster(_))
    }

    /// True behind Sentinel or on a Cluster: where acquires are acknowledged by
    /// replicas under a policy (conn/acked.rs).
    pub fn has_replicas(&self) -> bool {
        !matches!(*self.target, Target::Single(_))
    }

    /// A new subscriber connection (messages in order, subscriptions changed on the
    /// side), named like every connection of the client.
    pub async fn subscriber(&self) -> redis::RedisResult<(SubscriberSink, SubscriberStream)> {
        let client = match &*self.target {
            Target::Single(client) => client.clone(),
            Target::Sentinel(master) => master.client().await?,
            Target::Cluster(nodes) if self.caps.resp3 => {
                let (mut conn, pushes) = nodes.subscriber().await?;
                set_name(&mut conn, &self.name).await?;
                let sharded = self.caps.sharded_pubsub;
                return Ok((SubscriberSink::Cluster { conn, sharded }, SubscriberStream::Push(pushes)));
            }
            // Without RESP3 (refused at connect when sharded): classic pub/sub on one
            // node, which hears every node's PUBLISH.
            Target::Cluster(nodes) => {
                let (sink, stream) = nodes.classic_pubsub().await?.split();
                return Ok((SubscriberSink::Node(sink), SubscriberStream::Node(stream)));
            }
        };
        if !self.caps.resp3 {
            let (sink, stream) = client.get_async_pubsub().await?.split();
            return Ok((SubscriberSink::Node(sink), SubscriberStream::Node(stream)));
        }
        // RESP3 with a push channel: an ordinary connection that can also name itself.
        let (tx, rx) = mpsc::unbounded_channel();
        let info = client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
        let info = info.set_redis_settings(settings);
        let config = AsyncConnectionConfig::new().set_push_sender(tx).set_response_timeout(None);
        match redis::Client::open(info)?.get_multiplexed_async_connection_with_config(&config).await {
            Ok(mut conn) => {
                set_name(&mut conn, &self.name).await?;
                Ok((SubscriberSink::Push(conn), SubscriberStream::Push(rx)))
            }
            // A server without RESP3 (before Redis 6, or HELLO renamed away): RESP2
            // pub/sub, which cannot name itself.
            Err(e) if !(e.is_io_error() || e.is_connection_dropped() || e.is_timeout()) => {
                tracing::debug!(error = %e, "no RESP3 on this server; the pub/sub connection uses RESP2 and stays unnamed");
                let (sink, stream) = client.get_async_pubsub().await?.split();
                Ok((SubscriberSink::Node(sink), SubscriberStream::Node(stream)))
            }
            Err(e) => Err(e),
        }
    }

    /// The command the scripts publish with: PUBLISH, or SPUBLISH on a cluster that has it.
    pub fn publish_command(&self) -> &'static str {
        if self.sharded() {
            "spublish"
        } else {
            "publish"
        }
    }

    /// The command counting a channel's subscribers: PUBSUB NUMSUB (SHARDNUMSUB on a
    /// sharded cluster; classic NUMSUB goes to every node of a cluster, summed).
    pub fn numsub_command(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("PUBSUB");
        cmd.arg(if self.sharded() { "SHARDNUMSUB" } else { "NUMSUB" });
        cmd
    }

    /// The cluster slot of a key; `None` off a cluster (every key is on one server).
    pub fn slot_of(&self, key: &[u8]) -> Option<u16> {
        self.is_cluster().then(|| crate::names::slot(key))
    }
}

/// Runs a connection probe within the connect and response timeouts, turning its
/// failure into a message that names the server (never the URL).
async fn probe<T>(server: &str, config: &Config, check: impl std::future::Future<Output = redis::RedisResult<T>>) -> Result<T> {
    match tokio::time::timeout(config.connect_timeout + config.response_timeout, check).await {
        Err(_) => Err(Error::new(
            ErrorKind::Connection,
            format!("timed out connecting to Redis at {server}; check that it is running and reachable"),
        )),
        Ok(Err(e)) => Err(Error::from_redis(&e, &format!("cannot connect to Redis at {server}"))),
        Ok(Ok(value)) => Ok(value),
    }
}

/// PING (which also catches a server that wants a password the URL does not give),
/// then whether the server is a cluster node, and what it supports.
async fn single_probe(client: &redis::Client, config: &Config) -> redis::RedisResult<(bool, Capabilities)> {
    let probe_config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(config.connect_timeout))
        .set_response_timeout(Some(config.response_timeout));
    let mut conn = client.get_multiplexed_async_connection_with_config(&probe_config).await?;
    redis::cmd("PING").query_async::<()>(&mut conn).await?;
    // A user whose ACL refuses INFO is on a plain server as far as we can tell.
    let info: String = redis::cmd("INFO").arg("cluster").query_async(&mut conn).await.unwrap_or_default();
    let cluster = info.lines().any(|line| line.trim() == "cluster_enabled:1");
    Ok((cluster, Capabilities::learn(&mut conn).await?))
}

/// Names a connection for CLIENT LIST. An ACL that refuses CLIENT leaves it unnamed
/// (said at debug level): the name is for operators, never worth failing a lock over.
pub(crate) async fn set_name(conn: &mut impl redis::aio::ConnectionLike, name: &str) -> redis::RedisResult<()> {
    match redis::cmd("CLIENT").arg("SETNAME").arg(name).query_async::<Value>(conn).await {
        Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() => Err(e),
        Err(e) => {
            tracing::debug!(error = %e, "could not name the connection (CLIENT SETNAME)");
            Ok(())
        }
        Ok(_) => Ok(()),
    }
}

pub(crate) fn describe(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (TLS)"),
        ConnectionAddr::Unix(path) => path.display().to_string(),
        _ => "the configured address".to_string(),
    }
}
