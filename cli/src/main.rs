//! `ferrolock`: a distributed flock(1) on Redis, speaking Redisson's lock protocol.
//!
//! ```text
//! ferrolock [CONNECTION] run NAME [--wait SECS | -n] [--lease SECS | --watchdog SECS] [--fenced | --all]
//!                           [--conflict-exit-code N] [--kill-after SECS] [--min-hold SECS] (-- CMD [ARGS...] | -c SHELL_COMMAND)
//!                           [--shared | --exclusive | --fair | --semaphore N]
//! ferrolock [CONNECTION] status NAME [--json] [--check] [--kind KIND]
//! ferrolock [CONNECTION] latch NAME (--count N | --count-down | --wait [--timeout SECS])
//! ferrolock [CONNECTION] unlock --force NAME
//! ferrolock [CONNECTION] top [PREFIX] [--once | --json]
//! ferrolock [CONNECTION] elect NAME [--watchdog SECS] [--kill-after SECS] [--once | --restart-delay SECS] -- CMD [ARGS...]
//! ferrolock [CONNECTION] leader NAME [--watch] [--json]
//! ferrolock demo [--url URL] [--seconds N] [--workers DIR]
//!
//! CONNECTION: [--url URL]... [--sentinel-username NAME] [--replica-ack POLICY | --no-replica-ack]
//!             [--replica-ack-aof] [--replica-ack-timeout SECS] [--app-name NAME]
//! ```
//!
//! The URL is `--url` (accepted before or after the subcommand), else `REDIS_URL`,
//! else `redis://127.0.0.1:6379`. Several URLs (`--url` repeated, or separated by
//! commas in one value or in `REDIS_URL`) are independent masters: `run` takes a
//! Redlock over them (one client per URL, the lock on a majority, N/2 + 1; `--all`:
//! on every one, a MultiLock), `status` shows the lock on each, `unlock --force`
//! breaks it on each. A master that does not answer counts against the quorum: with
//! 1 of 3 down `run` still runs CMD (and warns), with 2 of 3 down it exits 69. No
//! fencing token over several masters (`--fenced` is a usage error): tokens of
//! independent servers do not compose. Redlock is not safe against everything: a
//! master restarted without persistence before the lease ran out comes back empty,
//! a server clock jumping forward expires the lock early, and a long pause outlives
//! the hold (see the README's "When Redlock is not safe"). Each URL is one of
//!
//! - `redis://[user:password@]host[:port][/db]` or `rediss://...` (TLS): one server (a
//!   cluster node given this way is used as the cluster's seed);
//! - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]`
//!   or `rediss+sentinel://...`: the master the sentinels name, followed across failovers;
//! - `redis+cluster://[user:password@]host:port[,host:port...]` or `rediss+cluster://...`.
//!
//! A Sentinel URL's credentials are the data nodes'. The sentinels' own are
//! `--sentinel-username` and the environment variable `FERROLOCK_SENTINEL_PASSWORD`
//! (never an option: any user on the machine can read a command line). Behind Sentinel
//! and on a Cluster an acquire waits until enough of the master's replicas acknowledged
//! it (`--replica-ack off|one|majority|all`, default one; `--replica-ack-aof`: fsynced,
//! WAITAOF; `--replica-ack-timeout`, default 1 s) and fails with exit 76 when too few
//! did or the master has none; `--no-replica-ack` (`--replica-ack off`) turns that off.
//! Diagnostics go to stderr, prefixed `ferrolock:`; core's log events too when
//! `RUST_LOG` asks for them (off otherwise). `--app-name NAME` (or `FERROLOCK_APP_NAME`)
//! names the connections `ferrolock:<client id>:NAME` in `CLIENT LIST`.
//!
//! Exit status:
//!
//! | code | meaning |
//! |---|---|
//! | 0 / CMD's | `run`: CMD's own exit status; `status` (held or free; with `--check`: held), `unlock` (locked or not); `elect`: CMD's status (`--once`, or stopped by a signal); `leader` |
//! | 1 | `run`: not acquired within `--wait` (or the `--conflict-exit-code`); `status --check`: free; `latch --count`: still counting down; `latch --wait --timeout`: timed out |
//! | 2 | usage error: bad option, missing CMD, bad duration, bad URL or lock name, `unlock` without `--force`, `--fenced` (or `--shared`, `--exclusive`, `--fair`, `--semaphore`, `latch`) with several URLs, a URL given twice, `status --check` on a semaphore or latch |
//! | 65 | the key at the name is not what was asked for (a lock; a semaphore or latch for `run --semaphore`, `latch`, `status --kind`) |
//! | 69 | Redis unavailable: refused, timed out, bad credentials (several URLs: fewer than the quorum answer) |
//! | 70 | internal error |
//! | 74 | `run`: the lock could not be released at the end (Redis down or refused it); it may stay held until its lease ends |
//! | 75 | `run`: the lock was lost while CMD ran (CMD got SIGTERM), or its release found it gone; `elect --once`: leadership lost while CMD ran |
//! | 76 | `run`, behind Sentinel: no replica acknowledged the acquire in time; CMD did not run, nothing is held, retrying is safe |
//! | 77 | a Redis ACL refused a command, key or channel (`NOPERM`); the message names the ACL rule to add |
//! | 126 | `run`: CMD is not executable |
//! | 127 | `run`: CMD not found |
//! | 128+N | CMD died of signal N, or ferrolock got signal N while waiting (nothing is then held) |

