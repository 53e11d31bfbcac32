//! Source text for line hotspots.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Reads each file once and hands out its lines.
#[derive(Default)]
pub struct SourceCache {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceCache {
    /// Line `line` (1-based) of `file`, trimmed; empty when unreadable.
    pub fn line(&mut self, file: &Path, line: u32) -> String {
        let lines = self.files.entry(file.to_path_buf()).or_insert_with(|| {
            // Python source may not be UTF-8 (PEP 263): read lossily.
            std::fs::read(file).ok().map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
        });
        lines
            .as_ref()
            .and_then(|l| l.get((line as usize).checked_sub(1)?))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_one_based_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "def f(x):\n    return x * 2\n").unwrap();
        let mut c = SourceCache::default();
        assert_eq!(c.line(&f, 2), "return x * 2");
        assert_eq!(c.line(&f, 0), "");
        assert_eq!(c.line(&f, 9), "");
        assert_eq!(c.line(&dir.path().join("missing.py"), 1), "");
    }
}
