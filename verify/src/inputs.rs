//! Inputs for verification: captured ones (the profiler's snapshot), given
//! ones (`--inputs`), or generated from the argument types.
//!
//! Generated inputs are deterministic (a fixed-seed generator) and sized to
//! exercise many blocks while keeping the CPython original fast: every
//! array dimension starts from one extent `N`, so arrays of any shapes agree
//! (`a[n, k] @ b[k, m]` gets square matrices), with `N^d ≈ 2^18` where `d`
//! is the deeper of the kernels' loop nesting and the arrays' rank: 1-D
//! work gets 100 000 elements, 2-D 512 × 512, a triple loop 64³ (and so
//! does a library step, `np.linalg.solve` of n × n being n³ work).
//!
//! Extents then follow the function's own index arithmetic ([`needs`]): a
//! loop over `range(out.shape[0])` that reads `x[i + 4]` needs `x` 4 longer
//! than `out`, and a slice pair like `b[1:] - a[:n - 1]` (lowered to
//! `b[i + 1] - a[i]` over the output) needs `b` one longer. [`candidates`]
//! gives the shapes to try in order: the tightest that keep every access in
//! bounds, then the same with every array that no loop bound comes from
//! grown alike (a slice like `a[:n - 1]` reads less of `a` than it holds),
//! then one extent for all. The original decides: the first it runs on is
//! used.
//!
//! Values: floats uniform in [0.5, 1.5) when the kernels divide or call a
//! function defined only for positive numbers (log, sqrt, pow, …), else in
//! [-1, 1); integers in [0, 8) (valid indices into any array); booleans
//! half true; integer scalars 5 and float scalars 0.75.
//!
//! Matrices a library step takes ([`conditions`]): an argument the plan
//! passes as it is to `np.linalg.cholesky` is made Hermitian (symmetric)
//! and strictly diagonally dominant with a positive diagonal — so positive
//! definite —, and one passed to `solve` or `inv` strictly diagonally
//! dominant (well conditioned), every square matrix of a stack alike. A
//! matrix the function computes from its arguments (`X.T @ X + lam * I`,
//! a sum over a stack) is not traced back: its arguments are generated as
//! above, and the original decides — when it raises (`LinAlgError`) on
//! every candidate shape, verification asks for real inputs (`--inputs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use port_codegen::ir::{BinOp, Expr, MathFn, Module, ScalarType, Stmt};
use port_codegen::ArrayData;
use port_rewriter::plan::HostStep;
use port_rewriter::{ArgType, KernelPlan, PlanKind};

use crate::error::VerifyError;
use crate::npy::{self, NdArray};

mod fit;

use fit::{Ints, Shapes};

/// One argument's value.
#[derive(Clone, Debug, PartialEq)]
pub enum InputValue {
    Array(NdArray),
    /// A scalar of this type (integers and booleans as exact `f64`).
    Scalar(ScalarType, f64),
    /// A complex scalar of this type, `(re, im)`.
    Complex(ScalarType, f64, f64),
}

/// Where the inputs came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputOrigin {
    /// The profiler's snapshot of a real call.
    Captured,
    /// An `.npz` the user gave (`--inputs`).
    Given,
    Generated,
}

impl InputOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            InputOrigin::Captured => "captured",
            InputOrigin::Given => "given",
            InputOrigin::Generated => "generated",
        }
    }
}

/// The arguments of one call, in order.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub values: Vec<(String, InputValue)>,
    pub origin: InputOrigin,
    /// Arguments the program passed as the same array as an earlier one
    /// (`f(a, a)`): (name, the earlier name). The original is called with
    /// one array for both; the kernels get a copy each, as the migrated
    /// function's wrapper makes them ([`crate::exec::run_plan`] then gives
    /// both what the wrapper's copy-back leaves in the caller's array).
    pub same: Vec<(String, String)>,
    /// How generated inputs were sized, when not as the plan's loops say.
    pub how: Option<String>,
}

/// The fixed seed of generated inputs.
pub const SEED: u64 = 0x5EED_2020;
/// Generated inputs make the loops run about this many iterations in all
/// (`N^d` for `d` nested loops), unless `--size` says otherwise.
pub const DEFAULT_BUDGET: usize = 262_144;
const BUDGET: f64 = DEFAULT_BUDGET as f64;
const MAX_1D: usize = 100_000;

