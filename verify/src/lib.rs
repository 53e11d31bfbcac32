//! Verification and timing: runs the original function under CPython and the
//! migrated kernels on a CUDA GPU (cudarc) or on the host simulator, compares
//! the results with `allclose`, and times them the way Numba's maintainers
//! teach: never the compilation, a warm-up first, data on the device before
//! the kernel is timed, CUDA events, the median of at least 10 repeats.
//!
//! [`verify_plan`] is the whole job for one migrated function: inputs
//! (captured, given or generated: [`inputs`]), the original in a Python
//! subprocess ([`original`]), the plan's host program on a [`exec::Device`]
//! ([`exec`]; [`simulator`] or [`gpu`]), the comparison ([`compare`]), then
//! on a GPU the timed runs and what they mean ([`timing`]). [`select_backend`]
//! turns `--backend auto|gpu|simulator` into a backend, saying why when
//! `auto` falls back to the simulator.
//!
//! Modules, one idea each: [`npy`] (the exchange format), [`inputs`],
//! [`original`] (the CPython edge), [`exec`] (the host program),
//! [`linalg`] (the `np.linalg` routines of library steps, on the host),
//! [`simulator`], [`gpu`] (the CUDA edge), [`compare`], [`timing`], [`error`].

pub mod compare;
pub mod dtype;
pub mod error;
pub mod exact;

pub mod exec;
pub mod gpu;
pub mod inputs;
pub mod linalg;
pub mod npy;
pub mod order;
pub mod original;
pub mod simulator;
pub mod timing;
pub mod toolchain;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaContext;
use port_codegen::ir::ScalarType;

use crate::dtype::dtype_name;
use port_codegen::{compile_ptx, Arch, PtxOptions};
use port_rewriter::{KernelPlan, PlanKind};
use serde::Serialize;

pub use compare::Tolerance;
pub use error::VerifyError;
pub use exact::{ExactCheck, Precision, Verdict};
pub use exec::{HostCall, Launch, LaunchConfig};
pub use gpu::DeviceInfo;
pub use inputs::{InputOrigin, Inputs};
pub use timing::{Bandwidth, Projection, Timing};

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
}

/// What the user asked for (`--backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when libcuda loads and device 0 answers, else the simulator.
    Auto,
    Gpu,
    Simulator,
}

/// The backend chosen, with the GPU's context when it is one.
#[derive(Clone)]
pub struct Selected {
    pub backend: Backend,
    pub gpu: Option<Arc<CudaContext>>,
    /// Why `auto` fell back to the simulator (one line), if it did.
    pub fallback: Option<String>,
}

/// Picks the backend. `gpu` without a usable GPU is an error (one line);
/// `auto` falls back to the simulator and says why.
pub fn select_backend(choice: BackendChoice) -> Result<Selected, VerifyError> {
    let simulator = |fallback| Selected {
        backend: Backend::Simulator,
        gpu: None,
        fallback,
    };
    match choice {
        BackendChoice::Simulator => Ok(simulator(None)),
        BackendChoice::Gpu => {
            let ctx = gpu::open().map_err(|e| match e {
                VerifyError::NoGpu(m) => VerifyError::NoGpu(format!(
                    "--backend gpu: {m}; use --backend simulator (or auto)"
                )),
                other => other,
            })?;
            Ok(Selected {
                backend: Backend::Gpu,
                gpu: Some(ctx),
                fallback: None,
            })
        }
        BackendChoice::Auto => match gpu::open() {
            Ok(ctx) => Ok(Selected {
                backend: Backend::Gpu,
                gpu: Some(ctx),
                fallback: None,
            }),
            Err(e) => Ok(simulator(Some(format!(
                "{e}; verifying on the host simulator (results only, no GPU timing)"
            )))),
        },
    }
}

/// How to verify.
#[derive(Clone)]
pub struct VerifyOptions {
    pub selected: Selected,
    /// The Python that runs the original.
    pub python: PathBuf,
    /// The file to import the original from, and the function's qualified
    /// name in it.
    pub file: PathBuf,
    pub qualname: String,
    /// A captured `.npz` of the arguments, when the profiler saved one.
    pub captured: Option<PathBuf>,
    /// An `.npz` the user gave (`--inputs`); wins over `captured`.
    pub given: Option<PathBuf>,
    /// Loop iterations generated inputs aim at (`--size`).
    pub size: Option<usize>,
    /// Timed repeats (at least [`MIN_REPEATS`] on a GPU); 0 times nothing.
    pub repeats: usize,
    /// Where what the original prints on stdout is saved (appended);
    /// `None` discards it. It never reaches port's own stdout.
    pub app_output: Option<PathBuf>,
    /// PTX options; on a GPU the architecture is the device's.
    pub ptx: PtxOptions,
    /// The function's share of the profile (`total_pct`), when profiled.
    pub hotspot_pct: Option<f64>,
    /// Where to save the inputs the verification ran on, as an `.npz`
    /// `--inputs` takes back (`--save-inputs`).
    pub save_inputs: Option<PathBuf>,
    /// Told what the verification is doing as each phase starts ("running
    /// the original", …), for a progress line.
    pub progress: Option<Progress>,
    /// How long the original may run on generated inputs before they are
    /// made smaller ([`GENERATED_LIMIT_S`] by default).
    pub generated_limit: Duration,
}

