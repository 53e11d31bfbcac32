//! The classifier: one pass over a function body that infers the types of
//! its values from their use and records every reason, as a finding, why
//! Numba's nopython mode or a CUDA kernel could not take it. The verdict
//! follows from the worst finding; the call graph later lowers callers to
//! their callees' verdicts.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};

use crate::deps;
use crate::loader::Module;
use crate::model::{ArgType, Finding, LineRange, Severity, Verdict};
use crate::symbols::{dotted, Binding, FnNode, SymbolTable};
pub use crate::ty::Ty;
pub use crate::walk::{metadata_uses, walk_expr, walk_stmts, MAX_DEPTH};

mod calls;
mod operands;
mod state;
mod util;
mod walker;

pub use self::state::Checker;
use self::util::{const_ty, contains_return_or_yield, outermost_loops, ty_of_captured};

/// What the classifier found in one function.
pub struct FunctionFacts {
    pub findings: Vec<Finding>,
    /// App functions called, with the line of the first call.
    pub app_calls: Vec<(usize, u32)>,
    /// External callees by dotted name (`numpy.sum`, `hashlib.md5`).
    pub external_calls: Vec<(String, u32)>,
    pub liftable_loops: Vec<LineRange>,
}

impl FunctionFacts {
    pub fn verdict(&self) -> Verdict {
        verdict_of(&self.findings)
    }
}

pub fn verdict_of(findings: &[Finding]) -> Verdict {
    if findings.iter().any(|f| f.severity == Severity::Object) {
        Verdict::Object
    } else if findings.iter().any(|f| f.severity == Severity::Blocker) {
        Verdict::Nopython
    } else {
        Verdict::Cuda
    }
}

/// Calls doing fewer element operations than this rarely pay for a launch and
/// transfers, and cannot fill a GPU's threads.
pub const SMALL_ARRAY_ELEMENTS: u64 = 16_384;

impl<'a> Checker<'a> {
    pub fn new(
        m: &'a Module,
        syms: &'a SymbolTable<'a>,
        fi: usize,
        captured: Option<&[ArgType]>,
    ) -> Self {
        let f = &syms.functions[fi];
        let mut c = Checker {
            m,
            syms,
            f,
            fi,
            env: HashMap::new(),
            params: Vec::new(),
            assumed: HashSet::new(),
            data_derived: HashSet::new(),
            findings: Vec::new(),
            seen: HashSet::new(),
            app_calls: Vec::new(),
            external_calls: Vec::new(),
            object_use_lines: Vec::new(),
            depth: 0,
            too_deep: false,
            noted_generator: false,
            noted_alloc: false,
            noted_strings: false,
            uses_float64: None,
            shapes: HashMap::new(),
            same: HashMap::new(),
        };
        c.bind_params(captured);
        c
    }

    fn bind_params(&mut self, captured: Option<&[ArgType]>) {
        let args = self.f.node.args();
        let line = self.f.line;
        let all: Vec<&ast::ArgWithDefault> = args
            .posonlyargs
            .iter()
            .chain(args.args.iter())
            .chain(args.kwonlyargs.iter())
            .collect();
        for (i, a) in all.iter().enumerate() {
            let name = a.def.arg.to_string();
            let mut ty = Ty::Unknown;
            if let Some(cap) = captured.and_then(|c| c.iter().find(|t| t.name == name)) {
                ty = ty_of_captured(cap);
                if let Some(shape) = &cap.shape {
                    self.shapes.insert(name.clone(), shape.clone());
                }
                if let Some(first) = &cap.same_as {
                    self.same.insert(name.clone(), first.clone());
                }
            } else if let Some(ann) = &a.def.annotation {
                ty = self.ty_of_annotation(ann);
            } else if let Some(d) = &a.default {
                if let Expr::Constant(c) = d.as_ref() {
                    ty = const_ty(&c.value);
                }
            }
            if i == 0 && self.f.class.is_some() && (name == "self" || name == "cls") {
                ty = Ty::Instance(self.f.class.clone().unwrap_or_default());
                self.add(
                    "PORT104",
                    line,
                    format!(
                        "method of class {}: nopython mode cannot type `{name}`",
                        self.f.class.as_deref().unwrap_or("?")
                    ),
                );
            }
            if let Ty::Array { dtype: Some(d), .. } = &ty {
                if d == "float64" && self.uses_float64.is_none() {
                    self.uses_float64 = Some(line);
                }
            }
            self.params.push(name.clone());
            self.env.insert(name, ty);
        }
        if let Some(v) = &args.vararg {
            self.add(
                "PORT211",
                line,
                format!("`*{}`: a kernel needs a fixed parameter list", v.arg),
            );
            self.env.insert(v.arg.to_string(), Ty::Tuple(vec![]));
        }
        if let Some(k) = &args.kwarg {
            self.add(
                "PORT108",
                line,
                format!(
                    "`**{}`: nopython mode cannot type keyword-argument dictionaries",
                    k.arg
                ),
            );
            self.env.insert(k.arg.to_string(), Ty::Dict);
        }
        if matches!(self.f.node, FnNode::AsyncDef(_)) {
            self.add(
                "PORT112",
                line,
                "async function: coroutines are not supported in nopython mode".into(),
            );
        }
        for d in self.f.node.decorators() {
            let name = dotted(d).or_else(|| match d {
                Expr::Call(c) => dotted(&c.func),
                _ => None,
            });
            if let Some(n) = name {
                if matches!(
                    n.as_str(),
                    "property"
                        | "staticmethod"
                        | "classmethod"
                        | "functools.lru_cache"
                        | "lru_cache"
                        | "functools.cache"
                        | "cache"
                        | "contextmanager"
                        | "contextlib.contextmanager"
                ) {
                    self.add(
                        "PORT104",
                        self.line(d),
                        format!("decorated with @{n}: the decorator wraps it in a Python object"),
                    );
                }
            }
        }
    }

