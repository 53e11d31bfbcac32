//! The call graph: app functions and the external functions they call, as a
//! petgraph graph. It finds recursion (cycles) and lowers every caller to the
//! verdict of its worst callee, since compiled code can only call compiled
//! code.

use std::collections::HashMap;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::model::{CallEdge, CallGraphReport, CallNode, EdgeKind, Finding, Verdict};
use crate::rules;

pub struct CallGraph {
    pub graph: DiGraph<String, u32>,
    /// Node of each app function, by function index.
    pub app_nodes: Vec<NodeIndex>,
    external: HashMap<String, NodeIndex>,
}

impl CallGraph {
    /// `app_calls[f]` lists (callee, line); `external_calls[f]` (name, line).
    pub fn build(
        keys: &[String],
        app_calls: &[Vec<(usize, u32)>],
        external_calls: &[Vec<(String, u32)>],
    ) -> Self {
        let mut graph = DiGraph::new();
        let app_nodes: Vec<NodeIndex> = keys.iter().map(|k| graph.add_node(k.clone())).collect();
        let mut external = HashMap::new();
        for (f, calls) in app_calls.iter().enumerate() {
            for &(g, line) in calls {
                graph.add_edge(app_nodes[f], app_nodes[g], line);
            }
        }
        for (f, calls) in external_calls.iter().enumerate() {
            for (name, line) in calls {
                let n = *external
                    .entry(name.clone())
                    .or_insert_with(|| graph.add_node(name.clone()));
                graph.add_edge(app_nodes[f], n, *line);
            }
        }
        CallGraph {
            graph,
            app_nodes,
            external,
        }
    }

    /// Function index of each app node.
    fn app_index(&self) -> HashMap<NodeIndex, usize> {
        self.app_nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, i))
            .collect()
    }

    /// Functions on a call cycle (recursion), with the line of a call that
    /// closes it.
    pub fn recursive(&self) -> Vec<(usize, u32, String)> {
        let index = self.app_index();
        let mut out = Vec::new();
        for scc in tarjan_scc(&self.graph) {
            let cyclic = scc.len() > 1 || self.graph.find_edge(scc[0], scc[0]).is_some();
            if !cyclic {
                continue;
            }
            for &n in &scc {
                let Some(&f) = index.get(&n) else { continue };
                // The first call from n to a member of its cycle.
                let call = self
                    .graph
                    .edges(n)
                    .filter(|e| scc.contains(&petgraph::visit::EdgeRef::target(e)))
                    .map(|e| {
                        (
                            *e.weight(),
                            self.graph[petgraph::visit::EdgeRef::target(&e)].clone(),
                        )
                    })
                    .min();
                if let Some((line, callee)) = call {
                    out.push((f, line, callee));
                }
            }
        }
        out
    }

    /// Lower each function's verdict to its callees', to a fixed point,
    /// adding a finding at the call that did it.
    pub fn propagate(
        &self,
        verdicts: &mut [Verdict],
        findings: &mut [Vec<Finding>],
        names: &[String],
    ) {
        let index = self.app_index();
        loop {
            let mut changed = false;
            for (f, &node) in self.app_nodes.iter().enumerate() {
                let mut calls: Vec<(u32, usize)> = self
                    .graph
                    .edges(node)
                    .filter_map(|e| {
                        index
                            .get(&petgraph::visit::EdgeRef::target(&e))
                            .map(|&g| (*e.weight(), g))
                    })
                    .filter(|&(_, g)| g != f)
                    .collect();
                calls.sort();
                for (line, g) in calls {
                    if verdicts[g] >= verdicts[f] {
                        continue;
                    }
                    let (code, why) = match verdicts[g] {
                        Verdict::Object => ("PORT113", "needs object mode"),
                        _ => ("PORT209", "cannot run on the GPU"),
                    };
                    let rule = rules::rule(code).expect("catalogued");
                    findings[f].push(Finding {
                        code: code.into(),
                        severity: rule.severity,
                        line,
                        message: format!("calls `{}`, which {why}", names[g]),
                    });
                    verdicts[f] = verdicts[g];
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    pub fn report(&self) -> CallGraphReport {
        let mut nodes: Vec<CallNode> = self
            .app_nodes
            .iter()
            .map(|n| CallNode {
                id: self.graph[*n].clone(),
                kind: "app".into(),
            })
            .collect();
        let mut ext: Vec<&String> = self.external.keys().collect();
        ext.sort();
        nodes.extend(ext.into_iter().map(|e| CallNode {
            id: e.clone(),
            kind: "external".into(),
        }));
        let mut edges: Vec<CallEdge> = self
            .graph
            .edge_indices()
            .map(|e| {
                let (a, b) = self.graph.edge_endpoints(e).expect("edge exists");
                CallEdge {
                    caller: self.graph[a].clone(),
                    callee: self.graph[b].clone(),
                    kind: EdgeKind::Static,
                    line: Some(self.graph[e]),
                }
            })
            .collect();
        edges.sort_by(|x, y| (&x.caller, &x.callee).cmp(&(&y.caller, &y.callee)));
        edges.dedup_by(|x, y| x.caller == y.caller && x.callee == y.callee);
        CallGraphReport { nodes, edges }
    }
}

/// The graph in Graphviz DOT: app functions coloured by verdict, sized by
/// sampled time where there is a profile.
/// Verdict and sampled share of a node, if it is an app function.
pub type NodeInfo<'a> = &'a dyn Fn(&str) -> Option<(Verdict, Option<f64>)>;

pub fn to_dot(report: &CallGraphReport, verdict_of: NodeInfo) -> String {
    let mut s = String::from("digraph port {\n  rankdir=LR;\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n");
    for n in &report.nodes {
        let (fill, size) = match verdict_of(&n.id) {
            Some((Verdict::Cuda, pct)) => ("#9be29b", pct),
            Some((Verdict::Nopython, pct)) => ("#ffd479", pct),
            Some((Verdict::Object, pct)) => ("#ff9e9e", pct),
            None => ("#e6e6e6", None),
        };
        let font = 10.0 + size.unwrap_or(0.0).clamp(0.0, 100.0) * 0.2;
        let shape = if n.kind == "external" {
            ", shape=ellipse"
        } else {
            ""
        };
        s.push_str(&format!(
            "  \"{}\" [fillcolor=\"{fill}\", fontsize={font:.1}{shape}];\n",
            escape(&n.id)
        ));
    }
    for e in &report.edges {
        let style = match e.kind {
            EdgeKind::Static => "solid",
            EdgeKind::Sampled => "dashed",
            EdgeKind::Both => "bold",
        };
        s.push_str(&format!(
            "  \"{}\" -> \"{}\" [style={style}];\n",
            escape(&e.caller),
            escape(&e.callee)
        ));
    }
    s.push_str("}\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
