//! The rewriter's output: a [`KernelPlan`]. It holds the kernels (port's
//! kernel IR, one module) and the host steps of the wrapper that replaces the
//! original function — allocations, scalar computations, launches in order —
//! so that the simulator runner in `verify` and the Python back end execute
//! the same plan.

use port_codegen::ir::{self, ScalarType};
use serde::{Deserialize, Serialize};

use crate::types::ArgType;

/// One argument of the original function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanParam {
    pub name: String,
    /// The type the original is called with.
    pub ty: ArgType,
    /// The type the kernels take (differs only with `--fp32`).
    pub kernel_ty: ArgType,
    /// Scalar functions only: this argument is taken element by element
    /// (an array, broadcast like a ufunc argument) rather than as one value.
    pub elementwise: bool,
}

/// What a new device array holds before the first kernel writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Fill {
    /// Uninitialised (`np.empty`): every element is written by a kernel.
    Empty,
    /// Every element set to this host value (`np.zeros`, `np.full`, the
    /// starting value of a reduction).
    Value(ir::Expr),
}

/// How a kernel is launched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LaunchShape {
    /// 1-D grid-stride kernel over `n` items ([`crate::launch::THREADS_1D`] per block).
    Grid1 { n: ir::Expr },
    /// 2-D grid-stride kernel: 16 × 16 blocks, x over `cols`, y over `rows`.
    Grid2 { rows: ir::Expr, cols: ir::Expr },
    /// Reduction kernel over `n` items: [`crate::launch::THREADS_REDUCE`]
    /// threads per block, at most [`crate::launch::REDUCE_MAX_BLOCKS`] blocks.
    Reduce { n: ir::Expr },
    /// One block of [`crate::launch::THREADS_REDUCE`] threads (the last
    /// stage of a two-stage reduction).
    OneBlock,
    /// One block of [`crate::launch::THREADS_REDUCE`] threads per item of
    /// `n` (a reduction along axes, one block per result element): at most
    /// 32 blocks per SM, the blocks striding over the rest.
    Blocks { n: ir::Expr },
    /// One block of `threads` threads running a whole host loop (a
    /// persistent kernel, [`crate::schedule::persist`]):
    /// [`crate::launch::THREADS_PERSIST`], or
    /// [`crate::launch::THREADS_REDUCE`] when it holds a reduction's
    /// block tree.
    Persistent { threads: u32 },
}

/// The comment that opens the branch of a host `if` launching a
/// reduction's kernel with one block per result element (the other branch
/// launches one thread per result element): the emitted wrapper takes the
/// other branch under Numba's CUDA simulator.
pub const BLOCK_CHOICE: &str = "one block per result element over a long reduced extent";

/// The comment that opens the branch of a host `if` launching a persistent
/// kernel (a whole host loop in one block, [`crate::schedule::persist`]);
/// the emitted wrapper, too, takes the other branch under Numba's CUDA
/// simulator, whose threads make barriers in long loops slow.
pub const PERSIST_CHOICE: &str = "the whole loop in one block: each iteration is small";

/// Whether `then`, the first branch of a host `if`, is opened by `choice`
/// ([`BLOCK_CHOICE`], [`PERSIST_CHOICE`]): the `if` then chooses between
/// two schedules of the same work.
pub fn opens_choice(then: &[HostStep], choice: &str) -> bool {
    matches!(then.first(), Some(HostStep::Comment(c)) if c.contains(choice))
}

