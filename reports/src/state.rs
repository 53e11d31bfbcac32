//! Reading what earlier commands left in `.port/`: the analysis and the
//! migrations. Every file is checked for its `"schema"` before it is
//! interpreted, so a file from a newer port is named as such rather than
//! reported as corrupt.

use std::path::{Path, PathBuf};

use port_analyzer::model::{Analysis, ANALYSIS_SCHEMA};
use serde::de::DeserializeOwned;

use crate::error::ReportError;
use crate::migration::{Migration, MIGRATION_SCHEMA};

/// Everything a report is made from.
#[derive(Debug, Clone)]
pub struct PortState {
    pub analysis: Analysis,
    /// One per migrated function, sorted by function name.
    pub migrations: Vec<Migration>,
}

impl PortState {
    /// Reads `STATE_DIR/analysis.json` and `STATE_DIR/migrations/*.json`.
    pub fn load(state_dir: &Path) -> Result<PortState, ReportError> {
        let analysis = read_analysis(&state_dir.join("analysis.json"))?;
        let migrations = read_migrations(&state_dir.join("migrations"))?;
        Ok(PortState {
            analysis,
            migrations,
        })
    }
}

/// Reads and checks an analysis written by `port analyze`.
pub fn read_analysis(path: &Path) -> Result<Analysis, ReportError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReportError::NoAnalysis(path.to_path_buf()))
        }
        Err(source) => {
            return Err(ReportError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let corrupt = |detail: String| ReportError::CorruptAnalysis {
        path: path.to_path_buf(),
        detail,
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    check_schema(path, &value, ANALYSIS_SCHEMA, "run `port analyze` again")
        .map_err(|e| e.unwrap_or_else(|| corrupt("no \"schema\" field".into())))?;
    serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))
}

/// Reads every `*.json` in `.port/migrations/`; a missing folder means no
/// function was migrated yet.
pub fn read_migrations(dir: &Path) -> Result<Vec<Migration>, ReportError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ReportError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut out: Vec<Migration> = Vec::with_capacity(paths.len());
    for p in paths {
        out.push(read_versioned(
            &p,
            MIGRATION_SCHEMA,
            "run `port migrate` for that function again",
        )?);
    }
    out.sort_by(|a, b| a.function.cmp(&b.function));
    Ok(out)
}

/// Reads a JSON file whose `"schema"` must be `expected`.
pub fn read_versioned<T: DeserializeOwned>(
    path: &Path,
    expected: &'static str,
    advice: &'static str,
) -> Result<T, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let corrupt = |detail: String| ReportError::Corrupt {
        path: path.to_path_buf(),
        detail,
        advice,
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    check_schema(path, &value, expected, advice)
        .map_err(|e| e.unwrap_or_else(|| corrupt("no \"schema\" field".into())))?;
    serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))
}

/// `Err(None)` when there is no schema string at all (the caller calls
/// that corrupt), `Err(Some(..))` when it is another version.
fn check_schema(
    path: &Path,
    value: &serde_json::Value,
    expected: &'static str,
    advice: &'static str,
) -> Result<(), Option<ReportError>> {
    match value.get("schema").and_then(|s| s.as_str()) {
        None => Err(None),
        Some(s) if s == expected => Ok(()),
        Some(s) => Err(Some(ReportError::WrongSchema {
            path: path.to_path_buf(),
            found: s.to_string(),
            expected,
            advice,
        })),
    }
}
