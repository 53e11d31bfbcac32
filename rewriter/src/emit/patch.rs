//! The patch: the user's file with the function replaced by its migrated
//! form (kernels, device functions, wrapper), the imports and launch helpers
//! it needs added once, and the unified diff between the two.

use rustpython_parser::ast;

use super::helpers;
use super::python::original_name;
use crate::source::SourceFile;

/// The new file text with `def_node`'s lines replaced by the original
/// function under [`original_name`], then `migrated`, with the helpers they
/// call that the file lacks put before them.
pub fn patched_file(src: &SourceFile, def: &ast::StmtFunctionDef, migrated: &str) -> String {
    let text = &src.text;
    let def_line = src.line(def) as usize;
    let first_line = def
        .decorator_list
        .iter()
        .map(|d| src.line(d) as usize)
        .chain(std::iter::once(def_line))
        .min()
        .unwrap_or(1);
    let last_line = src.end_line(def) as usize;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let last_line = last_line.min(lines.len());
    let before: String = lines[..first_line - 1].concat();
    let after: String = lines[last_line..].concat();
    // The file's line ending, which the new lines take too.
    let eol = if lines.first().is_some_and(|l| l.ends_with("\r\n")) {
        "\r\n"
    } else {
        "\n"
    };

    // The original as the user wrote it, under its private name.
    let mut original = String::new();
    for (k, line) in lines[first_line - 1..last_line].iter().enumerate() {
        if k + first_line == def_line {
            let name = def.name.as_str();
            original.push_str(&line.replacen(
                &format!("def {name}"),
                &format!("def {}", original_name(name)),
                1,
            ));
        } else {
            original.push_str(line);
        }
    }
    let original = original.trim_end().replace("\r\n", "\n");

    let helpers = helpers::needed(migrated, text);
    let mut block = helpers.clone();
    block.push_str(&original);
    block.push_str("\n\n\n");
    block.push_str(migrated.trim_end());
    block.push('\n');
    let block = block.replace('\n', eol);

    let mut new = String::new();
    new.push_str(&before);
    new.push_str(&block);
    new.push_str(&after);
    // The original's names are the file's own: only the new code's count.
    add_imports(src, &new, &format!("{helpers}{migrated}"), eol)
}

/// Adds `import math`, `import numpy as np` and `from numba import …` when
/// the file lacks them, after its last top-level import.
fn add_imports(src: &SourceFile, new: &str, code: &str, eol: &str) -> String {
    let mut needed: Vec<String> = Vec::new();
    // `math.` not preceded by a `c` (that is `cmath.`).
    let uses = |module: &str| {
        code.match_indices(&format!("{module}."))
            .any(|(k, _)| !code[..k].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    for module in ["math", "cmath"] {
        if uses(module) && src.imports.get(module).map(String::as_str) != Some(module) {
            needed.push(format!("import {module}"));
        }
    }
    if src.imports.get("np").map(String::as_str) != Some("numpy") {
        needed.push("import numpy as np".into());
    }
    let numba: Vec<&str> = super::python::numba_names(code)
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
    for s in src.suite.iter() {
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
        out.push_str(eol);
    }
    for n in needed {
        out.push_str(&n);
        out.push_str(eol);
    }
    if k == 0 {
        out.push_str(eol);
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
