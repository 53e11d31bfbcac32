//! The checker's state (the `Checker` struct) and the small helpers every
//! part of the pass uses to record what it finds: line numbers, findings,
//! one-time notes, assumptions about parameters, and whether an expression
//! reads array data.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{Expr, Ranged};

use super::util::short;
use crate::loader::Module;
use crate::model::Finding;
use crate::rules;
use crate::symbols::{dotted, FunctionSymbol, SymbolTable};
use crate::ty::Ty;
use crate::walk::walk_expr;

pub struct Checker<'a> {
    pub m: &'a Module,
    pub(super) syms: &'a SymbolTable<'a>,
    pub(super) f: &'a FunctionSymbol<'a>,
    pub(super) fi: usize,
    pub env: HashMap<String, Ty>,
    pub(super) params: Vec<String>,
    pub(super) assumed: HashSet<String>,
    /// Scalars whose value comes from array contents: sizes computed from
    /// them are data-dependent.
    pub(super) data_derived: HashSet<String>,
    pub(super) findings: Vec<Finding>,
    pub(super) seen: HashSet<(String, u32, String)>,
    pub(super) app_calls: Vec<(usize, u32)>,
    pub(super) external_calls: Vec<(String, u32)>,
    /// Lines where an object-mode value is used (they cannot be lifted).
    pub(super) object_use_lines: Vec<u32>,
    pub(super) depth: usize,
    pub(super) too_deep: bool,
    pub(super) noted_generator: bool,
    pub(super) noted_alloc: bool,
    pub(super) noted_strings: bool,
    pub(super) uses_float64: Option<u32>,
    /// The shapes of the array arguments of a real call.
    pub(super) shapes: HashMap<String, Vec<u64>>,
    /// Parameters that were the same array as an earlier one in the
    /// captured call (`out` → `a` for `smooth(x, x)`).
    pub(super) same: HashMap<String, String>,
}

impl<'a> Checker<'a> {
    pub(super) fn line(&self, node: &impl Ranged) -> u32 {
        self.m.line_of(node.start())
    }

    pub(super) fn add(&mut self, code: &str, line: u32, message: String) {
        let Some(rule) = rules::rule(code) else {
            debug_assert!(false, "unknown rule {code}");
            return;
        };
        if self.seen.insert((code.to_string(), line, message.clone())) {
            self.findings.push(Finding {
                code: rule.code.to_string(),
                severity: rule.severity,
                line,
                message,
            });
        }
    }

    pub(super) fn note_string(&mut self, line: u32, what: &str) {
        if !self.noted_strings {
            self.noted_strings = true;
            self.add("PORT207", line, format!("{what}: kernels have no strings"));
        }
    }

    pub(super) fn assumption(&mut self, name: &str, line: u32, how: &str) {
        if self.assumed.insert(name.to_string()) {
            self.add(
                "PORT401",
                line,
                format!("assumes `{name}` is an array: {how}"),
            );
        }
    }

    /// A parameter of unknown type used like an array becomes one, noted.
    pub(super) fn assume_array(
        &mut self,
        base: &Expr,
        t: Ty,
        how: &str,
        whole: rustpython_parser::text_size::TextRange,
    ) -> Ty {
        if t != Ty::Unknown {
            return t;
        }
        if let Expr::Name(n) = base {
            let name = n.id.as_str();
            if self.params.iter().any(|p| p == name) || self.env.contains_key(name) {
                let line = self.line(base);
                let text = short(self.m.text_of(whole));
                self.assumption(name, line, &format!("{how} {text}"));
                let arr = Ty::array(None);
                self.env.insert(name.to_string(), arr.clone());
                return arr;
            }
        }
        t
    }

    /// Does evaluating `e` read array contents (so a size computed from it
    /// depends on the data)?
    pub(super) fn reads_data(&self, e: &Expr) -> bool {
        let mut found = false;
        walk_expr(e, &mut |x| match x {
            Expr::Subscript(s) => {
                if let Expr::Name(n) = s.value.as_ref() {
                    if self.env.get(n.id.as_str()).is_some_and(|t| t.is_array()) {
                        found = true;
                    }
                }
            }
            Expr::Name(n) if self.data_derived.contains(n.id.as_str()) => {
                found = true;
            }
            Expr::Call(c) => {
                let callee = dotted(&c.func).unwrap_or_default();
                let last = callee.rsplit('.').next().unwrap_or("");
                if matches!(
                    last,
                    "sum"
                        | "max"
                        | "min"
                        | "mean"
                        | "count_nonzero"
                        | "prod"
                        | "argmax"
                        | "argmin"
                        | "item"
                        | "amax"
                        | "amin"
                ) {
                    found = true;
                }
            }
            _ => {}
        });
        found
    }

    pub(super) fn allocation_note(&mut self, line: u32, what: &str) {
        if !self.noted_alloc {
            self.noted_alloc = true;
            self.add(
                "PORT403",
                line,
                format!("{what}: the host wrapper allocates it before the launch"),
            );
        }
    }

    pub(super) fn record_external(&mut self, name: &str, line: u32) {
        if !self.external_calls.iter().any(|(n, _)| n == name) {
            self.external_calls.push((name.to_string(), line));
        }
    }
}
