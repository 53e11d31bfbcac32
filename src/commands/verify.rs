//! `port verify`: run migrated functions' kernels again — on the GPU when
//! there is one, else on the host simulator — against the original, time
//! them, and say what they are worth to the program.
//!
//! Reads `.port/migrations/*.json` and the plan each names
//! (`.port/kernels/NAME.plan.json`), runs the original from the file it was
//! migrated from (its `.port-bak` backup once `--write` replaced it), and
//! updates each migration record with the new verification, timing,
//! projection and device, so that `port report` shows the latest figures.
//!
//! Also home of what `port migrate` shares with it: the backend and timing
//! flags, backend selection, and how an outcome reads as JSON (its text is
//! `port_reports::outcome`'s, read from that JSON).
//!
//! Exit codes: 0 every function verified · 1 a mismatch or a failure (each
//! reported with its kernel and launch configuration) · 2 bad input (no
//! migrations, unknown function, `--backend gpu` without a GPU) · 5 no
//! mismatch or failure, but a verification was inconclusive (the original
//! does not reproduce itself on those inputs: see `port migrate`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use port_codegen::{Arch, PtxOptions};
use port_reports::outcome::Checked;
use port_rewriter::KernelPlan;
use port_verify::toolchain::Libdevice;
use port_verify::{
    BackendChoice, Outcome, Selected, Status, VerifyError, VerifyOptions, MIN_REPEATS,
};
use serde_json::{json, Value};

use crate::state;
use crate::UserError;

/// A migration that ended other than `verified`: already reported, exits
/// 1, or [`INCONCLUSIVE_EXIT_CODE`] when port could not tell.
#[derive(Debug)]
pub struct NotVerified {
    pub status: &'static str,
    pub exit: u8,
}

/// The exit code of an inconclusive verification: not 0, since nothing was
/// verified, and not 1, so that a script can tell "port found the kernels
/// wrong" (1) from "port cannot tell on these inputs" (5).
pub const INCONCLUSIVE_EXIT_CODE: u8 = 5;

impl NotVerified {
    /// The error for a migration or verification that ended in `status`.
    pub fn new(status: &'static str) -> NotVerified {
        let exit = if status == port_verify::Status::Inconclusive.as_str() {
            INCONCLUSIVE_EXIT_CODE
        } else {
            1
        };
        NotVerified { status, exit }
    }
}

impl std::fmt::Display for NotVerified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "migration {}", self.status)
    }
}

impl std::error::Error for NotVerified {}

/// Version tag of `port verify --json`.
pub const VERIFY_SCHEMA: &str = "port.verify/1";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendArg {
    /// The GPU when libcuda loads and device 0 answers, else the host
    /// simulator (with one line saying why).
    Auto,
    /// A CUDA GPU through the driver API; an error when there is none.
    Gpu,
    /// The host simulator: results only, no GPU timing.
    Simulator,
}

/// Flags `port migrate` and `port verify` share: where the kernels run,
/// on what, and how often they are timed.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Where the kernels run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,

    /// Timed repeats of the kernels, the whole call and the original, after
    /// one warm-up; the median is reported (at least 10). The original's
    /// calls stop early once they have taken 30 s (3 s on the simulator,
    /// where no speedup is computed from them), after at least 3.
    #[arg(long, default_value_t = 20)]
    pub repeats: usize,

    /// Run on these inputs: an .npz whose entries are named after the
    /// function's arguments (scalars as 0-d arrays), like the profiler's
    /// captures. Default: the captured inputs, else generated ones.
    #[arg(long, value_name = "NPZ")]
    pub inputs: Option<PathBuf>,

    /// Generated inputs: about this many loop iterations in all (a 1-D loop
    /// gets arrays of SIZE elements, a 2-D one √SIZE per side). Timing wants
    /// sizes like the real program's.
    #[arg(long)]
    pub size: Option<usize>,

    /// Generated inputs on which the original runs (its warm-up and timed
    /// calls) past this many seconds are made 64 times smaller, twice at
    /// most; the JSON's `verification.inputs_how` says so.
    #[arg(long, value_name = "SECONDS", default_value_t = port_verify::GENERATED_LIMIT_S)]
    pub generated_limit: u64,

    /// The Python that runs the original (default: $VIRTUAL_ENV/bin/python,
    /// else python3).
    #[arg(long)]
    pub python: Option<PathBuf>,

    /// Save what the original printed on stdout (importing its module and
    /// calling it) to FILE. It never reaches port's stdout: without this
    /// flag it is discarded.
    #[arg(long, value_name = "FILE")]
    pub app_output: Option<PathBuf>,
}

