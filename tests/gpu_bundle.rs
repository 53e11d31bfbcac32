//! `make gpu-bundle` (scripts/gpu-bundle.sh) and the script it ships,
//! run-gpu.sh, on this machine, so that the bundle cannot rot before a GPU
//! machine is lent: the archive is built from the wheel `make test` built
//! first (`make wheel`, or `$PORT_TEST_WHEEL`) and the test binaries `cargo
//! test` just built (the dev profile, fast compression — `make gpu-bundle`
//! builds them as the wheel's binary is built), extracted into an empty
//! folder, and run in a clean environment (`env -i`): every library of the
//! test binaries resolves inside the bundle or to glibc, and `run-gpu.sh
//! --simulate` installs the wheel with the Python it finds, runs a first
//! migration, the gated GPU test binaries, their simulator twin and the
//! whole benchmark, all through the C library the wheel carries
//! (PORT_BUNDLED_LIBC=1, what a machine with an older glibc gets). What the
//! GPU figures are worth needs a GPU.
//!
//! The test binaries it bundles are verify's (gpu_verify, gpu_codegen,
//! plan_runs), found beside this one: `cargo test --workspace` (make test)
//! builds them before any test runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{repo, stderr, stdout};

const TEST_BINARIES: [&str; 3] = ["gpu_codegen", "gpu_verify", "plan_runs"];

/// The functions the benchmark runs (scripts/bench_gpu.py, CASES).
const FUNCTIONS: [&str; 7] = [
    "saxpy",
    "vector_add",
    "polar_distance",
    "variance",
    "go_fast",
    "stencil_2d",
    "matmul",
];

/// The newest `NAME-<cargo hash>` executable beside this test's own.
fn test_binary(name: &str) -> PathBuf {
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&deps)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|hash| hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).unwrap_or_else(|| {
        panic!(
            "no {name} test binary in {}: build verify's tests first (cargo test --workspace, as make test does)",
            deps.display()
        )
    })
}

/// The wheel `make wheel` built for this version (make test builds it
/// before the tests), or `$PORT_TEST_WHEEL`.
fn wheel() -> PathBuf {
    let p = std::env::var_os("PORT_TEST_WHEEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            repo().join(format!(
                "target/wheels/port-{}-py3-none-manylinux_2_17_x86_64.whl",
                env!("CARGO_PKG_VERSION")
            ))
        });
    assert!(
        p.is_file(),
        "no wheel at {}: build it with `make wheel` (make test does it first)",
        p.display()
    );
    p
}

/// `env -i PATH=path ... program args` in `cwd`: nothing of this
/// environment leaks in.
fn clean(path: &str, cwd: &Path, program: &Path, args: &[&str]) -> Output {
    clean_with(path, &[], cwd, program, args)
}

/// [`clean`] with the variables `vars` (NAME=value) set.
fn clean_with(path: &str, vars: &[&str], cwd: &Path, program: &Path, args: &[&str]) -> Output {
    Command::new("env")
        .arg("-i")
        .arg(format!("PATH={path}"))
        .args(vars)
        .arg(program)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("env runs")
}

/// The oracle venv's bin folder first: its python3 has numpy, numba and
/// numba-cuda, as a GPU machine's own python3 has.
fn path_with_numba() -> String {
    let bin = repo().join(".venv-oracle/bin");
    assert!(
        bin.join("python3").exists(),
        "the Numba oracle venv is missing: run `make test` (or scripts/setup.sh --oracle)"
    );
    format!("{}:/usr/bin:/bin", bin.display())
}

fn one_line_exit_2(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{}\n{err}", stdout(o));
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "`{needle}` not in: {err}");
}

/// The libraries `ldd` says `binary` loads, as (soname, resolved path).
fn linked(binary: &Path, cwd: &Path) -> Vec<(String, String)> {
    let o = clean(
        "/usr/bin:/bin",
        cwd,
        Path::new("/usr/bin/ldd"),
        &[binary.to_str().unwrap()],
    );
    assert!(
        o.status.success(),
        "ldd {}: {}",
        binary.display(),
        stderr(&o)
    );
    let text = stdout(&o);
    assert!(!text.contains("not found"), "{}:\n{text}", binary.display());
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let soname = w.next()?;
            (w.next()? == "=>").then(|| (soname.to_string(), w.next().unwrap_or("").to_string()))
        })
        .collect()
}

const GLIBC: [&str; 6] = [
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libmvec.so.1",
];

