//! `port migrate`: refusals with the line, bad input as one line and exit 2,
//! `--write` (round trip, and refusal when the file changed since the
//! analysis), `--emit`, and the JSON report's shape.

mod common;

use std::path::Path;
use std::process::Command;

use common::{
    arg_sources, fixture, function, json_error, migrate_in, port_in, repo, stderr, stdout,
    user_error,
};

fn copy_fixture(dir: &Path, rel: &str) -> String {
    let name = Path::new(rel)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    std::fs::copy(fixture(rel), dir.join(&name)).unwrap();
    name
}

/// The Numba oracle venv's Python (numba-cuda and its CUDA simulator).
fn oracle_python() -> std::path::PathBuf {
    let oracle = repo().join(".venv-oracle/bin/python");
    assert!(
        oracle.exists(),
        "{} is missing: run make test",
        oracle.display()
    );
    oracle
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

/// What `port analyze --static --json FILE` (run in `dir`) says of the
/// function `name`.
fn static_verdict(dir: &std::path::Path, file: &str, name: &str) -> serde_json::Value {
    let a = port_in(dir, &["analyze", "--static", "--json", file]);
    assert!(a.status.success(), "{}", stderr(&a));
    function(&json(&a), name).clone()
}

#[test]
fn a_scan_is_refused_naming_the_variable_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "cumulative_sum",
            &f,
            "--signature",
            "float64[:], float64[:]",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let r = &j["reasons"][0];
    assert_eq!(r["line"], 10);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("`total` carries a value"),
        "{r}"
    );
    assert!(j["verification"].is_null());
    assert!(j["patch"].is_null());
    // Nothing written: no patch, the file untouched.
    assert!(!tmp
        .path()
        .join(".port/patches/cumulative_sum.diff")
        .exists());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join(&f)).unwrap(),
        std::fs::read_to_string(fixture("migrate/refused.py")).unwrap()
    );
}

#[test]
fn a_compacted_mask_selection_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "compacted",
            &f,
            "--signature",
            "float64[:]",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let r = &j["reasons"][0];
    assert_eq!(r["line"], 53, "{r}");
    let m = r["message"].as_str().unwrap();
    assert!(
        m.contains("`pos` is a boolean-mask selection (line 52)") && m.contains("reduced"),
        "{r}"
    );
}

/// An object-mode function is refused for what port cannot take (setting
/// `.shape`), not for what only Numba lacks (`np.mgrid`, which port plans).
#[test]
fn an_object_refusal_lists_only_what_port_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "grid_reshaped_in_place",
            &f,
            "--signature",
            "int64, int64",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let reasons = j["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0]["line"], 59, "{reasons:?}");
    assert!(reasons[0]["message"].as_str().unwrap().contains("PORT104"));
}

/// A signature that types only the parameters without defaults is how the
/// function is called: the migration is specialised to the defaults
/// (`if nfft is None:` decided, `axis` a constant), and the wrapper keeps
/// them in its signature and refuses other values.
#[test]
fn parameters_left_to_their_defaults_are_specialised_to_them() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "spectrum",
            &f,
            "--signature",
            "complex128[:]",
            "--json",
            "--write",
        ],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    let patched = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    assert!(
        patched.contains("def spectrum(x, nfft=None, axis=-1):"),
        "{patched}"
    );
    // Other values run the original, kept in the file.
    assert!(patched.contains("    if nfft is not None:\n        return _port_run_original(\"spectrum: migrated for nfft=None, its default\", _port_original_spectrum, x, nfft, axis)"), "{patched}");
    assert!(
        patched.contains("def _port_original_spectrum(x, nfft=None, axis=-1):"),
        "{patched}"
    );
    assert!(patched.contains("    if axis != -1:\n"), "{patched}");

    // A default that is not a constant: refused, naming it.
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "weighted",
            &f,
            "--signature",
            "float64[:]",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let r = &j["reasons"][0];
    assert_eq!(r["line"], 93, "{r}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("`w=np.ones(3)` left to its default, which is not a constant"),
        "{r}"
    );
}

#[test]
fn a_refusal_lists_no_guess_of_the_analysis_that_the_planner_contradicts() {
    // The analysis planned `positions` with a guessed float64 `n`, and so
    // found `np.zeros(count)` not an integer size; the real int64 `n`
    // refutes that: only the recurrence stands.
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "positions",
            &f,
            "--signature",
            "int64",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let reasons = j["reasons"].as_array().unwrap();
    assert!(
        reasons[0]["message"].as_str().unwrap().contains("PORT204"),
        "{reasons:?}"
    );
    assert!(
        !reasons
            .iter()
            .any(|r| r["message"].as_str().unwrap().contains("PORT214")),
        "{reasons:?}"
    );
}

#[test]
fn a_selection_times_a_whole_array_is_refused_naming_the_array() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "selected_times_whole",
            &f,
            "--signature",
            "float64[:], float64[:], bool[:]",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let r = &j["reasons"][0];
    let m = r["message"].as_str().unwrap();
    assert!(
        m.starts_with("`b` is a whole array beside selections"),
        "{r}"
    );
    assert_eq!(r["rewrite"], "masked", "{r}");
    let line = std::fs::read_to_string(tmp.path().join(&f))
        .unwrap()
        .lines()
        .position(|l| l.contains("np.sum(a[m] * b)"))
        .unwrap()
        + 1;
    assert_eq!(r["line"], line as u64, "{r}");
}

