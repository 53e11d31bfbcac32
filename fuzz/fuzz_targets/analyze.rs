//! Arbitrary bytes through decode → parse → symbols → classify → call graph.
//! Any panic is a bug: bad input must become a parse error or a verdict.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let a = port_analyzer::analyze_bytes("fuzz", data);
    for f in &a.functions {
        assert!(f.line <= f.end_line);
    }
});
