//! Runs a [`KernelPlan`]'s host program — the wrapper's steps in order: host
//! scalars, allocations, launches with the same launch policy as the
//! emitted Python, reads of reduction results — on a [`Device`]: codegen's
//! host simulator ([`crate::simulator`]) or a CUDA GPU ([`crate::gpu`]).
//! One interpreter serves both, so the backends can differ only in where the
//! kernels run, never in what the wrapper does.

use std::collections::HashMap;

use port_codegen::ir::{BinOp, CmpOp, Expr, Literal, MathFn, ScalarType, Type, UnaryOp};
use port_codegen::ArrayData;
use port_rewriter::launch::{
    blocks_for, reduce_blocks_for, THREADS_1D, THREADS_2D, THREADS_REDUCE,
};
use port_rewriter::plan::{Fill, LibraryCall, LibraryOp};
use port_rewriter::{ArgType, HostStep, HostValue, KernelPlan, LaunchShape, PlanParam};
use serde::Serialize;

use crate::error::VerifyError;
use crate::inputs::{InputValue, Inputs};
use crate::npy::NdArray;

mod hval;

use self::hval::{complex_binary, narrow_binary};
pub use self::hval::{wrap_int, HVal};

/// An array where the kernels run: the backend's buffer, its shape and
/// element type (always C-contiguous).
#[derive(Debug)]
pub struct DevArray<B> {
    pub buf: B,
    pub shape: Vec<usize>,
    pub elem: ScalarType,
}

impl<B> DevArray<B> {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> usize {
        self.len() * elem_size(self.elem)
    }
}

pub use crate::dtype::{array_bytes, elem_size};

/// `n` elements of type `t`, each `fill` (converted to `t` as a store
/// converts it: an integer keeps all 64 bits, a complex number both
/// parts); `None` when the host cannot hold them (reserved fallibly: too
/// large an array is an error, not an abort).
pub fn filled(t: ScalarType, n: usize, fill: HVal) -> Option<ArrayData> {
    fn rep<T: Clone>(x: T, n: usize) -> Option<Vec<T>> {
        let mut v = Vec::new();
        v.try_reserve_exact(n).ok()?;
        v.resize(n, x);
        Some(v)
    }
    let v = fill.cast(t);
    Some(match t {
        ScalarType::Bool => ArrayData::Bool(rep(v.b(), n)?),
        ScalarType::I32 => ArrayData::I32(rep(v.i() as i32, n)?),
        ScalarType::I64 => ArrayData::I64(rep(v.i(), n)?),
        ScalarType::F32 => ArrayData::F32(rep(v.f() as f32, n)?),
        ScalarType::F64 => ArrayData::F64(rep(v.f(), n)?),
        ScalarType::I8 => ArrayData::I8(rep(v.i() as i8, n)?),
        ScalarType::I16 => ArrayData::I16(rep(v.i() as i16, n)?),
        ScalarType::U8 => ArrayData::U8(rep(v.i() as u8, n)?),
        ScalarType::U16 => ArrayData::U16(rep(v.i() as u16, n)?),
        ScalarType::U32 => ArrayData::U32(rep(v.i() as u32, n)?),
        ScalarType::U64 => ArrayData::U64(rep(v.i() as u64, n)?),
        ScalarType::C64 => {
            let (re, im) = v.c();
            ArrayData::C64(rep([re as f32, im as f32], n)?)
        }
        ScalarType::C128 => {
            let (re, im) = v.c();
            ArrayData::C128(rep([re, im], n)?)
        }
    })
}

/// One kernel argument, in the kernel's parameter order.
#[derive(Debug)]
pub enum KArg<B> {
    Array(DevArray<B>),
    Scalar(ScalarType, HVal),
}

/// A launch's grid and block (x, y), as `kernel[grid, block]` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchConfig {
    pub grid: [u32; 2],
    pub block: [u32; 2],
}

impl std::fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "grid ({}, {}), block ({}, {})",
            self.grid[0], self.grid[1], self.block[0], self.block[1]
        )
    }
}

