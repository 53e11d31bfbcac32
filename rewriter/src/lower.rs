//! The front end: lowers the typed Python function into a [`KernelPlan`] —
//! host steps around kernels written in port's kernel IR — calling the named
//! rewrites ([`crate::rewrites`]) where their patterns occur.
//!
//! Lowering happens in *regions*: the host region (the function's top
//! level, which becomes the wrapper's steps), kernel regions (the body of a
//! parallel loop, or the element loop of an array expression) and device
//! regions (an app function called from a kernel). Values are [`Val`]s:
//! scalar IR expressions or array templates.
//!
//! Types are inferred by running the whole lowering to a fixed point: a
//! variable's declared type is the join of every type assigned to it (`s =
//! 0` then `s += x[i]` makes `s` a float), so the lowering runs again when a
//! variable's type widens (at most a few times).

use std::collections::{BTreeSet, HashMap, HashSet};

use port_codegen::ir::build::*;
use port_codegen::ir::{
    ArrayType, AtomicOp, BinOp, CmpOp, ElemRef, Expr, Kernel, Literal, Module, Param, ScalarType,
    Stmt, Type, UnaryOp,
};
use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::text_size::TextSize;

use crate::dependences::RedOp;
use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, join, lit, promote, py_mod, select};
use crate::plan::{HostStep, HostValue};
use crate::pyast;
use crate::rewrites::RewriteLog;
use crate::shapes::array_expr::{self, ArrVal, IndexItem, Val};
use crate::shapes::math_calls;
use crate::source::{Const, SourceFile};
use crate::types::ArgType;

/// Facts about the other functions of the program, from the analysis.
#[derive(Clone, Debug, Default)]
pub struct AppFacts {
    /// By bare name and qualname: verdict and its main reason (line, text).
    pub verdicts: HashMap<String, (port_analyzer::Verdict, Option<(u32, String)>)>,
}

/// What a name means at the top level of the function.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HostBind {
    /// A host scalar (an argument or computed by a host step).
    Scalar(ScalarType),
    /// A scalar that lives on the device, in `acc[0]` (a reduction's result).
    DeviceScalar { acc: String, ty: ScalarType },
    /// A device array: an argument or one the wrapper allocated.
    Array(ArrayType),
    /// A view of device arrays (`row = x[0]`).
    View(ArrVal),
    /// Assigned inside a parallel loop: its value after the loop is the
    /// last iteration's, which a kernel does not have.
    Private { line: u32 },
    /// The branches of the `if` at `line` bind it differently.
    Diverged { line: u32 },
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
    Scalar {
        ir: String,
        ty: ScalarType,
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
    pub atomic_stores: HashSet<TextSize>,
    /// Stores per array so far (for stale array locals).
    pub writes: HashMap<String, u32>,
    /// Inlining a callee: locals are declared where they are first assigned.
    pub inlining: bool,
    /// Device functions: types of the values returned.
    pub returns: Vec<ScalarType>,
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
            atomic_stores: HashSet::new(),
            writes: HashMap::new(),
            inlining: false,
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
    /// Names the function binds inside a loop: an alias of a whole array
    /// (`p = r`) bound to one of them before the loop is a run-time
    /// binding, not a compile-time view, since the loop rebinds it.
    pub loop_bound: HashSet<String>,
    /// Names bound to a boolean-mask selection (`v = x[m]`), which only
    /// reductions may read (`rewrites::masked`).
    pub masked: HashMap<String, crate::rewrites::masked::Selection>,
    /// Host names whose last binding (in program order) is a weak value:
    /// reading one gives a weak operand, as the Python float does.
    pub weak_bound: HashSet<String>,
    pub module: Module,
    pub steps: Vec<HostStep>,
    pub log: RewriteLog,
    pub host: HashMap<String, HostBind>,
    pub used: HashSet<String>,
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
}

