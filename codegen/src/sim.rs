//! The host simulator: the same kernel IR, lowered for the host CPU and
//! JIT-compiled with MCJIT, runs every thread of the grid over real buffers.
//!
//! Thread and block indices come from a per-thread context (`ThreadCtx`)
//! whose address is a hidden first parameter of every lowered function.
//!
//! # How barriers are honoured
//!
//! - A kernel without `syncthreads()` runs as one thread loop a block
//!   (`serial`, below, with no barrier to split it): one call a block. One
//!   with a `return` is called once a thread. Blocks are shared out among
//!   rayon's threads (one a core, started once), as blocks of a real grid
//!   run in any order; a grid of fewer than `SMALL_GRID_THREADS` threads
//!   runs on the launching thread. Atomics are real atomics.
//! - A kernel with a barrier runs as thread loops where it can (`serial`):
//!   the code between two barriers is a loop over the block's threads, a
//!   local that lives across a barrier one element per thread of a block
//!   array, and one call runs a whole block. Blocks are shared out as in the
//!   fast path. Kernels that loops cannot express (a `return`, a `break`
//!   out of the code between barriers) and `SimOptions::fibers` keep the
//!   fibers below, which the loops are tested against.
//! - Otherwise a kernel with a barrier runs each block's threads as coroutines
//!   (stackful, with `corosensei`) on one OS thread: `syncthreads()` calls
//!   back into Rust (`port_sim_barrier`, mapped into the JIT), which
//!   suspends the thread; once every live thread of the block has suspended
//!   or left, the next round resumes them all. A thread that leaves the
//!   kernel stops counting towards the barrier, so a kernel that exits
//!   early (or stops on a debug bounds error) cannot hang the simulator.
//!   Blocks are shared out among a few OS threads, as in the fast path. (One
//!   OS thread per GPU thread, as Numba's CUDA simulator does, spent minutes
//!   in the kernel's futexes on programs that reduce inside a loop.) The
//!   verifier rejects barriers in divergent code, where a GPU would hang or
//!   misbehave.
//!
//! Math calls go to the host's libm (`sin`, `sinf`, …), not libdevice: the
//! results agree with the GPU's to within libdevice's documented ulp errors.
//!
//! In debug mode an out-of-bounds access records the thread, block, index,
//! axis and size in an error record (the same one the GPU build fills), that
//! thread stops, and [`Simulator::launch`] returns [`SimError::IndexError`],
//! whose text follows Numba's `debug=True`:
//! `IndexError: tid=[10,0,0] ctaid=[0,0,0]: index 10 is out of bounds for axis 0 with size 10`.

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::collections::HashMap;
use std::mem::ManuallyDrop;

use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, RelocMode, Target as LlvmTarget, TargetMachine};
use inkwell::OptimizationLevel;

use crate::error::CodegenError;
use crate::ir::{Kernel, Module, ScalarType, Type, OVERFLOW_FLAG};
use crate::lower::{
    entry_symbol, kernel_abi, lower_module, shared_layout, LowerOptions, Target, BARRIER_SYMBOL,
    ERROR_RECORD_LEN,
};
use crate::verify::MAX_BLOCK_THREADS;
use crate::DebugRecord;

/// Grids of fewer threads than this run on the launching thread alone.
const SMALL_GRID_THREADS: u64 = 4096;

/// Options for [`Simulator::new`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SimOptions {
    /// Bounds-check every array access.
    pub debug: bool,
    /// Run kernels with barriers as fibers even where thread loops can (the
    /// reference the thread loops are tested against).
    pub fibers: bool,
}

impl SimOptions {
    /// Bounds checks on, thread loops where they can be.
    pub const DEBUG: SimOptions = SimOptions {
        debug: true,
        fibers: false,
    };
}

/// Grid or block dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub fn count(self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<[u32; 1]> for Dim3 {
    fn from([x]: [u32; 1]) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<[u32; 2]> for Dim3 {
    fn from([x, y]: [u32; 2]) -> Dim3 {
        Dim3 { x, y, z: 1 }
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Dim3 {
        Dim3 { x, y, z }
    }
}

/// The elements of a simulator array.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayData {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    /// `complex64` elements as `[re, im]`.
    C64(Vec<[f32; 2]>),
    /// `complex128` elements as `[re, im]`.
    C128(Vec<[f64; 2]>),
}

