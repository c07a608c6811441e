//! Redis Sentinel: the data connections go to the master that a majority of the
//! configured sentinels name, asked again on every (re)connect, so a client follows a
//! failover by itself. Every sentinel is asked at once (each bounded by the connect
//! timeout), and the answer of a majority of those configured is followed, never the
//! first reply: for about a second after a failover the sentinels disagree, and a
//! stale one may name a restarted, empty old master. The connection confirms ROLE
//! master on the node (conn/mod.rs), and a connection that lands on another master
//! than the last one, or on the same address with another run id (a restarted,
//! possibly empty master), counts as a noticed failover. `+switch-master` is followed
//! at once (watch.rs): a sentinel publishes it only once it took the configuration of
//! a failover that a majority of the sentinels authorized, so for a while its new
//! master is taken as soon as any sentinel names it (ROLE still confirms it), and its
//! old address is not taken while the sentinels' majority still names it.

mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, RedisResult};

use super::failover::Failovers;
use crate::config::SentinelAuth;
use crate::error::Result;

/// How long after a `+switch-master` its old address is refused while the sentinels'
/// majority still names it, and its new one taken as soon as any names it (their
/// configurations converge within a few hello periods, 2 s each by default).
const SWITCH_FOR: Duration = Duration::from_secs(60);

/// The master of one name, as the sentinels say.
pub(crate) struct Master {
    sentinels: Vec<ConnectionInfo>,
    name: String,
    /// The data nodes' credentials, database and TLS settings (the address is asked).
    data: ConnectionInfo,
    connect_timeout: Duration,
    pub describe: String,
    failovers: Arc<Failovers>,
    seen: Mutex<Seen>,
    /// Whether a sentinel's ACL refusal of `+switch-master` was told (once per client).
    refusal_told: std::sync::atomic::AtomicBool,
}

/// What this client last saw of the master.
#[derive(Default)]
struct Seen {
    /// The address (`host:port`) of the master it is connected to, and that master's run id.
    current: Option<String>,
    run_id: Option<String>,
    /// The latest `+switch-master`: from which address to which, and when.
    switch: Option<(String, String, Instant)>,
}

/// The master a majority of the sentinels name.
pub(crate) struct Located {
    pub client: redis::Client,
    pub address: String,
    /// Replicas of it that the agreeing sentinels know as healthy (the most any lists).
    pub known_replicas: u32,
}

/// One sentinel's answer.
enum Answer {
    Names(String, u32),
    Unknown,
    Failed(redis::RedisError),
}

impl Master {
    pub fn new(
        sentinels: Vec<String>,
        name: String,
        data: &ConnectionInfo,
        auth: &SentinelAuth,
        connect_timeout: Duration,
        failovers: Arc<Failovers>,
    ) -> Result<Master> {
        let sentinels = sentinels
            .iter()
            .map(|url| {
                let info = super::url::single(url)?;
                let mut settings = info.redis_settings().clone();
                if let Some(user) = &auth.username {
                    settings = settings.set_username(user);
                }
                if let Some(password) = &auth.password {
                    settings = settings.set_password(password);
                }
                Ok(info.set_redis_settings(settings))
            })
            .collect::<Result<Vec<_>>>()?;
        let describe = format!(
            "master \"{name}\" via sentinels {}",
            sentinels.iter().map(|i| super::describe(i.addr())).collect::<Vec<_>>().join(",")
        );
        let seen = Mutex::new(Seen::default());
        let refusal_told = Default::default();
        Ok(Master { sentinels, name, data: data.clone(), connect_timeout, describe, failovers, seen, refusal_told })
    }

    /// A client for the current master (see [`Master::locate`]).
    pub async fn client(&self) -> RedisResult<redis::Client> {
        Ok(self.locate().await?.client)
    }