/// splitmix64: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Depth of loop nesting in a body (parallel variables count one each).
fn depth(body: &[Stmt]) -> usize {
    body.iter()
        .map(|s| match s {
            Stmt::ParallelFor(p) => p.vars.len() + depth(&p.body),
            Stmt::For { body, .. } | Stmt::While { body, .. } => 1 + depth(body),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => depth(then_body).max(depth(else_body)),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Whether the kernels need positive inputs to stay in their domain.
fn needs_positive(m: &Module) -> bool {
    let mut yes = false;
    let mut visit = |e: &Expr| match e {
        Expr::Math(f, _) => {
            yes |= matches!(
                f,
                MathFn::Sqrt
                    | MathFn::Log
                    | MathFn::Log2
                    | MathFn::Log10
                    | MathFn::Log1p
                    | MathFn::Pow
                    | MathFn::Acosh
                    | MathFn::Atanh
                    | MathFn::Asin
                    | MathFn::Acos
                    | MathFn::Fmod
            )
        }
        Expr::Binary(BinOp::Div | BinOp::FloorDiv | BinOp::Rem, _, _) => yes = true,
        _ => {}
    };
    for k in &m.kernels {
        port_codegen::ir::walk_body_exprs(&k.body, &mut visit);
    }
    for f in &m.device_functions {
        port_codegen::ir::walk_body_exprs(&f.body, &mut visit);
    }
    yes
}

/// The extent of every generated array dimension for this plan.
pub fn extent(plan: &KernelPlan) -> usize {
    extent_for(plan, None)
}

/// The extent of every generated dimension when the innermost loops should
/// run about `budget` iterations in all (`None`: a size quick to verify).
pub fn extent_for(plan: &KernelPlan, budget: Option<usize>) -> usize {
    let loops = host_depth(plan, &plan.steps, &mut HashSet::new()).max(1);
    let rank = plan
        .params
        .iter()
        .filter_map(|p| match p.ty {
            ArgType::Array(a) => Some(a.ndim as usize),
            ArgType::Scalar(_) => None,
        })
        .max()
        .unwrap_or(1);
    let d = loops.max(rank).max(1) as f64;
    match budget {
        Some(b) => ((b.max(1) as f64).powf(1.0 / d).round() as usize).max(1),
        // At least 8 (the 6 deep nests BUDGET is sized for), or, nested
        // deeper (eight host loops around a matmul), as small as 2.
        None => (BUDGET.powf(1.0 / d).round() as usize).clamp(2, MAX_1D),
    }
}

/// How deep the loops that run with the arrays' extents nest, host loops
/// (a time loop over `range(n)`, a sweep) and the kernels they launch
/// together: an O(n²) sweep of n kernels of n threads is two deep, and
/// sized as such. A library step on n × n matrices counts three (n³
/// work). Host loops whose bound is a constant or an integer argument do
/// not grow with the extents and count nothing. `scaling` holds the host
/// names computed from extents so far.
fn host_depth(plan: &KernelPlan, steps: &[HostStep], scaling: &mut HashSet<String>) -> usize {
    fn scales(e: &Expr, scaling: &HashSet<String>) -> bool {
        let mut yes = false;
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Shape { .. } => yes = true,
            Expr::Var(v) => yes |= scaling.contains(v),
            _ => {}
        });
        yes
    }
    let mut deepest = 0;
    for s in steps {
        let d = match s {
            HostStep::Scalar { name, value, .. } => {
                if scales(value, scaling) {
                    scaling.insert(name.clone());
                }
                0
            }
            HostStep::Launch { kernel, .. } => plan
                .module
                .kernels
                .iter()
                .find(|k| &k.name == kernel)
                .map_or(1, |k| depth(&k.body)),
            HostStep::Library(_) => 3,
            HostStep::Loop {
                var, stop, body, ..
            } => {
                // `for j in range(i)` inside `for i in range(n)` scales too.
                let grows = scales(stop, scaling);
                if grows {
                    scaling.insert(var.clone());
                }
                usize::from(grows) + host_depth(plan, body, scaling)
            }
            HostStep::While { test, body, .. } => {
                host_depth(plan, test, scaling).max(host_depth(plan, body, scaling))
            }
            // A persistent kernel runs the loops of the other branch: those
            // say which of them scale.
            HostStep::If { then, orelse, .. }
                if port_rewriter::plan::opens_choice(then, port_rewriter::plan::PERSIST_CHOICE) =>
            {
                host_depth(plan, orelse, scaling)
            }
            HostStep::If { then, orelse, .. } => {
                host_depth(plan, then, scaling).max(host_depth(plan, orelse, scaling))
            }
            _ => 0,
        };
        deepest = deepest.max(d);
    }
    deepest
}

/// The range generated float values come from.
pub fn value_range(plan: &KernelPlan) -> (f64, f64) {
    if needs_positive(&plan.module) {
        (0.5, 1.5)
    } else {
        (-1.0, 1.0)
    }
}

/// Deterministic inputs for the plan's argument types.
pub fn generate(plan: &KernelPlan) -> Inputs {
    generate_sized(plan, None)
}

/// Deterministic inputs with about `budget` loop iterations in all: a
/// 1-D loop gets arrays of `budget` elements, a 2-D one `√budget` per side.
/// The first of [`candidates`].
pub fn generate_sized(plan: &KernelPlan, budget: Option<usize>) -> Inputs {
    candidates(plan, budget)
        .into_iter()
        .next()
        .expect("at least one candidate")
}

/// The most bytes a candidate's generated arrays may take together.
pub const MAX_GENERATED_BYTES: u128 = 4 << 30;

/// The integer value generated for an integer scalar argument.
const INT_SCALAR: i64 = 5;

/// Generated inputs to try in order (see the module doc), without repeats.
pub fn candidates(plan: &KernelPlan, budget: Option<usize>) -> Vec<Inputs> {
    let n = extent_for(plan, budget);
    let equal: Shapes = plan
        .params
        .iter()
        .filter_map(|p| match p.ty {
            ArgType::Array(a) => Some((p.name.clone(), vec![n; a.ndim as usize])),
            ArgType::Scalar(_) => None,
        })
        .collect();
    // First the extents and integer arguments fitted to the plan's guards
    // and clipped slices ([`fit`]), then every extent equal and the
    // integers small.
    let mut starts: Vec<(Shapes, Ints)> = Vec::new();
    if plan.kind == PlanKind::Kernels {
        if let Some(fitted) = fit::fit(plan, &equal, INT_SCALAR) {
            starts.push(fitted);
        }
    }
    starts.push((equal, Ints::new()));
    let mut shapes: Vec<(Shapes, Ints)> = vec![];
    for (start, ints) in starts {
        if plan.kind == PlanKind::Kernels {
            let needs = needs(plan, &ints);
            let tight = solve(&start, &needs);
            let grown = grow_alike(&start, &tight, &needs);
            shapes.push((tight, ints.clone()));
            shapes.push((grown, ints.clone()));
        }
        shapes.push((start, ints));
    }
    // Axes the plan is specialised to extent 1 have extent 1; shapes that
    // break the plan's guards on the arguments (extents its kernels take
    // to be equal) are tried last.
    for (s, _) in &mut shapes {
        for (p, k) in &plan.unit_dims {
            if let Some(e) = s.get_mut(p).and_then(|d| d.get_mut(*k as usize)) {
                *e = 1;
            }
        }
    }
    // Shapes grown to meet what the plan reads (an allocation's extents,
    // an offset window) can be absurd for a plan whose own sizes are; such
    // candidates are dropped rather than allocated (the host would abort),
    // unless none is small enough, when the smallest is tried.
    let bytes = |s: &Shapes| -> u128 {
        plan.params
            .iter()
            .filter_map(|p| match p.ty {
                ArgType::Array(a) => Some(
                    crate::dtype::array_bytes(a.elem, s.get(&p.name)?)
                        .map_or(u128::MAX, |b| b as u128),
                ),
                ArgType::Scalar(_) => None,
            })
            .fold(0u128, u128::saturating_add)
    };
    let smallest = shapes.iter().map(|(s, _)| bytes(s)).min().unwrap_or(0);
    shapes.retain(|(s, _)| bytes(s) <= MAX_GENERATED_BYTES.max(smallest));
    let mut seen = HashSet::new();
    let mut shapes: Vec<(Shapes, Ints)> = shapes
        .into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect();
    shapes.sort_by_key(|(s, ints)| !fits_guards(plan, s, ints));
    shapes
        .into_iter()
        .map(|(s, ints)| generate_shaped(plan, &s, &ints, n))
        .collect()
}

/// Whether generated arguments of these shapes pass the guards at the
/// start of the plan (those that read only the arguments).
fn fits_guards(plan: &KernelPlan, shapes: &Shapes, ints: &Ints) -> bool {
    let eval = |e: &Expr| eval_int(e, shapes, ints, plan);
    plan.steps
        .iter()
        .map_while(|s| match s {
            HostStep::Guard(g) => Some(g),
            _ => None,
        })
        .all(|g| match (eval(&g.lhs), eval(&g.rhs)) {
            (Some(a), Some(b)) => g.relation.holds(a, b),
            _ => true,
        })
}

/// An integer expression of the arguments' extents and integers
/// ([`fit::eval`]), an integer argument not in `ints` at its small value.
fn eval_int(e: &Expr, shapes: &Shapes, ints: &Ints, plan: &KernelPlan) -> Option<i64> {
    fit::eval(e, &|t| match t {
        fit::Term::Extent(array, axis) => shapes.get(array)?.get(*axis).map(|&n| n as i64),
        fit::Term::Int(v) => match plan.params.iter().find(|p| p.name == *v)?.ty {
            ArgType::Scalar(t) if t.is_int() => Some(ints.get(v).copied().unwrap_or(INT_SCALAR)),
            _ => None,
        },
    })
}

/// One bound an access puts on an array dimension:
/// `extent(array, axis) >= base + add`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub array: String,
    pub axis: usize,
    /// `Some((array, axis))`: that argument's extent; `None`: zero.
    pub base: Option<(String, usize)>,
    pub add: i64,
}

