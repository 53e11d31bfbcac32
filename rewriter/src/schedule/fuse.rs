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
    Stmt, Type,
};

use crate::ir_util::{and, map_expr, map_stmts};
use crate::plan::{HostStep, KernelPlan, LaunchShape, PlanKind};

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
        HostStep::Alloc { name, shape, .. } => allocs.entry(name.clone()).or_default().push(shape.clone()),
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
    let mut f = Fuser {
        plan_kernels: std::mem::take(&mut plan.module.kernels),
        shapes,
        sites,
        notes: Vec::new(),
        docs: &mut plan.docs,
        original_launch: HashMap::new(),
        function: plan.function.rsplit('.').next().unwrap_or(&plan.function).to_string(),
    };
    let steps = std::mem::take(&mut plan.steps);
    plan.steps = f.steps(steps);
    plan.module.kernels = f.plan_kernels;
    f.notes
}

struct Fuser<'a> {
    plan_kernels: Vec<Kernel>,
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
                        (Some(g), Some(k)) => match self.merge(&g, &k) {
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
        out.append(held);
        let space = g.space.clone();
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
        for m in &g.members {
            self.docs.remove(m);
            self.original_launch.remove(m);
        }
        self.docs.insert(first.clone(), doc);
        // The fused kernel takes the first one's place; the others go.
        let mut kernel = g.kernel;
        kernel.name = first.clone();
        let rest: HashSet<&String> = g.members[1..].iter().collect();
        self.plan_kernels.retain(|k| !rest.contains(&k.name));
        if let Some(k) = self.plan_kernels.iter_mut().find(|k| k.name == first) {
            *k = kernel;
        }
        out.push(HostStep::Launch {
            kernel: first,
            args: g.args,
            shape,
        });
    }
}

