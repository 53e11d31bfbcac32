//! The CI gate: `--fail-under` and `--fail-on-regression` against baselines.

mod common;

use std::path::Path;

use common::*;
use port_reports::{gate, Baseline, GateOptions, Report, ReportError, REGRESSION_TOLERANCE_PCT};

fn fail_under(name: &str, pct: f64) -> port_reports::GateOutcome {
    gate::check(
        &report(name),
        &GateOptions {
            fail_under: Some(pct),
            fail_on_regression: false,
        },
    )
}

fn regression(r: &Report) -> port_reports::GateOutcome {
    gate::check(
        r,
        &GateOptions {
            fail_under: None,
            fail_on_regression: true,
        },
    )
}

fn baseline_of(name: &str) -> Baseline {
    let s = state(name);
    Baseline::new(&s.analysis, report(name).coverage, &s.migrations)
}

#[test]
fn fail_under_101_fails_and_0_passes() {
    for name in ["mixed_app", "seeds", "multimodule"] {
        let g = fail_under(name, 101.0);
        assert!(!g.passed(), "{name}");
        assert!(
            g.failures[0].contains("under --fail-under 101%"),
            "{:?}",
            g.failures
        );
        assert!(fail_under(name, 0.0).passed(), "{name}");
    }
}

#[test]
fn fail_under_compares_with_gpu_eligible_pct() {
    // mixed_app: 58.4% of sampled time is GPU-eligible.
    assert!(fail_under("mixed_app", 58.4).passed());
    assert!(!fail_under("mixed_app", 58.5).passed());
}

#[test]
fn an_unchanged_baseline_passes() {
    for name in ["mixed_app", "seeds", "multimodule"] {
        let r = report_with_baseline(name, &baseline_of(name));
        let g = regression(&r);
        assert!(g.passed(), "{name}: {:?}", g.failures);
        let d = r.baseline.unwrap().delta;
        assert_eq!(
            [
                d.gpu_eligible_pct,
                d.migrated_pct,
                d.nopython_pct,
                d.object_pct
            ],
            [0.0; 4]
        );
    }
}

#[test]
fn a_doctored_baseline_with_higher_coverage_fails() {
    let mut b = baseline_of("mixed_app");
    b.coverage.gpu_eligible_pct += 5.0;
    let g = regression(&report_with_baseline("mixed_app", &b));
    assert_eq!(
        g.failures,
        ["GPU-eligible dropped from 63.4% to 58.4% of sampled time (tolerance 1.0 points)"]
    );

    let mut b = baseline_of("seeds");
    b.coverage.migrated_pct = 50.0;
    let g = regression(&report_with_baseline("seeds", &b));
    assert_eq!(g.failures.len(), 1, "{:?}", g.failures);
    assert!(g.failures[0].starts_with("migrated dropped from 50.0% to 9.1% of functions"));
}

#[test]
fn more_object_mode_is_a_regression_and_less_nopython_is_not() {
    let mut b = baseline_of("mixed_app");
    b.coverage.object_pct -= 3.0;
    b.coverage.nopython_pct += 30.0;
    let g = regression(&report_with_baseline("mixed_app", &b));
    assert_eq!(g.failures.len(), 1, "{:?}", g.failures);
    assert!(g.failures[0].starts_with("object mode rose from 18.3% to 21.3%"));
}

#[test]
fn drops_within_the_tolerance_pass() {
    let mut b = baseline_of("mixed_app");
    b.coverage.gpu_eligible_pct += REGRESSION_TOLERANCE_PCT - 0.01;
    assert!(regression(&report_with_baseline("mixed_app", &b)).passed());
    b.coverage.gpu_eligible_pct += 0.02;
    assert!(!regression(&report_with_baseline("mixed_app", &b)).passed());
}

