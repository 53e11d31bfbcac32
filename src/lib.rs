//! `port`'s command line: parses it and wires the stages together; each
//! stage lives in its own crate. Two binaries share it: `port`, which runs
//! the commands that need no LLVM (`analyze`, `explain`, `graph`, `report`)
//! and hands the others to `port-backend` beside it, so that a profiled run
//! does not pay for loading libLLVM (14 ms on every start); and
//! `port-backend`, which runs them all. See [`cli`].

pub mod capture_hints;
pub mod cli;
pub mod commands;
pub mod profile_merge;
pub mod state;
pub mod tty;

use std::sync::atomic::{AtomicBool, Ordering};

/// Parsing a large program allocates millions of small AST nodes from two
/// threads at once; mimalloc handles that markedly better than glibc's malloc
/// (see scripts/bench-analyze.sh). Built with `no_thp`: mimalloc otherwise
/// asks for transparent huge pages for its heap, and each first touch then
/// zeroes (and on a fragmented machine compacts) 2 MiB, about nine times in
/// a short `port analyze` run, on the cores the profiled app runs on. Only
/// port's own heap: the app's Python keeps the system's setting.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An error the user caused and can fix: printed as one line, exit code 2.
/// Its `code` is what `--json` reports (`bad_input` unless said).
#[derive(Debug)]
pub struct UserError {
    message: String,
    code: &'static str,
}

impl UserError {
    pub fn new(message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
            code: "bad_input",
        }
    }

    /// An error with a more precise code (`bad_signature`,
    /// `unsupported_captured_type`, …).
    pub fn coded(code: &'static str, message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
            code,
        }
    }
}

/// Set once a command has printed its JSON document on stdout: an error
/// after that (a refused migration, a failed CI gate, a profiled program
/// that failed) adds no second document.
pub(crate) static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

/// Commands call this right after printing their `--json` document.
pub fn json_printed() {
    JSON_PRINTED.store(true, Ordering::SeqCst);
}

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}
