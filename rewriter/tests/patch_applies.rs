//! Every patch port writes applies: `.port/patches/NAME.diff` given to
//! `patch -p1` and to `git apply` turns the user's file into exactly the
//! file `--write` writes, whatever the file looks like around the function
//! (trailing blank lines, no final newline, CRLF line endings, tabs,
//! unicode, other functions before and after, decorators, a docstring).

use std::path::Path;
use std::process::Command;

use port_rewriter::{migrate, parse_signature, AppFacts, MigrationRequest, Outcome};
use proptest::prelude::*;

/// The function migrated, in three shapes: a loop, NumPy statements with a
/// blank line inside, and a decorated one.
const TARGETS: &[(&str, &str)] = &[
    (
        "def saxpy(a, x, y, out):\n    for i in range(x.shape[0]):\n        out[i] = a * x[i] + y[i]\n",
        "float64, float64[:], float64[:], float64[:]",
    ),
    (
        "def update(board):\n    neighbours = np.zeros(board.shape)\n    neighbours[1:, 1:] += board[:-1, :-1]\n\n    new_board = np.where(neighbours < 2, 0, board)\n    return new_board\n",
        "int64[:, :]",
    ),
    (
        "@staticmethod_like\ndef scale(x):\n    \"\"\"Doubles x — in place, ∀ x.\"\"\"\n    x *= 2.0\n",
        "float64[:]",
    ),
];

/// Pieces of a file around the function.
fn other() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("def helper(v):\n\treturn v + 1\n".to_string()),
        Just("# café, naïve, ∑ — unicode in a comment\n".to_string()),
        Just("GREETING = \"héllo wörld ✓\"\n".to_string()),
        Just("class Box:\n    def get(self):\n        return 1\n".to_string()),
        Just("\n".to_string()),
        Just("def staticmethod_like(f):\n    return f\n".to_string()),
    ]
}

#[derive(Debug, Clone)]
struct File {
    header: String,
    before: Vec<String>,
    target: usize,
    after: Vec<String>,
    trailing_blank: usize,
    final_newline: bool,
    crlf: bool,
}

impl File {
    fn text(&self) -> String {
        let mut t = self.header.clone();
        if TARGETS[self.target].0.contains("np.") && !t.contains("import numpy") {
            t.insert_str(0, "import numpy as np\n");
        }
        for b in &self.before {
            t.push_str(b);
            t.push('\n');
        }
        t.push_str(TARGETS[self.target].0);
        for a in &self.after {
            t.push('\n');
            t.push_str(a);
        }
        for _ in 0..self.trailing_blank {
            t.push('\n');
        }
        if !self.final_newline {
            while t.ends_with('\n') {
                t.pop();
            }
        }
        if self.crlf {
            t = t.replace('\n', "\r\n");
        }
        t
    }
}

fn file() -> impl Strategy<Value = File> {
    (
        prop_oneof![
            Just(String::new()),
            Just("import numpy as np\n\n".to_string()),
            Just(
                "\"\"\"A module — with a docstring.\"\"\"\nimport numpy as np\nimport math\n\n\n"
                    .to_string()
            ),
            Just(
                "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nimport numpy as np\n".to_string()
            ),
        ],
        proptest::collection::vec(other(), 0..3),
        0..TARGETS.len(),
        proptest::collection::vec(other(), 0..3),
        0usize..4,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(header, before, target, after, trailing_blank, final_newline, crlf)| File {
                header,
                before,
                target,
                after,
                trailing_blank,
                final_newline,
                crlf,
            },
        )
}

/// `tool` applied in `dir`: the patched file's bytes, or the tool's error.
fn apply(dir: &Path, tool: &[&str], diff: &str, original: &str) -> Result<String, String> {
    std::fs::write(dir.join("t.py"), original).unwrap();
    std::fs::write(dir.join("t.diff"), diff).unwrap();
    let o = Command::new(tool[0])
        .args(&tool[1..])
        .arg("t.diff")
        .current_dir(dir)
        .output()
        .map_err(|e| format!("{}: {e}", tool[0]))?;
    if !o.status.success() {
        return Err(format!(
            "{} failed: {}{}",
            tool.join(" "),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(std::fs::read_to_string(dir.join("t.py")).unwrap())
}

fn check(f: &File) -> Result<(), TestCaseError> {
    let text = f.text();
    let (def, sig) = TARGETS[f.target];
    let name = def
        .lines()
        .find_map(|l| l.strip_prefix("def "))
        .and_then(|l| l.split('(').next())
        .unwrap();
    let types = parse_signature(sig).unwrap();
    let m = match migrate(&MigrationRequest {
        source: &text,
        file_name: "t.py",
        function: name,
        types: &types,
        facts: &AppFacts::default(),
        report: None,
        fp32: false,
        input_shapes: &[],
        literals: &[],
    })
    .unwrap()
    {
        Outcome::Migrated(m) => m,
        Outcome::Refused(r) => return Err(TestCaseError::fail(format!("refused: {r:?}\n{text}"))),
    };
    let dir = tempfile::tempdir().unwrap();
    for tool in [
        &["patch", "-p1", "--quiet", "--no-backup-if-mismatch", "-i"][..],
        &["git", "apply", "--unsafe-paths", "--directory=."][..],
    ] {
        let got = apply(dir.path(), tool, &m.diff, &text)
            .map_err(|e| TestCaseError::fail(format!("{e}\nfile: {text:?}\ndiff:\n{}", m.diff)))?;
        prop_assert_eq!(
            &got,
            &m.new_source,
            "{} did not give the file --write writes\nfile: {:?}",
            tool[0],
            text
        );
    }
    // The new lines take the file's line ending.
    if f.crlf {
        prop_assert!(
            !m.new_source.replace("\r\n", "").contains('\n'),
            "a bare LF in a CRLF file"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn every_patch_applies_with_patch_and_git_apply(f in file()) {
        check(&f)?;
    }
}

/// The file of the report: a game-of-life update followed by a blank line
/// at the end of the file.
#[test]
fn the_game_of_life_patch_applies() {
    let f = File {
        header: "import numpy as np\n\n".into(),
        before: vec![],
        target: 1,
        after: vec![],
        trailing_blank: 1,
        final_newline: true,
        crlf: false,
    };
    check(&f).unwrap();
}
