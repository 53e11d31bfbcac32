//! What `port migrate` and `port verify` leave in `.port/migrations/`: one
//! `<function>.json` per migrated function. Reports only read these files;
//! the figures in them (`Timing`, `Repeats`, `CpythonCall`, `Projection`,
//! `Bandwidth`, `ExactCheck`, `HostCall`) are defined here once, and
//! `port-verify` writes these same types. Every field is optional on read,
//! so older records still load.

use serde::{Deserialize, Deserializer, Serialize};

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
    /// Kernels ran and differ from the original, whose own results are not
    /// reproducible in their precision on these inputs (they move past
    /// 1e-4 against an extended-precision run): port could not tell a
    /// right kernel from a wrong one. Not verified, and not counted as
    /// migrated.
    Inconclusive,
    /// Generating, compiling or running the kernels failed.
    Failed,
}

impl MigrationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MigrationStatus::Verified => "verified",
            MigrationStatus::Refused => "refused",
            MigrationStatus::Mismatch => "mismatch",
            MigrationStatus::Inconclusive => "inconclusive",
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

/// The comparison of the kernels' results with the original function's:
/// what the reports show of it (the record holds more, `compared`,
/// `in_place`, `same_array` among them). Every field after `passed` is
/// optional on read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// `"gpu"` (cudarc on a real device) or `"simulator"` (the host JIT).
    pub backend: String,
    /// `"captured"` (real inputs from the profiled run), `"given"` or
    /// `"generated"`.
    pub inputs: String,
    pub passed: bool,
    /// Null when infinite: the errors are finite or infinite (another
    /// shape, or a value infinite in one result only), never NaN.
    pub max_abs_err: Option<f64>,
    pub max_rel_err: Option<f64>,
    /// The tolerance the results were compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtol: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atol: Option<f64>,
    /// The first difference, with the kernels that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
    /// float32 results that differed elementwise, judged against a float64
    /// run of the original.
    #[serde(
        default,
        deserialize_with = "float32_check",
        skip_serializing_if = "Option::is_none"
    )]
    pub float32_exact: Option<ExactCheck>,
    /// float64 and complex128 results that differed elementwise, judged
    /// against an extended-precision run of the original.
    #[serde(
        default,
        deserialize_with = "float64_check",
        skip_serializing_if = "Option::is_none"
    )]
    pub float64_exact: Option<ExactCheck>,
    /// How generated inputs were sized, when they had to be made smaller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_how: Option<String>,
}

impl Verification {
    /// The more exact run's check, when there was one.
    pub fn exact(&self) -> Option<&ExactCheck> {
        self.float32_exact.as_ref().or(self.float64_exact.as_ref())
    }
}

/// A check read from `float32_exact`: its key says its precision.
fn float32_check<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ExactCheck>, D::Error> {
    check_in(d, Precision::Float32)
}

/// A check read from `float64_exact`.
fn float64_check<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ExactCheck>, D::Error> {
    check_in(d, Precision::Float64)
}

fn check_in<'de, D: Deserializer<'de>>(
    d: D,
    precision: Precision,
) -> Result<Option<ExactCheck>, D::Error> {
    Ok(Option::<ExactCheck>::deserialize(d)?.map(|c| ExactCheck { precision, ..c }))
}

/// The precision of the runs a more exact run judges (the original's and
/// the kernels'), which says what the original reruns in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// float32 (and complex64): judged against a float64 run.
    Float32,
    /// float64 (and complex128): judged against an `np.longdouble` run.
    #[default]
    Float64,
}

impl Precision {
    /// The precision's name, as NumPy spells it.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Float32 => "float32",
            Precision::Float64 => "float64",
        }
    }

    /// What the original reruns in, for a sentence.
    pub fn rerun(self) -> &'static str {
        match self {
            Precision::Float32 => "a float64 run",
            Precision::Float64 => "an extended-precision run",
        }
    }
}

/// What the more exact run says about the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The kernels are as close to the more exact answer as the original.
    Passed,
    /// They are not: the elementwise mismatch stands.
    Failed,
    /// The original's own answer is not reproducible: nothing can be told.
    Inconclusive,
    /// There is no more exact run: the elementwise mismatch stands.
    #[default]
    Unavailable,
}

