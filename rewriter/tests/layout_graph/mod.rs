//! The module graph of a crate's `src/`, read from its text: what the
//! layout tests of every crate check (`rewriter/tests/layout.rs` for the
//! rewriter's stages, `tests/layout.rs` for no cycle in any crate).
//!
//! A dependency is anything that names another module: a `crate::…` or
//! `super::…` path (in a `use` or inline), a bare path through a child
//! module (`grid_stride::NAME` in the module that declares `grid_stride`),
//! and a call of an inherent method defined in another file —
//! `self.parallel_loop(…)` depends on the file that defines `parallel_loop`
//! without naming it. A method reached through a trait depends on the
//! trait's module, which the caller imports. Comments, strings and
//! `#[cfg(test)]` items are not read.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct Module {
    /// `lower::grid_stride`; `crate` for lib.rs.
    pub path: String,
    pub file: PathBuf,
    /// Source with comments, strings and test items blanked out.
    pub code: String,
}

pub fn module(path: &str, text: &str) -> Module {
    Module {
        path: path.to_string(),
        file: PathBuf::from(format!("{}.rs", path.replace("::", "/"))),
        code: strip(text),
    }
}

pub struct Graph {
    pub modules: Vec<Module>,
    /// from → to → why (the first reference found).
    pub edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    /// The modules of the crate whose sources are in `src` (its `lib.rs` or
    /// `main.rs` is `crate`).
    pub fn read(src: &Path) -> Graph {
        let mut files = Vec::new();
        collect_rs(src, &mut files);
        // `bin/` holds other crates; `main.rs` beside a `lib.rs` is one too.
        let has_lib = src.join("lib.rs").exists();
        files.retain(|f| {
            let r = f.strip_prefix(src).expect("under src");
            !(r.starts_with("bin") || has_lib && r == Path::new("main.rs"))
        });
        files.sort();
        let modules = files
            .into_iter()
            .map(|f| {
                let rel = f.strip_prefix(src).expect("under src");
                let text = std::fs::read_to_string(&f).expect("readable source");
                Module {
                    path: module_path(rel),
                    code: strip(&text),
                    file: rel.to_path_buf(),
                }
            })
            .collect();
        Graph::build(modules)
    }

    pub fn build(modules: Vec<Module>) -> Graph {
        let names: BTreeSet<String> = modules.iter().map(|m| m.path.clone()).collect();
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for m in &modules {
            edges.entry(m.path.clone()).or_default();
        }
        let mut add = |from: &str, to: String, why: String| {
            if from != to {
                edges
                    .entry(from.to_string())
                    .or_default()
                    .entry(to)
                    .or_insert(why);
            }
        };
        // The crate root's `pub use` items are its public face, not code
        // that uses the modules: they are no dependences of `crate`, and a
        // path to a re-exported name (`crate::Simulator`) depends on the
        // module that defines it.
        let mut reexports: BTreeMap<String, String> = BTreeMap::new();
        let mut root_code = None;
        if let Some(root) = modules.iter().find(|m| m.path == "crate") {
            let (code, uses) = split_pub_uses(&root.code);
            for u in uses {
                for path in paths(&u, "crate", &names) {
                    let leaf = path.rsplit("::").next().unwrap_or(&path).to_string();
                    reexports.insert(leaf, longest_module(&path, &names));
                }
            }
            root_code = Some(code);
        }
        // Paths. A glob of the parent from an inline module (`mod build {
        // use super::*; }`) names no module.
        for m in &modules {
            let code = match (&root_code, m.path.as_str()) {
                (Some(code), "crate") => code,
                _ => &m.code,
            };
            for path in paths(code, &m.path, &names) {
                if path.is_empty() {
                    continue;
                }
                let mut to = longest_module(&path, &names);
                if to == "crate" {
                    let leaf = path.rsplit("::").next().unwrap_or(&path);
                    if let Some(owner) = reexports.get(leaf) {
                        to = owner.clone();
                    }
                }
                add(&m.path, to, format!("names `{path}`"));
            }
        }
        // Inherent methods called from other files.
        let methods = inherent_methods(&modules);
        for m in &modules {
            let words = words(&m.code);
            for ((ty, name), (owner, takes_self)) in &methods {
                if *owner == m.path || !words.contains(ty.as_str()) {
                    continue;
                }
                let called = (*takes_self && calls_method(&m.code, name))
                    || m.code.contains(&format!("{ty}::{name}("));
                if called {
                    add(&m.path, owner.clone(), format!("calls `{name}`"));
                }
            }
        }
        Graph { modules, edges }
    }

