//! **host_schedule**: the function's control flow stays on the host and
//! launches kernels.
//!
//! Real array programs run a sequential loop (time steps, sweeps, an
//! iteration to convergence) around data-parallel statements. A `for` loop
//! whose iterations are independent becomes a grid-stride kernel
//! ([`crate::lower::grid_stride`]); one whose iterations depend on each other
//! (the dependence test refuses it as a kernel) stays on the host as a
//! [`HostStep::Loop`], and the statements of its body become kernels
//! launched in turn, every array staying on the device. `while` loops,
//! `if`/`else` on host scalars (a reduction read back, an argument) and
//! `break` become host steps too.
//!
//! Names keep Python's meaning across iterations: an array name rebound in
//! a loop (`un = u.copy()`, `u, un = un, u`) is a [`HostStep::Rebind`] of
//! the name to another device array, never a copy, so the next iteration
//! reads what Python would. A loop whose body would only write single
//! elements (a scan, a recurrence) is refused: one tiny kernel per element
//! is slower than the CPU.

use std::collections::{BTreeSet, HashMap, HashSet};

use port_codegen::ir::build::var;
use port_codegen::ir::{Expr, ScalarType};
use rustpython_parser::ast;

use crate::dependences;
use crate::error::{refuse, Lower, Reason};
use crate::lower::context::{sanitize, HostBind, Lowerer, Recurse, Region};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::plan::HostStep;

pub const NAME: &str = "host_schedule";

/// Everything lowering may change, to try one way and fall back to another.
pub(crate) struct Snapshot {
    module: port_codegen::ir::Module,
    steps: Vec<HostStep>,
    log: crate::lower::context::RewriteLog,
    host: HashMap<String, HostBind>,
    used: HashSet<String>,
    mutated: BTreeSet<String>,
    written: BTreeSet<String>,
    device_fns: HashMap<String, String>,
    accs: HashSet<String>,
    docs: std::collections::BTreeMap<String, String>,
    rebinds: Vec<(String, String)>,
    scratch: HashSet<String>,
    tiny: HashMap<String, u32>,
}

