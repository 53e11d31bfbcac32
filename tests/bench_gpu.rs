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

/// CuPy as a drop-in, with NumPy standing in for CuPy (no GPU here): a
/// scalar function is "not run" rather than a failure (NumPy cannot run it
/// on arrays either: port makes it a ufunc), a Python loop over device
/// arrays that runs past the limit is a lower bound ("> 10.0 s"), not
/// "fails", and a whole-array function is timed. On the H200 the first two
/// were a traceback and "fails: past 10 s".
#[test]
fn cupy_drop_in_outcomes() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("prog.py"),
        "import math\nimport numpy as np\n\n\
def polar(rho, theta):\n    return rho * math.cos(theta)\n\n\
def slow(x, out):\n    for i in range(x.shape[0]):\n        out[i] = 2.0 * x[i]\n        s = 0\n        while s < 10**7:\n            s += 1\n\n\
def whole(x):\n    return np.sqrt(x) + 1.0\n",
    )
    .unwrap();
    let script = r#"
import sys, types, numpy as np
sys.path.insert(0, sys.argv[1] + "/scripts")
import bench_gpu as bg, gpu_sweep as gs
class Sync:
    def synchronize(self): pass
class Pool:
    def free_all_blocks(self): pass
cp = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
cp.asnumpy = np.asarray
cp.cuda = types.SimpleNamespace(Device=Sync)
cp.get_default_memory_pool = Pool
np.savez(sys.argv[2] + "/in.npz", rho=np.ones(8), theta=np.ones(8), x=np.ones(8), out=np.zeros(8))
prog = sys.argv[2] + "/prog.py"
got = {f: gs.cupy_case(cp, np, prog, f, sys.argv[2] + "/in.npz", 3, 0.5) for f in ("polar", "slow", "whole")}
print("polar", "cupy_not_run" in got["polar"], "cupy_error" in got["polar"])
print("slow", got["slow"].get("cupy_past_s"))
print("whole", got["whole"]["cupy_s"] > 0)
print("cell", bg.fmt_cupy({"past_s": 10.0}, "end_to_end_s"), "|", bg.fmt_cupy({"not_run": "n/a: scalar function"}, "kernel_s"))
"#;
    // bench_gpu imports numba: the oracle's venv has it.
    let o = Command::new(repo().join(".venv-oracle/bin/python"))
        .arg("-c")
        .arg(script)
        .arg(repo())
        .arg(tmp.path())
        .output()
        .expect("python runs");
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    assert!(out.contains("polar True False"), "{out}");
    assert!(out.contains("slow 0.5"), "{out}");
    assert!(out.contains("whole True"), "{out}");
    assert!(
        out.contains("cell > 10.0 s | n/a: scalar function"),
        "{out}"
    );
}
