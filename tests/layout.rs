//! Every crate's modules depend on each other one way, and no source file
//! grows past what one person can hold: the layout rules of
//! ARCHITECTURE.md, checked on the code itself.
//!
//! - `no_crate_has_a_module_cycle`: the module graph of each crate's
//!   `src/` (read as `rewriter/tests/layout_graph` reads it: paths, `use`
//!   trees, inherent methods called across files) has no cycle. The
//!   rewriter's own test also checks its stages' order.
//! - `no_source_file_is_over_1500_lines`: outside tests.

#[path = "../rewriter/tests/layout_graph/mod.rs"]
mod layout_graph;

use std::path::{Path, PathBuf};

use layout_graph::{module, Graph};

/// The workspace's crates, by folder (`.` is the `port` binaries).
const CRATES: &[&str] = &[
    ".", "profiler", "reaper", "analyzer", "rewriter", "codegen", "verify", "reports",
];

/// The most lines a source file may have, outside tests.
const MAX_LINES: usize = 1500;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut problems = Vec::new();
    for c in CRATES {
        let g = Graph::read(&root().join(c).join("src"));
        for cycle in g.cycles() {
            problems.push(format!("in {c}/src: {cycle}"));
        }
    }
    assert!(
        problems.is_empty(),
        "modules depend on each other in a cycle; move what both use into a \
         module of its own, or pass it in:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_source_file_is_over_1500_lines() {
    let mut long = Vec::new();
    for c in CRATES {
        let mut files = Vec::new();
        rs_files(&root().join(c).join("src"), &mut files);
        for f in files {
            let n = std::fs::read_to_string(&f)
                .expect("readable source")
                .lines()
                .count();
            if n > MAX_LINES {
                long.push(format!(
                    "{} ({n} lines)",
                    f.strip_prefix(root()).unwrap_or(&f).display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines; split them where the code has \
         a seam (a pass, a kind of node, a format):\n{}",
        long.join("\n")
    );
}

/// The test can fail: a cycle through a `use` and a `super::` path is found.
#[test]
fn a_cycle_between_two_modules_is_found() {
    let g = Graph::build(vec![
        module("gate", "use crate::report::Summary;\npub fn gate() {}"),
        module(
            "report",
            "pub struct Summary;\nfn f() { super::gate::gate() }",
        ),
        module("terminal", "use crate::report::Summary;"),
    ]);
    let cycles = g.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].contains("`gate` → `report`"), "{}", cycles[0]);
    assert!(!cycles[0].contains("terminal"), "{}", cycles[0]);
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable directory") {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
