//! Kernels and device functions as Numba-CUDA source: the [`Printer`] of
//! the kernel IR, which the host wrapper ([`super::python`]) also uses for
//! its own expressions (`host`: NumPy's casts, Python's exact ints).
//! Types the IR makes explicit and Numba would infer differently are kept
//! with `float32(...)`/`int64(...)` casts.

use std::collections::{HashMap, HashSet};

use port_codegen::ir::{
    AtomicOp, BinOp, CmpOp, DeviceFunction, ElemRef, Expr, Kernel, Literal, MathFn, Param,
    ScalarType, Stmt, Type, UnaryOp,
};

use crate::ir_util::match_py_mod;
use crate::lower::python_ints::checked_int_operand;
use crate::types::{numba_scalar, numpy_dtype};
// ---------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------

/// `v` cast to integer type `t`, as a decimal (`-1` as uint8 is `255`).
fn wrapped_literal(v: i64, t: ScalarType) -> String {
    let bits = t.bits();
    if t.is_unsigned() {
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        ((v as u64) & mask).to_string()
    } else {
        let shift = 64 - bits;
        ((v << shift) >> shift).to_string()
    }
}

/// An integer type whose arithmetic Numba would widen (so the printed
/// expression needs a cast to wrap like NumPy).
fn wraps(t: ScalarType) -> bool {
    t.is_int() && !matches!(t, ScalarType::I32 | ScalarType::I64)
}

pub(super) struct Printer {
    out: String,
    types: Vec<HashMap<String, Type>>,
    /// Host code: casts are NumPy's (`np.float64(…)`), not Numba's.
    pub(super) host: bool,
    /// Integer locals that are never negative (see [`nonneg_locals`]):
    /// their divisions and remainders print as Python's `//` and `%`.
    nonneg: HashSet<String>,
    /// The module checks Python int arithmetic for overflow: every kernel
    /// and device function takes [`OVERFLOW`], the flag the checks set.
    overflow: bool,
}

/// The one-element int64 device array a kernel's checked Python int
/// arithmetic (`_port_checked_mul`…) sets when it leaves int64.
pub const OVERFLOW: &str = "_port_overflow";

impl Printer {
    pub(super) fn new(params: &[Param]) -> Printer {
        let mut scope = HashMap::new();
        for p in params {
            scope.insert(p.name.clone(), p.ty);
        }
        Printer {
            out: String::new(),
            types: vec![scope],
            host: false,
            nonneg: HashSet::new(),
            overflow: false,
        }
    }

