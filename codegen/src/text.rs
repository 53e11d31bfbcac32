//! The readable text form of the kernel IR: a printer and a parser that
//! round-trip (`parse(print(m)) == m`).
//!
//! ```text
//! # comments run to the end of the line
//! device fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
//!     return min(max(x, lo), hi);
//! }
//!
//! kernel saxpy(a: f32, x: f32[:], y: f32[::1]) {
//!     parallel for i in range(y.shape[0]) {
//!         y[i] = a * x[i] + y[i];
//!     }
//! }
//! ```
//!
//! Types follow Numba's spelling: `f32[::1]` / `f64[:, ::1]` are C-contiguous
//! arrays, `f32[:]` / `f64[:, :]` arrays of any layout. A shared array is
//! declared at the top of a kernel: `shared tile: f64[256];`.
//! Scalar types: `bool`, `i8` … `i64`, `u8` … `u64`, `f32`, `f64`.
//! Literals: `1` is `i64`, `1.0` is `f64`; other types take a suffix
//! (`1i32`, `0.5f32`; narrow and unsigned ones read as casts: `7u8` is
//! `u8(7)`); `true`, `false`; `inf`, `nan`, `inf_f32`, `nan_f32`.
//! Casts are written as calls to the type (`f32(i)`), math as calls
//! (`sqrt(x)`), and so are `min`, `max`, `select(c, a, b)`, `atomic_add(a[i], v)`
//! (also `_sub`, `_min`, `_max`, `_exch`), `atomic_cas(a[i], expected, new)` and
//! `syncthreads()`. Thread indices are `threadIdx.x`, `blockIdx.y`, `blockDim.x`,
//! `gridDim.x`. Operators and their precedence are C's, plus Python's `//`.

use std::fmt::Write as _;

use crate::ir::*;

/// A syntax error in the text form, with its 1-based position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

// ---------------------------------------------------------------------------
// Printer

/// Prints a module in the text form.
pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    let mut first = true;
    for f in &m.device_functions {
        if !first {
            out.push('\n');
        }
        first = false;
        print_device_function(&mut out, f);
    }
    for k in &m.kernels {
        if !first {
            out.push('\n');
        }
        first = false;
        print_kernel(&mut out, k);
    }
    out
}

fn print_params(out: &mut String, params: &[Param]) {
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}: {}", p.name, type_text(p.ty));
    }
}

fn print_device_function(out: &mut String, f: &DeviceFunction) {
    let _ = write!(out, "device fn {}(", f.name);
    print_params(out, &f.params);
    out.push(')');
    if let Some(r) = f.ret {
        let _ = write!(out, " -> {r}");
    }
    out.push_str(" {\n");
    print_body(out, &f.body, 1);
    out.push_str("}\n");
}

fn print_kernel(out: &mut String, k: &Kernel) {
    let _ = write!(out, "kernel {}(", k.name);
    print_params(out, &k.params);
    out.push_str(") {\n");
    for s in &k.shared {
        let dims: Vec<String> = s.shape.iter().map(|d| d.to_string()).collect();
        let _ = writeln!(
            out,
            "    shared {}: {}[{}];",
            s.name,
            s.elem,
            dims.join(", ")
        );
    }
    print_body(out, &k.body, 1);
    out.push_str("}\n");
}

/// The text spelling of a type (`f64[:, ::1]`).
pub fn type_text(t: Type) -> String {
    match t {
        Type::Scalar(s) => s.name().to_string(),
        Type::Array(a) => {
            let mut dims = vec![":"; a.ndim as usize];
            if a.contiguous {
                if let Some(last) = dims.last_mut() {
                    *last = "::1";
                }
            }
            format!("{}[{}]", a.elem, dims.join(", "))
        }
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("    ");
    }
}

fn print_body(out: &mut String, body: &[Stmt], level: usize) {
    for s in body {
        print_stmt(out, s, level);
    }
}

fn print_block(out: &mut String, body: &[Stmt], level: usize) {
    out.push_str("{\n");
    print_body(out, body, level + 1);
    indent(out, level);
    out.push('}');
}

fn print_stmt(out: &mut String, s: &Stmt, level: usize) {
    indent(out, level);
    match s {
        Stmt::If { .. } => {
            print_if(out, s, level);
            out.push('\n');
        }
        Stmt::While { cond, body } => {
            let _ = write!(out, "while {} ", expr_text(cond));
            print_block(out, body, level);
            out.push('\n');
        }
        Stmt::For {
            var,
            start,
            stop,
            step,
            body,
        } => {
            let _ = write!(
                out,
                "for {var} in range({}, {}, {}) ",
                expr_text(start),
                expr_text(stop),
                expr_text(step)
            );
            print_block(out, body, level);
            out.push('\n');
        }
        Stmt::ParallelFor(p) => {
            out.push_str(&parallel_header(p));
            out.push(' ');
            print_block(out, &p.body, level);
            out.push('\n');
        }
        _ => {
            out.push_str(&stmt_line(s));
            out.push('\n');
        }
    }
}