    /// Every strongly connected component of more than one module, as
    /// shortest cycles (with the reason for each step) until each of its
    /// modules is on one.
    pub fn cycles(&self) -> Vec<String> {
        let mut out = Vec::new();
        for scc in self.sccs() {
            if scc.len() < 2 {
                continue;
            }
            let mut text = format!(
                "cycle of {} modules ({}):\n",
                scc.len(),
                scc.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            let mut covered: BTreeSet<String> = BTreeSet::new();
            for start in &scc {
                if covered.contains(start) {
                    continue;
                }
                let cycle = self.shortest_cycle(start, &scc);
                for w in cycle.windows(2) {
                    let why = &self.edges[&w[0]][&w[1]];
                    text.push_str(&format!("    `{}` → `{}` ({why})\n", w[0], w[1]));
                }
                text.push('\n');
                covered.extend(cycle);
            }
            out.push(text);
        }
        out
    }

    fn shortest_cycle(&self, start: &str, scc: &BTreeSet<String>) -> Vec<String> {
        let mut prev: HashMap<String, String> = HashMap::new();
        let mut queue = VecDeque::from([start.to_string()]);
        while let Some(n) = queue.pop_front() {
            for to in self.edges[&n].keys() {
                if !scc.contains(to) {
                    continue;
                }
                if to == start {
                    let mut path = vec![start.to_string()];
                    let mut at = n.clone();
                    while at != start {
                        path.push(at.clone());
                        at = prev[&at].clone();
                    }
                    path.push(start.to_string());
                    path.reverse();
                    return path;
                }
                if !prev.contains_key(to) {
                    prev.insert(to.clone(), n.clone());
                    queue.push_back(to.clone());
                }
            }
        }
        unreachable!("a strongly connected component has a cycle through each module")
    }

    /// Tarjan's algorithm.
    fn sccs(&self) -> Vec<BTreeSet<String>> {
        struct State<'g> {
            g: &'g Graph,
            index: HashMap<&'g str, usize>,
            low: HashMap<&'g str, usize>,
            stack: Vec<&'g str>,
            on_stack: BTreeSet<&'g str>,
            out: Vec<BTreeSet<String>>,
        }
        fn visit<'g>(s: &mut State<'g>, v: &'g str) {
            let k = s.index.len();
            s.index.insert(v, k);
            s.low.insert(v, k);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in s.g.edges[v].keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let l = s.low[w].min(s.low[v]);
                    s.low.insert(v, l);
                } else if s.on_stack.contains(w) {
                    let l = s.index[w].min(s.low[v]);
                    s.low.insert(v, l);
                }
            }
            if s.low[v] == s.index[v] {
                let mut comp = BTreeSet::new();
                loop {
                    let w = s.stack.pop().expect("on the stack");
                    s.on_stack.remove(w);
                    comp.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                s.out.push(comp);
            }
        }
        let mut s = State {
            g: self,
            index: HashMap::new(),
            low: HashMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for v in self.edges.keys() {
            if !s.index.contains_key(v.as_str()) {
                visit(&mut s, v);
            }
        }
        s.out
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable directory") {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            collect_rs(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `lib.rs` (or `main.rs`) → `crate`, `lower/mod.rs` → `lower`, `lower/scan.rs` → `lower::scan`.
fn module_path(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    if parts.is_empty() {
        "crate".to_string()
    } else {
        parts.join("::")
    }
}

/// The parent of a module path (`crate` for a top-level module).
fn parent(module: &str) -> String {
    match module.rsplit_once("::") {
        Some((p, _)) => p.to_string(),
        None => "crate".to_string(),
    }
}

fn join(base: &str, rest: &str) -> String {
    if base == "crate" {
        rest.to_string()
    } else if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}::{rest}")
    }
}

/// Every module path the code names, absolute (without `crate::`):
/// `crate::a::b`, `super::b`, `self::b`, a bare `child::x` for a child
/// module, and each leaf of a `use` tree (`crate::a::{b, c::{d, self}}`).
fn paths(code: &str, me: &str, modules: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let word_start = i == 0 || !is_ident(chars[i - 1]) && chars[i - 1] != ':';
        if !word_start || !is_ident(chars[i]) {
            i += 1;
            continue;
        }
        let (first, next) = ident(&chars, i);
        let path_follows = chars.get(next) == Some(&':') && chars.get(next + 1) == Some(&':');
        if !path_follows {
            i = next;
            continue;
        }
        let (base, rest) = match first.as_str() {
            "crate" => ("crate".to_string(), tree(&chars, next)),
            "self" => (me.to_string(), tree(&chars, next)),
            "super" => {
                // `super::super::x` climbs once per `super`.
                let mut base = parent(me);
                let mut at = next;
                loop {
                    let (seg, after) = ident(&chars, skip_ws(&chars, at + 2));
                    let more = chars.get(after) == Some(&':') && chars.get(after + 1) == Some(&':');
                    if seg != "super" || !more {
                        break;
                    }
                    base = parent(&base);
                    at = after;
                }
                (base, tree(&chars, at))
            }
            _ if modules.contains(&join(me, &first)) => (me.to_string(), tree_from(&chars, i)),
            _ => {
                i = next;
                continue;
            }
        };
        for r in rest {
            out.push(join(&base, &r));
        }
        i = next;
    }
    out
}

