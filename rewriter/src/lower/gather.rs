//! **gather**: reading through an array of integer indices, `x[idx]` or
//! `a[:, cols]` (NumPy's advanced indexing with one index array among
//! slices). The result is a template of shape `before + idx.shape + after`
//! whose element loads `x` at the index array's element, so a gather fuses
//! into the kernel that uses it (`vals @ x[cols]` in a CSR row is one
//! per-thread dot product). Negative indices count from the end, as in
//! NumPy. Index arrays and integers alone (`a[i, j + nb[i, j, 0], k]`)
//! broadcast together, each read at the result's element. Stores through
//! index arrays (a scatter, where duplicates race) are refused, except
//! through open grids (`np.ogrid`) that step forward from a non-negative
//! start, one per axis: those are slices written another way.

use port_codegen::ir::build::*;
use port_codegen::ir::{CmpOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, select};
use crate::lower::context::{Lowerer, Recurse, Region};
use crate::numpy::array_expr::{self, ph, ArrVal, Val};

pub const NAME: &str = "gather";

impl Lowerer<'_> {
    /// `base[comps]` when one component is an array of integers and the
    /// others are slices; `None` otherwise.
    pub(crate) fn gather(
        &mut self,
        r: &mut Region,
        base: &ArrVal,
        comps: &[&ast::Expr],
        line: u32,
    ) -> Lower<Option<Val>> {
        let arrayish = |c: &ast::Expr| {
            !matches!(c, ast::Expr::Slice(_) | ast::Expr::Constant(_))
                && self.src.resolve(c).as_deref() != Some("numpy.newaxis")
        };
        let candidates: Vec<usize> = (0..comps.len()).filter(|&k| arrayish(comps[k])).collect();
        let mut found = None;
        let mut several = false;
        for &k in &candidates {
            if let Ok(Val::Array(idx)) = self.expr(r, comps[k]) {
                if idx.elem.is_int() {
                    several |= found.is_some();
                    found = Some((k, idx));
                }
            }
        }
        if found.is_some() && comps.iter().all(|c| !matches!(c, ast::Expr::Slice(_))) {
            // Only index arrays and integers: they broadcast together.
            if let Some((shape, idx)) = self.advanced_index(r, base, comps, line)? {
                let wrapped: Vec<Expr> = idx
                    .into_iter()
                    .enumerate()
                    .map(|(d, x)| {
                        if d < comps.len() {
                            wrap(x, base.shape[d].clone())
                        } else {
                            x
                        }
                    })
                    .collect();
                let mut out = base.reindexed(shape, &wrapped);
                out.computed = true;
                self.log.applied(
                    NAME,
                    format!(
                        "a gather through {} index arrays broadcast together (line {line}), fused into its use",
                        comps.len()
                    ),
                );
                return Ok(Some(Val::Array(out)));
            }
        }
        if several {
            return refuse(
                NAME,
                line,
                "several index arrays among slices (they broadcast together) are not supported",
            );
        }
        let Some((p, idx)) = found else {
            return Ok(None);
        };
        if comps.len() > base.ndim()
            || comps
                .iter()
                .enumerate()
                .any(|(k, c)| k != p && !matches!(c, ast::Expr::Slice(_)))
        {
            return refuse(
                NAME,
                line,
                "an index array mixed with integers, `None` or `...`: port takes one index array among slices",
            );
        }
        // Slices give ranges; trailing dimensions are whole.
        let mut ranges: Vec<(Expr, i64, Expr)> = Vec::new();
        for d in 0..base.ndim() {
            if d == p {
                continue;
            }
            let extent = base.shape[d].clone();
            match comps.get(d) {
                Some(c) => match self.index_item(r, c, extent, line)? {
                    array_expr::IndexItem::Range { start, step, len } => {
                        ranges.push((start, step, len))
                    }
                    _ => unreachable!("a slice gives a range"),
                },
                None => ranges.push((i64(0), 1, extent)),
            }
        }
        let before = p;
        let m = idx.ndim();
        let mut shape: Vec<Expr> = ranges[..before].iter().map(|x| x.2.clone()).collect();
        shape.extend(idx.shape.iter().cloned());
        shape.extend(ranges[before..].iter().map(|x| x.2.clone()));
        // The index array's element, in the result's placeholders.
        let at: Vec<Expr> = (0..m).map(|k| var(&ph(before + k))).collect();
        let raw = cast_to(idx.element(&at), idx.elem, ScalarType::I64);
        let extent = base.shape[p].clone();
        let wrapped = select(
            cmp(CmpOp::Lt, raw.clone(), i64(0)),
            add(raw.clone(), extent),
            raw,
        );
        let mut base_idx = Vec::new();
        for d in 0..base.ndim() {
            if d == p {
                base_idx.push(wrapped.clone());
                continue;
            }
            let k = if d < p { d } else { d - 1 };
            let out_dim = if d < p { k } else { k + m };
            let (start, step, _) = &ranges[k];
            base_idx.push(array_expr::tidy(&add(
                start.clone(),
                mul(i64(*step), var(&ph(out_dim))),
            )));
        }
        let mut out = base.reindexed(shape, &base_idx);
        // NumPy copies: later writes to `base` do not show through.
        out.computed = true;
        self.log.applied(
            NAME,
            format!("a gather through an index array (line {line}), fused into its use"),
        );
        Ok(Some(Val::Array(out)))
    }
}