#[test]
fn a_recurrence_is_refused_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &["--function", "recurrence", &f, "--signature", "float64[:]"],
    );
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("→ refused"), "{out}");
    assert!(
        out.contains("line 16:") && out.contains("recurrence"),
        "{out}"
    );
}

#[test]
fn a_caller_of_an_object_mode_helper_is_refused_naming_the_callee() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "scale_and_hash",
            &f,
            "--signature",
            "float64[:], float64[:]",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    let r = &j["reasons"][0];
    assert_eq!(r["line"], 26);
    assert!(r["message"].as_str().unwrap().contains("`checksum`"), "{r}");
}

#[test]
fn an_if_at_the_top_level_is_decided_on_the_host() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "top_level_branch",
            &f,
            "--signature",
            "float64[:], float64[:]",
            "--json",
        ],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    let py = std::fs::read_to_string(tmp.path().join(j["patch"].as_str().unwrap())).unwrap();
    assert!(
        py.contains("\n     if x.shape[0] > 10:\n")
            && py.contains("\n+        top_level_branch_kernel["),
        "the launch sits inside the host's `if`, indented: {py}"
    );
}

#[test]
fn an_early_return_inside_a_host_loop_is_refused_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "early_return_in_loop",
            &f,
            "--signature",
            "float64[:], float64[:]",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["status"], "refused");
    assert_eq!(j["reasons"][0]["line"], 47, "{j}");
    assert!(
        j["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("`return` inside a host loop"),
        "{j}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let sig = "float64, float64[:], float64[:], float64[:]";
    user_error(
        &migrate_in(tmp.path(), &["--function", "nope", &f, "--signature", sig]),
        "no function `nope`",
    );
    user_error(
        &migrate_in(
            tmp.path(),
            &[
                "--function",
                "saxpy",
                &f,
                "--signature",
                "float16, float64[:]",
            ],
        ),
        "bad --signature `float16`",
    );
    user_error(
        &migrate_in(
            tmp.path(),
            &[
                "--function",
                "saxpy",
                &f,
                "--signature",
                "float64, float64[:]",
            ],
        ),
        "--signature gives 2 type(s) but `saxpy` takes 4 argument(s) (a, x, y, out)",
    );
    user_error(
        &migrate_in(
            tmp.path(),
            &[
                "--function",
                "saxpy",
                &f,
                "--signature",
                sig,
                "--arch",
                "sm_10",
            ],
        ),
        "unknown --arch `sm_10`",
    );
    user_error(
        &migrate_in(
            tmp.path(),
            &[
                "--function",
                "saxpy",
                &f,
                "--signature",
                sig,
                "--backend",
                "gpu",
            ],
        ),
        "--backend gpu",
    );
    let pkg = fixture("migrate/pkg");
    let pkg = pkg.to_str().unwrap();
    user_error(
        &migrate_in(tmp.path(), &["--function", "scale", pkg]),
        "`scale` is ambiguous: it names one.scale",
    );
    let empty = tempfile::tempdir().unwrap();
    user_error(
        &migrate_in(empty.path(), &["--function", "saxpy", "--signature", sig]),
        "no analysis in",
    );
}

#[test]
fn a_qualified_name_picks_one_of_two() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    for f in ["one.py", "two.py"] {
        std::fs::copy(fixture(&format!("migrate/pkg/{f}")), pkg.join(f)).unwrap();
    }
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "two.scale",
            "pkg",
            "--signature",
            "float64[:], float64[:]",
            "--json",
        ],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert!(tmp.path().join(".port/patches/two_scale.diff").exists());
}

#[test]
fn the_last_analysis_is_used_without_a_path() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let a = assert_cmd::Command::cargo_bin("port")
        .unwrap()
        .current_dir(tmp.path())
        .args(["analyze", "--static", &f])
        .output()
        .unwrap();
    assert!(a.status.success());
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "vector_add",
            "--signature",
            "float64[:], float64[:], float64[:]",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
}

#[test]
fn write_round_trip_runs_under_the_cuda_simulator() {
    let oracle = oracle_python();
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let original = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "normalize",
            &f,
            "--signature",
            "float64[:, :]",
            "--write",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("wrote seeds.py (backup seeds.py.port-bak)"),
        "{}",
        stdout(&o)
    );
    let patched = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    assert_ne!(patched, original);
    assert!(patched.contains("@cuda.jit") && patched.contains("cuda.grid(1)"));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("seeds.py.port-bak")).unwrap(),
        original
    );
    // The diff is the change that was written.
    let diff = std::fs::read_to_string(tmp.path().join(".port/patches/normalize.diff")).unwrap();
    assert!(diff.contains("+def normalize_kernel(x):"), "{diff}");
    // The patched program's own __main__ prints what the original printed.
    let run = |python: &Path, file: &str, sim: bool| {
        let mut c = Command::new(python);
        c.arg(file).current_dir(tmp.path());
        if sim {
            c.env("NUMBA_ENABLE_CUDASIM", "1");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let before = run(&repo().join(".venv/bin/python"), "seeds.py.port-bak", false);
    let after = run(&oracle, "seeds.py", true);
    assert_eq!(
        before.lines().nth(1),
        after.lines().nth(1),
        "normalize's printed row sums"
    );
}

#[test]
fn a_file_edited_after_the_analysis_is_refused_and_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let sig = "float64, float64[:], float64[:], float64[:]";
    let o = migrate_in(tmp.path(), &["--function", "saxpy", &f, "--signature", sig]);
    assert!(o.status.success(), "{}", stdout(&o));
    let path = tmp.path().join(&f);
    let edited = format!(
        "{}\n# edited after the analysis\n",
        std::fs::read_to_string(&path).unwrap()
    );
    std::fs::write(&path, &edited).unwrap();
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "saxpy",
            "--signature",
            sig,
            "--write",
            // explicit: no "no GPU here" note beside the one-line error
            "--backend",
            "simulator",
        ],
    );
    user_error(&o, "changed since the analysis");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        edited,
        "left untouched"
    );
    assert!(!tmp.path().join("seeds.py.port-bak").exists());
}