/// A host- or kernel-side integer known as `extent(base) + add` (or the
/// constant `add`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Affine {
    base: Option<(String, usize)>,
    add: i64,
}

impl Affine {
    fn constant(add: i64) -> Self {
        Affine { base: None, add }
    }
    fn plus(&self, k: i64) -> Self {
        Affine {
            base: self.base.clone(),
            add: self.add + k,
        }
    }
}

fn lit_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(port_codegen::ir::Literal::I64(v)) => Some(*v),
        Expr::Lit(port_codegen::ir::Literal::I32(v)) => Some(i64::from(*v)),
        Expr::Cast(_, a) => lit_int(a),
        _ => None,
    }
}

/// `x + k`, `k + x`, `x - k` as `(x, ±k)`; anything else as `(e, 0)`.
fn split_offset(e: &Expr) -> (&Expr, i64) {
    match e {
        Expr::Binary(BinOp::Add, a, b) => match (lit_int(a), lit_int(b)) {
            (_, Some(k)) => (a, k),
            (Some(k), _) => (b, k),
            _ => (e, 0),
        },
        Expr::Binary(BinOp::Sub, a, b) => match lit_int(b) {
            Some(k) => (a, -k),
            None => (e, 0),
        },
        Expr::Cast(_, a) => split_offset(a),
        _ => (e, 0),
    }
}