impl<'a> Lowerer<'a> {
    pub fn new(
        src: &'a SourceFile,
        facts: &'a AppFacts,
        fn_name: &str,
        types: HashMap<String, ScalarType>,
    ) -> Lowerer<'a> {
        let mut used: HashSet<String> = src.module_names();
        let mut loop_bound = HashSet::new();
        // Every identifier of the function, so that fresh names never capture one.
        if let Some(f) = src
            .functions()
            .into_iter()
            .find(|f| f.def.name.as_str() == fn_name)
        {
            for a in &f.def.args.args {
                used.insert(a.def.arg.to_string());
            }
            loop_bound = pyast::names_bound_in_loops(&f.def.body);
            pyast::walk_stmts(&f.def.body, &mut |x| {
                for e in pyast::stmt_exprs(x) {
                    pyast::walk_expr(e, &mut |y| {
                        if let ast::Expr::Name(n) = y {
                            used.insert(n.id.to_string());
                        }
                    });
                }
            });
        }
        Lowerer {
            src,
            facts,
            fn_name: fn_name.to_string(),
            types,
            observed: HashMap::new(),
            observed_weak: HashMap::new(),
            weak_bound: HashSet::new(),
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
    fn python_scalar_param(&self, name: &str, t: ScalarType) -> bool {
        matches!(t, ScalarType::I64 | ScalarType::F64 | ScalarType::Bool)
            && self
                .params
                .iter()
                .any(|(p, a)| p == name && *a == ArgType::Scalar(t))
    }

    /// Records the type a variable is given and returns its declared type.
    pub fn declare_type(&mut self, key: &str, t: ScalarType) -> ScalarType {
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

    // ---------------------------------------------------------------
    // Names
    // ---------------------------------------------------------------

    fn lookup(&mut self, r: &mut Region, name: &str, line: u32) -> Lower<Val> {
        if let Some(sel) = self.masked.get(name) {
            return refuse(
                crate::rewrites::masked::NAME,
                line,
                format!(
                    "`{name}` is a boolean-mask selection (line {}): port takes it only reduced whole (`sum`, `mean`, `max`, `min`, `prod`, `any`, `all`, `len`, `.size`), not compacted into an array",
                    sel.line
                ),
            );
        }
        if let Some((_, ty)) = r.reductions.get(name) {
            return Ok(Val::scalar(var(&sanitize(name)), *ty));
        }
        if let Some(l) = r.locals.get(name) {
            return match l {
                Local::Scalar { ir, ty } => Ok(Val::scalar(var(ir), *ty)),
                Local::Array { val, snapshot } => {
                    for (arr, count) in snapshot {
                        if r.writes.get(arr).copied().unwrap_or(0) != *count {
                            return refuse(
                                array_expr::NAME,
                                line,
                                format!(
                                    "`{name}` is an array computed from `{arr}`, which changes before `{name}` is used: that needs a temporary array inside the kernel"
                                ),
                            );
                        }
                    }
                    Ok(Val::Array(val.clone()))
                }
            };
        }
        if r.kind != RegionKind::Device {
            if let Some(b) = self.host.get(name).cloned() {
                return match b {
                    HostBind::Scalar(t) => Ok(Val::Scalar(
                        var(name),
                        t,
                        self.weak_bound.contains(name) || self.python_scalar_param(name, t),
                    )),
                    HostBind::DeviceScalar { acc, ty } => {
                        Ok(Val::scalar(load(&acc, vec![i64(0)]), ty))
                    }
                    HostBind::Array(t) => Ok(Val::Array(ArrVal::named(name, t))),
                    HostBind::View(v) => Ok(Val::Array(v)),
                    HostBind::Diverged { line: l } => refuse(
                        crate::rewrites::host_schedule::NAME,
                        line,
                        format!(
                            "`{name}` is read after the `if` at line {l}, whose branches bind it differently (or only one does): give it one value before the `if`"
                        ),
                    ),
                    HostBind::Private { line: l } => refuse(
                        crate::dependences::NAME,
                        line,
                        format!(
                            "`{name}` is read after the parallel loop that assigns it (line {l}): its value would be the last iteration's, which no kernel thread has"
                        ),
                    ),
                };
            }
        }
        if let Some(c) = self.src.consts.get(name) {
            return Ok(match *c {
                Const::Int(i) => Val::Scalar(i64(i), ScalarType::I64, true),
                Const::Float(f) => Val::Scalar(f64(f), ScalarType::F64, true),
                Const::Float32(f) => Val::scalar(f32(f), ScalarType::F32),
                Const::Bool(b) => Val::Scalar(bool(b), ScalarType::Bool, true),
            });
        }
        refuse(
            "frontend",
            line,
            format!("`{name}` is not a local variable, an argument or a module constant port can freeze into a kernel"),
        )
    }

    // ---------------------------------------------------------------
    // Expressions
    // ---------------------------------------------------------------

    pub fn expr(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<Val> {
        let line = self.src.line(e);
        match e {
            ast::Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => match i64::try_from(i) {
                    Ok(v) => Ok(Val::Scalar(i64(v), ScalarType::I64, true)),
                    Err(_) => refuse("frontend", line, "integer constant out of the int64 range"),
                },
                ast::Constant::Float(f) => Ok(Val::Scalar(f64(*f), ScalarType::F64, true)),
                ast::Constant::Bool(b) => Ok(Val::Scalar(bool(*b), ScalarType::Bool, true)),
                // A Python complex is weak like a float (`x_f32 * 1j` is complex64).
                ast::Constant::Complex { real, imag } => Ok(Val::Scalar(
                    Expr::Complex(Box::new(f64(*real)), Box::new(f64(*imag))),
                    ScalarType::C128,
                    true,
                )),
                _ => refuse(
                    "frontend",
                    line,
                    format!("`{}`: kernels compute on numbers only", self.src.text_of(e)),
                ),
            },
            ast::Expr::Name(n) => self.lookup(r, n.id.as_str(), line),
            ast::Expr::BinOp(b) => {
                let a = self.expr(r, &b.left)?;
                let c = self.expr(r, &b.right)?;
                if b.op == ast::Operator::MatMult {
                    return self.matmul(r, a, c, line);
                }
                self.binop(b.op, &a, &c, line)
            }
            ast::Expr::UnaryOp(u) => {
                let v = self.expr(r, &u.operand)?;
                let out = array_expr::map1(&v, &mut |x, t| match u.op {
                    ast::UnaryOp::USub => {
                        let t2 = if t == ScalarType::Bool {
                            ScalarType::I64
                        } else {
                            t
                        };
                        (Expr::Unary(UnaryOp::Neg, Box::new(cast_to(x, t, t2))), t2)
                    }
                    ast::UnaryOp::UAdd => (x, t),
                    ast::UnaryOp::Not => (
                        Expr::Unary(UnaryOp::Not, Box::new(math_calls::truthy(x, t))),
                        ScalarType::Bool,
                    ),
                    ast::UnaryOp::Invert => (Expr::Unary(UnaryOp::Not, Box::new(x)), t),
                });
                match (out, &v) {
                    (Some(Val::Scalar(x, t, _)), Val::Scalar(_, _, w)) => Ok(Val::Scalar(x, t, *w)),
                    (Some(v), _) => Ok(v),
                    (None, _) => refuse("frontend", line, "a unary operator applied to a tuple"),
                }
            }
            ast::Expr::BoolOp(b) => {
                let op = match b.op {
                    ast::BoolOp::And => BinOp::And,
                    ast::BoolOp::Or => BinOp::Or,
                };
                let mut acc: Option<Expr> = None;
                for v in &b.values {
                    let x = self.expr(r, v)?;
                    let Val::Scalar(x, t, _) = x else {
                        return refuse(
                            array_expr::NAME,
                            line,
                            "`and`/`or` on arrays is ambiguous in NumPy; use `&`/`|`",
                        );
                    };
                    let x = math_calls::truthy(x, t);
                    acc = Some(match acc {
                        None => x,
                        Some(a) => binary(op, a, x),
                    });
                }
                Ok(Val::scalar(acc.unwrap_or(bool(true)), ScalarType::Bool))
            }
            ast::Expr::Compare(c) => {
                let mut left = self.expr(r, &c.left)?;
                let mut acc: Option<Val> = None;
                for (op, right) in c.ops.iter().zip(&c.comparators) {
                    let rv = self.expr(r, right)?;
                    let cop = match op {
                        ast::CmpOp::Eq => CmpOp::Eq,
                        ast::CmpOp::NotEq => CmpOp::Ne,
                        ast::CmpOp::Lt => CmpOp::Lt,
                        ast::CmpOp::LtE => CmpOp::Le,
                        ast::CmpOp::Gt => CmpOp::Gt,
                        ast::CmpOp::GtE => CmpOp::Ge,
                        _ => {
                            return refuse(
                                "frontend",
                                line,
                                "`is` / `in` comparisons have no kernel equivalent",
                            )
                        }
                    };
                    let mut ordered_complex = false;
                    let one = array_expr::map2(&left, &rv, &mut |(x, tx, wx), (y, ty, wy)| {
                        let t = promote(tx, wx, ty, wy);
                        ordered_complex |= t.is_complex() && !matches!(cop, CmpOp::Eq | CmpOp::Ne);
                        (
                            cmp(cop, cast_to(x, tx, t), cast_to(y, ty, t)),
                            ScalarType::Bool,
                        )
                    })
                    .ok_or_else(|| {
                        Box::new(crate::error::Reason::new(
                            "frontend",
                            line,
                            "comparison of tuples",
                        ))
                    })?;
                    if ordered_complex {
                        return refuse(
                            "frontend",
                            line,
                            "`<`/`>` on complex numbers: compare `abs(z)` or `z.real`",
                        );
                    }
                    acc = Some(match acc {
                        None => one,
                        Some(a) => array_expr::map2(&a, &one, &mut |(x, _, _), (y, _, _)| {
                            (binary(BinOp::And, x, y), ScalarType::Bool)
                        })
                        .expect("bool operands"),
                    });
                    left = rv;
                }
                Ok(acc.expect("a comparison has an operator"))
            }
            ast::Expr::IfExp(i) => {
                let c = self.expr(r, &i.test)?;
                let a = self.expr(r, &i.body)?;
                let b = self.expr(r, &i.orelse)?;
                let (Val::Scalar(c, tc, _), Val::Scalar(x, tx, wx), Val::Scalar(y, ty, wy)) =
                    (c, a, b)
                else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "a conditional expression over arrays: use np.where",
                    );
                };
                let t = promote(tx, wx, ty, wy);
                let (x, y) = (cast_to(x, tx, t), cast_to(y, ty, t));
                let cond = math_calls::truthy(c, tc);
                let loads = has_load(&x) || has_load(&y);
                if loads && r.kind != RegionKind::Host {
                    // Only the branch taken may touch memory (`x[i-1] if i > 0 else 0`).
                    let tmp = self.local_temp(r, "choice");
                    r.push(let_(&tmp, t, lit(t, 0.0)));
                    r.push(if_(cond, vec![assign(&tmp, x)], vec![assign(&tmp, y)]));
                    Ok(Val::scalar(var(&tmp), t))
                } else {
                    Ok(Val::Scalar(select(cond, x, y), t, wx && wy))
                }
            }
            ast::Expr::Tuple(t) => {
                let mut out = Vec::new();
                for x in &t.elts {
                    out.push(self.expr(r, x)?);
                }
                Ok(Val::Tuple(out))
            }
            ast::Expr::Attribute(a) => self.attribute(r, e, a, line),
            ast::Expr::Subscript(s) => {
                match self.src.resolve(&s.value).as_deref() {
                    Some("numpy.ogrid") => return self.index_grid(r, false, &s.slice, line),
                    Some("numpy.mgrid") => return self.index_grid(r, true, &s.slice, line),
                    _ => {}
                }
                let base = self.expr(r, &s.value)?;
                self.subscript(r, base, &s.slice, line)
            }
            ast::Expr::Call(c) => self.call(r, c, line),
            other => refuse(
                "frontend",
                line,
                format!(
                    "`{}`: {} have no kernel equivalent",
                    self.src.text_of(other),
                    construct_name(other)
                ),
            ),
        }
    }

    /// A scalar value or a refusal naming the expression.
    pub fn scalar(&mut self, r: &mut Region, e: &ast::Expr) -> Lower<(Expr, ScalarType)> {
        match self.expr(r, e)? {
            Val::Scalar(x, t, _) => Ok((x, t)),
            _ => refuse(
                "frontend",
                self.src.line(e),
                format!("`{}` must be a number here", self.src.text_of(e)),
            ),
        }
    }

