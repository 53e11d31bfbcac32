//! `allclose`, as NumPy defines it (`|actual - expected| <= atol + rtol *
//! |expected|`, NaNs equal to NaNs), with the first differing element and
//! the largest errors reported.

use crate::npy::NdArray;

/// The tolerance of one comparison.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

/// float64 results: rtol 1e-5 (the bound), NumPy's atol.
pub const FLOAT64: Tolerance = Tolerance {
    rtol: 1e-5,
    atol: 1e-8,
};
/// float32 results: float32 carries about 7 digits, and the kernels sum in
/// another order than NumPy's pairwise summation: rtol 1e-4, atol 1e-6.
pub const FLOAT32: Tolerance = Tolerance {
    rtol: 1e-4,
    atol: 1e-6,
};
/// `--fp32` (float64 original, float32 kernels): rtol 1e-3, atol 1e-5.
pub const FP32_LOWERED: Tolerance = Tolerance {
    rtol: 1e-3,
    atol: 1e-5,
};

/// The result of comparing one output.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub passed: bool,
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    /// The first element out of tolerance: "index (2, 5): expected 1.5, got 1.25".
    pub first_mismatch: Option<String>,
}

fn index_text(shape: &[usize], mut k: usize) -> String {
    if shape.is_empty() {
        return "()".into();
    }
    let mut idx = vec![0usize; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1);
        idx[d] = k % n;
        k /= n;
    }
    if idx.len() == 1 {
        format!("[{}]", idx[0])
    } else {
        format!(
            "({})",
            idx.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Element `k` of an integer or bool array, exactly (uint64 included).
fn int_value(a: &NdArray, k: usize) -> i128 {
    match &a.data {
        port_codegen::ArrayData::U64(v) => i128::from(v[k]),
        _ => i128::from(a.get_i64(k)),
    }
}

/// Compares `actual` with `expected` element by element.
pub fn allclose(expected: &NdArray, actual: &NdArray, tol: Tolerance) -> Comparison {
    let same_shape =
        expected.shape == actual.shape || expected.len() == actual.len() && expected.len() == 1;
    if !same_shape {
        return Comparison {
            passed: false,
            max_abs_err: f64::INFINITY,
            max_rel_err: f64::INFINITY,
            first_mismatch: Some(format!(
                "shape: expected {:?}, got {:?}",
                expected.shape, actual.shape
            )),
        };
    }
    let mut out = Comparison {
        passed: true,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        first_mismatch: None,
    };
    // Integers (and booleans) compare exactly: a pixel off by one is wrong.
    let floating = |t: port_codegen::ir::ScalarType| t.is_float() || t.is_complex();
    let exact = !floating(expected.elem()) && !floating(actual.elem());
    // Complex results compare as NumPy's `allclose` does: the modulus of
    // the difference against the modulus of the expected value.
    let complex = expected.elem().is_complex() || actual.elem().is_complex();
    for k in 0..expected.len() {
        if exact {
            let (e, a) = (int_value(expected, k), int_value(actual, k));
            if e != a {
                let err = (a - e).unsigned_abs() as f64;
                out.max_abs_err = out.max_abs_err.max(err);
                if e != 0 {
                    out.max_rel_err = out.max_rel_err.max(err / e.unsigned_abs() as f64);
                }
                if out.first_mismatch.is_none() {
                    out.passed = false;
                    out.first_mismatch = Some(format!(
                        "index {}: expected {e}, got {a}",
                        index_text(&expected.shape, k)
                    ));
                }
            }
            continue;
        }
        let ((e, ei), (a, ai)) = if complex {
            (expected.get_c(k), actual.get_c(k))
        } else {
            ((expected.get_f64(k), 0.0), (actual.get_f64(k), 0.0))
        };
        if (e.is_nan() || ei.is_nan()) && (a.is_nan() || ai.is_nan()) {
            continue;
        }
        let err = (a - e).hypot(ai - ei);
        let scale = e.hypot(ei);
        let ok = if scale.is_infinite() || a.is_infinite() || ai.is_infinite() {
            (e, ei) == (a, ai)
        } else {
            err <= tol.atol + tol.rtol * scale
        };
        if err.is_finite() {
            out.max_abs_err = out.max_abs_err.max(err);
            if scale != 0.0 {
                out.max_rel_err = out.max_rel_err.max(err / scale);
            }
        } else if !ok {
            out.max_abs_err = f64::INFINITY;
            out.max_rel_err = f64::INFINITY;
        }
        if !ok && out.first_mismatch.is_none() {
            out.passed = false;
            let shown = |r: f64, i: f64| {
                if complex {
                    format!("({r}{}{}j)", if i < 0.0 { "-" } else { "+" }, i.abs())
                } else {
                    r.to_string()
                }
            };
            out.first_mismatch = Some(format!(
                "index {}: expected {}, got {}",
                index_text(&expected.shape, k),
                shown(e, ei),
                shown(a, ai)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use port_codegen::ArrayData;

    fn arr(shape: Vec<usize>, v: Vec<f64>) -> NdArray {
        NdArray {
            shape,
            data: ArrayData::F64(v),
        }
    }

    #[test]
    fn tolerances_and_first_index() {
        let e = arr(vec![2, 2], vec![1.0, 2.0, 3.0, f64::NAN]);
        let ok = arr(vec![2, 2], vec![1.0, 2.0 + 1e-6, 3.0, f64::NAN]);
        assert!(allclose(&e, &ok, FLOAT64).passed);
        let bad = arr(vec![2, 2], vec![1.0, 2.0, 3.1, f64::NAN]);
        let c = allclose(&e, &bad, FLOAT64);
        assert!(!c.passed);
        assert_eq!(
            c.first_mismatch.unwrap(),
            "index (1, 0): expected 3, got 3.1"
        );
        assert!((c.max_abs_err - 0.1).abs() < 1e-12);
        let c = allclose(&e, &arr(vec![4], vec![0.0; 4]), FLOAT64);
        assert!(c.first_mismatch.unwrap().starts_with("shape"));
    }

    #[test]
    fn integers_compare_exactly() {
        let e = NdArray {
            shape: vec![3],
            data: ArrayData::U32(vec![0, 255, 100_000]),
        };
        let same = e.clone();
        assert!(allclose(&e, &same, FLOAT32).passed);
        // Off by one is inside float32's relative tolerance, but a wrong
        // count or hash.
        let off = NdArray {
            shape: vec![3],
            data: ArrayData::U32(vec![0, 255, 100_001]),
        };
        let c = allclose(&e, &off, FLOAT32);
        assert_eq!(
            c.first_mismatch.unwrap(),
            "index [2]: expected 100000, got 100001"
        );
        let big = NdArray {
            shape: vec![1],
            data: ArrayData::U64(vec![u64::MAX]),
        };
        let minus_one = NdArray {
            shape: vec![1],
            data: ArrayData::I64(vec![-1]),
        };
        assert!(!allclose(&big, &minus_one, FLOAT64).passed);
    }

    #[test]
    fn complex_results_compare_by_modulus() {
        let c = |v: Vec<[f64; 2]>| NdArray {
            shape: vec![v.len()],
            data: ArrayData::C128(v),
        };
        let e = c(vec![[1.0, 2.0], [0.0, -3.0]]);
        assert!(allclose(&e, &c(vec![[1.0, 2.0 + 1e-6], [0.0, -3.0]]), FLOAT64).passed);
        // A wrong imaginary part is a mismatch even with the real part right.
        let r = allclose(&e, &c(vec![[1.0, 2.0], [0.0, 3.0]]), FLOAT64);
        assert_eq!(
            r.first_mismatch.unwrap(),
            "index [1]: expected (0-3j), got (0+3j)"
        );
    }
}
