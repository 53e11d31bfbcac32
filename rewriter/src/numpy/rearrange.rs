//! NumPy functions that only move elements or number them, as element
//! templates (part of **array_expr**): `np.roll` (element `i` along an
//! axis reads element `(i - shift) mod n`) and `np.indices` (element
//! `(d, i_0, …)` is `i_d`). Nothing is allocated until a value is stored,
//! so `f - np.roll(f, 1, axis=0)` is one element kernel.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, Literal, ScalarType};

use crate::ir_util::{cast_to, select};
use crate::numpy::array_expr::{ph, tidy, ArrVal};

/// `np.roll(av, shift, axis)` for each `(shift, axis)` in `shifts` (shifts
/// of one axis add up, as NumPy's do). Each shift is an `i64` expression;
/// any sign and size is taken modulo the axis' extent. The result is a
/// new array (NumPy's `roll` copies), never a view.
pub fn roll(av: &ArrVal, shifts: &[(Expr, usize)]) -> ArrVal {
    let n = av.ndim();
    let mut total: Vec<Option<Expr>> = vec![None; n];
    for (s, axis) in shifts {
        total[*axis] = Some(match total[*axis].take() {
            None => s.clone(),
            Some(t) => tidy(&add(t, s.clone())),
        });
    }
    let idx: Vec<Expr> = (0..n)
        .map(|k| match &total[k] {
            None => var(&ph(k)),
            Some(s) => rolled_index(var(&ph(k)), s, &av.shape[k]),
        })
        .collect();
    let mut out = av.reindexed(av.shape.clone(), &idx);
    out.computed = true;
    out
}

/// The index `(i - shift) mod n` that position `i` of a rolled axis of
/// extent `n` reads, for `i` in `0..n`: with `s = shift mod n` (in
/// `0..n`), `i - s`, plus `n` where that is negative. A literal shift and
/// extent fold.
fn rolled_index(i: Expr, shift: &Expr, n: &Expr) -> Expr {
    let s = match (shift, n) {
        (Expr::Lit(Literal::I64(s)), Expr::Lit(Literal::I64(n))) if *n > 0 => i64(s.rem_euclid(*n)),
        (Expr::Lit(Literal::I64(0)), _) => i64(0),
        // The extent is positive wherever an element is read, so the
        // remainder only needs moving up when it is negative.
        _ => {
            let rem = binary(BinOp::Rem, shift.clone(), n.clone());
            select(
                cmp(CmpOp::Lt, rem.clone(), i64(0)),
                add(rem.clone(), n.clone()),
                rem,
            )
        }
    };
    if s == i64(0) {
        return i;
    }
    let back = tidy(&sub(i.clone(), s.clone()));
    select(
        cmp(CmpOp::Lt, i, s),
        tidy(&add(back.clone(), n.clone())),
        back,
    )
}

/// `np.tile(av, reps)`: `reps` (one `i64` per axis, at least as many as
/// `av` has) repeat the array along each axis; `av` is first given leading
/// extent-1 axes up to `reps.len()`, as NumPy does. Element `i` along an
/// axis of extent `n` reads element `i mod n`. A copy, never a view.
pub fn tile(av: &ArrVal, reps: &[Expr]) -> ArrVal {
    let d = reps.len();
    let lead = d - av.ndim();
    let mut shape = Vec::with_capacity(d);
    let mut idx = Vec::with_capacity(av.ndim());
    for (k, rep) in reps.iter().enumerate() {
        if k < lead {
            shape.push(rep.clone());
            continue;
        }
        let n = av.shape[k - lead].clone();
        let once = *rep == i64(1);
        shape.push(if once {
            n.clone()
        } else {
            tidy(&mul(n.clone(), rep.clone()))
        });
        idx.push(if once {
            var(&ph(k))
        } else {
            binary(BinOp::Rem, var(&ph(k)), n)
        });
    }
    let mut out = av.reindexed(shape, &idx);
    out.computed = true;
    out
}

/// `np.repeat(av, times, axis)`: each element along `axis` `times` times
/// in a row (`times` a non-negative `i64`): element `i` reads `i // times`.
/// A copy, never a view.
pub fn repeat(av: &ArrVal, times: &Expr, axis: usize) -> ArrVal {
    let mut shape = av.shape.clone();
    shape[axis] = tidy(&mul(shape[axis].clone(), times.clone()));
    let idx: Vec<Expr> = (0..av.ndim())
        .map(|k| {
            if k == axis && *times != i64(1) {
                binary(BinOp::FloorDiv, var(&ph(k)), times.clone())
            } else {
                var(&ph(k))
            }
        })
        .collect();
    let mut out = av.reindexed(shape, &idx);
    out.computed = true;
    out
}

