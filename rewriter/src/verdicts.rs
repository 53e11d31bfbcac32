//! One truth for verdicts: after the static analysis, ask the planner
//! (planning only, no code printed, nothing verified) about every function
//! the analysis does not put in object mode for good, and let its answer
//! decide `cuda`.
//!
//! - planned → `cuda`; the GPU blockers the static pass guessed are dropped
//!   (the planner takes them), and when Numba itself would refuse the
//!   function (a PORT1xx finding) a PORT406 note says port leads there;
//! - refused → not `cuda`: `nopython`, or `object` where Numba's rules say
//!   so, with the refusal as a PORT214 finding (its line, its rewrite).
//!
//! Types: the captured ones of a profiled call, else those read from how
//! the body uses each argument ([`crate::assumed_types`]). Files are planned
//! in parallel (rayon, on threads with the analyzer's stack), each parsed
//! once; a second round re-plans only callers whose callees' verdicts
//! changed. The analyzer does not depend on the rewriter: this is where
//! its verdicts meet the planner.

use std::collections::HashMap;
use std::sync::Arc;

use port_analyzer::{Analysis, Finding, FunctionReport, PlanCheck, PlanStatus, Severity, Verdict};
use rayon::prelude::*;

use crate::call_types::CallSites;
use crate::source::SourceFile;
use crate::{AppFacts, ArgType, MigrationRequest, PlanOutcome};

fn worth_asking(f: &FunctionReport) -> bool {
    port_analyzer::rules::planner_may_take(&f.findings)
}

/// The function's qualified name inside its file (`f`, `Class.method`).
pub fn local_qualname(f: &FunctionReport) -> String {
    f.qualname
        .strip_prefix(&format!("{}.", f.module))
        .unwrap_or(&f.qualname)
        .to_string()
}

/// What the planner needs to know of the program's other functions: each
/// one's verdict and main reason, by bare name and by qualname.
pub fn facts_of(a: &Analysis) -> AppFacts {
    facts_of_functions(a.functions.iter())
}

fn facts_of_functions<'a>(
    functions: impl ExactSizeIterator<Item = &'a FunctionReport>,
) -> AppFacts {
    // `module.qualname` is unique across the program; a bare name or a
    // qualname is a key only when one function has it (eight modules of
    // one package may each define `_ppf1`, and a caller's verdict must
    // not read another module's).
    let functions: Vec<&FunctionReport> = functions.collect();
    let mut uses: HashMap<&str, usize> = HashMap::with_capacity(2 * functions.len());
    for f in &functions {
        *uses.entry(f.name.as_str()).or_default() += 1;
        if f.qualname != f.name {
            *uses.entry(f.qualname.as_str()).or_default() += 1;
        }
    }
    let mut verdicts = HashMap::with_capacity(3 * functions.len());
    for f in &functions {
        let entry = fact_of(f);
        for short in [&f.name, &f.qualname] {
            if uses.get(short.as_str()) == Some(&1) {
                verdicts.insert(short.clone(), entry.clone());
            }
        }
        verdicts.insert(format!("{}.{}", f.module, f.qualname), entry);
    }
    AppFacts {
        verdicts: std::sync::Arc::new(verdicts),
        hidden: Vec::new(),
        module: None,
    }
}

/// What a caller's plan reads of `f`: its verdict and, when it is not
/// `cuda`, its main reason (line, code and message).
fn fact_of(f: &FunctionReport) -> (Verdict, Option<(u32, String)>) {
    let reason = (f.verdict != Verdict::Cuda)
        .then(|| f.main_reason())
        .flatten()
        .map(|r| (r.line, format!("{} {}", r.code, r.message)));
    (f.verdict, reason)
}

