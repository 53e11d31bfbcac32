//! Calls of the program's own functions with keyword arguments
//! (`fbm(n + 1, H=H)`) written positionally, as Python binds them: each
//! keyword to the parameter of its name, a parameter between them that
//! the call leaves out to its default when that default is a literal
//! (evaluated once, at the `def`, it is the same value at every call).
//! A call Python would reject (an unknown or repeated keyword, one naming
//! a positional-only parameter), or one whose callee takes `*args`,
//! `**kwargs` or keyword-only parameters, is left as it is.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Expr, Stmt};

/// What a call needs to know of a function of the module.
#[derive(Clone, Debug)]
pub struct Signature {
    /// Positional-only parameters first, then the others.
    params: Vec<String>,
    positional_only: usize,
    /// Each parameter's default, when it is a literal.
    defaults: Vec<Option<Expr>>,
}

/// The signatures of the module-level functions of `suite` that take only
/// positional-or-keyword parameters.
pub fn signatures(suite: &[Stmt]) -> HashMap<String, Signature> {
    let mut out = HashMap::new();
    for s in suite {
        let Stmt::FunctionDef(f) = s else { continue };
        let a = &f.args;
        if a.vararg.is_some() || a.kwarg.is_some() || !a.kwonlyargs.is_empty() {
            continue;
        }
        let all: Vec<&ast::ArgWithDefault> = a.posonlyargs.iter().chain(&a.args).collect();
        out.insert(
            f.name.to_string(),
            Signature {
                params: all.iter().map(|p| p.def.arg.to_string()).collect(),
                positional_only: a.posonlyargs.len(),
                defaults: all
                    .iter()
                    .map(|p| p.default.as_deref().filter(|d| literal(d)).cloned())
                    .collect(),
            },
        );
    }
    out
}

fn literal(e: &Expr) -> bool {
    match e {
        Expr::Constant(_) => true,
        Expr::UnaryOp(u) => {
            matches!(u.op, ast::UnaryOp::USub | ast::UnaryOp::UAdd) && literal(&u.operand)
        }
        _ => false,
    }
}

/// Rewrites the keyword calls of `body` (a function whose own names are
/// `local`, which shadow the module's functions); whether any changed.
pub fn positional(
    body: &mut [Stmt],
    sigs: &HashMap<String, Signature>,
    local: &HashSet<String>,
) -> bool {
    let mut changed = false;
    super::walk_body_exprs_mut(body, &mut |e| {
        let Expr::Call(c) = e else { return false };
        if c.keywords.is_empty() {
            return false;
        }
        let Expr::Name(n) = c.func.as_ref() else {
            return false;
        };
        if local.contains(n.id.as_str()) {
            return false;
        }
        let Some(sig) = sigs.get(n.id.as_str()) else {
            return false;
        };
        if let Some(args) = bind(sig, c) {
            c.args = args;
            c.keywords.clear();
            changed = true;
        }
        false
    });
    changed
}

/// The call's arguments in parameter order, up to the last one given.
fn bind(sig: &Signature, c: &ast::ExprCall) -> Option<Vec<Expr>> {
    if c.args.iter().any(|a| matches!(a, Expr::Starred(_))) || c.args.len() > sig.params.len() {
        return None;
    }
    let mut slots: Vec<Option<Expr>> = vec![None; sig.params.len()];
    for (k, a) in c.args.iter().enumerate() {
        slots[k] = Some(a.clone());
    }
    for kw in &c.keywords {
        // `**kwargs` at the call.
        let name = kw.arg.as_ref()?;
        let k = sig.params.iter().position(|p| p == name.as_str())?;
        if k < sig.positional_only || slots[k].is_some() {
            return None;
        }
        slots[k] = Some(kw.value.clone());
    }
    let last = slots.iter().rposition(Option::is_some)?;
    slots.truncate(last + 1);
    slots
        .into_iter()
        .zip(&sig.defaults)
        .map(|(given, default)| given.or_else(|| default.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustpython_parser::{ast::Ranged, parse, Mode};

    /// The module with its calls rewritten, as text of each call.
    fn calls_after(src: &str) -> Vec<String> {
        let ast::Mod::Module(m) = parse(src, Mode::Module, "t.py").unwrap() else {
            unreachable!()
        };
        let mut suite = m.body;
        let sigs = signatures(&suite);
        let mut out = Vec::new();
        for s in &mut suite {
            if let Stmt::FunctionDef(f) = s {
                positional(&mut f.body, &sigs, &HashSet::new());
            }
        }
        for s in &suite {
            let Stmt::FunctionDef(f) = s else { continue };
            super::super::walk_stmts(&f.body, &mut |st| {
                for e in super::super::stmt_exprs(st) {
                    super::super::walk_expr(e, &mut |x| {
                        if let Expr::Call(c) = x {
                            let args: Vec<String> = c
                                .args
                                .iter()
                                .map(|a| match a {
                                    Expr::Name(n) => n.id.to_string(),
                                    Expr::Constant(k) => format!("{:?}", k.value),
                                    Expr::UnaryOp(_) => format!("-{:?}", a.range()),
                                    _ => "?".into(),
                                })
                                .collect();
                            out.push(format!(
                                "{}({}) kw={}",
                                c.func.as_name_expr().map_or("?", |n| n.id.as_str()),
                                args.join(", "),
                                c.keywords.len()
                            ));
                        }
                    });
                }
            });
        }
        out
    }

    #[test]
    fn keywords_are_bound_by_name_and_gaps_take_literal_defaults() {
        let calls = calls_after(
            "def g(a, b=2, c=3.5, d=None):\n    pass\n\ndef f(x, y):\n    g(x, d=y, b=x)\n    g(x, c=y)\n",
        );
        assert_eq!(calls[0], "g(x, x, Float(3.5), y) kw=0");
        assert_eq!(calls[1], "g(x, Int(2), y) kw=0");
    }

    #[test]
    fn calls_python_rejects_or_cannot_bind_here_are_left_alone() {
        let calls = calls_after(
            "K = 1\ndef g(a, /, b=K):\n    pass\n\ndef h(a, *rest):\n    pass\n\ndef f(x):\n    g(a=x)\n    g(x, c=1)\n    g(x, x, b=x)\n    h(x, a=x)\n    g(x, b=x)\n",
        );
        // A positional-only name, an unknown keyword, a repeated one, a
        // callee with `*args`: as written.
        assert_eq!(calls[0], "g() kw=1");
        assert_eq!(calls[1], "g(x) kw=1");
        assert_eq!(calls[2], "g(x, x) kw=1");
        assert_eq!(calls[3], "h(x) kw=1");
        // `b`'s default is a name, not a literal, but it is given here.
        assert_eq!(calls[4], "g(x, x) kw=0");
    }
}
