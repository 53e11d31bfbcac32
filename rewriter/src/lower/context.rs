//! The lowering context: the state every pass reads and writes, and the
//! entry points through which a pass lowers the constructs inside its own.
//!
//! `Lowerer` holds one function's lowering: the type table (the lowering
//! runs to a fixed point, see [`crate::lift`]), what each host name means
//! (`HostBind`), the kernels and host steps made so far and the log of
//! rewrites. A `Region` is the kernel, device function or host level
//! being lowered, with its locals (`Local`) and the IR blocks being
//! built. The helpers here only name, declare and record: fresh names,
//! declared types, a kernel's parameters and launch, device scalars read
//! back on the host.
//!
//! Lowering is recursive — a loop body holds expressions, a helper's body
//! holds statements — but the stages are not: a pass reaches the
//! constructs inside its own through `Recurse`, declared here and
//! implemented by the front end ([`crate::lift`]) by dispatching to the
//! stage that owns each. So a pass depends on this module and on the
//! passes below it, never on the front end nor on a later stage (as
//! rustc's query providers depend on the query context, not on each
//! other).

use std::collections::{BTreeSet, HashMap, HashSet};

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, BinOp, Expr, Kernel, Module, Param, ScalarType, Stmt, Type};
use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::text_size::TextSize;

use crate::dependences::RedOp;
use crate::error::Lower;
use crate::ir_util::{join, lit};
use crate::numpy::array_expr::{ArrVal, IndexItem, Val};
use crate::plan::{HostStep, HostValue, LaunchShape};
use crate::pyast;
use crate::source::{Const, SourceFile};
use crate::types::ArgType;