/// See [`VerifyOptions::progress`].
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

impl VerifyOptions {
    fn phase(&self, what: &str) {
        if let Some(p) = &self.progress {
            p(what);
        }
    }
}

/// The fewest repeats a median is taken of.
pub const MIN_REPEATS: usize = 10;

/// The outcome of one verification (what `--json` reports).
#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    pub backend: String,
    /// `"captured"`, `"given"` or `"generated"`.
    pub inputs: String,
    pub passed: bool,
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    pub tolerance: Tolerance,
    /// What was compared: `x` (an argument after the call), `return`.
    pub compared: Vec<String>,
    /// The first difference: which output, which element, both values, and
    /// the kernels that produced it with their launch configurations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
    /// For float32 results that differ elementwise: the comparison of
    /// both float32 runs with a float64 run of the original ([`exact`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub float32_exact: Option<exact::ExactCheck>,
    /// For float64 and complex128 results that differ elementwise: the
    /// comparison of both runs with an extended-precision run of the
    /// original ([`exact`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub float64_exact: Option<exact::ExactCheck>,
    /// Seconds the original took (one call, for information).
    pub original_seconds: f64,
    /// Why these inputs cannot vouch for the program's call: it passes one
    /// array as two arguments, one of which the kernels write (set by
    /// [`Verification::called_in_place`]). The results may agree, yet
    /// nothing is verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_place: Option<String>,
    /// Arguments the program's call passed as one array (`f(a, a)`):
    /// (name, the earlier name). The original ran with one array for both
    /// and the kernels as the migrated function's wrapper runs them (a copy
    /// each, the copy-back deciding what the array holds), so the results
    /// vouch for that call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_array: Vec<(String, String)>,
    /// How generated inputs were sized, when they had to be made smaller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs_how: Option<String>,
    /// A value came back in another dtype than the original's: no more
    /// exact run can vouch for it (the mismatch says which).
    #[serde(skip)]
    pub dtype_differs: bool,
}

/// What a verification concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The kernels give the original's results (elementwise, or as close
    /// to a more exact run as the original).
    Verified,
    /// They do not.
    Mismatch,
    /// They differ, and the original does not reproduce its own results
    /// in its precision on these inputs: port cannot tell a right kernel
    /// from a wrong one. Nothing is verified.
    Inconclusive,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Mismatch => "mismatch",
            Status::Inconclusive => "inconclusive",
        }
    }
}

impl Verification {
    /// The more exact run's check, when there was one.
    pub fn exact(&self) -> Option<&exact::ExactCheck> {
        self.float32_exact.as_ref().or(self.float64_exact.as_ref())
    }

    pub fn status(&self) -> Status {
        if self.passed && self.in_place.is_some() {
            Status::Inconclusive
        } else if self.passed {
            Status::Verified
        } else if self
            .exact()
            .is_some_and(|c| c.verdict == exact::Verdict::Inconclusive)
        {
            Status::Inconclusive
        } else {
            Status::Mismatch
        }
    }

    /// Why it is not verified, in one line: the first difference, or why
    /// port cannot tell.
    pub fn reason(&self) -> Option<String> {
        match self.status() {
            Status::Verified => None,
            Status::Mismatch => self.mismatch.as_ref().map(|m| {
                let mut why = format!("results differ: {m}");
                if let Some((b, a)) = self.same_array.first() {
                    why.push_str(&format!(
                        "; the program passes one array as `{a}` and `{b}`: in place, the original may read what the call itself wrote, where the kernels (like any parallel loop) read it as it was before the call. Pass a separate array for `{b}`, or keep this call on the CPU"
                    ));
                }
                why
            }),
            Status::Inconclusive => self
                .in_place
                .clone()
                .or_else(|| self.exact().and_then(|c| c.why.clone())),
        }
    }

