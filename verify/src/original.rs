//! The original function under CPython: a small helper script
//! (`original_helper.py`, embedded) imports the user's module by path —
//! without running its `__main__` block — calls the function on inputs
//! saved as `.npy`, and saves the arrays it was given and what it returned.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::VerifyError;
use crate::npy::{self, NdArray};

/// The helper script.
pub const HELPER: &str = include_str!("original_helper.py");

/// What the original did.
#[derive(Clone, Debug)]
pub struct OriginalRun {
    /// Each array argument after the call (`None` for scalars).
    pub args: Vec<Option<NdArray>>,
    /// What it returned (one entry per tuple item), `None` for `None`.
    pub returns: Option<Vec<NdArray>>,
    /// Wall time of the call.
    pub seconds: f64,
    /// Wall times of the timed calls after it (fresh inputs each).
    pub times: Vec<f64>,
    /// How it was called: [`Call::Whole`] as the program calls it, or
    /// through `np.vectorize`.
    pub via: Via,
    /// How many times the user's function ran in one run (1 when called
    /// whole; one per element through `np.vectorize`).
    pub calls: Option<u64>,
    /// Why it went through `np.vectorize`, when it did.
    pub why_vectorized: Option<String>,
    /// For a run in extended precision ([`run_original_extended`]): what
    /// came back wider than float64.
    pub extended: Option<Extended>,
}

/// What an extended-precision run of the original computed in extended
/// precision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extended {
    /// `np.longdouble`'s significand (64 on x86-64's 80-bit format).
    pub significand_bits: u32,
    /// Per argument: whether the array came back as `np.longdouble` /
    /// `np.clongdouble` (`None` for scalars).
    pub wider_args: Vec<Option<bool>>,
    /// Per return value: the same.
    pub wider_returns: Vec<bool>,
}

/// How the helper calls the original.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Once per run, on the arguments as they are.
    Whole,
    /// A function applied element by element that was given arrays: once
    /// per run on the whole arrays (as the program calls it), through
    /// `np.vectorize` only when that raises.
    Elementwise,
    /// A function of scalars, given arrays of its scalar arguments:
    /// `np.vectorize`, one call per element.
    Scalars,
}

impl Call {
    fn mode(self) -> &'static str {
        match self {
            Call::Whole => "call",
            Call::Elementwise => "elementwise",
            Call::Scalars => "ufunc",
        }
    }
}

pub use port_reports::migration::Via;

/// One member of an `.npz` of inputs, from its `.npy` header.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct NpzMember {
    /// Empty for a 0-d value (a number).
    pub shape: Vec<usize>,
    /// NumPy's name of the dtype (`float64`).
    pub dtype: String,
    /// Stored in Fortran order.
    #[serde(default)]
    pub fortran: bool,
}

/// The members of an `.npz` of inputs (read from the `.npy` headers,
/// without loading the data), by name.
pub fn npz_members(
    python: &Path,
    npz: &Path,
) -> Result<std::collections::HashMap<String, NpzMember>, VerifyError> {
    let work = port_reaper::temp_dir()
        .map_err(|e| VerifyError::Io("a temporary folder".into(), e.to_string()))?;
    let helper = helper_path(work.path())?;
    let o = python_cmd(
        python,
        &[helper.as_os_str(), "headers".as_ref(), npz.as_os_str()],
    )?;
    if !o.status.success() {
        return Err(VerifyError::BadData(format!(
            "inputs {}: {}",
            npz.display(),
            last_line(&o.stderr)
        )));
    }
    serde_json::from_slice(&o.stdout)
        .map_err(|e| VerifyError::BadData(format!("inputs {}: {e}", npz.display())))
}

/// The shapes of the arrays among `names` in an `.npz` of inputs, in
/// `names`' order; scalars and missing names are left out.
pub fn npz_shapes(
    python: &Path,
    npz: &Path,
    names: &[String],
) -> Result<Vec<(String, Vec<usize>)>, VerifyError> {
    let all = npz_members(python, npz)?;
    Ok(names
        .iter()
        .filter_map(|n| {
            all.get(n)
                .filter(|m| !m.shape.is_empty())
                .map(|m| (n.clone(), m.shape.clone()))
        })
        .collect())
}

