//! **shapes**: the extents a plan takes to be equal, checked on the host
//! before the kernels that rely on them.
//!
//! NumPy checks shapes when it runs each statement: `a * b` raises unless
//! every pair of extents is equal or one of them is 1, a slice assignment
//! raises unless the value broadcasts to the slice, `a @ b` raises unless
//! the inner extents agree. port's element templates are built before any
//! shape is known: two extents it cannot prove equal (`n.shape[0]` and
//! `m.shape[0]`) are taken to be equal, and only a *literal* extent of 1
//! (`x[:, 0:1]`, `None`, `keepdims=True`) broadcasts. A kernel run on
//! arrays that break such an assumption would read outside an array, or
//! broadcast the wrong way and compute something else — silently on a GPU.
//! So every assumption is recorded where it is made ([`Fact`]), with its
//! line and NumPy's words for it, and becomes a [`HostStep::Guard`] before
//! the first kernel launched after it, as Numba's array analysis inserts
//! `assert_equiv` where it cannot prove two shapes equal. Equal extents
//! (after [`array_expr::tidy`]) need no guard; two literal extents that
//! differ are refused at once, with NumPy's message. [`place_guards`] then
//! moves the guards that read only the arguments to the start of the
//! wrapper, once, and drops repeats.
//!
//! An extent of 1 that only the inputs have (an `(N, 1)` column of masses
//! broadcast against `(N, 3)` velocities) is the other half: when the
//! inputs are known (captured or `--inputs`), [`unit_dims_of`]'s axes of
//! the arguments are planned as literal 1 ([`crate::MigrationRequest`]'s
//! `unit_dims`), so they broadcast as NumPy broadcasts them, and a guard
//! at entry says the plan holds for them only.

use std::collections::{BTreeMap, HashSet};

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, Expr, Literal};

use crate::error::{refuse, Lower};
use crate::lower::context::{HostBind, Local, Lowerer, Region, RegionKind};
use crate::numpy::array_expr::{self, ArrVal, Val};
pub use crate::numpy::extents::{
    broadcast_pairs, constant_difference, extent_text, store_pairs, Fact, BROADCAST, MATMUL, NAME,
    STORE,
};
use crate::plan::{HostStep, KernelPlan, ShapeGuard};

