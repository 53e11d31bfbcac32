//! The capture run: types of real calls, inputs that reproduce the call, the
//! size cap, Pythons without NumPy.

mod common;

use std::process::Command;

use common::*;
use port_profiler::ArgKind;

/// Loads the saved inputs (arrays described but not saved made as zeros, an
/// array an earlier capture saved read from its file, an argument that was
/// the same array as another passed as that one, as verification does), checks them with `before` (Python, with `args`
/// the inputs by name, `inputs` the file and `mod` the app), calls the
/// function on them as verification will, and checks what it did with
/// `after` (`result` is what it returned, `args` the arrays as the call left
/// them).
const REPLAY: &str = r#"
import importlib.util, json, os, sys
import numpy as np
app, fn_name, inputs, before, after = sys.argv[1:6]
spec = importlib.util.spec_from_file_location("app", app)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
args = dict(np.load(inputs))
blanks = args.pop("__port_blank__", None)
for name, b in (json.loads(blanks.tobytes()) if blanks is not None else {}).items():
    args[name] = np.zeros(b["shape"], dtype=b["dtype"], order="F" if b["fortran"] else "C")
refs = args.pop("__port_ref__", None)
for name, ref in (json.loads(refs.tobytes()) if refs is not None else {}).items():
    assert "/" not in ref["file"], ref
    args[name] = np.load(os.path.join(os.path.dirname(inputs), ref["file"]))[ref["member"]]
same = args.pop("__port_same__", None)
for name, first in (json.loads(same.tobytes()) if same is not None else {}).items():
    args[name] = args[first]
exec(before)
result = getattr(mod, fn_name)(**args)
exec(after)
print("replayed", fn_name)
"#;

fn replay(app: &str, function: &str, inputs: &std::path::Path, before: &str, after: &str) {
    let out = Command::new(venv_python())
        .args(["-c", REPLAY])
        .arg(fixture(app))
        .arg(function)
        .arg(inputs)
        .args([before, after])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay of {function} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The arrays `mixed_app.main` makes, in its order from its seed.
const MIXED_APP_ARRAYS: &str = "rng = np.random.default_rng(3)\n\
    x = rng.standard_normal(mod.N_SHADE)\n\
    y = rng.standard_normal(mod.N_SHADE)\n\
    rng.integers(0, 255, size=(mod.N_RECORDS, 16), dtype=np.uint8)\n\
    readings = rng.random(mod.N_SCAN)\n";

#[test]
fn mixed_app_captures_types_and_replayable_inputs_of_each_hot_function() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let mut opts = options("mixed_app.py", &["2"], &captures);
    // The three hot functions, and `main` when start-up makes it hot too.
    opts.capture_functions = 4;
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    let mut keys: Vec<&str> = p
        .captures
        .iter()
        .map(|c| c.function.as_str())
        .filter(|k| *k != "main")
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["fingerprint", "running_total", "shade"],
        "warnings: {:?}",
        p.warnings
    );

    let vector = |n: u64| ArgKind::Ndarray {
        dtype: "float64".into(),
        ndim: 1,
        shape: vec![n],
        c_contiguous: true,
        f_contiguous: true,
    };
    let shade = p.captures.iter().find(|c| c.function == "shade").unwrap();
    assert_eq!(shade.args.len(), 3);
    for a in &shade.args {
        assert_eq!(a.kind, vector(330_000), "{}", a.name);
    }
    assert_eq!(
        shade.returns,
        Some(ArgKind::Other {
            type_name: "NoneType".into()
        })
    );
    assert!(shade.skipped.is_empty(), "{:?}", shade.skipped);
    replay(
        "mixed_app.py",
        "shade",
        shade.inputs_npz.as_ref().unwrap(),
        &format!(
            "{MIXED_APP_ARRAYS}assert np.array_equal(args['x'], x) and np.array_equal(args['y'], y)"
        ),
        "assert result is None\n\
         assert np.allclose(args['out'], 0.5 * np.hypot(x, y) + np.sin(x) * np.cos(y))",
    );

    let scan = p
        .captures
        .iter()
        .find(|c| c.function == "running_total")
        .unwrap();
    assert_eq!(scan.args[0].kind, vector(600_000));
    assert_eq!(
        scan.returns,
        Some(ArgKind::Scalar {
            type_name: "float64".into()
        })
    );
    replay(
        "mixed_app.py",
        "running_total",
        scan.inputs_npz.as_ref().unwrap(),
        &format!("{MIXED_APP_ARRAYS}assert np.array_equal(args['values'], readings)"),
        "assert np.allclose(args['out'], np.cumsum(readings))\n\
         assert np.isclose(result, readings.sum())",
    );

    // A list of records is typed but cannot be saved as an array: said so.
    let fp = p
        .captures
        .iter()
        .find(|c| c.function == "fingerprint")
        .unwrap();
    assert_eq!(
        fp.args[0].kind,
        ArgKind::Other {
            type_name: "list".into()
        }
    );
    assert!(fp.inputs_npz.is_none());
    assert!(fp
        .skipped
        .iter()
        .any(|s| s.starts_with("records: list is not an array")));
    assert!(
        !p.warnings.iter().any(|w| w.contains("records")),
        "only cap skips are warnings: {:?}",
        p.warnings
    );

    let manifest = captures.join("manifest.json");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    assert_eq!(m["schema"], "port-capture/3");
    // Only the kept captures' files stay.
    let npz = std::fs::read_dir(&captures)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "npz")
        })
        .count();
    let kept = p.captures.iter().filter(|c| c.inputs_npz.is_some()).count();
    assert_eq!(npz, kept);
}

