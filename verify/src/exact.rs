//! Results judged against a more exact run of the original. A program
//! that is sensitive to rounding (a Levinson recursion, an LU
//! factorisation, an implicit sweep, a Krylov solver) gives NumPy's answer
//! only up to its own rounding: the kernels sum in another order (a tree,
//! not NumPy's pairwise or BLAS order), and a recurrence amplifies that
//! difference far past any fixed tolerance, while the original's answer is
//! itself as far from the exact one. When the elementwise comparison
//! fails, the original runs once more on the same inputs in a wider
//! precision — float32 inputs widened to float64 ([`widen`]); float64 and
//! complex128 ones as `np.longdouble` / `np.clongdouble`, widened and
//! narrowed back inside the helper (80-bit extended on x86-64: 11 more
//! bits of significand) — and both answers are judged by their normwise
//! error against that run ([`judge`]):
//!
//! - **passed**: the kernels' error is at most [`FACTOR`] times the
//!   original's own (or under [`floor`]);
//! - **inconclusive** (float64): the original's own error is past
//!   [`UNSTABLE`]: its float64 answer has lost its meaning, and so would
//!   any verdict on the kernels; nothing is verified;
//! - **failed**: otherwise — the kernels are wrong, or at least further
//!   from the exact answer than rounding explains;
//! - **unavailable**: there is no more exact run (the original refuses the
//!   wider dtypes — `np.linalg` does —, computes in a dtype it fixes
//!   itself, or `np.longdouble` is float64 on this machine); the
//!   elementwise verdict stands.
//!
//! Why 10: equally valid float32 orders of one dot product (BLAS, a
//! sequential loop, a 128-wide tree as the kernels sum, NumPy's pairwise
//! `sum`) inside a Levinson recursion of 48 to 200 elements differ from
//! the float64 answer by normwise errors up to 9 times apart. A wrong
//! rewrite gives errors of order one, far past that on any program whose
//! answer means something — which is what [`UNSTABLE`] checks.

use port_codegen::ir::ScalarType;

use crate::compare::FLOAT32;
use crate::inputs::{InputValue, Inputs};
use crate::npy::NdArray;

/// How much larger than the original's own error the kernels' may be.
pub const FACTOR: f64 = 10.0;

/// Past this normwise error against the extended-precision run, the
/// original's own float64 answer has lost its meaning: the verdict is
/// [`Verdict::Inconclusive`], whatever the kernels gave.
///
/// Why 1e-4: the kernels pass at up to [`FACTOR`] times the original's own
/// error, so this caps what a float64 kernel may be allowed at 1e-3
/// normwise — no looser than what port already calls verified for
/// `--fp32` kernels (rtol 1e-3), and far below the error of order one a
/// wrong rewrite gives (a dropped term, a wrong boundary, a stale
/// operand). Past it the original does not reproduce itself to ten times
/// the float64 tolerance (rtol 1e-5), and a bar wide enough to admit an
/// equally valid summation order would admit a wrong kernel too. For
/// scale: a well-conditioned float64 program's own error is 1e-16 to
/// 1e-12; NPBench's BiCGSTAB on its indefinite matrix, which never
/// converges, is at 7e-6 after 3 iterations and 3e-2 after 100.
pub const UNSTABLE: f64 = 1e-4;

pub use port_reports::migration::{ExactCheck, Precision, Verdict};

/// Under this normwise error the kernels pass whatever the original's own
/// error: float32's tolerance (1e-4); for float64 ten times the rounding
/// that narrowing the extended results back to float64 costs (half a unit
/// in the last place, 1.1e-16): a difference no elementwise check at rtol
/// 1e-5 fails on but where elements cancel.
pub fn floor(precision: Precision) -> f64 {
    match precision {
        Precision::Float32 => FLOAT32.rtol,
        Precision::Float64 => FACTOR * f64::EPSILON,
    }
}

/// Past this, the original's own answer has lost its meaning
/// ([`UNSTABLE`]). float32 has none: its check stays as it was, the
/// float64 run is trusted as the exact answer whatever the float32 one
/// did.
pub fn unstable(precision: Precision) -> Option<f64> {
    match precision {
        Precision::Float32 => None,
        Precision::Float64 => Some(UNSTABLE),
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
        same: inputs.same.clone(),
        how: inputs.how.clone(),
    })
}

