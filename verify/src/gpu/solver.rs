//! `np.linalg.cholesky`, `solve`, `inv` and `det` of float32/float64
//! matrices (and stacks of them) on cuSOLVER's dense LAPACK, on the
//! device arrays themselves: no operand goes back to the host.
//!
//! cuSOLVER is column-major, and a C-ordered `n × n` buffer read
//! column-major is the matrix's transpose `M = Aᵀ`. Every routine is
//! written so that this costs nothing:
//! - **Cholesky.** NumPy reads the lower triangle of `A`, which is the
//!   upper one of `M`; `potrf(UPPER)` gives `M = UᵀU` with `U` in that
//!   same triangle, and `U` read back in C order is `Uᵀ = L`, `A = L Lᵀ`.
//!   The other triangle (still `A`'s) is zeroed, one column at a time.
//! - **LU.** `getrf(M)` factors `Aᵀ`. `getrs(T)` with it solves
//!   `Mᵀ X = A X = B`. `getrs(N)` on the identity gives `M⁻¹ = (A⁻¹)ᵀ`,
//!   which read in C order is `A⁻¹`. `det(M) = det(A)` is the product of
//!   `U`'s diagonal (at the same offsets in either order), its sign
//!   flipped once per row swap.
//! - **Solve with a matrix `b`.** Its C-ordered buffer is `bᵀ`
//!   column-major: cuBLAS's `geam` transposes it into a scratch array,
//!   `getrs` solves there, and `geam` transposes the answer into place.
//!
//! What NumPy raises is checked as it does: `getrf`'s or `potrf`'s
//! `info` is read back after the stack (a pivot exactly zero, a matrix
//! not positive definite). Complex types, `lstsq`, empty matrices and
//! shapes NumPy would reject go to the host reference
//! ([`crate::linalg`]), which raises NumPy's error.

use cudarc::cublas::sys as blas;
use cudarc::cusolver::sys as sol;
use cudarc::cusolver::DnHandle;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use port_codegen::ir::ScalarType;
use port_rewriter::plan::LibraryOp;

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaStream;

use super::driver::cuda;
use crate::error::VerifyError;
use crate::exec::{elem_size, DevArray};

type Buf = CudaSlice<u8>;

/// The routines of one element type.
trait Lapack: Copy + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits {
    const ONE: Self;
    const ZERO: Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    unsafe fn potrf_size(h: sol::cusolverDnHandle_t, n: i32, a: *mut Self, lw: *mut i32) -> Status;
    unsafe fn potrf(
        h: sol::cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        w: *mut Self,
        lw: i32,
        info: *mut i32,
    ) -> Status;
    unsafe fn getrf_size(h: sol::cusolverDnHandle_t, n: i32, a: *mut Self, lw: *mut i32) -> Status;
    unsafe fn getrf(
        h: sol::cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        w: *mut Self,
        ipiv: *mut i32,
        info: *mut i32,
    ) -> Status;
    #[allow(clippy::too_many_arguments)]
    unsafe fn getrs(
        h: sol::cusolverDnHandle_t,
        trans: sol::cublasOperation_t,
        n: i32,
        nrhs: i32,
        a: *const Self,
        ipiv: *const i32,
        b: *mut Self,
        info: *mut i32,
    ) -> Status;
    /// `c (m × n, ld ldc) = op(a)` with `op` a transpose (`geam` with β = 0,
    /// in place on `c` as cuBLAS allows).
    unsafe fn transpose(
        h: blas::cublasHandle_t,
        m: i32,
        n: i32,
        a: *const Self,
        lda: i32,
        c: *mut Self,
        ldc: i32,
    ) -> Status;
    /// `y[i] = x[i * incx]`, `i < n`.
    unsafe fn copy(
        h: blas::cublasHandle_t,
        n: i32,
        x: *const Self,
        incx: i32,
        y: *mut Self,
    ) -> Status;
}

/// A cuSOLVER or cuBLAS status, as one line.
enum Status {
    Solver(sol::cusolverStatus_t),
    Blas(blas::cublasStatus_t),
}

