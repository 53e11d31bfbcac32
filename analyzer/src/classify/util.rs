//! Free helpers of the classifier: the types of constants, captured
//! arguments and arithmetic results, dtype names, the container methods
//! nopython mode supports, and the loop shapes Numba lifts. They use no
//! checker state, so every part of the pass may call them.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::model::ArgType;
use crate::symbols::{dotted, FnNode, FunctionSymbol};
use crate::ty::Ty;
use crate::walk::{walk_expr, walk_stmts};

/// Methods of list, dict and set that nopython mode supports.
pub(super) fn is_container_method(m: &str) -> bool {
    matches!(
        m,
        "append"
            | "extend"
            | "pop"
            | "insert"
            | "remove"
            | "clear"
            | "copy"
            | "count"
            | "index"
            | "reverse"
            | "sort"
            | "get"
            | "keys"
            | "values"
            | "items"
            | "setdefault"
            | "update"
            | "add"
            | "discard"
            | "union"
            | "intersection"
            | "difference"
            | "issubset"
            | "issuperset"
            | "symmetric_difference"
            | "popitem"
    )
}

/// A source snippet short enough for a one-line message.
pub(super) fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        let cut: String = one_line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

pub(super) fn scalar_or_row(ndim: Option<u8>) -> Ty {
    match ndim {
        Some(0) => Ty::Float,
        Some(n) => Ty::array(Some(n)),
        None => Ty::Unknown,
    }
}

pub(super) fn scalar_of(dtype: &Option<String>) -> Ty {
    match dtype.as_deref() {
        Some(d) if d.starts_with("int") || d.starts_with("uint") => Ty::Int,
        Some("bool") => Ty::Bool,
        Some(d) if d.starts_with("complex") => Ty::Complex,
        _ => Ty::Float,
    }
}

pub(super) fn const_ty(c: &ast::Constant) -> Ty {
    match c {
        ast::Constant::Int(_) => Ty::Int,
        ast::Constant::Float(_) => Ty::Float,
        ast::Constant::Bool(_) => Ty::Bool,
        ast::Constant::Complex { .. } => Ty::Complex,
        ast::Constant::Str(_) => Ty::Str,
        ast::Constant::Bytes(_) => Ty::Unknown,
        ast::Constant::Tuple(t) => Ty::Tuple(t.iter().map(const_ty).collect()),
        ast::Constant::None | ast::Constant::Ellipsis => Ty::NoneT,
    }
}

pub(super) fn join_arith(a: &Ty, b: &Ty) -> Ty {
    match (a, b) {
        (x, y) if x.is_array() || y.is_array() => {
            if x.is_array() {
                x.clone()
            } else {
                y.clone()
            }
        }
        (Ty::Complex, _) | (_, Ty::Complex) => Ty::Complex,
        (Ty::Float, _) | (_, Ty::Float) => Ty::Float,
        (Ty::Int, Ty::Int) | (Ty::Int, Ty::Bool) | (Ty::Bool, Ty::Int) => Ty::Int,
        (Ty::Bool, Ty::Bool) => Ty::Int,
        _ => Ty::Unknown,
    }
}

pub(super) fn ty_of_captured(cap: &ArgType) -> Ty {
    match cap.kind.as_str() {
        "ndarray" => Ty::Array {
            ndim: cap.ndim.map(|n| n.min(255) as u8),
            dtype: Some(cap.dtype.clone()),
        },
        "scalar" => match cap.dtype.as_str() {
            "int" | "int64" | "int32" => Ty::Int,
            "float" | "float64" | "float32" => Ty::Float,
            "bool" => Ty::Bool,
            "complex" => Ty::Complex,
            "str" => Ty::Str,
            _ => Ty::Unknown,
        },
        _ => match cap.dtype.as_str() {
            "list" => Ty::List,
            "dict" => Ty::Dict,
            "set" => Ty::Set,
            "tuple" => Ty::Tuple(vec![]),
            "str" => Ty::Str,
            "NoneType" => Ty::NoneT,
            other => Ty::Instance(other.to_string()),
        },
    }
}

/// `np.float32`, `"float32"`, `float` → a NumPy dtype name.
pub(super) fn dtype_name(e: &Expr) -> Option<String> {
    let raw = match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Str(s) => s.clone(),
            _ => return None,
        },
        other => dotted(other)?,
    };
    let last = raw.rsplit('.').next().unwrap_or(&raw);
    Some(
        match last {
            "float" | "float_" | "double" | "f8" => "float64",
            "single" | "f4" => "float32",
            "int" | "int_" | "i8" => "int64",
            "i4" => "int32",
            "bool" | "bool_" => "bool",
            "complex" => "complex128",
            other => other,
        }
        .to_string(),
    )
}

pub(super) fn binds_name(f: &FunctionSymbol, name: &str) -> bool {
    let args = f.node.args();
    if args
        .posonlyargs
        .iter()
        .chain(args.args.iter())
        .chain(args.kwonlyargs.iter())
        .any(|a| a.def.arg.as_str() == name)
    {
        return true;
    }
    let body: &[Stmt] = match f.node {
        FnNode::Def(d) => &d.body,
        FnNode::AsyncDef(d) => &d.body,
        FnNode::Lambda(_) => return false,
    };
    let mut found = false;
    walk_stmts(body, &mut |s| {
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![a.target.as_ref()],
            Stmt::AnnAssign(a) => vec![a.target.as_ref()],
            Stmt::For(f) => vec![f.target.as_ref()],
            Stmt::FunctionDef(d) => {
                if d.name.as_str() == name {
                    found = true;
                }
                vec![]
            }
            _ => vec![],
        };
        for t in targets {
            walk_expr(t, &mut |e| {
                if let Expr::Name(n) = e {
                    if n.id.as_str() == name {
                        found = true;
                    }
                }
            });
        }
    });
    found
}

pub(super) fn outermost_loops<'s>(body: &'s [Stmt], out: &mut Vec<&'s Stmt>) {
    for s in body {
        match s {
            Stmt::For(_) | Stmt::While(_) => out.push(s),
            Stmt::If(i) => {
                outermost_loops(&i.body, out);
                outermost_loops(&i.orelse, out);
            }
            Stmt::With(w) => outermost_loops(&w.body, out),
            Stmt::Try(t) => {
                outermost_loops(&t.body, out);
                outermost_loops(&t.orelse, out);
                outermost_loops(&t.finalbody, out);
            }
            _ => {}
        }
    }
}

pub(super) fn contains_return_or_yield(s: &Stmt) -> bool {
    let mut found = false;
    walk_stmts(std::slice::from_ref(s), &mut |st| {
        if matches!(st, Stmt::Return(_)) {
            found = true;
        }
        if let Stmt::Expr(e) = st {
            if matches!(e.value.as_ref(), Expr::Yield(_) | Expr::YieldFrom(_)) {
                found = true;
            }
        }
    });
    found
}
