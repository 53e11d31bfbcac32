//! **masked**: a boolean-mask selection `x[m]` that is only reduced
//! (`x[m].mean()`, `np.sum(x[x > 0])`, `v = x[m]` then `v.max()`,
//! `len(v)`). NumPy compacts the selected elements into a new array of
//! data-dependent length; a reduction of it is the same reduction of the
//! whole array with the unselected elements replaced by the operation's
//! identity (`0` for a sum, `-inf` for a max) and, for a mean, divided by
//! the count of the mask. No compaction, no data-dependent allocation: the
//! reduction runs as a whole-array reduction on the host schedule, or as a
//! per-thread loop inside a kernel. A mask of fewer dimensions than the
//! array selects whole rows (`X[labels == k]`, shape `(count, D)`): its
//! reductions are the same with the mask broadcast along the trailing
//! dimensions, and one along `axis=0` (the selected rows: `np.sum(X[m],
//! axis=0)`, `X[m].mean(axis=0)`) is an axis reduction of the filled array
//! over the mask's dimensions. Any other use of the selection is refused,
//! naming it.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, MathFn, ScalarType, UnaryOp};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, select};
use crate::lower::axis_reduction::{AxisOp, RedArgs};
use crate::lower::context::{Lowerer, Recurse, Reduce, Region, Selection};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::numpy::math_calls::truthy;

pub const NAME: &str = "masked";

/// What a reduction of a selection computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    Any,
    All,
    /// Rows selected (`len`): elements, where the mask has the array's
    /// dimensions.
    Count,
    /// Elements selected (`.size`, `np.size`).
    Size,
    /// The variance and the standard deviation, with `ddof`.
    Var(i64),
    Std(i64),
}

