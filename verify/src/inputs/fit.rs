//! Fitting generated extents and integer arguments to what the plan says
//! of them. A plan states, in its host steps, the relations NumPy would
//! check on the real arguments: its guards (`A.shape[0] == NR`, a
//! broadcast's `max(u.shape[0] - 2, 0) == max(b.shape[0] - 2, 0)`, a
//! reshape's `R**i * R * R**(K - i - 1) == y.shape[0]`), the slices it
//! clips (`min(I + 4, in_field.shape[0])`: a program written for its data
//! slices inside the array), and the extents it allocates (`np.empty((N,
//! H - K + 1))` raises on a negative one). Generated inputs that break
//! them make the original raise before anything is compared.
//!
//! The unknowns are the extents of the array arguments and the integer
//! arguments. Each relation is read as a linear form of them where it is
//! one ([`Lin`]), else as an expression of them ([`Facts::computed`]):
//! - an equality of two unknowns, each plus a constant, makes them one
//!   class (a weighted union-find: each member is its root plus an
//!   offset); one against a constant fixes the class;
//! - any other equality is met, once every class has a value, by moving
//!   the class of one unknown it names alone (`y.shape[0]` takes `R**K`);
//! - a clipped slice and an allocated extent ask a form to reach a bound:
//!   a class it counts positively grows.
//!
//! Names bound on the host take the expressions they were bound to; a
//! loop variable its first value; after an `if`, a name either branch
//! binds has the extents of both (the code after the join runs on
//! either). Integer arguments that no relation names keep their small
//! value: they count iterations. What this cannot meet, the original
//! decides: the candidates are tried in order.

use std::collections::{BTreeMap, HashMap, HashSet};

use port_codegen::ir::{map_expr, walk_expr, BinOp, CmpOp, Expr, Literal, MathFn, UnaryOp};
use port_rewriter::plan::{HostStep, KernelPlan};
use port_rewriter::types::ArgType;

/// An unknown: an array argument's extent, or an integer argument.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Term {
    Extent(String, usize),
    Int(String),
}

/// The integer arguments' values, by name.
pub(super) type Ints = BTreeMap<String, i64>;

/// Shapes of every array argument, by name.
pub(super) type Shapes = BTreeMap<String, Vec<usize>>;

/// `Σ coef · term + k` over the unknowns.
#[derive(Clone, Debug, Default, PartialEq)]
struct Lin {
    terms: BTreeMap<Term, i64>,
    k: i64,
}

impl Lin {
    fn constant(k: i64) -> Lin {
        Lin {
            terms: BTreeMap::new(),
            k,
        }
    }

    fn term(t: Term) -> Lin {
        Lin {
            terms: BTreeMap::from([(t, 1)]),
            k: 0,
        }
    }

    /// `self + sign · other`.
    fn plus(&self, other: &Lin, sign: i64) -> Lin {
        let mut out = self.clone();
        for (t, c) in &other.terms {
            *out.terms.entry(t.clone()).or_insert(0) += sign * c;
        }
        out.terms.retain(|_, c| *c != 0);
        out.k += sign * other.k;
        out
    }

    fn scaled(&self, by: i64) -> Lin {
        if by == 0 {
            return Lin::constant(0);
        }
        Lin {
            terms: self
                .terms
                .iter()
                .map(|(t, c)| (t.clone(), c * by))
                .collect(),
            k: self.k * by,
        }
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.k)
    }

    /// The unknown itself (coefficient 1, no constant).
    fn is_bare(&self) -> bool {
        self.k == 0 && self.terms.len() == 1 && self.terms.values().all(|&c| c == 1)
    }

    fn value(&self, get: &dyn Fn(&Term) -> i64) -> i64 {
        self.terms.iter().fold(self.k, |acc, (t, c)| {
            acc.saturating_add(c.saturating_mul(get(t)))
        })
    }
}

