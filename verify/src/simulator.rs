//! Runs a [`KernelPlan`] on codegen's host simulator: the wrapper's steps in
//! order — host scalars, allocations, launches with the same launch policy
//! as the emitted Python (with [`SIMULATED_SMS`] multiprocessors), reads of
//! reduction results — over the same inputs the original ran on.
//!
//! Kernels run bounds-checked (`debug`), so an index bug is an `IndexError`
//! naming the thread, never memory corruption.

use std::collections::HashMap;

use port_codegen::ir::{BinOp, CmpOp, Expr, Literal, MathFn, ScalarType, Type, UnaryOp};
use port_codegen::{ArrayData, SimArg, SimArray, SimOptions, Simulator};
use port_rewriter::launch::{
    blocks_for, reduce_blocks_for, SIMULATED_SMS, THREADS_1D, THREADS_2D, THREADS_REDUCE,
};
use port_rewriter::plan::Fill;
use port_rewriter::{ArgType, HostStep, HostValue, KernelPlan, LaunchShape};

use crate::error::VerifyError;
use crate::inputs::{InputValue, Inputs};
use crate::npy::NdArray;

/// A host scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
enum HVal {
    B(bool),
    I(i64),
    F(f64),
}

impl HVal {
    fn f(self) -> f64 {
        match self {
            HVal::B(b) => f64::from(u8::from(b)),
            HVal::I(i) => i as f64,
            HVal::F(f) => f,
        }
    }

    fn i(self) -> i64 {
        match self {
            HVal::B(b) => i64::from(b),
            HVal::I(i) => i,
            HVal::F(f) => f as i64,
        }
    }

    fn b(self) -> bool {
        match self {
            HVal::B(b) => b,
            HVal::I(i) => i != 0,
            HVal::F(f) => f != 0.0,
        }
    }

    fn cast(self, t: ScalarType) -> HVal {
        match t {
            ScalarType::Bool => HVal::B(self.b()),
            ScalarType::I32 => HVal::I(self.i() as i32 as i64),
            ScalarType::I64 => HVal::I(self.i()),
            ScalarType::F32 => HVal::F(self.f() as f32 as f64),
            ScalarType::F64 => HVal::F(self.f()),
        }
    }

    fn arg(self, t: ScalarType) -> SimArg {
        match t {
            ScalarType::Bool => SimArg::Bool(self.b()),
            ScalarType::I32 => SimArg::I32(self.i() as i32),
            ScalarType::I64 => SimArg::I64(self.i()),
            ScalarType::F32 => SimArg::F32(self.f() as f32),
            ScalarType::F64 => SimArg::F64(self.f()),
        }
    }
}

/// What the kernels produced: the argument arrays after the run and the
/// returned values, as the original's would be compared.
#[derive(Clone, Debug)]
pub struct KernelRun {
    pub args: Vec<Option<NdArray>>,
    pub returns: Option<Vec<NdArray>>,
}

struct State {
    arrays: HashMap<String, SimArray>,
    scalars: HashMap<String, HVal>,
}

fn zeros(t: ScalarType, n: usize, fill: f64) -> ArrayData {
    match t {
        ScalarType::Bool => ArrayData::Bool(vec![fill != 0.0; n]),
        ScalarType::I32 => ArrayData::I32(vec![fill as i32; n]),
        ScalarType::I64 => ArrayData::I64(vec![fill as i64; n]),
        ScalarType::F32 => ArrayData::F32(vec![fill as f32; n]),
        ScalarType::F64 => ArrayData::F64(vec![fill; n]),
    }
}

fn sim_err(e: impl std::fmt::Display) -> VerifyError {
    VerifyError::Simulator(e.to_string())
}

