//! NumPy 2's typing rules for scalar operations, as pure functions of
//! (dtype, weak): what `np.result_type` gives two operands (NEP 50: a
//! Python number is *weak* and takes the other operand's type when it is
//! of the same kind or narrower), and what each binary operator gives and
//! refuses. The lowering builds its IR from these answers; a typing pass
//! can ask them without building anything. `rewriter/tests/numpy_typing.rs`
//! checks every pair of dtypes and every operator against NumPy itself.

use port_codegen::ir::ScalarType;
use rustpython_parser::ast::{Operator, UnaryOp};

/// The common type of two operands, NumPy 2's `np.result_type`. A *weak*
/// operand (a Python literal) takes the other's type when it is of the same
/// kind or narrower (NEP 50): `x_f32 * 2.0` stays float32, `u8 + 1` stays
/// uint8, `i * 0.5` is float64.
pub fn promote(a: ScalarType, a_weak: bool, b: ScalarType, b_weak: bool) -> ScalarType {
    match (a_weak, b_weak) {
        (true, false) => weak_with(a, b),
        (false, true) => weak_with(b, a),
        _ => strong(a, b),
    }
}

/// The Python type of a number of `t`'s kind (`bool`, `int`, `float`,
/// `complex`): what a Python number of it is called, and its constructor.
pub fn python_type(t: ScalarType) -> &'static str {
    ["bool", "int", "float", "complex"][kind(t) as usize]
}

/// A number's place in Python's tower: bool 0, int 1, float 2, complex 3.
pub fn kind(t: ScalarType) -> u8 {
    if t == ScalarType::Bool {
        0
    } else if t.is_complex() {
        3
    } else if t.is_float() {
        2
    } else {
        1
    }
}

/// `np.result_type` of two array dtypes.
fn strong(a: ScalarType, b: ScalarType) -> ScalarType {
    use ScalarType::*;
    if a == b {
        return a;
    }
    if a.is_complex() || b.is_complex() {
        // complex64 holds what float32 holds; anything wider needs complex128.
        return strong(a.component(), b.component()).complexified();
    }
    match (a, b) {
        (Bool, t) | (t, Bool) => t,
        (F64, _) | (_, F64) => F64,
        // float32 holds int8/16 and uint8/16 exactly, not wider integers.
        (F32, t) | (t, F32) => {
            if t.bits() <= 16 {
                F32
            } else {
                F64
            }
        }
        _ if a.is_signed() == b.is_signed() => {
            if a.bits() >= b.bits() {
                a
            } else {
                b
            }
        }
        _ => {
            // One signed, one unsigned: the smallest signed type holding both.
            let (s, u) = if a.is_signed() { (a, b) } else { (b, a) };
            match u.bits().max(s.bits() / 2) {
                8 if s.bits() > 8 => s,
                8 => I16,
                16 => I32,
                32 => I64,
                _ => F64,
            }
        }
    }
}

fn weak_with(weak: ScalarType, strong_t: ScalarType) -> ScalarType {
    use ScalarType::*;
    match (weak, strong_t) {
        // `x_f32 * 1j` is complex64, `i * 1j` complex128 (NEP 50).
        (w, s) if w.is_complex() && s.is_complex() => s,
        (w, s) if w.is_complex() && s.is_float() => s.complexified(),
        (w, _) if w.is_complex() => C128,
        (_, s) if s.is_complex() => s,
        (w, s) if w.is_float() && !s.is_float() => F64,
        (w, Bool) if w.is_int() => I64,
        _ => strong_t,
    }
}

/// Joins the types seen for one variable (its declared type).
pub fn join(a: ScalarType, b: ScalarType) -> ScalarType {
    use ScalarType::*;
    if a == b {
        return a;
    }
    match (a, b) {
        (F32, t) | (t, F32) if !t.is_float() && !t.is_complex() => F32,
        _ => strong(a, b),
    }
}