    fn ty_of_annotation(&mut self, ann: &Expr) -> Ty {
        let text = dotted(ann)
            .or_else(|| match ann {
                Expr::Subscript(s) => dotted(&s.value),
                Expr::Constant(c) => match &c.value {
                    ast::Constant::Str(s) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or_default();
        let last = text.rsplit('.').next().unwrap_or("");
        match last {
            "ndarray" | "NDArray" | "ArrayLike" => Ty::array(None),
            "float" | "float32" | "float64" => Ty::Float,
            "int" | "int32" | "int64" => Ty::Int,
            "bool" => Ty::Bool,
            "complex" => Ty::Complex,
            "str" => Ty::Str,
            "list" | "List" | "Sequence" => Ty::List,
            "dict" | "Dict" | "Mapping" => Ty::Dict,
            "set" | "Set" => Ty::Set,
            "tuple" | "Tuple" => Ty::Tuple(vec![]),
            _ => match self.syms.lookup(self.f.module, last) {
                Some(Binding::Class(k)) => Ty::Instance(k),
                _ => Ty::Unknown,
            },
        }
    }

    /// Run the checker over the function and return what it found.
    pub fn run(mut self) -> FunctionFacts {
        match self.f.node {
            FnNode::Def(d) => self.body(&d.body),
            FnNode::AsyncDef(d) => self.body(&d.body),
            FnNode::Lambda(l) => {
                let t = self.expr(&l.body);
                self.returned(&t, self.line(l.body.as_ref()));
            }
        }
        if self.too_deep {
            self.add(
                "PORT112",
                self.f.line,
                format!("nesting deeper than {MAX_DEPTH} levels: port did not analyse the rest"),
            );
        }
        let body: &[Stmt] = match self.f.node {
            FnNode::Def(d) => &d.body,
            FnNode::AsyncDef(d) => &d.body,
            FnNode::Lambda(_) => &[],
        };
        // Loop dependences only matter for functions that could go to the GPU.
        if verdict_of(&self.findings) == Verdict::Cuda {
            for d in deps::check_loops(self.m, body, &self.env, &self.same) {
                self.add(d.code, d.line, d.message);
            }
        }
        if verdict_of(&self.findings) == Verdict::Cuda
            && !self.findings.iter().any(|f| f.code == "PORT405")
        {
            let scalar = !self.env.values().any(Ty::is_array) && !self.noted_alloc;
            let msg = if scalar && !self.app_calls.is_empty() {
                "calls only GPU-eligible functions: port migrates it together with its callees"
            } else if scalar {
                "scalar function: it becomes a device function, or a @vectorize(target='cuda') ufunc over arrays"
            } else {
                "array expressions become element loops in a grid-stride kernel"
            };
            self.add("PORT405", self.f.line, msg.into());
        }
        // Judged by the work of a real call (its loops' trip counts times the
        // elements each statement touches), not by its arrays' size: an
        // all-pairs loop over two small arrays is a lot of work. Nothing is
        // claimed when a trip count cannot be known.
        if verdict_of(&self.findings) == Verdict::Cuda {
            // The largest array argument, the first in order among equals.
            let mut largest: Option<(&String, u64)> = None;
            for p in &self.params {
                if let Some(shape) = self.shapes.get(p) {
                    let n: u64 = shape.iter().product();
                    if largest.is_none_or(|(_, m)| n > m) {
                        largest = Some((p, n));
                    }
                }
            }
            let work = largest.and_then(|_| crate::work::estimate(body, &self.shapes));
            if let (Some((name, n)), Some(work)) = (largest, work) {
                if work < SMALL_ARRAY_ELEMENTS {
                    let message = format!(
                        "a real call does about {work} element operations (largest array `{name}`: {n} elements): launch and transfers would cost more than the work"
                    );
                    self.add("PORT303", self.f.line, message);
                }
            }
        }
        if let Some(line) = self.uses_float64 {
            if verdict_of(&self.findings) == Verdict::Cuda {
                self.add(
                    "PORT301",
                    line,
                    "float64 data: GPUs run double precision at a fraction of float32 speed".into(),
                );
            }
        }
        let liftable = if verdict_of(&self.findings) == Verdict::Object {
            self.liftable_loops(body)
        } else {
            Vec::new()
        };
        for l in &liftable {
            self.add(
                "PORT404",
                l.line,
                format!(
                    "loop at lines {}-{} would compile in nopython mode: outline it into its own function",
                    l.line, l.end_line
                ),
            );
        }
        self.findings.sort_by_key(|f| (f.severity, f.line));
        FunctionFacts {
            findings: self.findings,
            app_calls: self.app_calls,
            external_calls: self.external_calls,
            liftable_loops: liftable,
        }
    }

    /// Outermost loops with no object-mode finding or object use inside and
    /// no `return`/`yield` (Numba's loop-lifting conditions).
    fn liftable_loops(&self, body: &[Stmt]) -> Vec<LineRange> {
        let mut loops = Vec::new();
        outermost_loops(body, &mut loops);
        loops
            .into_iter()
            .filter_map(|s| {
                let line = self.m.line_of(s.start());
                let end_line = self
                    .m
                    .line_of(s.end() - rustpython_parser::text_size::TextSize::from(1));
                let inside = |l: u32| l >= line && l <= end_line;
                let blocked = self
                    .findings
                    .iter()
                    .any(|f| f.severity == Severity::Object && inside(f.line))
                    || self.object_use_lines.iter().any(|&l| inside(l))
                    || contains_return_or_yield(s);
                (!blocked).then_some(LineRange { line, end_line })
            })
            .collect()
    }
}
