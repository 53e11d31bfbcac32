//! What to run and how to sample it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::interrupt::StopSignal;

/// Default total size of saved capture inputs and outputs: 256 MiB.
pub const DEFAULT_CAPTURE_CAP_BYTES: u64 = 256 * 1024 * 1024;

/// Default number of hottest functions whose calls are captured.
pub const DEFAULT_CAPTURE_FUNCTIONS: usize = 8;

/// Where the app's standard output goes during the sampled run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AppOutput {
    /// The user's own stdout (the app prints as it would alone).
    #[default]
    Inherit,
    /// port's stderr: port's stdout then carries nothing but its own output
    /// (`--json`).
    Stderr,
    /// A file, created or truncated (`--app-output FILE`).
    File(PathBuf),
}

/// How to run and sample the app.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// The interpreter; see [`resolve_python`].
    pub python: PathBuf,
    /// The script to run.
    pub app: PathBuf,
    /// Arguments after `--`.
    pub args: Vec<String>,
    /// Where the app's stdout goes.
    pub app_output: AppOutput,
    /// Samples per second per process (1..=10000).
    pub rate_hz: u64,
    /// Stop sampling (and the app) after this long.
    pub duration: Option<Duration>,
    /// Count samples of idle threads (waiting on a lock, I/O or sleep).
    pub idle: bool,
    /// Also sample child processes (multiprocessing, `subprocess` of Python).
    pub subprocesses: bool,
    /// Capture argument types and inputs in the sampled run, through a hook
    /// the app is started with (see the crate docs).
    pub capture: bool,
    /// Where capture files go (`.port/captures`).
    pub capture_dir: PathBuf,
    /// Bound on the bytes of all `.npz` files written by one run's capture.
    pub capture_cap_bytes: u64,
    /// How many of the hottest app functions keep their capture.
    pub capture_functions: usize,
    /// A file the capture reads, once it exists, for which inputs are worth
    /// saving (`port analyze` writes it from its static pass while the app
    /// runs; see `capture_helper.py`). `None`, or no file yet: every input.
    pub capture_hints: Option<PathBuf>,
    /// Stops sampling early. `None`: Ctrl-C does, through a process-wide
    /// handler installed on first use ([`StopSignal::ctrl_c`]); outside a
    /// profile, Ctrl-C still ends the process as usual.
    pub stop: Option<StopSignal>,
}

impl ProfileOptions {
    /// Defaults from the issue: 100 Hz, no time limit, idle threads excluded,
    /// capture on into `.port/captures` with a 256 MiB cap.
    pub fn new(python: impl Into<PathBuf>, app: impl Into<PathBuf>) -> Self {
        ProfileOptions {
            python: python.into(),
            app: app.into(),
            args: Vec::new(),
            app_output: AppOutput::Inherit,
            rate_hz: 100,
            duration: None,
            idle: false,
            subprocesses: false,
            capture: true,
            capture_dir: PathBuf::from(".port/captures"),
            capture_cap_bytes: DEFAULT_CAPTURE_CAP_BYTES,
            capture_functions: DEFAULT_CAPTURE_FUNCTIONS,
            capture_hints: None,
            stop: None,
        }
    }
}

/// `--python PATH` if given, else `$VIRTUAL_ENV/bin/python`, else `python3`
/// (looked up on `PATH` when run).
pub fn resolve_python(explicit: Option<PathBuf>) -> PathBuf {
    resolve_python_from(explicit, std::env::var_os("VIRTUAL_ENV").map(PathBuf::from))
}

fn resolve_python_from(explicit: Option<PathBuf>, virtual_env: Option<PathBuf>) -> PathBuf {
    if let Some(p) = explicit {
        return p;
    }
    if let Some(venv) = virtual_env.filter(|v| !v.as_os_str().is_empty()) {
        let candidate = venv.join("bin").join("python");
        if candidate.exists() {
            return candidate;
        }
    }
    PathBuf::from("python3")
}

/// A path made absolute against the current directory, without resolving links
/// (so `.venv/bin/python` keeps pointing into the venv).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_python_wins() {
        let venv = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(venv.path().join("bin")).unwrap();
        std::fs::write(venv.path().join("bin/python"), "").unwrap();
        assert_eq!(
            resolve_python_from(Some("/opt/py/bin/python".into()), Some(venv.path().into())),
            PathBuf::from("/opt/py/bin/python")
        );
    }

    #[test]
    fn virtual_env_python_is_used_when_it_exists() {
        let venv = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(venv.path().join("bin")).unwrap();
        std::fs::write(venv.path().join("bin/python"), "").unwrap();
        assert_eq!(
            resolve_python_from(None, Some(venv.path().into())),
            venv.path().join("bin/python")
        );
    }

    #[test]
    fn python3_is_the_fallback() {
        assert_eq!(resolve_python_from(None, None), PathBuf::from("python3"));
        assert_eq!(
            resolve_python_from(None, Some("/no/such/venv".into())),
            PathBuf::from("python3")
        );
        assert_eq!(
            resolve_python_from(None, Some(PathBuf::new())),
            PathBuf::from("python3")
        );
    }
}
