//! A real Redis Sentinel deployment: 1 master + 1 replica + 3 sentinels on 127.0.0.1,
//! watching the master under the name [`MASTER_NAME`]. Every process is killed on drop.

use std::collections::HashMap;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

use crate::topology::{connect, info_field, query, replica_link_up, role, url_encode, wait_until, SETTLE};
use crate::RedisServer;

/// The name the sentinels monitor the master under.
pub const MASTER_NAME: &str = "mymaster";

/// Settings of a [`SentinelSet`]; `Default` gives no passwords, 1 s down-after, 5 s failover timeout.
#[derive(Clone, Debug)]
pub struct SentinelOptions {
    /// `requirepass` + `masterauth` on the master and replica (sentinels get `auth-pass`).
    pub password: Option<String>,
    /// `requirepass` on the sentinels themselves (they get `sentinel-pass` to talk to each other).
    pub sentinel_password: Option<String>,
    /// `sentinel down-after-milliseconds`.
    pub down_after: Duration,
    /// `sentinel failover-timeout`.
    pub failover_timeout: Duration,
}

impl Default for SentinelOptions {
    fn default() -> Self {
        SentinelOptions {
            password: None,
            sentinel_password: None,
            down_after: Duration::from_millis(1000),
            failover_timeout: Duration::from_millis(5000),
        }
    }
}

/// 1 master + 1 replica + 3 sentinels (quorum 2). Roles swap on failover, so the two data
/// nodes are only known by port: ask [`SentinelSet::master_port`] for the current master.
pub struct SentinelSet {
    data: Vec<RedisServer>,
    sentinels: Vec<RedisServer>,
    opts: SentinelOptions,
}

impl SentinelSet {
    /// [`SentinelSet::start_with`] with default options.
    pub async fn start() -> SentinelSet {
        Self::start_with(SentinelOptions::default()).await
    }

    /// Starts the five processes; returns once the replica's link is up and every sentinel
    /// reports the master, knows the replica (in good shape) and the 2 other sentinels, so
    /// that a failover can start at once.
    pub async fn start_with(opts: SentinelOptions) -> SentinelSet {
        let mut data_args = vec!["--repl-diskless-sync-delay", "0"];
        if let Some(pw) = &opts.password {
            data_args.extend(["--requirepass", pw, "--masterauth", pw]);
        }
        let master = RedisServer::try_start(&data_args).unwrap_or_else(|e| panic!("SentinelSet: master: {e}"));
        let master_port = master.port;
        let master_port_arg = master_port.to_string();
        let mut replica_args = data_args.clone();
        replica_args.extend(["--replicaof", "127.0.0.1", &master_port_arg]);
        let replica = RedisServer::try_start(&replica_args).unwrap_or_else(|e| panic!("SentinelSet: replica: {e}"));
        let replica_port = replica.port;
        let mut set = SentinelSet { data: vec![master, replica], sentinels: Vec::new(), opts };

        let pw = set.opts.password.clone();
        wait_until(SETTLE, format!("SentinelSet::start: replica {replica_port} linked to master {master_port}"), || {
            replica_link_up(replica_port, master_port, pw.as_deref())
        })
        .await;

        let config = set.sentinel_config(master_port);
        for n in 0..3 {
            let sentinel = RedisServer::try_start_with_config(&config, &["--sentinel"])
                .unwrap_or_else(|e| panic!("SentinelSet: sentinel {n}: {e}"));
            let port = sentinel.port;
            set.sentinels.push(sentinel); // owned by the set first: killed even if tuning panics
            set.speed_up(port).await;
        }
        set.wait_settled(master_port, replica_port, "SentinelSet::start").await;
        set
    }

