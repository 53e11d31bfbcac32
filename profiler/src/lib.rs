//! The profiler: runs the user's Python program under py-spy's sampler,
//! aggregates samples by function and line, records sampled caller→callee
//! edges, and captures real argument types and one input snapshot per hot
//! function.
//!
//! # How a profile is made
//!
//! 1. **Sampled run.** [`profile`] starts `python APP ARGS` with the user's own
//!    stdin and stderr, and stdout where [`ProfileOptions::app_output`] says
//!    (the user's own by default; stderr or a file when port's own stdout
//!    carries JSON), and py-spy (as a library) reads every thread's
//!    stack `rate_hz` times a second, on py-spy's jittered timer, until the
//!    app exits, `duration` runs out, or the stop signal (Ctrl-C by default)
//!    is raised. Then the app and its descendants get SIGTERM and, 2 s later,
//!    SIGKILL, and what was sampled is still returned. Each process is sampled
//!    by its own thread; with `subprocesses`, child processes are found through
//!    `/proc` every 50 ms and sampled too. Idle threads are skipped unless
//!    `idle`. Stacks are read without pausing the app (py-spy's non-blocking
//!    mode): the app runs at full speed, and py-spy's pausing mode would reap
//!    the app behind our back when it exits mid-read and lose its exit status.
//!    The price is an occasional torn read: a failed read is retried at once,
//!    and a frame lost now and then is why single-sample edges are dropped.
//! 2. **Aggregation** ([`aggregate`], pure): a sample's self time goes to its
//!    innermost frame in the app's own files, so time inside NumPy counts
//!    toward the app function and line that called it; total time counts a
//!    function once per sample even under recursion. A [`FrameResolver`]
//!    decides which files are the app's and which function a frame is in; the
//!    analyzer implements it, [`AppDirResolver`] is the stand-alone default.
//! 3. **Capture, in the same run** (unless `capture` is off): the app is
//!    started as `python -c BOOTSTRAP APP ARGS` (`src/capture_helper.py`,
//!    `include_str!`), which runs the app as the real `__main__` with the same
//!    argv, `sys.path[0]`, exit status and traceback; the sampler drops the
//!    bootstrap's root frame. The first call of each function in the app's
//!    directory is recorded: argument types (ndarray dtype, ndim, shape,
//!    contiguity; scalar types; other type names), the inputs as an `.npz`
//!    and, when the call returns, the return value's type (and which argument
//!    it is, if it is one), into `capture_dir` (nothing after the call is
//!    saved: verification runs the original again on the inputs), rewriting `manifest.json` (`"schema": "port-capture/3"`)
//!    after each, so a crash or `os._exit` keeps what was captured. A call that
//!    raises is retried on the next call, up to three. How a first call is
//!    caught costs nothing once it is: on Python 3.12+ a `sys.monitoring` start
//!    event disabled per code object once it is captured; before 3.12 no hook at
//!    all (a trace function would slow every frame of the run): the bootstrap
//!    compiles the app's files (the main file, and its local modules through an
//!    import finder; never to or from `__pycache__`) with an innermost decorator
//!    on each function that swaps its `__code__` for a trampoline with the same
//!    signature, file and first line. The first call puts the original code back
//!    (every later call, through any alias or decorator, runs it directly),
//!    records, and runs the call; the trampoline is out of tracebacks, and the
//!    sampler drops its frame. Functions handed to a JIT (a decorator or a call
//!    naming Numba's) keep their code. There is no time budget: a function
//!    first called at the end of the run is captured. All files stay under
//!    `capture_cap_bytes` ([`DEFAULT_CAPTURE_CAP_BYTES`], 256 MiB); arguments
//!    that do not fit are skipped, the capture is marked `truncated` and a
//!    warning says so. After the run only the captures of the hottest named app
//!    functions are kept (at most `capture_functions`, each with at least 1%
//!    self time; module bodies, lambdas and comprehensions are skipped) and the
//!    others' files are removed. With `capture_hints` (a file `port analyze`
//!    writes from its static pass while the app starts), a function marked as
//!    not worth saving keeps only its types, and an array its function never
//!    reads is described (member `__port_blank__` of the `.npz`), not saved.
//!    An array an earlier capture of the run saved, unchanged since, is not
//!    saved again: member `__port_ref__` names that file and member.
//!    Without NumPy in the interpreter, types are
//!    still recorded and a warning says inputs were not. Capture problems are
//!    warnings, never errors.
//!
//! # Errors
//!
//! Faults the user can cause (missing app or interpreter, no permission to
//! sample, an app that dies before the first sample) are [`ProfileError`]s
//! whose `Display` is one line with what to do. An app that exits non-zero or
//! is killed by a signal after some sampling is not an error: the profile
//! records it in [`Profile::exit`].
//!
//! Linux only (py-spy's process access and `/proc`).
//!
//! Architecture invariant: this crate knows nothing of the analyzer; the
//! dependency goes the other way, through [`FrameResolver`].

pub mod aggregate;
pub mod capture;
mod child;
pub mod error;
pub mod export;
pub mod interrupt;
pub mod model;
pub mod options;
pub mod progress;
pub mod resolver;
mod sampler;
mod source;

use std::path::PathBuf;
use std::time::Instant;

