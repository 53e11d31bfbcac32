//! Admission: whether the planner takes the function at all, from the
//! analysis's verdict and findings (an object-mode function is refused
//! with them), and what it cannot plan whatever the body (a method,
//! `*args`). The analysis's nopython findings are kept, to be quoted after
//! a refusal of the lowering's own.

use port_analyzer::{Severity, Verdict};

use crate::error::Reason;
use crate::pyast;
use crate::request::MigrationRequest;
use crate::source::{self, FoundFunction};

/// The pass: the analysis's findings to quote if the lowering refuses, or
/// the reasons the function is refused now.
pub fn check(
    src: &source::SourceFile,
    found: &FoundFunction,
    def: &rustpython_parser::ast::StmtFunctionDef,
    req: &MigrationRequest,
) -> Result<Vec<Reason>, Vec<Reason>> {
    let line = src.line(def);
    // Object mode is decided by the analysis: such a function is refused
    // with its findings. A nopython verdict is the analysis' view of what a
    // single kernel can take; the host schedule may still take the
    // function, so the planner tries, and its refusal comes first.
    let mut nopython: Vec<Reason> = Vec::new();
    // What the analysis found in a `raise` or `assert` (an f-string
    // message, `str(n)`) is the planner's to judge: at host level the
    // wrapper runs the statement as Python.
    let guard_lines = guard_lines(src, &found.def.body);
    // Names the function's own imports bind: the analysis calls them
    // untyped globals (PORT115), the planner takes them as the module's.
    let imported: Vec<String> = found
        .def
        .body
        .iter()
        .flat_map(source::import_bindings)
        .map(|(local, _)| local)
        .collect();
    let report = req.report.map(|rep| {
        let mut rep = rep.clone();
        rep.findings.retain(|f| !guard_lines.contains(&f.line));
        rep.findings.retain(|f| {
            !(f.code == "PORT115"
                && imported
                    .iter()
                    .any(|n| f.message.contains(&format!("'{n}'"))))
        });
        if rep.verdict == Verdict::Object
            && !rep.findings.iter().any(|f| f.severity == Severity::Object)
        {
            rep.verdict = Verdict::Nopython;
        }
        rep
    });
    if let Some(rep) = report.as_ref() {
        // An object verdict that rests only on how a call's arguments are
        // written (`axis=`, a list shape) is Numba's limit, not port's.
        let argument_level =
            rep.verdict == Verdict::Object && port_analyzer::rules::planner_may_take(&rep.findings);
        if rep.verdict == Verdict::Nopython || argument_level {
            // Quoted after a planner refusal, but not the analysis' guesses
            // of what port's rewrites take (PORT205/206/212) nor its own
            // planning with assumed types (PORT214): the planning here, with
            // the real types, is the word on those.
            // Nor Numba's gaps that port takes (`axis=`, a NumPy function
            // missing from Numba's lists, a call of a helper): they did not
            // stop the planner, and would send the user to the wrong line.
            let planner_decides = ["PORT205", "PORT206", "PORT212", "PORT214"];
            nopython = rep
                .findings
                .iter()
                .filter(|f| f.severity <= Severity::Blocker)
                .filter(|f| !planner_decides.contains(&f.code.as_str()))
                .filter(|f| {
                    f.severity != Severity::Object
                        || !port_analyzer::rules::planner_may_take(std::slice::from_ref(*f))
                })
                .map(|f| Reason::new("analysis", f.line, format!("{} {}", f.code, f.message)))
                .collect();
        } else if rep.verdict != Verdict::Cuda {
            let wanted = if rep.verdict == Verdict::Object {
                Severity::Object
            } else {
                Severity::Blocker
            };
            // What port itself would take (Numba's argument-level and list
            // gaps, helper calls, GPU blockers the planner decides) is not
            // a reason to refuse: list only what stops it here, so the user
            // is not sent to rewrite `np.mgrid` when `x.shape = …` is the
            // problem.
            let takeable = |f: &&port_analyzer::Finding| {
                rep.verdict == Verdict::Object
                    && (f.severity == Severity::Blocker
                        || port_analyzer::rules::planner_may_take(std::slice::from_ref(*f)))
            };
            let reasons: Vec<Reason> = rep
                .findings
                .iter()
                .filter(|f| f.severity == wanted || f.severity == Severity::Blocker)
                .filter(|f| !takeable(f))
                .map(|f| Reason::new("analysis", f.line, format!("{} {}", f.code, f.message)))
                .collect();
            let reasons = if reasons.is_empty() {
                vec![Reason::new(
                    "analysis",
                    rep.line,
                    format!("the analysis found `{}` {}-mode", rep.name, rep.verdict),
                )]
            } else {
                reasons
            };
            return Err(reasons);
        }
    }
    if found.class.is_some() {
        return Err(vec![Reason::new(
            "frontend",
            line,
            format!(
                "`{}` is a method: port migrates module-level functions; move it out of the class{}",
                found.qualname,
                if found.staticmethod { " (it is a staticmethod, so that is a cut and paste)" } else { "" }
            ),
        )]);
    }
    if def.args.vararg.is_some() || def.args.kwarg.is_some() || !def.args.kwonlyargs.is_empty() {
        return Err(vec![Reason::new(
            "frontend",
            line,
            "*args, **kwargs and keyword-only arguments have no kernel equivalent",
        )]);
    }
    Ok(nopython)
}

/// The lines of the `raise` and `assert` statements of `body`, and of its
/// own top-level imports: Python the host schedule keeps (or the patched
/// file's imports take over).
fn guard_lines(
    src: &source::SourceFile,
    body: &[rustpython_parser::ast::Stmt],
) -> std::collections::HashSet<u32> {
    use rustpython_parser::ast::{Ranged, Stmt};
    let mut out = std::collections::HashSet::new();
    for s in body {
        if matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_)) {
            out.insert(src.line_of(s.range().start()));
        }
    }
    pyast::walk_stmts(body, &mut |s| {
        if matches!(s, Stmt::Raise(_) | Stmt::Assert(_)) {
            let (first, last) = (src.line_of(s.range().start()), src.line_of(s.range().end()));
            out.extend(first..=last);
        }
    });
    out
}
