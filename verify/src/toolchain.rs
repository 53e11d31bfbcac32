//! The CUDA pieces port links against, found through the Python that runs
//! the original: the user's NumPy may come from a virtual environment, conda,
//! pyenv or the system, and only that interpreter knows where its packages
//! live. libdevice ships in PyPI's `nvidia-cuda-nvcc-cu12` package
//! (`site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc`).
//!
//! Order: `$PORT_LIBDEVICE`; then every package folder of that Python
//! (`site.getsitepackages()`, the user site, `sys.path`); then codegen's own
//! lookups (`$CUDA_HOME`, `$VIRTUAL_ENV`, `.venv` folders, `/usr/local/cuda`,
//! see [`port_codegen::ptx::libdevice_candidates`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The PyPI package that carries libdevice (and ptxas).
pub const NVCC_PACKAGE: &str = "nvidia-cuda-nvcc-cu12";

/// Where libdevice sits inside a package folder.
const LIBDEVICE_IN_SITE: &str = "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc";

/// Prints the interpreter's own path and its package folders as JSON.
const ASK: &str = "import json, site, sys
d = []
try:
    d += site.getsitepackages()
except Exception:
    pass
try:
    d.append(site.getusersitepackages())
except Exception:
    pass
d += [p for p in sys.path if p]
print(json.dumps({'executable': sys.executable, 'dirs': d}))";

/// What a Python said about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PythonSite {
    /// `sys.executable` (the real interpreter behind `python3` on PATH, a
    /// shim or a wrapper).
    pub executable: Option<PathBuf>,
    /// Its package folders, in the order Python searches them.
    pub dirs: Vec<PathBuf>,
}

/// Asks `python` for its executable and package folders. A Python that does
/// not start or answers oddly yields an empty answer, never an error: the
/// other lookups still run.
pub fn python_site(python: &Path) -> PythonSite {
    let Ok(o) = port_reaper::output(
        Command::new(python)
            .args(["-c", ASK])
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    ) else {
        return PythonSite::default();
    };
    if !o.status.success() {
        return PythonSite::default();
    }
    parse_site(&String::from_utf8_lossy(&o.stdout))
}

fn parse_site(text: &str) -> PythonSite {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text.trim()) else {
        return PythonSite::default();
    };
    PythonSite {
        executable: v["executable"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
        dirs: v["dirs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d.as_str().map(PathBuf::from))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// libdevice for kernels whose original runs under `python`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Libdevice {
    Found(PathBuf),
    /// Nowhere: the one line to show, naming the package and the Python to
    /// install it into.
    Missing(String),
}

impl Libdevice {
    pub fn path(&self) -> Option<PathBuf> {
        match self {
            Libdevice::Found(p) => Some(p.clone()),
            Libdevice::Missing(_) => None,
        }
    }
}

/// Finds libdevice as the module doc says.
pub fn libdevice_for(python: &Path) -> Libdevice {
    if let Some(p) = std::env::var_os("PORT_LIBDEVICE") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Libdevice::Found(p)
        } else {
            Libdevice::Missing(format!(
                "libdevice not found: PORT_LIBDEVICE is {}, which is not a file",
                p.display()
            ))
        };
    }
    let site = python_site(python);
    locate(&site, python, port_codegen::ptx::libdevice_candidates())
}

fn locate(site: &PythonSite, python: &Path, fallbacks: Vec<PathBuf>) -> Libdevice {
    if let Some(p) = site
        .dirs
        .iter()
        .map(|d| d.join(LIBDEVICE_IN_SITE))
        .find(|p| p.is_file())
    {
        return Libdevice::Found(p);
    }
    if let Some(p) = fallbacks.into_iter().find(|p| p.is_file()) {
        return Libdevice::Found(p);
    }
    let who = site.executable.as_deref().unwrap_or(python);
    Libdevice::Missing(format!(
        "libdevice (libdevice.10.bc, needed for math functions) not found in the packages of {py} \
         nor beside port, in CUDA_HOME, .venv or /usr/local/cuda: install it into that Python with \
         `{py} -m pip install {NVCC_PACKAGE}` (or set PORT_LIBDEVICE to the file)",
        py = who.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_of_python_is_parsed_and_garbage_is_empty() {
        let s = parse_site(
            r#"{"executable": "/opt/conda/bin/python3", "dirs": ["/opt/conda/lib/python3.12/site-packages", "/root/.local/lib"]}"#,
        );
        assert_eq!(
            s.executable.as_deref(),
            Some(Path::new("/opt/conda/bin/python3"))
        );
        assert_eq!(s.dirs.len(), 2);
        assert_eq!(parse_site("Traceback ..."), PythonSite::default());
    }

    #[test]
    fn libdevice_is_found_in_a_package_folder_of_that_python() {
        let t = tempfile::tempdir().unwrap();
        let site_dir = t.path().join("lib/python3.12/site-packages");
        let file = site_dir.join(LIBDEVICE_IN_SITE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"BC").unwrap();
        let site = PythonSite {
            executable: Some("/opt/conda/bin/python3".into()),
            dirs: vec![t.path().join("elsewhere"), site_dir],
        };
        assert_eq!(
            locate(&site, Path::new("python3"), vec![]),
            Libdevice::Found(file)
        );
    }

    #[test]
    fn nowhere_is_one_line_naming_the_package_and_the_python() {
        let site = PythonSite {
            executable: Some("/opt/conda/bin/python3".into()),
            dirs: vec!["/no/such/site-packages".into()],
        };
        let Libdevice::Missing(m) = locate(
            &site,
            Path::new("python3"),
            vec!["/no/such/libdevice.10.bc".into()],
        ) else {
            panic!("found")
        };
        assert!(!m.contains('\n'));
        assert!(
            m.contains("`/opt/conda/bin/python3 -m pip install nvidia-cuda-nvcc-cu12`"),
            "{m}"
        );
    }
}