fn op_of(name: &str) -> Option<Op> {
    let short = name.rsplit('.').next().unwrap_or(name);
    Some(match short {
        "sum" => Op::Sum,
        "mean" | "average" => Op::Mean,
        "max" | "amax" => Op::Max,
        "min" | "amin" => Op::Min,
        "prod" => Op::Prod,
        "any" => Op::Any,
        "all" => Op::All,
        "len" => Op::Count,
        "size" => Op::Size,
        "var" => Op::Var(0),
        "std" => Op::Std(0),
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// `x[m]` (or a name bound to one) as a selection; `None` when `e` is
    /// not a boolean-mask subscript.
    pub(crate) fn selection(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<Option<Selection>> {
        match e {
            ast::Expr::Name(n) => Ok(self.masked.get(n.id.as_str()).cloned()),
            ast::Expr::Subscript(s) if may_be_mask(&s.slice) => {
                let line = self.src.line(e);
                let Val::Array(mask) = self.expr(r, &s.slice)? else {
                    return Ok(None);
                };
                if mask.elem != ScalarType::Bool {
                    return Ok(None);
                }
                let Val::Array(values) = self.expr(r, &s.value)? else {
                    return Ok(None);
                };
                if mask.ndim() == 0 || mask.ndim() > values.ndim() {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: a boolean mask of {} dimension(s) selecting from an array of {} (NumPy raises)",
                            self.src.text_of(e),
                            mask.ndim(),
                            values.ndim()
                        ),
                    );
                }
                // NumPy raises IndexError unless the mask's extents are the
                // leading ones of the array.
                let pairs = (0..mask.ndim())
                    .map(|d| (mask.shape[d].clone(), values.shape[d].clone()))
                    .collect();
                self.assume_equal(Some(r), pairs, line, crate::numpy::extents::MASK)?;
                Ok(Some(Selection { values, mask, line }))
            }
            _ => self.elementwise_selection(r, e),
        }
    }

    /// [`Lowerer::reduction_args`] of a reduction of a selection, which
    /// takes no `dtype=`.
    fn selection_reduction_args(
        &mut self,
        c: &ast::ExprCall,
        skip: usize,
        nd: usize,
        op: AxisOp,
        line: u32,
    ) -> Lower<RedArgs> {
        let args = self.reduction_args(c, skip, nd, op, line)?;
        if args.dtype.is_some() {
            return refuse(
                NAME,
                line,
                "`dtype=` of a reduction of a selection through a mask",
            );
        }
        Ok(args)
    }

    /// An elementwise expression of selections through one mask and of
    /// numbers (`(1.0 / r) ** 6`, `np.exp(-v) * k`) as the selection of
    /// the expression of the whole arrays: `f(x[m])` is `f(x)[m]` for an
    /// elementwise `f`, so what is reduced is the same. `None` when `e`
    /// reads no selection, or is not elementwise in them.
    fn elementwise_selection(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<Option<Selection>> {
        if r.kind != crate::lower::context::RegionKind::Host {
            return Ok(None);
        }
        // The selections `e` reads, and whether it is built only of
        // operators, NumPy's and math's functions, names and constants.
        let mut names: Vec<String> = Vec::new();
        let mut plain = true;
        crate::pyast::walk_expr(e, &mut |x| match x {
            ast::Expr::Name(n) if self.masked.contains_key(n.id.as_str()) => {
                if !names.iter().any(|k| k == n.id.as_str()) {
                    names.push(n.id.to_string());
                }
            }
            ast::Expr::BinOp(_)
            | ast::Expr::UnaryOp(_)
            | ast::Expr::Compare(_)
            | ast::Expr::Constant(_)
            | ast::Expr::Name(_) => {}
            ast::Expr::Call(c) => {
                let elementwise = self.src.resolve(&c.func).is_some_and(|f| {
                    (f.starts_with("numpy.") || f.starts_with("math."))
                        && crate::numpy::math_calls::is_elementwise(&f)
                });
                plain &= elementwise && c.keywords.is_empty();
            }
            // `np.pi`: a constant; the function of a call, checked above.
            ast::Expr::Attribute(_) => {}
            _ => plain = false,
        });
        if names.is_empty() || !plain || matches!(e, ast::Expr::Name(_)) {
            return Ok(None);
        }
        let sels: Vec<Selection> = names.iter().map(|n| self.masked[n].clone()).collect();
        let first = &sels[0];
        if sels
            .iter()
            .any(|s| s.mask != first.mask || s.values.shape != first.values.shape)
        {
            return Ok(None);
        }
        // Each selection read as its whole array while `e` is lifted.
        let saved: Vec<(String, Option<crate::lower::context::HostBind>, Selection)> = names
            .iter()
            .zip(&sels)
            .map(|(n, s)| {
                let before = self.host.insert(
                    n.clone(),
                    crate::lower::context::HostBind::View(s.values.clone()),
                );
                self.masked.remove(n);
                (n.clone(), before, s.clone())
            })
            .collect();
        let lifted = self.expr(r, e);
        for (n, before, s) in saved {
            match before {
                Some(b) => self.host.insert(n.clone(), b),
                None => self.host.remove(&n),
            };
            self.masked.insert(n, s);
        }
        match lifted? {
            Val::Array(values) if values.shape == first.values.shape => Ok(Some(Selection {
                values,
                mask: first.mask.clone(),
                line: first.line,
            })),
            _ => Ok(None),
        }
    }

    /// `v = x[m]`: remembers the selection under `name`; `false` when the
    /// value is not a selection.
    pub(crate) fn bind_selection(
        &mut self,
        r: &mut Region,
        name: &str,
        value: &ast::Expr,
    ) -> Lower<bool> {
        if matches!(value, ast::Expr::Name(_)) {
            return Ok(false);
        }
        match self.selection(r, value)? {
            Some(sel) => {
                self.log.applied(
                    NAME,
                    format!(
                        "`{name}` = a boolean-mask selection (line {}), reduced without compaction",
                        sel.line
                    ),
                );
                self.masked.insert(name.to_string(), sel);
                Ok(true)
            }
            None => {
                self.masked.remove(name);
                Ok(false)
            }
        }
    }

    /// A reduction call of a selection: `sel.mean()`, `np.sum(sel)`,
    /// `len(sel)`; `None` when the call is not one.
    pub(crate) fn masked_call(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<Val>> {
        // (op, the selection, arguments after it: `axis`, `keepdims`)
        let function = self
            .src
            .resolve(&c.func)
            .filter(|name| name.starts_with("numpy.") || name == "len");
        let (op, subject, skip) = match (function, c.func.as_ref()) {
            // `np.sum(sel, …)`, `len(sel)`
            (Some(name), _) if !c.args.is_empty() => {
                let Some(op) = op_of(&name) else {
                    return Ok(None);
                };
                (op, &c.args[0], 1)
            }
            // `sel.sum(…)`
            (None, ast::Expr::Attribute(a)) => {
                let Some(op) = op_of(a.attr.as_str()) else {
                    return Ok(None);
                };
                if matches!(op, Op::Count | Op::Size) {
                    return Ok(None);
                }
                (op, a.value.as_ref(), 0)
            }
            _ => return Ok(None),
        };
        if matches!(subject, ast::Expr::Attribute(_) | ast::Expr::Constant(_)) {
            return Ok(None);
        }
        let whole = c.args.len() == skip && c.keywords.is_empty();
        if !whole && matches!(op, Op::Count | Op::Size | Op::Any | Op::All) {
            return Ok(None);
        }
        let sel = match self.selection(r, subject)? {
            Some(sel) => sel,
            None => match self.selected_expression(r, subject, line)? {
                Some(sel) => sel,
                None => return Ok(None),
            },
        };
        // `var`/`std` of the whole selection, `ddof=` taken.
        let (op, whole) = match op {
            Op::Var(_) | Op::Std(_) if !whole => {
                let nd = sel.values.ndim() - sel.mask.ndim() + 1;
                let args = self.selection_reduction_args(c, skip, nd, AxisOp::Var, line)?;
                if args.axes.as_ref().is_some_and(|a| a.len() != nd) || args.keepdims {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: the variance of a boolean-mask selection is taken only whole",
                            self.src.text_of(c)
                        ),
                    );
                }
                let op = if matches!(op, Op::Var(_)) {
                    Op::Var(args.ddof)
                } else {
                    Op::Std(args.ddof)
                };
                (op, true)
            }
            _ => (op, whole),
        };
        if whole {
            return self.reduce_selection(r, op, &sel, line).map(Some);
        }
        self.reduce_selection_along(r, op, &sel, c, skip, line)
            .map(Some)
    }

    /// An expression of selections through one mask, reduced
    /// (`np.sum((x[m] - y[m]) ** 2)`, `np.abs(d[m]).max()`): a selection
    /// of the same expression of the whole arrays, through that mask.
    /// `None` when `e` holds no boolean-mask subscript; refused when it
    /// mixes in whole arrays or another mask. A name bound to a selection
    /// (`v = x[m]`) is not taken inside such an expression.
    fn selected_expression(
        &mut self,
        r: &mut Region,
        e: &ast::Expr,
        line: u32,
    ) -> Lower<Option<Selection>> {
        if !matches!(
            e,
            ast::Expr::BinOp(_) | ast::Expr::UnaryOp(_) | ast::Expr::Call(_)
        ) {
            return Ok(None);
        }
        // The first subscript by a boolean array, outside nested reductions.
        let mut candidates: Vec<&ast::Expr> = Vec::new();
        let mut pending = vec![e];
        while let Some(x) = pending.pop() {
            match x {
                ast::Expr::Subscript(s) if may_be_mask(&s.slice) => {
                    candidates.push(s.slice.as_ref())
                }
                ast::Expr::Call(c) if is_reduction(self, c) => {}
                ast::Expr::Call(c) => {
                    pending.extend(c.args.iter().rev());
                    pending.extend(c.keywords.iter().map(|k| &k.value));
                }
                ast::Expr::BinOp(b) => pending.extend([b.right.as_ref(), b.left.as_ref()]),
                ast::Expr::UnaryOp(u) => pending.push(&u.operand),
                _ => {}
            }
        }
        let mut found = None;
        for slice in candidates {
            if let Ok(Val::Array(mask)) = self.expr(r, slice) {
                if mask.elem == ScalarType::Bool {
                    found = Some((slice, mask));
                    break;
                }
            }
        }
        let Some((slice, mask)) = found else {
            return Ok(None);
        };
        match self.selected_elementwise(r, slice, &mask, e, line, true)? {
            Val::Array(values) => {
                self.log.applied(
                    NAME,
                    format!(
                        "`{}`: an expression of selections through `[{}]`, reduced as the selection of the same expression of the whole arrays",
                        self.src.text_of(e),
                        self.src.text_of(slice)
                    ),
                );
                Ok(Some(Selection { values, mask, line }))
            }
            _ => Ok(None),
        }
    }

    /// `np.sum(x[m], axis=0)`, `x[m].mean(axis=0, keepdims=True)`: the
    /// selected rows reduced, each column (trailing element) on its own.
    /// The selection's axis 0 is the mask's dimensions of `x`; along the
    /// trailing axes alone the result would keep the compacted rows, of
    /// data-dependent length, which is refused.
    fn reduce_selection_along(
        &mut self,
        r: &mut Region,
        op: Op,
        sel: &Selection,
        c: &ast::ExprCall,
        skip: usize,
        line: u32,
    ) -> Lower<Val> {
        let k = sel.mask.ndim();
        let nd = sel.values.ndim() - k + 1;
        let plain = match op {
            Op::Sum => Reduce::Sum,
            Op::Mean => Reduce::Mean,
            Op::Max => Reduce::Max,
            Op::Min => Reduce::Min,
            Op::Prod => Reduce::Prod,
            _ => unreachable!("only these take an axis here"),
        };
        let args = self.selection_reduction_args(c, skip, nd, AxisOp::Plain(plain), line)?;
        let axes = args.axes.clone().unwrap_or_else(|| (0..nd).collect());
        if axes.len() == nd && !args.keepdims {
            return self.reduce_selection(r, op, sel, line);
        }
        if !axes.contains(&0) {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: a reduction of a boolean-mask selection that keeps its selected rows (their number depends on the data); reduce along `axis=0` or the whole selection",
                    self.src.text_of(c)
                ),
            );
        }
        if args.keepdims && k > 1 {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: `keepdims` of a selection through a mask of {k} dimensions",
                    self.src.text_of(c)
                ),
            );
        }
        // The selection's axis 0 is the mask's k axes of `x`; its axis a > 0
        // is axis a + k - 1 of `x`.
        let x_axes: Vec<usize> = (0..k)
            .chain(axes.iter().filter(|&&a| a > 0).map(|&a| a + k - 1))
            .collect();
        let t = sel.values.elem;
        let mask = sel.mask.body.clone();
        let sum_t = wide(t);
        let (lowest, highest) = extremes(t);
        let (fill_t, identity, reduce) = match op {
            Op::Sum | Op::Mean => (sum_t, zero(sum_t), Reduce::Sum),
            Op::Prod => (sum_t, one(sum_t), Reduce::Prod),
            Op::Max => (wide(t), lowest, Reduce::Max),
            Op::Min => (wide(t), highest, Reduce::Min),
            _ => unreachable!("checked above"),
        };
        let filled = sel.values.map(fill_t, |x| {
            select(mask.clone(), cast_to(x, t, fill_t), identity)
        });
        let reduced = self.reduce_with(
            r,
            AxisOp::Plain(reduce),
            Val::Array(filled),
            RedArgs {
                axes: Some(x_axes.clone()),
                keepdims: args.keepdims,
                ddof: 0,
                dtype: None,
            },
            "masked",
            line,
        )?;
        let out = if op == Op::Mean {
            // The count of selected rows, times the trailing extents reduced.
            let rows = self.reduce(r, Reduce::Sum, mask_count(sel), line)?;
            let Val::Scalar(n, nt, _) = rows else {
                unreachable!("whole reductions give scalars")
            };
            let ft = mean_type(sum_t);
            let mut n = cast_to(n, nt, ft);
            for &a in x_axes.iter().filter(|&&a| a >= k) {
                n = mul(n, cast_to(sel.values.shape[a].clone(), ScalarType::I64, ft));
            }
            let total_t = match &reduced {
                Val::Array(av) => av.elem,
                Val::Scalar(_, st, _) => *st,
                Val::Tuple(_) => unreachable!("a reduction gives no tuple"),
            };
            match reduced {
                Val::Array(av) => {
                    Val::Array(av.map(ft, |e| div(cast_to(e, total_t, ft), n.clone())))
                }
                Val::Scalar(e, st, _) => Val::scalar(div(cast_to(e, st, ft), n), ft),
                Val::Tuple(_) => unreachable!("a reduction gives no tuple"),
            }
        } else if matches!(op, Op::Max | Op::Min) {
            // Computed in the wide type (its identities), given back in
            // the selection's own, as NumPy's max and min are.
            in_type(reduced, t)
        } else {
            reduced
        };
        self.log.applied(
            NAME,
            format!(
                "a reduction along axis 0 of the boolean-mask selection of line {} (line {line}): the rows not selected are the identity",
                sel.line
            ),
        );
        Ok(out)
    }

    /// `sel.size` of a selection: the count of its mask.
    pub(crate) fn masked_size(
        &mut self,
        r: &mut Region,
        base: &ast::Expr,
        line: u32,
    ) -> Lower<Option<Val>> {
        match self.selection(r, base)? {
            Some(sel) => self.reduce_selection(r, Op::Size, &sel, line).map(Some),
            None => Ok(None),
        }
    }

    fn reduce_selection(
        &mut self,
        r: &mut Region,
        op: Op,
        sel: &Selection,
        line: u32,
    ) -> Lower<Val> {
        let t = sel.values.elem;
        let mask = sel.mask.body.clone();
        let count = || mask_count(sel);
        // A mask of fewer dimensions selects whole rows: each selected one
        // holds this many elements.
        let per_row = sel.values.shape[sel.mask.ndim()..]
            .iter()
            .cloned()
            .reduce(mul);
        let fill = |identity: Expr, acc_t: ScalarType| {
            Val::Array(sel.values.map(acc_t, |x| {
                select(mask.clone(), cast_to(x, t, acc_t), identity)
            }))
        };
        let sum_t = wide(t);
        let (lowest, highest) = extremes(t);
        let val = match op {
            // `len` counts rows; `.size` (and a mean) count elements.
            Op::Count => self.reduce(r, Reduce::Sum, count(), line)?,
            Op::Size => {
                let rows = self.reduce(r, Reduce::Sum, count(), line)?;
                match (per_row, rows) {
                    (Some(n), Val::Scalar(e, et, _)) => {
                        Val::scalar(mul(e, cast_to(n, ScalarType::I64, et)), et)
                    }
                    (_, rows) => rows,
                }
            }
            Op::Sum => self.reduce(r, Reduce::Sum, fill(zero(sum_t), sum_t), line)?,
            Op::Prod => self.reduce(r, Reduce::Prod, fill(one(sum_t), sum_t), line)?,
            Op::Max => in_type(self.reduce(r, Reduce::Max, fill(lowest, wide(t)), line)?, t),
            Op::Min => in_type(
                self.reduce(r, Reduce::Min, fill(highest, wide(t)), line)?,
                t,
            ),
            Op::Mean => {
                let total = self.reduce(r, Reduce::Sum, fill(zero(sum_t), sum_t), line)?;
                let n = self.reduce(r, Reduce::Sum, count(), line)?;
                let (Val::Scalar(s, st, _), Val::Scalar(n, nt, _)) = (total, n) else {
                    unreachable!("whole reductions give scalars")
                };
                let ft = mean_type(st);
                let mut n = cast_to(n, nt, ft);
                if let Some(per) = per_row {
                    n = mul(n, cast_to(per, ScalarType::I64, ft));
                }
                Val::scalar(div(cast_to(s, st, ft), n), ft)
            }
            Op::Var(ddof) | Op::Std(ddof) => {
                if t.is_complex() {
                    return refuse(
                        NAME,
                        line,
                        "the variance of a complex selection: take it of `abs(z)` or `z.real`",
                    );
                }
                // Two passes, as NumPy: the mean, then the squared deviations.
                let ft = mean_type(sum_t);
                let total = self.reduce(r, Reduce::Sum, fill(zero(sum_t), sum_t), line)?;
                let rows = self.reduce(r, Reduce::Sum, count(), line)?;
                let (Val::Scalar(s, st, _), Val::Scalar(n, nt, _)) = (total, rows) else {
                    unreachable!("whole reductions give scalars")
                };
                let mut n = cast_to(n, nt, ft);
                if let Some(per) = per_row {
                    n = mul(n, cast_to(per, ScalarType::I64, ft));
                }
                let mean = div(cast_to(s, st, ft), n.clone());
                let squares = Val::Array(sel.values.map(ft, |x| {
                    let d = sub(cast_to(x, t, ft), mean);
                    select(mask.clone(), mul(d.clone(), d), zero(ft))
                }));
                let Val::Scalar(q, qt, _) = self.reduce(r, Reduce::Sum, squares, line)? else {
                    unreachable!("whole reductions give scalars")
                };
                let var = div(
                    cast_to(q, qt, ft),
                    sub(n, cast_to(i64(ddof), ScalarType::I64, ft)),
                );
                let v = if matches!(op, Op::Std(_)) {
                    math(MathFn::Sqrt, vec![var])
                } else {
                    var
                };
                Val::scalar(v, ft)
            }
            Op::Any | Op::All => {
                // any: the count of selected non-zeros > 0; all: the count
                // of selected zeros == 0.
                let want_nonzero = op == Op::Any;
                let flags = Val::Array(sel.values.map(ScalarType::I64, |x| {
                    let nz = truthy(x, t);
                    let hit = if want_nonzero {
                        nz
                    } else {
                        Expr::Unary(UnaryOp::Not, Box::new(nz))
                    };
                    cast_to(
                        binary(BinOp::And, mask.clone(), hit),
                        ScalarType::Bool,
                        ScalarType::I64,
                    )
                }));
                let Val::Scalar(n, nt, _) = self.reduce(r, Reduce::Sum, flags, line)? else {
                    unreachable!("whole reductions give scalars")
                };
                let zero_n = cast_to(i64(0), ScalarType::I64, nt);
                Val::scalar(
                    cmp(if want_nonzero { CmpOp::Gt } else { CmpOp::Eq }, n, zero_n),
                    ScalarType::Bool,
                )
            }
        };
        self.log.applied(
            NAME,
            format!(
                "a reduction of the boolean-mask selection of line {} (line {line}): unselected elements are the identity",
                sel.line
            ),
        );
        Ok(val)
    }
}

