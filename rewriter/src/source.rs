//! The user's file: parsing, finding the function by (qualified) name,
//! import aliases, module-level constants, and line numbers.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
use rustpython_parser::source_code::LineIndex;
use rustpython_parser::text_size::TextSize;
use rustpython_parser::Parse;

use crate::error::RewriteError;

/// A compile-time constant of the module (`SQRT_2PI = np.float32(...)`):
/// Numba freezes globals into the kernel, and so does port.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Int(i64),
    Float(f64),
    Float32(f32),
    Bool(bool),
}

impl Const {
    /// The constant's truth, as a flag NumPy reads with Python's `bool()`
    /// (`keepdims=1`); `None` for floats, which no flag takes.
    pub fn truth(self) -> Option<bool> {
        match self {
            Const::Bool(b) => Some(b),
            Const::Int(i) => Some(i != 0),
            Const::Float(_) | Const::Float32(_) => None,
        }
    }
}

/// A parsed Python file.
pub struct SourceFile {
    pub name: String,
    pub text: String,
    /// The module's statements, shared by the copies planning makes (a
    /// function's own imports taken as the module's copy the file, not its
    /// tree).
    pub suite: std::sync::Arc<Vec<Stmt>>,
    lines: LineIndex,
    /// Import aliases: local name → dotted module path or object
    /// (`np` → `numpy`, `sqrt` → `math.sqrt`).
    pub imports: HashMap<String, String>,
    pub consts: HashMap<String, Const>,
    /// [`SourceFile::normalised`], made once per file: planning every
    /// function of a file asks for it once per function.
    normal: std::sync::OnceLock<Option<Box<SourceFile>>>,
    /// Constants of the program's modules beside this file, read at the
    /// first use of one (`consts.G`): by module, by name. Shared with the
    /// copies planning makes of the file, which read the same siblings.
    siblings: std::sync::Arc<std::sync::Mutex<HashMap<String, HashMap<String, Const>>>>,
    /// [`SourceFile::functions`] and [`SourceFile::module_names`], made once
    /// per file: planning each of a file's functions asks for them several
    /// times, and rebuilding them each time made planning a file quadratic
    /// in its functions.
    index: std::sync::OnceLock<FunctionIndex>,
    names: std::sync::OnceLock<std::collections::HashSet<String>>,
    /// The helpers of modules beside this file appended to its text for
    /// planning ([`crate::siblings`]): where each one's lines
    /// came from.
    pub borrowed: Vec<Borrowed>,
    /// What [`crate::siblings`] read for this file: the modules
    /// beside it, parsed, and the file joined with each set of helpers
    /// (planning a file's functions borrows the same helpers again and
    /// again). Shared with the copies planning makes of the file.
    pub borrow_cache: std::sync::Arc<std::sync::Mutex<BorrowCache>>,
}

/// See [`SourceFile::borrow_cache`].
#[derive(Default)]
pub struct BorrowCache {
    pub modules: HashMap<String, Option<std::sync::Arc<SourceFile>>>,
    pub joined: HashMap<String, std::sync::Arc<SourceFile>>,
}

/// Lines `first..=last` of a planned file's text are a helper borrowed
/// from `file`, whose `def` is at `line` there.
#[derive(Clone, Debug)]
pub struct Borrowed {
    pub first: u32,
    pub last: u32,
    pub file: String,
    pub line: u32,
}

/// Where each function of a file is: its position in the suite (and in its
/// class's body), its qualname, and the functions by bare name and qualname.
#[derive(Default)]
struct FunctionIndex {
    entries: Vec<IndexEntry>,
    by_name: HashMap<String, Vec<usize>>,
}

struct IndexEntry {
    qualname: String,
    at: (usize, Option<usize>),
    class: Option<String>,
    staticmethod: bool,
}

/// A function found in the file, with its qualified name.
pub struct FoundFunction<'a> {
    pub qualname: String,
    pub def: &'a ast::StmtFunctionDef,
    /// Inside a class (a method or static method).
    pub class: Option<String>,
    pub staticmethod: bool,
}

/// A rewrite of a function's body with its file's names, saying whether it
/// changed anything ([`SourceFile::normalised`]).
pub type Defined = fn(&SourceFile, &mut Vec<Stmt>) -> bool;

impl SourceFile {
    /// The same file with `defs` added at the module level (nested
    /// functions of a migrated function that capture nothing, planned as
    /// the program's own helpers). Lines stay where the code is.
    pub fn with_functions(&self, defs: Vec<ast::StmtFunctionDef>) -> SourceFile {
        let mut suite = (*self.suite).clone();
        suite.extend(defs.into_iter().map(Stmt::FunctionDef));
        self.with_suite(suite.into())
    }

    /// The same file (text, lines, imports, constants) with `suite` as its
    /// statements.
    fn with_suite(&self, suite: std::sync::Arc<Vec<Stmt>>) -> SourceFile {
        SourceFile {
            name: self.name.clone(),
            text: self.text.clone(),
            suite,
            lines: self.lines.clone(),
            imports: self.imports.clone(),
            consts: self.consts.clone(),
            normal: std::sync::OnceLock::new(),
            siblings: std::sync::Arc::clone(&self.siblings),
            index: std::sync::OnceLock::new(),
            names: std::sync::OnceLock::new(),
            borrowed: self.borrowed.clone(),
            borrow_cache: std::sync::Arc::clone(&self.borrow_cache),
        }
    }