/// How a binary operator computes on its operands, once both are cast to
/// [`BinType::operands`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinForm {
    /// The operator itself (`+` of numbers, `&` of integers, …).
    Arith,
    /// NumPy's bools: `+` is `or`, `|` too.
    Or,
    /// NumPy's bools: `*` is `and`, `&` too.
    And,
    /// Bools: `^` is `!=`.
    Xor,
}

/// What a binary operator gives two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinType {
    /// The type both operands are cast to.
    pub operands: ScalarType,
    /// The result's type (`/` of integers is float64).
    pub result: ScalarType,
    pub form: BinForm,
}

/// NumPy 2's (and, for two Python bools, Python's) binary operator `op`
/// on `a` and `b`, each (dtype, weak); `Err` says what NumPy raises or
/// port does not compute. `**`'s exponent forms (a literal, a variable
/// integer) are the lowering's to decide; `@` is not an element operator.
pub fn binop(
    op: Operator,
    (ta, wa): (ScalarType, bool),
    (tb, wb): (ScalarType, bool),
) -> Result<BinType, &'static str> {
    use Operator as O;
    let t = promote(ta, wa, tb, wb);
    let plain = |t| {
        Ok(BinType {
            operands: t,
            result: t,
            form: BinForm::Arith,
        })
    };
    let bools = |form| {
        Ok(BinType {
            operands: ScalarType::Bool,
            result: ScalarType::Bool,
            form,
        })
    };
    // Arithmetic on bools: NumPy's when either is a NumPy bool (an
    // array's element, a comparison of them): `+` is `or`, `*` is `and`,
    // `-` raises, `//`, `%` and `**` give int8. Python's on two Python
    // bools (`True + True` is 2).
    let numpy_bools = t == ScalarType::Bool && !(wa && wb);
    if t == ScalarType::Bool {
        match op {
            O::Add if numpy_bools => return bools(BinForm::Or),
            O::Mult if numpy_bools => return bools(BinForm::And),
            O::Sub if numpy_bools => return Err("`-` on NumPy bools (NumPy raises a TypeError)"),
            O::BitAnd => return bools(BinForm::And),
            O::BitOr => return bools(BinForm::Or),
            O::BitXor => return bools(BinForm::Xor),
            O::FloorDiv | O::Mod | O::Pow if numpy_bools => return plain(ScalarType::I8),
            O::Add | O::Sub | O::Mult | O::FloorDiv | O::Mod | O::Pow => {
                return plain(ScalarType::I64)
            }
            _ => {}
        }
    }
    if t.is_complex() && !matches!(op, O::Add | O::Sub | O::Mult | O::Div | O::Pow) {
        // NumPy raises a TypeError for `//`, `%` and bitwise operators on
        // complex numbers.
        return Err("this operator on complex numbers (NumPy refuses it too)");
    }
    match op {
        O::Add | O::Sub | O::Mult | O::FloorDiv | O::Mod | O::Pow => plain(t),
        O::Div => {
            let ft = if t.is_float() || t.is_complex() {
                t
            } else {
                ScalarType::F64
            };
            plain(ft)
        }
        O::BitAnd | O::BitOr | O::BitXor | O::LShift | O::RShift if t.is_int() => plain(t),
        _ => Err("this operator (`@` or a bitwise operator on floats)"),
    }
}

/// The types a value can have when each operand's type is one of several
/// (`min(s, x_f32[i])` is the Python float `s` or a NumPy float32,
/// whichever wins): every combination's result under `op` (a unary one
/// when `b` is empty), one per dtype, weak when its operands are. A
/// combination NumPy refuses is left out; the lowering reports the one it
/// meets. One result means the value has one type whichever argument won.
pub fn alternatives(
    op: Result<Operator, UnaryOp>,
    a: &[(ScalarType, bool)],
    b: &[(ScalarType, bool)],
) -> Vec<(ScalarType, bool)> {
    let mut out: Vec<(ScalarType, bool)> = Vec::new();
    let mut push = |r: (ScalarType, bool)| {
        if !out.iter().any(|(t, _)| *t == r.0) {
            out.push(r);
        }
    };
    for &x in a {
        match op {
            Err(u) => {
                if let Ok(t) = unary(u, x) {
                    push((t, x.1));
                }
            }
            Ok(o) => {
                for &y in b {
                    if let Ok(r) = binop(o, x, y) {
                        push((r.result, x.1 && y.1));
                    }
                }
            }
        }
    }
    out
}

