//! `port analyze`: classify every function of a program, statically or (with
//! the profiler) weighted by where a real run spends its time.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use port_analyzer::{analyze, Analysis, AnalyzeOptions};
use port_profiler::{resolve_python, AppDirResolver, FrameResolver, ProfileOptions};
use port_reports::terminal;

use crate::profile_merge::{captured_types, merge, AnalysisResolver, DeferredResolver};
use crate::state;
use crate::UserError;

/// Classify every function of a program in Numba's terms.
///
/// Without --static, port runs the program once under py-spy's sampler, ranks the hotspots by function and line,
/// captures the argument types and one real input per hot function in the
/// same run (through a hook that switches itself off), and weights coverage by
/// sampled time.
///
/// The program's own output: its stderr is yours; its stdout passes through
/// unchanged, except with --json, where it goes to stderr so that stdout
/// holds nothing but port's JSON, and with --app-output FILE, where it goes
/// to FILE.
///
/// Exit codes: 0 analysed · 2 bad input (missing file, nothing parseable,
/// no permission to sample) · 3 the program failed or was killed (the report
/// of what was sampled is still written).
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// The program: a .py script (its local imports are followed), or, with
    /// --static, a folder (every .py under it).
    pub path: PathBuf,
    /// Classify without running the program: coverage then counts functions,
    /// not time.
    #[arg(long = "static")]
    pub static_only: bool,
    /// Print the analysis as JSON on stdout (it is always written to
    /// .port/analysis.json too). stdout then holds that one JSON document:
    /// the program's own stdout goes to stderr (or to --app-output).
    #[arg(long)]
    pub json: bool,
    /// Write the profiled program's stdout to FILE instead of the terminal
    /// (default: passed through; with --json, sent to stderr).
    #[arg(long, value_name = "FILE", conflicts_with = "static_only")]
    pub app_output: Option<PathBuf>,
    /// The Python that runs the program. Default: $VIRTUAL_ENV/bin/python,
    /// else python3.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Samples per second.
    #[arg(long, default_value_t = 100, value_name = "HZ")]
    pub rate: u64,
    /// Stop sampling (and the program) after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Count samples of idle threads (waiting on locks, I/O, sleep) too.
    #[arg(long)]
    pub idle: bool,
    /// Also sample child processes (multiprocessing, subprocess).
    #[arg(long)]
    pub subprocesses: bool,
    /// Do not capture argument types and inputs (the app runs as `python APP`).
    #[arg(long)]
    pub no_capture: bool,
    /// Write a flame graph (SVG) of the samples.
    #[arg(long, value_name = "SVG")]
    pub flamegraph: Option<PathBuf>,
    /// Write the samples in speedscope's JSON format.
    #[arg(long, value_name = "JSON")]
    pub speedscope: Option<PathBuf>,
    /// Arguments passed to the program, after `--`.
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// The program ran and was sampled, but failed or was killed: exit code 3.
#[derive(Debug)]
pub struct AppFailed(pub String);

impl std::fmt::Display for AppFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AppFailed {}

/// Where a command gets its analysis from.
pub enum Source<'a> {
    /// Analyse this path statically now.
    Path(&'a Path),
    /// Read the last analysis from .port/analysis.json.
    State,
}

pub fn analysis_path() -> PathBuf {
    state::dir().join("analysis.json")
}

pub fn load_or_analyze(src: Source) -> Result<Analysis> {
    match src {
        Source::Path(p) => run_static(p),
        Source::State => port_reports::state::read_analysis(&analysis_path())
            .map_err(|e| UserError::new(e.to_string()).into()),
    }
}

/// A fresh static analysis of `path` that keeps what the last profiled run of
/// the same program learnt: its captured types (so verdicts use them) and its
/// sampled time. Commands that re-analyse (`port migrate PATH`) use it so
/// they never throw a profile away.
pub fn reanalyze_keeping_profile(path: &Path) -> Result<Analysis> {
    let same_program = |root: &str| {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        canon(Path::new(root)) == canon(path)
    };
    let profile: Option<port_profiler::Profile> = std::fs::read_to_string(analysis_path())
        .ok()
        .and_then(|t| serde_json::from_str::<Analysis>(&t).ok())
        .filter(|a| a.profiled && same_program(&a.root))
        .and_then(|a| a.profile)
        .and_then(|v| serde_json::from_value(v).ok());
    let Some(profile) = profile else {
        return run_static(path);
    };
    let opts = AnalyzeOptions {
        captured: captured_types(&profile),
    };
    let mut a =
        port_rewriter::verdicts::analyze(path, &opts).map_err(|e| UserError::new(e.to_string()))?;
    merge(&mut a, &profile);
    Ok(a)
}

