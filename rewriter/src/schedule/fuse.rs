//! **fuse** — neighbouring kernels over one index space become one kernel.
//!
//! Each NumPy statement and each independent loop is lowered to a kernel of
//! its own. Launches that follow each other in the host schedule (with at
//! most allocations, shape guards and comments between them) are merged
//! when one thread can do, for one point of a common index space, what
//! every one of them does there, in their order:
//!
//! 1. **A kernel's index space is the array it writes.** A kernel whose
//!    single parallel loop stores every element at `T[c₀ + i₀, c₁ + i₁]`
//!    (the loop's variables, each plus a non-negative constant) is rebased
//!    onto `T`'s whole shape: its variables run over `T.shape`, its body is
//!    guarded by `cₐ ≤ iₐ < cₐ + extentₐ` and reads `iₐ - cₐ` where it read
//!    `iₐ`. A game of life's eight `n[1:, :-1] += board[:-1, 1:]` all
//!    become loops over `n.shape`.
//! 2. **Spaces are compared as the host knows them**: kernel extents in the
//!    host's names, and an array the schedule allocated replaced by the
//!    shape it was allocated with (`new = np.where(n < 2, 0, board)` has
//!    `board`'s shape, as `n = np.zeros(board.shape)` has).
//! 3. **Dependence: an array written by one kernel and touched by another
//!    is only ever accessed at the point itself** (`n[i, j]`, after
//!    rebasing) in both: the thread that writes an element is the one that
//!    reads it next, so no other thread can see it half done. Arrays only
//!    read may be read anywhere (`board[i - 1, j + 1]`).
//!
//! Not fused: reductions (atomics, barriers, shared memory), kernels with
//! a `return`, device functions given arrays, kernels launched from more
//! than one place, and any plan that rebinds device arrays (two names
//! could then be one array).

use std::collections::{BTreeMap, HashMap, HashSet};

use port_codegen::ir::build::*;
use port_codegen::ir::{
    any_stmt, walk_body_exprs, BinOp, CmpOp, ElemRef, Expr, Kernel, Literal, ParallelFor, Param,
    ScalarType, Stmt, Type,
};

use crate::ir_util::{and, fresh, locals, map_expr, map_leaves, map_stmts, rename_body};
use crate::plan::{Fill, HostStep, KernelPlan, LaunchShape, PlanKind};

pub const NAME: &str = "fuse";

/// Fuses the plan's neighbouring launches; gives one note per fused group
/// (`lines 6–16: 11 kernels into 1 (life_n)`), none when nothing fused.
pub fn fuse_plan(plan: &mut KernelPlan) -> Vec<String> {
    if plan.kind != PlanKind::Kernels {
        return Vec::new();
    }
    let mut rebinds = false;
    let mut sites: HashMap<String, usize> = HashMap::new();
    let mut allocs: HashMap<String, Vec<Vec<Expr>>> = HashMap::new();
    HostStep::walk(&plan.steps, &mut |s| match s {
        HostStep::Rebind { .. } => rebinds = true,
        HostStep::Launch { kernel, .. } => *sites.entry(kernel.clone()).or_default() += 1,
        HostStep::Alloc { name, shape, .. } => {
            allocs.entry(name.clone()).or_default().push(shape.clone())
        }
        _ => {}
    });
    if rebinds {
        return Vec::new();
    }
    // Arrays allocated once, by the shape they were allocated with.
    let shapes: HashMap<String, Vec<Expr>> = allocs
        .into_iter()
        .filter(|(_, v)| v.len() == 1)
        .map(|(k, mut v)| (k, v.remove(0)))
        .collect();
    // Arrays something other than a launch names: the plan's interface,
    // host steps. The others live only inside kernels.
    // Guards and allocations that read an allocated array's extent read
    // the arguments' extents it was allocated with: arguments never change
    // shape, and the allocated array is then named by kernels alone.
    let params: HashSet<String> = plan.params.iter().map(|p| p.name.clone()).collect();
    let of_args = |e: &Expr| -> Option<Expr> {
        let c = canon_with(&shapes, e, 0);
        let mut only_args = true;
        port_codegen::ir::walk_expr(&c, &mut |x| match x {
            Expr::Shape { array, .. } => only_args &= params.contains(array),
            Expr::Var(_) | Expr::Load(_) | Expr::Call(..) => only_args = false,
            _ => {}
        });
        (only_args && c != *e).then_some(c)
    };
    HostStep::walk_mut(&mut plan.steps, &mut |s| match s {
        HostStep::Guard(g) => {
            if let Some(l) = of_args(&g.lhs) {
                g.lhs = l;
            }
            if let Some(r) = of_args(&g.rhs) {
                g.rhs = r;
            }
        }
        HostStep::Alloc { shape, .. } => {
            for d in shape.iter_mut() {
                if let Some(c) = of_args(d) {
                    *d = c;
                }
            }
        }
        _ => {}
    });
    // A guard now comparing an extent with itself always holds.
    plan.steps
        .retain(|s| !matches!(s, HostStep::Guard(g) if g.lhs == g.rhs));
    let mut named: HashMap<String, usize> = plan
        .interface_names()
        .into_iter()
        .map(|n| (n, usize::MAX / 2))
        .collect();
    let mut launch_uses: HashMap<String, usize> = HashMap::new();
    HostStep::walk(&plan.steps, &mut |s| {
        if let HostStep::Launch { args, .. } = s {
            for a in args {
                *launch_uses.entry(a.clone()).or_default() += 1;
            }
        }
        let mut m = HashSet::new();
        mentions(s, &mut m);
        for n in m {
            *named.entry(n).or_default() += 1;
        }
    });
    // Extents the entry guards check equal (before anything runs).
    let equal: Vec<(Expr, Expr)> = plan
        .steps
        .iter()
        .map_while(|s| match s {
            HostStep::Guard(g) if g.relation.is_eq() => Some((g.lhs.clone(), g.rhs.clone())),
            HostStep::Guard(_) | HostStep::Comment(_) => Some((i64(0), i64(0))),
            _ => None,
        })
        .collect();
    let mut f = Fuser {
        equal: Vec::new(),
        plan_kernels: std::mem::take(&mut plan.module.kernels),
        named,
        launch_uses,
        shapes,
        sites,
        notes: Vec::new(),
        docs: &mut plan.docs,
        original_launch: HashMap::new(),
        function: plan
            .function
            .rsplit('.')
            .next()
            .unwrap_or(&plan.function)
            .to_string(),
    };
    f.equal = equal
        .iter()
        .map(|(a, b)| (f.canon(a, 0), f.canon(b, 0)))
        .collect();
    let steps = std::mem::take(&mut plan.steps);
    plan.steps = f.steps(steps);
    plan.module.kernels = f.plan_kernels;
    f.notes
}

