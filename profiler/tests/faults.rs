//! Bad input and faults: each gives one clear line, or a profile of what was
//! sampled plus how the app ended. Never a panic.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use port_profiler::{ArgKind, ProfileError};

#[test]
fn a_missing_app_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("mixed_app.py", &[], dir.path());
    opts.app = PathBuf::from("/no/such/app.py");
    let err = run(&opts).unwrap_err();
    assert!(matches!(err, ProfileError::AppNotFound(_)));
    assert_eq!(err.to_string(), "app file /no/such/app.py not found");
}

#[test]
fn a_directory_is_not_an_app() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("mixed_app.py", &[], dir.path());
    opts.app = fixture("faults");
    let err = run(&opts).unwrap_err();
    assert!(matches!(err, ProfileError::AppIsDirectory(_)), "{err}");
}

#[test]
fn a_missing_python_says_how_to_choose_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("mixed_app.py", &[], dir.path());
    opts.python = PathBuf::from("/no/such/python3");
    let err = run(&opts).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("cannot start Python /no/such/python3: "),
        "{text}"
    );
    assert!(
        text.ends_with("pass --python PATH or activate a virtual environment"),
        "{text}"
    );
    assert!(!text.contains('\n'));
}

#[test]
fn a_zero_rate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("mixed_app.py", &[], dir.path());
    opts.rate_hz = 0;
    assert!(matches!(run(&opts).unwrap_err(), ProfileError::BadRate(0)));
}

#[test]
fn an_app_that_fails_before_any_sample_is_an_error_with_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("mixed_app.py", &[], dir.path());
    // Not a Python at all: exits 1 at once, nothing to attach to.
    opts.python = PathBuf::from("/bin/false");
    let err = run(&opts).unwrap_err();
    match &err {
        ProfileError::AppFailedEarly { exit, .. } => assert_eq!(exit.code, Some(1)),
        other => panic!("unexpected {other:?}"),
    }
    assert!(err
        .to_string()
        .ends_with("failed before any sample was taken: the app exited with code 1"));
}

#[test]
fn a_non_zero_exit_keeps_what_was_sampled_and_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = run(&options("faults/exits_nonzero.py", &[], dir.path())).unwrap();
    assert_eq!(p.exit.code, Some(3));
    assert!(!p.exit.success());
    assert_eq!(p.exit.describe(), "the app exited with code 3");
    assert!(p.samples >= 40, "{} samples", p.samples);
    // busy's generator expression is its own code object, so busy's share
    // is mostly total time.
    assert!(function(&p, "busy").total_pct >= 70.0);
    // Capture still ran (a second run, which fails the same way).
    assert!(p.captures.iter().any(|c| c.function == "busy"));
}

#[test]
fn an_app_killed_by_a_signal_reports_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("faults/killed_by_signal.py", &[], dir.path());
    opts.capture = false;
    let p = run(&opts).unwrap();
    assert_eq!(p.exit.signal, Some(9));
    assert_eq!(p.exit.code, None);
    assert_eq!(
        p.exit.describe(),
        "the app was killed by signal 9 (SIGKILL)"
    );
    assert!(function(&p, "busy").self_samples > 0);
}

