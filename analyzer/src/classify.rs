//! The classifier: one pass over a function body that infers the types of
//! its values from their use and records every reason, as a finding, why
//! Numba's nopython mode or a CUDA kernel could not take it. The verdict
//! follows from the worst finding; the call graph later lowers callers to
//! their callees' verdicts.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};

use crate::deps;
use crate::loader::Module;
use crate::model::{ArgType, Finding, LineRange, Severity, Verdict};
use crate::rules;
use crate::support;
use crate::symbols::{dotted, Binding, ConstKind, FnNode, FunctionSymbol, SymbolTable};
pub use crate::ty::Ty;
pub use crate::walk::{metadata_uses, walk_expr, walk_stmts, MAX_DEPTH};

/// What the classifier found in one function.
pub struct FunctionFacts {
    pub findings: Vec<Finding>,
    /// App functions called, with the line of the first call.
    pub app_calls: Vec<(usize, u32)>,
    /// External callees by dotted name (`numpy.sum`, `hashlib.md5`).
    pub external_calls: Vec<(String, u32)>,
    pub liftable_loops: Vec<LineRange>,
}

impl FunctionFacts {
    pub fn verdict(&self) -> Verdict {
        verdict_of(&self.findings)
    }
}

pub fn verdict_of(findings: &[Finding]) -> Verdict {
    if findings.iter().any(|f| f.severity == Severity::Object) {
        Verdict::Object
    } else if findings.iter().any(|f| f.severity == Severity::Blocker) {
        Verdict::Nopython
    } else {
        Verdict::Cuda
    }
}

pub struct Checker<'a> {
    pub m: &'a Module,
    syms: &'a SymbolTable<'a>,
    f: &'a FunctionSymbol<'a>,
    fi: usize,
    pub env: HashMap<String, Ty>,
    params: Vec<String>,
    assumed: HashSet<String>,
    /// Scalars whose value comes from array contents: sizes computed from
    /// them are data-dependent.
    data_derived: HashSet<String>,
    findings: Vec<Finding>,
    seen: HashSet<(String, u32, String)>,
    app_calls: Vec<(usize, u32)>,
    external_calls: Vec<(String, u32)>,
    /// Lines where an object-mode value is used (they cannot be lifted).
    object_use_lines: Vec<u32>,
    depth: usize,
    too_deep: bool,
    noted_generator: bool,
    noted_alloc: bool,
    noted_strings: bool,
    uses_float64: Option<u32>,
    /// The shapes of the array arguments of a real call.
    shapes: HashMap<String, Vec<u64>>,
    /// Parameters that were the same array as an earlier one in the
    /// captured call (`out` → `a` for `smooth(x, x)`).
    same: HashMap<String, String>,
}

/// Calls doing fewer element operations than this rarely pay for a launch and
/// transfers, and cannot fill a GPU's threads.
pub const SMALL_ARRAY_ELEMENTS: u64 = 16_384;

impl<'a> Checker<'a> {
    pub fn new(
        m: &'a Module,
        syms: &'a SymbolTable<'a>,
        fi: usize,
        captured: Option<&[ArgType]>,
    ) -> Self {
        let f = &syms.functions[fi];
        let mut c = Checker {
            m,
            syms,
            f,
            fi,
            env: HashMap::new(),
            params: Vec::new(),
            assumed: HashSet::new(),
            data_derived: HashSet::new(),
            findings: Vec::new(),
            seen: HashSet::new(),
            app_calls: Vec::new(),
            external_calls: Vec::new(),
            object_use_lines: Vec::new(),
            depth: 0,
            too_deep: false,
            noted_generator: false,
            noted_alloc: false,
            noted_strings: false,
            uses_float64: None,
            shapes: HashMap::new(),
            same: HashMap::new(),
        };
        c.bind_params(captured);
        c
    }

    fn line(&self, node: &impl Ranged) -> u32 {
        self.m.line_of(node.start())
    }

    fn add(&mut self, code: &str, line: u32, message: String) {
        let Some(rule) = rules::rule(code) else {
            debug_assert!(false, "unknown rule {code}");
            return;
        };
        if self.seen.insert((code.to_string(), line, message.clone())) {
            self.findings.push(Finding {
                code: rule.code.to_string(),
                severity: rule.severity,
                line,
                message,
            });
        }
    }