#[test]
fn arguments_over_the_cap_are_skipped_and_the_total_stays_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("black_scholes.py", &["1000000", "6"], dir.path());
    opts.capture_functions = 4; // black_scholes is among the top four
    opts.capture_cap_bytes = 20_000_000; // two of the three 8 MB arrays
    let p = run(&opts).unwrap();
    let c = p
        .captures
        .iter()
        .find(|c| c.function == "black_scholes")
        .unwrap_or_else(|| panic!("not captured: {:#?} {:?}", p.functions, p.warnings));
    assert!(
        c.skipped
            .iter()
            .any(|s| s
                .starts_with("option_years: 8.0 MB would pass the capture cap (20.0 MB in all")),
        "{:?}",
        c.skipped
    );
    assert!(c.truncated);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.starts_with("black_scholes: capture truncated: ")
                && w.contains("would pass the capture cap")),
        "{:?}",
        p.warnings
    );
    let written: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    // npz headers add a few hundred bytes per array over the raw data.
    assert!(written <= 20_000_000 + 16_384, "{written} bytes written");
    // Types are recorded even for arguments too big to save.
    assert!(matches!(&c.args[2].kind, ArgKind::Ndarray { shape, .. } if shape == &[1_000_000]));
}

#[test]
fn a_python_without_numpy_still_gets_types_and_says_inputs_were_not_saved() {
    let system = std::path::Path::new("/usr/bin/python3");
    let has_numpy = Command::new(system)
        .args(["-c", "import numpy"])
        .status()
        .map(|s| s.success())
        .unwrap_or(true);
    assert!(
        !has_numpy,
        "this test needs a python3 without numpy at {}",
        system.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("pure_python.py", &["150000"], dir.path());
    opts.python = system.to_path_buf();
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    assert_eq!(ranking(&p)[0], "collatz_length");
    assert!(
        p.warnings
            .iter()
            .any(|w| w == "numpy not importable in /usr/bin/python3: inputs not captured"),
        "{:?}",
        p.warnings
    );
    let c = p
        .captures
        .iter()
        .find(|c| c.function == "collatz_length")
        .unwrap();
    assert_eq!(
        c.args[0].kind,
        ArgKind::Scalar {
            type_name: "int".into()
        }
    );
    assert_eq!(
        c.returns,
        Some(ArgKind::Scalar {
            type_name: "int".into()
        })
    );
    assert!(c.inputs_npz.is_none());
}

#[test]
fn awkward_calls_are_captured_from_a_call_that_returned() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options("capture_cases.py", &[], dir.path());
    opts.capture_functions = 6;
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    let capture = |key: &str| {
        p.captures
            .iter()
            .find(|c| c.function == key)
            .unwrap_or_else(|| panic!("{key} not captured: {:?} {:?}", p.functions, p.warnings))
    };

    // An exception handled inside the call is not a failed call.
    let parse = capture("parse_reading");
    assert_eq!(
        parse.returns,
        Some(ArgKind::Other {
            type_name: "NoneType".into()
        })
    );
    assert!(!parse.skipped.iter().any(|s| s.contains("raised")));

    // The first call raised; the capture is of the retry that returned.
    let fetch = capture("fetch_batch");
    assert_eq!(
        fetch.args[2].kind,
        ArgKind::Scalar {
            type_name: "int".into()
        }
    );
    assert!(matches!(&fetch.returns, Some(ArgKind::Ndarray { shape, .. }) if shape == &[100_000]));
    let out = Command::new(venv_python())
        .args([
            "-c",
            "import numpy as np, sys; print(int(np.load(sys.argv[1])['attempt']))",
        ])
        .arg(fetch.inputs_npz.as_ref().unwrap())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1",
        "the retry's inputs"
    );

    // Never returns: types and inputs kept, no return type, and it says why.
    let fails = capture("always_fails");
    assert!(matches!(fails.args[0].kind, ArgKind::Ndarray { .. }));
    assert!(fails.returns.is_none() && fails.inputs_npz.is_some());
    assert!(fails
        .skipped
        .iter()
        .any(|s| s.contains("raised an exception")));

    // Returns its argument, updated in place: named as the return, and its
    // input is the block before the update.
    let norm = capture("normalise");
    assert_eq!(norm.returns_alias.as_deref(), Some("block"));
    replay(
        "capture_cases.py",
        "normalise",
        norm.inputs_npz.as_ref().unwrap(),
        "rng = np.random.default_rng(11)\n\
         block = np.concatenate([np.sort(rng.random(100_000)) for _ in range(40)])\n\
         assert np.array_equal(args['block'], block)\n\
         assert float(args['scale']) == 4.0",
        "assert result is args['block'] and np.allclose(result, block / 4.0)",
    );
}

