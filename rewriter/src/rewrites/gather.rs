//! **gather**: reading through an array of integer indices, `x[idx]` or
//! `a[:, cols]` (NumPy's advanced indexing with one index array among
//! slices). The result is a template of shape `before + idx.shape + after`
//! whose element loads `x` at the index array's element, so a gather fuses
//! into the kernel that uses it (`vals @ x[cols]` in a CSR row is one
//! per-thread dot product). Negative indices count from the end, as in
//! NumPy. Stores through index arrays (a scatter, where duplicates race)
//! and several index arrays at once are refused.

use port_codegen::ir::build::*;
use port_codegen::ir::{CmpOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, select};
use crate::lower::{Lowerer, Region};
use crate::rewrites::array_expr::{self, ph, ArrVal, Val};

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
        for &k in &candidates {
            if let Ok(Val::Array(idx)) = self.expr(r, comps[k]) {
                if idx.elem.is_int() {
                    if found.is_some() {
                        return refuse(
                            NAME,
                            line,
                            "indexing with several index arrays at once (they broadcast together) is not supported",
                        );
                    }
                    found = Some((k, idx));
                }
            }
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
