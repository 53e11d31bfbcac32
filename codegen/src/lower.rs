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
//! - in debug mode, one more trailing pointer to an [`ErrorRecord`]-shaped
//!   buffer of 10 × `u64`, zeroed before launch (see [`crate::DebugRecord`]).
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
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue,
    PointerValue,
};
use inkwell::{AddressSpace, AtomicOrdering, AtomicRMWBinOp, FloatPredicate, IntPredicate};

mod complex;

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

/// The flattened parameter list of a kernel (see the module docs).
pub fn kernel_abi(k: &Kernel, debug: bool) -> Vec<AbiParam> {
    let mut out = Vec::new();
    for p in &k.params {
        flatten_param(p, &mut out);
    }
    if debug {
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
        if self.opts.debug {
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
        if self.opts.debug {
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

    fn body(&mut self, st: &mut FnState<'ctx>, body: &[Stmt]) -> Result<(), CodegenError> {
        st.scopes.push(HashMap::new());
        for s in body {
            self.stmt(st, s)?;
        }
        st.scopes.pop();
        Ok(())
    }

    fn stmt(&mut self, st: &mut FnState<'ctx>, s: &Stmt) -> Result<(), CodegenError> {
        match s {
            Stmt::Let { name, ty, init } => {
                let v = self.expr(st, init)?;
                let slot = self.alloca(st, self.value_type(*ty), name)?;
                self.builder.build_store(slot, v.v).ll()?;
                st.bind(name, Binding::Scalar { slot, ty: *ty });
            }
            Stmt::Assign { name, value } => {
                let v = self.expr(st, value)?;
                let Binding::Scalar { slot, .. } = st.lookup(name)?.clone() else {
                    return Err(missing(&format!("scalar `{name}`")));
                };
                self.builder.build_store(slot, v.v).ll()?;
            }
            Stmt::Store { target, value } => {
                let v = self.expr(st, value)?;
                let (ptr, elem) = self.elem_ptr(st, target)?;
                self.store_elem(ptr, elem, v)?;
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.expr(st, cond)?.int();
                let then_bb = self.ctx.append_basic_block(st.function, "then");
                let else_bb = self.ctx.append_basic_block(st.function, "else");
                let merge = self.ctx.append_basic_block(st.function, "endif");
                self.builder
                    .build_conditional_branch(c, then_bb, else_bb)
                    .ll()?;
                for (bb, body) in [(then_bb, then_body), (else_bb, else_body)] {
                    self.builder.position_at_end(bb);
                    self.body(st, body)?;
                    if !self.is_terminated()? {
                        self.builder.build_unconditional_branch(merge).ll()?;
                    }
                }
                self.builder.position_at_end(merge);
            }
            Stmt::While { cond, body } => {
                let head = self.ctx.append_basic_block(st.function, "while.cond");
                let body_bb = self.ctx.append_basic_block(st.function, "while.body");
                let exit = self.ctx.append_basic_block(st.function, "while.end");
                self.builder.build_unconditional_branch(head).ll()?;
                self.builder.position_at_end(head);
                let c = self.expr(st, cond)?.int();
                self.builder
                    .build_conditional_branch(c, body_bb, exit)
                    .ll()?;
                self.builder.position_at_end(body_bb);
                st.loops.push(LoopTargets {
                    continue_to: head,
                    break_to: Some(exit),
                });
                self.body(st, body)?;
                st.loops.pop();
                if !self.is_terminated()? {
                    self.builder.build_unconditional_branch(head).ll()?;
                }
                self.builder.position_at_end(exit);
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => self.for_range(st, var, start, stop, step, body)?,
            Stmt::ParallelFor(p) => self.parallel_for(st, p)?,
            Stmt::Break | Stmt::Continue => {
                let target = st
                    .loops
                    .last()
                    .and_then(|l| {
                        if matches!(s, Stmt::Break) {
                            l.break_to
                        } else {
                            Some(l.continue_to)
                        }
                    })
                    .ok_or_else(|| missing("enclosing loop"))?;
                self.builder.build_unconditional_branch(target).ll()?;
                self.start_dead_block(st);
            }
            Stmt::Return(value) => {
                match value {
                    Some(e) => {
                        let v = self.expr(st, e)?;
                        self.builder.build_return(Some(&v.v)).ll()?;
                    }
                    None => {
                        self.builder.build_return(None).ll()?;
                    }
                }
                self.start_dead_block(st);
            }
            Stmt::Barrier => self.barrier(st)?,
            Stmt::Eval(e) => match e {
                Expr::Call(name, args) => {
                    self.call(st, name, args)?;
                }
                _ => {
                    self.expr(st, e)?;
                }
            },
        }
        Ok(())
    }

    fn for_range(
        &mut self,
        st: &mut FnState<'ctx>,
        var: &str,
        start: &Expr,
        stop: &Expr,
        step: &Expr,
        body: &[Stmt],
    ) -> Result<(), CodegenError> {
        // Python's range: bounds evaluated once; a hidden counter drives the
        // loop so that assigning to the variable does not change iteration.
        let a = self.expr(st, start)?;
        let b = self.expr(st, stop)?.int();
        let c = self.expr(st, step)?.int();
        let ty = a.ty;
        let counter = self.alloca(st, self.value_type(ty), &format!("{var}.next"))?;
        self.builder.build_store(counter, a.v).ll()?;
        let head = self.ctx.append_basic_block(st.function, "for.cond");
        let body_bb = self.ctx.append_basic_block(st.function, "for.body");
        let latch = self.ctx.append_basic_block(st.function, "for.step");
        let exit = self.ctx.append_basic_block(st.function, "for.end");
        self.builder.build_unconditional_branch(head).ll()?;
        self.builder.position_at_end(head);
        let i = self
            .builder
            .build_load(self.value_type(ty), counter, var)
            .ll()?
            .into_int_value();
        let zero = c.get_type().const_zero();
        let up = self
            .builder
            .build_int_compare(IntPredicate::SGT, c, zero, "up")
            .ll()?;
        let below = self
            .builder
            .build_int_compare(IntPredicate::SLT, i, b, "below")
            .ll()?;
        let above = self
            .builder
            .build_int_compare(IntPredicate::SGT, i, b, "above")
            .ll()?;
        let go = self.builder.build_select(up, below, above, "go").ll()?;
        self.builder
            .build_conditional_branch(go.into_int_value(), body_bb, exit)
            .ll()?;
        self.builder.position_at_end(body_bb);
        st.scopes.push(HashMap::new());
        let slot = self.alloca(st, self.value_type(ty), var)?;
        self.builder.build_store(slot, i).ll()?;
        st.bind(var, Binding::Scalar { slot, ty });
        st.loops.push(LoopTargets {
            continue_to: latch,
            break_to: Some(exit),
        });
        self.body(st, body)?;
        st.loops.pop();
        st.scopes.pop();
        if !self.is_terminated()? {
            self.builder.build_unconditional_branch(latch).ll()?;
        }
        self.builder.position_at_end(latch);
        let cur = self
            .builder
            .build_load(self.value_type(ty), counter, var)
            .ll()?
            .into_int_value();
        let nxt = self.builder.build_int_add(cur, c, "next").ll()?;
        self.builder.build_store(counter, nxt).ll()?;
        self.builder.build_unconditional_branch(head).ll()?;
        self.builder.position_at_end(exit);
        Ok(())
    }

    /// Grid-stride loops: variable `k` of `n` runs over grid axis `n-1-k`,
    /// starting at `blockIdx*blockDim + threadIdx` and stepping by
    /// `blockDim*gridDim` on that axis.
    fn parallel_for(
        &mut self,
        st: &mut FnState<'ctx>,
        p: &ParallelFor,
    ) -> Result<(), CodegenError> {
        let mut extents = Vec::new();
        for e in &p.extents {
            let v = self.expr(st, e)?;
            extents.push(self.to_i64(v)?);
        }
        let n = p.vars.len();
        st.scopes.push(HashMap::new());
        let mut exits = Vec::new();
        let mut latches = Vec::new();
        for (k, var) in p.vars.iter().enumerate() {
            let axis = [Axis::X, Axis::Y, Axis::Z][n - 1 - k];
            let tid = self.special(st, Special::ThreadIdx, axis)?;
            let ctaid = self.special(st, Special::BlockIdx, axis)?;
            let ntid = self.special(st, Special::BlockDim, axis)?;
            let nctaid = self.special(st, Special::GridDim, axis)?;
            let wide = |v: IntValue<'ctx>| {
                self.builder
                    .build_int_z_extend(v, self.ctx.i64_type(), "w")
                    .ll()
            };
            let (tid, ctaid, ntid, nctaid) = (wide(tid)?, wide(ctaid)?, wide(ntid)?, wide(nctaid)?);
            let first = self.builder.build_int_mul(ctaid, ntid, "blk").ll()?;
            let first = self.builder.build_int_add(first, tid, "first").ll()?;
            let stride = self.builder.build_int_mul(ntid, nctaid, "stride").ll()?;
            let counter = self.alloca(st, self.ctx.i64_type().into(), &format!("{var}.next"))?;
            self.builder.build_store(counter, first).ll()?;
            let head = self.ctx.append_basic_block(st.function, "grid.cond");
            let body_bb = self.ctx.append_basic_block(st.function, "grid.body");
            let latch = self.ctx.append_basic_block(st.function, "grid.step");
            let exit = self.ctx.append_basic_block(st.function, "grid.end");
            self.builder.build_unconditional_branch(head).ll()?;
            self.builder.position_at_end(head);
            let i = self
                .builder
                .build_load(self.ctx.i64_type(), counter, var)
                .ll()?
                .into_int_value();
            let go = self
                .builder
                .build_int_compare(IntPredicate::SLT, i, extents[k], "go")
                .ll()?;
            self.builder
                .build_conditional_branch(go, body_bb, exit)
                .ll()?;
            self.builder.position_at_end(latch);
            let cur = self
                .builder
                .build_load(self.ctx.i64_type(), counter, var)
                .ll()?
                .into_int_value();
            let nxt = self.builder.build_int_add(cur, stride, "next").ll()?;
            self.builder.build_store(counter, nxt).ll()?;
            self.builder.build_unconditional_branch(head).ll()?;
            self.builder.position_at_end(body_bb);
            let slot = self.alloca(st, self.ctx.i64_type().into(), var)?;
            self.builder.build_store(slot, i).ll()?;
            st.bind(
                var,
                Binding::Scalar {
                    slot,
                    ty: ScalarType::I64,
                },
            );
            exits.push(exit);
            latches.push(latch);
        }
        let inner_latch = *latches.last().ok_or_else(|| missing("parallel variable"))?;
        st.loops.push(LoopTargets {
            continue_to: inner_latch,
            break_to: None,
        });
        self.body(st, &p.body)?;
        st.loops.pop();
        st.scopes.pop();
        // Close the loops from the inside out: the end of loop k goes to the
        // step of loop k-1.
        for k in (0..n).rev() {
            if !self.is_terminated()? {
                self.builder.build_unconditional_branch(latches[k]).ll()?;
            }
            self.builder.position_at_end(exits[k]);
        }
        Ok(())
    }

    fn barrier(&mut self, st: &FnState<'ctx>) -> Result<(), CodegenError> {
        match self.opts.target {
            Target::Ptx => {
                let f = self.intrinsic_fn("llvm.nvvm.barrier0", None, &[])?;
                self.builder.build_call(f, &[], "").ll()?;
            }
            Target::Host => {
                let f = self.intrinsic_fn(BARRIER_SYMBOL, None, &[self.generic_ptr().into()])?;
                let ctxp = st.host_ctx.ok_or_else(|| missing("host context"))?;
                self.builder.build_call(f, &[ctxp.into()], "").ll()?;
            }
        }
        Ok(())
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

    fn fast(&self, v: BasicValueEnum<'ctx>) {
        if self.opts.fastmath && self.opts.target == Target::Ptx {
            if let Some(i) = v.as_instruction_value() {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::all());
            }
        }
    }

    fn expr(&mut self, st: &mut FnState<'ctx>, e: &Expr) -> Result<Val<'ctx>, CodegenError> {
        use ScalarType::*;
        Ok(match e {
            Expr::Lit(l) => {
                let v: BasicValueEnum<'ctx> = match *l {
                    Literal::Bool(b) => self.ctx.bool_type().const_int(u64::from(b), false).into(),
                    Literal::I32(v) => self.ctx.i32_type().const_int(v as u64, true).into(),
                    Literal::I64(v) => self.ctx.i64_type().const_int(v as u64, true).into(),
                    Literal::F32(v) => self.ctx.f32_type().const_float(f64::from(v)).into(),
                    Literal::F64(v) => self.ctx.f64_type().const_float(v).into(),
                };
                Val { v, ty: l.ty() }
            }
            Expr::Var(n) => match st.lookup(n)?.clone() {
                Binding::Scalar { slot, ty } => Val {
                    v: self.builder.build_load(self.value_type(ty), slot, n).ll()?,
                    ty,
                },
                Binding::Array(_) => return Err(missing(&format!("scalar `{n}`"))),
            },
            Expr::Special(s, a) => Val {
                v: self.special(st, *s, *a)?.into(),
                ty: I32,
            },
            Expr::Shape { array, axis } => {
                let view = st.array(array)?;
                Val {
                    v: (*view
                        .shape
                        .get(*axis as usize)
                        .ok_or_else(|| missing("shape axis"))?)
                    .into(),
                    ty: I64,
                }
            }
            Expr::Unary(op, a) => {
                let a = self.expr(st, a)?;
                if a.ty.is_complex() {
                    let (re, im) = self.parts(a)?;
                    let re = self.builder.build_float_neg(re, "neg").ll()?;
                    let im = self.builder.build_float_neg(im, "neg").ll()?;
                    return self.make_complex(a.ty, re, im);
                }
                let v: BasicValueEnum<'ctx> = match (op, a.ty.is_float()) {
                    (UnaryOp::Neg, true) => {
                        self.builder.build_float_neg(a.float(), "neg").ll()?.into()
                    }
                    (UnaryOp::Neg, false) => {
                        self.builder.build_int_neg(a.int(), "neg").ll()?.into()
                    }
                    (UnaryOp::Not, _) => self.builder.build_not(a.int(), "not").ll()?.into(),
                };
                Val { v, ty: a.ty }
            }
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                self.short_circuit(st, *op, a, b)?
            }
            Expr::Binary(op, a, b) => {
                let a = self.expr(st, a)?;
                let b = self.expr(st, b)?;
                self.binary(*op, a, b)?
            }
            Expr::Cmp(op, a, b) => {
                let a = self.expr(st, a)?;
                let b = self.expr(st, b)?;
                let v = if a.ty.is_complex() {
                    // Equal when both parts are; unequal when either is.
                    let (ar, ai) = self.parts(a)?;
                    let (br, bi) = self.parts(b)?;
                    let eq = *op == CmpOp::Eq;
                    let p = if eq {
                        FloatPredicate::OEQ
                    } else {
                        FloatPredicate::UNE
                    };
                    let bld = &self.builder;
                    let r = bld.build_float_compare(p, ar, br, "re").ll()?;
                    let i = bld.build_float_compare(p, ai, bi, "im").ll()?;
                    if eq {
                        bld.build_and(r, i, "eq").ll()?
                    } else {
                        bld.build_or(r, i, "ne").ll()?
                    }
                } else if a.ty.is_float() {
                    let p = match op {
                        CmpOp::Eq => FloatPredicate::OEQ,
                        // Python: nan != nan is True.
                        CmpOp::Ne => FloatPredicate::UNE,
                        CmpOp::Lt => FloatPredicate::OLT,
                        CmpOp::Le => FloatPredicate::OLE,
                        CmpOp::Gt => FloatPredicate::OGT,
                        CmpOp::Ge => FloatPredicate::OGE,
                    };
                    self.builder
                        .build_float_compare(p, a.float(), b.float(), "cmp")
                        .ll()?
                } else {
                    let u = a.ty.is_unsigned();
                    let p = match op {
                        CmpOp::Eq => IntPredicate::EQ,
                        CmpOp::Ne => IntPredicate::NE,
                        CmpOp::Lt if u => IntPredicate::ULT,
                        CmpOp::Le if u => IntPredicate::ULE,
                        CmpOp::Gt if u => IntPredicate::UGT,
                        CmpOp::Ge if u => IntPredicate::UGE,
                        CmpOp::Lt => IntPredicate::SLT,
                        CmpOp::Le => IntPredicate::SLE,
                        CmpOp::Gt => IntPredicate::SGT,
                        CmpOp::Ge => IntPredicate::SGE,
                    };
                    self.builder
                        .build_int_compare(p, a.int(), b.int(), "cmp")
                        .ll()?
                };
                Val {
                    v: v.into(),
                    ty: Bool,
                }
            }
            Expr::Cast(t, a) => {
                let a = self.expr(st, a)?;
                self.cast(a, *t)?
            }
            Expr::Select(c, a, b) => {
                let c = self.expr(st, c)?;
                let a = self.expr(st, a)?;
                let b = self.expr(st, b)?;
                Val {
                    v: self.builder.build_select(c.int(), a.v, b.v, "sel").ll()?,
                    ty: a.ty,
                }
            }
            Expr::Load(r) => {
                let (ptr, elem) = self.elem_ptr(st, r)?;
                self.load_elem(ptr, elem)?
            }
            Expr::Math(f, args) => {
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.expr(st, a)?);
                }
                let ty = vals.first().map(|v| v.ty).unwrap_or(F64);
                if ty.is_complex() {
                    return self.complex_math(*f, &vals);
                }
                let floats: Vec<_> = vals.iter().map(|v| v.float()).collect();
                Val {
                    v: self.rmath(*f, &floats)?.into(),
                    ty,
                }
            }
            Expr::Call(name, args) => self
                .call(st, name, args)?
                .ok_or_else(|| missing("call result"))?,
            Expr::Atomic(op, r, v) => {
                let v = self.expr(st, v)?;
                let (ptr, elem) = self.elem_ptr(st, r)?;
                self.atomic(*op, ptr, elem, v)?
            }
            Expr::Complex(re, im) => {
                let re = self.expr(st, re)?;
                let im = self.expr(st, im)?;
                self.make_complex(re.ty.complexified(), re.float(), im.float())?
            }
            Expr::Part(p, z) => {
                let z = self.expr(st, z)?;
                let (re, im) = self.parts(z)?;
                Val {
                    v: if *p == Part::Re { re } else { im }.into(),
                    ty: z.ty.component(),
                }
            }
            Expr::AtomicCas(r, c, v) => {
                let c = self.expr(st, c)?;
                let v = self.expr(st, v)?;
                let (ptr, elem) = self.elem_ptr(st, r)?;
                let res = self
                    .builder
                    .build_cmpxchg(
                        ptr,
                        c.int(),
                        v.int(),
                        AtomicOrdering::Monotonic,
                        AtomicOrdering::Monotonic,
                    )
                    .ll()?;
                Val {
                    v: self.builder.build_extract_value(res, 0, "old").ll()?,
                    ty: elem,
                }
            }
        })
    }

    fn short_circuit(
        &mut self,
        st: &mut FnState<'ctx>,
        op: BinOp,
        a: &Expr,
        b: &Expr,
    ) -> Result<Val<'ctx>, CodegenError> {
        let a = self.expr(st, a)?.int();
        let from_a = self.current_block()?;
        let rhs = self.ctx.append_basic_block(st.function, "rhs");
        let done = self.ctx.append_basic_block(st.function, "logic");
        if op == BinOp::And {
            self.builder.build_conditional_branch(a, rhs, done).ll()?;
        } else {
            self.builder.build_conditional_branch(a, done, rhs).ll()?;
        }
        self.builder.position_at_end(rhs);
        let bv = self.expr(st, b)?.int();
        let from_b = self.current_block()?;
        self.builder.build_unconditional_branch(done).ll()?;
        self.builder.position_at_end(done);
        let phi = self.builder.build_phi(self.ctx.bool_type(), "sc").ll()?;
        let short = self
            .ctx
            .bool_type()
            .const_int(u64::from(op == BinOp::Or), false);
        phi.add_incoming(&[(&short, from_a), (&bv, from_b)]);
        Ok(Val {
            v: phi.as_basic_value(),
            ty: ScalarType::Bool,
        })
    }

    fn binary(&mut self, op: BinOp, a: Val<'ctx>, b: Val<'ctx>) -> Result<Val<'ctx>, CodegenError> {
        let ty = a.ty;
        if ty.is_complex() {
            return self.complex_binary(op, a, b);
        }
        let bld = &self.builder;
        let v: BasicValueEnum<'ctx> = if ty.is_float() {
            let (x, y) = (a.float(), b.float());
            match op {
                BinOp::Add => bld.build_float_add(x, y, "add").ll()?.into(),
                BinOp::Sub => bld.build_float_sub(x, y, "sub").ll()?.into(),
                BinOp::Mul => bld.build_float_mul(x, y, "mul").ll()?.into(),
                BinOp::Div => bld.build_float_div(x, y, "div").ll()?.into(),
                BinOp::Rem => bld.build_float_rem(x, y, "rem").ll()?.into(),
                BinOp::FloorDiv => {
                    let q = bld.build_float_div(x, y, "div").ll()?;
                    self.fast(q.into());
                    let name = if ty == ScalarType::F32 {
                        "llvm.floor.f32"
                    } else {
                        "llvm.floor.f64"
                    };
                    let ft = self.value_type(ty);
                    let f = self.intrinsic_fn(name, Some(ft), &[ft.into()])?;
                    self.builder
                        .build_call(f, &[q.into()], "floor")
                        .ll()?
                        .try_as_basic_value()
                        .basic()
                        .ok_or_else(|| missing("floor result"))?
                }
                BinOp::Min | BinOp::Max => {
                    let p = if op == BinOp::Min {
                        FloatPredicate::OLT
                    } else {
                        FloatPredicate::OGT
                    };
                    let c = bld.build_float_compare(p, x, y, "c").ll()?;
                    bld.build_select(c, x, y, "m").ll()?
                }
                _ => return Err(missing("float operator")),
            }
        } else if ty.is_unsigned() {
            // Unsigned: division floors already, so `//` is `udiv`.
            let (x, y) = (a.int(), b.int());
            match op {
                BinOp::Div | BinOp::Rem | BinOp::FloorDiv => {
                    let t = y.get_type();
                    let zero = bld
                        .build_int_compare(IntPredicate::EQ, y, t.const_zero(), "y0")
                        .ll()?;
                    let y = bld
                        .build_select(zero, t.const_int(1, false), y, "divisor")
                        .ll()?
                        .into_int_value();
                    if op == BinOp::Rem {
                        bld.build_int_unsigned_rem(x, y, "rem").ll()?.into()
                    } else {
                        bld.build_int_unsigned_div(x, y, "div").ll()?.into()
                    }
                }
                BinOp::Min | BinOp::Max => {
                    let p = if op == BinOp::Min {
                        IntPredicate::ULT
                    } else {
                        IntPredicate::UGT
                    };
                    let c = bld.build_int_compare(p, x, y, "c").ll()?;
                    bld.build_select(c, x, y, "m").ll()?
                }
                BinOp::Shr | BinOp::Shl => self.shift(op, x, y, false)?.into(),
                _ => return self.binary_wrapping(op, a, b),
            }
        } else {
            let (x, y) = (a.int(), b.int());
            match op {
                BinOp::Add => bld.build_int_add(x, y, "add").ll()?.into(),
                BinOp::Sub => bld.build_int_sub(x, y, "sub").ll()?.into(),
                BinOp::Mul => bld.build_int_mul(x, y, "mul").ll()?.into(),
                BinOp::Div | BinOp::Rem | BinOp::FloorDiv => {
                    let y = self.safe_divisor(x, y)?;
                    let bld = &self.builder;
                    match op {
                        BinOp::Div => bld.build_int_signed_div(x, y, "div").ll()?.into(),
                        BinOp::Rem => bld.build_int_signed_rem(x, y, "rem").ll()?.into(),
                        _ => {
                            // Python floors: q - 1 when the remainder is
                            // non-zero and its sign differs from the divisor's.
                            let q = bld.build_int_signed_div(x, y, "q").ll()?;
                            let r = bld.build_int_signed_rem(x, y, "r").ll()?;
                            let zero = x.get_type().const_zero();
                            let nz = bld
                                .build_int_compare(IntPredicate::NE, r, zero, "nz")
                                .ll()?;
                            let rx = bld.build_xor(r, y, "rx").ll()?;
                            let signs = bld
                                .build_int_compare(IntPredicate::SLT, rx, zero, "signs")
                                .ll()?;
                            let adj = bld.build_and(nz, signs, "adj").ll()?;
                            let adj = bld.build_int_z_extend(adj, x.get_type(), "adj").ll()?;
                            bld.build_int_sub(q, adj, "floordiv").ll()?.into()
                        }
                    }
                }
                BinOp::Min | BinOp::Max => {
                    let p = if op == BinOp::Min {
                        IntPredicate::SLT
                    } else {
                        IntPredicate::SGT
                    };
                    let c = bld.build_int_compare(p, x, y, "c").ll()?;
                    bld.build_select(c, x, y, "m").ll()?
                }
                BinOp::BitAnd => bld.build_and(x, y, "and").ll()?.into(),
                BinOp::BitOr => bld.build_or(x, y, "or").ll()?.into(),
                BinOp::BitXor => bld.build_xor(x, y, "xor").ll()?.into(),
                BinOp::Shl | BinOp::Shr => self.shift(op, x, y, true)?.into(),
                BinOp::And => bld.build_and(x, y, "and").ll()?.into(),
                BinOp::Or => bld.build_or(x, y, "or").ll()?.into(),
            }
        };
        if ty.is_float() {
            self.fast(v);
        }
        Ok(Val { v, ty })
    }

    /// The operators whose two's-complement result does not depend on
    /// signedness (`+ - * & | ^`), for unsigned operands.
    fn binary_wrapping(
        &mut self,
        op: BinOp,
        a: Val<'ctx>,
        b: Val<'ctx>,
    ) -> Result<Val<'ctx>, CodegenError> {
        let (x, y) = (a.int(), b.int());
        let bld = &self.builder;
        let v: BasicValueEnum<'ctx> = match op {
            BinOp::Add => bld.build_int_add(x, y, "add").ll()?.into(),
            BinOp::Sub => bld.build_int_sub(x, y, "sub").ll()?.into(),
            BinOp::Mul => bld.build_int_mul(x, y, "mul").ll()?.into(),
            BinOp::BitAnd | BinOp::And => bld.build_and(x, y, "and").ll()?.into(),
            BinOp::BitOr | BinOp::Or => bld.build_or(x, y, "or").ll()?.into(),
            BinOp::BitXor => bld.build_xor(x, y, "xor").ll()?.into(),
            _ => return Err(missing("unsigned operator")),
        };
        Ok(Val { v, ty: a.ty })
    }

    /// `x << y` / `x >> y` as NumPy defines them for every shift amount
    /// (LLVM's is poison from the bit width on): a shift by the width or
    /// more (or by a negative amount) gives 0, or -1 for `>>` of a negative
    /// signed value.
    fn shift(
        &self,
        op: BinOp,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        signed: bool,
    ) -> Result<IntValue<'ctx>, CodegenError> {
        let b = &self.builder;
        let t = x.get_type();
        let width = t.const_int(u64::from(t.get_bit_width()), false);
        let big = b
            .build_int_compare(IntPredicate::UGE, y, width, "bigshift")
            .ll()?;
        if op == BinOp::Shr && signed {
            let last = t.const_int(u64::from(t.get_bit_width() - 1), false);
            let y = b.build_select(big, last, y, "amt").ll()?.into_int_value();
            return b.build_right_shift(x, y, true, "shr").ll();
        }
        let y = b
            .build_select(big, t.const_zero(), y, "amt")
            .ll()?
            .into_int_value();
        let r = if op == BinOp::Shl {
            b.build_left_shift(x, y, "shl").ll()?
        } else {
            b.build_right_shift(x, y, false, "shr").ll()?
        };
        Ok(b.build_select(big, t.const_zero(), r, "shifted")
            .ll()?
            .into_int_value())
    }

    /// `y`, or 1 where `y == 0` or `x == MIN && y == -1` (see the module docs).
    fn safe_divisor(
        &self,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>, CodegenError> {
        let t = y.get_type();
        let bits = t.get_bit_width();
        let min = t.const_int(1u64 << (bits - 1), false);
        let b = &self.builder;
        let zero = b
            .build_int_compare(IntPredicate::EQ, y, t.const_zero(), "y0")
            .ll()?;
        let is_min = b.build_int_compare(IntPredicate::EQ, x, min, "xmin").ll()?;
        let is_m1 = b
            .build_int_compare(IntPredicate::EQ, y, t.const_all_ones(), "ym1")
            .ll()?;
        let ovf = b.build_and(is_min, is_m1, "ovf").ll()?;
        let bad = b.build_or(zero, ovf, "bad").ll()?;
        Ok(b.build_select(bad, t.const_int(1, false), y, "divisor")
            .ll()?
            .into_int_value())
    }

    fn cast(&mut self, a: Val<'ctx>, to: ScalarType) -> Result<Val<'ctx>, CodegenError> {
        use ScalarType::*;
        let b = &self.builder;
        let from = a.ty;
        if to.is_complex() && from != to {
            let part = to.component();
            let (re, im) = if from.is_complex() {
                let (re, im) = self.parts(a)?;
                let re = self.cast(
                    Val {
                        v: re.into(),
                        ty: from.component(),
                    },
                    part,
                )?;
                let im = self.cast(
                    Val {
                        v: im.into(),
                        ty: from.component(),
                    },
                    part,
                )?;
                (re.float(), im.float())
            } else {
                let re = self.cast(a, part)?.float();
                (re, re.get_type().const_zero())
            };
            return self.make_complex(to, re, im);
        }
        let v: BasicValueEnum<'ctx> = match (from, to) {
            _ if from == to => a.v,
            (Bool, t) if t.is_int() => b
                .build_int_z_extend(a.int(), self.value_type(to).into_int_type(), "zext")
                .ll()?
                .into(),
            (Bool, F32 | F64) => b
                .build_unsigned_int_to_float(
                    a.int(),
                    self.value_type(to).into_float_type(),
                    "uitofp",
                )
                .ll()?
                .into(),
            (f, Bool) if f.is_int() => b
                .build_int_compare(
                    IntPredicate::NE,
                    a.int(),
                    a.int().get_type().const_zero(),
                    "nz",
                )
                .ll()?
                .into(),
            (F32 | F64, Bool) => b
                .build_float_compare(
                    FloatPredicate::UNE,
                    a.float(),
                    a.float().get_type().const_zero(),
                    "nz",
                )
                .ll()?
                .into(),
            (f, t) if f.is_int() && t.is_int() => {
                let it = self.value_type(to).into_int_type();
                if t.bits() < f.bits() {
                    b.build_int_truncate(a.int(), it, "trunc").ll()?.into()
                } else if t.bits() == f.bits() {
                    // Same width, other signedness: the bits are the value.
                    a.v
                } else if f.is_unsigned() {
                    b.build_int_z_extend(a.int(), it, "zext").ll()?.into()
                } else {
                    b.build_int_s_extend(a.int(), it, "sext").ll()?.into()
                }
            }
            (f, F32 | F64) if f.is_unsigned() => b
                .build_unsigned_int_to_float(
                    a.int(),
                    self.value_type(to).into_float_type(),
                    "uitofp",
                )
                .ll()?
                .into(),
            (f, F32 | F64) if f.is_signed() => b
                .build_signed_int_to_float(a.int(), self.value_type(to).into_float_type(), "sitofp")
                .ll()?
                .into(),
            (F32 | F64, U64) => b
                .build_float_to_unsigned_int(a.float(), self.ctx.i64_type(), "fptoui")
                .ll()?
                .into(),
            (F32 | F64, t) if t.is_int() => {
                // Through int64 then truncated, like NumPy's C casts on x86:
                // `np.float64(-1.0).astype(np.uint8)` is 255, not poison.
                let wide = b
                    .build_float_to_signed_int(a.float(), self.ctx.i64_type(), "fptosi")
                    .ll()?;
                if t.bits() == 64 {
                    wide.into()
                } else {
                    b.build_int_truncate(wide, self.value_type(to).into_int_type(), "trunc")
                        .ll()?
                        .into()
                }
            }
            (F32, F64) => b
                .build_float_ext(a.float(), self.ctx.f64_type(), "fpext")
                .ll()?
                .into(),
            (F64, F32) => b
                .build_float_trunc(a.float(), self.ctx.f32_type(), "fptrunc")
                .ll()?
                .into(),
            _ => return Err(missing("cast")),
        };
        Ok(Val { v, ty: to })
    }

    fn atomic(
        &mut self,
        op: AtomicOp,
        ptr: PointerValue<'ctx>,
        elem: ScalarType,
        v: Val<'ctx>,
    ) -> Result<Val<'ctx>, CodegenError> {
        let ord = AtomicOrdering::Monotonic;
        if elem.is_complex() && op == AtomicOp::Add {
            // Two independent float atomics, one per part: a sum's parts
            // never interact.
            let part = elem.component();
            let st = self.value_type(elem).into_struct_type();
            let (re, im) = self.parts(v)?;
            let pr = self.builder.build_struct_gep(st, ptr, 0, "re").ll()?;
            let pi = self.builder.build_struct_gep(st, ptr, 1, "im").ll()?;
            let or = self.atomic(
                op,
                pr,
                part,
                Val {
                    v: re.into(),
                    ty: part,
                },
            )?;
            let oi = self.atomic(
                op,
                pi,
                part,
                Val {
                    v: im.into(),
                    ty: part,
                },
            )?;
            return self.make_complex(elem, or.float(), oi.float());
        }
        if elem.is_int() {
            let rmw = match op {
                AtomicOp::Add => AtomicRMWBinOp::Add,
                AtomicOp::Sub => AtomicRMWBinOp::Sub,
                AtomicOp::Min if elem.is_unsigned() => AtomicRMWBinOp::UMin,
                AtomicOp::Max if elem.is_unsigned() => AtomicRMWBinOp::UMax,
                AtomicOp::Min => AtomicRMWBinOp::Min,
                AtomicOp::Max => AtomicRMWBinOp::Max,
                AtomicOp::Exch => AtomicRMWBinOp::Xchg,
            };
            let old = self.builder.build_atomicrmw(rmw, ptr, v.int(), ord).ll()?;
            return Ok(Val {
                v: old.into(),
                ty: elem,
            });
        }
        let rmw = match op {
            AtomicOp::Add => AtomicRMWBinOp::FAdd,
            AtomicOp::Exch => AtomicRMWBinOp::Xchg,
            _ => return Err(missing("float atomic")),
        };
        // inkwell 0.11 builds atomicrmw on integers only; floating-point
        // `atomicrmw fadd`/`xchg` go through the C API.
        // SAFETY: the builder is positioned (we emitted into it just above),
        // `ptr` points to `elem`-typed memory and `v` has type `elem`, which
        // is what LLVMBuildAtomicRMW requires; the result is a value of
        // `elem`'s type owned by the module.
        let raw = unsafe {
            inkwell::llvm_sys::core::LLVMBuildAtomicRMW(
                self.builder.as_mut_ptr(),
                rmw.into(),
                ptr.as_value_ref(),
                v.v.as_value_ref(),
                ord.into(),
                0,
            )
        };
        if raw.is_null() {
            return Err(missing("atomicrmw result"));
        }
        // SAFETY: `raw` is the non-null float-typed instruction just built.
        let old = unsafe { BasicValueEnum::new(raw) };
        Ok(Val { v: old, ty: elem })
    }

    /// Calls a device function; `None` for one that returns nothing.
    fn call(
        &mut self,
        st: &mut FnState<'ctx>,
        name: &str,
        args: &[Expr],
    ) -> Result<Option<Val<'ctx>>, CodegenError> {
        if name == crate::serial::SET_TID_SYMBOL && self.opts.target == Target::Host {
            // The simulator's thread loop (`serial`): threadIdx := args.
            let ctxp = st.host_ctx.ok_or_else(|| missing("host context"))?;
            for (axis, a) in args.iter().enumerate() {
                let v = self.expr(st, a)?.int();
                let at = self.byte_gep(ctxp, host_ctx::TID + 4 * axis as u64)?;
                self.builder.build_store(at, v).ll()?;
            }
            return Ok(None);
        }
        let f = self
            .ir
            .device_function(name)
            .ok_or_else(|| missing(&format!("device function `{name}`")))?;
        let fv = *self
            .device_fns
            .get(name)
            .ok_or_else(|| missing(&format!("declaration of `{name}`")))?;
        let mut argv: Vec<BasicMetadataValueEnum<'ctx>> = Vec::new();
        if let Some(c) = st.host_ctx {
            argv.push(c.into());
        }
        for (p, a) in f.params.iter().zip(args) {
            match p.ty {
                Type::Scalar(_) => argv.push(self.expr(st, a)?.v.into()),
                Type::Array(pa) => {
                    let Expr::Var(an) = a else {
                        return Err(missing("array argument"));
                    };
                    let view = st.array(an)?;
                    let ptr = if view.shared {
                        self.builder
                            .build_address_space_cast(view.ptr, self.generic_ptr(), "generic")
                            .ll()?
                    } else {
                        view.ptr
                    };
                    argv.push(ptr.into());
                    argv.extend(view.shape.iter().map(|&s| BasicMetadataValueEnum::from(s)));
                    if !pa.contiguous {
                        let strides = match &view.strides {
                            Some(s) => s.clone(),
                            None => self.c_strides(&view.shape)?,
                        };
                        argv.extend(strides.into_iter().map(BasicMetadataValueEnum::from));
                    }
                }
            }
        }
        if let Some(e) = st.err {
            argv.push(e.into());
        }
        let call = self.builder.build_call(fv, &argv, "call").ll()?;
        Ok(match f.ret {
            Some(t) => Some(Val {
                v: call
                    .try_as_basic_value()
                    .basic()
                    .ok_or_else(|| missing("call result"))?,
                ty: t,
            }),
            None => None,
        })
    }

    /// Element strides of a C-contiguous array of this shape.
    fn c_strides(&self, shape: &[IntValue<'ctx>]) -> Result<Vec<IntValue<'ctx>>, CodegenError> {
        let mut out = vec![self.i64c(1); shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            out[d] = self
                .builder
                .build_int_mul(out[d + 1], shape[d + 1], "stride")
                .ll()?;
        }
        Ok(out)
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
        for (i, p) in kernel_abi(k, self.opts.debug).iter().enumerate() {
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
