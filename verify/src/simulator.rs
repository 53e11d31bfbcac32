//! The host simulator as a [`Device`]: codegen's JIT-compiled kernels run
//! every thread of the grid on this machine, bounds-checked (`debug`), so an
//! index bug is an `IndexError` naming the thread, never memory corruption.
//! It has no meaningful clock: runs on it are verified, never timed.

use port_codegen::ir::ScalarType;
use port_codegen::{ArrayData, SimArg, SimArray, SimOptions, Simulator};
use port_rewriter::launch::SIMULATED_SMS;
use port_rewriter::KernelPlan;

use crate::error::VerifyError;
use crate::exec::{array_bytes, filled, DevArray, Device, HVal, KArg, LaunchConfig};
use crate::npy::NdArray;

/// The simulator, loaded with one plan's kernels.
pub struct SimDevice {
    sim: Simulator,
}

impl SimDevice {
    pub fn new(plan: &KernelPlan) -> Result<SimDevice, VerifyError> {
        let sim = Simulator::new(&plan.module, SimOptions::DEBUG).map_err(sim_err)?;
        Ok(SimDevice { sim })
    }
}

fn sim_err(e: impl std::fmt::Display) -> VerifyError {
    VerifyError::Simulator(e.to_string())
}

/// A launch's error: an overflow of Python int arithmetic is not the
/// kernels' failure but a call the migrated function gives the original.
fn launch_err(e: port_codegen::SimError) -> VerifyError {
    match e {
        port_codegen::SimError::Overflow { kernel } => VerifyError::Overflow(kernel),
        e => sim_err(e),
    }
}

fn scalar_arg(t: ScalarType, v: HVal) -> SimArg {
    match t {
        ScalarType::Bool => SimArg::Bool(v.b()),
        ScalarType::I32 => SimArg::I32(v.i() as i32),
        ScalarType::I64 => SimArg::I64(v.i()),
        ScalarType::F32 => SimArg::F32(v.f() as f32),
        ScalarType::F64 => SimArg::F64(v.f()),
        ScalarType::I8 => SimArg::I8(v.i() as i8),
        ScalarType::I16 => SimArg::I16(v.i() as i16),
        ScalarType::U8 => SimArg::U8(v.i() as u8),
        ScalarType::U16 => SimArg::U16(v.i() as u16),
        ScalarType::U32 => SimArg::U32(v.i() as u32),
        ScalarType::U64 => SimArg::U64(v.i() as u64),
        // Kernels take no complex scalar (codegen's verifier checks it), so
        // this real argument is refused by the launch if it ever happens.
        ScalarType::C64 | ScalarType::C128 => SimArg::F64(v.f()),
    }
}

impl Device for SimDevice {
    type Buf = SimArray;

    fn sms(&self) -> u64 {
        SIMULATED_SMS
    }

    fn upload(&mut self, a: &NdArray) -> Result<SimArray, VerifyError> {
        let shape = if a.shape.is_empty() {
            vec![1]
        } else {
            a.shape.clone()
        };
        SimArray::new(a.data.clone(), &shape).map_err(sim_err)
    }

    fn alloc(
        &mut self,
        elem: ScalarType,
        shape: &[usize],
        fill: HVal,
    ) -> Result<SimArray, VerifyError> {
        // `array_bytes` first: the element count cannot overflow then.
        let bytes = array_bytes(elem, shape);
        let Some(data) = bytes.and_then(|_| filled(elem, shape.iter().product(), fill)) else {
            return Err(VerifyError::Cuda(format!(
                "the simulator cannot hold {} bytes on this host (as a GPU says CUDA_ERROR_OUT_OF_MEMORY)",
                bytes.map_or("more than 2^64".to_string(), |b| b.to_string())
            )));
        };
        SimArray::new(data, shape).map_err(sim_err)
    }

