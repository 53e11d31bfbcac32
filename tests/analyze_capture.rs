//! `port analyze APP.py` captures argument types and inputs inside the one
//! sampled run: the program runs once, prints and exits as it would alone, and
//! what was captured survives a crash or `os._exit`.

mod common;
use common::*;

fn venv_python() -> String {
    let py = repo().join(".venv/bin/python");
    assert!(
        py.exists(),
        "no .venv: run `make test` (scripts/setup.sh) first"
    );
    py.to_string_lossy().into_owned()
}

/// `port analyze [extra] run_once.py LOG MODE` in `dir`; the app appends a
/// line to LOG each time it runs.
fn analyze_run_once(dir: &std::path::Path, extra: &[&str], mode: &str) -> std::process::Output {
    let py = venv_python();
    let app = fixture("apps/run_once.py");
    let mut args = vec!["analyze", "--python", &py];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[app.to_str().unwrap(), "--", "runs.log", mode]);
    port_in(dir, &args)
}

fn runs(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

fn saved_analysis(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(".port/analysis.json")).unwrap())
        .unwrap()
}

fn capture_of<'a>(a: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    a["profile"]["captures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["function"].as_str().is_some_and(|f| f.ends_with(name)))
}

#[test]
fn the_program_runs_once_and_its_hot_function_is_captured() {
    let tmp = tempfile::tempdir().unwrap();
    let o = analyze_run_once(tmp.path(), &["--json"], "ok");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(runs(tmp.path()), 1, "the program ran more than once");
    // With --json the program's stdout goes to stderr, unchanged.
    assert!(stderr(&o).contains("total 319968.001"), "{}", stderr(&o));
    let a = one_json_document(&o);

    let types = function(&a, "smooth")["types"]
        .as_array()
        .expect("captured types")
        .clone();
    assert_eq!(types.len(), 2, "{types:?}");
    assert_eq!(types[0]["kind"], "ndarray");
    assert_eq!(types[0]["dtype"], "float64");
    assert_eq!(types[0]["shape"], serde_json::json!([40_000]));
    assert_eq!(types[1]["kind"], "scalar");
    let c = capture_of(&a, "smooth").expect("smooth captured");
    let inputs = std::path::PathBuf::from(c["inputs_npz"].as_str().expect("inputs saved"));
    assert!(inputs.exists(), "{}", inputs.display());

    // The bootstrap that installs the hook is no root frame and no hotspot.
    for s in a["profile"]["stacks"].as_array().unwrap() {
        assert_ne!(s["frames"][0]["file"], "<string>", "{s}");
    }
    for key in ["functions", "lines"] {
        let hot = a["profile"][key].to_string();
        assert!(!hot.contains("<string>"), "{key}: {hot}");
    }
    // The hot loop outweighs interpreter start-up and NumPy's import even on
    // a loaded machine with a cold disk cache: it is ranked first.
    let first = &a["profile"]["functions"][0];
    assert_eq!(first["name"], "smooth", "{first}");
    let share = function(&a, "smooth")["self_pct"].as_f64().unwrap();
    assert!(share > 50.0, "smooth has {share:.1}% of the samples");
}

#[test]
fn a_crash_or_os_exit_keeps_the_traceback_exit_code_samples_and_captures() {
    for (mode, says) in [
        ("crash", "exited with code 1"),
        ("exit", "exited with code 4"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let o = analyze_run_once(tmp.path(), &[], mode);
        assert_eq!(o.status.code(), Some(3), "{mode}: {}", stderr(&o));
        assert_eq!(runs(tmp.path()), 1, "{mode}");
        assert!(stdout(&o).contains("total 319968.001"), "{mode}");
        let err = stderr(&o);
        assert!(err.contains(says), "{mode}: {err}");
        if mode == "crash" {
            // The traceback `python run_once.py` prints, and nothing more.
            assert!(
                err.contains("Traceback (most recent call last):\n  File \"")
                    && err.contains("run_once.py\", line 33, in main\n    raise RuntimeError(\"sensor offline\")\nRuntimeError: sensor offline"),
                "{err}"
            );
            assert!(!err.contains("<string>"), "{err}");
        }
        let a = saved_analysis(tmp.path());
        assert!(a["profile"]["samples"].as_u64().unwrap() > 10, "{mode}");
        let c = capture_of(&a, "smooth").unwrap_or_else(|| panic!("{mode}: smooth not captured"));
        assert_eq!(c["args"][0]["kind"]["kind"], "ndarray", "{mode}");
        let inputs = c["inputs_npz"].as_str().expect("inputs saved");
        assert!(std::path::Path::new(inputs).exists(), "{mode}");
    }
}

#[test]
fn no_capture_runs_the_program_once_and_captures_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let o = analyze_run_once(tmp.path(), &["--no-capture"], "ok");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(runs(tmp.path()), 1);
    let out = stdout(&o);
    let printed = out.find("total 319968.001").expect("the app's print");
    assert!(printed < out.find("verdict").expect("the table"), "{out}");
    let a = saved_analysis(tmp.path());
    assert_eq!(a["profile"]["captures"], serde_json::json!([]));
    assert!(
        function(&a, "smooth")["types"].is_null()
            || function(&a, "smooth")["types"] == serde_json::json!([])
    );
    assert!(!tmp.path().join(".port/captures/manifest.json").exists());
    // Migrating then takes the types from the program's own call
    // (`smooth(x, 4)` after `x = np.linspace(…)`): no capture needed.
    let o = migrate_in(tmp.path(), &["--function", "smooth", "--json"]);
    let j: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["arg_types"][0]["from"], "calls", "{j}");
    assert_eq!(j["arg_types"][0]["type"], "float64[:]", "{j}");
}