    /// The same file with every function's statements in the forms the
    /// rewrites take ([`crate::pyast::normalise_statements`]: constant
    /// `if`s decided, loops over integer literals as `range`s); `None` when
    /// nothing would change. Lines stay where the code is.
    ///
    /// `defined` rewrites a function's body further, with this file's
    /// names (the desugarings that need nothing of the function around
    /// them, so that a helper a plan inlines reads as the function planned
    /// does), and says whether it changed anything. The first call's
    /// `defined` is the one applied: a file is normalised once.
    pub fn normalised(&self, defined: Defined) -> Option<&SourceFile> {
        self.normal
            .get_or_init(|| self.make_normalised(defined).map(Box::new))
            .as_deref()
    }

    /// The file with each function's statements normalised
    /// ([`crate::pyast::normalise_statements`]), its calls of the
    /// module's functions with keywords written positionally
    /// ([`crate::pyast::keyword_calls`]), and `defined` applied.
    fn make_normalised(&self, defined: Defined) -> Option<SourceFile> {
        use crate::pyast::keyword_calls::{self, Signature};
        fn local_names(f: &ast::StmtFunctionDef) -> HashSet<String> {
            let mut local = crate::pyast::names_rebound(&f.body);
            local.extend(crate::pyast::param_names(&f.args));
            local
        }
        fn apply(
            file: &SourceFile,
            suite: &mut [Stmt],
            sigs: &HashMap<String, Signature>,
            defined: Defined,
        ) -> bool {
            let mut changed = false;
            for s in suite {
                match s {
                    Stmt::FunctionDef(f) => {
                        if crate::pyast::has_statements_to_normalise(&f.body) {
                            crate::pyast::normalise_statements(&mut f.body);
                            changed = true;
                        }
                        let local = local_names(f);
                        changed |= keyword_calls::positional(&mut f.body, sigs, &local);
                        changed |= defined(file, &mut f.body);
                    }
                    Stmt::ClassDef(c) => changed |= apply(file, &mut c.body, sigs, defined),
                    _ => {}
                }
            }
            changed
        }
        let sigs = keyword_calls::signatures(&self.suite);
        // Cloned whole once per file: which of `defined`'s rewrites apply
        // is known only by making them.
        let mut suite = (*self.suite).clone();
        if !apply(self, &mut suite, &sigs, defined) {
            return None;
        }
        Some(self.with_suite(suite.into()))
    }

    /// NumPy's local name in this file (`np` after `import numpy as np`),
    /// for calls a rewrite writes; `numpy` in a file that does not import
    /// it, which resolves to itself.
    pub fn numpy_name(&self) -> &str {
        self.imports
            .iter()
            .find(|(_, full)| full.as_str() == "numpy")
            .map_or("numpy", |(local, _)| local.as_str())
    }

    /// The constant `full` names: one of NumPy's or `math`'s (`numpy.pi`),
    /// or one of a module of the program beside this file (`consts.G`,
    /// from `consts.py`), as Numba freezes a module's globals; the module
    /// is read at the first such question. `None` for anything else.
    pub fn imported_const(&self, full: &str) -> Option<Const> {
        // The libraries' own constants, however imported (`np.pi`, or
        // `pi` after `from numpy import pi`).
        let known = match full {
            "math.pi" | "numpy.pi" => Some(std::f64::consts::PI),
            "math.e" | "numpy.e" => Some(std::f64::consts::E),
            "math.tau" => Some(std::f64::consts::TAU),
            "math.inf" | "numpy.inf" => Some(f64::INFINITY),
            "math.nan" | "numpy.nan" => Some(f64::NAN),
            "numpy.euler_gamma" => Some(0.577_215_664_901_532_9),
            _ => None,
        };
        if let Some(v) = known {
            return Some(Const::Float(v));
        }
        let (module, name) = full.rsplit_once('.')?;
        let mut cache = self.siblings.lock().ok()?;
        let consts = cache
            .entry(module.to_string())
            .or_insert_with(|| sibling_constants(&self.name, module).into_iter().collect());
        consts.get(name).copied()
    }

    /// What an `import` or `from … import` statement binds, into
    /// `imports`; other statements add nothing.
    fn add_import(&mut self, s: &Stmt) {
        self.imports.extend(import_bindings(s));
        self.names = std::sync::OnceLock::new();
    }

    /// The same file with the imports `stmts` (a function's own `import
    /// numpy as np`) taken as the module's; `None` when they bind nothing
    /// new.
    pub fn with_imports(&self, stmts: &[&Stmt]) -> Option<SourceFile> {
        // Asked for every function planned: the file is copied only when
        // the imports bind something new (a copy per function made
        // planning a file of n functions quadratic in n).
        let new = stmts
            .iter()
            .flat_map(|s| import_bindings(s))
            .any(|(k, v)| self.imports.get(&k) != Some(&v));
        if !new {
            return None;
        }
        let mut f = self.with_suite(std::sync::Arc::clone(&self.suite));
        for s in stmts {
            f.add_import(s);
        }
        (f.imports != self.imports).then_some(f)
    }