    fn bind_params(&mut self, captured: Option<&[ArgType]>) {
        let args = self.f.node.args();
        let line = self.f.line;
        let all: Vec<&ast::ArgWithDefault> = args
            .posonlyargs
            .iter()
            .chain(args.args.iter())
            .chain(args.kwonlyargs.iter())
            .collect();
        for (i, a) in all.iter().enumerate() {
            let name = a.def.arg.to_string();
            let mut ty = Ty::Unknown;
            if let Some(cap) = captured.and_then(|c| c.iter().find(|t| t.name == name)) {
                ty = ty_of_captured(cap);
                if let Some(shape) = &cap.shape {
                    self.shapes.insert(name.clone(), shape.clone());
                }
                if let Some(first) = &cap.same_as {
                    self.same.insert(name.clone(), first.clone());
                }
            } else if let Some(ann) = &a.def.annotation {
                ty = self.ty_of_annotation(ann);
            } else if let Some(d) = &a.default {
                if let Expr::Constant(c) = d.as_ref() {
                    ty = const_ty(&c.value);
                }
            }
            if i == 0 && self.f.class.is_some() && (name == "self" || name == "cls") {
                ty = Ty::Instance(self.f.class.clone().unwrap_or_default());
                self.add(
                    "PORT104",
                    line,
                    format!(
                        "method of class {}: nopython mode cannot type `{name}`",
                        self.f.class.as_deref().unwrap_or("?")
                    ),
                );
            }
            if let Ty::Array { dtype: Some(d), .. } = &ty {
                if d == "float64" && self.uses_float64.is_none() {
                    self.uses_float64 = Some(line);
                }
            }
            self.params.push(name.clone());
            self.env.insert(name, ty);
        }
        if let Some(v) = &args.vararg {
            self.add(
                "PORT211",
                line,
                format!("`*{}`: a kernel needs a fixed parameter list", v.arg),
            );
            self.env.insert(v.arg.to_string(), Ty::Tuple(vec![]));
        }
        if let Some(k) = &args.kwarg {
            self.add(
                "PORT108",
                line,
                format!(
                    "`**{}`: nopython mode cannot type keyword-argument dictionaries",
                    k.arg
                ),
            );
            self.env.insert(k.arg.to_string(), Ty::Dict);
        }
        if matches!(self.f.node, FnNode::AsyncDef(_)) {
            self.add(
                "PORT112",
                line,
                "async function: coroutines are not supported in nopython mode".into(),
            );
        }
        for d in self.f.node.decorators() {
            let name = dotted(d).or_else(|| match d {
                Expr::Call(c) => dotted(&c.func),
                _ => None,
            });
            if let Some(n) = name {
                if matches!(
                    n.as_str(),
                    "property"
                        | "staticmethod"
                        | "classmethod"
                        | "functools.lru_cache"
                        | "lru_cache"
                        | "functools.cache"
                        | "cache"
                        | "contextmanager"
                        | "contextlib.contextmanager"
                ) {
                    self.add(
                        "PORT104",
                        self.line(d),
                        format!("decorated with @{n}: the decorator wraps it in a Python object"),
                    );
                }
            }
        }
    }

