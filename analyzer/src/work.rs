//! How much work one real call of a function does, from the shapes of the
//! arrays it was called with: the element operations of its statements,
//! each multiplied by the trip counts of the loops around it. This, not the
//! size of the largest argument, says whether a launch can pay: an all-pairs
//! loop over two 4,000-element arrays is 16 million iterations.
//!
//! The estimate errs high, never low: a loop whose start is not known
//! (`range(i + 1, n)`) counts from zero. Where a trip count cannot be known
//! at all (a `while`, a bound from a scalar argument, a shape reassigned in the
//! body), there is no estimate: nothing is claimed.

use std::collections::HashMap;

use rustpython_parser::ast::{self, Expr, Stmt};

/// What is known of a name in the function: an array's shape or an integer.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Shape(Vec<u64>),
    Int(i128),
    Tuple(Vec<i128>),
}

/// The estimated element operations of one call of a function whose body is
/// `body`, called with arrays of `shapes` (parameter name → shape); `None`
/// when some loop's trip count cannot be known.
pub fn estimate(body: &[Stmt], shapes: &HashMap<String, Vec<u64>>) -> Option<u64> {
    let mut env: HashMap<String, Option<Val>> = shapes
        .iter()
        .map(|(k, v)| (k.clone(), Some(Val::Shape(v.clone()))))
        .collect();
    // A name bound more than once (or by a construct this does not follow) is
    // not known: its value at a loop's header could be any of them.
    let mut counts: HashMap<String, u32> = HashMap::new();
    count_bindings(body, &mut counts);
    for (name, n) in &counts {
        if *n > 1 || shapes.contains_key(name) {
            env.insert(name.clone(), None);
        }
    }
    let w = stmts(body, &mut env, 1)?;
    Some(u64::try_from(w).unwrap_or(u64::MAX))
}

fn stmts(body: &[Stmt], env: &mut HashMap<String, Option<Val>>, trips: u128) -> Option<u128> {
    let mut total: u128 = 0;
    for s in body {
        total = total.saturating_add(stmt(s, env, trips)?);
    }
    Some(total)
}

fn stmt(s: &Stmt, env: &mut HashMap<String, Option<Val>>, trips: u128) -> Option<u128> {
    let here = |e: &[&Expr], env: &HashMap<String, Option<Val>>| -> Option<u128> {
        let mut n = 1;
        for x in e {
            n = n.max(elements(x, env)?);
        }
        Some(trips.saturating_mul(n))
    };
    match s {
        Stmt::For(f) => {
            let n = trip_count(&f.iter, env)?;
            let inner = trips.saturating_mul(n.max(1));
            let body = stmts(&f.body, env, inner)?;
            let orelse = stmts(&f.orelse, env, trips)?;
            Some(body.saturating_add(orelse).saturating_add(trips))
        }
        Stmt::While(_) | Stmt::AsyncFor(_) => None,
        Stmt::If(i) => {
            let a = stmts(&i.body, env, trips)?;
            let b = stmts(&i.orelse, env, trips)?;
            Some(here(&[&i.test], env)?.saturating_add(a.max(b)))
        }
        Stmt::With(w) => stmts(&w.body, env, trips),
        Stmt::Try(t) => {
            let mut w = stmts(&t.body, env, trips)?;
            w = w.saturating_add(stmts(&t.orelse, env, trips)?);
            w = w.saturating_add(stmts(&t.finalbody, env, trips)?);
            Some(w)
        }
        Stmt::Assign(a) => {
            let n_value = elements(&a.value, env)?;
            let w = trips.saturating_mul(n_value);
            if let [Expr::Name(n)] = a.targets.as_slice() {
                if env.get(n.id.as_str()).is_none() {
                    // An integer, a new array's shape, or an array
                    // expression's result: no larger than what it reads.
                    let v = value(&a.value, env).or_else(|| {
                        (n_value > 1)
                            .then(|| Val::Shape(vec![n_value.min(u64::MAX as u128) as u64]))
                    });
                    env.insert(n.id.to_string(), v);
                }
            } else if let [Expr::Tuple(t)] = a.targets.as_slice() {
                // `n, m = a.shape`
                if let Some(Val::Tuple(vs)) = value(&a.value, env) {
                    if vs.len() == t.elts.len() {
                        for (e, v) in t.elts.iter().zip(vs) {
                            if let Expr::Name(n) = e {
                                if env.get(n.id.as_str()).is_none() {
                                    env.insert(n.id.to_string(), Some(Val::Int(v)));
                                }
                            }
                        }
                    }
                }
            }
            let t: Vec<&Expr> = a.targets.iter().collect();
            Some(w.max(here(&t, env)?))
        }
        Stmt::AugAssign(a) => here(&[a.target.as_ref(), a.value.as_ref()], env),
        Stmt::AnnAssign(a) => a.value.as_deref().map_or(Some(0), |v| here(&[v], env)),
        Stmt::Expr(e) => here(&[e.value.as_ref()], env),
        Stmt::Return(r) => r.value.as_deref().map_or(Some(0), |v| here(&[v], env)),
        _ => Some(trips),
    }
}

