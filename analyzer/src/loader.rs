//! Finding and parsing the program: every `.py` under a folder, or a file and
//! every local module it imports, parsed in parallel. A file that does not
//! parse is reported and skipped; it never stops the rest.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustpython_parser::ast::{self, Stmt};
use rustpython_parser::source_code::LineIndex;
use rustpython_parser::text_size::TextSize;
use rustpython_parser::Parse;

use crate::model::ParseErrorReport;

/// Why a program could not be analysed at all (a file that does not parse
/// is a `parse_errors` entry instead).
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    #[error("{0}: no Python files (*.py) found in this folder")]
    NoPython(PathBuf),
    #[error("{0}: {1}")]
    Io(PathBuf, String),
    #[error("could not start the analysis threads: {0}")]
    Threads(String),
}

/// One parsed module of the program.
pub struct Module {
    /// Dotted module name (`pkg.sub.mod`; the entry file's stem for a script).
    pub name: String,
    pub path: PathBuf,
    /// The path as shown to the user.
    pub display: String,
    pub text: String,
    pub suite: Vec<Stmt>,
    pub lines: LineIndex,
    /// Whether this module is a package's `__init__.py`.
    pub is_package: bool,
}

impl Module {
    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: TextSize) -> u32 {
        self.lines.line_index(offset).get()
    }

    /// The source text of a node's range.
    pub fn text_of(&self, range: rustpython_parser::text_size::TextRange) -> &str {
        self.text
            .get(usize::from(range.start())..usize::from(range.end()))
            .unwrap_or("")
    }
}

pub struct Program {
    pub root: PathBuf,
    pub modules: Vec<Module>,
    pub parse_errors: Vec<ParseErrorReport>,
    /// Files that were found, whether or not they parsed.
    pub files_seen: usize,
}

/// Folders never searched for sources: virtual environments, caches, VCS.
const SKIP_DIRS: &[&str] = &[
    "__pycache__",
    "node_modules",
    "site-packages",
    "venv",
    "env",
    "build",
    "dist",
];

/// A program of one in-memory module (for fuzzing and embedding).
pub fn from_bytes(name: &str, bytes: &[u8]) -> Program {
    let path = PathBuf::from(format!("{name}.py"));
    let (modules, parse_errors) = match parse_bytes(name.to_string(), path, bytes) {
        Ok(m) => (vec![m], vec![]),
        Err(e) => (vec![], vec![e]),
    };
    Program {
        root: PathBuf::from("."),
        modules,
        parse_errors,
        files_seen: 1,
    }
}

/// Load `path` (a file or a folder) and the local modules it imports.
pub fn load(path: &Path) -> Result<Program, AnalyzeError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AnalyzeError::NotFound(path.to_path_buf()),
        _ => AnalyzeError::Io(path.to_path_buf(), e.to_string()),
    })?;
    if meta.is_dir() {
        load_folder(path)
    } else {
        load_script(path)
    }
}

fn load_folder(dir: &Path) -> Result<Program, AnalyzeError> {
    let mut files = Vec::new();
    collect_py(dir, &mut files, 0);
    files.sort();
    if files.is_empty() {
        return Err(AnalyzeError::NoPython(dir.to_path_buf()));
    }
    // A folder that is itself a package names its modules from its own name,
    // so `import pkg.sub` inside it resolves. The name is the folder's real
    // one: `port analyze .` inside `pkg/` names `pkg.sub`, not `..sub`.
    let package = dir
        .join("__init__.py")
        .is_file()
        .then(|| {
            dir.canonicalize()
                .ok()?
                .file_name()?
                .to_str()
                .map(String::from)
        })
        .flatten();
    let jobs: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|f| {
            let inner = module_name(dir, &f);
            let name = match &package {
                Some(p) if inner == "__init__" => p.clone(),
                Some(p) => format!("{p}.{inner}"),
                None => inner,
            };
            (name, f)
        })
        .collect();
    let files_seen = jobs.len();
    let (modules, parse_errors) = parse_all(jobs);
    Ok(Program {
        root: dir.to_path_buf(),
        modules,
        parse_errors,
        files_seen,
    })
}

