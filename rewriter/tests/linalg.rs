//! `np.linalg` calls as library steps of the host schedule
//! (`lower::linalg`): the plan's steps around them, the operands stored
//! into device arrays when they are not plain arrays, the guards, the
//! emitted wrapper's helpers, and the refusals with their lines.

mod common;

use port_rewriter::plan::{LibraryCall, LibraryOp};
use port_rewriter::HostStep;
use rustpython_parser::Parse;

use common::{migrated, refused};

const FILE: &str = "migrate/programs_linalg.py";

fn library_calls(steps: &[HostStep]) -> Vec<LibraryCall> {
    let mut out = Vec::new();
    HostStep::walk(steps, &mut |s| {
        if let HostStep::Library(c) = s {
            out.push(c.clone());
        }
    });
    out
}

#[test]
fn a_plain_array_is_passed_as_it_is_and_an_expression_stored_first() {
    let m = migrated(
        FILE,
        "gaussian_loglik",
        "float64[:,:], float64[:], float64[:,:]",
    );
    let calls = library_calls(&m.plan.steps);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].op, LibraryOp::Cholesky);
    assert_eq!(calls[0].args, ["cov"]);
    assert_eq!(calls[0].line, 21);
    // `solve(chol, (x - mean).T)`: the factor as it is, the transposed
    // difference through a kernel into an array of its own.
    assert_eq!(calls[1].op, LibraryOp::Solve);
    assert_eq!(calls[1].args[0], calls[0].out);
    assert_ne!(calls[1].args[1], "x");
    // The result is allocated before the step that writes it, with NumPy's
    // shape, and the square check on `cov` runs first of all.
    let pos = |pred: &dyn Fn(&HostStep) -> bool| m.plan.steps.iter().position(pred).unwrap();
    let alloc = pos(&|s| matches!(s, HostStep::Alloc { name, .. } if *name == calls[0].out));
    let step = pos(&|s| matches!(s, HostStep::Library(c) if c.op == LibraryOp::Cholesky));
    assert!(alloc < step);
    let HostStep::Guard(g) = &m.plan.steps[0] else {
        panic!("{:?}", m.plan.steps[0])
    };
    assert_eq!(
        (g.lhs_text.as_str(), g.rhs_text.as_str()),
        ("cov.shape[0]", "cov.shape[1]")
    );
    assert!(g
        .what
        .starts_with("Last 2 dimensions of the array must be square"));
    let log = m
        .plan
        .rewrites
        .iter()
        .find(|r| r.rewrite == "linalg")
        .unwrap();
    assert!(log.applied);
    assert!(
        log.note
            .contains("`np.linalg.cholesky` at line 21: a library step of the host schedule"),
        "{}",
        log.note
    );
    assert!(
        log.note
            .contains("port's GPU runs compute it with cuSOLVER"),
        "{}",
        log.note
    );
    assert!(
        log.note
            .contains("(`(x - mean).T` stored into device arrays first)"),
        "{}",
        log.note
    );
}

#[test]
fn the_wrapper_calls_one_helper_per_routine_added_once() {
    let m = migrated(
        FILE,
        "gaussian_loglik",
        "float64[:,:], float64[:], float64[:,:]",
    );
    assert!(
        m.python
            .contains("_port_cholesky(d_cov, d_chol_2)  # line 21: np.linalg.cholesky"),
        "{}",
        m.python
    );
    assert!(m
        .python
        .contains("library calls: np.linalg.cholesky (line 21), np.linalg.solve (line 22)"));
    for helper in ["_port_linalg", "_port_cholesky", "_port_solve"] {
        assert_eq!(
            m.new_source.matches(&format!("def {helper}(")).count(),
            1,
            "{helper}"
        );
    }
    // Only the routines it calls: no helper the module never uses.
    for unused in ["_port_lstsq", "_port_inv", "_port_det", "_port_matmul"] {
        assert!(!m.new_source.contains(unused), "{unused}");
    }
    assert!(m.new_source.contains("import cupy as xp"));
    assert!(m.new_source.contains("a.copy_to_host()"));
    rustpython_parser::ast::Suite::parse(&m.new_source, "<patched>").expect("valid Python");
    // A wrapper with no library step gets none of it.
    let plain = migrated(
        "migrate/seeds.py",
        "saxpy",
        "float64, float64[:], float64[:], float64[:]",
    );
    assert!(!plain.new_source.contains("_port_linalg"));
}

