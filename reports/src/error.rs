//! What can go wrong while reading port's state or writing a report. Every
//! variant is something the user caused and can fix, and its `Display` is one
//! line saying what happened and what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("no analysis in {}: run `port analyze` first", .0.display())]
    NoAnalysis(PathBuf),
    #[error("{} is corrupt ({detail}): run `port analyze` again", path.display())]
    CorruptAnalysis { path: PathBuf, detail: String },
    #[error("{} has schema `{found}`, this port reads `{expected}`: {advice}", path.display())]
    WrongSchema {
        path: PathBuf,
        found: String,
        expected: &'static str,
        advice: &'static str,
    },
    #[error("{} is corrupt ({detail}): {advice}", path.display())]
    Corrupt {
        path: PathBuf,
        detail: String,
        advice: &'static str,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "baseline {} is from another app ({theirs}, none of its files are in {ours}): save one for this app with `port report --save-baseline FILE`",
        path.display()
    )]
    BaselineFromAnotherApp {
        path: PathBuf,
        theirs: String,
        ours: String,
    },
    #[error(
        "baseline {} measures coverage by {theirs}, this analysis by {ours}: the figures cannot be compared; save a new baseline with `port report --save-baseline FILE`",
        path.display()
    )]
    BaselineBasis {
        path: PathBuf,
        theirs: &'static str,
        ours: &'static str,
    },
}
