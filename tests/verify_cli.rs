//! `port verify` and the timing half of `port migrate`, on the simulator
//! backend (CI has no GPU; `verify/tests/gpu_verify.rs` runs the same
//! machinery on a real device with PORT_GPU=1): backend selection and its
//! one-line reasons, the JSON fields and which of them are null without a
//! GPU, an edited original caught as a mismatch naming the kernel and its
//! launch, records updated in place, the backup used after `--write`, and
//! exit codes.

mod common;

use std::path::Path;

use common::{fixture, json_error, repo, stderr, stdout, user_error};

/// Whether this machine has an NVIDIA driver: the fallback lines below are
/// only said where there is none.
fn has_driver() -> bool {
    Path::new("/dev/nvidiactl").exists()
}

fn port(dir: &Path, args: &[&str]) -> std::process::Output {
    let venv = repo().join(".venv");
    assert_cmd::Command::cargo_bin("port")
        .unwrap()
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("VIRTUAL_ENV", &venv)
        .args(args)
        .output()
        .expect("port runs")
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

const SAXPY: &str = "float64, float64[:], float64[:], float64[:]";

/// A scratch folder with seeds.py, saxpy migrated (auto backend).
fn migrated_saxpy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/seeds.py"), tmp.path().join("seeds.py")).unwrap();
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "seeds.py",
            "--function",
            "saxpy",
            "--signature",
            SAXPY,
            "--size",
            "20000",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    if !has_driver() {
        // auto fell back, and said why in one line.
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("port: no CUDA driver"), "{err}");
        assert!(err.contains("verifying on the host simulator"), "{err}");
    }
    tmp
}

