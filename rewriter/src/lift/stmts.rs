//! Statements inside kernels and device functions: blocks, assignments to
//! scalars, elements and slices, augmented assignments, `if`, `while` and
//! serial `for` loops, with the bookkeeping of which locals a loop writes.

use port_codegen::ir::build::*;
use port_codegen::ir::{AtomicOp, ElemRef, Expr, ScalarType, Stmt, UnaryOp};
use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::text_size::TextSize;

use crate::error::{refuse, Lower};
use crate::ir_util::{cast_to, lit};
use crate::lower::context::{sanitize, stmt_name, Local, Lowerer, Recurse, Region, RegionKind};
use crate::numpy::array_expr::{self, Val};
use crate::numpy::math_calls;
use crate::pyast;

impl<'a> Lowerer<'a> {
    pub(super) fn lift_block(&mut self, r: &mut Region, body: &[ast::Stmt]) -> Lower<()> {
        for s in body {
            self.stmt(r, s)?;
        }
        Ok(())
    }

    /// Declares or assigns the scalar local `name`; `weak` when the value
    /// is a Python number (the local stays weak while every binding of it
    /// is, this pass and the last).
    pub fn set_scalar(
        &mut self,
        r: &mut Region,
        name: &str,
        value: Expr,
        (vt, weak): (ScalarType, bool),
        at: TextSize,
    ) {
        if let Some((_, ty)) = r.reductions.get(name).copied() {
            let ir = sanitize(name);
            if crate::lower::python_ints::data_derived(&value, &self.data_ints) {
                self.data_ints.insert(ir.clone());
            }
            r.push(assign(&ir, cast_to(value, vt, ty)));
            // An update by a Python number keeps the reduction weak
            // (`s += int(a[i])` sums Python ints).
            let key = format!("{}{name}", r.scope);
            self.declare_type_weak(&key, vt, weak);
            return;
        }
        let key = format!("{}{name}", r.scope);
        // A local bound to a value from the data is data where it is read.
        let data = crate::lower::python_ints::data_derived(&value, &self.data_ints);
        if let Some(Local::Scalar { ir, ty, .. }) = r.locals.get(name).cloned() {
            if data {
                self.data_ints.insert(ir.clone());
            }
            self.declare_type_weak(&key, vt, weak);
            let weak = self.weak_local(&key);
            r.push(assign(&ir, cast_to(value, vt, ty)));
            r.locals
                .insert(name.to_string(), Local::Scalar { ir, ty, weak });
            return;
        }
        let ty = self.declare_type_weak(&key, vt, weak);
        let weak = weak && self.weak_local(&key);
        let ir = if r.inlining {
            self.local_temp(r, name)
        } else {
            let s = sanitize(name);
            self.used.insert(s.clone());
            s
        };
        if data {
            self.data_ints.insert(ir.clone());
        }
        r.locals.insert(
            name.to_string(),
            Local::Scalar {
                ir: ir.clone(),
                ty,
                weak,
            },
        );
        // Declare in the innermost block that holds every use of the name.
        let occ = r.occurrences.get(name).cloned().unwrap_or_default();
        let top = r.blocks.len() - 1;
        let mut k = top;
        if r.inlining {
            k = r.inline_base.min(top);
        } else {
            while k > 0 {
                let (lo, hi) = r.blocks[k].1;
                if occ.iter().all(|&o| o >= lo && o < hi) && at >= lo && at < hi {
                    break;
                }
                k -= 1;
            }
        }
        r.declare_in(k, &ir);
        if k == top {
            r.push(let_(&ir, ty, cast_to(value, vt, ty)));
        } else {
            r.blocks[k].0.push(let_(&ir, ty, lit(ty, 0.0)));
            r.push(assign(&ir, cast_to(value, vt, ty)));
        }
    }

