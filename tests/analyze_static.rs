//! `port analyze --static` on the fixtures: verdicts, findings and liftable
//! loops as a user reads them.

mod common;
use common::*;

#[test]
fn seeds_get_numbas_verdicts_and_ports_plans() {
    let a = analyze_json(&fixture("classify/seeds.py"));
    let verdict = |n: &str| function(&a, n)["verdict"].as_str().unwrap().to_string();
    for cuda in [
        "hypot",
        "gaussian_pdf",
        "polar_to_cartesian",
        "polar_distance",
        "normalize",
        "go_fast",
        "add",
        "increment",
        "saxpy",
        "vector_add",
        "transpose",
        "sum_reduce",
        "array_sum",
    ] {
        assert_eq!(verdict(cuda), "cuda", "{cuda}");
    }
    assert_eq!(verdict("hash_computation"), "object");
    assert_eq!(verdict("compute_pi"), "nopython");
    assert_eq!(verdict("nan_compact"), "nopython");
    // `complex(x, y)` and complex arithmetic: Numba compiles them and so
    // does port's planner (a scalar function, so a CUDA ufunc); the
    // planner's answer decides, with no refusal recorded.
    assert_eq!(verdict("mandel"), "cuda");
    assert!(!codes(function(&a, "mandel")).contains(&"PORT214".to_string()));

    // go_fast: the trace is a reduction, `a + trace` allocates a result.
    let go = function(&a, "go_fast");
    assert!(codes(go).contains(&"PORT402".to_string()));
    assert!(codes(go).contains(&"PORT403".to_string()));
    // compute_pi uses `random`, which a kernel cannot.
    assert!(codes(function(&a, "compute_pi")).contains(&"PORT213".to_string()));
}

#[test]
fn hash_computation_lifts_its_squaring_loop_and_blames_md5() {
    let a = analyze_json(&fixture("classify/seeds.py"));
    let f = function(&a, "hash_computation");
    assert_eq!(f["verdict"], "object");
    let first = &f["findings"][0];
    assert_eq!(first["code"], "PORT101");
    assert_eq!(
        first["message"],
        "Unknown attribute 'md5' of type Module(hashlib)"
    );
    let line = f["line"].as_u64().unwrap();
    let loops = f["liftable_loops"].as_array().unwrap();
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert_eq!(loops[0]["line"].as_u64().unwrap(), line + 1);
    assert_eq!(loops[0]["end_line"].as_u64().unwrap(), line + 2);
    assert_eq!(first["line"].as_u64().unwrap(), line + 3);
}

#[test]
fn red_flags_are_found_with_their_codes() {
    let a = analyze_json(&fixture("classify/red_flags.py"));
    let expect = [
        ("make_particles", "object", "PORT104"),
        ("Particle.step", "object", "PORT104"),
        ("squares", "nopython", "PORT201"),
        ("label", "object", "PORT107"),
        ("describe", "object", "PORT107"),
        ("shout", "nopython", "PORT207"),
        ("timed_sum", "object", "PORT101"),
        ("write_log", "object", "PORT105"),
        ("safe_div", "object", "PORT106"),
        ("guarded", "nopython", "PORT208"),
        ("fib", "nopython", "PORT202"),
        ("evens", "nopython", "PORT203"),
        ("cumulative", "nopython", "PORT204"),
        ("recurrence", "nopython", "PORT204"),
        ("first_write", "nopython", "PORT204"),
        ("blend", "object", "PORT110"),
        ("bump", "object", "PORT109"),
        ("total_args", "nopython", "PORT211"),
        ("make_scaler", "object", "PORT111"),
        // A nested function that reads nothing of the function around it
        // is planned as a helper; a closure is not.
        ("apply_inner", "cuda", "PORT403"),
        ("apply_scaled", "nopython", "PORT210"),
        ("spectrum", "object", "PORT102"),
        ("positives", "nopython", "PORT205"),
        ("to_list", "object", "PORT114"),
        ("calls_object", "object", "PORT113"),
        ("calls_scan", "nopython", "PORT209"),
        ("stencil", "cuda", "PORT405"),
        ("row_max", "cuda", "PORT405"),
        ("dot_loop", "cuda", "PORT402"),
        ("histogram", "cuda", "PORT402"),
        ("scatter_overwrite", "nopython", "PORT204"),
    ];
    // `np.linalg.solve` and `np.sort` are library steps of the host
    // schedule: planned, so `cuda`, the static pass's PORT206 guess dropped.
    for name in ["solve", "sort_copy"] {
        let f = function(&a, name);
        assert_eq!(f["verdict"], "cuda", "{f}");
        assert_eq!(f["migration_plan"]["status"], "planned", "{f}");
        assert!(!codes(f).iter().any(|c| c == "PORT206"), "{f}");
    }
    for (name, verdict, code) in expect {
        let f = function(&a, name);
        assert_eq!(f["verdict"], verdict, "{name}: {f}");
        assert!(
            codes(f).iter().any(|c| c == code),
            "{name} lacks {code}: {f}"
        );
    }
}