    fn declare(&mut self, name: &str, t: Type) {
        if let Some(s) = self.types.last_mut() {
            s.insert(name.to_string(), t);
        }
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        self.types.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Whether integer `e` is never negative: shapes, thread and block
    /// indices, literals, and sums, products and quotients of them.
    fn nonneg(&self, e: &Expr) -> bool {
        nonneg_expr(e, &self.nonneg)
    }

    fn ty(&self, e: &Expr) -> ScalarType {
        use ScalarType::*;
        match e {
            Expr::Lit(l) => l.ty(),
            Expr::Var(n) => self.lookup(n).and_then(Type::scalar).unwrap_or(F64),
            Expr::Special(..) => I32,
            Expr::Shape { .. } => I64,
            Expr::Unary(_, a) | Expr::Cast(_, a) if matches!(e, Expr::Unary(..)) => self.ty(a),
            Expr::Cast(t, _) => *t,
            Expr::Unary(_, a) => self.ty(a),
            Expr::Binary(op, a, _) => match op {
                BinOp::And | BinOp::Or => Bool,
                _ => self.ty(a),
            },
            Expr::Cmp(..) => Bool,
            Expr::Select(_, a, _) => self.ty(a),
            Expr::Load(r) | Expr::Atomic(_, r, _) | Expr::AtomicCas(r, _, _) => {
                match self.lookup(&r.array) {
                    Some(Type::Array(a)) => a.elem,
                    _ => F64,
                }
            }
            Expr::Math(MathFn::Fabs, args) => args.first().map_or(F64, |a| self.ty(a).component()),
            Expr::Math(_, args) => args.first().map_or(F64, |a| self.ty(a)),
            Expr::Call(..) => F64,
            Expr::Complex(a, _) => self.ty(a).complexified(),
            Expr::Part(_, a) => self.ty(a).component(),
        }
    }

    fn stmts(&mut self, body: &[Stmt], indent: usize) {
        if body.is_empty() {
            self.line(indent, "pass");
        }
        for s in body {
            self.stmt(s, indent);
        }
    }

    fn stmt(&mut self, s: &Stmt, indent: usize) {
        match s {
            Stmt::Let { name, ty, init } => {
                self.declare(name, Type::Scalar(*ty));
                let v = self.expr(init, 0);
                self.line(indent, &format!("{name} = {v}"));
            }
            Stmt::Assign { name, value } => {
                let v = self.expr(value, 0);
                self.line(indent, &format!("{name} = {v}"));
            }
            Stmt::Store { target, value } => {
                let v = self.expr(value, 0);
                let t = self.elem_ref(target);
                self.line(indent, &format!("{t} = {v}"));
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.expr(cond, 0);
                self.line(indent, &format!("if {c}:"));
                self.block(then_body, indent + 1);
                self.else_chain(else_body, indent);
            }
            Stmt::While { cond, body } => {
                let c = self.expr(cond, 0);
                self.line(indent, &format!("while {c}:"));
                self.block(body, indent + 1);
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => {
                let r = self.range(start, stop, step);
                self.line(indent, &format!("for {var} in {r}:"));
                self.types.push(HashMap::new());
                self.declare(var, Type::Scalar(ScalarType::I64));
                self.stmts(body, indent + 1);
                self.types.pop();
            }
            Stmt::ParallelFor(p) => {
                self.types.push(HashMap::new());
                for v in &p.vars {
                    self.declare(v, Type::Scalar(ScalarType::I64));
                }
                if p.vars.len() == 1 {
                    let n = self.expr(&p.extents[0], 0);
                    self.line(
                        indent,
                        &format!(
                            "for {} in range(cuda.grid(1), {n}, cuda.gridsize(1)):",
                            p.vars[0]
                        ),
                    );
                    self.stmts(&p.body, indent + 1);
                } else {
                    // The last variable runs along x (neighbouring threads,
                    // neighbouring elements of a C-order array).
                    let axes = ["x", "y", "z"];
                    let d = p.vars.len();
                    let starts: Vec<String> =
                        (0..d).map(|k| format!("start_{}", axes[k])).collect();
                    let strides: Vec<String> =
                        (0..d).map(|k| format!("stride_{}", axes[k])).collect();
                    self.line(indent, &format!("{} = cuda.grid({d})", starts.join(", ")));
                    self.line(
                        indent,
                        &format!("{} = cuda.gridsize({d})", strides.join(", ")),
                    );
                    let mut ind = indent;
                    for (k, v) in p.vars.iter().enumerate() {
                        let axis = d - 1 - k;
                        let n = self.expr(&p.extents[k], 0);
                        self.line(
                            ind,
                            &format!(
                                "for {v} in range({}, {n}, {}):",
                                starts[axis], strides[axis]
                            ),
                        );
                        ind += 1;
                    }
                    self.stmts(&p.body, ind);
                }
                self.types.pop();
            }
            Stmt::Break => self.line(indent, "break"),
            Stmt::Continue => self.line(indent, "continue"),
            Stmt::Return(None) => self.line(indent, "return"),
            Stmt::Return(Some(e)) => {
                let v = self.expr(e, 0);
                self.line(indent, &format!("return {v}"));
            }
            Stmt::Barrier => self.line(indent, "cuda.syncthreads()"),
            Stmt::Eval(e) => {
                let v = self.expr(e, 0);
                self.line(indent, &v);
            }
        }
    }

    fn block(&mut self, body: &[Stmt], indent: usize) {
        self.types.push(HashMap::new());
        self.stmts(body, indent);
        self.types.pop();
    }

    fn else_chain(&mut self, else_body: &[Stmt], indent: usize) {
        match else_body {
            [] => {}
            [Stmt::If {
                cond,
                then_body,
                else_body,
            }] => {
                let c = self.expr(cond, 0);
                self.line(indent, &format!("elif {c}:"));
                self.block(then_body, indent + 1);
                self.else_chain(else_body, indent);
            }
            body => {
                self.line(indent, "else:");
                self.block(body, indent + 1);
            }
        }
    }

    fn range(&self, start: &Expr, stop: &Expr, step: &Expr) -> String {
        let (a, b, c) = (self.expr(start, 0), self.expr(stop, 0), self.expr(step, 0));
        let zero = matches!(start, Expr::Lit(Literal::I64(0) | Literal::I32(0)));
        let one = matches!(step, Expr::Lit(Literal::I64(1) | Literal::I32(1)));
        match (zero, one) {
            (true, true) => format!("range({b})"),
            (_, true) => format!("range({a}, {b})"),
            _ => format!("range({a}, {b}, {c})"),
        }
    }

    fn elem_ref(&self, r: &ElemRef) -> String {
        let idx: Vec<String> = r.indices.iter().map(|i| self.expr(i, 0)).collect();
        format!("{}[{}]", r.array, idx.join(", "))
    }

    /// Prints `e`; `outer` is the binding power of the context.
    pub(super) fn expr(&self, e: &Expr, outer: u8) -> String {
        let (s, p) = self.expr_p(e);
        if p < outer {
            format!("({s})")
        } else {
            s
        }
    }

    fn expr_p(&self, e: &Expr) -> (String, u8) {
        const ATOM: u8 = 100;
        match e {
            Expr::Lit(l) => (literal(*l), if lit_negative(*l) { 12 } else { ATOM }),
            Expr::Var(n) => (n.clone(), ATOM),
            Expr::Special(s, a) => (format!("cuda.{}.{}", s.name(), a.name()), ATOM),
            Expr::Shape { array, axis } => (format!("{array}.shape[{axis}]"), ATOM),
            Expr::Unary(UnaryOp::Neg, a) => (format!("-{}", self.expr(a, 12)), 12),
            Expr::Unary(UnaryOp::Not, a) => {
                if self.ty(a) == ScalarType::Bool {
                    (format!("not {}", self.expr(a, 4)), 4)
                } else {
                    (format!("~{}", self.expr(a, 12)), 12)
                }
            }
            Expr::Binary(BinOp::Mul, a, b)
                if a == b && !matches!(a.as_ref(), Expr::Var(_) | Expr::Lit(_) | Expr::Load(_)) =>
            {
                (format!("{} ** 2", self.expr(a, 14)), 13)
            }
            // `n + -1` reads as `n - 1`.
            Expr::Binary(BinOp::Add, a, b) if matches!(b.as_ref(), Expr::Lit(Literal::I64(k)) if *k < 0 && *k != i64::MIN) =>
            {
                let Expr::Lit(Literal::I64(k)) = b.as_ref() else {
                    unreachable!()
                };
                let minus =
                    Expr::Binary(BinOp::Sub, a.clone(), Box::new(Expr::Lit(Literal::I64(-k))));
                self.expr_p(&minus)
            }
            // A float made a Python int, checked (`python_ints::checked_int`).
            e if checked_int_operand(e).is_some() => {
                let x = self.expr(checked_int_operand(e).expect("matched"), 0);
                if self.host {
                    (format!("int({x})"), ATOM)
                } else {
                    (format!("_port_checked_int({x}, {OVERFLOW})"), ATOM)
                }
            }
            // Python int arithmetic: exact on the host (Python's ints),
            // checked in kernels.
            Expr::Binary(op, a, b) if op.is_checked() => {
                if self.host {
                    let plain = Expr::Binary(op.unchecked(), a.clone(), b.clone());
                    return self.expr_p(&plain);
                }
                let f = match op {
                    BinOp::CheckedAdd => "_port_checked_add",
                    BinOp::CheckedSub => "_port_checked_sub",
                    _ => "_port_checked_mul",
                };
                (
                    format!("{f}({}, {}, {OVERFLOW})", self.expr(a, 0), self.expr(b, 0)),
                    ATOM,
                )
            }
            Expr::Binary(op, a, b) => {
                let (sym, p) = match op {
                    BinOp::Add => ("+", 10),
                    BinOp::Sub => ("-", 10),
                    BinOp::Mul => ("*", 11),
                    // The IR's integer division truncates (C's); Python's
                    // `//` floors: the magnitudes' quotient, signed.
                    // Of two values never negative the two agree.
                    BinOp::Div | BinOp::Rem
                        if self.ty(a).is_int() && self.nonneg(a) && self.nonneg(b) =>
                    {
                        (if *op == BinOp::Div { "//" } else { "%" }, 11)
                    }
                    BinOp::Div if self.ty(a).is_int() => {
                        let (x, y) = (self.expr(a, 0), self.expr(b, 0));
                        return (
                            format!(
                                "(abs({x}) // abs({y}) * (1 if ({x} < 0) == ({y} < 0) else -1))"
                            ),
                            ATOM,
                        );
                    }
                    // Complex numbers divide in kernels as NumPy divides
                    // them (Numba's `/` is CPython's, which raises by zero).
                    BinOp::Div if !self.host && self.ty(a).is_complex() => {
                        let z = format!("_port_cdiv({}, {})", self.expr(a, 0), self.expr(b, 0));
                        return if self.ty(a) == ScalarType::C64 {
                            (format!("complex64({z})"), ATOM)
                        } else {
                            (z, ATOM)
                        };
                    }
                    BinOp::Div => ("/", 11),
                    BinOp::FloorDiv => ("//", 11),
                    // The IR's remainder truncates, as C's and `math.fmod`;
                    // on integers (indices) it stays an integer.
                    BinOp::Rem if self.ty(a).is_int() => {
                        return (
                            format!("int(math.fmod({}, {}))", self.expr(a, 0), self.expr(b, 0)),
                            ATOM,
                        )
                    }
                    BinOp::Rem => {
                        return (
                            format!("math.fmod({}, {})", self.expr(a, 0), self.expr(b, 0)),
                            ATOM,
                        )
                    }
                    BinOp::Min | BinOp::Max => {
                        // On the host (a wrapper's Python), NumPy's own.
                        let float = self.ty(a).is_float();
                        let f = match (op, float) {
                            (BinOp::Min, true) if self.host => "np.minimum",
                            (BinOp::Max, true) if self.host => "np.maximum",
                            (BinOp::Min, true) => "_port_minimum",
                            (BinOp::Max, true) => "_port_maximum",
                            (BinOp::Min, false) => "min",
                            _ => "max",
                        };
                        return (
                            format!("{f}({}, {})", self.expr(a, 0), self.expr(b, 0)),
                            ATOM,
                        );
                    }
                    BinOp::BitAnd => ("&", 7),
                    BinOp::BitOr => ("|", 5),
                    BinOp::BitXor => ("^", 6),
                    BinOp::Shl => ("<<", 8),
                    BinOp::Shr => (">>", 8),
                    BinOp::And => ("and", 3),
                    BinOp::Or => ("or", 2),
                    BinOp::CheckedAdd | BinOp::CheckedSub | BinOp::CheckedMul => {
                        unreachable!("printed above")
                    }
                };
                // Left-associative: the right operand binds one tighter.
                let text = format!("{} {sym} {}", self.expr(a, p), self.expr(b, p + 1));
                let t = self.ty(e);
                if wraps(t) && !matches!(op, BinOp::And | BinOp::Or) {
                    // Numba widens narrow and unsigned integers to 64 bits;
                    // the cast gives NumPy's wrap-around back.
                    let conv = if self.host {
                        numpy_dtype(t)
                    } else {
                        numba_scalar(t)
                    };
                    return (format!("{conv}({text})"), ATOM);
                }
                (text, p)
            }
            Expr::Cmp(op, a, b) => {
                let sym = match op {
                    CmpOp::Eq => "==",
                    CmpOp::Ne => "!=",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                (format!("{} {sym} {}", self.expr(a, 6), self.expr(b, 6)), 5)
            }
            Expr::Cast(t, a) => {
                if let Expr::Math(MathFn::Floor | MathFn::Ceil | MathFn::Trunc, args) = a.as_ref() {
                    if t.is_int() && args.len() == 1 {
                        // math.floor already gives an integer in Python and Numba.
                        let f = match a.as_ref() {
                            Expr::Math(f, _) => f.name(),
                            _ => unreachable!(),
                        };
                        return (format!("math.{f}({})", self.expr(&args[0], 0)), ATOM);
                    }
                }
                let mut inner = self.expr(a, 0);
                if let (Expr::Lit(Literal::I64(v)), true) = (a.as_ref(), wraps(*t)) {
                    // NumPy 2 refuses `np.uint8(-1)`: print the wrapped value.
                    inner = wrapped_literal(*v, *t);
                }
                if wraps(*t) && *t != ScalarType::U64 && self.ty(a).is_float() {
                    // Through int64, as the kernels and NumPy's C casts do:
                    // Numba's direct float-to-uint8 is undefined below 0.
                    inner = if self.host {
                        format!("np.int64({inner})")
                    } else {
                        format!("int64({inner})")
                    };
                }
                match t {
                    ScalarType::Bool => (format!("{inner} != 0"), 5),
                    _ if self.host => (format!("{}({inner})", numpy_dtype(*t)), ATOM),
                    _ => (format!("{}({inner})", numba_scalar(*t)), ATOM),
                }
            }
            Expr::Select(c, a, b) => {
                if let Some((x, y)) = match_py_mod(e) {
                    return (format!("{} % {}", self.expr(x, 11), self.expr(y, 12)), 11);
                }
                (
                    format!(
                        "{} if {} else {}",
                        self.expr(a, 2),
                        self.expr(c, 2),
                        self.expr(b, 1)
                    ),
                    1,
                )
            }
            Expr::Load(r) => (self.elem_ref(r), ATOM),
            Expr::Complex(re, im) => {
                let t = self.ty(e);
                let z = format!("complex({}, {})", self.expr(re, 0), self.expr(im, 0));
                // Numba's `complex(a, b)` is complex128 whatever the parts.
                if t == ScalarType::C64 {
                    let conv = if self.host {
                        "np.complex64"
                    } else {
                        "complex64"
                    };
                    (format!("{conv}({z})"), ATOM)
                } else {
                    (z, ATOM)
                }
            }
            Expr::Part(p, z) => (format!("{}.{}", self.expr(z, ATOM), p.name()), ATOM),
            Expr::Math(f, args) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x, 0)).collect();
                let t = args.first().map_or(ScalarType::F64, |x| self.ty(x));
                if t.is_complex() {
                    let s = match f {
                        MathFn::Fabs => format!("abs({})", a[0]),
                        MathFn::Pow => {
                            return (
                                format!(
                                    "{} ** {}",
                                    self.expr(&args[0], 14),
                                    self.expr(&args[1], 13)
                                ),
                                13,
                            )
                        }
                        _ => format!("cmath.{}({})", f.name(), a.join(", ")),
                    };
                    return (s, ATOM);
                }
                let s = match f {
                    MathFn::Fmin => format!("min({})", a.join(", ")),
                    MathFn::Fmax => format!("max({})", a.join(", ")),
                    MathFn::Fabs => format!("abs({})", a[0]),
                    MathFn::Exp2 => format!("2.0 ** {}", self.expr(&args[0], 13)),
                    // An integer power of the host (`R ** K`).
                    MathFn::Pow if args.iter().all(|x| self.ty(x).is_int()) => {
                        return (
                            format!("{} ** {}", self.expr(&args[0], 14), self.expr(&args[1], 13)),
                            13,
                        )
                    }
                    MathFn::Cbrt => {
                        format!("math.copysign(abs({}) ** (1.0 / 3.0), {})", a[0], a[0])
                    }
                    MathFn::Floor | MathFn::Ceil | MathFn::Trunc => {
                        format!("{}(_port_{}({}))", numba_scalar(t), f.name(), a[0])
                    }
                    MathFn::Tgamma => format!("math.gamma({})", a[0]),
                    // Python's math has no rint (and `round` gives an int).
                    MathFn::Rint => format!("{}(_port_rint({}))", numba_scalar(t), a[0]),
                    _ => format!("math.{}({})", f.name(), a.join(", ")),
                };
                (s, if matches!(f, MathFn::Exp2) { 12 } else { ATOM })
            }
            Expr::Call(n, args) => {
                let mut a: Vec<String> = args.iter().map(|x| self.expr(x, 0)).collect();
                if self.overflow {
                    a.push(OVERFLOW.into());
                }
                (format!("{n}({})", a.join(", ")), ATOM)
            }
            Expr::Atomic(op, r, v) => {
                let f = match op {
                    AtomicOp::Add => "add",
                    AtomicOp::Sub => "sub",
                    AtomicOp::Min => "min",
                    AtomicOp::Max => "max",
                    AtomicOp::Exch => "exch",
                };
                (
                    format!(
                        "cuda.atomic.{f}({}, {}, {})",
                        r.array,
                        self.index_arg(r),
                        self.expr(v, 0)
                    ),
                    ATOM,
                )
            }
            Expr::AtomicCas(r, c, v) => (
                format!(
                    "cuda.atomic.compare_and_swap({}, {}, {})",
                    r.array,
                    self.expr(c, 0),
                    self.expr(v, 0)
                ),
                ATOM,
            ),
        }
    }

