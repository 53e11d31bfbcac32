//! A CUDA GPU as a [`Device`], through cudarc's driver API: one context and
//! stream, the plan's PTX loaded as a module, arrays as raw device buffers
//! laid out as the kernels expect (C order, `bool` as one byte), arguments
//! pushed in [`port_codegen::kernel_abi`] order, and CUDA events around
//! every launch when a run is timed.
//!
//! Nothing here may panic on a machine without a driver: [`open`] checks
//! that libcuda loads before cudarc touches it (cudarc panics otherwise) and
//! keeps `catch_unwind` as a backstop. Every driver error becomes one line
//! naming the kernel and its launch configuration.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, PushKernelArg};
use cudarc::nvrtc::Ptx;
use port_codegen::ir::{Kernel, Module, ScalarType, Type};
use port_codegen::{kernel_abi, AbiKind, ArrayData};
use serde::Serialize;

use crate::error::VerifyError;
use crate::exec::{array_bytes, elem_size, filled, DevArray, Device, HVal, KArg, LaunchConfig};
use crate::npy::NdArray;

mod driver;
mod solver;

pub use driver::describe;
use driver::{cuda, out_of_memory};

/// What the device is (the `device` object of `--json`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DeviceInfo {
    /// The driver's name for it, or `"simulator"`.
    pub name: String,
    /// `"9.0"`; `None` on the simulator.
    pub compute_capability: Option<String>,
    pub sms: Option<u64>,
    /// Peak DRAM bandwidth from the memory clock and bus width, GB/s.
    pub peak_bandwidth_gb_s: Option<f64>,
}

impl DeviceInfo {
    pub fn simulator() -> DeviceInfo {
        DeviceInfo {
            name: "simulator".into(),
            compute_capability: None,
            sms: None,
            peak_bandwidth_gb_s: None,
        }
    }
}

/// Peak DRAM bandwidth in GB/s: double data rate × clock × bus width.
/// `memory_clock_khz` and `bus_width_bits` are the driver's
/// `CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE` and `..._GLOBAL_MEMORY_BUS_WIDTH`.
pub fn peak_bandwidth_gb_s(memory_clock_khz: i64, bus_width_bits: i64) -> Option<f64> {
    (memory_clock_khz > 0 && bus_width_bits > 0)
        .then(|| 2.0 * memory_clock_khz as f64 * 1e3 * (bus_width_bits as f64 / 8.0) / 1e9)
}

/// Runs `f` with panics caught and the default hook silenced: cudarc panics
/// in some no-driver cases, and a panic must become an error line. The
/// error is the panic's message.
pub(crate) fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    r.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "no message".into())
    })
}

fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, VerifyError> {
    catch_panic(f).map_err(|m| {
        VerifyError::NoGpu(format!("the CUDA driver library failed while {what}: {m}"))
    })
}

/// The driver library's soname on every CUDA version (12, 13, …): the one
/// name port needs found. port makes its PTX with LLVM and loads it with
/// the driver API, so it loads no other CUDA library (no NVRTC, cuBLAS or
/// runtime, whose sonames change with the CUDA major version).
pub const DRIVER_SONAME: &str = "libcuda.so.1";

/// A CUDA context on device 0, or why there is none (one line).
pub fn open() -> Result<Arc<CudaContext>, VerifyError> {
    // SAFETY: only tries to dlopen libcuda and reports whether it loaded.
    let present = no_panic("loading", || unsafe {
        cudarc::driver::sys::is_culib_present()
    })?;
    if !present {
        return Err(VerifyError::NoGpu(format!(
            "no CUDA driver: libcuda.so could not be loaded ({DRIVER_SONAME}, the NVIDIA driver's \
             library, is not on the loader's path: no NVIDIA driver on this machine)"
        )));
    }
    match no_panic("opening device 0", || CudaContext::new(0))? {
        Ok(ctx) => Ok(ctx),
        Err(e) => Err(VerifyError::NoGpu(format!(
            "the CUDA driver loaded but device 0 did not answer: {}",
            describe(e.0)
        ))),
    }
}

/// The device's name, compute capability, SM count and peak bandwidth.
pub fn info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, VerifyError> {
    let (major, minor) = ctx.compute_capability().map_err(cuda)?;
    let attr = |a| ctx.attribute(a).map(i64::from).map_err(cuda);
    let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let clock = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?;
    let bus = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?;
    Ok(DeviceInfo {
        name: ctx.name().map_err(cuda)?,
        compute_capability: Some(format!("{major}.{minor}")),
        sms: Some(sms.max(1) as u64),
        peak_bandwidth_gb_s: peak_bandwidth_gb_s(clock, bus),
    })
}

