//! One exit for a function that returns from inside `if`s: what follows
//! a returning `if` moved into the paths that go on, then each tail
//! `return` as an assignment to the same names, returned at the end.

use rustpython_parser::ast::{self, Expr, Stmt};

use super::{fresh_name, names_in, names_node, param_names, walk_stmts};

/// [`single_exit`] of a helper's body, its result names fresh to the
/// helper's own names and parameters (`args`).
pub fn single_exit_fresh(body: &mut Vec<Stmt>, args: &ast::Arguments) {
    let mut used: std::collections::HashSet<String> = param_names(args)
        .into_iter()
        .chain(names_in(body))
        .collect();
    single_exit(body, &mut |base| fresh_name(base, &mut |n| used.insert(n)));
}

/// A function that returns from inside `if`s (`if count == 0: return
/// np.nan` then `return total / count`) as one that returns once, at the
/// end: each branch binds the value to `result` (names from `fresh`), the
/// function returns it. Only when every `return` is in tail position
/// after moving what follows a returning branch into the other one, and
/// every one returns a value of the same arity (one value, or tuples of
/// one length). Returns inside loops are left alone.
pub fn single_exit(body: &mut Vec<Stmt>, fresh: &mut dyn FnMut(&str) -> String) {
    let mut nested = false;
    walk_stmts(body, &mut |s| {
        if let Stmt::If(i) = s {
            let mut inner = false;
            for b in [&i.body, &i.orelse] {
                walk_stmts(b, &mut |x| inner |= matches!(x, Stmt::Return(_)));
            }
            nested |= inner;
        }
    });
    if !nested {
        return;
    }
    let mut candidate = body.clone();
    absorb_after_returns(&mut candidate);
    if !ends_in_return(&candidate) {
        return;
    }
    // Every return must be a tail one.
    let mut all = 0;
    walk_stmts(&candidate, &mut |s| {
        all += usize::from(matches!(s, Stmt::Return(_)))
    });
    let mut tails = Vec::new();
    tail_returns(&candidate, &mut tails);
    if tails.len() != all || tails.iter().any(|v| v.is_none()) {
        return;
    }
    let arity = |v: &Option<Box<Expr>>| match v.as_deref() {
        Some(Expr::Tuple(t)) => t.elts.len(),
        _ => 1,
    };
    let n = arity(tails[0]);
    if tails.iter().any(|v| arity(v) != n) {
        return;
    }
    let names: Vec<String> = (0..n).map(|_| fresh("result")).collect();
    let range = match candidate.last() {
        Some(s) => ast::Ranged::range(s),
        None => return,
    };
    assign_tail_returns(&mut candidate, &names);
    let value = names_node(&names, range, ast::ExprContext::Load);
    candidate.push(Stmt::Return(ast::StmtReturn {
        range,
        value: Some(Box::new(value)),
    }));
    *body = candidate;
}

/// Whether control never falls off the end of `body`: it ends in a
/// `return`, or in an `if` both of whose branches do.
fn ends_in_return(body: &[Stmt]) -> bool {
    match body.last() {
        Some(Stmt::Return(_)) => true,
        Some(Stmt::If(i)) => ends_in_return(&i.body) && ends_in_return(&i.orelse),
        _ => false,
    }
}

/// Moves what follows an `if` some path of which returns into every path
/// of it that does not (`if c: return a` then `return b` is `if c: return
/// a else: return b`; in `if p: (if q: return a) x = 1` then `return x`,
/// `x = 1; return x` goes to the end of the inner `if`'s other branch and
/// of `p`'s), at every level of `if`s (not inside loops). What follows is
/// copied where several paths go on: each runs it, as Python would.
fn absorb_after_returns(body: &mut Vec<Stmt>) {
    fn may_return(body: &[Stmt]) -> bool {
        body.iter().any(|s| match s {
            Stmt::Return(_) => true,
            Stmt::If(i) => may_return(&i.body) || may_return(&i.orelse),
            _ => false,
        })
    }
    /// Appends `rest` to every path of `body` that does not return.
    fn push_tail(body: &mut Vec<Stmt>, rest: &[Stmt]) {
        if ends_in_return(body) {
            return;
        }
        if let Some(Stmt::If(i)) = body.last_mut() {
            if may_return(&i.body) || may_return(&i.orelse) {
                push_tail(&mut i.body, rest);
                push_tail(&mut i.orelse, rest);
                return;
            }
        }
        body.extend(rest.iter().cloned());
    }
    let mut k = 0;
    while k < body.len() {
        if let Stmt::If(i) = &mut body[k] {
            absorb_after_returns(&mut i.body);
            absorb_after_returns(&mut i.orelse);
        }
        if let Stmt::If(i) = &body[k] {
            if k + 1 < body.len() && (may_return(&i.body) || may_return(&i.orelse)) {
                let rest: Vec<Stmt> = body.drain(k + 1..).collect();
                let Stmt::If(i) = &mut body[k] else {
                    unreachable!("matched above")
                };
                push_tail(&mut i.body, &rest);
                push_tail(&mut i.orelse, &rest);
                // The moved statements are looked at in their new places.
                absorb_after_returns(&mut i.body);
                absorb_after_returns(&mut i.orelse);
            }
        }
        k += 1;
    }
}

/// The values of the tail `return`s of `body` (which [`ends_in_return`]).
fn tail_returns<'a>(body: &'a [Stmt], out: &mut Vec<&'a Option<Box<Expr>>>) {
    match body.last() {
        Some(Stmt::Return(r)) => out.push(&r.value),
        Some(Stmt::If(i)) => {
            tail_returns(&i.body, out);
            tail_returns(&i.orelse, out);
        }
        _ => {}
    }
}

/// Replaces each tail `return v` by `targets = v`.
fn assign_tail_returns(body: &mut [Stmt], names: &[String]) {
    match body.last_mut() {
        Some(s @ Stmt::Return(_)) => {
            let Stmt::Return(r) = &*s else {
                unreachable!("matched")
            };
            let value = r.value.clone().expect("checked: every return has a value");
            let range = r.range;
            let target = names_node(names, range, ast::ExprContext::Store);
            *s = Stmt::Assign(ast::StmtAssign {
                range,
                targets: vec![target],
                value,
                type_comment: None,
            });
        }
        Some(Stmt::If(i)) => {
            assign_tail_returns(&mut i.body, names);
            assign_tail_returns(&mut i.orelse, names);
        }
        _ => {}
    }
}
