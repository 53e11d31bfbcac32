//! **persist** — a sequential host loop whose iterations are small runs
//! inside one kernel.
//!
//! A loop the dependence test keeps on the host launches its body's
//! kernels once per iteration; when each launch covers a few hundred
//! elements, the launches cost more than the work (a launch is a few
//! microseconds on the device and more from a Python wrapper). Such a loop
//! becomes one kernel of one block ([`LaunchShape::Persistent`]): the loop
//! runs in every thread, each launch of its body becomes the kernel's
//! `parallel for` (a grid-stride loop, which over one block is a
//! block-stride loop), and a block barrier after each one orders the
//! iterations as the launches did. The host scalars the body computes
//! become the kernel's locals; nested host loops of the same kind become
//! nested loops of the kernel.
//!
//! The choice is made at run time, from the work per iteration: the most
//! elements one of the body's launches covers, an extent the loop does not
//! change. The host `if` launches the persistent kernel when it is at most
//! [`MAX_WORK`] and keeps the per-iteration launches otherwise; the plan's
//! log says so, loop by loop.
//!
//! A loop stays as it is when its body does anything else: a reduction or
//! a read-back (the host reads a value per iteration), a library call, an
//! allocation, a guard, a `while`, an `if`, a `break`, rebound arrays; when
//! a kernel of the body has a barrier, shared memory or a `return` of its
//! own; when a name the body binds is read after the loop; when the work
//! per iteration changes with the loop; or when the kernel it would make
//! does not verify (a type the host and the kernels disagree on).

use std::collections::{HashMap, HashSet};

use port_codegen::ir::{
    any_stmt, walk_body_exprs, walk_expr, BinOp, CmpOp, ElemRef, Expr, Kernel, Literal,
    ParallelFor, Param, Stmt, Type,
};

use crate::launch::THREADS_PERSIST;
use crate::plan::{HostStep, KernelPlan, LaunchShape, PlanKind, ShapeGuard};

pub const NAME: &str = "persist";

/// Most elements one launch of the loop's body may cover for the loop to
/// run in one block of [`THREADS_PERSIST`] threads: 8 per thread. On an
/// H200, at 2,046 elements a step, the persistent kernel ran 1-D time
/// loops 5–7x faster end to end than a launch per step (0.8 µs a phase
/// against 5 µs a launch; `scripts/bench_persist.py`); the break-even lies
/// further out, unmeasured. `PORT_PERSIST_MAX_WORK` sets another bound
/// (to measure it).
pub const MAX_WORK: i64 = 8 * THREADS_PERSIST as i64;

/// [`MAX_WORK`], or `PORT_PERSIST_MAX_WORK` when set to a positive number.
fn max_work() -> i64 {
    std::env::var("PORT_PERSIST_MAX_WORK")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(MAX_WORK)
}

/// What the pass did: one note per loop it made a kernel of (`converted`),
/// and one per loop with launches it left on the host, with the reason
/// (`kept`).
#[derive(Debug, Default)]
pub struct Outcome {
    pub converted: Vec<String>,
    pub kept: Vec<String>,
}

/// Makes persistent kernels of the plan's eligible host loops.
/// `PORT_PERSIST=0` turns the pass off (to time both schedules on one
/// device); `PORT_PERSIST_MAX_WORK=N` moves the bound of [`MAX_WORK`].
pub fn persist_plan(plan: &mut KernelPlan) -> Outcome {
    let mut out = Outcome::default();
    if plan.kind != PlanKind::Kernels || std::env::var("PORT_PERSIST").as_deref() == Ok("0") {
        return out;
    }
    let env = type_env(plan);
    let mut reads = HashMap::new();
    let mut binds = HashMap::new();
    count_names(&plan.steps, &mut reads, &mut binds);
    for n in plan.interface_names() {
        *reads.entry(n).or_insert(0) += 1;
    }
    let interface = plan.interface_names();
    let orig = plan.steps.clone();
    let mut steps = std::mem::take(&mut plan.steps);
    let mut cx = Cx {
        plan,
        env: &env,
        reads,
        binds,
        orig: &orig,
        interface: &interface,
        out: &mut out,
    };
    cx.rewrite(&mut steps);
    plan.steps = steps;
    out
}