/// The largest elementwise distance `max |x - reference|` (the modulus of
/// the difference for complex values) and the largest `|reference|`;
/// `None` when the shapes differ or a value is NaN or infinite in one but
/// not the other.
fn distance(reference: &NdArray, x: &NdArray) -> Option<(f64, f64)> {
    if reference.shape != x.shape && !(reference.len() == 1 && x.len() == 1) {
        return None;
    }
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for k in 0..reference.len() {
        let ((r, ri), (v, vi)) = (reference.get_c(k), x.get_c(k));
        let (r_nan, v_nan) = (r.is_nan() || ri.is_nan(), v.is_nan() || vi.is_nan());
        if r_nan || v_nan || !(r.is_finite() && ri.is_finite() && v.is_finite() && vi.is_finite()) {
            if r_nan && v_nan || (r, ri) == (v, vi) {
                continue;
            }
            return None;
        }
        diff = diff.max((v - r).hypot(vi - ri));
        scale = scale.max(r.hypot(ri));
    }
    Some((diff, scale))
}

/// `max |x - reference| / max |reference|` over the elements; infinite when
/// the shapes differ or a value is NaN or infinite in one but not the other.
pub fn normwise_err(reference: &NdArray, x: &NdArray) -> f64 {
    distance(reference, x).map_or(f64::INFINITY, |(diff, scale)| {
        diff / scale.max(FLOAT32.atol)
    })
}

