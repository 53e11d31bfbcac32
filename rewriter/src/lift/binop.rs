//! Binary operators of two lifted values: scalar arithmetic with Python's
//! and NumPy's promotion, comparisons, and array operands handed to the
//! array-expression templates (broadcasting). `**` of scalars is spelled
//! out by `pow`.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, Literal, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, lit, promote, py_mod};
use crate::lower::context::Lowerer;
use crate::numpy::array_expr::{self, Val};

impl<'a> Lowerer<'a> {
    pub(super) fn lift_binop(
        &mut self,
        op: ast::Operator,
        a: &Val,
        b: &Val,
        line: u32,
    ) -> Lower<Val> {
        use ast::Operator as O;
        let mut failed: Option<&'static str> = None;
        let out = array_expr::map2(a, b, &mut |(x, tx, wx), (y, ty, wy)| {
            let t = promote(tx, wx, ty, wy);
            // Arithmetic on bools: NumPy's when either is a NumPy bool (an
            // array's element, a comparison of them): `+` is `or`, `*` is
            // `and`, `-` raises, `//`, `%` and `**` give int8. Python's on
            // two Python bools (`True + True` is 2).
            let numpy_bools = t == ScalarType::Bool && !(wx && wy);
            if numpy_bools {
                match op {
                    O::Add => return (binary(BinOp::Or, x, y), t),
                    O::Mult => return (binary(BinOp::And, x, y), t),
                    O::Sub => {
                        failed = Some("`-` on NumPy bools (NumPy raises a TypeError)");
                        return (x, t);
                    }
                    _ => {}
                }
            }
            let t = match t {
                ScalarType::Bool if numpy_bools && matches!(op, O::FloorDiv | O::Mod | O::Pow) => {
                    ScalarType::I8
                }
                ScalarType::Bool
                    if matches!(
                        op,
                        O::Add | O::Sub | O::Mult | O::FloorDiv | O::Mod | O::Pow
                    ) =>
                {
                    ScalarType::I64
                }
                t => t,
            };
            let (cx, cy) = (cast_to(x.clone(), tx, t), cast_to(y.clone(), ty, t));
            if t.is_complex() && !matches!(op, O::Add | O::Sub | O::Mult | O::Div | O::Pow) {
                // NumPy raises a TypeError for `//`, `%` and bitwise
                // operators on complex numbers.
                failed = Some("this operator on complex numbers (NumPy refuses it too)");
                return (cx, t);
            }
            match op {
                O::Add => (add(cx, cy), t),
                O::Sub => (sub(cx, cy), t),
                O::Mult => (mul(cx, cy), t),
                O::Div => {
                    let ft = if t.is_float() || t.is_complex() {
                        t
                    } else {
                        ScalarType::F64
                    };
                    (div(cast_to(x, tx, ft), cast_to(y, ty, ft)), ft)
                }
                O::FloorDiv => (binary(BinOp::FloorDiv, cx, cy), t),
                O::Mod => (py_mod(cx, cy, t), t),
                O::Pow => pow(x, tx, wx, y, ty, wy, &mut failed),
                O::BitAnd | O::BitOr | O::BitXor if t == ScalarType::Bool => (
                    match op {
                        O::BitAnd => binary(BinOp::And, cx, cy),
                        O::BitOr => binary(BinOp::Or, cx, cy),
                        _ => cmp(CmpOp::Ne, cx, cy),
                    },
                    t,
                ),
                O::BitAnd | O::BitOr | O::BitXor | O::LShift | O::RShift if t.is_int() => (
                    binary(
                        match op {
                            O::BitAnd => BinOp::BitAnd,
                            O::BitOr => BinOp::BitOr,
                            O::BitXor => BinOp::BitXor,
                            O::LShift => BinOp::Shl,
                            _ => BinOp::Shr,
                        },
                        cx,
                        cy,
                    ),
                    t,
                ),
                _ => {
                    failed = Some("this operator (`@` or a bitwise operator on floats)");
                    (cx, t)
                }
            }
        });
        if let Some(what) = failed {
            return refuse(
                array_expr::NAME,
                line,
                format!("{what} has no element-by-element kernel form in port yet"),
            );
        }
        if matches!(op, O::MatMult) {
            return refuse(
                array_expr::NAME,
                line,
                "`@` (matrix product): write the loops, or keep it in CuPy/cuBLAS",
            );
        }
        let out = out.ok_or_else(|| {
            Box::new(crate::error::Reason::new(
                "frontend",
                line,
                "arithmetic on tuples",
            ))
        })?;
        if matches!((a, b), (Val::Array(_), _) | (_, Val::Array(_))) {
            self.log.applied(
                array_expr::NAME,
                format!("elementwise arithmetic (line {line})"),
            );
        }
        Ok(out)
    }
}

fn pow(
    x: Expr,
    tx: ScalarType,
    wx: bool,
    y: Expr,
    ty: ScalarType,
    wy: bool,
    failed: &mut Option<&'static str>,
) -> (Expr, ScalarType) {
    let t = promote(tx, wx, ty, wy);
    // NumPy's bools to a power are int8; two Python bools, a Python int.
    let t = match t {
        ScalarType::Bool if !(wx && wy) => ScalarType::I8,
        ScalarType::Bool => ScalarType::I64,
        t => t,
    };
    // Small integer powers: repeated products (exact, like Python).
    if let Expr::Lit(Literal::I64(k)) = y {
        if (1..=4).contains(&k) {
            let b = cast_to(x, tx, t);
            let mut acc = b.clone();
            for _ in 1..k {
                acc = mul(acc, b.clone());
            }
            return (acc, t);
        }
        if k == 0 {
            return (lit(t, 1.0), t);
        }
    }
    if let Expr::Lit(Literal::F64(v)) = y {
        if v == 2.0 {
            let ft = if t.is_float() || t.is_complex() {
                t
            } else {
                ScalarType::F64
            };
            let b = cast_to(x, tx, ft);
            return (mul(b.clone(), b), ft);
        }
    }
    if t.is_int() {
        *failed = Some("an integer power with a variable or negative exponent");
        return (x, t);
    }
    (
        math(
            port_codegen::ir::MathFn::Pow,
            vec![cast_to(x, tx, t), cast_to(y, ty, t)],
        ),
        t,
    )
}
