//! The analysis as other stages and `.port/analysis.json` see it: plain data,
//! serialisable, with a schema version.

use serde::{Deserialize, Serialize};

/// Version tag of `.port/analysis.json`. Bump on incompatible change.
pub const ANALYSIS_SCHEMA: &str = "port.analysis/1";

/// One verdict per function, in Numba's own terms, ordered from least to most
/// capable: a function is never better than the functions it calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Needs Numba's object mode: nopython mode cannot type something in it.
    Object,
    /// `@njit` would compile it, but it cannot become a GPU kernel.
    Nopython,
    /// port can turn it into a correct GPU kernel or device function.
    Cuda,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Object => "object",
            Verdict::Nopython => "nopython",
            Verdict::Cuda => "cuda",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a finding does to the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Forces object mode (PORT1xx).
    Object,
    /// Compiles in nopython mode but blocks the GPU (PORT2xx).
    Blocker,
    /// Costs speed on the GPU but does not block it (PORT3xx).
    Performance,
    /// Says what a verdict rests on: assumptions, recognised patterns (PORT4xx).
    Note,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    pub line: u32,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    pub line: u32,
    pub end_line: u32,
}

/// The type of one argument as the profiler saw it in a real call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgType {
    pub name: String,
    /// `"ndarray"`, `"scalar"` or `"other"`.
    pub kind: String,
    /// NumPy dtype for arrays, Python type for scalars and others.
    pub dtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ndim: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_contiguous: Option<bool>,
    /// In the captured call, the earlier parameter that was the same array
    /// as this one (`smooth(x, x)`: `out` has `"a"`): the call was in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionReport {
    /// The bare name (`normalize`, `step`).
    pub name: String,
    /// Module-qualified Python qualname (`physics.Body.step`).
    pub qualname: String,
    pub module: String,
    pub file: String,
    pub line: u32,
    pub end_line: u32,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub liftable_loops: Vec<LineRange>,
    pub self_pct: Option<f64>,
    pub total_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<ArgType>>,
    /// What `port migrate`'s planner answered when `port analyze` asked it
    /// (absent when it was not asked: object mode, or an analysis made
    /// without the CLI). The verdict `cuda` means `planned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration_plan: Option<PlanCheck>,
}

/// The migration planner's answer for one function, at analysis time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanCheck {
    /// `planned` or `refused`.
    pub status: PlanStatus,
    /// The argument types it planned with, in Numba's syntax.
    pub signature: String,
    /// Where they came from: `captured` (a profiled call), `calls` (the
    /// program's own calls type every argument), `calls+assumed` (some),
    /// or `assumed` (read from how the body uses each argument).
    pub types_from: String,
    /// The refusal (absent when planned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The rewrite (pass) that refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanStatus {
    Planned,
    Refused,
}

impl FunctionReport {
    /// What Numba's own nopython mode would say: `object` when any finding
    /// forces object mode, else `nopython`. Equal to the verdict except for
    /// a `cuda` function port migrates although Numba refuses it (PORT406).
    pub fn numba_mode(&self) -> Verdict {
        if self.findings.iter().any(|f| f.severity == Severity::Object) {
            Verdict::Object
        } else {
            Verdict::Nopython
        }
    }