fn run_static(path: &Path) -> Result<Analysis> {
    let a = port_rewriter::verdicts::analyze(path, &AnalyzeOptions::default())
        .map_err(|e| UserError::new(e.to_string()))?;
    if a.functions.is_empty() && a.files.is_empty() && !a.parse_errors.is_empty() {
        // Nothing parsed: the errors are the whole story.
        let lines: Vec<String> = a.parse_errors.iter().map(|e| e.to_string()).collect();
        return Err(UserError::new(lines.join("\n")).into());
    }
    Ok(a)
}

pub fn run(args: &AnalyzeArgs) -> Result<()> {
    if args.static_only {
        let analysis = run_static(&args.path)?;
        let done = report(args, &analysis);
        // The command ends the process: freeing a large program's tens of
        // thousands of reports one by one took a tenth of a second after
        // the output was written, for nothing (compilers skip it too).
        std::mem::forget(analysis);
        return done;
    }
    run_profiled(args)
}

fn run_profiled(args: &AnalyzeArgs) -> Result<()> {
    if args.path.is_dir() {
        return Err(UserError::new(format!(
            "{} is a folder: give the script to run (e.g. {}/main.py), or use --static to classify a folder",
            args.path.display(),
            args.path.display()
        ))
        .into());
    }
    // Nothing can be classified when the script itself does not parse: say
    // so before running it, as `--static` would.
    check_parses(&args.path)?;
    // The first static pass runs while the app does. The resolver needs its
    // functions' lines; the capture, its verdicts and unread parameters
    // (crate::capture_hints), to save only inputs a migration reads. The
    // report's pass comes after, with the captured types.
    let captures = capture_dir();
    let hints = !args.no_capture;
    if hints {
        crate::capture_hints::clear(&captures);
    }
    std::thread::scope(|scope| {
        let first = std::thread::Builder::new()
            .name("port-first-pass".into())
            .spawn_scoped(scope, || {
                background_priority();
                let a = analyze(&args.path, &AnalyzeOptions::default())?;
                if hints {
                    // The planner's answers on a thread of its own, not
                    // joined: the end of the run waits for the resolver's
                    // pass only, however long planning a large program
                    // takes. Without the file the capture saves every input.
                    let mut planned = a.clone();
                    let dir = captures.clone();
                    let _ = std::thread::Builder::new()
                        .name("port-capture-hints".into())
                        .spawn(move || {
                            port_rewriter::verdicts::apply(&mut planned);
                            let _ = crate::capture_hints::write(&planned, &dir);
                        });
                }
                Ok::<_, port_analyzer::AnalyzeError>(a)
            })
            .map_err(|e| UserError::new(format!("cannot start a thread: {e}")))?;
        let resolver = DeferredResolver::new(move || match first.join() {
            Ok(Ok(a)) => Box::new(AnalysisResolver::new(&a)) as Box<dyn FrameResolver + Send>,
            // The pass after the run meets the same error and reports it.
            _ => Box::new(AppDirResolver::for_app(&args.path)),
        });
        profile_and_report(args, &resolver)
    })
}

