//! `Analysis::to_json` (parallel) writes the bytes serde's derive writes,
//! field for field: a field added to `Analysis` and not to `to_json` fails
//! here.

use std::path::Path;

use port_analyzer::{analyze, AnalyzeOptions};

#[test]
fn parallel_json_is_serdes_json_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    // `migrate` has more functions than one chunk (256) holds.
    for folder in ["classify", "multimodule", "migrate"] {
        let mut a = analyze(&root.join(folder), &AnalyzeOptions::default()).unwrap();
        let same = |a: &port_analyzer::Analysis| {
            let fast = String::from_utf8(a.to_json().unwrap()).unwrap();
            let serde = String::from_utf8(serde_json::to_vec(a).unwrap()).unwrap();
            assert_eq!(fast, serde, "{folder}");
        };
        same(&a);
        assert!(folder != "migrate" || a.functions.len() > 256);
        a.profile = Some(serde_json::json!({"samples": 3, "hot": ["f", "g"]}));
        same(&a);
        a.functions.clear();
        a.parse_errors.clear();
        same(&a);
    }
}