fn collect_py(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 64 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            if name.starts_with('.') || SKIP_DIRS.contains(&name.as_ref()) {
                continue;
            }
            collect_py(&p, out, depth + 1);
        } else if ft.is_file() && name.ends_with(".py") {
            out.push(p);
        }
    }
}

fn module_name(base: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(base).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".py").to_string();
        if last == "__init__" {
            parts.pop();
        }
    }
    if parts.is_empty() {
        "__init__".into()
    } else {
        parts.join(".")
    }
}

/// A script: parse it, then every local module it imports, wave by wave.
fn load_script(file: &Path) -> Result<Program, AnalyzeError> {
    let root = file
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                p.to_path_buf()
            }
        })
        .unwrap_or_else(|| PathBuf::from("."));
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "__main__".into());
    let mut seen: HashSet<PathBuf> = HashSet::new();
    seen.insert(file.to_path_buf());
    let mut wave = vec![(stem, file.to_path_buf())];
    let mut modules = Vec::new();
    let mut parse_errors = Vec::new();
    let mut files_seen = 0;
    while !wave.is_empty() {
        files_seen += wave.len();
        let (parsed, errors) = parse_all(std::mem::take(&mut wave));
        parse_errors.extend(errors);
        for m in &parsed {
            for (name, path) in local_imports(m, &root) {
                if seen.insert(path.clone()) {
                    wave.push((name, path));
                }
            }
        }
        modules.extend(parsed);
    }
    Ok(Program {
        root,
        modules,
        parse_errors,
        files_seen,
    })
}

/// The local modules `m` imports, as (module name, file) pairs found under `root`.
fn local_imports(m: &Module, root: &Path) -> Vec<(String, PathBuf)> {
    let mut names = Vec::new();
    walk_imports(&m.suite, &mut |stmt| match stmt {
        Stmt::Import(i) => {
            for a in &i.names {
                // `import a.b.c` imports a, a.b and a.b.c.
                let full = a.name.as_str();
                let mut acc = String::new();
                for part in full.split('.') {
                    if !acc.is_empty() {
                        acc.push('.');
                    }
                    acc.push_str(part);
                    names.push(acc.clone());
                }
            }
        }
        Stmt::ImportFrom(i) => {
            let level = i.level.map(|l| l.to_u32()).unwrap_or(0);
            let base = resolve_relative(
                &m.name,
                m.is_package,
                level,
                i.module.as_ref().map(|s| s.as_str()),
            );
            if let Some(base) = base {
                for a in &i.names {
                    names.push(format!("{base}.{}", a.name.as_str()));
                }
                names.push(base);
            }
        }
        _ => {}
    });
    let mut out = Vec::new();
    for name in names {
        let rel: PathBuf = name.split('.').collect();
        let as_file = root.join(&rel).with_extension("py");
        let as_pkg = root.join(&rel).join("__init__.py");
        if as_file.is_file() {
            out.push((name, as_file));
        } else if as_pkg.is_file() {
            out.push((name, as_pkg));
        }
    }
    out
}

/// Imports anywhere in a module, including inside functions and `if` blocks.
fn walk_imports(suite: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in suite {
        f(s);
        match s {
            Stmt::FunctionDef(d) => walk_imports(&d.body, f),
            Stmt::AsyncFunctionDef(d) => walk_imports(&d.body, f),
            Stmt::ClassDef(d) => walk_imports(&d.body, f),
            Stmt::If(d) => {
                walk_imports(&d.body, f);
                walk_imports(&d.orelse, f);
            }
            Stmt::Try(d) => {
                walk_imports(&d.body, f);
                for h in &d.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    walk_imports(&h.body, f);
                }
                walk_imports(&d.orelse, f);
                walk_imports(&d.finalbody, f);
            }
            _ => {}
        }
    }
}

/// The absolute module a `from ...x import` names, seen from module `current`.
pub fn resolve_relative(
    current: &str,
    is_package: bool,
    level: u32,
    module: Option<&str>,
) -> Option<String> {
    if level == 0 {
        return module.map(str::to_string);
    }
    let mut parts: Vec<&str> = current.split('.').collect();
    // The package a module lives in is its name minus the last part; a
    // package's __init__ is its own package.
    if !is_package {
        parts.pop();
    }
    for _ in 1..level {
        parts.pop()?;
    }
    let mut base = parts.join(".");
    if let Some(m) = module {
        if !base.is_empty() {
            base.push('.');
        }
        base.push_str(m);
    }
    if base.is_empty() {
        None
    } else {
        Some(base)
    }
}