impl Lowerer<'_> {
    /// Records that the kernels built for the statement at `line` take
    /// each pair of extents to be equal. Pairs equal by arithmetic need
    /// nothing; literal extents that differ are NumPy's error, refused
    /// now; an extent only a kernel knows (a variable of the kernel's own
    /// loop) cannot be checked before it runs: the rewrite log says it is
    /// taken on trust.
    /// `r` is the region the extents come from (`None`: the host level).
    pub fn assume_equal(
        &mut self,
        r: Option<&Region>,
        pairs: Vec<(Expr, Expr)>,
        line: u32,
        what: &str,
    ) -> Lower<()> {
        for (lhs, rhs) in pairs {
            let (lhs, rhs) = (array_expr::tidy(&lhs), array_expr::tidy(&rhs));
            match constant_difference(&lhs, &rhs) {
                Some(0) => continue,
                Some(_)
                    if matches!(
                        (&lhs, &rhs),
                        (Expr::Lit(Literal::I64(_)), Expr::Lit(Literal::I64(_)))
                    ) =>
                {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "{what}: extents {} and {} (NumPy raises ValueError)",
                            extent_text(&lhs),
                            extent_text(&rhs)
                        ),
                    );
                }
                _ => {}
            }
            if let Some(name) = self
                .kernel_only_name(r, &lhs)
                .or_else(|| self.kernel_only_name(r, &rhs))
            {
                // A per-thread slice (`x[:, i:i + K]` in a loop over `i`):
                // no host check can see it. Said, not hidden.
                self.log.applied(
                    NAME,
                    format!(
                        "`{} == {}` taken on trust at line {line}: it depends on `{name}`, which only the kernel knows",
                        extent_text(&lhs),
                        extent_text(&rhs)
                    ),
                );
                continue;
            }
            let fact = Fact {
                lhs,
                rhs,
                line,
                what: what.to_string(),
            };
            if !self.shape_facts.contains(&fact) {
                self.shape_facts.push(fact);
            }
        }
        Ok(())
    }

    /// A name in `e` the host does not have at launch time: a variable of
    /// the kernel being built, an array read inside an extent.
    fn kernel_only_name(&self, r: Option<&Region>, e: &Expr) -> Option<String> {
        let mut bad: Option<String> = None;
        let kernel_local = |n: &str| {
            r.is_some_and(|r| {
                r.kind != RegionKind::Host
                    && (r.visible(n)
                        || r.locals.values().any(|l| match l {
                            Local::Scalar { ir, .. } => ir == n,
                            Local::Array { .. } => false,
                        })
                        || r.locals.contains_key(n))
            })
        };
        port_codegen::ir::walk_expr(e, &mut |x| {
            if bad.is_some() {
                return;
            }
            match x {
                Expr::Var(n) => {
                    let host = matches!(self.host.get(n), Some(HostBind::Scalar(_)));
                    if !host || kernel_local(n) {
                        bad = Some(n.clone());
                    }
                }
                Expr::Shape { array, .. } => {
                    let host = matches!(self.host.get(array), Some(HostBind::Array(_)))
                        || self.params.iter().any(|(p, t)| p == array && t.is_array());
                    if !host {
                        bad = Some(array.clone());
                    }
                }
                Expr::Load(er) => bad = Some(er.array.clone()),
                _ => {}
            }
        });
        bad
    }

    /// A named array as a template: an argument's axes the plan is
    /// specialised to extent 1 are a literal 1, read at index 0.
    pub fn named_array(&self, name: &str, ty: port_codegen::ir::ArrayType) -> ArrVal {
        let units: Vec<u8> = self
            .unit_dims
            .iter()
            .filter(|(p, _)| p == name)
            .map(|(_, k)| *k)
            .collect();
        let mut v = ArrVal::named(name, ty);
        if units.is_empty() {
            return v;
        }
        let idx: Vec<Expr> = (0..v.ndim())
            .map(|k| {
                if units.contains(&(k as u8)) {
                    i64(0)
                } else {
                    var(&array_expr::ph(k))
                }
            })
            .collect();
        for &k in &units {
            if let Some(e) = v.shape.get_mut(k as usize) {
                *e = i64(1);
            }
        }
        v.body = load(name, idx);
        v
    }

    /// Records NumPy's broadcasting of the arrays among `vals` (scalars
    /// broadcast anywhere).
    pub fn assume_broadcast(&mut self, r: &Region, vals: &[&Val], line: u32) -> Lower<()> {
        let arrays: Vec<&ArrVal> = vals
            .iter()
            .filter_map(|v| match v {
                Val::Array(a) => Some(a),
                _ => None,
            })
            .collect();
        if arrays.len() < 2 {
            return Ok(());
        }
        let pairs = broadcast_pairs(&arrays);
        self.assume_equal(Some(r), pairs, line, BROADCAST)
    }

    /// Records that `value` fits the slice `target` it is stored into.
    pub fn assume_fits(
        &mut self,
        r: Option<&Region>,
        target: &ArrVal,
        value: &Val,
        line: u32,
    ) -> Lower<()> {
        match value {
            Val::Array(v) => self.assume_equal(r, store_pairs(target, v), line, STORE),
            _ => Ok(()),
        }
    }
}

impl Lowerer<'_> {
    /// `a, b, c = v` of an array: its rows along the first axis, as Python
    /// iterates it, with the guard that there are exactly `n` of them
    /// (Python raises ValueError otherwise).
    pub(crate) fn unpack_array(
        &mut self,
        r: Option<&Region>,
        av: &ArrVal,
        n: usize,
        line: u32,
    ) -> Lower<Vec<Val>> {
        if av.ndim() == 0 {
            return refuse(
                NAME,
                line,
                "unpacking a 0-d array (Python raises TypeError)",
            );
        }
        self.assume_equal(
            r,
            vec![(av.shape[0].clone(), i64(n as i64))],
            line,
            &format!("unpacking an array into {n} names (Python raises ValueError: too many or not enough values to unpack)"),
        )?;
        Ok((0..n)
            .map(|k| array_expr::index(av, vec![array_expr::IndexItem::At(i64(k as i64))]))
            .collect())
    }
}

