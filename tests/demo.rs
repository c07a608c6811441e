//! `ferrolock demo`, the main job: it runs end to end on its own server with every
//! language, and it fails loudly when a worker cannot start.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use ferrolock_harness::{finish, read_log, repo_root, target_binary, ScratchDir, Section, LANGUAGES};

/// One demo at a time: each runs 8 worker processes, and on a busy 2-core machine
/// several at once could starve a language of every critical section (which fails it).
fn one_demo_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static DEMO: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DEMO.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn demo_runs_every_language_on_its_own_server_with_no_lost_update() {
    let _one = one_demo_at_a_time();
    let logs = ScratchDir::new("demo-logs").unwrap();
    let out = Command::new(target_binary("ferrolock"))
        .args(["demo", "--seconds", "2", "--logs"])
        .arg(logs.path())
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed ({}):\n{stdout}\n{stderr}", out.status);
    let kept = kept_logs(logs.path());
    for lang in LANGUAGES {
        let row = table_row(first_act(&stdout), lang);
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "2", "two {lang} processes: {row}");
        let sections: usize = cols[2].parse().unwrap();
        assert!(sections > 0, "the {lang} workers ran no critical section: {row}");
        let logged: usize = kept.iter().filter(|(l, _)| l == lang).map(|(_, s)| s.len()).sum();
        assert_eq!(sections, logged, "the {lang} row against its kept logs: {row}");
    }
    assert!(stdout.contains("lost updates                  0 "), "{stdout}");
    assert!(stdout.contains("strictly increasing"), "{stdout}");
    assert!(stdout.contains("hand-off p50 / p99"), "{stdout}");
    let counter: usize = std::fs::read_to_string(logs.path().join("counter")).unwrap().trim().parse().unwrap();
    assert_eq!(counter, kept.iter().map(|(_, s)| s.len()).sum::<usize>());

    // The terms, one line each.
    let terms = stdout.lines().position(|l| l == "what the terms mean:").expect("the terms explained");
    for term in ["hand-off", "from other languages", "critical section", "lost updates", "fencing tokens"] {
        let explained = stdout.lines().skip(terms).take(8).filter(|l| l.starts_with(&format!("  {term:<20}  ")) && l.len() > 40);
        assert_eq!(explained.count(), 1, "no line explains {term:?}:\n{stdout}");
    }
    check_timeline(&stdout, &kept);
    check_histogram(&stdout, &kept);
    // The histogram ends the first act.
    let act2 = stdout.lines().position(|l| l.starts_with("act 2: 8 workers share semaphore ")).expect("a second act");
    let before = stdout.lines().nth(act2 - 2).unwrap();
    assert!(before.contains(" ms |") || before.contains(" s |"), "the histogram ends the first act: {before:?}");
    check_second_act(&stdout, &kept_logs_of(logs.path(), "permits-"));
}

/// The second act against its kept logs: the rows, the most inside at once (never more
/// than the 3 permits), every permit back, and the "inside at once" line recomputed.
fn check_second_act(stdout: &str, kept: &[(String, Vec<Section>)]) {
    let act = &stdout[stdout.find("act 2: ").unwrap()..];
    for lang in LANGUAGES {
        let row = table_row(act, lang);
        let cols: Vec<&str> = row.split_whitespace().collect();
        let logged: usize = kept.iter().filter(|(l, _)| l == lang).map(|(_, s)| s.len()).sum();
        assert_eq!((cols[1], cols[2].parse::<usize>().unwrap()), ("2", logged), "act 2, {lang}: {row}");
        assert!(logged > 0, "the {lang} workers never got a permit: {row}");
    }
    let all = || kept.iter().flat_map(|(_, sections)| sections.iter());
    let most_in = |a: u64, b: u64| {
        // Sections inside [a, b), clipped: the most at any instant (a release before an acquisition).
        let mut events: Vec<(u64, i64)> = all()
            .filter(|s| s.acquired_ns < b && s.released_ns > a)
            .flat_map(|s| [(s.acquired_ns.max(a), 1), (s.released_ns.min(b), -1)])
            .collect();
        events.sort();
        events.iter().scan(0i64, |inside, (_, d)| {
            *inside += d;
            Some(*inside)
        }).max().unwrap_or(0)
    };
    let (start, end) = (all().map(|s| s.acquired_ns).min().unwrap(), all().map(|s| s.released_ns).max().unwrap());
    let most = most_in(start, end);
    assert!((1..=3).contains(&most), "{most} inside at once");
    assert!(act.contains(&format!("most inside at once           {most} of 3 permits")), "{act}");
    assert!(act.contains("permits free at the end       3 of 3"), "{act}");
    let line = act.lines().find(|l| l.starts_with("inside    |")).expect("the inside-at-once line");
    let cells: Vec<char> = line.split('|').nth(1).unwrap().chars().collect();
    assert_eq!(cells.len(), 60, "{line:?}");
    let span = u128::from(end - start);
    let edge = |i: usize| (u128::from(start) + span * i as u128 / 60) as u64;
    for (i, cell) in cells.iter().enumerate() {
        let expected = char::from_digit(most_in(edge(i), edge(i + 1)) as u32, 10).unwrap();
        assert_eq!(*cell, expected, "slice {i}: {line:?}");
    }
    let axis = act.lines().last().unwrap();
    assert!(axis.trim_start().starts_with("0 s") && axis.ends_with(&format!("{:.1} s", span as f64 / 1e9)), "{axis:?}");
}