/// What the host steps say, resolved to the unknowns.
#[derive(Default)]
struct Facts {
    /// `a == b`.
    equal: Vec<(Lin, Lin)>,
    /// `a >= b`: a slice clipped at an extent, an extent allocated.
    at_least: Vec<(Lin, Lin)>,
    /// `a == b` that is not linear (a product, a power, a quotient), as
    /// expressions of the unknowns.
    computed: Vec<(Expr, Expr)>,
    /// `e >= 1` for an allocated extent `e` that is not linear.
    computed_positive: Vec<Expr>,
}

/// Host names known as forms of the unknowns, and as expressions of the
/// arguments (for what is not linear).
#[derive(Clone, Default)]
struct Env {
    scalars: HashMap<String, Lin>,
    allocs: HashMap<String, Vec<Option<Lin>>>,
    scalar_exprs: HashMap<String, Expr>,
    alloc_exprs: HashMap<String, Vec<Expr>>,
}

fn resolve(plan: &KernelPlan, env: &Env, e: &Expr) -> Option<Lin> {
    match e {
        Expr::Lit(Literal::I64(v)) => Some(Lin::constant(*v)),
        Expr::Lit(Literal::I32(v)) => Some(Lin::constant(i64::from(*v))),
        Expr::Cast(_, a) => resolve(plan, env, a),
        Expr::Shape { array, axis } => {
            let axis = *axis as usize;
            if !env.allocs.contains_key(array) && is_array_param(plan, array) {
                return Some(Lin::term(Term::Extent(array.clone(), axis)));
            }
            env.allocs.get(array)?.get(axis)?.clone()
        }
        Expr::Var(v) => {
            if is_int_param(plan, v) && !env.scalars.contains_key(v) {
                return Some(Lin::term(Term::Int(v.clone())));
            }
            env.scalars.get(v).cloned()
        }
        Expr::Unary(UnaryOp::Neg, a) => Some(resolve(plan, env, a)?.scaled(-1)),
        Expr::Binary(BinOp::Add, a, b) => {
            Some(resolve(plan, env, a)?.plus(&resolve(plan, env, b)?, 1))
        }
        Expr::Binary(BinOp::Sub, a, b) => {
            Some(resolve(plan, env, a)?.plus(&resolve(plan, env, b)?, -1))
        }
        Expr::Binary(BinOp::Mul, a, b) => {
            let (a, b) = (resolve(plan, env, a)?, resolve(plan, env, b)?);
            match (a.as_constant(), b.as_constant()) {
                (Some(c), _) => Some(b.scaled(c)),
                (_, Some(c)) => Some(a.scaled(c)),
                _ => None,
            }
        }
        // `max(n - 2, 0)`: an extent of a slice, which the program's data
        // does not make empty.
        Expr::Binary(BinOp::Max, a, b) if is_zero(b) => resolve(plan, env, a),
        Expr::Binary(BinOp::Max, a, b) if is_zero(a) => resolve(plan, env, b),
        // `min(stop, n)`: the program slices inside the array (see
        // `Facts::at_least`), so the stop it wrote is the value.
        Expr::Binary(BinOp::Min, a, b) => match (resolve(plan, env, a), resolve(plan, env, b)) {
            (Some(stop), Some(extent)) if extent.is_bare() => Some(stop),
            (Some(extent), Some(stop)) if extent.is_bare() => Some(stop),
            _ => None,
        },
        // `v + n if v < 0 else v`: an index or slice bound that counts from
        // the end when negative; the program's data keeps it as written.
        Expr::Select(c, _, b)
            if matches!(c.as_ref(), Expr::Cmp(CmpOp::Lt, x, z)
                if is_zero(z) && **x == **b) =>
        {
            resolve(plan, env, b)
        }
        _ => None,
    }
}

/// `e` with the host's names replaced by what they were bound to: an
/// expression of the arguments alone, as far as the steps say.
fn substitute(plan: &KernelPlan, env: &Env, e: &Expr) -> Expr {
    map_expr(e, &|x| match x {
        Expr::Var(v) if !is_int_param(plan, v) || env.scalar_exprs.contains_key(v) => {
            env.scalar_exprs.get(v).cloned()
        }
        Expr::Shape { array, axis } => env
            .alloc_exprs
            .get(array)
            .and_then(|d| d.get(*axis as usize))
            .cloned(),
        _ => None,
    })
}