pub use error::ProfileError;
pub use export::{write_flamegraph, write_speedscope};
pub use interrupt::StopSignal;
pub use model::{
    AppExit, ArgKind, ArgType, Capture, CollapsedStack, FunctionHotspot, LineHotspot, Profile,
    SampledEdge, StackFrame,
};
pub use options::{
    resolve_python, AppOutput, ProfileOptions, DEFAULT_CAPTURE_CAP_BYTES, DEFAULT_CAPTURE_FUNCTIONS,
};
pub use progress::{Phase, ProgressTick};
pub use resolver::{AppDirResolver, FrameResolver};

/// How many of the hottest functions get per-line detail.
pub const LINE_DETAIL_FUNCTIONS: usize = 10;

/// Runs the app once under the sampler (with `capture`, under the capture
/// hook too) and returns the profile. `progress` is called about ten times a
/// second from the calling thread.
pub fn profile(
    opts: &ProfileOptions,
    resolver: &dyn FrameResolver,
    progress: &dyn Fn(ProgressTick),
) -> Result<Profile, ProfileError> {
    if !(1..=10_000).contains(&opts.rate_hz) {
        return Err(ProfileError::BadRate(opts.rate_hz));
    }
    let app = checked_app(&opts.app)?;
    // A bare name ("python3") is looked up on PATH; a path is made absolute so
    // the capture run finds it whatever the app does to its directory.
    let python = if opts.python.components().count() > 1 {
        options::absolute(&opts.python)
    } else {
        opts.python.clone()
    };
    let (stop, _ctrl_c_scope) = match &opts.stop {
        Some(s) => (s.clone(), None),
        None => {
            let stop = StopSignal::ctrl_c()?;
            let scope = interrupt::CtrlCScope::enter(&stop);
            (stop, Some(scope))
        }
    };
    stop.reset();

    // Capture happens in this one run: the app is started through the
    // capture bootstrap, which installs its hook and runs the app as __main__.
    let mut injection = None;
    let mut capture_dir = None;
    let mut early_warnings = Vec::new();
    if opts.capture {
        let dir = options::absolute(&opts.capture_dir);
        match capture::prepare(&capture::CaptureRequest {
            app: &app,
            dir: &dir,
            cap_bytes: opts.capture_cap_bytes,
            hints: opts.capture_hints.as_deref().map(options::absolute),
        })? {
            Ok(i) => {
                injection = Some(i);
                capture_dir = Some(dir);
            }
            Err(w) => early_warnings.push(w),
        }
    }
    let (leading, env) = match injection {
        Some(i) => (i.leading, i.env),
        None => (Vec::new(), Vec::new()),
    };

    let started = Instant::now();
    let mut child = child::spawn(
        &python,
        &leading,
        &app,
        &opts.args,
        &env,
        child::Streams::Inherit,
        &opts.app_output,
    )?;
    // Ended if port panics. (It stays in the terminal's process group:
    // an app that reads the terminal must be able to.)
    let _registered = port_reaper::child(child.id());
    let settings = sampler::SamplerSettings {
        rate_hz: opts.rate_hz,
        idle: opts.idle,
        subprocesses: opts.subprocesses,
        duration: opts.duration,
        stop: stop.clone(),
    };
    let run = sampler::sample(&mut child, started, &settings, progress)?;

    let failed = run.exit.code.is_some_and(|c| c != 0) || run.exit.signal.is_some();
    if run.samples.total() == 0 && failed && !run.exit.interrupted && !run.exit.timed_out {
        return Err(ProfileError::AppFailedEarly {
            app: opts.app.clone(),
            exit: run.exit,
        });
    }

    let agg = aggregate::aggregate(&run.samples, resolver, LINE_DETAIL_FUNCTIONS);
    let mut sources = source::SourceCache::default();
    let mut lines = agg.lines;
    for l in &mut lines {
        l.source = sources.line(&l.file, l.line);
    }

    let mut warnings = early_warnings;
    warnings.extend(run.warnings);
    if run.samples.total() == 0 {
        warnings.push(format!(
            "no samples were taken: the app ran for {:.2} s; raise --rate or give it more work",
            run.wall.as_secs_f64()
        ));
    } else if agg.unattributed == agg.samples {
        warnings.push(
            "no sample was in the app's own files: its time was all in libraries or start-up"
                .to_string(),
        );
    }

    let mut profile = Profile {
        samples: agg.samples,
        unattributed_samples: agg.unattributed,
        duration_s: run.wall.as_secs_f64(),
        rate_hz: opts.rate_hz,
        python: opts.python.clone(),
        python_version: run.python_version,
        exit: run.exit,
        processes_sampled: run.processes_sampled,
        functions: agg.functions,
        lines,
        edges: agg.edges,
        stacks: agg.stacks,
        capture: opts.capture,
        captures: Vec::new(),
        warnings,
    };

    if let Some(dir) = capture_dir {
        let targets = capture::pick_targets(&profile.functions, opts.capture_functions);
        let outcome = capture::collect(&dir, &targets, resolver);
        profile.captures = outcome.captures;
        profile.warnings.extend(outcome.warnings);
    }
    Ok(profile)
}

/// The app as an absolute, existing file path.
fn checked_app(app: &std::path::Path) -> Result<PathBuf, ProfileError> {
    let meta = std::fs::metadata(app).map_err(|_| ProfileError::AppNotFound(app.to_path_buf()))?;
    if meta.is_dir() {
        return Err(ProfileError::AppIsDirectory(app.to_path_buf()));
    }
    Ok(app
        .canonicalize()
        .unwrap_or_else(|_| options::absolute(app)))
}