/// One step of the host wrapper, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HostStep {
    /// `name = value`: a host scalar computed from arguments, shapes and
    /// earlier host scalars.
    Scalar {
        name: String,
        ty: ScalarType,
        value: ir::Expr,
    },
    /// A device array allocated by the wrapper (hoisted out of the kernel).
    Alloc {
        name: String,
        elem: ScalarType,
        shape: Vec<ir::Expr>,
        fill: Fill,
    },
    Launch {
        kernel: String,
        /// Names of host arrays and scalars, in the kernel's parameter order.
        args: Vec<String>,
        shape: LaunchShape,
    },
    /// `name = array[0]`: a reduction's result brought back to the host.
    ReadBack {
        name: String,
        ty: ScalarType,
        array: String,
    },
    /// `name = array[index]`: one element read back to the host (a value
    /// the program's host code needs, `alpha = -r[k]`).
    ReadElement {
        name: String,
        ty: ScalarType,
        array: String,
        index: Vec<ir::Expr>,
    },
    /// `for var in range(start, stop, step): body` kept on the host: its
    /// iterations depend on each other (a time loop, a sweep), and the
    /// data-parallel statements of its body are kernels launched in turn.
    /// After the loop `var` holds its last value, as in Python.
    Loop {
        var: String,
        start: ir::Expr,
        stop: ir::Expr,
        step: ir::Expr,
        body: Vec<HostStep>,
    },
    /// `while cond: body` on the host: `test` (reductions, read-backs)
    /// runs before each evaluation of `cond`.
    While {
        test: Vec<HostStep>,
        cond: ir::Expr,
        body: Vec<HostStep>,
    },
    /// `if cond: then else: orelse` on the host.
    If {
        cond: ir::Expr,
        then: Vec<HostStep>,
        orelse: Vec<HostStep>,
    },
    /// `break` out of the innermost host loop.
    Break,
    /// `raise E(…)` on the host: a guard of the original (`if n != m:
    /// raise ValueError(…)`, an `assert` that failed). The run stops with
    /// that error, as the original would have. `python` is the statement
    /// the wrapper runs; `what` says it for people (`ValueError: …`).
    Raise {
        line: u32,
        python: String,
        what: String,
    },
    /// `# text` in the wrapper: where a helper's inlined body starts. Does
    /// nothing.
    Comment(String),
    /// `a, b = c, d`: device-array names rebound at once to the arrays the
    /// sources name (no copy), as Python rebinds names to objects.
    Rebind {
        targets: Vec<String>,
        sources: Vec<String>,
    },
    /// `lhs == rhs` on host integers (extents of arrays, host scalars),
    /// checked before the kernels that rely on it: two extents the
    /// kernels take to be equal (NumPy's broadcasting, a store into a
    /// slice, the inner extents of a matrix product), or an extent the plan
    /// was specialised to (`mass.shape[1] == 1`). A kernel never runs on
    /// arrays whose shapes break what it was built for: it would read
    /// outside them, or broadcast the wrong way. See [`crate::lower::shapes`].
    Guard(ShapeGuard),
    /// A NumPy library routine (`np.linalg.cholesky`, `np.sort`, …) run as one step
    /// of the schedule, between launches: it reads its operands (device
    /// arrays) and writes its result into an array allocated before it.
    /// The simulator runs it on the host (operands copied back, the result
    /// copied over); a GPU computes `@` with cuBLAS and float32/float64
    /// `cholesky`/`solve`/`inv`/`det` with cuSOLVER on the device arrays
    /// (the rest on the host, as the simulator does); the emitted wrapper
    /// calls CuPy on the device arrays, or NumPy on host copies. See
    /// [`crate::lower::linalg`] and [`crate::lower::sort`].
    Library(LibraryCall),
}

/// One [`HostStep::Library`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LibraryCall {
    pub op: LibraryOp,
    /// The device arrays it reads, in NumPy's argument order, each already
    /// of the type the routine computes in.
    pub args: Vec<String>,
    /// The device array it writes, whole.
    pub out: String,
    /// The call's line.
    pub line: u32,
}