    /// Marks a verification on captured inputs whose call shared memory
    /// between arguments (`aliases`, as the capture recorded them) where
    /// the plan writes one of them: inputs saved one by one ran the call
    /// out of place, and an in-place call may read what it has written
    /// (a Gauss-Seidel sweep does).
    pub fn called_in_place(&mut self, plan: &KernelPlan, aliases: &[(String, String)]) {
        if self.inputs != InputOrigin::Captured.as_str() {
            return;
        }
        let written = |n: &String| plan.mutated.contains(n);
        // A pair passed as one array was run that way.
        let one = |a: &String, b: &String| {
            self.same_array
                .iter()
                .any(|(x, y)| (x == a && y == b) || (x == b && y == a))
        };
        if let Some((a, b)) = aliases
            .iter()
            .find(|(a, b)| (written(a) || written(b)) && !one(a, b))
        {
            self.in_place = Some(format!(
                "the program calls `{}` with `{a}` and `{b}` overlapping in memory (one a view of the other), and the kernels write one of them: port verified them on separate copies, which does not vouch for that call; verify with separate arrays (`--inputs`) or call it out of place",
                plan.function
            ));
        }
    }
}

/// Everything one verification found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub verification: Verification,
    pub timing: Timing,
    pub projection: Projection,
    pub device: DeviceInfo,
    pub bandwidth: Option<Bandwidth>,
    /// The launches of the verified run, in order.
    pub launches: Vec<Launch>,
    /// The library steps the verified run computed on the host.
    pub host_calls: Vec<HostCall>,
}

/// The tolerance for this plan's results.
pub fn tolerance(plan: &KernelPlan) -> Tolerance {
    if plan.fp32 {
        return compare::FP32_LOWERED;
    }
    let f32_args = plan
        .params
        .iter()
        .any(|p| p.ty.elem().component() == ScalarType::F32 && p.ty.is_array());
    // A value the kernels hold in float32 (Numba's `locals={"acc":
    // float32}`), whatever the arguments: float32's digits, in another
    // order of summation.
    let f32_locals = plan.module.kernels.iter().any(|k| {
        port_codegen::ir::any_stmt(&k.body, &|s| {
            matches!(
                s,
                port_codegen::ir::Stmt::Let {
                    ty: ScalarType::F32,
                    ..
                }
            )
        })
    });
    if f32_args || f32_locals || plan.ufunc_outputs.contains(&ScalarType::F32) {
        compare::FLOAT32
    } else {
        compare::FLOAT64
    }
}

/// The inputs to try for this verification, in order: the given or
/// captured ones alone, else the generated candidates
/// ([`inputs::candidates`]).
fn prepare_inputs(
    plan: &KernelPlan,
    opts: &VerifyOptions,
    work: &std::path::Path,
    input_dir: &std::path::Path,
) -> Result<Vec<Inputs>, VerifyError> {
    let names: Vec<String> = plan.params.iter().map(|p| p.name.clone()).collect();
    let npz = opts
        .given
        .as_ref()
        .map(|p| (p, InputOrigin::Given))
        .or_else(|| opts.captured.as_ref().map(|p| (p, InputOrigin::Captured)));
    Ok(match npz {
        Some((npz, origin)) => {
            original::unpack_capture(&opts.python, npz, &names, work, input_dir)?;
            let mut i = inputs::read(input_dir, origin)?;
            i.origin = origin;
            vec![i]
        }
        None => inputs::candidates(plan, opts.size),
    })
}

/// How the original is called: as the program calls it, on the arguments
/// as they are, except a scalar function (a ufunc plan whose arguments are
/// all scalars: its inputs are arrays of them), which only
/// `np.vectorize` can apply to arrays. A ufunc plan given arrays is called
/// on the whole arrays.
pub fn original_call(plan: &KernelPlan) -> original::Call {
    match plan.kind {
        PlanKind::Kernels => original::Call::Whole,
        PlanKind::Ufunc if plan.params.iter().all(|p| !p.ty.is_array()) => original::Call::Scalars,
        PlanKind::Ufunc => original::Call::Elementwise,
    }
}

/// How long the original's timed calls may take in all, on a GPU: its
/// median is the baseline of the speedups.
pub const GPU_CPYTHON_BUDGET_S: f64 = 30.0;
/// The same on the simulator, where nothing is compared with it: the time
/// is reported, but a function that takes a second should not make
/// `port migrate` wait half a minute for a figure no speedup uses.
pub const SIM_CPYTHON_BUDGET_S: f64 = 3.0;

