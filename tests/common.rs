//! Helpers shared by the whole-command tests: run the built `port` binary
//! in a scratch working directory so `.port/` never lands in the repo.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    repo().join("fixtures").join(rel)
}

/// `port ARGS` run inside `cwd`.
pub fn port_in(cwd: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("port")
        .expect("port binary")
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("port runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `port analyze --static --json PATH` parsed, asserting success.
pub fn analyze_json(path: &Path) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let o = port_in(
        tmp.path(),
        &["analyze", "--static", "--json", path.to_str().unwrap()],
    );
    assert!(o.status.success(), "port failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("valid JSON")
}

pub fn function<'a>(a: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    a["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name || f["qualname"] == name)
        .unwrap_or_else(|| panic!("no function {name} in the analysis"))
}

pub fn codes(f: &serde_json::Value) -> Vec<String> {
    f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["code"].as_str().unwrap().to_string())
        .collect()
}

/// A user error: one line on stderr, exit code 2, no panic.
pub fn user_error(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "{}\n{}", stdout(o), stderr(o));
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "`{needle}` not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}
