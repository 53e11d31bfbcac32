//! Array creation and shape operations as element templates (part of
//! **array_expr**): `np.zeros/ones/full/empty(_like)` inside an
//! expression, `np.arange`, `np.linspace`, `np.eye`, `np.ogrid[…]` and
//! `np.mgrid[…]`, and the views
//! `reshape`/`ravel`/`flatten`, `np.flip`, `np.swapaxes`, `transpose`. A
//! template costs nothing until it is stored: `np.arange(n) * dx` is one
//! element kernel, not an allocation and a multiplication.

use port_codegen::ir::build::*;
use port_codegen::ir::{BinOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, select};
use crate::lower::context::{Lowerer, Recurse, Region};
use crate::numpy::array_expr::{self, ph, ArrVal, Val};
use crate::source::SourceFile;
use crate::types::scalar_from_name;

/// A dtype argument: `np.float64`, `float`, `'float32'`, `np.int32`.
pub fn dtype_of(src: &SourceFile, e: &ast::Expr) -> Option<ScalarType> {
    if let ast::Expr::Constant(c) = e {
        if let ast::Constant::Str(s) = &c.value {
            return scalar_from_name(s);
        }
    }
    let name = src.resolve(e)?;
    let short = name.rsplit('.').next()?;
    match short {
        "float" => Some(ScalarType::F64),
        "int" => Some(ScalarType::I64),
        "bool" => Some(ScalarType::Bool),
        other => scalar_from_name(other),
    }
}

/// `x` of the built-in `type(x)` (not a function of the file named `type`).
pub fn type_of_call<'e>(src: &SourceFile, e: &'e ast::Expr) -> Option<&'e ast::Expr> {
    let ast::Expr::Call(c) = e else { return None };
    match (c.args.as_slice(), c.keywords.is_empty()) {
        ([x], true)
            if src.resolve(&c.func).as_deref() == Some("type")
                && src.module_function("type").is_none() =>
        {
            Some(x)
        }
        _ => None,
    }
}

