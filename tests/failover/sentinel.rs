//! Sentinel for the failover harness: 1 master + 2 replicas + 3 sentinels (quorum 2) on
//! 127.0.0.1, every data node reached through its proxy (proxy.rs), which is the address
//! it announces, so the harness can cut it off from its peers alone.

use std::collections::HashMap;
use std::time::Duration;

use ferrolock_harness::{info_field, query, role, RedisServer};

use crate::common::{blocking, until, FaultKind, NodeSettings, Rng, Timers};
use crate::proxy::{Isolation, Kind, Proxies};

const NAME: &str = "mymaster";

struct DataNode {
    server: RedisServer,
    /// Its address for everyone: the proxy's port.
    proxy: u16,
    /// SIGSTOPped or killed: not to be asked anything.
    down: bool,
}

pub struct SentinelTopo {
    proxies: Proxies,
    data: Vec<DataNode>,
    sentinels: Vec<RedisServer>,
    settings: NodeSettings,
    timers: Timers,
}

impl SentinelTopo {
    pub async fn start(settings: NodeSettings, timers: Timers) -> Result<SentinelTopo, String> {
        let proxies = Proxies::default();
        let mut data: Vec<DataNode> = Vec::new();
        for n in 0..3 {
            let proxy = proxies.add(Kind::Data, 0).await;
            let mut args = node_args(&settings, proxy);
            if n > 0 {
                args.extend(["--replicaof".into(), "127.0.0.1".into(), data[0].proxy.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let server = blocking(|| RedisServer::try_start(&args))?;
            proxies.set_upstream(proxy, server.port);
            data.push(DataNode { server, proxy, down: false });
        }
        let master = data[0].proxy;
        let mut topo = SentinelTopo { proxies, data, sentinels: Vec::new(), settings, timers };
        let config = format!(
            "sentinel monitor {NAME} 127.0.0.1 {master} 2\n\
             sentinel down-after-milliseconds {NAME} {}\n\
             sentinel failover-timeout {NAME} {}\n\
             sentinel parallel-syncs {NAME} 1\n",
            timers.down_after.as_millis(),
            timers.failover_timeout.as_millis(),
        );
        for n in 0..3 {
            let log = topo.settings.log_dir().join(format!("sentinel-{n}.log")).display().to_string();
            let s = blocking(|| RedisServer::try_start_with_config(&config, &["--sentinel", "--logfile", &log]))?;
            if timers.fast {
                // INFO every second and hellos every 0.5 s (not 10 s and 2 s): roles are seen at once.
                let cmd = redis::cmd("SENTINEL").arg("DEBUG").arg("info-period").arg(1000).arg("publish-period").arg(500).clone();
                query::<redis::Value>(s.port, None, &cmd).await?;
            }
            topo.sentinels.push(s);
        }
        topo.settled(Duration::from_secs(60)).await?;
        Ok(topo)
    }

    /// `redis+sentinel://` with the three sentinels.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("redis+sentinel://{}/{NAME}", hosts.join(","))
    }

    /// The master (its proxy port) as the majority of the sentinels report it.
    pub async fn master(&self) -> Result<u16, String> {
        let mut votes: HashMap<u16, usize> = HashMap::new();
        for s in &self.sentinels {
            if let Ok(p) = reported_master(s.port).await {
                *votes.entry(p).or_default() += 1;
            }
        }
        votes.into_iter().find(|(_, n)| *n >= 2).map(|(p, _)| p).ok_or_else(|| "no majority of sentinels agrees on a master".into())
    }

    /// The master's direct port, as the majority of the sentinels report it.
    pub async fn master_direct(&self) -> Result<u16, String> {
        let master = self.master().await?;
        Ok(self.data.iter().find(|d| d.proxy == master).ok_or("the master is not a data node")?.server.port)
    }

    fn node(&mut self, proxy: u16) -> &mut DataNode {
        self.data.iter_mut().find(|d| d.proxy == proxy).expect("a data node's proxy")
    }

    /// Runs one fault on the current master; returns the master before and after, once
    /// the topology has settled again, and what happened.
    pub async fn fault(&mut self, kind: FaultKind, rng: &mut Rng) -> Result<(u16, u16, String), String> {
        let before = self.settled(Duration::from_secs(30)).await?;
        let limit = self.timers.settle_limit();
        let detail = match kind {
            FaultKind::KillRestart => {
                let delay = rng.between(Duration::ZERO, self.timers.down_after * 3 / 2);
                let args = node_args(&self.settings, before);
                let node = self.node(before);
                blocking(|| node.server.kill());
                tokio::time::sleep(delay).await; // the supervisor's restart delay (the fault itself)
                blocking(|| node.server.restart_with(&args.iter().map(String::as_str).collect::<Vec<_>>()));
                let (proxy, port) = (node.proxy, node.server.port);
                self.proxies.set_upstream(proxy, port);
                format!("restarted {} after {} ms", if self.settings.aof { "from its AOF" } else { "empty" }, delay.as_millis())
            }
            FaultKind::KillReplica => {
                let node = self.node(before);
                blocking(|| node.server.kill());
                node.down = true;
                let new = self.promoted(before, limit).await?;
                let mut args = node_args(&self.settings, before);
                args.extend(["--replicaof".into(), "127.0.0.1".into(), new.to_string()]);
                let node = self.node(before);
                blocking(|| node.server.restart_with(&args.iter().map(String::as_str).collect::<Vec<_>>()));
                node.down = false;
                let (proxy, port) = (node.proxy, node.server.port);
                self.proxies.set_upstream(proxy, port);
                format!("restarted as a replica of {new}")
            }
            FaultKind::Stop => {
                let node = self.node(before);
                blocking(|| node.server.pause());
                node.down = true;
                let new = self.promoted(before, limit).await;
                let node = self.node(before);
                blocking(|| node.server.resume());
                node.down = false;
                format!("resumed after {} was promoted", new?)
            }
            FaultKind::Manual => {
                let s = self.sentinels[(rng.next() % 3) as usize].port;
                let cmd = redis::cmd("SENTINEL").arg("FAILOVER").arg(NAME).clone();
                until(limit, "SENTINEL FAILOVER to be accepted", || async {
                    if reported_master(s).await? != before {
                        return Ok(()); // an earlier attempt whose reply was lost started it
                    }
                    query::<redis::Value>(s, None, &cmd).await.map(|_| ())
                })
                .await?;
                format!("SENTINEL FAILOVER on sentinel {s}, {} promoted", self.promoted(before, limit).await?)
            }
            FaultKind::Partition => {
                let cuts = self.proxies.cuts();
                self.proxies.isolate(Some(Isolation { data_proxy: before, bus_proxy: None, node_id: None })).await;
                let new = self.promoted(before, limit).await;
                self.proxies.isolate(None).await;
                format!("cut off from its peers ({} connections cut) until {} was promoted", self.proxies.cuts() - cuts, new?)
            }
        };
        let after = self.settled(limit).await?;
        Ok((before, after, detail))
    }

    /// Waits until a majority of sentinels names a master other than `old` whose ROLE is master.
    async fn promoted(&self, old: u16, limit: Duration) -> Result<u16, String> {
        until(limit, &format!("the sentinels to promote a replica instead of {old}"), || async {
            let new = self.master().await?;
            if new == old {
                return Err(format!("the sentinels still name {old}"));
            }
            let direct = self.data.iter().find(|d| d.proxy == new).ok_or("not a data node")?.server.port;
            match role(direct, None).await? {
                r if r == "master" => Ok(new),
                r => Err(format!("{new} has ROLE {r}")),
            }
        })
        .await
    }

    /// Waits until every sentinel names the same master, which is ROLE master, every other
    /// running data node replicates from it with its link up, and every sentinel sees those
    /// replicas in good shape and the 2 other sentinels (so the next fault can fail over).
    pub async fn settled(&self, limit: Duration) -> Result<u16, String> {
        until(limit, "the sentinel set to settle", || self.settled_now()).await
    }

    async fn settled_now(&self) -> Result<u16, String> {
        let mut master = None;
        for s in &self.sentinels {
            let p = reported_master(s.port).await?;
            if master.is_some_and(|m| m != p) {
                return Err(format!("sentinels disagree: {master:?} and {p}"));
            }
            master = Some(p);
        }
        let master = master.ok_or("no sentinel")?;
        for d in &self.data {
            if d.down {
                return Err(format!("{} is down", d.proxy));
            }
            let info: String = query(d.server.port, None, redis::cmd("INFO").arg("replication")).await?;
            let (r, mport, link) = (info_field(&info, "role"), info_field(&info, "master_port"), info_field(&info, "master_link_status"));
            let ok = if d.proxy == master { r == Some("master") } else { r == Some("slave") && mport == Some(&master.to_string()) && link == Some("up") };
            if !ok {
                return Err(format!("{} has role {r:?} master_port {mport:?} link {link:?} (master {master})", d.proxy));
            }
        }
        for s in &self.sentinels {
            let flags = field_of(query(s.port, None, redis::cmd("SENTINEL").arg("MASTER").arg(NAME)).await?, "flags");
            if flags.as_deref() != Some("master") {
                return Err(format!("sentinel {} sees master flags {flags:?}", s.port));
            }
            let replicas: Vec<Vec<String>> = query(s.port, None, redis::cmd("SENTINEL").arg("REPLICAS").arg(NAME)).await?;
            let good = replicas
                .iter()
                .filter(|r| {
                    let r = pairs(r);
                    r.get("flags") == Some(&"slave") && r.get("master-link-status") == Some(&"ok") && r.get("master-port") == Some(&master.to_string().as_str())
                })
                .count();
            if good != 2 {
                return Err(format!("sentinel {} sees {good} good replicas of {master}: {replicas:?}", s.port));
            }
            let others: Vec<Vec<String>> = query(s.port, None, redis::cmd("SENTINEL").arg("SENTINELS").arg(NAME)).await?;
            if others.len() != 2 || others.iter().any(|o| pairs(o).get("flags") != Some(&"sentinel")) {
                return Err(format!("sentinel {} knows sentinels {others:?}", s.port));
            }
        }
        Ok(master)
    }
}

fn node_args(settings: &NodeSettings, proxy: u16) -> Vec<String> {
    let mut args = settings.args(&format!("sentinel-data-{proxy}"));
    args.extend(["--replica-announce-port".into(), proxy.to_string()]);
    args
}

async fn reported_master(sentinel: u16) -> Result<u16, String> {
    let cmd = redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(NAME).clone();
    match query::<Option<(String, u16)>>(sentinel, None, &cmd).await? {
        Some((_, port)) => Ok(port),
        None => Err(format!("sentinel {sentinel} knows no master")),
    }
}

fn pairs(flat: &[String]) -> HashMap<&str, &str> {
    flat.chunks(2).filter_map(|kv| Some((kv.first()?.as_str(), kv.get(1)?.as_str()))).collect()
}

fn field_of(flat: Vec<String>, name: &str) -> Option<String> {
    flat.chunks(2).find(|kv| kv[0] == name).and_then(|kv| kv.get(1).cloned())
}
