//! The calls a migrated function hands to the original, as its wrapper's
//! first statements: arguments of other types than the kernels take,
//! arguments other than the defaults it was planned for, and written
//! arguments that share memory with another. Each runs the original with
//! one warning that says why (`_port_run_original`).

use std::fmt::Write;

use crate::plan::{KernelPlan, PlanKind};
use crate::pyast::py_str;
use crate::types::{numpy_dtype, ArgType};

/// The guards, indented for the wrapper's body; `original_and_args` is what
/// `_port_run_original(why, …)` takes after the reason.
pub(super) fn original_runs(plan: &KernelPlan, name: &str, original_and_args: &str) -> String {
    let ind = "    ";
    let mut out = String::new();
    // A call with other types than the kernels were built for (another
    // dtype or rank, a Python int for a float64) runs the original: the
    // kernels would convert, and NumPy would not compute the same.
    if plan.kind == PlanKind::Kernels {
        let checks: Vec<String> = plan
            .params
            .iter()
            .map(|p| {
                let ndim = match p.ty {
                    ArgType::Array(a) => a.ndim,
                    ArgType::Scalar(_) => 0,
                };
                let either = if either_kind_promotes_alike(p.ty, &plan.params) {
                    "True"
                } else {
                    "False"
                };
                format!(
                    "(\"{0}\", {0}, {1}, {ndim}, {either})",
                    p.name,
                    numpy_dtype(p.ty.elem())
                )
            })
            .collect();
        if !checks.is_empty() {
            let built: Vec<String> = plan
                .params
                .iter()
                .map(|p| format!("{}: {}", p.name, p.ty.numba()))
                .collect();
            let why = py_str(&format!("{name}: its kernels take {}; ", built.join(", ")));
            let _ = writeln!(
                out,
                "{ind}_port_called = _port_differs(({},))\n{ind}if _port_called:\n{ind}{ind}return _port_run_original({why} + _port_called, {original_and_args})",
                checks.join(", ")
            );
        }
    }
    for (n, c) in &plan.literals {
        // `None`, or a string: the constant every call passed.
        let differs = if c == "None" {
            format!("{n} is not None")
        } else {
            format!("not (isinstance({n}, str) and {n} == {c})")
        };
        let why = py_str(&format!(
            "{name}: migrated for {n}={c}, what the program passes"
        ));
        let _ = writeln!(
            out,
            "{ind}if {differs}:\n{ind}{ind}return _port_run_original({why}, {original_and_args})"
        );
    }
    for (n, d) in &plan.defaults {
        let is_name = d.chars().all(|c| c.is_alphanumeric() || c == '_')
            && d.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_');
        let differs = if d == "None" || (is_name && !matches!(d.as_str(), "True" | "False")) {
            // `None`, or a function of the module (`mode=wrap`).
            format!("{n} is not {d}")
        } else if d.starts_with('[') || d.starts_with('(') {
            format!("np.asarray({n}).tolist() != np.asarray({d}).tolist()")
        } else {
            format!("{n} != {d}")
        };
        let why = py_str(&format!("{name}: migrated for {n}={d}, its default"));
        let _ = writeln!(
            out,
            "{ind}if {differs}:\n{ind}{ind}return _port_run_original({why}, {original_and_args})"
        );
    }
    // Arguments that share memory where one is written: the kernels read
    // each argument as its own array, the original does not.
    let arrays = array_params(plan);
    let written: Vec<&str> = arrays
        .iter()
        .copied()
        .filter(|a| plan.mutated.iter().any(|m| m == a))
        .collect();
    if plan.kind == PlanKind::Kernels && !written.is_empty() && arrays.len() > 1 {
        let dict: Vec<String> = arrays.iter().map(|a| format!("\"{a}\": {a}")).collect();
        let tuple: Vec<String> = written.iter().map(|a| format!("\"{a}\",")).collect();
        let ok: Vec<String> = plan
            .same_array_ok
            .iter()
            .map(|(a, b)| format!("(\"{a}\", \"{b}\"),"))
            .collect();
        let ok = if ok.is_empty() {
            String::new()
        } else {
            format!(", ({})", ok.join(" "))
        };
        let _ = writeln!(
            out,
            "{ind}_port_shared = _port_aliased(\"{name}\", {{{}}}, ({}){ok})\n{ind}if _port_shared:\n{ind}{ind}return _port_run_original(_port_shared, {original_and_args})",
            dict.join(", "),
            tuple.join(" "),
        );
    }
    out
}

/// The names of the arguments the kernels take as arrays.
pub(super) fn array_params(plan: &KernelPlan) -> Vec<&str> {
    plan.params
        .iter()
        .filter(|p| p.kernel_ty.is_array())
        .map(|p| p.name.as_str())
        .collect()
}

/// Whether a Python number and a NumPy scalar of `ty`'s dtype would give the
/// same results with the function's arrays under NumPy 2's promotion (a
/// weak Python float and a strong `np.float64` differ only beside float32 or
/// complex64 arrays; a Python int and an `np.int64` beside anything narrower
/// than 64 bits or unsigned).
fn either_kind_promotes_alike(ty: ArgType, params: &[crate::plan::PlanParam]) -> bool {
    use port_codegen::ir::ScalarType as S;
    let ArgType::Scalar(s) = ty else {
        return false;
    };
    let wide: &[S] = match s {
        S::Bool => return true,
        S::I64 => &[S::Bool, S::I64, S::F64, S::C128],
        S::F64 | S::C128 => &[
            S::Bool,
            S::I8,
            S::I16,
            S::I32,
            S::I64,
            S::U8,
            S::U16,
            S::U32,
            S::U64,
            S::F64,
            S::C128,
        ],
        _ => return false,
    };
    params.iter().all(|p| match p.ty {
        ArgType::Array(a) => wide.contains(&a.elem),
        ArgType::Scalar(_) => true,
    })
}