/// The value of an integer expression of the arguments (extents and
/// integer arguments), with the unknowns' values `get` gives; `None` where
/// it names something else, or overflows.
pub(super) fn eval(e: &Expr, get: &dyn Fn(&Term) -> Option<i64>) -> Option<i64> {
    let ev = |x: &Expr| eval(x, get);
    Some(match e {
        Expr::Lit(Literal::I64(v)) => *v,
        Expr::Lit(Literal::I32(v)) => i64::from(*v),
        Expr::Shape { array, axis } => get(&Term::Extent(array.clone(), *axis as usize))?,
        Expr::Var(v) => get(&Term::Int(v.clone()))?,
        Expr::Cast(_, a) => ev(a)?,
        Expr::Unary(UnaryOp::Neg, a) => ev(a)?.checked_neg()?,
        Expr::Binary(op, a, b) => {
            let (a, b) = (ev(a)?, ev(b)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::FloorDiv if b != 0 => a.div_euclid(b),
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                _ => return None,
            }
        }
        Expr::Math(MathFn::Pow, args) => match args.as_slice() {
            [a, b] => ev(a)?.checked_pow(u32::try_from(ev(b)?).ok()?)?,
            _ => return None,
        },
        Expr::Select(c, a, b) => {
            let Expr::Cmp(op, x, y) = c.as_ref() else {
                return None;
            };
            let (x, y) = (ev(x)?, ev(y)?);
            if op.holds(x, y) {
                ev(a)?
            } else {
                ev(b)?
            }
        }
        _ => return None,
    })
}

/// Whether `e` names only the unknowns (what [`eval`] can value).
fn of_arguments(plan: &KernelPlan, e: &Expr) -> bool {
    let mut ok = true;
    walk_expr(e, &mut |x| match x {
        Expr::Var(v) if !is_int_param(plan, v) => ok = false,
        Expr::Shape { array, .. } if !is_array_param(plan, array) => ok = false,
        _ => {}
    });
    ok
}

fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::Lit(Literal::I64(0)))
}

fn is_array_param(plan: &KernelPlan, name: &str) -> bool {
    plan.params
        .iter()
        .any(|p| p.name == name && matches!(p.ty, ArgType::Array(_)))
}

fn is_int_param(plan: &KernelPlan, name: &str) -> bool {
    plan.params
        .iter()
        .any(|p| p.name == name && matches!(p.ty, ArgType::Scalar(t) if t.is_int()))
}

/// Every `min(bound, extent)` in `e` whose extent is an unknown.
fn clipped(plan: &KernelPlan, env: &Env, e: &Expr, out: &mut Vec<(Lin, Lin)>) {
    walk_expr(e, &mut |x| {
        if let Expr::Binary(BinOp::Min, a, b) = x {
            match (resolve(plan, env, a), resolve(plan, env, b)) {
                (Some(bound), Some(extent)) | (Some(extent), Some(bound))
                    if extent.is_bare() && !bound.is_bare() =>
                {
                    out.push((extent, bound));
                }
                _ => {}
            }
        }
    });
}

/// The extents of the host array `name`: an allocation's (as far as they
/// resolve), or an argument's own.
fn dims_of(plan: &KernelPlan, env: &Env, name: &str) -> Option<(Vec<Option<Lin>>, Vec<Expr>)> {
    if let (Some(d), Some(x)) = (env.allocs.get(name), env.alloc_exprs.get(name)) {
        return Some((d.clone(), x.clone()));
    }
    match plan.params.iter().find(|p| p.name == name).map(|p| &p.ty) {
        Some(ArgType::Array(a)) => Some(
            (0..a.ndim as usize)
                .map(|axis| {
                    let t = Term::Extent(name.to_string(), axis);
                    let x = Expr::Shape {
                        array: name.to_string(),
                        axis: axis as u8,
                    };
                    (Some(Lin::term(t)), x)
                })
                .unzip(),
        ),
        _ => None,
    }
}