/// The recursive entry points of the lowering: what a pass asks for when
/// the construct it lowers holds others (an argument, a loop body, a value
/// to store). [`crate::lift`] implements each by dispatching to the stage
/// that owns it; a pass that calls one depends on this trait only.
pub(crate) trait Recurse {
    /// A Python expression as a value: a scalar, an array template or a
    /// tuple (the front end).
    fn expr(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<Val>;
    /// A scalar value, or a refusal naming the expression (the front end).
    fn scalar(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<(Expr, ScalarType)>;
    /// `a op b` with NumPy's promotion, element by element (the front end).
    fn binop(&mut self, op: ast::Operator, a: &Val, b: &Val, line: u32) -> Lower<Val>;
    /// One component of a subscript (`i`, `1:-1`, `None`) of an axis of
    /// `extent` (the front end).
    fn index_item(
        &mut self,
        r: &mut Region,
        c: &ast::Expr,
        extent: Expr,
        line: u32,
    ) -> Lower<IndexItem>;
    /// Statements inside a kernel or a device function (the front end).
    fn block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<()>;
    /// A reduction of a value to a scalar: a loop of one thread inside a
    /// kernel, a reduction kernel at host level (the front end).
    fn reduce(&mut self, r: &mut Region, op: Reduce, v: Val, line: u32) -> Lower<Val>;
    /// Statements at host level; gives what a `return` returns
    /// (`schedule::host`).
    fn host_block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<Option<HostValue>>;
    /// A scalar the host computes, with the device elements it reads read
    /// back first (`schedule::host_schedule`).
    fn host_scalar(&mut self, e: Expr, line: u32) -> Lower<Expr>;
    /// An array value stored into an array the wrapper allocates; gives the
    /// array's name (`lower::hoist_alloc`).
    fn materialise(&mut self, hint: &str, av: &ArrVal, line: u32) -> Lower<String>;
}

/// A function's verdict and its main reason (line, text).
pub type AppVerdict = (port_analyzer::Verdict, Option<(u32, String)>);

/// Facts about the other functions of the program, from the analysis.
/// Cheap to clone: planning every function of a large program shares one
/// table of verdicts.
#[derive(Clone, Debug, Default)]
pub struct AppFacts {
    /// By `module.qualname`, and by bare name and qualname where only one
    /// function of the program has it (`Arc::make_mut` to add to it).
    pub verdicts: std::sync::Arc<HashMap<String, AppVerdict>>,
    /// Bare names whose verdicts do not apply: nested helpers the plan
    /// hoists to the module level, which the analysis judged as closures.
    pub hidden: Vec<String>,
    /// The module of the function being planned: a callee named as the
    /// caller's file names it is looked up there first.
    pub module: Option<String>,
}

impl AppFacts {
    /// The analysis's verdict on `callee`, unless it is hidden.
    pub fn verdict(&self, callee: &str) -> Option<&AppVerdict> {
        let bare = callee.rsplit('.').next().unwrap_or(callee);
        if self.hidden.iter().any(|h| h == bare) {
            return None;
        }
        if let Some(m) = &self.module {
            if let Some(v) = self.verdicts.get(&format!("{m}.{callee}")) {
                return Some(v);
            }
        }
        self.verdicts.get(callee)
    }
}

/// A selection `values[mask]`, both templates of one shape.
#[derive(Clone, Debug)]
pub struct Selection {
    pub values: ArrVal,
    pub mask: ArrVal,
    /// Where it was made.
    pub line: u32,
}

/// What each rewrite did: the notes of the places it applied, in order
/// (`rewrites::records` turns them into the plan's log).
#[derive(Default, Debug, Clone)]
pub struct RewriteLog {
    applied: Vec<(String, String)>,
}

impl RewriteLog {
    pub fn applied(&mut self, rewrite: &str, note: impl Into<String>) {
        let note = note.into();
        if !self.applied.iter().any(|(r, n)| r == rewrite && *n == note) {
            self.applied.push((rewrite.to_string(), note));
        }
    }

    /// The notes of `rewrite`, in the order they were recorded.
    pub fn notes(&self, rewrite: &str) -> Vec<&str> {
        self.applied
            .iter()
            .filter(|(r, _)| r == rewrite)
            .map(|(_, n)| n.as_str())
            .collect()
    }
}

/// What a name means at the top level of the function.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HostBind {
    /// A host scalar (an argument or computed by a host step).
    Scalar(ScalarType),
    /// A scalar that lives on the device, in `acc[0]` (a reduction's
    /// result); `weak` when it is a Python number (`acc = 1.0` updated by
    /// `acc += math.sin(…)`), which takes an array's type in NumPy 2.
    DeviceScalar {
        acc: String,
        ty: ScalarType,
        weak: bool,
    },
    /// A device array: an argument or one the wrapper allocated.
    Array(ArrayType),
    /// A view of device arrays (`row = x[0]`).
    View(ArrVal),
    /// Assigned inside a parallel loop: its value after the loop is the
    /// last iteration's, which a kernel does not have.
    Private { line: u32 },
    /// The branches of the `if` at `line` bind it differently.
    Diverged { line: u32 },
    /// A tuple of host scalars (`s = x.shape`, then `s[0]`), each fixed
    /// when the name was bound.
    Tuple(Vec<crate::numpy::array_expr::Val>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegionKind {
    Host,
    Kernel,
    Device,
}

/// A local of a kernel or device function.
#[derive(Clone, Debug)]
pub(crate) enum Local {
    /// `weak`: a Python number (a loop index, a literal, a helper's
    /// Python-number result), weak in NumPy 2's promotion on every path
    /// that binds the name.
    Scalar {
        ir: String,
        ty: ScalarType,
        weak: bool,
    },
    /// An array value bound to a name; `snapshot` holds the write counts of
    /// the arrays it reads, to refuse reading it after they change.
    Array {
        val: ArrVal,
        snapshot: Vec<(String, u32)>,
    },
}

/// A kernel, device function or the host level being lowered.
pub(crate) struct Region {
    pub kind: RegionKind,
    /// Prefix of this region's keys in the type table.
    pub scope: String,
    pub locals: HashMap<String, Local>,
    /// IR statement blocks being built, innermost last, with the Python text
    /// range each covers.
    pub blocks: Vec<(Vec<Stmt>, (TextSize, TextSize))>,
    /// Where each Python name occurs in the region's body.
    pub occurrences: HashMap<String, Vec<TextSize>>,
    /// Reduction variables of a parallel loop: Python name → (op, type).
    pub reductions: HashMap<String, (RedOp, ScalarType)>,
    /// Reduction variables started from a Python literal (`s = 0`) whose
    /// type is not settled yet: weak in NumPy 2's promotion, so the first
    /// array element added decides it (`s += img_u8[i]` makes `s` uint8).
    pub weak_reductions: HashSet<String>,
    pub atomic_stores: HashSet<TextSize>,
    /// Stores per array so far (for stale array locals).
    pub writes: HashMap<String, u32>,
    /// Inlining a callee: its locals are declared in the block the call is
    /// in (`inline_base`), where the callee's own `if`s and loops see them.
    pub inlining: bool,
    pub inline_base: usize,
    /// Device functions: types of the values returned.
    pub returns: Vec<(ScalarType, bool)>,
    /// Device functions: the return type once known (from the type table).
    pub ret_ty: Option<ScalarType>,
    /// IR names declared in each open block (parallel to `blocks`).
    pub declared: Vec<HashSet<String>>,
}

impl Region {
    pub fn new(kind: RegionKind, scope: &str) -> Region {
        Region {
            kind,
            scope: scope.to_string(),
            locals: HashMap::new(),
            blocks: vec![(Vec::new(), (TextSize::from(0), TextSize::from(u32::MAX)))],
            occurrences: HashMap::new(),
            reductions: HashMap::new(),
            weak_reductions: HashSet::new(),
            atomic_stores: HashSet::new(),
            writes: HashMap::new(),
            inlining: false,
            inline_base: 0,
            returns: Vec::new(),
            ret_ty: None,
            declared: vec![HashSet::new()],
        }
    }

    /// Whether an IR name is declared in an open block.
    pub fn visible(&self, name: &str) -> bool {
        self.declared.iter().any(|s| s.contains(name))
    }

    /// Records an IR name declared in block `k`.
    pub fn declare_in(&mut self, k: usize, name: &str) {
        if let Some(s) = self.declared.get_mut(k) {
            s.insert(name.to_string());
        }
    }

    /// Records an IR name declared in the innermost block.
    pub fn declare_here(&mut self, name: &str) {
        let k = self.declared.len() - 1;
        self.declare_in(k, name);
    }

    /// Records where names occur in `body` (for placing declarations).
    pub fn scan(&mut self, body: &[ast::Stmt]) {
        for s in body {
            for e in pyast::stmt_exprs(s) {
                pyast::walk_expr(e, &mut |x| {
                    if let ast::Expr::Name(n) = x {
                        self.occurrences
                            .entry(n.id.to_string())
                            .or_default()
                            .push(x.start());
                    }
                });
            }
            for b in pyast::child_bodies(s) {
                self.scan(b);
            }
        }
    }

    pub fn push(&mut self, s: Stmt) {
        self.blocks.last_mut().expect("a block").0.push(s);
    }

    pub fn open(&mut self, body: &[ast::Stmt]) {
        let range = match (body.first(), body.last()) {
            (Some(a), Some(b)) => (a.start(), b.end()),
            _ => (TextSize::from(0), TextSize::from(0)),
        };
        self.blocks.push((Vec::new(), range));
        self.declared.push(HashSet::new());
    }

    pub fn close(&mut self) -> Vec<Stmt> {
        self.declared.pop();
        self.blocks.pop().map(|b| b.0).unwrap_or_default()
    }

    pub fn bump_write(&mut self, array: &str) {
        *self.writes.entry(array.to_string()).or_insert(0) += 1;
    }
}

/// Names the IR or the emitted Python reserve.
const RESERVED: [&str; 40] = [
    "min",
    "max",
    "select",
    "len",
    "let",
    "kernel",
    "device",
    "fn",
    "if",
    "else",
    "while",
    "for",
    "in",
    "range",
    "parallel",
    "shared",
    "return",
    "break",
    "continue",
    "syncthreads",
    "true",
    "false",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "atomic_add",
    "atomic_sub",
    "atomic_min",
    "atomic_max",
    "atomic_exch",
    "atomic_cas",
    "cuda",
    "math",
    "np",
    "numba",
    "float32",
    "float64",
    "int32",
    "int64",
];

/// The names a fresh name must not take: the module's top-level names
/// (made once per file and shared, not copied per function: a file of
/// thousands of functions made that quadratic), and the function's own
/// and the ones made so far.
#[derive(Clone)]
pub struct UsedNames<'a> {
    module: &'a HashSet<String>,
    pub(crate) own: HashSet<String>,
}

impl<'a> UsedNames<'a> {
    pub fn new(module: &'a HashSet<String>) -> Self {
        UsedNames {
            module,
            own: HashSet::new(),
        }
    }

    /// Adds a name; false when it was taken already.
    pub fn insert(&mut self, name: String) -> bool {
        !self.module.contains(&name) && self.own.insert(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.own.contains(name) || self.module.contains(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.module.iter().chain(&self.own)
    }
}

/// The lowering of one function.
pub(crate) struct Lowerer<'a> {
    pub src: &'a SourceFile,
    pub facts: &'a AppFacts,
    /// The function's bare name (kernel names start with it).
    pub fn_name: String,
    pub types: HashMap<String, ScalarType>,
    pub observed: HashMap<String, ScalarType>,
    /// Types of the *weak* values (Python literals, NEP 50) bound to a
    /// host name: they take the type of the strong values bound to the
    /// same name, as NumPy casts a Python float to float32 when it meets
    /// one (`beta = 1.0` then `beta *= x_f32` is a float32 loop variable).
    pub observed_weak: HashMap<String, ScalarType>,
    /// Expressions whose type depends on which argument of a built-in
    /// `min`/`max` won (`Choice`), by their range in the source: the call
    /// itself (`math_calls::builtin_choice_of_python_number`), and what
    /// computes on it while the alternatives still give different types
    /// (`(x_f64[i] < 0.5) + min(s, b_f32[i])` is float64 or float32). A
    /// returned value that is one has no one type.
    pub python_choices: HashMap<(u32, u32), Choice>,
    /// Names whose last binding is such a value, or a `min`/`max`
    /// reduction started from a value of another type (`m = 0.0`, then
    /// `m = max(m, x_f32[i])`): reading one is a choice too.
    pub choice_names: HashMap<String, Choice>,
    /// Names the function binds inside a loop, an `if` or a `try`: an
    /// alias of a whole array (`p = r`) bound to one of them before the
    /// block is a run-time binding, not a compile-time view, since the
    /// block may rebind it.
    pub loop_bound: HashSet<String>,
    /// Names bound to a boolean-mask selection (`v = x[m]`), which only
    /// reductions may read (`lower::masked`).
    pub masked: HashMap<String, Selection>,
    /// Each host scalar's last binding in program order: the value's own
    /// type (before the cast to the name's joined type) and whether it is
    /// weak. Reading a weak one gives a weak operand, as the Python float
    /// does.
    pub bound_as: HashMap<String, (ScalarType, bool)>,
    /// The distinct types of the strong values bound to each name.
    pub bound_types: HashMap<String, Vec<ScalarType>>,
    /// Whole reductions at the top level of the function whose starting
    /// value has another type than the reduction's (`acc = 0`, then
    /// `acc += x_u64[i]`): by the reduction's device accumulator, the host
    /// scalars holding the loop's trip count and the starting value, the
    /// starting value's type and whether it is a Python number. A returned
    /// result read back from one is `HostValue::ScalarOrStart`.
    pub empty_start: HashMap<String, (String, String, ScalarType, bool)>,
    /// Names bound to a strong value in the fixed point's last pass.
    pub strong_last: HashSet<String>,
    /// The least value of each loop variable in scope (IR names): an index
    /// that cannot go below 0 is used as is, any other counts from the end
    /// when negative, as Python's does (`array_expr::least`).
    pub floors: HashMap<String, i64>,
    /// Device functions whose every `return` gives a Python number.
    pub weak_returns: HashSet<String>,
    /// The function is one Numba compiles: a number it returns reaches
    /// its caller as a Python number (a float32 as a float).
    pub numba_boxes: bool,
    pub module: Module,
    pub steps: Vec<HostStep>,
    pub log: RewriteLog,
    pub host: HashMap<String, HostBind>,
    pub used: UsedNames<'a>,
    pub mutated: BTreeSet<String>,
    pub params: Vec<(String, ArgType)>,
    /// Device functions made so far: key (callee and argument types) → name.
    pub device_fns: HashMap<String, String>,
    pub call_depth: usize,
    /// The helpers being inlined at host level, outermost first, with
    /// their first and last lines.
    pub inline_stack: Vec<(String, (u32, u32))>,
    /// PORT204 findings of the analysis: (line, message).
    pub analysis_scans: Vec<(u32, String)>,
    /// Device arrays holding a reduction's result.
    pub accs: HashSet<String>,
    /// One line per kernel saying what it is (its docstring).
    pub docs: std::collections::BTreeMap<String, String>,
    /// What the function returns (kernels plans).
    pub ret: Option<HostValue>,
    /// Scalar functions: parameters, outputs, their types.
    pub ufunc: Option<(Vec<crate::plan::PlanParam>, HostValue, Vec<ScalarType>)>,
    /// How many host loops and `if`s enclose the statement being lowered.
    pub host_depth: usize,
    /// The host loops being lowered, innermost last: line, and why the
    /// loop stays on the host.
    pub loop_lines: Vec<(u32, String)>,
    /// Every device array a kernel writes (parameters or not).
    pub written: BTreeSet<String>,
    /// Device-array names rebound at run time: (target, source).
    pub rebinds: Vec<(String, String)>,
    /// Temporaries of one statement, which a loop may allocate once.
    pub scratch: HashSet<String>,
    /// Kernels of one thread writing one element: kernel → line.
    pub tiny: HashMap<String, u32>,
    /// Extents taken to be equal since the last launch (the `shapes`
    /// rewrite): guards before the next one.
    pub shape_facts: Vec<crate::numpy::extents::Fact>,
    /// Axes of array arguments planned as a literal 1 (the inputs'
    /// extent there, which NumPy broadcasts).
    pub unit_dims: Vec<(String, u8)>,
    /// Scalar names (IR names) whose values come from the data: their
    /// Python int arithmetic is checked for overflow (`python_ints`).
    pub data_ints: HashSet<String>,
}

impl<'a> Lowerer<'a> {
    pub fn new(
        src: &'a SourceFile,
        facts: &'a AppFacts,
        fn_name: &str,
        types: HashMap<String, ScalarType>,
    ) -> Lowerer<'a> {
        let mut used = UsedNames::new(src.module_names());
        let mut loop_bound = HashSet::new();
        // Every identifier of the function, so that fresh names never capture one.
        if let Some(f) = src
            .functions_named(fn_name)
            .into_iter()
            .find(|f| f.def.name.as_str() == fn_name)
        {
            for a in &f.def.args.args {
                used.insert(a.def.arg.to_string());
            }
            loop_bound = pyast::names_bound_in_blocks(&f.def.body);
            for n in pyast::names_in(&f.def.body) {
                used.insert(n);
            }
        }
        Lowerer {
            src,
            facts,
            fn_name: fn_name.to_string(),
            types,
            observed: HashMap::new(),
            observed_weak: HashMap::new(),
            python_choices: HashMap::new(),
            choice_names: HashMap::new(),
            bound_as: HashMap::new(),
            bound_types: HashMap::new(),
            empty_start: HashMap::new(),
            strong_last: HashSet::new(),
            floors: HashMap::new(),
            weak_returns: HashSet::new(),
            numba_boxes: false,
            masked: HashMap::new(),
            loop_bound,
            module: Module::default(),
            steps: Vec::new(),
            log: RewriteLog::default(),
            host: HashMap::new(),
            used,
            mutated: BTreeSet::new(),
            params: Vec::new(),
            device_fns: HashMap::new(),
            call_depth: 0,
            inline_stack: Vec::new(),
            analysis_scans: Vec::new(),
            accs: HashSet::new(),
            docs: Default::default(),
            ret: None,
            ufunc: None,
            host_depth: 0,
            loop_lines: Vec::new(),
            written: BTreeSet::new(),
            rebinds: Vec::new(),
            scratch: HashSet::new(),
            tiny: HashMap::new(),
            shape_facts: Vec::new(),
            unit_dims: Vec::new(),
            data_ints: HashSet::new(),
        }
    }

    /// A name not used anywhere in the file or the plan so far.
    pub fn fresh(&mut self, base: &str) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut k = 2;
        while self.used.contains(&name) || RESERVED.contains(&name.as_str()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        name
    }

    /// The parallel loop and launch of a kernel with one thread per
    /// element of an array of `shape` (C order), each running `body` with
    /// `vars` bound to its element's indices: a 1-D grid over one
    /// dimension, a 2-D grid over two, and over three or more one 1-D grid
    /// over the flat index, unflattened into `vars`. (Two dimensions in
    /// the grid and the rest looped by each thread gave a 32⁴ array 1024
    /// threads, each walking 1024 elements 4 KiB apart from its
    /// neighbours': on the H200 a 4-D softmax's elementwise kernels took
    /// 0.95 ms where CuPy's took 82 µs.)
    pub fn element_grid(
        &mut self,
        vars: &[String],
        shape: &[Expr],
        body: Vec<Stmt>,
    ) -> (Stmt, LaunchShape) {
        if shape.len() == 2 {
            let pfor = Stmt::ParallelFor(port_codegen::ir::ParallelFor {
                vars: vars[..2].to_vec(),
                extents: shape.to_vec(),
                body,
            });
            let launch = LaunchShape::Grid2 {
                rows: shape[0].clone(),
                cols: shape[1].clone(),
            };
            return (pfor, launch);
        }
        let (pfor, n) = self.flat_loop(vars, shape, body);
        (pfor, LaunchShape::Grid1 { n })
    }

    /// One parallel loop over the elements of an array of `shape`, for a
    /// 1-D grid, and its number of items: over its one dimension, or over
    /// the flat index (C order) unflattened into `vars` (one thread for an
    /// empty shape).
    pub fn flat_loop(&mut self, vars: &[String], shape: &[Expr], body: Vec<Stmt>) -> (Stmt, Expr) {
        let (var, n, body) = match shape {
            [] => (self.fresh("one"), i64(1), body),
            [n] => (vars[0].clone(), n.clone(), body),
            _ => {
                let flat = self.fresh("flat");
                let refs: Vec<&String> = vars.iter().take(shape.len()).collect();
                let mut inner = unflatten(&flat, &refs, shape);
                inner.extend(body);
                let n = shape.iter().cloned().reduce(mul).expect("a dimension");
                (flat, n, inner)
            }
        };
        let pfor = Stmt::ParallelFor(port_codegen::ir::ParallelFor {
            vars: vec![var],
            extents: vec![n.clone()],
            body,
        });
        (pfor, n)
    }

    /// A name for a local a kernel declares for the rest of the block (a
    /// temporary, an accumulator): `base`, `base_2`, … avoiding every name
    /// in scope, the function's own identifiers and the host's names.
    pub fn local_temp(&mut self, r: &mut Region, base: &str) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut k = 2;
        while r.visible(&name)
            || self.used.contains(&name)
            || self.host.contains_key(&name)
            || RESERVED.contains(&name.as_str())
        {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        r.declare_here(&name);
        name
    }

    /// Names for the variables of loops that open and close right here
    /// (element loops): `i`, `j`, … unless in scope, a host name, or
    /// mentioned by `exprs`.
    pub fn loop_vars(&self, r: &Region, first: usize, n: usize, exprs: &[&Expr]) -> Vec<String> {
        let taken = names_used(exprs);
        let mut out: Vec<String> = Vec::new();
        for k in first..first + n {
            let base = loop_var_name(k);
            let mut name = base.to_string();
            let mut s = 2;
            while taken.contains(&name)
                || out.contains(&name)
                || r.visible(&name)
                || self.host.contains_key(&name)
                || RESERVED.contains(&name.as_str())
            {
                name = format!("{base}_{s}");
                s += 1;
            }
            out.push(name);
        }
        out
    }

    /// Loop variables for a kernel built from templates: `i`, `j`, … unless
    /// the expressions already use those names.
    pub fn element_vars(&mut self, n: usize, exprs: &[&Expr]) -> Vec<String> {
        let taken = names_used(exprs);
        let mut out: Vec<String> = Vec::new();
        for k in 0..n {
            let mut name = loop_var_name(k).to_string();
            let mut s = 2;
            while taken.contains(&name) || out.contains(&name) {
                name = format!("{}_{s}", loop_var_name(k));
                s += 1;
            }
            out.push(name);
        }
        out
    }

    /// A name for a kernel-local variable: `base`, or `base_2`, … when the
    /// kernel's other code or the function's own names already use it.
    pub fn local_name(&self, base: &str, taken: &HashSet<String>) -> String {
        let mut name = base.to_string();
        let mut k = 2;
        while taken.contains(&name) || RESERVED.contains(&name.as_str()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        name
    }

    /// A kernel name: `{function}_{what}`, unique in the module and file.
    pub fn kernel_name(&mut self, what: &str) -> String {
        let base = if what.is_empty() {
            format!("{}_kernel", self.fn_name)
        } else {
            format!("{}_{what}", self.fn_name)
        };
        self.fresh(&base)
    }

    /// Whether `name` is a scalar argument that callers pass as a Python
    /// `int`, `float` or `bool` (signature `int64`, `float64`, `boolean`):
    /// such a value is *weak* in NumPy's promotion, like a literal
    /// (`img_u8 + delta` stays uint8).
    pub(crate) fn python_scalar_param(&self, name: &str, t: ScalarType) -> bool {
        python_number_type(t)
            && self
                .params
                .iter()
                .any(|(p, a)| p == name && *a == ArgType::Scalar(t))
    }

    /// Records the type a variable is given and returns its declared type.
    pub fn declare_type(&mut self, key: &str, t: ScalarType) -> ScalarType {
        let types = self.bound_types.entry(key.to_string()).or_default();
        if !types.contains(&t) {
            types.push(t);
        }
        let seen = self.observed.get(key).map_or(t, |&o| join(o, t));
        self.observed.insert(key.to_string(), seen);
        self.types.get(key).copied().unwrap_or(t)
    }

    /// `declare_type` for a value that may be weak (a Python literal).
    pub fn declare_type_weak(&mut self, key: &str, t: ScalarType, weak: bool) -> ScalarType {
        if !weak {
            return self.declare_type(key, t);
        }
        let seen = self.observed_weak.get(key).map_or(t, |&o| join(o, t));
        self.observed_weak.insert(key.to_string(), seen);
        let now = match self.observed.get(key) {
            Some(&strong) => crate::ir_util::promote(seen, true, strong, false),
            None => seen,
        };
        self.types.get(key).copied().unwrap_or(now)
    }

    /// Whether the kernel local `key` is weak where it is read: no binding
    /// of it was strong, in this pass so far or in the last one (a loop
    /// may rebind it strong after the read).
    pub fn weak_local(&self, key: &str) -> bool {
        !self.observed.contains_key(key) && !self.strong_last.contains(key)
    }

    /// Every name's type after this pass: strong values join; weak ones
    /// take the strong type when there is one (NumPy 2's promotion).
    pub fn observed_types(&self) -> HashMap<String, ScalarType> {
        let mut all = self.observed.clone();
        for (k, &w) in &self.observed_weak {
            let t = match all.get(k) {
                Some(&strong) => crate::ir_util::promote(w, true, strong, false),
                None => w,
            };
            all.insert(k.clone(), t);
        }
        all
    }

    /// The choice the value of `e` is (`python_choices`), if any.
    pub fn choice_of(&self, e: &impl Ranged) -> Option<Choice> {
        let r = e.range();
        self.python_choices
            .get(&(r.start().to_u32(), r.end().to_u32()))
            .copied()
    }

    /// Records that the value of `e` is `choice` (nothing for `None`).
    pub fn note_choice(&mut self, e: &impl Ranged, choice: Option<Choice>) {
        if let Some(c) = choice {
            let r = e.range();
            self.python_choices
                .insert((r.start().to_u32(), r.end().to_u32()), c);
        }
    }

    /// `name = value`: `name` is a choice while its last binding is one.
    pub fn bind_choice(&mut self, name: &str, value: &impl Ranged) {
        match self.choice_of(value) {
            Some(c) => self.choice_names.insert(name.to_string(), c),
            None => self.choice_names.remove(name),
        };
    }

    /// The types the value `v` of the expression `e` can have: a
    /// choice's two, else its own (an array's element type, strong).
    pub fn alts_of(&self, e: &ast::Expr, v: &Val) -> Vec<(ScalarType, bool)> {
        if let Some(c) = self.choice_of(e) {
            return c.alts.to_vec();
        }
        match v {
            Val::Scalar(_, t, weak) => vec![(*t, *weak)],
            Val::Array(a) => vec![(a.elem, false)],
            Val::Tuple(_) => Vec::new(),
        }
    }

    /// `e`, computed from `operands` (each an expression and its value),
    /// is a choice when one of them is and the alternatives still give
    /// different types (`op`: a binary or unary operator, or `None` for
    /// a value that is one of the operands, as `min`, `max` and `a if c
    /// else b` are).
    pub fn pass_choice(
        &mut self,
        e: &impl Ranged,
        op: Option<Result<ast::Operator, ast::UnaryOp>>,
        operands: &[(&ast::Expr, &Val)],
    ) {
        let Some(origin) = operands.iter().find_map(|(x, _)| self.choice_of(*x)) else {
            return;
        };
        let sets: Vec<Vec<(ScalarType, bool)>> =
            operands.iter().map(|(x, v)| self.alts_of(x, v)).collect();
        let alts = match (op, sets.as_slice()) {
            (Some(Ok(o)), [a, b]) => crate::dtypes::alternatives(Ok(o), a, b),
            (Some(Err(u)), [a]) => crate::dtypes::alternatives(Err(u), a, &[]),
            (None, _) => {
                let mut all: Vec<(ScalarType, bool)> = Vec::new();
                for x in sets.into_iter().flatten() {
                    if !all.iter().any(|(t, _)| *t == x.0) {
                        all.push(x);
                    }
                }
                all
            }
            _ => return,
        };
        let choice = Choice::among(origin.line, &alts).map(|c| Choice {
            branch: origin.branch,
            ..c
        });
        self.note_choice(e, choice);
    }

    /// `name op= value`: `name` is a choice after it when the update
    /// passes one on (`acc += min(s, x_f32[i])` of a float64 `acc` is
    /// not: float64 either way).
    pub fn aug_choice(&mut self, a: &ast::StmtAugAssign, cur: &Val, rhs: &Val) {
        self.pass_choice(a, Some(Ok(a.op)), &[(&a.target, cur), (&a.value, rhs)]);
        if let ast::Expr::Name(n) = a.target.as_ref() {
            self.bind_choice(n.id.as_str(), a);
        }
    }

    /// The function of this file a call refers to, if any.
    pub fn app_function(&self, func: &ast::Expr) -> Option<String> {
        let ast::Expr::Name(n) = func else {
            return None;
        };
        let id = n.id.as_str();
        if self.src.imports.contains_key(id) {
            return None;
        }
        self.src.module_function(id).map(|_| id.to_string())
    }

    /// The parameters a kernel body needs: every array it reads or writes
    /// and every host scalar it uses, argument order first.
    pub fn kernel_params(&self, body: &[Stmt], shared: &[String]) -> Vec<Param> {
        let mut declared: HashSet<String> = shared.iter().cloned().collect();
        let mut order: Vec<String> = Vec::new();
        collect_free(body, &mut declared, &mut order);
        let mut params: Vec<Param> = Vec::new();
        let push = |name: &str, params: &mut Vec<Param>| {
            if params.iter().any(|p| p.name == name) {
                return;
            }
            let ty = match self.host.get(name) {
                Some(HostBind::Scalar(t)) => Type::Scalar(*t),
                Some(HostBind::Array(t)) => Type::Array(*t),
                _ => match self.params.iter().find(|(p, _)| p == name) {
                    Some((_, t)) => t.ir(),
                    None => return,
                },
            };
            params.push(Param {
                name: name.to_string(),
                ty,
            });
        };
        for (p, _) in &self.params {
            if order.contains(p) {
                push(p, &mut params);
            }
        }
        for n in &order {
            push(n, &mut params);
        }
        params
    }

    /// The recorded facts, as guards pushed before the launch about to be
    /// pushed (the log names them once `shapes::place_guards` has kept
    /// those the wrapper checks).
    pub(crate) fn flush_guards(&mut self) {
        let facts = std::mem::take(&mut self.shape_facts);
        for f in facts {
            let guard = crate::plan::ShapeGuard {
                lhs_text: crate::numpy::extents::extent_text(&f.lhs),
                rhs_text: crate::numpy::extents::extent_text(&f.rhs),
                lhs: f.lhs,
                rhs: f.rhs,
                line: f.line,
                what: f.what,
                specialised: false,
                relation: crate::plan::Relation::Eq,
            };
            self.steps.push(HostStep::Guard(guard));
        }
    }

    /// Adds a kernel to the module and the launch to the host steps.
    pub fn add_kernel(
        &mut self,
        name: String,
        body: Vec<Stmt>,
        shared: Vec<port_codegen::ir::SharedArray>,
        shape: crate::plan::LaunchShape,
        doc: String,
    ) -> Lower<()> {
        // A kernel of an inlined helper's line (`Line 5 of …`) says whose
        // line it is.
        let line: Option<u32> = doc
            .strip_prefix("Line ")
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok());
        let helper = self
            .inline_stack
            .iter()
            .rev()
            .find(|(_, (a, b))| line.is_some_and(|l| l >= *a && l <= *b));
        let doc = match helper {
            Some((h, _)) => doc.replacen(
                &format!("of `{}`", self.fn_name),
                &format!("of `{h}` (inlined into `{}`)", self.fn_name),
                1,
            ),
            None => doc,
        };
        self.docs.insert(name.clone(), doc);
        let shared_names: Vec<String> = shared.iter().map(|s| s.name.clone()).collect();
        let mut body = body;
        // A kernel takes no complex scalar: the host passes its parts and
        // the kernel puts them back together.
        let mut prelude = Vec::new();
        let mut params = Vec::new();
        for p in self.kernel_params(&body, &shared_names) {
            let t = match p.ty {
                Type::Scalar(t) if t.is_complex() => t,
                _ => {
                    params.push(p);
                    continue;
                }
            };
            let part_t = t.component();
            let z = p.name;
            let (re, im) = (
                self.fresh(&format!("{z}_re")),
                self.fresh(&format!("{z}_im")),
            );
            for (n, part) in [
                (&re, port_codegen::ir::Part::Re),
                (&im, port_codegen::ir::Part::Im),
            ] {
                self.steps.push(HostStep::Scalar {
                    name: n.clone(),
                    ty: part_t,
                    value: Expr::Part(part, Box::new(var(&z))),
                });
                self.host.insert(n.clone(), HostBind::Scalar(part_t));
                params.push(Param {
                    name: n.clone(),
                    ty: Type::Scalar(part_t),
                });
            }
            prelude.push(let_(
                &z,
                t,
                Expr::Complex(Box::new(var(&re)), Box::new(var(&im))),
            ));
        }
        if !prelude.is_empty() {
            prelude.append(&mut body);
            body = prelude;
        }
        let args = params.iter().map(|p| p.name.clone()).collect();
        let shape = self.hostify_launch(shape);
        self.module.kernels.push(Kernel {
            name: name.clone(),
            params,
            shared,
            body,
        });
        self.flush_guards();
        self.steps.push(HostStep::Launch {
            kernel: name,
            args,
            shape,
        });
        Ok(())
    }

    fn hostify_launch(&mut self, shape: crate::plan::LaunchShape) -> crate::plan::LaunchShape {
        use crate::plan::LaunchShape as L;
        match shape {
            L::Grid1 { n } => L::Grid1 { n: self.hostify(n) },
            L::Grid2 { rows, cols } => L::Grid2 {
                rows: self.hostify(rows),
                cols: self.hostify(cols),
            },
            L::Reduce { n } => L::Reduce { n: self.hostify(n) },
            L::Blocks { n } => L::Blocks { n: self.hostify(n) },
            L::OneBlock => L::OneBlock,
            L::Persistent { threads } => L::Persistent { threads },
        }
    }

    /// A host expression: device scalars it reads are brought back first.
    pub fn hostify(&mut self, e: Expr) -> Expr {
        let mut accs: Vec<String> = Vec::new();
        port_codegen::ir::walk_expr(&e, &mut |x| {
            if let Expr::Load(er) = x {
                if !accs.contains(&er.array) {
                    accs.push(er.array.clone());
                }
            }
        });
        let mut map: HashMap<String, String> = HashMap::new();
        for acc in accs {
            let (pyname, ty) = match self.host.iter().find_map(|(k, b)| match b {
                HostBind::DeviceScalar { acc: a, ty, .. } if *a == acc => Some((k.clone(), *ty)),
                _ => None,
            }) {
                Some(x) => x,
                None => {
                    let ty = match self.host.get(&acc) {
                        Some(HostBind::Array(t)) => t.elem,
                        _ => ScalarType::F64,
                    };
                    (acc.clone(), ty)
                }
            };
            // The Python name now holds the value on the host.
            let host_name = if pyname == acc {
                let base = acc.split("_acc").next().unwrap_or(&acc).to_string();
                self.fresh(&base)
            } else {
                pyname.clone()
            };
            self.steps.push(HostStep::ReadBack {
                name: host_name.clone(),
                ty,
                array: acc.clone(),
            });
            self.host.insert(host_name.clone(), HostBind::Scalar(ty));
            self.bound_as.insert(host_name.clone(), (ty, false));
            map.insert(acc, host_name);
        }
        if map.is_empty() {
            return e;
        }
        crate::ir_util::map_expr(&e, &|x| match x {
            Expr::Load(er) => map.get(&er.array).map(|n| var(n)),
            _ => None,
        })
    }
}

/// A value CPython gives with one type or another depending on the data:
/// Python's built-in `min`/`max` returns the winning argument itself, a
/// Python number on some calls and a NumPy scalar of another type on
/// others; `a if c else b` is whichever branch ran (`branch`). `alts` are
/// the two types, each with whether it is a Python number; `line` is the
/// `min`/`max`'s or the conditional's. A kernel's value has one type, so
/// port computes with the joined one and refuses where the difference
/// reaches the caller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub line: u32,
    pub alts: [(ScalarType, bool); 2],
    pub branch: bool,
}

impl Choice {
    /// The choice among `alts` when they hold two dtypes, else `None`.
    pub fn among(line: u32, alts: &[(ScalarType, bool)]) -> Option<Choice> {
        // The Python number first, as the message reads.
        match alts {
            [a, b, ..] => Some(Choice {
                line,
                alts: if b.1 && !a.1 { [*b, *a] } else { [*a, *b] },
                branch: false,
            }),
            _ => None,
        }
    }
}

/// Reductions port rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
}

