//! `port migrate --function f`: rewrite a function into GPU kernels, compile
//! them to PTX, verify them against the original, and write a patch — or
//! refuse, with the reason and its line.
//!
//! Reads: the analysis (of PATH now, or the last one in `.port/`), the
//! user's file. Writes: `.port/kernels/NAME.ptx` (and `.pir`, the kernel IR, and
//! `.plan.json`, the whole plan `port verify` runs again),
//! `.port/patches/NAME.diff`, `.port/migrations/NAME.json`; with `--write`
//! and a verified migration, the user's file (atomically, after a backup
//! `FILE.port-bak`, refusing if it changed since the analysis).
//!
//! Exit codes: 0 verified · 1 refused, mismatch or failed — a CUDA error
//! included, named with its kernel and launch (reported on stdout, the
//! error carries no extra text: see [`NotVerified`](crate::commands::verify::NotVerified)) · 2 bad input (unknown
//! function, ambiguous name, no types, bad --signature, unknown --arch,
//! --repeats below 10, --backend gpu without a GPU) · 5 inconclusive: the
//! kernels differ from the original, and the original does not reproduce
//! its own float64 results against an extended-precision run on these
//! inputs, so port cannot tell a right kernel from a wrong one (nothing is
//! verified: [`INCONCLUSIVE_EXIT_CODE`](crate::commands::verify::INCONCLUSIVE_EXIT_CODE)).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use port_analyzer::{Analysis, FunctionReport};
use port_codegen::{compile_ptx, Arch, CodegenError, PtxOptions};
use port_rewriter::verdicts::{facts_of, local_qualname};
use port_rewriter::{ArgType, MigrationRequest, Outcome, Reason};
use port_verify::{Status, VerifyError, VerifyOptions};
use serde_json::json;

use crate::commands::analyze::{analysis_path, load_or_analyze, reanalyze_keeping_profile, Source};
use crate::commands::verify::{outcome_json, say_fallback, NotVerified, RunArgs};
use crate::state;
use crate::UserError;

/// Version tag of `port migrate --json` and `.port/migrations/*.json`.
pub const MIGRATION_SCHEMA: &str = "port.migration/1";

/// Rewrite a function into GPU kernels, verify them, and write a patch.
///
/// port turns loops with independent iterations into grid-stride kernels,
/// NumPy array expressions into element loops, reductions into reduction
/// kernels, and scalar functions into device functions applied over
/// arrays; it compiles the kernels to PTX, runs them on the GPU (or, with
/// none, the host simulator) against the original (run by CPython) on
/// captured, given or generated inputs, times both, projects the gain for
/// the whole program, and writes the migrated source as a patch. Or it
/// refuses, with the line. `port verify` runs it all again later.
#[derive(clap::Args, Debug)]
pub struct MigrateArgs {
    /// The function: `name`, or qualified `module.name` / `Class.method`
    /// when the name is ambiguous.
    #[arg(long)]
    pub function: String,

    /// The program to analyse first (a .py file or a folder). Without it,
    /// port uses the last analysis in .port/.
    pub path: Option<PathBuf>,

    /// Argument types in Numba's syntax, e.g.
    /// "float64, float64[:], float64[:, ::1]" (else the captured types).
    /// An entry `None` or a quoted string ("float64[:], None, 'wrap'")
    /// specialises that parameter to the constant: calls that pass
    /// anything else run the original.
    #[arg(long)]
    pub signature: Option<String>,

    /// Print this artifact on stdout: the migrated Python (numba), the
    /// kernel IR, or the PTX.
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,

    /// GPU architecture for the PTX: sm_70 … sm_90 (default: this
    /// machine's GPU, else sm_90).
    #[arg(long)]
    pub arch: Option<String>,

    /// Lower float64 to float32 (faster on most GPUs); verification then
    /// uses a looser tolerance (rtol 1e-3).
    #[arg(long)]
    pub fp32: bool,

    #[command(flatten)]
    pub run: RunArgs,

    /// Apply the patch to the file (only when verified): atomically, after
    /// a backup FILE.port-bak, refusing if the file changed since the analysis.
    #[arg(long)]
    pub write: bool,

    /// Save the inputs the verification ran on (captured, given or
    /// generated) to NPZ, named by argument: `--inputs NPZ` runs on them
    /// again, and they are what to time an alternative on (CuPy, say).
    #[arg(long, value_name = "NPZ")]
    pub save_inputs: Option<PathBuf>,

    /// Print the result as JSON (schema port.migration/1).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The migrated Python (Numba-CUDA kernels and the host wrapper).
    Numba,
    /// port's kernel IR (text form).
    Ir,
    /// The PTX.
    Ptx,
}

fn migrations_dir() -> PathBuf {
    state::dir().join("migrations")
}

fn sources_path() -> PathBuf {
    state::dir().join("sources.json")
}

