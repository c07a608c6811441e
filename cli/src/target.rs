//! Which Redis to talk to (one server, a master behind Sentinel, or a Cluster; or
//! several independent masters for a Redlock), and connecting to it.

use std::ffi::OsStr;
use std::future::Future;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use ferrolock::{Client, ErrorKind, HolderNotes, Lock};

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
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub source: &'static str,
    pub sentinel: SentinelSettings,
    /// --app-name or $FERROLOCK_APP_NAME: the last part of the connections' names.
    pub app_name: Option<String>,
}

/// The environment variable read when there is no --app-name.
pub const APP_NAME_ENV: &str = "FERROLOCK_APP_NAME";

/// --app-name, else $FERROLOCK_APP_NAME (empty counts as unset), checked here so a bad
/// one is a usage error before anything connects. `Err`: the message.
pub fn app_name(flag: Option<String>) -> Result<Option<String>, String> {
    let (name, source) = match flag {
        Some(name) => (name, "--app-name"),
        None => match std::env::var(APP_NAME_ENV) {
            Ok(name) if !name.is_empty() => (name, APP_NAME_ENV),
            Ok(_) | Err(std::env::VarError::NotPresent) => return Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => return Err(format!("{APP_NAME_ENV} is not valid UTF-8")),
        },
    };
    // Core's rule: the name goes into CLIENT SETNAME, which refuses spaces.
    let valid = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(Some(name))
    } else {
        Err(format!("{source} {name:?}: an application name is 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"))
    }
}

/// Settings that apply behind Sentinel (a `redis+sentinel://` URL) and, the replica
/// acknowledgement, on a Cluster; unused otherwise.
#[derive(Clone)]
pub struct SentinelSettings {
    /// --sentinel-username: the user name for the sentinels themselves.
    pub username: Option<String>,
    /// $FERROLOCK_SENTINEL_PASSWORD: the sentinels' own password.
    pub password: Option<String>,
    /// --replica-ack: how many replicas must acknowledge an acquire (--no-replica-ack: off).
    pub replica_ack: ferrolock::ReplicaAck,
    /// --replica-ack-aof: they must have fsynced it to their append-only file (WAITAOF).
    pub replica_ack_aof: bool,
    /// --replica-ack-timeout: how long that acknowledgement may take.
    pub replica_ack_timeout: Option<Duration>,
}

impl Default for SentinelSettings {
    /// The core's defaults: no sentinel credentials, the default replica acknowledgement.
    fn default() -> Self {
        let replica_ack = ferrolock::Config::default().replica_ack;
        SentinelSettings { username: None, password: None, replica_ack, replica_ack_aof: false, replica_ack_timeout: None }
    }
}

impl SentinelSettings {
    /// The settings from the command line, with the password from the environment
    /// (empty counts as unset). `Err`: the message for a usage error.
    pub fn from_env(
        username: Option<String>,
        replica_ack: ferrolock::ReplicaAck,
        replica_ack_aof: bool,
        replica_ack_timeout: Option<Duration>,
    ) -> Result<Self, String> {
        let password = match std::env::var(SENTINEL_PASSWORD_ENV) {
            Ok(pw) if pw.is_empty() => None,
            Ok(pw) => Some(pw),
            Err(std::env::VarError::NotPresent) => None,
            // Never shown: it is a password.
            Err(std::env::VarError::NotUnicode(_)) => return Err(format!("{SENTINEL_PASSWORD_ENV} is not valid UTF-8")),
        };
        Ok(SentinelSettings { username, password, replica_ack, replica_ack_aof, replica_ack_timeout })
    }
}

/// The URLs given with --url (repeatable) or in REDIS_URL (an empty REDIS_URL counts
/// as unset); several URLs in one value are separated by commas (see [`split_urls`]).
pub fn given(flag: Vec<String>) -> Vec<Target> {
    let targets = |urls: &[String], source| {
        urls.iter()
            .flat_map(|u| split_urls(u))
            .map(|url| Target { url, source, sentinel: SentinelSettings::default(), app_name: None })
            .collect()
    };
    if !flag.is_empty() {
        return targets(&flag, "--url");
    }
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => targets(&[url], "REDIS_URL"),
        _ => Vec::new(),
    }
}

/// --url, else REDIS_URL, else the local default; with the Sentinel settings. More
/// than one: independent masters, for a Redlock (or a MultiLock).
pub fn resolve(flag: Vec<String>, sentinel: SentinelSettings, app_name: Option<String>) -> Vec<Target> {
    let mut targets = given(flag);
    if targets.is_empty() {
        targets.push(Target { url: DEFAULT_URL.to_string(), source: "the default", sentinel: SentinelSettings::default(), app_name: None });
    }
    targets.into_iter().map(|t| Target { sentinel: sentinel.clone(), app_name: app_name.clone(), ..t }).collect()
}