/// The routines a [`LibraryCall`] runs, with NumPy's meaning: `np.linalg`'s,
/// `@`, and the order statistics (`np.sort`, `np.median`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LibraryOp {
    /// The lower factor `L` of `a = L Lᴴ` (stacks too).
    Cholesky,
    /// `x` with `a x = b`; `b` a vector, or a stack of matrices like `a`.
    Solve,
    /// The inverse (stacks too).
    Inv,
    /// The determinant (stacks: one per matrix).
    Det,
    /// `np.linalg.lstsq(a, b, rcond=None)[0]`: the least-squares solution
    /// of minimum norm.
    Lstsq,
    /// `np.linalg.lstsq(a, b, rcond=None)[2]`: the rank found.
    LstsqRank,
    /// `np.linalg.lstsq(a, b, rcond=None)[3]`: the singular values of `a`.
    LstsqSingular,
    /// `a @ b` of two float matrices (cuBLAS's gemm on a GPU), each
    /// operand the device array given or its transpose (`ta`, `tb`: the
    /// product reads `a.T`, `b.T`).
    Matmul { ta: bool, tb: bool },
    /// `np.sort(a, axis)`: the values along `axis` in ascending order,
    /// NaNs last (`None`: of the flattened array). Which algorithm sorts
    /// changes no value, but for the order of `-0.0` and `0.0`, which
    /// compare equal.
    Sort { axis: Option<u8> },
    /// `np.median(a, axis)`: the middle value along `axis` (`None`: of the
    /// whole array), the mean of the two middle ones for an even count,
    /// NaN where a NaN is among them; in the input's float type, float64
    /// for integers and booleans.
    Median { axis: Option<u8> },
}

impl LibraryOp {
    /// The routine's NumPy name (`np.linalg.cholesky`).
    pub fn numpy_name(self) -> &'static str {
        match self {
            LibraryOp::Cholesky => "np.linalg.cholesky",
            LibraryOp::Solve => "np.linalg.solve",
            LibraryOp::Inv => "np.linalg.inv",
            LibraryOp::Det => "np.linalg.det",
            LibraryOp::Lstsq | LibraryOp::LstsqRank | LibraryOp::LstsqSingular => "np.linalg.lstsq",
            LibraryOp::Matmul { .. } => "np.matmul",
            LibraryOp::Sort { .. } => "np.sort",
            LibraryOp::Median { .. } => "np.median",
        }
    }

    /// The emitted module's helper that runs it (`_port_cholesky`).
    pub fn helper(self) -> &'static str {
        match self {
            LibraryOp::Cholesky => "_port_cholesky",
            LibraryOp::Solve => "_port_solve",
            LibraryOp::Inv => "_port_inv",
            LibraryOp::Det => "_port_det",
            LibraryOp::Lstsq | LibraryOp::LstsqRank | LibraryOp::LstsqSingular => "_port_lstsq",
            LibraryOp::Matmul { .. } => "_port_matmul",
            LibraryOp::Sort { .. } => "_port_sort",
            LibraryOp::Median { .. } => "_port_median",
        }
    }

    /// For `np.sort` and `np.median`: the axis (`None`: the flattened
    /// array); `None` for the others.
    pub fn order_axis(self) -> Option<Option<u8>> {
        match self {
            LibraryOp::Sort { axis } | LibraryOp::Median { axis } => Some(axis),
            _ => None,
        }
    }

    /// For `lstsq`: which of its four results.
    pub fn lstsq_item(self) -> Option<usize> {
        match self {
            LibraryOp::Lstsq => Some(0),
            LibraryOp::LstsqRank => Some(2),
            LibraryOp::LstsqSingular => Some(3),
            _ => None,
        }
    }
}

/// One [`HostStep::Guard`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeGuard {
    pub lhs: ir::Expr,
    pub rhs: ir::Expr,
    /// The statement that relies on it.
    pub line: u32,
    /// What relies on it, in NumPy's words (`operands could not be
    /// broadcast together`), for the error when it fails.
    pub what: String,
    /// `lhs` and `rhs` as Python (`mass.shape[1]`, `n - 2`).
    pub lhs_text: String,
    pub rhs_text: String,
    /// A guard of the specialisation (an extent of 1 the inputs had): the
    /// original function would accept other shapes, so the emitted
    /// wrapper falls back to it instead of raising.
    pub specialised: bool,
    /// How `lhs` and `rhs` must compare: equal (the default: extents the
    /// kernels take to be equal), or `lhs <= rhs` (an index range inside
    /// an array's extent, [`crate::schedule::bounds`]).
    #[serde(default, skip_serializing_if = "Relation::is_eq")]
    pub relation: Relation,
}