/// Content hashes of the files analysed by `port migrate PATH`.
fn load_sources() -> HashMap<String, String> {
    std::fs::read_to_string(sources_path())
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("files").cloned())
        .and_then(|f| serde_json::from_value(f).ok())
        .unwrap_or_default()
}

/// `module.qualname`, whatever form the analysis's qualname has.
fn full_name(f: &FunctionReport) -> String {
    if f.qualname.starts_with(&format!("{}.", f.module)) {
        f.qualname.clone()
    } else {
        format!("{}.{}", f.module, f.qualname)
    }
}

fn find_function<'a>(a: &'a Analysis, name: &str) -> Result<&'a FunctionReport> {
    let matches: Vec<&FunctionReport> = a
        .functions
        .iter()
        .filter(|f| f.name == name || local_qualname(f) == name || full_name(f) == name)
        .collect();
    let exact: Vec<&FunctionReport> = matches
        .iter()
        .copied()
        .filter(|f| full_name(f) == name)
        .collect();
    let pick = if exact.len() == 1 { exact } else { matches };
    match pick.as_slice() {
        [one] => Ok(one),
        [] => {
            let mut known: Vec<String> = a.functions.iter().map(full_name).collect();
            known.truncate(12);
            let more = if a.functions.len() > 12 { ", …" } else { "" };
            Err(UserError::new(format!(
                "no function `{name}` in the analysis of {} (it has {}{more})",
                a.root,
                known.join(", ")
            ))
            .into())
        }
        many => {
            let c: Vec<String> = many
                .iter()
                .map(|f| format!("{} ({}:{})", full_name(f), f.file, f.line))
                .collect();
            Err(UserError::new(format!(
                "`{name}` is ambiguous: it names {}; pass a qualified name, e.g. --function {}",
                c.join(", "),
                full_name(many[0])
            ))
            .into())
        }
    }
}

/// Why the analysis has no captured types for `f`, as the clause of an
/// error: no run at all, a run without capture, or the capture's own word
/// on the function (never called while it was on, called after it stopped).
fn why_no_types(analysis: &Analysis, f: &FunctionReport) -> String {
    let profile = analysis.profile.as_ref().filter(|_| analysis.profiled);
    let Some(profile) = profile else {
        return "no profiled run of the program in .port/".into();
    };
    if profile["capture"] == false {
        return "the last `port analyze` ran with --no-capture".into();
    }
    let said = profile["warnings"].as_array().and_then(|w| {
        w.iter().filter_map(|w| w.as_str()).find_map(|w| {
            let (key, rest) = w.split_once(": ")?;
            let named = key == f.qualname || key.ends_with(&format!(".{}", f.qualname));
            (named && rest.ends_with("no types captured")).then(|| rest.to_string())
        })
    });
    said.unwrap_or_else(|| "the profiled run captured no call of it".into())
}

/// Where each argument's type came from, for the JSON's `arg_types`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TypeSource {
    Signature,
    Inputs,
    Capture,
    /// The program's own calls of the function (`f(A, n)` after
    /// `A = np.random.rand(n, n)`).
    Calls,
    /// How the body uses the argument (`u[i, j]`: 2-D), as the analysis
    /// planned it; the wrapper runs the original on calls of other types.
    Assumed,
    /// The function's own eager Numba signature (`@njit("f8(f8[:])")`).
    Numba,
}

impl TypeSource {
    fn name(self) -> &'static str {
        match self {
            TypeSource::Signature => "signature",
            TypeSource::Inputs => "inputs",
            TypeSource::Capture => "capture",
            TypeSource::Calls => "calls",
            TypeSource::Assumed => "assumed",
            TypeSource::Numba => "numba",
        }
    }
}

