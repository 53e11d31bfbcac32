//! A desugaring of `desugar`: the built-in `min`/`max` whose winner a
//! function that takes floats reads, of its arguments made floats.

use crate::pyast;
use crate::source;

/// The `math` functions that take their arguments as floats (CPython
/// converts each with `float()`); not `floor`, `ceil` and `trunc`, which
/// keep an int as it is.
const FLOAT_MATH: &[&str] = &[
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "gamma",
    "lgamma", "fabs", "atan2", "hypot", "pow", "fmod", "copysign", "degrees", "radians", "isnan",
    "isinf", "isfinite",
];

/// A built-in `min`/`max` whose winner a float `math` function, `float`
/// or `np.float64` takes (`math.sqrt(max(s, a[i]))`) as the `min`/`max`
/// of its arguments made
/// floats, nested ones too: `float` never reverses an order, so
/// `float(max(x, y))` is `max(float(x), float(y))` (equal floats, NaN
/// first or not, give the same value), and the function makes its
/// argument a float anyway. The winner then has one type, where Python's
/// built-in returns either argument with its own (`builtin_choice_untyped`
/// refuses that). Where CPython compares a NumPy float32 with a Python float
/// in float32 (NEP 50), the winner may differ by that rounding.
pub fn of_float_calls(src: &source::SourceFile, body: &mut [rustpython_parser::ast::Stmt]) -> bool {
    use rustpython_parser::ast::Expr;
    if src.module_function("float").is_some() {
        return false;
    }
    let builtin_extreme = |e: &Expr| match e {
        Expr::Call(c) => {
            let name = src.resolve(&c.func).unwrap_or_default();
            matches!(name.as_str(), "min" | "max")
                && src.module_function(&name).is_none()
                && c.args.len() >= 2
                && c.keywords.is_empty()
                && !c.args.iter().any(|a| matches!(a, Expr::Starred(_)))
        }
        _ => false,
    };
    fn floats(e: &mut Expr, extreme: &dyn Fn(&Expr) -> bool) {
        if extreme(e) {
            if let Expr::Call(c) = e {
                for a in &mut c.args {
                    floats(a, extreme);
                }
            }
            return;
        }
        // Already a float (idempotent: `float(float(x))` is never written).
        let is_float = match e {
            Expr::Call(c) => matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "float"),
            Expr::Constant(k) => matches!(k.value, rustpython_parser::ast::Constant::Float(_)),
            _ => false,
        };
        if is_float {
            return;
        }
        let r = rustpython_parser::ast::Ranged::range(e);
        let float = pyast::name_node("float", r, rustpython_parser::ast::ExprContext::Load);
        *e = pyast::call_node(float, vec![e.clone()], r);
    }
    let mut changed = false;
    pyast::walk_body_exprs_mut(body, &mut |e| {
        let Expr::Call(c) = e else { return false };
        let name = src.resolve(&c.func).unwrap_or_default();
        let takes_floats = match name.strip_prefix("math.") {
            Some(f) => FLOAT_MATH.contains(&f),
            None => name == "float" || name == "numpy.float64",
        };
        if !takes_floats {
            return false;
        }
        for a in &mut c.args {
            if builtin_extreme(a) {
                floats(a, &builtin_extreme);
                changed = true;
            }
        }
        false
    });
    changed
}
