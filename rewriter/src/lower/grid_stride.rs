//! **grid_stride**: a loop with independent iterations becomes a
//! grid-stride loop — `for i in range(cuda.grid(1), n, cuda.gridsize(1))` —
//! so any grid size is correct. A nest of two independent loops becomes a 2-D
//! grid (`cuda.grid(2)`); `range(start, stop, step)` is renumbered from 0.
//! The element loops of top-level array expressions become grid-stride
//! kernels the same way.

use std::collections::HashSet;

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, BinOp, Expr, Literal, ScalarType};
use rustpython_parser::ast::{self, Ranged};

use crate::dependences::{self, RedOp, ReductionVar};
use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{
    sanitize, Choice, HostBind, Local, Lowerer, Recurse, Region, RegionKind,
};
use crate::lower::whole_reduction::RedSpec;
use crate::numpy::array_expr::{self, ArrVal, Val};
use crate::plan::HostStep;
use crate::pyast;

pub const NAME: &str = "grid_stride";

impl Lowerer<'_> {
    /// A `for` loop at the top of the function.
    pub(crate) fn parallel_loop(&mut self, f: &ast::StmtFor) -> Lower<()> {
        let line = self.src.line(f);
        let end = self.src.end_line(f);
        // The analysis' recurrences of this loop: one that names its loop
        // is about that loop only (a recurrence across the rows leaves
        // the loop over a row's elements parallel); one that names none
        // is about any loop around its line.
        let own = format!("loop at line {line}");
        if let Some((l, msg)) = self
            .analysis_scans
            .iter()
            .find(|(l, msg)| {
                *l >= line && *l <= end && (msg.contains(&own) || !msg.contains("loop at line "))
            })
            .cloned()
        {
            return refuse(dependences::NAME, l, format!("{msg} (PORT204)"));
        }
        if !f.orelse.is_empty() {
            return refuse("frontend", line, "`for … else`");
        }
        let ast::Expr::Name(iv) = f.target.as_ref() else {
            return refuse(
                NAME,
                line,
                format!(
                    "`for {} in {}`: port takes loops that bind one index (`for i in range(len(x))`, then `v = x[i]`)",
                    self.src.text_of(f.target.as_ref()),
                    self.src.text_of(f.iter.as_ref())
                ),
            );
        };
        let mut host = Region::new(RegionKind::Host, "");
        let outer = self.range_args(&mut host, &f.iter, line)?;
        let body: Vec<&ast::Stmt> = f.body.iter().filter(|s| !pyast::is_docstring(s)).collect();

        // A perfect nest of two independent loops: a 2-D grid.
        let mut nest: Option<(&ast::StmtFor, String)> = None;
        if let [ast::Stmt::For(g)] = body.as_slice() {
            if let ast::Expr::Name(jv) = g.target.as_ref() {
                let pv = [iv.id.to_string(), jv.id.to_string()];
                if g.orelse.is_empty()
                    && !pyast::mentions(&g.iter, iv.id.as_str())
                    && dependences::check(
                        self.src,
                        &g.body,
                        &pv,
                        &loop_bounds(&[(iv.id.as_str(), f), (jv.id.as_str(), g)]),
                        line,
                    )
                    .is_ok()
                {
                    nest = Some((g, jv.id.to_string()));
                }
            }
        }
        type Ranges = Vec<(Expr, Expr, Expr)>;
        let (pynames, ranges, lowered_body): (Vec<String>, Ranges, &[ast::Stmt]) = match nest {
            Some((g, ref j)) => {
                let inner = self.range_args(&mut host, &g.iter, self.src.line(g))?;
                (
                    vec![iv.id.to_string(), j.clone()],
                    vec![outer, inner],
                    &g.body,
                )
            }
            None => (vec![iv.id.to_string()], vec![outer], &f.body),
        };
        let bounds = match &nest {
            Some((g, _)) => loop_bounds(&[(pynames[0].as_str(), f), (pynames[1].as_str(), g)]),
            None => loop_bounds(&[(pynames[0].as_str(), f)]),
        };
        let deps = dependences::check(self.src, lowered_body, &pynames, &bounds, line)?;
        self.log.applied(
            dependences::NAME,
            format!(
                "loop at line {line}: iterations over `{}` are independent",
                pynames.join("`, `")
            ),
        );

        let mut r = Region::new(RegionKind::Kernel, "");
        r.scan(lowered_body);
        if let (Some(a), Some(b)) = (lowered_body.first(), lowered_body.last()) {
            r.blocks[0].1 = (a.start(), b.end());
        }
        r.atomic_stores = deps.atomic_stores.clone();
        let mut specs_in: Vec<(ReductionVar, Expr, ScalarType)> = Vec::new();
        for red in &deps.reductions {
            let (init, t) = match self.host.get(&red.name) {
                Some(HostBind::Scalar(t)) => (var(&red.name), *t),
                Some(HostBind::DeviceScalar { acc, ty, .. }) => (load(acc, vec![i64(0)]), *ty),
                _ => {
                    return refuse(
                        dependences::NAME,
                        red.line,
                        format!(
                            "`{}` is accumulated by the loop at line {line} but has no starting value before it",
                            red.name
                        ),
                    )
                }
            };
            let key = red.name.clone();
            // Started from a Python literal (`s = 0`) and bound to no
            // strong value, before the loop or by its updates in the last
            // pass: a Python number throughout (`s += int(a[i])`).
            let weak = self.observed_weak.contains_key(&key) && self.weak_local(&key);
            let t = self.declare_type_weak(&key, t, weak);
            if weak {
                r.weak_reductions.insert(red.name.clone());
            }
            if t == ScalarType::Bool {
                return refuse(
                    dependences::NAME,
                    red.line,
                    format!("`{}`: a reduction over booleans", red.name),
                );
            }
            r.reductions.insert(red.name.clone(), (red.op, t));
            self.used.insert(sanitize(&red.name));
            r.declare_in(0, &sanitize(&red.name));
            specs_in.push((red.clone(), init, t));
        }

        // Parallel variables, renumbered from 0 when the range does not start there.
        let mut pvars = Vec::new();
        let mut extents = Vec::new();
        let mut prelude = Vec::new();
        // The least values of the loop variables, for their indices.
        let floors_outside = self.floors.clone();
        for (py, (start, stop, step)) in pynames.iter().zip(ranges) {
            let floor = self.range_floor(lowered_body, py, (&start, &stop, &step));
            let unit = start == i64(0) && step == i64(1);
            let ir = if unit {
                sanitize(py)
            } else {
                self.fresh(&format!("{py}_k"))
            };
            self.used.insert(ir.clone());
            r.declare_in(0, &ir);
            // The grid's own variable (a fresh name unless the range is
            // `range(n)`, and then the Python name, unless rebound).
            if !unit || floor.is_some() {
                self.floors.insert(ir.clone(), 0);
            }
            let extent = match (&step, unit) {
                (_, true) => stop.clone(),
                // A grid-stride loop over a negative extent does nothing, as
                // `range` does: no clamp needed.
                (Expr::Lit(Literal::I64(s)), _) if *s > 0 => array_expr::tidy(&if *s == 1 {
                    sub(stop.clone(), start.clone())
                } else {
                    binary(
                        BinOp::FloorDiv,
                        add(sub(stop.clone(), start.clone()), i64(s - 1)),
                        i64(*s),
                    )
                }),
                (Expr::Lit(Literal::I64(s)), _) if *s < 0 => array_expr::nonneg(binary(
                    BinOp::FloorDiv,
                    add(sub(start.clone(), stop.clone()), i64(-s - 1)),
                    i64(-s),
                )),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        "a parallel loop's `range` step must be an integer constant",
                    )
                }
            };
            if !unit {
                let pyir = sanitize(py);
                self.set_floor(&pyir, floor);
                self.used.insert(pyir.clone());
                r.declare_in(0, &pyir);
                let pos = if step == i64(1) {
                    var(&ir)
                } else {
                    mul(var(&ir), step.clone())
                };
                prelude.push(let_(
                    &pyir,
                    ScalarType::I64,
                    array_expr::tidy(&add(start, pos)),
                ));
                r.locals.insert(
                    py.clone(),
                    Local::Scalar {
                        ir: pyir,
                        ty: ScalarType::I64,
                        weak: true,
                    },
                );
            } else {
                r.locals.insert(
                    py.clone(),
                    Local::Scalar {
                        ir: ir.clone(),
                        ty: ScalarType::I64,
                        weak: true,
                    },
                );
            }
            pvars.push(ir);
            extents.push(extent);
        }
        for s in prelude {
            r.push(s);
        }
        let lowered = self.block(&mut r, lowered_body);
        self.floors = floors_outside;
        lowered?;
        let pbody = std::mem::take(&mut r.blocks[0].0);

        // Names assigned in the loop hold the last iteration's value in
        // Python; the wrapper has no such value.
        let mut assigned: HashSet<String> = pynames.iter().cloned().collect();
        pyast::walk_stmts(&f.body, &mut |s| {
            let ts: Vec<&ast::Expr> = match s {
                ast::Stmt::Assign(a) => a.targets.iter().collect(),
                ast::Stmt::AugAssign(a) => vec![&a.target],
                ast::Stmt::For(g) => vec![&g.target],
                _ => vec![],
            };
            for t in ts {
                assigned.extend(pyast::target_names(t));
            }
        });
        for n in assigned {
            if !r.reductions.contains_key(&n) {
                self.host.insert(n, HostBind::Private { line });
            }
        }

        // A reduction's grid is 1-D whatever the nest's depth.
        let shape_note = if pvars.len() == 2 && specs_in.is_empty() {
            "a 2-D grid"
        } else {
            "a grid-stride loop"
        };
        self.log
            .applied(NAME, format!("loop at line {line} as {shape_note}"));
        if specs_in.is_empty() {
            let kname = self.kernel_name("kernel");
            let (pfor, launch) = self.element_grid(&pvars, &extents, pbody);
            let fname = self.fn_name.clone();
            return self.add_kernel(
                kname,
                vec![pfor],
                vec![],
                launch,
                format!("The loop at line {line} of `{fname}`, as {shape_note}."),
            );
        }
        let what: Vec<String> = specs_in.iter().map(|(r, _, _)| r.name.clone()).collect();
        let kname = self.kernel_name(&what.join("_"));
        let mut specs = Vec::new();
        for (red, init, t) in &specs_in {
            let acc = self.fresh(&format!("{}_acc", red.name));
            let partial = sanitize(&red.name);
            // Python ints from the data summed (multiplied) across the
            // loop: the per-thread updates are checked, and so is every
            // combination of partials.
            let checked = r.weak_reductions.contains(&red.name)
                && *t == ScalarType::I64
                && matches!(red.op, RedOp::Sum | RedOp::Prod)
                && self.data_ints.contains(&partial);
            specs.push(RedSpec {
                partial,
                op: red.op,
                ty: *t,
                acc,
                init: cast_to(init.clone(), *t, *t),
                checked,
            });
        }
        // The reduction's grid is 1-D: a nest goes over its flat index.
        let (pfor, n) = self.flat_loop(&pvars, &extents, pbody);
        let fname = self.fn_name.clone();
        // Accumulators that start with a value of another type than the
        // reduction's (a Python number, or a NumPy scalar the updates
        // widen): CPython's keeps that value when the loop runs no
        // iteration. At the top level, the trip count and the starting
        // value are kept for the result (`HostValue::ScalarOrStart`).
        let mut starts = Vec::new();
        for ((red, _, t), s) in specs_in.iter().zip(&specs) {
            let (start_ty, python) = match (self.host.get(&red.name), self.bound_as.get(&red.name))
            {
                (Some(HostBind::Scalar(_)), Some(&(w, weak)))
                    if w != *t && self.host_depth == 0 =>
                {
                    (w, weak)
                }
                _ => continue,
            };
            // `m = max(m, v)` keeps the start until a value beats it: a
            // Python float (or a NumPy scalar of another type) on some
            // calls, the values' type on others (`m = 0.0` over float32
            // values).
            if matches!(red.op, RedOp::Min | RedOp::Max) {
                self.choice_names.insert(
                    red.name.clone(),
                    Choice {
                        line: red.line,
                        alts: [(start_ty, python), (*t, false)],
                        branch: false,
                    },
                );
            }
            let start = self.fresh(&format!("{}_start", red.name));
            self.steps.push(HostStep::Scalar {
                name: start.clone(),
                ty: *t,
                value: var(&red.name),
            });
            self.host.insert(start.clone(), HostBind::Scalar(*t));
            starts.push((s.acc.clone(), start, start_ty, python));
        }
        if !starts.is_empty() {
            let trip = self.fresh("trip");
            let value = self.hostify(n.clone());
            self.steps.push(HostStep::Scalar {
                name: trip.clone(),
                ty: ScalarType::I64,
                value,
            });
            self.host
                .insert(trip.clone(), HostBind::Scalar(ScalarType::I64));
            for (acc, start, start_ty, python) in starts {
                self.empty_start
                    .insert(acc, (trip.clone(), start, start_ty, python));
            }
        }
        self.reduction_kernel(
            kname,
            pfor,
            specs.clone(),
            n,
            format!(
                "The loop at line {line} of `{fname}`, reducing `{}`: a grid-stride loop, a tree in shared memory per block, one atomic per block.",
                what.join("`, `")
            ),
            line,
        )?;
        for ((red, _, t), s) in specs_in.iter().zip(&specs) {
            self.host.insert(
                red.name.clone(),
                HostBind::DeviceScalar {
                    acc: s.acc.clone(),
                    ty: *t,
                    weak: r.weak_reductions.contains(&red.name),
                },
            );
            self.log.applied(
                crate::lower::whole_reduction::NAME,
                format!(
                    "`{}` ({}) across the loop at line {line} as a reduction kernel",
                    red.name,
                    red.op.word()
                ),
            );
        }
        Ok(())
    }

    /// The least value a loop variable `py` over `range(start, stop,
    /// step)` (as [`Self::range_args`] gives them) takes in `body`:
    /// `start` stepping up, one past `stop` stepping down; `None` when
    /// unknown or when `body` rebinds `py`.
    pub(crate) fn range_floor(
        &self,
        body: &[ast::Stmt],
        py: &str,
        (start, stop, step): (&Expr, &Expr, &Expr),
    ) -> Option<i64> {
        if pyast::rebinds(body, py) {
            return None;
        }
        match step {
            Expr::Lit(Literal::I64(s)) if *s > 0 => array_expr::least(start, &self.floors),
            Expr::Lit(Literal::I64(s)) if *s < 0 => {
                array_expr::least(stop, &self.floors)?.checked_add(1)
            }
            _ => None,
        }
    }

    /// Records (or forgets) the least value of the IR name `name`.
    pub(crate) fn set_floor(&mut self, name: &str, floor: Option<i64>) {
        match floor {
            Some(k) => self.floors.insert(name.to_string(), k),
            None => self.floors.remove(name),
        };
    }

    /// `range(stop)`, `range(start, stop)`, `range(start, stop, step)` as `i64`.
    pub(crate) fn range_args(
        &mut self,
        r: &mut Region,
        iter: &ast::Expr,
        line: u32,
    ) -> Lower<(Expr, Expr, Expr)> {
        let ast::Expr::Call(c) = iter else {
            return refuse(
                NAME,
                line,
                format!(
                    "`for … in {}`: only `range(...)` loops become kernel loops",
                    self.src.text_of(iter)
                ),
            );
        };
        let name = self.src.resolve(&c.func).unwrap_or_default();
        if !matches!(name.as_str(), "range" | "numba.prange" | "prange") {
            return refuse(
                NAME,
                line,
                format!(
                    "`for … in {}`: only `range(...)` loops become kernel loops",
                    self.src.text_of(iter)
                ),
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            // `-1` is a constant, not the negation of one.
            if let Some(crate::source::Const::Int(k)) = self.src.eval_const(a) {
                args.push(i64(k));
                continue;
            }
            let (e, t) = self.scalar(r, a)?;
            if !t.is_int() {
                return refuse("frontend", line, "`range` of a non-integer");
            }
            args.push(cast_to(e, t, ScalarType::I64));
        }
        Ok(match args.len() {
            1 => (i64(0), args.remove(0), i64(1)),
            2 => {
                let stop = args.remove(1);
                (args.remove(0), stop, i64(1))
            }
            3 => {
                if matches!(args[2], Expr::Lit(Literal::I64(0))) {
                    return refuse("frontend", line, "`range` step of zero");
                }
                let step = args.remove(2);
                let stop = args.remove(1);
                (args.remove(0), stop, step)
            }
            _ => return refuse("frontend", line, "`range` takes 1 to 3 arguments"),
        })
    }

    /// A top-level store of `value` into the view `target`: an element
    /// kernel over the target's elements.
    pub(crate) fn store_kernel(
        &mut self,
        target: &ArrVal,
        value: &Val,
        hint: &str,
        line: u32,
    ) -> Lower<()> {
        let Some(er) = target.view_target().cloned() else {
            return refuse(array_expr::NAME, line, "assignment into a computed array");
        };
        let n = target.ndim();
        let mut seen: Vec<&Expr> = vec![&target.body];
        seen.extend(target.shape.iter());
        if let Val::Array(va) = value {
            seen.push(&va.body);
        }
        if let Val::Scalar(e, _, _) = value {
            seen.push(e);
        }
        self.assume_fits(None, target, value, line)?;
        let vars = self.element_vars(n, &seen);
        let tgt = port_codegen::ir::ElemRef {
            array: er.array.clone(),
            indices: er
                .indices
                .iter()
                .map(|i| array_expr::tidy(&array_expr::at_vars(i, &vars)))
                .collect(),
        };
        let v = match value {
            Val::Scalar(e, t, _) => cast_to(e.clone(), *t, target.elem),
            Val::Array(va) => {
                if va.ndim() > n {
                    return refuse(
                        array_expr::NAME,
                        line,
                        "a value with more dimensions than the array it is stored into",
                    );
                }
                cast_to(
                    array_expr::at_vars(&va.body_in(n), &vars),
                    va.elem,
                    target.elem,
                )
            }
            Val::Tuple(_) => return refuse("frontend", line, "a tuple stored into an array"),
        };
        let v = array_expr::tidy(&v);
        if !array_expr::reads_fixed_apart(&tgt, &v, &vars) {
            // NumPy evaluates the whole right-hand side before it assigns:
            // through a shifted window (`u[1:-1] = u[:-2] + u[2:]`) that
            // needs the old values, so they go to a temporary first.
            let Val::Array(va) = value else {
                return refuse(
                    array_expr::NAME,
                    line,
                    format!(
                        "the right-hand side reads `{}` at other elements than those written: threads would read elements other threads overwrite",
                        tgt.array
                    ),
                );
            };
            let tmp = self.fresh(&format!("{}_tmp", sanitize(hint)));
            self.scratch.insert(tmp.clone());
            let tmp = self.materialise(&tmp, va, line)?;
            let ty = ArrayType {
                elem: va.elem,
                ndim: va.ndim() as u8,
                contiguous: true,
            };
            self.log.applied(
                array_expr::NAME,
                format!("line {line} reads the array it writes through a shifted window: the right-hand side goes to a temporary first, as NumPy evaluates it before assigning"),
            );
            return self.store_kernel(target, &Val::Array(ArrVal::named(&tmp, ty)), hint, line);
        }
        self.written.insert(er.array.clone());
        if self.params.iter().any(|(p, _)| *p == er.array) {
            self.mutated.insert(er.array.clone());
        }
        let (pfor, launch) = self.element_grid(
            &vars,
            &target.shape,
            vec![port_codegen::ir::Stmt::Store {
                target: tgt,
                value: v,
            }],
        );
        let kname = self.kernel_name(&sanitize(hint));
        self.log.applied(
            NAME,
            format!("element loop of line {line} as a grid-stride kernel"),
        );
        let fname = self.fn_name.clone();
        self.add_kernel(
            kname,
            vec![pfor],
            vec![],
            launch,
            format!("Line {line} of `{fname}`, element by element."),
        )
    }
}

/// The `(start, stop)` of each loop's `range`, by loop variable.
fn loop_bounds(loops: &[(&str, &ast::StmtFor)]) -> Vec<(String, ast::Expr, ast::Expr)> {
    loops
        .iter()
        .filter_map(|(v, f)| {
            let (a, b) = port_analyzer::indexset::range_bounds(&f.iter)?;
            Some((v.to_string(), a, b))
        })
        .collect()
}
