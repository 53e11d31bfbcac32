//! Every kernel of tests/kernels/ on the host simulator, against NumPy.

mod common;

use common::*;
use port_codegen::{SimArg, SimArray, SimError, SimOptions, Simulator};
use serde_json::json;

fn sim(name: &str) -> Simulator {
    Simulator::new(&kernel_module(name), SimOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn array(arg: &SimArg) -> &SimArray {
    arg.as_array().expect("an array argument")
}

#[test]
fn vector_add_matches_numpy() {
    let n = 10_007;
    let mut rng = Rng::new(1);
    let a = rng.f32s(n, -10.0, 10.0);
    let b = rng.f32s(n, -10.0, 10.0);
    let mut args = vec![
        SimArg::Array(SimArray::new(a.clone(), &[n]).unwrap()),
        SimArg::Array(SimArray::new(b.clone(), &[n]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f32; n], &[n]).unwrap()),
    ];
    // Fewer threads than elements: the grid-stride loop covers the rest.
    sim("vector_add")
        .launch("vector_add", 8, 128, &mut args)
        .unwrap();
    let want = numpy_reference(
        "vector_add",
        &[ref_f32("a", &a, &[n], None), ref_f32("b", &b, &[n], None)],
        json!({}),
    );
    assert_allclose(
        "c",
        array(&args[2]).as_f32().unwrap(),
        &want.f32("c"),
        0.0,
        0.0,
    );
}

#[test]
fn saxpy_on_a_strided_view_matches_numpy() {
    let n = 5_000;
    let mut rng = Rng::new(2);
    let big = rng.f32s(2 * n, -1.0, 1.0);
    let y = rng.f32s(n, -1.0, 1.0);
    let a = 2.5f32;
    let mut args = vec![
        SimArg::F32(a),
        SimArg::Array(SimArray::strided(big.clone(), &[n], &[2]).unwrap()),
        SimArg::Array(SimArray::new(y.clone(), &[n]).unwrap()),
    ];
    sim("saxpy").launch("saxpy", 20, 256, &mut args).unwrap();
    let want = numpy_reference(
        "saxpy",
        &[
            ref_f32("x", &big, &[2 * n], Some("every_other")),
            ref_f32("y", &y, &[n], None),
        ],
        json!({"a": a}),
    );
    // One rounding for a*x and one for +y, the same as NumPy's float32.
    assert_allclose(
        "y",
        array(&args[2]).as_f32().unwrap(),
        &want.f32("y"),
        1e-6,
        1e-7,
    );
}

#[test]
fn elementwise_2d_matches_numpy() {
    let (rows, cols) = (37, 53);
    let mut rng = Rng::new(3);
    // x is the transpose of a (cols, rows) C-order buffer.
    let xt = rng.f64s(rows * cols, -3.0, 3.0);
    let y = rng.f64s(rows * cols, -2.0, 2.0);
    let mut args = vec![
        SimArg::Array(SimArray::strided(xt.clone(), &[rows, cols], &[1, rows]).unwrap()),
        SimArg::Array(SimArray::new(y.clone(), &[rows, cols]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f64; rows * cols], &[rows, cols]).unwrap()),
    ];
    sim("elementwise_2d")
        .launch("elementwise_2d", [4, 3], [16, 8], &mut args)
        .unwrap();
    let want = numpy_reference(
        "elementwise_2d",
        &[
            ref_f64("x", &xt, &[cols, rows], Some("transpose")),
            ref_f64("y", &y, &[rows, cols], None),
        ],
        json!({}),
    );
    assert_allclose(
        "out",
        array(&args[2]).as_f64().unwrap(),
        &want.f64("out"),
        1e-13,
        1e-13,
    );
}