    fn sentinel_config(&self, master_port: u16) -> String {
        let o = &self.opts;
        let mut c = format!(
            "sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} {}\n\
             sentinel failover-timeout {MASTER_NAME} {}\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n",
            o.down_after.as_millis(),
            o.failover_timeout.as_millis()
        );
        if let Some(pw) = &o.password {
            c += &format!("sentinel auth-pass {MASTER_NAME} {}\n", config_quote(pw));
        }
        if let Some(pw) = &o.sentinel_password {
            // Sentinels authenticate to each other with sentinel-pass, or they cannot vote.
            c += &format!("requirepass {0}\nsentinel sentinel-pass {0}\n", config_quote(pw));
        }
        c
    }

    /// Shortens Sentinel's internal periods (INFO every 10 s, hellos every 2 s, an old master
    /// demoted 4 hello periods after it shows up) so role changes are seen in about a second.
    /// SENTINEL DEBUG exists since Redis 7.0; on older servers this is skipped (slower, same result).
    async fn speed_up(&self, sentinel_port: u16) {
        let cmd = redis::cmd("SENTINEL").arg("DEBUG").arg("info-period").arg(1000).arg("publish-period").arg(500).clone();
        let _ = query::<redis::Value>(sentinel_port, self.opts.sentinel_password.as_deref(), &cmd).await;
    }

    /// `redis+sentinel://[:password@]127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/mymaster` (the data nodes' password).
    pub fn url(&self) -> String {
        let auth = self.opts.password.as_deref().map(|pw| format!(":{}@", url_encode(pw))).unwrap_or_default();
        let hosts: Vec<String> = self.sentinels.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("redis+sentinel://{auth}{}/{MASTER_NAME}", hosts.join(","))
    }

    /// The sentinels' ports.
    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    /// Both data nodes' ports (master and replica, in start order: roles may have swapped since).
    pub fn data_ports(&self) -> Vec<u16> {
        self.data.iter().map(|s| s.port).collect()
    }

    /// The options the set was started with.
    pub fn options(&self) -> &SentinelOptions {
        &self.opts
    }

    /// The current master as the first answering sentinel reports it (no waiting).
    pub async fn master_port(&self) -> u16 {
        let mut errors = Vec::new();
        for s in &self.sentinels {
            match self.reported_master(s.port).await {
                Ok(port) => return port,
                Err(e) => errors.push(e),
            }
        }
        panic!("SentinelSet::master_port: no sentinel reports the master: {}", errors.join("; "))
    }

    /// The data node that is not [`SentinelSet::master_port`] (no waiting; after
    /// [`SentinelSet::kill_master`] and a promotion this is the dead old master).
    pub async fn replica_port(&self) -> u16 {
        self.other_data_port(self.master_port().await)
    }

    /// A raw connection to any node of the set, with the password that node needs;
    /// replies time out after 5 s.
    pub async fn raw(&self, port: u16) -> MultiplexedConnection {
        connect(port, self.password_for(port)).await.unwrap_or_else(|e| panic!("SentinelSet::raw: {e}"))
    }

    /// A raw connection to the current master.
    pub async fn raw_master(&self) -> MultiplexedConnection {
        self.raw(self.master_port().await).await
    }

    /// Waits until the replica has every write the master had, then SENTINEL FAILOVER on a
    /// sentinel; waits until all 3 sentinels report the new master, it is ROLE master, the old
    /// master replicates from it with link up, and the sentinels see the old master as a good
    /// replica (so a second failover works). Returns the new master.
    ///
    /// Sentinel promotes without waiting for replication, so writes made during the failover
    /// may be lost, as in production (pause_replica, write, kill_master loses them for sure).
    pub async fn failover(&self) -> u16 {
        let old = self.master_port().await;
        let new = self.other_data_port(old);
        self.wait_caught_up(old, new, "SentinelSet::failover").await;
        let sentinel = self.sentinels[0].port;
        let spw = self.opts.sentinel_password.clone();
        wait_until(SETTLE, format!("sentinel {sentinel} to accept SENTINEL FAILOVER (master {old} -> {new})"), || {
            let spw = spw.clone();
            async move {
                // A FAILOVER whose reply was lost may have started already: never start a second one.
                if self.reported_master(sentinel).await? == new {
                    return Ok(());
                }
                // NOGOODSLAVE / INPROG are transient: the next poll retries.
                let cmd = redis::cmd("SENTINEL").arg("FAILOVER").arg(MASTER_NAME).clone();
                query::<redis::Value>(sentinel, spw.as_deref(), &cmd).await.map(|_| ())
            }
        })
        .await;
        self.wait_settled(new, old, "SentinelSet::failover").await;
        new
    }