    fn element(&mut self, a: &DevArray<SimArray>, k: usize) -> Result<HVal, VerifyError> {
        Ok(match a.buf.data() {
            ArrayData::Bool(v) => HVal::B(v[k]),
            ArrayData::I32(v) => HVal::I(i64::from(v[k])),
            ArrayData::I64(v) => HVal::I(v[k]),
            ArrayData::F32(v) => HVal::F(f64::from(v[k])),
            ArrayData::F64(v) => HVal::F(v[k]),
            ArrayData::C64(v) => HVal::C(f64::from(v[k][0]), f64::from(v[k][1])),
            ArrayData::C128(v) => HVal::C(v[k][0], v[k][1]),
            data => HVal::N(crate::npy::elem_i64(data, k), data.elem()),
        })
    }

    fn launch(
        &mut self,
        kernel: &str,
        config: LaunchConfig,
        args: &mut Vec<KArg<SimArray>>,
    ) -> Result<(), VerifyError> {
        // The simulator takes its arrays by value; hand them back after.
        let mut meta = Vec::new();
        let mut sim_args = Vec::new();
        for a in args.drain(..) {
            match a {
                KArg::Array(d) => {
                    meta.push(Some((d.shape, d.elem)));
                    sim_args.push(SimArg::Array(d.buf));
                }
                KArg::Scalar(t, v) => {
                    meta.push(None);
                    sim_args.push(scalar_arg(t, v));
                }
            }
        }
        let res = self
            .sim
            .launch(kernel, config.grid, config.block, &mut sim_args);
        for (m, s) in meta.into_iter().zip(sim_args) {
            args.push(match (m, s) {
                (Some((shape, elem)), SimArg::Array(buf)) => {
                    KArg::Array(DevArray { buf, shape, elem })
                }
                (_, SimArg::Bool(b)) => KArg::Scalar(ScalarType::Bool, HVal::B(b)),
                (_, SimArg::I32(i)) => KArg::Scalar(ScalarType::I32, HVal::I(i64::from(i))),
                (_, SimArg::I64(i)) => KArg::Scalar(ScalarType::I64, HVal::I(i)),
                (_, SimArg::F32(f)) => KArg::Scalar(ScalarType::F32, HVal::F(f64::from(f))),
                (_, SimArg::F64(f)) => KArg::Scalar(ScalarType::F64, HVal::F(f)),
                (_, SimArg::I8(i)) => {
                    KArg::Scalar(ScalarType::I8, HVal::N(i64::from(i), ScalarType::I8))
                }
                (_, SimArg::I16(i)) => {
                    KArg::Scalar(ScalarType::I16, HVal::N(i64::from(i), ScalarType::I16))
                }
                (_, SimArg::U8(i)) => {
                    KArg::Scalar(ScalarType::U8, HVal::N(i64::from(i), ScalarType::U8))
                }
                (_, SimArg::U16(i)) => {
                    KArg::Scalar(ScalarType::U16, HVal::N(i64::from(i), ScalarType::U16))
                }
                (_, SimArg::U32(i)) => {
                    KArg::Scalar(ScalarType::U32, HVal::N(i64::from(i), ScalarType::U32))
                }
                (_, SimArg::U64(i)) => {
                    KArg::Scalar(ScalarType::U64, HVal::N(i as i64, ScalarType::U64))
                }
                (None, SimArg::Array(_)) => unreachable!("arrays keep their metadata"),
            });
        }
        res.map_err(|e| match launch_err(e) {
            VerifyError::Simulator(e) => {
                VerifyError::Simulator(format!("kernel `{kernel}` ({config}): {e}"))
            }
            e => e,
        })
    }

    fn download(&mut self, a: &DevArray<SimArray>) -> Result<NdArray, VerifyError> {
        Ok(NdArray {
            shape: a.buf.shape().to_vec(),
            data: a.buf.data().clone(),
        })
    }

    fn download_last(&mut self, a: DevArray<SimArray>) -> Result<NdArray, VerifyError> {
        Ok(NdArray {
            shape: a.buf.shape().to_vec(),
            data: a.buf.into_data(),
        })
    }
}