#[test]
fn row_loop_matches_numpy() {
    let (rows, cols) = (300, 120);
    let mut rng = Rng::new(4);
    let mut x = rng.f32s(rows * cols, -1.0, 9.0);
    // Some rows hit the stop value early, one at the very first entry.
    for r in (0..rows).step_by(7) {
        x[r * cols + (r % cols)] = 100.0;
    }
    let stop = 50.0f32;
    let mut args = vec![
        SimArg::Array(SimArray::new(x.clone(), &[rows, cols]).unwrap()),
        SimArg::F32(stop),
        SimArg::Array(SimArray::new(vec![0f32; rows], &[rows]).unwrap()),
        SimArg::Array(SimArray::new(vec![0i32; rows], &[rows]).unwrap()),
    ];
    sim("row_loop")
        .launch("row_loop", 2, 64, &mut args)
        .unwrap();
    let want = numpy_reference(
        "row_loop",
        &[ref_f32("x", &x, &[rows, cols], None)],
        json!({"stop": stop}),
    );
    assert_eq!(
        array(&args[3]).as_i32().unwrap(),
        want.i32("counts").as_slice()
    );
    // Sequential vs NumPy's pairwise float32 summation of ~100 terms.
    assert_allclose(
        "sums",
        array(&args[2]).as_f32().unwrap(),
        &want.f32("sums"),
        2e-5,
        1e-5,
    );
}

#[test]
fn block_tree_reduction_honours_barriers() {
    let n = 100_003;
    let mut rng = Rng::new(5);
    let x = rng.f64s(n, -1.0, 2.0);
    let want = numpy_reference("reduction", &[ref_f64("x", &x, &[n], None)], json!({}));
    let s = sim("reduction");
    for grid in [1u32, 7] {
        let mut args = vec![
            SimArg::Array(SimArray::new(x.clone(), &[n]).unwrap()),
            SimArg::Array(SimArray::new(vec![0f64], &[1]).unwrap()),
            SimArg::Array(SimArray::new(vec![0i64], &[1]).unwrap()),
        ];
        s.launch("reduction", grid, 256, &mut args).unwrap();
        assert_eq!(
            array(&args[2]).as_i64().unwrap(),
            want.i64("positives").as_slice(),
            "grid {grid}"
        );
        assert_allclose(
            "total",
            array(&args[1]).as_f64().unwrap(),
            &want.f64("total"),
            1e-11,
            0.0,
        );
    }
}

/// A host schedule that reduces inside a loop launches a kernel with
/// barriers thousands of times; the fibers' stacks are kept from one launch
/// to the next. Launch after launch, with other block sizes and grids (so
/// stacks move between workers and blocks of other sizes), every sum is
/// still exact.
#[test]
fn barrier_kernels_launched_again_and_again_stay_exact() {
    let n = 5_000;
    // Small integers: any order of the float additions gives the same sum.
    let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect();
    let total: f64 = x.iter().sum();
    let positives = x.iter().filter(|v| **v > 0.0).count() as i64;
    let s = sim("reduction");
    for k in 0..240 {
        let block = [256u32, 64, 128, 32][k % 4];
        let grid = [1u32, 3, 7][k % 3];
        let mut args = vec![
            SimArg::Array(SimArray::new(x.clone(), &[n]).unwrap()),
            SimArg::Array(SimArray::new(vec![0f64], &[1]).unwrap()),
            SimArg::Array(SimArray::new(vec![0i64], &[1]).unwrap()),
        ];
        s.launch("reduction", grid, block, &mut args).unwrap();
        let what = format!("launch {k}: grid {grid}, block {block}");
        assert_eq!(array(&args[1]).as_f64().unwrap(), &[total], "{what}");
        assert_eq!(array(&args[2]).as_i64().unwrap(), &[positives], "{what}");
    }
}