/// A negative index counts from the end.
fn wrap(raw: Expr, extent: Expr) -> Expr {
    select(
        cmp(CmpOp::Lt, raw.clone(), i64(0)),
        add(raw.clone(), extent),
        raw,
    )
}

impl Lowerer<'_> {
    /// `base[comps]` where every component is an array of integers or an
    /// integer: the broadcast shape (then `base`'s trailing dimensions), and
    /// `base`'s index per dimension as an `i64` expression of the result's
    /// placeholders (not yet wrapped). `None` when a component is neither.
    fn advanced_index(
        &mut self,
        r: &mut Region,
        base: &ArrVal,
        comps: &[&ast::Expr],
        line: u32,
    ) -> Lower<Option<(Vec<Expr>, Vec<Expr>)>> {
        if comps.len() > base.ndim() {
            return refuse(
                NAME,
                line,
                format!(
                    "too many indices ({}) for an array of {} dimensions",
                    comps.len(),
                    base.ndim()
                ),
            );
        }
        let mut vals = Vec::new();
        for c in comps {
            match self.expr(r, c)? {
                Val::Array(a) if a.elem.is_int() => vals.push(Val::Array(a)),
                Val::Scalar(e, t, w) if t.is_int() => vals.push(Val::Scalar(e, t, w)),
                _ => return Ok(None),
            }
        }
        let rank = vals
            .iter()
            .map(|v| match v {
                Val::Array(a) => a.ndim(),
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        // Right-aligned broadcasting: an extent of literal 1 stretches.
        let one = i64(1);
        let mut shape = vec![one.clone(); rank];
        for v in &vals {
            if let Val::Array(a) = v {
                let off = rank - a.ndim();
                for (k, e) in a.shape.iter().enumerate() {
                    if *e != one && shape[off + k] == one {
                        shape[off + k] = e.clone();
                    }
                }
            }
        }
        let mut idx: Vec<Expr> = vals
            .iter()
            .map(|v| match v {
                Val::Array(a) => cast_to(a.body_in(rank), a.elem, ScalarType::I64),
                Val::Scalar(e, t, _) => cast_to(e.clone(), *t, ScalarType::I64),
                Val::Tuple(_) => unreachable!("only arrays and scalars are kept"),
            })
            .collect();
        for d in comps.len()..base.ndim() {
            idx.push(var(&ph(rank + d - comps.len())));
            shape.push(base.shape[d].clone());
        }
        if shape.len() > port_codegen::ir::MAX_DIMS as usize {
            crate::error::check_rank(NAME, line, shape.len())?;
        }
        Ok(Some((shape, idx)))
    }

    /// The target of `a[i, j, k] = v` through open grids (`i, j, k =
    /// np.ogrid[1:n-1, …]`) as a view: each index steps forward from a
    /// non-negative start along its own axis, so no two elements of the
    /// store land on one place of `a` (no race) and none counts from the
    /// end. `None` for any other subscript.
    pub(crate) fn grid_view(
        &mut self,
        r: &mut Region,
        s: &ast::ExprSubscript,
        line: u32,
    ) -> Lower<Option<ArrVal>> {
        let comps: Vec<&ast::Expr> = match s.slice.as_ref() {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            e => vec![e],
        };
        if comps
            .iter()
            .any(|c| matches!(c, ast::Expr::Slice(_) | ast::Expr::Constant(_)))
        {
            return Ok(None);
        }
        let Ok(Val::Array(base)) = self.expr(r, &s.value) else {
            return Ok(None);
        };
        if base.computed || base.view_target().is_none() {
            return Ok(None);
        }
        let Some((shape, idx)) = self.advanced_index(r, &base, &comps, line)? else {
            return Ok(None);
        };
        let rank = shape.len() - (base.ndim() - comps.len());
        if rank != comps.len() {
            return Ok(None);
        }
        for (d, x) in idx.iter().enumerate().take(comps.len()) {
            let at = |k: i64| eval_at(x, &ph(d), k);
            let (Some(a0), Some(a1), Some(a2), Some(a3)) = (at(0), at(1), at(2), at(3)) else {
                return Ok(None);
            };
            let step = a1 - a0;
            if a0 < 0 || step <= 0 || a2 - a1 != step || a3 - a2 != step {
                return Ok(None);
            }
        }
        let mut out = base.reindexed(shape, &idx);
        out.computed = false;
        self.log.applied(
            NAME,
            format!("a store through open grids (line {line}) as the slices they step through"),
        );
        Ok(Some(out))
    }
}

/// `e` as an integer when the placeholder `p` is `k` and nothing else
/// varies; `None` otherwise.
fn eval_at(e: &Expr, p: &str, k: i64) -> Option<i64> {
    use port_codegen::ir::{BinOp, Literal, UnaryOp};
    Some(match e {
        Expr::Lit(Literal::I64(v)) => *v,
        Expr::Var(v) if v == p => k,
        Expr::Cast(t, x) if t.is_int() => eval_at(x, p, k)?,
        Expr::Unary(UnaryOp::Neg, x) => eval_at(x, p, k)?.checked_neg()?,
        Expr::Binary(op, a, b) => {
            let (a, b) = (eval_at(a, p, k)?, eval_at(b, p, k)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                _ => return None,
            }
        }
        _ => return None,
    })
}
