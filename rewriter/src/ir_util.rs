//! Small tools over port's kernel IR: substitution of variables, literals of
//! a type, casts that fold on literals, and NumPy's type promotion.

use std::collections::{HashMap, HashSet};

pub use crate::dtypes::{join, promote};
use port_codegen::ir::build::*;
use port_codegen::ir::{
    BinOp, CmpOp, ElemRef, Expr, Literal, ParallelFor, ScalarType, Stmt, UnaryOp,
};

/// Replaces variables by expressions, all at once.
pub fn subst(e: &Expr, map: &HashMap<String, Expr>) -> Expr {
    map_expr(e, &|x| match x {
        Expr::Var(n) => map.get(n).cloned(),
        _ => None,
    })
}

pub use port_codegen::ir::map_expr;

/// [`map_expr`] again on its own result until nothing changes, at most
/// `rounds` times: substitutions whose values hold more of the names
/// substituted (an allocation sized by another).
pub fn map_expr_repeated(e: &Expr, rounds: usize, f: &dyn Fn(&Expr) -> Option<Expr>) -> Expr {
    let mut e = e.clone();
    for _ in 0..rounds {
        let next = map_expr(&e, f);
        if next == e {
            break;
        }
        e = next;
    }
    e
}

/// Renames arrays in an expression (`Load`, `Shape`).
pub fn rename_arrays(e: &Expr, map: &HashMap<String, String>) -> Expr {
    map_expr(e, &|x| match x {
        Expr::Shape { array, axis } => map.get(array).map(|n| Expr::Shape {
            array: n.clone(),
            axis: *axis,
        }),
        Expr::Load(r) => map.get(&r.array).map(|n| {
            Expr::Load(ElemRef {
                array: n.clone(),
                indices: r.indices.iter().map(|i| rename_arrays(i, map)).collect(),
            })
        }),
        _ => None,
    })
}

/// Applies `f` to every expression of a statement list, rebuilding it.
pub fn map_stmts(body: &[Stmt], f: &dyn Fn(&Expr) -> Expr) -> Vec<Stmt> {
    body.iter()
        .map(|s| match s {
            Stmt::Let { name, ty, init } => Stmt::Let {
                name: name.clone(),
                ty: *ty,
                init: f(init),
            },
            Stmt::Assign { name, value } => Stmt::Assign {
                name: name.clone(),
                value: f(value),
            },
            Stmt::Store { target, value } => Stmt::Store {
                target: ElemRef {
                    array: target.array.clone(),
                    indices: target.indices.iter().map(f).collect(),
                },
                value: f(value),
            },
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: f(cond),
                then_body: map_stmts(then_body, f),
                else_body: map_stmts(else_body, f),
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: f(cond),
                body: map_stmts(body, f),
            },
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: var.clone(),
                start: f(start),
                stop: f(stop),
                step: f(step),
                body: map_stmts(body, f),
            },
            Stmt::ParallelFor(p) => Stmt::ParallelFor(port_codegen::ir::ParallelFor {
                vars: p.vars.clone(),
                extents: p.extents.iter().map(f).collect(),
                body: map_stmts(&p.body, f),
            }),
            Stmt::Return(e) => Stmt::Return(e.as_ref().map(f)),
            Stmt::Eval(e) => Stmt::Eval(f(e)),
            Stmt::Break | Stmt::Continue | Stmt::Barrier => s.clone(),
        })
        .collect()
}

/// Applies `f` to every statement of a list that holds no statements of
/// its own (`let`, assignments, stores, …), at any depth, rebuilding the
/// blocks around them as they were.
pub fn map_leaves(body: &[Stmt], f: &dyn Fn(&Stmt) -> Stmt) -> Vec<Stmt> {
    body.iter()
        .map(|s| match s {
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: cond.clone(),
                then_body: map_leaves(then_body, f),
                else_body: map_leaves(else_body, f),
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: cond.clone(),
                body: map_leaves(body, f),
            },
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: var.clone(),
                start: start.clone(),
                stop: stop.clone(),
                step: step.clone(),
                body: map_leaves(body, f),
            },
            Stmt::ParallelFor(p) => Stmt::ParallelFor(port_codegen::ir::ParallelFor {
                vars: p.vars.clone(),
                extents: p.extents.clone(),
                body: map_leaves(&p.body, f),
            }),
            leaf => f(leaf),
        })
        .collect()
}