/// How the original is timed: `--repeats` calls, within the budget of the
/// backend that runs the kernels.
fn cpython_timing(opts: &VerifyOptions) -> original::Timed {
    let on_gpu = opts.selected.backend == Backend::Gpu && opts.selected.gpu.is_some();
    original::Timed {
        repeats: opts.repeats,
        budget_s: if on_gpu {
            GPU_CPYTHON_BUDGET_S
        } else {
            SIM_CPYTHON_BUDGET_S
        },
        limit: None,
    }
}

/// How long the original may run (its warm-up and timed calls) on
/// generated inputs before they are made smaller: sizes come from the
/// plan's loops, and a Python loop the plan runs on the host can make them
/// cost minutes.
pub const GENERATED_LIMIT_S: u64 = 20;
/// How many fewer loop iterations each smaller try is generated for.
const SHRINK: usize = 64;
/// How many times generated inputs are made smaller.
const SHRINKS: usize = 2;

/// Runs the original on the first of `tries` it accepts. Generated inputs
/// that make it raise give way to the next shapes; when it raises on all,
/// the error shows the first exception (from the shapes the function's
/// own indexing asked for).
fn run_original_on(
    plan: &KernelPlan,
    opts: &VerifyOptions,
    tries: Vec<Inputs>,
    work: &std::path::Path,
    input_dir: &std::path::Path,
) -> Result<(Inputs, original::OriginalRun), VerifyError> {
    let otypes: Vec<&str> = plan.ufunc_outputs.iter().map(|t| dtype_name(*t)).collect();
    let mut first_error = None;
    let mut tries = tries;
    let mut budget = opts.size.unwrap_or(inputs::DEFAULT_BUDGET);
    for shrunk in 0..=SHRINKS {
        let mut timed_out = false;
        for mut inputs in tries {
            let generated = inputs.origin == InputOrigin::Generated;
            opts.phase(&format!(
                "running the original on the {} inputs",
                inputs.origin.as_str()
            ));
            // The ufunc's output types are part of the manifest.
            inputs::write(input_dir, &inputs, &otypes, &plan.literals)?;
            let timed = original::Timed {
                limit: generated.then_some(opts.generated_limit),
                ..cpython_timing(opts)
            };
            match original::run_original(
                &opts.python,
                &opts.file,
                &opts.qualname,
                input_dir,
                work,
                original_call(plan),
                timed,
                opts.app_output.as_deref(),
            ) {
                Ok(run) => {
                    if shrunk > 0 {
                        inputs.how = Some(format!(
                            "generated for about {budget} loop iterations: {} times larger ran past {} s",
                            SHRINK.pow(shrunk as u32),
                            opts.generated_limit.as_secs_f64()
                        ));
                    }
                    return Ok((inputs, run));
                }
                Err(VerifyError::OriginalFailed(m)) if generated => {
                    first_error.get_or_insert(m);
                }
                Err(VerifyError::TimedOut(_)) if generated && shrunk < SHRINKS => {
                    timed_out = true;
                    break;
                }
                Err(VerifyError::TimedOut(m)) if generated => {
                    return Err(VerifyError::OriginalFailedOnGenerated(format!(
                        "the original runs past {} s even on inputs generated for {budget} loop iterations ({m})",
                        opts.generated_limit.as_secs_f64()
                    )))
                }
                Err(e) => return Err(e),
            }
        }
        if !timed_out {
            break;
        }
        budget = (budget / SHRINK).max(1);
        tries = inputs::candidates(plan, Some(budget));
    }
    Err(VerifyError::OriginalFailedOnGenerated(
        first_error.unwrap_or_default(),
    ))
}

