//! Terminal tables for `port analyze`.

pub use crate::text::count;
use comfy_table::{presets, Attribute, Cell, CellAlignment, Color, ContentArrangement, Table};
use port_analyzer::model::{Analysis, FunctionReport, Verdict};

/// How a table is drawn: colour only on a terminal that wants it.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    /// Width to wrap to; `None` lets comfy-table decide.
    pub width: Option<u16>,
}

fn verdict_cell(v: Verdict, style: Style) -> Cell {
    let cell = Cell::new(v.as_str());
    if !style.color {
        return cell;
    }
    match v {
        Verdict::Cuda => cell.fg(Color::Green).add_attribute(Attribute::Bold),
        Verdict::Nopython => cell.fg(Color::Yellow),
        Verdict::Object => cell.fg(Color::Red),
    }
}

fn new_table(style: Style) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    if let Some(w) = style.width {
        t.set_width(w);
    }
    if style.color {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    t
}

fn reason(f: &FunctionReport) -> String {
    match f.main_reason() {
        Some(r) => format!("{} {} (line {})", r.code, r.message, r.line),
        None => "-".into(),
    }
}

/// One row per function: name, file:line, verdict, first reason. With a
/// profile, ranked by total time with self and total columns.
pub fn analysis_table(a: &Analysis, style: Style) -> String {
    let mut t = new_table(style);
    let profiled = a.profiled;
    let mut header = vec!["function", "file:line"];
    if profiled {
        header.extend(["self %", "total %"]);
    }
    header.extend(["verdict", "main reason"]);
    t.set_header(header);
    let mut rows: Vec<&FunctionReport> = a.functions.iter().collect();
    if profiled {
        rows.sort_by(|x, y| {
            y.total_pct
                .unwrap_or(0.0)
                .total_cmp(&x.total_pct.unwrap_or(0.0))
                .then(x.line.cmp(&y.line))
        });
    }
    let unsampled = if profiled {
        let before = rows.len();
        rows.retain(|f| f.total_pct.unwrap_or(0.0) > 0.0);
        before - rows.len()
    } else {
        0
    };
    for f in rows {
        let mut row = vec![
            Cell::new(&f.qualname),
            Cell::new(format!("{}:{}", f.file, f.line)),
        ];
        if profiled {
            for v in [f.self_pct, f.total_pct] {
                row.push(
                    Cell::new(v.map(|p| format!("{p:.1}")).unwrap_or_else(|| "-".into()))
                        .set_alignment(CellAlignment::Right),
                );
            }
        }
        row.push(verdict_cell(f.verdict, style));
        row.push(Cell::new(reason(f)));
        t.add_row(row);
    }
    let mut out = t.to_string();
    if unsampled > 0 {
        out.push_str(&format!(
            "\n{} no samples (`--json` lists them all)",
            if unsampled == 1 {
                "1 more function had".to_string()
            } else {
                format!("{unsampled} more functions had")
            }
        ));
    }
    out
}

/// The one-line coverage summary under the table.
pub fn coverage_line(a: &Analysis) -> String {
    let c = &a.coverage;
    let basis = if c.basis == "samples" {
        "of sampled time"
    } else {
        "of functions (static: no profile)"
    };
    format!(
        "GPU-eligible {:.1}% · nopython {:.1}% · object {:.1}% {basis} — {} in {}",
        c.gpu_eligible_pct,
        c.nopython_pct,
        c.object_pct,
        count(a.functions.len(), "function", "functions"),
        count(a.files.len(), "file", "files")
    )
}

/// Every finding of one function, for `port analyze --function`-style detail.
pub fn findings_table(f: &FunctionReport, style: Style) -> String {
    let mut t = new_table(style);
    t.set_header(vec!["line", "code", "severity", "message"]);
    for x in &f.findings {
        t.add_row(vec![
            Cell::new(x.line).set_alignment(CellAlignment::Right),
            Cell::new(&x.code),
            Cell::new(format!("{:?}", x.severity).to_lowercase()),
            Cell::new(&x.message),
        ]);
    }
    t.to_string()
}

/// The hottest lines of the profile (`analysis.profile.lines`), with their
/// source text: py-spy users' line-level view. `None` without a profile.
pub fn hot_lines_table(a: &Analysis, style: Style, limit: usize) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct HotLine {
        file: String,
        line: u32,
        function: String,
        self_pct: f64,
        #[serde(default)]
        source: String,
    }
    let lines: Vec<HotLine> = a
        .profile
        .as_ref()
        .and_then(|p| p.get("lines"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())?;
    if lines.is_empty() {
        return None;
    }
    let mut lines = lines;
    lines.sort_by(|x, y| y.self_pct.total_cmp(&x.self_pct));
    let mut t = new_table(style);
    t.set_header(vec!["self %", "function", "file:line", "source"]);
    for l in lines.iter().take(limit) {
        let function = l
            .function
            .rsplit_once('.')
            .map_or(l.function.as_str(), |(_, n)| n);
        t.add_row(vec![
            Cell::new(format!("{:.1}", l.self_pct)).set_alignment(CellAlignment::Right),
            Cell::new(function),
            Cell::new(format!("{}:{}", l.file, l.line)),
            Cell::new(l.source.trim()),
        ]);
    }
    Some(t.to_string())
}