fn print_if(out: &mut String, s: &Stmt, level: usize) {
    if let Stmt::If {
        cond,
        then_body,
        else_body,
    } = s
    {
        let _ = write!(out, "if {} ", expr_text(cond));
        print_block(out, then_body, level);
        match else_body.as_slice() {
            [] => {}
            [nested @ Stmt::If { .. }] => {
                out.push_str(" else ");
                print_if(out, nested, level);
            }
            _ => {
                out.push_str(" else ");
                print_block(out, else_body, level);
            }
        }
    }
}

fn parallel_header(p: &ParallelFor) -> String {
    let extents: Vec<String> = p.extents.iter().map(expr_text).collect();
    if p.vars.len() == 1 {
        format!(
            "parallel for {} in range({})",
            p.vars[0],
            extents.join(", ")
        )
    } else {
        format!(
            "parallel for ({}) in range({})",
            p.vars.join(", "),
            extents.join(", ")
        )
    }
}

/// A one-line summary of a statement: the whole statement for simple ones,
/// the header for compound ones. Used by error messages to name the construct.
pub fn stmt_line(s: &Stmt) -> String {
    match s {
        Stmt::Let { name, ty, init } => format!("let {name}: {ty} = {};", expr_text(init)),
        Stmt::Assign { name, value } => format!("{name} = {};", expr_text(value)),
        Stmt::Store { target, value } => {
            format!("{} = {};", elem_text(target), expr_text(value))
        }
        Stmt::If { cond, .. } => format!("if {}", expr_text(cond)),
        Stmt::While { cond, .. } => format!("while {}", expr_text(cond)),
        Stmt::For {
            var,
            start,
            stop,
            step,
            ..
        } => format!(
            "for {var} in range({}, {}, {})",
            expr_text(start),
            expr_text(stop),
            expr_text(step)
        ),
        Stmt::ParallelFor(p) => parallel_header(p),
        Stmt::Break => "break;".into(),
        Stmt::Continue => "continue;".into(),
        Stmt::Return(None) => "return;".into(),
        Stmt::Return(Some(e)) => format!("return {};", expr_text(e)),
        Stmt::Barrier => "syncthreads();".into(),
        Stmt::Eval(e) => format!("{};", expr_text(e)),
    }
}

fn elem_text(r: &ElemRef) -> String {
    let idx: Vec<String> = r.indices.iter().map(expr_text).collect();
    format!("{}[{}]", r.array, idx.join(", "))
}

fn binop_prec(op: BinOp) -> u8 {
    match op {
        BinOp::Or => 1,
        BinOp::And => 2,
        BinOp::BitOr => 4,
        BinOp::BitXor => 5,
        BinOp::BitAnd => 6,
        BinOp::Shl | BinOp::Shr => 7,
        BinOp::Add | BinOp::Sub => 8,
        BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Rem => 9,
        BinOp::Min | BinOp::Max | BinOp::CheckedAdd | BinOp::CheckedSub | BinOp::CheckedMul => {
            ATOM_PREC
        }
    }
}

const CMP_PREC: u8 = 3;
const UNARY_PREC: u8 = 10;
const ATOM_PREC: u8 = 11;

fn expr_prec(e: &Expr) -> u8 {
    match e {
        Expr::Binary(op, ..) => binop_prec(*op),
        Expr::Cmp(..) => CMP_PREC,
        Expr::Unary(..) => UNARY_PREC,
        // A negative literal starts with `-`: treat it as a unary expression.
        Expr::Lit(Literal::I32(v)) if *v < 0 => UNARY_PREC,
        Expr::Lit(Literal::I64(v)) if *v < 0 => UNARY_PREC,
        Expr::Lit(Literal::F32(v)) if v.is_sign_negative() => UNARY_PREC,
        Expr::Lit(Literal::F64(v)) if v.is_sign_negative() => UNARY_PREC,
        _ => ATOM_PREC,
    }
}

/// Prints an expression in the text form.
pub fn expr_text(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

fn write_operand(out: &mut String, e: &Expr, min_prec: u8) {
    if expr_prec(e) < min_prec {
        out.push('(');
        write_expr(out, e);
        out.push(')');
    } else {
        write_expr(out, e);
    }
}

fn float_text<F: std::fmt::Debug + Copy>(v: F, is_nan: bool, is_inf: bool, neg: bool) -> String {
    if is_nan {
        "nan".into()
    } else if is_inf {
        if neg { "-inf" } else { "inf" }.into()
    } else {
        let s = format!("{v:?}");
        s
    }
}

fn literal_text(l: Literal) -> String {
    match l {
        Literal::Bool(b) => b.to_string(),
        Literal::I32(v) => format!("{v}i32"),
        Literal::I64(v) => v.to_string(),
        Literal::F32(v) => {
            let s = float_text(v, v.is_nan(), v.is_infinite(), v < 0.0);
            if v.is_nan() || v.is_infinite() {
                format!("{s}_f32")
            } else {
                format!("{s}f32")
            }
        }
        Literal::F64(v) => float_text(v, v.is_nan(), v.is_infinite(), v < 0.0),
    }
}

fn write_args(out: &mut String, args: &[Expr]) {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, a);
    }
}

