//! **bounds** — every index a kernel reads or writes an argument's array
//! at stays inside that array, or the kernel does not run.
//!
//! Python raises `IndexError` for `b[i]` past `b`'s end, and reads from
//! the end for an index down to `-len(b)`; a kernel reads whatever memory
//! is there (or writes it). A user's call with arrays shorter than the
//! loops that index them (`for i in range(L.shape[0]): y[i] = b[i]` with a
//! short `b`) would give garbage, or corrupt device memory, where the
//! original raises. So before each launch the host checks, from the
//! kernel's own index arithmetic, the highest and lowest index of each
//! axis of each array argument against its extent.
//!
//! The facts are interval bounds over the kernel's integer parameters and
//! the arrays' extents: a `range` loop's variable lies in
//! `[start, stop - 1]` (grid-stride loops too: the thread's first index is
//! at least 0), a local bound once takes its value's bounds, an `if i < n`
//! narrows `i` in its branch, and `+`, `-`, a constant or an extent times
//! a bound, `//` by a positive constant, `min`, `max` and Python's `%`
//! carry them. An index Python may wrap (`x[i - 1]`, lowered as
//! `i - 1 + n if i - 1 < 0 else i - 1`) may go down to `-n`. An index
//! through a slice's normalised bounds is inside by construction (the
//! slice's extent is what the equality guards check). Where a rule is
//! missing (an index read from memory, a product of two variables) the
//! index is taken on trust, and the log says which arrays, per line.
//!
//! Each check is a [`ShapeGuard`] with [`Relation::Le`] in the host's
//! names (host scalars bound once replaced by their values, allocations
//! by their extents), kept only when it reads nothing but the arguments:
//! the guard placement of [`crate::lower::shapes`] then moves it to the
//! wrapper's entry, where a failing one runs the original function (which
//! raises, or wraps, as Python does), or drops it where it holds by
//! arithmetic (`n <= x.shape[0]` where `n = x.shape[0]`). A bound that
//! reads a host loop's variable or a value read back from the device is
//! taken on trust: checked halfway through, a loose bound could only
//! raise, and interval bounds over the loop's range lose what ties the
//! variable to the kernel's extents (`k < min(i + K, n) - i`).

use std::collections::{BTreeMap, HashMap, HashSet};

use port_codegen::ir::{BinOp, CmpOp, ElemRef, Expr, Kernel, Literal, Special, Stmt, Type};

use crate::lower::shapes::Fixed;
use crate::numpy::array_expr::{constant_difference, tidy};
use crate::numpy::extents::extent_text;
use crate::plan::{HostStep, KernelPlan, Relation, ShapeGuard};

/// The pass: a guard for each index range it can bound, in terms of the
/// arguments alone (so that it is checked at entry, where a failing one
/// runs the original); the others are taken on trust. Gives a note per
/// kernel line naming the arrays some index of which is taken on trust.
pub fn bound_plan(plan: &mut KernelPlan) -> Vec<String> {
    let fixed = crate::lower::shapes::fixed_allocations(plan);
    let params: HashSet<String> = plan.params.iter().map(|p| p.name.clone()).collect();
    let rebound = crate::lower::shapes::bound_names(&plan.steps);
    let ints: HashSet<String> = plan
        .params
        .iter()
        .filter(|p| matches!(p.ty, crate::types::ArgType::Scalar(t) if t.is_int()))
        .map(|p| p.name.clone())
        .collect();
    let mut pass = Pass {
        module: &plan.module,
        docs: &plan.docs,
        fixed: &fixed,
        params: &params,
        ints: &ints,
        rebound: &rebound,
        trust: BTreeMap::new(),
    };
    pass.steps(&mut plan.steps);
    pass.trust
        .into_iter()
        .map(|(line, arrays)| {
            let arrays: Vec<String> = arrays.iter().map(|a| format!("`{a}`")).collect();
            format!(
                "indices of {} in the kernels of line {line} taken on trust: no bound in the arguments' extents",
                arrays.join(", ")
            )
        })
        .collect()
}

struct Pass<'a> {
    module: &'a port_codegen::ir::Module,
    docs: &'a BTreeMap<String, String>,
    fixed: &'a Fixed,
    params: &'a HashSet<String>,
    /// The function's integer parameters.
    ints: &'a HashSet<String>,
    rebound: &'a HashSet<String>,
    trust: BTreeMap<u32, Vec<String>>,
}

impl Pass<'_> {
    /// Each launch of `steps` gets its guards just before it.
    fn steps(&mut self, steps: &mut Vec<HostStep>) {
        let mut kept = Vec::with_capacity(steps.len());
        for mut s in std::mem::take(steps) {
            if let HostStep::Launch { kernel, args, .. } = &s {
                if let Some(k) = self.module.kernel(kernel) {
                    let line = kernel_line(self.docs.get(kernel).map(String::as_str));
                    self.launch(k, args, line, &mut kept);
                }
            }
            for b in s.bodies_mut() {
                self.steps(b);
            }
            kept.push(s);
        }
        *steps = kept;
    }

    fn launch(&mut self, k: &Kernel, args: &[String], line: u32, out: &mut Vec<HostStep>) {
        let (guards, unbounded) = kernel_guards(k, args, self.fixed, self.ints, line);
        let at = self.trust.entry(line).or_default();
        let mut note = |a: String| {
            if !at.contains(&a) {
                at.push(a);
            }
        };
        for a in unbounded {
            note(a);
        }
        for (g, array) in guards {
            // Only what the arguments decide, checked at entry, where a
            // failing guard runs the original: a bound read from the
            // host's read-backs would be checked halfway through.
            let names = crate::lower::shapes::guard_names(&g);
            if names
                .iter()
                .all(|n| self.params.contains(n) && !self.rebound.contains(n))
            {
                out.push(HostStep::Guard(g));
            } else {
                note(array);
            }
        }
        if at.is_empty() {
            self.trust.remove(&line);
        }
    }
}