/// Judges the kernels' outputs `ours` against the more exact run's
/// `exact` (narrowed to `precision`), given the original's outputs
/// `original` (the same outputs in the same order; `None` where an output
/// is absent). `reference` names what the original reran in. `None` when
/// the outputs do not line up.
pub fn judge(
    precision: Precision,
    reference: &str,
    exact: &[Option<&NdArray>],
    original: &[Option<&NdArray>],
    ours: &[Option<&NdArray>],
) -> Option<ExactCheck> {
    let (mut ours_err, mut original_err) = (0.0f64, 0.0f64);
    let (mut original_abs, mut kernels_abs) = (0.0f64, 0.0f64);
    let mut any = false;
    for ((e, o), a) in exact.iter().zip(original).zip(ours) {
        match (e, o, a) {
            (Some(e), Some(o), Some(a)) => {
                any = true;
                ours_err = ours_err.max(normwise_err(e, a));
                original_err = original_err.max(normwise_err(e, o));
                original_abs = original_abs.max(distance(e, o).map_or(f64::INFINITY, |d| d.0));
                kernels_abs = kernels_abs.max(distance(o, a).map_or(f64::INFINITY, |d| d.0));
            }
            (None, None, None) => {}
            _ => return None,
        }
    }
    if !any {
        return None;
    }
    let within = ours_err <= (FACTOR * original_err).max(floor(precision));
    // A kernel giving NaN, infinities or another shape where the original
    // gives numbers is wrong however unstable the original is.
    let broken = ours_err.is_infinite() && original_err.is_finite();
    let past = unstable(precision).filter(|&limit| original_err > limit && !broken);
    let (verdict, why) = match past {
        Some(limit) => (
            Verdict::Inconclusive,
            Some(format!(
                "the original itself is not reproducible in {name} here: its result moves by {original_abs:.3e} against {rerun} ({reference}; normwise rel {original_err:.2e}, past the {limit:.0e} at which a {name} answer still means something); the kernels differ from it by {kernels_abs:.3e} (normwise rel {ours_err:.2e} from that run): port cannot tell a right kernel from a wrong one on these inputs — verify on inputs where the computation converges (e.g. a diagonally dominant matrix for an iterative solver, fewer steps of a diverging recurrence) with --inputs FILE.npz",
                name = precision.name(),
                rerun = precision.rerun(),
            )),
        ),
        None if within => (Verdict::Passed, None),
        None => (Verdict::Failed, None),
    };
    Some(ExactCheck {
        precision,
        verdict,
        passed: verdict == Verdict::Passed,
        reference: reference.to_string(),
        ours_err: Some(ours_err),
        original_err: Some(original_err),
        original_abs_err: Some(original_abs),
        factor: Some(FACTOR),
        floor: Some(floor(precision)),
        unstable: unstable(precision),
        elementwise: None,
        why,
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

    fn one(
        precision: Precision,
        exact: &NdArray,
        original: &NdArray,
        ours: &NdArray,
    ) -> ExactCheck {
        judge(
            precision,
            "reference",
            &[Some(exact)],
            &[Some(original)],
            &[Some(ours)],
        )
        .unwrap()
    }

    /// float64 results whose elements are `exact` times (1 + rel).
    fn off(exact: &[f64], rel: f64) -> NdArray {
        f64s(&exact.iter().map(|x| x * (1.0 + rel)).collect::<Vec<_>>())
    }

    const X: [f64; 4] = [1.0, -2.0, 3.0, 0.5];

    #[test]
    fn kernels_as_close_to_the_exact_answer_as_the_original_pass() {
        let exact = f64s(&[1.0, 2.0, 3.0]);
        let original = f32s(&[1.01, 2.0, 3.0]);
        let ours = f32s(&[0.99, 2.0, 3.0]);
        let c = one(Precision::Float32, &exact, &original, &ours);
        assert!(c.passed, "{c:?}");
        assert_eq!(c.verdict, Verdict::Passed);
        assert!((c.original_err.unwrap() - 0.01 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn kernels_far_from_the_exact_answer_fail() {
        let exact = f64s(&[1.0, 2.0, 3.0]);
        let original = f32s(&[1.01, 2.0, 3.0]);
        let ours = f32s(&[1.4, 2.0, 3.0]);
        let c = one(Precision::Float32, &exact, &original, &ours);
        assert!(!c.passed, "{c:?}");
        assert_eq!(c.verdict, Verdict::Failed);
    }

    #[test]
    fn a_nan_where_the_exact_answer_has_none_fails() {
        let exact = f64s(&[1.0, 2.0]);
        let ours = f32s(&[f32::NAN, 2.0]);
        assert!(normwise_err(&exact, &ours).is_infinite());
        let c = one(Precision::Float32, &exact, &f32s(&[1.0, 2.0]), &ours);
        assert!(!c.passed);
    }

    /// float32 keeps its check as it was: the float64 run is the exact
    /// answer, however far the float32 original is from it.
    #[test]
    fn float32_is_never_inconclusive() {
        let c = one(Precision::Float32, &f64s(&X), &off(&X, 0.5), &off(&X, 1.0));
        assert_eq!(c.verdict, Verdict::Passed, "{c:?}");
    }

    #[test]
    fn float64_kernels_within_ten_times_the_originals_error_pass() {
        let c = one(
            Precision::Float64,
            &f64s(&X),
            &off(&X, 1e-9),
            &off(&X, -8e-9),
        );
        assert_eq!(c.verdict, Verdict::Passed, "{c:?}");
        assert!(c.passed && c.why.is_none());
        assert!(c.describe().starts_with(
            "passed against an extended-precision run of the original: the kernels' error 8.00e-9, the original's own float64 error 1.00e-9 (allowed: 10x the original's, or 2e-15)"
        ), "{}", c.describe());
    }

    /// A wrong kernel on a well-conditioned problem: the original's own
    /// error is rounding, so the kernels are allowed ten times rounding.
    #[test]
    fn a_wrong_float64_kernel_on_a_stable_problem_fails() {
        for wrong in [1.0, 1e-3, 1e-9] {
            let c = one(
                Precision::Float64,
                &f64s(&X),
                &off(&X, 2e-16),
                &off(&X, wrong),
            );
            assert_eq!(c.verdict, Verdict::Failed, "{wrong}: {c:?}");
            assert!(c
                .describe()
                .starts_with("failed too against an extended-precision run"));
        }
        // One element wrong among many right ones.
        let mut bad = X.to_vec();
        bad[3] = 0.6;
        let c = one(Precision::Float64, &f64s(&X), &f64s(&X), &f64s(&bad));
        assert_eq!(c.verdict, Verdict::Failed, "{c:?}");
    }

    /// Below the floor (rounding the extended answer to float64 costs half
    /// an ulp) the kernels pass even against an original that is exact.
    #[test]
    fn float64_rounding_alone_passes() {
        let c = one(Precision::Float64, &f64s(&X), &f64s(&X), &off(&X, 4e-16));
        assert_eq!(c.verdict, Verdict::Passed, "{c:?}");
        let c = one(Precision::Float64, &f64s(&X), &f64s(&X), &off(&X, 1e-13));
        assert_eq!(c.verdict, Verdict::Failed, "{c:?}");
    }

    #[test]
    fn an_unreproducible_float64_original_is_inconclusive() {
        // The original moves by 3e-2 against the extended run; the kernels
        // are as far, or ten times further: port cannot tell either way.
        for ours in [3e-2, -0.3, 5.0] {
            let c = one(
                Precision::Float64,
                &f64s(&X),
                &off(&X, 3e-2),
                &off(&X, ours),
            );
            assert_eq!(c.verdict, Verdict::Inconclusive, "{ours}: {c:?}");
            assert!(!c.passed);
            let why = c.why.as_deref().unwrap();
            assert!(
                why.starts_with("the original itself is not reproducible in float64 here: its result moves by 9.000e-2 against an extended-precision run (reference; normwise rel 3.00e-2, past the 1e-4"),
                "{why}"
            );
            assert!(
                why.contains("port cannot tell a right kernel from a wrong one on these inputs")
            );
            assert!(
                c.describe().starts_with("inconclusive against an extended-precision run of the original: the kernels' error"),
                "{}",
                c.describe()
            );
        }
    }

    /// The threshold: at 1e-4 the original's answer still counts (and the
    /// kernels are allowed 1e-3); past it nothing is verified.
    #[test]
    fn the_unstable_threshold_is_the_originals_own_error() {
        let at = |orig: f64, ours: f64| {
            one(
                Precision::Float64,
                &f64s(&X),
                &off(&X, orig),
                &off(&X, ours),
            )
            .verdict
        };
        assert_eq!(at(0.99 * UNSTABLE, 9e-4), Verdict::Passed);
        assert_eq!(at(0.99 * UNSTABLE, 2e-3), Verdict::Failed);
        assert_eq!(at(2.0 * UNSTABLE, 2e-4), Verdict::Inconclusive);
    }

    /// NaN or another shape from the kernels is wrong, however unstable
    /// the original.
    #[test]
    fn broken_kernels_are_wrong_even_against_an_unstable_original() {
        let mut nan = X.to_vec();
        nan[1] = f64::NAN;
        let c = one(Precision::Float64, &f64s(&X), &off(&X, 0.1), &f64s(&nan));
        assert_eq!(c.verdict, Verdict::Failed, "{c:?}");
        let c = one(Precision::Float64, &f64s(&X), &off(&X, 0.1), &f64s(&X[..2]));
        assert_eq!(c.verdict, Verdict::Failed, "{c:?}");
        // An original that is NaN where the extended run is not: unstable.
        let c = one(Precision::Float64, &f64s(&X), &f64s(&nan), &f64s(&X));
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    }

    /// Complex results are judged by the modulus of the difference: a
    /// wrong imaginary part counts.
    #[test]
    fn complex_errors_count_both_parts() {
        let c = |v: Vec<[f64; 2]>| NdArray {
            shape: vec![v.len()],
            data: ArrayData::C128(v),
        };
        let exact = c(vec![[1.0, 2.0], [0.0, -1.0]]);
        let wrong = c(vec![[1.0, -2.0], [0.0, -1.0]]);
        assert!((normwise_err(&exact, &wrong) - 4.0 / 5f64.sqrt()).abs() < 1e-12);
        let k = one(Precision::Float64, &exact, &exact, &wrong);
        assert_eq!(k.verdict, Verdict::Failed);
    }

    #[test]
    fn outputs_that_do_not_line_up_are_not_judged() {
        let a = f64s(&X);
        assert!(judge(Precision::Float64, "r", &[Some(&a)], &[None], &[Some(&a)]).is_none());
        assert!(judge(Precision::Float64, "r", &[None], &[None], &[None]).is_none());
    }

    #[test]
    fn no_second_opinion_says_why() {
        let c = ExactCheck::unavailable(Precision::Float64, "it raised TypeError");
        assert_eq!(c.verdict, Verdict::Unavailable);
        assert!(!c.passed);
        assert_eq!(c.describe(), "no second opinion: it raised TypeError");
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["verdict"], "unavailable");
        assert!(j.get("ours_err").is_none(), "{j}");
    }

    #[test]
    fn only_float32_values_are_widened() {
        let i = Inputs {
            values: vec![
                ("a".into(), InputValue::Array(f32s(&[1.5]))),
                ("n".into(), InputValue::Scalar(ScalarType::I64, 3.0)),
            ],
            origin: crate::inputs::InputOrigin::Generated,
            same: Vec::new(),
            how: None,
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
            same: Vec::new(),
            how: None,
        };
        assert!(widen(&none).is_none());
    }
}
