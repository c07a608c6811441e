//! `fault-proxy <upstream_port>`: the harness's [`FaultProxy`] as a program, for the
//! tests of the bindings (Python, Node, C), which spawn it and steer it on stdin.
//!
//! Prints `port N` once listening on 127.0.0.1:N, then reads one command per line and
//! answers each with one line, `ok` (or `ok <number>` for queries) once it is in force,
//! `error <why>` for a line it does not understand:
//!
//! - `blackhole on|off`: hold all traffic both ways (delivered in order when it ends)
//! - `delay <ms>`: one-way delay on every byte, both ways (0: none)
//! - `cut-next-reply-to <marker>`: the next request containing marker runs on the server,
//!   its connection is closed before the reply reaches the client
//! - `delay-next-reply-to <marker> <ms>`: the reply to the next request containing marker
//!   arrives ms late
//! - `reset`: close every open connection (answered once they are closed)
//! - `refuse on|off`: connecting to the proxy fails (connection refused) while on; open
//!   connections are left alone
//! - `split on|off`: replies reach the client in pieces cut at random points
//! - `cuts`, `open`, `accepted`: `ok N` with the replies cut so far, the connections
//!   open now, the connections accepted so far (for waiting on a state)
//!
//! A marker is matched against the raw RESP bytes of a request, e.g. a lock's name or
//! a script's SHA. Exits when stdin closes, which also ends every connection.

use ferrolock_harness::FaultProxy;
use std::io::{BufRead, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn main() {
    let upstream: u16 = match std::env::args().nth(1).and_then(|p| p.parse().ok()) {
        Some(p) => p,
        None => {
            eprintln!("usage: fault-proxy <upstream_port>");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let proxy = runtime.block_on(FaultProxy::start(upstream));
    let mut out = std::io::stdout().lock();
    writeln!(out, "port {}", proxy.port).unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let answer = match command(&proxy, &runtime, line.trim()) {
            Ok(None) => "ok".to_string(),
            Ok(Some(n)) => format!("ok {n}"),
            Err(why) => format!("error {why}"),
        };
        if writeln!(out, "{answer}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    // Exit without waiting for the proxied connections: the test that spawned us is done.
    std::process::exit(0);
}

fn on_off(arg: &str) -> Result<bool, String> {
    match arg {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("expected on or off, got {arg:?}")),
    }
}

fn millis(arg: &str) -> Result<Duration, String> {
    arg.parse().map(Duration::from_millis).map_err(|_| format!("expected milliseconds, got {arg:?}"))
}

fn command(proxy: &FaultProxy, runtime: &tokio::runtime::Runtime, line: &str) -> Result<Option<u64>, String> {
    let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    match verb {
        "blackhole" => proxy.set_blackhole(on_off(rest)?),
        "delay" => proxy.set_one_way_delay(millis(rest)?),
        "cut-next-reply-to" if !rest.is_empty() => proxy.cut_next_reply_to(rest.as_bytes()),
        "delay-next-reply-to" => {
            let (marker, ms) = rest.rsplit_once(' ').ok_or("expected <marker> <ms>")?;
            proxy.delay_next_reply_to(marker.trim().as_bytes(), millis(ms)?);
        }
        "reset" => runtime.block_on(proxy.reset()),
        "refuse" => runtime.block_on(proxy.set_refuse(on_off(rest)?)),
        "split" => proxy.set_split(on_off(rest)?),
        "cuts" => return Ok(Some(proxy.cuts.load(Ordering::SeqCst))),
        "open" => return Ok(Some(proxy.open_connections())),
        "accepted" => return Ok(Some(proxy.accepted_connections())),
        _ => return Err(format!("unknown command {line:?}")),
    }
    Ok(None)
}
