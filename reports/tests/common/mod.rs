//! Fixtures for the reports tests: `.port/` states in `fixtures/report/`,
//! whose analyses name their files relative to the program's own folder.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use port_reports::terminal::Style;
use port_reports::{Baseline, Format, PortState, Report, SourceRoot};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `.port/` folder of a fixture state.
pub fn state_dir(name: &str) -> PathBuf {
    repo().join("fixtures/report").join(name).join(".port")
}

/// Where the fixture's program lives (what its analysis' paths are relative to).
pub fn program_dir(name: &str) -> PathBuf {
    repo().join(match name {
        "mixed_app" => "fixtures/apps",
        "seeds" => "fixtures/classify",
        "multimodule" => "fixtures/multimodule",
        other => panic!("no program for fixture {other}"),
    })
}

pub fn state(name: &str) -> PortState {
    PortState::load(&state_dir(name)).expect("fixture state loads")
}

pub fn report(name: &str) -> Report {
    Report::build(&state(name), None).expect("report builds")
}

pub fn report_with_baseline(name: &str, baseline: &Baseline) -> Report {
    Report::build(&state(name), Some((Path::new("baseline.json"), baseline)))
        .expect("report builds")
}

pub fn render(r: &Report, format: Format, name: &str) -> String {
    port_reports::render(
        r,
        format,
        &SourceRoot(program_dir(name)),
        Style {
            color: false,
            width: Some(160),
        },
    )
}

/// A copy of a fixture state in a temporary folder, to doctor.
pub fn scratch_state(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&state_dir(name), &tmp.path().join(".port"));
    tmp
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
