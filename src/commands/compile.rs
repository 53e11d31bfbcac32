//! `port compile KERNEL.pir`: compile kernel IR (text form) to PTX, LLVM IR,
//! or the verified IR itself. A developer tool: it shows what codegen makes
//! of a kernel, and it is what the compile-latency benchmark times.

use std::path::PathBuf;

use anyhow::{Context, Result};
use port_codegen::{compile_ptx, emit_llvm_ir, text, Arch, CodegenError, PtxOptions};

use crate::UserError;

/// Compile kernel IR to PTX for NVIDIA GPUs (through LLVM's NVPTX backend).
///
/// Reads port's kernel IR in its text form (`.pir`, the form `port migrate
/// --emit ir` prints), verifies it, and writes PTX that `ptxas` and the CUDA
/// driver accept. Math functions are linked from libdevice, found in
/// $PORT_LIBDEVICE, $CUDA_HOME, or the nvidia-cuda-nvcc-cu12 package of the
/// active or ./.venv virtual environment.
#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// Kernel IR in text form (.pir).
    pub input: PathBuf,

    /// GPU architecture: sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89 or
    /// sm_90 (also written 80 or 8.0). Default: this machine's GPU, else sm_90.
    #[arg(long)]
    pub arch: Option<String>,

    /// Allow fast-math transformations (reassociation, approximate division,
    /// flush-to-zero in libdevice). Off by default.
    #[arg(long)]
    pub fastmath: bool,

    /// Bounds-check every array access; the kernel then takes one extra
    /// trailing parameter, a 10 × u64 error record.
    #[arg(long)]
    pub debug: bool,

    /// What to write: PTX, the optimised LLVM IR, or the verified kernel IR.
    #[arg(long, value_enum, default_value_t = Emit::Ptx)]
    pub emit: Emit,

    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// PTX assembly.
    Ptx,
    /// LLVM IR for nvptx64-nvidia-cuda, after the O3 pipeline.
    Llvm,
    /// The kernel IR, verified and pretty-printed.
    Ir,
}

/// Errors in the kernel or the set-up are the user's to fix (exit code 2);
/// an LLVM failure is port's bug (exit code 1).
fn classify(input: &std::path::Path, e: CodegenError) -> anyhow::Error {
    match e {
        CodegenError::Llvm { .. } => anyhow::Error::new(e).context(format!("{}", input.display())),
        other => UserError::new(format!("{}: {other}", input.display())).into(),
    }
}

pub fn run(args: &CompileArgs) -> Result<()> {
    let src = std::fs::read_to_string(&args.input)
        .map_err(|e| UserError::new(format!("cannot read {}: {e}", args.input.display())))?;
    let arch = match &args.arch {
        Some(a) => Arch::parse(a).map_err(|e| UserError::new(e.to_string()))?,
        None => Arch::default_for_this_machine(),
    };
    let module = text::parse_module(&src).map_err(|e| classify(&args.input, e.into()))?;
    let opts = PtxOptions {
        arch,
        fastmath: args.fastmath,
        debug: args.debug,
        libdevice: None,
    };
    let out = match args.emit {
        Emit::Ptx => compile_ptx(&module, &opts),
        Emit::Llvm => emit_llvm_ir(&module, &opts),
        Emit::Ir => port_codegen::verify::verify_module(&module)
            .map(|()| text::print_module(&module))
            .map_err(CodegenError::from),
    }
    .map_err(|e| classify(&args.input, e))?;
    match &args.output {
        Some(path) => std::fs::write(path, out)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(|e| UserError::new(format!("{e:#}")).into()),
        None => {
            print!("{out}");
            Ok(())
        }
    }
}
