//! Capture inside the sampled run: the app is started through a small Python
//! bootstrap (shipped in the binary, run as `python -c BOOTSTRAP APP ARGS`
//! would run it, its byte code cached in the capture directory)
//! that arranges for the first call of each of the app's own functions to be
//! recorded (argument types, inputs, outputs) into the capture directory, with
//! its `manifest.json` kept current, then runs the app as `__main__`. After the
//! run, the captures of the hottest functions are kept and the others' files
//! removed.
//!
//! It costs (almost) nothing outside the captured calls: on Python 3.12+ a
//! `sys.monitoring` event that each code object disables after its capture;
//! before 3.12, where any trace or profile function slows every frame, no hook
//! at all: the bootstrap compiles the app's files (the main file, and its local
//! modules through an import finder) with an innermost decorator on each
//! function that gives it a trampoline until its first call, which puts the
//! original code back and records the call. There is no time budget: a
//! function first called at the end of the run is captured too.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::aggregate::is_anonymous;
use crate::error::ProfileError;
use crate::model::{Capture, FunctionHotspot};
use crate::resolver::FrameResolver;

/// The bootstrap's source. It is written once to the capture directory's
/// `bytecode/` folder and run through [`LOADER_SOURCE`], which keeps its
/// byte code there: compiling its thousand lines again on every run cost
/// each profiled app some 8 ms.
pub const HELPER_SOURCE: &str = include_str!("capture_helper.py");

/// What `python -c` runs: the bootstrap's byte code, cached per Python
/// (`sys.version`) beside its source; compiled from that source when the
/// cache is missing, stale or unreadable, and run with the `-c` module's
/// globals and file name (`<string>`), as if its source were given to `-c`.
/// `@SOURCE@` and `@CACHE@` are JSON strings, which Python reads as its own.
const LOADER_SOURCE: &str = r#"def _port_load(source, cache):
    import marshal
    import os
    import sys

    key = ("%s|%d\n" % (sys.version, sys.flags.optimize)).encode()
    try:
        with open(cache, "rb") as f:
            data = f.read()
        if data.startswith(key):
            return marshal.loads(data[len(key):])
    except (OSError, ValueError, EOFError, TypeError):
        pass
    with open(source, "rb") as f:
        code = compile(f.read(), "<string>", "exec", dont_inherit=True)
    try:
        tmp = "%s.%d.tmp" % (cache, os.getpid())
        with open(tmp, "wb") as f:
            f.write(key + marshal.dumps(code))
        os.replace(tmp, cache)
    except (OSError, ValueError):
        pass
    return code


exec(_port_load(@SOURCE@, @CACHE@))
"#;

/// The words the helper uses when an argument does not fit the size cap.
const CAP_REASON: &str = "would pass the capture cap";

/// The manifest file the helper writes in the capture directory.
pub const MANIFEST: &str = "manifest.json";

/// The environment variable that carries the helper's settings.
pub const CONFIG_VAR: &str = "PORT_CAPTURE_CONFIG";

/// At most this many functions are captured in one run (types and inputs):
/// an app with thousands of small functions does not write thousands of files.
pub const MAX_FUNCTIONS: usize = 256;

/// A function to capture.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// Reported as [`Capture::function`].
    pub key: String,
    pub file: PathBuf,
    /// The sampled frame name (`co_qualname`, or `co_name` before 3.11), which
    /// is matched against the captured code objects.
    pub name: String,
}

/// Functions with less self time than this (percent of samples) are not hot
/// enough to capture.
pub const MIN_SELF_PCT: f64 = 1.0;

/// The hottest app functions worth capturing: ranked by self time (which
/// includes the library calls they make), skipping module bodies, lambdas and
/// comprehensions (`<module>`, `<lambda>`, `<listcomp>`), which have no
/// arguments a kernel would take.
pub fn pick_targets(functions: &[FunctionHotspot], limit: usize) -> Vec<Target> {
    functions
        .iter()
        .filter(|f| f.self_pct >= MIN_SELF_PCT && !is_anonymous(&f.name))
        .take(limit)
        .map(|f| Target {
            key: f.key.clone(),
            file: f.file.clone(),
            name: f.name.clone(),
        })
        .collect()
}

/// What the helper needs to know.
pub struct CaptureRequest<'a> {
    /// Absolute path of the app.
    pub app: &'a Path,
    /// Absolute; created if missing; earlier captures in it are replaced.
    pub dir: &'a Path,
    pub cap_bytes: u64,
    /// Absolute: the hints file, read once it exists.
    pub hints: Option<PathBuf>,
}

