//! **app_calls**: a call to another function of the program inside a
//! kernel. A cuda-eligible callee becomes a device function (one per
//! argument-type signature, `@cuda.jit(device=True)`); a callee that
//! returns a tuple or takes a slice is inlined, its `if`s and loops
//! included, when it returns once (after [`pyast::single_exit`]; its locals
//! are declared in the block of the call). A callee the analysis did not
//! find cuda-eligible is refused, naming it and its own reason.

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, DeviceFunction, Expr, Param, ScalarType, Stmt, Type};
use rustpython_parser::ast::{self, Ranged};

use crate::error::{refuse, Lower, Reason};
use crate::ir_util::{cast_to, join};
use crate::lower::context::{sanitize, HostBind, Local, Lowerer, Recurse, Region, RegionKind};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::pyast;

pub const NAME: &str = "app_calls";

/// Calls nest at most this deep (recursion is refused by the analysis).
const MAX_CALL_DEPTH: usize = 8;

impl<'a> Lowerer<'a> {
    fn check_callee(&self, callee: &str, line: u32) -> Lower<()> {
        if let Some((verdict, reason)) = self.facts.verdict(callee) {
            if *verdict != port_analyzer::Verdict::Cuda {
                let why = match reason {
                    Some((l, m)) => format!(": {m} (line {l})"),
                    None => String::new(),
                };
                return refuse(
                    NAME,
                    line,
                    format!(
                        "calls `{callee}` (line {line}), which is {verdict}-mode{why}; a kernel cannot call it"
                    ),
                );
            }
        }
        Ok(())
    }