impl RunArgs {
    /// Bad flags, before any work.
    pub fn check(&self) -> Result<()> {
        if self.repeats < MIN_REPEATS {
            return Err(UserError::new(format!(
                "--repeats {}: at least {MIN_REPEATS} (a median of fewer runs is noise)",
                self.repeats
            ))
            .into());
        }
        if let Some(p) = &self.inputs {
            if !p.is_file() {
                return Err(UserError::new(format!(
                    "--inputs {}: no such file (an .npz of the function's arguments)",
                    p.display()
                ))
                .into());
            }
        }
        if self.size == Some(0) {
            return Err(UserError::new("--size must be at least 1").into());
        }
        Ok(())
    }

    /// The backend, or a one-line error for `--backend gpu` without a GPU.
    /// Says nothing: [`say_fallback`] tells the user, once work starts.
    pub fn select(&self) -> Result<Selected> {
        let choice = match self.backend {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Gpu => BackendChoice::Gpu,
            BackendArg::Simulator => BackendChoice::Simulator,
        };
        port_verify::select_backend(choice).map_err(|e| UserError::new(e.to_string()).into())
    }
}

/// When `auto` fell back to the simulator, says why (one line on stderr).
pub fn say_fallback(s: &Selected) {
    if let Some(why) = &s.fallback {
        eprintln!("port: {why}");
    }
}

/// The outcome's objects for a migration record / `--json`.
pub fn outcome_json(o: &Outcome) -> serde_json::Map<String, Value> {
    let v = &o.verification;
    let mut m = serde_json::Map::new();
    m.insert(
        "verification".into(),
        json!({
            "backend": v.backend,
            "inputs": v.inputs,
            "passed": v.passed,
            "max_abs_err": finite(v.max_abs_err),
            "max_rel_err": finite(v.max_rel_err),
            "rtol": v.tolerance.rtol,
            "atol": v.tolerance.atol,
            "compared": v.compared,
            "mismatch": v.mismatch,
            "float32_exact": v.float32_exact,
            "float64_exact": v.float64_exact,
            "in_place": v.in_place,
            "same_array": v.same_array,
            "inputs_how": v.inputs_how,
        }),
    );
    m.insert("device".into(), json!(o.device));
    m.insert("timing".into(), json!(o.timing));
    m.insert("projection".into(), json!(o.projection));
    m.insert("bandwidth".into(), json!(o.bandwidth));
    m.insert(
        "launches".into(),
        json!(o
            .launches
            .iter()
            .map(|l| json!({"kernel": l.kernel, "grid": l.config.grid, "block": l.config.block, "count": l.count}))
            .collect::<Vec<_>>()),
    );
    if !o.host_calls.is_empty() {
        // Library steps computed on the host (the simulator; lstsq, complex
        // types, or a GPU without libcublas/libcusolver).
        m.insert("host_calls".into(), json!(o.host_calls));
    }
    m
}

pub fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// `port verify`.
///
/// Runs each migrated function's kernels again against its original: on
/// the GPU when there is one (with timing: warm-up, data on the device,
/// CUDA events, median of --repeats), else on the host simulator (results
/// only). Updates `.port/migrations/*.json` for `port report`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Only this function (as given to `port migrate --function`); default:
    /// every migrated function.
    #[arg(long)]
    pub function: Option<String>,

    #[command(flatten)]
    pub run: RunArgs,

    /// Print the results as JSON (schema port.verify/1).
    #[arg(long)]
    pub json: bool,
}

/// One migration record on disk.
struct Record {
    path: PathBuf,
    value: Value,
}

impl Record {
    fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }

    fn function(&self) -> String {
        self.str("function").unwrap_or("?").to_string()
    }
}