/// Compares the kernels' run with the original's.
fn compare_runs(
    plan: &KernelPlan,
    orig: &original::OriginalRun,
    ours: &exec::KernelRun,
    backend: Backend,
    inputs: &Inputs,
) -> Verification {
    let tol = tolerance(plan);
    let mut v = Verification {
        backend: backend.as_str().into(),
        inputs: inputs.origin.as_str().into(),
        passed: true,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        tolerance: tol,
        compared: Vec::new(),
        mismatch: None,
        float32_exact: None,
        float64_exact: None,
        original_seconds: orig.seconds,
        in_place: None,
        same_array: inputs.same.clone(),
        inputs_how: inputs.how.clone(),
        dtype_differs: false,
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
            let several = e.len() > 1;
            for (k, (e, a)) in e.iter().zip(a).enumerate() {
                let what = if several {
                    format!("return value {k}")
                } else {
                    "return value".to_string()
                };
                // A value that is right in another dtype is not the
                // program's: `np.power` of int64s returned as float64.
                if e.elem() != a.elem() && v.mismatch.is_none() {
                    v.passed = false;
                    v.dtype_differs = true;
                    v.mismatch = Some(format!(
                        "{what}: the original gives {}, the kernels {}",
                        dtype_name(e.elem()),
                        dtype_name(a.elem())
                    ));
                }
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
    if let Some(m) = v.mismatch.as_mut() {
        let launched: Vec<String> = ours.launches.iter().map(ToString::to_string).collect();
        m.push_str(&format!(" — from kernel(s) {}", launched.join(", ")));
    }
    v
}

/// The name of an output in a report: `` `x` `` (an argument after the
/// call), `return value`, `return value 1`.
fn output_name(plan: &KernelPlan, output: Output, returns: usize) -> String {
    match output {
        Output::Arg(k) => format!("`{}`", plan.params[k].name),
        Output::Return(k) if returns > 1 || k > 0 => format!("return value {k}"),
        Output::Return(_) => "return value".to_string(),
    }
}

/// One output both runs give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Arg(usize),
    Return(usize),
}

/// How much longer than the original's float64 call its extended-precision
/// run may take, and at least how long: `np.longdouble` has no BLAS, so a
/// matrix product runs one to three orders of magnitude slower (NPBench's
/// BiCGSTAB at 2048x2048: 30 times).
pub const EXTENDED_TIME_FACTOR: f64 = 200.0;
/// See [`EXTENDED_TIME_FACTOR`].
pub const EXTENDED_MIN_SECONDS: f64 = 60.0;

/// The outputs the original and the kernels both give, in order; `None`
/// when they return a different number of values (a wrong kernel as it is,
/// with nothing for a second opinion to weigh).
fn common_outputs(
    plan: &KernelPlan,
    orig: &original::OriginalRun,
    ours: &exec::KernelRun,
) -> Option<Vec<Output>> {
    let mut out: Vec<Output> = (0..plan.params.len())
        .filter(|&k| {
            matches!(
                (orig.args.get(k), ours.args.get(k)),
                (Some(Some(_)), Some(Some(_)))
            )
        })
        .map(Output::Arg)
        .collect();
    match (&orig.returns, &ours.returns) {
        (None, None) => {}
        (Some(x), Some(y)) if x.len() == y.len() => out.extend((0..x.len()).map(Output::Return)),
        _ => return None,
    }
    Some(out)
}

/// Output `o` of a run that left `args` and returned `returns`.
fn output_of<'a>(
    args: &'a [Option<npy::NdArray>],
    returns: Option<&'a Vec<npy::NdArray>>,
    o: Output,
) -> Option<&'a npy::NdArray> {
    match o {
        Output::Arg(k) => args.get(k).and_then(Option::as_ref),
        Output::Return(k) => returns.and_then(|r| r.get(k)),
    }
}

/// The precision a mismatch is judged in, from the comparison's tolerance:
/// float32 results against a float64 run, float64 (and complex128) ones
/// against an extended-precision run; `--fp32` (float64 judged at float32's
/// rounding) gets none.
fn precision_of(tol: Tolerance) -> Option<exact::Precision> {
    if tol == compare::FLOAT32 {
        Some(exact::Precision::Float32)
    } else if tol == compare::FLOAT64 {
        Some(exact::Precision::Float64)
    } else {
        None
    }
}

/// The original once more, more exactly: on the inputs widened to float64
/// (float32 results), or in extended precision (float64 results). `Err`
/// says why there is no such run. Gives the run and what it was run in.
fn more_exact_run(
    plan: &KernelPlan,
    opts: &VerifyOptions,
    inputs: &Inputs,
    precision: exact::Precision,
    original_seconds: f64,
) -> Result<Result<(original::OriginalRun, String), String>, VerifyError> {
    let work = port_reaper::temp_dir()
        .map_err(|e| VerifyError::Io("temporary folder".into(), e.to_string()))?;
    let dir = work.path().join("inputs-exact");
    let otypes: Vec<&str> = plan.ufunc_outputs.iter().map(|t| dtype_name(*t)).collect();
    let failed = |e: VerifyError, how: &str| match e {
        VerifyError::OriginalFailed(m) => format!("the original fails {how}: {m}"),
        VerifyError::TimedOut(m) => {
            let limit = format!(
                "{EXTENDED_TIME_FACTOR}x its float64 time, at least {EXTENDED_MIN_SECONDS} s"
            );
            format!("the original's run {how} was {m} ({limit}: np.longdouble has no BLAS)")
        }
        other => format!("the original could not run {how}: {other}"),
    };
    // float32 results of float64 inputs (a float32 the function declares,
    // Numba's `locals=`): the extended-precision run is the more exact one.
    let wide = match precision {
        exact::Precision::Float32 => exact::widen(inputs),
        exact::Precision::Float64 => None,
    };
    Ok(match wide {
        Some(wide) => {
            inputs::write(&dir, &wide, &otypes, &plan.literals)?;
            original::run_original(
                &opts.python,
                &opts.file,
                &opts.qualname,
                &dir,
                work.path(),
                original_call(plan),
                original::Timed::NOT,
                None,
            )
            .map(|run| (run, "float64".to_string()))
            .map_err(|e| failed(e, "on its inputs widened to float64"))
        }
        None => {
            inputs::write(&dir, inputs, &otypes, &plan.literals)?;
            let limit = (EXTENDED_TIME_FACTOR * original_seconds).max(EXTENDED_MIN_SECONDS);
            original::run_original_extended(
                &opts.python,
                &opts.file,
                &opts.qualname,
                &dir,
                work.path(),
                original_call(plan),
                std::time::Duration::from_secs_f64(limit),
            )
            .map(|run| {
                let bits = run.extended.as_ref().map_or(0, |x| x.significand_bits);
                (run, format!("np.longdouble, {bits}-bit significand"))
            })
            .map_err(|e| failed(e, "in extended precision (np.longdouble)"))
        }
    })
}