impl State {
    fn eval(&self, e: &Expr) -> Result<HVal, VerifyError> {
        Ok(match e {
            Expr::Lit(l) => match *l {
                Literal::Bool(b) => HVal::B(b),
                Literal::I32(i) => HVal::I(i64::from(i)),
                Literal::I64(i) => HVal::I(i),
                Literal::F32(f) => HVal::F(f64::from(f)),
                Literal::F64(f) => HVal::F(f),
            },
            Expr::Var(n) => *self
                .scalars
                .get(n)
                .ok_or_else(|| VerifyError::BadPlan(format!("no host value `{n}`")))?,
            Expr::Shape { array, axis } => {
                let a = self
                    .arrays
                    .get(array)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no array `{array}`")))?;
                HVal::I(*a.shape().get(*axis as usize).unwrap_or(&1) as i64)
            }
            Expr::Unary(op, a) => {
                let v = self.eval(a)?;
                match (op, v) {
                    (UnaryOp::Neg, HVal::F(f)) => HVal::F(-f),
                    (UnaryOp::Neg, v) => HVal::I(-v.i()),
                    (UnaryOp::Not, HVal::B(b)) => HVal::B(!b),
                    (UnaryOp::Not, v) => HVal::I(!v.i()),
                }
            }
            Expr::Cast(t, a) => self.eval(a)?.cast(*t),
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                let float = matches!(x, HVal::F(_)) || matches!(y, HVal::F(_));
                if float {
                    let (x, y) = (x.f(), y.f());
                    HVal::F(match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        BinOp::Mul => x * y,
                        BinOp::Div => x / y,
                        BinOp::FloorDiv => (x / y).floor(),
                        BinOp::Rem => x % y,
                        BinOp::Min => x.min(y),
                        BinOp::Max => x.max(y),
                        _ => return Err(VerifyError::BadPlan("bit operation on floats".into())),
                    })
                } else if matches!(op, BinOp::And | BinOp::Or) {
                    HVal::B(if *op == BinOp::And {
                        x.b() && y.b()
                    } else {
                        x.b() || y.b()
                    })
                } else {
                    let (x, y) = (x.i(), y.i());
                    let d = if y == 0 { 1 } else { y };
                    HVal::I(match op {
                        BinOp::Add => x.wrapping_add(y),
                        BinOp::Sub => x.wrapping_sub(y),
                        BinOp::Mul => x.wrapping_mul(y),
                        BinOp::Div => x.wrapping_div(d),
                        BinOp::FloorDiv => {
                            x.div_euclid(d) - i64::from(d < 0 && x.rem_euclid(d) != 0)
                        }
                        BinOp::Rem => x.wrapping_rem(d),
                        BinOp::Min => x.min(y),
                        BinOp::Max => x.max(y),
                        BinOp::BitAnd => x & y,
                        BinOp::BitOr => x | y,
                        BinOp::BitXor => x ^ y,
                        BinOp::Shl => x.wrapping_shl(y as u32),
                        BinOp::Shr => x.wrapping_shr(y as u32),
                        BinOp::And | BinOp::Or => unreachable!("handled above"),
                    })
                }
            }
            Expr::Cmp(op, a, b) => {
                let (x, y) = (self.eval(a)?.f(), self.eval(b)?.f());
                HVal::B(match op {
                    CmpOp::Eq => x == y,
                    CmpOp::Ne => x != y,
                    CmpOp::Lt => x < y,
                    CmpOp::Le => x <= y,
                    CmpOp::Gt => x > y,
                    CmpOp::Ge => x >= y,
                })
            }
            Expr::Select(c, a, b) => {
                if self.eval(c)?.b() {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Math(f, args) => {
                let x = self.eval(&args[0])?.f();
                let y = args
                    .get(1)
                    .map(|a| self.eval(a))
                    .transpose()?
                    .map(HVal::f)
                    .unwrap_or(0.0);
                HVal::F(match f {
                    MathFn::Sqrt => x.sqrt(),
                    MathFn::Exp => x.exp(),
                    MathFn::Log => x.ln(),
                    MathFn::Fabs => x.abs(),
                    MathFn::Floor => x.floor(),
                    MathFn::Ceil => x.ceil(),
                    MathFn::Trunc => x.trunc(),
                    MathFn::Pow => x.powf(y),
                    MathFn::Sin => x.sin(),
                    MathFn::Cos => x.cos(),
                    MathFn::Tanh => x.tanh(),
                    other => {
                        return Err(VerifyError::BadPlan(format!(
                            "host code calls {}",
                            other.name()
                        )))
                    }
                })
            }
            Expr::Load(r) => {
                let a = self
                    .arrays
                    .get(&r.array)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no array `{}`", r.array)))?;
                let k = self.eval(&r.indices[0])?.i() as usize;
                element(a, k)
            }
            other => {
                return Err(VerifyError::BadPlan(format!(
                    "host code cannot evaluate `{}`",
                    port_codegen::text::expr_text(other)
                )))
            }
        })
    }
}

