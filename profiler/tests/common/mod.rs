//! Shared set-up for the tests that run the real profiler on `fixtures/apps`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use port_profiler::{
    profile, AppDirResolver, FunctionHotspot, Profile, ProfileError, ProfileOptions, StopSignal,
};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn fixture(name: &str) -> PathBuf {
    repo().join("fixtures/apps").join(name)
}

/// The project's venv Python (with numpy); `scripts/setup.sh` makes it.
pub fn venv_python() -> PathBuf {
    let py = repo().join(".venv/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup.sh first",
        py.display()
    );
    py
}

/// A Python 3.12+ with numpy, whose capture catches first calls with
/// `sys.monitoring` (the venv's Python may be older and use trampolines):
/// `.venv-monitoring`, which `scripts/setup.sh --oracle` makes where the
/// machine has such a Python, else the venv's own when it is 3.12+.
pub fn monitoring_python() -> Option<PathBuf> {
    let is_312 = |py: &Path| {
        std::process::Command::new(py)
            .args([
                "-c",
                "import sys, numpy; sys.exit(sys.version_info < (3, 12))",
            ])
            .status()
            .is_ok_and(|s| s.success())
    };
    [
        repo().join(".venv-monitoring/bin/python"),
        repo().join(".venv/bin/python"),
    ]
    .into_iter()
    .find(|py| py.exists() && is_312(py))
}

/// Options for a test run: venv Python, 200 Hz, capture into a fresh temp dir,
/// a private stop signal (no process-wide Ctrl-C handler).
pub fn options(app: &str, args: &[&str], captures: &Path) -> ProfileOptions {
    let mut o = ProfileOptions::new(venv_python(), fixture(app));
    o.args = args.iter().map(|s| s.to_string()).collect();
    o.rate_hz = 200;
    o.capture_dir = captures.to_path_buf();
    o.stop = Some(StopSignal::new());
    o
}

pub fn run(opts: &ProfileOptions) -> Result<Profile, ProfileError> {
    let resolver = AppDirResolver::for_app(&opts.app);
    profile(opts, &resolver, &|_| {})
}

pub fn function<'a>(p: &'a Profile, key: &str) -> &'a FunctionHotspot {
    p.functions
        .iter()
        .find(|f| f.key == key)
        .unwrap_or_else(|| {
            let keys: Vec<_> = p.functions.iter().map(|f| &f.key).collect();
            panic!("{key} not among the sampled functions {keys:?}")
        })
}

/// Functions by self time, module bodies left out: their self time is mostly
/// importing libraries, which stretches when the machine is busy.
pub fn ranking(p: &Profile) -> Vec<&str> {
    p.functions
        .iter()
        .map(|f| f.key.as_str())
        .filter(|k| *k != "<module>")
        .collect()
}

/// The profiler's example binary, built by `cargo test` next to the tests.
pub fn example_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let path = deps
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/profile");
    assert!(path.exists(), "{} not built", path.display());
    path
}
