//! `ferrolock demo`, the main job: it runs end to end on its own server with every
//! language, and it fails loudly when a worker cannot start.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use ferrolock_harness::{repo_root, target_binary, LANGUAGES};

#[test]
fn demo_runs_every_language_on_its_own_server_with_no_lost_update() {
    let out = Command::new(target_binary("ferrolock"))
        .args(["demo", "--seconds", "2"])
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed ({}):\n{stdout}\n{stderr}", out.status);
    for lang in LANGUAGES {
        let row = stdout
            .lines()
            .rev()
            .find(|l| l.split_whitespace().next() == Some(lang))
            .unwrap_or_else(|| panic!("no {lang} row in:\n{stdout}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "2", "two {lang} processes: {row}");
        let sections: u64 = cols[2].parse().unwrap();
        assert!(sections > 0, "the {lang} workers ran no critical section: {row}");
    }
    assert!(stdout.contains("lost updates                  0 "), "{stdout}");
    assert!(stdout.contains("strictly increasing"), "{stdout}");
    assert!(stdout.contains("hand-off p50 / p99"), "{stdout}");
}

#[test]
fn a_worker_that_cannot_start_fails_the_demo_loudly() {
    // The real launchers, except that the node one cannot find its program.
    let dir = std::env::temp_dir().join(format!("ferrolock-demo-workers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let real = repo_root().join("tests").join("workers");
    for lang in LANGUAGES {
        let launcher = dir.join(format!("run-{lang}"));
        let script = if lang == "node" {
            "#!/bin/sh\necho 'ferrolock worker (node): ferrolock.node is missing; run: bash scripts/build.sh' >&2\nexit 127\n".to_string()
        } else {
            format!("#!/bin/sh\nexec '{}' \"$@\"\n", real.join(format!("run-{lang}")).display())
        };
        std::fs::write(&launcher, script).unwrap();
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = Command::new(target_binary("ferrolock"))
        .args(["demo", "--seconds", "1", "--workers"])
        .arg(&dir)
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the node worker did not start"), "{stderr}");
    assert!(stderr.contains("ferrolock.node is missing"), "{stderr}");
}