/// The mask as 0/1 (`i64`), to count what it selects.
fn mask_count(sel: &Selection) -> Val {
    Val::Array(sel.mask.map(ScalarType::I64, |m| {
        cast_to(m, ScalarType::Bool, ScalarType::I64)
    }))
}

/// The type of a mean of `t`s summed (as NumPy: float32 and complex stay,
/// integers give float64).
fn mean_type(t: ScalarType) -> ScalarType {
    match t {
        ScalarType::F32 | ScalarType::C64 | ScalarType::C128 => t,
        _ => ScalarType::F64,
    }
}

/// The type NumPy sums `t` in: integers in the platform's (u)int64.
fn wide(t: ScalarType) -> ScalarType {
    if t.is_float() || t.is_complex() {
        t
    } else if t.is_unsigned() {
        ScalarType::U64
    } else {
        ScalarType::I64
    }
}

/// `v` (a reduction's scalar or array) with elements of type `t`.
fn in_type(v: Val, t: ScalarType) -> Val {
    match v {
        Val::Scalar(e, st, w) => Val::Scalar(cast_to(e, st, t), t, w),
        Val::Array(av) => {
            let from = av.elem;
            Val::Array(av.map(t, |e| cast_to(e, from, t)))
        }
        tuple => tuple,
    }
}

