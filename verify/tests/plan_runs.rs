//! verify as a library: the original under CPython against the plan on the
//! simulator — agreement, a mismatch reported with its first index and the
//! kernel's launch, captured and given inputs, an original that raises,
//! backend selection without a GPU, and the timing fields the simulator can
//! and cannot fill.

mod common;

use common::{go_fast_too_large, plan_of, python, repo, seeds, SAXPY};
use std::path::{Path, PathBuf};

use port_codegen::ir::{BinOp, Expr, Stmt};
use port_codegen::PtxOptions;
use port_verify::{
    select_backend, verify_plan, Backend, BackendChoice, VerifyError, VerifyOptions,
};

fn opts(file: &Path, function: &str) -> VerifyOptions {
    VerifyOptions {
        selected: select_backend(BackendChoice::Simulator).unwrap(),
        python: python(),
        file: file.to_path_buf(),
        qualname: function.into(),
        captured: None,
        given: None,
        size: None,
        repeats: 0,
        app_output: None,
        ptx: PtxOptions::default(),
        hotspot_pct: None,
        save_inputs: None,
        progress: None,
        generated_limit: std::time::Duration::from_secs(port_verify::GENERATED_LIMIT_S),
    }
}

#[test]
fn a_correct_plan_passes() {
    let plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let v = verify_plan(&plan, &opts(&seeds(), "saxpy"))
        .unwrap()
        .verification;
    assert!(v.passed, "{v:?}");
    assert_eq!(v.inputs, "generated");
    assert_eq!(v.compared, ["`x`", "`y`", "`out`"]);
    assert_eq!(v.tolerance.rtol, 1e-5);
}

/// `+` becomes `-` in the kernel: the difference is found and located.
#[test]
fn a_wrong_kernel_is_a_mismatch_with_the_first_index() {
    let mut plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let Stmt::ParallelFor(p) = &mut plan.module.kernels[0].body[0] else {
        panic!()
    };
    let Stmt::Store { value, .. } = &mut p.body[0] else {
        panic!()
    };
    let Expr::Binary(op, _, _) = value else {
        panic!()
    };
    *op = BinOp::Sub;
    let v = verify_plan(&plan, &opts(&seeds(), "saxpy"))
        .unwrap()
        .verification;
    assert!(!v.passed);
    let m = v.mismatch.unwrap();
    assert!(m.starts_with("`out` index [0]: expected "), "{m}");
    assert!(m.contains(", got "), "{m}");
    // The kernel that produced it, and how it was launched (100,000
    // elements at 256 threads, capped at 32 blocks per simulated SM).
    assert!(
        m.ends_with("— from kernel(s) `saxpy_kernel` (grid (64, 1), block (256, 1))"),
        "{m}"
    );
    assert!(v.max_abs_err > 0.1);
}

#[test]
fn captured_inputs_are_used_when_given() {
    let tmp = tempfile::tempdir().unwrap();
    let npz = tmp.path().join("saxpy.npz");
    let script = format!(
        "import numpy as np; x = np.linspace(0, 1, 1000); np.savez({:?}, a=2.5, x=x, y=x[::-1].copy(), out=np.zeros(1000))",
        npz.display().to_string()
    );
    let o = std::process::Command::new(python())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let mut op = opts(&seeds(), "saxpy");
    op.captured = Some(npz);
    let v = verify_plan(&plan, &op).unwrap().verification;
    assert!(v.passed, "{v:?}");
    assert_eq!(v.inputs, "captured");
    // The same file given with --inputs wins over a capture, and says so.
    op.given = op.captured.clone();
    op.captured = Some(PathBuf::from("/nonexistent.npz"));
    let v = verify_plan(&plan, &op).unwrap().verification;
    assert!(v.passed, "{v:?}");
    assert_eq!(v.inputs, "given");
}

#[test]
fn an_original_that_raises_is_reported_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.py");
    std::fs::write(
        &bad,
        "def saxpy(a, x, y, out):\n    raise ValueError('boom')\n\nif __name__ == '__main__':\n    raise SystemExit(9)\n",
    )
    .unwrap();
    let plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let e = verify_plan(&plan, &opts(&bad, "saxpy")).unwrap_err();
    let VerifyError::OriginalFailedOnGenerated(m) = &e else {
        panic!("{e}")
    };
    assert_eq!(m, "ValueError: boom (bad.py:2 in saxpy)");
    // One line naming both ways out.
    let line = e.to_string();
    assert!(!line.contains('\n'));
    assert!(
        line.contains("--inputs FILE.npz") && line.contains("port analyze"),
        "{line}"
    );
}

/// Whether this machine has an NVIDIA driver (the tests below are about
/// machines without one; with PORT_GPU=1 the GPU tests cover the rest).
fn has_driver() -> bool {
    Path::new("/dev/nvidiactl").exists() || std::env::var("PORT_GPU").as_deref() == Ok("1")
}

