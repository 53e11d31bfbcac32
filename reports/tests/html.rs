//! `--format html`: one self-contained page. Checked in a real headless
//! Chromium (Debian's `chromium`): the page loads with no console errors, its
//! script runs, it shows every function, and a screenshot is taken (a copy
//! is kept at `target/report-screenshot.png`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use port_reports::Format;

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        let out = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .expect("sh runs");
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !p.is_empty() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "no chromium on PATH: the HTML report test needs a headless Chromium; \
         `make test` installs it (scripts/setup.sh --oracle: apt-get install chromium)"
    );
}

struct Loaded {
    /// The DOM after the page's script ran.
    dom: String,
    /// What the page logged to the console, uncaught errors included.
    console: Vec<String>,
}

/// Loads `page` in headless Chromium: the DOM after scripts ran, the console
/// messages, and a screenshot written to `png`.
fn load(page: &Path, png: &Path) -> Loaded {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--window-size=1280,2600",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    assert!(
        png.metadata().map(|m| m.len() > 0).unwrap_or(false),
        "no screenshot at {}",
        png.display()
    );
    Loaded {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
    }
}

fn write_page(dir: &Path, name: &str) -> PathBuf {
    let html = render(&report(name), Format::Html, name);
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    page
}

/// The `data-key`s of the function index's rows, in the order shown.
fn index_order(dom: &str) -> Vec<String> {
    let start = dom.find("id=\"function-index\"").expect("function index");
    let end = start + dom[start..].find("</table>").unwrap();
    dom[start..end]
        .split("<tr class=\"fn-row\" data-key=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn chromium_shows_every_function_without_console_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["mixed_app", "multimodule", "seeds"] {
        let r = report(name);
        let page = write_page(tmp.path(), name);
        let png = tmp.path().join(format!("{name}.png"));
        let loaded = load(&page, &png);
        assert!(
            loaded.console.is_empty(),
            "{name}: console: {:#?}",
            loaded.console
        );
        assert!(
            loaded.dom.contains("data-ready=\"1\""),
            "{name}: the page's script did not finish"
        );
        for f in &r.functions {
            let key = format!("data-key=\"{}\"", f.key);
            // Once in the index, once at its source.
            assert_eq!(loaded.dom.matches(&key).count(), 2, "{name}: {}", f.key);
        }
        if name == "mixed_app" {
            // The script sorted the index by total time, hottest first.
            assert_eq!(
                index_order(&loaded.dom),
                [
                    "mixed_app.main",
                    "mixed_app.shade",
                    "mixed_app.fingerprint",
                    "mixed_app.running_total"
                ]
            );
            assert!(
                loaded.dom.contains("class=\"fg-frame fg-root\""),
                "flame graph"
            );
            let keep = repo().join("target/report-screenshot.png");
            std::fs::create_dir_all(keep.parent().unwrap()).unwrap();
            std::fs::copy(&png, keep).unwrap();
        }
    }
}

/// Measures the flame graph as Chromium lays it out: a probe script, run
/// after the page's own, writes the boxes of the section, the root frame and
/// every frame into `data-geometry` on <body>, after clicking `click`.
const PROBE: &str = r##"<script>
(function () {
  function box(e) { var r = e.getBoundingClientRect(); return {x: r.left, w: r.width, top: r.top, h: r.height}; }
  var out = {viewport: document.documentElement.clientWidth, frames: {}};
  var h2 = document.querySelector("#flamegraph h2");
  out.section = h2 ? box(h2) : null;
  var root = document.querySelector("#flamegraph .fg-root");
  out.root = root ? box(root) : null;
  var wrap = document.querySelector("#flamegraph .fg-wrap");
  out.wrap = wrap ? box(wrap) : null;
  Array.prototype.forEach.call(document.querySelectorAll("#flamegraph .fg-frame"), function (f) {
    var label = f.querySelector("span");
    out.frames[f.getAttribute("data-name")] = {
      box: box(f),
      samples: parseInt(f.getAttribute("data-samples"), 10),
      label_w: label ? label.getBoundingClientRect().width : 0,
      font_px: parseFloat(getComputedStyle(f).fontSize),
      title: f.getAttribute("title") || ""
    };
  });
  var pick = document.querySelector('#flamegraph .fg-frame[data-name="CLICK"]');
  if (pick) { pick.click(); }
  var detail = document.getElementById("fg-detail");
  out.detail = detail ? detail.textContent : "";
  document.body.setAttribute("data-geometry", JSON.stringify(out));
})();
</script></body>"##;