/// The paths after `::` at `at` (`::a::b`, `::a::{b, c::d}`), relative.
fn tree(chars: &[char], at: usize) -> Vec<String> {
    if chars.get(at) == Some(&':') && chars.get(at + 1) == Some(&':') {
        tree_from(chars, skip_ws(chars, at + 2))
    } else {
        vec![String::new()]
    }
}

/// The paths starting at `at`: `a::b`, `a::{b, c}`, `{a, b::c}`, `self`, `*`.
fn tree_from(chars: &[char], at: usize) -> Vec<String> {
    let at = skip_ws(chars, at);
    if chars.get(at) == Some(&'{') {
        let mut out = Vec::new();
        let mut k = at + 1;
        loop {
            k = skip_ws(chars, k);
            match chars.get(k) {
                None | Some('}') => break,
                Some(',') => k += 1,
                _ => {
                    out.extend(tree_from(chars, k));
                    // Skip this item, nested braces included.
                    let mut depth = 0;
                    while let Some(&c) = chars.get(k) {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => break,
                            '}' => depth -= 1,
                            ',' if depth == 0 => break,
                            _ => {}
                        }
                        k += 1;
                    }
                }
            }
        }
        return out;
    }
    if !chars.get(at).copied().is_some_and(is_ident) {
        return vec![String::new()];
    }
    let (seg, next) = ident(chars, at);
    let seg = if seg == "self" { String::new() } else { seg };
    tree(chars, next)
        .into_iter()
        .map(|r| match (seg.is_empty(), r.is_empty()) {
            (true, _) => r,
            (false, true) => seg.clone(),
            (false, false) => format!("{seg}::{r}"),
        })
        .collect()
}

fn skip_ws(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    at
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident(chars: &[char], at: usize) -> (String, usize) {
    let mut k = at;
    while chars.get(k).copied().is_some_and(is_ident) {
        k += 1;
    }
    (chars[at..k].iter().collect(), k)
}

/// The module a path lies in: its longest prefix that is a module, else
/// the crate root (`crate::find` is an item of lib.rs).
fn longest_module(path: &str, modules: &BTreeSet<String>) -> String {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|p| modules.contains(p))
        .unwrap_or_else(|| "crate".to_string())
}

/// (type, method) → (module defining it in an inherent `impl`, whether it
/// takes `self`), for types other modules can name (declared `pub`).
/// Trait impls (`impl X for T`) are not inherent.
fn inherent_methods(modules: &[Module]) -> BTreeMap<(String, String), (String, bool)> {
    let public = |ty: &str| {
        modules.iter().any(|m| {
            ["struct", "enum"].iter().any(|kind| {
                let decl = format!("{kind} {ty}");
                m.code.match_indices(&decl).any(|(at, _)| {
                    let whole = !m.code[at + decl.len()..]
                        .chars()
                        .next()
                        .is_some_and(is_ident);
                    let before = m.code[..at].trim_end();
                    let visible = before.ends_with("pub")
                        || before.ends_with(')')
                            && before
                                .rfind("pub(")
                                .is_some_and(|p| !before[p..].contains(char::is_whitespace));
                    whole && visible
                })
            })
        })
    };
    let mut out = BTreeMap::new();
    for m in modules {
        let chars: Vec<char> = m.code.chars().collect();
        let mut i = 0;
        while let Some(k) = find_word(&chars, i, "impl") {
            let Some(open) = (k..chars.len()).find(|&j| chars[j] == '{' || chars[j] == ';') else {
                break;
            };
            let header: String = chars[k + 4..open].iter().collect();
            let close = matching(&chars, open);
            i = open + 1;
            if chars[open] == ';' || header.split_whitespace().any(|w| w == "for") {
                continue;
            }
            // `impl<'a> Lowerer<'a>` → `Lowerer`.
            let header = header.trim_start();
            let header = if header.starts_with('<') {
                skip_generics(header)
            } else {
                header
            };
            let ty: String = header
                .trim_start()
                .chars()
                .take_while(|c| is_ident(*c))
                .collect();
            if ty.is_empty() || !public(&ty) {
                continue;
            }
            // Methods at the top level of the impl body.
            let mut depth = 0;
            let mut j = open + 1;
            while j < close {
                match chars[j] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ if depth == 0 && word_at(&chars, j, "fn") => {
                        let (name, after) = ident(&chars, skip_ws(&chars, j + 2));
                        let params_at = (after..close).find(|&p| chars[p] == '(').unwrap_or(after);
                        let params_end = (params_at..close)
                            .find(|&p| chars[p] == ')')
                            .unwrap_or(close);
                        let params: String = chars[params_at..params_end].iter().collect();
                        let takes_self = params
                            .split(',')
                            .next()
                            .is_some_and(|p| p.split(|c: char| !is_ident(c)).any(|w| w == "self"));
                        out.insert((ty.clone(), name), (m.path.clone(), takes_self));
                        j = after;
                        continue;
                    }
                    _ => {}
                }
                j += 1;
            }
            i = close + 1;
        }
    }
    out
}

