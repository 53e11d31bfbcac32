//! Calls: NumPy functions and array methods (reductions, `diagonal`,
//! `cov`, `dot`), NumPy's binary ufuncs by name (`np.add`, `np.f.outer`,
//! `out=`), and the calls other passes own, handed to them (`app_calls`,
//! `creation`, `convolve`, `histogram`, …).

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, CmpOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, lit, select};
use crate::lower::context::{Choice, Lowerer, Recurse, Reduce, Region, RegionKind};
use crate::lower::python_ints;
use crate::lower::row_reduction::reduce_name;
use crate::numpy::array_expr::{self, ArrVal, Val};
use crate::numpy::math_calls;
use crate::pyast;
use crate::source::Const;

impl<'a> Lowerer<'a> {
    pub(super) fn call(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        if let Some(v) = self.masked_call(r, c, line)? {
            return Ok(v);
        }
        // Methods of arrays.
        if let ast::Expr::Attribute(a) = c.func.as_ref() {
            if !self.src.names_a_module(&a.value) {
                let base = self.expr(r, &a.value)?;
                if let Val::Array(av) = base {
                    return self.array_method(r, &av, a.attr.as_str(), c, line);
                }
                // A NumPy scalar's `.astype(T)`: a cast, strong as any
                // NumPy scalar (a Python number has no such method).
                if let (Val::Scalar(x, t, false), "astype", [arg], true) = (
                    &base,
                    a.attr.as_str(),
                    c.args.as_slice(),
                    c.keywords.is_empty(),
                ) {
                    if let Some(to) = self.dtype_value(r, arg) {
                        return Ok(Val::scalar(cast_to(x.clone(), *t, to), to));
                    }
                }
            }
        }
        // `type(x)(v)`: `v` as a number of `x`'s type, as weak as `x` (a
        // Python float's type is `float`; a float32's, `np.float32`).
        if let Some(x) = crate::lower::creation::type_of_call(self.src, &c.func) {
            if let ([v], true) = (c.args.as_slice(), c.keywords.is_empty()) {
                let (Val::Scalar(_, to, weak), Val::Scalar(e, t, _)) =
                    (self.expr(r, x)?, self.expr(r, v)?)
                else {
                    return refuse(
                        "frontend",
                        line,
                        "`type(x)(v)` casts only a number to the type of a number",
                    );
                };
                let e = if to == ScalarType::Bool {
                    math_calls::truthy(e, t)
                } else {
                    cast_to(e, t, to)
                };
                return Ok(Val::Scalar(e, to, weak));
            }
        }
        let name = self.src.resolve(&c.func).unwrap_or_default();
        let short = name.rsplit('.').next().unwrap_or(&name).to_string();
        let is_numpy = name.starts_with("numpy.");
        if is_numpy && pyast::out_keyword(c) && takes_out(&short) {
            return self.ufunc_into_out(r, c, &short, line);
        }
        if name == "numpy.einsum" {
            return self.einsum(r, c, line);
        }
        // `np.pad` reads its input where it falls (a template, nothing
        // allocated): per-thread work may pad a slice of its own.
        if name == "numpy.pad" {
            return self.padded(r, c, line);
        }
        // `p[range(n), y]`, `np.array(range(n))`: a `range` as a value is
        // the integer array NumPy makes of it, `np.arange`'s.
        if name == "range" && r.kind == RegionKind::Host && c.keywords.is_empty() {
            if let Some(v) = self.creation_call(r, "numpy.arange", c, line)? {
                return Ok(v);
            }
        }

        // Built-in `sum` of an array adds its rows to the int 0, one after
        // another: over the first axis only, and in the element type
        // itself (`0 + x[0]` of an int8 `x` is an int8, and wraps; bools
        // count in int64). NumPy sums small integers in 64 bits, and the
        // total wrapped to the element type is the wrapping sum's.
        if name == "sum" && c.args.len() == 1 && c.keywords.is_empty() {
            let v = self.expr(r, &c.args[0])?;
            let Val::Array(av) = &v else {
                return refuse(
                    "frontend",
                    line,
                    format!("`{}`: built-in `sum` of a number", self.src.text_of(c)),
                );
            };
            let (t, nd) = (av.elem, av.ndim());
            let total = if nd == 1 {
                self.reduce(r, Reduce::Sum, v, line)?
            } else {
                let args = crate::lower::axis_reduction::RedArgs {
                    axes: Some(vec![0]),
                    ..Default::default()
                };
                let hint = pyast::subscript_base(&c.args[0]).unwrap_or_else(|| "r".into());
                let op = crate::lower::axis_reduction::AxisOp::Plain(Reduce::Sum);
                self.reduce_with(r, op, v, args, &hint, line)?
            };
            let to = crate::lower::row_reduction::builtin_sum_type(t);
            return Ok(match total {
                Val::Scalar(e, from, _) if from != to => Val::scalar(cast_to(e, from, to), to),
                Val::Array(a) if a.elem != to => {
                    let from = a.elem;
                    Val::Array(a.map(to, |e| cast_to(e, from, to)))
                }
                v => v,
            });
        }
        if matches!(name.as_str(), "max" | "min") && c.args.len() == 1 && c.keywords.is_empty() {
            if let Some(v) = self.builtin_extreme_of_array(r, c, &name, line)? {
                return Ok(v);
            }
        }
        // Reductions.
        if let Some(op) = reduce_name(&name) {
            if c.args.len() == 1 && c.keywords.is_empty() {
                let v = self.expr(r, &c.args[0])?;
                return self.reduce(r, op, v, line);
            }
        }
        if name.starts_with("numpy.") {
            if let Some(op) = crate::lower::axis_reduction::AxisOp::from_name(&name) {
                let Some(first) = c.args.first() else {
                    return refuse("frontend", line, format!("`{short}` needs an array"));
                };
                let v = self.expr(r, first)?;
                let nd = match &v {
                    Val::Array(a) => a.ndim(),
                    _ => 0,
                };
                let args = self.reduction_args(c, 1, nd, op, line)?;
                let hint = pyast::subscript_base(first).unwrap_or_else(|| "r".into());
                return self.reduce_with(r, op, v, args, &hint, line);
            }
        }
        if let (Some(op), true) = (crate::lower::scan::scan_op(&name), is_numpy) {
            let Some(first) = c.args.first() else {
                return refuse("frontend", line, format!("`{short}` needs an array"));
            };
            let v = self.expr(r, first)?;
            return self.scan_call(r, op, v, c, 1, line);
        }
        if name == "numpy.linalg.norm" {
            return self.linalg_norm(r, c, line);
        }
        if crate::lower::linalg::is_linalg(&name) {
            return self.linalg_call(r, c, line);
        }
        if crate::lower::sort::is_order_statistic(&name) {
            return self.order_statistic(r, c, line);
        }
        if matches!(name.as_str(), "numpy.matmul") && c.args.len() == 2 && c.keywords.is_empty() {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.matmul(r, a, b, line);
        }
        if name == "numpy.outer" && c.args.len() == 2 && c.keywords.is_empty() {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.outer(a, b, line);
        }
        if is_numpy && c.args.len() == 2 && c.keywords.is_empty() {
            if let Some(v) = self.binary_ufunc(r, &name, c, line)? {
                return Ok(v);
            }
        }
        if matches!(
            name.as_str(),
            "numpy.trace" | "numpy.diagonal" | "numpy.diag"
        ) && c.args.len() == 1
            && c.keywords.is_empty()
        {
            let v = self.expr(r, &c.args[0])?;
            let diag = self.diagonal(&name, v, line)?;
            if name == "numpy.trace" {
                return self.reduce(r, Reduce::Sum, diag, line);
            }
            return Ok(diag);
        }
        if name == "numpy.histogram" {
            return self.histogram(r, c, line);
        }
        if matches!(name.as_str(), "numpy.array" | "numpy.asarray") {
            if let Some(v) = self.literal_array(r, c, line)? {
                return Ok(v);
            }
        }
        // `np.asarray(x)` of an array is `x` itself (a view stays a view);
        // with `dtype=` it is `x.astype(dtype)` when the type differs.
        if matches!(
            name.as_str(),
            "numpy.asarray" | "numpy.asanyarray" | "numpy.ascontiguousarray"
        ) && c.args.len() == 1
            && c.keywords.iter().all(|k| k.arg.as_deref() == Some("dtype"))
        {
            if let Val::Array(av) = self.expr(r, &c.args[0])? {
                let to = match c.keywords.first() {
                    Some(k) => Some(self.dtype_value(r, &k.value).ok_or_else(|| {
                        Box::new(crate::error::Reason::new(
                            "frontend",
                            line,
                            format!(
                                "`{}`: a dtype port does not know",
                                self.src.text_of(&k.value)
                            ),
                        ))
                    })?),
                    None => None,
                };
                self.log.applied(
                    array_expr::NAME,
                    format!("`np.{short}` of an array is the array (line {line})"),
                );
                return Ok(Val::Array(match to {
                    Some(t) if t != av.elem => av.map(t, |e| cast_to(e, av.elem, t)),
                    _ => av,
                }));
            }
        }
        if matches!(name.as_str(), "numpy.convolve" | "numpy.correlate") {
            return self.convolve(r, &name, c, line);
        }
        if name == "numpy.cov" && c.args.len() == 1 {
            return self.cov(r, c, line);
        }
        if name == "numpy.vdot" && c.args.len() == 2 && c.keywords.is_empty() {
            // Both flattened, the first conjugated: a whole-array sum of
            // elementwise products (arrays of one shape).
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            // NumPy needs equal sizes; arrays of one rank are taken as one
            // shape (the kernels' extents come from the first).
            let same = match (&a, &b) {
                (Val::Array(x), Val::Array(y)) => x.ndim() == y.ndim(),
                _ => false,
            };
            if !same {
                return refuse(
                    array_expr::NAME,
                    line,
                    "`np.vdot` of values other than two arrays of one rank",
                );
            }
            let ca = math_calls::call("numpy.conj", &[a]).expect("np.conj of an array");
            let prod = self.binop(ast::Operator::Mult, &ca, &b, line)?;
            return self.reduce(r, Reduce::Sum, prod, line);
        }
        if name == "numpy.inner" && c.args.len() == 2 && c.keywords.is_empty() {
            // Over the last axes: `a @ b.T` for matrices, a dot for vectors.
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return match (&a, &b) {
                (Val::Array(_), Val::Array(y)) if y.ndim() == 2 => {
                    let bt = Val::Array(y.transpose());
                    self.dot(r, a, bt, line)
                }
                _ => self.dot(r, a, b, line),
            };
        }
        if name == "numpy.dot" && c.args.len() == 2 {
            let a = self.expr(r, &c.args[0])?;
            let b = self.expr(r, &c.args[1])?;
            return self.dot(r, a, b, line);
        }
        // `np.shape(x)`, `np.ndim(x)`, `np.size(x)`: the attributes.
        if let ("numpy.shape" | "numpy.ndim" | "numpy.size", [x], true) =
            (name.as_str(), c.args.as_slice(), c.keywords.is_empty())
        {
            return match self.expr(r, x)? {
                Val::Array(av) => Ok(match short.as_str() {
                    "shape" => Val::Tuple(
                        av.shape
                            .iter()
                            .map(|s| Val::scalar(s.clone(), ScalarType::I64))
                            .collect(),
                    ),
                    "ndim" => Val::Scalar(i64(av.ndim() as i64), ScalarType::I64, true),
                    _ => Val::scalar(av.size(), ScalarType::I64),
                }),
                Val::Scalar(..) => Ok(match short.as_str() {
                    "shape" => Val::Tuple(Vec::new()),
                    "ndim" => Val::Scalar(i64(0), ScalarType::I64, true),
                    _ => Val::Scalar(i64(1), ScalarType::I64, true),
                }),
                Val::Tuple(_) => refuse(
                    "frontend",
                    line,
                    format!(
                        "`{}` of a tuple (NumPy makes an array of it)",
                        self.src.text_of(c)
                    ),
                ),
            };
        }
        if name == "numpy.squeeze" && c.args.len() == 1 && c.keywords.is_empty() {
            let v = self.expr(r, &c.args[0])?;
            return self.squeeze(v, line);
        }
        if name == "isinstance" && c.args.len() == 2 && c.keywords.is_empty() {
            let v = self.expr(r, &c.args[0])?;
            return match isinstance_of(self.src, &v, &c.args[1]) {
                Some(b) => Ok(Val::Scalar(bool(b), ScalarType::Bool, true)),
                None => refuse(
                    "frontend",
                    line,
                    format!(
                        "`{}`: which of these classes a kernel value is an instance of is not known here",
                        self.src.text_of(c)
                    ),
                ),
            };
        }
        // `np.isscalar(x)` by `x`'s kind: a number (Python or NumPy) is,
        // an array (0-d too) or a tuple is not.
        if name == "numpy.isscalar" && c.args.len() == 1 && c.keywords.is_empty() {
            let is = matches!(self.expr(r, &c.args[0])?, Val::Scalar(..));
            return Ok(Val::Scalar(bool(is), ScalarType::Bool, true));
        }
        if name == "len" && c.args.len() == 1 {
            return match self.expr(r, &c.args[0])? {
                Val::Array(av) => Ok(Val::scalar(av.shape[0].clone(), ScalarType::I64)),
                Val::Tuple(t) => Ok(Val::Scalar(i64(t.len() as i64), ScalarType::I64, true)),
                _ => refuse("frontend", line, "`len` of a scalar"),
            };
        }
        if r.kind == RegionKind::Host && is_numpy {
            if let Some(v) = self.rearrange_call(r, &name, c, line)? {
                return Ok(v);
            }
        }
        if r.kind == RegionKind::Host && is_numpy {
            if let Some(v) = self.creation_call(r, &name, c, line)? {
                return Ok(v);
            }
        }
        let built_from_python = c.args.first().is_some_and(|a| {
            let mut found = false;
            crate::pyast::walk_expr(a, &mut |e| {
                found |= matches!(
                    e,
                    ast::Expr::ListComp(_) | ast::Expr::GeneratorExp(_) | ast::Expr::Lambda(_)
                );
            });
            found
        });
        if built_from_python && matches!(name.as_str(), "numpy.array" | "numpy.asarray") {
            return refuse(
                "frontend",
                line,
                format!(
                    "`{}` builds an array element by element from a Python comprehension (or `map`): port takes array statements and loops over a preallocated array; write it as array operations (broadcasting, `.sum(axis=…)`) or as a loop that stores into `np.empty(…)`",
                    self.src.text_of(c)
                ),
            );
        }
        if crate::lower::hoist_alloc::is_allocation(&name) {
            let why = if r.kind == RegionKind::Host {
                "port takes this allocation only as the value of a statement of its own (`a = np.zeros(…)`) or as an array template; bind it to a name first"
            } else {
                "kernels cannot allocate; allocate it outside the loop"
            };
            return refuse(
                crate::lower::hoist_alloc::NAME,
                line,
                format!(
                    "`{}` allocates an array{}: {why}",
                    self.src.text_of(c),
                    if r.kind == RegionKind::Host {
                        ""
                    } else {
                        " inside per-thread work"
                    }
                ),
            );
        }

        if name == "numpy.meshgrid" {
            return self.meshgrid(r, c, line);
        }

        // App functions.
        if let Some(callee) = self.app_function(&c.func) {
            if !c.keywords.is_empty() {
                return refuse(
                    crate::lower::app_calls::NAME,
                    line,
                    format!("`{}` is called with keyword arguments", callee),
                );
            }
            let mut args = Vec::new();
            for a in &c.args {
                args.push(self.expr(r, a)?);
            }
            return self.call_app(r, &callee, args, line);
        }

        if !c.keywords.is_empty() {
            return refuse(
                math_calls::NAME,
                line,
                format!("`{}`: keyword arguments to `{name}`", self.src.text_of(c)),
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(r, a)?);
        }
        if math_calls::float16_result(&name, &args) {
            return refuse(
                math_calls::NAME,
                line,
                format!(
                    "`{}`: NumPy computes `{}` of bool, int8 and uint8 values in float16, \
                     which port does not support; convert first (`.astype(np.float32)`)",
                    self.src.text_of(c),
                    name.replace("numpy.", "np.")
                ),
            );
        }
        if let Some((python, other, numpy)) =
            math_calls::builtin_choice_of_python_number(&name, &args)
        {
            let alts = [(python, true), (other, !numpy)];
            self.note_choice(c, Choice::among(line, &alts));
        } else if matches!(name.as_str(), "min" | "max") {
            // A winner that is itself a choice (`min(acc, max(h(b), v))`
            // is the Python int `h(b)` gives when it wins both; fuzz seed
            // 630055).
            let operands: Vec<(&ast::Expr, &Val)> = c.args.iter().zip(&args).collect();
            self.pass_choice(c, None, &operands);
        }
        if math_calls::builtin_choice_untyped(&name, &args) {
            return refuse(
                math_calls::NAME,
                line,
                format!(
                    "`{}`: Python's `{name}` returns the winning argument with its own type, \
                     and these differ ({}); give them one type (`float(…)`, `.astype(…)`)",
                    self.src.text_of(c),
                    args.iter()
                        .filter_map(|a| match a {
                            Val::Scalar(_, t, w) => Some(if *w {
                                format!("a Python {}", crate::dtypes::python_type(*t))
                            } else {
                                crate::types::numba_scalar(*t).to_string()
                            }),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        if let Some(v) = math_calls::call(&name, &args) {
            let v = self.checked_conversion(&name, &args, v);
            // A ufunc of several arrays broadcasts them together.
            let vals: Vec<&Val> = args.iter().collect();
            self.assume_broadcast(r, &vals, line)?;
            if math_calls::math_fn(&name).is_some() {
                let mf = math_calls::math_fn(&name).map_or(short.as_str(), |f| f.name());
                let complex = args.iter().any(|a| match a {
                    Val::Scalar(_, t, _) => t.is_complex(),
                    Val::Array(av) => av.elem.is_complex(),
                    Val::Tuple(_) => false,
                });
                let module = if complex { "cmath" } else { "math" };
                let note = if is_numpy {
                    format!("`np.{short}` → `{module}.{mf}` (line {line})")
                } else {
                    format!("`{name}` on the device (line {line})")
                };
                self.log.applied(math_calls::NAME, note);
            }
            if is_numpy && args.iter().any(|a| matches!(a, Val::Array(_))) {
                self.log.applied(
                    array_expr::NAME,
                    format!("ufunc `np.{short}` element by element (line {line})"),
                );
            }
            if math_calls::gives_python_number(&name, &args) {
                if let Val::Scalar(e, t, _) = v {
                    return Ok(Val::Scalar(e, t, true));
                }
            }
            return Ok(v);
        }
        let shown = if name.is_empty() {
            self.src.text_of(c.func.as_ref()).to_string()
        } else {
            name.replace("numpy.", "np.")
        };
        refuse(
            math_calls::NAME,
            line,
            format!("calls `{shown}`, which port cannot turn into kernel code"),
        )
    }

    fn array_method(
        &mut self,
        r: &mut Region,
        av: &ArrVal,
        method: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        if let Some(op) = reduce_name(&format!("numpy.{method}")) {
            if c.args.is_empty() && c.keywords.is_empty() {
                return self.reduce(r, op, Val::Array(av.clone()), line);
            }
        }
        if let Some(op) = crate::lower::scan::scan_op(method) {
            return self.scan_call(r, op, Val::Array(av.clone()), c, 0, line);
        }
        if let Some(op) = crate::lower::axis_reduction::AxisOp::from_name(method) {
            let args = self.reduction_args(c, 0, av.ndim(), op, line)?;
            let hint = match c.func.as_ref() {
                ast::Expr::Attribute(a) => pyast::subscript_base(&a.value),
                _ => None,
            }
            .unwrap_or_else(|| "r".into());
            return self.reduce_with(r, op, Val::Array(av.clone()), args, &hint, line);
        }
        match method {
            "copy" if c.args.is_empty() => {
                let mut v = av.clone();
                v.computed = true;
                Ok(Val::Array(v))
            }
            "astype" if c.args.len() == 1 => {
                let t = self.dtype_value(r, &c.args[0]).ok_or_else(|| {
                    Box::new(crate::error::Reason::new(
                        array_expr::NAME,
                        line,
                        format!(
                            "`.astype({})`: unsupported dtype",
                            self.src.text_of(&c.args[0])
                        ),
                    ))
                })?;
                Ok(Val::Array(av.map(t, |e| cast_to(e, av.elem, t))))
            }
            "dot" if c.args.len() == 1 => {
                let b = self.expr(r, &c.args[0])?;
                self.dot(r, Val::Array(av.clone()), b, line)
            }
            "diagonal" | "trace" if c.args.is_empty() && c.keywords.is_empty() => {
                let diag = self.diagonal("numpy.diagonal", Val::Array(av.clone()), line)?;
                if method == "trace" {
                    return self.reduce(r, Reduce::Sum, diag, line);
                }
                Ok(diag)
            }
            "conj" | "conjugate" if c.args.is_empty() && c.keywords.is_empty() => {
                Ok(math_calls::call("numpy.conj", &[Val::Array(av.clone())])
                    .expect("np.conj of an array"))
            }
            "transpose" if c.args.is_empty() && c.keywords.is_empty() => {
                Ok(Val::Array(av.transpose()))
            }
            "round" if c.args.len() <= 1 && c.keywords.is_empty() => {
                let mut args = vec![Val::Array(av.clone())];
                for a in &c.args {
                    args.push(self.expr(r, a)?);
                }
                math_calls::call("numpy.round", &args).map_or_else(
                    || {
                        refuse(
                            math_calls::NAME,
                            line,
                            "`.round(decimals)` takes an integer literal of decimals (a non-negative one for integers)",
                        )
                    },
                    Ok,
                )
            }
            "reshape" | "ravel" | "flatten" | "swapaxes" | "transpose" => {
                self.shape_method(r, av, method, &c.args, c, line)
            }
            _ => refuse(
                array_expr::NAME,
                line,
                format!("array method `.{method}()` is not supported in kernels"),
            ),
        }
    }

    /// The main diagonal of a matrix as a 1-D view (`np.diagonal`,
    /// `np.diag` of a matrix, what `np.trace` sums); `np.diag` of a vector
    /// is the square matrix with it on the diagonal.
    fn diagonal(&mut self, name: &str, v: Val, line: u32) -> Lower<Val> {
        let Val::Array(a) = v else {
            return refuse(array_expr::NAME, line, format!("`{name}` of a scalar"));
        };
        match a.ndim() {
            2 => {
                let n = binary(BinOp::Min, a.shape[0].clone(), a.shape[1].clone());
                let k = var(&array_expr::ph(0));
                Ok(Val::Array(a.reindexed(vec![n], &[k.clone(), k])))
            }
            1 if name == "numpy.diag" => {
                let n = a.shape[0].clone();
                let (i, j) = (var(&array_expr::ph(0)), var(&array_expr::ph(1)));
                let on = a.reindexed(vec![n.clone(), n.clone()], std::slice::from_ref(&i));
                let zero = lit(a.elem, 0.0);
                let body = select(cmp(CmpOp::Eq, i, j), on.body.clone(), zero);
                Ok(Val::Array(ArrVal {
                    shape: vec![n.clone(), n],
                    elem: a.elem,
                    body,
                    computed: true,
                }))
            }
            _ => refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{name}` of a {}-D array (port takes the diagonal of a matrix)",
                    a.ndim()
                ),
            ),
        }
    }

    /// `np.cov(m)`: rows are variables, columns observations (`rowvar=False`
    /// swaps them); `(X - mean) @ (X - mean).conj().T / (n - 1)`, or `n`
    /// with `bias=True`, or `n - ddof`.
    fn cov(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let mut rowvar = true;
        let mut ddof: Option<i64> = None;
        let mut bias = false;
        for k in &c.keywords {
            let v = self.src.eval_const(&k.value);
            match (k.arg.as_ref().map(|a| a.as_str()), v) {
                (Some("rowvar"), Some(Const::Bool(b))) => rowvar = b,
                (Some("bias"), Some(Const::Bool(b))) => bias = b,
                (Some("ddof"), Some(Const::Int(d))) => ddof = Some(d),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`{}`: np.cov takes constant `rowvar=`, `bias=` and `ddof=` here (no `y`, weights or dtype)",
                            self.src.text_of(c)
                        ),
                    )
                }
            }
        }
        let m = self.expr(r, &c.args[0])?;
        let Val::Array(mut x) = m else {
            return refuse(array_expr::NAME, line, "`np.cov` of a scalar");
        };
        if x.ndim() != 2 {
            return refuse(
                array_expr::NAME,
                line,
                "`np.cov` of an array other than 2-D (of one variable it is `np.var(x, ddof=1)`)",
            );
        }
        if !rowvar {
            x = x.transpose();
        }
        if !x.elem.is_float() && !x.elem.is_complex() {
            let t = ScalarType::F64;
            x = x.map(t, |e| cast_to(e, x.elem, t));
        }
        let n = x.shape[1].clone();
        let args = crate::lower::axis_reduction::RedArgs {
            axes: Some(vec![1]),
            keepdims: true,
            ddof: 0,
            dtype: None,
        };
        let mean = self.reduce_with(
            r,
            crate::lower::axis_reduction::AxisOp::Plain(Reduce::Mean),
            Val::Array(x.clone()),
            args,
            "cov",
            line,
        )?;
        let centred = self.binop(ast::Operator::Sub, &Val::Array(x), &mean, line)?;
        let Val::Array(xc) = centred.clone() else {
            unreachable!("an array minus its mean is an array")
        };
        let xh = math_calls::call("numpy.conj", &[Val::Array(xc.transpose())])
            .expect("np.conj of an array");
        let prod = self.matmul(r, centred, xh, line)?;
        let dd = ddof.unwrap_or(if bias { 0 } else { 1 });
        let denom = sub(n, i64(dd));
        self.binop(
            ast::Operator::Div,
            &prod,
            &Val::scalar(denom, ScalarType::I64),
            line,
        )
    }

    fn dot(&mut self, r: &mut Region, a: Val, b: Val, line: u32) -> Lower<Val> {
        match (&a, &b) {
            (Val::Array(x), Val::Array(y)) if x.ndim() == 1 && y.ndim() == 1 => {
                let prod = self.binop(ast::Operator::Mult, &a, &b, line)?;
                // NumPy's dot of two bool vectors is a bool: whether any
                // pair is true (products `and`, summed by `or`).
                let sum = if x.elem == ScalarType::Bool && y.elem == ScalarType::Bool {
                    Reduce::Max
                } else {
                    Reduce::Sum
                };
                let elem = match &prod {
                    Val::Array(p) => p.elem,
                    _ => return self.reduce(r, sum, prod, line),
                };
                let total = self.reduce(r, sum, prod, line)?;
                // np.dot sums in the products' type (int16 wraps), where
                // np.sum would widen small integers to int64: the low bits
                // of the wide sum are the narrow one's.
                match total {
                    Val::Scalar(e, t, _) if elem.is_int() && elem.bits() < 64 && t != elem => {
                        Ok(Val::scalar(cast_to(e, t, elem), elem))
                    }
                    v => Ok(v),
                }
            }
            (Val::Array(x), Val::Array(y)) if x.ndim() <= 2 && y.ndim() <= 2 => {
                self.matmul(r, a, b, line)
            }
            (Val::Scalar(..), _) | (_, Val::Scalar(..)) => {
                self.binop(ast::Operator::Mult, &a, &b, line)
            }
            _ => refuse(
                array_expr::NAME,
                line,
                "np.dot of arrays other than two vectors: write the loops",
            ),
        }
    }

    /// A reduction of an array value to a scalar: a thread-private loop in a
    /// kernel ([`crate::lower::row_reduction`]), a reduction kernel at the
    /// top level ([`crate::lower::whole_reduction`]).
    pub(super) fn lift_reduce(
        &mut self,
        r: &mut Region,
        op: Reduce,
        v: Val,
        line: u32,
    ) -> Lower<Val> {
        let av = match v {
            Val::Array(av) => av,
            Val::Scalar(e, t, w) => {
                // np.sum of a scalar is the scalar.
                return Ok(match op {
                    Reduce::Mean => Val::scalar(cast_to(e, t, ScalarType::F64), ScalarType::F64),
                    _ => Val::Scalar(e, t, w),
                });
            }
            Val::Tuple(_) => return refuse("frontend", line, "a reduction over a tuple"),
        };
        if av.elem.is_complex() && matches!(op, Reduce::Max | Reduce::Min) {
            return refuse(
                "frontend",
                line,
                "max/min of complex numbers (NumPy orders them lexicographically): reduce `abs(z)` or `z.real`",
            );
        }
        if r.kind == RegionKind::Host {
            self.whole_reduction(op, &av, line)
        } else {
            self.row_reduction(r, op, &av, line)
        }
    }

    /// A float from the data made a Python int (`int(x[i])`,
    /// `math.floor(x[i])`, `round(x[i])`): checked, as CPython's int holds
    /// any such value and raises for NaN and ±inf (`python_ints`).
    fn checked_conversion(&self, name: &str, args: &[Val], v: Val) -> Val {
        // `abs` of a Python int from the data: `abs(-2**63)` leaves int64.
        if let ("abs", [Val::Scalar(e, ScalarType::I64, true)]) = (name, args) {
            if python_ints::data_derived(e, &self.data_ints) {
                return Val::Scalar(python_ints::checked_abs(e.clone()), ScalarType::I64, true);
            }
        }
        let (
            Val::Scalar(Expr::Cast(ScalarType::I64, inner), ScalarType::I64, weak),
            [Val::Scalar(e, t, _)],
        ) = (&v, args)
        else {
            return v;
        };
        if !t.is_float()
            || !python_ints::FLOAT_TO_INT.contains(&name)
            || !python_ints::data_derived(e, &self.data_ints)
        {
            return v;
        }
        // `round` rounds in float64 (math_calls).
        let from = if name == "round" { ScalarType::F64 } else { *t };
        Val::Scalar(
            python_ints::checked_int((**inner).clone(), from),
            ScalarType::I64,
            *weak,
        )
    }
}

impl Lowerer<'_> {
    /// NumPy's binary ufuncs called by name: `np.add(a, b)` is `a + b`
    /// (the operators' promotion and broadcasting), and `np.f.outer(a,
    /// b)` applies `f` to every pair, `a` given as many trailing axes of
    /// extent 1 as `b` has dimensions. `None` when `name` is no such call.
    fn binary_ufunc(
        &mut self,
        r: &mut Region,
        name: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<Val>> {
        let (ufunc, outer) = match name.strip_suffix(".outer") {
            Some(u) => (u, true),
            None => (name, false),
        };
        let short = ufunc.strip_prefix("numpy.").unwrap_or(ufunc);
        let op = arithmetic_ufunc(short);
        if op.is_none() && !outer {
            return Ok(None);
        }
        let a = self.expr(r, &c.args[0])?;
        let b = self.expr(r, &c.args[1])?;
        let (a, b) = match (outer, &a, &b) {
            (true, Val::Array(x), Val::Array(y)) => {
                let mut shape = x.shape.clone();
                shape.extend(std::iter::repeat_n(i64(1), y.ndim()));
                let idx: Vec<Expr> = (0..x.ndim()).map(|k| var(&array_expr::ph(k))).collect();
                (Val::Array(x.reindexed(shape, &idx)), b)
            }
            _ => (a, b),
        };
        self.assume_broadcast(r, &[&a, &b], line)?;
        let what = if outer {
            format!("`np.{short}.outer` as a broadcast pair of operands (line {line})")
        } else {
            format!("ufunc `np.{short}` element by element (line {line})")
        };
        let v = match op {
            Some(op) => self.binop(op, &a, &b, line)?,
            None => match math_calls::call(ufunc, &[a, b]) {
                Some(v) => v,
                None => {
                    return refuse(
                        math_calls::NAME,
                        line,
                        format!(
                            "`np.{short}.outer`: `np.{short}` is not a binary ufunc port computes"
                        ),
                    )
                }
            },
        };
        self.log.applied(array_expr::NAME, what);
        Ok(Some(v))
    }
}

/// The elementwise NumPy functions whose `out=` port writes.
fn takes_out(short: &str) -> bool {
    out_ufunc_inputs(short).is_some()
}

/// How many inputs an elementwise NumPy function whose `out=` port writes
/// takes: its next positional argument is `out` (`np.add(x, y, x)`,
/// `np.clip(a, lo, hi, a)`); `None` for any other name.
pub fn out_ufunc_inputs(short: &str) -> Option<usize> {
    if arithmetic_ufunc(short).is_some() {
        return Some(2);
    }
    if let Some(f) = math_calls::math_fn(&format!("numpy.{short}")) {
        return Some(f.arity());
    }
    match short {
        "maximum" | "minimum" | "logical_and" | "logical_or" | "logical_xor" => Some(2),
        "clip" => Some(3),
        "negative" | "positive" | "square" | "absolute" | "abs" | "sign" | "reciprocal"
        | "invert" | "logical_not" => Some(1),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// `np.f(…, out=o)`: `o[...] = np.f(…)` (NumPy computes the whole
    /// result, then writes it), and the call's value is `o`.
    fn ufunc_into_out(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        short: &str,
        line: u32,
    ) -> Lower<Val> {
        if r.kind != RegionKind::Host {
            return refuse(
                array_expr::NAME,
                line,
                format!("`np.{short}(…, out=…)` inside a loop's kernel: assign the result to a slice instead"),
            );
        }
        let mut plain = c.clone();
        let out = plain.keywords.remove(0).value;
        let v = self.call(r, &plain, line)?;
        let Val::Array(target) = self.expr(r, &out)? else {
            return refuse(
                array_expr::NAME,
                line,
                format!("`out=` of `np.{short}` is not an array"),
            );
        };
        let hint = pyast::subscript_base(&out).unwrap_or_default();
        self.store_kernel(&target, &v, &hint, line)?;
        self.log.applied(
            array_expr::NAME,
            format!("`np.{short}(…, out=…)` as a store into `out` (line {line})"),
        );
        Ok(Val::Array(target))
    }
}

/// The operator of a NumPy arithmetic or bitwise ufunc.
fn arithmetic_ufunc(short: &str) -> Option<ast::Operator> {
    use ast::Operator as O;
    Some(match short {
        "add" => O::Add,
        "subtract" => O::Sub,
        "multiply" => O::Mult,
        "divide" | "true_divide" => O::Div,
        "floor_divide" => O::FloorDiv,
        "mod" | "remainder" => O::Mod,
        "power" => O::Pow,
        "bitwise_and" => O::BitAnd,
        "bitwise_or" => O::BitOr,
        "bitwise_xor" => O::BitXor,
        "left_shift" => O::LShift,
        "right_shift" => O::RShift,
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// `np.squeeze(x)`: the axes of extent 1 dropped. An axis of literal
    /// extent 1 goes; one an argument's extent gives stays, planned as
    /// never 1, with a guard of the specialisation (a call where it is 1
    /// runs the original, whose result has fewer axes).
    fn squeeze(&mut self, v: Val, line: u32) -> Lower<Val> {
        let Val::Array(av) = v else {
            return Ok(v);
        };
        let mut shape = Vec::new();
        let mut idx = Vec::new();
        let mut guards = Vec::new();
        for e in &av.shape {
            match e {
                Expr::Lit(port_codegen::ir::Literal::I64(1)) => idx.push(i64(0)),
                Expr::Lit(_) => {
                    idx.push(var(&array_expr::ph(shape.len())));
                    shape.push(e.clone());
                }
                Expr::Shape { array, .. }
                    if self.params.iter().any(|(p, t)| p == array && t.is_array()) =>
                {
                    guards.push(e.clone());
                    idx.push(var(&array_expr::ph(shape.len())));
                    shape.push(e.clone());
                }
                _ => {
                    return refuse(
                        "frontend",
                        line,
                        format!(
                            "`np.squeeze` of an array whose extent `{}` is not an argument's: whether it is 1 decides the result's rank",
                            crate::numpy::extents::extent_text(e)
                        ),
                    )
                }
            }
        }
        for e in guards {
            let text = crate::numpy::extents::extent_text(&e);
            self.steps.push(crate::plan::HostStep::Guard(crate::plan::ShapeGuard {
                lhs: cast(ScalarType::I64, cmp(CmpOp::Eq, e, i64(1))),
                rhs: i64(0),
                line,
                what: format!(
                    "`np.squeeze` at line {line} was planned for `{text}` other than 1 (an extent of 1 is dropped)"
                ),
                lhs_text: format!("({text} == 1)"),
                rhs_text: "False".into(),
                specialised: true,
                relation: crate::plan::Relation::Eq,
            }));
        }
        let mut out = av.reindexed(shape, &idx);
        out.computed = av.computed;
        Ok(Val::Array(out))
    }
}

/// `isinstance(v, classes)` decided by `v`'s kind, where it does not depend
/// on whether a number is a Python or a NumPy one: an array is an
/// `np.ndarray` and no container, number or string; a number is no
/// container, string or array. `None` where it depends (`isinstance(x,
/// int)` of an int64: a Python int is, `np.int64` is not).
fn isinstance_of(src: &crate::source::SourceFile, v: &Val, classes: &ast::Expr) -> Option<bool> {
    let names: Vec<&ast::Expr> = match classes {
        ast::Expr::Tuple(t) => t.elts.iter().collect(),
        e => vec![e],
    };
    let mut any = false;
    for n in names {
        let full = src.resolve(n)?;
        let container = matches!(
            full.as_str(),
            "tuple" | "list" | "str" | "dict" | "set" | "frozenset" | "bytes"
        );
        let is = match (v, full.as_str()) {
            (_, "object") => true,
            (Val::Array(_), "numpy.ndarray") => true,
            (Val::Array(_), _) if container => false,
            (Val::Array(_), "int" | "float" | "complex" | "bool") => false,
            (Val::Array(_), f) if f.starts_with("numpy.") || f.starts_with("numbers.") => false,
            (Val::Scalar(..), "numpy.ndarray") => false,
            (Val::Scalar(..), _) if container => false,
            _ => return None,
        };
        any |= is;
    }
    Some(any)
}

impl Lowerer<'_> {
    /// Python's built-in `max(x)`/`min(x)` of an array (`None` when `x` is
    /// a number). It walks the elements keeping the first that no later one
    /// beats (`y > best`), so a NaN first is the answer and a NaN later is
    /// never taken: NumPy's `np.max(np.where(np.isnan(x), x[0], x))`, lowered
    /// as written (ints and bools have no NaN: NumPy's max). Of a matrix it
    /// compares rows, which Python cannot order (NumPy raises).
    fn builtin_extreme_of_array(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        name: &str,
        line: u32,
    ) -> Lower<Option<Val>> {
        let x = &c.args[0];
        let Val::Array(av) = self.expr(r, x)? else {
            return Ok(None);
        };
        let text = self.src.text_of(c).to_string();
        if av.ndim() != 1 {
            return refuse(
                math_calls::NAME,
                line,
                format!(
                    "`{text}`: built-in `{name}` of an array of {} dimensions compares its rows, which Python cannot order (NumPy raises); use `np.{name}`",
                    av.ndim()
                ),
            );
        }
        if av.elem.is_complex() {
            return refuse(
                math_calls::NAME,
                line,
                format!("`{text}`: Python cannot order complex numbers (it raises a TypeError)"),
            );
        }
        if !av.elem.is_float() {
            let op = if name == "max" {
                Reduce::Max
            } else {
                Reduce::Min
            };
            return self.reduce(r, op, Val::Array(av), line).map(Some);
        }
        if !matches!(x, ast::Expr::Name(_) | ast::Expr::Attribute(_)) {
            return refuse(
                math_calls::NAME,
                line,
                format!("`{text}`: built-in `{name}` of a float array is taken of a name (its first element decides where NaNs go); bind the array to a name first"),
            );
        }
        let at = c.range;
        let np = self.src.numpy_name();
        let numpy = |f: &str| {
            pyast::attribute_node(pyast::name_node(np, at, ast::ExprContext::Load), f, at)
        };
        let first = ast::Expr::Subscript(ast::ExprSubscript {
            range: at,
            value: Box::new(x.clone()),
            slice: Box::new(ast::Expr::Constant(ast::ExprConstant {
                range: at,
                value: ast::Constant::Int(0.into()),
                kind: None,
            })),
            ctx: ast::ExprContext::Load,
        });
        let isnan = pyast::call_node(numpy("isnan"), vec![x.clone()], at);
        let values = pyast::call_node(numpy("where"), vec![isnan, first, x.clone()], at);
        let ast::Expr::Call(whole) = pyast::call_node(numpy(name), vec![values], at) else {
            unreachable!("call_node makes a call")
        };
        self.call(r, &whole, line).map(Some)
    }
}
