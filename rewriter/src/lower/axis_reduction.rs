//! **axis_reduction**: `x.sum(axis=1)`, `np.max(x, axis=0, keepdims=True)`,
//! `x.std(axis=(0, 1))`, `np.argmax(x, axis=1)` and the like, at host level.
//!
//! A reduction along some axes is a kernel with one thread per element of
//! the result, each looping over the reduced axes: the result goes to a new
//! device array. `keepdims=True` gives a view of it with extent-1
//! dimensions, which broadcast back against the input as NumPy's do
//! (`x - x.max(axis=1, keepdims=True)`). `mean` divides by the count, `var`
//! and `std` take the mean first and then the mean of squared deviations
//! (`ddof` honoured), `any`/`all` reduce truth values. Over every axis the
//! reduction is a whole-array reduction ([`super::whole_reduction`]).

use port_codegen::ir::build::*;
use port_codegen::ir::{
    ArrayType, Axis, CmpOp, Expr, MathFn, ScalarType, SharedArray, Special, Stmt,
};
use rustpython_parser::ast;

use crate::dependences::RedOp;
use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::launch::THREADS_REDUCE;
use crate::lower::context::{
    combine, identity, sanitize, unflatten, HostBind, Lowerer, Recurse, Reduce, Region, RegionKind,
};
use crate::numpy::array_expr::{self, ph, ArrVal, Val};
use crate::plan::{Fill, HostStep, LaunchShape};
use crate::source::Const;

pub const NAME: &str = "axis_reduction";

/// A reduction port takes along axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisOp {
    Plain(Reduce),
    Any,
    All,
    Var,
    Std,
    ArgMax,
    ArgMin,
}

