//! The `np.linalg` routines of library steps ([`HostStep::Library`]), run
//! on the host with faer, with NumPy's meaning and NumPy's errors.
//!
//! Both devices run a library step the same way: [`crate::exec`] copies
//! the operands back, calls [`run`], and copies the result into the
//! step's device array, counting the bytes each way in the run's
//! transfers — except on a GPU with libcublas and libcusolver, where
//! cuBLAS computes a matrix product (`@`) and cuSOLVER float32/float64
//! `cholesky`, `solve`, `inv` and `det` on the device arrays
//! ([`crate::gpu`]). The emitted Python calls CuPy on the device when it
//! can.
//!
//! Arrays are C-ordered `NdArray`s; a stack of matrices (`(..., n, n)`) is
//! computed matrix by matrix, as NumPy's gufuncs do. The routine computes
//! in its operands' type (the rewriter converted them already): float32,
//! float64, complex64 or complex128.
//!
//! [`HostStep::Library`]: port_rewriter::HostStep::Library

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::traits::ComplexField;
use faer::{c32, c64, Mat, MatMut, MatRef, Side};
use port_codegen::ir::ScalarType;
use port_codegen::ArrayData;
use port_rewriter::plan::LibraryOp;

use crate::npy::NdArray;

/// What NumPy raises, as `LinAlgError: {0}` (or `ValueError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinAlgError(pub String);

/// One element type faer computes in.
trait Elem: ComplexField + Copy {
    /// The elements of `a`, when they are of this type.
    fn take(a: &ArrayData) -> Option<Vec<Self>>;
    fn give(v: Vec<Self>) -> ArrayData;
    /// Real values (singular values) as an array of the real type.
    fn give_real(v: Vec<Self::Real>) -> ArrayData;
    fn real_f64(r: Self::Real) -> f64;
    /// Machine epsilon of the real type.
    fn eps() -> f64;
    fn is_zero(self) -> bool;
}

