//! PTX through LLVM's NVPTX backend: the GPU architecture, libdevice, the O3
//! pipeline and the target machine.
//!
//! libdevice is linked only when the module calls a math function. It is
//! opened lazily and its functions turned `linkonce_odr`, so the linker
//! reads and copies only the functions a kernel calls (and what they call):
//! this takes IR → PTX for a math kernel from ~80 ms to ~25 ms. After
//! linking, everything but the kernels is internal, so O3 inlines it.
//! `nvvm-reflect-ftz` tells libdevice's `__nvvm_reflect` queries whether
//! `--fastmath` flushes denormals; the NVVMReflect pass comes with the NVPTX
//! target machine's pipeline callbacks, so `default<O3>` runs it.

use std::path::{Path, PathBuf};
use std::sync::Once;

use inkwell::context::{AsContextRef, Context};
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module as LlvmModule};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine,
    TargetTriple,
};
use inkwell::values::{BasicValueEnum, InstructionOpcode, IntValue, Operand};
use inkwell::OptimizationLevel;

use crate::error::CodegenError;
use crate::ir::Module;
use crate::lower::{lower_module, LowerOptions, Target};

/// A GPU architecture port compiles for (`sm_70` … `sm_90`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arch(u32);

impl Arch {
    /// Every architecture LLVM 19's NVPTX backend and port support.
    pub const SUPPORTED: [u32; 8] = [70, 72, 75, 80, 86, 87, 89, 90];
    pub const DEFAULT: Arch = Arch(90);

    /// Parses `sm_80`, `80`, `8.0` or `compute_80`.
    pub fn parse(s: &str) -> Result<Arch, CodegenError> {
        let t = s.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(t);
        let n = if let Some((maj, min)) = digits.split_once('.') {
            match (maj.parse::<u32>(), min.parse::<u32>()) {
                (Ok(a), Ok(b)) if b < 10 => Some(a * 10 + b),
                _ => None,
            }
        } else {
            digits.parse::<u32>().ok()
        };
        match n {
            Some(n) if Self::SUPPORTED.contains(&n) => Ok(Arch(n)),
            _ => Err(CodegenError::UnknownArch {
                given: s.to_string(),
                supported: Self::SUPPORTED
                    .iter()
                    .map(|n| format!("sm_{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// The compute capability times ten (`80` for `sm_80`).
    pub fn number(self) -> u32 {
        self.0
    }

    pub fn name(self) -> String {
        format!("sm_{}", self.0)
    }

    /// The architecture of the first GPU on this machine, if `nvidia-smi`
    /// reports one; a GPU newer than `sm_90` gets `sm_90` (its driver JIT-
    /// compiles older PTX). `None` when there is no GPU or no driver.
    pub fn detect_device() -> Option<Arch> {
        let out = std::process::Command::new("nvidia-smi")
            .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let first = text.lines().next()?.trim();
        let n = match first.split_once('.') {
            Some((a, b)) => a.parse::<u32>().ok()? * 10 + b.parse::<u32>().ok()?,
            None => first.parse::<u32>().ok()?,
        };
        if n > 90 {
            return Some(Arch(90));
        }
        // The newest supported architecture not above the device's.
        Self::SUPPORTED
            .iter()
            .rev()
            .find(|&&s| s <= n)
            .map(|&s| Arch(s))
    }

    /// The device's architecture when a GPU is present, else `sm_90`.
    pub fn default_for_this_machine() -> Arch {
        Self::detect_device().unwrap_or(Self::DEFAULT)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}", self.0)
    }
}

/// Options for [`compile_ptx`].
#[derive(Clone, Debug)]
pub struct PtxOptions {
    pub arch: Arch,
    /// Fast-math flags on floating-point instructions and flush-to-zero in
    /// libdevice. Off by default: results then match the simulator closely.
    pub fastmath: bool,
    /// Bounds-checked array access; kernels take a trailing error-record
    /// pointer (see [`crate::lower`]).
    pub debug: bool,
    /// libdevice to link; `None` searches (see [`find_libdevice`]).
    pub libdevice: Option<PathBuf>,
}

impl Default for PtxOptions {
    fn default() -> Self {
        PtxOptions {
            arch: Arch::DEFAULT,
            fastmath: false,
            debug: false,
            libdevice: None,
        }
    }
}

pub(crate) fn init_llvm_targets() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        LlvmTarget::initialize_nvptx(&InitializationConfig::default());
        // The host target is only needed by the simulator; a failure shows up
        // there as "cannot create the host target machine".
        let _ = LlvmTarget::initialize_native(&InitializationConfig::default());
    });
}

const NVPTX_TRIPLE: &str = "nvptx64-nvidia-cuda";

fn nvptx_machine(arch: Arch) -> Result<TargetMachine, CodegenError> {
    init_llvm_targets();
    let triple = TargetTriple::create(NVPTX_TRIPLE);
    let target = LlvmTarget::from_triple(&triple)
        .map_err(|e| CodegenError::llvm("finding the NVPTX target", e.to_string()))?;
    target
        .create_target_machine(
            &triple,
            &arch.name(),
            "",
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| CodegenError::llvm("creating the NVPTX target machine", arch.name()))
}

/// Where [`find_libdevice`] looks, in order:
/// 1. `$PORT_LIBDEVICE` (a file);
/// 2. `$CUDA_HOME/nvvm/libdevice/libdevice.10.bc` (also `$CUDA_PATH`);
/// 3. `../libdevice/libdevice.10.bc` from the executable's folder: the copy
///    the wheel carries (`port/bin/port`, or `port/libc/ld-linux…` when
///    port runs through the wheel's own loader);
/// 4. the `nvidia-cuda-nvcc-cu12` package in `$VIRTUAL_ENV`, then in `./.venv`
///    and in the `.venv` of each parent directory
///    (`lib/python3*/site-packages/nvidia/cuda_nvcc/nvvm/libdevice/`);
/// 5. `/usr/local/cuda/nvvm/libdevice/libdevice.10.bc`.
pub fn libdevice_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("PORT_LIBDEVICE") {
        out.push(PathBuf::from(p));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = std::env::var_os(var) {
            out.push(PathBuf::from(p).join("nvvm/libdevice/libdevice.10.bc"));
        }
    }
    if let Some(package) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
    {
        out.push(package.join("libdevice/libdevice.10.bc"));
    }
    let mut venvs = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV") {
        venvs.push(PathBuf::from(v));
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            venvs.push(dir.join(".venv"));
        }
    }
    // A port built in its checkout (`target/release/port`) finds the
    // checkout's .venv wherever it is run from.
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1) {
            venvs.push(dir.join(".venv"));
        }
    }
    for v in venvs {
        out.extend(site_package_libdevice(&v));
    }
    out.push(PathBuf::from(
        "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
    ));
    out
}