fn parse_all(jobs: Vec<(String, PathBuf)>) -> (Vec<Module>, Vec<ParseErrorReport>) {
    let results: Vec<Result<Module, ParseErrorReport>> = jobs
        .into_par_iter()
        .map(|(name, path)| parse_file(name, path))
        .collect();
    let mut modules = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(m) => modules.push(m),
            Err(e) => errors.push(e),
        }
    }
    (modules, errors)
}

/// Read and parse one file; every failure becomes a `file:line:col: message`.
pub fn parse_file(name: String, path: PathBuf) -> Result<Module, ParseErrorReport> {
    match std::fs::read(&path) {
        Ok(bytes) => parse_bytes(name, path, &bytes),
        Err(e) => Err(ParseErrorReport {
            file: path.display().to_string(),
            line: 1,
            column: 1,
            message: format!("cannot read: {e}"),
        }),
    }
}

/// Decode and parse source bytes as the module `name` at `path`.
pub fn parse_bytes(name: String, path: PathBuf, bytes: &[u8]) -> Result<Module, ParseErrorReport> {
    let display = path.display().to_string();
    let err = |line: u32, column: u32, message: String| ParseErrorReport {
        file: display.clone(),
        line,
        column,
        message,
    };
    let text = decode_source(bytes).map_err(|(line, column, msg)| err(line, column, msg))?;
    let lines = LineIndex::from_source_text(&text);
    let suite = ast::Suite::parse(&text, &display).map_err(|e| {
        let loc = lines.source_location(e.offset, &text);
        err(loc.row.get(), loc.column.get(), e.error.to_string())
    })?;
    let is_package = path.file_name().is_some_and(|f| f == "__init__.py");
    Ok(Module {
        name,
        display,
        path,
        text,
        suite,
        lines,
        is_package,
    })
}

/// Python source must be text in UTF-8 (PEP 3120): say precisely where it is not.
fn decode_source(bytes: &[u8]) -> Result<String, (u32, u32, String)> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    if let Some(pos) = bytes.iter().position(|&b| b == 0) {
        let (line, col) = line_col(bytes, pos);
        return Err((
            line,
            col,
            "binary file: contains a NUL byte, not Python source".into(),
        ));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => {
            let pos = e.valid_up_to();
            let (line, col) = line_col(bytes, pos);
            Err((
                line,
                col,
                format!(
                    "not valid UTF-8 (byte 0x{:02x} at offset {pos}); Python source must be UTF-8",
                    bytes[pos]
                ),
            ))
        }
    }
}

fn line_col(bytes: &[u8], pos: usize) -> (u32, u32) {
    let before = &bytes[..pos];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() as u32 + 1;
    (line, col)
}

/// Module name → index, for import resolution.
pub fn module_index(modules: &[Module]) -> HashMap<String, usize> {
    modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.clone(), i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_imports_resolve_from_the_package() {
        assert_eq!(
            resolve_relative("pkg.mod", false, 1, Some("util")).as_deref(),
            Some("pkg.util")
        );
        assert_eq!(
            resolve_relative("pkg", true, 1, Some("util")).as_deref(),
            Some("pkg.util")
        );
        assert_eq!(
            resolve_relative("pkg.sub.mod", false, 2, None).as_deref(),
            Some("pkg")
        );
        assert_eq!(resolve_relative("mod", false, 2, None), None);
    }

    #[test]
    fn module_names_follow_the_path() {
        let base = Path::new("/a");
        assert_eq!(module_name(base, Path::new("/a/x/y.py")), "x.y");
        assert_eq!(module_name(base, Path::new("/a/x/__init__.py")), "x");
    }

    #[test]
    fn binary_and_non_utf8_are_located() {
        assert_eq!(decode_source(b"a\nb\0").unwrap_err().0, 2);
        let e = decode_source(b"x = 1\ny = '\xff'\n").unwrap_err();
        assert_eq!((e.0, e.1), (2, 6));
        assert!(e.2.contains("UTF-8"));
    }
}
