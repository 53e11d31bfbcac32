//! Joining a profile to a static analysis: which function each sampled frame
//! is in (by file and line range), the captured types as the analyzer's
//! argument types, per-function percentages, time-weighted coverage, and
//! sampled call edges.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use port_analyzer::model::{round2, ArgType, CallEdge, Coverage, EdgeKind, Verdict};
use port_analyzer::{Analysis, FunctionReport};
use port_profiler::{ArgKind, FrameResolver, Profile};

/// Maps frames to analysis functions: the innermost function whose lines
/// contain the frame's line, in a file the analysis read.
pub struct AnalysisResolver {
    /// Canonical file → (line, end_line, key), innermost ranges first.
    ranges: HashMap<PathBuf, Vec<(u32, u32, String)>>,
    /// Canonical files of the app (also those without functions).
    files: HashSet<PathBuf>,
    cache: std::sync::Mutex<HashMap<PathBuf, PathBuf>>,
}

pub fn key_of(module: &str, qualname: &str) -> String {
    format!("{module}.{qualname}")
}

impl AnalysisResolver {
    pub fn new(a: &Analysis) -> Self {
        let mut ranges: HashMap<PathBuf, Vec<(u32, u32, String)>> = HashMap::new();
        for f in &a.functions {
            let file = canonical(Path::new(&f.file));
            ranges.entry(file).or_default().push((
                f.line,
                f.end_line,
                key_of(&f.module, &f.qualname),
            ));
        }
        for v in ranges.values_mut() {
            // Innermost first: the shortest range containing a line wins.
            v.sort_by_key(|(l, e, _)| e - l);
        }
        let files = a.files.iter().map(|f| canonical(Path::new(f))).collect();
        AnalysisResolver {
            ranges,
            files,
            cache: Default::default(),
        }
    }

    fn canonical_cached(&self, file: &Path) -> PathBuf {
        let mut cache = self.cache.lock().expect("resolver cache");
        cache
            .entry(file.to_path_buf())
            .or_insert_with(|| canonical(file))
            .clone()
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

impl FrameResolver for AnalysisResolver {
    fn function_at(&self, file: &Path, line: u32, _frame_name: &str) -> Option<String> {
        let file = self.canonical_cached(file);
        self.ranges.get(&file).and_then(|v| {
            v.iter()
                .find(|(l, e, _)| *l <= line && line <= *e)
                .map(|(_, _, k)| k.clone())
        })
    }

    fn is_app_file(&self, file: &Path) -> bool {
        self.files.contains(&self.canonical_cached(file))
    }
}

/// A resolver made on first use, by a closure that may wait: the first static
/// pass runs while the app does, and only the aggregation after the run needs
/// its result.
pub struct DeferredResolver<'a> {
    make: std::sync::Mutex<Option<MakeResolver<'a>>>,
    made: std::sync::OnceLock<Box<dyn FrameResolver + Send>>,
}

type MakeResolver<'a> = Box<dyn FnOnce() -> Box<dyn FrameResolver + Send> + Send + 'a>;

impl<'a> DeferredResolver<'a> {
    pub fn new(make: impl FnOnce() -> Box<dyn FrameResolver + Send> + Send + 'a) -> Self {
        DeferredResolver {
            make: std::sync::Mutex::new(Some(Box::new(make))),
            made: std::sync::OnceLock::new(),
        }
    }

    fn get(&self) -> &dyn FrameResolver {
        self.made
            .get_or_init(|| {
                let make = self.make.lock().expect("resolver").take();
                make.expect("made once")()
            })
            .as_ref()
    }
}

impl FrameResolver for DeferredResolver<'_> {
    fn function_at(&self, file: &Path, line: u32, frame_name: &str) -> Option<String> {
        self.get().function_at(file, line, frame_name)
    }

    fn is_app_file(&self, file: &Path) -> bool {
        self.get().is_app_file(file)
    }
}

