//! **python_ints**: Python's ints have no bound; a kernel's int64 has. The
//! `+`, `-` and `*` of two Python ints whose value comes from the data (an
//! element, a float or an element made an int by `int()` or `math.floor`,
//! a name bound to one) are checked: `BinOp::CheckedMul` and the like,
//! which flag a launch whose arithmetic left int64, and the migrated
//! function then runs the original for that call (fuzz seed 2001603:
//! `math.floor(b[i]) * math.floor(a[i])` of 6 and 2**63 - 1).
//!
//! Arithmetic on loop indices, extents, literals and int arguments is not
//! checked: its values are bounded by the arrays' sizes (the trip counts of
//! loops that touch them), and the dependence analysis reads it as affine.
//! A value is from the data when the typing cannot bound it, which this
//! module decides twice: on the Python body before lowering ([`data_names`],
//! so that a name rebound in a loop is known before its first use there),
//! and on a lowered operand ([`data_derived`]).

use std::collections::HashSet;

use port_codegen::ir::build::{binary, cast, cmp};
use port_codegen::ir::{self, BinOp, CmpOp, Expr, Literal, ScalarType};
use rustpython_parser::ast;

use crate::ir_util::{and, lit, select};
use crate::pyast;

pub const NAME: &str = "python_ints";

/// Calls whose result is bounded by their arguments' (`len` by an extent):
/// data only when an argument is.
const BOUNDED_BY_ARGS: &[&str] = &[
    "range", "len", "min", "max", "abs", "int", "float", "bool", "round", "floor", "ceil", "trunc",
];

/// The names the function binds, at any depth, to a value computed from
/// the data: from an element (`x[i]`, not `x.shape[0]`), from a call other
/// than [`BOUNDED_BY_ARGS`] (NumPy's, a helper's), from one of `seeds`
/// (the scalar arguments that are data themselves) or from such a name,
/// and loop variables of a loop over anything but `range`. A fixed point,
/// so that `h = h * 31 + k` after `k = int(x[i])` is data wherever `h` is read.
pub fn data_names(body: &[ast::Stmt], seeds: HashSet<String>) -> HashSet<String> {
    let mut names = seeds;
    loop {
        let before = names.len();
        pyast::walk_stmts(body, &mut |s| {
            let (targets, value): (Vec<&ast::Expr>, Option<&ast::Expr>) = match s {
                ast::Stmt::Assign(a) => (a.targets.iter().collect(), Some(&a.value)),
                ast::Stmt::AugAssign(a) => (vec![&a.target], Some(&a.value)),
                ast::Stmt::AnnAssign(a) => (vec![&a.target], a.value.as_deref()),
                ast::Stmt::For(f) if !is_range(&f.iter) => (vec![&f.target], None),
                _ => return,
            };
            if value.is_none_or(|v| from_data(v, &names)) {
                for t in targets {
                    names.extend(pyast::target_names(t));
                }
            }
        });
        if names.len() == before {
            return names;
        }
    }
}

fn is_range(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Call(c) if matches!(c.func.as_ref(), ast::Expr::Name(n) if n.id.as_str() == "range"))
}

/// Whether the Python expression `e` may compute on the data.
fn from_data(e: &ast::Expr, names: &HashSet<String>) -> bool {
    let mut found = false;
    pyast::walk_expr(e, &mut |x| {
        found |= match x {
            ast::Expr::Name(n) => names.contains(n.id.as_str()),
            ast::Expr::Subscript(s) => !matches!(
                s.value.as_ref(),
                ast::Expr::Attribute(a) if matches!(a.attr.as_str(), "shape" | "strides")
            ),
            ast::Expr::Call(c) => {
                let callee = match c.func.as_ref() {
                    ast::Expr::Name(n) => n.id.as_str(),
                    ast::Expr::Attribute(a) => a.attr.as_str(),
                    _ => "",
                };
                !BOUNDED_BY_ARGS.contains(&callee)
            }
            _ => false,
        };
    });
    found
}

/// Whether the lowered operand `e` may hold a value computed from the data:
/// it loads an element, calls a math or device function, or reads one of
/// `names` (IR names: [`data_names`], sanitized, and the locals bound to
/// such values).
pub fn data_derived(e: &Expr, names: &HashSet<String>) -> bool {
    let mut found = false;
    ir::walk_expr(e, &mut |x| {
        found |= match x {
            Expr::Load(_)
            | Expr::Math(..)
            | Expr::Call(..)
            | Expr::Atomic(..)
            | Expr::AtomicCas(..) => true,
            Expr::Var(v) => names.contains(v),
            _ => false,
        };
    });
    found
}

