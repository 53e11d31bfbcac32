//! Argument types from the program's own calls of a function: `f(A, n)`
//! after `A = np.random.rand(n, n)` and `n = 1000` types `f` as
//! `(float64[:, :], int64)`, with no profile and no inputs. The third
//! source of types, after a capture and `--inputs`/`--signature`, before
//! the body's use of each parameter ([`crate::signature`]).
//!
//! Each scope of the file (the module's top level, `if __name__ ==
//! "__main__":` included, and every function's body) is read in order:
//! names bound by assignment get the type of their value, with NumPy's
//! rules for the creation functions (`zeros`, `ones`, `empty`, `full`,
//! `arange`, `linspace`, `eye`, `array` of a literal, `random.*` and a
//! `default_rng` generator's methods), `dtype=`
//! and `.astype`, arithmetic, `len`, `int`, `float`, `.shape[k]`, and the
//! file's own helpers (`A, B = initialize(n)` takes the types of the tuple
//! `initialize` returns). A parameter takes the type of the first call
//! that gives its argument one; a later call of another rank or element
//! type makes it unknown (the body's use decides then).

use std::collections::HashMap;
use std::sync::Arc;

use port_codegen::ir::{ArrayType, ScalarType, MAX_DIMS};
use rustpython_parser::ast::{self, Constant, Expr, Stmt};

use crate::pyast::{keyword, stmt_exprs, walk_expr, walk_stmts};
use crate::source::SourceFile;
use crate::types::{scalar_from_name, ArgType};

/// How many times the file is read, each carrying the types the calls
/// give a function's parameters one call deeper.
const MAX_ROUNDS: usize = 3;

/// How deep the file's helpers are followed for what they return.
const MAX_HELPER_DEPTH: usize = 3;

/// A value's type as far as the calls tell: a type, a tuple of them (what a
/// helper returns), or nothing known.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Known(ArgType),
    Tuple(Vec<Val>),
    /// A random generator (`np.random.default_rng(seed)`): its methods
    /// make arrays as `np.random`'s functions do.
    Generator,
    Unknown,
}

/// One call of a function of the file: the types of its arguments, as
/// far as the scope it is in tells.
#[derive(Clone, Debug, PartialEq)]
struct Site {
    line: u32,
    args: Vec<Val>,
    keywords: Vec<(String, Val)>,
    /// The constants among the arguments (`None`, a string), as Python
    /// writes them: by position, and by keyword.
    literal_args: Vec<Option<String>>,
    literal_keywords: Vec<(String, String)>,
}

/// `None` or a string constant as Python writes it; `None` for any other
/// expression.
pub fn literal_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Constant(c) => match &c.value {
            Constant::None => Some("None".into()),
            Constant::Str(s) => Some(crate::pyast::py_str(s)),
            _ => None,
        },
        _ => None,
    }
}

/// Each parameter's default of `def` when it is `None` or a string, as
/// [`literal_text`] writes it.
pub fn literal_defaults(def: &ast::StmtFunctionDef) -> Vec<Option<String>> {
    def.args
        .args
        .iter()
        .map(|a| a.default.as_deref().and_then(literal_text))
        .collect()
}

/// Every call of the file's own functions, by the callee's bare name, read
/// once per file (planning each function of a file asks about its calls).
#[derive(Debug, Default, PartialEq)]
pub struct CallSites {
    /// Shared with the scopes they were read in: rebuilding the index each
    /// round copies pointers, not sites.
    by_callee: HashMap<Arc<str>, Vec<Arc<Site>>>,
}

impl CallSites {
    /// The calls in every scope of `src` alone (see [`CallSites::of_program`]);
    /// functions are named by their bare names.
    pub fn of(src: &SourceFile) -> CallSites {
        CallSites::of_program(&[("", src)], None)
    }