/// The static analysis of `path` with the planner's answers: the
/// analyzer's verdicts, then [`apply`]'s, planned on the trees the
/// analysis parsed.
pub fn analyze(
    path: &std::path::Path,
    opts: &port_analyzer::AnalyzeOptions,
) -> Result<Analysis, port_analyzer::AnalyzeError> {
    port_analyzer::analyze_then(path, opts, |a, modules| {
        let asked: Vec<bool> = a.functions.iter().map(worth_asking).collect();
        let wanted: std::collections::HashSet<&str> = a
            .functions
            .iter()
            .zip(&asked)
            .filter(|(_, &asked)| asked)
            .map(|(f, _)| f.file.as_str())
            .collect();
        // Every file, for the program's calls of its own functions (the
        // types a function's callers give it, across modules); then only
        // those with a function to plan are kept.
        let all: Vec<(String, Arc<SourceFile>)> = modules
            .into_par_iter()
            .map(|m| {
                let src = SourceFile::from_parsed(m.display, m.text, m.suite, m.lines);
                (m.name, Arc::new(src))
            })
            .collect();
        // Held until planning is done: a module another imports
        // (`from ._util import K`) is read from here, not parsed again.
        let held: Vec<Arc<SourceFile>> = all.iter().map(|(_, src)| Arc::clone(src)).collect();
        crate::source::share_parsed(&held);
        let program: Vec<(&str, &SourceFile)> = all
            .iter()
            .map(|(name, src)| (name.as_str(), src.as_ref()))
            .collect();
        // Every scope: on a whole program the scopes that may call one of
        // the functions planned are nearly all of them (numpy + scipy: 94%).
        let sites = CallSites::of_program(&program, None);
        drop(program);
        let files: HashMap<String, Arc<SourceFile>> = all
            .into_iter()
            .filter(|(_, src)| wanted.contains(src.name.as_str()))
            .map(|(_, src)| (src.name.clone(), src))
            .collect();
        plan_all(a, files, Some(&sites));
        held.into_par_iter().for_each(drop);
    })
}

/// Asks the planner about every function of an analysis already made (the
/// files are read and parsed again) and adjusts verdicts, findings and the
/// static coverage (a profile merged later weights it by time).
pub fn apply(a: &mut Analysis) {
    let run = |a: &mut Analysis| {
        let wanted: std::collections::HashSet<String> = a
            .functions
            .iter()
            .filter(|f| worth_asking(f))
            .map(|f| f.file.clone())
            .collect();
        let files: HashMap<String, Arc<SourceFile>> = wanted
            .into_par_iter()
            .filter_map(|file| {
                let text = std::fs::read_to_string(&file).ok()?;
                let src = SourceFile::parse(&file, &text).ok()?;
                Some((file, Arc::new(src)))
            })
            .collect();
        plan_all(a, files, None);
    };
    // The planner recurses over the syntax tree like the analyzer does: on
    // threads with the analyzer's stack, so no input overflows it.
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(port_analyzer::STACK_BYTES)
        .thread_name(|i| format!("port-plan-{i}"))
        .build();
    match pool {
        Ok(pool) => pool.install(|| run(a)),
        // No threads to be had: plan on one thread of the same stack.
        Err(_) => std::thread::scope(|s| {
            let planned = std::thread::Builder::new()
                .stack_size(port_analyzer::STACK_BYTES)
                .spawn_scoped(s, || run(a))
                .map(|h| h.join());
            if let Ok(Err(panic)) = planned {
                std::panic::resume_unwind(panic);
            }
        }),
    }
}

