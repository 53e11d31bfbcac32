//! **whole_reduction**: a reduction across the whole data — `s += f(x[i])`
//! across a parallel loop, or `np.sum(expr)` at the top of the function —
//! becomes a reduction kernel: each thread accumulates a private partial in
//! the grid-stride loop, each block combines its partials in a tree in
//! shared memory, and one thread per block adds the block's result to the
//! accumulator with one atomic. The accumulator starts at the variable's
//! value before the loop (the host fills it).
//!
//! Operators without a native atomic (float max/min, products) take two
//! stages instead: each block writes its result to a partials array, and a
//! one-block kernel combines them into the accumulator.

use port_codegen::ir::build::*;
use port_codegen::ir::{
    ArrayType, AtomicOp, Axis, BinOp, CmpOp, Expr, ScalarType, SharedArray, Special, Stmt,
};

use crate::dependences::RedOp;
use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::launch::{REDUCE_MAX_BLOCKS, THREADS_REDUCE};
use crate::lower::context::{combine, identity, HostBind, Lowerer, Reduce};
use crate::lower::row_reduction::acc_type;
use crate::numpy::array_expr::{self, ArrVal, Val};
use crate::plan::{Fill, HostStep, LaunchShape};

pub const NAME: &str = "whole_reduction";

/// One value reduced by a reduction kernel.
#[derive(Clone, Debug)]
pub struct RedSpec {
    /// The thread's partial (a local of the kernel).
    pub partial: String,
    pub op: RedOp,
    pub ty: ScalarType,
    /// The device array (one element) that receives the result.
    pub acc: String,
    /// Host expression of the starting value.
    pub init: Expr,
    /// A sum or product of Python ints from the data: its partials are
    /// combined with checked operators (and published per block, not by
    /// an atomic, which cannot check), so a total that leaves int64 raises
    /// the overflow flag (python_ints).
    pub checked: bool,
}

impl RedSpec {
    /// `acc` combined with `x` by the spec's operator.
    pub fn combine(&self, acc: Expr, x: Expr) -> Expr {
        let e = combine(self.op, acc, x);
        match e {
            Expr::Binary(op, a, b) if self.checked => match op.checked() {
                Some(c) => Expr::Binary(c, a, b),
                None => Expr::Binary(op, a, b),
            },
            e => e,
        }
    }
}

/// A product of complex numbers computed in another order than NumPy's:
/// NumPy multiplies along the axis one element after another, and with an
/// infinite part the order decides between inf and nan (the product of
/// `inf+0j`, `1+1j` and `2-1j` is not the same taken from the right; fuzz
/// seed 303198). A tree in shared memory, or a scan in chunks, takes
/// another order.
pub(crate) fn complex_product(op: RedOp, t: ScalarType, line: u32, how: &str) -> Lower<()> {
    if op == RedOp::Prod && t.is_complex() {
        return refuse(
            NAME,
            line,
            format!(
                "a product of complex numbers {how}: NumPy multiplies them in order, one after \
                 another, and with an infinite part the order decides between inf and nan; \
                 port's kernel multiplies in another order"
            ),
        );
    }
    Ok(())
}