#[test]
fn device_function_calls_match_numpy() {
    let (n, cols) = (1_000, 5);
    let mut rng = Rng::new(6);
    let coef = vec![0.5, -1.0, 0.25, 2.0];
    let x = rng.f64s(n, -2.0, 2.0);
    let m = rng.f64s(n * cols, 0.0, 1.0);
    let (lo, hi) = (-3.0, 4.0);
    let mut args = vec![
        SimArg::Array(SimArray::new(coef.clone(), &[4]).unwrap()),
        SimArg::Array(SimArray::new(x.clone(), &[n]).unwrap()),
        SimArg::Array(SimArray::new(m.clone(), &[n, cols]).unwrap()),
        SimArg::F64(lo),
        SimArg::F64(hi),
        SimArg::Array(SimArray::new(vec![0f64; n], &[n]).unwrap()),
    ];
    sim("device_call")
        .launch("device_call", 4, 64, &mut args)
        .unwrap();
    let want = numpy_reference(
        "device_call",
        &[
            ref_f64("coef", &coef, &[4], None),
            ref_f64("x", &x, &[n], None),
            ref_f64("m", &m, &[n, cols], None),
        ],
        json!({"lo": lo, "hi": hi}),
    );
    assert_allclose(
        "out",
        array(&args[5]).as_f64().unwrap(),
        &want.f64("out"),
        1e-13,
        1e-13,
    );
}

#[test]
fn debug_mode_reports_out_of_bounds_like_numba() {
    // Reads one element past the end: thread 10 of block 0 fails.
    let m = port_codegen::text::parse_module(
        "kernel oob(x: f32[::1], out: f32[::1]) {
            let i: i32 = threadIdx.x + blockIdx.x * blockDim.x;
            out[i] = x[i] + 1.0f32;
        }",
    )
    .unwrap();
    let s = Simulator::new(&m, SimOptions::DEBUG).unwrap();
    let mut args = vec![
        SimArg::Array(SimArray::new(vec![1f32; 10], &[10]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f32; 11], &[11]).unwrap()),
    ];
    let e = s.launch("oob", 1, 11, &mut args).unwrap_err();
    assert_eq!(
        e.to_string(),
        "IndexError: tid=[10,0,0] ctaid=[0,0,0]: index 10 is out of bounds for axis 0 with size 10"
    );
    // The failing thread stopped before its store; the others finished.
    let out = array(&args[1]).as_f32().unwrap();
    assert_eq!(&out[..10], &[2f32; 10]);
    assert_eq!(out[10], 0.0);

    // Axis 1 of a 2-D array, in block 1, and a negative index.
    let m = port_codegen::text::parse_module(
        "kernel oob2(x: f64[:, :]) {
            if blockIdx.x == 1i32 && threadIdx.x == 3i32 { x[0, 7] = 1.0; }
            if blockIdx.x == 0i32 && threadIdx.x == 0i32 { x[-1, 0] = 1.0; }
        }",
    )
    .unwrap();
    let s = Simulator::new(&m, SimOptions::DEBUG).unwrap();
    let mut args = vec![SimArg::Array(
        SimArray::new(vec![0f64; 12], &[2, 6]).unwrap(),
    )];
    let e = s
        .launch(
            "oob2",
            1,
            4,
            &mut [SimArg::Array(
                SimArray::new(vec![0f64; 12], &[2, 6]).unwrap(),
            )],
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "IndexError: tid=[0,0,0] ctaid=[0,0,0]: index -1 is out of bounds for axis 0 with size 2"
    );
    let e = s.launch("oob2", [2, 1], 4, &mut args);
    // Block 0 fails first (blocks may run in any order; both are reported
    // only once, so accept either).
    let text = e.unwrap_err().to_string();
    assert!(
        text.ends_with("index 7 is out of bounds for axis 1 with size 6")
            || text.ends_with("index -1 is out of bounds for axis 0 with size 2"),
        "{text}"
    );
    // Without debug, the same in-bounds kernel runs; with debug and a
    // barrier, a failing thread does not hang the block.
    let m = port_codegen::text::parse_module(
        "kernel oob3(x: f32[::1]) {
            shared t: f32[32];
            t[threadIdx.x] = x[threadIdx.x];
            syncthreads();
            x[threadIdx.x] = t[31i32 - threadIdx.x];
        }",
    )
    .unwrap();
    let s = Simulator::new(&m, SimOptions::DEBUG).unwrap();
    let mut args = vec![SimArg::Array(SimArray::new(vec![1f32; 16], &[16]).unwrap())];
    let e = s.launch("oob3", 1, 32, &mut args).unwrap_err();
    assert!(matches!(e, SimError::IndexError { size: 16, .. }), "{e}");
}