/// What the capture run wrote: every function whose first call it recorded,
/// hot or not (only the hot ones' `.npz` files are kept).
fn manifest(captures: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(captures.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn manifest_record<'a>(m: &'a serde_json::Value, function: &str) -> Option<&'a serde_json::Value> {
    m["captures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["function"] == function)
}

/// The app run alone, its stdout.
fn plain_output(app: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(venv_python())
        .arg(app)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn methods_decorated_nested_and_imported_functions_are_captured_and_the_program_sees_no_difference()
{
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let printed = dir.path().join("out.txt");
    let mut opts = options("capture_defs/main.py", &["0.3"], &captures);
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let p = run(&opts).unwrap();
    assert!(p.exit.success(), "{:?}", p.exit);

    // What the program printed of its functions (signatures, source lines,
    // pickling, identity, the traceback of a first call that raised, a
    // function's code run in another Python) is what it prints alone.
    let app = fixture("capture_defs/main.py").canonicalize().unwrap();
    assert_eq!(
        std::fs::read_to_string(&printed).unwrap(),
        plain_output(&app, &["0.3"])
    );

    let m = manifest(&captures);
    assert_eq!(m["warnings"], serde_json::json!([]));
    let record = |function: &str, file: &str| {
        let r = manifest_record(&m, function)
            .unwrap_or_else(|| panic!("{function} not captured: {}", m["captures"]));
        assert!(
            r["file"].as_str().unwrap().ends_with(file),
            "{function}: {}",
            r["file"]
        );
        assert_eq!(r["returned"], true, "{function}: {r}");
        r
    };
    let names = |r: &serde_json::Value| -> Vec<String> {
        r["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Methods: plain, static (keyword-only argument), class method, property.
    let relax = record("Grid.relax", "capture_defs/main.py");
    assert_eq!(names(relax), ["self", "sweeps", "omega"]);
    assert_eq!(relax["args"][2]["kind"]["type"], "float", "the default");
    assert_eq!(names(record("Grid.norm", "main.py")), ["v", "order"]);
    record("Grid.unit", "main.py");
    record("Grid.size", "main.py");
    // Under the program's own decorator: the function and the decorator's
    // wrapper are each captured; under lru_cache, the function.
    let smooth = record("smooth", "main.py");
    assert_eq!(
        smooth["args"][0]["kind"]["shape"],
        serde_json::json!([20_000])
    );
    assert!(smooth["inputs_npz"].is_string() && smooth.get("outputs_npz").is_none());
    record("timed.<locals>.wrapper", "main.py");
    record("coeffs", "main.py");
    // A local module's function and method.
    let saxpy = record("saxpy", "capture_defs/kernels.py");
    assert_eq!(names(saxpy), ["a", "x", "y"]);
    assert_eq!(saxpy["line"], 5);
    record("Smoother.apply", "kernels.py");
    // A nested function with a positional-only parameter and **kwargs.
    let apply = record("make_filter.<locals>.apply", "main.py");
    assert_eq!(names(apply), ["x", "bias", "extra"]);
    // The first call raised: the capture is of the next one, which returned.
    let fragile = record("fragile", "main.py");
    assert_eq!(fragile["args"][0]["kind"]["shape"], serde_json::json!([20]));
    // Never called here (its code ran in another Python): not captured.
    assert!(manifest_record(&m, "scale").is_none());
    assert_eq!(m["hook_stopped"], "program ended");

    // The first call of `main` lasts the whole run: its trampoline was on
    // every stack, and no sample shows it, nor an edge from main to itself.
    for s in &p.stacks {
        assert!(
            s.frames.iter().all(|f| f.name != "_port_first_call"),
            "{s:?}"
        );
    }
    assert!(
        p.edges.iter().all(|e| e.caller != e.callee),
        "{:?}",
        p.edges
    );
    assert!(
        p.edges
            .iter()
            .any(|e| e.caller == "<module>" && e.callee == "main"),
        "{:?}",
        p.edges
    );
}

#[test]
fn a_function_first_called_late_in_the_run_is_captured() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    // `late` is first called after 2.5 s of other work: there is no time
    // budget, and no cost to the run for waiting.
    let mut opts = options("capture_defs/main.py", &["2.5"], &captures);
    opts.app_output = port_profiler::AppOutput::File(dir.path().join("out.txt"));
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    let m = manifest(&captures);
    let late = manifest_record(&m, "late").unwrap_or_else(|| panic!("{}", m["captures"]));
    assert_eq!(late["returned"], true);
    assert_eq!(late["returns"]["type"], "float64");
    assert_eq!(
        late["args"][0]["kind"]["shape"],
        serde_json::json!([20_000])
    );
    let busy = manifest_record(&m, "busy").unwrap();
    let order = |r: &serde_json::Value| {
        m["captures"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c == r)
            .unwrap()
    };
    assert!(order(busy) < order(late));
    assert!(p.duration_s >= 2.5, "{}", p.duration_s);
}

#[test]
fn functions_handed_to_numba_keep_their_own_code_and_the_others_are_captured() {
    // Numba compiles a function's bytecode: a jitted function (decorated, or
    // passed to numba.njit, or a helper Numba inlines) keeps its own code
    // under capture, or Numba would compile the trampoline and fail.
    let numba_python = repo().join(".venv-oracle/bin/python");
    assert!(
        numba_python.exists(),
        "{} is missing: run `make setup-test` first",
        numba_python.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let printed = dir.path().join("out.txt");
    let mut opts = options("capture_defs/jitted.py", &[], &captures);
    opts.python = numba_python.clone();
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let p = run(&opts).unwrap();
    assert!(p.exit.success(), "{:?}", p.exit);
    let app = fixture("capture_defs/jitted.py").canonicalize().unwrap();
    let alone = Command::new(&numba_python).arg(&app).output().unwrap();
    assert!(alone.status.success());
    assert_eq!(
        std::fs::read_to_string(&printed).unwrap(),
        String::from_utf8(alone.stdout).unwrap()
    );
    let m = manifest(&captures);
    let mut captured: Vec<&str> = m["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"].as_str().unwrap())
        .collect();
    captured.sort_unstable();
    assert_eq!(captured, ["main", "total"], "{}", m["warnings"]);
}

#[test]
fn a_program_without_numpy_has_its_numbers_saved_without_importing_it() {
    // Importing NumPy costs a plain Python program about 0.1 s: the capture
    // writes the .npz files of numbers itself, as np.savez would.
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.py");
    std::fs::write(
        &app,
        "import sys, time\n\n\ndef area(n, x, z=1j, flag=True):\n    t = time.perf_counter()\n    while time.perf_counter() - t < 0.5:\n        pass\n    return n * x\n\n\nprint(area(3, 0.5), 'numpy' in sys.modules)\n",
    )
    .unwrap();
    let printed = dir.path().join("out.txt");
    let mut opts = options("pure_python.py", &[], &dir.path().join("captures"));
    opts.app = app.clone();
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    assert_eq!(std::fs::read_to_string(&printed).unwrap(), "1.5 False\n");
    let m = manifest(&dir.path().join("captures"));
    let area = manifest_record(&m, "area").unwrap_or_else(|| panic!("{m}"));
    assert!(p.captures.iter().any(|c| c.function == "area"), "hot, kept");
    assert_eq!(area["returns"]["type"], "float");
    let out = Command::new(venv_python())
        .args([
            "-c",
            "import numpy as np, sys\n\
             i = np.load(sys.argv[1])\n\
             print(sorted((k, str(v.dtype), v.shape, v.item()) for k, v in i.items()))",
        ])
        .arg(area["inputs_npz"].as_str().unwrap())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "[('flag', 'bool', (), True), ('n', 'int64', (), 3), ('x', 'float64', (), 0.5), \
         ('z', 'complex128', (), 1j)]",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_app_files_compiled_for_capture_are_cached_and_compiled_again_when_they_change() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.py");
    let helper = dir.path().join("helper.py");
    std::fs::write(
        &app,
        "import helper\n\n\ndef main():\n    print(helper.scale(3.0))\n\n\nmain()\n",
    )
    .unwrap();
    std::fs::write(&helper, "def scale(x):\n    return 2 * x\n").unwrap();
    let captures = dir.path().join("captures");
    let printed = dir.path().join("out.txt");
    let mut opts = options("pure_python.py", &[], &captures);
    opts.app = app.clone();
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let run_once = || {
        let p = run(&opts).unwrap();
        assert!(p.exit.success());
        let m = manifest(&captures);
        let scale = manifest_record(&m, "scale").unwrap_or_else(|| panic!("{m}"));
        let names: Vec<String> = scale["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect();
        (std::fs::read_to_string(&printed).unwrap(), names)
    };
    let cache = captures.join("bytecode");
    let stamps = || -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path(), e.metadata().unwrap().modified().unwrap())
            })
            .collect();
        v.sort();
        v
    };

    assert_eq!(run_once(), ("6.0\n".to_string(), vec!["x".to_string()]));
    let first = stamps();
    assert_eq!(
        first.len(),
        4,
        "app.py and helper.py, the bootstrap's source and its byte code: {first:?}"
    );
    // Run again: the same files are read back, not written again.
    assert_eq!(run_once(), ("6.0\n".to_string(), vec!["x".to_string()]));
    assert_eq!(stamps(), first);
    // The module changes (its size does): compiled again.
    std::fs::write(&helper, "def scale(x, k=5):\n    return k * x\n").unwrap();
    assert_eq!(
        run_once(),
        ("15.0\n".to_string(), vec!["x".to_string(), "k".to_string()])
    );
}

