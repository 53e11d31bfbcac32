//! **infer types** — the scalar type of every name the function's own body
//! binds, decided once, before anything is lowered, from NumPy 2's rules
//! (the operators' [`crate::dtypes`], the functions' [`math_calls`], the
//! reductions' [`acc_type`]) and the argument types.
//!
//! A name's type is the join of every value bound to it, the weak ones
//! (Python numbers, NEP 50) taking the strong ones' type, as a variable of
//! the kernel must hold each of them; it is *strong* when some binding is
//! a NumPy value. A read of a name that is bound both ways can be either,
//! depending on which binding reached it: the pass follows both, and where
//! they give different types it does not guess. A name the function's
//! Numba decorator types (`locals={"acc": numba.types.float32}`) holds
//! that type whatever is bound to it, as Numba casts each binding; the
//! lowering's fixed point never widens it.
//!
//! The pass is exact or silent: a name whose value it cannot type (a
//! helper's result, a library call it has no rule for, a read of such a
//! name) is left out of the table, with the first line that made it so.
//! The lower pass declares every name the table holds with the table's
//! type; it observes only the names left out, and its own check (a
//! binding wider than the declared type widens it, and lowers again)
//! keeps a wrong table from narrowing a value. A complete table is lowered
//! once.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};

use port_codegen::ir::build::var;
use port_codegen::ir::{ArrayType, ScalarType};
use rustpython_parser::ast;

use crate::dtypes;
use crate::lower::app_calls::{returns_a_tuple, type_scope, ScopeArg};
use crate::lower::context::{const_val, python_number_type};
use crate::lower::row_reduction::{acc_type, reduce_name};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::numpy::math_calls;
use crate::source::{Const, SourceFile};
use crate::types::ArgType;

/// What the pass decided.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Table {
    /// Each typed name's declared type.
    pub types: HashMap<String, ScalarType>,
    /// The typed names some binding makes strong (a NumPy value).
    pub strong: HashSet<String>,
    /// Names bound to scalars whose type the pass left out, each with the
    /// first line it could not type.
    pub untyped: BTreeMap<String, u32>,
}

impl Table {
    /// Whether every scalar the body binds is typed.
    pub fn complete(&self) -> bool {
        self.untyped.is_empty()
    }
}

/// One scalar as a read may see it: its type, and whether it is weak.
type Num = (ScalarType, bool);

/// An abstract value.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    /// A scalar, as each binding that may reach the read gives it (one
    /// entry when they agree).
    Num(Vec<Num>),
    /// An array: element type and rank.
    Arr(ScalarType, usize),
    Tuple(Vec<Ty>),
}

/// What one name is bound to, over the whole body.
#[derive(Clone, Debug, Default, PartialEq)]
struct Bindings {
    weak: Option<ScalarType>,
    strong: Option<ScalarType>,
    array: Option<(ScalarType, usize)>,
    tuple: bool,
    /// A binding the pass could not type, at this line.
    unknown: Option<u32>,
}

impl Bindings {
    fn declared(&self) -> Option<ScalarType> {
        match (self.weak, self.strong) {
            (Some(w), Some(s)) => Some(dtypes::promote(w, true, s, false)),
            (w, s) => w.or(s),
        }
    }
}

/// The pass: the table for `def`, whose parameters `names` have `types`;
/// `ufunc` when the function is planned as a ufunc (a device function of
/// its elements).
pub fn infer(
    src: &SourceFile,
    def: &ast::StmtFunctionDef,
    names: &[String],
    types: &[ArgType],
    ufunc: bool,
) -> Table {
    let params: HashMap<String, ArgType> =
        names.iter().cloned().zip(types.iter().copied()).collect();
    let helpers = RefCell::new(HashMap::new());
    let frame = Frame {
        src,
        helpers: &helpers,
        stack: vec![def.name.to_string()],
    };
    let mut out = frame.solve(def, &params, &[], "").0;
    // Lowered as a ufunc, the function is a device function of its
    // elements (strong, each of its parameter's element type).
    let elements: Option<Vec<ScopeArg>> = types
        .iter()
        .map(|t| match t {
            ArgType::Scalar(t) => Some(ScopeArg::Scalar(*t, false)),
            ArgType::Array(a) => Some(ScopeArg::Scalar(a.elem, false)),
        })
        .collect();
    if let (Some(elements), true) = (elements, ufunc) {
        if !types.is_empty() && !returns_a_tuple(def) {
            let scope = type_scope(def.name.as_str(), &elements);
            let (t, _) = frame.solve(def, &HashMap::new(), &elements, &scope);
            out.merge(t);
        }
    }
    out
}

/// Device functions already typed, by scope: their table (helpers they
/// call merged in) and what they return.
type Helpers = RefCell<HashMap<String, Option<(Table, Option<Num>)>>>;

struct Frame<'a> {
    src: &'a SourceFile,
    helpers: &'a Helpers,
    /// The functions being typed, outermost first (a recursive call is
    /// not typed).
    stack: Vec<String>,
}