/// The simulator fills what it can measure and leaves GPU figures null.
fn assert_simulator_fields(r: &serde_json::Value) {
    assert_eq!(r["device"]["name"], "simulator", "{r}");
    assert!(r["device"]["compute_capability"].is_null());
    let t = &r["timing"];
    assert!(t["compile_s"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["cpython_s"].as_f64().unwrap() > 0.0, "{t}");
    // What the simulator's one run took, beside the original's.
    assert!(t["simulator_s"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(t["repeats"]["cpython"], 20, "{t}");
    for k in [
        "kernel_s",
        "end_to_end_s",
        "speedup_kernel",
        "speedup_end_to_end",
    ] {
        assert!(t[k].is_null(), "{k} should be null on the simulator: {t}");
    }
    let p = &r["projection"];
    for k in [
        "hotspot_pct",
        "program_speedup",
        "transfer_s",
        "profitable",
        "why",
    ] {
        assert!(p.get(k).is_some(), "projection.{k} missing: {p}");
    }
    assert!(p["profitable"].is_null());
    assert!(p["why"].as_str().unwrap().contains("simulator"));
    // What a call costs on any GPU at least, from the simulated run: its
    // launches at 3 µs, its copies at the host link's peak.
    let f = &p["floor"];
    let launches = f["launches"].as_u64().unwrap();
    assert!(launches >= 1, "{p}");
    assert_eq!(f["library_calls"], 0, "{p}");
    let moved = f["bytes_to_device"].as_u64().unwrap() + f["bytes_to_host"].as_u64().unwrap();
    assert!(moved >= 8 * 20_000, "{p}");
    let s = f["seconds"].as_f64().unwrap();
    assert!(
        s > launches as f64 * 3e-6 + moved as f64 / 64e9 * 0.99,
        "{p}"
    );
    assert!(
        p["why"]
            .as_str()
            .unwrap()
            .contains("on any GPU a call takes at least"),
        "{p}"
    );
    assert!(r["bandwidth"].is_null());
}

#[test]
fn migrate_reports_timing_projection_and_device() {
    let tmp = migrated_saxpy();
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join(".port/migrations/saxpy.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "verified");
    assert_simulator_fields(&rec);
    assert_eq!(rec["launches"][0]["kernel"], "saxpy_kernel");
    // 20,000 elements at 256 threads a block would be 79 blocks; the launch
    // policy caps a grid at 32 blocks per SM, and the simulator has 2.
    assert_eq!(rec["launches"][0]["grid"], serde_json::json!([64, 1]));
    assert!(tmp.path().join(".port/kernels/saxpy.plan.json").exists());
}

#[test]
fn verify_reruns_every_migration_and_keeps_the_records_current() {
    let tmp = migrated_saxpy();
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "seeds.py",
            "--function",
            "go_fast",
            "--signature",
            "float64[:, :]",
            "--backend",
            "simulator",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let before = std::fs::read_to_string(tmp.path().join(".port/migrations/go_fast.json")).unwrap();

    let o = port(tmp.path(), &["verify", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let j = json(&o);
    assert_eq!(j["schema"], "port.verify/1");
    if !has_driver() {
        assert_eq!(j["backend"], "simulator");
        assert!(j["fallback"]
            .as_str()
            .unwrap()
            .starts_with("no CUDA driver"));
    }
    let results = j["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["go_fast", "saxpy"]);
    for r in results {
        assert_eq!(r["status"], "verified", "{r}");
        assert_simulator_fields(r);
    }
    // The record was written again (new timings), and --size was kept.
    let after = std::fs::read_to_string(tmp.path().join(".port/migrations/go_fast.json")).unwrap();
    assert_ne!(before, after);
    let saxpy = results.iter().find(|r| r["function"] == "saxpy").unwrap();
    assert_eq!(saxpy["size"], 20000);
    assert_eq!(saxpy["launches"][0]["grid"], serde_json::json!([64, 1]));

    // The table: one row per function, every figure column.
    let o = port(tmp.path(), &["verify", "--function", "saxpy"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for col in [
        "function",
        "backend",
        "max rel err",
        "compile",
        "kernel",
        "end-to-end",
        "CPython",
        "speedup kernel",
        "speedup e2e",
        "program",
    ] {
        assert!(out.contains(col), "{col} missing:\n{out}");
    }
    assert!(out.contains("saxpy"), "{out}");
    assert!(!out.contains("go_fast"), "--function filters: {out}");
    assert!(out.contains("no GPU timing"), "{out}");
}

/// The user changed the original after migrating: the kernels no longer
/// compute what it computes. Found, located, and the record says so.
#[test]
fn an_edited_original_is_a_mismatch_naming_the_kernel_and_launch() {
    let tmp = migrated_saxpy();
    let path = tmp.path().join("seeds.py");
    let src = std::fs::read_to_string(&path).unwrap();
    let edited = src.replace("out[i] = a * x[i] + y[i]", "out[i] = a * x[i] - y[i]");
    assert_ne!(src, edited);
    std::fs::write(&path, edited).unwrap();

    let o = port(tmp.path(), &["verify", "--backend", "simulator"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("MISMATCH"), "{out}");
    assert!(
        out.contains("saxpy: results differ: `out` index [0]: expected"),
        "{out}"
    );
    assert!(
        out.contains("from kernel(s) `saxpy_kernel` (grid (64, 1), block (256, 1))"),
        "{out}"
    );
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join(".port/migrations/saxpy.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "mismatch");
    assert_eq!(rec["verification"]["passed"], false);
    // The extended-precision run of the original agrees with its float64
    // run to rounding: the kernels are wrong, not the original unstable.
    let c = &rec["verification"]["float64_exact"];
    assert_eq!(c["verdict"], "failed", "{c}");
    assert!(c["original_err"].as_f64().unwrap() < 1e-12, "{c}");
    assert!(c["ours_err"].as_f64().unwrap() > 0.1, "{c}");
    assert!(rec["reasons"][0]["message"]
        .as_str()
        .unwrap()
        .starts_with("results differ: `out` index [0]"));
}

/// A kernel off by 0.1% on a well-conditioned problem: the original's own
/// float64 error is rounding, so ten times it cannot hide the difference.
#[test]
fn a_slightly_wrong_kernel_on_a_stable_problem_stays_a_mismatch() {
    let tmp = migrated_saxpy();
    let path = tmp.path().join("seeds.py");
    let src = std::fs::read_to_string(&path).unwrap();
    let edited = src.replace(
        "out[i] = a * x[i] + y[i]",
        "out[i] = a * x[i] + 1.001 * y[i]",
    );
    assert_ne!(src, edited);
    std::fs::write(&path, edited).unwrap();
    let o = port(tmp.path(), &["verify", "--backend", "simulator", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let r = &json(&o)["results"][0];
    assert_eq!(r["status"], "mismatch", "{r}");
    let c = &r["verification"]["float64_exact"];
    assert_eq!(c["verdict"], "failed", "{c}");
    let (ours, theirs) = (
        c["ours_err"].as_f64().unwrap(),
        c["original_err"].as_f64().unwrap(),
    );
    assert!(ours > 1e-4 && theirs < 1e-12, "{c}");
}

/// `settle` (fixtures/migrate/programs_precision.py) verified where its
/// iteration converges, then verified again on inputs where it is chaotic:
/// inconclusive, exit 5, the record and `port report` say so, and it no
/// longer counts as migrated.
#[test]
fn an_inconclusive_verification_exits_5_and_the_record_and_report_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("migrate/programs_precision.py"),
        tmp.path().join("p.py"),
    )
    .unwrap();
    let made = std::process::Command::new(repo().join(".venv/bin/python"))
        .current_dir(tmp.path())
        .arg("-c")
        .arg(
            "import numpy as np\nrng = np.random.default_rng(5)\nm = 64\n\
             for gain, name in ((0.5, 'calm'), (3.0, 'chaos')):\n    \
             np.savez(name + '.npz', W=gain * rng.standard_normal((m, m)) / np.sqrt(m), \
             b=0.1 * rng.standard_normal(m), x=rng.standard_normal(m), steps=np.int64(200))\n",
        )
        .status()
        .unwrap();
    assert!(made.success());
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "p.py",
            "--function",
            "settle",
            "--signature",
            "float64[:,:], float64[:], float64[:], int64",
            "--inputs",
            "calm.npz",
            "--backend",
            "simulator",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));

    let again = ["verify", "--backend", "simulator", "--inputs", "chaos.npz"];
    let o = port(tmp.path(), &again);
    assert_eq!(o.status.code(), Some(5), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("INCONCLUSIVE"), "{out}");
    assert!(
        out.contains("settle: the original itself is not reproducible in float64 here"),
        "{out}"
    );
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join(".port/migrations/settle.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "inconclusive", "{rec}");
    assert_eq!(rec["verification"]["passed"], false);
    assert_eq!(
        rec["verification"]["float64_exact"]["verdict"],
        "inconclusive"
    );
    assert_eq!(
        rec["reasons"][0]["message"],
        rec["verification"]["float64_exact"]["why"]
    );

    let mut with_json = again.to_vec();
    with_json.push("--json");
    let o = port(tmp.path(), &with_json);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    let j = common::one_json_document(&o);
    assert_eq!(j["results"][0]["status"], "inconclusive", "{j}");

    let o = port(tmp.path(), &["report", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["migrations"][0]["status"], "inconclusive", "{r}");
    assert_eq!(r["coverage"]["migrated_pct"], 0.0, "{r}");
    let o = port(tmp.path(), &["report", "--format", "md"]);
    let md = stdout(&o);
    assert!(md.contains("| `settle` | inconclusive: line "), "{md}");

    // On the converging inputs again it verifies, and the stale reason goes.
    let o = port(
        tmp.path(),
        &[
            "verify",
            "--backend",
            "simulator",
            "--inputs",
            "calm.npz",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = &json(&o)["results"][0];
    assert_eq!(r["status"], "verified", "{r}");
    assert_eq!(r["reasons"], serde_json::json!([]), "{r}");
}

/// Where the original cannot give a more exact answer, the mismatch stands
/// and the record says why there was no second opinion: a result allocated
/// in float64 by the function itself, or np.linalg refusing np.longdouble.
#[test]
fn without_a_second_opinion_a_mismatch_stays_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.py");
    std::fs::copy(fixture("migrate/programs_precision.py"), &path).unwrap();
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "p.py",
            "--function",
            "centred",
            "--signature",
            "float64[:]",
            "--backend",
            "simulator",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let src = std::fs::read_to_string(&path).unwrap();
    for (edit, why) in [
        (
            "x - 1.5 * x.mean()",
            "return value stays float64 when the original runs in extended precision (np.longdouble): the function fixes its dtype itself",
        ),
        (
            "x - 1.5 * x.mean() * np.linalg.det(np.eye(2, dtype=x.dtype))",
            "the original fails in extended precision (np.longdouble): TypeError: array type",
        ),
    ] {
        std::fs::write(&path, src.replace("x - x.mean()", edit)).unwrap();
        let o = port(tmp.path(), &["verify", "--backend", "simulator", "--json"]);
        assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
        let r = &json(&o)["results"][0];
        assert_eq!(r["status"], "mismatch", "{r}");
        let c = &r["verification"]["float64_exact"];
        assert_eq!(c["verdict"], "unavailable", "{c}");
        assert!(c["why"].as_str().unwrap().starts_with(why), "{c}");
        assert!(c.get("ours_err").is_none(), "{c}");
        assert!(r["verification"]["mismatch"]
            .as_str()
            .unwrap()
            .starts_with("return value"));
    }
}

/// After `--write` the original lives in the backup; verify runs that.
#[test]
fn after_write_the_backup_is_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/seeds.py"), tmp.path().join("seeds.py")).unwrap();
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "seeds.py",
            "--function",
            "saxpy",
            "--signature",
            SAXPY,
            "--write",
            "--backend",
            "simulator",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = port(tmp.path(), &["verify", "--backend", "simulator", "--json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let r = &json(&o)["results"][0];
    assert_eq!(r["status"], "verified");
    assert!(r["original"]
        .as_str()
        .unwrap()
        .ends_with("seeds.py.port-bak"));
}

/// Writes `np.savez(npz, members)` with the venv's Python.
fn savez(npz: &Path, members: &str) {
    let script = format!(
        "import numpy as np; np.savez({:?}, {members})",
        npz.display().to_string()
    );
    let o = std::process::Command::new(repo().join(".venv/bin/python"))
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Inputs the user gives win over generated ones, and are named so.
#[test]
fn given_inputs_are_used_and_named() {
    let tmp = migrated_saxpy();
    savez(
        &tmp.path().join("in.npz"),
        "a=2.0, x=np.linspace(0, 1, 3000), y=np.linspace(0, 1, 3000) * 3, out=np.zeros(3000)",
    );
    let o = port(
        tmp.path(),
        &[
            "verify",
            "--backend",
            "simulator",
            "--inputs",
            "in.npz",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let r = &json(&o)["results"][0];
    assert_eq!(r["verification"]["inputs"], "given");
    // 3000 elements: 12 blocks of 256.
    assert_eq!(r["launches"][0]["grid"], serde_json::json!([12, 1]));
}

#[test]
fn a_refused_migration_is_skipped_not_failed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/refused.py"), tmp.path().join("refused.py")).unwrap();
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "refused.py",
            "--function",
            "cumulative_sum",
            "--signature",
            "float64[:], float64[:]",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let o = port(tmp.path(), &["verify", "--backend", "simulator"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("skipped"), "{}", stdout(&o));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let empty = tempfile::tempdir().unwrap();
    user_error(&port(empty.path(), &["verify"]), "no migrations in");

    let tmp = migrated_saxpy();
    user_error(
        &port(tmp.path(), &["verify", "--function", "nope"]),
        "no migration of `nope` in .port/migrations (there are: saxpy)",
    );
    user_error(
        &port(tmp.path(), &["verify", "--repeats", "5"]),
        "--repeats 5: at least 10",
    );
    user_error(
        &port(tmp.path(), &["verify", "--inputs", "missing.npz"]),
        "--inputs missing.npz: no such file",
    );
    if !has_driver() {
        user_error(
            &port(tmp.path(), &["verify", "--backend", "gpu"]),
            "--backend gpu: no CUDA driver: libcuda.so could not be loaded",
        );
        user_error(
            &port(
                tmp.path(),
                &[
                    "migrate",
                    "seeds.py",
                    "--function",
                    "saxpy",
                    "--signature",
                    SAXPY,
                    "--backend",
                    "gpu",
                ],
            ),
            "--backend gpu: no CUDA driver",
        );
    }
}

/// Migrates `function` of a copy of `file` on the simulator at `--size
/// 3000`, returning the JSON record and the text report of a second run.
fn migrate_json_and_text(
    file: &str,
    function: &str,
    signature: &str,
) -> (serde_json::Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let name = Path::new(file).file_name().unwrap().to_str().unwrap();
    std::fs::copy(fixture(file), tmp.path().join(name)).unwrap();
    let args = [
        "migrate",
        name,
        "--function",
        function,
        "--signature",
        signature,
        "--size",
        "3000",
        "--backend",
        "simulator",
    ];
    let o = port(tmp.path(), &[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    let o = port(tmp.path(), &args);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    (j, stdout(&o))
}

/// Black-Scholes over whole arrays (an element-wise function the program
/// calls once on its arrays) is timed the way the program calls it: one
/// call per repeat, not 3000 calls through `np.vectorize`.
#[test]
fn an_elementwise_function_over_arrays_is_timed_as_the_program_calls_it() {
    let (j, text) = migrate_json_and_text(
        "migrate/pricing.py",
        "black_scholes",
        "float64[:], float64[:], float64[:], float64, float64",
    );
    let c = &j["timing"]["cpython_call"];
    assert_eq!(c["via"], "call", "{j}");
    assert_eq!(c["calls"], 1, "{j}");
    assert!(c.get("why_vectorized").is_none(), "{c}");
    assert!(
        text.contains("CPython time: the original called once on the arguments as given"),
        "{text}"
    );
    assert!(!text.contains("np.vectorize"), "{text}");
}

/// On the simulator nothing is compared with the original's time, so its
/// timed calls stop once they have taken a few seconds (at least 3 calls):
/// saxpy over 3 million elements takes a CPython call of about half a
/// second here, and its 20 repeats no longer make `port migrate` wait ten.
#[test]
fn a_slow_original_is_timed_within_the_simulators_budget() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/seeds.py"), tmp.path().join("seeds.py")).unwrap();
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "seeds.py",
            "--function",
            "saxpy",
            "--signature",
            SAXPY,
            "--size",
            "3000000",
            "--backend",
            "simulator",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    let t = &j["timing"];
    let n = t["repeats"]["cpython"].as_u64().unwrap();
    let s = t["cpython_s"].as_f64().unwrap();
    assert!(n >= 3, "at least 3 timed calls: {t}");
    // Each call but the last began inside the budget.
    let budget = port_verify::SIM_CPYTHON_BUDGET_S;
    assert!(
        n < 20 && (n - 1) as f64 * s < 2.0 * budget,
        "{n} calls of {s} s against a budget of {budget} s: {t}"
    );
}

/// A function of scalars can only be applied to the generated arrays per
/// element: it goes through `np.vectorize`, and both outputs say so.
#[test]
fn a_scalar_function_is_timed_through_np_vectorize_and_says_so() {
    let (j, text) = migrate_json_and_text(
        "migrate/pricing.py",
        "price_one",
        "float64, float64, float64, float64, float64",
    );
    let c = &j["timing"]["cpython_call"];
    assert_eq!(c["via"], "np.vectorize", "{j}");
    assert_eq!(c["calls"], 3000, "{j}");
    assert_eq!(c["why_vectorized"], "the function takes scalars", "{j}");
    assert!(
        text.contains(
            "CPython time: the original applied per element through np.vectorize, 3000 calls a run"
        ),
        "{text}"
    );
}

/// Given one call's scalars (as the profiler captures a call of a function
/// of numbers), the original is timed as that call, made directly: not
/// through `np.vectorize`, whose set-up would cost several times the call.
#[test]
fn one_calls_scalars_are_timed_as_the_call_itself() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/pricing.py"), tmp.path().join("pricing.py")).unwrap();
    savez(
        &tmp.path().join("one.npz"),
        "S=100.0, X=95.0, T=0.5, R=0.02, V=0.3",
    );
    let o = port(
        tmp.path(),
        &[
            "migrate",
            "pricing.py",
            "--function",
            "price_one",
            "--signature",
            "float64, float64, float64, float64, float64",
            "--inputs",
            "one.npz",
            "--backend",
            "simulator",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["verification"]["inputs"], "given", "{j}");
    let c = &j["timing"]["cpython_call"];
    assert_eq!(c["via"], "call", "{j}");
    assert_eq!(c["calls"], 1, "{j}");
    assert!(c.get("why_vectorized").is_none(), "{c}");
}

/// Code written for one number (`math.exp`) but typed as taking an array
/// cannot be called on the whole array; it is applied per element and the
/// record says why.
#[test]
fn scalar_code_typed_as_arrays_falls_back_to_np_vectorize_with_the_reason() {
    let (j, _) = migrate_json_and_text(
        "migrate/seeds.py",
        "gaussian_pdf",
        "float64[:], float64, float64",
    );
    let c = &j["timing"]["cpython_call"];
    assert_eq!(c["via"], "np.vectorize", "{j}");
    assert_eq!(c["calls"], 3000, "{j}");
    let why = c["why_vectorized"].as_str().unwrap();
    assert!(
        why.starts_with("called on whole arrays it raised TypeError"),
        "{why}"
    );
}

/// `verify --json` prints one JSON document on every outcome: the error
/// document for bad input, the results (once) when a function does not
/// verify.
#[test]
fn json_is_one_document_on_every_outcome() {
    let empty = tempfile::tempdir().unwrap();
    json_error(
        &port(empty.path(), &["verify", "--json"]),
        2,
        "bad_input",
        "no migrations in",
    );
    let tmp = migrated_saxpy();
    json_error(
        &port(tmp.path(), &["verify", "--json", "--function", "nope"]),
        2,
        "bad_input",
        "no migration of `nope`",
    );
    json_error(
        &port(tmp.path(), &["verify", "--json", "--repeats", "5"]),
        2,
        "bad_input",
        "--repeats 5: at least 10",
    );
    json_error(
        &port(tmp.path(), &["verify", "--json", "--inputs", "missing.npz"]),
        2,
        "bad_input",
        "--inputs missing.npz: no such file",
    );
    json_error(
        &port(tmp.path(), &["verify", "--json", "--backend", "tpu"]),
        2,
        "bad_arguments",
        "tpu",
    );
    // An original edited to differ: the results, once, and exit 1.
    let seeds = tmp.path().join("seeds.py");
    let text = std::fs::read_to_string(&seeds).unwrap();
    std::fs::write(&seeds, text.replace("a * x[i] + y[i]", "a * x[i] - y[i]")).unwrap();
    let o = port(tmp.path(), &["verify", "--json", "--backend", "simulator"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = common::one_json_document(&o);
    assert_eq!(j["results"][0]["verification"]["passed"], false, "{j}");
}
