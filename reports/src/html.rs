//! `port report --format html`: one self-contained page (no network: the
//! CSS, the script and the flame graph are inline HTML) in the manner of
//! Numba's `--annotate-html` and Cython's `-a`: every file's source with each
//! line shaded by its function's verdict, liftable loops marked, findings
//! inline with their explanation a click away, a heat bar per line from the
//! line-level profile, the flame graph, and an index of functions sortable by
//! time.

use std::collections::HashMap;
use std::fmt::Write;

use port_analyzer::model::{FunctionReport, Severity, Verdict};
use port_analyzer::rules;

use crate::coverage::Basis;
use crate::markdown::{basis_sentence, delta, figures, pct};
use crate::profile::ProfileView;
use crate::report::Report;
use crate::timing::{self, Speedups};

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Cuda => "v-cuda",
        Verdict::Nopython => "v-nopython",
        Verdict::Object => "v-object",
    }
}

fn severity_class(s: Severity) -> &'static str {
    match s {
        Severity::Object => "sev-object",
        Severity::Blocker => "sev-blocker",
        Severity::Performance => "sev-performance",
        Severity::Note => "sev-note",
    }
}

/// A finding's message as HTML: escaped, with its `code spans` as <code>.
fn message_html(message: &str) -> String {
    let parts: Vec<&str> = message.split('`').collect();
    if parts.len().is_multiple_of(2) {
        // An unpaired backtick: leave the text as it is.
        return escape(message);
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i % 2 == 1 {
                format!("<code>{}</code>", escape(p))
            } else {
                escape(p)
            }
        })
        .collect()
}

/// The explanation of a code, rendered from the catalogue's Markdown.
fn rule_doc_html(code: &str) -> String {
    match rules::rule(code) {
        Some(r) => {
            let mut out = String::new();
            pulldown_cmark::html::push_html(&mut out, pulldown_cmark::Parser::new(r.doc));
            out
        }
        None => "<p>No explanation in this port's catalogue.</p>".into(),
    }
}

/// Renders the page. `source` reads a file as the analysis names it; a file
/// it cannot read is listed with its functions but without its source.
pub fn render(r: &Report, source: &dyn Fn(&str) -> Option<String>) -> String {
    let mut s = String::with_capacity(64 * 1024);
    let title = format!("port report: {}", r.app.root);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    let _ = writeln!(
        s,
        "<header><h1>port report <code>{}</code></h1><p class=\"sub\">{} function{} in {} file{} · {}</p></header>",
        escape(&r.root),
        r.functions.len(),
        if r.functions.len() == 1 { "" } else { "s" },
        r.files.len(),
        if r.files.len() == 1 { "" } else { "s" },
        escape(&basis_sentence(r).replace('`', ""))
    );
    coverage(&mut s, r);
    gate(&mut s, r);
    function_index(&mut s, r);
    migrations(&mut s, r);
    flame_graph(&mut s, r);
    sources(&mut s, r, source);
    legend(&mut s);
    let _ = write!(s, "<script>{JS}</script>\n</body>\n</html>\n");
    s
}

fn coverage(s: &mut String, r: &Report) {
    s.push_str("<section id=\"coverage\"><h2>Coverage</h2><div class=\"cards\">");
    let now = figures(&r.coverage);
    let deltas = r.baseline.as_ref().map(|b| {
        [
            b.delta.gpu_eligible_pct,
            b.delta.migrated_pct,
            b.delta.nopython_pct,
            b.delta.object_pct,
        ]
    });
    let classes = ["v-cuda", "migrated", "v-nopython", "v-object"];
    for (i, (name, v)) in now.iter().enumerate() {
        let d = deltas
            .map(|d| format!("<span class=\"delta\">{} vs baseline</span>", delta(d[i])))
            .unwrap_or_default();
        let _ = write!(
            s,
            "<div class=\"card {}\"><div class=\"figure\">{}</div><div class=\"name\">{}</div>\
             <div class=\"bar\"><span style=\"width:{:.1}%\"></span></div>{d}</div>",
            classes[i],
            pct(*v),
            escape(name),
            v.clamp(0.0, 100.0)
        );
    }
    s.push_str("</div>");
    if r.coverage.basis == Basis::Functions {
        s.push_str("<p class=\"note\">Static analysis: the figures are shares of functions, not of time.</p>");
    }
    if let Some(b) = &r.baseline {
        let _ = write!(
            s,
            "<p class=\"note\">Baseline <code>{}</code>, tolerance {:.1} points.</p>",
            escape(&b.file),
            b.tolerance_pct
        );
    }
    s.push_str("</section>\n");
}