fn element(a: &SimArray, k: usize) -> HVal {
    match a.data() {
        ArrayData::Bool(v) => HVal::B(v[k]),
        ArrayData::I32(v) => HVal::I(i64::from(v[k])),
        ArrayData::I64(v) => HVal::I(v[k]),
        ArrayData::F32(v) => HVal::F(f64::from(v[k])),
        ArrayData::F64(v) => HVal::F(v[k]),
    }
}

fn to_nd(a: &SimArray) -> NdArray {
    NdArray {
        shape: a.shape().to_vec(),
        data: a.data().clone(),
    }
}

fn sim_array(a: &NdArray) -> Result<SimArray, VerifyError> {
    let shape = if a.shape.is_empty() {
        vec![1]
    } else {
        a.shape.clone()
    };
    SimArray::new(a.data.clone(), &shape).map_err(sim_err)
}

/// Runs the plan's kernels on the simulator over `inputs`.
pub fn run_plan(plan: &KernelPlan, inputs: &Inputs) -> Result<KernelRun, VerifyError> {
    let sim = Simulator::new(&plan.module, SimOptions { debug: true }).map_err(sim_err)?;
    let mut st = State {
        arrays: HashMap::new(),
        scalars: HashMap::new(),
    };
    if inputs.values.len() != plan.params.len() {
        return Err(VerifyError::BadData(format!(
            "{} inputs for {} arguments",
            inputs.values.len(),
            plan.params.len()
        )));
    }
    // A ufunc's element-wise inputs are broadcast together (NumPy's rule),
    // and its result has the broadcast shape.
    let mut ufunc_shape: Option<Vec<usize>> = None;
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for (p, (_, v)) in plan.params.iter().zip(&inputs.values) {
        if let (true, InputValue::Array(a)) = (p.elementwise, v) {
            shapes.push(a.shape.clone());
        }
    }
    let common = broadcast_shape(&shapes)?;
    for (p, (_, v)) in plan.params.iter().zip(&inputs.values) {
        let broadcast;
        let v = match (p.elementwise, v, &common) {
            (true, InputValue::Array(a), Some(shape)) => {
                broadcast = InputValue::Array(broadcast_to(a, shape));
                &broadcast
            }
            _ => v,
        };
        match (p.kernel_ty, v) {
            (ArgType::Array(at), InputValue::Array(a)) => {
                if p.elementwise
                    && ufunc_shape
                        .as_ref()
                        .is_none_or(|s| s.iter().product::<usize>() < a.len())
                {
                    ufunc_shape = Some(a.shape.clone());
                }
                let mut a = a.convert(at.elem);
                if p.elementwise || a.shape.is_empty() {
                    // A ufunc's argument: flattened.
                    a.shape = vec![a.len()];
                }
                if a.shape.len() != at.ndim as usize {
                    return Err(VerifyError::BadData(format!(
                        "`{}` has {} dimensions, its type {} has {}",
                        p.name,
                        a.shape.len(),
                        p.ty,
                        at.ndim
                    )));
                }
                st.arrays.insert(p.name.clone(), sim_array(&a)?);
            }
            (ArgType::Array(at), InputValue::Scalar(_, x)) => {
                if ufunc_shape.is_none() {
                    ufunc_shape = Some(Vec::new());
                }
                let a = NdArray {
                    shape: vec![1],
                    data: zeros(at.elem, 1, *x),
                };
                st.arrays.insert(p.name.clone(), sim_array(&a)?);
            }
            (ArgType::Scalar(t), InputValue::Scalar(_, x)) => {
                st.scalars.insert(p.name.clone(), HVal::F(*x).cast(t));
            }
            (ArgType::Scalar(_), InputValue::Array(_)) => {
                return Err(VerifyError::BadData(format!(
                    "`{}` is typed {} but the input is an array",
                    p.name, p.ty
                )))
            }
        }
    }
    for s in &plan.steps {
        match s {
            HostStep::Scalar { name, ty, value } => {
                let v = st.eval(value)?.cast(*ty);
                st.scalars.insert(name.clone(), v);
            }
            HostStep::Alloc {
                name,
                elem,
                shape,
                fill,
            } => {
                let mut dims = Vec::new();
                for d in shape {
                    dims.push(st.eval(d)?.i().max(0) as usize);
                }
                let n: usize = dims.iter().product();
                let v = match fill {
                    Fill::Empty => 0.0,
                    Fill::Value(e) => st.eval(e)?.f(),
                };
                let a = SimArray::new(zeros(*elem, n, v), &dims).map_err(sim_err)?;
                st.arrays.insert(name.clone(), a);
            }
            HostStep::ReadBack { name, ty, array } => {
                let a = st
                    .arrays
                    .get(array)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no array `{array}`")))?;
                st.scalars.insert(name.clone(), element(a, 0).cast(*ty));
            }
            HostStep::Launch {
                kernel,
                args,
                shape,
            } => {
                let k = plan
                    .module
                    .kernel(kernel)
                    .ok_or_else(|| VerifyError::BadPlan(format!("no kernel `{kernel}`")))?;
                let (grid, block): ([u32; 2], [u32; 2]) = match shape {
                    LaunchShape::Grid1 { n } => {
                        let n = st.eval(n)?.i();
                        (
                            [blocks_for(n, THREADS_1D, SIMULATED_SMS), 1],
                            [THREADS_1D, 1],
                        )
                    }
                    LaunchShape::Grid2 { rows, cols } => {
                        let (r, c) = (st.eval(rows)?.i().max(1), st.eval(cols)?.i().max(1));
                        let t = i64::from(THREADS_2D);
                        (
                            [
                                ((c + t - 1) / t).min(65_535) as u32,
                                ((r + t - 1) / t).min(65_535) as u32,
                            ],
                            [THREADS_2D, THREADS_2D],
                        )
                    }
                    LaunchShape::Reduce { n } => {
                        let n = st.eval(n)?.i();
                        (
                            [reduce_blocks_for(n, SIMULATED_SMS), 1],
                            [THREADS_REDUCE, 1],
                        )
                    }
                    LaunchShape::OneBlock => ([1, 1], [THREADS_REDUCE, 1]),
                };
                let mut sim_args = Vec::new();
                for (a, p) in args.iter().zip(&k.params) {
                    match p.ty {
                        Type::Array(_) => {
                            let arr = st.arrays.remove(a).ok_or_else(|| {
                                VerifyError::BadPlan(format!("no array `{a}` for `{kernel}`"))
                            })?;
                            sim_args.push(SimArg::Array(arr));
                        }
                        Type::Scalar(t) => {
                            let v = st.scalars.get(a).copied().ok_or_else(|| {
                                VerifyError::BadPlan(format!("no value `{a}` for `{kernel}`"))
                            })?;
                            sim_args.push(v.arg(t));
                        }
                    }
                }
                let res = sim.launch(kernel, grid, block, &mut sim_args);
                for (a, v) in args.iter().zip(sim_args) {
                    if let SimArg::Array(arr) = v {
                        st.arrays.insert(a.clone(), arr);
                    }
                }
                res.map_err(|e| VerifyError::Simulator(format!("kernel `{kernel}`: {e}")))?;
            }
        }
    }
    let mut out_args = Vec::new();
    for p in &plan.params {
        out_args.push(match p.kernel_ty {
            ArgType::Array(_) if !p.elementwise => st
                .arrays
                .get(&p.name)
                .map(|a| to_nd(a).convert(p.ty.elem())),
            _ => None,
        });
    }
    let shape_out = |mut nd: NdArray| {
        if let Some(s) = &ufunc_shape {
            if s.iter().product::<usize>() == nd.len() {
                nd.shape = s.clone();
            }
        }
        nd
    };
    let returns = match &plan.ret {
        None => None,
        Some(HostValue::Tuple(items)) => {
            let mut v = Vec::new();
            for it in items {
                v.push(shape_out(value(&st, plan, it)?));
            }
            Some(v)
        }
        Some(one) => Some(vec![shape_out(value(&st, plan, one)?)]),
    };
    Ok(KernelRun {
        args: out_args,
        returns,
    })
}