/// Whether `e` mentions the variable `name`.
pub fn mentions_var(e: &Expr, name: &str) -> bool {
    let mut found = false;
    port_codegen::ir::walk_expr(e, &mut |x| {
        if let Expr::Var(n) = x {
            found |= n == name;
        }
    });
    found
}

/// A literal of type `ty` with value `v`.
pub fn lit(ty: ScalarType, v: f64) -> Expr {
    Expr::Lit(match ty {
        ScalarType::Bool => Literal::Bool(v != 0.0),
        ScalarType::I32 => Literal::I32(v as i32),
        ScalarType::I64 => Literal::I64(v as i64),
        ScalarType::F32 => Literal::F32(v as f32),
        ScalarType::F64 => Literal::F64(v),
        ScalarType::C64 | ScalarType::C128 => {
            let part = ty.component();
            return Expr::Complex(Box::new(lit(part, v)), Box::new(lit(part, 0.0)));
        }
        // Narrow and unsigned integers: a cast of an i64 literal (the IR has
        // no literal of their own; the cast wraps like NumPy's).
        t => return cast(t, Expr::Lit(Literal::I64(int_of(v)))),
    })
}

/// `v` as the i64 whose bits a u64 literal needs (`2**64 - 1` is `-1`).
fn int_of(v: f64) -> i64 {
    if v >= i64::MAX as f64 {
        v as u64 as i64
    } else {
        v as i64
    }
}

/// `e` as type `to`, folding casts of literals.
pub fn cast_to(e: Expr, from: ScalarType, to: ScalarType) -> Expr {
    if from == to {
        return e;
    }
    if from.is_complex() && !to.is_complex() {
        // As NumPy stores a complex number in a real array (`astype`, an
        // element assignment): a bool is whether it is non-zero, any
        // other type takes the real part (NumPy warns, ComplexWarning).
        if to == ScalarType::Bool {
            return cmp(CmpOp::Ne, e, lit(from, 0.0));
        }
        let re = Expr::Part(port_codegen::ir::Part::Re, Box::new(e));
        return cast_to(re, from.component(), to);
    }
    if let Expr::Lit(l) = &e {
        let v = match *l {
            Literal::Bool(b) => f64::from(u8::from(b)),
            Literal::I32(i) => f64::from(i),
            Literal::I64(i) => i as f64,
            Literal::F32(f) => f64::from(f),
            Literal::F64(f) => f,
        };
        let exact_int = matches!(l, Literal::I64(_)) && to.is_int();
        if let (Literal::I64(i), ScalarType::I32) = (l, to) {
            return Expr::Lit(Literal::I32(*i as i32));
        }
        let narrow = to.is_int() && !matches!(to, ScalarType::I32 | ScalarType::I64);
        if let (Literal::I64(_) | Literal::I32(_) | Literal::Bool(_), true) = (l, narrow) {
            return cast(to, Expr::Lit(Literal::I64(v as i64)));
        }
        if !exact_int && (!to.is_int() || v.fract() == 0.0) {
            return lit(to, v);
        }
    }
    cast(to, e)
}

pub fn not(e: Expr) -> Expr {
    Expr::Unary(UnaryOp::Not, Box::new(e))
}

pub fn and(a: Expr, b: Expr) -> Expr {
    binary(BinOp::And, a, b)
}

pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
    Expr::Select(Box::new(c), Box::new(a), Box::new(b))
}

