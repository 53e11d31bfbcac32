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
    codes_of(
        "def scale(x, out):\n    for i in range(x.shape[0]):\n        out[i] = 2.0 * x[i]\n",
        "scale",
        captured,
    )
}

fn codes_of(source: &str, function: &str, captured: Vec<ArgType>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.py");
    std::fs::write(&path, source).unwrap();
    let opts = AnalyzeOptions {
        captured: HashMap::from([(format!("k.{function}"), captured)]),
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

/// A kernel density estimate from a real app: every grid point sums over
/// every sample. Its arrays are small, its work is not.
const KDE: &str = "import math\n\ndef kde_eval(samples, grid, bandwidth, density):\n    norm = 1.0 / (samples.shape[0] * bandwidth * math.sqrt(2.0 * math.pi))\n    for g in range(grid.shape[0]):\n        acc = 0.0\n        x = grid[g]\n        for s in range(samples.shape[0]):\n            u = (x - samples[s]) / bandwidth\n            acc += math.exp(-0.5 * u * u)\n        density[g] = acc * norm\n";

fn kde_codes(samples: u64, grid: u64) -> Vec<String> {
    let scalar = ArgType {
        name: "bandwidth".into(),
        kind: "scalar".into(),
        dtype: "float".into(),
        ndim: None,
        shape: None,
        c_contiguous: None,
    };
    codes_of(
        KDE,
        "kde_eval",
        vec![
            array("samples", "float32", &[samples]),
            array("grid", "float32", &[grid]),
            scalar,
            array("density", "float32", &[grid]),
        ],
    )
}

#[test]
fn small_arrays_with_all_pairs_work_are_not_too_small_for_a_launch() {
    // 4,000 samples x 900 grid points: 3.6 M exponentials.
    let codes = kde_codes(4000, 900);
    assert!(!codes.contains(&"PORT303".into()), "{codes:?}");
    // 40 x 30 = 1,200: too little work for any launch.
    let codes = kde_codes(40, 30);
    assert!(codes.contains(&"PORT303".into()), "{codes:?}");
}

#[test]
fn a_loop_bound_from_a_scalar_argument_claims_nothing_about_size() {
    // `steps` is not captured as a value: the work could be anything.
    let codes = codes_of(
        "def walk(x, steps, out):\n    for t in range(steps):\n        for i in range(x.shape[0]):\n            out[i] += x[i]\n",
        "walk",
        vec![array("x", "float32", &[100]), array("out", "float32", &[100])],
    );
    assert!(!codes.contains(&"PORT303".into()), "{codes:?}");
}
