//! Bad input gets one clear error that names the kernel and the construct:
//! IR that fails the verifier, a missing libdevice, an unknown --arch.

use std::path::PathBuf;

use port_codegen::{compile_ptx, compile_ptx_text, Arch, CodegenError, PtxOptions};

fn err(src: &str) -> String {
    compile_ptx_text(src, &PtxOptions::default())
        .expect_err("must be rejected")
        .to_string()
}

#[test]
fn type_mismatch() {
    let e = err("kernel scale(x: f32[::1], k: f64) {
        parallel for i in range(x.shape[0]) { x[i] = x[i] * k; }
    }");
    assert_eq!(
        e,
        "invalid kernel IR: kernel `scale`: at `x[i] = x[i] * k;`: `x[i] * k`: operands of `*` have different types (f32 and f64); insert a cast"
    );
}

#[test]
fn barrier_in_divergent_code() {
    let e = err("kernel tree(x: f64[::1]) {
        shared t: f64[128];
        if threadIdx.x < 64i32 {
            t[threadIdx.x] = x[threadIdx.x];
            syncthreads();
        }
    }");
    assert!(
        e.starts_with(
            "invalid kernel IR: kernel `tree`: at `syncthreads();`: barrier in divergent code"
        ),
        "{e}"
    );
    assert!(e.contains("inside `if threadIdx.x < 64i32`"), "{e}");
}

#[test]
fn syntax_error() {
    let e = err("kernel k(x: f32[::1]) {\n    x[0] = 1.0f32\n}");
    assert_eq!(
        e,
        "kernel IR syntax error: line 3, column 1: expected `;`, found `}`"
    );
}

#[test]
fn libdevice_not_found() {
    let opts = PtxOptions {
        libdevice: Some(PathBuf::from("/no/such/dir/libdevice.10.bc")),
        ..PtxOptions::default()
    };
    let m = port_codegen::text::parse_module(
        "kernel k(x: f32[::1]) { parallel for i in range(x.shape[0]) { x[i] = exp(x[i]); } }",
    )
    .unwrap();
    let e = compile_ptx(&m, &opts).unwrap_err();
    assert!(matches!(e, CodegenError::LibdeviceNotFound { .. }));
    let text = e.to_string();
    assert!(text.contains("/no/such/dir/libdevice.10.bc"), "{text}");
    assert!(text.contains("PORT_LIBDEVICE"), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn unknown_arch() {
    for bad in ["sm_61", "sm_100", "volta", ""] {
        let e = Arch::parse(bad).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("unknown --arch `{bad}`: port compiles for sm_70,")),
            "{e}"
        );
    }
}