/// Python's `a % b` (the result has the sign of `b`) from the IR's
/// C-style remainder.
pub fn py_mod(a: Expr, b: Expr, ty: ScalarType) -> Expr {
    let r = binary(BinOp::Rem, a, b.clone());
    let zero = lit(ty, 0.0);
    let fix = and(
        cmp(CmpOp::Ne, r.clone(), zero.clone()),
        cmp(
            CmpOp::Ne,
            cmp(CmpOp::Lt, r.clone(), zero.clone()),
            cmp(CmpOp::Lt, b.clone(), zero),
        ),
    );
    select(fix, add(r.clone(), b), r)
}

/// Recognises [`py_mod`]'s shape: `(a, b)` of `a % b`.
pub fn match_py_mod(e: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Select(c, t, f) = e else {
        return None;
    };
    let Expr::Binary(BinOp::Rem, a, b) = f.as_ref() else {
        return None;
    };
    let Expr::Binary(BinOp::Add, r, b2) = t.as_ref() else {
        return None;
    };
    let Expr::Binary(BinOp::And, _, _) = c.as_ref() else {
        return None;
    };
    (r.as_ref() == f.as_ref() && b2 == b).then_some((a, b))
}

/// `x op y` for two scalars, as NumPy 2 compares them: in their promoted
/// type, except that bools are ordered as the integers 0 and 1 (`False <
/// True`), and that an integer is compared with a Python int by value, in
/// its range or not (NEP 50: `uint16_array > -1` is all true, where
/// promoting the `-1` to uint16 would make it 65535; a uint64 beside a
/// negative Python int is greater whatever its value).
pub fn compare(op: CmpOp, x: (Expr, ScalarType, bool), y: (Expr, ScalarType, bool)) -> Expr {
    let ((x, tx, wx), (y, ty, wy)) = (x, y);
    let int = |t: ScalarType| t.is_int() || t == ScalarType::Bool;
    if !wx && wy && int(tx) && ty.is_int() && tx.bits() < 64
        || wx && !wy && int(ty) && tx.is_int() && ty.bits() < 64
    {
        let t = ScalarType::I64;
        return cmp(op, cast_to(x, tx, t), cast_to(y, ty, t));
    }
    // uint64 against a Python int that may be negative.
    let unsigned_side = if !wx && wy && tx == ScalarType::U64 && ty.is_signed() {
        Some(false)
    } else if wx && !wy && ty == ScalarType::U64 && tx.is_signed() {
        Some(true)
    } else {
        None
    };
    if let Some(weak_left) = unsigned_side {
        let (weak, wt) = if weak_left { (&x, tx) } else { (&y, ty) };
        let negative = cmp(CmpOp::Lt, weak.clone(), lit(wt, 0.0));
        // The negative Python int is the smaller side.
        let weak_is_less = match op {
            CmpOp::Ne => true,
            CmpOp::Eq => false,
            CmpOp::Lt | CmpOp::Le => weak_left,
            CmpOp::Gt | CmpOp::Ge => !weak_left,
        };
        let t = ScalarType::U64;
        return select(
            negative,
            bool(weak_is_less),
            cmp(op, cast_to(x, tx, t), cast_to(y, ty, t)),
        );
    }
    let t = match promote(tx, wx, ty, wy) {
        ScalarType::Bool if !matches!(op, CmpOp::Eq | CmpOp::Ne) => ScalarType::I64,
        t => t,
    };
    cmp(op, cast_to(x, tx, t), cast_to(y, ty, t))
}

/// Names `body` declares (`let`, loop variables).
pub fn locals(body: &[Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::Let { name, .. } => out.push(name.clone()),
            Stmt::For { var, body, .. } => {
                out.push(var.clone());
                out.extend(locals(body));
            }
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                out.extend(locals(then_body));
                out.extend(locals(else_body));
            }
            Stmt::While { body, .. } => out.extend(locals(body)),
            Stmt::ParallelFor(p) => {
                out.extend(p.vars.iter().cloned());
                out.extend(locals(&p.body));
            }
            _ => {}
        }
    }
    out
}

