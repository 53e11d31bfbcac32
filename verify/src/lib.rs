//! Verification and timing: runs the original function under CPython and the
//! migrated kernels on the GPU (cudarc) or on the host simulator, compares the
//! results with `allclose`, and times them the way Numba's maintainers teach
//! (no compile time, warm-up, data on the device, events, median of repeats).
//!
//! Today: [`verify_plan`] runs the original in a Python subprocess
//! ([`original`], the embedded helper script), the plan on codegen's
//! simulator ([`simulator`]), and compares every array argument after the
//! call and every returned value ([`compare`]), on captured or generated
//! inputs ([`inputs`]). The [`Backend`] seam is where the GPU path (cudarc,
//! timing) lands; asking for it today is a clear error.
//!
//! Modules, one idea each: [`npy`] (the exchange format), [`inputs`],
//! [`original`] (the CPython edge), [`simulator`], [`compare`], [`error`].

pub mod compare;
pub mod error;
pub mod inputs;
pub mod npy;
pub mod original;
pub mod simulator;

use std::path::{Path, PathBuf};

use port_codegen::ir::ScalarType;
use port_rewriter::{KernelPlan, PlanKind};
use serde::Serialize;

pub use compare::Tolerance;
pub use error::VerifyError;
pub use inputs::{InputOrigin, Inputs};

/// Where the kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// codegen's host simulator (no GPU needed).
    Simulator,
    /// A CUDA GPU through cudarc.
    Gpu,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Simulator => "simulator",
            Backend::Gpu => "gpu",
        }
    }

    /// Whether a CUDA driver is present on this machine.
    pub fn gpu_available() -> bool {
        ["/dev/nvidiactl", "/proc/driver/nvidia/version"]
            .iter()
            .any(|p| Path::new(p).exists())
    }
}

/// How to verify.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    pub backend: Backend,
    /// The Python that runs the original.
    pub python: PathBuf,
    /// The user's file and the function's qualified name in it.
    pub file: PathBuf,
    pub qualname: String,
    /// A captured `.npz` of the arguments, when the profiler saved one.
    pub captured: Option<PathBuf>,
}

/// The outcome of one verification (what `--json` reports).
#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    pub backend: String,
    /// `"captured"` or `"generated"`.
    pub inputs: String,
    pub passed: bool,
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    pub tolerance: Tolerance,
    /// What was compared: `x` (an argument after the call), `return`.
    pub compared: Vec<String>,
    /// The first difference: which output, which element, both values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
    /// Seconds the original took (one call, for information).
    pub original_seconds: f64,
}

/// The tolerance for this plan's results.
pub fn tolerance(plan: &KernelPlan) -> Tolerance {
    if plan.fp32 {
        return compare::FP32_LOWERED;
    }
    let f32_args = plan
        .params
        .iter()
        .any(|p| p.ty.elem() == ScalarType::F32 && p.ty.is_array());
    if f32_args || plan.ufunc_outputs.contains(&ScalarType::F32) {
        compare::FLOAT32
    } else {
        compare::FLOAT64
    }
}

fn dtype_name(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "bool",
        ScalarType::I32 => "int32",
        ScalarType::I64 => "int64",
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
    }
}

/// Runs the original and the kernels on the same inputs and compares them.
pub fn verify_plan(plan: &KernelPlan, opts: &VerifyOptions) -> Result<Verification, VerifyError> {
    if opts.backend == Backend::Gpu {
        return Err(VerifyError::NoGpu(if Backend::gpu_available() {
            "--backend gpu: running kernels on the GPU is not built yet in this version; use --backend simulator".into()
        } else {
            "--backend gpu: no CUDA GPU on this machine (no NVIDIA driver); use --backend simulator"
                .into()
        }));
    }
    let work = tempfile::tempdir()
        .map_err(|e| VerifyError::Io("temporary folder".into(), e.to_string()))?;
    let input_dir = work.path().join("inputs");
    let names: Vec<String> = plan.params.iter().map(|p| p.name.clone()).collect();
    let otypes: Vec<&str> = plan.ufunc_outputs.iter().map(|t| dtype_name(*t)).collect();
    let inputs = match &opts.captured {
        Some(npz) => {
            original::unpack_capture(&opts.python, npz, &names, work.path(), &input_dir)?;
            let mut i = inputs::read(&input_dir, InputOrigin::Captured)?;
            // The ufunc's output types are part of the manifest.
            inputs::write(&input_dir, &i, &otypes)?;
            i.origin = InputOrigin::Captured;
            i
        }
        None => {
            let i = inputs::generate(plan);
            inputs::write(&input_dir, &i, &otypes)?;
            i
        }
    };
    let ufunc = plan.kind == PlanKind::Ufunc;
    let orig = original::run_original(
        &opts.python,
        &opts.file,
        &opts.qualname,
        &input_dir,
        work.path(),
        ufunc,
    )?;
    let ours = simulator::run_plan(plan, &inputs)?;
    let tol = tolerance(plan);

    let mut v = Verification {
        backend: opts.backend.as_str().into(),
        inputs: inputs.origin.as_str().into(),
        passed: true,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        tolerance: tol,
        compared: Vec::new(),
        mismatch: None,
        original_seconds: orig.seconds,
    };
    let check = |what: String, e: &npy::NdArray, a: &npy::NdArray, v: &mut Verification| {
        let c = compare::allclose(e, a, tol);
        v.max_abs_err = v.max_abs_err.max(c.max_abs_err);
        v.max_rel_err = v.max_rel_err.max(c.max_rel_err);
        if !c.passed && v.mismatch.is_none() {
            v.passed = false;
            v.mismatch = Some(format!("{what} {}", c.first_mismatch.unwrap_or_default()));
        }
        v.compared.push(what);
    };
    for (k, p) in plan.params.iter().enumerate() {
        if let (Some(Some(e)), Some(Some(a))) = (orig.args.get(k), ours.args.get(k)) {
            check(format!("`{}`", p.name), e, a, &mut v);
        }
    }
    match (&orig.returns, &ours.returns) {
        (None, None) => {}
        (Some(e), Some(a)) if e.len() == a.len() => {
            for (k, (e, a)) in e.iter().zip(a).enumerate() {
                let what = if e.len() > 1 || a.len() > 1 || k > 0 {
                    format!("return value {k}")
                } else {
                    "return value".to_string()
                };
                check(what, e, a, &mut v);
            }
        }
        (e, a) => {
            v.passed = false;
            v.mismatch = Some(format!(
                "the original returns {} value(s), the kernels {}",
                e.as_ref().map_or(0, Vec::len),
                a.as_ref().map_or(0, Vec::len)
            ));
        }
    }
    Ok(v)
}
