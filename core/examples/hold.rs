//! Acquire a lock, hold it, release it: the building block of the fault tests and
//! the README's hand-over demo.
//!
//! cargo run -p ferrolock --example hold -- --url URL --name NAME [--lease-ms N]
//!     [--watchdog-ms N] [--hold-ms N] [--fenced]
//!
//! Prints `acquired owner=<field> token=<n or ->`, holds for --hold-ms (default:
//! until SIGINT/SIGTERM), prints `lost` if the hold is lost, then releases and
//! prints `released`.

use std::io::Write;
use std::time::Duration;

use ferrolock::{AcquireOptions, Client};

struct Args {
    url: String,
    name: String,
    lease_ms: Option<u64>,
    watchdog_ms: u64,
    hold_ms: Option<u64>,
    fenced: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args { url: String::new(), name: String::new(), lease_ms: None, watchdog_ms: 30_000, hold_ms: None, fenced: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |what: &str| it.next().ok_or_else(|| format!("{what} needs a value"));
        let number = |v: String, what: &str| v.parse::<u64>().map_err(|_| format!("{what}: not a number: {v}"));
        match flag.as_str() {
            "--url" => args.url = value("--url")?,
            "--name" => args.name = value("--name")?,
            "--lease-ms" => args.lease_ms = Some(number(value("--lease-ms")?, "--lease-ms")?),
            "--watchdog-ms" => args.watchdog_ms = number(value("--watchdog-ms")?, "--watchdog-ms")?,
            "--hold-ms" => args.hold_ms = Some(number(value("--hold-ms")?, "--hold-ms")?),
            "--fenced" => args.fenced = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.url.is_empty() || args.name.is_empty() {
        return Err("--url and --name are required".into());
    }
    Ok(args)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[tokio::main]
async fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hold: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        eprintln!("hold: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> ferrolock::Result<()> {
    let client = Client::builder(&args.url).watchdog_timeout(Duration::from_millis(args.watchdog_ms)).connect().await?;
    let lock = if args.fenced { client.fenced_lock(&args.name)? } else { client.lock(&args.name)? };
    let options = AcquireOptions { wait: None, lease: args.lease_ms.map(Duration::from_millis) };
    let guard = lock.acquire_with(options).await?.expect("an unbounded wait returns only when acquired");
    let token = guard.token().map_or("-".to_string(), |t| t.to_string());
    say(&format!("acquired owner={} token={token}", lock.owner()));

    let held = async {
        match args.hold_ms {
            Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            None => std::future::pending().await,
        }
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = held => {}
        _ = guard.lost() => say("lost"),
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    let _ = guard.release().await;
    say("released");
    client.shutdown().await
}