/// libdevice in the virtual environment of `python` (`VENV/bin/python`), if
/// its nvidia-cuda-nvcc-cu12 package is installed there.
pub fn libdevice_near_python(python: &Path) -> Option<PathBuf> {
    let venv = python.parent()?.parent()?;
    site_package_libdevice(venv)
        .into_iter()
        .find(|p| p.is_file())
}

fn site_package_libdevice(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return out;
    };
    let mut pythons: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
        })
        .collect();
    pythons.sort();
    for py in pythons {
        out.push(py.join("site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"));
    }
    out
}

/// The first existing libdevice among [`libdevice_candidates`].
pub fn find_libdevice() -> Result<PathBuf, CodegenError> {
    let candidates = libdevice_candidates();
    for c in &candidates {
        if c.is_file() {
            return Ok(c.clone());
        }
    }
    Err(CodegenError::LibdeviceNotFound {
        searched: candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn resolve_libdevice(opts: &PtxOptions) -> Result<PathBuf, CodegenError> {
    match &opts.libdevice {
        Some(p) if p.is_file() => Ok(p.clone()),
        Some(p) => Err(CodegenError::LibdeviceNotFound {
            searched: p.display().to_string(),
        }),
        None => find_libdevice(),
    }
}

/// Builds, links and optimises the NVPTX module; shared by [`compile_ptx`]
/// and [`emit_llvm_ir`].
fn optimized_module<'ctx>(
    ctx: &'ctx Context,
    m: &Module,
    opts: &PtxOptions,
    tm: &TargetMachine,
) -> Result<LlvmModule<'ctx>, CodegenError> {
    crate::verify::verify_module(m)?;
    // Find libdevice before doing any work, so a missing file fails fast.
    let libdevice = if m.uses_math() {
        Some(resolve_libdevice(opts)?)
    } else {
        None
    };
    let lm = lower_module(
        ctx,
        m,
        LowerOptions {
            target: Target::Ptx,
            debug: opts.debug,
            fastmath: opts.fastmath,
        },
        "port",
    )?;
    lm.set_triple(&tm.get_triple());
    lm.set_data_layout(&tm.get_target_data().get_data_layout());
    if let Some(path) = libdevice {
        let lib = load_libdevice_lazily(ctx, &path)?;
        // libdevice says `nvptx64-nvidia-gpulibs`; make it ours to link quietly.
        lib.set_triple(&tm.get_triple());
        lib.set_data_layout(&tm.get_target_data().get_data_layout());
        // As linkonce_odr, a libdevice function is linked (and read from the
        // file) only if something calls it: a handful instead of all ~500.
        for f in lib.get_functions() {
            if !f.as_global_value().is_declaration() {
                f.set_linkage(Linkage::LinkOnceODR);
            }
        }
        lm.link_in_module(lib)
            .map_err(|e| CodegenError::LibdeviceInvalid {
                path,
                message: e.to_string(),
            })?;
        resolve_prec_sqrt(ctx, &lm, !opts.fastmath);
    }
    // Everything but the kernels is internal: O3 inlines device functions
    // and drops the libdevice functions nobody calls.
    let kernels: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
    for f in lm.get_functions() {
        let name = f.get_name().to_string_lossy();
        if f.count_basic_blocks() > 0 && !kernels.contains(&name.as_ref()) {
            f.set_linkage(Linkage::Internal);
        }
    }
    lm.run_passes("default<O3>", tm, PassBuilderOptions::create())
        .map_err(|e| CodegenError::llvm("running the O3 pipeline", e.to_string()))?;
    Ok(lm)
}

/// Answers libdevice's `__nvvm_reflect("__CUDA_PREC_SQRT")` queries, which
/// LLVM 19's NVVMReflect pass does not know and would answer 0 (approximate
/// square roots in `sqrtf`, `hypotf`, `asinhf`, `acoshf`). Like nvcc and
/// Numba, port uses IEEE square roots unless `--fastmath` is given.
fn resolve_prec_sqrt<'ctx>(ctx: &'ctx Context, lm: &LlvmModule<'ctx>, precise: bool) {
    let answer = ctx.i32_type().const_int(u64::from(precise), false);
    for f in lm.get_functions() {
        for bb in f.get_basic_blocks() {
            let mut next = bb.get_first_instruction();
            while let Some(inst) = next {
                next = inst.get_next_instruction();
                if inst.get_opcode() != InstructionOpcode::Call || inst.get_num_operands() != 2 {
                    continue;
                }
                let callee = match inst.get_operand(1) {
                    Some(Operand::Value(BasicValueEnum::PointerValue(p))) => p,
                    _ => continue,
                };
                if callee.get_name().to_bytes() != b"__nvvm_reflect" {
                    continue;
                }
                let Some(Operand::Value(BasicValueEnum::PointerValue(arg))) = inst.get_operand(0)
                else {
                    continue;
                };
                let query = arg
                    .get_name()
                    .to_str()
                    .ok()
                    .and_then(|name| lm.get_global(name))
                    .and_then(|g| g.get_initializer())
                    .and_then(|init| match init {
                        BasicValueEnum::ArrayValue(a) => a
                            .as_const_string()
                            .map(|b| b.strip_suffix(b"\0").unwrap_or(b) == b"__CUDA_PREC_SQRT"),
                        _ => None,
                    });
                if query == Some(true) {
                    if let Ok(v) = IntValue::try_from(inst) {
                        v.replace_all_uses_with(answer);
                        inst.erase_from_basic_block();
                    }
                }
            }
        }
    }
}

