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
        let code = err.code().unwrap_or("");
        let kind = match err.kind() {
            _ if code == "WRONGTYPE" => ErrorKind::WrongType,
            _ if code == "NOPERM" || is_script_acl_refusal(&err.to_string()) => ErrorKind::PermissionDenied,
            _ if matches!(code, "NOAUTH" | "WRONGPASS") => ErrorKind::Connection,
            RK::AuthenticationFailed => ErrorKind::Connection,
            RK::Io => ErrorKind::Connection,
            RK::Server(SK::BusyLoading | SK::TryAgain | SK::ClusterDown | SK::MasterDown | SK::ReadOnly) => {
                ErrorKind::Connection
            }
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
            ErrorKind::Connection => "; check that Redis is running and reachable",
            ErrorKind::WrongType => "; the key at this name holds another type, pick another name",
            _ => "",
        };
        Error::new(kind, format!("{context}: {err}{hint}"))
    }

    /// True for failures after which a command may or may not have run on the server.
    pub(crate) fn is_ambiguous(err: &redis::RedisError) -> bool {
        err.is_io_error() || err.is_timeout() || err.is_connection_dropped()
    }
}

/// Redis before 7.2 reports an ACL refusal inside a script as a plain error.
fn is_script_acl_refusal(text: &str) -> bool {
    text.contains("NOPERM") || text.contains("The user executing the script can't")
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
        return "the ACL user needs access to the lock channels: &redisson_lock__channel:* (or resetchannels &*)"
            .to_string();
    }
    if lower.contains("key") {
        return "the ACL user needs key access to the lock name and its helper keys: ~<lock name> \
                ~redisson_*{<lock name>* (scripts' keys need key access too)"
            .to_string();
    }
    if let Some(command) = command {
        return format!("the ACL user needs +{command} (ACL SETUSER <user> +{command})");
    }
    "grant the ACL user the commands, keys and channels of the README's least-privilege ACL user".to_string()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
