//! Walking Python's AST (rustpython): the few traversals the rewrites need.

use rustpython_parser::ast::{self, Expr, Stmt};

/// Calls `f` on `e` and every sub-expression (comprehensions included).
pub fn walk_expr<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(e);
    let mut go = |x: &'a Expr| walk_expr(x, f);
    match e {
        Expr::BoolOp(b) => b.values.iter().for_each(go),
        Expr::NamedExpr(n) => {
            go(&n.target);
            go(&n.value);
        }
        Expr::BinOp(b) => {
            go(&b.left);
            go(&b.right);
        }
        Expr::UnaryOp(u) => go(&u.operand),
        Expr::Lambda(l) => go(&l.body),
        Expr::IfExp(i) => {
            go(&i.test);
            go(&i.body);
            go(&i.orelse);
        }
        Expr::Dict(d) => {
            d.keys.iter().flatten().for_each(&mut go);
            d.values.iter().for_each(go);
        }
        Expr::Set(s) => s.elts.iter().for_each(go),
        Expr::ListComp(c) => {
            go(&c.elt);
            comps(&c.generators, &mut go);
        }
        Expr::SetComp(c) => {
            go(&c.elt);
            comps(&c.generators, &mut go);
        }
        Expr::DictComp(c) => {
            go(&c.key);
            go(&c.value);
            comps(&c.generators, &mut go);
        }
        Expr::GeneratorExp(c) => {
            go(&c.elt);
            comps(&c.generators, &mut go);
        }
        Expr::Await(a) => go(&a.value),
        Expr::Yield(y) => y.value.iter().for_each(|v| go(v)),
        Expr::YieldFrom(y) => go(&y.value),
        Expr::Compare(c) => {
            go(&c.left);
            c.comparators.iter().for_each(go);
        }
        Expr::Call(c) => {
            go(&c.func);
            c.args.iter().for_each(&mut go);
            c.keywords.iter().for_each(|k| go(&k.value));
        }
        Expr::FormattedValue(v) => go(&v.value),
        Expr::JoinedStr(j) => j.values.iter().for_each(go),
        Expr::Attribute(a) => go(&a.value),
        Expr::Subscript(s) => {
            go(&s.value);
            go(&s.slice);
        }
        Expr::Starred(s) => go(&s.value),
        Expr::List(l) => l.elts.iter().for_each(go),
        Expr::Tuple(t) => t.elts.iter().for_each(go),
        Expr::Slice(s) => {
            s.lower.iter().for_each(|v| go(v));
            s.upper.iter().for_each(|v| go(v));
            s.step.iter().for_each(|v| go(v));
        }
        Expr::Constant(_) | Expr::Name(_) => {}
    }
}

fn comps<'a>(gens: &'a [ast::Comprehension], go: &mut dyn FnMut(&'a Expr)) {
    for g in gens {
        go(&g.target);
        go(&g.iter);
        g.ifs.iter().for_each(&mut *go);
    }
}

/// Calls `f` on every statement in `body`, nested bodies included.
pub fn walk_stmts<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in body {
        f(s);
        for b in child_bodies(s) {
            walk_stmts(b, f);
        }
    }
}

/// The statement lists nested directly in `s`.
pub fn child_bodies(s: &Stmt) -> Vec<&[Stmt]> {
    match s {
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::If(i) => vec![&i.body, &i.orelse],
        Stmt::With(w) => vec![&w.body],
        Stmt::Try(t) => {
            let mut v: Vec<&[Stmt]> = vec![&t.body, &t.orelse, &t.finalbody];
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                v.push(&h.body);
            }
            v
        }
        _ => vec![],
    }
}

/// [`child_bodies`], to change.
pub fn child_bodies_mut(s: &mut Stmt) -> Vec<&mut Vec<Stmt>> {
    match s {
        Stmt::For(f) => vec![&mut f.body, &mut f.orelse],
        Stmt::While(w) => vec![&mut w.body, &mut w.orelse],
        Stmt::If(i) => vec![&mut i.body, &mut i.orelse],
        Stmt::With(w) => vec![&mut w.body],
        Stmt::Try(t) => {
            let mut v: Vec<&mut Vec<Stmt>> = vec![&mut t.body, &mut t.orelse, &mut t.finalbody];
            for h in &mut t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                v.push(&mut h.body);
            }
            v
        }
        _ => vec![],
    }
}