#[test]
fn a_solve_in_a_time_loop_stays_on_the_host_schedule() {
    let m = migrated(FILE, "newton_system", "float64[:,:], float64[:], int64");
    let HostStep::Loop { body, .. } = m
        .plan
        .steps
        .iter()
        .find(|s| matches!(s, HostStep::Loop { .. }))
        .expect("a host loop")
    else {
        unreachable!()
    };
    let inside = library_calls(body);
    assert_eq!(inside.len(), 1);
    assert_eq!(inside[0].op, LibraryOp::Solve);
    // The Jacobian is a template, stored into an array per iteration; `a`
    // before the loop is passed as it is.
    assert_ne!(inside[0].args[0], "a");
    assert_eq!(library_calls(&m.plan.steps)[0].args, ["a", "b"]);
}

#[test]
fn a_determinant_is_a_device_scalar_and_stacks_keep_their_batch() {
    let m = migrated(FILE, "normalise_by_det", "float64[:,:], float64[:,:]");
    let calls = library_calls(&m.plan.steps);
    let det = &calls[0];
    assert_eq!(det.op, LibraryOp::Det);
    let shape = m.plan.steps.iter().find_map(|s| match s {
        HostStep::Alloc { name, shape, .. } if *name == det.out => Some(shape.clone()),
        _ => None,
    });
    assert_eq!(shape.unwrap().len(), 1);
    // The kernel reads the determinant where it lies (no read-back first).
    let kernels = port_codegen::text::print_module(&m.plan.module);
    assert!(kernels.contains(&format!("{}[0]", det.out)), "{kernels}");

    let m = migrated(FILE, "stack_inverses", "float64[:,:,:], float64[:]");
    let calls = library_calls(&m.plan.steps);
    assert_eq!(
        calls.iter().map(|c| c.op).collect::<Vec<_>>(),
        [LibraryOp::Inv, LibraryOp::Det]
    );
    let det_shape = m.plan.steps.iter().find_map(|s| match s {
        HostStep::Alloc { name, shape, .. } if *name == calls[1].out => Some(shape.len()),
        _ => None,
    });
    assert_eq!(
        det_shape,
        Some(1),
        "one determinant per matrix of the stack"
    );
}

#[test]
fn lstsq_items_and_types() {
    let m = migrated(FILE, "lstsq_refinement", "float64[:,:], float64[:], int64");
    let ops: Vec<LibraryOp> = library_calls(&m.plan.steps).iter().map(|c| c.op).collect();
    assert_eq!(
        ops,
        [
            LibraryOp::Lstsq,
            LibraryOp::Lstsq,
            LibraryOp::LstsqRank,
            LibraryOp::LstsqSingular
        ]
    );
    assert!(
        m.python.contains("_port_lstsq(d_a, d_b, 2, "),
        "{}",
        m.python
    );
    // float32 stays float32, complex128 stays complex.
    let m = migrated(FILE, "solve_f32", "float32[:,:], float32[:]");
    assert!(m.python.contains("dtype=np.float32"), "{}", m.python);
    let m = migrated(FILE, "resolvent_trace", "complex128[:,:], complex128");
    assert_eq!(library_calls(&m.plan.steps)[0].op, LibraryOp::Inv);
    assert!(m.python.contains("dtype=np.complex128"), "{}", m.python);
}

