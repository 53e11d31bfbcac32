//! The profile as plain data: what `profile` returns and what the reports render.
//!
//! Everything here is `serde`-serialisable and free of process or py-spy types,
//! so later stages (and tests) can build and read profiles without running anything.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Everything learned from one `port analyze` run of the app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Thread stack samples counted (idle threads excluded unless asked for).
    pub samples: u64,
    /// Counted samples whose stack had no frame in the app's own files
    /// (interpreter start-up, library import, threads that only run library code).
    pub unattributed_samples: u64,
    /// Wall time from starting the app to the end of sampling.
    pub duration_s: f64,
    /// The requested sampling rate.
    pub rate_hz: u64,
    /// The interpreter that ran the app, as given.
    pub python: PathBuf,
    /// Its version as py-spy read it from the process (e.g. "3.11.7").
    pub python_version: Option<String>,
    /// How the app ended.
    pub exit: AppExit,
    /// Processes that contributed samples (more than one with `subprocesses`).
    pub processes_sampled: u32,
    /// App functions, hottest (by `self_samples`) first.
    pub functions: Vec<FunctionHotspot>,
    /// App source lines of the hottest functions, hottest first.
    pub lines: Vec<LineHotspot>,
    /// Caller → callee pairs between app functions seen on sampled stacks.
    pub edges: Vec<SampledEdge>,
    /// Every distinct sampled stack (all frames, library ones included) with its count.
    pub stacks: Vec<CollapsedStack>,
    /// Whether the run captured argument types and inputs (not with
    /// `--no-capture`); an analysis saved before this field read as true.
    #[serde(default = "captured_by_default")]
    pub capture: bool,
    /// Argument types and input snapshots of the hottest functions.
    pub captures: Vec<Capture>,
    /// Things the user should know that did not stop the run, one line each.
    pub warnings: Vec<String>,
}

fn captured_by_default() -> bool {
    true
}

/// How the app's process ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppExit {
    /// Exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// Sampling was stopped by Ctrl-C (or the caller's stop signal) and the app terminated.
    pub interrupted: bool,
    /// Sampling hit `--duration` and the app was terminated.
    pub timed_out: bool,
}

impl AppExit {
    /// True when the app ran to completion and exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.interrupted && !self.timed_out
    }

    /// One line for the user, e.g. "the app exited with code 3".
    pub fn describe(&self) -> String {
        if self.interrupted {
            return "sampling was interrupted and the app was stopped".to_string();
        }
        if self.timed_out {
            return "the sampling duration ran out and the app was stopped".to_string();
        }
        match (self.code, self.signal) {
            (Some(0), _) => "the app exited normally".to_string(),
            (Some(code), _) => format!("the app exited with code {code}"),
            (None, Some(sig)) => {
                format!("the app was killed by signal {sig} ({})", signal_name(sig))
            }
            (None, None) => "the app's exit status is unknown".to_string(),
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// One app function's share of the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionHotspot {
    /// The resolver's stable key (the qualified name by default).
    pub key: String,
    pub file: PathBuf,
    /// The name py-spy reported (`co_qualname` on Python 3.11+, else `co_name`).
    pub name: String,
    /// Samples whose innermost app frame is this function (library time it calls included).
    pub self_samples: u64,
    /// Samples with this function anywhere on the stack, counted once per sample.
    pub total_samples: u64,
    pub self_pct: f64,
    pub total_pct: f64,
}

/// One app source line's share of the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineHotspot {
    pub file: PathBuf,
    pub line: u32,
    /// The key of the function the line belongs to.
    pub function: String,
    pub self_samples: u64,
    pub self_pct: f64,
    /// The line's text, trimmed; empty when the file could not be read.
    pub source: String,
}

/// A caller → callee pair between app functions, seen on sampled stacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampledEdge {
    pub caller: String,
    pub caller_file: PathBuf,
    pub callee: String,
    pub callee_file: PathBuf,
    /// Samples on which the pair appeared (once per sample).
    pub samples: u64,
}

/// A distinct sampled stack, root first, with how many samples had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollapsedStack {
    pub frames: Vec<StackFrame>,
    pub count: u64,
}

/// A frame of a collapsed stack: a function, not a line, so stacks merge per function.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StackFrame {
    pub name: String,
    pub file: PathBuf,
}

/// The argument types and saved inputs of one real call of a hot function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    /// The function key, as in [`FunctionHotspot::key`].
    pub function: String,
    pub file: PathBuf,
    /// First line of the function's code object.
    pub line: u32,
    pub args: Vec<ArgType>,
    /// The return value's type, when the call returned normally.
    pub returns: Option<ArgKind>,
    /// The argument the call returned (the same object, e.g. an array updated
    /// in place).
    #[serde(default)]
    pub returns_alias: Option<String>,
    /// `np.savez` file with the array and scalar arguments as they were at the
    /// call. Nothing after the call is saved: verification calls the original
    /// again on these inputs.
    pub inputs_npz: Option<PathBuf>,
    /// Why an argument was not saved, or the return type is unknown, one line each.
    pub skipped: Vec<String>,
    /// An argument was left out because the capture cap was reached.
    #[serde(default)]
    pub truncated: bool,
    /// Pairs of array arguments that shared memory in the call (`f(a, a)`,
    /// `f(a[1:], a[:-1])`), in parameter order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<(String, String)>,
    /// Those of `aliases` that were one array (same memory, shape and
    /// strides: `f(a, a)`): the call was in place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same_array: Vec<(String, String)>,
}

/// One argument of a captured call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgType {
    pub name: String,
    pub kind: ArgKind,
}

/// The runtime type of a value, in the terms the classifier needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgKind {
    Ndarray {
        /// NumPy's dtype name, e.g. "float64".
        dtype: String,
        ndim: u32,
        shape: Vec<u64>,
        c_contiguous: bool,
        f_contiguous: bool,
    },
    /// A Python or NumPy scalar: "int", "float", "bool", "complex", "float32", …
    Scalar {
        #[serde(rename = "type")]
        type_name: String,
    },
    /// Anything else, by its qualified type name ("list", "str", "mymod.Body").
    Other { type_name: String },
}
