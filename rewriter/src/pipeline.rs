//! The planner, as its list of passes, in the order they run. Each pass is
//! a module with one entry point; each may refuse, with its reasons and
//! their lines; none calls back into this list.
//!
//! 1. **file** (here): the file as the function sees it — the helpers
//!    it imports from modules beside it read as its own
//!    ([`crate::siblings::with_sibling_helpers`]), its own
//!    `import numpy as np` taken as the module's, `if 0:` decided and
//!    constant tuples as ranges ([`crate::source::SourceFile::normalised`]),
//!    and nested `def`s that capture nothing hoisted to the module level
//!    ([`desugar::capture_free_nested_defs`]);
//! 2. **desugar** ([`desugar::body`]): the body rewritten into the forms
//!    the lowering takes (one of its rules in [`float_winners`]);
//! 3. **admit** ([`admit::check`]): the analysis's verdict and findings;
//! 4. **infer types** ([`typing::infer`]): the type of every scalar the
//!    body (and each device function it calls) binds, from NumPy 2's
//!    rules, or the names it cannot type;
//! 5. **lower** ([`lowering::lower`]): host steps and kernels, declaring
//!    the table's types (the named rewrites of [`crate::rewrites`] are the
//!    lowering's rules); names the table left out are observed, and lowered
//!    again while one widens;
//! 6. **finish** ([`finish::finish`]): index ranges checked before their
//!    launches ([`crate::schedule::bounds`]), guards placed, kernels fused
//!    ([`crate::schedule::fuse`]), dead scalars dropped, fp32.
//!
//! Printing the plan as Python and the patch ([`crate::emit`]) comes after,
//! in [`crate::migrate`].

pub mod admit;
pub mod desugar;
pub mod finish;
pub mod float_winners;
pub mod lowering;
pub mod typing;

use crate::error::RewriteError;
use crate::request::{MigrationRequest, PlanOutcome};
use crate::source;

/// [`crate::plan`] on a file already parsed (`req.source` is not read
/// again): asking about every function of a file parses it once.
pub fn plan_parsed(
    src: &source::SourceFile,
    req: &MigrationRequest,
) -> Result<PlanOutcome, RewriteError> {
    // The caller's module, where a callee it names is looked up first.
    let (with_module, in_module);
    let req = match req.report {
        Some(r) if req.facts.module.is_none() => {
            let mut facts = req.facts.clone();
            facts.module = Some(r.module.clone());
            with_module = facts;
            in_module = MigrationRequest {
                facts: &with_module,
                ..*req
            };
            &in_module
        }
        _ => req,
    };
    // 1. The file. The helpers it imports from the modules beside it
    // (`from .utils import _log_n`) are read as if it defined them.
    let joined = crate::siblings::with_sibling_helpers(src, req.function);
    let src = joined.as_deref().unwrap_or(src);
    // A function's own `import numpy as np` (Numba refuses it, PORT112) is
    // planned as the module's import; the patched file imports it at the
    // top, where kernels see it.
    let found = source::find(src, req.function)?;
    let local: Vec<&rustpython_parser::ast::Stmt> = found
        .def
        .body
        .iter()
        .filter(|s| {
            matches!(
                s,
                rustpython_parser::ast::Stmt::Import(_)
                    | rustpython_parser::ast::Stmt::ImportFrom(_)
            )
        })
        .collect();
    let with_imports = src.with_imports(&local);
    let src = with_imports.as_ref().unwrap_or(src);
    // `if 0:` decided, `for d in (-1, 0, 1)` as a `range`, in every
    // function (the helpers a migration inlines too).
    // Calls written as Python and NumPy define them (`np.append`,
    // `np.copyto`, `pow`, a positional `out`) rewritten there too.
    let src = src.normalised(desugar::calls_as_defined).unwrap_or(src);
    // Nested functions that capture nothing of the function around them
    // (`def fprime(x): return 1 - tanh(x) ** 2`) are the program's own
    // helpers, planned as if they stood at the module level.
    let found = source::find(src, req.function)?;
    let nested = desugar::capture_free_nested_defs(src, found.def);
    if nested.is_empty() {
        return plan_function(src, req);
    }
    // The analysis judged them as closures (PORT210): its verdicts on
    // them, and its findings about them, do not apply to helpers.
    let mut facts = req.facts.clone();
    facts
        .hidden
        .extend(nested.iter().map(|d| d.name.to_string()));
    let report = req.report.map(|r| {
        let mut r = r.clone();
        r.findings.retain(|f| f.code != "PORT210");
        r
    });
    let hoisted = src.with_functions(nested);
    let req = MigrationRequest {
        facts: &facts,
        report: report.as_ref(),
        ..*req
    };
    plan_function(&hoisted, &req)
}

/// Passes 2 to 5 on the function in its file.
fn plan_function(
    src: &source::SourceFile,
    req: &MigrationRequest,
) -> Result<PlanOutcome, RewriteError> {
    let found = source::find(src, req.function)?;
    let d = match desugar::body(src, &found, req)? {
        Ok(d) => d,
        Err(reasons) => return Ok(PlanOutcome::Refused(reasons)),
    };
    let nopython = match admit::check(src, &found, &d.def, req) {
        Ok(n) => n,
        Err(reasons) => return Ok(PlanOutcome::Refused(reasons)),
    };
    let plan = match lowering::lower(src, &d.def, &d.names, req, nopython) {
        Ok(p) => p,
        Err(reasons) => return Ok(PlanOutcome::Refused(reasons)),
    };
    let line = src.line(&d.def);
    let mut plan = finish::finish(plan, d.defaults, line, req);
    // Lines of helpers borrowed from modules beside the file, named in
    // their own files.
    if !src.borrowed.is_empty() {
        for r in &mut plan.rewrites {
            r.note = src.shown_lines_in(&r.note);
        }
    }
    Ok(PlanOutcome::Planned(Box::new(plan)))
}