struct Fuser<'a> {
    /// Pairs of extents (canonical, see [`Fuser::canon`]) the entry guards
    /// prove equal.
    equal: Vec<(Expr, Expr)>,
    plan_kernels: Vec<Kernel>,
    /// How many host steps name each array other than through a launch's
    /// arguments (see [`mentions`]); the plan's interface counts as many.
    named: HashMap<String, usize>,
    /// How many launches take each array.
    launch_uses: HashMap<String, usize>,
    shapes: HashMap<String, Vec<Expr>>,
    sites: HashMap<String, usize>,
    notes: Vec<String>,
    docs: &'a mut BTreeMap<String, String>,
    /// Each kernel taken into a group: its launch as the plan had it.
    original_launch: HashMap<String, (Vec<String>, LaunchShape)>,
    function: String,
}

/// A kernel in the form fusion takes: one parallel loop over the whole
/// shape of the array it writes, its body guarded to the points it had.
#[derive(Clone, Debug)]
struct Shaped {
    kernel: Kernel,
    /// Host names of the kernel's parameters, in order.
    args: Vec<String>,
    /// The loop's variables.
    vars: Vec<String>,
    /// Host name of the array whose shape is the index space.
    space: String,
    /// The fused kernels' names, in order.
    members: Vec<String>,
}

