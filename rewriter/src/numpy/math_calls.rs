//! **math_calls**: `np.sqrt`, `np.exp`, `math.sin` and friends become the
//! kernel IR's math functions, printed as `math.*` calls in the Numba-CUDA
//! source (numba-cuda has no `np.sqrt` inside kernels). NumPy's ufuncs apply
//! element by element to arrays; `math.*` keeps Python's float64 result
//! type, `np.*` keeps float32 as float32. Also the scalar built-ins `abs`,
//! `min`, `max`, `float`, `int` and `np.where`, `np.clip`, `np.isnan`, ….

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, MathFn, ScalarType, UnaryOp};

use crate::ir_util::{cast_to, lit, promote, select};
use crate::numpy::array_expr::{map1, map2, map3, Val};

pub const NAME: &str = "math_calls";

/// Whether the NumPy or math function `name` (dotted) maps elements to
/// elements, one result per element of its broadcast arguments: a math
/// function or one of NumPy's arithmetic and comparison ufuncs. (Used to
/// carry a boolean-mask selection through an expression: `f(x[m])` is
/// `f(x)[m]` only for such `f`.)
pub fn is_elementwise(name: &str) -> bool {
    if math_fn(name).is_some() {
        return true;
    }
    let Some(f) = name.strip_prefix("numpy.") else {
        return false;
    };
    matches!(
        f,
        "abs"
            | "absolute"
            | "square"
            | "power"
            | "maximum"
            | "minimum"
            | "add"
            | "subtract"
            | "multiply"
            | "divide"
            | "true_divide"
            | "negative"
            | "positive"
            | "sign"
            | "reciprocal"
            | "rint"
            | "round"
            | "clip"
            | "exp"
            | "log"
            | "isnan"
            | "isinf"
            | "isfinite"
            | "signbit"
            | "logical_not"
            | "logical_and"
            | "logical_or"
            | "greater"
            | "less"
            | "equal"
            | "not_equal"
            | "greater_equal"
            | "less_equal"
    )
}

/// The math function behind a dotted name (`math.sqrt`, `numpy.arcsin`).
pub fn math_fn(name: &str) -> Option<MathFn> {
    let (module, f) = name.rsplit_once('.')?;
    if module != "math" && module != "numpy" {
        return None;
    }
    let np = module == "numpy";
    Some(match f {
        "sqrt" => MathFn::Sqrt,
        "cbrt" if np => MathFn::Cbrt,
        "exp" => MathFn::Exp,
        "exp2" => MathFn::Exp2,
        "expm1" => MathFn::Expm1,
        "log" => MathFn::Log,
        "log2" => MathFn::Log2,
        "log10" => MathFn::Log10,
        "log1p" => MathFn::Log1p,
        "sin" => MathFn::Sin,
        "cos" => MathFn::Cos,
        "tan" => MathFn::Tan,
        "asin" | "arcsin" => MathFn::Asin,
        "acos" | "arccos" => MathFn::Acos,
        "atan" | "arctan" => MathFn::Atan,
        "sinh" => MathFn::Sinh,
        "cosh" => MathFn::Cosh,
        "tanh" => MathFn::Tanh,
        "asinh" | "arcsinh" => MathFn::Asinh,
        "acosh" | "arccosh" => MathFn::Acosh,
        "atanh" | "arctanh" => MathFn::Atanh,
        "erf" if !np => MathFn::Erf,
        "erfc" if !np => MathFn::Erfc,
        "gamma" if !np => MathFn::Tgamma,
        "lgamma" if !np => MathFn::Lgamma,
        "fabs" => MathFn::Fabs,
        "floor" => MathFn::Floor,
        "ceil" => MathFn::Ceil,
        "trunc" => MathFn::Trunc,
        // `np.power` is `**` (integers stay integers): see lift's
        // `arithmetic_ufunc`.
        "pow" | "float_power" => MathFn::Pow,
        "atan2" | "arctan2" => MathFn::Atan2,
        "hypot" => MathFn::Hypot,
        "fmod" => MathFn::Fmod,
        "copysign" => MathFn::Copysign,
        "fmin" => MathFn::Fmin,
        "fmax" => MathFn::Fmax,
        _ => return None,
    })
}