/// The guards of the specialisation: `p.shape[k] == 1` for each axis the
/// plan took as a literal 1.
pub fn specialisation_guards(unit_dims: &[(String, u8)], line: u32) -> Vec<HostStep> {
    unit_dims
        .iter()
        .map(|(p, k)| {
            let lhs = shape(p, *k);
            HostStep::Guard(ShapeGuard {
                lhs_text: extent_text(&lhs),
                rhs_text: "1".into(),
                lhs,
                rhs: i64(1),
                line,
                what: format!(
                    "the kernels were built for inputs whose `{p}` has extent 1 along axis {k} (it broadcasts)"
                ),
                specialised: true,
                relation: crate::plan::Relation::Eq,
            })
        })
        .collect()
}

/// Names every step list of the plan binds (host scalars, allocations,
/// read-backs, loop variables, rebound names).
pub(crate) fn bound_names(steps: &[HostStep]) -> HashSet<String> {
    let mut out = HashSet::new();
    HostStep::walk(steps, &mut |s| {
        out.extend(s.binds().into_iter().map(str::to_string));
    });
    out
}

/// The names a guard reads.
pub(crate) fn guard_names(g: &ShapeGuard) -> HashSet<String> {
    let mut out = HashSet::new();
    for e in [&g.lhs, &g.rhs] {
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Var(n) => {
                out.insert(n.clone());
            }
            Expr::Shape { array, .. } => {
                out.insert(array.clone());
            }
            _ => {}
        });
    }
    out
}

/// Moves every guard that reads only arguments the function never rebinds
/// to the start of the wrapper (once: the specialisation's guards first),
/// and drops a guard repeated in one step list with nothing it reads
/// rebound in between.
pub fn place_guards(plan: &mut KernelPlan) {
    let mut recorded = 0;
    HostStep::walk(&plan.steps, &mut |s| {
        if matches!(s, HostStep::Guard(g) if !g.specialised) {
            recorded += 1;
        }
    });
    let allocs = fixed_allocations(plan);
    let none = BTreeMap::new();
    let mut keep = |steps: &mut Vec<HostStep>| {
        steps.retain(|s| match s {
            HostStep::Guard(g) => !holds(g, &allocs, &none),
            _ => true,
        })
    };
    fn each_list(steps: &mut Vec<HostStep>, f: &mut dyn FnMut(&mut Vec<HostStep>)) {
        f(steps);
        for s in steps.iter_mut() {
            for b in s.bodies_mut() {
                each_list(b, f);
            }
        }
    }
    each_list(&mut plan.steps, &mut keep);
    let params: HashSet<&str> = plan.params.iter().map(|p| p.name.as_str()).collect();
    let bound = bound_names(&plan.steps);
    let entry_only = |g: &ShapeGuard| {
        guard_names(g)
            .iter()
            .all(|n| params.contains(n.as_str()) && !bound.contains(n))
    };
    let mut entry: Vec<ShapeGuard> = Vec::new();
    fn take(
        steps: &mut Vec<HostStep>,
        entry: &mut Vec<ShapeGuard>,
        movable: &dyn Fn(&ShapeGuard) -> bool,
    ) {
        let mut kept: Vec<HostStep> = Vec::with_capacity(steps.len());
        for mut s in std::mem::take(steps) {
            match &mut s {
                HostStep::Guard(g) if movable(g) => {
                    if !entry.iter().any(|e| same(e, g)) {
                        entry.push(g.clone());
                    }
                    continue;
                }
                HostStep::Guard(g) => {
                    // The same check with nothing it reads bound since.
                    let names = guard_names(g);
                    let mut repeat = false;
                    for earlier in kept.iter().rev() {
                        match earlier {
                            HostStep::Guard(e) if same(e, g) => {
                                repeat = true;
                                break;
                            }
                            other => {
                                let b = bound_names(std::slice::from_ref(other));
                                if names.iter().any(|n| b.contains(n)) {
                                    break;
                                }
                            }
                        }
                    }
                    if repeat {
                        continue;
                    }
                }
                other => {
                    for b in other.bodies_mut() {
                        take(b, entry, movable);
                    }
                }
            }
            kept.push(s);
        }
        *steps = kept;
    }
    fn same(a: &ShapeGuard, b: &ShapeGuard) -> bool {
        a.relation == b.relation
            && ((a.lhs == b.lhs && a.rhs == b.rhs)
                || (a.relation.is_eq() && a.lhs == b.rhs && a.rhs == b.lhs))
    }
    take(&mut plan.steps, &mut entry, &entry_only);
    // What the entry guards establish holds everywhere after them.
    let classes = equal_extents(&entry);
    // An index range inside an extent the equalities make the same.
    entry.retain(|g| g.relation.is_eq() || !holds(g, &allocs, &classes));
    let mut keep = |steps: &mut Vec<HostStep>| {
        steps.retain(|s| match s {
            HostStep::Guard(g) => !holds(g, &allocs, &classes),
            _ => true,
        })
    };
    each_list(&mut plan.steps, &mut keep);
    entry.sort_by_key(|g| !g.specialised);
    let mut steps: Vec<HostStep> = entry.into_iter().map(HostStep::Guard).collect();
    steps.append(&mut plan.steps);
    plan.steps = steps;
    log_checks(plan, recorded);
}