impl Fuser<'_> {
    fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.plan_kernels.iter().find(|k| k.name == name)
    }

    fn steps(&mut self, steps: Vec<HostStep>) -> Vec<HostStep> {
        let mut out: Vec<HostStep> = Vec::new();
        // The group being built, and the steps met after its last launch
        // that can run before the fused launch.
        let mut group: Option<Shaped> = None;
        let mut held: Vec<HostStep> = Vec::new();
        for step in steps {
            match step {
                HostStep::Launch {
                    kernel,
                    args,
                    shape,
                } => {
                    let shaped = self.shaped(&kernel, &args, &shape);
                    match (group.take(), shaped) {
                        (Some(g), Some(k)) => match self.merge(&g, &k, &held) {
                            Some(m) => group = Some(m),
                            None => {
                                self.flush(g, &mut held, &mut out);
                                group = Some(k);
                            }
                        },
                        (Some(g), None) => {
                            self.flush(g, &mut held, &mut out);
                            out.push(HostStep::Launch {
                                kernel,
                                args,
                                shape,
                            });
                        }
                        (None, Some(k)) => group = Some(k),
                        (None, None) => out.push(HostStep::Launch {
                            kernel,
                            args,
                            shape,
                        }),
                    }
                }
                // Steps that may run before a launch that followed them:
                // they read no kernel's results, and an allocation names
                // no array of the group.
                HostStep::Alloc { ref name, .. }
                    if group.as_ref().is_some_and(|g| !g.args.contains(name)) =>
                {
                    held.push(step)
                }
                HostStep::Guard(_) | HostStep::Comment(_) if group.is_some() => held.push(step),
                other => {
                    if let Some(g) = group.take() {
                        self.flush(g, &mut held, &mut out);
                    }
                    out.push(self.nested(other));
                }
            }
        }
        if let Some(g) = group.take() {
            self.flush(g, &mut held, &mut out);
        }
        out
    }

    /// The bodies of host loops and `if`s, fused in turn.
    fn nested(&mut self, step: HostStep) -> HostStep {
        match step {
            HostStep::Loop {
                var,
                start,
                stop,
                step,
                body,
            } => HostStep::Loop {
                var,
                start,
                stop,
                step,
                body: self.steps(body),
            },
            HostStep::While { test, cond, body } => HostStep::While {
                test: self.steps(test),
                cond,
                body: self.steps(body),
            },
            HostStep::If { cond, then, orelse } => HostStep::If {
                cond,
                then: self.steps(then),
                orelse: self.steps(orelse),
            },
            s => s,
        }
    }

    /// Puts the group's launch (and the steps held after it) in `out`.
    fn flush(&mut self, g: Shaped, held: &mut Vec<HostStep>, out: &mut Vec<HostStep>) {
        let first = g.members[0].clone();
        if g.members.len() == 1 {
            // Nothing fused: the kernel stays as it was, in its place.
            let (args, shape) = self.original_launch.remove(&first).expect("launch kept");
            out.push(HostStep::Launch {
                kernel: first,
                args,
                shape,
            });
            out.append(held);
            return;
        }
        // The fused kernel takes the first one's place; the others go.
        let mut kernel = g.kernel;
        kernel.name = first.clone();
        let mut args = g.args;
        let mut space = g.space.clone();
        let locals =
            self.temporaries_as_locals(&g.members, &mut kernel, &mut args, &mut space, held, out);
        let axis = |d: usize| Expr::Shape {
            array: space.clone(),
            axis: d as u8,
        };
        let shape = match g.vars.len() {
            1 => LaunchShape::Grid1 { n: axis(0) },
            _ => LaunchShape::Grid2 {
                rows: axis(0),
                cols: axis(1),
            },
        };
        let lines: Vec<String> = g
            .members
            .iter()
            .filter_map(|m| self.docs.get(m).and_then(|d| line_of(d)))
            .collect();
        let doc = format!(
            "{} of `{}`, fused: one thread per element of `{}`.",
            match (lines.first(), lines.last()) {
                (Some(a), Some(b)) if a != b => format!("Lines {a}–{b}"),
                (Some(a), _) => format!("Line {a}"),
                _ => "Statements".to_string(),
            },
            self.function,
            space
        );
        self.notes.push(format!(
            "{} kernels into one ({first}){}",
            g.members.len(),
            match (lines.first(), lines.last()) {
                (Some(a), Some(b)) => format!(", lines {a}–{b}"),
                _ => String::new(),
            }
        ));
        if !locals.is_empty() {
            if let Some(n) = self.notes.last_mut() {
                n.push_str(&format!(
                    "; {} kept in registers, not arrays",
                    locals
                        .iter()
                        .map(|l| format!("`{l}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        for m in &g.members {
            self.original_launch.remove(m);
            self.docs.remove(m);
        }
        self.docs.insert(first.clone(), doc);
        out.append(held);
        let rest: HashSet<&String> = g.members[1..].iter().collect();
        self.plan_kernels.retain(|k| !rest.contains(&k.name));
        if let Some(k) = self.plan_kernels.iter_mut().find(|k| k.name == first) {
            *k = kernel;
        }
        out.push(HostStep::Launch {
            kernel: first,
            args,
            shape,
        });
    }

    /// Arrays the fused kernel alone uses, allocated uninitialised among
    /// the steps held for it, written at each point before they are read
    /// there: each becomes a local of the thread (`new = …`), and its
    /// allocation goes. Gives their names.
    fn temporaries_as_locals(
        &mut self,
        members: &[String],
        kernel: &mut Kernel,
        args: &mut Vec<String>,
        space: &mut String,
        held: &mut Vec<HostStep>,
        out: &mut Vec<HostStep>,
    ) -> Vec<String> {
        let mut done = Vec::new();
        let mut k = 0;
        while k < args.len() {
            let host = args[k].clone();
            let uses_in_group = members
                .iter()
                .filter(|m| {
                    self.original_launch
                        .get(*m)
                        .is_some_and(|(a, _)| a.contains(&host))
                })
                .count();
            // Allocated (each time) right before the fused launch: among
            // the held steps, or earlier in the same step list.
            let is_alloc =
                |s: &HostStep| matches!(s, HostStep::Alloc { name, .. } if *name == host);
            let alloc = match held.iter().position(is_alloc) {
                Some(k) => Some((true, k)),
                None => out.iter().position(is_alloc).map(|k| (false, k)),
            };
            let init = match alloc.map(|(h, k)| if h { &held[k] } else { &out[k] }) {
                Some(HostStep::Alloc {
                    fill: Fill::Empty, ..
                }) => None,
                // `np.zeros`, `np.full` with a constant: the local starts so.
                Some(HostStep::Alloc {
                    fill: Fill::Value(Expr::Lit(l)),
                    elem,
                    ..
                }) if l.ty() == *elem => Some(Expr::Lit(*l)),
                _ => {
                    k += 1;
                    continue;
                }
            };
            let Type::Array(at) = kernel.params[k].ty else {
                k += 1;
                continue;
            };
            let param = kernel.params[k].name.clone();
            let local = (|| {
                if self.named.get(&host).is_some_and(|n| *n > 0)
                    || self.launch_uses.get(&host) != Some(&uses_in_group)
                    || !self.shapes.contains_key(&host)
                {
                    return None;
                }
                alloc?;
                // Its extents read through another array of the same shape.
                let mut shaped = kernel.clone();
                let axes = shape_axes(&shaped.body, &param);
                if !axes.is_empty() {
                    let same = |q: &Param, hq: &String| {
                        q.name != param
                            && matches!(&q.ty, Type::Array(a) if axes.iter().all(|d| (*d as u8) < a.ndim))
                            && axes.iter().all(|d| {
                                let ax = |h: &String| Expr::Shape { array: h.clone(), axis: *d as u8 };
                                self.same(&ax(hq), &ax(&host))
                            })
                    };
                    let (q, hq) = kernel
                        .params
                        .iter()
                        .zip(args.iter())
                        .find(|(q, hq)| same(q, hq))?;
                    let (from, to) = (param.clone(), q.name.clone());
                    shaped.body = map_stmts(&shaped.body, &|e| {
                        map_expr(e, &|x| match x {
                            Expr::Shape { array, axis } if *array == from => Some(Expr::Shape {
                                array: to.clone(),
                                axis: *axis,
                            }),
                            _ => None,
                        })
                    });
                    Some((shaped, Some(hq.clone())))
                } else {
                    Some((shaped, None))
                }
                .and_then(|(shaped, new_space)| {
                    let Some(Stmt::ParallelFor(pf)) = shaped.body.first() else {
                        return None;
                    };
                    let body = as_local(&pf.body, &pf.vars, &param, at.elem, init.clone())?;
                    Some((shaped, body, new_space))
                })
            })();
            match local {
                Some((shaped, body, new_space)) => {
                    *kernel = shaped;
                    if let Some(Stmt::ParallelFor(pf)) = kernel.body.first_mut() {
                        pf.body = body;
                    }
                    if let Some(hq) = new_space {
                        if *space == host {
                            *space = hq;
                        }
                    }
                    kernel.params.remove(k);
                    args.remove(k);
                    let gone = match alloc.expect("checked") {
                        (true, k) => held.remove(k),
                        (false, k) => out.remove(k),
                    };
                    // What the allocation named (another array's shape)
                    // is named once less.
                    let mut m = HashSet::new();
                    mentions(&gone, &mut m);
                    for n in m {
                        if let Some(c) = self.named.get_mut(&n) {
                            *c = c.saturating_sub(1);
                        }
                    }
                    done.push(host);
                    // An earlier argument may have become a temporary.
                    k = 0;
                    continue;
                }
                None => k += 1,
            }
        }
        done
    }
}

/// `body` with the array `param` replaced by a local of type `elem`, when
/// every mention is an element at the point (`vars`) and either the array
/// starts as `init` (a constant fill) or its first mention is an
/// unconditional store.
fn as_local(
    body: &[Stmt],
    vars: &[String],
    param: &str,
    elem: ScalarType,
    init: Option<Expr>,
) -> Option<Vec<Stmt>> {
    let point: Vec<Expr> = vars.iter().map(|v| var(v)).collect();
    let first = body.iter().position(|s| stmt_mentions(s, param))?;
    let (refs, _) = accesses(&body[first..]).remove(param)?;
    if refs.iter().any(|ix| *ix != point) {
        return None;
    }
    let mut shape_use = false;
    walk_body_exprs(&body[first..], &mut |e| {
        shape_use |= matches!(e, Expr::Shape { array, .. } if array == param);
    });
    if shape_use {
        return None;
    }
    let mut out = body[..first].to_vec();
    match init {
        Some(v) => {
            out.push(Stmt::Let {
                name: param.to_string(),
                ty: elem,
                init: v,
            });
            out.extend(local_body(&body[first..], param));
        }
        None => {
            let Stmt::Store { target, value } = &body[first] else {
                return None;
            };
            if target.array != param || expr_mentions(value, param) {
                return None;
            }
            out.push(Stmt::Let {
                name: param.to_string(),
                ty: elem,
                init: value.clone(),
            });
            out.extend(local_body(&body[first + 1..], param));
        }
    }
    Some(out)
}

/// Stores to `param[…]` as assignments, loads as the local.
fn local_body(body: &[Stmt], param: &str) -> Vec<Stmt> {
    let stores = map_leaves(body, &|s| match s {
        Stmt::Store { target, value } if target.array == param => Stmt::Assign {
            name: param.to_string(),
            value: value.clone(),
        },
        other => other.clone(),
    });
    map_stmts(&stores, &|e| {
        map_expr(e, &|x| match x {
            Expr::Load(r) if r.array == param => Some(var(param)),
            _ => None,
        })
    })
}

/// The axes of `array` whose extent `body` (extents included) reads.
fn shape_axes(body: &[Stmt], array: &str) -> Vec<usize> {
    let mut axes = Vec::new();
    walk_body_exprs(body, &mut |e| {
        if let Expr::Shape { array: a, axis } = e {
            if a == array && !axes.contains(&(*axis as usize)) {
                axes.push(*axis as usize);
            }
        }
    });
    axes
}

fn stmt_mentions(s: &Stmt, name: &str) -> bool {
    let mut found = stores(std::slice::from_ref(s))
        .iter()
        .any(|r| r.array == name);
    walk_body_exprs(std::slice::from_ref(s), &mut |e| {
        found |= expr_names(e, name);
    });
    found
}

fn expr_mentions(e: &Expr, name: &str) -> bool {
    let mut found = false;
    port_codegen::ir::walk_expr(e, &mut |x| found |= expr_names(x, name));
    found
}

/// Whether `e` itself (not its operands) names `name`.
fn expr_names(e: &Expr, name: &str) -> bool {
    match e {
        Expr::Var(v) => v == name,
        Expr::Shape { array, .. } => array == name,
        Expr::Load(r) | Expr::Atomic(_, r, _) | Expr::AtomicCas(r, _, _) => r.array == name,
        _ => false,
    }
}

/// Names `step` reads or writes other than through a launch's arguments
/// (counted apart, as `launch_uses`) and its own allocation's name.
fn mentions(step: &HostStep, out: &mut HashSet<String>) {
    let mut names = step.names();
    if let HostStep::Launch { args, .. } = step {
        names.retain(|n| !args.contains(n));
    }
    out.extend(names);
}

impl Fuser<'_> {
    /// `e` (host names) with every array the schedule allocated replaced by
    /// the shape it was allocated with, down to the arguments' shapes.
    fn canon(&self, e: &Expr, depth: u32) -> Expr {
        canon_with(&self.shapes, e, depth)
    }

    /// Whether two extents (host names) are equal: the same canonical
    /// form, or linked by the entry guards' equalities.
    fn same(&self, a: &Expr, b: &Expr) -> bool {
        let (a, b) = (self.canon(a, 0), self.canon(b, 0));
        let mut reached = vec![a];
        let mut k = 0;
        while k < reached.len() {
            if reached[k] == b {
                return true;
            }
            for (x, y) in &self.equal {
                for (from, to) in [(x, y), (y, x)] {
                    if *from == reached[k] && !reached.contains(to) {
                        reached.push(to.clone());
                    }
                }
            }
            k += 1;
        }
        false
    }

    /// The launch of `name` as a [`Shaped`] group of one, if fusion can
    /// take it.
    fn shaped(&mut self, name: &str, args: &[String], shape: &LaunchShape) -> Option<Shaped> {
        if self.sites.get(name) != Some(&1) {
            return None;
        }
        let k = self.kernel(name)?.clone();
        let nvars = match shape {
            LaunchShape::Grid1 { .. } => 1,
            LaunchShape::Grid2 { .. } => 2,
            _ => return None,
        };
        if !k.shared.is_empty() || k.params.len() != args.len() {
            return None;
        }
        let [Stmt::ParallelFor(pf)] = k.body.as_slice() else {
            return None;
        };
        if pf.vars.len() != nvars
            || any_stmt(&pf.body, &|s| matches!(s, Stmt::Return(_) | Stmt::Barrier))
            || jumps_out(&pf.body)
        {
            return None;
        }
        let host: HashMap<&str, &str> = k
            .params
            .iter()
            .zip(args)
            .map(|(p, a)| (p.name.as_str(), a.as_str()))
            .collect();
        let arrays: HashSet<&str> = k
            .params
            .iter()
            .filter(|p| matches!(p.ty, Type::Array(_)))
            .map(|p| p.name.as_str())
            .collect();
        let mut unsafe_expr = false;
        walk_body_exprs(&pf.body, &mut |e| match e {
            Expr::Atomic(..) | Expr::AtomicCas(..) => unsafe_expr = true,
            Expr::Call(_, a) => {
                unsafe_expr |= a
                    .iter()
                    .any(|x| matches!(x, Expr::Var(v) if arrays.contains(v.as_str())))
            }
            _ => {}
        });
        if unsafe_expr {
            return None;
        }
        // Every store at `T[c₀ + i₀, …]`, one index vector for all.
        let stores = stores(&pf.body);
        let first = stores.first()?;
        let mut offsets = Vec::new();
        // One element (`t[0] = u[0]`, `t[-1] = …`): a loop of one point
        // whose index does not move; rebased, the point where `i` is it.
        let mut points: Vec<Option<Expr>> = Vec::new();
        for (d, ix) in first.indices.iter().enumerate() {
            let v = pf.vars.get(d)?;
            match offset_of(ix, v) {
                Some(c) => {
                    offsets.push(c);
                    points.push(None);
                }
                // The point must be known before the body runs: it reads
                // only parameters (no local of the body, no loop variable).
                None if matches!(pf.extents[d], Expr::Lit(Literal::I64(1)))
                    && only_params(ix, &k.params)
                    && !body_mentions_var(&pf.body, v) =>
                {
                    offsets.push(0);
                    points.push(Some(ix.clone()));
                }
                None => return None,
            }
        }
        if offsets.len() != nvars || stores.iter().any(|s| s.indices != first.indices) {
            return None;
        }
        let target = first.array.clone();
        let target_host = host.get(target.as_str())?.to_string();
        let to_host = |e: &Expr| -> Expr {
            map_expr(e, &|x| match x {
                Expr::Shape { array, axis } => host.get(array.as_str()).map(|h| Expr::Shape {
                    array: h.to_string(),
                    axis: *axis,
                }),
                Expr::Var(v) => host.get(v.as_str()).map(|h| Expr::Var(h.to_string())),
                _ => None,
            })
        };
        let whole = |array: &str, d: usize| Expr::Shape {
            array: array.to_string(),
            axis: d as u8,
        };
        // Other arrays it stores to have the target's shape.
        for s in &stores {
            let h = host.get(s.array.as_str())?;
            if (0..nvars).any(|d| !self.same(&whole(h, d), &whole(&target_host, d))) {
                return None;
            }
        }
        // The rebased body: `iₐ` runs over `T.shape[a]` and reads `iₐ - cₐ`.
        let vars: HashSet<String> = pf.vars.iter().cloned().collect();
        let sub: HashMap<String, Expr> = pf
            .vars
            .iter()
            .zip(&offsets)
            .filter(|(_, c)| **c != 0)
            .map(|(v, c)| (v.clone(), binary(BinOp::Sub, var(v), i64(*c))))
            .collect();
        let body = map_stmts(&pf.body, &|e| {
            simplify_indices(&crate::ir_util::subst(e, &sub), &vars)
        });
        // Where the thread's `i` is the point, the point's index is `i`.
        let at_point: Vec<(usize, Expr)> = points
            .iter()
            .enumerate()
            .filter_map(|(d, p)| p.clone().map(|p| (d, p)))
            .collect();
        let body = if at_point.is_empty() {
            body
        } else {
            let vs = pf.vars.clone();
            let point = |r: &ElemRef| ElemRef {
                array: r.array.clone(),
                indices: r
                    .indices
                    .iter()
                    .map(|ix| match at_point.iter().find(|(_, p)| p == ix) {
                        Some((d, _)) => var(&vs[*d]),
                        None => ix.clone(),
                    })
                    .collect(),
            };
            let body = map_stmts(&body, &|e| {
                map_expr(e, &|x| match x {
                    Expr::Load(r) => Some(Expr::Load(point(r))),
                    _ => None,
                })
            });
            map_store_targets(&body, &point)
        };
        let mut conds: Vec<Expr> = Vec::new();
        for (d, (v, c)) in pf.vars.iter().zip(&offsets).enumerate() {
            let extent = &pf.extents[d];
            if let Some(p) = &points[d] {
                conds.push(Expr::Cmp(CmpOp::Eq, Box::new(var(v)), Box::new(p.clone())));
                continue;
            }
            if *c > 0 {
                conds.push(Expr::Cmp(CmpOp::Ge, Box::new(var(v)), Box::new(i64(*c))));
            }
            let to_end = runs_to_end(extent, *c, &target, d)
                || (*c == 0 && self.same(&to_host(extent), &whole(&target_host, d)));
            if !to_end {
                // With `i ≥ c` (or `i ≥ 0`), `i < c + max(x, 0)` is
                // `i < c + x`.
                let extent = match extent {
                    Expr::Binary(BinOp::Max, x, z)
                        if matches!(z.as_ref(), Expr::Lit(Literal::I64(0))) =>
                    {
                        x.as_ref()
                    }
                    e => e,
                };
                let stop = plus(extent, *c);
                conds.push(Expr::Cmp(CmpOp::Lt, Box::new(var(v)), Box::new(stop)));
            }
        }
        let body = match conds.into_iter().reduce(and) {
            None => body,
            Some(cond) => vec![Stmt::If {
                cond,
                then_body: body,
                else_body: Vec::new(),
            }],
        };
        let mut kernel = k.clone();
        kernel.body = vec![Stmt::ParallelFor(ParallelFor {
            vars: pf.vars.clone(),
            extents: (0..nvars)
                .map(|d| Expr::Shape {
                    array: target.clone(),
                    axis: d as u8,
                })
                .collect(),
            body,
        })];
        self.original_launch
            .insert(name.to_string(), (args.to_vec(), shape.clone()));
        Some(Shaped {
            kernel,
            args: args.to_vec(),
            vars: pf.vars.clone(),
            space: target_host,
            members: vec![name.to_string()],
        })
    }

    /// `g` then `k` as one kernel, when one thread can do both at a point.
    fn merge(&mut self, g: &Shaped, k: &Shaped, held: &[HostStep]) -> Option<Shaped> {
        let n = g.vars.len();
        if k.vars.len() != n {
            return None;
        }
        let axis = |a: &str, d: usize| Expr::Shape {
            array: a.to_string(),
            axis: d as u8,
        };
        // The guards held for the fused launch run before it: their
        // equalities hold there too.
        let entry = self.equal.len();
        for s in held {
            if let HostStep::Guard(q) = s {
                if !q.relation.is_eq() {
                    continue;
                }
                let pair = (self.canon(&q.lhs, 0), self.canon(&q.rhs, 0));
                self.equal.push(pair);
            }
        }
        let same_space = (0..n).all(|d| self.same(&axis(&g.space, d), &axis(&k.space, d)));
        self.equal.truncate(entry);
        if !same_space {
            return None;
        }
        let mut kernel = g.kernel.clone();
        let mut args = g.args.clone();
        let mut taken: HashSet<String> = kernel.params.iter().map(|p| p.name.clone()).collect();
        taken.extend(locals(&kernel.body));
        let mut rename: HashMap<String, String> = HashMap::new();
        for (p, h) in k.kernel.params.iter().zip(&k.args) {
            match args.iter().position(|a| a == h) {
                Some(pos) => {
                    if kernel.params[pos].ty != p.ty {
                        return None;
                    }
                    rename.insert(p.name.clone(), kernel.params[pos].name.clone());
                }
                None => {
                    let name = fresh(&p.name, &taken);
                    taken.insert(name.clone());
                    kernel.params.push(Param {
                        name: name.clone(),
                        ty: p.ty,
                    });
                    args.push(h.clone());
                    rename.insert(p.name.clone(), name);
                }
            }
        }
        for (kv, gv) in k.vars.iter().zip(&g.vars) {
            rename.insert(kv.clone(), gv.clone());
        }
        let [Stmt::ParallelFor(kp)] = k.kernel.body.as_slice() else {
            return None;
        };
        for l in locals(&kp.body) {
            if !rename.contains_key(&l) && taken.contains(&l) {
                let name = fresh(&l, &taken);
                taken.insert(name.clone());
                rename.insert(l, name);
            }
        }
        let k_body = rename_body(&kp.body, &rename);
        let Some(Stmt::ParallelFor(gp)) = kernel.body.first_mut() else {
            return None;
        };
        // Dependence: an array written by either and touched by both is
        // only ever accessed at the point itself.
        let point: Vec<Expr> = gp.vars.iter().map(|v| var(v)).collect();
        let (ga, ka) = (accesses(&gp.body), accesses(&k_body));
        for (array, (g_refs, g_writes)) in &ga {
            let Some((k_refs, k_writes)) = ka.get(array) else {
                continue;
            };
            if (*g_writes || *k_writes) && g_refs.iter().chain(k_refs).any(|ix| *ix != point) {
                return None;
            }
        }
        gp.body.extend(k_body);
        let mut members = g.members.clone();
        members.extend(k.members.iter().cloned());
        Some(Shaped {
            kernel,
            args,
            vars: g.vars.clone(),
            space: g.space.clone(),
            members,
        })
    }
}

/// `e` with every allocated array's extent replaced by the extent it was
/// allocated with, down to the arguments' (see [`Fuser::canon`]).
fn canon_with(shapes: &HashMap<String, Vec<Expr>>, e: &Expr, depth: u32) -> Expr {
    map_expr(e, &|x| match x {
        Expr::Shape { array, axis } if depth < 16 => shapes
            .get(array)
            .and_then(|s| s.get(*axis as usize))
            .map(|d| canon_with(shapes, d, depth + 1)),
        _ => None,
    })
}

/// The line a kernel's doc names (`Line 5 of …`, `The loop at line 12 …`).
fn line_of(doc: &str) -> Option<String> {
    let lower = doc.to_lowercase();
    let at = lower.find("line ")? + 5;
    let digits: String = lower[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then_some(digits)
}

/// A `break` or `continue` outside any loop of `body` (leaving the
/// parallel loop's iteration).
fn jumps_out(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Break | Stmt::Continue => true,
        Stmt::If {
            then_body,
            else_body,
            ..
        } => jumps_out(then_body) || jumps_out(else_body),
        _ => false,
    })
}

/// Every store of `body`, at any depth.
fn stores(body: &[Stmt]) -> Vec<ElemRef> {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::Store { target, .. } => out.push(target.clone()),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                out.extend(stores(then_body));
                out.extend(stores(else_body));
            }
            Stmt::While { body, .. } | Stmt::For { body, .. } => out.extend(stores(body)),
            Stmt::ParallelFor(p) => out.extend(stores(&p.body)),
            _ => {}
        }
    }
    out
}