/// Trip count of a `for` header: `range(...)`, an array's first dimension,
/// `enumerate` and `zip` of those.
fn trip_count(iter: &Expr, env: &HashMap<String, Option<Val>>) -> Option<u128> {
    match iter {
        Expr::Call(c) if c.keywords.is_empty() => {
            let name = match c.func.as_ref() {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.as_str(),
                _ => return None,
            };
            match name {
                "range" | "prange" => {
                    let int = |e: &Expr| int(e, env);
                    let (start, stop, step) = match c.args.as_slice() {
                        [stop] => (0, int(stop)?, 1),
                        // An unknown start (`range(i + 1, n)`) counts from 0.
                        [start, stop] => (int(start).unwrap_or(0), int(stop)?, 1),
                        [start, stop, step] => (int(start).unwrap_or(0), int(stop)?, int(step)?),
                        _ => return None,
                    };
                    let span = if step > 0 {
                        stop - start
                    } else if step < 0 {
                        start - stop
                    } else {
                        return None;
                    };
                    let step = step.unsigned_abs();
                    Some(if span <= 0 {
                        0
                    } else {
                        (span as u128).div_ceil(step)
                    })
                }
                "enumerate" | "reversed" => match c.args.as_slice() {
                    [a] => trip_count(a, env),
                    _ => None,
                },
                "zip" => c
                    .args
                    .iter()
                    .map(|a| trip_count(a, env))
                    .collect::<Option<Vec<_>>>()?
                    .into_iter()
                    .min(),
                _ => None,
            }
        }
        Expr::Name(n) => match env.get(n.id.as_str())? {
            Some(Val::Shape(s)) => s.first().map(|&d| d as u128),
            _ => None,
        },
        _ => None,
    }
}

/// The integer the expression is known to be.
fn int(e: &Expr, env: &HashMap<String, Option<Val>>) -> Option<i128> {
    match value(e, env) {
        Some(Val::Int(v)) => Some(v),
        _ => None,
    }
}