/// Python's `-x` of a Python int `x` from the data, checked: `-(-2**63)`
/// leaves int64.
pub fn checked_neg(x: Expr) -> Expr {
    binary(BinOp::CheckedSub, Expr::Lit(Literal::I64(0)), x)
}

/// Python's `abs(x)` of a Python int `x` from the data, checked.
pub fn checked_abs(x: Expr) -> Expr {
    select(
        cmp(CmpOp::Lt, x.clone(), Expr::Lit(Literal::I64(0))),
        checked_neg(x.clone()),
        x,
    )
}

/// The conversions to a Python int of a float: `int()` truncates,
/// `round()` rounds half to even, `math.floor`/`ceil`/`trunc`.
pub const FLOAT_TO_INT: &[&str] = &["int", "round", "math.floor", "math.ceil", "math.trunc"];

/// Python's int of `x`, a float of type `t` with an integer value (or one
/// the cast truncates), as an int64 that is checked: NaN, ±inf and values
/// outside int64 (where CPython raises, or gives an int no int64 holds)
/// raise the overflow flag, by a `CheckedAdd` of int64's largest value
/// and 1. Written with the IR's own operators; [`checked_int_operand`]
/// reads it back.
pub fn checked_int(x: Expr, t: ScalarType) -> Expr {
    let bound = 9_223_372_036_854_775_808.0; // 2**63, exact in f32 and f64
    let ok = and(
        cmp(CmpOp::Ge, x.clone(), lit(t, -bound)),
        cmp(CmpOp::Lt, x.clone(), lit(t, bound)),
    );
    binary(
        BinOp::CheckedAdd,
        cast(ScalarType::I64, select(ok.clone(), x, lit(t, 1.0))),
        select(
            ok,
            Expr::Lit(Literal::I64(0)),
            Expr::Lit(Literal::I64(i64::MAX)),
        ),
    )
}

/// The float a [`checked_int`] converts, when `e` is one.
pub fn checked_int_operand(e: &Expr) -> Option<&Expr> {
    let Expr::Binary(BinOp::CheckedAdd, v, k) = e else {
        return None;
    };
    let (Expr::Cast(ScalarType::I64, sel), Expr::Select(ok2, zero, max)) = (v.as_ref(), k.as_ref())
    else {
        return None;
    };
    let Expr::Select(ok, x, _) = sel.as_ref() else {
        return None;
    };
    let fits = ok == ok2
        && **zero == Expr::Lit(Literal::I64(0))
        && **max == Expr::Lit(Literal::I64(i64::MAX));
    fits.then_some(x.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str, seeds: &[&str]) -> Vec<String> {
        let body = rustpython_parser::parse(src, rustpython_parser::Mode::Module, "<test>")
            .map(|m| m.expect_module().body)
            .unwrap();
        let mut v: Vec<String> = data_names(&body, seeds.iter().map(|s| s.to_string()).collect())
            .into_iter()
            .collect();
        v.sort();
        v
    }

    #[test]
    fn names_from_elements_and_conversions_of_them_are_data() {
        let src = "
h = 0
n = a.shape[0] - 1
m = len(a) // 2
for i in range(n):
    k = int(a[i])
    h = h * 31 + k
    j = i * m + 1
    w = min(j, n)
t = s * 2.0
r = int(t)
";
        assert_eq!(names(src, &["s"]), ["h", "k", "r", "s", "t"]);
    }

    #[test]
    fn a_checked_conversion_reads_back() {
        let x = Expr::Var("x".into());
        let e = checked_int(x.clone(), ScalarType::F64);
        assert_eq!(checked_int_operand(&e), Some(&x));
        assert_eq!(checked_int_operand(&x), None);
    }

    #[test]
    fn loops_over_values_and_calls_of_numpy_give_data() {
        let src = "
for v in a:
    c = v + 1
q = np.sum(a)
z = abs(q) + 1
p = abs(3) + 1
";
        assert_eq!(names(src, &[]), ["c", "q", "v", "z"]);
    }
}