    pub fn binop(&mut self, op: ast::Operator, a: &Val, b: &Val, line: u32) -> Lower<Val> {
        use ast::Operator as O;
        let mut failed: Option<&'static str> = None;
        let out = array_expr::map2(a, b, &mut |(x, tx, wx), (y, ty, wy)| {
            let t = promote(tx, wx, ty, wy);
            let t = if t == ScalarType::Bool
                && matches!(
                    op,
                    O::Add | O::Sub | O::Mult | O::FloorDiv | O::Mod | O::Pow
                ) {
                ScalarType::I64
            } else {
                t
            };
            let (cx, cy) = (cast_to(x.clone(), tx, t), cast_to(y.clone(), ty, t));
            if t.is_complex() && !matches!(op, O::Add | O::Sub | O::Mult | O::Div | O::Pow) {
                // NumPy raises a TypeError for `//`, `%` and bitwise
                // operators on complex numbers.
                failed = Some("this operator on complex numbers (NumPy refuses it too)");
                return (cx, t);
            }
            match op {
                O::Add => (add(cx, cy), t),
                O::Sub => (sub(cx, cy), t),
                O::Mult => (mul(cx, cy), t),
                O::Div => {
                    let ft = if t.is_float() || t.is_complex() {
                        t
                    } else {
                        ScalarType::F64
                    };
                    (div(cast_to(x, tx, ft), cast_to(y, ty, ft)), ft)
                }
                O::FloorDiv => (binary(BinOp::FloorDiv, cx, cy), t),
                O::Mod => (py_mod(cx, cy, t), t),
                O::Pow => pow(x, tx, wx, y, ty, wy, &mut failed),
                O::BitAnd | O::BitOr | O::BitXor if t == ScalarType::Bool => (
                    match op {
                        O::BitAnd => binary(BinOp::And, cx, cy),
                        O::BitOr => binary(BinOp::Or, cx, cy),
                        _ => cmp(CmpOp::Ne, cx, cy),
                    },
                    t,
                ),
                O::BitAnd | O::BitOr | O::BitXor | O::LShift | O::RShift if t.is_int() => (
                    binary(
                        match op {
                            O::BitAnd => BinOp::BitAnd,
                            O::BitOr => BinOp::BitOr,
                            O::BitXor => BinOp::BitXor,
                            O::LShift => BinOp::Shl,
                            _ => BinOp::Shr,
                        },
                        cx,
                        cy,
                    ),
                    t,
                ),
                _ => {
                    failed = Some("this operator (`@` or a bitwise operator on floats)");
                    (cx, t)
                }
            }
        });
        if let Some(what) = failed {
            return refuse(
                array_expr::NAME,
                line,
                format!("{what} has no element-by-element kernel form in port yet"),
            );
        }
        if matches!(op, O::MatMult) {
            return refuse(
                array_expr::NAME,
                line,
                "`@` (matrix product): write the loops, or keep it in CuPy/cuBLAS",
            );
        }
        let out = out.ok_or_else(|| {
            Box::new(crate::error::Reason::new(
                "frontend",
                line,
                "arithmetic on tuples",
            ))
        })?;
        if matches!((a, b), (Val::Array(_), _) | (_, Val::Array(_))) {
            self.log.applied(
                array_expr::NAME,
                format!("elementwise arithmetic (line {line})"),
            );
        }
        Ok(out)
    }

    fn attribute(
        &mut self,
        r: &mut Region,
        whole: &ast::Expr,
        a: &ast::ExprAttribute,
        line: u32,
    ) -> Lower<Val> {
        let attr = a.attr.as_str();
        // Module constants (math.pi) and dotted names.
        if let Some(c) = self.src.eval_const(whole) {
            return Ok(match c {
                Const::Int(i) => Val::Scalar(i64(i), ScalarType::I64, true),
                Const::Float(f) => Val::Scalar(f64(f), ScalarType::F64, true),
                Const::Float32(f) => Val::scalar(f32(f), ScalarType::F32),
                Const::Bool(b) => Val::Scalar(bool(b), ScalarType::Bool, true),
            });
        }
        if attr == "size" {
            if let Some(v) = self.masked_size(r, &a.value, line)? {
                return Ok(v);
            }
        }
        let base = self.expr(r, &a.value)?;
        if matches!(attr, "real" | "imag") && !matches!(base, Val::Tuple(_)) {
            let p = if attr == "real" {
                port_codegen::ir::Part::Re
            } else {
                port_codegen::ir::Part::Im
            };
            let out = array_expr::map1(&base, &mut |e, t| math_calls::real_or_imag(p, e, t));
            return Ok(out.expect("a scalar or an array"));
        }
        let Val::Array(av) = base else {
            return refuse(
                "frontend",
                line,
                format!("`{}`: attribute of a non-array", self.src.text_of(whole)),
            );
        };
        match attr {
            "shape" => Ok(Val::Tuple(
                av.shape
                    .iter()
                    .map(|s| Val::scalar(s.clone(), ScalarType::I64))
                    .collect(),
            )),
            "size" => Ok(Val::scalar(av.size(), ScalarType::I64)),
            "ndim" => Ok(Val::Scalar(i64(av.ndim() as i64), ScalarType::I64, true)),
            "T" => Ok(Val::Array(av.transpose())),
            _ => refuse(
                "frontend",
                line,
                format!(
                    "`{}`: array attribute `{attr}` is not supported in kernels",
                    self.src.text_of(whole)
                ),
            ),
        }
    }