impl Lowerer<'_> {
    /// A shape argument: an integer, or a tuple or list of integers.
    pub(crate) fn shape_arg(
        &mut self,
        r: &mut Region,
        e: &ast::Expr,
        line: u32,
    ) -> Lower<Vec<Expr>> {
        let items: Vec<Val> = match e {
            ast::Expr::List(l) => {
                let mut v = Vec::new();
                for x in &l.elts {
                    v.push(self.expr(r, x)?);
                }
                v
            }
            _ => match self.expr(r, e)? {
                Val::Tuple(t) => t,
                one => vec![one],
            },
        };
        let mut out = Vec::new();
        for it in items {
            match it {
                Val::Scalar(x, t, _) if t.is_int() => out.push(cast_to(x, t, ScalarType::I64)),
                _ => return refuse(array_expr::NAME, line, "a shape must be integers"),
            }
        }
        crate::error::check_rank(array_expr::NAME, line, out.len())?;
        Ok(out)
    }

    /// A dtype: a name (`np.float32`, `"int64"`) or another array's
    /// (`x.dtype`).
    pub(crate) fn dtype_value(&mut self, r: &mut Region, e: &ast::Expr) -> Option<ScalarType> {
        if let Some(t) = dtype_of(self.src, e) {
            return Some(t);
        }
        if let ast::Expr::Attribute(a) = e {
            if a.attr.as_str() == "dtype" {
                if let Ok(Val::Array(av)) = self.expr(r, &a.value) {
                    return Some(av.elem);
                }
            }
        }
        // `type(p)` of a number: its type (`np.empty(n, type(p))`).
        if let Some(x) = type_of_call(self.src, e) {
            if let Ok(Val::Scalar(_, t, _)) = self.expr(r, x) {
                return Some(t);
            }
        }
        None
    }

    /// `dtype=` of a creation call, if given.
    fn dtype_kw(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<ScalarType>> {
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("dtype") => {
                    return match self.dtype_value(r, &k.value) {
                        Some(t) => Ok(Some(t)),
                        None => refuse(
                            array_expr::NAME,
                            line,
                            format!("dtype `{}` is not supported", self.src.text_of(&k.value)),
                        ),
                    }
                }
                Some("order") => {}
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{}`: unsupported keyword argument", self.src.text_of(c)),
                    )
                }
            }
        }
        Ok(None)
    }

    /// A creation or shape function of NumPy at host level, as a template;
    /// `None` when `name` is not one.
    pub(crate) fn creation_call(
        &mut self,
        r: &mut Region,
        name: &str,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<Val>> {
        let short = name.strip_prefix("numpy.").unwrap_or(name);
        let filled = |shape: Vec<Expr>, elem: ScalarType, v: Expr| {
            Val::Array(ArrVal {
                shape,
                elem,
                body: v,
                computed: true,
            })
        };
        let out = match short {
            // `np.ndarray(shape, dtype=…)` is `np.empty` for what it allocates.
            "zeros" | "ones" | "empty" | "ndarray" | "full" => {
                let Some(first) = c.args.first() else {
                    return refuse(array_expr::NAME, line, format!("`{short}` needs a shape"));
                };
                let shape = self.shape_arg(r, first, line)?;
                let mut dtype = self.dtype_kw(r, c, line)?;
                let value = if short == "full" {
                    let Some(v) = c.args.get(1) else {
                        return refuse(array_expr::NAME, line, "`full` needs a fill value");
                    };
                    match self.expr(r, v)? {
                        Val::Scalar(e, t, _) => {
                            let t = *dtype.get_or_insert(t);
                            Some((e, t))
                        }
                        _ => {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "the fill value must be a number",
                            )
                        }
                    }
                } else {
                    None
                };
                let elem = dtype.unwrap_or(ScalarType::F64);
                let v = match (short, value) {
                    ("ones", _) => crate::ir_util::lit(elem, 1.0),
                    (_, Some((e, t))) => cast_to(e, t, elem),
                    _ => crate::ir_util::lit(elem, 0.0),
                };
                filled(shape, elem, v)
            }
            "zeros_like" | "ones_like" | "empty_like" | "full_like" => {
                let Some(Val::Array(like)) = c.args.first().map(|a| self.expr(r, a)).transpose()?
                else {
                    return refuse(array_expr::NAME, line, format!("`{short}` needs an array"));
                };
                let elem = self.dtype_kw(r, c, line)?.unwrap_or(like.elem);
                let v = if short == "full_like" {
                    match c.args.get(1).map(|a| self.expr(r, a)).transpose()? {
                        Some(Val::Scalar(e, t, _)) => cast_to(e, t, elem),
                        _ => {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "the fill value must be a number",
                            )
                        }
                    }
                } else {
                    crate::ir_util::lit(elem, if short == "ones_like" { 1.0 } else { 0.0 })
                };
                filled(like.shape.clone(), elem, v)
            }
            "arange" => {
                let mut ints = Vec::new();
                for a in &c.args {
                    match self.expr(r, a)? {
                        Val::Scalar(e, t, _) => ints.push((e, t)),
                        _ => return refuse(array_expr::NAME, line, "`arange` of arrays"),
                    }
                }
                let dtype = self.dtype_kw(r, c, line)?;
                let any_float = ints.iter().any(|(_, t)| t.is_float());
                let t = dtype.unwrap_or(if any_float {
                    ScalarType::F64
                } else {
                    ScalarType::I64
                });
                let (start, stop, step) = match ints.len() {
                    1 => (i64(0), ints[0].0.clone(), i64(1)),
                    2 => (ints[0].0.clone(), ints[1].0.clone(), i64(1)),
                    3 => (ints[0].0.clone(), ints[1].0.clone(), ints[2].0.clone()),
                    _ => return refuse(array_expr::NAME, line, "`arange` takes 1 to 3 arguments"),
                };
                if any_float && t != ScalarType::F64 {
                    // NumPy fills in the dtype itself (its own rounding).
                    return refuse(
                        array_expr::NAME,
                        line,
                        "`np.arange` with float bounds and a `dtype=` other than float64",
                    );
                } else if any_float {
                    // As NumPy computes it: the length is
                    // ceil((stop - start) / step) in float64; element 0 is
                    // `start`, element 1 `start + step`, and element k
                    // `start + k * delta` with delta = (start + step) - start.
                    let f = |k: usize| {
                        let (e, t) = &ints[k];
                        cast_to(e.clone(), *t, ScalarType::F64)
                    };
                    let (start, stop, step) = match ints.len() {
                        1 => (
                            crate::ir_util::lit(ScalarType::F64, 0.0),
                            f(0),
                            crate::ir_util::lit(ScalarType::F64, 1.0),
                        ),
                        2 => (f(0), f(1), crate::ir_util::lit(ScalarType::F64, 1.0)),
                        _ => (f(0), f(1), f(2)),
                    };
                    let len = array_expr::nonneg(cast(
                        ScalarType::I64,
                        math(
                            port_codegen::ir::MathFn::Ceil,
                            vec![div(sub(stop, start.clone()), step.clone())],
                        ),
                    ));
                    let second = add(start.clone(), step);
                    let delta = sub(second.clone(), start.clone());
                    let k = var(&ph(0));
                    let v = select(
                        cmp(port_codegen::ir::CmpOp::Eq, k.clone(), i64(0)),
                        start.clone(),
                        select(
                            cmp(port_codegen::ir::CmpOp::Eq, k.clone(), i64(1)),
                            second,
                            add(start, mul(cast(ScalarType::F64, k), delta)),
                        ),
                    );
                    filled(vec![len], t, cast_to(v, ScalarType::F64, t))
                } else {
                    let step_i = step.clone();
                    // len = max(0, ceil((stop - start) / step)), for either sign of step.
                    let sign = select(
                        cmp(port_codegen::ir::CmpOp::Gt, step_i.clone(), i64(0)),
                        i64(1),
                        i64(-1),
                    );
                    let len = array_expr::nonneg(binary(
                        BinOp::FloorDiv,
                        sub(add(sub(stop, start.clone()), step_i.clone()), sign),
                        step_i.clone(),
                    ));
                    let len = array_expr::tidy(&len);
                    let v = add(start, mul(var(&ph(0)), step_i));
                    filled(vec![len], t, cast_to(v, ScalarType::I64, t))
                }
            }
            "linspace" => {
                if c.args.len() != 3 {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "`linspace(start, stop, num)` with three arguments",
                    );
                }
                let mut v = Vec::new();
                for a in &c.args {
                    match self.expr(r, a)? {
                        Val::Scalar(e, t, _) => v.push((e, t)),
                        _ => return refuse(array_expr::NAME, line, "`linspace` of arrays"),
                    }
                }
                let t = self.dtype_kw(r, c, line)?.unwrap_or(ScalarType::F64);
                let f = |(e, t0): &(Expr, ScalarType)| cast_to(e.clone(), *t0, ScalarType::F64);
                let (a, b) = (f(&v[0]), f(&v[1]));
                let n = cast_to(v[2].0.clone(), v[2].1, ScalarType::I64);
                // NumPy: start + k * (stop - start) / (num - 1); the last is stop.
                let k = cast(ScalarType::F64, var(&ph(0)));
                let denom = cast(
                    ScalarType::F64,
                    binary(BinOp::Max, sub(n.clone(), i64(1)), i64(1)),
                );
                let x = add(a, div(mul(k, sub(b.clone(), f(&v[0]))), denom));
                let last = cmp(
                    port_codegen::ir::CmpOp::Eq,
                    var(&ph(0)),
                    sub(n.clone(), i64(1)),
                );
                let x = select(
                    binary(
                        BinOp::And,
                        last,
                        cmp(port_codegen::ir::CmpOp::Gt, n.clone(), i64(1)),
                    ),
                    b,
                    x,
                );
                filled(vec![n], t, cast_to(x, ScalarType::F64, t))
            }
            "eye" | "identity" => {
                let Some(Val::Scalar(n, nt, _)) =
                    c.args.first().map(|a| self.expr(r, a)).transpose()?
                else {
                    return refuse(array_expr::NAME, line, format!("`{short}` needs a size"));
                };
                if c.args.len() > 1 {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{short}` with more than a size"),
                    );
                }
                let n = cast_to(n, nt, ScalarType::I64);
                let t = self.dtype_kw(r, c, line)?.unwrap_or(ScalarType::F64);
                let one = cmp(port_codegen::ir::CmpOp::Eq, var(&ph(0)), var(&ph(1)));
                filled(vec![n.clone(), n], t, cast_to(one, ScalarType::Bool, t))
            }
            "hstack" | "vstack" | "concatenate" | "column_stack" => {
                return self.joined(r, short, c, line).map(Some)
            }
            "pad" => return self.padded(r, c, line).map(Some),
            "triu" | "tril" => {
                let Some(Val::Array(av)) = c.args.first().map(|a| self.expr(r, a)).transpose()?
                else {
                    return refuse(array_expr::NAME, line, format!("`{short}` needs an array"));
                };
                let k = match c.args.get(1).or(c.keywords.first().map(|k| &k.value)) {
                    None => 0,
                    Some(e) => match self.src.eval_const(e) {
                        Some(crate::source::Const::Int(k)) => k,
                        _ => {
                            return refuse(
                                array_expr::NAME,
                                line,
                                format!("`{short}`: the diagonal must be an integer constant"),
                            )
                        }
                    },
                };
                let n = av.ndim();
                if n < 2 {
                    return refuse(array_expr::NAME, line, format!("`{short}` of a 1-D array"));
                }
                // triu keeps column - row >= k, tril column - row <= k.
                let d = sub(var(&ph(n - 1)), var(&ph(n - 2)));
                let op = if short == "triu" {
                    port_codegen::ir::CmpOp::Ge
                } else {
                    port_codegen::ir::CmpOp::Le
                };
                let keep = cmp(op, d, i64(k));
                let zero = crate::ir_util::lit(av.elem, 0.0);
                Val::Array(av.map(av.elem, |x| select(keep, x, zero)))
            }
            "reshape" | "ravel" | "flip" | "swapaxes" | "transpose" => {
                let Some(first) = c.args.first() else {
                    return refuse(array_expr::NAME, line, format!("`{short}` needs an array"));
                };
                let av = match self.expr(r, first)? {
                    Val::Array(av) => av,
                    // NumPy's ravel of a number: an array of that one element.
                    Val::Scalar(e, t, _) if short == "ravel" && c.args.len() == 1 => {
                        return Ok(Some(filled(vec![i64(1)], t, e)));
                    }
                    _ => return refuse(array_expr::NAME, line, format!("`{short}` of a scalar")),
                };
                let rest = &c.args[1..];
                return self.shape_method(r, &av, short, rest, c, line).map(Some);
            }
            _ => return Ok(None),
        };
        self.log.applied(
            array_expr::NAME,
            format!("`np.{short}` as an element template (line {line})"),
        );
        Ok(Some(out))
    }

    /// `reshape`, `ravel`/`flatten`, `flip`, `swapaxes`, `transpose` of an
    /// array value, as views of its template.
    pub(crate) fn shape_method(
        &mut self,
        r: &mut Region,
        av: &ArrVal,
        method: &str,
        args: &[ast::Expr],
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        let axis_of = |this: &Self, e: &ast::Expr| -> Lower<usize> {
            match this.src.eval_const(e) {
                Some(crate::source::Const::Int(a)) => {
                    let n = av.ndim() as i64;
                    let a = if a < 0 { a + n } else { a };
                    if (0..n).contains(&a) {
                        Ok(a as usize)
                    } else {
                        refuse(array_expr::NAME, line, format!("axis {a} is out of bounds"))
                    }
                }
                _ => refuse(
                    array_expr::NAME,
                    line,
                    "an axis must be an integer constant",
                ),
            }
        };
        // Keywords name what would be positional (`axes=`, `newshape=`,
        // `axis=`); `order='C'` is the only order; anything else is refused
        // rather than ignored.
        let mut all: Vec<ast::Expr> = args.to_vec();
        for k in &c.keywords {
            let name = k.arg.as_ref().map(|a| a.as_str()).unwrap_or("**");
            match (method, name) {
                ("transpose", "axes")
                | ("reshape", "newshape" | "shape")
                | ("flip", "axis")
                | ("swapaxes", "axis1" | "axis2") => all.push(k.value.clone()),
                (_, "order")
                    if matches!(&k.value, ast::Expr::Constant(s)
                        if matches!(&s.value, ast::Constant::Str(o) if o == "C")) => {}
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{method}`: keyword `{name}` is not supported"),
                    )
                }
            }
        }
        let args = all.as_slice();
        let out = match method {
            "ravel" | "flatten" if args.is_empty() => reshape(av, vec![av.size()]),
            "reshape" => {
                let shape = match args {
                    [one] => self.shape_arg(r, one, line)?,
                    many => {
                        let mut v = Vec::new();
                        for a in many {
                            v.extend(self.shape_arg(r, a, line)?);
                        }
                        v
                    }
                };
                // One extent may be -1: what the others leave.
                let unknown: Vec<usize> = shape
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| is_minus_one(e))
                    .map(|(k, _)| k)
                    .collect();
                let mut shape = shape;
                // NumPy raises unless the new shape holds as many elements
                // as the array; a kernel would read outside it, or compute
                // on part of it.
                match unknown.as_slice() {
                    [] => {
                        let total = shape.iter().cloned().reduce(mul).unwrap_or(i64(1));
                        self.assume_equal(Some(r), vec![(total, av.size())], line, RESHAPE)?;
                    }
                    [k] => {
                        let others = shape
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| j != k)
                            .map(|(_, e)| e.clone())
                            .reduce(mul)
                            .unwrap_or(i64(1));
                        let fill = binary(BinOp::FloorDiv, av.size(), others.clone());
                        self.assume_equal(
                            Some(r),
                            vec![(mul(fill.clone(), others), av.size())],
                            line,
                            RESHAPE,
                        )?;
                        shape[*k] = fill;
                    }
                    _ => {
                        return refuse(
                            array_expr::NAME,
                            line,
                            "can only specify one unknown dimension",
                        )
                    }
                }
                reshape(av, shape)
            }
            "flip" => {
                let axes: Vec<usize> = match args.first() {
                    None => (0..av.ndim()).collect(),
                    Some(a) => vec![axis_of(self, a)?],
                };
                let idx: Vec<Expr> = (0..av.ndim())
                    .map(|k| {
                        if axes.contains(&k) {
                            sub(sub(av.shape[k].clone(), i64(1)), var(&ph(k)))
                        } else {
                            var(&ph(k))
                        }
                    })
                    .collect();
                ArrVal {
                    shape: av.shape.clone(),
                    elem: av.elem,
                    body: av.element(&idx),
                    computed: av.computed,
                }
            }
            "swapaxes" if args.len() == 2 => {
                let (a, b) = (axis_of(self, &args[0])?, axis_of(self, &args[1])?);
                let mut perm: Vec<usize> = (0..av.ndim()).collect();
                perm.swap(a, b);
                permute(av, &perm)
            }
            "transpose" => {
                let perm: Vec<usize> = if args.is_empty() {
                    (0..av.ndim()).rev().collect()
                } else {
                    let items: Vec<&ast::Expr> = match args {
                        [ast::Expr::Tuple(t)] => t.elts.iter().collect(),
                        many => many.iter().collect(),
                    };
                    let mut p = Vec::new();
                    for e in items {
                        p.push(axis_of(self, e)?);
                    }
                    p
                };
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..av.ndim()).collect::<Vec<_>>() {
                    return refuse(array_expr::NAME, line, "axes don't match array");
                }
                permute(av, &perm)
            }
            _ => {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`{}` is not supported", self.src.text_of(c)),
                )
            }
        };
        if out.ndim() > port_codegen::ir::MAX_DIMS as usize {
            crate::error::check_rank(array_expr::NAME, line, out.ndim())?;
        }
        self.log.applied(
            array_expr::NAME,
            format!("`{method}` as a view of the element template (line {line})"),
        );
        Ok(Val::Array(out))
    }
}

/// NumPy's phrase for a reshape to another number of elements.
const RESHAPE: &str = "cannot reshape the array into a shape of another size";

/// `av` read in C order as an array of `shape` (same number of elements).
pub(crate) fn reshape(av: &ArrVal, shape: Vec<Expr>) -> ArrVal {
    // The flat index of the new element, then the old indices from it.
    let mut flat = var(&ph(0));
    for (k, e) in shape.iter().enumerate().skip(1) {
        flat = add(mul(flat, e.clone()), var(&ph(k)));
    }
    let n = av.ndim();
    let mut idx = vec![i64(0); n];
    let mut rest = flat;
    for k in (0..n).rev() {
        if k == 0 {
            idx[0] = rest.clone();
        } else {
            idx[k] = binary(BinOp::Rem, rest.clone(), av.shape[k].clone());
            rest = binary(BinOp::FloorDiv, rest, av.shape[k].clone());
        }
    }
    av.reindexed(shape, &idx)
}

/// Dimension `k` of the result is dimension `perm[k]` of `av`.
fn permute(av: &ArrVal, perm: &[usize]) -> ArrVal {
    let mut idx = vec![i64(0); av.ndim()];
    for (k, &p) in perm.iter().enumerate() {
        idx[p] = var(&ph(k));
    }
    av.reindexed(perm.iter().map(|&p| av.shape[p].clone()).collect(), &idx)
}

/// `-1` as a shape item (a literal, or `-(1)` as the parser gives it).
fn is_minus_one(e: &Expr) -> bool {
    match e {
        Expr::Lit(port_codegen::ir::Literal::I64(-1)) => true,
        Expr::Unary(port_codegen::ir::UnaryOp::Neg, x) => {
            matches!(x.as_ref(), Expr::Lit(port_codegen::ir::Literal::I64(1)))
        }
        _ => false,
    }
}

/// One axis of `np.ogrid`/`np.mgrid`: its length, and its value at
/// position `k` (an `i64` expression) in the grid's type.
struct GridAxis {
    len: Expr,
    start: Expr,
    step: Expr,
}

impl GridAxis {
    fn at(&self, k: Expr, elem: ScalarType) -> Expr {
        array_expr::tidy(&add(
            self.start.clone(),
            mul(cast_to(k, ScalarType::I64, elem), self.step.clone()),
        ))
    }
}

impl Lowerer<'_> {
    /// `np.ogrid[a:b, c:d]` (open grids: a tuple of arrays of shapes
    /// `(n, 1)` and `(1, m)`) and `np.mgrid[a:b, c:d]` (the dense grids as
    /// one array of shape `(2, n, m)`), as element templates: nothing is
    /// allocated until stored. One slice gives one 1-D array, as
    /// `np.arange` would. A complex step `5j` is a number of points, as in
    /// `np.linspace`.
    pub(crate) fn index_grid(
        &mut self,
        r: &mut Region,
        dense: bool,
        slice: &ast::Expr,
        line: u32,
    ) -> Lower<Val> {
        let what = if dense { "np.mgrid" } else { "np.ogrid" };
        let (items, single): (Vec<&ast::Expr>, bool) = match slice {
            ast::Expr::Tuple(t) => (t.elts.iter().collect(), false),
            one => (vec![one], true),
        };
        let mut bounds = Vec::new();
        let mut float = false;
        for it in &items {
            let ast::Expr::Slice(s) = it else {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!(
                        "`{what}[…]` takes slices `start:stop:step`; `{}` is not one",
                        self.src.text_of(*it)
                    ),
                );
            };
            let Some(stop) = s.upper.as_deref() else {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`{what}[…]`: a slice without a stop"),
                );
            };
            let mut num = |this: &mut Self, e: Option<&ast::Expr>, default: i64| match e {
                None => Ok((i64(default), ScalarType::I64)),
                Some(e) => {
                    let (x, t) = this.scalar(r, e)?;
                    if t.is_float() || t.is_int() {
                        Ok((x, t))
                    } else {
                        refuse(
                            array_expr::NAME,
                            line,
                            format!(
                                "`{what}[…]`: `{}` is not a real number",
                                this.src.text_of(e)
                            ),
                        )
                    }
                }
            };
            let start = num(self, s.lower.as_deref(), 0)?;
            let stop = num(self, Some(stop), 0)?;
            // `5j`: five points from start to stop, both included.
            let points = match s.step.as_deref() {
                Some(ast::Expr::Constant(c)) => match &c.value {
                    ast::Constant::Complex { real, imag } if *real == 0.0 && *imag >= 0.0 => {
                        Some(imag.trunc() as i64)
                    }
                    ast::Constant::Complex { .. } => {
                        return refuse(
                            array_expr::NAME,
                            line,
                            format!(
                                "`{what}[…]`: a complex step must be a number of points like `5j`"
                            ),
                        )
                    }
                    _ => None,
                },
                _ => None,
            };
            let step = match points {
                Some(_) => (f64(0.0), ScalarType::F64),
                None => num(self, s.step.as_deref(), 1)?,
            };
            float |= points.is_some() || [&start, &stop, &step].iter().any(|(_, t)| t.is_float());
            bounds.push((start, stop, step, points));
        }
        let elem = if float {
            ScalarType::F64
        } else {
            ScalarType::I64
        };
        let mut axes = Vec::new();
        for ((start, st), (stop, pt), (step, sp), points) in bounds {
            let (start_e, stop_e) = (cast_to(start, st, elem), cast_to(stop, pt, elem));
            let axis = match points {
                Some(n) => GridAxis {
                    len: i64(n.max(0)),
                    step: if n > 1 {
                        div(sub(stop_e, start_e.clone()), f64((n - 1) as f64))
                    } else {
                        f64(0.0)
                    },
                    start: start_e,
                },
                None => {
                    let step_e = cast_to(step, sp, elem);
                    // NumPy: ceil((stop - start) / step), at least 0.
                    let len = if float {
                        cast(
                            ScalarType::I64,
                            math(
                                port_codegen::ir::MathFn::Ceil,
                                vec![div(sub(stop_e, start_e.clone()), step_e.clone())],
                            ),
                        )
                    } else {
                        let sign = select(
                            cmp(port_codegen::ir::CmpOp::Gt, step_e.clone(), i64(0)),
                            i64(1),
                            i64(-1),
                        );
                        binary(
                            BinOp::FloorDiv,
                            sub(add(sub(stop_e, start_e.clone()), step_e.clone()), sign),
                            step_e.clone(),
                        )
                    };
                    GridAxis {
                        len: array_expr::tidy(&array_expr::nonneg(len)),
                        start: start_e,
                        step: step_e,
                    }
                }
            };
            axes.push(axis);
        }
        let k = axes.len();
        // Not `computed`: a grid reads no array, so a name bound to it is
        // the template itself (no copy to protect), allocated only if
        // stored, and a store through open grids can see their indices.
        let out = if single {
            Val::Array(ArrVal {
                shape: vec![axes[0].len.clone()],
                elem,
                body: axes[0].at(var(&ph(0)), elem),
                computed: false,
            })
        } else if dense {
            if k + 1 > port_codegen::ir::MAX_DIMS as usize {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!(
                        "`{what}` of {k} axes is an array of {} dimensions: kernels take 1 to {}",
                        k + 1,
                        port_codegen::ir::MAX_DIMS
                    ),
                );
            }
            // Element (d, i_0, …) is axis d's value at i_d.
            let mut body = axes[k - 1].at(var(&ph(k)), elem);
            for d in (0..k - 1).rev() {
                body = select(
                    cmp(port_codegen::ir::CmpOp::Eq, var(&ph(0)), i64(d as i64)),
                    axes[d].at(var(&ph(d + 1)), elem),
                    body,
                );
            }
            let mut shape = vec![i64(k as i64)];
            shape.extend(axes.iter().map(|a| a.len.clone()));
            Val::Array(ArrVal {
                shape,
                elem,
                body,
                computed: false,
            })
        } else {
            if k > port_codegen::ir::MAX_DIMS as usize {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!(
                        "`{what}` of {k} axes: kernels take 1 to {} dimensions",
                        port_codegen::ir::MAX_DIMS
                    ),
                );
            }
            // Grid d varies along axis d and has extent 1 elsewhere.
            Val::Tuple(
                axes.iter()
                    .enumerate()
                    .map(|(d, a)| {
                        let mut shape = vec![i64(1); k];
                        shape[d] = a.len.clone();
                        Val::Array(ArrVal {
                            shape,
                            elem,
                            body: a.at(var(&ph(d)), elem),
                            computed: false,
                        })
                    })
                    .collect(),
            )
        };
        self.log.applied(
            array_expr::NAME,
            format!("`{what}[…]` as element templates (line {line})"),
        );
        Ok(out)
    }
}

impl Lowerer<'_> {
    /// `np.pad(x, pad_width, mode, constant_values=…)` as a template: each
    /// element reads the input where it falls inside it, else the constant
    /// (`"constant"`, the default), the nearest edge element (`"edge"`), or
    /// the element a period away (`"wrap"`). Indices are clamped, since
    /// both sides of a select are evaluated.
    pub(crate) fn padded(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let (Some(x), Some(width)) = (c.args.first(), c.args.get(1)) else {
            return refuse(
                array_expr::NAME,
                line,
                "`np.pad` needs an array and a pad width",
            );
        };
        let Val::Array(av) = self.expr(r, x)? else {
            return refuse(array_expr::NAME, line, "`np.pad` of a scalar");
        };
        let text = |e: &ast::Expr| match e {
            ast::Expr::Constant(k) => match &k.value {
                ast::Constant::Str(s) => Some(s.to_string()),
                _ => None,
            },
            _ => None,
        };
        let mut mode = c.args.get(2).map(&text);
        let mut fill: Option<&ast::Expr> = None;
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("mode") => mode = Some(text(&k.value)),
                Some("constant_values") => fill = Some(&k.value),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`{}`: only `mode=` and `constant_values=` are supported",
                            self.src.text_of(c)
                        ),
                    )
                }
            }
        }
        let mode = match mode {
            None => "constant".to_string(),
            Some(Some(m)) if matches!(m.as_str(), "constant" | "edge" | "wrap") => m,
            _ => {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!(
                        "`{}`: port pads with mode \"constant\", \"edge\" or \"wrap\"",
                        self.src.text_of(c)
                    ),
                )
            }
        };
        if c.args.len() > 3 || (fill.is_some() && mode != "constant") {
            return refuse(
                array_expr::NAME,
                line,
                format!("`{}`: unsupported arguments", self.src.text_of(c)),
            );
        }
        let n = av.ndim();
        let pairs = self.pad_pairs(r, width, n, line)?;
        let value = match fill {
            None => Expr::Lit(port_codegen::ir::Literal::I64(0)),
            Some(e) => match self.expr(r, e)? {
                Val::Scalar(v, t, _) => cast_to(v, t, av.elem),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "`constant_values=` other than one number (per-axis values)",
                    )
                }
            },
        };
        let value = if matches!(value, Expr::Lit(port_codegen::ir::Literal::I64(0))) {
            cast_to(value, ScalarType::I64, av.elem)
        } else {
            value
        };
        let mut shape = Vec::with_capacity(n);
        let mut idx = Vec::with_capacity(n);
        let mut inside: Option<Expr> = None;
        for (k, (before, after)) in pairs.into_iter().enumerate() {
            let len = av.shape[k].clone();
            shape.push(array_expr::tidy(&add(
                add(len.clone(), before.clone()),
                after,
            )));
            let at = sub(var(&ph(k)), before);
            let last = sub(len.clone(), i64(1));
            let clamped = binary(BinOp::Max, binary(BinOp::Min, at.clone(), last), i64(0));
            idx.push(match mode.as_str() {
                "wrap" => binary(
                    BinOp::Rem,
                    add(binary(BinOp::Rem, at.clone(), len.clone()), len.clone()),
                    len.clone(),
                ),
                _ => clamped,
            });
            let ok = binary(
                BinOp::And,
                cmp(port_codegen::ir::CmpOp::Ge, at.clone(), i64(0)),
                cmp(port_codegen::ir::CmpOp::Lt, at, len),
            );
            inside = Some(match inside {
                None => ok,
                Some(prev) => binary(BinOp::And, prev, ok),
            });
        }
        let read = av.element(&idx);
        let body = match (mode.as_str(), inside) {
            ("constant", Some(ok)) => select(ok, read, value),
            _ => read,
        };
        self.log.applied(
            array_expr::NAME,
            format!("`np.pad` (mode \"{mode}\") as an element template (line {line})"),
        );
        Ok(Val::Array(ArrVal {
            shape,
            elem: av.elem,
            body,
            computed: true,
        }))
    }

    /// `np.pad`'s widths as (before, after) per axis: `n`, `(b, a)`,
    /// `((b, a),)` or one pair per axis.
    fn pad_pairs(
        &mut self,
        r: &mut Region,
        e: &ast::Expr,
        ndim: usize,
        line: u32,
    ) -> Lower<Vec<(Expr, Expr)>> {
        fn seq(e: &ast::Expr) -> Option<&Vec<ast::Expr>> {
            match e {
                ast::Expr::Tuple(t) => Some(&t.elts),
                ast::Expr::List(l) => Some(&l.elts),
                _ => None,
            }
        }
        let mut int = |this: &mut Self, e: &ast::Expr| -> Lower<Expr> {
            match this.expr(r, e)? {
                Val::Scalar(v, t, _) if t.is_int() => Ok(cast_to(v, t, ScalarType::I64)),
                _ => refuse(
                    array_expr::NAME,
                    line,
                    "`np.pad`: the pad widths must be integers",
                ),
            }
        };
        let pair = |this: &mut Self,
                    e: &ast::Expr,
                    int: &mut dyn FnMut(&mut Self, &ast::Expr) -> Lower<Expr>|
         -> Lower<(Expr, Expr)> {
            match seq(e).map(|v| v.as_slice()) {
                Some([b, a]) => Ok((int(this, b)?, int(this, a)?)),
                Some([v]) => {
                    let w = int(this, v)?;
                    Ok((w.clone(), w))
                }
                Some(_) => refuse(
                    array_expr::NAME,
                    line,
                    "`np.pad`: a pad width is one or two integers",
                ),
                None => {
                    let w = int(this, e)?;
                    Ok((w.clone(), w))
                }
            }
        };
        let items = match seq(e) {
            Some(v) if v.iter().all(|x| seq(x).is_some()) => v.clone(),
            _ => vec![e.clone()],
        };
        match items.len() {
            1 => {
                let p = pair(self, &items[0], &mut int)?;
                Ok(vec![p; ndim])
            }
            k if k == ndim => {
                let mut out = Vec::new();
                for it in &items {
                    out.push(pair(self, it, &mut int)?);
                }
                Ok(out)
            }
            k => refuse(
                array_expr::NAME,
                line,
                format!("`np.pad`: {k} pad widths for an array of {ndim} dimensions"),
            ),
        }
    }

    /// `np.hstack`, `np.vstack`, `np.concatenate` of a tuple or list of
    /// arrays, as a template: each element reads the part its position
    /// falls in (the others' indices are clamped, since both sides of a
    /// select are evaluated).
    fn joined(&mut self, r: &mut Region, short: &str, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let items: Vec<&ast::Expr> = match c.args.first() {
            Some(ast::Expr::Tuple(t)) => t.elts.iter().collect(),
            Some(ast::Expr::List(l)) => l.elts.iter().collect(),
            _ => {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`np.{short}` of a tuple or list of arrays written out"),
                )
            }
        };
        let mut axis_e = c.args.get(1);
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("axis") if short == "concatenate" => axis_e = Some(&k.value),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!("`{}`: unsupported keyword argument", self.src.text_of(c)),
                    )
                }
            }
        }
        let mut parts = Vec::new();
        for it in &items {
            match self.expr(r, it)? {
                Val::Array(av) => parts.push(av),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`np.{short}` of `{}`, which is not an array",
                            self.src.text_of(*it)
                        ),
                    )
                }
            }
        }
        if parts.is_empty() {
            return refuse(array_expr::NAME, line, format!("`np.{short}` of nothing"));
        }
        let ndim = parts[0].ndim();
        if parts.iter().any(|p| p.ndim() != ndim) {
            return refuse(
                array_expr::NAME,
                line,
                format!("`np.{short}` of arrays with different numbers of dimensions"),
            );
        }
        // vstack stacks 1-D arrays as rows, column_stack as columns.
        if short == "vstack" && ndim == 1 {
            parts = parts
                .iter()
                .map(|p| p.reindexed(vec![i64(1), p.shape[0].clone()], &[var(&ph(1))]))
                .collect();
        }
        if short == "column_stack" && ndim == 1 {
            parts = parts
                .iter()
                .map(|p| p.reindexed(vec![p.shape[0].clone(), i64(1)], &[var(&ph(0))]))
                .collect();
        }
        let ndim = parts[0].ndim();
        let axis = match short {
            "hstack" if ndim == 1 => 0,
            "hstack" | "column_stack" => 1,
            "vstack" => 0,
            _ => match axis_e.map(|e| self.src.eval_const(e)) {
                None => 0,
                Some(Some(crate::source::Const::Int(a))) if (-(ndim as i64)..ndim as i64).contains(&a) => {
                    a.rem_euclid(ndim as i64) as usize
                }
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "`np.concatenate`: the axis must be an integer constant within the arrays' dimensions",
                    )
                }
            },
        };
        let elem = parts
            .iter()
            .map(|p| p.elem)
            .reduce(crate::ir_util::join)
            .expect("at least one part");
        let at = var(&ph(axis));
        let mut offsets = vec![i64(0)];
        for p in &parts {
            let last = offsets.last().cloned().expect("starts with 0");
            offsets.push(array_expr::tidy(&add(last, p.shape[axis].clone())));
        }
        let part_body = |k: usize| {
            let p = &parts[k];
            let local = binary(
                BinOp::Max,
                binary(
                    BinOp::Min,
                    sub(at.clone(), offsets[k].clone()),
                    sub(p.shape[axis].clone(), i64(1)),
                ),
                i64(0),
            );
            let idx: Vec<Expr> = (0..ndim)
                .map(|d| {
                    if d == axis {
                        local.clone()
                    } else {
                        var(&ph(d))
                    }
                })
                .collect();
            cast_to(p.element(&idx), p.elem, elem)
        };
        let last = parts.len() - 1;
        let mut body = part_body(last);
        for k in (0..last).rev() {
            body = select(
                cmp(
                    port_codegen::ir::CmpOp::Lt,
                    at.clone(),
                    offsets[k + 1].clone(),
                ),
                part_body(k),
                body,
            );
        }
        let mut shape = parts[0].shape.clone();
        shape[axis] = offsets[parts.len()].clone();
        self.log.applied(
            array_expr::NAME,
            format!("`np.{short}` as an element template (line {line})"),
        );
        Ok(Val::Array(ArrVal {
            shape,
            elem,
            body,
            computed: true,
        }))
    }
}

impl Lowerer<'_> {
    /// `np.finfo(T).eps` and the other limits of a float type (`max`,
    /// `min`, `tiny`, `smallest_normal`, `epsneg`, `resolution`), each a
    /// NumPy scalar of that type (the real type for a complex `T`), and
    /// `np.iinfo(T).max`/`.min`, Python ints; `T` a dtype name or an
    /// array's `x.dtype`. `None` when `c` is neither call.
    pub(crate) fn type_info(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        attr: &str,
        line: u32,
    ) -> Lower<Option<Val>> {
        let Some(which) = self.src.resolve(&c.func) else {
            return Ok(None);
        };
        if !matches!(which.as_str(), "numpy.finfo" | "numpy.iinfo") {
            return Ok(None);
        }
        let text = self.src.text_of(&*c.func).to_string();
        let t = match (c.args.as_slice(), c.keywords.is_empty()) {
            ([arg], true) => self.dtype_value(r, arg),
            _ => None,
        };
        let Some(t) = t else {
            return refuse(
                array_expr::NAME,
                line,
                format!("`{text}` of something that is not a dtype port knows"),
            );
        };
        if which == "numpy.finfo" {
            let real = match t {
                ScalarType::C64 => ScalarType::F32,
                ScalarType::C128 => ScalarType::F64,
                t => t,
            };
            let v = match real {
                ScalarType::F64 | ScalarType::F32 => crate::dtypes::float_limit(real, attr),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`{text}` of {}: NumPy gives float limits of float types only",
                            crate::types::numpy_dtype(t)
                        ),
                    )
                }
            };
            return match v {
                Some(v) if real == ScalarType::F32 => Ok(Some(Val::scalar(f32(v as f32), real))),
                Some(v) => Ok(Some(Val::scalar(f64(v), real))),
                None => refuse(
                    array_expr::NAME,
                    line,
                    format!("`{text}(…).{attr}` is not a limit port knows"),
                ),
            };
        }
        let range: Option<(i128, i128)> = match t {
            ScalarType::I8 => Some((i8::MIN.into(), i8::MAX.into())),
            ScalarType::I16 => Some((i16::MIN.into(), i16::MAX.into())),
            ScalarType::I32 => Some((i32::MIN.into(), i32::MAX.into())),
            ScalarType::I64 => Some((i64::MIN.into(), i64::MAX.into())),
            ScalarType::U8 => Some((0, u8::MAX.into())),
            ScalarType::U16 => Some((0, u16::MAX.into())),
            ScalarType::U32 => Some((0, u32::MAX.into())),
            ScalarType::U64 => Some((0, u64::MAX.into())),
            _ => None,
        };
        let Some((lo, hi)) = range else {
            return refuse(
                array_expr::NAME,
                line,
                format!(
                    "`{text}` of {}: NumPy gives integer limits of integer types only",
                    crate::types::numpy_dtype(t)
                ),
            );
        };
        let v = match attr {
            "min" => lo,
            "max" => hi,
            _ => {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!("`{text}(…).{attr}` is not a limit port knows"),
                )
            }
        };
        // A Python int: weak where it meets an array.
        match i64::try_from(v) {
            Ok(v) => Ok(Some(Val::Scalar(i64(v), ScalarType::I64, true))),
            Err(_) => refuse(
                array_expr::NAME,
                line,
                format!("`{text}(…).{attr}` is past int64, which kernels compute in"),
            ),
        }
    }
}

impl Lowerer<'_> {
    /// `np.meshgrid(x, y, …)` of 1-D arrays, with `indexing='xy'` (the
    /// default: the first two axes swapped) or `'ij'`, and `sparse=`: a
    /// tuple of templates, one per argument, each reading its argument
    /// along its own axis. Sparse ones have extent 1 on every other axis
    /// and broadcast, as NumPy's do.
    pub(crate) fn meshgrid(&mut self, r: &mut Region, c: &ast::ExprCall, line: u32) -> Lower<Val> {
        let mut sparse = false;
        let mut xy = true;
        for k in &c.keywords {
            let key = k.arg.as_ref().map(|a| a.as_str());
            let text = self.src.text_of(&k.value).to_string();
            let word = match &k.value {
                ast::Expr::Constant(c) => match &c.value {
                    ast::Constant::Str(s) => Some(s.as_str()),
                    _ => None,
                },
                _ => None,
            };
            match (key, self.src.eval_const(&k.value).and_then(crate::source::Const::truth)) {
                (Some("sparse"), Some(b)) => sparse = b,
                (Some("copy"), Some(_)) => {}
                (Some("indexing"), _) if word == Some("xy") => xy = true,
                (Some("indexing"), _) if word == Some("ij") => xy = false,
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`np.meshgrid`: `{}={text}` is not a keyword port takes (`sparse=`, `copy=`, `indexing='xy'` or `'ij'`)",
                            key.unwrap_or("**")
                        ),
                    )
                }
            }
        }
        let mut axes = Vec::new();
        for a in &c.args {
            match self.expr(r, a)? {
                Val::Array(av) if av.ndim() == 1 => axes.push(av),
                _ => {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "`np.meshgrid`: `{}` is not a 1-D array (NumPy flattens others)",
                            self.src.text_of(a)
                        ),
                    )
                }
            }
        }
        let n = axes.len();
        // The output axis that argument `k` runs along.
        let axis_of = |k: usize| match k {
            0 if xy && n >= 2 => 1,
            1 if xy => 0,
            k => k,
        };
        let mut full: Vec<Expr> = vec![i64(1); n];
        for (k, av) in axes.iter().enumerate() {
            full[axis_of(k)] = av.shape[0].clone();
        }
        let outs = axes
            .iter()
            .enumerate()
            .map(|(k, av)| {
                let own = axis_of(k);
                let shape: Vec<Expr> = if sparse {
                    (0..n)
                        .map(|d| if d == own { full[d].clone() } else { i64(1) })
                        .collect()
                } else {
                    full.clone()
                };
                let mut v = av.reindexed(shape, &[var(&ph(own))]);
                v.computed = true;
                Val::Array(v)
            })
            .collect();
        Ok(Val::Tuple(outs))
    }
}
