//! The fuse pass on `fixtures/migrate/fusion.py`: neighbouring statements
//! over one index space become one kernel, arrays that live only inside it
//! become registers, and statements one thread cannot do alone stay apart.
//! (`tests/migrate_fixtures.rs` verifies the same functions against
//! CPython and under Numba's CUDA simulator.)

mod common;

use port_rewriter::{HostStep, Migration};
use rustpython_parser::Parse;

use common::migrated;

const FILE: &str = "migrate/fusion.py";

fn fuse_note(m: &Migration) -> (bool, String) {
    let r = m
        .plan
        .rewrites
        .iter()
        .find(|r| r.rewrite == "fuse")
        .expect("fuse is a named rewrite");
    (r.applied, r.note.clone())
}

fn allocs(m: &Migration) -> Vec<String> {
    let mut out = Vec::new();
    HostStep::walk(&m.plan.steps, &mut |s| {
        if let HostStep::Alloc { name, .. } = s {
            out.push(name.clone());
        }
    });
    out
}

fn check(m: &Migration) {
    port_codegen::verify::verify_module(&m.plan.module).expect("valid IR");
    rustpython_parser::ast::Suite::parse(&m.new_source, "<patched>").expect("valid Python");
}

/// The report's game of life: eleven statements, one 9-point kernel, the
/// neighbour count a register.
#[test]
fn a_game_of_life_is_one_kernel() {
    let m = migrated(FILE, "life", "int64[:, :]");
    check(&m);
    assert_eq!(m.plan.module.kernels.len(), 1, "{}", m.python);
    let (applied, note) = fuse_note(&m);
    assert!(applied);
    assert!(note.starts_with("11 kernels into one"), "{note}");
    // Only the result is allocated: no zero fill, no temporaries.
    assert_eq!(allocs(&m).len(), 1, "{:?}", allocs(&m));
    assert!(!m.new_source.contains("_port_full("));
    assert!(m.python.contains("            n = 0.0\n"), "{}", m.python);
    assert!(m.python.contains("n = n + float64(board[i - 1, j - 1])"));
    assert!(m.python.contains("if i >= 1 and j < board.shape[1] - 1:"));
}

#[test]
fn an_elementwise_chain_keeps_its_intermediates_in_registers() {
    let m = migrated(
        FILE,
        "chain",
        "float64[:], float64[:], float64[:], float64[:]",
    );
    check(&m);
    assert_eq!(m.plan.module.kernels.len(), 1);
    assert!(
        m.python.contains(
            "        y = a[i] * b[i]\n        z = y + c[i]\n        out[i] = z * z - y\n"
        ),
        "{}",
        m.python
    );
    assert!(allocs(&m).is_empty(), "{:?}", allocs(&m));
}

/// `c[1:] = b[:-1] + 1.0` reads what another thread wrote into `b`.
#[test]
fn a_read_of_a_neighbours_result_is_not_fused() {
    let m = migrated(FILE, "shifted_reuse", "float64[:], float64[:], float64[:]");
    check(&m);
    assert_eq!(m.plan.module.kernels.len(), 2);
    let (applied, note) = fuse_note(&m);
    assert!(!applied, "{note}");
}

/// Boundary elements (`t[0] = u[0]`, `t[-1] = u[-1]`) join the stencil as
/// points of its index space.
#[test]
fn boundary_elements_join_the_stencil() {
    let m = migrated(FILE, "smooth_then_scale", "float64[:], float64[:]");
    check(&m);
    assert_eq!(m.plan.module.kernels.len(), 1, "{}", m.python);
    assert!(m.python.contains("if i == 0:"), "{}", m.python);
    assert!(
        m.python.contains("if i >= 1 and i < t.shape[0] - 1:"),
        "{}",
        m.python
    );
}