impl Frame<'_> {
    /// Types one function body to its fixed point: the function itself
    /// (`device` empty: parameters read as the arguments) or a device
    /// function (its parameters are locals the call binds).
    fn solve(
        &self,
        def: &ast::StmtFunctionDef,
        params: &HashMap<String, ArgType>,
        device: &[ScopeArg],
        scope: &str,
    ) -> (Table, Option<Num>) {
        let mut bound = crate::pyast::names_rebound(&def.body);
        crate::pyast::walk_stmts(&def.body, &mut |s| {
            if let ast::Stmt::AugAssign(a) = s {
                bound.extend(crate::pyast::target_names(&a.target));
            }
        });
        // Loop variables of `range` loops: a Python int in a kernel (weak),
        // an int64 the host declares (strong) on the host; which one
        // depends on where the loop is placed, which the lowering decides.
        let mut counters = HashSet::new();
        crate::pyast::walk_stmts(&def.body, &mut |s| {
            if let ast::Stmt::For(f) = s {
                counters.extend(crate::pyast::target_names(&f.target));
            }
        });
        let is_device = !scope.is_empty();
        // A device function's parameters are bound by the call.
        let mut entry: HashMap<String, Bindings> = HashMap::new();
        if is_device {
            for (p, a) in def.args.args.iter().zip(device) {
                let mut b = Bindings::default();
                match *a {
                    ScopeArg::Scalar(t, true) => b.weak = Some(t),
                    ScopeArg::Scalar(t, false) => b.strong = Some(t),
                    ScopeArg::Array(t, n) => b.array = Some((t, n as usize)),
                }
                entry.insert(p.def.arg.to_string(), b);
            }
            bound.insert(RETURN.to_string());
        }
        let declared: HashMap<String, ScalarType> =
            crate::numba_declared::numba_locals(self.src, def)
                .into_iter()
                .collect();
        let mut last = entry.clone();
        // The bindings' types only grow (joins), over finitely many
        // types: a few rounds settle them; a body that has not settled by
        // then is left untyped as a whole.
        for _ in 0..8 {
            let mut walk = Walk {
                frame: self,
                params,
                bound: &bound,
                last: &last,
                next: entry.clone(),
                bottom: Cell::new(false),
                counters: &counters,
                placed: Cell::new(false),
                device: is_device,
                used: RefCell::new(BTreeMap::new()),
                declared: &declared,
            };
            walk.block(&def.body);
            let used = walk.used.into_inner();
            let next = walk.next;
            if next == last {
                let mut out = table(&next, scope);
                // Names no binding gave a value to (each read a name that
                // never got one).
                for name in &bound {
                    if !next.contains_key(name) && name != RETURN {
                        out.untyped.insert(format!("{scope}{name}"), 0);
                    }
                }
                for sub in used.into_values() {
                    out.merge(sub);
                }
                let ret = next.get(RETURN).and_then(|b| {
                    if b.unknown.is_some() || b.array.is_some() || b.tuple {
                        return None;
                    }
                    Some((b.declared()?, b.strong.is_none()))
                });
                return (out, ret);
            }
            last = next;
        }
        let mut out = Table::default();
        for name in &bound {
            out.untyped.insert(format!("{scope}{name}"), 0);
        }
        (out, None)
    }
}

/// The key of what a device function returns.
const RETURN: &str = "return";

impl Table {
    fn merge(&mut self, other: Table) {
        self.types.extend(other.types);
        self.strong.extend(other.strong);
        self.untyped.extend(other.untyped);
    }
}

fn table(bound: &HashMap<String, Bindings>, scope: &str) -> Table {
    let mut out = Table::default();
    for (name, b) in bound {
        let key = format!("{scope}{name}");
        if let Some(line) = b.unknown {
            out.untyped.insert(key, line);
            continue;
        }
        if b.array.is_some() || b.tuple {
            if b.weak.is_some() || b.strong.is_some() {
                // Bound to an array and to a number: the lowering decides.
                out.untyped.insert(key, 0);
            }
            continue;
        }
        if let Some(t) = b.declared() {
            out.types.insert(key.clone(), t);
            if b.strong.is_some() {
                out.strong.insert(key);
            }
        }
    }
    out
}

struct Walk<'a> {
    frame: &'a Frame<'a>,
    params: &'a HashMap<String, ArgType>,
    /// The names the body binds.
    bound: &'a HashSet<String>,
    /// The last round's bindings, which reads see.
    last: &'a HashMap<String, Bindings>,
    next: HashMap<String, Bindings>,
    /// Set when a read meets a name the last round gave no value yet: the
    /// value being typed is not known *yet*, which is not unknown.
    bottom: Cell<bool>,
    /// The loop variables.
    counters: &'a HashSet<String>,
    /// Set when a read meets a loop variable, whose weakness depends on
    /// where its loop runs.
    placed: Cell<bool>,
    /// Typing a device function: `return` binds its result.
    device: bool,
    /// The device functions this round's calls type, by scope.
    used: RefCell<BTreeMap<String, Table>>,
    /// Names the function's Numba decorator types (`locals={"acc":
    /// float32}`): every binding holds that type, cast to it.
    declared: &'a HashMap<String, ScalarType>,
}

/// A value being bound.
enum Eval {
    Known(Ty),
    /// Reads a name with no value yet (an earlier round will give one).
    Pending,
    Unknown,
}

