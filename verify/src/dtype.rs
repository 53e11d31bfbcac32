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

/// NumPy's name of a scalar type (`float64`).
pub fn dtype_name(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "bool",
        ScalarType::I32 => "int32",
        ScalarType::I64 => "int64",
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
        ScalarType::I8 => "int8",
        ScalarType::I16 => "int16",
        ScalarType::U8 => "uint8",
        ScalarType::U16 => "uint16",
        ScalarType::U32 => "uint32",
        ScalarType::U64 => "uint64",
        ScalarType::C64 => "complex64",
        ScalarType::C128 => "complex128",
    }
}
