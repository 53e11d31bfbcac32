//! The rewriter: turns a classified, typed Python function into port's
//! kernel IR — grid-stride loops, array expressions as element loops,
//! per-row and whole-array reductions, hoisted allocations — and into the
//! Python source of the migrated function (Numba-CUDA kernels plus a host
//! wrapper), as a list of named rewrites that can each say "not applicable
//! because …".
//!
//! Entry point: [`migrate`]. It parses the user's file, finds the function,
//! refuses at once when the analysis found it object- or nopython-mode
//! (quoting its findings), then lowers it: the function's top level becomes
//! the host steps of a [`plan::KernelPlan`], and every loop, array
//! expression and reduction becomes a kernel. The modules are the
//! pipeline's stages, each using only those before it (`tests/layout.rs`
//! checks it): the foundation (`source`, `pyast`, `types`, `signature`,
//! `error`, `ir_util`, `plan`, `launch`); [`numpy`] (array values with
//! NumPy's meaning, and the extents it requires equal); [`dependences`]; [`lower`] (the lowering context and
//! the passes that make kernels); [`schedule`] (the host steps around
//! them); [`lift`] (the front end that walks the Python AST and hands each
//! construct to its pass); [`emit`]. [`rewrites`] lists the named rewrites
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

pub mod dependences;
pub mod emit;
pub mod error;
pub mod ir_util;
pub mod launch;
pub mod lift;
pub mod lower;
pub mod numpy;
pub mod plan;
pub mod pyast;
pub mod rewrites;
pub mod schedule;
pub mod signature;
pub mod source;
pub mod types;
pub mod verdicts;

use std::collections::HashMap;

use port_analyzer::{FunctionReport, Severity, Verdict};
use port_codegen::ir::ScalarType;

pub use emit::{patch, python};
pub use error::{Reason, RewriteError};
pub use lower::context::AppFacts;
pub use plan::{HostStep, HostValue, KernelPlan, LaunchShape, PlanKind, PlanParam};
pub use signature::assumed_types;
pub use types::{parse_signature, ArgType};

/// What to migrate.
pub struct MigrationRequest<'a> {
    /// The user's file, as text.
    pub source: &'a str,
    /// Its name in messages and in the diff header.
    pub file_name: &'a str,
    /// The function's name in the file: `f` or `Class.method`.
    pub function: &'a str,
    /// One type per parameter.
    pub types: &'a [ArgType],
    /// Verdicts of the program's functions (for calls).
    pub facts: &'a AppFacts,
    /// The analysis of this function, when there is one.
    pub report: Option<&'a FunctionReport>,
    /// Lower float64 to float32.
    pub fp32: bool,
    /// Shapes of the array arguments in the inputs the plan will be
    /// verified on (captured or given), when known: an axis of extent 1
    /// there is planned as a broadcast axis ([`lower::shapes`]).
    pub input_shapes: &'a [(String, Vec<usize>)],
}

/// A migrated function: the plan and everything made from it.
#[derive(Clone, Debug)]
pub struct Migration {
    pub plan: KernelPlan,
    /// Device functions, kernels and the wrapper, as Python.
    pub python: String,
    /// The whole file with the function replaced.
    pub new_source: String,
    /// Unified diff from the user's file to `new_source`.
    pub diff: String,
}

/// The result of [`migrate`].
#[derive(Clone, Debug)]
pub enum Outcome {
    Migrated(Box<Migration>),
    /// The function cannot become a correct kernel: every reason, with its line.
    Refused(Vec<Reason>),
}

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

/// The parameter names of a function in the file, each with whether it
/// has a default value (the ones a shorter list of types may leave out).
pub fn parameters_with_defaults(
    source: &str,
    file_name: &str,
    function: &str,
) -> Result<Vec<(String, bool)>, RewriteError> {
    let src = source::SourceFile::parse(file_name, source)?;
    let found = source::find(&src, function)?;
    Ok(found
        .def
        .args
        .args
        .iter()
        .map(|a| (a.def.arg.to_string(), a.default.is_some()))
        .collect())
}

