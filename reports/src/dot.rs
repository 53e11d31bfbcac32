//! `port report --format dot`: the call graph in Graphviz DOT, app functions
//! coloured by verdict and sized by sampled time.

use port_analyzer::callgraph::to_dot;

use crate::report::Report;

pub fn render(r: &Report) -> String {
    to_dot(&r.call_graph, &|id| {
        r.function(id)
            .map(|f| (f.function.verdict, f.function.total_pct))
    })
}