    fn index_arg(&self, r: &ElemRef) -> String {
        let idx: Vec<String> = r.indices.iter().map(|i| self.expr(i, 0)).collect();
        if idx.len() == 1 {
            idx[0].clone()
        } else {
            format!("({})", idx.join(", "))
        }
    }
}

fn lit_negative(l: Literal) -> bool {
    match l {
        Literal::I32(v) => v < 0,
        Literal::I64(v) => v < 0,
        Literal::F32(v) => v < 0.0,
        Literal::F64(v) => v < 0.0,
        Literal::Bool(_) => false,
    }
}

/// A literal in Python syntax.
pub fn literal(l: Literal) -> String {
    fn float(v: f64) -> String {
        if v.is_nan() {
            "math.nan".into()
        } else if v.is_infinite() {
            if v > 0.0 {
                "math.inf".into()
            } else {
                "-math.inf".into()
            }
        } else {
            let s = format!("{v:?}");
            if s.contains('.') || s.contains('e') {
                s
            } else {
                format!("{s}.0")
            }
        }
    }
    match l {
        Literal::Bool(b) => if b { "True" } else { "False" }.into(),
        Literal::I32(v) => v.to_string(),
        Literal::I64(v) => v.to_string(),
        Literal::F64(v) => float(v),
        Literal::F32(v) => format!("float32({})", float(f64::from(v))),
    }
}

