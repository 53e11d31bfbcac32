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
use port_codegen::ir::{Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
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
                            array_expr::wrap(x, base.shape[d].clone())
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
        let wrapped = array_expr::wrap(raw, extent);
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

    /// The target of a store through index arrays, `a[comps] = v`, as a
    /// view, when no two elements of the store land on one place of `a`:
    /// for every axis of the indices' broadcast shape, one index steps
    /// forward from a non-negative start along that axis alone — open
    /// grids (`i, j, k = np.ogrid[1:n-1, …]`, the parts of `np.indices`)
    /// or `np.arange(n)` beside other integer arrays (`dx[np.arange(n), y]
    /// -= 1`: row `i` at column `y[i]`). The other indices count from the
    /// end when negative, as NumPy's do. `None` when no index is an array
    /// of integers (an element, a slice, a mask: the usual ways); any other
    /// store through integer arrays (a scatter, where two writes may meet)
    /// is refused by name.
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
        let not_an_index = |c: &ast::Expr| match c {
            ast::Expr::Constant(k) => !matches!(k.value, ast::Constant::Int(_)),
            _ => self.src.resolve(c).as_deref() == Some("numpy.newaxis"),
        };
        if comps.iter().any(|c| not_an_index(c)) {
            return Ok(None);
        }
        let mut index_arrays = Vec::new();
        let mut sliced = false;
        for c in &comps {
            if matches!(c, ast::Expr::Slice(_)) {
                sliced = true;
                continue;
            }
            if let Ok(Val::Array(a)) = self.expr(r, c) {
                if a.elem.is_int() {
                    index_arrays.push(Val::Array(a));
                }
            }
        }
        if index_arrays.is_empty() {
            return Ok(None);
        }
        let text = self.src.text_of(s).to_string();
        let Ok(Val::Array(base)) = self.expr(r, &s.value) else {
            return Ok(None);
        };
        if sliced {
            return scatter_refused(&text, line, "an index array among slices");
        }
        if base.computed || base.view_target().is_none() {
            return Ok(None);
        }
        let target = base.view_target().expect("checked").array.clone();
        let Some((shape, idx)) = self.advanced_index(r, &base, &comps, line)? else {
            return scatter_refused(
                &text,
                line,
                "an index that is not an integer or an array of integers",
            );
        };
        let rank = shape.len() - (base.ndim() - comps.len());
        // For each axis of the indices' shape, an index that steps forward
        // along it alone (and never counts from the end).
        let steps = |x: &Expr, k: usize| {
            let at = |v: i64| eval_at(x, &ph(k), v);
            let (Some(a0), Some(a1), Some(a2), Some(a3)) = (at(0), at(1), at(2), at(3)) else {
                return false;
            };
            let step = a1 - a0;
            a0 >= 0 && step > 0 && a2 - a1 == step && a3 - a2 == step
        };
        let mut forward = vec![false; comps.len()];
        for (k, extent) in shape.iter().enumerate().take(rank) {
            if *extent == i64(1) {
                continue;
            }
            match (0..comps.len()).find(|&d| steps(&idx[d], k)) {
                Some(d) => forward[d] = true,
                None => {
                    return scatter_refused(
                        &text,
                        line,
                        "no index steps forward along each axis of the indices (as `np.arange(n)` or an open grid does), so two elements may land on one place",
                    )
                }
            }
        }
        let mut reads_target = false;
        for x in &idx {
            port_codegen::ir::walk_expr(x, &mut |e| {
                if let Expr::Load(l) = e {
                    reads_target |= l.array == target;
                }
            });
        }
        if reads_target {
            return scatter_refused(
                &text,
                line,
                &format!("the indices read `{target}`, which the store changes"),
            );
        }
        let vals: Vec<&Val> = index_arrays.iter().collect();
        self.assume_broadcast(r, &vals, line)?;
        let idx: Vec<Expr> = idx
            .into_iter()
            .enumerate()
            .map(|(d, x)| {
                if d < comps.len() && !forward[d] {
                    array_expr::wrap(x, base.shape[d].clone())
                } else {
                    x
                }
            })
            .collect();
        let mut out = base.reindexed(shape, &idx);
        out.computed = false;
        let how = if forward.iter().all(|f| *f) {
            "open grids"
        } else {
            "index arrays, one stepping forward along each axis"
        };
        self.log.applied(
            NAME,
            format!(
                "a store through {how} (line {line}): no two elements land on one place, one thread each (indices taken to be in range, as NumPy requires)"
            ),
        );
        Ok(Some(out))
    }
}

/// The refusal of a store through index arrays that port cannot prove
/// free of collisions.
fn scatter_refused<T>(text: &str, line: u32, why: &str) -> Lower<T> {
    refuse(
        NAME,
        line,
        format!(
            "a store through index arrays `{text}` (a scatter): {why}; port takes `a[np.arange(n), idx]` and open grids, where each element is written once"
        ),
    )
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