/// The launches of a run of one kernel with one configuration: which
/// kernel, how, how many times, and the bytes of the arrays it was given
/// (each counted once per launch: the traffic a streaming kernel makes),
/// summed over those launches. A host loop launches the same kernels on
/// every iteration, so a run keeps one entry per kernel and configuration,
/// in the order of their first launch, never one per launch.
#[derive(Clone, Debug, Serialize)]
pub struct Launch {
    pub kernel: String,
    pub config: LaunchConfig,
    pub count: usize,
    pub array_bytes: usize,
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` ({})", self.kernel, self.config)?;
        if self.count > 1 {
            write!(f, " ×{}", self.count)?;
        }
        Ok(())
    }
}

/// Where kernels run. The interpreter owns the order of work; a device
/// only moves data and launches.
pub trait Device {
    type Buf;
    /// Multiprocessors the launch policy fills.
    fn sms(&self) -> u64;
    /// Copies a host array (already of the kernel's element type) to the device.
    fn upload(&mut self, a: &NdArray) -> Result<Self::Buf, VerifyError>;
    /// A new array of `shape`, every element `fill`.
    fn alloc(
        &mut self,
        elem: ScalarType,
        shape: &[usize],
        fill: HVal,
    ) -> Result<Self::Buf, VerifyError>;
    /// Element `k` (flat) of an array, read back to the host.
    fn element(&mut self, a: &DevArray<Self::Buf>, k: usize) -> Result<HVal, VerifyError>;
    /// Launches `kernel`; arrays come back in `args` after the launch.
    fn launch(
        &mut self,
        kernel: &str,
        config: LaunchConfig,
        args: &mut Vec<KArg<Self::Buf>>,
    ) -> Result<(), VerifyError>;
    /// Copies an array back to the host.
    fn download(&mut self, a: &DevArray<Self::Buf>) -> Result<NdArray, VerifyError>;
    /// Brings back an array the run has no further use for. A device whose
    /// arrays live in host memory (the simulator) hands the buffer over
    /// instead of copying it; the default copies, as `download` does.
    fn download_last(&mut self, a: DevArray<Self::Buf>) -> Result<NdArray, VerifyError> {
        self.download(&a)
    }
    /// Overwrites a device array with `data` (its element type and size):
    /// a library step's result. By default a new buffer takes its place.
    fn write(&mut self, a: &mut DevArray<Self::Buf>, data: &NdArray) -> Result<(), VerifyError> {
        a.buf = self.upload(data)?;
        Ok(())
    }
    /// `c = op(a) @ op(b)` of C-ordered float matrices of one type on the
    /// device itself (`ta`/`tb`: the operand's transpose), when the device
    /// has a BLAS: cuBLAS's gemm on a GPU. `None` (the default, the
    /// simulator's): it has none, and the host computes the product.
    fn gemm(
        &mut self,
        _a: &DevArray<Self::Buf>,
        _b: &DevArray<Self::Buf>,
        _c: &mut DevArray<Self::Buf>,
        _trans: (bool, bool),
    ) -> Option<Result<(), VerifyError>> {
        None
    }
    /// `out = op(args)` for an `np.linalg` routine on the device arrays
    /// themselves, when the device has a LAPACK for it: cuSOLVER on a GPU.
    /// `None` (the default, the simulator's): the host computes it.
    fn linalg(
        &mut self,
        _op: LibraryOp,
        _args: &[&DevArray<Self::Buf>],
        _out: &mut DevArray<Self::Buf>,
    ) -> Option<Result<(), VerifyError>> {
        None
    }
}

/// Which arrays a run brings back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outputs {
    /// Every argument array and the returned values: for verification
    /// (an argument the original leaves alone must stay unchanged).
    All,
    /// What the emitted wrapper copies back: the arrays the function writes
    /// and the returned values. For timing.
    Wrapper,
    /// No argument array: the kernels' own timing (returned values are
    /// still read, as the host schedule ends by reading them).
    Returns,
}

/// What the kernels produced: the argument arrays after the run and the
/// returned values, as the original's would be compared.
#[derive(Clone, Debug)]
pub struct KernelRun {
    pub args: Vec<Option<NdArray>>,
    pub returns: Option<Vec<NdArray>>,
    /// The launches, one entry per kernel and configuration, in the order
    /// of their first launch.
    pub launches: Vec<Launch>,
    /// Bytes copied to the device (arguments, library steps' results) and
    /// back (results, library steps' operands).
    pub bytes_to_device: usize,
    pub bytes_to_host: usize,
    /// The library steps that ran on the host, one entry per call site.
    pub host_calls: Vec<HostCall>,
    /// Library steps run, on the device or the host, counting each repeat.
    pub library_calls: usize,
}

/// The runs of one library step ([`HostStep::Library`]): port computes it
/// on the host, its operands copied back and its result over (no cuSOLVER
/// yet), so its time is in the end-to-end figure and not the kernels'.
pub use port_reports::migration::HostCall;

impl KernelRun {
    /// Counts one launch of `kernel` with `config`.
    fn launched(&mut self, kernel: &str, config: LaunchConfig, array_bytes: usize) {
        match self
            .launches
            .iter_mut()
            .find(|l| l.kernel == kernel && l.config == config)
        {
            Some(l) => {
                l.count += 1;
                l.array_bytes += array_bytes;
            }
            None => self.launches.push(Launch {
                kernel: kernel.to_string(),
                config,
                count: 1,
                array_bytes,
            }),
        }
    }

    /// Counts one run of a library step.
    fn called(&mut self, call: &LibraryCall, down: usize, up: usize, seconds: f64) {
        let name = call.op.numpy_name();
        match self
            .host_calls
            .iter_mut()
            .find(|c| c.line == call.line && c.call == name)
        {
            Some(c) => {
                c.count += 1;
                c.bytes_to_host += down;
                c.bytes_to_device += up;
                c.seconds += seconds;
            }
            None => self.host_calls.push(HostCall {
                call: name.to_string(),
                line: call.line,
                count: 1,
                bytes_to_host: down,
                bytes_to_device: up,
                seconds,
            }),
        }
    }

    /// Launches in all, counting each repeat.
    pub fn launch_count(&self) -> usize {
        self.launches.iter().map(|l| l.count).sum()
    }
}

/// Device arrays by Python name. Names refer to arrays as Python names
/// refer to objects: several names may share one array (after `a = b` or a
/// rebinding in a host loop), and an array lives while a name holds it.
struct Arrays<B> {
    names: HashMap<String, usize>,
    bufs: HashMap<usize, DevArray<B>>,
    next: usize,
    /// Arrays below this id are the arguments': never freed.
    pinned: usize,
}

impl<B> Arrays<B> {
    fn new() -> Arrays<B> {
        Arrays {
            names: HashMap::new(),
            bufs: HashMap::new(),
            next: 0,
            pinned: 0,
        }
    }

    fn get(&self, name: &str) -> Option<&DevArray<B>> {
        self.names.get(name).and_then(|id| self.bufs.get(id))
    }

    fn id(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied()
    }

    fn by_id(&self, id: usize) -> Option<&DevArray<B>> {
        self.bufs.get(&id)
    }

    /// Brings array `id` back at the end of a run. `reads` counts the reads
    /// still to come of each array (never fewer than there will be); the
    /// last one takes the array out of the table and hands it to
    /// [`Device::download_last`], so a simulator run copies nothing back.
    fn bring_back<D: Device<Buf = B>>(
        &mut self,
        dev: &mut D,
        id: usize,
        reads: &mut HashMap<usize, usize>,
    ) -> Result<Option<NdArray>, VerifyError> {
        let left = reads.entry(id).or_insert(1);
        *left = left.saturating_sub(1);
        if *left == 0 {
            return self
                .bufs
                .remove(&id)
                .map(|a| dev.download_last(a))
                .transpose();
        }
        self.bufs.get(&id).map(|a| dev.download(a)).transpose()
    }

    /// Binds `name` to a new array (the one it held goes when no name holds it).
    fn insert(&mut self, name: String, a: DevArray<B>) -> usize {
        let id = self.next;
        self.next += 1;
        self.bufs.insert(id, a);
        if let Some(old) = self.names.insert(name, id) {
            self.collect(old);
        }
        id
    }

    /// Takes the array out for a launch; [`Arrays::restore`] puts it back.
    fn take(&mut self, name: &str) -> Option<(usize, DevArray<B>)> {
        let id = self.id(name)?;
        self.bufs.remove(&id).map(|a| (id, a))
    }

    fn restore(&mut self, id: usize, a: DevArray<B>) {
        self.bufs.insert(id, a);
    }

    /// `targets = sources`, all at once.
    fn rebind(&mut self, targets: &[String], sources: &[String]) -> Result<(), VerifyError> {
        let mut ids = Vec::new();
        for s in sources {
            ids.push(
                self.id(s)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no array `{s}` to rebind")))?,
            );
        }
        let mut old = Vec::new();
        for (t, id) in targets.iter().zip(ids) {
            if let Some(o) = self.names.insert(t.clone(), id) {
                old.push(o);
            }
        }
        for o in old {
            self.collect(o);
        }
        Ok(())
    }

    /// Frees array `id` when no name holds it (and it is not a parameter's).
    fn collect(&mut self, id: usize) {
        if !self.names.values().any(|&k| k == id) && id >= self.pinned {
            self.bufs.remove(&id);
        }
    }
}

struct State<B> {
    arrays: Arrays<B>,
    scalars: HashMap<String, HVal>,
}

impl<B> State<B> {
    fn eval<D: Device<Buf = B>>(&self, dev: &mut D, e: &Expr) -> Result<HVal, VerifyError> {
        Ok(match e {
            Expr::Lit(l) => match *l {
                Literal::Bool(b) => HVal::B(b),
                Literal::I32(i) => HVal::I(i64::from(i)),
                Literal::I64(i) => HVal::I(i),
                Literal::F32(f) => HVal::F(f64::from(f)),
                Literal::F64(f) => HVal::F(f),
            },
            Expr::Var(n) => *self
                .scalars
                .get(n)
                .ok_or_else(|| VerifyError::BadPlan(format!("no host value `{n}`")))?,
            Expr::Shape { array, axis } => {
                let a = self
                    .arrays
                    .get(array)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no array `{array}`")))?;
                HVal::I(*a.shape.get(*axis as usize).unwrap_or(&1) as i64)
            }
            Expr::Unary(op, a) => {
                let v = self.eval(dev, a)?;
                match (op, v) {
                    (UnaryOp::Neg, HVal::C(re, im)) => HVal::C(-re, -im),
                    (UnaryOp::Neg, HVal::F(f)) => HVal::F(-f),
                    (UnaryOp::Neg, HVal::N(i, t)) => HVal::N(wrap_int(i.wrapping_neg(), t), t),
                    (UnaryOp::Not, HVal::N(i, t)) => HVal::N(wrap_int(!i, t), t),
                    (UnaryOp::Neg, v) => HVal::I(-v.i()),
                    (UnaryOp::Not, HVal::B(b)) => HVal::B(!b),
                    (UnaryOp::Not, v) => HVal::I(!v.i()),
                }
            }
            Expr::Cast(t, a) => self.eval(dev, a)?.cast(*t),
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.eval(dev, a)?, self.eval(dev, b)?);
                let float = matches!(x, HVal::F(_)) || matches!(y, HVal::F(_));
                if matches!(x, HVal::C(..)) || matches!(y, HVal::C(..)) {
                    complex_binary(*op, x.c(), y.c())?
                } else if float {
                    let (x, y) = (x.f(), y.f());
                    HVal::F(match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        BinOp::Mul => x * y,
                        BinOp::Div => x / y,
                        BinOp::FloorDiv => (x / y).floor(),
                        BinOp::Rem => x % y,
                        BinOp::Min => x.min(y),
                        BinOp::Max => x.max(y),
                        _ => return Err(VerifyError::BadPlan("bit operation on floats".into())),
                    })
                } else if let Some(t) = x.narrow().or(y.narrow()) {
                    if matches!(op, BinOp::And | BinOp::Or) {
                        return Err(VerifyError::BadPlan("logic operator on integers".into()));
                    }
                    HVal::N(narrow_binary(*op, x.i(), y.i(), t), t)
                } else if matches!(op, BinOp::And | BinOp::Or) {
                    HVal::B(if *op == BinOp::And {
                        x.b() && y.b()
                    } else {
                        x.b() || y.b()
                    })
                } else if op.is_checked() {
                    // Python's ints on the host: one that leaves int64 is
                    // a call the migrated function gives the original.
                    let (x, y) = (x.i(), y.i());
                    let v = match op {
                        BinOp::CheckedAdd => x.checked_add(y),
                        BinOp::CheckedSub => x.checked_sub(y),
                        _ => x.checked_mul(y),
                    };
                    HVal::I(v.ok_or_else(|| VerifyError::Overflow("the host schedule".into()))?)
                } else {
                    let (x, y) = (x.i(), y.i());
                    let d = if y == 0 { 1 } else { y };
                    HVal::I(match op {
                        BinOp::Add => x.wrapping_add(y),
                        BinOp::Sub => x.wrapping_sub(y),
                        BinOp::Mul => x.wrapping_mul(y),
                        BinOp::Div => x.wrapping_div(d),
                        BinOp::FloorDiv => {
                            x.div_euclid(d) - i64::from(d < 0 && x.rem_euclid(d) != 0)
                        }
                        BinOp::Rem => x.wrapping_rem(d),
                        BinOp::Min => x.min(y),
                        BinOp::Max => x.max(y),
                        BinOp::BitAnd => x & y,
                        BinOp::BitOr => x | y,
                        BinOp::BitXor => x ^ y,
                        BinOp::Shl => x.wrapping_shl(y as u32),
                        BinOp::Shr => x.wrapping_shr(y as u32),
                        BinOp::And
                        | BinOp::Or
                        | BinOp::CheckedAdd
                        | BinOp::CheckedSub
                        | BinOp::CheckedMul => unreachable!("handled above"),
                    })
                }
            }
            Expr::Cmp(op, a, b) => {
                let (x, y) = (self.eval(dev, a)?, self.eval(dev, b)?);
                if let (CmpOp::Eq | CmpOp::Ne, HVal::C(..), _)
                | (CmpOp::Eq | CmpOp::Ne, _, HVal::C(..)) = (op, x, y)
                {
                    return Ok(HVal::B((x.c() == y.c()) == (*op == CmpOp::Eq)));
                }
                if x.narrow() == Some(ScalarType::U64) || y.narrow() == Some(ScalarType::U64) {
                    return Ok(HVal::B(op.holds(x.i() as u64, y.i() as u64)));
                }
                HVal::B(op.holds(x.f(), y.f()))
            }
            Expr::Select(c, a, b) => {
                if self.eval(dev, c)?.b() {
                    self.eval(dev, a)?
                } else {
                    self.eval(dev, b)?
                }
            }
            Expr::Complex(re, im) => HVal::C(self.eval(dev, re)?.f(), self.eval(dev, im)?.f()),
            Expr::Part(p, z) => {
                let (re, im) = self.eval(dev, z)?.c();
                HVal::F(if *p == port_codegen::ir::Part::Re {
                    re
                } else {
                    im
                })
            }
            Expr::Math(MathFn::Fabs, args) if matches!(self.eval(dev, &args[0])?, HVal::C(..)) => {
                let (re, im) = self.eval(dev, &args[0])?.c();
                HVal::F(re.hypot(im))
            }
            // `n ** k` of host integers (a shape `R ** K`): exact, as
            // Python's; NumPy refuses a negative power of an integer.
            Expr::Math(MathFn::Pow, args)
                if args.len() == 2
                    && args
                        .iter()
                        .all(|a| matches!(self.eval(dev, a), Ok(HVal::I(_)))) =>
            {
                let (HVal::I(b), HVal::I(k)) =
                    (self.eval(dev, &args[0])?, self.eval(dev, &args[1])?)
                else {
                    unreachable!("checked above")
                };
                let Ok(k) = u32::try_from(k) else {
                    return Err(VerifyError::BadPlan(format!(
                        "`{b} ** {k}`: integers to negative integer powers are not allowed (NumPy raises)"
                    )));
                };
                HVal::I(b.wrapping_pow(k))
            }
            Expr::Math(f, args)
                if args
                    .iter()
                    .any(|a| matches!(self.eval(dev, a), Ok(HVal::C(..)))) =>
            {
                // Complex math on the host, as the kernels' formulas
                // compute it (NumPy's principal branches).
                use num_complex::Complex64 as C;
                let z = |v: HVal| {
                    let (re, im) = v.c();
                    C::new(re, im)
                };
                let x = z(self.eval(dev, &args[0])?);
                let y = match args.get(1) {
                    Some(a) => z(self.eval(dev, a)?),
                    None => C::new(0.0, 0.0),
                };
                let r = match f {
                    MathFn::Sqrt => x.sqrt(),
                    MathFn::Exp => x.exp(),
                    MathFn::Log => x.ln(),
                    MathFn::Log10 => x.log10(),
                    MathFn::Log2 => x.log2(),
                    MathFn::Sin => x.sin(),
                    MathFn::Cos => x.cos(),
                    MathFn::Tan => x.tan(),
                    MathFn::Sinh => x.sinh(),
                    MathFn::Cosh => x.cosh(),
                    MathFn::Tanh => x.tanh(),
                    MathFn::Pow => x.powc(y),
                    other => {
                        return Err(VerifyError::BadPlan(format!(
                            "host code calls {} of a complex number",
                            other.name()
                        )))
                    }
                };
                HVal::C(r.re, r.im)
            }
            Expr::Math(f, args) => {
                let x = self.eval(dev, &args[0])?.f();
                let y = args
                    .get(1)
                    .map(|a| self.eval(dev, a))
                    .transpose()?
                    .map(HVal::f)
                    .unwrap_or(0.0);
                HVal::F(match f {
                    MathFn::Sqrt => x.sqrt(),
                    MathFn::Exp => x.exp(),
                    MathFn::Log => x.ln(),
                    MathFn::Fabs => x.abs(),
                    MathFn::Floor => x.floor(),
                    MathFn::Ceil => x.ceil(),
                    MathFn::Trunc => x.trunc(),
                    MathFn::Rint => x.round_ties_even(),
                    MathFn::Pow => x.powf(y),
                    MathFn::Sin => x.sin(),
                    MathFn::Cos => x.cos(),
                    MathFn::Tan => x.tan(),
                    MathFn::Tanh => x.tanh(),
                    MathFn::Sinh => x.sinh(),
                    MathFn::Cosh => x.cosh(),
                    MathFn::Asin => x.asin(),
                    MathFn::Acos => x.acos(),
                    MathFn::Atan => x.atan(),
                    MathFn::Asinh => x.asinh(),
                    MathFn::Acosh => x.acosh(),
                    MathFn::Atanh => x.atanh(),
                    MathFn::Atan2 => x.atan2(y),
                    MathFn::Hypot => x.hypot(y),
                    MathFn::Exp2 => x.exp2(),
                    MathFn::Expm1 => x.exp_m1(),
                    MathFn::Log2 => x.log2(),
                    MathFn::Log10 => x.log10(),
                    MathFn::Log1p => x.ln_1p(),
                    MathFn::Cbrt => x.cbrt(),
                    MathFn::Fmod => x % y,
                    MathFn::Fmin => x.min(y),
                    MathFn::Fmax => x.max(y),
                    MathFn::Copysign => x.copysign(y),
                    // Rust's std has no special functions: musl's, as
                    // the `libm` crate ports them.
                    MathFn::Erf => libm::erf(x),
                    MathFn::Erfc => libm::erfc(x),
                    MathFn::Tgamma => libm::tgamma(x),
                    MathFn::Lgamma => libm::lgamma(x),
                })
            }
            Expr::Load(r) => {
                let a = self
                    .arrays
                    .get(&r.array)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no array `{}`", r.array)))?;
                let k = self.eval(dev, &r.indices[0])?.i() as usize;
                if k >= a.len() {
                    return Err(VerifyError::BadPlan(format!(
                        "host code reads `{}[{k}]` of {} elements",
                        r.array,
                        a.len()
                    )));
                }
                dev.element(a, k)?
            }
            other => {
                return Err(VerifyError::BadPlan(format!(
                    "host code cannot evaluate `{}`",
                    port_codegen::text::expr_text(other)
                )))
            }
        })
    }
}

impl<B> State<B> {
    /// The launch configuration of a launch step: the emitted Python's
    /// policy (`_port_blocks`) on a device with `dev.sms()` multiprocessors.
    fn launch_config<D: Device<Buf = B>>(
        &self,
        dev: &mut D,
        shape: &LaunchShape,
    ) -> Result<LaunchConfig, VerifyError> {
        let sms = dev.sms();
        Ok(match shape {
            LaunchShape::Grid1 { n } => LaunchConfig {
                grid: [blocks_for(self.eval(dev, n)?.i(), THREADS_1D, sms), 1],
                block: [THREADS_1D, 1],
            },
            LaunchShape::Grid2 { rows, cols } => {
                let r = self.eval(dev, rows)?.i().max(1);
                let c = self.eval(dev, cols)?.i().max(1);
                let t = i64::from(THREADS_2D);
                LaunchConfig {
                    grid: [
                        ((c + t - 1) / t).min(65_535) as u32,
                        ((r + t - 1) / t).min(65_535) as u32,
                    ],
                    block: [THREADS_2D, THREADS_2D],
                }
            }
            LaunchShape::Reduce { n } => LaunchConfig {
                grid: [reduce_blocks_for(self.eval(dev, n)?.i(), sms), 1],
                block: [THREADS_REDUCE, 1],
            },
            LaunchShape::OneBlock => LaunchConfig {
                grid: [1, 1],
                block: [THREADS_REDUCE, 1],
            },
            LaunchShape::Persistent { threads } => LaunchConfig {
                grid: [1, 1],
                block: [*threads, 1],
            },
            LaunchShape::Blocks { n } => LaunchConfig {
                grid: [blocks_for(self.eval(dev, n)?.i(), 1, sms), 1],
                block: [THREADS_REDUCE, 1],
            },
        })
    }

    fn array(&self, name: &str) -> Result<&DevArray<B>, VerifyError> {
        self.arrays
            .get(name)
            .ok_or_else(|| VerifyError::BadPlan(format!("no array `{name}`")))
    }
}

/// The first launch that takes array `name`, with its configuration when
/// it can be worked out already: what a failed allocation or copy was for.
fn user_of<B, D: Device<Buf = B>>(
    plan: &KernelPlan,
    st: &State<B>,
    dev: &mut D,
    name: &str,
) -> String {
    let mut found: Option<(&String, &LaunchShape)> = None;
    HostStep::walk(&plan.steps, &mut |s| {
        if let HostStep::Launch {
            kernel,
            args,
            shape,
        } = s
        {
            if found.is_none() && args.iter().any(|a| a == name) {
                found = Some((kernel, shape));
            }
        }
    });
    match found {
        Some((kernel, shape)) => match st.launch_config(dev, shape) {
            Ok(c) => format!(" for kernel `{kernel}` ({c})"),
            Err(_) => format!(" for kernel `{kernel}`"),
        },
        None => String::new(),
    }
}

/// Adds what the data was for to a failed allocation or copy.
fn for_kernel(e: VerifyError, what: String) -> VerifyError {
    match e {
        VerifyError::Cuda(m) => VerifyError::Cuda(format!("{what}: {m}")),
        other => other,
    }
}

/// Runs the plan's host program and kernels on `dev` over `inputs`.
pub fn run_plan<D: Device>(
    plan: &KernelPlan,
    inputs: &Inputs,
    dev: &mut D,
    outputs: Outputs,
) -> Result<KernelRun, VerifyError> {
    let mut st: State<D::Buf> = State {
        arrays: Arrays::new(),
        scalars: HashMap::new(),
    };
    let mut run = KernelRun {
        args: Vec::new(),
        returns: None,
        launches: Vec::new(),
        bytes_to_device: 0,
        bytes_to_host: 0,
        host_calls: Vec::new(),
        library_calls: 0,
    };
    if inputs.values.len() != plan.params.len() {
        return Err(VerifyError::BadData(format!(
            "{} inputs for {} arguments",
            inputs.values.len(),
            plan.params.len()
        )));
    }
    // A ufunc's element-wise inputs are broadcast together (NumPy's rule),
    // and its result has the broadcast shape.
    let mut ufunc_shape: Option<Vec<usize>> = None;
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for (p, (_, v)) in plan.params.iter().zip(&inputs.values) {
        if let (true, InputValue::Array(a)) = (p.elementwise, v) {
            shapes.push(a.shape.clone());
        }
    }
    let common = broadcast_shape(&shapes)?;
    for (p, (_, v)) in plan.params.iter().zip(&inputs.values) {
        let broadcast;
        let v = match (p.elementwise, v, &common) {
            (true, InputValue::Array(a), Some(shape)) => {
                broadcast = InputValue::Array(broadcast_to(a, shape));
                &broadcast
            }
            _ => v,
        };
        match (p.kernel_ty, v) {
            (ArgType::Array(at), InputValue::Array(a)) => {
                if p.elementwise
                    && ufunc_shape
                        .as_ref()
                        .is_none_or(|s| s.iter().product::<usize>() < a.len())
                {
                    ufunc_shape = Some(a.shape.clone());
                }
                // Borrowed as it is where it needs no conversion: an
                // upload makes no host copy of a large input.
                let mut a = if a.elem() == at.elem {
                    std::borrow::Cow::Borrowed(a)
                } else {
                    std::borrow::Cow::Owned(a.convert(at.elem))
                };
                if p.elementwise || a.shape.is_empty() {
                    // A ufunc's argument: flattened.
                    let n = a.len();
                    a.to_mut().shape = vec![n];
                }
                if a.shape.len() != at.ndim as usize {
                    return Err(VerifyError::BadData(format!(
                        "`{}` has {} dimensions, its type {} has {}",
                        p.name,
                        a.shape.len(),
                        p.ty,
                        at.ndim
                    )));
                }
                let buf = dev.upload(&a).map_err(|e| {
                    let why = user_of(plan, &st, dev, &p.name);
                    for_kernel(e, format!("copying `{}` to the device{why}", p.name))
                })?;
                let d = DevArray {
                    buf,
                    shape: a.shape.clone(),
                    elem: at.elem,
                };
                run.bytes_to_device += d.bytes();
                st.arrays.insert(p.name.clone(), d);
            }
            (ArgType::Array(at), v @ (InputValue::Scalar(..) | InputValue::Complex(..))) => {
                if ufunc_shape.is_none() {
                    ufunc_shape = Some(Vec::new());
                }
                // One element: a complex one uploaded whole.
                let buf = match *v {
                    InputValue::Complex(_, re, im) => dev.upload(
                        &NdArray {
                            shape: vec![1],
                            data: port_codegen::sim::ArrayData::C128(vec![[re, im]]),
                        }
                        .convert(at.elem),
                    )?,
                    InputValue::Scalar(_, x) => dev.alloc(at.elem, &[1], HVal::F(x))?,
                    InputValue::Array(_) => unreachable!("matched by the arm above"),
                };
                run.bytes_to_device += elem_size(at.elem);
                st.arrays.insert(
                    p.name.clone(),
                    DevArray {
                        buf,
                        shape: vec![1],
                        elem: at.elem,
                    },
                );
            }
            (ArgType::Scalar(t), InputValue::Scalar(_, x)) => {
                st.scalars.insert(p.name.clone(), HVal::F(*x).cast(t));
            }
            (ArgType::Scalar(t), InputValue::Complex(_, re, im)) => {
                st.scalars.insert(p.name.clone(), HVal::C(*re, *im).cast(t));
            }
            (ArgType::Scalar(_), InputValue::Array(_)) => {
                return Err(VerifyError::BadData(format!(
                    "`{}` is typed {} but the input is an array",
                    p.name, p.ty
                )))
            }
        }
    }
    st.arrays.pinned = st.arrays.next;
    let homes: Vec<Option<usize>> = plan.params.iter().map(|p| st.arrays.id(&p.name)).collect();
    let mut budget = STEP_BUDGET;
    exec_steps(plan, &plan.steps, &mut st, dev, &mut run, &mut budget)?;
    let wanted = |p: &PlanParam| match outputs {
        Outputs::All => true,
        Outputs::Wrapper => plan.mutated.contains(&p.name),
        Outputs::Returns => false,
    };
    // Every array the reads below may bring back, counted once per read
    // (a returned argument already brought back is not read again, so this
    // may count more reads than happen, never fewer).
    let mut reads: HashMap<usize, usize> = HashMap::new();
    let mut returned = Vec::new();
    if let Some(r) = &plan.ret {
        tuple_leaves(r, &mut returned);
    }
    let arg_reads = plan.params.iter().enumerate().filter_map(|(k, p)| {
        let array = matches!(p.kernel_ty, ArgType::Array(_)) && !p.elementwise;
        homes[k].filter(|_| array && wanted(p))
    });
    let return_reads = returned.iter().filter_map(|v| match v {
        HostValue::Array(n) => st.arrays.id(n),
        _ => None,
    });
    for id in arg_reads.chain(return_reads) {
        *reads.entry(id).or_default() += 1;
    }
    for (k, p) in plan.params.iter().enumerate() {
        run.args.push(match p.kernel_ty {
            ArgType::Array(_) if !p.elementwise && wanted(p) => match homes[k] {
                Some(id) => {
                    run.bytes_to_host += st.arrays.by_id(id).map_or(0, |a| a.bytes());
                    st.arrays
                        .bring_back(dev, id, &mut reads)?
                        .map(|nd| nd.into_elem(p.ty.elem()))
                }
                None => None,
            },
            _ => None,
        });
    }
    // One array passed as two arguments (`f(a, a)`): the wrapper copies it
    // to the device once per argument and copies back what the original
    // mutates, in `plan.mutated`'s order, so the caller's array ends
    // holding the last of those, and both arguments name it.
    for (b, a) in &inputs.same {
        let pos = |n: &String| plan.params.iter().position(|p| &p.name == n);
        let (Some(ka), Some(kb)) = (pos(a), pos(b)) else {
            continue;
        };
        let last = match plan.mutated.iter().rev().find(|m| *m == a || *m == b) {
            Some(m) if m == a => ka,
            Some(_) => kb,
            None => continue,
        };
        let v = run.args[last].clone();
        run.args[ka] = v.clone();
        run.args[kb] = v;
    }
    let shape_out = |mut nd: NdArray| {
        if let Some(s) = &ufunc_shape {
            if s.iter().product::<usize>() == nd.len() {
                nd.shape = s.clone();
            }
        }
        nd
    };
    run.returns = match &plan.ret {
        None => None,
        Some(tuple @ HostValue::Tuple(_)) => {
            // Nested tuples (`return out, (x, w, b)`) are compared item by
            // item, depth first, as the original's are.
            let mut items = Vec::new();
            tuple_leaves(tuple, &mut items);
            let mut v = Vec::new();
            for it in items {
                v.push(shape_out(value(
                    &mut st, dev, plan, &homes, it, &mut run, &mut reads,
                )?));
            }
            Some(v)
        }
        Some(one) => Some(vec![shape_out(value(
            &mut st, dev, plan, &homes, one, &mut run, &mut reads,
        )?)]),
    };
    Ok(run)
}

/// The values of a (nested) tuple result, depth first.
fn tuple_leaves<'a>(v: &'a HostValue, out: &mut Vec<&'a HostValue>) {
    match v {
        HostValue::Tuple(items) => items.iter().for_each(|it| tuple_leaves(it, out)),
        leaf => out.push(leaf),
    }
}

/// Host-loop iterations a run may take in all: a plan whose loops never end
/// (a `while` whose condition a mismatch keeps true) stops with an error.
const STEP_BUDGET: u64 = 50_000_000;

/// How a list of steps ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Normal,
    Break,
}

fn exec_steps<D: Device>(
    plan: &KernelPlan,
    steps: &[HostStep],
    st: &mut State<D::Buf>,
    dev: &mut D,
    run: &mut KernelRun,
    budget: &mut u64,
) -> Result<Flow, VerifyError> {
    for s in steps {
        match s {
            HostStep::Scalar { name, ty, value } => {
                let v = st.eval(dev, value)?.cast(*ty);
                st.scalars.insert(name.clone(), v);
            }
            HostStep::Alloc {
                name,
                elem,
                shape,
                fill,
            } => {
                let mut dims = Vec::new();
                for d in shape {
                    dims.push(st.eval(dev, d)?.i().max(0) as usize);
                }
                let v = match fill {
                    Fill::Empty => HVal::I(0),
                    Fill::Value(e) => st.eval(dev, e)?,
                };
                let buf = dev.alloc(*elem, &dims, v).map_err(|e| {
                    let bytes = array_bytes(*elem, &dims)
                        .map_or_else(|| "more than 2^64".to_string(), |b| b.to_string());
                    let why = user_of(plan, st, dev, name);
                    for_kernel(e, format!("allocating `{name}` ({bytes} bytes){why}"))
                })?;
                st.arrays.insert(
                    name.clone(),
                    DevArray {
                        buf,
                        shape: dims,
                        elem: *elem,
                    },
                );
            }
            HostStep::ReadElement {
                name,
                ty,
                array,
                index,
            } => {
                let mut ks = Vec::new();
                for e in index {
                    ks.push(st.eval(dev, e)?.i());
                }
                let a = st.array(array)?;
                let mut flat: i64 = 0;
                for (d, &k) in ks.iter().enumerate() {
                    let n = *a.shape.get(d).unwrap_or(&1) as i64;
                    if k < 0 || k >= n {
                        return Err(VerifyError::BadData(format!(
                            "host code reads `{array}` at index {k} of axis {d}, of extent {n} (IndexError in Python)"
                        )));
                    }
                    flat = flat * n + k;
                }
                let v = dev.element(a, flat as usize)?.cast(*ty);
                run.bytes_to_host += elem_size(a.elem);
                st.scalars.insert(name.clone(), v);
            }
            HostStep::ReadBack { name, ty, array } => {
                let a = st.array(array)?;
                let v = dev.element(a, 0)?.cast(*ty);
                run.bytes_to_host += elem_size(a.elem);
                st.scalars.insert(name.clone(), v);
            }
            HostStep::Launch {
                kernel,
                args,
                shape,
            } => {
                let k = plan
                    .module
                    .kernel(kernel)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no kernel `{kernel}`")))?;
                let config = st.launch_config(dev, shape)?;
                let mut kargs = Vec::new();
                let mut ids = Vec::new();
                let mut array_bytes = 0;
                let mut missing = None;
                for (a, p) in args.iter().zip(&k.params) {
                    match p.ty {
                        Type::Array(_) => match st.arrays.take(a) {
                            Some((id, arr)) => {
                                array_bytes += arr.bytes();
                                ids.push(id);
                                kargs.push(KArg::Array(arr));
                            }
                            None => {
                                missing = Some(if st.arrays.id(a).is_some() {
                                    format!("`{a}` is passed twice to `{kernel}` (two names of one array)")
                                } else {
                                    format!("no array `{a}` for `{kernel}`")
                                });
                                break;
                            }
                        },
                        Type::Scalar(t) => match st.scalars.get(a).copied() {
                            Some(v) => kargs.push(KArg::Scalar(t, v.cast(t))),
                            None => {
                                missing = Some(format!("no value `{a}` for `{kernel}`"));
                                break;
                            }
                        },
                    }
                }
                let res = match missing {
                    None => dev.launch(kernel, config, &mut kargs),
                    Some(m) => Err(VerifyError::BadPlan(m)),
                };
                let mut ids = ids.into_iter();
                for v in kargs {
                    if let KArg::Array(arr) = v {
                        st.arrays
                            .restore(ids.next().expect("one id per array"), arr);
                    }
                }
                res?;
                run.launched(kernel, config, array_bytes);
            }
            HostStep::Loop {
                var,
                start,
                stop,
                step,
                body,
            } => {
                let (a, b, c) = (
                    st.eval(dev, start)?.i(),
                    st.eval(dev, stop)?.i(),
                    st.eval(dev, step)?.i(),
                );
                if c == 0 {
                    return Err(VerifyError::BadData(format!(
                        "the host loop over `{var}` has a step of 0 (Python raises ValueError)"
                    )));
                }
                let mut i = a;
                while (c > 0 && i < b) || (c < 0 && i > b) {
                    spend(budget, var)?;
                    st.scalars.insert(var.clone(), HVal::I(i));
                    if exec_steps(plan, body, st, dev, run, budget)? == Flow::Break {
                        break;
                    }
                    i += c;
                }
            }
            HostStep::While { test, cond, body } => loop {
                spend(budget, "while")?;
                if exec_steps(plan, test, st, dev, run, budget)? == Flow::Break {
                    return Err(VerifyError::BadPlan("`break` in a loop condition".into()));
                }
                if !st.eval(dev, cond)?.b() {
                    break;
                }
                if exec_steps(plan, body, st, dev, run, budget)? == Flow::Break {
                    break;
                }
            },
            HostStep::If { cond, then, orelse } => {
                let branch = if st.eval(dev, cond)?.b() {
                    then
                } else {
                    orelse
                };
                if exec_steps(plan, branch, st, dev, run, budget)? == Flow::Break {
                    return Ok(Flow::Break);
                }
            }
            HostStep::Break => return Ok(Flow::Break),
            HostStep::Raise { line, what, .. } => {
                return Err(VerifyError::Raised(format!("{what} (line {line})")))
            }
            HostStep::Comment(_) => {}
            HostStep::Guard(g) => {
                let (l, r) = (st.eval(dev, &g.lhs)?.i(), st.eval(dev, &g.rhs)?.i());
                if !g.relation.holds(l, r) {
                    return Err(VerifyError::Shape(g.failure(l, r)));
                }
            }
            HostStep::Rebind { targets, sources } => st.arrays.rebind(targets, sources)?,
            HostStep::Library(call) => library(call, st, dev, run)?,
        }
    }
    Ok(Flow::Normal)
}

/// A library step: its operands read back, the routine computed on the
/// host ([`crate::linalg`]), the result written into its device array.
fn library<D: Device>(
    call: &LibraryCall,
    st: &mut State<D::Buf>,
    dev: &mut D,
    run: &mut KernelRun,
) -> Result<(), VerifyError> {
    let started = std::time::Instant::now();
    run.library_calls += 1;
    if let LibraryOp::Matmul { ta, tb } = call.op {
        let (id, mut out) = st
            .arrays
            .take(&call.out)
            .ok_or_else(|| VerifyError::BadPlan(format!("no array `{}`", call.out)))?;
        let done = match (call.args.first(), call.args.get(1)) {
            (Some(a), Some(b)) => match (st.array(a), st.array(b)) {
                (Ok(a), Ok(b)) => dev.gemm(a, b, &mut out, (ta, tb)),
                (Err(e), _) | (_, Err(e)) => Some(Err(e)),
            },
            _ => Some(Err(VerifyError::BadPlan(format!(
                "`@` at line {} without two operands",
                call.line
            )))),
        };
        st.arrays.restore(id, out);
        if let Some(r) = done {
            return r.map_err(|e| match e {
                VerifyError::Cuda(m) => {
                    VerifyError::Cuda(format!("cuBLAS's gemm for `@` at line {}: {m}", call.line))
                }
                e => e,
            });
        }
    }
    if !matches!(call.op, LibraryOp::Matmul { .. }) {
        let (id, mut out) = st
            .arrays
            .take(&call.out)
            .ok_or_else(|| VerifyError::BadPlan(format!("no array `{}`", call.out)))?;
        let operands: Result<Vec<_>, _> = call.args.iter().map(|a| st.array(a)).collect();
        let done = match operands {
            Ok(ops) => dev.linalg(call.op, &ops, &mut out),
            Err(e) => Some(Err(e)),
        };
        st.arrays.restore(id, out);
        if let Some(r) = done {
            return r.map_err(|e| match e {
                VerifyError::LinAlg(m) => VerifyError::LinAlg(format!(
                    "{m} (`{}` at line {}, on cuSOLVER)",
                    call.op.numpy_name(),
                    call.line
                )),
                VerifyError::Cuda(m) => VerifyError::Cuda(format!(
                    "`{}` at line {}: {m}",
                    call.op.numpy_name(),
                    call.line
                )),
                e => e,
            });
        }
    }
    let mut operands = Vec::new();
    let mut down = 0;
    for a in &call.args {
        let arr = st.array(a)?;
        down += arr.bytes();
        operands.push(dev.download(arr)?);
    }
    let result = match (call.op.order_axis(), operands.first()) {
        (Some(_), Some(a)) => crate::order::run(call.op, a),
        _ => crate::linalg::run(call.op, &operands),
    }
    .map_err(|e| {
        VerifyError::LinAlg(format!(
            "{} (`{}` at line {}, run on the host)",
            e.0,
            call.op.numpy_name(),
            call.line
        ))
    })?;
    let (id, mut out) = st
        .arrays
        .take(&call.out)
        .ok_or_else(|| VerifyError::BadPlan(format!("no array `{}`", call.out)))?;
    let res = if out.len() == result.len() {
        let data = NdArray {
            shape: out.shape.clone(),
            data: result.convert(out.elem).data,
        };
        dev.write(&mut out, &data)
    } else {
        Err(VerifyError::BadPlan(format!(
            "`{}` at line {} gives {} elements for `{}` of {}",
            call.op.numpy_name(),
            call.line,
            result.len(),
            call.out,
            out.len()
        )))
    };
    let up = out.bytes();
    st.arrays.restore(id, out);
    res?;
    run.bytes_to_host += down;
    run.bytes_to_device += up;
    run.called(call, down, up, started.elapsed().as_secs_f64());
    Ok(())
}

fn spend(budget: &mut u64, what: &str) -> Result<(), VerifyError> {
    if *budget == 0 {
        return Err(VerifyError::BadData(format!(
            "the host loop over `{what}` ran past {STEP_BUDGET} iterations in all: stopped"
        )));
    }
    *budget -= 1;
    Ok(())
}

/// NumPy's broadcast shape of several shapes (`None` for none).
fn broadcast_shape(shapes: &[Vec<usize>]) -> Result<Option<Vec<usize>>, VerifyError> {
    if shapes.is_empty() {
        return Ok(None);
    }
    let nd = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1usize; nd];
    for s in shapes {
        for (k, &d) in s.iter().enumerate() {
            let o = &mut out[nd - s.len() + k];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(VerifyError::BadData(format!(
                    "arguments of shapes {shapes:?} do not broadcast together"
                )));
            }
        }
    }
    Ok(Some(out))
}

/// `a` repeated to `shape` (which it broadcasts to), in C order.
fn broadcast_to(a: &NdArray, shape: &[usize]) -> NdArray {
    if a.shape == shape {
        return a.clone();
    }
    let n: usize = shape.iter().product();
    let off = shape.len() - a.shape.len();
    let mut strides = vec![0usize; shape.len()];
    let mut s = 1usize;
    for k in (0..a.shape.len()).rev() {
        strides[off + k] = if a.shape[k] == 1 { 0 } else { s };
        s *= a.shape[k];
    }
    let index = |mut flat: usize| {
        let mut src = 0;
        for d in (0..shape.len()).rev() {
            src += (flat % shape[d]) * strides[d];
            flat /= shape[d];
        }
        src
    };
    let data = match &a.data {
        ArrayData::Bool(v) => ArrayData::Bool((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::I32(v) => ArrayData::I32((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::I64(v) => ArrayData::I64((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::F32(v) => ArrayData::F32((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::F64(v) => ArrayData::F64((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::I8(v) => ArrayData::I8((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::I16(v) => ArrayData::I16((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::U8(v) => ArrayData::U8((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::U16(v) => ArrayData::U16((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::U32(v) => ArrayData::U32((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::U64(v) => ArrayData::U64((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::C64(v) => ArrayData::C64((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::C128(v) => ArrayData::C128((0..n).map(|k| v[index(k)]).collect()),
    };
    NdArray {
        shape: shape.to_vec(),
        data,
    }
}

fn value<B, D: Device<Buf = B>>(
    st: &mut State<B>,
    dev: &mut D,
    plan: &KernelPlan,
    homes: &[Option<usize>],
    v: &HostValue,
    run: &mut KernelRun,
    reads: &mut HashMap<usize, usize>,
) -> Result<NdArray, VerifyError> {
    match v {
        HostValue::Array(n) => {
            // An argument array the run already brought back is not copied
            // twice (unless the name now holds another array).
            let copied = plan
                .params
                .iter()
                .position(|p| p.name == *n)
                .filter(|&k| homes[k].is_some() && homes[k] == st.arrays.id(n))
                .and_then(|k| run.args.get(k).cloned().flatten());
            if let Some(nd) = copied {
                return Ok(nd);
            }
            run.bytes_to_host += st.array(n)?.bytes();
            let id = st.arrays.id(n);
            let mut nd = match id.map(|id| st.arrays.bring_back(dev, id, reads)) {
                Some(r) => r?,
                None => None,
            }
            .ok_or_else(|| VerifyError::BadPlan(format!("no array `{n}`")))?;
            if plan.fp32 && nd.elem() == ScalarType::F32 {
                nd = nd.convert(ScalarType::F64);
            }
            if let Some(p) = plan.params.iter().find(|p| p.name == *n) {
                nd = nd.into_elem(p.ty.elem());
            }
            Ok(nd)
        }
        HostValue::Scalar(n, t) => {
            let x = st
                .scalars
                .get(n)
                .copied()
                .ok_or_else(|| VerifyError::BadPlan(format!("no value `{n}`")))?;
            let data = match t {
                ScalarType::Bool => ArrayData::Bool(vec![x.b()]),
                ScalarType::I32 => ArrayData::I32(vec![x.i() as i32]),
                ScalarType::I64 => ArrayData::I64(vec![x.i()]),
                // In its own dtype, as the original's is compared (an
                // `--fp32` plan's float32 against the original's float64).
                ScalarType::F32 if !plan.fp32 => ArrayData::F32(vec![x.f() as f32]),
                ScalarType::C64 if !plan.fp32 => {
                    let (re, im) = x.cast(*t).c();
                    ArrayData::C64(vec![[re as f32, im as f32]])
                }
                ScalarType::F32 | ScalarType::F64 => ArrayData::F64(vec![x.f()]),
                ScalarType::C64 | ScalarType::C128 => {
                    let (re, im) = x.cast(*t).c();
                    ArrayData::C128(vec![[re, im]])
                }
                t => crate::npy::from_i64s(*t, &[x.cast(*t).i()]),
            };
            Ok(NdArray {
                shape: vec![],
                data,
            })
        }
        HostValue::ScalarOrStart {
            name,
            ty,
            trip,
            start,
            start_ty,
            ..
        } => {
            let ran = st
                .scalars
                .get(trip)
                .copied()
                .ok_or_else(|| VerifyError::BadPlan(format!("no value `{trip}`")))?
                .i()
                > 0;
            let one = if ran {
                HostValue::Scalar(name.clone(), *ty)
            } else {
                HostValue::Scalar(start.clone(), *start_ty)
            };
            value(st, dev, plan, homes, &one, run, reads)
        }
        HostValue::Tuple(_) => Err(VerifyError::BadPlan("nested tuple result".into())),
    }
}