/// What the host side knows: integer scalars, and the shapes of the
/// arrays it allocates.
#[derive(Default)]
struct HostEnv {
    scalars: HashMap<String, Affine>,
    allocs: HashMap<String, Vec<Option<Affine>>>,
    params: HashSet<String>,
}

impl HostEnv {
    fn shape(&self, array: &str, axis: usize) -> Option<Affine> {
        if self.params.contains(array) {
            return Some(Affine {
                base: Some((array.to_string(), axis)),
                add: 0,
            });
        }
        self.allocs.get(array)?.get(axis)?.clone()
    }

    /// A host expression as an affine value, with `names` mapping the
    /// names it uses (kernel parameters) to host names.
    fn affine(&self, e: &Expr, names: &dyn Fn(&str) -> String) -> Option<Affine> {
        if let Some(k) = lit_int(e) {
            return Some(Affine::constant(k));
        }
        let (x, k) = split_offset(e);
        if k != 0 {
            return Some(self.affine(x, names)?.plus(k));
        }
        match e {
            Expr::Var(v) => self.scalars.get(&names(v)).cloned(),
            Expr::Shape { array, axis } => self.shape(&names(array), *axis as usize),
            Expr::Cast(_, a) => self.affine(a, names),
            _ => None,
        }
    }
}