/// Host-to-device bandwidth in bytes per second, as the emitted wrapper
/// sees it (pageable host memory, `cuda.to_device`): the median of 5 copies
/// of 64 MiB after one warm-up copy.
pub fn host_to_device_bandwidth(stream: &Arc<CudaStream>) -> Result<f64, VerifyError> {
    const BYTES: usize = 64 << 20;
    let host = vec![1u8; BYTES];
    let mut dev = stream.alloc_zeros::<u8>(BYTES).map_err(cuda)?;
    stream.memcpy_htod(&host, &mut dev).map_err(cuda)?;
    stream.synchronize().map_err(cuda)?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        stream.memcpy_htod(&host, &mut dev).map_err(cuda)?;
        stream.synchronize().map_err(cuda)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let s = crate::timing::median(&mut times).unwrap_or(f64::NAN);
    Ok(BYTES as f64 / s)
}

/// The GPU, loaded with one plan's PTX.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    functions: HashMap<String, CudaFunction>,
    /// The plan's kernels, for their parameter lists.
    kernels: HashMap<String, Kernel>,
    sms: u64,
    /// Synchronize after every launch, so that a fault is pinned on the
    /// kernel that made it (verification runs); off for timed runs.
    pub sync_each_launch: bool,
    /// Start and end events of each launch of a timed run.
    events: Option<Vec<(CudaEvent, CudaEvent)>>,
    /// Events of earlier timed runs, to record again: creating two events
    /// per launch would put driver calls inside the end-to-end time.
    spare_events: Vec<CudaEvent>,
    /// Inputs kept on the device between runs (kernel timing), see
    /// [`Self::keep_inputs_on_device`].
    resident: Option<Resident>,
    /// cuBLAS on `stream`, made at the first `@`: `Some(None)` when
    /// libcublas is not found (the host computes the products then).
    blas: Option<Option<CudaBlas>>,
    /// cuSOLVER's dense handle on `stream`, made at the first `np.linalg`
    /// step: `Some(None)` when libcusolver is not found.
    dn: Option<Option<cudarc::cusolver::DnHandle>>,
    /// The error record every launch passes last when the module checks
    /// Python int arithmetic for overflow (`Module::checks_overflow`).
    record: Option<CudaSlice<u64>>,
}

/// Pristine device copies of a run's inputs, in upload order, and the
/// next one a run's upload takes.
struct Resident {
    pristine: Vec<CudaSlice<u8>>,
    next: usize,
}

impl GpuDevice {
    /// Loads `ptx` (compiled from `module`) into a new stream of `ctx`.
    pub fn new(
        ctx: &Arc<CudaContext>,
        module: &Module,
        ptx: &str,
        sms: u64,
    ) -> Result<GpuDevice, VerifyError> {
        // One stream does all the work, in order: cudarc's cross-stream
        // event tracking (an event recorded per buffer per launch, on by
        // default once a context has a stream of its own) would only add
        // host work to every launch and copy.
        // SAFETY: every buffer of this device is allocated, used and freed
        // on `stream` alone.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda)?;
        let loaded = ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| VerifyError::Cuda(format!("loading the PTX: {}", describe(e.0))))?;
        let mut functions = HashMap::new();
        let mut kernels = HashMap::new();
        for k in &module.kernels {
            let f = loaded.load_function(&k.name).map_err(|e| {
                VerifyError::Cuda(format!("kernel `{}` in the PTX: {}", k.name, describe(e.0)))
            })?;
            functions.insert(k.name.clone(), f);
            kernels.insert(k.name.clone(), k.clone());
        }
        let record = if module.checks_overflow() {
            Some(
                stream
                    .alloc_zeros::<u64>(port_codegen::ERROR_RECORD_LEN)
                    .map_err(cuda)?,
            )
        } else {
            None
        };
        Ok(GpuDevice {
            ctx: ctx.clone(),
            record,
            stream,
            functions,
            kernels,
            sms,
            sync_each_launch: true,
            events: None,
            spare_events: Vec::new(),
            resident: None,
            blas: None,
            dn: None,
        })
    }

    /// From the next run on, a run's inputs stay on the device: the first
    /// run copies them from the host and keeps a pristine device copy of
    /// each; every later run (after [`Self::rewind_inputs`]) gets fresh
    /// device-to-device copies of those. Kernel timing runs so, as Numba's
    /// maintainers time kernels: data already on the device, and no host
    /// copies between the runs to let the GPU idle and clock down.
    pub fn keep_inputs_on_device(&mut self) {
        self.resident = Some(Resident {
            pristine: Vec::new(),
            next: 0,
        });
    }

    /// The next run's uploads start again from its first input.
    pub fn rewind_inputs(&mut self) {
        if let Some(r) = self.resident.as_mut() {
            r.next = 0;
        }
    }

    /// A new device buffer holding `a` as the kernels lay it out.
    fn upload_from_host(&mut self, a: &NdArray) -> Result<CudaSlice<u8>, VerifyError> {
        let bytes = a.data.as_bytes();
        // A zero-length array still gets a (one-byte) buffer: kernels take
        // a pointer either way.
        if bytes.is_empty() {
            return self.stream.alloc_zeros::<u8>(1).map_err(cuda);
        }
        self.stream.clone_htod(bytes).map_err(cuda)
    }

    /// Starts recording an event pair around every launch.
    pub fn start_timing(&mut self) {
        self.events = Some(Vec::new());
    }

    /// Waits for the stream, and gives the seconds the launches since
    /// [`Self::start_timing`] took on the device (their sum).
    pub fn kernel_seconds(&mut self) -> Result<f64, VerifyError> {
        self.synchronize()?;
        let mut total = 0.0;
        for (start, end) in self.events.take().unwrap_or_default() {
            total += f64::from(start.elapsed_ms(&end).map_err(cuda)?) / 1e3;
            self.spare_events.extend([start, end]);
        }
        Ok(total)
    }

    pub fn synchronize(&self) -> Result<(), VerifyError> {
        self.stream.synchronize().map_err(cuda)
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Runs `work` (a library call on the plan's stream) between two
    /// events when the run is timed, as a launch is.
    fn timed_library(
        &mut self,
        work: impl FnOnce(&mut Self) -> Result<(), VerifyError>,
    ) -> Result<(), VerifyError> {
        let start = match self.events {
            Some(_) => Some(self.event()?),
            None => None,
        };
        if let Some(s) = &start {
            s.record(&self.stream).map_err(cuda)?;
        }
        work(self)?;
        if let Some(start) = start {
            let end = self.event()?;
            end.record(&self.stream).map_err(cuda)?;
            if let Some(ev) = self.events.as_mut() {
                ev.push((start, end));
            }
        }
        Ok(())
    }

    /// cuBLAS on the plan's stream, made at the first call; `None` when
    /// libcublas is not found (said once).
    fn cublas(&mut self) -> Option<&CudaBlas> {
        if self.blas.is_none() {
            // SAFETY: only checks that the library loads.
            let present = unsafe { cudarc::cublas::sys::is_culib_present() };
            self.blas = Some(if present {
                CudaBlas::new(self.stream.clone()).ok()
            } else {
                None
            });
            if !present {
                eprintln!(
                    "port: cuBLAS (libcublas) not found on the loader's path: matrix products and np.linalg run on the host"
                );
            }
        }
        self.blas.as_ref()?.as_ref()
    }

    fn event(&mut self) -> Result<CudaEvent, VerifyError> {
        match self.spare_events.pop() {
            Some(e) => Ok(e),
            None => self
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda),
        }
    }
}