/// The expressions a statement holds directly (not those of nested bodies).
pub fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match s {
        Stmt::Assign(a) => {
            let mut v: Vec<&Expr> = a.targets.iter().collect();
            v.push(&a.value);
            v
        }
        Stmt::AugAssign(a) => vec![&a.target, &a.value],
        Stmt::AnnAssign(a) => {
            let mut v = vec![a.target.as_ref()];
            if let Some(x) = &a.value {
                v.push(x);
            }
            v
        }
        Stmt::For(f) => vec![&f.target, &f.iter],
        Stmt::While(w) => vec![&w.test],
        Stmt::If(i) => vec![&i.test],
        Stmt::Return(r) => r.value.iter().map(|b| b.as_ref()).collect(),
        Stmt::Expr(e) => vec![&e.value],
        Stmt::Assert(a) => {
            let mut v = vec![a.test.as_ref()];
            if let Some(m) = &a.msg {
                v.push(m);
            }
            v
        }
        Stmt::Delete(d) => d.targets.iter().collect(),
        _ => vec![],
    }
}

/// Whether `e` mentions the name `n`.
pub fn mentions(e: &Expr, n: &str) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let Expr::Name(m) = x {
            found |= m.id.as_str() == n;
        }
    });
    found
}

/// Whether any statement of `body` (nested included) mentions `n`.
pub fn body_mentions(body: &[Stmt], n: &str) -> bool {
    let mut found = false;
    walk_stmts(body, &mut |s| {
        found |= stmt_exprs(s).iter().any(|e| mentions(e, n));
    });
    found
}

/// Names bound by an assignment target (`a`, `a, b`), not subscripts.
pub fn target_names(t: &Expr) -> Vec<String> {
    match t {
        Expr::Name(n) => vec![n.id.to_string()],
        Expr::Tuple(tu) => tu.elts.iter().flat_map(target_names).collect(),
        Expr::List(l) => l.elts.iter().flat_map(target_names).collect(),
        Expr::Starred(s) => target_names(&s.value),
        _ => vec![],
    }
}

/// Names `body` binds anew as a whole (`a = …`, `a, b = …`, a `for`
/// target, `with … as a`), anywhere; not `a += …`, which changes an array
/// in place.
pub fn names_rebound(body: &[Stmt]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    walk_stmts(body, &mut |s| match s {
        Stmt::Assign(a) => out.extend(a.targets.iter().flat_map(target_names)),
        Stmt::AnnAssign(a) => out.extend(target_names(&a.target)),
        Stmt::For(f) => out.extend(target_names(&f.target)),
        Stmt::With(w) => out.extend(
            w.items
                .iter()
                .filter_map(|i| i.optional_vars.as_deref())
                .flat_map(target_names),
        ),
        _ => {}
    });
    out
}

/// Whether a call's only keyword is `out=` (`np.add(a, b, out=c)`).
pub fn out_keyword(c: &ast::ExprCall) -> bool {
    matches!(c.keywords.as_slice(), [k] if k.arg.as_deref() == Some("out"))
}

/// The `out=` arrays of the calls in a statement (`np.add(a, b, out=c)`
/// writes `c`), not looking into nested statements.
pub fn out_targets(s: &Stmt) -> Vec<&Expr> {
    let mut out = Vec::new();
    for e in stmt_exprs(s) {
        walk_expr(e, &mut |x| {
            if let Expr::Call(c) = x {
                for k in &c.keywords {
                    if k.arg.as_deref() == Some("out") {
                        out.push(&k.value);
                    }
                }
            }
        });
    }
    out
}

/// Names bound (`a = …`, `a += …`, `a, b = …`) somewhere inside a `for`
/// or `while` of `body`.
pub fn names_bound_in_loops(body: &[Stmt]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    walk_stmts(body, &mut |s| {
        if let Stmt::For(_) | Stmt::While(_) = s {
            for b in child_bodies(s) {
                walk_stmts(b, &mut |x| match x {
                    Stmt::Assign(a) => out.extend(a.targets.iter().flat_map(target_names)),
                    Stmt::AugAssign(a) => out.extend(target_names(&a.target)),
                    Stmt::AnnAssign(a) => out.extend(target_names(&a.target)),
                    _ => {}
                });
            }
        }
    });
    out
}