/// The result of [`plan`]: the plan alone, before any source is printed.
#[derive(Clone, Debug)]
pub enum PlanOutcome {
    Planned(Box<KernelPlan>),
    /// Every reason, with its line; the first is the planner's own.
    Refused(Vec<Reason>),
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

/// [`plan`] on a file already parsed (`req.source` is not read again):
/// asking about every function of a file parses it once.
pub fn plan_parsed(
    src: &source::SourceFile,
    req: &MigrationRequest,
) -> Result<PlanOutcome, RewriteError> {
    // A function's own `import numpy as np` (Numba refuses it, PORT112):
    // planned as the module's import; the patched file imports it at the
    // top, where kernels see it.
    {
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
        if let Some(with) = src.with_imports(&local) {
            return plan_parsed(&with, req);
        }
    }
    // `if 0:` decided, `for d in (-1, 0, 1)` as a `range`, in every
    // function (the helpers a migration inlines too).
    if let Some(normal) = src.normalised() {
        return plan_parsed(normal, req);
    }
    // Nested functions that capture nothing of the function around them
    // (`def fprime(x): return 1 - tanh(x) ** 2`) are the program's own
    // helpers, planned as if they stood at the module level.
    let found = source::find(src, req.function)?;
    let nested = capture_free_nested_defs(src, found.def);
    if !nested.is_empty() {
        // The analysis judged them as closures (PORT210): its verdicts on
        // them, and its findings about them, do not apply to helpers.
        let names: Vec<String> = nested.iter().map(|d| d.name.to_string()).collect();
        let mut facts = req.facts.clone();
        facts.hidden.extend(names);
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
        return plan_hoisted(&hoisted, &req);
    }
    plan_hoisted(src, req)
}

/// The top-level `def`s of `f`'s body that read no local of `f` (only
/// their own parameters and locals, the module's names and builtins), and
/// whose names no module-level name already has.
fn capture_free_nested_defs(
    src: &source::SourceFile,
    f: &rustpython_parser::ast::StmtFunctionDef,
) -> Vec<rustpython_parser::ast::StmtFunctionDef> {
    use rustpython_parser::ast::{Expr, Stmt};
    const BUILTINS: [&str; 16] = [
        "abs",
        "min",
        "max",
        "range",
        "len",
        "float",
        "int",
        "bool",
        "round",
        "sum",
        "pow",
        "complex",
        "divmod",
        "enumerate",
        "zip",
        "print",
    ];
    let module = src.module_names();
    let mut out = Vec::new();
    for s in &f.body {
        let Stmt::FunctionDef(d) = s else { continue };
        if module.contains(d.name.as_str()) || !d.decorator_list.is_empty() {
            continue;
        }
        let mut own: std::collections::HashSet<String> =
            pyast::param_names(&d.args).into_iter().collect();
        own.extend(pyast::names_rebound(&d.body));
        let mut captures = false;
        pyast::walk_stmts(&d.body, &mut |st| {
            if matches!(
                st,
                Stmt::FunctionDef(_) | Stmt::Global(_) | Stmt::Nonlocal(_)
            ) {
                captures = true;
            }
            for e in pyast::stmt_exprs(st) {
                pyast::walk_expr(e, &mut |x| {
                    if let Expr::Name(n) = x {
                        let id = n.id.as_str();
                        if !own.contains(id) && !module.contains(id) && !BUILTINS.contains(&id) {
                            captures = true;
                        }
                    }
                });
            }
        });
        if !captures {
            out.push(d.clone());
        }
    }
    out
}

fn plan_hoisted(
    src: &source::SourceFile,
    req: &MigrationRequest,
) -> Result<PlanOutcome, RewriteError> {
    let found = source::find(src, req.function)?;
    // `for v in x` and `for i, v in enumerate(x)` as the index loops the
    // rewrites take; nested functions planned as module-level helpers
    // leave the body.
    let mut desugared = found.def.clone();
    desugared.body.retain(|s| {
        !matches!(s, rustpython_parser::ast::Stmt::FunctionDef(d)
            if src.module_function(d.name.as_str()).is_some()
                && src.suite.iter().any(|m| matches!(m, rustpython_parser::ast::Stmt::FunctionDef(h)
                    if h.name == d.name && rustpython_parser::ast::Ranged::range(h) == rustpython_parser::ast::Ranged::range(d))))
    });
    // The function's own imports are the module's (see `plan_parsed`).
    desugared.body.retain(|s| {
        !matches!(
            s,
            rustpython_parser::ast::Stmt::Import(_) | rustpython_parser::ast::Stmt::ImportFrom(_)
        )
    });
    pyast::desugar_element_loops(&mut desugared.body);
    // `out[i][j]` as `out[i, j]`.
    pyast::merge_chained_subscripts(&mut desugared.body);
    // A running maximum and its position (a pivot search) as np.argmax.
    {
        // NumPy's local name (a file that does not import it: `numpy`,
        // which resolves to itself).
        let np = src
            .imports
            .iter()
            .find(|(_, full)| full.as_str() == "numpy")
            .map_or_else(|| "numpy".to_string(), |(local, _)| local.clone());
        argmax_loops(src, &np, &mut desugared.body);
    }
    // Returns from inside `if`s as one return at the end.
    {
        let mut used = lower::context::UsedNames::new(src.module_names());
        for p in pyast::param_names(&desugared.args) {
            used.insert(p);
        }
        pyast::walk_stmts(&desugared.body, &mut |s| {
            for e in pyast::stmt_exprs(s) {
                pyast::walk_expr(e, &mut |x| {
                    if let rustpython_parser::ast::Expr::Name(n) = x {
                        used.insert(n.id.to_string());
                    }
                });
            }
        });
        pyast::single_exit(&mut desugared.body, &mut |base| {
            let mut k = 0;
            loop {
                let name = if k == 0 {
                    base.to_string()
                } else {
                    format!("{base}_{k}")
                };
                k += 1;
                if used.insert(name.clone()) {
                    return name;
                }
            }
        });
    }
    // `np.copyto(dst, src)` as `dst[:] = src`.
    copyto_as_stores(src, &mut desugared.body);
    // Names holding a tuple literal (`shape = (n, m)`) as a name per element.
    pyast::split_tuple_names(&pyast::param_names(&desugared.args), &mut desugared.body);
    let def = &desugared;
    let names: Vec<String> = def
        .args
        .args
        .iter()
        .map(|a| a.def.arg.to_string())
        .collect();
    // Fewer types than parameters, the rest defaulted (`poly=0x8408`,
    // `mode="same"`, `axis=-1`): the call the user has in mind leaves them
    // out. The plan is specialised to the defaults: a parameter never
    // rebound reads as its default wherever it appears (so `axis=axis` is a
    // constant axis), one rebound starts as it; the wrapper keeps them in
    // its signature and refuses other values ([`KernelPlan::defaults`]).
    // A default that is not a constant (`w=np.ones(3)`) is refused.
    let params = def.args.args.clone();
    let rebound = pyast::names_rebound(&def.body);
    let def_line = src.line(def);
    let mut defaults: Vec<(String, String)> = Vec::new();
    let given = req.types.len().min(names.len());
    if req.types.len() < names.len() && params[given..].iter().all(|a| a.default.is_some()) {
        let mut prelude: Vec<rustpython_parser::ast::Stmt> = Vec::new();
        let mut subst: Vec<(String, rustpython_parser::ast::Expr)> = Vec::new();
        for a in &params[given..] {
            let d = a.default.as_deref().expect("checked");
            let name = a.def.arg.to_string();
            if !constant_default(src, d) {
                return Ok(PlanOutcome::Refused(vec![Reason::new(
                    "frontend",
                    def_line,
                    format!(
                        "`{name}={}` left to its default, which is not a constant: port specialises a migration to the defaults it leaves out; give --signature a type for `{name}` too",
                        src.text_of(d)
                    ),
                )]));
            }
            defaults.push((name.clone(), src.text_of(d).to_string()));
            // A list or tuple of numbers reads as the array NumPy makes of
            // it wherever the function hands it to NumPy (`np.bitwise_and(
            // mask, v)`, `mask == v`): `np.array([1, 0, 1])`, a constant
            // template.
            let numpy = src
                .imports
                .iter()
                .find(|(_, full)| full.as_str() == "numpy")
                .map(|(local, _)| local.clone());
            let d = &match (d, numpy) {
                (
                    rustpython_parser::ast::Expr::List(_) | rustpython_parser::ast::Expr::Tuple(_),
                    Some(np),
                ) => array_of(d, &np),
                _ => d.clone(),
            };
            if rebound.contains(&name) {
                prelude.push(rustpython_parser::ast::Stmt::Assign(
                    rustpython_parser::ast::StmtAssign {
                        range: rustpython_parser::ast::Ranged::range(d),
                        targets: vec![rustpython_parser::ast::Expr::Name(
                            rustpython_parser::ast::ExprName {
                                range: rustpython_parser::ast::Ranged::range(d),
                                id: name.as_str().into(),
                                ctx: rustpython_parser::ast::ExprContext::Store,
                            },
                        )],
                        value: Box::new(d.clone()),
                        type_comment: None,
                    },
                ));
            } else {
                subst.push((name, d.clone()));
            }
        }
        // `if nfft is None: nfft = n` before anything else reads `nfft`:
        // decided now, as the parameter is its default there.
        for (name, d) in &defaults {
            if d == "None" {
                fold_none_tests(&mut desugared.body, name);
            }
        }
        pyast::walk_body_exprs_mut(&mut desugared.body, &mut |e| {
            if let rustpython_parser::ast::Expr::Name(n) = e {
                if let Some((_, d)) = subst.iter().find(|(k, _)| n.id.as_str() == k) {
                    *e = d.clone();
                    return true;
                }
            }
            false
        });
        let at = usize::from(desugared.body.first().is_some_and(pyast::is_docstring));
        desugared.body.splice(at..at, prelude);
        desugared.args.args.truncate(given);
    }
    let def = &desugared;
    let names: Vec<String> = names[..names.len().min(def.args.args.len())].to_vec();
    if req.types.len() != names.len() {
        return Err(RewriteError::SignatureArity {
            function: req.function.to_string(),
            given: req.types.len(),
            expected: names.len(),
            params: names.join(", "),
        });
    }
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
            return Ok(PlanOutcome::Refused(reasons));
        }
    }
    if found.class.is_some() {
        return Ok(PlanOutcome::Refused(vec![Reason::new(
            "frontend",
            line,
            format!(
                "`{}` is a method: port migrates module-level functions; move it out of the class{}",
                found.qualname,
                if found.staticmethod { " (it is a staticmethod, so that is a cut and paste)" } else { "" }
            ),
        )]));
    }
    if def.args.vararg.is_some() || def.args.kwarg.is_some() || !def.args.kwonlyargs.is_empty() {
        return Ok(PlanOutcome::Refused(vec![Reason::new(
            "frontend",
            line,
            "*args, **kwargs and keyword-only arguments have no kernel equivalent",
        )]));
    }
    let scans: Vec<(u32, String)> = req
        .report
        .map(|r| {
            r.findings
                .iter()
                .filter(|f| f.code == "PORT204")
                .map(|f| (f.line, f.message.clone()))
                .collect()
        })
        .unwrap_or_default();

    let ufunc = lower::scalar_function::is_scalar_function(src, def, req.types);
    let unit_dims = lower::shapes::unit_dims_of(req.input_shapes, &pyast::names_rebound(&def.body));
    let fixed_point = |ufunc: bool| {
        let mut types: HashMap<String, ScalarType> = HashMap::new();
        let mut last: Option<Result<lower::context::Lowerer, Box<Reason>>> = None;
        for _ in 0..6 {
            let mut l =
                lower::context::Lowerer::new(src, req.facts, def.name.as_str(), types.clone());
            l.analysis_scans = scans.clone();
            l.unit_dims = unit_dims.clone();
            let res = run(&mut l, def, &names, req.types, ufunc);
            let observed = l.observed_types();
            let widened = observed.iter().any(|(k, t)| {
                types
                    .get(k)
                    .is_none_or(|g| crate::ir_util::join(*g, *t) != *g)
            });
            let mut next = types.clone();
            for (k, t) in &observed {
                let j = next.get(k).map_or(*t, |g| crate::ir_util::join(*g, *t));
                next.insert(k.clone(), j);
            }
            let done = !widened;
            types = next;
            last = Some(res.map(|()| l));
            if done {
                break;
            }
        }
        last.expect("at least one pass")
    };
    let mut last = fixed_point(ufunc);
    // Array arguments handed to helpers of the program: when the helpers
    // are no element functions, they are inlined into a host schedule.
    if ufunc && last.is_err() && req.types.iter().any(|t| t.is_array()) {
        let l = lower::context::Lowerer::new(src, req.facts, def.name.as_str(), HashMap::new());
        if l.body_calls_app(&def.body) {
            last = fixed_point(false);
        }
    }
    let l = match last {
        Ok(l) => l,
        Err(reason) => {
            let first = *reason;
            let mut all: Vec<Reason> = nopython
                .into_iter()
                .filter(|n| n.line != first.line)
                .collect();
            all.insert(0, first);
            return Ok(PlanOutcome::Refused(all));
        }
    };
    let mut l = l;
    l.finish_mutated();
    l.flush_guards();
    let mut plan = finish(l, &names, req.types);
    plan.defaults = defaults;
    if plan.kind == PlanKind::Kernels {
        // Only the arguments' axes the plan really read as broadcast.
        plan.unit_dims = unit_dims;
        let mut steps = lower::shapes::specialisation_guards(&plan.unit_dims, line);
        steps.append(&mut plan.steps);
        plan.steps = steps;
        lower::shapes::place_guards(&mut plan);
        let fused = schedule::fuse::fuse_plan(&mut plan);
        if !fused.is_empty() {
            for r in &mut plan.rewrites {
                if r.rewrite == schedule::fuse::NAME {
                    r.applied = true;
                    r.note = fused.join("; ");
                }
            }
        }
    }
    plan.drop_unused_scalars();
    // The captured call passed one array for two parameters, and the plan
    // stands (the analysis raises PORT204 where that is unsafe).
    plan.same_array_ok = req
        .report
        .and_then(|r| r.types.as_ref())
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t.same_as.as_ref().map(|f| (t.name.clone(), f.clone())))
                .collect()
        })
        .unwrap_or_default();
    if req.fp32 {
        lower::fp32::lower_plan(&mut plan);
        for r in &mut plan.rewrites {
            if r.rewrite == lower::fp32::NAME {
                r.applied = true;
                r.note =
                    "float64 lowered to float32 (kernels, device arrays); results converted back"
                        .into();
            }
        }
    }
    Ok(PlanOutcome::Planned(Box::new(plan)))
}