    fn bind_local(
        &mut self,
        r: &mut Region,
        name: &str,
        v: Val,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        match v {
            Val::Scalar(e, t, weak) => {
                self.set_scalar(r, name, e, (t, weak), at);
                Ok(())
            }
            Val::Array(val) => {
                if matches!(r.locals.get(name), Some(Local::Scalar { .. })) {
                    return refuse(
                        "frontend",
                        line,
                        format!("`{name}` holds a number and then an array"),
                    );
                }
                let snapshot = if val.computed {
                    val.reads()
                        .into_iter()
                        .map(|a| {
                            let c = r.writes.get(&a).copied().unwrap_or(0);
                            (a, c)
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                r.locals
                    .insert(name.to_string(), Local::Array { val, snapshot });
                Ok(())
            }
            Val::Tuple(_) => refuse(
                "frontend",
                line,
                format!("`{name}` holds a tuple: unpack it (`a, b = …`)"),
            ),
        }
    }

    fn stmt(&mut self, r: &mut Region, s: &ast::Stmt) -> Lower<()> {
        let line = self.src.line(s);
        match s {
            ast::Stmt::Pass(_) => Ok(()),
            ast::Stmt::Expr(_) if pyast::is_docstring(s) => Ok(()),
            ast::Stmt::Assert(_) => Ok(()),
            ast::Stmt::Assign(a) => {
                if a.targets.len() != 1 {
                    return refuse("frontend", line, "chained assignment `a = b = …`");
                }
                self.assign_to(r, &a.targets[0], &a.value, s.start(), line)
            }
            ast::Stmt::AnnAssign(a) => match &a.value {
                Some(v) => self.assign_to(r, &a.target, v, s.start(), line),
                None => Ok(()),
            },
            ast::Stmt::AugAssign(a) => self.aug_assign(r, a, s.start(), line),
            ast::Stmt::For(f) => self.serial_for(r, f, line),
            ast::Stmt::While(w) => {
                if !w.orelse.is_empty() {
                    return refuse("frontend", line, "`while … else`");
                }
                let (c, t) = self.scalar(r, &w.test)?;
                let cond = math_calls::truthy(c, t);
                self.bump_loop_writes(r, &w.body);
                r.open(&w.body);
                self.block(r, &w.body)?;
                let body = r.close();
                r.push(while_(cond, body));
                Ok(())
            }
            ast::Stmt::If(i) => {
                let (c, t) = self.scalar(r, &i.test)?;
                let cond = math_calls::truthy(c, t);
                r.open(&i.body);
                self.block(r, &i.body)?;
                let then_body = r.close();
                r.open(&i.orelse);
                self.block(r, &i.orelse)?;
                let else_body = r.close();
                r.push(if_(cond, then_body, else_body));
                Ok(())
            }
            ast::Stmt::Break(_) => {
                r.push(Stmt::Break);
                Ok(())
            }
            ast::Stmt::Continue(_) => {
                r.push(Stmt::Continue);
                Ok(())
            }
            ast::Stmt::Return(ret) => {
                if r.kind != RegionKind::Device {
                    return refuse(
                        crate::lower::grid_stride::NAME,
                        line,
                        "`return` inside the parallel loop: each iteration runs on its own thread",
                    );
                }
                match &ret.value {
                    None => {
                        r.push(Stmt::Return(None));
                        Ok(())
                    }
                    Some(v) => {
                        let Val::Scalar(e, t, weak) = self.expr(r, v)? else {
                            return refuse(
                                "frontend",
                                line,
                                format!("`{}` must be a number here", self.src.text_of(v.as_ref())),
                            );
                        };
                        r.returns.push((t, weak));
                        let rt = r.ret_ty.unwrap_or(t);
                        // A NumPy int64 (uint64) on this path, a float on
                        // another: the kernel's one return type is the
                        // float, which holds such ints exactly only up to
                        // 2**53, where CPython returns the int itself
                        // (fuzz seed 303383: `1 - a[i]` at INT64_MIN).
                        if matches!(t, ScalarType::I64 | ScalarType::U64)
                            && !weak
                            && rt.is_float()
                            && !matches!(e, Expr::Lit(_))
                        {
                            return refuse(
                                crate::lower::app_calls::NAME,
                                line,
                                format!(
                                    "`{}` is a NumPy {} here, and a float where the function returns elsewhere: \
                                     the kernel returns one type, {}, which holds such integers exactly only up \
                                     to 2**53 (CPython returns the integer itself); return one type on every path \
                                     (`float(…)`)",
                                    self.src.text_of(v.as_ref()),
                                    crate::types::numba_scalar(t),
                                    crate::types::numba_scalar(rt),
                                ),
                            );
                        }
                        r.push(Stmt::Return(Some(cast_to(e, t, rt))));
                        Ok(())
                    }
                }
            }
            ast::Stmt::Expr(e) => {
                if let ast::Expr::Call(c) = e.value.as_ref() {
                    if let ast::Expr::Attribute(a) = c.func.as_ref() {
                        if a.attr.as_str() == "fill" && c.args.len() == 1 {
                            let target = self.expr(r, &a.value)?;
                            let v = self.expr(r, &c.args[0])?;
                            return self.store_val(r, target, v, line);
                        }
                    }
                    if let Some(callee) = self.app_function(&c.func) {
                        let mut args = Vec::new();
                        for a in &c.args {
                            args.push(self.expr(r, a)?);
                        }
                        return self.call_app_stmt(r, &callee, args, line);
                    }
                }
                refuse(
                    "frontend",
                    line,
                    format!(
                        "`{}`: a statement with no kernel equivalent",
                        self.src.text_of(e)
                    ),
                )
            }
            other => refuse(
                "frontend",
                line,
                format!("{} has no kernel equivalent", stmt_name(other)),
            ),
        }
    }

    /// Arrays stored to inside a loop change on every iteration: array
    /// locals computed from them before the loop go stale inside it.
    fn bump_loop_writes(&mut self, r: &mut Region, body: &[ast::Stmt]) {
        pyast::walk_stmts(body, &mut |s| {
            let targets: Vec<&ast::Expr> = match s {
                ast::Stmt::Assign(a) => a.targets.iter().collect(),
                ast::Stmt::AugAssign(a) => vec![&a.target],
                _ => vec![],
            };
            for t in targets {
                if let ast::Expr::Subscript(sub) = t {
                    if let Some(b) = pyast::subscript_base(&sub.value) {
                        r.bump_write(&b);
                        if let Some(Local::Array { val, .. }) = r.locals.get(&b) {
                            if let Some(t) = val.view_target() {
                                let a = t.array.clone();
                                r.bump_write(&a);
                            }
                        }
                    }
                }
            }
        });
    }

    fn assign_to(
        &mut self,
        r: &mut Region,
        target: &ast::Expr,
        value: &ast::Expr,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        match target {
            ast::Expr::Name(n) => {
                if self.bind_selection(r, n.id.as_str(), value)? {
                    return Ok(());
                }
                let v = self.expr(r, value)?;
                self.bind_choice(n.id.as_str(), value);
                self.bind_local(r, n.id.as_str(), v, at, line)
            }
            ast::Expr::Tuple(t) => {
                let items = match self.expr(r, value)? {
                    Val::Tuple(items) => items,
                    // `x, y = p[i]`: a row unpacks into its elements.
                    Val::Array(av) => self.unpack_array(Some(r), &av, t.elts.len(), line)?,
                    _ => return refuse("frontend", line, "unpacking a value that is not a tuple"),
                };
                if items.len() != t.elts.len() {
                    return refuse(
                        "frontend",
                        line,
                        format!(
                            "unpacking {} values into {} names",
                            items.len(),
                            t.elts.len()
                        ),
                    );
                }
                // Evaluate every value before assigning any name (`a, b = b, a`).
                let mut temps = Vec::new();
                for item in items {
                    temps.push(match item {
                        Val::Scalar(e, ty, _) if !is_simple(&e) => {
                            let tmp = self.local_temp(r, "tmp");
                            r.push(let_(&tmp, ty, e));
                            Val::scalar(var(&tmp), ty)
                        }
                        other => other,
                    });
                }
                for (tgt, item) in t.elts.iter().zip(temps) {
                    match tgt {
                        ast::Expr::Name(n) => self.bind_local(r, n.id.as_str(), item, at, line)?,
                        _ => {
                            let tv = self.expr(r, tgt)?;
                            self.store_val(r, tv, item, line)?;
                        }
                    }
                }
                Ok(())
            }
            ast::Expr::Subscript(_) => {
                let v = self.expr(r, value)?;
                let t = self.expr(r, target)?;
                self.store_val(r, t, v, line)
            }
            _ => refuse(
                "frontend",
                line,
                format!("assignment to `{}`", self.src.text_of(target)),
            ),
        }
    }

    /// Stores `v` into the element or view `target` (inside a kernel).
    pub fn store_val(&mut self, r: &mut Region, target: Val, v: Val, line: u32) -> Lower<()> {
        match target {
            Val::Scalar(Expr::Load(er), et, _) => {
                let Val::Scalar(e, t, _) = v else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "an array stored into a single element",
                    );
                };
                self.note_write(r, &er.array);
                r.push(Stmt::Store {
                    target: er,
                    value: cast_to(e, t, et),
                });
                Ok(())
            }
            Val::Array(tv) => {
                let Some(er) = tv.view_target().cloned() else {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "assignment into a computed array (not a view of an argument or allocated array)",
                    );
                };
                let n = tv.ndim();
                let mut seen: Vec<&Expr> = vec![&tv.body];
                seen.extend(tv.shape.iter());
                match &v {
                    Val::Scalar(e, _, _) => seen.push(e),
                    Val::Array(va) => seen.push(&va.body),
                    Val::Tuple(_) => {}
                }
                let vars = self.loop_vars(r, 1, n, &seen);
                let tgt = ElemRef {
                    array: er.array.clone(),
                    indices: er
                        .indices
                        .iter()
                        .map(|i| array_expr::tidy(&array_expr::at_vars(i, &vars)))
                        .collect(),
                };
                self.assume_fits(Some(&*r), &tv, &v, line)?;
                let value = match &v {
                    Val::Scalar(e, t, _) => cast_to(e.clone(), *t, tv.elem),
                    Val::Array(va) => {
                        if va.ndim() > n {
                            return refuse(
                                array_expr::NAME,
                                line,
                                "a value with more dimensions than the slice it is stored into",
                            );
                        }
                        let body = va.body_in(n);
                        cast_to(array_expr::at_vars(&body, &vars), va.elem, tv.elem)
                    }
                    Val::Tuple(_) => {
                        return refuse("frontend", line, "a tuple stored into an array")
                    }
                };
                let value = array_expr::tidy(&value);
                // `d[:, k] = d[:, k] - d[:, k - 1] * a`: the read is a
                // constant apart from the write in a dimension the element
                // loops do not move, so they never read what they wrote.
                if !array_expr::reads_only_unwritten(&tgt, &value, &vars, &tv.shape)
                    && !array_expr::reads_fixed_apart(&tgt, &value, &vars)
                {
                    return refuse(
                        array_expr::NAME,
                        line,
                        format!(
                            "the right-hand side reads `{}` at other elements than those written: NumPy evaluates it first, element loops would read overwritten values",
                            tgt.array
                        ),
                    );
                }
                self.note_write(r, &er.array);
                let store = Stmt::Store { target: tgt, value };
                let loops = array_expr::element_loops(&vars, &tv.shape, vec![store]);
                for s in loops {
                    r.push(s);
                }
                self.log.applied(
                    array_expr::NAME,
                    format!("slice assignment as element loop (line {line})"),
                );
                Ok(())
            }
            _ => refuse(
                "frontend",
                line,
                "assignment target is not an array element or slice",
            ),
        }
    }

