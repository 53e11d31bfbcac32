//! Complex numbers on the host simulator: arithmetic, comparisons, parts,
//! casts, the complex math functions and atomic sums, against what NumPy
//! computes for the same `complex128`/`complex64` inputs (the expected
//! values below were printed by NumPy 2).

use port_codegen::{ArrayData, SimArg, SimArray, SimOptions, Simulator};

fn run(src: &str, kernel: &str, args: &mut [SimArg]) {
    let m = port_codegen::text::parse_module(src).unwrap_or_else(|e| panic!("{e}"));
    port_codegen::verify::verify_module(&m).unwrap_or_else(|e| panic!("{e:?}"));
    let s = Simulator::new(&m, SimOptions::DEBUG).unwrap();
    s.launch(kernel, 2, 32, args).unwrap();
}

fn arr<T>(v: Vec<T>) -> SimArg
where
    ArrayData: From<Vec<T>>,
{
    let n = v.len();
    SimArg::Array(SimArray::new(v, &[n]).unwrap())
}

fn c128(a: &SimArg) -> Vec<[f64; 2]> {
    match a.as_array().unwrap().data() {
        ArrayData::C128(v) => v.clone(),
        d => panic!("not complex128: {:?}", d.elem()),
    }
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1e-300) + 1e-15
}

fn assert_c(what: &str, got: &[[f64; 2]], want: &[(f64, f64)]) {
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(g[0], w.0) && close(g[1], w.1),
            "{what}[{k}]: got {g:?}, NumPy gives {w:?}"
        );
    }
}

const A: [[f64; 2]; 5] = [
    [1.0, 2.0],
    [-3.5, 0.25],
    [0.0, 0.0],
    [-4.0, 0.0],
    [1e-3, -2.0],
];
const B: [[f64; 2]; 5] = [
    [0.5, -1.0],
    [2.0, 0.0],
    [0.0, 1.0],
    [-4.0, 3.0],
    [3e5, 1e-5],
];

#[test]
fn complex128_arithmetic_and_math_match_numpy() {
    let src = "kernel k(a: c128[::1], b: c128[::1], mul: c128[::1], div: c128[::1],
                        ex: c128[::1], lg: c128[::1], sq: c128[::1], ab: f64[::1],
                        sn: c128[::1], ch: c128[::1], th: c128[::1], pw: c128[::1],
                        eq: bool[::1], re: f64[::1], neg: c128[::1]) {
        parallel for i in range(a.shape[0]) {
            mul[i] = a[i] * b[i];
            div[i] = a[i] / b[i];
            ex[i] = exp(a[i]);
            lg[i] = log(b[i]);
            sq[i] = sqrt(a[i]);
            ab[i] = fabs(a[i]);
            sn[i] = sin(a[i]);
            ch[i] = cosh(a[i]);
            th[i] = tanh(a[i]);
            pw[i] = pow(a[i], b[i]);
            eq[i] = a[i] == complex(real(a[i]), imag(a[i]));
            re[i] = real(a[i] + b[i]) - imag(a[i] - b[i]);
            neg[i] = -a[i] + c128(f64(i));
        }
    }";
    let n = A.len();
    let z = || arr(vec![[0f64; 2]; n]);
    let mut args = vec![
        arr(A.to_vec()),
        arr(B.to_vec()),
        z(),
        z(),
        z(),
        z(),
        z(),
        arr(vec![0f64; n]),
        z(),
        z(),
        z(),
        z(),
        arr(vec![false; n]),
        arr(vec![0f64; n]),
        z(),
    ];
    run(src, "k", &mut args);
    assert_c(
        "a*b",
        &c128(&args[2]),
        &[
            (2.5, 0.0),
            (-7.0, 0.5),
            (0.0, 0.0),
            (16.0, -12.0),
            (300.00002, -599999.99999999),
        ],
    );
    assert_c(
        "a/b",
        &c128(&args[3]),
        &[
            (-1.2000000000000002, 1.6),
            (-1.75, 0.125),
            (0.0, 0.0),
            (0.64, 0.48),
            (3.333333111111111e-09, -6.666666666666778e-06),
        ],
    );
    assert_c(
        "exp",
        &c128(&args[4]),
        &[
            (-1.1312043837568135, 2.4717266720048188),
            (0.029258619901043496, 0.007470952217808493),
            (1.0, 0.0),
            (0.01831563888873418, 0.0),
            (-0.41656319152648297, -0.9102071790528083),
        ],
    );
    assert_c(
        "log",
        &c128(&args[5]),
        &[
            (0.11157177565710488, -1.1071487177940904),
            (std::f64::consts::LN_2, 0.0),
            (0.0, std::f64::consts::FRAC_PI_2),
            (1.6094379124341003, 2.498091544796509),
            (12.611537753638338, 3.3333333333333335e-11),
        ],
    );
    assert_c(
        "sqrt",
        &c128(&args[6]),
        &[
            (1.272019649514069, 0.7861513777574233),
            (0.0667727935036041, 1.8720199266974362),
            (0.0, 0.0),
            (0.0, 2.0),
            (1.000250031242185, -0.9997500312578101),
        ],
    );
    let ab = match args[7].as_array().unwrap().data() {
        ArrayData::F64(v) => v.clone(),
        _ => unreachable!(),
    };
    for (g, w) in ab.iter().zip([
        2.23606797749979,
        3.50891721190455,
        0.0,
        4.0,
        2.0000002499999843,
    ]) {
        assert!(close(*g, w), "abs: {g} vs {w}");
    }
    assert_c(
        "sin",
        &c128(&args[8]),
        &[
            (3.165778513216168, 1.9596010414216063),
            (0.3618024162571129, -0.23656049336703044),
            (0.0, 0.0),
            (0.7568024953079282, -0.0),
            (0.0037621950640510477, -3.6268585944169662),
        ],
    );
    assert_c(
        "cosh",
        &c128(&args[9]),
        &[
            (-0.64214812471552, 1.0686074213827783),
            (16.057615686620064, -4.092711487432808),
            (1.0, 0.0),
            (27.308232836016487, -0.0),
            (-0.416147044620578, -0.0009092975783752604),
        ],
    );
    assert_c(
        "tanh",
        &c128(&args[10]),
        &[
            (1.16673625724092, -0.2434582011857253),
            (-0.9984003950229746, 0.0008729611018350542),
            (0.0, 0.0),
            (-0.999329299739067, 0.0),
        ],
    );
    // NumPy's own power differs at 0 and on overflow; the regular points agree.
    assert_c(
        "pow",
        &c128(&args[11])[..2],
        &[(4.382565059863358, -1.1243974773611554), (12.1875, -1.75)],
    );
    let eq = match args[12].as_array().unwrap().data() {
        ArrayData::Bool(v) => v.clone(),
        _ => unreachable!(),
    };
    assert!(
        eq.iter().all(|&e| e),
        "z == complex(real(z), imag(z)): {eq:?}"
    );
    let re = match args[13].as_array().unwrap().data() {
        ArrayData::F64(v) => v.clone(),
        _ => unreachable!(),
    };
    for (k, g) in re.iter().enumerate() {
        let want = (A[k][0] + B[k][0]) - (A[k][1] - B[k][1]);
        assert!(close(*g, want), "parts[{k}]: {g} vs {want}");
    }
    let neg = c128(&args[14]);
    for (k, g) in neg.iter().enumerate() {
        assert_eq!(*g, [-A[k][0] + k as f64, -A[k][1]], "neg[{k}]");
    }
}

