//! Fitting generated extents and integer arguments to what the plan says
//! of them. A plan states, in its host steps, the relations NumPy would
//! check on the real arguments: its guards (`A.shape[0] == NR`, a
//! broadcast's `max(u.shape[0] - 2, 0) == max(b.shape[0] - 2, 0)`), and
//! the slices it clips (`min(I + 4, in_field.shape[0])`: a program written
//! for its data slices inside the array). Generated inputs that break
//! them make the original raise before anything is compared.
//!
//! The unknowns are the extents of the array arguments and the integer
//! arguments. A guard between two of them, each plus a constant, makes
//! them one class (a weighted union-find: each member is its root plus an
//! offset); a guard against a constant fixes the class; a clipped slice
//! asks its array's extent to reach the bound. Integer arguments that no
//! relation names keep their small value: they count iterations.

use std::collections::{BTreeMap, HashMap};

use port_codegen::ir::{BinOp, Expr};
use port_rewriter::plan::{HostStep, KernelPlan};
use port_rewriter::types::ArgType;

/// An unknown: an array argument's extent, or an integer argument.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Term {
    Extent(String, usize),
    Int(String),
}

/// `term + k`, or the constant `k`.
type Lin = (Option<Term>, i64);

/// The integer arguments' values, by name.
pub(super) type Ints = BTreeMap<String, i64>;

/// Shapes of every array argument, by name.
pub(super) type Shapes = BTreeMap<String, Vec<usize>>;

/// What the host steps say, resolved to the unknowns.
#[derive(Default)]
struct Facts {
    /// `a == b`.
    equal: Vec<(Lin, Lin)>,
    /// `extent >= bound`: a slice clipped at the extent.
    at_least: Vec<(Lin, Lin)>,
}

/// Host names known as `term + k`: scalars, and allocated arrays' extents.
#[derive(Default)]
struct Env {
    scalars: HashMap<String, Lin>,
    allocs: HashMap<String, Vec<Option<Lin>>>,
}

fn resolve(plan: &KernelPlan, env: &Env, e: &Expr) -> Option<Lin> {
    match e {
        Expr::Lit(port_codegen::ir::Literal::I64(v)) => Some((None, *v)),
        Expr::Lit(port_codegen::ir::Literal::I32(v)) => Some((None, i64::from(*v))),
        Expr::Cast(_, a) => resolve(plan, env, a),
        Expr::Shape { array, axis } => {
            let axis = *axis as usize;
            if is_array_param(plan, array) {
                return Some((Some(Term::Extent(array.clone(), axis)), 0));
            }
            env.allocs.get(array)?.get(axis)?.clone()
        }
        Expr::Var(v) => {
            if is_int_param(plan, v) {
                return Some((Some(Term::Int(v.clone())), 0));
            }
            env.scalars.get(v).cloned()
        }
        Expr::Binary(BinOp::Add, a, b) => {
            let (a, b) = (resolve(plan, env, a)?, resolve(plan, env, b)?);
            match (a, b) {
                ((t, x), (None, y)) | ((None, x), (t, y)) => Some((t, x + y)),
                _ => None,
            }
        }
        Expr::Binary(BinOp::Sub, a, b) => match (resolve(plan, env, a)?, resolve(plan, env, b)?) {
            ((t, x), (None, y)) => Some((t, x - y)),
            _ => None,
        },
        // `max(n - 2, 0)`: an extent of a slice, which the program's data
        // does not make empty.
        Expr::Binary(BinOp::Max, a, b) if is_zero(b) => resolve(plan, env, a),
        Expr::Binary(BinOp::Max, a, b) if is_zero(a) => resolve(plan, env, b),
        // `min(stop, n)`: the program slices inside the array (see
        // `Facts::at_least`), so the stop it wrote is the value.
        Expr::Binary(BinOp::Min, a, b) => match (resolve(plan, env, a), resolve(plan, env, b)) {
            (Some(stop), Some(extent)) if is_bare(&extent) => Some(stop),
            (Some(extent), Some(stop)) if is_bare(&extent) => Some(stop),
            _ => None,
        },
        // `v + n if v < 0 else v`: an index or slice bound that counts from
        // the end when negative; the program's data keeps it as written.
        Expr::Select(c, _, b)
            if matches!(c.as_ref(), Expr::Cmp(port_codegen::ir::CmpOp::Lt, x, z)
                if is_zero(z) && **x == **b) =>
        {
            resolve(plan, env, b)
        }
        _ => None,
    }
}

fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::Lit(port_codegen::ir::Literal::I64(0)))
}