#[test]
fn integer_matrices_are_converted_to_float64_as_numpy_does() {
    let src = "import numpy as np\n\ndef inv_int(a):\n    return np.linalg.inv(a) * 2.0\n";
    let types = port_rewriter::parse_signature("int64[:,:]").unwrap();
    let out = port_rewriter::migrate(&port_rewriter::MigrationRequest {
        source: src,
        file_name: "t.py",
        function: "inv_int",
        types: &types,
        facts: &port_rewriter::AppFacts::default(),
        report: None,
        fp32: false,
        input_shapes: &[],
        literals: &[],
    })
    .unwrap();
    let port_rewriter::Outcome::Migrated(m) = out else {
        panic!("refused")
    };
    let calls = library_calls(&m.plan.steps);
    assert_ne!(
        calls[0].args[0], "a",
        "converted into a float64 array first"
    );
    assert!(m.python.contains("dtype=np.float64"));
}

/// Each refusal names the construct and its line.
#[test]
fn refusals_name_the_call_and_the_line() {
    let cases: [(&str, &str, u32, &str); 4] = [
        (
            "dets_in_a_loop",
            "float64[:,:,:], float64[:]",
            117,
            "`np.linalg.det` inside a parallel loop: a library call runs on the host schedule between kernels",
        ),
        (
            "eigen_energy",
            "float64[:,:]",
            122,
            "calls `np.linalg.eigh`: port runs `np.linalg.cholesky`, `np.linalg.solve`",
        ),
        (
            "lstsq_whole",
            "float64[:,:], float64[:]",
            129,
            "`np.linalg.lstsq(a, b, rcond=None)`: port takes `np.linalg.lstsq(a, b, rcond=None)[0]`",
        ),
        (
            "lstsq_stack",
            "float64[:,:,:], float64[:,:]",
            135,
            "`np.linalg.lstsq(a, b, rcond=None)`: `np.linalg.lstsq` of stacks",
        ),
    ];
    for (function, sig, line, start) in cases {
        let r = refused(FILE, function, sig);
        assert_eq!(r[0].rewrite, "linalg", "{function}: {r:?}");
        assert_eq!(r[0].line, line, "{function}: {r:?}");
        assert!(
            r[0].message.starts_with(start),
            "{function}: {}",
            r[0].message
        );
    }
}

#[test]
fn other_refusals_upper_rcond_and_mismatched_stacks() {
    let cases = [
        (
            "def f(a):\n    return np.linalg.cholesky(a, upper=True)\n",
            "float64[:,:]",
            "port takes the lower factor",
        ),
        (
            "def f(a, b):\n    return np.linalg.lstsq(a, b, rcond=1e-3)[0]\n",
            "float64[:,:], float64[:]",
            "port takes `rcond=None`",
        ),
        (
            "def f(a, b):\n    return np.linalg.solve(a, b)\n",
            "float64[:,:,:], float64[:,:]",
            "a right-hand side of 2 dimensions against matrices of 3",
        ),
        (
            "def f(v):\n    return np.linalg.inv(v)\n",
            "float64[:]",
            "`np.linalg.inv` of the 1-dimensional `v`",
        ),
    ];
    for (body, sig, want) in cases {
        let src = format!("import numpy as np\n\n{body}");
        let types = port_rewriter::parse_signature(sig).unwrap();
        let out = port_rewriter::migrate(&port_rewriter::MigrationRequest {
            source: &src,
            file_name: "t.py",
            function: "f",
            types: &types,
            facts: &port_rewriter::AppFacts::default(),
            report: None,
            fp32: false,
            input_shapes: &[],
            literals: &[],
        })
        .unwrap();
        let port_rewriter::Outcome::Refused(r) = out else {
            panic!("{body} migrated")
        };
        assert_eq!(r[0].line, 4, "{body}: {r:?}");
        assert!(r[0].message.contains(want), "{body}: {}", r[0].message);
    }
}
