//! **hoist_alloc**: kernels cannot allocate, so every array the function
//! creates — `np.empty/zeros/ones/full(_like)`, and the result of an array
//! expression (`return a + trace`, `y = np.sqrt(x)`) — is allocated by the
//! host wrapper (`cuda.device_array`) and passed to the kernels that fill it.

use port_codegen::ir::{ArrayType, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{HostBind, Lowerer, Recurse, Region};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::plan::{Fill, HostStep};

pub const NAME: &str = "hoist_alloc";

/// Whether a dotted name allocates a new array.
pub fn is_allocation(name: &str) -> bool {
    matches!(
        name,
        "numpy.empty"
            | "numpy.ndarray"
            | "numpy.zeros"
            | "numpy.ones"
            | "numpy.full"
            | "numpy.empty_like"
            | "numpy.zeros_like"
            | "numpy.ones_like"
            | "numpy.full_like"
            | "numpy.array"
            | "numpy.arange"
            | "numpy.linspace"
            | "numpy.asarray"
            | "numpy.copy"
    )
}

impl Lowerer<'_> {
    /// `name = np.zeros(...)` and friends at the top level: a host
    /// allocation. Gives the array and its type, for the caller to bind
    /// `name` to (the schedule decides how: `bind_new_array`); `None` when
    /// `call` is no allocation.
    pub(crate) fn alloc_stmt(
        &mut self,
        r: &mut Region,
        name: &str,
        call: &ast::ExprCall,
        line: u32,
    ) -> Lower<Option<(String, ArrayType)>> {
        let fname = self.src.resolve(&call.func).unwrap_or_default();
        if !is_allocation(&fname) {
            return Ok(None);
        }
        let short = fname.rsplit('.').next().unwrap_or_default().to_string();
        let mut dtype: Option<ScalarType> = None;
        let mut fill_kw: Option<&ast::Expr> = None;
        for k in &call.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("dtype") => {
                    dtype = Some(self.dtype_value(r, &k.value).ok_or_else(|| {
                        Box::new(crate::error::Reason::new(
                            NAME,
                            line,
                            format!("dtype `{}` is not supported", self.src.text_of(&k.value)),
                        ))
                    })?)
                }
                Some("fill_value") => fill_kw = Some(&k.value),
                Some("order") => {}
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!("`{}`: unsupported keyword argument", self.src.text_of(call)),
                    )
                }
            }
        }
        let like = short.ends_with("_like") || short == "copy";
        let (shape, elem, copy_of): (Vec<port_codegen::ir::Expr>, ScalarType, Option<ArrVal>) =
            if like {
                let Some(first) = call.args.first() else {
                    return refuse(NAME, line, format!("`{short}` needs an array"));
                };
                let Val::Array(av) = self.expr(r, first)? else {
                    return refuse(NAME, line, format!("`{short}` of a scalar"));
                };
                if call.args.len() > 1 && short != "full_like" {
                    if let Some(d) = self.dtype_value(r, &call.args[1]) {
                        dtype = Some(d);
                    }
                }
                let elem = dtype.unwrap_or(av.elem);
                (av.shape.clone(), elem, (short == "copy").then_some(av))
            } else {
                match short.as_str() {
                    "empty" | "ndarray" | "zeros" | "ones" | "full" => {}
                    // arange, linspace, …: element templates (`creation`).
                    _ => return Ok(None),
                }
                let Some(first) = call.args.first() else {
                    return refuse(NAME, line, format!("`{short}` needs a shape"));
                };
                // An integer, a tuple or a list of integers.
                let shape = self.shape_arg(r, first, line)?;
                if let (None, Some(d)) = (dtype, call.args.get(if short == "full" { 2 } else { 1 }))
                {
                    dtype = self.dtype_value(r, d);
                }
                // NumPy's `full` without a dtype takes its fill value's
                // (`np.full(n, 0)` is int64).
                if let (None, "full", Some(v)) =
                    (dtype, short.as_str(), fill_kw.or(call.args.get(1)))
                {
                    if let Val::Scalar(_, t, _) = self.expr(r, v)? {
                        dtype = Some(t);
                    }
                }
                (shape, dtype.unwrap_or(ScalarType::F64), None)
            };
        crate::error::check_rank(NAME, line, shape.len())?;
        let fill = match short.as_str() {
            "zeros" | "zeros_like" => Fill::Value(crate::ir_util::lit(elem, 0.0)),
            "ones" | "ones_like" => Fill::Value(crate::ir_util::lit(elem, 1.0)),
            "full" | "full_like" => {
                let v = fill_kw.or(call.args.get(1));
                let Some(v) = v else {
                    return refuse(NAME, line, "`full` needs a fill value");
                };
                let Val::Scalar(e, t, _) = self.expr(r, v)? else {
                    return refuse(NAME, line, "the fill value must be a number");
                };
                let e = self.host_scalar(cast_to(e, t, elem), line)?;
                Fill::Value(e)
            }
            _ => Fill::Empty,
        };
        let arr = if self.host.contains_key(name) || self.params.iter().any(|(p, _)| p == name) {
            self.fresh(name)
        } else {
            self.used.insert(name.to_string());
            name.to_string()
        };
        let shape: Vec<_> = shape.into_iter().map(|s| self.hostify(s)).collect();
        let ty = ArrayType {
            elem,
            ndim: shape.len() as u8,
            contiguous: true,
        };
        self.steps.push(HostStep::Alloc {
            name: arr.clone(),
            elem,
            shape,
            fill,
        });
        self.host.insert(arr.clone(), HostBind::Array(ty));
        self.log.applied(
            NAME,
            format!("`{short}` at line {line} allocated by the wrapper"),
        );
        if let Some(src) = copy_of {
            self.store_kernel(&ArrVal::named(&arr, ty), &Val::Array(src), name, line)?;
        }
        Ok(Some((arr, ty)))
    }

    /// An array expression's result at the top level: allocated by the
    /// wrapper, filled by an element kernel. Returns the array's name.
    pub(crate) fn allocate_and_fill(
        &mut self,
        hint: &str,
        av: &ArrVal,
        line: u32,
    ) -> Lower<String> {
        let arr = if self.host.contains_key(hint) || self.params.iter().any(|(p, _)| p == hint) {
            self.fresh(hint)
        } else {
            self.used.insert(hint.to_string());
            hint.to_string()
        };
        let ty = ArrayType {
            elem: av.elem,
            ndim: av.ndim() as u8,
            contiguous: true,
        };
        let shape: Vec<_> = av.shape.iter().map(|s| self.hostify(s.clone())).collect();
        self.steps.push(HostStep::Alloc {
            name: arr.clone(),
            elem: av.elem,
            shape,
            fill: Fill::Empty,
        });
        self.host.insert(arr.clone(), HostBind::Array(ty));
        self.log.applied(
            NAME,
            format!("result of line {line} allocated by the wrapper"),
        );
        self.store_kernel(
            &ArrVal::named(&arr, ty),
            &Val::Array(av.clone()),
            hint,
            line,
        )?;
        Ok(arr)
    }
}
