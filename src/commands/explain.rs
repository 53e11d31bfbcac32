//! `port explain CODE`: what a finding means and how to fix it.

use anyhow::Result;
use port_analyzer::rules::{self, RULES};

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// A finding code, e.g. PORT204. Omit it (or pass --list) to list every code.
    pub code: Option<String>,
    /// List every code with its name and severity.
    #[arg(long)]
    pub list: bool,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ExplainArgs) -> Result<()> {
    match (&args.code, args.list) {
        (Some(code), false) => {
            let Some(r) = rules::rule(code) else {
                return Err(crate::UserError::new(format!(
                    "unknown code `{code}`: `port explain --list` shows every code"
                ))
                .into());
            };
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"code": r.code, "name": r.name, "severity": r.severity, "doc": r.doc})
                );
                crate::json_printed();
            } else {
                println!("{} ({}) — {:?}\n\n{}", r.code, r.name, r.severity, r.doc);
            }
        }
        _ => {
            if args.json {
                let all: Vec<_> = RULES
                    .iter()
                    .map(|r| serde_json::json!({"code": r.code, "name": r.name, "severity": r.severity}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&all)?);
                crate::json_printed();
            } else {
                for r in RULES {
                    let sev = format!("{:?}", r.severity).to_lowercase();
                    println!("{}  {:<12} {}", r.code, sev, r.name);
                }
            }
        }
    }
    Ok(())
}