/// Every bound the kernels' accesses put on the argument arrays.
pub fn needs(plan: &KernelPlan, ints: &Ints) -> Vec<Need> {
    let mut host = HostEnv::default();
    for p in &plan.params {
        match p.ty {
            ArgType::Array(_) => {
                host.params.insert(p.name.clone());
            }
            ArgType::Scalar(ScalarType::I32 | ScalarType::I64) => {
                let v = ints.get(&p.name).copied().unwrap_or(INT_SCALAR);
                host.scalars.insert(p.name.clone(), Affine::constant(v));
            }
            ArgType::Scalar(_) => {}
        }
    }
    let id = |s: &str| s.to_string();
    let mut out = Vec::new();
    // Host loops and ifs: their steps in program order (a loop variable has
    // no known value, so what depends on it stays unbounded).
    let mut steps: Vec<&HostStep> = Vec::new();
    HostStep::walk(&plan.steps, &mut |s| steps.push(s));
    for step in steps {
        match step {
            HostStep::Scalar { name, value, .. } => {
                if let Some(a) = host.affine(value, &id) {
                    host.scalars.insert(name.clone(), a);
                }
            }
            HostStep::Alloc { name, shape, .. } => {
                let dims = shape.iter().map(|e| host.affine(e, &id)).collect();
                host.allocs.insert(name.clone(), dims);
            }
            HostStep::Launch { kernel, args, .. } => {
                let Some(k) = plan.module.kernels.iter().find(|k| &k.name == kernel) else {
                    continue;
                };
                let map: HashMap<&str, &str> = k
                    .params
                    .iter()
                    .zip(args)
                    .map(|(p, a)| (p.name.as_str(), a.as_str()))
                    .collect();
                let names = |s: &str| map.get(s).map_or_else(|| s.to_string(), |h| h.to_string());
                let mut walk = KernelWalk {
                    host: &host,
                    names: &names,
                    loops: HashMap::new(),
                    out: &mut out,
                };
                walk.body(&k.body);
            }
            HostStep::ReadBack { .. }
            | HostStep::ReadElement { .. }
            | HostStep::Loop { .. }
            | HostStep::While { .. }
            | HostStep::If { .. }
            | HostStep::Break
            | HostStep::Raise { .. }
            | HostStep::Comment(_)
            | HostStep::Guard(_)
            | HostStep::Rebind { .. }
            | HostStep::Library(_) => {}
        }
    }
    out
}

/// Walks one kernel: loop variables and the locals that are a loop
/// variable plus a constant, each with its exclusive upper bound.
struct KernelWalk<'a> {
    host: &'a HostEnv,
    names: &'a dyn Fn(&str) -> String,
    /// Variable → (exclusive upper bound of the loop variable, offset).
    loops: HashMap<String, (Affine, i64)>,
    out: &'a mut Vec<Need>,
}

impl KernelWalk<'_> {
    fn bound(&self, e: &Expr) -> Option<Affine> {
        self.host.affine(e, self.names)
    }

    fn index(&self, e: &Expr) -> Option<(Affine, i64)> {
        let (x, k) = split_offset(e);
        match x {
            Expr::Var(v) => self.loops.get(v).map(|(u, o)| (u.clone(), o + k)),
            _ => None,
        }
    }

    fn access(&mut self, r: &port_codegen::ir::ElemRef) {
        let array = (self.names)(&r.array);
        if !self.host.params.contains(&array) {
            return;
        }
        for (axis, ix) in r.indices.iter().enumerate() {
            if let Some((upper, off)) = self.index(ix) {
                // The largest index is upper - 1 + off.
                self.out.push(Need {
                    array: array.clone(),
                    axis,
                    base: upper.base,
                    add: upper.add + off,
                });
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        let mut refs = Vec::new();
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Load(r) | Expr::Atomic(_, r, _) | Expr::AtomicCas(r, _, _) => {
                refs.push(r.clone())
            }
            _ => {}
        });
        for r in &refs {
            self.access(r);
        }
    }

    fn body(&mut self, body: &[Stmt]) {
        for s in body {
            match s {
                Stmt::Let { name, init, .. } | Stmt::Assign { name, value: init } => {
                    self.expr(init);
                    match self.index(init) {
                        Some(ix) if matches!(s, Stmt::Let { .. }) => {
                            self.loops.insert(name.clone(), ix);
                        }
                        _ => {
                            self.loops.remove(name);
                        }
                    }
                }
                Stmt::Store { target, value } => {
                    self.expr(value);
                    for ix in &target.indices {
                        self.expr(ix);
                    }
                    self.access(target);
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    self.expr(cond);
                    self.body(then_body);
                    self.body(else_body);
                }
                Stmt::While { cond, body } => {
                    self.expr(cond);
                    self.body(body);
                }
                Stmt::For {
                    var,
                    stop,
                    step,
                    body,
                    ..
                } => {
                    self.expr(stop);
                    match (lit_int(step), self.bound(stop)) {
                        (Some(st), Some(u)) if st > 0 => {
                            self.loops.insert(var.clone(), (u, 0));
                        }
                        _ => {
                            self.loops.remove(var);
                        }
                    }
                    self.body(body);
                    self.loops.remove(var);
                }
                Stmt::ParallelFor(p) => {
                    for (v, e) in p.vars.iter().zip(&p.extents) {
                        match self.bound(e) {
                            Some(u) => self.loops.insert(v.clone(), (u, 0)),
                            None => self.loops.remove(v),
                        };
                    }
                    self.body(&p.body);
                    for v in &p.vars {
                        self.loops.remove(v);
                    }
                }
                Stmt::Return(Some(e)) | Stmt::Eval(e) => self.expr(e),
                Stmt::Return(None) | Stmt::Break | Stmt::Continue | Stmt::Barrier => {}
            }
        }
    }
}