    /// The calls in every scope of every file of a program, each file with
    /// its module's dotted name: the module's top level (`if __name__ ==
    /// "__main__":` included) and every function's body, whose parameters
    /// are bound to the types the calls of that function give them (so
    /// `main` → `step(N, u)` → `diffuse(N, u)` carries the types down; a
    /// few rounds, until nothing changes). A call is of a function of the
    /// program when its name is defined in the file, or imported from one
    /// of the program's modules (`from solver import step`, `solver.step`);
    /// it is keyed by the function's module and bare name
    /// ([`CallSites::key`]).
    ///
    /// With `callees` (bare names), only the calls that can bear on those
    /// functions' types are read: the scopes whose text calls one of them,
    /// then those that call such a scope, as deep as types are carried;
    /// [`CallSites::types`] of those functions is the same as without.
    pub fn of_program(
        files: &[(&str, &SourceFile)],
        callees: Option<&std::collections::HashSet<&str>>,
    ) -> CallSites {
        use rayon::prelude::*;
        let modules: std::collections::HashSet<&str> = files.iter().map(|(m, _)| *m).collect();
        // Every scope once: (file, its module, the function or None for
        // the top level).
        let per_file: Vec<_> = files
            .par_iter()
            .map(|(m, src)| (*m, *src, src.functions()))
            .collect();
        let needed = callees.map(|c| needed_scopes(&per_file, c));
        struct Scope<'a> {
            file: usize,
            body: &'a [Stmt],
            /// The function's key and parameters; `None` at the top level.
            function: Option<(String, Vec<String>)>,
            /// The parameters' types the last reading started from.
            seed: Option<HashMap<String, Val>>,
            sites: Vec<(Arc<str>, Arc<Site>)>,
        }
        let mut scopes: Vec<Scope> = Vec::new();
        let empty: &[Stmt] = &[];
        for (k, (module, src, functions)) in per_file.iter().enumerate() {
            let wanted = |j: usize| needed.as_ref().is_none_or(|n| n[k][j]);
            // An unneeded top level is still a scope (its globals are
            // looked up by position), with nothing to read.
            scopes.push(Scope {
                file: k,
                body: if wanted(0) { &src.suite } else { empty },
                function: None,
                seed: None,
                sites: Vec::new(),
            });
            for (j, f) in functions.iter().enumerate() {
                if !wanted(j + 1) {
                    continue;
                }
                let params = crate::pyast::positional_params(&f.def.args);
                scopes.push(Scope {
                    file: k,
                    body: &f.def.body,
                    function: Some((CallSites::key(module, f.def.name.as_str()), params)),
                    seed: None,
                    sites: Vec::new(),
                });
            }
        }
        let own: Vec<std::collections::HashSet<&str>> = per_file
            .par_iter()
            .map(|(_, _, functions)| functions.iter().map(|f| f.def.name.as_str()).collect())
            .collect();
        // The names each module's top level binds (`u = np.zeros(…)`): what
        // its functions read as globals, unless they bind them themselves.
        let top: Vec<ScopeRead> = per_file
            .par_iter()
            .enumerate()
            .map(|(k, (module, src, _))| {
                if needed.as_ref().is_some_and(|n| !n[k][0]) {
                    return (Vec::new(), HashMap::new());
                }
                read_scope(src, module, &own[k], &modules, &src.suite, HashMap::new())
            })
            .collect();
        let mut globals: Vec<HashMap<String, Val>> = Vec::with_capacity(top.len());
        for (scope, (sites, env)) in scopes.iter_mut().filter(|s| s.function.is_none()).zip(top) {
            // The top level has no parameters: read once, here.
            scope.sites = sites;
            scope.seed = Some(HashMap::new());
            globals.push(env);
        }
        let mut sites = CallSites::default();
        for _round in 0..MAX_ROUNDS {
            // Only scopes whose parameters' types changed are read again.
            let read = scopes
                .par_iter_mut()
                .map(|scope| {
                    let seed: HashMap<String, Val> = match &scope.function {
                        Some((key, params)) => {
                            let (types, _) = sites.types(key, params);
                            params
                                .iter()
                                .zip(types)
                                .filter_map(|(p, t)| Some((p.clone(), Val::Known(t?))))
                                .collect()
                        }
                        None => HashMap::new(),
                    };
                    if scope.seed.as_ref() == Some(&seed) {
                        return false;
                    }
                    let (module, src, _) = &per_file[scope.file];
                    let mut env = match scope.function {
                        Some(_) => globals[scope.file].clone(),
                        None => HashMap::new(),
                    };
                    env.extend(seed.iter().map(|(k, v)| (k.clone(), v.clone())));
                    scope.sites =
                        read_scope(src, module, &own[scope.file], &modules, scope.body, env).0;
                    scope.seed = Some(seed);
                    true
                })
                .filter(|read| *read)
                .count();
            if read == 0 {
                break;
            }
            let mut by_callee: HashMap<Arc<str>, Vec<Arc<Site>>> = HashMap::new();
            for scope in &scopes {
                for (key, site) in &scope.sites {
                    by_callee
                        .entry(Arc::clone(key))
                        .or_default()
                        .push(Arc::clone(site));
                }
            }
            sites = CallSites { by_callee };
        }
        sites
    }

    /// How a function is named here: its module's dotted name and its bare
    /// name (`solver.diffuse`; `diffuse` for a file read alone).
    pub fn key(module: &str, bare: &str) -> String {
        if module.is_empty() {
            bare.to_string()
        } else {
            format!("{module}.{bare}")
        }
    }

    /// The type of each of `params` of the function `key` ([`CallSites::key`])
    /// at the program's calls of it, and the line of the first call that
    /// gave one; `None` where no call types it.
    pub fn types(&self, key: &str, params: &[String]) -> (Vec<Option<ArgType>>, Option<u32>) {
        let mut out: Vec<Option<ArgType>> = vec![None; params.len()];
        let mut conflict = vec![false; params.len()];
        let mut first_line = None;
        for site in self.by_callee.get(key).into_iter().flatten() {
            let given = site.args.iter().enumerate().chain(
                site.keywords
                    .iter()
                    .filter_map(|(name, v)| Some((params.iter().position(|p| p == name)?, v))),
            );
            for (k, v) in given {
                let (true, Val::Known(t)) = (k < params.len(), v) else {
                    continue;
                };
                match out[k] {
                    None if !conflict[k] => {
                        out[k] = Some(*t);
                        first_line.get_or_insert(site.line);
                    }
                    Some(prev) if !same(prev, *t) => {
                        out[k] = None;
                        conflict[k] = true;
                    }
                    _ => {}
                }
            }
        }
        (out, first_line)
    }
}

impl CallSites {
    /// The constant (`None`, a string) each of `params` of the function
    /// `key` takes at every one of the program's calls of it, passed or
    /// left to its default (`defaults`, as [`literal_text`] writes them);
    /// where the calls pass different constants, its default when some
    /// call leaves it so (the plan is for that one; the wrapper runs the
    /// original for the others); `None` where a call passes something
    /// else than a constant, or the calls disagree with no default among
    /// them, or there is no call.
    pub fn literals(
        &self,
        key: &str,
        params: &[String],
        defaults: &[Option<String>],
    ) -> Vec<Option<String>> {
        let sites: Vec<&Arc<Site>> = self.by_callee.get(key).into_iter().flatten().collect();
        if sites.is_empty() {
            return vec![None; params.len()];
        }
        params
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let mut seen: Option<String> = None;
                let mut several = false;
                // Some call leaves it to its default.
                let mut left = false;
                for site in &sites {
                    let at = if k < site.args.len() {
                        site.literal_args[k].clone()
                    } else if site.keywords.iter().any(|(n, _)| n == p) {
                        site.literal_keywords
                            .iter()
                            .find(|(n, _)| n == p)
                            .map(|(_, t)| t.clone())
                    } else {
                        left = true;
                        defaults.get(k).cloned().flatten()
                    };
                    match (at, &seen) {
                        (None, _) => return None,
                        (Some(t), None) => seen = Some(t),
                        (Some(t), Some(s)) if &t == s => {}
                        (Some(_), Some(_)) => several = true,
                    }
                }
                if several {
                    // (A call left to the default has passed it above.)
                    return left.then(|| defaults.get(k).cloned().flatten()).flatten();
                }
                seen
            })
            .collect()
    }
}

