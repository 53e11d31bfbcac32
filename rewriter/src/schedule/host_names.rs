//! What a host-level name holds before it holds an array (part of
//! **host_schedule**):
//!
//! - `out = None` whose `None` no statement can read — the next statement
//!   that mentions `out` in the same block binds it anew (`out = x @ w +
//!   b`), or none does — is dead: it binds nothing. Where `None` may reach
//!   a use (a read, an `if` that binds it on one branch, a loop that runs
//!   again), the refusal names the binding and the use.
//! - `I += 1` where `I` is an element template that owns no storage (a
//!   part of `np.indices`/`np.mgrid`, an open grid) is `I = I + 1`: the
//!   name is rebound, which is what NumPy's in-place update does to an
//!   array nothing else can see. Port checks that nothing else can: the
//!   name is bound in the same block from a fresh NumPy value, and every
//!   other use of it reads its values (an operand, an index, a ufunc's
//!   argument), never a view or another name holding it.
//! - A name a top-level host loop binds first in each iteration, before
//!   any read, and whose value after the loop nothing reads (the next
//!   mention binds it anew, or there is none) is private to the loop: what
//!   it held before (a view: vadv's `datacol = dcol[:, :, k]` in the loop
//!   before) does not matter, and the loop binds it at run time afresh.

use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::lower::context::Lowerer;
use crate::pyast;

/// Reported as part of the host schedule (the same name as
/// `host_schedule::NAME`, which uses this module).
pub const NAME: &str = "host_schedule";