/// Opens libdevice without reading the function bodies; the linker reads
/// the ones it needs.
fn load_libdevice_lazily<'ctx>(
    ctx: &'ctx Context,
    path: &Path,
) -> Result<LlvmModule<'ctx>, CodegenError> {
    let invalid = |message: String| CodegenError::LibdeviceInvalid {
        path: path.to_path_buf(),
        message,
    };
    let buf = MemoryBuffer::create_from_file(path).map_err(|e| invalid(e.to_string()))?;
    let mut raw: inkwell::llvm_sys::prelude::LLVMModuleRef = std::ptr::null_mut();
    let mut message: *mut std::ffi::c_char = std::ptr::null_mut();
    // The older entry point is used on purpose: it returns the error text,
    // where `…InContext2` reports through the context's default diagnostic
    // handler, which exits the process.
    // SAFETY: the context and buffer are live LLVM objects and `raw` and
    // `message` are valid out-pointers. On success LLVM takes ownership of
    // the buffer (so it must not be dropped here) and returns a module owned
    // by us; on failure the buffer stays ours and `message` is a C string
    // that we must dispose of.
    #[allow(deprecated)]
    let failed = unsafe {
        inkwell::llvm_sys::bit_reader::LLVMGetBitcodeModuleInContext(
            ctx.as_ctx_ref(),
            buf.as_mut_ptr(),
            &mut raw,
            &mut message,
        )
    };
    if failed != 0 || raw.is_null() {
        let text = if message.is_null() {
            "not an LLVM bitcode file".to_string()
        } else {
            // SAFETY: LLVM set `message` to a NUL-terminated string it
            // allocated; it is read once and then disposed of with LLVM's own
            // deallocator.
            unsafe {
                let t = std::ffi::CStr::from_ptr(message)
                    .to_string_lossy()
                    .into_owned();
                inkwell::llvm_sys::core::LLVMDisposeMessage(message);
                t
            }
        };
        return Err(invalid(text));
    }
    std::mem::forget(buf);
    // SAFETY: `raw` is the non-null module just created in `ctx`; inkwell's
    // Module takes over disposing it (or handing it to the linker).
    Ok(unsafe { LlvmModule::new(raw) })
}