/// Plans the functions worth asking about, each file's in parallel with
/// the others', and adjusts the analysis; drops `files` on the pool. The
/// types of functions no call was captured of come from the program's
/// calls (`program`, else each file's own) and from their bodies.
fn plan_all(
    a: &mut Analysis,
    files: HashMap<String, Arc<SourceFile>>,
    program: Option<&CallSites>,
) {
    // The static verdicts, as the planner first sees its callees; a second
    // round re-plans callers when a callee's verdict changed. The static
    // reports stay untouched, the planner's adjusted ones beside them (a
    // copy of every report cost a sequential tenth of a second on numpy +
    // scipy).
    let original: Vec<FunctionReport> = std::mem::take(&mut a.functions);
    let mut adjusted: Vec<Option<FunctionReport>> = vec![None; original.len()];
    let mut asked: Vec<bool> = original.iter().map(worth_asking).collect();
    // Each function's callees among the program's own, by index (the
    // call graph names functions `module.qualname`).
    let mut index: HashMap<String, usize> = HashMap::with_capacity(2 * original.len());
    for (k, f) in original.iter().enumerate() {
        index.insert(format!("{}.{}", f.module, f.qualname), k);
        index.entry(f.qualname.clone()).or_insert(k);
    }
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); original.len()];
    for e in &a.call_graph.edges {
        if let (Some(&from), Some(&to)) = (index.get(&e.caller), index.get(&e.callee)) {
            callees[from].push(to);
        }
    }
    drop(index);
    let calls_app: Vec<bool> = callees.iter().map(|c| !c.is_empty()).collect();
    // The functions of each file, with the file parsed once. A file is
    // kept after the first round only when a later round may ask about one
    // of its functions again (it calls the program's own functions).
    let mut by_file: Vec<(Option<Arc<SourceFile>>, Vec<usize>, bool)> = Vec::new();
    {
        let mut files = files;
        let mut at: HashMap<&str, usize> = HashMap::new();
        for (k, f) in original.iter().enumerate() {
            let slot = match at.get(f.file.as_str()) {
                Some(&slot) => slot,
                None => {
                    let Some(src) = files.remove(&f.file) else {
                        continue;
                    };
                    by_file.push((Some(src), Vec::new(), false));
                    at.insert(f.file.as_str(), by_file.len() - 1);
                    by_file.len() - 1
                }
            };
            by_file[slot].1.push(k);
            by_file[slot].2 |= calls_app[k] && asked[k];
        }
        files.into_par_iter().for_each(drop);
    }
    for round in 0..3 {
        let current = original
            .iter()
            .zip(&adjusted)
            .map(|(f, a)| a.as_ref().unwrap_or(f));
        let facts = facts_of_functions(current);
        let answers: Vec<(usize, PlanCheck)> = by_file
            .par_iter_mut()
            .flat_map_iter(|(src, ks, keep)| {
                let answers: Vec<(usize, PlanCheck)> = match src.as_ref() {
                    Some(src) => {
                        // Without the program's calls, the file's own, read
                        // once.
                        let local = std::cell::OnceCell::new();
                        ks.iter()
                            .filter(|&&k| asked[k])
                            .map(|&k| {
                                let f = &original[k];
                                let sites = || {
                                    let name = local_qualname(f);
                                    let bare = name.rsplit('.').next().unwrap_or(&name).to_string();
                                    match program {
                                        Some(p) => (p, CallSites::key(&f.module, &bare)),
                                        None => (local.get_or_init(|| CallSites::of(src)), bare),
                                    }
                                };
                                (k, check(&src.text, src, f, &facts, sites))
                            })
                            .collect()
                    }
                    None => Vec::new(),
                };
                if round == 0 && !*keep {
                    // Dropped here, on the pool's large-stack thread.
                    *src = None;
                }
                answers
            })
            .collect();
        let mut changed = vec![false; original.len()];
        for (k, c) in answers {
            let new = adjust(&original[k], c);
            // What the callers' plans read of it ([`fact_of`]).
            changed[k] = fact_of(&new) != fact_of(adjusted[k].as_ref().unwrap_or(&original[k]));
            adjusted[k] = Some(new);
        }
        // Only the callers of a function whose answer changed are asked
        // again (re-asking every caller cost a quarter of the planning of
        // numpy + scipy).
        asked = original
            .iter()
            .zip(&callees)
            .map(|(f, c)| c.iter().any(|&to| changed[to]) && worth_asking(f))
            .collect();
        if !asked.contains(&true) {
            break;
        }
    }
    a.functions = original
        .into_iter()
        .zip(adjusted)
        .map(|(f, new)| new.unwrap_or(f))
        .collect();
    if !a.profiled {
        a.coverage = Analysis::static_coverage(&a.functions);
    }
    by_file.into_par_iter().for_each(drop);
}

/// Functions longer than this (in characters) are not planned.
const MAX_PLANNED_CHARS: usize = 20_000;

