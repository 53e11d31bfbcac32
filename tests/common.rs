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

/// Where a migration's `arg_types` says each argument's type came from
/// (`"calls"`, `"numba"`, …), in order.
pub fn arg_sources(migration: &serde_json::Value) -> Vec<&str> {
    migration["arg_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["from"].as_str().unwrap())
        .collect()
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

/// Exactly one JSON document on stdout (a `--json` run), parsed.
pub fn one_json_document(o: &Output) -> serde_json::Value {
    let mut docs = serde_json::Deserializer::from_slice(&o.stdout).into_iter::<serde_json::Value>();
    let first = match docs.next() {
        Some(Ok(v)) => v,
        other => panic!(
            "stdout is not a JSON document ({other:?}):\n{}\nstderr: {}",
            stdout(o),
            stderr(o)
        ),
    };
    assert!(
        docs.next().is_none(),
        "more than one JSON document:\n{}",
        stdout(o)
    );
    first
}

/// A `--json` run that failed: exit `exit`, one JSON document on stdout
/// with `"status": "failed"`, the code and a reason containing `needle`
/// (the same reason as the one line on stderr).
pub fn json_error(o: &Output, exit: i32, code: &str, needle: &str) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(exit), "{}\n{}", stdout(o), stderr(o));
    let j = one_json_document(o);
    assert_eq!(j["schema"], "port.error/1", "{j}");
    assert_eq!(j["status"], "failed", "{j}");
    assert_eq!(j["code"], code, "{j}");
    assert_eq!(j["exit_code"], exit, "{j}");
    let reason = j["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(needle), "`{needle}` not in the reason: {j}");
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
    j
}

/// `port migrate` in `dir`, with the project's .venv for the original.
pub fn migrate_in(dir: &Path, args: &[&str]) -> Output {
    let venv = repo().join(".venv");
    let python = venv.join("bin/python");
    let py = python.to_str().unwrap().to_string();
    let mut all: Vec<&str> = vec!["migrate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--python", &py]);
    Command::cargo_bin("port")
        .unwrap()
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("VIRTUAL_ENV", &venv)
        .args(&all)
        .output()
        .expect("port runs")
}

/// Real Numba's verdicts (the oracle venv) on the functions of
/// `fixtures/{fixture_rel}.py`, as `{fixture_rel}.spec.json` types them.
pub fn oracle(fixture_rel: &str) -> serde_json::Value {
    let py = repo().join(".venv-oracle/bin/python");
    assert!(
        py.exists(),
        "the Numba oracle venv is missing: run `make test` (or scripts/setup.sh --oracle)"
    );
    let out = std::process::Command::new(py)
        .arg(repo().join("scripts/oracle.py"))
        .arg(fixture(&format!("{fixture_rel}.py")))
        .arg(fixture(&format!("{fixture_rel}.spec.json")))
        .output()
        .expect("oracle runs");
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle prints JSON")
}
