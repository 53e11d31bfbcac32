//! Index sets per dimension: may two subscripts of one array, taken in two
//! *different* iterations of a parallel loop, name the same element?
//!
//! Each component of a subscript is an interval `[lo, hi)` whose bounds are
//! linear in the loop variables and in loop-invariant integers (`i + 1`,
//! `2 * i - k`, `n - 1`, `x.shape[0]`); a point `e` is `[e, e + 1)`, a slice
//! `a:b` is `[a, b)` (an omitted start is 0, an omitted stop or a negative
//! constant counts from the dimension's end). Two accesses cannot meet
//! across iterations when, for every loop variable `p`, some dimension
//! separates any two iterations that differ in `p`: its bounds involve only
//! `p` (with the same coefficient on both sides) and the arithmetic of the
//! bounds leaves no room for a meeting. So `[i, 3]` and `[i, :3]` never
//! meet (column 3 is not in `0..3`), nor do `[i]` and `[i]` in two
//! iterations, while `[i - 1]` and `[i]` do (a recurrence), and `a[2:]` and
//! `a[:-2]` do (what separates them depends on the length). Anything the
//! arithmetic cannot decide may overlap.
//!
//! Shared by the analyzer's PORT204 check (`deps`) and the rewriter's
//! `dependences` rewrite, so the finding and the planner agree.

use std::collections::BTreeMap;

use rustpython_parser::ast::{self, Expr};

/// The end of a dimension (its length), for `a[-1]` and `a[2:]`.
pub const END: &str = "<end>";

/// A linear form: loop variables and invariant symbols with integer
/// coefficients, plus a constant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lin {
    pub vars: BTreeMap<String, i64>,
    pub syms: BTreeMap<String, i64>,
    pub konst: i64,
}

impl Lin {
    pub fn constant(k: i64) -> Lin {
        Lin {
            konst: k,
            ..Lin::default()
        }
    }

    fn sym(s: &str) -> Lin {
        Lin {
            syms: [(s.to_string(), 1)].into(),
            ..Lin::default()
        }
    }

    fn var(v: &str) -> Lin {
        Lin {
            vars: [(v.to_string(), 1)].into(),
            ..Lin::default()
        }
    }

    fn plus(&self, o: &Lin, sign: i64) -> Option<Lin> {
        let mut r = self.clone();
        for (k, v) in &o.vars {
            *r.vars.entry(k.clone()).or_default() += sign.checked_mul(*v)?;
        }
        for (k, v) in &o.syms {
            *r.syms.entry(k.clone()).or_default() += sign.checked_mul(*v)?;
        }
        r.konst = r.konst.checked_add(sign.checked_mul(o.konst)?)?;
        r.vars.retain(|_, v| *v != 0);
        r.syms.retain(|_, v| *v != 0);
        Some(r)
    }

    fn scale(&self, k: i64) -> Option<Lin> {
        if k == 0 {
            return Some(Lin::default());
        }
        let mut r = self.clone();
        for v in r.vars.values_mut().chain(r.syms.values_mut()) {
            *v = v.checked_mul(k)?;
        }
        r.konst = r.konst.checked_mul(k)?;
        Some(r)
    }

    fn is_constant(&self) -> bool {
        self.vars.is_empty() && self.syms.is_empty()
    }

    fn coef(&self, v: &str) -> i64 {
        self.vars.get(v).copied().unwrap_or(0)
    }

    /// The same form without its loop variables.
    fn invariant_part(&self) -> Lin {
        Lin {
            vars: BTreeMap::new(),
            ..self.clone()
        }
    }
}

/// What a name in an index is.
#[derive(Clone, Debug)]
pub enum NameKind {
    /// A loop variable of the parallel loop.
    Loop,
    /// A name assigned a linear form of the loop variables (`j = i + 1`).
    Alias(Lin),
    /// An integer that stays the same in every iteration.
    Invariant,
    /// Anything else: assigned in the loop, read from data, an array.
    Variant,
}

/// How to read names and the invariant expressions that are not linear.
pub struct Ctx<'a> {
    pub name: &'a dyn Fn(&str) -> NameKind,
    /// A loop-invariant integer that is not linear (`x.shape[0]`,
    /// `len(x)`), by its text; `None` otherwise.
    pub opaque: &'a dyn Fn(&Expr) -> Option<String>,
    /// The values a loop variable of the parallel loop takes, as the
    /// half-open `[start, stop)` of its `range` (a positive step only thins
    /// it out); `None` when unknown. Lets a position that moves with the
    /// loop be compared with one that does not (`a[i, j]` for `j` in
    /// `range(k + 1, n)` never names `a[i, k]`).
    pub bounds: &'a dyn Fn(&str) -> Option<(Lin, Lin)>,
}

