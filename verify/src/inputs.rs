//! Inputs for verification: captured ones (the profiler's snapshot), or
//! generated from the argument types.
//!
//! Generated inputs are deterministic (a fixed-seed generator) and sized to
//! exercise many blocks while keeping the CPython original fast: every
//! array dimension has the same extent `N`, so arrays of any shapes agree
//! (`a[n, k] @ b[k, m]` gets square matrices), with `N^d ≈ 2^18` where `d`
//! is the deeper of the kernels' loop nesting and the arrays' rank: 1-D
//! work gets 100 000 elements, 2-D 512 × 512, a triple loop 64³.
//!
//! Values: floats uniform in [0.5, 1.5) when the kernels divide or call a
//! function defined only for positive numbers (log, sqrt, pow, …), else in
//! [-1, 1); integers in [0, 8) (valid indices into any array); booleans
//! half true; integer scalars 5 and float scalars 0.75.

use std::path::Path;

use port_codegen::ir::{BinOp, Expr, MathFn, Module, ScalarType, Stmt};
use port_codegen::ArrayData;
use port_rewriter::{ArgType, KernelPlan, PlanKind};

use crate::error::VerifyError;
use crate::npy::{self, NdArray};

/// One argument's value.
#[derive(Clone, Debug, PartialEq)]
pub enum InputValue {
    Array(NdArray),
    /// A scalar of this type (integers and booleans as exact `f64`).
    Scalar(ScalarType, f64),
}

/// Where the inputs came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputOrigin {
    /// The profiler's snapshot of a real call.
    Captured,
    /// An `.npz` the user gave (`--inputs`).
    Given,
    Generated,
}

impl InputOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            InputOrigin::Captured => "captured",
            InputOrigin::Given => "given",
            InputOrigin::Generated => "generated",
        }
    }
}

/// The arguments of one call, in order.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub values: Vec<(String, InputValue)>,
    pub origin: InputOrigin,
}

/// The fixed seed of generated inputs.
pub const SEED: u64 = 0x5EED_2020;
/// `N^d` is about this many loop iterations.
const BUDGET: f64 = 262_144.0;
const MAX_1D: usize = 100_000;

