//! NumPy's names and sizes of the kernel IR's scalar types.

use port_codegen::ir::ScalarType;

/// Bytes per element as the kernels store it (`bool` is one byte).
pub fn elem_size(t: ScalarType) -> usize {
    t.size_bytes()
}

/// The bytes of an array of `t` and this shape; `None` past `usize`.
pub fn array_bytes(t: ScalarType, shape: &[usize]) -> Option<usize> {
    shape
        .iter()
        .try_fold(elem_size(t), |n, &d| n.checked_mul(d))
}

/// NumPy's name of a scalar type (`float64`): Numba's, but `bool` for
/// its `boolean`.
pub fn dtype_name(t: ScalarType) -> &'static str {
    match port_rewriter::types::numba_scalar(t) {
        "boolean" => "bool",
        name => name,
    }
}
