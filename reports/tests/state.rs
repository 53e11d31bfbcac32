//! Reading `.port/`: every kind of bad state gets one line that says what to do.

mod common;

use std::path::Path;

use common::*;
use port_reports::{Baseline, PortState, ReportError};

fn load_err(dir: &Path) -> String {
    let e = PortState::load(dir).unwrap_err();
    let s = e.to_string();
    assert!(!s.contains('\n'), "more than one line: {s}");
    s
}

#[test]
fn no_state_says_run_port_analyze_first() {
    let tmp = tempfile::tempdir().unwrap();
    let e = PortState::load(&tmp.path().join(".port")).unwrap_err();
    assert!(matches!(e, ReportError::NoAnalysis(_)));
    assert!(e.to_string().ends_with("run `port analyze` first"), "{e}");
}

#[test]
fn corrupt_analysis_is_named() {
    let tmp = scratch_state("seeds");
    let p = tmp.path().join(".port/analysis.json");
    std::fs::write(&p, "{\"schema\": \"port.analysis/1\", \"root\": ").unwrap();
    let msg = load_err(&tmp.path().join(".port"));
    assert!(msg.contains("analysis.json is corrupt"), "{msg}");
    assert!(msg.ends_with("run `port analyze` again"), "{msg}");

    // Valid JSON of the right version but the wrong shape is corrupt too.
    std::fs::write(&p, "{\"schema\": \"port.analysis/1\", \"root\": 3}").unwrap();
    assert!(load_err(&tmp.path().join(".port")).contains("is corrupt"));
    std::fs::write(&p, "[1, 2]").unwrap();
    assert!(load_err(&tmp.path().join(".port")).contains("no \"schema\" field"));
}

#[test]
fn future_schema_analysis_is_named_not_called_corrupt() {
    let tmp = scratch_state("seeds");
    let p = tmp.path().join(".port/analysis.json");
    // A newer port may have reshaped everything but the schema tag.
    std::fs::write(&p, "{\"schema\": \"port.analysis/2\", \"functions\": {}}").unwrap();
    let msg = load_err(&tmp.path().join(".port"));
    assert!(
        msg.ends_with("has schema `port.analysis/2`, this port reads `port.analysis/1`: run `port analyze` again"),
        "{msg}"
    );
}

#[test]
fn corrupt_or_future_migrations_are_named() {
    let tmp = scratch_state("mixed_app");
    let p = tmp.path().join(".port/migrations/shade.json");
    std::fs::write(&p, "not json").unwrap();
    let msg = load_err(&tmp.path().join(".port"));
    assert!(msg.contains("shade.json is corrupt"), "{msg}");
    std::fs::write(&p, "{\"schema\": \"port.migration/9\"}").unwrap();
    let msg = load_err(&tmp.path().join(".port"));
    assert!(msg.contains("has schema `port.migration/9`"), "{msg}");
}

#[test]
fn corrupt_or_future_baselines_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("baseline.json");
    let missing = Baseline::read(&p).unwrap_err().to_string();
    assert!(missing.starts_with("cannot read "), "{missing}");
    std::fs::write(&p, "{\"schema\": \"port.baseline/1\", \"app\": 1}").unwrap();
    let e = Baseline::read(&p).unwrap_err().to_string();
    assert!(e.contains("baseline.json is corrupt"), "{e}");
    assert!(
        e.ends_with("save it again with `port report --save-baseline FILE`"),
        "{e}"
    );
    std::fs::write(&p, "{\"schema\": \"port.baseline/2\"}").unwrap();
    let e = Baseline::read(&p).unwrap_err().to_string();
    assert!(e.contains("has schema `port.baseline/2`"), "{e}");
}

#[test]
fn migrations_are_matched_to_functions() {
    let r = report("mixed_app");
    // One names its function by `module.qualname`, the other by bare name.
    let keys: Vec<Option<&str>> = r.migrations.iter().map(|m| m.key.as_deref()).collect();
    assert_eq!(
        keys,
        [Some("mixed_app.shade"), Some("mixed_app.running_total")]
    );
    assert_eq!(
        r.function("mixed_app.running_total").unwrap().migration,
        Some(port_reports::MigrationStatus::Refused)
    );
}