impl Reduce {
    pub fn op(self) -> RedOp {
        match self {
            Reduce::Sum | Reduce::Mean => RedOp::Sum,
            Reduce::Max => RedOp::Max,
            Reduce::Min => RedOp::Min,
            Reduce::Prod => RedOp::Prod,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Mean => "mean",
            Reduce::Max => "max",
            Reduce::Min => "min",
            Reduce::Prod => "prod",
        }
    }
}

/// The identity of a reduction operator for type `t`.
pub fn identity(op: RedOp, t: ScalarType) -> Expr {
    match op {
        RedOp::Sum => lit(t, 0.0),
        RedOp::Prod => lit(t, 1.0),
        RedOp::Max => match t {
            ScalarType::Bool => bool(false),
            ScalarType::I32 => i32(i32::MIN),
            ScalarType::I64 => i64(i64::MIN),
            t if t.is_unsigned() => lit(t, 0.0),
            t if t.is_int() => lit(t, -(2f64.powi(t.bits() as i32 - 1))),
            _ => lit(t, f64::NEG_INFINITY),
        },
        RedOp::Min => match t {
            ScalarType::Bool => bool(true),
            ScalarType::I32 => i32(i32::MAX),
            ScalarType::I64 => i64(i64::MAX),
            // All ones: the largest unsigned value.
            t if t.is_unsigned() => cast(t, i64(-1)),
            t if t.is_int() => lit(t, 2f64.powi(t.bits() as i32 - 1) - 1.0),
            _ => lit(t, f64::INFINITY),
        },
    }
}