#[test]
fn a_migration_that_no_longer_verifies_fails() {
    let b = baseline_of("mixed_app");
    assert_eq!(b.verified, ["mixed_app.shade"]);
    let tmp = scratch_state("mixed_app");
    let path = tmp.path().join(".port/migrations/shade.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"status\": \"verified\"", "\"status\": \"mismatch\"")
        .replace("\"passed\": true", "\"passed\": false");
    std::fs::write(&path, text).unwrap();
    let s = port_reports::PortState::load(&tmp.path().join(".port")).unwrap();
    let r = Report::build(&s, Some((Path::new("b.json"), &b))).unwrap();
    let g = regression(&r);
    assert!(
        g.failures.contains(
            &"the migration of `mixed_app.shade` verified in the baseline and is now mismatch"
                .to_string()
        ),
        "{:?}",
        g.failures
    );
    // Its time no longer counts as migrated, either.
    assert_eq!(r.coverage.migrated_pct, 0.0);
    assert!(
        g.failures
            .iter()
            .any(|f| f.starts_with("migrated dropped from 58.4% to 0.0%")),
        "{:?}",
        g.failures
    );

    std::fs::remove_file(&path).unwrap();
    let s = port_reports::PortState::load(&tmp.path().join(".port")).unwrap();
    let r = Report::build(&s, Some((Path::new("b.json"), &b))).unwrap();
    assert!(regression(&r)
        .failures
        .iter()
        .any(|f| f.contains("`mixed_app.shade` verified in the baseline and has no record now")));
}

/// An inconclusive verification is not a verified one: the gate fails a
/// migration that verified in the baseline and is now inconclusive.
#[test]
fn a_migration_now_inconclusive_fails_the_gate() {
    let b = baseline_of("mixed_app");
    let tmp = scratch_state("mixed_app");
    let path = tmp.path().join(".port/migrations/shade.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"status\": \"verified\"", "\"status\": \"inconclusive\"")
        .replace("\"passed\": true", "\"passed\": false");
    std::fs::write(&path, text).unwrap();
    let s = port_reports::PortState::load(&tmp.path().join(".port")).unwrap();
    let r = Report::build(&s, Some((Path::new("b.json"), &b))).unwrap();
    let g = regression(&r);
    assert!(
        g.failures.contains(
            &"the migration of `mixed_app.shade` verified in the baseline and is now inconclusive"
                .to_string()
        ),
        "{:?}",
        g.failures
    );
    assert_eq!(r.coverage.migrated_pct, 0.0);
}

#[test]
fn a_baseline_from_another_app_is_refused() {
    let b = baseline_of("multimodule");
    let err = Report::build(&state("seeds"), Some((Path::new("mm.json"), &b))).unwrap_err();
    assert!(matches!(err, ReportError::BaselineFromAnotherApp { .. }));
    assert_eq!(
        err.to_string(),
        "baseline mm.json is from another app (main.py, 5 files, none of its files are in seeds.py, 1 file): save one for this app with `port report --save-baseline FILE`"
    );
}

#[test]
fn a_baseline_on_another_basis_is_refused() {
    let mut b = baseline_of("mixed_app");
    b.coverage.basis = port_reports::Basis::Functions;
    let err = Report::build(&state("mixed_app"), Some((Path::new("b.json"), &b))).unwrap_err();
    assert!(matches!(err, ReportError::BaselineBasis { .. }), "{err}");
}

#[test]
fn a_baseline_survives_a_checkout_elsewhere() {
    // The same program analysed from another folder, by absolute paths.
    let b = baseline_of("multimodule");
    let mut s = state("multimodule");
    s.analysis.root = "/home/runner/work/app/main.py".into();
    for f in &mut s.analysis.files {
        *f = format!("/home/runner/work/app/{}", f.trim_start_matches("./"));
    }
    let r = Report::build(&s, Some((Path::new("b.json"), &b))).unwrap();
    assert!(regression(&r).passed());
}

#[test]
fn fail_on_regression_without_a_baseline_fails() {
    let g = regression(&report("seeds"));
    assert_eq!(g.failures, ["--fail-on-regression needs --baseline FILE"]);
}

#[test]
fn a_saved_baseline_reads_back() {
    let b = baseline_of("mixed_app");
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("b.json");
    std::fs::write(&p, b.to_json()).unwrap();
    assert_eq!(Baseline::read(&p).unwrap(), b);
    let v: serde_json::Value = serde_json::from_str(&b.to_json()).unwrap();
    assert_eq!(v["schema"], "port.baseline/1");
    assert_eq!(v["app"]["files"], serde_json::json!(["mixed_app.py"]));
    assert_eq!(v["coverage"]["basis"], "samples");
}
