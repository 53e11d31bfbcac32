//! The dependence analysis against the truth: every loop of
//! `fixtures/deps/index_sets.py` is classified by `port_analyzer`, then run
//! by the project's Python with its parallel loop (`prange`) in order,
//! reversed and shuffled. A loop the analysis calls independent must give
//! the same arrays in every order; a recurrence it reports must really
//! depend on the order (so this harness can tell the two apart).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

const DRIVER: &str = r#"
import builtins, importlib.util, json, random, sys
import numpy as np
spec = importlib.util.spec_from_file_location("cases", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
def run(name, order):
    mod.prange = lambda *a: order(list(builtins.range(*a)))
    args = mod.CASES[name][1]()
    getattr(mod, name)(*args)
    return [a for a in args if isinstance(a, np.ndarray)]
def shuffled(xs):
    random.Random(3).shuffle(xs)
    return xs
out = {}
for name in mod.CASES:
    fwd = run(name, lambda xs: xs)
    same = lambda other: all(np.array_equal(a, b) for a, b in zip(fwd, other))
    out[name] = same(run(name, lambda xs: xs[::-1])) and same(run(name, shuffled))
print(json.dumps(out))
"#;

/// Whether each loop gives the same arrays in every order.
fn order_independent(file: &std::path::Path) -> HashMap<String, bool> {
    let python = repo().join(".venv/bin/python");
    let o = Command::new(&python)
        .args(["-c", DRIVER])
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (run make test to create .venv)", python.display()));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What the fixture says the analysis must find, from its CASES table.
fn expected(source: &str) -> Vec<(String, String)> {
    let table = &source[source.find("CASES = {").expect("a CASES table")..];
    table
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('}'))
        .map(|l| {
            let parts: Vec<&str> = l.split('"').collect();
            (parts[1].to_string(), parts[3].to_string())
        })
        .collect()
}

#[test]
fn independent_loops_give_the_same_result_in_any_order() {
    let file = repo().join("fixtures/deps/index_sets.py");
    let source = std::fs::read_to_string(&file).unwrap();
    let analysis = port_analyzer::analyze_bytes("index_sets.py", source.as_bytes());
    let truth = order_independent(&file);
    let cases = expected(&source);
    assert!(cases.len() >= 10, "{cases:?}");
    for (name, want) in cases {
        let f = analysis
            .functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no function {name}"));
        let port204: Vec<&str> = f
            .findings
            .iter()
            .filter(|x| x.code == "PORT204")
            .map(|x| x.message.as_str())
            .collect();
        let same_in_any_order = truth[&name];
        match want.as_str() {
            "independent" => {
                assert!(port204.is_empty(), "{name}: reported {port204:?}");
                assert!(
                    f.findings.iter().any(|x| x.code == "PORT405"),
                    "{name}: no PORT405"
                );
                assert!(
                    same_in_any_order,
                    "{name}: called independent, but its result depends on the order"
                );
            }
            "recurrence" => {
                assert!(!port204.is_empty(), "{name}: no PORT204");
                assert!(
                    !same_in_any_order,
                    "{name}: a recurrence whose order does not matter: the case proves nothing"
                );
            }
            "may_depend" => {
                // Beyond the arithmetic: reported, though it is independent.
                assert!(!port204.is_empty(), "{name}: no PORT204");
                assert!(same_in_any_order, "{name}");
            }
            other => panic!("{name}: unknown expectation {other}"),
        }
    }
}
