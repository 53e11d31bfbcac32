//! Symbol tables: what every module-level name means (an import, an app
//! function or class, a compile-time constant, a mutable global), and the list
//! of every function of the program — module functions, methods, nested
//! functions and named lambdas — with Python's qualnames.

use std::collections::HashMap;

use rustpython_parser::ast::{self, Expr, Stmt};
use rustpython_parser::text_size::TextRange;

use crate::loader::{module_index, resolve_relative, Module};

/// The body of a function: a `def` or a lambda bound to a name.
#[derive(Clone, Copy)]
pub enum FnNode<'a> {
    Def(&'a ast::StmtFunctionDef),
    AsyncDef(&'a ast::StmtAsyncFunctionDef),
    Lambda(&'a ast::ExprLambda),
}

impl<'a> FnNode<'a> {
    pub fn args(&self) -> &'a ast::Arguments {
        match self {
            FnNode::Def(d) => &d.args,
            FnNode::AsyncDef(d) => &d.args,
            FnNode::Lambda(l) => &l.args,
        }
    }
    pub fn range(&self) -> TextRange {
        match self {
            FnNode::Def(d) => d.range,
            FnNode::AsyncDef(d) => d.range,
            FnNode::Lambda(l) => l.range,
        }
    }
    pub fn decorators(&self) -> &'a [Expr] {
        match self {
            FnNode::Def(d) => &d.decorator_list,
            FnNode::AsyncDef(d) => &d.decorator_list,
            FnNode::Lambda(_) => &[],
        }
    }
}

pub struct FunctionSymbol<'a> {
    /// `module.qualname`: unique across the program.
    pub key: String,
    pub name: String,
    pub qualname: String,
    pub module: usize,
    pub node: FnNode<'a>,
    /// The class a method belongs to.
    pub class: Option<String>,
    /// The enclosing function of a nested function.
    pub parent: Option<usize>,
    pub line: u32,
    pub end_line: u32,
}

/// What a module-level name is bound to.
#[derive(Debug, Clone, PartialEq)]
pub enum Binding {
    /// An external module by dotted name (`numpy`, `numpy.linalg`, `hashlib`).
    ExternalModule(String),
    /// A member of an external module (`from math import sqrt` → `math.sqrt`).
    ExternalMember(String),
    /// A module of the app.
    LocalModule(usize),
    /// A name imported from a module of the app, resolved lazily.
    LocalMember(usize, String),
    Function(usize),
    Class(String),
    /// A number, string, tuple or NumPy scalar fixed at import: Numba freezes
    /// it as a compile-time constant.
    Constant(ConstKind),
    /// A NumPy array global: Numba freezes it too.
    ArrayConstant,
    /// A list, dict, set or object: nopython mode cannot type it.
    Mutable(&'static str),
    /// Bound to something port cannot see through.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConstKind {
    Int,
    Float,
    Bool,
    Complex,
    Str,
    Tuple,
    None,
}

pub struct ModuleSymbols {
    pub bindings: HashMap<String, Binding>,
    /// Modules star-imported (`from math import *`).
    pub star_imports: Vec<String>,
}

pub struct SymbolTable<'a> {
    pub modules: Vec<ModuleSymbols>,
    pub functions: Vec<FunctionSymbol<'a>>,
    pub by_key: HashMap<String, usize>,
}

impl<'a> SymbolTable<'a> {
    pub fn build(modules: &'a [Module]) -> Self {
        let index = module_index(modules);
        let mut functions = Vec::new();
        let mut tables = Vec::new();
        for (mi, m) in modules.iter().enumerate() {
            let mut t = ModuleSymbols {
                bindings: HashMap::new(),
                star_imports: Vec::new(),
            };
            collect_module(m, mi, &m.suite, &index, &mut t, &mut functions);
            tables.push(t);
        }
        let by_key = functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.key.clone(), i))
            .collect();
        SymbolTable {
            modules: tables,
            functions,
            by_key,
        }
    }

    /// What `name` means at module level in module `mi`, following imports
    /// of app modules.
    pub fn lookup(&self, mi: usize, name: &str) -> Option<Binding> {
        let mut mi = mi;
        let mut name = name.to_string();
        for _ in 0..16 {
            match self.modules.get(mi)?.bindings.get(&name)? {
                Binding::LocalMember(target, member) => {
                    mi = *target;
                    name = member.clone();
                }
                other => return Some(other.clone()),
            }
        }
        None
    }
}