/// The smallest growth of `start` that meets every need (extents never
/// shrink below `start`).
fn solve(start: &Shapes, needs: &[Need]) -> Shapes {
    let mut s = start.clone();
    // Needs form chains at most as long as there are dimensions; a cycle
    // that keeps growing (x[i + 1] over x's own range) is left to the
    // original to reject.
    let dims: usize = s.values().map(Vec::len).sum();
    for _ in 0..=dims {
        let mut changed = false;
        for nd in needs {
            if nd.base.as_ref() == Some(&(nd.array.clone(), nd.axis)) {
                continue;
            }
            let base = match &nd.base {
                None => 0,
                Some((a, ax)) => match s.get(a).and_then(|d| d.get(*ax)) {
                    Some(&e) => e as i64,
                    None => continue,
                },
            };
            let want = base + nd.add;
            if let Some(e) = s.get_mut(&nd.array).and_then(|d| d.get_mut(nd.axis)) {
                if want > *e as i64 {
                    *e = want as usize;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    s
}

/// `tight`, with every dimension that no loop bound comes from grown to the
/// largest extent the needs gave that axis.
fn grow_alike(start: &Shapes, tight: &Shapes, needs: &[Need]) -> Shapes {
    let bases: HashSet<(String, usize)> = needs.iter().filter_map(|n| n.base.clone()).collect();
    let mut widest: HashMap<usize, usize> = HashMap::new();
    for (a, dims) in tight {
        for (ax, &e) in dims.iter().enumerate() {
            if e > start[a][ax] {
                let w = widest.entry(ax).or_insert(e);
                *w = (*w).max(e);
            }
        }
    }
    let mut s = tight.clone();
    for (a, dims) in s.iter_mut() {
        for (ax, e) in dims.iter_mut().enumerate() {
            if !bases.contains(&(a.clone(), ax)) {
                if let Some(&w) = widest.get(&ax) {
                    *e = (*e).max(w);
                }
            }
        }
    }
    s
}

/// What a library step needs of an argument matrix it takes as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// `np.linalg.cholesky`: Hermitian positive definite.
    PositiveDefinite,
    /// `solve`, `inv`: strictly diagonally dominant, so well conditioned.
    Dominant,
}

/// The arguments library steps take as they are, and what each needs
/// (positive definite wins over dominant).
pub fn conditions(plan: &KernelPlan) -> BTreeMap<String, Condition> {
    use port_rewriter::plan::LibraryOp;
    let mut out = BTreeMap::new();
    HostStep::walk(&plan.steps, &mut |s| {
        let HostStep::Library(call) = s else { return };
        let want = match call.op {
            LibraryOp::Cholesky => Condition::PositiveDefinite,
            LibraryOp::Solve | LibraryOp::Inv => Condition::Dominant,
            _ => return,
        };
        let Some(a) = call.args.first() else { return };
        if !plan.params.iter().any(|p| p.name == *a && p.ty.is_array()) {
            return;
        }
        let entry = out.entry(a.clone()).or_insert(want);
        if want == Condition::PositiveDefinite {
            *entry = want;
        }
    });
    out
}

/// Every trailing square matrix of `a` made to meet `c`: off-diagonal
/// elements kept (mirrored, conjugated, for a positive definite one), each
/// diagonal element set to one more than the sum of the moduli of its
/// row's others. Non-square arrays are left alone.
pub fn condition(a: &mut NdArray, c: Condition) {
    let nd = a.shape.len();
    if nd < 2 || a.shape[nd - 1] != a.shape[nd - 2] {
        return;
    }
    let n = a.shape[nd - 1];
    if n == 0 {
        return;
    }
    let t = a.elem();
    let mut z: Vec<(f64, f64)> = (0..a.len()).map(|k| a.get_c(k)).collect();
    for m in z.chunks_mut(n * n) {
        for i in 0..n {
            for j in 0..i {
                if c == Condition::PositiveDefinite {
                    let (re, im) = m[i * n + j];
                    m[j * n + i] = (re, -im);
                }
            }
        }
        for i in 0..n {
            let off: f64 = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let (re, im) = m[i * n + j];
                    re.hypot(im)
                })
                .sum();
            m[i * n + i] = (off + 1.0, 0.0);
        }
    }
    let wide = NdArray {
        shape: a.shape.clone(),
        data: if t.is_complex() {
            ArrayData::C128(z.iter().map(|&(re, im)| [re, im]).collect())
        } else {
            ArrayData::F64(z.iter().map(|&(re, _)| re).collect())
        },
    };
    *a = wide.convert(t);
}

/// Inputs with these array shapes (`n` for a scalar function's elementwise
/// arguments).
fn generate_shaped(plan: &KernelPlan, shapes: &Shapes, ints: &Ints, n: usize) -> Inputs {
    let wanted = conditions(plan);
    let (lo, hi) = value_range(plan);
    // Integers in [0, 8), or below the smallest extent past 1: they index.
    let index_below: u64 = shapes
        .values()
        .flatten()
        .copied()
        .filter(|&e| e > 1)
        .min()
        .map_or(8, |e| e.min(8) as u64);
    let mut rng = Rng(SEED);
    let mut values = Vec::new();
    for p in &plan.params {
        // A scalar function's element-wise scalar arguments become arrays.
        let ty = match (plan.kind, p.elementwise, p.ty) {
            (PlanKind::Ufunc, true, ArgType::Scalar(s)) => {
                ArgType::Array(port_codegen::ir::ArrayType {
                    elem: s,
                    ndim: 1,
                    contiguous: true,
                })
            }
            (_, _, t) => t,
        };
        let v = match ty {
            ArgType::Scalar(s) => InputValue::Scalar(
                s,
                match s {
                    ScalarType::Bool => 1.0,
                    ScalarType::F32 | ScalarType::F64 | ScalarType::C64 | ScalarType::C128 => 0.75,
                    _ => ints.get(&p.name).copied().unwrap_or(INT_SCALAR) as f64,
                },
            ),
            ArgType::Array(a) => {
                let shape = shapes
                    .get(&p.name)
                    .cloned()
                    .unwrap_or_else(|| vec![n; a.ndim as usize]);
                let len: usize = shape.iter().product();
                let data = match a.elem {
                    ScalarType::Bool => {
                        ArrayData::Bool((0..len).map(|_| rng.next() & 1 == 1).collect())
                    }
                    ScalarType::I32 => ArrayData::I32(
                        (0..len)
                            .map(|_| (rng.next() % index_below) as i32)
                            .collect(),
                    ),
                    ScalarType::I64 => ArrayData::I64(
                        (0..len)
                            .map(|_| (rng.next() % index_below) as i64)
                            .collect(),
                    ),
                    ScalarType::F32 => ArrayData::F32(
                        (0..len)
                            .map(|_| (lo + (hi - lo) * rng.unit()) as f32)
                            .collect(),
                    ),
                    ScalarType::F64 => {
                        ArrayData::F64((0..len).map(|_| lo + (hi - lo) * rng.unit()).collect())
                    }
                    // Both parts over the floats' range.
                    ScalarType::C64 | ScalarType::C128 => {
                        let mut part = || lo + (hi - lo) * rng.unit();
                        let v: Vec<[f64; 2]> = (0..len).map(|_| [part(), part()]).collect();
                        let z = NdArray {
                            shape: vec![len],
                            data: ArrayData::C128(v),
                        };
                        z.convert(a.elem).data
                    }
                    // Bytes and shorts over their whole range (pixels,
                    // samples: the wrap-around is what differs); wider
                    // integers small, like int32/int64 (they index).
                    t if t.bits() <= 16 => {
                        let v: Vec<i64> = (0..len).map(|_| rng.next() as i64).collect();
                        crate::npy::from_i64s(t, &v)
                    }
                    t => {
                        let v: Vec<i64> = (0..len)
                            .map(|_| (rng.next() % index_below) as i64)
                            .collect();
                        crate::npy::from_i64s(t, &v)
                    }
                };
                let mut a = NdArray { shape, data };
                if let Some(&c) = wanted.get(&p.name) {
                    if a.elem().is_float() || a.elem().is_complex() {
                        condition(&mut a, c);
                    }
                }
                InputValue::Array(a)
            }
        };
        values.push((p.name.clone(), v));
    }
    Inputs {
        values,
        origin: InputOrigin::Generated,
        same: Vec::new(),
        how: None,
    }
}

fn type_word(t: ScalarType) -> &'static str {
    match t {
        // What a program passes as Python numbers, weak in NumPy 2's
        // promotion (the planner types them so too).
        ScalarType::Bool => "bool",
        ScalarType::I64 => "int",
        ScalarType::F64 => "float",
        // A NumPy scalar of that dtype, so that promotion matches:
        // `int8_array * np.int32(3)` is int32, `int8_array * 3` int8.
        t => crate::dtype::dtype_name(t),
    }
}