/// The shape of the array a name is known to hold.
fn shape(e: &Expr, env: &HashMap<String, Option<Val>>) -> Option<Vec<u64>> {
    match e {
        Expr::Name(n) => match env.get(n.id.as_str()) {
            Some(Some(Val::Shape(s))) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// An integer or shape the expression is known to have.
fn value(e: &Expr, env: &HashMap<String, Option<Val>>) -> Option<Val> {
    let int = |e: &Expr| int(e, env);
    let shape = |e: &Expr| shape(e, env);
    match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Int(n) => i128::try_from(n).ok().map(Val::Int),
            _ => None,
        },
        Expr::Name(n) => env.get(n.id.as_str()).cloned().flatten(),
        Expr::Attribute(a) => {
            let s = shape(&a.value)?;
            match a.attr.as_str() {
                "shape" => Some(Val::Tuple(s.iter().map(|&d| d as i128).collect())),
                "size" => Some(Val::Int(s.iter().map(|&d| d as i128).product())),
                "ndim" => Some(Val::Int(s.len() as i128)),
                _ => None,
            }
        }
        Expr::Subscript(s) => match value(&s.value, env)? {
            Val::Tuple(t) => {
                let k = int(&s.slice)?;
                let k = if k < 0 { t.len() as i128 + k } else { k };
                t.get(usize::try_from(k).ok()?).copied().map(Val::Int)
            }
            _ => None,
        },
        Expr::Tuple(t) => Some(Val::Tuple(
            t.elts.iter().map(int).collect::<Option<Vec<_>>>()?,
        )),
        // A new array: `np.zeros((n, m))`, `np.empty_like(a)`.
        Expr::Call(c) if matches!(c.func.as_ref(), Expr::Attribute(_)) => {
            let Expr::Attribute(f) = c.func.as_ref() else {
                return None;
            };
            let dims = |v: Val| match v {
                Val::Int(n) => Some(vec![u64::try_from(n).ok()?]),
                Val::Tuple(t) => t.into_iter().map(|d| u64::try_from(d).ok()).collect(),
                Val::Shape(_) => None,
            };
            match (f.attr.as_str(), c.args.first()) {
                ("zeros" | "empty" | "ones" | "full", Some(a)) => {
                    dims(value(a, env)?).map(Val::Shape)
                }
                ("zeros_like" | "empty_like" | "ones_like" | "full_like" | "copy", Some(a)) => {
                    shape(a).map(Val::Shape)
                }
                _ => None,
            }
        }
        Expr::Call(c) if c.keywords.is_empty() => {
            let Expr::Name(f) = c.func.as_ref() else {
                return None;
            };
            match (f.id.as_str(), c.args.as_slice()) {
                ("len", [a]) => shape(a)?.first().map(|&d| Val::Int(d as i128)),
                ("int", [a]) => Some(Val::Int(int(a)?)),
                (f @ ("min" | "max"), args) if args.len() > 1 => {
                    let vs = args
                        .iter()
                        .map(int)
                        .collect::<Option<Vec<_>>>()?
                        .into_iter();
                    (if f == "min" { vs.min() } else { vs.max() }).map(Val::Int)
                }
                _ => None,
            }
        }
        Expr::BinOp(b) => {
            let (l, r) = (int(&b.left)?, int(&b.right)?);
            Some(Val::Int(match b.op {
                ast::Operator::Add => l.checked_add(r)?,
                ast::Operator::Sub => l.checked_sub(r)?,
                ast::Operator::Mult => l.checked_mul(r)?,
                ast::Operator::FloorDiv if r != 0 => l.div_euclid(r),
                _ => return None,
            }))
        }
        _ => None,
    }
}

/// Elements an expression touches at once: the largest known array it uses
/// whole, or the part of one that a subscript with slices selects.
fn elements(e: &Expr, env: &HashMap<String, Option<Val>>) -> Option<u128> {
    // Names not used for their elements: `a.shape`, `len(a)`, and the array
    // of a subscript, which is counted by what the subscript selects.
    let mut skip: Vec<*const Expr> = crate::walk::metadata_uses(e)
        .into_iter()
        .map(|x| x as *const Expr)
        .collect();
    let mut most: u128 = 1;
    let mut grows = false;
    crate::walk::walk_expr(e, &mut |x| match x {
        // Broadcasting and products make arrays larger than their operands.
        Expr::BinOp(b) if b.op == ast::Operator::MatMult => grows = true,
        Expr::Call(c) if matches!(c.func.as_ref(), Expr::Attribute(a) if GROWS.contains(&a.attr.as_str())) => {
            grows = true
        }
        Expr::Subscript(s) => {
            let idx: Vec<&Expr> = match s.slice.as_ref() {
                Expr::Tuple(t) => t.elts.iter().collect(),
                x => vec![x],
            };
            // `a[:, None]`, `a[np.newaxis]`: a new axis to broadcast along.
            if idx.iter().any(|i| match i {
                Expr::Constant(c) => matches!(c.value, ast::Constant::None),
                Expr::Attribute(a) => a.attr.as_str() == "newaxis",
                _ => false,
            }) {
                grows = true;
            }
            let Some(shape) = shape(&s.value, env) else {
                return;
            };
            skip.push(s.value.as_ref() as *const Expr);
            let mut n: u128 = 1;
            for (k, d) in shape.iter().enumerate() {
                if matches!(idx.get(k), Some(Expr::Slice(_)) | None) {
                    n = n.saturating_mul(*d as u128);
                }
            }
            most = most.max(n);
        }
        _ => {}
    });
    crate::walk::walk_expr(e, &mut |x| {
        if !skip.contains(&(x as *const Expr)) {
            if let Some(s) = shape(x, env) {
                most = most.max(s.iter().map(|&d| d as u128).product());
            }
        }
    });
    (!grows).then_some(most)
}

/// Calls whose result can be larger than any of their arguments.
const GROWS: &[&str] = &[
    "outer",
    "dot",
    "matmul",
    "einsum",
    "meshgrid",
    "ix_",
    "kron",
    "tensordot",
    "broadcast_to",
    "tile",
    "repeat",
    "vdot",
    "inner",
    "cross",
    "convolve",
    "correlate",
    "fft",
    "ifft",
];

fn count_bindings(body: &[Stmt], counts: &mut HashMap<String, u32>) {
    fn target(t: &Expr, counts: &mut HashMap<String, u32>) {
        match t {
            Expr::Name(n) => *counts.entry(n.id.to_string()).or_default() += 1,
            Expr::Tuple(x) => x.elts.iter().for_each(|e| target(e, counts)),
            Expr::List(x) => x.elts.iter().for_each(|e| target(e, counts)),
            Expr::Starred(s) => target(&s.value, counts),
            _ => {}
        }
    }
    crate::walk::walk_stmts(body, &mut |s| match s {
        Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, counts)),
        // Augmented assignment rebinds its name; a loop rebinds its
        // variable every iteration.
        Stmt::AugAssign(a) => {
            target(&a.target, counts);
            target(&a.target, counts);
        }
        Stmt::AnnAssign(a) => target(&a.target, counts),
        Stmt::For(f) => {
            target(&f.target, counts);
            target(&f.target, counts);
        }
        _ => {}
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustpython_parser::{ast, Parse};

    /// The estimate for the body of the one function in `src`.
    fn work(src: &str, shapes: &[(&str, &[u64])]) -> Option<u64> {
        let stmts = ast::Suite::parse(src, "<t>").unwrap();
        let Stmt::FunctionDef(f) = &stmts[0] else {
            panic!("not a def")
        };
        let shapes = shapes
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_vec()))
            .collect();
        estimate(&f.body, &shapes)
    }

    #[test]
    fn an_all_pairs_loop_is_the_product_of_its_trip_counts() {
        let src = "def kde(samples, grid, h, out):\n    for g in range(grid.shape[0]):\n        acc = 0.0\n        for s in range(len(samples)):\n            acc += samples[s] - grid[g]\n        out[g] = acc\n";
        let w = work(
            src,
            &[("samples", &[4000]), ("grid", &[900]), ("out", &[900])],
        )
        .unwrap();
        // 3.6 M inner iterations, plus the outer loop's own statements.
        assert!((3_600_000..3_700_000).contains(&w), "{w}");
    }

    #[test]
    fn aliases_of_shapes_and_unpacked_shapes_give_trip_counts() {
        let src = "def f(a, out):\n    n, m = a.shape\n    k = n - 1\n    for i in range(1, k):\n        for j in range(m):\n            out[i, j] = a[i + 1, j] - a[i - 1, j]\n";
        let w = work(src, &[("a", &[10, 20]), ("out", &[10, 20])]).unwrap();
        // 8 x 20 iterations: small.
        assert!((160..200).contains(&w), "{w}");
    }

    #[test]
    fn a_triangular_loop_counts_from_zero_so_the_estimate_errs_high() {
        let src = "def f(x, out):\n    for i in range(x.shape[0]):\n        for j in range(i + 1, x.shape[0]):\n            out[i] += x[i] * x[j]\n";
        let w = work(src, &[("x", &[300]), ("out", &[300])]).unwrap();
        // Really 44,850 pairs; counted as 300 x 300.
        assert!((44_850..=100_000).contains(&w), "{w}");
    }

    #[test]
    fn array_statements_count_the_elements_they_touch() {
        let src = "def f(a, b):\n    c = a * 2.0 + b\n    return c.sum()\n";
        // `c` is as large as what it is made of: 10,000 twice.
        assert_eq!(
            work(src, &[("a", &[100, 100]), ("b", &[100, 100])]),
            Some(20_000)
        );
        // A row inside a loop over rows: rows x row length.
        let src =
            "def g(a, out):\n    for i in range(a.shape[0]):\n        out[i] = a[i, :].sum()\n";
        let w = work(src, &[("a", &[500, 400]), ("out", &[500])]).unwrap();
        assert!((200_000..201_000).contains(&w), "{w}");
    }

    #[test]
    fn an_unknown_trip_count_claims_nothing() {
        // A bound from a scalar argument, a while loop, a reassigned shape.
        let src = "def f(x, n):\n    for i in range(n):\n        x[i] = 0.0\n";
        assert_eq!(work(src, &[("x", &[10])]), None);
        let src = "def f(x):\n    i = 0\n    while i < 10:\n        i += 1\n";
        assert_eq!(work(src, &[("x", &[10])]), None);
        let src = "def f(x):\n    x = x.reshape(-1)\n    for i in range(x.shape[0]):\n        x[i] = 0.0\n";
        assert_eq!(work(src, &[("x", &[10, 10_000])]), None);
        let src = "def f(x):\n    m = 4\n    m = x.shape[0]\n    for i in range(m):\n        x[i] = 0.0\n";
        assert_eq!(work(src, &[("x", &[100_000])]), None);
    }

    #[test]
    fn broadcasting_and_products_claim_nothing() {
        // The result is larger than every operand: 1,000 x 1,000.
        for body in [
            "d = x[:, None] - x[None, :]",
            "d = np.outer(x, x)",
            "d = x @ x.T",
        ] {
            let src = format!("def f(x):\n    {body}\n    return d.sum()\n");
            assert_eq!(work(&src, &[("x", &[1000])]), None, "{body}");
        }
        // `None` elsewhere is no new axis.
        let src = "def f(x):\n    if x is None:\n        return None\n    return x * 2\n";
        assert!(work(src, &[("x", &[1000])]).is_some());
    }

    #[test]
    fn new_arrays_have_the_shape_they_are_made_with() {
        let src = "def f(a):\n    out = np.zeros((a.shape[0], 3))\n    for i in range(out.shape[0]):\n        for j in range(3):\n            out[i, j] = a[i] * j\n    return out\n";
        let w = work(src, &[("a", &[50])]).unwrap();
        assert!((150..1_000).contains(&w), "{w}");
    }

    #[test]
    fn loops_over_arrays_enumerate_and_zip() {
        let src = "def f(a, b):\n    t = 0.0\n    for x, y in zip(a, b):\n        t += x * y\n    for i, v in enumerate(a):\n        t += v\n    return t\n";
        let w = work(src, &[("a", &[50]), ("b", &[70])]).unwrap();
        assert!((100..200).contains(&w), "{w}");
    }
}
