//! Turning raw stack samples into hotspots: pure data in, data out.
//!
//! Attribution rules:
//! - a sample's *self* time goes to its innermost frame in an app file, so time
//!   inside NumPy or any other library counts toward the app function (and the
//!   app line) that called it;
//! - a function's *total* counts each sample at most once, however many times the
//!   function appears on that stack (recursion);
//! - consecutive app frames on a stack (library frames between them skipped) are a
//!   sampled caller → callee edge, counted once per sample, and kept when seen on
//!   at least [`MIN_EDGE_SAMPLES`] samples;
//! - a sample with no app frame at all is counted in `samples` but attributed to
//!   no function (`unattributed`), so percentages stay shares of the whole run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::model::{CollapsedStack, FunctionHotspot, LineHotspot, SampledEdge, StackFrame};
use crate::resolver::FrameResolver;

/// Edges seen on fewer samples are dropped: a stack read while the app runs
/// can miss a frame now and then, which would invent a caller → callee pair.
pub const MIN_EDGE_SAMPLES: u64 = 2;

/// `<module>`, `main.<locals>.<listcomp>`, `f.<locals>.<lambda>`: code objects
/// without a name of their own.
pub fn is_anonymous(frame_name: &str) -> bool {
    frame_name
        .rsplit('.')
        .next()
        .is_some_and(|last| last.starts_with('<'))
}

/// One frame as sampled.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RawFrame {
    /// `co_qualname` (3.11+) or `co_name`.
    pub name: String,
    pub file: PathBuf,
    /// Line being executed; 0 when unknown.
    pub line: u32,
}

impl RawFrame {
    pub fn new(name: impl Into<String>, file: impl Into<PathBuf>, line: u32) -> Self {
        RawFrame {
            name: name.into(),
            file: file.into(),
            line,
        }
    }
}

/// Samples as collected: identical stacks are merged with a count, so memory
/// grows with the number of distinct stacks, not with the run's length.
#[derive(Debug, Clone, Default)]
pub struct SampleSet {
    /// Stacks innermost frame first (py-spy's order), with their counts.
    stacks: HashMap<Vec<RawFrame>, u64>,
    total: u64,
}

impl SampleSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one thread's stack, innermost frame first. Empty stacks are ignored.
    pub fn add(&mut self, frames: Vec<RawFrame>) {
        if frames.is_empty() {
            return;
        }
        *self.stacks.entry(frames).or_insert(0) += 1;
        self.total += 1;
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Every distinct stack with its count, in a deterministic order.
    pub fn stacks(&self) -> impl Iterator<Item = (&[RawFrame], u64)> {
        let mut v: Vec<_> = self
            .stacks
            .iter()
            .map(|(s, c)| (s.as_slice(), *c))
            .collect();
        v.sort();
        v.into_iter()
    }
}

/// The hotspot tables computed from a [`SampleSet`].
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub samples: u64,
    pub unattributed: u64,
    pub functions: Vec<FunctionHotspot>,
    /// Lines of the `top_functions` hottest functions; `source` left empty.
    pub lines: Vec<LineHotspot>,
    pub edges: Vec<SampledEdge>,
    pub stacks: Vec<CollapsedStack>,
}

type FnId = (PathBuf, String);

#[derive(Default)]
struct FnCounts {
    name: String,
    self_samples: u64,
    total_samples: u64,
}

