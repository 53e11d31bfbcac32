//! Which frames belong to the app, and which function of the app they are in.
//!
//! The profiler only sees file names, line numbers and code-object names; the
//! analyzer knows the app's functions and their line ranges. [`FrameResolver`]
//! is the seam: the analyzer implements it, [`AppDirResolver`] is the fallback
//! that needs nothing but the app's directory.

use std::path::{Component, Path, PathBuf};

/// Maps sampled frames onto the app's functions.
pub trait FrameResolver {
    /// The stable key of the app function containing `line` of `file`, or `None`
    /// when the frame is not in app code. `frame_name` is what py-spy reported
    /// for the code object: `co_qualname` on Python 3.11+, else `co_name`.
    fn function_at(&self, file: &Path, line: u32, frame_name: &str) -> Option<String>;

    /// Whether `file` is one of the app's own source files (not a library,
    /// not the standard library, not a virtual environment).
    fn is_app_file(&self, file: &Path) -> bool;
}

/// App files are the Python files under the app's directory, except those in
/// a virtual environment or `site-packages`; a frame's key is its frame name.
#[derive(Debug, Clone)]
pub struct AppDirResolver {
    root: PathBuf,
}

impl AppDirResolver {
    /// `root` is the app's directory (for `port analyze src/app.py`, `src/`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = root.canonicalize().unwrap_or(root);
        AppDirResolver { root }
    }

    /// The resolver for an app script: rooted at the script's directory.
    pub fn for_app(app: &Path) -> Self {
        let app = app.canonicalize().unwrap_or_else(|_| app.to_path_buf());
        let dir = app.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::new(dir)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl FrameResolver for AppDirResolver {
    fn function_at(&self, file: &Path, _line: u32, frame_name: &str) -> Option<String> {
        self.is_app_file(file).then(|| frame_name.to_string())
    }

    fn is_app_file(&self, file: &Path) -> bool {
        // `<frozen runpy>`, `<string>`, `<stdin>`: never app files.
        if file.as_os_str().to_string_lossy().starts_with('<') {
            return false;
        }
        let absolute = if file.is_absolute() {
            file.to_path_buf()
        } else {
            self.root.join(file)
        };
        let Ok(rest) = absolute.strip_prefix(&self.root) else {
            return false;
        };
        !rest.components().any(|c| match c {
            Component::Normal(part) => {
                let part = part.to_string_lossy();
                part == "site-packages"
                    || part == "dist-packages"
                    || part == "__pypackages__"
                    || part == ".venv"
                    || part == "venv"
                    || part == ".tox"
                    || part == ".nox"
            }
            Component::ParentDir => true,
            _ => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_files_are_under_the_root_and_outside_environments() {
        let r = AppDirResolver {
            root: PathBuf::from("/home/u/proj"),
        };
        assert!(r.is_app_file(Path::new("/home/u/proj/app.py")));
        assert!(r.is_app_file(Path::new("/home/u/proj/pkg/mod.py")));
        assert!(r.is_app_file(Path::new("pkg/mod.py")));
        assert!(!r.is_app_file(Path::new("/usr/lib/python3.11/runpy.py")));
        assert!(!r.is_app_file(Path::new(
            "/home/u/proj/.venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py"
        )));
        assert!(!r.is_app_file(Path::new("/home/u/proj/venv/lib/python3.11/x.py")));
        assert!(!r.is_app_file(Path::new("<frozen runpy>")));
        assert!(!r.is_app_file(Path::new("/home/u/proj/../other/x.py")));
        assert!(!r.is_app_file(Path::new("/home/u/project2/app.py")));
    }

    #[test]
    fn the_key_is_the_frame_name_for_app_frames_only() {
        let r = AppDirResolver {
            root: PathBuf::from("/p"),
        };
        assert_eq!(
            r.function_at(Path::new("/p/a.py"), 3, "Body.step")
                .as_deref(),
            Some("Body.step")
        );
        assert_eq!(r.function_at(Path::new("/q/a.py"), 3, "f"), None);
    }
}