impl Lowerer<'_> {
    /// `name = None` at host level, with `rest` the statements after it
    /// in its block: `true` when the binding is dead (nothing to do), a
    /// refusal when `None` may reach a use, `false` when the statement is
    /// not such a binding.
    pub(crate) fn dead_none_binding(
        &mut self,
        s: &ast::Stmt,
        rest: &[ast::Stmt],
        line: u32,
    ) -> Lower<bool> {
        let ast::Stmt::Assign(a) = s else {
            return Ok(false);
        };
        let is_none = matches!(a.value.as_ref(), ast::Expr::Constant(c) if matches!(c.value, ast::Constant::None));
        if !is_none || a.targets.len() != 1 {
            return Ok(false);
        }
        let ast::Expr::Name(n) = &a.targets[0] else {
            return Ok(false);
        };
        let name = n.id.as_str();
        for next in rest {
            if !pyast::body_mentions(std::slice::from_ref(next), name) {
                continue;
            }
            if rebinds_without_reading(next, name) {
                self.log.applied(
                    NAME,
                    format!(
                        "`{name} = None` (line {line}) is dead: line {} binds `{name}` before any use",
                        self.src.line(next)
                    ),
                );
                return Ok(true);
            }
            let at = format!(
                "line {} (`{}`)",
                self.src.line(next),
                first_line(self.src.text_of(next))
            );
            let how = if pyast::child_bodies(next).is_empty() {
                format!("{at} reads `{name}` while it is `None`")
            } else {
                format!("{at} may read `{name}`, or leave it `None` on some path")
            };
            return refuse(
                NAME,
                line,
                format!(
                    "`{name} = None`: {how}, and kernels compute on numbers and arrays only; bind `{name}` to its array before any statement that may read it"
                ),
            );
        }
        if self.host_depth == 0 {
            self.log
                .applied(NAME, format!("`{name} = None` (line {line}) is never read"));
            return Ok(true);
        }
        refuse(
            NAME,
            line,
            format!(
                "`{name} = None` inside a host loop or `if`: `None` may reach a use of `{name}` after it (or in the next iteration), and kernels compute on numbers and arrays only"
            ),
        )
    }

    /// Whether `name += …` may rebind `name` (an element template with no
    /// storage) instead of changing an array in place: at the top level of
    /// the function (not in a host loop or `if`), bound in `block` only
    /// from fresh NumPy values, and used nowhere in `block` in a way that
    /// would let another name see the same array. Refuses, naming the
    /// construct, otherwise.
    pub(crate) fn template_update_allowed(
        &mut self,
        name: &str,
        block: &[ast::Stmt],
        line: u32,
    ) -> Lower<()> {
        let why = |msg: String| -> Lower<()> {
            refuse(
                NAME,
                line,
                format!("`{name}` is updated in place but holds an array port keeps as a template (an index grid): {msg}"),
            )
        };
        if self.host_depth > 0 || self.loop_bound.contains(name) {
            return why("inside a host loop or `if` it would need an array of its own".into());
        }
        let mut bound = false;
        let mut stale: Option<u32> = None;
        let mut alias: Option<u32> = None;
        pyast::walk_stmts(block, &mut |st| {
            let l = self.src.line(st);
            let (targets, values): (Vec<&ast::Expr>, Vec<&ast::Expr>) = match st {
                ast::Stmt::Assign(a) => (a.targets.iter().collect(), vec![a.value.as_ref()]),
                ast::Stmt::AnnAssign(a) => (
                    vec![a.target.as_ref()],
                    a.value.iter().map(|v| v.as_ref()).collect(),
                ),
                ast::Stmt::AugAssign(a) => (vec![a.target.as_ref()], vec![a.value.as_ref()]),
                other => (Vec::new(), pyast::stmt_exprs(other)),
            };
            for t in &targets {
                if pyast::target_names(t).iter().any(|n| n == name) {
                    if matches!(st, ast::Stmt::AugAssign(_)) {
                        continue;
                    }
                    bound = true;
                    if !values.iter().all(|v| self.fresh_value(v)) {
                        stale.get_or_insert(l);
                    }
                } else if self.may_alias(t, name) {
                    alias.get_or_insert(l);
                }
            }
            // A loop variable's target is among the values: a `for` over
            // the name binds another name to each of its rows.
            for v in values {
                if self.may_alias(v, name) {
                    alias.get_or_insert(l);
                }
            }
        });
        if !bound {
            return why("it is bound outside the statements port can see around the update".into());
        }
        if let Some(l) = stale {
            return why(format!(
                "line {l} binds it to an array another name may hold"
            ));
        }
        if let Some(l) = alias {
            return why(format!(
                "line {l} may let another name hold the same array (a view, a call, a second name)"
            ));
        }
        self.log.applied(
            NAME,
            format!(
                "`{name}` updated in place at line {line} is rebound: nothing else holds its array"
            ),
        );
        Ok(())
    }

    /// A value that is a new array nothing else holds: a NumPy call (not a
    /// view of another name), a subscript of one (`np.mgrid[…]`), an
    /// operator's result.
    fn fresh_value(&self, e: &ast::Expr) -> bool {
        match e {
            ast::Expr::Call(c) => {
                !matches!(c.func.as_ref(), ast::Expr::Attribute(a) if !self.is_numpy(&a.value))
                    && self.is_numpy(&c.func)
            }
            ast::Expr::Subscript(s) => self.fresh_value(&s.value) || self.is_numpy(&s.value),
            ast::Expr::BinOp(_) | ast::Expr::UnaryOp(_) | ast::Expr::Compare(_) => true,
            _ => false,
        }
    }

    fn is_numpy(&self, e: &ast::Expr) -> bool {
        self.src
            .resolve(e)
            .is_some_and(|p| p.starts_with("numpy.") || p == "numpy")
    }

    /// Whether `e` uses `name` other than by reading its values: as a
    /// whole value of its own (`K = I`, `return I`, `(I, J)`), through a
    /// view (`I[1:]`, `I.T`, `I.reshape`), or passed to a function that
    /// might keep it.
    fn may_alias(&self, e: &ast::Expr, name: &str) -> bool {
        let is_it = |x: &ast::Expr| matches!(x, ast::Expr::Name(n) if n.id.as_str() == name);
        // An operand whose values are read: fine itself, else look inside.
        let read = |x: &ast::Expr| !is_it(x) && self.may_alias(x, name);
        match e {
            ast::Expr::Name(n) => n.id.as_str() == name,
            ast::Expr::BinOp(b) => read(&b.left) || read(&b.right),
            ast::Expr::UnaryOp(u) => read(&u.operand),
            ast::Expr::Compare(c) => read(&c.left) || c.comparators.iter().any(read),
            ast::Expr::Subscript(s) => {
                let items: Vec<&ast::Expr> = match s.slice.as_ref() {
                    ast::Expr::Tuple(t) => t.elts.iter().collect(),
                    one => vec![one],
                };
                self.may_alias(&s.value, name) || items.into_iter().any(read)
            }
            ast::Expr::Attribute(a) if is_it(&a.value) => {
                !matches!(a.attr.as_str(), "shape" | "size" | "ndim" | "dtype")
            }
            ast::Expr::Call(c) => {
                let args_read =
                    c.args.iter().any(read) || c.keywords.iter().any(|k| read(&k.value));
                let args_kept = c.args.iter().any(|a| pyast::mentions(a, name))
                    || c.keywords.iter().any(|k| pyast::mentions(&k.value, name));
                match c.func.as_ref() {
                    // A method of the array that gives a new array.
                    ast::Expr::Attribute(a) if is_it(&a.value) => {
                        !matches!(
                            a.attr.as_str(),
                            "astype"
                                | "copy"
                                | "sum"
                                | "mean"
                                | "max"
                                | "min"
                                | "prod"
                                | "any"
                                | "all"
                                | "argmax"
                                | "argmin"
                                | "std"
                                | "var"
                        ) || args_read
                    }
                    f if self.copying_numpy_function(f) => args_read,
                    f => self.may_alias(f, name) || args_kept,
                }
            }
            other => {
                let mut found = false;
                pyast::walk_expr(other, &mut |x| found |= is_it(x));
                found
            }
        }
    }

    /// A NumPy function that always gives a new array (never its argument
    /// or a view of it).
    fn copying_numpy_function(&self, f: &ast::Expr) -> bool {
        let Some(path) = self.src.resolve(f) else {
            return false;
        };
        let Some(short) = path.strip_prefix("numpy.") else {
            return false;
        };
        crate::numpy::math_calls::math_fn(&path).is_some()
            || matches!(
                short,
                "minimum"
                    | "maximum"
                    | "where"
                    | "clip"
                    | "abs"
                    | "absolute"
                    | "add"
                    | "subtract"
                    | "multiply"
                    | "divide"
                    | "true_divide"
                    | "floor_divide"
                    | "power"
                    | "mod"
                    | "remainder"
                    | "sum"
                    | "mean"
                    | "max"
                    | "min"
                    | "amax"
                    | "amin"
                    | "prod"
                    | "any"
                    | "all"
                    | "copy"
                    | "array"
                    | "zeros_like"
                    | "ones_like"
                    | "empty_like"
                    | "full_like"
                    | "roll"
            )
    }
}

