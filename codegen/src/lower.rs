//! Lowering of verified kernel IR to LLVM IR, shared by the GPU (NVPTX) and
//! host-simulator targets. The two differ only at a few edges: where thread
//! indices come from, what a barrier is, where shared memory lives, and which
//! math library is called.
//!
//! # Calling convention (the ABI a launcher must follow)
//!
//! A kernel's parameters are its IR parameters flattened, in order:
//! - a scalar is passed as itself (`bool` as one byte, 0 or 1);
//! - an array is passed as its data pointer, then `ndim` × `i64` shape, then —
//!   only for arrays not declared C-contiguous — `ndim` × `i64` strides, **in
//!   elements** (NumPy's byte strides divided by the item size). C-contiguous
//!   arrays take no strides: their addresses come from the shape alone, the
//!   fast path.
//! - in debug mode, and in every module with Python int arithmetic checked
//!   for overflow ([`Module::checks_overflow`]), one more trailing pointer to
//!   an [`ErrorRecord`]-shaped buffer of 10 × `u64`, zeroed before launch
//!   (see [`crate::DebugRecord`]; an overflow writes [`OVERFLOW_FLAG`] into
//!   its first field).
//!
//! [`kernel_abi`] lists this for a kernel. Device functions use the same
//! flattening internally. On the host the kernel also takes a leading pointer
//! to the thread's context (see [`crate::sim`]) and a generated entry
//! `__port_entry_<kernel>(ctx, slots)` unpacks the parameters from an array of
//! 8-byte slots.
//!
//! # Index width
//!
//! Shapes, strides, addresses and `parallel for` variables are 64-bit, so
//! arrays of more than 2³¹ elements work; `i32` indices are sign-extended.
//! Thread indices are read as 32-bit registers (as in CUDA) and widened.
//!
//! # Defined behaviour where LLVM has none
//!
//! Integer division and remainder by zero (and `MIN / -1`) divide by one
//! instead: on the host they would otherwise kill the process with SIGFPE.
//!
//! [`ErrorRecord`]: crate::DebugRecord

use std::collections::HashMap;

use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage, Module as LlvmModule};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue,
};
use inkwell::{AddressSpace, AtomicOrdering, IntPredicate};

mod complex;
mod expr;
mod stmt;

use crate::error::CodegenError;
use crate::ir::*;

/// Which machine the LLVM module is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Ptx,
    Host,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct LowerOptions {
    pub target: Target,
    pub debug: bool,
    pub fastmath: bool,
}

/// One flattened kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbiParam {
    /// `x`, `x.shape[0]`, `x.strides[1]`, `__port_error`.
    pub name: String,
    pub kind: AbiKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiKind {
    /// A scalar of this type (`bool` as one byte).
    Scalar(ScalarType),
    /// A data pointer to elements of this type.
    Pointer(ScalarType),
    /// An `i64` shape entry.
    Shape,
    /// An `i64` stride entry, in elements.
    Stride,
    /// The debug-mode error record pointer (10 × u64).
    ErrorRecord,
}

/// Number of `u64` fields in the debug error record:
/// `[flag, tid.x, tid.y, tid.z, ctaid.x, ctaid.y, ctaid.z, index, axis, size]`.
pub const ERROR_RECORD_LEN: usize = 10;

/// The flattened parameter list of a kernel (see the module docs); `record`
/// when the error record trails it: in debug mode, or when the kernel's
/// module checks for overflow ([`Module::checks_overflow`]).
pub fn kernel_abi(k: &Kernel, record: bool) -> Vec<AbiParam> {
    let mut out = Vec::new();
    for p in &k.params {
        flatten_param(p, &mut out);
    }
    if record {
        out.push(AbiParam {
            name: "__port_error".into(),
            kind: AbiKind::ErrorRecord,
        });
    }
    out
}