impl Lowerer<'_> {
    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            module: self.module.clone(),
            steps: self.steps.clone(),
            log: self.log.clone(),
            host: self.host.clone(),
            used: self.used.own.clone(),
            mutated: self.mutated.clone(),
            written: self.written.clone(),
            device_fns: self.device_fns.clone(),
            accs: self.accs.clone(),
            docs: self.docs.clone(),
            rebinds: self.rebinds.clone(),
            scratch: self.scratch.clone(),
            tiny: self.tiny.clone(),
        }
    }

    pub(crate) fn restore(&mut self, s: Snapshot) {
        self.module = s.module;
        self.steps = s.steps;
        self.log = s.log;
        self.host = s.host;
        self.used.own = s.used;
        self.mutated = s.mutated;
        self.written = s.written;
        self.device_fns = s.device_fns;
        self.accs = s.accs;
        self.docs = s.docs;
        self.rebinds = s.rebinds;
        self.scratch = s.scratch;
        self.tiny = s.tiny;
    }

    /// `hostify` for a value the user's code computes on the host: an
    /// element of a device array read there (not a reduction's result) is
    /// refused, since it would be one transfer per element.
    pub(crate) fn read_host_scalar(&mut self, e: Expr, line: u32) -> Lower<Expr> {
        // Elements of device arrays the host code reads (`alpha = -r[k]`):
        // each read back on its own, one element.
        let mut reads: Vec<port_codegen::ir::ElemRef> = Vec::new();
        port_codegen::ir::walk_expr(&e, &mut |x| {
            if let Expr::Load(er) = x {
                let is_acc = self.accs.contains(&er.array)
                    || self.host.values().any(
                        |b| matches!(b, HostBind::DeviceScalar { acc, .. } if *acc == er.array),
                    );
                if !is_acc && !reads.contains(er) {
                    reads.push(er.clone());
                }
            }
        });
        let mut map: Vec<(port_codegen::ir::ElemRef, String)> = Vec::new();
        for er in reads {
            let nested = er.indices.iter().any(|i| {
                let mut any = false;
                port_codegen::ir::walk_expr(i, &mut |x| any |= matches!(x, Expr::Load(_)));
                any
            });
            let ty = match self.host.get(&er.array) {
                Some(HostBind::Array(t)) => Some(t.elem),
                _ => match self.params.iter().find(|(p, _)| *p == er.array) {
                    Some((_, crate::types::ArgType::Array(t))) => Some(t.elem),
                    _ => None,
                },
            };
            let Some(ty) = ty.filter(|_| !nested) else {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "an element of `{}` read on the host at an index port cannot compute there",
                        er.array
                    ),
                );
            };
            let name = self.fresh(&format!("{}_at", sanitize(&er.array)));
            self.steps.push(HostStep::ReadElement {
                name: name.clone(),
                ty,
                array: er.array.clone(),
                index: er.indices.clone(),
            });
            self.host.insert(name.clone(), HostBind::Scalar(ty));
            self.tiny.insert(name.clone(), line);
            map.push((er, name));
        }
        let e = if map.is_empty() {
            e
        } else {
            crate::ir_util::map_expr(&e, &|x| match x {
                Expr::Load(er) => map.iter().find(|(r, _)| r == er).map(|(_, n)| var(n)),
                _ => None,
            })
        };
        Ok(self.hostify(e))
    }

    /// A `for` loop at host level: a kernel when its iterations are
    /// independent, else a host loop launching the kernels of its body.
    pub(crate) fn host_for(&mut self, r: &mut Region, f: &ast::StmtFor) -> Lower<()> {
        let before = self.snapshot();
        let parallel = match self.parallel_loop(f) {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        self.restore(before);
        // A loop that carries a dependence belongs on the host; so does one
        // whose body is array statements a single kernel cannot hold (an
        // axis reduction or `@` per iteration). Any other refusal (a race,
        // an unsupported call) is the one to report. When the host cannot
        // take it either, the dependence is what the user needs to hear
        // about — or, for a loop without one, why it is not a kernel.
        // A loop whose body calls a helper the kernel cannot take may stay
        // on the host with the helper inlined (a time loop calling
        // `build_up_b(b, …)`).
        let calls = self.body_calls_app(&f.body);
        // So does one whose body rebinds a name to an array expression of
        // an array it then changes (vadv's `divided = 1.0 / bcol`): on the
        // host that name is a temporary array, in one kernel it cannot be.
        let needs_temporary = parallel
            .message
            .contains("temporary array inside the kernel");
        if parallel.rewrite != dependences::NAME
            && parallel.rewrite != crate::lower::axis_reduction::NAME
            && !calls
            && !needs_temporary
        {
            return Err(parallel);
        }
        let before = self.snapshot();
        match self.host_loop(r, f, &parallel) {
            Ok(()) => Ok(()),
            Err(why) => {
                self.restore(before);
                let in_helper = calls && why.message.starts_with("in `");
                Err(if parallel.rewrite == dependences::NAME || in_helper {
                    why
                } else {
                    parallel
                })
            }
        }
    }

    fn host_loop(&mut self, r: &mut Region, f: &ast::StmtFor, carried: &Reason) -> Lower<()> {
        let line = self.src.line(f);
        if !f.orelse.is_empty() {
            return refuse("frontend", line, "`for … else`");
        }
        let ast::Expr::Name(iv) = f.target.as_ref() else {
            return refuse(
                NAME,
                line,
                "a host loop must bind one name (`for t in range(n)`)",
            );
        };
        let (start, stop, step) = self.range_args(r, &f.iter, line)?;
        let start = self.host_scalar(start, line)?;
        let stop = self.host_scalar(stop, line)?;
        let step = self.host_scalar(step, line)?;
        let var = iv.id.to_string();
        self.settle_device_scalars();
        let t = self.declare_type(&var, ScalarType::I64);
        self.host.insert(var.clone(), HostBind::Scalar(t));
        self.used.insert(var.clone());
        if self.host_depth == 0 {
            // A name the loop binds afresh before any read, dead after it:
            // what it held before (a view) is forgotten.
            for n in self.loop_private_names(f) {
                if matches!(self.host.get(&n), Some(HostBind::View(_))) {
                    self.host.remove(&n);
                    self.log.applied(
                        NAME,
                        format!(
                            "`{n}` is private to the loop at line {line}: bound before any read in each iteration, and not read after the loop"
                        ),
                    );
                }
            }
        }
        let entry = self.host.clone();
        let outer = std::mem::take(&mut self.steps);
        self.host_depth += 1;
        self.loop_lines.push((line, carried.message.clone()));
        let res = self.host_block(r, &f.body);
        self.loop_lines.pop();
        self.host_depth -= 1;
        let mut body = std::mem::replace(&mut self.steps, outer);
        if res?.is_some() {
            unreachable!("host_block refuses a return inside a loop");
        }
        self.reconcile(&entry, &mut body, line, "host loop")?;
        let launches = count_launches(&body);
        if launches == 0 {
            return refuse(
                NAME,
                line,
                format!(
                    "the loop at line {line} launches no kernel: {} — it would run on the host one element at a time",
                    carried.message
                ),
            );
        }
        if let Some(l) = self.only_tiny(&body) {
            return refuse(
                NAME,
                l,
                format!(
                    "a single element written per iteration of the host loop at line {line} ({}): one tiny kernel per element would be slower than the CPU — a scan or recurrence port does not map to the GPU",
                    carried.message
                ),
            );
        }
        let hoisted = self.hoist_scratch(&mut body, Some(&var), &entry);
        self.steps.extend(hoisted);
        self.steps.push(HostStep::Loop {
            var: var.clone(),
            start,
            stop,
            step,
            body,
        });
        let why = if carried.rewrite == dependences::NAME {
            "its iterations depend on each other".to_string()
        } else {
            format!("one kernel cannot hold its body: {}", carried.message)
        };
        self.log.applied(
            NAME,
            format!(
                "loop at line {line} stays on the host ({why}) and launches {launches} kernel(s) per iteration"
            ),
        );
        Ok(())
    }

    /// `while cond:` on the host.
    pub(crate) fn host_while(&mut self, r: &mut Region, w: &ast::StmtWhile) -> Lower<()> {
        let line = self.src.line(w);
        if !w.orelse.is_empty() {
            return refuse("frontend", line, "`while … else`");
        }
        self.settle_device_scalars();
        let entry = self.host.clone();
        let outer = std::mem::take(&mut self.steps);
        let cond = self.host_condition(r, &w.test, line);
        let test = std::mem::take(&mut self.steps);
        let cond = match cond {
            Ok(c) => c,
            Err(e) => {
                self.steps = outer;
                return Err(e);
            }
        };
        self.host_depth += 1;
        self.loop_lines.push((
            line,
            format!("the `while` loop at line {line} runs until its condition fails"),
        ));
        let res = self.host_block(r, &w.body);
        self.loop_lines.pop();
        self.host_depth -= 1;
        let mut body = std::mem::replace(&mut self.steps, outer);
        res?;
        self.reconcile(&entry, &mut body, line, "while loop")?;
        let hoisted = self.hoist_scratch(&mut body, None, &entry);
        self.steps.extend(hoisted);
        self.steps.push(HostStep::While { test, cond, body });
        self.log.applied(
            NAME,
            format!("`while` loop at line {line} runs on the host around its kernels"),
        );
        Ok(())
    }

    /// `if cond: … else: …` on the host.
    pub(crate) fn host_if(&mut self, r: &mut Region, i: &ast::StmtIf) -> Lower<()> {
        let line = self.src.line(i);
        let cond = self.host_condition(r, &i.test, line)?;
        // A test the types decide (`isinstance(x, np.ndarray)` of an
        // array): only the branch it takes, as Python runs it.
        if let Expr::Lit(port_codegen::ir::Literal::Bool(taken)) = cond {
            self.log.applied(
                NAME,
                format!("`if` at line {line} decided by the types: always {taken}"),
            );
            return self
                .host_block(r, if taken { &i.body } else { &i.orelse })
                .map(|_| ());
        }
        self.settle_device_scalars();
        let entry = self.host.clone();
        let outer = std::mem::take(&mut self.steps);
        self.host_depth += 1;
        let res = self.host_block(r, &i.body);
        let mut then = std::mem::take(&mut self.steps);
        if let Err(e) = res {
            self.host_depth -= 1;
            self.steps = outer;
            return Err(e);
        }
        self.settle_into(&mut then);
        let after_then = std::mem::replace(&mut self.host, entry.clone());
        let res = self.host_block(r, &i.orelse);
        self.host_depth -= 1;
        let mut orelse = std::mem::replace(&mut self.steps, outer);
        res?;
        self.settle_into(&mut orelse);
        let after_else = std::mem::take(&mut self.host);
        self.host = merge_branches(&entry, after_then, after_else, line);
        self.steps.push(HostStep::If { cond, then, orelse });
        self.log
            .applied(NAME, format!("`if` at line {line} decided on the host"));
        Ok(())
    }

    /// A condition the host evaluates: a scalar, read back if a kernel
    /// computed it.
    fn host_condition(&mut self, r: &mut Region, e: &ast::Expr, line: u32) -> Lower<Expr> {
        match self.expr(r, e)? {
            Val::Scalar(c, t, _) => {
                let c = self.host_scalar(c, line)?;
                let c = crate::numpy::math_calls::truthy(c, t);
                // A test the types decide, as the literal it is.
                Ok(decided(&c).map_or(c, |b| Expr::Lit(port_codegen::ir::Literal::Bool(b))))
            }
            Val::Array(_) => refuse(
                NAME,
                line,
                format!(
                    "the truth value of the array `{}` is ambiguous (NumPy raises): use .any() or .all()",
                    self.src.text_of(e)
                ),
            ),
            Val::Tuple(_) => refuse(NAME, line, "a tuple as a condition"),
        }
    }

    /// `raise E(…)` in a host `if` or loop: the guards real code starts
    /// with (`if x.shape[0] != w.shape[0]: raise ValueError(…)`). The
    /// wrapper runs the statement as written when it reads only the
    /// function's parameters and module names (which the wrapper has,
    /// under the same names); else it raises the same exception with the
    /// message's source text.
    pub(crate) fn host_raise(&mut self, rs: &ast::StmtRaise, line: u32) -> Lower<()> {
        let Some(exc) = rs.exc.as_deref() else {
            return refuse(
                "frontend",
                line,
                "a bare `raise` (re-raising) outside an `except`",
            );
        };
        let (class, message) = match exc {
            ast::Expr::Call(c) => (
                self.src.text_of(c.func.as_ref()).to_string(),
                c.args.first().map(|m| self.message_text(m)),
            ),
            e => (self.src.text_of(e).to_string(), None),
        };
        let params: std::collections::HashSet<String> =
            self.params.iter().map(|(p, _)| p.clone()).collect();
        let rebound = self.names_rebound_in_function();
        let module = self.src.module_names();
        let mut as_written = true;
        crate::pyast::walk_expr(exc, &mut |e| {
            if let ast::Expr::Name(n) = e {
                let id = n.id.as_str();
                let builtin = id.chars().next().is_some_and(char::is_uppercase)
                    || matches!(id, "len" | "str" | "repr" | "int" | "float");
                // Host scalars keep their names in the wrapper.
                let host_scalar = matches!(self.host.get(id), Some(HostBind::Scalar(_)));
                if !(builtin
                    || module.contains(id)
                    || host_scalar
                    || (params.contains(id) && !rebound.contains(id)))
                {
                    as_written = false;
                }
            }
        });
        let mut step = raise_step(line, &class, message.as_deref());
        if as_written {
            if let HostStep::Raise { python, .. } = &mut step {
                *python = format!("raise {}", self.src.text_of(exc));
            }
        }
        self.settle_device_scalars();
        self.steps.push(step);
        self.log.applied(
            NAME,
            format!("`raise` at line {line} kept as a guard of the host"),
        );
        Ok(())
    }

    /// `assert test, msg` at host level: checked as the original checks it,
    /// when the host can evaluate `test`; else left out, as `python -O`
    /// leaves it out, with a note that says so.
    pub(crate) fn host_assert(
        &mut self,
        r: &mut Region,
        a: &ast::StmtAssert,
        line: u32,
    ) -> Lower<()> {
        let (steps, host, module) = (self.steps.len(), self.host.clone(), self.module.clone());
        let cond = match self.host_condition(r, &a.test, line) {
            Ok(c) => c,
            Err(e) => {
                self.steps.truncate(steps);
                self.host = host;
                self.module = module;
                self.log.applied(
                    NAME,
                    format!(
                        "`assert` at line {line} left out, as `python -O` leaves it out: {}",
                        e.message
                    ),
                );
                return Ok(());
            }
        };
        // An assertion that fails on every call with these types (`assert
        // isinstance(r, tuple)` of an array): the original raises.
        if matches!(&cond, Expr::Lit(port_codegen::ir::Literal::Bool(false))) {
            return refuse(
                NAME,
                line,
                format!(
                    "`assert {}` fails for arguments of these types: the original raises AssertionError on every such call",
                    self.src.text_of(&*a.test)
                ),
            );
        }
        self.settle_device_scalars();
        let message = a.msg.as_deref().map(|m| self.message_text(m));
        self.steps.push(HostStep::If {
            cond: Expr::Unary(port_codegen::ir::UnaryOp::Not, Box::new(cond)),
            then: vec![raise_step(line, "AssertionError", message.as_deref())],
            orelse: Vec::new(),
        });
        self.log
            .applied(NAME, format!("`assert` at line {line} checked on the host"));
        Ok(())
    }

    /// An exception's message as it would read: a string literal's text,
    /// else the expression's source.
    fn message_text(&self, m: &ast::Expr) -> String {
        match m {
            ast::Expr::Constant(k) => match &k.value {
                ast::Constant::Str(s) => s.to_string(),
                _ => self.src.text_of(m).to_string(),
            },
            m => self.src.text_of(m).to_string(),
        }
    }

    /// `break` inside a host loop.
    pub(crate) fn host_break(&mut self, line: u32) -> Lower<()> {
        if self.loop_lines.is_empty() {
            return refuse("frontend", line, "`break` outside a loop");
        }
        self.settle_device_scalars();
        self.steps.push(HostStep::Break);
        Ok(())
    }

    /// Device scalars (reduction results) bound to names are read back to
    /// the host before control flow, so that every path sees host values.
    fn settle_device_scalars(&mut self) {
        let mut steps = std::mem::take(&mut self.steps);
        self.settle_into(&mut steps);
        self.steps = steps;
    }

    fn settle_into(&mut self, steps: &mut Vec<HostStep>) {
        let mut pending: Vec<(String, String, ScalarType)> = self
            .host
            .iter()
            .filter_map(|(k, b)| match b {
                HostBind::DeviceScalar { acc, ty, .. } => Some((k.clone(), acc.clone(), *ty)),
                _ => None,
            })
            .collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, acc, ty) in pending {
            let ty = self.declare_type(&name, ty);
            steps.push(HostStep::ReadBack {
                name: name.clone(),
                ty,
                array: acc,
            });
            self.host.insert(name.clone(), HostBind::Scalar(ty));
            self.bound_as.insert(name.clone(), (ty, false));
            self.used.insert(name);
        }
    }

    /// At the end of a loop body: names must mean at the next iteration
    /// what they meant at its start.
    fn reconcile(
        &mut self,
        entry: &HashMap<String, HostBind>,
        body: &mut Vec<HostStep>,
        line: u32,
        what: &str,
    ) -> Lower<()> {
        self.settle_into(body);
        let mut names: Vec<&String> = entry.keys().collect();
        names.sort();
        for name in names {
            let (before, after) = (&entry[name], self.host.get(name));
            let same = match (before, after) {
                (_, None) => true,
                (HostBind::Scalar(_), Some(HostBind::Scalar(_))) => true,
                (HostBind::Array(a), Some(HostBind::Array(b))) => {
                    a.elem == b.elem && a.ndim == b.ndim
                }
                (b, Some(a)) => b == a,
            };
            if !same {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{name}` is bound to a different kind of value inside the {what} at line {line} than before it: port keeps one device array or host scalar per name across iterations; assign into it (`{name}[...] = …`) instead"
                    ),
                );
            }
        }
        Ok(())
    }

    /// Arrays of the body whose extents do not change in the loop,
    /// allocated once, before it: the temporaries of one statement, and
    /// arrays the body allocates once under a name of their own — bound to
    /// nothing before the loop (`entry`), and no other name bound to them
    /// in it — so each iteration rewrites the one buffer (a helper's
    /// locals inlined into a time loop).
    fn hoist_scratch(
        &mut self,
        body: &mut Vec<HostStep>,
        var: Option<&str>,
        entry: &HashMap<String, HostBind>,
    ) -> Vec<HostStep> {
        // Names the loop changes: its variable and what its body assigns.
        let mut assigned: HashSet<String> = var.into_iter().map(str::to_string).collect();
        HostStep::walk(body, &mut |s| match s {
            HostStep::Scalar { name, .. }
            | HostStep::ReadBack { name, .. }
            | HostStep::ReadElement { name, .. } => {
                assigned.insert(name.clone());
            }
            HostStep::Loop { var, .. } => {
                assigned.insert(var.clone());
            }
            HostStep::Rebind { targets, .. } => assigned.extend(targets.iter().cloned()),
            HostStep::Alloc { name, .. } => {
                assigned.insert(name.clone());
            }
            _ => {}
        });
        // Arrays another name is bound to inside the loop: one buffer for
        // all iterations would make that name see the next iteration's
        // values.
        let mut aliased: HashSet<String> = HashSet::new();
        HostStep::walk(body, &mut |s| {
            if let HostStep::Rebind { sources, .. } = s {
                aliased.extend(sources.iter().cloned());
            }
        });
        // Allocated once in the body, with a name nothing else binds.
        let mut allocated: HashMap<String, usize> = HashMap::new();
        HostStep::walk(body, &mut |s| {
            if let HostStep::Alloc { name, .. } = s {
                *allocated.entry(name.clone()).or_insert(0) += 1;
            }
        });
        let mut out = Vec::new();
        // An array sized by another hoisted one is hoisted on a later round.
        loop {
            let mut kept = Vec::new();
            let mut moved = false;
            for s in body.drain(..) {
                let hoist = match &s {
                    HostStep::Alloc {
                        name,
                        shape,
                        fill: crate::plan::Fill::Empty,
                        ..
                    } if self.scratch.contains(name)
                        || (!aliased.contains(name)
                            && !entry.contains_key(name)
                            && allocated.get(name) == Some(&1)) =>
                    {
                        shape.iter().all(|e| {
                            let mut free = true;
                            port_codegen::ir::walk_expr(e, &mut |x| match x {
                                Expr::Var(v) if assigned.contains(v) => free = false,
                                Expr::Shape { array, .. } if assigned.contains(array) => {
                                    free = false
                                }
                                Expr::Load(_) => free = false,
                                _ => {}
                            });
                            free
                        })
                    }
                    _ => false,
                };
                if hoist {
                    if let HostStep::Alloc { name, .. } = &s {
                        assigned.remove(name);
                    }
                    out.push(s);
                    moved = true;
                } else {
                    kept.push(s);
                }
            }
            *body = kept;
            if !moved {
                break;
            }
        }
        if !out.is_empty() {
            self.log.applied(
                crate::lower::hoist_alloc::NAME,
                format!(
                    "{} temporary array(s) allocated once, before the loop",
                    out.len()
                ),
            );
        }
        out
    }

    /// Python name `name` now holds the new device array `arr`: inside
    /// control flow, where the name may be read again at the next
    /// iteration or after the branch, the name is rebound at run time;
    /// elsewhere it becomes a view of `arr` for the rest of the lowering.
    pub(crate) fn bind_new_array(
        &mut self,
        name: &str,
        arr: &str,
        view: ArrVal,
        line: u32,
    ) -> Lower<()> {
        if arr == name {
            return Ok(());
        }
        let ty = port_codegen::ir::ArrayType {
            elem: view.elem,
            ndim: view.ndim() as u8,
            contiguous: true,
        };
        if self.host_depth > 0 {
            if view.has_unit_dims() {
                return refuse(
                    NAME,
                    line,
                    format!(
                        "`{name}` is bound inside a loop or `if` to an array with broadcast (extent-1) dimensions: port cannot rebind it at run time yet; compute it before the loop"
                    ),
                );
            }
            match self.host.get(name) {
                Some(HostBind::Array(t)) if t.elem == ty.elem && t.ndim == ty.ndim => {
                    self.rebind(vec![name.to_string()], vec![arr.to_string()]);
                    return Ok(());
                }
                None => {
                    self.rebind(vec![name.to_string()], vec![arr.to_string()]);
                    self.host.insert(name.to_string(), HostBind::Array(ty));
                    return Ok(());
                }
                Some(HostBind::View(v)) if v.elem == ty.elem && v.ndim() == ty.ndim as usize => {
                    let of = v
                        .reads()
                        .into_iter()
                        .next()
                        .map(|a| format!(" of `{a}`"))
                        .unwrap_or_default();
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{name}` is rebound inside a loop or `if` from a view{of} to a new array: port cannot turn a view into a run-time binding yet; give the new array a name of its own"
                        ),
                    );
                }
                Some(_) => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{name}` is rebound inside a loop or `if` to an array of another type or rank"
                        ),
                    )
                }
            }
        }
        if self.loop_bound.contains(name)
            && !view.has_unit_dims()
            && crate::lower::context::whole_array(&view).as_deref() == Some(arr)
        {
            // `x = np.copy(x)` before a loop that rebinds `x`: a run-time
            // binding, so that the loop can rebind it.
            self.rebind(vec![name.to_string()], vec![arr.to_string()]);
            self.host.insert(name.to_string(), HostBind::Array(ty));
            return Ok(());
        }
        self.host.insert(name.to_string(), HostBind::View(view));
        Ok(())
    }

    /// `targets = sources` for device-array names, at run time.
    pub(crate) fn rebind(&mut self, targets: Vec<String>, sources: Vec<String>) {
        for (t, s) in targets.iter().zip(&sources) {
            self.rebinds.push((t.clone(), s.clone()));
        }
        self.steps.push(HostStep::Rebind { targets, sources });
    }

    /// `a, b = b, a` and the like: when every value is a whole device array
    /// and every target a name, the names are rebound at once. Gives
    /// `false` when the assignment is something else.
    pub(crate) fn tuple_rebind(
        &mut self,
        targets: &[ast::Expr],
        values: &[Val],
        line: u32,
    ) -> Lower<bool> {
        let mut t_names = Vec::new();
        let mut s_names = Vec::new();
        for (t, v) in targets.iter().zip(values) {
            let ast::Expr::Name(n) = t else {
                return Ok(false);
            };
            let Val::Array(av) = v else { return Ok(false) };
            let Some(src) = crate::lower::context::whole_array(av) else {
                return Ok(false);
            };
            t_names.push(n.id.to_string());
            s_names.push(src);
        }
        self.tuple_rebind_names(&t_names, &s_names, line)
    }

    /// `targets = sources` for names of whole device arrays; `false` when a
    /// source is not one.
    pub(crate) fn tuple_rebind_names(
        &mut self,
        t_names: &[String],
        s_names: &[String],
        line: u32,
    ) -> Lower<bool> {
        if s_names
            .iter()
            .any(|s| !matches!(self.host.get(s), Some(HostBind::Array(_))))
        {
            return Ok(false);
        }
        let mut types = Vec::new();
        for (t, s) in t_names.iter().zip(s_names) {
            let Some(HostBind::Array(st)) = self.host.get(s).cloned() else {
                return Ok(false);
            };
            match self.host.get(t) {
                Some(HostBind::Array(tt)) if tt.elem == st.elem && tt.ndim == st.ndim => {}
                None => {}
                Some(HostBind::Array(_)) => {
                    return refuse(
                        NAME,
                        line,
                        format!("`{t}` is rebound to an array of another type or rank"),
                    )
                }
                Some(_) => return Ok(false),
            }
            types.push((t.clone(), st));
        }
        for (t, st) in types {
            self.host.entry(t.clone()).or_insert(HostBind::Array(st));
            self.used.insert(t);
        }
        self.rebind(t_names.to_vec(), s_names.to_vec());
        self.log.applied(
            NAME,
            format!("line {line} rebinds device arrays by name (no copy)"),
        );
        Ok(true)
    }

    /// `array[i, j] = value` at host level: a kernel of one thread (a
    /// boundary condition, a corner). Reading other elements of the array
    /// is safe: nothing runs beside it.
    pub(crate) fn store_element(
        &mut self,
        target: port_codegen::ir::ElemRef,
        elem: ScalarType,
        value: Val,
        line: u32,
    ) -> Lower<()> {
        let Val::Scalar(v, t, _) = value else {
            return refuse(
                crate::numpy::array_expr::NAME,
                line,
                "setting an array element with a sequence (NumPy raises)",
            );
        };
        let v = crate::ir_util::cast_to(v, t, elem);
        self.written.insert(target.array.clone());
        if self.params.iter().any(|(p, _)| *p == target.array) {
            self.mutated.insert(target.array.clone());
        }
        let name = self.kernel_name(&format!(
            "{}_at",
            crate::lower::context::sanitize(&target.array)
        ));
        let i = self.fresh("k");
        let body = vec![port_codegen::ir::Stmt::ParallelFor(
            port_codegen::ir::ParallelFor {
                vars: vec![i],
                extents: vec![port_codegen::ir::build::i64(1)],
                body: vec![port_codegen::ir::Stmt::Store { target, value: v }],
            },
        )];
        let fname = self.fn_name.clone();
        self.tiny.insert(name.clone(), line);
        self.add_kernel(
            name,
            body,
            vec![],
            crate::plan::LaunchShape::Grid1 {
                n: port_codegen::ir::build::i64(1),
            },
            format!("Line {line} of `{fname}`: one element."),
        )
    }

    /// When every launch of `body` writes one element: the line of the first.
    fn only_tiny(&self, body: &[HostStep]) -> Option<u32> {
        let mut first = None;
        let mut all = true;
        HostStep::walk(body, &mut |s| match s {
            HostStep::Launch { kernel, .. } => match self.tiny.get(kernel) {
                Some(&l) => first = Some(first.map_or(l, |f: u32| f.min(l))),
                None => all = false,
            },
            HostStep::ReadElement { name, .. } => {
                if let Some(&l) = self.tiny.get(name) {
                    first = Some(first.map_or(l, |f: u32| f.min(l)));
                }
            }
            // A library call works on whole matrices.
            HostStep::Library(_) => all = false,
            _ => {}
        });
        if all {
            first
        } else {
            None
        }
    }

    /// The reason a single-element write is refused at host level.
    pub(crate) fn single_element_reason(&self) -> String {
        match self.loop_lines.last() {
            Some((l, why)) => format!(
                "a single element written per iteration of the host loop at line {l} ({why}): one tiny kernel per element would be slower than the CPU — a scan or recurrence port does not map to the GPU"
            ),
            None => "a single element written outside any loop: put it in the loop or compute it on the host".into(),
        }
    }

    /// Parameters the wrapper must copy back: those written, and after
    /// rebinding, those any written name may share an array with.
    pub(crate) fn finish_mutated(&mut self) {
        if self.rebinds.is_empty() {
            return;
        }
        // Union the names each rebinding connects.
        let mut class: HashMap<String, usize> = HashMap::new();
        let mut next = 0;
        for (a, b) in self.rebinds.clone() {
            let ka = class.get(&a).copied();
            let kb = class.get(&b).copied();
            match (ka, kb) {
                (Some(x), Some(y)) if x != y => {
                    for v in class.values_mut() {
                        if *v == y {
                            *v = x;
                        }
                    }
                }
                (Some(x), None) => {
                    class.insert(b, x);
                }
                (None, Some(y)) => {
                    class.insert(a, y);
                }
                (None, None) => {
                    class.insert(a, next);
                    class.insert(b, next);
                    next += 1;
                }
                _ => {}
            }
        }
        let written: HashSet<usize> = self
            .written
            .iter()
            .filter_map(|w| class.get(w).copied())
            .collect();
        for (p, t) in &self.params {
            if matches!(t, crate::types::ArgType::Array(_))
                && class.get(p).is_some_and(|k| written.contains(k))
            {
                self.mutated.insert(p.clone());
            }
        }
    }
}

/// Launches (and library calls) in a list of steps, nested ones included.
fn count_launches(steps: &[HostStep]) -> usize {
    let mut n = 0;
    HostStep::walk(steps, &mut |s| {
        if matches!(s, HostStep::Launch { .. } | HostStep::Library(_)) {
            n += 1;
        }
    });
    n
}

/// Names after an `if`: what both branches agree on; a name the branches
/// bind differently can no longer be read.
fn merge_branches(
    entry: &HashMap<String, HostBind>,
    then: HashMap<String, HostBind>,
    mut orelse: HashMap<String, HostBind>,
    line: u32,
) -> HashMap<String, HostBind> {
    let mut out = HashMap::new();
    for (k, a) in then {
        let b = orelse.remove(&k).or_else(|| entry.get(&k).cloned());
        let merged = match (&a, &b) {
            (x, Some(y)) if x == y => a,
            (HostBind::Scalar(t), Some(HostBind::Scalar(u))) => {
                HostBind::Scalar(crate::ir_util::join(*t, *u))
            }
            (HostBind::Array(t), Some(HostBind::Array(u)))
                if t.elem == u.elem && t.ndim == u.ndim =>
            {
                a
            }
            _ => HostBind::Diverged { line },
        };
        out.insert(k, merged);
    }
    for (k, b) in orelse {
        let merged = match (entry.get(&k), &b) {
            (Some(x), y) if x == y => b,
            _ => HostBind::Diverged { line },
        };
        out.insert(k, merged);
    }
    out
}

/// `raise class(message)` as a host step: the statement the wrapper runs
/// and what it says for people (`ValueError: …`).
fn raise_step(line: u32, class: &str, message: Option<&str>) -> HostStep {
    HostStep::Raise {
        line,
        python: format!(
            "raise {class}({})",
            message.map(crate::pyast::py_str).unwrap_or_default()
        ),
        what: match message {
            Some(m) => format!("{class}: {m}"),
            None => class.to_string(),
        },
    }
}

/// The value of a condition the types decide: a literal, and `not`,
/// `and`, `or` of such (`not np.isscalar(B)` of a number).
fn decided(e: &Expr) -> Option<bool> {
    use port_codegen::ir::{BinOp, Literal, UnaryOp};
    match e {
        Expr::Lit(Literal::Bool(b)) => Some(*b),
        Expr::Unary(UnaryOp::Not, x) => decided(x).map(|b| !b),
        Expr::Binary(BinOp::And, a, b) => match (decided(a), decided(b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Expr::Binary(BinOp::Or, a, b) => match (decided(a), decided(b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        _ => None,
    }
}