mod args;
mod child;
mod demo;
mod elect;
mod exit;
mod latch;
mod leader;
mod multi;
mod orphan;
mod permits;
mod plan;
mod run;
mod signals;
mod spinner;
mod status;
mod supervise;
mod target;
mod top;
mod unlock;

use std::time::Duration;

use ferrolock::{AcquireOptions, LockKind, Quorum};

use args::{parse, Command, UnlockArgs};

/// Logs: core's `tracing` events (targets under `ferrolock`), filtered by RUST_LOG
/// (e.g. `RUST_LOG=ferrolock=info`), on stderr. Off when RUST_LOG is unset or empty:
/// the `ferrolock:` diagnostics already say what decides the exit status, and cron
/// mails should not fill with lines about reconnects that healed.
fn init_logs() {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(value) if !value.trim().is_empty() => match EnvFilter::try_new(&value) {
            Ok(filter) => filter,
            Err(e) => {
                exit::say(&format!("RUST_LOG={value:?} is not a log filter ({e}); logs stay off"));
                return;
            }
        },
        _ => return,
    };
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

fn main() {
    if let Some(code) = orphan::guard_main(&std::env::args_os().collect::<Vec<_>>()) {
        std::process::exit(code);
    }
    let cli = parse();
    init_logs();
    if cli.sentinel_password.is_some() {
        // Too late for this one (it is in the process list already), but never again; not echoed.
        exit::say(&format!(
            "there is no --sentinel-password option: any user on this machine can read a command \
             line. Put the sentinels' password in the {} environment variable",
            target::SENTINEL_PASSWORD_ENV
        ));
        std::process::exit(exit::USAGE);
    }
    let mut urls = cli.url;
    urls.extend(match &cli.command {
        Command::Run(args) => args.url.urls.clone(),
        Command::Status(args) => args.url.urls.clone(),
        Command::Unlock(args) => args.url.urls.clone(),
        Command::Latch(args) => args.url.urls.clone(),
        Command::Top(args) => args.url.urls.clone(),
        Command::Demo(args) => args.url.urls.clone(),
        Command::Elect(args) => args.url.urls.clone(),
        Command::Leader(args) => args.url.urls.clone(),
    });
    let code = match cli.command {
        // The demo runs its own runtime, and its own server when no URL is given.
        Command::Demo(args) => {
            let mut targets = target::given(urls);
            if targets.len() > 1 {
                exit::say("demo takes one URL (the workers share one server), not several");
                exit::USAGE
            } else {
                demo::run(targets.pop().map(|t| t.url), args.seconds, args.workers, args.logs)
            }
        }
        command => {
            let replica_ack = match (cli.no_replica_ack, cli.replica_ack) {
                (true, _) => ferrolock::ReplicaAck::Off,
                (false, policy) => policy.unwrap_or(ferrolock::Config::default().replica_ack),
            };
            let settings =
                target::SentinelSettings::from_env(cli.sentinel_username, replica_ack, cli.replica_ack_aof, cli.replica_ack_timeout)
                    .and_then(|sentinel| Ok((sentinel, target::app_name(cli.app_name)?)));
            match settings {
                Ok((sentinel, app_name)) => dispatch(target::resolve(urls, sentinel, app_name), command),
                Err(message) => {
                    exit::say(&message);
                    exit::USAGE
                }
            }
        }
    };
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

fn dispatch(targets: Vec<target::Target>, command: Command) -> i32 {
    let command = match command {
        // A prefix, not a name; its own runtime and terminal.
        Command::Top(args) => return top::main(targets, args),
        command => command,
    };
    if let Command::Unlock(UnlockArgs { force: false, .. }) = command {
        exit::say(unlock::WHY_FORCE);
        eprintln!("\nUsage: ferrolock unlock --force <NAME>");
        return exit::USAGE;
    }
    let name = match &command {
        Command::Run(args) => &args.name,
        Command::Status(args) => &args.name,
        Command::Unlock(args) => &args.name,
        Command::Latch(args) => &args.name,
        Command::Elect(args) => &args.name,
        Command::Leader(args) => &args.name,
        Command::Demo(_) | Command::Top(_) => unreachable!("dispatched before"),
    };
    // A bad name is a usage error, found before connecting (or waiting for a server).
    let what = match &command {
        Command::Run(args) if args.semaphore.is_some() => "semaphore",
        Command::Latch(_) => "latch",
        Command::Status(_) => "the",
        Command::Elect(_) | Command::Leader(_) => "election",
        _ => "lock",
    };
    if let Err(e) = ferrolock::validate::name(what, std::os::unix::ffi::OsStrExt::as_bytes(name.as_os_str())) {
        exit::say(e.message());
        return exit::USAGE;
    }
    if let Some(message) = multi_usage(&targets, &command) {
        exit::say(&message);
        return exit::USAGE;
    }
    // Before anything else: from here on no signal can kill us with the lock held.
    let signals = match &command {
        Command::Run(_) | Command::Latch(_) | Command::Elect(_) => match signals::Signals::install() {
            Ok(signals) => Some(signals),
            Err(e) => {
                exit::say(&format!("cannot install signal handlers: {e}"));
                return exit::INTERNAL;
            }
        },
        _ => None,
    };
    // Two workers: the watchdog keeps renewing even if one is busy.
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            exit::say(&format!("cannot start the async runtime: {e}"));
            return exit::INTERNAL;
        }
    };
    runtime.block_on(async move {
        match command {
            Command::Run(args) => {
                let wait = if args.nonblock { Some(Duration::ZERO) } else { args.wait };
                let plan = plan::Plan {
                    name: args.name,
                    acquire: AcquireOptions { wait, lease: args.lease },
                    watchdog: args.watchdog,
                    kind: match (args.fenced, args.shared, args.exclusive, args.fair) {
                        (true, ..) => LockKind::Fenced,
                        (_, true, ..) => LockKind::Read,
                        (_, _, true, _) => LockKind::Write,
                        (.., true) => LockKind::Fair,
                        _ => LockKind::Reentrant,
                    },
                    semaphore: args.semaphore,
                    quorum: if args.all { Quorum::All } else { Quorum::Majority },
                    conflict_exit_code: i32::from(args.conflict_exit_code),
                    kill_after: args.kill_after,
                    min_hold: args.min_hold,
                    // `status` shows a -c command as its string alone.
                    shown_command: match &args.shell {
                        Some(shell) => shell.to_string_lossy().into_owned(),
                        None => plan::shown_command(&args.command),
                    },
                    command: match args.shell {
                        Some(shell) => vec!["sh".into(), "-c".into(), shell],
                        None => args.command,
                    },
                };
                run::run(targets, plan, signals.expect("installed above")).await
            }
            Command::Status(args) => status::run(targets, &args.name, args.json, args.check, args.kind).await,
            Command::Latch(args) => {
                let action = match (args.count, args.count_down) {
                    (Some(count), _) => latch::Action::Set(count),
                    (None, true) => latch::Action::CountDown,
                    (None, false) => latch::Action::Wait(args.timeout),
                };
                latch::run(&targets[0], &args.name, action, signals.expect("installed above")).await
            }
            Command::Unlock(args) => unlock::run(targets, &args.name).await,
            Command::Elect(args) => elect::run(&targets[0], args, signals.expect("installed above")).await,
            Command::Leader(args) => leader::run(&targets[0], &args.name, args.watch, args.json).await,
            Command::Demo(_) | Command::Top(_) => unreachable!("dispatched before"),
        }
    })
}