/// `lhs == rhs`, as a linear fact or a computed one.
fn equal(plan: &KernelPlan, env: &Env, lhs: &Expr, rhs: &Expr, f: &mut Facts) {
    if let (Some(a), Some(b)) = (resolve(plan, env, lhs), resolve(plan, env, rhs)) {
        f.equal.push((a, b));
        return;
    }
    let (a, b) = (substitute(plan, env, lhs), substitute(plan, env, rhs));
    if of_arguments(plan, &a) && of_arguments(plan, &b) {
        f.computed.push((a, b));
    }
}

fn facts(plan: &KernelPlan, steps: &[HostStep], env: &mut Env, f: &mut Facts) {
    for s in steps {
        match s {
            HostStep::Scalar { name, value, .. } => {
                clipped(plan, env, value, &mut f.at_least);
                match resolve(plan, env, value) {
                    Some(l) => env.scalars.insert(name.clone(), l),
                    None => env.scalars.remove(name),
                };
                let e = substitute(plan, env, value);
                env.scalar_exprs.insert(name.clone(), e);
            }
            HostStep::Alloc { name, shape, .. } => {
                for d in shape {
                    clipped(plan, env, d, &mut f.at_least);
                }
                let dims: Vec<Option<Lin>> = shape.iter().map(|d| resolve(plan, env, d)).collect();
                // NumPy allocates no negative extent; generated inputs
                // give none an empty one either.
                let exprs: Vec<Expr> = shape.iter().map(|d| substitute(plan, env, d)).collect();
                for (d, x) in dims.iter().zip(&exprs) {
                    match d {
                        Some(d) if !d.terms.is_empty() => {
                            f.at_least.push((d.clone(), Lin::constant(1)));
                        }
                        None if of_arguments(plan, x) => f.computed_positive.push(x.clone()),
                        _ => {}
                    }
                }
                env.allocs.insert(name.clone(), dims);
                env.alloc_exprs.insert(name.clone(), exprs);
            }
            HostStep::Guard(g) => {
                clipped(plan, env, &g.lhs, &mut f.at_least);
                clipped(plan, env, &g.rhs, &mut f.at_least);
                match g.relation {
                    port_rewriter::plan::Relation::Eq => equal(plan, env, &g.lhs, &g.rhs, f),
                    // An index range inside an extent: the extent at least
                    // as large, where both sides are linear.
                    port_rewriter::plan::Relation::Le => {
                        if let (Some(a), Some(b)) =
                            (resolve(plan, env, &g.lhs), resolve(plan, env, &g.rhs))
                        {
                            f.at_least.push((b, a));
                        }
                    }
                }
            }
            HostStep::Loop {
                var, start, body, ..
            } => {
                // The loop variable at its first value.
                env.scalars.remove(var);
                let first = substitute(plan, env, start);
                env.scalar_exprs.insert(var.clone(), first);
                facts(plan, body, env, f);
            }
            HostStep::While { test, body, .. } => {
                facts(plan, test, env, f);
                facts(plan, body, env, f);
            }
            HostStep::If { then, orelse, .. } => {
                // Each branch from what holds before the `if`; after it, a
                // name either branch binds has the extents of both: the code
                // after the join runs on either, so generated inputs make
                // them agree (`X = inv(Tz)` or `X = solve(Tz, Y)`, then
                // `P0 += X`: `Y` takes `Tz`'s shape).
                let mut other = env.clone();
                facts(plan, then, env, f);
                facts(plan, orelse, &mut other, f);
                for (name, dims) in other.allocs {
                    match env.allocs.get(&name) {
                        Some(mine) if *mine != dims => {
                            for (a, b) in mine.iter().zip(&dims) {
                                if let (Some(a), Some(b)) = (a, b) {
                                    f.equal.push((a.clone(), b.clone()));
                                }
                            }
                        }
                        Some(_) => {}
                        None => {
                            env.allocs.insert(name.clone(), dims);
                            if let Some(x) = other.alloc_exprs.remove(&name) {
                                env.alloc_exprs.insert(name, x);
                            }
                        }
                    }
                }
                // A scalar the branches bind differently has no one value.
                env.scalars.retain(|k, v| other.scalars.get(k) == Some(v));
                env.scalar_exprs
                    .retain(|k, v| other.scalar_exprs.get(k) == Some(v));
            }
            HostStep::Rebind { targets, sources } => {
                let dims: Vec<_> = sources.iter().map(|s| dims_of(plan, env, s)).collect();
                for (t, d) in targets.iter().zip(dims) {
                    match d {
                        Some((d, x)) => {
                            env.allocs.insert(t.clone(), d);
                            env.alloc_exprs.insert(t.clone(), x);
                        }
                        None => {
                            env.allocs.remove(t);
                            env.alloc_exprs.remove(t);
                        }
                    };
                }
            }
            _ => {}
        }
    }
}