/// `base`, or `base_2`, `base_3`, … : a name not in `taken`.
pub fn fresh(base: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(base) {
        return base.to_string();
    }
    (2..)
        .map(|k| format!("{base}_{k}"))
        .find(|n| !taken.contains(n))
        .expect("a free name")
}

/// `body` with names (parameters, locals, loop variables, arrays) renamed,
/// all at once.
pub fn rename_body(body: &[Stmt], map: &HashMap<String, String>) -> Vec<Stmt> {
    let name = |n: &String| map.get(n).cloned().unwrap_or_else(|| n.clone());
    let ex = |e: &Expr| rename_expr(e, map);
    body.iter()
        .map(|s| match s {
            Stmt::Let { name: n, ty, init } => Stmt::Let {
                name: name(n),
                ty: *ty,
                init: ex(init),
            },
            Stmt::Assign { name: n, value } => Stmt::Assign {
                name: name(n),
                value: ex(value),
            },
            Stmt::Store { target, value } => Stmt::Store {
                target: ElemRef {
                    array: name(&target.array),
                    indices: target.indices.iter().map(ex).collect(),
                },
                value: ex(value),
            },
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: ex(cond),
                then_body: rename_body(then_body, map),
                else_body: rename_body(else_body, map),
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: ex(cond),
                body: rename_body(body, map),
            },
            Stmt::For {
                var: v,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: name(v),
                start: ex(start),
                stop: ex(stop),
                step: ex(step),
                body: rename_body(body, map),
            },
            Stmt::ParallelFor(p) => Stmt::ParallelFor(ParallelFor {
                vars: p.vars.iter().map(name).collect(),
                extents: p.extents.iter().map(ex).collect(),
                body: rename_body(&p.body, map),
            }),
            Stmt::Return(e) => Stmt::Return(e.as_ref().map(ex)),
            Stmt::Eval(e) => Stmt::Eval(ex(e)),
            Stmt::Break | Stmt::Continue | Stmt::Barrier => s.clone(),
        })
        .collect()
}

