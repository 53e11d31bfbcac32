//! What `port migrate` and `port verify` print: a migration's outcome in
//! words, read from the document they write (`port.migration/1`, in
//! `.port/migrations/` and on `--json`), never from the run itself, so
//! that the text and the JSON cannot disagree.

use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};

use crate::migration::{Migration, MigrationStatus, Reason};
use crate::timing::secs;

/// Seconds, or `—` when not measured.
fn secs_or_dash(s: Option<f64>) -> String {
    s.map_or_else(|| "—".into(), secs)
}

/// A speedup as `port verify` prints it: `12.3x`, or `—`.
fn times(x: Option<f64>) -> String {
    x.map_or("—".into(), |x| format!("{x:.1}x"))
}

/// An error the document holds as null: infinite (see
/// [`Verification`](crate::migration::Verification)).
fn error(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::INFINITY)
}

/// A tolerance in scientific notation (`1e-5`), or `—`.
fn tolerance(x: Option<f64>) -> String {
    x.map_or("—".into(), |x| format!("{x:e}"))
}

/// A result for the table's and the report's verdict: `verified`,
/// `MISMATCH`, `INCONCLUSIVE` (a status without a verification is shouted
/// as it is).
fn result(status: MigrationStatus) -> String {
    match status {
        MigrationStatus::Verified => "verified".into(),
        other => other.as_str().to_uppercase(),
    }
}

/// `line 12: message [rewrite]`, as much of it as the reason holds.
fn located(r: &Reason) -> String {
    match r {
        Reason::Located {
            line,
            message,
            rewrite,
        } => {
            let line = line.map_or(String::new(), |l| format!("line {l}: "));
            let rewrite = rewrite
                .as_ref()
                .map_or(String::new(), |w| format!(" [{w}]"));
            format!("{line}{message}{rewrite}")
        }
        Reason::Text(message) => message.clone(),
    }
}

/// The text report of `port migrate`: the function and its status, the
/// reasons, kernels and rewrites, the verification and the performance
/// figures, the patch and the notes.
pub fn migration_text(m: &Migration) -> String {
    let location = match (&m.file, m.line) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.clone(),
        (None, _) => "?".into(),
    };
    let mut out = format!("port migrate: {} ({location}) → {}\n", m.function, m.status);
    let label = if m.status == MigrationStatus::Refused {
        "refused"
    } else {
        "reason"
    };
    for r in &m.reasons {
        out.push_str(&format!("  {label}: {}\n", located(r)));
    }
    if let Some(first) = m.kernels.first() {
        let names: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        out.push_str(&format!(
            "  kernels: {} → {}\n",
            names.join(", "),
            first.ptx
        ));
    }
    let applied: Vec<String> = m
        .rewrites
        .iter()
        .filter(|r| r.applied)
        .map(|r| format!("{} ({})", r.rewrite, r.note))
        .collect();
    if !applied.is_empty() {
        out.push_str("  rewrites:\n");
        for a in applied {
            out.push_str(&format!("    {a}\n"));
        }
    }
    if let Some(v) = &m.verification {
        let verdict = match (m.status, v.exact()) {
            (MigrationStatus::Verified, Some(c)) => {
                format!("passed against {}", c.precision.rerun())
            }
            (MigrationStatus::Verified, None) => "passed".into(),
            (other, _) => result(other),
        };
        out.push_str(&format!(
            "  verification: {} on {} inputs: {verdict} (max abs err {:.3e}, max rel err {:.3e}; rtol {}, atol {})\n",
            v.backend,
            v.inputs,
            error(v.max_abs_err),
            error(v.max_rel_err),
            tolerance(v.rtol),
            tolerance(v.atol)
        ));
        if let Some(d) = &v.mismatch {
            out.push_str(&format!("    first difference: {d}\n"));
        }
        if let Some(h) = &v.inputs_how {
            out.push_str(&format!("    inputs: {h}\n"));
        }
        if let Some(c) = v.exact() {
            let name = c.precision.name();
            out.push_str(&format!("    {name}: {}\n", c.describe()));
            if let Some(e) = &c.elementwise {
                out.push_str(&format!(
                    "    (elementwise against the original's {name} results: {e})\n"
                ));
            }
        }
        out.push_str(&performance_text(m));
    }
    if let Some(p) = &m.patch {
        out.push_str(&format!("  patch: {p}\n"));
    }
    for n in &m.notes {
        out.push_str(&format!("  {n}\n"));
    }
    out
}