#[test]
fn the_bootstrap_runs_from_cached_byte_code_and_a_damaged_cache_is_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let printed = dir.path().join("out.txt");
    let mut opts = options("pure_python.py", &["2000"], &captures);
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let captured = || {
        let p = run(&opts).unwrap();
        assert!(p.exit.success(), "{:?}", p.exit);
        let m = manifest(&captures);
        assert!(manifest_record(&m, "longest_chain").is_some(), "{m}");
        std::fs::read_to_string(&printed).unwrap()
    };
    let bootstrap = |ext: &str| {
        std::fs::read_dir(captures.join("bytecode"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                name.starts_with("bootstrap-") && name.ends_with(ext)
            })
            .unwrap_or_else(|| panic!("no bootstrap-*{ext}"))
    };
    let printed_first = captured();
    let (source, cache) = (bootstrap(".py"), bootstrap(".bin"));
    // The cache starts with the Python that wrote it; the rest is byte code.
    let bytes = std::fs::read(&cache).unwrap();
    assert!(bytes.starts_with(b"3."), "{:?}", &bytes[..20]);
    // Garbage after the right key, then a source file someone edited: each
    // run still captures, as before, and leaves a cache that loads.
    let key_len = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut damaged = bytes[..key_len].to_vec();
    damaged.extend_from_slice(b"not marshal data");
    std::fs::write(&cache, &damaged).unwrap();
    assert_eq!(captured(), printed_first);
    let remade = std::fs::read(&cache).unwrap();
    assert!(remade != damaged && remade.starts_with(&bytes[..key_len]));
    std::fs::write(&source, "raise SystemExit('not the bootstrap')\n").unwrap();
    assert_eq!(captured(), printed_first);
    assert_eq!(
        std::fs::read_to_string(&source).unwrap(),
        port_profiler::capture::HELPER_SOURCE
    );
}