#[test]
fn python_int_arithmetic_that_leaves_int64_is_reported() {
    // `out[i] = x[i] * y[i] - y[i] + 1` in Python's ints: each operator
    // checked, the launch failed when any would leave i64, also without
    // debug mode, which the check does not need.
    let m = port_codegen::text::parse_module(
        "kernel prod(x: i64[::1], y: i64[::1], out: i64[::1]) {
            let i: i32 = threadIdx.x;
            if i < 4i32 {
                out[i] = checked_add(checked_sub(checked_mul(x[i], y[i]), y[i]), 1i64);
            }
        }",
    )
    .unwrap();
    assert!(m.checks_overflow());
    // The text form reads back as written.
    let text = port_codegen::text::print_module(&m);
    assert!(
        text.contains("checked_add(checked_sub(checked_mul("),
        "{text}"
    );
    assert_eq!(port_codegen::text::parse_module(&text).unwrap(), m);
    let s = Simulator::new(&m, SimOptions::default()).unwrap();
    let run = |x: Vec<i64>, y: Vec<i64>| {
        let mut args = vec![
            SimArg::Array(SimArray::new(x, &[4]).unwrap()),
            SimArg::Array(SimArray::new(y, &[4]).unwrap()),
            SimArg::Array(SimArray::new(vec![0i64; 4], &[4]).unwrap()),
        ];
        s.launch("prod", 1, 32, &mut args)
            .map(|()| array(&args[2]).as_i64().unwrap().to_vec())
    };
    // In range, up to the edges: Python's values.
    let max = i64::MAX;
    assert_eq!(
        run(vec![3, -4, max, i64::MIN + 1], vec![5, 6, 1, 1]).unwrap(),
        vec![11, -29, max, i64::MIN + 1]
    );
    // 6 * (2**63 - 1), as in fuzz seed 2001603; then a difference and a
    // sum that leave i64 after a product that fits.
    for (x, y) in [
        (vec![1, 1, 6, 1], vec![1, 1, max, 1]),
        (vec![1, i64::MIN, 1, 1], vec![1, 1, 1, 1]),
        (vec![1, 1, 1, i64::MIN + 2], vec![1, 1, 1, -1]),
    ] {
        let e = run(x, y).unwrap_err();
        assert!(matches!(e, SimError::Overflow { .. }), "{e}");
        assert!(e.to_string().contains("overflowed int64"), "{e}");
    }
}

#[test]
fn bad_launches_are_errors_not_crashes() {
    let s = sim("saxpy");
    let n = 8;
    let good = || {
        vec![
            SimArg::F32(1.0),
            SimArg::Array(SimArray::new(vec![0f32; n], &[n]).unwrap()),
            SimArg::Array(SimArray::new(vec![0f32; n], &[n]).unwrap()),
        ]
    };
    let e = s.launch("nope", 1, 1, &mut good()).unwrap_err();
    assert_eq!(e.to_string(), "no kernel named `nope` in the module");
    let e = s.launch("saxpy", 1, 2048, &mut good()).unwrap_err();
    assert!(e.to_string().contains("at most 1024 threads"), "{e}");
    let e = s.launch("saxpy", 0, 32, &mut good()).unwrap_err();
    assert!(e.to_string().contains("at least 1"), "{e}");
    let mut args = good();
    args[0] = SimArg::F64(1.0);
    let e = s.launch("saxpy", 1, 32, &mut args).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `saxpy`: argument `a`: expected f32, got f64"
    );
    let mut args = good();
    args[2] = SimArg::Array(SimArray::strided(vec![0f32; 2 * n], &[n], &[2]).unwrap());
    let e = s.launch("saxpy", 1, 32, &mut args).unwrap_err();
    assert!(e.to_string().contains("C-contiguous f32[::1]"), "{e}");
    let e = s
        .launch("saxpy", 1, 32, &mut good()[..2].to_vec())
        .unwrap_err();
    assert!(
        e.to_string().contains("takes 3 argument(s), 2 given"),
        "{e}"
    );
    let e = SimArray::strided(vec![0f32; 10], &[5], &[3]).unwrap_err();
    assert!(e.to_string().contains("reaches element 12"), "{e}");
}