/// Each statement `np.copyto(dst, src)` (no `casting=`/`where=`) of `body`
/// as `dst[:] = src`: NumPy's assignment into the whole of `dst`,
/// broadcasting `src`, which the rewrites take like any store (in a time
/// loop, a kernel per iteration).
fn copyto_as_stores(src: &source::SourceFile, body: &mut [rustpython_parser::ast::Stmt]) {
    use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
    for s in body.iter_mut() {
        for b in pyast::child_bodies_mut(s) {
            copyto_as_stores(src, b);
        }
        let Stmt::Expr(e) = s else { continue };
        let Expr::Call(c) = e.value.as_ref() else {
            continue;
        };
        if src.resolve(&c.func).as_deref() != Some("numpy.copyto")
            || c.args.len() != 2
            || !c.keywords.is_empty()
        {
            continue;
        }
        let range = e.range();
        let whole = Expr::Slice(ast::ExprSlice {
            range: c.args[0].range(),
            lower: None,
            upper: None,
            step: None,
        });
        let target = Expr::Subscript(ast::ExprSubscript {
            range: c.args[0].range(),
            value: Box::new(c.args[0].clone()),
            slice: Box::new(whole),
            ctx: ast::ExprContext::Store,
        });
        *s = Stmt::Assign(ast::StmtAssign {
            range,
            targets: vec![target],
            value: Box::new(c.args[1].clone()),
            type_comment: None,
        });
    }
}

