//! Lowering: the desugared body into host steps and kernels (the lowering
//! context of [`crate::lower`], walked by the front end, [`crate::lift`]),
//! or a ufunc plan for a function of scalars. The scalar types of the
//! function's locals are the typing pass's ([`super::typing`]); a name it
//! left out is observed, and the body is lowered again with the types the
//! last lowering observed, joined, until they no longer widen (at most six
//! lowerings; one when the table is complete and right).

use std::collections::{HashMap, HashSet};

use port_codegen::ir::ScalarType;

use crate::error::Reason;
use crate::plan::{KernelPlan, PlanKind, PlanParam};
use crate::request::MigrationRequest;
use crate::source;
use crate::types::ArgType;
use crate::{lower, pyast, rewrites};

/// The pass: the plan as the lowering leaves it (its `unit_dims`, the
/// arguments' axes planned as broadcast), or the reasons it refuses, its
/// own first, then the analysis's (`nopython`) on other lines.
pub fn lower(
    src: &source::SourceFile,
    def: &rustpython_parser::ast::StmtFunctionDef,
    names: &[String],
    req: &MigrationRequest,
    nopython: Vec<Reason>,
) -> Result<KernelPlan, Vec<Reason>> {
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
    // The types the typing pass decides are declared from the first
    // lowering on; the lowering observes the names it left out, and
    // lowers again while a binding widens a type (at most six times).
    let table = super::typing::infer(src, def, names, req.types, ufunc);
    // Names Numba's `locals=` types keep that type, whatever is bound.
    let declared: HashSet<String> = crate::numba_declared::numba_locals(src, def)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    // A function Numba compiles returns its numbers as Python's.
    let boxes = crate::numba_declared::numba_jitted(src, def);
    let fixed_point = |ufunc: bool, seed: &super::typing::Table| {
        let mut types: HashMap<String, ScalarType> = seed.types.clone();
        // Names some path binds to a strong value: the others stay weak
        // (Python numbers) where they are read.
        let mut strong: HashSet<String> = seed.strong.clone();
        let mut last: Option<Result<lower::context::Lowerer, Box<Reason>>> = None;
        let mut passes = 0;
        for _ in 0..6 {
            passes += 1;
            let mut l =
                lower::context::Lowerer::new(src, req.facts, def.name.as_str(), types.clone());
            l.analysis_scans = scans.clone();
            l.unit_dims = unit_dims.clone();
            l.strong_last = strong.clone();
            l.numba_boxes = boxes;
            let res = run(&mut l, def, names, req.types, ufunc);
            let mut observed = l.observed_types();
            observed.retain(|k, _| !declared.contains(k));
            let widened = observed.iter().any(|(k, t)| {
                types
                    .get(k)
                    .is_none_or(|g| crate::ir_util::join(*g, *t) != *g)
            }) || l.observed.keys().any(|k| !strong.contains(k));
            strong.extend(l.observed.keys().cloned());
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
        (last.expect("at least one pass"), passes, (types, strong))
    };
    let checking = std::env::var_os("PORT_TYPING_CHECK").is_some();
    let lowered = |ufunc: bool| {
        let (last, passes, settled) = fixed_point(ufunc, &table);
        if checking {
            check_typing(def.name.as_str(), &table, (&last, passes, &settled), || {
                let (l, p, t) = fixed_point(ufunc, &super::typing::Table::default());
                (l.is_ok(), p, t)
            });
        }
        last
    };
    let mut last = lowered(ufunc);
    // Array arguments handed to helpers of the program: when the helpers
    // are no element functions, they are inlined into a host schedule.
    if ufunc && last.is_err() && req.types.iter().any(|t| t.is_array()) {
        let l = lower::context::Lowerer::new(src, req.facts, def.name.as_str(), HashMap::new());
        if l.body_calls_app(&def.body) {
            last = lowered(false);
        }
    }
    // The lowering's own reason first, then the analysis's on other lines.
    let refused = |first: Reason| -> Vec<Reason> {
        let mut all: Vec<Reason> = nopython
            .iter()
            .filter(|n| n.line != first.line)
            .cloned()
            .collect();
        all.insert(0, first);
        all
    };
    let l = match last {
        Ok(l) => l,
        Err(reason) => return Err(refused(*reason)),
    };
    if let Some(reason) = path_dependent_return(src, def, &l) {
        return Err(refused(reason));
    }
    let mut l = l;
    l.finish_mutated();
    l.flush_guards();
    let mut plan = finish(l, names, req.types);
    plan.unit_dims = unit_dims;
    Ok(plan)
}

/// The types the lowering settled on: each name's, and those bound strong.
type Settled = (HashMap<String, ScalarType>, HashSet<String>);

/// `PORT_TYPING_CHECK`: lowers again from no types at all, as before the
/// typing pass, and says on stderr where the two disagree (the types the
/// lowering settles on, which names are strong, or whether it refuses),
/// with how many lowerings each took. The check behind the typing pass's
/// tests.
fn check_typing(
    function: &str,
    table: &super::typing::Table,
    (seeded, passes, (types, strong)): (
        &Result<lower::context::Lowerer, Box<Reason>>,
        usize,
        &Settled,
    ),
    unseeded: impl Fn() -> (bool, usize, Settled),
) {
    let (ok, old_passes, (old, old_strong)) = unseeded();
    let mut differ: Vec<String> = old
        .iter()
        .filter(|(k, t)| types.get(*k) != Some(*t))
        .map(|(k, t)| format!("{k}: {t:?} before, {:?} now", types.get(k)))
        .collect();
    // Strength matters only for names the lowering binds.
    differ.extend(
        old.keys()
            .filter(|k| old_strong.contains(*k) != strong.contains(*k))
            .map(|k| {
                format!(
                    "{k}: strong {} before, {} now",
                    old_strong.contains(k),
                    strong.contains(k)
                )
            }),
    );
    differ.sort();
    if ok != seeded.is_ok() {
        differ.push(format!(
            "lowered {} before, {} now",
            if ok { "fine" } else { "to a refusal" },
            if seeded.is_ok() {
                "fine"
            } else {
                "to a refusal"
            }
        ));
    }
    let mut extra: Vec<String> = types
        .iter()
        .filter(|(k, t)| table.types.get(*k) != Some(*t))
        .map(|(k, t)| format!("{k}={t:?}"))
        .collect();
    extra.sort();
    eprintln!(
        "port-typing: {function}: {passes} lowerings (before: {old_passes}); observed beyond the table: [{}]; table {}; {}",
        extra.join(", "),
        if table.complete() {
            "complete".to_string()
        } else {
            format!(
                "without {}",
                table
                    .untyped
                    .iter()
                    .map(|(n, l)| format!("{n} (line {l})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        if differ.is_empty() {
            "agrees".to_string()
        } else {
            format!("DISAGREES: {}", differ.join("; "))
        }
    );
}

fn run(
    l: &mut lower::context::Lowerer,
    def: &rustpython_parser::ast::StmtFunctionDef,
    names: &[String],
    types: &[ArgType],
    ufunc: bool,
) -> Result<(), Box<Reason>> {
    // Scalar arguments that are data themselves: a scalar function's (its
    // elements), floats and complex numbers (which `int()` may make huge).
    let seeds = names
        .iter()
        .zip(types)
        .filter(|(_, t)| ufunc || matches!(t, ArgType::Scalar(s) if s.is_float() || s.is_complex()))
        .map(|(n, _)| n.clone())
        .collect();
    l.data_ints = lower::python_ints::data_names(&def.body, seeds)
        .into_iter()
        .map(|n| lower::context::sanitize(&n))
        .collect();
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
        literals: Vec::new(),
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

/// A returned value whose type depends on which argument of a built-in
/// `min`/`max` wins (`lower::context::Choice`), or a name bound to one:
/// CPython returns the winning argument itself, the Python number on some
/// calls and the NumPy scalar on others (fuzz seed 300009: `acc =
/// max(acc, math.floor(d))` of an int32 `acc` is a Python int when the
/// floor wins), and what computes on it keeps the difference (seed
/// 905074: `(a_f64[i] < 0.25) + min(s, b_f32[i])` is float64 or float32).
/// A kernel's value has one type.
fn returned_choice(
    src: &source::SourceFile,
    def: &rustpython_parser::ast::StmtFunctionDef,
    l: &lower::context::Lowerer,
    returned: &[(String, &rustpython_parser::ast::Stmt)],
) -> Option<Reason> {
    use lower::context::Choice;
    use rustpython_parser::ast::{Expr, Stmt};
    if l.python_choices.is_empty() && l.choice_names.is_empty() {
        return None;
    }
    let refuse = |what: String, c: Choice, ret: &Stmt| {
        let name = |(t, python): (ScalarType, bool)| {
            if python {
                format!("a Python {}", crate::dtypes::python_type(t))
            } else if t == ScalarType::Bool {
                "a NumPy bool".to_string()
            } else {
                format!("a NumPy {}", crate::types::numba_scalar(t))
            }
        };
        let cast = match c.alts {
            [(a, true), (b, true)] => format!(
                "{}(…)",
                crate::dtypes::python_type(crate::ir_util::promote(a, true, b, true))
            ),
            [_, (t, false)] | [(t, false), _] => {
                format!("{}(…)", crate::types::numpy_dtype(t))
            }
        };
        let why = if c.branch {
            format!(
                "which branch of the conditional expression at line {} runs (its value has the \
                 type of that branch; a kernel's value has one): give both branches one type \
                 (`{cast}`)",
                c.line
            )
        } else {
            format!(
                "which argument of the `min`/`max` at line {} wins (Python's built-in returns \
                 the winner with its own type; a kernel's value has one): give the arguments \
                 one type (`{cast}`)",
                c.line
            )
        };
        Reason::new(
            "types",
            src.line(ret),
            format!(
                "{what} is {} or {}, depending on {why}",
                name(c.alts[0]),
                name(c.alts[1]),
            ),
        )
    };
    let mut found = None;
    pyast::walk_stmts(&def.body, &mut |s| {
        if found.is_some() {
            return;
        }
        if let Stmt::Return(r) = s {
            if let Some(v) = r.value.as_deref() {
                let parts: Vec<&Expr> = match v {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    v => vec![v],
                };
                if let Some((p, c)) = parts.into_iter().find_map(|p| Some((p, l.choice_of(p)?))) {
                    let what = match p {
                        Expr::Name(n) => format!("`{}`, returned here,", n.id),
                        _ => "the returned value".to_string(),
                    };
                    found = Some(refuse(what, c, s));
                }
            }
        }
    });
    if found.is_some() {
        return found;
    }
    // A returned name bound to a choice anywhere in the body: a loop may
    // bind it to one in the pass that typed it and to a value of the joined
    // type in the next.
    for (name, ret) in returned {
        pyast::walk_stmts(&def.body, &mut |s| {
            if found.is_some() {
                return;
            }
            let (targets, choice) = match s {
                Stmt::Assign(a) => (a.targets.iter().collect(), l.choice_of(&*a.value)),
                Stmt::AugAssign(a) => (vec![&*a.target], l.choice_of(a)),
                _ => return,
            };
            let binds = targets
                .iter()
                .any(|t| pyast::target_names(t).iter().any(|n| n == name));
            if let (true, Some(c)) = (binds, choice) {
                found = Some(refuse(format!("`{name}`, returned here,"), c, ret));
            }
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// A returned name whose type depends on the path taken: bound to a Python
/// number of one kind (`acc = 0`, an int) and to a value of another kind
/// (a float) where an `if` or `while` decides whether the binding runs.
/// CPython returns whichever ran, an int or a float; a kernel's variable has
/// one type, and the joined one would be a float on every call. A `for`
/// loop's body alone does not count: it runs on every call with a
/// non-empty range (fuzz seed 267).
fn path_dependent_return(
    src: &source::SourceFile,
    def: &rustpython_parser::ast::StmtFunctionDef,
    l: &lower::context::Lowerer,
) -> Option<Reason> {
    use crate::dtypes::kind;
    use rustpython_parser::ast::{Expr, Stmt};
    fn conditional<'a>(body: &'a [Stmt], under: bool, out: &mut Vec<(String, &'a Stmt)>) {
        for s in body {
            let targets: Vec<&Expr> = match s {
                Stmt::Assign(a) => a.targets.iter().collect(),
                Stmt::AugAssign(a) => vec![&*a.target],
                Stmt::AnnAssign(a) => vec![&*a.target],
                _ => Vec::new(),
            };
            if under {
                for t in targets {
                    out.extend(pyast::target_names(t).into_iter().map(|n| (n, s)));
                }
            }
            let deciding = matches!(s, Stmt::If(_) | Stmt::While(_) | Stmt::Try(_));
            for b in pyast::child_bodies(s) {
                conditional(b, under || deciding, out);
            }
        }
    }
    let mut returned: Vec<(String, &Stmt)> = Vec::new();
    pyast::walk_stmts(&def.body, &mut |s| {
        if let Stmt::Return(r) = s {
            if let Some(v) = r.value.as_deref() {
                pyast::walk_expr(v, &mut |e| {
                    if let Expr::Name(n) = e {
                        returned.push((n.id.to_string(), s));
                    }
                });
            }
        }
    });
    if let Some(why) = returned_choice(src, def, l, &returned) {
        return Some(why);
    }
    let mut decided = Vec::new();
    conditional(&def.body, false, &mut decided);
    for (name, ret) in &returned {
        // NumPy scalars of different types bound to the name (`acc =
        // a_f32[0]`, then `acc += v_u64[i]` under an `if`: float32 or
        // float64; fuzz seeds 304145, 304891).
        if let (Some(types), Some((_, at))) = (
            l.bound_types.get(name).filter(|ts| ts.len() > 1),
            decided.iter().find(|(n, _)| n == name),
        ) {
            let names: Vec<String> = types
                .iter()
                .map(|&t| match t {
                    ScalarType::Bool => "a NumPy bool".to_string(),
                    t => format!("a NumPy {}", crate::types::numba_scalar(t)),
                })
                .collect();
            return Some(Reason::new(
                "types",
                src.line(*ret),
                format!(
                    "`{name}` is returned as {}, depending on whether the binding at line {} runs \
                     (CPython keeps the type of the binding that ran; a kernel's variable has one \
                     type): give its bindings one type (`.astype(…)`, `np.float64(…)`)",
                    names.join(" or as "),
                    src.line(*at),
                ),
            ));
        }
        let (Some(&weak), Some(&strong)) = (l.observed_weak.get(name), l.observed.get(name)) else {
            continue;
        };
        // The type the strong binding leaves: NumPy 2 promotes the weak
        // Python number to it (`0 + int32` is int32). Where that is the
        // Python number's own type (`0 + int64`, `0.0 + int32`), both paths
        // return the same type.
        let joined = crate::ir_util::promote(weak, true, strong, false);
        if joined == weak {
            continue;
        }
        let Some((_, at)) = decided.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let what = |t: ScalarType, python: bool| match (kind(t), python) {
            (0, _) => "a bool".to_string(),
            (_, true) => format!("a Python {}", crate::dtypes::python_type(t)),
            _ => format!("a NumPy {}", crate::types::numba_scalar(t)),
        };
        let start = match kind(strong) {
            _ if kind(strong) < kind(weak) => String::new(),
            // Same kind, another width (`0` and an int32 sum): NumPy's
            // scalar of that type is what both paths then return.
            k if k == kind(weak) => format!(
                ": start it as that type (`{name} = {}(0)`)",
                crate::types::numpy_dtype(joined)
            ),
            1 => format!(": start it as an int (`{name} = 0`)"),
            2 => format!(": start it as a float (`{name} = 0.0`)"),
            _ => format!(": start it as a complex number (`{name} = 0j`)"),
        };
        return Some(Reason::new(
            "types",
            src.line(*ret),
            format!(
                "`{name}` is returned as {} or as {}, depending on whether the binding at line {} runs \
                 (CPython keeps the type of the binding that ran; a kernel's variable has one type){start}",
                what(weak, true),
                what(joined, false),
                src.line(*at),
            ),
        ));
    }
    None
}