/// `acc op x`.
pub fn combine(op: RedOp, acc: Expr, x: Expr) -> Expr {
    match op {
        RedOp::Sum => add(acc, x),
        RedOp::Prod => mul(acc, x),
        RedOp::Max => binary(BinOp::Max, acc, x),
        RedOp::Min => binary(BinOp::Min, acc, x),
    }
}

/// Python identifiers that clash with IR or emitted-Python names get a `_`.
pub fn sanitize(name: &str) -> String {
    let clash = RESERVED.contains(&name)
        || ScalarType::from_name(name).is_some()
        || port_codegen::ir::MathFn::from_name(name).is_some()
        || name.starts_with("__");
    if clash {
        format!("{}_", name.trim_start_matches('_'))
    } else {
        name.to_string()
    }
}

/// Names of element-loop variables: i, j, k, then l, m.
pub fn loop_var_name(k: usize) -> &'static str {
    ["i", "j", "k", "l", "m"].get(k).copied().unwrap_or("n")
}

pub fn stmt_name(s: &ast::Stmt) -> &'static str {
    match s {
        ast::Stmt::With(_) | ast::Stmt::AsyncWith(_) => "a `with` block",
        ast::Stmt::Try(_) | ast::Stmt::TryStar(_) => "`try`/`except`",
        ast::Stmt::Raise(_) => "`raise`",
        ast::Stmt::FunctionDef(_) | ast::Stmt::AsyncFunctionDef(_) => {
            "a nested function that reads names of the function around it (one that reads none is planned as a helper; move this one to the module level and pass what it reads as arguments)"
        }
        ast::Stmt::ClassDef(_) => "a class definition",
        ast::Stmt::Global(_) | ast::Stmt::Nonlocal(_) => "`global`/`nonlocal`",
        ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) => "an import",
        ast::Stmt::Delete(_) => "`del`",
        ast::Stmt::Match(_) => "`match`",
        ast::Stmt::While(_) => "a `while` loop",
        ast::Stmt::If(_) => "an `if`",
        _ => "this statement",
    }
}