/// A weighted union-find: `value(t) = value(root(t)) + offset(t)`.
#[derive(Default)]
struct Classes {
    parent: HashMap<Term, (Term, i64)>,
}

impl Classes {
    fn find(&self, t: &Term) -> (Term, i64) {
        let mut cur = t.clone();
        let mut off = 0;
        while let Some((p, o)) = self.parent.get(&cur) {
            off += o;
            cur = p.clone();
        }
        (cur, off)
    }

    /// `a = b + d`; false when it contradicts what is known.
    fn union(&mut self, a: &Term, b: &Term, d: i64) -> bool {
        let (ra, oa) = self.find(a);
        let (rb, ob) = self.find(b);
        if ra == rb {
            return oa == ob + d;
        }
        // value(ra) = value(a) - oa = value(b) + d - oa = value(rb) + ob + d - oa
        self.parent.insert(ra, (rb, ob + d - oa));
        true
    }
}

/// The classes' values, and how each term reads its value from them.
struct Solution {
    classes: Classes,
    roots: HashMap<Term, i64>,
    start: BTreeMap<Term, i64>,
}

impl Solution {
    fn get(&self, t: &Term) -> i64 {
        let (root, off) = self.classes.find(t);
        self.roots
            .get(&root)
            .map_or(self.start.get(t).copied().unwrap_or(0), |r| r + off)
    }

    /// Moves `t`'s class so that `t` is `v`.
    fn set(&mut self, t: &Term, v: i64) {
        let (root, off) = self.classes.find(t);
        self.roots.insert(root, v - off);
    }

    /// The unknowns `e` names that may move (not fixed by a constant),
    /// those of the smallest classes first: an integer argument that only
    /// sizes one array moves before the extent every array shares.
    fn movable(&self, exprs: &[&Expr], pinned: &HashSet<Term>) -> Vec<Term> {
        let mut out: Vec<Term> = Vec::new();
        for e in exprs {
            walk_expr(e, &mut |x| {
                let t = match x {
                    Expr::Shape { array, axis } => Term::Extent(array.clone(), *axis as usize),
                    Expr::Var(v) => Term::Int(v.clone()),
                    _ => return,
                };
                if !out.contains(&t) && !pinned.contains(&self.classes.find(&t).0) {
                    out.push(t);
                }
            });
        }
        let size = |t: &Term| {
            let root = self.classes.find(t).0;
            self.start
                .keys()
                .filter(|u| self.classes.find(u).0 == root)
                .count()
        };
        out.sort_by_key(size);
        out
    }

    /// Moves that would make `a == b` hold, each of one unknown's class:
    /// the equality read as a line through two of its values (`N * C ==
    /// x0 * x1`: `C` takes `x0 * x1 / N`), kept when it then holds.
    fn meet(&mut self, a: &Expr, b: &Expr, pinned: &HashSet<Term>) -> Vec<(Term, i64)> {
        let diff = |s: &Solution| -> Option<i64> {
            eval(a, &|x| Some(s.get(x)))?.checked_sub(eval(b, &|x| Some(s.get(x)))?)
        };
        let Some(d0) = diff(self).filter(|d| *d != 0) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in self.movable(&[a, b], pinned) {
            let v = self.get(&t);
            self.set(&t, v + 1);
            let slope = diff(self).map_or(0, |d1| d1 - d0);
            if slope != 0 && d0 % slope == 0 && v - d0 / slope >= 1 {
                let want = v - d0 / slope;
                self.set(&t, want);
                if diff(self) == Some(0) {
                    out.push((t.clone(), want));
                }
            }
            self.set(&t, v);
        }
        out
    }

