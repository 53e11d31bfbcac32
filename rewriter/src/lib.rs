//! The rewriter: turns a classified, typed Python function into port's
//! kernel IR — grid-stride loops, array expressions as element loops,
//! per-row and whole-array reductions, hoisted allocations — and into the
//! Python source of the migrated function (Numba-CUDA kernels plus a host
//! wrapper), as a list of named rewrites that can each say "not applicable
//! because …".
//!
//! Entry point: [`migrate`]. It parses the user's file and runs the
//! planner's passes, listed in order in [`pipeline`] (file → desugar →
//! admit → lower → finish): the function's top level becomes the host
//! steps of a [`plan::KernelPlan`], and every loop, array expression and
//! reduction becomes a kernel; then [`emit`] prints it. The modules are the
//! pipeline's stages, each using only those before it (`tests/layout.rs`
//! checks it): the foundation (`source`, `siblings`, `pyast`, `types`, `signature`,
//! `error`, `ir_util`, `plan`, `launch`); [`numpy`] (array values with
//! NumPy's meaning, and the extents it requires equal); [`dependences`]; [`lower`] (the lowering context and
//! the passes that make kernels); [`schedule`] (the host steps around
//! them); [`lift`] (the front end that walks the Python AST and hands each
//! construct to its pass); [`emit`]; then the driver: [`request`] (what
//! the planner is asked and answers), [`pipeline`], [`verdicts`] (the
//! planner's answer on every function of an analysis). [`rewrites`] lists the named rewrites
//! in the order the plan reports them. Any construct no rewrite can
//! translate is a refusal with its line ([`error::Reason`]): port never
//! emits a kernel that races or computes something else.
//!
//! Two back ends read the plan: the kernel IR itself (compiled to PTX and
//! run on the simulator by codegen and verify), and [`python`], which prints
//! the same IR as Numba-CUDA source with a host wrapper; [`patch`] turns
//! that into the user's file, patched, and a unified diff.
//!
//! Architecture invariant: the rewriter never runs user code and never
//! writes files; it reads the analysis's output types, not its internals.

pub mod call_types;
pub mod dependences;
pub mod dtypes;
pub mod emit;
pub mod error;
pub mod ir_util;
pub mod launch;
pub mod lift;
pub mod lower;
pub mod numba_declared;
pub mod numpy;
pub mod pipeline;
pub mod plan;
pub mod pyast;
pub mod request;
pub mod rewrites;
pub mod schedule;
pub mod siblings;
pub mod signature;
pub mod source;
pub mod types;
pub mod verdicts;

pub use emit::{patch, python};
pub use error::{Reason, RewriteError};
pub use lower::context::AppFacts;
pub use pipeline::plan_parsed;
pub use plan::{HostStep, HostValue, KernelPlan, LaunchShape, PlanKind, PlanParam};
pub use request::{Migration, MigrationRequest, Outcome, PlanOutcome};
pub use signature::assumed_types;
pub use types::{parse_signature, parse_signature_items, ArgType, SigItem};

/// The parameter names of a function in the file (to ask for types).
pub fn parameters(
    source: &str,
    file_name: &str,
    function: &str,
) -> Result<Vec<String>, RewriteError> {
    Ok(parameters_with_defaults(source, file_name, function)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// The parameter names of a function in the file, each with its default
/// value as written, if it has one (the ones a shorter list of types may
/// leave out).
pub fn parameters_with_defaults(
    source: &str,
    file_name: &str,
    function: &str,
) -> Result<Vec<(String, Option<String>)>, RewriteError> {
    let src = source::SourceFile::parse(file_name, source)?;
    let found = source::find(&src, function)?;
    Ok(found
        .def
        .args
        .args
        .iter()
        .map(|a| {
            let default = a.default.as_deref().map(|d| src.text_of(d).to_string());
            (a.def.arg.to_string(), default)
        })
        .collect())
}

/// Each parameter's default when it is `None` or a string, as Python
/// writes it ([`call_types::literal_defaults`]).
pub fn parameter_literal_defaults(
    source: &str,
    file_name: &str,
    function: &str,
) -> Result<Vec<Option<String>>, RewriteError> {
    let src = source::SourceFile::parse(file_name, source)?;
    Ok(call_types::literal_defaults(
        source::find(&src, function)?.def,
    ))
}

/// Migrates one function: a plan and its patch, or the reasons it cannot be.
pub fn migrate(req: &MigrationRequest) -> Result<Outcome, RewriteError> {
    let plan = match plan(req)? {
        PlanOutcome::Planned(p) => *p,
        PlanOutcome::Refused(r) => return Ok(Outcome::Refused(r)),
    };
    let src = source::SourceFile::parse(req.file_name, req.source)?;
    let def = source::find(&src, req.function)?.def;
    let doc = docstring(def);
    let python = python::render(&plan, doc.as_deref(), &signature(&src, def));
    let new_source = patch::patched_file(&src, def, &python);
    let diff = patch::unified_diff(req.file_name, req.source, &new_source);
    Ok(Outcome::Migrated(Box::new(Migration {
        plan,
        python,
        new_source,
        diff,
    })))
}

/// `def`'s signature as written: annotations and defaults are the user's
/// text, so the wrapper is called (and type-checked) as the original was.
fn signature(
    src: &source::SourceFile,
    def: &rustpython_parser::ast::StmtFunctionDef,
) -> python::Signature {
    let mut sig = python::Signature::default();
    for a in &def.args.args {
        let name = a.def.arg.to_string();
        let mut p = name.clone();
        if let Some(ann) = &a.def.annotation {
            p.push_str(": ");
            p.push_str(src.text_of(ann.as_ref()));
        }
        if let Some(d) = &a.default {
            let eq = if a.def.annotation.is_some() {
                " = "
            } else {
                "="
            };
            p.push_str(eq);
            p.push_str(src.text_of(d.as_ref()));
        }
        sig.names.push(name);
        sig.params.push(p);
    }
    sig.returns = def
        .returns
        .as_ref()
        .map(|r| src.text_of(r.as_ref()).to_string());
    sig
}

/// Plans one function without printing anything: what `port migrate` would
/// build, or why it refuses. `port analyze` asks this once per function, so
/// that its `cuda` verdict means exactly "migrate has a plan".
pub fn plan(req: &MigrationRequest) -> Result<PlanOutcome, RewriteError> {
    let src = source::SourceFile::parse(req.file_name, req.source)?;
    plan_parsed(&src, req)
}

fn docstring(def: &rustpython_parser::ast::StmtFunctionDef) -> Option<String> {
    match def.body.first() {
        Some(rustpython_parser::ast::Stmt::Expr(e)) => match e.value.as_ref() {
            rustpython_parser::ast::Expr::Constant(c) => match &c.value {
                rustpython_parser::ast::Constant::Str(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}
