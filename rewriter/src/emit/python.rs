//! The Python back end: the plan as Numba-CUDA source a user can read and
//! keep — `@cuda.jit` kernels with grid-stride loops, device functions, and
//! a host wrapper with the original signature that moves the arrays, picks
//! the launch configuration, launches, and copies back only what the
//! original mutated or returned.
//!
//! The kernels are printed from the same kernel IR that codegen compiles
//! and the simulator runs, so the Python and the PTX are one program. Types
//! the IR makes explicit and Numba would infer differently are kept with
//! `float32(...)`/`int64(...)` casts.

use std::collections::BTreeSet;
use std::fmt::Write;

use port_codegen::ir::{Expr, Literal, ScalarType};

pub use super::kernels::OVERFLOW;
use super::kernels::{device_function, kernel, Printer};
use crate::launch::{THREADS_1D, THREADS_2D, THREADS_REDUCE};
use crate::plan::{Fill, HostStep, HostValue, KernelPlan, LaunchShape, LibraryOp, PlanKind};
use crate::pyast::py_str;
use crate::types::{numpy_dtype, ArgType};

/// The name the original function keeps in the patched file: the wrapper
/// calls it where its kernels cannot run (no CUDA device, `PORT_DEVICE=cpu`)
/// or would not give the original's results (arguments that share memory).
pub fn original_name(function: &str) -> String {
    format!(
        "_port_original_{}",
        function.rsplit('.').next().unwrap_or(function)
    )
}

/// Everything the migrated function needs, as Python source: device
/// functions, kernels and the wrapper (helpers and imports not included).
pub fn render(plan: &KernelPlan, original_doc: Option<&str>, sig: &Signature) -> String {
    let mut out = String::new();
    let overflow = plan.module.checks_overflow();
    for f in &plan.module.device_functions {
        out.push_str(&device_function(f, overflow));
        out.push_str("\n\n");
    }
    for k in &plan.module.kernels {
        out.push_str(&kernel(
            k,
            plan.docs.get(&k.name).map(String::as_str),
            overflow,
        ));
        out.push_str("\n\n");
    }
    out.push_str(&wrapper(plan, original_doc, sig));
    out
}

/// Numba names the source uses (for the `from numba import …` line).
pub fn numba_names(src: &str) -> Vec<&'static str> {
    let mut v = vec!["cuda"];
    for n in [
        "float32",
        "float64",
        "int32",
        "int64",
        "int8",
        "int16",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
        "boolean",
    ] {
        // Not `int8(` inside `uint8(`.
        let called = src.match_indices(&format!("{n}(")).any(|(k, _)| {
            !src[..k]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        });
        if called || src.contains(&format!(", {n})")) {
            v.push(n);
        }
    }
    v
}

// ---------------------------------------------------------------------
// The host wrapper
// ---------------------------------------------------------------------

struct Host<'p> {
    plan: &'p KernelPlan,
    /// Host names that hold device arrays.
    device: BTreeSet<String>,
    /// Names a host loop rebinds to other device arrays.
    rebound: BTreeSet<String>,
    /// `original, args…` while the wrapper's entry guards are written: a
    /// guard of the specialisation that fails there runs the original
    /// (nothing has run yet); elsewhere it raises.
    fallback: Option<String>,
    /// The kernels check Python int arithmetic: each launch passes the flag.
    overflow: bool,
}

impl Host<'_> {
    fn array(&self, name: &str) -> String {
        format!("d_{name}")
    }

    /// A host expression in Python.
    fn expr(&self, e: &Expr) -> String {
        let renamed = crate::ir_util::map_expr(e, &|x| match x {
            Expr::Shape { array, axis }
                if self.is_param(array)
                    && !self.is_ufunc_input(array)
                    && !self.rebound.contains(array) =>
            {
                Some(Expr::Shape {
                    array: array.clone(),
                    axis: *axis,
                })
            }
            Expr::Shape { array, axis } => Some(Expr::Shape {
                array: self.array(array),
                axis: *axis,
            }),
            // The wrapper converts with np.float32 where the type matters.
            Expr::Lit(Literal::F32(v)) => Some(Expr::Lit(Literal::F64(f64::from(*v)))),
            _ => None,
        });
        let mut p = Printer::new(&[]);
        p.host = true;
        p.expr(&renamed, 0)
    }

    fn is_param(&self, name: &str) -> bool {
        self.plan.params.iter().any(|p| p.name == name)
    }

    /// A ufunc's element-wise argument: the wrapper flattens it into `d_…`.
    fn is_ufunc_input(&self, name: &str) -> bool {
        self.plan.kind == PlanKind::Ufunc
            && self
                .plan
                .params
                .iter()
                .any(|p| p.name == name && p.elementwise)
    }
}

