//! A small sample of `make fuzz-diff` (scripts/fuzz_diff.py): random,
//! well-typed NumPy functions, each migrated on the simulator against
//! CPython, every sixth also run under Numba's CUDA simulator. Each must be
//! verified or refused, never a mismatch or a failure; and most must be
//! verified, or the generator is exercising what port refuses.

mod common;

use std::process::Command;

use common::{repo, stderr, stdout};

#[test]
fn random_programs_are_verified_or_refused_never_wrong() {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(repo().join(".venv/bin/python"))
        .arg(repo().join("scripts/fuzz_diff.py"))
        .args([
            "24",
            "--seed",
            "20261128",
            "--jobs",
            "2",
            "--numba-every",
            "6",
        ])
        .arg("--port")
        .arg(env!("CARGO_BIN_EXE_port"))
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let text = stdout(&o);
    let last = text.lines().last().unwrap_or_default().to_string();
    assert!(
        o.status.success() && last.contains("mismatch 0, failed 0"),
        "{text}\n{}",
        stderr(&o)
    );
    let count = |what: &str| -> u32 {
        last.split(", ")
            .find_map(|p| p.strip_prefix(what))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{what}` in {last:?}"))
    };
    assert_eq!(count("programs "), 24, "{last}");
    assert!(count("verified ") >= 14, "{last}");
}