/// [`CallSites::types`] of one function (the file read for it alone).
pub fn at_calls(
    src: &SourceFile,
    function: &str,
    params: &[String],
) -> (Vec<Option<ArgType>>, Option<u32>) {
    let bare = function.rsplit('.').next().unwrap_or(function);
    CallSites::of(src).types(bare, params)
}

/// What reading one scope gives: its calls, each with the callee's key,
/// and the names bound at its end.
type ScopeRead = (Vec<(Arc<str>, Arc<Site>)>, HashMap<String, Val>);

/// The calls of the program's functions in one scope, read in order from
/// `env` (its globals' and parameters' types), each with the callee's key,
/// and the names bound at its end.
fn read_scope(
    src: &SourceFile,
    module: &str,
    own: &std::collections::HashSet<&str>,
    modules: &std::collections::HashSet<&str>,
    body: &[Stmt],
    mut env: HashMap<String, Val>,
) -> ScopeRead {
    // The scope's own imports (`import numpy as np` in a function, or in
    // an `if __name__ == "__main__":` block) name modules as the file's do.
    let mut imports: Vec<&Stmt> = Vec::new();
    walk_stmts(body, &mut |s: &Stmt| {
        if matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_)) {
            imports.push(s);
        }
    });
    let local = if imports.is_empty() {
        None
    } else {
        src.with_imports(&imports)
    };
    let src = local.as_ref().unwrap_or(src);
    // The key of a callee named by `func` in this file, if it is one of
    // the program's functions.
    // (Looked up without building the dotted name: every call of the
    // program comes through here.)
    // A module of the program as this file imports it: by its name, or,
    // in a package, beside this module (`from . import solver` or `from
    // .solver import step` in `pkg.main` name `pkg.solver`).
    let program_module = |m: &str| -> Option<String> {
        if modules.contains(m) {
            return Some(m.to_string());
        }
        let (package, _) = module.rsplit_once('.')?;
        let beside = format!("{package}.{m}");
        modules.contains(beside.as_str()).then_some(beside)
    };
    let callee = |func: &Expr| -> Option<String> {
        match func {
            Expr::Name(n) if own.contains(n.id.as_str()) => {
                Some(CallSites::key(module, n.id.as_str()))
            }
            // `from solver import step`: `step` is `solver.step`.
            Expr::Name(n) => {
                let full = src.imports.get(n.id.as_str())?;
                let (m, name) = full.rsplit_once('.')?;
                Some(CallSites::key(&program_module(m)?, name))
            }
            // `solver.step(…)` after `import solver`.
            Expr::Attribute(a) => {
                let Expr::Name(base) = a.value.as_ref() else {
                    let full = src.resolve(func)?;
                    let (m, name) = full.rsplit_once('.')?;
                    return Some(CallSites::key(&program_module(m)?, name));
                };
                let m = src.imports.get(base.id.as_str())?;
                Some(CallSites::key(&program_module(m)?, a.attr.as_str()))
            }
            _ => None,
        }
    };
    let mut out = Vec::new();
    walk_stmts(body, &mut |s: &Stmt| {
        // Calls first: `x = f(x)` reads `x` as it was.
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x: &Expr| {
                let Expr::Call(c) = x else { return };
                let Some(key) = callee(&c.func) else { return };
                let site = Site {
                    line: src.line(c),
                    args: c
                        .args
                        .iter()
                        .map(|a| match a {
                            Expr::Starred(_) => Val::Unknown,
                            a => value(src, a, &env, 0),
                        })
                        .collect(),
                    keywords: c
                        .keywords
                        .iter()
                        .filter_map(|k| {
                            Some((k.arg.as_deref()?.to_string(), value(src, &k.value, &env, 0)))
                        })
                        .collect(),
                    literal_args: c.args.iter().map(literal_text).collect(),
                    literal_keywords: c
                        .keywords
                        .iter()
                        .filter_map(|k| {
                            Some((k.arg.as_deref()?.to_string(), literal_text(&k.value)?))
                        })
                        .collect(),
                };
                out.push((Arc::from(key), Arc::new(site)));
            });
        }
        bind(src, s, &mut env, 0);
    });
    (out, env)
}

