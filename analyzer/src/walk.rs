//! Walking a function's syntax tree, bounded in depth: every pass of the
//! analyzer (classify, deps, work) visits expressions and statements the
//! same way.

use rustpython_parser::ast::{self, Expr, Stmt};

/// How deep expressions and statements may nest before the classifier stops
/// descending (the analysis threads have large stacks; this keeps them safe).
pub const MAX_DEPTH: usize = 20_000;

/// Every statement in a body, nested bodies included, but not nested
/// function or class bodies.
pub fn walk_stmts<'s>(body: &'s [Stmt], f: &mut dyn FnMut(&'s Stmt)) {
    walk_stmts_depth(body, f, 0)
}

fn walk_stmts_depth<'s>(body: &'s [Stmt], f: &mut dyn FnMut(&'s Stmt), depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for s in body {
        f(s);
        match s {
            Stmt::For(x) => {
                walk_stmts_depth(&x.body, f, depth + 1);
                walk_stmts_depth(&x.orelse, f, depth + 1);
            }
            Stmt::While(x) => {
                walk_stmts_depth(&x.body, f, depth + 1);
                walk_stmts_depth(&x.orelse, f, depth + 1);
            }
            Stmt::If(x) => {
                walk_stmts_depth(&x.body, f, depth + 1);
                walk_stmts_depth(&x.orelse, f, depth + 1);
            }
            Stmt::With(x) => walk_stmts_depth(&x.body, f, depth + 1),
            Stmt::Try(x) => {
                walk_stmts_depth(&x.body, f, depth + 1);
                for h in &x.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    walk_stmts_depth(&h.body, f, depth + 1);
                }
                walk_stmts_depth(&x.orelse, f, depth + 1);
                walk_stmts_depth(&x.finalbody, f, depth + 1);
            }
            _ => {}
        }
    }
}

/// The expressions `e` uses for an array's metadata, not its elements: `a`
/// of `a.shape`, `a.size`, `a.ndim`, `a.dtype`, and the argument of `len(a)`.
pub fn metadata_uses(e: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    walk_expr(e, &mut |x| match x {
        Expr::Attribute(a) if matches!(a.attr.as_str(), "shape" | "size" | "ndim" | "dtype") => {
            out.push(a.value.as_ref())
        }
        Expr::Call(c) if matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "len") => {
            out.extend(c.args.iter())
        }
        _ => {}
    });
    out
}

/// Every sub-expression of `e`, pre-order, bounded in depth.
pub fn walk_expr<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e Expr)) {
    walk_expr_depth(e, f, 0)
}

fn walk_expr_depth<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e Expr), depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    f(e);
    let d = depth + 1;
    let mut go = |x: &'e Expr| walk_expr_depth(x, f, d);
    match e {
        Expr::BoolOp(b) => b.values.iter().for_each(&mut go),
        Expr::NamedExpr(n) => {
            go(&n.target);
            go(&n.value)
        }
        Expr::BinOp(b) => {
            go(&b.left);
            go(&b.right)
        }
        Expr::UnaryOp(u) => go(&u.operand),
        Expr::Lambda(l) => go(&l.body),
        Expr::IfExp(i) => {
            go(&i.test);
            go(&i.body);
            go(&i.orelse)
        }
        Expr::Dict(x) => {
            x.keys.iter().flatten().for_each(&mut go);
            x.values.iter().for_each(&mut go)
        }
        Expr::Set(x) => x.elts.iter().for_each(&mut go),
        Expr::List(x) => x.elts.iter().for_each(&mut go),
        Expr::Tuple(x) => x.elts.iter().for_each(&mut go),
        Expr::ListComp(x) => {
            go(&x.elt);
            for g in &x.generators {
                go(&g.iter);
                g.ifs.iter().for_each(&mut go);
            }
        }
        Expr::SetComp(x) => {
            go(&x.elt);
            for g in &x.generators {
                go(&g.iter);
            }
        }
        Expr::GeneratorExp(x) => {
            go(&x.elt);
            for g in &x.generators {
                go(&g.iter);
            }
        }
        Expr::DictComp(x) => {
            go(&x.key);
            go(&x.value);
            for g in &x.generators {
                go(&g.iter);
            }
        }
        Expr::Await(x) => go(&x.value),
        Expr::Yield(x) => {
            if let Some(v) = &x.value {
                go(v)
            }
        }
        Expr::YieldFrom(x) => go(&x.value),
        Expr::Compare(c) => {
            go(&c.left);
            c.comparators.iter().for_each(&mut go)
        }
        Expr::Call(c) => {
            go(&c.func);
            c.args.iter().for_each(&mut go);
            for k in &c.keywords {
                go(&k.value)
            }
        }
        Expr::FormattedValue(x) => go(&x.value),
        Expr::JoinedStr(x) => x.values.iter().for_each(&mut go),
        Expr::Attribute(a) => go(&a.value),
        Expr::Subscript(s) => {
            go(&s.value);
            go(&s.slice)
        }
        Expr::Starred(s) => go(&s.value),
        Expr::Slice(s) => {
            for p in [&s.lower, &s.upper, &s.step].into_iter().flatten() {
                go(p)
            }
        }
        Expr::Name(_) | Expr::Constant(_) => {}
    }
}