/// The identities of max and min for `t`, of type `wide(t)`.
fn extremes(t: ScalarType) -> (Expr, Expr) {
    match t {
        ScalarType::F32 | ScalarType::F64 => (
            cast_to(f64(f64::NEG_INFINITY), ScalarType::F64, t),
            cast_to(f64(f64::INFINITY), ScalarType::F64, t),
        ),
        _ if t.is_unsigned() => (
            cast_to(i64(0), ScalarType::I64, ScalarType::U64),
            cast_to(i64(-1), ScalarType::I64, ScalarType::U64),
        ),
        _ => (i64(i64::MIN), i64(i64::MAX)),
    }
}

fn zero(t: ScalarType) -> Expr {
    if t.is_float() {
        cast_to(f64(0.0), ScalarType::F64, t)
    } else {
        cast_to(i64(0), ScalarType::I64, t)
    }
}

fn one(t: ScalarType) -> Expr {
    if t.is_float() {
        cast_to(f64(1.0), ScalarType::F64, t)
    } else {
        cast_to(i64(1), ScalarType::I64, t)
    }
}

/// Whether an index is of a kind that may be a boolean mask (a comparison,
/// a name, a call, arithmetic), which [`Lowerer::selection`] evaluates to
/// see; slices, tuples and constants never are.
fn may_be_mask(index: &ast::Expr) -> bool {
    matches!(
        index,
        ast::Expr::Compare(_)
            | ast::Expr::BoolOp(_)
            | ast::Expr::UnaryOp(_)
            | ast::Expr::BinOp(_)
            | ast::Expr::Name(_)
            | ast::Expr::Call(_)
    )
}

