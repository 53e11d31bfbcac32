//! A stopped `port migrate` leaves nothing behind: SIGTERM, SIGINT or
//! SIGHUP sent to port alone (as a CI time-out or a supervisor does) while
//! the original runs on its inputs ends the Python child, removes the
//! temporary folder with the inputs, and exits 128 + the signal.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Processes (not zombies) whose command line mentions `needle`.
fn live_with(needle: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rfind(')').map(|k| s[k + 2..k + 3].to_string()))
            .unwrap_or_default();
        if cmd.contains(needle) && state != "Z" {
            out.push((pid, cmd));
        }
    }
    out
}

fn stopped_mid_verification(sig: i32, code: i32) {
    let tmp = tempfile::tempdir().unwrap();
    let own_tmp = tmp.path().join("tmp");
    std::fs::create_dir(&own_tmp).unwrap();
    std::fs::copy(fixture("migrate/kernels.py"), tmp.path().join("kernels.py")).unwrap();
    let python = repo().join(".venv/bin/python");
    // 8 million elements: the original's Python loop runs for seconds.
    let mut port = Command::new(env!("CARGO_BIN_EXE_port"))
        .current_dir(tmp.path())
        .env("TMPDIR", &own_tmp)
        .env("NO_COLOR", "1")
        .args([
            "migrate",
            "--function",
            "stencil_2d",
            "kernels.py",
            "--signature",
            "float64[:, :], float64[:, :]",
            "--size",
            "8000000",
            "--json",
            "--python",
            python.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the original to run: a Python child whose helper lies in
    // port's temporary folder.
    let marker = own_tmp.to_str().unwrap().to_string();
    let start = Instant::now();
    while live_with(&marker).iter().all(|(p, _)| *p == port.id()) {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the original never started"
        );
        assert!(port.try_wait().unwrap().is_none(), "port ended first");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(port.id() as libc::pid_t, sig);
    }
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = port.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "port still runs 3 s after the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read;
    port.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Within the 3 s: no child left, nothing left in $TMPDIR.
    let left = loop {
        let left = live_with(&marker);
        if left.is_empty() || sent.elapsed() > Duration::from_secs(3) {
            break left;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(left.is_empty(), "children outlived port: {left:?}");
    let files: Vec<_> = std::fs::read_dir(&own_tmp).unwrap().flatten().collect();
    assert!(files.is_empty(), "left in $TMPDIR: {files:?}");
    // The user's file is as it was.
    assert_eq!(
        std::fs::read(tmp.path().join("kernels.py")).unwrap(),
        std::fs::read(fixture("migrate/kernels.py")).unwrap()
    );
}

#[test]
fn sigterm_ends_the_original_and_removes_the_inputs() {
    stopped_mid_verification(libc::SIGTERM, 143);
}

#[test]
fn sigint_ends_the_original_and_removes_the_inputs() {
    stopped_mid_verification(libc::SIGINT, 130);
}