/// Writes the inputs as `.npy` files and `manifest.json` into `dir`, with
/// the constants the plan is specialised to (`literals`: the original is
/// called with them, by keyword).
pub fn write(
    dir: &Path,
    inputs: &Inputs,
    otypes: &[&str],
    literals: &[(String, String)],
) -> Result<(), VerifyError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| VerifyError::Io(dir.display().to_string(), e.to_string()))?;
    let mut args = Vec::new();
    let mut files: Vec<(&str, String)> = Vec::new();
    for (k, (name, v)) in inputs.values.iter().enumerate() {
        let first = inputs
            .same
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, f)| files.iter().find(|(n, _)| n == f));
        if let (Some((f, file)), InputValue::Array(_)) = (first, v) {
            args.push(serde_json::json!({"name": name, "file": file, "same_as": f}));
            continue;
        }
        args.push(match v {
            InputValue::Array(a) => {
                let file = format!("arg{k}.npy");
                npy::write(&dir.join(&file), a)?;
                files.push((name, file.clone()));
                serde_json::json!({"name": name, "file": file})
            }
            InputValue::Scalar(t, x) => {
                serde_json::json!({"name": name, "scalar": x, "type": type_word(*t)})
            }
            InputValue::Complex(t, re, im) => {
                serde_json::json!({"name": name, "scalar": [re, im], "type": type_word(*t)})
            }
        });
    }
    let literals: serde_json::Map<String, serde_json::Value> = literals
        .iter()
        .map(|(n, c)| (n.clone(), serde_json::Value::from(c.as_str())))
        .collect();
    let manifest = serde_json::json!({"args": args, "otypes": otypes, "literals": literals});
    let p = dir.join("manifest.json");
    std::fs::write(&p, manifest.to_string())
        .map_err(|e| VerifyError::Io(p.display().to_string(), e.to_string()))
}

