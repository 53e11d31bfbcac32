//! One exit for a function that returns from inside `if`s: what follows
//! a returning `if` moved into the paths that go on, then each tail
//! `return` as an assignment to the same names, returned at the end (or,
//! in a procedure, removed). A procedure's bare `return` inside a loop
//! first leaves the loop by a flag and `break`.

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
/// one length). A procedure (every `return` bare) has its tail returns
/// removed instead, and its bare returns inside loops leave the loop
/// first ([`lift_loop_returns`]); a value returned inside a loop is left
/// alone.
pub fn single_exit(body: &mut Vec<Stmt>, fresh: &mut dyn FnMut(&str) -> String) {
    lift_loop_returns(body, fresh);
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
    // A procedure (every `return` bare) falls off its end as a bare
    // `return` would.
    let mut bare = true;
    walk_stmts(&candidate, &mut |s| {
        bare &= !matches!(s, Stmt::Return(r) if r.value.is_some())
    });
    if bare && !ends_in_return(&candidate) {
        let Some(range) = candidate.last().map(ast::Ranged::range) else {
            return;
        };
        candidate.push(Stmt::Return(ast::StmtReturn { range, value: None }));
    }
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
    if tails.len() != all {
        return;
    }
    if bare {
        drop_tail_returns(&mut candidate);
        *body = candidate;
        return;
    }
    if tails.iter().any(|v| v.is_none()) {
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

/// Removes each tail bare `return` (a branch left empty holds `pass`).
fn drop_tail_returns(body: &mut Vec<Stmt>) {
    match body.last_mut() {
        Some(Stmt::Return(r)) => {
            let range = r.range;
            body.pop();
            if body.is_empty() {
                body.push(Stmt::Pass(ast::StmtPass { range }));
            }
        }
        Some(Stmt::If(i)) => {
            drop_tail_returns(&mut i.body);
            drop_tail_returns(&mut i.orelse);
        }
        _ => {}
    }
}

/// A bare `return` inside a loop (a procedure that stops early: `if not
/// np.isfinite(u).all(): return`) as leaving the loop: a flag set, then
/// `break`; after the loop, `if flag: return`, which [`single_exit`] then
/// treats as any returning `if`. Innermost loops first, so a loop inside
/// another leaves both.
fn lift_loop_returns(body: &mut Vec<Stmt>, fresh: &mut dyn FnMut(&str) -> String) {
    let mut k = 0;
    while k < body.len() {
        // Inner blocks first (loops in `if`s, loops in loops).
        for b in crate::pyast::child_bodies_mut(&mut body[k]) {
            lift_loop_returns(b, fresh);
        }
        let range = ast::Ranged::range(&body[k]);
        let loop_body = match &mut body[k] {
            Stmt::For(f) => &mut f.body,
            Stmt::While(w) => &mut w.body,
            _ => {
                k += 1;
                continue;
            }
        };
        let mut bare = None;
        returns_in_loop(loop_body, &mut |r| {
            let b = r.value.is_none();
            bare = Some(bare.unwrap_or(true) && b);
        });
        // Only bare returns (a procedure's): a value returned from inside
        // a loop would be bound on one path only, which the host schedule
        // cannot type.
        if bare != Some(true) {
            k += 1;
            continue;
        }
        let flag = fresh("returned");
        replace_loop_returns(loop_body, &flag);
        let after = Stmt::If(ast::StmtIf {
            range,
            test: Box::new(super::name_node(&flag, range, ast::ExprContext::Load)),
            body: vec![Stmt::Return(ast::StmtReturn { range, value: None })],
            orelse: vec![],
        });
        body.insert(k, set_flag(&flag, false, range));
        body.insert(k + 2, after);
        k += 3;
    }
}

/// The `return`s of a loop's body, not those of loops inside it (lifted
/// already) nor of nested `def`s.
fn returns_in_loop<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a ast::StmtReturn)) {
    for s in body {
        match s {
            Stmt::Return(r) => f(r),
            Stmt::If(i) => {
                returns_in_loop(&i.body, f);
                returns_in_loop(&i.orelse, f);
            }
            Stmt::With(w) => returns_in_loop(&w.body, f),
            _ => {}
        }
    }
}

/// Each bare `return` of [`returns_in_loop`] as `flag = True; break`.
fn replace_loop_returns(body: &mut Vec<Stmt>, flag: &str) {
    let mut k = 0;
    while k < body.len() {
        match &mut body[k] {
            Stmt::Return(r) => {
                let range = r.range;
                let set = set_flag(flag, true, range);
                body.splice(k..=k, [set, Stmt::Break(ast::StmtBreak { range })]);
                k += 2;
                continue;
            }
            Stmt::If(i) => {
                replace_loop_returns(&mut i.body, flag);
                replace_loop_returns(&mut i.orelse, flag);
            }
            Stmt::With(w) => replace_loop_returns(&mut w.body, flag),
            _ => {}
        }
        k += 1;
    }
}

/// `flag = value`.
fn set_flag(flag: &str, value: bool, range: ast::text_size::TextRange) -> Stmt {
    Stmt::Assign(ast::StmtAssign {
        range,
        targets: vec![super::name_node(flag, range, ast::ExprContext::Store)],
        value: Box::new(Expr::Constant(ast::ExprConstant {
            range,
            value: ast::Constant::Bool(value),
            kind: None,
        })),
        type_comment: None,
    })
}
