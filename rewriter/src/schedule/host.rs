//! The top level of the function, statement by statement: straight-line
//! code around the loops becomes the host wrapper's steps (scalars,
//! allocations, names bound to device arrays, what `return` gives); loops
//! and array expressions become kernels through the passes of
//! [`crate::lower`]; `for`/`while`/`if` go to [`super::host_schedule`],
//! calls of the program's helpers to [`super::app_inline`].

use port_codegen::ir::build::*;
use port_codegen::ir::{Expr, ScalarType};
use rustpython_parser::ast;

use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{
    stmt_name, whole_array, HostBind, Lowerer, Recurse, Region, RegionKind,
};
use crate::numpy::array_expr::{self, ArrVal, Val};
use crate::plan::{HostStep, HostValue};
use crate::pyast;

impl Lowerer<'_> {
    /// Lowers the function body; gives what it returns.
    pub(crate) fn host_body(&mut self, body: &[ast::Stmt]) -> Lower<Option<HostValue>> {
        let mut r = Region::new(RegionKind::Host, "");
        self.host_block(&mut r, body)
    }

    /// Lowers statements at host level (the function's top level, or the
    /// body of a host loop or `if`); gives what a `return` returns.
    pub(crate) fn host_statements(
        &mut self,
        r: &mut Region,
        body: &[ast::Stmt],
    ) -> Lower<Option<HostValue>> {
        let r = &mut *r;
        for (k, s) in body.iter().enumerate() {
            let line = self.src.line(s);
            if pyast::is_docstring(s) {
                continue;
            }
            if self.stmt_calls_app(s) {
                // A helper of the program: its body, inlined.
                match self.host_inline_stmt(r, s)? {
                    Some(v) => return Ok(Some(v)),
                    None => continue,
                }
            }
            match s {
                ast::Stmt::Pass(_) => {}
                ast::Stmt::Assert(a) => self.host_assert(r, a, line)?,
                ast::Stmt::Raise(rs) if self.host_depth > 0 => self.host_raise(rs, line)?,
                ast::Stmt::Return(_) if self.host_depth > 0 => {
                    return refuse(
                        crate::schedule::host_schedule::NAME,
                        line,
                        "a `return` inside a host loop or `if`: port's host schedule returns once, at the end of the function",
                    )
                }
                ast::Stmt::Return(ret) => {
                    return match &ret.value {
                        None => Ok(None),
                        Some(v) => {
                            let mut val = self.expr(r, v)?;
                            if self.numba_boxes {
                                val = python_boxed(val);
                            }
                            self.host_value(val, line).map(Some)
                        }
                    };
                }
                // `out = None` rebound before any use binds nothing.
                ast::Stmt::Assign(_) if self.dead_none_binding(s, &body[k + 1..], line)? => {}
                ast::Stmt::Assign(a) if a.targets.len() > 1 => {
                    // `a = b = value`: the value once, then every target
                    // bound to it in turn, as Python does.
                    let first = &a.targets[0];
                    if self.separate_new_arrays(a) {
                        // `p = v = np.zeros_like(b)` where neither array
                        // changes in place: the sharing cannot be seen, and
                        // an array of its own each lets one kernel read
                        // both after the loop rebinds one of them.
                        for t in &a.targets {
                            self.host_assign_stmt(r, t, &a.value, line)?;
                        }
                    } else if let ast::Expr::Name(_) = first {
                        self.host_assign_stmt(r, first, &a.value, line)?;
                        for t in &a.targets[1..] {
                            self.host_assign_stmt(r, t, first, line)?;
                        }
                    } else {
                        // `a[i] = b[j] = value`: the value computed once
                        // into a temporary, then stored to each in turn.
                        let v = self.expr(r, &a.value)?;
                        let v = self.settle_chained(v, line)?;
                        for t in &a.targets {
                            self.store_chained(r, t, v.clone(), line)?;
                        }
                    }
                }
                ast::Stmt::Assign(a) if a.targets.len() == 1 => {
                    self.host_assign_stmt(r, &a.targets[0], &a.value, line)?
                }
                ast::Stmt::AnnAssign(a) if a.value.is_some() => {
                    let v = a.value.as_ref().expect("checked");
                    self.host_assign_stmt(r, &a.target, v, line)?
                }
                // `a[m] += v` is `a[m] = a[m] + v`, element by element.
                ast::Stmt::AugAssign(a) if self.is_masked_target(r, &a.target) => {
                    let ast::Expr::Subscript(s) = a.target.as_ref() else {
                        unreachable!("a masked target is a subscript")
                    };
                    let value = ast::Expr::BinOp(ast::ExprBinOp {
                        range: a.range,
                        left: a.target.clone(),
                        op: a.op,
                        right: a.value.clone(),
                    });
                    self.masked_store(r, s, &value, line)?
                }
                ast::Stmt::AugAssign(a) => {
                    let cur = match a.target.as_ref() {
                        // `dx[np.arange(n), y] -= 1`: a view through the indices.
                        ast::Expr::Subscript(s) => match self.grid_view(r, s, line)? {
                            Some(tv) => Val::Array(tv),
                            None => self.expr(r, &a.target)?,
                        },
                        _ => self.expr(r, &a.target)?,
                    };
                    let rhs = self.expr(r, &a.value)?;
                    self.assume_broadcast(r, &[&cur, &rhs], line)?;
                    let new = self.binop(a.op, &cur, &rhs, line)?;
                    self.aug_choice(a, &cur, &rhs);
                    match (a.target.as_ref(), &cur) {
                        (ast::Expr::Name(n), Val::Scalar(..)) => {
                            self.host_assign(n.id.as_str(), new, line)?
                        }
                        // `I += 1` on an index grid that owns no storage.
                        (ast::Expr::Name(n), Val::Array(tv))
                            if !tv.computed && tv.view_target().is_none() =>
                        {
                            let name = n.id.as_str();
                            self.template_update_allowed(name, body, line)?;
                            let new = crate::schedule::host_names::updated_template(tv, new, line)?;
                            self.host_assign(name, new, line)?
                        }
                        (_, Val::Array(tv)) => {
                            let hint = pyast::subscript_base(&a.target).unwrap_or_default();
                            self.store_kernel(tv, &new, &hint, line)?
                        }
                        (_, Val::Scalar(Expr::Load(er), t, _)) => {
                            self.store_element(er.clone(), *t, new, line)?
                        }
                        _ => return refuse("frontend", line, self.single_element_reason()),
                    }
                }
                ast::Stmt::For(f) => self.host_for(r, f)?,
                ast::Stmt::While(w) => self.host_while(r, w)?,
                ast::Stmt::If(i) => self.host_if(r, i)?,
                ast::Stmt::Break(_) => self.host_break(line)?,
                ast::Stmt::Expr(e) => {
                    let ast::Expr::Call(c) = e.value.as_ref() else {
                        return refuse("frontend", line, "an expression statement with no effect a kernel could have");
                    };
                    match c.func.as_ref() {
                        // `np.add(a, b, out=c)`: a store into `c`.
                        _ if crate::pyast::out_keyword(c)
                            && self.src.resolve(&c.func).is_some_and(|n| n.starts_with("numpy.")) =>
                        {
                            self.expr(r, &e.value)?;
                        }
                        ast::Expr::Attribute(a) if a.attr.as_str() == "fill" && c.args.len() == 1 => {
                            let Val::Array(tv) = self.expr(r, &a.value)? else {
                                return refuse("frontend", line, "`.fill` of a non-array");
                            };
                            let v = self.expr(r, &c.args[0])?;
                            let hint = pyast::subscript_base(&a.value).unwrap_or_default();
                            self.store_kernel(&tv, &v, &hint, line)?
                        }
                        _ => {
                            let called = self.src.resolve(&c.func).unwrap_or_default();
                            let why = if called.starts_with("numpy.") {
                                "a NumPy call whose result is dropped: port takes calls that store into an array given to them only with `out=` (and `np.copyto(dst, src)`, `.fill`); write the result into an array (`a[...] = …`)"
                            } else {
                                "a call as a statement of its own, between kernels: port runs NumPy's array statements and inlines the program's own helpers, not other calls; migrate the callee itself, or compute what it does with array statements"
                            };
                            return refuse(
                                crate::lower::app_calls::NAME,
                                line,
                                format!("`{}`: {why}", self.src.text_of(c)),
                            );
                        }
                    }
                }
                other => {
                    return refuse(
                        "frontend",
                        line,
                        format!(
                            "{} at the top level of the function: port migrates straight-line code around parallel loops",
                            stmt_name(other)
                        ),
                    )
                }
            }
        }
        Ok(None)
    }

    fn host_assign_stmt(
        &mut self,
        r: &mut Region,
        target: &ast::Expr,
        value: &ast::Expr,
        line: u32,
    ) -> Lower<()> {
        match target {
            ast::Expr::Name(n) => {
                if self.bind_selection(r, n.id.as_str(), value)? {
                    return Ok(());
                }
                if let ast::Expr::Call(c) = value {
                    if let Some((arr, ty)) = self.alloc_stmt(r, n.id.as_str(), c, line)? {
                        let view = ArrVal::named(&arr, ty);
                        return self.bind_new_array(n.id.as_str(), &arr, view, line);
                    }
                }
                let v = self.expr(r, value)?;
                self.bind_choice(n.id.as_str(), value);
                self.host_assign(n.id.as_str(), v, line)
            }
            ast::Expr::Tuple(t) => {
                let items = match self.expr(r, value)? {
                    Val::Tuple(items) => items,
                    // `I, J = np.mgrid[…]`, `a, b, c = abc`: an array
                    // unpacks along its first axis.
                    Val::Array(av) => self.unpack_array(Some(r), &av, t.elts.len(), line)?,
                    _ => return refuse("frontend", line, "unpacking a value that is not a tuple"),
                };
                if items.len() != t.elts.len() {
                    return refuse("frontend", line, "unpacking the wrong number of values");
                }
                if self.tuple_rebind(&t.elts, &items, line)? {
                    return Ok(());
                }
                // `KE[i], PE[i] = energies(…)`: every value is computed
                // before the first store, as Python does.
                let stores = t.elts.iter().any(|e| matches!(e, ast::Expr::Subscript(_)));
                let items = if stores {
                    let mut settled = Vec::new();
                    for v in items {
                        settled.push(self.settle_chained(v, line)?);
                    }
                    settled
                } else {
                    items
                };
                for (tgt, v) in t.elts.iter().zip(items) {
                    match tgt {
                        ast::Expr::Name(n) => self.host_assign(n.id.as_str(), v, line)?,
                        ast::Expr::Subscript(_) => self.store_subscript(r, tgt, v, line)?,
                        _ => {
                            return refuse(
                                "frontend",
                                line,
                                "unpacking into something other than names and subscripts",
                            )
                        }
                    }
                }
                Ok(())
            }
            ast::Expr::Subscript(s) if is_mask_index(&s.slice) => {
                self.masked_store(r, s, value, line)
            }
            // `M[[i, j]] = M[[j, i]]` (a row swap), `x[[a, b]] = v`: one
            // store per listed position, every value read first, as NumPy
            // evaluates the right-hand side before it assigns.
            ast::Expr::Subscript(_) if pyast::split_list_index(target).is_some() => {
                let targets = pyast::split_list_index(target).expect("checked");
                let values = match pyast::split_list_index(value) {
                    Some(v) if v.len() == targets.len() => v,
                    Some(_) => return refuse(
                        "frontend",
                        line,
                        "lists of positions of different lengths on the two sides (NumPy raises)",
                    ),
                    None => {
                        // One value for every position: a scalar only.
                        let v = self.expr(r, value)?;
                        if !matches!(v, Val::Scalar(..)) {
                            return refuse(
                                "frontend",
                                line,
                                format!(
                                    "`{}`: a store through a list of positions of a value that is not a scalar or the same list's gather",
                                    self.src.text_of(target)
                                ),
                            );
                        }
                        vec![value.clone(); targets.len()]
                    }
                };
                // Fancy indexing copies: each value is computed into an
                // array (or host scalar) of its own before the first store.
                let mut settled = Vec::new();
                for v in &values {
                    let v = match self.expr(r, v)? {
                        Val::Array(mut av) => {
                            av.computed = true;
                            self.settle_chained(Val::Array(av), line)?
                        }
                        other => self.settle_chained(other, line)?,
                    };
                    settled.push(v);
                }
                for (t, v) in targets.iter().zip(settled) {
                    self.store_subscript(r, t, v, line)?;
                }
                Ok(())
            }
            ast::Expr::Subscript(_) => {
                let v = self.expr(r, value)?;
                self.store_subscript(r, target, v, line)
            }
            _ => refuse(
                "frontend",
                line,
                format!("assignment to `{}`", self.src.text_of(target)),
            ),
        }
    }

    /// Whether every target of a chained assignment is a name bound to a
    /// new array from a NumPy creation call that nothing changes in place.
    fn separate_new_arrays(&self, a: &ast::StmtAssign) -> bool {
        let ast::Expr::Call(c) = a.value.as_ref() else {
            return false;
        };
        let creation = self
            .src
            .resolve(&c.func)
            .is_some_and(|n| crate::lower::hoist_alloc::is_allocation(&n));
        let body = self
            .src
            .functions_named(&self.fn_name)
            .into_iter()
            .find(|f| f.def.name.as_str() == self.fn_name)
            .map(|f| &f.def.body);
        creation
            && body.is_some_and(|body| {
                // The names must be the function's own (not those of an
                // inlined helper, whose body is elsewhere).
                a.targets.iter().all(|t| match t {
                    ast::Expr::Name(n) => {
                        pyast::body_mentions(body, n.id.as_str())
                            && !pyast::may_mutate_in_place(body, n.id.as_str())
                    }
                    _ => false,
                })
            })
    }

    /// A chained assignment's value, computed once: an array expression
    /// into a temporary array, a scalar into a host scalar.
    fn settle_chained(&mut self, v: Val, line: u32) -> Lower<Val> {
        match v {
            Val::Array(av) if av.computed => {
                let arr = self.materialise("chain", &av, line)?;
                let ty = match self.host.get(&arr) {
                    Some(HostBind::Array(t)) => *t,
                    _ => unreachable!("materialise binds the array"),
                };
                Ok(Val::Array(ArrVal::named_like(&arr, ty, &av)))
            }
            Val::Scalar(e, t, weak) => {
                let name = self.fresh("chain");
                self.host_assign(&name, Val::Scalar(e, t, weak), line)?;
                self.lookup_host_scalar(&name)
                    .ok_or(())
                    .or_else(|()| refuse("frontend", line, "a chained assignment of a scalar"))
            }
            other => Ok(other),
        }
    }

    /// Stores an already computed value to one target of a chained
    /// assignment.
    fn store_chained(
        &mut self,
        r: &mut Region,
        target: &ast::Expr,
        v: Val,
        line: u32,
    ) -> Lower<()> {
        match target {
            ast::Expr::Name(n) => self.host_assign(n.id.as_str(), v, line),
            ast::Expr::Subscript(s) if !is_mask_index(&s.slice) => {
                self.store_subscript(r, target, v, line)
            }
            _ => refuse(
                "frontend",
                line,
                format!(
                    "a chained assignment to `{}`: port takes names and subscripts",
                    self.src.text_of(target)
                ),
            ),
        }
    }

    /// `a[…] = v` for a computed value: a kernel storing a view, or one
    /// element.
    fn store_subscript(
        &mut self,
        r: &mut Region,
        target: &ast::Expr,
        v: Val,
        line: u32,
    ) -> Lower<()> {
        if let ast::Expr::Subscript(s) = target {
            if let Some(tv) = self.grid_view(r, s, line)? {
                let hint = pyast::subscript_base(target).unwrap_or_default();
                return self.store_kernel(&tv, &v, &hint, line);
            }
        }
        match self.expr(r, target)? {
            Val::Array(tv) => {
                let hint = pyast::subscript_base(target).unwrap_or_default();
                self.store_kernel(&tv, &v, &hint, line)
            }
            Val::Scalar(Expr::Load(er), t, _) => self.store_element(er, t, v, line),
            _ => refuse("frontend", line, self.single_element_reason()),
        }
    }

    fn lookup_host_scalar(&self, name: &str) -> Option<Val> {
        match self.host.get(name) {
            Some(HostBind::Scalar(t)) => Some(Val::Scalar(var(name), *t, false)),
            Some(HostBind::DeviceScalar { acc, ty, weak }) => {
                Some(Val::Scalar(load(acc, vec![i64(0)]), *ty, *weak))
            }
            _ => None,
        }
    }

    /// `name = value` at the top level.
    pub(crate) fn host_assign(&mut self, name: &str, v: Val, line: u32) -> Lower<()> {
        match v {
            Val::Scalar(e, t, weak) => {
                if let Expr::Load(er) = &e {
                    if er.indices == [i64(0)] && self.is_acc(&er.array) {
                        self.host.insert(
                            name.to_string(),
                            HostBind::DeviceScalar {
                                acc: er.array.clone(),
                                ty: t,
                                weak,
                            },
                        );
                        self.bound_as.remove(name);
                        return Ok(());
                    }
                }
                let ty = self.declare_type_weak(name, t, weak);
                let value = self.host_scalar(cast_to(e, t, ty), line)?;
                self.bound_as.insert(name.to_string(), (t, weak));
                self.used.insert(name.to_string());
                // Its least value, for the indices it computes: known when
                // this is its one binding in program order (not in a loop
                // or an `if`, where another may reach a read).
                let floor = (self.host_depth == 0 && !self.loop_bound.contains(name))
                    .then(|| array_expr::least(&value, &self.floors))
                    .flatten();
                self.set_floor(name, floor);
                self.steps.push(HostStep::Scalar {
                    name: name.to_string(),
                    ty,
                    value,
                });
                self.host.insert(name.to_string(), HostBind::Scalar(ty));
                Ok(())
            }
            Val::Array(mut av) => {
                if av.computed && av.is_constant() {
                    // Constants (a filter, a stencil's weights): the name is
                    // the template, nothing is allocated.
                    av.computed = false;
                }
                if !av.computed {
                    if self.host_depth > 0 || self.loop_bound.contains(name) {
                        if let Some(src) = whole_array(&av) {
                            if self.tuple_rebind_names(&[name.to_string()], &[src], line)? {
                                return Ok(());
                            }
                        }
                    }
                    // `r = r.reshape(…)`, `r = r.T`: the view reads the
                    // device array the name held until now, which keeps
                    // living under a name of its own (a run-time alias).
                    if let Some(HostBind::Array(ty)) = self.host.get(name).cloned() {
                        if av.reads().contains(name) {
                            let old = self.fresh(name);
                            self.host.insert(old.clone(), HostBind::Array(ty));
                            self.rebind(vec![old.clone()], vec![name.to_string()]);
                            let map = std::collections::HashMap::from([(name.to_string(), old)]);
                            av.body = crate::ir_util::rename_arrays(&av.body, &map);
                            av.shape = av
                                .shape
                                .iter()
                                .map(|e| crate::ir_util::rename_arrays(e, &map))
                                .collect();
                        }
                    }
                    self.host.insert(name.to_string(), HostBind::View(av));
                    return Ok(());
                }
                // A value with broadcast (extent-1) dimensions is kept in an
                // array of its own, and the name is a view that broadcasts.
                let hint = if av.has_unit_dims() {
                    self.fresh(name)
                } else {
                    name.to_string()
                };
                let arr = self.materialise(&hint, &av, line)?;
                let ty = match self.host.get(&arr) {
                    Some(HostBind::Array(t)) => *t,
                    _ => unreachable!("materialise binds the array"),
                };
                self.bind_new_array(name, &arr, ArrVal::named_like(&arr, ty, &av), line)
            }
            Val::Tuple(items) if items.iter().all(|v| matches!(v, Val::Scalar(..))) => {
                // `s = x.shape`: each element fixed now, as Python's tuple
                // is: a shape of an array never rebound stays itself (its
                // extents keep their meaning for the shape checks), any
                // other value becomes a host scalar of its own.
                let rebound = self.names_rebound_in_function();
                let mut fixed = Vec::new();
                for (k, v) in items.into_iter().enumerate() {
                    let Val::Scalar(e, t, weak) = v else {
                        unreachable!("scalars only")
                    };
                    let stable = match &e {
                        Expr::Lit(_) => true,
                        Expr::Shape { array, .. } => {
                            self.params.iter().any(|(p, _)| p == array) && !rebound.contains(array)
                        }
                        _ => false,
                    };
                    if stable {
                        fixed.push(Val::Scalar(e, t, weak));
                        continue;
                    }
                    let e = self.host_scalar(e, line)?;
                    let n = self.fresh(&format!("{name}_{k}"));
                    self.steps.push(HostStep::Scalar {
                        name: n.clone(),
                        ty: t,
                        value: e,
                    });
                    self.host.insert(n.clone(), HostBind::Scalar(t));
                    fixed.push(Val::Scalar(var(&n), t, weak));
                }
                if self.host_depth > 0 && self.host.contains_key(name) {
                    return refuse(
                        "frontend",
                        line,
                        format!("`{name}` is rebound to a tuple inside a loop or `if`: unpack it (`a, b = …`)"),
                    );
                }
                self.host.insert(name.to_string(), HostBind::Tuple(fixed));
                Ok(())
            }
            Val::Tuple(_) => refuse(
                "frontend",
                line,
                format!("`{name}` holds a tuple of arrays: unpack it (`a, b = …`)"),
            ),
        }
    }

    fn is_acc(&self, array: &str) -> bool {
        self.accs.contains(array)
    }

    /// The returned host scalar `n` as a reduction's result that, on an
    /// empty loop, is the Python number it started as
    /// (`Lowerer::empty_start`): when the return is at the top level and
    /// the last step binding `n` is a top-level read-back of such a
    /// reduction's accumulator.
    fn scalar_or_start(&self, n: &str, ty: ScalarType) -> Option<HostValue> {
        if self.host_depth > 0 {
            return None;
        }
        let mut last: Option<&HostStep> = None;
        HostStep::walk(&self.steps, &mut |s| {
            if s.binds().contains(&n) {
                last = Some(s);
            }
        });
        let step = last?;
        let HostStep::ReadBack { array, .. } = step else {
            return None;
        };
        let top = self.steps.iter().any(|s| std::ptr::eq(s, step));
        let (trip, start, start_ty, python) = self.empty_start.get(array).filter(|_| top)?;
        Some(HostValue::ScalarOrStart {
            name: n.to_string(),
            ty,
            trip: trip.clone(),
            start: start.clone(),
            start_ty: *start_ty,
            python: *python,
        })
    }

    /// What `return value` gives the caller.
    pub(crate) fn host_value(&mut self, v: Val, line: u32) -> Lower<HostValue> {
        match v {
            Val::Scalar(e, t, _) => {
                let e = self.host_scalar(e, line)?;
                if let Expr::Var(n) = &e {
                    if let Some(v) = self.scalar_or_start(n, t) {
                        return Ok(v);
                    }
                    if matches!(self.host.get(n), Some(HostBind::Scalar(_))) {
                        return Ok(HostValue::Scalar(n.clone(), t));
                    }
                }
                let name = self.fresh("result");
                self.steps.push(HostStep::Scalar {
                    name: name.clone(),
                    ty: t,
                    value: e,
                });
                self.host.insert(name.clone(), HostBind::Scalar(t));
                Ok(HostValue::Scalar(name, t))
            }
            Val::Array(av) => {
                if let Some(name) = whole_array(&av) {
                    if matches!(self.host.get(&name), Some(HostBind::Array(_)))
                        || self.params.iter().any(|(p, _)| *p == name)
                    {
                        return Ok(HostValue::Array(name));
                    }
                }
                let arr = self.materialise("result", &av, line)?;
                Ok(HostValue::Array(arr))
            }
            Val::Tuple(items) => {
                let mut out = Vec::new();
                for it in items {
                    out.push(self.host_value(it, line)?);
                }
                Ok(HostValue::Tuple(out))
            }
        }
    }
}

