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
//! become the kernel's locals, and so does a value the host reads back
//! from the device (a reduction's result, an element): every thread reads
//! it after the barrier that ended the phase writing it, and waits at a
//! barrier after the read. A host scalar bound before the loop and again
//! in it (`rate = rate / …`) is a local that starts from the host's value,
//! when the loop is one of the plan's own steps (it runs once) and the
//! host reads the scalar nowhere after it. Nested host loops of the same
//! kind become nested loops of the kernel, and a host `if` an `if` of the
//! kernel around its branches' phases: its condition reads host names
//! only, the same in every thread, so each barrier of a branch is reached
//! by all threads or by none (a scalar first bound in a branch is declared
//! before it; a shape guard in a branch is checked in the kernel). A reduction whose blocks meet in an atomic
//! runs as its one block (its tree then sets the block's size); an array
//! the body allocates is allocated once before the kernel and filled by a
//! phase of it in each iteration. One whose extents change with the loop
//! (a temporary of `h[:k]`, of `x[:, i:]`) is allocated at its widest over
//! the loop — each extent monotone in every loop variable, taken at the
//! end of the variable's values where it is largest — and each iteration
//! uses the prefix of its own extents, which kernel locals hold and the
//! inlined kernels read instead of the array's.
//!
//! The choice is made at run time, from the work per iteration: the most
//! elements one of the body's launches covers (an extent that changes with
//! the loops is taken at their first and last values). The host `if`
//! launches the persistent kernel when it is at most [`MAX_WORK`] and keeps
//! the per-iteration launches otherwise; the plan's log says so, loop by
//! loop.
//!
//! Shape guards stay exact. One the loop does not change is checked before
//! the launch, when the loops around it run at least once; one it changes
//! is checked in the kernel where the host checked it: on failure the
//! kernel records which guard failed and both extents and returns, and
//! the host raises the guard's error after the launch.
//!
//! A loop stays as it is when its body does anything else: a library
//! call, a `while`, a `break` or a `raise`, rebound arrays, an allocation whose shape changes with
//! the loop other than monotonically or through a host scalar the loop
//! computes; when a kernel of the body has a `return`, or a barrier,
//! shared memory or the thread's coordinates without being such a
//! reduction (a reduction that combines per-block partials, a kernel of
//! one block per result); when a name the body binds is read after the
//! loop, or bound outside it but for a carried scalar (a loop variable
//! only must not be read after it); or when the kernel it would make does not verify (a type the host
//! and the kernels disagree on).

use std::collections::{HashMap, HashSet};

use port_codegen::ir::{
    any_stmt, walk_body_exprs, walk_expr, BinOp, CmpOp, ElemRef, Expr, Kernel, Literal,
    ParallelFor, Param, SharedArray, Special, Stmt, Type,
};

