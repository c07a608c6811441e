//! Starting CMD, and turning the way it ended into an exit code, the way shells do.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use crate::exit;

/// Checks that CMD can be started before anything else happens: a typo in CMD
/// should fail at once, not after waiting minutes for the lock. Spawning checks
/// again (the file may change in between); this only catches the common mistakes.
pub fn check(program: &OsStr) -> Result<(), i32> {
    let shown = program.to_string_lossy();
    if program.as_bytes().contains(&b'/') {
        return check_file(Path::new(program)).map_err(|problem| report(&shown, problem));
    }
    // Without PATH the OS falls back to a built-in search path we do not second-guess.
    let Some(path) = std::env::var_os("PATH") else { return Ok(()) };
    let mut seen_unusable = None;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        match check_file(&dir.join(program)) {
            Ok(()) => return Ok(()),
            Err(Problem::Missing) => {}
            Err(problem) => seen_unusable = seen_unusable.or(Some(problem)),
        }
    }
    Err(match seen_unusable {
        // Like execvp: a non-executable file on PATH is "permission denied", not "not found".
        Some(problem) => report(&shown, problem),
        None => {
            exit::say(&format!("{shown}: command not found"));
            exit::NOT_FOUND
        }
    })
}

enum Problem {
    Missing,
    Directory,
    NotExecutable,
}

fn check_file(path: &Path) -> Result<(), Problem> {
    let meta = std::fs::metadata(path).map_err(|_| Problem::Missing)?;
    if meta.is_dir() {
        return Err(Problem::Directory);
    }
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return Err(Problem::Missing) };
    // access(2) rather than the mode bits: it knows about root, ACLs and noexec mounts.
    // SAFETY: c_path is a valid NUL-terminated string.
    if unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } != 0 {
        return Err(Problem::NotExecutable);
    }
    Ok(())
}

fn report(shown: &str, problem: Problem) -> i32 {
    match problem {
        Problem::Missing => {
            exit::say(&format!("{shown}: no such file"));
            exit::NOT_FOUND
        }
        Problem::Directory => {
            exit::say(&format!("{shown}: is a directory"));
            exit::CANNOT_EXECUTE
        }
        Problem::NotExecutable => {
            exit::say(&format!("{shown}: permission denied (not executable)"));
            exit::CANNOT_EXECUTE
        }
    }
}

/// Starts CMD with our stdin, stdout and stderr, and `env` added to its environment
/// (FERROLOCK_LOCK, FERROLOCK_TOKEN, FERROLOCK_TERM). If ferrolock dies while CMD
/// runs, CMD gets SIGTERM, and SIGKILL `kill_after` later (orphan.rs). Called from
/// the main thread (see there).
pub fn spawn(
    command: &[OsString],
    env: &[(&str, OsString)],
    kill_after: Option<std::time::Duration>,
) -> Result<tokio::process::Child, i32> {
    let (program, args) = command.split_first().expect("clap requires CMD");
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let protection = std::sync::Arc::new(crate::orphan::Protection::here(kill_after));
    let parent = std::process::id() as libc::pid_t;
    let in_child = protection.clone();
    // SAFETY: what runs between fork and exec makes async-signal-safe calls only.
    unsafe {
        cmd.pre_exec(move || in_child.in_child(parent));
    }
    let child = cmd.spawn().map_err(|e| {
        exit::say(&format!("cannot run {}: {e}", program.to_string_lossy()));
        if e.kind() == std::io::ErrorKind::NotFound {
            exit::NOT_FOUND
        } else {
            exit::CANNOT_EXECUTE
        }
    })?;
    if let Some(pid) = child.id() {
        protection.guard(pid);
    }
    Ok(child)
}

/// CMD's exit code, or 128 + the signal that ended it.
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => exit::SIGNAL_BASE + signal,
        (None, None) => exit::INTERNAL,
    }
}