fn collect_module<'a>(
    m: &'a Module,
    mi: usize,
    suite: &'a [Stmt],
    index: &HashMap<String, usize>,
    t: &mut ModuleSymbols,
    functions: &mut Vec<FunctionSymbol<'a>>,
) {
    for stmt in suite {
        match stmt {
            Stmt::Import(i) => {
                for a in &i.names {
                    let full = a.name.as_str();
                    match &a.asname {
                        Some(alias) => {
                            t.bindings
                                .insert(alias.to_string(), module_binding(full, index));
                        }
                        None => {
                            let head = full.split('.').next().unwrap_or(full);
                            t.bindings
                                .insert(head.to_string(), module_binding(head, index));
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let level = i.level.map(|l| l.to_u32()).unwrap_or(0);
                let Some(base) = resolve_relative(
                    &m.name,
                    m.is_package,
                    level,
                    i.module.as_ref().map(|s| s.as_str()),
                ) else {
                    continue;
                };
                for a in &i.names {
                    let member = a.name.as_str();
                    if member == "*" {
                        t.star_imports.push(base.clone());
                        continue;
                    }
                    let bound = a.asname.as_ref().map(|s| s.as_str()).unwrap_or(member);
                    let full = format!("{base}.{member}");
                    let b = if let Some(&sub) = index.get(&full) {
                        Binding::LocalModule(sub)
                    } else if let Some(&src) = index.get(&base) {
                        Binding::LocalMember(src, member.to_string())
                    } else {
                        Binding::ExternalMember(full)
                    };
                    t.bindings.insert(bound.to_string(), b);
                }
            }
            Stmt::FunctionDef(d) => {
                let idx = push_function(
                    m,
                    mi,
                    FnNode::Def(d),
                    d.name.as_str(),
                    d.name.to_string(),
                    None,
                    None,
                    functions,
                );
                t.bindings
                    .insert(d.name.to_string(), Binding::Function(idx));
                collect_nested(m, mi, &d.body, idx, functions);
            }
            Stmt::AsyncFunctionDef(d) => {
                let idx = push_function(
                    m,
                    mi,
                    FnNode::AsyncDef(d),
                    d.name.as_str(),
                    d.name.to_string(),
                    None,
                    None,
                    functions,
                );
                t.bindings
                    .insert(d.name.to_string(), Binding::Function(idx));
            }
            Stmt::ClassDef(c) => {
                let key = format!("{}.{}", m.name, c.name);
                t.bindings.insert(c.name.to_string(), Binding::Class(key));
                collect_class(m, mi, c, c.name.to_string(), functions);
            }
            Stmt::Assign(a) => {
                for target in &a.targets {
                    bind_assignment(m, mi, target, &a.value, t, functions);
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    bind_assignment(m, mi, &a.target, v, t, functions);
                }
            }
            Stmt::AugAssign(a) => {
                if let Expr::Name(n) = a.target.as_ref() {
                    // Rebinding at import makes it a variable, not a constant.
                    if let Some(Binding::Constant(_)) = t.bindings.get(n.id.as_str()) {
                        t.bindings.insert(n.id.to_string(), Binding::Unknown);
                    }
                }
            }
            // Definitions under `if`/`try` at module level (import fallbacks,
            // `if __name__ == "__main__":`) are still module-level names.
            Stmt::If(s) => {
                collect_module(m, mi, &s.body, index, t, functions);
                collect_module(m, mi, &s.orelse, index, t, functions);
            }
            Stmt::Try(s) => {
                collect_module(m, mi, &s.body, index, t, functions);
                for h in &s.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    collect_module(m, mi, &h.body, index, t, functions);
                }
                collect_module(m, mi, &s.orelse, index, t, functions);
                collect_module(m, mi, &s.finalbody, index, t, functions);
            }
            _ => {}
        }
    }
}

fn module_binding(name: &str, index: &HashMap<String, usize>) -> Binding {
    match index.get(name) {
        Some(&i) => Binding::LocalModule(i),
        None => Binding::ExternalModule(name.to_string()),
    }
}

fn bind_assignment<'a>(
    m: &'a Module,
    mi: usize,
    target: &'a Expr,
    value: &'a Expr,
    t: &mut ModuleSymbols,
    functions: &mut Vec<FunctionSymbol<'a>>,
) {
    match target {
        Expr::Name(n) => {
            let name = n.id.to_string();
            let b = match value {
                Expr::Lambda(l) => {
                    let idx = push_function(
                        m,
                        mi,
                        FnNode::Lambda(l),
                        &name,
                        name.clone(),
                        None,
                        None,
                        functions,
                    );
                    Binding::Function(idx)
                }
                _ => classify_global(value, t),
            };
            // A name bound twice at import is a variable, not a constant.
            let b = match (t.bindings.get(&name), &b) {
                (Some(Binding::Constant(_)), Binding::Constant(_)) => Binding::Unknown,
                _ => b,
            };
            t.bindings.insert(name, b);
        }
        Expr::Tuple(tu) => {
            for e in &tu.elts {
                if let Expr::Name(n) = e {
                    t.bindings.insert(n.id.to_string(), Binding::Unknown);
                }
            }
        }
        _ => {}
    }
}

/// What a module-level value is, for Numba's global-freezing rules.
fn classify_global(value: &Expr, t: &ModuleSymbols) -> Binding {
    match value {
        Expr::Constant(c) => Binding::Constant(const_kind(&c.value)),
        Expr::UnaryOp(u) => match classify_global(&u.operand, t) {
            b @ Binding::Constant(_) => b,
            _ => Binding::Unknown,
        },
        Expr::BinOp(b) => match (classify_global(&b.left, t), classify_global(&b.right, t)) {
            (Binding::Constant(ConstKind::Int), Binding::Constant(ConstKind::Int)) => {
                Binding::Constant(ConstKind::Int)
            }
            (Binding::Constant(_), Binding::Constant(_)) => Binding::Constant(ConstKind::Float),
            _ => Binding::Unknown,
        },
        Expr::Name(n) => t
            .bindings
            .get(n.id.as_str())
            .cloned()
            .unwrap_or(Binding::Unknown),
        Expr::Tuple(_) => Binding::Constant(ConstKind::Tuple),
        Expr::List(_) | Expr::ListComp(_) => Binding::Mutable("list"),
        Expr::Dict(_) | Expr::DictComp(_) => Binding::Mutable("dict"),
        Expr::Set(_) | Expr::SetComp(_) => Binding::Mutable("set"),
        Expr::Call(c) => {
            let callee = dotted(&c.func).unwrap_or_default();
            let (head, tail) = callee.split_once('.').unwrap_or(("", callee.as_str()));
            let head_is_numpy = matches!(
                t.bindings.get(head),
                Some(Binding::ExternalModule(m)) if m == "numpy"
            );
            if head_is_numpy {
                if crate::support::NUMPY_KERNEL_ELEMENTWISE.contains(&tail)
                    && matches!(tail, "float32" | "float64" | "int32" | "int64")
                    || matches!(tail, "sqrt" | "exp" | "log" | "pi")
                {
                    return Binding::Constant(ConstKind::Float);
                }
                return Binding::ArrayConstant;
            }
            match callee.as_str() {
                "list" => Binding::Mutable("list"),
                "dict" | "defaultdict" | "collections.defaultdict" | "OrderedDict" => {
                    Binding::Mutable("dict")
                }
                "set" => Binding::Mutable("set"),
                "float" => Binding::Constant(ConstKind::Float),
                "int" => Binding::Constant(ConstKind::Int),
                "tuple" => Binding::Constant(ConstKind::Tuple),
                _ => match t.bindings.get(callee.as_str()) {
                    Some(Binding::Class(_)) => Binding::Mutable("object"),
                    Some(Binding::ExternalModule(_)) => Binding::Unknown,
                    _ => {
                        // `math.sqrt(2)`, `math.pi * 2`, …
                        if head == "math" || head == "cmath" {
                            Binding::Constant(ConstKind::Float)
                        } else {
                            Binding::Unknown
                        }
                    }
                },
            }
        }
        Expr::Attribute(_) => {
            let d = dotted(value).unwrap_or_default();
            if d.starts_with("math.") || d.starts_with("np.") || d.starts_with("numpy.") {
                Binding::Constant(ConstKind::Float)
            } else {
                Binding::Unknown
            }
        }
        _ => Binding::Unknown,
    }
}

pub fn const_kind(c: &ast::Constant) -> ConstKind {
    match c {
        ast::Constant::Int(_) => ConstKind::Int,
        ast::Constant::Float(_) => ConstKind::Float,
        ast::Constant::Bool(_) => ConstKind::Bool,
        ast::Constant::Complex { .. } => ConstKind::Complex,
        ast::Constant::Str(_) | ast::Constant::Bytes(_) => ConstKind::Str,
        ast::Constant::Tuple(_) => ConstKind::Tuple,
        ast::Constant::None | ast::Constant::Ellipsis => ConstKind::None,
    }
}

/// `a.b.c` as a string, for a chain of names and attributes.
pub fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => dotted(&a.value).map(|b| format!("{b}.{}", a.attr)),
        _ => None,
    }
}