impl AxisOp {
    /// `numpy.sum`, `numpy.std`, … (or the bare method name).
    pub fn from_name(name: &str) -> Option<AxisOp> {
        let short = name.strip_prefix("numpy.").unwrap_or(name);
        Some(match short {
            "sum" => AxisOp::Plain(Reduce::Sum),
            "mean" | "average" => AxisOp::Plain(Reduce::Mean),
            "max" | "amax" => AxisOp::Plain(Reduce::Max),
            "min" | "amin" => AxisOp::Plain(Reduce::Min),
            "prod" => AxisOp::Plain(Reduce::Prod),
            "any" => AxisOp::Any,
            "all" => AxisOp::All,
            "var" => AxisOp::Var,
            "std" => AxisOp::Std,
            "argmax" => AxisOp::ArgMax,
            "argmin" => AxisOp::ArgMin,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            AxisOp::Plain(r) => r.word(),
            AxisOp::Any => "any",
            AxisOp::All => "all",
            AxisOp::Var => "var",
            AxisOp::Std => "std",
            AxisOp::ArgMax => "argmax",
            AxisOp::ArgMin => "argmin",
        }
    }
}

/// The arguments of a reduction call besides the array.
#[derive(Clone, Debug, Default)]
pub struct RedArgs {
    /// `None`: every axis.
    pub axes: Option<Vec<usize>>,
    pub keepdims: bool,
    pub ddof: i64,
    /// `dtype=T`: the elements are cast to `T` and reduced in it (NumPy's
    /// accumulator and result type), as `x.astype(T)` would be.
    pub dtype: Option<port_codegen::ir::ScalarType>,
}

impl Lowerer<'_> {
    /// Reads `axis`, `keepdims` and `ddof` (positional `axis` after `skip`
    /// leading arguments) for an array of `ndim` dimensions.
    pub(crate) fn reduction_args(
        &mut self,
        c: &ast::ExprCall,
        skip: usize,
        ndim: usize,
        op: AxisOp,
        line: u32,
    ) -> Lower<RedArgs> {
        let mut out = RedArgs::default();
        let mut axis_expr: Option<&ast::Expr> = c.args.get(skip);
        // NumPy's positional parameters after `axis` (`x.var(1, None, None,
        // 1)`): `dtype` and `out` only as `None`.
        let after_axis: &[&str] = match op.word() {
            "var" | "std" => &["dtype", "out", "ddof", "keepdims"],
            "sum" | "prod" | "mean" => &["dtype", "out", "keepdims"],
            _ => &["out", "keepdims"],
        };
        let extra = c.args.get(skip + 1..).unwrap_or_default();
        if extra.len() > after_axis.len() {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: more positional arguments than `{}` takes",
                    self.src.text_of(c),
                    op.word()
                ),
            );
        }
        for (name, e) in after_axis.iter().zip(extra) {
            let is_none =
                matches!(e, ast::Expr::Constant(k) if matches!(k.value, ast::Constant::None));
            if *name == "dtype" && !is_none {
                out.dtype = Some(self.reduction_dtype(c, e, op, line)?);
                continue;
            }
            match (*name, self.src.eval_const(e)) {
                ("dtype" | "out", _) if is_none => {}
                ("ddof", Some(Const::Int(d))) => out.ddof = d,
                ("keepdims", Some(b)) if b.truth().is_some() => {
                    out.keepdims = b.truth().unwrap_or_default()
                }
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: the positional `{name}` of `{}` must be {}",
                            self.src.text_of(c),
                            op.word(),
                            match *name {
                                "ddof" => "an integer constant",
                                "keepdims" => "True or False",
                                _ => "None",
                            }
                        ),
                    )
                }
            }
        }
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("axis") => axis_expr = Some(&k.value),
                Some("dtype") if after_axis.contains(&"dtype") => {
                    let none = matches!(&k.value, ast::Expr::Constant(k0) if matches!(k0.value, ast::Constant::None));
                    if !none {
                        out.dtype = Some(self.reduction_dtype(c, &k.value, op, line)?);
                    }
                }
                Some("keepdims") => match self.src.eval_const(&k.value).and_then(Const::truth) {
                    Some(b) => out.keepdims = b,
                    _ => return refuse(NAME, line, "`keepdims=` must be True or False"),
                },
                Some("ddof") if matches!(op, AxisOp::Var | AxisOp::Std) => {
                    match self.src.eval_const(&k.value) {
                        Some(Const::Int(d)) => out.ddof = d,
                        _ => return refuse(NAME, line, "`ddof=` must be an integer constant"),
                    }
                }
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: keyword `{}` of `{}` is not supported",
                            self.src.text_of(c),
                            k.arg.as_ref().map(|a| a.as_str()).unwrap_or("**"),
                            op.word()
                        ),
                    )
                }
            }
        }
        let Some(ax) = axis_expr else {
            return Ok(out);
        };
        if matches!(ax, ast::Expr::Constant(c0) if matches!(c0.value, ast::Constant::None)) {
            return Ok(out);
        }
        let items: Vec<&ast::Expr> = match ax {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            e => vec![e],
        };
        let mut axes = Vec::new();
        for it in items {
            let Some(Const::Int(a)) = self.src.eval_const(it) else {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`axis={}`: the axis must be an integer constant or a tuple of them",
                        self.src.text_of(ax)
                    ),
                );
            };
            let n = ndim as i64;
            let a = if a < 0 { a + n } else { a };
            if !(0..n).contains(&a) {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "axis {a} is out of bounds for an array of dimension {ndim} (NumPy raises)"
                    ),
                );
            }
            if axes.contains(&(a as usize)) {
                return refuse(NAME, line, "repeated axis (NumPy raises)");
            }
            axes.push(a as usize);
        }
        axes.sort_unstable();
        out.axes = Some(axes);
        Ok(out)
    }

    /// `np.einsum("ij,jk->ik", a, b)`: the product of the operands over
    /// every label (a broadcast template, a label repeated in one operand
    /// reading its diagonal), summed over the labels the output leaves out
    /// (an axis reduction, or the whole-array sum when it keeps none). The
    /// implicit form (no `->`) keeps the labels that appear once, sorted,
    /// as NumPy does. Extents of one label must agree: guarded.
    pub(crate) fn einsum(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let spec = match c.args.first() {
            Some(ast::Expr::Constant(k)) => match &k.value {
                ast::Constant::Str(s) => s.replace(' ', ""),
                _ => String::new(),
            },
            _ => String::new(),
        };
        if spec.is_empty() || !c.keywords.is_empty() {
            return refuse(
                NAME,
                line,
                "`np.einsum` with a literal subscripts string and arrays, no keywords",
            );
        }
        if spec.contains('.') {
            return refuse(NAME, line, "`np.einsum` with `...` (broadcast dimensions)");
        }
        let (inputs, output) = match spec.split_once("->") {
            Some((i, o)) => (i.to_string(), Some(o.to_string())),
            None => (spec.clone(), None),
        };
        let terms: Vec<Vec<char>> = inputs.split(',').map(|t| t.chars().collect()).collect();
        if terms.len() != c.args.len() - 1
            || terms.iter().flatten().any(|ch| !ch.is_ascii_alphabetic())
        {
            return refuse(
                NAME,
                line,
                format!("`np.einsum(\"{spec}\", …)`: one term of letters per operand"),
            );
        }
        let output: Vec<char> = match output {
            Some(o) => o.chars().collect(),
            None => {
                let mut once: Vec<char> = terms
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|ch| terms.iter().flatten().filter(|x| *x == ch).count() == 1)
                    .collect();
                once.sort_unstable();
                once
            }
        };
        let mut labels: Vec<char> = output.clone();
        for ch in terms.iter().flatten() {
            if !labels.contains(ch) {
                labels.push(*ch);
            }
        }
        if output
            .iter()
            .any(|ch| !terms.iter().flatten().any(|x| x == ch))
            || (1..output.len()).any(|k| output[..k].contains(&output[k]))
        {
            return refuse(
                NAME,
                line,
                format!(
                    "`np.einsum(\"{spec}\", …)`: an output label no operand has, or one repeated"
                ),
            );
        }
        let mut operands = Vec::new();
        for (t, a) in terms.iter().zip(&c.args[1..]) {
            match self.expr(r, a)? {
                Val::Array(av) if av.ndim() == t.len() => operands.push(av),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`np.einsum`: `{}` is not an array of {} dimensions",
                            self.src.text_of(a),
                            t.len()
                        ),
                    )
                }
            }
        }
        // Each label's extent, from its first occurrence; the others must
        // agree.
        let mut extent: Vec<Option<Expr>> = vec![None; labels.len()];
        let mut pairs = Vec::new();
        for (t, av) in terms.iter().zip(&operands) {
            for (d, ch) in t.iter().enumerate() {
                let k = labels.iter().position(|x| x == ch).expect("collected");
                match &extent[k] {
                    None => extent[k] = Some(av.shape[d].clone()),
                    Some(e) => pairs.push((e.clone(), av.shape[d].clone())),
                }
            }
        }
        let region = (r.kind != RegionKind::Host).then_some(&*r);
        self.assume_equal(region, pairs, line, "np.einsum's operands")?;
        let shape: Vec<Expr> = extent
            .into_iter()
            .map(|e| e.expect("every label seen"))
            .collect();
        if shape.len() > port_codegen::ir::MAX_DIMS as usize {
            return refuse(
                NAME,
                line,
                format!(
                    "`np.einsum(\"{spec}\", …)` over {} labels: port's kernels index at most {} dimensions",
                    shape.len(),
                    port_codegen::ir::MAX_DIMS
                ),
            );
        }
        let mut product: Option<Val> = None;
        for (t, av) in terms.iter().zip(&operands) {
            let idx: Vec<Expr> = t
                .iter()
                .map(|ch| var(&ph(labels.iter().position(|x| x == ch).expect("collected"))))
                .collect();
            let v = Val::Array(av.reindexed(shape.clone(), &idx));
            product = Some(match product {
                None => v,
                Some(p) => self.binop(ast::Operator::Mult, &p, &v, line)?,
            });
        }
        let product = product.expect("at least one operand");
        self.log.applied(
            NAME,
            format!("`np.einsum(\"{spec}\", …)` as a product over its labels, summed over the ones the output leaves out (line {line})"),
        );
        if labels.len() == output.len() {
            return Ok(product);
        }
        let axes: Vec<usize> = (output.len()..labels.len()).collect();
        let args = RedArgs {
            axes: (!output.is_empty()).then_some(axes),
            keepdims: false,
            ddof: 0,
            dtype: None,
        };
        self.reduce_with(r, AxisOp::Plain(Reduce::Sum), product, args, "einsum", line)
    }

    /// A reduction with its arguments: along axes, or of the whole array.
    /// The `dtype=` of a reduction: a float or complex type, or for
    /// `sum`/`prod` a 64-bit integer one, where reducing in it is reducing
    /// `x.astype(T)` (NumPy's small integer types accumulate in themselves
    /// with `dtype=`, not in int64 as `astype` then `sum` would).
    fn reduction_dtype(
        &self,
        c: &ast::ExprCall,
        e: &ast::Expr,
        op: AxisOp,
        line: u32,
    ) -> Lower<port_codegen::ir::ScalarType> {
        use port_codegen::ir::ScalarType as S;
        let Some(t) = crate::lower::creation::dtype_of(self.src, e) else {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: `dtype={}` is not a dtype port knows",
                    self.src.text_of(c),
                    self.src.text_of(e)
                ),
            );
        };
        let sums = matches!(op, AxisOp::Plain(Reduce::Sum | Reduce::Prod));
        let fits = t.is_float() || t.is_complex() || sums && matches!(t, S::I64 | S::U64);
        if !fits {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: `{}` with `dtype={}` accumulates in {}, which port's reductions do not",
                    self.src.text_of(c),
                    op.word(),
                    self.src.text_of(e),
                    crate::types::numpy_dtype(t)
                ),
            );
        }
        Ok(t)
    }

    pub(crate) fn reduce_with(
        &mut self,
        r: &mut Region,
        op: AxisOp,
        v: Val,
        args: RedArgs,
        hint: &str,
        line: u32,
    ) -> Lower<Val> {
        // `dtype=T`: the reduction of the elements cast to `T`.
        let v = match (args.dtype, v) {
            (Some(t), Val::Array(av)) => Val::Array(av.map(t, |e| cast_to(e, av.elem, t))),
            (Some(t), Val::Scalar(x, from, _)) => Val::scalar(cast_to(x, from, t), t),
            (_, v) => v,
        };
        let av = match v {
            Val::Array(av) => av,
            other => {
                return match op {
                    AxisOp::Plain(p) => self.reduce(r, p, other, line),
                    _ => refuse(NAME, line, format!("`{}` of a scalar", op.word())),
                }
            }
        };
        if av.elem.is_complex()
            && !matches!(op, AxisOp::Plain(Reduce::Sum | Reduce::Prod | Reduce::Mean))
        {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}` of complex numbers (NumPy orders them lexicographically): reduce `abs(z)` or `z.real`",
                    op.word()
                ),
            );
        }
        let nd = av.ndim();
        let axes = args.axes.clone().unwrap_or_else(|| (0..nd).collect());
        if axes.len() == nd {
            // Every axis: a whole-array reduction, a scalar (which
            // broadcasts as the keepdims array would).
            return self.whole_with(r, op, av, args.ddof, line);
        }
        if r.kind != RegionKind::Host {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}` along an axis inside a loop: reduce the whole row (`np.{0}(x[i, :])`) or move it out of the loop",
                    op.word()
                ),
            );
        }
        match op {
            AxisOp::Var | AxisOp::Std => {
                let mean =
                    self.axis_kernel(AxisOp::Plain(Reduce::Mean), &av, &axes, true, hint, line)?;
                let Val::Array(mean) = mean else {
                    unreachable!("an array")
                };
                let d = self.binop(
                    ast::Operator::Sub,
                    &Val::Array(av.clone()),
                    &Val::Array(mean),
                    line,
                )?;
                let sq = self.binop(ast::Operator::Mult, &d, &d, line)?;
                let Val::Array(sq) = sq else {
                    unreachable!("an array")
                };
                let s = self.axis_kernel(
                    AxisOp::Plain(Reduce::Sum),
                    &sq,
                    &axes,
                    args.keepdims,
                    hint,
                    line,
                )?;
                let Val::Array(s) = s else {
                    unreachable!("an array")
                };
                let count = axes
                    .iter()
                    .map(|&a| av.shape[a].clone())
                    .reduce(mul)
                    .expect("an axis");
                let t = s.elem;
                let denom = cast(t, sub(count, i64(args.ddof)));
                let var = s.map(t, |e| div(e, denom));
                Ok(Val::Array(if op == AxisOp::Std {
                    var.map(t, |e| math(MathFn::Sqrt, vec![e]))
                } else {
                    var
                }))
            }
            _ => self.axis_kernel(op, &av, &axes, args.keepdims, hint, line),
        }
    }

    /// `any`, `all`, `var`, `std` of a whole array, by composition.
    fn whole_with(
        &mut self,
        r: &mut Region,
        op: AxisOp,
        av: ArrVal,
        ddof: i64,
        line: u32,
    ) -> Lower<Val> {
        match op {
            AxisOp::Plain(p) => self.reduce(r, p, Val::Array(av), line),
            AxisOp::Any | AxisOp::All => {
                // The max of the truths (false for an empty array), or
                // their min (true for an empty one), as bools.
                let truth = av.map(ScalarType::Bool, |e| {
                    crate::numpy::math_calls::truthy(e, av.elem)
                });
                let p = if op == AxisOp::Any {
                    Reduce::Max
                } else {
                    Reduce::Min
                };
                self.reduce(r, p, Val::Array(truth), line)
            }
            AxisOp::Var | AxisOp::Std => {
                let n = av.size();
                let m = self.reduce(r, Reduce::Mean, Val::Array(av.clone()), line)?;
                let d = self.binop(ast::Operator::Sub, &Val::Array(av), &m, line)?;
                let sq = self.binop(ast::Operator::Mult, &d, &d, line)?;
                let s = self.reduce(r, Reduce::Sum, sq, line)?;
                let Val::Scalar(s, t, _) = s else {
                    return refuse(NAME, line, "a variance that is not a scalar");
                };
                let t = if t.is_float() { t } else { ScalarType::F64 };
                let var = div(cast(t, s), cast(t, sub(n, i64(ddof))));
                Ok(Val::scalar(
                    if op == AxisOp::Std {
                        math(MathFn::Sqrt, vec![var])
                    } else {
                        var
                    },
                    t,
                ))
            }
            AxisOp::ArgMax | AxisOp::ArgMin if av.ndim() > 1 => refuse(
                NAME,
                line,
                format!(
                    "`{}` without `axis=` on a {}-D array gives a flat index, which port does not compute yet: pass `axis=`",
                    op.word(),
                    av.ndim()
                ),
            ),
            AxisOp::ArgMax | AxisOp::ArgMin if r.kind == RegionKind::Host => {
                // The reduction of a 1 × n view along its last axis (one
                // result, the block kernel when n is large), read as a
                // device scalar like a whole-array sum.
                let n = av.shape[0].clone();
                let row = av.reindexed(vec![i64(1), n], &[var(&array_expr::ph(1))]);
                let Val::Array(out) = self.axis_kernel(op, &row, &[1], false, "", line)? else {
                    return refuse(NAME, line, "an arg-reduction without a result array");
                };
                let Expr::Load(er) = out.element(&[i64(0)]) else {
                    return refuse(NAME, line, "an arg-reduction without a result array");
                };
                self.accs.insert(er.array.clone());
                Ok(Val::scalar(Expr::Load(er), ScalarType::I64))
            }
            AxisOp::ArgMax | AxisOp::ArgMin => Ok(self.thread_arg_reduction(r, op, &av, line)),
        }
    }

    /// `np.argmin(v)` / `np.argmax(v)` of a 1-D value inside a kernel: a
    /// loop of the thread's own, as `np.min` is there.
    fn thread_arg_reduction(&mut self, r: &mut Region, op: AxisOp, av: &ArrVal, line: u32) -> Val {
        let best = self.local_temp(r, "best");
        let at = self.local_temp(r, &format!("{}_at", op.word()));
        let red = if op == AxisOp::ArgMax {
            RedOp::Max
        } else {
            RedOp::Min
        };
        r.push(let_(&best, av.elem, identity(red, av.elem)));
        r.push(let_(&at, ScalarType::I64, i64(0)));
        let mut seen: Vec<&Expr> = vec![&av.body];
        seen.extend(av.shape.iter());
        let vars = self.loop_vars(r, 1, 1, &seen);
        let x = self.local_temp(r, "x");
        let update = vec![
            let_(
                &x,
                av.elem,
                array_expr::tidy(&array_expr::at_vars(&av.body, &vars)),
            ),
            if_(
                arg_better(op, var(&x), var(&best), av.elem),
                vec![assign(&best, var(&x)), assign(&at, var(&vars[0]))],
                vec![],
            ),
        ];
        for s in array_expr::element_loops(&vars, &av.shape, update) {
            r.push(s);
        }
        self.log.applied(
            NAME,
            format!("`{}` as a thread-private loop (line {line})", op.word()),
        );
        Val::scalar(var(&at), ScalarType::I64)
    }

    /// The kernel of one reduction along `axes`: a new device array of the
    /// remaining dimensions; with `keepdims`, a view of it with extent-1
    /// dimensions where the axes were.
    fn axis_kernel(
        &mut self,
        op: AxisOp,
        av: &ArrVal,
        axes: &[usize],
        keepdims: bool,
        hint: &str,
        line: u32,
    ) -> Lower<Val> {
        if matches!(op, AxisOp::ArgMax | AxisOp::ArgMin) && axes.len() != 1 {
            return refuse(NAME, line, format!("`{}` takes one axis", op.word()));
        }
        let nd = av.ndim();
        let out_dims: Vec<usize> = (0..nd).filter(|d| !axes.contains(d)).collect();
        let out_shape: Vec<Expr> = out_dims.iter().map(|&d| av.shape[d].clone()).collect();
        if out_shape.len() > port_codegen::ir::MAX_DIMS as usize {
            return refuse(NAME, line, "a reduction result of more than 4 dimensions");
        }
        let acc_t = match op {
            AxisOp::Plain(Reduce::Mean) => {
                if av.elem == ScalarType::F32 || av.elem.is_complex() {
                    av.elem
                } else {
                    ScalarType::F64
                }
            }
            AxisOp::Plain(Reduce::Sum | Reduce::Prod) if av.elem.is_unsigned() => ScalarType::U64,
            AxisOp::Plain(Reduce::Sum | Reduce::Prod)
                if !av.elem.is_float() && !av.elem.is_complex() =>
            {
                ScalarType::I64
            }
            AxisOp::Any | AxisOp::All => ScalarType::I64,
            _ => av.elem,
        };
        if op == AxisOp::Plain(Reduce::Prod) {
            crate::lower::whole_reduction::complex_product(
                RedOp::Prod,
                acc_t,
                line,
                "along an axis",
            )?;
        }
        let out_t = match op {
            AxisOp::Any | AxisOp::All => ScalarType::Bool,
            AxisOp::ArgMax | AxisOp::ArgMin => ScalarType::I64,
            _ => acc_t,
        };
        let name = self.fresh(&format!("{}_{}", sanitize(hint), op.word()));
        let ty = ArrayType {
            elem: out_t,
            ndim: out_shape.len() as u8,
            contiguous: true,
        };
        let host_shape: Vec<Expr> = out_shape.iter().map(|s| self.hostify(s.clone())).collect();
        self.steps.push(HostStep::Alloc {
            name: name.clone(),
            elem: out_t,
            shape: host_shape,
            fill: Fill::Empty,
        });
        self.host.insert(name.clone(), HostBind::Array(ty));

        let mut seen: Vec<&Expr> = vec![&av.body];
        seen.extend(av.shape.iter());
        let vars = self.element_vars(nd, &seen);
        // vars[d] indexes dimension d of the input.
        let idx: Vec<Expr> = (0..nd).map(|d| var(&vars[d])).collect();
        let x = av.element(&idx);
        let acc = self.fresh("acc");
        // The operator and element of a plain reduction: what a block's
        // threads combine in the one-block-per-element kernel.
        let mut combined: Option<(RedOp, Expr)> = None;
        let (init, update, result): (Vec<Stmt>, Vec<Stmt>, Expr) = match op {
            AxisOp::ArgMax | AxisOp::ArgMin => {
                let best = self.fresh("best");
                let red = if op == AxisOp::ArgMax {
                    RedOp::Max
                } else {
                    RedOp::Min
                };
                let a = axes[0];
                (
                    vec![
                        let_(&best, av.elem, identity(red, av.elem)),
                        let_(&acc, ScalarType::I64, i64(0)),
                    ],
                    vec![if_(
                        arg_better(op, x.clone(), var(&best), av.elem),
                        vec![assign(&best, x.clone()), assign(&acc, var(&vars[a]))],
                        vec![],
                    )],
                    var(&acc),
                )
            }
            _ => {
                let (red, elem) = match op {
                    AxisOp::Any => (
                        RedOp::Max,
                        cast(
                            ScalarType::I64,
                            crate::numpy::math_calls::truthy(x.clone(), av.elem),
                        ),
                    ),
                    AxisOp::All => (
                        RedOp::Min,
                        cast(
                            ScalarType::I64,
                            crate::numpy::math_calls::truthy(x.clone(), av.elem),
                        ),
                    ),
                    AxisOp::Plain(p) => (p.op(), cast_to(x.clone(), av.elem, acc_t)),
                    _ => unreachable!("handled above"),
                };
                let result = match op {
                    AxisOp::Plain(Reduce::Mean) => {
                        let count = axes
                            .iter()
                            .map(|&a| av.shape[a].clone())
                            .reduce(mul)
                            .expect("an axis");
                        div(var(&acc), cast(acc_t, count))
                    }
                    AxisOp::Any | AxisOp::All => cmp(CmpOp::Ne, var(&acc), i64(0)),
                    _ => var(&acc),
                };
                combined = Some((red, elem.clone()));
                (
                    vec![let_(&acc, acc_t, identity(red, acc_t))],
                    vec![assign(&acc, combine(red, var(&acc), elem))],
                    result,
                )
            }
        };
        let red_extent = axes
            .iter()
            .map(|&a| av.shape[a].clone())
            .reduce(mul)
            .expect("an axis");
        // One block per result element when the reduced axes end with the
        // input's last one: a block's threads then read consecutive
        // elements (coalesced), and a result of few elements (batch norm's
        // 32 channels) still fills the device. Otherwise, or when the
        // reduced extent is small, one thread per result element.
        let block = match combined {
            Some(c) if axes.contains(&(nd - 1)) => match const_int(&red_extent) {
                Some(k) if k < BLOCK_MIN_EXTENT => None,
                _ => Some(c),
            },
            _ => None,
        };
        if block.is_some() {
            // Both launches rely on the same shape facts: checked once,
            // before the choice.
            self.flush_guards();
        }
        // Whether the block kernel alone serves: the reduced extent is a
        // constant large enough. Else both, chosen on the host.
        let block_only = block.is_some() && const_int(&red_extent).is_some();
        let fname = self.fn_name.clone();
        let axes_txt = axes
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mut per_thread = Vec::new();
        if !block_only {
            let mark = self.steps.len();
            let (pfor, launch) = self.thread_per_element(
                &name,
                &vars,
                &out_dims,
                &av.shape,
                axes,
                (init, update, result.clone()),
            );
            let kname = self.kernel_name(&name);
            self.add_kernel(
                kname,
                vec![pfor],
                vec![],
                launch,
                format!(
                    "Line {line} of `{fname}`: `{}` along axis {axes_txt}.",
                    op.word()
                ),
            )?;
            if block.is_some() {
                per_thread = self.steps.split_off(mark);
            }
        }
        let how = match (&block, block_only) {
            (None, _) => "one thread per result element".to_string(),
            (Some(_), true) => "one block per result element".to_string(),
            (Some(_), false) => format!(
                "one block per result element when the reduced extent is {BLOCK_MIN_EXTENT} or more, else one thread each"
            ),
        };
        self.log.applied(
            NAME,
            format!(
                "`{}` along axis {axes_txt} at line {line}: {how}",
                op.word()
            ),
        );
        if let Some((red, elem)) = block {
            let mark = self.steps.len();
            let spec = BlockReduction {
                out: &name,
                acc: &acc,
                acc_t,
                red,
                elem,
                result,
                vars: &vars,
                out_dims: &out_dims,
                axes,
                shape: &av.shape,
            };
            let kname = self.kernel_name(&format!("{name}_blocks"));
            let (body, shared) = self.block_per_element(&spec);
            let n_out = out_shape
                .iter()
                .cloned()
                .reduce(mul)
                .expect("a result dimension");
            self.add_kernel(
                kname,
                body,
                shared,
                LaunchShape::Blocks { n: n_out },
                format!(
                    "Line {line} of `{fname}`: `{}` along axis {axes_txt}, one block per result element.",
                    op.word()
                ),
            )?;
            if !block_only {
                let mut per_block = self.steps.split_off(mark);
                per_block.insert(
                    0,
                    HostStep::Comment(format!(
                        "`{}` along axis {axes_txt} (line {line}): {}",
                        op.word(),
                        crate::plan::BLOCK_CHOICE
                    )),
                );
                let cond = cmp(CmpOp::Ge, self.hostify(red_extent), i64(BLOCK_MIN_EXTENT));
                self.steps.push(HostStep::If {
                    cond,
                    then: per_block,
                    orelse: per_thread,
                });
            }
        }
        let named = ArrVal::named(&name, ty);
        if !keepdims {
            return Ok(Val::Array(named));
        }
        let mut shape = Vec::new();
        let mut idx = Vec::new();
        for d in 0..nd {
            if axes.contains(&d) {
                shape.push(i64(1));
            } else {
                shape.push(av.shape[d].clone());
                idx.push(var(&ph(d)));
            }
        }
        Ok(Val::Array(ArrVal {
            shape,
            elem: out_t,
            body: load(&name, idx),
            computed: false,
        }))
    }
}