    /// The master a majority of the configured sentinels name, asking all at once;
    /// a refusal (nothing was sent to a data node) naming each sentinel's answer when
    /// there is no majority, or when it is an address a `+switch-master` just retired.
    pub async fn locate(&self) -> RedisResult<Located> {
        let answers = futures_util::future::join_all(self.sentinels.iter().map(|s| self.ask(s))).await;
        let mut votes: HashMap<&str, (usize, u32)> = HashMap::new();
        for answer in &answers {
            if let Answer::Names(address, healthy) = answer {
                let entry = votes.entry(address).or_default();
                entry.0 += 1;
                entry.1 = entry.1.max(*healthy);
            }
        }
        let majority = self.sentinels.len() / 2 + 1;
        let winner = votes.iter().find(|(_, (n, _))| *n >= majority).map(|(a, v)| (a.to_string(), v.1));
        let switch = {
            let mut seen = self.seen.lock().unwrap();
            match (&seen.switch, &winner) {
                (Some((_, _, at)), _) if at.elapsed() >= SWITCH_FOR => seen.switch = None,
                // The majority caught up with the switch, or moved on from it.
                (Some((old, _, _)), Some((address, _))) if address != old => seen.switch = None,
                _ => {}
            }
            seen.switch.clone()
        };
        let found = match (winner, switch) {
            (Some(winner), None) => Some(winner),
            (_, Some((_, new, _))) => votes.get(new.as_str()).map(|v| (new.clone(), v.1)),
            (None, None) => None,
        };
        let Some((address, known_replicas)) = found else {
            let auth = |e: &redis::RedisError| {
                e.kind() == redis::ErrorKind::AuthenticationFailed || matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
            };
            if answers.iter().any(|a| matches!(a, Answer::Failed(e) if auth(e))) {
                let said = self.said(&answers);
                return Err(redis::RedisError::from((redis::ErrorKind::AuthenticationFailed, "the sentinels refused us", said)));
            }
            // An ACL on the sentinels: a permission error (naming the rule), not an outage.
            if answers.iter().any(|a| matches!(a, Answer::Failed(e) if e.code() == Some("NOPERM"))) {
                let said = self.said(&answers);
                let kind = redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm);
                return Err(redis::RedisError::from((kind, "the sentinels refused the sentinels' user (the sentinel username option)", said)));
            }
            return Err(refused(format!(
                "no majority ({majority} of {}) of the sentinels names a master \"{}\" that this client can follow: {}",
                self.sentinels.len(),
                self.name,
                self.said(&answers)
            )));
        };
        let client = redis::Client::open(self.data_node(&address)?)?;
        Ok(Located { client, address, known_replicas })
    }

    /// What each sentinel answered, for messages.
    fn said(&self, answers: &[Answer]) -> String {
        let said: Vec<String> = self
            .sentinels
            .iter()
            .zip(answers)
            .map(|(s, answer)| {
                let s = super::describe(s.addr());
                match answer {
                    Answer::Names(address, _) => format!("sentinel {s} names {address}"),
                    Answer::Unknown => format!("sentinel {s} knows no such master"),
                    Answer::Failed(why) => format!("sentinel {s} did not answer ({why})"),
                }
            })
            .collect();
        said.join("; ")
    }

    /// One sentinel's master and the replicas it knows as healthy, within the connect timeout.
    async fn ask(&self, sentinel: &ConnectionInfo) -> Answer {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.connect_timeout));
        let ask = async {
            let mut conn = redis::Client::open(sentinel.clone())?.get_multiplexed_async_connection_with_config(&config).await?;
            let mut pipe = redis::pipe();
            pipe.cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(&self.name);
            pipe.cmd("SENTINEL").arg("REPLICAS").arg(&self.name);
            let mut replies: Vec<redis::Value> = pipe.ignore_errors().query_async(&mut conn).await?;
            // Refused by an ACL, the replicas' count would read as none: say so instead.
            let replicas = match replies.pop().unwrap_or(redis::Value::Nil).extract_error() {
                Err(e) if e.code() == Some("NOPERM") => return Err(no_permission("replicas")),
                reply => reply.ok().and_then(|r| redis::from_redis_value::<Vec<HashMap<String, String>>>(r).ok()),
            };
            let address = match replies.pop().unwrap_or(redis::Value::Nil).extract_error() {
                Err(e) if e.code() == Some("NOPERM") => return Err(no_permission("get-master-addr-by-name")),
                reply => reply?,
            };
            let address: Option<(String, u16)> = redis::from_redis_value(address)?;
            RedisResult::Ok(match address {
                Some((host, port)) => {
                    let host = if host.contains(':') { format!("[{host}]") } else { host };
                    Answer::Names(format!("{host}:{port}"), super::replicas::healthy_in_sentinel_view(&replicas.unwrap_or_default()))
                }
                None => Answer::Unknown,
            })
        };
        match tokio::time::timeout(self.connect_timeout, ask).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => Answer::Failed(e),
            Err(_) => Answer::Failed(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out").into()),
        }
    }

    /// The data node at `address`, with the URL's credentials, database and TLS.
    fn data_node(&self, address: &str) -> RedisResult<ConnectionInfo> {
        let (host, port) = address
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_start_matches('[').trim_end_matches(']').to_string(), p.parse().ok()?)))
            .ok_or_else(|| refused(format!("a sentinel named a master at {address:?}, which is not host:port")))?;
        let addr = match self.data.addr() {
            ConnectionAddr::TcpTls { insecure, tls_params, .. } => {
                ConnectionAddr::TcpTls { host, port, insecure: *insecure, tls_params: tls_params.clone() }
            }
            _ => ConnectionAddr::Tcp(host, port),
        };
        Ok(self.data.clone().set_addr(addr))
    }

    /// The command connection reached the master at `address` with `run_id`: another
    /// address than the last, or the same with another run id, is a failover noticed.
    pub fn landed(&self, address: &str, run_id: &str) {
        let why = {
            let mut seen = self.seen.lock().unwrap();
            let why = match (&seen.current, &seen.run_id) {
                (Some(before), _) if before != address => {
                    Some(format!("master \"{}\" is now {address} (was {before})", self.name))
                }
                (Some(_), Some(before)) if before != run_id => {
                    Some(format!("master \"{}\" at {address} was restarted (run id {before} -> {run_id})", self.name))
                }
                _ => None,
            };
            seen.current = Some(address.to_string());
            seen.run_id = Some(run_id.to_string());
            why
        };
        if let Some(why) = why {
            self.failovers.notice(why);
        }
    }

    /// A `+switch-master` from `old` to `new`: what to tell of it when it is news (this
    /// client was not on `new` yet); it is followed from now on (see [`SWITCH_FOR`]).
    fn switched(&self, old: &str, new: &str) -> Option<String> {
        let mut seen = self.seen.lock().unwrap();
        if seen.current.as_deref() == Some(new) {
            return None;
        }
        seen.current = Some(new.to_string());
        seen.run_id = None;
        seen.switch = Some((old.to_string(), new.to_string(), Instant::now()));
        Some(format!("+switch-master: master \"{}\" moved from {old} to {new}", self.name))
    }
}

/// A sentinel's ACL refused `SENTINEL <sub>`, named in full: Redis 6.2 names only
/// the container ("the 'sentinel' command or its subcommand").
fn no_permission(sub: &str) -> redis::RedisError {
    let kind = redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm);
    redis::RedisError::from((kind, "refused", format!("the sentinels' user has no permissions to run the 'sentinel|{sub}' command")))
}

/// A failure to find the master, before anything was sent to a data node: a refused
/// connection as far as callers go (Connection, retried by waiters, no read-back).
fn refused(message: String) -> redis::RedisError {
    std::io::Error::new(std::io::ErrorKind::ConnectionRefused, message).into()
}