    /// Moves that would make the extent `e` at least 1, each doubling one
    /// unknown's class (up to 64 times its value).
    fn grow(&mut self, e: &Expr, pinned: &HashSet<Term>) -> Vec<(Term, i64)> {
        let value = |s: &Solution| eval(e, &|x| Some(s.get(x)));
        if value(self).is_none_or(|v| v >= 1) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for t in self.movable(&[e], pinned) {
            let v = self.get(&t);
            let mut w = v;
            for _ in 0..6 {
                w = w.saturating_mul(2).max(2);
                self.set(&t, w);
                if value(self).is_some_and(|x| x >= 1) {
                    out.push((t.clone(), w));
                    break;
                }
            }
            self.set(&t, v);
        }
        out
    }
}

/// The relations that are not yet met, once every class has its value.
struct Rest<'a> {
    wider: &'a [Lin],
    computed: &'a [(Expr, Expr)],
    positive: &'a [Expr],
    at_least: &'a [(Lin, Lin)],
}

impl Rest<'_> {
    /// How many relations `s` breaks (one that cannot be valued breaks
    /// none: the original decides).
    fn broken(&self, s: &Solution) -> usize {
        let get = |x: &Term| s.get(x);
        let some = |x: &Term| Some(s.get(x));
        self.wider.iter().filter(|d| d.value(&get) != 0).count()
            + self
                .computed
                .iter()
                .filter(
                    |(a, b)| matches!((eval(a, &some), eval(b, &some)), (Some(x), Some(y)) if x != y),
                )
                .count()
            + self
                .positive
                .iter()
                .filter(|e| eval(e, &some).is_some_and(|v| v < 1))
                .count()
            + self
                .at_least
                .iter()
                .filter(|(a, b)| a.value(&get) < b.value(&get))
                .count()
    }

    /// Every move that would meet one broken relation by moving one
    /// class: growing an array to reach a bound first (the program slices
    /// inside its data), then the equalities.
    fn moves(&self, s: &mut Solution, pinned: &HashSet<Term>) -> Vec<(Term, i64)> {
        let mut out = Vec::new();
        for (a, b) in self.at_least {
            let need = b.value(&|x| s.get(x)) - a.value(&|x| s.get(x));
            if need <= 0 {
                continue;
            }
            // Grow an unknown the form counts positively, by as much as
            // its coefficient asks.
            for (t, c) in a.plus(b, -1).terms {
                if c > 0 && !pinned.contains(&s.classes.find(&t).0) {
                    let v = s.get(&t) + (need + c - 1) / c;
                    out.push((t, v));
                }
            }
        }
        for (a, b) in self.computed {
            out.extend(s.meet(a, b, pinned));
        }
        for e in self.positive {
            out.extend(s.grow(e, pinned));
        }
        for d in self.wider {
            let have = d.value(&|x| s.get(x));
            if have == 0 {
                continue;
            }
            for (t, c) in &d.terms {
                let root = s.classes.find(t).0;
                // One unknown of its class in the form, with coefficient ±1.
                let alone = d
                    .terms
                    .keys()
                    .filter(|u| s.classes.find(u).0 == root)
                    .count()
                    == 1;
                if c.abs() == 1 && alone && !pinned.contains(&root) {
                    let v = s.get(t) - have * c;
                    if v >= 1 {
                        out.push((t.clone(), v));
                    }
                }
            }
        }
        out
    }
}