/// The migrated function's signature, as the user wrote it.
#[derive(Clone, Debug, Default)]
pub struct Signature {
    /// The parameters' names, in order.
    pub names: Vec<String>,
    /// Each parameter as written: name, annotation and default
    /// (`x: np.ndarray`, `n: int = 10`).
    pub params: Vec<String>,
    /// The return annotation as written (`np.ndarray`), if any.
    pub returns: Option<String>,
}

impl Signature {
    /// Parameters with no annotation or default.
    pub fn plain(names: &[String]) -> Signature {
        Signature {
            names: names.to_vec(),
            params: names.to_vec(),
            returns: None,
        }
    }
}

fn wrapper(plan: &KernelPlan, doc: Option<&str>, sig: &Signature) -> String {
    let arg_names = &sig.names;
    let mut rebound = BTreeSet::new();
    HostStep::walk(&plan.steps, &mut |s| {
        if let HostStep::Rebind { targets, .. } = s {
            rebound.extend(targets.iter().cloned());
        }
    });
    let mut h = Host {
        plan,
        device: BTreeSet::new(),
        rebound,
        fallback: None,
        overflow: plan.module.checks_overflow(),
    };
    let name = plan.function.rsplit('.').next().unwrap_or(&plan.function);
    let mut out = String::new();
    // The user's signature, annotations and defaults as written.
    let returns = sig
        .returns
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    let _ = writeln!(out, "def {name}({}){returns}:", sig.params.join(", "));
    let kernels = plan.kernel_names().join(", ");
    let mut calls: Vec<String> = Vec::new();
    HostStep::walk(&plan.steps, &mut |s| {
        if let HostStep::Library(c) = s {
            let call = format!("{} (line {})", c.op.numpy_name(), c.line);
            if !calls.contains(&call) {
                calls.push(call);
            }
        }
    });
    let library = if calls.is_empty() {
        String::new()
    } else {
        format!(
            "; library calls: {}, through CuPy on the GPU, else NumPy on host copies",
            calls.join(", ")
        )
    };
    let summary = match plan.kind {
        PlanKind::Kernels => format!(
            "Runs on the GPU (kernels: {kernels}{library}); migrated by `port migrate`."
        ),
        PlanKind::Ufunc => format!(
            "Applies `{name}` to every element of its (broadcast) arguments on the GPU ({kernels}); migrated by `port migrate`."
        ),
    };
    match doc {
        Some(d) => {
            let _ = writeln!(out, "    \"\"\"{}\n\n    {summary}\n    \"\"\"", d.trim());
        }
        None => {
            let _ = writeln!(out, "    \"\"\"{summary}\"\"\"");
        }
    }
    let ind = "    ";
    // The original, as the user wrote it, kept in the file under a private
    // name: it runs where the kernels cannot (no CUDA device) or would not
    // give its results.
    let original = original_name(&plan.function);
    // `f, args…` for `_port_run_original(why, f, args…)`.
    let mut parts: Vec<String> = Vec::new();
    if plan.kind == PlanKind::Ufunc {
        let otypes: Vec<&str> = plan.ufunc_outputs.iter().map(|t| numpy_dtype(*t)).collect();
        parts.push("_port_vectorized".into());
        parts.push(original.clone());
        parts.push(format!("[{}]", otypes.join(", ")));
    } else {
        parts.push(original.clone());
    }
    parts.extend(arg_names.iter().cloned());
    let original_and_args = parts.join(", ");
    let _ = writeln!(
        out,
        "{ind}if not _port_use_gpu():\n{ind}{ind}return {}({})",
        parts[0],
        parts[1..].join(", ")
    );
    out.push_str(&super::calls::original_runs(plan, name, &original_and_args));
    let arrays = super::calls::array_params(plan);
    // The guards on the arguments' shapes, before anything is copied.
    let entry = plan
        .steps
        .iter()
        .take_while(|s| matches!(s, HostStep::Guard(_)))
        .count();
    h.fallback = Some(original_and_args.clone());
    emit_steps(&mut h, &plan.steps[..entry], 1, &mut out);
    h.fallback = None;
    if h.overflow {
        // Set by a kernel whose Python int arithmetic leaves int64; read
        // before anything is copied back (see the end).
        let _ = writeln!(
            out,
            "{ind}{OVERFLOW} = cuda.to_device(np.zeros(1, dtype=np.int64))"
        );
    }
    if plan.kind == PlanKind::Ufunc {
        let elementwise: Vec<&crate::plan::PlanParam> =
            plan.params.iter().filter(|p| p.elementwise).collect();
        let names: Vec<&str> = elementwise.iter().map(|p| p.name.as_str()).collect();
        let conv: Vec<String> = elementwise
            .iter()
            .map(|p| format!("np.asarray({}, dtype={})", p.name, numpy_dtype(p.ty.elem())))
            .collect();
        let _ = writeln!(
            out,
            "{ind}{}{} = np.broadcast_arrays({})",
            names.join(", "),
            if names.len() == 1 { "," } else { "" },
            conv.join(", ")
        );
        let _ = writeln!(out, "{ind}shape = {}.shape", names[0]);
        for p in &elementwise {
            let _ = writeln!(
                out,
                "{ind}d_{0} = cuda.to_device(np.ascontiguousarray({0}, dtype={1}).reshape(-1))",
                p.name,
                numpy_dtype(p.kernel_ty.elem())
            );
            h.device.insert(p.name.clone());
        }
    } else {
        // Results stay on the GPU when an argument came from there (with
        // no array argument, they go back to the host).
        let on_gpu = if arrays.is_empty() {
            "False".to_string()
        } else {
            arrays
                .iter()
                .map(|a| format!("_port_on_gpu({a})"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        let _ = writeln!(out, "{ind}_port_gpu = {on_gpu}");
        for p in &plan.params {
            if let ArgType::Array(a) = p.kernel_ty {
                // An overflow runs the original on the arguments as given:
                // an array the kernels write is then a copy, also on the GPU.
                let copy = if h.overflow && plan.mutated.contains(&p.name) {
                    ", copy=True"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "{ind}d_{0} = _port_to_device({0}, {1}{copy})",
                    p.name,
                    numpy_dtype(a.elem)
                );
                h.device.insert(p.name.clone());
            } else if p.kernel_ty != p.ty {
                let _ = writeln!(
                    out,
                    "{ind}{0} = {1}({0})",
                    p.name,
                    numpy_dtype(p.kernel_ty.elem())
                );
            }
        }
    }
    for p in &plan.params {
        if h.rebound.contains(&p.name) && plan.mutated.contains(&p.name) {
            // The argument's own device array, whatever name holds it later.
            let _ = writeln!(out, "{ind}{0}_in = {0}", h.array(&p.name));
        }
    }
    emit_steps(&mut h, &plan.steps[entry..], 1, &mut out);
    if h.overflow {
        let _ = writeln!(
            out,
            "{ind}if {OVERFLOW}.copy_to_host()[0]:\n{ind}{ind}return _port_run_original(\"Python int arithmetic in the kernels left int64 (Python's ints have no bound)\", {original_and_args})"
        );
    }
    // Copy back what the original mutated.
    for m in &plan.mutated {
        let src = if h.rebound.contains(m) {
            format!("{}_in", h.array(m))
        } else {
            h.array(m)
        };
        let _ = writeln!(out, "{ind}_port_copy_back({m}, {src})");
    }
    match &plan.ret {
        None => {}
        Some(v) => {
            let r = host_value(&h, v);
            let _ = writeln!(out, "{ind}return {r}");
        }
    }
    out
}

/// The wrapper's steps at indentation `depth`, host loops and ifs as the
/// user wrote them.
fn emit_steps(h: &mut Host, steps: &[HostStep], depth: usize, out: &mut String) {
    let ind = "    ".repeat(depth);
    let plan = h.plan;
    for s in steps {
        match s {
            HostStep::Scalar { name, ty, value } => {
                let v = h.expr(value);
                let v = if plan.fp32 && *ty == ScalarType::F32 {
                    format!("np.float32({v})")
                } else {
                    v
                };
                let _ = writeln!(out, "{ind}{name} = {v}");
            }
            HostStep::Alloc {
                name,
                elem,
                shape,
                fill,
            } => {
                let dims: Vec<String> = shape.iter().map(|e| h.expr(e)).collect();
                let shape = if dims.len() == 1 {
                    format!("{},", dims[0])
                } else {
                    dims.join(", ")
                };
                let line = match fill {
                    Fill::Empty => format!(
                        "{} = cuda.device_array(({shape}), dtype={})",
                        h.array(name),
                        numpy_dtype(*elem)
                    ),
                    Fill::Value(v) => format!(
                        "{} = _port_full(({shape}), {}, {})",
                        h.array(name),
                        h.expr(v),
                        numpy_dtype(*elem)
                    ),
                };
                let _ = writeln!(out, "{ind}{line}");
                h.device.insert(name.clone());
            }
            HostStep::Launch {
                kernel,
                args,
                shape,
            } => {
                let config = match shape {
                    LaunchShape::Grid1 { n } => {
                        format!("_port_blocks({}, {THREADS_1D}), {THREADS_1D}", h.expr(n))
                    }
                    LaunchShape::Grid2 { rows, cols } => format!(
                        "_port_grid_2d({}, {}), ({THREADS_2D}, {THREADS_2D})",
                        h.expr(rows),
                        h.expr(cols)
                    ),
                    LaunchShape::Reduce { n } => format!(
                        "_port_reduce_blocks({}, {THREADS_REDUCE}), {THREADS_REDUCE}",
                        h.expr(n)
                    ),
                    LaunchShape::OneBlock => format!("1, {THREADS_REDUCE}"),
                    LaunchShape::Persistent { threads } => format!("1, {threads}"),
                    LaunchShape::Blocks { n } => {
                        format!("_port_blocks({}, 1), {THREADS_REDUCE}", h.expr(n))
                    }
                };
                let mut a: Vec<String> = args
                    .iter()
                    .map(|n| {
                        if h.device.contains(n) {
                            h.array(n)
                        } else {
                            n.clone()
                        }
                    })
                    .collect();
                if h.overflow {
                    a.push(OVERFLOW.into());
                }
                let _ = writeln!(out, "{ind}{kernel}[{config}]({})", a.join(", "));
            }
            HostStep::ReadElement {
                name,
                ty,
                array,
                index,
            } => {
                let conv = if plan.fp32 && ty.is_float() {
                    "np.float64"
                } else {
                    numpy_dtype(*ty)
                };
                let idx: Vec<String> = index.iter().map(|e| h.expr(e)).collect();
                let _ = writeln!(
                    out,
                    "{ind}{name} = {conv}({}[{}])",
                    h.array(array),
                    idx.join(", ")
                );
            }
            HostStep::ReadBack { name, ty, array } => {
                let conv = if plan.fp32 && ty.is_float() {
                    "np.float64"
                } else {
                    numpy_dtype(*ty)
                };
                let _ = writeln!(
                    out,
                    "{ind}{name} = {conv}({}.copy_to_host()[0])",
                    h.array(array)
                );
            }
            HostStep::Loop {
                var,
                start,
                stop,
                step,
                body,
            } => {
                let range = match (start, step) {
                    (Expr::Lit(Literal::I64(0)), Expr::Lit(Literal::I64(1))) => h.expr(stop),
                    (_, Expr::Lit(Literal::I64(1))) => {
                        format!("{}, {}", h.expr(start), h.expr(stop))
                    }
                    _ => format!("{}, {}, {}", h.expr(start), h.expr(stop), h.expr(step)),
                };
                let _ = writeln!(out, "{ind}for {var} in range({range}):");
                emit_body(h, body, depth + 1, out);
            }
            HostStep::While { test, cond, body } => {
                if test.is_empty() {
                    let _ = writeln!(out, "{ind}while {}:", h.expr(cond));
                    emit_body(h, body, depth + 1, out);
                } else {
                    let _ = writeln!(out, "{ind}while True:");
                    emit_steps(h, test, depth + 1, out);
                    let _ = writeln!(out, "{ind}    if not ({}):", h.expr(cond));
                    let _ = writeln!(out, "{ind}        break");
                    emit_steps(h, body, depth + 1, out);
                }
            }
            HostStep::If { cond, then, orelse } => {
                // The choice of a block per result element: not under
                // Numba's simulator, where it is the slow one.
                let blocks = crate::plan::opens_choice(then, crate::plan::BLOCK_CHOICE)
                    || crate::plan::opens_choice(then, crate::plan::PERSIST_CHOICE);
                if blocks {
                    let _ = writeln!(out, "{ind}if not _port_simulated() and {}:", h.expr(cond));
                } else {
                    let _ = writeln!(out, "{ind}if {}:", h.expr(cond));
                }
                emit_body(h, then, depth + 1, out);
                if !orelse.is_empty() {
                    let _ = writeln!(out, "{ind}else:");
                    emit_body(h, orelse, depth + 1, out);
                }
            }
            HostStep::Break => {
                let _ = writeln!(out, "{ind}break");
            }
            HostStep::Raise { python, .. } => {
                let _ = writeln!(out, "{ind}{python}");
            }
            HostStep::Comment(text) => {
                let _ = writeln!(out, "{ind}# {text}");
            }
            HostStep::Guard(g) => {
                let (l, r) = (h.expr(&g.lhs), h.expr(&g.rhs));
                let what = py_str(&format!("line {}: {}", g.line, g.what));
                let lhs = py_str(&g.lhs_text);
                let fails = g.relation.failing().symbol();
                let _ = writeln!(out, "{ind}if {l} {fails} {r}:");
                if let Some(f) = &h.fallback {
                    // At entry nothing is copied yet: the original runs, with
                    // one warning that says why, and so does exactly what
                    // NumPy does with these shapes (an extent the plan was
                    // specialised to; or two it takes to be equal: NumPy's
                    // own error, or a broadcast of an extent 1 the kernels
                    // were not built for).
                    let function = h
                        .plan
                        .function
                        .rsplit('.')
                        .next()
                        .unwrap_or(&h.plan.function);
                    let why = if !g.relation.is_eq() {
                        format!("{}; here `{}` exceeds `{}`", g.what, g.lhs_text, g.rhs_text)
                    } else if g.specialised {
                        format!("{}; here `{}` differs", g.what, g.lhs_text)
                    } else {
                        format!(
                            "the kernels take `{}` and `{}` to be equal ({}); here they differ",
                            g.lhs_text, g.rhs_text, g.what
                        )
                    };
                    let why = py_str(&format!(
                        "{function}: line {}: {why}: the original runs",
                        g.line
                    ));
                    let _ = writeln!(out, "{ind}    return _port_run_original({why}, {f})");
                } else if g.specialised {
                    let _ = writeln!(out, "{ind}    _port_shape_error({what}, {lhs}, {l})");
                } else {
                    let error = if g.relation.is_eq() {
                        ""
                    } else {
                        ", IndexError"
                    };
                    let _ = writeln!(
                        out,
                        "{ind}    _port_shape_error({what}, {lhs}, {l}, {}, {r}{error})",
                        py_str(&g.rhs_text)
                    );
                }
            }
            HostStep::Library(call) => {
                let mut a: Vec<String> = call.args.iter().map(|n| h.array(n)).collect();
                if let Some(k) = call.op.lstsq_item() {
                    a.push(k.to_string());
                }
                if let LibraryOp::Matmul { ta, tb } = call.op {
                    a.push(py_bool(ta).into());
                    a.push(py_bool(tb).into());
                }
                if let Some(axis) = call.op.order_axis() {
                    a.push(axis.map_or("None".to_string(), |k| k.to_string()));
                }
                a.push(h.array(&call.out));
                let _ = writeln!(
                    out,
                    "{ind}{}({})  # line {}: {}",
                    call.op.helper(),
                    a.join(", "),
                    call.line,
                    call.op.numpy_name()
                );
            }
            HostStep::Rebind { targets, sources } => {
                let t: Vec<String> = targets.iter().map(|n| h.array(n)).collect();
                let s: Vec<String> = sources.iter().map(|n| h.array(n)).collect();
                let _ = writeln!(out, "{ind}{} = {}", t.join(", "), s.join(", "));
                for n in targets {
                    h.device.insert(n.clone());
                }
            }
        }
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A block of a host loop or `if`: `pass` when it has no steps.
fn emit_body(h: &mut Host, steps: &[HostStep], depth: usize, out: &mut String) {
    emit_steps(h, steps, depth, out);
    if steps.iter().all(|s| matches!(s, HostStep::Comment(_))) {
        let _ = writeln!(out, "{}pass", "    ".repeat(depth));
    }
}

fn host_value(h: &Host, v: &HostValue) -> String {
    match v {
        HostValue::Array(n) if h.is_param(n) && !h.rebound.contains(n) => n.clone(),
        HostValue::Array(n) => {
            let plan = h.plan;
            if plan.kind == PlanKind::Ufunc {
                let mut s = format!("{}.copy_to_host()", h.array(n));
                if plan.fp32 {
                    s.push_str(".astype(np.float64)");
                }
                return format!("_port_unbroadcast({s}, shape)");
            }
            let s = format!("_port_result({}, _port_gpu)", h.array(n));
            if plan.fp32 {
                // float32 kernels for float64 code: the result goes back as float64.
                format!("{s}.astype(np.float64)")
            } else {
                s
            }
        }
        HostValue::Scalar(n, _) => n.clone(),
        HostValue::ScalarOrStart {
            name,
            trip,
            start,
            start_ty,
            python,
            ..
        } => {
            let conv = if *python {
                crate::dtypes::python_type(*start_ty)
            } else {
                numpy_dtype(*start_ty)
            };
            format!("({name} if {trip} > 0 else {conv}({start}))")
        }
        HostValue::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(|x| host_value(h, x)).collect();
            format!("({})", parts.join(", "))
        }
    }
}