impl ArrayData {
    pub fn elem(&self) -> ScalarType {
        match self {
            ArrayData::Bool(_) => ScalarType::Bool,
            ArrayData::I32(_) => ScalarType::I32,
            ArrayData::I64(_) => ScalarType::I64,
            ArrayData::F32(_) => ScalarType::F32,
            ArrayData::F64(_) => ScalarType::F64,
            ArrayData::I8(_) => ScalarType::I8,
            ArrayData::I16(_) => ScalarType::I16,
            ArrayData::U8(_) => ScalarType::U8,
            ArrayData::U16(_) => ScalarType::U16,
            ArrayData::U32(_) => ScalarType::U32,
            ArrayData::U64(_) => ScalarType::U64,
            ArrayData::C64(_) => ScalarType::C64,
            ArrayData::C128(_) => ScalarType::C128,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ArrayData::Bool(v) => v.len(),
            ArrayData::I32(v) => v.len(),
            ArrayData::I64(v) => v.len(),
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
            ArrayData::I8(v) => v.len(),
            ArrayData::I16(v) => v.len(),
            ArrayData::U8(v) => v.len(),
            ArrayData::U16(v) => v.len(),
            ArrayData::U32(v) => v.len(),
            ArrayData::U64(v) => v.len(),
            ArrayData::C64(v) => v.len(),
            ArrayData::C128(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn as_ptr(&self) -> *const u8 {
        match self {
            ArrayData::Bool(v) => v.as_ptr().cast(),
            ArrayData::I32(v) => v.as_ptr().cast(),
            ArrayData::I64(v) => v.as_ptr().cast(),
            ArrayData::F32(v) => v.as_ptr().cast(),
            ArrayData::F64(v) => v.as_ptr().cast(),
            ArrayData::I8(v) => v.as_ptr().cast(),
            ArrayData::I16(v) => v.as_ptr().cast(),
            ArrayData::U8(v) => v.as_ptr().cast(),
            ArrayData::U16(v) => v.as_ptr().cast(),
            ArrayData::U32(v) => v.as_ptr().cast(),
            ArrayData::U64(v) => v.as_ptr().cast(),
            ArrayData::C64(v) => v.as_ptr().cast(),
            ArrayData::C128(v) => v.as_ptr().cast(),
        }
    }

    /// The elements' bytes as the kernels store them (C order,
    /// native-endian, `bool` one byte, complex `[re, im]`), without a copy.
    pub fn as_bytes(&self) -> &[u8] {
        let n = self.len() * self.elem().size_bytes();
        // SAFETY: every element type is a primitive number, `bool` (one
        // byte, 0 or 1) or an array of two floats: no padding, all `n`
        // bytes initialised, and u8 has no alignment to meet.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), n) }
    }

    /// [`Self::as_bytes`], writable, where every bit pattern is a value:
    /// `None` for `bool` (a byte other than 0 or 1 is no `bool`).
    pub fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        if matches!(self, ArrayData::Bool(_)) {
            return None;
        }
        let n = self.len() * self.elem().size_bytes();
        // SAFETY: as in `as_bytes`; and any bytes written are a value of
        // every element type but `bool`.
        Some(unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), n) })
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            ArrayData::Bool(v) => v.as_mut_ptr().cast(),
            ArrayData::I32(v) => v.as_mut_ptr().cast(),
            ArrayData::I64(v) => v.as_mut_ptr().cast(),
            ArrayData::F32(v) => v.as_mut_ptr().cast(),
            ArrayData::F64(v) => v.as_mut_ptr().cast(),
            ArrayData::I8(v) => v.as_mut_ptr().cast(),
            ArrayData::I16(v) => v.as_mut_ptr().cast(),
            ArrayData::U8(v) => v.as_mut_ptr().cast(),
            ArrayData::U16(v) => v.as_mut_ptr().cast(),
            ArrayData::U32(v) => v.as_mut_ptr().cast(),
            ArrayData::U64(v) => v.as_mut_ptr().cast(),
            ArrayData::C64(v) => v.as_mut_ptr().cast(),
            ArrayData::C128(v) => v.as_mut_ptr().cast(),
        }
    }
}