#[test]
fn the_bundle_runs_the_gpu_path_simulated_from_its_archive_in_a_clean_environment() {
    let numba_path = path_with_numba();
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("port-gpu.tar.xz");

    // Built from this build's binaries.
    let mut build = Command::new("bash");
    build
        .arg(repo().join("scripts/gpu-bundle.sh"))
        .arg("--wheel")
        .arg(wheel());
    for t in TEST_BINARIES {
        build.arg("--test").arg(test_binary(t));
    }
    let o = build
        .args(["--level", "0", "--max-mib", "1024", "--out"])
        .arg(&archive)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gpu-bundle.sh: {}{}",
        stdout(&o),
        stderr(&o)
    );
    let line = stdout(&o);
    assert!(
        line.trim_end().ends_with(" bytes)") && line.contains(" MiB, "),
        "the archive's path and size: {line}"
    );
    let shown = archive.canonicalize().unwrap();
    assert!(line.starts_with(shown.to_str().unwrap()), "{line}");

    // Extracted into an empty folder, with nothing of this environment.
    let x = tmp.path().join("x");
    std::fs::create_dir(&x).unwrap();
    let o = Command::new("tar")
        .arg("-xJf")
        .arg(&archive)
        .arg("-C")
        .arg(&x)
        .output()
        .unwrap();
    assert!(o.status.success(), "tar: {}", stderr(&o));
    let b = x.join("port-gpu").canonicalize().unwrap();
    let wheels: Vec<_> = std::fs::read_dir(b.join("wheel"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        wheels.len() == 1 && wheels[0].starts_with("port-") && wheels[0].ends_with(".whl"),
        "{wheels:?}"
    );

    // Every library of the test binaries resolves inside the bundle, or is
    // glibc's.
    let lib = b.join("lib");
    for binary in TEST_BINARIES.map(|t| b.join("tests").join(t)) {
        let libs = linked(&binary, &b);
        assert!(
            libs.iter().any(|(s, _)| s.starts_with("libLLVM.so.19")),
            "{}: {libs:?}",
            binary.display()
        );
        for (soname, path) in libs {
            if GLIBC.contains(&soname.as_str()) {
                continue;
            }
            let resolved = Path::new(&path).canonicalize().unwrap();
            assert!(
                resolved.starts_with(&lib),
                "{}: {soname} => {path}, outside the bundle",
                binary.display()
            );
        }
    }
    let manifest = std::fs::read_to_string(b.join("MANIFEST")).unwrap();
    assert!(manifest.contains("\nneeds: glibc 2."), "{manifest}");
    assert!(b.join("libdevice/libdevice.10.bc").is_file());

    // What a GPU machine runs, simulated: the checkout's run-gpu.sh
    // extracts the archive and runs the bundle's copy; port and the test
    // binaries run through the wheel's own loader and C library.
    let out = tmp.path().join("out");
    let o = clean_with(
        &numba_path,
        &["PORT_BUNDLED_LIBC=1"],
        tmp.path(),
        Path::new("/bin/bash"),
        &[
            repo().join("scripts/run-gpu.sh").to_str().unwrap(),
            "--bundle",
            archive.to_str().unwrap(),
            "--simulate",
            out.to_str().unwrap(),
        ],
    );
    let text = stdout(&o);
    assert!(
        o.status.success(),
        "run-gpu.sh --simulate: exit {:?}\n{text}\n{}",
        o.status.code(),
        stderr(&o)
    );
    assert!(text.contains("SIMULATED RUN"), "{text}");
    let err = stderr(&o);
    assert!(
        err.contains("first kernel: saxpy verified on simulator (pip install --no-index --target)"),
        "{err}"
    );
    assert!(
        err.contains("tests: plan_runs (at most")
            && err.contains(", through the wheel's C library)"),
        "{err}"
    );
    let log = std::fs::read_to_string(out.join("test-plan_runs.log")).unwrap();
    assert!(log.contains("test result: ok."), "{log}");
    // The short table comes last, one row per test binary and case.
    let summary = &text[text.rfind("run-gpu summary").expect("a summary")..];
    for name in TEST_BINARIES.iter().chain(FUNCTIONS.iter()) {
        let row = summary
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{summary}"));
        assert!(row.contains(" ok"), "{row}");
    }
    assert!(
        summary.contains("plan_runs") && summary.contains(" passed; 0 failed"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("all passed; JSON and logs in {}", out.display())),
        "{summary}"
    );

    let json = |name: &str| -> serde_json::Value {
        let p = out.join(name);
        serde_json::from_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        )
        .unwrap()
    };
    let bench = json("bench-gpu.json");
    assert_eq!(bench["schema"], "port.bench-gpu/1");
    assert_eq!(bench["simulated"], true);
    let results = bench["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, FUNCTIONS);
    for r in results {
        assert!(r.get("error").is_none(), "{r}");
        assert!(r["numba_cuda"]["kernel_s"].is_null(), "simulated: {r}");
        assert_eq!(r["cupy"]["not_run"], "not run: no GPU (simulated)", "{r}");
    }
    let run = json("run-gpu.json");
    assert_eq!(run["schema"], "port.run-gpu/1");
    assert_eq!(run["passed"], true);
    // 3 test binaries, the persistent-kernel comparison, the sweep, 7 cases.
    assert_eq!(run["phases"].as_array().unwrap().len(), 12, "{run}");
    let persist = &run["phases"][3];
    assert_eq!(persist["kind"], "persist", "{run}");
    assert!(
        persist["result"]
            .as_str()
            .unwrap()
            .starts_with("ok: 5 loops, both schedules verified"),
        "{run}"
    );
    let sweep_row = summary
        .lines()
        .find(|l| l.starts_with("sweep ") && l.split_whitespace().nth(1) == Some("programs"))
        .unwrap_or_else(|| panic!("no sweep row:\n{summary}"));
    assert!(
        sweep_row.contains("ok: simulator on simulator"),
        "{sweep_row}"
    );
    // The sweep's JSON: every function port plans in the file, verified.
    let sweep = json("sweep.json");
    assert_eq!(sweep["schema"], "port.gpu-sweep/1");
    assert_eq!(sweep["backend"], "simulator");
    let swept = sweep["results"].as_array().unwrap();
    assert!(!swept.is_empty(), "{sweep}");
    for r in swept {
        assert_eq!(r["status"], "verified", "{r}");
        assert!(r["original_s"].as_f64().unwrap() > 0.0, "{r}");
    }

    // A python3 without pip (a venv made by uv): the wheel is unpacked as
    // pip would, and port runs from it (the tests phase only, after the
    // first migration).
    let nopip = tmp.path().join("nopip");
    std::fs::create_dir(&nopip).unwrap();
    std::fs::write(
        nopip.join("python3"),
        format!(
            "#!/bin/sh\nif [ \"$1\" = -m ] && [ \"$2\" = pip ]; then echo 'No module named pip' >&2; exit 1; fi\nexec {} \"$@\"\n",
            repo().join(".venv-oracle/bin/python3").display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(nopip.join("python3"))
        .status()
        .unwrap();
    let out2 = tmp.path().join("out-nopip");
    let o = clean(
        &format!("{}:{numba_path}", nopip.display()),
        tmp.path(),
        &b.join("run-gpu.sh"),
        &["--simulate", "--phases", "tests", out2.to_str().unwrap()],
    );
    let err = stderr(&o);
    assert!(
        o.status.success(),
        "run-gpu.sh without pip: {}\n{err}",
        stdout(&o)
    );
    assert!(
        err.contains(
            "first kernel: saxpy verified on simulator (unpacked (this python3 has no pip))"
        ),
        "{err}"
    );
    assert!(out2.join("port-site/port/bin/port").is_file());

    // A machine whose python3 lacks numba-cuda is told so in one line.
    let fake = tmp.path().join("fakebin");
    std::fs::create_dir(&fake).unwrap();
    let python = repo().join(".venv-oracle/bin/python3");
    // -S: no site-packages, so no numpy and no numba.
    std::fs::write(
        fake.join("python3"),
        format!("#!/bin/sh\nexec {} -S \"$@\"\n", python.display()),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(fake.join("python3"))
        .status()
        .unwrap();
    let run_gpu = b.join("run-gpu.sh");
    let o = clean(
        &format!("{}:/usr/bin:/bin", fake.display()),
        tmp.path(),
        &run_gpu,
        &["--simulate", out.to_str().unwrap()],
    );
    one_line_exit_2(&o, "python3 lacks numpy, numba, numba-cuda (pip install");

    // Bad input: one line, before anything runs.
    let o = clean(
        &numba_path,
        tmp.path(),
        &run_gpu,
        &["--simulate", "--only", "nope", out.to_str().unwrap()],
    );
    one_line_exit_2(
        &o,
        "--only nope: not a benchmark case (cases: saxpy, vector_add,",
    );
    let o = clean(&numba_path, tmp.path(), &run_gpu, &["--simulate"]);
    one_line_exit_2(&o, "usage: run-gpu.sh");

    // Without --simulate, a machine with no NVIDIA driver gets one line.
    if !Path::new("/dev/nvidiactl").exists() {
        let o = clean(&numba_path, tmp.path(), &run_gpu, &[out.to_str().unwrap()]);
        one_line_exit_2(&o, "no NVIDIA driver here (/dev/nvidiactl is missing)");
    }
}

#[test]
fn without_an_archive_or_with_bad_arguments_it_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new("bash")
        .arg(repo().join("scripts/run-gpu.sh"))
        .args(["--bundle", "/nonexistent/port-gpu.tar.xz", "--simulate"])
        .arg(tmp.path())
        .output()
        .unwrap();
    one_line_exit_2(
        &o,
        "no bundle at /nonexistent/port-gpu.tar.xz: build it with 'make gpu-bundle'",
    );

    let o = Command::new("bash")
        .arg(repo().join("scripts/gpu-bundle.sh"))
        .args(["--wheel", "port.whl"])
        .output()
        .unwrap();
    one_line_exit_2(
        &o,
        "gpu-bundle: --wheel needs the test binaries too (--test BIN) (usage:",
    );
}
