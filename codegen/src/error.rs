//! The crate's error type: one variant per thing a user (or the rewriter) can
//! get wrong, each a single line that says what happened and what to do.

use std::path::PathBuf;

use crate::text::ParseError;
use crate::verify::VerifyError;

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("kernel IR syntax error: {0}")]
    Parse(#[from] ParseError),

    #[error("invalid kernel IR: {0}")]
    Verify(#[from] VerifyError),

    #[error("unknown --arch `{given}`: port compiles for {supported}")]
    UnknownArch { given: String, supported: String },

    #[error(
        "libdevice (libdevice.10.bc) not found; looked in {searched}. It is needed for math \
         functions: run scripts/setup.sh (it installs the PyPI package nvidia-cuda-nvcc-cu12 into .venv), \
         or set PORT_LIBDEVICE to the file or CUDA_HOME to a CUDA toolkit"
    )]
    LibdeviceNotFound { searched: String },

    #[error("cannot load libdevice from {}: {message}", path.display())]
    LibdeviceInvalid { path: PathBuf, message: String },

    #[error("no kernel named `{0}` in the module")]
    NoSuchKernel(String),

    /// LLVM refused something port built. This is a bug in port, not in the
    /// kernel: the verifier is meant to catch every invalid input first.
    #[error("LLVM failed while {stage}: {message} (this is a bug in port's codegen; please report it with the kernel's IR)")]
    Llvm {
        stage: &'static str,
        message: String,
    },
}

impl CodegenError {
    pub(crate) fn llvm(stage: &'static str, message: impl ToString) -> CodegenError {
        CodegenError::Llvm {
            stage,
            message: message.to_string(),
        }
    }
}
