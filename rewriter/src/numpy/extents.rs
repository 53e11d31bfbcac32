//! Which extents NumPy requires equal, and which are equal by arithmetic.
//!
//! NumPy checks shapes when it runs each statement: `a * b` raises unless
//! every pair of extents is equal or one of them is 1, a slice assignment
//! raises unless the value broadcasts to the slice, `a @ b` raises unless
//! the inner extents agree. Element templates ([`super::array_expr`]) are
//! built before any shape is known, so two extents that are not literally
//! 1 are taken to be equal; [`broadcast_pairs`] and [`store_pairs`] name
//! those pairs, [`constant_difference`] sees through the arithmetic that
//! makes two of them one extent (`x.shape[0] - 2` and `(x.shape[0] - 1) -
//! 1`), and [`extent_text`] prints one as the user would write it. The
//! `shapes` rewrite (`lower::shapes`) turns the pairs into guards.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, Expr, Literal};

pub use crate::numpy::array_expr::constant_difference;
use crate::numpy::array_expr::ArrVal;

/// The named rewrite that guards these extents (`lower::shapes`).
pub const NAME: &str = "shapes";

/// Two extents the kernels take to be equal.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    pub lhs: Expr,
    pub rhs: Expr,
    pub line: u32,
    pub what: String,
}

/// NumPy's phrase for a broadcast that fails.
pub const BROADCAST: &str = "operands could not be broadcast together";
/// NumPy's phrase for a matrix product whose inner extents differ.
pub const MATMUL: &str = "matmul: the operands have a mismatch in their core dimension";
/// NumPy's phrase for a slice assignment whose value does not fit.
pub const STORE: &str = "could not broadcast the value into the slice it is stored to";
/// NumPy's phrase for a boolean mask whose extents are not the array's.
pub const MASK: &str = "boolean index did not match indexed array";

/// The pairs of extents NumPy's broadcasting of `arrays` requires equal:
/// along each axis (right-aligned), every extent that is not a literal 1
/// against the first such one.
pub fn broadcast_pairs(arrays: &[&ArrVal]) -> Vec<(Expr, Expr)> {
    let r = arrays.iter().map(|a| a.ndim()).max().unwrap_or(0);
    let one = i64(1);
    let mut out = Vec::new();
    for k in 0..r {
        let mut first: Option<&Expr> = None;
        for a in arrays {
            let Some(j) = (k + a.ndim()).checked_sub(r) else {
                continue;
            };
            let e = &a.shape[j];
            if *e == one {
                continue;
            }
            match first {
                None => first = Some(e),
                Some(f) => out.push((f.clone(), e.clone())),
            }
        }
    }
    out
}

/// The pairs a store of `value` into `target` requires equal: the value's
/// extents, right-aligned, that are not a literal 1, against the target's.
pub fn store_pairs(target: &ArrVal, value: &ArrVal) -> Vec<(Expr, Expr)> {
    let one = i64(1);
    let off = target.ndim().saturating_sub(value.ndim());
    value
        .shape
        .iter()
        .enumerate()
        .filter(|(_, e)| **e != one)
        .filter_map(|(k, e)| target.shape.get(k + off).map(|t| (t.clone(), e.clone())))
        .collect()
}