/// splitmix64: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Depth of loop nesting in a body (parallel variables count one each).
fn depth(body: &[Stmt]) -> usize {
    body.iter()
        .map(|s| match s {
            Stmt::ParallelFor(p) => p.vars.len() + depth(&p.body),
            Stmt::For { body, .. } | Stmt::While { body, .. } => 1 + depth(body),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => depth(then_body).max(depth(else_body)),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Whether the kernels need positive inputs to stay in their domain.
fn needs_positive(m: &Module) -> bool {
    let mut yes = false;
    let mut visit = |e: &Expr| match e {
        Expr::Math(f, _) => {
            yes |= matches!(
                f,
                MathFn::Sqrt
                    | MathFn::Log
                    | MathFn::Log2
                    | MathFn::Log10
                    | MathFn::Log1p
                    | MathFn::Pow
                    | MathFn::Acosh
                    | MathFn::Atanh
                    | MathFn::Asin
                    | MathFn::Acos
                    | MathFn::Fmod
            )
        }
        Expr::Binary(BinOp::Div | BinOp::FloorDiv | BinOp::Rem, _, _) => yes = true,
        _ => {}
    };
    for k in &m.kernels {
        port_codegen::ir::walk_body_exprs(&k.body, &mut visit);
    }
    for f in &m.device_functions {
        port_codegen::ir::walk_body_exprs(&f.body, &mut visit);
    }
    yes
}

/// The extent of every generated array dimension for this plan.
pub fn extent(plan: &KernelPlan) -> usize {
    extent_for(plan, None)
}

/// The extent of every generated dimension when the innermost loops should
/// run about `budget` iterations in all (`None`: a size quick to verify).
pub fn extent_for(plan: &KernelPlan, budget: Option<usize>) -> usize {
    let loops = plan
        .module
        .kernels
        .iter()
        .map(|k| depth(&k.body))
        .max()
        .unwrap_or(1);
    let rank = plan
        .params
        .iter()
        .filter_map(|p| match p.ty {
            ArgType::Array(a) => Some(a.ndim as usize),
            ArgType::Scalar(_) => None,
        })
        .max()
        .unwrap_or(1);
    let d = loops.max(rank).max(1) as f64;
    match budget {
        Some(b) => ((b.max(1) as f64).powf(1.0 / d).round() as usize).max(1),
        None => (BUDGET.powf(1.0 / d).round() as usize).clamp(8, MAX_1D),
    }
}

/// The range generated float values come from.
pub fn value_range(plan: &KernelPlan) -> (f64, f64) {
    if needs_positive(&plan.module) {
        (0.5, 1.5)
    } else {
        (-1.0, 1.0)
    }
}

/// Deterministic inputs for the plan's argument types.
pub fn generate(plan: &KernelPlan) -> Inputs {
    generate_sized(plan, None)
}

/// Deterministic inputs with about `budget` loop iterations in all: a
/// 1-D loop gets arrays of `budget` elements, a 2-D one `√budget` per side.
pub fn generate_sized(plan: &KernelPlan, budget: Option<usize>) -> Inputs {
    let n = extent_for(plan, budget);
    let (lo, hi) = value_range(plan);
    let mut rng = Rng(SEED);
    let mut values = Vec::new();
    for p in &plan.params {
        // A scalar function's element-wise scalar arguments become arrays.
        let ty = match (plan.kind, p.elementwise, p.ty) {
            (PlanKind::Ufunc, true, ArgType::Scalar(s)) => {
                ArgType::Array(port_codegen::ir::ArrayType {
                    elem: s,
                    ndim: 1,
                    contiguous: true,
                })
            }
            (_, _, t) => t,
        };
        let v = match ty {
            ArgType::Scalar(s) => InputValue::Scalar(
                s,
                match s {
                    ScalarType::Bool => 1.0,
                    ScalarType::I32 | ScalarType::I64 => 5.0,
                    ScalarType::F32 | ScalarType::F64 => 0.75,
                },
            ),
            ArgType::Array(a) => {
                let shape = vec![n; a.ndim as usize];
                let len: usize = shape.iter().product();
                let data = match a.elem {
                    ScalarType::Bool => {
                        ArrayData::Bool((0..len).map(|_| rng.next() & 1 == 1).collect())
                    }
                    ScalarType::I32 => {
                        ArrayData::I32((0..len).map(|_| (rng.next() % 8) as i32).collect())
                    }
                    ScalarType::I64 => {
                        ArrayData::I64((0..len).map(|_| (rng.next() % 8) as i64).collect())
                    }
                    ScalarType::F32 => ArrayData::F32(
                        (0..len)
                            .map(|_| (lo + (hi - lo) * rng.unit()) as f32)
                            .collect(),
                    ),
                    ScalarType::F64 => {
                        ArrayData::F64((0..len).map(|_| lo + (hi - lo) * rng.unit()).collect())
                    }
                };
                InputValue::Array(NdArray { shape, data })
            }
        };
        values.push((p.name.clone(), v));
    }
    Inputs {
        values,
        origin: InputOrigin::Generated,
    }
}

fn type_word(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "bool",
        ScalarType::I32 | ScalarType::I64 => "int",
        ScalarType::F32 | ScalarType::F64 => "float",
    }
}

/// Writes the inputs as `.npy` files and `manifest.json` into `dir`.
pub fn write(dir: &Path, inputs: &Inputs, otypes: &[&str]) -> Result<(), VerifyError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| VerifyError::Io(dir.display().to_string(), e.to_string()))?;
    let mut args = Vec::new();
    for (k, (name, v)) in inputs.values.iter().enumerate() {
        args.push(match v {
            InputValue::Array(a) => {
                let file = format!("arg{k}.npy");
                npy::write(&dir.join(&file), a)?;
                serde_json::json!({"name": name, "file": file})
            }
            InputValue::Scalar(t, x) => {
                serde_json::json!({"name": name, "scalar": x, "type": type_word(*t)})
            }
        });
    }
    let manifest = serde_json::json!({"args": args, "otypes": otypes});
    let p = dir.join("manifest.json");
    std::fs::write(&p, manifest.to_string())
        .map_err(|e| VerifyError::Io(p.display().to_string(), e.to_string()))
}

/// Reads inputs written by [`write`] or unpacked from a capture.
pub fn read(dir: &Path, origin: InputOrigin) -> Result<Inputs, VerifyError> {
    let p = dir.join("manifest.json");
    let text = std::fs::read_to_string(&p)
        .map_err(|e| VerifyError::Io(p.display().to_string(), e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| VerifyError::BadData(e.to_string()))?;
    let mut values = Vec::new();
    for a in v["args"].as_array().cloned().unwrap_or_default() {
        let name = a["name"].as_str().unwrap_or_default().to_string();
        let val = match a["file"].as_str() {
            Some(f) => InputValue::Array(npy::read(&dir.join(f))?),
            None => {
                let t = match a["type"].as_str() {
                    Some("bool") => ScalarType::Bool,
                    Some("int") => ScalarType::I64,
                    _ => ScalarType::F64,
                };
                let x = match &a["scalar"] {
                    serde_json::Value::Bool(b) => f64::from(u8::from(*b)),
                    other => other.as_f64().unwrap_or(0.0),
                };
                InputValue::Scalar(t, x)
            }
        };
        values.push((name, val));
    }
    Ok(Inputs { values, origin })
}
