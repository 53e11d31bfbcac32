//! Reports: every way port shows its results to people and machines —
//! terminal tables (comfy-table), JSON, and, as later stages land, Markdown,
//! annotated HTML, SARIF, DOT and the CI gate. Reports read the analysis
//! model; they never compute verdicts themselves.

pub mod terminal;
