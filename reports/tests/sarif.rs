//! `--format sarif` against the official SARIF 2.1.0 schema (shipped in
//! `testdata/`), and what code scanning needs from it.

mod common;

use common::*;
use port_reports::Format;
use serde_json::Value;

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sarif-schema-2.1.0.json"),
    )
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the SARIF schema compiles")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

fn sarif(name: &str) -> Value {
    serde_json::from_str(&render(&report(name), Format::Sarif, name)).expect("SARIF is JSON")
}

#[test]
fn output_is_valid_sarif_2_1_0() {
    let v = schema();
    for name in ["mixed_app", "seeds", "multimodule"] {
        let doc = sarif(name);
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        assert_eq!(doc["version"], "2.1.0");
    }
}

#[test]
fn the_validator_rejects_broken_sarif() {
    // The schema test can fail: a result with an unknown level and no
    // message is caught.
    let v = schema();
    let mut doc = sarif("seeds");
    doc["runs"][0]["results"][0]["level"] = "severe".into();
    doc["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    assert!(errors(&v, &doc).len() >= 2, "{:?}", errors(&v, &doc));
    let mut doc = sarif("seeds");
    doc["version"] = "2.0.0".into();
    assert!(!v.is_valid(&doc));
}

#[test]
fn every_finding_is_a_result_with_its_code_file_and_line() {
    let r = report("mixed_app");
    let doc = sarif("mixed_app");
    let run = &doc["runs"][0];
    let results = run["results"].as_array().unwrap();
    let findings: usize = r.functions.iter().map(|f| f.function.findings.len()).sum();
    assert_eq!(results.len(), findings);
    let md5 = results
        .iter()
        .find(|x| x["ruleId"] == "PORT101")
        .expect("PORT101 result");
    assert_eq!(md5["level"], "warning");
    let loc = &md5["locations"][0];
    assert_eq!(
        loc["physicalLocation"]["artifactLocation"]["uri"],
        "mixed_app.py"
    );
    assert_eq!(loc["physicalLocation"]["region"]["startLine"], 34);
    assert_eq!(
        loc["logicalLocations"][0]["fullyQualifiedName"],
        "mixed_app.fingerprint"
    );
    assert!(md5["message"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Unknown attribute 'md5' of type Module(hashlib)"));
    // ruleIndex points at the rule with that id.
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let i = md5["ruleIndex"].as_u64().unwrap() as usize;
    assert_eq!(rules[i]["id"], "PORT101");
}

#[test]
fn rules_carry_their_explanation_as_help() {
    let doc = sarif("seeds");
    let rules = doc["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert_eq!(rules.len(), port_analyzer::rules::RULES.len());
    for rule in rules {
        let code = rule["id"].as_str().unwrap();
        let doc = port_analyzer::rules::rule(code).unwrap().doc;
        assert_eq!(rule["help"]["text"], doc, "{code}");
        assert_eq!(rule["help"]["markdown"], doc, "{code}");
        assert!(!rule["fullDescription"]["text"].as_str().unwrap().is_empty());
    }
}

#[test]
fn parse_errors_are_tool_notifications() {
    let mut s = state("seeds");
    s.analysis
        .parse_errors
        .push(port_analyzer::model::ParseErrorReport {
            file: "broken.py".into(),
            line: 3,
            column: 7,
            message: "invalid syntax".into(),
        });
    let r = port_reports::Report::build(&s, None).unwrap();
    let doc: Value = serde_json::from_str(&render(&r, Format::Sarif, "seeds")).unwrap();
    assert!(errors(&schema(), &doc).is_empty());
    let n = &doc["runs"][0]["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(n["message"]["text"], "cannot parse: invalid syntax");
    assert_eq!(
        n["locations"][0]["physicalLocation"]["region"]["startColumn"],
        7
    );
}
