//! The types of names and operators: a name's binding (local, closure
//! variable, global, import, builtin), binary operations, generators and
//! the elements of iterated values.

use rustpython_parser::ast::{self, Expr};

use super::state::Checker;
use super::util::{binds_name, join_arith, scalar_or_row};
use crate::support;
use crate::symbols::{Binding, ConstKind};
use crate::ty::Ty;

impl<'a> Checker<'a> {
    pub(super) fn iter_elem(&mut self, it: &Ty, e: &Expr, line: u32) -> Ty {
        match it {
            Ty::Range => Ty::Int,
            Ty::Array { ndim, .. } => scalar_or_row(ndim.map(|n| n.saturating_sub(1))),
            Ty::List | Ty::Set | Ty::Dict => Ty::Unknown,
            Ty::Str => {
                self.note_string(line, "iterates over a string");
                Ty::Str
            }
            Ty::Tuple(ts) => ts.first().cloned().unwrap_or(Ty::Unknown),
            Ty::Unknown => {
                if let Expr::Name(n) = e {
                    if self.params.iter().any(|p| p == n.id.as_str()) {
                        self.assumption(n.id.as_str(), line, "iterated over");
                        self.env.insert(n.id.to_string(), Ty::array(None));
                    }
                }
                Ty::Unknown
            }
            t if t.is_objectish() => {
                self.object_use_lines.push(line);
                Ty::Unknown
            }
            _ => Ty::Unknown,
        }
    }

    pub(super) fn generator(&mut self, line: u32) {
        if !self.noted_generator {
            self.noted_generator = true;
            self.add(
                "PORT203",
                line,
                "generator function (`yield`): a GPU thread cannot suspend".into(),
            );
        }
    }

    pub(super) fn binop(&mut self, b: &ast::ExprBinOp, l: Ty, r: Ty, line: u32) -> Ty {
        if b.op == ast::Operator::Mod && l == Ty::Str {
            self.add(
                "PORT107",
                line,
                format!(
                    "`{}`: %-formatting is not supported in nopython mode",
                    self.m.text_of(b.range)
                ),
            );
            return Ty::Str;
        }
        if l == Ty::Str || r == Ty::Str {
            self.note_string(line, "string operation");
            return Ty::Str;
        }
        if b.op == ast::Operator::MatMult {
            let rank = |t: &Ty| match t {
                Ty::Array { ndim, .. } => ndim.unwrap_or(0),
                _ => 0,
            };
            if rank(&l) > 2 || rank(&r) > 2 {
                self.add(
                    "PORT121",
                    line,
                    format!(
                        "`{}` on an array of more than 2 dimensions: nopython mode multiplies vectors and matrices only",
                        self.m.text_of(b.range)
                    ),
                );
            }
            // `@` itself is port's (a reduction over a broadcast product);
            // whether a given use plans is the planner's answer.
            return Ty::array(None);
        }
        if l == Ty::List || r == Ty::List {
            return Ty::List;
        }
        if l.is_array() || r.is_array() {
            self.allocation_note(line, "array expression allocates its result");
            let ndim = match (&l, &r) {
                (Ty::Array { ndim: a, .. }, Ty::Array { ndim: b, .. }) => (*a).max(*b),
                (Ty::Array { ndim, .. }, _) | (_, Ty::Array { ndim, .. }) => *ndim,
                _ => None,
            };
            return Ty::array(ndim);
        }
        let t = join_arith(&l, &r);
        if b.op == ast::Operator::Div && matches!(t, Ty::Int | Ty::Bool) {
            Ty::Float
        } else {
            t
        }
    }

    pub(super) fn name(&mut self, name: &str, line: u32) -> Ty {
        if let Some(t) = self.env.get(name) {
            let t = t.clone();
            if t.is_objectish() {
                self.object_use_lines.push(line);
            }
            return t;
        }
        // A name bound in an enclosing function: a closure variable.
        let mut parent = self.f.parent;
        while let Some(p) = parent {
            if binds_name(&self.syms.functions[p], name) {
                return Ty::Unknown;
            }
            parent = self.syms.functions[p].parent;
        }
        match self.syms.lookup(self.f.module, name) {
            Some(b) => self.binding_ty(name, b, line),
            None => {
                if support::NOPYTHON_BUILTINS.contains(&name)
                    || support::PYTHON_BUILTINS.contains(&name)
                {
                    Ty::Builtin(name.to_string())
                } else if name.ends_with("Error")
                    || name.ends_with("Exception")
                    || name.ends_with("Warning")
                    || name == "StopIteration"
                {
                    Ty::ExceptionClass
                } else if matches!(name, "__name__" | "__file__" | "__doc__") {
                    Ty::Str
                } else if let Some(m) = self.syms.modules[self.f.module]
                    .star_imports
                    .iter()
                    .find(|m| support::module_is_nopython(m.split('.').next().unwrap_or("")))
                {
                    Ty::External(format!("{m}.{name}"))
                } else {
                    Ty::Unknown
                }
            }
        }
    }

    pub(super) fn binding_ty(&mut self, name: &str, b: Binding, line: u32) -> Ty {
        match b {
            Binding::ExternalModule(m) => Ty::Module(m),
            Binding::ExternalMember(full) => {
                if full == "numpy.linalg" || full == "numpy.random" || full == "numpy.fft" {
                    Ty::Module(full)
                } else {
                    Ty::External(full)
                }
            }
            Binding::LocalModule(i) => Ty::LocalModule(i),
            Binding::LocalMember(..) => Ty::Unknown,
            Binding::Function(i) => Ty::AppFn(i),
            Binding::Class(k) => Ty::Class(k),
            Binding::Constant(k) => match k {
                ConstKind::Int => Ty::Int,
                ConstKind::Float => Ty::Float,
                ConstKind::Bool => Ty::Bool,
                ConstKind::Complex => Ty::Complex,
                ConstKind::Str => Ty::Str,
                ConstKind::Tuple => Ty::Tuple(vec![]),
                ConstKind::None => Ty::NoneT,
            },
            Binding::ArrayConstant => Ty::array(None),
            Binding::Mutable(kind) => {
                self.add(
                    "PORT110",
                    line,
                    format!(
                        "reads global `{name}`, a module-level {kind}: nopython mode can only freeze numbers, tuples and arrays"
                    ),
                );
                match kind {
                    "list" => Ty::List,
                    "dict" => Ty::Dict,
                    "set" => Ty::Set,
                    _ => Ty::Opaque(name.to_string()),
                }
            }
            Binding::Unknown => Ty::Unknown,
        }
    }
}