/// `python app.py` in `dir`: its stderr.
fn plain_stderr(dir: &std::path::Path) -> String {
    let o = std::process::Command::new(venv_python())
        .current_dir(dir)
        .arg("app.py")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    stderr(&o)
}

#[test]
fn a_local_module_that_fails_fails_with_the_traceback_of_a_plain_run() {
    // The app's local modules are compiled by the capture (an import finder),
    // the main file by its bootstrap: a module that does not compile, and a
    // first call that raises out of one, read as they do without port.
    let py = venv_python();
    for (helper, says) in [
        ("def scale(v:\n    return v\n", "SyntaxError"),
        (
            "import time\n\n\ndef scale(v):\n    t = time.perf_counter()\n    while time.perf_counter() - t < 0.3:\n        pass\n    return v / 0\n",
            "ZeroDivisionError: float division by zero",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::write(
            dir.join("app.py"),
            "import helper\n\n\ndef main():\n    print(helper.scale(2.0))\n\n\nmain()\n",
        )
        .unwrap();
        std::fs::write(dir.join("helper.py"), helper).unwrap();
        let o = port_in(&dir, &["analyze", "--python", &py, "app.py"]);
        assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
        let err = stderr(&o);
        // Plain runs keep their own byte code: nothing compiled for the
        // capture is left in __pycache__ (a plain run would load it).
        assert!(!dir.join("__pycache__").exists(), "{err}");
        let alone = plain_stderr(&dir);
        assert!(alone.contains(says), "{alone}");
        assert!(err.contains(&alone), "plain run:\n{alone}\nport analyze:\n{err}");
        assert!(!err.contains("<string>") && !err.contains("_port_"), "{err}");
    }
}

/// The first static pass tells the capture what no migration reads (a
/// function port cannot migrate, an array a function only writes), and what
/// it saves still migrates and verifies as captured.
#[test]
fn the_capture_is_told_what_no_migration_reads_and_migrate_still_verifies_on_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(fixture("apps/write_only.py"), dir.join("write_only.py")).unwrap();
    let py = venv_python();
    // 50,000 elements: every function's inputs, all of them together,
    // stay under the 1 MiB a function the sampler happened to miss keeps
    // its file by. What follows then hangs neither on which functions a
    // short run's samples caught, nor on whether the static pass's hints
    // (written while the program runs) arrived before `scale` was first
    // called: on a loaded machine they may not, and `scale` saves `out`
    // too (100,000 elements made that 1.6 MB, and its file was removed).
    let o = port_in(
        dir,
        &["analyze", "--python", &py, "write_only.py", "--", "50000"],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    let hints: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".port/captures/hints.json")).unwrap(),
    )
    .unwrap();
    let hint = |name: &str| {
        hints["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["qualname"] == name)
            .unwrap_or_else(|| panic!("no hint for {name}: {hints}"))
            .clone()
    };
    assert_eq!(hint("scale")["save"], true);
    assert_eq!(hint("scale")["unread"], serde_json::json!(["out"]));
    assert_eq!(hint("smooth")["unread"], serde_json::json!(["out"]));
    assert_eq!(hint("cumulative")["save"], false, "{hints}");

    // Types are captured whatever is saved.
    let a = saved_analysis(dir);
    assert_eq!(function(&a, "cumulative")["types"][0]["dtype"], "float64");

    let migrate = |f: &str| migrate_in(dir, &["--function", f, "--json", "write_only.py"]);
    let o = migrate("scale");
    let j = one_json_document(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "captured", "{j}");

    // `clamp(y, lo, hi, y)` passes one array twice: the original runs so,
    // the kernels as the wrapper runs them, and each element reads only
    // itself: verified, as the program calls it.
    let o = migrate("clamp");
    let j = one_json_document(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["verification"]["same_array"],
        serde_json::json!([["out", "a"]]),
        "{j}"
    );
    assert!(j["verification"]["in_place"].is_null(), "{j}");
    // The migrated function takes that call on its kernels (a host copy
    // each, as verified), where any other pair sharing memory runs the
    // original.
    let patch = std::fs::read_to_string(dir.join(j["patch"].as_str().unwrap())).unwrap();
    assert!(
        patch
            .contains(r#"_port_aliased("clamp", {"a": a, "out": out}, ("out",), (("out", "a"),))"#),
        "{patch}"
    );

    // `smooth(x, x)` reads, in place, what the iteration before wrote: the
    // kernels, reading the array as it was before the call, cannot give
    // the program's results. The analysis knows the call was in place (both
    // names one array): `nopython`, and migrate refuses it with that reason.
    let a = saved_analysis(dir);
    let smooth = function(&a, "smooth");
    assert_eq!(smooth["verdict"], "nopython", "{smooth}");
    assert_eq!(smooth["types"][1]["same_as"], "a", "{smooth}");
    let in_place = "the program passes one array as `a` and `out` (its captured call): in place, `a[i-1]` (line 29) reads an element that another iteration writes as `out[i]` (line 29)";
    assert!(
        smooth["findings"].to_string().contains(in_place),
        "{smooth}"
    );
    // The reason the table gives (the first blocker) is that PORT204 itself,
    // not the planner's refusal that wraps it.
    let first_blocker = smooth["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["severity"] == "blocker")
        .unwrap();
    assert_eq!(first_blocker["code"], "PORT204", "{smooth}");
    assert_eq!(function(&a, "clamp")["verdict"], "cuda");
    let o = migrate("smooth");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = one_json_document(&o);
    assert_eq!(j["status"], "refused", "{j}");
    assert!(j["reasons"].to_string().contains(in_place), "{j}");

    // Given such inputs by hand (`__port_same__`), with no capture to tell
    // the analysis, verification still finds the difference and says why.
    let bare = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("apps/write_only.py"),
        bare.path().join("write_only.py"),
    )
    .unwrap();
    let made = std::process::Command::new(&py)
        .current_dir(bare.path())
        .arg("-c")
        .arg(
            "import json, numpy as np; np.savez('same.npz', a=np.linspace(0.0, 1.0, 1000),              __port_same__=np.frombuffer(json.dumps({'out': 'a'}).encode(), dtype=np.uint8))",
        )
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let o = migrate_in(
        bare.path(),
        &[
            "--function",
            "smooth",
            "--inputs",
            "same.npz",
            "--signature",
            "float64[:], float64[:]",
            "--json",
            "write_only.py",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = one_json_document(&o);
    assert_eq!(j["status"], "mismatch", "{j}");
    let why = j["reasons"].to_string();
    assert!(
        why.contains("the program passes one array as `a` and `out`: in place"),
        "{j}"
    );
    // Nothing of a failed migration touches the program.
    assert_eq!(
        std::fs::read_to_string(dir.join("write_only.py")).unwrap(),
        std::fs::read_to_string(fixture("apps/write_only.py")).unwrap()
    );
}

/// An array several hot functions take is saved once while the program
/// leaves it unchanged: the later capture refers to the earlier file, and
/// migrating the later function still verifies on the captured inputs, which
/// `--save-inputs` writes out whole.
#[test]
fn an_array_saved_once_for_two_functions_verifies_both_and_saves_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(fixture("apps/shared_input.py"), dir.join("shared_input.py")).unwrap();
    let py = venv_python();
    let o = port_in(dir, &["analyze", "--python", &py, "shared_input.py"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = saved_analysis(dir);
    let npz = |f: &str| {
        capture_of(&a, f).unwrap_or_else(|| panic!("{f} not captured"))["inputs_npz"]
            .as_str()
            .unwrap_or_else(|| panic!("{f}: no inputs saved"))
            .to_string()
    };
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".port/captures/manifest.json")).unwrap(),
    )
    .unwrap();
    let refers_to = |f: &str| {
        manifest["captures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == f)
            .unwrap_or_else(|| panic!("{f} not in {manifest}"))["refers_to"]
            .clone()
    };
    // 160 kB: written at once, so `square`'s call finds it on disk.
    assert_eq!(refers_to("square"), serde_json::json!([npz("normalise")]));
    // `x *= 3.0` before `offset`: saved anew.
    assert_eq!(refers_to("offset"), serde_json::json!([]));

    let used = dir.join("used.npz");
    for f in ["square", "offset", "normalise"] {
        let o = migrate_in(
            dir,
            &[
                "--function",
                f,
                "--json",
                "--save-inputs",
                used.to_str().unwrap(),
                "shared_input.py",
            ],
        );
        let j = one_json_document(&o);
        assert_eq!(j["status"], "verified", "{f}: {j}");
        assert_eq!(j["verification"]["inputs"], "captured", "{f}: {j}");
        if f == "square" {
            // What `--save-inputs` wrote stands alone: `x` itself, no reference.
            let out = std::process::Command::new(&py)
                .arg("-c")
                .arg(
                    "import sys, numpy as np; d = np.load(sys.argv[1]); \
                     assert sorted(d.files) == ['out', 'x'], d.files; \
                     assert np.array_equal(d['x'], np.linspace(0.0, 1.0, 20000)); print('whole')",
                )
                .arg(&used)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
        }
    }
}

/// A function the profile barely saw keeps its small inputs: migrating it
/// verifies on, and times the original on, the program's own samples (2,000
/// of them), not generated inputs of another size. `main`, which takes
/// nothing, says nothing of inputs.
#[test]
fn a_cold_function_with_small_inputs_migrates_on_the_programs_own() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(fixture("apps/bandwidth.py"), dir.join("bandwidth.py")).unwrap();
    let py = venv_python();
    let o = port_in(dir, &["analyze", "--python", &py, "bandwidth.py"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = saved_analysis(dir);
    // It runs for microseconds: no sample sees it, so it is not among the
    // profile's hot functions, whose inputs are kept whatever their size.
    let cold = capture_of(&a, "scott_bandwidth").expect("scott_bandwidth captured");
    let npz = cold["inputs_npz"].as_str().expect("its inputs kept");
    assert!(std::path::Path::new(npz).exists(), "{npz}");
    assert_eq!(cold["skipped"], serde_json::json!([]), "{cold}");
    let main = capture_of(&a, "main").expect("main captured");
    assert_eq!(main["skipped"], serde_json::json!([]), "{main}");

    let o = migrate_in(
        dir,
        &["--function", "scott_bandwidth", "--json", "bandwidth.py"],
    );
    let j = one_json_document(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "captured", "{j}");
    assert_eq!(j["inputs_npz"], npz, "{j}");
}

/// A trailing argument left to its default (a tuple, which no kernel
/// takes) is captured as the program passed it, and keeps its default in
/// the plan: the analysis calls the function `cuda` and migrate verifies it
/// on the captured rows, where both stopped at the tuple before.
#[test]
fn a_default_no_kernel_takes_is_kept_not_a_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("masks.py"),
        "import numpy as np\n\n\ndef matches(rows, mask=(1, 0, 1)):\n    out = np.zeros(rows.shape[0], dtype=bool)\n    for i, row in enumerate(rows):\n        if (mask == np.bitwise_and(mask, row[1:])).all():\n            out[i] = row[0]\n    return out\n\n\nif __name__ == \"__main__\":\n    rng = np.random.default_rng(0)\n    rows = rng.integers(0, 2, size=(20000, 4)).astype(bool)\n    print(matches(rows).sum())\n",
    )
    .unwrap();
    let py = venv_python();
    let o = port_in(dir, &["analyze", "--python", &py, "masks.py"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = saved_analysis(dir);
    let f = function(&a, "matches");
    assert_eq!(f["types"][1]["kind"], "other", "{f}");
    assert_eq!(f["verdict"], "cuda", "{f}");
    let o = migrate_in(dir, &["--function", "matches", "--json", "masks.py"]);
    let j = one_json_document(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "captured", "{j}");
    assert_eq!(
        j["arg_types"],
        serde_json::json!([
            {"name": "rows", "type": "boolean[:, ::1]", "from": "capture"},
            {"name": "mask", "constant": "(1, 0, 1)", "from": "default"}
        ])
    );
}
