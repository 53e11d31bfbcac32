//! The command line both binaries parse, and its error handling: one line
//! on stderr and an exit code, and with `--json` one JSON document on
//! stdout, on every outcome.
//!
//! Invariant: nothing here calls into LLVM (port-codegen's `lower`, `ptx`,
//! `sim`; port-verify's runs). The commands that do — `compile`, `migrate`,
//! `verify` — are reached only through the `backend` function the binary
//! passes to [`main`], so the `port` binary, whose `backend` execs
//! `port-backend`, links no libLLVM (`tests/binaries.rs` checks it).

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::{Parser, Subcommand};

use crate::{commands, UserError, JSON_PRINTED};

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
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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

/// Parses the command line and runs its command: `compile`, `migrate` and
/// `verify` through `backend` (see the module's invariant), the others
/// here; then reports an error as one line (and with `--json` one JSON
/// document) and returns the exit code.
pub fn main(backend: impl FnOnce(&Command) -> anyhow::Result<()>) -> ExitCode {
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
    // SIGINT, SIGTERM and SIGHUP (and a panic) end the Python children port
    // started and remove its temporary folders before it exits 130, 143 or
    // 129; a profile takes them for itself while it runs.
    if let Err(e) = port_reaper::install() {
        eprintln!("port: warning: cannot handle signals ({e}): an interrupted run may leave its children and temporary files");
    }
    let result = match &cli.command {
        Command::Analyze(a) => commands::analyze::run(a),
        Command::Explain(a) => commands::explain::run(a),
        Command::Graph(a) => commands::graph::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Compile(_) | Command::Migrate(_) | Command::Verify(_) => backend(&cli.command),
    };
    let Err(e) = result else {
        return ExitCode::SUCCESS;
    };
    let (code, exit) = if let Some(n) = e.downcast_ref::<commands::verify::NotVerified>() {
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
    /// The subcommand's name, as typed.
    pub fn name(&self) -> &'static str {
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

/// The `backend` of `port-backend`: runs `compile`, `migrate` and `verify`.
pub fn run_backend(command: &Command) -> anyhow::Result<()> {
    match command {
        Command::Compile(a) => commands::compile::run(a),
        Command::Migrate(a) => commands::migrate::run(a),
        Command::Verify(a) => commands::verify::run(a),
        other => Err(anyhow::anyhow!(
            "`{}` is not a backend command",
            other.name()
        )),
    }
}

/// The name of the binary that runs the commands needing LLVM, installed
/// beside `port`.
pub const BACKEND: &str = "port-backend";

/// The `backend` of `port`: replaces this process by `port-backend` (found
/// beside this executable) with the same arguments, so the backend's
/// output, exit code and signals are the user's own. Returns only when it
/// cannot start it.
pub fn exec_backend(_: &Command) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()
        .map_err(|e| UserError::new(format!("cannot find port's own executable: {e}")))?;
    let backend = exe.with_file_name(BACKEND);
    let err = std::process::Command::new(&backend)
        .args(std::env::args_os().skip(1))
        .exec();
    Err(UserError::coded(
        "installation",
        format!(
            "cannot run {} ({err}): `port` runs compile, migrate and verify through it; install both binaries (cargo install --path . installs them)",
            backend.display()
        ),
    )
    .into())
}
