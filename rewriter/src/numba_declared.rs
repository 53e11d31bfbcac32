//! The types a function declares to Numba: the eager signature of its
//! `@njit("float64[:](float64[:], int64)")` decorator (its arguments and
//! return), its `locals=`, and whether Numba compiles it at all. The
//! planner takes declared types before any it would read from the body
//! ([`crate::signature`]).

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::types::ArgType;

/// [`numba_declared`] of `function` in `source`.
pub fn numba_declared_types(source: &str, file_name: &str, function: &str) -> Option<Vec<ArgType>> {
    let src = crate::source::SourceFile::parse(file_name, source).ok()?;
    numba_declared(&src, crate::source::find(&src, function).ok()?.def)
}

/// The argument types `function` declares to Numba: an eager signature
/// of its `@njit("float64[:](float64[:], int64)")` or `@jit([...])`
/// decorator, written as `--signature` reads it, one per parameter. Of
/// several, the first that takes an array (the one a kernel is for), else
/// the first. `None` without one, or when none reads (`types.float64(...)`
/// objects, records). Numba compiles exactly these, so the plan is
/// verified on arguments the original accepts. (`@cuda.jit` kernels are
/// GPU code already, and `@vectorize` signatures are per element: neither
/// is read.)
pub fn numba_declared(
    src: &crate::source::SourceFile,
    def: &ast::StmtFunctionDef,
) -> Option<Vec<ArgType>> {
    Some(numba_signature(src, def)?.0)
}

/// Whether Numba compiles `def` on the CPU (`@njit`, `@jit`, with or
/// without arguments): its caller then sees Numba's meaning, not
/// CPython's (scalars returned as Python numbers, `locals=` types).
pub fn numba_jitted(src: &crate::source::SourceFile, def: &ast::StmtFunctionDef) -> bool {
    def.decorator_list.iter().any(|d| {
        let f = match d {
            Expr::Call(c) => c.func.as_ref(),
            e => e,
        };
        is_numba_jit(src, f)
    })
}

/// The calls among `def`'s decorators that are Numba's `@njit(…)` or
/// `@jit(…)`.
fn jit_calls<'a>(
    src: &'a crate::source::SourceFile,
    def: &'a ast::StmtFunctionDef,
) -> impl Iterator<Item = &'a ast::ExprCall> {
    def.decorator_list.iter().filter_map(move |d| match d {
        Expr::Call(c) if is_numba_jit(src, &c.func) => Some(c),
        _ => None,
    })
}

fn is_numba_jit(src: &crate::source::SourceFile, f: &Expr) -> bool {
    src.resolve(f).is_some_and(|f| {
        matches!(
            f.as_str(),
            "numba.njit" | "numba.jit" | "numba.core.decorators.njit" | "numba.core.decorators.jit"
        )
    })
}

/// The `locals={"name": numba.types.float32, ...}` of `def`'s Numba
/// decorator: names whose every binding Numba casts to the type given.
/// Entries whose type is not a scalar port reads are left out.
pub fn numba_locals(
    src: &crate::source::SourceFile,
    def: &ast::StmtFunctionDef,
) -> Vec<(String, port_codegen::ir::ScalarType)> {
    let mut out = Vec::new();
    for c in jit_calls(src, def) {
        for k in &c.keywords {
            let (Some("locals"), Expr::Dict(m)) = (k.arg.as_deref(), &k.value) else {
                continue;
            };
            for (key, value) in m.keys.iter().zip(&m.values) {
                let Some(name) = key.as_ref().and_then(string_constant) else {
                    continue;
                };
                // `numba.types.float32`, `nb.float32`, `types.f4`, "float32".
                let ty = match value {
                    Expr::Attribute(a) => crate::types::scalar_from_name(a.attr.as_str()),
                    Expr::Name(n) => src
                        .resolve(value)
                        .filter(|f| f.starts_with("numba."))
                        .and_then(|_| crate::types::scalar_from_name(n.id.as_str())),
                    e => string_constant(e).and_then(crate::types::scalar_from_name),
                };
                if let Some(t) = ty {
                    out.push((name.to_string(), t));
                }
            }
        }
    }
    out
}

