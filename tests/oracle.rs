//! Differential test against real Numba: for every function of the
//! classifier fixtures, port says `object` exactly when Numba's `njit` fails
//! to compile it. The oracle venv is built by `make test`
//! (`scripts/setup.sh --oracle`).

mod common;
use common::*;

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
