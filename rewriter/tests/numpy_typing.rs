//! port's typing rules against NumPy itself: every binary and unary
//! operator (`dtypes`), NumPy's functions of one or two numbers
//! (`math_calls`) and the reductions (`acc_type`), on every dtype, each
//! operand an array element (strong) or a Python number (weak, NEP 50).
//! Where NumPy gives a result, port must give the same dtype or refuse;
//! where NumPy (or Python, for two Python numbers) raises, port must
//! refuse.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use port_codegen::ir::ScalarType;
use port_rewriter::dtypes::binop;
use rustpython_parser::ast::Operator;

/// The repository's venv Python, which `make test` creates.
fn venv_python() -> PathBuf {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(
        py.exists(),
        "no .venv: run `make test` (scripts/setup.sh) first"
    );
    py
}

/// What every script starts from: its argument as `args`, `value(name)`
/// (an operand: a Python number, or a one-element array of that dtype),
/// `dtype(r)` (a result's dtype name; a Python number's as NumPy would
/// convert it) and `out`, the object printed at the end.
const PRELUDE: &str = r#"
import json, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
args = json.loads(sys.argv[1])
def value(name):
    return eval(name) if name in ("True", "1", "1.0", "1j") else np.ones(1, dtype=name)
def dtype(r):
    return str(np.asarray(r).dtype)
out = {}
"#;

