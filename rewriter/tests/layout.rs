//! The rewriter's file layout is its pipeline: one module per pass, every
//! dependency pointing one way. This test reads `rewriter/src`, builds the
//! module graph (`layout_graph`: what counts as a dependency) and fails,
//! naming the modules, when
//!
//! - the graph has a cycle (`module_graph_is_a_dag`), or
//! - a module depends on a later stage (`stages_depend_only_on_earlier_ones`).

mod layout_graph;

use std::path::Path;

use layout_graph::{module, Graph};

/// The stages, in the order they may depend on each other: a module uses
/// only modules of its own stage (without a cycle) or of earlier ones.
/// A module is placed by its first path segment (`lower::grid_stride` is
/// in `lower`); `crate` is `lib.rs`.
const STAGES: &[(&str, &[&str])] = &[
    // What every stage reads: the parsed program, its types, the refusals,
    // the kernel-IR helpers and the plan the stages fill.
    (
        "foundation",
        &[
            "error",
            "source",
            "siblings",
            "pyast",
            "types",
            "dtypes",
            "numba_declared",
            "signature",
            "call_types",
            "ir_util",
            "launch",
            "plan",
        ],
    ),
    // Array values with NumPy's meaning: templates, views, broadcasting,
    // promotion, ufuncs. No lowering state.
    ("numpy", &["numpy"]),
    // Which loops have independent iterations.
    ("dependences", &["dependences"]),
    // The lowering context, then the passes that make kernels.
    ("lower", &["lower"]),
    // Host steps around the kernels: control flow, names, allocations.
    ("schedule", &["schedule"]),
    // The front end: walks the Python AST and hands each construct to the
    // pass that takes it; the only module that sees every pass.
    ("lift", &["lift"]),
    // The plan printed as Python, and the patch.
    ("emit", &["emit"]),
    // The entry points and the list of named rewrites.
    (
        "driver",
        &["crate", "request", "pipeline", "rewrites", "verdicts"],
    ),
];

#[test]
fn module_graph_is_a_dag() {
    let graph = read();
    let cycles = graph.cycles();
    assert!(
        cycles.is_empty(),
        "the rewriter's modules depend on each other in a cycle; a pass may use \
         the context and lower passes, and reach the front end only through \
         the context's trait:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn stages_depend_only_on_earlier_ones() {
    let problems = stage_problems(&read());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The graph, for reading: `cargo test -p port-rewriter --test layout --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn print_graph() {
    let g = read();
    for (from, tos) in &g.edges {
        let stage = stage_of(from).map_or("?", |s| STAGES[s].0);
        println!("{from} [{stage}]");
        for (to, why) in tos {
            println!("    → {to} ({why})");
        }
    }
}

/// The test can fail: a cycle and a backward dependency are found in a
/// small made-up crate, and comments and strings are no dependences.
#[test]
fn finds_cycles_and_backward_dependencies() {
    let modules = vec![
        module(
            "lift",
            "use crate::lower::context::Lowerer;\n\
             impl Lowerer<'_> { pub fn expr(&mut self) { self.go() } }",
        ),
        module(
            "lower::context",
            "pub struct Lowerer<'a>(&'a str);\n\
             // Not dependences: crate::lift::expr, self.go()\n\
             const S: &str = \"crate::lift\";\n\
             impl Lowerer<'_> { fn fresh(&self) {} }",
        ),
        module(
            "lower::grid_stride",
            "use crate::lower::context::Lowerer;\n\
             impl Lowerer<'_> { fn go(&mut self) { self.expr(); } }",
        ),
    ];
    let g = Graph::build(modules);
    let cycles = g.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].contains("`lower::grid_stride` → `lift` (calls `expr`)"),
        "{}",
        cycles[0]
    );
    assert!(g.edges["lower::grid_stride"].contains_key("lower::context"));
    assert!(
        g.edges["lower::context"].is_empty(),
        "{:?}",
        g.edges["lower::context"]
    );
    let problems = stage_problems(&g);
    assert_eq!(
        problems,
        ["`lower::grid_stride` (lower) depends on `lift` (lift), a later stage: calls `expr`"]
    );
}

fn stage_of(module: &str) -> Option<usize> {
    let first = module.split("::").next().unwrap_or(module);
    STAGES.iter().position(|(_, ms)| ms.contains(&first))
}

fn read() -> Graph {
    Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Modules in no stage, and dependencies on a later stage.
fn stage_problems(g: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for m in &g.modules {
        if stage_of(&m.path).is_none() {
            problems.push(format!(
                "`{}` ({}) belongs to no stage: add it to STAGES in tests/layout.rs",
                m.path,
                m.file.display()
            ));
        }
    }
    for (from, tos) in &g.edges {
        let Some(sf) = stage_of(from) else { continue };
        for (to, why) in tos {
            let Some(st) = stage_of(to) else { continue };
            if st > sf {
                problems.push(format!(
                    "`{from}` ({}) depends on `{to}` ({}), a later stage: {why}",
                    STAGES[sf].0, STAGES[st].0
                ));
            }
        }
    }
    problems
}