/// The argument types of the Numba signature [`numba_declared`] picks,
/// and its return type when that is a scalar (`b1(u1[::1], i4)` returns
/// a bool: Numba casts what the body returns to it).
pub fn numba_signature(
    src: &crate::source::SourceFile,
    def: &ast::StmtFunctionDef,
) -> Option<(Vec<ArgType>, Option<port_codegen::ir::ScalarType>)> {
    let params = def.args.args.len();
    let mut read: Vec<(Vec<ArgType>, Option<port_codegen::ir::ScalarType>)> = Vec::new();
    for c in jit_calls(src, def) {
        let Some(first) = c.args.first() else {
            continue;
        };
        // The signatures as written, or a module-level name for them
        // (`SIGNATURES = ["f8[:](f8[:])", ...]`, `@njit(SIGNATURES)`).
        let first = match first {
            Expr::Name(n) => match module_binding(src, n.id.as_str()) {
                Some(v) => v,
                None => continue,
            },
            e => e,
        };
        let strings: Vec<&str> = match first {
            Expr::Constant(k) => k.value.as_str().map(|s| s.as_str()).into_iter().collect(),
            Expr::List(l) => l.elts.iter().filter_map(string_constant).collect(),
            Expr::Tuple(t) => t.elts.iter().filter_map(string_constant).collect(),
            _ => Vec::new(),
        };
        read.extend(strings.into_iter().filter_map(|s| {
            let args = declared_arguments(s).filter(|t| t.len() == params)?;
            Some((args, declared_return(s)))
        }));
    }
    let array = read
        .iter()
        .position(|(t, _)| t.iter().any(|a| matches!(a, ArgType::Array(_))));
    let k = array.unwrap_or(0);
    (k < read.len()).then(|| read.swap_remove(k))
}

/// The value `name` is bound to at the module level, when one top-level
/// assignment binds it and nothing else does.
fn module_binding<'a>(src: &'a crate::source::SourceFile, name: &str) -> Option<&'a Expr> {
    let mut value = None;
    for s in src.suite.iter() {
        match s {
            Stmt::Assign(a) if a.targets.len() == 1 => {
                if matches!(&a.targets[0], Expr::Name(t) if t.id.as_str() == name) {
                    if value.is_some() {
                        return None;
                    }
                    value = Some(a.value.as_ref());
                }
            }
            s if crate::pyast::rebinds(std::slice::from_ref(s), name) => return None,
            _ => {}
        }
    }
    value
}

fn string_constant(e: &Expr) -> Option<&str> {
    match e {
        Expr::Constant(k) => k.value.as_str().map(|s| s.as_str()),
        _ => None,
    }
}

/// The return type of one Numba signature string `ret(a, b)`, when it is
/// a scalar type (`b1`, `float32`); `None` for `void`, arrays, tuples or
/// none written.
fn declared_return(sig: &str) -> Option<port_codegen::ir::ScalarType> {
    let ret = sig.trim().split_once('(')?.0;
    crate::types::scalar_from_name(ret)
}

/// The arguments of one Numba signature string, `ret(a, b)` or `(a, b)`:
/// the last parenthesised group (a return type may have its own, as
/// `UniTuple(float64, 2)(float64[:])`), when each entry is a type.
fn declared_arguments(sig: &str) -> Option<Vec<ArgType>> {
    let sig = sig.trim();
    let body = sig.strip_suffix(')')?;
    let mut depth = 0i32;
    let mut open = None;
    for (k, c) in body.char_indices().rev() {
        match c {
            ')' | ']' => depth += 1,
            '[' => depth -= 1,
            '(' if depth == 0 => {
                open = Some(k);
                break;
            }
            '(' => depth -= 1,
            _ => {}
        }
    }
    let inner = &body[open? + 1..];
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    crate::types::parse_signature_items(inner)
        .ok()?
        .into_iter()
        .map(|item| match item {
            crate::types::SigItem::Type(t) => Some(t),
            crate::types::SigItem::Literal(_) => None,
        })
        .collect()
}