/// The lines after the verification: the device, library steps on the
/// host, the timings, the speedups, the bandwidth and the projection.
fn performance_text(m: &Migration) -> String {
    let mut out = String::new();
    if let Some(d) = &m.device {
        let device = match &d.compute_capability {
            Some(cc) => format!("{} (compute capability {cc})", d.name),
            None => d.name.clone(),
        };
        out.push_str(&format!("  device: {device}\n"));
    }
    for c in &m.host_calls {
        out.push_str(&format!("  library call: {c}\n"));
    }
    let t = m.timing.clone().unwrap_or_default();
    let n = |r: Option<u64>| r.map_or(String::new(), |r| format!(", median of {r}"));
    let repeats = t.repeats.clone().unwrap_or_default();
    let simulator = t
        .simulator_s
        .map_or(String::new(), |s| format!(" · simulator {}", secs(s)));
    out.push_str(&format!(
        "  timing: compile {}{simulator} · kernel {}{} · end-to-end {}{} · CPython {}{}\n",
        secs_or_dash(t.compile_s),
        secs_or_dash(t.kernel_s),
        n(repeats.kernel),
        secs_or_dash(t.end_to_end_s),
        n(repeats.end_to_end),
        secs_or_dash(t.cpython_s),
        n(repeats.cpython)
    ));
    if t.cpython_s.is_some() {
        let call = t.cpython_call.clone().unwrap_or_default();
        out.push_str(&format!("  CPython time: {}\n", call.describe()));
    }
    if t.speedup_kernel.is_some() {
        out.push_str(&format!(
            "  speedup over CPython: kernel {} · end-to-end {}\n",
            times(t.speedup_kernel),
            times(t.speedup_end_to_end)
        ));
    }
    if let Some(b) = &m.bandwidth {
        let peak = match (b.pct_of_peak, b.peak_gb_s) {
            (Some(pct), Some(p)) => format!(" = {pct:.0}% of the {p:.0} GB/s peak"),
            _ => " (not memory-bound: not compared with the peak)".into(),
        };
        let achieved = b.achieved_gb_s.unwrap_or(0.0);
        out.push_str(&format!("  bandwidth: {achieved:.0} GB/s{peak}\n"));
    }
    let p = m.projection.clone().unwrap_or_default();
    if let (Some(pct), Some(s)) = (p.hotspot_pct, p.program_speedup) {
        out.push_str(&format!(
            "  program: {pct:.1}% of the profile → {s:.2}x overall (Amdahl)\n"
        ));
    }
    out.push_str(&format!("  {}\n", p.why.as_deref().unwrap_or_default()));
    out
}

/// What `port verify` did with one migrated function.
#[derive(Debug, Clone)]
pub enum Checked {
    /// Verified again: the record as `port verify` rewrote it.
    Done(Box<Migration>),
    /// Not run, and why.
    Skipped(String),
    /// The run failed, with the reason.
    Failed(String),
}

/// The text of `port verify`: one table row per function, then a line for
/// each function run (why it is not verified, or what it is worth to the
/// program, and the bandwidth a memory-bound one achieved). `tty`: stdout
/// is a terminal that wants colour, whose width comfy-table may read; else
/// the table keeps its natural width.
pub fn verify_text(rows: &[(String, Checked)], tty: bool) -> String {
    let mut out = verify_table(rows, tty);
    out.push('\n');
    for (name, checked) in rows {
        match checked {
            Checked::Done(m) => {
                let why = match m.reasons.first() {
                    Some(r) => r.message(),
                    None => m
                        .projection
                        .as_ref()
                        .and_then(|p| p.why.as_deref())
                        .unwrap_or_default(),
                };
                out.push_str(&format!("{name}: {why}\n"));
                if let Some(b) = &m.bandwidth {
                    if let (Some(pct), Some(p)) = (b.pct_of_peak, b.peak_gb_s) {
                        out.push_str(&format!(
                            "{name}: {:.0} GB/s = {pct:.0}% of the device's {p:.0} GB/s peak\n",
                            b.achieved_gb_s.unwrap_or(0.0)
                        ));
                    }
                }
            }
            Checked::Failed(m) => out.push_str(&format!("{name}: {m}\n")),
            Checked::Skipped(_) => {}
        }
    }
    out
}