#[test]
fn without_a_driver_gpu_is_an_error_and_auto_falls_back() {
    if has_driver() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let Err(e) = select_backend(BackendChoice::Gpu) else {
        panic!("a GPU backend without a driver")
    };
    let text = e.to_string();
    assert!(text.starts_with("--backend gpu: no CUDA driver"), "{text}");
    assert!(
        text.ends_with("use --backend simulator (or auto)"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1);

    let auto = select_backend(BackendChoice::Auto).unwrap();
    assert_eq!(auto.backend, Backend::Simulator);
    let why = auto.fallback.unwrap();
    assert!(why.starts_with("no CUDA driver"), "{why}");
    assert!(why.contains("verifying on the host simulator"), "{why}");
    assert!(select_backend(BackendChoice::Simulator)
        .unwrap()
        .fallback
        .is_none());
}

/// On the simulator: CPython and compilation are timed, the GPU's figures
/// are absent (not zero), and the projection says why it has no verdict.
#[test]
fn the_simulator_times_cpython_and_leaves_gpu_figures_empty() {
    let plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let mut op = opts(&seeds(), "saxpy");
    op.repeats = 10;
    op.hotspot_pct = Some(40.0);
    op.size = Some(5000);
    let o = verify_plan(&plan, &op).unwrap();
    assert!(o.verification.passed);
    assert_eq!(o.device.name, "simulator");
    assert_eq!(o.device.compute_capability, None);
    let t = &o.timing;
    assert!(t.compile_s.unwrap() > 0.0);
    assert!(t.cpython_s.unwrap() > 0.0);
    assert_eq!(t.repeats.clone().unwrap_or_default().cpython, Some(10));
    assert_eq!((t.kernel_s, t.end_to_end_s), (None, None));
    assert_eq!((t.speedup_kernel, t.speedup_end_to_end), (None, None));
    assert_eq!(t.repeats.clone().unwrap_or_default().kernel, None);
    let p = &o.projection;
    assert_eq!(p.hotspot_pct, Some(40.0));
    assert_eq!(
        (p.profitable, p.program_speedup, p.transfer_s),
        (None, None, None)
    );
    assert!(
        p.why.as_deref().unwrap_or_default().contains("simulator"),
        "{}",
        p.why.as_deref().unwrap_or_default()
    );
    assert!(o.bandwidth.is_none());
    // --size: a 1-D loop gets arrays of that many elements.
    assert_eq!(o.launches.len(), 1);
    assert_eq!(o.launches[0].array_bytes, 3 * 5000 * 8);
    assert_eq!(o.launches[0].config.grid, [20, 1]);
}

#[test]
fn a_missing_python_is_a_clear_error() {
    let plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let mut op = opts(&seeds(), "saxpy");
    op.python = PathBuf::from("/nonexistent/python");
    let e = verify_plan(&plan, &op).unwrap_err();
    assert!(matches!(e, VerifyError::NoPython { .. }), "{e}");
}

#[test]
fn generated_inputs_are_deterministic_and_sized_by_loop_depth() {
    let saxpy = plan_of(&seeds(), "saxpy", SAXPY, false);
    assert_eq!(port_verify::inputs::extent(&saxpy), 100_000);
    let normalize = plan_of(&seeds(), "normalize", "float64[:, :]", false);
    assert_eq!(port_verify::inputs::extent(&normalize), 512);
    let matmul = plan_of(
        &repo().join("fixtures/migrate/kernels.py"),
        "matmul",
        "float64[:, :], float64[:, :], float64[:, :]",
        false,
    );
    assert_eq!(port_verify::inputs::extent(&matmul), 64);
    let a = port_verify::inputs::generate(&saxpy);
    let b = port_verify::inputs::generate(&saxpy);
    assert_eq!(a.values, b.values);
    // Divisions want positive values; saxpy does not divide.
    assert_eq!(port_verify::inputs::value_range(&saxpy), (-1.0, 1.0));
    assert_eq!(port_verify::inputs::value_range(&normalize), (0.5, 1.5));
}

/// An allocation no host holds (2^48 float64): the simulator says so, naming
/// the array and its kernel, as a GPU's CUDA_ERROR_OUT_OF_MEMORY does;
/// and the generated inputs, which grow to what the kernels read, are
/// not grown to its size (a 2 PiB input aborted the process before).
#[test]
fn an_allocation_larger_than_the_host_is_an_error_not_an_abort() {
    let plan = go_fast_too_large();
    let e = verify_plan(&plan, &opts(&seeds(), "go_fast")).unwrap_err();
    let VerifyError::Cuda(m) = &e else {
        panic!("{e}")
    };
    assert!(
        m.starts_with("allocating `result` (2251799813685248 bytes) for kernel `go_fast_result`"),
        "{m}"
    );
    assert!(m.contains("cannot hold"), "{m}");
}
