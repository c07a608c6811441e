//! The three URL forms a client accepts, parsed into the deployment they name:
//!
//! - `redis://[user:password@]host[:port][/db]` (or `rediss://`, `redis+unix://`): one server;
//! - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]`
//!   (`rediss+sentinel://` for TLS): the master the sentinels name;
//! - `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+cluster://`): a cluster.
//!
//! The credentials in a URL are the data nodes'; sentinels get their own from the
//! builder. Every address is rebuilt as a one-node `redis[s]://` URL and parsed by
//! redis-rs, so percent-encoding, IPv6 brackets and `#insecure` mean the same in all forms.
//! Errors never echo the URL (it may hold a password).

use redis::{ConnectionInfo, IntoConnectionInfo};

use crate::error::{Error, Result};

/// What a URL names.
pub(crate) enum Endpoint {
    Single(ConnectionInfo),
    Sentinel { sentinels: Vec<String>, master: String, data: ConnectionInfo },
    Cluster { nodes: Vec<ConnectionInfo> },
}

const EXPECTED: &str = "expected redis://[user:password@]host[:port][/db], rediss://..., \
     redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>] \
     or redis+cluster://[user:password@]host:port[,host:port...]";

pub(crate) fn parse(url: &str) -> Result<Endpoint> {
    if url.contains('\0') {
        return Err(Error::invalid("the Redis URL contains a NUL byte"));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(Error::invalid(format!("invalid Redis URL (no scheme); {EXPECTED}")));
    };
    let (tls, topology) = match scheme.to_ascii_lowercase().as_str() {
        "redis+sentinel" => (false, "sentinel"),
        "rediss+sentinel" => (true, "sentinel"),
        "redis+cluster" => (false, "cluster"),
        "rediss+cluster" => (true, "cluster"),
        _ => return single(url).map(Endpoint::Single),
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, format!("#{fragment}")),
        None => (rest, String::new()),
    };
    if rest.contains('?') {
        return Err(Error::invalid(format!("{topology} URLs take no query parameters; {EXPECTED}")));
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), authority),
    };
    let hosts: Vec<&str> = hosts.split(',').map(str::trim).collect();
    if hosts.iter().any(|h| h.is_empty()) {
        return Err(Error::invalid(format!("the {topology} URL lists an empty address; {EXPECTED}")));
    }
    let node_scheme = if tls { "rediss" } else { "redis" };
    if topology == "cluster" {
        if !path.trim_matches('/').is_empty() {
            return Err(Error::invalid(format!(
                "a cluster has only database 0: remove the path from the redis+cluster URL; {EXPECTED}"
            )));
        }
        let nodes = hosts
            .iter()
            .map(|host| single(&format!("{node_scheme}://{userinfo}{}{fragment}", with_port(host, 6379))))
            .collect::<Result<_>>()?;
        return Ok(Endpoint::Cluster { nodes });
    }
    let mut parts = path.split('/');
    let master = parts.next().unwrap_or("");
    let db = parts.next().unwrap_or("");
    if master.is_empty() || parts.any(|p| !p.is_empty()) {
        return Err(Error::invalid(format!("the sentinel URL must name the master (…/<master name>[/<db>]); {EXPECTED}")));
    }
    if !db.is_empty() && db.parse::<u32>().is_err() {
        return Err(Error::invalid(format!("the database in the sentinel URL is not a number; {EXPECTED}")));
    }
    let db = if db.is_empty() { String::new() } else { format!("/{db}") };
    // The data nodes' address is found by asking the sentinels; this one only carries
    // their credentials, database and TLS settings.
    let data = single(&format!("{node_scheme}://{userinfo}localhost{db}{fragment}"))?;
    let sentinels = hosts.iter().map(|host| format!("{node_scheme}://{}{fragment}", with_port(host, 26379))).collect();
    Ok(Endpoint::Sentinel { sentinels, master: master.to_string(), data })
}

/// A one-server URL, parsed by redis-rs.
pub(crate) fn single(url: &str) -> Result<ConnectionInfo> {
    url.into_connection_info().map_err(|e| {
        // redis-rs may echo parts of the URL: keep only its error kind, never the URL.
        Error::invalid(format!("invalid Redis URL ({:?}); {EXPECTED}", e.kind()))
    })
}

/// `host` with the default port appended when it has none (`[v6]` and `[v6]:port` too).
fn with_port(host: &str, default: u16) -> String {
    let has_port = match host.rfind(']') {
        Some(end) => host[end..].contains(':'),
        None => host.contains(':'),
    };
    if has_port {
        host.to_string()
    } else {
        format!("{host}:{default}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> Endpoint {
        parse(url).unwrap_or_else(|e| panic!("{url}: {}", e.message()))
    }

    #[test]
    fn sentinel_urls() {
        let Endpoint::Sentinel { sentinels, master, data } = parsed("redis+sentinel://u:p%40w@h1:1,h2,[::1]:3/mymaster/2") else {
            panic!("not a sentinel endpoint")
        };
        assert_eq!(sentinels, ["redis://h1:1", "redis://h2:26379", "redis://[::1]:3"]);
        assert_eq!(master, "mymaster");
        assert_eq!(data.redis_settings().db(), 2);
        assert_eq!(data.redis_settings().username(), Some("u"));
        assert_eq!(data.redis_settings().password(), Some("p@w"));
        let Endpoint::Sentinel { sentinels, data, .. } = parsed("rediss+sentinel://h:1/m#insecure") else { panic!() };
        assert_eq!(sentinels, ["rediss://h:1#insecure"]);
        assert!(matches!(data.addr(), redis::ConnectionAddr::TcpTls { insecure: true, .. }));
    }

    #[test]
    fn cluster_urls() {
        let Endpoint::Cluster { nodes } = parsed("redis+cluster://:pw@h1:7000,h2") else { panic!("not a cluster endpoint") };
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].addr().to_string(), "h2:6379");
        assert_eq!(nodes[0].redis_settings().password(), Some("pw"));
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        for url in [
            "redis+sentinel://secret@h:1",
            "redis+sentinel://secret@h:1/",
            "redis+sentinel://secret@h:1/m/x",
            "redis+sentinel://secret@h:1,,h:2/m",
            "redis+cluster://secret@h:1/3",
            "redis+cluster://secret@h:1?x=1",
            "nonsense://secret@h",
            "secret",
        ] {
            let Err(e) = parse(url) else { panic!("{url} accepted") };
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
            assert!(!e.message().contains("secret"), "{url}: {}", e.message());
        }
    }
}
