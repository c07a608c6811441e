//! The constant Lua scripts, run by EVALSHA, one folder per primitive and one file
//! per operation.
//!
//! A script is loaded when a call first needs it, on the server it runs on, not by
//! every new connection: a new connection asks SCRIPT EXISTS of every script once
//! (transport/conn/loading.rs), and the first EVALSHA of one the server lacks goes
//! right behind its SCRIPT LOAD, in the same round-trip. So every call is one
//! round-trip from the start (a hold's first renewal over a slow link included),
//! a client loads only what its calls run and the server lacks (a CLI run: its
//! acquire's and release's scripts on a fresh server, none after), and a second
//! client loads none. What a connection's SCRIPT EXISTS cannot know (a SCRIPT FLUSH
//! or restart since, a cluster, whose nodes answer as one, a user refused SCRIPT
//! EXISTS, a pipeline) meets NOSCRIPT, which redis-rs's `invoke_async`,
//! `lock::wire::Call` and the replica-ack pipeline (lock/reentrant.rs) answer by
//! loading the script (on a cluster, on every node) and sending the call again:
//! NOSCRIPT means it did not run. A user refused SCRIPT LOAD runs the scripts
//! others loaded, and is told `+script|load` where none did.

use std::sync::LazyLock;

/// How often a call loads its script again after NOSCRIPT before giving up: a node can
/// lose its scripts between the load and the call (restarted in a failover).
pub(crate) const NOSCRIPT_RELOADS: usize = 4;

use redis::Script;

/// Declares each script once: its source file and its static, both in [`ALL`].
macro_rules! scripts {
    ($($name:ident = $file:literal;)*) => {
        $(pub(crate) static $name: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!($file)));)*
        /// Every script with its source (to name the command on a line of one: [`command_at`]).
        pub(crate) static ALL: LazyLock<Vec<(&'static str, &'static Script)>> =
            LazyLock::new(|| vec![$((include_str!($file), &*$name)),*]);
    };
}

scripts! {
    ACQUIRE = "lock/acquire.lua";
    RELEASE = "lock/release.lua";
    RENEW = "lock/renew.lua";
    FORCE_UNLOCK = "lock/force_unlock.lua";
    EXTEND = "lock/extend.lua";
    RELEASE_LATER = "lock/release_later.lua";
    HOLDER_INFO = "lock/holder_info.lua";
    NOTES = "lock/notes.lua";
    FAIR_ACQUIRE = "lock/fair_acquire.lua";
    FAIR_RELEASE = "lock/fair_release.lua";
    FAIR_LEAVE = "lock/fair_leave.lua";
    FAIR_SHIFT = "lock/fair_shift.lua";
    READ_ACQUIRE = "lock/read_acquire.lua";
    READ_RELEASE = "lock/read_release.lua";
    READ_RENEW = "lock/read_renew.lua";
    WRITE_ACQUIRE = "lock/write_acquire.lua";
    WRITE_RELEASE = "lock/write_release.lua";
    SEMAPHORE_TRY_SET = "semaphore/try_set_permits.lua";
    SEMAPHORE_ACQUIRE = "semaphore/acquire.lua";
    SEMAPHORE_RELEASE = "semaphore/release.lua";
    SEMAPHORE_GIVE_BACK = "semaphore/give_back.lua";
    SEMAPHORE_DRAIN = "semaphore/drain.lua";
    PERMITS_ACQUIRE = "permits/acquire.lua";
    PERMITS_RELEASE = "permits/release.lua";
    LATCH_TRY_SET = "latch/try_set_count.lua";
    LATCH_COUNT_DOWN = "latch/count_down.lua";
    ELECTION_ANNOUNCE = "election/announce.lua";
    ELECTION_LEADER = "election/leader.lua";
}

/// The Redis command called on a line of one of our scripts, from an error that
/// names the script by SHA and the line (`script: <sha>, on @user_script:<line>.`).
pub(crate) fn command_at(error: &str) -> Option<String> {
    // Redis 7 names the script `script: <sha>`; 6.2 `(call to f_<sha>)`.
    let hex = |sha: &&str| sha.bytes().all(|b| b.is_ascii_hexdigit());
    let after = |marker: &str| error.split(marker).nth(1).and_then(|rest| rest.get(..40)).filter(hex);
    let sha = after("script: ").or_else(|| after("call to f_"))?;
    let line: usize = error.split("@user_script:").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let source = ALL.iter().find(|(_, s)| s.get_hash() == sha)?.0;
    let text = source.lines().nth(line.checked_sub(1)?)?;
    let call = text.split("call(").nth(1)?;
    let command = call.trim_start_matches(['\'', '"']).split(['\'', '"']).next()?;
    (!command.is_empty()).then(|| command.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_of_a_script_line() {
        let (source, _) = super::ALL.iter().find(|(_, s)| s.get_hash() == super::ACQUIRE.get_hash()).unwrap();
        let line = source.lines().position(|l| l.contains("call('hincrby'")).unwrap() + 1;
        let error = format!("ERR ... script: {}, on @user_script:{line}.", super::ACQUIRE.get_hash());
        assert_eq!(super::command_at(&error).as_deref(), Some("hincrby"));
        assert_eq!(super::command_at(&error.replace(&format!(":{line}."), ":1.")).as_deref(), None, "line 1 calls nothing");
        assert_eq!(super::command_at("ERR no script named here"), None);
        // Redis 6.2's text (scripts/test-servers.sh runs the ACL tests against it).
        let error = format!(
            "Error running script (call to f_{}): @user_script:{line}: @user_script: {line}: The user executing the script can't run this command or subcommand",
            super::ACQUIRE.get_hash()
        );
        assert_eq!(super::command_at(&error).as_deref(), Some("hincrby"));
    }
}