/// See [`Printer::nonneg`].
fn nonneg_expr(e: &Expr, known: &HashSet<String>) -> bool {
    match e {
        Expr::Lit(Literal::I64(v)) => *v >= 0,
        Expr::Lit(Literal::I32(v)) => *v >= 0,
        Expr::Shape { .. } | Expr::Special(..) => true,
        Expr::Var(n) => known.contains(n),
        Expr::Cast(ScalarType::I64, a) => nonneg_expr(a, known),
        Expr::Binary(BinOp::Add | BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Rem, a, b) => {
            nonneg_expr(a, known) && nonneg_expr(b, known)
        }
        _ => false,
    }
}

/// The locals of a kernel body that are never negative: each of their
/// definitions (`let`, a `for` over a range that starts at and steps by
/// values never negative, a grid-stride loop's variable) gives one, and
/// none is ever reassigned. A least fixpoint: a local is added only on
/// evidence.
fn nonneg_locals(body: &[Stmt]) -> HashSet<String> {
    /// A local's definitions: its first value and the step a loop adds to
    /// it, or `None` for an assignment.
    type Defs<'a> = HashMap<&'a str, Vec<Option<(&'a Expr, Option<&'a Expr>)>>>;
    fn defs<'a>(body: &'a [Stmt], out: &mut Defs<'a>) {
        for s in body {
            match s {
                Stmt::Let { name, init, .. } => {
                    out.entry(name).or_default().push(Some((init, None)))
                }
                Stmt::Assign { name, .. } => out.entry(name).or_default().push(None),
                Stmt::For {
                    var,
                    start,
                    step,
                    body,
                    ..
                } => {
                    out.entry(var).or_default().push(Some((start, Some(step))));
                    defs(body, out);
                }
                Stmt::ParallelFor(p) => {
                    for v in &p.vars {
                        let zero: &'static Expr = &ZERO;
                        out.entry(v).or_default().push(Some((zero, None)));
                    }
                    defs(&p.body, out);
                }
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    defs(then_body, out);
                    defs(else_body, out);
                }
                Stmt::While { body, .. } => defs(body, out),
                _ => {}
            }
        }
    }
    static ZERO: Expr = Expr::Lit(Literal::I64(0));
    let mut all = HashMap::new();
    defs(body, &mut all);
    let mut known: HashSet<String> = HashSet::new();
    loop {
        let before = known.len();
        for (name, ds) in &all {
            if known.contains(*name) {
                continue;
            }
            let ok = ds.iter().all(|d| match d {
                Some((init, step)) => {
                    nonneg_expr(init, &known) && step.is_none_or(|s| nonneg_expr(s, &known))
                }
                None => false,
            });
            if ok {
                known.insert(name.to_string());
            }
        }
        if known.len() == before {
            return known;
        }
    }
}