#[test]
fn simulator_verifies_first() {
    let m = port_codegen::text::parse_module(
        "kernel k(x: f32[::1]) { if threadIdx.x == 0i32 { syncthreads(); } }",
    )
    .unwrap();
    let e = Simulator::new(&m, SimOptions::default())
        .err()
        .expect("rejected");
    assert!(e.to_string().contains("barrier in divergent code"), "{e}");
}

#[test]
fn early_return_and_2d_blocks_with_barrier() {
    // Threads with threadIdx.y == 1 write after a barrier what y == 0 threads
    // stored before it; the block is 2-D, the barrier is uniform.
    let m = port_codegen::text::parse_module(
        "kernel swap(x: i32[::1], out: i32[::1]) {
            shared t: i32[64];
            let me: i32 = threadIdx.y * blockDim.x + threadIdx.x;
            t[me] = x[me] * 2i32;
            syncthreads();
            out[me] = t[63i32 - me];
            if threadIdx.x > 1000i32 { return; }
        }",
    )
    .unwrap();
    let s = Simulator::new(&m, SimOptions::default()).unwrap();
    let x: Vec<i32> = (0..64).collect();
    let mut args = vec![
        SimArg::Array(SimArray::new(x, &[64]).unwrap()),
        SimArg::Array(SimArray::new(vec![0i32; 64], &[64]).unwrap()),
    ];
    s.launch("swap", 1, [32, 2], &mut args).unwrap();
    let want: Vec<i32> = (0..64).rev().map(|v| v * 2).collect();
    assert_eq!(array(&args[1]).as_i32().unwrap(), want.as_slice());
}

#[test]
fn kernel_named_like_libm_does_not_capture_math_calls() {
    let m = port_codegen::text::parse_module(
        "kernel sqrtf(x: f32[::1]) { parallel for i in range(x.shape[0]) { x[i] = sqrt(x[i]); } }",
    )
    .unwrap();
    let s = Simulator::new(&m, SimOptions::default()).unwrap();
    let mut args = vec![SimArg::Array(
        SimArray::new(vec![4f32, 9.0, 2.25], &[3]).unwrap(),
    )];
    s.launch("sqrtf", 1, 32, &mut args).unwrap();
    assert_eq!(array(&args[0]).as_f32().unwrap(), &[2.0, 3.0, 1.5]);
}