#[test]
fn arrays_changed_right_after_the_call_are_saved_as_the_call_saw_them() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let printed = dir.path().join("out.txt");
    let mut opts = options("capture_later_writes.py", &[], &captures);
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    // The program's os.wait() met its own child: the capture starts none.
    let out = std::fs::read_to_string(&printed).unwrap();
    assert!(out.contains("own child True 7"), "{out}");
    let c = p
        .captures
        .iter()
        .find(|c| c.function == "scale")
        .unwrap_or_else(|| panic!("scale not captured: {:?}", p.warnings));
    // `a` is `norm_of`'s, unchanged when `scale` began: saved in `scale`'s
    // file, or, when `norm_of`'s was written by then, only there, and
    // `scale`'s refers to it.
    let check = r#"
import json, os, sys
import numpy as np
i = np.load(sys.argv[1])
if "__port_ref__" in i.files:
    ref = json.loads(i["__port_ref__"].tobytes())["a"]
    a = np.load(os.path.join(os.path.dirname(sys.argv[1]), ref["file"]))[ref["member"]]
else:
    a = i["a"]
x = np.arange(2_000_000, dtype=np.float64)
assert np.array_equal(a, x), "inputs: a as the call began"
assert float(i["k"]) == 3.0
print("as the call saw them")
"#;
    let out = Command::new(venv_python())
        .args(["-c", check])
        .arg(c.inputs_npz.as_ref().expect("inputs saved"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing after the call is saved: one file per capture, its inputs.
    let files: Vec<String> = std::fs::read_dir(&captures)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".npz"))
        .collect();
    assert!(
        files.iter().all(|n| n.ends_with(".inputs.npz")),
        "{files:?}"
    );
    assert_eq!(
        files.len(),
        p.captures.iter().filter(|c| c.inputs_npz.is_some()).count()
    );
}

