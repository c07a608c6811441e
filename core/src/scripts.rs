//! The constant Lua scripts, run by EVALSHA (redis-rs loads them again after a
//! NOSCRIPT, so SCRIPT FLUSH and restarts never reach the caller).

use std::sync::LazyLock;

use redis::Script;

pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/acquire.lua")));
pub(crate) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/release.lua")));
pub(crate) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/renew.lua")));
pub(crate) static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/force_unlock.lua")));

/// The publish command for lock channels. Standalone and Sentinel use PUBLISH;
/// a cluster deployment would use SPUBLISH (sharded pub/sub).
pub(crate) const PUBLISH: &str = "publish";
