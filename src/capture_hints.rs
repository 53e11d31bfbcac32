//! What the static pass tells the capture, while the app runs: which inputs
//! are worth saving.
//!
//! `port analyze` classifies the app on a thread of its own while the app
//! starts (its first pass, with the planner's answer), then writes this file
//! into the capture folder; the capture helper reads it at the first call it
//! records after the file appears (`hints` in its configuration). Per
//! function, keyed as the helper sees code objects (the file's real path and
//! the qualname):
//!
//! - `save: false` with `refused_with`: the planner refused the function
//!   with the types its code implies (these, per parameter). A call with
//!   exactly these types has its types captured and its inputs not: the
//!   snapshot is for `port migrate`'s verification, which would refuse it
//!   first. A call with other types (an `int` where `float64` was assumed)
//!   is saved whole: the types may change the answer;
//! - `unread`: parameters whose values the body never reads (it only writes
//!   them: `out[i] = …`; see [`port_rewriter::pyast::unread_params`]). Their
//!   arrays are not saved; the snapshot keeps their dtype, shape and order,
//!   and verification starts both the original and the migrated function
//!   from the same zeros.
//!
//! Nothing here is needed for a correct capture: a function the file does
//! not name, or a call recorded before the file is written, is saved whole.
//! It only spares the app the time of copying and writing what no one reads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use port_analyzer::{Analysis, Verdict};
use port_rewriter::source::SourceFile;
use serde::Serialize;

/// The file's name in the capture folder.
pub const FILE: &str = "hints.json";

/// How a capture's record begins the line saying its inputs were not saved
/// on a hint (`skipped`).
pub const NOT_SAVED: &str = "inputs not saved: the static pass";

#[derive(Serialize)]
struct Hints {
    schema: &'static str,
    functions: Vec<FunctionHint>,
}

#[derive(Serialize, Debug, PartialEq)]
struct FunctionHint {
    /// The real path of the function's file.
    file: PathBuf,
    /// As Python's `__qualname__` spells it (`shade`, `Grid.step`).
    qualname: String,
    line: u32,
    /// Whether its inputs are worth saving.
    save: bool,
    /// Why not, when not: said in the capture's record.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    /// The types the planner refused it with, per parameter: `save` is
    /// false only for a call of these very types.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    refused_with: Vec<ParamType>,
    /// Parameters whose values the function never reads.
    unread: Vec<String>,
}

/// A parameter's type as the capture helper describes a value: NumPy's
/// dtype name (`float64`, `bool`; a Python `float` is `float64`, an `int`
/// `int64`) and the number of dimensions (0: a scalar).
#[derive(Serialize, Debug, PartialEq)]
struct ParamType {
    name: String,
    dtype: &'static str,
    ndim: u8,
    /// The planner assumed C order (`[::1]`).
    contiguous: bool,
}

/// Removes the hints an earlier run left in `dir`: the helper must never
/// read them for this run's app.
pub fn clear(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(FILE));
}

/// Writes the hints for `a` (a first pass, planner's answers included)
/// into `dir`, atomically: the helper sees the whole file or none.
pub fn write(a: &Analysis, dir: &Path) -> std::io::Result<()> {
    let hints = Hints {
        schema: "port-capture-hints/1",
        functions: hints_of(a),
    };
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(&hints)?)?;
    std::fs::rename(&tmp, dir.join(FILE))
}