/// Free variables and arrays of a kernel body, in order of first use.
fn collect_free(body: &[Stmt], declared: &mut HashSet<String>, order: &mut Vec<String>) {
    let note = |name: &str, declared: &HashSet<String>, order: &mut Vec<String>| {
        if !declared.contains(name) && !order.iter().any(|o| o == name) {
            order.push(name.to_string());
        }
    };
    let exprs = |e: &Expr, declared: &HashSet<String>, order: &mut Vec<String>| {
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Var(n) => note(n, declared, order),
            Expr::Shape { array, .. } => note(array, declared, order),
            Expr::Load(r) | Expr::Atomic(_, r, _) | Expr::AtomicCas(r, _, _) => {
                note(&r.array, declared, order)
            }
            _ => {}
        });
    };
    for s in body {
        match s {
            Stmt::Let { name, init, .. } => {
                exprs(init, declared, order);
                declared.insert(name.clone());
            }
            Stmt::Assign { value, .. } => exprs(value, declared, order),
            Stmt::Store { target, value } => {
                let as_load = Expr::Load(target.clone());
                exprs(&as_load, declared, order);
                exprs(value, declared, order);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                exprs(cond, declared, order);
                let mut d1 = declared.clone();
                collect_free(then_body, &mut d1, order);
                let mut d2 = declared.clone();
                collect_free(else_body, &mut d2, order);
            }
            Stmt::While { cond, body } => {
                exprs(cond, declared, order);
                let mut d = declared.clone();
                collect_free(body, &mut d, order);
            }
            Stmt::For {
                var: v,
                start,
                stop,
                step,
                body,
            } => {
                exprs(start, declared, order);
                exprs(stop, declared, order);
                exprs(step, declared, order);
                let mut d = declared.clone();
                d.insert(v.clone());
                collect_free(body, &mut d, order);
            }
            Stmt::ParallelFor(p) => {
                for e in &p.extents {
                    exprs(e, declared, order);
                }
                let mut d = declared.clone();
                d.extend(p.vars.iter().cloned());
                collect_free(&p.body, &mut d, order);
            }
            Stmt::Return(Some(e)) | Stmt::Eval(e) => exprs(e, declared, order),
            Stmt::Return(None) | Stmt::Break | Stmt::Continue | Stmt::Barrier => {}
        }
    }
}