/// Whether `s` binds `name` anew (`name = …`, `name, other = …`) without
/// reading it, at the top of its block.
impl Lowerer<'_> {
    /// The migrated function's own `def`, as written.
    fn own_def(&self) -> Option<&ast::StmtFunctionDef> {
        self.src
            .functions_named(&self.fn_name)
            .into_iter()
            .find(|x| x.def.name.as_str() == self.fn_name)
            .map(|f| f.def)
    }

    /// The names the migrated function's body rebinds anywhere.
    pub(crate) fn names_rebound_in_function(&self) -> std::collections::HashSet<String> {
        self.own_def()
            .map(|d| pyast::names_rebound(&d.body))
            .unwrap_or_default()
    }

    /// The names private to top-level loop `f` (see the module doc).
    pub(crate) fn loop_private_names(&self, f: &ast::StmtFor) -> Vec<String> {
        let Some(def) = self.own_def() else {
            return Vec::new();
        };
        let body = &def.body;
        let Some(at) = body.iter().position(
            |s| matches!(s, ast::Stmt::For(g) if ast::Ranged::range(g) == ast::Ranged::range(f)),
        ) else {
            return Vec::new();
        };
        let loop_vars = pyast::target_names(&f.target);
        let mut out: Vec<String> = Vec::new();
        for s in &f.body {
            let ast::Stmt::Assign(a) = s else { continue };
            for t in &a.targets {
                for n in pyast::target_names(t) {
                    if out.contains(&n)
                        || loop_vars.contains(&n)
                        || !binds_first(&f.body, &n)
                        || pyast::mentions(&f.iter, &n)
                        || !dead_from(&body[at + 1..], &n)
                    {
                        continue;
                    }
                    out.push(n);
                }
            }
        }
        out
    }
}

