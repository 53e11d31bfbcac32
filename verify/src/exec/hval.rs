//! Host scalars ([`HVal`]): booleans, integers (narrow and unsigned ones
//! wrapped into their type's range, as NumPy overflows), floats and complex
//! numbers, their conversions and casts, and the arithmetic on complex and
//! narrow integers that must match the kernels bit for bit.

use port_codegen::ir::{BinOp, ScalarType};

use crate::error::VerifyError;

/// A host scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HVal {
    B(bool),
    I(i64),
    F(f64),
    /// A narrow or unsigned integer (`i8`, `u8` … `u64`): its value wrapped
    /// into the type's range, held as the bits of an `i64`.
    N(i64, ScalarType),
    /// A complex number `(re, im)` (complex64's parts rounded to `f32`).
    C(f64, f64),
}

/// `v` wrapped into the range of integer type `t` (NumPy's overflow).
pub fn wrap_int(v: i64, t: ScalarType) -> i64 {
    match t {
        ScalarType::I8 => v as i8 as i64,
        ScalarType::I16 => v as i16 as i64,
        ScalarType::I32 => v as i32 as i64,
        ScalarType::U8 => v as u8 as i64,
        ScalarType::U16 => v as u16 as i64,
        ScalarType::U32 => v as u32 as i64,
        _ => v,
    }
}

impl HVal {
    pub fn f(self) -> f64 {
        match self {
            HVal::B(b) => f64::from(u8::from(b)),
            HVal::I(i) => i as f64,
            HVal::F(f) => f,
            HVal::N(i, ScalarType::U64) => i as u64 as f64,
            HVal::N(i, _) => i as f64,
            HVal::C(re, _) => re,
        }
    }

    /// The value as a complex number (a real one has imaginary part 0).
    pub fn c(self) -> (f64, f64) {
        match self {
            HVal::C(re, im) => (re, im),
            v => (v.f(), 0.0),
        }
    }

    pub fn i(self) -> i64 {
        match self {
            HVal::B(b) => i64::from(b),
            HVal::I(i) | HVal::N(i, _) => i,
            HVal::F(f) | HVal::C(f, _) => f as i64,
        }
    }

    pub fn b(self) -> bool {
        match self {
            HVal::B(b) => b,
            HVal::I(i) | HVal::N(i, _) => i != 0,
            HVal::F(f) => f != 0.0,
            HVal::C(re, im) => re != 0.0 || im != 0.0,
        }
    }

    pub fn cast(self, t: ScalarType) -> HVal {
        match t {
            ScalarType::Bool => HVal::B(self.b()),
            ScalarType::I32 => HVal::I(self.i() as i32 as i64),
            ScalarType::I64 => HVal::I(self.i()),
            ScalarType::F32 => HVal::F(self.f() as f32 as f64),
            ScalarType::F64 => HVal::F(self.f()),
            ScalarType::U64 => match self {
                HVal::F(f) => HVal::N(f as u64 as i64, t),
                v => HVal::N(v.i(), t),
            },
            ScalarType::C64 => {
                let (re, im) = self.c();
                HVal::C(f64::from(re as f32), f64::from(im as f32))
            }
            ScalarType::C128 => {
                let (re, im) = self.c();
                HVal::C(re, im)
            }
            t => HVal::N(wrap_int(self.i(), t), t),
        }
    }

    /// The narrow or unsigned type of an operand, if any.
    pub(super) fn narrow(self) -> Option<ScalarType> {
        match self {
            HVal::N(_, t) => Some(t),
            _ => None,
        }
    }
}

/// `x op y` on complex numbers, as the kernels compute it (Smith's
/// division).
pub(super) fn complex_binary(
    op: BinOp,
    (a, b): (f64, f64),
    (c, d): (f64, f64),
) -> Result<HVal, VerifyError> {
    Ok(match op {
        BinOp::Add => HVal::C(a + c, b + d),
        BinOp::Sub => HVal::C(a - c, b - d),
        BinOp::Mul => HVal::C(a * c - b * d, a * d + b * c),
        // By zero: each part over +0.0, as NumPy divides.
        BinOp::Div if c == 0.0 && d == 0.0 => HVal::C(a / c.abs(), b / c.abs()),
        BinOp::Div if c.abs() >= d.abs() => {
            let r = d / c;
            let s = 1.0 / (c + d * r);
            HVal::C((a + b * r) * s, (b - a * r) * s)
        }
        BinOp::Div => {
            let r = c / d;
            let s = 1.0 / (d + c * r);
            HVal::C((a * r + b) * s, (b * r - a) * s)
        }
        _ => {
            return Err(VerifyError::BadPlan(
                "host code applies an operator complex numbers lack".into(),
            ))
        }
    })
}

/// `x op y` on integers of type `t` (narrow or unsigned), wrapped.
pub(super) fn narrow_binary(op: BinOp, x: i64, y: i64, t: ScalarType) -> i64 {
    if t.is_signed() {
        let d = if y == 0 { 1 } else { y };
        let v = match op {
            BinOp::Add => x.wrapping_add(y),
            BinOp::Sub => x.wrapping_sub(y),
            BinOp::Mul => x.wrapping_mul(y),
            BinOp::Div => x.wrapping_div(d),
            BinOp::FloorDiv => x.div_euclid(d) - i64::from(d < 0 && x.rem_euclid(d) != 0),
            BinOp::Rem => x.wrapping_rem(d),
            BinOp::Min => x.min(y),
            BinOp::Max => x.max(y),
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            BinOp::BitXor => x ^ y,
            BinOp::Shl if (y as u64) < u64::from(t.bits()) => x << y,
            BinOp::Shl => 0,
            _ => x >> (y as u64).min(63),
        };
        return wrap_int(v, t);
    }
    let (x, y) = (x as u64, y as u64);
    let d = if y == 0 { 1 } else { y };
    let v = match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div | BinOp::FloorDiv => x / d,
        BinOp::Rem => x % d,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::Shl if y < u64::from(t.bits()) => x << y,
        BinOp::Shr if y < u64::from(t.bits()) => x >> y,
        _ => 0,
    };
    wrap_int(v as i64, t)
}
