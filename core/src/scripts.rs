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

/// The Redis command called on a line of one of our scripts, from an error that
/// names the script by SHA and the line (`script: <sha>, on @user_script:<line>.`).
pub(crate) fn command_at(error: &str) -> Option<String> {
    let sha = error.split("script: ").nth(1)?.get(..40)?;
    let line: usize = error.split("@user_script:").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let scripts: [&Script; 4] = [&ACQUIRE, &RELEASE, &RENEW, &FORCE_UNLOCK];
    let source = SOURCES.iter().zip(scripts).find(|(_, s)| s.get_hash() == sha)?.0;
    let text = source.lines().nth(line.checked_sub(1)?)?;
    let call = text.split("call(").nth(1)?;
    let command = call.trim_start_matches(['\'', '"']).split(['\'', '"']).next()?;
    (!command.is_empty()).then(|| command.to_ascii_lowercase())
}