fn flatten_param(p: &Param, out: &mut Vec<AbiParam>) {
    match p.ty {
        Type::Scalar(s) => out.push(AbiParam {
            name: p.name.clone(),
            kind: AbiKind::Scalar(s),
        }),
        Type::Array(a) => {
            out.push(AbiParam {
                name: p.name.clone(),
                kind: AbiKind::Pointer(a.elem),
            });
            for d in 0..a.ndim {
                out.push(AbiParam {
                    name: format!("{}.shape[{d}]", p.name),
                    kind: AbiKind::Shape,
                });
            }
            if !a.contiguous {
                for d in 0..a.ndim {
                    out.push(AbiParam {
                        name: format!("{}.strides[{d}]", p.name),
                        kind: AbiKind::Stride,
                    });
                }
            }
        }
    }
}

/// Name of the LLVM function for a device function (prefixed so that it can
/// never clash with libdevice, libm or a kernel).
pub(crate) fn device_symbol(name: &str) -> String {
    format!("__port_dev_{name}")
}

pub(crate) fn entry_symbol(kernel: &str) -> String {
    format!("__port_entry_{kernel}")
}

pub(crate) const BARRIER_SYMBOL: &str = "__port_sim_barrier";

/// Byte offsets of the host thread context (`sim::ThreadCtx`).
pub(crate) mod host_ctx {
    pub const TID: u64 = 0;
    pub const CTAID: u64 = 12;
    pub const NTID: u64 = 24;
    pub const NCTAID: u64 = 36;
    pub const SHARED: u64 = 48;
}

/// Byte offset of each shared array in a block's shared memory on the host,
/// and the total size. Each array is 16-byte aligned.
pub(crate) fn shared_layout(k: &Kernel) -> (Vec<u64>, u64) {
    let mut offsets = Vec::new();
    let mut at = 0u64;
    for s in &k.shared {
        offsets.push(at);
        at += s.len() * s.elem.size_bytes() as u64;
        at = at.div_ceil(16) * 16;
    }
    (offsets, at)
}

trait LlvmResult<T> {
    fn ll(self) -> Result<T, CodegenError>;
}

impl<T> LlvmResult<T> for Result<T, BuilderError> {
    fn ll(self) -> Result<T, CodegenError> {
        self.map_err(|e| CodegenError::llvm("building LLVM IR", e))
    }
}

fn missing(what: &str) -> CodegenError {
    CodegenError::llvm("building LLVM IR", format!("missing {what}"))
}

/// A typed scalar value.
#[derive(Clone, Copy)]
struct Val<'ctx> {
    v: BasicValueEnum<'ctx>,
    ty: ScalarType,
}

impl<'ctx> Val<'ctx> {
    fn int(self) -> IntValue<'ctx> {
        self.v.into_int_value()
    }
    fn float(self) -> inkwell::values::FloatValue<'ctx> {
        self.v.into_float_value()
    }
}

/// An array in scope: data pointer, shape and (for strided arrays) strides.
#[derive(Clone)]
struct ArrayView<'ctx> {
    ptr: PointerValue<'ctx>,
    ty: ArrayType,
    shape: Vec<IntValue<'ctx>>,
    strides: Option<Vec<IntValue<'ctx>>>,
    /// Shared arrays on the GPU live in address space 3.
    shared: bool,
}

#[derive(Clone)]
enum Binding<'ctx> {
    Scalar {
        slot: PointerValue<'ctx>,
        ty: ScalarType,
    },
    Array(ArrayView<'ctx>),
}

struct LoopTargets<'ctx> {
    continue_to: BasicBlock<'ctx>,
    break_to: Option<BasicBlock<'ctx>>,
}