/// What a [`ShapeGuard`] requires of its two sides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    #[default]
    Eq,
    /// `lhs <= rhs`.
    Le,
}

impl Relation {
    pub fn is_eq(&self) -> bool {
        *self == Relation::Eq
    }

    /// The comparison as Python writes it (`==`, `<=`).
    pub fn symbol(self) -> &'static str {
        match self {
            Relation::Eq => "==",
            Relation::Le => "<=",
        }
    }

    /// Whether `lhs` and `rhs` stand in this relation.
    pub fn holds(self, lhs: i64, rhs: i64) -> bool {
        match self {
            Relation::Eq => lhs == rhs,
            Relation::Le => lhs <= rhs,
        }
    }

    /// The comparison that is true when the guard fails.
    pub fn failing(self) -> ir::CmpOp {
        match self {
            Relation::Eq => ir::CmpOp::Ne,
            Relation::Le => ir::CmpOp::Gt,
        }
    }
}

impl ShapeGuard {
    /// The message when it fails, with the values found.
    pub fn failure(&self, lhs: i64, rhs: i64) -> String {
        if self.relation == Relation::Le {
            format!(
                "line {}: {}: `{}` is {lhs} but `{}` is {rhs}",
                self.line, self.what, self.lhs_text, self.rhs_text
            )
        } else if self.specialised {
            format!(
                "line {}: {}; here `{}` is {lhs}: migrate again on inputs of this shape",
                self.line, self.what, self.lhs_text
            )
        } else {
            format!(
                "line {}: {}: `{}` is {lhs} but `{}` is {rhs}",
                self.line, self.what, self.lhs_text, self.rhs_text
            )
        }
    }
}