impl Status {
    fn ok(self, what: &str) -> Result<(), VerifyError> {
        match self {
            Status::Solver(sol::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS)
            | Status::Blas(blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS) => Ok(()),
            Status::Solver(s) => Err(VerifyError::Cuda(format!("cuSOLVER's {what}: {s:?}"))),
            Status::Blas(s) => Err(VerifyError::Cuda(format!("cuBLAS's {what}: {s:?}"))),
        }
    }
}

macro_rules! lapack {
    ($t:ty, $potrf_size:ident, $potrf:ident, $getrf_size:ident, $getrf:ident, $getrs:ident,
     $geam:ident, $copy:ident) => {
        impl Lapack for $t {
            const ONE: $t = 1.0;
            const ZERO: $t = 0.0;
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn from_f64(v: f64) -> $t {
                v as $t
            }
            unsafe fn potrf_size(
                h: sol::cusolverDnHandle_t,
                n: i32,
                a: *mut $t,
                lw: *mut i32,
            ) -> Status {
                Status::Solver(sol::$potrf_size(
                    h,
                    sol::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
                    n,
                    a,
                    n,
                    lw,
                ))
            }
            unsafe fn potrf(
                h: sol::cusolverDnHandle_t,
                n: i32,
                a: *mut $t,
                w: *mut $t,
                lw: i32,
                info: *mut i32,
            ) -> Status {
                Status::Solver(sol::$potrf(
                    h,
                    sol::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
                    n,
                    a,
                    n,
                    w,
                    lw,
                    info,
                ))
            }
            unsafe fn getrf_size(
                h: sol::cusolverDnHandle_t,
                n: i32,
                a: *mut $t,
                lw: *mut i32,
            ) -> Status {
                Status::Solver(sol::$getrf_size(h, n, n, a, n, lw))
            }
            unsafe fn getrf(
                h: sol::cusolverDnHandle_t,
                n: i32,
                a: *mut $t,
                w: *mut $t,
                ipiv: *mut i32,
                info: *mut i32,
            ) -> Status {
                Status::Solver(sol::$getrf(h, n, n, a, n, w, ipiv, info))
            }
            unsafe fn getrs(
                h: sol::cusolverDnHandle_t,
                trans: sol::cublasOperation_t,
                n: i32,
                nrhs: i32,
                a: *const $t,
                ipiv: *const i32,
                b: *mut $t,
                info: *mut i32,
            ) -> Status {
                Status::Solver(sol::$getrs(h, trans, n, nrhs, a, n, ipiv, b, n, info))
            }
            unsafe fn transpose(
                h: blas::cublasHandle_t,
                m: i32,
                n: i32,
                a: *const $t,
                lda: i32,
                c: *mut $t,
                ldc: i32,
            ) -> Status {
                let (one, zero): ($t, $t) = (1.0, 0.0);
                Status::Blas(blas::$geam(
                    h,
                    blas::cublasOperation_t::CUBLAS_OP_T,
                    blas::cublasOperation_t::CUBLAS_OP_N,
                    m,
                    n,
                    &one,
                    a,
                    lda,
                    &zero,
                    c,
                    ldc,
                    c,
                    ldc,
                ))
            }
            unsafe fn copy(
                h: blas::cublasHandle_t,
                n: i32,
                x: *const $t,
                incx: i32,
                y: *mut $t,
            ) -> Status {
                Status::Blas(blas::$copy(h, n, x, incx, y, 1))
            }
        }
    };
}

lapack!(
    f32,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf,
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf,
    cusolverDnSgetrs,
    cublasSgeam,
    cublasScopy_v2
);
lapack!(
    f64,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf,
    cusolverDnDgetrf_bufferSize,
    cusolverDnDgetrf,
    cusolverDnDgetrs,
    cublasDgeam,
    cublasDcopy_v2
);

/// The shapes of one step, checked: `count` matrices of `n × n`, and for
/// `solve` the right-hand side's columns (`None`: one vector for all).
pub(super) struct Shapes {
    n: usize,
    count: usize,
    rhs_cols: Option<usize>,
}

