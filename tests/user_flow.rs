//! A real user's flow, outside this checkout: NumPy's Python reached only
//! through PATH, inputs whose arrays differ in shape, tables in a pipe.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{fixture, repo, stderr, stdout};

/// A scratch "machine": `bin/` holds `port` (a hard link to the built
/// binary, so nothing near it is this checkout's `.venv`) and, when asked,
/// a `python3` that is really `python` (a wrapper, as a conda or pyenv shim
/// is); `work/` is the user's folder.
struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new(python: Option<&Path>) -> Machine {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(root.path().join("work")).unwrap();
        // Installed as `cargo install` does: both binaries, side by side.
        for (exe, name) in [
            (env!("CARGO_BIN_EXE_port"), "port"),
            (env!("CARGO_BIN_EXE_port-backend"), "port-backend"),
        ] {
            if std::fs::hard_link(exe, bin.join(name)).is_err() {
                std::fs::copy(exe, bin.join(name)).unwrap();
            }
        }
        if let Some(py) = python {
            let wrapper = bin.join("python3");
            std::fs::write(
                &wrapper,
                format!("#!/bin/sh\nexec '{}' \"$@\"\n", py.display()),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Machine { root }
    }

    fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    fn copy(&self, rel: &str) -> String {
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        std::fs::copy(fixture(rel), self.work().join(name)).unwrap();
        name.to_string()
    }

    /// `port ARGS` with PATH = our bin, then the system's; no virtual
    /// environment, no CUDA variables.
    fn port(&self, args: &[&str]) -> Output {
        std::process::Command::new(self.root.path().join("bin/port"))
            .current_dir(self.work())
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.root.path().join("bin").display()
                ),
            )
            .env("NO_COLOR", "1")
            .env_remove("VIRTUAL_ENV")
            .env_remove("PORT_LIBDEVICE")
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH")
            .args(args)
            .output()
            .expect("port runs")
    }
}

