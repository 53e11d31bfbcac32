//! Bad input gets one clear line and a non-zero exit, or a reported parse
//! error with the rest analysed — never a panic or a stack overflow.

mod common;
use common::*;

use std::path::Path;

fn analyze(cwd: &Path, target: &Path) -> std::process::Output {
    port_in(
        cwd,
        &["analyze", "--static", "--json", target.to_str().unwrap()],
    )
}

/// One line on stderr, exit 2, and (these runs ask for `--json`) one JSON
/// document on stdout saying the same.
fn one_line_error(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let reason = err.trim_end().trim_start_matches("port: ");
    json_error(o, 2, "bad_input", reason);
    err
}

#[test]
fn missing_path() {
    let tmp = tempfile::tempdir().unwrap();
    let err = one_line_error(&analyze(tmp.path(), &tmp.path().join("nope.py")));
    assert!(err.contains("nope.py: no such file or directory"), "{err}");
}

#[test]
fn folder_without_python() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("README.txt"), "hi").unwrap();
    let err = one_line_error(&analyze(tmp.path(), tmp.path()));
    assert!(err.contains("no Python files"), "{err}");
}

#[test]
fn syntax_error_alone_is_located() {
    let tmp = tempfile::tempdir().unwrap();
    let err = one_line_error(&analyze(tmp.path(), &fixture("bad/syntax_error.py")));
    assert!(err.contains("syntax_error.py:7:"), "{err}");
}

#[test]
fn syntax_error_in_a_folder_is_reported_and_the_rest_analysed() {
    let tmp = tempfile::tempdir().unwrap();
    let o = analyze(tmp.path(), &fixture("bad/mixed"));
    assert!(o.status.success(), "{}", stderr(&o));
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(function(&a, "fine")["verdict"], "cuda");
    let errs = a["parse_errors"].as_array().unwrap();
    assert_eq!(errs.len(), 1);
    assert!(errs[0]["file"].as_str().unwrap().ends_with("broken.py"));
    assert_eq!(errs[0]["line"], 7);
    assert!(stderr(&o).contains("broken.py:7:"));
}

#[test]
fn non_utf8_and_binary_files_are_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("src");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("latin1.py"), b"x = 1\ns = '\xe9t\xe9'\n").unwrap();
    std::fs::write(dir.join("blob.py"), b"\x7fELF\x02\x01\x01\x00\x00\x00").unwrap();
    std::fs::write(dir.join("good.py"), "def f(a):\n    return a + 1\n").unwrap();
    let o = analyze(tmp.path(), &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let errs: Vec<String> = a["parse_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}:{}:{}", e["file"], e["line"], e["message"]))
        .collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs
        .iter()
        .any(|e| e.contains("latin1.py") && e.contains(":2:") && e.contains("UTF-8")));
    assert!(errs
        .iter()
        .any(|e| e.contains("blob.py") && e.contains("binary")));
    assert_eq!(function(&a, "f")["verdict"], "cuda");

    // Alone, each is one clear line.
    let err = one_line_error(&analyze(tmp.path(), &dir.join("blob.py")));
    assert!(err.contains("binary file"), "{err}");
}

#[test]
fn empty_file_has_no_functions() {
    let tmp = tempfile::tempdir().unwrap();
    let o = analyze(tmp.path(), &fixture("bad/empty.py"));
    assert!(o.status.success(), "{}", stderr(&o));
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a["functions"].as_array().unwrap().len(), 0);
    assert_eq!(a["coverage"]["gpu_eligible_pct"], 0.0);
}

#[test]
fn ten_thousand_deep_nesting_does_not_overflow() {
    let tmp = tempfile::tempdir().unwrap();
    let depth = 10_000;
    let expr = format!("{}x{}", "(".repeat(depth), ")".repeat(depth));
    let sum = format!("x{}", " + x".repeat(depth));
    let src = format!(
        "def deep(x):\n    return {expr}\n\ndef long_sum(x):\n    return {sum}\n\ndef calls(x):\n    return {}x{}\n",
        "abs(".repeat(depth),
        ")".repeat(depth)
    );
    let path = tmp.path().join("deep.py");
    std::fs::write(&path, src).unwrap();
    let o = analyze(tmp.path(), &path);
    assert!(!stderr(&o).contains("overflow"), "{}", stderr(&o));
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(2),
        "{:?}",
        o.status
    );
    if o.status.success() {
        let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(a["functions"].as_array().unwrap().len() >= 2);
    }
}

#[test]
fn a_reader_that_goes_away_is_not_a_panic() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // `port analyze big.py | head -c 16`: the pipe closes early. The table
    // must be far larger than a pipe's buffer for port to notice.
    let cwd = tempfile::tempdir().unwrap();
    let big: String = (0..3000)
        .map(|i| format!("def f{i}(x):\n    return x * {i}\n\n"))
        .collect();
    let app = cwd.path().join("big.py");
    std::fs::write(&app, big).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("port"))
        .args(["analyze", "--static"])
        .arg(&app)
        .current_dir(cwd.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is dropped (closed) here, before port has written everything.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.trim().is_empty() || err.trim_end().lines().count() == 1,
        "{err}"
    );
}

/// A profiled `analyze --json` that cannot start is the error document
/// too; a bad flag with `--json` is one as well.
#[test]
fn profiled_analyze_json_errors_are_one_document() {
    let tmp = tempfile::tempdir().unwrap();
    let o = port_in(
        tmp.path(),
        &["analyze", "--json", tmp.path().to_str().unwrap()],
    );
    json_error(&o, 2, "bad_input", "is a folder: give the script to run");
    let o = port_in(
        tmp.path(),
        &["analyze", "--json", "--duration", "-1", "x.py"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    one_json_document(&o);
    let o = port_in(tmp.path(), &["analyze", "--json", "--bogus", "x.py"]);
    json_error(&o, 2, "bad_arguments", "unexpected argument '--bogus'");
}