/// A floating-point mismatch gets a second opinion from a more exact run
/// of the original ([`exact`]): float32 results are judged against the
/// original on their inputs widened to float64, float64 and complex128
/// ones against the original in extended precision. When it passes, or
/// cannot tell (the original does not reproduce itself), the elementwise
/// first difference moves into the check; when it fails, or there is no
/// more exact run (the check says why), the mismatch stands.
fn second_opinion(
    plan: &KernelPlan,
    opts: &VerifyOptions,
    inputs: &Inputs,
    orig: &original::OriginalRun,
    ours: &exec::KernelRun,
    v: &mut Verification,
) -> Result<(), VerifyError> {
    if v.passed || v.dtype_differs {
        return Ok(());
    }
    let Some(precision) = precision_of(v.tolerance) else {
        return Ok(());
    };
    let Some(outputs) = common_outputs(plan, orig, ours) else {
        return Ok(());
    };
    opts.phase("checking against a more precise run of the original");
    let check = match more_exact_run(plan, opts, inputs, precision, orig.seconds)? {
        Err(why) => Some(exact::ExactCheck::unavailable(precision, why)),
        Ok((exact_run, reference)) => {
            let n_returns = orig.returns.as_ref().map_or(0, Vec::len);
            // An output that came back in float64 from the extended run
            // was computed in a dtype the function fixes itself: that run
            // is no more exact than the original.
            let narrow = exact_run.extended.as_ref().and_then(|x| {
                outputs.iter().copied().find(|&o| {
                    let floating = output_of(&orig.args, orig.returns.as_ref(), o)
                        .is_some_and(|a| a.elem().is_float() || a.elem().is_complex());
                    let wider = match o {
                        Output::Arg(k) => x.wider_args.get(k).copied().flatten(),
                        Output::Return(k) => x.wider_returns.get(k).copied(),
                    };
                    floating && wider != Some(true)
                })
            });
            match narrow {
                Some(o) => Some(exact::ExactCheck::unavailable(
                    precision,
                    format!(
                        "{} stays float64 when the original runs in extended precision (np.longdouble): the function fixes its dtype itself (`np.zeros(n)`, `dtype=np.float64`, `.astype(...)`), so that run is no more exact than the original",
                        output_name(plan, o, n_returns)
                    ),
                )),
                None => {
                    let all = |args, returns| -> Vec<_> {
                        outputs
                            .iter()
                            .map(|&o| output_of(args, returns, o))
                            .collect()
                    };
                    exact::judge(
                        precision,
                        &reference,
                        &all(&exact_run.args, exact_run.returns.as_ref()),
                        &all(&orig.args, orig.returns.as_ref()),
                        &all(&ours.args, ours.returns.as_ref()),
                    )
                }
            }
        }
    };
    let Some(mut c) = check else {
        return Ok(());
    };
    match c.verdict {
        exact::Verdict::Passed => {
            v.passed = true;
            c.elementwise = v.mismatch.take();
        }
        exact::Verdict::Inconclusive => c.elementwise = v.mismatch.take(),
        exact::Verdict::Failed | exact::Verdict::Unavailable => {}
    }
    match precision {
        exact::Precision::Float32 => v.float32_exact = Some(c),
        exact::Precision::Float64 => v.float64_exact = Some(c),
    }
    Ok(())
}