/// Each array `body` touches: the index vectors it uses, and whether it
/// stores to it.
fn accesses(body: &[Stmt]) -> HashMap<String, (Vec<Vec<Expr>>, bool)> {
    let mut out: HashMap<String, (Vec<Vec<Expr>>, bool)> = HashMap::new();
    for s in stores(body) {
        let e = out.entry(s.array.clone()).or_default();
        e.0.push(s.indices.clone());
        e.1 = true;
    }
    // `a.shape[0]` reads no element; arrays passed whole to device
    // functions are refused before.
    walk_body_exprs(body, &mut |e| {
        if let Expr::Load(r) = e {
            out.entry(r.array.clone())
                .or_default()
                .0
                .push(r.indices.clone());
        }
    });
    out
}

/// `x + c`, folding `c` into a constant `x` ends with (`(n - 2) + 1` is
/// `n - 1`).
fn plus(x: &Expr, c: i64) -> Expr {
    let folded = |base: &Expr, k: i64| match k {
        0 => base.clone(),
        k if k > 0 => binary(BinOp::Add, base.clone(), i64(k)),
        k => binary(BinOp::Sub, base.clone(), i64(-k)),
    };
    match x {
        _ if c == 0 => x.clone(),
        Expr::Lit(Literal::I64(k)) => i64(k + c),
        Expr::Binary(BinOp::Sub, a, k) => match k.as_ref() {
            Expr::Lit(Literal::I64(k)) => folded(a, c - k),
            _ => binary(BinOp::Add, x.clone(), i64(c)),
        },
        Expr::Binary(BinOp::Add, a, k) => match k.as_ref() {
            Expr::Lit(Literal::I64(k)) => folded(a, c + k),
            _ => binary(BinOp::Add, x.clone(), i64(c)),
        },
        _ => binary(BinOp::Add, x.clone(), i64(c)),
    }
}