/// The `scipy.special` ufuncs with an equivalent here, on real arguments,
/// with NumPy's float types (float32 stays float32, as scipy's `f->f`
/// loops keep it): `erf`, `erfc`, `gamma`, `gammaln` (libdevice's
/// `lgamma`: real arguments only), and `expit` as `1 / (1 + exp(-x))`,
/// scipy's own formula.
pub fn special(f: &str, args: &[Val]) -> Option<Val> {
    let [a] = args else { return None };
    if elem_type(a).is_some_and(|t| t.is_complex()) {
        return None;
    }
    let fun = match f {
        "erf" => Some(MathFn::Erf),
        "erfc" => Some(MathFn::Erfc),
        "gamma" => Some(MathFn::Tgamma),
        "gammaln" => Some(MathFn::Lgamma),
        "expit" => None,
        _ => return None,
    };
    map1(a, &mut |e, t| {
        let ft = float_of(t, true);
        let x = cast_to(e, t, ft);
        let v = match fun {
            Some(m) => math(m, vec![x]),
            None => div(
                lit(ft, 1.0),
                add(
                    lit(ft, 1.0),
                    math(MathFn::Exp, vec![Expr::Unary(UnaryOp::Neg, Box::new(x))]),
                ),
            ),
        };
        (v, ft)
    })
}

/// The float type NumPy's float ufunc of two arguments computes in: the
/// smallest both cast to safely (`np.hypot(i8, u16)` is float32, though
/// `np.result_type(i8, u16)` is int32), Python numbers beside a NumPy
/// operand promoting as NEP 50 says; `np.float_power` always float64.
fn float_of2(name: &str, (tx, wx): (ScalarType, bool), (ty, wy): (ScalarType, bool)) -> ScalarType {
    let numpy = name.starts_with("numpy.");
    let common = promote(tx, wx, ty, wy);
    let ft = if !numpy || wx || wy {
        float_of(common, numpy)
    } else {
        let rank = |t: ScalarType| match float_of(t.component(), true) {
            ScalarType::F32 => 1,
            _ if matches!(t, ScalarType::Bool | ScalarType::I8 | ScalarType::U8) => 0,
            _ => 2,
        };
        let f = if rank(tx).max(rank(ty)) <= 1 {
            ScalarType::F32
        } else {
            ScalarType::F64
        };
        if common.is_complex() {
            f.complexified()
        } else {
            f
        }
    };
    if name == "numpy.float_power" {
        return if ft.is_complex() {
            ScalarType::C128
        } else {
            ScalarType::F64
        };
    }
    ft
}

/// The float type a math function computes in for an argument of type `t`:
/// `math.*` always float64 (Python floats), `np.*` keeps float32 and, as
/// NumPy's type resolution does, computes int16/uint16 in float32 (bool,
/// int8 and uint8 would be float16: see [`float16_result`]).
fn float_of(t: ScalarType, numpy: bool) -> ScalarType {
    if t.is_complex() {
        // Only NumPy's ufuncs with a complex form get here (see `call`).
        t
    } else if numpy && matches!(t, ScalarType::F32 | ScalarType::I16 | ScalarType::U16) {
        ScalarType::F32
    } else {
        ScalarType::F64
    }
}

/// Whether `name(args)` gives a Python number, weak in NumPy 2's
/// promotion: `math.*`, the built-ins `float`, `int`, `bool` and `round`
/// always, and `abs` of a Python number (`acc_u8 *= math.floor(x)` stays
/// uint8, `a_u8 * abs(k)` of a Python int `k` too).
pub fn gives_python_number(name: &str, args: &[Val]) -> bool {
    name.starts_with("math.")
        || matches!(name, "float" | "int" | "bool" | "round")
        || (name == "abs" && matches!(args, [Val::Scalar(_, _, true)]))
}

