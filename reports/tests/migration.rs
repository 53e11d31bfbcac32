//! The performance of migrations (`timing`, `projection`, `device`,
//! `bandwidth` in `.port/migrations/*.json`) in every format: a simulator
//! run never reads as a speedup, a run port judged not profitable keeps its
//! reason, and records from before the final `port.migration/1` still load.

mod common;

use std::path::Path;

use common::*;
use port_reports::terminal::Style;
use port_reports::timing::NO_GPU_TIMING;
use port_reports::{Format, PortState, Report, SourceRoot};

/// Renders wide enough that no table cell wraps.
fn render_wide(r: &Report, format: Format, name: &str) -> String {
    port_reports::render(
        r,
        format,
        &SourceRoot(program_dir(name)),
        Style {
            color: false,
            width: Some(1000),
        },
    )
}

/// The migrations' part of a rendering.
fn migrations_part(out: &str, format: Format) -> &str {
    let (start, end) = match format {
        Format::Table => ("migrated function", "└"),
        Format::Md => ("### Migrated functions", "### Top blockers"),
        Format::Html => ("<section id=\"migrations\">", "</section>"),
        other => panic!("no migrations part in {other:?}"),
    };
    let from = out
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in {out}"));
    let to = from + out[from..].find(end).unwrap();
    &out[from..to]
}

/// The row of one migrated function in a table, Markdown or HTML rendering.
fn row<'a>(out: &'a str, format: Format, function: &str) -> &'a str {
    let part = migrations_part(out, format);
    let needle = match format {
        Format::Table => format!("│ {function} "),
        Format::Md => format!("| `{function}` |"),
        Format::Html => format!("<tr><td><code>{function}</code>"),
        _ => unreachable!(),
    };
    let rows: Vec<&str> = match format {
        Format::Html => part.split("</tr>").collect(),
        _ => part.lines().collect(),
    };
    let hits: Vec<&str> = rows.into_iter().filter(|r| r.contains(&needle)).collect();
    assert_eq!(hits.len(), 1, "{function} in {part}");
    hits[0]
}

const SHOWN: [Format; 3] = [Format::Table, Format::Md, Format::Html];

fn load(dir: &Path) -> Report {
    Report::build(&PortState::load(dir).expect("state loads"), None).expect("report builds")
}

#[test]
fn a_simulator_migration_never_shows_a_speedup() {
    let r = report("seeds");
    for format in SHOWN {
        let out = render_wide(&r, format, "seeds");
        let saxpy = row(&out, format, "saxpy");
        assert!(saxpy.contains(NO_GPU_TIMING), "{format:?}: {saxpy}");
        for bad in ["×", "null", "NaN", "inf"] {
            assert!(!saxpy.contains(bad), "{format:?}: `{bad}` in {saxpy}");
        }
        // The CPython time is real, and shown.
        assert!(saxpy.contains("310 ms"), "{format:?}: {saxpy}");
    }
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let saxpy = &v["migrations"][0];
    assert_eq!(saxpy["function"], "saxpy");
    assert_eq!(saxpy["device"]["name"], "simulator");
    assert!(saxpy["timing"]["speedup_kernel"].is_null());
    assert!(saxpy["timing"]["kernel_s"].is_null());
    assert_eq!(saxpy["timing"]["cpython_s"], 0.31);
    assert_eq!(saxpy["timing"]["compile_s"], 0.012);
    assert!(saxpy["projection"]["profitable"].is_null());
    assert!(saxpy["bandwidth"].is_null());
}