/// The rewrite log says which checks the wrapper really makes, and how
/// many of the recorded facts hold without one; what was taken on trust
/// stays as it was said.
fn log_checks(plan: &mut KernelPlan, recorded: usize) {
    let mut checked: Vec<String> = Vec::new();
    HostStep::walk(&plan.steps, &mut |s| {
        if let HostStep::Guard(g) = s {
            if !g.specialised {
                let note = format!(
                    "`{} {} {}` checked before the kernels of line {}",
                    g.lhs_text,
                    g.relation.symbol(),
                    g.rhs_text,
                    g.line
                );
                if !checked.contains(&note) {
                    checked.push(note);
                }
            }
        }
    });
    let Some(rec) = plan.rewrites.iter_mut().find(|r| r.rewrite == NAME) else {
        return;
    };
    let held = recorded.saturating_sub(checked.len());
    if checked.is_empty() && held == 0 {
        return;
    }
    // The notes of lowering (taken on trust), when there were any.
    let mut notes: Vec<String> = Vec::new();
    if rec.applied {
        notes.push(std::mem::take(&mut rec.note));
    }
    notes.extend(checked);
    if held > 0 {
        notes.push(format!(
            "{held} more hold by how the arrays are allocated, or repeat an earlier check: not checked again"
        ));
    }
    rec.applied = true;
    rec.note = notes.join("; ");
}

/// Arrays whose extents are known expressions whenever a guard runs: the
/// wrapper allocates each once (in a loop: anew each iteration, alike)
/// with a shape that reads only names that never change (arguments, host
/// scalars bound once outside loops, other such arrays), or a name bound
/// once to such an array.
pub(crate) fn fixed_allocations(plan: &KernelPlan) -> Fixed {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    let mut allocs: BTreeMap<String, Vec<Expr>> = BTreeMap::new();
    let mut values: BTreeMap<String, Expr> = BTreeMap::new();
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    HostStep::walk(&plan.steps, &mut |s| {
        let mut bump = |n: &str, by: usize| *count.entry(n.to_string()).or_insert(0) += by;
        match s {
            HostStep::Scalar { name, value, .. } => {
                bump(name, 1);
                values.insert(name.clone(), value.clone());
            }
            HostStep::ReadBack { name, .. } | HostStep::ReadElement { name, .. } => bump(name, 1),
            HostStep::Alloc { name, shape, .. } => {
                bump(name, 1);
                allocs.insert(name.clone(), shape.clone());
            }
            // A loop variable: many values.
            HostStep::Loop { var, .. } => bump(var, 2),
            HostStep::Rebind { targets, sources } => {
                for (t, src) in targets.iter().zip(sources) {
                    bump(t, 1);
                    aliases.insert(t.clone(), src.clone());
                }
            }
            _ => {}
        }
    });
    // Scalars bound inside a loop take a value per iteration.
    fn in_loops(steps: &[HostStep], inside: bool, out: &mut HashSet<String>) {
        for s in steps {
            if inside {
                if let HostStep::Scalar { name, .. }
                | HostStep::ReadBack { name, .. }
                | HostStep::ReadElement { name, .. } = s
                {
                    out.insert(name.clone());
                }
            }
            let nested = inside || matches!(s, HostStep::Loop { .. } | HostStep::While { .. });
            for b in s.bodies() {
                in_loops(b, nested, out);
            }
        }
    }
    let mut looped = HashSet::new();
    in_loops(&plan.steps, false, &mut looped);
    let once = |n: &str| count.get(n).copied().unwrap_or(0) <= 1 && !looped.contains(n);
    let params: HashSet<&str> = plan.params.iter().map(|p| p.name.as_str()).collect();
    let mut fixed: BTreeMap<String, Vec<Expr>> = BTreeMap::new();
    loop {
        let reads_fixed = |e: &Expr, fixed: &BTreeMap<String, Vec<Expr>>| {
            let mut ok = true;
            port_codegen::ir::walk_expr(e, &mut |x| match x {
                Expr::Var(n) => ok &= once(n) && !allocs.contains_key(n),
                Expr::Shape { array, .. } => {
                    ok &= fixed.contains_key(array)
                        || (params.contains(array.as_str()) && once(array))
                }
                Expr::Load(_) => ok = false,
                _ => {}
            });
            ok
        };
        let mut grew = false;
        for (name, shape) in &allocs {
            if !fixed.contains_key(name)
                && count.get(name).copied() == Some(1)
                && shape.iter().all(|e| reads_fixed(e, &fixed))
            {
                fixed.insert(name.clone(), shape.clone());
                grew = true;
            }
        }
        for (t, src) in &aliases {
            if !fixed.contains_key(t) && count.get(t).copied() == Some(1) {
                if let Some(shape) = fixed.get(src).cloned() {
                    fixed.insert(t.clone(), shape);
                    grew = true;
                }
            }
        }
        if !grew {
            // Host scalars bound once, outside loops, to what reads only
            // such names: `n = x.shape[0]` is `x.shape[0]` wherever read.
            let scalars = values
                .iter()
                .filter(|(n, v)| once(n) && reads_fixed(v, &fixed))
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect();
            return Fixed {
                arrays: fixed,
                scalars,
            };
        }
    }
}

