//! Reports: every way port shows its results to people and machines —
//! terminal tables (comfy-table), JSON, Markdown for pull requests, one
//! self-contained annotated HTML page, SARIF for code scanning, Graphviz DOT
//! — and the CI gate on GPU-eligible coverage; and the text `port migrate`
//! and `port verify` print, read from the migration record they write
//! ([`outcome`]).
//!
//! A report is made in three steps: [`state::PortState::load`] reads
//! `.port/` (the analysis and the migrations, each checked for its schema
//! version); [`report::Report::build`] gathers what every format shows, and
//! compares with a [`baseline::Baseline`] when given one; [`render`] writes
//! one format. [`gate::check`] decides the CI gate from the report.
//!
//! Architecture invariant: reports never compute verdicts; they format what
//! the analysis holds. The one figure computed here is `migrated_pct`, the
//! only one that needs the migrations (see [`coverage`]).

pub mod baseline;
pub mod coverage;
pub mod dot;
pub mod error;
pub mod gate;
pub mod html;
pub mod markdown;
pub mod migration;
pub mod outcome;
pub mod profile;
pub mod report;
pub mod sarif;
pub mod state;
pub mod terminal;
pub mod text;
pub mod timing;

use std::path::{Path, PathBuf};

pub use baseline::{Baseline, BASELINE_SCHEMA, REGRESSION_TOLERANCE_PCT};
pub use coverage::{Basis, CoverageFigures};
pub use error::ReportError;
pub use gate::{GateOptions, GateOutcome};
pub use migration::{Migration, MigrationStatus, MIGRATION_SCHEMA};
pub use report::{Report, REPORT_SCHEMA};
pub use state::PortState;

/// The output formats of `port report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Md,
    Html,
    Sarif,
    Dot,
}

/// Where the program's source files are read from for the HTML page: the
/// analysis names them as the user did, relative to where `port analyze`
/// ran.
#[derive(Debug, Clone)]
pub struct SourceRoot(pub PathBuf);

impl SourceRoot {
    pub fn read(&self, file: &str) -> Option<String> {
        let p = Path::new(file);
        let path = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.0.join(p)
        };
        std::fs::read(path)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }
}

/// Renders one format of the report.
pub fn render(r: &Report, format: Format, sources: &SourceRoot, style: terminal::Style) -> String {
    match format {
        Format::Table => terminal::report_table(r, style),
        Format::Json => r.to_json(),
        Format::Md => markdown::render(r),
        Format::Html => html::render(r, &|f| sources.read(f)),
        Format::Sarif => sarif::render(r),
        Format::Dot => dot::render(r),
    }
}
