//! The real profiler on the realistic fixtures: ranking, shares, coverage,
//! edges, line detail, exports.

mod common;

use common::*;
use port_profiler::{write_flamegraph, write_speedscope, ArgKind};

/// mixed_app: shade ~60%, fingerprint ~20%, running_total ~20% of the work.
#[test]
fn mixed_app_ranks_the_three_kinds_of_hot_code_in_known_shares() {
    let dir = tempfile::tempdir().unwrap();
    // Five rounds: about a second and a half here, and no fewer than 200
    // samples on a faster machine (CI's gave 134 for three rounds).
    let mut opts = options("mixed_app.py", &["5"], dir.path());
    opts.capture = false;
    let p = run(&opts).unwrap();

    assert!(p.exit.success(), "{:?}", p.exit);
    assert!(p.samples >= 150, "only {} samples at 200 Hz", p.samples);
    assert_eq!(p.rate_hz, 200);
    assert_eq!(p.python_version.as_deref().map(|v| &v[..2]), Some("3."));
    assert_eq!(ranking(&p)[0], "shade", "ranking {:?}", ranking(&p));
    // Then the other two; only `main` (its set-up and NumPy's lazy imports)
    // may come between them when the machine is busy.
    let top4 = &ranking(&p)[..4];
    assert!(
        top4.contains(&"fingerprint") && top4.contains(&"running_total"),
        "ranking {:?}",
        ranking(&p)
    );

    let shade = function(&p, "shade");
    let fingerprint = function(&p, "fingerprint");
    let scan = function(&p, "running_total");
    // Generous margins: sampling measures wall time, and when the machine is
    // busy, start-up (importing NumPy) and whichever function runs during a
    // burst of load stretch. So the three are compared with each other, and
    // their sum with the whole run.
    let hot = shade.self_pct + fingerprint.self_pct + scan.self_pct;
    let share = |f: &port_profiler::FunctionHotspot| 100.0 * f.self_pct / hot;
    assert!(
        (38.0..=80.0).contains(&share(shade)),
        "shade {}",
        share(shade)
    );
    assert!(
        (8.0..=40.0).contains(&share(fingerprint)),
        "fingerprint {}",
        share(fingerprint)
    );
    assert!((8.0..=40.0).contains(&share(scan)), "scan {}", share(scan));
    // Leaf functions: total equals self, but for the rare read torn by the
    // running app (a stale deeper frame): 3 points of slack, as below.
    // Drivers: total covers their callees.
    assert!(
        shade.total_pct - shade.self_pct <= 3.0,
        "shade total {} vs self {}",
        shade.total_pct,
        shade.self_pct
    );
    let main = function(&p, "main");
    // Most of the run is main; how much is start-up (importing numpy)
    // depends on the machine's load, so the bound is loose: the check that
    // matters is that main covers its callees, below.
    assert!(main.total_pct >= 70.0, "main total {}", main.total_pct);
    // (A read torn by the running app may lose a frame now and then: 3 points of slack.)
    let callees = shade.total_pct + scan.total_pct + fingerprint.total_pct;
    assert!(
        main.total_pct >= callees - 3.0,
        "main {} < {callees}",
        main.total_pct
    );
    assert!(function(&p, "<module>").total_pct >= 95.0);

    // Time-weighted coverage: the three hot functions are most of the run.
    assert!(hot >= 60.0, "coverage {hot}");
    let all: f64 = p.functions.iter().map(|f| f.self_pct).sum();
    let unattributed = 100.0 * p.unattributed_samples as f64 / p.samples as f64;
    assert!(
        (all + unattributed - 100.0).abs() < 1e-6,
        "self shares sum to {all} + {unattributed}"
    );

    // Sampled call edges.
    for callee in ["shade", "fingerprint", "running_total"] {
        let e = p
            .edges
            .iter()
            .find(|e| e.caller == "main" && e.callee == callee)
            .unwrap_or_else(|| panic!("no main -> {callee} edge in {:?}", p.edges));
        assert!(e.samples > 0);
    }
    assert!(p
        .edges
        .iter()
        .any(|e| e.caller == "<module>" && e.callee == "main"));

    // Line detail with source text: shade's two body lines dominate.
    let shade_lines: Vec<_> = p.lines.iter().filter(|l| l.function == "shade").collect();
    assert!(shade_lines
        .iter()
        .any(|l| l.source.starts_with("r = math.sqrt(")));
    let line_sum: u64 = shade_lines.iter().map(|l| l.self_samples).sum();
    assert_eq!(line_sum, shade.self_samples, "lines add up to the function");
    assert!(p.lines.iter().all(|l| !l.source.is_empty()));

    // Exports.
    let svg = dir.path().join("flame.svg");
    write_flamegraph(&p, &svg).unwrap();
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("shade (mixed_app.py)"));
    let ss = dir.path().join("speedscope.json");
    write_speedscope(&p, &ss).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ss).unwrap()).unwrap();
    let weights: f64 = v["profiles"][0]["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_f64().unwrap())
        .sum();
    assert!((weights - p.samples as f64 / 200.0).abs() < 1e-6);

    // The whole profile is serialisable for `port analyze --json`.
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["functions"][0]["key"], "shade");
    assert!(json["exit"]["code"] == 0);
}