    fn ty_of_annotation(&mut self, ann: &Expr) -> Ty {
        let text = dotted(ann)
            .or_else(|| match ann {
                Expr::Subscript(s) => dotted(&s.value),
                Expr::Constant(c) => match &c.value {
                    ast::Constant::Str(s) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or_default();
        let last = text.rsplit('.').next().unwrap_or("");
        match last {
            "ndarray" | "NDArray" | "ArrayLike" => Ty::array(None),
            "float" | "float32" | "float64" => Ty::Float,
            "int" | "int32" | "int64" => Ty::Int,
            "bool" => Ty::Bool,
            "complex" => Ty::Complex,
            "str" => Ty::Str,
            "list" | "List" | "Sequence" => Ty::List,
            "dict" | "Dict" | "Mapping" => Ty::Dict,
            "set" | "Set" => Ty::Set,
            "tuple" | "Tuple" => Ty::Tuple(vec![]),
            _ => match self.syms.lookup(self.f.module, last) {
                Some(Binding::Class(k)) => Ty::Instance(k),
                _ => Ty::Unknown,
            },
        }
    }

    /// Run the checker over the function and return what it found.
    pub fn run(mut self) -> FunctionFacts {
        match self.f.node {
            FnNode::Def(d) => self.body(&d.body),
            FnNode::AsyncDef(d) => self.body(&d.body),
            FnNode::Lambda(l) => {
                let t = self.expr(&l.body);
                self.returned(&t, self.line(l.body.as_ref()));
            }
        }
        if self.too_deep {
            self.add(
                "PORT112",
                self.f.line,
                format!("nesting deeper than {MAX_DEPTH} levels: port did not analyse the rest"),
            );
        }
        let body: &[Stmt] = match self.f.node {
            FnNode::Def(d) => &d.body,
            FnNode::AsyncDef(d) => &d.body,
            FnNode::Lambda(_) => &[],
        };
        // Loop dependences only matter for functions that could go to the GPU.
        if verdict_of(&self.findings) == Verdict::Cuda {
            for d in deps::check_loops(self.m, body, &self.env, &self.same) {
                self.add(d.code, d.line, d.message);
            }
        }
        if verdict_of(&self.findings) == Verdict::Cuda
            && !self.findings.iter().any(|f| f.code == "PORT405")
        {
            let scalar = !self.env.values().any(Ty::is_array) && !self.noted_alloc;
            let msg = if scalar && !self.app_calls.is_empty() {
                "calls only GPU-eligible functions: port migrates it together with its callees"
            } else if scalar {
                "scalar function: it becomes a device function, or a @vectorize(target='cuda') ufunc over arrays"
            } else {
                "array expressions become element loops in a grid-stride kernel"
            };
            self.add("PORT405", self.f.line, msg.into());
        }
        // Judged by the work of a real call (its loops' trip counts times the
        // elements each statement touches), not by its arrays' size: an
        // all-pairs loop over two small arrays is a lot of work. Nothing is
        // claimed when a trip count cannot be known.
        if verdict_of(&self.findings) == Verdict::Cuda {
            // The largest array argument, the first in order among equals.
            let mut largest: Option<(&String, u64)> = None;
            for p in &self.params {
                if let Some(shape) = self.shapes.get(p) {
                    let n: u64 = shape.iter().product();
                    if largest.is_none_or(|(_, m)| n > m) {
                        largest = Some((p, n));
                    }
                }
            }
            let work = largest.and_then(|_| crate::work::estimate(body, &self.shapes));
            if let (Some((name, n)), Some(work)) = (largest, work) {
                if work < SMALL_ARRAY_ELEMENTS {
                    let message = format!(
                        "a real call does about {work} element operations (largest array `{name}`: {n} elements): launch and transfers would cost more than the work"
                    );
                    self.add("PORT303", self.f.line, message);
                }
            }
        }
        if let Some(line) = self.uses_float64 {
            if verdict_of(&self.findings) == Verdict::Cuda {
                self.add(
                    "PORT301",
                    line,
                    "float64 data: GPUs run double precision at a fraction of float32 speed".into(),
                );
            }
        }
        let liftable = if verdict_of(&self.findings) == Verdict::Object {
            self.liftable_loops(body)
        } else {
            Vec::new()
        };
        for l in &liftable {
            self.add(
                "PORT404",
                l.line,
                format!(
                    "loop at lines {}-{} would compile in nopython mode: outline it into its own function",
                    l.line, l.end_line
                ),
            );
        }
        self.findings.sort_by_key(|f| (f.severity, f.line));
        FunctionFacts {
            findings: self.findings,
            app_calls: self.app_calls,
            external_calls: self.external_calls,
            liftable_loops: liftable,
        }
    }

    /// Outermost loops with no object-mode finding or object use inside and
    /// no `return`/`yield` (Numba's loop-lifting conditions).
    fn liftable_loops(&self, body: &[Stmt]) -> Vec<LineRange> {
        let mut loops = Vec::new();
        outermost_loops(body, &mut loops);
        loops
            .into_iter()
            .filter_map(|s| {
                let line = self.m.line_of(s.start());
                let end_line = self
                    .m
                    .line_of(s.end() - rustpython_parser::text_size::TextSize::from(1));
                let inside = |l: u32| l >= line && l <= end_line;
                let blocked = self
                    .findings
                    .iter()
                    .any(|f| f.severity == Severity::Object && inside(f.line))
                    || self.object_use_lines.iter().any(|&l| inside(l))
                    || contains_return_or_yield(s);
                (!blocked).then_some(LineRange { line, end_line })
            })
            .collect()
    }

    fn body(&mut self, stmts: &[Stmt]) {
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

    fn returned(&mut self, t: &Ty, line: u32) {
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

    fn note_string(&mut self, line: u32, what: &str) {
        if !self.noted_strings {
            self.noted_strings = true;
            self.add("PORT207", line, format!("{what}: kernels have no strings"));
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

    fn iter_elem(&mut self, it: &Ty, e: &Expr, line: u32) -> Ty {
        match it {
            Ty::Range => Ty::Int,
            Ty::Array { ndim, .. } => scalar_or_row(ndim.map(|n| n.saturating_sub(1))),
            Ty::List | Ty::Set | Ty::Dict => Ty::Unknown,
            Ty::Str => {
                self.note_string(line, "iterates over a string");
                Ty::Str
            }
            Ty::Tuple(ts) => ts.first().cloned().unwrap_or(Ty::Unknown),
            Ty::Unknown => {
                if let Expr::Name(n) = e {
                    if self.params.iter().any(|p| p == n.id.as_str()) {
                        self.assumption(n.id.as_str(), line, "iterated over");
                        self.env.insert(n.id.to_string(), Ty::array(None));
                    }
                }
                Ty::Unknown
            }
            t if t.is_objectish() => {
                self.object_use_lines.push(line);
                Ty::Unknown
            }
            _ => Ty::Unknown,
        }
    }

    fn assumption(&mut self, name: &str, line: u32, how: &str) {
        if self.assumed.insert(name.to_string()) {
            self.add(
                "PORT401",
                line,
                format!("assumes `{name}` is an array: {how}"),
            );
        }
    }

    /// A parameter of unknown type used like an array becomes one, noted.
    fn assume_array(
        &mut self,
        base: &Expr,
        t: Ty,
        how: &str,
        whole: rustpython_parser::text_size::TextRange,
    ) -> Ty {
        if t != Ty::Unknown {
            return t;
        }
        if let Expr::Name(n) = base {
            let name = n.id.as_str();
            if self.params.iter().any(|p| p == name) || self.env.contains_key(name) {
                let line = self.line(base);
                let text = short(self.m.text_of(whole));
                self.assumption(name, line, &format!("{how} {text}"));
                let arr = Ty::array(None);
                self.env.insert(name.to_string(), arr.clone());
                return arr;
            }
        }
        t
    }

    /// Does evaluating `e` read array contents (so a size computed from it
    /// depends on the data)?
    fn reads_data(&self, e: &Expr) -> bool {
        let mut found = false;
        walk_expr(e, &mut |x| match x {
            Expr::Subscript(s) => {
                if let Expr::Name(n) = s.value.as_ref() {
                    if self.env.get(n.id.as_str()).is_some_and(|t| t.is_array()) {
                        found = true;
                    }
                }
            }
            Expr::Name(n) if self.data_derived.contains(n.id.as_str()) => {
                found = true;
            }
            Expr::Call(c) => {
                let callee = dotted(&c.func).unwrap_or_default();
                let last = callee.rsplit('.').next().unwrap_or("");
                if matches!(
                    last,
                    "sum"
                        | "max"
                        | "min"
                        | "mean"
                        | "count_nonzero"
                        | "prod"
                        | "argmax"
                        | "argmin"
                        | "item"
                        | "amax"
                        | "amin"
                ) {
                    found = true;
                }
            }
            _ => {}
        });
        found
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

    fn generator(&mut self, line: u32) {
        if !self.noted_generator {
            self.noted_generator = true;
            self.add(
                "PORT203",
                line,
                "generator function (`yield`): a GPU thread cannot suspend".into(),
            );
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

    fn binop(&mut self, b: &ast::ExprBinOp, l: Ty, r: Ty, line: u32) -> Ty {
        if b.op == ast::Operator::Mod && l == Ty::Str {
            self.add(
                "PORT107",
                line,
                format!(
                    "`{}`: %-formatting is not supported in nopython mode",
                    self.m.text_of(b.range)
                ),
            );
            return Ty::Str;
        }
        if l == Ty::Str || r == Ty::Str {
            self.note_string(line, "string operation");
            return Ty::Str;
        }
        if b.op == ast::Operator::MatMult {
            let rank = |t: &Ty| match t {
                Ty::Array { ndim, .. } => ndim.unwrap_or(0),
                _ => 0,
            };
            if rank(&l) > 2 || rank(&r) > 2 {
                self.add(
                    "PORT121",
                    line,
                    format!(
                        "`{}` on an array of more than 2 dimensions: nopython mode multiplies vectors and matrices only",
                        self.m.text_of(b.range)
                    ),
                );
            }
            // `@` itself is port's (a reduction over a broadcast product);
            // whether a given use plans is the planner's answer.
            return Ty::array(None);
        }
        if l == Ty::List || r == Ty::List {
            return Ty::List;
        }
        if l.is_array() || r.is_array() {
            self.allocation_note(line, "array expression allocates its result");
            let ndim = match (&l, &r) {
                (Ty::Array { ndim: a, .. }, Ty::Array { ndim: b, .. }) => (*a).max(*b),
                (Ty::Array { ndim, .. }, _) | (_, Ty::Array { ndim, .. }) => *ndim,
                _ => None,
            };
            return Ty::array(ndim);
        }
        let t = join_arith(&l, &r);
        if b.op == ast::Operator::Div && matches!(t, Ty::Int | Ty::Bool) {
            Ty::Float
        } else {
            t
        }
    }

    fn allocation_note(&mut self, line: u32, what: &str) {
        if !self.noted_alloc {
            self.noted_alloc = true;
            self.add(
                "PORT403",
                line,
                format!("{what}: the host wrapper allocates it before the launch"),
            );
        }
    }

    fn name(&mut self, name: &str, line: u32) -> Ty {
        if let Some(t) = self.env.get(name) {
            let t = t.clone();
            if t.is_objectish() {
                self.object_use_lines.push(line);
            }
            return t;
        }
        // A name bound in an enclosing function: a closure variable.
        let mut parent = self.f.parent;
        while let Some(p) = parent {
            if binds_name(&self.syms.functions[p], name) {
                return Ty::Unknown;
            }
            parent = self.syms.functions[p].parent;
        }
        match self.syms.lookup(self.f.module, name) {
            Some(b) => self.binding_ty(name, b, line),
            None => {
                if support::NOPYTHON_BUILTINS.contains(&name)
                    || support::PYTHON_BUILTINS.contains(&name)
                {
                    Ty::Builtin(name.to_string())
                } else if name.ends_with("Error")
                    || name.ends_with("Exception")
                    || name.ends_with("Warning")
                    || name == "StopIteration"
                {
                    Ty::ExceptionClass
                } else if matches!(name, "__name__" | "__file__" | "__doc__") {
                    Ty::Str
                } else if let Some(m) = self.syms.modules[self.f.module]
                    .star_imports
                    .iter()
                    .find(|m| support::module_is_nopython(m.split('.').next().unwrap_or("")))
                {
                    Ty::External(format!("{m}.{name}"))
                } else {
                    Ty::Unknown
                }
            }
        }
    }

    fn binding_ty(&mut self, name: &str, b: Binding, line: u32) -> Ty {
        match b {
            Binding::ExternalModule(m) => Ty::Module(m),
            Binding::ExternalMember(full) => {
                if full == "numpy.linalg" || full == "numpy.random" || full == "numpy.fft" {
                    Ty::Module(full)
                } else {
                    Ty::External(full)
                }
            }
            Binding::LocalModule(i) => Ty::LocalModule(i),
            Binding::LocalMember(..) => Ty::Unknown,
            Binding::Function(i) => Ty::AppFn(i),
            Binding::Class(k) => Ty::Class(k),
            Binding::Constant(k) => match k {
                ConstKind::Int => Ty::Int,
                ConstKind::Float => Ty::Float,
                ConstKind::Bool => Ty::Bool,
                ConstKind::Complex => Ty::Complex,
                ConstKind::Str => Ty::Str,
                ConstKind::Tuple => Ty::Tuple(vec![]),
                ConstKind::None => Ty::NoneT,
            },
            Binding::ArrayConstant => Ty::array(None),
            Binding::Mutable(kind) => {
                self.add(
                    "PORT110",
                    line,
                    format!(
                        "reads global `{name}`, a module-level {kind}: nopython mode can only freeze numbers, tuples and arrays"
                    ),
                );
                match kind {
                    "list" => Ty::List,
                    "dict" => Ty::Dict,
                    "set" => Ty::Set,
                    _ => Ty::Opaque(name.to_string()),
                }
            }
            Binding::Unknown => Ty::Unknown,
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

    /// `module.attr`, for a module by dotted name.
    fn module_attr(&mut self, m: &str, attr: &str, line: u32, called: bool) -> Ty {
        let root = m.split('.').next().unwrap_or(m);
        let full = format!("{m}.{attr}");
        if root == "numpy" {
            let np_name = full.strip_prefix("numpy.").unwrap_or(&full).to_string();
            if matches!(
                np_name.as_str(),
                "linalg" | "random" | "fft" | "ma" | "polynomial" | "testing"
            ) {
                return Ty::Module(full);
            }
            if !support::numpy_nopython(&np_name) {
                self.add(
                    "PORT102",
                    line,
                    format!("Use of unsupported NumPy function 'numpy.{np_name}' or unsupported use of the function"),
                );
                return Ty::Opaque(format!("numpy.{np_name}"));
            }
            if !called {
                if matches!(np_name.as_str(), "pi" | "e" | "inf" | "nan" | "euler_gamma") {
                    return Ty::Float;
                }
                if np_name == "float64" || np_name == "double" {
                    self.uses_float64.get_or_insert(line);
                }
            }
            return Ty::External(full);
        }
        if root == "math" || root == "cmath" {
            if !support::math_nopython(attr) {
                self.add(
                    "PORT101",
                    line,
                    format!("Unknown attribute '{attr}' of type Module({m}) in nopython mode"),
                );
                return Ty::Opaque(full);
            }
            if !called {
                return Ty::Float;
            }
            return Ty::External(full);
        }
        if root == "random" {
            if !support::random_nopython(attr) {
                self.add(
                    "PORT101",
                    line,
                    format!("Unknown attribute '{attr}' of type Module(random)"),
                );
                return Ty::Opaque(full);
            }
            return Ty::External(full);
        }
        if support::module_is_nopython(root) {
            return Ty::External(full);
        }
        self.add(
            "PORT101",
            line,
            format!("Unknown attribute '{attr}' of type Module({m})"),
        );
        Ty::Opaque(full.to_string())
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

    fn record_external(&mut self, name: &str, line: u32) {
        if !self.external_calls.iter().any(|(n, _)| n == name) {
            self.external_calls.push((name.to_string(), line));
        }
    }

    fn builtin_call(&mut self, name: &str, args: &[Ty], c: &ast::ExprCall, line: u32) -> Ty {
        if support::PYTHON_BUILTINS.contains(&name) {
            self.add(
                "PORT103",
                line,
                format!("Untyped global name '{name}': builtin not supported in nopython mode"),
            );
            return Ty::Opaque(name.to_string());
        }
        match name {
            "list" | "dict" | "set" => {
                self.add("PORT201", line, format!("`{name}()` builds a container"));
            }
            "str" | "repr" | "chr" | "hex" | "bin" | "oct" | "format" => {
                self.note_string(line, &format!("`{name}()` makes a string"));
            }
            "sum" | "any" | "all" if args.first().is_some_and(|t| t.is_array()) => {
                // Python's sum over an array is a reduction port rewrites.
            }
            _ if support::CUDA_BLOCKING_BUILTINS.contains(&name) => {
                self.add(
                    "PORT212",
                    line,
                    format!("`{name}()` is not supported in CUDA kernels"),
                );
            }
            _ => {}
        }
        if name == "print" && c.args.iter().any(|a| matches!(a, Expr::JoinedStr(_))) {
            // Already flagged by the f-string itself.
        }
        match name {
            "len" | "int" | "hash" | "ord" => Ty::Int,
            "float" => Ty::Float,
            "bool" | "isinstance" | "any" | "all" => Ty::Bool,
            "complex" => Ty::Complex,
            "range" => Ty::Range,
            "str" | "repr" | "chr" | "hex" | "bin" | "oct" | "format" => Ty::Str,
            "abs" | "round" | "pow" => args.first().cloned().unwrap_or(Ty::Unknown),
            "min" | "max" => args
                .iter()
                .fold(None, |acc: Option<Ty>, t| {
                    Some(match acc {
                        None => t.clone(),
                        Some(a) => join_arith(&a, t),
                    })
                })
                .map(|t| if t.is_array() { Ty::Float } else { t })
                .unwrap_or(Ty::Unknown),
            "sum" => Ty::Float,
            "tuple" => Ty::Tuple(vec![]),
            "list" => Ty::List,
            "dict" => Ty::Dict,
            "set" => Ty::Set,
            "zip" | "enumerate" => Ty::Unknown,
            "print" => Ty::NoneT,
            _ => Ty::Unknown,
        }
    }

    fn external_call(
        &mut self,
        full: &str,
        args: &[Ty],
        kw: &HashMap<String, Ty>,
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        self.record_external(full, line);
        let root = full.split('.').next().unwrap_or("");
        if root == "numpy" {
            let name = full.strip_prefix("numpy.").unwrap_or(full);
            if !support::numpy_nopython(name) {
                self.add(
                    "PORT102",
                    line,
                    format!("Use of unsupported NumPy function 'numpy.{name}' or unsupported use of the function"),
                );
                return Ty::Opaque(full.to_string());
            }
            self.argument_gap(name, false, args, c, line);
            if let Some(why) = support::numpy_cuda_blocker(name) {
                self.add("PORT206", line, format!("np.{name}: {why}"));
            }
            return self.numpy_result(name, args, kw, c, line);
        }
        if root == "math" || root == "cmath" {
            let name = full.rsplit('.').next().unwrap_or("");
            return match name {
                "floor" | "ceil" | "trunc" | "gcd" => Ty::Int,
                "isnan" | "isinf" | "isfinite" | "isclose" => Ty::Bool,
                _ if root == "cmath" => Ty::Complex,
                _ => Ty::Float,
            };
        }
        if root == "random" {
            self.add(
                "PORT213",
                line,
                format!("`{full}()`: kernels need per-thread random state (xoroshiro128p)"),
            );
            return if full.ends_with("randint") || full.ends_with("randrange") {
                Ty::Int
            } else {
                Ty::Float
            };
        }
        if root == "operator" {
            return args.first().cloned().unwrap_or(Ty::Unknown);
        }
        if root == "numba" {
            return if full.ends_with("prange") {
                Ty::Range
            } else {
                Ty::Unknown
            };
        }
        // `from hashlib import md5`, `from scipy.special import erf`.
        let (module, attr) = full.rsplit_once('.').unwrap_or((full, ""));
        self.add(
            "PORT115",
            line,
            format!("Untyped global name '{attr}' (from {module}): Numba cannot compile {full}"),
        );
        Ty::Opaque(full.to_string())
    }

    /// Numba's support at the level of this call's arguments (keywords,
    /// `axis`, list shapes, ranks): a PORT116–PORT121 finding when it refuses.
    fn argument_gap(
        &mut self,
        name: &str,
        method: bool,
        args: &[Ty],
        c: &ast::ExprCall,
        line: u32,
    ) {
        let keywords: Vec<&str> = c
            .keywords
            .iter()
            .filter_map(|k| k.arg.as_ref().map(|a| a.as_str()))
            .collect();
        let list_at = if name == "transpose" { 1 } else { 0 };
        let list_arg = c
            .args
            .get(list_at)
            .is_some_and(|e| matches!(e, Expr::List(_)))
            || args.get(list_at) == Some(&Ty::List);
        let ranks: Vec<Option<u8>> = args
            .iter()
            .map(|t| match t {
                Ty::Array { ndim, .. } => *ndim,
                _ => None,
            })
            .collect();
        if let Some((code, msg)) =
            support::numpy_argument_gap(name, method, &keywords, c.args.len(), list_arg, &ranks)
        {
            self.add(code, line, msg);
        }
    }

    fn numpy_result(
        &mut self,
        name: &str,
        args: &[Ty],
        kw: &HashMap<String, Ty>,
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        let dtype = kw.get("dtype").and_then(|t| match t {
            Ty::Array { dtype, .. } => dtype.clone(),
            _ => None,
        });
        if support::NUMPY_ALLOCATIONS.contains(&name)
            || matches!(name, "arange" | "linspace" | "eye" | "identity")
        {
            self.allocation_note(line, &format!("np.{name} allocates"));
            if let Some(size) = c.args.first() {
                if !name.ends_with("_like") && self.reads_data(size) {
                    self.add(
                        "PORT205",
                        line,
                        format!(
                            "np.{name}({}): the size is computed from array contents",
                            self.m.text_of(size.range())
                        ),
                    );
                }
            }
            let like = args.first().cloned();
            let ndim = match (name.ends_with("_like"), &like) {
                (true, Some(Ty::Array { ndim, .. })) => *ndim,
                (false, Some(Ty::Tuple(t))) if !t.is_empty() => Some(t.len() as u8),
                (false, Some(Ty::Int)) => Some(1),
                _ => None,
            };
            let dtype = dtype.or_else(|| match (&like, name.ends_with("_like")) {
                (Some(Ty::Array { dtype, .. }), true) => dtype.clone(),
                _ => Some("float64".into()),
            });
            return Ty::Array { ndim, dtype };
        }
        if matches!(
            name,
            "float32" | "float64" | "float16" | "double" | "single"
        ) {
            if matches!(name, "float64" | "double") {
                self.uses_float64.get_or_insert(line);
            }
            return if args.first().is_some_and(|t| t.is_array()) {
                Ty::array(None)
            } else {
                Ty::Float
            };
        }
        if name.starts_with("int") || name.starts_with("uint") {
            return Ty::Int;
        }
        if matches!(name, "array" | "asarray" | "ascontiguousarray" | "copy") {
            return args
                .first()
                .cloned()
                .filter(Ty::is_array)
                .unwrap_or(Ty::array(None));
        }
        if support::NUMPY_KERNEL_REDUCTIONS.contains(&name)
            || matches!(
                name,
                "argmax" | "argmin" | "std" | "var" | "median" | "count_nonzero" | "all" | "any"
            )
        {
            let axis = kw.contains_key("axis") || args.len() > 1;
            if args.first().is_some_and(|t| t.is_array()) && !axis {
                self.add(
                    "PORT402",
                    line,
                    format!("np.{name} over an array becomes a reduction kernel"),
                );
            }
            return if axis { Ty::array(None) } else { Ty::Float };
        }
        if support::NUMPY_KERNEL_ELEMENTWISE.contains(&name) {
            if args.iter().any(Ty::is_array) {
                self.allocation_note(line, &format!("np.{name} over arrays allocates its result"));
                let ndim = args.iter().find_map(|t| match t {
                    Ty::Array { ndim, .. } => Some(*ndim),
                    _ => None,
                });
                return Ty::array(ndim.flatten());
            }
            return match name {
                "isnan" | "isinf" | "isfinite" => Ty::Bool,
                _ => Ty::Float,
            };
        }
        Ty::array(None)
    }

    fn method_call(
        &mut self,
        base: &Ty,
        a: &ast::ExprAttribute,
        args: &[Ty],
        _kw: &HashMap<String, Ty>,
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        let m = a.attr.as_str();
        let mut base = base.clone();
        if base == Ty::Unknown {
            if support::NDARRAY_METHODS.contains(&m) {
                base = self.assume_array(&a.value, Ty::Unknown, "calls", c.range);
            } else if support::STR_METHODS.contains(&m) && m != "format" {
                if let Expr::Name(n) = a.value.as_ref() {
                    if self.assumed.insert(n.id.to_string()) {
                        self.add(
                            "PORT401",
                            line,
                            format!(
                                "assumes `{}` is a string: calls {}",
                                n.id,
                                short(self.m.text_of(c.range))
                            ),
                        );
                    }
                    self.env.insert(n.id.to_string(), Ty::Str);
                }
                base = Ty::Str;
            } else if !is_container_method(m) {
                self.add(
                    "PORT114",
                    line,
                    format!(
                        "calls `{}`: no array, string or container has a method `{m}` that nopython mode supports",
                        short(self.m.text_of(c.range))
                    ),
                );
                return Ty::Opaque(m.to_string());
            }
        }
        match &base {
            Ty::Array { ndim, dtype } => {
                if !support::NDARRAY_METHODS.contains(&m) {
                    self.add(
                        "PORT114",
                        line,
                        format!("Unknown attribute '{m}' of type array"),
                    );
                    return Ty::Opaque(m.to_string());
                }
                let mut with_self = vec![base.clone()];
                with_self.extend(args.iter().cloned());
                self.argument_gap(m, true, &with_self, c, line);
                if !support::NDARRAY_KERNEL_METHODS.contains(&m) {
                    self.add(
                        "PORT206",
                        line,
                        format!("`.{m}()` on an array has no kernel form in port's rewrites"),
                    );
                }
                match m {
                    "sum" | "prod" | "mean" | "min" | "max" | "std" | "var" | "item" => {
                        if args.is_empty() && c.keywords.is_empty() {
                            if ndim.is_none_or(|n| n >= 1) {
                                self.add(
                                    "PORT402",
                                    line,
                                    format!("`.{m}()` over an array becomes a loop or a reduction kernel"),
                                );
                            }
                            scalar_of(dtype)
                        } else {
                            Ty::array(None)
                        }
                    }
                    "argmax" | "argmin" => Ty::Int,
                    "all" | "any" => Ty::Bool,
                    "astype" => {
                        let d = c.args.first().and_then(dtype_name);
                        if d.as_deref() == Some("float64") {
                            self.uses_float64.get_or_insert(line);
                        }
                        self.allocation_note(line, "`.astype()` allocates");
                        Ty::Array {
                            ndim: *ndim,
                            dtype: d,
                        }
                    }
                    "copy" | "reshape" | "ravel" | "flatten" | "transpose" | "view" | "squeeze" => {
                        Ty::Array {
                            ndim: if m == "copy" || m == "transpose" {
                                *ndim
                            } else {
                                None
                            },
                            dtype: dtype.clone(),
                        }
                    }
                    "fill" | "sort" => Ty::NoneT,
                    _ => Ty::Unknown,
                }
            }
            Ty::Str => {
                if m == "format" {
                    self.add(
                        "PORT107",
                        line,
                        format!(
                            "`{}`: str.format is not supported in nopython mode",
                            self.m.text_of(c.range)
                        ),
                    );
                } else if support::STR_METHODS.contains(&m) {
                    self.note_string(line, &format!("calls str.{m}()"));
                } else {
                    self.add(
                        "PORT114",
                        line,
                        format!("Unknown attribute '{m}' of type unicode_type"),
                    );
                }
                match m {
                    "split" | "rsplit" | "splitlines" => Ty::List,
                    "find" | "rfind" | "index" | "rindex" | "count" => Ty::Int,
                    m if m.starts_with("is")
                        || m.starts_with("starts")
                        || m.starts_with("ends") =>
                    {
                        Ty::Bool
                    }
                    _ => Ty::Str,
                }
            }
            Ty::List | Ty::Dict | Ty::Set => match m {
                "keys" | "values" | "items" => Ty::List,
                _ => Ty::Unknown,
            },
            Ty::LocalModule(i) => match self.syms.lookup(*i, m) {
                Some(Binding::Function(f)) => {
                    if !self.app_calls.iter().any(|(j, _)| *j == f) {
                        self.app_calls.push((f, line));
                    }
                    Ty::Unknown
                }
                Some(Binding::Class(k)) => {
                    self.add(
                        "PORT104",
                        line,
                        format!("instantiates class {}", k.rsplit('.').next().unwrap_or(&k)),
                    );
                    Ty::Instance(k)
                }
                _ => Ty::Unknown,
            },
            Ty::Instance(k) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT104",
                    line,
                    format!(
                        "calls method `{}` of a {} instance",
                        self.m.text_of(c.func.range()),
                        k.rsplit('.').next().unwrap_or(k)
                    ),
                );
                Ty::Unknown
            }
            Ty::Opaque(what) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT114",
                    line,
                    format!("calls .{m}() on a value nopython mode cannot type ({what})"),
                );
                Ty::Opaque(format!("{what}.{m}()"))
            }
            Ty::Int | Ty::Float | Ty::Complex | Ty::Bool => match m {
                "conjugate" | "real" | "imag" => base.clone(),
                "is_integer" | "bit_length" | "as_integer_ratio" | "hex" => {
                    self.add(
                        "PORT114",
                        line,
                        format!("Unknown attribute '{m}' of number"),
                    );
                    Ty::Unknown
                }
                _ => Ty::Unknown,
            },
            _ => Ty::Unknown,
        }
    }
}

/// Methods of list, dict and set that nopython mode supports.
fn is_container_method(m: &str) -> bool {
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
fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        let cut: String = one_line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

fn scalar_or_row(ndim: Option<u8>) -> Ty {
    match ndim {
        Some(0) => Ty::Float,
        Some(n) => Ty::array(Some(n)),
        None => Ty::Unknown,
    }
}

fn scalar_of(dtype: &Option<String>) -> Ty {
    match dtype.as_deref() {
        Some(d) if d.starts_with("int") || d.starts_with("uint") => Ty::Int,
        Some("bool") => Ty::Bool,
        Some(d) if d.starts_with("complex") => Ty::Complex,
        _ => Ty::Float,
    }
}

fn const_ty(c: &ast::Constant) -> Ty {
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

fn join_arith(a: &Ty, b: &Ty) -> Ty {
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

fn ty_of_captured(cap: &ArgType) -> Ty {
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
fn dtype_name(e: &Expr) -> Option<String> {
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

fn binds_name(f: &FunctionSymbol, name: &str) -> bool {
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

fn outermost_loops<'s>(body: &'s [Stmt], out: &mut Vec<&'s Stmt>) {
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

fn contains_return_or_yield(s: &Stmt) -> bool {
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
