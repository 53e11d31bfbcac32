//! Binary operators of two lifted values: scalar arithmetic with Python's
//! and NumPy's promotion, comparisons, and array operands handed to the
//! array-expression templates (broadcasting). `**` of scalars is spelled
//! out by `pow`.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, Literal, ScalarType};
use rustpython_parser::ast;

use crate::dtypes::{self, BinForm};
use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, lit, py_mod};
use crate::lower::context::Lowerer;
use crate::lower::python_ints;
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
        let data = &self.data_ints;
        let out = array_expr::map2(a, b, &mut |(x, tx, wx), (y, ty, wy)| {
            let rule = match dtypes::binop(op, (tx, wx), (ty, wy)) {
                Ok(rule) => rule,
                Err(what) => {
                    failed = Some(what);
                    return (x, tx);
                }
            };
            let t = rule.operands;
            // Python ints from the data: `+ - *` checked for overflow.
            let checked = wx
                && wy
                && t == ScalarType::I64
                && rule.form == BinForm::Arith
                && (python_ints::data_derived(&x, data) || python_ints::data_derived(&y, data));
            let arith = |op: BinOp, cx: Expr, cy: Expr| match op.checked() {
                Some(c) if checked => binary(c, cx, cy),
                _ => binary(op, cx, cy),
            };
            let (cx, cy) = (cast_to(x.clone(), tx, t), cast_to(y.clone(), ty, t));
            match (rule.form, op) {
                (BinForm::Or, _) => (binary(BinOp::Or, cx, cy), t),
                (BinForm::And, _) => (binary(BinOp::And, cx, cy), t),
                (BinForm::Xor, _) => (cmp(CmpOp::Ne, cx, cy), t),
                (_, O::Add) => (arith(BinOp::Add, cx, cy), t),
                (_, O::Sub) => (arith(BinOp::Sub, cx, cy), t),
                (_, O::Mult) => (arith(BinOp::Mul, cx, cy), t),
                (_, O::Div) => {
                    let ft = rule.result;
                    (div(cast_to(x, tx, ft), cast_to(y, ty, ft)), ft)
                }
                (_, O::FloorDiv) => (binary(BinOp::FloorDiv, cx, cy), t),
                (_, O::Mod) => (py_mod(cx, cy, t), t),
                (_, O::Pow) => pow(x, tx, y, ty, t, checked, &mut failed),
                (_, O::BitAnd) => (binary(BinOp::BitAnd, cx, cy), t),
                (_, O::BitOr) => (binary(BinOp::BitOr, cx, cy), t),
                (_, O::BitXor) => (binary(BinOp::BitXor, cx, cy), t),
                (_, O::LShift) => (binary(BinOp::Shl, cx, cy), t),
                (_, O::RShift) => (binary(BinOp::Shr, cx, cy), t),
                (_, O::MatMult) => (cx, t),
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

/// `x ** y` in type `t` (the rule's, [`dtypes::binop`]); `checked`: of
/// Python ints from the data, whose products are checked for overflow.
fn pow(
    x: Expr,
    tx: ScalarType,
    y: Expr,
    ty: ScalarType,
    t: ScalarType,
    checked: bool,
    failed: &mut Option<&'static str>,
) -> (Expr, ScalarType) {
    // Small integer powers: repeated products (exact, like Python).
    if let Expr::Lit(Literal::I64(k)) = y {
        if (1..=4).contains(&k) {
            let b = cast_to(x, tx, t);
            let mut acc = b.clone();
            let op = if checked {
                BinOp::CheckedMul
            } else {
                BinOp::Mul
            };
            for _ in 1..k {
                acc = binary(op, acc, b.clone());
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