    /// SIGSTOPs the current replica (as the sentinels see it); returns its port once the
    /// process is stopped.
    pub async fn pause_replica(&self) -> u16 {
        let port = self.replica_port().await;
        self.node(port).pause();
        port
    }

    /// SIGCONTs the replica stopped by [`SentinelSet::pause_replica`]; when the master is
    /// alive, waits until the replica's link is up, it has the writes the master had, and
    /// every sentinel sees it as a good replica.
    pub async fn resume_replica(&self) -> u16 {
        let node = self
            .data
            .iter()
            .find(|s| s.is_paused())
            .unwrap_or_else(|| panic!("SentinelSet::resume_replica: no data node is paused"));
        node.resume();
        let port = node.port;
        let master = self.other_data_port(port);
        if self.node(master).is_running() {
            self.wait_caught_up(master, port, "SentinelSet::resume_replica").await;
            self.wait_settled(master, port, "SentinelSet::resume_replica").await;
        }
        port
    }

    /// SIGKILLs the current master (as the sentinels see it); returns its port.
    pub async fn kill_master(&mut self) -> u16 {
        let port = self.master_port().await;
        let i = self.data.iter().position(|s| s.port == port).expect("master is a data node");
        self.data[i].kill();
        port
    }

    /// Waits until every running sentinel reports a master other than `old_port` and that
    /// node's ROLE is master (the sentinels promoted it after `old_port` died); returns it.
    pub async fn wait_for_new_master(&self, old_port: u16, limit: Duration) -> u16 {
        wait_until(limit, format!("the sentinels to promote a new master instead of {old_port}"), || async move {
            let mut seen = None;
            for s in self.sentinels.iter().filter(|s| s.is_running()) {
                let port = self.reported_master(s.port).await?;
                if port == old_port || seen.is_some_and(|p| p != port) {
                    return Err(format!("sentinel {} reports master {port}", s.port));
                }
                seen = Some(port);
            }
            let port = seen.ok_or("no sentinel is running")?;
            match role(port, self.opts.password.as_deref()).await? {
                r if r == "master" => Ok(port),
                r => Err(format!("the reported master {port} has ROLE {r}")),
            }
        })
        .await
    }

    fn node(&self, port: u16) -> &RedisServer {
        self.data
            .iter()
            .find(|s| s.port == port)
            .unwrap_or_else(|| panic!("SentinelSet: {port} is not a data node of this set ({:?})", self.data_ports()))
    }

    fn other_data_port(&self, port: u16) -> u16 {
        self.data
            .iter()
            .map(|s| s.port)
            .find(|&p| p != port)
            .unwrap_or_else(|| panic!("SentinelSet: no data node besides {port}"))
    }

    fn password_for(&self, port: u16) -> Option<&str> {
        if self.sentinels.iter().any(|s| s.port == port) {
            self.opts.sentinel_password.as_deref()
        } else {
            self.opts.password.as_deref()
        }
    }

    async fn reported_master(&self, sentinel: u16) -> Result<u16, String> {
        let cmd = redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(MASTER_NAME).clone();
        let addr: Option<(String, u16)> = query(sentinel, self.opts.sentinel_password.as_deref(), &cmd).await?;
        match addr {
            Some((host, port)) if host == "127.0.0.1" => Ok(port),
            other => Err(format!("sentinel {sentinel} reports master {other:?}")),
        }
    }