fn gate(s: &mut String, r: &Report) {
    let Some(g) = &r.gate else { return };
    if g.passed() {
        s.push_str("<section id=\"gate\" class=\"passed\"><h2>CI gate: passed</h2></section>\n");
        return;
    }
    s.push_str("<section id=\"gate\" class=\"failed\"><h2>CI gate: failed</h2><ul>");
    for f in &g.failures {
        let _ = write!(s, "<li>{}</li>", escape(f));
    }
    s.push_str("</ul></section>\n");
}

fn opt_pct(v: Option<f64>) -> (String, String) {
    match v {
        Some(p) => (format!("{p:.2}"), pct(p)),
        None => ("-1".into(), "-".into()),
    }
}

fn function_index(s: &mut String, r: &Report) {
    s.push_str("<section id=\"functions\"><h2>Functions</h2>");
    if !r.profiled {
        s.push_str("<p class=\"note\">No profile: run <code>port analyze APP.py</code> to rank functions by time.</p>");
    }
    let default_sort = if r.profiled { "total" } else { "" };
    let _ = write!(
        s,
        "<table id=\"function-index\" class=\"sortable\" data-default-sort=\"{default_sort}\"><thead><tr>\
         <th data-col=\"name\" data-type=\"text\">function</th>\
         <th data-col=\"where\" data-type=\"text\">file:line</th>\
         <th data-col=\"self\" data-type=\"num\">self %</th>\
         <th data-col=\"total\" data-type=\"num\">total %</th>\
         <th data-col=\"verdict\" data-type=\"text\">verdict</th>\
         <th data-col=\"migration\" data-type=\"text\">migration</th>\
         <th data-col=\"reason\" data-type=\"text\">main reason</th></tr></thead><tbody>"
    );
    for (i, e) in r.functions.iter().enumerate() {
        let f = &e.function;
        let (self_v, self_t) = opt_pct(f.self_pct);
        let (total_v, total_t) = opt_pct(f.total_pct);
        let reason = f
            .main_reason()
            .map(|x| {
                format!(
                    "<code>{}</code> {}",
                    escape(&x.code),
                    message_html(&x.message)
                )
            })
            .unwrap_or_else(|| "-".into());
        let _ = write!(
            s,
            "<tr class=\"fn-row\" data-key=\"{key}\">\
             <td data-value=\"{q}\"><a href=\"#fn-{i}\">{q}</a></td>\
             <td data-value=\"{file}:{line:08}\">{file}:{line}</td>\
             <td class=\"num\" data-value=\"{self_v}\">{self_t}</td>\
             <td class=\"num\" data-value=\"{total_v}\">{total_t}</td>\
             <td data-value=\"{v}\"><span class=\"badge {vc}\">{v}</span></td>\
             <td data-value=\"{m}\">{m}</td><td>{reason}</td></tr>",
            key = escape(&e.key),
            q = escape(&f.qualname),
            file = escape(&f.file),
            line = f.line,
            v = f.verdict,
            vc = verdict_class(f.verdict),
            m = e
                .migration
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into()),
        );
    }
    s.push_str("</tbody></table></section>\n");
}

