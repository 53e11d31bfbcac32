//! `port report --format sarif`: SARIF 2.1.0, the format code-scanning tabs
//! (GitHub's among them) read. Every finding is a result whose `ruleId` is
//! its code; the rules carry the catalogue's explanation as help text; files
//! that failed to parse are tool notifications.

use port_analyzer::model::Severity;
use port_analyzer::rules::{self, RULES};
use serde_json::{json, Value};

use crate::report::Report;

pub const SARIF_VERSION: &str = "2.1.0";
pub const SARIF_SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Object | Severity::Blocker => "warning",
        Severity::Performance | Severity::Note => "note",
    }
}

/// The first paragraph under a doc's `## What it does`, as one line.
fn what_it_does(doc: &str) -> String {
    let body = doc
        .split("## What it does")
        .nth(1)
        .unwrap_or(doc)
        .trim_start();
    let para = body.split("\n\n").next().unwrap_or("");
    let para = para.split("\n## ").next().unwrap_or(para);
    para.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `unsupported-module` → `UnsupportedModule`, SARIF's style for rule names.
fn pascal(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// A file as the analysis named it, as a URI: relative paths stay relative
/// (code scanning resolves them against the checkout), absolute ones become
/// `file://` URIs.
pub fn file_uri(path: &str) -> String {
    let p = path.replace('\\', "/");
    let p = p.strip_prefix("./").unwrap_or(&p);
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    if p.starts_with('/') {
        format!("file://{out}")
    } else {
        out
    }
}

fn rule_json(r: &rules::Rule) -> Value {
    json!({
        "id": r.code,
        "name": pascal(r.name),
        "shortDescription": { "text": r.name.replace('-', " ") },
        "fullDescription": { "text": what_it_does(r.doc) },
        "help": { "text": r.doc, "markdown": r.doc },
        "defaultConfiguration": { "level": level(r.severity) },
        "properties": { "tags": [rules::group_of(r.code)] },
    })
}

pub fn render(r: &Report) -> String {
    let rules_json: Vec<Value> = RULES.iter().map(rule_json).collect();
    let mut results = Vec::new();
    for e in &r.functions {
        let f = &e.function;
        for x in &f.findings {
            let mut result = json!({
                "ruleId": x.code,
                "level": level(x.severity),
                "message": { "text": format!("{} (in `{}`, verdict {})", x.message, f.qualname, f.verdict) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": file_uri(&f.file) },
                        "region": { "startLine": x.line.max(1) }
                    },
                    "logicalLocations": [{
                        "name": f.qualname,
                        "fullyQualifiedName": e.key,
                        "kind": "function"
                    }]
                }],
            });
            if let Some(i) = RULES.iter().position(|rule| rule.code == x.code) {
                result["ruleIndex"] = json!(i);
            }
            results.push(result);
        }
    }
    let notifications: Vec<Value> = r
        .parse_errors
        .iter()
        .map(|p| {
            json!({
                "level": "error",
                "message": { "text": format!("cannot parse: {}", p.message) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": file_uri(&p.file) },
                        "region": { "startLine": p.line.max(1), "startColumn": p.column.max(1) }
                    }
                }]
            })
        })
        .collect();
    let log = json!({
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {
                "driver": {
                    "name": "port",
                    "version": r.version,
                    "rules": rules_json,
                }
            },
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
            "properties": {
                "coverage": r.coverage,
            }
        }]
    });
    let mut s = serde_json::to_string_pretty(&log).expect("SARIF serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_or_file_uris() {
        assert_eq!(file_uri("physics/util.py"), "physics/util.py");
        assert_eq!(file_uri("./app.py"), "app.py");
        assert_eq!(file_uri("/w/my app.py"), "file:///w/my%20app.py");
    }

    #[test]
    fn rule_text_comes_from_the_catalogue() {
        let r = rules::rule("PORT101").unwrap();
        assert!(what_it_does(r.doc).starts_with("Flags use of a module"));
        assert_eq!(pascal(r.name), "UnsupportedModule");
    }
}
