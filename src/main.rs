//! `port`: move the hotspots of a Python/NumPy program onto an NVIDIA GPU,
//! safely and measurably. This binary parses the command line and wires the
//! stages together; each stage lives in its own crate.

mod commands;
mod profile_merge;
mod state;
mod tty;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Parsing a large program allocates millions of small AST nodes from two
/// threads at once; mimalloc handles that markedly better than glibc's malloc
/// (see scripts/bench-analyze.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An error the user caused and can fix: printed as one line, exit code 2.
#[derive(Debug)]
pub struct UserError {
    message: String,
}

impl UserError {
    pub fn new(message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}

#[derive(Parser, Debug)]
#[command(
    name = "port",
    version,
    about = "Move the hotspots of a Python/NumPy program onto an NVIDIA GPU, safely and measurably",
    long_about = "port profiles a Python program, classifies every function in Numba's terms \
(object, nopython, cuda) with coded reasons, and migrates the GPU-eligible ones into \
verified CUDA kernels.\n\nState is kept in .port/ in the working directory.",
    after_help = "Exit codes: 0 success · 1 internal error · 2 bad input (missing file, nothing to analyse, unknown code, no permission to sample) · 3 the profiled program failed (its report is still written) · 4 the CI gate of `port report` failed"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Classify every function of a program: object, nopython or cuda, and why.
    Analyze(commands::analyze::AnalyzeArgs),
    /// Explain a finding code (what it means, why, an example, the fix).
    Explain(commands::explain::ExplainArgs),
    /// Print the program's call graph (DOT or JSON).
    Graph(commands::graph::GraphArgs),
    /// Coverage reports and the CI gate: table, JSON, Markdown, HTML, SARIF, DOT.
    Report(commands::report::ReportArgs),
    /// Compile kernel IR (.pir text) to PTX, LLVM IR or verified IR (developer tool).
    Compile(commands::compile::CompileArgs),
    /// Rewrite a function into verified GPU kernels and a patch, or say why not.
    Migrate(commands::migrate::MigrateArgs),
    /// Run migrated kernels again on the GPU (or the simulator), time them, project the gain.
    Verify(commands::verify::VerifyArgs),
}

fn main() -> ExitCode {
    // `port report | head` must end quietly when the reader goes away, as
    // Unix tools do, not panic in println!: restore the default SIGPIPE
    // action that Rust's runtime sets to "ignore".
    // SAFETY: called first thing in main, before any thread exists; it only
    // changes this process's disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Analyze(a) => commands::analyze::run(a),
        Command::Explain(a) => commands::explain::run(a),
        Command::Graph(a) => commands::graph::run(a),
        Command::Compile(a) => commands::compile::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Migrate(a) => commands::migrate::run(a),
        Command::Verify(a) => commands::verify::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.downcast_ref::<commands::migrate::NotVerified>().is_some() {
                // Already reported on stdout: refused, mismatch or failed
                // (migrate), or a function that did not verify (verify).
                ExitCode::from(1)
            } else if let Some(g) = e.downcast_ref::<commands::report::GateFailure>() {
                eprintln!("port: {g}");
                ExitCode::from(commands::report::GATE_EXIT_CODE)
            } else if let Some(u) = e.downcast_ref::<UserError>() {
                eprintln!("port: {u}");
                ExitCode::from(2)
            } else if let Some(f) = e.downcast_ref::<commands::analyze::AppFailed>() {
                eprintln!("port: {f}");
                ExitCode::from(3)
            } else {
                eprintln!("port: {e:#}");
                ExitCode::from(1)
            }
        }
    }
}