fn migrations(s: &mut String, r: &Report) {
    s.push_str("<section id=\"migrations\"><h2>Migrated functions</h2>");
    if r.migrations.is_empty() {
        s.push_str("<p class=\"note\">None yet: <code>port migrate --function NAME</code> moves a <code>cuda</code> function to the GPU.</p></section>\n");
        return;
    }
    s.push_str(
        "<table id=\"migration-table\"><thead><tr><th>function</th><th>status</th><th>device</th><th>inputs</th>\
                <th>max rel. error</th><th>kernel speedup</th><th>end-to-end speedup</th>\
                <th>CPython</th><th>whole program (projected)</th><th>bandwidth</th></tr></thead><tbody>",
    );
    for e in &r.migrations {
        let m = &e.migration;
        let v = m.verification.as_ref();
        let t = m.timing.as_ref();
        let repeats = t.and_then(|t| t.repeats.as_ref());
        // "median of 20 runs" for a cell's title, when the record says.
        let runs = |n: Option<u64>| {
            n.map(|n| format!("median of {n} run{}", if n == 1 { "" } else { "s" }))
        };
        let speedups = match timing::speedups(m) {
            Speedups::None => "<td class=\"num\">-</td><td class=\"num\">-</td>".to_string(),
            Speedups::Simulator => format!(
                "<td colspan=\"2\" class=\"no-gpu\">{}</td>",
                escape(timing::NO_GPU_TIMING)
            ),
            Speedups::Gpu { kernel, end_to_end } => {
                let kernel_title = [
                    t.and_then(|t| t.kernel_s)
                        .map(|x| format!("kernel {}", timing::seconds(x))),
                    runs(repeats.and_then(|r| r.kernel)),
                ];
                let e2e_title = [
                    t.and_then(|t| t.end_to_end_s)
                        .map(|x| format!("end to end {}", timing::seconds(x))),
                    m.projection
                        .as_ref()
                        .and_then(|p| p.transfer_s)
                        .map(|x| format!("transfers {}", timing::seconds(x))),
                    runs(repeats.and_then(|r| r.end_to_end)),
                ];
                format!(
                    "{}{}",
                    speedup_cell(kernel, &kernel_title),
                    speedup_cell(end_to_end, &e2e_title)
                )
            }
        };
        let mut device = escape(&timing::device_text(m));
        let detail = timing::device_detail(m);
        if !detail.is_empty() {
            let _ = write!(device, " <span class=\"note\">({})</span>", escape(&detail));
        }
        let cpython_title = runs(repeats.and_then(|r| r.cpython))
            .map(|x| format!(" title=\"{}\"", escape(&x)))
            .unwrap_or_default();
        let projection_class = if timing::not_profitable(m) {
            " class=\"not-profitable\""
        } else {
            ""
        };
        let bandwidth = timing::bandwidth_text(m).unwrap_or_else(|| "-".into());
        let bandwidth_title = m
            .bandwidth
            .as_ref()
            .filter(|_| !m.on_simulator())
            .and_then(|b| b.bytes)
            .map(|b| format!(" title=\"{} bytes moved per call\"", b))
            .unwrap_or_default();
        let mut status = m.status.to_string();
        if !m.reasons.is_empty() {
            status = format!("{status}: {}", m.reasons_line());
        }
        let status = message_html(&status);
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td>{}</td><td>{device}</td><td>{}</td><td class=\"num\">{}</td>\
             {speedups}<td class=\"num\"{cpython_title}>{}</td><td{projection_class}>{}</td>\
             <td{bandwidth_title}>{}</td></tr>",
            escape(&m.function),
            status,
            escape(v.map(|v| v.inputs.as_str()).unwrap_or("-")),
            v.and_then(|v| v.max_rel_err)
                .map(|x| format!("{x:.1e}"))
                .unwrap_or_else(|| "-".into()),
            escape(&timing::cpython_text(m)),
            escape(&timing::projection_text(m)),
            escape(&bandwidth),
        );
    }
    s.push_str("</tbody></table></section>\n");
}

/// A speedup cell, with what it rests on as its title.
fn speedup_cell(v: Option<f64>, title: &[Option<String>]) -> String {
    let title: Vec<&str> = title.iter().flatten().map(String::as_str).collect();
    let title = if title.is_empty() {
        String::new()
    } else {
        format!(" title=\"{}\"", escape(&title.join(" · ")))
    };
    format!(
        "<td class=\"num\"{title}>{}</td>",
        v.map(timing::speedup).unwrap_or_else(|| "-".into())
    )
}

