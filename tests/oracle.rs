//! Differential test against real Numba: for every function of the
//! classifier fixtures, port says `object` exactly when Numba's `njit` fails
//! to compile it. The oracle venv is built by `make test`
//! (`scripts/setup.sh --oracle`).

mod common;
use common::*;

use std::process::Command;

fn oracle(fixture_rel: &str) -> serde_json::Value {
    let py = repo().join(".venv-oracle/bin/python");
    assert!(
        py.exists(),
        "the Numba oracle venv is missing: run `make test` (or scripts/setup.sh --oracle)"
    );
    let src = fixture(&format!("{fixture_rel}.py"));
    let spec = fixture(&format!("{fixture_rel}.spec.json"));
    let out = Command::new(py)
        .arg(repo().join("scripts/oracle.py"))
        .arg(&src)
        .arg(&spec)
        .output()
        .expect("oracle runs");
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle prints JSON")
}

fn agree(fixture_rel: &str) -> usize {
    let numba = oracle(fixture_rel);
    let port = analyze_json(&fixture(&format!("{fixture_rel}.py")));
    let mut disagreements = Vec::new();
    let mut checked = 0;
    for (name, res) in numba.as_object().unwrap() {
        let compiles = res["nopython"]
            .as_bool()
            .unwrap_or_else(|| panic!("{name}: no signature in the spec ({res})"));
        let f = function(&port, name);
        let object = f["verdict"] == "object";
        checked += 1;
        if compiles == object {
            disagreements.push(format!(
                "{name}: numba njit {} ({}), port says {} ({})",
                if compiles { "compiles" } else { "fails" },
                res["detail"].as_str().unwrap_or(""),
                f["verdict"],
                f["findings"]
                    .get(0)
                    .map(|x| x["message"].to_string())
                    .unwrap_or_default()
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    checked
}

#[test]
fn port_agrees_with_numba_on_every_fixture_function() {
    let n = agree("classify/seeds") + agree("classify/red_flags");
    assert!(n >= 30, "only {n} functions checked");
}
