//! Inlining the program's own helpers at host level (part of
//! **app_calls**): `x = relu(input @ w1 + b1)`, `build_up_b(b, …)` in a
//! time loop, `u, v = step(u, v)`. The helper's body is copied into the
//! host schedule in place of the call and lowered like the migrated
//! function's own statements, so its loops, `if`s, reductions and array
//! expressions become what they would be there.
//!
//! Python's meaning is kept: parameters are bound to the arguments as
//! names bind objects (a helper that stores into `a[...]` changes the
//! caller's array; one that rebinds `a` does not), the helper's names are
//! renamed with a prefix per call site (`relu1_x`) so they never meet the
//! caller's or another call's, and the final `return expr` becomes the
//! value of the call. Calls in a helper's body inline in turn, up to
//! [`MAX_INLINE_DEPTH`]; recursion and an early `return` are refused.
//! A refusal inside a helper names the call site and the helper's line.

use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::text_size::TextRange;

use crate::error::{refuse, Lower};
use crate::lower::context::{Lowerer, Recurse, Region};
use crate::plan::{HostStep, HostValue};
use crate::pyast;

use crate::lower::app_calls::{at_call_site, Frame, NAME};

/// Helpers inline at most this deep.
const MAX_INLINE_DEPTH: usize = 8;

/// The statements one inlined call runs before the statement that uses
/// its value.
struct Piece {
    callee: String,
    stmts: Vec<ast::Stmt>,
}

/// What inlining the calls of one statement gathers.
struct Lift {
    pieces: Vec<Piece>,
    frames: Vec<Frame>,
    /// More than one call in the statement: each value goes through a
    /// name, so that a later call cannot change what an earlier one gave.
    temps: bool,
    /// The statement is a bare call (`build_up_b(b, …)`): its range, whose
    /// value is not used.
    unused: Option<TextRange>,
    line: u32,
}

fn name_expr(id: &str, range: TextRange, store: bool) -> ast::Expr {
    ast::Expr::Name(ast::ExprName {
        range,
        id: ast::Identifier::new(id),
        ctx: if store {
            ast::ExprContext::Store
        } else {
            ast::ExprContext::Load
        },
    })
}

fn assign(target: ast::Expr, value: ast::Expr, range: TextRange) -> ast::Stmt {
    ast::Stmt::Assign(ast::StmtAssign {
        range,
        targets: vec![target],
        value: Box::new(value),
        type_comment: None,
    })
}

/// Names a helper's body assigns (assignment and loop targets, `:=`).
fn assigned_names(def: &ast::StmtFunctionDef) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |n: String| {
        if !out.contains(&n) {
            out.push(n);
        }
    };
    pyast::walk_stmts(&def.body, &mut |s| {
        let targets: Vec<&ast::Expr> = match s {
            ast::Stmt::Assign(a) => a.targets.iter().collect(),
            ast::Stmt::AugAssign(a) => vec![&a.target],
            ast::Stmt::AnnAssign(a) => vec![&a.target],
            ast::Stmt::For(f) => vec![&f.target],
            _ => vec![],
        };
        for t in targets {
            pyast::target_names(t).into_iter().for_each(&mut add);
        }
        for e in pyast::stmt_exprs(s) {
            pyast::walk_expr(e, &mut |x| {
                if let ast::Expr::NamedExpr(n) = x {
                    pyast::target_names(&n.target)
                        .into_iter()
                        .for_each(&mut add);
                }
            });
        }
    });
    out
}

/// `if c: return a` / `else: return b` at the end of a body (or `if c:
/// return a` then `return b`) becomes `return a if c else b`, so that a
/// helper choosing its value has one `return` at the end.
fn fold_returns(body: &mut Vec<ast::Stmt>) {
    fn single_return(b: &mut Vec<ast::Stmt>) -> Option<ast::Expr> {
        fold_returns(b);
        match b.as_slice() {
            [ast::Stmt::Return(r)] => r.value.as_deref().cloned(),
            _ => None,
        }
    }
    fn ifexp(test: &ast::Expr, a: ast::Expr, b: ast::Expr, range: TextRange) -> ast::Stmt {
        ast::Stmt::Return(ast::StmtReturn {
            range,
            value: Some(Box::new(ast::Expr::IfExp(ast::ExprIfExp {
                range,
                test: Box::new(test.clone()),
                body: Box::new(a),
                orelse: Box::new(b),
            }))),
        })
    }
    let n = body.len();
    if let Some(ast::Stmt::If(i)) = body.last_mut() {
        let range = i.range;
        if let (Some(a), Some(b)) = (single_return(&mut i.body), single_return(&mut i.orelse)) {
            let test = (*i.test).clone();
            body[n - 1] = ifexp(&test, a, b, range);
        }
        return;
    }
    if n >= 2 {
        if let (ast::Stmt::If(i), ast::Stmt::Return(r)) = (&body[n - 2], &body[n - 1]) {
            if i.orelse.is_empty() {
                let mut then = i.body.clone();
                if let (Some(a), Some(b)) = (single_return(&mut then), r.value.as_deref()) {
                    let s = ifexp(&i.test, a, b.clone(), i.range);
                    body.truncate(n - 2);
                    body.push(s);
                    fold_returns(body);
                }
            }
        }
    }
}