/// `np.array(<d>)` (with the module's own name for NumPy), carrying `d`'s
/// place in the source.
fn array_of(d: &rustpython_parser::ast::Expr, numpy: &str) -> rustpython_parser::ast::Expr {
    use rustpython_parser::ast::{self, Ranged};
    let range = d.range();
    let np = pyast::name_node(numpy, range, ast::ExprContext::Load);
    pyast::call_node(
        pyast::attribute_node(np, "array", range),
        vec![d.clone()],
        range,
    )
}

/// Replaces each top-level `if name is None:` (or `is not None`) of `body`
/// by the branch taken while `name` is still `None`: up to the first
/// other statement that mentions `name`.
fn fold_none_tests(body: &mut Vec<rustpython_parser::ast::Stmt>, name: &str) {
    use rustpython_parser::ast::{CmpOp, Constant, Expr, Stmt};
    let test_of = |s: &Stmt| -> Option<bool> {
        let Stmt::If(i) = s else { return None };
        let Expr::Compare(c) = i.test.as_ref() else {
            return None;
        };
        let is_name = matches!(c.left.as_ref(), Expr::Name(n) if n.id.as_str() == name);
        let is_none = matches!(c.comparators.as_slice(), [Expr::Constant(k)] if matches!(k.value, Constant::None));
        match c.ops.as_slice() {
            [CmpOp::Is] if is_name && is_none => Some(true),
            [CmpOp::IsNot] if is_name && is_none => Some(false),
            _ => None,
        }
    };
    let mut k = 0;
    while k < body.len() {
        match test_of(&body[k]) {
            Some(taken) => {
                let Stmt::If(i) = body.remove(k) else {
                    unreachable!("an if")
                };
                let branch = if taken { i.body } else { i.orelse };
                let n = branch.len();
                body.splice(k..k, branch);
                k += n;
            }
            None => {
                if pyast::body_mentions(std::slice::from_ref(&body[k]), name) {
                    return;
                }
                k += 1;
            }
        }
    }
}