    pub(crate) fn callee_def(&self, callee: &str, line: u32) -> Lower<&'a ast::StmtFunctionDef> {
        let src: &'a crate::source::SourceFile = self.src;
        let found = src.module_function(callee);
        match found {
            Some(f) => {
                let d = f.def;
                if d.args.vararg.is_some()
                    || d.args.kwarg.is_some()
                    || !d.args.kwonlyargs.is_empty()
                {
                    return refuse(
                        NAME,
                        line,
                        format!("`{callee}` takes *args, **kwargs or keyword-only arguments"),
                    );
                }
                Ok(d)
            }
            None => refuse(
                NAME,
                line,
                format!("`{callee}` is not a function of this file"),
            ),
        }
    }

    /// `callee(args)` used as a value.
    pub(crate) fn call_app(
        &mut self,
        r: &mut Region,
        callee: &str,
        args: Vec<Val>,
        line: u32,
    ) -> Lower<Val> {
        match self.call_app_impl(r, callee, args, line)? {
            Some(v) => Ok(v),
            None => refuse(
                NAME,
                line,
                format!("`{callee}` returns nothing; its value is used"),
            ),
        }
    }

    /// `callee(args)` as a statement.
    pub(crate) fn call_app_stmt(
        &mut self,
        r: &mut Region,
        callee: &str,
        args: Vec<Val>,
        line: u32,
    ) -> Lower<()> {
        match self.call_app_impl(r, callee, args, line)? {
            Some(Val::Scalar(Expr::Call(n, a), _, _)) => {
                r.push(Stmt::Eval(Expr::Call(n, a)));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn call_app_impl(
        &mut self,
        r: &mut Region,
        callee: &str,
        args: Vec<Val>,
        line: u32,
    ) -> Lower<Option<Val>> {
        self.check_callee(callee, line)?;
        if r.kind == RegionKind::Host {
            return refuse(
                NAME,
                line,
                format!("`{callee}` is called outside any loop: migrate `{callee}` itself, or call it inside the loop"),
            );
        }
        if self.call_depth >= MAX_CALL_DEPTH {
            return refuse(
                NAME,
                line,
                format!("calls nest too deep at `{callee}` (recursion?)"),
            );
        }
        let def = self.callee_def(callee, line)?;
        let nparams = def.args.args.len();
        let mut args = args;
        if args.len() < nparams {
            // Defaults that are constants.
            for p in &def.args.args[args.len()..] {
                match p.default.as_ref().and_then(|d| self.src.eval_const(d)) {
                    Some(c) => args.push(crate::lower::context::const_val(c)),
                    None => {
                        return refuse(
                            NAME,
                            line,
                            format!(
                                "`{callee}` is called with {} of its {nparams} arguments",
                                args.len()
                            ),
                        )
                    }
                }
            }
        }
        if args.len() != nparams {
            return refuse(
                NAME,
                line,
                format!("`{callee}` takes {nparams} arguments, {} given", args.len()),
            );
        }
        let returns_tuple = returns_a_tuple(def);
        let arrays_by_name: Option<Vec<Option<(String, ArrayType)>>> = args
            .iter()
            .map(|a| match a {
                Val::Scalar(..) => Some(None),
                Val::Array(av) => {
                    let name = crate::lower::context::whole_array(av)?;
                    let ty = self.array_type(&name, av)?;
                    Some(Some((name, ty)))
                }
                Val::Tuple(_) => None,
            })
            .collect();
        let frame = [Frame {
            callee: callee.to_string(),
            call_line: line,
            span: (self.src.line(def), self.src.end_line(def)),
            prefix: String::new(),
        }];
        let at_call = |why| at_call_site(why, &frame, self.src);
        match (returns_tuple, arrays_by_name) {
            (false, Some(arrays)) => {
                let (dname, ret) = self
                    .device_function(callee, def, &args, &arrays, line)
                    .map_err(at_call)?;
                let call_args: Vec<Expr> = args
                    .iter()
                    .zip(&arrays)
                    .map(|(a, arr)| match (a, arr) {
                        (_, Some((n, _))) => var(n),
                        (Val::Scalar(e, _, _), None) => e.clone(),
                        _ => unreachable!("checked above"),
                    })
                    .collect();
                let call = Expr::Call(dname, call_args);
                Ok(Some(match ret {
                    Some((t, weak)) => Val::Scalar(call, t, weak),
                    None => Val::Scalar(call, ScalarType::Bool, false),
                }))
            }
            _ => self
                .inline_call(r, callee, def, args, line)
                .map(Some)
                .map_err(at_call),
        }
    }

    fn array_type(&self, name: &str, av: &ArrVal) -> Option<ArrayType> {
        if let Some((_, crate::types::ArgType::Array(a))) =
            self.params.iter().find(|(p, _)| p == name)
        {
            return Some(*a);
        }
        if let Some(HostBind::Array(t)) = self.host.get(name) {
            return Some(*t);
        }
        Some(ArrayType {
            elem: av.elem,
            ndim: av.ndim() as u8,
            contiguous: false,
        })
    }

    /// Lowers `callee` for these argument types as a device function
    /// (once): its name, and the type of what it returns, weak when every
    /// `return` gives a Python number.
    pub(crate) fn device_function(
        &mut self,
        callee: &str,
        def: &ast::StmtFunctionDef,
        args: &[Val],
        arrays: &[Option<(String, ArrayType)>],
        line: u32,
    ) -> Lower<(String, Option<(ScalarType, bool)>)> {
        let mut params = Vec::new();
        let mut weak_params = Vec::new();
        let mut key = format!("{callee}(");
        let mut typed = Vec::new();
        for ((a, arr), p) in args.iter().zip(arrays).zip(&def.args.args) {
            let (ty, weak) = match (a, arr) {
                (_, Some((_, t))) => (Type::Array(*t), false),
                (Val::Scalar(_, t, weak), None) => (Type::Scalar(*t), *weak),
                _ => return refuse(NAME, line, format!("`{callee}`: unsupported argument")),
            };
            typed.push(match ty {
                Type::Array(t) => ScopeArg::Array(t.elem, t.ndim),
                Type::Scalar(t) => ScopeArg::Scalar(t, weak),
            });
            key.push_str(&port_codegen::text::type_text(ty));
            key.push_str(if weak { " weak," } else { "," });
            weak_params.push(weak);
            params.push(Param {
                name: sanitize(p.def.arg.as_str()),
                ty,
            });
        }
        key.push(')');
        // Its locals' types are keyed by what decides them (the callee and
        // its arguments' types), which the typing pass knows too.
        let scope = type_scope(callee, &typed);
        if let Some(name) = self.device_fns.get(&key) {
            let name = name.clone();
            let ret = self
                .module
                .device_function(&name)
                .and_then(|f| f.ret)
                .or_else(|| self.types.get(&format!("{scope}return")).copied());
            let weak = self.weak_returns.contains(&name);
            return Ok((name, ret.map(|t| (t, weak))));
        }
        let dname = self.fresh(&format!("{callee}_device"));
        self.device_fns.insert(key, dname.clone());
        let mut r = Region::new(RegionKind::Device, &scope);
        r.scan(&def.body);
        if let (Some(a), Some(b)) = (def.body.first(), def.body.last()) {
            r.blocks[0].1 = (a.start(), b.end());
        }
        let mut prologue = Vec::new();
        for ((p, prm), weak) in def.args.args.iter().zip(params.iter_mut()).zip(weak_params) {
            let py = p.def.arg.to_string();
            self.used.insert(prm.name.clone());
            r.declare_in(0, &prm.name);
            match prm.ty {
                Type::Scalar(t) => {
                    // A parameter the body rebinds to a wider value (`x =
                    // x * 0.75` of an int `x`) is a local of the joined
                    // type, as in Python, which the argument initialises.
                    let key = format!("{scope}{py}");
                    let ty = self.declare_type_weak(&key, t, weak);
                    let weak = weak && self.weak_local(&key);
                    if ty != t {
                        let local = prm.name.clone();
                        prm.name = self.fresh(&format!("{local}_arg"));
                        r.declare_in(0, &prm.name);
                        prologue.push(let_(&local, ty, cast_to(var(&prm.name), t, ty)));
                    }
                    r.locals.insert(
                        py.clone(),
                        Local::Scalar {
                            ir: if ty == t {
                                prm.name.clone()
                            } else {
                                sanitize(&py)
                            },
                            ty,
                            weak,
                        },
                    );
                }
                Type::Array(at) => {
                    r.locals.insert(
                        py,
                        Local::Array {
                            val: ArrVal::named(&prm.name, at),
                            snapshot: Vec::new(),
                        },
                    );
                }
            }
        }
        let ret_key = format!("{scope}return");
        r.ret_ty = self.types.get(&ret_key).copied();
        self.call_depth += 1;
        let res = self.block(&mut r, &def.body);
        self.call_depth -= 1;
        res?;
        let mut ret: Option<ScalarType> = None;
        for &(t, weak) in &r.returns {
            self.declare_type_weak(&ret_key, t, weak);
            ret = Some(ret.map_or(t, |a| join(a, t)));
        }
        let ret = r.ret_ty.or(ret);
        let weak = !r.returns.is_empty() && self.weak_local(&ret_key);
        if weak {
            self.weak_returns.insert(dname.clone());
        }
        let mut body = prologue;
        body.append(&mut r.blocks[0].0);
        self.module.device_functions.push(DeviceFunction {
            name: dname.clone(),
            params,
            ret,
            body,
        });
        self.log.applied(
            NAME,
            format!("`{callee}` as the device function `{dname}` (line {line})"),
        );
        Ok((dname, ret.map(|t| (t, weak))))
    }

    /// Inlines a callee (one that returns a tuple, or is given a slice)
    /// into the current kernel: its statements, `if`s and loops included,
    /// then the value of its one `return` (returns in `if`s made one by
    /// [`pyast::single_exit`]).
    pub(crate) fn inline_call(
        &mut self,
        r: &mut Region,
        callee: &str,
        def: &ast::StmtFunctionDef,
        args: Vec<Val>,
        line: u32,
    ) -> Lower<Val> {
        let mut owned: Vec<ast::Stmt> = def
            .body
            .iter()
            .filter(|s| !pyast::is_docstring(s))
            .cloned()
            .collect();
        pyast::single_exit::single_exit_fresh(&mut owned, &def.args);
        let Some((last, init)) = owned.split_last() else {
            return refuse(NAME, line, format!("`{callee}` is empty"));
        };
        let ast::Stmt::Return(ret) = last else {
            return refuse(
                NAME,
                line,
                format!("`{callee}` must end with `return` to be inlined"),
            );
        };
        let mut inner_return = None;
        pyast::walk_stmts(init, &mut |s| {
            if matches!(s, ast::Stmt::Return(_)) && inner_return.is_none() {
                inner_return = Some(self.src.line(s));
            }
        });
        if let Some(at) = inner_return {
            return refuse(
                NAME,
                at,
                format!("`{callee}` is inlined (it returns a tuple, or is given a slice) and returns at line {at} from inside a loop, or from an `if` after which it goes on: port inlines a callee that returns once at its end, or in each branch of its `if`s"),
            );
        }
        let init: Vec<&ast::Stmt> = init.iter().collect();
        let saved_locals = std::mem::take(&mut r.locals);
        let saved_inlining = r.inlining;
        let saved_base = r.inline_base;
        r.inline_base = r.blocks.len() - 1;
        let saved_scope = std::mem::replace(&mut r.scope, format!("{callee}/inline/"));
        r.inlining = true;
        self.call_depth += 1;
        let result = (|| -> Lower<Val> {
            for (p, a) in def.args.args.iter().zip(args) {
                let py = p.def.arg.to_string();
                let reassigned = def.body.iter().any(|s| {
                    let mut hit = false;
                    pyast::walk_stmts(std::slice::from_ref(s), &mut |x| {
                        let ts: Vec<&ast::Expr> = match x {
                            ast::Stmt::Assign(a) => a.targets.iter().collect(),
                            ast::Stmt::AugAssign(a) => vec![&a.target],
                            ast::Stmt::AnnAssign(a) => vec![&a.target],
                            _ => vec![],
                        };
                        hit |= ts.iter().any(|t| pyast::target_names(t).contains(&py));
                    });
                    hit
                });
                match a {
                    Val::Scalar(Expr::Var(v), t, weak) if !reassigned => {
                        r.locals.insert(py, Local::Scalar { ir: v, ty: t, weak });
                    }
                    // A parameter the body rebinds is a local of the type
                    // that holds every value bound to it, the argument's
                    // included (`k = k * 0.5` of an int `k` is a float).
                    Val::Scalar(e, t, weak) => {
                        let key = format!("{}{py}", r.scope);
                        let ty = self.declare_type_weak(&key, t, weak);
                        let weak = weak && self.weak_local(&key);
                        let ir = self.local_temp(r, &py);
                        r.push(let_(&ir, ty, cast_to(e, t, ty)));
                        r.locals.insert(py, Local::Scalar { ir, ty, weak });
                    }
                    Val::Array(val) => {
                        r.locals.insert(
                            py,
                            Local::Array {
                                val,
                                snapshot: Vec::new(),
                            },
                        );
                    }
                    Val::Tuple(_) => {
                        return refuse(NAME, line, format!("a tuple passed to `{callee}`"))
                    }
                }
            }
            for s in &init {
                self.block(r, std::slice::from_ref(*s))?;
            }
            match &ret.value {
                Some(v) => self.expr(r, v),
                None => refuse(NAME, line, format!("`{callee}` returns nothing")),
            }
        })();
        self.call_depth -= 1;
        r.locals = saved_locals;
        r.inlining = saved_inlining;
        r.inline_base = saved_base;
        r.scope = saved_scope;
        let v = result?;
        self.log
            .applied(NAME, format!("`{callee}` inlined (line {line})"));
        Ok(v)
    }
}

/// A helper inlined for one statement: its name, the call's line and the
/// helper's own lines (to say where a refusal inside it comes from).
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    pub callee: String,
    pub call_line: u32,
    pub span: (u32, u32),
    /// The prefix of the helper's renamed locals, taken off in messages.
    pub prefix: String,
}

/// A refusal inside a helper, said from the call site: `in `relu` (called
/// at line 18), line 5: …`. Other refusals are unchanged.
pub(crate) fn at_call_site(
    mut why: Box<Reason>,
    frames: &[Frame],
    src: &crate::source::SourceFile,
) -> Box<Reason> {
    if let Some(f) = frames
        .iter()
        .find(|f| why.line >= f.span.0 && why.line <= f.span.1 && why.line != f.call_line)
    {
        let message = if f.prefix.is_empty() {
            why.message.clone()
        } else {
            why.message.replace(&f.prefix, "")
        };
        why.message = format!(
            "in `{}` (called at line {}), line {}: {message}",
            f.callee,
            f.call_line,
            src.shown_line(why.line)
        );
        why.line = f.call_line;
    }
    why
}

pub(crate) fn returns_a_tuple(def: &ast::StmtFunctionDef) -> bool {
    let mut found = false;
    pyast::walk_stmts(&def.body, &mut |s| {
        if let ast::Stmt::Return(r) = s {
            found |= matches!(r.value.as_deref(), Some(ast::Expr::Tuple(_)));
        }
    });
    found
}

/// An argument of a device function, as far as the types of its locals go
/// (an array's layout does not change them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScopeArg {
    Scalar(ScalarType, bool),
    Array(ScalarType, u8),
}

/// The prefix of the type keys of a device function's locals (`f(float64
/// weak, float32[2])/x`): [`crate::pipeline::typing`] computes the same.
pub fn type_scope(callee: &str, args: &[ScopeArg]) -> String {
    let items: Vec<String> = args
        .iter()
        .map(|a| match a {
            ScopeArg::Scalar(t, weak) => format!(
                "{}{}",
                crate::types::numba_scalar(*t),
                if *weak { " weak" } else { "" }
            ),
            ScopeArg::Array(t, n) => format!("{}[{n}]", crate::types::numba_scalar(*t)),
        })
        .collect();
    format!("{callee}({})/", items.join(", "))
}
