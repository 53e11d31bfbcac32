//! **convolve**: small constant arrays and the 1-D filters built on them.
//!
//! - `np.array([a, b, c])` (and nested lists, `dtype=`) of numbers or scalar
//!   expressions is an element template: element `i` is a choice among the
//!   items, so nothing is allocated, on the host or inside per-thread work.
//! - `np.convolve(a, v, mode=…)` and `np.correlate(a, v, mode=…)` with a
//!   filter `v` of constant length are templates too: each output element
//!   is the unrolled sum of products NumPy defines (`convolve` flips `v`),
//!   with the reads outside `a` of `'full'`/`'same'` counted as zero.
//!
//! A filter whose length is known only at run time is refused by name
//! (write the loop over it).

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{and, cast_to, lit, promote, select};
use crate::lower::context::{Lowerer, Recurse, Region};
use crate::numpy::array_expr::{ph, ArrVal, Val};

pub const NAME: &str = "convolve";

/// The longest filter unrolled into each output element.
const MAX_TAPS: i64 = 64;

impl Lowerer<'_> {
    /// `np.array(list)` / `np.asarray(list)` of scalars: `None` when the
    /// argument is no list literal (an array: a copy, handled elsewhere).
    pub(crate) fn literal_array(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<Val>> {
        // `np.array([…])`, or of a tuple (`(1, 0, 1)`, as a default).
        let elts: &Vec<ast::Expr> = match c.args.first() {
            Some(ast::Expr::List(l)) => &l.elts,
            Some(ast::Expr::Tuple(t)) => &t.elts,
            _ => return Ok(None),
        };
        let mut dtype = None;
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("dtype") => dtype = self.dtype_value(r, &k.value),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!("`{}`: only `dtype=` is supported", self.src.text_of(c)),
                    )
                }
            }
        }
        // One or two levels of lists, rectangular.
        let rows: Vec<Vec<&ast::Expr>> = if elts
            .iter()
            .all(|e| matches!(e, ast::Expr::List(_) | ast::Expr::Tuple(_)))
            && !elts.is_empty()
        {
            elts.iter()
                .map(|e| match e {
                    ast::Expr::List(l) => l.elts.iter().collect(),
                    ast::Expr::Tuple(t) => t.elts.iter().collect(),
                    _ => unreachable!("checked above"),
                })
                .collect()
        } else {
            vec![elts.iter().collect()]
        };
        let nested = rows.len() > 1
            || matches!(elts.first(), Some(ast::Expr::List(_) | ast::Expr::Tuple(_)));
        let width = rows[0].len();
        if width == 0 || rows.iter().any(|r| r.len() != width) {
            return refuse(
                NAME,
                line,
                "`np.array` of an empty or ragged list has no kernel form",
            );
        }
        let mut items: Vec<(Expr, ScalarType, bool)> = Vec::new();
        for row in &rows {
            for e in row {
                match self.expr(r, e)? {
                    Val::Scalar(x, t, w) => items.push((x, t, w)),
                    _ => {
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`np.array`: `{}` is not a number (lists of arrays have no kernel form)",
                                self.src.text_of(*e)
                            ),
                        )
                    }
                }
            }
        }
        // NumPy's dtype of a list: the common type, Python numbers strong.
        let t = dtype.unwrap_or_else(|| {
            items
                .iter()
                .map(|(_, t, _)| *t)
                .reduce(|a, b| promote(a, false, b, false))
                .unwrap_or(ScalarType::F64)
        });
        let flat = var(&ph(0));
        let index = if nested {
            add(mul(var(&ph(0)), i64(width as i64)), var(&ph(1)))
        } else {
            flat
        };
        let mut body = cast_to(
            items[items.len() - 1].0.clone(),
            items[items.len() - 1].1,
            t,
        );
        for (k, (x, xt, _)) in items.iter().enumerate().rev().skip(1) {
            body = select(
                cmp(CmpOp::Eq, index.clone(), i64(k as i64)),
                cast_to(x.clone(), *xt, t),
                body,
            );
        }
        let shape = if nested {
            vec![i64(rows.len() as i64), i64(width as i64)]
        } else {
            vec![i64(width as i64)]
        };
        self.log.applied(
            NAME,
            format!(
                "`np.array` of {} numbers at line {line} as a constant template",
                items.len()
            ),
        );
        // Constants read no array: a name bound to them is the template
        // itself (nothing allocated, its length still known where a filter
        // needs it). Values of variables are copied, as NumPy copies them.
        let constant = items.iter().all(|(x, _, _)| is_constant(x));
        Ok(Some(Val::Array(ArrVal {
            shape,
            elem: t,
            body,
            computed: !constant,
        })))
    }

    /// `np.convolve(a, v, mode)` / `np.correlate(a, v, mode)` of 1-D arrays.
    pub(crate) fn convolve(
        &mut self,
        r: &mut Region,
        name: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        let word = name.rsplit('.').next().unwrap_or(name);
        let flip = word == "convolve";
        if c.args.len() < 2 || c.args.len() > 3 {
            return refuse(
                NAME,
                line,
                format!("`np.{word}` takes two arrays and a mode"),
            );
        }
        let mut mode = c.args.get(2);
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("mode") => mode = Some(&k.value),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!("`{}`: only `mode=` is supported", self.src.text_of(c)),
                    )
                }
            }
        }
        let default = if flip { "full" } else { "valid" };
        let text = |e: &ast::Expr| match e {
            ast::Expr::Constant(k) => match &k.value {
                ast::Constant::Str(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        };
        let mode = match mode.map(text) {
            None => default.to_string(),
            Some(Some(s)) if matches!(s.as_str(), "full" | "same" | "valid") => s,
            Some(_) => {
                return refuse(
                    NAME,
                    line,
                    format!("`np.{word}`: `mode=` must be 'full', 'same' or 'valid'"),
                )
            }
        };
        let (Val::Array(a), Val::Array(v)) = (self.expr(r, &c.args[0])?, self.expr(r, &c.args[1])?)
        else {
            return refuse(NAME, line, format!("`np.{word}` of a scalar"));
        };
        if a.ndim() != 1 || v.ndim() != 1 {
            return refuse(NAME, line, format!("`np.{word}` of arrays other than 1-D"));
        }
        let m = match &v.shape[0] {
            Expr::Lit(port_codegen::ir::Literal::I64(m)) if (1..=MAX_TAPS).contains(m) => *m,
            _ => {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`np.{word}` with a filter of run-time length (port unrolls filters of up to {MAX_TAPS} constant taps): write the loop over the filter"
                    ),
                )
            }
        };
        let t = promote(a.elem, false, v.elem, false);
        let n = a.shape[0].clone();
        let i = var(&ph(0));
        // Output index i, tap k reads a[i + shift - k'] with k' the tap as
        // applied (convolve flips v: NumPy's sum_k a[j - k] v[k]).
        let (len, shift) = match mode.as_str() {
            "valid" => (add(sub(n.clone(), i64(m)), i64(1)), m - 1),
            "same" => (n.clone(), (m - 1) / 2),
            _ => (add(n.clone(), i64(m - 1)), 0),
        };
        let mut acc: Option<Expr> = None;
        for k in 0..m {
            // convolve: a[i + shift - k] * v[k]; correlate: a[i + shift - (m-1) + k] * v[k]
            let j = if flip {
                sub(add(i.clone(), i64(shift)), i64(k))
            } else {
                add(sub(add(i.clone(), i64(shift)), i64(m - 1)), i64(k))
            };
            let inside = and(
                cmp(CmpOp::Ge, j.clone(), i64(0)),
                cmp(CmpOp::Lt, j.clone(), n.clone()),
            );
            let safe = select(inside.clone(), j, i64(0));
            let x = cast_to(a.element(&[safe]), a.elem, t);
            let w = cast_to(v.element(&[i64(k)]), v.elem, t);
            // NumPy's correlate conjugates the filter.
            let w = if !flip && t.is_complex() {
                let re = Expr::Part(port_codegen::ir::Part::Re, Box::new(w.clone()));
                let im = Expr::Part(port_codegen::ir::Part::Im, Box::new(w));
                Expr::Complex(
                    Box::new(re),
                    Box::new(Expr::Unary(port_codegen::ir::UnaryOp::Neg, Box::new(im))),
                )
            } else {
                w
            };
            let term = if mode == "valid" {
                mul(x, w)
            } else {
                select(inside, mul(x, w), lit(t, 0.0))
            };
            acc = Some(match acc {
                None => term,
                Some(s) => binary(BinOp::Add, s, term),
            });
        }
        self.log.applied(
            NAME,
            format!(
                "`np.{word}` ({mode}) at line {line}: {m} taps unrolled into each output element"
            ),
        );
        Ok(Val::Array(ArrVal {
            shape: vec![len],
            elem: t,
            body: acc.expect("at least one tap"),
            computed: true,
        }))
    }
}

/// A literal, or a cast or complex pair of literals.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Cast(_, a) | Expr::Unary(_, a) => is_constant(a),
        Expr::Complex(a, b) => is_constant(a) && is_constant(b),
        _ => false,
    }
}