/// How many steps read and bind each name, nested steps included.
fn count_names(
    steps: &[HostStep],
    reads: &mut HashMap<String, usize>,
    binds: &mut HashMap<String, usize>,
) {
    HostStep::walk(steps, &mut |s| {
        for n in s.names() {
            *reads.entry(n).or_insert(0) += 1;
        }
        for n in s.binds() {
            *binds.entry(n.to_string()).or_insert(0) += 1;
        }
    });
}

struct Cx<'a> {
    plan: &'a mut KernelPlan,
    env: &'a HashMap<String, Type>,
    /// Steps of the whole plan (before this pass) reading, and binding,
    /// each name; with the plan's interface counted as a read.
    reads: HashMap<String, usize>,
    binds: HashMap<String, usize>,
    /// The plan's steps before this pass, and the names its caller sees.
    orig: &'a [HostStep],
    interface: &'a HashSet<String>,
    out: &'a mut Outcome,
}

/// Reads of `name` in `steps` that see a binding from outside them: not
/// those inside a loop whose variable is `name` (each iteration binds it
/// before its body runs).
fn unshadowed_reads(steps: &[HostStep], name: &str) -> usize {
    steps
        .iter()
        .map(|s| match s {
            HostStep::Loop {
                var,
                start,
                stop,
                step,
                body,
            } => {
                let mut n = 0;
                for e in [start, stop, step] {
                    walk_expr(e, &mut |x| {
                        n += usize::from(matches!(x, Expr::Var(v) if v == name))
                    });
                }
                n + if var == name {
                    0
                } else {
                    unshadowed_reads(body, name)
                }
            }
            other => {
                usize::from(other.names().contains(name))
                    + other
                        .bodies()
                        .into_iter()
                        .map(|b| unshadowed_reads(b, name))
                        .sum::<usize>()
            }
        })
        .sum()
}