    pub fn parse(name: &str, text: &str) -> Result<SourceFile, RewriteError> {
        let lines = LineIndex::from_source_text(text);
        let suite = ast::Suite::parse(text, name).map_err(|e| {
            let loc = lines.source_location(e.offset, text);
            RewriteError::Parse {
                file: name.to_string(),
                line: loc.row.get(),
                column: loc.column.get(),
                message: e.error.to_string(),
            }
        })?;
        Ok(SourceFile::from_parsed(
            name.to_string(),
            text.to_string(),
            suite,
            lines,
        ))
    }

    /// A file the analyzer has already parsed (its text, statements and
    /// line index): planning every function of a program parses nothing
    /// twice.
    pub fn from_parsed(
        name: String,
        text: String,
        suite: Vec<Stmt>,
        lines: LineIndex,
    ) -> SourceFile {
        let mut f = SourceFile {
            name,
            text,
            suite: suite.into(),
            lines,
            imports: HashMap::new(),
            consts: HashMap::new(),
            normal: std::sync::OnceLock::new(),
            siblings: Default::default(),
            index: std::sync::OnceLock::new(),
            names: std::sync::OnceLock::new(),
            borrowed: Vec::new(),
            borrow_cache: Default::default(),
        };
        f.scan_module();
        f
    }

    pub fn line_of(&self, offset: TextSize) -> u32 {
        self.lines.line_index(offset).get()
    }

    pub fn line(&self, node: &impl Ranged) -> u32 {
        self.line_of(node.start())
    }