/// An extent as Python: `mass.shape[1]`, `n - 2`.
pub fn extent_text(e: &Expr) -> String {
    fn prec(op: BinOp) -> u8 {
        match op {
            BinOp::Add | BinOp::Sub => 1,
            _ => 2,
        }
    }
    fn go(e: &Expr, outer: u8, right: bool) -> String {
        match e {
            Expr::Lit(Literal::I64(v)) => v.to_string(),
            Expr::Lit(l) => format!("{l:?}"),
            Expr::Var(n) => n.clone(),
            Expr::Shape { array, axis } => format!("{array}.shape[{axis}]"),
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => format!(
                "{}({}, {})",
                if *op == BinOp::Min { "min" } else { "max" },
                go(a, 0, false),
                go(b, 0, false)
            ),
            Expr::Binary(op, a, b) => {
                let p = prec(*op);
                let sym = match op {
                    BinOp::FloorDiv => "//",
                    BinOp::Div => "/",
                    BinOp::Rem => "%",
                    o => o.symbol(),
                };
                let s = format!("{} {sym} {}", go(a, p, false), go(b, p, true));
                if p < outer || (p == outer && right) {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Cast(_, x) => go(x, outer, right),
            // `v + n if v < 0 else v`: a bound that counts from the end
            // when negative, as the program wrote it.
            Expr::Select(c, _, b)
                if matches!(c.as_ref(), Expr::Cmp(port_codegen::ir::CmpOp::Lt, x, z)
                    if **x == **b && **z == Expr::Lit(Literal::I64(0))) =>
            {
                go(b, outer, right)
            }
            Expr::Select(c, a, b) => format!(
                "({} if {} else {})",
                go(a, 0, false),
                go(c, 0, false),
                go(b, 0, false)
            ),
            Expr::Cmp(op, a, b) => {
                let sym = op.symbol();
                format!("{} {sym} {}", go(a, 1, false), go(b, 1, true))
            }
            Expr::Unary(port_codegen::ir::UnaryOp::Neg, x) => format!("-{}", go(x, 3, false)),
            Expr::Math(port_codegen::ir::MathFn::Pow, args) if args.len() == 2 => {
                let s = format!("{} ** {}", go(&args[0], 3, true), go(&args[1], 3, false));
                if outer >= 2 {
                    format!("({s})")
                } else {
                    s
                }
            }
            other => format!("{other:?}"),
        }
    }
    go(e, 0, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use port_codegen::ir::{ArrayType, ScalarType};

    fn arr(name: &str, ndim: u8) -> ArrVal {
        ArrVal::named(
            name,
            ArrayType {
                elem: ScalarType::F64,
                ndim,
                contiguous: true,
            },
        )
    }

    #[test]
    fn broadcasting_pairs_every_extent_but_literal_ones() {
        let (a, mut b) = (arr("a", 2), arr("b", 2));
        b.shape[1] = i64(1);
        let pairs = broadcast_pairs(&[&a, &b]);
        assert_eq!(pairs, vec![(shape("a", 0), shape("b", 0))]);
        // A vector against a matrix: its one axis is the matrix's last.
        let v = arr("v", 1);
        assert_eq!(
            broadcast_pairs(&[&a, &v]),
            vec![(shape("a", 1), shape("v", 0))]
        );
    }

    #[test]
    fn equal_extents_are_seen_through_arithmetic() {
        let n = shape("x", 0);
        assert_eq!(
            constant_difference(
                &sub(n.clone(), i64(2)),
                &sub(sub(n.clone(), i64(1)), i64(1))
            ),
            Some(0)
        );
        assert_eq!(constant_difference(&add(n.clone(), i64(1)), &n), Some(1));
        assert_eq!(constant_difference(&n, &shape("y", 0)), None);
        assert_eq!(
            constant_difference(&mul(i64(2), n.clone()), &add(n.clone(), n)),
            Some(0)
        );
    }

    #[test]
    fn slice_extents_through_min_and_max_are_one_extent() {
        let bin = |op, a: Expr, b: Expr| Expr::Binary(op, Box::new(a), Box::new(b));
        let n = shape("pn", 1);
        // `pn[1:-1]` as the slice rules write it, against `n - 2`.
        let clipped = bin(
            BinOp::Max,
            sub(bin(BinOp::Min, add(n.clone(), i64(-1)), n.clone()), i64(1)),
            i64(0),
        );
        let plain = bin(BinOp::Max, sub(n.clone(), i64(2)), i64(0));
        assert_eq!(constant_difference(&clipped, &plain), Some(0));
        // Operands in the other order are the same max.
        let swapped = bin(BinOp::Max, i64(0), sub(sub(n.clone(), i64(1)), i64(1)));
        assert_eq!(constant_difference(&swapped, &plain), Some(0));
        // A max that does not fold stays apart from another.
        let other = bin(BinOp::Max, sub(n.clone(), i64(3)), i64(0));
        assert_eq!(constant_difference(&other, &plain), None);
        // min(n, m) of two unknowns is not n.
        let m = shape("p", 1);
        assert_eq!(
            constant_difference(&bin(BinOp::Min, n.clone(), m), &n),
            None
        );
    }

    #[test]
    fn extents_print_as_python() {
        let e = sub(shape("mass", 1), add(var("k"), i64(2)));
        assert_eq!(extent_text(&e), "mass.shape[1] - (k + 2)");
        assert_eq!(
            extent_text(&mul(add(var("n"), i64(1)), i64(2))),
            "(n + 1) * 2"
        );
        // A slice bound that counts from the end when negative reads as
        // written; a power and a choice as Python writes them.
        let j_k = add(var("j"), var("K"));
        let from_end = Expr::Select(
            Box::new(cmp(port_codegen::ir::CmpOp::Lt, j_k.clone(), i64(0))),
            Box::new(add(j_k.clone(), shape("x", 2))),
            Box::new(j_k),
        );
        assert_eq!(
            extent_text(&sub(binary(BinOp::Min, from_end, shape("x", 2)), var("j"))),
            "min(j + K, x.shape[2]) - j"
        );
        let pow = Expr::Math(port_codegen::ir::MathFn::Pow, vec![var("R"), var("K")]);
        assert_eq!(extent_text(&mul(pow, var("R"))), "(R ** K) * R");
        let pick = Expr::Select(
            Box::new(cmp(port_codegen::ir::CmpOp::Gt, var("n"), i64(0))),
            Box::new(var("n")),
            Box::new(i64(1)),
        );
        assert_eq!(extent_text(&pick), "(n if n > 0 else 1)");
    }
}