impl Cx<'_> {
    /// Rewrites the loops of `steps`, outermost first: a loop that cannot
    /// run in one kernel has its body tried instead.
    fn rewrite(&mut self, steps: &mut [HostStep]) {
        for s in steps.iter_mut() {
            if let HostStep::Loop { var, .. } = s {
                let var = var.clone();
                match self.try_loop(s) {
                    Ok(new) => {
                        *s = new;
                        continue;
                    }
                    Err(why) if why != NO_LAUNCH => {
                        self.out.kept.push(format!(
                            "the loop over `{var}` launches per iteration: {why}"
                        ));
                    }
                    Err(_) => {}
                }
            }
            match s {
                HostStep::Loop { body, .. } => self.rewrite(body),
                HostStep::While { test, body, .. } => {
                    self.rewrite(test);
                    self.rewrite(body);
                }
                HostStep::If { then, orelse, .. } => {
                    self.rewrite(then);
                    self.rewrite(orelse);
                }
                _ => {}
            }
        }
    }

    fn try_loop(&mut self, step: &HostStep) -> Result<HostStep, String> {
        let HostStep::Loop { var, .. } = step else {
            return Err(NO_LAUNCH.into());
        };
        let mut launches = 0;
        HostStep::walk(std::slice::from_ref(step), &mut |s| {
            launches += usize::from(matches!(s, HostStep::Launch { .. }))
        });
        if launches == 0 {
            return Err(NO_LAUNCH.into());
        }
        let mut t = Translation::default();
        let stmt = t.step(self.plan, step, 0)?;
        // Names the loop binds are its own: bound nowhere else (a value
        // carried in from before the loop is the host's) and read nowhere
        // after it (the host would no longer compute them).
        let (mut reads, mut binds) = (HashMap::new(), HashMap::new());
        count_names(std::slice::from_ref(step), &mut reads, &mut binds);
        let mut bound: Vec<&String> = t.bound.iter().collect();
        bound.sort();
        for n in bound {
            if t.loop_vars.contains(n) {
                // A loop variable is bound anew by each iteration: only a
                // read after the loop could see the loop's last value.
                if self.interface.contains(n)
                    || unshadowed_reads(self.orig, n)
                        != unshadowed_reads(std::slice::from_ref(step), n)
                {
                    return Err(format!("`{n}` is read after the loop"));
                }
                continue;
            }
            if self.binds.get(n) != binds.get(n) {
                return Err(format!("`{n}` is also bound outside the loop"));
            }
            if self.reads.get(n) != reads.get(n) {
                return Err(format!("`{n}` is read after the loop"));
            }
        }
        // The work per iteration, an extent the loop does not change.
        let mut work: Option<Expr> = None;
        for w in &t.works {
            if mentions_any(w, &t.bound) {
                return Err("the work per iteration changes with the loop".into());
            }
            work = Some(match work {
                None => w.clone(),
                Some(prev) if prev == *w => prev,
                Some(prev) => Expr::Binary(BinOp::Max, Box::new(prev), Box::new(w.clone())),
            });
        }
        let work = work.ok_or(NO_LAUNCH)?;
        // Shape guards of the body that the loop does not change are
        // checked once, before the kernel, when the loops around them run
        // at least once (as the host loop would have checked them).
        let mut checks = Vec::new();
        for (g, trips) in &t.guards {
            if trips
                .iter()
                .chain([&g.lhs, &g.rhs])
                .any(|e| mentions_any(e, &t.bound))
            {
                return Err(format!(
                    "the shape guard of line {} changes with the loop",
                    g.line
                ));
            }
            let cond = trips
                .iter()
                .cloned()
                .reduce(|a, b| Expr::Binary(BinOp::And, Box::new(a), Box::new(b)))
                .expect("a guard inside the loop has its trip");
            checks.push(HostStep::If {
                cond,
                then: vec![HostStep::Guard(g.clone())],
                orelse: Vec::new(),
            });
        }
        // The kernel's parameters: every name its body reads and does not
        // bind, arrays first, each with the type the host gives it.
        let body = vec![stmt];
        let mut free = Vec::new();
        free_names(&body, &mut HashSet::new(), &mut free);
        let mut params = Vec::new();
        for n in &free {
            let ty = t
                .types
                .get(n)
                .or_else(|| self.env.get(n))
                .copied()
                .ok_or_else(|| format!("no type is known for `{n}`"))?;
            params.push(Param {
                name: n.clone(),
                ty,
            });
        }
        params.sort_by_key(|p| matches!(p.ty, Type::Scalar(_)));
        let name = unique_name(self.plan, &format!("{}_loop_{var}", self.plan.function));
        let max_work = max_work();
        let kernel = Kernel {
            name: name.clone(),
            params: params.clone(),
            shared: Vec::new(),
            body,
        };
        let mut trial = self.plan.module.clone();
        trial.kernels.push(kernel.clone());
        port_codegen::verify::verify_module(&trial)
            .map_err(|e| format!("the kernel it makes does not verify ({e})"))?;
        self.plan.module.kernels.push(kernel);
        self.out.converted.push(format!(
            "the loop over `{var}` runs in one kernel ({name}, one block of {THREADS_PERSIST} threads) when each of the {} kernels of its body covers at most {max_work} elements",
            t.launches
        ));
        Ok(HostStep::If {
            cond: Expr::Cmp(
                CmpOp::Le,
                Box::new(work),
                Box::new(Expr::Lit(Literal::I64(max_work))),
            ),
            then: std::iter::once(HostStep::Comment(crate::plan::PERSIST_CHOICE.into()))
                .chain(checks)
                .chain([HostStep::Launch {
                    kernel: name,
                    args: params.into_iter().map(|p| p.name).collect(),
                    shape: LaunchShape::Persistent,
                }])
                .collect(),
            orelse: vec![step.clone()],
        })
    }
}

/// The reason for a loop with no launch inside: not worth a note.
const NO_LAUNCH: &str = "no launch";

/// A host loop translated into kernel statements.
#[derive(Default)]
struct Translation {
    /// Launches inside, and the elements each covers.
    launches: usize,
    works: Vec<Expr>,
    /// Names the loop binds: loop variables, host scalars.
    bound: HashSet<String>,
    /// Host names passed to the body's kernels, with the parameter's type.
    types: HashMap<String, Type>,
    /// How many kernels were inlined (for fresh local names).
    inlined: usize,
    /// Host scalars declared so far, with the loop depth of their `let`.
    declared: HashMap<String, usize>,
    /// The variables of the loops translated.
    loop_vars: HashSet<String>,
    /// The shape guards of the body, each with the conditions under which
    /// the loops around it run at least once (`start < stop` for a
    /// positive literal step).
    guards: Vec<(ShapeGuard, Vec<Expr>)>,
    /// Those conditions for the loops being translated, outermost first
    /// (`None` for a loop whose step is not a constant).
    trips: Vec<Option<Expr>>,
}