/// Whether a parameter's default is a constant the plan can be
/// specialised to: a literal (a number, a string, `None`, `True`), a
/// negated number, or a module-level constant.
fn constant_default(src: &source::SourceFile, d: &rustpython_parser::ast::Expr) -> bool {
    use rustpython_parser::ast::{Constant, Expr};
    match d {
        Expr::Constant(c) => matches!(
            c.value,
            Constant::Int(_)
                | Constant::Float(_)
                | Constant::Bool(_)
                | Constant::None
                | Constant::Str(_)
        ),
        // `mask=[1, 0, 1]`: a literal of numbers.
        Expr::List(l) => l.elts.iter().all(|e| src.eval_const(e).is_some()),
        Expr::Tuple(t) => t.elts.iter().all(|e| src.eval_const(e).is_some()),
        // `mode=wrap`: a function of the module, called as a helper.
        Expr::Name(n) if src.eval_const(d).is_none() => src
            .functions_named(n.id.as_str())
            .iter()
            .any(|f| f.def.name.as_str() == n.id.as_str()),
        _ => src.eval_const(d).is_some(),
    }
}

fn run(
    l: &mut lower::context::Lowerer,
    def: &rustpython_parser::ast::StmtFunctionDef,
    names: &[String],
    types: &[ArgType],
    ufunc: bool,
) -> Result<(), Box<Reason>> {
    if ufunc {
        let (params, ret, outs) = l.ufunc_plan(def, types)?;
        l.ufunc = Some((params, ret, outs));
        return Ok(());
    }
    for (n, t) in names.iter().zip(types) {
        l.params.push((n.clone(), *t));
        match t {
            ArgType::Array(a) => l
                .host
                .insert(n.clone(), lower::context::HostBind::Array(*a)),
            ArgType::Scalar(s) => l
                .host
                .insert(n.clone(), lower::context::HostBind::Scalar(*s)),
        };
        l.used.insert(n.clone());
    }
    let ret = l.host_body(&def.body)?;
    l.ret = ret;
    Ok(())
}