fn geometry(dom: &str) -> serde_json::Value {
    let start = dom.find("data-geometry=\"").expect("the probe ran") + "data-geometry=\"".len();
    let end = start + dom[start..].find('"').unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap()
}

#[test]
fn chromium_draws_a_full_width_proportional_readable_flame_graph() {
    let tmp = tempfile::tempdir().unwrap();
    let html = render(&report("mixed_app"), Format::Html, "mixed_app").replacen(
        "</body>",
        &PROBE.replace("CLICK", "shade (mixed_app.py)"),
        1,
    );
    let page = tmp.path().join("flame.html");
    std::fs::write(&page, html).unwrap();
    let loaded = load(&page, &tmp.path().join("flame.png"));
    assert!(loaded.console.is_empty(), "{:#?}", loaded.console);
    let g = geometry(&loaded.dom);
    let f = |v: &serde_json::Value| v.as_f64().unwrap();

    // The root spans the section's full width (the viewport less the page's
    // margins), not a fixed-size picture at its left.
    let root = &g["root"];
    assert!(!root.is_null(), "no root frame: {g}");
    let section_w = f(&g["section"]["w"]);
    assert!(section_w > 0.8 * f(&g["viewport"]), "{g}");
    assert!(
        f(&root["w"]) >= 0.98 * section_w,
        "root frame {} px wide in a {section_w} px section",
        root["w"]
    );
    // It is on screen where the section starts, not scrolled below a tower
    // of library frames.
    assert!(f(&root["top"]) - f(&g["wrap"]["top"]) < 20.0, "{g}");

    // Frames are as wide as their share of the samples (4120 in all).
    let frames = g["frames"].as_object().unwrap();
    let all = f(&frames["all"]["box"]["w"]);
    for name in [
        "main (mixed_app.py)",
        "shade (mixed_app.py)",
        "fingerprint (mixed_app.py)",
        "running_total (mixed_app.py)",
    ] {
        let fr = &frames[name];
        let share = f(&fr["samples"]) / 4120.0;
        let drawn = f(&fr["box"]["w"]) / all;
        assert!(
            (drawn - share).abs() < 0.005,
            "{name}: drawn {drawn:.4} of the width for {share:.4} of the samples"
        );
        // Readable: a real font size, and the whole name fits its frame.
        assert!(f(&fr["font_px"]) >= 11.0, "{name}: {fr}");
        assert!(
            f(&fr["label_w"]) <= f(&fr["box"]["w"]),
            "{name} is cut: {fr}"
        );
        assert!(f(&fr["box"]["h"]) >= 14.0, "{name}: {fr}");
        // Hover detail.
        assert!(fr["title"].as_str().unwrap().contains("samples"), "{fr}");
    }
    // Children sit inside their parent, one row below.
    let (main, shade) = (
        &frames["main (mixed_app.py)"]["box"],
        &frames["shade (mixed_app.py)"]["box"],
    );
    assert!(f(&shade["x"]) >= f(&main["x"]) - 0.5);
    assert!(f(&shade["x"]) + f(&shade["w"]) <= f(&main["x"]) + f(&main["w"]) + 0.5);
    assert!(f(&shade["top"]) > f(&main["top"]));

    // Click detail.
    let detail = g["detail"].as_str().unwrap();
    assert!(detail.starts_with("shade (mixed_app.py): "), "{detail}");
    assert!(detail.contains("samples"), "{detail}");
}

