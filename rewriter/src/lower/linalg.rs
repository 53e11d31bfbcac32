//! **linalg**: `np.linalg.cholesky`, `solve`, `inv`, `det` and
//! `lstsq(…, rcond=None)[0]` (and `[2]`, `[3]`) as library steps of the
//! host schedule ([`HostStep::Library`]), between the kernels.
//!
//! A routine like these is no element template: it is one call on whole
//! matrices. Its operands are device arrays — a plain array (an argument,
//! an array the wrapper allocated) is passed as it is; any other value (a
//! view, `A.T`, an expression, an integer matrix NumPy would convert to
//! float64) is first stored into an array of its own by a kernel
//! ([`Recurse::materialise`]), in the type the routine computes in
//! (NumPy's: complex when an operand is, single precision only when every
//! operand is float32/complex64, else double). The result is allocated by
//! the wrapper with the shape NumPy gives it and bound like any array, so
//! the kernels before and after the call fuse as they do elsewhere; a
//! determinant (or `lstsq`'s rank) is a one-element array read like a
//! reduction's result. Extents the routine needs equal — a square matrix,
//! as many rows in `b` as in `a` — become shape guards before it
//! ([`crate::lower::shapes`]), with NumPy's message.
//!
//! Where it runs: `verify` runs the step on the host (operands copied back,
//! computed with faer, the result copied over, each way counted in the
//! run's transfers; no cuSOLVER/cuBLAS through cudarc yet); the emitted
//! wrapper calls CuPy on the device arrays when CuPy is importable and the
//! arrays live on a GPU, else NumPy on host copies (the path Numba's CUDA
//! simulator takes).
//!
//! Refused, with the line: a call inside a parallel loop or a device
//! function (a library call runs between kernels), other `np.linalg`
//! routines, `cholesky(…, upper=True)`, `lstsq` with an `rcond` other than
//! `None` or without the `[k]` that picks its solution, rank or singular
//! values (its residuals' shape depends on the rank found at run time),
//! stacks for `lstsq` (NumPy refuses them too) and stacks of right-hand
//! sides whose rank differs from the matrices'.

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, BinOp, Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{whole_array, HostBind, Lowerer, Recurse, Region, RegionKind};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::plan::{Fill, HostStep, LibraryCall, LibraryOp};

pub const NAME: &str = "linalg";

/// The `np.linalg` routines port runs as library steps.
pub const SUPPORTED: [&str; 5] = ["cholesky", "solve", "inv", "det", "lstsq"];

/// NumPy's message for a matrix that is not square.
const SQUARE: &str = "Last 2 dimensions of the array must be square (NumPy raises LinAlgError)";

/// Whether a resolved call name is a routine of `np.linalg` this pass
/// answers for (all but `norm`, which is a reduction).
pub fn is_linalg(name: &str) -> bool {
    name.strip_prefix("numpy.linalg.")
        .is_some_and(|f| f != "norm" && !f.contains('.'))
}

/// The type a routine computes in, from its operands' element types
/// (NumPy's `linalg._commonType`): integers and booleans become float64;
/// the result is complex when an operand is, and single precision only
/// when every operand is.
pub fn compute_type(elems: &[ScalarType]) -> ScalarType {
    let complex = elems.iter().any(|t| t.is_complex());
    let single = elems
        .iter()
        .all(|t| matches!(t, ScalarType::F32 | ScalarType::C64));
    match (complex, single) {
        (true, true) => ScalarType::C64,
        (true, false) => ScalarType::C128,
        (false, true) => ScalarType::F32,
        (false, false) => ScalarType::F64,
    }
}