/// No loop variable's range known.
pub fn no_bounds(_: &str) -> Option<(Lin, Lin)> {
    None
}

/// `(start, stop)` of `range(stop)`, `range(start, stop)` or
/// `range(start, stop, step)` with a positive constant step.
pub fn range_bounds(iter: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Call(c) = iter else { return None };
    if !matches!(c.func.as_ref(), Expr::Name(n) if matches!(n.id.as_str(), "range" | "prange"))
        && !matches!(c.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "prange")
    {
        return None;
    }
    if !c.keywords.is_empty() {
        return None;
    }
    let zero = || {
        Expr::Constant(ast::ExprConstant {
            range: c.range,
            value: ast::Constant::Int(0.into()),
            kind: None,
        })
    };
    match c.args.as_slice() {
        [stop] => Some((zero(), stop.clone())),
        [start, stop] => Some((start.clone(), stop.clone())),
        [start, stop, Expr::Constant(k)] => match &k.value {
            ast::Constant::Int(v) if *v > 0.into() => Some((start.clone(), stop.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// `e` as a linear form, or `None`.
pub fn lin(e: &Expr, ctx: &Ctx) -> Option<Lin> {
    match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Int(n) => Some(Lin::constant(i64::try_from(n).ok()?)),
            _ => None,
        },
        Expr::Name(n) => match (ctx.name)(n.id.as_str()) {
            NameKind::Loop => Some(Lin::var(n.id.as_str())),
            NameKind::Alias(l) => Some(l),
            NameKind::Invariant => Some(Lin::sym(n.id.as_str())),
            NameKind::Variant => None,
        },
        Expr::BinOp(b) => match b.op {
            ast::Operator::Add => lin(&b.left, ctx)?.plus(&lin(&b.right, ctx)?, 1),
            ast::Operator::Sub => lin(&b.left, ctx)?.plus(&lin(&b.right, ctx)?, -1),
            ast::Operator::Mult => {
                let (l, r) = (lin(&b.left, ctx)?, lin(&b.right, ctx)?);
                if l.is_constant() {
                    r.scale(l.konst)
                } else if r.is_constant() {
                    l.scale(r.konst)
                } else {
                    None
                }
            }
            _ => (ctx.opaque)(e).map(|t| Lin::sym(&t)),
        },
        Expr::UnaryOp(u) => match u.op {
            ast::UnaryOp::USub => lin(&u.operand, ctx)?.scale(-1),
            ast::UnaryOp::UAdd => lin(&u.operand, ctx),
            _ => None,
        },
        other => (ctx.opaque)(other).map(|t| Lin::sym(&t)),
    }
}

/// The elements one component of a subscript names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// `[lo, hi)` (a slice's step only thins it out).
    Range {
        lo: Lin,
        hi: Lin,
    },
    /// The first of three: the flat index `p * S + q` with `0 <= q < S`
    /// (`S` this symbol) names position `(p, q)` of a row-major `[:, S]`
    /// view, the next two dimensions; comparable only with another such
    /// index of the same `S`.
    Flat(String),
    Unknown,
}

/// A negative constant counts from the end.
fn from_end(l: Lin) -> Lin {
    if l.is_constant() && l.konst < 0 {
        let mut e = Lin::sym(END);
        e.konst = l.konst;
        e
    } else {
        l
    }
}

/// The one position `lo`: `[lo, lo + 1)`.
fn point(lo: Lin) -> Dim {
    match lo.plus(&Lin::constant(1), 1) {
        Some(hi) => Dim::Range { lo, hi },
        None => Dim::Unknown,
    }
}

fn dim(c: &Expr, ctx: &Ctx) -> Dim {
    match c {
        Expr::Slice(s) => {
            let step_ok = match s.step.as_deref() {
                None => true,
                Some(st) => lin(st, ctx).is_some_and(|l| l.is_constant() && l.konst > 0),
            };
            if !step_ok {
                return Dim::Unknown;
            }
            let lo = match s.lower.as_deref() {
                None => Some(Lin::constant(0)),
                Some(e) => lin(e, ctx).map(from_end),
            };
            let hi = match s.upper.as_deref() {
                None => Some(Lin::sym(END)),
                Some(e) => lin(e, ctx).map(from_end),
            };
            match (lo, hi) {
                (Some(lo), Some(hi)) => Dim::Range { lo, hi },
                _ => Dim::Unknown,
            }
        }
        e => lin(e, ctx).map_or(Dim::Unknown, |l| point(from_end(l))),
    }
}

/// `len(x)`, `x.shape[0]`, `x.size`: an integer, whatever `x` is; an
/// extent both dependence checks may treat as a loop-invariant integer.
pub fn is_length(e: &Expr) -> bool {
    match e {
        Expr::Call(c) => matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "len"),
        Expr::Subscript(s) => {
            matches!(s.value.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "shape")
        }
        Expr::Attribute(a) => matches!(a.attr.as_str(), "size" | "ndim"),
        _ => false,
    }
}

/// The terms of a sum (`a + b - c`: `a`, `b`, and `c` negated).
fn terms<'e>(e: &'e Expr, sign: i64, out: &mut Vec<(&'e Expr, i64)>) {
    match e {
        Expr::BinOp(b) if matches!(b.op, ast::Operator::Add | ast::Operator::Sub) => {
            terms(&b.left, sign, out);
            let s = if b.op == ast::Operator::Sub {
                -sign
            } else {
                sign
            };
            terms(&b.right, s, out);
        }
        e => out.push((e, sign)),
    }
}

/// A one-dimensional index `p * S + q` (in any order) with `q` a loop
/// variable ranging over `range(S)`, `S` an invariant and `p` a loop
/// variable or an invariant, as the position `(p, q)` it names:
/// `[Flat(S), p, q]`. Distinct iterations
/// name distinct elements, which the index's own arithmetic cannot show
/// (`p * S` is not linear).
fn delinearize(e: &Expr, ctx: &Ctx) -> Option<Vec<Dim>> {
    let mut ts = Vec::new();
    terms(e, 1, &mut ts);
    let mut row: Option<(Lin, Lin)> = None;
    let mut rest = Lin::default();
    for (t, sign) in ts {
        if let Expr::BinOp(b) = t {
            if b.op == ast::Operator::Mult && sign == 1 {
                // The row: a loop variable, or an integer the same in
                // every iteration.
                let row_of = |x: &Expr| match x {
                    Expr::Name(n) => match (ctx.name)(n.id.as_str()) {
                        NameKind::Loop => Some(Lin::var(n.id.as_str())),
                        NameKind::Invariant => Some(Lin::sym(n.id.as_str())),
                        _ => None,
                    },
                    _ => None,
                };
                let stride = |x: &Expr| {
                    lin(x, ctx).filter(|l| {
                        l.vars.is_empty()
                            && l.konst == 0
                            && l.syms.len() == 1
                            && l.syms.values().all(|k| *k == 1)
                    })
                };
                // `p * S` or `S * p`.
                let pair = row_of(&b.left)
                    .zip(stride(&b.right))
                    .or_else(|| row_of(&b.right).zip(stride(&b.left)));
                if let Some(pair) = pair {
                    if row.is_some() {
                        return None;
                    }
                    row = Some(pair);
                    continue;
                }
            }
        }
        rest = rest.plus(&lin(t, ctx)?.scale(sign)?, 1)?;
    }
    let (p, stride) = row?;
    // The rest is exactly one other loop variable, over `range(S)`.
    if !rest.syms.is_empty() || rest.konst != 0 || rest.vars.len() != 1 {
        return None;
    }
    let (q, k) = rest.vars.iter().next()?;
    if *k != 1 || p.vars.contains_key(q) || (ctx.bounds)(q)? != (Lin::constant(0), stride.clone()) {
        return None;
    }
    let s = stride.syms.keys().next()?.clone();
    Some(vec![Dim::Flat(s), point(p), point(Lin::var(q))])
}

/// The per-dimension sets of a subscript's index (`i, :3` → two), or
/// `None` when its dimensions cannot be lined up (`...`, `None`, `*x`).
pub fn access(index: &Expr, ctx: &Ctx) -> Option<Vec<Dim>> {
    if !matches!(index, Expr::Tuple(_) | Expr::Slice(_)) {
        if let Some(d) = delinearize(index, ctx) {
            return Some(d);
        }
    }
    let comps: Vec<&Expr> = match index {
        Expr::Tuple(t) => t.elts.iter().collect(),
        e => vec![e],
    };
    let mut out = Vec::new();
    for c in comps {
        match c {
            Expr::Starred(_) => return None,
            Expr::Constant(k)
                if matches!(k.value, ast::Constant::Ellipsis | ast::Constant::None) =>
            {
                return None
            }
            c => out.push(dim(c, ctx)),
        }
    }
    Some(out)
}

/// Whether this dimension keeps apart any two iterations that differ in
/// `p` (whatever the other loop variables are).
fn separates(a: &Dim, b: &Dim, p: &str) -> bool {
    let (Dim::Range { lo: l1, hi: h1 }, Dim::Range { lo: l2, hi: h2 }) = (a, b) else {
        return false;
    };
    // Bounds that move with another loop variable separate nothing alone.
    if ![l1, h1, l2, h2]
        .iter()
        .all(|l| l.vars.keys().all(|v| v == p))
    {
        return false;
    }
    let k = l1.coef(p);
    if h1.coef(p) != k || l2.coef(p) != k || h2.coef(p) != k {
        return false;
    }
    // Iterations i and i' = i - d meet iff L < k·d < H, with
    // L = lo2 - hi1 and H = hi2 - lo1 (their parts free of loop variables).
    let diff = |x: &Lin, y: &Lin| {
        x.invariant_part()
            .plus(&y.invariant_part(), -1)
            .filter(Lin::is_constant)
            .map(|l| l.konst)
    };
    let low = diff(l2, h1);
    let high = diff(h2, l1);
    if k == 0 {
        // Independent of the iteration: apart when the intervals are.
        return low.is_some_and(|l| l >= 0) || high.is_some_and(|h| h <= 0);
    }
    let (Some(mut low), Some(mut high)) = (low, high) else {
        return false;
    };
    let mut k = k;
    if k < 0 {
        (low, high) = (-high, -low);
        k = -k;
    }
    // Integers d with low < k·d < high.
    let dmin = low.div_euclid(k) + 1;
    let dmax = (high - 1).div_euclid(k);
    dmin > dmax || (dmin == 0 && dmax == 0)
}

/// Every position one component names over the whole loop, `[lo, hi)`
/// free of loop variables: its own bounds when they involve none, else
/// with the one loop variable they move with replaced by the ends of its
/// range. `None` when that cannot be said.
fn hull(d: &Dim, bounds: &dyn Fn(&str) -> Option<(Lin, Lin)>) -> Option<(Lin, Lin)> {
    let Dim::Range { lo, hi } = d else {
        return None;
    };
    let mut vars: Vec<&String> = lo.vars.keys().chain(hi.vars.keys()).collect();
    vars.sort();
    vars.dedup();
    match vars.as_slice() {
        [] => Some((lo.clone(), hi.clone())),
        [p] => {
            let (start, stop) = bounds(p)?;
            if !start.vars.is_empty() || !stop.vars.is_empty() {
                return None;
            }
            let (kl, kh) = (lo.coef(p), hi.coef(p));
            let last = stop.plus(&Lin::constant(1), -1)?;
            // The smallest `lo` and the largest `hi` over `p` in [start, last].
            let at = |l: &Lin, k: i64, smallest: bool| -> Option<Lin> {
                let end = if (k >= 0) == smallest { &start } else { &last };
                l.invariant_part().plus(&end.scale(k)?, 1)
            };
            Some((at(lo, kl, true)?, at(hi, kh, false)?))
        }
        _ => None,
    }
}

/// Whether `[lo1, hi1)` and `[lo2, hi2)` are apart by their arithmetic.
fn apart(a: &(Lin, Lin), b: &(Lin, Lin)) -> bool {
    let le = |x: &Lin, y: &Lin| {
        x.plus(y, -1)
            .is_some_and(|d| d.is_constant() && d.konst <= 0)
    };
    le(&a.1, &b.0) || le(&b.1, &a.0)
}

/// Whether two accesses of one array (`None`: unknown) may name the same
/// element in two different iterations of a loop over `vars`, knowing the
/// ranges of the loop variables that `bounds` gives.
pub fn may_meet_in(
    a: Option<&[Dim]>,
    b: Option<&[Dim]>,
    vars: &[String],
    bounds: &dyn Fn(&str) -> Option<(Lin, Lin)>,
) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return true;
    };
    // A flat index is comparable only with one of the same row length.
    let flat = |d: &[Dim]| match d.first() {
        Some(Dim::Flat(s)) => Some(s.clone()),
        _ => None,
    };
    if flat(a) != flat(b) {
        return true;
    }
    // Some dimension where everything one access names over the whole
    // loop lies apart from everything the other names: they never meet.
    if a
        .iter()
        .zip(b)
        .any(|(x, y)| matches!((hull(x, bounds), hull(y, bounds)), (Some(hx), Some(hy)) if apart(&hx, &hy)))
    {
        return false;
    }
    !vars
        .iter()
        .all(|p| a.iter().zip(b).any(|(x, y)| separates(x, y, p)))
}