/// Whether `body` may change the array `name` holds in place: a store
/// into `name[…]`, `name += …`, a method call on it (`name.fill(…)`), or
/// passing it to a function that is not NumPy's.
pub fn may_mutate_in_place(body: &[Stmt], name: &str) -> bool {
    let mut found = false;
    walk_stmts(body, &mut |s| {
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![&a.target],
            Stmt::AnnAssign(a) => vec![&a.target],
            _ => vec![],
        };
        for t in targets {
            let aug_name = matches!(s, Stmt::AugAssign(_))
                && matches!(t, Expr::Name(n) if n.id.as_str() == name);
            if aug_name || subscript_base(t).as_deref() == Some(name) && !matches!(t, Expr::Name(_))
            {
                found = true;
            }
        }
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x| {
                let Expr::Call(c) = x else { return };
                match c.func.as_ref() {
                    Expr::Attribute(a)
                        if mentions(&a.value, name)
                            && matches!(a.value.as_ref(), Expr::Name(_)) =>
                    {
                        found = true
                    }
                    Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(m) if m.id.as_str() == "np" || m.id.as_str() == "numpy") =>
                        {}
                    _ => {
                        if c.args
                            .iter()
                            .any(|a| matches!(a, Expr::Name(n) if n.id.as_str() == name))
                        {
                            found = true;
                        }
                    }
                }
            });
        }
    });
    found
}

/// The base array name of a subscript chain (`x` of `x[i][j]`).
pub fn subscript_base(e: &Expr) -> Option<String> {
    match e {
        Expr::Subscript(s) => subscript_base(&s.value),
        Expr::Name(n) => Some(n.id.to_string()),
        _ => None,
    }
}

/// A docstring or other bare constant statement.
pub fn is_docstring(s: &Stmt) -> bool {
    matches!(s, Stmt::Expr(e) if matches!(e.value.as_ref(), Expr::Constant(_)))
}

/// The direct sub-expressions of `e`, mutable (lambdas and comprehensions,
/// which have scopes of their own, are not entered).
pub fn expr_children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::BoolOp(b) => b.values.iter_mut().collect(),
        Expr::NamedExpr(n) => vec![&mut n.target, &mut n.value],
        Expr::BinOp(b) => vec![&mut b.left, &mut b.right],
        Expr::UnaryOp(u) => vec![&mut u.operand],
        Expr::IfExp(i) => vec![&mut i.test, &mut i.body, &mut i.orelse],
        Expr::Dict(d) => d
            .keys
            .iter_mut()
            .flatten()
            .chain(d.values.iter_mut())
            .collect(),
        Expr::Set(s) => s.elts.iter_mut().collect(),
        Expr::Await(a) => vec![&mut a.value],
        Expr::Yield(y) => y.value.iter_mut().map(|v| v.as_mut()).collect(),
        Expr::YieldFrom(y) => vec![&mut y.value],
        Expr::Compare(c) => std::iter::once(c.left.as_mut())
            .chain(c.comparators.iter_mut())
            .collect(),
        Expr::Call(c) => std::iter::once(c.func.as_mut())
            .chain(c.args.iter_mut())
            .chain(c.keywords.iter_mut().map(|k| &mut k.value))
            .collect(),
        Expr::FormattedValue(v) => vec![&mut v.value],
        Expr::JoinedStr(j) => j.values.iter_mut().collect(),
        Expr::Attribute(a) => vec![&mut a.value],
        Expr::Subscript(s) => vec![&mut s.value, &mut s.slice],
        Expr::Starred(s) => vec![&mut s.value],
        Expr::List(l) => l.elts.iter_mut().collect(),
        Expr::Tuple(t) => t.elts.iter_mut().collect(),
        Expr::Slice(s) => s
            .lower
            .iter_mut()
            .chain(s.upper.iter_mut())
            .chain(s.step.iter_mut())
            .map(|v| v.as_mut())
            .collect(),
        Expr::Lambda(_)
        | Expr::ListComp(_)
        | Expr::SetComp(_)
        | Expr::DictComp(_)
        | Expr::GeneratorExp(_)
        | Expr::Constant(_)
        | Expr::Name(_) => vec![],
    }
}