impl Shapes {
    /// `None` where the host reference must answer (it raises NumPy's
    /// error, or the case is empty).
    fn of(op: LibraryOp, args: &[&DevArray<Buf>], out: &DevArray<Buf>) -> Option<Shapes> {
        let a = args.first()?;
        let nd = a.shape.len();
        if nd < 2 || a.shape[nd - 2] != a.shape[nd - 1] {
            return None;
        }
        let n = a.shape[nd - 1];
        let count: usize = a.shape[..nd - 2].iter().product();
        if n == 0 || count == 0 || i32::try_from(n * n).is_err() {
            return None;
        }
        let mut rhs_cols = None;
        let out_len = match op {
            LibraryOp::Cholesky | LibraryOp::Inv => count * n * n,
            LibraryOp::Det => count,
            LibraryOp::Solve => {
                let b = args.get(1)?;
                if b.shape.len() == 1 {
                    if b.shape[0] != n {
                        return None;
                    }
                    count * n
                } else {
                    let bd = b.shape.len();
                    let bcount: usize = b.shape[..bd - 2].iter().product();
                    let cols = b.shape[bd - 1];
                    if b.shape[bd - 2] != n || bcount != count || cols == 0 {
                        return None;
                    }
                    i32::try_from(cols).ok()?;
                    rhs_cols = Some(cols);
                    count * n * cols
                }
            }
            _ => return None,
        };
        (out.len() == out_len).then_some(Shapes { n, count, rhs_cols })
    }
}

/// The shapes of `out = op(args)` when it is a step this
/// module computes (float32/float64, shapes NumPy accepts); `None`
/// otherwise (the host computes it then).
pub(super) fn applies(
    op: LibraryOp,
    args: &[&DevArray<Buf>],
    out: &DevArray<Buf>,
) -> Option<Shapes> {
    let elem = args.first()?.elem;
    if !matches!(elem, ScalarType::F32 | ScalarType::F64)
        || args.iter().any(|a| a.elem != elem)
        || out.elem != elem
    {
        return None;
    }
    Shapes::of(op, args, out)
}

/// cuSOLVER's dense handle on `stream`, made at the first call; `None` when
/// libcusolver is not found (said once), as the device's cuBLAS handle is.
pub(super) fn dense_solver<'h>(
    dn: &'h mut Option<Option<DnHandle>>,
    stream: &Arc<CudaStream>,
) -> Option<&'h DnHandle> {
    if dn.is_none() {
        // SAFETY: only checks that the library loads.
        let present = unsafe { sol::is_culib_present() };
        *dn = Some(if present {
            DnHandle::new(stream.clone()).ok()
        } else {
            None
        });
        if !present {
            eprintln!(
                "port: cuSOLVER (libcusolver) not found on the loader's path: np.linalg runs on the host"
            );
        }
    }
    dn.as_ref()?.as_ref()
}

/// `out = op(args)` with the handles of the device's stream, in the
/// element type [`applies`] checked.
pub(super) fn run(
    stream: &Arc<CudaStream>,
    dn: &DnHandle,
    blas: &CudaBlas,
    op: LibraryOp,
    s: &Shapes,
    args: &[&DevArray<Buf>],
    out: &mut DevArray<Buf>,
) -> Result<(), VerifyError> {
    if out.elem == ScalarType::F32 {
        routine::<f32>(stream, dn, blas, op, s, args, out)
    } else {
        routine::<f64>(stream, dn, blas, op, s, args, out)
    }
}

