//! A deterministic slice of the fuzz campaign for CI: every fixture cut at
//! many points and with bytes flipped goes through parse → classify without
//! a panic, and every cut either parses or says where it does not.

use std::path::Path;

fn fixtures(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    // Other tests run Python over the fixtures at the same time: folders such
    // as __pycache__ may come and go while this walks.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let hidden = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(['.', '_']));
        if p.is_dir() && !hidden {
            fixtures(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

#[test]
fn cut_and_corrupted_sources_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut files = Vec::new();
    fixtures(&root, &mut files);
    assert!(
        files.len() >= 5,
        "fixtures not found under {}",
        root.display()
    );
    let mut analysed = 0;
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        let step = (bytes.len() / 60).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let a = port_analyzer::analyze_bytes("cut", &bytes[..cut]);
            assert!(
                a.parse_errors.len() + usize::from(!a.files.is_empty()) == 1,
                "{}: cut at {cut} neither parsed nor reported",
                f.display()
            );
            let mut flipped = bytes[..cut].to_vec();
            if let Some(b) = flipped.get_mut(cut / 2) {
                *b ^= 0x20;
            }
            port_analyzer::analyze_bytes("flipped", &flipped);
            analysed += 2;
        }
    }
    assert!(analysed > 500);
}
