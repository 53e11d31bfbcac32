//! Errors a user can cause before any rewrite runs (an unknown function, a
//! bad `--signature`, a missing type), and refusals: the exact reason a
//! function cannot become a correct kernel, with the line at fault.

use serde::{Deserialize, Serialize};

/// A mistake in the request: the migration cannot even start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    #[error("bad --signature {0}")]
    BadSignature(String),
    /// The types a profiled run captured are ones port does not take (a
    /// `uint8` image, a 4-D array): the capture, not a signature, is the
    /// source.
    #[error("captured types: {0}; pass --signature to migrate it with other types")]
    CapturedType(String),
    #[error("{file}: no function named `{name}`{hint}")]
    NoSuchFunction {
        file: String,
        name: String,
        hint: String,
    },
    #[error(
        "`{name}` is ambiguous: it names {candidates}; qualify it (e.g. `--function {first}`)"
    )]
    Ambiguous {
        name: String,
        candidates: String,
        first: String,
    },
    #[error("no type for argument `{arg}` of `{function}`: pass --signature \"{example}\" (Numba's type syntax) or capture types with `port analyze APP.py`")]
    NoType {
        function: String,
        arg: String,
        example: String,
    },
    #[error("--signature gives {given} type(s) but `{function}` takes {expected} argument(s) ({params})")]
    SignatureArity {
        function: String,
        given: usize,
        expected: usize,
        params: String,
    },
    #[error("{file}:{line}:{column}: syntax error: {message}")]
    Parse {
        file: String,
        line: u32,
        column: u32,
        message: String,
    },
}

impl RewriteError {
    /// A short, stable name for `--json` (`bad_signature`, …).
    pub fn code(&self) -> &'static str {
        match self {
            RewriteError::BadSignature(_) | RewriteError::SignatureArity { .. } => "bad_signature",
            RewriteError::CapturedType(_) => "unsupported_captured_type",
            RewriteError::NoSuchFunction { .. } => "no_such_function",
            RewriteError::Ambiguous { .. } => "ambiguous_function",
            RewriteError::NoType { .. } => "no_types",
            RewriteError::Parse { .. } => "syntax_error",
        }
    }
}

/// Why one rewrite (or the whole migration) does not apply: one line,
/// naming the construct, with its source line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// The rewrite that refused (`dependences`, `app_calls`, …) or
    /// `analysis` for a finding of the static analysis.
    pub rewrite: String,
    pub line: u32,
    pub message: String,
}

impl Reason {
    /// A reason is one line: source quoted across lines (a nested list
    /// literal) has each line break and the indentation after it read as
    /// one space.
    pub fn new(rewrite: &str, line: u32, message: impl Into<String>) -> Reason {
        let message: String = message.into();
        let message = if message.contains('\n') {
            message
                .split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            message
        };
        Reason {
            rewrite: rewrite.to_string(),
            line,
            message,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {} [{}]", self.line, self.message, self.rewrite)
    }
}

/// Result of lowering steps that may refuse.
pub(crate) type Lower<T> = Result<T, Box<Reason>>;

pub(crate) fn refuse<T>(rewrite: &str, line: u32, message: impl Into<String>) -> Lower<T> {
    Err(Box::new(Reason::new(rewrite, line, message)))
}

/// Refuses a value of `ndim` dimensions when kernels cannot take it (none,
/// or more than [`port_codegen::ir::MAX_DIMS`]).
pub(crate) fn check_rank(rewrite: &str, line: u32, ndim: usize) -> Lower<()> {
    let max = port_codegen::ir::MAX_DIMS;
    if ndim == 0 || ndim > max as usize {
        return refuse(
            rewrite,
            line,
            format!("arrays have 1 to {max} dimensions in kernels"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// transforms3d's `clip_matrix` quoted its nested list literal across
    /// four lines, which broke every one-line output.
    #[test]
    fn a_reason_quoting_several_lines_is_one_line() {
        let r = super::Reason::new(
            "frontend",
            3,
            "`[[a, 0.0],\n             [0.0, b]]`: lists have no kernel equivalent",
        );
        assert_eq!(
            r.message,
            "`[[a, 0.0], [0.0, b]]`: lists have no kernel equivalent"
        );
    }
}