/// The kept section logs of the first act: (language, sections) per worker, from `<n>-<language>.log`.
fn kept_logs(dir: &Path) -> Vec<(String, Vec<Section>)> {
    kept_logs_of(dir, "")
}

/// The kept section logs `<prefix><n>-<language>.log`.
fn kept_logs_of(dir: &Path, prefix: &str) -> Vec<(String, Vec<Section>)> {
    let mut logs: Vec<(String, Vec<Section>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .filter_map(|p| {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
            let rest = stem.strip_prefix(prefix)?;
            // `<n>-<language>`: the first act's logs start with their number.
            if !rest.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let lang = rest.split_once('-').unwrap().1.to_string();
            Some((lang, read_log(&p)))
        })
        .collect();
    logs.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(logs.len(), 2 * LANGUAGES.len(), "two logs per language: {logs:?}");
    logs
}

/// The output up to the second act.
fn first_act(stdout: &str) -> &str {
    &stdout[..stdout.find("\nact 2: ").unwrap_or(stdout.len())]
}

/// The last line that starts with `first_word` (the final table, not the live one).
fn table_row<'a>(stdout: &'a str, first_word: &str) -> &'a str {
    stdout
        .lines()
        .rev()
        .find(|l| l.split_whitespace().next() == Some(first_word) && !l.contains('|'))
        .unwrap_or_else(|| panic!("no {first_word} row in:\n{stdout}"))
}

/// The timeline: one row per language of 60 characters, each the language's share of
/// the time anyone held the lock in that 1/60 of the run (from the first acquisition
/// to the last release), recomputed here from the logs.
fn check_timeline(stdout: &str, kept: &[(String, Vec<Section>)]) {
    const WIDTH: u128 = 60;
    let all = || kept.iter().flat_map(|(lang, sections)| sections.iter().map(move |s| (lang.as_str(), s)));
    let start = all().map(|(_, s)| s.acquired_ns).min().unwrap();
    let end = all().map(|(_, s)| s.released_ns).max().unwrap();
    let span = u128::from(end - start);
    let slice = |i: u128| u128::from(start) + span * i / WIDTH;
    let held_in = |lang: &str, i: u128| -> u128 {
        all()
            .filter(|(l, _)| *l == lang)
            .map(|(_, s)| u128::from(s.released_ns).min(slice(i + 1)).saturating_sub(u128::from(s.acquired_ns).max(slice(i))))
            .sum()
    };
    let heading = stdout.lines().position(|l| l.starts_with("who held the lock (one character = ")).expect("a timeline");
    let rows: Vec<&str> = stdout.lines().skip(heading + 1).take(LANGUAGES.len()).collect();
    let total_held: u128 = all().map(|(_, s)| u128::from(s.released_ns - s.acquired_ns)).sum();
    for (lang, row) in LANGUAGES.iter().zip(&rows) {
        let parts: Vec<&str> = row.split('|').collect();
        assert_eq!((parts.len(), parts[0].trim()), (3, *lang), "a {lang} row: {row:?}");
        let cells: Vec<char> = parts[1].chars().collect();
        assert_eq!(cells.len(), WIDTH as usize, "{row:?}");
        for (i, &cell) in cells.iter().enumerate() {
            let i = i as u128;
            let held = held_in(lang, i);
            let anyone: u128 = LANGUAGES.iter().map(|l| held_in(l, i)).sum();
            let expected = match held {
                0 => ' ',
                h if h * 2 >= anyone => '█',
                h if h * 4 >= anyone => '▓',
                h if h * 10 >= anyone => '▒',
                _ => '░',
            };
            assert_eq!(cell, expected, "{lang}, slice {i}: held {held} of {anyone} ns: {row:?}");
        }
        let mine: u128 = all().filter(|(l, _)| l == lang).map(|(_, s)| u128::from(s.released_ns - s.acquired_ns)).sum();
        let percent = (mine * 100 + total_held / 2) / total_held;
        assert_eq!(parts[2].trim(), format!("{percent}% of the hold time"), "{row:?}");
    }
    let axis = stdout.lines().nth(heading + 1 + LANGUAGES.len()).unwrap();
    assert!(axis.trim_start().starts_with("0 s") && axis.ends_with(&format!("{:.1} s", span as f64 / 1e9)), "{axis:?}");
}

