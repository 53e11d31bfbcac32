//! The parts of a profile that reports draw: per-line sampled time (the heat
//! bars) and the sampled stacks (the flame graph). The analysis carries the
//! profile as free-form JSON (`analysis.profile`); this reads it leniently,
//! part by part, so one unreadable part costs only that part of the report
//! and says so in a note.

use port_analyzer::model::Analysis;
use serde::{Deserialize, Serialize};

/// One app source line's share of the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotLine {
    pub file: String,
    pub line: u32,
    pub self_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_samples: Option<u64>,
}

/// What reports use of a profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileView {
    /// Stack samples counted, when the profile says.
    pub samples: Option<u64>,
    pub hot_lines: Vec<HotLine>,
    /// Sampled stacks in the folded format: `root;…;leaf COUNT` per line.
    pub folded_stacks: Vec<String>,
    /// Parts of the profile that could not be read, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Deserialize)]
struct Frame {
    name: String,
    #[serde(default)]
    file: String,
}

/// A stack as the profiler writes it, or already folded.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stack {
    Folded(String),
    Frames { frames: Vec<Frame>, count: u64 },
}

impl Stack {
    fn folded(self) -> String {
        match self {
            Stack::Folded(s) => s,
            Stack::Frames { frames, count } => {
                let path: Vec<String> = frames
                    .iter()
                    .map(|f| {
                        let base = f.file.rsplit(['/', '\\']).next().unwrap_or(&f.file);
                        // ';' separates frames: keep it out of the labels.
                        if base.is_empty() {
                            f.name.replace(';', ":")
                        } else {
                            format!("{} ({base})", f.name).replace(';', ":")
                        }
                    })
                    .collect();
                format!("{} {count}", path.join(";"))
            }
        }
    }
}

impl ProfileView {
    /// The profile of a profiled analysis; `None` for static ones.
    pub fn of(analysis: &Analysis) -> Option<ProfileView> {
        let p = analysis.profile.as_ref()?;
        let mut view = ProfileView {
            samples: p.get("samples").and_then(|s| s.as_u64()),
            ..ProfileView::default()
        };
        if let Some(lines) = p.get("lines") {
            match serde_json::from_value::<Vec<HotLine>>(lines.clone()) {
                Ok(mut l) => {
                    l.retain(|h| h.self_pct.is_finite());
                    view.hot_lines = l;
                }
                Err(e) => view
                    .notes
                    .push(format!("the profile's per-line times are unreadable ({e})")),
            }
        }
        if let Some(stacks) = p.get("stacks") {
            match serde_json::from_value::<Vec<Stack>>(stacks.clone()) {
                Ok(s) => view.folded_stacks = s.into_iter().map(Stack::folded).collect(),
                Err(e) => view
                    .notes
                    .push(format!("the profile's sampled stacks are unreadable ({e})")),
            }
        }
        Some(view)
    }

    /// Hot lines of one analysed file. The profiler records the paths the
    /// interpreter saw (often absolute), the analysis the paths the user
    /// named, so a line matches when one path ends with the other.
    pub fn lines_of<'a>(&'a self, file: &'a str) -> impl Iterator<Item = &'a HotLine> + 'a {
        self.hot_lines
            .iter()
            .filter(move |h| same_file(&h.file, file))
    }
}

/// Whether two spellings of a path name the same file: equal, or one is the
/// other with leading folders (compared whole component by component).
pub fn same_file(a: &str, b: &str) -> bool {
    let parts = |s: &str| -> Vec<String> {
        s.split(['/', '\\'])
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_string)
            .collect()
    };
    let (pa, pb) = (parts(a), parts(b));
    if pa.is_empty() || pb.is_empty() {
        return false;
    }
    let (short, long) = if pa.len() <= pb.len() {
        (&pa, &pb)
    } else {
        (&pb, &pa)
    };
    long.ends_with(short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_by_trailing_components() {
        assert!(same_file("/home/ci/app/physics/util.py", "physics/util.py"));
        assert!(same_file("./app.py", "app.py"));
        assert!(!same_file("/x/myapp.py", "app.py"));
        assert!(!same_file("physics/util.py", "other/util.py"));
    }

    #[test]
    fn profiler_stacks_fold_like_py_spy_labels() {
        let s: Stack = serde_json::from_value(serde_json::json!({
            "frames": [{"name": "<module>", "file": "/w/app.py"}, {"name": "shade", "file": "/w/app.py"}],
            "count": 7
        }))
        .unwrap();
        assert_eq!(s.folded(), "<module> (app.py);shade (app.py) 7");
        let s: Stack = serde_json::from_value(serde_json::json!("a;b 3")).unwrap();
        assert_eq!(s.folded(), "a;b 3");
    }
}
