//! The Rust worker's `elect` command (tests/workers/README.md): a candidate that
//! campaigns, writes to the outside fence with its term while it leads, and resigns
//! after RESIGN_MS (0: leads until it is killed or loses), campaigning again each time.

use std::time::{Duration, Instant};

use ferrolock::{Client, Error, ErrorKind};

/// The pause between two writes of a leader to the fence.
const WRITE_EVERY: Duration = Duration::from_millis(20);

/// Starts the candidate loop in the background; `ok` once it runs.
pub async fn start(client: &Client, name: &str, fence_port: u64, sha: &str, id: &str, resign_ms: u64) -> Result<String, Error> {
    let election = client.election(name)?;
    let fence_error = |e: redis::RedisError| Error::new(ErrorKind::Connection, format!("the fence: {e}"));
    let fence = redis::Client::open(format!("redis://127.0.0.1:{fence_port}")).map_err(fence_error)?;
    let fence = fence.get_multiplexed_async_connection().await.map_err(fence_error)?;
    let (sha, id) = (sha.to_string(), id.to_string());
    tokio::spawn(async move {
        let write = |op: &'static str, term: u64| {
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(&sha).arg(3).arg("fence").arg("fence:dead").arg("fence:events").arg(op).arg(term).arg(&id);
            let mut fence = fence.clone();
            async move {
                let _: redis::RedisResult<i64> = cmd.query_async(&mut fence).await;
            }
        };
        loop {
            let Ok(leadership) = election.campaign().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let term = leadership.term();
            write("enter", term).await;
            let resign_at = (resign_ms > 0).then(|| Instant::now() + Duration::from_millis(resign_ms));
            loop {
                tokio::select! {
                    _ = leadership.lost() => {
                        write("leave", term).await;
                        break;
                    }
                    _ = tokio::time::sleep(WRITE_EVERY) => write("write", term).await,
                }
                if resign_at.is_some_and(|at| Instant::now() >= at) {
                    write("leave", term).await;
                    let _ = leadership.resign().await;
                    break;
                }
            }
        }
    });
    Ok("ok".into())
}
