//! `port report --format md`: a summary fit for a pull-request comment or a
//! GitHub Actions job summary.

use std::fmt::Write;

use port_analyzer::model::Verdict;

use crate::coverage::{Basis, CoverageFigures};
use crate::migration::MigrationStatus;
use crate::report::{FunctionEntry, Report, TOP_HOTSPOTS};
use crate::timing;

/// How many blocker codes the summary lists.
pub const TOP_BLOCKERS: usize = 5;

pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## port: GPU coverage of `{}`\n", r.app.root);
    coverage_table(&mut s, r);
    gate(&mut s, r);
    hotspots(&mut s, r);
    migrations(&mut s, r);
    blockers(&mut s, r);
    if !r.parse_errors.is_empty() {
        let _ = writeln!(
            s,
            "\n{} file{} could not be parsed and {} left out, e.g. `{}`.",
            r.parse_errors.len(),
            plural(r.parse_errors.len()),
            if r.parse_errors.len() == 1 {
                "was"
            } else {
                "were"
            },
            cell(&r.parse_errors[0].to_string())
        );
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Text made safe for a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub(crate) fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

pub(crate) fn delta(v: f64) -> String {
    if v.abs() < 0.05 {
        "±0.0".into()
    } else {
        format!("{v:+.1}")
    }
}

/// The figures in the order reports show them, with their names.
pub(crate) fn figures(c: &CoverageFigures) -> [(&'static str, f64); 4] {
    [
        ("GPU-eligible (cuda)", c.gpu_eligible_pct),
        ("migrated and verified", c.migrated_pct),
        ("nopython", c.nopython_pct),
        ("object", c.object_pct),
    ]
}

pub(crate) fn basis_sentence(r: &Report) -> String {
    match r.coverage.basis {
        Basis::Samples => match r.profile.as_ref().and_then(|p| p.samples) {
            Some(n) => format!(
                "Shares of sampled time ({}).",
                crate::text::count(n as usize, "sample", "samples")
            ),
            None => "Shares of sampled time.".into(),
        },
        Basis::Functions => "Shares of functions: a static analysis (`port analyze --static`) samples no time, so every function counts the same.".into(),
    }
}

fn coverage_table(s: &mut String, r: &Report) {
    let now = figures(&r.coverage);
    match &r.baseline {
        Some(b) => {
            let was = figures(&b.coverage);
            let d = [
                b.delta.gpu_eligible_pct,
                b.delta.migrated_pct,
                b.delta.nopython_pct,
                b.delta.object_pct,
            ];
            s.push_str("| coverage | now | baseline | change |\n|---|---:|---:|---:|\n");
            for i in 0..4 {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    now[i].0,
                    pct(now[i].1),
                    pct(was[i].1),
                    delta(d[i])
                );
            }
        }
        None => {
            s.push_str("| coverage | now |\n|---|---:|\n");
            for (name, v) in now {
                let _ = writeln!(s, "| {name} | {} |", pct(v));
            }
        }
    }
    let _ = writeln!(s, "\n{}", basis_sentence(r));
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            s,
            "Compared with the baseline `{}` (tolerance {:.1} points).",
            b.file, b.tolerance_pct
        );
    }
}

fn gate(s: &mut String, r: &Report) {
    let Some(g) = &r.gate else { return };
    let mut checks = Vec::new();
    if let Some(p) = g.fail_under {
        checks.push(format!("GPU-eligible at least {p}%"));
    }
    if g.fail_on_regression {
        checks.push("no regression against the baseline".to_string());
    }
    if g.passed() {
        let _ = writeln!(s, "\n**CI gate: passed** ({}).", checks.join("; "));
    } else {
        let _ = writeln!(s, "\n**CI gate: failed** ({}):\n", checks.join("; "));
        for f in &g.failures {
            let _ = writeln!(s, "- {}", cell(f));
        }
    }
}

fn verdict_text(v: Verdict, m: Option<MigrationStatus>) -> String {
    match m {
        Some(st) => format!("`{v}`, migration {st}"),
        None => format!("`{v}`"),
    }
}

