//! Codegen: port's kernel IR, its lowering to PTX through LLVM's NVPTX
//! backend (inkwell, LLVM 19, libdevice linked for math), and a host
//! simulator JIT-compiled from the same IR that runs every thread of the grid.
//!
//! The rewriter builds a [`ir::Module`] (in Rust with [`ir::build`], or as
//! text with [`text::parse_module`]); codegen reads it:
//!
//! - [`verify::verify_module`] checks types, names and barrier placement;
//!   every entry point below calls it first.
//! - [`compile_ptx`] gives one PTX module for all kernels
//!   (`nvptx64-nvidia-cuda`, `sm_70` … `sm_90`, O3, optional fast-math and
//!   bounds checks); [`emit_llvm_ir`] gives the LLVM IR behind it.
//! - [`Simulator`] JIT-compiles the kernels for the host and launches them
//!   over real buffers, honouring barriers ([`sim`] says how).
//!
//! Modules, one idea each: [`ir`] (the data types), [`text`] (printer and
//! parser), [`verify`], [`lower`] (IR → LLVM IR for both targets, and the
//! kernel calling convention), [`ptx`] (architecture, libdevice, PTX),
//! [`sim`] (the host simulator), [`error`].
//!
//! Architecture invariant: this crate knows nothing about Python or about
//! the CUDA driver. It takes IR and gives text (PTX, LLVM IR) or runs the IR
//! on the host; loading PTX on a GPU is the verify crate's job.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod error;
pub mod ir;
pub mod lower;
pub mod ptx;
mod serial;
pub mod sim;
pub mod text;
pub mod verify;

pub use error::CodegenError;
pub use lower::{kernel_abi, AbiKind, AbiParam, ERROR_RECORD_LEN};
pub use ptx::{compile_ptx, emit_llvm_ir, find_libdevice, Arch, PtxOptions};
pub use sim::{ArrayData, Dim3, SimArg, SimArray, SimError, SimOptions, Simulator};

/// The debug-mode error record a kernel fills on its first out-of-bounds
/// access (10 × `u64`, zeroed before the launch; the GPU build takes its
/// address as the last kernel parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DebugRecord {
    pub tid: [u32; 3],
    pub ctaid: [u32; 3],
    pub index: i64,
    pub axis: u32,
    pub size: i64,
}

impl DebugRecord {
    /// Decodes a record read back after a launch; `None` when no thread
    /// indexed out of bounds (an overflow of Python int arithmetic writes
    /// [`ir::OVERFLOW_FLAG`] instead).
    pub fn decode(raw: &[u64; ERROR_RECORD_LEN]) -> Option<DebugRecord> {
        (raw[0] == 1).then(|| DebugRecord {
            tid: [raw[1] as u32, raw[2] as u32, raw[3] as u32],
            ctaid: [raw[4] as u32, raw[5] as u32, raw[6] as u32],
            index: raw[7] as i64,
            axis: raw[8] as u32,
            size: raw[9] as i64,
        })
    }
}

impl std::fmt::Display for DebugRecord {
    /// Numba's `debug=True` wording.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "IndexError: tid=[{},{},{}] ctaid=[{},{},{}]: index {} is out of bounds for axis {} with size {}",
            self.tid[0],
            self.tid[1],
            self.tid[2],
            self.ctaid[0],
            self.ctaid[1],
            self.ctaid[2],
            self.index,
            self.axis,
            self.size
        )
    }
}

/// Parses, verifies and compiles text-form IR to PTX in one step.
pub fn compile_ptx_text(src: &str, opts: &PtxOptions) -> Result<String, CodegenError> {
    let m = text::parse_module(src)?;
    compile_ptx(&m, opts)
}