impl HostStep {
    /// The names this step itself binds (not its nested steps'): a host
    /// scalar, an allocation, a read-back, a loop variable, rebound names.
    pub fn binds(&self) -> Vec<&str> {
        match self {
            HostStep::Scalar { name, .. }
            | HostStep::Alloc { name, .. }
            | HostStep::ReadBack { name, .. }
            | HostStep::ReadElement { name, .. } => vec![name.as_str()],
            HostStep::Loop { var, .. } => vec![var.as_str()],
            HostStep::Rebind { targets, .. } => targets.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// The names this step reads or writes, not counting its nested steps
    /// nor the name an allocation or a scalar binds: arrays, host scalars,
    /// a launch's arguments, words of the Python a `raise` runs.
    pub fn names(&self) -> std::collections::HashSet<String> {
        fn expr(e: &ir::Expr, out: &mut std::collections::HashSet<String>) {
            ir::walk_expr(e, &mut |x| match x {
                ir::Expr::Var(v) => {
                    out.insert(v.clone());
                }
                ir::Expr::Shape { array, .. } => {
                    out.insert(array.clone());
                }
                ir::Expr::Load(r) | ir::Expr::Atomic(_, r, _) | ir::Expr::AtomicCas(r, _, _) => {
                    out.insert(r.array.clone());
                }
                _ => {}
            })
        }
        let mut out = std::collections::HashSet::new();
        match self {
            HostStep::Scalar { value, .. } => expr(value, &mut out),
            HostStep::Alloc { shape, fill, .. } => {
                shape.iter().for_each(|d| expr(d, &mut out));
                if let Fill::Value(v) = fill {
                    expr(v, &mut out);
                }
            }
            HostStep::Launch { shape, args, .. } => {
                match shape {
                    LaunchShape::Grid1 { n }
                    | LaunchShape::Reduce { n }
                    | LaunchShape::Blocks { n } => expr(n, &mut out),
                    LaunchShape::Grid2 { rows, cols } => {
                        expr(rows, &mut out);
                        expr(cols, &mut out);
                    }
                    LaunchShape::OneBlock | LaunchShape::Persistent { .. } => {}
                }
                out.extend(args.iter().cloned());
            }
            HostStep::ReadBack { array, .. } => {
                out.insert(array.clone());
            }
            HostStep::ReadElement { array, index, .. } => {
                out.insert(array.clone());
                index.iter().for_each(|i| expr(i, &mut out));
            }
            HostStep::Loop {
                start, stop, step, ..
            } => {
                expr(start, &mut out);
                expr(stop, &mut out);
                expr(step, &mut out);
            }
            HostStep::While { cond, .. } | HostStep::If { cond, .. } => expr(cond, &mut out),
            HostStep::Guard(g) => {
                expr(&g.lhs, &mut out);
                expr(&g.rhs, &mut out);
            }
            HostStep::Library(c) => {
                out.extend(c.args.iter().cloned());
                out.insert(c.out.clone());
            }
            HostStep::Rebind { targets, sources } => {
                out.extend(targets.iter().cloned());
                out.extend(sources.iter().cloned());
            }
            HostStep::Raise { python, .. } => {
                // Python the wrapper runs: every word it names.
                out.extend(
                    python
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .filter(|w| !w.is_empty())
                        .map(|w| w.strip_prefix("d_").unwrap_or(w).to_string()),
                );
            }
            HostStep::Comment(_) | HostStep::Break => {}
        }
        out
    }

    /// Calls `f` on every step, nested ones included, outer first.
    pub fn walk<'a>(steps: &'a [HostStep], f: &mut dyn FnMut(&'a HostStep)) {
        for s in steps {
            f(s);
            for b in s.bodies() {
                HostStep::walk(b, f);
            }
        }
    }

    /// Calls `f` on every step, nested ones included, to change it.
    pub fn walk_mut(steps: &mut [HostStep], f: &mut dyn FnMut(&mut HostStep)) {
        for s in steps {
            f(s);
            for b in s.bodies_mut() {
                HostStep::walk_mut(b, f);
            }
        }
    }

    /// The step lists nested in this one.
    pub fn bodies(&self) -> Vec<&[HostStep]> {
        match self {
            HostStep::Loop { body, .. } => vec![body],
            HostStep::While { test, body, .. } => vec![test, body],
            HostStep::If { then, orelse, .. } => vec![then, orelse],
            _ => Vec::new(),
        }
    }

    /// The step lists nested in this one, to change them.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<HostStep>> {
        match self {
            HostStep::Loop { body, .. } => vec![body],
            HostStep::While { test, body, .. } => vec![test, body],
            HostStep::If { then, orelse, .. } => vec![then, orelse],
            _ => Vec::new(),
        }
    }
}

/// What the wrapper returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HostValue {
    /// A device array, copied back (an argument array is copied into place
    /// and returned itself).
    Array(String),
    /// A host scalar.
    Scalar(String, ScalarType),
    /// A reduction's result (`name`, of `ty`) or, on a call where its loop
    /// ran no iteration (the host scalar `trip` is 0), the value it started
    /// as (the host scalar `start`, returned as `start_ty`, a Python number
    /// when `python`): CPython's `acc = 0` is still the int 0 when no
    /// `acc += x_u64[i]` ran, and `acc = a_f32[0]` a float32 when no
    /// `acc += x_u64[i]` widened it to float64.
    ScalarOrStart {
        name: String,
        ty: ScalarType,
        trip: String,
        start: String,
        start_ty: ScalarType,
        python: bool,
    },
    Tuple(Vec<HostValue>),
}

/// One named rewrite and what it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewriteRecord {
    pub rewrite: String,
    pub applied: bool,
    /// Where it applied, or why it did not.
    pub note: String,
}

/// How the function is migrated as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlanKind {
    /// A function with loops / array operations: kernels + a host wrapper
    /// that runs them in order.
    Kernels,
    /// A scalar function: a device function and an element kernel applying
    /// it over (broadcast) arrays, as `@vectorize(target='cuda')` would.
    Ufunc,
}

