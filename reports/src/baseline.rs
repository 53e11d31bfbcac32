//! Baselines: the coverage figures of an earlier run, saved with
//! `--save-baseline`, that `--fail-on-regression` compares against.
//!
//! A baseline names the app it was measured on by its files, relative to
//! their common folder, so it survives a checkout in another place; a
//! baseline shares at least one file with the app it belongs to.

use std::collections::BTreeSet;
use std::path::Path;

use port_analyzer::model::Analysis;
use serde::{Deserialize, Serialize};

use crate::coverage::{Basis, CoverageFigures};
use crate::error::ReportError;
use crate::migration::Migration;
use crate::state::read_versioned;

/// Version tag of baseline files.
pub const BASELINE_SCHEMA: &str = "port.baseline/1";

/// How far, in percentage points, a figure may move the wrong way before
/// `--fail-on-regression` fails: sampled shares wobble a little from run to
/// run even when the code did not change.
pub const REGRESSION_TOLERANCE_PCT: f64 = 1.0;

/// Which program a set of figures belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppIdentity {
    /// The last component of what was analysed (`app.py`, `src`).
    pub root: String,
    /// The program's files, relative to their common folder, sorted.
    pub files: Vec<String>,
}

impl AppIdentity {
    pub fn of(analysis: &Analysis) -> AppIdentity {
        let root = analysis
            .root
            .trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(&analysis.root)
            .to_string();
        AppIdentity {
            root,
            files: relative_to_common_folder(&analysis.files),
        }
    }

    /// Whether `other` describes the same program: they share a file.
    pub fn same_app(&self, other: &AppIdentity) -> bool {
        let mine: BTreeSet<&String> = self.files.iter().collect();
        other.files.iter().any(|f| mine.contains(f))
    }

    /// "app.py, 3 files".
    pub fn describe(&self) -> String {
        let n = self.files.len();
        format!("{}, {n} file{}", self.root, if n == 1 { "" } else { "s" })
    }
}

fn relative_to_common_folder(files: &[String]) -> Vec<String> {
    let split: Vec<Vec<&str>> = files
        .iter()
        .map(|f| {
            f.split(['/', '\\'])
                .filter(|c| !c.is_empty() && *c != ".")
                .collect()
        })
        .collect();
    // The common folder: the longest shared prefix of the files' folders.
    let mut common = match split.first() {
        Some(first) => first.len().saturating_sub(1),
        None => 0,
    };
    for parts in &split {
        let folder = &parts[..parts.len().saturating_sub(1)];
        common = common.min(
            folder
                .iter()
                .zip(&split[0])
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let mut out: Vec<String> = split.iter().map(|p| p[common..].join("/")).collect();
    out.sort();
    out.dedup();
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema: String,
    pub app: AppIdentity,
    pub coverage: CoverageFigures,
    /// Functions whose migration verified, as their migrations name them.
    pub verified: Vec<String>,
}

impl Baseline {
    pub fn new(analysis: &Analysis, coverage: CoverageFigures, migrations: &[Migration]) -> Self {
        Baseline {
            schema: BASELINE_SCHEMA.into(),
            app: AppIdentity::of(analysis),
            coverage,
            verified: migrations
                .iter()
                .filter(|m| m.is_verified())
                .map(|m| m.function.clone())
                .collect(),
        }
    }

    pub fn read(path: &Path) -> Result<Baseline, ReportError> {
        read_versioned(
            path,
            BASELINE_SCHEMA,
            "save it again with `port report --save-baseline FILE`",
        )
    }

    /// The baseline as saved: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a baseline serialises");
        s.push('\n');
        s
    }
}

/// Each figure now minus the baseline's, in percentage points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoverageDelta {
    pub gpu_eligible_pct: f64,
    pub migrated_pct: f64,
    pub nopython_pct: f64,
    pub object_pct: f64,
}