fn write_expr(out: &mut String, e: &Expr) {
    match e {
        Expr::Lit(l) => out.push_str(&literal_text(*l)),
        Expr::Var(n) => out.push_str(n),
        Expr::Special(s, a) => {
            let _ = write!(out, "{}.{}", s.name(), a.name());
        }
        Expr::Shape { array, axis } => {
            let _ = write!(out, "{array}.shape[{axis}]");
        }
        Expr::Unary(op, a) => {
            out.push(match op {
                UnaryOp::Neg => '-',
                UnaryOp::Not => '!',
            });
            // `-(5)` keeps a negated literal apart from the literal `-5`, and
            // `-(-x)` keeps `--` from appearing.
            if matches!(**a, Expr::Lit(_)) || expr_prec(a) <= UNARY_PREC {
                out.push('(');
                write_expr(out, a);
                out.push(')');
            } else {
                write_expr(out, a);
            }
        }
        Expr::Binary(op, a, b) if op.is_call() => {
            let _ = write!(out, "{}(", op.symbol());
            write_args(out, &[(**a).clone(), (**b).clone()]);
            out.push(')');
        }
        Expr::Binary(op, a, b) => {
            let p = binop_prec(*op);
            write_operand(out, a, p);
            let _ = write!(out, " {} ", op.symbol());
            write_operand(out, b, p + 1);
        }
        Expr::Cmp(op, a, b) => {
            write_operand(out, a, CMP_PREC + 1);
            let _ = write!(out, " {} ", op.symbol());
            write_operand(out, b, CMP_PREC + 1);
        }
        Expr::Cast(t, a) => {
            let _ = write!(out, "{t}(");
            write_expr(out, a);
            out.push(')');
        }
        Expr::Select(c, a, b) => {
            out.push_str("select(");
            write_args(out, &[(**c).clone(), (**a).clone(), (**b).clone()]);
            out.push(')');
        }
        Expr::Load(r) => out.push_str(&elem_text(r)),
        Expr::Math(f, args) => {
            let _ = write!(out, "{}(", f.name());
            write_args(out, args);
            out.push(')');
        }
        Expr::Call(name, args) => {
            let _ = write!(out, "{name}(");
            write_args(out, args);
            out.push(')');
        }
        Expr::Atomic(op, r, v) => {
            let _ = write!(out, "{}({}, ", op.name(), elem_text(r));
            write_expr(out, v);
            out.push(')');
        }
        Expr::Complex(re, im) => {
            out.push_str("complex(");
            write_args(out, &[(**re).clone(), (**im).clone()]);
            out.push(')');
        }
        Expr::Part(p, z) => {
            let _ = write!(out, "{}(", p.name());
            write_expr(out, z);
            out.push(')');
        }
        Expr::AtomicCas(r, c, v) => {
            let _ = write!(out, "atomic_cas({}, ", elem_text(r));
            write_expr(out, c);
            out.push_str(", ");
            write_expr(out, v);
            out.push(')');
        }
    }
}

// ---------------------------------------------------------------------------
// Lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// Digits (possibly with `.`/exponent) and an optional type suffix.
    Number {
        text: String,
        is_float: bool,
        suffix: Option<ScalarType>,
    },
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

const PUNCTS: [&str; 33] = [
    "->", "::", "//", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<",
    ">", "=", "!", "&", "|", "^", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".",
];

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Number { text, .. } => format!("number `{text}`"),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Eof => "end of input".into(),
    }
}

fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            col += 1;
            continue;
        }
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let (start_line, start_col) = (line, col);
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            col += i - start;
            toks.push(Token {
                tok: Tok::Ident(word),
                line: start_line,
                col: start_col,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            let mut is_float = false;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
                is_float = true;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text: String = chars[start..i].iter().collect();
            let suf_start = i;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let suffix_text: String = chars[suf_start..i].iter().collect();
            let suffix = if suffix_text.is_empty() {
                None
            } else {
                match ScalarType::from_name(&suffix_text) {
                    Some(t) if t != ScalarType::Bool => Some(t),
                    _ => {
                        return Err(ParseError {
                            line: start_line,
                            col: start_col + (suf_start - start),
                            message: format!(
                                "unknown literal suffix `{suffix_text}` (use i8 … i64, u8 … u64, f32 or f64)"
                            ),
                        })
                    }
                }
            };
            col += i - start;
            toks.push(Token {
                tok: Tok::Number {
                    text,
                    is_float,
                    suffix,
                },
                line: start_line,
                col: start_col,
            });
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                i += p.len();
                col += p.len();
                toks.push(Token {
                    tok: Tok::Punct(p),
                    line: start_line,
                    col: start_col,
                });
            }
            None => {
                return Err(ParseError {
                    line,
                    col,
                    message: format!("unexpected character `{c}`"),
                })
            }
        }
    }
    toks.push(Token {
        tok: Tok::Eof,
        line,
        col,
    });
    Ok(toks)
}

// ---------------------------------------------------------------------------
// Parser

