//! **sort**: the order statistics `np.sort(a, axis=-1)` and
//! `np.median(a, axis=None)` as library steps of the host schedule
//! ([`HostStep::Library`]), between the kernels, as [`crate::lower::linalg`]
//! runs `np.linalg`'s routines.
//!
//! Sorting is no element template: where each value lands depends on all
//! the others along its axis. The operand is a device array (a plain array
//! as it is, any other value first stored by a kernel); the result is
//! allocated by the wrapper with NumPy's shape and type, and bound like any
//! array (a median of the whole array is a one-element array read back
//! like a reduction's result), so the kernels around the step fuse as they
//! do elsewhere.
//!
//! The meaning is NumPy's: ascending, NaNs last; which algorithm sorts
//! changes no value (`kind=` is accepted), except that `-0.0` and `0.0`
//! compare equal, so their order among themselves may differ from
//! NumPy's (a sign only a later division by them would show). A
//! median is the middle value, or the mean of the two middle ones in the
//! input's float type (float64 for integers and booleans), NaN when a NaN
//! is among the values.
//!
//! Where it runs: `verify` on the host (operands copied back, the result
//! copied over, both counted in the run's transfers); the emitted wrapper
//! with CuPy on the device arrays when CuPy is importable and they live on
//! a GPU, else NumPy on host copies.
//!
//! Refused, with the line: a call inside a parallel loop or a device
//! function, complex values (NumPy orders them by real then imaginary part,
//! NaNs by where they sit), an axis that is not a constant,
//! `np.sort(…, order=…)`, `np.median(…, out=…)`, `keepdims=True` and
//! `overwrite_input=True` (NumPy may then leave the input partly sorted).

use port_codegen::ir::{Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::lower::context::{axis_index, Lowerer, Recurse, Region};
use crate::numpy::array_expr::Val;
use crate::plan::LibraryOp;

pub const NAME: &str = "sort";

/// Whether a resolved call name is one this pass answers for.
pub fn is_order_statistic(name: &str) -> bool {
    matches!(name, "numpy.sort" | "numpy.median")
}

/// The element type of `np.median`'s result for an input of type `t`
/// (`None` for complex input, which port refuses).
pub fn median_type(t: ScalarType) -> Option<ScalarType> {
    match t {
        ScalarType::F32 | ScalarType::F64 => Some(t),
        t if t.is_complex() => None,
        _ => Some(ScalarType::F64),
    }
}

impl Lowerer<'_> {
    /// `np.sort(a, axis=-1, kind=None)` or `np.median(a, axis=None)`.
    pub(crate) fn order_statistic(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        let name = self.src.resolve(&c.func).unwrap_or_default();
        let median = name == "numpy.median";
        let called = if median { "np.median" } else { "np.sort" };
        if let Some(inside) = crate::lower::linalg::off_the_host(r.kind) {
            return refuse(
                NAME,
                line,
                format!(
                    "`{called}` inside {inside}: it runs on the host schedule between kernels, on whole arrays; call it outside the loop"
                ),
            );
        }
        // Positional: the array, then the axis.
        let Some(first) = c.args.first() else {
            return refuse(NAME, line, format!("`{called}` needs an array"));
        };
        if c.args.len() > 2 {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: port takes the array and the axis of `{called}`",
                    self.src.text_of(c)
                ),
            );
        }
        let mut axis: Option<&ast::Expr> = c.args.get(1);
        for k in &c.keywords {
            let key = k.arg.as_ref().map(|a| a.as_str()).unwrap_or("**");
            let ok = match (key, median) {
                ("axis", _) => {
                    axis = Some(&k.value);
                    true
                }
                // Any algorithm gives the same values.
                ("kind", false) => matches!(
                    &k.value,
                    ast::Expr::Constant(v)
                        if matches!(v.value, ast::Constant::Str(_) | ast::Constant::None)
                ),
                ("keepdims" | "overwrite_input", true) => matches!(
                    self.src.eval_const(&k.value),
                    Some(crate::source::Const::Bool(false))
                ),
                _ => false,
            };
            if !ok {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{}`: keyword `{key}` of `{called}` is not supported here",
                        self.src.text_of(c)
                    ),
                );
            }
        }
        let av = match self.expr(r, first)? {
            Val::Array(av) => av,
            _ => {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{called}` of `{}`, which is not an array",
                        self.src.text_of(first)
                    ),
                )
            }
        };
        if av.elem.is_complex() {
            return refuse(
                NAME,
                line,
                format!(
                    "`{called}` of the complex `{}`: NumPy orders complex values by real, then imaginary part, with NaNs by where they sit; port sorts real values",
                    self.src.text_of(first)
                ),
            );
        }
        let nd = av.ndim();
        // NumPy's defaults: the last axis for a sort, the whole array for
        // a median.
        let axis: Option<usize> = match axis {
            None if median => None,
            None => Some(nd.saturating_sub(1)),
            Some(ast::Expr::Constant(v)) if matches!(v.value, ast::Constant::None) => None,
            Some(e) => match self.src.eval_const(e) {
                Some(crate::source::Const::Int(k)) => match axis_index(k, nd) {
                    Some(a) => Some(a),
                    None => {
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`{called}`: axis {k} is out of bounds for an array of dimension {nd} (NumPy raises)"
                            ),
                        )
                    }
                },
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: the axis of `{called}` must be an integer constant or None",
                            self.src.text_of(e)
                        ),
                    )
                }
            },
        };
        let (out_shape, out_elem): (Vec<Expr>, ScalarType) = match (median, axis) {
            (false, None) => (vec![av.size()], av.elem),
            (false, Some(_)) => (av.shape.clone(), av.elem),
            (true, axis) => {
                let elem = median_type(av.elem).expect("complex refused above");
                let shape = match axis {
                    None => Vec::new(),
                    Some(a) => {
                        let mut s = av.shape.clone();
                        s.remove(a);
                        s
                    }
                };
                (shape, elem)
            }
        };
        let axis = axis.map(|a| a as u8);
        let op = if median {
            LibraryOp::Median { axis }
        } else {
            LibraryOp::Sort { axis }
        };
        let hint = if median { "median" } else { "sorted" };
        let (arg, copied) = self.library_operand(&av, av.elem, hint, line)?;
        let out = self.library_step(op, vec![arg], out_shape, out_elem, hint, line);
        let along = match axis {
            None if median => "of the whole array".to_string(),
            None => "of the flattened array".to_string(),
            Some(a) => format!("along axis {a}"),
        };
        let stored = if copied {
            format!(
                " (`{}` stored into a device array first)",
                self.src.text_of(first)
            )
        } else {
            String::new()
        };
        self.log.applied(
            NAME,
            format!(
                "`{called}` {along} at line {line}: a library step of the host schedule{stored}; the simulator and port's GPU runs compute it on the host, the emitted wrapper with CuPy on the GPU or NumPy"
            ),
        );
        Ok(out)
    }
}
