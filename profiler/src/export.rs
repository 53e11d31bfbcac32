//! Flame graphs (SVG, drawn by inferno) and speedscope files from a profile's
//! collapsed stacks.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::ProfileError;
use crate::model::{Profile, StackFrame};

/// `name (file)`, the frame label py-spy's own flame graphs use.
fn label(frame: &StackFrame) -> String {
    let file = frame.file.file_name().unwrap_or(frame.file.as_os_str());
    format!("{} ({})", frame.name, file.to_string_lossy())
}

/// The stacks in the "folded" text format: `root;…;leaf count` per line.
pub fn folded_lines(profile: &Profile) -> Vec<String> {
    profile
        .stacks
        .iter()
        .map(|s| {
            let path: Vec<String> = s
                .frames
                .iter()
                // ';' separates frames and a trailing number would read as the count.
                .map(|f| label(f).replace(';', ":"))
                .collect();
            format!("{} {}", path.join(";"), s.count)
        })
        .collect()
}

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, ProfileError> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|source| ProfileError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// Writes an interactive SVG flame graph of the sampled stacks.
pub fn write_flamegraph(profile: &Profile, path: &Path) -> Result<(), ProfileError> {
    let lines = folded_lines(profile);
    if lines.is_empty() {
        return Err(ProfileError::Flamegraph(
            "no samples were taken, so there is nothing to draw".to_string(),
        ));
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("port: {}", profile_name(profile));
    options.count_name = "samples".to_string();
    let mut out = create(path)?;
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| ProfileError::Flamegraph(e.to_string()))?;
    out.flush().map_err(|source| ProfileError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn profile_name(profile: &Profile) -> String {
    profile
        .stacks
        .first()
        .and_then(|s| s.frames.first())
        .map(|f| f.file.display().to_string())
        .unwrap_or_else(|| "profile".to_string())
}

#[derive(Serialize)]
struct SpeedscopeFile {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<SampledProfile>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: u32,
    exporter: String,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<SpeedscopeFrame>,
}

#[derive(Serialize)]
struct SpeedscopeFrame {
    name: String,
    file: String,
}

#[derive(Serialize)]
struct SampledProfile {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: f64,
    #[serde(rename = "endValue")]
    end_value: f64,
    /// Stacks as frame indices, root first.
    samples: Vec<Vec<usize>>,
    weights: Vec<f64>,
}

/// Writes the stacks in speedscope's file format (one "sampled" profile, each
/// distinct stack weighted by its samples' share of time in seconds).
pub fn write_speedscope(profile: &Profile, path: &Path) -> Result<(), ProfileError> {
    let mut frames = Vec::new();
    let mut index: HashMap<&StackFrame, usize> = HashMap::new();
    let mut samples = Vec::new();
    let mut weights = Vec::new();
    let seconds_per_sample = 1.0 / profile.rate_hz.max(1) as f64;
    for stack in &profile.stacks {
        let ids = stack
            .frames
            .iter()
            .map(|f| {
                *index.entry(f).or_insert_with(|| {
                    frames.push(SpeedscopeFrame {
                        name: f.name.clone(),
                        file: f.file.display().to_string(),
                    });
                    frames.len() - 1
                })
            })
            .collect();
        samples.push(ids);
        weights.push(stack.count as f64 * seconds_per_sample);
    }
    let name = profile_name(profile);
    let file = SpeedscopeFile {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles: vec![SampledProfile {
            kind: "sampled",
            name: name.clone(),
            unit: "seconds",
            start_value: 0.0,
            end_value: weights.iter().sum(),
            samples,
            weights,
        }],
        name,
        active_profile_index: 0,
        exporter: format!("port-profiler@{}", env!("CARGO_PKG_VERSION")),
    };
    let mut out = create(path)?;
    serde_json::to_writer(&mut out, &file)
        .map_err(std::io::Error::from)
        .and_then(|()| out.flush())
        .map_err(|source| ProfileError::Write {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AppExit, CollapsedStack};

    fn frame(name: &str, file: &str) -> StackFrame {
        StackFrame {
            name: name.into(),
            file: file.into(),
        }
    }

    fn profile() -> Profile {
        Profile {
            samples: 3,
            unattributed_samples: 0,
            duration_s: 0.03,
            rate_hz: 100,
            python: "python3".into(),
            python_version: None,
            exit: AppExit::default(),
            processes_sampled: 1,
            capture: true,
            functions: vec![],
            lines: vec![],
            edges: vec![],
            stacks: vec![
                CollapsedStack {
                    frames: vec![frame("<module>", "/a/app.py"), frame("hot;x", "/a/app.py")],
                    count: 2,
                },
                CollapsedStack {
                    frames: vec![
                        frame("<module>", "/a/app.py"),
                        frame("sum", "/np/fromnumeric.py"),
                    ],
                    count: 1,
                },
            ],
            captures: vec![],
            warnings: vec![],
        }
    }

    #[test]
    fn folded_lines_are_root_first_with_counts() {
        assert_eq!(
            folded_lines(&profile()),
            vec![
                "<module> (app.py);hot:x (app.py) 2",
                "<module> (app.py);sum (fromnumeric.py) 1"
            ]
        );
    }

    #[test]
    fn the_flame_graph_is_an_svg_naming_the_functions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.svg");
        write_flamegraph(&profile(), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("hot:x (app.py)"));
    }

    #[test]
    fn an_empty_profile_has_no_flame_graph() {
        let mut p = profile();
        p.stacks.clear();
        let dir = tempfile::tempdir().unwrap();
        let err = write_flamegraph(&p, &dir.path().join("f.svg")).unwrap_err();
        assert!(err.to_string().contains("no samples"));
    }

    #[test]
    fn speedscope_shares_frames_and_weights_by_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        write_speedscope(&profile(), &path).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            v["$schema"],
            "https://www.speedscope.app/file-format-schema.json"
        );
        assert_eq!(v["shared"]["frames"].as_array().unwrap().len(), 3);
        let p = &v["profiles"][0];
        assert_eq!(p["type"], "sampled");
        assert_eq!(p["samples"], serde_json::json!([[0, 1], [0, 2]]));
        assert_eq!(p["weights"], serde_json::json!([0.02, 0.01]));
        assert!((p["endValue"].as_f64().unwrap() - 0.03).abs() < 1e-12);
    }
}
