//! `port report` as a user runs it: in a folder with `.port/` state and the
//! program's source, every format, the CI gate's exit codes, and one clear
//! line for every kind of bad input.

mod common;

use std::path::Path;

use common::*;

/// A working folder holding a fixture's program and its `.port/` state.
fn workdir(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let program = match name {
        "mixed_app" => fixture("apps/mixed_app.py"),
        "seeds" => fixture("classify/seeds.py"),
        "multimodule" => fixture("multimodule"),
        other => panic!("no fixture {other}"),
    };
    if program.is_dir() {
        copy_dir(&program, tmp.path());
    } else {
        std::fs::copy(&program, tmp.path().join(program.file_name().unwrap())).unwrap();
    }
    copy_dir(
        &fixture("report").join(name).join(".port"),
        &tmp.path().join(".port"),
    );
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Asserts exit code 2 and exactly one line on stderr containing `what`.
fn bad_input(o: &std::process::Output, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("port: "), "{err}");
    assert!(err.contains(what), "expected `{what}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn every_format_goes_to_stdout() {
    let w = workdir("mixed_app");
    for (format, marker) in [
        ("table", "GPU-eligible (cuda)"),
        ("json", "\"schema\": \"port.report/1\""),
        ("md", "## port: GPU coverage of `mixed_app.py`"),
        ("html", "<!DOCTYPE html>"),
        ("sarif", "\"version\": \"2.1.0\""),
        ("dot", "digraph port {"),
    ] {
        let o = port_in(w.path(), &["report", "--format", format]);
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        assert!(stdout(&o).contains(marker), "{format}: {}", stdout(&o));
    }
    // The table is the default.
    let o = port_in(w.path(), &["report"]);
    assert!(stdout(&o).contains("GPU-eligible (cuda)"));
}

#[test]
fn output_file_takes_the_report() {
    let w = workdir("multimodule");
    let o = port_in(
        w.path(),
        &["report", "--format", "html", "-o", "out/report.html"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let html = std::fs::read_to_string(w.path().join("out/report.html")).unwrap();
    // The source was read from the working folder.
    assert!(html.contains("def checksum"), "no annotated source");
}

#[test]
fn fail_under_101_fails_and_0_passes() {
    let w = workdir("mixed_app");
    let o = port_in(
        w.path(),
        &["report", "--format", "md", "--fail-under", "101"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "port: CI gate failed: GPU-eligible 58.4% of sampled time is under --fail-under 101%\n"
    );
    // The report is still written, and says why the gate failed.
    assert!(stdout(&o).contains("**CI gate: failed**"));

    let o = port_in(w.path(), &["report", "--format", "md", "--fail-under", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("**CI gate: passed**"));
}

#[test]
fn doctored_baseline_with_higher_coverage_fails_on_regression() {
    let w = workdir("seeds");
    let o = port_in(
        w.path(),
        &["report", "--format", "json", "--save-baseline", "base.json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // Unchanged: passes.
    let o = port_in(
        w.path(),
        &["report", "--baseline", "base.json", "--fail-on-regression"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let path = w.path().join("base.json");
    let mut b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(b["schema"], "port.baseline/1");
    b["coverage"]["gpu_eligible_pct"] = 95.0.into();
    std::fs::write(&path, serde_json::to_string(&b).unwrap()).unwrap();
    let o = port_in(
        w.path(),
        &[
            "report",
            "--format",
            "md",
            "--baseline",
            "base.json",
            "--fail-on-regression",
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o)
        .contains("CI gate failed: GPU-eligible dropped from 95.0% to 86.4% of functions"));
    assert!(stdout(&o).contains("| GPU-eligible (cuda) | 86.4% | 95.0% | -8.6 |"));
}

#[test]
fn migration_that_no_longer_verifies_fails_on_regression() {
    let w = workdir("mixed_app");
    assert!(
        port_in(w.path(), &["report", "--save-baseline", "base.json"])
            .status
            .success()
    );
    let m = w.path().join(".port/migrations/shade.json");
    let text = std::fs::read_to_string(&m)
        .unwrap()
        .replace("\"status\": \"verified\"", "\"status\": \"mismatch\"");
    std::fs::write(&m, text).unwrap();
    let o = port_in(
        w.path(),
        &["report", "--baseline", "base.json", "--fail-on-regression"],
    );
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains(
        "the migration of `mixed_app.shade` verified in the baseline and is now mismatch"
    ));
}

#[test]
fn no_state_says_run_port_analyze_first() {
    let tmp = tempfile::tempdir().unwrap();
    let o = port_in(tmp.path(), &["report"]);
    bad_input(&o, "run `port analyze` first");
}

#[test]
fn corrupt_analysis_is_one_line() {
    let w = workdir("seeds");
    std::fs::write(
        w.path().join(".port/analysis.json"),
        "{\"schema\": \"port.analysis/1\",",
    )
    .unwrap();
    bad_input(&port_in(w.path(), &["report"]), "analysis.json is corrupt");
}

#[test]
fn future_schema_is_one_line() {
    let w = workdir("seeds");
    std::fs::write(
        w.path().join(".port/analysis.json"),
        "{\"schema\": \"port.analysis/7\", \"everything\": \"changed\"}",
    )
    .unwrap();
    bad_input(
        &port_in(w.path(), &["report"]),
        "has schema `port.analysis/7`, this port reads `port.analysis/1`",
    );
}

#[test]
fn baseline_from_another_app_is_one_line() {
    let other = workdir("multimodule");
    assert!(
        port_in(other.path(), &["report", "--save-baseline", "mm.json"])
            .status
            .success()
    );
    let w = workdir("seeds");
    std::fs::copy(other.path().join("mm.json"), w.path().join("mm.json")).unwrap();
    bad_input(
        &port_in(w.path(), &["report", "--baseline", "mm.json"]),
        "baseline mm.json is from another app",
    );
}

#[test]
fn unwritable_output_is_one_line() {
    let w = workdir("seeds");
    // A file where a folder should be: unwritable even for root.
    let o = port_in(
        w.path(),
        &["report", "--format", "md", "-o", "seeds.py/report.md"],
    );
    bad_input(
        &o,
        "cannot write seeds.py/report.md: seeds.py is not a folder",
    );
    let o = port_in(w.path(), &["report", "--save-baseline", ".port"]);
    bad_input(&o, "cannot write .port: it is a folder");
}

#[test]
fn fail_on_regression_needs_a_baseline() {
    let w = workdir("seeds");
    let o = port_in(w.path(), &["report", "--fail-on-regression"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--baseline"));
    let o = port_in(w.path(), &["report", "--fail-under", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a percentage"));
}

/// `--format json` prints one JSON document on every outcome: the error
/// document (`"status": "failed"`, a code, the reason) when there is no
/// report to print, and the report alone when the CI gate fails after it.
#[test]
fn format_json_is_one_document_on_every_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let o = port_in(tmp.path(), &["report", "--format", "json"]);
    json_error(&o, 2, "bad_input", "run `port analyze` first");

    let w = workdir("seeds");
    let o = port_in(
        w.path(),
        &["report", "--format", "json", "--save-baseline", ".port"],
    );
    json_error(&o, 2, "bad_input", "cannot write .port: it is a folder");
    let o = port_in(
        w.path(),
        &["report", "--format=json", "--fail-on-regression"],
    );
    json_error(&o, 2, "bad_arguments", "--baseline");

    let o = port_in(
        w.path(),
        &["report", "--format", "json", "--fail-under", "101"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let j = one_json_document(&o);
    assert!(!j["gate"]["failures"].as_array().unwrap().is_empty(), "{j}");

    std::fs::write(
        w.path().join(".port/analysis.json"),
        "{\"schema\": \"port.analysis/1\",",
    )
    .unwrap();
    let o = port_in(w.path(), &["report", "--format", "json"]);
    json_error(&o, 2, "bad_input", "analysis.json is corrupt");
}