/// Text without spaces, to compare two writings of one mask (`N == k`,
/// `N==k`).
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

impl Lowerer<'_> {
    /// The right-hand side of `a[m] = value` (or `a[m] += value`), element
    /// by element: NumPy stores the selected elements of `value` in order,
    /// so this is elementwise only when every array `value` reads is a
    /// selection through the same mask (`b[m]`, with `b` of the mask's
    /// shape), read here as `b` itself, and everything else is a single
    /// value (`n`, `x.max()`, `np.sum(b[m])`). Anything else is refused,
    /// naming it.
    pub(crate) fn masked_value(
        &mut self,
        r: &mut Region,
        slice: &ast::Expr,
        mask: &ArrVal,
        value: &ast::Expr,
        line: u32,
    ) -> Lower<Val> {
        self.selected_elementwise(r, slice, mask, value, line, false)
    }

    /// [`Self::masked_value`]'s check and rewriting; `reduced`: `value` is
    /// the operand of a reduction (`np.sum((x[m] - y[m]) ** 2)`), not the
    /// right-hand side of an assignment, which only changes the wording.
    fn selected_elementwise(
        &mut self,
        r: &mut Region,
        slice: &ast::Expr,
        mask: &ArrVal,
        value: &ast::Expr,
        line: u32,
        reduced: bool,
    ) -> Lower<Val> {
        let context = if reduced {
            "a reduction of selections"
        } else {
            "a masked assignment"
        };
        let mask_text = squeezed(self.src.text_of(slice));
        let same = |this: &Self, e: &ast::Expr| -> bool {
            matches!(e, ast::Expr::Subscript(s)
                if squeezed(this.src.text_of(s.slice.as_ref())) == mask_text)
        };
        let mut pending = vec![value];
        while let Some(e) = pending.pop() {
            if same(self, e) {
                let ast::Expr::Subscript(s) = e else {
                    unreachable!("checked above")
                };
                match self.expr(r, &s.value)? {
                    Val::Array(b) if b.ndim() == mask.ndim() => {}
                    _ => {
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`{}`: a selection through a mask of {} dimension(s) from a value of another shape",
                                self.src.text_of(e),
                                mask.ndim()
                            ),
                        )
                    }
                }
                continue;
            }
            let mentions_selection = {
                let mut found = false;
                crate::pyast::walk_expr(e, &mut |x| found |= same(self, x));
                found
            };
            match e {
                ast::Expr::Constant(_) => {}
                ast::Expr::BinOp(b) => pending.extend([b.left.as_ref(), b.right.as_ref()]),
                ast::Expr::UnaryOp(u) => pending.push(&u.operand),
                ast::Expr::BoolOp(b) => pending.extend(b.values.iter()),
                ast::Expr::Compare(c) => {
                    pending.push(&c.left);
                    pending.extend(c.comparators.iter());
                }
                ast::Expr::IfExp(i) => {
                    pending.extend([i.test.as_ref(), i.body.as_ref(), i.orelse.as_ref()])
                }
                ast::Expr::Attribute(a) if mentions_selection => pending.push(&a.value),
                // A reduction (`b[m].sum()`, `np.max(b)`) is one value.
                ast::Expr::Call(c) if is_reduction(self, c) => {}
                ast::Expr::Call(c) if mentions_selection => {
                    pending.extend(c.args.iter());
                    pending.extend(c.keywords.iter().map(|k| &k.value));
                }
                _ if mentions_selection => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}` in {context}: port takes arithmetic and calls of the selections `[{}]`",
                            self.src.text_of(e),
                            self.src.text_of(slice)
                        ),
                    )
                }
                _ => {
                    // Neither a selection nor built from one: it must be a
                    // single value (it broadcasts to every selected element).
                    if let ast::Expr::Subscript(s) = e {
                        if let Ok(Val::Array(other)) = self.expr(r, &s.slice) {
                            if other.elem == ScalarType::Bool {
                                return refuse(
                                    NAME,
                                    line,
                                    format!(
                                        "`{}` selects through another mask than the assignment's `[{}]`: the selections would not line up element by element",
                                        self.src.text_of(e),
                                        self.src.text_of(slice)
                                    ),
                                );
                            }
                        }
                    }
                    if let Val::Array(_) = self.expr(r, e)? {
                        let why = if reduced {
                            "beside selections: NumPy pairs it with the selected elements only when every element is selected, and raises otherwise"
                        } else {
                            "on the right of a masked assignment: NumPy stores it into the selected elements in order"
                        };
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`{}` is a whole array {why}; port takes selections through the same mask (`x[{}]`) and single values",
                                self.src.text_of(e),
                                self.src.text_of(slice)
                            ),
                        );
                    }
                }
            }
        }
        // Every selection `b[m]` is `b`, element by element.
        let mut elementwise = value.clone();
        crate::pyast::walk_expr_mut(&mut elementwise, &mut |x| {
            if same(self, x) {
                let ast::Expr::Subscript(s) = x else {
                    unreachable!("checked above")
                };
                *x = (*s.value).clone();
                return true;
            }
            false
        });
        let v = self.expr(r, &elementwise)?;
        match &v {
            Val::Array(av) if av.ndim() != mask.ndim() => refuse(
                NAME,
                line,
                format!(
                    "`{}` in {context}: a value of {} dimension(s) for a mask of {}",
                    self.src.text_of(value),
                    av.ndim(),
                    mask.ndim()
                ),
            ),
            Val::Tuple(_) => refuse(NAME, line, "a tuple stored through a boolean mask"),
            _ => Ok(v),
        }
    }
}

/// Whether `c` reduces to one value (`x.sum()`, `np.max(x)`, `len(x)`).
fn is_reduction(l: &Lowerer<'_>, c: &ast::ExprCall) -> bool {
    let has_axis = c.keywords.iter().any(|k| {
        k.arg
            .as_ref()
            .is_some_and(|a| matches!(a.as_str(), "axis" | "keepdims"))
    });
    if has_axis {
        return false;
    }
    let name = l.src.resolve(&c.func).unwrap_or_default();
    if name.starts_with("numpy.") || name == "len" {
        return c.args.len() == 1 && op_of(&name).is_some();
    }
    match c.func.as_ref() {
        // A method of a value, not of a module.
        ast::Expr::Attribute(a) => c.args.is_empty() && op_of(a.attr.as_str()).is_some(),
        _ => false,
    }
}
