//! A demoted master's READONLY retires the connection it came on, so the next
//! request connects afresh (behind Sentinel: to the new master), also when the
//! failover kept our connection open. redis-rs hands a command's error reply back as
//! a value (`Value::ServerError`, a pipeline's among its values), and Redis before
//! 7.0 gives a script's READONLY only in the text (`error::code_in`): both are read.

use redis::{RedisError, Value};

use crate::error::{code_in, server_code};

/// Replies that may hold a READONLY error reply.
pub(super) trait Replies {
    fn readonly(&self) -> bool;
}

impl Replies for Value {
    fn readonly(&self) -> bool {
        match self {
            Value::ServerError(e) => code_in(e.code(), &format!("{} {}", e.code(), e.details().unwrap_or(""))) == "READONLY",
            _ => false,
        }
    }
}

impl Replies for Vec<Value> {
    fn readonly(&self) -> bool {
        self.iter().any(Replies::readonly)
    }
}

/// True for a READONLY error.
pub(super) fn is_readonly(e: &RedisError) -> bool {
    server_code(e).as_deref() == Some("READONLY")
}