#[test]
fn python_3_12_catches_first_calls_with_sys_monitoring() {
    let Some(python) = monitoring_python() else {
        eprintln!(
            "skipped: no Python 3.12+ with numpy (scripts/setup.sh --oracle makes \
             .venv-monitoring where the machine has one)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let printed = dir.path().join("out.txt");
    let mut opts = options("capture_later_writes.py", &[], &captures);
    opts.python = python.clone();
    opts.app_output = port_profiler::AppOutput::File(printed.clone());
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    let out = std::fs::read_to_string(&printed).unwrap();
    assert!(out.contains("own child True 7"), "{out}");
    let m = manifest(&captures);
    assert_eq!(m["warnings"], serde_json::json!([]), "{m}");
    assert_eq!(m["hook_stopped"], "all captured", "{m}");
    let scale = p
        .captures
        .iter()
        .find(|c| c.function == "scale")
        .unwrap_or_else(|| panic!("scale not captured: {:?} {m}", p.warnings));
    assert_eq!(
        scale.args[1].kind,
        ArgKind::Scalar {
            type_name: "float".into()
        }
    );
    let check = Command::new(&python)
        .args([
            "-c",
            // `a` may be saved in the file, or, when `norm_of`'s capture of
            // the same contents was written first, referred to there.
            "import json, os, sys, numpy as np\n\
             i = np.load(sys.argv[1])\n\
             if 'a' in i.files:\n\
             \x20   a = i['a']\n\
             else:\n\
             \x20   r = json.loads(bytes(i['__port_ref__']).decode())['a']\n\
             \x20   a = np.load(os.path.join(os.path.dirname(sys.argv[1]), r['file']))[r['member']]\n\
             assert np.array_equal(a, np.arange(2_000_000, dtype=np.float64))",
        ])
        .arg(scale.inputs_npz.as_ref().expect("inputs saved"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// The static pass's hints (written by `port analyze` while the app starts;
/// here before it does) spare the capture what no migration reads: an array
/// the function only writes is described, not saved, unless it shares memory
/// with an argument the function reads; a function port cannot migrate has
/// its types captured and its inputs left out. What is saved still replays
/// the call, the unsaved arrays made from their description.
#[test]
fn hints_leave_out_the_arrays_a_function_never_reads() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let hints = dir.path().join("hints.json");
    let app = std::fs::canonicalize(fixture("write_only.py")).unwrap();
    let vector = |name: &str, dtype: &str| serde_json::json!({"name": name, "dtype": dtype, "ndim": 1, "contiguous": false});
    let hint = |name: &str, refused_with: serde_json::Value, unread: &[&str]| {
        let save = refused_with == serde_json::json!([]);
        serde_json::json!({"file": app, "qualname": name, "line": 1, "save": save,
                           "why": "inputs not saved: the static pass said so",
                           "refused_with": refused_with, "unread": unread})
    };
    let doc = serde_json::json!({"schema": "port-capture-hints/1", "functions": [
        hint("scale", serde_json::json!([]), &["out"]),
        // Refused for float32 arrays: called with float64 ones, so saved.
        hint("smooth", serde_json::json!([vector("a", "float32"), vector("out", "float64")]), &["out"]),
        hint("cumulative", serde_json::json!([vector("values", "float64"), vector("out", "float64")]), &[]),
    ]});
    std::fs::write(&hints, doc.to_string()).unwrap();
    let mut opts = options("write_only.py", &["400000"], &captures);
    opts.capture_functions = 5;
    opts.capture_hints = Some(hints);
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    let m = manifest(&captures);
    let record =
        |f: &str| manifest_record(&m, f).unwrap_or_else(|| panic!("{f} not captured: {m}"));

    // `scale`: only `x` saved; `out` described, and the call replays.
    let scale = record("scale");
    let skipped = scale["skipped"].to_string();
    assert!(
        skipped.contains("out: only written by the function, never read"),
        "{skipped}"
    );
    replay(
        "write_only.py",
        "scale",
        std::path::Path::new(scale["inputs_npz"].as_str().unwrap()),
        "d = np.load(inputs)\n\
         assert sorted(d.files) == ['__port_blank__', 'x'], d.files\n\
         assert json.loads(d['__port_blank__'].tobytes()) == \
             {'out': {'dtype': '<f8', 'shape': [400000], 'fortran': False}}\n\
         assert np.array_equal(args['x'], np.linspace(0.0, 1.0, 400000))",
        "assert result is args['out'] and np.allclose(result, 2.0 * args['x'] + 1.0)",
    );

    // `smooth(x, x)`: `out` is `a`, which the function reads: saved. And
    // its call's types are not those it was refused with: saved.
    let smooth = record("smooth");
    assert_eq!(
        smooth["aliases"],
        serde_json::json!([["a", "out"]]),
        "{smooth}"
    );
    assert_eq!(record("scale")["aliases"], serde_json::json!([]));
    let skipped = smooth["skipped"].to_string();
    assert!(
        !skipped.contains("only written") && !skipped.contains("said so"),
        "{skipped}"
    );
    // One array passed twice is saved once, and replays as one array. That
    // array is `x` as `scale` had it, so it is read from `scale`'s file.
    let scale_file = std::path::Path::new(scale["inputs_npz"].as_str().unwrap())
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    replay(
        "write_only.py",
        "smooth",
        std::path::Path::new(smooth["inputs_npz"].as_str().unwrap()),
        &format!(
            "d = np.load(inputs)\n\
         assert sorted(d.files) == ['__port_ref__', '__port_same__'], d.files\n\
         assert json.loads(d['__port_ref__'].tobytes()) == {{'a': {{'file': '{scale_file}', 'member': 'x'}}}}\n\
         assert json.loads(d['__port_same__'].tobytes()) == {{'out': 'a'}}\n\
         assert args['out'] is args['a']\n\
         assert np.array_equal(args['a'], np.linspace(0.0, 1.0, 400000))"
        ),
        "x = np.linspace(0.0, 1.0, 400000)\n\
         assert args['a'][1] == 0.5 * (x[1] + x[0]) and args['a'][2] == 0.5 * (x[2] + args['a'][1])",
    );

    // `cumulative`: called with the types it was refused with: typed,
    // nothing saved, and the record says why.
    let cumulative = record("cumulative");
    assert!(cumulative["inputs_npz"].is_null(), "{cumulative}");
    assert_eq!(cumulative["args"][0]["kind"]["dtype"], "float64");
    assert!(
        cumulative["skipped"]
            .to_string()
            .contains("the static pass said so"),
        "{cumulative}"
    );
    // 3.2 MB of `scale`'s `x` (`smooth`'s `a`, unchanged, refers to it) and
    // of `clamp`'s `a` (each `out` the same array), `clamp`'s `lo` and `hi`,
    // and `main`'s `n` (it has no hint): not the 22 MB of every input.
    assert_eq!(m["bytes_written"], 2 * 8 * 400_000 + 3 * 8);
}

/// An array passed to several captured functions is saved once while its
/// contents stay as they were: a later capture refers to the earlier file.
/// One the app changed in between (in place) is saved anew, with the
/// values the later call saw.
#[test]
fn an_array_is_saved_once_for_several_calls_unless_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let mut opts = options("write_only.py", &["300000"], &captures);
    opts.capture_functions = 5;
    let p = run(&opts).unwrap();
    assert!(p.exit.success());
    let m = manifest(&captures);
    let record =
        |f: &str| manifest_record(&m, f).unwrap_or_else(|| panic!("{f} not captured: {m}"));
    let npz = |f: &str| {
        std::path::PathBuf::from(
            record(f)["inputs_npz"]
                .as_str()
                .unwrap_or_else(|| panic!("{f}: no inputs saved: {m}")),
        )
    };
    let members = |f: &str| -> Vec<String> {
        let out = Command::new(venv_python())
            .args([
                "-c",
                "import sys, numpy as np; print(' '.join(sorted(np.load(sys.argv[1]).files)))",
            ])
            .arg(npz(f))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // `scale(x, y)` saves both; `smooth(x, x)` finds `x` as `scale` saved it.
    assert_eq!(members("scale"), ["out", "x"]);
    assert_eq!(members("smooth"), ["__port_ref__", "__port_same__"]);
    assert_eq!(
        record("smooth")["refers_to"],
        serde_json::json!([npz("scale").display().to_string()])
    );
    // `scale` wrote `y`, so `clamp(y, .., y)` saves it again, as it was
    // then; `clamp` changed it in place, so `cumulative(y, ..)` saves it too.
    assert_eq!(members("clamp"), ["__port_same__", "a", "hi", "lo"]);
    assert_eq!(members("cumulative"), ["out", "values"]);
    let x = "x = np.linspace(0.0, 1.0, 300000)\n";
    replay(
        "write_only.py",
        "clamp",
        &npz("clamp"),
        &format!("{x}assert np.array_equal(args['a'], 2.0 * x + 1.0)"),
        "",
    );
    replay(
        "write_only.py",
        "cumulative",
        &npz("cumulative"),
        &format!("{x}assert np.array_equal(args['values'], np.clip(2.0 * x + 1.0, 1.5, 2.5))"),
        "",
    );
    replay(
        "write_only.py",
        "smooth",
        &npz("smooth"),
        &format!("{x}assert np.array_equal(args['a'], x) and args['out'] is args['a']"),
        "",
    );
    // x and y for `scale`, y for `clamp` and `cumulative`, `cumulative`'s
    // `out`, two numbers and `main`'s `n`: not `smooth`'s `x` again.
    assert_eq!(m["bytes_written"], 5 * 8 * 300_000 + 3 * 8);
}

/// A new build of port clears what older builds compiled into the capture's
/// byte code folder (it is never read again), but not what another build
/// wrote today.
#[test]
fn a_new_bootstrap_removes_old_byte_code_and_keeps_recent_files() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let bytecode = captures.join("bytecode");
    std::fs::create_dir_all(&bytecode).unwrap();
    let old = bytecode.join("bootstrap-0000000000000000.py");
    let recent = bytecode.join("app.py-12345678.bin");
    std::fs::write(&old, "stale").unwrap();
    std::fs::write(&recent, "another build's").unwrap();
    let two_days = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(two_days)
        .unwrap();
    let p = run(&options("write_only.py", &["1000"], &captures)).unwrap();
    assert!(p.exit.success());
    assert!(!old.exists(), "the old bootstrap is still there");
    assert!(recent.exists(), "a file written today was removed");
    let ours: Vec<String> = std::fs::read_dir(&bytecode)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("bootstrap-") && n.ends_with(".py"))
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
}