    /// `base[slice]` for arrays and tuples (`x.shape[0]`).
    pub fn subscript(
        &mut self,
        r: &mut Region,
        base: Val,
        slice: &ast::Expr,
        line: u32,
    ) -> Lower<Val> {
        match base {
            Val::Tuple(items) => {
                let k = match self.src.eval_const(slice) {
                    Some(Const::Int(k)) => k,
                    _ => {
                        return refuse(
                            "frontend",
                            line,
                            "a tuple (like `x.shape`) indexed by a non-constant",
                        )
                    }
                };
                let n = items.len() as i64;
                let k = if k < 0 { k + n } else { k };
                items.get(k as usize).cloned().ok_or_else(|| {
                    Box::new(crate::error::Reason::new(
                        "frontend",
                        line,
                        format!("index {k} is out of range for a tuple of {n}"),
                    ))
                })
            }
            Val::Scalar(..) => refuse("frontend", line, "indexing a scalar"),
            Val::Array(av) => {
                let comps: Vec<&ast::Expr> = match slice {
                    ast::Expr::Tuple(t) => t.elts.iter().collect(),
                    e => vec![e],
                };
                let is_new = |c: &ast::Expr| {
                    matches!(c, ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::None))
                        || self.src.resolve(c).as_deref() == Some("numpy.newaxis")
                };
                if let Some(v) = self.gather(r, &av, &comps, line)? {
                    return Ok(v);
                }
                let is_ellipsis = |c: &ast::Expr| matches!(c, ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::Ellipsis));
                let consuming = comps
                    .iter()
                    .filter(|c| !is_new(c) && !is_ellipsis(c))
                    .count();
                if consuming > av.ndim() {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "too many indices ({consuming}) for an array of {} dimensions",
                            av.ndim()
                        ),
                    );
                }
                if comps.iter().filter(|c| is_ellipsis(c)).count() > 1 {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "an index can only have a single ellipsis ('...')",
                    );
                }
                let mut items = Vec::new();
                let mut k = 0;
                for c in &comps {
                    if is_new(c) {
                        items.push(array_expr::IndexItem::NewAxis);
                    } else if is_ellipsis(c) {
                        for _ in 0..av.ndim() - consuming {
                            items.push(array_expr::IndexItem::Range {
                                start: i64(0),
                                step: 1,
                                len: av.shape[k].clone(),
                            });
                            k += 1;
                        }
                    } else {
                        let extent = av.shape[k].clone();
                        items.push(self.index_item(r, c, extent, line)?);
                        k += 1;
                    }
                }
                let out = array_expr::index(&av, items);
                if matches!(out, Val::Array(_)) {
                    self.log.applied(
                        array_expr::NAME,
                        format!("slice as element loop (line {line})"),
                    );
                }
                Ok(out)
            }
        }
    }

    pub(crate) fn index_item(
        &mut self,
        r: &mut Region,
        c: &ast::Expr,
        extent: Expr,
        line: u32,
    ) -> Lower<IndexItem> {
        let norm = |this: &mut Self, r: &mut Region, e: &ast::Expr| -> Lower<Expr> {
            if let Some(Const::Int(k)) = this.src.eval_const(e) {
                return Ok(if k < 0 {
                    array_expr::tidy(&add(extent.clone(), i64(k)))
                } else {
                    i64(k)
                });
            }
            let (x, t) = this.scalar(r, e)?;
            if !t.is_int() && t != ScalarType::Bool {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`{}`: array indices must be integers", this.src.text_of(e)),
                );
            }
            if let Val::Array(_) = this.expr(r, e)? {
                return refuse(
                    array_expr::NAME,
                    line,
                    "fancy indexing with an array of indices",
                );
            }
            Ok(cast_to(x, t, ScalarType::I64))
        };
        match c {
            ast::Expr::Slice(s) => {
                let step = match &s.step {
                    None => 1,
                    Some(st) => match self.src.eval_const(st) {
                        Some(Const::Int(k)) if k != 0 => k,
                        _ => {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "a slice step must be a non-zero integer constant",
                            )
                        }
                    },
                };
                if step < 0 {
                    if s.lower.is_some() || s.upper.is_some() || step != -1 {
                        return refuse(
                            array_expr::NAME,
                            line,
                            "negative slice steps other than `[::-1]`",
                        );
                    }
                    return Ok(IndexItem::Range {
                        start: array_expr::tidy(&sub(extent.clone(), i64(1))),
                        step: -1,
                        len: extent,
                    });
                }
                if s.lower.is_none() && s.upper.is_none() && step == 1 {
                    return Ok(IndexItem::Range {
                        start: i64(0),
                        step: 1,
                        len: extent,
                    });
                }
                let start = match &s.lower {
                    None => i64(0),
                    Some(l) => norm(self, r, l)?,
                };
                // `a[:, 0:1]`, `a[-2:-1]`: one element, a dimension of
                // extent 1 that broadcasts as NumPy's does (the array has
                // that element, or NumPy itself would give an empty slice
                // that fails to broadcast).
                let bounds = (
                    s.lower.as_ref().and_then(|l| self.src.eval_const(l)),
                    s.upper.as_ref().and_then(|u| self.src.eval_const(u)),
                );
                let one_element = match bounds {
                    (Some(Const::Int(lo)), Some(Const::Int(hi))) => {
                        hi - lo == 1 && (lo >= 0 || hi < 0)
                    }
                    // `a[:, k:k + 1]` (k is a valid index, or NumPy's own
                    // slice would be empty).
                    _ => match (&s.lower, &s.upper) {
                        (Some(l), Some(u)) => matches!(
                            u.as_ref(),
                            ast::Expr::BinOp(b)
                                if b.op == ast::Operator::Add
                                    && self.src.text_of(b.left.as_ref()) == self.src.text_of(l.as_ref())
                                    && matches!(self.src.eval_const(&b.right), Some(Const::Int(1)))
                        ),
                        _ => false,
                    },
                };
                if step == 1 && one_element {
                    return Ok(IndexItem::Range {
                        start,
                        step: 1,
                        len: i64(1),
                    });
                }
                let stop = match &s.upper {
                    None => extent.clone(),
                    Some(u) => {
                        let v = norm(self, r, u)?;
                        if v == extent {
                            v
                        } else {
                            binary(BinOp::Min, v, extent.clone())
                        }
                    }
                };
                let span = array_expr::tidy(&sub(stop, start.clone()));
                let len = if step == 1 {
                    array_expr::nonneg(span)
                } else {
                    array_expr::nonneg(binary(BinOp::FloorDiv, add(span, i64(step - 1)), i64(step)))
                };
                Ok(IndexItem::Range { start, step, len })
            }
            ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::None) => {
                Ok(IndexItem::NewAxis)
            }
            e if self.src.resolve(e).as_deref() == Some("numpy.newaxis") => Ok(IndexItem::NewAxis),
            e => Ok(IndexItem::At(norm(self, r, e)?)),
        }
    }

    fn call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        if let Some(v) = self.masked_call(r, c, line)? {
            return Ok(v);
        }
        // Methods of arrays.
        if let ast::Expr::Attribute(a) = c.func.as_ref() {
            let is_module = self.src.resolve(&a.value).is_some_and(|m| {
                matches!(
                    m.split('.').next(),
                    Some("numpy" | "math" | "numba" | "cmath")
                ) || self.src.imports.contains_key(m.as_str())
            });
            if !is_module {
                let base = self.expr(r, &a.value)?;
                if let Val::Array(av) = base {
                    return self.array_method(r, &av, a.attr.as_str(), c, line);
                }
            }
        }
        let name = self.src.resolve(&c.func).unwrap_or_default();
        let short = name.rsplit('.').next().unwrap_or(&name).to_string();
        let is_numpy = name.starts_with("numpy.");

        // Reductions.
        if let Some(op) = reduce_name(&name) {
            if c.args.len() == 1 && c.keywords.is_empty() {
                let v = self.expr(r, &c.args[0])?;
                return self.reduce(r, op, v, line);
            }
        }
        if name.starts_with("numpy.") {
            if let Some(op) = crate::rewrites::axis_reduction::AxisOp::from_name(&name) {
                let Some(first) = c.args.first() else {
                    return refuse("frontend", line, format!("`{short}` needs an array"));
                };
                let v = self.expr(r, first)?;
                let nd = match &v {
                    Val::Array(a) => a.ndim(),
                    _ => 0,
                };
                let args = self.reduction_args(c, 1, nd, op, line)?;
                let hint = pyast::subscript_base(first).unwrap_or_else(|| "r".into());
                return self.reduce_with(r, op, v, args, &hint, line);
            }
        }
        if let (Some(op), true) = (crate::rewrites::scan::scan_op(&name), is_numpy) {
            let Some(first) = c.args.first() else {
                return refuse("frontend", line, format!("`{short}` needs an array"));
            };
            let v = self.expr(r, first)?;
            return self.scan_call(r, op, v, c, 1, line);
        }
        if name == "numpy.linalg.norm" {
            return self.linalg_norm(r, c, line);
        }
        if matches!(name.as_str(), "numpy.matmul") && c.args.len() == 2 && c.keywords.is_empty() {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.matmul(r, a, b, line);
        }
        if name == "numpy.outer" && c.args.len() == 2 && c.keywords.is_empty() {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.outer(a, b, line);
        }
        if matches!(
            name.as_str(),
            "numpy.trace" | "numpy.diagonal" | "numpy.diag"
        ) && c.args.len() == 1
            && c.keywords.is_empty()
        {
            let v = self.expr(r, &c.args[0])?;
            let diag = self.diagonal(&name, v, line)?;
            if name == "numpy.trace" {
                return self.reduce(r, Reduce::Sum, diag, line);
            }
            return Ok(diag);
        }
        if name == "numpy.histogram" {
            return self.histogram(r, c, line);
        }
        if matches!(name.as_str(), "numpy.array" | "numpy.asarray") {
            if let Some(v) = self.literal_array(r, c, line)? {
                return Ok(v);
            }
        }
        if matches!(name.as_str(), "numpy.convolve" | "numpy.correlate") {
            return self.convolve(r, &name, c, line);
        }
        if name == "numpy.cov" && c.args.len() == 1 {
            return self.cov(r, c, line);
        }
        if name == "numpy.vdot" && c.args.len() == 2 && c.keywords.is_empty() {
            // Both flattened, the first conjugated: a whole-array sum of
            // elementwise products (arrays of one shape).
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            // NumPy needs equal sizes; arrays of one rank are taken as one
            // shape (the kernels' extents come from the first).
            let same = match (&a, &b) {
                (Val::Array(x), Val::Array(y)) => x.ndim() == y.ndim(),
                _ => false,
            };
            if !same {
                return refuse(
                    array_expr::NAME,
                    line,
                    "`np.vdot` of values other than two arrays of one rank",
                );
            }
            let ca = math_calls::call("numpy.conj", &[a]).expect("np.conj of an array");
            let prod = self.binop(ast::Operator::Mult, &ca, &b, line)?;
            return self.reduce(r, Reduce::Sum, prod, line);
        }
        if name == "numpy.inner" && c.args.len() == 2 && c.keywords.is_empty() {
            // Over the last axes: `a @ b.T` for matrices, a dot for vectors.
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return match (&a, &b) {
                (Val::Array(_), Val::Array(y)) if y.ndim() == 2 => {
                    let bt = Val::Array(y.transpose());
                    self.dot(r, a, bt, line)
                }
                _ => self.dot(r, a, b, line),
            };
        }
        if name == "numpy.dot" && c.args.len() == 2 {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.dot(r, a, b, line);
        }
        if name == "len" && c.args.len() == 1 {
            return match self.expr(r, &c.args[0])? {
                Val::Array(av) => Ok(Val::scalar(av.shape[0].clone(), ScalarType::I64)),
                Val::Tuple(t) => Ok(Val::Scalar(i64(t.len() as i64), ScalarType::I64, true)),
                _ => refuse("frontend", line, "`len` of a scalar"),
            };
        }
        if r.kind == RegionKind::Host && is_numpy {
            if let Some(v) = self.creation_call(r, &name, c, line)? {
                return Ok(v);
            }
        }
        if crate::rewrites::hoist_alloc::is_allocation(&name) {
            return refuse(
                crate::rewrites::hoist_alloc::NAME,
                line,
                format!(
                    "`{}` allocates an array inside per-thread work: kernels cannot allocate; allocate it outside the loop",
                    self.src.text_of(c)
                ),
            );
        }

        // App functions.
        if let Some(callee) = self.app_function(&c.func) {
            if !c.keywords.is_empty() {
                return refuse(
                    crate::rewrites::app_calls::NAME,
                    line,
                    format!("`{}` is called with keyword arguments", callee),
                );
            }
            let mut args = Vec::new();
            for a in &c.args {
                args.push(self.expr(r, a)?);
            }
            return self.call_app(r, &callee, args, line);
        }

        if !c.keywords.is_empty() {
            return refuse(
                math_calls::NAME,
                line,
                format!("`{}`: keyword arguments to `{name}`", self.src.text_of(c)),
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(r, a)?);
        }
        if let Some(v) = math_calls::call(&name, &args) {
            if math_calls::math_fn(&name).is_some() {
                let mf = math_calls::math_fn(&name).map_or(short.as_str(), |f| f.name());
                let complex = args.iter().any(|a| match a {
                    Val::Scalar(_, t, _) => t.is_complex(),
                    Val::Array(av) => av.elem.is_complex(),
                    Val::Tuple(_) => false,
                });
                let module = if complex { "cmath" } else { "math" };
                let note = if is_numpy {
                    format!("`np.{short}` → `{module}.{mf}` (line {line})")
                } else {
                    format!("`{name}` on the device (line {line})")
                };
                self.log.applied(math_calls::NAME, note);
            }
            if is_numpy && args.iter().any(|a| matches!(a, Val::Array(_))) {
                self.log.applied(
                    array_expr::NAME,
                    format!("ufunc `np.{short}` element by element (line {line})"),
                );
            }
            return Ok(v);
        }
        let shown = if name.is_empty() {
            self.src.text_of(c.func.as_ref()).to_string()
        } else {
            name.replace("numpy.", "np.")
        };
        refuse(
            math_calls::NAME,
            line,
            format!("calls `{shown}`, which port cannot turn into kernel code"),
        )
    }

    fn array_method(
        &mut self,
        r: &mut Region,
        av: &ArrVal,
        method: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        if let Some(op) = reduce_name(&format!("numpy.{method}")) {
            if c.args.is_empty() && c.keywords.is_empty() {
                return self.reduce(r, op, Val::Array(av.clone()), line);
            }
        }
        if let Some(op) = crate::rewrites::scan::scan_op(method) {
            return self.scan_call(r, op, Val::Array(av.clone()), c, 0, line);
        }
        if let Some(op) = crate::rewrites::axis_reduction::AxisOp::from_name(method) {
            let args = self.reduction_args(c, 0, av.ndim(), op, line)?;
            let hint = match c.func.as_ref() {
                ast::Expr::Attribute(a) => pyast::subscript_base(&a.value),
                _ => None,
            }
            .unwrap_or_else(|| "r".into());
            return self.reduce_with(r, op, Val::Array(av.clone()), args, &hint, line);
        }
        match method {
            "copy" if c.args.is_empty() => {
                let mut v = av.clone();
                v.computed = true;
                Ok(Val::Array(v))
            }
            "astype" if c.args.len() == 1 => {
                let t = self.dtype_value(r, &c.args[0]).ok_or_else(|| {
                    Box::new(crate::error::Reason::new(
                        array_expr::NAME,
                        line,
                        format!(
                            "`.astype({})`: unsupported dtype",
                            self.src.text_of(&c.args[0])
                        ),
                    ))
                })?;
                Ok(Val::Array(av.map(t, |e| cast_to(e, av.elem, t))))
            }
            "dot" if c.args.len() == 1 => {
                let b = self.expr(r, &c.args[0])?;
                self.dot(r, Val::Array(av.clone()), b, line)
            }
            "diagonal" | "trace" if c.args.is_empty() && c.keywords.is_empty() => {
                let diag = self.diagonal("numpy.diagonal", Val::Array(av.clone()), line)?;
                if method == "trace" {
                    return self.reduce(r, Reduce::Sum, diag, line);
                }
                Ok(diag)
            }
            "conj" | "conjugate" if c.args.is_empty() && c.keywords.is_empty() => {
                Ok(math_calls::call("numpy.conj", &[Val::Array(av.clone())])
                    .expect("np.conj of an array"))
            }
            "transpose" if c.args.is_empty() && c.keywords.is_empty() => {
                Ok(Val::Array(av.transpose()))
            }
            "reshape" | "ravel" | "flatten" | "swapaxes" | "transpose" => {
                self.shape_method(r, av, method, &c.args, c, line)
            }
            _ => refuse(
                array_expr::NAME,
                line,
                format!("array method `.{method}()` is not supported in kernels"),
            ),
        }
    }

    /// The main diagonal of a matrix as a 1-D view (`np.diagonal`,
    /// `np.diag` of a matrix, what `np.trace` sums); `np.diag` of a vector
    /// is the square matrix with it on the diagonal.
    fn diagonal(&mut self, name: &str, v: Val, line: u32) -> Lower<Val> {
        let Val::Array(a) = v else {
            return refuse(array_expr::NAME, line, format!("`{name}` of a scalar"));
        };
        match a.ndim() {
            2 => {
                let n = binary(BinOp::Min, a.shape[0].clone(), a.shape[1].clone());
                let k = var(&array_expr::ph(0));
                Ok(Val::Array(a.reindexed(vec![n], &[k.clone(), k])))
            }
            1 if name == "numpy.diag" => {
                let n = a.shape[0].clone();
                let (i, j) = (var(&array_expr::ph(0)), var(&array_expr::ph(1)));
                let on = a.reindexed(vec![n.clone(), n.clone()], std::slice::from_ref(&i));
                let zero = lit(a.elem, 0.0);
                let body = select(cmp(CmpOp::Eq, i, j), on.body.clone(), zero);
                Ok(Val::Array(ArrVal {
                    shape: vec![n.clone(), n],
                    elem: a.elem,
                    body,
                    computed: true,
                }))
            }
            _ => refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{name}` of a {}-D array (port takes the diagonal of a matrix)",
                    a.ndim()
                ),
            ),
        }
    }

    /// `np.cov(m)`: rows are variables, columns observations (`rowvar=False`
    /// swaps them); `(X - mean) @ (X - mean).conj().T / (n - 1)`, or `n`
    /// with `bias=True`, or `n - ddof`.
    fn cov(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let mut rowvar = true;
        let mut ddof: Option<i64> = None;
        let mut bias = false;
        for k in &c.keywords {
            let v = self.src.eval_const(&k.value);
            match (k.arg.as_ref().map(|a| a.as_str()), v) {
                (Some("rowvar"), Some(Const::Bool(b))) => rowvar = b,
                (Some("bias"), Some(Const::Bool(b))) => bias = b,
                (Some("ddof"), Some(Const::Int(d))) => ddof = Some(d),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`{}`: np.cov takes constant `rowvar=`, `bias=` and `ddof=` here (no `y`, weights or dtype)",
                            self.src.text_of(c)
                        ),
                    )
                }
            }
        }
        let m = self.expr(r, &c.args[0])?;
        let Val::Array(mut x) = m else {
            return refuse(array_expr::NAME, line, "`np.cov` of a scalar");
        };
        if x.ndim() != 2 {
            return refuse(
                array_expr::NAME,
                line,
                "`np.cov` of an array other than 2-D (of one variable it is `np.var(x, ddof=1)`)",
            );
        }
        if !rowvar {
            x = x.transpose();
        }
        if !x.elem.is_float() && !x.elem.is_complex() {
            let t = ScalarType::F64;
            x = x.map(t, |e| cast_to(e, x.elem, t));
        }
        let n = x.shape[1].clone();
        let args = crate::rewrites::axis_reduction::RedArgs {
            axes: Some(vec![1]),
            keepdims: true,
            ddof: 0,
        };
        let mean = self.reduce_with(
            r,
            crate::rewrites::axis_reduction::AxisOp::Plain(Reduce::Mean),
            Val::Array(x.clone()),
            args,
            "cov",
            line,
        )?;
        let centred = self.binop(ast::Operator::Sub, &Val::Array(x), &mean, line)?;
        let Val::Array(xc) = centred.clone() else {
            unreachable!("an array minus its mean is an array")
        };
        let xh = math_calls::call("numpy.conj", &[Val::Array(xc.transpose())])
            .expect("np.conj of an array");
        let prod = self.matmul(r, centred, xh, line)?;
        let dd = ddof.unwrap_or(if bias { 0 } else { 1 });
        let denom = sub(n, i64(dd));
        self.binop(
            ast::Operator::Div,
            &prod,
            &Val::scalar(denom, ScalarType::I64),
            line,
        )
    }

    fn dot(&mut self, r: &mut Region, a: Val, b: Val, line: u32) -> Lower<Val> {
        match (&a, &b) {
            (Val::Array(x), Val::Array(y)) if x.ndim() == 1 && y.ndim() == 1 => {
                let prod = self.binop(ast::Operator::Mult, &a, &b, line)?;
                self.reduce(r, Reduce::Sum, prod, line)
            }
            (Val::Array(x), Val::Array(y)) if x.ndim() <= 2 && y.ndim() <= 2 => {
                self.matmul(r, a, b, line)
            }
            (Val::Scalar(..), _) | (_, Val::Scalar(..)) => {
                self.binop(ast::Operator::Mult, &a, &b, line)
            }
            _ => refuse(
                array_expr::NAME,
                line,
                "np.dot of arrays other than two vectors: write the loops",
            ),
        }
    }

    /// A reduction of an array value to a scalar: a thread-private loop in a
    /// kernel ([`crate::rewrites::row_reduction`]), a reduction kernel at the
    /// top level ([`crate::rewrites::whole_reduction`]).
    pub fn reduce(&mut self, r: &mut Region, op: Reduce, v: Val, line: u32) -> Lower<Val> {
        let av = match v {
            Val::Array(av) => av,
            Val::Scalar(e, t, w) => {
                // np.sum of a scalar is the scalar.
                return Ok(match op {
                    Reduce::Mean => Val::scalar(cast_to(e, t, ScalarType::F64), ScalarType::F64),
                    _ => Val::Scalar(e, t, w),
                });
            }
            Val::Tuple(_) => return refuse("frontend", line, "a reduction over a tuple"),
        };
        if av.elem.is_complex() && matches!(op, Reduce::Max | Reduce::Min) {
            return refuse(
                "frontend",
                line,
                "max/min of complex numbers (NumPy orders them lexicographically): reduce `abs(z)` or `z.real`",
            );
        }
        if r.kind == RegionKind::Host {
            self.whole_reduction(op, &av, line)
        } else {
            self.row_reduction(r, op, &av, line)
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
        self.src
            .functions()
            .iter()
            .any(|f| f.class.is_none() && f.qualname == id)
            .then(|| id.to_string())
    }

    // ---------------------------------------------------------------
    // Statements inside kernels and device functions
    // ---------------------------------------------------------------

    pub fn block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<()> {
        for s in body {
            self.stmt(r, s)?;
        }
        Ok(())
    }

    /// Declares or assigns the scalar local `name`.
    pub fn set_scalar(
        &mut self,
        r: &mut Region,
        name: &str,
        value: Expr,
        vt: ScalarType,
        at: TextSize,
    ) {
        if let Some((_, ty)) = r.reductions.get(name).copied() {
            let ir = sanitize(name);
            r.push(assign(&ir, cast_to(value, vt, ty)));
            let key = format!("{}{name}", r.scope);
            self.declare_type(&key, vt);
            return;
        }
        let key = format!("{}{name}", r.scope);
        if let Some(Local::Scalar { ir, ty }) = r.locals.get(name).cloned() {
            self.declare_type(&key, vt);
            r.push(assign(&ir, cast_to(value, vt, ty)));
            return;
        }
        let ty = self.declare_type(&key, vt);
        let ir = if r.inlining {
            self.local_temp(r, name)
        } else {
            let s = sanitize(name);
            self.used.insert(s.clone());
            s
        };
        r.locals
            .insert(name.to_string(), Local::Scalar { ir: ir.clone(), ty });
        // Declare in the innermost block that holds every use of the name.
        let occ = r.occurrences.get(name).cloned().unwrap_or_default();
        let top = r.blocks.len() - 1;
        let mut k = top;
        if !r.inlining {
            while k > 0 {
                let (lo, hi) = r.blocks[k].1;
                if occ.iter().all(|&o| o >= lo && o < hi) && at >= lo && at < hi {
                    break;
                }
                k -= 1;
            }
        }
        r.declare_in(k, &ir);
        if k == top {
            r.push(let_(&ir, ty, cast_to(value, vt, ty)));
        } else {
            r.blocks[k].0.push(let_(&ir, ty, lit(ty, 0.0)));
            r.push(assign(&ir, cast_to(value, vt, ty)));
        }
    }

    fn bind_local(
        &mut self,
        r: &mut Region,
        name: &str,
        v: Val,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        match v {
            Val::Scalar(e, t, _) => {
                self.set_scalar(r, name, e, t, at);
                Ok(())
            }
            Val::Array(val) => {
                if matches!(r.locals.get(name), Some(Local::Scalar { .. })) {
                    return refuse(
                        "frontend",
                        line,
                        format!("`{name}` holds a number and then an array"),
                    );
                }
                let snapshot = if val.computed {
                    val.reads()
                        .into_iter()
                        .map(|a| {
                            let c = r.writes.get(&a).copied().unwrap_or(0);
                            (a, c)
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                r.locals
                    .insert(name.to_string(), Local::Array { val, snapshot });
                Ok(())
            }
            Val::Tuple(_) => refuse(
                "frontend",
                line,
                format!("`{name}` holds a tuple: unpack it (`a, b = …`)"),
            ),
        }
    }

    fn stmt(&mut self, r: &mut Region, s: &ast::Stmt) -> Lower<()> {
        let line = self.src.line(s);
        match s {
            ast::Stmt::Pass(_) => Ok(()),
            ast::Stmt::Expr(_) if pyast::is_docstring(s) => Ok(()),
            ast::Stmt::Assert(_) => Ok(()),
            ast::Stmt::Assign(a) => {
                if a.targets.len() != 1 {
                    return refuse("frontend", line, "chained assignment `a = b = …`");
                }
                self.assign_to(r, &a.targets[0], &a.value, s.start(), line)
            }
            ast::Stmt::AnnAssign(a) => match &a.value {
                Some(v) => self.assign_to(r, &a.target, v, s.start(), line),
                None => Ok(()),
            },
            ast::Stmt::AugAssign(a) => self.aug_assign(r, a, s.start(), line),
            ast::Stmt::For(f) => self.serial_for(r, f, line),
            ast::Stmt::While(w) => {
                if !w.orelse.is_empty() {
                    return refuse("frontend", line, "`while … else`");
                }
                let (c, t) = self.scalar(r, &w.test)?;
                let cond = math_calls::truthy(c, t);
                self.bump_loop_writes(r, &w.body);
                r.open(&w.body);
                self.block(r, &w.body)?;
                let body = r.close();
                r.push(while_(cond, body));
                Ok(())
            }
            ast::Stmt::If(i) => {
                let (c, t) = self.scalar(r, &i.test)?;
                let cond = math_calls::truthy(c, t);
                r.open(&i.body);
                self.block(r, &i.body)?;
                let then_body = r.close();
                r.open(&i.orelse);
                self.block(r, &i.orelse)?;
                let else_body = r.close();
                r.push(if_(cond, then_body, else_body));
                Ok(())
            }
            ast::Stmt::Break(_) => {
                r.push(Stmt::Break);
                Ok(())
            }
            ast::Stmt::Continue(_) => {
                r.push(Stmt::Continue);
                Ok(())
            }
            ast::Stmt::Return(ret) => {
                if r.kind != RegionKind::Device {
                    return refuse(
                        crate::rewrites::grid_stride::NAME,
                        line,
                        "`return` inside the parallel loop: each iteration runs on its own thread",
                    );
                }
                match &ret.value {
                    None => {
                        r.push(Stmt::Return(None));
                        Ok(())
                    }
                    Some(v) => {
                        let (e, t) = self.scalar(r, v)?;
                        r.returns.push(t);
                        let rt = r.ret_ty.unwrap_or(t);
                        r.push(Stmt::Return(Some(cast_to(e, t, rt))));
                        Ok(())
                    }
                }
            }
            ast::Stmt::Expr(e) => {
                if let ast::Expr::Call(c) = e.value.as_ref() {
                    if let ast::Expr::Attribute(a) = c.func.as_ref() {
                        if a.attr.as_str() == "fill" && c.args.len() == 1 {
                            let target = self.expr(r, &a.value)?;
                            let v = self.expr(r, &c.args[0])?;
                            return self.store_val(r, target, v, line);
                        }
                    }
                    if let Some(callee) = self.app_function(&c.func) {
                        let mut args = Vec::new();
                        for a in &c.args {
                            args.push(self.expr(r, a)?);
                        }
                        return self.call_app_stmt(r, &callee, args, line);
                    }
                }
                refuse(
                    "frontend",
                    line,
                    format!(
                        "`{}`: a statement with no kernel equivalent",
                        self.src.text_of(e)
                    ),
                )
            }
            other => refuse(
                "frontend",
                line,
                format!("{} has no kernel equivalent", stmt_name(other)),
            ),
        }
    }

    /// Arrays stored to inside a loop change on every iteration: array
    /// locals computed from them before the loop go stale inside it.
    fn bump_loop_writes(&mut self, r: &mut Region, body: &[ast::Stmt]) {
        pyast::walk_stmts(body, &mut |s| {
            let targets: Vec<&ast::Expr> = match s {
                ast::Stmt::Assign(a) => a.targets.iter().collect(),
                ast::Stmt::AugAssign(a) => vec![&a.target],
                _ => vec![],
            };
            for t in targets {
                if let ast::Expr::Subscript(sub) = t {
                    if let Some(b) = pyast::subscript_base(&sub.value) {
                        r.bump_write(&b);
                        if let Some(Local::Array { val, .. }) = r.locals.get(&b) {
                            if let Some(t) = val.view_target() {
                                let a = t.array.clone();
                                r.bump_write(&a);
                            }
                        }
                    }
                }
            }
        });
    }

    fn assign_to(
        &mut self,
        r: &mut Region,
        target: &ast::Expr,
        value: &ast::Expr,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        match target {
            ast::Expr::Name(n) => {
                if self.bind_selection(r, n.id.as_str(), value)? {
                    return Ok(());
                }
                let v = self.expr(r, value)?;
                self.bind_local(r, n.id.as_str(), v, at, line)
            }
            ast::Expr::Tuple(t) => {
                let v = self.expr(r, value)?;
                let Val::Tuple(items) = v else {
                    return refuse("frontend", line, "unpacking a value that is not a tuple");
                };
                if items.len() != t.elts.len() {
                    return refuse(
                        "frontend",
                        line,
                        format!(
                            "unpacking {} values into {} names",
                            items.len(),
                            t.elts.len()
                        ),
                    );
                }
                // Evaluate every value before assigning any name (`a, b = b, a`).
                let mut temps = Vec::new();
                for item in items {
                    temps.push(match item {
                        Val::Scalar(e, ty, _) if !is_simple(&e) => {
                            let tmp = self.local_temp(r, "tmp");
                            r.push(let_(&tmp, ty, e));
                            Val::scalar(var(&tmp), ty)
                        }
                        other => other,
                    });
                }
                for (tgt, item) in t.elts.iter().zip(temps) {
                    match tgt {
                        ast::Expr::Name(n) => self.bind_local(r, n.id.as_str(), item, at, line)?,
                        _ => {
                            let tv = self.expr(r, tgt)?;
                            self.store_val(r, tv, item, line)?;
                        }
                    }
                }
                Ok(())
            }
            ast::Expr::Subscript(_) => {
                let v = self.expr(r, value)?;
                let t = self.expr(r, target)?;
                self.store_val(r, t, v, line)
            }
            _ => refuse(
                "frontend",
                line,
                format!("assignment to `{}`", self.src.text_of(target)),
            ),
        }
    }

    /// Stores `v` into the element or view `target` (inside a kernel).
    pub fn store_val(&mut self, r: &mut Region, target: Val, v: Val, line: u32) -> Lower<()> {
        match target {
            Val::Scalar(Expr::Load(er), et, _) => {
                let Val::Scalar(e, t, _) = v else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "an array stored into a single element",
                    );
                };
                self.note_write(r, &er.array);
                r.push(Stmt::Store {
                    target: er,
                    value: cast_to(e, t, et),
                });
                Ok(())
            }
            Val::Array(tv) => {
                let Some(er) = tv.view_target().cloned() else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "assignment into a computed array (not a view of an argument or allocated array)",
                    );
                };
                let n = tv.ndim();
                let mut seen: Vec<&Expr> = vec![&tv.body];
                seen.extend(tv.shape.iter());
                match &v {
                    Val::Scalar(e, _, _) => seen.push(e),
                    Val::Array(va) => seen.push(&va.body),
                    Val::Tuple(_) => {}
                }
                let vars = self.loop_vars(r, 1, n, &seen);
                let tgt = ElemRef {
                    array: er.array.clone(),
                    indices: er
                        .indices
                        .iter()
                        .map(|i| array_expr::tidy(&array_expr::at_vars(i, &vars)))
                        .collect(),
                };
                let value = match &v {
                    Val::Scalar(e, t, _) => cast_to(e.clone(), *t, tv.elem),
                    Val::Array(va) => {
                        if va.ndim() > n {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "a value with more dimensions than the slice it is stored into",
                            );
                        }
                        let body = va.body_in(n);
                        cast_to(array_expr::at_vars(&body, &vars), va.elem, tv.elem)
                    }
                    Val::Tuple(_) => {
                        return refuse("frontend", line, "a tuple stored into an array")
                    }
                };
                let value = array_expr::tidy(&value);
                if !array_expr::reads_only_unwritten(&tgt, &value, &vars, &tv.shape) {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "the right-hand side reads `{}` at other elements than those written: NumPy evaluates it first, element loops would read overwritten values",
                            tgt.array
                        ),
                    );
                }
                self.note_write(r, &er.array);
                let store = Stmt::Store { target: tgt, value };
                let loops = array_expr::element_loops(&vars, &tv.shape, vec![store]);
                for s in loops {
                    r.push(s);
                }
                self.log.applied(
                    array_expr::NAME,
                    format!("slice assignment as element loop (line {line})"),
                );
                Ok(())
            }
            _ => refuse(
                "frontend",
                line,
                "assignment target is not an array element or slice",
            ),
        }
    }

    pub fn note_write(&mut self, r: &mut Region, array: &str) {
        r.bump_write(array);
        self.written.insert(array.to_string());
        if self.params.iter().any(|(p, _)| p == array) {
            self.mutated.insert(array.to_string());
        }
    }

    fn aug_assign(
        &mut self,
        r: &mut Region,
        a: &ast::StmtAugAssign,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        let cur = self.expr(r, &a.target)?;
        let rhs = self.expr(r, &a.value)?;
        if r.atomic_stores.contains(&at) {
            let Val::Scalar(Expr::Load(er), et, _) = cur else {
                return refuse(crate::dependences::NAME, line, "atomic update of a slice");
            };
            let Val::Scalar(e, t, _) = rhs else {
                return refuse(
                    crate::dependences::NAME,
                    line,
                    "atomic update with an array",
                );
            };
            if et == ScalarType::Bool || et.is_complex() {
                return refuse(
                    crate::dependences::NAME,
                    line,
                    format!(
                        "atomic update of a {} array (numba-cuda has no atomic for it)",
                        crate::types::numba_scalar(et)
                    ),
                );
            }
            let mut v = cast_to(e, t, et);
            if matches!(a.op, ast::Operator::Sub) {
                v = Expr::Unary(UnaryOp::Neg, Box::new(v));
            }
            self.note_write(r, &er.array);
            r.push(Stmt::Eval(Expr::Atomic(AtomicOp::Add, er, Box::new(v))));
            self.log.applied(
                crate::dependences::NAME,
                format!(
                    "shared accumulation `{}` as an atomic add (line {line})",
                    self.src.text_of(a.target.as_ref())
                ),
            );
            return Ok(());
        }
        let new = self.binop(a.op, &cur, &rhs, line)?;
        match a.target.as_ref() {
            ast::Expr::Name(n) => match new {
                Val::Scalar(e, t, _) => {
                    self.set_scalar(r, n.id.as_str(), e, t, at);
                    Ok(())
                }
                Val::Array(_) => {
                    // In-place on a named array value: store through its view.
                    self.store_val(r, cur, new, line)
                }
                Val::Tuple(_) => refuse("frontend", line, "augmented assignment of a tuple"),
            },
            _ => self.store_val(r, cur, new, line),
        }
    }

    fn serial_for(&mut self, r: &mut Region, f: &ast::StmtFor, line: u32) -> Lower<()> {
        if !f.orelse.is_empty() {
            return refuse("frontend", line, "`for … else`");
        }
        let ast::Expr::Name(tv) = f.target.as_ref() else {
            return refuse(
                "frontend",
                line,
                "a `for` loop must bind one name (`for j in range(n)`)",
            );
        };
        let (start, stop, step) = self.range_args(r, &f.iter, line)?;
        let pyname = tv.id.to_string();
        if r.locals.contains_key(&pyname) {
            return refuse(
                "frontend",
                line,
                format!("`{pyname}` is used before this loop and as its loop variable"),
            );
        }
        let own = sanitize(&pyname);
        let ir = if r.visible(&own) || self.host.contains_key(&own) {
            self.local_temp(r, &pyname)
        } else {
            own
        };
        self.bump_loop_writes(r, &f.body);
        r.locals.insert(
            pyname.clone(),
            Local::Scalar {
                ir: ir.clone(),
                ty: ScalarType::I64,
            },
        );
        r.open(&f.body);
        r.declare_here(&ir);
        let res = self.block(r, &f.body);
        let body = r.close();
        r.locals.remove(&pyname);
        res?;
        r.push(for_range(&ir, start, stop, step, body));
        Ok(())
    }

    /// `range(stop)`, `range(start, stop)`, `range(start, stop, step)` as `i64`.
    pub fn range_args(
        &mut self,
        r: &mut Region,
        iter: &ast::Expr,
        line: u32,
    ) -> Lower<(Expr, Expr, Expr)> {
        let ast::Expr::Call(c) = iter else {
            return refuse(
                crate::rewrites::grid_stride::NAME,
                line,
                format!(
                    "`for … in {}`: only `range(...)` loops become kernel loops",
                    self.src.text_of(iter)
                ),
            );
        };
        let name = self.src.resolve(&c.func).unwrap_or_default();
        if !matches!(name.as_str(), "range" | "numba.prange" | "prange") {
            return refuse(
                crate::rewrites::grid_stride::NAME,
                line,
                format!(
                    "`for … in {}`: only `range(...)` loops become kernel loops",
                    self.src.text_of(iter)
                ),
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            let (e, t) = self.scalar(r, a)?;
            if !t.is_int() {
                return refuse("frontend", line, "`range` of a non-integer");
            }
            args.push(cast_to(e, t, ScalarType::I64));
        }
        Ok(match args.len() {
            1 => (i64(0), args.remove(0), i64(1)),
            2 => {
                let stop = args.remove(1);
                (args.remove(0), stop, i64(1))
            }
            3 => {
                if matches!(args[2], Expr::Lit(Literal::I64(0))) {
                    return refuse("frontend", line, "`range` step of zero");
                }
                let step = args.remove(2);
                let stop = args.remove(1);
                (args.remove(0), stop, step)
            }
            _ => return refuse("frontend", line, "`range` takes 1 to 3 arguments"),
        })
    }

    // ---------------------------------------------------------------
    // Kernels
    // ---------------------------------------------------------------

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
            L::OneBlock => L::OneBlock,
        }
    }

    /// `hostify` for a value the user's code computes on the host: an
    /// element of a device array read there (not a reduction's result) is
    /// refused, since it would be one transfer per element.
    pub fn host_scalar(&mut self, e: Expr, line: u32) -> Lower<Expr> {
        // Elements of device arrays the host code reads (`alpha = -r[k]`):
        // each read back on its own, one element.
        let mut reads: Vec<port_codegen::ir::ElemRef> = Vec::new();
        port_codegen::ir::walk_expr(&e, &mut |x| {
            if let Expr::Load(er) = x {
                let is_acc = self.accs.contains(&er.array)
                    || self.host.values().any(
                        |b| matches!(b, HostBind::DeviceScalar { acc, .. } if *acc == er.array),
                    );
                if !is_acc && !reads.contains(er) {
                    reads.push(er.clone());
                }
            }
        });
        let mut map: Vec<(port_codegen::ir::ElemRef, String)> = Vec::new();
        for er in reads {
            let nested = er.indices.iter().any(|i| {
                let mut any = false;
                port_codegen::ir::walk_expr(i, &mut |x| any |= matches!(x, Expr::Load(_)));
                any
            });
            let ty = match self.host.get(&er.array) {
                Some(HostBind::Array(t)) => Some(t.elem),
                _ => match self.params.iter().find(|(p, _)| *p == er.array) {
                    Some((_, crate::types::ArgType::Array(t))) => Some(t.elem),
                    _ => None,
                },
            };
            let Some(ty) = ty.filter(|_| !nested) else {
                return refuse(
                    crate::rewrites::host_schedule::NAME,
                    line,
                    format!(
                        "an element of `{}` read on the host at an index port cannot compute there",
                        er.array
                    ),
                );
            };
            let name = self.fresh(&format!("{}_at", sanitize(&er.array)));
            self.steps.push(HostStep::ReadElement {
                name: name.clone(),
                ty,
                array: er.array.clone(),
                index: er.indices.clone(),
            });
            self.host.insert(name.clone(), HostBind::Scalar(ty));
            self.tiny.insert(name.clone(), line);
            map.push((er, name));
        }
        let e = if map.is_empty() {
            e
        } else {
            crate::ir_util::map_expr(&e, &|x| match x {
                Expr::Load(er) => map.iter().find(|(r, _)| r == er).map(|(_, n)| var(n)),
                _ => None,
            })
        };
        Ok(self.hostify(e))
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
                HostBind::DeviceScalar { acc: a, ty } if *a == acc => Some((k.clone(), *ty)),
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

fn reduce_name(name: &str) -> Option<Reduce> {
    Some(match name {
        "numpy.sum" | "sum" | "numpy.nansum" => Reduce::Sum,
        "numpy.mean" | "numpy.average" => Reduce::Mean,
        "numpy.max" | "numpy.amax" => Reduce::Max,
        "numpy.min" | "numpy.amin" => Reduce::Min,
        "numpy.prod" => Reduce::Prod,
        _ => return None,
    })
}

/// The identity of a reduction operator for type `t`.
pub fn identity(op: RedOp, t: ScalarType) -> Expr {
    match op {
        RedOp::Sum => lit(t, 0.0),
        RedOp::Prod => lit(t, 1.0),
        RedOp::Max => match t {
            ScalarType::I32 => i32(i32::MIN),
            ScalarType::I64 => i64(i64::MIN),
            t if t.is_unsigned() => lit(t, 0.0),
            t if t.is_int() => lit(t, -(2f64.powi(t.bits() as i32 - 1))),
            _ => lit(t, f64::NEG_INFINITY),
        },
        RedOp::Min => match t {
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

fn pow(
    x: Expr,
    tx: ScalarType,
    wx: bool,
    y: Expr,
    ty: ScalarType,
    wy: bool,
    failed: &mut Option<&'static str>,
) -> (Expr, ScalarType) {
    let t = promote(tx, wx, ty, wy);
    let t = if t == ScalarType::Bool {
        ScalarType::I64
    } else {
        t
    };
    // Small integer powers: repeated products (exact, like Python).
    if let Expr::Lit(Literal::I64(k)) = y {
        if (1..=4).contains(&k) {
            let b = cast_to(x, tx, t);
            let mut acc = b.clone();
            for _ in 1..k {
                acc = mul(acc, b.clone());
            }
            return (acc, t);
        }
        if k == 0 {
            return (lit(t, 1.0), t);
        }
    }
    if let Expr::Lit(Literal::F64(v)) = y {
        if v == 2.0 {
            let ft = if t.is_float() || t.is_complex() {
                t
            } else {
                ScalarType::F64
            };
            let b = cast_to(x, tx, ft);
            return (mul(b.clone(), b), ft);
        }
    }
    if t.is_int() {
        *failed = Some("an integer power with a variable or negative exponent");
        return (x, t);
    }
    (
        math(
            port_codegen::ir::MathFn::Pow,
            vec![cast_to(x, tx, t), cast_to(y, ty, t)],
        ),
        t,
    )
}

fn has_load(e: &Expr) -> bool {
    let mut found = false;
    port_codegen::ir::walk_expr(e, &mut |x| found |= matches!(x, Expr::Load(_)));
    found
}

fn is_simple(e: &Expr) -> bool {
    matches!(e, Expr::Var(_) | Expr::Lit(_))
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

fn construct_name(e: &ast::Expr) -> &'static str {
    match e {
        ast::Expr::Lambda(_) => "lambdas",
        ast::Expr::ListComp(_) | ast::Expr::SetComp(_) | ast::Expr::DictComp(_) => "comprehensions",
        ast::Expr::GeneratorExp(_) => "generator expressions",
        ast::Expr::List(_) => "lists",
        ast::Expr::Dict(_) => "dicts",
        ast::Expr::Set(_) => "sets",
        ast::Expr::JoinedStr(_) | ast::Expr::FormattedValue(_) => "f-strings",
        ast::Expr::Starred(_) => "starred expressions",
        ast::Expr::Yield(_) | ast::Expr::YieldFrom(_) | ast::Expr::Await(_) => {
            "generators and coroutines"
        }
        ast::Expr::NamedExpr(_) => "assignment expressions",
        _ => "such expressions",
    }
}

pub fn stmt_name(s: &ast::Stmt) -> &'static str {
    match s {
        ast::Stmt::With(_) | ast::Stmt::AsyncWith(_) => "a `with` block",
        ast::Stmt::Try(_) | ast::Stmt::TryStar(_) => "`try`/`except`",
        ast::Stmt::Raise(_) => "`raise`",
        ast::Stmt::FunctionDef(_) | ast::Stmt::AsyncFunctionDef(_) => "a nested function",
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

/// A module constant as a value.
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