    pub fn note_write(&mut self, r: &mut Region, array: &str) {
        r.bump_write(array);
        self.written.insert(array.to_string());
        if self.params.iter().any(|(p, _)| p == array) {
            self.mutated.insert(array.to_string());
        }
    }

    fn aug_assign(
        &mut self,
        r: &mut Region,
        a: &ast::StmtAugAssign,
        at: TextSize,
        line: u32,
    ) -> Lower<()> {
        let cur = self.expr(r, &a.target)?;
        let rhs = self.expr(r, &a.value)?;
        if r.atomic_stores.contains(&at) {
            let Val::Scalar(Expr::Load(er), et, _) = cur else {
                return refuse(crate::dependences::NAME, line, "atomic update of a slice");
            };
            let Val::Scalar(e, t, _) = rhs else {
                return refuse(
                    crate::dependences::NAME,
                    line,
                    "atomic update with an array",
                );
            };
            // numba-cuda and the GPU's atomics take 32- and 64-bit
            // elements only.
            if et == ScalarType::Bool || et.is_complex() || et.bits() < 32 {
                return refuse(
                    crate::dependences::NAME,
                    line,
                    format!(
                        "atomic update of {} elements (numba-cuda has no atomic for them; accumulate into an int32 or wider array)",
                        crate::types::numba_scalar(et)
                    ),
                );
            }
            let mut v = cast_to(e, t, et);
            if matches!(a.op, ast::Operator::Sub) {
                v = Expr::Unary(UnaryOp::Neg, Box::new(v));
            }
            self.note_write(r, &er.array);
            r.push(Stmt::Eval(Expr::Atomic(AtomicOp::Add, er, Box::new(v))));
            self.log.applied(
                crate::dependences::NAME,
                format!(
                    "shared accumulation `{}` as an atomic add (line {line})",
                    self.src.text_of(a.target.as_ref())
                ),
            );
            return Ok(());
        }
        self.assume_broadcast(r, &[&cur, &rhs], line)?;
        let new = self.binop(a.op, &cur, &rhs, line)?;
        self.aug_choice(a, &cur, &rhs);
        match a.target.as_ref() {
            ast::Expr::Name(n) => match new {
                Val::Scalar(e, t, weak) => {
                    self.set_scalar(r, n.id.as_str(), e, (t, weak), at);
                    Ok(())
                }
                Val::Array(_) => {
                    // In-place on a named array value: store through its view.
                    self.store_val(r, cur, new, line)
                }
                Val::Tuple(_) => refuse("frontend", line, "augmented assignment of a tuple"),
            },
            _ => self.store_val(r, cur, new, line),
        }
    }

