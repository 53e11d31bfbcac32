//! Helpers shared by verify's integration tests: the repository, its
//! Python, and a fixture function migrated into a plan.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use port_rewriter::{migrate, parse_signature, AppFacts, KernelPlan, MigrationRequest, Outcome};

/// The checkout these tests were built in, or `$PORT_TEST_REPO`: the GPU
/// bundle (scripts/gpu-bundle.sh) runs them on a machine without the
/// checkout, with the fixtures they read in a folder of their own.
pub fn repo() -> PathBuf {
    match std::env::var_os("PORT_TEST_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
    }
}

/// The venv `make test` makes (numpy), or `$PORT_TEST_PYTHON` (the GPU
/// bundle uses the machine's own python3).
pub fn python() -> PathBuf {
    let p = std::env::var_os("PORT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    assert!(p.exists(), "{} is missing: run make test", p.display());
    p
}

/// `function` of `file` migrated for `sig` (Numba's signature syntax).
pub fn plan_of(file: &Path, function: &str, sig: &str, fp32: bool) -> KernelPlan {
    let source = std::fs::read_to_string(file).unwrap();
    let types = parse_signature(sig).unwrap();
    match migrate(&MigrationRequest {
        source: &source,
        file_name: "f.py",
        function,
        types: &types,
        facts: &AppFacts::default(),
        report: None,
        fp32,
        input_shapes: &[],
        literals: &[],
    })
    .unwrap()
    {
        Outcome::Migrated(m) => m.plan,
        Outcome::Refused(r) => panic!("{function}: {r:?}"),
    }
}

pub fn seeds() -> PathBuf {
    repo().join("fixtures/migrate/seeds.py")
}

pub const SAXPY: &str = "float64, float64[:], float64[:], float64[:]";

/// go_fast of the seeds with its `result` allocated 2^24 x 2^24 float64
/// (2 PiB): more than any device or host holds.
pub fn go_fast_too_large() -> KernelPlan {
    use port_codegen::ir::{Expr, Literal};
    use port_rewriter::plan::HostStep;
    let mut plan = plan_of(&seeds(), "go_fast", "float64[:, :]", false);
    let step = plan
        .steps
        .iter_mut()
        .find(|s| matches!(s, HostStep::Alloc { name, .. } if name == "result"))
        .expect("go_fast's wrapper allocates `result`");
    let HostStep::Alloc { shape, .. } = step else {
        unreachable!()
    };
    *shape = vec![
        Expr::Lit(Literal::I64(1 << 24)),
        Expr::Lit(Literal::I64(1 << 24)),
    ];
    plan
}