/// What NumPy says: runs [`PRELUDE`] and `script` with `arg` (JSON) as its
/// argument and reads `out`, a dtype name (or None, when NumPy or Python
/// raised) per key.
fn numpy_says(script: &str, arg: &impl serde::Serialize) -> HashMap<String, Option<String>> {
    let arg = serde_json::to_string(arg).unwrap();
    let program = format!("{PRELUDE}{script}\nprint(json.dumps(out))\n");
    let o = Command::new(venv_python())
        .args(["-c", &program, &arg])
        .output()
        .expect("python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Where port's type for `key` (`None`: port refuses) breaks NumPy's: a
/// dtype NumPy does not give, or any dtype where NumPy raises.
fn disagreement(
    key: &str,
    ours: Option<ScalarType>,
    numpy: &HashMap<String, Option<String>>,
) -> Option<String> {
    let ours = name(ours?);
    match numpy[key].as_deref() {
        Some(theirs) if theirs == ours => None,
        Some(theirs) => Some(format!("{key}: NumPy {theirs}, port {ours}")),
        None => Some(format!("{key}: NumPy raises, port computes {ours}")),
    }
}

fn assert_none_wrong(wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

const OPS: &[(&str, Operator)] = &[
    ("+", Operator::Add),
    ("-", Operator::Sub),
    ("*", Operator::Mult),
    ("/", Operator::Div),
    ("//", Operator::FloorDiv),
    ("%", Operator::Mod),
    ("**", Operator::Pow),
    ("&", Operator::BitAnd),
    ("|", Operator::BitOr),
    ("^", Operator::BitXor),
    ("<<", Operator::LShift),
    (">>", Operator::RShift),
];

/// Operands: NumPy's dtypes as array elements, then Python's numbers.
const OPERANDS: &[(&str, ScalarType, bool)] = &[
    ("bool", ScalarType::Bool, false),
    ("int8", ScalarType::I8, false),
    ("int16", ScalarType::I16, false),
    ("int32", ScalarType::I32, false),
    ("int64", ScalarType::I64, false),
    ("uint8", ScalarType::U8, false),
    ("uint16", ScalarType::U16, false),
    ("uint32", ScalarType::U32, false),
    ("uint64", ScalarType::U64, false),
    ("float32", ScalarType::F32, false),
    ("float64", ScalarType::F64, false),
    ("complex64", ScalarType::C64, false),
    ("complex128", ScalarType::C128, false),
    ("True", ScalarType::Bool, true),
    ("1", ScalarType::I64, true),
    ("1.0", ScalarType::F64, true),
    ("1j", ScalarType::C128, true),
];

/// What NumPy (or Python, for two Python numbers) gives each `a op b`.
const SCRIPT: &str = r#"
ops, operands = args
for op in ops:
    for a in operands:
        for b in operands:
            try:
                out["%s %s %s" % (a, op, b)] = dtype(eval("x %s y" % op, {"x": value(a), "y": value(b)}))
            except Exception:
                out["%s %s %s" % (a, op, b)] = None
"#;

fn name(t: ScalarType) -> &'static str {
    port_rewriter::types::numpy_dtype(t)
        .trim_start_matches("np.")
        .trim_end_matches('_')
}

#[test]
fn binary_operators_type_as_numpy_2_does() {
    let ops: Vec<&str> = OPS.iter().map(|o| o.0).collect();
    let operands: Vec<&str> = OPERANDS.iter().map(|o| o.0).collect();
    let numpy = numpy_says(SCRIPT, &(ops, operands));
    let mut wrong = Vec::new();
    let mut refused = 0;
    for (sym, op) in OPS {
        for (an, at, aw) in OPERANDS {
            for (bn, bt, bw) in OPERANDS {
                let key = format!("{an} {sym} {bn}");
                let ours = binop(*op, (*at, *aw), (*bt, *bw)).ok().map(|r| r.result);
                if ours.is_none() && numpy[&key].is_some() {
                    refused += 1;
                }
                wrong.extend(disagreement(&key, ours, &numpy));
            }
        }
    }
    assert_none_wrong(&wrong);
    // What port refuses that NumPy computes: bool shifts, and nothing else
    // grows unnoticed.
    assert!(
        refused <= 16,
        "port refuses {refused} operations NumPy computes"
    );
}

/// `-x`, `+x`, `~x` and `not x` the same way.
#[test]
fn unary_operators_type_as_numpy_2_does() {
    use rustpython_parser::ast::UnaryOp;
    const UNARY: &[(&str, UnaryOp)] = &[
        ("-", UnaryOp::USub),
        ("+", UnaryOp::UAdd),
        ("~", UnaryOp::Invert),
        ("not ", UnaryOp::Not),
    ];
    let script = r#"
ops, operands = args
for op in ops:
    for a in operands:
        x = value(a)
        try:
            r = eval(op + "x") if op != "not " else (not x[0] if hasattr(x, "shape") else not x)
            out[op + a] = dtype(r)
        except Exception:
            out[op + a] = None
"#;
    let ops: Vec<&str> = UNARY.iter().map(|o| o.0).collect();
    let operands: Vec<&str> = OPERANDS.iter().map(|o| o.0).collect();
    let numpy = numpy_says(script, &(ops, operands));
    let mut wrong = Vec::new();
    for (sym, op) in UNARY {
        for (an, at, aw) in OPERANDS {
            let key = format!("{sym}{an}");
            let ours = port_rewriter::dtypes::unary(*op, (*at, *aw)).ok();
            wrong.extend(disagreement(&key, ours, &numpy));
        }
    }
    assert_none_wrong(&wrong);
}

/// NumPy's ufuncs and functions of one or two numbers, as the lowering
/// types them (`math_calls::call`, after its float16 refusal): the same
/// dtype as NumPy gives, or a refusal.
#[test]
fn numpy_functions_type_as_numpy_2_does() {
    use port_codegen::ir::Expr;
    use port_rewriter::numpy::array_expr::Val;
    use port_rewriter::numpy::math_calls;
    const UNARY: &[&str] = &[
        "sqrt",
        "cbrt",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "fabs",
        "floor",
        "ceil",
        "trunc",
        "abs",
        "absolute",
        "rint",
        "square",
        "positive",
        "negative",
        "invert",
        "reciprocal",
        "sign",
        "radians",
        "degrees",
        "deg2rad",
        "rad2deg",
        "isnan",
        "isinf",
        "isfinite",
        "signbit",
        "logical_not",
        "conj",
        "conjugate",
        "real",
        "imag",
        "angle",
        "round",
        "signbit",
    ];
    const BINARY: &[&str] = &[
        "power",
        "float_power",
        "arctan2",
        "hypot",
        "fmod",
        "copysign",
        "fmin",
        "fmax",
        "maximum",
        "minimum",
        "logical_and",
        "logical_or",
        "logical_xor",
        "less",
        "equal",
        "add",
        "subtract",
        "multiply",
        "divide",
        "true_divide",
        "floor_divide",
        "mod",
        "remainder",
        "bitwise_and",
        "left_shift",
        "heaviside",
        "logaddexp",
        "nextafter",
    ];
    let script = r#"
unary, binary, operands = args
for f in unary:
    for a in operands:
        try:
            out["%s(%s)" % (f, a)] = dtype(getattr(np, f)(value(a)))
        except Exception:
            out["%s(%s)" % (f, a)] = None
for f in binary:
    for a in operands:
        for b in operands:
            try:
                out["%s(%s, %s)" % (f, a, b)] = dtype(getattr(np, f)(value(a), value(b)))
            except Exception:
                out["%s(%s, %s)" % (f, a, b)] = None
"#;
    let operands: Vec<&str> = OPERANDS.iter().map(|o| o.0).collect();
    let numpy = numpy_says(script, &(UNARY, BINARY, operands));
    let val = |(_, t, w): &(&str, ScalarType, bool)| Val::Scalar(Expr::Var("x".into()), *t, *w);
    let port = |f: &str, args: &[Val]| -> Option<ScalarType> {
        let name = format!("numpy.{f}");
        if math_calls::float16_result(&name, args) {
            return None;
        }
        match math_calls::call(&name, args)? {
            Val::Scalar(_, t, _) => Some(t),
            _ => None,
        }
    };
    let mut wrong = Vec::new();
    let mut check = |key: String, ours| wrong.extend(disagreement(&key, ours, &numpy));
    for f in UNARY {
        for a in OPERANDS {
            check(format!("{f}({})", a.0), port(f, &[val(a)]));
        }
    }
    for f in BINARY {
        for a in OPERANDS {
            for b in OPERANDS {
                check(format!("{f}({}, {})", a.0, b.0), port(f, &[val(a), val(b)]));
            }
        }
    }
    assert_none_wrong(&wrong);
}

/// The reductions of an array, as `row_reduction::acc_type` types them
/// (whole, per row and along an axis alike): `np.sum` of int8 is int64, of
/// uint8 uint64, `np.mean` of ints float64, `np.max` of bools a bool.
#[test]
fn reductions_type_as_numpy_2_does() {
    use port_rewriter::lower::context::Reduce;
    use port_rewriter::lower::row_reduction::acc_type;
    let reductions = [
        ("sum", Reduce::Sum),
        ("prod", Reduce::Prod),
        ("mean", Reduce::Mean),
        ("max", Reduce::Max),
        ("min", Reduce::Min),
    ];
    let script = r#"
fs, dtypes = args
for f in fs:
    for d in dtypes:
        try:
            out["%s(%s)" % (f, d)] = dtype(getattr(np, f)(np.ones(3, dtype=d)))
        except Exception:
            out["%s(%s)" % (f, d)] = None
"#;
    let arrays: Vec<&(&str, ScalarType, bool)> = OPERANDS.iter().filter(|o| !o.2).collect();
    let fs: Vec<&str> = reductions.iter().map(|r| r.0).collect();
    let dtypes: Vec<&str> = arrays.iter().map(|o| o.0).collect();
    let numpy = numpy_says(script, &(fs, dtypes));
    let mut wrong = Vec::new();
    for (f, op) in reductions {
        for (d, t, _) in &arrays {
            let key = format!("{f}({d})");
            wrong.extend(disagreement(&key, Some(acc_type(op, *t)), &numpy));
        }
    }
    assert_none_wrong(&wrong);
}
