//! The capture run: the app runs a second time, its output silenced, under a
//! small Python helper (shipped in the binary) that records argument types and
//! saves one real call's inputs and outputs per hot function.
//!
//! Capturing in a second run keeps the sampled run's timing undistorted. The
//! helper ends the capture run as soon as every target has been captured, and a
//! timeout bounds it otherwise. Apps with side effects (files written, network)
//! perform them twice; `--no-capture` avoids that.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::aggregate::is_anonymous;
use crate::child::{self, Streams};
use crate::error::ProfileError;
use crate::interrupt::StopSignal;
use crate::model::{Capture, FunctionHotspot};
use crate::progress::{Phase, ProgressTick};
use crate::sampler::TERMINATE_GRACE;

/// The helper's source, run with `python -c`.
pub const HELPER_SOURCE: &str = include_str!("capture_helper.py");

/// The words the helper uses when an argument does not fit the size cap.
const CAP_REASON: &str = "would pass the capture cap";

/// The manifest file the helper writes in the capture directory.
pub const MANIFEST: &str = "manifest.json";

/// A function to capture.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// Reported as [`Capture::function`].
    pub key: String,
    pub file: PathBuf,
    /// The sampled frame name (`co_qualname`, or `co_name` before 3.11), which
    /// the helper matches against code objects.
    pub name: String,
}

/// Functions with less self time than this (percent of samples) are not hot
/// enough to capture.
pub const MIN_SELF_PCT: f64 = 1.0;

/// The hottest app functions worth capturing: ranked by self time (which
/// includes the library calls they make), skipping module bodies, lambdas and
/// comprehensions (`<module>`, `<lambda>`, `<listcomp>`), which have no
/// arguments a kernel would take.
pub fn pick_targets(functions: &[FunctionHotspot], limit: usize) -> Vec<Target> {
    functions
        .iter()
        .filter(|f| f.self_pct >= MIN_SELF_PCT && !is_anonymous(&f.name))
        .take(limit)
        .map(|f| Target {
            key: f.key.clone(),
            file: f.file.clone(),
            name: f.name.clone(),
        })
        .collect()
}

pub struct CaptureRequest<'a> {
    pub python: &'a Path,
    /// Absolute path of the app.
    pub app: &'a Path,
    pub args: &'a [String],
    /// Absolute; created if missing; earlier captures in it are replaced.
    pub dir: &'a Path,
    pub cap_bytes: u64,
    pub targets: &'a [Target],
    pub timeout: Duration,
}

/// What the capture run gave.
#[derive(Debug, Default)]
pub struct CaptureOutcome {
    pub captures: Vec<Capture>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Manifest {
    captures: Vec<Capture>,
    missed: Vec<String>,
    warnings: Vec<String>,
}

#[derive(serde::Serialize)]
struct HelperConfig<'a> {
    app: &'a Path,
    args: &'a [String],
    out_dir: &'a Path,
    cap_bytes: u64,
    stop_when_done: bool,
    targets: &'a [Target],
}