/// The arguments' types, and where each came from, first to last: from
/// `--signature`; the dtypes and ranks of `--inputs` (the arrays the plan is
/// verified on); the profiler's capture; the function's own eager Numba
/// signature; the program's own calls of the function; how the body uses
/// each argument.
fn arg_types(
    args: &MigrateArgs,
    analysis: &Analysis,
    f: &FunctionReport,
    params: &[String],
    source: &str,
    local_name: &str,
    python: &Path,
) -> Result<Typed> {
    if let Some(sig) = &args.signature {
        // An entry `None` or `'reflect'` specialises its parameter to it.
        let items = port_rewriter::parse_signature_items(sig)
            .map_err(|e| UserError::coded("bad_signature", e.to_string()))?;
        let mut types = Vec::new();
        let mut literals = Vec::new();
        for (k, item) in items.into_iter().enumerate() {
            match item {
                port_rewriter::SigItem::Type(t) => types.push(t),
                port_rewriter::SigItem::Literal(c) => match params.get(k) {
                    Some(p) => literals.push((p.clone(), c, TypeSource::Signature)),
                    None => {
                        return Err(UserError::coded(
                            "bad_signature",
                            format!(
                                "`{c}` is entry {} of the signature, but `{}` has {} parameters",
                                k + 1,
                                f.name,
                                params.len()
                            ),
                        )
                        .into())
                    }
                },
            }
        }
        let n = types.len();
        return Ok((types, vec![TypeSource::Signature; n], literals));
    }
    if let Some(npz) = &args.run.inputs {
        let members = port_verify::original::npz_members(python, npz)
            .map_err(|e| UserError::coded("bad_inputs", e.to_string()))?;
        let defaulted: Vec<String> =
            port_rewriter::parameters_with_defaults(source, &f.file, local_name)
                .map_err(|e| UserError::coded(e.code(), e.to_string()))?
                .into_iter()
                .filter_map(|(name, default)| default.map(|_| name))
                .collect();
        let mut out = Vec::new();
        for (k, p) in params.iter().enumerate() {
            // Trailing arguments with defaults the .npz leaves out keep
            // them, as a --signature shorter than the parameter list does.
            if params[k..]
                .iter()
                .all(|q| !members.contains_key(q) && defaulted.contains(q))
            {
                break;
            }
            let Some(m) = members.get(p) else {
                let mut have: Vec<&String> = members.keys().collect();
                have.sort();
                return Err(UserError::coded(
                    "bad_inputs",
                    format!(
                        "{} has no member `{p}` for argument `{p}` of `{}` (it has: {}); name each array after its argument, as np.savez({}) does",
                        npz.display(),
                        f.name,
                        have.iter().map(|h| h.as_str()).collect::<Vec<_>>().join(", "),
                        params.iter().map(|q| format!("{q}={q}")).collect::<Vec<_>>().join(", ")
                    ),
                )
                .into());
            };
            let captured = port_analyzer::ArgType {
                name: p.clone(),
                kind: if m.shape.is_empty() {
                    "scalar"
                } else {
                    "ndarray"
                }
                .into(),
                dtype: m.dtype.clone(),
                ndim: Some(m.shape.len() as u32),
                shape: Some(m.shape.iter().map(|&n| n as u64).collect()),
                c_contiguous: Some(!m.fortran || m.shape.len() < 2),
                same_as: None,
            };
            out.push(port_rewriter::types::from_captured(&captured).map_err(|e| {
                UserError::coded(
                    "unsupported_input_type",
                    format!(
                        "{}: {}",
                        npz.display(),
                        e.to_string().replace("was captured", "is")
                    ),
                )
            })?);
        }
        let n = out.len();
        return Ok((out, vec![TypeSource::Inputs; n], Vec::new()));
    }
    let captured = f.types.clone().unwrap_or_default();
    if captured.is_empty() {
        // What the function declares to Numba (`@njit("f8[:](f8[:], i8)")`)
        // is what its original compiles for: no guess needed.
        if let Some(types) =
            port_rewriter::numba_declared::numba_declared_types(source, &f.file, local_name)
        {
            let n = types.len();
            return Ok((types, vec![TypeSource::Numba; n], Vec::new()));
        }
        return types_unprofiled(f, source, local_name, params, analysis);
    }
    let defaulted: Vec<bool> = port_rewriter::parameters_with_defaults(source, &f.file, local_name)
        .map(|d| d.into_iter().map(|(_, d)| d.is_some()).collect())
        .unwrap_or_default();
    match port_rewriter::types::from_captured_call(&captured, params, &defaulted) {
        Ok(out) => {
            let n = out.len();
            Ok((out, vec![TypeSource::Capture; n], Vec::new()))
        }
        Err(port_rewriter::types::CapturedGap {
            error: Some(e), ..
        }) => Err(UserError::coded("unsupported_captured_type", e.to_string()).into()),
        Err(port_rewriter::types::CapturedGap { index, error: None }) => Err(UserError::coded(
            "no_types",
            format!(
                "no type for argument `{}` of `{}`: the profiled run captured {} of its {} arguments; pass --signature or --inputs",
                params[index],
                f.name,
                captured.len(),
                params.len()
            ),
        )
        .into()),
    }
}

