//! The planner's file pass, first rule (and the usage reader's,
//! [`crate::signature`]): the program's helpers defined in a module
//! beside the file (`from .utils import _linear_regression`, or
//! `utils._linear_regression(…)` after `from . import utils`), brought in
//! as if the file defined them, so that the lowering inlines them as it
//! does the file's own (a call through the module is then a call by the
//! helper's bare name).
//!
//! A helper is borrowed with what it reads of its module: the imports it
//! uses (when the file binds none of those names otherwise), its module's
//! constants (when the file binds none of those names otherwise), and the
//! functions of its module it calls in turn. Its text is appended to the
//! file's (so every node keeps a place in one text, and lines of the
//! file's own code do not move); [`SourceFile::shown_line`] names a
//! borrowed line by its own file and line. Nothing here is ever written
//! out: the patched file is printed from the user's file as it is.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::pyast::{walk_expr, walk_stmts};
use crate::source::{self, Borrowed, SourceFile};

/// How many functions are borrowed at most (helpers of helpers included).
const MAX_BORROWED: usize = 16;

/// `src` with the sibling modules' helpers that `function` calls
/// (directly, or through the helpers themselves) appended; `None` when it
/// calls none, or none can be borrowed without changing what a name means.
pub fn with_sibling_helpers(src: &SourceFile, function: &str) -> Option<Arc<SourceFile>> {
    let found = source::find(src, function).ok()?;
    // (Looked up, not collected: every function of a file is asked.)
    let own = |n: &str| src.module_function(n).is_some();
    // Work list: (the name it is called by here, its module, its name there).
    // The function's calls, and those of the file's functions it calls.
    let mut queue: Vec<(String, String, String)> = Vec::new();
    let mut seen: Vec<String> = vec![found.qualname.clone()];
    let mut bodies: Vec<&[Stmt]> = vec![&found.def.body];
    while let Some(body) = bodies.pop() {
        queue.extend(sibling_calls(src, body, &own));
        walk_stmts(body, &mut |s: &Stmt| {
            for e in crate::pyast::stmt_exprs(s) {
                walk_expr(e, &mut |x: &Expr| {
                    let Expr::Call(c) = x else { return };
                    let Expr::Name(n) = c.func.as_ref() else {
                        return;
                    };
                    if !seen.iter().any(|s| s == n.id.as_str()) && own(n.id.as_str()) {
                        seen.push(n.id.to_string());
                        if let Some(f) = src.module_function(n.id.as_str()) {
                            bodies.push(&f.def.body);
                        }
                    }
                });
            }
        });
    }
    if queue.is_empty() {
        return None;
    }
    let mut taken: Vec<String> = Vec::new();
    // The module each of `taken` comes from.
    let mut taken_from: Vec<String> = Vec::new();
    let mut imports: Vec<String> = Vec::new();
    // Imports and constants added for the helpers, beside the file's own.
    let mut added: HashMap<String, String> = HashMap::new();
    let mut consts: Vec<String> = Vec::new();
    let mut added_consts: HashSet<String> = HashSet::new();
    let mut defs: Vec<(String, String, u32)> = Vec::new();
    let module_names = src.module_names();
    while let Some((local, module, name)) = queue.pop() {
        if taken.contains(&local) || own(&local) || taken.len() >= MAX_BORROWED {
            continue;
        }
        let Some(sibling) = module_beside(src, &module) else {
            continue;
        };
        let sibling = sibling.as_ref();
        let Some(f) = sibling.module_function(&name) else {
            continue;
        };
        let def = f.def;
        // What the helper reads of its module.
        let read = free_names(def);
        let mut new_imports = Vec::new();
        let mut new_consts = Vec::new();
        let mut calls = Vec::new();
        let mut clash = false;
        for n in &read {
            let bound = added.get(n).or_else(|| src.imports.get(n));
            if let Some(full) = sibling.imports.get(n) {
                match bound {
                    Some(ours) if ours == full => {}
                    Some(_) => clash = true,
                    None if module_names.contains(n) => clash = true,
                    None => new_imports.push((n.clone(), full.clone())),
                }
            } else if let Some(c) = sibling.consts.get(n) {
                match src.consts.get(n) {
                    Some(ours) if ours == c => {}
                    Some(_) => clash = true,
                    None if added_consts.contains(n) => {}
                    None if module_names.contains(n) => clash = true,
                    None => new_consts.push(n.clone()),
                }
            } else if sibling.module_function(n).is_some() {
                // A helper of the helper's module, borrowed under its name.
                let same = bound.is_some_and(|b| *b == format!("{module}.{n}"));
                if own(n) || module_names.contains(n) && !taken.contains(n) && !same {
                    clash = true;
                } else {
                    calls.push((n.clone(), module.clone(), n.clone()));
                }
            }
        }
        if clash {
            continue;
        }
        let Some(text) = def_text(sibling, def, &local) else {
            continue;
        };
        for (alias, full) in new_imports {
            imports.push(match full.rsplit_once('.') {
                Some((m, leaf)) if !sibling_module_import(sibling, &alias, &full) => {
                    format!("from {m} import {leaf} as {alias}")
                }
                _ => format!("import {full} as {alias}"),
            });
            added.insert(alias, full);
        }
        for n in new_consts {
            if let Some(s) = constant_statement(sibling, &n) {
                consts.push(s);
                added_consts.insert(n);
            }
        }
        defs.push((text, sibling.name.clone(), sibling.line(def)));
        taken.push(local);
        taken_from.push(module.clone());
        queue.extend(calls);
        // Calls of other siblings' helpers, named as the helper's module
        // names them (`from .entropy import num_zerocross` there).
        for (l, m, n) in sibling_calls(sibling, &def.body, &|_| false) {
            let bound = added.get(&l).or_else(|| src.imports.get(&l));
            if sibling.module_function(&l).is_none()
                && bound.is_none_or(|b| *b == format!("{m}.{n}"))
            {
                queue.push((l, m, n));
            }
        }
    }
    if defs.is_empty() {
        return None;
    }
    let key = format!("{taken:?} {taken_from:?} {imports:?} {consts:?}");
    if let Some(j) = src.borrow_cache.lock().ok()?.joined.get(&key) {
        return Some(Arc::clone(j));
    }
    let mut text = src.text.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("\n# port: helpers of the modules beside this file, as the planner reads them\n");
    for i in &imports {
        text.push_str(i);
        text.push('\n');
    }
    for c in &consts {
        text.push_str(c);
        text.push('\n');
    }
    let mut borrowed = Vec::new();
    // Every piece ends with a newline: the lines so far, counted once.
    let mut lines_so_far = text.lines().count() as u32;
    for (def, file, line) in defs {
        text.push('\n');
        let first = lines_so_far + 2;
        text.push_str(&def);
        if !def.ends_with('\n') {
            text.push('\n');
        }
        lines_so_far = first - 1 + def.lines().count() as u32;
        let last = lines_so_far;
        borrowed.push(Borrowed {
            first,
            last,
            file: Path::new(&file)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or(file),
            line,
        });
    }
    // Only the appended text is parsed (at its offset): the file's own
    // statements are shared as they are.
    let own_len = rustpython_parser::text_size::TextSize::try_from(src.text.len()).ok()?;
    let added = <ast::Suite as rustpython_parser::Parse>::parse_starts_at(
        &text[src.text.len()..],
        &src.name,
        own_len,
    )
    .ok()?;
    let mut suite = (*src.suite).clone();
    call_borrowed_by_name(src, &mut suite, &taken, &taken_from);
    suite.extend(added);
    let lines = rustpython_parser::source_code::LineIndex::from_source_text(&text);
    let mut joined = SourceFile::from_parsed(src.name.clone(), text, suite, lines);
    joined.borrowed = borrowed;
    // The `def`s, last in the text, are what the names mean now.
    for local in &taken {
        joined.imports.remove(local);
    }
    let joined = Arc::new(joined);
    src.borrow_cache
        .lock()
        .ok()?
        .joined
        .insert(key, Arc::clone(&joined));
    Some(joined)
}

