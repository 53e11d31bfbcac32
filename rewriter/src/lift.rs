//! **lift** — the front end: walks the typed Python function and lifts
//! each construct into port's values ([`Val`]: scalar IR expressions or
//! array templates with NumPy's meaning) and kernel-IR statements, handing
//! every pattern a named rewrite owns to that rewrite (`matmul` to
//! `axis_reduction`, a subscript through an index array to `gather`, a call
//! of the program's own helper to `app_calls`, …).
//!
//! Lowering happens in *regions*: the host region (the function's top
//! level, which becomes the wrapper's steps, see [`crate::schedule`]),
//! kernel regions (the body of a parallel loop, or the element loop of an
//! array expression) and device regions (an app function called from a
//! kernel).
//!
//! This module is the top of the pipeline's module graph: it implements
//! the context's `Recurse` entry points, wiring each to the stage that
//! owns it, so that no pass depends on the front end or on a later stage.
//!
//! A variable's declared type is the join of every type assigned to it
//! (`s = 0` then `s += x[i]` makes `s` a float): the typing pass
//! ([`crate::pipeline::typing`]) decides it before lowering; where it could
//! not, the lowering observes the bindings and runs again when a type
//! widens (at most a few times).

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, Literal, ScalarType, UnaryOp};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, lit, promote, select};
use crate::lower::context::{
    const_val, sanitize, HostBind, Local, Lowerer, Recurse, Reduce, Region, RegionKind,
};
use crate::numpy::array_expr::{self, ArrVal, IndexItem, Val};
use crate::numpy::math_calls;
use crate::plan::HostValue;

mod binop;
mod calls;

pub use calls::out_ufunc_inputs;
mod stmts;
mod subscript;

