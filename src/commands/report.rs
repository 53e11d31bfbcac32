//! `port report`: the state in `.port/` (analysis, profile, migrations) as a
//! table, JSON, Markdown, HTML, SARIF or DOT, and the CI gate on GPU-eligible
//! coverage.
//!
//! Exit codes: 0 the report was written (and the gate, if asked for,
//! passed) · 2 bad input (no `.port/` state, a corrupt or newer-schema file,
//! a baseline from another app, an unwritable `-o`) · 4 the CI gate failed
//! (the report is still written first).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use port_reports::{gate, Baseline, Format, GateOptions, PortState, Report, SourceRoot};

use crate::state;
use crate::UserError;

/// The exit code of a failed CI gate.
pub const GATE_EXIT_CODE: u8 = 4;

#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReportFormat {
    /// Tables for a terminal.
    #[default]
    Table,
    /// Everything, machine-readable, with a "schema" version.
    Json,
    /// A summary for a pull-request comment or a job summary.
    Md,
    /// One self-contained page: annotated source, flame graph, function index.
    Html,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
    /// The call graph in Graphviz DOT.
    Dot,
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Format {
        match f {
            ReportFormat::Table => Format::Table,
            ReportFormat::Json => Format::Json,
            ReportFormat::Md => Format::Md,
            ReportFormat::Html => Format::Html,
            ReportFormat::Sarif => Format::Sarif,
            ReportFormat::Dot => Format::Dot,
        }
    }
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 success · 1 internal error · 2 bad input (no .port/ state, \
corrupt or newer-schema file, baseline from another app, unwritable -o) · 4 the CI gate failed"
)]
pub struct ReportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare the coverage figures with a baseline saved by --save-baseline.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Exit with code 4 when gpu_eligible_pct is below PCT.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub fail_under: Option<f64>,
    /// Exit with code 4 when a coverage figure got worse than the baseline's
    /// by more than 1.0 percentage point, or a verified migration no longer
    /// verifies.
    #[arg(long, requires = "baseline")]
    pub fail_on_regression: bool,
    /// Save the current coverage figures as a baseline to FILE.
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a percentage (e.g. 60 or 62.5)")),
    }
}

/// The CI gate failed: main prints each reason and exits with
/// [`GATE_EXIT_CODE`].
#[derive(Debug)]
pub struct GateFailure {
    pub failures: Vec<String>,
}

impl std::fmt::Display for GateFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines: Vec<String> = self
            .failures
            .iter()
            .map(|x| format!("CI gate failed: {x}"))
            .collect();
        f.write_str(&lines.join("\nport: "))
    }
}

impl std::error::Error for GateFailure {}

fn user(e: port_reports::ReportError) -> anyhow::Error {
    UserError::new(e.to_string()).into()
}

/// Writes `text` to `path` through a temporary file in the same folder, so a
/// failed run never leaves half a report.
fn write_file(path: &Path, text: &str) -> Result<()> {
    let fail = |e: std::io::Error| UserError::new(format!("cannot write {}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if parent.exists() && !parent.is_dir() {
            return Err(UserError::new(format!(
                "cannot write {}: {} is not a folder",
                path.display(),
                parent.display()
            ))
            .into());
        }
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    if path.is_dir() {
        return Err(
            UserError::new(format!("cannot write {}: it is a folder", path.display())).into(),
        );
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })?;
    Ok(())
}

pub fn run(args: &ReportArgs) -> Result<()> {
    let state = PortState::load(&state::dir()).map_err(user)?;
    let baseline = match &args.baseline {
        Some(p) => Some((p.as_path(), Baseline::read(p).map_err(user)?)),
        None => None,
    };
    let mut report =
        Report::build(&state, baseline.as_ref().map(|(p, b)| (*p, b))).map_err(user)?;
    let opts = GateOptions {
        fail_under: args.fail_under,
        fail_on_regression: args.fail_on_regression,
    };
    if opts.is_set() {
        report.gate = Some(gate::check(&report, &opts));
    }

    // Saved before the report is printed, so that a baseline that cannot
    // be written is the one outcome (one JSON document with --format json).
    if let Some(p) = &args.save_baseline {
        let b = Baseline::new(&state.analysis, report.coverage, &state.migrations);
        write_file(p, &b.to_json())?;
    }
    let style = crate::tty::style(args.output.is_none());
    let text = port_reports::render(
        &report,
        args.format.into(),
        &SourceRoot(PathBuf::from(".")),
        style,
    );
    match &args.output {
        Some(p) => write_file(p, &text)?,
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                // `port report | head` is fine.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(anyhow::anyhow!("cannot write the report: {e}"))
                }
                _ => crate::json_printed(),
            }
        }
    }
    match &report.gate {
        Some(g) if !g.passed() => Err(GateFailure {
            failures: g.failures.clone(),
        }
        .into()),
        Some(_) => {
            eprintln!("port: CI gate passed");
            Ok(())
        }
        None => Ok(()),
    }
}