/// Compiles every kernel of `m` to one PTX module.
pub fn compile_ptx(m: &Module, opts: &PtxOptions) -> Result<String, CodegenError> {
    let tm = nvptx_machine(opts.arch)?;
    let ctx = Context::create();
    let lm = optimized_module(&ctx, m, opts, &tm)?;
    let buf = tm
        .write_to_memory_buffer(&lm, FileType::Assembly)
        .map_err(|e| CodegenError::llvm("emitting PTX", e.to_string()))?;
    String::from_utf8(buf.as_slice().to_vec())
        .map_err(|e| CodegenError::llvm("emitting PTX", e.to_string()))
        .map(|s| s.trim_end_matches('\0').to_string())
}

/// The optimised LLVM IR that [`compile_ptx`] turns into PTX.
pub fn emit_llvm_ir(m: &Module, opts: &PtxOptions) -> Result<String, CodegenError> {
    let tm = nvptx_machine(opts.arch)?;
    let ctx = Context::create();
    let lm = optimized_module(&ctx, m, opts, &tm)?;
    Ok(lm.print_to_string().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_spellings() {
        for s in ["sm_80", "80", "8.0", "compute_80"] {
            assert_eq!(Arch::parse(s).unwrap(), Arch(80), "{s}");
        }
        assert_eq!(Arch::parse("sm_90").unwrap().name(), "sm_90");
        let e = Arch::parse("sm_60").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown --arch `sm_60`: port compiles for sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90"
        );
        assert!(Arch::parse("sm_100").is_err());
        assert!(Arch::parse("banana").is_err());
    }

    #[test]
    fn missing_libdevice_is_a_clear_error() {
        let m = crate::text::parse_module(
            "kernel k(x: f64[::1]) { parallel for i in range(x.shape[0]) { x[i] = exp(x[i]); } }",
        )
        .unwrap();
        let opts = PtxOptions {
            libdevice: Some(PathBuf::from("/nonexistent/libdevice.10.bc")),
            ..PtxOptions::default()
        };
        let e = compile_ptx(&m, &opts).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "libdevice (libdevice.10.bc) not found; looked in /nonexistent/libdevice.10.bc"
            ),
            "{e}"
        );
        assert!(e.contains("scripts/setup.sh"), "{e}");
        // Without math, libdevice is not needed at all.
        let m = crate::text::parse_module(
            "kernel k(x: f64[::1]) { parallel for i in range(x.shape[0]) { x[i] = x[i] * 2.0; } }",
        )
        .unwrap();
        let ptx = compile_ptx(&m, &opts).unwrap();
        assert!(ptx.contains(".visible .entry k("), "{ptx}");
    }

    #[test]
    fn bad_libdevice_file_is_reported() {
        let dir = std::env::temp_dir().join(format!("port-codegen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("libdevice.10.bc");
        std::fs::write(&bad, b"not bitcode").unwrap();
        let m = crate::text::parse_module(
            "kernel k(x: f32[::1]) { parallel for i in range(x.shape[0]) { x[i] = sin(x[i]); } }",
        )
        .unwrap();
        let opts = PtxOptions {
            libdevice: Some(bad.clone()),
            ..PtxOptions::default()
        };
        let e = compile_ptx(&m, &opts).unwrap_err();
        assert!(matches!(e, CodegenError::LibdeviceInvalid { .. }), "{e}");
        assert!(
            e.to_string().starts_with("cannot load libdevice from "),
            "{e}"
        );
        assert!(e.to_string().contains("bitcode"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
