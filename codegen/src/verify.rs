//! The IR verifier: names, types, where each construct may appear, and
//! barriers that some threads of a block could miss.
//!
//! Lowering trusts a verified module; every public entry point of this crate
//! verifies first. Errors name the function and the construct (its text form)
//! and say what to change.
//!
//! Barrier rule: `syncthreads()` may appear only in a kernel, outside any
//! `parallel for` (a grid-stride loop runs a different number of iterations
//! per thread) and outside any `if`, loop condition or loop exit that depends
//! on the thread. A value depends on the thread ("varies") when it reads
//! `threadIdx`, a loop variable of a `parallel for`, the result of an atomic or
//! of a device function that does, an array element at a varying index, or a
//! local assigned any of these or assigned under varying control. `blockIdx`,
//! `blockDim`, `gridDim`, shapes and scalar parameters are the same for every
//! thread of a block. A `return` under varying control makes every barrier
//! after it divergent too.

use std::collections::{HashMap, HashSet};

use crate::ir::*;
use crate::text::{expr_text, stmt_line};

/// Why a module is not valid IR.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} `{function}`: at `{construct}`: {message}")]
pub struct VerifyError {
    /// `kernel` or `device function`.
    pub kind: &'static str,
    pub function: String,
    /// The offending construct in text form (a statement, or its header).
    pub construct: String,
    pub message: String,
}

/// Largest static shared memory a block may declare (CUDA's limit without opt-in).
pub const MAX_SHARED_BYTES: u64 = 48 * 1024;
/// Largest number of threads in a block.
pub const MAX_BLOCK_THREADS: u64 = 1024;

const BUILTIN_NAMES: [&str; 13] = [
    "min",
    "max",
    "select",
    "atomic_add",
    "atomic_sub",
    "atomic_min",
    "atomic_max",
    "atomic_exch",
    "atomic_cas",
    "syncthreads",
    "threadIdx",
    "blockIdx",
    "len",
];

/// Checks a whole module.
pub fn verify_module(m: &Module) -> Result<(), VerifyError> {
    let mut names = HashSet::new();
    for (kind, name) in m
        .device_functions
        .iter()
        .map(|f| ("device function", &f.name))
        .chain(m.kernels.iter().map(|k| ("kernel", &k.name)))
    {
        let err = |message: String| VerifyError {
            kind,
            function: name.clone(),
            construct: name.clone(),
            message,
        };
        if !names.insert(name.as_str()) {
            return Err(err("a function of this name is already defined".into()));
        }
        if !is_identifier(name) {
            return Err(err("not a valid identifier".into()));
        }
        if MathFn::from_name(name).is_some()
            || ScalarType::from_name(name).is_some()
            || BUILTIN_NAMES.contains(&name.as_str())
        {
            return Err(err(format!(
                "`{name}` is a built-in name; pick another name for the function"
            )));
        }
    }
    check_no_recursion(m)?;
    let varying_fns = varying_functions(m);
    for f in &m.device_functions {
        let mut cx = FnChecker::new(m, "device function", &f.name, f.ret);
        cx.params(&f.params)?;
        cx.body(&f.body)?;
        if f.ret.is_some() && !definitely_returns(&f.body) {
            return Err(cx.err_at(
                f.name.clone(),
                "the function can reach its end without returning a value; add a final `return`",
            ));
        }
    }
    for k in &m.kernels {
        let mut cx = FnChecker::new(m, "kernel", &k.name, None);
        cx.in_kernel = true;
        cx.params(&k.params)?;
        // A kernel's scalar arguments are one 64-bit slot each; a complex
        // one travels as its two parts (`complex(re, im)` in the body).
        if let Some(p) = k
            .params
            .iter()
            .find(|p| p.ty.scalar().is_some_and(ScalarType::is_complex))
        {
            return Err(cx.err_at(
                format!("{}: {}", p.name, crate::text::type_text(p.ty)),
                "a kernel takes no complex scalar argument; pass its real and imaginary parts",
            ));
        }
        let mut total: u64 = 0;
        for s in &k.shared {
            let construct = format!("shared {}: {}[..]", s.name, s.elem);
            if s.shape.is_empty() || s.shape.len() > 3 || s.shape.contains(&0) {
                return Err(cx.err_at(
                    construct,
                    "a shared array has 1 to 3 dimensions, each at least 1",
                ));
            }
            total += s.len() * s.elem.size_bytes() as u64;
            cx.declare_array(&s.name, s.array_type())
                .map_err(|m| cx.err_at(construct.clone(), &m))?;
        }
        if total > MAX_SHARED_BYTES {
            return Err(cx.err_at(
                k.name.clone(),
                &format!(
                    "the shared arrays take {total} bytes, more than the {MAX_SHARED_BYTES} a block may have"
                ),
            ));
        }
        cx.body(&k.body)?;
        check_barriers(k, &varying_fns)?;
    }
    Ok(())
}

