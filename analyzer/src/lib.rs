//! The analyzer: parses every module of a Python program (rustpython-parser),
//! builds symbol tables, resolves imports and the call graph (petgraph),
//! infers types inside each function from their use, and classifies every
//! function in Numba's terms — `object`, `nopython`, `cuda` — with a coded
//! finding for every reason.
//!
//! Entry point: [`analyze`]. Its output, [`model::Analysis`], is plain data:
//! it is what `.port/analysis.json` holds and what later stages read.
//!
//! Architecture invariants: the analyzer never runs the user's code and never
//! writes files; a file that fails to parse is reported and skipped, never
//! fatal; recursion into the AST is bounded ([`walk::MAX_DEPTH`]) and runs
//! on threads with large stacks, so no input can overflow the stack.

pub mod callgraph;
pub mod classify;
pub mod deps;
pub mod indexset;
pub mod loader;
pub mod model;
pub mod rules;
pub mod support;
pub mod symbols;
pub mod ty;
pub mod walk;
pub mod work;

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

pub use loader::AnalyzeError;
pub use model::{
    Analysis, ArgType, Finding, FunctionReport, PlanCheck, PlanStatus, Severity, Verdict,
};

/// Stack size of the analysis threads: deep enough for any expression the
/// parser accepts, given [`walk::MAX_DEPTH`]. A caller that parses on a
/// thread of its own (`loader::parse_file`) gives it this much too.
pub const STACK_BYTES: usize = 256 << 20;

/// Options for one analysis.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// Argument types seen in real calls, by function key (`module.qualname`).
    pub captured: HashMap<String, Vec<ArgType>>,
}

/// Analyse a file (and the local modules it imports) or a folder.
pub fn analyze(path: &Path, opts: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    analyze_then(path, opts, |_, modules| {
        modules.into_par_iter().for_each(drop)
    })
}

/// [`analyze`], then `then` with the analysis and the parsed modules, on
/// the analysis's large-stack thread pool (a `par_iter` in `then` uses it).
/// `then` owns the modules: it drops them, on the pool, when it is done
/// (dropping a syntax tree recurses). The planner's pass over every
/// function reads the trees the analysis parsed rather than parsing again.
pub fn analyze_then(
    path: &Path,
    opts: &AnalyzeOptions,
    then: impl FnOnce(&mut Analysis, Vec<loader::Module>) + Send,
) -> Result<Analysis, AnalyzeError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(STACK_BYTES)
        .thread_name(|i| format!("port-analyze-{i}"))
        .build()
        .map_err(|e| AnalyzeError::Threads(e.to_string()))?;
    // The whole analysis, parse trees included (whose drop is recursive),
    // lives on the pool's large-stack threads.
    pool.install(|| {
        let program = loader::load(path)?;
        let (mut analysis, modules) = analyze_program(program, &path.display().to_string(), opts);
        then(&mut analysis, modules);
        Ok(analysis)
    })
}

/// Analyse source bytes as one module named `name`, on the calling thread
/// (which must have a large stack for deeply nested input: see
/// [`analyze`]). This is the fuzz target's entry point.
pub fn analyze_bytes(name: &str, bytes: &[u8]) -> Analysis {
    analyze_program(
        loader::from_bytes(name, bytes),
        name,
        &AnalyzeOptions::default(),
    )
    .0
}

fn analyze_program(
    program: loader::Program,
    root: &str,
    opts: &AnalyzeOptions,
) -> (Analysis, Vec<loader::Module>) {
    let loader::Program {
        modules,
        parse_errors,
        ..
    } = program;
    let syms = symbols::SymbolTable::build(&modules);

    let facts: Vec<classify::FunctionFacts> = (0..syms.functions.len())
        .into_par_iter()
        .map(|fi| {
            let f = &syms.functions[fi];
            let m = &modules[f.module];
            let captured = opts.captured.get(&f.key).map(Vec::as_slice);
            classify::Checker::new(m, &syms, fi, captured).run()
        })
        .collect();
    let keys: Vec<String> = syms.functions.iter().map(|f| f.key.clone()).collect();
    let app_calls: Vec<Vec<(usize, u32)>> = facts.iter().map(|f| f.app_calls.clone()).collect();
    let ext_calls: Vec<Vec<(String, u32)>> =
        facts.iter().map(|f| f.external_calls.clone()).collect();
    let graph = callgraph::CallGraph::build(&keys, &app_calls, &ext_calls);

    let mut findings: Vec<Vec<Finding>> = Vec::with_capacity(facts.len());
    let mut liftable = Vec::with_capacity(facts.len());
    for f in facts {
        findings.push(f.findings);
        liftable.push(f.liftable_loops);
    }
    for (f, line, callee) in graph.recursive() {
        let rule = rules::rule("PORT202").expect("catalogued");
        let msg = if callee == keys[f] {
            "calls itself: recursion cannot become a kernel".to_string()
        } else {
            format!("recursion through `{callee}`: recursion cannot become a kernel")
        };
        findings[f].push(Finding {
            code: rule.code.into(),
            severity: rule.severity,
            line,
            message: msg,
        });
    }
    let mut verdicts: Vec<Verdict> = findings.iter().map(|f| classify::verdict_of(f)).collect();
    let names: Vec<String> = syms.functions.iter().map(|f| f.qualname.clone()).collect();
    graph.propagate(&mut verdicts, &mut findings, &names);

    let mut functions: Vec<FunctionReport> = syms
        .functions
        .iter()
        .zip(findings)
        .zip(liftable)
        .zip(verdicts)
        .map(|(((f, mut findings), liftable), verdict)| {
            findings.sort_by_key(|x| (x.severity, x.line));
            // Liftable loops only mean something in object mode; a callee
            // that drags the function into object mode keeps them listed.
            let liftable_loops = if verdict == Verdict::Object {
                liftable
            } else {
                Vec::new()
            };
            let m = &modules[f.module];
            FunctionReport {
                name: f.name.clone(),
                qualname: f.qualname.clone(),
                module: m.name.clone(),
                file: m.display.clone(),
                line: f.line,
                end_line: f.end_line,
                verdict,
                findings,
                liftable_loops,
                self_pct: None,
                total_pct: None,
                types: opts.captured.get(&f.key).cloned(),
                migration_plan: None,
            }
        })
        .collect();
    functions.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));

    let mut files: Vec<String> = modules.iter().map(|m| m.display.clone()).collect();
    files.sort();
    let coverage = Analysis::static_coverage(&functions);
    let mut parse_errors = parse_errors;
    parse_errors.sort_by(|a, b| a.file.cmp(&b.file));
    let call_graph = graph.report();
    drop(syms);
    let analysis = Analysis {
        schema: model::ANALYSIS_SCHEMA.into(),
        root: root.to_string(),
        profiled: false,
        files,
        functions,
        call_graph,
        coverage,
        parse_errors,
        profile: None,
    };
    (analysis, modules)
}

/// Count the lines of every file an analysis of `path` would read (for the
/// throughput benchmark's denominator).
pub fn count_lines(path: &Path) -> Result<(usize, usize), AnalyzeError> {
    let program = loader::load(path)?;
    let lines = program.modules.iter().map(|m| m.text.lines().count()).sum();
    Ok((program.files_seen, lines))
}