impl Translation {
    fn step(&mut self, plan: &KernelPlan, s: &HostStep, depth: usize) -> Result<Stmt, String> {
        match s {
            HostStep::Loop {
                var,
                start,
                stop,
                step,
                body,
            } => {
                self.bound.insert(var.clone());
                self.loop_vars.insert(var.clone());
                let positive = match step {
                    Expr::Lit(Literal::I64(k)) => Some(*k > 0),
                    Expr::Lit(Literal::I32(k)) => Some(*k > 0),
                    _ => None,
                };
                let trip = positive.map(|up| {
                    let op = if up { CmpOp::Lt } else { CmpOp::Gt };
                    Expr::Cmp(op, Box::new(start.clone()), Box::new(stop.clone()))
                });
                let trips_before = self.trips.len();
                let mut out = Vec::new();
                for b in body {
                    match b {
                        HostStep::Comment(_) => {}
                        HostStep::Scalar { name, ty, value } => {
                            self.bound.insert(name.clone());
                            match self.declared.get(name) {
                                Some(&d) if d != depth => {
                                    return Err(format!("`{name}` is bound in two nested loops"))
                                }
                                Some(_) => out.push(Stmt::Assign {
                                    name: name.clone(),
                                    value: value.clone(),
                                }),
                                None => {
                                    self.declared.insert(name.clone(), depth);
                                    out.push(Stmt::Let {
                                        name: name.clone(),
                                        ty: *ty,
                                        init: value.clone(),
                                    });
                                }
                            }
                        }
                        HostStep::Launch {
                            kernel,
                            args,
                            shape,
                        } => out.extend(self.launch(plan, kernel, args, shape)?),
                        HostStep::Loop { .. } => {
                            self.trips.push(trip.clone());
                            let inner = self.step(plan, b, depth + 1);
                            self.trips.truncate(trips_before);
                            out.push(inner?);
                        }
                        HostStep::Guard(g) => {
                            let trips: Option<Vec<Expr>> =
                                self.trips.iter().cloned().chain([trip.clone()]).collect();
                            let Some(trips) = trips else {
                                return Err(format!(
                                    "the shape guard of line {} is inside a loop whose step is not a constant",
                                    g.line
                                ));
                            };
                            self.guards.push((g.clone(), trips));
                        }
                        other => return Err(format!("the body has {}", kind(other))),
                    }
                }
                Ok(Stmt::For {
                    var: var.clone(),
                    start: start.clone(),
                    stop: stop.clone(),
                    step: step.clone(),
                    body: out,
                })
            }
            other => Err(format!("the body has {}", kind(other))),
        }
    }

    /// One launch as the statements of its kernel (parameters renamed to
    /// the arguments, locals to fresh names), then a block barrier.
    fn launch(
        &mut self,
        plan: &KernelPlan,
        kernel: &str,
        args: &[String],
        shape: &LaunchShape,
    ) -> Result<Vec<Stmt>, String> {
        let work = match shape {
            LaunchShape::Grid1 { n } => n.clone(),
            LaunchShape::Grid2 { rows, cols } => {
                Expr::Binary(BinOp::Mul, Box::new(rows.clone()), Box::new(cols.clone()))
            }
            _ => return Err(format!("`{kernel}` is a reduction or a block kernel")),
        };
        let k = plan
            .module
            .kernel(kernel)
            .ok_or_else(|| format!("no kernel `{kernel}`"))?;
        if !k.shared.is_empty()
            || any_stmt(&k.body, &|s| matches!(s, Stmt::Barrier | Stmt::Return(_)))
        {
            return Err(format!(
                "`{kernel}` has a barrier, shared memory or a return"
            ));
        }
        let mut special = false;
        walk_body_exprs(&k.body, &mut |e| {
            walk_expr(e, &mut |x| special |= matches!(x, Expr::Special(..)))
        });
        if special || k.params.len() != args.len() {
            return Err(format!("`{kernel}` reads the thread's coordinates"));
        }
        let mut map: HashMap<String, String> = HashMap::new();
        for (p, a) in k.params.iter().zip(args) {
            if let Some(t) = self.types.insert(a.clone(), p.ty) {
                if t != p.ty {
                    return Err(format!("`{a}` is passed as {t:?} and as {:?}", p.ty));
                }
            }
            map.insert(p.name.clone(), a.clone());
        }
        self.inlined += 1;
        let suffix = format!("__p{}", self.inlined);
        let mut locals = HashSet::new();
        bound_names(&k.body, &mut locals);
        for l in locals {
            let fresh = format!("{l}{suffix}");
            map.insert(l, fresh);
        }
        self.launches += 1;
        self.works.push(work);
        let mut out = rename_body(&k.body, &|n| map.get(n).cloned());
        out.push(Stmt::Barrier);
        Ok(out)
    }
}

