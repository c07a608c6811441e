//! The Sentinel options of the `ferrolock` command line (issue 13): `--sentinel-username`,
//! the sentinels' password from `FERROLOCK_SENTINEL_PASSWORD` (never an option),
//! `--no-replica-ack`, `--replica-ack-timeout`, the three URL forms, and exit 76 when no
//! replica acknowledged an acquire. Against real redis-server processes started here
//! (one server, or the harness's Sentinel set: master, replica and three sentinels).
//! No password ever shows up in what ferrolock prints.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use ferrolock_harness::{eventually, finish, free_port, keys, Finished, RedisServer, ScratchDir, SentinelOptions, SentinelSet};

const URL_PASSWORD: &str = "s3cret-data-pw";
const SENTINEL_PASSWORD: &str = "s3cret-sentinel-pw";


/// `ferrolock ARGS` with `REDIS_URL=url` and no inherited Sentinel password.
fn ferrolock(url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrolock"));
    cmd.args(args)
        .env("REDIS_URL", url)
        .env_remove("FERROLOCK_SENTINEL_PASSWORD")
        .stdin(Stdio::null());
    cmd
}


/// Nothing ferrolock printed holds a password.
fn assert_no_secret(out: &Finished, what: &str) {
    for secret in ["s3cret", URL_PASSWORD, SENTINEL_PASSWORD] {
        assert!(!out.stderr.contains(secret) && !out.stdout.contains(secret), "{what} shows a password: {out:?}");
    }
}

/// A URL nothing listens on: a usage error must be found before any connection.
fn dead_url() -> String {
    format!("redis://127.0.0.1:{}", free_port())
}