#[test]
fn emit_prints_the_artifact() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let sig = "float64[:, :]";
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "go_fast",
            &f,
            "--signature",
            sig,
            "--emit",
            "numba",
        ],
    );
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(
        out.contains("def go_fast_trace(a, trace_acc):") && out.contains("cuda.atomic.add"),
        "{out}"
    );
    assert!(
        out.contains("cuda.syncthreads()") && out.contains("def go_fast(a):"),
        "{out}"
    );
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "go_fast",
            &f,
            "--signature",
            sig,
            "--emit",
            "ir",
        ],
    );
    assert!(
        stdout(&o).contains("kernel go_fast_trace("),
        "{}",
        stdout(&o)
    );
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "go_fast",
            &f,
            "--signature",
            sig,
            "--emit",
            "ptx",
            "--arch",
            "sm_80",
        ],
    );
    let ptx = stdout(&o);
    assert!(
        ptx.contains(".target sm_80") && ptx.contains(".entry go_fast_result"),
        "{ptx}"
    );
}

#[test]
fn json_report_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "go_fast",
            &f,
            "--signature",
            "float64[:, :]",
            "--json",
        ],
    );
    let j = json(&o);
    for key in [
        "schema",
        "function",
        "status",
        "reasons",
        "kernels",
        "patch",
        "verification",
    ] {
        assert!(j.get(key).is_some(), "missing {key}: {j}");
    }
    let v = &j["verification"];
    for key in ["backend", "inputs", "passed", "max_abs_err", "max_rel_err"] {
        assert!(v.get(key).is_some(), "missing verification.{key}: {v}");
    }
    let names: Vec<&str> = j["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["go_fast_trace", "go_fast_result"]);
    let applied: Vec<&str> = j["rewrites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["applied"] == true)
        .map(|r| r["rewrite"].as_str().unwrap())
        .collect();
    for r in [
        "grid_stride",
        "whole_reduction",
        "array_expr",
        "hoist_alloc",
        "math_calls",
    ] {
        assert!(applied.contains(&r), "{r} not applied: {applied:?}");
    }
    // The state file holds the same report.
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join(".port/migrations/go_fast.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["status"], "verified");
}

/// `--json` prints one JSON document on every outcome. Bad input is the
/// error document (`"status": "failed"`, a code, the reason, exit 2), and
/// the reason names its real source: the signature given, or the types a
/// profiled run captured (never "bad --signature" without one).
#[test]
fn json_errors_are_one_document_naming_the_real_source() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/seeds.py");
    let sig = "float64, float64[:], float64[:], float64[:]";
    let run = |args: &[&str]| migrate_in(tmp.path(), &[args, &["--json"]].concat());
    json_error(
        &run(&["--function", "nope", &f, "--signature", sig]),
        2,
        "bad_input",
        "no function `nope`",
    );
    // With no types given, the program's call gives them: `a =
    // rng.random((64, 64))` after `rng = np.random.default_rng(0)`.
    let o = run(&["--function", "go_fast", &f]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["arg_types"],
        serde_json::json!([{"name": "a", "type": "float64[:, :]", "from": "calls"}])
    );
    // With no call either, the body's use gives them (`a[i, i]`: 2-D), and
    // the report says so.
    let text = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    let alone = tmp.path().join("seeds_alone.py");
    std::fs::write(&alone, text.split("if __name__").next().unwrap()).unwrap();
    let o = run(&["--function", "go_fast", "seeds_alone.py"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["arg_types"],
        serde_json::json!([{"name": "a", "type": "float64[:, :]", "from": "assumed"}])
    );
    assert!(
        j["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("types read from how the body uses each argument (a: float64[:, :])"),
        "{j}"
    );
    json_error(
        &run(&[
            "--function",
            "saxpy",
            &f,
            "--signature",
            "float16, float64[:]",
        ]),
        2,
        "bad_signature",
        "bad --signature `float16`",
    );
    json_error(
        &run(&[
            "--function",
            "saxpy",
            &f,
            "--signature",
            "float64, float64[:]",
        ]),
        2,
        "bad_signature",
        "--signature gives 2 type(s) but `saxpy` takes 4 argument(s)",
    );
    json_error(
        &run(&[
            "--function",
            "saxpy",
            &f,
            "--signature",
            sig,
            "--arch",
            "sm_10",
        ]),
        2,
        "bad_input",
        "unknown --arch `sm_10`",
    );
    json_error(&run(&[&f]), 2, "bad_arguments", "--function");

    // A refusal is the migration record itself, once.
    let r = copy_fixture(tmp.path(), "migrate/refused.py");
    let o = run(&[
        "--function",
        "cumulative_sum",
        &r,
        "--signature",
        "float64[:], float64[:]",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(common::one_json_document(&o)["status"], "refused");

    // A uint8 image captured by a profiled run: migrated from the capture.
    let img = copy_fixture(tmp.path(), "migrate/image_u8.py");
    let analyze = |file: &str| {
        let o = assert_cmd::Command::cargo_bin("port")
            .unwrap()
            .current_dir(tmp.path())
            .env("VIRTUAL_ENV", repo().join(".venv"))
            .args(["analyze", file, "--python"])
            .arg(repo().join(".venv/bin/python"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    analyze(&img);
    let o = run(&["--function", "threshold"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = common::one_json_document(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "captured", "{j}");

    // Types captured by a profiled run that port's kernels do not take.
    let hdr = copy_fixture(tmp.path(), "migrate/image_f16.py");
    analyze(&hdr);
    let o = run(&["--function", "tone_map"]);
    let j = json_error(
        &o,
        2,
        "unsupported_captured_type",
        "captured types: argument `img` was captured as a float16 array",
    );
    let reason = j["reason"].as_str().unwrap();
    assert!(!reason.contains("bad --signature"), "{reason}");
    assert!(!stderr(&o).contains("bad --signature"), "{}", stderr(&o));
}

/// `--save-inputs` keeps the generated inputs a verification ran on, named
/// by argument, with the generator's shapes and dtypes, and `--inputs`
/// runs on them again, now `given`.
#[test]
fn saved_inputs_run_again_as_given_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/kernels.py");
    let sig = "float64[:, :], float64[:, :]";
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "stencil_2d",
            &f,
            "--signature",
            sig,
            "--size",
            "400",
            "--save-inputs",
            "used.npz",
            "--json",
        ],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "generated");
    let npz = tmp.path().join("used.npz");
    let python = repo().join(".venv/bin/python");
    let shapes = Command::new(&python)
        .arg("-c")
        .arg(
            "import sys, numpy as np; d = np.load(sys.argv[1]); \
             print(sorted((k, d[k].shape, str(d[k].dtype)) for k in d.files))",
        )
        .arg(&npz)
        .output()
        .unwrap();
    let listed = stdout(&shapes);
    assert!(shapes.status.success(), "{}", stderr(&shapes));
    // stencil_2d(img, out) at --size 400: 20 x 20 each.
    assert_eq!(
        listed.trim(),
        "[('img', (20, 20), 'float64'), ('out', (20, 20), 'float64')]",
        "{listed}"
    );

    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "stencil_2d",
            &f,
            "--signature",
            sig,
            "--inputs",
            "used.npz",
            "--json",
        ],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "given");
    assert_eq!(j["arg_types"][0]["from"], "signature", "{j}");

    // The inputs carry the types: no --signature needed, the same plan.
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "stencil_2d",
            &f,
            "--inputs",
            "used.npz",
            "--json",
        ],
    );
    let k = json(&o);
    assert_eq!(k["status"], "verified", "{k}");
    // The same kernels (C-contiguous arrays, as saved, where the signature
    // said any layout).
    let names = |j: &serde_json::Value| -> Vec<String> {
        j["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["name"].to_string())
            .collect()
    };
    assert_eq!(names(&k), names(&j));
    for (a, name) in k["arg_types"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["img", "out"])
    {
        assert_eq!(a["name"], name);
        assert_eq!(a["from"], "inputs");
        assert_eq!(a["type"], "float64[:, ::1]");
    }
    // An .npz that lacks an argument: one line naming it.
    let made = Command::new(&python)
        .args([
            "-c",
            "import numpy as np; np.savez('only_img.npz', img=np.zeros((4, 4)))",
        ])
        .current_dir(tmp.path())
        .status()
        .unwrap();
    assert!(made.success());
    json_error(
        &migrate_in(
            tmp.path(),
            &[
                "--function",
                "stencil_2d",
                &f,
                "--inputs",
                "only_img.npz",
                "--json",
            ],
        ),
        2,
        "bad_inputs",
        "has no member `out` for argument `out` of `stencil_2d` (it has: img)",
    );
}

/// The first reason of a refusal names what blocks, in words that fit it:
/// a max-reduction into one element is not called a race, and Numba's
/// gaps that port takes (`np.ndarray(…)`) are not listed beside it.
#[test]
fn refusals_name_the_real_blocker_only() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/refused.py");
    let reasons = |function: &str, sig: &str| {
        let o = migrate_in(
            tmp.path(),
            &["--function", function, &f, "--signature", sig, "--json"],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["status"], "refused", "{j}");
        j["reasons"].as_array().unwrap().clone()
    };
    let r = reasons("best_split", "float64[:,:], int64");
    assert_eq!(r[0]["line"], 106, "{r:?}");
    let m = r[0]["message"].as_str().unwrap();
    assert!(
        m.contains(
            "updates `table[i,j]` from its own value (line 106): a reduction into one element"
        ),
        "{m}"
    );
    assert!(!m.contains("race"), "{m}");

    let r = reasons("comprehension_array", "float64[:], float64[:]");
    assert_eq!(r[0]["line"], 122, "{r:?}");
    assert!(
        r[0]["message"]
            .as_str()
            .unwrap()
            .contains("builds an array element by element from a Python comprehension"),
        "{r:?}"
    );
    let r = reasons("dropped_result", "float64[:]");
    assert_eq!(r[0]["line"], 127, "{r:?}");
    assert!(
        r[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("`np.sqrt(a)`: a NumPy call whose result is dropped"),
        "{r:?}"
    );

    let r = reasons("ndarray_then_recurrence", "float64[:]");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["line"], 116, "{r:?}");
    assert!(
        r[0]["message"]
            .as_str()
            .unwrap()
            .contains("a recurrence across the loop at line 115"),
        "{r:?}"
    );
}

/// The module a user keeps gives the original's results on every call:
/// one array passed for two arguments (the original reads `B` after each
/// update of `A`), overlapping views, arrays of another dtype or rank than
/// the kernels take, and on a machine with no CUDA device (this one), where
/// the original runs with one warning.
#[test]
fn the_kept_module_is_right_on_aliased_calls_and_without_a_gpu() {
    let oracle = oracle_python();
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/kept.py");
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "nstream",
            &f,
            "--signature",
            "float64[:], float64[:], float64[:], float64, int64",
            "--write",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let patched = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    assert!(patched.contains("def _port_original_nstream(A, B, C, scalar, iters):"));
    let run = |python: &Path, file: &str, env: &[(&str, &str)]| {
        let mut c = Command::new(python);
        c.arg(file)
            .current_dir(tmp.path())
            .env_remove("PORT_DEVICE");
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{file} {env:?}: {}", stderr(&o));
        (stdout(&o), stderr(&o))
    };
    let (original, _) = run(&repo().join(".venv/bin/python"), "kept.py.port-bak", &[]);
    assert!(
        original.contains("aliased [13.0, 17.0, 21.0]"),
        "{original}"
    );
    // Kernels on Numba's CUDA simulator; the aliased calls run the original.
    let (sim, err) = run(&oracle, "kept.py", &[("NUMBA_ENABLE_CUDASIM", "1")]);
    assert_eq!(sim, original, "{err}");
    assert!(
        err.contains("nstream: `A` is written and shares memory with `B`"),
        "{err}"
    );
    // Other types than the kernels take run the original, each said once.
    for called in [
        "`A` is 1-D float32",
        "`A` is 2-D float64",
        "`A` is 1-D int64",
    ] {
        assert_eq!(
            err.matches(&format!(
                "iters: int64; {called}; this call runs the original"
            ))
            .count(),
            1,
            "{err}"
        );
    }
    // No CUDA device here: the original, and one warning for three calls.
    let (cpu, err) = run(&oracle, "kept.py", &[]);
    assert_eq!(cpu, original, "{err}");
    assert_eq!(err.matches("port: no CUDA device").count(), 1, "{err}");
    // Chosen: no warning.
    let (cpu, err) = run(&oracle, "kept.py", &[("PORT_DEVICE", "cpu")]);
    assert_eq!(cpu, original);
    assert!(!err.contains("port:"), "{err}");
    // Forced onto a GPU that is not there: the driver's own error.
    let mut c = Command::new(&oracle);
    c.arg("kept.py")
        .current_dir(tmp.path())
        .env("PORT_DEVICE", "gpu");
    let o = c.output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("CudaSupportError"), "{}", stderr(&o));
}

/// Called with arrays shorter than the loops that index them, the kept
/// module does what the original does (it raises IndexError, or reads
/// `x[-1]`), never what a kernel past an array's end would: the wrapper
/// checks each index range the kernels' arithmetic bounds before launching
/// them, and runs the original where one does not fit. Calls that fit run
/// the kernels (on Numba's CUDA simulator here), with no warning.
#[test]
fn the_kept_module_checks_every_index_range_before_its_kernels() {
    let oracle = oracle_python();
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/kept_bounds.py");
    // The second runs the file the first wrote, which imports Numba.
    let python = oracle.to_string_lossy().to_string();
    for function in ["diag_scale", "lagged"] {
        let o = port_in(
            tmp.path(),
            &[
                "migrate",
                "--function",
                function,
                &f,
                "--python",
                &python,
                "--write",
            ],
        );
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    }
    let patched = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    assert!(patched.contains("if L.shape[0] > b.shape[0]:"), "{patched}");
    let run = |file: &str, sim: bool| {
        let mut c = Command::new(&oracle);
        c.arg(file)
            .current_dir(tmp.path())
            .env_remove("PORT_DEVICE");
        if sim {
            c.env("NUMBA_ENABLE_CUDASIM", "1");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        (stdout(&o), stderr(&o))
    };
    let (original, _) = run("kept_bounds.py.port-bak", false);
    assert!(original.contains("short b IndexError"), "{original}");
    let (kernels, err) = run("kept_bounds.py", true);
    assert_eq!(kernels, original, "{err}");
    // Each call that does not fit runs the original, saying which index.
    for (label, index) in [
        ("short b", "an index of `b` along axis 0"),
        ("short y", "an index of `y` along axis 0"),
        ("tall L", "an index of `L` along axis 1"),
        ("lagged long out", "an index of `x` along axis 0"),
        ("lagged empty x", "an index of `x` along axis 0"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("{label}: ")) && l.contains(index)),
            "{label}: {err}"
        );
    }
    // The calls that fit ran the kernels.
    for label in ["fits", "wide L", "lagged"] {
        assert!(
            !err.lines().any(|l| l.starts_with(&format!("{label}: "))),
            "{label}: {err}"
        );
    }
}

/// With no capture, no --signature and no --inputs, the program's own calls
/// give the types: `saxpy(2.0, x, y, out)` after `initialize` made float32
/// arrays. The analysis plans with the same types and says where they came
/// from; the body alone would have said float64.
#[test]
fn the_programs_own_calls_give_the_types() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/called.py");
    let saxpy = static_verdict(tmp.path(), &f, "saxpy");
    assert_eq!(saxpy["verdict"], "cuda", "{saxpy}");
    let plan = &saxpy["migration_plan"];
    assert_eq!(plan["types_from"], "calls", "{plan}");
    assert_eq!(
        plan["signature"], "float32, float32[:], float32[:], float32[:]",
        "{plan}"
    );

    let o = migrate_in(tmp.path(), &["--function", "saxpy", &f, "--json"]);
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    let types: Vec<(String, String)> = j["arg_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap().to_string(),
                t["from"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("float32".to_string(), "calls".to_string()),
            ("float32[:]".to_string(), "calls".to_string()),
            ("float32[:]".to_string(), "calls".to_string()),
            ("float32[:]".to_string(), "calls".to_string()),
        ]
    );
}

