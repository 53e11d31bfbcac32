//! Walking Python's AST (rustpython): the few traversals the rewrites need.

use rustpython_parser::ast::{self, Expr, Stmt};

/// Whether `e` is a scope of its own (a lambda or a comprehension): names
/// inside it are not the enclosing function's.
pub fn opens_scope(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Lambda(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::GeneratorExp(_)
    )
}

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

/// [`walk_stmts`], to change: `f` on each statement, then on those
/// nested in it (as they are after `f`).
pub fn walk_stmts_mut(body: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in body {
        f(s);
        for b in child_bodies_mut(s) {
            walk_stmts_mut(b, f);
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

/// Whether `body` binds `name` anew anywhere, `name += …` included.
pub fn rebinds(body: &[Stmt], name: &str) -> bool {
    let mut found = names_rebound(body).contains(name);
    walk_stmts(body, &mut |s| {
        if let Stmt::AugAssign(a) = s {
            found |= target_names(&a.target).iter().any(|n| n == name);
        }
    });
    found
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

/// Names bound (`a = …`, `a += …`, `a, b = …`) somewhere inside a `for`,
/// `while`, `if` or `try` of `body`: where another binding of the name may
/// be the one a later read sees.
pub fn names_bound_in_blocks(body: &[Stmt]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    walk_stmts(body, &mut |s| {
        if let Stmt::For(_) | Stmt::While(_) | Stmt::If(_) | Stmt::Try(_) = s {
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

/// A literal `None` (an argument left at NumPy's default, a test
/// `x is None`).
pub fn is_none_constant(e: &Expr) -> bool {
    matches!(e, Expr::Constant(k) if matches!(k.value, ast::Constant::None))
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
    walk_stmts_mut(body, &mut |s| {
        if let Stmt::For(f) = s {
            desugar_for(f);
        }
    });
}

fn desugar_for(f: &mut ast::StmtFor) {
    use rustpython_parser::ast::Ranged;
    let name = name_node;
    // (index name, the element's target, the iterable's name, whether it
    // is iterated flat: `x.flat`, `x.ravel()`, `x.flatten()`)
    let flat_of = |e: &Expr| -> Option<ast::ExprName> {
        match e {
            Expr::Attribute(a) if a.attr.as_str() == "flat" => match a.value.as_ref() {
                Expr::Name(x) => Some(x.clone()),
                _ => None,
            },
            Expr::Call(c) if c.args.is_empty() && c.keywords.is_empty() => match c.func.as_ref() {
                Expr::Attribute(a) if matches!(a.attr.as_str(), "ravel" | "flatten") => {
                    match a.value.as_ref() {
                        Expr::Name(x) => Some(x.clone()),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        }
    };
    let flat = flat_of(f.iter.as_ref());
    let (index, element, seq) = match f.iter.as_ref() {
        _ if flat.is_some() => {
            let Expr::Name(v) = f.target.as_ref() else {
                return;
            };
            let x = flat.clone().expect("checked");
            let mut index = format!("{}_i", v.id);
            while body_mentions(&f.body, &index) || index == x.id.as_str() {
                index.push('_');
            }
            (index, f.target.as_ref().clone(), x)
        }
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
    let call =
        |func: &str, arg: Expr| call_node(name(func, it, ast::ExprContext::Load), vec![arg], it);
    let seq_load = || name(seq.id.as_str(), seq.range, ast::ExprContext::Load);
    // `x.ravel()`: what a flat iteration reads.
    let flat_load = || call_node(attribute_node(seq_load(), "ravel", it), vec![], it);
    let read = Stmt::Assign(ast::StmtAssign {
        range: tg,
        targets: vec![element],
        value: Box::new(Expr::Subscript(ast::ExprSubscript {
            range: tg,
            value: Box::new(if flat.is_some() {
                flat_load()
            } else {
                seq_load()
            }),
            slice: Box::new(name(&index, tg, ast::ExprContext::Load)),
            ctx: ast::ExprContext::Load,
        })),
        type_comment: None,
    });
    *f.iter = if flat.is_some() {
        call("range", attribute_node(seq_load(), "size", it))
    } else {
        call("range", call("len", seq_load()))
    };
    *f.target = name(&index, tg, ast::ExprContext::Store);
    f.body.insert(0, read);
}

/// `x[i][j]` as `x[i, j]` everywhere in `body` (and `x[i, j][k:]` as
/// `x[i, j, k:]`), where the first index is integers only: names bound
/// solely as `for … in range(…)` (or `prange`) loop variables, integer literals, and
/// `+ - * // %` of them. Basic integer indexing takes one axis per integer
/// either way, so the two read and write the same elements; the dependence
/// test and the rewrites then see one index of every axis (`out[i][j]`
/// read as `out[j]` gave a false recurrence).
pub fn merge_chained_subscripts(body: &mut [Stmt]) {
    let ints = range_loop_ints(body);
    if ints.is_empty() {
        return;
    }
    walk_body_exprs_mut(body, &mut |e| {
        merge_chain(e, &ints);
        true
    });
}

/// Names bound only as the variables of `for … in range(…)` loops.
fn range_loop_ints(body: &[Stmt]) -> std::collections::HashSet<String> {
    let mut loop_vars = std::collections::HashSet::new();
    let mut other = std::collections::HashSet::new();
    walk_stmts(body, &mut |s| match s {
        Stmt::For(f) => {
            // `range`, or Numba's `prange` (bare or as `numba.prange`).
            let is_range = matches!(f.iter.as_ref(), Expr::Call(c)
            if match c.func.as_ref() {
                Expr::Name(n) => matches!(n.id.as_str(), "range" | "prange"),
                Expr::Attribute(a) => a.attr.as_str() == "prange",
                _ => false,
            });
            match (f.target.as_ref(), is_range) {
                (Expr::Name(n), true) => {
                    loop_vars.insert(n.id.to_string());
                }
                (t, _) => other.extend(target_names(t)),
            }
        }
        Stmt::Assign(a) => {
            for t in &a.targets {
                other.extend(target_names(t));
            }
        }
        Stmt::AugAssign(a) => other.extend(target_names(&a.target)),
        Stmt::AnnAssign(a) => other.extend(target_names(&a.target)),
        Stmt::With(w) => {
            for it in &w.items {
                if let Some(v) = &it.optional_vars {
                    other.extend(target_names(v));
                }
            }
        }
        _ => {}
    });
    loop_vars.retain(|n| !other.contains(n));
    loop_vars
}

/// Merges the chains of subscripts in `e`, innermost first.
fn merge_chain(e: &mut Expr, ints: &std::collections::HashSet<String>) {
    for c in expr_children_mut(e) {
        merge_chain(c, ints);
    }
    let Expr::Subscript(outer) = e else { return };
    let Expr::Subscript(inner) = outer.value.as_ref() else {
        return;
    };
    let first: Vec<&Expr> = match inner.slice.as_ref() {
        Expr::Tuple(t) => t.elts.iter().collect(),
        one => vec![one],
    };
    if first.is_empty() || !first.iter().all(|x| integer_index(x, ints)) {
        return;
    }
    let mut elts: Vec<Expr> = first.into_iter().cloned().collect();
    match outer.slice.as_ref() {
        Expr::Tuple(t) => elts.extend(t.elts.iter().cloned()),
        one => elts.push(one.clone()),
    }
    let range = rustpython_parser::text_size::TextRange::new(
        rustpython_parser::ast::Ranged::range(inner.slice.as_ref()).start(),
        rustpython_parser::ast::Ranged::range(outer.slice.as_ref()).end(),
    );
    let base = inner.value.clone();
    *outer.slice = Expr::Tuple(ast::ExprTuple {
        range,
        elts,
        ctx: ast::ExprContext::Load,
    });
    outer.value = base;
}

/// An integer index for [`merge_chained_subscripts`].
fn integer_index(e: &Expr, ints: &std::collections::HashSet<String>) -> bool {
    match e {
        Expr::Name(n) => ints.contains(n.id.as_str()),
        Expr::Constant(c) => matches!(c.value, ast::Constant::Int(_)),
        Expr::UnaryOp(u) => matches!(u.op, ast::UnaryOp::USub) && integer_index(&u.operand, ints),
        Expr::BinOp(b) => {
            matches!(
                b.op,
                ast::Operator::Add
                    | ast::Operator::Sub
                    | ast::Operator::Mult
                    | ast::Operator::FloorDiv
                    | ast::Operator::Mod
            ) && integer_index(&b.left, ints)
                && integer_index(&b.right, ints)
        }
        _ => false,
    }
}

/// The names of a function's positional parameters, in order (`def f(a,
/// b=1)`: `a`, `b`): what a signature types, one per entry.
pub fn positional_params(a: &ast::Arguments) -> Vec<String> {
    a.args.iter().map(|p| p.def.arg.to_string()).collect()
}

/// Every parameter name of a function (positional-only, positional,
/// `*args`, keyword-only, `**kwargs`).
pub fn param_names(a: &ast::Arguments) -> Vec<String> {
    let with_defaults = a
        .posonlyargs
        .iter()
        .chain(&a.args)
        .chain(&a.kwonlyargs)
        .map(|p| p.def.arg.to_string());
    let rest = a.vararg.iter().chain(&a.kwarg).map(|p| p.arg.to_string());
    with_defaults.chain(rest).collect()
}

/// The parameters of `def` whose values its body never reads. Each use of
/// such a name is one of:
///
/// - the array a subscript assignment stores into (`out[i] = v`,
///   `out[:, 0] = row`), but not `out[i] += v`, which reads;
/// - its metadata: `out.shape`, `.ndim`, `.size`, `.dtype`, `len(out)`;
/// - `return out`, which hands back the object, whatever it holds.
///
/// Any other use (a load, a call argument, an alias, binding the name anew,
/// `del`, `global`/`nonlocal`), in the body or in a nested function, counts
/// as a read. So what such an array held before the call changes nothing the
/// function computes: only the elements it never writes, which it hands back
/// as they were. A parameter the body never names is unread too.
pub fn unread_params(def: &ast::StmtFunctionDef) -> Vec<String> {
    use std::collections::{HashMap, HashSet};

    use rustpython_ast::Visitor;

    const METADATA: [&str; 4] = ["shape", "ndim", "size", "dtype"];
    struct Uses {
        params: HashSet<String>,
        /// Every occurrence of each parameter's name.
        all: HashMap<String, usize>,
        /// The occurrences that do not read its value.
        harmless: HashMap<String, usize>,
        read: HashSet<String>,
    }
    impl Uses {
        fn param<'e>(&self, e: &'e Expr) -> Option<&'e str> {
            match e {
                Expr::Name(n) if self.params.contains(n.id.as_str()) => Some(n.id.as_str()),
                _ => None,
            }
        }
        fn harmless(&mut self, e: &Expr) {
            if let Some(p) = self.param(e) {
                *self.harmless.entry(p.to_string()).or_default() += 1;
            }
        }
    }
    impl Visitor for Uses {
        fn visit_expr_name(&mut self, n: ast::ExprName) {
            if self.params.contains(n.id.as_str()) {
                *self.all.entry(n.id.to_string()).or_default() += 1;
            }
        }
        fn visit_expr_subscript(&mut self, s: ast::ExprSubscript) {
            if s.ctx == ast::ExprContext::Store {
                self.harmless(&s.value);
            }
            self.generic_visit_expr_subscript(s)
        }
        fn visit_expr_attribute(&mut self, a: ast::ExprAttribute) {
            if a.ctx == ast::ExprContext::Load && METADATA.contains(&a.attr.as_str()) {
                self.harmless(&a.value);
            }
            self.generic_visit_expr_attribute(a)
        }
        fn visit_expr_call(&mut self, c: ast::ExprCall) {
            if let (Expr::Name(f), [arg], []) = (&*c.func, c.args.as_slice(), c.keywords.as_slice())
            {
                if f.id.as_str() == "len" {
                    self.harmless(arg);
                }
            }
            self.generic_visit_expr_call(c)
        }
        fn visit_stmt_aug_assign(&mut self, a: ast::StmtAugAssign) {
            // `out[i] += v` reads `out[i]` first.
            if let Expr::Subscript(t) = &*a.target {
                if let Some(p) = self.param(&t.value) {
                    self.read.insert(p.to_string());
                }
            }
            self.generic_visit_stmt_aug_assign(a)
        }
        fn visit_stmt_return(&mut self, r: ast::StmtReturn) {
            if let Some(v) = &r.value {
                self.harmless(v);
            }
            self.generic_visit_stmt_return(r)
        }
        fn visit_stmt_global(&mut self, g: ast::StmtGlobal) {
            self.read.extend(g.names.iter().map(|n| n.to_string()));
        }
        fn visit_stmt_nonlocal(&mut self, g: ast::StmtNonlocal) {
            self.read.extend(g.names.iter().map(|n| n.to_string()));
        }
    }
    let names = param_names(&def.args);
    let mut uses = Uses {
        params: names.iter().cloned().collect(),
        all: HashMap::new(),
        harmless: HashMap::new(),
        read: HashSet::new(),
    };
    for s in &def.body {
        uses.visit_stmt(s.clone());
    }
    names
        .into_iter()
        .filter(|p| {
            !uses.read.contains(p)
                && uses.all.get(p).copied().unwrap_or(0)
                    == uses.harmless.get(p).copied().unwrap_or(0)
        })
        .collect()
}

/// Names that hold a tuple literal (`shape = (n, m)`, `cache = (x, w, b)`),
/// split into one name per element everywhere in a function's `body`, for
/// rewrites that bind a name to one value:
///
/// - `t = (e0, e1)` becomes `t_0 = e0` and `t_1 = e1` (or `t_0, t_1 = e0,
///   e1` where an element reads the tuple, as `t = (t[1], t[0])` does: the
///   whole right-hand side is evaluated first, as Python does);
/// - `t[1]` and `t[-1]` become `t_1`; any other read of `t` becomes the
///   tuple `(t_0, t_1)`.
///
/// A tuple never changes, and each element is bound where the tuple was, so
/// Python's meaning is kept. Only where it is plain: every binding of the
/// name is such an assignment with the same number of elements, none
/// starred; the name is not a parameter, not deleted, not in a lambda or a
/// comprehension (scopes of their own); and the body holds only statements
/// whose expressions the walk sees (assignments, loops, `if`, `return`,
/// expressions, `assert`, `pass`, `break`, `continue`). Elements that are
/// tuples themselves are split in turn. New nodes keep the ranges of what
/// they stand for, so messages point at the user's lines.
pub fn split_tuple_names(params: &[String], body: &mut Vec<Stmt>) {
    for _ in 0..4 {
        if !split_tuple_names_once(params, body) {
            return;
        }
    }
}

fn split_tuple_names_once(params: &[String], body: &mut Vec<Stmt>) -> bool {
    let mut plain = true;
    walk_stmts(body, &mut |s| {
        plain &= matches!(
            s,
            Stmt::Assign(_)
                | Stmt::AugAssign(_)
                | Stmt::AnnAssign(_)
                | Stmt::For(_)
                | Stmt::While(_)
                | Stmt::If(_)
                | Stmt::Return(_)
                | Stmt::Expr(_)
                | Stmt::Assert(_)
                | Stmt::Pass(_)
                | Stmt::Break(_)
                | Stmt::Continue(_)
        );
    });
    if !plain {
        return false;
    }
    // name -> (arity, bindings as tuple literals); None once disqualified.
    let mut found: std::collections::BTreeMap<String, Option<(usize, usize)>> = Default::default();
    walk_stmts(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            if let ([Expr::Name(n)], Expr::Tuple(t)) = (a.targets.as_slice(), a.value.as_ref()) {
                let k = t.elts.len();
                let starred = t.elts.iter().any(|e| matches!(e, Expr::Starred(_)));
                let entry = found.entry(n.id.to_string()).or_insert(Some((k, 0)));
                *entry = match *entry {
                    Some((arity, count)) if arity == k && !starred && k > 0 => Some((k, count + 1)),
                    _ => None,
                };
            }
        }
    });
    let mut split: Vec<(String, usize)> = Vec::new();
    for (name, entry) in found {
        let Some((k, bindings)) = entry else { continue };
        if params.contains(&name) {
            continue;
        }
        // Every other store (a loop target, `t += …`, unpacking, `del t`)
        // and every mention in a scope of its own disqualifies the name.
        let mut stores = 0;
        let mut ok = true;
        walk_stmts(body, &mut |s| {
            for e in stmt_exprs(s) {
                walk_expr(e, &mut |x| match x {
                    Expr::Name(m)
                        if m.id.as_str() == name && !matches!(m.ctx, ast::ExprContext::Load) =>
                    {
                        stores += 1;
                        ok &= matches!(m.ctx, ast::ExprContext::Store);
                    }
                    Expr::NamedExpr(_) if mentions(x, &name) => ok = false,
                    _ if opens_scope(x) && mentions(x, &name) => ok = false,
                    _ => {}
                });
            }
        });
        if ok && stores == bindings {
            split.push((name, k));
        }
    }
    if split.is_empty() {
        return false;
    }
    for (name, k) in split {
        let mut parts: Vec<String> = Vec::with_capacity(k);
        for i in 0..k {
            let mut p = format!("{name}_{i}");
            while body_mentions(body, &p) || params.contains(&p) {
                p.push('_');
            }
            parts.push(p);
        }
        split_one(body, &name, &parts);
    }
    true
}

fn split_one(body: &mut Vec<Stmt>, name: &str, parts: &[String]) {
    use rustpython_parser::ast::Ranged;
    let k = parts.len() as i64;
    let load = |id: &str, range| {
        Expr::Name(ast::ExprName {
            range,
            id: ast::Identifier::new(id),
            ctx: ast::ExprContext::Load,
        })
    };
    let mut reads = |e: &mut Expr| -> bool {
        if let Expr::Subscript(sub) = e {
            // `t[0] = x` (Python raises: a tuple is immutable) is not a read.
            let read = matches!(sub.ctx, ast::ExprContext::Load);
            if read && matches!(sub.value.as_ref(), Expr::Name(n) if n.id.as_str() == name) {
                if let Some(i) = const_int(&sub.slice).filter(|i| (-k..k).contains(i)) {
                    *e = load(&parts[i.rem_euclid(k) as usize], sub.range);
                    return true;
                }
            }
        }
        if let Expr::Name(n) = e {
            if n.id.as_str() == name && matches!(n.ctx, ast::ExprContext::Load) {
                let range = n.range;
                *e = Expr::Tuple(ast::ExprTuple {
                    range,
                    elts: parts.iter().map(|p| load(p, range)).collect(),
                    ctx: ast::ExprContext::Load,
                });
                return true;
            }
        }
        false
    };
    let mut out = Vec::with_capacity(body.len());
    for mut s in std::mem::take(body) {
        for e in stmt_exprs_mut(&mut s) {
            walk_expr_mut(e, &mut reads);
        }
        for b in child_bodies_mut(&mut s) {
            split_one(b, name, parts);
        }
        let Stmt::Assign(a) = &s else {
            out.push(s);
            continue;
        };
        let ([Expr::Name(n)], Expr::Tuple(t)) = (a.targets.as_slice(), a.value.as_ref()) else {
            out.push(s);
            continue;
        };
        if n.id.as_str() != name {
            out.push(s);
            continue;
        }
        let store = |id: &str, range| {
            Expr::Name(ast::ExprName {
                range,
                id: ast::Identifier::new(id),
                ctx: ast::ExprContext::Store,
            })
        };
        let (range, target) = (a.range, n.range);
        let reads_parts = t.elts.iter().any(|e| parts.iter().any(|p| mentions(e, p)));
        if reads_parts {
            out.push(Stmt::Assign(ast::StmtAssign {
                range,
                targets: vec![Expr::Tuple(ast::ExprTuple {
                    range: target,
                    elts: parts.iter().map(|p| store(p, target)).collect(),
                    ctx: ast::ExprContext::Store,
                })],
                value: a.value.clone(),
                type_comment: None,
            }));
        } else {
            for (p, e) in parts.iter().zip(&t.elts) {
                out.push(Stmt::Assign(ast::StmtAssign {
                    range: e.range(),
                    targets: vec![store(p, target)],
                    value: Box::new(e.clone()),
                    type_comment: None,
                }));
            }
        }
    }
    *body = out;
}

/// An integer literal, or a negated one.
fn const_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Int(i) => i64::try_from(i).ok(),
            _ => None,
        },
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => const_int(&u.operand).map(|i| -i),
        _ => None,
    }
}

/// The value of a condition Python can decide without running anything:
/// `if 0:`, `if True:`, `if not 1:` (debugging switches left in real
/// code), and comparisons of constants (`"wrap" == "wrap"`, `None is
/// None`, `"l2" in ("l1", "l2")`), which a parameter specialised to a
/// constant leaves behind.
fn constant_truth(e: &Expr) -> Option<bool> {
    match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Bool(b) => Some(*b),
            ast::Constant::Int(i) => Some(*i != ast::bigint::BigInt::from(0)),
            ast::Constant::None => Some(false),
            ast::Constant::Str(s) => Some(!s.is_empty()),
            _ => None,
        },
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::Not) => {
            constant_truth(&u.operand).map(|b| !b)
        }
        Expr::BoolOp(b) => {
            let v: Option<Vec<bool>> = b.values.iter().map(constant_truth).collect();
            let v = v?;
            Some(match b.op {
                ast::BoolOp::And => v.iter().all(|x| *x),
                ast::BoolOp::Or => v.iter().any(|x| *x),
            })
        }
        Expr::Compare(c) if c.ops.len() == 1 => {
            let (l, r) = (c.left.as_ref(), &c.comparators[0]);
            let items = |e: &Expr| -> Option<Vec<ast::Constant>> {
                let elts = match e {
                    Expr::Tuple(t) => &t.elts,
                    Expr::List(l) => &l.elts,
                    _ => return None,
                };
                elts.iter().map(plain_constant).collect()
            };
            match c.ops[0] {
                ast::CmpOp::Eq => Some(plain_constant(l)? == plain_constant(r)?),
                ast::CmpOp::NotEq => Some(plain_constant(l)? != plain_constant(r)?),
                // `is` decided for None only: identity of other constants
                // is CPython's business.
                ast::CmpOp::Is | ast::CmpOp::IsNot => {
                    let (a, b) = (plain_constant(l)?, plain_constant(r)?);
                    if a != ast::Constant::None && b != ast::Constant::None {
                        return None;
                    }
                    let same = a == b;
                    Some(if c.ops[0] == ast::CmpOp::Is {
                        same
                    } else {
                        !same
                    })
                }
                ast::CmpOp::In => Some(items(r)?.contains(&plain_constant(l)?)),
                ast::CmpOp::NotIn => Some(!items(r)?.contains(&plain_constant(l)?)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A string or `None` constant, the ones equality decides here (numbers
/// compare across types: `1 == 1.0`).
fn plain_constant(e: &Expr) -> Option<ast::Constant> {
    match e {
        Expr::Constant(c) if matches!(c.value, ast::Constant::Str(_) | ast::Constant::None) => {
            Some(c.value.clone())
        }
        _ => None,
    }
}

/// The integer elements of a tuple or list literal (`(-1, 0, 1)`).
fn int_items(e: &Expr) -> Option<Vec<i64>> {
    let elts = match e {
        Expr::Tuple(t) => &t.elts,
        Expr::List(l) => &l.elts,
        _ => return None,
    };
    elts.iter()
        .map(|x| match x {
            Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => i64::try_from(i).ok(),
                _ => None,
            },
            Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => match u.operand.as_ref() {
                Expr::Constant(c) => match &c.value {
                    ast::Constant::Int(i) => i64::try_from(i).ok().map(|v| -v),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether [`normalise_statements`] would change `body`.
pub fn has_statements_to_normalise(body: &[Stmt]) -> bool {
    let mut found = false;
    walk_stmts(body, &mut |s| match s {
        Stmt::If(i) => found |= constant_truth(&i.test).is_some(),
        Stmt::For(f) => found |= int_items(&f.iter).is_some_and(|v| progression(&v).is_some()),
        _ => {}
    });
    found
}

/// `(start, step)` when `v` is an arithmetic progression of a nonzero step
/// (one element: step 1).
fn progression(v: &[i64]) -> Option<(i64, i64)> {
    match v {
        [] => None,
        [a] => Some((*a, 1)),
        [a, b, ..] => {
            let step = b.checked_sub(*a)?;
            (step != 0 && v.windows(2).all(|w| w[1].checked_sub(w[0]) == Some(step)))
                .then_some((*a, step))
        }
    }
}

/// Statement forms that mean the same as ones the rewrites take:
/// - `if 0:` / `if True:` and other constant tests: the branch taken;
/// - `for d in (-1, 0, 1):` (integers in arithmetic progression): the same
///   loop over `range(-1, 2)`.
pub fn normalise_statements(body: &mut Vec<Stmt>) {
    let mut k = 0;
    while k < body.len() {
        if let Stmt::If(i) = &mut body[k] {
            if let Some(taken) = constant_truth(&i.test) {
                let branch = std::mem::take(if taken { &mut i.body } else { &mut i.orelse });
                // The spliced statements are looked at in turn (nested ifs).
                body.splice(k..=k, branch);
                continue;
            }
        }
        if let Stmt::For(f) = &mut body[k] {
            let literal = int_items(&f.iter).and_then(|v| {
                let (start, step) = progression(&v)?;
                let n = v.len() as i64;
                start.checked_add(step.checked_mul(n)?)?;
                Some((start, step, n))
            });
            if let Some((start, step, n)) = literal {
                let range = ast::Ranged::range(f.iter.as_ref());
                let int = |v: i64| -> Expr {
                    let c = Expr::Constant(ast::ExprConstant {
                        range,
                        value: ast::Constant::Int(ast::bigint::BigInt::from(v.unsigned_abs())),
                        kind: None,
                    });
                    if v < 0 {
                        Expr::UnaryOp(ast::ExprUnaryOp {
                            range,
                            op: ast::UnaryOp::USub,
                            operand: Box::new(c),
                        })
                    } else {
                        c
                    }
                };
                let mut args = vec![int(start), int(start + step * n)];
                if step != 1 {
                    args.push(int(step));
                }
                *f.iter = call_node(
                    name_node("range", range, ast::ExprContext::Load),
                    args,
                    range,
                );
            }
        }
        for b in child_bodies_mut(&mut body[k]) {
            normalise_statements(b);
        }
        k += 1;
    }
}

/// `base`, or `base_1`, `base_2`, …: the first that `take` accepts (a
/// set of names in use inserting it: `|n| used.insert(n)`).
pub fn fresh_name(base: &str, take: &mut dyn FnMut(String) -> bool) -> String {
    (0..)
        .map(|k| {
            if k == 0 {
                base.to_string()
            } else {
                format!("{base}_{k}")
            }
        })
        .find(|n| take(n.clone()))
        .expect("a fresh name")
}

/// Every name `body`'s statements mention, read or bound (so that a fresh
/// name captures none).
pub fn names_in(body: &[Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    walk_stmts(body, &mut |s| {
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x| {
                if let Expr::Name(n) = x {
                    out.push(n.id.to_string());
                }
            });
        }
    });
    out
}

/// `x[[a, b], …]` as the subscripts `x[a, …]`, `x[b, …]`: an integer
/// list on the first axis (NumPy's fancy indexing with a literal list of
/// positions, as a row swap `M[[i, j]] = M[[j, i]]` writes). `None` for
/// other subscripts.
pub fn split_list_index(e: &Expr) -> Option<Vec<Expr>> {
    let Expr::Subscript(s) = e else { return None };
    let (items, rest): (&Vec<Expr>, &[Expr]) = match s.slice.as_ref() {
        Expr::List(l) => (&l.elts, &[]),
        Expr::Tuple(t) => match t.elts.split_first() {
            Some((Expr::List(l), rest)) => (&l.elts, rest),
            _ => return None,
        },
        _ => return None,
    };
    if items.is_empty()
        || items
            .iter()
            .any(|x| matches!(x, Expr::List(_) | Expr::Tuple(_) | Expr::Slice(_)))
    {
        return None;
    }
    Some(
        items
            .iter()
            .map(|it| {
                let slice = if rest.is_empty() {
                    it.clone()
                } else {
                    let mut elts = vec![it.clone()];
                    elts.extend(rest.iter().cloned());
                    Expr::Tuple(ast::ExprTuple {
                        range: s.range,
                        elts,
                        ctx: ast::ExprContext::Load,
                    })
                };
                Expr::Subscript(ast::ExprSubscript {
                    range: s.range,
                    value: s.value.clone(),
                    slice: Box::new(slice),
                    ctx: s.ctx,
                })
            })
            .collect(),
    )
}

/// A Python string literal.
pub fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A name node (new nodes keep the range of what they stand for, so
/// messages point at the user's lines).
pub fn name_node(id: &str, range: ast::text_size::TextRange, ctx: ast::ExprContext) -> Expr {
    Expr::Name(ast::ExprName {
        range,
        id: ast::Identifier::new(id),
        ctx,
    })
}

/// One name, or a tuple of names (`a` or `a, b`), as a target or a value.
pub fn names_node(
    names: &[String],
    range: ast::text_size::TextRange,
    ctx: ast::ExprContext,
) -> Expr {
    match names {
        [one] => name_node(one, range, ctx),
        many => Expr::Tuple(ast::ExprTuple {
            range,
            elts: many.iter().map(|n| name_node(n, range, ctx)).collect(),
            ctx,
        }),
    }
}

/// `func(args…)`, no keywords.
pub fn call_node(func: Expr, args: Vec<Expr>, range: ast::text_size::TextRange) -> Expr {
    Expr::Call(ast::ExprCall {
        range,
        func: Box::new(func),
        args,
        keywords: vec![],
    })
}

/// `value.attr`, read.
pub fn attribute_node(value: Expr, attr: &str, range: ast::text_size::TextRange) -> Expr {
    Expr::Attribute(ast::ExprAttribute {
        range,
        value: Box::new(value),
        attr: ast::Identifier::new(attr),
        ctx: ast::ExprContext::Load,
    })
}

/// The value of the keyword argument `name` of a call.
pub fn keyword<'a>(c: &'a ast::ExprCall, name: &str) -> Option<&'a Expr> {
    c.keywords
        .iter()
        .find(|k| k.arg.as_deref() == Some(name))
        .map(|k| &k.value)
}

pub mod keyword_calls;
pub mod single_exit;

#[cfg(test)]
mod tests;