/// The comparison of both runs with a more exact run of the original
/// (`port_verify::exact` decides it). Every field is optional on read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExactCheck {
    /// Said by the key the check is stored under (`float32_exact`,
    /// `float64_exact`).
    #[serde(skip)]
    pub precision: Precision,
    pub verdict: Verdict,
    /// `verdict` is `passed`.
    pub passed: bool,
    /// What the original reran in: `float64`, `np.longdouble (64-bit
    /// significand)`.
    pub reference: String,
    /// The kernels' normwise error against the more exact run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ours_err: Option<f64>,
    /// The original's own normwise error against it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_err: Option<f64>,
    /// The original's largest elementwise distance from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_abs_err: Option<f64>,
    /// How many times the original's own error the kernels' may be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// Under this error the kernels pass whatever the original's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
    /// Past this error of its own the original's answer has lost its
    /// meaning, and the check is inconclusive (float64 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unstable: Option<f64>,
    /// The first elementwise difference from the original's results, which
    /// this check overrules (passed) or cannot settle (inconclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elementwise: Option<String>,
    /// Inconclusive: why, and what to do; unavailable: why there is no
    /// more exact run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl ExactCheck {
    /// No second opinion was possible, for this reason.
    pub fn unavailable(precision: Precision, why: impl Into<String>) -> ExactCheck {
        ExactCheck {
            precision,
            verdict: Verdict::Unavailable,
            why: Some(why.into()),
            ..ExactCheck::default()
        }
    }

    /// One line for people, after `float32: ` / `float64: `.
    pub fn describe(&self) -> String {
        let errors = || {
            let allowed = match (self.factor, self.floor) {
                (Some(factor), Some(floor)) => {
                    format!(" (allowed: {factor}x the original's, or {floor:.0e})")
                }
                _ => String::new(),
            };
            format!(
                "against {} of the original: the kernels' error {:.2e}, the original's own {} error {:.2e}{allowed}",
                self.precision.rerun(),
                self.ours_err.unwrap_or(f64::INFINITY),
                self.precision.name(),
                self.original_err.unwrap_or(f64::INFINITY),
            )
        };
        let why = self.why.as_deref().unwrap_or_default();
        match self.verdict {
            Verdict::Passed => format!("passed {}", errors()),
            Verdict::Failed => format!("failed too {}", errors()),
            Verdict::Inconclusive => {
                let past = self.unstable.map_or(String::new(), |u| {
                    format!(
                        "past the {u:.0e} at which a {} answer still means something: ",
                        self.precision.name()
                    )
                });
                format!("inconclusive {} ({past}see the reason)", errors())
            }
            Verdict::Unavailable => format!("no second opinion: {why}"),
        }
    }
}

/// What `port verify` timed, in seconds: medians of repeated runs, except
/// `compile_s` (one compilation). On the simulator backend the GPU-only
/// fields (`kernel_s`, `end_to_end_s`, `speedup_*`) are null: the host JIT
/// says nothing about a GPU's speed. Every field is optional on read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timing {
    pub compile_s: Option<f64>,
    /// The kernels alone, on the device.
    pub kernel_s: Option<f64>,
    /// The kernels with the copies to and from the device and the launches.
    pub end_to_end_s: Option<f64>,
    /// The original function under CPython.
    pub cpython_s: Option<f64>,
    /// The plan run once on the host simulator (the kernels JIT-compiled
    /// from the same IR, the host steps interpreted), compilation apart:
    /// what a verification without a GPU costs, beside `cpython_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulator_s: Option<f64>,
    /// How the original was called for `cpython_s`: once on the arguments
    /// as given, or through `np.vectorize` (absent in older records).
    pub cpython_call: Option<CpythonCall>,
    /// `cpython_s / kernel_s`.
    pub speedup_kernel: Option<f64>,
    /// `cpython_s / end_to_end_s`.
    pub speedup_end_to_end: Option<f64>,
    pub repeats: Option<Repeats>,
}

/// How the original was called in the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Via {
    /// Called once per run with the arguments as they are.
    #[default]
    #[serde(rename = "call")]
    Call,
    /// Applied element by element with `np.vectorize`.
    #[serde(rename = "np.vectorize")]
    Vectorize,
}

/// How the CPython time was taken: the original called once per run on
/// the arguments as they are (`"call"`), or, for a function of scalars,
/// through `np.vectorize` (one call per element), with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpythonCall {
    /// `"call"` or `"np.vectorize"`.
    pub via: Option<Via>,
    /// Calls of the user's function in one run.
    pub calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_vectorized: Option<String>,
}