/// NumPy's broadcast shape of several shapes (`None` for none).
fn broadcast_shape(shapes: &[Vec<usize>]) -> Result<Option<Vec<usize>>, VerifyError> {
    if shapes.is_empty() {
        return Ok(None);
    }
    let nd = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1usize; nd];
    for s in shapes {
        for (k, &d) in s.iter().enumerate() {
            let o = &mut out[nd - s.len() + k];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(VerifyError::BadData(format!(
                    "arguments of shapes {shapes:?} do not broadcast together"
                )));
            }
        }
    }
    Ok(Some(out))
}

/// `a` repeated to `shape` (which it broadcasts to), in C order.
fn broadcast_to(a: &NdArray, shape: &[usize]) -> NdArray {
    if a.shape == shape {
        return a.clone();
    }
    let n: usize = shape.iter().product();
    let off = shape.len() - a.shape.len();
    let mut strides = vec![0usize; shape.len()];
    let mut s = 1usize;
    for k in (0..a.shape.len()).rev() {
        strides[off + k] = if a.shape[k] == 1 { 0 } else { s };
        s *= a.shape[k];
    }
    let index = |mut flat: usize| {
        let mut src = 0;
        for d in (0..shape.len()).rev() {
            src += (flat % shape[d]) * strides[d];
            flat /= shape[d];
        }
        src
    };
    let data = match &a.data {
        ArrayData::Bool(v) => ArrayData::Bool((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::I32(v) => ArrayData::I32((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::I64(v) => ArrayData::I64((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::F32(v) => ArrayData::F32((0..n).map(|k| v[index(k)]).collect()),
        ArrayData::F64(v) => ArrayData::F64((0..n).map(|k| v[index(k)]).collect()),
    };
    NdArray {
        shape: shape.to_vec(),
        data,
    }
}

fn value(st: &State, plan: &KernelPlan, v: &HostValue) -> Result<NdArray, VerifyError> {
    match v {
        HostValue::Array(n) => {
            let a = st
                .arrays
                .get(n)
                .ok_or_else(|| VerifyError::BadPlan(format!("no array `{n}`")))?;
            let mut nd = to_nd(a);
            if plan.fp32 && nd.elem() == ScalarType::F32 {
                nd = nd.convert(ScalarType::F64);
            }
            if let Some(p) = plan.params.iter().find(|p| p.name == *n) {
                nd = nd.convert(p.ty.elem());
            }
            Ok(nd)
        }
        HostValue::Scalar(n, t) => {
            let x = st
                .scalars
                .get(n)
                .copied()
                .ok_or_else(|| VerifyError::BadPlan(format!("no value `{n}`")))?;
            let data = match t {
                ScalarType::Bool => ArrayData::Bool(vec![x.b()]),
                ScalarType::I32 => ArrayData::I32(vec![x.i() as i32]),
                ScalarType::I64 => ArrayData::I64(vec![x.i()]),
                ScalarType::F32 | ScalarType::F64 => ArrayData::F64(vec![x.f()]),
            };
            Ok(NdArray {
                shape: vec![],
                data,
            })
        }
        HostValue::Tuple(_) => Err(VerifyError::BadPlan("nested tuple result".into())),
    }
}