/// Whether every name `e` reads is one of `params` (scalars, or arrays'
/// extents and elements at such indices).
fn only_params(e: &Expr, params: &[Param]) -> bool {
    let mut ok = true;
    port_codegen::ir::walk_expr(e, &mut |x| {
        let name = match x {
            Expr::Var(n) | Expr::Shape { array: n, .. } => Some(n),
            Expr::Load(r) => Some(&r.array),
            Expr::Call(..) | Expr::Atomic(..) | Expr::AtomicCas(..) => {
                ok = false;
                None
            }
            _ => None,
        };
        if let Some(n) = name {
            ok &= params.iter().any(|p| &p.name == n);
        }
    });
    ok
}

/// Whether `body` reads the variable `v` anywhere.
fn body_mentions_var(body: &[Stmt], v: &str) -> bool {
    let mut found = false;
    walk_body_exprs(body, &mut |e| found |= matches!(e, Expr::Var(n) if n == v));
    found
}

/// `body` with every store's target mapped by `f`.
fn map_store_targets(body: &[Stmt], f: &dyn Fn(&ElemRef) -> ElemRef) -> Vec<Stmt> {
    map_leaves(body, &|s| match s {
        Stmt::Store { target, value } => Stmt::Store {
            target: f(target),
            value: value.clone(),
        },
        other => other.clone(),
    })
}

