//! Tests of the rewrites of the source: element loops desugared to index
//! loops, parameters only stored into found unread, and names holding
//! tuples split into a name per element, each also where Python would mean
//! something else and the source is left alone.

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

/// `code`'s statements after [`super::split_tuple_names`], one line
/// each, in a small rendering of the few nodes the tests use.
fn split(params: &[&str], code: &str) -> Vec<String> {
    fn show(e: &ast::Expr) -> String {
        match e {
            ast::Expr::Name(n) => n.id.to_string(),
            ast::Expr::Tuple(t) => {
                format!(
                    "({})",
                    t.elts.iter().map(show).collect::<Vec<_>>().join(", ")
                )
            }
            ast::Expr::Subscript(s) => format!("{}[{}]", show(&s.value), show(&s.slice)),
            ast::Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => i.to_string(),
                _ => "const".into(),
            },
            ast::Expr::UnaryOp(u) => format!("-{}", show(&u.operand)),
            ast::Expr::Attribute(a) => format!("{}.{}", show(&a.value), a.attr),
            ast::Expr::Call(c) => format!(
                "{}({})",
                show(&c.func),
                c.args.iter().map(show).collect::<Vec<_>>().join(", ")
            ),
            ast::Expr::BinOp(b) => format!("{} op {}", show(&b.left), show(&b.right)),
            ast::Expr::Lambda(_) => "lambda".into(),
            _ => "?".into(),
        }
    }
    fn lines(body: &[Stmt], depth: usize, out: &mut Vec<String>) {
        let pad = "  ".repeat(depth);
        for s in body {
            match s {
                Stmt::Assign(a) => out.push(format!(
                    "{pad}{} = {}",
                    a.targets.iter().map(show).collect::<Vec<_>>().join(" = "),
                    show(&a.value)
                )),
                Stmt::AugAssign(a) => {
                    out.push(format!("{pad}{} += {}", show(&a.target), show(&a.value)))
                }
                Stmt::Return(r) => out.push(format!(
                    "{pad}return {}",
                    r.value.as_deref().map(show).unwrap_or_default()
                )),
                Stmt::For(f) => {
                    out.push(format!(
                        "{pad}for {} in {}:",
                        show(&f.target),
                        show(&f.iter)
                    ));
                    lines(&f.body, depth + 1, out);
                }
                Stmt::Expr(e) => out.push(format!("{pad}{}", show(&e.value))),
                _ => out.push(format!("{pad}stmt")),
            }
        }
    }
    let mut body = ast::Suite::parse(code, "<test>").unwrap();
    let params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
    super::split_tuple_names(&params, &mut body);
    let mut out = Vec::new();
    lines(&body, 0, &mut out);
    out
}

fn unread(code: &str) -> Vec<String> {
    let suite = ast::Suite::parse(code, "<test>").unwrap();
    match &suite[0] {
        Stmt::FunctionDef(d) => super::unread_params(d),
        _ => panic!("not a def"),
    }
}

#[test]
fn a_parameter_only_stored_into_is_unread() {
    let shade =
        "def shade(x, y, out):\n    for i in range(x.shape[0]):\n        out[i] = x[i] * y[i]\n";
    assert_eq!(unread(shade), ["out"]);
    // Metadata, slices, `len` and handing it back read no element.
    let meta = "def f(a, out):\n    n = len(out)\n    out[:, 0] = a[: out.shape[0]]\n    if out.ndim == 2 and out.size:\n        out[1:, :] = 0.0\n    return out\n";
    assert_eq!(unread(meta), ["out"]);
    // Never named at all.
    assert_eq!(unread("def f(a, unused):\n    return a + 1\n"), ["unused"]);
}

#[test]
fn any_read_of_a_parameter_keeps_it() {
    for body in [
        "    out[i] += 1.0\n",           // reads out[i] first
        "    out[i] = out[i - 1] + a\n", // reads an element
        "    b = out\n    b[0] = 1.0\n", // an alias
        "    g(out)\n",                  // a callee may read it
        "    out = a.copy()\n",          // bound anew
        "    out.fill(0.0)\n",           // any other method
        "    del out[0]\n",
        "    h = lambda: out[0]\n", // a nested scope reads it
        "    for out[0] in a:\n        pass\n    x = out\n",
        "    global out\n    out[0] = 1\n",
        "    return out[0]\n",
    ] {
        let code = format!("def f(a, out, i):\n{body}");
        assert!(
            !unread(&code).contains(&"out".to_string()),
            "`out` read in:\n{body}"
        );
    }
}

#[test]
fn names_holding_tuples_become_a_name_per_element() {
    assert_eq!(
        split(
            &["a"],
            "shape = (a.shape[0], 3)\nout = zeros(shape)\nn = shape[-1]\nreturn out, shape"
        ),
        [
            "shape_0 = a.shape[0]",
            "shape_1 = 3",
            "out = zeros((shape_0, shape_1))",
            "n = shape_1",
            "return (out, (shape_0, shape_1))",
        ]
    );
    // A swap reads the pair it rebinds: one assignment, evaluated first.
    assert_eq!(
        split(
            &["u"],
            "p = (u, v)\nfor k in r:\n  p = (p[1], p[0])\nreturn p[0]"
        ),
        [
            "p_0 = u",
            "p_1 = v",
            "for k in r:",
            "  (p_0, p_1) = (p_1, p_0)",
            "return p_0",
        ]
    );
    // Nested tuples are split in turn; a name already taken is not reused.
    assert_eq!(
        split(&[], "c_0 = 1\nc = ((x, y), z)\nreturn c[0][1]"),
        [
            "c_0 = 1",
            "c_0__0 = x",
            "c_0__1 = y",
            "c_1 = z",
            "return c_0__1"
        ]
    );
}

#[test]
fn tuples_are_left_alone_where_splitting_could_change_the_meaning() {
    let kept = |params: &[&str], code: &str| {
        let out = split(params, code);
        assert!(out.iter().all(|l| !l.contains("t_0")), "{code}\n→ {out:?}");
    };
    kept(&["t"], "t = (1, 2)\nreturn t");
    kept(&[], "t = (1, 2)\nt += (3,)\nreturn t");
    kept(&[], "t = (1, 2)\nif c:\n  t = (1, 2, 3)\nreturn t");
    kept(&[], "t = (1, 2)\nfor t in r:\n  pass\nreturn t");
    kept(&[], "t = (1, 2)\nf = lambda: t\nreturn f");
    kept(&[], "t = (1, 2)\nx = [v for v in t]\nreturn x");
    kept(&[], "t = (1, 2)\nt, u = (3, 4), 5\nreturn t");
    kept(&[], "t = (*a, 2)\nreturn t");
    kept(&[], "t = (1, 2)\ndel t");
    kept(&[], "t = (1, 2)\nwith f() as g:\n  pass\nreturn t");
    // Python raises on `t[0] = …`; it must not become `t_0 = …`.
    assert_eq!(
        split(&[], "t = (1, 2)\nt[0] = 3"),
        ["t_0 = 1", "t_1 = 2", "(t_0, t_1)[0] = 3"]
    );
}
