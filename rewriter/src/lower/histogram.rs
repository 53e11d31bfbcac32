//! **histogram**: `np.histogram(a, bins=n, range=(lo, hi), weights=w,
//! density=…)` with a number of equal bins, as NumPy computes it: the range
//! (the data's min and max when not given, two whole-array reductions read
//! back, widened by ±0.5 when equal), then one kernel where each element
//! inside the range finds its bin by NumPy's own arithmetic — the scaled
//! offset, then the corrections against the `linspace` edges that make a
//! value on an edge land where `np.searchsorted` puts it — and adds one (or
//! its weight) with an atomic. The edges are a template (`np.linspace` in
//! the edges' dtype), so nothing is stored until used.
//!
//! Edges written as `np.arange` of integer constants are such equal bins
//! (see `arange_edges`); other arrays of edges, `range` that is not a pair,
//! and complex weights are refused by name.

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, AtomicOp, CmpOp, ElemRef, Expr, ScalarType, Stmt};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{and, cast_to, lit, select};
use crate::lower::context::{HostBind, Lowerer, Recurse, Reduce, Region, RegionKind};
use crate::numpy::array_expr::{ph, ArrVal, Val};
use crate::plan::{Fill, HostStep};

pub const NAME: &str = "histogram";

impl Lowerer<'_> {
    /// `np.histogram(...)`: the tuple `(hist, bin_edges)`.
    pub(crate) fn histogram(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        if r.kind != RegionKind::Host {
            return refuse(
                NAME,
                line,
                "`np.histogram` inside a parallel loop: move it out of the loop",
            );
        }
        let mut bins: Option<&ast::Expr> = c.args.get(1);
        let mut range: Option<&ast::Expr> = c.args.get(2);
        let mut weights: Option<&ast::Expr> = None;
        let mut density: Option<&ast::Expr> = None;
        if c.args.len() > 3 {
            return refuse(
                NAME,
                line,
                "`np.histogram`: pass `density=`/`weights=` by keyword",
            );
        }
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("bins") => bins = Some(&k.value),
                Some("range") => range = Some(&k.value),
                Some("weights") => weights = Some(&k.value),
                Some("density") => density = Some(&k.value),
                other => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`np.histogram`: keyword `{}` is not supported",
                            other.unwrap_or("**")
                        ),
                    )
                }
            }
        }
        let density = match density.map(|d| self.src.eval_const(d)) {
            None => false,
            Some(Some(crate::source::Const::Bool(b))) => b,
            Some(_) => {
                return refuse(
                    NAME,
                    line,
                    "`np.histogram`: `density=` must be True or False",
                )
            }
        };
        let Some(first) = c.args.first() else {
            return refuse(NAME, line, "`np.histogram` needs the data");
        };
        let Val::Array(a) = self.expr(r, first)? else {
            return refuse(NAME, line, "`np.histogram` of a scalar");
        };
        if a.elem.is_complex() {
            return refuse(
                NAME,
                line,
                "`np.histogram` of complex data (NumPy orders it lexicographically)",
            );
        }
        // Edges written as `np.arange(…)` of integer constants: bins of an
        // integer width from the first edge to the last. NumPy bins an array
        // of edges by `searchsorted`; its equal-bin arithmetic, corrected
        // against `linspace` edges, bins the same way, and here those edges
        // are the same numbers. `range=` is ignored, as NumPy ignores it.
        let arange = bins.and_then(|b| self.arange_edges(b));
        let n = match (arange, bins) {
            (Some((_, _, m)), _) => i64(m - 1),
            (None, None) => i64(10),
            (None, Some(b)) => match self.expr(r, b)? {
                Val::Scalar(e, t, _) if t.is_int() => cast_to(e, t, ScalarType::I64),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`np.histogram(…, bins={})`: port takes a number of equal bins, not an array of edges",
                            self.src.text_of(b)
                        ),
                    )
                }
            },
        };
        let n = self.bind_host("bins", ScalarType::I64, n);
        let w = match weights {
            None => None,
            Some(e) => match self.expr(r, e)? {
                Val::Array(w) if w.elem.is_float() && w.ndim() == a.ndim() => Some(w),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`np.histogram(…, weights={})`: port takes a float array of the data's shape",
                            self.src.text_of(e)
                        ),
                    )
                }
            },
        };

        // The range, as NumPy's Python floats.
        let f64t = ScalarType::F64;
        let (lo, hi) = match (arange, range) {
            (Some((start, step, m)), _) => {
                (f64(start as f64), f64((start + (m - 1) * step) as f64))
            }
            (None, Some(ast::Expr::Tuple(t))) if t.elts.len() == 2 => {
                let lo = self.scalar_f64(r, &t.elts[0], line)?;
                let hi = self.scalar_f64(r, &t.elts[1], line)?;
                (lo, hi)
            }
            (None, Some(other)) if !matches!(other, ast::Expr::Constant(_)) => {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`np.histogram(…, range={})`: write the range as a pair `(lo, hi)`",
                        self.src.text_of(other)
                    ),
                )
            }
            _ => {
                let Val::Scalar(lo, tl, _) =
                    self.reduce(r, Reduce::Min, Val::Array(a.clone()), line)?
                else {
                    unreachable!("a whole reduction is a scalar")
                };
                let Val::Scalar(hi, th, _) =
                    self.reduce(r, Reduce::Max, Val::Array(a.clone()), line)?
                else {
                    unreachable!("a whole reduction is a scalar")
                };
                (cast_to(lo, tl, f64t), cast_to(hi, th, f64t))
            }
        };
        let lo = self.bind_host("lo", f64t, lo);
        let hi = self.bind_host("hi", f64t, hi);
        // Equal ends are widened by one half each way.
        let same = cmp(CmpOp::Eq, var(&lo), var(&hi));
        let lo = self.bind_host(
            "first_edge",
            f64t,
            select(same.clone(), sub(var(&lo), f64(0.5)), var(&lo)),
        );
        let hi = self.bind_host(
            "last_edge",
            f64t,
            select(same, add(var(&hi), f64(0.5)), var(&hi)),
        );
        let step = self.bind_host(
            "bin_width",
            f64t,
            div(sub(var(&hi), var(&lo)), cast(f64t, var(&n))),
        );
        // Edges in `np.result_type(lo, hi, a)`: float32 data keeps float32.
        let edge_t = if a.elem == ScalarType::F32 {
            ScalarType::F32
        } else {
            f64t
        };
        let edge = |k: Expr| -> Expr {
            select(
                cmp(CmpOp::Eq, k.clone(), var(&n)),
                cast_to(var(&hi), f64t, edge_t),
                cast_to(add(mul(cast(f64t, k), var(&step)), var(&lo)), f64t, edge_t),
            )
        };

        // The counts (int64, or the weights' dtype), zero-filled.
        let count_t = w.as_ref().map_or(ScalarType::I64, |w| w.elem);
        let counts = self.fresh("hist");
        let counts_ty = ArrayType {
            elem: count_t,
            ndim: 1,
            contiguous: true,
        };
        self.steps.push(HostStep::Alloc {
            name: counts.clone(),
            elem: count_t,
            shape: vec![var(&n)],
            fill: Fill::Value(lit(count_t, 0.0)),
        });
        self.host.insert(counts.clone(), HostBind::Array(counts_ty));

        // One thread per element.
        let mut seen: Vec<&Expr> = vec![&a.body];
        seen.extend(a.shape.iter());
        if let Some(w) = &w {
            seen.push(&w.body);
        }
        let vars = self.element_vars(a.ndim(), &seen);
        let idx: Vec<Expr> = vars.iter().map(|v| var(v)).collect();
        let x = self.fresh("x");
        let b = self.fresh("bin");
        let x_t = if a.elem.is_float() { a.elem } else { f64t };
        let xv = || var(&x);
        let lo_x = cast_to(var(&lo), f64t, x_t);
        let hi_x = cast_to(var(&hi), f64t, x_t);
        // ((x - lo) in the data's float type) / (hi - lo) * n, in float64.
        let scaled = mul(
            div(
                cast_to(sub(xv(), lo_x.clone()), x_t, f64t),
                sub(var(&hi), var(&lo)),
            ),
            cast(f64t, var(&n)),
        );
        let last = sub(var(&n), i64(1));
        let edge_x = |k: Expr| cast_to(edge(k), edge_t, x_t);
        let one = match &w {
            None => lit(count_t, 1.0),
            Some(w) => cast_to(w.element(&idx), w.elem, count_t),
        };
        let body = vec![
            let_(&x, x_t, cast_to(a.element(&idx), a.elem, x_t)),
            if_(
                and(cmp(CmpOp::Ge, xv(), lo_x), cmp(CmpOp::Le, xv(), hi_x)),
                vec![
                    let_(&b, ScalarType::I64, cast(ScalarType::I64, scaled)),
                    if_(
                        cmp(CmpOp::Eq, var(&b), var(&n)),
                        vec![assign(&b, last.clone())],
                        vec![],
                    ),
                    if_(
                        cmp(CmpOp::Lt, xv(), edge_x(var(&b))),
                        vec![assign(&b, sub(var(&b), i64(1)))],
                        vec![],
                    ),
                    if_(
                        and(
                            cmp(CmpOp::Ge, xv(), edge_x(add(var(&b), i64(1)))),
                            cmp(CmpOp::Ne, var(&b), last),
                        ),
                        vec![assign(&b, add(var(&b), i64(1)))],
                        vec![],
                    ),
                    Stmt::Eval(Expr::Atomic(
                        AtomicOp::Add,
                        ElemRef {
                            array: counts.clone(),
                            indices: vec![var(&b)],
                        },
                        Box::new(one),
                    )),
                ],
                vec![],
            ),
        ];
        let fname = self.fn_name.clone();
        let kname = format!("{}_count", crate::lower::context::sanitize("histogram"));
        self.launch_over(
            &vars,
            &a.shape,
            body,
            &kname,
            format!(
                "Line {line} of `{fname}`: `np.histogram`: each element finds its bin (NumPy's arithmetic, edges included) and adds {} with an atomic.",
                if w.is_some() { "its weight" } else { "one" }
            ),
        )?;
        self.log.applied(
            NAME,
            format!(
                "`np.histogram` at line {line}: {}one kernel of atomic adds into the bins",
                if range.is_none() && arange.is_none() {
                    "the range from two whole-array reductions, then "
                } else {
                    ""
                }
            ),
        );

        let edges = match (arange, bins) {
            // The edges as given: the int64 `np.arange` itself.
            (Some(_), Some(b)) => match self.expr(r, b)? {
                Val::Array(e) => e,
                _ => unreachable!("np.arange is an array"),
            },
            _ => ArrVal {
                shape: vec![add(var(&n), i64(1))],
                elem: edge_t,
                body: edge(var(&ph(0))),
                computed: true,
            },
        };
        let hist = ArrVal::named(&counts, counts_ty);
        let hist = if density {
            // counts / width / total, in float64.
            let Val::Scalar(total, tt, _) =
                self.reduce(r, Reduce::Sum, Val::Array(hist.clone()), line)?
            else {
                unreachable!("a whole reduction is a scalar")
            };
            let total = self.bind_host("total", f64t, cast_to(total, tt, f64t));
            let k = var(&ph(0));
            let width = sub(
                cast_to(edge(add(k.clone(), i64(1))), edge_t, f64t),
                cast_to(edge(k), edge_t, f64t),
            );
            hist.map(f64t, |e| {
                div(div(cast_to(e, count_t, f64t), width), var(&total))
            })
        } else {
            hist
        };
        Ok(Val::Tuple(vec![Val::Array(hist), Val::Array(edges)]))
    }

    /// `np.arange(stop)`, `np.arange(start, stop[, step])` of integer
    /// constants with at least two values (one bin), a positive step and
    /// values a float64 holds exactly: `(start, step, number of values)`.
    fn arange_edges(&self, b: &ast::Expr) -> Option<(i64, i64, i64)> {
        let ast::Expr::Call(call) = b else {
            return None;
        };
        if self.src.resolve(&call.func).as_deref() != Some("numpy.arange")
            || !call.keywords.is_empty()
        {
            return None;
        }
        let ints: Vec<i64> = call
            .args
            .iter()
            .map(|a| match self.src.eval_const(a) {
                Some(crate::source::Const::Int(v)) => Some(v),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let (start, stop, step) = match ints[..] {
            [stop] => (0, stop, 1),
            [start, stop] => (start, stop, 1),
            [start, stop, step] => (start, stop, step),
            _ => return None,
        };
        const EXACT: i64 = 1 << 53;
        if step <= 0 || stop <= start || start.abs() >= EXACT || stop.abs() >= EXACT {
            return None;
        }
        let m = (stop - start + step - 1) / step;
        (m >= 2).then_some((start, step, m))
    }

    /// `name = value` on the host, a fresh name.
    fn bind_host(&mut self, base: &str, ty: ScalarType, value: Expr) -> String {
        let name = self.fresh(base);
        let value = self.hostify(value);
        self.steps.push(HostStep::Scalar {
            name: name.clone(),
            ty,
            value,
        });
        self.host.insert(name.clone(), HostBind::Scalar(ty));
        name
    }

    /// A host scalar argument as float64 (`range=(0, 1)`).
    fn scalar_f64(&mut self, r: &mut Region, e: &ast::Expr, line: u32) -> Lower<Expr> {
        match self.expr(r, e)? {
            Val::Scalar(x, t, _) if !t.is_complex() => Ok(cast_to(x, t, ScalarType::F64)),
            _ => refuse(
                NAME,
                line,
                format!("`np.histogram`: `{}` must be a number", self.src.text_of(e)),
            ),
        }
    }
}
