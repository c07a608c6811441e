//! One error type for every operation, with the kinds of DESIGN §4 that each
//! binding maps to its own language (exception class, `err.code`, C status).

use std::fmt;

use crate::ack::ReplicaShortfall;

/// What went wrong, independent of the message. Bindings switch on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A bounded acquire ran out of time. The Rust API reports this as `Ok(None)`;
    /// the kind exists for callers that turn "not acquired" into an error.
    NotAcquired,
    /// Release or extend by a holder that does not hold the lock.
    NotOwner,
    /// The hold was lost: expired, force-unlocked, or the server lost it.
    LockLost,
    /// I/O error, refused connection, timeout or failed authentication.
    Connection,
    /// The key at the lock name is not a lock (not a hash).
    WrongType,
    /// Bad input: name, duration, URL or option out of range.
    InvalidArgument,
    /// An ACL refused a command, key or channel (`NOPERM`). The message names what
    /// was refused and the ACL rule that would allow it.
    PermissionDenied,
    /// Behind Sentinel or on a Cluster: fewer replicas acknowledged an acquire within
    /// `replica_ack_timeout` than the `replica_ack` policy needs (or the master has
    /// none), so the acquire was undone (a failover could have lost it). Retrying is
    /// safe. [`Error::replica_shortfall`] gives the numbers.
    NotReplicated,
    /// The caller cancelled a wait.
    Cancelled,
    /// The client was shut down: every later call on it, and every acquire that was
    /// waiting when it shut down, fails with this kind. Create a new client.
    ClientClosed,
    /// A bug in ferrolock, or a reply it does not understand.
    Internal,
}

impl ErrorKind {
    /// Stable identifier used by the bindings (`ERR_NOT_OWNER`, ...).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotAcquired => "NOT_ACQUIRED",
            ErrorKind::NotOwner => "ERR_NOT_OWNER",
            ErrorKind::LockLost => "ERR_LOCK_LOST",
            ErrorKind::Connection => "ERR_CONNECTION",
            ErrorKind::WrongType => "ERR_WRONG_TYPE",
            ErrorKind::InvalidArgument => "ERR_INVALID_ARGUMENT",
            ErrorKind::PermissionDenied => "ERR_PERMISSION",
            ErrorKind::NotReplicated => "ERR_NOT_REPLICATED",
            ErrorKind::Cancelled => "ERR_CANCELLED",
            ErrorKind::ClientClosed => "ERR_CLIENT_CLOSED",
            ErrorKind::Internal => "ERR_INTERNAL",
        }
    }
}