fn from_bytes(elem: ScalarType, b: &[u8]) -> ArrayData {
    fn chunks<const N: usize, T>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        b.chunks_exact(N)
            .map(|c| f(c.try_into().expect("exact chunk")))
            .collect()
    }
    match elem {
        ScalarType::Bool => ArrayData::Bool(b.iter().map(|&x| x != 0).collect()),
        ScalarType::I32 => ArrayData::I32(chunks(b, i32::from_ne_bytes)),
        ScalarType::I64 => ArrayData::I64(chunks(b, i64::from_ne_bytes)),
        ScalarType::F32 => ArrayData::F32(chunks(b, f32::from_ne_bytes)),
        ScalarType::F64 => ArrayData::F64(chunks(b, f64::from_ne_bytes)),
        ScalarType::I8 => ArrayData::I8(chunks(b, i8::from_ne_bytes)),
        ScalarType::I16 => ArrayData::I16(chunks(b, i16::from_ne_bytes)),
        ScalarType::U8 => ArrayData::U8(b.to_vec()),
        ScalarType::U16 => ArrayData::U16(chunks(b, u16::from_ne_bytes)),
        ScalarType::U32 => ArrayData::U32(chunks(b, u32::from_ne_bytes)),
        ScalarType::U64 => ArrayData::U64(chunks(b, u64::from_ne_bytes)),
        ScalarType::C64 => ArrayData::C64(chunks(b, |c: [u8; 8]| {
            let (re, im) = c.split_at(4);
            [
                f32::from_ne_bytes(re.try_into().expect("4")),
                f32::from_ne_bytes(im.try_into().expect("4")),
            ]
        })),
        ScalarType::C128 => ArrayData::C128(chunks(b, |c: [u8; 16]| {
            let (re, im) = c.split_at(8);
            [
                f64::from_ne_bytes(re.try_into().expect("8")),
                f64::from_ne_bytes(im.try_into().expect("8")),
            ]
        })),
    }
}