/// The source line a kernel's docstring names (`The loop at line 5 …`,
/// `Line 6 of …`), or 0.
fn kernel_line(doc: Option<&str>) -> u32 {
    let Some(doc) = doc else { return 0 };
    let lower = doc.to_ascii_lowercase();
    lower
        .find("line ")
        .and_then(|at| {
            lower[at + 5..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// A variable's bounds, each inclusive, `None` where unknown.
#[derive(Clone, Debug, Default)]
struct Range {
    lo: Option<Expr>,
    hi: Option<Expr>,
    /// A local bound once: its value.
    def: Option<Expr>,
    /// A loop's variable: its first and last values as written (in the
    /// names around the loop), and how deep the loop is.
    first: Option<Expr>,
    last: Option<Expr>,
    depth: usize,
}

struct Cx<'a> {
    /// Integer scalar parameters (never assigned in the kernel).
    ints: HashSet<&'a str>,
    /// Array parameters.
    arrays: HashSet<&'a str>,
    /// Names some statement assigns after their `Let`: no single value.
    assigned: HashSet<String>,
}

/// One requirement on an axis of an array argument.
struct Need {
    array: String,
    axis: u8,
    /// The highest index, when known.
    hi: Option<Expr>,
    /// The lowest index, when known; `wraps` when Python's negative
    /// indexing applies to it (it may go down to minus the extent).
    lo: Option<Expr>,
    wraps: bool,
}

/// The guards a launch of `k` with `args` needs, each with the host array
/// it bounds, and the host arrays with an index it cannot bound.
fn kernel_guards(
    k: &Kernel,
    args: &[String],
    fixed: &Fixed,
    function_ints: &HashSet<String>,
    line: u32,
) -> (Vec<(ShapeGuard, String)>, Vec<String>) {
    // The kernel in the host's names: its parameters as the launch's
    // arguments, its locals under names no host name has.
    let mut rename: HashMap<String, String> = k
        .params
        .iter()
        .zip(args)
        .map(|(p, a)| (p.name.clone(), a.clone()))
        .collect();
    for l in crate::ir_util::locals(&k.body) {
        if !rename.contains_key(&l) {
            rename.insert(l.clone(), format!("{l}\u{b7}kernel"));
        }
    }
    let body = crate::ir_util::rename_body(&k.body, &rename);
    let mut assigned = HashSet::new();
    collect_assigned(&body, &mut assigned);
    let kernel_ints = k
        .params
        .iter()
        .zip(args)
        .filter(|(p, _)| matches!(p.ty, Type::Scalar(t) if t.is_int()))
        .map(|(_, a)| a.clone());
    let ints: HashSet<String> = function_ints
        .iter()
        .cloned()
        .chain(kernel_ints)
        .filter(|n| !assigned.contains(n))
        .collect();
    let arrays: HashSet<String> = k
        .params
        .iter()
        .zip(args)
        .filter(|(p, _)| matches!(p.ty, Type::Array(_)))
        .map(|(_, a)| a.clone())
        .collect();
    let cx = Cx {
        ints: ints.iter().map(String::as_str).collect(),
        arrays: arrays.iter().map(String::as_str).collect(),
        assigned,
    };
    // The host scalars bound once, as their values (a few rounds: `n = m
    // - 1`), and the arrays allocated once, as their extents.
    let host = |e: &Expr| -> Expr { tidy(&normalise(&fixed.expand(e))) };
    // A host loop's variable is one value per launch: a guard that reads
    // it is not one the entry can check. (Bounding it by the loop's range
    // loses what ties it to the kernel's own extents, `k < min(i + K, n)
    // - i`, and would check too much.)
    let mut env: HashMap<String, Range> = HashMap::new();
    let mut needs = Vec::new();
    cx.block(&body, &mut env, &mut needs);

    let mut guards: Vec<(ShapeGuard, String)> = Vec::new();
    let mut trust: Vec<String> = Vec::new();
    let push = |g: ShapeGuard, array: String, guards: &mut Vec<(ShapeGuard, String)>| {
        // Always true (`n - 1 + 1 <= n`, `min(n, m) <= n`): no check.
        if crate::lower::shapes::le_holds(&g.lhs, &g.rhs) {
            return;
        }
        // Of two bounds on one extent a constant apart, the tighter.
        for (old, _) in guards.iter_mut() {
            if old.relation != g.relation {
                continue;
            }
            if old.rhs == g.rhs {
                if let Some(d) = constant_difference(&g.lhs, &old.lhs) {
                    if d > 0 {
                        *old = g;
                    }
                    return;
                }
            }
            if old.lhs == g.lhs {
                if let Some(d) = constant_difference(&g.rhs, &old.rhs) {
                    if d < 0 {
                        *old = g;
                    }
                    return;
                }
            }
        }
        guards.push((g, array));
    };
    for n in needs {
        let host_array = n.array.as_str();
        // The extent as the host knows it: an allocation's, the
        // arguments' extents it was allocated with.
        let extent = host(&Expr::Shape {
            array: n.array.clone(),
            axis: n.axis,
        });
        let shown = format!("`{host_array}` along axis {}", n.axis);
        match &n.hi {
            Some(hi) => {
                let hi = host(hi);
                let lhs = tidy(&add(hi.clone(), 1));
                push(
                    ShapeGuard {
                        lhs_text: extent_text(&lhs),
                        rhs_text: extent_text(&extent),
                        lhs,
                        rhs: extent.clone(),
                        line,
                        what: format!(
                            "an index of {shown} reaches `{}`, past its end",
                            extent_text(&hi)
                        ),
                        specialised: false,
                        relation: Relation::Le,
                    },
                    host_array.to_string(),
                    &mut guards,
                );
            }
            None => trust.push(host_array.to_string()),
        }
        match &n.lo {
            Some(lo) => {
                let lo = host(lo);
                // Python's index down to minus the extent: `-lo <= n`,
                // nothing to check where `lo` is no negative constant.
                let (lhs, rhs) = if n.wraps {
                    if int_lit(&lo).is_some_and(|v| v >= 0) {
                        continue;
                    }
                    let neg = match int_lit(&lo) {
                        Some(v) => lit(-v),
                        None => bin(BinOp::Sub, lit(0), lo.clone()),
                    };
                    (tidy(&neg), extent.clone())
                } else {
                    (lit(0), lo.clone())
                };
                push(
                    ShapeGuard {
                        lhs_text: extent_text(&lhs),
                        rhs_text: extent_text(&rhs),
                        lhs,
                        rhs,
                        line,
                        what: if n.wraps {
                            format!(
                                "an index of {shown} goes down to `{}`, before its start",
                                extent_text(&lo)
                            )
                        } else {
                            format!("an index of {shown} goes down to `{}`", extent_text(&lo))
                        },
                        specialised: false,
                        relation: Relation::Le,
                    },
                    host_array.to_string(),
                    &mut guards,
                );
            }
            None => trust.push(host_array.to_string()),
        }
    }
    (guards, trust)
}

fn collect_assigned(body: &[Stmt], out: &mut HashSet<String>) {
    for s in body {
        match s {
            Stmt::Assign { name, .. } => {
                out.insert(name.clone());
            }
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                collect_assigned(then_body, out);
                collect_assigned(else_body, out);
            }
            Stmt::While { body, .. } => collect_assigned(body, out),
            Stmt::For { body, .. } => collect_assigned(body, out),
            Stmt::ParallelFor(p) => collect_assigned(&p.body, out),
            _ => {}
        }
    }
}

fn lit(v: i64) -> Expr {
    Expr::Lit(Literal::I64(v))
}

fn add(e: Expr, c: i64) -> Expr {
    if c < 0 {
        bin(BinOp::Sub, e, lit(-c))
    } else {
        bin(BinOp::Add, e, lit(c))
    }
}

/// `a op b`, a constant term written last (`n - 3 + 1`, which
/// [`tidy`] folds).
fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    match (op, int_lit(&a), int_lit(&b)) {
        (BinOp::Add, Some(c), None) => add(b, c),
        (BinOp::Add | BinOp::Sub, None, Some(c)) if !matches!(b, Expr::Lit(Literal::I64(_))) => {
            add(a, if op == BinOp::Add { c } else { -c })
        }
        (BinOp::Add, None, Some(c)) if c < 0 => add(a, c),
        _ => Expr::Binary(op, Box::new(a), Box::new(b)),
    }
}

/// An integer literal's value.
fn int_lit(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(Literal::I64(v)) => Some(*v),
        Expr::Lit(Literal::I32(v)) => Some(i64::from(*v)),
        Expr::Cast(_, x) => int_lit(x),
        _ => None,
    }
}

