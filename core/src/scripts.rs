//! The constant Lua scripts, run by EVALSHA. Every new connection loads them first
//! (transport.rs), so a call is one round-trip; redis-rs loads a script again after
//! a NOSCRIPT (SCRIPT FLUSH), so that never reaches the caller either.

use std::sync::LazyLock;

use redis::Script;

const ACQUIRE_LUA: &str = include_str!("scripts/acquire.lua");
const RELEASE_LUA: &str = include_str!("scripts/release.lua");
const RENEW_LUA: &str = include_str!("scripts/renew.lua");
const FORCE_UNLOCK_LUA: &str = include_str!("scripts/force_unlock.lua");

/// Every script, loaded on each new connection (transport.rs).
pub(crate) const SOURCES: [&str; 4] = [ACQUIRE_LUA, RELEASE_LUA, RENEW_LUA, FORCE_UNLOCK_LUA];

pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(ACQUIRE_LUA));
pub(crate) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(RELEASE_LUA));
pub(crate) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(RENEW_LUA));
pub(crate) static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(FORCE_UNLOCK_LUA));

/// The publish command for lock channels. Standalone and Sentinel use PUBLISH;
/// a cluster deployment would use SPUBLISH (sharded pub/sub).
pub(crate) const PUBLISH: &str = "publish";