#[test]
fn an_app_that_never_ends_is_stopped_at_the_duration() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("faults/never_ends.py", &[], dir.path());
    opts.duration = Some(Duration::from_millis(1500));
    let started = Instant::now();
    let p = run(&opts).unwrap();
    assert!(p.exit.timed_out);
    assert!(!p.exit.interrupted);
    assert_eq!(p.exit.signal, Some(15), "stopped with SIGTERM");
    assert!(
        (1.4..4.0).contains(&p.duration_s),
        "sampled for {} s",
        p.duration_s
    );
    assert!(function(&p, "poll_once").self_pct >= 50.0);
    // The capture run stops by itself once poll_once is captured.
    let c = p
        .captures
        .iter()
        .find(|c| c.function == "poll_once")
        .unwrap();
    assert_eq!(
        c.args[0].kind,
        ArgKind::Scalar {
            type_name: "int".into()
        }
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn an_app_that_changes_directory_is_still_attributed_and_captured() {
    let dir = tempfile::tempdir().unwrap();
    let p = run(&options("faults/changes_directory.py", &[], dir.path())).unwrap();
    assert!(p.exit.success());
    let crunch = function(&p, "crunch");
    assert!(crunch.self_pct >= 50.0);
    assert_eq!(
        crunch.file,
        fixture("faults/changes_directory.py")
            .canonicalize()
            .unwrap()
    );
    assert!(p
        .lines
        .iter()
        .any(|l| l.function == "crunch" && l.source.starts_with("acc = ")));
    let c = p.captures.iter().find(|c| c.function == "crunch").unwrap();
    assert!(c.inputs_npz.as_ref().unwrap().starts_with(dir.path()));
}

#[test]
fn child_processes_are_profiled_with_subprocesses_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("faults/spawns_children.py", &[], dir.path());
    opts.capture = false;
    opts.subprocesses = true;
    let p = run(&opts).unwrap();
    assert!(p.exit.success(), "{:?}", p.exit);
    assert!(
        p.processes_sampled >= 3,
        "{} processes",
        p.processes_sampled
    );
    let work = function(&p, "work");
    assert!(
        work.self_pct >= 30.0,
        "pool workers' time: {}",
        work.self_pct
    );
    assert!(
        function(&p, "child_work").self_samples > 0,
        "the exec'd child was sampled"
    );

    opts.subprocesses = false;
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    // The parent mostly waits (idle, not counted) while its children work.
    assert!(p.processes_sampled <= 1);
    assert!(p
        .functions
        .iter()
        .all(|f| f.key != "work" && f.key != "child_work"));
}

#[test]
fn every_thread_is_sampled_and_idle_time_counts_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("threads.py", &[], dir.path());
    opts.capture = false;
    let busy = run(&opts).unwrap();
    assert!(
        function(&busy, "checksum_worker").self_samples > 0,
        "the worker thread"
    );
    assert!(
        function(&busy, "compute_main").self_samples > 0,
        "the main thread"
    );
    let idle_share = |p: &port_profiler::Profile| {
        p.functions
            .iter()
            .find(|f| f.key == "idle_wait")
            .map_or(0.0, |f| f.self_pct)
    };
    assert!(
        idle_share(&busy) < 10.0,
        "sleep excluded: {}",
        idle_share(&busy)
    );

    opts.idle = true;
    let all = run(&opts).unwrap();
    assert!(
        idle_share(&all) >= 12.0,
        "sleep included: {}",
        idle_share(&all)
    );
    // 1.2 s asleep at 200 Hz is about 240 samples.
    assert!(function(&all, "idle_wait").self_samples >= 100);
}

/// Sampling as an unprivileged user an app that made itself non-dumpable: the
/// kernel refuses, and the error says why and what to do. (As root, the test
/// drops to `nobody` with setpriv; root itself may read any process.)
#[test]
fn no_permission_to_sample_is_explained_in_one_line() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return run_unprivileged(&[]);
    }
    run_unprivileged(&[
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ]);
}

fn run_unprivileged(prefix: &[&str]) {
    let example = example_binary();
    let mut cmd = Command::new(prefix.first().copied().unwrap_or(example.to_str().unwrap()));
    if !prefix.is_empty() {
        cmd.args(&prefix[1..]).arg(&example);
    }
    let out = cmd
        .args(["--python", "/usr/bin/python3", "--no-capture"])
        .arg(fixture("faults/undumpable.py"))
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].starts_with("error: no permission to sample the app (pid "),
        "{stderr}"
    );
    assert!(lines[0].contains("root"), "says what to do: {stderr}");
}
