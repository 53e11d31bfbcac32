//! Library steps (`np.linalg` calls in the host schedule) on the
//! simulator: the generated inputs they need (positive definite for
//! `cholesky`, diagonally dominant for `solve`/`inv`), the bytes they move
//! each way, the original agreeing, and NumPy's `LinAlgError` when a
//! matrix is not positive definite.

mod common;

use common::{plan_of, python, repo};

use port_codegen::ArrayData;
use port_codegen::PtxOptions;
use port_rewriter::plan::LibraryOp;
use port_verify::exec::{run_plan, Outputs};
use port_verify::inputs::{conditions, generate, Condition, InputValue, Inputs};
use port_verify::npy::NdArray;
use port_verify::simulator::SimDevice;
use port_verify::{select_backend, verify_plan, BackendChoice, VerifyError, VerifyOptions};

const FILE: &str = "fixtures/migrate/programs_linalg.py";
const LOGLIK: &str = "float64[:,:], float64[:], float64[:,:]";

fn array(inputs: &Inputs, name: &str) -> NdArray {
    inputs
        .values
        .iter()
        .find_map(|(n, v)| match v {
            InputValue::Array(a) if n == name => Some(a.clone()),
            _ => None,
        })
        .unwrap()
}

/// Each row's diagonal element exceeds the sum of the moduli of the others.
fn dominant(a: &NdArray) -> bool {
    let n = a.shape[a.shape.len() - 1];
    (0..a.len() / n).all(|row| {
        let i = row % n;
        let at = |j: usize| {
            let (re, im) = a.get_c(row * n + j);
            re.hypot(im)
        };
        let off: f64 = (0..n).filter(|&j| j != i).map(at).sum();
        a.get_c(row * n + i).0 > off
    })
}

#[test]
fn a_matrix_passed_to_cholesky_is_generated_positive_definite() {
    let plan = plan_of(&repo().join(FILE), "gaussian_loglik", LOGLIK, false);
    assert_eq!(
        conditions(&plan).into_iter().collect::<Vec<_>>(),
        vec![("cov".to_string(), Condition::PositiveDefinite)]
    );
    let inputs = generate(&plan);
    let cov = array(&inputs, "cov");
    let n = cov.shape[0];
    assert_eq!(cov.shape, vec![n, n]);
    // A triple loop's worth of work: 64 per side.
    assert_eq!(n, 64);
    for i in 0..n {
        for j in 0..n {
            assert_eq!(cov.get_f64(i * n + j), cov.get_f64(j * n + i));
        }
    }
    assert!(dominant(&cov));
    port_verify::linalg::run(LibraryOp::Cholesky, &[cov]).expect("positive definite");
    // The other arguments are left as generated.
    assert!(!dominant(&array(&inputs, "x")));
}

#[test]
fn matrices_passed_to_solve_and_inv_are_dominant_stacks_included() {
    let plan = plan_of(
        &repo().join(FILE),
        "newton_system",
        "float64[:,:], float64[:], int64",
        false,
    );
    assert_eq!(conditions(&plan)["a"], Condition::Dominant);
    assert!(dominant(&array(&generate(&plan), "a")));
    let plan = plan_of(
        &repo().join(FILE),
        "stack_inverses",
        "float64[:,:,:], float64[:]",
        false,
    );
    let blocks = array(&generate(&plan), "blocks");
    assert_eq!(blocks.shape.len(), 3);
    assert!(dominant(&blocks), "every matrix of the stack");
    // Complex: Hermitian for cholesky, dominant either way.
    let plan = plan_of(
        &repo().join(FILE),
        "resolvent_trace",
        "complex128[:,:], complex128",
        false,
    );
    assert!(
        conditions(&plan).is_empty(),
        "`z I - H` is computed: its arguments are left as generated"
    );
}

#[test]
fn the_run_counts_the_bytes_a_library_step_moves() {
    let plan = plan_of(&repo().join(FILE), "gaussian_loglik", LOGLIK, false);
    let inputs = generate(&plan);
    let mut dev = SimDevice::new(&plan).unwrap();
    let run = run_plan(&plan, &inputs, &mut dev, Outputs::Wrapper).unwrap();
    let n = 64 * 64 * 8;
    assert_eq!(run.host_calls.len(), 2, "{:?}", run.host_calls);
    let chol = &run.host_calls[0];
    assert_eq!(
        (chol.call.as_str(), chol.line, chol.count),
        ("np.linalg.cholesky", 21, 1)
    );
    assert_eq!((chol.bytes_to_host, chol.bytes_to_device), (n, n));
    let solve = &run.host_calls[1];
    assert_eq!((solve.bytes_to_host, solve.bytes_to_device), (2 * n, n));
    assert_eq!(
        chol.to_string(),
        "`np.linalg.cholesky` at line 21: on the host (cuSOLVER computes float32/float64 cholesky, solve, inv and det on a GPU that has libcusolver)"
    );
    // Counted in the run's transfers: the arguments over, the library
    // steps each way, the scalars of two reductions back.
    let args = n + 64 * 8 + n;
    assert!(
        run.bytes_to_device >= args + 2 * n,
        "{}",
        run.bytes_to_device
    );
    assert!(run.bytes_to_host >= 3 * n, "{}", run.bytes_to_host);
}

#[test]
fn a_matrix_that_is_not_positive_definite_ends_the_run_with_numpys_error() {
    let plan = plan_of(&repo().join(FILE), "gaussian_loglik", LOGLIK, false);
    let mut inputs = generate(&plan);
    for (name, v) in &mut inputs.values {
        if name == "cov" {
            let InputValue::Array(a) = v else { panic!() };
            let ArrayData::F64(d) = &mut a.data else {
                panic!()
            };
            d[0] = -1.0;
        }
    }
    let mut dev = SimDevice::new(&plan).unwrap();
    let err = run_plan(&plan, &inputs, &mut dev, Outputs::All).unwrap_err();
    assert!(matches!(err, VerifyError::LinAlg(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "LinAlgError: Matrix is not positive definite (`np.linalg.cholesky` at line 21, run on the host)"
    );
}

#[test]
fn the_original_agrees_on_generated_inputs() {
    let file = repo().join(FILE);
    for (function, sig) in [
        ("gaussian_loglik", LOGLIK),
        ("lstsq_refinement", "float64[:,:], float64[:], int64"),
    ] {
        let plan = plan_of(&file, function, sig, false);
        let opts = VerifyOptions {
            selected: select_backend(BackendChoice::Simulator).unwrap(),
            python: python(),
            file: file.clone(),
            qualname: function.into(),
            captured: None,
            given: None,
            size: None,
            repeats: 0,
            app_output: None,
            ptx: PtxOptions::default(),
            hotspot_pct: None,
            save_inputs: None,
            progress: None,
            generated_limit: std::time::Duration::from_secs(port_verify::GENERATED_LIMIT_S),
        };
        let out = verify_plan(&plan, &opts).unwrap();
        assert!(
            out.verification.passed,
            "{function}: {:?}",
            out.verification
        );
        assert!(!out.host_calls.is_empty());
    }
}