/// Usage errors of several URLs, found before connecting: a URL given twice (it would
/// count twice towards the quorum), and a fencing token asked of a Redlock.
fn multi_usage(targets: &[target::Target], command: &Command) -> Option<String> {
    for (i, target) in targets.iter().enumerate() {
        if target.url.is_empty() {
            return Some(format!("an empty URL in the list from {}", target.source));
        }
        if targets[..i].iter().any(|other| other.url == target.url) {
            return Some(format!(
                "URL {} is given twice; a Redlock's masters must be independent servers, each given once",
                target::redact(&target.url)
            ));
        }
    }
    let n = targets.len();
    match command {
        Command::Run(args) if args.fenced && n > 1 => Some(format!(
            "--fenced takes one URL, not {n}: a Redlock has no fencing token (tokens of independent \
             servers do not compose into one safe token); where a stale holder must never write, use \
             a fenced lock on one server",
        )),
        Command::Run(args) if n > 1 && (args.shared || args.exclusive || args.fair || args.semaphore.is_some()) => {
            let option = match (args.shared, args.exclusive, args.fair) {
                (true, ..) => "--shared",
                (_, true, _) => "--exclusive",
                (.., true) => "--fair",
                _ => "--semaphore",
            };
            Some(format!(
                "{option} takes one URL, not {n}: a Redlock over several masters is made of plain locks \
                 (a fair order, a reader count or a number of permits lives on one server)"
            ))
        }
        Command::Latch(_) if n > 1 => Some(format!("latch takes one URL, not {n}: a latch lives on one server")),
        Command::Run(args) if n > 1 && args.min_hold.is_some() => Some(format!(
            "--min-hold takes one URL, not {n}: it leaves the lock to expire on its server"
        )),
        Command::Elect(_) | Command::Leader(_) if n > 1 => Some(format!(
            "an election lives on one server (its term is a fencing token): give one URL, not {n}"
        )),
        Command::Status(args) if n > 1 && args.kind.is_some_and(|k| k != args::StatusKind::Lock) => Some(format!(
            "status with several URLs reads a Redlock's plain lock on each; --kind other than lock takes one URL, not {n}"
        )),
        _ => None,
    }
}
