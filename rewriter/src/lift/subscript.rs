//! Subscripts: `x[i]`, slices, views and index arrays, and the items of an
//! index (an integer, a slice, `None`, an array) lifted against the extent
//! of the axis they index.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{Lowerer, Recurse, Region};
use crate::numpy::array_expr::{self, IndexItem, Val};
use crate::source::Const;

impl<'a> Lowerer<'a> {
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

    pub(super) fn lift_index_item(
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
            let x = cast_to(x, t, ScalarType::I64);
            Ok(match array_expr::least(&x, &this.floors) {
                Some(k) if k >= 0 => x,
                _ => array_expr::wrap(x, extent.clone()),
            })
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
}