impl Walk<'_> {
    fn line(&self, e: &impl rustpython_parser::ast::Ranged) -> u32 {
        self.frame.src.line(e)
    }

    /// Types `e` for a binding.
    fn value(&self, e: &ast::Expr) -> Eval {
        self.bottom.set(false);
        self.placed.set(false);
        let v = self.expr(e);
        self.settled(v)
    }

    /// A value as a binding takes it: not known yet, unknown, or known.
    /// A number that is weak or strong depending on where a loop runs is
    /// not known: the binding would be strong on one placement only.
    fn settled(&self, v: Option<Ty>) -> Eval {
        match v {
            Some(Ty::Num(alts)) if self.placed.get() && alts.iter().any(|a| a.1 != alts[0].1) => {
                Eval::Unknown
            }
            Some(t) => Eval::Known(t),
            None if self.bottom.get() => Eval::Pending,
            None => Eval::Unknown,
        }
    }

    fn bind(&mut self, name: &str, v: Eval, line: u32) {
        let v = match v {
            // A name Numba's `locals=` types: any number bound to it is
            // cast to that type (what is bound is known or not).
            _ if self.declared.contains_key(name) => {
                Some(Ty::Num(vec![(self.declared[name], false)]))
            }
            Eval::Pending => return,
            Eval::Unknown => None,
            Eval::Known(t) => Some(t),
        };
        let b = self.next.entry(name.to_string()).or_default();
        match v {
            None => {
                b.unknown.get_or_insert(line);
            }
            Some(Ty::Num(alts)) => {
                // Bindings that reach it differently give values of
                // different types: which one is bound depends on the path.
                if alts.iter().any(|a| a.0 != alts[0].0) {
                    b.unknown.get_or_insert(line);
                    return;
                }
                for (t, weak) in alts {
                    let slot = if weak { &mut b.weak } else { &mut b.strong };
                    *slot = Some(slot.map_or(t, |o| dtypes::join(o, t)));
                }
            }
            Some(Ty::Arr(t, n)) => match b.array {
                Some(a) if a != (t, n) => {
                    b.unknown.get_or_insert(line);
                }
                _ => b.array = Some((t, n)),
            },
            Some(Ty::Tuple(_)) => b.tuple = true,
        }
    }

    fn block(&mut self, body: &[ast::Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &ast::Stmt) {
        let line = self.line(s);
        match s {
            ast::Stmt::Assign(a) => {
                for t in &a.targets {
                    let v = self.value(&a.value);
                    self.target(t, v, line);
                }
            }
            ast::Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    let v = self.value(value);
                    self.target(&a.target, v, line);
                }
            }
            ast::Stmt::AugAssign(a) => {
                let ast::Expr::Name(n) = a.target.as_ref() else {
                    return;
                };
                self.bottom.set(false);
                self.placed.set(false);
                let v = match (self.expr(&a.target), self.expr(&a.value)) {
                    (Some(x), Some(y)) => binop(a.op, &x, &y, Some(&a.value)),
                    _ => None,
                };
                // An array updated in place keeps its type.
                if matches!(v, Some(Ty::Arr(..))) {
                    return;
                }
                let v = self.settled(v);
                self.bind(n.id.as_str(), v, line);
            }
            ast::Stmt::For(f) => {
                let counter = match f.iter.as_ref() {
                    // The host declares its loops' variables int64; in a
                    // device function every loop is a kernel's, whose
                    // variable is a Python int.
                    ast::Expr::Call(c)
                        if self.frame.src.resolve(&c.func).as_deref() == Some("range")
                            && c.keywords.is_empty() =>
                    {
                        Eval::Known(Ty::Num(vec![(ScalarType::I64, self.device)]))
                    }
                    _ => Eval::Unknown,
                };
                self.target(&f.target, counter, line);
                self.block(&f.body);
                self.block(&f.orelse);
            }
            ast::Stmt::While(w) => {
                self.block(&w.body);
                self.block(&w.orelse);
            }
            ast::Stmt::If(i) => {
                self.block(&i.body);
                self.block(&i.orelse);
            }
            ast::Stmt::Try(t) => {
                self.block(&t.body);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.bind(n.as_str(), Eval::Unknown, line);
                    }
                    self.block(&h.body);
                }
                self.block(&t.orelse);
                self.block(&t.finalbody);
            }
            ast::Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.target(v, Eval::Unknown, line);
                    }
                }
                self.block(&w.body);
            }
            ast::Stmt::Return(r) if self.device => {
                let v = match &r.value {
                    Some(v) => self.value(v),
                    None => Eval::Unknown,
                };
                self.bind(RETURN, v, line);
            }
            // Typed for the helpers they call, whose locals are typed in
            // their own scope; the values bind no name.
            ast::Stmt::Expr(e) => {
                let _ = self.expr(&e.value);
            }
            ast::Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    let _ = self.expr(v);
                }
            }
            _ => {}
        }
    }

    fn target(&mut self, t: &ast::Expr, v: Eval, line: u32) {
        match t {
            ast::Expr::Name(n) => self.bind(n.id.as_str(), v, line),
            ast::Expr::Tuple(tt) => {
                let n_items = tt.elts.len();
                let items: Vec<Eval> = match v {
                    Eval::Known(Ty::Tuple(items)) if items.len() == n_items => {
                        items.into_iter().map(Eval::Known).collect()
                    }
                    // An array unpacks into its rows.
                    Eval::Known(Ty::Arr(e, n)) if n >= 1 => (0..n_items)
                        .map(|_| {
                            Eval::Known(if n == 1 {
                                Ty::Num(vec![(e, false)])
                            } else {
                                Ty::Arr(e, n - 1)
                            })
                        })
                        .collect(),
                    Eval::Pending => (0..n_items).map(|_| Eval::Pending).collect(),
                    _ => (0..n_items).map(|_| Eval::Unknown).collect(),
                };
                for (x, v) in tt.elts.iter().zip(items) {
                    self.target(x, v, line);
                }
            }
            ast::Expr::Starred(s) => self.target(&s.value, Eval::Unknown, line),
            // A store into an array, an attribute: no name is bound.
            _ => {}
        }
    }

    fn read(&self, name: &str) -> Option<Ty> {
        if self.bound.contains(name)
            && !self.last.contains_key(name)
            && !self.params.contains_key(name)
        {
            self.bottom.set(true);
            return None;
        }
        if let Some(b) = self.last.get(name) {
            if b.unknown.is_some() || b.tuple {
                return None;
            }
            let mut alts: Vec<Num> = Vec::new();
            if let Some(p) = self.params.get(name) {
                // Read before the body rebinds it.
                match p {
                    ArgType::Scalar(t) => alts.push((*t, python_number_type(*t))),
                    ArgType::Array(_) => return None,
                }
            }
            return match (b.array, b.declared()) {
                (Some((t, n)), None) if alts.is_empty() => Some(Ty::Arr(t, n)),
                (None, Some(d)) => {
                    if self.counters.contains(name) && !self.device {
                        self.placed.set(true);
                        alts.push((d, true));
                    }
                    if b.weak.is_some() {
                        alts.push((d, true));
                    }
                    if b.strong.is_some() {
                        alts.push((d, false));
                    }
                    Some(num(alts))
                }
                _ => None,
            };
        }
        if let Some(p) = self.params.get(name) {
            return Some(match p {
                ArgType::Scalar(t) => Ty::Num(vec![(*t, python_number_type(*t))]),
                ArgType::Array(a) => Ty::Arr(a.elem, a.ndim as usize),
            });
        }
        let c = self.frame.src.consts.get(name).copied().or_else(|| {
            self.frame
                .src
                .imports
                .get(name)
                .and_then(|f| self.frame.src.imported_const(f))
        })?;
        Some(constant(c))
    }

    fn expr(&self, e: &ast::Expr) -> Option<Ty> {
        match e {
            ast::Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => {
                    i64::try_from(i).ok()?;
                    Some(Ty::Num(vec![(ScalarType::I64, true)]))
                }
                ast::Constant::Float(_) => Some(Ty::Num(vec![(ScalarType::F64, true)])),
                ast::Constant::Bool(_) => Some(Ty::Num(vec![(ScalarType::Bool, true)])),
                ast::Constant::Complex { .. } => Some(Ty::Num(vec![(ScalarType::C128, true)])),
                _ => None,
            },
            ast::Expr::Name(n) => self.read(n.id.as_str()),
            ast::Expr::BinOp(b) => {
                let x = self.expr(&b.left)?;
                let y = self.expr(&b.right)?;
                binop(b.op, &x, &y, Some(&b.right))
            }
            ast::Expr::UnaryOp(u) => match self.expr(&u.operand)? {
                Ty::Num(alts) => {
                    let mut out = Vec::new();
                    for (t, weak) in alts {
                        out.push((dtypes::unary(u.op, (t, weak)).ok()?, weak));
                    }
                    Some(num(out))
                }
                Ty::Arr(t, n) => Some(Ty::Arr(dtypes::unary(u.op, (t, false)).ok()?, n)),
                Ty::Tuple(_) => None,
            },
            ast::Expr::BoolOp(b) => {
                for v in &b.values {
                    if !matches!(self.expr(v)?, Ty::Num(_)) {
                        return None;
                    }
                }
                Some(Ty::Num(vec![(ScalarType::Bool, false)]))
            }
            ast::Expr::Compare(c) => {
                if c.ops.iter().any(|op| {
                    matches!(
                        op,
                        ast::CmpOp::Is | ast::CmpOp::IsNot | ast::CmpOp::In | ast::CmpOp::NotIn
                    )
                }) {
                    return None;
                }
                let mut rank = 0;
                // Of numbers, a Python bool when every operand is weak
                // (NumPy's when one is not).
                let (mut weak, mut strong) = (true, false);
                for x in std::iter::once(&*c.left).chain(&c.comparators) {
                    match self.expr(x)? {
                        Ty::Num(alts) => {
                            weak &= alts.iter().any(|a| a.1);
                            strong |= alts.iter().any(|a| !a.1);
                        }
                        Ty::Arr(_, n) => rank = rank.max(n),
                        Ty::Tuple(_) => return None,
                    }
                }
                if rank > 0 {
                    return Some(Ty::Arr(ScalarType::Bool, rank));
                }
                let mut alts = Vec::new();
                if weak {
                    alts.push((ScalarType::Bool, true));
                }
                if strong {
                    alts.push((ScalarType::Bool, false));
                }
                Some(Ty::Num(alts))
            }
            ast::Expr::IfExp(i) => {
                let Ty::Num(_) = self.expr(&i.test)? else {
                    return None;
                };
                let (Ty::Num(a), Ty::Num(b)) = (self.expr(&i.body)?, self.expr(&i.orelse)?) else {
                    return None;
                };
                let mut out = Vec::new();
                for &(tx, wx) in &a {
                    for &(ty, wy) in &b {
                        let t = dtypes::promote(tx, wx, ty, wy);
                        // In a kernel a branch that loads gives a strong
                        // temporary; elsewhere the weakness of both. Which
                        // one depends on where it is lowered.
                        out.push((t, wx && wy));
                        if wx && wy {
                            out.push((t, false));
                            self.placed.set(true);
                        }
                    }
                }
                Some(num(out))
            }
            ast::Expr::Tuple(t) => {
                let mut out = Vec::new();
                for x in &t.elts {
                    out.push(self.expr(x)?);
                }
                Some(Ty::Tuple(out))
            }
            ast::Expr::Attribute(a) => self.attribute(e, a),
            ast::Expr::Subscript(s) => self.subscript(s),
            ast::Expr::Call(c) => self.call(c),
            _ => None,
        }
    }

    fn attribute(&self, whole: &ast::Expr, a: &ast::ExprAttribute) -> Option<Ty> {
        if let Some(c) = self.frame.src.eval_const(whole) {
            return Some(constant(c));
        }
        let Ty::Arr(t, n) = self.expr(&a.value)? else {
            return None;
        };
        match a.attr.as_str() {
            "shape" => Some(Ty::Tuple(vec![Ty::Num(vec![(ScalarType::I64, false)]); n])),
            "size" => Some(Ty::Num(vec![(ScalarType::I64, false)])),
            "ndim" => Some(Ty::Num(vec![(ScalarType::I64, true)])),
            "T" => Some(Ty::Arr(t, n)),
            _ => None,
        }
    }

    fn subscript(&self, s: &ast::ExprSubscript) -> Option<Ty> {
        let base = self.expr(&s.value)?;
        let items: Vec<&ast::Expr> = match s.slice.as_ref() {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            one => vec![one],
        };
        match base {
            Ty::Tuple(elts) => {
                // `x.shape[k]` with a constant `k`.
                let [k] = items.as_slice() else {
                    return None;
                };
                let Some(Const::Int(k)) = self.frame.src.eval_const(k) else {
                    return None;
                };
                let n = elts.len() as i64;
                let k = if k < 0 { k + n } else { k };
                elts.get(usize::try_from(k).ok()?).cloned()
            }
            Ty::Arr(t, n) => {
                let mut left = n;
                for it in &items {
                    match it {
                        ast::Expr::Slice(_) => {}
                        other => match self.expr(other)? {
                            Ty::Num(v) if v.iter().all(|(t, _)| t.is_int()) => {
                                left = left.checked_sub(1)?;
                            }
                            // An index array, a mask, `None`: another rule.
                            _ => return None,
                        },
                    }
                }
                if items.len() > n {
                    return None;
                }
                Some(if left == 0 {
                    Ty::Num(vec![(t, false)])
                } else {
                    Ty::Arr(t, left)
                })
            }
            Ty::Num(_) => None,
        }
    }

    fn call(&self, c: &ast::ExprCall) -> Option<Ty> {
        if let Some(name) = self.frame.src.resolve(&c.func) {
            if crate::lower::hoist_alloc::is_allocation(&name) {
                return self.allocation(&name, c);
            }
        }
        // A reduction along axes (`np.sum(x, axis=1, keepdims=True)`,
        // `x.max(axis=0)`): an array of the axes left, or a number.
        if let Some(v) = self.axis_reduction(c) {
            return v;
        }
        if let Some(name) = self.frame.src.resolve(&c.func) {
            if crate::lower::sort::is_order_statistic(&name) {
                return self.order_statistic(&name, c);
            }
        }
        if !c.keywords.is_empty() {
            return None;
        }
        // Methods of arrays: the whole reductions, and what keeps or sets
        // the element type.
        if let ast::Expr::Attribute(a) = c.func.as_ref() {
            if !self.frame.src.names_a_module(&a.value) {
                let Ty::Arr(t, n) = self.expr(&a.value)? else {
                    return None;
                };
                match (a.attr.as_str(), c.args.as_slice()) {
                    ("copy" | "conj" | "conjugate", []) => return Some(Ty::Arr(t, n)),
                    ("transpose", []) => return Some(Ty::Arr(t, n)),
                    ("ravel" | "flatten", []) => return Some(Ty::Arr(t, 1)),
                    ("astype", [d]) => return Some(Ty::Arr(self.dtype(d)?, n)),
                    ("reshape", args) if !args.is_empty() => {
                        let rank = match args {
                            [ast::Expr::Tuple(tt)] => tt.elts.len(),
                            [ast::Expr::List(l)] => l.elts.len(),
                            [one] => match self.expr(one)? {
                                Ty::Num(_) => 1,
                                Ty::Tuple(items) => items.len(),
                                Ty::Arr(..) => return None,
                            },
                            more => more.len(),
                        };
                        return (1..=port_codegen::ir::MAX_DIMS as usize)
                            .contains(&rank)
                            .then_some(Ty::Arr(t, rank));
                    }
                    _ => {}
                }
                let op = reduce_name(&format!("numpy.{}", a.attr))?;
                return c
                    .args
                    .is_empty()
                    .then(|| Ty::Num(vec![(acc_type(op, t), false)]));
            }
        }
        // `type(x)(v)`: a number of `x`'s type (the lowering's cast).
        if let Some(x) = crate::lower::creation::type_of_call(self.frame.src, &c.func) {
            return match (c.args.as_slice(), self.expr(x)?) {
                ([_], Ty::Num(t)) => Some(Ty::Num(t)),
                _ => None,
            };
        }
        let name = self.frame.src.resolve(&c.func)?;
        if let ast::Expr::Name(n) = c.func.as_ref() {
            let id = n.id.as_str();
            if self.bound.contains(id) || self.params.contains_key(id) {
                return None;
            }
            // The program's own functions.
            if let Some(f) = self.frame.src.module_function(id) {
                return self.helper(id, f.def, c);
            }
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(a)?);
        }
        match (name.as_str(), args.as_slice()) {
            ("numpy.dot" | "numpy.matmul", [x, y]) => {
                return binop(ast::Operator::MatMult, x, y, None)
            }
            ("numpy.flip" | "numpy.copy" | "numpy.ascontiguousarray", [a @ Ty::Arr(..)]) => {
                return Some(a.clone())
            }
            ("numpy.shape", [Ty::Arr(_, n)]) => {
                return Some(Ty::Tuple(vec![Ty::Num(vec![(ScalarType::I64, false)]); *n]))
            }
            ("numpy.ndim", [Ty::Arr(..)]) => return Some(Ty::Num(vec![(ScalarType::I64, true)])),
            _ => {}
        }
        if name == "len" {
            return match args.as_slice() {
                [Ty::Arr(..)] => Some(Ty::Num(vec![(ScalarType::I64, false)])),
                [Ty::Tuple(_)] => Some(Ty::Num(vec![(ScalarType::I64, true)])),
                _ => None,
            };
        }
        if let Some(op) = reduce_name(&name) {
            return match args.as_slice() {
                [Ty::Arr(t, _)] => Some(Ty::Num(vec![(acc_type(op, *t), false)])),
                _ => None,
            };
        }
        // Built-in `sum` of an array: over its first axis, in the element
        // type (`lower::row_reduction::builtin_sum_type`).
        if name == "sum" {
            let sum_t = crate::lower::row_reduction::builtin_sum_type;
            return match args.as_slice() {
                [Ty::Arr(t, 1)] => Some(Ty::Num(vec![(sum_t(*t), false)])),
                [Ty::Arr(t, n)] => Some(Ty::Arr(sum_t(*t), n - 1)),
                _ => None,
            };
        }
        let known = name.starts_with("math.")
            || name.starts_with("numpy.")
            || name.starts_with("cmath.")
            || name.starts_with("scipy.special.")
            || matches!(
                name.as_str(),
                "abs" | "float" | "int" | "bool" | "round" | "min" | "max" | "complex"
            );
        if !known || crate::lower::hoist_alloc::is_allocation(&name) {
            return None;
        }
        // Each combination of the arguments' alternatives, through the
        // lowering's own rule.
        let mut out: Vec<Num> = Vec::new();
        let mut array: Option<Ty> = None;
        for combo in combinations(&args)? {
            if math_calls::float16_result(&name, &combo)
                || math_calls::builtin_choice_untyped(&name, &combo)
            {
                return None;
            }
            match math_calls::call(&name, &combo)? {
                Val::Scalar(_, t, weak) => {
                    out.push((t, weak || math_calls::gives_python_number(&name, &combo)));
                }
                Val::Array(av) => {
                    let v = Ty::Arr(av.elem, av.ndim());
                    if array.as_ref().is_some_and(|a| *a != v) {
                        return None;
                    }
                    array = Some(v);
                }
                Val::Tuple(_) => return None,
            }
        }
        match (array, out.is_empty()) {
            (Some(a), true) => Some(a),
            (None, false) => Some(num(out)),
            _ => None,
        }
    }
}