/// Lowers a verified module into a fresh LLVM module.
pub(crate) fn lower_module<'ctx>(
    ctx: &'ctx Context,
    ir: &Module,
    opts: LowerOptions,
    name: &str,
) -> Result<LlvmModule<'ctx>, CodegenError> {
    let module = ctx.create_module(name);
    let mut l = Lowerer {
        ctx,
        module,
        builder: ctx.create_builder(),
        ir,
        opts,
        record: opts.debug || ir.checks_overflow(),
        device_fns: HashMap::new(),
    };
    // Declare every device function first so that calls resolve in any order.
    for f in &ir.device_functions {
        let fv = l.declare_function(&device_symbol(&f.name), &f.params, f.ret, false)?;
        fv.set_linkage(Linkage::Internal);
        l.device_fns.insert(f.name.clone(), fv);
    }
    for f in &ir.device_functions {
        let fv = l.device_fns[&f.name];
        l.define(fv, &f.params, &[], &f.body, f.ret, None)?;
    }
    for k in &ir.kernels {
        // On the host, a kernel named like a libm function must not capture
        // math calls, so it gets a prefix; on the GPU the entry keeps its name.
        let symbol = match opts.target {
            Target::Ptx => k.name.clone(),
            Target::Host => format!("__port_kernel_{}", k.name),
        };
        let fv = l.declare_function(&symbol, &k.params, None, true)?;
        match opts.target {
            Target::Ptx => {
                // PTX_Kernel calling convention, plus the annotation older
                // tools look for; either gives `.visible .entry`.
                fv.set_call_conventions(71);
                let md = ctx.metadata_node(&[
                    fv.as_global_value().as_pointer_value().into(),
                    ctx.metadata_string("kernel").into(),
                    ctx.i32_type().const_int(1, false).into(),
                ]);
                l.module
                    .add_global_metadata("nvvm.annotations", &md)
                    .map_err(|e| CodegenError::llvm("annotating kernels", e))?;
            }
            Target::Host => {}
        }
        l.define(fv, &k.params, &k.shared, &k.body, None, Some(k))?;
        if opts.target == Target::Host {
            l.host_entry(k, fv)?;
        }
    }
    if opts.target == Target::Ptx {
        let ftz = ctx.i32_type().const_int(u64::from(opts.fastmath), false);
        l.module.add_basic_value_flag(
            "nvvm-reflect-ftz",
            inkwell::module::FlagBehavior::Override,
            ftz,
        );
    }
    l.module
        .verify()
        .map_err(|e| CodegenError::llvm("verifying the lowered module", e.to_string()))?;
    Ok(l.module)
}

struct Lowerer<'ctx, 'a> {
    ctx: &'ctx Context,
    module: LlvmModule<'ctx>,
    builder: Builder<'ctx>,
    ir: &'a Module,
    opts: LowerOptions,
    /// Every function takes the error record: in debug mode, or where the
    /// module checks Python int arithmetic for overflow.
    record: bool,
    device_fns: HashMap<String, FunctionValue<'ctx>>,
}

/// The state of the function being lowered.
struct FnState<'ctx> {
    function: FunctionValue<'ctx>,
    entry: BasicBlock<'ctx>,
    ret: Option<ScalarType>,
    host_ctx: Option<PointerValue<'ctx>>,
    err: Option<PointerValue<'ctx>>,
    scopes: Vec<HashMap<String, Binding<'ctx>>>,
    loops: Vec<LoopTargets<'ctx>>,
}

impl<'ctx> FnState<'ctx> {
    fn lookup(&self, name: &str) -> Result<&Binding<'ctx>, CodegenError> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .ok_or_else(|| missing(&format!("binding for `{name}`")))
    }

    fn bind(&mut self, name: &str, b: Binding<'ctx>) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    fn array(&self, name: &str) -> Result<ArrayView<'ctx>, CodegenError> {
        match self.lookup(name)? {
            Binding::Array(v) => Ok(v.clone()),
            Binding::Scalar { .. } => Err(missing(&format!("array `{name}`"))),
        }
    }
}

