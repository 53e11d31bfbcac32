//! float32 results judged against the exact answer. A float32 program that
//! is sensitive to rounding (a Levinson recursion, an LU factorisation, an
//! implicit sweep) gives NumPy's float32 answer only up to its own rounding:
//! the kernels sum in another order (a tree, not NumPy's pairwise or BLAS
//! order), and a recurrence amplifies that difference far past any fixed
//! tolerance, while the original's float32 answer is itself as far from the
//! exact one. When the elementwise comparison fails, the original runs once
//! more on the same inputs widened to float64, and the kernels pass when
//! their normwise error against that run is of the same order as the
//! original's own float32 error: at most [`FACTOR`] times it (or within the
//! float32 tolerance). The verdict says which comparison passed and both
//! errors.
//!
//! Why 10: equally valid float32 orders of one dot product (BLAS, a
//! sequential loop, a 128-wide tree as the kernels sum, NumPy's pairwise
//! `sum`) inside a Levinson recursion of 48 to 200 elements differ from
//! the float64 answer by normwise errors up to 9 times apart. A wrong
//! rewrite gives errors of order one, far past that on any program whose
//! float32 answer means something.

use port_codegen::ir::ScalarType;
use serde::Serialize;

use crate::compare::FLOAT32;
use crate::inputs::{InputValue, Inputs};
use crate::npy::NdArray;

/// How much larger than the original's own float32 error the kernels' may be.
pub const FACTOR: f64 = 10.0;

/// The float64 comparison of a float32 run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Float32Check {
    /// The kernels' normwise error against the float64 run.
    pub ours_err: f64,
    /// The original's own float32 normwise error against the float64 run.
    pub original_err: f64,
    /// `ours_err <= max(FACTOR * original_err, rtol)`.
    pub passed: bool,
    /// When it passed: the first elementwise difference from the
    /// original's float32 results, which the float64 run overrules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elementwise: Option<String>,
}

impl Float32Check {
    /// One line for people.
    pub fn describe(&self) -> String {
        format!(
            "against a float64 run of the original: the kernels' error {:.2e}, the original's own float32 error {:.2e} (allowed: {FACTOR}x the original's, or {:.0e})",
            self.ours_err, self.original_err, FLOAT32.rtol
        )
    }
}

/// The same inputs with every float32 array and scalar widened to float64;
/// `None` when there is no float32 value to widen.
pub fn widen(inputs: &Inputs) -> Option<Inputs> {
    let mut any = false;
    let values = inputs
        .values
        .iter()
        .map(|(n, v)| {
            let v = match v {
                InputValue::Array(a) if a.elem() == ScalarType::F32 => {
                    any = true;
                    InputValue::Array(a.convert(ScalarType::F64))
                }
                InputValue::Scalar(ScalarType::F32, x) => {
                    any = true;
                    InputValue::Scalar(ScalarType::F64, *x)
                }
                other => other.clone(),
            };
            (n.clone(), v)
        })
        .collect();
    any.then_some(Inputs {
        values,
        origin: inputs.origin,
    })
}

/// `max |x - reference| / max |reference|` over the elements; infinite when
/// the shapes differ or a value is NaN or infinite in one but not the other.
pub fn normwise_err(reference: &NdArray, x: &NdArray) -> f64 {
    if reference.shape != x.shape && !(reference.len() == 1 && x.len() == 1) {
        return f64::INFINITY;
    }
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for k in 0..reference.len() {
        let (r, v) = (reference.get_f64(k), x.get_f64(k));
        if r.is_nan() || v.is_nan() || r.is_infinite() || v.is_infinite() {
            if r.is_nan() && v.is_nan() || r == v {
                continue;
            }
            return f64::INFINITY;
        }
        diff = diff.max((v - r).abs());
        scale = scale.max(r.abs());
    }
    diff / scale.max(FLOAT32.atol)
}

/// Judges the kernels' outputs `ours` against the float64 run's `exact`,
/// given the original's float32 outputs `original` (the same outputs in the
/// same order; `None` where an output is absent).
pub fn judge(
    exact: &[Option<&NdArray>],
    original: &[Option<&NdArray>],
    ours: &[Option<&NdArray>],
) -> Option<Float32Check> {
    let (mut ours_err, mut original_err) = (0.0f64, 0.0f64);
    let mut any = false;
    for ((e, o), a) in exact.iter().zip(original).zip(ours) {
        match (e, o, a) {
            (Some(e), Some(o), Some(a)) => {
                any = true;
                ours_err = ours_err.max(normwise_err(e, a));
                original_err = original_err.max(normwise_err(e, o));
            }
            (None, None, None) => {}
            _ => return None,
        }
    }
    if !any {
        return None;
    }
    let passed = ours_err <= (FACTOR * original_err).max(FLOAT32.rtol);
    Some(Float32Check {
        ours_err,
        original_err,
        passed,
        elementwise: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use port_codegen::ArrayData;

    fn f64s(v: &[f64]) -> NdArray {
        NdArray {
            shape: vec![v.len()],
            data: ArrayData::F64(v.to_vec()),
        }
    }

    fn f32s(v: &[f32]) -> NdArray {
        NdArray {
            shape: vec![v.len()],
            data: ArrayData::F32(v.to_vec()),
        }
    }

    #[test]
    fn kernels_as_close_to_the_exact_answer_as_the_original_pass() {
        let exact = f64s(&[1.0, 2.0, 3.0]);
        let original = f32s(&[1.01, 2.0, 3.0]);
        let ours = f32s(&[0.99, 2.0, 3.0]);
        let c = judge(&[Some(&exact)], &[Some(&original)], &[Some(&ours)]).unwrap();
        assert!(c.passed, "{c:?}");
        assert!((c.original_err - 0.01 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn kernels_far_from_the_exact_answer_fail() {
        let exact = f64s(&[1.0, 2.0, 3.0]);
        let original = f32s(&[1.01, 2.0, 3.0]);
        let ours = f32s(&[1.4, 2.0, 3.0]);
        let c = judge(&[Some(&exact)], &[Some(&original)], &[Some(&ours)]).unwrap();
        assert!(!c.passed, "{c:?}");
    }

    #[test]
    fn a_nan_where_the_exact_answer_has_none_fails() {
        let exact = f64s(&[1.0, 2.0]);
        let ours = f32s(&[f32::NAN, 2.0]);
        assert!(normwise_err(&exact, &ours).is_infinite());
        let c = judge(&[Some(&exact)], &[Some(&f32s(&[1.0, 2.0]))], &[Some(&ours)]).unwrap();
        assert!(!c.passed);
    }

    #[test]
    fn only_float32_values_are_widened() {
        let i = Inputs {
            values: vec![
                ("a".into(), InputValue::Array(f32s(&[1.5]))),
                ("n".into(), InputValue::Scalar(ScalarType::I64, 3.0)),
            ],
            origin: crate::inputs::InputOrigin::Generated,
        };
        let w = widen(&i).unwrap();
        match &w.values[0].1 {
            InputValue::Array(a) => assert_eq!(a.elem(), ScalarType::F64),
            other => panic!("{other:?}"),
        }
        assert_eq!(w.values[1].1, InputValue::Scalar(ScalarType::I64, 3.0));
        let none = Inputs {
            values: vec![("n".into(), InputValue::Scalar(ScalarType::I64, 3.0))],
            origin: crate::inputs::InputOrigin::Generated,
        };
        assert!(widen(&none).is_none());
    }
}