/// Lowers a call to a math function or numeric built-in; `None` when `name`
/// is not one (or the arguments do not fit, e.g. a tuple).
pub fn call(name: &str, args: &[Val]) -> Option<Val> {
    if let Some(f) = name.strip_prefix("scipy.special.") {
        return special(f, args);
    }
    let numpy = name.starts_with("numpy.");
    let short = name.rsplit('.').next().unwrap_or(name);
    if let Some(v) = complex_call(name, short, numpy, args) {
        return v;
    }
    // math.floor / ceil / trunc return Python ints.
    if !numpy && matches!(name, "math.floor" | "math.ceil" | "math.trunc") && args.len() == 1 {
        let f = math_fn(name)?;
        return map1(&args[0], &mut |e, t| {
            // An int (a bool is one: `math.floor(True)` is 1) is its own
            // floor.
            if t == ScalarType::U64 {
                // Python's int holds any value, a uint64's above 2**63 too.
                (e, t)
            } else if t.is_int() || t == ScalarType::Bool {
                (cast_to(e, t, ScalarType::I64), ScalarType::I64)
            } else {
                (cast(ScalarType::I64, math(f, vec![e])), ScalarType::I64)
            }
        });
    }
    if let Some(f) = math_fn(name) {
        return match (f.arity(), args) {
            (1, [a]) => map1(a, &mut |e, t| {
                // NumPy (2.3 on) gives integers and bools back unchanged
                // from floor, ceil and trunc, in their own type.
                if (t.is_int() || t == ScalarType::Bool)
                    && matches!(f, MathFn::Floor | MathFn::Ceil | MathFn::Trunc)
                    && numpy
                {
                    return (e, t);
                }
                let ft = float_of(t, numpy);
                (math(f, vec![cast_to(e, t, ft)]), ft)
            }),
            (2, [a, b]) => map2(a, b, &mut |(x, tx, wx), (y, ty, wy)| {
                let common = promote(tx, wx, ty, wy);
                // NumPy's fmin, fmax and fmod of integers (and bools)
                // compute in integers: `fmod` is C's remainder, 0 by zero.
                if numpy
                    && (common.is_int() || common == ScalarType::Bool)
                    && matches!(f, MathFn::Fmin | MathFn::Fmax | MathFn::Fmod)
                {
                    let t = match (f, common) {
                        (MathFn::Fmod, ScalarType::Bool) => ScalarType::I8,
                        _ => common,
                    };
                    let (cx, cy) = (cast_to(x, tx, t), cast_to(y, ty, t));
                    match f {
                        MathFn::Fmin => return (binary(BinOp::Min, cx, cy), t),
                        MathFn::Fmax => return (binary(BinOp::Max, cx, cy), t),
                        MathFn::Fmod => {
                            let zero = lit(t, 0.0);
                            return (
                                select(
                                    cmp(CmpOp::Eq, cy.clone(), zero.clone()),
                                    zero,
                                    binary(BinOp::Rem, cx, cy),
                                ),
                                t,
                            );
                        }
                        _ => unreachable!("fmin, fmax or fmod"),
                    }
                }
                let ft = float_of2(name, (tx, wx), (ty, wy));
                (math(f, vec![cast_to(x, tx, ft), cast_to(y, ty, ft)]), ft)
            }),
            _ => None,
        };
    }
    match (short, args, numpy || !name.contains('.')) {
        ("log", [a, b], false) if name == "math.log" => {
            map2(a, b, &mut |(x, tx, _), (y, ty, _)| {
                let f64t = ScalarType::F64;
                (
                    div(
                        math(MathFn::Log, vec![cast_to(x, tx, f64t)]),
                        math(MathFn::Log, vec![cast_to(y, ty, f64t)]),
                    ),
                    f64t,
                )
            })
        }
        // NumPy's absolute value of a bool is the bool; Python's `abs(True)`
        // is the int 1. The built-in `abs` of a NumPy bool (`abs(a[i] > 0)`)
        // or of a bool array is NumPy's (fuzz seed 5007652).
        ("abs" | "absolute", [a], true) => map1(a, &mut |e, t| {
            let python_bool = !numpy && matches!(a, Val::Scalar(_, _, true));
            if !python_bool && t == ScalarType::Bool {
                (e, t)
            } else {
                abs(e, t)
            }
        }),
        ("logical_not", [a], true) if numpy => map1(a, &mut |e, t| {
            (
                Expr::Unary(UnaryOp::Not, Box::new(truthy(e, t))),
                ScalarType::Bool,
            )
        }),
        ("logical_and" | "logical_or" | "logical_xor", [a, b], true) if numpy => {
            map2(a, b, &mut |(x, tx, _), (y, ty, _)| {
                let (x, y) = (truthy(x, tx), truthy(y, ty));
                let e = match short {
                    "logical_and" => binary(BinOp::And, x, y),
                    "logical_or" => binary(BinOp::Or, x, y),
                    _ => cmp(CmpOp::Ne, x, y),
                };
                (e, ScalarType::Bool)
            })
        }
        // The comparison ufuncs (`np.less(abs(z), 2.0)`), as the operators.
        (
            "less" | "less_equal" | "greater" | "greater_equal" | "equal" | "not_equal",
            [a, b],
            true,
        ) if numpy => {
            let op = match short {
                "less" => CmpOp::Lt,
                "less_equal" => CmpOp::Le,
                "greater" => CmpOp::Gt,
                "greater_equal" => CmpOp::Ge,
                "equal" => CmpOp::Eq,
                _ => CmpOp::Ne,
            };
            map2(a, b, &mut |(x, tx, wx), (y, ty, wy)| {
                let t = promote(tx, wx, ty, wy);
                (
                    cmp(op, cast_to(x, tx, t), cast_to(y, ty, t)),
                    ScalarType::Bool,
                )
            })
        }
        // Round half to even, as NumPy (and Python's `round`) do.
        ("rint", [a], true) if numpy => map1(a, &mut |e, t| {
            let ft = float_of(t, numpy);
            (rint(cast_to(e, t, ft), ft), ft)
        }),
        ("round" | "around" | "round_", [a], true) if numpy => round_decimals(a, 0),
        ("round" | "around" | "round_", [a, d], true) if numpy => {
            round_decimals(a, int_literal(d)?)
        }
        // Python's `round(x)`: an int.
        ("round", [a], true) if !numpy => map1(a, &mut |e, t| {
            if t.is_int() {
                (cast_to(e, t, ScalarType::I64), ScalarType::I64)
            } else {
                (
                    cast(
                        ScalarType::I64,
                        rint(cast_to(e, t, ScalarType::F64), ScalarType::F64),
                    ),
                    ScalarType::I64,
                )
            }
        }),
        // NumPy squares bools as int8.
        ("square", [a], true) if numpy => map1(a, &mut |e, t| {
            let (e, t) = if t == ScalarType::Bool {
                (cast_to(e, t, ScalarType::I8), ScalarType::I8)
            } else {
                (e, t)
            };
            (mul(e.clone(), e), t)
        }),
        // NumPy raises a TypeError for `np.positive`, `np.negative` and
        // `np.sign` of bools.
        ("positive" | "negative" | "sign", [a], true)
            if numpy && elem_type(a) == Some(ScalarType::Bool) =>
        {
            None
        }
        ("positive", [a], true) if numpy => map1(a, &mut |e, t| (e, t)),
        ("invert" | "bitwise_not" | "bitwise_invert", [a], true)
            if numpy && elem_type(a).is_some_and(|t| t.is_int() || t == ScalarType::Bool) =>
        {
            map1(a, &mut |e, t| (Expr::Unary(UnaryOp::Not, Box::new(e)), t))
        }
        ("reciprocal", [a], true)
            if numpy && elem_type(a).is_some_and(|t| t.is_float() || t.is_complex()) =>
        {
            map1(a, &mut |e, t| (div(lit(t, 1.0), e), t))
        }
        ("negative", [a], true) if numpy => {
            map1(a, &mut |e, t| (Expr::Unary(UnaryOp::Neg, Box::new(e)), t))
        }
        ("sign", [a], true) if numpy => map1(a, &mut |e, t| {
            let z = lit(t, 0.0);
            // Zero for ±0, and NaN for NaN (the value itself): NumPy's.
            let rest = if t.is_float() {
                select(cmp(CmpOp::Eq, e.clone(), z.clone()), z.clone(), e.clone())
            } else {
                z.clone()
            };
            (
                select(
                    cmp(CmpOp::Gt, e.clone(), z.clone()),
                    lit(t, 1.0),
                    select(cmp(CmpOp::Lt, e.clone(), z), lit(t, -1.0), rest),
                ),
                t,
            )
        }),
        ("radians" | "deg2rad", [a], true) => map1(a, &mut |e, t| {
            let ft = float_of(t, numpy);
            (
                mul(cast_to(e, t, ft), lit(ft, std::f64::consts::PI / 180.0)),
                ft,
            )
        }),
        ("degrees" | "rad2deg", [a], true) => map1(a, &mut |e, t| {
            let ft = float_of(t, numpy);
            (
                mul(cast_to(e, t, ft), lit(ft, 180.0 / std::f64::consts::PI)),
                ft,
            )
        }),
        ("isnan" | "isinf" | "isfinite", [a], true)
            if elem_type(a).is_some_and(ScalarType::is_complex) =>
        {
            // NumPy: nan if either part is; inf if either part is; finite if both are.
            let re = call(
                name,
                &[map1(a, &mut |e, t| {
                    real_or_imag(port_codegen::ir::Part::Re, e, t)
                })?],
            )?;
            let im = call(
                name,
                &[map1(a, &mut |e, t| {
                    real_or_imag(port_codegen::ir::Part::Im, e, t)
                })?],
            )?;
            let op = if short == "isfinite" {
                BinOp::And
            } else {
                BinOp::Or
            };
            map2(&re, &im, &mut |(x, _, _), (y, _, _)| {
                (binary(op, x, y), ScalarType::Bool)
            })
        }
        ("isnan", [a], true) => map1(a, &mut |e, t| {
            if t.is_float() {
                (cmp(CmpOp::Ne, e.clone(), e), ScalarType::Bool)
            } else {
                (bool(false), ScalarType::Bool)
            }
        }),
        ("isinf", [a], true) => map1(a, &mut |e, t| {
            if t.is_float() {
                (
                    cmp(
                        CmpOp::Eq,
                        math(MathFn::Fabs, vec![e]),
                        lit(t, f64::INFINITY),
                    ),
                    ScalarType::Bool,
                )
            } else {
                (bool(false), ScalarType::Bool)
            }
        }),
        // The sign bit, of -0.0 and a negative NaN too: `copysign(1, x)`
        // carries it; an integer's is its sign; a bool has none.
        ("signbit", [a], true) => map1(a, &mut |e, t| {
            let b = if t.is_float() {
                cmp(
                    CmpOp::Lt,
                    math(MathFn::Copysign, vec![lit(t, 1.0), e]),
                    lit(t, 0.0),
                )
            } else if t == ScalarType::Bool {
                bool(false)
            } else {
                cmp(CmpOp::Lt, e, lit(t, 0.0))
            };
            (b, ScalarType::Bool)
        }),
        ("isfinite", [a], true) => map1(a, &mut |e, t| {
            if t.is_float() {
                (
                    cmp(
                        CmpOp::Lt,
                        math(MathFn::Fabs, vec![e]),
                        lit(t, f64::INFINITY),
                    ),
                    ScalarType::Bool,
                )
            } else {
                (bool(true), ScalarType::Bool)
            }
        }),
        ("min" | "max" | "minimum" | "maximum", [a, rest @ ..], true) if !rest.is_empty() => {
            if !numpy && (rest.len() > 1 || matches!(a, Val::Array(_))) && short.len() == 3 {
                // Built-in min/max over several scalars.
                if args.iter().any(|v| !matches!(v, Val::Scalar(..))) {
                    return None;
                }
            }
            if numpy && rest.len() != 1 {
                return None;
            }
            let op = if short.starts_with("min") {
                BinOp::Min
            } else {
                BinOp::Max
            };
            let builtin = !numpy;
            let mut acc = a.clone();
            for b in rest {
                acc = map2(&acc, b, &mut |(x, tx, wx), (y, ty, wy)| {
                    let t = promote(tx, wx, ty, wy);
                    let (x, y) = (cast_to(x, tx, t), cast_to(y, ty, t));
                    if builtin {
                        // Python's `min(x, y)` is `y if y < x else x`: it
                        // keeps `x` when either is NaN (`min(nan, 5.0)` is
                        // nan, `min(5.0, nan)` is 5.0), unlike NumPy's.
                        let better = crate::ir_util::compare(
                            if op == BinOp::Min {
                                CmpOp::Lt
                            } else {
                                CmpOp::Gt
                            },
                            (y.clone(), t, false),
                            (x.clone(), t, false),
                        );
                        return (select(better, y, x), t);
                    }
                    (binary(op, x, y), t)
                })?;
            }
            Some(acc)
        }
        ("clip", [a, lo, hi], true) if numpy => {
            map3(a, lo, hi, &mut |(x, tx, wx), (l, tl, wl), (h, th, wh)| {
                let t = promote(promote(tx, wx, tl, wl), false, th, wh);
                let t = if wx { t } else { promote(tx, false, t, true) };
                (
                    binary(
                        BinOp::Min,
                        binary(BinOp::Max, cast_to(x, tx, t), cast_to(l, tl, t)),
                        cast_to(h, th, t),
                    ),
                    t,
                )
            })
        }
        ("where", [c, a, b], true) if numpy => {
            map3(c, a, b, &mut |(cond, tc, _), (x, tx, wx), (y, ty, wy)| {
                let t = promote(tx, wx, ty, wy);
                (
                    select(truthy(cond, tc), cast_to(x, tx, t), cast_to(y, ty, t)),
                    t,
                )
            })
        }
        ("float" | "float64" | "double", [a], true) => map1(a, &mut |e, t| {
            (cast_to(e, t, ScalarType::F64), ScalarType::F64)
        }),
        ("float32" | "single", [a], true) if numpy => map1(a, &mut |e, t| {
            (cast_to(e, t, ScalarType::F32), ScalarType::F32)
        }),
        ("int" | "int64" | "intp", [a], true) => map1(a, &mut |e, t| {
            (cast_to(e, t, ScalarType::I64), ScalarType::I64)
        }),
        ("int32", [a], true) if numpy => map1(a, &mut |e, t| {
            (cast_to(e, t, ScalarType::I32), ScalarType::I32)
        }),
        ("bool" | "bool_", [a], true) => map1(a, &mut |e, t| (truthy(e, t), ScalarType::Bool)),
        // `np.uint8(x)`, `np.int16(x)`, …: a cast that wraps like NumPy's.
        ("int8" | "int16" | "uint8" | "uint16" | "uint32" | "uint64", [a], true) if numpy => {
            let to = crate::types::scalar_from_name(short).expect("a NumPy integer name");
            map1(a, &mut |e, t| (cast_to(e, t, to), to))
        }
        _ => None,
    }
}

