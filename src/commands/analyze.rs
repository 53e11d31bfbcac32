//! `port analyze`: classify every function of a program, statically or (with
//! the profiler) weighted by where a real run spends its time.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use port_analyzer::{analyze, Analysis, AnalyzeOptions};
use port_reports::terminal::{self, Style};

use crate::state;
use crate::UserError;

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// The program: a .py file (its local imports are followed) or a folder
    /// (every .py under it).
    pub path: PathBuf,
    /// Classify without running the program: coverage then counts functions,
    /// not time.
    #[arg(long = "static")]
    pub static_only: bool,
    /// Print the analysis as JSON on stdout (it is always written to
    /// .port/analysis.json too).
    #[arg(long)]
    pub json: bool,
    /// Arguments passed to the program, after `--`.
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// Where a command gets its analysis from.
pub enum Source<'a> {
    /// Analyse this path statically now.
    Path(&'a Path),
    /// Read the last analysis from .port/analysis.json.
    State,
}

pub fn analysis_path() -> PathBuf {
    state::dir().join("analysis.json")
}

pub fn load_or_analyze(src: Source) -> Result<Analysis> {
    match src {
        Source::Path(p) => run_static(p),
        Source::State => {
            let path = analysis_path();
            let text = std::fs::read_to_string(&path).map_err(|_| {
                UserError::new(format!(
                    "no analysis in {}: run `port analyze PATH` first",
                    path.display()
                ))
            })?;
            let a: Analysis = serde_json::from_str(&text).map_err(|e| {
                UserError::new(format!(
                    "{} is corrupt ({e}): run `port analyze` again",
                    path.display()
                ))
            })?;
            if a.schema != port_analyzer::model::ANALYSIS_SCHEMA {
                return Err(UserError::new(format!(
                    "{} has schema `{}`, this port reads `{}`: run `port analyze` again",
                    path.display(),
                    a.schema,
                    port_analyzer::model::ANALYSIS_SCHEMA
                ))
                .into());
            }
            Ok(a)
        }
    }
}

fn run_static(path: &Path) -> Result<Analysis> {
    let a = analyze(path, &AnalyzeOptions::default()).map_err(|e| UserError::new(e.to_string()))?;
    if a.functions.is_empty() && a.files.is_empty() && !a.parse_errors.is_empty() {
        // Nothing parsed: the errors are the whole story.
        let lines: Vec<String> = a.parse_errors.iter().map(|e| e.to_string()).collect();
        return Err(UserError::new(lines.join("\n")).into());
    }
    Ok(a)
}

pub fn run(args: &AnalyzeArgs) -> Result<()> {
    if !args.static_only {
        return Err(UserError::new(
            "profiling a run is not built yet in this version: use `port analyze --static PATH`",
        )
        .into());
    }
    let analysis = run_static(&args.path)?;
    state::write_json(&analysis_path(), &analysis).context("cannot save the analysis in .port/")?;
    for e in &analysis.parse_errors {
        eprintln!("{e}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&analysis)?);
        return Ok(());
    }
    let stdout = std::io::stdout();
    let color = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let style = Style { color, width: None };
    println!("{}", terminal::analysis_table(&analysis, style));
    println!("{}", terminal::coverage_line(&analysis));
    Ok(())
}
