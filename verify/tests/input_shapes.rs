//! Generated inputs take their shapes from the function's own indexing:
//! the candidates for functions whose arrays differ in shape
//! (fixtures/userflow/stencils.py), and the one shape for those whose
//! arrays agree.

mod common;

use common::*;
use port_verify::inputs::{candidates, InputValue};

fn shapes(function: &str, sig: &str, file: &str) -> Vec<Vec<Vec<usize>>> {
    let plan = plan_of(&repo().join(file), function, sig, false);
    candidates(&plan, Some(10_000))
        .iter()
        .map(|i| {
            i.values
                .iter()
                .filter_map(|(_, v)| match v {
                    InputValue::Array(a) => Some(a.shape.clone()),
                    InputValue::Scalar(..) | InputValue::Complex(..) => None,
                })
                .collect()
        })
        .collect()
}

const STENCILS: &str = "fixtures/userflow/stencils.py";

#[test]
fn a_stencil_input_is_as_much_larger_as_its_reads_reach() {
    let s = shapes("smooth4", "float64[:], float64[:]", STENCILS);
    // in_field[i + 4] over range(out_field.shape[0]): 4 more.
    assert_eq!(s[0], vec![vec![10_004], vec![10_000]]);
    // The last resort is one extent for all.
    assert_eq!(s.last().unwrap(), &vec![vec![10_000], vec![10_000]]);

    let s = shapes("hdiff", "float64[:, :], float64[:, :]", STENCILS);
    // Loop bounds are host scalars I, J = out_field.shape; reads reach +3.
    assert_eq!(s[0], vec![vec![103, 103], vec![100, 100]]);
}

#[test]
fn a_slice_pair_grows_every_array_no_loop_bound_comes_from() {
    let s = shapes(
        "forward_diff",
        "float64[:], float64[:], float64[:]",
        STENCILS,
    );
    // b[1:] - a[:n - 1] stored into out: the broadcast's guard makes out
    // one shorter than b, and a's clipped slice makes a one longer than
    // out, as the program's comment says; then, lowered to b[i + 1] -
    // a[i] over out, the tightest (only b longer).
    assert_eq!(s[0], vec![vec![10_001], vec![10_001], vec![10_000]]);
    assert_eq!(s[1], vec![vec![10_000], vec![10_001], vec![10_000]]);
    assert_eq!(s.len(), 3, "{s:?}");
}

#[test]
fn arrays_that_agree_keep_one_shape() {
    let s = shapes("saxpy", SAXPY, "fixtures/migrate/seeds.py");
    assert_eq!(s, vec![vec![vec![10_000]; 3]]);
    // A stencil inside its input's range needs nothing more.
    let s = shapes(
        "stencil_1d",
        "float64[:], float64[:]",
        "fixtures/migrate/kernels.py",
    );
    assert_eq!(s, vec![vec![vec![10_000]; 2]]);
}

/// Scalars of the first candidate, in argument order.
fn first_scalars(function: &str, sig: &str, file: &str) -> Vec<f64> {
    let plan = plan_of(&repo().join(file), function, sig, false);
    candidates(&plan, Some(10_000))[0]
        .values
        .iter()
        .filter_map(|(_, v)| match v {
            InputValue::Scalar(_, x) => Some(*x),
            _ => None,
        })
        .collect()
}

const RELATED: &str = "fixtures/migrate/related_extents.py";

#[test]
fn a_clipped_slice_makes_its_array_reach_the_bound() {
    // field[2:n + 4] with n = out.shape[0]: field is 4 larger (not 3, as
    // NumPy would clip the slice and the broadcast fail).
    let s = shapes("halo_laplacian", "float64[:, :], float64[:, :]", RELATED);
    assert_eq!(s[0], vec![vec![104, 104], vec![100, 100]]);
}

#[test]
fn integer_arguments_that_are_extents_take_the_arrays_extents() {
    let sig = "int64, int64, int64, float64[:, :, :], float64[:, :]";
    // reshape(A, (rows, cols, 1, depth)) stored back into A: rows, cols
    // and depth are A's extents, and W is depth x depth.
    assert_eq!(
        first_scalars("mix_last_axis", sig, RELATED),
        [22.0, 22.0, 22.0]
    );
    let s = shapes("mix_last_axis", sig, RELATED);
    assert_eq!(s[0], vec![vec![22, 22, 22], vec![22, 22]]);
    // nx, ny are p's extents; the sweep count is no extent and stays small.
    let sig = "int64, int64, int64, float64[:, :], float64[:, :]";
    assert_eq!(
        first_scalars("jacobi_sweeps", sig, RELATED),
        [100.0, 100.0, 5.0]
    );
}

/// The first candidate's arrays and integers, by argument.
fn first(function: &str, sig: &str) -> Vec<(String, InputValue)> {
    let plan = plan_of(&repo().join(RELATED), function, sig, false);
    candidates(&plan, Some(10_000))[0].values.clone()
}

fn extent(v: &[(String, InputValue)], name: &str) -> Vec<usize> {
    match &v.iter().find(|(n, _)| n == name).unwrap().1 {
        InputValue::Array(a) => a.shape.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

fn int(v: &[(String, InputValue)], name: &str) -> usize {
    match &v.iter().find(|(n, _)| n == name).unwrap().1 {
        InputValue::Scalar(_, x) => *x as usize,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn a_reshape_makes_the_array_hold_as_many_elements_as_the_new_shape() {
    // reshape(x, (nblocks, width)): x has nblocks * width elements.
    let v = first("block_means", "float64[:], int64, int64");
    assert_eq!(
        extent(&v, "x"),
        [int(&v, "nblocks") * int(&v, "width")],
        "{v:?}"
    );
    // reshape(y, (radix**p, radix, radix**(passes - p - 1))): a power.
    let v = first("radix_passes", "int64, int64, float64[:]");
    let (r, p) = (int(&v, "radix"), int(&v, "passes"));
    assert_eq!(extent(&v, "x"), [r.pow(p as u32)], "{v:?}");
}

#[test]
fn an_allocated_extent_is_never_negative() {
    // Two 'valid' passes of len - k + 1: the signal reaches 2k - 1.
    let v = first("valid_smooth", "float64[:], float64[:]");
    let (n, k) = (extent(&v, "signal")[0], extent(&v, "taps")[0]);
    assert!(n + 2 > 2 * k, "{v:?}");
}

#[test]
fn both_branches_of_an_if_fit_what_follows_it() {
    // x = inv(a) or solve(a, b), then acc (n x m) += x: b is n x m, a n x n.
    let v = first(
        "solve_or_invert",
        "int64, int64, float64[:, :], float64[:, :]",
    );
    let (n, m) = (int(&v, "n"), int(&v, "m"));
    assert_eq!(extent(&v, "a"), [n, n], "{v:?}");
    assert_eq!(extent(&v, "b"), [n, m], "{v:?}");
}