impl Walk<'_> {
    /// `np.sort(a, axis=-1)`: `a`'s type (1-D for `axis=None`);
    /// `np.median(a, axis=None)`: a number, or an array of the axes left,
    /// of [`crate::lower::sort::median_type`].
    fn order_statistic(&self, name: &str, c: &ast::ExprCall) -> Option<Ty> {
        let Ty::Arr(t, n) = self.expr(c.args.first()?)? else {
            return None;
        };
        let axis = c.args.get(1).or_else(|| {
            c.keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "axis"))
                .map(|k| &k.value)
        });
        let whole = match axis {
            None => name == "numpy.median",
            Some(ast::Expr::Constant(k)) if matches!(k.value, ast::Constant::None) => true,
            Some(_) => false,
        };
        if name == "numpy.sort" {
            return Some(Ty::Arr(t, if whole { 1 } else { n }));
        }
        let elem = crate::lower::sort::median_type(t)?;
        if whole || n == 1 {
            return Some(Ty::Num(vec![(elem, false)]));
        }
        Some(Ty::Arr(elem, n - 1))
    }

    /// A reduction given `axis=` (and `keepdims=`) by keyword: `None` when
    /// `c` is not one, `Some(None)` when it is but cannot be typed.
    fn axis_reduction(&self, c: &ast::ExprCall) -> Option<Option<Ty>> {
        if c.keywords.is_empty() {
            return None;
        }
        let (op, operand) = match c.func.as_ref() {
            ast::Expr::Attribute(a) if !self.frame.src.names_a_module(&a.value) => {
                if !c.args.is_empty() {
                    return Some(None);
                }
                (reduce_name(&format!("numpy.{}", a.attr))?, a.value.as_ref())
            }
            f => {
                let name = self.frame.src.resolve(f)?;
                let op = reduce_name(&name).filter(|_| name.starts_with("numpy."))?;
                let [x] = c.args.as_slice() else {
                    return Some(None);
                };
                (op, x)
            }
        };
        Some((|| {
            let Ty::Arr(t, n) = self.expr(operand)? else {
                return None;
            };
            let mut axes: Option<usize> = None;
            let mut keep = false;
            for k in &c.keywords {
                match k.arg.as_ref().map(|a| a.as_str())? {
                    "axis" => {
                        axes = Some(match &k.value {
                            ast::Expr::Tuple(tt) => {
                                for e in &tt.elts {
                                    let Some(Const::Int(_)) = self.frame.src.eval_const(e) else {
                                        return None;
                                    };
                                }
                                tt.elts.len()
                            }
                            e => match self.frame.src.eval_const(e)? {
                                Const::Int(_) => 1,
                                _ => return None,
                            },
                        })
                    }
                    // As the lowering reads it (`lower::axis_reduction`).
                    "keepdims" => keep = self.frame.src.eval_const(&k.value)?.truth()?,
                    _ => return None,
                }
            }
            let t = acc_type(op, t);
            let left = match (axes, keep) {
                (_, true) => n,
                (None, false) => 0,
                (Some(k), false) => n.checked_sub(k)?,
            };
            Some(if left == 0 {
                Ty::Num(vec![(t, false)])
            } else {
                Ty::Arr(t, left)
            })
        })())
    }

    /// `np.zeros(shape, dtype)` and its kin, as the wrapper allocates them
    /// ([`crate::lower::hoist_alloc`]).
    fn allocation(&self, name: &str, c: &ast::ExprCall) -> Option<Ty> {
        let short = name.rsplit('.').next()?;
        let mut dtype = None;
        let mut fill = None;
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("dtype") => dtype = Some(self.dtype(&k.value)?),
                Some("fill_value") => fill = Some(&k.value),
                Some("order") => {}
                _ => return None,
            }
        }
        if short.ends_with("_like") || short == "copy" {
            let Ty::Arr(t, n) = self.expr(c.args.first()?)? else {
                return None;
            };
            if short != "full_like" {
                if let Some(d) = c.args.get(1) {
                    dtype = Some(self.dtype(d)?);
                }
            }
            return Some(Ty::Arr(dtype.unwrap_or(t), n));
        }
        if !matches!(short, "empty" | "ndarray" | "zeros" | "ones" | "full") {
            return None;
        }
        let rank = match c.args.first()? {
            ast::Expr::Tuple(t) => t.elts.len(),
            ast::Expr::List(l) => l.elts.len(),
            e => match self.expr(e)? {
                Ty::Num(_) => 1,
                Ty::Tuple(items) => items.len(),
                Ty::Arr(..) => return None,
            },
        };
        let full = short == "full";
        if dtype.is_none() {
            if let Some(d) = c.args.get(if full { 2 } else { 1 }) {
                dtype = Some(self.dtype(d)?);
            }
        }
        if full && dtype.is_none() {
            // NumPy's `full` takes the fill value's type.
            let Ty::Num(alts) = self.expr(fill.or(c.args.get(1))?)? else {
                return None;
            };
            if alts.iter().any(|a| a.0 != alts[0].0) {
                return None;
            }
            dtype = Some(alts[0].0);
        }
        (1..=port_codegen::ir::MAX_DIMS as usize)
            .contains(&rank)
            .then(|| Ty::Arr(dtype.unwrap_or(ScalarType::F64), rank))
    }

    /// A dtype argument: a name (`np.float32`, `float`, `'int16'`) or an
    /// array's `.dtype`.
    fn dtype(&self, e: &ast::Expr) -> Option<ScalarType> {
        if let Some(t) = crate::lower::creation::dtype_of(self.frame.src, e) {
            return Some(t);
        }
        if let Some(x) = crate::lower::creation::type_of_call(self.frame.src, e) {
            // `type(p)` of a number: its type.
            return match self.expr(x)? {
                Ty::Num(alts) if alts.iter().all(|a| a.0 == alts[0].0) => Some(alts[0].0),
                _ => None,
            };
        }
        match e {
            ast::Expr::Attribute(a) if a.attr.as_str() == "dtype" => match self.expr(&a.value)? {
                Ty::Arr(t, _) => Some(t),
                _ => None,
            },
            _ => None,
        }
    }
}