fn verify_table(rows: &[(String, Checked)], tty: bool) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    // Eleven columns of figures: wrapped to a terminal's width they split
    // words and numbers, so this table keeps its natural width.
    if !tty {
        t.force_no_tty();
    }
    t.set_header(vec![
        "function",
        "backend",
        "result",
        "max rel err",
        "compile",
        "kernel",
        "end-to-end",
        "CPython",
        "speedup kernel",
        "speedup e2e",
        "program",
    ]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for (name, checked) in rows {
        let mut row = vec![Cell::new(name)];
        match checked {
            Checked::Done(m) => {
                let v = m.verification.clone().unwrap_or_default();
                let t = m.timing.clone().unwrap_or_default();
                let p = m.projection.clone().unwrap_or_default();
                row.push(Cell::new(&v.backend));
                row.push(Cell::new(result(m.status)));
                row.push(right(format!("{:.1e}", error(v.max_rel_err))));
                row.push(right(secs_or_dash(t.compile_s)));
                row.push(right(secs_or_dash(t.kernel_s)));
                row.push(right(secs_or_dash(t.end_to_end_s)));
                row.push(right(secs_or_dash(t.cpython_s)));
                row.push(right(times(t.speedup_kernel)));
                row.push(right(times(t.speedup_end_to_end)));
                row.push(right(match (p.program_speedup, p.profitable) {
                    (_, Some(false)) => "not profitable".into(),
                    (Some(s), _) => format!("{s:.2}x"),
                    _ => "—".into(),
                }));
            }
            Checked::Skipped(why) => {
                row.push(Cell::new("—"));
                row.push(Cell::new(format!("skipped: {why}")));
            }
            Checked::Failed(_) => {
                row.push(Cell::new("—"));
                row.push(Cell::new("FAILED"));
            }
        }
        t.add_row(row);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(v: serde_json::Value) -> Migration {
        serde_json::from_value(v).expect("a migration record")
    }

    #[test]
    fn a_refusal_reads_with_its_lines_and_rewrites() {
        let m = record(json!({
            "schema": "port.migration/1",
            "function": "scan",
            "file": "app.py",
            "line": 40,
            "status": "refused",
            "reasons": [{"line": 42, "message": "a scan", "rewrite": "dependences"}],
            "kernels": [],
            "patch": null,
            "notes": ["give --signature"],
            "verification": null,
        }));
        assert_eq!(
            migration_text(&m),
            "port migrate: scan (app.py:40) → refused\n  refused: line 42: a scan [dependences]\n  give --signature\n"
        );
    }

    #[test]
    fn a_verification_reads_from_the_record() {
        let m = record(json!({
            "schema": "port.migration/1",
            "function": "f",
            "file": "app.py",
            "line": 3,
            "status": "mismatch",
            "reasons": [{"line": 3, "message": "results differ: `x` index 1", "rewrite": "verify"}],
            "kernels": [{"name": "f_k0", "ptx": ".port/kernels/f.ptx", "signature": null},
                        {"name": "f_k1", "ptx": ".port/kernels/f.ptx", "signature": null}],
            "rewrites": [{"rewrite": "loops", "applied": true, "note": "line 4"},
                         {"rewrite": "reductions", "applied": false, "note": "none"}],
            "patch": ".port/patches/f.diff",
            "notes": [],
            // An infinite error is null in JSON.
            "verification": {"backend": "simulator", "inputs": "generated", "passed": false,
                             "max_abs_err": null, "max_rel_err": 0.5, "rtol": 1e-5, "atol": 1e-8,
                             "compared": ["x"], "mismatch": "`x` index 1: expected 1, got 2"},
            "device": {"name": "simulator", "compute_capability": null, "sms": null,
                       "peak_bandwidth_gb_s": null},
            "timing": {"compile_s": 0.0123, "kernel_s": null, "end_to_end_s": null,
                       "cpython_s": 0.31, "simulator_s": 0.002, "cpython_call": {"via": "call"},
                       "speedup_kernel": null, "speedup_end_to_end": null,
                       "repeats": {"cpython": 3}},
            "projection": {"why": "no GPU timing on the simulator"},
            "bandwidth": null,
            "host_calls": [{"call": "np.linalg.cholesky", "line": 9, "count": 2}],
        }));
        assert_eq!(
            migration_text(&m),
            "port migrate: f (app.py:3) → mismatch\n\
             \x20 reason: line 3: results differ: `x` index 1 [verify]\n\
             \x20 kernels: f_k0, f_k1 → .port/kernels/f.ptx\n\
             \x20 rewrites:\n\
             \x20   loops (line 4)\n\
             \x20 verification: simulator on generated inputs: MISMATCH (max abs err inf, max rel err 5.000e-1; rtol 1e-5, atol 1e-8)\n\
             \x20   first difference: `x` index 1: expected 1, got 2\n\
             \x20 device: simulator\n\
             \x20 library call: `np.linalg.cholesky` at line 9: on the host (cuSOLVER computes float32/float64 cholesky, solve, inv and det on a GPU that has libcusolver) (×2)\n\
             \x20 timing: compile 12.30 ms · simulator 2.00 ms · kernel — · end-to-end — · CPython 310.00 ms, median of 3\n\
             \x20 CPython time: the original called once on the arguments as given\n\
             \x20 no GPU timing on the simulator\n\
             \x20 patch: .port/patches/f.diff\n"
        );
    }

    #[test]
    fn a_float64_check_says_what_decided() {
        let m = record(json!({
            "schema": "port.migration/1",
            "function": "f",
            "status": "verified",
            "verification": {"backend": "gpu", "inputs": "captured", "passed": true,
                             "max_abs_err": 1e-9, "max_rel_err": 2e-9, "rtol": 1e-5, "atol": 1e-8,
                             "float64_exact": {"verdict": "passed", "passed": true,
                                               "reference": "np.longdouble", "ours_err": 8e-9,
                                               "original_err": 1e-9, "factor": 10.0,
                                               "floor": 2.220446049250313e-15,
                                               "elementwise": "return value index 0"}},
            "device": {"name": "NVIDIA H100", "compute_capability": "9.0"},
            "timing": {"compile_s": 0.04, "kernel_s": 0.0002, "end_to_end_s": 0.004,
                       "cpython_s": 0.9, "speedup_kernel": 4500.0, "speedup_end_to_end": 225.0},
            "projection": {"hotspot_pct": 58.4, "program_speedup": 2.4, "why": "pays"},
            "bandwidth": {"achieved_gb_s": 2791.0, "peak_gb_s": 3352.3, "pct_of_peak": 83.3},
        }));
        let text = migration_text(&m);
        for line in [
            "port migrate: f (?) → verified\n",
            "  verification: gpu on captured inputs: passed against an extended-precision run (max abs err",
            "    float64: passed against an extended-precision run of the original: the kernels' error 8.00e-9, the original's own float64 error 1.00e-9 (allowed: 10x the original's, or 2e-15)\n",
            "    (elementwise against the original's float64 results: return value index 0)\n",
            "  device: NVIDIA H100 (compute capability 9.0)\n",
            "  speedup over CPython: kernel 4500.0x · end-to-end 225.0x\n",
            "  bandwidth: 2791 GB/s = 83% of the 3352 GB/s peak\n",
            "  program: 58.4% of the profile → 2.40x overall (Amdahl)\n",
            "  pays\n",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
    }

    #[test]
    fn verify_prints_a_row_per_function_and_a_line_per_run() {
        let done = record(json!({
            "schema": "port.migration/1",
            "function": "f",
            "status": "verified",
            "reasons": [],
            "verification": {"backend": "simulator", "inputs": "captured", "passed": true,
                             "max_abs_err": 0.0, "max_rel_err": 0.0},
            "timing": {"compile_s": 0.01, "cpython_s": 0.2},
            "projection": {"profitable": false, "why": "too little work"},
        }));
        let rows = vec![
            ("f".to_string(), Checked::Done(Box::new(done))),
            (
                "g".to_string(),
                Checked::Skipped("refused by port migrate".into()),
            ),
            (
                "h".to_string(),
                Checked::Failed("the original is gone".into()),
            ),
        ];
        let text = verify_text(&rows, false);
        let (table, lines) = text.split_once("┘\n").expect("a table");
        assert!(table.contains("not profitable"), "{table}");
        assert!(
            table.contains("skipped: refused by port migrate"),
            "{table}"
        );
        assert!(table.contains("FAILED"), "{table}");
        assert_eq!(lines, "f: too little work\nh: the original is gone\n");
    }
}