#[test]
fn a_simulator_record_carrying_speedups_still_shows_none() {
    // A record says simulator but holds numbers: the host JIT's speed says
    // nothing about a GPU's, so none of them is shown as a speedup.
    let tmp = scratch_state("seeds");
    let p = tmp.path().join(".port/migrations/saxpy.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    m["timing"]["speedup_kernel"] = 12.0.into();
    m["timing"]["speedup_end_to_end"] = 0.0.into();
    m["projection"]["program_speedup"] = 1.5.into();
    m["bandwidth"] = serde_json::json!({"pct_of_peak": 50.0, "memory_bound": true});
    std::fs::write(&p, m.to_string()).unwrap();
    let r = load(&tmp.path().join(".port"));
    for format in SHOWN {
        let out = render_wide(&r, format, "seeds");
        let saxpy = row(&out, format, "saxpy");
        assert!(saxpy.contains(NO_GPU_TIMING), "{format:?}: {saxpy}");
        assert!(!saxpy.contains("12.0"), "{format:?}: {saxpy}");
        assert!(!saxpy.contains("% of peak"), "{format:?}: {saxpy}");
    }
}

#[test]
fn a_gpu_migration_shows_its_speedups_device_and_projection() {
    let r = report("mixed_app");
    for format in SHOWN {
        let out = render_wide(&r, format, "mixed_app");
        let shade = row(&out, format, "mixed_app.shade");
        for want in [
            "NVIDIA H100 80GB HBM3",
            "4342.9×",
            "212.1×",
            "912 ms",
            "2.4×",
            "58.4%",
        ] {
            assert!(shade.contains(want), "{format:?}: no `{want}` in {shade}");
        }
        assert!(!shade.contains("not profitable"), "{format:?}: {shade}");
        // Compute-bound: its bandwidth is no figure of merit.
        assert!(!shade.contains("% of peak"), "{format:?}: {shade}");
    }
    let html = render_wide(&r, Format::Html, "mixed_app");
    let shade = row(&html, Format::Html, "mixed_app.shade");
    assert!(shade.contains("(sm_90, 132 SMs)"), "{shade}");
    assert!(
        shade.contains("title=\"kernel 210 µs · median of 20 runs\""),
        "{shade}"
    );
    assert!(
        shade.contains("title=\"end to end 4.30 ms · transfers 4.10 ms · median of 20 runs\""),
        "{shade}"
    );
    assert!(
        shade.contains("title=\"median of 5 runs\">912 ms"),
        "{shade}"
    );
}

#[test]
fn a_not_profitable_verdict_keeps_its_reason() {
    let why = "not profitable: transfers dominate: copying 12.0 MB to and from the GPU takes 7.8 ms, the CPython original 3.5 ms";
    let r = report("seeds");
    for format in SHOWN {
        let out = render_wide(&r, format, "seeds");
        let vector_add = row(&out, format, "vector_add");
        assert!(vector_add.contains(why), "{format:?}: {vector_add}");
        // Its speedups are real measurements, shown as they are.
        let speedups: &[&str] = match format {
            Format::Html => &[
                "<td class=\"num\" title=\"kernel 4.30 µs · median of 20 runs\">814.0×</td>",
                ">0.43×</td>",
            ],
            _ => &["814.0× kernel, 0.43× end-to-end"],
        };
        for want in speedups {
            assert!(
                vector_add.contains(want),
                "{format:?}: no `{want}` in {vector_add}"
            );
        }
        assert!(
            vector_add.contains("83% of peak (2791 / 3352 GB/s)"),
            "{format:?}: {vector_add}"
        );
    }
    let html = render_wide(&r, Format::Html, "seeds");
    assert!(row(&html, Format::Html, "vector_add").contains("<td class=\"not-profitable\">"));
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let m = &v["migrations"][1];
    assert_eq!(m["function"], "vector_add");
    assert_eq!(m["projection"]["profitable"], false);
    assert!(m["projection"]["why"]
        .as_str()
        .unwrap()
        .starts_with("transfers dominate"));
    assert_eq!(m["bandwidth"]["pct_of_peak"], 83.2);

    // Without a reason the verdict still shows.
    let tmp = scratch_state("seeds");
    let p = tmp.path().join(".port/migrations/vector_add.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    m["projection"]["why"] = serde_json::Value::Null;
    std::fs::write(&p, m.to_string()).unwrap();
    let r = load(&tmp.path().join(".port"));
    for format in SHOWN {
        let out = render_wide(&r, format, "seeds");
        assert!(row(&out, format, "vector_add").contains("not profitable"));
    }
}

#[test]
fn a_record_from_before_the_final_schema_still_reports() {
    let tmp = scratch_state("mixed_app");
    let old =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/migration-before-final-schema.json");
    std::fs::copy(old, tmp.path().join(".port/migrations/shade.json")).unwrap();
    let state = PortState::load(&tmp.path().join(".port")).expect("an old record loads");
    let m = state
        .migrations
        .iter()
        .find(|m| m.function == "mixed_app.shade")
        .unwrap();
    let p = m.projection.as_ref().unwrap();
    assert_eq!(p.hotspot_pct, Some(58.4));
    assert_eq!(p.program_speedup, Some(2.4));
    assert_eq!(
        p.why.as_deref(),
        Some("shade is 58.4% of sampled time; the rest stays on the CPU")
    );
    assert_eq!(p.profitable, None);
    let t = m.timing.as_ref().unwrap();
    assert_eq!(t.speedup_kernel, Some(4342.9));
    assert_eq!(t.repeats, None);
    let d = m.device.as_ref().unwrap();
    assert_eq!(d.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(d.sms, None);
    assert_eq!(m.bandwidth, None);

    let r = Report::build(&state, None).unwrap();
    for format in SHOWN {
        let out = render_wide(&r, format, "mixed_app");
        let shade = row(&out, format, "mixed_app.shade");
        for want in ["4342.9×", "212.1×", "2.4×, hotspot 58.4% of time"] {
            assert!(shade.contains(want), "{format:?}: no `{want}` in {shade}");
        }
    }
    for format in [Format::Sarif, Format::Dot] {
        render_wide(&r, format, "mixed_app");
    }
    // JSON says it with the final names.
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let p = &v["migrations"][0]["projection"];
    assert_eq!(p["hotspot_pct"], 58.4);
    assert_eq!(p["program_speedup"], 2.4);
    assert!(p.get("share_pct").is_none() && p.get("note").is_none());
}

#[test]
fn old_and_new_names_together_load_and_the_new_one_wins() {
    let m: port_reports::Migration = serde_json::from_value(serde_json::json!({
        "schema": "port.migration/1",
        "function": "f",
        "status": "verified",
        "projection": {"share_pct": 10.0, "hotspot_pct": 41.2,
                       "whole_program_speedup": 1.1, "program_speedup": 1.6,
                       "note": "old", "why": "new"}
    }))
    .unwrap();
    let p = m.projection.unwrap();
    assert_eq!(
        (p.hotspot_pct, p.program_speedup, p.why.as_deref()),
        (Some(41.2), Some(1.6), Some("new"))
    );
}

#[test]
fn every_field_is_optional_and_unknown_ones_are_ignored() {
    let tmp = scratch_state("mixed_app");
    let dir = tmp.path().join(".port/migrations");
    std::fs::write(
        dir.join("shade.json"),
        r#"{"schema": "port.migration/1", "function": "mixed_app.shade", "status": "verified",
            "verification": {"backend": "gpu", "inputs": "captured", "passed": true,
                             "rtol": 1e-7, "compared": 3},
            "timing": {"traffic": {"bytes_to_device": 5}},
            "projection": {},
            "device": {"future": [1, 2]},
            "bandwidth": {"bytes": 12},
            "rewrites": [], "notes": ["a later port's field"]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("running_total.json"),
        r#"{"schema": "port.migration/1", "function": "running_total", "status": "failed"}"#,
    )
    .unwrap();
    let r = load(&tmp.path().join(".port"));
    for format in SHOWN {
        let out = render_wide(&r, format, "mixed_app");
        let shade = row(&out, format, "mixed_app.shade");
        // Nothing measured: no figure, and nothing that reads as one.
        for bad in ["×", "null", "NaN", "% of peak", "not profitable"] {
            assert!(!shade.contains(bad), "{format:?}: `{bad}` in {shade}");
        }
        row(&out, format, "running_total");
    }
    for format in [Format::Json, Format::Sarif, Format::Dot] {
        render_wide(&r, format, "mixed_app");
    }
}

/// `shade` doctored into an inconclusive verification: the kernels differ
/// from an original that does not reproduce itself.
fn inconclusive_state() -> tempfile::TempDir {
    let tmp = scratch_state("mixed_app");
    let p = tmp.path().join(".port/migrations/shade.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    m["status"] = "inconclusive".into();
    m["verification"]["passed"] = false.into();
    m["reasons"] = serde_json::json!([{"line": 7, "rewrite": "verify",
        "message": "the original itself is not reproducible in float64 here: its result moves by 1.2e-1 against an extended-precision run"}]);
    std::fs::write(&p, m.to_string()).unwrap();
    tmp
}

#[test]
fn an_inconclusive_migration_shows_its_reason_and_is_not_migrated() {
    let tmp = inconclusive_state();
    let r = load(&tmp.path().join(".port"));
    for format in SHOWN {
        let out = render_wide(&r, format, "mixed_app");
        let shade = row(&out, format, "mixed_app.shade");
        assert!(shade.contains("inconclusive"), "{format:?}: {shade}");
        assert!(!shade.contains("verified"), "{format:?}: {shade}");
        if format != Format::Table {
            assert!(
                shade.contains("not reproducible in float64"),
                "{format:?}: {shade}"
            );
        }
    }
    // Not migrated: no share of time counts, in any format.
    assert_eq!(r.coverage.migrated_pct, 0.0);
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(v["migrations"][0]["status"], "inconclusive");
    assert_eq!(v["functions"][0]["migration"], "inconclusive");
    assert_eq!(v["coverage"]["migrated_pct"], 0.0);
    let sarif: serde_json::Value =
        serde_json::from_str(&render_wide(&r, Format::Sarif, "mixed_app")).unwrap();
    assert_eq!(
        sarif["runs"][0]["properties"]["coverage"]["migrated_pct"],
        0.0
    );
    let html = render_wide(&r, Format::Html, "mixed_app");
    assert!(html.contains("migration inconclusive"));
    // A baseline saved now does not list it as verified.
    let s = PortState::load(&tmp.path().join(".port")).unwrap();
    let b = port_reports::Baseline::new(&s.analysis, r.coverage, &s.migrations);
    assert!(b.verified.is_empty(), "{:?}", b.verified);
}
