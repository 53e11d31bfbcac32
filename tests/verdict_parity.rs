//! One truth for verdicts (issue 13):
//! - Numba parity argument by argument: every row of the support tables
//!   (`fixtures/classify/numba_args.py`) is checked against real Numba: port
//!   finds an object-mode reason exactly when `njit` refuses the function,
//!   and names the row's own code (PORT116–PORT121);
//! - `cuda` ⇔ `port migrate` has a plan: over every migrate fixture, the
//!   functions migrate verifies (with the signatures of
//!   `tests/migrate_fixtures.rs`) are `cuda`, planned with the same ranks,
//!   and those it refuses are not.

mod common;
use common::*;

use std::collections::HashMap;

/// What Numba's nopython mode would say, in port's analysis: object when
/// any finding forces object mode (a `cuda` verdict may carry such findings
/// with PORT406: port migrates what Numba refuses).
fn numba_mode_object(f: &serde_json::Value) -> bool {
    f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["severity"] == "object")
}

/// The code a row of `numba_args.py` is about, from its name.
fn expected_code(name: &str) -> &'static str {
    if name.contains("keepdims") {
        "PORT117"
    } else if name.starts_with("histogram")
        || name.starts_with("linspace")
        || name.ends_with("_out")
    {
        "PORT118"
    } else if name.contains("axis") && !name.contains("transpose") {
        "PORT116"
    } else if name.starts_with("ufunc_") {
        "PORT119"
    } else if name.contains("list") {
        "PORT120"
    } else {
        "PORT121"
    }
}

