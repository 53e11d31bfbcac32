//! The order statistics of library steps (`np.sort`, `np.median`), run on
//! the host with NumPy's meaning: ascending, NaNs last; a median is the
//! middle value, or the mean of the two middle ones computed in the
//! result's type (float32 stays float32, integers and booleans become
//! float64), NaN when a NaN is among the values or there are none.
//!
//! Both devices run them here ([`crate::exec`] hands them over, as it
//! hands `np.linalg`'s to [`crate::linalg`]): the operand copied back, the
//! result copied over. Errors are [`LinAlgError`]s, as a library step's.

use std::cmp::Ordering;

use port_codegen::ArrayData;
use port_rewriter::plan::LibraryOp;

use crate::linalg::LinAlgError;
use crate::npy::NdArray;

/// One element type sorted here: NumPy's order on it.
trait Ordered: Copy {
    fn order(&self, other: &Self) -> Ordering;
    fn is_nan(&self) -> bool {
        false
    }
    fn to_f64(self) -> f64;
}

macro_rules! ordered_int {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            fn order(&self, other: &Self) -> Ordering {
                self.cmp(other)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
ordered_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Ordered for bool {
    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
}

macro_rules! ordered_float {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            /// NaNs after every number; `-0.0` and `0.0` equal.
            fn order(&self, other: &Self) -> Ordering {
                match (self.is_nan(), other.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    (false, false) => self.partial_cmp(other).unwrap_or(Ordering::Equal),
                }
            }
            fn is_nan(&self) -> bool {
                <$t>::is_nan(*self)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
ordered_float!(f32, f64);

/// The lines along `axis` of a C-ordered `shape` (`None`: the whole array
/// as one line): how many lines before the axis, its length, and the
/// stride between its elements.
fn lines(shape: &[usize], axis: Option<u8>) -> (usize, usize, usize) {
    match axis {
        None => (1, shape.iter().product(), 1),
        Some(a) => {
            let a = a as usize;
            let outer = shape[..a].iter().product();
            let inner = shape[a + 1..].iter().product();
            (outer, shape[a], inner)
        }
    }
}

/// Each line along `axis`, sorted, handed to `each` with its place:
/// (the line's number before the axis, its offset after it).
fn sorted_lines<T: Ordered>(
    data: &[T],
    shape: &[usize],
    axis: Option<u8>,
    mut each: impl FnMut(usize, usize, &[T]),
) {
    let (outer, len, inner) = lines(shape, axis);
    let mut line: Vec<T> = Vec::with_capacity(len);
    for o in 0..outer {
        for i in 0..inner {
            line.clear();
            line.extend((0..len).map(|k| data[o * len * inner + k * inner + i]));
            line.sort_by(T::order);
            each(o, i, &line);
        }
    }
}

fn sort<T: Ordered>(data: &[T], shape: &[usize], axis: Option<u8>) -> Vec<T> {
    let (_, len, inner) = lines(shape, axis);
    let mut out = data.to_vec();
    sorted_lines(data, shape, axis, |o, i, line| {
        for (k, v) in line.iter().enumerate() {
            out[o * len * inner + k * inner + i] = *v;
        }
    });
    out
}

/// The median of each line, in `f64` (and as `f32` arithmetic when
/// `single`), in the order of the lines.
fn median<T: Ordered>(data: &[T], shape: &[usize], axis: Option<u8>, single: bool) -> Vec<f64> {
    let (outer, _, inner) = lines(shape, axis);
    let mut out = vec![f64::NAN; outer * inner];
    sorted_lines(data, shape, axis, |o, i, line| {
        let n = line.len();
        out[o * inner + i] = if n == 0 || line[n - 1].is_nan() {
            f64::NAN
        } else if n % 2 == 1 {
            line[n / 2].to_f64()
        } else if single {
            let (a, b) = (line[n / 2 - 1].to_f64() as f32, line[n / 2].to_f64() as f32);
            ((a + b) / 2.0) as f64
        } else {
            (line[n / 2 - 1].to_f64() + line[n / 2].to_f64()) / 2.0
        };
    });
    out
}

/// `np.sort` or `np.median` of `a`.
pub fn run(op: LibraryOp, a: &NdArray) -> Result<NdArray, LinAlgError> {
    let (is_median, axis) = match op {
        LibraryOp::Sort { axis } => (false, axis),
        LibraryOp::Median { axis } => (true, axis),
        other => {
            return Err(LinAlgError(format!(
                "{} is not an order statistic",
                other.numpy_name()
            )))
        }
    };
    if let Some(k) = axis {
        if k as usize >= a.shape.len() {
            return Err(LinAlgError(format!(
                "axis {k} is out of bounds for array of dimension {}",
                a.shape.len()
            )));
        }
    }
    let shape = &a.shape;
    macro_rules! each_type {
        ($f:ident $(, $extra:expr)*) => {
            match &a.data {
                ArrayData::Bool(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::I8(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::I16(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::I32(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::I64(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::U8(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::U16(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::U32(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::U64(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::F32(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::F64(v) => $f(v, shape, axis $(, $extra)*),
                ArrayData::C64(_) | ArrayData::C128(_) => {
                    return Err(LinAlgError(format!(
                        "{} of complex values is not supported",
                        op.numpy_name()
                    )))
                }
            }
        };
    }
    if !is_median {
        let data = match &a.data {
            ArrayData::Bool(v) => ArrayData::Bool(sort(v, shape, axis)),
            ArrayData::I8(v) => ArrayData::I8(sort(v, shape, axis)),
            ArrayData::I16(v) => ArrayData::I16(sort(v, shape, axis)),
            ArrayData::I32(v) => ArrayData::I32(sort(v, shape, axis)),
            ArrayData::I64(v) => ArrayData::I64(sort(v, shape, axis)),
            ArrayData::U8(v) => ArrayData::U8(sort(v, shape, axis)),
            ArrayData::U16(v) => ArrayData::U16(sort(v, shape, axis)),
            ArrayData::U32(v) => ArrayData::U32(sort(v, shape, axis)),
            ArrayData::U64(v) => ArrayData::U64(sort(v, shape, axis)),
            ArrayData::F32(v) => ArrayData::F32(sort(v, shape, axis)),
            ArrayData::F64(v) => ArrayData::F64(sort(v, shape, axis)),
            ArrayData::C64(_) | ArrayData::C128(_) => {
                return Err(LinAlgError(
                    "np.sort of complex values is not supported".into(),
                ))
            }
        };
        let shape = match axis {
            None => vec![a.len()],
            Some(_) => a.shape.clone(),
        };
        return Ok(NdArray { shape, data });
    }
    let single = matches!(a.data, ArrayData::F32(_));
    let values = each_type!(median, single);
    let out_shape: Vec<usize> = match axis {
        None => Vec::new(),
        Some(k) => {
            let mut s = a.shape.clone();
            s.remove(k as usize);
            s
        }
    };
    // A scalar is an array of one element.
    let shape = if out_shape.is_empty() {
        vec![1]
    } else {
        out_shape
    };
    let data = if single {
        ArrayData::F32(values.into_iter().map(|v| v as f32).collect())
    } else {
        ArrayData::F64(values)
    };
    Ok(NdArray { shape, data })
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
        match &a.data {
            ArrayData::F64(v) => v.clone(),
            ArrayData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            ArrayData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sorts_along_an_axis_with_nans_last() {
        let a = f64s(&[2, 3], &[3.0, f64::NAN, 1.0, -1.0, 5.0, 2.0]);
        let s = run(LibraryOp::Sort { axis: Some(1) }, &a).unwrap();
        let v = values(&s);
        assert_eq!(&v[..2], &[1.0, 3.0]);
        assert!(v[2].is_nan());
        assert_eq!(&v[3..], &[-1.0, 2.0, 5.0]);
        let s = run(LibraryOp::Sort { axis: Some(0) }, &a).unwrap();
        assert_eq!(values(&s)[..3], [-1.0, 5.0, 1.0]);
        let s = run(LibraryOp::Sort { axis: None }, &a).unwrap();
        assert_eq!(s.shape, vec![6]);
        assert_eq!(values(&s)[..5], [-1.0, 1.0, 2.0, 3.0, 5.0]);
    }

    #[test]
    fn medians_are_numpys() {
        let a = f64s(&[2, 2], &[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            values(&run(LibraryOp::Median { axis: None }, &a).unwrap()),
            [2.5]
        );
        assert_eq!(
            values(&run(LibraryOp::Median { axis: Some(0) }, &a).unwrap()),
            [3.5, 1.5]
        );
        let nan = f64s(&[3], &[1.0, f64::NAN, 2.0]);
        assert!(values(&run(LibraryOp::Median { axis: None }, &nan).unwrap())[0].is_nan());
        let empty = f64s(&[0], &[]);
        assert!(values(&run(LibraryOp::Median { axis: None }, &empty).unwrap())[0].is_nan());
        // Integers give float64.
        let ints = NdArray {
            shape: vec![4],
            data: ArrayData::I64(vec![7, 1, 4, 2]),
        };
        let m = run(LibraryOp::Median { axis: None }, &ints).unwrap();
        assert!(matches!(m.data, ArrayData::F64(_)));
        assert_eq!(values(&m), [3.0]);
    }
}