/// A parameter with a number as its default that the body uses as an axis
/// (`axis=-1`), with no call in the program: types read from the body leave
/// it to its default, as NumPy needs the axis constant. The static verdict
/// and `port migrate` agree, the JSON and the notes say so, and the wrapper
/// runs the original for another axis.
#[test]
fn an_axis_left_to_its_default_is_a_constant() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/axis_defaults.py");
    let step = static_verdict(tmp.path(), &f, "mean_abs_step");
    assert_eq!(step["verdict"], "cuda", "{step}");
    assert_eq!(
        step["migration_plan"]["signature"], "float64[:, :]",
        "{step}"
    );
    let o = migrate_in(
        tmp.path(),
        &["--function", "mean_abs_step", &f, "--json", "--write"],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["arg_types"],
        serde_json::json!([
            {"name": "x", "type": "float64[:, :]", "from": "assumed"},
            {"name": "axis", "constant": "-1", "from": "default"},
        ]),
        "{j}"
    );
    assert!(
        j["notes"]
            .to_string()
            .contains("`axis=-1` left to the default"),
        "{j}"
    );
    let patched = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    assert!(patched.contains("    if axis != -1:\n"), "{patched}");
}

/// Arguments the program always passes as one constant (`None`, a string),
/// given or by default, specialise the plan: the static verdict and
/// `port migrate` agree with no types given, the JSON says which constant
/// each parameter took, and the wrapper runs the original for any other.
#[test]
fn constants_the_calls_pass_specialise_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/constants_at_calls.py");
    let blend = static_verdict(tmp.path(), &f, "blend");
    assert_eq!(blend["verdict"], "cuda", "{blend}");
    let plan = &blend["migration_plan"];
    assert_eq!(
        plan["signature"], "float64[:], None, \"wrap\", float64",
        "{plan}"
    );
    assert_eq!(plan["types_from"], "calls", "{plan}");
    // Calls that pass `edge="wrap"` once and leave it to its default
    // twice: the plan is for the default.
    let smooth = static_verdict(tmp.path(), &f, "smooth3");
    assert_eq!(smooth["verdict"], "cuda", "{smooth}");
    assert_eq!(
        smooth["migration_plan"]["signature"], "float64[:], float64[:], \"clamp\"",
        "{smooth}"
    );

    let o = migrate_in(
        tmp.path(),
        &["--function", "blend", &f, "--json", "--write"],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(
        j["arg_types"],
        serde_json::json!([
            {"name": "a", "type": "float64[:]", "from": "calls"},
            {"name": "weights", "constant": "None", "from": "calls"},
            {"name": "mode", "constant": "\"wrap\"", "from": "calls"},
            {"name": "k", "type": "float64", "from": "calls"},
        ]),
        "{j}"
    );
    let patched = std::fs::read_to_string(tmp.path().join(&f)).unwrap();
    assert!(
        patched.contains("    if weights is not None:\n"),
        "{patched}"
    );
    assert!(
        patched.contains("    if not (isinstance(mode, str) and mode == \"wrap\"):\n"),
        "{patched}"
    );
    // A signature may name the constants too; a constant where the
    // function has no parameter is one clear line.
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "blend",
            &f,
            "--signature",
            "float64[:], None, 'reflect', float64, None",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("`None` is entry 5 of the signature, but `blend` has 4 parameters"),
        "{}",
        stderr(&o)
    );
}

