//! `scripts/bench-gpu.sh` (`make bench-gpu`) on a machine without a GPU:
//! `--simulate --quick` runs the whole harness (port on its simulator,
//! numba-cuda on Numba's CUDA simulator, toy sizes) and prints both tables
//! and the JSON; without `--simulate`, a machine with no NVIDIA driver gets
//! one line and exit code 2. What the GPU figures are worth needs a GPU.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{repo, stderr, stdout};

/// The functions the harness benches (scripts/bench_gpu.py, CASES).
const FUNCTIONS: [&str; 7] = [
    "saxpy",
    "vector_add",
    "polar_distance",
    "variance",
    "go_fast",
    "stencil_2d",
    "matmul",
];

const CONTENDERS: [&str; 4] = ["port", "numba-cuda", "njit", "CPython"];

/// `bash scripts/bench-gpu.sh ARGS` with the port binary these tests built.
fn bench_gpu(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo().join("scripts/bench-gpu.sh"))
        .args(args)
        .env("PORT_BIN", env!("CARGO_BIN_EXE_port"))
        .env_remove("NUMBA_ENABLE_CUDASIM")
        .output()
        .expect("bash runs")
}

#[test]
fn simulated_run_goes_end_to_end() {
    assert!(
        repo().join(".venv-oracle/bin/python").exists(),
        "the Numba oracle venv is missing: run `make test` (or scripts/setup.sh --oracle)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("bench.json");
    let o = bench_gpu(&[
        "--simulate",
        "--quick",
        "--json-out",
        json.to_str().unwrap(),
    ]);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "exit {:?}\n{out}\n{}",
        o.status.code(),
        stderr(&o)
    );
    assert!(out.contains("SIMULATED RUN"), "{out}");
    assert!(out.contains("not measurements"), "{out}");
    for name in FUNCTIONS.iter().chain(CONTENDERS.iter()) {
        assert!(out.contains(name), "the table lacks {name}:\n{out}");
    }

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("JSON");
    assert_eq!(run["schema"], "port.bench-gpu/1");
    assert_eq!(run["simulated"], true);
    let results = run["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, FUNCTIONS, "one entry per function");
    for r in results {
        assert!(r.get("error").is_none(), "{r}");
        // Simulated GPU times are not measurements: null, never a number.
        assert!(r["numba_cuda"]["kernel_s"].is_null(), "{r}");
        assert!(r["numba_cuda"]["end_to_end_s"].is_null(), "{r}");
        assert!(r["njit"]["s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["cpython"]["s"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn no_gpu_is_one_line_and_exit_2() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let o = bench_gpu(&["--quick"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("bench-gpu: no CUDA GPU here ("), "{err}");
    assert!(
        err.contains("run this on a GPU machine, or --simulate to exercise the harness"),
        "{err}"
    );
}
