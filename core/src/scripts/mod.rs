//! The constant Lua scripts, run by EVALSHA, one folder per primitive and one file
//! per operation. Every new connection loads them first (transport), so a call is
//! one round-trip; redis-rs loads a script again after a NOSCRIPT (SCRIPT FLUSH),
//! so that never reaches the caller either.

use std::sync::LazyLock;

use redis::Script;

const ACQUIRE_LUA: &str = include_str!("lock/acquire.lua");
const RELEASE_LUA: &str = include_str!("lock/release.lua");
const RENEW_LUA: &str = include_str!("lock/renew.lua");
const FORCE_UNLOCK_LUA: &str = include_str!("lock/force_unlock.lua");
const EXTEND_LUA: &str = include_str!("lock/extend.lua");
const HOLDER_INFO_LUA: &str = include_str!("lock/holder_info.lua");

/// Every script, loaded on each new connection.
pub(crate) const SOURCES: [&str; 6] = [ACQUIRE_LUA, RELEASE_LUA, RENEW_LUA, FORCE_UNLOCK_LUA, EXTEND_LUA, HOLDER_INFO_LUA];

pub(crate) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE_LUA));
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_LUA));
pub(crate) static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(RENEW_LUA));
pub(crate) static FORCE_UNLOCK: LazyLock<Script> = LazyLock::new(|| Script::new(FORCE_UNLOCK_LUA));
pub(crate) static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_LUA));
pub(crate) static HOLDER_INFO: LazyLock<Script> = LazyLock::new(|| Script::new(HOLDER_INFO_LUA));

/// The Redis command called on a line of one of our scripts, from an error that
/// names the script by SHA and the line (`script: <sha>, on @user_script:<line>.`).
pub(crate) fn command_at(error: &str) -> Option<String> {
    let sha = error.split("script: ").nth(1)?.get(..40)?;
    let line: usize = error.split("@user_script:").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let scripts: [&Script; 6] = [&ACQUIRE, &RELEASE, &RENEW, &FORCE_UNLOCK, &EXTEND, &HOLDER_INFO];
    let source = SOURCES.iter().zip(scripts).find(|(_, s)| s.get_hash() == sha)?.0;
    let text = source.lines().nth(line.checked_sub(1)?)?;
    let call = text.split("call(").nth(1)?;
    let command = call.trim_start_matches(['\'', '"']).split(['\'', '"']).next()?;
    (!command.is_empty()).then(|| command.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_of_a_script_line() {
        let error = format!("ERR ... script: {}, on @user_script:11.", super::ACQUIRE.get_hash());
        assert_eq!(super::command_at(&error).as_deref(), Some("hincrby"));
        assert_eq!(super::command_at("ERR no script named here"), None);
    }
}