/// An ASCII identifier not in codegen's reserved namespaces (`__port…` for
/// generated symbols, `__nv…` for libdevice).
fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && !s.starts_with("__port")
        && !s.starts_with("__nv")
}

fn definitely_returns(body: &[Stmt]) -> bool {
    match body.last() {
        Some(Stmt::Return(_)) => true,
        Some(Stmt::If {
            then_body,
            else_body,
            ..
        }) => definitely_returns(then_body) && definitely_returns(else_body),
        _ => false,
    }
}

fn calls_in(body: &[Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    walk_body_exprs(body, &mut |e| {
        if let Expr::Call(n, _) = e {
            out.push(n.clone());
        }
    });
    out
}

fn check_no_recursion(m: &Module) -> Result<(), VerifyError> {
    // Depth-first search over device functions; a back edge is recursion,
    // which port's kernels never need and the simulator's stack cannot bound.
    fn visit<'a>(
        m: &'a Module,
        name: &'a str,
        stack: &mut Vec<&'a str>,
        done: &mut HashSet<&'a str>,
    ) -> Result<(), VerifyError> {
        if done.contains(name) {
            return Ok(());
        }
        let Some(f) = m.device_function(name) else {
            return Ok(());
        };
        stack.push(name);
        for callee in calls_in(&f.body) {
            if let Some(pos) = stack.iter().position(|s| *s == callee) {
                let cycle: Vec<&str> = stack[pos..].to_vec();
                return Err(VerifyError {
                    kind: "device function",
                    function: name.to_string(),
                    construct: format!("{callee}(..)"),
                    message: format!(
                        "recursion ({} -> {callee}) is not supported on the GPU target",
                        cycle.join(" -> ")
                    ),
                });
            }
            if let Some(cf) = m.device_function(&callee) {
                visit(m, &cf.name, stack, done)?;
            }
        }
        stack.pop();
        done.insert(name);
        Ok(())
    }
    let mut done = HashSet::new();
    for f in &m.device_functions {
        visit(m, &f.name, &mut Vec::new(), &mut done)?;
    }
    Ok(())
}

/// Device functions whose result can differ between threads given the same
/// arguments: they read `threadIdx` or do atomics, directly or through calls.
fn varying_functions(m: &Module) -> HashSet<String> {
    let mut set = HashSet::new();
    loop {
        let mut changed = false;
        for f in &m.device_functions {
            if set.contains(&f.name) {
                continue;
            }
            let mut varies = false;
            walk_body_exprs(&f.body, &mut |e| match e {
                Expr::Special(Special::ThreadIdx, _) | Expr::Atomic(..) | Expr::AtomicCas(..) => {
                    varies = true
                }
                Expr::Call(n, _) if set.contains(n) => varies = true,
                _ => {}
            });
            if varies {
                set.insert(f.name.clone());
                changed = true;
            }
        }
        if !changed {
            return set;
        }
    }
}

#[derive(Clone, Copy)]
enum VarKind {
    Scalar(ScalarType),
    Array { ty: ArrayType },
}

#[derive(Clone, Copy, PartialEq)]
enum LoopKind {
    Serial,
    Parallel,
}

struct FnChecker<'m> {
    module: &'m Module,
    kind: &'static str,
    name: String,
    ret: Option<ScalarType>,
    in_kernel: bool,
    scopes: Vec<HashMap<String, VarKind>>,
    loops: Vec<LoopKind>,
    construct: String,
}

impl<'m> FnChecker<'m> {
    fn new(module: &'m Module, kind: &'static str, name: &str, ret: Option<ScalarType>) -> Self {
        FnChecker {
            module,
            kind,
            name: name.to_string(),
            ret,
            in_kernel: false,
            scopes: vec![HashMap::new()],
            loops: Vec::new(),
            construct: String::new(),
        }
    }

    fn err_at(&self, construct: String, message: &str) -> VerifyError {
        VerifyError {
            kind: self.kind,
            function: self.name.clone(),
            construct,
            message: message.to_string(),
        }
    }

    fn err(&self, message: String) -> VerifyError {
        self.err_at(self.construct.clone(), &message)
    }