#[test]
fn every_row_of_the_argument_tables_agrees_with_numba() {
    let numba = oracle("classify/numba_args");
    let port = analyze_json(&fixture("classify/numba_args.py"));
    let mut wrong = Vec::new();
    let (mut refused, mut taken) = (0, 0);
    for (name, res) in numba.as_object().unwrap() {
        let compiles = res["nopython"].as_bool().expect("a signature in the spec");
        let f = function(&port, name);
        let object = numba_mode_object(f);
        if compiles {
            taken += 1;
        } else {
            refused += 1;
        }
        if compiles == object {
            wrong.push(format!(
                "{name}: numba {} ({}), port finds {:?}",
                if compiles { "compiles" } else { "refuses" },
                res["detail"].as_str().unwrap_or(""),
                codes(f)
            ));
        } else if !compiles && !codes(f).iter().any(|c| c == expected_code(name)) {
            wrong.push(format!(
                "{name}: numba refuses it, port says so but not with {}: {:?}",
                expected_code(name),
                codes(f)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        refused >= 80 && taken >= 30,
        "{refused} refused, {taken} taken"
    );
}

/// `port migrate` can plan an `axis=`/`keepdims` reduction Numba refuses:
/// `cuda`, with Numba's reason kept and a PORT406 note.
#[test]
fn a_reduction_numba_refuses_is_cuda_with_a_lead_note() {
    let port = analyze_json(&fixture("classify/numba_args.py"));
    let f = function(&port, "method_mean_axis");
    assert_eq!(f["verdict"], "cuda", "{f}");
    let c = codes(f);
    assert!(c.contains(&"PORT116".to_string()), "{c:?}");
    assert!(c.contains(&"PORT406".to_string()), "{c:?}");
    assert_eq!(f["migration_plan"]["status"], "planned");
    // And one port cannot plan stays object, with the planner's reason:
    // `np.add.at` scatters through an index array.
    let f = function(&port, "ufunc_add_at");
    assert_eq!(f["verdict"], "object");
    assert_eq!(f["migration_plan"]["status"], "refused");
    assert!(codes(f).contains(&"PORT214".to_string()), "{f}");
}

/// Numba's list of NumPy functions (PORT102) is not port's: a function
/// Numba needs object mode for because of `np.ndarray` is planned and
/// `cuda`, one that calls `np.fft` stays `object` with the planner's
/// reason (naming the call and its line) beside Numba's.
#[test]
fn a_numpy_function_numba_lacks_is_left_to_the_planner() {
    let port = analyze_json(&fixture("migrate/programs.py"));
    let f = function(&port, "column_workspace");
    assert_eq!(f["verdict"], "cuda", "{f}");
    let c = codes(f);
    assert!(c.contains(&"PORT102".to_string()), "{c:?}");
    assert!(c.contains(&"PORT406".to_string()), "{c:?}");
    assert_eq!(f["migration_plan"]["status"], "planned", "{f}");

    let f = function(&port, "spectral_energy");
    assert_eq!(f["verdict"], "object", "{f}");
    assert_eq!(f["migration_plan"]["status"], "refused", "{f}");
    let c = codes(f);
    assert!(
        c.contains(&"PORT102".to_string()) && c.contains(&"PORT214".to_string()),
        "{c:?}"
    );
    let reason = f["migration_plan"]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("np.fft.rfft"), "{f}");
}

#[test]
fn port_explain_documents_every_new_code() {
    for code in [
        "PORT116", "PORT117", "PORT118", "PORT119", "PORT120", "PORT121", "PORT214", "PORT406",
    ] {
        let o = port_in(&repo(), &["explain", code]);
        assert!(o.status.success(), "{code}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains(code) && text.contains("## Fix"),
            "{code}: {text}"
        );
    }
}

/// `(file, function, signature)` of every migration `tests/migrate_fixtures.rs`
/// verifies: `verified("migrate/F.py", "f", "sig", ...)` and the
/// `program!` table of `migrate/programs.py`.
fn verified_cases() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(repo().join("tests/migrate_fixtures.rs")).unwrap();
    let mut out = Vec::new();
    // Calls may span lines: join the file and split on `verified(`.
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for part in flat.split("verified(").skip(1) {
        let strs: Vec<&str> = part.split('"').collect();
        // "file", "function", "signature"
        if strs.len() > 5 && strs[1].starts_with("migrate/") && strs[2].trim() == "," {
            out.push((strs[1].into(), strs[3].into(), strs[5].into()));
        }
    }
    let table = text.split("program! {").nth(1).expect("the program! table");
    for line in table.lines() {
        let line = line.trim();
        if let Some((name, rest)) = line.split_once(": \"") {
            if let Some(sig) = rest.strip_suffix("\",") {
                out.push(("migrate/programs.py".into(), name.into(), sig.into()));
            }
        }
    }
    out
}

#[test]
fn what_migrate_verifies_analyze_calls_cuda() {
    let cases = verified_cases();
    assert!(cases.len() >= 80, "only {} cases found", cases.len());
    let mut analyses: HashMap<String, serde_json::Value> = HashMap::new();
    let mut wrong = Vec::new();
    for (file, name, sig) in &cases {
        let a = analyses
            .entry(file.clone())
            .or_insert_with(|| analyze_json(&fixture(file)));
        let f = function(a, name);
        let plan = &f["migration_plan"];
        let planned_sig = plan["signature"].as_str().unwrap_or("");
        if f["verdict"] != "cuda" || plan["status"] != "planned" {
            wrong.push(format!(
                "{file} {name}: migrate verifies it with `{sig}`, analyze says {} (planned with `{planned_sig}`: {})",
                f["verdict"], plan["reason"]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The fixture of refusals (two of which port now migrates): for every
/// function, `port migrate` with the types the analysis planned with
/// refuses exactly what the analysis does not call `cuda`.
#[test]
fn migrate_refuses_exactly_what_analyze_does_not_call_cuda() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/refused.py"), tmp.path().join("refused.py")).unwrap();
    let a = analyze_json(&tmp.path().join("refused.py"));
    let functions = a["functions"].as_array().unwrap();
    let mut refused = 0;
    for f in functions {
        let name = f["name"].as_str().unwrap();
        let Some(sig) = f["migration_plan"]["signature"].as_str() else {
            // Object mode: not planned, never `cuda`.
            assert_eq!(f["verdict"], "object", "{name}: {f}");
            continue;
        };
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                name,
                "refused.py",
                "--signature",
                sig,
                "--json",
            ],
        );
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        let cuda = f["verdict"] == "cuda";
        assert_eq!(
            j["status"] == "refused",
            !cuda,
            "{name}: analyze says {}, migrate says {}: {j}",
            f["verdict"],
            j["status"]
        );
        if !cuda {
            refused += 1;
            // The analysis gives the planner's reason, with its line.
            let plan_line = f["migration_plan"]["line"].clone();
            assert!(
                f["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["code"] == "PORT214" && x["line"] == plan_line),
                "{name}: {f}"
            );
        }
    }
    assert!(refused >= 3, "only {refused} refusals checked");
}
