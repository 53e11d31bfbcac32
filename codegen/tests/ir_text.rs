//! The text form round-trips for every kernel file, and the Rust builder API
//! builds the same IR as the text.

mod common;

use common::*;
use port_codegen::ir::build::*;
use port_codegen::ir::*;
use port_codegen::text::{parse_module, print_module};

#[test]
fn every_kernel_file_round_trips() {
    for name in KERNELS {
        let m = kernel_module(name);
        port_codegen::verify::verify_module(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
        let printed = print_module(&m);
        let again = parse_module(&printed).unwrap_or_else(|e| panic!("{name}: {e}\n{printed}"));
        assert_eq!(m, again, "{name}:\n{printed}");
        assert_eq!(printed, print_module(&again), "{name}: printing is stable");
    }
}

#[test]
fn builder_api_matches_the_text_form() {
    let i = || var("i");
    let saxpy = Kernel {
        name: "saxpy".into(),
        params: vec![
            param("a", ScalarType::F32),
            param("x", strided_array(ScalarType::F32, 1)),
            param("y", array(ScalarType::F32, 1)),
        ],
        shared: vec![],
        body: vec![parallel_for1(
            "i",
            shape("y", 0),
            vec![store(
                "y",
                vec![i()],
                add(mul(var("a"), load("x", vec![i()])), load("y", vec![i()])),
            )],
        )],
    };
    let built = Module {
        device_functions: vec![],
        kernels: vec![saxpy],
    };
    assert_eq!(built, kernel_module("saxpy"));
    assert_eq!(
        print_module(&built),
        "kernel saxpy(a: f32, x: f32[:], y: f32[::1]) {\n    parallel for i in range(y.shape[0]) {\n        y[i] = a * x[i] + y[i];\n    }\n}\n"
    );
}

#[test]
fn ir_serialises_to_json_and_back() {
    // The rewriter may hand IR over as JSON (it derives serde).
    for name in KERNELS {
        let m = kernel_module(name);
        let json = serde_json::to_string(&m).unwrap();
        let back: Module = serde_json::from_str(&json).unwrap();
        assert_eq!(m, back, "{name}");
    }
}
