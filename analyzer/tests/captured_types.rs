//! Types captured from real calls replace assumptions and bring performance
//! findings: float64 data, arrays too small to pay for a launch.

use std::collections::HashMap;

use port_analyzer::{analyze, AnalyzeOptions, ArgType};

fn array(name: &str, dtype: &str, shape: &[u64]) -> ArgType {
    ArgType {
        name: name.into(),
        kind: "ndarray".into(),
        dtype: dtype.into(),
        ndim: Some(shape.len() as u32),
        shape: Some(shape.to_vec()),
        c_contiguous: Some(true),
    }
}

fn codes_with(captured: Vec<ArgType>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.py");
    std::fs::write(
        &path,
        "def scale(x, out):\n    for i in range(x.shape[0]):\n        out[i] = 2.0 * x[i]\n",
    )
    .unwrap();
    let opts = AnalyzeOptions {
        captured: HashMap::from([("k.scale".to_string(), captured)]),
    };
    let a = analyze(&path, &opts).unwrap();
    let f = &a.functions[0];
    assert_eq!(f.verdict, port_analyzer::Verdict::Cuda);
    assert!(f.types.is_some());
    f.findings.iter().map(|x| x.code.clone()).collect()
}

#[test]
fn captured_float64_arrays_are_a_performance_finding() {
    let codes = codes_with(vec![
        array("x", "float64", &[1_000_000]),
        array("out", "float64", &[1_000_000]),
    ]);
    assert!(codes.contains(&"PORT301".into()), "{codes:?}");
    assert!(!codes.contains(&"PORT303".into()), "{codes:?}");
    // Known types are not assumptions.
    assert!(!codes.contains(&"PORT401".into()), "{codes:?}");
}

#[test]
fn small_float32_arrays_do_not_pay_for_a_launch() {
    let codes = codes_with(vec![
        array("x", "float32", &[100]),
        array("out", "float32", &[100]),
    ]);
    assert!(codes.contains(&"PORT303".into()), "{codes:?}");
    assert!(!codes.contains(&"PORT301".into()), "{codes:?}");
}