/// A reduced extent below which one thread per result element is kept: a
/// block of [`THREADS_REDUCE`] threads over fewer elements would leave
/// most of them idle.
pub const BLOCK_MIN_EXTENT: i64 = 64;

/// What [`Lowerer::block_per_element`] builds a kernel from.
struct BlockReduction<'a> {
    /// The result array, and the accumulator's name and type.
    out: &'a str,
    acc: &'a str,
    acc_t: ScalarType,
    red: RedOp,
    /// The element combined, in terms of `vars`.
    elem: Expr,
    /// The result element, in terms of `acc` holding the block's total.
    result: Expr,
    /// `vars[d]` indexes dimension `d` of the input.
    vars: &'a [String],
    out_dims: &'a [usize],
    axes: &'a [usize],
    shape: &'a [Expr],
}

/// The value of an integer constant extent.
fn const_int(e: &Expr) -> Option<i64> {
    use port_codegen::ir::{BinOp, Literal};
    match e {
        Expr::Lit(Literal::I64(k)) => Some(*k),
        Expr::Lit(Literal::I32(k)) => Some(i64::from(*k)),
        Expr::Binary(BinOp::Mul, a, b) => const_int(a)?.checked_mul(const_int(b)?),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The kernel of a reduction along axes with one thread per result
    /// element, each looping over the reduced axes: `init`, then `update`
    /// in the loops, then the result element stored.
    fn thread_per_element(
        &mut self,
        name: &str,
        vars: &[String],
        out_dims: &[usize],
        shape: &[Expr],
        axes: &[usize],
        (init, update, result): (Vec<Stmt>, Vec<Stmt>, Expr),
    ) -> (Stmt, LaunchShape) {
        let ovars: Vec<String> = out_dims.iter().map(|&d| vars[d].clone()).collect();
        let out_shape: Vec<Expr> = out_dims.iter().map(|&d| shape[d].clone()).collect();
        let mut loop_body = update;
        for &a in axes.iter().rev() {
            loop_body = vec![for_range(
                &vars[a],
                i64(0),
                shape[a].clone(),
                i64(1),
                loop_body,
            )];
        }
        let mut inner = init;
        inner.extend(loop_body);
        inner.push(Stmt::Store {
            target: port_codegen::ir::ElemRef {
                array: name.to_string(),
                indices: ovars.iter().map(|v| var(v)).collect(),
            },
            value: result,
        });
        self.element_grid(&ovars, &out_shape, inner)
    }

    /// The kernel of a reduction along axes with one block per result
    /// element: the blocks stride over the result's flat index, the
    /// threads of a block over the reduced elements' flat index, and a
    /// tree in shared memory combines the threads' partials; thread 0
    /// stores the result.
    fn block_per_element(&self, b: &BlockReduction<'_>) -> (Vec<Stmt>, Vec<SharedArray>) {
        let mut seen: Vec<&Expr> = vec![&b.elem, &b.result];
        seen.extend(b.shape.iter());
        let mut taken = super::whole_reduction::names_in(&seen);
        taken.extend(b.vars.iter().cloned());
        taken.insert(b.out.to_string());
        taken.insert(b.acc.to_string());
        let mut fresh = |base: &str| {
            let n = self.local_name(base, &taken);
            taken.insert(n.clone());
            n
        };
        let (tid, item, at, tree, stride) = (
            fresh("tid"),
            fresh("item"),
            fresh("at"),
            fresh("partials"),
            fresh("stride"),
        );
        let out_vars: Vec<&String> = b.out_dims.iter().map(|&d| &b.vars[d]).collect();
        let out_shape: Vec<Expr> = b.out_dims.iter().map(|&d| b.shape[d].clone()).collect();
        let red_vars: Vec<&String> = b.axes.iter().map(|&d| &b.vars[d]).collect();
        let red_shape: Vec<Expr> = b.axes.iter().map(|&d| b.shape[d].clone()).collect();
        let n_out = out_shape
            .iter()
            .cloned()
            .reduce(mul)
            .expect("a result dimension");
        let n_red = red_shape.iter().cloned().reduce(mul).expect("an axis");
        let i64_of = |s: Special| cast(ScalarType::I64, special(s, Axis::X));

        let mut per_thread = unflatten(&at, &red_vars, &red_shape);
        per_thread.push(assign(b.acc, combine(b.red, var(b.acc), b.elem.clone())));
        let mut per_item = unflatten(&item, &out_vars, &out_shape);
        per_item.push(let_(b.acc, b.acc_t, identity(b.red, b.acc_t)));
        per_item.push(for_range(
            &at,
            i64_of(Special::ThreadIdx),
            n_red,
            i64_of(Special::BlockDim),
            per_thread,
        ));
        let spec = super::whole_reduction::RedSpec {
            partial: b.acc.to_string(),
            op: b.red,
            ty: b.acc_t,
            acc: String::new(),
            init: identity(b.red, b.acc_t),
            checked: false,
        };
        per_item.extend(self.block_tree(
            std::slice::from_ref(&spec),
            std::slice::from_ref(&tree),
            &tid,
            &stride,
        ));
        per_item.push(if_(
            cmp(CmpOp::Eq, var(&tid), i32(0)),
            vec![
                assign(b.acc, load(&tree, vec![i32(0)])),
                store(
                    b.out,
                    out_vars.iter().map(|v| var(v)).collect(),
                    b.result.clone(),
                ),
            ],
            vec![],
        ));
        // The tree is refilled by the next element's partials.
        per_item.push(Stmt::Barrier);
        let body = vec![
            let_(&tid, ScalarType::I32, special(Special::ThreadIdx, Axis::X)),
            for_range(
                &item,
                i64_of(Special::BlockIdx),
                n_out,
                i64_of(Special::GridDim),
                per_item,
            ),
        ];
        let shared = vec![SharedArray {
            name: tree,
            elem: b.acc_t,
            shape: vec![THREADS_REDUCE],
        }];
        (body, shared)
    }
}

impl Lowerer<'_> {
    /// `a @ b` (`np.matmul`, `np.dot` of matrices): the product broadcast
    /// over a new axis, summed along it by one thread per result element —
    /// `a[:, :, None] * b[None, :, :]` summed over axis 1.
    pub(crate) fn matmul(&mut self, r: &mut Region, a: Val, b: Val, line: u32) -> Lower<Val> {
        let (Val::Array(x), Val::Array(y)) = (&a, &b) else {
            return refuse(
                NAME,
                line,
                "matmul: input operand does not have enough dimensions (NumPy raises for a scalar)",
            );
        };
        let (m, n) = (x.ndim(), y.ndim());
        if (m > 2 || n > 2) && (m < 2 || n < 2) {
            return refuse(
                NAME,
                line,
                format!("`@` of a {m}-D by a {n}-D array (a batched matmul with a vector) is not supported yet"),
            );
        }
        if m == 1 && n == 1 {
            let pairs = crate::numpy::extents::broadcast_pairs(&[x, y]);
            self.assume_equal(Some(r), pairs, line, crate::numpy::extents::MATMUL)?;
            let prod = self.binop(ast::Operator::Mult, &a, &b, line)?;
            return self.reduce(r, Reduce::Sum, prod, line);
        }
        if r.kind != RegionKind::Host {
            return refuse(
                NAME,
                line,
                "`@` of matrices inside a loop: move it out of the loop",
            );
        }
        if m == 2 && n == 2 {
            if let Some(v) = self.matmul_library(x, y, line)? {
                return Ok(v);
            }
        }
        // The product broadcast over the summed axis `k`:
        // (rows, k, 1) * (1, k, cols), (rows, k) * (1, k) or (k, 1) * (k, cols).
        // Batched (NumPy's stacks of matrices in the last two dimensions,
        // the leading ones broadcast): (..., rows, k, 1) * (..., 1, k, cols),
        // summed over k.
        let (l, rr, axis) = match (m, n) {
            _ if m > 2 || n > 2 => (with_unit_dim(x, m), with_unit_dim(y, n - 2), m.max(n) - 1),
            (2, 2) => (with_unit_dim(x, 2), with_unit_dim(y, 0), 1),
            (2, 1) => (x.clone(), with_unit_dim(y, 0), 1),
            _ => (with_unit_dim(x, 1), y.clone(), 0),
        };
        let pairs = crate::numpy::extents::broadcast_pairs(&[&l, &rr]);
        self.assume_equal(Some(r), pairs, line, crate::numpy::extents::MATMUL)?;
        let prod = self.binop(ast::Operator::Mult, &Val::Array(l), &Val::Array(rr), line)?;
        let Val::Array(prod) = prod else {
            unreachable!("a product of arrays")
        };
        self.log.applied(
            NAME,
            format!("`@` at line {line}: one thread per result element, a dot product each (no cuBLAS yet)"),
        );
        self.axis_kernel(
            AxisOp::Plain(Reduce::Sum),
            &prod,
            &[axis],
            false,
            "matmul",
            line,
        )
    }

    /// `a @ b` of two float matrices as a library step (cuBLAS's gemm on a
    /// GPU): each operand a device array as it is, or its transpose (a
    /// flag of the step, no copy), else stored into one first by a kernel.
    /// Integer, boolean and complex products stay port's kernel (`None`).
    fn matmul_library(&mut self, x: &ArrVal, y: &ArrVal, line: u32) -> Lower<Option<Val>> {
        use crate::lower::context::{whole_array, HostBind, Recurse};
        use crate::plan::{LibraryCall, LibraryOp};
        let float = |t: ScalarType| matches!(t, ScalarType::F32 | ScalarType::F64);
        if !float(x.elem) || !float(y.elem) {
            return Ok(None);
        }
        let t = if x.elem == ScalarType::F32 && y.elem == ScalarType::F32 {
            ScalarType::F32
        } else {
            ScalarType::F64
        };
        let pairs = vec![(x.shape[1].clone(), y.shape[0].clone())];
        self.assume_equal(None, pairs, line, crate::numpy::extents::MATMUL)?;
        // A device array of its own, plain or transposed, of type `t`.
        let operand = |me: &mut Self, v: &ArrVal, hint: &str| -> Lower<(String, bool)> {
            let stored = |n: &str| {
                matches!(me.host.get(n), Some(HostBind::Array(_)))
                    || me.params.iter().any(|(p, ty)| p == n && ty.is_array())
            };
            if v.elem == t {
                if let Some(n) = whole_array(v).filter(|n| stored(n)) {
                    return Ok((n, false));
                }
                if let Some(n) = transposed_whole(v).filter(|n| stored(n)) {
                    return Ok((n, true));
                }
            }
            let from = v.elem;
            let converted = if from == t {
                v.clone()
            } else {
                v.map(t, |e| cast_to(e, from, t))
            };
            Ok((me.materialise(hint, &converted, line)?, false))
        };
        let (a, ta) = operand(self, x, "matmul_a")?;
        let (b, tb) = operand(self, y, "matmul_b")?;
        let out = self.fresh("product");
        let shape: Vec<Expr> = vec![
            self.hostify(x.shape[0].clone()),
            self.hostify(y.shape[1].clone()),
        ];
        let ty = ArrayType {
            elem: t,
            ndim: 2,
            contiguous: true,
        };
        self.steps.push(HostStep::Alloc {
            name: out.clone(),
            elem: t,
            shape,
            fill: Fill::Empty,
        });
        self.host.insert(out.clone(), HostBind::Array(ty));
        self.flush_guards();
        self.steps.push(HostStep::Library(LibraryCall {
            op: LibraryOp::Matmul { ta, tb },
            args: vec![a, b],
            out: out.clone(),
            line,
        }));
        self.log.applied(
            NAME,
            format!(
                "`@` at line {line}: a library step (cuBLAS's gemm on a GPU{}; CuPy in the emitted wrapper)",
                if ta || tb { ", a transposed operand read in place" } else { "" }
            ),
        );
        Ok(Some(Val::Array(ArrVal::named(&out, ty))))
    }

    /// `np.linalg.norm(x, axis=…, keepdims=…)` with the default `ord`:
    /// the 2-norm of vectors, the Frobenius norm of matrices, both
    /// `sqrt(sum(x * x))` over the axes. Other orders are refused.
    pub(crate) fn linalg_norm(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        let Some(first) = c.args.first() else {
            return refuse(NAME, line, "`np.linalg.norm` needs an array");
        };
        let is_none = |e: &ast::Expr| matches!(e, ast::Expr::Constant(k) if matches!(k.value, ast::Constant::None));
        let ord = c.args.get(1).or_else(|| {
            c.keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "ord"))
                .map(|k| &k.value)
        });
        if ord.is_some_and(|o| !is_none(o)) || c.args.len() > 2 {
            return refuse(
                NAME,
                line,
                format!(
                    "`{}`: only the default order of `np.linalg.norm` (2-norm of a vector, Frobenius of a matrix) is supported",
                    self.src.text_of(c)
                ),
            );
        }
        let mut rest = c.clone();
        rest.args.truncate(1);
        rest.keywords
            .retain(|k| k.arg.as_ref().is_none_or(|a| a.as_str() != "ord"));
        let v = self.expr(r, first)?;
        let nd = match &v {
            Val::Array(a) => a.ndim(),
            _ => 0,
        };
        let sum = AxisOp::Plain(Reduce::Sum);
        let args = self.reduction_args(&rest, 1, nd, sum, line)?;
        if args.dtype.is_some() {
            return refuse(
                NAME,
                line,
                "`np.linalg.norm` takes no `dtype=` (NumPy raises)",
            );
        }
        let squares = self.binop(ast::Operator::Mult, &v, &v, line)?;
        let hint = crate::pyast::subscript_base(first).unwrap_or_else(|| "norm".into());
        let total = self.reduce_with(r, sum, squares, args, &hint, line)?;
        self.log.applied(
            NAME,
            format!("`np.linalg.norm` as `sqrt(sum(x * x))` (line {line})"),
        );
        crate::numpy::math_calls::call("numpy.sqrt", &[total])
            .map_or_else(|| refuse(NAME, line, "`np.linalg.norm` of this value"), Ok)
    }

    /// `np.outer(a, b)`: `a.ravel()[:, None] * b.ravel()[None, :]`, a template.
    pub(crate) fn outer(&mut self, a: Val, b: Val, line: u32) -> Lower<Val> {
        let (Val::Array(x), Val::Array(y)) = (&a, &b) else {
            return self.binop(ast::Operator::Mult, &a, &b, line);
        };
        if x.ndim() != 1 || y.ndim() != 1 {
            return refuse(NAME, line, "`np.outer` of arrays that are not vectors");
        }
        self.binop(
            ast::Operator::Mult,
            &Val::Array(with_unit_dim(x, 1)),
            &Val::Array(with_unit_dim(y, 0)),
            line,
        )
    }
}