macro_rules! from_vec {
    ($t:ty, $v:ident) => {
        impl From<Vec<$t>> for ArrayData {
            fn from(v: Vec<$t>) -> ArrayData {
                ArrayData::$v(v)
            }
        }
    };
}
from_vec!(bool, Bool);
from_vec!(i32, I32);
from_vec!(i64, I64);
from_vec!(f32, F32);
from_vec!(f64, F64);
from_vec!(i8, I8);
from_vec!(i16, I16);
from_vec!(u8, U8);
from_vec!(u16, U16);
from_vec!(u32, U32);
from_vec!(u64, U64);
from_vec!([f32; 2], C64);
from_vec!([f64; 2], C128);

/// An array argument: a buffer with a shape and element strides.
/// Strides are in elements and non-negative; every element the shape and
/// strides reach lies inside the buffer (checked on construction).
#[derive(Clone, Debug, PartialEq)]
pub struct SimArray {
    data: ArrayData,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

impl SimArray {
    /// A C-contiguous array.
    pub fn new(data: impl Into<ArrayData>, shape: &[usize]) -> Result<SimArray, SimError> {
        let data = data.into();
        let n: usize = shape.iter().product();
        if n != data.len() {
            return Err(SimError::BadArray(format!(
                "shape {shape:?} holds {n} elements but the buffer has {}",
                data.len()
            )));
        }
        let mut strides = vec![1usize; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        SimArray::strided(data, shape, &strides)
    }

    /// An array of any layout; `strides` in elements.
    pub fn strided(
        data: impl Into<ArrayData>,
        shape: &[usize],
        strides: &[usize],
    ) -> Result<SimArray, SimError> {
        let data = data.into();
        if shape.is_empty()
            || shape.len() > crate::ir::MAX_DIMS as usize
            || shape.len() != strides.len()
        {
            return Err(SimError::BadArray(format!(
                "an array has 1 to {} dimensions with one stride each (shape {shape:?}, strides {strides:?})",
                crate::ir::MAX_DIMS
            )));
        }
        if !shape.contains(&0) {
            let last: usize = shape.iter().zip(strides).map(|(&n, &s)| (n - 1) * s).sum();
            if last >= data.len() {
                return Err(SimError::BadArray(format!(
                    "shape {shape:?} with strides {strides:?} reaches element {last}, but the buffer has {}",
                    data.len()
                )));
            }
        }
        Ok(SimArray {
            data,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
        })
    }

    pub fn data(&self) -> &ArrayData {
        &self.data
    }

    pub fn into_data(self) -> ArrayData {
        self.data
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    pub fn is_c_contiguous(&self) -> bool {
        let mut expect = 1usize;
        for d in (0..self.shape.len()).rev() {
            if self.shape[d] > 1 && self.strides[d] != expect {
                return false;
            }
            expect *= self.shape[d];
        }
        true
    }

    pub fn as_f32(&self) -> Option<&[f32]> {
        match &self.data {
            ArrayData::F32(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<&[f64]> {
        match &self.data {
            ArrayData::F64(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_i32(&self) -> Option<&[i32]> {
        match &self.data {
            ArrayData::I32(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<&[i64]> {
        match &self.data {
            ArrayData::I64(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<&[bool]> {
        match &self.data {
            ArrayData::Bool(v) => Some(v),
            _ => None,
        }
    }
}

/// A kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum SimArg {
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    I8(i8),
    I16(i16),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    Array(SimArray),
}

impl SimArg {
    pub fn as_array(&self) -> Option<&SimArray> {
        match self {
            SimArg::Array(a) => Some(a),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            SimArg::Bool(_) => "bool".into(),
            SimArg::I32(_) => "i32".into(),
            SimArg::I64(_) => "i64".into(),
            SimArg::F32(_) => "f32".into(),
            SimArg::F64(_) => "f64".into(),
            SimArg::I8(_) => "i8".into(),
            SimArg::I16(_) => "i16".into(),
            SimArg::U8(_) => "u8".into(),
            SimArg::U16(_) => "u16".into(),
            SimArg::U32(_) => "u32".into(),
            SimArg::U64(_) => "u64".into(),
            SimArg::Array(a) => format!("{}[{}-d]", a.data.elem(), a.shape.len()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Codegen(#[from] CodegenError),

    /// An out-of-bounds access in debug mode, reported like Numba's `debug=True`.
    #[error("IndexError: tid=[{},{},{}] ctaid=[{},{},{}]: index {index} is out of bounds for axis {axis} with size {size}", tid[0], tid[1], tid[2], ctaid[0], ctaid[1], ctaid[2])]
    IndexError {
        kernel: String,
        tid: [u32; 3],
        ctaid: [u32; 3],
        index: i64,
        axis: u32,
        size: i64,
    },

    /// Python int arithmetic (`BinOp::CheckedMul`…) left `i64`, where
    /// Python's int has no bound: the launch's results are not Python's.
    #[error("kernel `{kernel}`: Python int arithmetic overflowed int64 (Python's ints do not)")]
    Overflow { kernel: String },

    #[error("kernel `{kernel}`: {message}")]
    BadLaunch { kernel: String, message: String },

    #[error("kernel `{kernel}`: argument `{param}`: {message}")]
    BadArgument {
        kernel: String,
        param: String,
        message: String,
    },

    #[error("invalid simulator array: {0}")]
    BadArray(String),

    #[error("cannot JIT-compile the kernels for the host: {0}")]
    Jit(String),
}

/// Per-thread state the JIT code reads; layout mirrors `lower::host_ctx`.
#[repr(C)]
struct ThreadCtx {
    tid: [u32; 3],
    ctaid: [u32; 3],
    ntid: [u32; 3],
    nctaid: [u32; 3],
    shared: *mut u8,
    /// The coroutine handle of this GPU thread (kernels with barriers), or
    /// null (the fast path, where `syncthreads()` never runs).
    yielder: *const Yielder<(), ()>,
}

/// Stack of one simulated GPU thread of a kernel with barriers: the JIT
/// code and libm need little; the pages are only touched when used.
const FIBER_STACK: usize = 256 << 10;

/// Fiber stacks kept from one launch to the next (at most `POOL_STACKS`):
/// a host schedule that reduces inside a loop launches thousands of
/// kernels with barriers, and a stack mapped and unmapped per thread per
/// launch cost each launch its page faults and the other workers' TLB
/// shootdowns (a 2,000-step power iteration spent 45 s in the kernel).
/// Resident memory is only the pages the threads touched (a few each).
static FIBER_STACKS: std::sync::Mutex<Vec<DefaultStack>> = std::sync::Mutex::new(Vec::new());
const POOL_STACKS: usize = 4 * MAX_BLOCK_THREADS as usize;

/// Up to `n` stacks from the pool, for one worker's blocks.
fn pooled_stacks(n: usize) -> Vec<DefaultStack> {
    let mut pool = FIBER_STACKS.lock().unwrap_or_else(|p| p.into_inner());
    let keep = pool.len().saturating_sub(n);
    pool.split_off(keep)
}

/// Gives a worker's stacks back to the pool, as many as it has room for.
fn return_stacks(mut stacks: Vec<DefaultStack>) {
    let mut pool = FIBER_STACKS.lock().unwrap_or_else(|p| p.into_inner());
    let room = POOL_STACKS.saturating_sub(pool.len());
    stacks.truncate(room);
    pool.append(&mut stacks);
}

/// `syncthreads()` on the host: called by JIT code.
extern "C" fn port_sim_barrier(ctx: *mut ThreadCtx) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: the JIT code passes on the context pointer it was given by
    // `run_thread`, which points to a live `ThreadCtx` on that thread's stack.
    let yielder = unsafe { (*ctx).yielder };
    if yielder.is_null() {
        return;
    }
    // SAFETY: `yielder` is the handle of the coroutine running this thread
    // (set by `run_block_fibers`), alive while the coroutine runs; we are on
    // that coroutine's stack, the only place `suspend` may be called from.
    unsafe { (*yielder).suspend(()) };
}

type EntryFn = unsafe extern "C" fn(*mut ThreadCtx, *const u64);

struct KernelEntry {
    entry: EntryFn,
    kernel: Kernel,
    shared_bytes: usize,
    has_barrier: bool,
    /// A kernel with barriers as thread loops (`serial`): its entry, run
    /// once per block, and its shared memory (per-thread locals included).
    serial: Option<(EntryFn, usize)>,
}

/// Kernels of one module, JIT-compiled for the host.
pub struct Simulator {
    kernels: HashMap<String, KernelEntry>,
    /// Launches pass the error record: in debug mode, or when the module
    /// checks Python int arithmetic for overflow.
    record: bool,
    // Dropped before `_context` (see `Drop`): the engine owns the code.
    engine: ManuallyDrop<ExecutionEngine<'static>>,
    _context: Box<Context>,
}

impl Drop for Simulator {
    fn drop(&mut self) {
        // SAFETY: `engine` is not used after this; it must go before the
        // context it was created in, which is dropped right after `drop`.
        unsafe { ManuallyDrop::drop(&mut self.engine) };
    }
}

impl Simulator {
    /// Verifies `module` and JIT-compiles all its kernels for the host.
    pub fn new(module: &Module, opts: SimOptions) -> Result<Simulator, SimError> {
        crate::verify::verify_module(module).map_err(CodegenError::from)?;
        crate::ptx::init_llvm_targets();

        let context = Box::new(Context::create());
        // SAFETY: the context lives in a Box owned by the Simulator, which
        // drops the engine (and with it every module and value made from
        // this reference) before the Box; nothing else keeps the reference.
        let ctx: &'static Context = unsafe { &*(context.as_ref() as *const Context) };
        let lower_opts = LowerOptions {
            target: Target::Host,
            debug: opts.debug,
            fastmath: false,
        };
        // Kernels with barriers also as thread loops, where they can be; a
        // module that would not lower so is lowered as it is (fibers only).
        let loops: Vec<Kernel> = match opts.fibers {
            true => Vec::new(),
            false => module
                .kernels
                .iter()
                .filter_map(crate::serial::serial_kernel)
                .collect(),
        };
        let with_loops = Module {
            device_functions: module.device_functions.clone(),
            kernels: module.kernels.iter().chain(&loops).cloned().collect(),
        };
        let (lm, loops) = match (!loops.is_empty())
            .then(|| lower_module(ctx, &with_loops, lower_opts, "port-sim"))
        {
            Some(Ok(lm)) => (lm, loops),
            _ => (
                lower_module(ctx, module, lower_opts, "port-sim")?,
                Vec::new(),
            ),
        };
        let triple = TargetMachine::get_default_triple();
        let target = LlvmTarget::from_triple(&triple).map_err(|e| SimError::Jit(e.to_string()))?;
        let cpu = TargetMachine::get_host_cpu_name();
        let features = TargetMachine::get_host_cpu_features();
        let tm = target
            .create_target_machine(
                &triple,
                &cpu.to_string_lossy(),
                &features.to_string_lossy(),
                OptimizationLevel::Default,
                RelocMode::Default,
                CodeModel::JITDefault,
            )
            .ok_or_else(|| SimError::Jit("cannot create the host target machine".into()))?;
        lm.set_triple(&triple);
        lm.set_data_layout(&tm.get_target_data().get_data_layout());
        lm.run_passes("default<O2>", &tm, PassBuilderOptions::create())
            .map_err(|e| SimError::Jit(e.to_string()))?;
        let barrier_fn = lm.get_function(BARRIER_SYMBOL);
        let engine = lm
            .create_jit_execution_engine(OptimizationLevel::Default)
            .map_err(|e| SimError::Jit(e.to_string()))?;
        if let Some(f) = barrier_fn {
            engine.add_global_mapping(&f, port_sim_barrier as *const () as usize);
        }
        let entry_of = |name: &str| -> Result<EntryFn, SimError> {
            let addr = engine
                .get_function_address(&entry_symbol(name))
                .map_err(|e| SimError::Jit(format!("{name}: {e:?}")))?;
            if addr == 0 {
                return Err(SimError::Jit(format!("no code for kernel `{name}`")));
            }
            // SAFETY: `addr` is the JIT-compiled `__port_entry_<k>`, which
            // `lower::host_entry` defines as `void (ptr ctx, ptr slots)`,
            // matching `EntryFn`; the engine keeps the code alive as long as
            // the Simulator.
            Ok(unsafe { std::mem::transmute::<usize, EntryFn>(addr) })
        };
        let mut kernels = HashMap::new();
        for k in &module.kernels {
            let thread_loops = loops
                .iter()
                .find(|s| s.name == crate::serial::serial_name(&k.name))
                .map(|s| Ok::<_, SimError>((entry_of(&s.name)?, shared_layout(s).1 as usize)))
                .transpose()?;
            kernels.insert(
                k.name.clone(),
                KernelEntry {
                    entry: entry_of(&k.name)?,
                    kernel: k.clone(),
                    shared_bytes: shared_layout(k).1 as usize,
                    has_barrier: k.has_barrier(),
                    serial: thread_loops,
                },
            );
        }
        Ok(Simulator {
            kernels,
            record: opts.debug || module.checks_overflow(),
            engine: ManuallyDrop::new(engine),
            _context: context,
        })
    }

    /// Runs `kernel` over the whole grid. Array arguments are read and
    /// written in place.
    pub fn launch(
        &self,
        kernel: &str,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        args: &mut [SimArg],
    ) -> Result<(), SimError> {
        let (grid, block) = (grid.into(), block.into());
        let k = self
            .kernels
            .get(kernel)
            .ok_or_else(|| CodegenError::NoSuchKernel(kernel.to_string()))?;
        let bad_launch = |message: String| SimError::BadLaunch {
            kernel: kernel.to_string(),
            message,
        };
        if grid.count() == 0 || block.count() == 0 {
            return Err(bad_launch(format!(
                "grid {grid:?} and block {block:?} must be at least 1 in every dimension"
            )));
        }
        if block.count() > MAX_BLOCK_THREADS {
            return Err(bad_launch(format!(
                "a block has at most {MAX_BLOCK_THREADS} threads, {block:?} has {}",
                block.count()
            )));
        }
        if block.z > 64 || grid.y > 65535 || grid.z > 65535 {
            return Err(bad_launch(format!(
                "grid {grid:?} / block {block:?} exceed CUDA's limits (block.z ≤ 64, grid.y and grid.z ≤ 65535)"
            )));
        }
        let mut slots = pack_args(&k.kernel, args, self.record)?;
        let mut record = [0u64; ERROR_RECORD_LEN];
        if self.record {
            slots.push(record.as_mut_ptr() as u64);
        }
        let launch = Launch {
            entry: k.entry,
            slots: slots.as_ptr() as usize,
            grid,
            block,
            shared_bytes: k.shared_bytes,
        };
        match k.serial {
            Some((entry, shared_bytes)) => Launch {
                entry,
                shared_bytes,
                ..launch
            }
            .run_blocks_serially(1),
            None if k.has_barrier => launch.run_blocks_as_fibers().map_err(&bad_launch)?,
            None => launch.run_blocks_serially(block.count()),
        }
        drop(slots);
        if self.record && record[0] == OVERFLOW_FLAG {
            return Err(SimError::Overflow {
                kernel: kernel.to_string(),
            });
        }
        if let Some(r) = self.record.then(|| DebugRecord::decode(&record)).flatten() {
            return Err(SimError::IndexError {
                kernel: kernel.to_string(),
                tid: r.tid,
                ctaid: r.ctaid,
                index: r.index,
                axis: r.axis,
                size: r.size,
            });
        }
        Ok(())
    }

    /// Whether `kernel` (one with barriers) runs as thread loops rather
    /// than fibers.
    pub fn runs_as_thread_loops(&self, kernel: &str) -> bool {
        self.kernels.get(kernel).is_some_and(|k| k.serial.is_some())
    }

    /// Names of the kernels this simulator can launch.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.kernels.keys().map(String::as_str).collect()
    }
}

/// Checks `args` against the kernel's parameters and flattens them into
/// 8-byte slots, in [`kernel_abi`] order.
fn pack_args(k: &Kernel, args: &mut [SimArg], record: bool) -> Result<Vec<u64>, SimError> {
    let bad = |param: &str, message: String| SimError::BadArgument {
        kernel: k.name.clone(),
        param: param.to_string(),
        message,
    };
    if args.len() != k.params.len() {
        return Err(SimError::BadLaunch {
            kernel: k.name.clone(),
            message: format!("takes {} argument(s), {} given", k.params.len(), args.len()),
        });
    }
    let mut slots = Vec::new();
    for (p, a) in k.params.iter().zip(args.iter_mut()) {
        let want = crate::text::type_text(p.ty);
        match (p.ty, a) {
            (Type::Scalar(ScalarType::Bool), SimArg::Bool(v)) => slots.push(u64::from(*v)),
            (Type::Scalar(ScalarType::I32), SimArg::I32(v)) => slots.push(u64::from(*v as u32)),
            (Type::Scalar(ScalarType::I64), SimArg::I64(v)) => slots.push(*v as u64),
            (Type::Scalar(ScalarType::F32), SimArg::F32(v)) => slots.push(u64::from(v.to_bits())),
            (Type::Scalar(ScalarType::F64), SimArg::F64(v)) => slots.push(v.to_bits()),
            (Type::Scalar(ScalarType::I8), SimArg::I8(v)) => slots.push(u64::from(*v as u8)),
            (Type::Scalar(ScalarType::I16), SimArg::I16(v)) => slots.push(u64::from(*v as u16)),
            (Type::Scalar(ScalarType::U8), SimArg::U8(v)) => slots.push(u64::from(*v)),
            (Type::Scalar(ScalarType::U16), SimArg::U16(v)) => slots.push(u64::from(*v)),
            (Type::Scalar(ScalarType::U32), SimArg::U32(v)) => slots.push(u64::from(*v)),
            (Type::Scalar(ScalarType::U64), SimArg::U64(v)) => slots.push(*v),
            (Type::Array(at), SimArg::Array(arr)) => {
                if arr.data.elem() != at.elem || arr.shape.len() != at.ndim as usize {
                    return Err(bad(
                        &p.name,
                        format!(
                            "expected {want}, got {}",
                            SimArg::Array(arr.clone()).describe()
                        ),
                    ));
                }
                if at.contiguous && !arr.is_c_contiguous() {
                    return Err(bad(
                        &p.name,
                        format!(
                            "the kernel takes a C-contiguous {want}, but the array has strides {:?} for shape {:?}",
                            arr.strides, arr.shape
                        ),
                    ));
                }
                slots.push(arr.data.as_mut_ptr() as u64);
                slots.extend(arr.shape.iter().map(|&n| n as u64));
                if !at.contiguous {
                    slots.extend(arr.strides.iter().map(|&s| s as u64));
                }
            }
            (_, a) => {
                return Err(bad(
                    &p.name,
                    format!("expected {want}, got {}", a.describe()),
                ))
            }
        }
    }
    debug_assert_eq!(
        slots.len() + usize::from(record),
        kernel_abi(k, record).len(),
        "slots follow the ABI"
    );
    Ok(slots)
}

#[derive(Clone, Copy)]
struct Launch {
    entry: EntryFn,
    /// Address of the argument slots, alive for the whole launch.
    slots: usize,
    grid: Dim3,
    block: Dim3,
    shared_bytes: usize,
}

fn unflatten(i: u64, d: Dim3) -> [u32; 3] {
    let x = (i % u64::from(d.x)) as u32;
    let y = ((i / u64::from(d.x)) % u64::from(d.y)) as u32;
    let z = (i / (u64::from(d.x) * u64::from(d.y))) as u32;
    [x, y, z]
}

impl Launch {
    fn ctx(
        &self,
        block: u64,
        thread: u64,
        shared: *mut u8,
        yielder: *const Yielder<(), ()>,
    ) -> ThreadCtx {
        ThreadCtx {
            tid: unflatten(thread, self.block),
            ctaid: unflatten(block, self.grid),
            ntid: [self.block.x, self.block.y, self.block.z],
            nctaid: [self.grid.x, self.grid.y, self.grid.z],
            shared,
            yielder,
        }
    }

    fn run_thread(&self, ctx: &mut ThreadCtx) {
        // SAFETY: `entry` is the JIT-compiled entry of this kernel; `ctx` is
        // a live ThreadCtx, and `slots` holds the kernel's flattened
        // arguments, whose array pointers stay valid (the caller holds the
        // `&mut [SimArg]`) and whose shapes/strides stay within their buffers
        // (checked by SimArray). Out-of-range indices from the kernel itself
        // are the kernel's bug, as on a GPU; debug mode checks them.
        unsafe { (self.entry)(ctx, self.slots as *const u64) };
    }

    /// Runs `work(worker, workers)` on a few OS threads, one per core (at
    /// most one per block): worker `w` takes blocks `w`, `w + workers`, …
    fn on_workers(
        &self,
        work: impl Fn(u64, u64) -> Result<(), String> + Sync,
    ) -> Result<(), String> {
        // rayon's thread count (the cores, read once: asking the system
        // reads the cgroup's files, each launch).
        let workers = (rayon::current_num_threads() as u64)
            .min(self.grid.count())
            .max(1);
        // A grid of few threads runs on the calling thread: handing it to
        // others costs more than it runs.
        let threads = self.grid.count().saturating_mul(self.block.count());
        if workers == 1 || threads < SMALL_GRID_THREADS {
            return work(0, 1);
        }
        // rayon's pool, started once: a launch used to spawn its OS
        // threads, about 100 µs a launch, on host loops of thousands.
        use rayon::prelude::*;
        (0..workers)
            .into_par_iter()
            .try_for_each(|w| work(w, workers))
    }

    /// Without fibers: each worker calls the entry for threads `0..calls`
    /// of each of its blocks, one after another. A barrier-free kernel is
    /// called per thread; a kernel rewritten as thread loops (`serial`)
    /// once per block, from `threadIdx` 0, and sets `threadIdx` itself.
    fn run_blocks_serially(&self, calls: u64) {
        let blocks = self.grid.count();
        let _ = self.on_workers(|w, workers| {
            let mut shared = vec![0u8; self.shared_bytes.max(1)];
            let mut b = w;
            while b < blocks {
                for t in 0..calls {
                    let mut ctx = self.ctx(b, t, shared.as_mut_ptr(), std::ptr::null());
                    self.run_thread(&mut ctx);
                }
                b += workers;
            }
            Ok(())
        });
    }

    /// Kernels with barriers: each worker runs its blocks' GPU threads as
    /// coroutines.
    fn run_blocks_as_fibers(&self) -> Result<(), String> {
        let blocks = self.grid.count();
        self.on_workers(|w, workers| {
            let mut stacks = pooled_stacks(self.block.count() as usize);
            let mut b = w;
            let mut ran = Ok(());
            while b < blocks && ran.is_ok() {
                ran = self.run_block_fibers(b, &mut stacks);
                b += workers;
            }
            return_stacks(stacks);
            ran
        })
    }

    /// One block: every live thread runs to its next `syncthreads()` (or
    /// its end), round after round, until all have ended. `stacks` keeps
    /// the coroutines' stacks from one block to the next.
    fn run_block_fibers(&self, b: u64, stacks: &mut Vec<DefaultStack>) -> Result<(), String> {
        let n = self.block.count();
        let mut shared = vec![0u8; self.shared_bytes.max(1)];
        let shared_addr = shared.as_mut_ptr() as usize;
        let mut threads: Vec<Coroutine<(), (), (), DefaultStack>> = Vec::with_capacity(n as usize);
        for t in 0..n {
            let stack = match stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(FIBER_STACK).map_err(|e| {
                    format!("cannot allocate the stack of thread {t} of {n} for block {b}: {e}")
                })?,
            };
            let launch = *self;
            threads.push(Coroutine::with_stack(
                stack,
                move |y: &Yielder<(), ()>, ()| {
                    let mut ctx = launch.ctx(b, t, shared_addr as *mut u8, y);
                    launch.run_thread(&mut ctx);
                },
            ));
        }
        let mut live: Vec<usize> = (0..threads.len()).collect();
        while !live.is_empty() {
            live.retain(|&k| matches!(threads[k].resume(()), CoroutineResult::Yield(())));
        }
        stacks.extend(threads.into_iter().map(Coroutine::into_stack));
        drop(shared);
        Ok(())
    }
}