/// [`may_meet_in`] with no loop variable's range known.
pub fn may_meet(a: Option<&[Dim]>, b: Option<&[Dim]>, vars: &[String]) -> bool {
    may_meet_in(a, b, vars, &no_bounds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustpython_parser::{ast::Stmt, Parse};

    /// The index of `x[...]` in `src`, read with `i`/`j` loop variables,
    /// `k`/`n` invariants and `t` variant.
    fn sets(src: &str) -> Option<Vec<Dim>> {
        sets_in(src, &no_bounds)
    }

    fn sets_in(src: &str, bounds: &dyn Fn(&str) -> Option<(Lin, Lin)>) -> Option<Vec<Dim>> {
        let stmts = ast::Suite::parse(src, "<t>").unwrap();
        let Stmt::Expr(e) = &stmts[0] else { panic!() };
        let Expr::Subscript(s) = e.value.as_ref() else {
            panic!()
        };
        let name = |n: &str| match n {
            "i" | "j" => NameKind::Loop,
            "k" | "n" => NameKind::Invariant,
            _ => NameKind::Variant,
        };
        let opaque = |_: &Expr| None;
        access(
            &s.slice,
            &Ctx {
                bounds,
                name: &name,
                opaque: &opaque,
            },
        )
    }

    fn meet(a: &str, b: &str, vars: &[&str]) -> bool {
        let vars: Vec<String> = vars.iter().map(|s| s.to_string()).collect();
        may_meet(sets(a).as_deref(), sets(b).as_deref(), &vars)
    }

    #[test]
    fn per_dimension_arithmetic() {
        let i = &["i"];
        assert!(!meet("x[i, 3]", "x[i, :3]", i));
        assert!(!meet("x[0, i]", "x[1, i]", i));
        assert!(!meet("x[k, 3]", "x[k, :3]", &["i"]));
        assert!(meet("x[k, 2]", "x[k, :3]", &["i"]));
        assert!(!meet("x[i]", "x[i]", i));
        assert!(meet("x[i]", "x[i - 1]", i));
        assert!(meet("x[i + k]", "x[i + k + 1]", i));
        assert!(!meet("x[2 * i]", "x[2 * i + 1]", i));
        assert!(meet("x[2 * i : 2 * i + 3]", "x[2 * i : 2 * i + 3]", i));
        assert!(!meet("x[2 * i : 2 * i + 2]", "x[2 * i : 2 * i + 2]", i));
        assert!(meet("x[2:]", "x[:-2]", i));
        assert!(!meet("x[:2]", "x[2:]", i));
        assert!(!meet("x[-1]", "x[:-1]", i));
        assert!(meet("x[:i]", "x[i]", i));
        assert!(meet("x[t]", "x[i]", i));
        assert!(meet("x[i, j - 1]", "x[i, j]", &["i", "j"]));
        assert!(!meet("x[i, j]", "x[i, j]", &["i", "j"]));
        assert!(meet("x[i, 0]", "x[i, 0]", &["i", "j"]));
        assert!(meet("x[..., i]", "x[..., i]", i));
    }

    /// `i * n + j` with `j` in `range(n)` is position `(i, j)` of rows of
    /// `n`: distinct iterations, distinct elements; not so when `j` may
    /// reach `n`, or beside an index of another form.
    #[test]
    fn flat_indices_over_a_row_length() {
        let meet_with = |a: &str, b: &str, j_stop: &str| {
            let bounds = |v: &str| match v {
                "j" => Some((Lin::constant(0), Lin::sym(j_stop))),
                _ => None,
            };
            let vars = ["i".to_string(), "j".to_string()];
            may_meet_in(
                sets_in(a, &bounds).as_deref(),
                sets_in(b, &bounds).as_deref(),
                &vars,
                &bounds,
            )
        };
        assert!(!meet_with("x[i * n + j]", "x[i * n + j]", "n"));
        assert!(!meet_with("x[j + n * i]", "x[n * i + j]", "n"));
        assert!(meet_with("x[i * n + j]", "x[i * n + j]", "k"));
        assert!(meet_with("x[i * n + j + 1]", "x[i * n + j]", "n"));
        assert!(meet_with("x[i * n + j]", "x[i]", "n"));
        assert!(meet_with("x[i * n + j]", "x[i * k + j]", "n"));
        // The row the same in every iteration (`k` invariant).
        let vars = ["j".to_string()];
        let bounds = |v: &str| (v == "j").then(|| (Lin::constant(0), Lin::sym("n")));
        let at = |a: &str| sets_in(a, &bounds);
        assert!(!may_meet_in(
            at("x[k * n + j]").as_deref(),
            at("x[k * n + j]").as_deref(),
            &vars,
            &bounds
        ));
    }
}