use crate::ir_util::{fresh, locals, rename_body};
use crate::launch::{THREADS_PERSIST, THREADS_REDUCE};
use crate::plan::{Fill, HostStep, KernelPlan, LaunchShape, PlanKind, ShapeGuard};

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
        env_extra: HashMap::new(),
        out: &mut out,
    };
    cx.rewrite(&mut steps, true);
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
    /// Types of the arrays this pass adds (where kernels record a failed
    /// guard).
    env_extra: HashMap<String, Type>,
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
    /// run in one kernel has its body tried instead. `top`: `steps` are
    /// the plan's own, which run once.
    fn rewrite(&mut self, steps: &mut [HostStep], top: bool) {
        for k in 0..steps.len() {
            // What the host binds before a loop of the plan's own steps,
            // and reads after it (a value it carries in from before need
            // not come back).
            let around = top.then(|| {
                let mut before: HashSet<String> = HashSet::new();
                HostStep::walk(&steps[..k], &mut |s| {
                    before.extend(s.binds().into_iter().map(String::from))
                });
                let mut after: HashSet<String> = self.interface.clone();
                HostStep::walk(&steps[k + 1..], &mut |s| after.extend(s.names()));
                (before, after)
            });
            let s = &mut steps[k];
            if let HostStep::Loop { var, .. } = s {
                let var = var.clone();
                match self.try_loop(s, around.as_ref()) {
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
            for b in s.bodies_mut() {
                self.rewrite(b, false);
            }
        }
    }

    /// `around`: the names the host binds before the loop and reads after
    /// it, when the loop runs once (not inside another).
    fn try_loop(
        &mut self,
        step: &HostStep,
        around: Option<&(HashSet<String>, HashSet<String>)>,
    ) -> Result<HostStep, String> {
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
        // `{function}_loop_{var}`, of the function's own name (a method's
        // qualified name has a dot, which no Python name can).
        let own = self.plan.function.rsplit('.').next().unwrap_or_default();
        let kernels: HashSet<String> = self.plan.kernel_names().into_iter().collect();
        let name = fresh(&format!("{own}_loop_{var}"), &kernels);
        let (mut reads, mut binds) = (HashMap::new(), HashMap::new());
        count_names(std::slice::from_ref(step), &mut reads, &mut binds);
        // Host scalars bound before the loop and again in it (`beta *=
        // …`): the kernel carries them in a local that starts from the
        // host's value, when the host reads none of them after the loop.
        let mut loop_vars = HashSet::new();
        HostStep::walk(std::slice::from_ref(step), &mut |s| {
            if let HostStep::Loop { var, .. } = s {
                loop_vars.insert(var.clone());
            }
        });
        let mut carried: Vec<(String, port_codegen::ir::ScalarType)> = binds
            .keys()
            .filter(|n| self.binds.get(*n) != binds.get(*n) && !loop_vars.contains(*n))
            .filter_map(|n| match self.env.get(n) {
                Some(Type::Scalar(ty)) => Some((n.clone(), *ty)),
                _ => None,
            })
            .collect();
        carried.sort_by(|a, b| a.0.cmp(&b.0));
        for (n, _) in &carried {
            match around {
                Some((_, after)) if after.contains(n) => {
                    return Err(format!("`{n}` is read after the loop"))
                }
                Some((before, _)) if before.contains(n) => {}
                _ => return Err(format!("`{n}` is also bound outside the loop")),
            }
        }
        let mut t = Translation {
            failed: format!("{name}_failed"),
            env: self.env.clone(),
            ..Translation::default()
        };
        for (n, _) in &carried {
            t.declared.insert(n.clone(), OUTSIDE);
        }
        let stmt = t.step(self.plan, step, 0)?;
        // An array allocated at its widest: the kernels read this
        // iteration's extents, which its locals hold.
        let stmt = if t.extents.is_empty() {
            stmt
        } else {
            let extents = &t.extents;
            crate::ir_util::map_stmts(&[stmt], &|e| {
                crate::ir_util::map_expr(e, &|x| match x {
                    Expr::Shape { array, axis } => extents
                        .get(array)
                        .map(|l| Expr::Var(l[*axis as usize].clone())),
                    _ => None,
                })
            })
            .remove(0)
        };
        // A carried scalar is the kernel's local from the start, copied
        // from the parameter the host passes.
        let (stmt, starts) = if carried.is_empty() {
            (stmt, Vec::new())
        } else {
            let map: HashMap<String, String> = carried
                .iter()
                .map(|(n, _)| (n.clone(), format!("{n}__carried")))
                .collect();
            let starts = carried
                .iter()
                .map(|(n, ty)| Stmt::Let {
                    name: map[n].clone(),
                    ty: *ty,
                    init: Expr::Var(n.clone()),
                })
                .collect();
            (rename_body(&[stmt], &map).remove(0), starts)
        };
        // Names the loop binds are its own: bound nowhere else (but a
        // carried scalar) and read nowhere after it (the host would no
        // longer compute them).
        let mut bound: Vec<&String> = t.bound.iter().collect();
        bound.sort();
        let mut arrays: Vec<&String> = t.bound_arrays.iter().collect();
        arrays.sort();
        for n in bound.into_iter().chain(arrays) {
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
            if carried.iter().any(|(c, _)| c == n) {
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
        // The guards checked in the kernel: the array where a failure is
        // recorded, zeroed before the launch, read after it.
        let mut after = Vec::new();
        if !t.kernel_guards.is_empty() {
            let f = &t.failed;
            self.env_extra.insert(
                f.clone(),
                Type::Array(port_codegen::ir::ArrayType {
                    elem: port_codegen::ir::ScalarType::I64,
                    ndim: 1,
                    contiguous: true,
                }),
            );
            t.allocs.push(HostStep::Alloc {
                name: f.clone(),
                elem: port_codegen::ir::ScalarType::I64,
                shape: vec![Expr::Lit(Literal::I64(3))],
                fill: Fill::Value(Expr::Lit(Literal::I64(0))),
            });
            let read = |name: String, i: i64| HostStep::ReadElement {
                name,
                ty: port_codegen::ir::ScalarType::I64,
                array: f.clone(),
                index: vec![Expr::Lit(Literal::I64(i))],
            };
            let (code, lhs, rhs) = (format!("{f}_guard"), format!("{f}_lhs"), format!("{f}_rhs"));
            let mut which = vec![read(lhs.clone(), 1), read(rhs.clone(), 2)];
            for (k, g) in t.kernel_guards.iter().enumerate() {
                which.push(HostStep::If {
                    cond: Expr::Cmp(
                        CmpOp::Eq,
                        Box::new(Expr::Var(code.clone())),
                        Box::new(Expr::Lit(Literal::I64(k as i64 + 1))),
                    ),
                    then: vec![HostStep::Guard(ShapeGuard {
                        lhs: Expr::Var(lhs.clone()),
                        rhs: Expr::Var(rhs.clone()),
                        ..g.clone()
                    })],
                    orelse: Vec::new(),
                });
            }
            after.push(read(code.clone(), 0));
            after.push(HostStep::If {
                cond: Expr::Cmp(
                    CmpOp::Ne,
                    Box::new(Expr::Var(code)),
                    Box::new(Expr::Lit(Literal::I64(0))),
                ),
                then: which,
                orelse: Vec::new(),
            });
        }
        // The kernel's parameters: every name its body reads and does not
        // bind, arrays first, each with the type the host gives it.
        let body: Vec<Stmt> = starts.into_iter().chain([stmt]).collect();
        let mut free = Vec::new();
        free_names(&body, &mut HashSet::new(), &mut free);
        free.retain(|n| !t.shared.iter().any(|s| &s.name == n));
        let mut params = Vec::new();
        for n in &free {
            let ty = t
                .types
                .get(n)
                .or_else(|| self.env.get(n))
                .or_else(|| self.env_extra.get(n))
                .copied()
                .ok_or_else(|| format!("no type is known for `{n}`"))?;
            params.push(Param {
                name: n.clone(),
                ty,
            });
        }
        params.sort_by_key(|p| matches!(p.ty, Type::Scalar(_)));
        let max_work = max_work();
        let threads = if t.reduce {
            THREADS_REDUCE
        } else {
            THREADS_PERSIST
        };
        let kernel = Kernel {
            name: name.clone(),
            params: params.clone(),
            shared: t.shared.clone(),
            body,
        };
        // Verified beside the device functions it may call, not the whole
        // module again for every loop.
        let trial = port_codegen::ir::Module {
            device_functions: self.plan.module.device_functions.clone(),
            kernels: vec![kernel.clone()],
        };
        port_codegen::verify::verify_module(&trial)
            .map_err(|e| format!("the kernel it makes does not verify ({e})"))?;
        self.plan.module.kernels.push(kernel);
        self.out.converted.push(format!(
            "the loop over `{var}` runs in one kernel ({name}, one block of {threads} threads) when each of the {} kernels of its body covers at most {max_work} elements",
            t.launches
        ));
        Ok(HostStep::If {
            cond: Expr::Cmp(
                CmpOp::Le,
                Box::new(work),
                Box::new(Expr::Lit(Literal::I64(max_work))),
            ),
            then: std::iter::once(HostStep::Comment(crate::plan::PERSIST_CHOICE.into()))
                .chain(t.allocs.iter().cloned())
                .chain(checks)
                .chain([HostStep::Launch {
                    kernel: name,
                    args: params.into_iter().map(|p| p.name).collect(),
                    shape: LaunchShape::Persistent { threads },
                }])
                .chain(after)
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
    /// A reduction's kernel was inlined: the block is the size of its tree.
    reduce: bool,
    /// Arrays the body allocates.
    bound_arrays: HashSet<String>,
    /// The loops being translated, outermost first: (variable, start,
    /// last value).
    ranges: Vec<(String, Expr, Expr)>,
    /// The guards checked in the kernel, in order (a failure records its
    /// position from 1), and the array of three `i64` where it does.
    kernel_guards: Vec<ShapeGuard>,
    failed: String,
    /// The shared arrays of the kernels inlined, renamed.
    shared: Vec<SharedArray>,
    /// Arrays the body allocates, allocated once before the kernel (the
    /// kernel fills them anew in each iteration, as the host did).
    allocs: Vec<HostStep>,
    /// The extents the body allocates each array with, in the host's
    /// names (what a launch's work over it reads).
    alloc_shapes: HashMap<String, Vec<Expr>>,
    /// Arrays whose extents change with the loop: per axis, the kernel
    /// local holding this iteration's extent, which the inlined kernels
    /// read instead of the (widest) array's own.
    extents: HashMap<String, Vec<String>>,
    /// The loops being translated, outermost first: the variable and the
    /// lowest and highest values it can take (`None` for a step that is
    /// not a literal).
    spans: Vec<(String, Option<(Expr, Expr)>)>,
    /// The host's types of the plan's names.
    env: HashMap<String, Type>,
    /// How many host `if`s around the steps being translated: a shape
    /// guard inside one is checked in the kernel, where the host checked
    /// it, not before the kernel.
    in_if: usize,
}

/// The host scalars a branch of an `if` binds (nested `if`s included, not
/// nested loops, which declare their own), with their types.
fn first_bound_in_branches(
    steps: &[HostStep],
    out: &mut Vec<(String, port_codegen::ir::ScalarType)>,
) {
    for s in steps {
        match s {
            HostStep::Scalar { name, ty, .. }
            | HostStep::ReadBack { name, ty, .. }
            | HostStep::ReadElement { name, ty, .. }
                if !out.iter().any(|(n, _)| n == name) =>
            {
                out.push((name.clone(), *ty));
            }
            HostStep::If { then, orelse, .. } => {
                first_bound_in_branches(then, out);
                first_bound_in_branches(orelse, out);
            }
            _ => {}
        }
    }
}

/// The loop depth of a carried scalar's declaration: before every loop.
const OUTSIDE: usize = usize::MAX;

impl Translation {
    /// A host scalar of the loop as a kernel local: declared where the
    /// loop at `depth` first binds it, assigned after.
    fn local(
        &mut self,
        name: &str,
        ty: port_codegen::ir::ScalarType,
        value: &Expr,
        depth: usize,
        out: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        match self.declared.get(name) {
            Some(&d) if d != depth && d != OUTSIDE => {
                Err(format!("`{name}` is bound in two nested loops"))
            }
            Some(_) => {
                out.push(Stmt::Assign {
                    name: name.to_string(),
                    value: value.clone(),
                });
                Ok(())
            }
            None => {
                self.declared.insert(name.to_string(), depth);
                out.push(Stmt::Let {
                    name: name.to_string(),
                    ty,
                    init: value.clone(),
                });
                Ok(())
            }
        }
    }

    /// A value the host read back from the device (a reduction's result,
    /// an element): every thread reads it into a local after the barrier
    /// that ended the phase writing it, and a barrier after the read keeps
    /// a later phase from writing the array before every thread has read
    /// it.
    fn read_back(
        &mut self,
        name: &str,
        ty: port_codegen::ir::ScalarType,
        array: &str,
        index: &[Expr],
        depth: usize,
        out: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        let elem = match self.types.get(array).or_else(|| self.env.get(array)) {
            Some(Type::Array(a)) => a.elem,
            _ => return Err(format!("no type is known for `{array}`")),
        };
        let mut value = Expr::Load(ElemRef {
            array: array.to_string(),
            indices: index.to_vec(),
        });
        if elem != ty {
            value = Expr::Cast(ty, Box::new(value));
        }
        self.bound.insert(name.to_string());
        self.local(name, ty, &value, depth, out)?;
        out.push(Stmt::Barrier);
        Ok(())
    }

    /// Whether `e` changes with the loop: it reads a name the loop binds,
    /// or an extent of an array the loop allocates with extents it changes.
    fn changes(&self, e: &Expr) -> bool {
        let mut found = false;
        walk_expr(e, &mut |x| match x {
            Expr::Var(n) => found |= self.bound.contains(n),
            Expr::Shape { array, .. } => found |= self.extents.contains_key(array),
            _ => {}
        });
        found
    }

    /// `e` with the extents of the arrays the body allocates read as the
    /// host expressions they were allocated with.
    fn host_extents(&self, e: &Expr) -> Expr {
        crate::ir_util::map_expr_repeated(e, 8, &|x| match x {
            Expr::Shape { array, axis } => self
                .alloc_shapes
                .get(array)
                .and_then(|s| s.get(*axis as usize))
                .cloned(),
            _ => None,
        })
    }

    /// An allocation whose extents change with the loop: allocated once
    /// at its widest over the loop, each iteration using the prefix of
    /// its own extents, which kernel locals hold (declared here, where
    /// the host allocated). Exact: each iteration's extents are at most
    /// the widest — each extent is monotone in every loop variable,
    /// taken at the end of the variable's values where it is largest —
    /// and the contents are those the host's new array would have (none,
    /// or the fill, a phase over the prefix). Element accesses go through
    /// the whole array's strides, so a prefix of any axis is a view.
    fn varying_alloc(
        &mut self,
        name: &str,
        shape: &[Expr],
        depth: usize,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Expr>, String> {
        let mut widest = Vec::new();
        let mut locals = Vec::new();
        for (axis, d) in shape.iter().enumerate() {
            let d = self.host_extents(d);
            let w = widest_exact(&d, &self.spans).ok_or_else(|| {
                format!("the shape of `{name}` changes with the loop, not monotonically")
            })?;
            if mentions_any(&w, &self.bound) {
                return Err(format!(
                    "the shape of `{name}` changes with the loop through a host scalar"
                ));
            }
            // Never negative, also where a loop runs no iteration.
            let zero = Expr::Lit(Literal::I64(0));
            widest.push(match &w {
                Expr::Binary(BinOp::Max, _, z) if **z == zero => w,
                _ => Expr::Binary(BinOp::Max, Box::new(w), Box::new(zero)),
            });
            let local = format!("{name}__extent{axis}");
            self.local(
                &local,
                port_codegen::ir::ScalarType::I64,
                &shape[axis],
                depth,
                out,
            )?;
            locals.push(local);
        }
        self.extents.insert(name.to_string(), locals);
        Ok(widest)
    }

    /// The steps of one block of a loop's body (at loop depth `depth`,
    /// `trip` the condition under which that loop runs at all) as kernel
    /// statements, appended to `out`.
    fn block(
        &mut self,
        plan: &KernelPlan,
        body: &[HostStep],
        depth: usize,
        trip: &Option<Expr>,
        out: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        for b in body {
            match b {
                HostStep::Comment(_) => {}
                HostStep::Scalar { name, ty, value } => {
                    self.bound.insert(name.clone());
                    self.local(name, *ty, value, depth, out)?;
                }
                HostStep::Launch {
                    kernel,
                    args,
                    shape,
                } => out.extend(self.launch(plan, kernel, args, shape)?),
                HostStep::If { cond, then, orelse } => {
                    // The condition reads host names only (loop variables,
                    // host scalars, extents): the same in every thread, so
                    // each barrier of a branch is reached by all or by none.
                    // A scalar first bound in a branch is declared before the
                    // `if`, so that what follows it can read it.
                    let mut first = Vec::new();
                    first_bound_in_branches(then, &mut first);
                    first_bound_in_branches(orelse, &mut first);
                    for (name, ty) in first {
                        if !self.declared.contains_key(&name) {
                            self.declared.insert(name.clone(), depth);
                            out.push(Stmt::Let {
                                name,
                                ty,
                                init: crate::ir_util::lit(ty, 0.0),
                            });
                        }
                    }
                    self.in_if += 1;
                    let (mut then_body, mut else_body) = (Vec::new(), Vec::new());
                    let branches = self
                        .block(plan, then, depth, trip, &mut then_body)
                        .and_then(|()| self.block(plan, orelse, depth, trip, &mut else_body));
                    self.in_if -= 1;
                    branches?;
                    out.push(Stmt::If {
                        cond: cond.clone(),
                        then_body,
                        else_body,
                    });
                }
                HostStep::ReadBack { name, ty, array } => {
                    let zero = [Expr::Lit(Literal::I64(0))];
                    self.read_back(name, *ty, array, &zero, depth, out)?;
                }
                HostStep::ReadElement {
                    name,
                    ty,
                    array,
                    index,
                } => self.read_back(name, *ty, array, index, depth, out)?,
                HostStep::Loop { .. } => {
                    let before = self.trips.len();
                    self.trips.push(trip.clone());
                    let inner = self.step(plan, b, depth + 1);
                    self.trips.truncate(before);
                    out.push(inner?);
                }
                HostStep::Alloc {
                    name,
                    elem,
                    shape,
                    fill,
                } => {
                    // Allocated once before the kernel; a fill is
                    // a phase of the kernel in each iteration.
                    let widest = if shape.iter().any(|d| self.changes(d)) {
                        self.varying_alloc(name, shape, depth, out)?
                    } else {
                        shape.clone()
                    };
                    self.bound_arrays.insert(name.clone());
                    self.alloc_shapes.insert(name.clone(), shape.clone());
                    self.allocs.push(HostStep::Alloc {
                        name: name.clone(),
                        elem: *elem,
                        shape: widest,
                        fill: Fill::Empty,
                    });
                    if let Fill::Value(v) = fill {
                        if shape.is_empty() || shape.len() > 3 {
                            return Err(format!("`{name}` has {} dimensions", shape.len()));
                        }
                        self.inlined += 1;
                        let vars: Vec<String> = (0..shape.len())
                            .map(|a| format!("fill{a}__p{}", self.inlined))
                            .collect();
                        out.push(Stmt::ParallelFor(ParallelFor {
                            vars: vars.clone(),
                            extents: (0..shape.len())
                                .map(|a| Expr::Shape {
                                    array: name.clone(),
                                    axis: a as u8,
                                })
                                .collect(),
                            body: vec![Stmt::Store {
                                target: ElemRef {
                                    array: name.clone(),
                                    indices: vars.into_iter().map(Expr::Var).collect(),
                                },
                                value: v.clone(),
                            }],
                        }));
                        out.push(Stmt::Barrier);
                    }
                }
                HostStep::Guard(g)
                    if self.changes(&g.lhs) || self.changes(&g.rhs) || self.in_if > 0 =>
                {
                    // A guard the loop changes is checked in the
                    // kernel, where the host checked it: on failure
                    // the kernel records which guard and both
                    // extents and returns (every thread: the test
                    // is the same for all), and the host raises
                    // the guard's error after the launch.
                    self.kernel_guards.push(g.clone());
                    let code = self.kernel_guards.len() as i64;
                    let at = |i: i64| ElemRef {
                        array: self.failed.clone(),
                        indices: vec![Expr::Lit(Literal::I64(i))],
                    };
                    out.push(Stmt::If {
                        cond: Expr::Cmp(
                            g.relation.failing(),
                            Box::new(g.lhs.clone()),
                            Box::new(g.rhs.clone()),
                        ),
                        then_body: vec![
                            Stmt::If {
                                cond: Expr::Cmp(
                                    CmpOp::Eq,
                                    Box::new(Expr::Special(
                                        Special::ThreadIdx,
                                        port_codegen::ir::Axis::X,
                                    )),
                                    Box::new(Expr::Lit(Literal::I32(0))),
                                ),
                                then_body: vec![
                                    Stmt::Store {
                                        target: at(0),
                                        value: Expr::Lit(Literal::I64(code)),
                                    },
                                    Stmt::Store {
                                        target: at(1),
                                        value: g.lhs.clone(),
                                    },
                                    Stmt::Store {
                                        target: at(2),
                                        value: g.rhs.clone(),
                                    },
                                ],
                                else_body: Vec::new(),
                            },
                            Stmt::Return(None),
                        ],
                        else_body: Vec::new(),
                    });
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
        Ok(())
    }

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
                let last = Expr::Binary(BinOp::Sub, Box::new(stop.clone()), Box::new(step.clone()));
                self.ranges.push((var.clone(), start.clone(), last));
                let one = |e: &Expr, k: i64| {
                    Expr::Binary(
                        BinOp::Add,
                        Box::new(e.clone()),
                        Box::new(Expr::Lit(Literal::I64(k))),
                    )
                };
                self.spans.push((
                    var.clone(),
                    positive.map(|up| {
                        if up {
                            (start.clone(), one(stop, -1))
                        } else {
                            (one(stop, 1), start.clone())
                        }
                    }),
                ));
                let mut out = Vec::new();
                self.block(plan, body, depth, &trip, &mut out)?;
                self.ranges.pop();
                self.spans.pop();
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
        let k = plan
            .module
            .kernel(kernel)
            .ok_or_else(|| format!("no kernel `{kernel}`"))?;
        let mut specials = HashSet::new();
        walk_body_exprs(&k.body, &mut |e| {
            walk_expr(e, &mut |x| {
                if let Expr::Special(s, _) = x {
                    specials.insert(*s);
                }
            })
        });
        if any_stmt(&k.body, &|s| matches!(s, Stmt::Return(_))) || k.params.len() != args.len() {
            return Err(format!("`{kernel}` has a `return`"));
        }
        let work = match shape {
            LaunchShape::Grid1 { n } => n.clone(),
            LaunchShape::Grid2 { rows, cols } => {
                Expr::Binary(BinOp::Mul, Box::new(rows.clone()), Box::new(cols.clone()))
            }
            // A reduction whose blocks each add their tree's sum into the
            // result with an atomic: over one block, its grid-stride loop
            // covers every item and its tree is the block's. It needs the
            // block its tree was sized for.
            LaunchShape::Reduce { n }
                if specials
                    .iter()
                    .all(|s| matches!(s, Special::ThreadIdx | Special::BlockDim)) =>
            {
                self.reduce = true;
                n.clone()
            }
            _ => {
                return Err(format!(
                    "`{kernel}` is a reduction that combines its blocks' partial results, or a kernel of one block per result"
                ))
            }
        };
        if !matches!(shape, LaunchShape::Reduce { .. })
            && (!k.shared.is_empty()
                || !specials.is_empty()
                || any_stmt(&k.body, &|s| matches!(s, Stmt::Barrier)))
        {
            return Err(format!(
                "`{kernel}` has a barrier, shared memory or the thread's coordinates"
            ));
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
        for l in locals(&k.body) {
            map.insert(l.clone(), format!("{l}{suffix}"));
        }
        for sh in &k.shared {
            let fresh = format!("{}{suffix}", sh.name);
            map.insert(sh.name.clone(), fresh.clone());
            self.shared.push(SharedArray {
                name: fresh,
                ..sh.clone()
            });
        }
        self.launches += 1;
        let work = self.host_extents(&work);
        self.works.push(widest(&work, &self.ranges));
        let mut out = rename_body(&k.body, &map);
        out.push(Stmt::Barrier);
        Ok(out)
    }
}

/// The most elements a launch covers over the loops around it, when its
/// extent `work` changes with them (a triangular loop's `A[i, :j]`): the
/// largest of `work` at the first and last value of each loop variable,
/// innermost first (a loop's bounds may read the variables outside it).
/// Exact for extents monotone in each variable (sums, differences, `min`,
/// `max` of them); for others an estimate, which only decides which
/// schedule runs, never what it computes.
fn widest(work: &Expr, ranges: &[(String, Expr, Expr)]) -> Expr {
    let mut at = vec![work.clone()];
    for (var, first, last) in ranges.iter().rev() {
        if !at.iter().any(|w| crate::ir_util::mentions_var(w, var)) {
            continue;
        }
        at = at
            .iter()
            .flat_map(|w| {
                [first, last]
                    .map(|v| crate::ir_util::subst(w, &HashMap::from([(var.clone(), v.clone())])))
            })
            .collect();
    }
    let mut distinct: Vec<Expr> = Vec::new();
    for w in at {
        if !distinct.contains(&w) {
            distinct.push(w);
        }
    }
    distinct
        .into_iter()
        .reduce(|a, b| Expr::Binary(BinOp::Max, Box::new(a), Box::new(b)))
        .expect("one extent at least")
}

/// The largest value of the extent `e` over the loops around it, each
/// variable between the ends `spans` gives it (innermost first: a loop's
/// bounds may read the variables outside it); `None` when `e` is not
/// monotone in one of them, or a loop's step is not a literal. A
/// normalised index `v + n if v < 0 else v` of a variable that is never
/// negative is `v`.
fn widest_exact(e: &Expr, spans: &[(String, Option<(Expr, Expr)>)]) -> Option<Expr> {
    let mut nonneg: HashSet<&str> = HashSet::new();
    for (var, span) in spans {
        if let Some((lo, _)) = span {
            if never_negative(lo, &nonneg) {
                nonneg.insert(var);
            }
        }
    }
    let mut w = drop_wraps(e, &nonneg);
    for (var, span) in spans.iter().rev() {
        if !crate::ir_util::mentions_var(&w, var) {
            continue;
        }
        let (lo, hi) = span.as_ref()?;
        let end = if super::bounds::polarity(&w, var)? >= 0 {
            hi
        } else {
            lo
        };
        w = crate::ir_util::subst(&w, &HashMap::from([(var.clone(), end.clone())]));
        w = drop_wraps(&w, &nonneg);
    }
    Some(w)
}

/// Whether `e` is at least 0 whatever the values of its names: literals,
/// extents, `nonneg` variables, and sums, products, `min` and `max` of
/// them (`max` of anything with one of them).
fn never_negative(e: &Expr, nonneg: &HashSet<&str>) -> bool {
    match e {
        Expr::Lit(Literal::I64(v)) => *v >= 0,
        Expr::Lit(Literal::I32(v)) => *v >= 0,
        Expr::Var(n) => nonneg.contains(n.as_str()),
        Expr::Shape { .. } => true,
        Expr::Binary(BinOp::Add | BinOp::Mul | BinOp::Min, a, b) => {
            never_negative(a, nonneg) && never_negative(b, nonneg)
        }
        Expr::Binary(BinOp::Max, a, b) => never_negative(a, nonneg) || never_negative(b, nonneg),
        _ => false,
    }
}

/// `e` with Python's wrap of a negative index (`select(x < 0, …, y)`)
/// decided where `x` is never negative.
fn drop_wraps(e: &Expr, nonneg: &HashSet<&str>) -> Expr {
    crate::ir_util::map_expr(e, &|x| match x {
        Expr::Select(c, _, b) => match &**c {
            Expr::Cmp(CmpOp::Lt, l, r)
                if matches!(**r, Expr::Lit(Literal::I64(0) | Literal::I32(0)))
                    && never_negative(l, nonneg) =>
            {
                Some(drop_wraps(b, nonneg))
            }
            _ => None,
        },
        _ => None,
    })
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
