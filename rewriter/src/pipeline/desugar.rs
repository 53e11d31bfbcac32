//! Desugaring: the function's body rewritten, before any typing, into the
//! forms the lowering takes. Each rule is a rewrite of the syntax tree
//! that keeps Python's meaning:
//!
//! - nested helpers the file pass hoisted leave the body, and so do the
//!   function's own imports (the module's now);
//! - `for v in x`, `for i, v in enumerate(x)` as index loops;
//!   `out[i][j]` as `out[i, j]`;
//! - a running maximum and its position (a pivot search) as `np.argmax`;
//! - the returns of a function Numba compiles with a scalar return type
//!   (`@njit("b1(u1[::1], i8)")`) cast to it, `np.bool_(…)`;
//! - returns from inside `if`s as one return at the end;
//! - a ufunc's output given positionally (`np.add(x, y, x)`) as `out=`;
//! - `np.copyto(dst, src)` as `dst[:] = src`; an array's in-place
//!   `x.sort(axis)` as `x[:] = np.sort(x, axis)`;
//! - the built-ins `pow(a, b)` and `divmod(a, b)` as `a ** b` and
//!   `(a // b, a % b)`, Python's own definitions;
//! - a built-in `min`/`max` a float `math` function takes, of its
//!   arguments made floats (`math.sqrt(max(float(s), float(a[i])))`);
//! - a list comprehension over a constant `range` of at most
//!   [`MAX_UNROLLED`] items as the list literal it makes;
//! - a list bound once and only read by index as the tuple it stands for;
//! - names holding a tuple literal as one name per element;
//! - parameters left to their defaults, or given a constant every call
//!   passes (`None`, a string), specialised to it (`if x is None`,
//!   `if mode == "wrap"` decided).
//!
//! And, for the file: the capture-free nested `def`s (and `f = lambda …`
//! statements, as the `def`s they mean) that the planner plans as
//! module-level helpers ([`capture_free_nested_defs`]).

use std::collections::HashMap;

use crate::error::{Reason, RewriteError};
use crate::request::MigrationRequest;
use crate::source::{self, FoundFunction};
use crate::{lower, pyast};

use super::float_winners;

/// The function as the lowering sees it.
pub struct Desugared {
    /// The rewritten definition: parameters left to their defaults are no
    /// longer parameters.
    pub def: rustpython_parser::ast::StmtFunctionDef,
    /// Its parameters, one per type of the request.
    pub names: Vec<String>,
    /// The parameters specialised to their defaults, with the defaults' text.
    pub defaults: Vec<(String, String)>,
}