/// Whether `name`'s first mention in `block` is a top-level statement
/// that binds it without reading it.
fn binds_first(block: &[ast::Stmt], name: &str) -> bool {
    block
        .iter()
        .find(|s| pyast::body_mentions(std::slice::from_ref(s), name))
        .is_some_and(|s| rebinds_without_reading(s, name))
}

/// Whether the value `name` holds before `rest` runs is never read: the
/// first statement to mention it binds it anew, or a loop that does so
/// first in its body passes it on (it may run no iteration), or none
/// mentions it.
fn dead_from(rest: &[ast::Stmt], name: &str) -> bool {
    for s in rest {
        if !pyast::body_mentions(std::slice::from_ref(s), name) {
            continue;
        }
        if rebinds_without_reading(s, name) {
            return true;
        }
        match s {
            ast::Stmt::For(g) if !pyast::mentions(&g.iter, name) && g.orelse.is_empty() => {
                if !binds_first(&g.body, name) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

fn rebinds_without_reading(s: &ast::Stmt, name: &str) -> bool {
    let (targets, value): (Vec<&ast::Expr>, &ast::Expr) = match s {
        ast::Stmt::Assign(a) => (a.targets.iter().collect(), a.value.as_ref()),
        ast::Stmt::AnnAssign(a) => match &a.value {
            Some(v) => (vec![a.target.as_ref()], v.as_ref()),
            None => return false,
        },
        _ => return false,
    };
    !pyast::mentions(value, name)
        && targets
            .iter()
            .any(|t| pyast::target_names(t).iter().any(|n| n == name))
        && targets.iter().all(|t| {
            // `out[0] = …` reads `out`; only names may bind it.
            pyast::target_names(t).iter().any(|n| n == name) || !pyast::mentions(t, name)
        })
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

/// The value `name += v` rebinds an index grid `old` to: `new` (its
/// operation's result) in `old`'s shape and dtype, as NumPy's in-place
/// update keeps them (a float added to an integer grid raises there, and
/// is refused here). It stays a template when it reads no array and no
/// variable (`I + 1`), so a store through it still sees a grid.
pub(crate) fn updated_template(
    old: &crate::numpy::array_expr::ArrVal,
    new: crate::numpy::array_expr::Val,
    line: u32,
) -> Lower<crate::numpy::array_expr::Val> {
    use crate::numpy::array_expr::Val;
    let Val::Array(mut av) = new else {
        return refuse(NAME, line, "an in-place update that gives no array");
    };
    if av.shape != old.shape {
        return refuse(
            NAME,
            line,
            "an in-place update whose value has another shape than the array (NumPy raises: the output cannot broadcast)",
        );
    }
    if av.elem != old.elem {
        let (from, to) = (av.elem, old.elem);
        let kind = |t: port_codegen::ir::ScalarType| {
            if t.is_complex() {
                3
            } else if t.is_float() {
                2
            } else if t == port_codegen::ir::ScalarType::Bool {
                0
            } else {
                1
            }
        };
        if kind(from) > kind(to) {
            return refuse(
                NAME,
                line,
                format!(
                    "an in-place update of a {} array with a {} value (NumPy raises: it cannot cast it back)",
                    crate::types::numba_scalar(to),
                    crate::types::numba_scalar(from)
                ),
            );
        }
        av.body = crate::ir_util::cast_to(av.body, from, to);
        av.elem = to;
    }
    let mut plain = av.reads().is_empty();
    port_codegen::ir::walk_expr(&av.body, &mut |x| {
        if let port_codegen::ir::Expr::Var(v) = x {
            plain &= v.starts_with("__e");
        }
    });
    av.computed = !plain;
    Ok(Val::Array(av))
}