#[test]
fn every_math_function_resolves_on_the_host() {
    use port_codegen::ir::MathFn;
    // One output column per function: out[k, i] = f(x[i]) (or f(x[i], 0.75)).
    let mut src = String::from("kernel all_math(x: f64[::1], out: f64[:, ::1], x32: f32[::1], out32: f32[:, ::1]) {\n    parallel for i in range(x.shape[0]) {\n");
    for (k, f) in MathFn::ALL.iter().enumerate() {
        let (a, a32) = if f.arity() == 2 {
            ("x[i], 0.75", "x32[i], 0.75f32")
        } else {
            ("x[i]", "x32[i]")
        };
        src.push_str(&format!(
            "        out[{k}, i] = {0}({a});\n        out32[{k}, i] = {0}({a32});\n",
            f.name()
        ));
    }
    src.push_str("    }\n}\n");
    let m = port_codegen::text::parse_module(&src).unwrap();
    let s = Simulator::new(&m, SimOptions::default()).unwrap();
    let x = vec![0.3f64, 0.9, 1.7];
    let nf = MathFn::ALL.len();
    let mut args = vec![
        SimArg::Array(SimArray::new(x.clone(), &[3]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f64; nf * 3], &[nf, 3]).unwrap()),
        SimArg::Array(
            SimArray::new(x.iter().map(|&v| v as f32).collect::<Vec<_>>(), &[3]).unwrap(),
        ),
        SimArg::Array(SimArray::new(vec![0f32; nf * 3], &[nf, 3]).unwrap()),
    ];
    s.launch("all_math", 1, 32, &mut args).unwrap();
    let out = array(&args[1]).as_f64().unwrap();
    let out32 = array(&args[3]).as_f32().unwrap();
    for (k, f) in MathFn::ALL.iter().enumerate() {
        for (i, &v) in x.iter().enumerate() {
            let want = match f {
                MathFn::Sqrt => Some(v.sqrt()),
                MathFn::Cbrt => Some(v.cbrt()),
                MathFn::Exp => Some(v.exp()),
                MathFn::Exp2 => Some(v.exp2()),
                MathFn::Expm1 => Some(v.exp_m1()),
                MathFn::Log => Some(v.ln()),
                MathFn::Log2 => Some(v.log2()),
                MathFn::Log10 => Some(v.log10()),
                MathFn::Log1p => Some(v.ln_1p()),
                MathFn::Sin => Some(v.sin()),
                MathFn::Cos => Some(v.cos()),
                MathFn::Tan => Some(v.tan()),
                MathFn::Asin if v <= 1.0 => Some(v.asin()),
                MathFn::Acos if v <= 1.0 => Some(v.acos()),
                MathFn::Atan => Some(v.atan()),
                MathFn::Sinh => Some(v.sinh()),
                MathFn::Cosh => Some(v.cosh()),
                MathFn::Tanh => Some(v.tanh()),
                MathFn::Asinh => Some(v.asinh()),
                MathFn::Acosh if v >= 1.0 => Some(v.acosh()),
                MathFn::Atanh if v < 1.0 => Some(v.atanh()),
                MathFn::Fabs => Some(v.abs()),
                MathFn::Floor => Some(v.floor()),
                MathFn::Ceil => Some(v.ceil()),
                MathFn::Trunc => Some(v.trunc()),
                MathFn::Rint => Some(v.round_ties_even()),
                MathFn::Pow => Some(v.powf(0.75)),
                MathFn::Atan2 => Some(v.atan2(0.75)),
                MathFn::Hypot => Some(v.hypot(0.75)),
                MathFn::Fmod => Some(v % 0.75),
                MathFn::Fmin => Some(v.min(0.75)),
                MathFn::Fmax => Some(v.max(0.75)),
                MathFn::Copysign => Some(v.copysign(0.75)),
                MathFn::Erf | MathFn::Erfc => Some(out[k * 3 + i]),
                _ => None,
            };
            let got = out[k * 3 + i];
            if let Some(w) = want {
                assert!(
                    (got - w).abs() <= 1e-15 * w.abs().max(1.0),
                    "{}({v}) = {got}, want {w}",
                    f.name()
                );
                let g32 = f64::from(out32[k * 3 + i]);
                assert!(
                    (g32 - w).abs() <= 1e-6 * w.abs().max(1.0),
                    "{}f({v}) = {g32}, want {w}",
                    f.name()
                );
            }
        }
    }
    // erf(0.9) and erfc(0.9) from tables.
    let erf = MathFn::ALL.iter().position(|f| *f == MathFn::Erf).unwrap();
    assert!((out[erf * 3 + 1] - 0.796_908_212_422_832).abs() < 1e-15);
    assert!((out[(erf + 1) * 3 + 1] - 0.203_091_787_577_168).abs() < 1e-15);
}

/// The module on two simulators: thread loops where they can be, and
/// fibers only (their reference).
fn loops_and_fibers(m: &port_codegen::ir::Module) -> (Simulator, Simulator) {
    let fibers = SimOptions {
        fibers: true,
        ..SimOptions::default()
    };
    (
        Simulator::new(m, SimOptions::default()).unwrap(),
        Simulator::new(m, fibers).unwrap(),
    )
}

