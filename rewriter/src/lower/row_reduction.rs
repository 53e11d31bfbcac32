//! **row_reduction**: a reduction inside per-thread work — `x[i, :].mean()`,
//! `.sum()`, `.max()`, `.min()`, `.prod()`, `np.dot(a[i], b)` — becomes a
//! thread-private loop into a local, before the statement that uses it (the
//! seed's `normalize`: "compute mean manually", then the division as a loop).

use port_codegen::ir::build::*;
use port_codegen::ir::ScalarType;

use crate::error::Lower;
use crate::ir_util::cast_to;
use crate::lower::context::{combine, identity, Lowerer, Reduce, Region};
use crate::numpy::array_expr::{self, ArrVal, Val};

pub const NAME: &str = "row_reduction";

/// The whole-array reduction a NumPy (or built-in) name calls.
pub fn reduce_name(name: &str) -> Option<Reduce> {
    Some(match name {
        "numpy.sum" => Reduce::Sum,
        "numpy.mean" | "numpy.average" => Reduce::Mean,
        "numpy.max" | "numpy.amax" => Reduce::Max,
        "numpy.min" | "numpy.amin" => Reduce::Min,
        "numpy.prod" => Reduce::Prod,
        _ => return None,
    })
}

/// The type of Python's built-in `sum` of an array of `t`: `0 + x[0] +
/// x[1] + …` adds the rows to the int 0 one after another, so the weak 0
/// takes the element type (an int8 total is an int8, and wraps), except
/// that `0 + True` is NumPy's default int.
pub fn builtin_sum_type(t: ScalarType) -> ScalarType {
    if t == ScalarType::Bool {
        ScalarType::I64
    } else {
        t
    }
}

/// The accumulator type of a reduction over elements of type `t`.
pub fn acc_type(op: Reduce, t: ScalarType) -> ScalarType {
    match op {
        Reduce::Mean => {
            if t.is_float() || t.is_complex() {
                t
            } else {
                ScalarType::F64
            }
        }
        // NumPy sums and multiplies integers in 64 bits (uint64 for
        // unsigned ones).
        _ if t.is_unsigned() && op != Reduce::Max && op != Reduce::Min => ScalarType::U64,
        // The max and min of bools are bools (their `any` and `all`).
        Reduce::Max | Reduce::Min => t,
        _ if t == ScalarType::Bool || t.is_int() => ScalarType::I64,
        _ => t,
    }
}

impl Lowerer<'_> {
    pub(crate) fn row_reduction(
        &mut self,
        r: &mut Region,
        op: Reduce,
        av: &ArrVal,
        line: u32,
    ) -> Lower<Val> {
        let t = acc_type(op, av.elem);
        let name = self.local_temp(
            r,
            match op {
                Reduce::Mean => "mean",
                Reduce::Sum => "total",
                Reduce::Max => "largest",
                Reduce::Min => "smallest",
                Reduce::Prod => "product",
            },
        );
        r.push(let_(&name, t, identity(op.op(), t)));
        let mut seen: Vec<&port_codegen::ir::Expr> = vec![&av.body];
        seen.extend(av.shape.iter());
        let vars = self.loop_vars(r, 1, av.ndim(), &seen);
        let elem = cast_to(array_expr::at_vars(&av.body, &vars), av.elem, t);
        let update = assign(&name, combine(op.op(), var(&name), array_expr::tidy(&elem)));
        for s in array_expr::element_loops(&vars, &av.shape, vec![update]) {
            r.push(s);
        }
        if op == Reduce::Mean {
            r.push(assign(
                &name,
                div(var(&name), cast_to(av.size(), ScalarType::I64, t)),
            ));
        }
        self.log.applied(
            NAME,
            format!("`{}` as a thread-private loop (line {line})", op.word()),
        );
        Ok(Val::scalar(var(&name), t))
    }
}