fn routine<T: Lapack>(
    stream: &Arc<CudaStream>,
    dn: &DnHandle,
    blas: &CudaBlas,
    op: LibraryOp,
    s: &Shapes,
    args: &[&DevArray<Buf>],
    out: &mut DevArray<Buf>,
) -> Result<(), VerifyError> {
    let stream = stream.clone();
    let size = elem_size(out.elem);
    debug_assert_eq!(size, std::mem::size_of::<T>());
    let (n, count) = (s.n, s.count);
    let ni = n as i32;
    let mat = n * n * size;
    let dn = dn.cu();
    let bh = *blas.handle();
    let a = args[0];
    let mut info = stream.alloc_zeros::<i32>(count).map_err(cuda)?;
    let (info_p, _gi) = info.device_ptr_mut(&stream);
    let info_at = |k: usize| (info_p + (k * 4) as u64) as *mut i32;

    if op == LibraryOp::Cholesky {
        stream.memcpy_dtod(&a.buf, &mut out.buf).map_err(cuda)?;
        let (o, _go) = out.buf.device_ptr_mut(&stream);
        let at = |k: usize| (o + (k * mat) as u64) as *mut T;
        let mut lw = 0i32;
        // SAFETY: `out` holds `count` C-ordered n × n matrices of `T`.
        unsafe { T::potrf_size(dn, ni, at(0), &mut lw) }.ok("potrf_bufferSize")?;
        let mut work = stream
            .alloc_zeros::<T>((lw as usize).max(1))
            .map_err(cuda)?;
        let (w, _gw) = work.device_ptr_mut(&stream);
        for k in 0..count {
            // SAFETY: as above; the workspace has the size asked.
            unsafe { T::potrf(dn, ni, at(k), w as *mut T, lw, info_at(k)) }.ok("potrf")?;
            // A's upper triangle (C order) is the strict lower one
            // column-major: column j from row j + 1 on.
            for j in 0..n - 1 {
                let start = o + (k * mat + (j * n + j + 1) * size) as u64;
                // SAFETY: within matrix k of `out`.
                unsafe {
                    cudarc::driver::result::memset_d8_async(
                        start,
                        0,
                        (n - j - 1) * size,
                        stream.cu_stream(),
                    )
                }
                .map_err(cuda)?;
            }
        }
        drop((_go, _gw, _gi));
        return check(&stream, &info, "Matrix is not positive definite");
    }

    // LU of each matrix, in a scratch copy.
    let mut lu = stream.clone_dtod(&a.buf).map_err(cuda)?;
    let mut ipiv = stream.alloc_zeros::<i32>(count * n).map_err(cuda)?;
    let (l, _gl) = lu.device_ptr_mut(&stream);
    let (p, _gp) = ipiv.device_ptr_mut(&stream);
    let lu_at = |k: usize| (l + (k * mat) as u64) as *mut T;
    let piv_at = |k: usize| (p + (k * n * 4) as u64) as *mut i32;
    let mut lw = 0i32;
    // SAFETY: `lu` holds `count` n × n matrices of `T`.
    unsafe { T::getrf_size(dn, ni, lu_at(0), &mut lw) }.ok("getrf_bufferSize")?;
    let mut work = stream
        .alloc_zeros::<T>((lw as usize).max(1))
        .map_err(cuda)?;
    let (w, _gw) = work.device_ptr_mut(&stream);
    for k in 0..count {
        // SAFETY: as above; `ipiv` has n pivots per matrix.
        unsafe { T::getrf(dn, ni, lu_at(k), w as *mut T, piv_at(k), info_at(k)) }.ok("getrf")?;
    }
    let mut rs_info = stream.alloc_zeros::<i32>(1).map_err(cuda)?;
    let (ri, _gri) = rs_info.device_ptr_mut(&stream);
    let ri = ri as *mut i32;
    let t = sol::cublasOperation_t::CUBLAS_OP_T;
    match op {
        LibraryOp::Det => {
            // U's diagonal, gathered by a strided copy, and the pivots.
            let mut diag = stream.alloc_zeros::<T>(count * n).map_err(cuda)?;
            {
                let (d, _gd) = diag.device_ptr_mut(&stream);
                for k in 0..count {
                    let y = (d + (k * n * size) as u64) as *mut T;
                    // SAFETY: n elements n + 1 apart inside matrix k.
                    unsafe { T::copy(bh, ni, lu_at(k), ni + 1, y) }.ok("copy")?;
                }
            }
            drop((_gl, _gp, _gw, _gri, _gi));
            let diag = stream.clone_dtoh(&diag).map_err(cuda)?;
            let piv = stream.clone_dtoh(&ipiv).map_err(cuda)?;
            let dets: Vec<T> = (0..count)
                .map(|k| {
                    let mut det = 1.0f64;
                    for i in 0..n {
                        det *= diag[k * n + i].to_f64();
                        if piv[k * n + i] != i as i32 + 1 {
                            det = -det;
                        }
                    }
                    T::from_f64(det)
                })
                .collect();
            // SAFETY: `out` holds `count` elements of `T`.
            let mut o = unsafe { out.buf.transmute_mut::<T>(count) }
                .ok_or_else(|| VerifyError::BadPlan("det's result too small".into()))?;
            stream.memcpy_htod(&dets, &mut o).map_err(cuda)?;
            Ok(())
        }
        LibraryOp::Inv => {
            let mut eye = vec![T::ZERO; count * n * n];
            for k in 0..count {
                for i in 0..n {
                    eye[k * n * n + i * n + i] = T::ONE;
                }
            }
            {
                // SAFETY: `out` holds `count` n × n matrices of `T`.
                let mut o = unsafe { out.buf.transmute_mut::<T>(eye.len()) }
                    .ok_or_else(|| VerifyError::BadPlan("inv's result too small".into()))?;
                stream.memcpy_htod(&eye, &mut o).map_err(cuda)?;
            }
            let (o, _go) = out.buf.device_ptr_mut(&stream);
            for k in 0..count {
                let b = (o + (k * mat) as u64) as *mut T;
                // SAFETY: LU and pivots of matrix k; b is n × n.
                unsafe {
                    T::getrs(
                        dn,
                        sol::cublasOperation_t::CUBLAS_OP_N,
                        ni,
                        ni,
                        lu_at(k),
                        piv_at(k),
                        b,
                        ri,
                    )
                }
                .ok("getrs")?;
            }
            drop((_go, _gl, _gp, _gw, _gri, _gi));
            check(&stream, &info, "Singular matrix")
        }
        LibraryOp::Solve => {
            let b = args[1];
            let (o, _go) = out.buf.device_ptr_mut(&stream);
            let (bp, _gb) = b.buf.device_ptr(&stream);
            match s.rhs_cols {
                None => {
                    for k in 0..count {
                        let x = o + (k * n * size) as u64;
                        // SAFETY: b and x_k are n elements.
                        unsafe {
                            cudarc::driver::result::memcpy_dtod_async(
                                x,
                                bp,
                                n * size,
                                stream.cu_stream(),
                            )
                        }
                        .map_err(cuda)?;
                        // SAFETY: LU and pivots of matrix k.
                        unsafe { T::getrs(dn, t, ni, 1, lu_at(k), piv_at(k), x as *mut T, ri) }
                            .ok("getrs")?;
                    }
                }
                Some(cols) => {
                    let ci = cols as i32;
                    let block = n * cols * size;
                    let mut tmp = stream.alloc_zeros::<T>(n * cols).map_err(cuda)?;
                    let (tp, _gt) = tmp.device_ptr_mut(&stream);
                    let tp = tp as *mut T;
                    for k in 0..count {
                        let bk = (bp + (k * block) as u64) as *const T;
                        let xk = (o + (k * block) as u64) as *mut T;
                        // SAFETY: b_k, read column-major, is cols × n
                        // (ld cols); tmp is n × cols (ld n); x_k as b_k.
                        unsafe {
                            T::transpose(bh, ni, ci, bk, ci, tp, ni).ok("geam")?;
                            T::getrs(dn, t, ni, ci, lu_at(k), piv_at(k), tp, ri).ok("getrs")?;
                            T::transpose(bh, ci, ni, tp, ni, xk, ci).ok("geam")?;
                        }
                    }
                }
            }
            drop((_go, _gb, _gl, _gp, _gw, _gri, _gi));
            check(&stream, &info, "Singular matrix")
        }
        _ => unreachable!("Shapes::of takes these four"),
    }
}

/// NumPy's error when some matrix's `info` says so (a zero pivot, a
/// leading minor not positive definite); reading it waits for the stream.
fn check(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    info: &CudaSlice<i32>,
    numpy_says: &str,
) -> Result<(), VerifyError> {
    let info = stream.clone_dtoh(info).map_err(cuda)?;
    match info.iter().find(|&&i| i != 0) {
        None => Ok(()),
        Some(i) if *i > 0 => Err(VerifyError::LinAlg(numpy_says.into())),
        Some(i) => Err(VerifyError::Cuda(format!(
            "cuSOLVER rejected argument {} of the call",
            -i
        ))),
    }
}
