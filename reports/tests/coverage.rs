//! The coverage figures, as `docs/coverage.md` defines them.

mod common;

use common::*;
use port_reports::{Basis, Format};

#[test]
fn profiled_figures_are_shares_of_sampled_time() {
    let c = report("mixed_app").coverage;
    assert_eq!(c.basis, Basis::Samples);
    // shade (cuda, 58.4% self time) is migrated and verified; running_total
    // (nopython, 19.3%) was refused; fingerprint and main are object mode.
    assert_eq!(c.gpu_eligible_pct, 58.4);
    assert_eq!(c.migrated_pct, 58.4);
    assert_eq!(c.nopython_pct, 19.3);
    assert_eq!(c.object_pct, 21.29);
}

#[test]
fn static_figures_are_shares_of_functions() {
    let c = report("seeds").coverage;
    assert_eq!(c.basis, Basis::Functions);
    // 19 of 22 functions are cuda, 2 nopython, 1 object; 2 are migrated
    // (saxpy on the simulator, vector_add on a GPU: verified, if not
    // profitable).
    assert_eq!(c.gpu_eligible_pct, 86.36);
    assert_eq!(c.nopython_pct, 9.09);
    assert_eq!(c.object_pct, 4.55);
    assert_eq!(c.migrated_pct, 9.09);
}

#[test]
fn a_migration_that_did_not_verify_counts_nothing() {
    let mut s = state("mixed_app");
    s.migrations[0].verification.as_mut().unwrap().passed = false;
    let c = port_reports::CoverageFigures::of(&s.analysis, &s.migrations);
    assert_eq!(c.migrated_pct, 0.0);
}

#[test]
fn every_format_says_which_basis_it_uses() {
    let md = render(&report("seeds"), Format::Md, "seeds");
    assert!(md.contains("Shares of functions: a static analysis"));
    let md = render(&report("mixed_app"), Format::Md, "mixed_app");
    assert!(md.contains("Shares of sampled time (4120 samples)."));
    let html = render(&report("seeds"), Format::Html, "seeds");
    assert!(html.contains("Static analysis: the figures are shares of functions"));
}

#[test]
fn json_carries_everything_with_a_schema() {
    let v: serde_json::Value =
        serde_json::from_str(&render(&report("mixed_app"), Format::Json, "mixed_app")).unwrap();
    assert_eq!(v["schema"], "port.report/1");
    assert_eq!(v["coverage"]["basis"], "samples");
    assert_eq!(v["coverage"]["migrated_pct"], 58.4);
    assert_eq!(v["functions"].as_array().unwrap().len(), 4);
    assert_eq!(v["functions"][0]["key"], "mixed_app.shade");
    assert_eq!(v["functions"][0]["verdict"], "cuda");
    assert_eq!(v["functions"][0]["migration"], "verified");
    assert_eq!(v["hotspots"][0]["key"], "mixed_app.main");
    assert_eq!(v["migrations"][0]["timing"]["speedup_kernel"], 4342.9);
    assert_eq!(v["blockers"][0]["code"], "PORT114");
    assert_eq!(v["profile"]["hot_lines"].as_array().unwrap().len(), 12);
    assert_eq!(
        v["profile"]["folded_stacks"][0],
        "<module> (mixed_app.py);main (mixed_app.py);shade (mixed_app.py) 2406"
    );
    assert!(v["call_graph"]["edges"].as_array().unwrap().len() > 3);
    assert!(v["gate"].is_null());
}
