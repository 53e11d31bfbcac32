//! One truth for verdicts: after the static analysis, ask `port migrate`'s
//! planner (planning only, no code printed, nothing verified) about every
//! function that is not in object mode, and let its answer decide `cuda`.
//!
//! - planned → `cuda`; the GPU blockers the static pass guessed are dropped
//!   (the planner takes them), and when Numba itself would refuse the
//!   function (a PORT1xx finding) a PORT406 note says port leads there;
//! - refused → not `cuda`: `nopython`, or `object` where Numba's rules say
//!   so, with the refusal as a PORT214 finding (its line, its rewrite).
//!
//! Types: the captured ones of a profiled call, else those read from how
//! the body uses each argument ([`port_rewriter::assumed_types`]). The
//! analyzer does not depend on the rewriter; the binary joins them here.

use std::collections::HashMap;

use port_analyzer::{Analysis, Finding, FunctionReport, PlanCheck, PlanStatus, Severity, Verdict};
use port_rewriter::source::SourceFile;
use port_rewriter::{ArgType, MigrationRequest, PlanOutcome};

use crate::commands::migrate::{facts_of, local_qualname};

fn worth_asking(f: &FunctionReport) -> bool {
    port_analyzer::rules::planner_may_take(&f.findings)
}

/// Asks the planner about every function and adjusts verdicts, findings and
/// the static coverage (a profile merged later weights it by time).
pub fn apply(a: &mut Analysis) {
    // The planner recurses over the syntax tree like the analyzer does: on
    // a thread with the analyzer's stack, so no input overflows it.
    std::thread::scope(|s| {
        let planned = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn_scoped(s, || apply_here(a))
            .map(|h| h.join());
        if let Ok(Err(panic)) = planned {
            std::panic::resume_unwind(panic);
        }
    });
}

fn apply_here(a: &mut Analysis) {
    let mut sources: HashMap<String, Option<(String, SourceFile)>> = HashMap::new();
    // The static verdicts, as the planner first sees its callees; a second
    // round re-plans callers when a callee's verdict changed.
    let original: Vec<FunctionReport> = a.functions.clone();
    let mut checks: Vec<Option<PlanCheck>> = vec![None; a.functions.len()];
    let mut asked: Vec<bool> = a.functions.iter().map(worth_asking).collect();
    for _round in 0..3 {
        let facts = facts_of(a);
        for (k, f) in original.iter().enumerate() {
            if !asked[k] {
                continue;
            }
            // Each file is read and parsed once, whatever its number of functions.
            let parsed = sources.entry(f.file.clone()).or_insert_with(|| {
                let text = std::fs::read_to_string(&f.file).ok()?;
                let src = SourceFile::parse(&f.file, &text).ok()?;
                Some((text, src))
            });
            let Some((text, src)) = parsed.as_ref() else {
                continue;
            };
            checks[k] = Some(check(text, src, f, &facts));
        }
        let mut changed = false;
        for (k, f) in original.iter().enumerate() {
            if let Some(c) = &checks[k] {
                let adjusted = adjust(f, c.clone());
                if adjusted.verdict != a.functions[k].verdict {
                    changed = true;
                }
                a.functions[k] = adjusted;
            }
        }
        if !changed {
            break;
        }
        // Only functions whose callees may have changed need asking again.
        asked = original
            .iter()
            .map(|f| worth_asking(f) && calls_app(a, f))
            .collect();
    }
    if !a.profiled {
        a.coverage = Analysis::static_coverage(&a.functions);
    }
}

fn calls_app(a: &Analysis, f: &FunctionReport) -> bool {
    let key = format!("{}.{}", f.module, f.qualname);
    a.call_graph
        .edges
        .iter()
        .any(|e| e.caller == key || e.caller == f.qualname)
}

/// Functions longer than this (in characters) are not planned.
const MAX_PLANNED_CHARS: usize = 20_000;

/// The planner's answer for one function.
fn check(
    text: &str,
    src: &SourceFile,
    f: &FunctionReport,
    facts: &port_rewriter::AppFacts,
) -> PlanCheck {
    let name = local_qualname(f);
    // The planner's passes are not linear in the size of one expression: a
    // generated function of tens of thousands of characters is not planned.
    // (From the parsed definition: counting the file's lines up to it, per
    // function, made planning a file quadratic in its length.)
    let size = port_rewriter::source::find(src, &name).map_or(0, |d| src.text_of(d.def).len());
    if size > MAX_PLANNED_CHARS {
        let why = format!("the function is too large to plan ({size} characters; port plans up to {MAX_PLANNED_CHARS})");
        return refused(String::new(), "assumed", why, f.line, "frontend");
    }
    let (types, types_from) = match types_of(src, f, &name) {
        Ok(t) => t,
        Err(reason) => return refused(String::new(), "assumed", reason, f.line, "frontend"),
    };
    let signature = types
        .iter()
        .map(|t| t.numba())
        .collect::<Vec<_>>()
        .join(", ");
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
    };
    match port_rewriter::plan_parsed(src, &req) {
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

fn types_of(
    src: &SourceFile,
    f: &FunctionReport,
    name: &str,
) -> Result<(Vec<ArgType>, &'static str), String> {
    let (params, assumed) =
        port_rewriter::signature::assumed_types_parsed(src, name).map_err(|e| e.to_string())?;
    let captured = f.types.clone().unwrap_or_default();
    if captured.is_empty() {
        return Ok((assumed, "assumed"));
    }
    let mut out = Vec::new();
    for (k, p) in params.iter().enumerate() {
        let t = captured
            .iter()
            .find(|t| t.name == *p)
            .or_else(|| captured.get(k))
            .and_then(|t| port_rewriter::types::from_captured(t).ok());
        match t {
            Some(t) => out.push(t),
            None => return Ok((assumed, "assumed")),
        }
    }
    Ok((out, "captured"))
}

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
