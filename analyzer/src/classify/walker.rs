//! The recursive walk over a function body: statements, assignments and
//! unpacking, `try`, `return`, and expressions down to their calls,
//! attributes and subscripts. It hands each leaf (a call, a name, an
//! operator) to the module that types it; those never call back up here.

use std::collections::HashMap;

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};

use super::state::Checker;
use super::util::{const_ty, dtype_name, join_arith, scalar_of, scalar_or_row};
use crate::support;
use crate::symbols::dotted;
use crate::ty::Ty;
use crate::walk::MAX_DEPTH;

impl<'a> Checker<'a> {
    pub(super) fn body(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        self.depth += 1;
        self.stmt_inner(s);
        self.depth -= 1;
    }

    fn stmt_inner(&mut self, s: &Stmt) {
        let line = self.line(s);
        match s {
            Stmt::FunctionDef(d) => {
                self.add(
                    "PORT210",
                    line,
                    format!(
                        "nested function `{}`: port does not make closures device functions",
                        d.name
                    ),
                );
                let ty = self.nested_function(d.name.as_str());
                self.env.insert(d.name.to_string(), ty);
            }
            Stmt::AsyncFunctionDef(d) => {
                self.add(
                    "PORT112",
                    line,
                    format!("nested async function `{}`", d.name),
                );
            }
            Stmt::ClassDef(c) => {
                self.add(
                    "PORT112",
                    line,
                    format!("class `{}` defined inside a function", c.name),
                );
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    let t = self.expr(v);
                    self.returned(&t, line);
                }
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    if !matches!(t, Expr::Name(_)) {
                        self.add(
                            "PORT112",
                            line,
                            format!("`del {}` is not supported", self.m.text_of(t.range())),
                        );
                    }
                }
            }
            Stmt::Assign(a) => {
                let t = self.expr(&a.value);
                let derived = self.reads_data(&a.value);
                for target in &a.targets {
                    self.assign(target, t.clone(), derived, line);
                }
            }
            Stmt::AugAssign(a) => {
                let t = self.expr(&a.value);
                let derived = self.reads_data(&a.value);
                match a.target.as_ref() {
                    Expr::Name(n) => {
                        let old = self.env.get(n.id.as_str()).cloned().unwrap_or(Ty::Unknown);
                        let joined = join_arith(&old, &t);
                        if derived {
                            self.data_derived.insert(n.id.to_string());
                        }
                        self.env.insert(n.id.to_string(), joined);
                    }
                    other => {
                        self.assign(other, t, derived, line);
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    let t = self.expr(v);
                    let derived = self.reads_data(v);
                    self.assign(&a.target, t, derived, line);
                }
            }
            Stmt::TypeAlias(_) => {}
            Stmt::For(f) => {
                let it = self.expr(&f.iter);
                let elem = self.iter_elem(&it, &f.iter, line);
                self.assign(&f.target, elem, false, line);
                self.body(&f.body);
                self.body(&f.orelse);
            }
            Stmt::AsyncFor(f) => {
                self.add("PORT112", line, "`async for` is not supported".into());
                self.body(&f.body);
            }
            Stmt::While(w) => {
                self.expr(&w.test);
                self.body(&w.body);
                self.body(&w.orelse);
            }
            Stmt::If(i) => {
                self.expr(&i.test);
                self.body(&i.body);
                self.body(&i.orelse);
            }
            Stmt::With(w) => {
                let objmode = w.items.iter().any(|it| {
                    let callee = match &it.context_expr {
                        Expr::Call(c) => dotted(&c.func),
                        e => dotted(e),
                    };
                    callee.is_some_and(|c| c.ends_with("objmode"))
                });
                if !objmode {
                    let what = w
                        .items
                        .first()
                        .map(|it| self.m.text_of(it.context_expr.range()).to_string())
                        .unwrap_or_default();
                    self.add(
                        "PORT105",
                        line,
                        format!("`with {what}`: unsupported context manager in use"),
                    );
                }
                for it in &w.items {
                    let t = self.expr(&it.context_expr);
                    if let Some(v) = &it.optional_vars {
                        self.assign(v, Ty::Opaque(format!("{t:?}")), false, line);
                    }
                }
                self.body(&w.body);
            }
            Stmt::AsyncWith(w) => {
                self.add("PORT112", line, "`async with` is not supported".into());
                self.body(&w.body);
            }
            Stmt::Match(m) => {
                self.add(
                    "PORT112",
                    line,
                    "`match` statement: use if/elif in compiled code".into(),
                );
                self.expr(&m.subject);
                for case in &m.cases {
                    self.body(&case.body);
                }
            }
            Stmt::Raise(r) => {
                if let Some(e) = &r.exc {
                    self.exception_expr(e);
                }
            }
            Stmt::Try(t) => {
                self.try_stmt(line, &t.handlers, !t.finalbody.is_empty(), false);
                self.body(&t.body);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    self.body(&h.body);
                }
                self.body(&t.orelse);
                self.body(&t.finalbody);
            }
            Stmt::TryStar(t) => {
                self.try_stmt(line, &t.handlers, !t.finalbody.is_empty(), true);
                self.body(&t.body);
                self.body(&t.orelse);
                self.body(&t.finalbody);
            }
            Stmt::Assert(a) => {
                self.expr(&a.test);
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                self.add(
                    "PORT112",
                    line,
                    "import inside a function: move it to module level".into(),
                );
            }
            Stmt::Global(g) => {
                let names: Vec<&str> = g.names.iter().map(|n| n.as_str()).collect();
                self.add(
                    "PORT109",
                    line,
                    format!(
                        "`global {}`: nopython mode cannot store to globals",
                        names.join(", ")
                    ),
                );
            }
            Stmt::Nonlocal(g) => {
                let names: Vec<&str> = g.names.iter().map(|n| n.as_str()).collect();
                self.add(
                    "PORT109",
                    line,
                    format!(
                        "`nonlocal {}`: nopython mode cannot rebind enclosing names",
                        names.join(", ")
                    ),
                );
            }
            Stmt::Expr(e) => {
                // A bare string is a docstring or a comment, not a value.
                if !matches!(e.value.as_ref(), Expr::Constant(_)) {
                    self.expr(&e.value);
                }
            }
            Stmt::Pass(_) | Stmt::Break(_) | Stmt::Continue(_) => {}
        }
    }

    fn try_stmt(&mut self, line: u32, handlers: &[ast::ExceptHandler], finally: bool, star: bool) {
        let mut reason = None;
        if star {
            reason = Some("`except*` is not supported".to_string());
        } else if finally {
            reason = Some("`try … finally` is not supported".to_string());
        }
        for h in handlers {
            let ast::ExceptHandler::ExceptHandler(h) = h;
            if let Some(name) = &h.name {
                reason.get_or_insert(format!(
                    "`except … as {name}`: the exception object cannot be bound"
                ));
            }
            if let Some(t) = &h.type_ {
                let d = dotted(t).unwrap_or_default();
                if d != "Exception" && d != "BaseException" {
                    reason.get_or_insert(format!(
                        "`except {}`: only bare `except` and `except Exception` compile",
                        self.m.text_of(t.range())
                    ));
                }
            }
        }
        match reason {
            Some(r) => self.add("PORT106", line, r),
            None => self.add(
                "PORT208",
                line,
                "`try`/`except`: kernels cannot catch exceptions".into(),
            ),
        }
    }

    fn exception_expr(&mut self, e: &Expr) {
        // `raise ValueError("msg")`: constant arguments are fine; formatting
        // the message is still formatting.
        match e {
            Expr::Call(c) => {
                self.expr(&c.func);
                for a in &c.args {
                    if !matches!(a, Expr::Constant(_)) {
                        self.expr(a);
                    }
                }
            }
            other => {
                self.expr(other);
            }
        }
    }

    pub(super) fn returned(&mut self, t: &Ty, line: u32) {
        match t {
            Ty::Func => self.add(
                "PORT111",
                line,
                "returns a function: nopython mode cannot return closures".into(),
            ),
            Ty::AppFn(i) if self.syms.functions[*i].parent == Some(self.fi) => self.add(
                "PORT111",
                line,
                format!(
                    "returns the nested function `{}`: closures cannot escape",
                    self.syms.functions[*i].name
                ),
            ),
            Ty::Str => self.note_string(line, "returns a string"),
            _ => {}
        }
    }

    fn nested_function(&self, name: &str) -> Ty {
        self.syms
            .functions
            .iter()
            .position(|g| g.parent == Some(self.fi) && g.name == name)
            .map(Ty::AppFn)
            .unwrap_or(Ty::Func)
    }

    fn assign(&mut self, target: &Expr, t: Ty, derived: bool, line: u32) {
        match target {
            Expr::Name(n) => {
                if t == Ty::Str {
                    self.note_string(line, &format!("`{}` holds a string", n.id));
                }
                if derived {
                    self.data_derived.insert(n.id.to_string());
                } else {
                    self.data_derived.remove(n.id.as_str());
                }
                self.env.insert(n.id.to_string(), t);
            }
            Expr::Tuple(tu) => self.unpack(&tu.elts, t, derived, line),
            Expr::List(l) => self.unpack(&l.elts, t, derived, line),
            Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let base = self.assume_array(&s.value, base, "assigned as", s.range);
                self.expr(&s.slice);
                if base.is_objectish() {
                    self.object_use_lines.push(line);
                }
            }
            Expr::Attribute(a) => {
                let base = self.expr(&a.value);
                if !base.is_array() {
                    self.add(
                        "PORT104",
                        line,
                        format!(
                            "sets attribute `{}`: nopython mode cannot store to object attributes",
                            self.m.text_of(a.range)
                        ),
                    );
                }
            }
            Expr::Starred(_) => self.add(
                "PORT112",
                line,
                "starred assignment target is not supported".into(),
            ),
            other => {
                self.expr(other);
            }
        }
    }

    fn unpack(&mut self, elts: &[Expr], t: Ty, derived: bool, line: u32) {
        if elts.iter().any(|e| matches!(e, Expr::Starred(_))) {
            self.add(
                "PORT112",
                line,
                "starred assignment target is not supported".into(),
            );
        }
        let parts = match t {
            Ty::Tuple(ts) if ts.len() == elts.len() => ts,
            Ty::Array { ndim, .. } => {
                vec![scalar_or_row(ndim.map(|n| n.saturating_sub(1))); elts.len()]
            }
            _ => vec![Ty::Unknown; elts.len()],
        };
        for (e, p) in elts.iter().zip(parts) {
            self.assign(e, p, derived, line);
        }
    }

    pub fn expr(&mut self, e: &Expr) -> Ty {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return Ty::Unknown;
        }
        self.depth += 1;
        let t = self.expr_inner(e);
        self.depth -= 1;
        t
    }

    fn expr_inner(&mut self, e: &Expr) -> Ty {
        let line = self.line(e);
        match e {
            Expr::BoolOp(b) => {
                for v in &b.values {
                    self.expr(v);
                }
                Ty::Bool
            }
            Expr::NamedExpr(n) => {
                let t = self.expr(&n.value);
                self.assign(&n.target, t.clone(), false, line);
                t
            }
            Expr::BinOp(b) => {
                let l = self.expr(&b.left);
                let r = self.expr(&b.right);
                self.binop(b, l, r, line)
            }
            Expr::UnaryOp(u) => {
                let t = self.expr(&u.operand);
                match u.op {
                    ast::UnaryOp::Not => Ty::Bool,
                    _ => t,
                }
            }
            Expr::Lambda(l) => {
                self.add(
                    "PORT210",
                    line,
                    "lambda: port does not make closures device functions".into(),
                );
                let _ = l;
                Ty::Func
            }
            Expr::IfExp(i) => {
                self.expr(&i.test);
                let a = self.expr(&i.body);
                let b = self.expr(&i.orelse);
                if a == b {
                    a
                } else {
                    join_arith(&a, &b)
                }
            }
            Expr::Dict(d) => {
                self.add("PORT201", line, "builds a dict".into());
                for k in d.keys.iter().flatten() {
                    self.expr(k);
                }
                for v in &d.values {
                    self.expr(v);
                }
                Ty::Dict
            }
            Expr::Set(s) => {
                self.add("PORT201", line, "builds a set".into());
                for v in &s.elts {
                    self.expr(v);
                }
                Ty::Set
            }
            Expr::List(l) => {
                self.add("PORT201", line, "builds a list".into());
                for v in &l.elts {
                    self.expr(v);
                }
                Ty::List
            }
            Expr::ListComp(c) => {
                self.add("PORT201", line, "list comprehension builds a list".into());
                self.comprehension(&c.generators, &[&c.elt], line);
                Ty::List
            }
            Expr::SetComp(c) => {
                self.add("PORT201", line, "set comprehension builds a set".into());
                self.comprehension(&c.generators, &[&c.elt], line);
                Ty::Set
            }
            Expr::DictComp(c) => {
                self.add("PORT201", line, "dict comprehension builds a dict".into());
                self.comprehension(&c.generators, &[&c.key, &c.value], line);
                Ty::Dict
            }
            Expr::GeneratorExp(c) => {
                self.add("PORT201", line, "generator expression".into());
                self.comprehension(&c.generators, &[&c.elt], line);
                Ty::Unknown
            }
            Expr::Await(a) => {
                self.add("PORT112", line, "`await` is not supported".into());
                self.expr(&a.value)
            }
            Expr::Yield(y) => {
                self.generator(line);
                if let Some(v) = &y.value {
                    self.expr(v);
                }
                Ty::Unknown
            }
            Expr::YieldFrom(y) => {
                self.generator(line);
                self.expr(&y.value);
                Ty::Unknown
            }
            Expr::Compare(c) => {
                let l = self.expr(&c.left);
                let mut any_array = l.is_array();
                for x in &c.comparators {
                    let t = self.expr(x);
                    any_array |= t.is_array();
                    if t == Ty::Str || l == Ty::Str {
                        self.note_string(line, "compares strings");
                    }
                }
                if any_array {
                    Ty::Array {
                        ndim: None,
                        dtype: Some("bool".into()),
                    }
                } else {
                    Ty::Bool
                }
            }
            Expr::Call(c) => self.call(c, line),
            Expr::FormattedValue(f) => {
                self.expr(&f.value);
                Ty::Str
            }
            Expr::JoinedStr(j) => {
                let mut non_str = None;
                for v in &j.values {
                    if let Expr::FormattedValue(f) = v {
                        let t = self.expr(&f.value);
                        if t != Ty::Str || f.format_spec.is_some() {
                            non_str.get_or_insert(self.m.text_of(f.value.range()).to_string());
                        }
                    }
                }
                match non_str {
                    Some(v) => self.add(
                        "PORT107",
                        line,
                        format!("f-string formats `{v}`: nopython mode cannot format numbers"),
                    ),
                    None => self.note_string(line, "builds an f-string"),
                }
                Ty::Str
            }
            Expr::Constant(c) => const_ty(&c.value),
            Expr::Attribute(a) => self.attribute(a, line),
            Expr::Subscript(s) => self.subscript(s, line),
            Expr::Starred(s) => self.expr(&s.value),
            Expr::Name(n) => self.name(n.id.as_str(), line),
            Expr::Tuple(t) => Ty::Tuple(t.elts.iter().map(|x| self.expr(x)).collect()),
            Expr::Slice(s) => {
                for p in [&s.lower, &s.upper, &s.step].into_iter().flatten() {
                    self.expr(p);
                }
                Ty::Unknown
            }
        }
    }

    fn comprehension(&mut self, gens: &[ast::Comprehension], elts: &[&Expr], line: u32) {
        for g in gens {
            let it = self.expr(&g.iter);
            let elem = self.iter_elem(&it, &g.iter, line);
            self.assign(&g.target, elem, false, line);
            for cond in &g.ifs {
                self.expr(cond);
            }
        }
        for e in elts {
            self.expr(e);
        }
    }

    fn attribute(&mut self, a: &ast::ExprAttribute, line: u32) -> Ty {
        let base = self.expr(&a.value);
        let attr = a.attr.as_str();
        match &base {
            Ty::Module(m) => self.module_attr(m, attr, line, false),
            Ty::LocalModule(i) => match self.syms.lookup(*i, attr) {
                Some(b) => self.binding_ty(attr, b, line),
                None => Ty::Unknown,
            },
            Ty::Array { ndim, .. } => match attr {
                "shape" | "strides" => Ty::Tuple(vec![Ty::Int; ndim.unwrap_or(0) as usize]),
                "size" | "ndim" | "itemsize" | "nbytes" => Ty::Int,
                "T" => base.clone(),
                "real" | "imag" => base.clone(),
                _ if support::NDARRAY_ATTRIBUTES.contains(&attr) => Ty::Unknown,
                // A method, returned as a bound value; calls are checked in `call`.
                _ if support::NDARRAY_METHODS.contains(&attr) => Ty::Unknown,
                _ => {
                    self.add(
                        "PORT114",
                        line,
                        format!("unknown attribute '{attr}' of type array"),
                    );
                    Ty::Unknown
                }
            },
            Ty::Complex | Ty::Float | Ty::Int if matches!(attr, "real" | "imag") => Ty::Float,
            Ty::Instance(c) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT104",
                    line,
                    format!(
                        "reads attribute `{}` of a {} instance",
                        self.m.text_of(a.range),
                        c.rsplit('.').next().unwrap_or(c)
                    ),
                );
                Ty::Unknown
            }
            Ty::Opaque(what) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT114",
                    line,
                    format!("attribute '{attr}' of a value nopython mode cannot type ({what})"),
                );
                Ty::Opaque(format!("{what}.{attr}"))
            }
            Ty::Unknown => {
                if support::NDARRAY_ATTRIBUTES.contains(&attr) {
                    self.assume_array(&a.value, Ty::Unknown, "uses", a.range);
                    match attr {
                        "shape" => Ty::Tuple(vec![]),
                        "size" | "ndim" => Ty::Int,
                        _ => Ty::Unknown,
                    }
                } else {
                    if let Expr::Name(n) = a.value.as_ref() {
                        if self.params.iter().any(|p| p == n.id.as_str()) {
                            self.object_use_lines.push(line);
                            self.add(
                                "PORT104",
                                line,
                                format!(
                                    "reads attribute `{}`: `{}` is not an array, and nopython mode cannot type Python objects",
                                    self.m.text_of(a.range),
                                    n.id
                                ),
                            );
                        }
                    }
                    Ty::Unknown
                }
            }
            _ => Ty::Unknown,
        }
    }

    fn subscript(&mut self, s: &ast::ExprSubscript, line: u32) -> Ty {
        let base = self.expr(&s.value);
        let base = self.assume_array(&s.value, base, "indexed as", s.range);
        let idx: Vec<&Expr> = match s.slice.as_ref() {
            Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let idx_tys: Vec<Ty> = idx.iter().map(|i| self.expr(i)).collect();
        match &base {
            Ty::Array { ndim, dtype } => {
                if idx_tys
                    .iter()
                    .any(|t| matches!(t, Ty::Array { dtype: Some(d), .. } if d == "bool"))
                {
                    self.add(
                        "PORT205",
                        line,
                        format!(
                            "`{}`: boolean-mask indexing makes an array whose size depends on the data",
                            self.m.text_of(s.range)
                        ),
                    );
                    return Ty::array(Some(1));
                }
                let slices = idx.iter().filter(|i| matches!(i, Expr::Slice(_))).count() as u8;
                let scalars = idx.len() as u8 - slices;
                match ndim {
                    Some(n) if scalars >= *n => scalar_of(dtype),
                    Some(n) => Ty::Array {
                        ndim: Some(n - scalars),
                        dtype: dtype.clone(),
                    },
                    None if slices > 0 => Ty::array(None),
                    None => scalar_of(dtype),
                }
            }
            Ty::Tuple(ts) => match idx.first() {
                Some(Expr::Constant(c)) => match &c.value {
                    ast::Constant::Int(i) => {
                        let i: usize = i.try_into().unwrap_or(usize::MAX);
                        ts.get(i).cloned().unwrap_or(if ts.is_empty() {
                            Ty::Int
                        } else {
                            Ty::Unknown
                        })
                    }
                    _ => Ty::Unknown,
                },
                _ => Ty::Unknown,
            },
            Ty::Str => Ty::Str,
            t if t.is_objectish() => {
                self.object_use_lines.push(line);
                Ty::Unknown
            }
            _ => Ty::Unknown,
        }
    }

    fn call(&mut self, c: &ast::ExprCall, line: u32) -> Ty {
        // Resolve the callee without treating `np.sum` as a value use.
        let (callee, receiver) = match c.func.as_ref() {
            Expr::Attribute(a) => {
                let base = self.expr(&a.value);
                match &base {
                    Ty::Module(m) => (self.module_attr(m, a.attr.as_str(), line, true), None),
                    _ => (Ty::Unknown, Some((base, a))),
                }
            }
            other => (self.expr(other), None),
        };
        let arg_tys: Vec<Ty> = c.args.iter().map(|a| self.expr(a)).collect();
        let mut kw: HashMap<String, Ty> = HashMap::new();
        for k in &c.keywords {
            let t = self.expr(&k.value);
            if let Some(name) = &k.arg {
                if name.as_str() == "dtype" {
                    let d = dtype_name(&k.value);
                    if d.as_deref() == Some("float64") {
                        self.uses_float64.get_or_insert(line);
                    }
                    kw.insert(
                        "dtype".into(),
                        Ty::Array {
                            ndim: None,
                            dtype: d,
                        },
                    );
                } else {
                    kw.insert(name.to_string(), t);
                }
            } else {
                self.add(
                    "PORT108",
                    line,
                    "`**` unpacking in a call is not supported".into(),
                );
            }
        }
        if let Some((base, a)) = receiver {
            if let Ty::External(f) = &base {
                let m = a.attr.as_str();
                if f.starts_with("numpy.") && support::UFUNC_METHODS.contains(&m) {
                    self.add(
                        "PORT119",
                        line,
                        format!("`{f}.{m}`: nopython mode compiles ufunc calls, not their methods (Unknown attribute '{m}')"),
                    );
                    return Ty::Opaque(format!("{f}.{m}"));
                }
            }
            return self.method_call(&base, a, &arg_tys, &kw, c, line);
        }
        match callee {
            Ty::Builtin(name) => self.builtin_call(&name, &arg_tys, c, line),
            Ty::AppFn(i) => {
                if !self.app_calls.iter().any(|(j, _)| *j == i) {
                    self.app_calls.push((i, line));
                }
                Ty::Unknown
            }
            Ty::Class(k) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT104",
                    line,
                    format!(
                        "instantiates class {}: Cannot determine Numba type of <class '{}'>",
                        k.rsplit('.').next().unwrap_or(&k),
                        k.rsplit('.').next().unwrap_or(&k)
                    ),
                );
                Ty::Instance(k)
            }
            Ty::External(full) => self.external_call(&full, &arg_tys, &kw, c, line),
            Ty::Opaque(what) => {
                self.object_use_lines.push(line);
                self.record_external(&what, line);
                Ty::Opaque(format!("{what}()"))
            }
            Ty::Module(m) => {
                // Calling a module object (e.g. a module imported by a name
                // that is also a function in another library).
                self.add("PORT101", line, format!("calls module {m}: not supported"));
                Ty::Opaque(m)
            }
            Ty::ExceptionClass | Ty::Func => Ty::Unknown,
            Ty::Unknown => {
                if let Expr::Name(n) = c.func.as_ref() {
                    let name = n.id.as_str();
                    if !self.env.contains_key(name)
                        && self.syms.lookup(self.f.module, name).is_none()
                    {
                        // A name from nowhere: an undefined or star-imported name.
                        self.add(
                            "PORT115",
                            line,
                            format!("Untyped global name '{name}': port cannot resolve it"),
                        );
                    }
                }
                Ty::Unknown
            }
            _ => Ty::Unknown,
        }
    }
}