/// The pass: [`Desugared`], or why a default cannot be specialised
/// (`Ok(Err)`), or a request whose types do not fit the parameters (`Err`).
pub fn body(
    src: &source::SourceFile,
    found: &FoundFunction,
    req: &MigrationRequest,
) -> Result<Result<Desugared, Vec<Reason>>, RewriteError> {
    // `for v in x` and `for i, v in enumerate(x)` as the index loops the
    // rewrites take; nested functions planned as module-level helpers
    // leave the body.
    let mut desugared = found.def.clone();
    // (A `name = lambda …` the file pass hoisted as a `def` too.)
    let hoisted = |name: &str, at: rustpython_parser::text_size::TextRange| {
        src.module_function(name).is_some()
            && src.suite.iter().any(|m| {
                matches!(m, rustpython_parser::ast::Stmt::FunctionDef(h)
                if h.name.as_str() == name && rustpython_parser::ast::Ranged::range(h) == at)
            })
    };
    let body = found.def.body.clone();
    desugared.body.retain(|s| match s {
        rustpython_parser::ast::Stmt::FunctionDef(d) => {
            !hoisted(d.name.as_str(), rustpython_parser::ast::Ranged::range(d))
        }
        rustpython_parser::ast::Stmt::Assign(_) => {
            lambda_def(s, &body).is_none_or(|d| !hoisted(d.name.as_str(), d.range))
        }
        _ => true,
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
    // NumPy's local name, for the calls the desugarings write.
    let np = src.numpy_name().to_string();
    // A running maximum and its position (a pivot search) as np.argmax.
    argmax_loops(src, &np, &mut desugared.body);
    // A function Numba compiles returns its signature's return type.
    numba_return_cast(src, found.def, &np, &mut desugared.body);
    // Returns from inside `if`s as one return at the end.
    {
        let mut used = lower::context::UsedNames::new(src.module_names());
        for n in pyast::param_names(&desugared.args)
            .into_iter()
            .chain(pyast::names_in(&desugared.body))
        {
            used.insert(n);
        }
        pyast::single_exit::single_exit(&mut desugared.body, &mut |base| {
            pyast::fresh_name(base, &mut |n| used.insert(n))
        });
    }
    // (Calls written as Python and NumPy define them were rewritten in
    // every function of the file: [`calls_as_defined`].)
    // `[f(k) for k in range(3)]` as `[f(0), f(1), f(2)]`.
    unroll_constant_comprehensions(src, &mut desugared.body);
    // A list only read by index (`w = [0.25, 0.5, 0.25]`) as the tuple it
    // stands for.
    read_only_lists_as_tuples(&pyast::param_names(&desugared.args), &mut desugared.body);
    // Names holding a tuple literal (`shape = (n, m)`) as a name per element.
    pyast::split_tuple_names(&pyast::param_names(&desugared.args), &mut desugared.body);
    // Parameters specialised to a constant: those every call passes as one
    // (`w=None`, `mode='reflect'`, [`MigrationRequest::literals`]), and,
    // with fewer types than the other parameters, the rest left to their
    // defaults (`poly=0x8408`, `mode="same"`, `axis=-1`): the call the user
    // has in mind leaves them out. A specialised parameter never rebound
    // reads as its constant wherever it appears (so `axis=axis` is a
    // constant axis), one rebound starts as it; the wrapper keeps them in
    // its signature and runs the original for other values
    // ([`KernelPlan::defaults`], [`KernelPlan::literals`]). A default that
    // is not a constant (`w=np.ones(3)`) is refused.
    let params = desugared.args.args.clone();
    let def_line = src.line(&desugared);
    for (name, _) in req.literals {
        if !params.iter().any(|a| a.def.arg.as_str() == name) {
            return Ok(Err(vec![Reason::new(
                "frontend",
                def_line,
                format!("no parameter `{name}` to specialise to a constant"),
            )]));
        }
    }
    let typed: Vec<&rustpython_parser::ast::ArgWithDefault> = params
        .iter()
        .filter(|a| !req.literals.iter().any(|(n, _)| n == a.def.arg.as_str()))
        .collect();
    let rebound = pyast::names_rebound(&desugared.body);
    let mut defaults: Vec<(String, String)> = Vec::new();
    let given = req.types.len().min(typed.len());
    // (name, value) of each specialised parameter.
    let mut constants: Vec<(String, rustpython_parser::ast::Expr)> = Vec::new();
    for (name, text) in req.literals {
        let at = params
            .iter()
            .find(|a| a.def.arg.as_str() == name)
            .map(|a| rustpython_parser::ast::Ranged::range(&a.def))
            .expect("checked");
        match literal_expr(text, at) {
            Some(e) => constants.push((name.clone(), e)),
            None => {
                return Ok(Err(vec![Reason::new(
                    "frontend",
                    def_line,
                    format!(
                        "`{name}={text}`: port specialises a parameter to `None` or a string only"
                    ),
                )]))
            }
        }
    }
    // The typed parameters the plan keeps.
    let mut kept: Vec<String> = typed.iter().map(|a| a.def.arg.to_string()).collect();
    if req.types.len() < typed.len() && typed[given..].iter().all(|a| a.default.is_some()) {
        kept.truncate(given);
        for a in &typed[given..] {
            let d = a.default.as_deref().expect("checked");
            let name = a.def.arg.to_string();
            if !constant_default(src, d) {
                return Ok(Err(vec![Reason::new(
                    "frontend",
                    def_line,
                    format!(
                        "`{name}={}` left to its default, which is not a constant: port specialises a migration to the defaults it leaves out; give --signature a type for `{name}` too",
                        src.text_of(d)
                    ),
                )]));
            }
            defaults.push((name.clone(), src.text_of(d).to_string()));
            constants.push((name, d.clone()));
        }
    }
    if !constants.is_empty() {
        let mut prelude: Vec<rustpython_parser::ast::Stmt> = Vec::new();
        let mut subst: Vec<(String, rustpython_parser::ast::Expr)> = Vec::new();
        // A list or tuple of numbers reads as the array NumPy makes of it
        // wherever the function hands it to NumPy (`np.bitwise_and(mask,
        // v)`, `mask == v`): `np.array([1, 0, 1])`, a constant template.
        let numpy = src
            .imports
            .iter()
            .find(|(_, full)| full.as_str() == "numpy")
            .map(|(local, _)| local.clone());
        for (name, d) in &constants {
            let d = &match (d, &numpy) {
                (
                    rustpython_parser::ast::Expr::List(_) | rustpython_parser::ast::Expr::Tuple(_),
                    Some(np),
                ) => array_of(d, np),
                _ => d.clone(),
            };
            let none = matches!(d, rustpython_parser::ast::Expr::Constant(c)
                if matches!(c.value, rustpython_parser::ast::Constant::None));
            if rebound.contains(name) && none {
                // `if eps is None: eps = 1e-12`: decided below; a read of
                // the name while it is still None has no kernel value.
            } else if rebound.contains(name) {
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
                subst.push((name.clone(), d.clone()));
            }
        }
        // `if nfft is None: nfft = n` before anything else reads `nfft`:
        // decided now, as the parameter is `None` there.
        for (name, d) in &constants {
            if matches!(d, rustpython_parser::ast::Expr::Constant(c)
                if matches!(c.value, rustpython_parser::ast::Constant::None))
            {
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
        // `if mode == "wrap":` with `mode` now the constant: the branch
        // taken.
        pyast::normalise_statements(&mut desugared.body);
        let at = usize::from(desugared.body.first().is_some_and(pyast::is_docstring));
        desugared.body.splice(at..at, prelude);
        desugared
            .args
            .args
            .retain(|a| kept.iter().any(|k| k == a.def.arg.as_str()));
    }
    let names = kept;
    if req.types.len() != names.len() {
        return Err(RewriteError::SignatureArity {
            function: req.function.to_string(),
            given: req.types.len(),
            expected: names.len(),
            params: names.join(", "),
        });
    }
    Ok(Ok(Desugared {
        def: desugared,
        names,
        defaults,
    }))
}

/// The desugarings that need nothing of the function around them, applied
/// to a function's body by the file pass ([`SourceFile::normalised`]) to
/// every function of the file, so that a helper a plan inlines reads as
/// the planned function does (`preemphasis`'s `np.append`, inlined into
/// `fbank`). Says whether anything changed.
pub fn calls_as_defined(
    src: &source::SourceFile,
    body: &mut Vec<rustpython_parser::ast::Stmt>,
) -> bool {
    // NumPy's local name, for the calls the desugarings write.
    let np = src.numpy_name();
    // `np.add(x, y, x)` as `np.add(x, y, out=x)`.
    let mut changed = positional_out(src, body);
    // `np.copyto(dst, src)` as `dst[:] = src`.
    changed |= copyto_as_stores(src, body);
    // `x.sort()` as `x[:] = np.sort(x)`.
    changed |= sort_in_place_as_store(src, np, body);
    // `np.append(a, b)` as `np.concatenate((np.ravel(a), np.ravel(b)))`.
    changed |= append_as_concatenate(src, np, body);
    // `pow(a, b)` as `a ** b`, `divmod(a, b)` as `(a // b, a % b)`.
    changed |= builtin_pow_and_divmod(src, body);
    // `T = type(p)`, then `T(0.5)`, as `type(p)(0.5)`.
    changed |= type_aliases(src, body);
    // `max([a, b, c])` as `max(a, b, c)`, `sum((a, b))` as `0 + a + b`.
    changed |= builtins_of_displays(src, body);
    // `np.count_nonzero(x, …)` as `np.sum(x != 0, …)`, `np.nansum(x, …)`
    // as `np.sum(np.where(np.isnan(x), 0, x), …)`.
    changed |= sums_of_counts_and_nans(src, np, body);
    // `math.sqrt(max(s, a[i]))` as `math.sqrt(max(float(s), float(a[i])))`.
    changed |= float_winners::of_float_calls(src, body);
    changed
}

/// `T = type(p)` bound once, with `p` never bound again, then `T(0.5)`
/// or `np.empty(n, T)`: each read of `T` as `type(p)`, which it is (Numba's
/// idiom for constants and arrays in an argument's precision; numba-stats
/// writes `T = type(z)` in most of its distributions), and the binding
/// goes. (The typing and the lowering take `type(x)(v)` as a cast of `v`
/// to `x`'s type, and `type(x)` given as a dtype as `x`'s type.)
fn type_aliases(src: &source::SourceFile, body: &mut Vec<rustpython_parser::ast::Stmt>) -> bool {
    use rustpython_parser::ast::{Expr, Stmt};
    let mut bindings: HashMap<String, usize> = HashMap::new();
    pyast::walk_stmts(body, &mut |s| {
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![a.target.as_ref()],
            Stmt::AnnAssign(a) => vec![a.target.as_ref()],
            Stmt::For(f) => vec![f.target.as_ref()],
            Stmt::With(w) => w
                .items
                .iter()
                .filter_map(|i| i.optional_vars.as_deref())
                .collect(),
            _ => Vec::new(),
        };
        for n in targets.into_iter().flat_map(pyast::target_names) {
            *bindings.entry(n).or_default() += 1;
        }
    });
    let mut changed = false;
    let mut k = 0;
    while k < body.len() {
        let alias = match &body[k] {
            Stmt::Assign(a) => match (a.targets.as_slice(), a.value.as_ref()) {
                ([Expr::Name(t)], of)
                    if matches!(lower::creation::type_of_call(src, of), Some(Expr::Name(p))
                            if !bindings.contains_key(p.id.as_str()))
                        && bindings.get(t.id.as_str()) == Some(&1) =>
                {
                    Some((t.id.to_string(), a.value.as_ref().clone()))
                }
                _ => None,
            },
            _ => None,
        };
        let Some((alias, of)) = alias else {
            k += 1;
            continue;
        };
        // A nested `def` may read it too (its body is not walked here).
        let mut nested = false;
        pyast::walk_stmts(&body[k + 1..], &mut |s| {
            nested |= matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_));
        });
        if nested {
            k += 1;
            continue;
        }
        // Every read after the binding (bound once, so nothing reads it
        // before): `T(1)` and `np.empty(n, T)` alike.
        pyast::walk_body_exprs_mut(&mut body[k + 1..], &mut |e| {
            if matches!(e, Expr::Name(n) if n.id.as_str() == alias) {
                *e = of.clone();
                return true;
            }
            false
        });
        body.remove(k);
        changed = true;
    }
    changed
}

/// A constant given for a parameter (`None`, `'reflect'`) as an expression
/// placed at the parameter (`at`): messages about it point there. `None`
/// for anything but `None` or a string.
fn literal_expr(
    text: &str,
    at: rustpython_parser::text_size::TextRange,
) -> Option<rustpython_parser::ast::Expr> {
    use rustpython_parser::ast::{self, Constant, Expr};
    use rustpython_parser::Parse;
    match Expr::parse(text, "<literal>").ok()? {
        Expr::Constant(c) if matches!(c.value, Constant::None | Constant::Str(_)) => {
            Some(Expr::Constant(ast::ExprConstant { range: at, ..c }))
        }
        _ => None,
    }
}

/// The top-level `def`s of `f`'s body that read no local of `f` (only
/// their own parameters and locals, the module's names and builtins), and
/// whose names no module-level name already has.
pub fn capture_free_nested_defs(
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
        let lambda;
        let d = match s {
            Stmt::FunctionDef(d) => d,
            Stmt::Assign(_) => match lambda_def(s, &f.body) {
                Some(d) => {
                    lambda = d;
                    &lambda
                }
                None => continue,
            },
            _ => continue,
        };
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

/// `name = lambda args: value`, a statement of `body` and the only one
/// binding `name`, as the `def name(args): return value` it means (with
/// the statement's range: the desugared body drops the statement where the
/// file pass hoisted the `def`).
pub fn lambda_def(
    s: &rustpython_parser::ast::Stmt,
    body: &[rustpython_parser::ast::Stmt],
) -> Option<rustpython_parser::ast::StmtFunctionDef> {
    use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
    let Stmt::Assign(a) = s else { return None };
    let ([Expr::Name(n)], Expr::Lambda(l)) = (a.targets.as_slice(), a.value.as_ref()) else {
        return None;
    };
    // Statements binding the name: simple ones, and loop targets (a
    // compound statement's body is walked on its own).
    let mut bound = 0;
    pyast::walk_stmts(body, &mut |st| {
        let binds = match st {
            Stmt::For(f) => pyast::target_names(&f.target)
                .iter()
                .any(|x| x == n.id.as_str()),
            Stmt::While(_) | Stmt::If(_) | Stmt::With(_) | Stmt::Try(_) => false,
            _ => pyast::names_rebound(std::slice::from_ref(st))
                .iter()
                .any(|x| x == n.id.as_str()),
        };
        bound += usize::from(binds);
    });
    (bound == 1).then(|| ast::StmtFunctionDef {
        range: a.range(),
        name: n.id.clone(),
        args: l.args.clone(),
        body: vec![Stmt::Return(ast::StmtReturn {
            range: l.body.range(),
            value: Some(l.body.clone()),
        })],
        decorator_list: Vec::new(),
        returns: None,
        type_comment: None,
        type_params: Vec::new(),
    })
}

/// The most items a comprehension over a constant `range` is unrolled to.
pub const MAX_UNROLLED: i64 = 32;

/// Each `[e for k in range(a, b)]` of `body` (one generator, no `if`, `a`
/// and `b` constants, at most [`MAX_UNROLLED`] items, `e` with no scope of
/// its own) as the list literal `[e(a), …, e(b - 1)]` it evaluates to: the
/// same values in the same order, each `k` a constant.
fn unroll_constant_comprehensions(
    src: &source::SourceFile,
    body: &mut [rustpython_parser::ast::Stmt],
) {
    use rustpython_parser::ast::{self, Expr};
    pyast::walk_body_exprs_mut(body, &mut |e| {
        let Expr::ListComp(lc) = e else { return false };
        let [g] = lc.generators.as_slice() else {
            return false;
        };
        let Expr::Name(k) = &g.target else {
            return false;
        };
        if !g.ifs.is_empty() || g.is_async {
            return false;
        }
        // `range(b)` or `range(a, b)`, of constants.
        let Expr::Call(c) = &g.iter else { return false };
        let int = |x: &Expr| match src.eval_const(x) {
            Some(source::Const::Int(v)) => Some(v),
            _ => None,
        };
        let bounds = match c.args.as_slice() {
            [hi] => int(hi).map(|h| (0, h)),
            [lo, hi] => int(lo).zip(int(hi)),
            _ => None,
        };
        let Some((lo, hi)) = bounds.filter(|_| {
            c.keywords.is_empty()
                && matches!(c.func.as_ref(), Expr::Name(r) if r.id.as_str() == "range")
        }) else {
            return false;
        };
        // (A walrus could rebind `k`.)
        let mut scoped = false;
        pyast::walk_expr(&lc.elt, &mut |x| {
            scoped |= pyast::opens_scope(x) || matches!(x, Expr::NamedExpr(_));
        });
        if scoped || hi - lo > MAX_UNROLLED {
            return false;
        }
        let name = k.id.clone();
        let elts = (lo..hi.max(lo))
            .map(|v| {
                let mut item = (*lc.elt).clone();
                pyast::walk_expr_mut(&mut item, &mut |x| {
                    if matches!(x, Expr::Name(n) if n.id == name) {
                        let range = rustpython_parser::ast::Ranged::range(x);
                        *x = Expr::Constant(ast::ExprConstant {
                            range,
                            value: ast::Constant::Int(v.into()),
                            kind: None,
                        });
                        return true;
                    }
                    false
                });
                item
            })
            .collect();
        *e = Expr::List(ast::ExprList {
            range: lc.range,
            elts,
            ctx: ast::ExprContext::Load,
        });
        true
    });
}

/// Each `w = [a, b, …]` of `body`, the only binding of `w` (no parameter),
/// where every other mention of `w` reads an element (`w[0]`) or its
/// length: the tuple `(a, b, …)`, which gives the same reads (a list no
/// one changes, passes on or returns is its elements).
fn read_only_lists_as_tuples(params: &[String], body: &mut [rustpython_parser::ast::Stmt]) {
    use rustpython_parser::ast::{self, Expr, Stmt};
    let mut lists: Vec<String> = Vec::new();
    pyast::walk_stmts(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            if let ([Expr::Name(n)], Expr::List(_)) = (a.targets.as_slice(), a.value.as_ref()) {
                lists.push(n.id.to_string());
            }
        }
    });
    for name in lists {
        if params.contains(&name) {
            continue;
        }
        // Every mention: the one binding, element reads, `len(w)`.
        let (mut bindings, mut ok) = (0, true);
        pyast::walk_stmts(body, &mut |s| {
            // The binding's own target is a mention of its own.
            let binds = matches!(s, Stmt::Assign(a)
                if matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == name));
            if let (true, Stmt::Assign(a)) = (binds, s) {
                bindings += 1;
                ok &= matches!(a.value.as_ref(), Expr::List(_));
            }
            let (mut allowed, mut all) = (0, 0);
            for e in pyast::stmt_exprs(s) {
                pyast::walk_expr(e, &mut |x| match x {
                    Expr::Subscript(sub)
                        if matches!(sub.ctx, ast::ExprContext::Load)
                            && matches!(sub.value.as_ref(), Expr::Name(n) if n.id.as_str() == name) =>
                    {
                        allowed += 1
                    }
                    Expr::Call(c)
                        if matches!(c.func.as_ref(), Expr::Name(f) if f.id.as_str() == "len")
                            && matches!(c.args.as_slice(), [Expr::Name(n)] if n.id.as_str() == name) =>
                    {
                        allowed += 1
                    }
                    Expr::Name(n) if n.id.as_str() == name => all += 1,
                    _ => {}
                });
            }
            ok &= all == allowed + usize::from(binds);
        });
        if !ok || bindings != 1 {
            continue;
        }
        for s in body.iter_mut() {
            list_to_tuple(s, &name);
        }
    }
}