impl Elem for f64 {
    fn take(a: &ArrayData) -> Option<Vec<f64>> {
        match a {
            ArrayData::F64(v) => Some(v.clone()),
            _ => None,
        }
    }
    fn give(v: Vec<f64>) -> ArrayData {
        ArrayData::F64(v)
    }
    fn give_real(v: Vec<f64>) -> ArrayData {
        ArrayData::F64(v)
    }
    fn real_f64(r: f64) -> f64 {
        r
    }
    fn eps() -> f64 {
        f64::EPSILON
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

impl Elem for f32 {
    fn take(a: &ArrayData) -> Option<Vec<f32>> {
        match a {
            ArrayData::F32(v) => Some(v.clone()),
            _ => None,
        }
    }
    fn give(v: Vec<f32>) -> ArrayData {
        ArrayData::F32(v)
    }
    fn give_real(v: Vec<f32>) -> ArrayData {
        ArrayData::F32(v)
    }
    fn real_f64(r: f32) -> f64 {
        f64::from(r)
    }
    fn eps() -> f64 {
        f64::from(f32::EPSILON)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

impl Elem for c64 {
    fn take(a: &ArrayData) -> Option<Vec<c64>> {
        match a {
            ArrayData::C128(v) => Some(v.iter().map(|&[re, im]| c64::new(re, im)).collect()),
            _ => None,
        }
    }
    fn give(v: Vec<c64>) -> ArrayData {
        ArrayData::C128(v.into_iter().map(|z| [z.re, z.im]).collect())
    }
    fn give_real(v: Vec<f64>) -> ArrayData {
        ArrayData::F64(v)
    }
    fn real_f64(r: f64) -> f64 {
        r
    }
    fn eps() -> f64 {
        f64::EPSILON
    }
    fn is_zero(self) -> bool {
        self.re == 0.0 && self.im == 0.0
    }
}

impl Elem for c32 {
    fn take(a: &ArrayData) -> Option<Vec<c32>> {
        match a {
            ArrayData::C64(v) => Some(v.iter().map(|&[re, im]| c32::new(re, im)).collect()),
            _ => None,
        }
    }
    fn give(v: Vec<c32>) -> ArrayData {
        ArrayData::C64(v.into_iter().map(|z| [z.re, z.im]).collect())
    }
    fn give_real(v: Vec<f32>) -> ArrayData {
        ArrayData::F32(v)
    }
    fn real_f64(r: f32) -> f64 {
        f64::from(r)
    }
    fn eps() -> f64 {
        f64::from(f32::EPSILON)
    }
    fn is_zero(self) -> bool {
        self.re == 0.0 && self.im == 0.0
    }
}

/// `op` on `args` (C-ordered, of one element type: float32, float64,
/// complex64 or complex128). The result has NumPy's shape, except that a
/// scalar (a determinant, a rank) is an array of one element.
pub fn run(op: LibraryOp, args: &[NdArray]) -> Result<NdArray, LinAlgError> {
    let Some(first) = args.first() else {
        return Err(LinAlgError("no operand".into()));
    };
    let t = first.elem();
    let args: Vec<NdArray> = args.iter().map(|a| a.convert(t)).collect();
    match t {
        ScalarType::F64 => typed::<f64>(op, &args),
        ScalarType::F32 => typed::<f32>(op, &args),
        ScalarType::C128 => typed::<c64>(op, &args),
        ScalarType::C64 => typed::<c32>(op, &args),
        other => Err(LinAlgError(format!(
            "array type {other} is unsupported in linalg (port converts operands to float64 first)"
        ))),
    }
}

/// A C-ordered operand: its shape and elements.
struct Operand<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

impl<T: Elem> Operand<T> {
    fn of(a: &NdArray) -> Result<Operand<T>, LinAlgError> {
        let data =
            T::take(&a.data).ok_or_else(|| LinAlgError("operands of different types".into()))?;
        Ok(Operand {
            shape: a.shape.clone(),
            data,
        })
    }

    /// The trailing (rows, cols) and the number of matrices in the stack.
    fn matrices(&self) -> Result<(usize, usize, usize), LinAlgError> {
        let nd = self.shape.len();
        if nd < 2 {
            return Err(LinAlgError(format!(
                "{nd}-dimensional array given. Array must be at least two-dimensional"
            )));
        }
        let (m, n) = (self.shape[nd - 2], self.shape[nd - 1]);
        Ok((m, n, self.shape[..nd - 2].iter().product()))
    }

    /// Matrix `k` of the stack (`rows × cols`).
    fn matrix(&self, k: usize, rows: usize, cols: usize) -> Mat<T> {
        let base = k * rows * cols;
        Mat::from_fn(rows, cols, |i, j| self.data[base + i * cols + j])
    }

    /// The operand as a matrix, transposed when `t`: a view of the C-ordered
    /// elements, no copy.
    fn view(&self, t: bool) -> Result<MatRef<'_, T>, LinAlgError> {
        let [r, c] = self.shape[..] else {
            return Err(LinAlgError(format!(
                "`@` of a {}-D array: port plans matrices only",
                self.shape.len()
            )));
        };
        let m = MatRef::from_row_major_slice(&self.data[..r * c], r, c);
        Ok(if t { m.transpose() } else { m })
    }

    fn square(&self) -> Result<(usize, usize), LinAlgError> {
        let (m, n, count) = self.matrices()?;
        if m != n {
            return Err(LinAlgError(
                "Last 2 dimensions of the array must be square".into(),
            ));
        }
        Ok((n, count))
    }
}

/// `m`'s elements in C order, appended to `out`.
fn push_c<T: Elem>(m: MatRef<'_, T>, out: &mut Vec<T>) {
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            out.push(m[(i, j)]);
        }
    }
}

fn array<T: Elem>(shape: Vec<usize>, data: Vec<T>) -> NdArray {
    NdArray {
        shape,
        data: T::give(data),
    }
}

/// `x @ y` in C order, computed as NumPy's BLAS does on this machine: in
/// blocks of rows, one per core (faer itself runs single-threaded here).
fn product<T: Elem>(x: MatRef<'_, T>, y: MatRef<'_, T>) -> Vec<T> {
    use rayon::prelude::*;
    let (m, n) = (x.nrows(), y.ncols());
    let mut out = vec![faer::traits::math_utils::zero::<T>(); m * n];
    if m == 0 || n == 0 {
        return out;
    }
    // Rows per block: the machine's cores share the rows, and a block is
    // never so thin that the per-call cost shows (small products: one block).
    let rows = m.div_ceil(rayon::current_num_threads()).max(64);
    out.par_chunks_mut(rows * n)
        .enumerate()
        .for_each(|(k, chunk)| {
            let first = k * rows;
            let count = chunk.len() / n;
            let dst = MatMut::from_row_major_slice_mut(chunk, count, n);
            faer::linalg::matmul::matmul(
                dst,
                faer::Accum::Replace,
                x.subrows(first, count),
                y,
                faer::traits::math_utils::one::<T>(),
                faer::Par::Seq,
            );
        });
    out
}

fn typed<T: Elem>(op: LibraryOp, args: &[NdArray]) -> Result<NdArray, LinAlgError> {
    let a = Operand::<T>::of(&args[0])?;
    match op {
        LibraryOp::Sort { .. } | LibraryOp::Median { .. } => Err(LinAlgError(format!(
            "{} is no np.linalg routine (verify's order module runs it)",
            op.numpy_name()
        ))),
        LibraryOp::Matmul { ta, tb } => {
            let b = args
                .get(1)
                .ok_or_else(|| LinAlgError("`@` needs two operands".into()))
                .and_then(Operand::<T>::of)?;
            let (x, y) = (a.view(ta)?, b.view(tb)?);
            if x.ncols() != y.nrows() {
                return Err(LinAlgError(format!(
                    "matmul: Input operand 1 has a mismatch in its core dimension 0 (size {} is different from {})",
                    y.nrows(),
                    x.ncols()
                )));
            }
            Ok(array(vec![x.nrows(), y.ncols()], product(x, y)))
        }
        LibraryOp::Cholesky => {
            let (n, count) = a.square()?;
            let mut out = Vec::with_capacity(a.data.len());
            for k in 0..count {
                // NumPy reads the lower triangle only, as faer does.
                let llt = a
                    .matrix(k, n, n)
                    .llt(Side::Lower)
                    .map_err(|_| LinAlgError("Matrix is not positive definite".into()))?;
                push_c(llt.L(), &mut out);
            }
            Ok(array(a.shape.clone(), out))
        }
        LibraryOp::Inv => {
            let (n, count) = a.square()?;
            let mut out = Vec::with_capacity(a.data.len());
            for k in 0..count {
                let lu = nonsingular(&a.matrix(k, n, n))?;
                push_c(lu.inverse().as_ref(), &mut out);
            }
            Ok(array(a.shape.clone(), out))
        }
        LibraryOp::Det => {
            let (n, count) = a.square()?;
            let mut out = Vec::with_capacity(count);
            for k in 0..count {
                out.push(a.matrix(k, n, n).determinant());
            }
            let shape = a.shape[..a.shape.len() - 2].to_vec();
            Ok(array(if shape.is_empty() { vec![1] } else { shape }, out))
        }
        LibraryOp::Solve => {
            let (n, count) = a.square()?;
            let b = Operand::<T>::of(&args[1])?;
            let vector = b.shape.len() == 1;
            let (brows, bcols) = if vector {
                (b.shape[0], 1)
            } else {
                let (r, c, bcount) = b.matrices()?;
                if bcount != count {
                    return Err(LinAlgError(format!(
                        "a stack of {bcount} right-hand sides for {count} matrices"
                    )));
                }
                (r, c)
            };
            if brows != n {
                return Err(LinAlgError(format!(
                    "solve: the right-hand side has {brows} rows, the matrix {n} (NumPy raises ValueError)"
                )));
            }
            let mut out = Vec::with_capacity(count * n * bcols);
            for k in 0..count {
                let lu = nonsingular(&a.matrix(k, n, n))?;
                let rhs = if vector {
                    b.matrix(0, n, 1)
                } else {
                    b.matrix(k, n, bcols)
                };
                push_c(lu.solve(&rhs).as_ref(), &mut out);
            }
            let mut shape = a.shape[..a.shape.len() - 1].to_vec();
            if !vector {
                shape.push(bcols);
            }
            Ok(array(shape, out))
        }
        LibraryOp::Lstsq | LibraryOp::LstsqRank | LibraryOp::LstsqSingular => {
            let b = Operand::<T>::of(&args[1])?;
            lstsq(op, &a, &b)
        }
    }
}

/// The LU factors of `m`, or NumPy's `Singular matrix` when a pivot is
/// exactly zero (LAPACK's `getrf` reports the same).
fn nonsingular<T: Elem>(m: &Mat<T>) -> Result<faer::linalg::solvers::PartialPivLu<T>, LinAlgError> {
    let lu = m.partial_piv_lu();
    let u = lu.U();
    if (0..u.nrows()).any(|i| u[(i, i)].is_zero()) {
        return Err(LinAlgError("Singular matrix".into()));
    }
    Ok(lu)
}

/// `np.linalg.lstsq(a, b, rcond=None)`: through the thin SVD of `a`,
/// singular values at most `eps · max(m, n) · s_max` taken as zero (NumPy's
/// `rcond=None`), which gives the minimum-norm solution when `a` is
/// rank-deficient, as LAPACK's `gelsd` does.
fn lstsq<T: Elem>(op: LibraryOp, a: &Operand<T>, b: &Operand<T>) -> Result<NdArray, LinAlgError> {
    let (m, n, count) = a.matrices()?;
    if count != 1 || a.shape.len() != 2 || b.shape.len() > 2 || b.shape.is_empty() {
        return Err(LinAlgError(
            "lstsq takes one matrix and a vector or matrix of right-hand sides".into(),
        ));
    }
    let vector = b.shape.len() == 1;
    let (brows, k) = if vector {
        (b.shape[0], 1)
    } else {
        (b.shape[0], b.shape[1])
    };
    if brows != m {
        return Err(LinAlgError("Incompatible dimensions".into()));
    }
    let svd = a
        .matrix(0, m, n)
        .thin_svd()
        .map_err(|_| LinAlgError("SVD did not converge in Linear Least Squares".into()))?;
    let s: Vec<T::Real> = (0..m.min(n))
        .map(|i| faer::traits::math_utils::real(&svd.S()[i]))
        .collect();
    let smax = s.iter().map(|x| T::real_f64(x.clone())).fold(0.0, f64::max);
    let cutoff = T::eps() * m.max(n) as f64 * smax;
    let kept: Vec<bool> = s.iter().map(|x| T::real_f64(x.clone()) > cutoff).collect();
    match op {
        LibraryOp::LstsqRank => {
            let rank = kept.iter().filter(|&&x| x).count() as i32;
            return Ok(NdArray {
                shape: vec![1],
                data: ArrayData::I32(vec![rank]),
            });
        }
        LibraryOp::LstsqSingular => {
            return Ok(NdArray {
                shape: vec![s.len()],
                data: T::give_real(s),
            })
        }
        _ => {}
    }
    // x = V · diag(1/s, kept) · Uᴴ · b
    let rhs = b.matrix(0, m, k);
    let mut c: Mat<T> = svd.U().adjoint() * &rhs;
    for (i, keep) in kept.iter().enumerate() {
        let scale: T = if *keep {
            faer::traits::math_utils::recip(&faer::traits::math_utils::from_real::<T>(&s[i]))
        } else {
            faer::traits::math_utils::zero()
        };
        for j in 0..k {
            c[(i, j)] *= scale;
        }
    }
    let x: Mat<T> = svd.V() * &c;
    let mut out = Vec::with_capacity(n * k);
    push_c(x.as_ref(), &mut out);
    Ok(array(if vector { vec![n] } else { vec![n, k] }, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(shape: &[usize], v: &[f64]) -> NdArray {
        NdArray {
            shape: shape.to_vec(),
            data: ArrayData::F64(v.to_vec()),
        }
    }

    fn values(a: &NdArray) -> Vec<f64> {
        (0..a.len()).map(|k| a.get_f64(k)).collect()
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn cholesky_gives_numpys_lower_factor() {
        // NumPy: np.linalg.cholesky([[4, 12, -16], [12, 37, -43], [-16, -43, 98]])
        let a = f64s(&[3, 3], &[4., 12., -16., 12., 37., -43., -16., -43., 98.]);
        let l = run(LibraryOp::Cholesky, &[a]).unwrap();
        assert_eq!(l.shape, vec![3, 3]);
        close(&values(&l), &[2., 0., 0., 6., 1., 0., -8., 5., 3.]);
    }

    #[test]
    fn cholesky_reads_the_lower_triangle_only() {
        let a = f64s(&[2, 2], &[4., 1e9, 2., 5.]);
        let l = run(LibraryOp::Cholesky, &[a]).unwrap();
        close(&values(&l), &[2., 0., 1., 2.]);
    }

    #[test]
    fn errors_are_numpys() {
        let indefinite = f64s(&[2, 2], &[1., 2., 2., 1.]);
        assert_eq!(
            run(LibraryOp::Cholesky, &[indefinite]).unwrap_err().0,
            "Matrix is not positive definite"
        );
        let singular = f64s(&[2, 2], &[1., 2., 2., 4.]);
        assert_eq!(
            run(LibraryOp::Inv, std::slice::from_ref(&singular))
                .unwrap_err()
                .0,
            "Singular matrix"
        );
        let b = f64s(&[2], &[1., 1.]);
        assert_eq!(
            run(LibraryOp::Solve, &[singular, b]).unwrap_err().0,
            "Singular matrix"
        );
        let rect = f64s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        assert_eq!(
            run(LibraryOp::Inv, &[rect]).unwrap_err().0,
            "Last 2 dimensions of the array must be square"
        );
    }

    #[test]
    fn solve_inv_and_det_of_a_small_system() {
        let a = f64s(&[2, 2], &[3., 1., 1., 2.]);
        let b = f64s(&[2], &[9., 8.]);
        let x = run(LibraryOp::Solve, &[a.clone(), b]).unwrap();
        assert_eq!(x.shape, vec![2]);
        close(&values(&x), &[2., 3.]);
        let bm = f64s(&[2, 2], &[9., 1., 8., 0.]);
        let xm = run(LibraryOp::Solve, &[a.clone(), bm]).unwrap();
        assert_eq!(xm.shape, vec![2, 2]);
        close(&values(&xm), &[2., 0.4, 3., -0.2]);
        let inv = run(LibraryOp::Inv, std::slice::from_ref(&a)).unwrap();
        close(&values(&inv), &[0.4, -0.2, -0.2, 0.6]);
        let d = run(LibraryOp::Det, &[a]).unwrap();
        assert_eq!(d.shape, vec![1]);
        close(&values(&d), &[5.]);
    }

    #[test]
    fn stacks_are_computed_matrix_by_matrix() {
        let a = f64s(&[2, 2, 2], &[2., 0., 0., 2., 1., 2., 3., 4.]);
        let d = run(LibraryOp::Det, std::slice::from_ref(&a)).unwrap();
        assert_eq!(d.shape, vec![2]);
        close(&values(&d), &[4., -2.]);
        let inv = run(LibraryOp::Inv, std::slice::from_ref(&a)).unwrap();
        close(&values(&inv), &[0.5, 0., 0., 0.5, -2., 1., 1.5, -0.5]);
        // A vector right-hand side is shared by every matrix of the stack.
        let x = run(LibraryOp::Solve, &[a, f64s(&[2], &[2., 2.])]).unwrap();
        assert_eq!(x.shape, vec![2, 2]);
        close(&values(&x), &[1., 1., -2., 2.]);
    }

    #[test]
    fn lstsq_fits_a_line_and_reports_rank_and_singular_values() {
        // NumPy's example: y = m x + c through four points.
        let a = f64s(&[4, 2], &[0., 1., 1., 1., 2., 1., 3., 1.]);
        let y = f64s(&[4], &[-1., 0.2, 0.9, 2.1]);
        let x = run(LibraryOp::Lstsq, &[a.clone(), y.clone()]).unwrap();
        assert_eq!(x.shape, vec![2]);
        close(&values(&x), &[1.0, -0.95]);
        let rank = run(LibraryOp::LstsqRank, &[a.clone(), y.clone()]).unwrap();
        assert_eq!(rank.data, ArrayData::I32(vec![2]));
        let s = run(LibraryOp::LstsqSingular, &[a, y]).unwrap();
        assert_eq!(s.shape, vec![2]);
        let sv = values(&s);
        // The singular values of [[0,1],[1,1],[2,1],[3,1]]: sqrt of the
        // eigenvalues of [[14, 6], [6, 4]].
        let e = |sign: f64| ((18.0 + sign * (100.0f64 + 144.0).sqrt()) / 2.0).sqrt();
        close(&sv, &[e(1.0), e(-1.0)]);
    }

    #[test]
    fn lstsq_of_a_rank_deficient_matrix_is_the_minimum_norm_solution() {
        // Two equal columns: NumPy gives the solution split evenly.
        let a = f64s(&[3, 2], &[1., 1., 1., 1., 1., 1.]);
        let b = f64s(&[3], &[2., 2., 2.]);
        close(
            &values(&run(LibraryOp::Lstsq, &[a.clone(), b.clone()]).unwrap()),
            &[1., 1.],
        );
        let rank = run(LibraryOp::LstsqRank, &[a, b]).unwrap();
        assert_eq!(rank.data, ArrayData::I32(vec![1]));
    }

    #[test]
    fn single_precision_and_complex_keep_their_type() {
        let a = NdArray {
            shape: vec![2, 2],
            data: ArrayData::F32(vec![4., 2., 2., 5.]),
        };
        let l = run(LibraryOp::Cholesky, &[a]).unwrap();
        assert_eq!(l.data, ArrayData::F32(vec![2., 0., 1., 2.]));
        // A Hermitian positive definite matrix: [[2, i], [-i, 2]].
        let z = NdArray {
            shape: vec![2, 2],
            data: ArrayData::C128(vec![[2., 0.], [0., 1.], [0., -1.], [2., 0.]]),
        };
        let l = run(LibraryOp::Cholesky, std::slice::from_ref(&z)).unwrap();
        let r2 = 2f64.sqrt();
        let ArrayData::C128(v) = &l.data else {
            panic!("complex128 result")
        };
        let want = [[r2, 0.], [0., 0.], [0., -1. / r2], [(1.5f64).sqrt(), 0.]];
        for (x, w) in v.iter().zip(want) {
            assert!(
                (x[0] - w[0]).abs() < 1e-12 && (x[1] - w[1]).abs() < 1e-12,
                "{v:?}"
            );
        }
        let d = run(LibraryOp::Det, &[z]).unwrap();
        assert_eq!(d.elem(), ScalarType::C128);
        assert!((d.get_c(0).0 - 3.0).abs() < 1e-12 && d.get_c(0).1.abs() < 1e-12);
    }

    /// `a @ b` with each operand read as given or transposed, against the
    /// sums written out; a mismatched inner extent is NumPy's error.
    #[test]
    fn matmul_reads_operands_as_given_or_transposed() {
        // a: 2 x 3, b: 3 x 2, c = a @ b (2 x 2).
        let a = f64s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let b = f64s(&[3, 2], &[7., 8., 9., 10., 11., 12.]);
        let mm = |ta, tb| LibraryOp::Matmul { ta, tb };
        let c = run(mm(false, false), &[a.clone(), b.clone()]).unwrap();
        assert_eq!(c.shape, vec![2, 2]);
        close(&values(&c), &[58., 64., 139., 154.]);
        // aᵀ @ a: 3 x 3.
        let g = run(mm(true, false), &[a.clone(), a.clone()]).unwrap();
        assert_eq!(g.shape, vec![3, 3]);
        close(&values(&g), &[17., 22., 27., 22., 29., 36., 27., 36., 45.]);
        // a @ bᵀ with b stored 2 x 3 (= a): a aᵀ, 2 x 2.
        let h = run(mm(false, true), &[a.clone(), a.clone()]).unwrap();
        close(&values(&h), &[14., 32., 32., 77.]);
        // float32 stays float32.
        let a32 = a.convert(ScalarType::F32);
        let b32 = b.convert(ScalarType::F32);
        assert_eq!(
            run(mm(false, false), &[a32, b32]).unwrap().elem(),
            ScalarType::F32
        );
        let e = run(mm(false, false), &[a.clone(), a]).unwrap_err();
        assert!(e.0.contains("mismatch in its core dimension 0"), "{}", e.0);
    }

    #[test]
    fn a_product_of_many_rows_is_computed_in_blocks_and_gives_every_row() {
        // 301 rows: several blocks of rows on any number of cores, the
        // last one short; each row checked against the schoolbook product,
        // with the left operand read transposed.
        let (m, k, n) = (301, 7, 5);
        let at: Vec<f64> = (0..k * m).map(|v| (v % 13) as f64 - 6.0).collect();
        let b: Vec<f64> = (0..k * n).map(|v| (v % 5) as f64 * 0.5).collect();
        let c = run(
            LibraryOp::Matmul {
                ta: true,
                tb: false,
            },
            &[f64s(&[k, m], &at), f64s(&[k, n], &b)],
        )
        .unwrap();
        assert_eq!(c.shape, vec![m, n]);
        let want: Vec<f64> = (0..m * n)
            .map(|e| (0..k).map(|l| at[l * m + e / n] * b[l * n + e % n]).sum())
            .collect();
        close(&values(&c), &want);
    }
}
