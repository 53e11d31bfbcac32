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