/// The binding `name = [...]` in `s` (or nested in it) as `name = (...)`.
fn list_to_tuple(s: &mut rustpython_parser::ast::Stmt, name: &str) {
    use rustpython_parser::ast::{self, Expr, Stmt};
    if let Stmt::Assign(a) = s {
        if matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == name) {
            if let Expr::List(l) = a.value.as_ref() {
                let t = Expr::Tuple(ast::ExprTuple {
                    range: l.range,
                    elts: l.elts.clone(),
                    ctx: ast::ExprContext::Load,
                });
                *a.value = t;
            }
        }
    }
    for b in pyast::child_bodies_mut(s) {
        for x in b.iter_mut() {
            list_to_tuple(x, name);
        }
    }
}

/// Each call of a NumPy ufunc in `body` given its output array as the
/// argument after its inputs (`np.add(x, y, x)`, `np.sqrt(d, d)`) as the
/// same call with `out=`, which is what NumPy takes that argument as: for
/// the functions whose `out=` the lowering writes
/// ([`crate::lift::out_ufunc_inputs`]).
fn positional_out(src: &source::SourceFile, body: &mut [rustpython_parser::ast::Stmt]) -> bool {
    use rustpython_parser::ast::{self, Expr, Ranged};
    let mut changed = false;
    pyast::walk_body_exprs_mut(body, &mut |e| {
        let Expr::Call(c) = e else { return false };
        let Some(name) = src
            .resolve(&c.func)
            .and_then(|f| f.strip_prefix("numpy.").map(str::to_string))
        else {
            return false;
        };
        let Some(n) = crate::lift::out_ufunc_inputs(&name) else {
            return false;
        };
        if c.args.len() != n + 1
            || c.args.iter().any(|a| matches!(a, Expr::Starred(_)))
            || c.keywords.iter().any(|k| k.arg.as_deref() == Some("out"))
        {
            return false;
        }
        let out = c.args.pop().expect("n + 1 arguments");
        c.keywords.push(ast::Keyword {
            range: out.range(),
            arg: Some(ast::Identifier::new("out")),
            value: out,
        });
        changed = true;
        false
    });
    changed
}

