//! The two binaries: `port`, which a user runs and whose start a profiled
//! run pays for, loads no libLLVM; `port-backend` beside it runs compile,
//! migrate and verify; without it those commands say so in one line.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fixture, stderr, stdout};

fn needed_libraries(exe: &Path) -> String {
    let out = Command::new("ldd").arg(exe).output().expect("ldd runs");
    assert!(
        out.status.success(),
        "ldd {}: {}",
        exe.display(),
        stderr(&out)
    );
    stdout(&out)
}

#[test]
fn port_itself_loads_no_llvm_and_its_backend_does() {
    let port = Path::new(env!("CARGO_BIN_EXE_port"));
    let backend = Path::new(env!("CARGO_BIN_EXE_port-backend"));
    let light = needed_libraries(port);
    assert!(
        !light.contains("libLLVM"),
        "port links libLLVM, whose loading costs every profiled run its start-up:\n{light}"
    );
    assert!(
        needed_libraries(backend).contains("libLLVM"),
        "port-backend is the binary that compiles kernels"
    );
}

#[test]
fn migrate_through_port_is_the_backends_migrate() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |exe: &str| {
        Command::new(exe)
            .current_dir(tmp.path())
            .env("NO_COLOR", "1")
            .args(["migrate", "--function", "nowhere", "--json"])
            .arg(fixture("migrate/general.py"))
            .output()
            .expect("runs")
    };
    let via_port = run(env!("CARGO_BIN_EXE_port"));
    let direct = run(env!("CARGO_BIN_EXE_port-backend"));
    assert_eq!(via_port.status.code(), direct.status.code());
    assert_eq!(stdout(&via_port), stdout(&direct));
    let doc: serde_json::Value =
        serde_json::from_str(&stdout(&via_port)).expect("one JSON document");
    assert_eq!(doc["status"], "failed");
    assert!(doc["reason"].as_str().unwrap().contains("nowhere"), "{doc}");
}

#[test]
fn without_its_backend_port_says_so_in_one_line_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let lone = tmp.path().join("port");
    std::fs::copy(env!("CARGO_BIN_EXE_port"), &lone).unwrap();
    let out = Command::new(&lone)
        .current_dir(tmp.path())
        .args(["migrate", "--function", "saxpy", "--json"])
        .arg(fixture("migrate/general.py"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("port-backend"), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    assert_eq!(doc["code"], "installation");
    // The commands that need no backend still run.
    let analyze = Command::new(&lone)
        .current_dir(tmp.path())
        .args(["analyze", "--static", "--json"])
        .arg(fixture("migrate/general.py"))
        .output()
        .expect("runs");
    assert!(analyze.status.success(), "{}", stderr(&analyze));
}