impl Walk<'_> {
    /// A call of the program's own function, lowered as a device function
    /// for its arguments' types: its locals are typed in their own scope,
    /// and it gives what its `return`s give.
    fn helper(&self, callee: &str, def: &ast::StmtFunctionDef, c: &ast::ExprCall) -> Option<Ty> {
        if !c.keywords.is_empty()
            || returns_a_tuple(def)
            || self.frame.stack.iter().any(|f| f == callee)
            || self.frame.stack.len() > 6
        {
            return None;
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(match self.expr(a)? {
                // Only a whole array is passed as itself; a computed one
                // is inlined.
                Ty::Arr(t, n) if matches!(a, ast::Expr::Name(_)) => {
                    ScopeArg::Array(t, u8::try_from(n).ok()?)
                }
                Ty::Num(alts) if alts.len() == 1 => ScopeArg::Scalar(alts[0].0, alts[0].1),
                _ => return None,
            });
        }
        if args.len() != def.args.args.len() {
            return None;
        }
        let scope = type_scope(callee, &args);
        let cached = self.frame.helpers.borrow().get(&scope).cloned();
        let typed = match cached {
            Some(t) => t,
            None => {
                let mut stack = self.frame.stack.clone();
                stack.push(callee.to_string());
                let frame = Frame {
                    src: self.frame.src,
                    helpers: self.frame.helpers,
                    stack,
                };
                let t = Some(frame.solve(def, &HashMap::new(), &args, &scope));
                self.frame
                    .helpers
                    .borrow_mut()
                    .insert(scope.clone(), t.clone());
                t
            }
        };
        let (table, ret) = typed?;
        self.used.borrow_mut().insert(scope, table);
        ret.map(|r| Ty::Num(vec![r]))
    }
}