/// A kernel argument slot, owned until the launch.
#[derive(Debug, PartialEq)]
enum Slot {
    Buffer,
    U8(u8),
    U16(u16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

/// The flattened arguments of one launch, in [`kernel_abi`]'s order (the
/// PTX entry's parameters, without the debug record): a pointer and the
/// shape of each array, then its C-order strides (in elements) when the
/// kernel takes any layout; scalars as stored (`bool` as one byte). Checked
/// slot by slot against the ABI, so a mismatch is an error, never a launch
/// with misread arguments.
fn arg_slots<B>(k: &Kernel, args: &[KArg<B>]) -> Result<Vec<Slot>, String> {
    if k.params.len() != args.len() {
        return Err(format!(
            "{} arguments for a kernel of {} parameters",
            args.len(),
            k.params.len()
        ));
    }
    let mut slots = Vec::new();
    for (a, p) in args.iter().zip(&k.params) {
        match (a, p.ty) {
            (KArg::Array(d), Type::Array(at)) => {
                if d.shape.len() != at.ndim as usize || d.elem != at.elem {
                    return Err(format!(
                        "`{}` is a {:?} array of {} dimensions, the kernel takes {:?} of {}",
                        p.name,
                        d.elem,
                        d.shape.len(),
                        at.elem,
                        at.ndim
                    ));
                }
                slots.push(Slot::Buffer);
                slots.extend(d.shape.iter().map(|&n| Slot::I64(n as i64)));
                if !at.contiguous {
                    let mut strides = vec![1i64; d.shape.len()];
                    for k in (0..d.shape.len().saturating_sub(1)).rev() {
                        strides[k] = strides[k + 1] * d.shape[k + 1] as i64;
                    }
                    slots.extend(strides.into_iter().map(Slot::I64));
                }
            }
            (KArg::Scalar(_, v), Type::Scalar(t)) => slots.push(match t {
                ScalarType::Bool => Slot::U8(u8::from(v.b())),
                ScalarType::I32 => Slot::I32(v.i() as i32),
                ScalarType::I64 => Slot::I64(v.i()),
                ScalarType::F32 => Slot::F32(v.f() as f32),
                ScalarType::F64 => Slot::F64(v.f()),
                // Narrow and unsigned integers travel as their bits.
                ScalarType::I8 | ScalarType::U8 => Slot::U8(v.i() as u8),
                ScalarType::I16 | ScalarType::U16 => Slot::U16(v.i() as u16),
                ScalarType::U32 => Slot::I32(v.i() as u32 as i32),
                ScalarType::U64 => Slot::I64(v.i()),
                // Kernels take no complex scalar (codegen's verifier): the
                // rewriter passes the parts. A real slot fails the launch.
                ScalarType::C64 | ScalarType::C128 => Slot::F64(v.f()),
            }),
            _ => {
                return Err(format!(
                    "`{}`: an array where a scalar goes, or back",
                    p.name
                ))
            }
        }
    }
    let abi = kernel_abi(k, false);
    if abi.len() != slots.len() {
        return Err(format!(
            "{} argument slots for a kernel that takes {}",
            slots.len(),
            abi.len()
        ));
    }
    for (s, a) in slots.iter().zip(&abi) {
        let fits = matches!(
            (s, &a.kind),
            (Slot::Buffer, AbiKind::Pointer(_))
                | (Slot::I64(_), AbiKind::Shape | AbiKind::Stride)
                | (
                    Slot::U8(_),
                    AbiKind::Scalar(ScalarType::Bool | ScalarType::I8 | ScalarType::U8)
                )
                | (
                    Slot::U16(_),
                    AbiKind::Scalar(ScalarType::I16 | ScalarType::U16)
                )
                | (
                    Slot::I32(_),
                    AbiKind::Scalar(ScalarType::I32 | ScalarType::U32)
                )
                | (
                    Slot::I64(_),
                    AbiKind::Scalar(ScalarType::I64 | ScalarType::U64)
                )
                | (Slot::F32(_), AbiKind::Scalar(ScalarType::F32))
                | (Slot::F64(_), AbiKind::Scalar(ScalarType::F64))
        );
        if !fits {
            return Err(format!("argument `{}` would be passed as {s:?}", a.name));
        }
    }
    Ok(slots)
}

impl Device for GpuDevice {
    type Buf = CudaSlice<u8>;

    fn sms(&self) -> u64 {
        self.sms
    }

    fn upload(&mut self, a: &NdArray) -> Result<CudaSlice<u8>, VerifyError> {
        if let Some(k) = self.resident.as_mut().map(|r| {
            r.next += 1;
            r.next - 1
        }) {
            let len = (a.len() * elem_size(a.data.elem())).max(1);
            let stream = self.stream.clone();
            let r = self.resident.as_mut().expect("resident");
            if let Some(p) = r.pristine.get(k).filter(|p| p.len() == len) {
                return stream.clone_dtod(p).map_err(cuda);
            }
            let b = self.upload_from_host(a)?;
            let keep = stream.clone_dtod(&b).map_err(cuda)?;
            let r = self.resident.as_mut().expect("resident");
            r.pristine.truncate(k);
            r.pristine.push(keep);
            return Ok(b);
        }
        self.upload_from_host(a)
    }

    fn alloc(
        &mut self,
        elem: ScalarType,
        shape: &[usize],
        fill: HVal,
    ) -> Result<CudaSlice<u8>, VerifyError> {
        let Some(bytes) = array_bytes(elem, shape) else {
            return Err(out_of_memory("more bytes than a 64-bit size holds".into()));
        };
        let len = bytes.max(1);
        // The stream-ordered allocator may not refuse a request larger than
        // the device at once (the error would come later, from another
        // call): ask first how much is free.
        let (free, total) = self.ctx.mem_get_info().map_err(cuda)?;
        if len > free {
            return Err(out_of_memory(format!(
                "{len} bytes asked, {free} of the device's {total} free"
            )));
        }
        let mut buf = self.stream.alloc_zeros::<u8>(len).map_err(cuda)?;
        // The memory is zeroed already: copy only when one element of the
        // fill, as `filled` converts it, has a bit set (-0.0 does).
        let zero = filled(elem, 1, fill).is_some_and(|one| one.as_bytes().iter().all(|&b| b == 0));
        if !zero && bytes > 0 {
            let data = filled(elem, shape.iter().product(), fill).ok_or_else(|| {
                VerifyError::Cuda(format!(
                    "filling {bytes} bytes: the host has too little free memory"
                ))
            })?;
            self.stream
                .memcpy_htod(data.as_bytes(), &mut buf)
                .map_err(cuda)?;
        }
        Ok(buf)
    }

    fn element(&mut self, a: &DevArray<CudaSlice<u8>>, k: usize) -> Result<HVal, VerifyError> {
        let size = elem_size(a.elem);
        let view = a.buf.slice(k * size..(k + 1) * size);
        let b = self.stream.clone_dtoh(&view).map_err(cuda)?;
        Ok(match from_bytes(a.elem, &b) {
            ArrayData::Bool(v) => HVal::B(v[0]),
            ArrayData::I32(v) => HVal::I(i64::from(v[0])),
            ArrayData::I64(v) => HVal::I(v[0]),
            ArrayData::F32(v) => HVal::F(f64::from(v[0])),
            ArrayData::F64(v) => HVal::F(v[0]),
            ArrayData::C64(v) => HVal::C(f64::from(v[0][0]), f64::from(v[0][1])),
            ArrayData::C128(v) => HVal::C(v[0][0], v[0][1]),
            data => HVal::N(crate::npy::elem_i64(&data, 0), a.elem),
        })
    }

    fn launch(
        &mut self,
        kernel: &str,
        config: LaunchConfig,
        args: &mut Vec<KArg<CudaSlice<u8>>>,
    ) -> Result<(), VerifyError> {
        let failed = |m: String| VerifyError::Cuda(format!("kernel `{kernel}` ({config}): {m}"));
        let f = self
            .functions
            .get(kernel)
            .ok_or_else(|| failed("not in the loaded PTX".into()))?
            .clone();
        let k = self
            .kernels
            .get(kernel)
            .ok_or_else(|| failed("not in the plan".into()))?;
        let slots = arg_slots(k, args).map_err(failed)?;
        let timed = match self.events {
            Some(_) => Some(self.event()?),
            None => None,
        };
        {
            let mut buffers = args.iter_mut().filter_map(|a| match a {
                KArg::Array(d) => Some(&mut d.buf),
                KArg::Scalar(..) => None,
            });
            let mut l = self.stream.launch_builder(&f);
            for s in &slots {
                match s {
                    Slot::Buffer => {
                        let b = buffers
                            .next()
                            .ok_or_else(|| failed("fewer arrays than pointers".into()))?;
                        l.arg(b);
                    }
                    Slot::U8(v) => {
                        l.arg(v);
                    }
                    Slot::U16(v) => {
                        l.arg(v);
                    }
                    Slot::I32(v) => {
                        l.arg(v);
                    }
                    Slot::I64(v) => {
                        l.arg(v);
                    }
                    Slot::F32(v) => {
                        l.arg(v);
                    }
                    Slot::F64(v) => {
                        l.arg(v);
                    }
                }
            }
            if let Some(r) = &self.record {
                l.arg(r);
            }
            let cfg = cudarc::driver::LaunchConfig {
                grid_dim: (config.grid[0], config.grid[1], 1),
                block_dim: (config.block[0], config.block[1], 1),
                shared_mem_bytes: 0,
            };
            // The start event as late as it can be: only the driver's own
            // launch call lies between it and the kernel.
            if let Some(start) = &timed {
                start.record(&self.stream).map_err(cuda)?;
            }
            // SAFETY: the arguments follow the kernel's ABI (checked above:
            // one slot per parameter, pointers to buffers holding the
            // shapes given), and the kernels index only within the shapes
            // they are given (grid-stride loops bounded by them).
            unsafe { l.launch(cfg) }.map_err(|e| failed(describe(e.0)))?;
        }
        if let Some(start) = timed {
            let end = self.event()?;
            end.record(&self.stream).map_err(cuda)?;
            if let Some(ev) = self.events.as_mut() {
                ev.push((start, end));
            }
        }
        if self.sync_each_launch {
            self.stream
                .synchronize()
                .map_err(|e| failed(describe(e.0)))?;
            if let Some(r) = &self.record {
                let raw = self.stream.clone_dtoh(r).map_err(cuda)?;
                if raw.first() == Some(&port_codegen::ir::OVERFLOW_FLAG) {
                    return Err(VerifyError::Overflow(kernel.to_string()));
                }
            }
        }
        Ok(())
    }

    fn linalg(
        &mut self,
        op: port_rewriter::plan::LibraryOp,
        args: &[&DevArray<CudaSlice<u8>>],
        out: &mut DevArray<CudaSlice<u8>>,
    ) -> Option<Result<(), VerifyError>> {
        // On cuSOLVER when the step is one `solver` computes and libcusolver
        // and libcublas load; `None` otherwise (the host computes it then).
        let shapes = solver::applies(op, args, out)?;
        self.cublas()?;
        solver::dense_solver(&mut self.dn, &self.stream)?;
        Some(self.timed_library(|this| {
            let dn = this.dn.as_ref().and_then(Option::as_ref);
            let blas = this.blas.as_ref().and_then(Option::as_ref);
            let (Some(dn), Some(blas)) = (dn, blas) else {
                unreachable!("both handles were made above");
            };
            solver::run(&this.stream, dn, blas, op, &shapes, args, out)
        }))
    }

    /// `c = op(a) @ op(b)` with cuBLAS, on the device arrays themselves.
    ///
    /// The arrays are C-ordered; cuBLAS is column-major, where a C-ordered
    /// `r × c` buffer reads as its transpose. So the product is computed
    /// as `cᵀ = op(b)ᵀ op(a)ᵀ`: cuBLAS's A is `b`'s buffer (transposed
    /// again when `b` is read transposed), its B is `a`'s.
    fn gemm(
        &mut self,
        a: &DevArray<CudaSlice<u8>>,
        b: &DevArray<CudaSlice<u8>>,
        c: &mut DevArray<CudaSlice<u8>>,
        (ta, tb): (bool, bool),
    ) -> Option<Result<(), VerifyError>> {
        if a.elem != b.elem || a.elem != c.elem || a.shape.len() != 2 || b.shape.len() != 2 {
            return None;
        }
        if !matches!(a.elem, ScalarType::F32 | ScalarType::F64) {
            return None;
        }
        // Logical shapes: op(a) is m × k, op(b) is k × n.
        let (m, k) = if ta {
            (a.shape[1], a.shape[0])
        } else {
            (a.shape[0], a.shape[1])
        };
        let (k2, n) = if tb {
            (b.shape[1], b.shape[0])
        } else {
            (b.shape[0], b.shape[1])
        };
        if k != k2 || c.shape != [m, n] {
            return Some(Err(VerifyError::BadPlan(format!(
                "`@` of {:?}{} and {:?}{} into {:?}",
                a.shape,
                if ta { "ᵀ" } else { "" },
                b.shape,
                if tb { "ᵀ" } else { "" },
                c.shape
            ))));
        }
        // (k = 0 is a valid product: zeros, which gemm writes with β = 0.)
        let int = |v: usize| i32::try_from(v).ok();
        let (Some(mi), Some(ni), Some(ki)) = (int(m), int(n), int(k)) else {
            return None;
        };
        let op = |t: bool| {
            if t {
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T
            } else {
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        // Leading dimensions: a buffer's row length.
        let lda = i32::try_from(b.shape[1].max(1)).ok()?;
        let ldb = i32::try_from(a.shape[1].max(1)).ok()?;
        // No cuBLAS: the host computes it, and no event is taken.
        self.cublas()?;
        if m == 0 || n == 0 {
            return Some(Ok(()));
        }
        let failed = |e: cudarc::cublas::result::CublasError| VerifyError::Cuda(format!("{e:?}"));
        let r = self.timed_library(|this| {
            let blas = this
                .blas
                .as_ref()
                .and_then(Option::as_ref)
                .expect("checked above");
            macro_rules! gemm {
                ($t:ty) => {{
                    let zero: $t = 0.0;
                    let one: $t = 1.0;
                    let cfg = GemmConfig {
                        transa: op(tb),
                        transb: op(ta),
                        m: ni,
                        n: mi,
                        k: ki,
                        alpha: one,
                        lda,
                        ldb,
                        beta: zero,
                        ldc: ni,
                    };
                    // SAFETY: each buffer holds its array's elements of type
                    // `$t` (checked above), in C order with the leading
                    // dimensions given, and `c` is not `a` or `b` (a library
                    // step writes a new array).
                    unsafe {
                        let (Some(av), Some(bv)) = (
                            b.buf.transmute::<$t>(b.len()),
                            a.buf.transmute::<$t>(a.len()),
                        ) else {
                            return Err(VerifyError::BadPlan(
                                "`@` operands smaller than their shapes".into(),
                            ));
                        };
                        let len = c.len();
                        let Some(mut cv) = c.buf.transmute_mut::<$t>(len) else {
                            return Err(VerifyError::BadPlan(
                                "`@` result smaller than its shape".into(),
                            ));
                        };
                        blas.gemm(cfg, &av, &bv, &mut cv).map_err(failed)
                    }
                }};
            }
            if a.elem == ScalarType::F32 {
                gemm!(f32)
            } else {
                gemm!(f64)
            }
        });
        if let Err(e) = r {
            return Some(Err(e));
        }
        if self.sync_each_launch {
            if let Err(e) = self.stream.synchronize() {
                return Some(Err(cuda(e)));
            }
        }
        Some(Ok(()))
    }

    /// Into the array's own buffer (a library step's result).
    fn write(
        &mut self,
        a: &mut DevArray<CudaSlice<u8>>,
        data: &NdArray,
    ) -> Result<(), VerifyError> {
        let bytes = data.data.as_bytes();
        if bytes.is_empty() {
            return Ok(());
        }
        self.stream.memcpy_htod(bytes, &mut a.buf).map_err(cuda)
    }

    fn download(&mut self, a: &DevArray<CudaSlice<u8>>) -> Result<NdArray, VerifyError> {
        let bytes = a.bytes();
        let mut data = filled(a.elem, a.len(), HVal::I(0)).ok_or_else(|| {
            VerifyError::Cuda(format!(
                "copying {bytes} bytes back: the host has too little free memory"
            ))
        })?;
        if bytes > 0 {
            let src = a.buf.slice(0..bytes);
            match data.as_bytes_mut() {
                // Straight into the typed host array: no second copy.
                Some(dst) => self.stream.memcpy_dtoh(&src, dst).map_err(cuda)?,
                None => {
                    let b = self.stream.clone_dtoh(&src).map_err(cuda)?;
                    data = from_bytes(a.elem, &b);
                }
            }
        }
        Ok(NdArray {
            shape: a.shape.clone(),
            data,
        })
    }
}

/// Whether the kernels stream through memory: no loop runs inside any
/// parallel loop (per element), in the kernels or the device functions
/// they call. Such kernels are judged against the device's peak bandwidth.
pub fn memory_bound(m: &Module) -> bool {
    use port_codegen::ir::Stmt;
    fn has_loop(body: &[Stmt], inside_parallel: bool) -> bool {
        body.iter().any(|s| match s {
            Stmt::For { body, .. } | Stmt::While { body, .. } => {
                inside_parallel || has_loop(body, inside_parallel)
            }
            Stmt::ParallelFor(p) => has_loop(&p.body, true),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => has_loop(then_body, inside_parallel) || has_loop(else_body, inside_parallel),
            _ => false,
        })
    }
    !m.kernels.iter().any(|k| has_loop(&k.body, false))
        && !m.device_functions.iter().any(|f| has_loop(&f.body, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;

    fn module(src: &str) -> Module {
        port_codegen::text::parse_module(src).expect("valid IR")
    }

    fn array(shape: &[usize], elem: ScalarType) -> KArg<()> {
        KArg::Array(DevArray {
            buf: (),
            shape: shape.to_vec(),
            elem,
        })
    }

    /// Each kernel the codegen tests compile gets arguments in its ABI's
    /// order and kinds, strides in elements, `bool` as a byte.
    #[test]
    fn arguments_follow_the_kernel_abi() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../codegen/tests/kernels");
        let saxpy = module(&std::fs::read_to_string(dir.join("saxpy.pir")).unwrap());
        let k = &saxpy.kernels[0];
        let args: Vec<KArg<()>> = k
            .params
            .iter()
            .map(|p| match p.ty {
                Type::Array(a) => array(&vec![7; a.ndim as usize], a.elem),
                Type::Scalar(t) => KArg::Scalar(t, HVal::F(1.75)),
            })
            .collect();
        let slots = arg_slots(k, &args).unwrap();
        assert_eq!(slots.len(), kernel_abi(k, false).len());

        let m = module("kernel k(a: f64[:, :], b: f32[::1], flag: bool, n: i32) {\n}\n");
        let args = vec![
            array(&[3, 5], ScalarType::F64),
            array(&[4], ScalarType::F32),
            KArg::Scalar(ScalarType::Bool, HVal::B(true)),
            KArg::Scalar(ScalarType::I32, HVal::I(9)),
        ];
        assert_eq!(
            arg_slots(&m.kernels[0], &args).unwrap(),
            vec![
                Slot::Buffer,
                Slot::I64(3),
                Slot::I64(5),
                Slot::I64(5),
                Slot::I64(1),
                Slot::Buffer,
                Slot::I64(4),
                Slot::U8(1),
                Slot::I32(9),
            ]
        );
        // The wrong element type or rank is refused, not launched.
        let wrong = vec![
            array(&[15], ScalarType::F64),
            array(&[4], ScalarType::F32),
            KArg::Scalar(ScalarType::Bool, HVal::B(true)),
            KArg::Scalar(ScalarType::I32, HVal::I(9)),
        ];
        let e = arg_slots(&m.kernels[0], &wrong).unwrap_err();
        assert!(e.contains("1 dimensions"), "{e}");
        assert!(arg_slots(&m.kernels[0], &wrong[..2]).is_err());
    }

    /// The simulator, checking each launch's arguments against the ABI the
    /// GPU path would marshal them into.
    struct AbiChecked {
        sim: crate::simulator::SimDevice,
        plan: port_rewriter::KernelPlan,
        launches: usize,
    }

    impl Device for AbiChecked {
        type Buf = port_codegen::SimArray;
        fn sms(&self) -> u64 {
            self.sim.sms()
        }
        fn upload(&mut self, a: &NdArray) -> Result<Self::Buf, VerifyError> {
            self.sim.upload(a)
        }
        fn alloc(&mut self, e: ScalarType, s: &[usize], f: HVal) -> Result<Self::Buf, VerifyError> {
            self.sim.alloc(e, s, f)
        }
        fn element(&mut self, a: &DevArray<Self::Buf>, k: usize) -> Result<HVal, VerifyError> {
            self.sim.element(a, k)
        }
        fn launch(
            &mut self,
            kernel: &str,
            config: LaunchConfig,
            args: &mut Vec<KArg<Self::Buf>>,
        ) -> Result<(), VerifyError> {
            let k = self.plan.module.kernel(kernel).unwrap();
            arg_slots(k, args).unwrap_or_else(|e| panic!("{kernel}: {e}"));
            self.launches += 1;
            self.sim.launch(kernel, config, args)
        }
        fn download(&mut self, a: &DevArray<Self::Buf>) -> Result<NdArray, VerifyError> {
            self.sim.download(a)
        }
    }

    /// Real plans (reductions, 2-D grids, ufuncs, --fp32) marshal cleanly.
    #[test]
    fn migrated_plans_marshal_to_the_abi() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/migrate");
        for (file, function, sig, fp32) in [
            (
                "seeds.py",
                "saxpy",
                "float64, float64[:], float64[:], float64[:]",
                false,
            ),
            ("seeds.py", "hypot", "float64, float64", false),
            ("seeds.py", "go_fast", "float64[:, :]", false),
            ("seeds.py", "go_fast", "float64[:, :]", true),
            ("kernels.py", "softmax_rows", "float64[:, :]", false),
            ("general.py", "max_abs", "float64[:]", false),
            ("general.py", "leaky_relu", "float32[:, :]", false),
            ("general.py", "mandel", "float64, float64, int64", false),
        ] {
            let source = std::fs::read_to_string(dir.join(file)).unwrap();
            let types = port_rewriter::parse_signature(sig).unwrap();
            let plan = match port_rewriter::migrate(&port_rewriter::MigrationRequest {
                source: &source,
                file_name: file,
                function,
                types: &types,
                facts: &port_rewriter::AppFacts::default(),
                report: None,
                fp32,
                input_shapes: &[],
                literals: &[],
            })
            .unwrap()
            {
                port_rewriter::Outcome::Migrated(m) => m.plan,
                port_rewriter::Outcome::Refused(r) => panic!("{function}: {r:?}"),
            };
            let inputs = crate::inputs::generate_sized(&plan, Some(3000));
            let mut dev = AbiChecked {
                sim: crate::simulator::SimDevice::new(&plan).unwrap(),
                plan: plan.clone(),
                launches: 0,
            };
            crate::exec::run_plan(&plan, &inputs, &mut dev, crate::exec::Outputs::All).unwrap();
            assert!(dev.launches > 0, "{function}");
        }
    }

    #[test]
    fn driver_errors_are_named_with_a_hint() {
        let d = describe(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        assert!(d.starts_with("CUDA_ERROR_ILLEGAL_ADDRESS (the kernel read or wrote outside"));
        assert!(describe(CUresult::CUDA_ERROR_OUT_OF_MEMORY).contains("too little free memory"));
        assert_eq!(describe(CUresult::CUDA_ERROR_UNKNOWN), "CUDA_ERROR_UNKNOWN");
        let stub = describe(CUresult::CUDA_ERROR_STUB_LIBRARY);
        assert!(stub.contains("toolkit's stub"), "{stub}");
    }

    /// cudarc looks for the driver under the soname every driver ships
    /// (CUDA 12 and 13 alike), not only under ones tied to the CUDA
    /// version it was generated for.
    #[test]
    fn the_driver_is_searched_under_its_version_independent_soname() {
        let names = cudarc::get_lib_name_candidates("cuda");
        assert!(names.iter().any(|n| n == DRIVER_SONAME), "{names:?}");
    }

    #[test]
    fn bytes_round_trip_as_the_kernels_store_them() {
        for data in [
            ArrayData::Bool(vec![true, false, true]),
            ArrayData::I32(vec![-1, 2, 3]),
            ArrayData::I64(vec![i64::MIN, 0, 5]),
            ArrayData::F32(vec![1.5, -0.0, f32::INFINITY]),
            ArrayData::F64(vec![0.1, 2.0, -3.25]),
        ] {
            let a = NdArray {
                shape: vec![3],
                data: data.clone(),
            };
            let b = a.data.as_bytes().to_vec();
            assert_eq!(b.len(), 3 * elem_size(a.elem()));
            assert_eq!(from_bytes(a.elem(), &b), data);
            // And written back in place, where every bit pattern is a value.
            let mut back = filled(a.elem(), 3, HVal::I(0)).unwrap();
            if let Some(dst) = back.as_bytes_mut() {
                dst.copy_from_slice(&b);
                assert_eq!(back, data);
            }
        }
    }
}