/// The calls in `body` of functions of modules beside the file: `f(…)`
/// after `from m import f` (or `from .m import g as f`), as (the name
/// called here, the module, the name there); and `m.f(…)` after `import
/// m` (or `from . import m`), called here `f` when the file gives that
/// name no other meaning ([`module_call`]).
fn sibling_calls(
    src: &SourceFile,
    body: &[Stmt],
    own: &dyn Fn(&str) -> bool,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    walk_stmts(body, &mut |s: &Stmt| {
        for e in crate::pyast::stmt_exprs(s) {
            walk_expr(e, &mut |x: &Expr| {
                let Expr::Call(c) = x else { return };
                match c.func.as_ref() {
                    Expr::Name(n) if !own(n.id.as_str()) => {
                        if let Some((m, name)) = src
                            .imports
                            .get(n.id.as_str())
                            .and_then(|f| f.rsplit_once('.'))
                        {
                            if !m.is_empty() && !m.starts_with('.') {
                                out.push((n.id.to_string(), m.to_string(), name.to_string()));
                            }
                        }
                    }
                    func => {
                        if let Some((module, name)) = module_call(src, func, own) {
                            out.push((name.clone(), module, name));
                        }
                    }
                }
            });
        }
    });
    out
}

/// `m.f` where `m` names a module beside the file (`import m`, `from .
/// import m`): the module and `f`, when the file binds `f` to nothing
/// else, so that the helper can be borrowed, and called, as `f`.
fn module_call(
    src: &SourceFile,
    func: &Expr,
    own: &dyn Fn(&str) -> bool,
) -> Option<(String, String)> {
    let Expr::Attribute(a) = func else {
        return None;
    };
    let Expr::Name(base) = a.value.as_ref() else {
        return None;
    };
    let module = src.imports.get(base.id.as_str())?;
    if module.starts_with('.') || module.is_empty() {
        return None;
    }
    let name = a.attr.as_str();
    let free = !own(name)
        && match src.imports.get(name) {
            Some(full) => *full == format!("{module}.{name}"),
            None => !src.module_names().contains(name),
        };
    free.then(|| (module.clone(), name.to_string()))
}