/// The flame graph, drawn as HTML: one row per stack depth, the root (all
/// samples) on top spanning the full width, each frame as wide as its
/// share of the samples (frames under 0.1% are left out, as inferno does).
/// App functions are coloured by verdict. Hovering a frame shows its name
/// and samples; clicking one shows them under the graph. Deep stacks
/// (imports, libraries) scroll inside the graph instead of stretching it.
fn flame_graph(s: &mut String, r: &Report) {
    s.push_str("<section id=\"flamegraph\"><h2>Flame graph</h2>");
    let stacks = r
        .profile
        .as_ref()
        .map(|p| p.folded_stacks.as_slice())
        .unwrap_or(&[]);
    let tree = FlameNode::from_folded(stacks);
    if tree.samples == 0 {
        let why = if r.profile.is_some() {
            "The profile has no sampled stacks"
        } else {
            "No profile"
        };
        let _ = writeln!(
            s,
            "<p class=\"note\">{why}: run <code>port analyze APP.py</code> to sample a run.</p></section>"
        );
        return;
    }
    let verdicts = frame_verdicts(r);
    let mut frames = String::new();
    let mut depth = 0;
    tree.render(
        &mut frames,
        &FrameAt {
            left: 0.0,
            depth: 0,
            total: tree.samples,
        },
        &verdicts,
        &mut depth,
    );
    let _ = writeln!(
        s,
        "<p class=\"note\">Callers above callees; width is the share of {} samples. \
         Hover a frame for its numbers, click it to keep them below.</p>\
         <div class=\"fg-wrap\"><div class=\"fg\" style=\"height:{}px\">{frames}</div></div>\
         <p id=\"fg-detail\" class=\"note\">&nbsp;</p></section>",
        tree.samples,
        (depth + 1) * FRAME_HEIGHT_PX
    );
}

/// Height of one row of the flame graph.
const FRAME_HEIGHT_PX: usize = 18;

/// Frames narrower than this share of the samples are not drawn.
const MIN_FRAME_SHARE: f64 = 0.001;

/// One frame of the merged stacks: its samples (its own and its callees').
#[derive(Default)]
struct FlameNode {
    samples: u64,
    children: std::collections::BTreeMap<String, FlameNode>,
}

/// Where a frame is drawn.
struct FrameAt {
    /// Share of all samples to its left.
    left: f64,
    depth: usize,
    total: u64,
}

impl FlameNode {
    /// Merges folded stacks (`outer;inner;leaf COUNT`).
    fn from_folded(stacks: &[String]) -> FlameNode {
        let mut root = FlameNode::default();
        for line in stacks {
            let Some((path, count)) = line.trim().rsplit_once(' ') else {
                continue;
            };
            let Ok(count) = count.parse::<u64>() else {
                continue;
            };
            root.samples += count;
            let mut node = &mut root;
            for name in path.split(';').filter(|n| !n.is_empty()) {
                node = node.children.entry(name.to_string()).or_default();
                node.samples += count;
            }
        }
        root
    }

    /// Self samples: those not in any callee.
    fn own(&self) -> u64 {
        self.samples
            - self
                .children
                .values()
                .map(|c| c.samples)
                .sum::<u64>()
                .min(self.samples)
    }

    fn render(
        &self,
        out: &mut String,
        at: &FrameAt,
        verdicts: &HashMap<String, Verdict>,
        deepest: &mut usize,
    ) {
        let name = if at.depth == 0 { "all" } else { "" };
        self.render_named(out, name, at, verdicts, deepest);
    }