fn recursion(callee: &str) -> String {
    format!("`{callee}` calls itself (recursion): port inlines helpers, which needs a fixed depth")
}

/// An argument the helper's body can use as it is: a name (the same
/// object) or a constant.
fn substitutable(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Name(_) | ast::Expr::Constant(_) => true,
        ast::Expr::UnaryOp(u) => matches!(u.operand.as_ref(), ast::Expr::Constant(_)),
        _ => false,
    }
}

impl Lowerer<'_> {
    /// Whether `e` calls a function of the program.
    fn expr_calls_app(&self, e: &ast::Expr) -> bool {
        let mut found = false;
        pyast::walk_expr(e, &mut |x| {
            if let ast::Expr::Call(c) = x {
                found |= self.app_function(&c.func).is_some();
            }
        });
        found
    }

    /// Whether a statement's own expressions (not its nested bodies) call
    /// a function of the program.
    pub(crate) fn stmt_calls_app(&self, s: &ast::Stmt) -> bool {
        pyast::stmt_exprs(s).iter().any(|e| self.expr_calls_app(e))
    }

    /// Whether any statement of `body`, nested ones included, calls a
    /// function of the program.
    pub(crate) fn body_calls_app(&self, body: &[ast::Stmt]) -> bool {
        let mut found = false;
        pyast::walk_stmts(body, &mut |s| found |= self.stmt_calls_app(s));
        found
    }

    /// A host-level statement that calls helpers: each call's body is
    /// lowered in its place, then the statement with the calls replaced by
    /// their values. Gives what a `return` returns.
    pub(crate) fn host_inline_stmt(
        &mut self,
        r: &mut Region,
        s: &ast::Stmt,
    ) -> Lower<Option<HostValue>> {
        let line = self.src.line(s);
        if let ast::Stmt::While(w) = s {
            if self.expr_calls_app(&w.test) {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{}`: a helper called in a `while` condition; assign its value to a name before the loop and at the end of the body",
                        self.src.text_of(w.test.as_ref())
                    ),
                );
            }
        }
        let mut calls = 0;
        for e in pyast::stmt_exprs(s) {
            pyast::walk_expr(e, &mut |x| {
                if let ast::Expr::Call(c) = x {
                    calls += usize::from(self.app_function(&c.func).is_some());
                }
            });
        }
        let mut cx = Lift {
            pieces: Vec::new(),
            frames: Vec::new(),
            temps: calls > 1,
            unused: match s {
                ast::Stmt::Expr(e) => match e.value.as_ref() {
                    ast::Expr::Call(c) if self.app_function(&c.func).is_some() => {
                        Some(e.value.range())
                    }
                    _ => None,
                },
                _ => None,
            },
            line,
        };
        let mut stmt = s.clone();
        let res = (|| -> Lower<Option<HostValue>> {
            for e in pyast::stmt_exprs_mut(&mut stmt) {
                self.lift(e, &mut cx)?;
            }
            for (p, f) in std::mem::take(&mut cx.pieces).into_iter().zip(&cx.frames) {
                self.steps.push(HostStep::Comment(format!(
                    "inlined `{}` (line {}), called at line {}",
                    p.callee, f.span.0, f.call_line
                )));
                self.inline_stack.push((p.callee.clone(), f.span));
                let res = self.host_block(r, &p.stmts);
                self.inline_stack.pop();
                res?;
            }
            if cx.unused.is_some() {
                return Ok(None);
            }
            // Every call was replaced by its value; one left (where the
            // walk does not reach) would be inlined again, forever.
            if self.stmt_calls_app(&stmt) {
                return refuse(
                    NAME,
                    line,
                    "a helper called where port cannot put its body (inside a comprehension or lambda): call it in a statement of its own",
                );
            }
            self.host_block(r, std::slice::from_ref(&stmt))
        })();
        res.map_err(|why| at_call_site(why, &cx.frames, self.src))
    }

    /// Replaces the calls to helpers in `e` by their values, in evaluation
    /// order (arguments first), gathering the helpers' bodies.
    fn lift(&mut self, e: &mut ast::Expr, cx: &mut Lift) -> Lower<()> {
        if let ast::Expr::IfExp(_) | ast::Expr::BoolOp(_) = e {
            let mut again = None;
            pyast::walk_expr(e, &mut |x| {
                if let ast::Expr::Call(c) = x {
                    if let Some(f) = self.app_function(&c.func) {
                        if f == self.fn_name || self.inline_stack.iter().any(|(g, _)| *g == f) {
                            again = again.take().or(Some(f));
                        }
                    }
                }
            });
            if let Some(f) = again {
                return refuse(NAME, self.src.line(e), recursion(&f));
            }
            if self.expr_calls_app(e) {
                return refuse(
                    NAME,
                    self.src.line(e),
                    format!(
                        "`{}`: a helper called under `and`/`or`/`if … else`, which may not run it; call it in a statement of its own",
                        self.src.text_of(e)
                    ),
                );
            }
        }
        if crate::pyast::opens_scope(e) && self.expr_calls_app(e) {
            return refuse(
                NAME,
                self.src.line(e),
                format!(
                    "`{}`: a helper called once per element of a comprehension, from the host; call it on the whole array, or write the loop over the elements",
                    self.src.text_of(e)
                ),
            );
        }
        let callee = match e {
            ast::Expr::Call(c) => self.app_function(&c.func),
            _ => None,
        };
        for c in pyast::expr_children_mut(e) {
            self.lift(c, cx)?;
        }
        if let (Some(callee), ast::Expr::Call(c)) = (callee, &*e) {
            let v = self.inline_piece(&callee, c, cx)?;
            *e = v;
        }
        Ok(())
    }

    /// Inlines one call (its arguments already lifted): pushes the helper's
    /// renamed body and gives the expression that is the call's value.
    fn inline_piece(&mut self, callee: &str, c: &ast::ExprCall, cx: &mut Lift) -> Lower<ast::Expr> {
        let line = self.src.line(c);
        if callee == self.fn_name || self.inline_stack.iter().any(|(f, _)| f == callee) {
            return refuse(NAME, line, recursion(callee));
        }
        if self.inline_stack.len() >= MAX_INLINE_DEPTH {
            return refuse(
                NAME,
                line,
                format!("helpers nest more than {MAX_INLINE_DEPTH} deep at `{callee}`"),
            );
        }
        let def = self.callee_def(callee, line)?;
        let span = (self.src.line(def), self.src.end_line(def));
        cx.frames.push(Frame {
            callee: callee.to_string(),
            call_line: line,
            span,
            prefix: String::new(),
        });

        // The body and the value it returns.
        let mut body: Vec<ast::Stmt> = def
            .body
            .iter()
            .filter(|s| !pyast::is_docstring(s))
            .cloned()
            .collect();
        fold_returns(&mut body);
        // `if len(x) == 1: return …` before a loop: the helper as one that
        // returns once, at its end, as the function's own body is.
        pyast::single_exit::single_exit_fresh(&mut body, &def.args);
        pyast::desugar_element_loops(&mut body);
        pyast::split_tuple_names(&pyast::param_names(&def.args), &mut body);
        let mut ret: Option<(ast::Expr, TextRange)> = None;
        if let Some(ast::Stmt::Return(rs)) = body.last() {
            let rng = rs.range();
            let v = rs.value.as_deref().cloned();
            body.pop();
            ret = v.map(|v| (v, rng));
        }
        let mut early = None;
        pyast::walk_stmts(&body, &mut |s| match s {
            ast::Stmt::Return(_) => early = early.or(Some(self.src.line(s))),
            ast::Stmt::FunctionDef(_) | ast::Stmt::Global(_) | ast::Stmt::Nonlocal(_) => {
                early = early.or(Some(self.src.line(s)))
            }
            _ => {}
        });
        if let Some(l) = early {
            return refuse(
                NAME,
                l,
                format!(
                    "an early `return` (or a nested `def`, `global`) in `{callee}`: port inlines a helper whose one `return` ends its body"
                ),
            );
        }
        if ret.is_none() && cx.unused != Some(c.range()) {
            return refuse(
                NAME,
                line,
                format!("`{callee}` returns nothing; its value is used"),
            );
        }

        // A prefix no name of the program or an earlier inlining has.
        let mut k = 1;
        let prefix = loop {
            let p = format!("{callee}{k}_");
            if !self.used.iter().any(|u| u.starts_with(&p)) {
                break p;
            }
            k += 1;
        };
        if let Some(f) = cx.frames.last_mut() {
            f.prefix = prefix.clone();
        }

        // Arguments by position, keyword, then defaults.
        let params = crate::pyast::positional_params(&def.args);
        let mut given: Vec<Option<ast::Expr>> = vec![None; params.len()];
        for (i, a) in c.args.iter().enumerate() {
            if matches!(a, ast::Expr::Starred(_)) || i >= params.len() {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{callee}` takes {} arguments; this call passes {}",
                        params.len(),
                        c.args.len()
                    ),
                );
            }
            given[i] = Some(a.clone());
        }
        for kw in &c.keywords {
            let Some(kn) = &kw.arg else {
                return refuse(
                    NAME,
                    line,
                    format!("`{callee}(**…)`: keyword arguments from a dict"),
                );
            };
            let Some(i) = params.iter().position(|p| p == kn.as_str()) else {
                return refuse(NAME, line, format!("`{callee}` has no parameter `{kn}`"));
            };
            if given[i].is_some() {
                return refuse(NAME, line, format!("`{callee}` is given `{kn}` twice"));
            }
            given[i] = Some(kw.value.clone());
        }
        let assigned = assigned_names(def);
        let mut subst: Vec<(String, ast::Expr)> = Vec::new();
        let mut stmts = Vec::new();
        for ((p, a), prm) in params.iter().zip(given).zip(&def.args.args) {
            let v = match a {
                Some(v) => v,
                None => match prm.default.as_deref() {
                    Some(d) if self.src.eval_const(d).is_some() || substitutable(d) => d.clone(),
                    _ => {
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`{callee}` is called without `{p}`, which has no constant default"
                            ),
                        )
                    }
                },
            };
            if !assigned.contains(p) && substitutable(&v) {
                subst.push((p.clone(), v));
            } else {
                let n = format!("{prefix}{p}");
                stmts.push(assign(name_expr(&n, c.range(), true), v, c.range()));
            }
        }
        let renames: Vec<String> = params
            .iter()
            .cloned()
            .chain(assigned)
            .filter(|n| !subst.iter().any(|(p, _)| p == n))
            .collect();
        for n in &renames {
            self.used.insert(format!("{prefix}{n}"));
        }
        let mut rename = |e: &mut ast::Expr| -> bool {
            if let ast::Expr::Name(n) = e {
                if let Some((_, v)) = subst.iter().find(|(p, _)| n.id.as_str() == p) {
                    *e = v.clone();
                } else if renames.iter().any(|r| n.id.as_str() == r) {
                    n.id = ast::Identifier::new(format!("{prefix}{}", n.id));
                }
                return true;
            }
            false
        };
        pyast::walk_body_exprs_mut(&mut body, &mut rename);
        stmts.extend(body);

        // The call's value.
        let value = match ret {
            None => ast::Expr::Constant(ast::ExprConstant {
                range: c.range(),
                value: ast::Constant::None,
                kind: None,
            }),
            Some((mut v, rng)) => {
                pyast::walk_expr_mut(&mut v, &mut rename);
                if cx.temps || self.expr_calls_app(&v) {
                    // Through names, inside the helper's frame.
                    match &v {
                        ast::Expr::Tuple(t) => {
                            let names: Vec<String> = (0..t.elts.len())
                                .map(|i| format!("{prefix}ret{i}"))
                                .collect();
                            let target = ast::Expr::Tuple(ast::ExprTuple {
                                range: rng,
                                elts: names.iter().map(|n| name_expr(n, rng, true)).collect(),
                                ctx: ast::ExprContext::Store,
                            });
                            for n in &names {
                                self.used.insert(n.clone());
                            }
                            stmts.push(assign(target, v.clone(), rng));
                            ast::Expr::Tuple(ast::ExprTuple {
                                range: c.range(),
                                elts: names
                                    .iter()
                                    .map(|n| name_expr(n, c.range(), false))
                                    .collect(),
                                ctx: ast::ExprContext::Load,
                            })
                        }
                        _ => {
                            let n = format!("{prefix}ret");
                            self.used.insert(n.clone());
                            stmts.push(assign(name_expr(&n, rng, true), v, rng));
                            name_expr(&n, c.range(), false)
                        }
                    }
                } else {
                    v
                }
            }
        };
        cx.pieces.push(Piece {
            callee: callee.to_string(),
            stmts,
        });
        self.log.applied(
            NAME,
            format!(
                "`{callee}` inlined into the host schedule (line {})",
                cx.line
            ),
        );
        Ok(value)
    }
}