/// Several URLs in one value: split at each comma that starts another URL (a
/// `scheme://`), so that the commas inside a Sentinel or Cluster URL's host list stay.
pub fn split_urls(value: &str) -> Vec<String> {
    let starts_url = |rest: &str| {
        rest.split_once("://").is_some_and(|(scheme, _)| {
            let scheme = scheme.trim_start();
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
    };
    let mut urls: Vec<String> = Vec::new();
    let mut current = String::new();
    for (i, part) in value.split(',').enumerate() {
        if i > 0 && starts_url(part) {
            urls.push(std::mem::take(&mut current));
        } else if i > 0 {
            current.push(',');
        }
        current.push_str(part);
    }
    urls.push(current);
    if urls.len() > 1 {
        for url in &mut urls {
            *url = url.trim().to_string();
        }
    }
    urls
}

/// Connects, or reports why not and returns the exit code.
pub async fn connect(target: &Target, watchdog: Option<Duration>) -> Result<Client, i32> {
    try_connect(target, watchdog).await.map_err(|e| report(target, &e))
}

/// Reports a failed connect to `target` and returns its exit code.
pub fn report(target: &Target, e: &ferrolock::Error) -> i32 {
    if e.kind() == ErrorKind::InvalidArgument {
        // Core never echoes the URL; naming it (redacted) and its source helps find the typo.
        exit::say(&format!("{} (URL {} from {})", e.message(), redact(&target.url), target.source));
        exit::USAGE
    } else {
        exit::fail(e)
    }
}

/// Connects to `target` with the CLI's settings.
pub async fn try_connect(target: &Target, watchdog: Option<Duration>) -> ferrolock::Result<Client> {
    // Every hold leaves its note at once: a `ferrolock run` holds for a command's
    // time, against which one more call is nothing, and `status` should name it.
    let mut builder = Client::builder(target.url.clone()).connect_timeout(CONNECT_TIMEOUT).holder_notes(HolderNotes::Always);
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
    if let Some(name) = &target.app_name {
        builder = builder.app_name(name.clone());
    }
    builder = builder.replica_ack(sentinel.replica_ack).replica_ack_aof(sentinel.replica_ack_aof);
    if let Some(timeout) = sentinel.replica_ack_timeout {
        builder = builder.replica_ack_timeout(timeout);
    }
    builder.connect().await
}

/// Connects to every target at once: each one's client, or why not, in order.
pub async fn connect_all(targets: &[Target], watchdog: Option<Duration>) -> Vec<ferrolock::Result<Client>> {
    let mut tasks = Vec::with_capacity(targets.len());
    for target in targets {
        let target = target.clone();
        tasks.push(tokio::spawn(async move { try_connect(&target, watchdog).await }));
    }
    let mut clients = Vec::with_capacity(tasks.len());
    for task in tasks {
        clients.push(task.await.unwrap_or_else(|e| Err(ferrolock::Error::new(ErrorKind::Internal, format!("connect task failed: {e}")))));
    }
    clients
}

/// One call on lock `name` from a client of its own: connects, runs `call` on a handle
/// on the lock, and shuts the client down. What `call` returned, or the exit code
/// when it could not connect.
pub async fn with_lock<T, F>(target: &Target, name: &OsStr, call: impl FnOnce(Lock) -> F) -> Result<ferrolock::Result<T>, i32>
where
    F: Future<Output = ferrolock::Result<T>>,
{
    let client = connect(target, None).await?;
    Ok(call_on(&client, name, call).await)
}

/// Like [`with_lock`], with a failed connect as its error (said nowhere).
pub async fn try_with_lock<T, F>(target: &Target, name: &OsStr, call: impl FnOnce(Lock) -> F) -> ferrolock::Result<T>
where
    F: Future<Output = ferrolock::Result<T>>,
{
    let client = try_connect(target, None).await?;
    call_on(&client, name, call).await
}

async fn call_on<T, F>(client: &Client, name: &OsStr, call: impl FnOnce(Lock) -> F) -> ferrolock::Result<T>
where
    F: Future<Output = ferrolock::Result<T>>,
{
    let result = match client.lock(name.as_bytes()) {
        Ok(lock) => call(lock).await,
        Err(e) => Err(e),
    };
    let _ = client.shutdown().await;
    result
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
    use super::{app_name, redact, split_urls};

    #[test]
    fn app_names_follow_cores_rule() {
        assert_eq!(app_name(Some("billing.v2_x-1".into())), Ok(Some("billing.v2_x-1".to_string())));
        assert_eq!(app_name(Some("a".repeat(64))), Ok(Some("a".repeat(64))));
        for bad in ["", "my app", "a\nb", "é", &"a".repeat(65)] {
            let err = app_name(Some(bad.to_string())).unwrap_err();
            assert!(err.starts_with("--app-name ") && err.contains("1 to 64 characters"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn splits_several_urls_but_not_host_lists() {
        assert_eq!(split_urls("redis://a:1"), ["redis://a:1"]);
        assert_eq!(split_urls("redis://a:1,redis://b:2, rediss://:pw@c:3"), ["redis://a:1", "redis://b:2", "rediss://:pw@c:3"]);
        assert_eq!(split_urls("redis+cluster://h1:7000,h2:7001"), ["redis+cluster://h1:7000,h2:7001"]);
        assert_eq!(
            split_urls("redis+sentinel://h1,h2/m,redis+sentinel://h3,h4/m"),
            ["redis+sentinel://h1,h2/m", "redis+sentinel://h3,h4/m"]
        );
        // Malformed lists stay one (malformed) URL, for the connect to refuse as before.
        assert_eq!(split_urls("redis+sentinel://:pw@h:1,,h:2/m"), ["redis+sentinel://:pw@h:1,,h:2/m"]);
        assert_eq!(split_urls("redis+cluster://h:7000,"), ["redis+cluster://h:7000,"]);
        assert_eq!(split_urls("redis://a:1,"), ["redis://a:1,"]);
    }

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