fn traffic(run: &exec::KernelRun, inputs: &Inputs) -> timing::Traffic {
    let elements = inputs
        .values
        .iter()
        .map(|(_, v)| match v {
            inputs::InputValue::Array(a) => a.len(),
            inputs::InputValue::Scalar(..) | inputs::InputValue::Complex(..) => 1,
        })
        .max()
        .unwrap_or(0);
    timing::Traffic {
        bytes_to_device: run.bytes_to_device,
        bytes_to_host: run.bytes_to_host,
        launches: run.launch_count(),
        library_calls: run.library_calls,
        device_bytes: run.launches.iter().map(|l| l.array_bytes).sum(),
        elements,
    }
}

fn seconds_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Runs the original and the kernels on the same inputs, compares them, and
/// on a GPU times both.
pub fn verify_plan(plan: &KernelPlan, opts: &VerifyOptions) -> Result<Outcome, VerifyError> {
    let work = port_reaper::temp_dir()
        .map_err(|e| VerifyError::Io("temporary folder".into(), e.to_string()))?;
    let input_dir = work.path().join("inputs");
    let tries = prepare_inputs(plan, opts, work.path(), &input_dir)?;
    let (inputs, orig) = run_original_on(plan, opts, tries, work.path(), &input_dir)?;
    if let Some(npz) = &opts.save_inputs {
        // The inputs chosen are the ones left in `input_dir`.
        original::pack_inputs(&opts.python, &input_dir, work.path(), npz)?;
    }
    let mut cpython_times = orig.times.clone();
    let cpython_s = timing::median(&mut cpython_times);
    let repeats_cpython = (!orig.times.is_empty()).then_some(orig.times.len() as u64);
    let cpython = timing::CpythonCall {
        via: Some(orig.via),
        calls: orig.calls,
        why_vectorized: orig.why_vectorized.clone(),
    };

    match (&opts.selected.backend, &opts.selected.gpu) {
        (Backend::Gpu, Some(ctx)) => {
            let ctx = ctx.clone();
            gpu_no_panic(|| {
                on_gpu(
                    plan,
                    opts,
                    &ctx,
                    &inputs,
                    &orig,
                    (cpython_s, cpython),
                    repeats_cpython,
                )
            })
        }
        _ => {
            let t = Instant::now();
            compile_ptx(&plan.module, &opts.ptx)
                .map_err(|e| VerifyError::BadPlan(e.to_string()))?;
            let compile_s = seconds_since(t);
            opts.phase("running the kernels on the host simulator");
            let mut dev = simulator::SimDevice::new(plan)?;
            let t = Instant::now();
            let ours = exec::run_plan(plan, &inputs, &mut dev, exec::Outputs::All)?;
            let simulator_s = seconds_since(t);
            let mut verification = compare_runs(plan, &orig, &ours, Backend::Simulator, &inputs);
            second_opinion(plan, opts, &inputs, &orig, &ours, &mut verification)?;
            let timing = Timing {
                compile_s: Some(compile_s),
                cpython_s,
                simulator_s: Some(simulator_s),
                cpython_call: Some(cpython),
                repeats: Some(timing::Repeats {
                    cpython: repeats_cpython,
                    ..Default::default()
                }),
                ..Timing::default()
            }
            .with_speedups();
            let projection =
                timing::project(opts.hotspot_pct, &timing, traffic(&ours, &inputs), None);
            Ok(Outcome {
                verification,
                timing,
                projection,
                device: DeviceInfo::simulator(),
                bandwidth: None,
                launches: ours.launches,
                host_calls: ours.host_calls,
            })
        }
    }
}

/// cudarc panics in a few driver states; a panic becomes an error line.
fn gpu_no_panic<T>(f: impl FnOnce() -> Result<T, VerifyError>) -> Result<T, VerifyError> {
    gpu::catch_panic(f).unwrap_or_else(|m| {
        Err(VerifyError::Cuda(format!(
            "the CUDA driver library panicked: {m}"
        )))
    })
}

/// The PTX architecture for a device of compute capability `cc` ("9.0"):
/// the newest port supports not above it.
fn arch_for(cc: Option<&str>, fallback: Arch) -> Arch {
    let Some((major, minor)) = cc.and_then(|c| c.split_once('.')) else {
        return fallback;
    };
    let (Ok(major), Ok(minor)) = (major.parse::<u32>(), minor.parse::<u32>()) else {
        return fallback;
    };
    let n = major * 10 + minor;
    Arch::SUPPORTED
        .iter()
        .rev()
        .find(|&&s| s <= n)
        .and_then(|s| Arch::parse(&format!("sm_{s}")).ok())
        .unwrap_or(fallback)
}

