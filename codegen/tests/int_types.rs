//! Narrow and unsigned integers on the host simulator: the arithmetic where
//! signedness and width matter (division, remainder, shifts, comparisons,
//! conversions), against what NumPy computes for the same dtypes.

use port_codegen::{SimArg, SimArray, SimOptions, Simulator};

fn run(src: &str, kernel: &str, args: &mut [SimArg]) {
    let m = port_codegen::text::parse_module(src).unwrap_or_else(|e| panic!("{e}"));
    port_codegen::verify::verify_module(&m).unwrap_or_else(|e| panic!("{e:?}"));
    let s = Simulator::new(&m, SimOptions::DEBUG).unwrap();
    s.launch(kernel, 1, 32, args).unwrap();
}

fn arr<T>(v: Vec<T>) -> SimArg
where
    port_codegen::ArrayData: From<Vec<T>>,
{
    let n = v.len();
    SimArg::Array(SimArray::new(v, &[n]).unwrap())
}

fn out<T: Clone>(a: &SimArg, f: impl Fn(&port_codegen::ArrayData) -> Option<&Vec<T>>) -> Vec<T> {
    f(a.as_array().unwrap().data()).unwrap().clone()
}

#[test]
fn uint8_wraps_divides_and_compares_unsigned() {
    let src = "kernel k(a: u8[::1], b: u8[::1], sum: u8[::1], quot: u8[::1], rem: u8[::1],
                        shr: u8[::1], lt: bool[::1], wide: i64[::1], f: f64[::1]) {
        parallel for i in range(a.shape[0]) {
            sum[i] = a[i] + b[i];
            quot[i] = a[i] // b[i];
            rem[i] = a[i] % b[i];
            shr[i] = a[i] >> u8(1);
            lt[i] = a[i] < b[i];
            wide[i] = i64(a[i]);
            f[i] = f64(a[i]);
        }
    }";
    let a: Vec<u8> = vec![255, 200, 7, 128, 0];
    let b: Vec<u8> = vec![1, 100, 3, 3, 9];
    let n = a.len();
    let mut args = vec![
        arr(a),
        arr(b),
        arr(vec![0u8; n]),
        arr(vec![0u8; n]),
        arr(vec![0u8; n]),
        arr(vec![0u8; n]),
        arr(vec![false; n]),
        arr(vec![0i64; n]),
        arr(vec![0f64; n]),
    ];
    run(src, "k", &mut args);
    let u8s = |k: usize| {
        out(&args[k], |d| match d {
            port_codegen::ArrayData::U8(v) => Some(v),
            _ => None,
        })
    };
    // np.uint8(255) + np.uint8(1) == 0; 200 + 100 == 44.
    assert_eq!(u8s(2), vec![0, 44, 10, 131, 9]);
    // 200 // 100 and 128 // 3 as unsigned (a signed i8 divide gives -42).
    assert_eq!(u8s(3), vec![255, 2, 2, 42, 0]);
    assert_eq!(u8s(4), vec![0, 0, 1, 2, 0]);
    // A logical shift: 255 >> 1 is 127, not -1.
    assert_eq!(u8s(5), vec![127, 100, 3, 64, 0]);
    assert_eq!(
        args[6].as_array().unwrap().as_bool().unwrap(),
        &[false, false, false, false, true]
    );
    // Zero-extended, not sign-extended.
    assert_eq!(
        args[7].as_array().unwrap().as_i64().unwrap(),
        &[255, 200, 7, 128, 0]
    );
    assert_eq!(
        args[8].as_array().unwrap().as_f64().unwrap(),
        &[255.0, 200.0, 7.0, 128.0, 0.0]
    );
}