/// NumPy's axis `k` of an array of `ndim` dimensions, counted from the
/// front (`-1` is the last); `None` when it is out of bounds.
pub(crate) fn axis_index(k: i64, ndim: usize) -> Option<usize> {
    let n = ndim as i64;
    (-n..n).contains(&k).then(|| k.rem_euclid(n) as usize)
}

/// The name of the array when `av` is all of a named array, unchanged.
pub fn whole_array(av: &ArrVal) -> Option<String> {
    if av.computed {
        return None;
    }
    let Expr::Load(r) = &av.body else {
        return None;
    };
    let named = ArrVal::named(
        &r.array,
        port_codegen::ir::ArrayType {
            elem: av.elem,
            ndim: av.ndim() as u8,
            contiguous: true,
        },
    );
    (named.body == av.body && named.shape == av.shape).then(|| r.array.clone())
}

/// A module constant as a value.
/// Whether a scalar argument of type `t` is one callers pass as a Python
/// number (`int64`, `float64`, `boolean`), weak in NumPy's promotion.
pub fn python_number_type(t: ScalarType) -> bool {
    matches!(t, ScalarType::I64 | ScalarType::F64 | ScalarType::Bool)
}

pub fn const_val(c: Const) -> Val {
    match c {
        Const::Int(i) => Val::Scalar(i64(i), ScalarType::I64, true),
        Const::Float(f) => Val::Scalar(f64(f), ScalarType::F64, true),
        Const::Float32(f) => Val::scalar(f32(f), ScalarType::F32),
        Const::Bool(b) => Val::Scalar(bool(b), ScalarType::Bool, true),
    }
}

/// Every variable and array name the expressions mention: loop variables
/// chosen for new loops must avoid them.
fn names_used(exprs: &[&Expr]) -> HashSet<String> {
    let mut taken = HashSet::new();
    for e in exprs {
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Var(v) => {
                taken.insert(v.clone());
            }
            Expr::Shape { array, .. } => {
                taken.insert(array.clone());
            }
            Expr::Load(r) => {
                taken.insert(r.array.clone());
            }
            _ => {}
        });
    }
    taken
}

/// `vars` bound to the indices of element `flat` (C order) of an array of
/// `shape`: `flat / (extents after k) % extent k` for each dimension `k`.
pub fn unflatten(flat: &str, vars: &[&String], shape: &[Expr]) -> Vec<Stmt> {
    let mut out = Vec::new();
    for (k, v) in vars.iter().enumerate() {
        let q = match shape[k + 1..].iter().cloned().reduce(mul) {
            Some(stride) => div(var(flat), stride),
            None => var(flat),
        };
        let at = if k == 0 {
            q
        } else {
            binary(BinOp::Rem, q, shape[k].clone())
        };
        out.push(let_(v, ScalarType::I64, at));
    }
    out
}