#[test]
fn sentinel_options_parse_and_a_one_server_url_ignores_them() {
    let server = RedisServer::start();
    let url = server.url();
    let scratch = ScratchDir::new("cli-sentinel-opts").unwrap();
    let ran = scratch.join("ran");
    let touch = format!("touch {}", ran.display());
    // Before the subcommand, after it, and in the `=` form; all apply to Sentinel URLs
    // only, so with one server they change nothing.
    let runs: [&[&str]; 7] = [
        &["--sentinel-username", "watcher", "--replica-ack-timeout", "0.25", "run", "opts", "--", "sh", "-c", &touch],
        &["run", "--no-replica-ack", "opts", "--", "sh", "-c", &touch],
        &["--replica-ack", "majority", "--replica-ack-aof", "run", "opts", "--", "sh", "-c", &touch],
        &["run", "--replica-ack=all", "opts", "--", "sh", "-c", &touch],
        &["run", "--replica-ack", "off", "--replica-ack-timeout", "2", "opts", "--", "sh", "-c", &touch],
        &["--replica-ack-timeout=600", "run", "--sentinel-username=w", "opts", "--", "sh", "-c", &touch],
        &["run", "--replica-ack-timeout", "0.001", "-n", "opts", "--", "sh", "-c", &touch],
    ];
    for args in runs {
        let _ = std::fs::remove_file(&ran);
        let out = finish(ferrolock(&url, args).env("FERROLOCK_SENTINEL_PASSWORD", SENTINEL_PASSWORD));
        assert_eq!(out.code, 0, "ferrolock {args:?}: {out:?}");
        assert!(ran.exists(), "ferrolock {args:?} did not run CMD: {out:?}");
        assert_no_secret(&out, "a run");
    }
    let out = finish(&mut ferrolock(&url, &["status", "opts", "--json", "--no-replica-ack", "--sentinel-username", "w"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("\"locked\":false"), "{out:?}");
    // An empty password variable counts as unset.
    let out = finish(ferrolock(&url, &["unlock", "--force", "opts"]).env("FERROLOCK_SENTINEL_PASSWORD", ""));
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn bad_sentinel_options_exit_2_with_a_clear_message() {
    let url = dead_url();
    let cases: &[(&[&str], &str)] = &[
        (&["--replica-ack-timeout", "0", "status", "x"], "--replica-ack-timeout"),
        (&["--replica-ack-timeout", "0.0001", "status", "x"], "0.001 to 600"),
        (&["--replica-ack-timeout", "-1", "status", "x"], "--replica-ack-timeout"),
        (&["--replica-ack-timeout", "601", "status", "x"], "0.001 to 600"),
        (&["--replica-ack-timeout", "soon", "status", "x"], "--replica-ack-timeout"),
        (&["--replica-ack-timeout", "nan", "status", "x"], "--replica-ack-timeout"),
        (&["--replica-ack-timeout", "inf", "run", "x", "--", "true"], "--replica-ack-timeout"),
        (&["status", "x", "--replica-ack-timeout"], "--replica-ack-timeout"),
        (&["--no-replica-ack", "--replica-ack-timeout", "1", "status", "x"], "--no-replica-ack"),
        (&["run", "--replica-ack-timeout", "1", "--no-replica-ack", "x", "--", "true"], "--no-replica-ack"),
        (&["--sentinel-username", "", "status", "x"], "--sentinel-username"),
        (&["status", "x", "--sentinel-username"], "--sentinel-username"),
        (&["--no-replica-ack=yes", "status", "x"], "--no-replica-ack"),
        (&["--replica-ack", "quorum", "status", "x"], "off, one, majority or all"),
        (&["--replica-ack", "ONE", "status", "x"], "--replica-ack"),
        (&["status", "x", "--replica-ack"], "--replica-ack"),
        (&["--replica-ack", "one", "--no-replica-ack", "status", "x"], "--no-replica-ack"),
        (&["--no-replica-ack", "--replica-ack-aof", "status", "x"], "--replica-ack-aof"),
        (&["--replica-ack-aof=yes", "status", "x"], "--replica-ack-aof"),
        // The password is never an option; the message says where it goes, without it.
        (&["--sentinel-password", URL_PASSWORD, "status", "x"], "FERROLOCK_SENTINEL_PASSWORD"),
        (&["run", "--sentinel-password=s3cret", "x", "--", "true"], "FERROLOCK_SENTINEL_PASSWORD"),
    ];
    for (args, mentions) in cases {
        let out = finish(&mut ferrolock(&url, args));
        assert_eq!(out.code, 2, "ferrolock {args:?}: {out:?}");
        assert!(out.stderr.starts_with("ferrolock: "), "ferrolock {args:?}: {out:?}");
        assert!(out.stderr.contains(mentions), "ferrolock {args:?} should mention {mentions}: {out:?}");
        assert_no_secret(&out, &format!("ferrolock {args:?}"));
    }
    // A password that is not UTF-8: refused, not shown.
    let out = finish(ferrolock(&url, &["status", "x"]).env("FERROLOCK_SENTINEL_PASSWORD", OsStr::from_bytes(b"s3cret\xff")));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("FERROLOCK_SENTINEL_PASSWORD is not valid UTF-8"), "{out:?}");
    assert_no_secret(&out, "a non-UTF-8 password");
}

#[test]
fn help_lists_the_url_forms_the_options_and_exit_76() {
    let out = finish(&mut ferrolock(&dead_url(), &["--help"]));
    assert_eq!(out.code, 0, "{out:?}");
    for needle in [
        "redis://[user:password@]host[:port][/db]",
        "redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]",
        "redis+cluster://[user:password@]host:port[,host:port...]",
        "--sentinel-username",
        "FERROLOCK_SENTINEL_PASSWORD",
        "command line",
        "--no-replica-ack",
        "--replica-ack <POLICY>",
        "--replica-ack-aof",
        "--replica-ack-timeout",
        "\n  76 ",
    ] {
        assert!(out.stdout.contains(needle), "--help lacks {needle:?}: {out:?}");
    }
    assert!(!out.stdout.contains("--sentinel-password"), "the refused option is shown: {out:?}");
    let out = finish(&mut ferrolock(&dead_url(), &["run", "--help"]));
    assert!(out.stdout.contains("exit 76") || out.stdout.contains("exits 76"), "{out:?}");
    assert!(out.stdout.contains("\n  76 "), "{out:?}");
}

#[test]
fn malformed_sentinel_and_cluster_urls_exit_2_without_the_password() {
    let urls = [
        format!("redis+sentinel://:{URL_PASSWORD}@127.0.0.1:26379"), // no master name
        format!("redis+sentinel://user:{URL_PASSWORD}@127.0.0.1:26379/"),
        format!("redis+sentinel://:{URL_PASSWORD}@127.0.0.1:26379/mymaster/x"), // db not a number
        format!("redis+sentinel://:{URL_PASSWORD}@127.0.0.1:1,,127.0.0.1:2/mymaster"),
        format!("rediss+sentinel://:{URL_PASSWORD}@127.0.0.1:1/mymaster?db=2"),
        format!("redis+cluster://:{URL_PASSWORD}@127.0.0.1:7000/1"), // a database
        format!("redis+cluster://:{URL_PASSWORD}@127.0.0.1:7000,"),
        format!("rediss+cluster://user:{URL_PASSWORD}@127.0.0.1:notaport"),
        format!("redis+sentinel:/user:{URL_PASSWORD}@127.0.0.1:1/mymaster"), // no ://
        format!("redis+nonsense://:{URL_PASSWORD}@127.0.0.1:1"),
    ];
    let runs: [&[&str]; 3] = [&["run", "x", "--", "true"], &["status", "x"], &["unlock", "--force", "x"]];
    for url in &urls {
        for args in runs {
            // From --url and from REDIS_URL, with a sentinel password in the environment.
            for from_flag in [true, false] {
                let mut cmd = if from_flag {
                    let mut cmd = ferrolock(&dead_url(), &["--url", url]);
                    cmd.args(args);
                    cmd
                } else {
                    ferrolock(url, args)
                };
                cmd.env("FERROLOCK_SENTINEL_PASSWORD", SENTINEL_PASSWORD);
                let started = std::time::Instant::now();
                let out = finish(&mut cmd);
                assert_eq!(out.code, 2, "{url} {args:?}: {out:?}");
                assert!(out.stderr.starts_with("ferrolock: "), "{url} {args:?}: {out:?}");
                assert!(out.stderr.contains("URL"), "{url} {args:?}: {out:?}");
                assert!(out.stderr.contains(if from_flag { "from --url" } else { "from REDIS_URL" }), "{out:?}");
                assert!(started.elapsed() < Duration::from_secs(5), "{url}: took {:?}", started.elapsed());
                assert_no_secret(&out, url);
            }
        }
    }
    // The message says what a Sentinel URL looks like.
    let out = finish(&mut ferrolock(&urls[0], &["status", "x"]));
    assert!(out.stderr.contains("<master name>") && out.stderr.contains("redis+cluster://"), "{out:?}");
}

#[test]
fn unreachable_sentinels_exit_69_without_the_passwords() {
    let url = format!("redis+sentinel://:{URL_PASSWORD}@127.0.0.1:{},127.0.0.1:{}/mymaster", free_port(), free_port());
    let started = std::time::Instant::now();
    let out = finish(ferrolock(&url, &["status", "x"]).env("FERROLOCK_SENTINEL_PASSWORD", SENTINEL_PASSWORD));
    assert_eq!(out.code, 69, "{out:?}");
    assert!(out.stderr.contains("mymaster"), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_no_secret(&out, "an unreachable sentinel");
}

/// Through a real Sentinel set whose sentinels and data nodes have passwords of their
/// own: the sentinels' comes from the environment; a paused replica makes an acquire
/// fail with 76 (CMD does not run, nothing stays held) unless --no-replica-ack.
#[tokio::test]
async fn through_sentinel_the_password_comes_from_the_environment_and_exit_76_without_a_replica() {
    let set = SentinelSet::start_with(SentinelOptions {
        password: Some(URL_PASSWORD.to_string()),
        sentinel_password: Some(SENTINEL_PASSWORD.to_string()),
        ..SentinelOptions::default()
    })
    .await;
    let url = set.url();
    assert!(url.starts_with("redis+sentinel://"), "{url}");
    let scratch = ScratchDir::new("cli-sentinel").unwrap();
    let ran = scratch.join("ran");
    let touch = format!("touch {}", ran.display());
    let run = |extra: &[&str], password: Option<&str>| {
        let _ = std::fs::remove_file(&ran);
        let mut cmd = ferrolock(&url, &["run", "-n"]);
        cmd.args(extra).args(["sentinel-lock", "--", "sh", "-c", &touch]);
        if let Some(pw) = password {
            cmd.env("FERROLOCK_SENTINEL_PASSWORD", pw);
        }
        let out = finish(&mut cmd);
        assert_no_secret(&out, &format!("run {extra:?}"));
        (out, ran.exists())
    };

    // Without the sentinels' password, or with a wrong one: they refuse us (69).
    let (out, cmd_ran) = run(&[], None);
    assert_eq!((out.code, cmd_ran), (69, false), "{out:?}");
    let (out, cmd_ran) = run(&[], Some("wrong-s3cret"));
    assert_eq!((out.code, cmd_ran), (69, false), "{out:?}");
    // With it: the lock is taken on the master (the replica acknowledges it), CMD runs.
    let (out, cmd_ran) = run(&["--replica-ack-timeout", "5"], Some(SENTINEL_PASSWORD));
    assert_eq!((out.code, cmd_ran), (0, true), "{out:?}");
    // --sentinel-username: "default" is the sentinels' user for a requirepass password.
    let (out, cmd_ran) = run(&["--sentinel-username", "default"], Some(SENTINEL_PASSWORD));
    assert_eq!((out.code, cmd_ran), (0, true), "{out:?}");

    // The replica stops answering: WAIT gets no acknowledgement, the acquire is undone.
    set.pause_replica().await;
    let (out, cmd_ran) = run(&["--replica-ack-timeout", "0.2"], Some(SENTINEL_PASSWORD));
    assert_eq!((out.code, cmd_ran), (76, false), "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("replica"), "{out:?}");
    let mut master = set.raw_master().await;
    eventually(Duration::from_secs(10), "the undone acquire to leave no lock behind", || {
        let mut master = master.clone();
        async move { !keys(&mut master).await.iter().any(|k| k == "sentinel-lock") }
    })
    .await;
    let (out, cmd_ran) = run(&["--replica-ack", "all", "--replica-ack-timeout", "0.2"], Some(SENTINEL_PASSWORD));
    assert_eq!((out.code, cmd_ran), (76, false), "{out:?}");
    assert!(out.stderr.contains("replica_ack policy \"all\""), "{out:?}");
    // Without the acknowledgement the same acquire goes through.
    for off in [&["--no-replica-ack"][..], &["--replica-ack", "off"]] {
        let (out, cmd_ran) = run(off, Some(SENTINEL_PASSWORD));
        assert_eq!((out.code, cmd_ran), (0, true), "{off:?}: {out:?}");
    }
    assert!(!keys(&mut master).await.iter().any(|k| k == "sentinel-lock"), "the lock stayed after the run");
    set.resume_replica().await;
}