/// The migrated function: kernels, host steps, and the Python source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelPlan {
    /// The name the user gave (`normalize`, `Grid.step`).
    pub function: String,
    pub kind: PlanKind,
    pub params: Vec<PlanParam>,
    pub module: ir::Module,
    pub steps: Vec<HostStep>,
    pub ret: Option<HostValue>,
    /// Argument arrays the function writes (copied back by the wrapper).
    pub mutated: Vec<String>,
    /// Scalar functions: the element type of each output.
    pub ufunc_outputs: Vec<ScalarType>,
    pub rewrites: Vec<RewriteRecord>,
    /// float64 lowered to float32 (`--fp32`).
    pub fp32: bool,
    /// What each kernel is, one line (its docstring in the Python source).
    pub docs: std::collections::BTreeMap<String, String>,
    /// Axes of array arguments the plan is specialised to extent 1 (the
    /// inputs had extent 1 there, and NumPy broadcasts it): guarded at
    /// entry, and kept at 1 when inputs are generated.
    #[serde(default)]
    pub unit_dims: Vec<(String, u8)>,
    /// Parameters left to their defaults, which the plan is specialised
    /// to: `(name, default as written)`. The wrapper keeps them in its
    /// signature, with these defaults, and runs the original for any other
    /// value.
    #[serde(default)]
    pub defaults: Vec<(String, String)>,
    /// Parameters the plan is specialised to a constant for, which every
    /// call of the program passes (`w=None`, `mode='reflect'`): `(name,
    /// constant as Python writes it)`. The wrapper runs the original for
    /// any other value; verification calls the original with them.
    #[serde(default)]
    pub literals: Vec<(String, String)>,
    /// Pairs of parameters the program's captured call passed as one array
    /// (`clamp(y, lo, hi, y)`: `("out", "a")`), which the analysis found
    /// safe to run on a copy each (no PORT204) and verification checked so:
    /// the wrapper runs its kernels when a call passes one host array for
    /// both, instead of the original.
    #[serde(default)]
    pub same_array_ok: Vec<(String, String)>,
}

impl KernelPlan {
    /// The names the plan's caller sees: parameters, what it mutates and
    /// what it returns. A host step may never drop or privatise them.
    pub fn interface_names(&self) -> std::collections::HashSet<String> {
        fn returned(v: &HostValue, out: &mut std::collections::HashSet<String>) {
            match v {
                HostValue::Array(a) | HostValue::Scalar(a, _) => {
                    out.insert(a.clone());
                }
                HostValue::ScalarOrStart {
                    name, trip, start, ..
                } => out.extend([name.clone(), trip.clone(), start.clone()]),
                HostValue::Tuple(vs) => vs.iter().for_each(|v| returned(v, out)),
            }
        }
        let mut out: std::collections::HashSet<String> = self.mutated.iter().cloned().collect();
        out.extend(self.params.iter().map(|p| p.name.clone()));
        if let Some(r) = &self.ret {
            returned(r, &mut out);
        }
        out
    }

    /// Drops host scalars nothing reads (`d = x.shape[1]` whose uses the
    /// lowering replaced by the extent itself): the wrapper a user keeps
    /// has no unused locals.
    pub fn drop_unused_scalars(&mut self) {
        fn drop(steps: &mut Vec<HostStep>, used: &std::collections::HashSet<String>) -> bool {
            let before = steps.len();
            steps.retain(|s| !matches!(s, HostStep::Scalar { name, .. } if !used.contains(name)));
            let mut changed = steps.len() != before;
            for s in steps.iter_mut() {
                for b in s.bodies_mut() {
                    changed |= drop(b, used);
                }
            }
            changed
        }
        loop {
            let mut used = self.interface_names();
            HostStep::walk(&self.steps, &mut |s| {
                used.extend(s.names());
                // A loop's variable is bound by the loop, read by its body.
                if let HostStep::Loop { var, .. } = s {
                    used.insert(var.clone());
                }
            });
            if !drop(&mut self.steps, &used) {
                break;
            }
        }
    }

    pub fn kernel_names(&self) -> Vec<String> {
        self.module.kernels.iter().map(|k| k.name.clone()).collect()
    }
}