/// The array `v` is the transpose of (`a.T` of a 2-D array `a`).
fn transposed_whole(v: &ArrVal) -> Option<String> {
    if v.computed || v.ndim() != 2 {
        return None;
    }
    let Expr::Load(r) = &v.body else {
        return None;
    };
    let named = ArrVal::named(
        &r.array,
        ArrayType {
            elem: v.elem,
            ndim: 2,
            contiguous: true,
        },
    );
    let t = named.reindexed(
        vec![named.shape[1].clone(), named.shape[0].clone()],
        &[var(&ph(1)), var(&ph(0))],
    );
    (t.body == v.body && t.shape == v.shape).then(|| r.array.clone())
}

/// `v` with a new dimension of extent 1 inserted at position `at`
/// (`v[:, None]` for `at = 1`).
fn with_unit_dim(v: &ArrVal, at: usize) -> ArrVal {
    // Old dimension k is new dimension k (before `at`) or k + 1 (after).
    let idx: Vec<Expr> = (0..v.ndim())
        .map(|k| var(&ph(if k < at { k } else { k + 1 })))
        .collect();
    let mut shape = v.shape.clone();
    shape.insert(at, i64(1));
    v.reindexed(shape, &idx)
}

/// Whether `x` takes the place of `best` in `np.argmin`/`np.argmax`: it is
/// smaller (larger), the first of equals staying; a NaN wins over a number,
/// and the first NaN stays, as NumPy returns the first NaN's index.
fn arg_better(op: AxisOp, x: Expr, best: Expr, elem: ScalarType) -> Expr {
    let cmpop = if op == AxisOp::ArgMax {
        CmpOp::Gt
    } else {
        CmpOp::Lt
    };
    let better = cmp(cmpop, x.clone(), best.clone());
    if !elem.is_float() {
        return better;
    }
    let nan = |e: Expr| cmp(CmpOp::Ne, e.clone(), e);
    binary(
        port_codegen::ir::BinOp::Or,
        better,
        binary(
            port_codegen::ir::BinOp::And,
            nan(x),
            cmp(CmpOp::Eq, best.clone(), best),
        ),
    )
}