/// The built-ins `pow(a, b)` and `divmod(a, b)` (two arguments, not a
/// function of the module or an import of that name) as `a ** b` and
/// `(a // b, a % b)`, which Python defines them to be (a float's `//` is
/// `divmod`'s quotient). PyEMD's `energy` squares with `pow`; sgp4's
/// calendar splits days with `divmod`. `divmod`'s operands are written
/// twice, so only names, constants, reads of them (`x[i]`, `t.real`) and
/// arithmetic on those are taken: nothing that calls anything.
/// Whether `e` reads names and constants only (through attributes,
/// subscripts, slices, operators and comparisons): a desugaring may write
/// it twice.
fn pure(e: &rustpython_parser::ast::Expr) -> bool {
    use rustpython_parser::ast::Expr;
    match e {
        Expr::Name(_) | Expr::Constant(_) => true,
        Expr::Attribute(a) => pure(&a.value),
        Expr::Subscript(s) => pure(&s.value) && pure(&s.slice),
        Expr::Tuple(t) => t.elts.iter().all(pure),
        Expr::Slice(sl) => [&sl.lower, &sl.upper, &sl.step]
            .into_iter()
            .all(|b| b.as_deref().is_none_or(pure)),
        Expr::UnaryOp(u) => pure(&u.operand),
        Expr::BinOp(b) => pure(&b.left) && pure(&b.right),
        Expr::Compare(c) => pure(&c.left) && c.comparators.iter().all(pure),
        _ => false,
    }
}

