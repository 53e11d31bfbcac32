//! Migrated functions on a real GPU, through the same host-program
//! interpreter as the simulator.
//!
//! Gated: runs only with `PORT_GPU=1` (and then fails, rather than skips,
//! when no GPU can be used). For every function the migrate fixtures
//! verify on the simulator: the GPU run passes against CPython, and its
//! arrays agree with the simulator's. Then the faults: a kernel that
//! writes far outside its arrays, an allocation larger than the device,
//! and a kernel whose result differs — each an error or a mismatch naming
//! the kernel and its launch configuration, never a panic.

mod common;

use common::{go_fast_too_large, plan_of, python, repo, seeds, SAXPY};
use std::path::Path;

use port_codegen::ir::{BinOp, Expr, Literal, Stmt};
use port_codegen::PtxOptions;
use port_rewriter::KernelPlan;
use port_verify::exec::{run_plan, Outputs};
use port_verify::gpu::GpuDevice;
use port_verify::simulator::SimDevice;
use port_verify::{
    compare, select_backend, verify_plan, Backend, BackendChoice, VerifyError, VerifyOptions,
};

/// Whether the test is asked for; panics when asked for without a GPU.
fn asked() -> bool {
    if std::env::var("PORT_GPU").as_deref() != Ok("1") {
        eprintln!("skipped: set PORT_GPU=1 to run migrated functions on the GPU");
        return false;
    }
    true
}

fn gpu_opts(file: &Path, function: &str) -> VerifyOptions {
    let selected =
        select_backend(BackendChoice::Gpu).unwrap_or_else(|e| panic!("PORT_GPU=1 but no GPU: {e}"));
    assert_eq!(selected.backend, Backend::Gpu);
    VerifyOptions {
        selected,
        python: python(),
        file: file.to_path_buf(),
        qualname: function.into(),
        captured: None,
        given: None,
        size: None,
        repeats: 10,
        app_output: None,
        ptx: PtxOptions::default(),
        hotspot_pct: Some(50.0),
        save_inputs: None,
        progress: None,
        generated_limit: std::time::Duration::from_secs(port_verify::GENERATED_LIMIT_S),
    }
}

/// The functions tests/migrate_fixtures.rs verifies on the simulator.
const FIXTURES: &[(&str, &str, &str, bool)] = &[
    (
        "seeds.py",
        "saxpy",
        "float64, float64[:], float64[:], float64[:]",
        false,
    ),
    (
        "seeds.py",
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
        false,
    ),
    ("seeds.py", "hypot", "float64, float64", false),
    (
        "seeds.py",
        "gaussian_pdf",
        "float64[:], float64, float64",
        false,
    ),
    (
        "seeds.py",
        "polar_distance",
        "float64[:], float64[:], float64[:], float64[:]",
        false,
    ),
    ("seeds.py", "normalize", "float64[:, :]", false),
    ("seeds.py", "go_fast", "float64[:, :]", false),
    ("kernels.py", "softmax_rows", "float64[:, :]", false),
    ("kernels.py", "stencil_1d", "float64[:], float64[:]", false),
    (
        "kernels.py",
        "stencil_2d",
        "float64[:, :], float64[:, :]",
        false,
    ),
    (
        "kernels.py",
        "matmul",
        "float64[:, :], float64[:, :], float64[:, :]",
        false,
    ),
    (
        "general.py",
        "distance_matrix",
        "float64[:], float64[:], float64[:, :]",
        false,
    ),
    ("general.py", "clipped_relu", "float64[:], float64", false),
    ("general.py", "dot", "float64[:], float64[:]", false),
    ("general.py", "variance", "float64[:]", false),
    ("general.py", "row_norms", "float64[:, :]", false),
    ("general.py", "max_abs", "float64[:]", false),
    ("general.py", "leaky_relu", "float32[:, :]", false),
    (
        "general.py",
        "axpy_slices",
        "float64, float64[:], float64[:]",
        false,
    ),
    ("general.py", "logistic", "float64[:], float64[:]", false),
    ("general.py", "mandel", "float64, float64, int64", false),
    ("general.py", "col_center", "float64[:, :]", false),
    ("seeds.py", "normalize", "float64[:, :]", true),
    ("seeds.py", "go_fast", "float64[:, :]", true),
    // `@` of float matrices: cuBLAS's gemm on the GPU's arrays (a scaled
    // operand stored first; `data.T` and `w.T` read in place; float32).
    (
        "programs.py",
        "gemm",
        "float64, float64, float64[:,:], float64[:,:], float64[:,:]",
        false,
    ),
    ("programs.py", "covariance", "float64[:,:], float64", false),
    (
        "programs.py",
        "mlp2",
        "float64[:,:], float64[:,:], float64[:], float64[:,:], float64[:]",
        false,
    ),
    (
        "programs_corpus_style.py",
        "projected_f32",
        "float32[:,:], float32[:,:]",
        false,
    ),
    // Library steps: cuSOLVER on the GPU's arrays (cholesky; solve with a
    // matrix and with a vector; inv and det of a stack; det; float32).
    (
        "programs_linalg.py",
        "gaussian_loglik",
        "float64[:,:], float64[:], float64[:,:]",
        false,
    ),
    (
        "programs_linalg.py",
        "newton_system",
        "float64[:,:], float64[:], int64",
        false,
    ),
    (
        "programs_linalg.py",
        "stack_inverses",
        "float64[:,:,:], float64[:]",
        false,
    ),
    (
        "programs_linalg.py",
        "normalise_by_det",
        "float64[:,:], float64[:,:]",
        false,
    ),
    (
        "programs_linalg.py",
        "ridge_inverse",
        "float64[:,:], float64[:], float64",
        false,
    ),
    (
        "programs_linalg.py",
        "solve_f32",
        "float32[:,:], float32[:]",
        false,
    ),
];