/// Whether Python's built-in `min(…)`/`max(…)` of these scalars has no
/// one type: it returns the winning argument itself, with its own type, so
/// `-max(-1.0, r_u16)` negates a uint16 (and wraps) when `r_u16` wins. The
/// result is typed only when the strong arguments share one type and each
/// Python number beside them takes it without a change of kind or value
/// (`max(m, 0.0)` of a float32 `m`; `max(n, 1)` of an int32 `n`), and no
/// Python int stands beside an unsigned value; Python numbers alone are
/// typed when they are of one kind.
pub fn builtin_choice_untyped(name: &str, args: &[Val]) -> bool {
    if !matches!(name, "min" | "max") || args.len() < 2 {
        return false;
    }
    let mut strong: Option<ScalarType> = None;
    let mut weak = Vec::new();
    for a in args {
        match a {
            Val::Scalar(e, t, true) => weak.push((e, *t)),
            Val::Scalar(_, t, false) => match strong {
                Some(s) if s != *t => return true,
                _ => strong = Some(*t),
            },
            _ => return false,
        }
    }
    let Some(s) = strong else {
        // Python numbers of different kinds: `max(math.cos(d), 2)` is the
        // int 2 or a float, and `acc_i64 += …` stays int64 only with the
        // first (fuzz seed 306198).
        return weak
            .iter()
            .any(|(_, t)| crate::dtypes::kind(*t) != crate::dtypes::kind(weak[0].1));
    };
    weak.iter().any(|(e, t)| {
        if promote(*t, true, s, false) != s {
            return true;
        }
        // A Python int beside an unsigned value: when the int wins, what
        // follows is Python's arithmetic (`-min(a_u32, s)` is -7), when
        // the unsigned value does, NumPy's, which wraps (fuzz seed 301890).
        if s.is_int() && !s.is_signed() && t.is_int() {
            return true;
        }
        // A Python bool beside a number: when it wins, `-min(x_f32, False)`
        // is the int 0 (fuzz seed 401845).
        if *t == ScalarType::Bool && s != ScalarType::Bool {
            return true;
        }
        // A Python int literal out of the strong type's range.
        match e {
            Expr::Lit(port_codegen::ir::Literal::I64(v)) if s.is_int() => {
                let bits = s.bits();
                let (lo, hi): (i128, i128) = if s.is_signed() {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                !(lo..=hi).contains(&(*v as i128))
            }
            _ => false,
        }
    })
}

/// Python's built-in `min(…)`/`max(…)` that port types (not
/// `builtin_choice_untyped`) but whose result is, on some calls, the Python
/// number itself rather than a NumPy scalar of the strong arguments' type:
/// `max(m_i32, 0)` is the Python int `0` when `m_i32 < 0`, an `int32`
/// otherwise. The value is the same; its type is not, which a caller sees
/// where the result is returned. Two Python numbers of different kinds
/// are the same case (`max(0.0, n)` of a Python int `n` is either). Gives
/// the Python number's type and the other one, with whether that one is a
/// NumPy scalar (`false`: another Python number).
pub fn builtin_choice_of_python_number(
    name: &str,
    args: &[Val],
) -> Option<(ScalarType, ScalarType, bool)> {
    if !matches!(name, "min" | "max") || args.len() < 2 {
        return None;
    }
    let scalars: Vec<(ScalarType, bool)> = args
        .iter()
        .filter_map(|a| match a {
            Val::Scalar(_, t, weak) => Some((*t, *weak)),
            _ => None,
        })
        .collect();
    let (python, other) = match scalars.iter().find(|(_, weak)| !weak) {
        Some(&(strong, _)) => (
            scalars.iter().find(|(t, weak)| *weak && *t != strong)?.0,
            (strong, true),
        ),
        None => {
            let first = scalars.first()?.0;
            let differs = scalars.iter().find(|(t, _)| *t != first)?.0;
            (first, (differs, false))
        }
    };
    Some((python, other.0, other.1))
}

/// Whether NumPy computes the float ufunc `name` (`np.sin`, `np.sqrt`,
/// `np.arctan2`…) of these arguments in float16: their types are all bool,
/// int8 or uint8, none a Python float (`np.sin(img_u8)` is float16, which
/// port has no type for).
pub fn float16_result(name: &str, args: &[Val]) -> bool {
    use ScalarType::*;
    if !name.starts_with("numpy.") {
        return false;
    }
    let short = name.rsplit('.').next().unwrap_or(name);
    let float_ufunc = match math_fn(name) {
        Some(f) => !matches!(f, MathFn::Floor | MathFn::Ceil | MathFn::Trunc),
        None => matches!(
            short,
            "rint" | "radians" | "degrees" | "deg2rad" | "rad2deg" | "angle"
        ),
    };
    // `np.round` of bools is float16 too (of integers, themselves).
    let rounded_bools = matches!(short, "round" | "around" | "round_")
        && matches!(args.first().and_then(elem_type), Some(Bool));
    if !float_ufunc && !rounded_bools {
        return false;
    }
    // A Python int beside them takes their type; a Python float makes the
    // result float64. A Python bool is NumPy's bool.
    let small = |a: &Val| match a {
        Val::Scalar(_, t, false) => matches!(t, Bool | I8 | U8),
        Val::Scalar(_, Bool, true) => true,
        Val::Array(a) => matches!(a.elem, Bool | I8 | U8),
        _ => false,
    };
    let python_int = |a: &Val| matches!(a, Val::Scalar(_, t, true) if t.is_int());
    args.iter().all(|a| small(a) || python_int(a)) && args.iter().any(small)
}

/// The element type of a scalar or array value.
fn elem_type(v: &Val) -> Option<ScalarType> {
    match v {
        Val::Scalar(_, t, _) => Some(*t),
        Val::Array(a) => Some(a.elem),
        Val::Tuple(_) => None,
    }
}

/// The calls that create, take apart or compute on complex numbers:
/// `np.real`/`np.imag`/`np.conj`/`np.angle` and `complex(a, b)` on any
/// number, and with a complex argument the ufuncs that have a complex form
/// (`np.exp`, `np.sqrt`, `abs`, `np.where`, …). `Some(None)` refuses: a
/// complex argument to a function without a complex form (`math.sqrt`
/// raises in Python, `np.floor` in NumPy). `None`: not this family.
fn complex_call(name: &str, short: &str, numpy: bool, args: &[Val]) -> Option<Option<Val>> {
    use port_codegen::ir::Part;
    let part = |p: Part, e: Expr| Expr::Part(p, Box::new(e));
    match (short, args, numpy) {
        ("real" | "imag", [a], true) => {
            let p = if short == "real" { Part::Re } else { Part::Im };
            // A Python bool's parts are ints (`True.real` is 1).
            let python_bool = matches!(a, Val::Scalar(_, ScalarType::Bool, true));
            return Some(map1(a, &mut |e, t| {
                if python_bool {
                    real_or_imag(p, cast_to(e, t, ScalarType::I64), ScalarType::I64)
                } else {
                    real_or_imag(p, e, t)
                }
            }));
        }
        ("conj" | "conjugate", [a], true) => {
            return Some(map1(a, &mut |e, t| {
                if t == ScalarType::Bool {
                    // NumPy conjugates bools as int8.
                    (cast_to(e, t, ScalarType::I8), ScalarType::I8)
                } else if t.is_complex() {
                    let im = Expr::Unary(UnaryOp::Neg, Box::new(part(Part::Im, e.clone())));
                    (Expr::Complex(Box::new(part(Part::Re, e)), Box::new(im)), t)
                } else {
                    (e, t)
                }
            }));
        }
        ("angle", [a], true) => {
            return Some(map1(a, &mut |e, t| {
                let (re, im, ft) = if t.is_complex() {
                    (part(Part::Re, e.clone()), part(Part::Im, e), t.component())
                } else {
                    let ft = float_of(t, true);
                    (cast_to(e, t, ft), lit(ft, 0.0), ft)
                };
                (math(MathFn::Atan2, vec![im, re]), ft)
            }))
        }
        ("complex", [re, im], false) if !name.contains('.') => {
            return Some(map2(re, im, &mut |(x, tx, _), (y, ty, _)| {
                let f = ScalarType::F64;
                (
                    Expr::Complex(Box::new(cast_to(x, tx, f)), Box::new(cast_to(y, ty, f))),
                    ScalarType::C128,
                )
            }))
        }
        ("complex" | "complex128" | "cdouble" | "complex64" | "csingle", [a], _)
            if numpy || short == "complex" =>
        {
            let to = if matches!(short, "complex64" | "csingle") {
                ScalarType::C64
            } else {
                ScalarType::C128
            };
            return Some(map1(a, &mut |e, t| (cast_to(e, t, to), to)));
        }
        _ => {}
    }
    if !args
        .iter()
        .any(|a| elem_type(a).is_some_and(ScalarType::is_complex))
    {
        return None;
    }
    if let Some(f) = math_fn(name) {
        return (!(numpy && f.takes_complex()) || f == MathFn::Fabs).then_some(None);
    }
    match (short, numpy || !name.contains('.')) {
        (
            "abs" | "absolute" | "square" | "negative" | "where" | "isnan" | "isinf" | "isfinite"
            | "equal" | "not_equal",
            true,
        ) => None,
        _ => Some(None),
    }
}

/// `x.real` / `x.imag` of one element: a part of a complex number; a real
/// number is its own real part, with imaginary part 0.
pub fn real_or_imag(p: port_codegen::ir::Part, e: Expr, t: ScalarType) -> (Expr, ScalarType) {
    if t.is_complex() {
        (Expr::Part(p, Box::new(e)), t.component())
    } else if p == port_codegen::ir::Part::Re {
        (e, t)
    } else {
        (lit(t, 0.0), t)
    }
}

/// `abs(x)`: `fabs` for floats (the modulus for complex numbers), a select
/// for integers.
pub fn abs(e: Expr, t: ScalarType) -> (Expr, ScalarType) {
    if t.is_complex() {
        (math(MathFn::Fabs, vec![e]), t.component())
    } else if t.is_float() {
        (math(MathFn::Fabs, vec![e]), t)
    } else if t == ScalarType::Bool {
        (cast_to(e, t, ScalarType::I64), ScalarType::I64)
    } else {
        (
            select(
                cmp(CmpOp::Lt, e.clone(), lit(t, 0.0)),
                Expr::Unary(UnaryOp::Neg, Box::new(e.clone())),
                e,
            ),
            t,
        )
    }
}

/// Python truthiness as a bool.
pub fn truthy(e: Expr, t: ScalarType) -> Expr {
    if t.is_complex() {
        cmp(CmpOp::Ne, e, lit(t, 0.0))
    } else if t == ScalarType::Bool {
        e
    } else {
        cmp(CmpOp::Ne, e, lit(t, 0.0))
    }
}

/// `x` rounded to the nearest integer, halves to the even one (IEEE's
/// `rint`, NumPy's `np.rint`), in float type `t`.
pub fn rint(x: Expr, _t: ScalarType) -> Expr {
    math(MathFn::Rint, vec![x])
}

/// `np.round(a, decimals)`, as NumPy computes it: `rint(a * 10**d) /
/// 10**d` (`rint(a / 10**-d) * 10**-d` for negative `d`); an integer
/// array is itself for `d >= 0`. `None` for integers with `d < 0`.
fn round_decimals(a: &Val, decimals: i64) -> Option<Val> {
    if elem_type(a).is_some_and(|t| t.is_int() || t == ScalarType::Bool) {
        return (decimals >= 0).then(|| a.clone());
    }
    if elem_type(a).is_some_and(|t| t.is_complex()) || decimals.abs() > 300 {
        return None;
    }
    let scale = 10f64.powi(decimals.unsigned_abs() as i32);
    map1(a, &mut |e, t| {
        let ft = float_of(t, true);
        let x = cast_to(e, t, ft);
        let s = lit(ft, scale);
        let v = match decimals.cmp(&0) {
            std::cmp::Ordering::Equal => rint(x, ft),
            std::cmp::Ordering::Greater => div(rint(mul(x, s.clone()), ft), s),
            std::cmp::Ordering::Less => mul(rint(div(x, s.clone()), ft), s),
        };
        (v, ft)
    })
}

/// An integer literal argument (`2`, `-1`).
fn int_literal(v: &Val) -> Option<i64> {
    let Val::Scalar(e, t, _) = v else { return None };
    if !t.is_int() {
        return None;
    }
    match e {
        Expr::Lit(port_codegen::ir::Literal::I64(k)) => Some(*k),
        Expr::Unary(UnaryOp::Neg, x) => match x.as_ref() {
            Expr::Lit(port_codegen::ir::Literal::I64(k)) => Some(-*k),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_and_math_names() {
        assert_eq!(math_fn("numpy.arcsin"), Some(MathFn::Asin));
        assert_eq!(math_fn("math.erf"), Some(MathFn::Erf));
        assert_eq!(math_fn("numpy.erf"), None);
        assert_eq!(math_fn("os.sqrt"), None);
    }

    /// Every scipy.special function the analysis lets the planner take
    /// (PORT122) lowers, keeping float32.
    #[test]
    fn the_analysis_scipy_special_list_lowers() {
        for f in port_analyzer::support::SCIPY_SPECIAL {
            let x = Val::scalar(var("x"), ScalarType::F32);
            let Some(Val::Scalar(_, t, _)) = call(&format!("scipy.special.{f}"), &[x]) else {
                panic!("scipy.special.{f} does not lower")
            };
            assert_eq!(t, ScalarType::F32, "{f}");
        }
    }

    #[test]
    fn math_keeps_python_float_numpy_keeps_f32() {
        let x = Val::scalar(var("x"), ScalarType::F32);
        let Some(Val::Scalar(_, t, _)) = call("math.sqrt", std::slice::from_ref(&x)) else {
            panic!()
        };
        assert_eq!(t, ScalarType::F64);
        let Some(Val::Scalar(_, t, _)) = call("numpy.sqrt", &[x]) else {
            panic!()
        };
        assert_eq!(t, ScalarType::F32);
        let i = Val::scalar(var("i"), ScalarType::I64);
        let Some(Val::Scalar(_, t, _)) = call("math.floor", &[i]) else {
            panic!()
        };
        assert_eq!(t, ScalarType::I64);
    }
}
