//! Codegen: lowers port's kernel IR to LLVM IR with inkwell, then to PTX
//! through LLVM's NVPTX backend (libdevice linked for math), and JIT-compiles
//! the same IR for the host as a simulator that runs every thread of the grid.
//!
//! Nothing is implemented here yet: the codegen issue fills it.