#[test]
fn black_scholes_time_goes_to_the_pricing_functions_with_numpy_time_included() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("black_scholes.py", &["1000000", "16"], dir.path());
    opts.capture_functions = 2;
    let p = run(&opts).unwrap();
    assert!(p.exit.success());

    // All of the time is inside NumPy, yet it lands on the app functions.
    let bs = function(&p, "black_scholes");
    let cnd = function(&p, "cnd");
    assert!(
        bs.total_pct >= 45.0,
        "black_scholes total {}: {:#?} {:?}",
        bs.total_pct,
        p.functions,
        p.warnings
    );
    assert!(bs.total_samples >= cnd.total_samples);
    assert!(cnd.self_pct >= 10.0, "cnd self {}", cnd.self_pct);
    assert!(p
        .edges
        .iter()
        .any(|e| e.caller == "black_scholes" && e.callee == "cnd"));
    assert!(
        p.stacks.iter().any(|s| s
            .frames
            .iter()
            .any(|f| f.file.to_string_lossy().contains("site-packages/numpy"))),
        "library frames stay in the stacks for the flame graph"
    );
    let top2: Vec<&str> = ranking(&p).into_iter().take(2).collect();
    assert!(
        top2.contains(&"black_scholes") && top2.contains(&"cnd"),
        "{top2:?}"
    );

    // Captured types of the real call.
    let c = p
        .captures
        .iter()
        .find(|c| c.function == "black_scholes")
        .expect("captured");
    let names: Vec<&str> = c.args.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "stock_price",
            "option_strike",
            "option_years",
            "riskfree",
            "volatility"
        ]
    );
    for a in &c.args[..3] {
        assert_eq!(
            a.kind,
            ArgKind::Ndarray {
                dtype: "float64".into(),
                ndim: 1,
                shape: vec![1_000_000],
                c_contiguous: true,
                f_contiguous: true
            }
        );
    }
    assert_eq!(
        c.args[3].kind,
        ArgKind::Scalar {
            type_name: "float".into()
        }
    );
    assert_eq!(
        c.returns,
        Some(ArgKind::Other {
            type_name: "tuple".into()
        })
    );
    assert!(c.inputs_npz.as_ref().unwrap().exists());
}

#[test]
fn nbody_ranks_the_per_body_loop_and_captures_two_dimensional_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("nbody.py", &["300", "30"], dir.path());
    opts.capture_functions = 1;
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    assert_eq!(ranking(&p)[0], "accelerations", "{:?}", ranking(&p));
    let acc = function(&p, "accelerations");
    let step = function(&p, "step");
    assert!(acc.self_pct >= 50.0, "accelerations self {}", acc.self_pct);
    // step calls accelerations: up to a frame lost in a torn read now and then.
    assert!(
        step.total_pct >= acc.total_pct - 3.0,
        "step {} < accelerations {}",
        step.total_pct,
        acc.total_pct
    );
    assert!(p
        .edges
        .iter()
        .any(|e| e.caller == "step" && e.callee == "accelerations"));
    assert!(p
        .edges
        .iter()
        .any(|e| e.caller == "<module>" && e.callee == "main"));

    // The one target keeps its inputs; the other functions called keep
    // their types, and their inputs too, being small (300 bodies).
    assert_eq!(p.captures[0].function, "accelerations");
    assert!(p.captures.len() > 1, "{:?}", p.captures);
    for c in &p.captures {
        let kept = c.inputs_npz.as_ref().is_some_and(|f| f.exists());
        let small = c.args.iter().all(|a| match &a.kind {
            ArgKind::Ndarray { shape, .. } => shape.iter().product::<u64>() * 8 <= 1 << 20,
            _ => true,
        });
        assert!(kept || !small, "{c:?}");
        assert!(
            !c.skipped
                .iter()
                .any(|s| s == port_profiler::capture::NOT_HOT),
            "{c:?}"
        );
    }
    let c = &p.captures[0];
    assert_eq!(c.function, "accelerations");
    assert_eq!(
        c.args[0].kind,
        ArgKind::Ndarray {
            dtype: "float64".into(),
            ndim: 2,
            shape: vec![300, 3],
            c_contiguous: true,
            f_contiguous: false
        }
    );
    assert_eq!(
        c.args[2].kind,
        ArgKind::Scalar {
            type_name: "float".into()
        }
    );
    assert!(matches!(&c.returns, Some(ArgKind::Ndarray { ndim: 2, .. })));
    assert_eq!(c.line, 17, "first line of accelerations' code object");
}