    /// `text` with each `line N` that is a borrowed helper's line named
    /// as [`SourceFile::shown_line`] names it.
    pub fn shown_lines_in(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find("line ") {
            let (before, after) = rest.split_at(at + "line ".len());
            out.push_str(before);
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            match after[..digits].parse::<u32>() {
                Ok(n) => out.push_str(&self.shown_line(n)),
                Err(_) => out.push_str(&after[..digits]),
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }

    /// A line as a message names it: `12` in the file itself, `40 of
    /// utils.py` in a helper borrowed from there.
    pub fn shown_line(&self, line: u32) -> String {
        match self
            .borrowed
            .iter()
            .find(|b| (b.first..=b.last).contains(&line))
        {
            Some(b) => format!("{} of {}", b.line + (line - b.first), b.file),
            None => line.to_string(),
        }
    }

    /// The last line of a node.
    pub fn end_line(&self, node: &impl Ranged) -> u32 {
        let end = node.end();
        let end = if end > TextSize::from(0) {
            end - TextSize::from(1)
        } else {
            end
        };
        self.line_of(end)
    }

    /// The source text of a node, whitespace removed (for comparing index
    /// expressions).
    pub fn norm_text(&self, node: &impl Ranged) -> String {
        let r = node.range();
        self.text[usize::from(r.start())..usize::from(r.end())]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    }

    /// The source text of a node as written.
    pub fn text_of(&self, node: &impl Ranged) -> &str {
        let r = node.range();
        &self.text[usize::from(r.start())..usize::from(r.end())]
    }

    fn scan_module(&mut self) {
        let suite = std::mem::take(&mut self.suite);
        for s in suite.iter() {
            self.add_import(s);
        }
        self.suite = suite;
        // Constants may build on earlier constants.
        let suite = std::mem::take(&mut self.suite);
        // Names bound to a NumPy dtype (`np_float = np.float64`), resolved
        // like the dtype itself, as long as nothing at module level binds
        // them to anything else.
        let mut dtype_aliases: Vec<String> = Vec::new();
        for s in suite.iter() {
            let (target, value) = match s {
                Stmt::Assign(a) => match a.targets.as_slice() {
                    [Expr::Name(n)] => (n.id.to_string(), a.value.as_ref()),
                    _ => continue,
                },
                Stmt::AnnAssign(a) => match (a.target.as_ref(), &a.value) {
                    (Expr::Name(n), Some(v)) => (n.id.to_string(), v.as_ref()),
                    _ => continue,
                },
                _ => continue,
            };
            match self.dtype_path(value) {
                Some(path) => {
                    self.imports.insert(target.clone(), path);
                    dtype_aliases.push(target.clone());
                }
                None if dtype_aliases.contains(&target) => {
                    // Rebound to something else: no longer an alias.
                    self.imports.remove(&target);
                    dtype_aliases.retain(|n| *n != target);
                }
                None => {}
            }
            match self.eval_const(value) {
                Some(c) => {
                    self.consts.insert(target, c);
                }
                None => {
                    // Reassigned to something non-constant: not a constant.
                    self.consts.remove(&target);
                }
            }
        }
        // A name assigned anywhere else at module level (in a loop, by
        // `global`) would not be frozen by Numba either; port follows the
        // simple rule above. A dtype alias is dropped when it is bound
        // anywhere else (in a module-level `if`, a loop, through `global`):
        // which dtype it names would depend on the run.
        for name in dtype_aliases {
            if rebound_elsewhere(&suite, &name) {
                self.imports.remove(&name);
            }
        }
        self.suite = suite;
    }

    /// The dotted path of a NumPy dtype (`np.float64` → `numpy.float64`,
    /// the builtins `float`, `int`, `bool`, `complex`) an expression names;
    /// `None` for anything else.
    fn dtype_path(&self, e: &Expr) -> Option<String> {
        if !matches!(e, Expr::Name(_) | Expr::Attribute(_)) {
            return None;
        }
        let path = self.resolve(e)?;
        let known = match path.strip_prefix("numpy.") {
            Some(short) => !short.contains('.') && crate::types::scalar_from_name(short).is_some(),
            None => matches!(path.as_str(), "float" | "int" | "bool" | "complex"),
        };
        known.then_some(path)
    }

    /// The dotted name an expression refers to, with import aliases
    /// resolved: `np.sqrt` → `numpy.sqrt`, `sqrt` → `math.sqrt`.
    /// Whether `e` names a library module (`np`, `math`, `scipy.special`)
    /// or a module of the program: `e.f(…)` is then a function of it, not
    /// a method of a value.
    pub fn names_a_module(&self, e: &Expr) -> bool {
        self.resolve(e).is_some_and(|m| {
            matches!(
                m.split('.').next(),
                Some("numpy" | "math" | "numba" | "cmath" | "scipy")
            ) || self.imports.contains_key(m.as_str())
        })
    }

    pub fn resolve(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::Name(n) => {
                let id = n.id.as_str();
                Some(match self.imports.get(id) {
                    Some(full) => self.reexported(full).unwrap_or_else(|| full.clone()),
                    None => id.to_string(),
                })
            }
            Expr::Attribute(a) => {
                let base = self.resolve(&a.value)?;
                Some(format!("{base}.{}", a.attr))
            }
            _ => None,
        }
    }

    /// `full` as the program's module that holds it imports it: a package
    /// re-exporting a name (`_util.py`: `from numba import prange as
    /// _prange`; another module: `from ._util import _prange`) passes on
    /// what it imported, `numba.prange`. `None` when `full`'s module is not
    /// one of the program's files or does not import the name.
    fn reexported(&self, full: &str) -> Option<String> {
        let (module, name) = full.rsplit_once('.')?;
        module_beside(&self.name, module)?
            .imports
            .get(name)
            .cloned()
    }

    /// Evaluates a constant expression of the module: numbers, `math.pi`,
    /// arithmetic, `**`, `math.sqrt`, `np.float32(...)`, `float(...)`.
    pub fn eval_const(&self, e: &Expr) -> Option<Const> {
        use Const::*;
        match e {
            Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => i64::try_from(i).ok().map(Int),
                ast::Constant::Float(f) => Some(Float(*f)),
                ast::Constant::Bool(b) => Some(Bool(*b)),
                _ => None,
            },
            Expr::Name(n) => self.consts.get(n.id.as_str()).copied().or_else(|| {
                // `from consts import G`
                self.imported_const(self.imports.get(n.id.as_str())?)
            }),
            // `np.finfo(np.float32).max`, at the module's top level too
            // (`FLOAT32_MAX = np.finfo(np.float32).max`): a NumPy scalar of
            // the float type.
            Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Call(_)) => {
                let Expr::Call(c) = a.value.as_ref() else {
                    unreachable!("matched")
                };
                let ([arg], true) = (c.args.as_slice(), c.keywords.is_empty()) else {
                    return None;
                };
                if self.resolve(&c.func)?.as_str() != "numpy.finfo" {
                    return None;
                }
                let name = match arg {
                    Expr::Constant(k) => k.value.as_str()?.to_string(),
                    e => self.resolve(e)?,
                };
                let t = crate::types::scalar_from_name(name.trim_start_matches("numpy."))?;
                let v = crate::dtypes::float_limit(t, a.attr.as_str())?;
                Some(if t == port_codegen::ir::ScalarType::F32 {
                    Float32(v as f32)
                } else {
                    Float(v)
                })
            }
            // `math.pi`, `np.inf`, `consts.G`.
            Expr::Attribute(_) => self.imported_const(&self.resolve(e)?),
            Expr::UnaryOp(u) => {
                let v = self.eval_const(&u.operand)?;
                match (u.op, v) {
                    (ast::UnaryOp::USub, Int(i)) => Some(Int(-i)),
                    (ast::UnaryOp::USub, Float(f)) => Some(Float(-f)),
                    (ast::UnaryOp::USub, Float32(f)) => Some(Float32(-f)),
                    (ast::UnaryOp::UAdd, v) => Some(v),
                    _ => None,
                }
            }
            Expr::BinOp(b) => {
                let l = self.eval_const(&b.left)?;
                let r = self.eval_const(&b.right)?;
                if let (Int(x), Int(y)) = (l, r) {
                    return match b.op {
                        ast::Operator::Add => x.checked_add(y).map(Int),
                        ast::Operator::Sub => x.checked_sub(y).map(Int),
                        ast::Operator::Mult => x.checked_mul(y).map(Int),
                        ast::Operator::Div => Some(Float(x as f64 / y as f64)),
                        ast::Operator::FloorDiv if y != 0 => Some(Int(x.div_euclid(y))),
                        _ => None,
                    };
                }
                let f32_result = matches!(l, Float32(_)) && !matches!(r, Float(_))
                    || matches!(r, Float32(_)) && !matches!(l, Float(_));
                let (x, y) = (as_f64(l)?, as_f64(r)?);
                let v = match b.op {
                    ast::Operator::Add => x + y,
                    ast::Operator::Sub => x - y,
                    ast::Operator::Mult => x * y,
                    ast::Operator::Div => x / y,
                    ast::Operator::Pow => x.powf(y),
                    _ => return None,
                };
                Some(if f32_result {
                    Float32(v as f32)
                } else {
                    Float(v)
                })
            }
            Expr::Call(c) if c.args.len() == 1 && c.keywords.is_empty() => {
                let f = self.resolve(&c.func)?;
                let v = self.eval_const(&c.args[0])?;
                let x = as_f64(v)?;
                match f.as_str() {
                    "numpy.float32" => Some(Float32(x as f32)),
                    "numpy.float64" | "float" => Some(Float(x)),
                    "int" | "numpy.int64" => Some(Int(x as i64)),
                    "math.sqrt" | "numpy.sqrt" => Some(Float(x.sqrt())),
                    "math.exp" | "numpy.exp" => Some(Float(x.exp())),
                    "math.log" | "numpy.log" => Some(Float(x.ln())),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Every function of the file with its qualified name (`f`,
    /// `Class.method`); nested functions are not listed.
    pub fn functions(&self) -> Vec<FoundFunction<'_>> {
        let index = self.index();
        (0..index.entries.len()).map(|k| self.found(k)).collect()
    }

    /// The functions whose qualname or bare name is `name`, in file order.
    pub fn functions_named(&self, name: &str) -> Vec<FoundFunction<'_>> {
        self.index()
            .by_name
            .get(name)
            .map(|ks| ks.iter().map(|&k| self.found(k)).collect())
            .unwrap_or_default()
    }

    /// The module-level function (not a method) named `name`.
    pub fn module_function(&self, name: &str) -> Option<FoundFunction<'_>> {
        self.functions_named(name)
            .into_iter()
            .find(|f| f.class.is_none() && f.qualname == name)
    }

    fn found(&self, k: usize) -> FoundFunction<'_> {
        let e = &self.index().entries[k];
        let def = match (&self.suite[e.at.0], e.at.1) {
            (Stmt::FunctionDef(d), None) => d,
            (Stmt::ClassDef(c), Some(j)) => match &c.body[j] {
                Stmt::FunctionDef(d) => d,
                _ => unreachable!("the index names a def"),
            },
            _ => unreachable!("the index names a def"),
        };
        FoundFunction {
            qualname: e.qualname.clone(),
            def,
            class: e.class.clone(),
            staticmethod: e.staticmethod,
        }
    }