fn hotspots(s: &mut String, r: &Report) {
    if r.profiled {
        let _ = writeln!(s, "\n### Top hotspots\n");
        if r.hotspots.is_empty() {
            s.push_str("No app function was on a sampled stack.\n");
            return;
        }
        s.push_str("| function | where | total | self | verdict | main reason |\n|---|---|---:|---:|---|---|\n");
        for h in &r.hotspots {
            let _ = writeln!(
                s,
                "| `{}` | `{}:{}` | {} | {} | {} | {} |",
                cell(&h.qualname),
                cell(&h.file),
                h.line,
                h.total_pct.map(pct).unwrap_or_else(|| "-".into()),
                h.self_pct.map(pct).unwrap_or_else(|| "-".into()),
                verdict_text(h.verdict, h.migration),
                h.main_reason
                    .as_ref()
                    .map(|f| cell(&format!("{} {}", f.code, f.message)))
                    .unwrap_or_else(|| "-".into())
            );
        }
        return;
    }
    let _ = writeln!(s, "\n### Functions not GPU-eligible\n");
    s.push_str(
        "No profile, so no hotspots: run `port analyze APP.py` to rank functions by time.\n\n",
    );
    let blocked: Vec<&FunctionEntry> = r
        .functions
        .iter()
        .filter(|f| f.function.verdict != Verdict::Cuda)
        .collect();
    if blocked.is_empty() {
        s.push_str("Every function is GPU-eligible.\n");
        return;
    }
    s.push_str("| function | where | verdict | main reason |\n|---|---|---|---|\n");
    for f in blocked.iter().take(TOP_HOTSPOTS) {
        let x = &f.function;
        let _ = writeln!(
            s,
            "| `{}` | `{}:{}` | {} | {} |",
            cell(&x.qualname),
            cell(&x.file),
            x.line,
            verdict_text(x.verdict, f.migration),
            x.main_reason()
                .map(|m| cell(&format!("{} {}", m.code, m.message)))
                .unwrap_or_else(|| "-".into())
        );
    }
    if blocked.len() > TOP_HOTSPOTS {
        let _ = writeln!(s, "\n… and {} more.", blocked.len() - TOP_HOTSPOTS);
    }
}

fn migrations(s: &mut String, r: &Report) {
    let _ = writeln!(s, "\n### Migrated functions\n");
    if r.migrations.is_empty() {
        s.push_str(
            "None yet: `port migrate --function NAME` moves a `cuda` function to the GPU.\n",
        );
        return;
    }
    s.push_str("| function | status | device | speedup | CPython | whole program (projected) | bandwidth |\n|---|---|---|---|---:|---|---|\n");
    for e in &r.migrations {
        let m = &e.migration;
        let status = if m.status == MigrationStatus::Verified && !m.is_verified() {
            "verified, but its check failed".to_string()
        } else if m.reasons.is_empty() {
            m.status.to_string()
        } else {
            format!("{}: {}", m.status, m.reasons_line())
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            cell(&m.function),
            cell(&status),
            cell(&timing::device_text(m)),
            cell(&timing::speedups_text(m)),
            timing::cpython_text(m),
            cell(&timing::projection_text(m)),
            timing::bandwidth_text(m).unwrap_or_else(|| "-".into()),
        );
    }
}

fn blockers(s: &mut String, r: &Report) {
    let _ = writeln!(s, "\n### Top blockers\n");
    if r.blockers.is_empty() {
        s.push_str("Nothing keeps a function off the GPU.\n");
        return;
    }
    for b in r.blockers.iter().take(TOP_BLOCKERS) {
        let n = b.functions.len();
        let names: Vec<String> = b
            .functions
            .iter()
            .take(5)
            .map(|f| format!("`{f}`"))
            .collect();
        let more = if n > 5 {
            format!(", … {} more", n - 5)
        } else {
            String::new()
        };
        let time = b
            .time_pct
            .map(|t| format!("; {} of sampled time", pct(t)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "- {n} function{} blocked by {}: {} ({}{more}{time})",
            plural(n),
            b.code,
            b.name,
            names.join(", ")
        );
    }
    if r.blockers.len() > TOP_BLOCKERS {
        let _ = writeln!(
            s,
            "- … and {} more codes: `port report --format html` shows them all.",
            r.blockers.len() - TOP_BLOCKERS
        );
    }
    s.push_str("\n`port explain CODE` says what a code means and how to fix it.\n");
}