    /// Waits until `replica` has processed the replication stream up to where `master` is now.
    async fn wait_caught_up(&self, master: u16, replica: u16, caller: &str) {
        let pw = self.opts.password.as_deref();
        let offset = |port: u16, field: &'static str| async move {
            let info: String = query(port, pw, redis::cmd("INFO").arg("replication")).await?;
            info_field(&info, field)
                .and_then(|v| v.parse::<i64>().ok())
                .ok_or_else(|| format!("{port}: no {field} in INFO replication"))
        };
        let target = wait_until(SETTLE, format!("{caller}: master {master} to report its offset"), || offset(master, "master_repl_offset")).await;
        wait_until(SETTLE, format!("{caller}: replica {replica} to reach the master's offset {target}"), || async move {
            replica_link_up(replica, master, pw).await?;
            match offset(replica, "slave_repl_offset").await? {
                at if at >= target => Ok(()),
                at => Err(format!("replica {replica} at offset {at}")),
            }
        })
        .await
    }

    async fn wait_settled(&self, master: u16, replica: u16, caller: &str) {
        wait_until(
            SETTLE,
            format!("{caller}: master {master} with replica {replica} linked, all 3 sentinels reporting them and knowing each other"),
            || self.settled(master, replica),
        )
        .await
    }

    /// Ok when the data nodes have the given roles and every sentinel agrees, with the
    /// replica fit for promotion (else SENTINEL FAILOVER answers NOGOODSLAVE).
    async fn settled(&self, master: u16, replica: u16) -> Result<(), String> {
        let pw = self.opts.password.as_deref();
        match role(master, pw).await? {
            r if r == "master" => {}
            r => return Err(format!("{master} has ROLE {r}")),
        }
        replica_link_up(replica, master, pw).await?;
        let spw = self.opts.sentinel_password.as_deref();
        for s in &self.sentinels {
            let s = s.port;
            let reported = self.reported_master(s).await?;
            if reported != master {
                return Err(format!("sentinel {s} reports master {reported}"));
            }
            let cmd = redis::cmd("SENTINEL").arg("REPLICAS").arg(MASTER_NAME).clone();
            let replicas: Vec<Vec<String>> = query(s, spw, &cmd).await?;
            let replicas: Vec<HashMap<&str, &str>> = replicas.iter().map(|r| pairs(r)).collect();
            let [r] = replicas.as_slice() else {
                return Err(format!("sentinel {s} knows {} replicas: {replicas:?}", replicas.len()));
            };
            let good = r.get("port") == Some(&replica.to_string().as_str())
                && r.get("flags").is_some_and(|f| !has_down_flag(f))
                && r.get("role-reported") == Some(&"slave")
                && r.get("master-port") == Some(&master.to_string().as_str())
                && r.get("master-link-status") == Some(&"ok");
            if !good {
                return Err(format!("sentinel {s} sees replica {r:?}"));
            }
            let cmd = redis::cmd("SENTINEL").arg("SENTINELS").arg(MASTER_NAME).clone();
            let others: Vec<Vec<String>> = query(s, spw, &cmd).await?;
            let others: Vec<HashMap<&str, &str>> = others.iter().map(|r| pairs(r)).collect();
            if others.len() != 2 || others.iter().any(|o| o.get("flags").is_none_or(|f| has_down_flag(f))) {
                return Err(format!("sentinel {s} knows other sentinels {others:?}"));
            }
        }
        Ok(())
    }
}

fn has_down_flag(flags: &str) -> bool {
    flags.split(',').any(|f| matches!(f, "s_down" | "o_down" | "disconnected"))
}

/// A flat [key, value, key, value, ...] reply as a map.
fn pairs(flat: &[String]) -> HashMap<&str, &str> {
    flat.chunks(2).filter_map(|kv| Some((kv.first()?.as_str(), kv.get(1)?.as_str()))).collect()
}

/// A value for a redis config file line (quoted, so spaces and quotes survive).
fn config_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