/// The histogram: one line per wait bucket from the first to the last non-empty one,
/// with the count per language, recomputed here from the logs.
fn check_histogram(stdout: &str, kept: &[(String, Vec<Section>)]) {
    let buckets: [(u64, &str); 10] = [
        (100_000, "< 0.1 ms"),
        (300_000, "0.1-0.3 ms"),
        (1_000_000, "0.3-1 ms"),
        (3_000_000, "1-3 ms"),
        (10_000_000, "3-10 ms"),
        (30_000_000, "10-30 ms"),
        (100_000_000, "30-100 ms"),
        (300_000_000, "0.1-0.3 s"),
        (1_000_000_000, "0.3-1 s"),
        (u64::MAX, ">= 1 s"),
    ];
    let mut counts = vec![[0usize; 4]; buckets.len()];
    for (lang, sections) in kept {
        let column = LANGUAGES.iter().position(|l| l == lang).unwrap();
        for s in sections {
            let wait = s.acquired_ns - s.wait_from_ns;
            counts[buckets.iter().position(|&(below, _)| wait < below).unwrap()][column] += 1;
        }
    }
    let first = counts.iter().position(|c| c.iter().sum::<usize>() > 0).unwrap();
    let last = counts.iter().rposition(|c| c.iter().sum::<usize>() > 0).unwrap();
    let heading = stdout.lines().position(|l| l.starts_with("wait before each acquisition")).expect("a histogram");
    let lines: Vec<&str> = stdout.lines().skip(heading + 1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), last - first + 1, "one line per bucket from the first to the last with a wait:\n{stdout}");
    let most = counts.iter().map(|c| c.iter().sum::<usize>()).max().unwrap();
    for (line, bucket) in lines.iter().zip(first..=last) {
        let parts: Vec<&str> = line.split('|').collect();
        assert_eq!(parts[0].trim(), buckets[bucket].1, "{line:?}");
        let n: usize = counts[bucket].iter().sum();
        let split: Vec<String> = LANGUAGES.iter().zip(counts[bucket]).map(|(l, c)| format!("{l} {c}")).collect();
        assert_eq!(parts[2].trim(), format!("{n}  ({})", split.join(", ")), "{line:?}");
        let bar = parts[1].trim_end().chars().count();
        assert_eq!(bar, (n * 40).div_ceil(most), "bar length of {n} (largest {most}): {line:?}");
    }
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

/// The workspace's target directory (where `cargo test` built everything).
fn target_dir() -> std::path::PathBuf {
    ferrolock_harness::own_target_dir()
}

/// `ferrolock` copied out of the build tree, as `cargo install` would put it, run from a
/// directory outside the repository with CARGO_TARGET_DIR only when the build did not
/// use the repository's own `target`.
fn installed_ferrolock(scratch: &ScratchDir) -> Command {
    let bin = scratch.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(target_binary("ferrolock"), bin.join("ferrolock")).unwrap();
    let mut cmd = Command::new(bin.join("ferrolock"));
    cmd.current_dir(scratch.path()).env_remove("REDIS_URL").env_remove("CARGO_TARGET_DIR");
    if target_dir().canonicalize().unwrap() != repo_root().join("target").canonicalize().unwrap() {
        cmd.env("CARGO_TARGET_DIR", target_dir());
    }
    cmd
}

#[test]
fn an_installed_binary_finds_the_workers_of_the_repository_it_was_built_from() {
    let _one = one_demo_at_a_time();
    let scratch = ScratchDir::new("demo-installed").unwrap();
    let out = finish(installed_ferrolock(&scratch).args(["demo", "--seconds", "2"]));
    assert_eq!(out.code, 0, "{out:?}");
    for lang in LANGUAGES {
        let row = table_row(first_act(&out.stdout), lang);
        assert!(row.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap() > 0, "{row}");
    }
}