/// `e` with variables and arrays renamed, all at once.
pub fn rename_expr(e: &Expr, map: &HashMap<String, String>) -> Expr {
    let name = |n: &String| map.get(n).cloned().unwrap_or_else(|| n.clone());
    map_expr(e, &|x| match x {
        Expr::Var(v) => Some(Expr::Var(name(v))),
        Expr::Shape { array, axis } => Some(Expr::Shape {
            array: name(array),
            axis: *axis,
        }),
        Expr::Load(r) => Some(Expr::Load(ElemRef {
            array: name(&r.array),
            indices: r.indices.iter().map(|i| rename_expr(i, map)).collect(),
        })),
        Expr::Atomic(op, r, v) => Some(Expr::Atomic(
            *op,
            ElemRef {
                array: name(&r.array),
                indices: r.indices.iter().map(|i| rename_expr(i, map)).collect(),
            },
            Box::new(rename_expr(v, map)),
        )),
        Expr::AtomicCas(r, c, v) => Some(Expr::AtomicCas(
            ElemRef {
                array: name(&r.array),
                indices: r.indices.iter().map(|i| rename_expr(i, map)).collect(),
            },
            Box::new(rename_expr(c, map)),
            Box::new(rename_expr(v, map)),
        )),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType::*;

    #[test]
    fn numpy_promotion() {
        assert_eq!(promote(F32, false, F64, true), F32);
        assert_eq!(promote(I64, false, F64, true), F64);
        assert_eq!(promote(I64, false, F32, false), F64);
        assert_eq!(promote(I32, false, I64, false), I64);
        assert_eq!(promote(F32, false, F64, false), F64);
        assert_eq!(join(I64, F64), F64);
        assert_eq!(join(I64, F32), F32);
    }

    /// Every pair against `np.result_type` (NumPy 2.4), row by row in
    /// [`ScalarType::ALL`]'s order.
    #[test]
    fn promotion_matches_numpy_result_type() {
        let table = [
            "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64",
            "int8 int8 int16 int32 int64 int16 int32 int64 float64 float32 float64",
            "int16 int16 int16 int32 int64 int16 int32 int64 float64 float32 float64",
            "int32 int32 int32 int32 int64 int32 int32 int64 float64 float64 float64",
            "int64 int64 int64 int64 int64 int64 int64 int64 float64 float64 float64",
            "uint8 int16 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64",
            "uint16 int32 int32 int32 int64 uint16 uint16 uint32 uint64 float32 float64",
            "uint32 int64 int64 int64 int64 uint32 uint32 uint32 uint64 float64 float64",
            "uint64 float64 float64 float64 float64 uint64 uint64 uint64 uint64 float64 float64",
            "float32 float32 float32 float64 float64 float32 float32 float64 float64 float32 float64",
            "float64 float64 float64 float64 float64 float64 float64 float64 float64 float64 float64",
        ];
        let name = |t: ScalarType| crate::types::numba_scalar(t).replace("boolean", "bool");
        for (a, row) in ScalarType::ALL.iter().zip(table) {
            for (b, want) in ScalarType::ALL.iter().zip(row.split(' ')) {
                assert_eq!(name(promote(*a, false, *b, false)), want, "{a} with {b}");
            }
        }
        // Python scalars are weak: `u8 + 1` is uint8, `u8 * 2.5` float64,
        // `bool + 1` int64, `f32 * 2.0` float32.
        assert_eq!(promote(U8, false, I64, true), U8);
        assert_eq!(promote(I64, true, I8, false), I8);
        assert_eq!(promote(U8, false, F64, true), F64);
        assert_eq!(promote(Bool, false, I64, true), I64);
        assert_eq!(promote(F32, false, F64, true), F32);
        assert_eq!(promote(U64, false, Bool, true), U64);
    }

    /// Complex pairs against `np.result_type` (NumPy 2.4), and NEP 50's
    /// weak Python `complex`/`float`/`int` next to complex arrays.
    #[test]
    fn complex_promotion_matches_numpy() {
        for (t, with_c64) in [
            (Bool, C64),
            (I8, C64),
            (I16, C64),
            (I32, C128),
            (I64, C128),
            (U8, C64),
            (U16, C64),
            (U32, C128),
            (U64, C128),
            (F32, C64),
            (F64, C128),
            (C64, C64),
            (C128, C128),
        ] {
            assert_eq!(
                promote(C64, false, t, false),
                with_c64,
                "complex64 with {t}"
            );
            assert_eq!(promote(t, false, C128, false), C128, "{t} with complex128");
        }
        assert_eq!(promote(F32, false, C128, true), C64);
        assert_eq!(promote(C128, true, I64, false), C128);
        assert_eq!(promote(C64, false, F64, true), C64);
        assert_eq!(promote(I64, true, C64, false), C64);
        assert_eq!(join(F32, C64), C64);
        assert_eq!(
            lit(C64, 2.0),
            Expr::Complex(Box::new(f32(2.0)), Box::new(f32(0.0)))
        );
    }

    #[test]
    fn narrow_literals_are_casts() {
        assert_eq!(cast_to(i64(1), I64, U8), cast(U8, i64(1)));
        assert_eq!(lit(U64, 18446744073709551615.0), cast(U64, i64(-1)));
        assert_eq!(lit(I16, -3.0), cast(I16, i64(-3)));
    }

    #[test]
    fn casts_fold_literals() {
        assert_eq!(cast_to(i64(2), I64, F64), f64(2.0));
        assert_eq!(cast_to(var("x"), I64, F64), cast(F64, var("x")));
        assert_eq!(cast_to(f64(2.5), F64, I64), cast(I64, f64(2.5)));
    }

    #[test]
    fn python_modulo_round_trips() {
        let e = py_mod(var("a"), i64(3), I64);
        let (a, b) = match_py_mod(&e).unwrap();
        assert_eq!((a, b), (&var("a"), &i64(3)));
    }
}
