//! The patch: the user's file with the function replaced by its migrated
//! form (kernels, device functions, wrapper), the imports and launch helpers
//! it needs added once, and the unified diff between the two.

use rustpython_parser::ast;

use super::python::{
    FILL_HELPERS, HELPERS, HELPER_NAMES, LINALG_HELPERS, MATMUL_HELPER, RINT_HELPER, UNBROADCAST,
};
use crate::source::SourceFile;

/// The new file text with `def_node`'s lines replaced by `migrated`.
pub fn patched_file(
    src: &SourceFile,
    def: &ast::StmtFunctionDef,
    migrated: &str,
    ufunc: bool,
) -> String {
    let text = &src.text;
    let first_line = def
        .decorator_list
        .iter()
        .map(|d| src.line(d))
        .chain(std::iter::once(src.line(def)))
        .min()
        .unwrap_or(1) as usize;
    let last_line = src.end_line(def) as usize;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let before: String = lines[..first_line - 1].concat();
    let after: String = lines[last_line.min(lines.len())..].concat();

    let mut block = String::new();
    let mut helpers = String::new();
    if !HELPER_NAMES
        .iter()
        .all(|h| text.contains(&format!("def {h}(")))
    {
        helpers.push_str(HELPERS);
    }
    if ufunc && !text.contains("def _port_unbroadcast(") {
        if !helpers.is_empty() {
            helpers.push_str("\n\n");
        }
        helpers.push_str(UNBROADCAST);
    }
    // Library steps' helpers, when the wrapper calls one.
    let calls_library = [
        "_port_cholesky(",
        "_port_solve(",
        "_port_inv(",
        "_port_det(",
        "_port_lstsq(",
        "_port_matmul(",
    ]
    .iter()
    .any(|h| migrated.contains(h));
    if calls_library && !text.contains("def _port_linalg(") {
        if !helpers.is_empty() {
            helpers.push_str("\n\n");
        }
        helpers.push_str(LINALG_HELPERS);
    }
    if migrated.contains("_port_matmul(") && !text.contains("def _port_matmul(") {
        if !helpers.is_empty() {
            helpers.push_str("\n\n");
        }
        helpers.push_str(MATMUL_HELPER);
    }
    if migrated.contains("_port_full(") && !text.contains("def _port_full(") {
        if !helpers.is_empty() {
            helpers.push_str("\n\n");
        }
        helpers.push_str(FILL_HELPERS);
    }
    if migrated.contains("_port_rint(") && !text.contains("def _port_rint(") {
        if !helpers.is_empty() {
            helpers.push_str("\n\n");
        }
        helpers.push_str(RINT_HELPER);
    }
    if !helpers.is_empty() {
        block.push_str(&helpers);
        block.push_str("\n\n");
    }
    block.push_str(migrated.trim_end());
    block.push('\n');

    let mut new = String::new();
    new.push_str(&before);
    new.push_str(&block);
    new.push_str(&after);
    add_imports(src, &new, migrated)
}

/// Adds `import math`, `import numpy as np` and `from numba import …` when
/// the file lacks them, after its last top-level import.
fn add_imports(src: &SourceFile, new: &str, migrated: &str) -> String {
    let mut needed: Vec<String> = Vec::new();
    // `math.` not preceded by a `c` (that is `cmath.`).
    let uses = |module: &str| {
        migrated
            .match_indices(&format!("{module}."))
            .any(|(k, _)| !migrated[..k].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    for module in ["math", "cmath"] {
        if uses(module) && src.imports.get(module).map(String::as_str) != Some(module) {
            needed.push(format!("import {module}"));
        }
    }
    if src.imports.get("np").map(String::as_str) != Some("numpy") {
        needed.push("import numpy as np".into());
    }
    let numba: Vec<&str> = super::python::numba_names(migrated)
        .into_iter()
        .filter(|n| {
            let want = if *n == "cuda" {
                "numba.cuda".to_string()
            } else {
                format!("numba.{n}")
            };
            src.imports.get(*n) != Some(&want)
        })
        .collect();
    if !numba.is_empty() {
        needed.push(format!("from numba import {}", numba.join(", ")));
    }
    if needed.is_empty() {
        return new.to_string();
    }
    // After the last top-level import that precedes any function.
    let mut insert_after = 0usize;
    for s in &src.suite {
        match s {
            ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) => {
                insert_after = src.end_line(s) as usize;
            }
            ast::Stmt::Expr(_) if insert_after == 0 && crate::pyast::is_docstring(s) => {
                insert_after = src.end_line(s) as usize;
            }
            ast::Stmt::FunctionDef(_) | ast::Stmt::ClassDef(_) => break,
            _ => {}
        }
    }
    let lines: Vec<&str> = new.split_inclusive('\n').collect();
    let k = insert_after.min(lines.len());
    let mut out: String = lines[..k].concat();
    if k > 0 && !out.ends_with('\n') {
        out.push('\n');
    }
    for n in needed {
        out.push_str(&n);
        out.push('\n');
    }
    if k == 0 {
        out.push('\n');
    }
    out.push_str(&lines[k..].concat());
    out
}

/// A unified diff (`--- a/FILE`, `+++ b/FILE`).
pub fn unified_diff(file: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{file}"), &format!("b/{file}"))
        .to_string()
}

/// The SHA-256 of a file's content, hex: how `--write` knows the file did
/// not change since the analysis.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