fn helper_path(dir: &Path) -> Result<PathBuf, VerifyError> {
    let p = dir.join("original_helper.py");
    std::fs::write(&p, HELPER)
        .map_err(|e| VerifyError::Io(p.display().to_string(), e.to_string()))?;
    Ok(p)
}

fn python_cmd(
    python: &Path,
    args: &[&std::ffi::OsStr],
) -> Result<std::process::Output, VerifyError> {
    port_reaper::output(
        Command::new(python)
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    )
    .map_err(|e| VerifyError::NoPython {
        python: python.display().to_string(),
        message: e.to_string(),
    })
}

/// How long importing the user's module may take before the limit on the
/// call starts: a module that compiles Numba functions with signatures
/// (`@nb.jit("float64[:](float64[:])")`) compiles them at import, tens of
/// seconds that no input size changes.
const IMPORT_ALLOWANCE: Duration = Duration::from_secs(180);

/// [`python_cmd`] stopped after `limit`: stdout and stderr go to files in
/// `work` (a child writing more than a pipe holds cannot block), and a run
/// past the limit is killed, a [`VerifyError::TimedOut`]. With `imported`,
/// the limit counts from when that file appears (the helper has imported
/// the module and read the inputs), and the import gets
/// [`IMPORT_ALLOWANCE`]: past it, a [`VerifyError::OriginalFailed`].
fn python_cmd_limited(
    python: &Path,
    args: &[&std::ffi::OsStr],
    work: &Path,
    limit: Duration,
    imported: Option<&Path>,
) -> Result<std::process::Output, VerifyError> {
    let file = |name: &str| {
        let p = work.join(name);
        std::fs::File::create(&p)
            .map(|f| (p.clone(), f))
            .map_err(|e| VerifyError::Io(p.display().to_string(), e.to_string()))
    };
    let ((out_path, out), (err_path, err)) = (file("helper.stdout")?, file("helper.stderr")?);
    let no_python = |e: std::io::Error| VerifyError::NoPython {
        python: python.display().to_string(),
        message: e.to_string(),
    };
    let mut child = port_reaper::own_group(
        Command::new(python)
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err),
    )
    .spawn()
    .map_err(no_python)?;
    let _registered = port_reaper::child(child.id());
    let mut start = Instant::now();
    // The marker to wait for while the import runs; `None` once the call's
    // limit counts.
    let mut importing = imported;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(no_python)? {
            break status;
        }
        let stop = match importing {
            Some(marker) if marker.exists() => {
                importing = None;
                start = Instant::now();
                None
            }
            Some(_) if start.elapsed() > IMPORT_ALLOWANCE => {
                Some(VerifyError::OriginalImport(format!(
                    "importing the module ran past {:.0} s",
                    IMPORT_ALLOWANCE.as_secs_f64()
                )))
            }
            None if start.elapsed() > limit => Some(VerifyError::TimedOut(format!(
                "stopped after {:.0} s",
                limit.as_secs_f64()
            ))),
            _ => None,
        };
        if let Some(e) = stop {
            // Only this child, which this function started.
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    Ok(std::process::Output {
        status,
        stdout: read(&out_path),
        stderr: read(&err_path),
    })
}

fn last_line(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    s.lines().last().unwrap_or("").trim().to_string()
}

/// Appends what the original printed to `app_output`, when given.
fn save_app_output(app_output: Option<&Path>, stdout: &[u8]) -> Result<(), VerifyError> {
    use std::io::Write;
    let Some(path) = app_output else {
        return Ok(());
    };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(stdout))
        .map_err(|e| VerifyError::Io(path.display().to_string(), e.to_string()))
}

/// Runs `qualname` of `file` on the inputs in `input_dir`
/// (`manifest.json`, see the helper), called as `call` says;
/// `repeats` more calls are timed. What the original prints on stdout is
/// appended to `app_output` (else dropped): it never reaches port's stdout.
#[allow(clippy::too_many_arguments)]
pub fn run_original(
    python: &Path,
    file: &Path,
    qualname: &str,
    input_dir: &Path,
    work: &Path,
    call: Call,
    timed: Timed,
    app_output: Option<&Path>,
) -> Result<OriginalRun, VerifyError> {
    let target = Target {
        python,
        file,
        qualname,
        call,
    };
    run_helper(&target, input_dir, work, timed, app_output, false)
}