/// The extents and integer arguments `start` becomes once the plan's
/// relations hold, as far as they can be met; `None` when the plan states
/// none (nothing to change).
pub(super) fn fit(plan: &KernelPlan, start: &Shapes, int_default: i64) -> Option<(Shapes, Ints)> {
    let mut f = Facts::default();
    facts(plan, &plan.steps, &mut Env::default(), &mut f);
    if f.equal.is_empty() && f.at_least.is_empty() && f.computed.is_empty() {
        return None;
    }
    let mut value: BTreeMap<Term, i64> = BTreeMap::new();
    for (name, dims) in start {
        for (ax, &e) in dims.iter().enumerate() {
            value.insert(Term::Extent(name.clone(), ax), e as i64);
        }
    }
    for p in &plan.params {
        if is_int_param(plan, &p.name) {
            value.insert(Term::Int(p.name.clone()), int_default);
        }
    }
    let mut classes = Classes::default();
    // `value(t) = v`.
    let mut fixed: Vec<(Term, i64)> = Vec::new();
    // Equalities of more than two unknowns, or with other coefficients.
    let mut wider: Vec<Lin> = Vec::new();
    for (a, b) in &f.equal {
        // a - b == 0.
        let d = a.plus(b, -1);
        let mut ts = d.terms.iter();
        match (ts.next(), ts.next(), ts.next()) {
            (None, _, _) => {}
            // c·t + k == 0.
            (Some((t, c)), None, _) if d.k % c == 0 => fixed.push((t.clone(), -d.k / c)),
            // x - y + k == 0: x = y - k.
            (Some((x, 1)), Some((y, -1)), None) | (Some((y, -1)), Some((x, 1)), None) => {
                classes.union(x, y, -d.k);
            }
            _ => wider.push(d),
        }
    }
    // Each class takes the largest of its members' starting values (an
    // integer argument joins the arrays it sizes), or its fixed value.
    let terms: Vec<Term> = value.keys().cloned().collect();
    let mut roots: HashMap<Term, i64> = HashMap::new();
    for t in &terms {
        let (root, off) = classes.find(t);
        let v = value[t] - off;
        let e = roots.entry(root).or_insert(v);
        *e = (*e).max(v);
    }
    let mut pinned = HashSet::new();
    for (t, v) in &fixed {
        let (root, off) = classes.find(t);
        roots.insert(root.clone(), v - off);
        pinned.insert(root);
    }
    let mut s = Solution {
        classes,
        roots,
        start: value,
    };
    // Every member at least 1.
    for t in &terms {
        let v = s.get(t);
        if v < 1 {
            let (root, _) = s.classes.find(t);
            *s.roots.entry(root).or_insert(v) += 1 - v;
        }
    }
    // The rest by repair (min-conflicts): a move of one class that meets a
    // broken relation is kept when fewer relations are broken after it,
    // until none is or no move helps.
    let rest = Rest {
        wider: &wider,
        computed: &f.computed,
        positive: &f.computed_positive,
        at_least: &f.at_least,
    };
    let mut broken = rest.broken(&s);
    for _ in 0..32 {
        if broken == 0 {
            break;
        }
        // The move that leaves the fewest broken (the first of those).
        let mut best: Option<(usize, Term, i64)> = None;
        for (t, v) in rest.moves(&mut s, &pinned) {
            let was = s.get(&t);
            s.set(&t, v);
            let now = rest.broken(&s);
            s.set(&t, was);
            if now < best.as_ref().map_or(broken, |b| b.0) {
                best = Some((now, t, v));
            }
        }
        let Some((now, t, v)) = best else { break };
        s.set(&t, v);
        broken = now;
    }
    let mut shapes = start.clone();
    for (name, dims) in shapes.iter_mut() {
        for (ax, e) in dims.iter_mut().enumerate() {
            *e = s.get(&Term::Extent(name.clone(), ax)).max(1) as usize;
        }
    }
    let ints: Ints = plan
        .params
        .iter()
        .filter(|p| is_int_param(plan, &p.name))
        .map(|p| (p.name.clone(), s.get(&Term::Int(p.name.clone())).max(1)))
        .collect();
    Some((shapes, ints))
}