/// Ranks functions, lines and edges. `top_functions` bounds which functions get
/// per-line detail (the hottest by self time).
pub fn aggregate(set: &SampleSet, resolver: &dyn FrameResolver, top_functions: usize) -> Aggregate {
    let mut cache: HashMap<(&Path, u32, &str), Option<String>> = HashMap::new();
    let mut functions: HashMap<FnId, FnCounts> = HashMap::new();
    let mut lines: HashMap<(PathBuf, u32), (String, u64)> = HashMap::new();
    let mut edges: HashMap<(FnId, FnId), u64> = HashMap::new();
    let mut collapsed: BTreeMap<Vec<StackFrame>, u64> = BTreeMap::new();
    let mut unattributed = 0;

    for (stack, count) in set.stacks() {
        // App frames of this stack, root first, with their keys.
        let mut app: Vec<(&RawFrame, String)> = Vec::new();
        for frame in stack.iter().rev() {
            let key = cache
                .entry((frame.file.as_path(), frame.line, frame.name.as_str()))
                .or_insert_with(|| {
                    if resolver.is_app_file(&frame.file) {
                        resolver.function_at(&frame.file, frame.line, &frame.name)
                    } else {
                        None
                    }
                });
            if let Some(key) = key {
                app.push((frame, key.clone()));
            }
        }

        let merged: Vec<StackFrame> = stack
            .iter()
            .rev()
            .map(|f| StackFrame {
                name: f.name.clone(),
                file: f.file.clone(),
            })
            .collect();
        *collapsed.entry(merged).or_insert(0) += count;

        let Some((leaf, leaf_key)) = app.last() else {
            unattributed += count;
            continue;
        };

        let leaf_id = (leaf.file.clone(), leaf_key.clone());
        let entry = functions.entry(leaf_id).or_default();
        entry.self_samples += count;
        let line_entry = lines
            .entry((leaf.file.clone(), leaf.line))
            .or_insert_with(|| (leaf_key.clone(), 0));
        line_entry.1 += count;

        let mut seen: HashSet<FnId> = HashSet::new();
        for (frame, key) in &app {
            let id = (frame.file.clone(), key.clone());
            if seen.insert(id.clone()) {
                let e = functions.entry(id).or_default();
                e.total_samples += count;
                // A resolver keying by line range folds a comprehension into
                // its function: name the function, not the comprehension.
                if e.name.is_empty() || (is_anonymous(&e.name) && !is_anonymous(&frame.name)) {
                    e.name = frame.name.clone();
                }
            }
        }

        let mut seen_edges: HashSet<(FnId, FnId)> = HashSet::new();
        for pair in app.windows(2) {
            let caller = (pair[0].0.file.clone(), pair[0].1.clone());
            let callee = (pair[1].0.file.clone(), pair[1].1.clone());
            if seen_edges.insert((caller.clone(), callee.clone())) {
                *edges.entry((caller, callee)).or_insert(0) += count;
            }
        }
    }

    let total = set.total();
    let pct = |n: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };

    let mut functions: Vec<FunctionHotspot> = functions
        .into_iter()
        .map(|((file, key), c)| FunctionHotspot {
            self_pct: pct(c.self_samples),
            total_pct: pct(c.total_samples),
            key,
            file,
            name: c.name,
            self_samples: c.self_samples,
            total_samples: c.total_samples,
        })
        .collect();
    functions.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.key.cmp(&b.key))
            .then_with(|| a.file.cmp(&b.file))
    });

    let top: HashSet<(&Path, &str)> = functions
        .iter()
        .filter(|f| f.self_samples > 0)
        .take(top_functions)
        .map(|f| (f.file.as_path(), f.key.as_str()))
        .collect();
    let mut lines: Vec<LineHotspot> = lines
        .into_iter()
        .filter(|((file, _), (key, _))| top.contains(&(file.as_path(), key.as_str())))
        .map(|((file, line), (function, n))| LineHotspot {
            file,
            line,
            function,
            self_samples: n,
            self_pct: pct(n),
            source: String::new(),
        })
        .collect();
    lines.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then_with(|| a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });

    let mut edges: Vec<SampledEdge> = edges
        .into_iter()
        .filter(|(_, samples)| *samples >= MIN_EDGE_SAMPLES)
        .map(
            |(((caller_file, caller), (callee_file, callee)), samples)| SampledEdge {
                caller,
                caller_file,
                callee,
                callee_file,
                samples,
            },
        )
        .collect();
    edges.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.caller.cmp(&b.caller))
            .then_with(|| a.callee.cmp(&b.callee))
    });

    let mut stacks: Vec<CollapsedStack> = collapsed
        .into_iter()
        .map(|(frames, count)| CollapsedStack { frames, count })
        .collect();
    stacks.sort_by_key(|s| std::cmp::Reverse(s.count));

    Aggregate {
        samples: total,
        unattributed,
        functions,
        lines,
        edges,
        stacks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::AppDirResolver;

    fn app(name: &str, line: u32) -> RawFrame {
        RawFrame::new(name, "/app/main.py", line)
    }

    fn lib(name: &str) -> RawFrame {
        RawFrame::new(
            name,
            "/venv/lib/python3.11/site-packages/numpy/core/_methods.py",
            10,
        )
    }

    /// Innermost first, as py-spy reports.
    fn stack(frames: &[RawFrame]) -> Vec<RawFrame> {
        frames.to_vec()
    }

    fn resolver() -> AppDirResolver {
        AppDirResolver::new("/app")
    }

    fn find<'a>(agg: &'a Aggregate, key: &str) -> &'a FunctionHotspot {
        agg.functions.iter().find(|f| f.key == key).unwrap()
    }

    #[test]
    fn library_time_counts_toward_the_calling_app_function() {
        let mut set = SampleSet::new();
        for _ in 0..3 {
            set.add(stack(&[
                lib("_sum"),
                app("kernel", 12),
                app("<module>", 30),
            ]));
        }
        set.add(stack(&[app("kernel", 13), app("<module>", 30)]));
        let agg = aggregate(&set, &resolver(), 10);
        assert_eq!(agg.samples, 4);
        let k = find(&agg, "kernel");
        assert_eq!((k.self_samples, k.total_samples), (4, 4));
        assert_eq!(k.self_pct, 100.0);
        let m = find(&agg, "<module>");
        assert_eq!((m.self_samples, m.total_samples), (0, 4));
        assert_eq!(agg.lines[0].line, 12);
        assert_eq!(agg.lines[0].self_samples, 3);
        assert_eq!(agg.lines[0].function, "kernel");
        assert_eq!(agg.lines[1].line, 13);
    }

    #[test]
    fn recursion_counts_a_function_once_per_sample() {
        let mut set = SampleSet::new();
        for _ in 0..2 {
            set.add(stack(&[
                app("fib", 3),
                app("fib", 4),
                app("fib", 4),
                app("<module>", 9),
            ]));
            set.add(stack(&[app("helper", 20), app("<module>", 10)]));
        }
        let agg = aggregate(&set, &resolver(), 10);
        let fib = find(&agg, "fib");
        assert_eq!(fib.total_samples, 2);
        assert_eq!(fib.total_pct, 50.0);
        assert_eq!(fib.self_samples, 2);
        let recursive = agg
            .edges
            .iter()
            .find(|e| e.caller == "fib" && e.callee == "fib")
            .unwrap();
        assert_eq!(recursive.samples, 2, "an edge counts once per sample");
    }

    #[test]
    fn edges_join_app_frames_across_library_frames() {
        let mut set = SampleSet::new();
        // main -> numpy.apply_along_axis -> row_norm
        for _ in 0..2 {
            set.add(stack(&[
                app("row_norm", 5),
                lib("apply_along_axis"),
                app("main", 40),
                app("<module>", 50),
            ]));
        }
        set.add(stack(&[app("main", 41), app("<module>", 50)]));
        // A torn read that lost `main`: seen once, so not an edge.
        set.add(stack(&[app("row_norm", 5), app("<module>", 50)]));
        let agg = aggregate(&set, &resolver(), 10);
        let pairs: Vec<(&str, &str, u64)> = agg
            .edges
            .iter()
            .map(|e| (e.caller.as_str(), e.callee.as_str(), e.samples))
            .collect();
        assert_eq!(
            pairs,
            vec![("<module>", "main", 3), ("main", "row_norm", 2)]
        );
    }

    #[test]
    fn samples_without_app_frames_are_unattributed_but_counted() {
        let mut set = SampleSet::new();
        set.add(stack(&[lib("import_module")]));
        set.add(stack(&[app("f", 1)]));
        set.add(Vec::new());
        let agg = aggregate(&set, &resolver(), 10);
        assert_eq!(agg.samples, 2);
        assert_eq!(agg.unattributed, 1);
        assert_eq!(find(&agg, "f").self_pct, 50.0);
    }

    #[test]
    fn functions_rank_by_self_time_and_lines_cover_only_the_top_ones() {
        let mut set = SampleSet::new();
        for _ in 0..6 {
            set.add(stack(&[app("hot", 1), app("<module>", 9)]));
        }
        for _ in 0..3 {
            set.add(stack(&[app("warm", 2), app("<module>", 9)]));
        }
        set.add(stack(&[app("cold", 3), app("<module>", 9)]));
        let agg = aggregate(&set, &resolver(), 2);
        let order: Vec<&str> = agg.functions.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(order, vec!["hot", "warm", "cold", "<module>"]);
        let line_fns: Vec<&str> = agg.lines.iter().map(|l| l.function.as_str()).collect();
        assert_eq!(line_fns, vec!["hot", "warm"]);
        assert!((agg.functions[0].self_pct - 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_function_folding_in_its_comprehension_keeps_its_own_name() {
        struct ByRange;
        impl FrameResolver for ByRange {
            fn function_at(&self, _: &Path, _: u32, _: &str) -> Option<String> {
                Some("app.busy".to_string())
            }
            fn is_app_file(&self, _: &Path) -> bool {
                true
            }
        }
        let mut set = SampleSet::new();
        // The generator expression is sampled first (innermost, hottest).
        set.add(stack(&[app("busy.<locals>.<genexpr>", 4), app("busy", 4)]));
        set.add(stack(&[app("busy", 5)]));
        let agg = aggregate(&set, &ByRange, 10);
        assert_eq!(agg.functions.len(), 1);
        assert_eq!(agg.functions[0].name, "busy");
        assert!(is_anonymous("main.<locals>.<listcomp>"));
        assert!(is_anonymous("<module>"));
        assert!(!is_anonymous("Body.<locals>.helper"));
    }

    #[test]
    fn same_name_in_two_files_stays_two_functions() {
        let mut set = SampleSet::new();
        set.add(vec![RawFrame::new("run", "/app/a.py", 1)]);
        set.add(vec![RawFrame::new("run", "/app/b.py", 1)]);
        let agg = aggregate(&set, &resolver(), 10);
        assert_eq!(agg.functions.len(), 2);
    }

    #[test]
    fn collapsed_stacks_are_root_first_and_merge_lines() {
        let mut set = SampleSet::new();
        set.add(stack(&[app("f", 1), app("<module>", 9)]));
        set.add(stack(&[app("f", 2), app("<module>", 9)]));
        let agg = aggregate(&set, &resolver(), 10);
        assert_eq!(agg.stacks.len(), 1);
        assert_eq!(agg.stacks[0].count, 2);
        assert_eq!(agg.stacks[0].frames[0].name, "<module>");
        assert_eq!(agg.stacks[0].frames[1].name, "f");
    }

    #[test]
    fn a_custom_resolver_decides_keys() {
        struct ByLine;
        impl FrameResolver for ByLine {
            fn function_at(&self, _: &Path, line: u32, _: &str) -> Option<String> {
                Some(if line < 10 { "mod.a" } else { "mod.b" }.to_string())
            }
            fn is_app_file(&self, file: &Path) -> bool {
                file.starts_with("/app")
            }
        }
        let mut set = SampleSet::new();
        set.add(stack(&[app("x", 3)]));
        set.add(stack(&[app("x", 12)]));
        let agg = aggregate(&set, &ByLine, 10);
        let keys: Vec<&str> = agg.functions.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, vec!["mod.a", "mod.b"]);
    }
}
