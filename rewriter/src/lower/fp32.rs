//! **fp32**: on request (`--fp32`), float64 becomes float32 in the kernels,
//! their arguments and the wrapper's device arrays; the wrapper converts on
//! the way in and back to the caller's dtype on the way out. float64 is
//! 2–32× slower than float32 on most GPUs (the seeds' advice), at the cost
//! of precision: verification then uses the looser float32 tolerance.

use port_codegen::ir::{Expr, Literal, ScalarType, Stmt, Type};

use crate::ir_util::map_expr;
use crate::plan::{Fill, HostStep, HostValue, KernelPlan};
use crate::types::ArgType;

pub const NAME: &str = "fp32";

fn st(t: ScalarType) -> ScalarType {
    if t == ScalarType::F64 {
        ScalarType::F32
    } else {
        t
    }
}

fn ty(t: Type) -> Type {
    match t {
        Type::Scalar(s) => Type::Scalar(st(s)),
        Type::Array(mut a) => {
            a.elem = st(a.elem);
            Type::Array(a)
        }
    }
}

fn arg(t: ArgType) -> ArgType {
    match ty(t.ir()) {
        Type::Scalar(s) => ArgType::Scalar(s),
        Type::Array(a) => ArgType::Array(a),
    }
}

fn expr(e: &Expr) -> Expr {
    map_expr(e, &|x| match x {
        Expr::Lit(Literal::F64(v)) => Some(Expr::Lit(Literal::F32(*v as f32))),
        Expr::Cast(t, inner) => Some(Expr::Cast(st(*t), Box::new(expr(inner)))),
        _ => None,
    })
}

fn stmts(body: &[Stmt]) -> Vec<Stmt> {
    body.iter()
        .map(|s| match s {
            Stmt::Let { name, ty, init } => Stmt::Let {
                name: name.clone(),
                ty: st(*ty),
                init: expr(init),
            },
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: expr(cond),
                then_body: stmts(then_body),
                else_body: stmts(else_body),
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: expr(cond),
                body: stmts(body),
            },
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: var.clone(),
                start: expr(start),
                stop: expr(stop),
                step: expr(step),
                body: stmts(body),
            },
            Stmt::ParallelFor(p) => {
                let mut p = p.clone();
                p.extents = p.extents.iter().map(expr).collect();
                p.body = stmts(&p.body);
                Stmt::ParallelFor(p)
            }
            other => crate::ir_util::map_stmts(std::slice::from_ref(other), &expr)
                .pop()
                .expect("one statement"),
        })
        .collect()
}

fn host_value(v: &mut HostValue) {
    match v {
        HostValue::Scalar(_, t) | HostValue::ScalarOrStart { ty: t, .. } => *t = st(*t),
        HostValue::Tuple(items) => items.iter_mut().for_each(host_value),
        HostValue::Array(_) => {}
    }
}

/// Lowers every float64 of the plan to float32.
pub fn lower_plan(plan: &mut KernelPlan) {
    for k in &mut plan.module.kernels {
        for p in &mut k.params {
            p.ty = ty(p.ty);
        }
        for s in &mut k.shared {
            s.elem = st(s.elem);
        }
        k.body = stmts(&k.body);
    }
    for f in &mut plan.module.device_functions {
        for p in &mut f.params {
            p.ty = ty(p.ty);
        }
        f.ret = f.ret.map(st);
        f.body = stmts(&f.body);
    }
    for p in &mut plan.params {
        p.kernel_ty = arg(p.kernel_ty);
    }
    HostStep::walk_mut(&mut plan.steps, &mut |s| match s {
        HostStep::Scalar { ty, value, .. } => {
            *ty = st(*ty);
            *value = expr(value);
        }
        HostStep::Alloc {
            elem, fill, shape, ..
        } => {
            *elem = st(*elem);
            *shape = shape.iter().map(expr).collect();
            if let Fill::Value(v) = fill {
                *v = expr(v);
            }
        }
        HostStep::ReadBack { ty, .. } => *ty = st(*ty),
        HostStep::ReadElement { ty, index, .. } => {
            *ty = st(*ty);
            *index = index.iter().map(expr).collect();
        }
        HostStep::Loop {
            start, stop, step, ..
        } => {
            *start = expr(start);
            *stop = expr(stop);
            *step = expr(step);
        }
        HostStep::While { cond, .. } | HostStep::If { cond, .. } => *cond = expr(cond),
        HostStep::Launch { .. }
        | HostStep::Break
        | HostStep::Raise { .. }
        | HostStep::Rebind { .. }
        | HostStep::Comment(_)
        | HostStep::Guard(_)
        // Its arrays' types are their allocations'.
        | HostStep::Library(_) => {}
    });
    if let Some(r) = &mut plan.ret {
        host_value(r);
    }
    plan.ufunc_outputs = plan.ufunc_outputs.iter().map(|t| st(*t)).collect();
    plan.fp32 = true;
}
