//! **scalar_function**: a function of scalars — the seeds' `hypot`,
//! `gaussian_pdf`, `polar_distance` — becomes a device function and an
//! element kernel that applies it over arrays, broadcasting its arguments:
//! what `@vectorize(target='cuda')` does, written out so that the wrapper
//! picks the launch configuration and the code runs under Numba's CUDA
//! simulator too (numba-cuda's simulator cannot build CUDA ufuncs).
//!
//! A function is scalar when it never indexes, slices, reduces or measures
//! an array: then it means the same applied element by element. Arguments
//! typed as arrays are taken element by element; scalar arguments stay one
//! value (all of them are element-wise when every argument is a scalar).

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, Expr, ParallelFor, ScalarType, Stmt};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{HostBind, Lowerer, Region, RegionKind};
use crate::numpy::array_expr::Val;
use crate::plan::{Fill, HostStep, HostValue, LaunchShape, PlanParam};
use crate::pyast;
use crate::source::SourceFile;
use crate::types::ArgType;

pub const NAME: &str = "scalar_function";

/// Whether the body treats its arguments as single numbers: every argument
/// is a scalar, or the body never indexes, slices, reduces or measures an
/// array *and* uses something that only works on one number (`math.*`,
/// `abs`/`min`/`max`, an `if` or a loop on a value). A body of NumPy ufuncs
/// over array arguments is an array expression instead (kernels mode), which
/// keeps the arguments' shapes and broadcasting.
pub fn is_scalar_function(src: &SourceFile, def: &ast::StmtFunctionDef, types: &[ArgType]) -> bool {
    // A function that builds arrays (`np.arange(n)`, `np.zeros(...)`) works
    // on arrays even when its arguments are numbers.
    let mut creates = false;
    pyast::walk_stmts(&def.body, &mut |s| {
        for e in pyast::stmt_exprs(s) {
            pyast::walk_expr(e, &mut |x| {
                if let ast::Expr::Call(c) = x {
                    let name = src.resolve(&c.func).unwrap_or_default();
                    creates |= crate::lower::hoist_alloc::is_allocation(&name)
                        || matches!(
                            name.as_str(),
                            "numpy.eye" | "numpy.identity" | "numpy.indices"
                        );
                }
                // `np.ogrid[…]`, `np.mgrid[…]` build index grids.
                if let ast::Expr::Subscript(s) = x {
                    let name = src.resolve(&s.value).unwrap_or_default();
                    creates |= matches!(name.as_str(), "numpy.ogrid" | "numpy.mgrid");
                }
            });
        }
    });
    if creates {
        return false;
    }
    if types.iter().all(|t| !t.is_array()) {
        return true;
    }
    let mut scalar_only = false;
    pyast::walk_stmts(&def.body, &mut |s| {
        if matches!(s, ast::Stmt::If(_) | ast::Stmt::While(_)) {
            scalar_only = true;
        }
        for e in pyast::stmt_exprs(s) {
            pyast::walk_expr(e, &mut |x| {
                if let ast::Expr::Call(c) = x {
                    let name = src.resolve(&c.func).unwrap_or_default();
                    // math.*, built-ins on numbers, other functions of the
                    // program: code written for one value.
                    if !name.starts_with("numpy.") {
                        scalar_only = true;
                    }
                }
                if matches!(x, ast::Expr::IfExp(_) | ast::Expr::BoolOp(_)) {
                    scalar_only = true;
                }
            });
        }
    });
    if !scalar_only {
        return false;
    }
    one_value_body(src, &def.body, 0)
}

/// Whether a body only works on one value: no loop, subscript, shape,
/// reduction, allocation or `@`, nor a call to a helper of the program
/// whose body has one (`min_max_scale(x)` reduces `x`).
fn one_value_body(src: &SourceFile, body: &[ast::Stmt], depth: usize) -> bool {
    let mut scalar = true;
    let mut helpers: Vec<String> = Vec::new();
    pyast::walk_stmts(body, &mut |s| {
        if matches!(s, ast::Stmt::For(_) | ast::Stmt::While(_)) {
            scalar = false;
        }
        for e in pyast::stmt_exprs(s) {
            pyast::walk_expr(e, &mut |x| match x {
                ast::Expr::Subscript(_) => scalar = false,
                ast::Expr::Attribute(a)
                    if matches!(a.attr.as_str(), "shape" | "size" | "ndim" | "T") =>
                {
                    scalar = false
                }
                ast::Expr::BinOp(b) if b.op == ast::Operator::MatMult => scalar = false,
                ast::Expr::Call(c) => {
                    if let ast::Expr::Name(n) = c.func.as_ref() {
                        helpers.push(n.id.to_string());
                    }
                    let name = src.resolve(&c.func).unwrap_or_default();
                    let short = name.rsplit('.').next().unwrap_or_default();
                    let method = matches!(c.func.as_ref(), ast::Expr::Attribute(a)
                        if !src.resolve(&a.value).is_some_and(|m| m.starts_with("numpy") || m.starts_with("math")));
                    if method
                        || matches!(
                            short,
                            "sum"
                                | "mean"
                                | "max"
                                | "min"
                                | "prod"
                                | "amax"
                                | "amin"
                                | "dot"
                                | "len"
                                | "nansum"
                                | "average"
                        ) && (name.starts_with("numpy.") || !name.contains('.'))
                            && !(matches!(short, "max" | "min") && c.args.len() >= 2)
                        || crate::lower::hoist_alloc::is_allocation(&name)
                    {
                        scalar = false;
                    }
                }
                _ => {}
            });
        }
    });
    if scalar && depth < 8 {
        let mut names = helpers.clone();
        names.sort_unstable();
        names.dedup();
        for f in names.iter().flat_map(|h| src.functions_named(h)) {
            if f.class.is_none() && helpers.contains(&f.qualname) {
                scalar &= one_value_body(src, &f.def.body, depth + 1);
            }
        }
    }
    scalar
}