/// What [`fixed_allocations`] knows: the shapes of the arrays the wrapper
/// allocates once, outside any loop, and the values of host scalars bound
/// once, outside any loop, to the arguments' extents and integers (and to
/// other such values).
pub(crate) struct Fixed {
    pub arrays: BTreeMap<String, Vec<Expr>>,
    pub scalars: BTreeMap<String, Expr>,
}

impl Fixed {
    /// `e` with the scalars as their values and the arrays' extents as
    /// what they were allocated with; a few rounds, for allocations sized
    /// by other allocations or by such scalars (`n = m - 1`).
    pub fn expand(&self, e: &Expr) -> Expr {
        crate::ir_util::map_expr_repeated(e, 4, &|x| match x {
            Expr::Shape { array, axis } => self
                .arrays
                .get(array)
                .and_then(|s| s.get(*axis as usize))
                .cloned(),
            Expr::Var(n) => self.scalars.get(n).cloned(),
            _ => None,
        })
    }
}

/// Whether `a <= b` whatever the arguments: by arithmetic (a constant
/// apart), through `min` and `max` (`min(n, m) <= n`), and from extents
/// never being negative.
pub(crate) fn le_holds(a: &Expr, b: &Expr) -> bool {
    if constant_difference(a, b).is_some_and(|d| d <= 0) {
        return true;
    }
    // An offset moves into a `min` or `max`: `min(p, q) + c`.
    let spread = |e: &Expr| -> Option<(BinOp, Expr, Expr)> {
        match e {
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), p, q) => {
                Some((*op, (**p).clone(), (**q).clone()))
            }
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub), x, c) => {
                let c = lit_value(c)?;
                let c = if *op == BinOp::Add { c } else { -c };
                let Expr::Binary(m @ (BinOp::Min | BinOp::Max), p, q) = x.as_ref() else {
                    return None;
                };
                Some((
                    *m,
                    array_expr::tidy(&offset_by((**p).clone(), c)),
                    array_expr::tidy(&offset_by((**q).clone(), c)),
                ))
            }
            _ => None,
        }
    };
    if let Some((op, p, q)) = spread(a) {
        return match op {
            BinOp::Min => le_holds(&p, b) || le_holds(&q, b),
            _ => le_holds(&p, b) && le_holds(&q, b),
        };
    }
    if let Some((op, p, q)) = spread(b) {
        return match op {
            BinOp::Max => le_holds(a, &p) || le_holds(a, &q),
            _ => le_holds(a, &p) && le_holds(a, &q),
        };
    }
    // Extents are never negative.
    lit_value(a).is_some_and(|v| v <= 0) && matches!(b, Expr::Shape { .. })
}

