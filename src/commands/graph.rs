//! `port graph`: the call graph, as DOT or JSON.

use std::path::PathBuf;

use anyhow::Result;
use port_analyzer::callgraph::to_dot;
use port_analyzer::Analysis;

use super::analyze::{load_or_analyze, Source};

#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum GraphFormat {
    #[default]
    Dot,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct GraphArgs {
    /// A Python file or folder to analyse statically. Without it, the last
    /// analysis in .port/ is used.
    pub path: Option<PathBuf>,
    /// Output format: Graphviz DOT (nodes coloured by verdict) or JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: GraphFormat,
}

pub fn run(args: &GraphArgs) -> Result<()> {
    let analysis = load_or_analyze(match &args.path {
        Some(p) => Source::Path(p),
        None => Source::State,
    })?;
    match args.format {
        GraphFormat::Dot => print!("{}", dot(&analysis)),
        GraphFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&analysis.call_graph)?);
            crate::json_printed();
        }
    }
    Ok(())
}

fn dot(a: &Analysis) -> String {
    to_dot(&a.call_graph, &|id| {
        a.functions
            .iter()
            .find(|f| format!("{}.{}", f.module, f.qualname) == id)
            .map(|f| (f.verdict, f.total_pct))
    })
}