impl CpythonCall {
    /// For people: `one call on the arguments as given`, or
    /// `through np.vectorize, 1000 calls a run: <why>`.
    pub fn describe(&self) -> String {
        match self.via.unwrap_or_default() {
            Via::Call => "the original called once on the arguments as given".into(),
            Via::Vectorize => {
                let calls = self
                    .calls
                    .map_or(String::new(), |c| format!(", {c} calls a run"));
                let why = self
                    .why_vectorized
                    .as_deref()
                    .map_or(String::new(), |w| format!(": {w}"));
                format!("the original applied per element through np.vectorize{calls}{why}")
            }
        }
    }
}

impl Timing {
    /// Fills in the speedups from the times.
    pub fn with_speedups(mut self) -> Timing {
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 && a > 0.0 => Some(a / b),
            _ => None,
        };
        self.speedup_kernel = ratio(self.cpython_s, self.kernel_s);
        self.speedup_end_to_end = ratio(self.cpython_s, self.end_to_end_s);
        self
    }
}

/// How many runs each median in [`Timing`] is taken over.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Repeats {
    pub kernel: Option<u64>,
    pub end_to_end: Option<u64>,
    pub cpython: Option<u64>,
}

/// Whether offloading the function pays for the whole program: the speedup
/// projected from the hotspot's share of sampled time (Amdahl's law), and
/// port's verdict with its reason. Every field is optional: the projection
/// says what it could work out.
///
/// Records written before the final `port.migration/1` named `hotspot_pct`
/// `share_pct`, `program_speedup` `whole_program_speedup` and `why` `note`;
/// both spellings are read (the new one wins when a record has both).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "ProjectionRecord")]
pub struct Projection {
    /// The function's share of sampled time, in percent.
    pub hotspot_pct: Option<f64>,
    /// Projected speedup of the whole program.
    pub program_speedup: Option<f64>,
    /// Seconds spent copying to and from the device per call.
    pub transfer_s: Option<f64>,
    /// `None` when port could not tell (no GPU timing, no profile).
    pub profitable: Option<bool>,
    /// Why offloading does or does not pay (transfers, launch overhead), or
    /// why port could not tell.
    pub why: Option<String>,
    /// What one call costs on any GPU at least, from what the run launched
    /// and moved (on the simulator too).
    pub floor: Option<CostFloor>,
}

/// The least time one call of the plan takes on any GPU: each launch and
/// library call one launch latency, the bytes moved between host and
/// device at the host link's peak, and the bytes the kernels touch at the
/// device memory's peak, with the rates assumed stated. Computed from one
/// run of the plan (the verified call), so it holds for calls of that size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostFloor {
    pub launches: usize,
    pub library_calls: usize,
    pub bytes_to_device: usize,
    pub bytes_to_host: usize,
    /// Bytes of the arrays the launches take, each counted once per launch.
    pub device_bytes: usize,
    /// Seconds assumed per launch or library call.
    pub launch_s: f64,
    /// Bytes per second assumed over the host link.
    pub link_bytes_per_s: f64,
    /// Bytes per second assumed of device memory.
    pub memory_bytes_per_s: f64,
    /// The floor: the sum of the three.
    pub seconds: f64,
}

/// [`Projection`] as stored, old field names included.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProjectionRecord {
    hotspot_pct: Option<f64>,
    share_pct: Option<f64>,
    program_speedup: Option<f64>,
    whole_program_speedup: Option<f64>,
    transfer_s: Option<f64>,
    profitable: Option<bool>,
    why: Option<String>,
    note: Option<String>,
    floor: Option<CostFloor>,
}

impl From<ProjectionRecord> for Projection {
    fn from(r: ProjectionRecord) -> Projection {
        Projection {
            hotspot_pct: r.hotspot_pct.or(r.share_pct),
            program_speedup: r.program_speedup.or(r.whole_program_speedup),
            transfer_s: r.transfer_s,
            profitable: r.profitable,
            why: r.why.or(r.note),
            floor: r.floor,
        }
    }
}

/// Where the kernels ran: a GPU, or `"simulator"` (the host JIT) with the
/// other fields null. Every field is optional on read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Device {
    /// `"NVIDIA H100 80GB HBM3"`, or `"simulator"`; empty when not recorded.
    pub name: String,
    /// `"9.0"`.
    pub compute_capability: Option<String>,
    /// Streaming multiprocessors.
    pub sms: Option<u64>,
    /// The device memory's peak bandwidth, GB/s.
    pub peak_bandwidth_gb_s: Option<f64>,
}

/// The name `device.name` has on the simulator backend.
pub const SIMULATOR: &str = "simulator";