impl Lowerer<'_> {
    /// The ufunc plan: device function + element kernel + outputs.
    pub(crate) fn ufunc_plan(
        &mut self,
        def: &ast::StmtFunctionDef,
        types: &[ArgType],
    ) -> Lower<(Vec<PlanParam>, HostValue, Vec<ScalarType>)> {
        let line = self.src.line(def);
        let all_scalar = types.iter().all(|t| !t.is_array());
        let names = crate::pyast::positional_params(&def.args);
        let mut params = Vec::new();
        let mut first_elementwise: Option<String> = None;
        for (n, t) in names.iter().zip(types) {
            let elementwise = all_scalar || t.is_array();
            let kty = if elementwise {
                ArgType::Array(ArrayType {
                    elem: t.elem(),
                    ndim: 1,
                    contiguous: true,
                })
            } else {
                *t
            };
            if elementwise && first_elementwise.is_none() {
                first_elementwise = Some(n.clone());
            }
            match kty {
                ArgType::Array(a) => self.host.insert(n.clone(), HostBind::Array(a)),
                ArgType::Scalar(s) => self.host.insert(n.clone(), HostBind::Scalar(s)),
            };
            self.params.push((n.clone(), kty));
            params.push(PlanParam {
                name: n.clone(),
                ty: *t,
                kernel_ty: kty,
                elementwise,
            });
        }
        let Some(first) = first_elementwise else {
            return refuse(NAME, line, "a scalar function without arguments");
        };
        let i = self.fresh("i");
        let mut r = Region::new(RegionKind::Kernel, "");
        let mut args = Vec::new();
        for p in &params {
            let t = p.ty.elem();
            args.push(if p.elementwise {
                Val::scalar(load(&p.name, vec![var(&i)]), t)
            } else {
                Val::scalar(var(&p.name), t)
            });
        }
        let fn_name = self.fn_name.clone();
        let value = if returns_tuple(def) {
            self.inline_call(&mut r, &fn_name, def, args.clone(), line)?
        } else {
            let arrays = vec![None; args.len()];
            let (dname, ret) = self.device_function(&fn_name, def, &args, &arrays, line)?;
            let Some((t, _)) = ret else {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{fn_name}` returns nothing: there is no value to compute per element"
                    ),
                );
            };
            let call_args: Vec<Expr> = args
                .iter()
                .map(|a| match a {
                    Val::Scalar(e, _, _) => e.clone(),
                    _ => unreachable!("scalar arguments"),
                })
                .collect();
            Val::scalar(Expr::Call(dname, call_args), t)
        };
        let outs: Vec<(Expr, ScalarType)> = match value {
            Val::Scalar(e, t, _) => vec![(e, t)],
            Val::Tuple(items) => {
                let mut v = Vec::new();
                for it in items {
                    match it {
                        Val::Scalar(e, t, _) => v.push((e, t)),
                        _ => return refuse(NAME, line, "a returned tuple must hold numbers"),
                    }
                }
                v
            }
            Val::Array(_) => return refuse(NAME, line, "a scalar function returning an array"),
        };
        let n = self.fresh("n");
        self.steps.push(HostStep::Scalar {
            name: n.clone(),
            ty: ScalarType::I64,
            value: shape(&first, 0),
        });
        self.host
            .insert(n.clone(), HostBind::Scalar(ScalarType::I64));
        let mut body = std::mem::take(&mut r.blocks[0].0);
        let mut ret = Vec::new();
        let mut out_types = Vec::new();
        for (e, t) in outs {
            let name = self.fresh("out");
            let st = if t == ScalarType::Bool {
                ScalarType::Bool
            } else {
                t
            };
            self.steps.push(HostStep::Alloc {
                name: name.clone(),
                elem: st,
                shape: vec![var(&n)],
                fill: Fill::Empty,
            });
            self.host.insert(
                name.clone(),
                HostBind::Array(ArrayType {
                    elem: st,
                    ndim: 1,
                    contiguous: true,
                }),
            );
            body.push(store(&name, vec![var(&i)], cast_to(e, t, st)));
            ret.push(HostValue::Array(name));
            out_types.push(st);
        }
        let kname = self.kernel_name("kernel");
        let pfor = Stmt::ParallelFor(ParallelFor {
            vars: vec![i.clone()],
            extents: vec![shape(&first, 0)],
            body,
        });
        self.log.applied(
            NAME,
            format!("`{fn_name}` applied element by element over arrays (a ufunc)"),
        );
        self.add_kernel(
            kname,
            vec![pfor],
            vec![],
            LaunchShape::Grid1 { n: var(&n) },
            format!("`{fn_name}` applied to every element, as @vectorize(target='cuda') would."),
        )?;
        let ret = if ret.len() == 1 {
            ret.remove(0)
        } else {
            HostValue::Tuple(ret)
        };
        Ok((params, ret, out_types))
    }
}

fn returns_tuple(def: &ast::StmtFunctionDef) -> bool {
    let mut found = false;
    pyast::walk_stmts(&def.body, &mut |s| {
        if let ast::Stmt::Return(r) = s {
            found |= matches!(r.value.as_deref(), Some(ast::Expr::Tuple(_)));
        }
    });
    found
}