#[test]
fn a_scan_names_its_variable_and_lines() {
    let a = analyze_json(&fixture("classify/red_flags.py"));
    let f = function(&a, "cumulative");
    let scan = f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "PORT204")
        .unwrap();
    let msg = scan["message"].as_str().unwrap();
    let line = f["line"].as_u64().unwrap();
    assert!(msg.contains("`acc`"), "{msg}");
    assert!(
        msg.contains(&format!("lines {}, {}", line + 3, line + 4)),
        "{msg}"
    );
}

#[test]
fn json_has_the_documented_shape_and_is_saved() {
    let tmp = tempfile::tempdir().unwrap();
    let path = fixture("classify/seeds.py");
    let o = port_in(
        tmp.path(),
        &["analyze", "--static", "--json", path.to_str().unwrap()],
    );
    assert!(o.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join(".port/analysis.json")).unwrap())
            .unwrap();
    assert_eq!(printed, saved);
    assert_eq!(printed["schema"], "port.analysis/1");
    for f in printed["functions"].as_array().unwrap() {
        for key in [
            "name",
            "qualname",
            "file",
            "line",
            "end_line",
            "verdict",
            "findings",
            "liftable_loops",
        ] {
            assert!(!f[key].is_null(), "{key} missing in {f}");
        }
        assert!(f["self_pct"].is_null() && f["total_pct"].is_null());
        assert!(["object", "nopython", "cuda"].contains(&f["verdict"].as_str().unwrap()));
    }
    let c = &printed["coverage"];
    let total = c["gpu_eligible_pct"].as_f64().unwrap()
        + c["nopython_pct"].as_f64().unwrap()
        + c["object_pct"].as_f64().unwrap();
    assert!((total - 100.0).abs() < 0.1, "{c}");
    assert_eq!(c["basis"], "functions");
    assert!(printed["call_graph"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| {
            e["caller"] == "seeds.polar_distance"
                && e["callee"] == "seeds.polar_to_cartesian"
                && e["kind"] == "static"
        }));
}