#[derive(serde::Serialize)]
struct HelperConfig<'a> {
    app: &'a Path,
    app_root: &'a Path,
    out_dir: &'a Path,
    cap_bytes: u64,
    max_functions: usize,
    hints: Option<&'a Path>,
    /// Names this bootstrap in the byte code it caches (`out_dir/bytecode`):
    /// the app's files compiled by another build of port are not reused.
    helper_id: String,
}

/// A hash of the bootstrap's source (FNV-1a), as hex.
fn helper_id() -> String {
    let hash = HELPER_SOURCE
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

/// How to start the app through the capture bootstrap: the interpreter's leading
/// arguments and the environment. Clears earlier captures from the directory.
pub struct Injection {
    pub leading: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Prepares the capture directory and the bootstrap; the inner `Err` is the
/// warning when capture cannot be set up (a path that is not UTF-8).
pub fn prepare(req: &CaptureRequest<'_>) -> Result<Result<Injection, String>, ProfileError> {
    // The stale files' removal runs on while the app does.
    let _removing = prepare_dir(req.dir)?;
    let root = req.app.parent().unwrap_or(Path::new("/"));
    let config = serde_json::to_string(&HelperConfig {
        app: req.app,
        app_root: root,
        out_dir: req.dir,
        cap_bytes: req.cap_bytes,
        max_functions: MAX_FUNCTIONS,
        hints: req.hints.as_deref(),
        helper_id: helper_id(),
    });
    Ok(match config {
        Ok(config) => Ok(Injection {
            leading: vec!["-c".to_string(), loader(req.dir)?],
            env: vec![(CONFIG_VAR.to_string(), config)],
        }),
        // Only a path that is not UTF-8 can fail to serialise.
        Err(e) => Err(format!("capture skipped: {e} (paths must be UTF-8)")),
    })
}

/// The `-c` program that runs the bootstrap: [`LOADER_SOURCE`] naming the
/// bootstrap's source in `dir/bytecode/` (written there if missing) and its
/// byte code's cache beside it. Both names carry the bootstrap's hash, so
/// another build of port never runs this one's.
fn loader(dir: &Path) -> Result<String, ProfileError> {
    let folder = dir.join("bytecode");
    let stem = format!("bootstrap-{}", helper_id());
    let source = folder.join(format!("{stem}.py"));
    let cache = folder.join(format!("{stem}.bin"));
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ProfileError::Write { path, source }
    };
    let current = std::fs::read(&source).is_ok_and(|b| b == HELPER_SOURCE.as_bytes());
    if !current {
        std::fs::create_dir_all(&folder).map_err(write_err(&folder))?;
        let tmp = folder.join(format!("{stem}.py.{}.tmp", std::process::id()));
        std::fs::write(&tmp, HELPER_SOURCE).map_err(write_err(&tmp))?;
        std::fs::rename(&tmp, &source).map_err(write_err(&source))?;
        // A cache left from before is of other bytes.
        let _ = std::fs::remove_file(&cache);
        // A new build of port: what older ones compiled here is never read
        // again (every name carries its bootstrap's hash). What is a day old
        // goes; a build run alongside this one (a benchmark of two) keeps
        // its files.
        remove_older_than(&folder, Duration::from_secs(24 * 3600));
    }
    // Paths are UTF-8 here (the configuration above is JSON); a JSON string
    // is a Python string literal.
    let quote = |p: &Path| serde_json::to_string(p).expect("a UTF-8 path");
    Ok(LOADER_SOURCE
        .replace("@SOURCE@", &quote(&source))
        .replace("@CACHE@", &quote(&cache)))
}

/// Removes the files in `folder` last written more than `age` ago.
fn remove_older_than(folder: &Path, age: Duration) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > age));
        if old && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// What the run's capture gave.
#[derive(Debug, Default)]
pub struct CaptureOutcome {
    pub captures: Vec<Capture>,
    pub warnings: Vec<String>,
}