#[test]
fn every_migrate_fixture_verifies_on_the_gpu_and_agrees_with_the_simulator() {
    if !asked() {
        return;
    }
    let mut failures = Vec::new();
    for &(file, function, sig, fp32) in FIXTURES {
        let path = repo().join("fixtures/migrate").join(file);
        let plan = plan_of(&path, function, sig, fp32);
        let opts = gpu_opts(&path, function);
        let o = match verify_plan(&plan, &opts) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{function}: {e}"));
                continue;
            }
        };
        if !o.verification.passed {
            failures.push(format!("{function}: {:?}", o.verification.mismatch));
        }
        // A matrix product ran on the GPU (cuBLAS), and float cholesky,
        // solve, inv and det on cuSOLVER, not on the host.
        if let Some(c) = o.host_calls.iter().find(|c| c.call != "np.linalg.lstsq") {
            failures.push(format!(
                "{function}: {c} (libcublas or libcusolver not found?)"
            ));
        }
        let t = &o.timing;
        assert!(t.kernel_s.unwrap() > 0.0, "{function}: {t:?}");
        assert!(
            t.end_to_end_s.unwrap() >= t.kernel_s.unwrap(),
            "{function}: {t:?}"
        );
        assert_eq!(t.repeats.clone().unwrap_or_default().kernel, Some(10));
        assert!(o.device.compute_capability.is_some());
        assert!(o.projection.profitable.is_some(), "{function}");
        assert!(o.projection.transfer_s.is_some(), "{function}");
        // kernel_s and end_to_end_s are asserted present above.
        eprintln!(
            "{function}{}: kernels {:.1} µs, end-to-end {:.1} µs, CPython {}; {}",
            if fp32 { " (fp32)" } else { "" },
            t.kernel_s.unwrap_or_default() * 1e6,
            t.end_to_end_s.unwrap_or_default() * 1e6,
            t.cpython_s
                .map_or_else(|| "not timed".to_string(), |c| format!("{:.1} µs", c * 1e6)),
            o.projection.why.as_deref().unwrap_or_default()
        );

        // The GPU's arrays against the simulator's, on the same inputs.
        let inputs = port_verify::inputs::generate(&plan);
        let ctx = opts.selected.gpu.clone().unwrap();
        let info = port_verify::gpu::info(&ctx).unwrap();
        let ptx = port_codegen::compile_ptx(&plan.module, &PtxOptions::default()).unwrap();
        let mut gpu = GpuDevice::new(&ctx, &plan.module, &ptx, info.sms.unwrap()).unwrap();
        let on_gpu = run_plan(&plan, &inputs, &mut gpu, Outputs::All).unwrap();
        let mut sim = SimDevice::new(&plan).unwrap();
        let on_sim = run_plan(&plan, &inputs, &mut sim, Outputs::All).unwrap();
        let tol = port_verify::tolerance(&plan);
        for (k, (g, s)) in on_gpu.args.iter().zip(&on_sim.args).enumerate() {
            if let (Some(g), Some(s)) = (g, s) {
                let c = compare::allclose(s, g, tol);
                if !c.passed {
                    failures.push(format!(
                        "{function}: argument {k}, GPU vs simulator: {:?}",
                        c.first_mismatch
                    ));
                }
            }
        }
        for (g, s) in on_gpu
            .returns
            .iter()
            .flatten()
            .zip(on_sim.returns.iter().flatten())
        {
            let c = compare::allclose(s, g, tol);
            if !c.passed {
                failures.push(format!(
                    "{function}: return, GPU vs simulator: {:?}",
                    c.first_mismatch
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The store of saxpy's kernel, to tamper with.
fn saxpy_store(plan: &mut KernelPlan) -> (&mut port_codegen::ir::ElemRef, &mut Expr) {
    let Stmt::ParallelFor(p) = &mut plan.module.kernels[0].body[0] else {
        panic!("saxpy's kernel starts with its grid-stride loop")
    };
    let Stmt::Store { target, value } = &mut p.body[0] else {
        panic!("saxpy's loop body is one store")
    };
    (target, value)
}

#[test]
fn a_differing_result_names_the_kernel_and_launch() {
    if !asked() {
        return;
    }
    let mut plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let (_, value) = saxpy_store(&mut plan);
    let Expr::Binary(op, _, _) = value else {
        panic!()
    };
    *op = BinOp::Sub;
    let o = verify_plan(&plan, &gpu_opts(&seeds(), "saxpy")).unwrap();
    assert!(!o.verification.passed);
    let m = o.verification.mismatch.unwrap();
    assert!(m.contains("from kernel(s) `saxpy_kernel` (grid ("), "{m}");
    assert_eq!(o.timing.kernel_s, None, "a wrong kernel is not timed");
    assert!(o
        .projection
        .why
        .as_deref()
        .unwrap_or_default()
        .starts_with("not timed"));
}

/// Runs the test `name` of this binary alone, in a child process, and
/// asserts it passed: a kernel fault leaves the process's CUDA context
/// unusable for good, so it must not share one with the other tests.
fn in_own_process(name: &str) -> bool {
    if std::env::var_os("PORT_GPU_TEST_CHILD").is_some() {
        return false;
    }
    // Under the GPU bundle's own loader (run-gpu.sh on a machine with an
    // older glibc) this process's executable is the loader: run-gpu.sh says
    // which binary and library path to give it again.
    let mut child = match (
        std::env::var_os("PORT_TEST_LOADER"),
        std::env::var_os("PORT_TEST_EXE"),
    ) {
        (Some(loader), Some(exe)) => {
            let mut c = std::process::Command::new(loader);
            c.arg("--library-path")
                .arg(std::env::var_os("PORT_TEST_LIBRARY_PATH").unwrap_or_default())
                .arg(exe);
            c
        }
        _ => std::process::Command::new(std::env::current_exe().unwrap()),
    };
    let o = child
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("PORT_GPU_TEST_CHILD", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{name} in its own process:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    true
}

#[test]
fn an_illegal_address_is_a_cuda_error_naming_the_kernel() {
    if !asked() || in_own_process("an_illegal_address_is_a_cuda_error_naming_the_kernel") {
        return;
    }
    let mut plan = plan_of(&seeds(), "saxpy", SAXPY, false);
    let (target, _) = saxpy_store(&mut plan);
    // out[i + 2^40]: far outside any allocation.
    let i = target.indices[0].clone();
    target.indices[0] = Expr::Binary(
        BinOp::Add,
        Box::new(i),
        Box::new(Expr::Lit(Literal::I64(1 << 40))),
    );
    let e = verify_plan(&plan, &gpu_opts(&seeds(), "saxpy")).unwrap_err();
    let VerifyError::Cuda(m) = &e else {
        panic!("{e}")
    };
    assert!(m.starts_with("kernel `saxpy_kernel` (grid ("), "{m}");
    assert!(
        m.contains("CUDA_ERROR_ILLEGAL_ADDRESS") || m.contains("CUDA_ERROR_LAUNCH_FAILED"),
        "{m}"
    );
}

#[test]
fn running_out_of_memory_names_the_array_and_kernel() {
    if !asked() {
        return;
    }
    let plan = go_fast_too_large();
    let e = verify_plan(&plan, &gpu_opts(&seeds(), "go_fast")).unwrap_err();
    let VerifyError::Cuda(m) = &e else {
        panic!("{e}")
    };
    assert!(m.starts_with("allocating `result` ("), "{m}");
    assert!(m.contains("for kernel `go_fast_result`"), "{m}");
    assert!(m.contains("CUDA_ERROR_OUT_OF_MEMORY"), "{m}");
}