fn is_bare(l: &Lin) -> bool {
    matches!(l, (Some(_), 0))
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
    port_codegen::ir::walk_expr(e, &mut |x| {
        if let Expr::Binary(BinOp::Min, a, b) = x {
            match (resolve(plan, env, a), resolve(plan, env, b)) {
                (Some(bound), Some(extent)) | (Some(extent), Some(bound))
                    if is_bare(&extent) && !is_bare(&bound) =>
                {
                    out.push((extent, bound));
                }
                _ => {}
            }
        }
    });
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
            }
            HostStep::Alloc { name, shape, .. } => {
                for d in shape {
                    clipped(plan, env, d, &mut f.at_least);
                }
                let dims = shape.iter().map(|d| resolve(plan, env, d)).collect();
                env.allocs.insert(name.clone(), dims);
            }
            HostStep::Guard(g) => {
                clipped(plan, env, &g.lhs, &mut f.at_least);
                clipped(plan, env, &g.rhs, &mut f.at_least);
                if let (Some(a), Some(b)) = (resolve(plan, env, &g.lhs), resolve(plan, env, &g.rhs))
                {
                    f.equal.push((a, b));
                }
            }
            HostStep::Loop { var, body, .. } => {
                // The loop variable has no one value.
                env.scalars.remove(var);
                facts(plan, body, env, f);
            }
            HostStep::While { test, body, .. } => {
                facts(plan, test, env, f);
                facts(plan, body, env, f);
            }
            HostStep::If { then, orelse, .. } => {
                facts(plan, then, env, f);
                facts(plan, orelse, env, f);
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

/// The extents and integer arguments `start` becomes once the plan's
/// relations hold, as far as they can be met; `None` when the plan states
/// none (nothing to change).
pub(super) fn fit(plan: &KernelPlan, start: &Shapes, int_default: i64) -> Option<(Shapes, Ints)> {
    let mut f = Facts::default();
    facts(plan, &plan.steps, &mut Env::default(), &mut f);
    if f.equal.is_empty() && f.at_least.is_empty() {
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
    for ((a, ka), (b, kb)) in &f.equal {
        match (a, b) {
            // a + ka == b + kb: a = b + (kb - ka).
            (Some(a), Some(b)) => {
                classes.union(a, b, kb - ka);
            }
            // t + k_t == k_c.
            (Some(t), None) | (None, Some(t)) => {
                let (k_t, k_c) = if a.is_some() { (ka, kb) } else { (kb, ka) };
                fixed.push((t.clone(), k_c - k_t));
            }
            (None, None) => {}
        }
    }
    // Each class takes the largest of its members' starting values (an
    // integer argument joins the arrays it sizes), or its fixed value.
    let terms: Vec<Term> = value.keys().cloned().collect();
    let mut root_value: HashMap<Term, i64> = HashMap::new();
    for t in &terms {
        let (root, off) = classes.find(t);
        let v = value[t] - off;
        let e = root_value.entry(root).or_insert(v);
        *e = (*e).max(v);
    }
    for (t, v) in &fixed {
        let (root, off) = classes.find(t);
        root_value.insert(root, v - off);
    }
    let get = |t: &Term, roots: &HashMap<Term, i64>| -> i64 {
        let (root, off) = classes.find(t);
        roots
            .get(&root)
            .map_or(value.get(t).copied().unwrap_or(0), |r| r + off)
    };
    // Every member at least 1.
    for t in &terms {
        let v = get(t, &root_value);
        if v < 1 {
            let (root, _) = classes.find(t);
            *root_value.get_mut(&root).expect("every term has a root") += 1 - v;
        }
    }
    // Clipped slices: the extent reaches the bound (its whole class grows).
    for _ in 0..=f.at_least.len() {
        let mut changed = false;
        for ((e, ke), (b, kb)) in &f.at_least {
            let Some(e) = e else { continue };
            let bound = b.as_ref().map_or(0, |t| get(t, &root_value)) + kb;
            let have = get(e, &root_value) + ke;
            if have < bound {
                let (root, _) = classes.find(e);
                if let Some(r) = root_value.get_mut(&root) {
                    *r += bound - have;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut shapes = start.clone();
    for (name, dims) in shapes.iter_mut() {
        for (ax, e) in dims.iter_mut().enumerate() {
            *e = get(&Term::Extent(name.clone(), ax), &root_value).max(1) as usize;
        }
    }
    let ints: Ints = plan
        .params
        .iter()
        .filter(|p| is_int_param(plan, &p.name))
        .map(|p| {
            let v = get(&Term::Int(p.name.clone()), &root_value).max(1);
            (p.name.clone(), v)
        })
        .collect();
    Some((shapes, ints))
}