fn skip_generics(s: &str) -> &str {
    let mut depth = 0;
    for (k, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &s[k + 1..];
                }
            }
            _ => {}
        }
    }
    s
}

fn matching(chars: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    chars.len()
}

fn word_at(chars: &[char], at: usize, word: &str) -> bool {
    let len = word.chars().count();
    at + len <= chars.len()
        && word.chars().zip(&chars[at..]).all(|(a, &b)| a == b)
        && (at == 0 || !is_ident(chars[at - 1]))
        && !chars.get(at + len).copied().is_some_and(is_ident)
}

fn find_word(chars: &[char], from: usize, word: &str) -> Option<usize> {
    (from..chars.len()).find(|&k| word_at(chars, k, word))
}

/// The identifiers of some code.
fn words(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !is_ident(c))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `.name(` or `.name::<`, the name not part of a longer one.
fn calls_method(code: &str, name: &str) -> bool {
    [format!(".{name}("), format!(".{name}::<")]
        .iter()
        .any(|p| code.contains(p.as_str()))
}

/// The code without comments, string and character literals, and
/// `#[cfg(test)]` items (blanked, so that lines keep their numbers).
pub fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |s: &[char], out: &mut String| {
        for &x in s {
            out.push(if x == '\n' { '\n' } else { ' ' });
        }
    };
    while i < c.len() {
        // Line comment.
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            blank(&c[i..end], &mut out);
            i = end;
            continue;
        }
        // Block comment, nested.
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            let mut k = i;
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            blank(&c[i..k], &mut out);
            i = k;
            continue;
        }
        // Raw strings: r"…", r#"…"#, br#"…"#.
        let raw_at = if c[i] == 'r' {
            Some(i + 1)
        } else if c[i] == 'b' && c.get(i + 1) == Some(&'r') {
            Some(i + 2)
        } else {
            None
        };
        if let Some(h) = raw_at.filter(|_| i == 0 || !is_ident(c[i - 1])) {
            let hashes = (h..c.len()).take_while(|&k| c[k] == '#').count();
            if c.get(h + hashes) == Some(&'"') {
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let close: Vec<char> = close.chars().collect();
                let mut k = h + hashes + 1;
                while k < c.len() && c.get(k..k + close.len()) != Some(&close[..]) {
                    k += 1;
                }
                let end = (k + close.len()).min(c.len());
                blank(&c[i..end], &mut out);
                i = end;
                continue;
            }
        }
        // Strings.
        if c[i] == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            let end = (k + 1).min(c.len());
            blank(&c[i..end], &mut out);
            i = end;
            continue;
        }
        // Character literals (not lifetimes).
        if c[i] == '\'' {
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 2..c.len()).find(|&k| c[k] == '\'').map(|k| k + 1)
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            if let Some(end) = end {
                blank(&c[i..end], &mut out);
                i = end;
                continue;
            }
        }
        out.push(c[i]);
        i += 1;
    }
    strip_test_items(&out)
}

fn strip_test_items(code: &str) -> String {
    let mut c: Vec<char> = code.chars().collect();
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attr.len() <= c.len() {
        if c[i..i + attr.len()] != attr[..] {
            i += 1;
            continue;
        }
        let Some(k) = (i..c.len()).find(|&k| c[k] == '{' || c[k] == ';') else {
            break;
        };
        let end = if c[k] == ';' {
            k + 1
        } else {
            (matching(&c, k) + 1).min(c.len())
        };
        for x in &mut c[i..end] {
            if *x != '\n' {
                *x = ' ';
            }
        }
        i = end;
    }
    c.into_iter().collect()
}

/// The code without its `pub use …;` items (blanked), and those items.
fn split_pub_uses(code: &str) -> (String, Vec<String>) {
    let mut out = code.to_string();
    let mut uses = Vec::new();
    let mut from = 0;
    while let Some(k) = out[from..].find("pub use ").map(|k| k + from) {
        let at_item = out[..k].chars().last().is_none_or(|c| c.is_whitespace());
        let end = out[k..].find(';').map_or(out.len(), |e| k + e + 1);
        if at_item {
            uses.push(out[k + 4..end].to_string());
            let blank: String = out[k..end]
                .chars()
                .map(|c| if c == '\n' { c } else { ' ' })
                .collect();
            out.replace_range(k..end, &blank);
        }
        from = end;
    }
    (out, uses)
}