/// With no capture, no --signature and no --inputs: each argument's type at
/// the program's own calls of the function, else as its use in the body
/// implies (the types the analysis planned with). The wrapper runs the
/// original on calls of other types, so a wrong assumption costs speed,
/// never results.
fn types_unprofiled(
    f: &FunctionReport,
    source: &str,
    local_name: &str,
    params: &[String],
    analysis: &Analysis,
) -> Result<Typed> {
    let (at_calls, at_calls_literal) = types_at_calls(analysis, f, source, local_name, params);
    // Parameters every call passes one constant (`None`, a string), given
    // or by default, where no call gives them a type: the plan is
    // specialised to it, as to a default left out.
    let literal: Vec<Option<String>> = at_calls_literal
        .into_iter()
        .zip(&at_calls)
        .map(|(l, t)| l.filter(|_| t.is_none()))
        .collect();
    let literals: Vec<(String, String, TypeSource)> = params
        .iter()
        .zip(&literal)
        .filter_map(|(p, l)| Some((p.clone(), l.clone()?, TypeSource::Calls)))
        .collect();
    if let Some(types) = complete_at_calls(&at_calls, &literal, f, source, local_name) {
        let n = types.len();
        return Ok((types, vec![TypeSource::Calls; n], literals));
    }
    let assumed = port_rewriter::signature::assumed_types(source, &f.file, local_name)
        .ok()
        .filter(|t| t.len() == params.len());
    let Some(assumed) = assumed else {
        return Err(UserError::coded(
            "no_types",
            format!(
                "no types for the arguments of `{}` ({}), and none can be read from its body: run `port analyze` on the program to capture them, pass the inputs to verify on with --inputs (an .npz with one member per argument), or pass --signature (Numba's type syntax, one per argument: {})",
                f.name,
                why_no_types(analysis, f),
                params.join(", ")
            ),
        )
        .into());
    };
    // Axes with a number as their default that nothing types are left to
    // it (`axis=-1`): NumPy needs them constant.
    let typed: Vec<bool> = at_calls
        .iter()
        .zip(&literal)
        .map(|(t, l)| t.is_some() || l.is_some())
        .collect();
    let parsed = port_rewriter::source::SourceFile::parse(&f.file, source).ok();
    let axes = parsed.as_ref().map_or(0, |src| {
        port_rewriter::signature::axes_left_to_defaults(src, local_name, &typed)
    });
    let (types, from) = assumed
        .into_iter()
        .enumerate()
        .take(params.len() - axes)
        .filter(|(k, _)| literal.get(*k).is_none_or(Option::is_none))
        .map(|(k, t)| match at_calls.get(k).copied().flatten() {
            Some(c) => (c, TypeSource::Calls),
            None => (t, TypeSource::Assumed),
        })
        .unzip();
    Ok((types, from, literals))
}

/// Each argument's type, where it came from, and the parameters specialised
/// to a constant (name, constant, where it came from), which have no type.
type Typed = (
    Vec<ArgType>,
    Vec<TypeSource>,
    Vec<(String, String, TypeSource)>,
);

/// The type the program's own calls give each argument of the function,
/// read from every file of the analysed program, as the analysis read them.
fn types_at_calls(
    analysis: &Analysis,
    f: &FunctionReport,
    source: &str,
    local_name: &str,
    params: &[String],
) -> (Vec<Option<ArgType>>, Vec<Option<String>>) {
    use port_rewriter::call_types::CallSites;
    use port_rewriter::source::SourceFile;
    // Each file of the program with its module's name (a file with no
    // function in the analysis only calls: any name does).
    let mut modules: std::collections::BTreeMap<&str, String> = analysis
        .functions
        .iter()
        .map(|g| (g.file.as_str(), g.module.clone()))
        .collect();
    for file in &analysis.files {
        modules.entry(file.as_str()).or_insert_with(|| {
            let stem = Path::new(file).file_stem().and_then(|s| s.to_str());
            format!("<{}>", stem.unwrap_or(file))
        });
    }
    let parsed: Vec<(String, SourceFile)> = modules
        .iter()
        .filter_map(|(file, module)| {
            let text = if *file == f.file.as_str() {
                source.to_string()
            } else {
                std::fs::read_to_string(file).ok()?
            };
            Some((module.clone(), SourceFile::parse(file, &text).ok()?))
        })
        .collect();
    let program: Vec<(&str, &SourceFile)> = parsed.iter().map(|(m, s)| (m.as_str(), s)).collect();
    let bare = local_name.rsplit('.').next().unwrap_or(local_name);
    let sites = CallSites::of_program(&program, Some(&[bare].into_iter().collect()));
    let key = CallSites::key(&f.module, bare);
    let (types, _) = sites.types(&key, params);
    let defaults = port_rewriter::parameter_literal_defaults(source, &f.file, local_name)
        .unwrap_or_else(|_| vec![None; params.len()]);
    (types, sites.literals(&key, params, &defaults))
}

/// The types the calls give when they type every argument they pass and
/// the rest have defaults (those left to them are absent), leaving out the
/// parameters they give a constant (`literal`); `None` when the calls give
/// nothing.
fn complete_at_calls(
    at_calls: &[Option<ArgType>],
    literal: &[Option<String>],
    f: &FunctionReport,
    source: &str,
    local_name: &str,
) -> Option<Vec<ArgType>> {
    let defaults = port_rewriter::parameters_with_defaults(source, &f.file, local_name).ok()?;
    let rest: Vec<(Option<ArgType>, bool)> = at_calls
        .iter()
        .zip(literal)
        .zip(&defaults)
        .filter(|((_, l), _)| l.is_none())
        .map(|((t, _), (_, default))| (*t, default.is_some()))
        .collect();
    let given = match rest.iter().rposition(|(t, _)| t.is_some()) {
        Some(k) => k + 1,
        None if literal.iter().any(Option::is_some) => 0,
        None => return None,
    };
    if rest[given..].iter().any(|(_, has_default)| !has_default) {
        return None;
    }
    rest[..given].iter().map(|(t, _)| *t).collect()
}