/// Calls `f` on `e` and its sub-expressions, outermost first; `f` may
/// replace a node (its replacement is not walked again).
pub fn walk_expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr) -> bool) {
    if f(e) {
        return;
    }
    for c in expr_children_mut(e) {
        walk_expr_mut(c, f);
    }
}

/// The expressions a statement holds directly, mutable (see [`stmt_exprs`]).
pub fn stmt_exprs_mut(s: &mut Stmt) -> Vec<&mut Expr> {
    match s {
        Stmt::Assign(a) => a
            .targets
            .iter_mut()
            .chain(std::iter::once(a.value.as_mut()))
            .collect(),
        Stmt::AugAssign(a) => vec![&mut a.target, &mut a.value],
        Stmt::AnnAssign(a) => std::iter::once(a.target.as_mut())
            .chain(a.value.iter_mut().map(|v| v.as_mut()))
            .collect(),
        Stmt::For(f) => vec![&mut f.target, &mut f.iter],
        Stmt::While(w) => vec![&mut w.test],
        Stmt::If(i) => vec![&mut i.test],
        Stmt::Return(r) => r.value.iter_mut().map(|b| b.as_mut()).collect(),
        Stmt::Expr(e) => vec![&mut e.value],
        Stmt::Assert(a) => std::iter::once(a.test.as_mut())
            .chain(a.msg.iter_mut().map(|m| m.as_mut()))
            .collect(),
        Stmt::Delete(d) => d.targets.iter_mut().collect(),
        _ => vec![],
    }
}

/// Calls `f` on every expression of `body`, nested bodies included.
pub fn walk_body_exprs_mut(body: &mut [Stmt], f: &mut dyn FnMut(&mut Expr) -> bool) {
    for s in body.iter_mut() {
        for e in stmt_exprs_mut(s) {
            walk_expr_mut(e, f);
        }
        match s {
            Stmt::For(x) => {
                walk_body_exprs_mut(&mut x.body, f);
                walk_body_exprs_mut(&mut x.orelse, f);
            }
            Stmt::While(x) => {
                walk_body_exprs_mut(&mut x.body, f);
                walk_body_exprs_mut(&mut x.orelse, f);
            }
            Stmt::If(x) => {
                walk_body_exprs_mut(&mut x.body, f);
                walk_body_exprs_mut(&mut x.orelse, f);
            }
            _ => {}
        }
    }
}

/// Loops over an array's elements or rows, rewritten as the index loops
/// the rewrites take, everywhere in `body`:
///
/// - `for v in x:` becomes `for v_i in range(len(x)): v = x[v_i]`;
/// - `for i, v in enumerate(x):` becomes `for i in range(len(x)): v = x[i]`.
///
/// Python's meaning is kept where `x` is a name the loop's body never
/// rebinds: iterating an array reads row `k` when iteration `k` begins, as
/// `x[k]` does (a row is a view either way). Other loops are left as they
/// are, for the rewrites to take or refuse. The new nodes carry the ranges
/// of the code they stand for (the target, the iterable), so lines and
/// messages point at what the user wrote.
pub fn desugar_element_loops(body: &mut [Stmt]) {
    for s in body.iter_mut() {
        if let Stmt::For(f) = s {
            desugar_for(f);
        }
        for b in child_bodies_mut(s) {
            desugar_element_loops(b);
        }
    }
}

