//! Which Redis to talk to (one server, a master behind Sentinel, or a Cluster), and
//! connecting to it.

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

/// The environment variable the sentinels' password is read from: never a command-line
/// option, since any user on the machine can read a process's command line.
pub const SENTINEL_PASSWORD_ENV: &str = "FERROLOCK_SENTINEL_PASSWORD";

/// A Redis URL and where it came from (said in error messages), with the settings
/// for a deployment behind Sentinel.
pub struct Target {
    pub url: String,
    pub source: &'static str,
    pub sentinel: SentinelSettings,
}

/// Settings that apply behind Sentinel only (a `redis+sentinel://` URL); unused otherwise.
pub struct SentinelSettings {
    /// --sentinel-username: the user name for the sentinels themselves.
    pub username: Option<String>,
    /// $FERROLOCK_SENTINEL_PASSWORD: the sentinels' own password.
    pub password: Option<String>,
    /// --no-replica-ack turns the replica acknowledgement of acquires off.
    pub replica_ack: bool,
    /// --replica-ack-timeout: how long that acknowledgement may take.
    pub replica_ack_timeout: Option<Duration>,
}

impl Default for SentinelSettings {
    /// The core's defaults: no sentinel credentials, replica acknowledgement on.
    fn default() -> Self {
        SentinelSettings { username: None, password: None, replica_ack: true, replica_ack_timeout: None }
    }
}

impl SentinelSettings {
    /// The settings from the command line, with the password from the environment
    /// (empty counts as unset). `Err`: the message for a usage error.
    pub fn from_env(username: Option<String>, replica_ack: bool, replica_ack_timeout: Option<Duration>) -> Result<Self, String> {
        let password = match std::env::var(SENTINEL_PASSWORD_ENV) {
            Ok(pw) if pw.is_empty() => None,
            Ok(pw) => Some(pw),
            Err(std::env::VarError::NotPresent) => None,
            // Never shown: it is a password.
            Err(std::env::VarError::NotUnicode(_)) => return Err(format!("{SENTINEL_PASSWORD_ENV} is not valid UTF-8")),
        };
        Ok(SentinelSettings { username, password, replica_ack, replica_ack_timeout })
    }
}

/// The URL given with --url or in REDIS_URL (an empty REDIS_URL counts as unset).
pub fn given(flag: Option<String>) -> Option<Target> {
    let target = |url, source| Target { url, source, sentinel: SentinelSettings::default() };
    if let Some(url) = flag {
        return Some(target(url, "--url"));
    }
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(target(url, "REDIS_URL")),
        _ => None,
    }
}

/// --url, else REDIS_URL, else the local default; with the Sentinel settings.
pub fn resolve(flag: Option<String>, sentinel: SentinelSettings) -> Target {
    let target = given(flag).unwrap_or_else(|| Target {
        url: DEFAULT_URL.to_string(),
        source: "the default",
        sentinel: SentinelSettings::default(),
    });
    Target { sentinel, ..target }
}

/// Connects, or reports why not and returns the exit code.
pub async fn connect(target: &Target, watchdog: Option<Duration>) -> Result<Client, i32> {
    let mut builder = Client::builder(target.url.clone()).connect_timeout(CONNECT_TIMEOUT);
    if let Some(lease) = watchdog {
        builder = builder.watchdog_timeout(lease);
    }
    let sentinel = &target.sentinel;
    if let Some(user) = &sentinel.username {
        builder = builder.sentinel_username(user.clone());
    }
    if let Some(password) = &sentinel.password {
        builder = builder.sentinel_password(password.clone());
    }
    builder = builder.replica_ack(sentinel.replica_ack);
    if let Some(timeout) = sentinel.replica_ack_timeout {
        builder = builder.replica_ack_timeout(timeout);
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
/// Every form: `redis://`, `rediss://`, `redis+sentinel://u:pw@h1,h2/m`, `redis+cluster://...`;
/// in a URL too malformed to have a `scheme://`, everything before an `@` is masked.
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
        None => match head.rsplit_once('@') {
            Some((_, host)) => format!("***@{host}"),
            None => head.to_string(),
        },
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
        assert_eq!(
            redact("redis+sentinel://u:s3cret@h1:26379,h2:26379/mymaster/1"),
            "redis+sentinel://u:***@h1:26379,h2:26379/mymaster/1"
        );
        assert_eq!(redact("rediss+cluster://:s3cret@h1:7000,h2:7001"), "rediss+cluster://:***@h1:7000,h2:7001");
        assert_eq!(redact("redis+sentinel:/u:s3cret@h1/m"), "***@h1/m");
        assert_eq!(redact("u:s3cret@h1"), "***@h1");
    }
}