/// One record as the helper writes it: a [`Capture`] keyed by the code
/// object's name, plus whether the call returned.
#[derive(Deserialize)]
struct Record {
    #[serde(flatten)]
    capture: Capture,
    /// `co_name`, for a target sampled under it (before Python 3.11).
    #[serde(default)]
    name: String,
    /// Earlier captures' `.npz` files that this one's refers to for an
    /// argument they saved as it still was (member `__port_ref__`).
    #[serde(default)]
    refers_to: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct Manifest {
    captures: Vec<Record>,
    warnings: Vec<String>,
    /// Why the capture stopped early: "functions" (the cap on captured
    /// functions), "all captured", "an error"; "program ended" otherwise.
    #[serde(default)]
    hook_stopped: Option<String>,
    #[serde(default)]
    hook_s: Option<f64>,
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// What a capture of a function outside the targets says of its inputs.
pub const NOT_HOT: &str =
    "inputs removed after the run: not among the profile's hot functions, and over 1 MB (types kept)";

/// A function outside the targets keeps its inputs' file when it is at
/// most this size (and the files kept so stay within `COLD_KEPT_BYTES`):
/// then migrating it verifies on, and times the original on, the
/// program's own inputs rather than generated ones of other sizes.
pub const COLD_FILE_BYTES: u64 = 1 << 20;
pub const COLD_KEPT_BYTES: u64 = 16 << 20;

/// Reads what the helper captured and keeps the targets' captures (keyed as
/// the targets are). The others keep their types, keyed as `resolver` keys
/// the function, and their files only when small (`COLD_FILE_BYTES`): a
/// function the profile barely saw can still be migrated, on its small
/// captured inputs or on generated ones.
pub fn collect(dir: &Path, targets: &[Target], resolver: &dyn FrameResolver) -> CaptureOutcome {
    let mut outcome = CaptureOutcome::default();
    let manifest: Option<Manifest> = std::fs::read_to_string(dir.join(MANIFEST))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let Some(manifest) = manifest else {
        if !targets.is_empty() {
            outcome.warnings.push(
                "the capture bootstrap wrote no manifest (the program ended before it started): no argument types or inputs captured"
                    .to_string(),
            );
        }
        return outcome;
    };
    outcome.warnings.extend(manifest.warnings);
    let mut kept: HashSet<usize> = HashSet::new();
    for t in targets {
        let file = canonical(&t.file);
        let found = manifest.captures.iter().position(|r| {
            (r.capture.function == t.name || r.name == t.name) && canonical(&r.capture.file) == file
        });
        match found {
            Some(i) => {
                kept.insert(i);
            }
            None => {
                let why = match (&manifest.hook_stopped, manifest.hook_s) {
                    (Some(how), Some(s)) if how == "functions" => {
                        format!(
                            "first called after the capture stopped ({how}, {s:.1} s into the run)"
                        )
                    }
                    _ => {
                        "not called in the app's main process while the capture was on".to_string()
                    }
                };
                outcome
                    .warnings
                    .push(format!("{}: {why}; no types captured", t.key));
            }
        }
    }
    let mut others = Vec::new();
    let records: Vec<_> = manifest
        .captures
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let target = targets.iter().find(|t| {
                kept.contains(&i)
                    && (r.capture.function == t.name || r.name == t.name)
                    && canonical(&r.capture.file) == canonical(&t.file)
            });
            (r, target)
        })
        .collect();
    // A function outside the targets keeps a small, self-contained file
    // (within COLD_KEPT_BYTES in all); the other files go, unless a kept
    // capture refers to them.
    let mut cold_bytes = 0;
    let mut doomed: Vec<PathBuf> = Vec::new();
    let referred: HashSet<PathBuf> = records
        .iter()
        .filter(|(_, t)| t.is_some())
        .flat_map(|(r, _)| r.refers_to.iter().cloned())
        .collect();
    for (r, target) in records {
        let mut c = r.capture;
        let Some(target) = target else {
            // The function the record names, not one around its first line
            // (a decorator's line may be in an enclosing function).
            let key = resolver
                .function_at(&c.file, c.line, &c.function)
                .filter(|k| *k == c.function || k.ends_with(&format!(".{}", c.function)));
            let taken = |key: &String| {
                targets.iter().any(|t| t.key == *key)
                    || others.iter().any(|o: &Capture| o.function == *key)
            };
            match key.filter(|k| !taken(k)) {
                Some(key) => {
                    let small = c
                        .inputs_npz
                        .as_ref()
                        .filter(|_| r.refers_to.is_empty())
                        .and_then(|p| std::fs::metadata(p).ok())
                        .map(|m| m.len())
                        .filter(|n| *n <= COLD_FILE_BYTES && cold_bytes + n <= COLD_KEPT_BYTES);
                    match small {
                        Some(n) => cold_bytes += n,
                        None => {
                            if let Some(p) = c.inputs_npz.take() {
                                doomed.push(p);
                                c.skipped.push(NOT_HOT.to_string());
                            }
                        }
                    }
                    c.function = key;
                    others.push(c);
                }
                None => doomed.extend(c.inputs_npz),
            }
            continue;
        };
        c.function = target.key.clone();
        // Inputs held back by the size cap are worth a line to the user; the
        // other reasons (not an array, a call that raised) stay in the capture.
        for reason in c.skipped.iter().filter(|r| r.contains(CAP_REASON)) {
            outcome
                .warnings
                .push(format!("{}: capture truncated: {reason}", c.function));
        }
        outcome.captures.push(c);
    }
    for p in doomed.iter().filter(|p| !referred.contains(*p)) {
        let _ = std::fs::remove_file(p);
    }
    outcome.captures.extend(others);
    outcome
}

