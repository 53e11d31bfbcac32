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
//! Types are inferred by running the whole lowering to a fixed point: a
//! variable's declared type is the join of every type assigned to it (`s =
//! 0` then `s += x[i]` makes `s` a float), so the lowering runs again when a
//! variable's type widens (at most a few times).

use port_codegen::ir::build::*;
use port_codegen::ir::{AtomicOp, BinOp, CmpOp, ElemRef, Expr, Literal, ScalarType, Stmt, UnaryOp};
use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::text_size::TextSize;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, lit, promote, py_mod, select};
use crate::lower::context::{
    sanitize, stmt_name, HostBind, Local, Lowerer, Recurse, Reduce, Region, RegionKind,
};
use crate::numpy::array_expr::{self, ArrVal, IndexItem, Val};
use crate::numpy::math_calls;
use crate::plan::HostValue;
use crate::pyast;
use crate::source::Const;

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
            return Ok(Val::scalar(var(&sanitize(name)), *ty));
        }
        if let Some(l) = r.locals.get(name) {
            return match l {
                Local::Scalar { ir, ty } => Ok(Val::scalar(var(ir), *ty)),
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
                        self.weak_bound.contains(name) || self.python_scalar_param(name, t),
                    )),
                    HostBind::DeviceScalar { acc, ty } => {
                        Ok(Val::scalar(load(&acc, vec![i64(0)]), ty))
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
            return Ok(match c {
                Const::Int(i) => Val::Scalar(i64(i), ScalarType::I64, true),
                Const::Float(f) => Val::Scalar(f64(f), ScalarType::F64, true),
                Const::Float32(f) => Val::scalar(f32(f), ScalarType::F32),
                Const::Bool(b) => Val::Scalar(bool(b), ScalarType::Bool, true),
            });
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
            ast::Expr::Name(n) => self.lookup(r, n.id.as_str(), line),
            ast::Expr::BinOp(b) => {
                let a = self.expr(r, &b.left)?;
                let c = self.expr(r, &b.right)?;
                if b.op == ast::Operator::MatMult {
                    return self.matmul(r, a, c, line);
                }
                if b.op == ast::Operator::Pow && r.kind == RegionKind::Host {
                    if let Some(v) = self.host_int_power(&a, &c) {
                        return Ok(v);
                    }
                }
                self.assume_broadcast(r, &[&a, &c], line)?;
                self.binop(b.op, &a, &c, line)
            }
            ast::Expr::UnaryOp(u) => {
                let v = self.expr(r, &u.operand)?;
                let out = array_expr::map1(&v, &mut |x, t| match u.op {
                    ast::UnaryOp::USub => {
                        let t2 = if t == ScalarType::Bool {
                            ScalarType::I64
                        } else {
                            t
                        };
                        (Expr::Unary(UnaryOp::Neg, Box::new(cast_to(x, t, t2))), t2)
                    }
                    ast::UnaryOp::UAdd => (x, t),
                    ast::UnaryOp::Not => (
                        Expr::Unary(UnaryOp::Not, Box::new(math_calls::truthy(x, t))),
                        ScalarType::Bool,
                    ),
                    ast::UnaryOp::Invert => (Expr::Unary(UnaryOp::Not, Box::new(x)), t),
                });
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
                    self.assume_broadcast(r, &[&left, &rv], line)?;
                    let mut ordered_complex = false;
                    let one = array_expr::map2(&left, &rv, &mut |(x, tx, wx), (y, ty, wy)| {
                        let t = promote(tx, wx, ty, wy);
                        ordered_complex |= t.is_complex() && !matches!(cop, CmpOp::Eq | CmpOp::Ne);
                        (
                            cmp(cop, cast_to(x, tx, t), cast_to(y, ty, t)),
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

    fn lift_binop(&mut self, op: ast::Operator, a: &Val, b: &Val, line: u32) -> Lower<Val> {
        use ast::Operator as O;
        let mut failed: Option<&'static str> = None;
        let out = array_expr::map2(a, b, &mut |(x, tx, wx), (y, ty, wy)| {
            let t = promote(tx, wx, ty, wy);
            let t = if t == ScalarType::Bool
                && matches!(
                    op,
                    O::Add | O::Sub | O::Mult | O::FloorDiv | O::Mod | O::Pow
                ) {
                ScalarType::I64
            } else {
                t
            };
            let (cx, cy) = (cast_to(x.clone(), tx, t), cast_to(y.clone(), ty, t));
            if t.is_complex() && !matches!(op, O::Add | O::Sub | O::Mult | O::Div | O::Pow) {
                // NumPy raises a TypeError for `//`, `%` and bitwise
                // operators on complex numbers.
                failed = Some("this operator on complex numbers (NumPy refuses it too)");
                return (cx, t);
            }
            match op {
                O::Add => (add(cx, cy), t),
                O::Sub => (sub(cx, cy), t),
                O::Mult => (mul(cx, cy), t),
                O::Div => {
                    let ft = if t.is_float() || t.is_complex() {
                        t
                    } else {
                        ScalarType::F64
                    };
                    (div(cast_to(x, tx, ft), cast_to(y, ty, ft)), ft)
                }
                O::FloorDiv => (binary(BinOp::FloorDiv, cx, cy), t),
                O::Mod => (py_mod(cx, cy, t), t),
                O::Pow => pow(x, tx, wx, y, ty, wy, &mut failed),
                O::BitAnd | O::BitOr | O::BitXor if t == ScalarType::Bool => (
                    match op {
                        O::BitAnd => binary(BinOp::And, cx, cy),
                        O::BitOr => binary(BinOp::Or, cx, cy),
                        _ => cmp(CmpOp::Ne, cx, cy),
                    },
                    t,
                ),
                O::BitAnd | O::BitOr | O::BitXor | O::LShift | O::RShift if t.is_int() => (
                    binary(
                        match op {
                            O::BitAnd => BinOp::BitAnd,
                            O::BitOr => BinOp::BitOr,
                            O::BitXor => BinOp::BitXor,
                            O::LShift => BinOp::Shl,
                            _ => BinOp::Shr,
                        },
                        cx,
                        cy,
                    ),
                    t,
                ),
                _ => {
                    failed = Some("this operator (`@` or a bitwise operator on floats)");
                    (cx, t)
                }
            }
        });
        if let Some(what) = failed {
            return refuse(
                array_expr::NAME,
                line,
                format!("{what} has no element-by-element kernel form in port yet"),
            );
        }
        if matches!(op, O::MatMult) {
            return refuse(
                array_expr::NAME,
                line,
                "`@` (matrix product): write the loops, or keep it in CuPy/cuBLAS",
            );
        }
        let out = out.ok_or_else(|| {
            Box::new(crate::error::Reason::new(
                "frontend",
                line,
                "arithmetic on tuples",
            ))
        })?;
        if matches!((a, b), (Val::Array(_), _) | (_, Val::Array(_))) {
            self.log.applied(
                array_expr::NAME,
                format!("elementwise arithmetic (line {line})"),
            );
        }
        Ok(out)
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
            return Ok(match c {
                Const::Int(i) => Val::Scalar(i64(i), ScalarType::I64, true),
                Const::Float(f) => Val::Scalar(f64(f), ScalarType::F64, true),
                Const::Float32(f) => Val::scalar(f32(f), ScalarType::F32),
                Const::Bool(b) => Val::Scalar(bool(b), ScalarType::Bool, true),
            });
        }
        if attr == "size" {
            if let Some(v) = self.masked_size(r, &a.value, line)? {
                return Ok(v);
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

    /// `base[slice]` for arrays and tuples (`x.shape[0]`).
    pub fn subscript(
        &mut self,
        r: &mut Region,
        base: Val,
        slice: &ast::Expr,
        line: u32,
    ) -> Lower<Val> {
        match base {
            Val::Tuple(items) => {
                // `x.shape[:2]`, `x.shape[1:]`, `x.shape[::-1]`: Python's
                // slice of the tuple, with constant bounds.
                if let ast::Expr::Slice(sl) = slice {
                    let n = items.len() as i64;
                    let bound = |b: &Option<Box<ast::Expr>>| -> Result<Option<i64>, ()> {
                        match b.as_deref() {
                            None => Ok(None),
                            Some(e) => match self.src.eval_const(e) {
                                Some(Const::Int(k)) => Ok(Some(k)),
                                _ => Err(()),
                            },
                        }
                    };
                    let (Ok(lo), Ok(hi), Ok(step)) =
                        (bound(&sl.lower), bound(&sl.upper), bound(&sl.step))
                    else {
                        return refuse(
                            "frontend",
                            line,
                            "a slice of a tuple (like `x.shape[:k]`) with bounds that are not constants",
                        );
                    };
                    let step = step.unwrap_or(1);
                    if step == 0 {
                        return refuse(
                            "frontend",
                            line,
                            "a slice step of 0 (Python raises ValueError)",
                        );
                    }
                    // Python's slice.indices(n).
                    let clamp = |v: Option<i64>, dflt: i64, lo_b: i64, hi_b: i64| match v {
                        None => dflt,
                        Some(v) if v < 0 => (v + n).max(lo_b),
                        Some(v) => v.min(hi_b),
                    };
                    let (start, stop) = if step > 0 {
                        (clamp(lo, 0, 0, n), clamp(hi, n, 0, n))
                    } else {
                        (clamp(lo, n - 1, -1, n - 1), clamp(hi, -1, -1, n - 1))
                    };
                    let mut out = Vec::new();
                    let mut k = start;
                    while (step > 0 && k < stop) || (step < 0 && k > stop) {
                        out.push(items[k as usize].clone());
                        k += step;
                    }
                    return Ok(Val::Tuple(out));
                }
                let k = match self.src.eval_const(slice) {
                    Some(Const::Int(k)) => k,
                    _ => {
                        return refuse(
                            "frontend",
                            line,
                            "a tuple (like `x.shape`) indexed by a non-constant",
                        )
                    }
                };
                let n = items.len() as i64;
                let k = if k < 0 { k + n } else { k };
                items.get(k as usize).cloned().ok_or_else(|| {
                    Box::new(crate::error::Reason::new(
                        "frontend",
                        line,
                        format!("index {k} is out of range for a tuple of {n}"),
                    ))
                })
            }
            Val::Scalar(..) => refuse("frontend", line, "indexing a scalar"),
            Val::Array(av) => {
                let comps: Vec<&ast::Expr> = match slice {
                    ast::Expr::Tuple(t) => t.elts.iter().collect(),
                    e => vec![e],
                };
                let is_new = |c: &ast::Expr| {
                    matches!(c, ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::None))
                        || self.src.resolve(c).as_deref() == Some("numpy.newaxis")
                };
                if let Some(v) = self.gather(r, &av, &comps, line)? {
                    return Ok(v);
                }
                let is_ellipsis = |c: &ast::Expr| matches!(c, ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::Ellipsis));
                let consuming = comps
                    .iter()
                    .filter(|c| !is_new(c) && !is_ellipsis(c))
                    .count();
                if consuming > av.ndim() {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "too many indices ({consuming}) for an array of {} dimensions",
                            av.ndim()
                        ),
                    );
                }
                if comps.iter().filter(|c| is_ellipsis(c)).count() > 1 {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "an index can only have a single ellipsis ('...')",
                    );
                }
                let mut items = Vec::new();
                let mut k = 0;
                for c in &comps {
                    if is_new(c) {
                        items.push(array_expr::IndexItem::NewAxis);
                    } else if is_ellipsis(c) {
                        for _ in 0..av.ndim() - consuming {
                            items.push(array_expr::IndexItem::Range {
                                start: i64(0),
                                step: 1,
                                len: av.shape[k].clone(),
                            });
                            k += 1;
                        }
                    } else {
                        let extent = av.shape[k].clone();
                        items.push(self.index_item(r, c, extent, line)?);
                        k += 1;
                    }
                }
                let out = array_expr::index(&av, items);
                if matches!(out, Val::Array(_)) {
                    self.log.applied(
                        array_expr::NAME,
                        format!("slice as element loop (line {line})"),
                    );
                }
                Ok(out)
            }
        }
    }

    fn lift_index_item(
        &mut self,
        r: &mut Region,
        c: &ast::Expr,
        extent: Expr,
        line: u32,
    ) -> Lower<IndexItem> {
        let norm = |this: &mut Self, r: &mut Region, e: &ast::Expr| -> Lower<Expr> {
            if let Some(Const::Int(k)) = this.src.eval_const(e) {
                return Ok(if k < 0 {
                    array_expr::tidy(&add(extent.clone(), i64(k)))
                } else {
                    i64(k)
                });
            }
            let (x, t) = this.scalar(r, e)?;
            if !t.is_int() && t != ScalarType::Bool {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`{}`: array indices must be integers", this.src.text_of(e)),
                );
            }
            if let Val::Array(_) = this.expr(r, e)? {
                return refuse(
                    array_expr::NAME,
                    line,
                    "fancy indexing with an array of indices",
                );
            }
            Ok(cast_to(x, t, ScalarType::I64))
        };
        match c {
            ast::Expr::Slice(s) => {
                let step = match &s.step {
                    None => 1,
                    Some(st) => match self.src.eval_const(st) {
                        Some(Const::Int(k)) if k != 0 => k,
                        _ => {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "a slice step must be a non-zero integer constant",
                            )
                        }
                    },
                };
                if step < 0 {
                    if s.lower.is_some() || s.upper.is_some() || step != -1 {
                        return refuse(
                            array_expr::NAME,
                            line,
                            "negative slice steps other than `[::-1]`",
                        );
                    }
                    return Ok(IndexItem::Range {
                        start: array_expr::tidy(&sub(extent.clone(), i64(1))),
                        step: -1,
                        len: extent,
                    });
                }
                if s.lower.is_none() && s.upper.is_none() && step == 1 {
                    return Ok(IndexItem::Range {
                        start: i64(0),
                        step: 1,
                        len: extent,
                    });
                }
                let start = match &s.lower {
                    None => i64(0),
                    Some(l) => norm(self, r, l)?,
                };
                // `a[:, 0:1]`, `a[-2:-1]`: one element, a dimension of
                // extent 1 that broadcasts as NumPy's does (the array has
                // that element, or NumPy itself would give an empty slice
                // that fails to broadcast).
                let bounds = (
                    s.lower.as_ref().and_then(|l| self.src.eval_const(l)),
                    s.upper.as_ref().and_then(|u| self.src.eval_const(u)),
                );
                let one_element = match bounds {
                    (Some(Const::Int(lo)), Some(Const::Int(hi))) => {
                        hi - lo == 1 && (lo >= 0 || hi < 0)
                    }
                    // `a[:, k:k + 1]` (k is a valid index, or NumPy's own
                    // slice would be empty).
                    _ => match (&s.lower, &s.upper) {
                        (Some(l), Some(u)) => matches!(
                            u.as_ref(),
                            ast::Expr::BinOp(b)
                                if b.op == ast::Operator::Add
                                    && self.src.text_of(b.left.as_ref()) == self.src.text_of(l.as_ref())
                                    && matches!(self.src.eval_const(&b.right), Some(Const::Int(1)))
                        ),
                        _ => false,
                    },
                };
                if step == 1 && one_element {
                    return Ok(IndexItem::Range {
                        start,
                        step: 1,
                        len: i64(1),
                    });
                }
                let stop = match &s.upper {
                    None => extent.clone(),
                    Some(u) => {
                        let v = norm(self, r, u)?;
                        if v == extent {
                            v
                        } else {
                            binary(BinOp::Min, v, extent.clone())
                        }
                    }
                };
                let span = array_expr::tidy(&sub(stop, start.clone()));
                let len = if step == 1 {
                    array_expr::nonneg(span)
                } else {
                    array_expr::nonneg(binary(BinOp::FloorDiv, add(span, i64(step - 1)), i64(step)))
                };
                Ok(IndexItem::Range { start, step, len })
            }
            ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::None) => {
                Ok(IndexItem::NewAxis)
            }
            e if self.src.resolve(e).as_deref() == Some("numpy.newaxis") => Ok(IndexItem::NewAxis),
            e => Ok(IndexItem::At(norm(self, r, e)?)),
        }
    }

    fn call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        if let Some(v) = self.masked_call(r, c, line)? {
            return Ok(v);
        }
        // Methods of arrays.
        if let ast::Expr::Attribute(a) = c.func.as_ref() {
            let is_module = self.src.resolve(&a.value).is_some_and(|m| {
                matches!(
                    m.split('.').next(),
                    Some("numpy" | "math" | "numba" | "cmath")
                ) || self.src.imports.contains_key(m.as_str())
            });
            if !is_module {
                let base = self.expr(r, &a.value)?;
                if let Val::Array(av) = base {
                    return self.array_method(r, &av, a.attr.as_str(), c, line);
                }
            }
        }
        let name = self.src.resolve(&c.func).unwrap_or_default();
        let short = name.rsplit('.').next().unwrap_or(&name).to_string();
        let is_numpy = name.starts_with("numpy.");
        if is_numpy && pyast::out_keyword(c) && takes_out(&short) {
            return self.ufunc_into_out(r, c, &short, line);
        }
        if name == "numpy.einsum" {
            return self.einsum(r, c, line);
        }
        // `np.pad` reads its input where it falls (a template, nothing
        // allocated): per-thread work may pad a slice of its own.
        if name == "numpy.pad" {
            return self.padded(r, c, line);
        }
        // `p[range(n), y]`, `np.array(range(n))`: a `range` as a value is
        // the integer array NumPy makes of it, `np.arange`'s.
        if name == "range" && r.kind == RegionKind::Host && c.keywords.is_empty() {
            if let Some(v) = self.creation_call(r, "numpy.arange", c, line)? {
                return Ok(v);
            }
        }

        // Reductions.
        if let Some(op) = reduce_name(&name) {
            if c.args.len() == 1 && c.keywords.is_empty() {
                let v = self.expr(r, &c.args[0])?;
                return self.reduce(r, op, v, line);
            }
        }
        if name.starts_with("numpy.") {
            if let Some(op) = crate::lower::axis_reduction::AxisOp::from_name(&name) {
                let Some(first) = c.args.first() else {
                    return refuse("frontend", line, format!("`{short}` needs an array"));
                };
                let v = self.expr(r, first)?;
                let nd = match &v {
                    Val::Array(a) => a.ndim(),
                    _ => 0,
                };
                let args = self.reduction_args(c, 1, nd, op, line)?;
                let hint = pyast::subscript_base(first).unwrap_or_else(|| "r".into());
                return self.reduce_with(r, op, v, args, &hint, line);
            }
        }
        if let (Some(op), true) = (crate::lower::scan::scan_op(&name), is_numpy) {
            let Some(first) = c.args.first() else {
                return refuse("frontend", line, format!("`{short}` needs an array"));
            };
            let v = self.expr(r, first)?;
            return self.scan_call(r, op, v, c, 1, line);
        }
        if name == "numpy.linalg.norm" {
            return self.linalg_norm(r, c, line);
        }
        if crate::lower::linalg::is_linalg(&name) {
            return self.linalg_call(r, c, line);
        }
        if matches!(name.as_str(), "numpy.matmul") && c.args.len() == 2 && c.keywords.is_empty() {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.matmul(r, a, b, line);
        }
        if name == "numpy.outer" && c.args.len() == 2 && c.keywords.is_empty() {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.outer(a, b, line);
        }
        if is_numpy && c.args.len() == 2 && c.keywords.is_empty() {
            if let Some(v) = self.binary_ufunc(r, &name, c, line)? {
                return Ok(v);
            }
        }
        if matches!(
            name.as_str(),
            "numpy.trace" | "numpy.diagonal" | "numpy.diag"
        ) && c.args.len() == 1
            && c.keywords.is_empty()
        {
            let v = self.expr(r, &c.args[0])?;
            let diag = self.diagonal(&name, v, line)?;
            if name == "numpy.trace" {
                return self.reduce(r, Reduce::Sum, diag, line);
            }
            return Ok(diag);
        }
        if name == "numpy.histogram" {
            return self.histogram(r, c, line);
        }
        if matches!(name.as_str(), "numpy.array" | "numpy.asarray") {
            if let Some(v) = self.literal_array(r, c, line)? {
                return Ok(v);
            }
        }
        // `np.asarray(x)` of an array is `x` itself (a view stays a view);
        // with `dtype=` it is `x.astype(dtype)` when the type differs.
        if matches!(
            name.as_str(),
            "numpy.asarray" | "numpy.asanyarray" | "numpy.ascontiguousarray"
        ) && c.args.len() == 1
            && c.keywords.iter().all(|k| k.arg.as_deref() == Some("dtype"))
        {
            if let Val::Array(av) = self.expr(r, &c.args[0])? {
                let to = match c.keywords.first() {
                    Some(k) => Some(self.dtype_value(r, &k.value).ok_or_else(|| {
                        Box::new(crate::error::Reason::new(
                            "frontend",
                            line,
                            format!(
                                "`{}`: a dtype port does not know",
                                self.src.text_of(&k.value)
                            ),
                        ))
                    })?),
                    None => None,
                };
                self.log.applied(
                    array_expr::NAME,
                    format!("`np.{short}` of an array is the array (line {line})"),
                );
                return Ok(Val::Array(match to {
                    Some(t) if t != av.elem => av.map(t, |e| cast_to(e, av.elem, t)),
                    _ => av,
                }));
            }
        }
        if matches!(name.as_str(), "numpy.convolve" | "numpy.correlate") {
            return self.convolve(r, &name, c, line);
        }
        if name == "numpy.cov" && c.args.len() == 1 {
            return self.cov(r, c, line);
        }
        if name == "numpy.vdot" && c.args.len() == 2 && c.keywords.is_empty() {
            // Both flattened, the first conjugated: a whole-array sum of
            // elementwise products (arrays of one shape).
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            // NumPy needs equal sizes; arrays of one rank are taken as one
            // shape (the kernels' extents come from the first).
            let same = match (&a, &b) {
                (Val::Array(x), Val::Array(y)) => x.ndim() == y.ndim(),
                _ => false,
            };
            if !same {
                return refuse(
                    array_expr::NAME,
                    line,
                    "`np.vdot` of values other than two arrays of one rank",
                );
            }
            let ca = math_calls::call("numpy.conj", &[a]).expect("np.conj of an array");
            let prod = self.binop(ast::Operator::Mult, &ca, &b, line)?;
            return self.reduce(r, Reduce::Sum, prod, line);
        }
        if name == "numpy.inner" && c.args.len() == 2 && c.keywords.is_empty() {
            // Over the last axes: `a @ b.T` for matrices, a dot for vectors.
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return match (&a, &b) {
                (Val::Array(_), Val::Array(y)) if y.ndim() == 2 => {
                    let bt = Val::Array(y.transpose());
                    self.dot(r, a, bt, line)
                }
                _ => self.dot(r, a, b, line),
            };
        }
        if name == "numpy.dot" && c.args.len() == 2 {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.dot(r, a, b, line);
        }
        if name == "len" && c.args.len() == 1 {
            return match self.expr(r, &c.args[0])? {
                Val::Array(av) => Ok(Val::scalar(av.shape[0].clone(), ScalarType::I64)),
                Val::Tuple(t) => Ok(Val::Scalar(i64(t.len() as i64), ScalarType::I64, true)),
                _ => refuse("frontend", line, "`len` of a scalar"),
            };
        }
        if r.kind == RegionKind::Host && is_numpy {
            if let Some(v) = self.rearrange_call(r, &name, c, line)? {
                return Ok(v);
            }
        }
        if r.kind == RegionKind::Host && is_numpy {
            if let Some(v) = self.creation_call(r, &name, c, line)? {
                return Ok(v);
            }
        }
        let built_from_python = c.args.first().is_some_and(|a| {
            let mut found = false;
            crate::pyast::walk_expr(a, &mut |e| {
                found |= matches!(
                    e,
                    ast::Expr::ListComp(_) | ast::Expr::GeneratorExp(_) | ast::Expr::Lambda(_)
                );
            });
            found
        });
        if built_from_python && matches!(name.as_str(), "numpy.array" | "numpy.asarray") {
            return refuse(
                "frontend",
                line,
                format!(
                    "`{}` builds an array element by element from a Python comprehension (or `map`): port takes array statements and loops over a preallocated array; write it as array operations (broadcasting, `.sum(axis=…)`) or as a loop that stores into `np.empty(…)`",
                    self.src.text_of(c)
                ),
            );
        }
        if crate::lower::hoist_alloc::is_allocation(&name) {
            let why = if r.kind == RegionKind::Host {
                "port takes this allocation only as the value of a statement of its own (`a = np.zeros(…)`) or as an array template; bind it to a name first"
            } else {
                "kernels cannot allocate; allocate it outside the loop"
            };
            return refuse(
                crate::lower::hoist_alloc::NAME,
                line,
                format!(
                    "`{}` allocates an array{}: {why}",
                    self.src.text_of(c),
                    if r.kind == RegionKind::Host {
                        ""
                    } else {
                        " inside per-thread work"
                    }
                ),
            );
        }

        // App functions.
        if let Some(callee) = self.app_function(&c.func) {
            if !c.keywords.is_empty() {
                return refuse(
                    crate::lower::app_calls::NAME,
                    line,
                    format!("`{}` is called with keyword arguments", callee),
                );
            }
            let mut args = Vec::new();
            for a in &c.args {
                args.push(self.expr(r, a)?);
            }
            return self.call_app(r, &callee, args, line);
        }

        if !c.keywords.is_empty() {
            return refuse(
                math_calls::NAME,
                line,
                format!("`{}`: keyword arguments to `{name}`", self.src.text_of(c)),
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(r, a)?);
        }
        if let Some(v) = math_calls::call(&name, &args) {
            // A ufunc of several arrays broadcasts them together.
            let vals: Vec<&Val> = args.iter().collect();
            self.assume_broadcast(r, &vals, line)?;
            if math_calls::math_fn(&name).is_some() {
                let mf = math_calls::math_fn(&name).map_or(short.as_str(), |f| f.name());
                let complex = args.iter().any(|a| match a {
                    Val::Scalar(_, t, _) => t.is_complex(),
                    Val::Array(av) => av.elem.is_complex(),
                    Val::Tuple(_) => false,
                });
                let module = if complex { "cmath" } else { "math" };
                let note = if is_numpy {
                    format!("`np.{short}` → `{module}.{mf}` (line {line})")
                } else {
                    format!("`{name}` on the device (line {line})")
                };
                self.log.applied(math_calls::NAME, note);
            }
            if is_numpy && args.iter().any(|a| matches!(a, Val::Array(_))) {
                self.log.applied(
                    array_expr::NAME,
                    format!("ufunc `np.{short}` element by element (line {line})"),
                );
            }
            return Ok(v);
        }
        let shown = if name.is_empty() {
            self.src.text_of(c.func.as_ref()).to_string()
        } else {
            name.replace("numpy.", "np.")
        };
        refuse(
            math_calls::NAME,
            line,
            format!("calls `{shown}`, which port cannot turn into kernel code"),
        )
    }

    fn array_method(
        &mut self,
        r: &mut Region,
        av: &ArrVal,
        method: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        if let Some(op) = reduce_name(&format!("numpy.{method}")) {
            if c.args.is_empty() && c.keywords.is_empty() {
                return self.reduce(r, op, Val::Array(av.clone()), line);
            }
        }
        if let Some(op) = crate::lower::scan::scan_op(method) {
            return self.scan_call(r, op, Val::Array(av.clone()), c, 0, line);
        }
        if let Some(op) = crate::lower::axis_reduction::AxisOp::from_name(method) {
            let args = self.reduction_args(c, 0, av.ndim(), op, line)?;
            let hint = match c.func.as_ref() {
                ast::Expr::Attribute(a) => pyast::subscript_base(&a.value),
                _ => None,
            }
            .unwrap_or_else(|| "r".into());
            return self.reduce_with(r, op, Val::Array(av.clone()), args, &hint, line);
        }
        match method {
            "copy" if c.args.is_empty() => {
                let mut v = av.clone();
                v.computed = true;
                Ok(Val::Array(v))
            }
            "astype" if c.args.len() == 1 => {
                let t = self.dtype_value(r, &c.args[0]).ok_or_else(|| {
                    Box::new(crate::error::Reason::new(
                        array_expr::NAME,
                        line,
                        format!(
                            "`.astype({})`: unsupported dtype",
                            self.src.text_of(&c.args[0])
                        ),
                    ))
                })?;
                Ok(Val::Array(av.map(t, |e| cast_to(e, av.elem, t))))
            }
            "dot" if c.args.len() == 1 => {
                let b = self.expr(r, &c.args[0])?;
                self.dot(r, Val::Array(av.clone()), b, line)
            }
            "diagonal" | "trace" if c.args.is_empty() && c.keywords.is_empty() => {
                let diag = self.diagonal("numpy.diagonal", Val::Array(av.clone()), line)?;
                if method == "trace" {
                    return self.reduce(r, Reduce::Sum, diag, line);
                }
                Ok(diag)
            }
            "conj" | "conjugate" if c.args.is_empty() && c.keywords.is_empty() => {
                Ok(math_calls::call("numpy.conj", &[Val::Array(av.clone())])
                    .expect("np.conj of an array"))
            }
            "transpose" if c.args.is_empty() && c.keywords.is_empty() => {
                Ok(Val::Array(av.transpose()))
            }
            "round" if c.args.len() <= 1 && c.keywords.is_empty() => {
                let mut args = vec![Val::Array(av.clone())];
                for a in &c.args {
                    args.push(self.expr(r, a)?);
                }
                math_calls::call("numpy.round", &args).map_or_else(
                    || {
                        refuse(
                            math_calls::NAME,
                            line,
                            "`.round(decimals)` takes an integer literal of decimals (a non-negative one for integers)",
                        )
                    },
                    Ok,
                )
            }
            "reshape" | "ravel" | "flatten" | "swapaxes" | "transpose" => {
                self.shape_method(r, av, method, &c.args, c, line)
            }
            _ => refuse(
                array_expr::NAME,
                line,
                format!("array method `.{method}()` is not supported in kernels"),
            ),
        }
    }

    /// The main diagonal of a matrix as a 1-D view (`np.diagonal`,
    /// `np.diag` of a matrix, what `np.trace` sums); `np.diag` of a vector
    /// is the square matrix with it on the diagonal.
    fn diagonal(&mut self, name: &str, v: Val, line: u32) -> Lower<Val> {
        let Val::Array(a) = v else {
            return refuse(array_expr::NAME, line, format!("`{name}` of a scalar"));
        };
        match a.ndim() {
            2 => {
                let n = binary(BinOp::Min, a.shape[0].clone(), a.shape[1].clone());
                let k = var(&array_expr::ph(0));
                Ok(Val::Array(a.reindexed(vec![n], &[k.clone(), k])))
            }
            1 if name == "numpy.diag" => {
                let n = a.shape[0].clone();
                let (i, j) = (var(&array_expr::ph(0)), var(&array_expr::ph(1)));
                let on = a.reindexed(vec![n.clone(), n.clone()], std::slice::from_ref(&i));
                let zero = lit(a.elem, 0.0);
                let body = select(cmp(CmpOp::Eq, i, j), on.body.clone(), zero);
                Ok(Val::Array(ArrVal {
                    shape: vec![n.clone(), n],
                    elem: a.elem,
                    body,
                    computed: true,
                }))
            }
            _ => refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{name}` of a {}-D array (port takes the diagonal of a matrix)",
                    a.ndim()
                ),
            ),
        }
    }

    /// `np.cov(m)`: rows are variables, columns observations (`rowvar=False`
    /// swaps them); `(X - mean) @ (X - mean).conj().T / (n - 1)`, or `n`
    /// with `bias=True`, or `n - ddof`.
    fn cov(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let mut rowvar = true;
        let mut ddof: Option<i64> = None;
        let mut bias = false;
        for k in &c.keywords {
            let v = self.src.eval_const(&k.value);
            match (k.arg.as_ref().map(|a| a.as_str()), v) {
                (Some("rowvar"), Some(Const::Bool(b))) => rowvar = b,
                (Some("bias"), Some(Const::Bool(b))) => bias = b,
                (Some("ddof"), Some(Const::Int(d))) => ddof = Some(d),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`{}`: np.cov takes constant `rowvar=`, `bias=` and `ddof=` here (no `y`, weights or dtype)",
                            self.src.text_of(c)
                        ),
                    )
                }
            }
        }
        let m = self.expr(r, &c.args[0])?;
        let Val::Array(mut x) = m else {
            return refuse(array_expr::NAME, line, "`np.cov` of a scalar");
        };
        if x.ndim() != 2 {
            return refuse(
                array_expr::NAME,
                line,
                "`np.cov` of an array other than 2-D (of one variable it is `np.var(x, ddof=1)`)",
            );
        }
        if !rowvar {
            x = x.transpose();
        }
        if !x.elem.is_float() && !x.elem.is_complex() {
            let t = ScalarType::F64;
            x = x.map(t, |e| cast_to(e, x.elem, t));
        }
        let n = x.shape[1].clone();
        let args = crate::lower::axis_reduction::RedArgs {
            axes: Some(vec![1]),
            keepdims: true,
            ddof: 0,
        };
        let mean = self.reduce_with(
            r,
            crate::lower::axis_reduction::AxisOp::Plain(Reduce::Mean),
            Val::Array(x.clone()),
            args,
            "cov",
            line,
        )?;
        let centred = self.binop(ast::Operator::Sub, &Val::Array(x), &mean, line)?;
        let Val::Array(xc) = centred.clone() else {
            unreachable!("an array minus its mean is an array")
        };
        let xh = math_calls::call("numpy.conj", &[Val::Array(xc.transpose())])
            .expect("np.conj of an array");
        let prod = self.matmul(r, centred, xh, line)?;
        let dd = ddof.unwrap_or(if bias { 0 } else { 1 });
        let denom = sub(n, i64(dd));
        self.binop(
            ast::Operator::Div,
            &prod,
            &Val::scalar(denom, ScalarType::I64),
            line,
        )
    }

    fn dot(&mut self, r: &mut Region, a: Val, b: Val, line: u32) -> Lower<Val> {
        match (&a, &b) {
            (Val::Array(x), Val::Array(y)) if x.ndim() == 1 && y.ndim() == 1 => {
                let prod = self.binop(ast::Operator::Mult, &a, &b, line)?;
                self.reduce(r, Reduce::Sum, prod, line)
            }
            (Val::Array(x), Val::Array(y)) if x.ndim() <= 2 && y.ndim() <= 2 => {
                self.matmul(r, a, b, line)
            }
            (Val::Scalar(..), _) | (_, Val::Scalar(..)) => {
                self.binop(ast::Operator::Mult, &a, &b, line)
            }
            _ => refuse(
                array_expr::NAME,
                line,
                "np.dot of arrays other than two vectors: write the loops",
            ),
        }
    }

    /// A reduction of an array value to a scalar: a thread-private loop in a
    /// kernel ([`crate::lower::row_reduction`]), a reduction kernel at the
    /// top level ([`crate::lower::whole_reduction`]).
    fn lift_reduce(&mut self, r: &mut Region, op: Reduce, v: Val, line: u32) -> Lower<Val> {
        let av = match v {
            Val::Array(av) => av,
            Val::Scalar(e, t, w) => {
                // np.sum of a scalar is the scalar.
                return Ok(match op {
                    Reduce::Mean => Val::scalar(cast_to(e, t, ScalarType::F64), ScalarType::F64),
                    _ => Val::Scalar(e, t, w),
                });
            }
            Val::Tuple(_) => return refuse("frontend", line, "a reduction over a tuple"),
        };
        if av.elem.is_complex() && matches!(op, Reduce::Max | Reduce::Min) {
            return refuse(
                "frontend",
                line,
                "max/min of complex numbers (NumPy orders them lexicographically): reduce `abs(z)` or `z.real`",
            );
        }
        if r.kind == RegionKind::Host {
            self.whole_reduction(op, &av, line)
        } else {
            self.row_reduction(r, op, &av, line)
        }
    }

    // ---------------------------------------------------------------
    // Statements inside kernels and device functions
    // ---------------------------------------------------------------

    fn lift_block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<()> {
        for s in body {
            self.stmt(r, s)?;
        }
        Ok(())
    }

    /// Declares or assigns the scalar local `name`.
    pub fn set_scalar(
        &mut self,
        r: &mut Region,
        name: &str,
        value: Expr,
        vt: ScalarType,
        at: TextSize,
    ) {
        if let Some((_, ty)) = r.reductions.get(name).copied() {
            let ir = sanitize(name);
            r.push(assign(&ir, cast_to(value, vt, ty)));
            let key = format!("{}{name}", r.scope);
            self.declare_type(&key, vt);
            return;
        }
        let key = format!("{}{name}", r.scope);
        if let Some(Local::Scalar { ir, ty }) = r.locals.get(name).cloned() {
            self.declare_type(&key, vt);
            r.push(assign(&ir, cast_to(value, vt, ty)));
            return;
        }
        let ty = self.declare_type(&key, vt);
        let ir = if r.inlining {
            self.local_temp(r, name)
        } else {
            let s = sanitize(name);
            self.used.insert(s.clone());
            s
        };
        r.locals
            .insert(name.to_string(), Local::Scalar { ir: ir.clone(), ty });
        // Declare in the innermost block that holds every use of the name.
        let occ = r.occurrences.get(name).cloned().unwrap_or_default();
        let top = r.blocks.len() - 1;
        let mut k = top;
        if !r.inlining {
            while k > 0 {
                let (lo, hi) = r.blocks[k].1;
                if occ.iter().all(|&o| o >= lo && o < hi) && at >= lo && at < hi {
                    break;
                }
                k -= 1;
            }
        }
        r.declare_in(k, &ir);
        if k == top {
            r.push(let_(&ir, ty, cast_to(value, vt, ty)));
        } else {
            r.blocks[k].0.push(let_(&ir, ty, lit(ty, 0.0)));
            r.push(assign(&ir, cast_to(value, vt, ty)));
        }
    }

    fn bind_local(
        &mut self,
        r: &mut Region,
        name: &str,
        v: Val,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        match v {
            Val::Scalar(e, t, _) => {
                self.set_scalar(r, name, e, t, at);
                Ok(())
            }
            Val::Array(val) => {
                if matches!(r.locals.get(name), Some(Local::Scalar { .. })) {
                    return refuse(
                        "frontend",
                        line,
                        format!("`{name}` holds a number and then an array"),
                    );
                }
                let snapshot = if val.computed {
                    val.reads()
                        .into_iter()
                        .map(|a| {
                            let c = r.writes.get(&a).copied().unwrap_or(0);
                            (a, c)
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                r.locals
                    .insert(name.to_string(), Local::Array { val, snapshot });
                Ok(())
            }
            Val::Tuple(_) => refuse(
                "frontend",
                line,
                format!("`{name}` holds a tuple: unpack it (`a, b = …`)"),
            ),
        }
    }

    fn stmt(&mut self, r: &mut Region, s: &ast::Stmt) -> Lower<()> {
        let line = self.src.line(s);
        match s {
            ast::Stmt::Pass(_) => Ok(()),
            ast::Stmt::Expr(_) if pyast::is_docstring(s) => Ok(()),
            ast::Stmt::Assert(_) => Ok(()),
            ast::Stmt::Assign(a) => {
                if a.targets.len() != 1 {
                    return refuse("frontend", line, "chained assignment `a = b = …`");
                }
                self.assign_to(r, &a.targets[0], &a.value, s.start(), line)
            }
            ast::Stmt::AnnAssign(a) => match &a.value {
                Some(v) => self.assign_to(r, &a.target, v, s.start(), line),
                None => Ok(()),
            },
            ast::Stmt::AugAssign(a) => self.aug_assign(r, a, s.start(), line),
            ast::Stmt::For(f) => self.serial_for(r, f, line),
            ast::Stmt::While(w) => {
                if !w.orelse.is_empty() {
                    return refuse("frontend", line, "`while … else`");
                }
                let (c, t) = self.scalar(r, &w.test)?;
                let cond = math_calls::truthy(c, t);
                self.bump_loop_writes(r, &w.body);
                r.open(&w.body);
                self.block(r, &w.body)?;
                let body = r.close();
                r.push(while_(cond, body));
                Ok(())
            }
            ast::Stmt::If(i) => {
                let (c, t) = self.scalar(r, &i.test)?;
                let cond = math_calls::truthy(c, t);
                r.open(&i.body);
                self.block(r, &i.body)?;
                let then_body = r.close();
                r.open(&i.orelse);
                self.block(r, &i.orelse)?;
                let else_body = r.close();
                r.push(if_(cond, then_body, else_body));
                Ok(())
            }
            ast::Stmt::Break(_) => {
                r.push(Stmt::Break);
                Ok(())
            }
            ast::Stmt::Continue(_) => {
                r.push(Stmt::Continue);
                Ok(())
            }
            ast::Stmt::Return(ret) => {
                if r.kind != RegionKind::Device {
                    return refuse(
                        crate::lower::grid_stride::NAME,
                        line,
                        "`return` inside the parallel loop: each iteration runs on its own thread",
                    );
                }
                match &ret.value {
                    None => {
                        r.push(Stmt::Return(None));
                        Ok(())
                    }
                    Some(v) => {
                        let (e, t) = self.scalar(r, v)?;
                        r.returns.push(t);
                        let rt = r.ret_ty.unwrap_or(t);
                        r.push(Stmt::Return(Some(cast_to(e, t, rt))));
                        Ok(())
                    }
                }
            }
            ast::Stmt::Expr(e) => {
                if let ast::Expr::Call(c) = e.value.as_ref() {
                    if let ast::Expr::Attribute(a) = c.func.as_ref() {
                        if a.attr.as_str() == "fill" && c.args.len() == 1 {
                            let target = self.expr(r, &a.value)?;
                            let v = self.expr(r, &c.args[0])?;
                            return self.store_val(r, target, v, line);
                        }
                    }
                    if let Some(callee) = self.app_function(&c.func) {
                        let mut args = Vec::new();
                        for a in &c.args {
                            args.push(self.expr(r, a)?);
                        }
                        return self.call_app_stmt(r, &callee, args, line);
                    }
                }
                refuse(
                    "frontend",
                    line,
                    format!(
                        "`{}`: a statement with no kernel equivalent",
                        self.src.text_of(e)
                    ),
                )
            }
            other => refuse(
                "frontend",
                line,
                format!("{} has no kernel equivalent", stmt_name(other)),
            ),
        }
    }

    /// Arrays stored to inside a loop change on every iteration: array
    /// locals computed from them before the loop go stale inside it.
    fn bump_loop_writes(&mut self, r: &mut Region, body: &[ast::Stmt]) {
        pyast::walk_stmts(body, &mut |s| {
            let targets: Vec<&ast::Expr> = match s {
                ast::Stmt::Assign(a) => a.targets.iter().collect(),
                ast::Stmt::AugAssign(a) => vec![&a.target],
                _ => vec![],
            };
            for t in targets {
                if let ast::Expr::Subscript(sub) = t {
                    if let Some(b) = pyast::subscript_base(&sub.value) {
                        r.bump_write(&b);
                        if let Some(Local::Array { val, .. }) = r.locals.get(&b) {
                            if let Some(t) = val.view_target() {
                                let a = t.array.clone();
                                r.bump_write(&a);
                            }
                        }
                    }
                }
            }
        });
    }

    fn assign_to(
        &mut self,
        r: &mut Region,
        target: &ast::Expr,
        value: &ast::Expr,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        match target {
            ast::Expr::Name(n) => {
                if self.bind_selection(r, n.id.as_str(), value)? {
                    return Ok(());
                }
                let v = self.expr(r, value)?;
                self.bind_local(r, n.id.as_str(), v, at, line)
            }
            ast::Expr::Tuple(t) => {
                let v = self.expr(r, value)?;
                let Val::Tuple(items) = v else {
                    return refuse("frontend", line, "unpacking a value that is not a tuple");
                };
                if items.len() != t.elts.len() {
                    return refuse(
                        "frontend",
                        line,
                        format!(
                            "unpacking {} values into {} names",
                            items.len(),
                            t.elts.len()
                        ),
                    );
                }
                // Evaluate every value before assigning any name (`a, b = b, a`).
                let mut temps = Vec::new();
                for item in items {
                    temps.push(match item {
                        Val::Scalar(e, ty, _) if !is_simple(&e) => {
                            let tmp = self.local_temp(r, "tmp");
                            r.push(let_(&tmp, ty, e));
                            Val::scalar(var(&tmp), ty)
                        }
                        other => other,
                    });
                }
                for (tgt, item) in t.elts.iter().zip(temps) {
                    match tgt {
                        ast::Expr::Name(n) => self.bind_local(r, n.id.as_str(), item, at, line)?,
                        _ => {
                            let tv = self.expr(r, tgt)?;
                            self.store_val(r, tv, item, line)?;
                        }
                    }
                }
                Ok(())
            }
            ast::Expr::Subscript(_) => {
                let v = self.expr(r, value)?;
                let t = self.expr(r, target)?;
                self.store_val(r, t, v, line)
            }
            _ => refuse(
                "frontend",
                line,
                format!("assignment to `{}`", self.src.text_of(target)),
            ),
        }
    }

    /// Stores `v` into the element or view `target` (inside a kernel).
    pub fn store_val(&mut self, r: &mut Region, target: Val, v: Val, line: u32) -> Lower<()> {
        match target {
            Val::Scalar(Expr::Load(er), et, _) => {
                let Val::Scalar(e, t, _) = v else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "an array stored into a single element",
                    );
                };
                self.note_write(r, &er.array);
                r.push(Stmt::Store {
                    target: er,
                    value: cast_to(e, t, et),
                });
                Ok(())
            }
            Val::Array(tv) => {
                let Some(er) = tv.view_target().cloned() else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "assignment into a computed array (not a view of an argument or allocated array)",
                    );
                };
                let n = tv.ndim();
                let mut seen: Vec<&Expr> = vec![&tv.body];
                seen.extend(tv.shape.iter());
                match &v {
                    Val::Scalar(e, _, _) => seen.push(e),
                    Val::Array(va) => seen.push(&va.body),
                    Val::Tuple(_) => {}
                }
                let vars = self.loop_vars(r, 1, n, &seen);
                let tgt = ElemRef {
                    array: er.array.clone(),
                    indices: er
                        .indices
                        .iter()
                        .map(|i| array_expr::tidy(&array_expr::at_vars(i, &vars)))
                        .collect(),
                };
                self.assume_fits(Some(&*r), &tv, &v, line)?;
                let value = match &v {
                    Val::Scalar(e, t, _) => cast_to(e.clone(), *t, tv.elem),
                    Val::Array(va) => {
                        if va.ndim() > n {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "a value with more dimensions than the slice it is stored into",
                            );
                        }
                        let body = va.body_in(n);
                        cast_to(array_expr::at_vars(&body, &vars), va.elem, tv.elem)
                    }
                    Val::Tuple(_) => {
                        return refuse("frontend", line, "a tuple stored into an array")
                    }
                };
                let value = array_expr::tidy(&value);
                // `d[:, k] = d[:, k] - d[:, k - 1] * a`: the read is a
                // constant apart from the write in a dimension the element
                // loops do not move, so they never read what they wrote.
                if !array_expr::reads_only_unwritten(&tgt, &value, &vars, &tv.shape)
                    && !array_expr::reads_fixed_apart(&tgt, &value, &vars)
                {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "the right-hand side reads `{}` at other elements than those written: NumPy evaluates it first, element loops would read overwritten values",
                            tgt.array
                        ),
                    );
                }
                self.note_write(r, &er.array);
                let store = Stmt::Store { target: tgt, value };
                let loops = array_expr::element_loops(&vars, &tv.shape, vec![store]);
                for s in loops {
                    r.push(s);
                }
                self.log.applied(
                    array_expr::NAME,
                    format!("slice assignment as element loop (line {line})"),
                );
                Ok(())
            }
            _ => refuse(
                "frontend",
                line,
                "assignment target is not an array element or slice",
            ),
        }
    }

    pub fn note_write(&mut self, r: &mut Region, array: &str) {
        r.bump_write(array);
        self.written.insert(array.to_string());
        if self.params.iter().any(|(p, _)| p == array) {
            self.mutated.insert(array.to_string());
        }
    }

    fn aug_assign(
        &mut self,
        r: &mut Region,
        a: &ast::StmtAugAssign,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        let cur = self.expr(r, &a.target)?;
        let rhs = self.expr(r, &a.value)?;
        if r.atomic_stores.contains(&at) {
            let Val::Scalar(Expr::Load(er), et, _) = cur else {
                return refuse(crate::dependences::NAME, line, "atomic update of a slice");
            };
            let Val::Scalar(e, t, _) = rhs else {
                return refuse(
                    crate::dependences::NAME,
                    line,
                    "atomic update with an array",
                );
            };
            if et == ScalarType::Bool || et.is_complex() {
                return refuse(
                    crate::dependences::NAME,
                    line,
                    format!(
                        "atomic update of a {} array (numba-cuda has no atomic for it)",
                        crate::types::numba_scalar(et)
                    ),
                );
            }
            let mut v = cast_to(e, t, et);
            if matches!(a.op, ast::Operator::Sub) {
                v = Expr::Unary(UnaryOp::Neg, Box::new(v));
            }
            self.note_write(r, &er.array);
            r.push(Stmt::Eval(Expr::Atomic(AtomicOp::Add, er, Box::new(v))));
            self.log.applied(
                crate::dependences::NAME,
                format!(
                    "shared accumulation `{}` as an atomic add (line {line})",
                    self.src.text_of(a.target.as_ref())
                ),
            );
            return Ok(());
        }
        self.assume_broadcast(r, &[&cur, &rhs], line)?;
        let new = self.binop(a.op, &cur, &rhs, line)?;
        match a.target.as_ref() {
            ast::Expr::Name(n) => match new {
                Val::Scalar(e, t, _) => {
                    self.set_scalar(r, n.id.as_str(), e, t, at);
                    Ok(())
                }
                Val::Array(_) => {
                    // In-place on a named array value: store through its view.
                    self.store_val(r, cur, new, line)
                }
                Val::Tuple(_) => refuse("frontend", line, "augmented assignment of a tuple"),
            },
            _ => self.store_val(r, cur, new, line),
        }
    }

    fn serial_for(&mut self, r: &mut Region, f: &ast::StmtFor, line: u32) -> Lower<()> {
        if !f.orelse.is_empty() {
            return refuse("frontend", line, "`for … else`");
        }
        let ast::Expr::Name(tv) = f.target.as_ref() else {
            return refuse(
                "frontend",
                line,
                "a `for` loop must bind one name (`for j in range(n)`)",
            );
        };
        let (start, stop, step) = self.range_args(r, &f.iter, line)?;
        let pyname = tv.id.to_string();
        if r.locals.contains_key(&pyname) {
            return refuse(
                "frontend",
                line,
                format!("`{pyname}` is used before this loop and as its loop variable"),
            );
        }
        let own = sanitize(&pyname);
        let ir = if r.visible(&own) || self.host.contains_key(&own) {
            self.local_temp(r, &pyname)
        } else {
            own
        };
        self.bump_loop_writes(r, &f.body);
        r.locals.insert(
            pyname.clone(),
            Local::Scalar {
                ir: ir.clone(),
                ty: ScalarType::I64,
            },
        );
        r.open(&f.body);
        r.declare_here(&ir);
        let res = self.block(r, &f.body);
        let body = r.close();
        r.locals.remove(&pyname);
        res?;
        r.push(for_range(&ir, start, stop, step, body));
        Ok(())
    }
}

fn reduce_name(name: &str) -> Option<Reduce> {
    Some(match name {
        "numpy.sum" | "sum" | "numpy.nansum" => Reduce::Sum,
        "numpy.mean" | "numpy.average" => Reduce::Mean,
        "numpy.max" | "numpy.amax" => Reduce::Max,
        "numpy.min" | "numpy.amin" => Reduce::Min,
        "numpy.prod" => Reduce::Prod,
        _ => return None,
    })
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

fn pow(
    x: Expr,
    tx: ScalarType,
    wx: bool,
    y: Expr,
    ty: ScalarType,
    wy: bool,
    failed: &mut Option<&'static str>,
) -> (Expr, ScalarType) {
    let t = promote(tx, wx, ty, wy);
    let t = if t == ScalarType::Bool {
        ScalarType::I64
    } else {
        t
    };
    // Small integer powers: repeated products (exact, like Python).
    if let Expr::Lit(Literal::I64(k)) = y {
        if (1..=4).contains(&k) {
            let b = cast_to(x, tx, t);
            let mut acc = b.clone();
            for _ in 1..k {
                acc = mul(acc, b.clone());
            }
            return (acc, t);
        }
        if k == 0 {
            return (lit(t, 1.0), t);
        }
    }
    if let Expr::Lit(Literal::F64(v)) = y {
        if v == 2.0 {
            let ft = if t.is_float() || t.is_complex() {
                t
            } else {
                ScalarType::F64
            };
            let b = cast_to(x, tx, ft);
            return (mul(b.clone(), b), ft);
        }
    }
    if t.is_int() {
        *failed = Some("an integer power with a variable or negative exponent");
        return (x, t);
    }
    (
        math(
            port_codegen::ir::MathFn::Pow,
            vec![cast_to(x, tx, t), cast_to(y, ty, t)],
        ),
        t,
    )
}

fn has_load(e: &Expr) -> bool {
    let mut found = false;
    port_codegen::ir::walk_expr(e, &mut |x| found |= matches!(x, Expr::Load(_)));
    found
}

fn is_simple(e: &Expr) -> bool {
    matches!(e, Expr::Var(_) | Expr::Lit(_))
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

impl Lowerer<'_> {
    /// NumPy's binary ufuncs called by name: `np.add(a, b)` is `a + b`
    /// (the operators' promotion and broadcasting), and `np.f.outer(a,
    /// b)` applies `f` to every pair, `a` given as many trailing axes of
    /// extent 1 as `b` has dimensions. `None` when `name` is no such call.
    fn binary_ufunc(
        &mut self,
        r: &mut Region,
        name: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<Val>> {
        let (ufunc, outer) = match name.strip_suffix(".outer") {
            Some(u) => (u, true),
            None => (name, false),
        };
        let short = ufunc.strip_prefix("numpy.").unwrap_or(ufunc);
        let op = arithmetic_ufunc(short);
        if op.is_none() && !outer {
            return Ok(None);
        }
        let a = self.expr(r, &c.args[0])?;
        let b = self.expr(r, &c.args[1])?;
        let (a, b) = match (outer, &a, &b) {
            (true, Val::Array(x), Val::Array(y)) => {
                let mut shape = x.shape.clone();
                shape.extend(std::iter::repeat_n(i64(1), y.ndim()));
                let idx: Vec<Expr> = (0..x.ndim()).map(|k| var(&array_expr::ph(k))).collect();
                (Val::Array(x.reindexed(shape, &idx)), b)
            }
            _ => (a, b),
        };
        self.assume_broadcast(r, &[&a, &b], line)?;
        let what = if outer {
            format!("`np.{short}.outer` as a broadcast pair of operands (line {line})")
        } else {
            format!("ufunc `np.{short}` element by element (line {line})")
        };
        let v = match op {
            Some(op) => self.binop(op, &a, &b, line)?,
            None => match math_calls::call(ufunc, &[a, b]) {
                Some(v) => v,
                None => {
                    return refuse(
                        math_calls::NAME,
                        line,
                        format!(
                            "`np.{short}.outer`: `np.{short}` is not a binary ufunc port computes"
                        ),
                    )
                }
            },
        };
        self.log.applied(array_expr::NAME, what);
        Ok(Some(v))
    }
}

/// The elementwise NumPy functions whose `out=` port writes.
fn takes_out(short: &str) -> bool {
    arithmetic_ufunc(short).is_some()
        || math_calls::math_fn(&format!("numpy.{short}")).is_some()
        || matches!(
            short,
            "maximum"
                | "minimum"
                | "negative"
                | "positive"
                | "square"
                | "absolute"
                | "abs"
                | "sign"
                | "clip"
                | "reciprocal"
                | "invert"
                | "logical_and"
                | "logical_or"
                | "logical_xor"
                | "logical_not"
        )
}

impl Lowerer<'_> {
    /// `np.f(…, out=o)`: `o[...] = np.f(…)` (NumPy computes the whole
    /// result, then writes it), and the call's value is `o`.
    fn ufunc_into_out(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        short: &str,
        line: u32,
    ) -> Lower<Val> {
        if r.kind != RegionKind::Host {
            return refuse(
                array_expr::NAME,
                line,
                format!("`np.{short}(…, out=…)` inside a loop's kernel: assign the result to a slice instead"),
            );
        }
        let mut plain = c.clone();
        let out = plain.keywords.remove(0).value;
        let v = self.call(r, &plain, line)?;
        let Val::Array(target) = self.expr(r, &out)? else {
            return refuse(
                array_expr::NAME,
                line,
                format!("`out=` of `np.{short}` is not an array"),
            );
        };
        let hint = pyast::subscript_base(&out).unwrap_or_default();
        self.store_kernel(&target, &v, &hint, line)?;
        self.log.applied(
            array_expr::NAME,
            format!("`np.{short}(…, out=…)` as a store into `out` (line {line})"),
        );
        Ok(Val::Array(target))
    }
}

/// The operator of a NumPy arithmetic or bitwise ufunc.
fn arithmetic_ufunc(short: &str) -> Option<ast::Operator> {
    use ast::Operator as O;
    Some(match short {
        "add" => O::Add,
        "subtract" => O::Sub,
        "multiply" => O::Mult,
        "divide" | "true_divide" => O::Div,
        "floor_divide" => O::FloorDiv,
        "mod" | "remainder" => O::Mod,
        "bitwise_and" => O::BitAnd,
        "bitwise_or" => O::BitOr,
        "bitwise_xor" => O::BitXor,
        "left_shift" => O::LShift,
        "right_shift" => O::RShift,
        _ => return None,
    })
}