/// The entry points every pass reaches through [`Recurse`], each wired to
/// the stage that implements it.
impl Recurse for Lowerer<'_> {
    fn expr(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<Val> {
        self.lift_expr(r, e)
    }

    fn scalar(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<(Expr, ScalarType)> {
        self.lift_scalar(r, e)
    }

    fn binop(&mut self, op: ast::Operator, a: &Val, b: &Val, line: u32) -> Lower<Val> {
        self.lift_binop(op, a, b, line)
    }

    fn index_item(
        &mut self,
        r: &mut Region,
        c: &ast::Expr,
        extent: Expr,
        line: u32,
    ) -> Lower<IndexItem> {
        self.lift_index_item(r, c, extent, line)
    }

    fn block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<()> {
        self.lift_block(r, body)
    }

    fn reduce(&mut self, r: &mut Region, op: Reduce, v: Val, line: u32) -> Lower<Val> {
        self.lift_reduce(r, op, v, line)
    }

    /// `schedule::host`.
    fn host_block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<Option<HostValue>> {
        self.host_statements(r, body)
    }

    /// `schedule::host_schedule`.
    fn host_scalar(&mut self, e: Expr, line: u32) -> Lower<Expr> {
        self.read_host_scalar(e, line)
    }

    /// `lower::hoist_alloc`.
    fn materialise(&mut self, hint: &str, av: &ArrVal, line: u32) -> Lower<String> {
        self.allocate_and_fill(hint, av, line)
    }
}

impl<'a> Lowerer<'a> {
    // ---------------------------------------------------------------
    // Names
    // ---------------------------------------------------------------

    fn lookup(&mut self, r: &mut Region, name: &str, line: u32) -> Lower<Val> {
        if let Some(sel) = self.masked.get(name) {
            return refuse(
                crate::lower::masked::NAME,
                line,
                format!(
                    "`{name}` is a boolean-mask selection (line {}): port takes it only reduced (`sum`, `mean`, `max`, `min`, `prod` whole or along `axis=0`; `var`, `std`, `any`, `all`, `len`, `.size`, `np.count_nonzero`), not compacted into an array",
                    sel.line
                ),
            );
        }
        if let Some((_, ty)) = r.reductions.get(name) {
            let weak = r.weak_reductions.contains(name);
            return Ok(Val::Scalar(var(&sanitize(name)), *ty, weak));
        }
        if let Some(l) = r.locals.get(name) {
            return match l {
                Local::Scalar { ir, ty, weak } => Ok(Val::Scalar(var(ir), *ty, *weak)),
                Local::Array { val, snapshot } => {
                    for (arr, count) in snapshot {
                        if r.writes.get(arr).copied().unwrap_or(0) != *count {
                            return refuse(
                                array_expr::NAME,
                                line,
                                format!(
                                    "`{name}` is an array computed from `{arr}`, which changes before `{name}` is used: that needs a temporary array inside the kernel"
                                ),
                            );
                        }
                    }
                    Ok(Val::Array(val.clone()))
                }
            };
        }
        if r.kind != RegionKind::Device {
            if let Some(b) = self.host.get(name).cloned() {
                return match b {
                    HostBind::Scalar(t) => Ok(Val::Scalar(
                        var(name),
                        t,
                        self.bound_as.get(name).is_some_and(|&(_, weak)| weak)
                            || self.python_scalar_param(name, t),
                    )),
                    HostBind::DeviceScalar { acc, ty, weak } => {
                        Ok(Val::Scalar(load(&acc, vec![i64(0)]), ty, weak))
                    }
                    HostBind::Array(t) => Ok(Val::Array(self.named_array(name, t))),
                    HostBind::View(v) => Ok(Val::Array(v)),
                    HostBind::Tuple(items) => Ok(Val::Tuple(items)),
                    HostBind::Diverged { line: l } => refuse(
                        crate::schedule::host_schedule::NAME,
                        line,
                        format!(
                            "`{name}` is read after the `if` at line {l}, whose branches bind it differently (or only one does): give it one value before the `if`"
                        ),
                    ),
                    HostBind::Private { line: l } => refuse(
                        crate::dependences::NAME,
                        line,
                        format!(
                            "`{name}` is read after the parallel loop that assigns it (line {l}): its value would be the last iteration's, which no kernel thread has"
                        ),
                    ),
                };
            }
        }
        // A constant of this module, or one imported from a module beside
        // it (`from consts import G`).
        let c = self.src.consts.get(name).copied().or_else(|| {
            self.src
                .imports
                .get(name)
                .and_then(|f| self.src.imported_const(f))
        });
        if let Some(c) = c {
            return Ok(const_val(c));
        }
        refuse(
            "frontend",
            line,
            format!("`{name}` is not a local variable, an argument or a module constant port can freeze into a kernel"),
        )
    }

    // ---------------------------------------------------------------
    // Expressions
    // ---------------------------------------------------------------

    fn lift_expr(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<Val> {
        let line = self.src.line(e);
        match e {
            ast::Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => match i64::try_from(i) {
                    Ok(v) => Ok(Val::Scalar(i64(v), ScalarType::I64, true)),
                    Err(_) => refuse("frontend", line, "integer constant out of the int64 range"),
                },
                ast::Constant::Float(f) => Ok(Val::Scalar(f64(*f), ScalarType::F64, true)),
                ast::Constant::Bool(b) => Ok(Val::Scalar(bool(*b), ScalarType::Bool, true)),
                // A Python complex is weak like a float (`x_f32 * 1j` is complex64).
                ast::Constant::Complex { real, imag } => Ok(Val::Scalar(
                    Expr::Complex(Box::new(f64(*real)), Box::new(f64(*imag))),
                    ScalarType::C128,
                    true,
                )),
                _ => refuse(
                    "frontend",
                    line,
                    format!("`{}`: kernels compute on numbers only", self.src.text_of(e)),
                ),
            },
            ast::Expr::Name(n) => {
                let v = self.lookup(r, n.id.as_str(), line)?;
                let choice = self.choice_names.get(n.id.as_str()).copied();
                self.note_choice(e, choice);
                Ok(v)
            }
            ast::Expr::BinOp(b) => {
                let a = self.expr(r, &b.left)?;
                let c = self.expr(r, &b.right)?;
                if b.op == ast::Operator::MatMult {
                    return self.matmul(r, a, c, line);
                }
                // An array of NumPy bools `** 2` takes NumPy's fast path,
                // `np.square`: int8 (`np.power(b, 2)` and an element's
                // `b[i] ** 2` are int64). Fuzz seed 110.
                if b.op == ast::Operator::Pow
                    && matches!(&a, Val::Array(av) if av.elem == ScalarType::Bool)
                    && matches!(
                        &c,
                        Val::Scalar(Expr::Lit(port_codegen::ir::Literal::I64(2)), _, true)
                    )
                {
                    if let Some(v) = math_calls::call("numpy.square", std::slice::from_ref(&a)) {
                        return Ok(v);
                    }
                }
                let v = match (b.op == ast::Operator::Pow && r.kind == RegionKind::Host)
                    .then(|| self.host_int_power(&a, &c))
                    .flatten()
                {
                    Some(v) => v,
                    None => {
                        self.assume_broadcast(r, &[&a, &c], line)?;
                        self.binop(b.op, &a, &c, line)?
                    }
                };
                self.pass_choice(e, Some(Ok(b.op)), &[(&b.left, &a), (&b.right, &c)]);
                Ok(v)
            }
            ast::Expr::UnaryOp(u) => {
                let v = self.expr(r, &u.operand)?;
                let weak = matches!(v, Val::Scalar(_, _, true));
                // `-x` of a Python int from the data is checked.
                let checked = weak
                    && matches!(&v, Val::Scalar(x, ScalarType::I64, _)
                        if crate::lower::python_ints::data_derived(x, &self.data_ints));
                let mut failed = None;
                let out = array_expr::map1(&v, &mut |x, t| {
                    let t2 = match crate::dtypes::unary(u.op, (t, weak)) {
                        Ok(t2) => t2,
                        Err(what) => {
                            failed = Some(what);
                            return (x, t);
                        }
                    };
                    match u.op {
                        ast::UnaryOp::USub if checked && t2 == ScalarType::I64 => {
                            (crate::lower::python_ints::checked_neg(x), t2)
                        }
                        ast::UnaryOp::USub => {
                            (Expr::Unary(UnaryOp::Neg, Box::new(cast_to(x, t, t2))), t2)
                        }
                        ast::UnaryOp::UAdd => (cast_to(x, t, t2), t2),
                        ast::UnaryOp::Not => (
                            Expr::Unary(UnaryOp::Not, Box::new(math_calls::truthy(x, t))),
                            t2,
                        ),
                        ast::UnaryOp::Invert => {
                            (Expr::Unary(UnaryOp::Not, Box::new(cast_to(x, t, t2))), t2)
                        }
                    }
                });
                if let Some(what) = failed {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{}`: {what}", self.src.text_of(e)),
                    );
                }
                self.pass_choice(e, Some(Err(u.op)), &[(&u.operand, &v)]);
                match (out, &v) {
                    (Some(Val::Scalar(x, t, _)), Val::Scalar(_, _, w)) => Ok(Val::Scalar(x, t, *w)),
                    (Some(v), _) => Ok(v),
                    (None, _) => refuse("frontend", line, "a unary operator applied to a tuple"),
                }
            }
            ast::Expr::BoolOp(b) => {
                let op = match b.op {
                    ast::BoolOp::And => BinOp::And,
                    ast::BoolOp::Or => BinOp::Or,
                };
                let mut acc: Option<Expr> = None;
                for v in &b.values {
                    let x = self.expr(r, v)?;
                    let Val::Scalar(x, t, _) = x else {
                        return refuse(
                            array_expr::NAME,
                            line,
                            "`and`/`or` on arrays is ambiguous in NumPy; use `&`/`|`",
                        );
                    };
                    let x = math_calls::truthy(x, t);
                    acc = Some(match acc {
                        None => x,
                        Some(a) => binary(op, a, x),
                    });
                }
                Ok(Val::scalar(acc.unwrap_or(bool(true)), ScalarType::Bool))
            }
            // `x is None` of a value the kernel holds (a number or an
            // array, never `None`) is false, as Numba folds it for a
            // non-optional type: `if w is None: w = n` of an int `w`.
            ast::Expr::Compare(c)
                if matches!(c.ops.as_slice(), [ast::CmpOp::Is | ast::CmpOp::IsNot])
                    && [&*c.left, &c.comparators[0]]
                        .iter()
                        .filter(|x| crate::pyast::is_none_constant(x))
                        .count()
                        == 1 =>
            {
                let other = if crate::pyast::is_none_constant(&c.left) {
                    &c.comparators[0]
                } else {
                    &*c.left
                };
                self.expr(r, other)?;
                Ok(Val::Scalar(
                    bool(c.ops[0] == ast::CmpOp::IsNot),
                    ScalarType::Bool,
                    true,
                ))
            }
            ast::Expr::Compare(c) => {
                let mut left = self.expr(r, &c.left)?;
                let mut acc: Option<Val> = None;
                for (op, right) in c.ops.iter().zip(&c.comparators) {
                    let rv = self.expr(r, right)?;
                    let cop = match op {
                        ast::CmpOp::Eq => CmpOp::Eq,
                        ast::CmpOp::NotEq => CmpOp::Ne,
                        ast::CmpOp::Lt => CmpOp::Lt,
                        ast::CmpOp::LtE => CmpOp::Le,
                        ast::CmpOp::Gt => CmpOp::Gt,
                        ast::CmpOp::GtE => CmpOp::Ge,
                        _ => {
                            return refuse(
                                "frontend",
                                line,
                                "`is` / `in` comparisons have no kernel equivalent",
                            )
                        }
                    };
                    // `a.shape != b.shape`: tuples of integers are equal
                    // when they have one length and equal items (floats
                    // are left alone: Python's tuples take an item that
                    // *is* the other as equal, a NaN included).
                    if let (Val::Tuple(xs), Val::Tuple(ys), CmpOp::Eq | CmpOp::Ne) =
                        (&left, &rv, cop)
                    {
                        if let Some(same) = integer_tuples_equal(xs, ys) {
                            let one = if cop == CmpOp::Eq {
                                same
                            } else {
                                cmp(CmpOp::Eq, same, bool(false))
                            };
                            acc = Some(match acc {
                                None => Val::scalar(one, ScalarType::Bool),
                                Some(Val::Scalar(a, _, _)) => {
                                    Val::scalar(binary(BinOp::And, a, one), ScalarType::Bool)
                                }
                                Some(_) => return refuse("frontend", line, "comparison of tuples"),
                            });
                            left = rv;
                            continue;
                        }
                    }
                    self.assume_broadcast(r, &[&left, &rv], line)?;
                    let mut ordered_complex = false;
                    let one = array_expr::map2(&left, &rv, &mut |(x, tx, wx), (y, ty, wy)| {
                        ordered_complex |= (tx.is_complex() || ty.is_complex())
                            && !matches!(cop, CmpOp::Eq | CmpOp::Ne);
                        (
                            crate::ir_util::compare(cop, (x, tx, wx), (y, ty, wy)),
                            ScalarType::Bool,
                        )
                    })
                    .ok_or_else(|| {
                        Box::new(crate::error::Reason::new(
                            "frontend",
                            line,
                            "comparison of tuples",
                        ))
                    })?;
                    if ordered_complex {
                        return refuse(
                            "frontend",
                            line,
                            "`<`/`>` on complex numbers: compare `abs(z)` or `z.real`",
                        );
                    }
                    acc = Some(match acc {
                        None => one,
                        Some(a) => array_expr::map2(&a, &one, &mut |(x, _, _), (y, _, _)| {
                            (binary(BinOp::And, x, y), ScalarType::Bool)
                        })
                        .expect("bool operands"),
                    });
                    left = rv;
                }
                Ok(acc.expect("a comparison has an operator"))
            }
            ast::Expr::IfExp(i) => {
                let c = self.expr(r, &i.test)?;
                let a = self.expr(r, &i.body)?;
                let b = self.expr(r, &i.orelse)?;
                self.pass_choice(e, None, &[(&i.body, &a), (&i.orelse, &b)]);
                // Branches of two types: CPython's value has the type of
                // the one that ran (`b[0] if c else 0.0` of a float32 `b`).
                if let (Val::Scalar(_, tx, wx), Val::Scalar(_, ty, wy)) = (&a, &b) {
                    if tx != ty && self.choice_of(e).is_none() {
                        let choice =
                            crate::lower::context::Choice::among(line, &[(*tx, *wx), (*ty, *wy)])
                                .map(|c| crate::lower::context::Choice { branch: true, ..c });
                        self.note_choice(e, choice);
                    }
                }
                let (Val::Scalar(c, tc, _), Val::Scalar(x, tx, wx), Val::Scalar(y, ty, wy)) =
                    (c, a, b)
                else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "a conditional expression over arrays: use np.where",
                    );
                };
                let t = promote(tx, wx, ty, wy);
                let (x, y) = (cast_to(x, tx, t), cast_to(y, ty, t));
                let cond = math_calls::truthy(c, tc);
                let loads = has_load(&x) || has_load(&y);
                if loads && r.kind != RegionKind::Host {
                    // Only the branch taken may touch memory (`x[i-1] if i > 0 else 0`).
                    let tmp = self.local_temp(r, "choice");
                    r.push(let_(&tmp, t, lit(t, 0.0)));
                    r.push(if_(cond, vec![assign(&tmp, x)], vec![assign(&tmp, y)]));
                    Ok(Val::scalar(var(&tmp), t))
                } else {
                    Ok(Val::Scalar(select(cond, x, y), t, wx && wy))
                }
            }
            ast::Expr::Tuple(t) => {
                let mut out = Vec::new();
                for x in &t.elts {
                    out.push(self.expr(r, x)?);
                }
                Ok(Val::Tuple(out))
            }
            ast::Expr::Attribute(a) => self.attribute(r, e, a, line),
            ast::Expr::Subscript(s) => {
                match self.src.resolve(&s.value).as_deref() {
                    Some("numpy.ogrid") => return self.index_grid(r, false, &s.slice, line),
                    Some("numpy.mgrid") => return self.index_grid(r, true, &s.slice, line),
                    _ => {}
                }
                // `np.linalg.lstsq(…)[0]`: one result of a library call.
                if let Some(v) = self.linalg_item(r, s, line)? {
                    return Ok(v);
                }
                let base = self.expr(r, &s.value)?;
                self.subscript(r, base, &s.slice, line)
            }
            ast::Expr::Call(c) => self.call(r, c, line),
            other => refuse(
                "frontend",
                line,
                format!(
                    "`{}`: {} have no kernel equivalent",
                    self.src.text_of(other),
                    construct_name(other)
                ),
            ),
        }
    }

    /// A scalar value or a refusal naming the expression.
    fn lift_scalar(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<(Expr, ScalarType)> {
        match self.expr(r, e)? {
            Val::Scalar(x, t, _) => Ok((x, t)),
            _ => refuse(
                "frontend",
                self.src.line(e),
                format!("`{}` must be a number here", self.src.text_of(e)),
            ),
        }
    }

    fn attribute(
        &mut self,
        r: &mut Region,
        whole: &ast::Expr,
        a: &ast::ExprAttribute,
        line: u32,
    ) -> Lower<Val> {
        let attr = a.attr.as_str();
        // Module constants (math.pi) and dotted names.
        if let Some(c) = self.src.eval_const(whole) {
            return Ok(const_val(c));
        }
        if attr == "size" {
            if let Some(v) = self.masked_size(r, &a.value, line)? {
                return Ok(v);
            }
        }
        if let ast::Expr::Call(c) = &*a.value {
            if let Some(v) = self.type_info(r, c, attr, line)? {
                return Ok(v);
            }
        }
        // `np.r_`, `scipy.constants.k`: an attribute of an imported module
        // that is no constant port knows.
        if let ast::Expr::Name(m) = &*a.value {
            if !self.host.contains_key(m.id.as_str()) {
                if let Some(full) = self.src.imports.get(m.id.as_str()) {
                    return refuse(
                        "frontend",
                        line,
                        format!(
                            "`{}` (`{full}.{attr}`) is neither a constant port can freeze nor something it turns into kernel code",
                            self.src.text_of(whole)
                        ),
                    );
                }
            }
        }
        let base = self.expr(r, &a.value)?;
        if matches!(attr, "real" | "imag") && !matches!(base, Val::Tuple(_)) {
            let p = if attr == "real" {
                port_codegen::ir::Part::Re
            } else {
                port_codegen::ir::Part::Im
            };
            let out = array_expr::map1(&base, &mut |e, t| math_calls::real_or_imag(p, e, t));
            return Ok(out.expect("a scalar or an array"));
        }
        let Val::Array(av) = base else {
            return refuse(
                "frontend",
                line,
                format!("`{}`: attribute of a non-array", self.src.text_of(whole)),
            );
        };
        match attr {
            "shape" => Ok(Val::Tuple(
                av.shape
                    .iter()
                    .map(|s| Val::scalar(s.clone(), ScalarType::I64))
                    .collect(),
            )),
            "size" => Ok(Val::scalar(av.size(), ScalarType::I64)),
            "ndim" => Ok(Val::Scalar(i64(av.ndim() as i64), ScalarType::I64, true)),
            "T" => Ok(Val::Array(av.transpose())),
            _ => refuse(
                "frontend",
                line,
                format!(
                    "`{}`: array attribute `{attr}` is not supported in kernels",
                    self.src.text_of(whole)
                ),
            ),
        }
    }
}

impl Lowerer<'_> {
    /// `R ** K` of two integers at host level (a shape, a count) with an
    /// exponent that is not a small constant: one host step, exact as
    /// Python's (the kernels have no integer power of a run-time
    /// exponent; they get the value as a scalar).
    fn host_int_power(&mut self, a: &Val, c: &Val) -> Option<Val> {
        let (Val::Scalar(x, tx, wx), Val::Scalar(y, ty, wy)) = (a, c) else {
            return None;
        };
        if !tx.is_int() || !ty.is_int() {
            return None;
        }
        if matches!(y, Expr::Lit(Literal::I64(k)) if (0..=4).contains(k)) {
            return None;
        }
        let t = promote(*tx, *wx, *ty, *wy);
        // Both casts kept: they say the power is of integers.
        let value = math(
            port_codegen::ir::MathFn::Pow,
            vec![cast(t, x.clone()), cast(t, y.clone())],
        );
        let value = self.hostify(value);
        let name = self.fresh("power");
        self.steps.push(crate::plan::HostStep::Scalar {
            name: name.clone(),
            ty: t,
            value,
        });
        self.host.insert(name.clone(), HostBind::Scalar(t));
        self.log.applied(
            array_expr::NAME,
            "an integer power of a run-time exponent computed on the host",
        );
        Some(Val::Scalar(var(&name), t, *wx && *wy))
    }
}

fn has_load(e: &Expr) -> bool {
    let mut found = false;
    port_codegen::ir::walk_expr(e, &mut |x| found |= matches!(x, Expr::Load(_)));
    found
}

fn construct_name(e: &ast::Expr) -> &'static str {
    match e {
        ast::Expr::Lambda(_) => "lambdas",
        ast::Expr::ListComp(_) | ast::Expr::SetComp(_) | ast::Expr::DictComp(_) => "comprehensions",
        ast::Expr::GeneratorExp(_) => "generator expressions",
        ast::Expr::List(_) => "lists",
        ast::Expr::Dict(_) => "dicts",
        ast::Expr::Set(_) => "sets",
        ast::Expr::JoinedStr(_) | ast::Expr::FormattedValue(_) => "f-strings",
        ast::Expr::Starred(_) => "starred expressions",
        ast::Expr::Yield(_) | ast::Expr::YieldFrom(_) | ast::Expr::Await(_) => {
            "generators and coroutines"
        }
        ast::Expr::NamedExpr(_) => "assignment expressions",
        _ => "such expressions",
    }
}

/// Whether two tuples of integers (or bools) are equal, Python's `==`:
/// one length and equal items, or `false` when the lengths differ. `None`
/// when an item is not an integer number.
fn integer_tuples_equal(xs: &[Val], ys: &[Val]) -> Option<Expr> {
    let ints = |v: &[Val]| {
        v.iter()
            .all(|x| matches!(x, Val::Scalar(_, t, _) if t.is_int() || *t == ScalarType::Bool))
    };
    if !ints(xs) || !ints(ys) {
        return None;
    }
    if xs.len() != ys.len() {
        return Some(bool(false));
    }
    let mut all = bool(true);
    for (x, y) in xs.iter().zip(ys) {
        let (Val::Scalar(x, tx, wx), Val::Scalar(y, ty, wy)) = (x, y) else {
            return None;
        };
        let eq = crate::ir_util::compare(CmpOp::Eq, (x.clone(), *tx, *wx), (y.clone(), *ty, *wy));
        all = binary(BinOp::And, all, eq);
    }
    Some(all)
}