/// The memory bandwidth the kernels achieved; null on the simulator. Every
/// field is optional on read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Bandwidth {
    /// Bytes the kernels read and wrote per call.
    pub bytes: Option<u64>,
    pub achieved_gb_s: Option<f64>,
    pub peak_gb_s: Option<f64>,
    pub pct_of_peak: Option<f64>,
    /// The kernels are limited by memory bandwidth, so `pct_of_peak` says
    /// how close to the hardware they are.
    pub memory_bound: Option<bool>,
}

/// A library step computed on the host (the simulator; `lstsq`, complex
/// types, or a GPU without libcublas/libcusolver), once per call site.
/// Every field is optional on read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostCall {
    /// `np.linalg.cholesky`.
    pub call: String,
    pub line: u32,
    pub count: usize,
    /// Bytes copied back (operands) and over (the result), in all.
    pub bytes_to_host: usize,
    pub bytes_to_device: usize,
    /// Host seconds, in all (transfers included).
    pub seconds: f64,
}

impl std::fmt::Display for HostCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.call == "np.matmul" {
            "on the host (cuBLAS computes it on a GPU that has libcublas)"
        } else {
            "on the host (cuSOLVER computes float32/float64 cholesky, solve, inv and det on a GPU that has libcusolver)"
        };
        write!(f, "`{}` at line {}: {why}", self.call, self.line)?;
        if self.count > 1 {
            write!(f, " (×{})", self.count)?;
        }
        Ok(())
    }
}

/// One named rewrite of the migration and what it did. Every field is
/// optional on read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rewrite {
    pub rewrite: String,
    pub applied: bool,
    /// Where it applied, or why it did not.
    pub note: String,
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
    #[serde(default)]
    pub bandwidth: Option<Bandwidth>,
    /// The library steps the verified run computed on the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_calls: Vec<HostCall>,
    /// The function's file and line (absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The rewrites the planner tried, applied or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewrites: Vec<Rewrite>,
    /// What else port said about the migration, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
        /// The rewrite that refused (`dependences`, …), `analysis`,
        /// `codegen` or `verify`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rewrite: Option<String>,
    },
    Text(String),
}

impl Reason {
    /// The message alone, without its line.
    pub fn message(&self) -> &str {
        match self {
            Reason::Located { message, .. } | Reason::Text(message) => message,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Located {
                line: Some(line),
                message,
                ..
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

    /// The kernels ran on the simulator (the host JIT): there is no GPU
    /// timing to show, whatever the record holds.
    pub fn on_simulator(&self) -> bool {
        self.verification
            .as_ref()
            .is_some_and(|v| v.backend == SIMULATOR)
            || self.device.as_ref().is_some_and(|d| d.name == SIMULATOR)
    }

    /// Verified, and the verification it rests on passed.
    pub fn is_verified(&self) -> bool {
        self.status == MigrationStatus::Verified
            && self.verification.as_ref().is_some_and(|v| v.passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_check_takes_its_precision_from_its_key() {
        let v: Verification = serde_json::from_value(json!({
            "backend": "gpu", "inputs": "captured", "passed": true,
            "max_abs_err": null, "max_rel_err": null,
            "float32_exact": {"verdict": "passed", "passed": true, "reference": "float64"},
        }))
        .unwrap();
        let c = v.exact().unwrap();
        assert_eq!(c.precision, Precision::Float32);
        assert_eq!(c.verdict, Verdict::Passed);
        // Without the allowance (an older record) the sentence leaves it out.
        assert_eq!(
            c.describe(),
            "passed against a float64 run of the original: the kernels' error inf, the original's own float32 error inf"
        );
    }

    #[test]
    fn a_check_reads_back_as_written() {
        let c = ExactCheck {
            precision: Precision::Float64,
            verdict: Verdict::Inconclusive,
            ours_err: Some(0.3),
            original_err: Some(3e-2),
            factor: Some(10.0),
            floor: Some(2e-15),
            unstable: Some(1e-4),
            why: Some("not reproducible".into()),
            ..ExactCheck::default()
        };
        let v: Verification = serde_json::from_value(json!({
            "backend": "gpu", "inputs": "given", "passed": false,
            "max_abs_err": 1.0, "max_rel_err": 1.0,
            "float64_exact": c,
        }))
        .unwrap();
        assert_eq!(v.float64_exact.as_ref(), Some(&c));
        assert_eq!(
            c.describe(),
            "inconclusive against an extended-precision run of the original: the kernels' error 3.00e-1, the original's own float64 error 3.00e-2 (allowed: 10x the original's, or 2e-15) (past the 1e-4 at which a float64 answer still means something: see the reason)"
        );
    }
}