    fn index(&self) -> &FunctionIndex {
        self.index.get_or_init(|| {
            let mut index = FunctionIndex::default();
            let add = |index: &mut FunctionIndex, e: IndexEntry, name: &str| {
                let k = index.entries.len();
                index.by_name.entry(name.to_string()).or_default().push(k);
                if e.qualname != name {
                    index.by_name.entry(e.qualname.clone()).or_default().push(k);
                }
                index.entries.push(e);
            };
            for (i, s) in self.suite.iter().enumerate() {
                match s {
                    Stmt::FunctionDef(d) => {
                        let e = IndexEntry {
                            qualname: d.name.to_string(),
                            at: (i, None),
                            class: None,
                            staticmethod: false,
                        };
                        add(&mut index, e, d.name.as_str());
                    }
                    Stmt::ClassDef(c) => {
                        for (j, s) in c.body.iter().enumerate() {
                            if let Stmt::FunctionDef(d) = s {
                                let staticmethod = d.decorator_list.iter().any(
                                    |e| matches!(e, Expr::Name(n) if n.id.as_str() == "staticmethod"),
                                );
                                let e = IndexEntry {
                                    qualname: format!("{}.{}", c.name, d.name),
                                    at: (i, Some(j)),
                                    class: Some(c.name.to_string()),
                                    staticmethod,
                                };
                                add(&mut index, e, d.name.as_str());
                            }
                        }
                    }
                    _ => {}
                }
            }
            index
        })
    }

    /// Top-level names of the module (functions, classes, assignments,
    /// imports): a new kernel's name must not shadow one.
    pub fn module_names(&self) -> &std::collections::HashSet<String> {
        self.names.get_or_init(|| self.make_module_names())
    }