/// Runs the app under the capture helper. Problems with the run itself
/// (crash, timeout, no numpy) become warnings: capture is best effort and the
/// profile stands without it.
pub fn run(
    req: &CaptureRequest<'_>,
    stop: &StopSignal,
    progress: &dyn Fn(ProgressTick),
    samples: u64,
) -> Result<CaptureOutcome, ProfileError> {
    let mut outcome = CaptureOutcome::default();
    if req.targets.is_empty() {
        return Ok(outcome);
    }
    prepare_dir(req.dir)?;
    let config = match serde_json::to_string(&HelperConfig {
        app: req.app,
        args: req.args,
        out_dir: req.dir,
        cap_bytes: req.cap_bytes,
        stop_when_done: true,
        targets: req.targets,
    }) {
        Ok(config) => config,
        // Only a path that is not UTF-8 can fail to serialise.
        Err(e) => {
            outcome
                .warnings
                .push(format!("capture skipped: {e} (paths must be UTF-8)"));
            return Ok(outcome);
        }
    };

    let started = Instant::now();
    let mut app = child::spawn(
        req.python,
        &["-c".to_string(), HELPER_SOURCE.to_string()],
        req.app,
        req.args,
        &[("PORT_CAPTURE_CONFIG".to_string(), config)],
        Streams::Silent,
        &crate::options::AppOutput::Inherit,
    )?;
    let mut last_tick = Instant::now();
    let status = loop {
        match app.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if stop.is_stopped() {
            child::terminate_tree(&mut app, TERMINATE_GRACE);
            outcome
                .warnings
                .push("capture interrupted: types and inputs are partial".to_string());
            break None;
        }
        if started.elapsed() >= req.timeout {
            child::terminate_tree(&mut app, TERMINATE_GRACE);
            outcome.warnings.push(format!(
                "capture run stopped after {:.0} s: functions not called by then have no captured inputs",
                req.timeout.as_secs_f64()
            ));
            break None;
        }
        if last_tick.elapsed() >= Duration::from_millis(100) {
            last_tick = Instant::now();
            progress(ProgressTick {
                phase: Phase::Capturing,
                elapsed: started.elapsed(),
                samples,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };

    let manifest_path = req.dir.join(MANIFEST);
    let manifest: Option<Manifest> = std::fs::read_to_string(&manifest_path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let exit = status.map(child::exit_of);
    let Some(manifest) = manifest else {
        let how = exit.map(|e| e.describe()).unwrap_or_default();
        outcome.warnings.push(format!(
            "capture run wrote no manifest ({how}): no argument types or inputs captured"
        ));
        return Ok(outcome);
    };
    if let Some(exit) = exit.filter(|e| !e.success()) {
        outcome.warnings.push(format!(
            "capture run: {}; captures up to that point are kept",
            exit.describe()
        ));
    }
    outcome.warnings.extend(manifest.warnings);
    for key in manifest.missed {
        outcome.warnings.push(format!(
            "{key}: not called in the app's main process during the capture run; no types captured"
        ));
    }
    // Inputs held back by the size cap are worth a line to the user; the
    // other reasons (not an array, a call that raised) stay in the capture.
    for c in &manifest.captures {
        for reason in c.skipped.iter().filter(|r| r.contains(CAP_REASON)) {
            outcome.warnings.push(format!("{}: {reason}", c.function));
        }
    }
    outcome.captures = manifest.captures;
    Ok(outcome)
}

/// Creates `dir` and removes what an earlier capture left in it (the manifest
/// and `.npz` files), so stale inputs are never mistaken for this run's.
fn prepare_dir(dir: &Path) -> Result<(), ProfileError> {
    let write_err = |source| ProfileError::Write {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(write_err)?;
    for entry in std::fs::read_dir(dir).map_err(write_err)?.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == MANIFEST || name.ends_with(".npz") {
            std::fs::remove_file(&path).map_err(|source| ProfileError::Write { path, source })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Out of 100 samples.
    fn hotspot(name: &str, self_samples: u64) -> FunctionHotspot {
        FunctionHotspot {
            key: name.to_string(),
            file: "/app/a.py".into(),
            name: name.to_string(),
            self_samples,
            total_samples: self_samples,
            self_pct: self_samples as f64,
            total_pct: self_samples as f64,
        }
    }

    #[test]
    fn targets_skip_module_bodies_and_cold_functions() {
        let fns = vec![
            hotspot("shade", 60),
            hotspot("<module>", 5),
            hotspot("scan", 20),
            hotspot("<listcomp>", 3),
            hotspot("main.<locals>.<genexpr>", 3),
            hotspot("Body.<locals>.helper", 2),
            hotspot("main", 0),
        ];
        let names: Vec<String> = pick_targets(&fns, 8).into_iter().map(|t| t.name).collect();
        assert_eq!(names, vec!["shade", "scan", "Body.<locals>.helper"]);
        assert_eq!(pick_targets(&fns, 1).len(), 1);
    }

    #[test]
    fn old_captures_are_cleared_but_other_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.inputs.npz"), "x").unwrap();
        std::fs::write(dir.path().join(MANIFEST), "{}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "keep").unwrap();
        prepare_dir(dir.path()).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, vec!["notes.txt"]);
    }

    #[test]
    fn the_manifest_format_reads_into_captures() {
        let text = r#"{"schema":"port-capture/1","python":"/p","bytes_written":8,
            "missed":["g"],"warnings":[],
            "captures":[{"function":"f","file":"/app/a.py","line":3,
              "args":[{"name":"x","kind":{"kind":"ndarray","dtype":"float64","ndim":1,"shape":[4],"c_contiguous":true,"f_contiguous":true}},
                      {"name":"n","kind":{"kind":"scalar","type":"int"}},
                      {"name":"rows","kind":{"kind":"other","type_name":"list"}}],
              "returns":{"kind":"scalar","type":"float"},
              "inputs_npz":"/c/f.inputs.npz","outputs_npz":null,"skipped":["rows: list is not an array"]}]}"#;
        let m: Manifest = serde_json::from_str(text).unwrap();
        assert_eq!(m.missed, vec!["g"]);
        let c = &m.captures[0];
        assert_eq!(c.args.len(), 3);
        assert!(matches!(
            &c.args[0].kind,
            crate::model::ArgKind::Ndarray { dtype, ndim: 1, .. } if dtype == "float64"
        ));
        assert!(matches!(
            &c.args[1].kind,
            crate::model::ArgKind::Scalar { type_name } if type_name == "int"
        ));
    }
}