fn desugar_for(f: &mut ast::StmtFor) {
    use rustpython_parser::ast::Ranged;
    let name = |id: &str, range, ctx| {
        Expr::Name(ast::ExprName {
            range,
            id: ast::Identifier::new(id),
            ctx,
        })
    };
    // (index name, the element's target, the iterable's name)
    let (index, element, seq) = match f.iter.as_ref() {
        Expr::Name(x) => {
            let Expr::Name(v) = f.target.as_ref() else {
                return;
            };
            let mut index = format!("{}_i", v.id);
            while body_mentions(&f.body, &index) || index == x.id.as_str() {
                index.push('_');
            }
            (index, f.target.as_ref().clone(), x.clone())
        }
        Expr::Call(c)
            if matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "enumerate")
                && c.keywords.is_empty() =>
        {
            let ([Expr::Name(x)], Expr::Tuple(t)) = (c.args.as_slice(), f.target.as_ref()) else {
                return;
            };
            let [Expr::Name(i), element] = t.elts.as_slice() else {
                return;
            };
            if target_names(element)
                .iter()
                .any(|n| n == x.id.as_str() || *n == i.id.as_str())
            {
                return;
            }
            (i.id.to_string(), element.clone(), x.clone())
        }
        _ => return,
    };
    if names_rebound(&f.body).contains(seq.id.as_str()) {
        return;
    }
    let (it, tg) = (f.iter.range(), f.target.range());
    let call = |func: &str, arg: Expr| {
        Expr::Call(ast::ExprCall {
            range: it,
            func: Box::new(name(func, it, ast::ExprContext::Load)),
            args: vec![arg],
            keywords: vec![],
        })
    };
    let seq_load = || name(seq.id.as_str(), seq.range, ast::ExprContext::Load);
    let read = Stmt::Assign(ast::StmtAssign {
        range: tg,
        targets: vec![element],
        value: Box::new(Expr::Subscript(ast::ExprSubscript {
            range: tg,
            value: Box::new(seq_load()),
            slice: Box::new(name(&index, tg, ast::ExprContext::Load)),
            ctx: ast::ExprContext::Load,
        })),
        type_comment: None,
    });
    *f.iter = call("range", call("len", seq_load()));
    *f.target = name(&index, tg, ast::ExprContext::Store);
    f.body.insert(0, read);
}

#[cfg(test)]
mod tests {
    use rustpython_parser::ast::{self, Stmt};
    use rustpython_parser::Parse;

    /// The loops of `code` after [`super::desugar_element_loops`], as
    /// `target in iterable` with the body's first statement.
    fn desugared(code: &str) -> Vec<String> {
        let mut body = ast::Suite::parse(code, "<test>").unwrap();
        super::desugar_element_loops(&mut body);
        let mut out = Vec::new();
        super::walk_stmts(&body, &mut |s| {
            if let Stmt::For(f) = s {
                let text = |e: &ast::Expr| match e {
                    ast::Expr::Name(n) => n.id.to_string(),
                    ast::Expr::Call(c) => format!("call/{}", c.args.len()),
                    ast::Expr::Tuple(t) => format!("tuple/{}", t.elts.len()),
                    _ => "other".into(),
                };
                let first = match f.body.first() {
                    Some(Stmt::Assign(a)) => match (&a.targets[0], a.value.as_ref()) {
                        (ast::Expr::Name(t), ast::Expr::Subscript(s)) => {
                            format!("{} = {}[…]", t.id, text(&s.value))
                        }
                        _ => "assign".into(),
                    },
                    _ => "other".into(),
                };
                out.push(format!("{} in {}: {first}", text(&f.target), text(&f.iter)));
            }
        });
        out
    }

    #[test]
    fn element_loops_become_index_loops_where_python_means_the_same() {
        assert_eq!(
            desugared("for v in x:\n    s += v\n"),
            ["v_i in call/1: v = x[…]"]
        );
        assert_eq!(
            desugared("for i, row in enumerate(x):\n    out[i] = row.sum()\n"),
            ["i in call/1: row = x[…]"]
        );
        // The index name never meets one of the body's.
        assert_eq!(
            desugared("for v in x:\n    v_i = v\n"),
            ["v_i_ in call/1: v = x[…]"]
        );
        // Nested loops, each on its own.
        assert_eq!(
            desugared("for a in x:\n    for b in a:\n        s += b\n"),
            ["a_i in call/1: a = x[…]", "b_i in call/1: b = a[…]"]
        );
    }

    #[test]
    fn loops_python_would_run_differently_are_left_alone() {
        // The body rebinds the iterable: Python goes on over the old object.
        assert_eq!(
            desugared("for v in x:\n    x = x * 2\n"),
            ["v in x: assign"]
        );
        // enumerate with a start, or over an expression, or a range.
        assert_eq!(
            desugared("for i, v in enumerate(x, 1):\n    s += v\n"),
            ["tuple/2 in call/2: other"]
        );
        assert_eq!(
            desugared("for v in x + 1:\n    s += v\n"),
            ["v in other: other"]
        );
        assert_eq!(
            desugared("for i in range(3):\n    s += i\n"),
            ["i in call/1: other"]
        );
    }
}