fn hints_of(a: &Analysis) -> Vec<FunctionHint> {
    let mut by_file: HashMap<&str, Vec<&port_analyzer::FunctionReport>> = HashMap::new();
    for f in &a.functions {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    let mut out = Vec::new();
    for (file, reports) in by_file {
        let Ok(real) = std::fs::canonicalize(file) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(src) = SourceFile::parse(file, &text) else {
            continue;
        };
        for f in reports {
            let qualname = port_rewriter::verdicts::local_qualname(f);
            // One definition of that name, or the helper could not tell them apart.
            let defs = src.functions_named(&qualname);
            let [def] = defs
                .iter()
                .filter(|d| d.qualname == qualname)
                .collect::<Vec<_>>()[..]
            else {
                continue;
            };
            let refused_with = if f.verdict == Verdict::Cuda {
                Vec::new()
            } else {
                refused_types(f, &src, &qualname)
            };
            let save = refused_with.is_empty();
            out.push(FunctionHint {
                file: real.clone(),
                why: (!save).then(|| why_not(f)),
                qualname,
                line: f.line,
                save,
                refused_with,
                unread: port_rewriter::pyast::unread_params(def.def),
            });
        }
    }
    out.sort_by(|x, y| (&x.file, x.line).cmp(&(&y.file, y.line)));
    out
}

/// The types the planner refused `f` with, when it was asked with the
/// types its code implies and refused (none otherwise: a function the
/// planner was not asked about keeps its inputs, whatever its verdict).
fn refused_types(
    f: &port_analyzer::FunctionReport,
    src: &SourceFile,
    qualname: &str,
) -> Vec<ParamType> {
    use port_analyzer::PlanStatus;
    use port_rewriter::ArgType;
    // The very types the planner refused it with, as the analysis recorded
    // them (from the program's calls or the body).
    let Some(signature) = f.migration_plan.as_ref().and_then(|p| {
        (p.status == PlanStatus::Refused
            && matches!(
                p.types_from.as_str(),
                "assumed" | "calls" | "calls+assumed" | "numba"
            )
            && !p.signature.is_empty())
        .then_some(p.signature.as_str())
    }) else {
        return Vec::new();
    };
    let (Ok(types), Some(found)) = (
        port_rewriter::parse_signature(signature),
        src.functions_named(qualname)
            .into_iter()
            .find(|d| d.qualname == qualname),
    ) else {
        return Vec::new();
    };
    let names = port_rewriter::pyast::positional_params(&found.def.args);
    if names.len() != types.len() {
        return Vec::new();
    }
    let dtype = |s| match port_rewriter::types::numba_scalar(s) {
        "boolean" => "bool",
        other => other,
    };
    names
        .into_iter()
        .zip(types)
        .map(|(name, t)| match t {
            ArgType::Scalar(s) => ParamType {
                name,
                dtype: dtype(s),
                ndim: 0,
                contiguous: false,
            },
            ArgType::Array(a) => ParamType {
                name,
                dtype: dtype(a.elem),
                ndim: a.ndim,
                contiguous: a.contiguous,
            },
        })
        .collect()
}

/// Why a function's inputs are not saved, in the capture's words.
fn why_not(f: &port_analyzer::FunctionReport) -> String {
    let (signature, blocker) = match &f.migration_plan {
        Some(p) => (
            p.signature.as_str(),
            match (p.line, &p.reason) {
                (Some(l), Some(r)) => format!("line {l}: {r}"),
                (None, Some(r)) => r.clone(),
                _ => "refused".to_string(),
            },
        ),
        None => ("", "refused".to_string()),
    };
    format!("{NOT_SAVED} refused it with these very types (`{signature}`; {blocker})")
}

/// Warnings for the functions whose inputs a hint held back but which the
/// captured types made `cuda`: `port migrate` will verify them on
/// generated inputs. `a` carries its merged profile, whose captures are
/// matched to functions as `port migrate` matches them.
pub fn held_back(a: &Analysis) -> Vec<String> {
    a.functions
        .iter()
        .filter(|f| f.verdict == Verdict::Cuda)
        .filter(|f| {
            crate::profile_merge::capture_of(a, f).is_some_and(|c| {
                c["inputs_npz"].is_null()
                    && c["skipped"].as_array().is_some_and(|s| {
                        s.iter().any(|l| l.as_str().is_some_and(|l| l.starts_with(NOT_SAVED)))
                    })
            })
        })
        .map(|f| {
            format!(
                "{}: its inputs were not saved (the static pass refused it with the types it was called with); `port migrate` will verify it on generated inputs",
                f.qualname
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_save_only_what_a_migration_reads() {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app.py");
        std::fs::write(
            &app,
            "import hashlib\n\
             \n\
             def shade(x, out):\n    for i in range(x.shape[0]):\n        out[i] = 2.0 * x[i]\n\
             \n\
             def digest(rec):\n    return hashlib.md5(rec).hexdigest()\n\
             \n\
             def cumulative(values, out):\n    acc = 0.0\n    for i in range(values.shape[0]):\n        acc += values[i]\n        out[i] = acc\n",
        )
        .unwrap();
        let mut a = port_analyzer::analyze(&app, &Default::default()).unwrap();
        port_rewriter::verdicts::apply(&mut a);
        let hints = hints_of(&a);
        let shade = hints.iter().find(|h| h.qualname == "shade").unwrap();
        assert!(shade.save, "{shade:?}");
        assert_eq!(shade.unread, ["out"]);
        assert_eq!(shade.file, std::fs::canonicalize(&app).unwrap());
        // Object mode, and the planner was not asked: saved.
        let digest = hints.iter().find(|h| h.qualname == "digest").unwrap();
        assert!(digest.save, "{digest:?}");
        // A recurrence the planner refused with float64 arrays: not saved
        // for a call with float64 arrays.
        let cumulative = hints.iter().find(|h| h.qualname == "cumulative").unwrap();
        assert!(!cumulative.save, "{cumulative:?}");
        let vector = |name: &str| ParamType {
            name: name.into(),
            dtype: "float64",
            ndim: 1,
            contiguous: false,
        };
        assert_eq!(cumulative.refused_with, [vector("values"), vector("out")]);
        assert_eq!(cumulative.unread, ["out"]);
        let why = cumulative.why.as_deref().unwrap();
        assert!(
            why.starts_with(NOT_SAVED) && why.contains("float64[:], float64[:]"),
            "{why}"
        );

        write(&a, dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["schema"], "port-capture-hints/1");
        clear(dir.path());
        assert!(!dir.path().join(FILE).exists());
    }
}