/// A ferrolock error: a kind and a message that names the lock and says what to do.
/// Messages never contain passwords.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// NotReplicated: the numbers (boxed: every `Result` of the crate carries an `Error`).
    shortfall: Option<Box<ReplicaShortfall>>,
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Builds an error of the given kind (bindings use this for their own input checks).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), shortfall: None }
    }

    /// A NotReplicated error with its numbers.
    pub(crate) fn not_replicated(message: impl Into<String>, shortfall: ReplicaShortfall) -> Self {
        Error { kind: ErrorKind::NotReplicated, message: message.into(), shortfall: Some(Box::new(shortfall)) }
    }

    /// An acquire (`context` names it) that the replica-ack policy did not confirm:
    /// `sent` it ran and was undone, else it was not sent (too few replicas).
    pub(crate) fn unreplicated(context: &str, shortfall: ReplicaShortfall, sent: bool, within: std::time::Duration) -> Self {
        let what = if sent {
            format!("{shortfall} within {within:?}, so it was released again (a failover could have lost it)")
        } else if shortfall.replicas == 0 {
            format!(
                "the master has no replica, so the replica_ack policy \"{}\" cannot be met; nothing was taken",
                shortfall.policy
            )
        } else {
            format!(
                "too few of the master's {} replica(s) are connected for the replica_ack policy \"{}\" (it needs {}); \
                 nothing was taken",
                shortfall.replicas, shortfall.policy, shortfall.needed
            )
        };
        Self::not_replicated(
            format!(
                "{context}: {what}. Retrying is safe; the replica_ack option (replicaAck in Node, --replica-ack in \
                 the CLI) sets the policy"
            ),
            shortfall,
        )
    }

    /// An acquire refused because `replica_ack_aof` needs WAITAOF and the master lacks it.
    pub(crate) fn no_waitaof(context: &str, version: &str, address: &str) -> Self {
        Self::invalid(format!(
            "{context}: replica_ack_aof needs WAITAOF, which the master at {address} (Redis {version}) lacks: it came \
             in Redis 7.2; turn replica_ack_aof off or upgrade the servers. Nothing was taken"
        ))
    }

    /// For [`ErrorKind::NotReplicated`]: how many replicas acknowledged the acquire,
    /// out of how many, against what the policy needed.
    pub fn replica_shortfall(&self) -> Option<&ReplicaShortfall> {
        self.shortfall.as_deref()
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// The error of every call on a closed client (bindings that notice the close
    /// before core does use it, so the message is the same).
    pub fn client_closed() -> Self {
        Self::shut_down()
    }

    pub(crate) fn shut_down() -> Self {
        Self::new(ErrorKind::ClientClosed, "the ferrolock client is closed; create a new client")
    }

    /// Maps a redis-rs error, prefixing `context` (which names the lock and the operation).
    pub(crate) fn from_redis(err: &redis::RedisError, context: &str) -> Self {
        use redis::{ErrorKind as RK, ServerErrorKind as SK};
        let code = server_code(err);
        let code = code.as_deref().unwrap_or("");
        let kind = match err.kind() {
            _ if code == "WRONGTYPE" => ErrorKind::WrongType,
            _ if code == "NOPERM" => ErrorKind::PermissionDenied,
            _ if matches!(code, "NOAUTH" | "WRONGPASS") => ErrorKind::Connection,
            // A script's READONLY (a demoted master) or LOADING, before Redis 7 only in the text.
            _ if Self::is_refused_for_now(err) => ErrorKind::Connection,
            RK::AuthenticationFailed => ErrorKind::Connection,
            RK::Io => ErrorKind::Connection,
            // Sentinel has no master of that name (yet), or the cluster no node for a
            // slot: what a failover looks like for a moment, to be retried.
            RK::MasterNameNotFoundBySentinel | RK::NoValidReplicasFoundBySentinel | RK::ClusterConnectionNotFound => {
                ErrorKind::Connection
            }
            RK::InvalidClientConfig => ErrorKind::InvalidArgument,
            _ if err.is_timeout() || err.is_connection_dropped() || err.is_connection_refusal() => {
                ErrorKind::Connection
            }
            _ => ErrorKind::Internal,
        };
        if kind == ErrorKind::PermissionDenied {
            return Error::new(kind, format!("{context}: Redis refused it ({err}); {}", permission_hint(&err.to_string())));
        }
        let hint = match kind {
            ErrorKind::Connection if matches!(err.kind(), RK::AuthenticationFailed)
                || matches!(code, "NOAUTH" | "WRONGPASS") =>
            {
                "; check the username and password in the Redis URL"
            }
            ErrorKind::Connection if code == "TRYAGAIN" || matches!(err.kind(), RK::Server(SK::TryAgain)) => {
                " (TRYAGAIN: the cluster slot is being migrated and this call's keys are not all on one \
                 side yet; a lock that does not exist yet cannot be taken there until the migration \
                 ends); retry after it"
            }
            ErrorKind::Connection if code == "CLUSTERDOWN" || matches!(err.kind(), RK::Server(SK::ClusterDown)) => {
                " (CLUSTERDOWN: no master serves this slot now, e.g. during a failover); retry once one does"
            }
            ErrorKind::Connection if matches!(code, "MOVED" | "ASK") => {
                " (the cluster's slot map kept changing while redis-rs followed its redirects, e.g. during a \
                 failover); retry"
            }
            ErrorKind::Connection => "; check that Redis is running and reachable",
            ErrorKind::WrongType => "; the key at this name holds another type, pick another name",
            _ => "",
        };
        Error::new(kind, format!("{context}: {err}{hint}"))
    }

    /// True for a server's refusal that did not run the command and may not last: a
    /// demoted master (READONLY), one loading its data (LOADING, MASTERDOWN), a cluster
    /// slot being migrated (TRYAGAIN), without a master (CLUSTERDOWN) or moving while
    /// redis-rs followed it (MOVED, ASK, once its tries ran out). Sending it again is safe.
    pub(crate) fn is_refused_for_now(err: &redis::RedisError) -> bool {
        use redis::{ErrorKind as RK, ServerErrorKind as SK};
        let code = server_code(err);
        matches!(code.as_deref(), Some("READONLY" | "LOADING" | "MASTERDOWN" | "TRYAGAIN" | "CLUSTERDOWN" | "MOVED" | "ASK"))
            || matches!(
                err.kind(),
                RK::Server(SK::BusyLoading | SK::TryAgain | SK::ClusterDown | SK::MasterDown | SK::ReadOnly | SK::Moved | SK::Ask)
            )
    }

    /// True for failures after which a command may or may not have run on the server.
    pub(crate) fn is_ambiguous(err: &redis::RedisError) -> bool {
        err.is_io_error() || err.is_timeout() || err.is_connection_dropped()
    }
}

/// The error code of a server's reply (`WRONGTYPE`, `READONLY`, `NOPERM`, `OOM`, ...),
/// also when a script raised it: before Redis 7.0 a script's error comes back as
/// `ERR Error running script (call to f_<sha>): @user_script:1: WRONGTYPE ...` (or
/// `... @user_script: 1: -READONLY ...`), the real code only in the text; and an ACL
/// refusal inside a script names no code at all (6.2: `The user executing the script
/// can't run this command`; 7.2+ and Valkey: `ERR ACL failure in script: User u has
/// no permissions to run the 'hincrby' command`).
pub(crate) fn server_code(err: &redis::RedisError) -> Option<String> {
    Some(code_in(err.code()?, &err.to_string()))
}