/// Whether `e` may be written twice and mean the same: [`pure`], with
/// NumPy's and math's elementwise functions (`np.abs(a - b)`) allowed too.
/// A helper of the program's may store into its arguments, and a random
/// draw differs each time: neither is.
fn duplicable(src: &source::SourceFile, e: &rustpython_parser::ast::Expr) -> bool {
    use rustpython_parser::ast::Expr;
    match e {
        Expr::Call(c) => {
            c.keywords.is_empty()
                && src.resolve(&c.func).is_some_and(|f| {
                    (f.starts_with("numpy.") || f.starts_with("math."))
                        && crate::numpy::math_calls::is_elementwise(&f)
                })
                && c.args.iter().all(|a| duplicable(src, a))
        }
        Expr::Attribute(a) => duplicable(src, &a.value),
        Expr::Subscript(x) => duplicable(src, &x.value) && duplicable(src, &x.slice),
        Expr::Tuple(t) => t.elts.iter().all(|x| duplicable(src, x)),
        Expr::UnaryOp(u) => duplicable(src, &u.operand),
        Expr::BinOp(b) => duplicable(src, &b.left) && duplicable(src, &b.right),
        Expr::Compare(c) => {
            duplicable(src, &c.left) && c.comparators.iter().all(|x| duplicable(src, x))
        }
        e => pure(e),
    }
}