/// NumPy 2's (and, for a Python number, Python's) unary operator `op` on
/// `(t, weak)`: the type the operand is cast to, which is also the
/// result's (`not` gives a bool, whatever it reads); `Err` says what NumPy
/// raises or port does not compute.
pub fn unary(op: UnaryOp, (t, weak): (ScalarType, bool)) -> Result<ScalarType, &'static str> {
    match op {
        UnaryOp::Not => Ok(ScalarType::Bool),
        // A Python bool is an int to `-`, `+` and `~` (`~True` is -2).
        _ if t == ScalarType::Bool && weak => Ok(ScalarType::I64),
        UnaryOp::USub | UnaryOp::UAdd if t == ScalarType::Bool => {
            Err("`-` or `+` on NumPy bools (NumPy raises a TypeError)")
        }
        UnaryOp::USub | UnaryOp::UAdd => Ok(t),
        // `~` of NumPy bools is `not`; of integers, their bits.
        UnaryOp::Invert if t == ScalarType::Bool || t.is_int() => Ok(t),
        UnaryOp::Invert => Err("`~` of floats or complex numbers (NumPy raises a TypeError)"),
    }
}

/// `np.finfo(t).<attr>` of a float type `t` (`eps`, `epsneg`, `max`,
/// `min`, `tiny`, `smallest_normal`, `resolution`), as an f64 holding the
/// value of type `t` exactly; `None` for another attribute or type.
pub fn float_limit(t: ScalarType, attr: &str) -> Option<f64> {
    match t {
        ScalarType::F64 => match attr {
            "eps" => Some(f64::EPSILON),
            "epsneg" => Some(f64::EPSILON / 2.0),
            "max" => Some(f64::MAX),
            "min" => Some(f64::MIN),
            "tiny" | "smallest_normal" => Some(f64::MIN_POSITIVE),
            "resolution" => Some(1e-15),
            _ => None,
        },
        ScalarType::F32 => match attr {
            "eps" => Some(f32::EPSILON),
            "epsneg" => Some(f32::EPSILON / 2.0),
            "max" => Some(f32::MAX),
            "min" => Some(f32::MIN),
            "tiny" | "smallest_normal" => Some(f32::MIN_POSITIVE),
            "resolution" => Some(1e-6),
            _ => None,
        }
        .map(f64::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType::*;

    #[test]
    fn a_winner_keeps_two_types_where_numpy_promotes_them_apart() {
        let winner = [(F64, true), (F32, false)];
        // A NumPy bool plus the Python float is float64, plus a float32
        // float32 (fuzz seed 905074).
        assert_eq!(
            alternatives(Ok(Operator::Add), &[(Bool, false)], &winner),
            vec![(F64, false), (F32, false)]
        );
        // Beside a float64 element both are float64: one type.
        assert_eq!(
            alternatives(Ok(Operator::Mult), &winner, &[(F64, false)]),
            vec![(F64, false)]
        );
        // `-` keeps each its own, the Python float weak.
        assert_eq!(
            alternatives(Err(UnaryOp::USub), &winner, &[]),
            vec![(F64, true), (F32, false)]
        );
        // NumPy bools refuse `-`: that combination gives nothing.
        assert_eq!(
            alternatives(Ok(Operator::Sub), &[(Bool, false)], &[(Bool, false)]),
            vec![]
        );
    }
}