impl<'ctx> Lowerer<'ctx, '_> {
    fn generic_ptr(&self) -> inkwell::types::PointerType<'ctx> {
        self.ctx.ptr_type(AddressSpace::default())
    }

    /// Type of a scalar held in a register.
    fn value_type(&self, t: ScalarType) -> BasicTypeEnum<'ctx> {
        match t {
            ScalarType::Bool => self.ctx.bool_type().into(),
            ScalarType::I8 | ScalarType::U8 => self.ctx.i8_type().into(),
            ScalarType::I16 | ScalarType::U16 => self.ctx.i16_type().into(),
            ScalarType::I32 | ScalarType::U32 => self.ctx.i32_type().into(),
            ScalarType::I64 | ScalarType::U64 => self.ctx.i64_type().into(),
            ScalarType::F32 => self.ctx.f32_type().into(),
            ScalarType::F64 => self.ctx.f64_type().into(),
            // NumPy's layout: real part, then imaginary part.
            ScalarType::C64 | ScalarType::C128 => {
                let part = self.value_type(t.component());
                self.ctx.struct_type(&[part, part], false).into()
            }
        }
    }

    /// Type of a scalar in memory and at the kernel ABI (`bool` is a byte).
    fn mem_type(&self, t: ScalarType) -> BasicTypeEnum<'ctx> {
        match t {
            ScalarType::Bool => self.ctx.i8_type().into(),
            _ => self.value_type(t),
        }
    }

    fn i64c(&self, v: u64) -> IntValue<'ctx> {
        self.ctx.i64_type().const_int(v, false)
    }

    fn param_types(&self, params: &[Param], kernel: bool) -> Vec<BasicMetadataTypeEnum<'ctx>> {
        let mut tys: Vec<BasicMetadataTypeEnum<'ctx>> = Vec::new();
        if self.opts.target == Target::Host {
            tys.push(self.generic_ptr().into());
        }
        for p in params {
            match p.ty {
                Type::Scalar(s) => tys.push(if kernel {
                    self.mem_type(s).into()
                } else {
                    self.value_type(s).into()
                }),
                Type::Array(a) => {
                    tys.push(self.generic_ptr().into());
                    let n = a.ndim as usize * if a.contiguous { 1 } else { 2 };
                    tys.extend(std::iter::repeat_n(
                        BasicMetadataTypeEnum::from(self.ctx.i64_type()),
                        n,
                    ));
                }
            }
        }
        if self.record {
            tys.push(self.generic_ptr().into());
        }
        tys
    }

    fn declare_function(
        &self,
        name: &str,
        params: &[Param],
        ret: Option<ScalarType>,
        kernel: bool,
    ) -> Result<FunctionValue<'ctx>, CodegenError> {
        let tys = self.param_types(params, kernel);
        let fn_type = match ret {
            Some(r) => self.value_type(r).fn_type(&tys, false),
            None => self.ctx.void_type().fn_type(&tys, false),
        };
        Ok(self.module.add_function(name, fn_type, None))
    }

    fn param(&self, f: FunctionValue<'ctx>, i: u32) -> Result<BasicValueEnum<'ctx>, CodegenError> {
        f.get_nth_param(i)
            .ok_or_else(|| missing(&format!("parameter {i}")))
    }

    fn current_block(&self) -> Result<BasicBlock<'ctx>, CodegenError> {
        self.builder
            .get_insert_block()
            .ok_or_else(|| missing("insertion block"))
    }

    fn is_terminated(&self) -> Result<bool, CodegenError> {
        Ok(self.current_block()?.get_terminator().is_some())
    }

    /// After a `break`/`continue`/`return`, code continues in a block no
    /// branch reaches (LLVM drops it).
    fn start_dead_block(&self, st: &FnState<'ctx>) {
        let bb = self.ctx.append_basic_block(st.function, "dead");
        self.builder.position_at_end(bb);
    }

    /// A bool stored as a byte (in memory and in kernel parameters) as an
    /// `i1`: any non-zero byte is true.
    fn bool_from_byte(
        &self,
        raw: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>, CodegenError> {
        Ok(self
            .builder
            .build_int_compare(
                IntPredicate::NE,
                raw.into_int_value(),
                self.ctx.i8_type().const_zero(),
                "b",
            )
            .ll()?
            .as_basic_value_enum())
    }

    /// A stack slot for a local, placed in the entry block so that mem2reg
    /// (run by every optimisation level) turns it into a register.
    fn alloca(
        &self,
        st: &FnState<'ctx>,
        ty: BasicTypeEnum<'ctx>,
        name: &str,
    ) -> Result<PointerValue<'ctx>, CodegenError> {
        let b = self.ctx.create_builder();
        match st.entry.get_first_instruction() {
            Some(i) => b.position_before(&i),
            None => b.position_at_end(st.entry),
        }
        b.build_alloca(ty, name).ll()
    }

    fn define(
        &mut self,
        function: FunctionValue<'ctx>,
        params: &[Param],
        shared: &[SharedArray],
        body: &[Stmt],
        ret: Option<ScalarType>,
        kernel: Option<&Kernel>,
    ) -> Result<(), CodegenError> {
        let entry = self.ctx.append_basic_block(function, "entry");
        let start = self.ctx.append_basic_block(function, "start");
        self.builder.position_at_end(start);
        let mut st = FnState {
            function,
            entry,
            ret,
            host_ctx: None,
            err: None,
            scopes: vec![HashMap::new()],
            loops: Vec::new(),
        };
        let mut next = 0u32;
        if self.opts.target == Target::Host {
            st.host_ctx = Some(self.param(function, 0)?.into_pointer_value());
            next = 1;
        }
        for p in params {
            match p.ty {
                Type::Scalar(s) => {
                    let raw = self.param(function, next)?;
                    next += 1;
                    let v = if kernel.is_some() && s == ScalarType::Bool {
                        self.bool_from_byte(raw)?
                    } else {
                        raw
                    };
                    let slot = self.alloca(&st, self.value_type(s), &p.name)?;
                    self.builder.build_store(slot, v).ll()?;
                    st.bind(&p.name, Binding::Scalar { slot, ty: s });
                }
                Type::Array(a) => {
                    let ptr = self.param(function, next)?.into_pointer_value();
                    next += 1;
                    let mut shape = Vec::new();
                    for _ in 0..a.ndim {
                        shape.push(self.param(function, next)?.into_int_value());
                        next += 1;
                    }
                    let strides = if a.contiguous {
                        None
                    } else {
                        let mut s = Vec::new();
                        for _ in 0..a.ndim {
                            s.push(self.param(function, next)?.into_int_value());
                            next += 1;
                        }
                        Some(s)
                    };
                    st.bind(
                        &p.name,
                        Binding::Array(ArrayView {
                            ptr,
                            ty: a,
                            shape,
                            strides,
                            shared: false,
                        }),
                    );
                }
            }
        }
        if self.record {
            st.err = Some(self.param(function, next)?.into_pointer_value());
        }
        if let Some(k) = kernel {
            self.bind_shared(&mut st, k, shared)?;
        }
        self.body(&mut st, body)?;
        if !self.is_terminated()? {
            match ret {
                None => {
                    self.builder.build_return(None).ll()?;
                }
                // The verifier proved every path returns; this block is dead.
                Some(_) => {
                    self.builder.build_unreachable().ll()?;
                }
            }
        }
        self.builder.position_at_end(entry);
        self.builder.build_unconditional_branch(start).ll()?;
        Ok(())
    }

    fn bind_shared(
        &mut self,
        st: &mut FnState<'ctx>,
        k: &Kernel,
        shared: &[SharedArray],
    ) -> Result<(), CodegenError> {
        let (offsets, _) = shared_layout(k);
        for (s, off) in shared.iter().zip(offsets) {
            let shape: Vec<IntValue<'ctx>> =
                s.shape.iter().map(|&d| self.i64c(u64::from(d))).collect();
            let ptr = match self.opts.target {
                Target::Ptx => {
                    let elem = self.mem_type(s.elem);
                    let len = u32::try_from(s.len())
                        .map_err(|_| missing("shared array length within u32"))?;
                    let arr_ty = elem.array_type(len);
                    let g = self.module.add_global(
                        arr_ty,
                        Some(AddressSpace::from(3u16)),
                        &format!("__port_shared_{}_{}", k.name, s.name),
                    );
                    g.set_linkage(Linkage::Internal);
                    g.set_initializer(&arr_ty.get_undef());
                    g.set_alignment(16);
                    g.as_pointer_value()
                }
                Target::Host => {
                    let ctxp = st.host_ctx.ok_or_else(|| missing("host context"))?;
                    let base_addr = self.byte_gep(ctxp, host_ctx::SHARED)?;
                    let base = self
                        .builder
                        .build_load(self.generic_ptr(), base_addr, "shared.base")
                        .ll()?
                        .into_pointer_value();
                    self.byte_gep(base, off)?
                }
            };
            st.bind(
                &s.name,
                Binding::Array(ArrayView {
                    ptr,
                    ty: s.array_type(),
                    shape,
                    strides: None,
                    shared: self.opts.target == Target::Ptx,
                }),
            );
        }
        Ok(())
    }

    fn byte_gep(
        &self,
        base: PointerValue<'ctx>,
        off: u64,
    ) -> Result<PointerValue<'ctx>, CodegenError> {
        // SAFETY: a GEP without `inbounds` only computes an address; it is
        // defined for any offset. inkwell marks every GEP unsafe.
        unsafe {
            self.builder
                .build_gep(self.ctx.i8_type(), base, &[self.i64c(off)], "at")
                .ll()
        }
    }

    /// Gets or declares an external function.
    fn intrinsic_fn(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        params: &[BasicMetadataTypeEnum<'ctx>],
    ) -> Result<FunctionValue<'ctx>, CodegenError> {
        if let Some(f) = self.module.get_function(name) {
            return Ok(f);
        }
        let ty = match ret {
            Some(r) => r.fn_type(params, false),
            None => self.ctx.void_type().fn_type(params, false),
        };
        Ok(self.module.add_function(name, ty, Some(Linkage::External)))
    }

    fn special(
        &mut self,
        st: &FnState<'ctx>,
        s: Special,
        axis: Axis,
    ) -> Result<IntValue<'ctx>, CodegenError> {
        match self.opts.target {
            Target::Ptx => {
                let reg = match s {
                    Special::ThreadIdx => "tid",
                    Special::BlockIdx => "ctaid",
                    Special::BlockDim => "ntid",
                    Special::GridDim => "nctaid",
                };
                let name = format!("llvm.nvvm.read.ptx.sreg.{reg}.{}", axis.name());
                let f = self.intrinsic_fn(&name, Some(self.ctx.i32_type().into()), &[])?;
                let call = self.builder.build_call(f, &[], reg).ll()?;
                Ok(call
                    .try_as_basic_value()
                    .basic()
                    .ok_or_else(|| missing("special register value"))?
                    .into_int_value())
            }
            Target::Host => {
                let base = match s {
                    Special::ThreadIdx => host_ctx::TID,
                    Special::BlockIdx => host_ctx::CTAID,
                    Special::BlockDim => host_ctx::NTID,
                    Special::GridDim => host_ctx::NCTAID,
                };
                let ctxp = st.host_ctx.ok_or_else(|| missing("host context"))?;
                let at = self.byte_gep(ctxp, base + 4 * axis.index() as u64)?;
                Ok(self
                    .builder
                    .build_load(self.ctx.i32_type(), at, "sreg")
                    .ll()?
                    .into_int_value())
            }
        }
    }

    fn to_i64(&self, v: Val<'ctx>) -> Result<IntValue<'ctx>, CodegenError> {
        match v.ty {
            ScalarType::I64 | ScalarType::U64 => Ok(v.int()),
            t if t.is_signed() => self
                .builder
                .build_int_s_extend(v.int(), self.ctx.i64_type(), "idx")
                .ll(),
            t if t.is_unsigned() => self
                .builder
                .build_int_z_extend(v.int(), self.ctx.i64_type(), "idx")
                .ll(),
            _ => Err(missing("integer index")),
        }
    }

    /// Address of an array element, with the debug-mode bounds check.
    fn elem_ptr(
        &mut self,
        st: &mut FnState<'ctx>,
        r: &ElemRef,
    ) -> Result<(PointerValue<'ctx>, ScalarType), CodegenError> {
        let view = st.array(&r.array)?;
        let mut idx = Vec::new();
        for e in &r.indices {
            let v = self.expr(st, e)?;
            idx.push(self.to_i64(v)?);
        }
        if self.opts.debug {
            for (axis, (&i, &n)) in idx.iter().zip(&view.shape).enumerate() {
                self.bounds_check(st, i, n, axis as u64)?;
            }
        }
        let linear = match &view.strides {
            None => {
                // C order: ((i0 * n1) + i1) * n2 + i2.
                let mut acc = idx[0];
                for (&i, &n) in idx.iter().zip(&view.shape).skip(1) {
                    acc = self.builder.build_int_mul(acc, n, "row").ll()?;
                    acc = self.builder.build_int_add(acc, i, "lin").ll()?;
                }
                acc
            }
            Some(strides) => {
                let mut acc = self.builder.build_int_mul(idx[0], strides[0], "off").ll()?;
                for (&i, &st) in idx.iter().zip(strides).skip(1) {
                    let t = self.builder.build_int_mul(i, st, "off").ll()?;
                    acc = self.builder.build_int_add(acc, t, "lin").ll()?;
                }
                acc
            }
        };
        let elem_ty = self.mem_type(view.ty.elem);
        // SAFETY: a GEP without `inbounds` only computes an address; it is
        // defined for any index (the access itself is what debug mode checks).
        let ptr = unsafe {
            self.builder
                .build_gep(elem_ty, view.ptr, &[linear], "elem")
                .ll()?
        };
        Ok((ptr, view.ty.elem))
    }

    /// `if index >= size (unsigned: negatives too) { record; return }`.
    fn bounds_check(
        &mut self,
        st: &FnState<'ctx>,
        index: IntValue<'ctx>,
        size: IntValue<'ctx>,
        axis: u64,
    ) -> Result<(), CodegenError> {
        let err = st.err.ok_or_else(|| missing("error record"))?;
        let bad = self
            .builder
            .build_int_compare(IntPredicate::UGE, index, size, "oob")
            .ll()?;
        let fail = self.ctx.append_basic_block(st.function, "oob");
        let write = self.ctx.append_basic_block(st.function, "oob.first");
        let leave = self.ctx.append_basic_block(st.function, "oob.leave");
        let ok = self.ctx.append_basic_block(st.function, "inbounds");
        self.builder.build_conditional_branch(bad, fail, ok).ll()?;
        self.builder.position_at_end(fail);
        // Only the first failing thread writes the record.
        let one = self.i64c(1);
        let res = self
            .builder
            .build_cmpxchg(
                err,
                self.i64c(0),
                one,
                AtomicOrdering::Monotonic,
                AtomicOrdering::Monotonic,
            )
            .ll()?;
        let won = self
            .builder
            .build_extract_value(res, 1, "won")
            .ll()?
            .into_int_value();
        self.builder
            .build_conditional_branch(won, write, leave)
            .ll()?;
        self.builder.position_at_end(write);
        let mut fields = Vec::new();
        for s in [Special::ThreadIdx, Special::BlockIdx] {
            for a in [Axis::X, Axis::Y, Axis::Z] {
                let v = self.special(st, s, a)?;
                fields.push(
                    self.builder
                        .build_int_z_extend(v, self.ctx.i64_type(), "f")
                        .ll()?,
                );
            }
        }
        fields.push(index);
        fields.push(self.i64c(axis));
        fields.push(size);
        for (i, f) in fields.into_iter().enumerate() {
            let at = self.byte_gep(err, 8 * (i as u64 + 1))?;
            self.builder.build_store(at, f).ll()?;
        }
        self.builder.build_unconditional_branch(leave).ll()?;
        self.builder.position_at_end(leave);
        // The thread stops (a device function returns zero to its caller).
        match st.ret {
            Some(t) => {
                let z = self.value_type(t).const_zero();
                self.builder.build_return(Some(&z)).ll()?;
            }
            None => {
                self.builder.build_return(None).ll()?;
            }
        }
        self.builder.position_at_end(ok);
        Ok(())
    }

    fn load_elem(
        &self,
        ptr: PointerValue<'ctx>,
        elem: ScalarType,
    ) -> Result<Val<'ctx>, CodegenError> {
        let raw = self
            .builder
            .build_load(self.mem_type(elem), ptr, "ld")
            .ll()?;
        let v = if elem == ScalarType::Bool {
            self.bool_from_byte(raw)?
        } else {
            raw
        };
        Ok(Val { v, ty: elem })
    }

    fn store_elem(
        &self,
        ptr: PointerValue<'ctx>,
        elem: ScalarType,
        v: Val<'ctx>,
    ) -> Result<(), CodegenError> {
        let raw = if elem == ScalarType::Bool {
            self.builder
                .build_int_z_extend(v.int(), self.ctx.i8_type(), "b")
                .ll()?
                .as_basic_value_enum()
        } else {
            v.v
        };
        self.builder.build_store(ptr, raw).ll()?;
        Ok(())
    }

    /// `__port_entry_<k>(ctx, slots)`: loads each flattened parameter from an
    /// array of 8-byte slots and calls the kernel, so the simulator can call
    /// every kernel through one Rust function type.
    fn host_entry(
        &mut self,
        k: &Kernel,
        kernel_fn: FunctionValue<'ctx>,
    ) -> Result<(), CodegenError> {
        let ptr = self.generic_ptr();
        let fty = self
            .ctx
            .void_type()
            .fn_type(&[ptr.into(), ptr.into()], false);
        let f = self.module.add_function(&entry_symbol(&k.name), fty, None);
        let bb = self.ctx.append_basic_block(f, "entry");
        self.builder.position_at_end(bb);
        let ctxp = self.param(f, 0)?;
        let slots = self.param(f, 1)?.into_pointer_value();
        let mut argv: Vec<BasicMetadataValueEnum<'ctx>> = vec![ctxp.into()];
        for (i, p) in kernel_abi(k, self.record).iter().enumerate() {
            let ty: BasicTypeEnum<'ctx> = match p.kind {
                AbiKind::Scalar(s) => self.mem_type(s),
                AbiKind::Pointer(_) | AbiKind::ErrorRecord => ptr.into(),
                AbiKind::Shape | AbiKind::Stride => self.ctx.i64_type().into(),
            };
            let at = self.byte_gep(slots, 8 * i as u64)?;
            argv.push(self.builder.build_load(ty, at, &p.name).ll()?.into());
        }
        self.builder.build_call(kernel_fn, &argv, "").ll()?;
        self.builder.build_return(None).ll()?;
        Ok(())
    }
}

/// The function a math call becomes: libdevice's `__nv_*` on the GPU, libm
/// on the host.
pub(crate) fn math_symbol(f: MathFn, ty: ScalarType, target: Target) -> String {
    let single = ty == ScalarType::F32;
    match target {
        Target::Ptx => format!("__nv_{}{}", f.name(), if single { "f" } else { "" }),
        Target::Host => format!("{}{}", f.name(), if single { "f" } else { "" }),
    }
}