/// A binary operator on abstract values: NumPy's promotion element by
/// element, broadcasting ranks; `None` where the lowering has another rule
/// (a power whose exponent is not a small literal, `@`) or refuses.
fn binop(op: ast::Operator, x: &Ty, y: &Ty, right: Option<&ast::Expr>) -> Option<Ty> {
    use ast::Operator as O;
    if op == O::MatMult {
        // NumPy's rule: the operands' promoted type; a vector on either
        // side drops its axis of the product.
        let (Ty::Arr(s, m), Ty::Arr(t, n)) = (x, y) else {
            return None;
        };
        let e = dtypes::binop(O::Mult, (*s, false), (*t, false))
            .ok()?
            .result;
        return match (m, n) {
            (1, 1) => Some(Ty::Num(vec![(e, false)])),
            (2, 1) | (1, 2) => Some(Ty::Arr(e, 1)),
            (2, 2) => Some(Ty::Arr(e, 2)),
            _ => None,
        };
    }
    let small_exponent = right.is_some_and(|r| {
        matches!(r, ast::Expr::Constant(c) if matches!(&c.value,
            ast::Constant::Int(i) if i64::try_from(i).is_ok_and(|k| (0..=4).contains(&k)))
            || matches!(&c.value, ast::Constant::Float(f) if *f == 2.0))
    });
    let one = |a: Num, b: Num| -> Option<ScalarType> {
        let rule = dtypes::binop(op, a, b).ok()?;
        if op == O::Pow && !small_exponent && rule.operands.is_int() {
            return None;
        }
        Some(rule.result)
    };
    match (x, y) {
        (Ty::Num(a), Ty::Num(b)) => {
            let mut out = Vec::new();
            for &p in a {
                for &q in b {
                    if op == O::Pow && p.0.is_int() && q.0.is_int() {
                        // Integer powers on the host have a rule of their own.
                        return None;
                    }
                    out.push((one(p, q)?, p.1 && q.1));
                }
            }
            Some(num(out))
        }
        (Ty::Arr(t, n), Ty::Num(b)) => {
            if op == O::Pow && *t == ScalarType::Bool {
                return None;
            }
            let mut r = None;
            for &q in b {
                let e = one((*t, false), q)?;
                if r.is_some_and(|x| x != e) {
                    return None;
                }
                r = Some(e);
            }
            Some(Ty::Arr(r?, *n))
        }
        (Ty::Num(a), Ty::Arr(t, n)) => {
            let mut r = None;
            for &p in a {
                let e = one(p, (*t, false))?;
                if r.is_some_and(|x| x != e) {
                    return None;
                }
                r = Some(e);
            }
            Some(Ty::Arr(r?, *n))
        }
        (Ty::Arr(s, m), Ty::Arr(t, n)) => {
            Some(Ty::Arr(one((*s, false), (*t, false))?, (*m).max(*n)))
        }
        _ => None,
    }
}

