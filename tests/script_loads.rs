//! How many scripts the `ferrolock` CLI loads, seen by MONITOR on a fresh
//! redis-server: a run loads each script it calls once and no other (not the whole
//! set), and a second run, a new process with new connections, loads none again.
//! Build the CLI first: `cargo build -p ferrolock-cli`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ferrolock_harness::{finish, target_binary, RedisServer};

/// The commands a server runs, as MONITOR shows them: each one's arguments, in order.
struct Monitor {
    lines: mpsc::Receiver<Vec<String>>,
    next_mark: u32,
}

impl Monitor {
    fn start(port: u16) -> Monitor {
        let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        socket.write_all(b"MONITOR\r\n").unwrap();
        let mut reader = BufReader::new(socket);
        let mut ok = String::new();
        reader.read_line(&mut ok).unwrap();
        assert_eq!(ok, "+OK\r\n", "MONITOR started");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { return };
                // `+<time> [<db> <client>] "ARG" "ARG"...`; commands run by a script say `lua`.
                let Some((source, args)) = line.split_once("] ") else { continue };
                if !source.ends_with(" lua") && tx.send(quoted(args)).is_err() {
                    return;
                }
            }
        });
        Monitor { lines, next_mark: 0 }
    }

    /// Every command the server ran since the last call: ends with an ECHO of a mark
    /// of its own, which the server runs after everything sent before it.
    fn commands_so_far(&mut self, port: u16) -> Vec<Vec<String>> {
        self.next_mark += 1;
        let mark = format!("script-loads-mark-{}", self.next_mark);
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap().get_connection().unwrap();
        let _: String = redis::cmd("ECHO").arg(&mark).query(&mut conn).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let args = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("MONITOR never showed {mark}"));
            if args.len() == 2 && args[0].eq_ignore_ascii_case("echo") && args[1] == mark {
                return seen;
            }
            seen.push(args);
        }
    }
}

/// The arguments of a MONITOR line: double-quoted, with backslash escapes inside.
fn quoted(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut arg = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => arg.extend(chars.next()),
                '"' => break,
                c => arg.push(c),
            }
        }
        args.push(arg);
    }
    args
}

/// The SHAs a run called by EVALSHA, and how many SCRIPT LOADs it sent.
fn scripts_of(commands: &[Vec<String>]) -> (BTreeSet<String>, usize) {
    let name = |c: &Vec<String>, i: usize| c.get(i).map(|a| a.to_ascii_lowercase()).unwrap_or_default();
    let called = commands.iter().filter(|c| name(c, 0) == "evalsha").map(|c| name(c, 1)).collect();
    let loads = commands.iter().filter(|c| name(c, 0) == "script" && name(c, 1) == "load").count();
    (called, loads)
}

fn run_plain_lock(server: &RedisServer) {
    let mut cmd = Command::new(target_binary("ferrolock"));
    cmd.args(["run", "plain", "--", "true"]).env("REDIS_URL", server.url()).stdin(Stdio::null());
    let run = finish(&mut cmd);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_run_loads_only_the_scripts_it_calls_and_a_second_run_none() {
    let server = RedisServer::start();
    let mut monitor = Monitor::start(server.port);
    let mut raw = redis::Client::open(server.url()).unwrap().get_connection().unwrap();

    run_plain_lock(&server);
    let (called, loads) = scripts_of(&monitor.commands_so_far(server.port));
    assert!(called.len() >= 2, "a run calls at least the acquire and the release: {called:?}");
    assert_eq!(loads, called.len(), "each script it called loaded once, and no other: {called:?}");
    let info: String = redis::cmd("INFO").arg("memory").query(&mut raw).unwrap();
    let cached = info.lines().find_map(|l| l.strip_prefix("number_of_cached_scripts:")).unwrap().trim().parse::<usize>().unwrap();
    assert_eq!(cached, called.len(), "the server holds exactly the scripts the run called");

    run_plain_lock(&server);
    let (again, loads) = scripts_of(&monitor.commands_so_far(server.port));
    assert_eq!(again, called, "the same run calls the same scripts");
    assert_eq!(loads, 0, "a second run on new connections loads nothing: the server has them");
}