fn lit_value(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(Literal::I64(v)) => Some(*v),
        Expr::Lit(Literal::I32(v)) => Some(i64::from(*v)),
        _ => None,
    }
}

fn offset_by(e: Expr, c: i64) -> Expr {
    Expr::Binary(BinOp::Add, Box::new(e), Box::new(i64(c)))
}

/// Extents the guards `known` make equal: each extent they compare (a
/// shape, a variable) mapped to one representative of its class, a
/// literal when the class has one.
fn equal_extents(known: &[ShapeGuard]) -> BTreeMap<String, Expr> {
    let mut classes: Vec<Vec<Expr>> = Vec::new();
    let atom = |e: &Expr| {
        matches!(
            e,
            Expr::Shape { .. } | Expr::Var(_) | Expr::Lit(Literal::I64(_))
        )
    };
    for g in known
        .iter()
        .filter(|g| g.relation.is_eq() && atom(&g.lhs) && atom(&g.rhs))
    {
        let find = |classes: &Vec<Vec<Expr>>, e: &Expr| classes.iter().position(|c| c.contains(e));
        match (find(&classes, &g.lhs), find(&classes, &g.rhs)) {
            (Some(a), Some(b)) if a != b => {
                let moved = classes.remove(a.max(b));
                classes[a.min(b)].extend(moved);
            }
            (Some(_), Some(_)) => {}
            (Some(a), None) => classes[a].push(g.rhs.clone()),
            (None, Some(b)) => classes[b].push(g.lhs.clone()),
            (None, None) => classes.push(vec![g.lhs.clone(), g.rhs.clone()]),
        }
    }
    let mut out = BTreeMap::new();
    for c in classes {
        let rep = c
            .iter()
            .find(|e| matches!(e, Expr::Lit(_)))
            .or_else(|| c.iter().min_by_key(|e| format!("{e:?}")))
            .cloned()
            .expect("a class is never empty");
        for e in c {
            out.insert(format!("{e:?}"), rep.clone());
        }
    }
    out
}

/// Whether a guard holds whatever the inputs, given the shapes of
/// [`fixed_allocations`] and the extents known equal ([`equal_extents`]):
/// its two sides are then equal by arithmetic.
fn holds(g: &ShapeGuard, fixed: &Fixed, classes: &BTreeMap<String, Expr>) -> bool {
    let expand = |e: &Expr| {
        let e = fixed.expand(e);
        let e = crate::ir_util::map_expr(&e, &|x| match x {
            Expr::Shape { .. } | Expr::Var(_) => classes.get(&format!("{x:?}")).cloned(),
            _ => None,
        });
        array_expr::tidy(&e)
    };
    let (l, r) = (expand(&g.lhs), expand(&g.rhs));
    match g.relation {
        crate::plan::Relation::Eq => constant_difference(&l, &r) == Some(0),
        crate::plan::Relation::Le => le_holds(&l, &r),
    }
}

/// The axes of extent 1 in the inputs' shapes that the plan may take as a
/// literal 1: arrays of the arguments never rebound as a whole in the
/// function (a name rebound to another array could have other extents).
pub fn unit_dims_of(
    shapes: &[(String, Vec<usize>)],
    rebound: &HashSet<String>,
) -> Vec<(String, u8)> {
    let mut out = Vec::new();
    for (name, dims) in shapes {
        if rebound.contains(name) || dims.len() < 2 {
            continue;
        }
        for (k, &d) in dims.iter().enumerate() {
            if d == 1 {
                out.push((name.clone(), k as u8));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_dims_skip_vectors_and_rebound_names() {
        let shapes = vec![
            ("mass".to_string(), vec![40, 1]),
            ("v".to_string(), vec![1]),
            ("u".to_string(), vec![1, 5]),
        ];
        let rebound: HashSet<String> = ["u".to_string()].into();
        assert_eq!(
            unit_dims_of(&shapes, &rebound),
            vec![("mass".to_string(), 1)]
        );
    }
}