/// An index that may be a boolean mask (`a[a < 0]`, `a[mask]`): an
/// expression, not a slice, a tuple or a constant.
fn is_mask_index(e: &ast::Expr) -> bool {
    matches!(
        e,
        ast::Expr::Compare(_)
            | ast::Expr::BoolOp(_)
            | ast::Expr::UnaryOp(_)
            | ast::Expr::BinOp(_)
            | ast::Expr::Name(_)
    )
}

impl Lowerer<'_> {
    /// Whether `target` is `a[m]` with `m` a boolean array.
    fn is_masked_target(&mut self, r: &mut Region, target: &ast::Expr) -> bool {
        match target {
            ast::Expr::Subscript(s) if is_mask_index(&s.slice) => matches!(
                self.expr(r, &s.slice),
                Ok(Val::Array(m)) if m.elem == port_codegen::ir::ScalarType::Bool
            ),
            _ => false,
        }
    }

    /// `a[mask] = value` for a boolean array `mask` of `a`'s shape:
    /// `a = np.where(mask, value, a)`, element by element, where `value`
    /// is a single value or built from selections through the same mask
    /// (`masked::masked_value`).
    /// Other indices (an integer name) go the usual way.
    fn masked_store(
        &mut self,
        r: &mut Region,
        s: &ast::ExprSubscript,
        value: &ast::Expr,
        line: u32,
    ) -> Lower<()> {
        let base = self.expr(r, &s.value)?;
        let mask = self.expr(r, &s.slice)?;
        let (Val::Array(base), Val::Array(mask)) = (&base, &mask) else {
            // Not a mask: an ordinary subscript.
            let v = self.expr(r, value)?;
            let target = ast::Expr::Subscript(s.clone());
            return self.store_subscript(r, &target, v, line);
        };
        if mask.elem.is_int() {
            // An array of indices, not a mask: a store through it.
            let v = self.expr(r, value)?;
            let target = ast::Expr::Subscript(s.clone());
            return self.store_subscript(r, &target, v, line);
        }
        if mask.elem != port_codegen::ir::ScalarType::Bool || mask.ndim() != base.ndim() {
            return refuse(
                crate::numpy::array_expr::NAME,
                line,
                "fancy indexing with an array of indices: only a boolean mask of the array's shape is supported",
            );
        }
        let n = base.ndim();
        let v = match self.masked_value(r, &s.slice, mask, value, line)? {
            Val::Scalar(v, vt, _) => cast_to(v, vt, base.elem),
            Val::Array(av) => cast_to(av.body_in(n), av.elem, base.elem),
            Val::Tuple(_) => unreachable!("masked_value refuses tuples"),
        };
        let body = crate::ir_util::select(mask.body_in(n), v, base.body.clone());
        let new = ArrVal {
            shape: base.shape.clone(),
            elem: base.elem,
            body,
            computed: true,
        };
        let hint = pyast::subscript_base(&s.value).unwrap_or_default();
        self.log.applied(
            crate::numpy::array_expr::NAME,
            format!("masked assignment (line {line}) as np.where, element by element"),
        );
        self.store_kernel(base, &Val::Array(new), &hint, line)
    }
}

/// A value as Numba hands it back to Python: numbers as Python's `float`,
/// `int` and `complex` (a float32 widens to float64, an int32 to int64;
/// a uint64 stays, as no int64 holds it), in a tuple too.
fn python_boxed(v: Val) -> Val {
    match v {
        Val::Scalar(e, t, weak) => {
            let to = match t {
                ScalarType::F32 => ScalarType::F64,
                ScalarType::I8
                | ScalarType::I16
                | ScalarType::I32
                | ScalarType::U8
                | ScalarType::U16
                | ScalarType::U32 => ScalarType::I64,
                ScalarType::C64 => ScalarType::C128,
                t => t,
            };
            if to == t {
                Val::Scalar(e, t, weak)
            } else {
                Val::Scalar(crate::ir_util::cast_to(e, t, to), to, weak)
            }
        }
        Val::Tuple(items) => Val::Tuple(items.into_iter().map(python_boxed).collect()),
        array => array,
    }
}