/// Whether `e` reads any of `names`.
fn mentions_any(e: &Expr, names: &HashSet<String>) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let Expr::Var(n) = x {
            found |= names.contains(n);
        }
    });
    found
}

/// A host step's kind, in words, for the reason a loop stays on the host.
fn kind(s: &HostStep) -> &'static str {
    match s {
        HostStep::Scalar { .. } => "a host scalar",
        HostStep::Alloc { .. } => "an allocation",
        HostStep::Launch { .. } => "a launch",
        HostStep::ReadBack { .. } | HostStep::ReadElement { .. } => "a read-back",
        HostStep::Loop { .. } => "a loop",
        HostStep::While { .. } => "a `while`",
        HostStep::If { .. } => "an `if`",
        HostStep::Break => "a `break`",
        HostStep::Raise { .. } => "a `raise`",
        HostStep::Comment(_) => "a comment",
        HostStep::Rebind { .. } => "rebound arrays",
        HostStep::Guard(_) => "a shape guard",
        HostStep::Library(_) => "a library call",
    }
}

fn unique_name(plan: &KernelPlan, base: &str) -> String {
    let taken: HashSet<String> = plan.kernel_names().into_iter().collect();
    if !taken.contains(base) {
        return base.to_string();
    }
    (2..)
        .map(|i| format!("{base}_{i}"))
        .find(|n| !taken.contains(n))
        .expect("a free name")
}

/// Names a statement list binds: `let`s, loop variables.
fn bound_names(body: &[Stmt], out: &mut HashSet<String>) {
    for s in body {
        match s {
            Stmt::Let { name, .. } => {
                out.insert(name.clone());
            }
            Stmt::For { var, body, .. } => {
                out.insert(var.clone());
                bound_names(body, out);
            }
            Stmt::ParallelFor(p) => {
                out.extend(p.vars.iter().cloned());
                bound_names(&p.body, out);
            }
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                bound_names(then_body, out);
                bound_names(else_body, out);
            }
            Stmt::While { body, .. } => bound_names(body, out),
            _ => {}
        }
    }
}