/// Lowers the calling thread's priority (nice 10; the threads it starts
/// inherit it): the static passes that run beside the profiled app yield
/// the cores to it, and so to the time being measured. Only ever lowered,
/// which needs no privilege; where it fails nothing changes.
fn background_priority() {
    // SAFETY: plain system calls on this thread's own id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// Where the profiled run's capture goes (`.port/captures`).
fn capture_dir() -> PathBuf {
    state::dir().join("captures")
}

/// Whether the script parses; its parse errors as one error if not.
fn check_parses(path: &Path) -> Result<()> {
    if !path.is_file() {
        // The analysis words a missing or unreadable script best.
        return run_static(path).map(|_| ());
    }
    let path = path.to_path_buf();
    // On a large stack, as the analysis parses: deeply nested source recurses.
    let parsed = std::thread::Builder::new()
        .stack_size(port_analyzer::STACK_BYTES)
        .spawn(move || port_analyzer::loader::parse_file("__main__".into(), path).map(|_| ()))
        .map_err(|e| UserError::new(format!("cannot start a thread: {e}")))?
        .join();
    match parsed {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(UserError::new(e.to_string()).into()),
        Err(_) => Err(anyhow::anyhow!("the parser failed on the script")),
    }
}

fn profile_and_report(args: &AnalyzeArgs, resolver: &dyn FrameResolver) -> Result<()> {
    let mut opts = ProfileOptions::new(resolve_python(args.python.clone()), &args.path);
    opts.args = args.args.clone();
    opts.app_output = match (&args.app_output, args.json) {
        (Some(file), _) => port_profiler::AppOutput::File(file.clone()),
        (None, true) => port_profiler::AppOutput::Stderr,
        (None, false) => port_profiler::AppOutput::Inherit,
    };
    opts.rate_hz = args.rate;
    opts.duration = match args.duration {
        Some(d) if d.is_finite() && d > 0.0 => Some(Duration::from_secs_f64(d)),
        Some(d) => {
            return Err(UserError::new(format!(
                "--duration must be a positive number of seconds, not {d}"
            ))
            .into())
        }
        None => None,
    };
    opts.idle = args.idle;
    opts.subprocesses = args.subprocesses;
    opts.capture = !args.no_capture;
    opts.capture_dir = capture_dir();
    opts.capture_hints = Some(opts.capture_dir.join(crate::capture_hints::FILE));

    let spinner = progress_spinner(args.json);
    let profile = port_profiler::profile(&opts, resolver, &|tick| {
        if let Some(s) = &spinner {
            s.set_message(tick.message());
        }
    });
    if let Some(s) = &spinner {
        s.finish_and_clear();
    }
    let profile = profile.map_err(|e| UserError::new(e.to_string()))?;

    // Classify again with the types of real calls.
    let opts = AnalyzeOptions {
        captured: captured_types(&profile),
    };
    let mut analysis = port_rewriter::verdicts::analyze(&args.path, &opts)
        .map_err(|e| UserError::new(e.to_string()))?;
    merge(&mut analysis, &profile);

    if let Some(svg) = &args.flamegraph {
        port_profiler::write_flamegraph(&profile, svg)
            .map_err(|e| UserError::new(e.to_string()))?;
    }
    if let Some(json) = &args.speedscope {
        port_profiler::write_speedscope(&profile, json)
            .map_err(|e| UserError::new(e.to_string()))?;
    }
    let held_back = crate::capture_hints::held_back(&analysis);
    for w in profile.warnings.iter().chain(&held_back) {
        eprintln!("port: warning: {w}");
    }
    report(args, &analysis)?;
    if !profile.exit.success() && !profile.exit.timed_out {
        return Err(AppFailed(format!(
            "{}; the report of the {} taken was written to {}",
            profile.exit.describe(),
            terminal::count(profile.samples as usize, "sample", "samples"),
            analysis_path().display()
        ))
        .into());
    }
    Ok(())
}

/// A spinner on stderr, only when it is a terminal and JSON is not asked for.
fn progress_spinner(json: bool) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let s = ProgressBar::new_spinner();
    s.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
    s.enable_steady_tick(Duration::from_millis(100));
    s.set_message("starting the program");
    Some(s)
}

fn report(args: &AnalyzeArgs, analysis: &Analysis) -> Result<()> {
    // Serialised once, compact (a large program's analysis runs to tens of
    // megabytes): the saved file and `--json` are the same bytes.
    let mut json = analysis.to_json()?;
    json.push(b'\n');
    state::write_atomic(&analysis_path(), &json).context("cannot save the analysis in .port/")?;
    for e in &analysis.parse_errors {
        eprintln!("{e}");
    }
    if args.json {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(&json)?;
        out.flush()?;
        crate::json_printed();
        return Ok(());
    }
    let style = crate::tty::style(true);
    println!("{}", terminal::analysis_table(analysis, style));
    if analysis.profiled {
        if let Some(lines) = terminal::hot_lines_table(analysis, style, 12) {
            println!("Hottest lines:\n{lines}");
        }
    }
    println!("{}", terminal::coverage_line(analysis));
    Ok(())
}