fn on_gpu(
    plan: &KernelPlan,
    opts: &VerifyOptions,
    ctx: &Arc<CudaContext>,
    inputs: &Inputs,
    orig: &original::OriginalRun,
    (cpython_s, cpython_call): (Option<f64>, timing::CpythonCall),
    repeats_cpython: Option<u64>,
) -> Result<Outcome, VerifyError> {
    let device = gpu::info(ctx)?;
    let ptx_opts = PtxOptions {
        arch: arch_for(device.compute_capability.as_deref(), opts.ptx.arch),
        debug: false,
        ..opts.ptx.clone()
    };
    // Compilation: IR → PTX, and the driver loading it. Timed apart.
    let t = Instant::now();
    let ptx =
        compile_ptx(&plan.module, &ptx_opts).map_err(|e| VerifyError::BadPlan(e.to_string()))?;
    let mut dev = gpu::GpuDevice::new(ctx, &plan.module, &ptx, device.sms.unwrap_or(1))?;
    let compile_s = seconds_since(t);

    // The verified run: synchronized after each launch, so that a fault
    // names its kernel. It is also the first warm-up.
    dev.sync_each_launch = true;
    opts.phase("running the kernels on the GPU");
    let ours = exec::run_plan(plan, inputs, &mut dev, exec::Outputs::All)?;
    let mut verification = compare_runs(plan, orig, &ours, Backend::Gpu, inputs);
    second_opinion(plan, opts, inputs, orig, &ours, &mut verification)?;
    let mut timing = Timing {
        compile_s: Some(compile_s),
        cpython_s,
        cpython_call: Some(cpython_call),
        repeats: Some(timing::Repeats {
            cpython: repeats_cpython,
            ..Default::default()
        }),
        ..Timing::default()
    };
    let mut bandwidth = None;
    let mut h2d = None;
    if verification.passed && opts.repeats > 0 {
        opts.phase("timing the kernels on the GPU");
        // One more warm-up as timed runs go (no per-launch sync), then the
        // timed repeats: end to end on the host clock after a synchronize
        // (host arrays in, what the wrapper returns back); then the kernels
        // alone with events, their inputs already on the device and
        // restored there before each run, nothing copied back but what the
        // host schedule reads: host copies between timed kernels would let
        // the GPU idle (and clock down) between them.
        dev.sync_each_launch = false;
        exec::run_plan(plan, inputs, &mut dev, exec::Outputs::Wrapper)?;
        dev.synchronize()?;
        let repeats = opts.repeats.max(MIN_REPEATS);
        let (mut e2e, mut kernel) = (Vec::new(), Vec::new());
        for _ in 0..repeats {
            let t = Instant::now();
            exec::run_plan(plan, inputs, &mut dev, exec::Outputs::Wrapper)?;
            dev.synchronize()?;
            e2e.push(seconds_since(t));
        }
        dev.keep_inputs_on_device();
        exec::run_plan(plan, inputs, &mut dev, exec::Outputs::Returns)?;
        let mut bytes = 0;
        for _ in 0..repeats {
            dev.rewind_inputs();
            dev.synchronize()?;
            dev.start_timing();
            let run = exec::run_plan(plan, inputs, &mut dev, exec::Outputs::Returns)?;
            kernel.push(dev.kernel_seconds()?);
            bytes = run.launches.iter().map(|l| l.array_bytes).sum();
        }
        timing.kernel_s = timing::median(&mut kernel);
        timing.end_to_end_s = timing::median(&mut e2e);
        let counts = timing.repeats.get_or_insert_with(Default::default);
        counts.kernel = Some(repeats as u64);
        counts.end_to_end = Some(repeats as u64);
        h2d = Some(gpu::host_to_device_bandwidth(dev.stream())?);
        bandwidth = timing.kernel_s.and_then(|k| {
            timing::bandwidth(
                bytes,
                k,
                device.peak_bandwidth_gb_s,
                gpu::memory_bound(&plan.module),
            )
        });
    }
    let timing = timing.with_speedups();
    let mut projection = timing::project(opts.hotspot_pct, &timing, traffic(&ours, inputs), h2d);
    match verification.status() {
        Status::Verified => {}
        Status::Mismatch => {
            projection.why =
                Some("not timed: the kernels' results differ from the original's".into());
        }
        Status::Inconclusive => {
            projection.why = Some("not timed: the kernels' results differ from the original's, which does not reproduce itself on these inputs".into());
        }
    }
    Ok(Outcome {
        verification,
        timing,
        projection,
        device,
        bandwidth,
        launches: ours.launches,
        host_calls: ours.host_calls,
    })
}