/// How the original is timed after its warm-up call: up to `repeats` calls,
/// each on fresh copies of the inputs, ending early once they have taken
/// `budget_s` seconds and at least 3 have run. With a `limit`, the whole
/// run is stopped past it ([`VerifyError::TimedOut`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timed {
    pub repeats: usize,
    pub budget_s: f64,
    pub limit: Option<Duration>,
}

impl Timed {
    /// Not timed: the warm-up call alone.
    pub const NOT: Timed = Timed {
        repeats: 0,
        budget_s: 0.0,
        limit: None,
    };
}

/// [`run_original`] once more, untimed, in extended precision: the
/// helper widens the float64 and complex128 inputs to `np.longdouble` /
/// `np.clongdouble` and narrows what comes back, so the results read as
/// float64 and [`OriginalRun::extended`] says which were computed wider.
/// What it prints is dropped. Where the original refuses the wider dtypes
/// (`np.linalg` does), or `np.longdouble` is float64 on this machine, the
/// error is [`VerifyError::OriginalFailed`] with the reason; a run past
/// `limit` (`np.longdouble` has no BLAS) is stopped:
/// [`VerifyError::TimedOut`].
pub fn run_original_extended(
    python: &Path,
    file: &Path,
    qualname: &str,
    input_dir: &Path,
    work: &Path,
    call: Call,
    limit: Duration,
) -> Result<OriginalRun, VerifyError> {
    let target = Target {
        python,
        file,
        qualname,
        call,
    };
    let timed = Timed {
        limit: Some(limit),
        ..Timed::NOT
    };
    run_helper(&target, input_dir, work, timed, None, true)
}

/// Which function the helper calls, how, and with which Python.
struct Target<'a> {
    python: &'a Path,
    file: &'a Path,
    qualname: &'a str,
    call: Call,
}