#[test]
fn an_installed_binary_says_exactly_what_is_not_built_and_how_to_build_it() {
    let scratch = ScratchDir::new("demo-unbuilt").unwrap();
    // A clone where nothing was built yet: the real launchers and scripts/build.sh.
    let clone = scratch.join("clone");
    let workers = clone.join("tests").join("workers");
    std::fs::create_dir_all(&workers).unwrap();
    std::fs::create_dir_all(clone.join("scripts")).unwrap();
    std::fs::write(clone.join("scripts").join("build.sh"), "exit 1\n").unwrap();
    for lang in LANGUAGES {
        let launcher = format!("run-{lang}");
        std::fs::copy(repo_root().join("tests").join("workers").join(&launcher), workers.join(&launcher)).unwrap();
    }
    let profile = ferrolock_harness::own_profile();
    let mut cmd = installed_ferrolock(&scratch);
    let out = finish(cmd.env_remove("CARGO_TARGET_DIR").args(["demo", "--seconds", "1", "--workers"]).arg(&workers));
    assert_eq!(out.code, 1, "{out:?}");
    let clone = clone.canonicalize().unwrap();
    for needed in [
        format!("{}/target/{profile}/ferrolock-worker)", clone.display()),
        format!("{}/target/{profile}/ferrolock-worker-c)", clone.display()),
        format!("{}/bindings-python/.venv/bin/python)", clone.display()),
        format!("{}/bindings-node/ferrolock.node)", clone.display()),
        format!("cd {} && FERROLOCK_PROFILE={profile} bash scripts/build.sh", clone.display()),
    ] {
        assert!(out.stderr.contains(&needed), "the message lacks {needed:?}: {out:?}");
    }
    // Said before anything started: no worker complained.
    assert!(!out.stderr.contains("ferrolock worker ("), "{out:?}");

    // No workers at all where it looks.
    let out = finish(installed_ferrolock(&scratch).args(["demo", "--workers"]).arg(scratch.join("nowhere")));
    assert_eq!(out.code, 1, "{out:?}");
    for needed in ["no workers in", "bash scripts/demo.sh", &format!("FERROLOCK_PROFILE={profile} bash scripts/build.sh")] {
        assert!(out.stderr.contains(needed), "the message lacks {needed:?}: {out:?}");
    }
}

/// scripts/demo.sh with a stand-in for scripts/build.sh (the real one is run by the
/// test suite's own build): `build` is the stand-in's shell script.
fn demo_sh(scratch: &ScratchDir, build: &str) -> Command {
    let fake = scratch.join("build.sh");
    std::fs::write(&fake, build).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("scripts").join("demo.sh"))
        .args(["--seconds", "2"])
        .current_dir(scratch.path())
        .env("FERROLOCK_PROFILE", ferrolock_harness::own_profile())
        .env("FERROLOCK_DEMO_BUILD", format!("bash {}", fake.display()))
        .env("FERROLOCK_DEMO_LOG", scratch.join("build.log"))
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("REDIS_URL");
    cmd
}

#[test]
fn demo_sh_keeps_the_build_output_in_a_log_and_shows_one_line_per_step() {
    let _one = one_demo_at_a_time();
    let scratch = ScratchDir::new("demo-sh").unwrap();
    let build = "echo '== build (debug): ferrolock CLI, Rust worker, libferrolock'\n\
                 echo '   Compiling ferrolock v0.1.0 (noise)'\n\
                 echo '== build: C worker'\n\
                 echo 'warning: more noise' >&2\n";
    let out = finish(&mut demo_sh(&scratch, build));
    assert_eq!(out.code, 0, "{out:?}");
    let log = scratch.join("build.log");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], format!("Building the ferrolock CLI, the four workers and their bindings ({}; full output in {})", ferrolock_harness::own_profile(), log.display()));
    assert_eq!(lines[1..3], ["  building ferrolock CLI, Rust worker, libferrolock", "  building C worker"], "{out:?}");
    assert!(lines[3].starts_with("Built in ") && lines[4].is_empty(), "{out:?}");
    assert!(lines[5].starts_with("ferrolock demo: 8 workers"), "{out:?}");
    assert!(!out.stdout.contains("noise") && !out.stderr.contains("noise"), "{out:?}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("Compiling ferrolock v0.1.0 (noise)") && logged.contains("warning: more noise"), "{logged}");
    assert!(out.stdout.contains("who held the lock") && out.stdout.contains("wait before each acquisition"), "{out:?}");
}

#[test]
fn demo_sh_shows_the_end_of_the_log_when_the_build_fails() {
    let scratch = ScratchDir::new("demo-sh-fail").unwrap();
    let out = finish(&mut demo_sh(&scratch, "echo '== build: C worker'\necho 'worker.c:1: error: boom' >&2\nexit 3\n"));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("  building C worker") && !out.stdout.contains("ferrolock demo:"), "{out:?}");
    assert!(out.stderr.contains("The build failed; the end of") && out.stderr.contains("worker.c:1: error: boom"), "{out:?}");
}