/// A verification past 2 s says on the terminal what it is doing; a quick
/// one, or `--json`, prints no progress. (`script` gives port a terminal.)
#[test]
fn a_long_verification_shows_its_phase_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/kernels.py");
    let python = repo().join(".venv/bin/python");
    let port = env!("CARGO_BIN_EXE_port");
    let run = |size: &str, json: &str| {
        let cmd = format!(
            "{port} migrate --function stencil_2d {f} --signature 'float64[:, :], float64[:, :]' --size {size} {json} --python {}",
            python.display()
        );
        let o = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(tmp.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("script (util-linux) runs");
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        stdout(&o)
    };
    // About a second a call of the original, four calls.
    let long = run("2000000", "");
    assert!(
        long.contains("verifying `stencil_2d`: running the original on the generated inputs"),
        "{long}"
    );
    assert!(long.contains("verification: simulator"), "{long}");
    let quick = run("400", "");
    assert!(!quick.contains("verifying `stencil_2d`"), "{quick}");
    let json = run("2000000", "--json");
    assert!(!json.contains("verifying `stencil_2d`"), "{json}");
}

/// The limit on generated inputs is on the call, not on importing the
/// module: a module that compiles Numba functions with signatures at
/// import (PyEMD's jitemd.py: about 25 s here) verifies, at full size.
#[test]
fn the_limit_on_generated_inputs_does_not_count_the_import() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("slow_import.py"),
        "import time\n\nimport numpy as np\n\ntime.sleep(3)  # compiling at import\n\n\ndef diff(s):\n    return s[1:] - s[:-1]\n",
    )
    .unwrap();
    let j = json(&migrate_in(
        tmp.path(),
        &[
            "--function",
            "diff",
            "slow_import.py",
            "--signature",
            "float64[:]",
            "--generated-limit",
            "1",
            "--json",
        ],
    ));
    assert_eq!(j["status"], "verified", "{j}");
    assert!(j["verification"]["inputs_how"].is_null(), "{j}");
}