fn builtin_pow_and_divmod(
    src: &source::SourceFile,
    body: &mut [rustpython_parser::ast::Stmt],
) -> bool {
    use rustpython_parser::ast::{self, Expr};
    let mut changed = false;
    pyast::walk_body_exprs_mut(body, &mut |e| {
        let Expr::Call(c) = e else { return false };
        let builtin = |name: &str| {
            matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == name)
                && src.resolve(&c.func).as_deref() == Some(name)
                && src.module_function(name).is_none()
        };
        let which = if builtin("pow") {
            "pow"
        } else if builtin("divmod") {
            "divmod"
        } else {
            return false;
        };
        if c.args.len() != 2
            || !c.keywords.is_empty()
            || c.args.iter().any(|a| matches!(a, Expr::Starred(_)))
            || (which == "divmod" && !c.args.iter().all(pure))
        {
            return false;
        }
        let range = c.range;
        let right = c.args.pop().expect("two arguments");
        let left = c.args.pop().expect("two arguments");
        let op = |op, left, right| {
            Expr::BinOp(ast::ExprBinOp {
                range,
                left: Box::new(left),
                op,
                right: Box::new(right),
            })
        };
        *e = if which == "pow" {
            op(ast::Operator::Pow, left, right)
        } else {
            Expr::Tuple(ast::ExprTuple {
                range,
                elts: vec![
                    op(ast::Operator::FloorDiv, left.clone(), right.clone()),
                    op(ast::Operator::Mod, left, right),
                ],
                ctx: ast::ExprContext::Load,
            })
        };
        changed = true;
        false
    });
    changed
}

