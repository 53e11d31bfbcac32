//! The whole loop a user runs, in a folder of their own: analyse, migrate,
//! report. Each stage reads what the one before left in `.port/`.

mod common;
use common::*;

#[test]
fn analyze_migrate_report_from_outside_the_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/seeds.py"), tmp.path().join("seeds.py")).unwrap();
    let py = repo().join(".venv/bin/python");
    assert!(py.exists(), "no .venv: run `make test` first");
    let py = py.to_str().unwrap();

    let o = port_in(tmp.path(), &["analyze", "--static", "seeds.py"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // go_fast calls math (np.tanh): libdevice must be found from the venv of
    // --python even though the working directory is not the checkout.
    for (f, sig) in [
        ("saxpy", "float32, float32[:], float32[:], float32[:]"),
        ("go_fast", "float64[:,:]"),
    ] {
        let o = port_in(
            tmp.path(),
            &[
                "migrate",
                "--function",
                f,
                "--signature",
                sig,
                "--python",
                py,
                "seeds.py",
            ],
        );
        assert!(o.status.success(), "{f}: {}\n{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("verified"), "{}", stdout(&o));
    }

    let o = port_in(tmp.path(), &["report", "--format", "md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.contains("| `saxpy` | verified | simulator"), "{md}");
    assert!(md.contains("| `go_fast` | verified | simulator"), "{md}");

    let o = port_in(tmp.path(), &["report", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let migrated = j["coverage"]["migrated_pct"].as_f64().unwrap();
    assert!(migrated > 0.0, "{}", j["coverage"]);
}

#[test]
fn a_profiled_run_supplies_the_types_and_inputs_of_a_migration() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("apps/mixed_app.py"),
        tmp.path().join("mixed_app.py"),
    )
    .unwrap();
    let py = repo().join(".venv/bin/python");
    assert!(py.exists(), "no .venv: run `make test` first");
    let py = py.to_str().unwrap();

    let o = port_in(
        tmp.path(),
        &["analyze", "--python", py, "mixed_app.py", "--", "1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // No --signature: the captured call gives the types and the inputs.
    let o = port_in(
        tmp.path(),
        &[
            "migrate",
            "--function",
            "shade",
            "--json",
            "--python",
            py,
            "mixed_app.py",
        ],
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["verification"]["inputs"], "captured",
        "{}",
        j["verification"]
    );

    // The profile's share of `shade` carries into the projection.
    let share = j["projection"]["hotspot_pct"].as_f64().unwrap_or(0.0);
    assert!(share > 5.0 && share <= 100.0, "{}", j["projection"]);

    // port verify runs it again on the same captured inputs.
    let o = port_in(tmp.path(), &["verify", "--python", py, "--json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["verification"]["inputs"], "captured", "{r}");
    assert_eq!(
        r["projection"]["hotspot_pct"],
        j["projection"]["hotspot_pct"]
    );

    // Re-analysing for the migration kept the profile.
    let a: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join(".port/analysis.json")).unwrap())
            .unwrap();
    assert_eq!(a["profiled"], true);
    assert_eq!(a["coverage"]["basis"], "samples");
    assert!(function(&a, "shade")["types"].is_array());
}