    fn serial_for(&mut self, r: &mut Region, f: &ast::StmtFor, line: u32) -> Lower<()> {
        if !f.orelse.is_empty() {
            return refuse("frontend", line, "`for … else`");
        }
        let ast::Expr::Name(tv) = f.target.as_ref() else {
            return refuse(
                "frontend",
                line,
                "a `for` loop must bind one name (`for j in range(n)`)",
            );
        };
        let (start, stop, step) = self.range_args(r, &f.iter, line)?;
        let pyname = tv.id.to_string();
        if r.locals.contains_key(&pyname) {
            return refuse(
                "frontend",
                line,
                format!("`{pyname}` is used before this loop and as its loop variable"),
            );
        }
        let own = sanitize(&pyname);
        let ir = if r.visible(&own) || self.host.contains_key(&own) {
            self.local_temp(r, &pyname)
        } else {
            own
        };
        self.bump_loop_writes(r, &f.body);
        r.locals.insert(
            pyname.clone(),
            Local::Scalar {
                ir: ir.clone(),
                ty: ScalarType::I64,
                weak: true,
            },
        );
        // The least value the loop variable takes, for its indices.
        let floor = self.range_floor(&f.body, &pyname, (&start, &stop, &step));
        let outer = self.floors.get(&ir).copied();
        self.set_floor(&ir, floor);
        r.open(&f.body);
        r.declare_here(&ir);
        let res = self.block(r, &f.body);
        let body = r.close();
        self.set_floor(&ir, outer);
        r.locals.remove(&pyname);
        res?;
        r.push(for_range(&ir, start, stop, step, body));
        Ok(())
    }
}

fn is_simple(e: &Expr) -> bool {
    matches!(e, Expr::Var(_) | Expr::Lit(_))
}