/// `c` when `ix` is `v + c`, `c + v` or `v` (c a non-negative constant).
fn offset_of(ix: &Expr, v: &str) -> Option<i64> {
    let is_v = |e: &Expr| matches!(e, Expr::Var(n) if n == v);
    let lit = |e: &Expr| match e {
        Expr::Lit(Literal::I64(c)) if *c >= 0 => Some(*c),
        _ => None,
    };
    match ix {
        e if is_v(e) => Some(0),
        Expr::Binary(BinOp::Add, a, b) if is_v(a) => lit(b),
        Expr::Binary(BinOp::Add, a, b) if is_v(b) => lit(a),
        _ => None,
    }
}

/// Whether a loop of `extent` points from `c` ends where `target`'s axis
/// `d` does: `max(T.shape[d] - c, 0)` (NumPy's `T[c:]`), or `T.shape[d]`
/// itself from 0.
fn runs_to_end(extent: &Expr, c: i64, target: &str, d: usize) -> bool {
    let is_axis = |e: &Expr| matches!(e, Expr::Shape { array, axis } if array == target && *axis as usize == d);
    if c == 0 && is_axis(extent) {
        return true;
    }
    let Expr::Binary(BinOp::Max, a, z) = extent else {
        return false;
    };
    if !matches!(z.as_ref(), Expr::Lit(Literal::I64(0))) {
        return false;
    }
    match a.as_ref() {
        Expr::Binary(BinOp::Sub, s, k) => {
            is_axis(s) && matches!(k.as_ref(), Expr::Lit(Literal::I64(x)) if *x == c)
        }
        Expr::Binary(BinOp::Add, s, k) => {
            is_axis(s) && matches!(k.as_ref(), Expr::Lit(Literal::I64(x)) if *x == -c)
        }
        _ => false,
    }
}