/// Generated inputs on which the original runs past `--generated-limit`
/// are made 64 times smaller, and the JSON says so: no verification waits
/// minutes on a size nobody asked for.
#[test]
fn generated_inputs_too_slow_for_the_original_are_made_smaller() {
    let tmp = tempfile::tempdir().unwrap();
    let f = copy_fixture(tmp.path(), "migrate/kernels.py");
    let stencil = |extra: &[&str]| {
        let mut args = vec![
            "--function",
            "stencil_2d",
            &f,
            "--signature",
            "float64[:, :], float64[:, :]",
            "--json",
        ];
        args.extend_from_slice(extra);
        json(&migrate_in(tmp.path(), &args))
    };
    let started = std::time::Instant::now();
    // About two seconds a call of the original: four calls.
    let j = stencil(&["--size", "4000000", "--generated-limit", "2"]);
    assert_eq!(j["status"], "verified", "{j}");
    let how = j["verification"]["inputs_how"].as_str().unwrap_or_default();
    // 64 times smaller, or on a loaded machine 4096 times.
    assert!(
        how.contains("generated for about 62500 loop iterations: 64 times larger ran past 2 s")
            || how.contains(
                "generated for about 976 loop iterations: 4096 times larger ran past 2 s"
            ),
        "{j}"
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    // Within the limit, nothing is said.
    let j = stencil(&[]);
    assert_eq!(j["status"], "verified", "{j}");
    assert!(j["verification"]["inputs_how"].is_null(), "{j}");
}

/// A package's modules import each other relatively (`from . import
/// _settings, _window`, `from ._window import safe_inverse`) or by their
/// absolute names (`from relpkg import _window`, `from relpkg._settings
/// import EXCLUSION_DENOM`), take names another module imported (`from
/// ._window import angle_of`, which is `math.atan2` there), and call
/// through the module
/// (`_window.safe_inverse(_window.hypot_step(…))`, `_window.zero_small(d)`
/// as a statement). Those are the program's modules: their constants are
/// frozen, their helpers inlined, and the package's own calls (`demo()`)
/// type the arguments. The patched package, run under Numba's CUDA
/// simulator, gives the original's results.
#[test]
fn a_package_reaches_its_own_modules_through_relative_imports() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("relpkg");
    std::fs::create_dir(&pkg).unwrap();
    let files = [
        "__init__.py",
        "_settings.py",
        "_window.py",
        "profile.py",
        "absolute.py",
    ];
    for f in files {
        std::fs::copy(fixture(&format!("migrate/relpkg/{f}")), pkg.join(f)).unwrap();
    }
    for f in [
        "profile.window_means",
        "profile.inverse_spreads",
        "profile.scaled_inverse",
        "profile.squared_gaps",
        "profile.path_lengths",
        // `_window.clip(x[i])` beside NumPy's `np.clip(y[i], lo, hi)`.
        "profile.clipped_sums",
        // `angle_of`, imported from `_window`, which imports it from math.
        "profile.headings",
        "absolute.scaled_path_lengths",
        "absolute.inverse_lengths",
        // Its own `_unit`, not `profile`'s string helper of the same name.
        "absolute.softsigns",
    ] {
        let name = format!("relpkg.{f}");
        let o = migrate_in(tmp.path(), &["--function", &name, ".", "--json"]);
        let j = json(&o);
        assert_eq!(j["status"], "verified", "{f}: {j}");
        let from = arg_sources(&j);
        assert!(from.iter().all(|&x| x == "calls"), "{f}: {from:?}");
    }
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "relpkg.profile.inverse_spreads",
            ".",
            "--json",
            "--write",
        ],
    );
    assert_eq!(json(&o)["status"], "verified");
    for f in files.iter().filter(|&&f| f != "profile.py") {
        assert_eq!(
            std::fs::read_to_string(pkg.join(f)).unwrap(),
            std::fs::read_to_string(fixture(&format!("migrate/relpkg/{f}"))).unwrap(),
            "{f} is untouched"
        );
    }
    // Analysed from inside the package (`.` is `relpkg/`): `from relpkg
    // import _window` is `./_window.py`, found by walking up the real path
    // (the name `.` has no parent; walking it never ended).
    let o = assert_cmd::Command::cargo_bin("port")
        .unwrap()
        .current_dir(&pkg)
        .args(["analyze", "--static", ".", "--json"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let a = json(&o);
    for f in ["inverse_lengths", "softsigns"] {
        let report = function(&a, f);
        assert_eq!(report["verdict"], "cuda", "{report}");
    }
    let check = "import numpy as np\n\
                 from relpkg import profile\n\
                 s = np.abs(np.random.default_rng(2).standard_normal(1000))\n\
                 s[::5] = 0.0\n\
                 out = np.full(1000, -1.0)\n\
                 profile.inverse_spreads(s, out)\n\
                 want = np.where(s < 1e-8, 0.0, 1.0 / np.where(s < 1e-8, 1.0, s))\n\
                 assert np.array_equal(out, want), np.abs(out - want).max()\n\
                 print('ok', profile.inverse_spreads.__doc__.split(';')[0])\n";
    let o = Command::new(oracle_python())
        .args(["-c", check])
        .current_dir(tmp.path())
        .env("NUMBA_ENABLE_CUDASIM", "1")
        .env("PORT_DEVICE", "gpu")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with("ok Runs on the GPU"),
        "{}",
        stdout(&o)
    );
}

