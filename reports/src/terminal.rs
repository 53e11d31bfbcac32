//! Terminal tables for `port analyze`.

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
    t.to_string()
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
        "GPU-eligible {:.1}% · nopython {:.1}% · object {:.1}% {basis} — {} functions in {} files",
        c.gpu_eligible_pct,
        c.nopython_pct,
        c.object_pct,
        a.functions.len(),
        a.files.len()
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