/// Arguments for any kernel of the corpora: every array dimension `extent`
/// long, floats small integers (so that sums are exact in any order),
/// integers in 0..4 (valid as row numbers), scalars 3 and 0.5.
fn corpus_args(k: &port_codegen::ir::Kernel, extent: usize) -> Vec<SimArg> {
    use port_codegen::ir::{ScalarType, Type};
    k.params
        .iter()
        .map(|p| match p.ty {
            Type::Array(a) => {
                let shape = vec![extent; a.ndim as usize];
                let n: usize = shape.iter().product();
                let ints = |m: usize| (0..n).map(move |i| (i * 7 + 3) % m);
                let array = match a.elem {
                    ScalarType::F64 => SimArray::new(
                        ints(11).map(|v| v as f64 - 5.0).collect::<Vec<f64>>(),
                        &shape,
                    ),
                    ScalarType::F32 => SimArray::new(
                        ints(11).map(|v| v as f32 - 5.0).collect::<Vec<f32>>(),
                        &shape,
                    ),
                    ScalarType::I64 => {
                        SimArray::new(ints(4).map(|v| v as i64).collect::<Vec<i64>>(), &shape)
                    }
                    ScalarType::I32 => {
                        SimArray::new(ints(4).map(|v| v as i32).collect::<Vec<i32>>(), &shape)
                    }
                    other => panic!("{}: no corpus arrays of {other:?}", k.name),
                };
                SimArg::Array(array.unwrap())
            }
            Type::Scalar(ScalarType::I64) => SimArg::I64(3),
            Type::Scalar(ScalarType::I32) => SimArg::I32(3),
            Type::Scalar(ScalarType::F64) => SimArg::F64(0.5),
            Type::Scalar(ScalarType::F32) => SimArg::F32(0.5),
            Type::Scalar(other) => panic!("{}: no corpus scalar of {other:?}", k.name),
        })
        .collect()
}

/// Every kernel with barriers the rewriter wrote for the fixture programs
/// (reductions, row reductions of matrix products, 4-D axis means, an
/// integer sum) runs as thread loops, and gives what the fibers give: the
/// same bits in one block, and (with exact small-integer data) in several.
#[test]
fn thread_loops_give_what_fibers_give_on_the_rewriters_barrier_kernels() {
    let module = kernel_module("barrier_corpus");
    assert!(module.kernels.len() >= 20, "{}", module.kernels.len());
    let (loops, fibers) = loops_and_fibers(&module);
    for k in &module.kernels {
        assert!(
            loops.runs_as_thread_loops(&k.name),
            "{} runs as fibers",
            k.name
        );
        assert!(!fibers.runs_as_thread_loops(&k.name));
        let four_d = k
            .params
            .iter()
            .any(|p| matches!(p.ty, port_codegen::ir::Type::Array(a) if a.ndim > 2));
        for (grid, extent) in [(1u32, 12), (3, 12), (2, if four_d { 20 } else { 300 })] {
            let mut a = corpus_args(k, extent);
            let mut b = corpus_args(k, extent);
            loops.launch(&k.name, grid, 128, &mut a).unwrap();
            fibers.launch(&k.name, grid, 128, &mut b).unwrap();
            for (p, (x, y)) in k.params.iter().zip(a.iter().zip(&b)) {
                if let (SimArg::Array(x), SimArg::Array(y)) = (x, y) {
                    assert_eq!(
                        x.data(),
                        y.data(),
                        "{}: `{}` differs (grid {grid}, extent {extent})",
                        k.name,
                        p.name
                    );
                }
            }
        }
    }
}