/// The names `body` reads without binding them, in order of first
/// appearance.
fn free_names(body: &[Stmt], bound: &mut HashSet<String>, out: &mut Vec<String>) {
    let read = |e: &Expr, bound: &HashSet<String>, out: &mut Vec<String>| {
        walk_expr(e, &mut |x| {
            let n = match x {
                Expr::Var(n) | Expr::Shape { array: n, .. } => n,
                Expr::Load(r) | Expr::Atomic(_, r, _) | Expr::AtomicCas(r, _, _) => &r.array,
                _ => return,
            };
            if !bound.contains(n) && !out.contains(n) {
                out.push(n.clone());
            }
        })
    };
    for s in body {
        match s {
            Stmt::Let { name, init, .. } => {
                read(init, bound, out);
                bound.insert(name.clone());
            }
            Stmt::Assign { name, value } => {
                read(value, bound, out);
                read(&Expr::Var(name.clone()), bound, out);
            }
            Stmt::Store { target, value } => {
                read(&Expr::Load(target.clone()), bound, out);
                read(value, bound, out);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                read(cond, bound, out);
                free_names(then_body, &mut bound.clone(), out);
                free_names(else_body, &mut bound.clone(), out);
            }
            Stmt::While { cond, body } => {
                read(cond, bound, out);
                free_names(body, &mut bound.clone(), out);
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => {
                read(start, bound, out);
                read(stop, bound, out);
                read(step, bound, out);
                let mut inner = bound.clone();
                inner.insert(var.clone());
                free_names(body, &mut inner, out);
            }
            Stmt::ParallelFor(p) => {
                p.extents.iter().for_each(|e| read(e, bound, out));
                let mut inner = bound.clone();
                inner.extend(p.vars.iter().cloned());
                free_names(&p.body, &mut inner, out);
            }
            Stmt::Return(Some(e)) | Stmt::Eval(e) => read(e, bound, out),
            Stmt::Return(None) | Stmt::Break | Stmt::Continue | Stmt::Barrier => {}
        }
    }
}

/// Renames every name of `body` that `f` maps — variables, arrays,
/// locals, loop variables — at once.
fn rename_body(body: &[Stmt], f: &dyn Fn(&str) -> Option<String>) -> Vec<Stmt> {
    let name = |n: &String| f(n).unwrap_or_else(|| n.clone());
    let elem = |r: &ElemRef| ElemRef {
        array: name(&r.array),
        indices: r.indices.iter().map(|i| rename_expr(i, f)).collect(),
    };
    let e = |x: &Expr| rename_expr(x, f);
    body.iter()
        .map(|s| match s {
            Stmt::Let { name: n, ty, init } => Stmt::Let {
                name: name(n),
                ty: *ty,
                init: e(init),
            },
            Stmt::Assign { name: n, value } => Stmt::Assign {
                name: name(n),
                value: e(value),
            },
            Stmt::Store { target, value } => Stmt::Store {
                target: elem(target),
                value: e(value),
            },
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: e(cond),
                then_body: rename_body(then_body, f),
                else_body: rename_body(else_body, f),
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: e(cond),
                body: rename_body(body, f),
            },
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: name(var),
                start: e(start),
                stop: e(stop),
                step: e(step),
                body: rename_body(body, f),
            },
            Stmt::ParallelFor(p) => Stmt::ParallelFor(ParallelFor {
                vars: p.vars.iter().map(name).collect(),
                extents: p.extents.iter().map(e).collect(),
                body: rename_body(&p.body, f),
            }),
            Stmt::Return(x) => Stmt::Return(x.as_ref().map(e)),
            Stmt::Eval(x) => Stmt::Eval(e(x)),
            Stmt::Break | Stmt::Continue | Stmt::Barrier => s.clone(),
        })
        .collect()
}

fn rename_expr(e: &Expr, f: &dyn Fn(&str) -> Option<String>) -> Expr {
    let elem = |r: &ElemRef| ElemRef {
        array: f(&r.array).unwrap_or_else(|| r.array.clone()),
        indices: r.indices.iter().map(|i| rename_expr(i, f)).collect(),
    };
    port_codegen::ir::map_expr(e, &|x| match x {
        Expr::Var(n) => f(n).map(Expr::Var),
        Expr::Shape { array, axis } => f(array).map(|a| Expr::Shape {
            array: a,
            axis: *axis,
        }),
        Expr::Load(r) => Some(Expr::Load(elem(r))),
        Expr::Atomic(op, r, v) => Some(Expr::Atomic(*op, elem(r), Box::new(rename_expr(v, f)))),
        Expr::AtomicCas(r, a, b) => Some(Expr::AtomicCas(
            elem(r),
            Box::new(rename_expr(a, f)),
            Box::new(rename_expr(b, f)),
        )),
        _ => None,
    })
}

/// The type of every host name the plan knows one for: its parameters (as
/// the kernels take them), host scalars and read-backs, allocations.
fn type_env(plan: &KernelPlan) -> HashMap<String, Type> {
    let mut env: HashMap<String, Type> = plan
        .params
        .iter()
        .map(|p| (p.name.clone(), p.kernel_ty.ir()))
        .collect();
    HostStep::walk(&plan.steps, &mut |s| match s {
        HostStep::Scalar { name, ty, .. }
        | HostStep::ReadBack { name, ty, .. }
        | HostStep::ReadElement { name, ty, .. } => {
            env.insert(name.clone(), Type::Scalar(*ty));
        }
        HostStep::Alloc {
            name, elem, shape, ..
        } => {
            env.insert(
                name.clone(),
                Type::Array(port_codegen::ir::ArrayType {
                    elem: *elem,
                    ndim: shape.len() as u8,
                    contiguous: true,
                }),
            );
        }
        _ => {}
    });
    env
}
