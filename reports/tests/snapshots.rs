//! The Markdown and table outputs, reviewed as snapshots (`cargo insta
//! review` after an intended change).

mod common;

use common::*;
use port_reports::{gate, Format, GateOptions};

#[test]
fn markdown_of_a_profiled_app_with_migrations() {
    let r = report("mixed_app");
    insta::assert_snapshot!(render(&r, Format::Md, "mixed_app"));
}

#[test]
fn markdown_with_baseline_and_failed_gate() {
    let mut baseline = port_reports::Baseline::new(
        &state("mixed_app").analysis,
        report("mixed_app").coverage,
        &state("mixed_app").migrations,
    );
    // A week ago more of the program was GPU-eligible and less was in object mode.
    baseline.coverage.gpu_eligible_pct = 70.0;
    baseline.coverage.object_pct = 10.0;
    let mut r = report_with_baseline("mixed_app", &baseline);
    r.gate = Some(gate::check(
        &r,
        &GateOptions {
            fail_under: Some(60.0),
            fail_on_regression: true,
        },
    ));
    insta::assert_snapshot!(render(&r, Format::Md, "mixed_app"));
}

#[test]
fn markdown_of_a_static_analysis() {
    let r = report("seeds");
    insta::assert_snapshot!(render(&r, Format::Md, "seeds"));
}

#[test]
fn table_of_a_profiled_app_with_migrations() {
    let r = report("mixed_app");
    insta::assert_snapshot!(render(&r, Format::Table, "mixed_app"));
}

#[test]
fn table_of_a_simulator_and_a_not_profitable_migration() {
    // seeds: saxpy ran on the simulator (no GPU timing); vector_add ran on
    // a GPU and does not pay (transfers dominate).
    let r = report("seeds");
    insta::assert_snapshot!(render(&r, Format::Table, "seeds"));
}

#[test]
fn table_of_a_static_analysis_with_passed_gate() {
    let mut r = report("multimodule");
    r.gate = Some(gate::check(
        &r,
        &GateOptions {
            fail_under: Some(50.0),
            fail_on_regression: false,
        },
    ));
    insta::assert_snapshot!(render(&r, Format::Table, "multimodule"));
}

#[test]
fn dot_colours_by_verdict_and_sizes_by_time() {
    let dot = render(&report("mixed_app"), Format::Dot, "mixed_app");
    // shade: cuda (green), 58.4% of time; running_total: nopython (amber), 19.3%.
    assert!(
        dot.contains("\"mixed_app.shade\" [fillcolor=\"#9be29b\", fontsize=21.7]"),
        "{dot}"
    );
    assert!(
        dot.contains("\"mixed_app.running_total\" [fillcolor=\"#ffd479\", fontsize=13.9]"),
        "{dot}"
    );
    assert!(dot.contains("\"mixed_app.fingerprint\" [fillcolor=\"#ff9e9e\""));
    assert!(dot.contains("\"mixed_app.main\" -> \"mixed_app.shade\" [style=bold]"));
}