#[test]
fn chromium_check_catches_a_broken_page() {
    // The harness itself can fail: a script error shows up and the page
    // never marks itself ready.
    let tmp = tempfile::tempdir().unwrap();
    let html = render(&report("seeds"), Format::Html, "seeds").replacen(
        "<script>",
        "<script>undefinedFunction();",
        1,
    );
    let page = tmp.path().join("broken.html");
    std::fs::write(&page, html).unwrap();
    let loaded = load(&page, &tmp.path().join("broken.png"));
    assert!(
        loaded
            .console
            .iter()
            .any(|l| l.contains("undefinedFunction")),
        "{:#?}",
        loaded.console
    );
    assert!(!loaded.dom.contains("data-ready=\"1\""));
}

#[test]
fn the_page_needs_no_network() {
    for name in ["mixed_app", "multimodule", "seeds"] {
        let html = render(&report(name), Format::Html, name);
        for needle in [
            "<link",
            "<script src",
            "<img",
            "<iframe",
            "@import",
            "url(http",
            "url(//",
            "src=\"http",
            "href=\"http",
            "href=\"//",
        ] {
            assert!(!html.contains(needle), "{name}: `{needle}` in the page");
        }
        // The only scripts and styles are inline ones.
        assert_eq!(html.matches("<script>").count(), 1);
        assert_eq!(html.matches("<style>").count(), 1);
    }
}

#[test]
fn lines_are_shaded_by_their_functions_verdict() {
    let html = render(&report("seeds"), Format::Html, "seeds");
    // hash_computation (object) spans lines 44-47, its loop 45-46 lifts out.
    assert!(
        html.contains("<tr class=\"ln v-object\"><td class=\"heat\"></td><td class=\"no\">44</td>")
    );
    assert!(html.contains(
        "<tr class=\"ln v-object liftable\"><td class=\"heat\"></td><td class=\"no\">45</td>"
    ));
    assert!(html.contains("liftable loop, lines 45–46"));
    // hypot (cuda) starts at line 13; line 12 belongs to no function.
    assert!(
        html.contains("<tr class=\"ln v-cuda\"><td class=\"heat\"></td><td class=\"no\">13</td>")
    );
    assert!(html.contains("<tr class=\"ln\"><td class=\"heat\"></td><td class=\"no\">12</td>"));
    // A finding inline, its explanation one click away.
    assert!(html.contains("<details class=\"finding sev-object\" data-code=\"PORT101\"><summary><code>PORT101</code> Unknown attribute &#39;md5&#39; of type Module(hashlib)"));
    assert!(html.contains("<h2>Why is this bad?</h2>"));
    // Without a profile, the flame graph's place says how to get one.
    assert!(html.contains("<section id=\"flamegraph\"><h2>Flame graph</h2><p class=\"note\">No profile: run <code>port analyze APP.py</code> to sample a run.</p></section>"));
}

#[test]
fn heat_bars_follow_the_line_profile() {
    let html = render(&report("mixed_app"), Format::Html, "mixed_app");
    // Line 28 is the hottest (27.28% of samples): a full bar; line 27 (26.75%) nearly as long.
    assert!(html.contains("<td class=\"heat\" title=\"27.3% of samples\"><span style=\"width:100.0%\"></span></td><td class=\"no\">28</td>"));
    assert!(html.contains("<td class=\"heat\" title=\"26.8% of samples\"><span style=\"width:98.1%\"></span></td><td class=\"no\">27</td>"));
    // The flame graph colours app frames by verdict: shade is cuda,
    // fingerprint object; library frames are neither.
    let fg = &html[html.find("id=\"flamegraph\"").unwrap()..html.find("id=\"fg-detail\"").unwrap()];
    assert!(
        fg.contains("<div class=\"fg-frame v-cuda\""),
        "shade's frame is not cuda"
    );
    assert!(fg.contains("data-name=\"shade (mixed_app.py)\""));
    assert!(fg.contains("<div class=\"fg-frame v-object\""));
    assert!(fg.contains("<div class=\"fg-frame fg-lib\""));
}

#[test]
fn a_file_that_cannot_be_read_still_lists_its_functions() {
    let r = report("multimodule");
    let html = port_reports::html::render(&r, &|_| None);
    assert!(html.contains("Source not available here"));
    for f in &r.functions {
        assert_eq!(html.matches(&format!("data-key=\"{}\"", f.key)).count(), 2);
    }
}