impl Fuser<'_> {
    /// `e` (host names) with every array the schedule allocated replaced by
    /// the shape it was allocated with, down to the arguments' shapes.
    fn canon(&self, e: &Expr, depth: u32) -> Expr {
        map_expr(e, &|x| match x {
            Expr::Shape { array, axis } if depth < 16 => self
                .shapes
                .get(array)
                .and_then(|s| s.get(*axis as usize))
                .map(|d| self.canon(d, depth + 1)),
            _ => None,
        })
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
        for (d, ix) in first.indices.iter().enumerate() {
            offsets.push(offset_of(ix, pf.vars.get(d)?)?);
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
        let whole = |array: &str, d: usize| {
            self.canon(
                &Expr::Shape {
                    array: array.to_string(),
                    axis: d as u8,
                },
                0,
            )
        };
        // Other arrays it stores to have the target's shape.
        for s in &stores {
            let h = host.get(s.array.as_str())?;
            if (0..nvars).any(|d| whole(h, d) != whole(&target_host, d)) {
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
        let mut conds: Vec<Expr> = Vec::new();
        for (d, (v, c)) in pf.vars.iter().zip(&offsets).enumerate() {
            let extent = &pf.extents[d];
            if *c > 0 {
                conds.push(Expr::Cmp(CmpOp::Ge, Box::new(var(v)), Box::new(i64(*c))));
            }
            let to_end = runs_to_end(extent, *c, &target, d)
                || (*c == 0 && self.canon(&to_host(extent), 0) == whole(&target_host, d));
            if !to_end {
                let stop = if *c == 0 {
                    // `i < max(x, 0)` is `i < x` for `i` never negative.
                    match extent {
                        Expr::Binary(BinOp::Max, x, z)
                            if matches!(z.as_ref(), Expr::Lit(Literal::I64(0))) =>
                        {
                            x.as_ref().clone()
                        }
                        e => e.clone(),
                    }
                } else {
                    binary(BinOp::Add, i64(*c), extent.clone())
                };
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
    fn merge(&self, g: &Shaped, k: &Shaped) -> Option<Shaped> {
        let n = g.vars.len();
        if k.vars.len() != n {
            return None;
        }
        let axis = |a: &str, d: usize| Expr::Shape {
            array: a.to_string(),
            axis: d as u8,
        };
        if (0..n).any(|d| self.canon(&axis(&g.space, d), 0) != self.canon(&axis(&k.space, d), 0)) {
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
                        ty: p.ty.clone(),
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
            if (*g_writes || *k_writes)
                && g_refs.iter().chain(k_refs).any(|ix| *ix != point)
            {
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

/// The line a kernel's doc names (`Line 5 of …`, `The loop at line 12 …`).
fn line_of(doc: &str) -> Option<String> {
    let lower = doc.to_lowercase();
    let at = lower.find("line ")? + 5;
    let digits: String = lower[at..].chars().take_while(char::is_ascii_digit).collect();
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
    walk_body_exprs(body, &mut |e| match e {
        Expr::Load(r) => out
            .entry(r.array.clone())
            .or_default()
            .0
            .push(r.indices.clone()),
        // `a.shape[0]` reads no element; arrays passed whole to device
        // functions are refused before.
        _ => {}
    });
    out
}

/// Names `body` declares (`let`, loop variables).
fn locals(body: &[Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::Let { name, .. } => out.push(name.clone()),
            Stmt::For { var, body, .. } => {
                out.push(var.clone());
                out.extend(locals(body));
            }
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                out.extend(locals(then_body));
                out.extend(locals(else_body));
            }
            Stmt::While { body, .. } => out.extend(locals(body)),
            Stmt::ParallelFor(p) => {
                out.extend(p.vars.iter().cloned());
                out.extend(locals(&p.body));
            }
            _ => {}
        }
    }
    out
}

/// `base`, or `base_2`, `base_3`, … : a name not in `taken`.
fn fresh(base: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(base) {
        return base.to_string();
    }
    (2..)
        .map(|k| format!("{base}_{k}"))
        .find(|n| !taken.contains(n))
        .expect("a free name")
}

/// `body` with names (parameters, locals, loop variables) renamed.
fn rename_body(body: &[Stmt], map: &HashMap<String, String>) -> Vec<Stmt> {
    let name = |n: &String| map.get(n).cloned().unwrap_or_else(|| n.clone());
    let ex = |e: &Expr| rename_expr(e, map);
    body.iter()
        .map(|s| match s {
            Stmt::Let { name: n, ty, init } => Stmt::Let {
                name: name(n),
                ty: *ty,
                init: ex(init),
            },
            Stmt::Assign { name: n, value } => Stmt::Assign {
                name: name(n),
                value: ex(value),
            },
            Stmt::Store { target, value } => Stmt::Store {
                target: ElemRef {
                    array: name(&target.array),
                    indices: target.indices.iter().map(ex).collect(),
                },
                value: ex(value),
            },
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: ex(cond),
                then_body: rename_body(then_body, map),
                else_body: rename_body(else_body, map),
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: ex(cond),
                body: rename_body(body, map),
            },
            Stmt::For {
                var: v,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: name(v),
                start: ex(start),
                stop: ex(stop),
                step: ex(step),
                body: rename_body(body, map),
            },
            Stmt::ParallelFor(p) => Stmt::ParallelFor(ParallelFor {
                vars: p.vars.iter().map(name).collect(),
                extents: p.extents.iter().map(ex).collect(),
                body: rename_body(&p.body, map),
            }),
            Stmt::Return(e) => Stmt::Return(e.as_ref().map(ex)),
            Stmt::Eval(e) => Stmt::Eval(ex(e)),
            Stmt::Break | Stmt::Continue | Stmt::Barrier => s.clone(),
        })
        .collect()
}

fn rename_expr(e: &Expr, map: &HashMap<String, String>) -> Expr {
    let name = |n: &String| map.get(n).cloned().unwrap_or_else(|| n.clone());
    map_expr(e, &|x| match x {
        Expr::Var(v) => Some(Expr::Var(name(v))),
        Expr::Shape { array, axis } => Some(Expr::Shape {
            array: name(array),
            axis: *axis,
        }),
        Expr::Load(r) => Some(Expr::Load(ElemRef {
            array: name(&r.array),
            indices: r.indices.iter().map(|i| rename_expr(i, map)).collect(),
        })),
        Expr::Atomic(op, r, v) => Some(Expr::Atomic(
            *op,
            ElemRef {
                array: name(&r.array),
                indices: r.indices.iter().map(|i| rename_expr(i, map)).collect(),
            },
            Box::new(rename_expr(v, map)),
        )),
        Expr::AtomicCas(r, c, v) => Some(Expr::AtomicCas(
            ElemRef {
                array: name(&r.array),
                indices: r.indices.iter().map(|i| rename_expr(i, map)).collect(),
            },
            Box::new(rename_expr(c, map)),
            Box::new(rename_expr(v, map)),
        )),
        _ => None,
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
        Expr::Binary(BinOp::Sub, s, k) => is_axis(s) && matches!(k.as_ref(), Expr::Lit(Literal::I64(x)) if *x == c),
        Expr::Binary(BinOp::Add, s, k) => is_axis(s) && matches!(k.as_ref(), Expr::Lit(Literal::I64(x)) if *x == -c),
        _ => false,
    }
}

/// Array indices over the loop variables written in their simplest affine
/// form: `1 + (i - 1)` is `i`, `(j - 2) + 1` is `j - 1`.
fn simplify_indices(e: &Expr, vars: &HashSet<String>) -> Expr {
    let simple = |ix: &Expr| affine(ix, vars).and_then(rebuild).unwrap_or_else(|| ix.clone());
    let e = simple(e);
    map_expr(&e, &|x| match x {
        Expr::Load(r) => Some(Expr::Load(ElemRef {
            array: r.array.clone(),
            indices: r.indices.iter().map(|i| simplify_indices(i, vars)).collect(),
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