#[test]
fn local_imports_are_followed_and_verdicts_flow_up_the_call_graph() {
    let a = analyze_json(&fixture("multimodule/main.py"));
    let files: Vec<&str> = a["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 5, "{files:?}");
    assert_eq!(function(&a, "checksum")["verdict"], "object");
    // `from .util import clamp`: the planner inlines the helper of the
    // module beside it, so `advance` is `cuda`.
    assert_eq!(function(&a, "advance")["verdict"], "cuda");
    assert_eq!(function(&a, "clamp")["verdict"], "cuda");
    // `kernels.advance(…)` after `from . import kernels`: the helper of
    // the module beside it, called through the module, is inlined too.
    let both = function(&a, "euler_and_advance");
    assert_eq!(both["verdict"], "cuda", "{both}");
    assert!(!codes(both).contains(&"PORT214".to_string()), "{both}");
    let run = function(&a, "run");
    assert_eq!(run["verdict"], "object");
    assert!(codes(run).contains(&"PORT113".to_string()));
    let edges = a["call_graph"]["edges"].as_array().unwrap();
    assert!(edges
        .iter()
        .any(|e| e["caller"] == "physics.kernels.advance" && e["callee"] == "physics.util.clamp"));
    assert!(edges
        .iter()
        .any(|e| e["caller"] == "physics.integrate.euler_and_advance"
            && e["callee"] == "physics.kernels.advance"));
}

#[test]
fn terminal_table_lists_every_function_without_colour_when_piped() {
    let tmp = tempfile::tempdir().unwrap();
    let path = fixture("classify/seeds.py");
    let o = port_in(tmp.path(), &["analyze", "--static", path.to_str().unwrap()]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(
        !out.contains('\u{1b}'),
        "colour escape codes in piped output"
    );
    for name in ["hypot", "hash_computation", "go_fast", "compute_pi"] {
        assert!(out.contains(name), "{name} missing from the table");
    }
    assert!(out.contains("GPU-eligible"));
}

#[test]
fn graph_prints_dot_coloured_by_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let path = fixture("multimodule/main.py");
    let o = port_in(tmp.path(), &["graph", path.to_str().unwrap()]);
    assert!(o.status.success());
    let dot = stdout(&o);
    assert!(dot.starts_with("digraph port {"));
    assert!(dot.contains("\"physics.kernels.advance\" -> \"physics.util.clamp\""));
    assert!(dot.contains("\"physics.util.checksum\" [fillcolor=\"#ff9e9e\""));
}

#[test]
fn explain_prints_the_doc_and_rejects_unknown_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let o = port_in(tmp.path(), &["explain", "port204"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(text.contains("loop-carried-dependence"));
    assert!(text.contains("## Fix"));
    let o = port_in(tmp.path(), &["explain", "PORT999"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1);
    // Every code in the catalogue explains itself through the CLI.
    let list = port_in(tmp.path(), &["explain", "--list"]);
    for line in stdout(&list).lines() {
        let code = line.split_whitespace().next().unwrap();
        let o = port_in(tmp.path(), &["explain", code]);
        assert!(
            o.status.success() && stdout(&o).contains("## What it does"),
            "{code}"
        );
    }
}

/// A module whose functions only another module calls takes its types from
/// those calls: `solver.step(N, dens, dens_prev, …)` in main.py with float32
/// grids made there types `step`, and `step`'s own call types `diffuse`.
#[test]
fn types_come_from_calls_in_other_modules() {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["main.py", "solver.py"] {
        std::fs::copy(
            common::fixture(&format!("apps/calls_across/{f}")),
            tmp.path().join(f),
        )
        .unwrap();
    }
    let o = assert_cmd::Command::cargo_bin("port")
        .unwrap()
        .current_dir(tmp.path())
        .args(["analyze", "--static", "--json", "main.py"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let plan = |name: &str| {
        a["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["qualname"] == name)
            .unwrap_or_else(|| panic!("no {name}: {a}"))["migration_plan"]
            .clone()
    };
    let step = plan("step");
    assert_eq!(step["types_from"], "calls", "{step}");
    assert_eq!(
        step["signature"], "int64, float32[:, :], float32[:, :], float64, float64",
        "{step}"
    );
    let diffuse = plan("diffuse");
    assert_eq!(diffuse["types_from"], "calls", "{diffuse}");
    assert_eq!(
        diffuse["signature"], "int64, float32[:, :], float32[:, :], float64",
        "{diffuse}"
    );
    // Migrate takes the same types, with nothing given, and verifies.
    let o = migrate_in(tmp.path(), &["--function", "diffuse", "main.py", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(arg_sources(&j), ["calls"; 4], "{j}");
    assert_eq!(j["arg_types"][1]["type"], "float32[:, :]", "{j}");
}

/// When the program's calls type some arguments and the body the rest, the
/// analysis says so (`calls+assumed`, and PORT401 says the verdict rests on
/// types read from the body): `port migrate`, which takes calls only when
/// they type every argument, has no types for it.
#[test]
fn types_partly_from_calls_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("main.py"),
        "import numpy as np\n\n\ndef scale(a, s):\n    return a * s\n\n\ndef main(s):\n    a = np.ones((64, 64))\n    return scale(a, s)\n",
    )
    .unwrap();
    let a = analyze_json(&tmp.path().join("main.py"));
    let f = function(&a, "scale");
    let plan = &f["migration_plan"];
    assert_eq!(plan["types_from"], "calls+assumed", "{plan}");
    assert_eq!(plan["signature"], "float64[:, :], float64", "{plan}");
    let note = f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "PORT401")
        .unwrap_or_else(|| panic!("no PORT401: {f}"));
    assert!(
        note["message"]
            .as_str()
            .unwrap()
            .contains("types partly read from the body"),
        "{note}"
    );
    // migrate takes the same types, each said where it came from.
    let o = migrate_in(tmp.path(), &["--function", "scale", "main.py", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["arg_types"],
        serde_json::json!([
            {"name": "a", "type": "float64[:, :]", "from": "calls"},
            {"name": "s", "type": "float64", "from": "assumed"},
        ])
    );
}

/// A package analysed from inside it (`port analyze --static .` in
/// `physics/`) names its modules from the folder's own name, and a
/// function of a module with a relative import (`from . import kernels`)
/// is migrated and verified: the original runs as a member of its package.
/// `port migrate --json` of the physics package's `euler`, run inside it.
fn migrate_euler(pkg: &std::path::Path) -> serde_json::Value {
    let venv = repo().join(".venv");
    let o = port_in(
        pkg,
        &[
            "migrate",
            "--function",
            "euler",
            "integrate.py",
            "--signature",
            "float64[:], float64[:], float64",
            "--json",
            "--python",
            venv.join("bin/python").to_str().unwrap(),
        ],
    );
    serde_json::from_str(&stdout(&o)).expect("JSON")
}

#[test]
fn a_package_analysed_from_inside_keeps_its_name_and_its_relative_imports_run() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("physics");
    std::fs::create_dir(&pkg).unwrap();
    for f in ["__init__.py", "integrate.py", "kernels.py", "util.py"] {
        std::fs::copy(fixture(&format!("multimodule/physics/{f}")), pkg.join(f)).unwrap();
    }
    let o = port_in(&pkg, &["analyze", "--static", "--json", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mut modules: Vec<&str> = a["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["module"].as_str().unwrap())
        .collect();
    modules.sort();
    modules.dedup();
    assert_eq!(
        modules,
        ["physics.integrate", "physics.kernels", "physics.util"],
        "{modules:?}"
    );
    let j = migrate_euler(&pkg);
    assert_eq!(j["status"], "verified", "{j}");
}

/// A package whose `__init__` needs a module the Python port runs lacks:
/// migrate says the module does not import and names what is missing,
/// not the relative import that failed after it, nor the generated inputs.
#[test]
fn a_package_that_does_not_import_names_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("physics");
    std::fs::create_dir(&pkg).unwrap();
    for f in ["integrate.py", "kernels.py", "util.py"] {
        std::fs::copy(fixture(&format!("multimodule/physics/{f}")), pkg.join(f)).unwrap();
    }
    std::fs::write(pkg.join("__init__.py"), "import skbase_not_installed\n").unwrap();
    let j = migrate_euler(&pkg);
    assert_eq!(j["status"], "failed", "{j}");
    let why = j["reasons"][0]["message"].as_str().unwrap_or_default();
    assert!(
        why.contains("the original's module does not import")
            && why.contains("No module named 'skbase_not_installed' (__init__.py:1 in <module>)"),
        "{why}"
    );
}

/// The typing pass decides the types of a plan's locals before anything is
/// lowered. With `PORT_TYPING_CHECK`, every plan is also lowered the old
/// way (from no types, again until they stop widening) and stderr says,
/// per plan, how many lowerings each took and where the two disagree.
/// Over every function of the migrate fixtures: no disagreement (types,
/// strong names, refusals), and most plans are lowered once.
#[test]
fn the_typing_pass_agrees_with_lowering_to_a_fixed_point() {
    let mut files: Vec<_> = std::fs::read_dir(fixture("migrate"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    files.sort();
    let tmp = tempfile::tempdir().unwrap();
    let (mut checks, mut once, mut once_before) = (0, 0, 0);
    let mut disagree = Vec::new();
    for f in &files {
        let o = assert_cmd::Command::cargo_bin("port")
            .unwrap()
            .current_dir(tmp.path())
            .env("PORT_TYPING_CHECK", "1")
            .args(["analyze", "--static", f.to_str().unwrap()])
            .output()
            .unwrap();
        for line in stderr(&o)
            .lines()
            .filter(|l| l.starts_with("port-typing: "))
        {
            checks += 1;
            once += usize::from(line.contains(": 1 lowerings"));
            once_before += usize::from(line.contains("(before: 1)"));
            if line.contains("DISAGREES") {
                disagree.push(format!("{}: {line}", f.display()));
            }
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    // A caller is planned again only when a callee's answer changed:
    // 439 plans, 425 distinct (every caller was planned twice before, 713).
    assert!(checks >= 420, "only {checks} plans checked");
    // 582 of 658 when the pass landed (338 before it); 388 of 439 when
    // callers stopped being planned again for nothing.
    assert!(
        once * 100 >= checks * 85 && once > once_before,
        "{once} of {checks} plans lowered once ({once_before} without the table)"
    );
}