    /// The finding that decided the verdict: the first object-mode reason for
    /// `object`, the first GPU blocker for `nopython`, else the first finding.
    pub fn main_reason(&self) -> Option<&Finding> {
        let wanted = match self.verdict {
            Verdict::Object => Some(Severity::Object),
            Verdict::Nopython => Some(Severity::Blocker),
            Verdict::Cuda => None,
        };
        match wanted {
            Some(sev) => self.findings.iter().find(|f| f.severity == sev),
            None => self
                .findings
                .iter()
                .find(|f| f.severity == Severity::Performance)
                .or_else(|| self.findings.iter().find(|f| f.code == "PORT405"))
                .or_else(|| self.findings.first()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    Static,
    Sampled,
    Both,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallEdge {
    pub caller: String,
    pub callee: String,
    pub kind: EdgeKind,
    /// Line of the first call site in the caller (static edges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallNode {
    pub id: String,
    /// `"app"` for functions of the program, `"external"` for library callees.
    pub kind: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallGraphReport {
    pub nodes: Vec<CallNode>,
    pub edges: Vec<CallEdge>,
}

/// Shares of the program by verdict, in percent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub gpu_eligible_pct: f64,
    pub nopython_pct: f64,
    pub object_pct: f64,
    /// `"functions"` for static analyses (share of functions), `"samples"`
    /// when a profile weighted them by sampled time.
    pub basis: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseErrorReport {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl std::fmt::Display for ParseErrorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub schema: String,
    /// What was analysed, as the user named it.
    pub root: String,
    /// Whether the analysis ran the program (`false` for `--static`).
    pub profiled: bool,
    pub files: Vec<String>,
    pub functions: Vec<FunctionReport>,
    pub call_graph: CallGraphReport,
    pub coverage: Coverage,
    pub parse_errors: Vec<ParseErrorReport>,
    /// Filled in by `port analyze APP.py`; absent for static analyses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<serde_json::Value>,
}

impl Analysis {
    /// The analysis as compact JSON: the bytes `serde_json::to_vec` gives,
    /// with the function reports and the call graph (nearly all of a large
    /// program's tens of megabytes) serialised in parallel. A test holds
    /// the two to the same bytes, so a field added to `Analysis` must be
    /// added here too.
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        use rayon::prelude::*;
        let (functions, call_graph) = rayon::join(
            || {
                self.functions
                    .par_chunks(256)
                    .map(|chunk| {
                        let mut out = Vec::new();
                        for (k, f) in chunk.iter().enumerate() {
                            if k > 0 {
                                out.push(b',');
                            }
                            serde_json::to_writer(&mut out, f)?;
                        }
                        Ok(out)
                    })
                    .collect::<serde_json::Result<Vec<Vec<u8>>>>()
            },
            || serde_json::to_vec(&self.call_graph),
        );
        let (functions, call_graph) = (functions?, call_graph?);
        let size = functions.iter().map(Vec::len).sum::<usize>() + call_graph.len();
        let mut out = Vec::with_capacity(size + 4096);
        let field = |out: &mut Vec<u8>, name: &str| {
            out.extend_from_slice(if out.is_empty() { b"{\"" } else { b",\"" });
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        };
        field(&mut out, "schema");
        serde_json::to_writer(&mut out, &self.schema)?;
        field(&mut out, "root");
        serde_json::to_writer(&mut out, &self.root)?;
        field(&mut out, "profiled");
        serde_json::to_writer(&mut out, &self.profiled)?;
        field(&mut out, "files");
        serde_json::to_writer(&mut out, &self.files)?;
        field(&mut out, "functions");
        out.push(b'[');
        for (k, chunk) in functions.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.extend_from_slice(chunk);
        }
        out.push(b']');
        field(&mut out, "call_graph");
        out.extend_from_slice(&call_graph);
        field(&mut out, "coverage");
        serde_json::to_writer(&mut out, &self.coverage)?;
        field(&mut out, "parse_errors");
        serde_json::to_writer(&mut out, &self.parse_errors)?;
        if let Some(p) = &self.profile {
            field(&mut out, "profile");
            serde_json::to_writer(&mut out, p)?;
        }
        out.push(b'}');
        Ok(out)
    }

    /// Coverage by share of functions: what `--static` reports.
    pub fn static_coverage(functions: &[FunctionReport]) -> Coverage {
        let n = functions.len() as f64;
        let pct = |v: Verdict| {
            if n == 0.0 {
                0.0
            } else {
                round2(100.0 * functions.iter().filter(|f| f.verdict == v).count() as f64 / n)
            }
        };
        Coverage {
            gpu_eligible_pct: pct(Verdict::Cuda),
            nopython_pct: pct(Verdict::Nopython),
            object_pct: pct(Verdict::Object),
            basis: "functions".into(),
        }
    }
}

pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
