//! Arbitrary bytes as a Python file through the static pass *with the
//! planner*: the analysis, then `port_rewriter::verdicts`, which plans every
//! function worth asking about with the types the program's calls and the
//! bodies imply (desugar → admit → lower → finish). Any panic is a bug: bad
//! input must become a parse error, a verdict or a refusal.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// One file per fuzzing process, rewritten for each input (the planner
/// reads the program from disk, as `port analyze --static` does).
fn file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("port-fuzz-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        dir.join("fuzz.py")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = file();
    if std::fs::write(path, data).is_err() {
        return;
    }
    let opts = port_analyzer::AnalyzeOptions::default();
    if let Ok(a) = port_rewriter::verdicts::analyze(path, &opts) {
        for f in &a.functions {
            assert!(f.line <= f.end_line);
        }
    }
});