impl Lowerer<'_> {
    /// `np.sum(expr)` and friends at the top level: a reduction kernel.
    pub(crate) fn whole_reduction(&mut self, op: Reduce, av: &ArrVal, line: u32) -> Lower<Val> {
        let t = acc_type(op, av.elem);
        let word = match op {
            Reduce::Mean | Reduce::Sum => "total",
            Reduce::Max => "largest",
            Reduce::Min => "smallest",
            Reduce::Prod => "product",
        };
        let n = av.ndim();
        let mut seen: Vec<&Expr> = vec![&av.body];
        seen.extend(av.shape.iter());
        let vars = self.element_vars(n, &seen);
        let mut taken = names_in(&seen);
        taken.extend(vars.iter().cloned());
        let partial = self.local_name(word, &taken);
        let elem = cast_to(array_expr::at_vars(&av.body, &vars), av.elem, t);
        let update = assign(
            &partial,
            combine(op.op(), var(&partial), array_expr::tidy(&elem)),
        );
        // The launch is a 1-D reduction grid: an array of two or more
        // dimensions goes over its flat index.
        let (pfor, _) = self.flat_loop(&vars, &av.shape, vec![update]);
        let kname = self.kernel_name(op.word());
        let acc = self.fresh(&format!("{word}_acc"));
        self.reduction_kernel(
            kname,
            pfor,
            vec![RedSpec {
                partial,
                op: op.op(),
                ty: t,
                acc: acc.clone(),
                init: identity(op.op(), t),
                checked: false,
            }],
            av.size(),
            format!(
                "`{}` over the whole array (line {line}): a grid-stride loop, a tree in shared memory per block, then one atomic (or one partial) per block.",
                op.word()
            ),
            line,
        )?;
        self.log.applied(
            NAME,
            format!(
                "`{}` over the whole array as a reduction kernel (line {line})",
                op.word()
            ),
        );
        let v = load(&acc, vec![i64(0)]);
        Ok(if op == Reduce::Mean {
            Val::scalar(div(v, cast_to(av.size(), ScalarType::I64, t)), t)
        } else {
            Val::scalar(v, t)
        })
    }

    /// Builds the reduction kernel around `pfor` (whose body updates each
    /// spec's `partial`), the accumulators, and the launches.
    pub(crate) fn reduction_kernel(
        &mut self,
        kname: String,
        pfor: Stmt,
        specs: Vec<RedSpec>,
        n: Expr,
        doc: String,
        line: u32,
    ) -> Lower<()> {
        for s in &specs {
            complex_product(s.op, s.ty, line, "across a parallel loop or a whole array")?;
        }
        let mut taken = names_in_stmts(std::slice::from_ref(&pfor));
        taken.extend(specs.iter().map(|s| s.partial.clone()));
        taken.extend(specs.iter().map(|s| s.acc.clone()));
        let tid = self.local_name("tid", &taken);
        taken.insert(tid.clone());
        let stride = self.local_name("stride", &taken);
        taken.insert(stride.clone());
        let mut shared = Vec::new();
        let mut body = vec![let_(
            &tid,
            ScalarType::I32,
            special(Special::ThreadIdx, Axis::X),
        )];
        let mut finishers: Vec<(String, usize)> = Vec::new();
        let mut tree_names = Vec::new();
        for s in &specs {
            let init = self.hostify(s.init.clone());
            self.steps.push(HostStep::Alloc {
                name: s.acc.clone(),
                elem: s.ty,
                shape: vec![i64(1)],
                fill: Fill::Value(init),
            });
            self.host.insert(
                s.acc.clone(),
                HostBind::Array(ArrayType {
                    elem: s.ty,
                    ndim: 1,
                    contiguous: true,
                }),
            );
            self.accs.insert(s.acc.clone());
            let tree = self.local_name(&format!("{}_block", s.partial), &taken);
            taken.insert(tree.clone());
            shared.push(SharedArray {
                name: tree.clone(),
                elem: s.ty,
                shape: vec![THREADS_REDUCE],
            });
            tree_names.push(tree);
            body.push(let_(&s.partial, s.ty, identity(s.op, s.ty)));
        }
        body.push(pfor);
        body.extend(self.block_tree(&specs, &tree_names, &tid, &stride));
        // One thread per block publishes the block's result.
        let mut publish = Vec::new();
        for (k, s) in specs.iter().enumerate() {
            let tree0 = load(&tree_names[k], vec![i32(0)]);
            let atomic = match s.op {
                _ if s.checked => None,
                // numba-cuda has no complex atomic: complex sums go
                // through per-block partials.
                // GPUs have no 8- or 16-bit atomics.
                RedOp::Sum if !s.ty.is_complex() && s.ty.bits() >= 32 => Some(AtomicOp::Add),
                RedOp::Max if s.ty.is_int() && s.ty.bits() >= 32 => Some(AtomicOp::Max),
                RedOp::Min if s.ty.is_int() && s.ty.bits() >= 32 => Some(AtomicOp::Min),
                _ => None,
            };
            match atomic {
                Some(a) => publish.push(Stmt::Eval(atomic_expr(a, &s.acc, tree0))),
                None => {
                    let partials = self.fresh(&format!("{}_blocks", s.partial));
                    self.steps.push(HostStep::Alloc {
                        name: partials.clone(),
                        elem: s.ty,
                        shape: vec![i64(i64::from(REDUCE_MAX_BLOCKS))],
                        fill: Fill::Value(identity(s.op, s.ty)),
                    });
                    self.host.insert(
                        partials.clone(),
                        HostBind::Array(ArrayType {
                            elem: s.ty,
                            ndim: 1,
                            contiguous: true,
                        }),
                    );
                    publish.push(store(
                        &partials,
                        vec![special(Special::BlockIdx, Axis::X)],
                        tree0,
                    ));
                    finishers.push((partials, k));
                }
            }
        }
        body.push(if_(cmp(CmpOp::Eq, var(&tid), i32(0)), publish, vec![]));
        self.add_kernel(kname.clone(), body, shared, LaunchShape::Reduce { n }, doc)?;
        for (partials, k) in finishers {
            let s = &specs[k];
            self.finish_kernel(&format!("{kname}_finish"), &partials, s)?;
        }
        Ok(())
    }

    /// The shared-memory tree: each block halves its partials until one is left.
    pub(crate) fn block_tree(
        &self,
        specs: &[RedSpec],
        trees: &[String],
        tid: &str,
        stride: &str,
    ) -> Vec<Stmt> {
        let mut out = Vec::new();
        for (s, t) in specs.iter().zip(trees) {
            out.push(store(t, vec![var(tid)], var(&s.partial)));
        }
        out.push(Stmt::Barrier);
        out.push(let_(
            stride,
            ScalarType::I32,
            binary(BinOp::FloorDiv, special(Special::BlockDim, Axis::X), i32(2)),
        ));
        let mut step = Vec::new();
        for (s, t) in specs.iter().zip(trees) {
            step.push(store(
                t,
                vec![var(tid)],
                s.combine(
                    load(t, vec![var(tid)]),
                    load(t, vec![add(var(tid), var(stride))]),
                ),
            ));
        }
        out.push(while_(
            cmp(CmpOp::Gt, var(stride), i32(0)),
            vec![
                if_(cmp(CmpOp::Lt, var(tid), var(stride)), step, vec![]),
                Stmt::Barrier,
                assign(stride, binary(BinOp::FloorDiv, var(stride), i32(2))),
            ],
        ));
        out
    }

    /// Second stage: one block combines the per-block results into `acc`.
    fn finish_kernel(&mut self, base: &str, partials: &str, s: &RedSpec) -> Lower<()> {
        let name = self.fresh(base);
        let taken: std::collections::HashSet<String> =
            [s.partial.clone(), s.acc.clone(), partials.to_string()].into();
        let (tid, stride, k) = ("tid".to_string(), "stride".to_string(), "k".to_string());
        let tree = self.local_name(&format!("{}_block", s.partial), &taken);
        let spec = RedSpec {
            partial: s.partial.clone(),
            op: s.op,
            ty: s.ty,
            acc: s.acc.clone(),
            init: s.init.clone(),
            checked: s.checked,
        };
        let mut body = vec![
            let_(&tid, ScalarType::I32, special(Special::ThreadIdx, Axis::X)),
            let_(&s.partial, s.ty, identity(s.op, s.ty)),
            for_range(
                &k,
                cast(ScalarType::I64, var(&tid)),
                shape(partials, 0),
                cast(ScalarType::I64, special(Special::BlockDim, Axis::X)),
                vec![assign(
                    &s.partial,
                    s.combine(var(&s.partial), load(partials, vec![var(&k)])),
                )],
            ),
        ];
        body.extend(self.block_tree(
            std::slice::from_ref(&spec),
            std::slice::from_ref(&tree),
            &tid,
            &stride,
        ));
        body.push(if_(
            cmp(CmpOp::Eq, var(&tid), i32(0)),
            vec![store(
                &s.acc,
                vec![i64(0)],
                s.combine(load(&s.acc, vec![i64(0)]), load(&tree, vec![i32(0)])),
            )],
            vec![],
        ));
        let shared = vec![SharedArray {
            name: tree,
            elem: s.ty,
            shape: vec![THREADS_REDUCE],
        }];
        self.add_kernel(
            name,
            body,
            shared,
            LaunchShape::OneBlock,
            format!(
                "Second stage of the reduction into `{}`: one block combines the per-block results.",
                s.acc
            ),
        )
    }
}