impl Lowerer<'_> {
    /// `np.linalg.f(…)` not subscripted: `cholesky`, `solve`, `inv`,
    /// `det`; anything else is refused by name.
    pub(crate) fn linalg_call(
        &mut self,
        r: &mut Region,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        let name = self.src.resolve(&c.func).unwrap_or_default();
        let short = name.rsplit('.').next().unwrap_or_default().to_string();
        let op = match short.as_str() {
            "cholesky" => LibraryOp::Cholesky,
            "solve" => LibraryOp::Solve,
            "inv" => LibraryOp::Inv,
            "det" => LibraryOp::Det,
            "lstsq" => {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{}`: port takes `np.linalg.lstsq(a, b, rcond=None)[0]` (the solution), `[2]` (the rank) or `[3]` (the singular values), one at a time: its residuals' shape depends on the rank found at run time",
                        self.src.text_of(c)
                    ),
                )
            }
            _ => {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "calls `np.linalg.{short}`: port runs `np.linalg.{}` as library calls on the host schedule, not `{short}` yet",
                        SUPPORTED.join("`, `np.linalg.")
                    ),
                )
            }
        };
        self.linalg_step(r, op, c, line)
    }

    /// `np.linalg.lstsq(a, b, rcond=None)[k]`: the `k`th result (0, 2 or
    /// 3). `None` when `s` is no such subscript.
    pub(crate) fn linalg_item(
        &mut self,
        r: &mut Region,
        s: &ast::ExprSubscript,
        line: u32,
    ) -> Lower<Option<Val>> {
        let ast::Expr::Call(c) = s.value.as_ref() else {
            return Ok(None);
        };
        if self.src.resolve(&c.func).as_deref() != Some("numpy.linalg.lstsq") {
            return Ok(None);
        }
        let op = match self.src.eval_const(&s.slice) {
            Some(crate::source::Const::Int(0)) => LibraryOp::Lstsq,
            Some(crate::source::Const::Int(2)) => LibraryOp::LstsqRank,
            Some(crate::source::Const::Int(3)) => LibraryOp::LstsqSingular,
            Some(crate::source::Const::Int(1)) => {
                return refuse(
                    NAME,
                    line,
                    "`np.linalg.lstsq(…)[1]`: the residuals' shape depends on the rank found at run time (empty when `a` is rank-deficient); compute `np.sum((a @ x - b) ** 2, axis=0)` instead",
                )
            }
            _ => {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{}`: port takes `np.linalg.lstsq(…)[k]` with a constant `k` of 0, 2 or 3",
                        self.src.text_of(s)
                    ),
                )
            }
        };
        self.linalg_step(r, op, c, line).map(Some)
    }

    /// The operands, the result's allocation, the guards and the step.
    fn linalg_step(
        &mut self,
        r: &mut Region,
        op: LibraryOp,
        c: &ast::ExprCall,
        line: u32,
    ) -> Lower<Val> {
        let called = op.numpy_name();
        if let Some(inside) = off_the_host(r.kind) {
            let advice = if op.lstsq_item().is_some() {
                "call it outside the loop".to_string()
            } else {
                format!("`{called}` takes a stack of matrices (`(..., n, n)`) at once: call it on the whole stack, outside the loop")
            };
            return refuse(
                NAME,
                line,
                format!(
                    "`{called}` inside {inside}: a library call runs on the host schedule between kernels, on whole matrices; {advice}"
                ),
            );
        }
        let arity = match op {
            LibraryOp::Cholesky | LibraryOp::Inv | LibraryOp::Det => 1,
            _ => 2,
        };
        let mut operands: Vec<&ast::Expr> = c.args.iter().collect();
        let mut rcond: Option<&ast::Expr> = None;
        if op.lstsq_item().is_some() && operands.len() == 3 {
            rcond = operands.pop();
        }
        for k in &c.keywords {
            match (k.arg.as_ref().map(|a| a.as_str()), op) {
                (Some("rcond"), _) if op.lstsq_item().is_some() => rcond = Some(&k.value),
                (Some("upper"), LibraryOp::Cholesky) => {
                    if !matches!(
                        self.src.eval_const(&k.value),
                        Some(crate::source::Const::Bool(false))
                    ) {
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`{}`: port takes the lower factor (NumPy's default); transpose it (`.T.conj()`) for the upper one",
                                self.src.text_of(c)
                            ),
                        );
                    }
                }
                (other, _) => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: keyword `{}` of `{called}` is not supported",
                            self.src.text_of(c),
                            other.unwrap_or("**")
                        ),
                    )
                }
            }
        }
        if op.lstsq_item().is_some() {
            let none = rcond.is_some_and(
                |e| matches!(e, ast::Expr::Constant(k) if matches!(k.value, ast::Constant::None)),
            );
            if !none {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{}`: port takes `rcond=None` (machine precision times the larger extent, NumPy's default), given explicitly",
                        self.src.text_of(c)
                    ),
                );
            }
        }
        if operands.len() != arity {
            return refuse(
                NAME,
                line,
                format!(
                    "`{called}` takes {arity} array(s) here, given {}",
                    operands.len()
                ),
            );
        }
        let mut vals: Vec<ArrVal> = Vec::new();
        for e in &operands {
            match self.expr(r, e)? {
                Val::Array(av) => vals.push(av),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{called}` of `{}`, which is not an array (NumPy raises LinAlgError: 0-dimensional array given)",
                            self.src.text_of(*e)
                        ),
                    )
                }
            }
        }
        let a = &vals[0];
        let nd = a.ndim();
        if nd < 2 {
            return refuse(
                NAME,
                line,
                format!(
                    "`{called}` of the {nd}-dimensional `{}` (NumPy raises LinAlgError: Array must be at least two-dimensional)",
                    self.src.text_of(operands[0])
                ),
            );
        }
        let t = compute_type(&vals.iter().map(|v| v.elem).collect::<Vec<_>>());
        // What NumPy checks: square matrices, matching rows.
        let mut pairs: Vec<(Expr, Expr)> = Vec::new();
        let rows = a.shape[nd - 2].clone();
        let cols = a.shape[nd - 1].clone();
        let batch: Vec<Expr> = a.shape[..nd - 2].to_vec();
        if op.lstsq_item().is_none() {
            pairs.push((rows.clone(), cols.clone()));
        }
        let (out_shape, out_elem): (Vec<Expr>, ScalarType) = match op {
            LibraryOp::Matmul { .. } | LibraryOp::Sort { .. } | LibraryOp::Median { .. } => {
                unreachable!("`@`, `np.sort` and `np.median` are planned elsewhere")
            }
            LibraryOp::Cholesky | LibraryOp::Inv => (a.shape.clone(), t),
            LibraryOp::Det => (batch.clone(), t),
            LibraryOp::Solve => {
                let b = &vals[1];
                let rhs_text = "the right-hand side must have as many rows as the matrix (NumPy raises ValueError)";
                let mut rhs_pairs = Vec::new();
                let shape = if b.ndim() == 1 {
                    rhs_pairs.push((b.shape[0].clone(), cols.clone()));
                    let mut s = batch.clone();
                    s.push(rows.clone());
                    s
                } else if b.ndim() == nd {
                    rhs_pairs.push((b.shape[nd - 2].clone(), cols.clone()));
                    for (k, e) in batch.iter().enumerate() {
                        rhs_pairs.push((b.shape[k].clone(), e.clone()));
                    }
                    b.shape.clone()
                } else {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: a right-hand side of {} dimensions against matrices of {nd}: port takes a vector, or a stack of the matrices' rank",
                            self.src.text_of(c),
                            b.ndim()
                        ),
                    );
                };
                self.assume_equal(None, rhs_pairs, line, rhs_text)?;
                (shape, t)
            }
            LibraryOp::Lstsq | LibraryOp::LstsqRank | LibraryOp::LstsqSingular => {
                let b = &vals[1];
                if nd != 2 || b.ndim() > 2 {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{}`: `np.linalg.lstsq` of stacks (NumPy takes one matrix and a vector or matrix of right-hand sides)",
                            self.src.text_of(c)
                        ),
                    );
                }
                let rhs_text = "Incompatible dimensions: the right-hand side must have as many rows as the matrix (NumPy raises LinAlgError)";
                self.assume_equal(
                    None,
                    vec![(b.shape[0].clone(), rows.clone())],
                    line,
                    rhs_text,
                )?;
                match op {
                    LibraryOp::Lstsq if b.ndim() == 1 => (vec![cols.clone()], t),
                    LibraryOp::Lstsq => (vec![cols.clone(), b.shape[1].clone()], t),
                    // LAPACK's integer: NumPy's rank is an int32.
                    LibraryOp::LstsqRank => (Vec::new(), ScalarType::I32),
                    _ => (
                        vec![binary(BinOp::Min, rows.clone(), cols.clone())],
                        t.component(),
                    ),
                }
            }
        };
        self.assume_equal(None, pairs, line, SQUARE)?;
        // The operands as device arrays of type `t`.
        let hint = match op {
            LibraryOp::Cholesky => "chol",
            LibraryOp::Solve => "solved",
            LibraryOp::Inv => "inverse",
            LibraryOp::Det => "det",
            LibraryOp::Lstsq => "lstsq",
            LibraryOp::LstsqRank => "rank",
            LibraryOp::LstsqSingular => "sing",
            LibraryOp::Matmul { .. } | LibraryOp::Sort { .. } | LibraryOp::Median { .. } => {
                unreachable!("`@`, `np.sort` and `np.median` are planned elsewhere")
            }
        };
        let mut args = Vec::new();
        let mut copied = Vec::new();
        for (k, v) in vals.iter().enumerate() {
            let (name, was_copied) = self.library_operand(v, t, hint, line)?;
            if was_copied {
                copied.push(format!("`{}`", self.src.text_of(operands[k])));
            }
            args.push(name);
        }
        let out = self.library_step(op, args, out_shape, out_elem, hint, line);
        let what = match op.lstsq_item() {
            Some(k) => format!("`{called}(…)[{k}]`"),
            None => format!("`{called}`"),
        };
        let operands_note = if copied.is_empty() {
            String::new()
        } else {
            format!(" ({} stored into device arrays first)", copied.join(", "))
        };
        self.log.applied(
            NAME,
            format!(
                "{what} at line {line}: a library step of the host schedule{operands_note}; port's GPU runs compute it with cuSOLVER (float32/float64 cholesky, solve, inv, det; else on the host), the simulator on the host, the emitted wrapper with CuPy on the GPU or NumPy"
            ),
        );
        Ok(out)
    }

    /// A library step's operand as a device array of type `t`: a plain
    /// array (an argument, an array the wrapper allocated) as it is, any
    /// other value (a view, an expression, another type) first stored
    /// into an array of its own by a kernel (`true`: it was).
    pub(crate) fn library_operand(
        &mut self,
        v: &ArrVal,
        t: ScalarType,
        hint: &str,
        line: u32,
    ) -> Lower<(String, bool)> {
        let plain = whole_array(v).filter(|n| {
            v.elem == t
                && (matches!(self.host.get(n), Some(HostBind::Array(_)))
                    || self.params.iter().any(|(p, ty)| p == n && ty.is_array()))
        });
        if let Some(n) = plain {
            return Ok((n, false));
        }
        let converted = if v.elem == t {
            v.clone()
        } else {
            let from = v.elem;
            v.map(t, |e| cast_to(e, from, t))
        };
        Ok((
            self.materialise(&format!("{hint}_arg"), &converted, line)?,
            true,
        ))
    }

    /// The result's allocation (NumPy's shape, one element for a scalar),
    /// the guards flushed before it, and the step; the result, to the code
    /// after it: the array, or a scalar read back like a reduction's.
    pub(crate) fn library_step(
        &mut self,
        op: LibraryOp,
        args: Vec<String>,
        out_shape: Vec<Expr>,
        out_elem: ScalarType,
        hint: &str,
        line: u32,
    ) -> Val {
        let scalar = out_shape.is_empty();
        let alloc_shape = if scalar { vec![i64(1)] } else { out_shape };
        let out = self.fresh(hint);
        let host_shape: Vec<Expr> = alloc_shape
            .iter()
            .map(|e| self.hostify(e.clone()))
            .collect();
        let ty = ArrayType {
            elem: out_elem,
            ndim: host_shape.len() as u8,
            contiguous: true,
        };
        self.steps.push(HostStep::Alloc {
            name: out.clone(),
            elem: out_elem,
            shape: host_shape,
            fill: Fill::Empty,
        });
        self.host.insert(out.clone(), HostBind::Array(ty));
        // The extents it relies on, checked before it runs.
        self.flush_guards();
        self.steps.push(HostStep::Library(LibraryCall {
            op,
            args,
            out: out.clone(),
            line,
        }));
        if scalar {
            // Read back like a reduction's result.
            self.accs.insert(out.clone());
            return Val::scalar(load(&out, vec![i64(0)]), out_elem);
        }
        Val::Array(ArrVal::named(&out, ty))
    }
}

/// Where a library step cannot run, in words (`a parallel loop`): `None`
/// on the host schedule, where it can.
pub(crate) fn off_the_host(kind: RegionKind) -> Option<&'static str> {
    match kind {
        RegionKind::Host => None,
        RegionKind::Device => Some("a function called from a kernel"),
        _ => Some("a parallel loop"),
    }
}
