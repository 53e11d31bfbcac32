//! Expressions: literals, loads, special registers, short-circuit logic,
//! binary operators (integer division and remainder by zero defined, shifts
//! by any amount as NumPy defines them, unsigned arithmetic in two's
//! complement), casts, atomics and calls of math and device functions,
//! with the fast-math flags the options ask for.

use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, IntValue,
    PointerValue,
};
use inkwell::{AtomicOrdering, AtomicRMWBinOp, FloatPredicate, IntPredicate};

use super::{host_ctx, missing, Binding, FnState, LlvmResult, Lowerer, Target, Val};
use crate::error::CodegenError;
use crate::ir::*;

impl<'ctx> Lowerer<'ctx, '_> {
    fn fast(&self, v: BasicValueEnum<'ctx>) {
        if self.opts.fastmath && self.opts.target == Target::Ptx {
            if let Some(i) = v.as_instruction_value() {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::all());
            }
        }
    }

    pub(super) fn expr(
        &mut self,
        st: &mut FnState<'ctx>,
        e: &Expr,
    ) -> Result<Val<'ctx>, CodegenError> {
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
            Expr::Binary(op, a, b) if op.is_checked() => {
                let a = self.expr(st, a)?;
                let b = self.expr(st, b)?;
                self.checked(st, *op, a, b)?
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

    /// `x // y` on floats as NumPy and Python compute it (`npy_floor_divide`,
    /// from `fmod`): not `floor(x / y)`, which gives 10 for `1 // 0.1` where
    /// they give 9, and inf for `inf // 3` where they give NaN.
    fn float_floordiv(
        &mut self,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
        ty: ScalarType,
    ) -> Result<FloatValue<'ctx>, CodegenError> {
        let ft = x.get_type();
        let suffix = if ty == ScalarType::F32 { "f32" } else { "f64" };
        let floor = self.intrinsic_fn(
            &format!("llvm.floor.{suffix}"),
            Some(ft.into()),
            &[ft.into()],
        )?;
        let copysign = self.intrinsic_fn(
            &format!("llvm.copysign.{suffix}"),
            Some(ft.into()),
            &[ft.into(), ft.into()],
        )?;
        let bld = &self.builder;
        let zero = ft.const_zero();
        let quotient = bld.build_float_div(x, y, "q").ll()?;
        let m = bld.build_float_rem(x, y, "mod").ll()?;
        let div = bld.build_float_sub(x, m, "xm").ll()?;
        let div = bld.build_float_div(div, y, "div").ll()?;
        // A remainder whose sign differs from the divisor's: one less.
        let m_nz = bld
            .build_float_compare(FloatPredicate::UNE, m, zero, "mnz")
            .ll()?;
        let y_neg = bld
            .build_float_compare(FloatPredicate::OLT, y, zero, "yneg")
            .ll()?;
        let m_neg = bld
            .build_float_compare(FloatPredicate::OLT, m, zero, "mneg")
            .ll()?;
        let differ = bld.build_xor(y_neg, m_neg, "differ").ll()?;
        let fix = bld.build_and(m_nz, differ, "fix").ll()?;
        let less = bld.build_float_sub(div, ft.const_float(1.0), "less").ll()?;
        let div = bld
            .build_select(fix, less, div, "div1")
            .ll()?
            .into_float_value();
        // Rounded to the integer it is meant to be.
        let fl = bld
            .build_call(floor, &[div.into()], "fl")
            .ll()?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| missing("floor result"))?
            .into_float_value();
        let frac = bld.build_float_sub(div, fl, "frac").ll()?;
        let up = bld
            .build_float_compare(FloatPredicate::OGT, frac, ft.const_float(0.5), "up")
            .ll()?;
        let fl1 = bld.build_float_add(fl, ft.const_float(1.0), "fl1").ll()?;
        let fl = bld
            .build_select(up, fl1, fl, "fl2")
            .ll()?
            .into_float_value();
        // A zero quotient takes the sign of x / y.
        let signed_zero = bld
            .build_call(copysign, &[zero.into(), quotient.into()], "sz")
            .ll()?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| missing("copysign result"))?
            .into_float_value();
        let div_nz = bld
            .build_float_compare(FloatPredicate::UNE, div, zero, "dnz")
            .ll()?;
        let r = bld
            .build_select(div_nz, fl, signed_zero, "r")
            .ll()?
            .into_float_value();
        // Division by zero: x / y (±inf, or NaN for 0 / 0).
        let y_zero = bld
            .build_float_compare(FloatPredicate::OEQ, y, zero, "y0")
            .ll()?;
        Ok(bld
            .build_select(y_zero, quotient, r, "floordiv")
            .ll()?
            .into_float_value())
    }

    fn binary(&mut self, op: BinOp, a: Val<'ctx>, b: Val<'ctx>) -> Result<Val<'ctx>, CodegenError> {
        let ty = a.ty;
        if ty.is_complex() {
            return self.complex_binary(op, a, b);
        }
        let bld = &self.builder;
        if ty == ScalarType::Bool && matches!(op, BinOp::Min | BinOp::Max) {
            // False < True: the minimum of bools is their `and`, the
            // maximum their `or`.
            let (x, y) = (a.int(), b.int());
            let v = if op == BinOp::Min {
                bld.build_and(x, y, "min").ll()?
            } else {
                bld.build_or(x, y, "max").ll()?
            };
            return Ok(Val { v: v.into(), ty });
        }
        let v: BasicValueEnum<'ctx> = if ty.is_float() {
            let (x, y) = (a.float(), b.float());
            match op {
                BinOp::Add => bld.build_float_add(x, y, "add").ll()?.into(),
                BinOp::Sub => bld.build_float_sub(x, y, "sub").ll()?.into(),
                BinOp::Mul => bld.build_float_mul(x, y, "mul").ll()?.into(),
                BinOp::Div => bld.build_float_div(x, y, "div").ll()?.into(),
                BinOp::Rem => bld.build_float_rem(x, y, "rem").ll()?.into(),
                BinOp::FloorDiv => self.float_floordiv(x, y, ty)?.into(),
                BinOp::Min | BinOp::Max => {
                    // NumPy's minimum/maximum: a NaN on either side is the
                    // result (`(x <= y || isnan(x)) ? x : y`).
                    let p = if op == BinOp::Min {
                        FloatPredicate::OLE
                    } else {
                        FloatPredicate::OGE
                    };
                    let c = bld.build_float_compare(p, x, y, "c").ll()?;
                    let nan = bld
                        .build_float_compare(FloatPredicate::UNO, x, x, "xnan")
                        .ll()?;
                    let c = bld.build_or(c, nan, "keepx").ll()?;
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
                BinOp::CheckedAdd | BinOp::CheckedSub | BinOp::CheckedMul => {
                    return Err(missing("checked operator outside `expr`"))
                }
            }
        };
        if ty.is_float() {
            self.fast(v);
        }
        Ok(Val { v, ty })
    }

    /// Python's `+`, `-` or `*` of two ints on `i64`
    /// ([`BinOp::CheckedAdd`]…): LLVM's `s*.with.overflow`, the wrapped
    /// result, and on overflow [`OVERFLOW_FLAG`] written into the error
    /// record (once: a compare-and-swap from 0, so an index error recorded
    /// first stays).
    fn checked(
        &mut self,
        st: &FnState<'ctx>,
        op: BinOp,
        a: Val<'ctx>,
        b: Val<'ctx>,
    ) -> Result<Val<'ctx>, CodegenError> {
        let name = match op {
            BinOp::CheckedAdd => "llvm.sadd.with.overflow",
            BinOp::CheckedSub => "llvm.ssub.with.overflow",
            _ => "llvm.smul.with.overflow",
        };
        let err = st.err.ok_or_else(|| missing("error record"))?;
        let (x, y) = (a.int(), b.int());
        let intrinsic = inkwell::intrinsics::Intrinsic::find(name)
            .ok_or_else(|| missing("overflow intrinsic"))?;
        let f = intrinsic
            .get_declaration(&self.module, &[x.get_type().into()])
            .ok_or_else(|| missing("overflow intrinsic declaration"))?;
        let pair = self
            .builder
            .build_call(f, &[x.into(), y.into()], "ovf")
            .ll()?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| missing("overflow intrinsic result"))?
            .into_struct_value();
        let v = self.builder.build_extract_value(pair, 0, "v").ll()?;
        let over = self
            .builder
            .build_extract_value(pair, 1, "over")
            .ll()?
            .into_int_value();
        let flag = self.ctx.append_basic_block(st.function, "overflow");
        let done = self.ctx.append_basic_block(st.function, "fits");
        self.builder
            .build_conditional_branch(over, flag, done)
            .ll()?;
        self.builder.position_at_end(flag);
        let i64t = self.ctx.i64_type();
        self.builder
            .build_cmpxchg(
                err,
                i64t.const_zero(),
                i64t.const_int(OVERFLOW_FLAG, false),
                AtomicOrdering::Monotonic,
                AtomicOrdering::Monotonic,
            )
            .ll()?;
        self.builder.build_unconditional_branch(done).ll()?;
        self.builder.position_at_end(done);
        Ok(Val { v, ty: a.ty })
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
    pub(super) fn call(
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
}