fn run_helper(
    target: &Target,
    input_dir: &Path,
    work: &Path,
    timed: Timed,
    app_output: Option<&Path>,
    extended: bool,
) -> Result<OriginalRun, VerifyError> {
    let Target {
        python,
        file,
        qualname,
        call,
    } = *target;
    let helper = helper_path(work)?;
    let out = work.join(if extended { "extended" } else { "original" });
    std::fs::create_dir_all(&out)
        .map_err(|e| VerifyError::Io(out.display().to_string(), e.to_string()))?;
    let mode = call.mode();
    let repeats = timed.repeats.to_string();
    let budget = timed.budget_s.to_string();
    let mut argv: Vec<&std::ffi::OsStr> = vec![
        helper.as_os_str(),
        mode.as_ref(),
        file.as_os_str(),
        qualname.as_ref(),
        input_dir.as_os_str(),
        out.as_os_str(),
        repeats.as_ref(),
        budget.as_ref(),
    ];
    if extended {
        argv.push("extended".as_ref());
    }
    let imported = out.join("imported");
    let _ = std::fs::remove_file(&imported);
    let o = match timed.limit {
        Some(limit) => python_cmd_limited(python, &argv, work, limit, Some(&imported))?,
        None => python_cmd(python, &argv)?,
    };
    save_app_output(app_output, &o.stdout)?;
    if !o.status.success() {
        let msg = last_line(&o.stderr);
        return Err(if o.status.code() == Some(3) {
            VerifyError::OriginalFailed(msg)
        } else if o.status.code() == Some(4) {
            VerifyError::OriginalImport(msg)
        } else {
            VerifyError::NoPython {
                python: python.display().to_string(),
                message: if msg.is_empty() {
                    format!("exited with {}", o.status)
                } else {
                    msg
                },
            }
        });
    }
    let text = std::fs::read_to_string(out.join("result.json"))
        .map_err(|e| VerifyError::Io("result.json".into(), e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| VerifyError::BadData(e.to_string()))?;
    let mut args = Vec::new();
    for a in v["args"].as_array().cloned().unwrap_or_default() {
        args.push(match a.as_str() {
            Some(f) => Some(npy::read(&out.join(f))?),
            None => None,
        });
    }
    let returns = match v["returns"].as_array() {
        None => None,
        Some(items) => {
            let mut r = Vec::new();
            for f in items {
                let f = f
                    .as_str()
                    .ok_or_else(|| VerifyError::BadData("bad result".into()))?;
                r.push(npy::read(&out.join(f))?);
            }
            Some(r)
        }
    };
    Ok(OriginalRun {
        args,
        returns,
        seconds: v["seconds"].as_f64().unwrap_or(0.0),
        times: v["times"]
            .as_array()
            .map(|t| t.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default(),
        via: if v["via"] == "np.vectorize" {
            Via::Vectorize
        } else {
            Via::Call
        },
        calls: v["calls"].as_u64(),
        why_vectorized: v["why_vectorized"].as_str().map(str::to_string),
        extended: v.get("extended").map(|x| Extended {
            significand_bits: x["significand_bits"].as_u64().unwrap_or(0) as u32,
            wider_args: x["wider"]["args"]
                .as_array()
                .map(|a| a.iter().map(serde_json::Value::as_bool).collect())
                .unwrap_or_default(),
            wider_returns: x["wider"]["returns"]
                .as_array()
                .map(|a| a.iter().map(|w| w.as_bool() == Some(true)).collect())
                .unwrap_or_default(),
        }),
    })
}

/// Unpacks a captured `.npz` (the profiler's snapshot) into `.npy` files
/// and a manifest in `out`, arguments in `names` order.
pub fn unpack_capture(
    python: &Path,
    npz: &Path,
    names: &[String],
    work: &Path,
    out: &Path,
) -> Result<(), VerifyError> {
    let helper = helper_path(work)?;
    std::fs::create_dir_all(out)
        .map_err(|e| VerifyError::Io(out.display().to_string(), e.to_string()))?;
    let joined = names.join(",");
    let o = python_cmd(
        python,
        &[
            helper.as_os_str(),
            "npz".as_ref(),
            npz.as_os_str(),
            joined.as_ref(),
            out.as_os_str(),
        ],
    )?;
    if !o.status.success() {
        return Err(VerifyError::BadData(format!(
            "inputs {}: {}",
            npz.display(),
            last_line(&o.stderr)
        )));
    }
    Ok(())
}

/// Writes the inputs in `dir` (a manifest and `.npy` files, as
/// [`crate::inputs::write`] leaves them) to `npz`, named by argument, the
/// form `--inputs` and [`unpack_capture`] read. Atomic: a failed write
/// leaves no partial file at `npz`.
pub fn pack_inputs(python: &Path, dir: &Path, work: &Path, npz: &Path) -> Result<(), VerifyError> {
    let helper = helper_path(work)?;
    let o = python_cmd(
        python,
        &[
            helper.as_os_str(),
            "pack".as_ref(),
            dir.as_os_str(),
            npz.as_os_str(),
        ],
    )?;
    if !o.status.success() {
        return Err(VerifyError::Io(
            npz.display().to_string(),
            last_line(&o.stderr),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, limit: Duration) -> Result<std::process::Output, VerifyError> {
        let work = tempfile::tempdir().unwrap();
        python_cmd_limited(
            Path::new("sh"),
            &["-c".as_ref(), script.as_ref()],
            work.path(),
            limit,
            None,
        )
    }

    #[test]
    fn a_limited_run_gives_its_output() {
        let o = sh("echo out; echo err >&2; exit 3", Duration::from_secs(30)).unwrap();
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(last_line(&o.stderr), "err");
    }

    #[test]
    fn the_limit_counts_from_the_import() {
        let work = tempfile::tempdir().unwrap();
        let marker = work.path().join("imported");
        let run = |script: String| {
            python_cmd_limited(
                Path::new("sh"),
                &["-c".as_ref(), script.as_ref()],
                work.path(),
                Duration::from_millis(500),
                Some(&marker),
            )
        };
        let slow_import = format!("sleep 1; touch {}; echo done", marker.display());
        assert_eq!(run(slow_import).unwrap().stdout, b"done\n");
        std::fs::remove_file(&marker).unwrap();
        let slow_call = format!("touch {}; exec sleep 30", marker.display());
        assert!(matches!(run(slow_call), Err(VerifyError::TimedOut(_))));
    }

    #[test]
    fn a_run_past_its_limit_is_stopped() {
        let t = Instant::now();
        match sh("exec sleep 30", Duration::from_millis(200)) {
            Err(VerifyError::TimedOut(m)) => assert_eq!(m, "stopped after 0 s"),
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}