/// `m.f(…)` as `f(…)` in the file's own functions, for each `f` borrowed
/// from `m` itself (`taken`, from the modules `taken_from`: NumPy's
/// `np.clip` stays NumPy's beside a borrowed `utils.clip`)
/// ([`module_call`]); not in a function that binds `m` itself.
fn call_borrowed_by_name(
    src: &SourceFile,
    suite: &mut [Stmt],
    taken: &[String],
    taken_from: &[String],
) {
    let own = |n: &str| src.module_function(n).is_some();
    for s in suite {
        let Stmt::FunctionDef(f) = s else { continue };
        let mut local = crate::pyast::names_rebound(&f.body);
        local.extend(crate::pyast::param_names(&f.args));
        crate::pyast::walk_body_exprs_mut(&mut f.body, &mut |e: &mut Expr| {
            let Expr::Call(c) = e else { return false };
            let bare = match module_call(src, &c.func, &own) {
                Some((module, name))
                    if taken
                        .iter()
                        .zip(taken_from)
                        .any(|(t, m)| *t == name && *m == module) =>
                {
                    name
                }
                _ => return false,
            };
            let Expr::Attribute(a) = c.func.as_ref() else {
                return false;
            };
            if matches!(a.value.as_ref(), Expr::Name(m) if local.contains(m.id.as_str())) {
                return false;
            }
            let range = a.range;
            *c.func = crate::pyast::name_node(&bare, range, ast::ExprContext::Load);
            // Its arguments may call through a module too.
            false
        });
    }
}

/// `module.py` beside the file ([`crate::source::module_beside`]), kept
/// per module for the file and its copies.
fn module_beside(src: &SourceFile, module: &str) -> Option<Arc<SourceFile>> {
    if let Some(m) = src.borrow_cache.lock().ok()?.modules.get(module) {
        return m.clone();
    }
    let m = crate::source::module_beside(&src.name, module);
    src.borrow_cache
        .lock()
        .ok()?
        .modules
        .insert(module.to_string(), m.clone());
    m
}

/// The names `def` reads that it does not bind (its module's names).
fn free_names(def: &ast::StmtFunctionDef) -> Vec<String> {
    let mut bound: HashSet<String> = crate::pyast::names_rebound(&def.body);
    bound.extend(crate::pyast::positional_params(&def.args));
    bound.extend(def.args.kwonlyargs.iter().map(|a| a.def.arg.to_string()));
    let mut read = crate::pyast::names_in(&def.body);
    read.retain(|n| !bound.contains(n));
    let mut seen = HashSet::new();
    read.retain(|n| seen.insert(n.clone()));
    read
}

/// Whether `alias` is bound in `sibling` by `import full as alias` (a
/// module), rather than `from … import …`.
fn sibling_module_import(sibling: &SourceFile, alias: &str, full: &str) -> bool {
    sibling.suite.iter().any(|s| match s {
        Stmt::Import(i) => i.names.iter().any(|a| {
            a.name.as_str() == full
                && a.asname
                    .as_deref()
                    .unwrap_or(full.split('.').next().unwrap_or(full))
                    == alias
        }),
        _ => false,
    })
}

/// The statement of the module-level constant `name` in `sibling`, as
/// written (the last one binding it).
fn constant_statement(sibling: &SourceFile, name: &str) -> Option<String> {
    sibling
        .suite
        .iter()
        .rev()
        .find(|s| match s {
            Stmt::Assign(a) => {
                matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == name)
            }
            Stmt::AnnAssign(a) => {
                matches!(a.target.as_ref(), Expr::Name(n) if n.id.as_str() == name)
            }
            _ => false,
        })
        .map(|s| sibling.text_of(s).to_string())
}

/// The text of `def` from its `def` keyword (its decorators, `@njit` and
/// the like, left behind), named `local` as this file calls it.
fn def_text(sibling: &SourceFile, def: &ast::StmtFunctionDef, local: &str) -> Option<String> {
    let text = sibling.text_of(def);
    let head = format!("def {}", def.name);
    let at = text.find(&head)?;
    let body = &text[at + head.len()..];
    Some(format!("def {local}{body}"))
}