/// Reads inputs written by [`write`] or unpacked from a capture.
pub fn read(dir: &Path, origin: InputOrigin) -> Result<Inputs, VerifyError> {
    let p = dir.join("manifest.json");
    let text = std::fs::read_to_string(&p)
        .map_err(|e| VerifyError::Io(p.display().to_string(), e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| VerifyError::BadData(e.to_string()))?;
    let mut values = Vec::new();
    let mut same = Vec::new();
    for a in v["args"].as_array().cloned().unwrap_or_default() {
        let name = a["name"].as_str().unwrap_or_default().to_string();
        if let Some(first) = a["same_as"].as_str() {
            same.push((name.clone(), first.to_string()));
        }
        let val = match a["file"].as_str() {
            Some(f) => InputValue::Array(npy::read(&dir.join(f))?),
            None => {
                // `bool`, `int`, `float` (Python numbers) or a dtype's name.
                let word = a["type"].as_str().unwrap_or("float");
                let t = port_rewriter::types::scalar_from_name(word).ok_or_else(|| {
                    VerifyError::BadData(format!("`{name}`: a scalar of unknown type `{word}`"))
                })?;
                let x = match &a["scalar"] {
                    serde_json::Value::Bool(b) => f64::from(u8::from(*b)),
                    // A complex value, [re, im].
                    serde_json::Value::Array(parts) => {
                        let part = |k: usize| parts.get(k).and_then(|p| p.as_f64()).unwrap_or(0.0);
                        values.push((name, InputValue::Complex(t, part(0), part(1))));
                        continue;
                    }
                    other => other.as_f64().unwrap_or(0.0),
                };
                InputValue::Scalar(t, x)
            }
        };
        values.push((name, val));
    }
    Ok(Inputs {
        values,
        origin,
        same,
        how: None,
    })
}
