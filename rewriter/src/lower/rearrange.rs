//! `np.roll`, `np.indices`, `np.tile` and `np.repeat` at host level, as element templates (part of
//! **array_expr**; the templates themselves are
//! [`crate::numpy::rearrange`]'s): the arguments are read with NumPy's
//! rules and anything else is refused with the construct and its line.
//!
//! - `np.roll(a, shift, axis=None)`: `shift` an integer (a literal, a
//!   module constant or a host scalar, of any sign) or a tuple of them,
//!   `axis` an integer constant or a tuple of them, broadcast together as
//!   NumPy does (shifts of one axis add up); without `axis` the array is
//!   rolled flattened and reshaped back.
//! - `np.indices(dimensions, dtype=int, sparse=False)`: the dense grid of
//!   shape `(len(dimensions), *dimensions)`, or with `sparse=True` one
//!   open grid per axis.
//! - `np.tile(A, reps)`: `reps` an integer or a tuple of them (literals,
//!   constants or host scalars); `np.repeat(a, repeats, axis=None)` with
//!   one integer count (not an array of counts) and a constant axis, or
//!   none (flattened first); `np.diff(a, n=1, axis=-1)` with constant `n`
//!   and `axis`, as the difference of two shifted windows.

use port_codegen::ir::build::*;
use port_codegen::ir::{Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{axis_index, Lowerer, Recurse, Region};
use crate::lower::creation::reshape;
use crate::numpy::array_expr::{self, ph, ArrVal, Val};
use crate::numpy::rearrange;
use crate::source::Const;

impl Lowerer<'_> {
    /// `np.roll(…)` or `np.indices(…)` (`name` resolved, `numpy.` first)
    /// as a template; `None` for any other function.
    pub(crate) fn rearrange_call(
        &mut self,
        r: &mut Region,
        name: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<Val>> {
        let out = match name {
            "numpy.roll" => self.roll_call(r, c, line)?,
            "numpy.indices" => self.indices_call(r, c, line)?,
            "numpy.tile" => self.tile_call(r, c, line)?,
            "numpy.repeat" => self.repeat_call(r, c, line)?,
            "numpy.diff" => self.diff_call(r, c, line)?,
            _ => return Ok(None),
        };
        let short = name.trim_start_matches("numpy.");
        self.log.applied(
            array_expr::NAME,
            format!("`np.{short}` as an element template (line {line})"),
        );
        Ok(Some(out))
    }

    /// Positional arguments after `first` and keywords by name, for a call
    /// whose parameters are `names` (in order); a keyword NumPy does not
    /// take, or one given twice, is refused.
    fn call_args<'c>(
        &self,
        c: &'c ast::ExprCall,
        what: &str,
        names: &[&str],
        line: u32,
    ) -> Lower<Vec<Option<&'c ast::Expr>>> {
        if c.args.len() > names.len() {
            return refuse(
                array_expr::NAME,
                line,
                format!("`{what}` takes at most {} arguments", names.len()),
            );
        }
        let mut out: Vec<Option<&ast::Expr>> = names.iter().map(|_| None).collect();
        for (k, a) in c.args.iter().enumerate() {
            out[k] = Some(a);
        }
        for kw in &c.keywords {
            let key = kw.arg.as_ref().map(|a| a.as_str()).unwrap_or("**");
            match names.iter().position(|n| *n == key) {
                Some(k) if out[k].is_none() => out[k] = Some(&kw.value),
                Some(_) => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{what}` got `{key}` twice"),
                    )
                }
                None => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{what}`: keyword `{key}` is not supported"),
                    )
                }
            }
        }
        Ok(out)
    }

    /// `np.roll(a, shift, axis=None)`.
    fn roll_call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let args = self.call_args(c, "np.roll", &["a", "shift", "axis"], line)?;
        let (Some(a), Some(shift)) = (args[0], args[1]) else {
            return refuse(
                array_expr::NAME,
                line,
                "`np.roll` needs an array and a shift",
            );
        };
        let av = self.array_arg(r, a, "np.roll", line)?;
        // The shifts: one integer or a sequence of them.
        let shift_items = items(shift);
        let shift_is_seq = matches!(shift, ast::Expr::Tuple(_) | ast::Expr::List(_));
        let mut shifts = Vec::new();
        for s in &shift_items {
            match self.expr(r, s)? {
                // `int(shift)`, as NumPy takes it (a float truncates).
                Val::Scalar(e, t, _) if t.is_int() || t.is_float() || t == ScalarType::Bool => {
                    shifts.push(cast_to(e, t, ScalarType::I64))
                }
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`np.roll`: the shift `{}` must be an integer or a tuple of integers",
                            self.src.text_of(*s)
                        ),
                    )
                }
            }
        }
        let Some(axis) = args[2].filter(|e| !crate::pyast::is_none_constant(e)) else {
            if av.ndim() == 1 {
                let pairs: Vec<(Expr, usize)> = shifts.into_iter().map(|s| (s, 0)).collect();
                return Ok(Val::Array(rearrange::roll(&av, &pairs)));
            }
            // Flattened, rolled along its one axis, reshaped back.
            let flat = reshape(&av, vec![av.size()]);
            let pairs: Vec<(Expr, usize)> = shifts.into_iter().map(|s| (s, 0)).collect();
            let rolled = rearrange::roll(&flat, &pairs);
            let mut out = reshape(&rolled, av.shape.clone());
            out.computed = true;
            return Ok(Val::Array(out));
        };
        let axis_items = items(axis);
        let axis_is_seq = matches!(axis, ast::Expr::Tuple(_) | ast::Expr::List(_));
        let n = av.ndim() as i64;
        let mut axes = Vec::new();
        for e in &axis_items {
            match self.src.eval_const(e) {
                Some(Const::Int(k)) => {
                    if let Some(a) = axis_index(k, av.ndim()) {
                        axes.push(a);
                        continue;
                    }
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`np.roll`: axis {k} is out of bounds for an array of dimension {n}"
                        ),
                    );
                }
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                        "`np.roll`: the axis `{}` must be an integer constant or a tuple of them",
                        self.src.text_of(*e)
                    ),
                    )
                }
            }
        }
        // NumPy broadcasts the shifts against the axes.
        let pairs: Vec<(Expr, usize)> = match (shift_is_seq, axis_is_seq) {
            (true, true) if shifts.len() != axes.len() => {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!(
                        "`np.roll`: {} shifts for {} axes (NumPy raises: they must broadcast)",
                        shifts.len(),
                        axes.len()
                    ),
                )
            }
            (true, true) => shifts.into_iter().zip(axes).collect(),
            (false, _) => axes.into_iter().map(|a| (shifts[0].clone(), a)).collect(),
            (true, false) => shifts.into_iter().map(|s| (s, axes[0])).collect(),
        };
        Ok(Val::Array(rearrange::roll(&av, &pairs)))
    }

    /// An array argument of `what` (`a`), or a refusal naming it.
    fn array_arg(&mut self, r: &mut Region, a: &ast::Expr, what: &str, line: u32) -> Lower<ArrVal> {
        match self.expr(r, a)? {
            Val::Array(av) => Ok(av),
            _ => refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{what}` of `{}`, which is not an array",
                    self.src.text_of(a)
                ),
            ),
        }
    }

    /// An axis of `what` that must be an integer constant in `-ndim..ndim`,
    /// counted from the front.
    fn const_axis(&self, e: &ast::Expr, ndim: usize, what: &str, line: u32) -> Lower<usize> {
        let n = ndim as i64;
        match self.src.eval_const(e).and_then(|c| match c {
            Const::Int(k) => axis_index(k, ndim),
            _ => None,
        }) {
            Some(a) => Ok(a),
            None => refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{what}`: the axis `{}` must be an integer constant within the array's {n} dimensions",
                    self.src.text_of(e)
                ),
            ),
        }
    }

    /// A count of `what`: an integer (a literal, a constant or a host
    /// scalar) as `i64`; a negative literal is refused as NumPy raises.
    fn count_arg(&mut self, r: &mut Region, e: &ast::Expr, what: &str, line: u32) -> Lower<Expr> {
        if let Some(Const::Int(k)) = self.src.eval_const(e) {
            if k < 0 {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`{what}`: a negative count ({k}; NumPy raises)"),
                );
            }
            return Ok(i64(k));
        }
        match self.expr(r, e)? {
            Val::Scalar(x, t, _) if t.is_int() => Ok(cast_to(x, t, ScalarType::I64)),
            _ => refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{what}`: the count `{}` must be an integer (an array of counts is not supported)",
                    self.src.text_of(e)
                ),
            ),
        }
    }

    /// `np.tile(A, reps)`.
    fn tile_call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let args = self.call_args(c, "np.tile", &["A", "reps"], line)?;
        let (Some(a), Some(reps)) = (args[0], args[1]) else {
            return refuse(
                array_expr::NAME,
                line,
                "`np.tile` needs an array and `reps`",
            );
        };
        let av = self.array_arg(r, a, "np.tile", line)?;
        let mut counts = Vec::new();
        for e in items(reps) {
            counts.push(self.count_arg(r, e, "np.tile", line)?);
        }
        // Fewer reps than axes: ones in front, as NumPy pads them.
        while counts.len() < av.ndim() {
            counts.insert(0, i64(1));
        }
        if counts.len() > port_codegen::ir::MAX_DIMS as usize {
            return refuse(
                array_expr::NAME,
                line,
                "`np.tile` to more than 4 dimensions",
            );
        }
        Ok(Val::Array(rearrange::tile(&av, &counts)))
    }

    /// `np.repeat(a, repeats, axis=None)`.
    fn repeat_call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let args = self.call_args(c, "np.repeat", &["a", "repeats", "axis"], line)?;
        let (Some(a), Some(times)) = (args[0], args[1]) else {
            return refuse(
                array_expr::NAME,
                line,
                "`np.repeat` needs an array and `repeats`",
            );
        };
        let av = self.array_arg(r, a, "np.repeat", line)?;
        let times = self.count_arg(r, times, "np.repeat", line)?;
        let Some(axis) = args[2].filter(|e| !crate::pyast::is_none_constant(e)) else {
            // Flattened first, as NumPy does without an axis.
            let flat = if av.ndim() == 1 {
                av
            } else {
                reshape(&av, vec![av.size()])
            };
            return Ok(Val::Array(rearrange::repeat(&flat, &times, 0)));
        };
        let axis = self.const_axis(axis, av.ndim(), "np.repeat", line)?;
        Ok(Val::Array(rearrange::repeat(&av, &times, axis)))
    }

    /// `np.diff(a, n=1, axis=-1)`: `a[…, 1:] - a[…, :-1]` along `axis`,
    /// `n` times (`n` a constant), with NumPy's promotion of `-` (for
    /// booleans NumPy takes `!=`).
    fn diff_call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let args = self.call_args(c, "np.diff", &["a", "n", "axis"], line)?;
        let Some(a) = args[0] else {
            return refuse(array_expr::NAME, line, "`np.diff` needs an array");
        };
        let mut av = self.array_arg(r, a, "np.diff", line)?;
        let times = match args[1].map(|e| self.src.eval_const(e)) {
            None => 1,
            Some(Some(Const::Int(k))) if k >= 0 => k,
            Some(_) => {
                return refuse(
                    array_expr::NAME,
                    line,
                    "`np.diff`: `n` must be a non-negative integer constant",
                )
            }
        };
        if av.ndim() == 0 {
            return refuse(
                array_expr::NAME,
                line,
                "`np.diff` of a 0-d array (NumPy raises)",
            );
        }
        let axis = match args[2] {
            None => av.ndim() - 1,
            Some(e) => self.const_axis(e, av.ndim(), "np.diff", line)?,
        };
        for _ in 0..times {
            let (later, earlier) = rearrange::diff_operands(&av, axis);
            av = if av.elem == ScalarType::Bool {
                let mut ne = later.clone();
                ne.body = cmp(port_codegen::ir::CmpOp::Ne, later.body, earlier.body);
                ne
            } else {
                match self.binop(
                    ast::Operator::Sub,
                    &Val::Array(later),
                    &Val::Array(earlier),
                    line,
                )? {
                    Val::Array(d) => d,
                    _ => {
                        return refuse(
                            array_expr::NAME,
                            line,
                            "`np.diff` of a value that is not an array",
                        )
                    }
                }
            };
            av.computed = true;
        }
        Ok(Val::Array(av))
    }

    /// `np.indices(dimensions, dtype=int, sparse=False)`.
    fn indices_call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let args = self.call_args(c, "np.indices", &["dimensions", "dtype", "sparse"], line)?;
        let Some(dims) = args[0] else {
            return refuse(array_expr::NAME, line, "`np.indices` needs the dimensions");
        };
        let dims = match dims {
            // `np.indices(())`: shape (0,).
            ast::Expr::Tuple(t) if t.elts.is_empty() => Vec::new(),
            e => self.shape_arg(r, e, line)?,
        };
        let elem = match args[1] {
            None => ScalarType::I64,
            Some(e) => match self.dtype_value(r, e) {
                Some(t) => t,
                None => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`np.indices`: dtype `{}` is not supported",
                            self.src.text_of(e)
                        ),
                    )
                }
            },
        };
        let sparse = match args[2] {
            None => false,
            Some(e) => match self.src.eval_const(e) {
                Some(Const::Bool(b)) => b,
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "`np.indices`: `sparse` must be `True` or `False` as written",
                    )
                }
            },
        };
        let k = dims.len();
        if sparse {
            if k == 0 {
                return Ok(Val::Tuple(Vec::new()));
            }
            crate::error::check_rank(array_expr::NAME, line, k)?;
            // Part d has extent dims[d] along axis d and 1 elsewhere.
            return Ok(Val::Tuple(
                (0..k)
                    .map(|d| {
                        let mut shape = vec![i64(1); k];
                        shape[d] = dims[d].clone();
                        Val::Array(ArrVal {
                            shape,
                            elem,
                            body: cast_to(var(&ph(d)), ScalarType::I64, elem),
                            computed: false,
                        })
                    })
                    .collect(),
            ));
        }
        crate::error::check_rank(array_expr::NAME, line, k + 1)?;
        Ok(Val::Array(rearrange::indices(&dims, elem)))
    }
}

/// The items of a tuple or list argument, or the one argument itself.
fn items(e: &ast::Expr) -> Vec<&ast::Expr> {
    match e {
        ast::Expr::Tuple(t) => t.elts.iter().collect(),
        ast::Expr::List(l) => l.elts.iter().collect(),
        one => vec![one],
    }
}