fn collect_class<'a>(
    m: &'a Module,
    mi: usize,
    c: &'a ast::StmtClassDef,
    prefix: String,
    functions: &mut Vec<FunctionSymbol<'a>>,
) {
    for stmt in &c.body {
        match stmt {
            Stmt::FunctionDef(d) => {
                let q = format!("{prefix}.{}", d.name);
                let idx = push_function(
                    m,
                    mi,
                    FnNode::Def(d),
                    d.name.as_str(),
                    q,
                    Some(prefix.clone()),
                    None,
                    functions,
                );
                collect_nested(m, mi, &d.body, idx, functions);
            }
            Stmt::AsyncFunctionDef(d) => {
                let q = format!("{prefix}.{}", d.name);
                push_function(
                    m,
                    mi,
                    FnNode::AsyncDef(d),
                    d.name.as_str(),
                    q,
                    Some(prefix.clone()),
                    None,
                    functions,
                );
            }
            Stmt::ClassDef(inner) => {
                collect_class(m, mi, inner, format!("{prefix}.{}", inner.name), functions)
            }
            _ => {}
        }
    }
}

/// Functions defined inside a function body (at any statement depth).
fn collect_nested<'a>(
    m: &'a Module,
    mi: usize,
    body: &'a [Stmt],
    parent: usize,
    functions: &mut Vec<FunctionSymbol<'a>>,
) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(d) => {
                let q = format!("{}.<locals>.{}", functions[parent].qualname, d.name);
                let idx = push_function(
                    m,
                    mi,
                    FnNode::Def(d),
                    d.name.as_str(),
                    q,
                    None,
                    Some(parent),
                    functions,
                );
                collect_nested(m, mi, &d.body, idx, functions);
            }
            Stmt::If(s) => {
                collect_nested(m, mi, &s.body, parent, functions);
                collect_nested(m, mi, &s.orelse, parent, functions);
            }
            Stmt::For(s) => collect_nested(m, mi, &s.body, parent, functions),
            Stmt::While(s) => collect_nested(m, mi, &s.body, parent, functions),
            Stmt::With(s) => collect_nested(m, mi, &s.body, parent, functions),
            Stmt::Try(s) => {
                collect_nested(m, mi, &s.body, parent, functions);
                collect_nested(m, mi, &s.finalbody, parent, functions);
            }
            _ => {}
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn push_function<'a>(
    m: &'a Module,
    mi: usize,
    node: FnNode<'a>,
    name: &str,
    qualname: String,
    class: Option<String>,
    parent: Option<usize>,
    functions: &mut Vec<FunctionSymbol<'a>>,
) -> usize {
    let range = node.range();
    // A decorated def starts at its first decorator in Python's eyes, but
    // co_firstlineno and tracebacks point at decorators; we report the `def`.
    let start = match node {
        FnNode::Def(d) => name_offset(m, d.range, "def"),
        FnNode::AsyncDef(d) => name_offset(m, d.range, "async"),
        FnNode::Lambda(l) => l.range.start(),
    };
    let line = m.line_of(start);
    let end = range.end();
    let end_line = m.line_of(if end > range.start() {
        end - rustpython_parser::text_size::TextSize::from(1)
    } else {
        end
    });
    functions.push(FunctionSymbol {
        key: format!("{}.{}", m.name, qualname),
        name: name.to_string(),
        qualname,
        module: mi,
        node,
        class,
        parent,
        line,
        end_line: end_line.max(line),
    });
    functions.len() - 1
}

/// Offset of the `def` keyword inside a (possibly decorated) definition.
fn name_offset(m: &Module, range: TextRange, kw: &str) -> rustpython_parser::text_size::TextSize {
    let text = m.text_of(range);
    // Decorators come first; the keyword starts a line after them.
    let mut pos = 0usize;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with(kw) {
            let indent = line.len() - line.trim_start().len();
            return range.start()
                + rustpython_parser::text_size::TextSize::from((pos + indent) as u32);
        }
        pos += line.len();
    }
    range.start()
}