#[test]
fn signed_narrow_types_floor_and_sign_extend() {
    let src = "kernel k(a: i8[::1], b: i8[::1], sum: i8[::1], fdiv: i8[::1], wide: i16[::1],
                        gt: bool[::1]) {
        parallel for i in range(a.shape[0]) {
            sum[i] = a[i] + b[i];
            fdiv[i] = a[i] // b[i];
            wide[i] = i16(a[i]) * i16(b[i]);
            gt[i] = a[i] > b[i];
        }
    }";
    let a: Vec<i8> = vec![127, -7, -128, 100];
    let b: Vec<i8> = vec![1, 2, -1, -3];
    let mut args = vec![
        arr(a),
        arr(b),
        arr(vec![0i8; 4]),
        arr(vec![0i8; 4]),
        arr(vec![0i16; 4]),
        arr(vec![false; 4]),
    ];
    run(src, "k", &mut args);
    let get = |k: usize| match args[k].as_array().unwrap().data() {
        port_codegen::ArrayData::I8(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    // np.int8(127) + np.int8(1) == -128; -7 // 2 == -4 (Python floors).
    assert_eq!(get(2), vec![-128, -5, 127, 97]);
    assert_eq!(get(3)[..2], [127, -4]);
    assert_eq!(get(3)[3], -34);
    match args[4].as_array().unwrap().data() {
        port_codegen::ArrayData::I16(v) => assert_eq!(v, &vec![127, -14, 128, -300]),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        args[5].as_array().unwrap().as_bool().unwrap(),
        &[true, false, false, true]
    );
}

#[test]
fn uint32_hash_and_uint64_counters_and_float_conversions() {
    let src = "kernel k(x: u32[::1], h: u32[::1], big: u64[::1], q: u64[::1], f: f64[::1],
                        back: u8[::1], s: f32[::1]) {
        parallel for i in range(x.shape[0]) {
            let v: u32 = x[i] ^ (x[i] >> u32(16));
            v = v * u32(2654435761);
            h[i] = v ^ (v << u32(5));
            q[i] = big[i] // u64(3);
            f[i] = f64(big[i]);
            back[i] = u8(s[i]);
        }
    }";
    let x: Vec<u32> = vec![0xDEAD_BEEF, 1, 0xFFFF_FFFF];
    let big: Vec<u64> = vec![u64::MAX, 10, 1 << 63];
    let s: Vec<f32> = vec![200.7, -1.0, 255.0];
    let mut args = vec![
        arr(x.clone()),
        arr(vec![0u32; 3]),
        arr(big.clone()),
        arr(vec![0u64; 3]),
        arr(vec![0f64; 3]),
        arr(vec![0u8; 3]),
        arr(s),
    ];
    run(src, "k", &mut args);
    let want: Vec<u32> = x
        .iter()
        .map(|&x| {
            let v = (x ^ (x >> 16)).wrapping_mul(2_654_435_761);
            v ^ (v << 5)
        })
        .collect();
    match args[1].as_array().unwrap().data() {
        port_codegen::ArrayData::U32(v) => assert_eq!(v, &want),
        other => panic!("{other:?}"),
    }
    match args[3].as_array().unwrap().data() {
        port_codegen::ArrayData::U64(v) => {
            assert_eq!(v, &vec![u64::MAX / 3, 3, (1u64 << 63) / 3])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        args[4].as_array().unwrap().as_f64().unwrap(),
        &[u64::MAX as f64, 10.0, (1u64 << 63) as f64]
    );
    // Truncation toward zero; -1.0 wraps to 255 as NumPy's cast does on x86.
    match args[5].as_array().unwrap().data() {
        port_codegen::ArrayData::U8(v) => assert_eq!(v, &vec![200, 255, 255]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn narrow_scalar_arguments_and_text_round_trip() {
    let src = "kernel k(x: u16[::1], gain: i16, out: i16[::1]) {
        parallel for i in range(x.shape[0]) {
            out[i] = i16(x[i]) * gain + 7i16;
        }
    }";
    let m = port_codegen::text::parse_module(src).unwrap();
    let printed = port_codegen::text::print_module(&m);
    assert_eq!(port_codegen::text::parse_module(&printed).unwrap(), m);
    let mut args = vec![
        arr(vec![1u16, 40000, 3]),
        SimArg::I16(-2),
        arr(vec![0i16; 3]),
    ];
    run(src, "k", &mut args);
    match args[2].as_array().unwrap().data() {
        // i16(40000) is -25536; times -2 wraps to -14464; plus 7.
        port_codegen::ArrayData::I16(v) => assert_eq!(v, &vec![5, -14457, 1]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unsigned_lowers_to_unsigned_ptx_instructions() {
    let ptx = port_codegen::compile_ptx_text(
        "kernel k(a: u32[::1], b: u32[::1], c: u8[::1]) {
            parallel for i in range(a.shape[0]) {
                a[i] = (a[i] // b[i]) >> u32(3);
                c[i] = c[i] % u8(10);
            }
        }",
        &port_codegen::PtxOptions::default(),
    )
    .unwrap();
    assert!(ptx.contains("div.u32"), "{ptx}");
    assert!(ptx.contains("shr.u32"), "{ptx}");
    assert!(!ptx.contains("div.s32"), "{ptx}");
}

#[test]
fn shifts_past_the_width_follow_numpy() {
    // np.uint8(1) << 9 == 0, np.int8(-100) >> 9 == -1, np.int64(5) >> 64 == 0.
    let src = "kernel k(a: u8[::1], n: u8[::1], shl: u8[::1], s: i8[::1], m: i8[::1],
                        sar: i8[::1], w: i64[::1], wn: i64[::1], wr: i64[::1]) {
        parallel for i in range(a.shape[0]) {
            shl[i] = a[i] << n[i];
            sar[i] = s[i] >> m[i];
            wr[i] = w[i] >> wn[i];
        }
    }";
    let mut args = vec![
        arr(vec![1u8, 1, 255]),
        arr(vec![9u8, 7, 8]),
        arr(vec![0u8; 3]),
        arr(vec![-100i8, -100, 100]),
        arr(vec![9i8, 2, 9]),
        arr(vec![0i8; 3]),
        arr(vec![5i64, -5, 5]),
        arr(vec![64i64, 64, 1]),
        arr(vec![0i64; 3]),
    ];
    run(src, "k", &mut args);
    match args[2].as_array().unwrap().data() {
        port_codegen::ArrayData::U8(v) => assert_eq!(v, &vec![0, 128, 0]),
        other => panic!("{other:?}"),
    }
    match args[5].as_array().unwrap().data() {
        port_codegen::ArrayData::I8(v) => assert_eq!(v, &vec![-1, -25, 0]),
        other => panic!("{other:?}"),
    }
    assert_eq!(args[8].as_array().unwrap().as_i64().unwrap(), &[0, -1, 2]);
}