    fn render_named(
        &self,
        out: &mut String,
        name: &str,
        at: &FrameAt,
        verdicts: &HashMap<String, Verdict>,
        deepest: &mut usize,
    ) {
        let share = self.samples as f64 / at.total as f64;
        if share < MIN_FRAME_SHARE {
            return;
        }
        *deepest = (*deepest).max(at.depth);
        let class = if at.depth == 0 {
            "fg-root".to_string()
        } else {
            match verdicts.get(name) {
                Some(v) => format!("v-{}", v.as_str()),
                None => "fg-lib".to_string(),
            }
        };
        let pct = 100.0 * share;
        let _ = write!(
            out,
            "<div class=\"fg-frame {class}\" style=\"left:{:.4}%;width:{:.4}%;top:{}px\" \
             title=\"{} — {} ({pct:.1}%), {} in the frame itself\" data-name=\"{}\" \
             data-samples=\"{}\" data-self=\"{}\" data-pct=\"{pct:.2}\"><span>{}</span></div>",
            100.0 * at.left,
            pct,
            at.depth * FRAME_HEIGHT_PX,
            escape(name),
            crate::text::count(self.samples as usize, "sample", "samples"),
            self.own(),
            escape(name),
            self.samples,
            self.own(),
            escape(name)
        );
        let mut left = at.left;
        for (child, node) in &self.children {
            node.render_named(
                out,
                child,
                &FrameAt {
                    left,
                    depth: at.depth + 1,
                    total: at.total,
                },
                verdicts,
                deepest,
            );
            left += node.samples as f64 / at.total as f64;
        }
    }
}

/// The verdict of each app function, by the frame label the profile gives
/// it (`name (file.py)`, qualified or not).
fn frame_verdicts(r: &Report) -> HashMap<String, Verdict> {
    let mut m = HashMap::new();
    for e in &r.functions {
        let f = &e.function;
        let base = f.file.rsplit(['/', '\\']).next().unwrap_or(&f.file);
        for name in [&f.qualname, &f.name] {
            m.insert(format!("{name} ({base})"), f.verdict);
        }
    }
    m
}