fn finish(l: lower::context::Lowerer, names: &[String], types: &[ArgType]) -> KernelPlan {
    let rewrites = rewrites::records(&l.log);
    let (kind, params, ret, outs) = match l.ufunc {
        Some((params, ret, outs)) => (PlanKind::Ufunc, params, Some(ret), outs),
        None => (
            PlanKind::Kernels,
            names
                .iter()
                .zip(types)
                .map(|(n, t)| PlanParam {
                    name: n.clone(),
                    ty: *t,
                    kernel_ty: *t,
                    elementwise: false,
                })
                .collect(),
            l.ret,
            Vec::new(),
        ),
    };
    KernelPlan {
        defaults: Vec::new(),
        function: l.fn_name.clone(),
        kind,
        params,
        module: l.module,
        steps: l.steps,
        ret,
        mutated: l.mutated.into_iter().collect(),
        ufunc_outputs: outs,
        rewrites,
        fp32: false,
        docs: l.docs,
        unit_dims: Vec::new(),
        same_array_ok: Vec::new(),
    }
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

/// `for i in range(a, b): if E > best: best = E; at = i` — a running
/// maximum and where it is (a pivot search), which carries both names from
/// one iteration to the next — as NumPy's arg-reduction of `E` over the
/// range (`<` is an argmin): `values = E` with `i` as `np.arange(a, b)`;
/// then, when the range is not empty, `k = np.argmax(values)` and, if
/// `np.max(values) > best`, `best = np.max(values); at = a + k`. A strict comparison
/// keeps the first of equal values, as `np.argmax` does. Applies to loops
/// at any depth of `body`.
fn argmax_loops(
    src: &source::SourceFile,
    numpy: &str,
    body: &mut Vec<rustpython_parser::ast::Stmt>,
) {
    use rustpython_parser::ast::{self, CmpOp, Expr, ExprContext, Stmt};
    let mut k = 0;
    while k < body.len() {
        for b in pyast::child_bodies_mut(&mut body[k]) {
            argmax_loops(src, numpy, b);
        }
        let Stmt::For(f) = &body[k] else {
            k += 1;
            continue;
        };
        let found = (|| {
            let Expr::Name(iv) = f.target.as_ref() else {
                return None;
            };
            let Expr::Call(c) = f.iter.as_ref() else {
                return None;
            };
            if !matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "range")
                || !c.keywords.is_empty()
                || !f.orelse.is_empty()
            {
                return None;
            }
            let (start, stop) = match c.args.as_slice() {
                [b] => (None, b.clone()),
                [a, b] => (Some(a.clone()), b.clone()),
                _ => return None,
            };
            let [Stmt::If(test)] = f.body.as_slice() else {
                return None;
            };
            if !test.orelse.is_empty() || test.body.len() != 2 {
                return None;
            }
            let Expr::Compare(cmp) = test.test.as_ref() else {
                return None;
            };
            let ([op], [right]) = (cmp.ops.as_slice(), cmp.comparators.as_slice()) else {
                return None;
            };
            // (E, best, argmax?)
            let (e, best, max) = match (cmp.left.as_ref(), op, right) {
                (e, CmpOp::Gt, Expr::Name(b)) => (e, b, true),
                (e, CmpOp::Lt, Expr::Name(b)) => (e, b, false),
                (Expr::Name(b), CmpOp::Lt, e) => (e, b, true),
                (Expr::Name(b), CmpOp::Gt, e) => (e, b, false),
                _ => return None,
            };
            let mut at = None;
            let mut assigned_e = false;
            for s in &test.body {
                let Stmt::Assign(a) = s else { return None };
                let [Expr::Name(t)] = a.targets.as_slice() else {
                    return None;
                };
                if t.id == best.id && src.norm_text(a.value.as_ref()) == src.norm_text(e) {
                    assigned_e = true;
                } else if matches!(a.value.as_ref(), Expr::Name(v) if v.id == iv.id) {
                    at = Some(t.id.to_string());
                } else {
                    return None;
                }
            }
            let at = at?;
            let i = iv.id.as_str();
            if !assigned_e
                || at == best.id.as_str()
                || !pyast::mentions(e, i)
                || pyast::mentions(e, best.id.as_str())
                || pyast::mentions(e, &at)
            {
                return None;
            }
            Some((
                i.to_string(),
                start,
                stop,
                e.clone(),
                best.id.to_string(),
                at,
                max,
            ))
        })();
        let Some((i, start, stop, e, best, at, max)) = found else {
            k += 1;
            continue;
        };
        let range = f.range;
        let name = |id: &str, ctx: ExprContext| pyast::name_node(id, range, ctx);
        let call = |func: Expr, args: Vec<Expr>| pyast::call_node(func, args, range);
        let np_attr =
            |attr: &str| pyast::attribute_node(name(numpy, ExprContext::Load), attr, range);
        let assign = |target: &str, value: Expr| {
            Stmt::Assign(ast::StmtAssign {
                range,
                targets: vec![name(target, ExprContext::Store)],
                value: Box::new(value),
                type_comment: None,
            })
        };
        let fresh = |base: String| {
            let mut n = base;
            while pyast::body_mentions(body, &n) || src.module_names().contains(&n) {
                n.push('_');
            }
            n
        };
        let values = fresh(format!("{best}_values"));
        let offset = fresh(format!("{at}_offset"));
        let mut arange_args = vec![];
        if let Some(a) = &start {
            arange_args.push(a.clone());
        }
        arange_args.push(stop.clone());
        let arange = call(np_attr("arange"), arange_args);
        let mut vector = e.clone();
        pyast::walk_expr_mut(&mut vector, &mut |x| {
            if matches!(x, Expr::Name(n) if n.id.as_str() == i) {
                *x = arange.clone();
                return true;
            }
            false
        });
        // The extreme value itself by the reduction (an index into the
        // template computed on the device is no host index).
        let extreme = fresh(format!("{best}_extreme"));
        let reduced = call(
            np_attr(if max { "max" } else { "min" }),
            vec![name(&values, ExprContext::Load)],
        );
        let picked = name(&extreme, ExprContext::Load);
        let better = Expr::Compare(ast::ExprCompare {
            range,
            left: Box::new(picked.clone()),
            ops: vec![if max { CmpOp::Gt } else { CmpOp::Lt }],
            comparators: vec![name(&best, ExprContext::Load)],
        });
        let position = match &start {
            Some(a) => Expr::BinOp(ast::ExprBinOp {
                range,
                left: Box::new(a.clone()),
                op: ast::Operator::Add,
                right: Box::new(name(&offset, ExprContext::Load)),
            }),
            None => name(&offset, ExprContext::Load),
        };
        let nonempty = Expr::Compare(ast::ExprCompare {
            range,
            left: Box::new(stop.clone()),
            ops: vec![CmpOp::Gt],
            comparators: vec![start.clone().unwrap_or_else(|| {
                Expr::Constant(ast::ExprConstant {
                    range,
                    value: ast::Constant::Int(0.into()),
                    kind: None,
                })
            })],
        });
        let inner = Stmt::If(ast::StmtIf {
            range,
            test: Box::new(better),
            body: vec![assign(&best, picked), assign(&at, position)],
            orelse: vec![],
        });
        let guarded = Stmt::If(ast::StmtIf {
            range,
            test: Box::new(nonempty),
            body: vec![
                assign(
                    &offset,
                    call(
                        np_attr(if max { "argmax" } else { "argmin" }),
                        vec![name(&values, ExprContext::Load)],
                    ),
                ),
                assign(&extreme, reduced),
                inner,
            ],
            orelse: vec![],
        });
        body.splice(k..=k, [assign(&values, vector), guarded]);
        k += 2;
    }
}