/// The profiler's captured inputs for this function, when it saved some.
fn captured_inputs(a: &Analysis, f: &FunctionReport) -> Option<PathBuf> {
    let p = PathBuf::from(
        crate::profile_merge::capture_of(a, f)?
            .get("inputs_npz")?
            .as_str()?,
    );
    p.exists().then_some(p)
}

/// The pairs of arguments that shared memory in the captured call.
fn captured_aliases(a: &Analysis, f: &FunctionReport) -> Vec<(String, String)> {
    crate::profile_merge::capture_of(a, f)
        .and_then(|c| c.get("aliases"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The JSON's `arg_types`: per parameter, its type (or the constant it is
/// specialised to) and where it came from, in the parameters' order.
fn arg_types_json(
    params: &[String],
    types: &[ArgType],
    from: &[TypeSource],
    literals: &[(String, String, TypeSource)],
    defaults: &[Option<String>],
) -> Vec<serde_json::Value> {
    let mut typed = types.iter().zip(from);
    params
        .iter()
        .enumerate()
        .filter_map(|(k, p)| match literals.iter().find(|(n, _, _)| n == p) {
            Some((_, c, src)) => Some(json!({"name": p, "constant": c, "from": src.name()})),
            None => match typed.next() {
                Some((t, src)) => Some(json!({"name": p, "type": t.numba(), "from": src.name()})),
                // Left to its default: the plan is specialised to it.
                None => {
                    let d = defaults.get(k)?.as_ref()?;
                    Some(json!({"name": p, "constant": d, "from": "default"}))
                }
            },
        })
        .collect()
}

fn reason_json(r: &Reason) -> serde_json::Value {
    json!({"line": r.line, "message": r.message, "rewrite": r.rewrite})
}

struct Report {
    function: String,
    /// Where the function is: its file and line.
    file: String,
    line: u32,
    status: &'static str,
    reasons: Vec<Reason>,
    kernels: Vec<(String, String)>,
    patch: Option<String>,
    outcome: Option<port_verify::Outcome>,
    /// Where `port verify` finds what it needs besides the file: the
    /// function, the file to import the original from, the saved plan, the
    /// inputs.
    origin: serde_json::Map<String, serde_json::Value>,
    rewrites: Vec<port_rewriter::plan::RewriteRecord>,
    notes: Vec<String>,
    python: Option<String>,
    ir: Option<String>,
    ptx: Option<String>,
    /// Numba signature of each kernel (for checking the emitted source).
    kernel_signatures: HashMap<String, String>,
    plan: Option<serde_json::Value>,
    /// Each argument's type and where it came from (`signature`, `inputs`,
    /// `capture`).
    arg_types: Vec<serde_json::Value>,
}

impl Report {
    fn json(&self) -> serde_json::Value {
        let mut j = json!({
            "schema": MIGRATION_SCHEMA,
            "function": self.function,
            "file": self.file,
            "line": self.line,
            "status": self.status,
            "reasons": self.reasons.iter().map(reason_json).collect::<Vec<_>>(),
            "kernels": self.kernels.iter().map(|(n, p)| json!({
                "name": n,
                "ptx": p,
                "signature": self.kernel_signatures.get(n),
            })).collect::<Vec<_>>(),
            "patch": self.patch,
            "rewrites": self.rewrites,
            "notes": self.notes,
            "plan": self.plan,
            "arg_types": self.arg_types,
            "verification": null,
        });
        if let Some(obj) = j.as_object_mut() {
            if let Some(o) = &self.outcome {
                obj.extend(outcome_json(o));
            }
            obj.extend(self.origin.clone());
        }
        j
    }
}

pub fn run(args: &MigrateArgs) -> Result<()> {
    // Bad input first, before any work.
    let arch = match &args.arch {
        Some(a) => Arch::parse(a).map_err(|e| UserError::new(e.to_string()))?,
        None => Arch::default_for_this_machine(),
    };
    args.run.check()?;
    let selected = args.run.select()?;
    let python = port_profiler::resolve_python(args.run.python.clone());

    let analysis = match &args.path {
        Some(p) => {
            let a = reanalyze_keeping_profile(p)?;
            state::write_json(&analysis_path(), &a)
                .context("cannot save the analysis in .port/")?;
            let mut files = serde_json::Map::new();
            for f in &a.files {
                if let Ok(bytes) = std::fs::read(f) {
                    files.insert(f.clone(), json!(port_rewriter::patch::content_hash(&bytes)));
                }
            }
            state::write_json(
                &sources_path(),
                &json!({"schema": "port.sources/1", "files": files}),
            )?;
            a
        }
        None => load_or_analyze(Source::State)?,
    };
    let report_fn = find_function(&analysis, &args.function)?;
    let file = PathBuf::from(&report_fn.file);
    let source = std::fs::read_to_string(&file)
        .map_err(|e| UserError::new(format!("cannot read {}: {e}", file.display())))?;
    let local_name = local_qualname(report_fn);
    let (params, defaults): (Vec<String>, Vec<Option<String>>) =
        port_rewriter::parameters_with_defaults(&source, &report_fn.file, &local_name)
            .map_err(|e| UserError::coded(e.code(), e.to_string()))?
            .into_iter()
            .unzip();
    let (types, types_from, literals_from) = arg_types(
        args,
        &analysis,
        report_fn,
        &params,
        &source,
        &local_name,
        &python,
    )?;
    let literals: Vec<(String, String)> = literals_from
        .iter()
        .map(|(p, c, _)| (p.clone(), c.clone()))
        .collect();
    let facts = facts_of(&analysis);
    // The inputs the plan will be verified on, when known: an axis of
    // extent 1 there is planned as NumPy broadcasts it. Inputs that cannot
    // be read here fail verification below, with the reason.
    let input_shapes = args
        .run
        .inputs
        .clone()
        .or_else(|| captured_inputs(&analysis, report_fn))
        .and_then(|npz| port_verify::original::npz_shapes(&python, &npz, &params).ok())
        .unwrap_or_default();
    let outcome = port_rewriter::migrate(&MigrationRequest {
        source: &source,
        file_name: &report_fn.file,
        function: &local_name,
        types: &types,
        facts: &facts,
        report: Some(report_fn),
        fp32: args.fp32,
        input_shapes: &input_shapes,
        literals: &literals,
    })
    .map_err(|e| UserError::coded(e.code(), e.to_string()))?;

    let mut report = Report {
        function: local_name.clone(),
        file: report_fn.file.clone(),
        line: report_fn.line,
        status: "refused",
        reasons: Vec::new(),
        kernels: Vec::new(),
        patch: None,
        outcome: None,
        origin: serde_json::Map::new(),
        rewrites: Vec::new(),
        notes: Vec::new(),
        python: None,
        ir: None,
        ptx: None,
        kernel_signatures: HashMap::new(),
        plan: None,
        arg_types: arg_types_json(&params, &types, &types_from, &literals_from, &defaults),
    };
    let typed: Vec<&String> = params
        .iter()
        .filter(|p| !literals.iter().any(|(n, _)| n == *p))
        .collect();
    if types_from.contains(&TypeSource::Assumed) {
        let assumed: Vec<String> = typed
            .iter()
            .zip(types.iter().zip(&types_from))
            .filter(|(_, (_, from))| **from == TypeSource::Assumed)
            .map(|(p, (t, _))| format!("{p}: {}", t.numba()))
            .collect();
        report.notes.push(format!(
            "types read from how the body uses each argument ({}), with no call to take them from: calls with other types run the original CPU code (give --signature or --inputs to choose them)",
            assumed.join(", ")
        ));
        let left: Vec<String> = report
            .arg_types
            .iter()
            .filter(|t| t["from"] == "default")
            .map(|t| {
                format!(
                    "`{}={}`",
                    t["name"].as_str().unwrap_or("?"),
                    t["constant"].as_str().unwrap_or("?")
                )
            })
            .collect();
        if !left.is_empty() {
            report.notes.push(format!(
                "{} left to the default: NumPy needs an axis constant; calls with another value run the original",
                left.join(", ")
            ));
        }
    }
    let stem = args.function.replace('.', "_");
    match outcome {
        Outcome::Refused(reasons) => {
            report.reasons = reasons;
        }
        Outcome::Migrated(m) => {
            report.rewrites = m.plan.rewrites.clone();
            let overflow_flag = m.plan.module.checks_overflow();
            for k in &m.plan.module.kernels {
                let mut sig: Vec<String> = k
                    .params
                    .iter()
                    .map(|p| match p.ty {
                        port_codegen::ir::Type::Scalar(s) => {
                            port_rewriter::types::numba_scalar(s).to_string()
                        }
                        port_codegen::ir::Type::Array(a) => ArgType::Array(a).numba(),
                    })
                    .collect();
                if overflow_flag {
                    // The emitted kernels' last parameter, the overflow
                    // flag (`port_rewriter::emit::python::OVERFLOW`).
                    sig.push("int64[::1]".into());
                }
                report
                    .kernel_signatures
                    .insert(k.name.clone(), sig.join(", "));
            }
            let (lo, hi) = port_verify::inputs::value_range(&m.plan);
            report.plan = Some(json!({
                "kind": match m.plan.kind {
                    port_rewriter::PlanKind::Kernels => "kernels",
                    port_rewriter::PlanKind::Ufunc => "ufunc",
                },
                "signature": types.iter().map(|t| t.numba()).collect::<Vec<_>>().join(", "),
                "ufunc_outputs": m.plan.ufunc_outputs.iter().map(|t| port_rewriter::types::numba_scalar(*t)).collect::<Vec<_>>(),
                "input_range": [lo, hi],
                "fp32": m.plan.fp32,
                "params": m.plan.params.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                // Parameters specialised to the constant every call passes:
                // `[name, constant]`, the constant as Python writes it.
                "literals": m.plan.literals,
                // Arguments the function writes into: the wrapper copies
                // them back, and refuses to run its kernels on them when
                // they share memory with another argument.
                "mutated": m.plan.mutated,
                "unit_dims": m.plan.unit_dims,
                // Arguments a library step takes as they are, and what it
                // needs of them (`positive_definite`, `dominant`).
                "linalg_inputs": port_verify::inputs::conditions(&m.plan),
            }));
            let ir_text = port_codegen::text::print_module(&m.plan.module);
            let kernels_dir = state::dir().join("kernels");
            // The whole plan, for `port verify` to run again later.
            let plan_path = kernels_dir.join(format!("{stem}.plan.json"));
            state::write_json(&plan_path, &m.plan)?;
            state::write_atomic(&kernels_dir.join(format!("{stem}.pir")), ir_text.as_bytes())?;
            report.ir = Some(ir_text);
            report.python = Some(m.python.clone());
            let ptx_path = kernels_dir.join(format!("{stem}.ptx"));
            // libdevice comes from the packages of the Python that runs the
            // original (a venv, conda, pyenv or the system), asked directly;
            // only kernels that call math functions need it.
            let libdevice = m
                .plan
                .module
                .uses_math()
                .then(|| port_verify::toolchain::libdevice_for(&python));
            let opts = PtxOptions {
                arch,
                libdevice: libdevice
                    .as_ref()
                    .and_then(port_verify::toolchain::Libdevice::path),
                ..PtxOptions::default()
            };
            match compile_ptx(&m.plan.module, &opts) {
                Ok(ptx) => {
                    state::write_atomic(&ptx_path, ptx.as_bytes())?;
                    let shown = ptx_path.display().to_string();
                    report.kernels = m
                        .plan
                        .kernel_names()
                        .into_iter()
                        .map(|k| (k, shown.clone()))
                        .collect();
                    report.ptx = Some(ptx);
                }
                Err(e) => {
                    report.status = "failed";
                    let why = match (e, &libdevice) {
                        (
                            CodegenError::LibdeviceNotFound { .. },
                            Some(port_verify::toolchain::Libdevice::Missing(line)),
                        ) => line.clone(),
                        (e @ CodegenError::LibdeviceNotFound { .. }, _) => e.to_string(),
                        (other, _) => format!("compiling the kernels to PTX failed: {other}"),
                    };
                    report
                        .reasons
                        .push(Reason::new("codegen", report_fn.line, why));
                }
            }
            let patch_path = state::dir().join("patches").join(format!("{stem}.diff"));
            state::write_atomic(&patch_path, m.diff.as_bytes())?;
            report.patch = Some(patch_path.display().to_string());

            let captured = captured_inputs(&analysis, report_fn);
            let aliases = captured_aliases(&analysis, report_fn);
            report.origin = json!({
                "qualname": local_name,
                "original": report_fn.file,
                "plan_file": plan_path.display().to_string(),
                // `port verify` runs again on the inputs this run used.
                "inputs_npz": args
                    .run
                    .inputs
                    .as_ref()
                    .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                    .or_else(|| captured.clone())
                    // Generated ones, when saved.
                    .or_else(|| {
                        let p = args.save_inputs.as_ref()?;
                        Some(std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                    })
                    .map(|p| p.display().to_string()),
                // Arguments the captured call passed sharing memory.
                "inputs_aliases": aliases,
                "size": args.run.size,
            })
            .as_object()
            .cloned()
            .unwrap_or_default();
            if report.status != "failed" {
                say_fallback(&selected);
                // A verification past 2 s says what it is doing.
                let spinner = crate::tty::spinner_after(args.json, Duration::from_secs(2));
                let vopts = VerifyOptions {
                    selected: selected.clone(),
                    python: python.clone(),
                    file: file.clone(),
                    qualname: local_name.clone(),
                    captured,
                    given: args.run.inputs.clone(),
                    size: args.run.size,
                    repeats: args.run.repeats,
                    app_output: args.run.app_output.clone(),
                    ptx: opts.clone(),
                    hotspot_pct: report_fn.total_pct,
                    save_inputs: args.save_inputs.clone(),
                    progress: spinner.clone().map(|bar| {
                        let name = local_name.clone();
                        std::sync::Arc::new(move |what: &str| {
                            bar.set_message(format!("verifying `{name}`: {what}"))
                        }) as port_verify::Progress
                    }),
                    generated_limit: Duration::from_secs(args.run.generated_limit),
                };
                let verified = port_verify::verify_plan(&m.plan, &vopts);
                if let Some(s) = &spinner {
                    s.finish_and_clear();
                }
                match verified {
                    Ok(mut o) => {
                        o.verification.called_in_place(&m.plan, &aliases);
                        let v = &o.verification;
                        report.status = v.status().as_str();
                        // The errors in `verification` are against the
                        // original's own float32 (or float64) results;
                        // what decided is the comparison with a more
                        // precise run, said here for machines too.
                        if let (Status::Verified, Some(c)) = (v.status(), v.exact()) {
                            let name = c.precision.name();
                            report.notes.push(format!(
                                "{name}: {}; max_abs_err and max_rel_err are against the original's own {name} results, which carry rounding errors of their own",
                                c.describe()
                            ));
                        }
                        for (b, a) in &v.same_array {
                            report.notes.push(format!(
                                "the program passes one array as `{a}` and `{b}`: the original ran so, and the kernels on a device copy each (the copy-back deciding what the array holds); the migrated function itself runs the original for a call whose written argument shares memory with another"
                            ));
                        }
                        if let Some(why) = v.reason() {
                            report
                                .reasons
                                .push(Reason::new("verify", report_fn.line, why));
                        }
                        report.outcome = Some(o);
                    }
                    Err(VerifyError::NoPython { python, message }) => {
                        return Err(UserError::new(format!(
                            "cannot run the original with `{python}`: {message} (pass --python)"
                        ))
                        .into())
                    }
                    Err(VerifyError::NoGpu(m)) => return Err(UserError::new(m).into()),
                    // Nothing wrong, nothing verified: on these inputs the
                    // migrated function runs the original.
                    Err(e @ VerifyError::Overflow(_)) => {
                        report.status = Status::Inconclusive.as_str();
                        report
                            .reasons
                            .push(Reason::new("verify", report_fn.line, e.to_string()));
                    }
                    Err(e) => {
                        report.status = "failed";
                        let why = e.to_string();
                        report
                            .reasons
                            .push(Reason::new("verify", report_fn.line, why));
                    }
                }
            }
            if args.fp32 {
                report.notes.push(
                    "--fp32: float64 lowered to float32; compared with rtol 1e-3, atol 1e-5".into(),
                );
            }
            if args.write {
                if report.status == "verified" {
                    let written = write_patch(&file, &source, &m.new_source, args.path.is_some())?;
                    report.notes.push(written);
                    // The original now lives in the backup.
                    report.origin.insert(
                        "original".into(),
                        json!(format!("{}.port-bak", file.display())),
                    );
                } else {
                    report.notes.push(format!(
                        "not written: the migration is {}, not verified",
                        report.status
                    ));
                }
            } else if report.status == "verified" {
                report.notes.push("apply it with --write".into());
            }
        }
    }

    let j = report.json();
    state::write_json(&migrations_dir().join(format!("{stem}.json")), &j)?;
    // The text is read from the record just written, as `port report` reads it.
    let record: port_reports::Migration =
        serde_json::from_value(j.clone()).context("the migration record does not read back")?;
    let text = port_reports::outcome::migration_text(&record);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&j)?);
        crate::json_printed();
    } else if let Some(e) = args.emit {
        let artifact = match e {
            Emit::Numba => report.python.clone(),
            Emit::Ir => report.ir.clone(),
            Emit::Ptx => report.ptx.clone(),
        };
        if let Some(a) = artifact {
            print!("{a}");
        }
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if report.status == "verified" {
        Ok(())
    } else {
        Err(NotVerified::new(report.status).into())
    }
}

/// Applies the patch: refuses if the file changed since the analysis (its
/// recorded hash, or its modification time against `.port/analysis.json`'s)
/// or since it was read; writes a backup, then the new text atomically.
fn write_patch(file: &Path, read: &str, new: &str, analysed_now: bool) -> Result<String> {
    let shown = file.display().to_string();
    let current =
        std::fs::read(file).map_err(|e| UserError::new(format!("cannot read {shown}: {e}")))?;
    let now = port_rewriter::patch::content_hash(&current);
    let changed = |why: &str| -> anyhow::Error {
        UserError::new(format!(
            "{shown} changed since the analysis ({why}); not written: run `port migrate` again"
        ))
        .into()
    };
    if now != port_rewriter::patch::content_hash(read.as_bytes()) {
        return Err(changed("it changed while port was migrating"));
    }
    if !analysed_now {
        let sources = load_sources();
        match sources.get(&shown) {
            Some(h) if *h != now => return Err(changed("its content differs")),
            Some(_) => {}
            None => {
                let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
                if let (Some(f), Some(a)) = (modified(file), modified(&analysis_path())) {
                    if f > a {
                        return Err(changed("it was modified after .port/analysis.json"));
                    }
                }
            }
        }
    }
    let backup = PathBuf::from(format!("{shown}.port-bak"));
    std::fs::write(&backup, read)
        .with_context(|| format!("cannot write the backup {}", backup.display()))?;
    state::write_atomic(file, new.as_bytes())?;
    // The patched file is the new baseline.
    let mut sources = load_sources();
    sources.insert(
        shown.clone(),
        port_rewriter::patch::content_hash(new.as_bytes()),
    );
    state::write_json(
        &sources_path(),
        &json!({"schema": "port.sources/1", "files": sources}),
    )?;
    Ok(format!("wrote {shown} (backup {})", backup.display()))
}