/// Parses the text form of a whole module.
pub fn parse_module(src: &str) -> Result<Module, ParseError> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
    };
    let mut m = Module::default();
    while !p.at_eof() {
        if p.eat_ident("device") {
            p.expect_ident("fn")?;
            m.device_functions.push(p.device_function()?);
        } else if p.eat_ident("kernel") {
            m.kernels.push(p.kernel()?);
        } else {
            return Err(p.error_here("expected `kernel` or `device fn`"));
        }
    }
    Ok(m)
}

/// Parses a single expression (for tests and tools).
pub fn parse_expr(src: &str) -> Result<Expr, ParseError> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
    };
    let e = p.expr()?;
    if !p.at_eof() {
        return Err(p.error_here("expected end of expression"));
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

const RESERVED: [&str; 21] = [
    "let",
    "if",
    "else",
    "while",
    "for",
    "in",
    "range",
    "parallel",
    "break",
    "continue",
    "return",
    "kernel",
    "device",
    "fn",
    "shared",
    "true",
    "false",
    "syncthreads",
    "select",
    "complex",
    "atomic_cas",
];

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    fn at_eof(&self) -> bool {
        matches!(self.peek(), Tok::Eof)
    }

    fn bump(&mut self) -> Tok {
        let t = self.toks[self.pos].tok.clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn error_here(&self, what: &str) -> ParseError {
        let t = &self.toks[self.pos];
        ParseError {
            line: t.line,
            col: t.col,
            message: format!("{what}, found {}", describe(&t.tok)),
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, p: &str) -> Result<(), ParseError> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.error_here(&format!("expected `{p}`")))
        }
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(w) if w == word)
    }

    fn eat_ident(&mut self, word: &str) -> bool {
        if self.is_ident(word) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_ident(&mut self, word: &str) -> Result<(), ParseError> {
        if self.eat_ident(word) {
            Ok(())
        } else {
            Err(self.error_here(&format!("expected `{word}`")))
        }
    }

    fn name(&mut self) -> Result<String, ParseError> {
        match self.peek().clone() {
            Tok::Ident(w) if !RESERVED.contains(&w.as_str()) => {
                self.bump();
                Ok(w)
            }
            _ => Err(self.error_here("expected a name")),
        }
    }

    fn scalar_type(&mut self) -> Result<ScalarType, ParseError> {
        if let Tok::Ident(w) = self.peek() {
            if let Some(t) = ScalarType::from_name(w) {
                self.bump();
                return Ok(t);
            }
        }
        Err(self.error_here("expected a type (bool, i32, i64, f32, f64)"))
    }

    /// `f64`, `f64[:]`, `f64[:, ::1]`.
    fn param_type(&mut self) -> Result<Type, ParseError> {
        let elem = self.scalar_type()?;
        if !self.eat_punct("[") {
            return Ok(Type::Scalar(elem));
        }
        let mut dims = Vec::new();
        loop {
            if self.eat_punct("::") {
                match self.bump() {
                    Tok::Number { text, .. } if text == "1" => dims.push(true),
                    _ => return Err(self.error_here("expected `1` after `::`")),
                }
            } else if self.eat_punct(":") {
                dims.push(false);
            } else {
                return Err(self.error_here("expected `:` or `::1` in an array type"));
            }
            if self.eat_punct("]") {
                break;
            }
            self.expect_punct(",")?;
        }
        let contiguous = match dims.iter().position(|&c| c) {
            None => false,
            Some(p) if p == dims.len() - 1 => true,
            Some(_) => {
                return Err(self.error_here(
                    "only C-contiguous layouts (`::1` last) are spelled out; use `:` everywhere for any layout",
                ))
            }
        };
        if dims.len() > crate::ir::MAX_DIMS as usize {
            return Err(self.error_here("arrays have at most 4 dimensions"));
        }
        Ok(Type::Array(ArrayType {
            elem,
            ndim: dims.len() as u8,
            contiguous,
        }))
    }

    fn params(&mut self) -> Result<Vec<Param>, ParseError> {
        self.expect_punct("(")?;
        let mut params = Vec::new();
        if !self.eat_punct(")") {
            loop {
                let name = self.name()?;
                self.expect_punct(":")?;
                let ty = self.param_type()?;
                params.push(Param { name, ty });
                if self.eat_punct(")") {
                    break;
                }
                self.expect_punct(",")?;
            }
        }
        Ok(params)
    }

    fn device_function(&mut self) -> Result<DeviceFunction, ParseError> {
        let name = self.name()?;
        let params = self.params()?;
        let ret = if self.eat_punct("->") {
            Some(self.scalar_type()?)
        } else {
            None
        };
        let body = self.block()?;
        Ok(DeviceFunction {
            name,
            params,
            ret,
            body,
        })
    }

    fn kernel(&mut self) -> Result<Kernel, ParseError> {
        let name = self.name()?;
        let params = self.params()?;
        self.expect_punct("{")?;
        let mut shared = Vec::new();
        let mut body = Vec::new();
        while !self.eat_punct("}") {
            if self.at_eof() {
                return Err(self.error_here("expected `}`"));
            }
            if self.eat_ident("shared") {
                let name = self.name()?;
                self.expect_punct(":")?;
                let elem = self.scalar_type()?;
                self.expect_punct("[")?;
                let mut shape = Vec::new();
                loop {
                    match self.bump() {
                        Tok::Number {
                            text,
                            is_float: false,
                            suffix: None,
                        } => shape
                            .push(text.parse::<u32>().map_err(|_| {
                                self.error_here("shared array dimension too large")
                            })?),
                        _ => {
                            self.pos -= 1;
                            return Err(
                                self.error_here("expected a constant shared array dimension")
                            );
                        }
                    }
                    if self.eat_punct("]") {
                        break;
                    }
                    self.expect_punct(",")?;
                }
                self.expect_punct(";")?;
                shared.push(SharedArray { name, elem, shape });
            } else {
                body.push(self.stmt()?);
            }
        }
        Ok(Kernel {
            name,
            params,
            shared,
            body,
        })
    }

    fn block(&mut self) -> Result<Vec<Stmt>, ParseError> {
        self.expect_punct("{")?;
        let mut body = Vec::new();
        while !self.eat_punct("}") {
            if self.at_eof() {
                return Err(self.error_here("expected `}`"));
            }
            if self.is_ident("shared") {
                return Err(
                    self.error_here("shared arrays are declared at the top level of a kernel")
                );
            }
            body.push(self.stmt()?);
        }
        Ok(body)
    }

    fn stmt(&mut self) -> Result<Stmt, ParseError> {
        if self.eat_ident("let") {
            let name = self.name()?;
            self.expect_punct(":")?;
            let ty = self.scalar_type()?;
            self.expect_punct("=")?;
            let init = self.expr()?;
            self.expect_punct(";")?;
            return Ok(Stmt::Let { name, ty, init });
        }
        if self.eat_ident("if") {
            return self.if_rest();
        }
        if self.eat_ident("while") {
            let cond = self.expr()?;
            let body = self.block()?;
            return Ok(Stmt::While { cond, body });
        }
        if self.eat_ident("for") {
            let var = self.name()?;
            self.expect_ident("in")?;
            self.expect_ident("range")?;
            self.expect_punct("(")?;
            let start = self.expr()?;
            self.expect_punct(",")?;
            let stop = self.expr()?;
            self.expect_punct(",")?;
            let step = self.expr()?;
            self.expect_punct(")")?;
            let body = self.block()?;
            return Ok(Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            });
        }
        if self.eat_ident("parallel") {
            self.expect_ident("for")?;
            let mut vars = Vec::new();
            if self.eat_punct("(") {
                loop {
                    vars.push(self.name()?);
                    if self.eat_punct(")") {
                        break;
                    }
                    self.expect_punct(",")?;
                }
            } else {
                vars.push(self.name()?);
            }
            self.expect_ident("in")?;
            self.expect_ident("range")?;
            self.expect_punct("(")?;
            let mut extents = vec![self.expr()?];
            while self.eat_punct(",") {
                extents.push(self.expr()?);
            }
            self.expect_punct(")")?;
            let body = self.block()?;
            return Ok(Stmt::ParallelFor(ParallelFor {
                vars,
                extents,
                body,
            }));
        }
        if self.eat_ident("break") {
            self.expect_punct(";")?;
            return Ok(Stmt::Break);
        }
        if self.eat_ident("continue") {
            self.expect_punct(";")?;
            return Ok(Stmt::Continue);
        }
        if self.eat_ident("return") {
            if self.eat_punct(";") {
                return Ok(Stmt::Return(None));
            }
            let e = self.expr()?;
            self.expect_punct(";")?;
            return Ok(Stmt::Return(Some(e)));
        }
        if self.eat_ident("syncthreads") {
            self.expect_punct("(")?;
            self.expect_punct(")")?;
            self.expect_punct(";")?;
            return Ok(Stmt::Barrier);
        }
        // `x = e;`, `a[i] = e;`, or an expression statement.
        if let Tok::Ident(name) = self.peek().clone() {
            if matches!(self.peek_at(1), Tok::Punct("=")) {
                let name = self.name()?;
                self.bump();
                let value = self.expr()?;
                self.expect_punct(";")?;
                return Ok(Stmt::Assign { name, value });
            }
            if matches!(self.peek_at(1), Tok::Punct("[")) {
                self.bump();
                let indices = self.index_list()?;
                self.expect_punct("=")?;
                let value = self.expr()?;
                self.expect_punct(";")?;
                return Ok(Stmt::Store {
                    target: ElemRef {
                        array: name,
                        indices,
                    },
                    value,
                });
            }
        }
        let e = self.expr()?;
        self.expect_punct(";")?;
        Ok(Stmt::Eval(e))
    }

    fn if_rest(&mut self) -> Result<Stmt, ParseError> {
        let cond = self.expr()?;
        let then_body = self.block()?;
        let else_body = if self.eat_ident("else") {
            if self.eat_ident("if") {
                vec![self.if_rest()?]
            } else {
                self.block()?
            }
        } else {
            Vec::new()
        };
        Ok(Stmt::If {
            cond,
            then_body,
            else_body,
        })
    }

    /// After the opening `[`: `i, j]`.
    fn index_list(&mut self) -> Result<Vec<Expr>, ParseError> {
        self.expect_punct("[")?;
        let mut idx = vec![self.expr()?];
        while self.eat_punct(",") {
            idx.push(self.expr()?);
        }
        self.expect_punct("]")?;
        Ok(idx)
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.binary(1)
    }

    fn binary(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        while let Tok::Punct(p) = self.peek().clone() {
            if let Some(op) = cmp_of(p) {
                if CMP_PREC < min_prec {
                    break;
                }
                self.bump();
                let rhs = self.binary(CMP_PREC + 1)?;
                lhs = Expr::Cmp(op, Box::new(lhs), Box::new(rhs));
                if let Tok::Punct(q) = self.peek() {
                    if cmp_of(q).is_some() {
                        return Err(self.error_here(
                            "comparisons do not chain; use `&&` between two comparisons",
                        ));
                    }
                }
                continue;
            }
            let Some(op) = binop_of(p) else { break };
            let prec = binop_prec(op);
            if prec < min_prec {
                break;
            }
            self.bump();
            let rhs = self.binary(prec + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.is_punct("-") {
            if let Tok::Number { .. } = self.peek_at(1) {
                self.bump();
                return self.number(true);
            }
            if matches!(self.peek_at(1), Tok::Ident(w) if w == "inf" || w == "inf_f32") {
                self.bump();
                return self.atom().map(|e| match e {
                    Expr::Lit(Literal::F64(v)) => Expr::Lit(Literal::F64(-v)),
                    Expr::Lit(Literal::F32(v)) => Expr::Lit(Literal::F32(-v)),
                    other => other,
                });
            }
            self.bump();
            let e = self.unary()?;
            return Ok(Expr::Unary(UnaryOp::Neg, Box::new(e)));
        }
        if self.eat_punct("!") {
            let e = self.unary()?;
            return Ok(Expr::Unary(UnaryOp::Not, Box::new(e)));
        }
        self.atom()
    }

    fn number(&mut self, negative: bool) -> Result<Expr, ParseError> {
        let here = self.pos;
        let Tok::Number {
            text,
            is_float,
            suffix,
        } = self.bump()
        else {
            return Err(self.error_here("expected a number"));
        };
        let bad = |this: &Parser, what: &str| {
            let t = &this.toks[here];
            ParseError {
                line: t.line,
                col: t.col,
                message: format!("literal `{text}` {what}"),
            }
        };
        let signed = if negative {
            format!("-{text}")
        } else {
            text.clone()
        };
        let ty = suffix.unwrap_or(if is_float {
            ScalarType::F64
        } else {
            ScalarType::I64
        });
        let lit = match ty {
            ScalarType::I32 | ScalarType::I64 if is_float => {
                return Err(bad(self, "has a fraction but an integer suffix"))
            }
            ScalarType::I32 => Literal::I32(
                signed
                    .parse()
                    .map_err(|_| bad(self, "does not fit in i32"))?,
            ),
            ScalarType::I64 => Literal::I64(
                signed
                    .parse()
                    .map_err(|_| bad(self, "does not fit in i64"))?,
            ),
            ScalarType::F32 => {
                Literal::F32(signed.parse().map_err(|_| bad(self, "is not a float"))?)
            }
            ScalarType::F64 | ScalarType::Bool => {
                Literal::F64(signed.parse().map_err(|_| bad(self, "is not a float"))?)
            }
            // Narrow and unsigned integers have no literal of their own: the
            // IR writes them as a cast of an i64 (`cast<u8>(5)`).
            t if is_float => {
                return Err(bad(
                    self,
                    &format!("has a fraction but the integer suffix {t}"),
                ))
            }
            t => {
                let v: i64 = signed
                    .parse()
                    .map_err(|_| bad(self, "does not fit in i64"))?;
                return Ok(Expr::Cast(t, Box::new(Expr::Lit(Literal::I64(v)))));
            }
        };
        Ok(Expr::Lit(lit))
    }

    fn call_args(&mut self) -> Result<Vec<Expr>, ParseError> {
        self.expect_punct("(")?;
        let mut args = Vec::new();
        if !self.eat_punct(")") {
            loop {
                args.push(self.expr()?);
                if self.eat_punct(")") {
                    break;
                }
                self.expect_punct(",")?;
            }
        }
        Ok(args)
    }

    fn args_exactly(&mut self, what: &str, n: usize) -> Result<Vec<Expr>, ParseError> {
        let at = self.pos;
        let args = self.call_args()?;
        if args.len() != n {
            let t = &self.toks[at];
            return Err(ParseError {
                line: t.line,
                col: t.col,
                message: format!("`{what}` takes {n} argument(s), got {}", args.len()),
            });
        }
        Ok(args)
    }

    /// `a[i, j]` as the first argument of an atomic.
    fn elem_ref(&mut self) -> Result<ElemRef, ParseError> {
        let array = self.name()?;
        let indices = self.index_list()?;
        Ok(ElemRef { array, indices })
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        match self.peek().clone() {
            Tok::Number { .. } => self.number(false),
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect_punct(")")?;
                Ok(e)
            }
            Tok::Ident(w) => {
                self.bump();
                self.ident_expr(w)
            }
            _ => Err(self.error_here("expected an expression")),
        }
    }

    fn ident_expr(&mut self, w: String) -> Result<Expr, ParseError> {
        match w.as_str() {
            "true" => return Ok(Expr::Lit(Literal::Bool(true))),
            "false" => return Ok(Expr::Lit(Literal::Bool(false))),
            "inf" => return Ok(Expr::Lit(Literal::F64(f64::INFINITY))),
            "nan" => return Ok(Expr::Lit(Literal::F64(f64::NAN))),
            "inf_f32" => return Ok(Expr::Lit(Literal::F32(f32::INFINITY))),
            "nan_f32" => return Ok(Expr::Lit(Literal::F32(f32::NAN))),
            "threadIdx" | "blockIdx" | "blockDim" | "gridDim" => {
                let s = match w.as_str() {
                    "threadIdx" => Special::ThreadIdx,
                    "blockIdx" => Special::BlockIdx,
                    "blockDim" => Special::BlockDim,
                    _ => Special::GridDim,
                };
                self.expect_punct(".")?;
                let axis = match self.bump() {
                    Tok::Ident(a) if a == "x" => Axis::X,
                    Tok::Ident(a) if a == "y" => Axis::Y,
                    Tok::Ident(a) if a == "z" => Axis::Z,
                    _ => {
                        self.pos -= 1;
                        return Err(self.error_here("expected `x`, `y` or `z`"));
                    }
                };
                return Ok(Expr::Special(s, axis));
            }
            _ => {}
        }
        if !self.is_punct("(") {
            if RESERVED.contains(&w.as_str()) {
                self.pos -= 1;
                return Err(self.error_here("expected an expression"));
            }
            if self.is_punct("[") {
                let indices = self.index_list()?;
                return Ok(Expr::Load(ElemRef { array: w, indices }));
            }
            if self.is_punct(".") {
                self.bump();
                self.expect_ident("shape")?;
                self.expect_punct("[")?;
                let axis = match self.bump() {
                    Tok::Number {
                        text,
                        is_float: false,
                        suffix: None,
                    } => text.parse::<u8>().ok(),
                    _ => None,
                };
                let Some(axis) = axis else {
                    self.pos -= 1;
                    return Err(self.error_here("expected a constant axis"));
                };
                self.expect_punct("]")?;
                return Ok(Expr::Shape { array: w, axis });
            }
            return Ok(Expr::Var(w));
        }
        // Calls.
        if let Some(t) = ScalarType::from_name(&w) {
            let mut a = self.args_exactly(&w, 1)?;
            return Ok(Expr::Cast(t, Box::new(a.remove(0))));
        }
        if let Some(f) = MathFn::from_name(&w) {
            let a = self.args_exactly(&w, f.arity())?;
            return Ok(Expr::Math(f, a));
        }
        let atomic = match w.as_str() {
            "atomic_add" => Some(AtomicOp::Add),
            "atomic_sub" => Some(AtomicOp::Sub),
            "atomic_min" => Some(AtomicOp::Min),
            "atomic_max" => Some(AtomicOp::Max),
            "atomic_exch" => Some(AtomicOp::Exch),
            _ => None,
        };
        if let Some(op) = atomic {
            self.expect_punct("(")?;
            let r = self.elem_ref()?;
            self.expect_punct(",")?;
            let v = self.expr()?;
            self.expect_punct(")")?;
            return Ok(Expr::Atomic(op, r, Box::new(v)));
        }
        match w.as_str() {
            "atomic_cas" => {
                self.expect_punct("(")?;
                let r = self.elem_ref()?;
                self.expect_punct(",")?;
                let c = self.expr()?;
                self.expect_punct(",")?;
                let v = self.expr()?;
                self.expect_punct(")")?;
                Ok(Expr::AtomicCas(r, Box::new(c), Box::new(v)))
            }
            "min" | "max" | "checked_add" | "checked_sub" | "checked_mul" => {
                let mut a = self.args_exactly(&w, 2)?;
                let b = a.pop().unwrap_or(Expr::Lit(Literal::Bool(false)));
                let x = a.pop().unwrap_or(Expr::Lit(Literal::Bool(false)));
                let op = match w.as_str() {
                    "min" => BinOp::Min,
                    "max" => BinOp::Max,
                    "checked_add" => BinOp::CheckedAdd,
                    "checked_sub" => BinOp::CheckedSub,
                    _ => BinOp::CheckedMul,
                };
                Ok(Expr::Binary(op, Box::new(x), Box::new(b)))
            }
            "complex" => {
                let mut a = self.args_exactly("complex", 2)?;
                let im = a.pop().unwrap_or(Expr::Lit(Literal::F64(0.0)));
                let re = a.pop().unwrap_or(Expr::Lit(Literal::F64(0.0)));
                Ok(Expr::Complex(Box::new(re), Box::new(im)))
            }
            "real" | "imag" => {
                let mut a = self.args_exactly(&w, 1)?;
                let z = a.pop().unwrap_or(Expr::Lit(Literal::F64(0.0)));
                let part = if w == "real" { Part::Re } else { Part::Im };
                Ok(Expr::Part(part, Box::new(z)))
            }
            "select" => {
                let mut a = self.args_exactly("select", 3)?;
                let b = a.pop().unwrap_or(Expr::Lit(Literal::Bool(false)));
                let x = a.pop().unwrap_or(Expr::Lit(Literal::Bool(false)));
                let c = a.pop().unwrap_or(Expr::Lit(Literal::Bool(false)));
                Ok(Expr::Select(Box::new(c), Box::new(x), Box::new(b)))
            }
            _ if RESERVED.contains(&w.as_str()) => {
                self.pos -= 1;
                Err(self.error_here("expected an expression"))
            }
            _ => {
                let args = self.call_args()?;
                Ok(Expr::Call(w, args))
            }
        }
    }
}

