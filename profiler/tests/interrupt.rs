//! Ctrl-C stops the app and still returns what was sampled. In its own test
//! binary: it installs the process-wide Ctrl-C handler and raises SIGINT.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn ctrl_c_stops_the_app_and_keeps_the_samples() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("faults/never_ends.py", &[], dir.path());
    opts.stop = None; // the default: the process-wide Ctrl-C handler
    opts.duration = Some(Duration::from_secs(30)); // a backstop only
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: raising a signal at our own process; the handler installed
        // by `profile` turns it into a stop request.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGINT);
        }
    });
    let p = run(&opts).unwrap();
    assert!(p.exit.interrupted, "{:?}", p.exit);
    assert!(!p.exit.timed_out);
    assert!(p.duration_s < 10.0);
    assert!(p.samples > 100, "{} samples", p.samples);
    assert!(function(&p, "poll_once").self_samples > 0);
    // Capture happened in the same run: what the hook saw before Ctrl-C is
    // kept, and nothing runs the app again.
    assert!(!p.warnings.iter().any(|w| w.contains("capture run")));
    assert!(
        p.captures.iter().any(|c| c.function == "poll_once"),
        "{:?}",
        p.warnings
    );
}

/// The same through a program using the profiler, as `port analyze` does:
/// SIGINT to the profiler stops the app, and the report is still written.
#[test]
fn ctrl_c_on_a_profiling_program_still_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("profile.json");
    let mut child = std::process::Command::new(example_binary())
        .args(["--python", venv_python().to_str().unwrap(), "--quiet"])
        .arg("--json")
        .arg(&report)
        .arg(fixture("faults/never_ends.py"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: a signal to the child we started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(p["exit"]["interrupted"], true);
    assert!(p["samples"].as_u64().unwrap() > 20);
}