/// `port report --format table`: the coverage figures (against the baseline
/// when there is one), every function, the migrations, the top blockers and
/// the gate's decision.
pub fn report_table(r: &crate::report::Report, style: Style) -> String {
    use crate::markdown::{basis_sentence, delta, figures, pct};
    use crate::timing;
    let mut out = String::new();

    let mut t = new_table(style);
    let now = figures(&r.coverage);
    match &r.baseline {
        Some(b) => {
            t.set_header(vec!["coverage", "now", "baseline", "change"]);
            let was = figures(&b.coverage);
            let d = [
                b.delta.gpu_eligible_pct,
                b.delta.migrated_pct,
                b.delta.nopython_pct,
                b.delta.object_pct,
            ];
            for i in 0..4 {
                t.add_row(vec![
                    Cell::new(now[i].0),
                    Cell::new(pct(now[i].1)).set_alignment(CellAlignment::Right),
                    Cell::new(pct(was[i].1)).set_alignment(CellAlignment::Right),
                    Cell::new(delta(d[i])).set_alignment(CellAlignment::Right),
                ]);
            }
        }
        None => {
            t.set_header(vec!["coverage", "now"]);
            for (name, v) in now {
                t.add_row(vec![
                    Cell::new(name),
                    Cell::new(pct(v)).set_alignment(CellAlignment::Right),
                ]);
            }
        }
    }
    out.push_str(&t.to_string());
    out.push('\n');
    out.push_str(&basis_sentence(r).replace('`', ""));
    out.push_str("\n\n");

    let mut t = new_table(style);
    let mut header = vec!["function", "file:line"];
    if r.profiled {
        header.extend(["self %", "total %"]);
    }
    header.extend(["verdict", "migration", "main reason"]);
    t.set_header(header);
    let mut rows: Vec<&crate::report::FunctionEntry> = r.functions.iter().collect();
    if r.profiled {
        rows.sort_by(|x, y| {
            y.function
                .total_pct
                .unwrap_or(0.0)
                .total_cmp(&x.function.total_pct.unwrap_or(0.0))
                .then_with(|| x.key.cmp(&y.key))
        });
    }
    for e in rows {
        let f = &e.function;
        let mut row = vec![
            Cell::new(&f.qualname),
            Cell::new(format!("{}:{}", f.file, f.line)),
        ];
        if r.profiled {
            for v in [f.self_pct, f.total_pct] {
                row.push(
                    Cell::new(v.map(|p| format!("{p:.1}")).unwrap_or_else(|| "-".into()))
                        .set_alignment(CellAlignment::Right),
                );
            }
        }
        row.push(verdict_cell(f.verdict, style));
        row.push(Cell::new(
            e.migration
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into()),
        ));
        row.push(Cell::new(reason(f)));
        t.add_row(row);
    }
    out.push_str(&t.to_string());
    out.push('\n');

    if !r.migrations.is_empty() {
        let mut t = new_table(style);
        t.set_header(vec![
            "migrated function",
            "status",
            "device",
            "speedup",
            "CPython",
            "whole program (projected)",
            "bandwidth",
        ]);
        for e in &r.migrations {
            let m = &e.migration;
            let mut projection = Cell::new(timing::projection_text(m));
            if style.color && timing::not_profitable(m) {
                projection = projection.fg(Color::Red);
            }
            t.add_row(vec![
                Cell::new(&m.function),
                Cell::new(m.status.as_str()),
                Cell::new(timing::device_text(m)),
                Cell::new(timing::speedups_text(m)),
                Cell::new(timing::cpython_text(m)).set_alignment(CellAlignment::Right),
                projection,
                Cell::new(timing::bandwidth_text(m).unwrap_or_else(|| "-".into())),
            ]);
        }
        out.push('\n');
        out.push_str(&t.to_string());
        out.push('\n');
    }

    if !r.blockers.is_empty() {
        out.push_str("\nTop blockers:\n");
        for b in r.blockers.iter().take(crate::markdown::TOP_BLOCKERS) {
            let n = b.functions.len();
            out.push_str(&format!(
                "  {n} function{} blocked by {}: {}\n",
                if n == 1 { "" } else { "s" },
                b.code,
                b.name
            ));
        }
    }
    if let Some(b) = &r.baseline {
        out.push_str(&format!("\nCompared with the baseline {}.\n", b.file));
    }
    if let Some(g) = &r.gate {
        if g.passed() {
            out.push_str("\nCI gate: passed.\n");
        } else {
            out.push_str("\nCI gate: failed:\n");
            for f in &g.failures {
                out.push_str(&format!("  {f}\n"));
            }
        }
    }
    out
}