/// Which scopes of each file [`CallSites::of_program`] reads for the types
/// of `callees`: per file, its top level (index 0), then its functions in
/// [`SourceFile::functions`] order. A scope is needed when its text calls
/// (`name(` or `.name(`, by its bare name: a superset of the calls that
/// resolve to it) a needed function; the functions of needed scopes are
/// needed in turn, one level per round of types carried down; a file's top
/// level is needed when one of its functions is (its globals).
fn needed_scopes(
    per_file: &[(&str, &SourceFile, Vec<crate::source::FoundFunction<'_>>)],
    callees: &std::collections::HashSet<&str>,
) -> Vec<Vec<bool>> {
    use rayon::prelude::*;
    use rustpython_parser::ast::Ranged;
    let mut needed: Vec<Vec<bool>> = per_file
        .iter()
        .map(|(_, _, fs)| vec![false; fs.len() + 1])
        .collect();
    let mut names: Vec<String> = callees.iter().map(|s| s.to_string()).collect();
    // One more round than types are carried: the calls of the last scopes
    // read must be read too.
    for _ in 0..=MAX_ROUNDS {
        if names.is_empty() {
            break;
        }
        let Ok(calls) = aho_corasick::AhoCorasick::new(&names) else {
            // Too many names for the automaton: read every scope.
            return per_file
                .iter()
                .map(|(_, _, fs)| vec![true; fs.len() + 1])
                .collect();
        };
        let found: Vec<Vec<usize>> = per_file
            .par_iter()
            .zip(needed.par_iter())
            .map(|((_, src, fs), done)| {
                let mut new = Vec::new();
                if !done[0] && calls_any(&calls, &src.text) {
                    new.push(0);
                }
                for (j, f) in fs.iter().enumerate() {
                    if done[j + 1] {
                        continue;
                    }
                    let r = f.def.range();
                    let text = &src.text[usize::from(r.start())..usize::from(r.end())];
                    if calls_any(&calls, text) {
                        new.push(j + 1);
                    }
                }
                new
            })
            .collect();
        names.clear();
        for (k, new) in found.into_iter().enumerate() {
            for j in new {
                needed[k][j] = true;
                if j > 0 {
                    needed[k][0] = true;
                    names.push(per_file[k].2[j - 1].def.name.to_string());
                }
            }
        }
        names.sort();
        names.dedup();
    }
    needed
}

/// Whether `text` calls one of the automaton's names: the name not inside
/// a longer identifier, then, past blanks and line continuations, `(`.
fn calls_any(names: &aho_corasick::AhoCorasick, text: &str) -> bool {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    names.find_overlapping_iter(text).any(|m| {
        if m.start() > 0 && ident(b[m.start() - 1]) {
            return false;
        }
        let mut k = m.end();
        while k < b.len() && matches!(b[k], b' ' | b'\t' | b'\\' | b'\r' | b'\n') {
            k += 1;
        }
        k < b.len() && b[k] == b'('
    })
}

/// Same rank and element type (contiguity aside).
fn same(a: ArgType, b: ArgType) -> bool {
    match (a, b) {
        (ArgType::Scalar(x), ArgType::Scalar(y)) => x == y,
        (ArgType::Array(x), ArgType::Array(y)) => x.elem == y.elem && x.ndim == y.ndim,
        _ => false,
    }
}

/// Binds the names an assignment sets.
fn bind(src: &SourceFile, s: &Stmt, env: &mut HashMap<String, Val>, depth: usize) {
    let (targets, v): (Vec<&Expr>, &Expr) = match s {
        Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
        Stmt::AnnAssign(a) => match &a.value {
            Some(v) => (vec![a.target.as_ref()], v),
            None => return,
        },
        Stmt::AugAssign(a) => {
            if let Expr::Name(n) = a.target.as_ref() {
                let now = env.get(n.id.as_str()).cloned().unwrap_or(Val::Unknown);
                let r = value(src, &a.value, env, depth);
                let joined = arith(now, r, a.op);
                env.insert(n.id.to_string(), joined);
            }
            return;
        }
        Stmt::For(f) => {
            // A loop variable over `range` is an integer.
            if let (Expr::Name(n), Expr::Call(c)) = (f.target.as_ref(), f.iter.as_ref()) {
                if matches!(c.func.as_ref(), Expr::Name(r) if r.id.as_str() == "range") {
                    env.insert(
                        n.id.to_string(),
                        Val::Known(ArgType::Scalar(ScalarType::I64)),
                    );
                    return;
                }
            }
            for n in target_names(&f.target) {
                env.insert(n, Val::Unknown);
            }
            return;
        }
        _ => return,
    };
    let val = value(src, v, env, depth);
    for t in targets {
        assign(t, val.clone(), env);
    }
}

fn assign(t: &Expr, val: Val, env: &mut HashMap<String, Val>) {
    match (t, val) {
        (Expr::Name(n), v) => {
            env.insert(n.id.to_string(), v);
        }
        (Expr::Tuple(tt), Val::Tuple(vs)) if tt.elts.len() == vs.len() => {
            for (e, v) in tt.elts.iter().zip(vs) {
                assign(e, v, env);
            }
        }
        (Expr::List(tt), Val::Tuple(vs)) if tt.elts.len() == vs.len() => {
            for (e, v) in tt.elts.iter().zip(vs) {
                assign(e, v, env);
            }
        }
        // `x[i] = …`, `o.a = …` store into a value; they rebind no name.
        (Expr::Subscript(_) | Expr::Attribute(_), _) => {}
        (other, _) => {
            for n in target_names(other) {
                env.insert(n, Val::Unknown);
            }
        }
    }
}

fn target_names(t: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    walk_expr(t, &mut |x: &Expr| {
        if let Expr::Name(n) = x {
            out.push(n.id.to_string());
        }
    });
    out
}

fn scalar(t: ScalarType) -> Val {
    Val::Known(ArgType::Scalar(t))
}

fn array(elem: ScalarType, ndim: usize) -> Val {
    if ndim == 0 || ndim > MAX_DIMS as usize {
        return Val::Unknown;
    }
    Val::Known(ArgType::Array(ArrayType {
        elem,
        ndim: ndim as u8,
        contiguous: false,
    }))
}

/// The element type a `dtype=` names: `np.float32`, `"float32"`, `float`.
fn dtype(e: &Expr) -> Option<ScalarType> {
    match e {
        Expr::Attribute(a) => scalar_from_name(a.attr.as_str()),
        Expr::Name(n) => scalar_from_name(n.id.as_str()),
        Expr::Constant(c) => match &c.value {
            Constant::Str(s) => scalar_from_name(s),
            _ => None,
        },
        _ => None,
    }
}

/// How many dimensions a shape argument gives: a tuple's length, an
/// integer's one, another array's `x.shape` its rank; `0` (no array known)
/// when it cannot tell (`np.ones(X.shape)` with `X` unknown is no 1-D array).
fn shape_rank(src: &SourceFile, e: &Expr, env: &HashMap<String, Val>, depth: usize) -> usize {
    match e {
        Expr::Tuple(t) => t.elts.len(),
        Expr::List(t) => t.elts.len(),
        Expr::Attribute(a) if a.attr.as_str() == "shape" => {
            match value(src, &a.value, env, depth) {
                Val::Known(ArgType::Array(x)) => x.ndim as usize,
                _ => 0,
            }
        }
        e => match value(src, e, env, depth) {
            Val::Known(ArgType::Scalar(t)) if t.is_int() => 1,
            Val::Tuple(t) => t.len(),
            _ => 0,
        },
    }
}

/// The type of the constant `full` names ([`SourceFile::imported_const`]:
/// `numpy.pi`, `consts.G`), or nothing known.
fn constant(src: &SourceFile, full: &str) -> Val {
    match src.imported_const(full) {
        Some(crate::source::Const::Int(_)) => scalar(ScalarType::I64),
        Some(crate::source::Const::Float(_)) => scalar(ScalarType::F64),
        Some(crate::source::Const::Float32(_)) => scalar(ScalarType::F32),
        Some(crate::source::Const::Bool(_)) => scalar(ScalarType::Bool),
        None => Val::Unknown,
    }
}

/// NumPy's functions of one array applied element by element, and whether
/// they keep the element type (`abs`, `negative`) or give a float
/// (`sqrt` of integers is float64).
fn elementwise(name: &str) -> Option<bool> {
    Some(match name {
        "abs" | "absolute" | "negative" | "sign" | "square" | "conj" | "conjugate" | "fabs"
        | "floor" | "ceil" | "round" | "rint" | "trunc" => true,
        "sqrt" | "exp" | "exp2" | "expm1" | "log" | "log2" | "log10" | "log1p" | "sin" | "cos"
        | "tan" | "arcsin" | "arccos" | "arctan" | "sinh" | "cosh" | "tanh" | "arcsinh"
        | "arccosh" | "arctanh" | "cbrt" | "deg2rad" | "rad2deg" => false,
        _ => return None,
    })
}

/// The promoted element type of two numbers (NumPy's rules for the kinds
/// port takes: bool < int < float < complex; widths kept at 64).
fn promote(a: ScalarType, b: ScalarType) -> ScalarType {
    use crate::dtypes::kind;
    if kind(a) >= kind(b) {
        a
    } else {
        b
    }
}

fn arith(l: Val, r: Val, op: ast::Operator) -> Val {
    let elem = |t: ArgType| match t {
        ArgType::Scalar(s) => s,
        ArgType::Array(a) => a.elem,
    };
    let (Val::Known(a), Val::Known(b)) = (l, r) else {
        return Val::Unknown;
    };
    let (x, y) = (elem(a), elem(b));
    // Two arrays (or two numbers) of one kind: the wider type; a Python
    // number beside an array is weak and takes the array's; across kinds
    // the higher kind.
    let mut e = match (a, b) {
        (ArgType::Array(_), ArgType::Scalar(_)) if promote(x, y) == promote(y, x) => promote(x, y),
        (ArgType::Array(_), ArgType::Scalar(_)) => x,
        (ArgType::Scalar(_), ArgType::Array(_)) if promote(x, y) == promote(y, x) => promote(x, y),
        (ArgType::Scalar(_), ArgType::Array(_)) => y,
        _ if promote(x, y) == promote(y, x) => promote(x, y),
        _ if x.size_bytes() >= y.size_bytes() => x,
        _ => y,
    };
    if op == ast::Operator::Div
        && !matches!(
            e,
            ScalarType::F32 | ScalarType::F64 | ScalarType::C64 | ScalarType::C128
        )
    {
        e = ScalarType::F64;
    }
    match (a, b) {
        (ArgType::Scalar(_), ArgType::Scalar(_)) => scalar(e),
        (ArgType::Array(x), ArgType::Scalar(_)) | (ArgType::Scalar(_), ArgType::Array(x)) => {
            array(e, x.ndim as usize)
        }
        (ArgType::Array(x), ArgType::Array(y)) => {
            if op == ast::Operator::MatMult {
                Val::Unknown
            } else {
                array(e, x.ndim.max(y.ndim) as usize)
            }
        }
    }
}

/// The type of `e` where the names of `env` are bound.
fn value(src: &SourceFile, e: &Expr, env: &HashMap<String, Val>, depth: usize) -> Val {
    match e {
        Expr::Constant(c) => match &c.value {
            Constant::Int(_) => scalar(ScalarType::I64),
            Constant::Float(_) => scalar(ScalarType::F64),
            Constant::Bool(_) => scalar(ScalarType::Bool),
            Constant::Complex { .. } => scalar(ScalarType::C128),
            _ => Val::Unknown,
        },
        // A name bound here, else a constant (`pi` from numpy, `G` from a
        // module beside the file).
        Expr::Name(n) => env.get(n.id.as_str()).cloned().unwrap_or_else(|| {
            src.imports
                .get(n.id.as_str())
                .map_or(Val::Unknown, |f| constant(src, f))
        }),
        Expr::Tuple(t) => Val::Tuple(t.elts.iter().map(|x| value(src, x, env, depth)).collect()),
        Expr::UnaryOp(u) => match u.op {
            ast::UnaryOp::Not => scalar(ScalarType::Bool),
            _ => value(src, &u.operand, env, depth),
        },
        Expr::BinOp(b) => arith(
            value(src, &b.left, env, depth),
            value(src, &b.right, env, depth),
            b.op,
        ),
        // `A.shape[0]`
        Expr::Subscript(s) => match s.value.as_ref() {
            Expr::Attribute(a) if a.attr.as_str() == "shape" => scalar(ScalarType::I64),
            _ => Val::Unknown,
        },
        Expr::Attribute(a) if a.attr.as_str() == "T" => match value(src, &a.value, env, depth) {
            Val::Known(ArgType::Array(x)) => Val::Known(ArgType::Array(x)),
            _ => Val::Unknown,
        },
        Expr::Attribute(a) if a.attr.as_str() == "size" => scalar(ScalarType::I64),
        // A constant of an imported module: `np.pi`, `math.e`, `consts.G`.
        Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(m) if src.imports.contains_key(m.id.as_str())) => {
            src.resolve(e).map_or(Val::Unknown, |f| constant(src, &f))
        }
        // `x < 0.25`: booleans, an array of them when an operand is one.
        Expr::Compare(c) => {
            let mut rank = 0;
            for x in std::iter::once(c.left.as_ref()).chain(c.comparators.iter()) {
                match value(src, x, env, depth) {
                    Val::Known(ArgType::Array(a)) => rank = rank.max(a.ndim as usize),
                    Val::Known(ArgType::Scalar(_)) => {}
                    _ => return Val::Unknown,
                }
            }
            match rank {
                0 => scalar(ScalarType::Bool),
                r => array(ScalarType::Bool, r),
            }
        }
        Expr::Call(c) => call(src, c, env, depth),
        _ => Val::Unknown,
    }
}

fn call(src: &SourceFile, c: &ast::ExprCall, env: &HashMap<String, Val>, depth: usize) -> Val {
    let arg = |k: usize| c.args.get(k);
    match c.func.as_ref() {
        Expr::Name(n) => match n.id.as_str() {
            "int" | "len" | "round" => scalar(ScalarType::I64),
            "float" => scalar(ScalarType::F64),
            "complex" => scalar(ScalarType::C128),
            "bool" => scalar(ScalarType::Bool),
            name => helper(src, name, c, env, depth),
        },
        Expr::Attribute(a) => {
            let method = a.attr.as_str();
            let module = src.resolve(&a.value);
            let on_numpy = module.as_deref() == Some("numpy");
            let on_random = module.as_deref() == Some("numpy.random");
            let elem_of =
                |default: ScalarType| keyword(c, "dtype").and_then(dtype).unwrap_or(default);
            // `np.float32(2.0)`, `np.int64(n)`: a number of that type; of an
            // array, an array of it.
            if on_numpy && c.args.len() == 1 && c.keywords.is_empty() {
                if let Some(t) = scalar_from_name(method) {
                    return match value(src, &c.args[0], env, depth) {
                        Val::Known(ArgType::Array(x)) => array(t, x.ndim as usize),
                        Val::Known(ArgType::Scalar(_)) => scalar(t),
                        _ => Val::Unknown,
                    };
                }
            }
            if on_numpy {
                if let (Some(keeps), [x]) = (elementwise(method), c.args.as_slice()) {
                    let float = |t: ScalarType| match t {
                        ScalarType::F32 | ScalarType::F64 | ScalarType::C64 | ScalarType::C128 => t,
                        _ => ScalarType::F64,
                    };
                    let e = |t: ScalarType| if keeps { t } else { float(t) };
                    return match value(src, x, env, depth) {
                        Val::Known(ArgType::Array(a)) => array(e(a.elem), a.ndim as usize),
                        Val::Known(ArgType::Scalar(t)) => scalar(e(t)),
                        _ => Val::Unknown,
                    };
                }
                return match method {
                    // `Y, X = np.meshgrid(y, x)`: one array per argument, of
                    // as many dimensions as there are arguments.
                    "meshgrid" if !c.args.is_empty() => {
                        let mut elem = None;
                        for x in &c.args {
                            match value(src, x, env, depth) {
                                Val::Known(ArgType::Array(a)) if a.ndim == 1 => {
                                    elem = Some(elem.map_or(a.elem, |e| promote(e, a.elem)));
                                }
                                _ => return Val::Unknown,
                            }
                        }
                        let one = array(elem.unwrap_or(ScalarType::F64), c.args.len());
                        Val::Tuple(vec![one; c.args.len()])
                    }
                    "zeros" | "ones" | "empty" => match arg(0).or_else(|| keyword(c, "shape")) {
                        Some(s) => array(
                            arg(1)
                                .and_then(dtype)
                                .unwrap_or_else(|| elem_of(ScalarType::F64)),
                            shape_rank(src, s, env, depth),
                        ),
                        None => Val::Unknown,
                    },
                    "full" => match (arg(0), arg(1)) {
                        (Some(s), Some(fill)) => {
                            let fill = match value(src, fill, env, depth) {
                                Val::Known(ArgType::Scalar(t)) => t,
                                _ => ScalarType::F64,
                            };
                            array(elem_of(fill), shape_rank(src, s, env, depth))
                        }
                        _ => Val::Unknown,
                    },
                    "zeros_like" | "ones_like" | "empty_like" | "copy" | "ascontiguousarray" => {
                        match (
                            arg(0).map(|x| value(src, x, env, depth)),
                            keyword(c, "dtype").and_then(dtype),
                        ) {
                            (Some(Val::Known(ArgType::Array(x))), Some(t)) => {
                                array(t, x.ndim as usize)
                            }
                            (Some(v @ Val::Known(ArgType::Array(_))), None) => v,
                            _ => Val::Unknown,
                        }
                    }
                    "arange" => {
                        let ints = c.args.iter().all(|x| {
                            matches!(value(src, x, env, depth), Val::Known(ArgType::Scalar(t)) if !matches!(t, ScalarType::F32 | ScalarType::F64 | ScalarType::C64 | ScalarType::C128))
                        });
                        array(
                            elem_of(if ints {
                                ScalarType::I64
                            } else {
                                ScalarType::F64
                            }),
                            1,
                        )
                    }
                    "linspace" | "logspace" => array(elem_of(ScalarType::F64), 1),
                    "eye" | "identity" => array(elem_of(ScalarType::F64), 2),
                    "array" | "asarray" => match arg(0) {
                        Some(lit @ (Expr::List(_) | Expr::Tuple(_))) => {
                            let (rank, float) = literal_shape(lit);
                            let elem = if float {
                                ScalarType::F64
                            } else {
                                ScalarType::I64
                            };
                            array(elem_of(elem), rank)
                        }
                        Some(x) => match (
                            value(src, x, env, depth),
                            keyword(c, "dtype").and_then(dtype),
                        ) {
                            (Val::Known(ArgType::Array(a)), Some(t)) => array(t, a.ndim as usize),
                            (v @ Val::Known(ArgType::Array(_)), None) => v,
                            _ => Val::Unknown,
                        },
                        None => Val::Unknown,
                    },
                    _ => Val::Unknown,
                };
            }
            let generator = !on_random && value(src, &a.value, env, depth) == Val::Generator;
            if on_random
                && matches!(
                    method,
                    "default_rng" | "RandomState" | "Generator" | "PCG64"
                )
            {
                return Val::Generator;
            }
            if on_random || generator {
                let size = |k: usize| c.args.get(k).or_else(|| keyword(c, "size"));
                let floats = |k: usize| match size(k) {
                    Some(s) => array(elem_of(ScalarType::F64), shape_rank(src, s, env, depth)),
                    None => scalar(ScalarType::F64),
                };
                return match method {
                    "rand" | "randn" | "random_sample" if on_random && !c.args.is_empty() => {
                        array(ScalarType::F64, c.args.len())
                    }
                    "random" | "random_sample" | "standard_normal" | "standard_exponential" => {
                        floats(0)
                    }
                    "exponential" | "rayleigh" | "standard_gamma" => floats(1),
                    "uniform" | "normal" | "lognormal" | "gamma" | "beta" | "laplace"
                    | "logistic" => floats(2),
                    "integers" | "randint" => match size(2) {
                        Some(s) => array(elem_of(ScalarType::I64), shape_rank(src, s, env, depth)),
                        None => scalar(ScalarType::I64),
                    },
                    // Elements of an array, or integers below a number.
                    "choice" | "permutation" => {
                        let elem = match arg(0).map(|x| value(src, x, env, depth)) {
                            Some(Val::Known(ArgType::Array(x))) => x.elem,
                            Some(Val::Known(ArgType::Scalar(t)))
                                if !matches!(
                                    t,
                                    ScalarType::F32
                                        | ScalarType::F64
                                        | ScalarType::C64
                                        | ScalarType::C128
                                ) =>
                            {
                                ScalarType::I64
                            }
                            _ => return Val::Unknown,
                        };
                        match (method, size(1)) {
                            ("permutation", _) => array(elem, 1),
                            (_, Some(s)) => array(elem, shape_rank(src, s, env, depth)),
                            (_, None) => scalar(elem),
                        }
                    }
                    _ => Val::Unknown,
                };
            }
            // Methods of arrays.
            match (method, value(src, &a.value, env, depth)) {
                ("astype", Val::Known(ArgType::Array(x))) => match arg(0).and_then(dtype) {
                    Some(t) => array(t, x.ndim as usize),
                    None => Val::Unknown,
                },
                ("copy" | "transpose", v @ Val::Known(ArgType::Array(_))) => v,
                ("ravel" | "flatten", Val::Known(ArgType::Array(x))) => array(x.elem, 1),
                // `x.reshape(200, 100)`, `x.reshape((n, m))`, `x.reshape(-1)`.
                ("reshape", Val::Known(ArgType::Array(x))) => match c.args.as_slice() {
                    [] => Val::Unknown,
                    [s] => array(x.elem, shape_rank(src, s, env, depth)),
                    many => array(x.elem, many.len()),
                },
                _ => Val::Unknown,
            }
        }
        _ => Val::Unknown,
    }
}

/// The rank of a nested list literal and whether it holds a float.
fn literal_shape(e: &Expr) -> (usize, bool) {
    match e {
        Expr::List(l) => {
            let inner = l.elts.first().map_or((0, false), literal_shape);
            let float = l.elts.iter().any(|x| literal_shape(x).1);
            (inner.0 + 1, float)
        }
        Expr::Tuple(l) => {
            let inner = l.elts.first().map_or((0, false), literal_shape);
            let float = l.elts.iter().any(|x| literal_shape(x).1);
            (inner.0 + 1, float)
        }
        Expr::Constant(c) => (0, matches!(c.value, Constant::Float(_))),
        Expr::UnaryOp(u) => literal_shape(&u.operand),
        _ => (0, false),
    }
}

/// What a call of the file's own function `name` returns: its last
/// `return`'s value, read in its body with its parameters bound to the
/// call's arguments.
fn helper(
    src: &SourceFile,
    name: &str,
    c: &ast::ExprCall,
    env: &HashMap<String, Val>,
    depth: usize,
) -> Val {
    if depth >= MAX_HELPER_DEPTH {
        return Val::Unknown;
    }
    let Some(found) = src
        .functions_named(name)
        .into_iter()
        .find(|f| f.qualname == name)
    else {
        return Val::Unknown;
    };
    let mut inner: HashMap<String, Val> = HashMap::new();
    for (k, p) in found.def.args.args.iter().enumerate() {
        let given = c
            .args
            .get(k)
            .or_else(|| keyword(c, p.def.arg.as_str()))
            .or(p.default.as_deref());
        if let Some(g) = given {
            inner.insert(p.def.arg.to_string(), value(src, g, env, depth + 1));
        }
    }
    let mut ret = Val::Unknown;
    walk_stmts(&found.def.body, &mut |s: &Stmt| {
        if let Stmt::Return(r) = s {
            if let Some(v) = &r.value {
                ret = value(src, v, &inner, depth + 1);
            }
        }
        bind(src, s, &mut inner, depth + 1);
    });
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(text: &str, f: &str) -> Vec<String> {
        let src = SourceFile::parse("t.py", text).unwrap();
        let def = crate::source::find(&src, f).unwrap().def;
        let params = crate::pyast::positional_params(&def.args);
        at_calls(&src, f, &params)
            .0
            .into_iter()
            .map(|t| t.map_or("?".to_string(), |t| t.numba()))
            .collect()
    }

    #[test]
    fn creation_functions_literals_and_helpers_type_the_arguments() {
        let text = "import numpy as np\n\ndef f(A, x, n, s, k, w):\n    pass\n\ndef init(n):\n    A = np.zeros((n, n), dtype=np.float32)\n    return A, np.arange(n)\n\nif __name__ == '__main__':\n    n = 100\n    A, idx = init(n)\n    f(A, idx, n, 2.5 * n, len(idx), np.float32(0.5))\n";
        assert_eq!(
            types(text, "f"),
            [
                "float32[:, :]",
                "int64[:]",
                "int64",
                "float64",
                "int64",
                "float32"
            ]
        );
    }

    #[test]
    fn types_are_carried_down_the_files_own_calls() {
        let text = "import numpy as np\n\ndef inner(N, x):\n    pass\n\ndef step(N, u):\n    inner(N, u * 2.0)\n\nN = 64\nu = np.zeros((N + 2, N + 2), np.float32)\nstep(N, u)\n";
        assert_eq!(types(text, "inner"), ["int64", "float32[:, :]"]);
    }

    #[test]
    fn a_store_into_an_array_keeps_its_type() {
        let text = "import numpy as np\n\ndef f(x):\n    pass\n\nx = np.zeros((4, 4), np.float32)\nx[1, 1] = 100.0\nf(x)\n";
        assert_eq!(types(text, "f"), ["float32[:, :]"]);
    }

    #[test]
    fn functions_read_the_modules_globals() {
        let text = "import numpy as np\n\ndef f(n, x):\n    pass\n\nN = 64\nu = np.zeros((N, N), np.float32)\n\ndef update():\n    f(N, u)\n";
        assert_eq!(types(text, "f"), ["int64", "float32[:, :]"]);
    }

    #[test]
    fn imports_of_the_scope_name_modules() {
        // numpy is imported only in the main block, or as `numpy` above it.
        let text = "def f(a, b):\n    pass\n\nif __name__ == '__main__':\n    import numpy as np; N = 600; a = np.random.rand(N, N)\n    f(a, np.random.random(N))\n";
        assert_eq!(types(text, "f"), ["float64[:, :]", "float64[:]"]);
        let text = "import numpy\n\ndef f(a):\n    pass\n\ndef main():\n    import numpy as np\n    f(np.zeros(3, np.int32))\n";
        assert_eq!(types(text, "f"), ["int32[:]"]);
    }

    #[test]
    fn reshapes_and_random_choices_keep_the_element_type() {
        let text = "import numpy as np\n\ndef f(a, b, c, d):\n    pass\n\nX = np.linspace(0, 10, 20000).reshape(200, 100)\ns = np.random.randn(64) + np.random.randn(64) * 1j\nf(X, np.random.choice(s, 32), np.random.choice(10, (3, 4)), X.ravel())\n";
        assert_eq!(
            types(text, "f"),
            [
                "float64[:, :]",
                "complex128[:]",
                "int64[:, :]",
                "float64[:]"
            ]
        );
    }

    #[test]
    fn a_generators_methods_make_arrays() {
        let text = "import numpy as np\n\ndef f(a, b, c, d, e):\n    pass\n\nrng = np.random.default_rng(7)\nf(rng.standard_normal((4, 5)), rng.random(8, dtype=np.float32), rng.integers(0, 9, size=3), rng.normal(0.0, 1.0, (2, 2, 2)), rng.random())\n";
        assert_eq!(
            types(text, "f"),
            [
                "float64[:, :]",
                "float32[:]",
                "int64[:]",
                "float64[:, :, :]",
                "float64"
            ]
        );
    }

    #[test]
    fn random_arrays_keywords_and_conflicting_calls() {
        let text = "import numpy as np\n\ndef g(a, b, c):\n    pass\n\ndef main():\n    a = np.random.rand(10, 3)\n    b = np.random.randint(0, 5, size=(4,))\n    g(a, b, c=1.0)\n    g(a.astype(np.float32), b, c=2.0)\n";
        assert_eq!(types(text, "g"), ["?", "int64[:]", "float64"]);
    }

    #[test]
    fn reading_only_the_scopes_that_reach_a_function_gives_its_types() {
        // main → step → inner carries the types two calls down; `other`
        // and `unrelated` call nothing that leads to `inner`, and
        // `inner_x` only contains the name.
        let main = "import numpy as np\nfrom solver import step\n\ndef unrelated(a):\n    return a + 1\n\ndef main():\n    N = 64\n    u = np.zeros((N + 2, N + 2), np.float32)\n    step(N, u)\n\ndef elsewhere():\n    unrelated(2)\n\nmain()\n";
        let solver = "def inner(N, x):\n    pass\n\ndef inner_x(x):\n    pass\n\ndef step(N, u):\n    inner (N, u * 2.0)\n    inner_x(u)\n\ndef other(v):\n    inner(1, v)\n";
        let m = SourceFile::parse("main.py", main).unwrap();
        let s = SourceFile::parse("solver.py", solver).unwrap();
        let program = [("main", &m), ("solver", &s)];
        let params = ["N".to_string(), "x".to_string()];
        let key = CallSites::key("solver", "inner");
        let all = CallSites::of_program(&program, None);
        let some = CallSites::of_program(&program, Some(&["inner"].into_iter().collect()));
        let (t, _) = all.types(&key, &params);
        assert_eq!(some.types(&key, &params).0, t);
        assert_eq!(
            t.iter().map(|t| t.map(|t| t.numba())).collect::<Vec<_>>(),
            [Some("int64".to_string()), Some("float32[:, :]".to_string())]
        );
        // `elsewhere` was not read: no call of `unrelated` is known.
        assert!(!some.by_callee.contains_key("main.unrelated"));
        assert!(all.by_callee.contains_key("main.unrelated"));
    }

    #[test]
    fn meshgrids_elementwise_functions_comparisons_and_shapes_of_others() {
        // A finite-volume program's set-up: a mesh, fields made of
        // comparisons and NumPy's functions, one from another's shape.
        let text = "import numpy as np\n\ndef step(rho, vy, P, mask, n):\n    pass\n\ndef main():\n    N = 128\n    xlin = np.linspace(0.0, 1.0, N)\n    Y, X = np.meshgrid(xlin, xlin)\n    rho = 1.0 + (np.abs(Y - 0.5) < 0.25)\n    vy = 0.1 * np.sin(4 * np.pi * X)\n    P = 2.5 * np.ones(X.shape)\n    step(rho, vy, P, X > 0.5, N)\n";
        assert_eq!(
            types(text, "step"),
            [
                "float64[:, :]",
                "float64[:, :]",
                "float64[:, :]",
                "boolean[:, :]",
                "int64"
            ]
        );
        // The shape of an array nothing types gives no rank (it once gave 1).
        let text = "import numpy as np\n\ndef f(P):\n    pass\n\ndef main(X):\n    P = np.ones(X.shape)\n    f(P)\n";
        assert_eq!(types(text, "f"), ["?"]);
    }
}