/// Whether `e` is positive whatever the launch: a positive literal, a
/// block's or the grid's size, or a product of such.
fn positive(e: &Expr) -> bool {
    match e {
        Expr::Special(Special::BlockDim | Special::GridDim, _) => true,
        Expr::Binary(BinOp::Mul, a, b) => positive(a) && positive(b),
        Expr::Cast(_, x) => positive(x),
        other => int_lit(other).is_some_and(|v| v > 0),
    }
}

impl Cx<'_> {
    fn block(&self, body: &[Stmt], env: &mut HashMap<String, Range>, needs: &mut Vec<Need>) {
        for s in body {
            self.stmt(s, env, needs);
        }
    }

    fn stmt(&self, s: &Stmt, env: &mut HashMap<String, Range>, needs: &mut Vec<Need>) {
        match s {
            Stmt::Let { name, init, .. } => {
                self.expr_needs(init, env, needs);
                if !self.assigned.contains(name) {
                    let r = Range {
                        lo: self.lo(init, env),
                        hi: self.hi(init, env),
                        def: Some(init.clone()),
                        ..Range::default()
                    };
                    env.insert(name.clone(), r);
                }
            }
            Stmt::Assign { value, .. } | Stmt::Eval(value) => self.expr_needs(value, env, needs),
            Stmt::Return(Some(value)) => self.expr_needs(value, env, needs),
            Stmt::Store { target, value } => {
                self.elem(target, env, needs);
                self.expr_needs(value, env, needs);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                self.expr_needs(cond, env, needs);
                let mut then_env = env.clone();
                self.narrow(cond, &mut then_env);
                self.block(then_body, &mut then_env, needs);
                let mut else_env = env.clone();
                if let Some(not) = negated(cond) {
                    self.narrow(&not, &mut else_env);
                }
                self.block(else_body, &mut else_env, needs);
            }
            Stmt::While { cond, body } => {
                self.expr_needs(cond, env, needs);
                let mut inner = env.clone();
                self.block(body, &mut inner, needs);
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => {
                for e in [start, stop, step] {
                    self.expr_needs(e, env, needs);
                }
                let depth = env.values().map(|r| r.depth).max().unwrap_or(0) + 1;
                let r = if self.assigned.contains(var) {
                    Range::default()
                } else if positive(step) {
                    let stop = running_stop(start, stop);
                    Range {
                        lo: self.lo(start, env),
                        hi: self.hi(stop, env).map(|h| add(h, -1)),
                        first: Some(start.clone()),
                        last: Some(add(stop.clone(), -1)),
                        depth,
                        ..Range::default()
                    }
                } else if int_lit(step).is_some_and(|v| v < 0) {
                    Range {
                        lo: self.lo(stop, env).map(|l| add(l, 1)),
                        hi: self.hi(start, env),
                        first: Some(add(stop.clone(), 1)),
                        last: Some(start.clone()),
                        depth,
                        ..Range::default()
                    }
                } else {
                    Range::default()
                };
                let mut inner = env.clone();
                inner.insert(var.clone(), r);
                self.block(body, &mut inner, needs);
            }
            Stmt::ParallelFor(p) => {
                let mut inner = env.clone();
                let depth = env.values().map(|r| r.depth).max().unwrap_or(0) + 1;
                for (v, e) in p.vars.iter().zip(&p.extents) {
                    self.expr_needs(e, env, needs);
                    let r = if self.assigned.contains(v) {
                        Range::default()
                    } else {
                        let e = running_stop(&lit(0), e);
                        Range {
                            lo: Some(lit(0)),
                            hi: self.hi(e, env).map(|h| add(h, -1)),
                            first: Some(lit(0)),
                            last: Some(add(e.clone(), -1)),
                            depth,
                            ..Range::default()
                        }
                    };
                    inner.insert(v.clone(), r);
                }
                self.block(&p.body, &mut inner, needs);
            }
            _ => {}
        }
    }

    /// `env` where `cond` holds: a variable compared with a bound.
    fn narrow(&self, cond: &Expr, env: &mut HashMap<String, Range>) {
        match cond {
            Expr::Binary(BinOp::And, a, b) => {
                self.narrow(a, env);
                self.narrow(b, env);
            }
            Expr::Cmp(op, a, b) => {
                let flipped = match op {
                    CmpOp::Lt => CmpOp::Gt,
                    CmpOp::Le => CmpOp::Ge,
                    CmpOp::Gt => CmpOp::Lt,
                    CmpOp::Ge => CmpOp::Le,
                    other => *other,
                };
                for (op, v, e) in [(*op, a, b), (flipped, b, a)] {
                    // `v + c < e` narrows `v` below `e - c`.
                    let (v, shift) = match v.as_ref() {
                        Expr::Binary(BinOp::Add, x, c) if int_lit(c).is_some() => {
                            (x.as_ref(), int_lit(c).unwrap_or(0))
                        }
                        Expr::Binary(BinOp::Sub, x, c) if int_lit(c).is_some() => {
                            (x.as_ref(), -int_lit(c).unwrap_or(0))
                        }
                        other => (other, 0),
                    };
                    let name = match v {
                        Expr::Var(n) => n,
                        Expr::Cast(_, x) => match x.as_ref() {
                            Expr::Var(n) => n,
                            _ => continue,
                        },
                        _ => continue,
                    };
                    let e = &Box::new(add((**e).clone(), -shift));
                    let Some(r) = env.get(name).cloned() else {
                        continue;
                    };
                    let mut r = r;
                    if r.depth > 0 {
                        // The loop's own ends, narrowed as written.
                        match op {
                            CmpOp::Lt | CmpOp::Le => {
                                let h = if op == CmpOp::Lt {
                                    add((**e).clone(), -1)
                                } else {
                                    (**e).clone()
                                };
                                r.last = r.last.take().map(|l| bin(BinOp::Min, l, h));
                            }
                            CmpOp::Gt | CmpOp::Ge => {
                                let l = if op == CmpOp::Gt {
                                    add((**e).clone(), 1)
                                } else {
                                    (**e).clone()
                                };
                                r.first = r.first.take().map(|f| bin(BinOp::Max, f, l));
                            }
                            _ => {}
                        }
                    }
                    match op {
                        CmpOp::Lt | CmpOp::Le => {
                            if let Some(h) = self.hi(e, env) {
                                let h = if op == CmpOp::Lt { add(h, -1) } else { h };
                                r.hi = Some(match r.hi {
                                    Some(old) => tighter(BinOp::Min, old, h),
                                    None => h,
                                });
                            }
                        }
                        CmpOp::Gt | CmpOp::Ge => {
                            if let Some(l) = self.lo(e, env) {
                                let l = if op == CmpOp::Gt { add(l, 1) } else { l };
                                r.lo = Some(match r.lo {
                                    Some(old) => tighter(BinOp::Max, old, l),
                                    None => l,
                                });
                            }
                        }
                        _ => {}
                    }
                    env.insert(name.clone(), r);
                }
            }
            _ => {}
        }
    }

    /// The accesses inside an expression.
    fn expr_needs(&self, e: &Expr, env: &HashMap<String, Range>, needs: &mut Vec<Need>) {
        match e {
            Expr::Load(r) => self.elem(r, env, needs),
            Expr::Atomic(_, r, v) => {
                self.elem(r, env, needs);
                self.expr_needs(v, env, needs);
            }
            Expr::AtomicCas(r, a, b) => {
                self.elem(r, env, needs);
                self.expr_needs(a, env, needs);
                self.expr_needs(b, env, needs);
            }
            Expr::Select(c, a, b) => {
                self.expr_needs(c, env, needs);
                // Each side is evaluated: both are read.
                self.expr_needs(a, env, needs);
                self.expr_needs(b, env, needs);
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Part(_, a) => {
                self.expr_needs(a, env, needs)
            }
            Expr::Binary(_, a, b) | Expr::Cmp(_, a, b) | Expr::Complex(a, b) => {
                self.expr_needs(a, env, needs);
                self.expr_needs(b, env, needs);
            }
            Expr::Math(_, xs) | Expr::Call(_, xs) => {
                for x in xs {
                    self.expr_needs(x, env, needs);
                }
            }
            Expr::Lit(_) | Expr::Var(_) | Expr::Special(..) | Expr::Shape { .. } => {}
        }
    }

    fn elem(&self, r: &ElemRef, env: &HashMap<String, Range>, needs: &mut Vec<Need>) {
        for i in &r.indices {
            self.expr_needs(i, env, needs);
        }
        if !self.arrays.contains(r.array.as_str()) {
            return;
        }
        for (axis, i) in r.indices.iter().enumerate() {
            if slice_index(i, &r.array, axis) {
                continue;
            }
            let (index, wraps) = match python_index(i, &r.array, axis) {
                Some(inner) => (inner, true),
                None => (i, false),
            };
            // The loops' ends as written first (they keep what ties an
            // index to the extents it runs over), intervals otherwise.
            needs.push(Need {
                array: r.array.clone(),
                axis: axis as u8,
                hi: self
                    .symbolic(index, env, true)
                    .or_else(|| self.hi(index, env)),
                lo: self
                    .symbolic(index, env, false)
                    .or_else(|| self.lo(index, env)),
                wraps,
            });
        }
    }

    /// An upper (`up`) or lower bound of `e` by eliminating the loops'
    /// variables innermost first: each is replaced by its last value where
    /// the bound grows with it and its first where it shrinks, after the
    /// expression is put in a form whose terms cancel (`min(i + k, n) - i`
    /// is `min(k, n - i)`). `None` where a variable occurs both ways or
    /// inside an operation that is not monotone.
    fn symbolic(&self, e: &Expr, env: &HashMap<String, Range>, up: bool) -> Option<Expr> {
        let expand = |e: &Expr| -> Expr {
            crate::ir_util::map_expr_repeated(e, 8, &|x| match x {
                Expr::Var(n) => env.get(n).and_then(|r| r.def.clone()),
                _ => None,
            })
        };
        let mut x = wraps_enveloped(&normalise(&expand(e)), up)?;
        for _ in 0..16 {
            let mut inner: Option<(String, &Range)> = None;
            port_codegen::ir::walk_expr(&x, &mut |y| {
                if let Expr::Var(n) = y {
                    if let Some(r) = env.get(n).filter(|r| r.depth > 0) {
                        if inner.as_ref().is_none_or(|(_, o)| r.depth > o.depth) {
                            inner = Some((n.clone(), r));
                        }
                    }
                }
            });
            let Some((v, r)) = inner else { break };
            let v = v.as_str();
            let grows = match polarity(&x, v)? {
                0 => break,
                p => (p > 0) == up,
            };
            let end = if grows {
                r.last.as_ref()?
            } else {
                r.first.as_ref()?
            };
            let end = expand(end);
            x = wraps_enveloped(
                &normalise(&crate::ir_util::map_expr(&x, &|y| match y {
                    Expr::Var(n) if n == v => Some(end.clone()),
                    _ => None,
                })),
                up,
            )?;
        }
        // A thread's coordinates are at least 0.
        if !up && matches!(polarity_of_specials(&x), Some(p) if p >= 0) {
            x = normalise(&crate::ir_util::map_expr(&x, &|y| match y {
                Expr::Special(..) => Some(lit(0)),
                _ => None,
            }));
        }
        let mut ok = true;
        port_codegen::ir::walk_expr(&x, &mut |y| match y {
            Expr::Var(n) => ok &= self.ints.contains(n.as_str()),
            Expr::Shape { array, .. } => ok &= self.arrays.contains(array.as_str()),
            Expr::Lit(Literal::I64(_) | Literal::I32(_)) | Expr::Cast(..) => {}
            Expr::Binary(
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Min | BinOp::Max | BinOp::FloorDiv,
                ..,
            ) => {}
            _ => ok = false,
        });
        ok.then(|| tidy(&x))
    }

    fn hi(&self, e: &Expr, env: &HashMap<String, Range>) -> Option<Expr> {
        self.bound(e, env, true)
    }

    fn lo(&self, e: &Expr, env: &HashMap<String, Range>) -> Option<Expr> {
        self.bound(e, env, false)
    }

    /// An upper (`up`) or lower bound of the integer `e` over every
    /// iteration, in the kernel's parameters and extents.
    fn bound(&self, e: &Expr, env: &HashMap<String, Range>, up: bool) -> Option<Expr> {
        if let Some(v) = int_lit(e) {
            return Some(lit(v));
        }
        match e {
            Expr::Var(n) => {
                if let Some(r) = env.get(n) {
                    return if up { r.hi.clone() } else { r.lo.clone() };
                }
                self.ints.contains(n.as_str()).then(|| e.clone())
            }
            Expr::Shape { array, .. } => self.arrays.contains(array.as_str()).then(|| e.clone()),
            // A thread's or block's index, a block's or the grid's size.
            Expr::Special(..) => (!up).then(|| lit(0)),
            Expr::Cast(t, x) if t.is_int() => self.bound(x, env, up),
            Expr::Binary(op, a, b) => {
                if let Some((x, m)) = crate::ir_util::match_py_mod(e) {
                    // Python's `%` by a positive modulus: `[0, m - 1]`.
                    let _ = x;
                    if positive(m) || matches!(m, Expr::Shape { .. }) {
                        return if up {
                            self.hi(m, env).map(|h| add(h, -1))
                        } else {
                            Some(lit(0))
                        };
                    }
                    return None;
                }
                match op {
                    BinOp::Add => Some(bin(
                        BinOp::Add,
                        self.bound(a, env, up)?,
                        self.bound(b, env, up)?,
                    )),
                    BinOp::Sub => Some(bin(
                        BinOp::Sub,
                        self.bound(a, env, up)?,
                        self.bound(b, env, !up)?,
                    )),
                    BinOp::Mul => {
                        let (c, x) = match (int_lit(a), int_lit(b)) {
                            (Some(c), _) => (c, b),
                            (_, Some(c)) => (c, a),
                            _ => {
                                // An extent (never negative) times a bound.
                                let (s, x) = match (a.as_ref(), b.as_ref()) {
                                    (s @ Expr::Shape { .. }, _) => (s, b),
                                    (_, s @ Expr::Shape { .. }) => (s, a),
                                    // Two values never negative (a block's
                                    // index times its size): at least 0.
                                    _ if !up
                                        && [a, b].iter().all(|x| {
                                            self.lo(x, env)
                                                .and_then(|l| int_lit(&l))
                                                .is_some_and(|l| l >= 0)
                                        }) =>
                                    {
                                        return Some(lit(0))
                                    }
                                    _ => return None,
                                };
                                self.bound(s, env, up)?;
                                return Some(bin(BinOp::Mul, self.bound(x, env, up)?, s.clone()));
                            }
                        };
                        let x = self.bound(x, env, if c >= 0 { up } else { !up })?;
                        Some(bin(BinOp::Mul, lit(c), x))
                    }
                    BinOp::FloorDiv => {
                        let c = int_lit(b).filter(|c| *c > 0)?;
                        Some(bin(BinOp::FloorDiv, self.bound(a, env, up)?, lit(c)))
                    }
                    BinOp::Min | BinOp::Max => {
                        let (x, y) = (self.bound(a, env, up), self.bound(b, env, up));
                        // min(a, b) <= a: one side's upper bound serves;
                        // its lower bound needs both (and max the reverse).
                        let one_serves = (*op == BinOp::Min) == up;
                        match (x, y) {
                            (Some(x), Some(y)) => Some(tighter(*op, x, y)),
                            (Some(x), None) | (None, Some(x)) if one_serves => Some(x),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            Expr::Select(c, a, b) => {
                // Python's negative index or slice bound, `e + n if e < 0
                // else e`: below 0 it moves up by the extent, to below it.
                if let Some((w, n @ Expr::Shape { .. })) = python_wrap(e) {
                    return if up {
                        Some(tighter(
                            BinOp::Max,
                            self.hi(w, env)?,
                            add(self.hi(n, env)?, -1),
                        ))
                    } else {
                        let l = self.lo(w, env)?;
                        Some(tighter(
                            BinOp::Min,
                            bin(BinOp::Add, l.clone(), self.lo(n, env)?),
                            tighter(BinOp::Max, l, lit(0)),
                        ))
                    };
                }
                // A choice on `==` or `!=` narrows neither side: no bound.
                if matches!(c.as_ref(), Expr::Cmp(CmpOp::Eq | CmpOp::Ne, ..)) {
                    return None;
                }
                if let Some(e) = resolve_select(c, a, b) {
                    return self.bound(&e, env, up);
                }
                // Each side where it is chosen: `i + 2 if 0 <= i + 2 < n
                // else 0` lies in `[0, n - 1]`.
                let mut when = env.clone();
                self.narrow(c, &mut when);
                let mut otherwise = env.clone();
                if let Some(not) = negated(c) {
                    self.narrow(&not, &mut otherwise);
                }
                let (x, y) = (self.bound(a, &when, up)?, self.bound(b, &otherwise, up)?);
                Some(tighter(if up { BinOp::Max } else { BinOp::Min }, x, y))
            }
            _ => None,
        }
    }
}

/// `e` with sums and constant multiples moved inside `min` and `max`, and
/// each operand's like terms collected: `min(i + k, n) - i` is
/// `min(k, n - i)`.
fn normalise(e: &Expr) -> Expr {
    use crate::numpy::array_expr::collect_linear;
    let dual = |op: BinOp| {
        if op == BinOp::Min {
            BinOp::Max
        } else {
            BinOp::Min
        }
    };
    let minmax = |e: &Expr| match e {
        Expr::Binary(op @ (BinOp::Min | BinOp::Max), p, q) => {
            Some((*op, (**p).clone(), (**q).clone()))
        }
        _ => None,
    };
    match e {
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            let (a, b) = (normalise(a), normalise(b));
            // Each distribution doubles a term: past a size, the sum stays
            // as it is (its bound is then looser, never wrong).
            if size(&a) + size(&b) > 256 {
                return bin(*op, a, b);
            }
            if let Some((m, p, q)) = minmax(&a) {
                return bin(
                    m,
                    normalise(&bin(*op, p, b.clone())),
                    normalise(&bin(*op, q, b)),
                );
            }
            if let Some((m, p, q)) = minmax(&b) {
                let m = if *op == BinOp::Sub { dual(m) } else { m };
                return bin(
                    m,
                    normalise(&bin(*op, a.clone(), p)),
                    normalise(&bin(*op, a, q)),
                );
            }
            collect_linear(&bin(*op, a, b))
        }
        Expr::Binary(BinOp::Mul, a, b) => {
            let (c, x) = match (int_lit(a), int_lit(b)) {
                (Some(c), _) => (c, b),
                (_, Some(c)) => (c, a),
                _ => return e.clone(),
            };
            let x = normalise(x);
            if let Some((m, p, q)) = minmax(&x) {
                let m = if c < 0 { dual(m) } else { m };
                return bin(
                    m,
                    normalise(&bin(BinOp::Mul, lit(c), p)),
                    normalise(&bin(BinOp::Mul, lit(c), q)),
                );
            }
            collect_linear(&bin(BinOp::Mul, lit(c), x))
        }
        Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => bin(*op, normalise(a), normalise(b)),
        Expr::Binary(BinOp::FloorDiv, a, b) if int_lit(b).is_some_and(|c| c > 0) => {
            bin(BinOp::FloorDiv, normalise(a), (**b).clone())
        }
        Expr::Cast(t, x) if t.is_int() => normalise(x),
        Expr::Select(c, a, b) => match resolve_select(c, a, b) {
            Some(e) => normalise(&e),
            None => e.clone(),
        },
        _ => e.clone(),
    }
}

/// `c ? a : b` as what it is when that is known: the side a condition of
/// constants picks, or Python's `min(x, y)`/`max(x, y)` as the lowering
/// writes them (`x if x < y else y`).
fn resolve_select(c: &Expr, a: &Expr, b: &Expr) -> Option<Expr> {
    let Expr::Cmp(op, x, y) = c else {
        return None;
    };
    if let (Some(x), Some(y)) = (int_lit(x), int_lit(y)) {
        return Some(if op.holds(x, y) { a } else { b }.clone());
    }
    if !((**x == *a && **y == *b) || (**x == *b && **y == *a)) {
        return None;
    }
    let less = match op {
        CmpOp::Lt | CmpOp::Le => **x == *a,
        CmpOp::Gt | CmpOp::Ge => **x == *b,
        _ => return None,
    };
    let m = if less { BinOp::Min } else { BinOp::Max };
    Some(bin(m, a.clone(), b.clone()))
}

/// The number of nodes of `e`.
fn size(e: &Expr) -> usize {
    let mut n = 0;
    port_codegen::ir::walk_expr(e, &mut |_| n += 1);
    n
}

/// How `e` moves with the variable `v`: 1 up, -1 down, 0 not at all;
/// `None` both ways, or through an operation that is not monotone.
pub(crate) fn polarity(e: &Expr, v: &str) -> Option<i8> {
    polarity_where(e, &|x| matches!(x, Expr::Var(n) if n == v))
}

/// [`polarity`] in the thread's and block's coordinates and sizes.
fn polarity_of_specials(e: &Expr) -> Option<i8> {
    polarity_where(e, &|x| matches!(x, Expr::Special(..)))
}

fn polarity_where(e: &Expr, hit: &dyn Fn(&Expr) -> bool) -> Option<i8> {
    let join = |a: i8, b: i8| match (a, b) {
        (0, b) => Some(b),
        (a, 0) => Some(a),
        (a, b) if a == b => Some(a),
        _ => None,
    };
    if hit(e) {
        return Some(1);
    }
    let mentions = |x: &Expr| {
        let mut m = false;
        port_codegen::ir::walk_expr(x, &mut |y| m |= hit(y));
        m
    };
    match e {
        Expr::Binary(BinOp::Add | BinOp::Min | BinOp::Max, a, b) => {
            join(polarity_where(a, hit)?, polarity_where(b, hit)?)
        }
        Expr::Binary(BinOp::Sub, a, b) => join(polarity_where(a, hit)?, -polarity_where(b, hit)?),
        Expr::Binary(BinOp::Mul, a, b) => match (int_lit(a), int_lit(b)) {
            (Some(c), _) => Some(c.signum() as i8 * polarity_where(b, hit)?),
            (_, Some(c)) => Some(c.signum() as i8 * polarity_where(a, hit)?),
            _ => (!mentions(e)).then_some(0),
        },
        Expr::Binary(BinOp::FloorDiv, a, b) if int_lit(b).is_some_and(|c| c > 0) => {
            polarity_where(a, hit)
        }
        Expr::Cast(_, x) => polarity_where(x, hit),
        _ => (!mentions(e)).then_some(0),
    }
}

/// The comparison that holds where `c` does not (`None` for other
/// conditions).
fn negated(c: &Expr) -> Option<Expr> {
    let Expr::Cmp(op, a, b) = c else {
        return None;
    };
    let op = match op {
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        _ => return None,
    };
    Some(Expr::Cmp(op, a.clone(), b.clone()))
}

/// `min`/`max` of two bounds, as one of them when they are a constant
/// apart.
fn tighter(op: BinOp, a: Expr, b: Expr) -> Expr {
    match constant_difference(&a, &b) {
        Some(d) => {
            let a_wins = if op == BinOp::Min { d <= 0 } else { d >= 0 };
            if a_wins {
                a
            } else {
                b
            }
        }
        None => bin(op, a, b),
    }
}

/// Whether `i` indexes `array` along `axis` through a slice of it: a
/// slice's bounds are normalised as Python normalises them (`e + n if e
/// < 0 else e`, clamped to the extent `n`) and the element loop runs over
/// its extent, so the index is inside by construction (the extents the
/// loop shares with other slices are what [`crate::lower::shapes`]
/// checks). Such a normalised bound appears inside the index, not as it.
fn slice_index(i: &Expr, array: &str, axis: usize) -> bool {
    let extent = |s: &Expr| matches!(s, Expr::Shape { array: a, axis: k } if a == array && *k as usize == axis);
    let top = python_index(i, array, axis).is_some();
    let mut found = false;
    let mut visit = |x: &Expr| {
        if std::ptr::eq(x, i) && top {
            return;
        }
        match x {
            Expr::Select(..) => found |= python_index(x, array, axis).is_some(),
            Expr::Binary(BinOp::Min, a, b) => found |= extent(a) || extent(b),
            _ => {}
        }
    };
    port_codegen::ir::walk_expr(i, &mut visit);
    found
}

/// Python's index `e` as the lowering writes it for an index that may be
/// negative: `e + a.shape[k] if e < 0 else e`; gives `e`.
fn python_index<'e>(i: &'e Expr, array: &str, axis: usize) -> Option<&'e Expr> {
    let (e, n) = python_wrap(i)?;
    let is_extent = |s: &Expr| matches!(s, Expr::Shape { array: a, axis: k } if a == array && *k as usize == axis);
    (is_extent(n) || matches!(n, Expr::Cast(_, s) if is_extent(s))).then_some(e)
}

/// The stop of a loop from `start` as its iterations see it: `max(x,
/// start)` (a slice's element loop, `range(0, max(stop - start, 0))`) is
/// `x`, as an iteration runs only where `x` exceeds `start`. A loop that
/// does not run accesses nothing.
fn running_stop<'e>(start: &Expr, stop: &'e Expr) -> &'e Expr {
    match stop {
        Expr::Binary(BinOp::Max, a, b) if b.as_ref() == start => a,
        Expr::Binary(BinOp::Max, a, b) if a.as_ref() == start => b,
        _ => stop,
    }
}