/// Alternatives with the duplicates dropped.
fn num(mut alts: Vec<Num>) -> Ty {
    let mut seen = Vec::new();
    alts.retain(|a| {
        if seen.contains(a) {
            false
        } else {
            seen.push(*a);
            true
        }
    });
    Ty::Num(alts)
}

/// Every choice of one alternative per argument, as the values the
/// lowering's rules take (their expressions are placeholders).
fn combinations(args: &[Ty]) -> Option<Vec<Vec<Val>>> {
    let mut out: Vec<Vec<Val>> = vec![Vec::new()];
    for (k, a) in args.iter().enumerate() {
        let here: Vec<Val> = match a {
            Ty::Num(alts) => alts
                .iter()
                .map(|&(t, w)| Val::Scalar(var(&format!("__arg{k}")), t, w))
                .collect(),
            Ty::Arr(t, n) => vec![Val::Array(ArrVal::named(
                &format!("__arg{k}"),
                ArrayType {
                    elem: *t,
                    ndim: u8::try_from(*n).ok()?,
                    contiguous: true,
                },
            ))],
            Ty::Tuple(_) => return None,
        };
        out = out
            .into_iter()
            .flat_map(|prefix| {
                here.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push(v.clone());
                    p
                })
            })
            .collect();
        if out.len() > 64 {
            return None;
        }
    }
    Some(out)
}