/// The two windows `np.diff` subtracts along `axis`: `a[…, 1:]` and
/// `a[…, :-1]` (extent `max(n - 1, 0)` there).
pub fn diff_operands(av: &ArrVal, axis: usize) -> (ArrVal, ArrVal) {
    let mut shape = av.shape.clone();
    shape[axis] = tidy(&binary(
        BinOp::Max,
        sub(shape[axis].clone(), i64(1)),
        i64(0),
    ));
    let at = |offset: i64| -> Vec<Expr> {
        (0..av.ndim())
            .map(|k| {
                if k == axis && offset != 0 {
                    add(var(&ph(k)), i64(offset))
                } else {
                    var(&ph(k))
                }
            })
            .collect()
    };
    (
        av.reindexed(shape.clone(), &at(1)),
        av.reindexed(shape, &at(0)),
    )
}

/// `np.indices(dims, dtype=elem)`: shape `(len(dims), *dims)`, element
/// `(d, i_0, …, i_{k-1})` is `i_d`. Unpacked (`I, J = np.indices(…)`) or
/// indexed at a constant, each part is a plain grid (`I[i, j] = i`).
pub fn indices(dims: &[Expr], elem: ScalarType) -> ArrVal {
    let k = dims.len();
    let at = |d: usize| cast_to(var(&ph(d + 1)), ScalarType::I64, elem);
    let mut body = if k == 0 {
        // `np.indices(())` has shape (0,): no element is ever read.
        crate::ir_util::lit(elem, 0.0)
    } else {
        at(k - 1)
    };
    for d in (0..k.saturating_sub(1)).rev() {
        body = select(cmp(CmpOp::Eq, var(&ph(0)), i64(d as i64)), at(d), body);
    }
    let mut shape = vec![i64(k as i64)];
    shape.extend(dims.iter().cloned());
    ArrVal {
        shape,
        elem,
        body,
        // It reads no array: a name bound to it is the template itself
        // (as `np.mgrid`'s is), and a store through its parts sees the
        // indices.
        computed: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numpy::array_expr::{fold_constant_selects, index, IndexItem, Val};
    use port_codegen::ir::ArrayType;

    fn matrix() -> ArrVal {
        ArrVal::named(
            "a",
            ArrayType {
                elem: ScalarType::F64,
                ndim: 2,
                contiguous: true,
            },
        )
    }

    /// Evaluates an integer index expression at placeholder values, with
    /// `a.shape` given.
    fn eval(e: &Expr, at: &[i64], shape: &[i64]) -> i64 {
        match e {
            Expr::Lit(Literal::I64(v)) => *v,
            Expr::Lit(Literal::Bool(b)) => *b as i64,
            Expr::Var(v) => at[v.strip_prefix("__e").unwrap().parse::<usize>().unwrap()],
            Expr::Shape { axis, .. } => shape[*axis as usize],
            Expr::Cast(_, x) => eval(x, at, shape),
            Expr::Binary(op, a, b) => {
                let (a, b) = (eval(a, at, shape), eval(b, at, shape));
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Rem => a % b,
                    BinOp::FloorDiv => a.div_euclid(b),
                    BinOp::And => (a != 0 && b != 0) as i64,
                    BinOp::Or => (a != 0 || b != 0) as i64,
                    other => panic!("{other:?}"),
                }
            }
            Expr::Cmp(op, a, b) => {
                let (a, b) = (eval(a, at, shape), eval(b, at, shape));
                op.holds(a, b) as i64
            }
            Expr::Select(c, a, b) => {
                if eval(c, at, shape) != 0 {
                    eval(a, at, shape)
                } else {
                    eval(b, at, shape)
                }
            }
            other => panic!("{other:?}"),
        }
    }

    /// The (row, column) of `a` that element `at` of a template reads.
    fn read_at(v: &ArrVal, at: &[i64], shape: &[i64]) -> (i64, i64) {
        let Expr::Load(r) = &v.body else {
            panic!("{:?}", v.body)
        };
        (
            eval(&r.indices[0], at, shape),
            eval(&r.indices[1], at, shape),
        )
    }

    /// Every shift, either sign, past the extent, literal or not, agrees
    /// with NumPy's `np.roll(a, s, axis)[i, j] == a[(i - s) % n, j]`.
    #[test]
    fn roll_reads_i_minus_shift_modulo_the_extent() {
        let shape = [5, 3];
        for s in [-7i64, -5, -1, 0, 1, 2, 4, 5, 11] {
            for axis in 0..2usize {
                // A literal shift, and one known only at run time (an
                // extent the test sets to `s`).
                let run_time = Expr::Shape {
                    array: "s".into(),
                    axis: 2,
                };
                for shift in [i64(s), run_time] {
                    let v = roll(&matrix(), &[(shift, axis)]);
                    assert!(v.computed, "np.roll copies");
                    let ext = [shape[0], shape[1], s];
                    for i in 0..5i64 {
                        for j in 0..3i64 {
                            let want = if axis == 0 {
                                ((i - s).rem_euclid(5), j)
                            } else {
                                (i, (j - s).rem_euclid(3))
                            };
                            assert_eq!(read_at(&v, &[i, j], &ext), want, "s={s} axis={axis}");
                        }
                    }
                }
            }
        }
    }

    /// `np.tile(a, (2, 3))[i, j] == a[i % 5, j % 3]` on a 5 x 3 `a`, the
    /// result 10 x 9; reps of 1 leave the axis as it is.
    #[test]
    fn tile_reads_each_index_modulo_the_extent() {
        let v = tile(&matrix(), &[i64(2), i64(3)]);
        assert!(v.computed, "np.tile copies");
        let ext = [5, 3];
        let extents: Vec<i64> = v.shape.iter().map(|e| eval(e, &[], &ext)).collect();
        assert_eq!(extents, [10, 9]);
        for i in 0..10i64 {
            for j in 0..9i64 {
                assert_eq!(read_at(&v, &[i, j], &ext), (i % 5, j % 3));
            }
        }
        // reps longer than the array's axes: leading new axes.
        let v = tile(&matrix(), &[i64(4), i64(1), i64(2)]);
        let extents: Vec<i64> = v.shape.iter().map(|e| eval(e, &[], &ext)).collect();
        assert_eq!(extents, [4, 5, 6]);
        assert_eq!(read_at(&v, &[3, 2, 4], &ext), (2, 1));
    }

    /// `np.repeat(a, 3, axis=1)[i, j] == a[i, j // 3]`.
    #[test]
    fn repeat_reads_the_index_divided_by_the_count() {
        let v = repeat(&matrix(), &i64(3), 1);
        let ext = [5, 3];
        let extents: Vec<i64> = v.shape.iter().map(|e| eval(e, &[], &ext)).collect();
        assert_eq!(extents, [5, 9]);
        for i in 0..5i64 {
            for j in 0..9i64 {
                assert_eq!(read_at(&v, &[i, j], &ext), (i, j / 3));
            }
        }
    }

    /// Shifts of one axis add up; a zero shift is the array itself.
    #[test]
    fn roll_shifts_of_one_axis_add_up() {
        let v = roll(&matrix(), &[(i64(2), 1), (i64(-3), 1), (i64(1), 0)]);
        for i in 0..4i64 {
            for j in 0..6i64 {
                let want = ((i - 1).rem_euclid(4), (j + 1).rem_euclid(6));
                assert_eq!(read_at(&v, &[i, j], &[4, 6]), want);
            }
        }
        let same = roll(&matrix(), &[(i64(0), 0)]);
        assert_eq!(same.body, matrix().body);
    }

    /// `I, J = np.indices((n, m))`: each part, taken at a constant, is a
    /// plain grid with no select left.
    #[test]
    fn indices_parts_are_plain_grids() {
        let dims = [var("n"), var("m"), var("p")];
        let all = indices(&dims, ScalarType::I64);
        assert_eq!(all.shape[0], i64(3));
        for d in 0..3 {
            let Val::Array(part) = index(&all, vec![IndexItem::At(i64(d as i64))]) else {
                panic!()
            };
            assert_eq!(fold_constant_selects(&part.body), var(&ph(d)), "part {d}");
            assert_eq!(part.shape, dims.to_vec());
        }
        // As one array: element (d, i, j, k) is the d-th of (i, j, k).
        for d in 0..3 {
            assert_eq!(eval(&all.body, &[d, 7, 8, 9], &[]), 7 + d);
        }
    }
}