    fn make_module_names(&self) -> std::collections::HashSet<String> {
        let mut names: std::collections::HashSet<String> = self.imports.keys().cloned().collect();
        for s in self.suite.iter() {
            match s {
                Stmt::FunctionDef(d) => {
                    names.insert(d.name.to_string());
                }
                Stmt::ClassDef(c) => {
                    names.insert(c.name.to_string());
                }
                Stmt::Assign(a) => {
                    for t in &a.targets {
                        if let Expr::Name(n) = t {
                            names.insert(n.id.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        names
    }
}

/// How many of a file's functions an error about a missing one names.
const NAMED_IN_HINT: usize = 8;

/// ` (it defines a, b, …)`: the file's functions, those sharing the asked
/// name's last part first, at most [`NAMED_IN_HINT`] (a test module defines
/// hundreds; listing them all made one message 25 kB).
fn defines_hint(names: &[String], asked: &str) -> String {
    if names.is_empty() {
        return String::new();
    }
    let bare = asked.rsplit('.').next().unwrap_or(asked);
    let mut order: Vec<&String> = names.iter().collect();
    order.sort_by_key(|n| n.rsplit('.').next() != Some(bare));
    let shown: Vec<&str> = order
        .iter()
        .take(NAMED_IN_HINT)
        .map(|n| n.as_str())
        .collect();
    let more = names.len().saturating_sub(NAMED_IN_HINT);
    if more == 0 {
        format!(" (it defines {})", shown.join(", "))
    } else {
        format!(
            " (it defines {}, and {more} more; `port analyze` lists them all)",
            shown.join(", ")
        )
    }
}

/// The function `function` names in the file: its qualname (`Class.method`)
/// or, when that is not unique, its bare name; an error lists the
/// candidates.
pub fn find<'s>(src: &'s SourceFile, function: &str) -> Result<FoundFunction<'s>, RewriteError> {
    let all = src.functions_named(function);
    let matches: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, f)| f.qualname == function || f.def.name.as_str() == function)
        .map(|(k, _)| k)
        .collect();
    let exact: Vec<usize> = matches
        .iter()
        .copied()
        .filter(|&k| all[k].qualname == function)
        .collect();
    let pick = if exact.len() == 1 { exact } else { matches };
    match pick.as_slice() {
        [k] => Ok(all.into_iter().nth(*k).expect("index from the list")),
        [] => {
            let names: Vec<String> = src.functions().iter().map(|f| f.qualname.clone()).collect();
            Err(RewriteError::NoSuchFunction {
                file: src.name.clone(),
                name: function.to_string(),
                hint: defines_hint(&names, function),
            })
        }
        many => {
            let names: Vec<String> = many.iter().map(|&k| all[k].qualname.clone()).collect();
            Err(RewriteError::Ambiguous {
                name: function.to_string(),
                candidates: names.join(", "),
                first: names[0].clone(),
            })
        }
    }
}

/// Whether `name` is bound at module level other than by a top-level
/// assignment (inside an `if`, a loop, `with` or `try`, as a loop target),
/// or declared `global` in a function.
fn rebound_elsewhere(suite: &[Stmt], name: &str) -> bool {
    let mut found = false;
    for s in suite {
        match s {
            // The top-level assignments of one name are read in order.
            Stmt::Assign(a) if matches!(a.targets.as_slice(), [Expr::Name(_)]) => continue,
            Stmt::AnnAssign(a) if matches!(a.target.as_ref(), Expr::Name(_)) => continue,
            Stmt::FunctionDef(d) => {
                found |= declares_global(&d.body, name);
                continue;
            }
            Stmt::ClassDef(c) => {
                for m in &c.body {
                    if let Stmt::FunctionDef(d) = m {
                        found |= declares_global(&d.body, name);
                    }
                }
                continue;
            }
            _ => {}
        }
        crate::pyast::walk_stmts(std::slice::from_ref(s), &mut |st| {
            let targets: Vec<&Expr> = match st {
                Stmt::Assign(a) => a.targets.iter().collect(),
                Stmt::AnnAssign(a) => vec![a.target.as_ref()],
                Stmt::AugAssign(a) => vec![a.target.as_ref()],
                Stmt::For(f) => vec![f.target.as_ref()],
                Stmt::Global(g) => {
                    found |= g.names.iter().any(|n| n.as_str() == name);
                    vec![]
                }
                _ => vec![],
            };
            for t in targets {
                found |= crate::pyast::target_names(t).iter().any(|n| n == name);
            }
        });
    }
    found
}

/// Whether a function body (its nested functions included) declares
/// `global name`.
fn declares_global(body: &[Stmt], name: &str) -> bool {
    let mut found = false;
    crate::pyast::walk_stmts(body, &mut |st| match st {
        Stmt::Global(g) => found |= g.names.iter().any(|n| n.as_str() == name),
        Stmt::FunctionDef(d) => found |= declares_global(&d.body, name),
        _ => {}
    });
    found
}

fn as_f64(c: Const) -> Option<f64> {
    Some(match c {
        Const::Int(i) => i as f64,
        Const::Float(f) => f,
        Const::Float32(f) => f64::from(f),
        Const::Bool(_) => return None,
    })
}

/// The names an `import` or `from … import` statement binds, each with
/// the dotted path it names (`import numpy as np` → `np` = `numpy`,
/// `import os.path` → `os` = `os`, `from m import G` → `G` = `m.G`);
/// nothing for other statements.
pub fn import_bindings(s: &Stmt) -> Vec<(String, String)> {
    match s {
        Stmt::Import(i) => i
            .names
            .iter()
            .map(|a| {
                let full = a.name.to_string();
                match &a.asname {
                    Some(alias) => (alias.to_string(), full),
                    None => {
                        let first = full.split('.').next().unwrap_or(&full).to_string();
                        (first.clone(), first)
                    }
                }
            })
            .collect(),
        Stmt::ImportFrom(i) => {
            let level = i.level.map_or(0, |l| l.to_u32());
            let module = i.module.as_ref().map(|m| m.as_str());
            i.names
                .iter()
                .map(|a| {
                    let local = a.asname.as_ref().unwrap_or(&a.name).to_string();
                    let full = match (level, module) {
                        // `from . import consts`: the module beside the
                        // file, named as `import consts` beside it names it.
                        (0 | 1, None) => a.name.to_string(),
                        // `from .utils import f` as `from utils import f`.
                        (0 | 1, Some(m)) => format!("{m}.{}", a.name),
                        // `from ..utils import f`: a module of a folder
                        // above, never one beside the file (the dots keep
                        // it from resolving to a `utils.py` here).
                        (l, m) => {
                            let dots = ".".repeat(l as usize);
                            match m {
                                Some(m) => format!("{dots}{m}.{}", a.name),
                                None => format!("{dots}{}", a.name),
                            }
                        }
                    };
                    (local, full)
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The module-level constants of the program's module `module`, read
/// from `module.py` in the folder of `file` (the file being migrated), when
/// there is one: what a `consts.G` in this file reads. Nothing for modules
/// that are not files beside it (NumPy, the standard library).
fn sibling_constants(file: &str, module: &str) -> Vec<(String, Const)> {
    match module_beside(file, module) {
        Some(f) => f
            .consts
            .iter()
            .filter(|(k, _)| !k.contains('.'))
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
        None => Vec::new(),
    }
}

/// The program's module `module` as `file` imports it, parsed: `m.py`
/// beside the file for `m`, and for a dotted `pkg.sub.m` the file
/// `pkg/sub/m.py` under the folder of one of the packages the file is in,
/// or under the folder that holds the outermost (`from pvlib import
/// tools` inside `pvlib/irradiance.py` is `pvlib/tools.py`). `None` when
/// there is none (NumPy, the standard library), when it is `file` itself,
/// when it does not parse, or when it is being read already (a module that
/// imports the file back). One reader for the constants a file reads
/// (`consts.G`) and the helpers it borrows ([`crate::siblings`]).
///
/// Parsed once per path for the process (the static pass plans every
/// function of a package whose files import the same `_util.py`). Only
/// a module read from outside any other is kept: one read inside
/// another's reading may lack what the cycle hid from it.
pub fn module_beside(file: &str, module: &str) -> Option<std::sync::Arc<SourceFile>> {
    use std::path::{Path, PathBuf};
    type Parsed = std::sync::Mutex<HashMap<PathBuf, Option<std::sync::Arc<SourceFile>>>>;
    static PARSED: std::sync::OnceLock<Parsed> = std::sync::OnceLock::new();
    thread_local! {
        static READING: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    if module.is_empty() || module.starts_with('.') || module.ends_with('.') {
        return None;
    }
    let dir = Path::new(file).parent().unwrap_or_else(|| Path::new(""));
    let path = module_path(dir, module)?;
    if path == Path::new(file) || READING.with(|r| r.borrow().contains(&path)) {
        return None;
    }
    let parsed = PARSED.get_or_init(Default::default);
    if let Some(m) = parsed.lock().ok()?.get(&path) {
        return m.clone();
    }
    if let Some(m) = shared()
        .lock()
        .ok()?
        .get(&path)
        .and_then(std::sync::Weak::upgrade)
    {
        return Some(m);
    }
    let outermost = READING.with(|r| r.borrow().is_empty());
    let text = std::fs::read_to_string(&path).ok();
    READING.with(|r| r.borrow_mut().push(path.clone()));
    let m = text
        .and_then(|text| SourceFile::parse(&path.to_string_lossy(), &text).ok())
        .map(std::sync::Arc::new);
    READING.with(|r| r.borrow_mut().pop());
    if outermost {
        parsed.lock().ok()?.insert(path, m.clone());
    }
    m
}

/// Where [`module_beside`] looks for `module` from the folder `dir`: `m.py`
/// there; for `a.b.m`, `a/b/m.py` under `dir` or under one of its
/// ancestors while they are packages (an `__init__.py`), and under the
/// folder holding the outermost. Looked up once per (folder, module).
fn module_path(dir: &std::path::Path, module: &str) -> Option<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    type Found = std::sync::Mutex<HashMap<(PathBuf, String), Option<PathBuf>>>;
    static FOUND: std::sync::OnceLock<Found> = std::sync::OnceLock::new();
    if !module.contains('.') {
        return Some(dir.join(format!("{module}.py")));
    }
    let key = (dir.to_path_buf(), module.to_string());
    let found = FOUND.get_or_init(Default::default);
    if let Some(p) = found.lock().ok()?.get(&key) {
        return p.clone();
    }
    let rel: PathBuf = format!("{}.py", module.replace('.', "/")).into();
    // Walked on the real path (`.` has no parent to walk to), and named
    // back as the caller names the folder when the module is under it
    // (`./core.py` for `stumpy.core` read inside `stumpy/` as `.`): the
    // name the analyzer gave the file it parsed.
    let base = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let canon = base.canonicalize().ok();
    let mut at: Option<&Path> = canon.as_deref();
    let mut p = None;
    while let Some(d) = at {
        let candidate = d.join(&rel);
        if candidate.is_file() {
            p = Some(match canon.as_deref().map(|c| candidate.strip_prefix(c)) {
                Some(Ok(inside)) => dir.join(inside),
                _ => candidate,
            });
            break;
        }
        if !d.join("__init__.py").is_file() {
            break;
        }
        at = d.parent();
    }
    found.lock().ok()?.insert(key, p.clone());
    p
}

type Shared = std::sync::Mutex<HashMap<std::path::PathBuf, std::sync::Weak<SourceFile>>>;

/// Files parsed already by whoever holds them ([`share_parsed`]).
fn shared() -> &'static Shared {
    static SHARED: std::sync::OnceLock<Shared> = std::sync::OnceLock::new();
    SHARED.get_or_init(Default::default)
}

/// Lets [`module_beside`] read `files` (named by their paths) for as long
/// as the caller holds them, instead of parsing them again: the static
/// pass holds every file of the program while it plans (re-parsing the
/// modules that others import cost 3% of its time on numpy + scipy).
/// Nothing is kept once the caller drops them.
pub fn share_parsed(files: &[std::sync::Arc<SourceFile>]) {
    let Ok(mut map) = shared().lock() else { return };
    map.retain(|_, f| f.strong_count() > 0);
    for f in files {
        map.insert(
            std::path::PathBuf::from(&f.name),
            std::sync::Arc::downgrade(f),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_imports_name_the_modules_beside_the_file_and_no_others() {
        let src = "from . import consts, _util as u\nfrom .helpers import step as s\n\
                   from .. import shared\nfrom ..top import g\n";
        let f = SourceFile::parse("pkg/m.py", src).unwrap();
        assert_eq!(f.imports["consts"], "consts");
        assert_eq!(f.imports["u"], "_util");
        assert_eq!(f.imports["s"], "helpers.step");
        // A folder above: never read as `shared.py` or `top.py` here.
        assert_eq!(f.imports["shared"], "..shared");
        assert_eq!(f.imports["g"], "..top.g");
    }

    #[test]
    fn finds_constants_imports_and_functions() {
        let src = "import math\nimport numpy as np\nfrom math import sqrt as sq\n\
                   SQRT_2PI = np.float32((2 * math.pi) ** 0.5)\nN = 4 * 8\n\
                   def f(x):\n    return x\n\nclass C:\n    @staticmethod\n    def g(y):\n        return y\n";
        let f = SourceFile::parse("m.py", src).unwrap();
        assert_eq!(f.imports["np"], "numpy");
        assert_eq!(f.imports["sq"], "math.sqrt");
        assert_eq!(f.consts["N"], Const::Int(32));
        match f.consts["SQRT_2PI"] {
            Const::Float32(v) => assert!((v - 2.5066283).abs() < 1e-6),
            other => panic!("{other:?}"),
        }
        let names: Vec<String> = f.functions().into_iter().map(|f| f.qualname).collect();
        assert_eq!(names, ["f", "C.g"]);
        assert!(f.functions()[1].staticmethod);
    }

    #[test]
    fn module_level_dtype_names_resolve_like_the_dtype() {
        let src = "import numpy as np\nfrom numpy import complex64\n\
                   np_float = np.float64\nnp_c = complex64\nI = int\n\
                   changed = np.float32\nchanged = 3\n\
                   in_if = np.float32\nif True:\n    in_if = np.float64\n\
                   by_global = np.int32\nsqrt = np.sqrt\n\
                   def f():\n    global by_global\n    by_global = np.int8\n";
        let f = SourceFile::parse("m.py", src).unwrap();
        let resolved = |n: &str| {
            let e = ast::Expr::parse(n, "<test>").unwrap();
            f.resolve(&e)
        };
        assert_eq!(resolved("np_float").as_deref(), Some("numpy.float64"));
        assert_eq!(resolved("np_c").as_deref(), Some("numpy.complex64"));
        assert_eq!(resolved("I").as_deref(), Some("int"));
        // Rebound to a number, inside an `if`, or through `global`: which
        // dtype the name holds depends on the run, so it stays a name.
        assert_eq!(resolved("changed").as_deref(), Some("changed"));
        assert_eq!(f.consts["changed"], Const::Int(3));
        assert_eq!(resolved("in_if").as_deref(), Some("in_if"));
        assert_eq!(resolved("by_global").as_deref(), Some("by_global"));
        // Only dtypes: a function bound to a name is not an alias.
        assert_eq!(resolved("sqrt").as_deref(), Some("sqrt"));
    }

    #[test]
    fn a_missing_function_names_a_few_of_the_files_and_its_namesakes_first() {
        let mut text = String::new();
        for k in 0..30 {
            text.push_str(&format!("def f{k}(x):\n    return x\n"));
        }
        text.push_str("class C:\n    def solve(self, x):\n        return x\n");
        let f = SourceFile::parse("m.py", &text).unwrap();
        let e = find(&f, "solve_it").err().unwrap().to_string();
        assert!(
            e.ends_with("and 23 more; `port analyze` lists them all)"),
            "{e}"
        );
        let e = find(&f, "D.solve").err().unwrap().to_string();
        assert!(e.contains("(it defines C.solve, f0, "), "{e}");
        let small = SourceFile::parse("s.py", "def a():\n    pass\n").unwrap();
        let e = find(&small, "b").err().unwrap().to_string();
        assert!(e.ends_with("no function named `b` (it defines a)"), "{e}");
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = SourceFile::parse("bad.py", "def f(:\n").err().unwrap();
        assert!(e.to_string().starts_with("bad.py:1:"), "{e}");
    }
}