/// A module constant, as the lowering reads it ([`const_val`]).
fn constant(c: Const) -> Ty {
    match const_val(c) {
        Val::Scalar(_, t, weak) => Ty::Num(vec![(t, weak)]),
        _ => unreachable!("a constant is a number"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `f` in `text`, with `sig`'s argument types.
    fn table_of(text: &str, sig: &str) -> Table {
        let src = SourceFile::parse("t.py", text).expect("parses");
        let found = crate::source::find(&src, "f").expect("f");
        let names = crate::pyast::param_names(&found.def.args);
        let types = crate::types::parse_signature(sig).expect("signature");
        let ufunc = types.iter().all(|t| !t.is_array());
        infer(&src, found.def, &names, &types, ufunc)
    }

    fn ty(t: &Table, k: &str) -> Option<ScalarType> {
        t.types.get(k).copied()
    }

    #[test]
    fn reductions_along_axes_copies_and_products_type_what_reads_them() {
        // Each scalar here reads an array made by a rule: a copy, a
        // reduction along an axis (kept or dropped), a matrix product, a
        // dot of two vectors.
        let src = "import numpy as np\n\ndef f(a, v, w):\n    b = a.copy()\n    m = np.max(b, axis=1, keepdims=True)\n    s = a.sum(axis=0)\n    p = a @ v\n    e = np.max(np.abs(b - m))\n    t = s[0] + p[0]\n    d = np.dot(v, w.astype(np.float32))\n    return e + t + d\n";
        let t = table_of(src, "float32[:, :], float32[:], int16[:]");
        assert_eq!(ty(&t, "e"), Some(ScalarType::F32));
        assert_eq!(ty(&t, "t"), Some(ScalarType::F32));
        assert_eq!(ty(&t, "d"), Some(ScalarType::F32));
        assert!(t.complete(), "{t:?}");
        // An integer array's mean along an axis is float64.
        let src = "import numpy as np\n\ndef f(a):\n    r = np.mean(a, axis=0)\n    x = r[0]\n    return x\n";
        let t = table_of(src, "int32[:, :]");
        assert_eq!(ty(&t, "x"), Some(ScalarType::F64));
    }

    #[test]
    fn an_accumulator_started_from_a_python_number_takes_the_arrays_type() {
        let src = "def f(x, n):\n    s = 0\n    t = 0.0\n    for i in range(n):\n        s += x[i]\n        t = t + x[i] * 2\n    return s + t\n";
        let t = table_of(src, "float32[:], int64");
        // NumPy 2: a Python number meets a float32 and is one.
        assert_eq!(ty(&t, "s"), Some(ScalarType::F32));
        // Not float64: `t = 0.0` is weak, so the least type that holds
        // every binding is float32 (a wider one would also be
        // consistent, which is why the table is computed, not guessed).
        assert_eq!(ty(&t, "t"), Some(ScalarType::F32));
        assert_eq!(ty(&t, "i"), Some(ScalarType::I64));
        assert!(t.strong.contains("s") && t.strong.contains("t"));
        assert!(t.complete(), "{t:?}");
    }

    #[test]
    fn a_read_whose_type_depends_on_the_path_is_left_to_the_lowering() {
        // On the first iteration `t` is a Python int (`y` int8), on the
        // next an int64 (`y` int64): no one type is right.
        let src = "def f(a, b, n):\n    t = 0\n    y = 0\n    for i in range(n):\n        y = t + a[i]\n        t = b[i]\n    return y\n";
        let t = table_of(src, "int8[:], int64[:], int64");
        assert_eq!(ty(&t, "t"), Some(ScalarType::I64));
        assert!(t.untyped.contains_key("y"), "{t:?}");
        assert!(!t.complete());
    }

    #[test]
    fn a_helper_is_typed_in_the_scope_of_its_argument_types() {
        let src = "import math\nimport numpy as np\n\ndef g(v, k):\n    w = v * k\n    return math.sqrt(w)\n\ndef f(x):\n    out = np.empty_like(x)\n    for i in range(x.shape[0]):\n        out[i] = g(x[i], 2.0)\n    return out\n";
        let t = table_of(src, "float32[:]");
        let scope = "g(float32, float64 weak)/";
        assert_eq!(ty(&t, &format!("{scope}v")), Some(ScalarType::F32));
        assert_eq!(ty(&t, &format!("{scope}k")), Some(ScalarType::F64));
        // float32 * a Python float is float32; `math.sqrt` gives a Python
        // float, which the return keeps weak.
        assert_eq!(ty(&t, &format!("{scope}w")), Some(ScalarType::F32));
        assert_eq!(ty(&t, &format!("{scope}return")), Some(ScalarType::F64));
        assert!(!t.strong.contains(&format!("{scope}return")));
        assert!(t.complete(), "{t:?}");
    }

    #[test]
    fn a_choice_of_python_numbers_is_left_to_where_it_is_lowered() {
        // Weak on the host, a strong temporary in a kernel: the binding's
        // weakness is the lowering's to decide.
        let src = "def f(x, flag):\n    for i in range(x.shape[0]):\n        s = 200 if flag > 0 else 100\n        x[i] = s + x[i]\n";
        let t = table_of(src, "uint8[:], int64");
        assert!(t.untyped.contains_key("s"), "{t:?}");
    }

    #[test]
    fn what_no_rule_types_is_named_with_its_line() {
        let src =
            "import numpy as np\n\ndef f(x):\n    m = np.percentile(x, 90)\n    s = m * 2\n    return s\n";
        let t = table_of(src, "float64[:]");
        assert_eq!(t.untyped.get("m"), Some(&4));
        // Reads of an untyped name are not typed either.
        assert!(t.untyped.contains_key("s"), "{t:?}");
    }
}