fn venv_python() -> PathBuf {
    let py = repo().join(".venv/bin/python");
    assert!(py.exists(), "no .venv: run `make test` first");
    py
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

#[test]
fn math_kernels_find_libdevice_through_the_python_on_path() {
    let m = Machine::new(Some(&venv_python()));
    let f = m.copy("userflow/waves.py");
    let o = m.port(&[
        "migrate",
        "--function",
        "damped_wave",
        &f,
        "--signature",
        "float64[:], float64[:]",
        "--backend",
        "simulator",
        "--json",
    ]);
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{}\n{}", stdout(&o), stderr(&o));
    assert!(o.status.success());
    let ptx =
        std::fs::read_to_string(m.work().join(j["kernels"][0]["ptx"].as_str().unwrap())).unwrap();
    // libdevice was linked: tanh, sin and exp are defined in the PTX,
    // none is left as an external call.
    assert!(ptx.contains(".entry damped_wave_kernel"), "{ptx}");
    assert!(!ptx.contains(".extern .func"), "unresolved libdevice call");

    // `port verify` finds it the same way.
    let o = m.port(&["verify", "--backend", "simulator", "--repeats", "10"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
}

#[test]
fn a_python_without_the_package_is_named_with_what_to_install() {
    // A python3 on PATH whose packages hold no nvidia-cuda-nvcc-cu12.
    let system = ["/usr/bin/python3", "/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("a system python3");
    let m = Machine::new(Some(&system));
    let f = m.copy("userflow/waves.py");
    let o = m.port(&[
        "migrate",
        "--function",
        "damped_wave",
        &f,
        "--signature",
        "float64[:], float64[:]",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "failed");
    let why = j["reasons"][0]["message"].as_str().unwrap().to_string();
    assert!(!why.contains('\n'), "{why}");
    assert!(
        why.contains("-m pip install nvidia-cuda-nvcc-cu12"),
        "{why}"
    );
    // The Python named is the real interpreter behind the python3 on PATH.
    let real = system.canonicalize().unwrap();
    assert!(
        why.contains(&system.display().to_string()) || why.contains(&real.display().to_string()),
        "{why}"
    );
}

/// `port migrate --function F stencils.py --signature SIG --json` in the
/// user's folder, with the project's .venv Python.
fn migrate_stencil(m: &Machine, function: &str, sig: &str, extra: &[&str]) -> Output {
    let f = m.copy("userflow/stencils.py");
    let py = venv_python();
    let mut args = vec![
        "migrate",
        "--function",
        function,
        &f,
        "--signature",
        sig,
        "--backend",
        "simulator",
        "--python",
        py.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    m.port(&args)
}

#[test]
fn stencils_whose_input_is_larger_verify_from_the_signature_alone() {
    let m = Machine::new(None);
    for (function, sig) in [
        ("smooth4", "float64[:], float64[:]"),
        ("hdiff", "float64[:, :], float64[:, :]"),
        ("forward_diff", "float64[:], float64[:], float64[:]"),
    ] {
        let o = migrate_stencil(&m, function, sig, &[]);
        let j = json(&o);
        assert_eq!(j["status"], "verified", "{function}: {}", stdout(&o));
        assert_eq!(j["verification"]["inputs"], "generated");
        assert!(o.status.success());
    }
}

#[test]
fn inputs_the_generator_cannot_shape_say_so_and_inputs_npz_is_the_way_out() {
    let m = Machine::new(None);
    // decimate reads x[2 * i + 1] over out's range: the index check the
    // wrapper makes at entry, 2 * len(out) <= len(x), is what shapes x.
    let o = migrate_stencil(&m, "decimate", "float64[:], float64[:]", &[]);
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{}", stdout(&o));
    assert_eq!(j["verification"]["inputs"], "generated");
    // squares reads x[i * i]: no rule bounds it, and the original raises
    // on every generated shape.
    let o = migrate_stencil(&m, "squares", "float64[:], float64[:]", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"], "failed");
    let why = j["reasons"][0]["message"].as_str().unwrap();
    assert!(!why.contains('\n'), "{why}");
    for needle in [
        "raised on generated inputs",
        "IndexError",
        "--inputs FILE.npz",
        "port analyze",
    ] {
        assert!(why.contains(needle), "`{needle}` not in: {why}");
    }

    // Real inputs, saved as a user would with NumPy.
    let made = std::process::Command::new(venv_python())
        .current_dir(m.work())
        .args([
            "-c",
            "import numpy as np; np.savez('real.npz', x=np.linspace(0, 1, 4000), out=np.zeros(60))",
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let o = migrate_stencil(
        &m,
        "squares",
        "float64[:], float64[:]",
        &["--inputs", "real.npz"],
    );
    let j = json(&o);
    assert_eq!(j["status"], "verified", "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(j["verification"]["inputs"], "given");
}

/// `port analyze --static FILE` into a pipe, with `$COLUMNS` as given.
fn analyze_piped(file: &Path, columns: Option<&str>) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_port"));
    cmd.current_dir(tmp.path())
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .args(["analyze", "--static", file.to_str().unwrap()]);
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// The widest line of the table (its lines start with a border).
fn widest(text: &str) -> usize {
    let table: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(['│', '┌', '└', '╞', '├']))
        .collect();
    assert!(table.len() > 3, "no table in:\n{text}");
    table.iter().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn piped_tables_fit_100_columns_or_columns_and_counts_are_pluralized() {
    // seeds.py's reasons run to well over 100 characters.
    let seeds = fixture("classify/seeds.py");
    let out = analyze_piped(&seeds, None);
    assert!(widest(&out) <= 100, "{} wide:\n{out}", widest(&out));
    // Wrapped, not cut: a long reason's words are all still there.
    let flat: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("PORT101"), "{out}");
    assert!(
        out.contains("in 1 file\n") || out.trim_end().ends_with("in 1 file"),
        "{out}"
    );
    assert!(!out.contains("1 files"), "{out}");

    let narrow = analyze_piped(&seeds, Some("72"));
    assert!(widest(&narrow) <= 72, "{} wide:\n{narrow}", widest(&narrow));

    // A folder of several files keeps the plural.
    let many = analyze_piped(&fixture("multimodule"), None);
    let last = many.trim_end().lines().last().unwrap();
    assert!(last.ends_with(" files"), "{last}");
}
