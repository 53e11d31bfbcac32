//! `port analyze APP.py`: the program runs under the sampler; hotspots are
//! ranked, coverage is weighted by time, and captured types reach the
//! classifier.

mod common;
use common::*;

fn venv_python() -> String {
    let py = repo().join(".venv/bin/python");
    assert!(
        py.exists(),
        "no .venv: run `make test` (scripts/setup.sh) first"
    );
    py.to_string_lossy().into_owned()
}

/// stdout parsed as one JSON document, and accepted by `python -m
/// json.tool` as a user's `port analyze app.py --json | python -m json.tool` is.
fn json_stdout_only(o: &std::process::Output) -> serde_json::Value {
    use std::io::Write;
    let mut tool = std::process::Command::new(venv_python())
        .args(["-m", "json.tool"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tool.stdin.take().unwrap().write_all(&o.stdout).unwrap();
    let done = tool.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "json.tool: {}\nstdout began: {:?}",
        String::from_utf8_lossy(&done.stderr),
        stdout(o).chars().take(200).collect::<String>()
    );
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
}

#[test]
fn app_output_goes_to_the_terminal_or_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let app = fixture("apps/mixed_app.py");
    let py = venv_python();
    let run = |extra: &[&str]| {
        let mut args = vec!["analyze", "--no-capture", "--python", &py];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[app.to_str().unwrap(), "--", "1"]);
        port_in(tmp.path(), &args)
    };
    // Without --json the program prints where it would alone, before the table.
    let o = run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let printed = out
        .find("1 rounds: checksum")
        .expect("the app's print on stdout");
    assert!(printed < out.find("verdict").expect("the table"), "{out}");

    // --app-output FILE: the print lands in FILE, on neither stream.
    let o = run(&["--json", "--app-output", "app.out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    json_stdout_only(&o);
    assert!(!stderr(&o).contains("rounds: checksum"), "{}", stderr(&o));
    let saved = std::fs::read_to_string(tmp.path().join("app.out")).unwrap();
    assert!(saved.contains("1 rounds: checksum"), "{saved}");

    // A file that cannot be created is one line, before anything runs.
    let o = run(&["--app-output", "no/such/dir/app.out"]);
    user_error(&o, "no/such/dir/app.out");
}

#[test]
fn mixed_app_is_ranked_and_weighted_by_time() {
    let tmp = tempfile::tempdir().unwrap();
    let app = fixture("apps/mixed_app.py");
    let py = venv_python();
    let o = port_in(
        tmp.path(),
        &[
            "analyze",
            "--json",
            "--python",
            &py,
            app.to_str().unwrap(),
            "--",
            "3",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // With --json, stdout is port's one JSON document, whole: the app's own
    // print goes to stderr.
    let a = json_stdout_only(&o);
    // (The JSON may quote the print line itself as a sampled hot line.)
    assert!(!stdout(&o)
        .lines()
        .any(|l| l.starts_with("3 rounds: checksum")));
    assert!(stderr(&o).contains("3 rounds: checksum"), "{}", stderr(&o));

    assert_eq!(a["profiled"], true);
    assert!(
        a["profile"]["samples"].as_u64().unwrap() > 50,
        "{}",
        a["profile"]["samples"]
    );
    assert_eq!(a["profile"]["rate_hz"], 100);
    let pct = |n: &str| function(&a, n)["self_pct"].as_f64().unwrap();
    let (shade, fp, scan) = (pct("shade"), pct("fingerprint"), pct("running_total"));
    assert!(
        shade > fp && shade > scan,
        "shade {shade}, fingerprint {fp}, scan {scan}"
    );
    assert!(fp > 3.0 && scan > 3.0, "fingerprint {fp}, scan {scan}");
    assert_eq!(function(&a, "shade")["verdict"], "cuda");
    assert_eq!(function(&a, "fingerprint")["verdict"], "object");
    assert_eq!(function(&a, "running_total")["verdict"], "nopython");
    let main_total = function(&a, "main")["total_pct"].as_f64().unwrap();
    assert!(main_total > 60.0, "main's total {main_total}");

    // Coverage is the share of samples by verdict, not of functions.
    let c = &a["coverage"];
    assert_eq!(c["basis"], "samples");
    let gpu = c["gpu_eligible_pct"].as_f64().unwrap();
    assert!((gpu - shade).abs() < 0.1, "gpu {gpu} vs shade {shade}");

    // Captured types: float64 arrays for shade, which becomes a finding.
    let types = function(&a, "shade")["types"]
        .as_array()
        .expect("captured types")
        .clone();
    assert_eq!(types.len(), 3);
    for t in &types {
        assert_eq!(t["kind"], "ndarray");
        assert_eq!(t["dtype"], "float64");
        assert_eq!(t["ndim"], 1);
    }
    assert!(codes(function(&a, "shade")).contains(&"PORT301".to_string()));

    // Sampled edges join the static call graph.
    let edges = a["call_graph"]["edges"].as_array().unwrap();
    assert!(edges.iter().any(|e| e["caller"] == "mixed_app.main"
        && e["callee"] == "mixed_app.shade"
        && e["kind"] == "both"));
    assert!(tmp.path().join(".port/analysis.json").exists());
}

#[test]
fn failing_app_still_writes_its_report_and_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let app = fixture("apps/faults/exits_nonzero.py");
    let py = venv_python();
    let o = port_in(
        tmp.path(),
        &[
            "analyze",
            "--no-capture",
            "--python",
            &py,
            app.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("exited with code"), "{err}");
    assert!(tmp.path().join(".port/analysis.json").exists());
}

#[test]
fn missing_app_and_folder_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let o = port_in(tmp.path(), &["analyze", "nope.py"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
    let o = port_in(
        tmp.path(),
        &["analyze", fixture("multimodule").to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--static"), "{}", stderr(&o));
}

#[test]
fn never_ending_app_stops_at_duration() {
    let tmp = tempfile::tempdir().unwrap();
    let app = fixture("apps/faults/never_ends.py");
    let py = venv_python();
    let o = port_in(
        tmp.path(),
        &[
            "analyze",
            "--no-capture",
            "--duration",
            "1.5",
            "--python",
            &py,
            app.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let a: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join(".port/analysis.json")).unwrap())
            .unwrap();
    let d = a["profile"]["duration_s"].as_f64().unwrap();
    assert!((1.0..10.0).contains(&d), "duration {d}");
    assert_eq!(a["profile"]["exit"]["timed_out"], true);
}