pub(super) fn kernel(k: &Kernel, doc: Option<&str>, overflow: bool) -> String {
    let mut p = Printer::new(&k.params);
    p.overflow = overflow;
    p.nonneg = nonneg_locals(&k.body);
    // A parameter's name is defined by the caller too.
    for x in &k.params {
        p.nonneg.remove(&x.name);
    }
    let mut names: Vec<&str> = k.params.iter().map(|x| x.name.as_str()).collect();
    if overflow {
        names.push(OVERFLOW);
    }
    p.line(0, "@cuda.jit");
    p.line(0, &format!("def {}({}):", k.name, names.join(", ")));
    if let Some(d) = doc {
        p.line(1, &format!("\"\"\"{d}\"\"\""));
    }
    for s in &k.shared {
        let shape = if s.shape.len() == 1 {
            s.shape[0].to_string()
        } else {
            format!(
                "({})",
                s.shape
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        p.line(
            1,
            &format!(
                "{} = cuda.shared.array({shape}, {})",
                s.name,
                numba_scalar(s.elem)
            ),
        );
        p.declare(&s.name, Type::Array(s.array_type()));
    }
    p.stmts(&k.body, 1);
    p.out
}

pub(super) fn device_function(f: &DeviceFunction, overflow: bool) -> String {
    let mut p = Printer::new(&f.params);
    p.overflow = overflow;
    let mut names: Vec<&str> = f.params.iter().map(|x| x.name.as_str()).collect();
    if overflow {
        names.push(OVERFLOW);
    }
    p.line(0, "@cuda.jit(device=True)");
    p.line(0, &format!("def {}({}):", f.name, names.join(", ")));
    p.stmts(&f.body, 1);
    p.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::python::numba_names;

    use port_codegen::ir::build::*;

    #[test]
    fn narrow_integers_wrap_in_numba() {
        let params = [
            Param {
                name: "a".into(),
                ty: Type::Scalar(ScalarType::U8),
            },
            Param {
                name: "f".into(),
                ty: Type::Scalar(ScalarType::F64),
            },
        ];
        let p = Printer::new(&params);
        // Numba widens uint8 + uint8 to int64: the cast wraps it back.
        assert_eq!(
            p.expr(&add(var("a"), cast(ScalarType::U8, i64(1))), 0),
            "uint8(a + uint8(1))"
        );
        assert_eq!(
            p.expr(&cast(ScalarType::U8, var("f")), 0),
            "uint8(int64(f))"
        );
        // The largest uint64 (a reduction's identity), not `uint64(-1)`.
        assert_eq!(
            p.expr(&cast(ScalarType::U64, i64(-1)), 0),
            "uint64(18446744073709551615)"
        );
        assert_eq!(p.expr(&cast(ScalarType::I8, i64(200)), 0), "int8(-56)");
        assert_eq!(
            numba_names("x = uint8(a + b)\ny = int64(x)"),
            vec!["cuda", "int64", "uint8"]
        );
    }

    #[test]
    fn python_modulo_and_precedence() {
        let p = Printer::new(&[]);
        let e = crate::ir_util::py_mod(add(var("i"), i64(1)), var("n"), ScalarType::I64);
        assert_eq!(p.expr(&e, 0), "(i + 1) % n");
        let e = mul(
            add(var("a"), var("b")),
            sub(var("c"), sub(var("d"), var("e"))),
        );
        assert_eq!(p.expr(&e, 0), "(a + b) * (c - (d - e))");
        assert_eq!(literal(Literal::F32(0.5)), "float32(0.5)");
        assert_eq!(literal(Literal::F64(2.0)), "2.0");
        assert_eq!(literal(Literal::F64(f64::NEG_INFINITY)), "-math.inf");
    }

    #[test]
    fn integer_division_truncates_as_the_ir_says() {
        let params = [Param {
            name: "k".into(),
            ty: Type::Scalar(ScalarType::I64),
        }];
        let p = Printer::new(&params);
        let text = p.expr(&div(var("k"), i64(3)), 0);
        assert_eq!(
            text,
            "(abs(k) // abs(3) * (1 if (k < 0) == (3 < 0) else -1))"
        );
        // Floats divide as they are.
        let f = [Param {
            name: "x".into(),
            ty: Type::Scalar(ScalarType::F64),
        }];
        assert_eq!(
            Printer::new(&f).expr(&div(var("x"), f64(2.0)), 0),
            "x / 2.0"
        );
    }
}
