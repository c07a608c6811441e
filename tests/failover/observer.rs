//! The outside observer: a redis-server that is never failed over, with one constant
//! script (observer.lua) that every critical section calls at entry and exit.

use std::collections::{BTreeMap, HashMap};

use ferrolock_harness::{query, RedisServer};

use crate::common::blocking;

pub const SCRIPT: &str = include_str!("observer.lua");

pub struct Observer {
    server: RedisServer,
    pub sha: String,
}

/// What the observer recorded for one resource.
#[derive(Debug, Default, Clone)]
pub struct ResourceStats {
    pub sections: u64,
    pub overlaps: u64,
    pub max_inside: u64,
    pub dup_tokens: u64,
    pub regressed_tokens: u64,
    /// Times the tokens went back (each followed by as many bad tokens as it takes to pass the highest).
    pub token_incidents: u64,
    /// Sections inside at the end (entered, never left: a worker that did not finish).
    pub inside_at_end: i64,
}

/// Everything the observer recorded in one mode.
#[derive(Debug, Default)]
pub struct Recorded {
    pub stats: HashMap<String, i64>,
    pub resources: BTreeMap<String, ResourceStats>,
    /// Sections entered per unix second.
    pub per_second: BTreeMap<u64, u64>,
    /// Overlap start -> first loss notice of one of its sections (us).
    pub windows_us: Vec<u64>,
    /// Overlap event times (us), by event id.
    pub events: BTreeMap<u64, u64>,
    /// The script's trace lines.
    pub log: Vec<String>,
}

impl Observer {
    pub async fn start() -> Result<Observer, String> {
        let server = blocking(|| RedisServer::try_start(&[]))?;
        let sha: String = query(server.port, None, redis::cmd("SCRIPT").arg("LOAD").arg(SCRIPT)).await?;
        Ok(Observer { server, sha })
    }

    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The observer's clock, in microseconds (the time base of everything it records).
    pub async fn now_us(&self) -> Result<u64, String> {
        let (s, us): (u64, u64) = query(self.server.port, None, &redis::cmd("TIME")).await?;
        Ok(s * 1_000_000 + us)
    }

    /// Forgets everything recorded (the script stays loaded).
    pub async fn reset(&self) -> Result<(), String> {
        query::<()>(self.server.port, None, &redis::cmd("FLUSHALL")).await
    }

    pub async fn recorded(&self, resources: &[String]) -> Result<Recorded, String> {
        let port = self.server.port;
        let hash = |key: String| async move { query::<HashMap<String, String>>(port, None, redis::cmd("HGETALL").arg(key)).await };
        let num = |m: &HashMap<String, String>, k: &str| m.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        let mut rec = Recorded { stats: hash("obs:stats".into()).await?.iter().map(|(k, v)| (k.clone(), v.parse().unwrap_or(0))).collect(), ..Default::default() };
        for r in resources {
            let h = hash(format!("obs:res:{r}")).await?;
            let stats = ResourceStats {
                sections: num(&h, "sections") as u64,
                overlaps: num(&h, "overlaps") as u64,
                max_inside: num(&h, "max") as u64,
                dup_tokens: num(&h, "dup_tokens") as u64,
                regressed_tokens: num(&h, "regressed_tokens") as u64,
                token_incidents: num(&h, "token_incidents") as u64,
                inside_at_end: num(&h, "inside"),
            };
            rec.resources.insert(r.clone(), stats);
        }
        rec.per_second = hash("obs:secs".into()).await?.iter().filter_map(|(k, v)| Some((k.parse().ok()?, v.parse().ok()?))).collect();
        rec.events = hash("obs:ev".into()).await?.iter().filter_map(|(k, v)| Some((k.parse().ok()?, v.parse().ok()?))).collect();
        let list = |key: &str| redis::cmd("LRANGE").arg(key).arg(0).arg(-1).clone();
        rec.windows_us = query::<Vec<String>>(port, None, &list("obs:windows")).await?.iter().filter_map(|v| v.parse().ok()).collect();
        rec.log = query(port, None, &list("obs:log")).await?;
        Ok(rec)
    }
}