fn cmp_of(p: &str) -> Option<CmpOp> {
    Some(match p {
        "==" => CmpOp::Eq,
        "!=" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::Le,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::Ge,
        _ => return None,
    })
}

fn binop_of(p: &str) -> Option<BinOp> {
    Some(match p {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "//" => BinOp::FloorDiv,
        "%" => BinOp::Rem,
        "&" => BinOp::BitAnd,
        "|" => BinOp::BitOr,
        "^" => BinOp::BitXor,
        "<<" => BinOp::Shl,
        ">>" => BinOp::Shr,
        "&&" => BinOp::And,
        "||" => BinOp::Or,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(src: &str) -> Module {
        let m = parse_module(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let printed = print_module(&m);
        let again = parse_module(&printed).unwrap_or_else(|e| panic!("{e}\n{printed}"));
        assert_eq!(m, again, "printed:\n{printed}");
        assert_eq!(printed, print_module(&again));
        m
    }

    #[test]
    fn precedence_and_literals_round_trip() {
        let src = "kernel k(a: f64[:, ::1], b: f32[:], n: i32) {
            let x: i64 = 1 + 2 * 3 - (4 - 5) - -6;
            let y: f32 = -(1.5f32) * b[0] - -2.5e-3f32;
            let z: bool = x < 3 && !(x == 4) || n >= 2i32;
            let w: i32 = (n << 2i32) >> 1i32 & 7i32 | 8i32 ^ 1i32;
            let q: f64 = -a[x // 2, x % 3] / select(z, 1.0, -inf);
            let r: i64 = -9223372036854775808;
            let s: f64 = min(sqrt(2.0), max(pow(2.0, 0.5), -(a.shape[1] < 2 || true)));
        }";
        let m = roundtrip(src);
        let Stmt::Let { init, .. } = &m.kernels[0].body[0] else {
            panic!()
        };
        // 1 + 2 * 3 - (4 - 5) - -6 == ((1 + (2 * 3)) - (4 - 5)) - (-6)
        assert_eq!(
            expr_text(init),
            "1 + 2 * 3 - (4 - 5) - -6",
            "the printer drops only the parentheses it can"
        );
        let Stmt::Let { init, .. } = &m.kernels[0].body[5] else {
            panic!()
        };
        assert_eq!(init, &Expr::Lit(Literal::I64(i64::MIN)));
    }

    #[test]
    fn statements_round_trip() {
        roundtrip(
            "device fn f(x: f64, v: f64[:]) -> f64 {
                let i: i32 = 0i32;
                while i < 10i32 { i = i + 1i32; if i == 3i32 { continue; } else if i > 8i32 { break; } else { i = i; } }
                for j in range(10, 0, -1) { v[j] = f64(j); }
                return x;
            }
            device fn g() {
                return;
            }
            kernel k(x: f64[:, :], out: f64[::1]) {
                shared t: f64[16, 16];
                shared u: i32[32];
                parallel for (i, j) in range(x.shape[0], x.shape[1]) {
                    x[i, j] = f(x[i, j], out);
                }
                syncthreads();
                let old: f64 = atomic_add(out[0], 1.0);
                atomic_cas(u[threadIdx.x], 0i32, 1i32);
                g();
            }",
        );
    }

    #[test]
    fn parse_errors_say_where_and_what() {
        let e = parse_module("kernel k() {\n  let x: i32 = ;\n}").unwrap_err();
        assert_eq!((e.line, e.col), (2, 16));
        assert!(e.message.contains("expected an expression"), "{e}");
        let e = parse_module("kernel k(a: f32[::1, :]) {}").unwrap_err();
        assert!(e.message.contains("C-contiguous"), "{e}");
        let e = parse_module("kernel k() { let x: i32 = 3u7; }").unwrap_err();
        assert!(e.message.contains("unknown literal suffix"), "{e}");
        let e = parse_module("kernel k() { let x: bool = 1 < 2 < 3; }").unwrap_err();
        assert!(e.message.contains("do not chain"), "{e}");
        let e = parse_module("kernel k() { let x: i32 = 99999999999i32; }").unwrap_err();
        assert!(e.message.contains("does not fit in i32"), "{e}");
    }
}
