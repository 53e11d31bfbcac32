//! Shared helpers: migrate a fixture function with a signature.

#![allow(dead_code)]

use std::path::PathBuf;

use port_rewriter::{
    migrate, parse_signature, AppFacts, Migration, MigrationRequest, Outcome, Reason,
};

pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
        .join(rel)
}

pub fn run(file: &str, function: &str, sig: &str, fp32: bool) -> Outcome {
    let path = fixture(file);
    let source = std::fs::read_to_string(&path).expect("fixture");
    let types = parse_signature(sig).expect("signature");
    let facts = AppFacts::default();
    migrate(&MigrationRequest {
        source: &source,
        file_name: file,
        function,
        types: &types,
        facts: &facts,
        report: None,
        fp32,
        input_shapes: &[],
        literals: &[],
    })
    .expect("request is valid")
}

pub fn migrated(file: &str, function: &str, sig: &str) -> Migration {
    match run(file, function, sig, false) {
        Outcome::Migrated(m) => *m,
        Outcome::Refused(r) => panic!("{function} refused: {r:?}"),
    }
}

pub fn refused(file: &str, function: &str, sig: &str) -> Vec<Reason> {
    match run(file, function, sig, false) {
        Outcome::Migrated(m) => panic!("{function} migrated:\n{}", m.python),
        Outcome::Refused(r) => r,
    }
}