/// What the thread loops must get right beyond the rewriter's reductions:
/// a 2-D block, a local live across barriers, a `for` and an `if` that hold
/// barriers (their variable and condition the same for every thread), a
/// local declared between barriers inside that loop, a thread's own loop
/// that breaks, a local of a thread's own block. Fibers are the reference;
/// a kernel with a `return` keeps them.
#[test]
fn thread_loops_handle_locals_across_barriers_and_uniform_control() {
    let m = port_codegen::text::parse_module(
        "kernel shapes(x: i64[::1], out: i64[::1], n: i64) {
            shared t: i64[64];
            let me: i32 = threadIdx.y * blockDim.x + threadIdx.x;
            let carry: i64 = x[me];
            for round in range(0, n, 1) {
                t[me] = carry + round;
                syncthreads();
                let other: i64 = t[63i32 - me];
                if n > 1 {
                    syncthreads();
                    carry = other * 2 - round;
                } else {
                    carry = other;
                }
                syncthreads();
                let k: i64 = 0;
                while k < 5 {
                    if k * 7 % 5 == i64(me) % 5 {
                        break;
                    }
                    k = k + 1;
                }
                if me % 2i32 == 0i32 {
                    let mine: i64 = k;
                    out[me] = out[me] + mine;
                } else {
                    out[me] = out[me] + carry;
                }
            }
        }",
    )
    .unwrap();
    let (loops, fibers) = loops_and_fibers(&m);
    assert!(loops.runs_as_thread_loops("shapes"));
    for n in [1i64, 4] {
        let run = |s: &Simulator| {
            let mut args = vec![
                SimArg::Array(
                    SimArray::new((0..64i64).map(|v| v * 3 - 7).collect::<Vec<_>>(), &[64])
                        .unwrap(),
                ),
                SimArg::Array(SimArray::new(vec![0i64; 64], &[64]).unwrap()),
                SimArg::I64(n),
            ];
            s.launch("shapes", 1, [32, 2], &mut args).unwrap();
            array(&args[1]).as_i64().unwrap().to_vec()
        };
        let (a, b) = (run(&loops), run(&fibers));
        assert_eq!(a, b, "n = {n}");
        assert!(a.iter().any(|v| *v != 0), "n = {n}: {a:?}");
    }

    // `swap` (above) returns early: fibers.
    let m = port_codegen::text::parse_module(
        "kernel swap(x: i32[::1]) {
            syncthreads();
            if threadIdx.x > 1000i32 { return; }
        }",
    )
    .unwrap();
    let s = Simulator::new(&m, SimOptions::default()).unwrap();
    assert!(!s.runs_as_thread_loops("swap"));
}

/// A kernel without barriers runs as one thread loop a block (one call a
/// block, not one a thread) and gives what one call a thread gives (the
/// fibers-only simulator runs barrier-free kernels so): grid-stride loops
/// in 1-D and 2-D, a thread's own loops with `break`, `continue` and
/// `while`, device calls. Both sizes leave threads past the data.
#[test]
fn barrier_free_kernels_as_thread_loops_give_what_one_call_a_thread_gives() {
    for file in [
        "saxpy",
        "vector_add",
        "elementwise_2d",
        "row_loop",
        "device_call",
    ] {
        let module = kernel_module(file);
        let (loops, per_thread) = loops_and_fibers(&module);
        for k in module.kernels.iter().filter(|k| !k.has_barrier()) {
            assert!(loops.runs_as_thread_loops(&k.name), "{file}: {}", k.name);
            assert!(!per_thread.runs_as_thread_loops(&k.name));
            for (grid, block, extent) in [(1u32, 32u32, 7usize), (3, 64, 200)] {
                let (mut a, mut b) = (corpus_args(k, extent), corpus_args(k, extent));
                loops.launch(&k.name, grid, block, &mut a).unwrap();
                per_thread.launch(&k.name, grid, block, &mut b).unwrap();
                for (p, (x, y)) in k.params.iter().zip(a.iter().zip(&b)) {
                    if let (SimArg::Array(x), SimArg::Array(y)) = (x, y) {
                        assert_eq!(x.data(), y.data(), "{file}: {} `{}`", k.name, p.name);
                    }
                }
            }
        }
    }
}
