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
        same_as: None,
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
    let f = report_of(source, function, captured);
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
        same_as: None,
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

/// The analysis of `function` in `source`, with these captured types.
fn report_of(
    source: &str,
    function: &str,
    captured: Vec<ArgType>,
) -> port_analyzer::FunctionReport {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.py");
    std::fs::write(&path, source).unwrap();
    let opts = AnalyzeOptions {
        captured: HashMap::from([(format!("k.{function}"), captured)]),
    };
    let a = analyze(&path, &opts).unwrap();
    a.functions
        .into_iter()
        .find(|f| f.name == function)
        .unwrap_or_else(|| panic!("no {function}"))
}

/// `x` passed as both `a` and `out` in the captured call.
fn in_place(first: &str, later: &str) -> Vec<ArgType> {
    let mut b = array(later, "float32", &[100_000]);
    b.same_as = Some(first.into());
    vec![array(first, "float32", &[100_000]), b]
}

/// The program's call in place is judged as the program runs it: both
/// names one array. Each case is also run in Python, in place and with a
/// separate `out`, to show which ones really differ.
const IN_PLACE: &str = "\
def smooth(a, out):
    for i in range(1, a.shape[0]):
        out[i] = 0.5 * (a[i] + a[i - 1])


def clamp(a, out):
    for i in range(a.shape[0]):
        out[i] = min(max(a[i], 0.25), 0.75)


def twice(a, out):
    for i in range(a.shape[0]):
        out[i] = 2.0 * a[i]
    for i in range(a.shape[0]):
        out[i] += a[i]


def halve(a, out):
    for step in range(3):
        out[:] = a * 0.5


def shifted(a, out):
    out[1:] = a[:-1] + a[1:]
";

#[test]
fn a_call_in_place_is_judged_with_both_names_one_array() {
    let verdict = |f: &str, captured| {
        let r = report_of(IN_PLACE, f, captured);
        let why: Vec<String> = r
            .findings
            .iter()
            .filter(|x| x.code == "PORT204")
            .map(|x| format!("{}: {}", x.line, x.message))
            .collect();
        (r.verdict, why)
    };
    use port_analyzer::Verdict::{Cuda, Nopython};
    // Apart, every one of them is parallel.
    for f in ["smooth", "clamp", "twice", "halve", "shifted"] {
        let plain = vec![
            array("a", "float32", &[100_000]),
            array("out", "float32", &[100_000]),
        ];
        assert_eq!(verdict(f, plain), (Cuda, vec![]), "{f}");
    }
    // `smooth(x, x)`: each element reads the one the iteration before wrote.
    let (v, why) = verdict("smooth", in_place("a", "out"));
    assert_eq!(v, Nopython);
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].starts_with("3: the program passes one array as `a` and `out` (its captured call): in place, `a[i-1]` (line 3) reads an element that another iteration writes as `out[i]` (line 3)"),
        "{why:?}"
    );
    // `clamp(x, x)`: each element reads only itself, before writing it.
    assert_eq!(verdict("clamp", in_place("a", "out")), (Cuda, vec![]));
    // `twice(x, x)`: the second loop reads what the first wrote.
    let (v, why) = verdict("twice", in_place("a", "out"));
    assert_eq!(v, Nopython);
    assert!(
        why[0].starts_with("15: the program passes one array as `out` and `a`"),
        "{why:?}"
    );
    assert!(
        why[0].contains("line 15 reads `a` after line 13 wrote `out`"),
        "{why:?}"
    );
    // `halve(x, x)`: each step reads what the step before wrote.
    let (v, why) = verdict("halve", in_place("a", "out"));
    assert_eq!(v, Nopython);
    assert!(
        why[0].contains("each iteration of the loop at line 19 reads `a` (line 20) after the one before wrote `out` (line 20)"),
        "{why:?}"
    );
    // `shifted(x, x)`: NumPy evaluates the right side before it assigns,
    // and so do the kernels on one copy per argument: the same result.
    assert_eq!(verdict("shifted", in_place("a", "out")), (Cuda, vec![]));
}

/// What the cases above really do in place and apart, run in Python: the
/// verdicts must say "differs" exactly where they do.
#[test]
fn the_in_place_cases_differ_exactly_where_the_analysis_says() {
    let py = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python");
    if !std::path::Path::new(py).exists() {
        panic!("no venv python at {py}: run `make test`");
    }
    let script = format!(
        "{IN_PLACE}\nimport numpy as np\n\
         for f in (smooth, clamp, twice, halve, shifted):\n\
         \x20   x = np.linspace(0.0, 1.0, 50)\n\
         \x20   apart = x.copy(); f(x.copy(), apart)\n\
         \x20   inplace = x.copy(); f(inplace, inplace)\n\
         \x20   print(f.__name__, 'same' if np.array_equal(apart, inplace) else 'differs')\n"
    );
    let out = std::process::Command::new(py)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "smooth differs\nclamp same\ntwice differs\nhalve differs\nshifted same\n"
    );
}
