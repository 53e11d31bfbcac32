//! What can go wrong while verifying, one line each.

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}: {1}")]
    Io(String, String),
    #[error("bad data: {0}")]
    BadData(String),
    #[error("cannot run Python `{python}`: {message}")]
    NoPython { python: String, message: String },
    #[error("the original function raised: {0}")]
    OriginalFailed(String),
    /// The original's module does not import (a dependency missing from
    /// the Python port runs, an import that raises, one that never ends).
    #[error(
        "the original's module does not import: {0}; install what it imports into the \
         Python port runs it with (--python)"
    )]
    OriginalImport(String),
    /// The original raised on every shape of generated inputs tried.
    #[error(
        "the original function raised on generated inputs: {0}; give it real ones with \
         --inputs FILE.npz (its arguments by name), or profile the program first \
         (`port analyze APP.py`) so that a real call's inputs are captured and used"
    )]
    OriginalFailedOnGenerated(String),
    /// A run stopped at its time limit.
    #[error("{0}")]
    TimedOut(String),
    #[error("the kernels failed on the simulator: {0}")]
    Simulator(String),
    #[error("{0}")]
    NoGpu(String),
    /// A CUDA driver error, naming the kernel and launch configuration
    /// when a launch (or the data for one) failed.
    #[error("CUDA error: {0}")]
    Cuda(String),
    #[error("the plan cannot run: {0}")]
    BadPlan(String),
    /// A shape guard of the plan failed: the inputs' shapes break what
    /// the kernels were built for, so no kernel ran on them.
    #[error("the inputs' shapes do not fit the kernels: {0}")]
    Shape(String),
    /// Python int arithmetic in a kernel left int64 on these inputs (where
    /// Python's ints have no bound): the migrated function runs the
    /// original for such a call, so no kernel result is there to compare.
    #[error(
        "on these inputs Python int arithmetic in `{0}` leaves int64 (Python's ints have no \
         bound): the migrated function runs the original for such a call, so the kernels \
         were not verified; give inputs whose integers stay within int64"
    )]
    Overflow(String),
    /// A library step raised what NumPy raises (`Matrix is not positive
    /// definite`, `Singular matrix`) where the original did not.
    #[error("LinAlgError: {0}")]
    LinAlg(String),
    /// A guard of the host schedule (`raise`, a failed `assert`) stopped
    /// the run where the original returned.
    #[error("the migrated function raised {0}")]
    Raised(String),
}