#[test]
fn complex64_casts_and_atomic_sums() {
    let src = "kernel k(x: c64[::1], w: f32[::1], y: c128[::1], total: c64[::1]) {
        parallel for i in range(x.shape[0]) {
            y[i] = c128(x[i] * c64(w[i]));
            atomic_add(total[0], x[i]);
        }
    }";
    let n = 200usize;
    let x: Vec<[f32; 2]> = (0..n).map(|k| [k as f32 * 0.5, 1.0 - k as f32]).collect();
    let w: Vec<f32> = (0..n).map(|k| (k % 7) as f32).collect();
    let mut args = vec![
        arr(x.clone()),
        arr(w.clone()),
        arr(vec![[0f64; 2]; n]),
        arr(vec![[0f32; 2]; 1]),
    ];
    run(src, "k", &mut args);
    let y = c128(&args[2]);
    for k in 0..n {
        let want = [f64::from(x[k][0] * w[k]), f64::from(x[k][1] * w[k])];
        assert_eq!(y[k], want, "y[{k}]");
    }
    let total = match args[3].as_array().unwrap().data() {
        ArrayData::C64(v) => v[0],
        _ => unreachable!(),
    };
    let want: (f32, f32) = x.iter().fold((0.0, 0.0), |s, z| (s.0 + z[0], s.1 + z[1]));
    assert_eq!(total, [want.0, want.1], "sum of {n} complex64 by atomics");
}

#[test]
fn complex_misuse_is_a_verifier_error() {
    for (src, needle) in [
        (
            "kernel k(a: c128[::1], b: f64[::1]) { parallel for i in range(a.shape[0]) { b[i] = f64(a[i]); } }",
            "imaginary part",
        ),
        (
            "kernel k(a: c128[::1], b: bool[::1]) { parallel for i in range(a.shape[0]) { b[i] = a[i] < a[i]; } }",
            "compare only",
        ),
        (
            "kernel k(a: c128[::1], z: c128) { parallel for i in range(a.shape[0]) { a[i] = z; } }",
            "no complex scalar argument",
        ),
        (
            "kernel k(a: c128[::1]) { parallel for i in range(a.shape[0]) { a[i] = erf(a[i]); } }",
            "no complex form",
        ),
    ] {
        let m = port_codegen::text::parse_module(src).unwrap_or_else(|e| panic!("{e}"));
        let e = port_codegen::verify::verify_module(&m).expect_err(src);
        assert!(format!("{e}").contains(needle), "{src}: {e}");
    }
}

#[test]
fn complex_text_form_round_trips() {
    let src = "kernel k(a: c64[::1], r: f32[::1]) {\n    parallel for i in range(a.shape[0]) {\n        r[i] = real(a[i]) + imag(complex(1.0f32, 2.0f32));\n    }\n}\n";
    let m = port_codegen::text::parse_module(src).unwrap();
    let printed = port_codegen::text::print_module(&m);
    assert_eq!(
        port_codegen::text::parse_module(&printed).unwrap(),
        m,
        "{printed}"
    );
    assert!(
        printed.contains("complex(") && printed.contains("real("),
        "{printed}"
    );
}
