//! `.port/`: the state port keeps in the working directory between
//! commands. Every file is written atomically (a temporary file renamed into
//! place), so an interrupted run never leaves half a file behind.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub const STATE_DIR: &str = ".port";

pub fn dir() -> PathBuf {
    PathBuf::from(STATE_DIR)
}

/// Write `bytes` to `path` atomically, creating parent folders.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}