/// [`server_code`] of an error reply given as its code and text (redis-rs hands a
/// command's error reply back as a value).
pub(crate) fn code_in(code: &str, text: &str) -> String {
    let acl = ["NOPERM", "The user executing the script can't", "ACL failure in script"];
    if acl.iter().any(|marker| text.contains(marker)) {
        return "NOPERM".to_string();
    }
    if code != "ERR" {
        return code.to_string();
    }
    script_code(text).unwrap_or(code).to_string()
}

/// The code a script's error carries in its text (Redis before 7.0), if any: the
/// first word after the last `@user_script:N:` (or `@user_script: N:`), when it is
/// an error code (capitals), its `-` dropped.
fn script_code(text: &str) -> Option<&str> {
    let (_, after) = text.rsplit_once("@user_script:")?;
    let after = after.trim_start();
    let after = after.trim_start_matches(|c: char| c.is_ascii_digit()).strip_prefix(':')?.trim_start();
    let word = after.trim_start_matches('-').split(|c: char| c.is_whitespace()).next()?;
    (word.len() >= 2 && word.bytes().all(|b| b.is_ascii_uppercase())).then_some(word)
}

/// The ACL rule that would allow what an ACL refusal refused. Redis names the
/// command (7.2+) or only the script and its line (7.0): then the line of our
/// own script tells the command.
fn permission_hint(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let command = lower
        .split("to run the '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .map(str::to_string)
        .or_else(|| crate::scripts::command_at(text));
    if lower.contains("channel") {
        return "the ACL user needs access to the object's channels: &redisson_*{<lock name>* &ferrolock_*{<lock name>* \
                (the operating guide's least-privilege users)"
            .to_string();
    }
    if lower.contains("key") {
        return "the ACL user needs key access to the lock name and its helper keys: ~<lock name> ~{<lock name>* \
                ~redisson_*{<lock name>* ~ferrolock_*{<lock name>* (scripts' keys need key access too)"
            .to_string();
    }
    if let Some(command) = command {
        return format!("the ACL user needs +{command} (ACL SETUSER <user> +{command})");
    }
    "grant the ACL user the commands, keys and channels of the operating guide's least-privilege ACL user".to_string()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::script_code;

    /// The texts Redis 6.2.16 returns for errors raised inside a script (copied from
    /// its replies; scripts/test-servers.sh runs the suites against that server).
    #[test]
    fn a_script_error_before_redis_7_gives_back_its_code() {
        let script = "Error running script (call to f_30ada88aea1b8902e826c526ebaa64270516b3ec): @user_script:1:";
        assert_eq!(script_code(&format!("{script} WRONGTYPE Operation against a key holding the wrong kind of value")), Some("WRONGTYPE"));
        assert_eq!(script_code(&format!("{script} @user_script: 1: -READONLY You can't write against a read only replica.")), Some("READONLY"));
        assert_eq!(script_code(&format!("{script} @user_script: 1: -OOM command not allowed when used memory > 'maxmemory'.")), Some("OOM"));
        assert_eq!(script_code(&format!("{script} @user_script: 1: The user executing the script can't run this command")), None);
        assert_eq!(script_code("user_script:1: Script attempted to access nonexistent global variable 'x'"), None);
    }

    /// What a Cluster answers while a failover or a migration is under way reaches the
    /// caller as a Connection error naming it (retrying is safe: nothing ran), never
    /// as an internal error (the failover harness saw MOVED come through as one).
    #[test]
    fn a_cluster_refusal_for_now_is_a_connection_error_that_names_it() {
        use super::{Error, ErrorKind};
        use redis::{ErrorKind as RK, ServerErrorKind as SK};
        for (kind, text, named) in [
            (SK::Moved, "1301 127.0.0.1:34715", "slot map kept changing"),
            (SK::Ask, "1301 127.0.0.1:34715", "slot map kept changing"),
            (SK::TryAgain, "Multiple keys request during rehashing of slot", "TRYAGAIN"),
            (SK::ClusterDown, "The cluster is down", "CLUSTERDOWN"),
        ] {
            let err = redis::RedisError::from((RK::Server(kind), "refused", text.to_string()));
            assert!(Error::is_refused_for_now(&err), "{kind:?}");
            let mapped = Error::from_redis(&err, "acquiring lock \"x\"");
            assert_eq!(mapped.kind(), ErrorKind::Connection, "{kind:?}: {mapped}");
            assert!(mapped.message().contains(named), "{kind:?}: {mapped}");
        }
        let io: redis::RedisError = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset").into();
        assert!(!Error::is_refused_for_now(&io), "a lost reply may have run");
    }
}