fn load_records(only: Option<&str>) -> Result<Vec<Record>> {
    let dir = state::dir().join("migrations");
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            UserError::new(format!("{}: not a migration record: {e}", path.display()))
        })?;
        out.push(Record { path, value });
    }
    if out.is_empty() {
        return Err(UserError::new(format!(
            "no migrations in {}: run `port migrate --function NAME` first",
            dir.display()
        ))
        .into());
    }
    if let Some(name) = only {
        let stem = name.replace('.', "_");
        let all: Vec<String> = out.iter().map(Record::function).collect();
        out.retain(|r| {
            r.function() == name || r.path.file_stem().is_some_and(|s| s == stem.as_str())
        });
        if out.is_empty() {
            return Err(UserError::new(format!(
                "no migration of `{name}` in .port/migrations (there are: {})",
                all.join(", ")
            ))
            .into());
        }
    }
    Ok(out)
}

/// The function's share of the profile, from the last analysis.
fn hotspot_pct(file: &str, qualname: &str) -> Option<f64> {
    let text = std::fs::read_to_string(crate::commands::analyze::analysis_path()).ok()?;
    let a: port_analyzer::Analysis = serde_json::from_str(&text).ok()?;
    a.functions
        .iter()
        .find(|f| {
            f.file == file
                && (f.qualname == qualname || f.qualname.ends_with(&format!(".{qualname}")))
        })
        .and_then(|f| f.total_pct)
}

/// What happened to one function.
enum Result1 {
    Skipped(String),
    Done(Box<Outcome>),
    Failed(String),
}

fn verify_one(
    r: &Record,
    args: &VerifyArgs,
    selected: &Selected,
    python: &Path,
) -> Result<Result1> {
    if r.str("status") == Some("refused") {
        return Ok(Result1::Skipped("refused by port migrate".into()));
    }
    let (Some(plan_file), Some(original), Some(qualname)) =
        (r.str("plan_file"), r.str("original"), r.str("qualname"))
    else {
        return Ok(Result1::Skipped(
            "migrated by an older port (no kernel plan saved): run `port migrate` again".into(),
        ));
    };
    let plan: KernelPlan = match std::fs::read_to_string(plan_file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
    {
        Some(p) => p,
        None => {
            return Ok(Result1::Skipped(format!(
                "{plan_file} is missing or unreadable: run `port migrate` again"
            )))
        }
    };
    if !Path::new(original).exists() {
        return Ok(Result1::Failed(format!(
            "the original is gone: {original} does not exist"
        )));
    }
    let captured = r
        .value
        .pointer("/inputs_npz")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.exists());
    let file = r.str("file").unwrap_or(original);
    // libdevice from the packages of the Python that runs the original.
    let libdevice = plan
        .module
        .uses_math()
        .then(|| port_verify::toolchain::libdevice_for(python));
    if let Some(Libdevice::Missing(line)) = &libdevice {
        return Ok(Result1::Failed(line.clone()));
    }
    let opts = VerifyOptions {
        selected: selected.clone(),
        python: python.to_path_buf(),
        file: PathBuf::from(original),
        qualname: qualname.to_string(),
        captured,
        given: args.run.inputs.clone(),
        size: args.run.size.or_else(|| {
            r.value
                .get("size")
                .and_then(Value::as_u64)
                .map(|n| n as usize)
        }),
        repeats: args.run.repeats,
        app_output: args.run.app_output.clone(),
        ptx: PtxOptions {
            arch: Arch::default_for_this_machine(),
            libdevice: libdevice.as_ref().and_then(Libdevice::path),
            ..PtxOptions::default()
        },
        hotspot_pct: hotspot_pct(file, qualname).or_else(|| {
            r.value
                .pointer("/projection/hotspot_pct")
                .and_then(Value::as_f64)
        }),
        save_inputs: None,
        progress: None,
        generated_limit: Duration::from_secs(args.run.generated_limit),
    };
    let aliases: Vec<(String, String)> = r
        .value
        .get("inputs_aliases")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    match port_verify::verify_plan(&plan, &opts) {
        Ok(mut o) => {
            o.verification.called_in_place(&plan, &aliases);
            Ok(Result1::Done(Box::new(o)))
        }
        Err(VerifyError::NoPython { python, message }) => Err(UserError::new(format!(
            "cannot run the original with `{python}`: {message} (pass --python)"
        ))
        .into()),
        Err(VerifyError::NoGpu(m)) => Err(UserError::new(m).into()),
        Err(e) => Ok(Result1::Failed(e.to_string())),
    }
}

