//! The PTX of every kernel in tests/kernels/ passes NVIDIA's ptxas for
//! sm_80 and sm_90, in every mode.

mod common;

use common::*;
use port_codegen::{compile_ptx, Arch, PtxOptions};

fn ptx(name: &str, arch: &str, fastmath: bool, debug: bool) -> String {
    let opts = PtxOptions {
        arch: Arch::parse(arch).unwrap(),
        fastmath,
        debug,
        libdevice: None,
    };
    compile_ptx(&kernel_module(name), &opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_kernel_passes_ptxas_for_sm80_and_sm90() {
    for name in KERNELS {
        for arch in ["sm_80", "sm_90"] {
            for (fastmath, debug) in [(false, false), (true, false), (false, true)] {
                let text = ptx(name, arch, fastmath, debug);
                assert!(text.contains(&format!(".target {arch}")), "{name}: {text}");
                assert!(
                    text.contains(&format!(".visible .entry {name}(")),
                    "{name}: {text}"
                );
                if let Err(e) = run_ptxas(&text, arch) {
                    panic!("ptxas -arch={arch} rejected {name} (fastmath={fastmath}, debug={debug}):\n{e}\n{text}");
                }
            }
        }
    }
}

#[test]
fn ptx_uses_the_right_constructs() {
    let red = ptx("reduction", "sm_80", false, false);
    assert!(
        red.contains(".shared .align 16"),
        "shared memory in .shared:\n{red}"
    );
    assert!(red.contains("bar.sync"), "a barrier:\n{red}");
    assert!(
        red.contains("atom.global.add.f64"),
        "a native f64 atomic add:\n{red}"
    );
    // Math comes from libdevice and is inlined: no external calls remain.
    let ew = ptx("elementwise_2d", "sm_90", false, false);
    assert!(!ew.contains(".extern"), "{ew}");
    assert!(!ew.contains("__nv_"), "libdevice bodies are inlined:\n{ew}");
    // IEEE square roots unless --fastmath (libdevice asks __CUDA_PREC_SQRT).
    let rl = ptx("row_loop", "sm_80", false, false);
    assert!(rl.contains("sqrt.rn.f32"), "{rl}");
    assert!(!rl.contains("sqrt.approx"), "{rl}");
    let rl_fast = ptx("row_loop", "sm_80", true, false);
    assert!(rl_fast.contains("sqrt.approx.ftz.f32"), "{rl_fast}");
    // Device functions are inlined into the kernel under O3.
    let dc = ptx("device_call", "sm_80", false, false);
    assert!(!dc.contains(".func"), "{dc}");
    // Grid-stride loops read the special registers.
    let va = ptx("vector_add", "sm_80", false, false);
    for reg in ["%tid.x", "%ctaid.x", "%ntid.x", "%nctaid.x"] {
        assert!(va.contains(reg), "{reg}:\n{va}");
    }
    // Debug mode adds the error-record parameter.
    let dbg = ptx("vector_add", "sm_80", false, true);
    assert_eq!(
        dbg.matches(".param .u64").count(),
        va.matches(".param .u64").count() + 1
    );
    // sm_80 → PTX 7.0, sm_90 → PTX 7.8 (LLVM 19's defaults).
    assert!(va.contains(".version 7.0"), "{va}");
    assert!(ptx("vector_add", "sm_90", false, false).contains(".version 7.8"));
}

#[test]
fn bad_ptx_fails_ptxas() {
    // The check above can fail: ptxas rejects broken PTX.
    let text = ptx("vector_add", "sm_80", false, false).replace("ld.global", "ld.bogus");
    assert!(run_ptxas(&text, "sm_80").is_err());
}

#[test]
fn every_math_function_links_from_libdevice() {
    use port_codegen::ir::MathFn;
    let mut src = String::from(
        "kernel all_math(x: f32[::1], y: f64[::1]) {\n    parallel for i in range(x.shape[0]) {\n",
    );
    for f in MathFn::ALL {
        let (a32, a64) = if f.arity() == 2 {
            ("x[i], x[0]", "y[i], y[0]")
        } else {
            ("x[i]", "y[i]")
        };
        src.push_str(&format!(
            "        x[i] = {0}({a32});\n        y[i] = {0}({a64});\n",
            f.name()
        ));
    }
    src.push_str("    }\n}\n");
    let m = port_codegen::text::parse_module(&src).unwrap();
    for (arch, fastmath) in [("sm_80", false), ("sm_90", true)] {
        let opts = PtxOptions {
            arch: Arch::parse(arch).unwrap(),
            fastmath,
            ..PtxOptions::default()
        };
        let text = compile_ptx(&m, &opts).unwrap();
        assert!(
            !text.contains("__nvvm_reflect"),
            "every reflect query is answered"
        );
        if let Err(e) = run_ptxas(&text, arch) {
            panic!("ptxas -arch={arch} rejected the math kernel:\n{e}");
        }
    }
}