/// Where [`prepare_dir`] moves an earlier capture's files, to remove them.
const STALE_PREFIX: &str = ".stale-";

/// Creates `dir` and moves what an earlier capture left in it (the manifest
/// and `.npz` files) out of the way, so stale inputs are never mistaken for
/// this run's. They are renamed at once into a folder of their own and
/// removed by a thread while the app runs (the handle): removing a file the
/// disk already holds costs about 0.2 ms per MB here, up to 50 ms for a
/// full 256 MiB capture, which would delay the app's start. A folder left
/// by a run that ended first is removed by the next.
fn prepare_dir(dir: &Path) -> Result<Option<std::thread::JoinHandle<()>>, ProfileError> {
    let write_err = |source| ProfileError::Write {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let trash = dir.join(format!("{STALE_PREFIX}{}", std::process::id()));
    let mut doomed = Vec::new();
    let mut trash_made = false;
    for entry in std::fs::read_dir(dir).map_err(write_err)?.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if text.starts_with(STALE_PREFIX) {
            if path != trash {
                doomed.push(path);
            }
        } else if text == MANIFEST || text.ends_with(".npz") {
            if !trash_made {
                match std::fs::create_dir(&trash) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(source) => {
                        return Err(ProfileError::Write {
                            path: trash,
                            source,
                        })
                    }
                }
                trash_made = true;
                doomed.push(trash.clone());
            }
            if std::fs::rename(&path, trash.join(&name)).is_err() {
                std::fs::remove_file(&path)
                    .map_err(|source| ProfileError::Write { path, source })?;
            }
        }
    }
    if doomed.is_empty() {
        return Ok(None);
    }
    let removed = std::thread::Builder::new()
        .name("port-captures-gc".into())
        .spawn(move || {
            for d in doomed {
                let _ = std::fs::remove_dir_all(d);
            }
        });
    Ok(removed.ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Out of 100 samples.
    fn hotspot(name: &str, self_samples: u64) -> FunctionHotspot {
        FunctionHotspot {
            key: name.to_string(),
            file: "/app/a.py".into(),
            name: name.to_string(),
            self_samples,
            total_samples: self_samples,
            self_pct: self_samples as f64,
            total_pct: self_samples as f64,
        }
    }

    #[test]
    fn targets_skip_module_bodies_and_cold_functions() {
        let fns = vec![
            hotspot("shade", 60),
            hotspot("<module>", 5),
            hotspot("scan", 20),
            hotspot("<listcomp>", 3),
            hotspot("main.<locals>.<genexpr>", 3),
            hotspot("Body.<locals>.helper", 2),
            hotspot("main", 0),
        ];
        let names: Vec<String> = pick_targets(&fns, 8).into_iter().map(|t| t.name).collect();
        assert_eq!(names, vec!["shade", "scan", "Body.<locals>.helper"]);
        assert_eq!(pick_targets(&fns, 1).len(), 1);
    }

    #[test]
    fn old_captures_are_cleared_but_other_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.inputs.npz"), "x").unwrap();
        std::fs::write(dir.path().join(MANIFEST), "{}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "keep").unwrap();
        // A folder an earlier run left, its removal cut short.
        let left_over = dir.path().join(format!("{STALE_PREFIX}1"));
        std::fs::create_dir(&left_over).unwrap();
        std::fs::write(left_over.join("g.inputs.npz"), "x").unwrap();
        let removing = prepare_dir(dir.path()).unwrap();
        // At once: nothing the helper writes or port reads is left.
        let names = || {
            let mut n: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| !n.starts_with(STALE_PREFIX))
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(), vec!["notes.txt"]);
        removing.expect("stale files to remove").join().unwrap();
        let all: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(all, vec!["notes.txt"]);
        // Nothing stale: no thread.
        assert!(prepare_dir(dir.path()).unwrap().is_none());
    }

    #[test]
    fn the_manifest_is_read_keyed_by_target_and_other_captures_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let other = dir.path().join("g-1.inputs.npz");
        let big = vec![b'x'; COLD_FILE_BYTES as usize + 1];
        std::fs::write(&other, &big).unwrap();
        let text = r#"{"schema":"port-capture/3","python":"/p","bytes_written":8,
            "warnings":[],"hook_stopped":"functions","hook_s":0.4,
            "captures":[{"function":"f","name":"f","file":"/app/a.py","line":3,
              "args":[{"name":"x","kind":{"kind":"ndarray","dtype":"float64","ndim":1,"shape":[4],"c_contiguous":true,"f_contiguous":true}},
                      {"name":"n","kind":{"kind":"scalar","type":"int"}},
                      {"name":"rows","kind":{"kind":"other","type_name":"list"}}],
              "returns":{"kind":"scalar","type":"float"},"returned":true,"truncated":true,
              "inputs_npz":"/c/f-0.inputs.npz",
              "skipped":["rows: list is not an array","x: 8.0 MB would pass the capture cap (1.0 MB in all, 0.0 MB left); not saved (output)"]},
              {"function":"g","name":"g","file":"/app/a.py","line":9,"args":[],"returns":null,
              "inputs_npz":"OTHER","skipped":[]}]}"#
            .replace("OTHER", &other.display().to_string());
        std::fs::write(dir.path().join(MANIFEST), &text).unwrap();
        let target = |name: &str| Target {
            key: format!("a.{name}"),
            file: "/app/a.py".into(),
            name: name.to_string(),
        };
        struct Keys;
        impl FrameResolver for Keys {
            fn function_at(&self, _: &Path, line: u32, name: &str) -> Option<String> {
                (line == 9).then(|| format!("a.{name}"))
            }
            fn is_app_file(&self, _: &Path) -> bool {
                true
            }
        }
        let out = collect(dir.path(), &[target("f"), target("h")], &Keys);
        assert_eq!(out.captures.len(), 2, "{d}");
        let c = &out.captures[0];
        assert_eq!(c.function, "a.f");
        assert!(c.truncated);
        assert_eq!(c.args.len(), 3);
        assert!(matches!(
            &c.args[0].kind,
            crate::model::ArgKind::Ndarray { dtype, ndim: 1, .. } if dtype == "float64"
        ));
        assert!(matches!(
            &c.args[1].kind,
            crate::model::ArgKind::Scalar { type_name } if type_name == "int"
        ));
        assert!(!other.exists(), "a capture no target keeps is removed");
        // Its types are kept, keyed as the resolver keys `g`; its inputs not.
        let g = &out.captures[1];
        assert_eq!(g.function, "a.g");
        assert_eq!(g.inputs_npz, None);
        assert_eq!(g.skipped, [NOT_HOT]);
        assert!(
            out.warnings
                .iter()
                .any(|w| w
                    .starts_with("a.f: capture truncated: x: 8.0 MB would pass the capture cap"))
        );
        assert!(
            out.warnings.iter().any(|w| w
                == "a.h: first called after the capture stopped (functions, 0.4 s into the run); no types captured"),
            "{:?}",
            out.warnings
        );

        // A small file of `g` stays, and its capture keeps it.
        std::fs::write(&other, "x").unwrap();
        let out = collect(dir.path(), &[target("f"), target("h")], &Keys);
        assert!(
            other.exists(),
            "a small file of a cold function was removed"
        );
        assert_eq!(out.captures[1].function, "a.g");
        assert_eq!(out.captures[1].inputs_npz.as_deref(), Some(other.as_path()));
        assert!(out.captures[1].skipped.is_empty(), "{:?}", out.captures[1]);

        // The same, but `f`'s inputs refer to `g`'s file for an array `g`
        // saved first: the file stays, though no target keeps `g`.
        std::fs::write(&other, &big).unwrap();
        let text = text.replace(
            r#""inputs_npz":"/c/f-0.inputs.npz","#,
            &format!(
                r#""inputs_npz":"/c/f-0.inputs.npz","refers_to":[{:?}],"#,
                other
            ),
        );
        std::fs::write(dir.path().join(MANIFEST), text).unwrap();
        let out = collect(dir.path(), &[target("f"), target("h")], &Keys);
        assert!(
            other.exists(),
            "a file a kept capture refers to was removed"
        );
        assert_eq!(out.captures[1].function, "a.g");
        assert_eq!(out.captures[1].inputs_npz, None);
    }
}
