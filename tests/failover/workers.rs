//! The client processes: Python (worker.py) and Node (worker.js) workers, started with
//! one JSON config each, stopped with `stop` on stdin and given a bounded time to finish.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub struct Worker {
    pub id: String,
    pub lang: &'static str,
    /// How the binding took the policy (from its `ready` line).
    pub policy: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

/// How a worker ended.
pub struct Ended {
    pub id: String,
    pub lang: &'static str,
    /// The `done` line's JSON, or why there is none (a hang, a crash).
    pub result: Result<serde_json::Value, String>,
    pub stop_took: Duration,
}

/// Where the workers' programs and the Python interpreter are.
pub struct Programs {
    pub python: PathBuf,
    pub dir: PathBuf,
}

impl Programs {
    pub fn find(repo: &Path) -> Programs {
        let python = std::env::var_os("FAILOVER_PYTHON").map(PathBuf::from).unwrap_or_else(|| repo.join("bindings-python/.venv/bin/python"));
        Programs { python, dir: repo.join("tests/failover") }
    }
}

impl Worker {
    /// Starts one worker and waits (bounded) for its `ready` line.
    pub async fn start(programs: &Programs, lang: &'static str, config: &serde_json::Value, stderr: std::fs::File) -> Result<Worker, String> {
        let id = config["id"].as_str().unwrap_or("?").to_string();
        let mut cmd = match lang {
            "python" => {
                let mut c = Command::new(&programs.python);
                c.arg(programs.dir.join("worker.py"));
                c
            }
            _ => {
                let mut c = Command::new("node");
                c.arg(programs.dir.join("worker.js"));
                c
            }
        };
        let mut child = cmd
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("worker {id} ({lang}) cannot start: {e}"))?;
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .map_err(|_| format!("worker {id} ({lang}) was not ready within 60 s"))?
            .map_err(|e| format!("worker {id} ({lang}): {e}"))?
            .unwrap_or_default();
        let Some(ready) = line.strip_prefix("ready ") else {
            return Err(format!("worker {id} ({lang}) did not start: {line}"));
        };
        let ready: serde_json::Value = serde_json::from_str(ready).map_err(|e| format!("worker {id}: {e}: {line}"))?;
        let policy = ready["policy"].as_str().unwrap_or("?").to_string();
        Ok(Worker { id, lang, policy, child, stdin, lines })
    }

    /// Sends one line (e.g. `epoch N`); a worker gone already is found at its stop.
    pub async fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(format!("{line}\n").as_bytes()).await;
        }
    }

    /// Asks it to stop, waits up to `limit` for its `done` line and its exit; one that
    /// does not finish in time is killed (a hang).
    pub async fn stop(mut self, limit: Duration) -> Ended {
        let started = Instant::now();
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"stop\n").await;
        }
        let waited = tokio::time::timeout(limit, async {
            let mut done = Err("exited without a done line".to_string());
            while let Ok(Some(line)) = self.lines.next_line().await {
                if let Some(json) = line.strip_prefix("done ") {
                    done = serde_json::from_str(json).map_err(|e| format!("bad done line ({e}): {line}"));
                }
            }
            let status = self.child.wait().await.map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("exited with {status}"));
            }
            done
        })
        .await;
        let result = match waited {
            Ok(r) => r,
            Err(_) => {
                let _ = self.child.kill().await;
                Err(format!("did not finish within {limit:?} of stop (a hang): killed"))
            }
        };
        Ended { id: self.id, lang: self.lang, result, stop_took: started.elapsed() }
    }
}
