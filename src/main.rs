//! `port`: move the hotspots of a Python/NumPy program onto an NVIDIA GPU,
//! safely and measurably. This binary parses the command line and wires the
//! stages together; each stage lives in its own crate.

mod commands;
mod profile_merge;
mod state;
mod tty;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};

/// Parsing a large program allocates millions of small AST nodes from two
/// threads at once; mimalloc handles that markedly better than glibc's malloc
/// (see scripts/bench-analyze.sh).
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
static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

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

#[derive(Parser, Debug)]
#[command(
    name = "port",
    version,
    about = "Move the hotspots of a Python/NumPy program onto an NVIDIA GPU, safely and measurably",
    long_about = "port profiles a Python program, classifies every function in Numba's terms \
(object, nopython, cuda) with coded reasons, and migrates the GPU-eligible ones into \
verified CUDA kernels.\n\nState is kept in .port/ in the working directory.",
    after_help = "Exit codes: 0 success · 1 internal error, or a migration that did not verify · 2 bad input (missing file, nothing to analyse, unknown code, no permission to sample) · 3 the profiled program failed (its report is still written) · 4 the CI gate of `port report` failed · 5 a verification was inconclusive (the original does not reproduce itself on those inputs: nothing verified)"
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return bad_arguments(e),
    };
    let json = cli.command.json_on_stdout();
    let result = match &cli.command {
        Command::Analyze(a) => commands::analyze::run(a),
        Command::Explain(a) => commands::explain::run(a),
        Command::Graph(a) => commands::graph::run(a),
        Command::Compile(a) => commands::compile::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Migrate(a) => commands::migrate::run(a),
        Command::Verify(a) => commands::verify::run(a),
    };
    let Err(e) = result else {
        return ExitCode::SUCCESS;
    };
    let (code, exit) = if let Some(n) = e.downcast_ref::<commands::migrate::NotVerified>() {
        // Already reported on stdout: refused, mismatch, inconclusive or
        // failed (migrate), or a function that did not verify (verify).
        ("not_verified", n.exit)
    } else if let Some(g) = e.downcast_ref::<commands::report::GateFailure>() {
        eprintln!("port: {g}");
        ("gate_failed", commands::report::GATE_EXIT_CODE)
    } else if let Some(u) = e.downcast_ref::<UserError>() {
        eprintln!("port: {u}");
        (u.code, 2)
    } else if let Some(f) = e.downcast_ref::<commands::analyze::AppFailed>() {
        eprintln!("port: {f}");
        ("app_failed", 3)
    } else {
        eprintln!("port: {e:#}");
        ("internal_error", 1)
    };
    if json && !JSON_PRINTED.load(Ordering::SeqCst) {
        print_json_error(cli.command.name(), code, exit, &format!("{e:#}"));
    }
    ExitCode::from(exit)
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Analyze(_) => "analyze",
            Command::Explain(_) => "explain",
            Command::Graph(_) => "graph",
            Command::Report(_) => "report",
            Command::Compile(_) => "compile",
            Command::Migrate(_) => "migrate",
            Command::Verify(_) => "verify",
        }
    }

    /// Whether this command's stdout is one JSON document.
    fn json_on_stdout(&self) -> bool {
        match self {
            Command::Analyze(a) => a.json,
            Command::Explain(a) => a.json,
            Command::Graph(a) => matches!(a.format, commands::graph::GraphFormat::Json),
            Command::Report(a) => {
                a.format == commands::report::ReportFormat::Json && a.output.is_none()
            }
            Command::Compile(_) => false,
            Command::Migrate(a) => a.json,
            Command::Verify(a) => a.json,
        }
    }
}

/// The one JSON document of a command that failed before it could print
/// its own: `{"schema": "port.error/1", "status": "failed", ...}`.
fn print_json_error(command: &str, code: &str, exit: u8, reason: &str) {
    let doc = serde_json::json!({
        "schema": "port.error/1",
        "command": command,
        "status": "failed",
        "code": code,
        "exit_code": exit,
        "reason": reason,
    });
    println!("{doc}");
}

/// Command-line mistakes as clap reports them (exit 2); with `--json` (or
/// `--format json`) among the arguments, also as the JSON document.
fn bad_arguments(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    {
        e.exit();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().enumerate().any(|(k, a)| {
        a == "--json"
            || a == "--format=json"
            || (a == "--format" && args.get(k + 1).is_some_and(|f| f == "json"))
    });
    let _ = e.print();
    if json {
        let rendered = e.render().to_string();
        // clap's message up to its usage lines, on one line.
        let reason = rendered
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ")
            .trim_start_matches("error: ")
            .to_string();
        let command = args
            .iter()
            .find(|a| !a.starts_with('-'))
            .map_or("port", String::as_str);
        print_json_error(command, "bad_arguments", 2, &reason);
    }
    ExitCode::from(2)
}