/// For each line of a file, the innermost function that contains it.
fn line_owners<'a>(
    fns: &[(usize, &'a FunctionReport)],
    n_lines: usize,
) -> Vec<Option<(usize, &'a FunctionReport)>> {
    let mut owner: Vec<Option<(usize, &FunctionReport)>> = vec![None; n_lines + 1];
    // Wider functions first, so nested ones overwrite their lines.
    let mut by_width: Vec<&(usize, &FunctionReport)> = fns.iter().collect();
    by_width.sort_by_key(|(_, f)| std::cmp::Reverse(f.end_line.saturating_sub(f.line)));
    for &&(i, f) in &by_width {
        let end = (f.end_line as usize).min(n_lines);
        for slot in owner.iter_mut().take(end + 1).skip(f.line as usize) {
            *slot = Some((i, f));
        }
    }
    owner
}

fn sources(s: &mut String, r: &Report, source: &dyn Fn(&str) -> Option<String>) {
    s.push_str("<section id=\"source\"><h2>Annotated source</h2>");
    let max_line_pct = r
        .profile
        .as_ref()
        .map(|p| p.hot_lines.iter().map(|h| h.self_pct).fold(0.0, f64::max))
        .unwrap_or(0.0);
    if r.profile.as_ref().is_none_or(|p| p.hot_lines.is_empty()) {
        s.push_str("<p class=\"note\">No line-level profile, so no heat bars: run <code>port analyze APP.py</code> to sample a run.</p>");
    }
    for (file_i, file) in r.files.iter().enumerate() {
        let fns: Vec<(usize, &FunctionReport)> = r
            .functions
            .iter()
            .enumerate()
            .filter(|(_, e)| &e.function.file == file)
            .map(|(i, e)| (i, &e.function))
            .collect();
        let open = if fns.is_empty() { "" } else { " open" };
        let _ = write!(
            s,
            "<details class=\"file\" id=\"file-{file_i}\"{open}><summary><code>{}</code> <span class=\"count\">{} function{}</span></summary>",
            escape(file),
            fns.len(),
            if fns.len() == 1 { "" } else { "s" }
        );
        match source(file) {
            Some(text) => annotated_file(s, r, file, &text, &fns, max_line_pct),
            None => {
                let _ = write!(
                    s,
                    "<p class=\"note\">Source not available here: run <code>port report</code> where <code>{}</code> can be read.</p><ul class=\"fn-list\">",
                    escape(file)
                );
                for (i, f) in &fns {
                    let _ = write!(
                        s,
                        "<li id=\"fn-{i}\" data-key=\"{}\"><span class=\"badge {}\">{}</span> <code>{}</code> line {}</li>",
                        escape(&r.functions[*i].key),
                        verdict_class(f.verdict),
                        f.verdict,
                        escape(&f.qualname),
                        f.line
                    );
                }
                s.push_str("</ul>");
            }
        }
        s.push_str("</details>\n");
    }
    s.push_str("</section>\n");
}

fn annotated_file(
    s: &mut String,
    r: &Report,
    file: &str,
    text: &str,
    fns: &[(usize, &FunctionReport)],
    max_line_pct: f64,
) {
    let lines: Vec<&str> = text.lines().collect();
    let owner = line_owners(fns, lines.len());
    let heat: HashMap<u32, f64> = r
        .profile
        .as_ref()
        .map(|p: &ProfileView| p.lines_of(file).map(|h| (h.line, h.self_pct)).collect())
        .unwrap_or_default();
    // Functions whose `def` line lies past the end of the file still get an anchor.
    let starts: HashMap<u32, Vec<usize>> = fns.iter().fold(HashMap::new(), |mut m, (i, f)| {
        m.entry(f.line.min(lines.len().max(1) as u32))
            .or_default()
            .push(*i);
        m
    });
    s.push_str("<table class=\"src\"><tbody>");
    for (idx, code) in lines.iter().enumerate() {
        let n = idx as u32 + 1;
        let own = owner.get(n as usize).copied().flatten();
        let mut classes = vec!["ln"];
        if let Some((_, f)) = own {
            classes.push(verdict_class(f.verdict));
            if f.liftable_loops
                .iter()
                .any(|l| l.line <= n && n <= l.end_line)
            {
                classes.push("liftable");
            }
        }
        let (bar, title) = match heat.get(&n) {
            Some(&p) if max_line_pct > 0.0 => (
                format!(
                    "<span style=\"width:{:.1}%\"></span>",
                    100.0 * p / max_line_pct
                ),
                format!(" title=\"{p:.1}% of samples\""),
            ),
            _ => (String::new(), String::new()),
        };
        let _ = write!(
            s,
            "<tr class=\"{}\"><td class=\"heat\"{title}>{bar}</td><td class=\"no\">{n}</td><td class=\"code\">",
            classes.join(" ")
        );
        for &i in starts.get(&n).into_iter().flatten() {
            let e = &r.functions[i];
            let f = &e.function;
            let time = match (f.self_pct, f.total_pct) {
                (Some(a), Some(b)) => format!(" · self {} · total {}", pct(a), pct(b)),
                _ => String::new(),
            };
            let migrated = e
                .migration
                .map(|m| format!(" · migration {m}"))
                .unwrap_or_default();
            let _ = write!(
                s,
                "<div class=\"fn-head\" id=\"fn-{i}\" data-key=\"{}\"><span class=\"badge {}\">{}</span> <b>{}</b>{time}{migrated}</div>",
                escape(&e.key),
                verdict_class(f.verdict),
                f.verdict,
                escape(&f.qualname)
            );
        }
        if let Some((_, f)) = own {
            for l in f.liftable_loops.iter().filter(|l| l.line == n) {
                let _ = write!(
                    s,
                    "<span class=\"lift-tag\">liftable loop, lines {}–{}</span>",
                    l.line, l.end_line
                );
            }
        }
        let _ = write!(s, "<pre>{}</pre>", escape(code));
        for (_, f) in fns {
            for x in f.findings.iter().filter(|x| x.line == n) {
                let _ = write!(
                    s,
                    "<details class=\"finding {}\" data-code=\"{}\"><summary><code>{}</code> {} <span class=\"in\">in {}</span></summary><div class=\"doc\">{}</div></details>",
                    severity_class(x.severity),
                    escape(&x.code),
                    escape(&x.code),
                    message_html(&x.message),
                    escape(&f.qualname),
                    rule_doc_html(&x.code)
                );
            }
        }
        s.push_str("</td></tr>");
    }
    s.push_str("</tbody></table>");
}

fn legend(s: &mut String) {
    s.push_str(
        "<footer><h2>Legend</h2><p><span class=\"badge v-cuda\">cuda</span> port can turn it into a GPU kernel · \
         <span class=\"badge v-nopython\">nopython</span> <code>@njit</code> compiles it, the GPU cannot run it · \
         <span class=\"badge v-object\">object</span> needs Numba's object mode · \
         <span class=\"lift-tag\">liftable loop</span> a loop nopython mode would compile on its own · \
         the bar left of a line number is that line's share of samples. \
         Flame graph: app frames coloured by verdict, library frames in blue. \
         <code>port explain CODE</code> prints any explanation.</p></footer>\n",
    );
}

const CSS: &str = r#"
:root{--cuda:#e3f5e1;--cuda-b:#3c9a3c;--nop:#fff3d1;--nop-b:#c98f00;--obj:#fde4e4;--obj-b:#c93c3c;--mig:#e2ecff;--mig-b:#3a66c4;--ink:#1d232b;--mute:#5e6875;--line:#d9dee5}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);margin:0 auto;max-width:1200px;padding:16px 24px 48px;background:#fbfcfd}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
code,pre{font-family:"DejaVu Sans Mono",ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.sub,.note{color:var(--mute)}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:12px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:#fff}
.card .figure{font-size:24px;font-weight:600}.card .name{color:var(--mute)}
.card .bar{height:6px;background:#eef1f4;border-radius:3px;margin-top:6px;overflow:hidden}
.card .bar span{display:block;height:100%}
.card.v-cuda .bar span{background:var(--cuda-b)}.card.migrated .bar span{background:var(--mig-b)}
.card.v-nopython .bar span{background:var(--nop-b)}.card.v-object .bar span{background:var(--obj-b)}
.delta{font-size:12px;color:var(--mute)}
#gate{border-radius:8px;padding:4px 14px;margin-top:16px}#gate h2{border:0;margin:8px 0}
#gate.passed{background:var(--cuda)}#gate.failed{background:var(--obj)}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.no-gpu{color:var(--mute);text-align:center;font-style:italic}td.not-profitable{color:var(--obj-b)}
table.sortable th{cursor:pointer;user-select:none;white-space:nowrap}
table.sortable th[aria-sort=ascending]::after{content:" ▲"}table.sortable th[aria-sort=descending]::after{content:" ▼"}
.badge{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px;font-weight:600;border:1px solid}
.badge.v-cuda{background:var(--cuda);border-color:var(--cuda-b);color:#1f5f1f}
.badge.v-nopython{background:var(--nop);border-color:var(--nop-b);color:#6b4c00}
.badge.v-object{background:var(--obj);border-color:var(--obj-b);color:#7a1f1f}
.fg-wrap{max-height:560px;overflow:auto;border:1px solid var(--line);border-radius:8px;background:#fff}
.fg{position:relative;width:100%;font:12px/17px "DejaVu Sans Mono",ui-monospace,Menlo,Consolas,monospace}
.fg-frame{position:absolute;height:17px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;padding:0 3px;border:1px solid #fff;border-width:0 1px 1px 0;cursor:pointer;background:#a9c7e0;color:#14202c}
.fg-frame span{pointer-events:none}
.fg-frame:hover,.fg-frame.picked{outline:2px solid var(--ink);outline-offset:-2px;z-index:1}
.fg-frame.fg-root{background:#c9d3de}.fg-frame.fg-lib{background:#b9d7e8}
.fg-frame.v-cuda{background:#7cc97c}.fg-frame.v-nopython{background:#f0c35a}.fg-frame.v-object{background:#eb8a8a}
details.file{border:1px solid var(--line);border-radius:8px;margin:10px 0;background:#fff}
details.file>summary{padding:6px 10px;cursor:pointer;background:#f3f5f8;border-radius:8px 8px 0 0}
.count{color:var(--mute);font-size:12px}
table.src td{border:0;padding:0 6px}
table.src pre{margin:0;white-space:pre-wrap;word-break:break-word}
table.src td.no{color:var(--mute);text-align:right;width:1%;white-space:nowrap;font-family:"DejaVu Sans Mono",monospace;font-size:12px}
table.src td.heat{width:64px;min-width:64px;padding:2px 4px}
table.src td.heat span{display:block;height:10px;margin-top:3px;background:linear-gradient(90deg,#f9a825,#d84315);border-radius:2px}
tr.v-cuda td.code{background:var(--cuda)}tr.v-nopython td.code{background:var(--nop)}tr.v-object td.code{background:var(--obj)}
tr.liftable td.code{box-shadow:inset 4px 0 0 var(--mig-b)}
.lift-tag{display:inline-block;font-size:11px;background:var(--mig);color:#203e7d;border:1px solid var(--mig-b);border-radius:4px;padding:0 5px;margin:2px 0}
.fn-head{margin-top:6px;font-size:13px}
details.finding{margin:2px 0 4px 12px;border-left:3px solid var(--mute);padding:1px 8px;background:rgba(255,255,255,.7)}
details.finding>summary{cursor:pointer}
details.finding.sev-object{border-color:var(--obj-b)}details.finding.sev-blocker{border-color:var(--nop-b)}
details.finding.sev-performance{border-color:var(--mig-b)}details.finding.sev-note{border-color:#9aa4b1}
details.finding .in{color:var(--mute);font-size:12px}
details.finding .doc{padding:2px 4px 8px;font-size:13px}
details.finding .doc h2{font-size:14px;border:0;margin:10px 0 4px}
details.finding .doc pre{background:#f3f5f8;padding:6px 8px;border-radius:4px;white-space:pre}
footer{margin-top:32px;color:var(--mute)}
"#;

const JS: &str = r#"
(function () {
  "use strict";
  function cellValue(row, col, type) {
    var v = row.cells[col].getAttribute("data-value");
    if (v === null) { v = row.cells[col].textContent; }
    return type === "num" ? parseFloat(v) : v.toLowerCase();
  }
  function sortBy(table, th, descending) {
    var heads = table.tHead.rows[0].cells;
    var col = Array.prototype.indexOf.call(heads, th);
    var type = th.getAttribute("data-type");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, col, type), y = cellValue(b, col, type);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () {
        var wasAscending = th.getAttribute("aria-sort") === "ascending";
        var numeric = th.getAttribute("data-type") === "num";
        var descending = th.hasAttribute("aria-sort") ? wasAscending : numeric;
        sortBy(table, th, descending);
      });
    });
    var first = table.getAttribute("data-default-sort");
    if (first) {
      var th = table.querySelector('th[data-col="' + first + '"]');
      if (th) { sortBy(table, th, true); }
    }
  });
  var detail = document.getElementById("fg-detail");
  Array.prototype.forEach.call(document.querySelectorAll(".fg-frame"), function (f) {
    f.addEventListener("click", function () {
      Array.prototype.forEach.call(document.querySelectorAll(".fg-frame.picked"), function (p) {
        p.classList.remove("picked");
      });
      f.classList.add("picked");
      detail.textContent = f.getAttribute("data-name") + ": " + f.getAttribute("data-samples") +
        " samples, " + f.getAttribute("data-pct") + "% of the run, " + f.getAttribute("data-self") +
        " in the frame itself";
    });
  });
  document.body.setAttribute("data-ready", "1");
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_code_spans_and_escape_the_rest() {
        assert_eq!(
            message_html("`acc` carries <a> value"),
            "<code>acc</code> carries &lt;a&gt; value"
        );
        assert_eq!(message_html("odd ` tick"), "odd ` tick");
    }
}
