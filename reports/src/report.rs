//! The report: everything the formats show, gathered once from the state so
//! that Markdown, HTML, SARIF, DOT, the table and JSON all say the same thing.
//! It is also the JSON output (`port report --format json`).

use std::collections::BTreeMap;
use std::path::Path;

use port_analyzer::model::{
    Analysis, CallGraphReport, Finding, FunctionReport, ParseErrorReport, Severity, Verdict,
};
use port_analyzer::rules;
use serde::Serialize;

use crate::baseline::{AppIdentity, Baseline, BaselineComparison};
use crate::coverage::{function_key, migrations_by_function, CoverageFigures};
use crate::error::ReportError;
use crate::migration::{Migration, MigrationStatus};
use crate::profile::ProfileView;
use crate::state::PortState;

/// Version tag of `port report --format json`.
pub const REPORT_SCHEMA: &str = "port.report/1";

/// What the CI gate (`gate::check`) decided, and why, one line per failure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    pub fail_under: Option<f64>,
    pub fail_on_regression: bool,
    pub failures: Vec<String>,
}

impl GateOutcome {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// How many hotspots a summary lists.
pub const TOP_HOTSPOTS: usize = 10;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    /// port's version.
    pub version: &'static str,
    /// What was analysed, as the user named it.
    pub root: String,
    pub app: AppIdentity,
    pub profiled: bool,
    pub coverage: CoverageFigures,
    pub baseline: Option<BaselineComparison>,
    /// Filled in when the CI gate was asked for.
    pub gate: Option<GateOutcome>,
    /// The hottest functions by total time; empty without a profile.
    pub hotspots: Vec<Hotspot>,
    /// Every analysed function, in the analysis' order.
    pub functions: Vec<FunctionEntry>,
    pub migrations: Vec<MigrationEntry>,
    /// Codes that keep functions off the GPU, most functions first.
    pub blockers: Vec<BlockerCount>,
    pub call_graph: CallGraphReport,
    pub files: Vec<String>,
    pub parse_errors: Vec<ParseErrorReport>,
    pub profile: Option<ProfileView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FunctionEntry {
    /// `module.qualname`: how the call graph and migrations name it.
    pub key: String,
    #[serde(flatten)]
    pub function: FunctionReport,
    /// The status of its migration, if it was migrated.
    pub migration: Option<MigrationStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Hotspot {
    pub key: String,
    pub qualname: String,
    pub file: String,
    pub line: u32,
    pub verdict: Verdict,
    pub self_pct: Option<f64>,
    pub total_pct: Option<f64>,
    pub main_reason: Option<Finding>,
    pub migration: Option<MigrationStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MigrationEntry {
    /// The analysed function it is about, when one matches.
    pub key: Option<String>,
    #[serde(flatten)]
    pub migration: Migration,
}

/// One finding code and the functions it keeps off the GPU.
#[derive(Debug, Clone, Serialize)]
pub struct BlockerCount {
    pub code: String,
    /// The rule's name in words ("unsupported module").
    pub name: String,
    pub group: &'static str,
    pub severity: Severity,
    pub functions: Vec<String>,
    /// The blocked functions' share of sampled time (self time), when profiled.
    pub time_pct: Option<f64>,
}

impl Report {
    /// Gathers the report; with a baseline, compares against it (which fails
    /// when the baseline belongs to another app).
    pub fn build(
        state: &PortState,
        baseline: Option<(&Path, &Baseline)>,
    ) -> Result<Report, ReportError> {
        let a: &Analysis = &state.analysis;
        let coverage = CoverageFigures::of(a, &state.migrations);
        let app = AppIdentity::of(a);
        let baseline = match baseline {
            Some((path, b)) => Some(BaselineComparison::new(
                path,
                b,
                &app,
                &coverage,
                &state.migrations,
            )?),
            None => None,
        };
        let by_fn = migrations_by_function(a, &state.migrations);
        let status_of = |f: &FunctionReport| by_fn.get(&function_key(f)).map(|m| m.status);
        let functions: Vec<FunctionEntry> = a
            .functions
            .iter()
            .map(|f| FunctionEntry {
                key: function_key(f),
                function: f.clone(),
                migration: status_of(f),
            })
            .collect();
        let hotspots = if a.profiled {
            let mut ranked: Vec<&FunctionReport> = a
                .functions
                .iter()
                .filter(|f| f.total_pct.unwrap_or(0.0) > 0.0)
                .collect();
            ranked.sort_by(|x, y| {
                let t =
                    |f: &FunctionReport| (f.total_pct.unwrap_or(0.0), f.self_pct.unwrap_or(0.0));
                let (tx, sx) = t(x);
                let (ty, sy) = t(y);
                ty.total_cmp(&tx)
                    .then(sy.total_cmp(&sx))
                    .then_with(|| function_key(x).cmp(&function_key(y)))
            });
            ranked
                .into_iter()
                .take(TOP_HOTSPOTS)
                .map(|f| Hotspot {
                    key: function_key(f),
                    qualname: f.qualname.clone(),
                    file: f.file.clone(),
                    line: f.line,
                    verdict: f.verdict,
                    self_pct: f.self_pct,
                    total_pct: f.total_pct,
                    main_reason: f.main_reason().cloned(),
                    migration: status_of(f),
                })
                .collect()
        } else {
            Vec::new()
        };
        let migrations = state
            .migrations
            .iter()
            .map(|m| MigrationEntry {
                key: by_fn
                    .iter()
                    .find(|(_, v)| std::ptr::eq(**v, m))
                    .map(|(k, _)| k.clone()),
                migration: m.clone(),
            })
            .collect();
        Ok(Report {
            schema: REPORT_SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            root: a.root.clone(),
            app,
            profiled: a.profiled,
            coverage,
            baseline,
            gate: None,
            hotspots,
            functions,
            migrations,
            blockers: blockers(a),
            call_graph: a.call_graph.clone(),
            files: a.files.clone(),
            parse_errors: a.parse_errors.clone(),
            profile: ProfileView::of(a),
        })
    }

    /// The analysed function named `key` (`module.qualname`).
    pub fn function(&self, key: &str) -> Option<&FunctionEntry> {
        self.functions.iter().find(|f| f.key == key)
    }

    /// The report as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report serialises");
        s.push('\n');
        s
    }
}

fn blockers(a: &Analysis) -> Vec<BlockerCount> {
    let mut by_code: BTreeMap<&str, (Severity, Vec<String>)> = BTreeMap::new();
    for f in &a.functions {
        let key = function_key(f);
        for x in &f.findings {
            if !matches!(x.severity, Severity::Object | Severity::Blocker) {
                continue;
            }
            let entry = by_code
                .entry(x.code.as_str())
                .or_insert_with(|| (x.severity, Vec::new()));
            if entry.1.last() != Some(&key) {
                entry.1.push(key.clone());
            }
        }
    }
    let mut out: Vec<BlockerCount> = by_code
        .into_iter()
        .map(|(code, (severity, functions))| BlockerCount {
            code: code.to_string(),
            name: rules::rule(code)
                .map(|r| r.name.replace('-', " "))
                .unwrap_or_else(|| "unknown finding".into()),
            group: rules::group_of(code),
            severity,
            time_pct: a.profiled.then(|| {
                crate::coverage::sum_pct(
                    a.functions
                        .iter()
                        .filter(|f| functions.contains(&function_key(f)))
                        .filter_map(|f| f.self_pct),
                )
            }),
            functions,
        })
        .collect();
    out.sort_by(|x, y| {
        y.functions
            .len()
            .cmp(&x.functions.len())
            .then_with(|| x.code.cmp(&y.code))
    });
    out
}