/// The planner's answer for one function.
fn check<'s>(
    text: &str,
    src: &SourceFile,
    f: &FunctionReport,
    facts: &AppFacts,
    sites: impl FnOnce() -> (&'s CallSites, String),
) -> PlanCheck {
    let name = local_qualname(f);
    // A function defined inside another is planned with it (hoisted when
    // it captures nothing), never alone: `port migrate` cannot name it.
    if let Some((outer, _)) = name.split_once(".<locals>.") {
        let why = format!(
            "`{}` is defined inside `{outer}`: port migrates it with `{outer}` (`port migrate --function {outer}`), not alone",
            f.name
        );
        return refused(String::new(), "assumed", why, f.line, "frontend");
    }
    // The planner's passes are not linear in the size of one expression: a
    // generated function of tens of thousands of characters is not planned.
    // (From the parsed definition: counting the file's lines up to it, per
    // function, made planning a file quadratic in its length.)
    let size = crate::source::find(src, &name).map_or(0, |d| src.text_of(d.def).len());
    if size > MAX_PLANNED_CHARS {
        let why = format!("the function is too large to plan ({size} characters; port plans up to {MAX_PLANNED_CHARS})");
        return refused(String::new(), "assumed", why, f.line, "frontend");
    }
    let (types, types_from, literals) = match types_of(src, f, &name, sites) {
        Ok(t) => t,
        Err(reason) => return refused(String::new(), "assumed", reason, f.line, "frontend"),
    };
    // `--signature`'s syntax: a constant stands for the parameter it
    // specialises.
    let signature = {
        let mut typed = types.iter();
        crate::source::find(src, &name)
            .map(|d| {
                d.def
                    .args
                    .args
                    .iter()
                    .filter_map(
                        |a| match literals.iter().find(|(n, _)| n == a.def.arg.as_str()) {
                            Some((_, c)) => Some(c.clone()),
                            None => typed.next().map(|t| t.numba()),
                        },
                    )
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    // The planner must not stop at the static verdict: it is what decides it.
    let mut report = f.clone();
    report.verdict = Verdict::Cuda;
    let req = MigrationRequest {
        source: text,
        file_name: &f.file,
        function: &name,
        types: &types,
        facts,
        report: Some(&report),
        fp32: false,
        input_shapes: &[],
        literals: &literals,
    };
    match crate::plan_parsed(src, &req) {
        Ok(PlanOutcome::Planned(_)) => PlanCheck {
            status: PlanStatus::Planned,
            signature,
            types_from: types_from.into(),
            reason: None,
            line: None,
            pass: None,
        },
        Ok(PlanOutcome::Refused(reasons)) => {
            let first = reasons.into_iter().next();
            let (msg, line, pass) = match first {
                Some(r) => (r.message, r.line, r.rewrite),
                None => ("no reason given".into(), f.line, "planner".into()),
            };
            refused(signature, types_from, msg, line, &pass)
        }
        Err(e) => refused(signature, types_from, e.to_string(), f.line, "frontend"),
    }
}

fn refused(signature: String, from: &str, reason: String, line: u32, pass: &str) -> PlanCheck {
    PlanCheck {
        status: PlanStatus::Refused,
        signature,
        types_from: from.into(),
        reason: Some(reason),
        line: Some(line),
        pass: Some(pass.into()),
    }
}

fn types_of<'s>(
    src: &SourceFile,
    f: &FunctionReport,
    name: &str,
    sites: impl FnOnce() -> (&'s CallSites, String),
) -> Result<Typed, String> {
    let (sites, key) = sites();
    let (params, assumed, source) =
        crate::signature::static_types_keyed(src, name, sites, &key).map_err(|e| e.to_string())?;
    let from = source.as_str();
    let captured = f.types.clone().unwrap_or_default();
    if captured.is_empty() {
        // Parameters every call passes one constant (`None`, a string):
        // specialised to it, as `port migrate` does.
        let defaults = crate::source::find(src, name)
            .map(|d| crate::call_types::literal_defaults(d.def))
            .unwrap_or_default();
        let literal = sites.literals(&key, &params, &defaults);
        let literals: Vec<(String, String)> = params
            .iter()
            .zip(&literal)
            .filter_map(|(p, l)| Some((p.clone(), l.clone()?)))
            .collect();
        let (at_calls, _) = sites.types(&key, &params);
        // Axes with a number as their default that nothing types are left
        // to it (`axis=-1`), as `port migrate` does.
        let typed: Vec<bool> = at_calls
            .iter()
            .zip(&literal)
            .map(|(t, l)| t.is_some() || l.is_some())
            .collect();
        let axes = crate::signature::axes_left_to_defaults(src, name, &typed);
        let types = assumed
            .into_iter()
            .take(params.len() - axes)
            .zip(&literal)
            .filter(|(_, l)| l.is_none())
            .map(|(t, _)| t)
            .collect();
        // The constants came from the calls too: when the calls type every
        // other parameter, all of it did.
        let from = if !literals.is_empty()
            && at_calls
                .iter()
                .zip(&literal)
                .all(|(t, l)| t.is_some() || l.is_some())
        {
            "calls"
        } else {
            from
        };
        return Ok((types, from, literals));
    }
    let defaulted: Vec<bool> = crate::source::find(src, name)
        .map(|d| {
            d.def
                .args
                .args
                .iter()
                .map(|a| a.default.is_some())
                .collect()
        })
        .unwrap_or_default();
    Ok(
        match crate::types::from_captured_call(&captured, &params, &defaulted) {
            Ok(out) => (out, "captured", Vec::new()),
            Err(_) => (assumed, from, Vec::new()),
        },
    )
}

/// A function's argument types, where they came from, and the parameters
/// specialised to a constant every call passes (which have no type).
type Typed = (Vec<ArgType>, &'static str, Vec<(String, String)>);

/// The function as the planner's answer leaves it.
fn adjust(f: &FunctionReport, c: PlanCheck) -> FunctionReport {
    let mut f = f.clone();
    let object: Vec<String> = f
        .findings
        .iter()
        .filter(|x| x.severity == Severity::Object)
        .map(|x| format!("{} at line {}", x.code, x.line))
        .collect();
    match c.status {
        PlanStatus::Planned => {
            f.verdict = Verdict::Cuda;
            f.findings.retain(|x| x.severity != Severity::Blocker);
            if !object.is_empty() {
                f.findings.push(note(
                    "PORT406",
                    f.line,
                    format!(
                        "port migrates it, but Numba's nopython mode would refuse it ({}): a lead over Numba, not a disagreement",
                        object.join(", ")
                    ),
                ));
            }
            // A verdict on types read from the body says so: it rests on them.
            if c.types_from.contains("assumed") && !c.signature.is_empty() {
                let which = if c.types_from == "assumed" {
                    "types read from the body"
                } else {
                    "types partly read from the body (the program's calls type the rest)"
                };
                f.findings.push(note(
                    "PORT401",
                    f.line,
                    format!(
                        "planned with {which} (`{}`), not from a real call: the verdict rests on them (profile with `port analyze APP.py`, or give `port migrate --inputs`)",
                        c.signature
                    ),
                ));
            }
        }
        PlanStatus::Refused => {
            // PORT405 describes the GPU plan of a `cuda` function: there is none.
            f.findings.retain(|x| x.code != "PORT405");
            f.verdict = if object.is_empty() {
                Verdict::Nopython
            } else {
                Verdict::Object
            };
            let finding = note(
                "PORT214",
                c.line.unwrap_or(f.line),
                format!(
                    "port migrate refuses it ({}, planned with {}): {}",
                    c.pass.as_deref().unwrap_or("planner"),
                    if c.signature.is_empty() {
                        "no types".to_string()
                    } else if c.types_from == "assumed" {
                        format!("`{}`, types read from the body", c.signature)
                    } else if c.types_from.contains("assumed") {
                        format!("`{}`, types partly read from the body", c.signature)
                    } else {
                        format!("`{}`", c.signature)
                    },
                    c.reason.as_deref().unwrap_or("no reason given")
                ),
            );
            // First among the blockers: it is the reason `main_reason` gives;
            // unless the planner refused it for the analysis's own PORT204
            // (a recurrence, a call in place), which says it more plainly.
            let reason = c.reason.as_deref().unwrap_or_default();
            let own = f
                .findings
                .iter()
                .position(|x| x.code == "PORT204" && reason.contains(&x.message));
            let at = match own {
                Some(k) => k + 1,
                None => f
                    .findings
                    .iter()
                    .position(|x| x.severity >= Severity::Blocker)
                    .unwrap_or(f.findings.len()),
            };
            f.findings.insert(at, finding);
        }
    }
    f.migration_plan = Some(c);
    f
}

fn note(code: &str, line: u32, message: String) -> Finding {
    let rule = port_analyzer::rules::rule(code).expect("catalogued code");
    Finding {
        code: rule.code.into(),
        severity: rule.severity,
        line,
        message,
    }
}