/// `x` with each Python-wrapped index `e + n if e < 0 else e` (not
/// monotone in `e`) replaced by the monotone side of it that bounds `x`
/// the way asked: from above by `max(e, n - 1)`, from below by
/// `min(e + n, max(e, 0))`, according to whether `x` grows with it.
/// `None` where `x` moves both ways with one.
fn wraps_enveloped(x: &Expr, up: bool) -> Option<Expr> {
    let mut x = x.clone();
    for _ in 0..8 {
        let mut found: Option<Expr> = None;
        port_codegen::ir::walk_expr(&x, &mut |y| {
            if found.is_none() && python_wrap(y).is_some() {
                found = Some(y.clone());
            }
        });
        let Some(s) = found else { break };
        let (e, n) = python_wrap(&s).expect("found");
        let above = match polarity_where(&x, &|y| *y == s)? {
            0 => up,
            p => (p > 0) == up,
        };
        let side = if above {
            bin(BinOp::Max, e.clone(), add(n.clone(), -1))
        } else {
            bin(
                BinOp::Min,
                bin(BinOp::Add, e.clone(), n.clone()),
                bin(BinOp::Max, e.clone(), lit(0)),
            )
        };
        x = normalise(&crate::ir_util::map_expr(&x, &|y| {
            (*y == s).then(|| side.clone())
        }));
    }
    Some(x)
}

