//! Complex numbers: a `c64`/`c128` value is an LLVM `{ float, float }` /
//! `{ double, double }` (NumPy's layout, real part first), and every
//! operation on it is spelled out here in real arithmetic and the same
//! libdevice / libm functions the real math uses, so the PTX and the
//! simulator compute it the same way.
//!
//! The formulas are the textbook ones NumPy's `npymath` uses: Smith's
//! algorithm for division (no overflow of `|b|²`), the `csqrt` of C99 (no
//! cancellation for a negative real part), and `exp(w·log z)` for a general
//! power. Integer powers (`z**2`) never come here: the rewriter multiplies.

use inkwell::values::{BasicValueEnum, FloatValue};
use inkwell::FloatPredicate;

use super::{missing, LlvmResult, Lowerer, Val};
use crate::error::CodegenError;
use crate::ir::{BinOp, MathFn, ScalarType};

type F<'ctx> = FloatValue<'ctx>;

impl<'ctx> Lowerer<'ctx, '_> {
    /// The real and imaginary parts of a complex value.
    pub(super) fn parts(&self, z: Val<'ctx>) -> Result<(F<'ctx>, F<'ctx>), CodegenError> {
        let s = z.v.into_struct_value();
        let re = self.builder.build_extract_value(s, 0, "re").ll()?;
        let im = self.builder.build_extract_value(s, 1, "im").ll()?;
        Ok((re.into_float_value(), im.into_float_value()))
    }

    /// `complex(re, im)` of type `ty` (`c64` or `c128`).
    pub(super) fn make_complex(
        &self,
        ty: ScalarType,
        re: F<'ctx>,
        im: F<'ctx>,
    ) -> Result<Val<'ctx>, CodegenError> {
        let st = self.value_type(ty).into_struct_type();
        let z = self
            .builder
            .build_insert_value(st.get_undef(), re, 0, "z")
            .ll()?;
        let z = self.builder.build_insert_value(z, im, 1, "z").ll()?;
        Ok(Val {
            v: z.into_struct_value().into(),
            ty,
        })
    }

    /// A real math function on `f32`/`f64` values (libdevice on the GPU,
    /// libm on the host): the real `Expr::Math` and every complex formula.
    pub(super) fn rmath(&self, f: MathFn, args: &[F<'ctx>]) -> Result<F<'ctx>, CodegenError> {
        let ft = args
            .first()
            .ok_or_else(|| missing("math argument"))?
            .get_type();
        let ty = if ft == self.ctx.f32_type() {
            ScalarType::F32
        } else {
            ScalarType::F64
        };
        let name = super::math_symbol(f, ty, self.opts.target);
        let bt = self.value_type(ty);
        let fun = self.intrinsic_fn(&name, Some(bt), &vec![bt.into(); args.len()])?;
        let argv: Vec<_> = args.iter().map(|a| (*a).into()).collect();
        let v = self
            .builder
            .build_call(fun, &argv, "math")
            .ll()?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| missing("math result"))?;
        Ok(v.into_float_value())
    }

    fn fadd(&self, a: F<'ctx>, b: F<'ctx>) -> Result<F<'ctx>, CodegenError> {
        self.builder.build_float_add(a, b, "add").ll()
    }
    fn fsub(&self, a: F<'ctx>, b: F<'ctx>) -> Result<F<'ctx>, CodegenError> {
        self.builder.build_float_sub(a, b, "sub").ll()
    }
    fn fmul(&self, a: F<'ctx>, b: F<'ctx>) -> Result<F<'ctx>, CodegenError> {
        self.builder.build_float_mul(a, b, "mul").ll()
    }
    fn fdiv(&self, a: F<'ctx>, b: F<'ctx>) -> Result<F<'ctx>, CodegenError> {
        self.builder.build_float_div(a, b, "div").ll()
    }
    fn fsel(
        &self,
        c: inkwell::values::IntValue<'ctx>,
        a: F<'ctx>,
        b: F<'ctx>,
    ) -> Result<F<'ctx>, CodegenError> {
        Ok(self
            .builder
            .build_select(c, a, b, "sel")
            .ll()?
            .into_float_value())
    }

    /// `+ - * /` on two complex values of one type.
    pub(super) fn complex_binary(
        &mut self,
        op: BinOp,
        a: Val<'ctx>,
        b: Val<'ctx>,
    ) -> Result<Val<'ctx>, CodegenError> {
        let ty = a.ty;
        let (ar, ai) = self.parts(a)?;
        let (br, bi) = self.parts(b)?;
        let (re, im) = match op {
            BinOp::Add => (self.fadd(ar, br)?, self.fadd(ai, bi)?),
            BinOp::Sub => (self.fsub(ar, br)?, self.fsub(ai, bi)?),
            BinOp::Mul => self.cmul((ar, ai), (br, bi))?,
            BinOp::Div => self.cdiv((ar, ai), (br, bi))?,
            _ => return Err(missing("complex operator")),
        };
        self.make_complex(ty, re, im)
    }

    fn cmul(
        &self,
        (ar, ai): (F<'ctx>, F<'ctx>),
        (br, bi): (F<'ctx>, F<'ctx>),
    ) -> Result<(F<'ctx>, F<'ctx>), CodegenError> {
        let re = self.fsub(self.fmul(ar, br)?, self.fmul(ai, bi)?)?;
        let im = self.fadd(self.fmul(ar, bi)?, self.fmul(ai, br)?)?;
        Ok((re, im))
    }

    /// Smith's algorithm: divide by the larger part of the divisor first.
    fn cdiv(
        &self,
        (ar, ai): (F<'ctx>, F<'ctx>),
        (br, bi): (F<'ctx>, F<'ctx>),
    ) -> Result<(F<'ctx>, F<'ctx>), CodegenError> {
        let abr = self.rmath(MathFn::Fabs, &[br])?;
        let abi = self.rmath(MathFn::Fabs, &[bi])?;
        let one = br.get_type().const_float(1.0);
        // |br| >= |bi|: r = bi/br, d = br + bi·r, ((ar + ai·r)/d, (ai − ar·r)/d)
        let r1 = self.fdiv(bi, br)?;
        let d1 = self.fdiv(one, self.fadd(br, self.fmul(bi, r1)?)?)?;
        let re1 = self.fmul(self.fadd(ar, self.fmul(ai, r1)?)?, d1)?;
        let im1 = self.fmul(self.fsub(ai, self.fmul(ar, r1)?)?, d1)?;
        // otherwise: r = br/bi, d = bi + br·r, ((ar·r + ai)/d, (ai·r − ar)/d)
        let r2 = self.fdiv(br, bi)?;
        let d2 = self.fdiv(one, self.fadd(bi, self.fmul(br, r2)?)?)?;
        let re2 = self.fmul(self.fadd(self.fmul(ar, r2)?, ai)?, d2)?;
        let im2 = self.fmul(self.fsub(self.fmul(ai, r2)?, ar)?, d2)?;
        let first = self
            .builder
            .build_float_compare(FloatPredicate::OGE, abr, abi, "big")
            .ll()?;
        // By zero, NumPy divides each part by |br| (+0.0): inf, -inf or nan
        // per part, where the formulas above give nan + nanj.
        let zero = br.get_type().const_zero();
        let by_zero = self
            .builder
            .build_float_compare(FloatPredicate::OEQ, self.fadd(abr, abi)?, zero, "by_zero")
            .ll()?;
        let (re0, im0) = (self.fdiv(ar, abr)?, self.fdiv(ai, abr)?);
        let (re, im) = (self.fsel(first, re1, re2)?, self.fsel(first, im1, im2)?);
        Ok((self.fsel(by_zero, re0, re)?, self.fsel(by_zero, im0, im)?))
    }

    /// The complex math functions ([`MathFn::takes_complex`]).
    pub(super) fn complex_math(
        &mut self,
        f: MathFn,
        vals: &[Val<'ctx>],
    ) -> Result<Val<'ctx>, CodegenError> {
        let z = *vals.first().ok_or_else(|| missing("math argument"))?;
        let ty = z.ty;
        let (a, b) = self.parts(z)?;
        let ft = a.get_type();
        let zero = ft.const_zero();
        let two = ft.const_float(2.0);
        let (re, im) = match f {
            MathFn::Fabs => {
                let m = self.rmath(MathFn::Hypot, &[a, b])?;
                return Ok(Val {
                    v: BasicValueEnum::from(m),
                    ty: ty.component(),
                });
            }
            MathFn::Exp => {
                let e = self.rmath(MathFn::Exp, &[a])?;
                let c = self.rmath(MathFn::Cos, &[b])?;
                let s = self.rmath(MathFn::Sin, &[b])?;
                (self.fmul(e, c)?, self.fmul(e, s)?)
            }
            MathFn::Log | MathFn::Log10 => {
                let m = self.rmath(MathFn::Hypot, &[a, b])?;
                let re = self.rmath(MathFn::Log, &[m])?;
                let im = self.rmath(MathFn::Atan2, &[b, a])?;
                if f == MathFn::Log10 {
                    let ln10 = ft.const_float(std::f64::consts::LN_10);
                    (self.fdiv(re, ln10)?, self.fdiv(im, ln10)?)
                } else {
                    (re, im)
                }
            }
            MathFn::Sqrt => {
                // t = sqrt((|a| + |z|) / 2); a ≥ 0: (t, b/2t), else (|b|/2t, ±t)
                let m = self.rmath(MathFn::Hypot, &[a, b])?;
                let aa = self.rmath(MathFn::Fabs, &[a])?;
                let half = ft.const_float(0.5);
                let t = self.rmath(MathFn::Sqrt, &[self.fmul(self.fadd(aa, m)?, half)?])?;
                let t2 = self.fmul(t, two)?;
                let ab = self.rmath(MathFn::Fabs, &[b])?;
                let pos_re = t;
                let pos_im = self.fdiv(b, t2)?;
                let neg_re = self.fdiv(ab, t2)?;
                let neg_im = self.rmath(MathFn::Copysign, &[t, b])?;
                let pos = self
                    .builder
                    .build_float_compare(FloatPredicate::OGE, a, zero, "pos")
                    .ll()?;
                let re = self.fsel(pos, pos_re, neg_re)?;
                let im = self.fsel(pos, pos_im, neg_im)?;
                // sqrt(0 ± 0i) = 0 ± 0i (the formulas divide 0 by 0 there).
                let is0 = self
                    .builder
                    .build_float_compare(FloatPredicate::OEQ, m, zero, "zero")
                    .ll()?;
                (self.fsel(is0, zero, re)?, self.fsel(is0, b, im)?)
            }
            MathFn::Sin | MathFn::Cos | MathFn::Sinh | MathFn::Cosh => {
                let (sa, ca) = (
                    self.rmath(MathFn::Sin, &[a])?,
                    self.rmath(MathFn::Cos, &[a])?,
                );
                let (shb, chb) = (
                    self.rmath(MathFn::Sinh, &[b])?,
                    self.rmath(MathFn::Cosh, &[b])?,
                );
                let (sb, cb) = (
                    self.rmath(MathFn::Sin, &[b])?,
                    self.rmath(MathFn::Cos, &[b])?,
                );
                let (sha, cha) = (
                    self.rmath(MathFn::Sinh, &[a])?,
                    self.rmath(MathFn::Cosh, &[a])?,
                );
                match f {
                    // sin(a+bi) = sin a cosh b + i cos a sinh b
                    MathFn::Sin => (self.fmul(sa, chb)?, self.fmul(ca, shb)?),
                    // cos(a+bi) = cos a cosh b − i sin a sinh b
                    MathFn::Cos => {
                        let im = self.fmul(sa, shb)?;
                        (
                            self.fmul(ca, chb)?,
                            self.builder.build_float_neg(im, "neg").ll()?,
                        )
                    }
                    // sinh(a+bi) = sinh a cos b + i cosh a sin b
                    MathFn::Sinh => (self.fmul(sha, cb)?, self.fmul(cha, sb)?),
                    // cosh(a+bi) = cosh a cos b + i sinh a sin b
                    _ => (self.fmul(cha, cb)?, self.fmul(sha, sb)?),
                }
            }
            MathFn::Tan | MathFn::Tanh => {
                // tan(a+bi) = -i tanh(-b + ai): one formula, on (x, y) =
                // (a, b) for tanh and (b, a) for tan.
                let (x, y) = if f == MathFn::Tan { (b, a) } else { (a, b) };
                let (x2, y2) = (self.fmul(x, two)?, self.fmul(y, two)?);
                // tanh(x+yi) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y)
                let d = self.fadd(
                    self.rmath(MathFn::Cosh, &[x2])?,
                    self.rmath(MathFn::Cos, &[y2])?,
                )?;
                let re = self.fdiv(self.rmath(MathFn::Sinh, &[x2])?, d)?;
                let im = self.fdiv(self.rmath(MathFn::Sin, &[y2])?, d)?;
                // |x| ≥ 22: sinh and cosh overflow (inf / inf is nan); the
                // value is ±1 + i·4 sin y cos y e^(-2|x|), as C99's ctanh
                // (and so NumPy) computes it, exact at x = ±inf.
                let ax = self.rmath(MathFn::Fabs, &[x])?;
                let far = self
                    .builder
                    .build_float_compare(FloatPredicate::OGE, ax, ft.const_float(22.0), "far")
                    .ll()?;
                let e = self.rmath(
                    MathFn::Exp,
                    &[self.builder.build_float_neg(ax, "neg").ll()?],
                )?;
                let sc = self.fmul(
                    self.rmath(MathFn::Sin, &[y])?,
                    self.rmath(MathFn::Cos, &[y])?,
                )?;
                let far_im = self.fmul(self.fmul(self.fmul(sc, ft.const_float(4.0))?, e)?, e)?;
                // At x = ±inf a signed zero, whatever y is (nan·0 is nan).
                let inf = self
                    .builder
                    .build_float_compare(
                        FloatPredicate::OEQ,
                        ax,
                        ft.const_float(f64::INFINITY),
                        "inf",
                    )
                    .ll()?;
                let zero_im = self.rmath(MathFn::Copysign, &[zero, sc])?;
                let far_im = self.fsel(inf, zero_im, far_im)?;
                let far_re = self.rmath(MathFn::Copysign, &[ft.const_float(1.0), x])?;
                let (re, im) = (self.fsel(far, far_re, re)?, self.fsel(far, far_im, im)?);
                if f == MathFn::Tan {
                    (im, re)
                } else {
                    (re, im)
                }
            }
            MathFn::Pow => {
                // z**w = exp(w · log z); 0**w is 1 for w = 0, else 0.
                let w = *vals.get(1).ok_or_else(|| missing("power exponent"))?;
                let (wr, wi) = self.parts(w)?;
                let m = self.rmath(MathFn::Hypot, &[a, b])?;
                let lr = self.rmath(MathFn::Log, &[m])?;
                let li = self.rmath(MathFn::Atan2, &[b, a])?;
                let (pr, pi) = self.cmul((wr, wi), (lr, li))?;
                let e = self.rmath(MathFn::Exp, &[pr])?;
                let re = self.fmul(e, self.rmath(MathFn::Cos, &[pi])?)?;
                let im = self.fmul(e, self.rmath(MathFn::Sin, &[pi])?)?;
                let bld = &self.builder;
                let z0 = bld
                    .build_float_compare(FloatPredicate::OEQ, m, zero, "z0")
                    .ll()?;
                let wr0 = bld
                    .build_float_compare(FloatPredicate::OEQ, wr, zero, "w0")
                    .ll()?;
                let wi0 = bld
                    .build_float_compare(FloatPredicate::OEQ, wi, zero, "w0")
                    .ll()?;
                let w0 = bld.build_and(wr0, wi0, "w0").ll()?;
                let zero_re = self.fsel(w0, ft.const_float(1.0), zero)?;
                (self.fsel(z0, zero_re, re)?, self.fsel(z0, zero, im)?)
            }
            _ => return Err(missing("complex math function")),
        };
        self.make_complex(ty, re, im)
    }
}