/// The captured argument types, keyed like the analysis (`module.qualname`).
pub fn captured_types(p: &Profile) -> HashMap<String, Vec<ArgType>> {
    p.captures
        .iter()
        .map(|c| {
            let same_as = |a: &port_profiler::ArgType| {
                c.same_array
                    .iter()
                    .find(|(_, later)| *later == a.name)
                    .map(|(first, _)| first.clone())
            };
            let args = c
                .args
                .iter()
                .map(|a| match &a.kind {
                    ArgKind::Ndarray {
                        dtype,
                        ndim,
                        shape,
                        c_contiguous,
                        ..
                    } => ArgType {
                        name: a.name.clone(),
                        kind: "ndarray".into(),
                        dtype: dtype.clone(),
                        ndim: Some(*ndim),
                        shape: Some(shape.clone()),
                        c_contiguous: Some(*c_contiguous),
                        same_as: same_as(a),
                    },
                    ArgKind::Scalar { type_name } => ArgType {
                        name: a.name.clone(),
                        kind: "scalar".into(),
                        dtype: type_name.clone(),
                        ndim: None,
                        shape: None,
                        c_contiguous: None,
                        same_as: None,
                    },
                    ArgKind::Other { type_name } => ArgType {
                        name: a.name.clone(),
                        kind: "other".into(),
                        dtype: type_name.clone(),
                        ndim: None,
                        shape: None,
                        c_contiguous: None,
                        same_as: None,
                    },
                })
                .collect();
            (c.function.clone(), args)
        })
        .collect()
}

/// Put the profile into the analysis: percentages, coverage by sampled time,
/// sampled edges, and the profile itself.
pub fn merge(a: &mut Analysis, p: &Profile) {
    let by_key: HashMap<&str, (f64, f64)> = p
        .functions
        .iter()
        .map(|f| (f.key.as_str(), (f.self_pct, f.total_pct)))
        .collect();
    let mut share = HashMap::from([
        (Verdict::Cuda, 0.0),
        (Verdict::Nopython, 0.0),
        (Verdict::Object, 0.0),
    ]);
    for f in &mut a.functions {
        let (s, t) = by_key
            .get(key_of(&f.module, &f.qualname).as_str())
            .copied()
            .unwrap_or((0.0, 0.0));
        f.self_pct = Some(round2(s));
        f.total_pct = Some(round2(t));
        *share.entry(f.verdict).or_default() += s;
    }
    a.profiled = true;
    a.coverage = Coverage {
        gpu_eligible_pct: round2(share[&Verdict::Cuda]),
        nopython_pct: round2(share[&Verdict::Nopython]),
        object_pct: round2(share[&Verdict::Object]),
        basis: "samples".into(),
    };
    let mut edges: HashMap<(String, String), usize> = a
        .call_graph
        .edges
        .iter()
        .enumerate()
        .map(|(i, e)| ((e.caller.clone(), e.callee.clone()), i))
        .collect();
    for e in &p.edges {
        match edges.get(&(e.caller.clone(), e.callee.clone())) {
            Some(&i) => a.call_graph.edges[i].kind = EdgeKind::Both,
            None => {
                edges.insert(
                    (e.caller.clone(), e.callee.clone()),
                    a.call_graph.edges.len(),
                );
                a.call_graph.edges.push(CallEdge {
                    caller: e.caller.clone(),
                    callee: e.callee.clone(),
                    kind: EdgeKind::Sampled,
                    line: None,
                });
            }
        }
    }
    a.profile = serde_json::to_value(p).ok();
}

/// The profiler's capture of this function's call, when it has one.
pub fn capture_of<'a>(a: &'a Analysis, f: &FunctionReport) -> Option<&'a serde_json::Value> {
    let caps = a.profile.as_ref()?.get("captures")?.as_array()?;
    caps.iter().find(|c| {
        // `port analyze` keys captures as `module.qualname`.
        c.get("function")
            .and_then(|v| v.as_str())
            .is_some_and(|func| {
                func == key_of(&f.module, &f.qualname) || func == f.qualname || func == f.name
            })
    })
}