/// Writes the new figures into the migration record.
fn update_record(r: &mut Record, res: &Result1) -> Result<()> {
    let Some(obj) = r.value.as_object_mut() else {
        return Ok(());
    };
    match res {
        Result1::Skipped(_) => return Ok(()),
        Result1::Done(o) => {
            let v = &o.verification;
            obj.insert("status".into(), json!(v.status().as_str()));
            // The reasons are this verification's: a record that was a
            // mismatch and now verifies keeps none.
            let line = obj.get("line").cloned().unwrap_or(json!(0));
            let reasons: Vec<Value> = v
                .reason()
                .map(|m| json!({"line": line, "message": m, "rewrite": "verify"}))
                .into_iter()
                .collect();
            obj.insert("reasons".into(), json!(reasons));
            for (k, v) in outcome_json(o) {
                obj.insert(k, v);
            }
        }
        Result1::Failed(m) => {
            obj.insert("status".into(), json!("failed"));
            let line = obj.get("line").cloned().unwrap_or(json!(0));
            obj.insert(
                "reasons".into(),
                json!([{"line": line, "message": m, "rewrite": "verify"}]),
            );
        }
    }
    state::write_json(&r.path, &r.value)
}

fn progress(n: usize, json: bool) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let p = ProgressBar::new(n as u64);
    p.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"),
    );
    Some(p)
}

/// What `port verify` says of one function: a run's figures as its record
/// now holds them.
fn checked(r: &Record, res: &Result1) -> Result<Checked> {
    Ok(match res {
        Result1::Done(_) => {
            Checked::Done(Box::new(serde_json::from_value(r.value.clone()).map_err(
                |e| UserError::new(format!("{}: not a migration record: {e}", r.path.display())),
            )?))
        }
        Result1::Skipped(why) => Checked::Skipped(why.clone()),
        Result1::Failed(m) => Checked::Failed(m.clone()),
    })
}

pub fn run(args: &VerifyArgs) -> Result<()> {
    args.run.check()?;
    let mut records = load_records(args.function.as_deref())?;
    let selected = args.run.select()?;
    let python = port_profiler::resolve_python(args.run.python.clone());
    say_fallback(&selected);
    let bar = progress(records.len(), args.json);
    let mut results = Vec::new();
    for r in &mut records {
        let name = r.function();
        if let Some(b) = &bar {
            b.set_message(name.clone());
        }
        let res = verify_one(r, args, &selected, &python)?;
        update_record(r, &res)?;
        if let Some(b) = &bar {
            b.inc(1);
        }
        results.push((name, res));
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let count = |wanted: fn(&Result1) -> bool| results.iter().filter(|(_, r)| wanted(r)).count();
    let bad = count(|r| match r {
        Result1::Done(o) => o.verification.status() == Status::Mismatch,
        Result1::Failed(_) => true,
        Result1::Skipped(_) => false,
    });
    let inconclusive =
        count(|r| matches!(r, Result1::Done(o) if o.verification.status() == Status::Inconclusive));
    if args.json {
        let out: Vec<Value> = records
            .iter()
            .zip(&results)
            .map(|(r, (_, res))| {
                let mut v = r.value.clone();
                if let (Some(o), Result1::Skipped(why)) = (v.as_object_mut(), res) {
                    o.insert("skipped".into(), json!(why));
                }
                v
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "schema": VERIFY_SCHEMA,
                "backend": selected.backend.as_str(),
                "fallback": selected.fallback,
                "results": out,
            }))?
        );
        crate::json_printed();
    } else {
        let rows = records
            .iter()
            .zip(&results)
            .map(|(r, (name, res))| Ok((name.clone(), checked(r, res)?)))
            .collect::<Result<Vec<_>>>()?;
        let tty = crate::tty::style(true).color;
        print!("{}", port_reports::outcome::verify_text(&rows, tty));
    }
    if bad > 0 {
        return Err(NotVerified::new(if bad == 1 {
            "not verified"
        } else {
            "not verified (several functions)"
        })
        .into());
    }
    if inconclusive > 0 {
        return Err(NotVerified::new(Status::Inconclusive.as_str()).into());
    }
    Ok(())
}