/// `e + n if e < 0 else e`, the lowering's Python index or slice bound
/// `e` into an extent `n`: gives `e` and `n`.
fn python_wrap(i: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Select(c, then, other) = i else {
        return None;
    };
    let Expr::Cmp(CmpOp::Lt, e, zero) = c.as_ref() else {
        return None;
    };
    if int_lit(zero) != Some(0) || e.as_ref() != other.as_ref() {
        return None;
    }
    let Expr::Binary(BinOp::Add, x, n) = then.as_ref() else {
        return None;
    };
    (x.as_ref() == e.as_ref()).then_some((e.as_ref(), n.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: &str) -> Expr {
        Expr::Var(n.to_string())
    }

    fn shape(a: &str) -> Expr {
        Expr::Shape {
            array: a.to_string(),
            axis: 0,
        }
    }

    #[test]
    fn a_window_cancels_its_start() {
        // min(i + k, n) - i is min(k, n - i): k no longer moves with i.
        let e = bin(
            BinOp::Sub,
            bin(BinOp::Min, bin(BinOp::Add, v("i"), v("k")), shape("x")),
            v("i"),
        );
        let n = normalise(&e);
        assert_eq!(polarity(&n, "i"), Some(-1), "{n:?}");
        assert_eq!(polarity(&e, "i"), None);
    }

    #[test]
    fn sums_of_many_clamps_stay_small() {
        // Each `min` in a sum doubles the distributed form: past a size
        // the sum is left as it is.
        let mut e = lit(0);
        for k in 0..40 {
            e = bin(
                BinOp::Add,
                e,
                bin(BinOp::Min, v(&format!("a{k}")), shape("x")),
            );
        }
        let n = normalise(&e);
        assert!(size(&n) < 4096, "{}", size(&n));
    }

    #[test]
    fn a_window_whose_stop_python_wraps_stays_inside() {
        // `a[i:i + w]` summed by `for j in range(0, max(min(i + w + n if
        // i + w < 0 else i + w, n) - i, 0))`, reading `a[i + j]`: an
        // iteration runs only below the unclamped stop, and the wrapped
        // stop never passes `n - 1`; so `i + j < n` for any `w`, with no
        // guard (before: `2 * n - w - 1`, which no input fits).
        let n = shape("a");
        let e = bin(BinOp::Add, v("i"), v("w"));
        let wrapped = Expr::Select(
            Box::new(Expr::Cmp(CmpOp::Lt, Box::new(e.clone()), Box::new(lit(0)))),
            Box::new(bin(BinOp::Add, e.clone(), n.clone())),
            Box::new(e),
        );
        let stop = bin(
            BinOp::Max,
            bin(BinOp::Sub, bin(BinOp::Min, wrapped, n.clone()), v("i")),
            lit(0),
        );
        let cx = Cx {
            ints: ["w"].into_iter().collect(),
            arrays: ["a", "out"].into_iter().collect(),
            assigned: HashSet::new(),
        };
        let mut env = HashMap::new();
        let loop_of = |first: Expr, stop: &Expr, depth| Range {
            first: Some(first),
            last: Some(add(running_stop(&lit(0), stop).clone(), -1)),
            depth,
            ..Range::default()
        };
        env.insert("i".to_string(), loop_of(lit(0), &shape("out"), 1));
        env.insert("j".to_string(), loop_of(lit(0), &stop, 2));
        let hi = cx
            .symbolic(&bin(BinOp::Add, v("i"), v("j")), &env, true)
            .unwrap();
        assert!(
            crate::lower::shapes::le_holds(&add(hi.clone(), 1), &n),
            "{hi:?}"
        );
    }

    #[test]
    fn what_always_holds_is_not_checked() {
        use crate::lower::shapes::le_holds;
        let n = shape("x");
        assert!(le_holds(&bin(BinOp::Min, v("m"), n.clone()), &n));
        assert!(le_holds(&add(n.clone(), -1), &n));
        assert!(!le_holds(&v("m"), &n));
        assert!(le_holds(&lit(0), &n));
    }
}
