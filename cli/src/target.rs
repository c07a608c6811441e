//! Which Redis to talk to, and connecting to it.

use std::ffi::OsStr;
use std::future::Future;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use ferrolock::{Client, ErrorKind, Lock};

use crate::exit;

pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Short, so that an unreachable server fails within seconds instead of hanging a
/// cron job; one TCP (+TLS) handshake to a live server fits easily.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1500);

/// A Redis URL and where it came from (said in error messages).
pub struct Target {
    pub url: String,
    pub source: &'static str,
}

/// The URL given with --url or in REDIS_URL (an empty REDIS_URL counts as unset).
pub fn given(flag: Option<String>) -> Option<Target> {
    if let Some(url) = flag {
        return Some(Target { url, source: "--url" });
    }
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(Target { url, source: "REDIS_URL" }),
        _ => None,
    }
}

/// --url, else REDIS_URL, else the local default.
pub fn resolve(flag: Option<String>) -> Target {
    given(flag).unwrap_or_else(|| Target { url: DEFAULT_URL.to_string(), source: "the default" })
}

/// Connects, or reports why not and returns the exit code.
pub async fn connect(target: &Target, watchdog: Option<Duration>) -> Result<Client, i32> {
    let mut builder = Client::builder(target.url.clone()).connect_timeout(CONNECT_TIMEOUT);
    if let Some(lease) = watchdog {
        builder = builder.watchdog_timeout(lease);
    }
    builder.connect().await.map_err(|e| {
        if e.kind() == ErrorKind::InvalidArgument {
            // Core never echoes the URL; naming it (redacted) and its source helps find the typo.
            exit::say(&format!("{} (URL {} from {})", e.message(), redact(&target.url), target.source));
            exit::USAGE
        } else {
            exit::fail(&e)
        }
    })
}

/// One call on lock `name` from a client of its own: connects, runs `call` on a handle
/// on the lock, and shuts the client down. What `call` returned, or the exit code
/// when it could not connect.
pub async fn with_lock<T, F>(target: &Target, name: &OsStr, call: impl FnOnce(Lock) -> F) -> Result<ferrolock::Result<T>, i32>
where
    F: Future<Output = ferrolock::Result<T>>,
{
    let client = connect(target, None).await?;
    let result = match client.lock(name.as_bytes()) {
        Ok(lock) => call(lock).await,
        Err(e) => Err(e),
    };
    let _ = client.shutdown().await;
    Ok(result)
}

/// The URL with its password (userinfo, or a `pass`/`password` query parameter) masked.
pub fn redact(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((userinfo, host)) => {
                let user = userinfo.split_once(':').map_or("", |(u, _)| u);
                format!("{scheme}://{user}:***@{host}")
            }
            None => head.to_string(),
        },
        None => head.to_string(),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("pass") || k.eq_ignore_ascii_case("password") => {
                    format!("{k}=***")
                }
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn hides_passwords() {
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("redis://u:s3cret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("rediss://:p@ss@h"), "rediss://:***@h");
        assert_eq!(redact("redis://s3cret@h"), "redis://:***@h");
        assert_eq!(redact("redis+unix:///tmp/r.sock?db=1&pass=s3cret"), "redis+unix:///tmp/r.sock?db=1&pass=***");
    }
}
