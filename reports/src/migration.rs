//! What `port migrate` and `port verify` leave in `.port/migrations/`: one
//! `<function>.json` per migrated function. Reports only read these files.

use serde::{Deserialize, Serialize};

/// Version tag of `.port/migrations/*.json`.
pub const MIGRATION_SCHEMA: &str = "port.migration/1";

/// Where a migration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MigrationStatus {
    /// Kernels were generated and their results match the original's.
    Verified,
    /// port declined to migrate the function (`reasons` says why).
    Refused,
    /// Kernels ran, but their results differ from the original's.
    Mismatch,
    /// Generating, compiling or running the kernels failed.
    Failed,
}

impl MigrationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MigrationStatus::Verified => "verified",
            MigrationStatus::Refused => "refused",
            MigrationStatus::Mismatch => "mismatch",
            MigrationStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for MigrationStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    pub name: String,
    /// Path of the PTX file, relative to `.port/`.
    pub ptx: String,
}

/// The comparison of the kernels' results with the original function's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// `"gpu"` (cudarc on a real device) or `"simulator"` (the host JIT).
    pub backend: String,
    /// `"captured"` (real inputs from the profiled run) or `"generated"`.
    pub inputs: String,
    pub passed: bool,
    pub max_abs_err: Option<f64>,
    pub max_rel_err: Option<f64>,
}

/// Medians of repeated runs, in seconds; compilation is never timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub compile_s: f64,
    pub kernel_s: f64,
    pub end_to_end_s: f64,
    pub cpython_s: f64,
    pub speedup_kernel: f64,
    pub speedup_end_to_end: f64,
}

/// The whole-program speedup projected from the hotspot's share of sampled
/// time (Amdahl's law). Every field is optional: the projection says what it
/// could work out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// The function's share of sampled time, in percent.
    #[serde(default)]
    pub share_pct: Option<f64>,
    /// Projected speedup of the whole program.
    #[serde(default)]
    pub whole_program_speedup: Option<f64>,
    /// Why offloading does or does not pay (transfers, launch overhead).
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    pub compute_capability: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Migration {
    pub schema: String,
    /// The migrated function, as `port migrate --function` named it
    /// (`module.qualname`, a qualname, or a bare name).
    pub function: String,
    pub status: MigrationStatus,
    #[serde(default)]
    pub reasons: Vec<Reason>,
    #[serde(default)]
    pub kernels: Vec<Kernel>,
    /// Path of the patch, relative to `.port/`.
    #[serde(default)]
    pub patch: Option<String>,
    #[serde(default)]
    pub verification: Option<Verification>,
    #[serde(default)]
    pub timing: Option<Timing>,
    #[serde(default)]
    pub projection: Option<Projection>,
    #[serde(default)]
    pub device: Option<Device>,
}

/// Why a migration was refused or failed: `port migrate` writes the line
/// with the message; a plain text is read too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reason {
    Located {
        #[serde(default)]
        line: Option<u32>,
        message: String,
    },
    Text(String),
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Located {
                line: Some(line),
                message,
            } => write!(f, "line {line}: {message}"),
            Reason::Located { message, .. } | Reason::Text(message) => f.write_str(message),
        }
    }
}

impl Migration {
    /// The reasons as one line, `; `-separated.
    pub fn reasons_line(&self) -> String {
        self.reasons
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Verified, and the verification it rests on passed.
    pub fn is_verified(&self) -> bool {
        self.status == MigrationStatus::Verified
            && self.verification.as_ref().is_some_and(|v| v.passed)
    }
}