fn atomic_expr(op: AtomicOp, acc: &str, v: Expr) -> Expr {
    atomic(op, acc, vec![i64(0)], v)
}

/// Variable and array names an expression list mentions.
pub(crate) fn names_in(exprs: &[&Expr]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for e in exprs {
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Var(v) => {
                out.insert(v.clone());
            }
            Expr::Shape { array, .. } => {
                out.insert(array.clone());
            }
            Expr::Load(r) | Expr::Atomic(_, r, _) | Expr::AtomicCas(r, _, _) => {
                out.insert(r.array.clone());
            }
            _ => {}
        });
    }
    out
}

/// Every name a statement list declares or mentions.
fn names_in_stmts(body: &[Stmt]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    port_codegen::ir::walk_body_exprs(body, &mut |e| {
        out.extend(names_in(&[e]));
    });
    fn declared(body: &[Stmt], out: &mut std::collections::HashSet<String>) {
        for s in body {
            match s {
                Stmt::Let { name, .. } | Stmt::Assign { name, .. } => {
                    out.insert(name.clone());
                }
                Stmt::Store { target, .. } => {
                    out.insert(target.array.clone());
                }
                Stmt::For { var, body, .. } => {
                    out.insert(var.clone());
                    declared(body, out);
                }
                Stmt::ParallelFor(p) => {
                    out.extend(p.vars.iter().cloned());
                    declared(&p.body, out);
                }
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    declared(then_body, out);
                    declared(else_body, out);
                }
                Stmt::While { body, .. } => declared(body, out),
                _ => {}
            }
        }
    }
    declared(body, &mut out);
    out
}