    fn lookup(&self, name: &str) -> Option<VarKind> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn declare(&mut self, name: &str, kind: VarKind) -> Result<(), String> {
        if !is_identifier(name) {
            return Err(format!("`{name}` is not a valid identifier"));
        }
        if self.lookup(name).is_some() {
            return Err(format!(
                "`{name}` is already declared in this scope; pick another name"
            ));
        }
        // An array is only ever indexed (`floor[i]`) or measured
        // (`floor.shape[0]`), never called, so it may share a math
        // function's name (a program's `floor` array keeps its name); a
        // scalar may not (`floor(x)` would read as a call).
        let math = MathFn::from_name(name).is_some()
            && (!matches!(kind, VarKind::Array { .. }) || name == "pow");
        if ScalarType::from_name(name).is_some() || math {
            return Err(format!("`{name}` is a built-in name; pick another name"));
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), kind);
        }
        Ok(())
    }

    fn declare_array(&mut self, name: &str, ty: ArrayType) -> Result<(), String> {
        self.declare(name, VarKind::Array { ty })
    }

    fn params(&mut self, params: &[Param]) -> Result<(), VerifyError> {
        for p in params {
            let construct = format!("{}: {}", p.name, crate::text::type_text(p.ty));
            let r = match p.ty {
                Type::Scalar(s) => self.declare(&p.name, VarKind::Scalar(s)),
                Type::Array(a) => {
                    if a.ndim == 0 || a.ndim > crate::ir::MAX_DIMS {
                        Err(format!(
                            "arrays have 1 to {} dimensions",
                            crate::ir::MAX_DIMS
                        ))
                    } else {
                        self.declare_array(&p.name, a)
                    }
                }
            };
            r.map_err(|m| self.err_at(construct, &m))?;
        }
        Ok(())
    }

    fn body(&mut self, body: &[Stmt]) -> Result<(), VerifyError> {
        self.scopes.push(HashMap::new());
        for s in body {
            self.stmt(s)?;
        }
        self.scopes.pop();
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), VerifyError> {
        self.construct = stmt_line(s);
        match s {
            Stmt::Let { name, ty, init } => {
                let t = self.scalar(init)?;
                if t != *ty {
                    return Err(self.err(format!(
                        "`{name}` is declared {ty} but its value is {t}; insert a cast like `{ty}(…)`"
                    )));
                }
                self.declare(name, VarKind::Scalar(*ty))
                    .map_err(|m| self.err(m))?;
            }
            Stmt::Assign { name, value } => {
                let t = self.scalar(value)?;
                match self.lookup(name) {
                    Some(VarKind::Scalar(vt)) if vt == t => {}
                    Some(VarKind::Scalar(vt)) => {
                        return Err(self.err(format!(
                            "`{name}` is {vt} but the value assigned is {t}; insert a cast"
                        )))
                    }
                    Some(VarKind::Array { .. }) => {
                        return Err(self.err(format!(
                            "`{name}` is an array; assign to its elements (`{name}[i] = …`)"
                        )))
                    }
                    None => {
                        return Err(self.err(format!(
                            "`{name}` is not declared; declare it with `let {name}: {t} = …;`"
                        )))
                    }
                }
            }
            Stmt::Store { target, value } => {
                let elem = self.elem_ref(target)?;
                let t = self.scalar(value)?;
                if t != elem {
                    return Err(self.err(format!(
                        "`{}` holds {elem} but the value stored is {t}; insert a cast",
                        target.array
                    )));
                }
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                self.expect_bool(cond, "an `if` condition")?;
                self.body(then_body)?;
                self.body(else_body)?;
            }
            Stmt::While { cond, body } => {
                self.expect_bool(cond, "a `while` condition")?;
                self.loops.push(LoopKind::Serial);
                self.body(body)?;
                self.loops.pop();
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => {
                let ts = self.scalar(start)?;
                let te = self.scalar(stop)?;
                let tp = self.scalar(step)?;
                if !ts.is_int() || ts != te || ts != tp {
                    return Err(self.err(format!(
                        "`range` takes start, stop and step of one integer type, got {ts}, {te} and {tp}"
                    )));
                }
                if let Expr::Lit(Literal::I32(0) | Literal::I64(0)) = step {
                    return Err(self.err("`range` step must not be zero".into()));
                }
                self.scopes.push(HashMap::new());
                self.declare(var, VarKind::Scalar(ts))
                    .map_err(|m| self.err(m))?;
                self.loops.push(LoopKind::Serial);
                self.body(body)?;
                self.loops.pop();
                self.scopes.pop();
            }
            Stmt::ParallelFor(p) => {
                if !self.in_kernel {
                    return Err(self.err(
                        "a `parallel for` may appear only in a kernel, not in a device function"
                            .into(),
                    ));
                }
                if self.loops.contains(&LoopKind::Parallel) {
                    return Err(self.err(
                        "`parallel for` loops do not nest; use one `parallel for (i, j)` over both extents"
                            .into(),
                    ));
                }
                if p.vars.is_empty() || p.vars.len() > 3 || p.vars.len() != p.extents.len() {
                    return Err(self.err(
                        "a `parallel for` has 1 to 3 variables and one extent per variable".into(),
                    ));
                }
                for e in &p.extents {
                    let t = self.scalar(e)?;
                    if !t.is_int() {
                        return Err(self.err(format!(
                            "the extent `{}` is {t}; extents are integers",
                            expr_text(e)
                        )));
                    }
                }
                self.scopes.push(HashMap::new());
                for v in &p.vars {
                    self.declare(v, VarKind::Scalar(ScalarType::I64))
                        .map_err(|m| self.err(m))?;
                }
                self.loops.push(LoopKind::Parallel);
                self.body(&p.body)?;
                self.loops.pop();
                self.scopes.pop();
            }
            Stmt::Break => match self.loops.last() {
                Some(LoopKind::Serial) => {}
                Some(LoopKind::Parallel) => {
                    return Err(self.err(
                        "`break` cannot leave a `parallel for`: its iterations run on different threads"
                            .into(),
                    ))
                }
                None => return Err(self.err("`break` outside a loop".into())),
            },
            Stmt::Continue => {
                if self.loops.is_empty() {
                    return Err(self.err("`continue` outside a loop".into()));
                }
            }
            Stmt::Return(value) => match (value, self.ret) {
                (None, None) => {}
                (Some(e), Some(rt)) => {
                    let t = self.scalar(e)?;
                    if t != rt {
                        return Err(self.err(format!(
                            "the function returns {rt} but this value is {t}; insert a cast"
                        )));
                    }
                }
                (Some(_), None) => {
                    return Err(self.err(if self.in_kernel {
                        "a kernel cannot return a value; store it into an array".into()
                    } else {
                        "the function is declared without a result type".into()
                    }))
                }
                (None, Some(rt)) => {
                    return Err(self.err(format!("the function must return a {rt} value")))
                }
            },
            Stmt::Barrier => {
                if !self.in_kernel {
                    return Err(self.err(
                        "`syncthreads()` may appear only in a kernel, not in a device function"
                            .into(),
                    ));
                }
            }
            Stmt::Eval(e) => {
                match e {
                    Expr::Call(..) => {
                        self.call(e)?;
                    }
                    Expr::Atomic(..) | Expr::AtomicCas(..) => {
                        self.scalar(e)?;
                    }
                    _ => {
                        return Err(self.err(
                            "an expression statement must be a call or an atomic; its value would be lost"
                                .into(),
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    fn expect_bool(&mut self, e: &Expr, what: &str) -> Result<(), VerifyError> {
        let t = self.scalar(e)?;
        if t != ScalarType::Bool {
            return Err(self.err(format!(
                "{what} must be bool, but `{}` is {t}; compare it, e.g. `… != 0`",
                expr_text(e)
            )));
        }
        Ok(())
    }

    fn array(&self, name: &str) -> Result<ArrayType, VerifyError> {
        match self.lookup(name) {
            Some(VarKind::Array { ty }) => Ok(ty),
            Some(VarKind::Scalar(t)) => Err(self.err(format!("`{name}` is a {t}, not an array"))),
            None => Err(self.err(format!("unknown array `{name}`"))),
        }
    }

    fn elem_ref(&mut self, r: &ElemRef) -> Result<ScalarType, VerifyError> {
        let a = self.array(&r.array)?;
        if r.indices.len() != a.ndim as usize {
            return Err(self.err(format!(
                "`{}` has {} dimension(s) but is indexed with {}",
                r.array,
                a.ndim,
                r.indices.len()
            )));
        }
        for i in &r.indices {
            let t = self.scalar(i)?;
            if !t.is_int() {
                return Err(self.err(format!(
                    "the index `{}` of `{}` is {t}; indices are i32 or i64",
                    expr_text(i),
                    r.array
                )));
            }
        }
        Ok(a.elem)
    }

    /// The type of a scalar expression.
    fn scalar(&mut self, e: &Expr) -> Result<ScalarType, VerifyError> {
        use ScalarType::*;
        let here = |this: &Self, msg: String| this.err(format!("`{}`: {msg}", expr_text(e)));
        Ok(match e {
            Expr::Lit(l) => l.ty(),
            Expr::Var(n) => match self.lookup(n) {
                Some(VarKind::Scalar(t)) => t,
                Some(VarKind::Array { .. }) => {
                    return Err(here(
                        self,
                        format!("the array `{n}` is used as a value; index it (`{n}[i]`)"),
                    ))
                }
                None => return Err(here(self, format!("`{n}` is not declared"))),
            },
            Expr::Special(..) => I32,
            Expr::Shape { array, axis } => {
                let a = self.array(array)?;
                if *axis >= a.ndim {
                    return Err(here(
                        self,
                        format!("`{array}` has {} dimension(s), no axis {axis}", a.ndim),
                    ));
                }
                I64
            }
            Expr::Unary(op, a) => {
                let t = self.scalar(a)?;
                match (op, t) {
                    (UnaryOp::Neg, t) if t.is_int() || t.is_float() || t.is_complex() => t,
                    (UnaryOp::Not, t) if t.is_int() || t == Bool => t,
                    _ => return Err(here(self, format!("this operator does not apply to {t}"))),
                }
            }
            Expr::Binary(op, a, b) => {
                let ta = self.scalar(a)?;
                let tb = self.scalar(b)?;
                if ta != tb {
                    return Err(here(
                        self,
                        format!(
                            "operands of `{}` have different types ({ta} and {tb}); insert a cast",
                            op.symbol()
                        ),
                    ));
                }
                let ok = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => ta != Bool,
                    BinOp::FloorDiv | BinOp::Rem => ta != Bool && !ta.is_complex(),
                    BinOp::Min | BinOp::Max => !ta.is_complex(),
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => ta.is_int() || ta == Bool,
                    BinOp::Shl | BinOp::Shr => ta.is_int(),
                    BinOp::And | BinOp::Or => ta == Bool,
                    BinOp::CheckedAdd | BinOp::CheckedSub | BinOp::CheckedMul => ta == I64,
                };
                if !ok {
                    return Err(here(
                        self,
                        format!("`{}` does not apply to {ta}", op.symbol()),
                    ));
                }
                ta
            }
            Expr::Cmp(op, a, b) => {
                let ta = self.scalar(a)?;
                let tb = self.scalar(b)?;
                if ta != tb {
                    return Err(here(
                        self,
                        format!(
                            "operands of `{}` have different types ({ta} and {tb}); insert a cast",
                            op.symbol()
                        ),
                    ));
                }
                if ta == Bool && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    return Err(here(self, "bools compare only with `==` and `!=`".into()));
                }
                if ta.is_complex() && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    return Err(here(
                        self,
                        "complex numbers compare only with `==` and `!=`".into(),
                    ));
                }
                Bool
            }
            Expr::Cast(t, a) => {
                let from = self.scalar(a)?;
                if from.is_complex() && !t.is_complex() {
                    return Err(here(
                        self,
                        format!("a cast from {from} to {t} would drop the imaginary part; take `real(..)`"),
                    ));
                }
                *t
            }
            Expr::Complex(re, im) => {
                let tr = self.scalar(re)?;
                let ti = self.scalar(im)?;
                if !tr.is_float() || tr != ti {
                    return Err(here(
                        self,
                        format!("`complex` takes two parts of one float type (got {tr} and {ti})"),
                    ));
                }
                tr.complexified()
            }
            Expr::Part(p, z) => {
                let t = self.scalar(z)?;
                if !t.is_complex() {
                    return Err(here(
                        self,
                        format!("`{}` takes a complex number, not {t}", p.name()),
                    ));
                }
                t.component()
            }
            Expr::Select(c, a, b) => {
                let tc = self.scalar(c)?;
                let ta = self.scalar(a)?;
                let tb = self.scalar(b)?;
                if tc != Bool {
                    return Err(here(
                        self,
                        format!("the condition of `select` must be bool, not {tc}"),
                    ));
                }
                if ta != tb {
                    return Err(here(
                        self,
                        format!("the two choices of `select` differ in type ({ta} and {tb})"),
                    ));
                }
                ta
            }
            Expr::Load(r) => self.elem_ref(r)?,
            Expr::Math(f, args) => {
                if args.len() != f.arity() {
                    return Err(here(
                        self,
                        format!("`{}` takes {} argument(s)", f.name(), f.arity()),
                    ));
                }
                let mut t0 = None;
                for a in args {
                    let t = self.scalar(a)?;
                    if t.is_complex() && !f.takes_complex() {
                        return Err(here(
                            self,
                            format!(
                                "`{}` has no complex form (`{}` is {t})",
                                f.name(),
                                expr_text(a)
                            ),
                        ));
                    }
                    if !t.is_float() && !t.is_complex() {
                        return Err(here(
                            self,
                            format!(
                                "`{}` takes f32 or f64, but `{}` is {t}; cast it first",
                                f.name(),
                                expr_text(a)
                            ),
                        ));
                    }
                    if t0.is_some_and(|t0| t0 != t) {
                        return Err(here(
                            self,
                            format!("the arguments of `{}` differ in type", f.name()),
                        ));
                    }
                    t0 = Some(t);
                }
                match t0 {
                    // `abs` of a complex number is its modulus, a real.
                    Some(t) if *f == MathFn::Fabs => t.component(),
                    t => t.unwrap_or(F64),
                }
            }
            Expr::Call(..) => match self.call(e)? {
                Some(t) => t,
                None => {
                    return Err(here(
                        self,
                        "this function returns nothing, so it cannot be used as a value".into(),
                    ))
                }
            },
            Expr::Atomic(op, r, v) => {
                let elem = self.elem_ref(r)?;
                let tv = self.scalar(v)?;
                if tv != elem {
                    return Err(here(
                        self,
                        format!("`{}` holds {elem} but the operand is {tv}", r.array),
                    ));
                }
                let ok = match op {
                    AtomicOp::Add => elem != Bool,
                    AtomicOp::Exch => elem != Bool && !elem.is_complex(),
                    AtomicOp::Sub | AtomicOp::Min | AtomicOp::Max => elem.is_int(),
                };
                if !ok {
                    return Err(here(
                        self,
                        format!("`{}` does not support {elem} elements", op.name()),
                    ));
                }
                elem
            }
            Expr::AtomicCas(r, c, v) => {
                let elem = self.elem_ref(r)?;
                let tc = self.scalar(c)?;
                let tv = self.scalar(v)?;
                if !elem.is_int() || tc != elem || tv != elem {
                    return Err(here(
                        self,
                        format!(
                            "`atomic_cas` works on i32/i64 elements with operands of the same type (got {elem}, {tc}, {tv})"
                        ),
                    ));
                }
                elem
            }
        })
    }

    /// Checks a device-function call; returns its result type.
    fn call(&mut self, e: &Expr) -> Result<Option<ScalarType>, VerifyError> {
        let Expr::Call(name, args) = e else {
            return Err(self.err("expected a call".into()));
        };
        let here = |this: &Self, msg: String| this.err(format!("`{}`: {msg}", expr_text(e)));
        let Some(f) = self.module.device_function(name) else {
            return Err(here(
                self,
                format!("`{name}` is neither a device function of this module nor a built-in"),
            ));
        };
        if f.params.len() != args.len() {
            return Err(here(
                self,
                format!(
                    "`{name}` takes {} argument(s), got {}",
                    f.params.len(),
                    args.len()
                ),
            ));
        }
        for (p, a) in f.params.iter().zip(args) {
            match p.ty {
                Type::Scalar(pt) => {
                    let t = self.scalar(a)?;
                    if t != pt {
                        return Err(here(
                            self,
                            format!(
                                "parameter `{}` of `{name}` is {pt}, but `{}` is {t}; insert a cast",
                                p.name,
                                expr_text(a)
                            ),
                        ));
                    }
                }
                Type::Array(pa) => {
                    let Expr::Var(an) = a else {
                        return Err(here(
                            self,
                            format!(
                                "parameter `{}` of `{name}` is an array; pass an array by name",
                                p.name
                            ),
                        ));
                    };
                    let at = self.array(an)?;
                    if at.elem != pa.elem || at.ndim != pa.ndim || (pa.contiguous && !at.contiguous)
                    {
                        return Err(here(
                            self,
                            format!(
                                "parameter `{}` of `{name}` is {}, but `{an}` is {}",
                                p.name,
                                crate::text::type_text(Type::Array(pa)),
                                crate::text::type_text(Type::Array(at))
                            ),
                        ));
                    }
                }
            }
        }
        Ok(f.ret)
    }
}

// ---------------------------------------------------------------------------
// Barrier placement

struct Divergence<'a> {
    varying_fns: &'a HashSet<String>,
    varying: HashSet<String>,
    changed: bool,
}

impl Divergence<'_> {
    fn expr_varies(&self, e: &Expr) -> bool {
        let mut v = false;
        walk_expr(e, &mut |x| match x {
            Expr::Special(Special::ThreadIdx, _) | Expr::Atomic(..) | Expr::AtomicCas(..) => {
                v = true
            }
            Expr::Var(n) if self.varying.contains(n) => v = true,
            Expr::Call(n, _) if self.varying_fns.contains(n) => v = true,
            _ => {}
        });
        v
    }

    fn mark(&mut self, name: &str) {
        if self.varying.insert(name.to_string()) {
            self.changed = true;
        }
    }

    /// One pass of the fixpoint: marks locals that vary.
    fn propagate(&mut self, body: &[Stmt], divergent: bool) {
        for s in body {
            match s {
                Stmt::Let {
                    name, init: value, ..
                }
                | Stmt::Assign { name, value }
                    if divergent || self.expr_varies(value) =>
                {
                    self.mark(name);
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    let d = divergent || self.expr_varies(cond);
                    self.propagate(then_body, d);
                    self.propagate(else_body, d);
                }
                Stmt::While { cond, body } => {
                    let d = divergent || self.expr_varies(cond) || self.exits_vary(body);
                    self.propagate(body, d);
                }
                Stmt::For {
                    var,
                    start,
                    stop,
                    step,
                    body,
                } => {
                    let d = divergent
                        || self.expr_varies(start)
                        || self.expr_varies(stop)
                        || self.expr_varies(step)
                        || self.exits_vary(body);
                    if d {
                        self.mark(var);
                    }
                    self.propagate(body, d);
                }
                Stmt::ParallelFor(p) => {
                    for v in &p.vars {
                        self.mark(v);
                    }
                    self.propagate(&p.body, true);
                }
                _ => {}
            }
        }
    }

    /// Whether a loop body leaves its iteration early under varying control
    /// (a `break` or `continue` of this loop inside a varying `if`).
    fn exits_vary(&self, body: &[Stmt]) -> bool {
        fn walk(d: &Divergence<'_>, body: &[Stmt], divergent: bool) -> bool {
            body.iter().any(|s| match s {
                Stmt::Break | Stmt::Continue => divergent,
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    let dv = divergent || d.expr_varies(cond);
                    walk(d, then_body, dv) || walk(d, else_body, dv)
                }
                // `break`/`continue` inside a nested loop belong to that loop.
                _ => false,
            })
        }
        walk(self, body, false)
    }
}

fn check_barriers(k: &Kernel, varying_fns: &HashSet<String>) -> Result<(), VerifyError> {
    if !k.has_barrier() {
        return Ok(());
    }
    let mut d = Divergence {
        varying_fns,
        varying: HashSet::new(),
        changed: true,
    };
    while d.changed {
        d.changed = false;
        d.propagate(&k.body, false);
    }
    let mut exited = None;
    find_divergent_barrier(k, &d, &k.body, None, &mut exited)
}

/// `why`: the construct that makes the current code divergent, if any.
fn find_divergent_barrier(
    k: &Kernel,
    d: &Divergence<'_>,
    body: &[Stmt],
    why: Option<&str>,
    exited: &mut Option<String>,
) -> Result<(), VerifyError> {
    for s in body {
        let header = stmt_line(s);
        match s {
            Stmt::Barrier => {
                let reason = match (why, exited.as_deref()) {
                    (Some(w), _) => Some(format!(
                        "barrier in divergent code: it is inside `{w}`, which depends on the thread, so some threads of a block would wait forever; move `syncthreads()` out of it"
                    )),
                    (None, Some(r)) => Some(format!(
                        "barrier in divergent code: `{r}` earlier lets some threads of a block leave the kernel, so the rest would wait forever"
                    )),
                    (None, None) => None,
                };
                if let Some(message) = reason {
                    return Err(VerifyError {
                        kind: "kernel",
                        function: k.name.clone(),
                        construct: header,
                        message,
                    });
                }
            }
            Stmt::Return(_) => {
                if let Some(w) = why {
                    exited.get_or_insert_with(|| format!("return;` inside `{w}"));
                }
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let w = why
                    .map(str::to_string)
                    .or_else(|| d.expr_varies(cond).then(|| header.clone()));
                find_divergent_barrier(k, d, then_body, w.as_deref(), exited)?;
                find_divergent_barrier(k, d, else_body, w.as_deref(), exited)?;
            }
            Stmt::While { cond, body } => {
                let w = why.map(str::to_string).or_else(|| {
                    (d.expr_varies(cond) || d.exits_vary(body)).then(|| header.clone())
                });
                find_divergent_barrier(k, d, body, w.as_deref(), exited)?;
            }
            Stmt::For {
                start,
                stop,
                step,
                body,
                ..
            } => {
                let w = why.map(str::to_string).or_else(|| {
                    (d.expr_varies(start)
                        || d.expr_varies(stop)
                        || d.expr_varies(step)
                        || d.exits_vary(body))
                    .then(|| header.clone())
                });
                find_divergent_barrier(k, d, body, w.as_deref(), exited)?;
            }
            Stmt::ParallelFor(p) => {
                let w = why.map(str::to_string).unwrap_or_else(|| header.clone());
                find_divergent_barrier(k, d, &p.body, Some(&w), exited)?;
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_module;

    fn check(src: &str) -> Result<(), VerifyError> {
        verify_module(&parse_module(src).unwrap())
    }

    #[test]
    fn type_mismatch_names_kernel_and_construct() {
        let e = check(
            "kernel saxpy(a: f64, x: f32[::1], y: f32[::1]) {
                parallel for i in range(y.shape[0]) { y[i] = a * x[i] + y[i]; }
            }",
        )
        .unwrap_err();
        assert_eq!(e.function, "saxpy");
        assert_eq!(e.construct, "y[i] = a * x[i] + y[i];");
        assert!(e.message.contains("different types (f64 and f32)"), "{e}");
        assert!(
            e.to_string().starts_with("kernel `saxpy`: at `y[i] = "),
            "{e}"
        );
    }

    #[test]
    fn barrier_under_thread_dependent_if_is_rejected() {
        let e = check(
            "kernel k(x: f32[::1]) {
                shared t: f32[32];
                let tid: i32 = threadIdx.x;
                let half: bool = tid < 16i32;
                if half { syncthreads(); }
            }",
        )
        .unwrap_err();
        assert_eq!(e.construct, "syncthreads();");
        assert!(e.message.contains("barrier in divergent code"), "{e}");
        assert!(e.message.contains("`if half`"), "{e}");
    }

    #[test]
    fn barrier_in_uniform_loop_is_accepted() {
        check(
            "kernel k(x: f32[::1]) {
                shared t: f32[32];
                let tid: i32 = threadIdx.x;
                let s: i32 = blockDim.x / 2i32;
                while s > 0i32 {
                    if tid < s { t[tid] = t[tid] + t[tid + s]; }
                    syncthreads();
                    s = s / 2i32;
                }
                if blockIdx.x == 0i32 { syncthreads(); }
            }",
        )
        .unwrap();
    }

    #[test]
    fn barrier_in_parallel_for_or_after_divergent_exit_is_rejected() {
        let e = check(
            "kernel k(x: f32[::1]) {
                parallel for i in range(x.shape[0]) { syncthreads(); }
            }",
        )
        .unwrap_err();
        assert!(e.message.contains("parallel for i"), "{e}");
        let e = check(
            "kernel k(x: f32[::1]) {
                if threadIdx.x > 3i32 { return; }
                syncthreads();
            }",
        )
        .unwrap_err();
        assert!(e.message.contains("leave the kernel"), "{e}");
        // A variable assigned under divergent control varies too.
        let e = check(
            "kernel k(x: f32[::1]) {
                let n: i32 = 4i32;
                if threadIdx.x > 3i32 { n = 1i32; }
                for j in range(0i32, n, 1i32) { syncthreads(); }
            }",
        )
        .unwrap_err();
        assert!(e.message.contains("for j in range"), "{e}");
        // A loop left early by some threads only.
        let e = check(
            "kernel k(x: f32[::1]) {
                while true { if x[threadIdx.x] > 0.0f32 { break; } syncthreads(); }
            }",
        )
        .unwrap_err();
        assert!(e.message.contains("while true"), "{e}");
    }

    #[test]
    fn other_misuse_is_rejected() {
        let cases = [
            ("device fn f() { syncthreads(); }", "only in a kernel"),
            (
                "device fn f(x: f64) -> f64 { if x > 0.0 { return x; } }",
                "without returning",
            ),
            ("device fn f(x: f64) -> f64 { return f(x); }", "recursion"),
            ("kernel k() { break; }", "outside a loop"),
            (
                "kernel k(a: f32[::1]) { let x: f32 = a[0, 1]; }",
                "indexed with 2",
            ),
            (
                "kernel k(a: f32[::1]) { let x: f32 = a[0.5]; }",
                "indices are i32 or i64",
            ),
            (
                "kernel k(a: f32[:]) { let x: f32 = sqrt(a.shape[0]); }",
                "takes f32 or f64",
            ),
            (
                "kernel k() { let x: i32 = 1; }",
                "declared i32 but its value is i64",
            ),
            (
                "kernel k() { let x: i32 = 1i32; let x: i32 = 2i32; }",
                "already declared",
            ),
            (
                "kernel k(a: f32[::1]) { atomic_max(a[0], 1.0f32); }",
                "does not support f32",
            ),
            (
                "kernel k() { shared t: f64[10000]; }",
                "more than the 49152",
            ),
            ("kernel sqrt() { }", "built-in name"),
            (
                "device fn f(a: f32[::1]) {} kernel k(b: f32[:]) { f(b); }",
                "is f32[::1], but `b` is f32[:]",
            ),
            (
                "kernel k(a: f32[::1]) { parallel for i in range(3) { break; } }",
                "cannot leave",
            ),
            (
                "kernel k() { let x: f64 = undefined_fn(1.0); }",
                "neither a device function",
            ),
        ];
        for (src, want) in cases {
            let e = check(src).expect_err(src);
            assert!(
                e.to_string().contains(want),
                "{src}\n  gave: {e}\n  want: {want}"
            );
        }
    }
}