/// Each statement `np.copyto(dst, src)` (no `casting=`/`where=`) of `body`
/// as `dst[:] = src`: NumPy's assignment into the whole of `dst`,
/// broadcasting `src`, which the rewrites take like any store (in a time
/// loop, a kernel per iteration).
fn copyto_as_stores(src: &source::SourceFile, body: &mut [rustpython_parser::ast::Stmt]) -> bool {
    use rustpython_parser::ast::{Expr, Ranged, Stmt};
    let mut changed = false;
    for s in body.iter_mut() {
        for b in pyast::child_bodies_mut(s) {
            changed |= copyto_as_stores(src, b);
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
        *s = store_into_whole(c.args[0].clone(), c.args[1].clone(), e.range());
        changed = true;
    }
    changed
}

/// `dst[:] = value`, at `range`: NumPy's assignment into the whole of
/// `dst`, broadcasting `value`.
fn store_into_whole(
    dst: rustpython_parser::ast::Expr,
    value: rustpython_parser::ast::Expr,
    range: rustpython_parser::text_size::TextRange,
) -> rustpython_parser::ast::Stmt {
    use rustpython_parser::ast::{self, Expr, Ranged};
    let whole = Expr::Slice(ast::ExprSlice {
        range: dst.range(),
        lower: None,
        upper: None,
        step: None,
    });
    let target = Expr::Subscript(ast::ExprSubscript {
        range: dst.range(),
        value: Box::new(dst),
        slice: Box::new(whole),
        ctx: ast::ExprContext::Store,
    });
    ast::Stmt::Assign(ast::StmtAssign {
        range,
        targets: vec![target],
        value: Box::new(value),
        type_comment: None,
    })
}

/// Each statement `x.sort(…)` of `body` (an array sorted in place along
/// its last axis, or the axis given, `kind=` any) as `x[:] =
/// np.sort(x, …)`: the same values stored back into `x`, which the
/// rewrites take like any store. `x` is a name or a subscript, never a
/// module; `order=` is left alone.
fn sort_in_place_as_store(
    src: &source::SourceFile,
    np: &str,
    body: &mut [rustpython_parser::ast::Stmt],
) -> bool {
    use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
    let mut changed = false;
    for s in body.iter_mut() {
        for b in pyast::child_bodies_mut(s) {
            changed |= sort_in_place_as_store(src, np, b);
        }
        let Stmt::Expr(e) = s else { continue };
        let Expr::Call(c) = e.value.as_ref() else {
            continue;
        };
        let Expr::Attribute(a) = c.func.as_ref() else {
            continue;
        };
        if a.attr.as_str() != "sort"
            || !matches!(a.value.as_ref(), Expr::Name(_) | Expr::Subscript(_))
            || src.names_a_module(&a.value)
            || c.args.len() > 1
            || c.keywords
                .iter()
                .any(|k| !matches!(k.arg.as_ref().map(|n| n.as_str()), Some("axis" | "kind")))
        {
            continue;
        }
        let range = e.range();
        let x = a.value.as_ref().clone();
        let mut args = vec![x.clone()];
        args.extend(c.args.iter().cloned());
        let sorted = pyast::call_node(
            pyast::attribute_node(
                pyast::name_node(np, range, ast::ExprContext::Load),
                "sort",
                range,
            ),
            args,
            range,
        );
        let sorted = match sorted {
            Expr::Call(mut call) => {
                call.keywords = c.keywords.clone();
                Expr::Call(call)
            }
            other => other,
        };
        *s = store_into_whole(x, sorted, range);
        changed = true;
    }
    changed
}

/// `np.append(a, b)` with no axis is, by NumPy's own definition,
/// `np.concatenate((np.ravel(a), np.ravel(b)))`: both flattened, a number
/// as an array of one (`np.append(x[0], x[1:] - k * x[:-1])`).
fn append_as_concatenate(
    src: &source::SourceFile,
    np: &str,
    body: &mut [rustpython_parser::ast::Stmt],
) -> bool {
    use rustpython_parser::ast::{self, Expr, Ranged};
    let mut changed = false;
    let rewrite = &mut |e: &mut Expr| {
        let Expr::Call(c) = e else { return false };
        if src.resolve(&c.func).as_deref() != Some("numpy.append")
            || c.args.len() != 2
            || !c.keywords.is_empty()
        {
            return false;
        }
        let at = c.range;
        let numpy = || pyast::name_node(np, at, ast::ExprContext::Load);
        let ravel = |x: &Expr| {
            pyast::call_node(
                pyast::attribute_node(numpy(), "ravel", x.range()),
                vec![x.clone()],
                x.range(),
            )
        };
        let parts = Expr::Tuple(ast::ExprTuple {
            range: at,
            elts: c.args.iter().map(ravel).collect(),
            ctx: ast::ExprContext::Load,
        });
        *e = pyast::call_node(
            pyast::attribute_node(numpy(), "concatenate", at),
            vec![parts],
            at,
        );
        changed = true;
        false
    };
    pyast::walk_stmts_mut(body, &mut |s| {
        for e in pyast::stmt_exprs_mut(s) {
            pyast::walk_expr_mut(e, rewrite);
        }
    });
    changed
}

/// The builtins `max`, `min` and `sum` of a list or tuple written out
/// (`max([abs(a), abs(b), c])`) as what Python computes from it, with no
/// list: `max(abs(a), abs(b), c)` (the same comparisons in the same order:
/// builtin `max` of several arguments walks them as it walks an iterable),
/// the element itself for a display of one, and for `sum` the additions
/// `((start + a) + b) + c` from `start` (0 unless given), which is how
/// `sum` adds (CPython compensates a run of exact Python floats, which
/// moves the result by at most an ulp). A display with a starred element,
/// a `key=` or `default=`, or an empty `max`/`min` (which raises) stays.
fn builtins_of_displays(
    src: &source::SourceFile,
    body: &mut [rustpython_parser::ast::Stmt],
) -> bool {
    use rustpython_parser::ast::{self, Expr};
    let mut changed = false;
    pyast::walk_body_exprs_mut(body, &mut |e| {
        let Expr::Call(c) = e else { return false };
        let Expr::Name(f) = c.func.as_ref() else {
            return false;
        };
        let which = f.id.as_str();
        if !matches!(which, "max" | "min" | "sum")
            || src.resolve(&c.func).as_deref() != Some(which)
            || src.module_function(which).is_some()
        {
            return false;
        }
        let elts = match c.args.first() {
            Some(Expr::List(l)) => &l.elts,
            Some(Expr::Tuple(t)) => &t.elts,
            _ => return false,
        };
        if elts.iter().any(|x| matches!(x, Expr::Starred(_))) {
            return false;
        }
        let range = c.range;
        let replacement = if which == "sum" {
            // `sum(xs)`, `sum(xs, start)` or `sum(xs, start=s)`.
            let start = match (c.args.len(), c.keywords.as_slice()) {
                (1, []) => Expr::Constant(ast::ExprConstant {
                    range,
                    value: ast::Constant::Int(0.into()),
                    kind: None,
                }),
                (2, []) => c.args[1].clone(),
                (1, [k]) if k.arg.as_deref() == Some("start") => k.value.clone(),
                _ => return false,
            };
            elts.iter().fold(start, |acc, x| {
                Expr::BinOp(ast::ExprBinOp {
                    range,
                    left: Box::new(acc),
                    op: ast::Operator::Add,
                    right: Box::new(x.clone()),
                })
            })
        } else {
            if c.args.len() != 1 || !c.keywords.is_empty() {
                return false;
            }
            match elts.as_slice() {
                [] => return false,
                [only] => only.clone(),
                _ => pyast::call_node((*c.func).clone(), elts.clone(), range),
            }
        };
        *e = replacement;
        changed = true;
        false
    });
    changed
}

/// Two of NumPy's reductions that are sums of a function of the elements,
/// as those sums, every other argument kept:
///
/// - `np.count_nonzero(x, …)` as `np.sum(x != 0, …)` (`axis` and
///   `keepdims` only): NumPy 2 counts into its default integer either way
///   (an `np.int64`, or an array of them along axes), so every rule of sums
///   (whole, along axes, of a boolean-mask selection) counts too;
/// - `np.nansum(x, …)` as `np.sum(np.where(np.isnan(x), 0, x), …)`, NumPy's
///   definition (the weak `0` takes `x`'s type, so the sum's type is
///   `np.sum`'s of `x`), only where `x` may be written twice
///   ([`duplicable`]); otherwise the call stays, and is refused by name.
fn sums_of_counts_and_nans(
    src: &source::SourceFile,
    np: &str,
    body: &mut [rustpython_parser::ast::Stmt],
) -> bool {
    use rustpython_parser::ast::{self, Expr, Ranged};
    let mut changed = false;
    pyast::walk_body_exprs_mut(body, &mut |e| {
        let Expr::Call(c) = e else { return false };
        let name = src.resolve(&c.func).unwrap_or_default();
        let taken = match name.as_str() {
            "numpy.count_nonzero" => {
                c.args.len() <= 2
                    && c.keywords
                        .iter()
                        .all(|k| matches!(k.arg.as_deref(), Some("axis" | "keepdims")))
            }
            "numpy.nansum" => c.args.first().is_some_and(|x| duplicable(src, x)),
            _ => false,
        };
        if !taken || c.args.is_empty() || c.args.iter().any(|a| matches!(a, Expr::Starred(_))) {
            return false;
        }
        let at = c.range;
        let x = c.args[0].clone();
        let r = x.range();
        let numpy =
            |f: &str| pyast::attribute_node(pyast::name_node(np, at, ast::ExprContext::Load), f, r);
        let zero = Expr::Constant(ast::ExprConstant {
            range: r,
            value: ast::Constant::Int(0.into()),
            kind: None,
        });
        c.args[0] = if name == "numpy.count_nonzero" {
            Expr::Compare(ast::ExprCompare {
                range: r,
                left: Box::new(x),
                ops: vec![ast::CmpOp::NotEq],
                comparators: vec![zero],
            })
        } else {
            let isnan = pyast::call_node(numpy("isnan"), vec![x.clone()], r);
            pyast::call_node(numpy("where"), vec![isnan, zero, x], r)
        };
        *c.func = numpy("sum");
        changed = true;
        false
    });
    changed
}

/// Numba's meaning of a function it compiles, where it is not CPython's:
/// what the function returns is cast to its signature's scalar return
/// type (`b1(u1[::1], i4)` returns a bool of `table[loc] & mask`),
/// written as NumPy's cast, `np.bool_(…)`. (Its `locals=` types are the
/// typing's: [`crate::numba_declared::numba_locals`].)
fn numba_return_cast(
    src: &source::SourceFile,
    def: &rustpython_parser::ast::StmtFunctionDef,
    np: &str,
    body: &mut [rustpython_parser::ast::Stmt],
) {
    use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
    let Some(t) = crate::numba_declared::numba_signature(src, def).and_then(|(_, r)| r) else {
        return;
    };
    let dtype = crate::types::numpy_dtype(t).trim_start_matches("np.");
    pyast::walk_stmts_mut(body, &mut |s| {
        let Stmt::Return(ast::StmtReturn { value: Some(v), .. }) = s else {
            return;
        };
        let at = v.range();
        let none = Expr::Constant(ast::ExprConstant {
            range: at,
            value: ast::Constant::None,
            kind: None,
        });
        let inner = std::mem::replace(v.as_mut(), none);
        **v = pyast::call_node(
            pyast::attribute_node(pyast::name_node(np, at, ast::ExprContext::Load), dtype, at),
            vec![inner],
            at,
        );
    });
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