/// Array indices over the loop variables written in their simplest affine
/// form: `1 + (i - 1)` is `i`, `(j - 2) + 1` is `j - 1`.
fn simplify_indices(e: &Expr, vars: &HashSet<String>) -> Expr {
    let simple = |ix: &Expr| {
        affine(ix, vars)
            .and_then(rebuild)
            .unwrap_or_else(|| ix.clone())
    };
    let e = simple(e);
    map_expr(&e, &|x| match x {
        Expr::Load(r) => Some(Expr::Load(ElemRef {
            array: r.array.clone(),
            indices: r
                .indices
                .iter()
                .map(|i| simplify_indices(i, vars))
                .collect(),
        })),
        _ => None,
    })
}

type Affine = (BTreeMap<String, i64>, i64);

/// `e` as `Σ kᵥ·v + c` over `vars` (i64), if it is one.
fn affine(e: &Expr, vars: &HashSet<String>) -> Option<Affine> {
    let add = |(mut a, c): Affine, (b, d): Affine, sign: i64| {
        for (v, k) in b {
            *a.entry(v).or_default() += sign * k;
        }
        (a, c + sign * d)
    };
    match e {
        Expr::Lit(Literal::I64(c)) => Some((BTreeMap::new(), *c)),
        Expr::Var(v) if vars.contains(v) => Some((BTreeMap::from([(v.clone(), 1)]), 0)),
        Expr::Binary(BinOp::Add, a, b) => Some(add(affine(a, vars)?, affine(b, vars)?, 1)),
        Expr::Binary(BinOp::Sub, a, b) => Some(add(affine(a, vars)?, affine(b, vars)?, -1)),
        _ => None,
    }
}

/// The affine form as an expression: `i`, `i + 1`, `i - 2`, `i + j`
/// (none when a variable has a coefficient other than 0 or 1).
fn rebuild((terms, c): Affine) -> Option<Expr> {
    let mut out: Option<Expr> = None;
    for (v, k) in terms {
        match k {
            0 => {}
            1 => {
                out = Some(match out {
                    None => var(&v),
                    Some(e) => binary(BinOp::Add, e, var(&v)),
                })
            }
            _ => return None,
        }
    }
    Some(match (out, c) {
        (None, c) => i64(c),
        (Some(e), 0) => e,
        (Some(e), c) if c > 0 => binary(BinOp::Add, e, i64(c)),
        (Some(e), c) => binary(BinOp::Sub, e, i64(-c)),
    })
}