/// The current figures against a baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineComparison {
    /// The baseline file, as given.
    pub file: String,
    pub coverage: CoverageFigures,
    pub delta: CoverageDelta,
    pub tolerance_pct: f64,
    /// What got worse beyond the tolerance, one line each.
    pub regressions: Vec<String>,
}

impl BaselineComparison {
    /// Compares; fails when the baseline is from another app or measured on
    /// another basis (shares of time and of functions do not compare).
    pub fn new(
        path: &Path,
        baseline: &Baseline,
        app: &AppIdentity,
        now: &CoverageFigures,
        migrations: &[Migration],
    ) -> Result<BaselineComparison, ReportError> {
        if !app.same_app(&baseline.app) {
            return Err(ReportError::BaselineFromAnotherApp {
                path: path.to_path_buf(),
                theirs: baseline.app.describe(),
                ours: app.describe(),
            });
        }
        if baseline.coverage.basis != now.basis {
            let name = |b: Basis| match b {
                Basis::Samples => "share of sampled time",
                Basis::Functions => "share of functions (--static)",
            };
            return Err(ReportError::BaselineBasis {
                path: path.to_path_buf(),
                theirs: name(baseline.coverage.basis),
                ours: name(now.basis),
            });
        }
        let was = &baseline.coverage;
        let d = |a: f64, b: f64| port_analyzer::model::round2(a - b);
        let delta = CoverageDelta {
            gpu_eligible_pct: d(now.gpu_eligible_pct, was.gpu_eligible_pct),
            migrated_pct: d(now.migrated_pct, was.migrated_pct),
            nopython_pct: d(now.nopython_pct, was.nopython_pct),
            object_pct: d(now.object_pct, was.object_pct),
        };
        let tol = REGRESSION_TOLERANCE_PCT;
        let mut regressions = Vec::new();
        // nopython_pct alone is not checked: it falls when functions become
        // GPU-eligible, and when they fall to object mode object_pct rises.
        let worse = [
            (
                "GPU-eligible",
                now.gpu_eligible_pct,
                was.gpu_eligible_pct,
                -delta.gpu_eligible_pct,
            ),
            (
                "migrated",
                now.migrated_pct,
                was.migrated_pct,
                -delta.migrated_pct,
            ),
            (
                "object mode",
                now.object_pct,
                was.object_pct,
                delta.object_pct,
            ),
        ];
        for (name, now_v, was_v, by) in worse {
            if by > tol {
                let dir = if name == "object mode" {
                    "rose"
                } else {
                    "dropped"
                };
                regressions.push(format!(
                    "{name} {dir} from {was_v:.1}% to {now_v:.1}% of {} (tolerance {tol:.1} points)",
                    now.basis.phrase()
                ));
            }
        }
        for f in &baseline.verified {
            match migrations.iter().find(|m| &m.function == f) {
                Some(m) if m.is_verified() => {}
                Some(m) => regressions.push(format!(
                    "the migration of `{f}` verified in the baseline and is now {}",
                    if m.status == crate::migration::MigrationStatus::Verified {
                        "failing its verification".to_string()
                    } else {
                        m.status.to_string()
                    }
                )),
                None => regressions.push(format!(
                    "the migration of `{f}` verified in the baseline and has no record now: run `port verify`"
                )),
            }
        }
        Ok(BaselineComparison {
            file: path.display().to_string(),
            coverage: *was,
            delta,
            tolerance_pct: tol,
            regressions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_relative_to_their_common_folder() {
        let files = [
            "/ci/work/app/main.py".to_string(),
            "/ci/work/app/physics/util.py".to_string(),
        ];
        assert_eq!(
            relative_to_common_folder(&files),
            ["main.py", "physics/util.py"]
        );
        assert_eq!(relative_to_common_folder(&["app.py".into()]), ["app.py"]);
        assert_eq!(
            relative_to_common_folder(&["./src/a.py".into(), "src/b/c.py".into()]),
            ["a.py", "b/c.py"]
        );
    }
}