/// A function compiled with Numba's eager signatures (`@njit("…(…)")`, a
/// list of them, or a module-level name for the list) is planned and
/// verified with the types it declares, the only ones its original
/// accepts; a body's use alone reads `b[i]` passed to `np.outer` as a 1-D
/// `b`, for which Numba's dispatcher raises. The static verdict plans with
/// the same types, and says where they came from. The patched module runs
/// under Numba's CUDA simulator.
#[test]
fn numba_signatures_the_author_wrote_type_the_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let file = "numba_declared.py";
    std::fs::copy(fixture(&format!("migrate/{file}")), tmp.path().join(file)).unwrap();
    let oracle = oracle_python();
    let oracle = oracle.to_str().unwrap();
    let a = json(&port_in(
        tmp.path(),
        &["analyze", "--static", file, "--json"],
    ));
    for (f, sig) in [
        (
            "row_outer_differences",
            "float64[:, :], float64[:, :], int64",
        ),
        // The first of the list that takes an array.
        ("soft_gap", "float64[:], float64[:]"),
        ("clipped_scale", "float64[:], float64[:], float64"),
        ("bit_is_set", "uint8[::1], int64"),
    ] {
        let report = function(&a, f);
        let plan = &report["migration_plan"];
        assert_eq!(plan["types_from"], "numba", "{f}: {plan}");
        assert_eq!(plan["signature"], sig, "{f}: {plan}");
        assert_eq!(report["verdict"], "cuda", "{f}: {report}");
        let j = json(&port_in(
            tmp.path(),
            &[
                "migrate",
                "--function",
                f,
                file,
                "--json",
                "--python",
                oracle,
            ],
        ));
        assert_eq!(j["status"], "verified", "{f}: {j}");
        let from = arg_sources(&j);
        assert!(from.iter().all(|&x| x == "numba"), "{f}: {from:?}");
    }
    // `locals={"acc": float32}`: the kernels sum in float32 as Numba does
    // (CPython's float64 sum of these inputs differs past rtol 1e-5), and
    // are judged at float32's tolerance; the float32 reaches Python as a
    // float, as Numba returns it.
    let j = json(&port_in(
        tmp.path(),
        &[
            "migrate",
            "--function",
            "float32_energy",
            file,
            "--json",
            "--python",
            oracle,
        ],
    ));
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["rtol"], 1e-4, "{j}");
    let o = port_in(
        tmp.path(),
        &[
            "migrate",
            "--function",
            "row_outer_differences",
            file,
            "--json",
            "--write",
            "--python",
            oracle,
        ],
    );
    assert_eq!(json(&o)["status"], "verified");
    let check = "import numpy as np, numba_declared as m\n\
                 r = np.random.default_rng(4)\n\
                 a, b = r.random((6, 5)), r.random((6, 5))\n\
                 got = m.row_outer_differences(a, b, 6)\n\
                 want = np.einsum('ij,ik->ijk', a, a) - np.einsum('ij,ik->ijk', b, b)\n\
                 assert np.allclose(got, want), np.abs(got - want).max()\n\
                 print('ok')\n";
    let o = Command::new(oracle)
        .args(["-c", check])
        .current_dir(tmp.path())
        .env("NUMBA_ENABLE_CUDASIM", "1")
        .env("PORT_DEVICE", "gpu")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).trim(), "ok");
}
