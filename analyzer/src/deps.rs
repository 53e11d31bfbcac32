//! Loop-carried dependences: may the iterations of a loop over array
//! elements run at the same time? A scalar updated only by `s += f(x[i])`
//! (or `*=`, `max`, `min`) is a reduction and fine; a scalar read before it is
//! written (a scan, a recurrence), an array element read at another
//! iteration's index, or one element written by every iteration is not.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};

use crate::indexset::{
    access, is_length, lin, may_meet_in, no_bounds, range_bounds, Ctx, Dim, Lin, NameKind,
};
use crate::loader::Module;
use crate::ty::Ty;
use crate::walk::{walk_expr, walk_stmts};

pub struct DepFinding {
    pub code: &'static str,
    pub line: u32,
    pub message: String,
}

/// Check every outermost loop over array elements in `body`. `same` maps a
/// parameter to an earlier one that was the same array in the program's
/// captured call (`smooth(x, x)`: `out` → `a`): the call is in place, and
/// both names are judged as one array, as the program runs it.
pub fn check_loops(
    m: &Module,
    body: &[Stmt],
    env: &HashMap<String, Ty>,
    same: &HashMap<String, String>,
) -> Vec<DepFinding> {
    let mut out = Vec::new();
    find_data_loops(m, body, env, same, &mut out, 0);
    if !same.is_empty() && !out.iter().any(|d| d.code == "PORT204") {
        out.extend(in_place_order(m, body, env, same));
    }
    out
}

fn find_data_loops(
    m: &Module,
    body: &[Stmt],
    env: &HashMap<String, Ty>,
    same: &HashMap<String, String>,
    out: &mut Vec<DepFinding>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    for s in body {
        match s {
            Stmt::For(f) => {
                if let Some(i) = data_loop_index(f, env) {
                    check_loop(m, f, &i, env, same, out);
                } else {
                    // A time-step or repeat loop: look for the parallel loop inside.
                    find_data_loops(m, &f.body, env, same, out, depth + 1);
                }
            }
            Stmt::While(w) => find_data_loops(m, &w.body, env, same, out, depth + 1),
            Stmt::If(i) => {
                find_data_loops(m, &i.body, env, same, out, depth + 1);
                find_data_loops(m, &i.orelse, env, same, out, depth + 1);
            }
            Stmt::With(w) => find_data_loops(m, &w.body, env, same, out, depth + 1),
            Stmt::Try(t) => find_data_loops(m, &t.body, env, same, out, depth + 1),
            _ => {}
        }
    }
}

/// The index of a loop over array elements (one that indexes arrays with
/// it), which `check_loop` judges; `None` for a time-step or repeat loop.
fn data_loop_index(f: &ast::StmtFor, env: &HashMap<String, Ty>) -> Option<String> {
    loop_index(f).filter(|i| indexes_arrays_with(&f.body, i, env))
}

/// The index variable of `for i in range(...)`, `prange`, or `enumerate`.
fn loop_index(f: &ast::StmtFor) -> Option<String> {
    let Expr::Call(c) = f.iter.as_ref() else {
        return None;
    };
    let callee = crate::symbols::dotted(&c.func)?;
    let last = callee.rsplit('.').next()?;
    match (last, f.target.as_ref()) {
        ("range" | "prange", Expr::Name(n)) => Some(n.id.to_string()),
        ("enumerate", Expr::Tuple(t)) => match t.elts.first() {
            Some(Expr::Name(n)) => Some(n.id.to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn mentions(e: &Expr, names: &HashSet<String>) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let Expr::Name(n) = x {
            if names.contains(n.id.as_str()) {
                found = true;
            }
        }
    });
    found
}

fn indexes_arrays_with(body: &[Stmt], i: &str, env: &HashMap<String, Ty>) -> bool {
    let names: HashSet<String> = [i.to_string()].into();
    let mut found = false;
    for_each_expr(body, &mut |e| {
        if let Expr::Subscript(s) = e {
            let base_is_array_like = match s.value.as_ref() {
                Expr::Name(n) => !matches!(
                    env.get(n.id.as_str()),
                    Some(Ty::List | Ty::Dict | Ty::Tuple(_) | Ty::Str)
                ),
                _ => true,
            };
            if base_is_array_like && mentions(&s.slice, &names) {
                found = true;
            }
        }
    });
    found
}

/// Every expression in a body, statement targets included.
fn for_each_expr(body: &[Stmt], f: &mut dyn FnMut(&Expr)) {
    walk_stmts(body, &mut |s| {
        let mut exprs: Vec<&Expr> = Vec::new();
        match s {
            Stmt::Assign(a) => {
                exprs.extend(a.targets.iter());
                exprs.push(&a.value);
            }
            Stmt::AugAssign(a) => {
                exprs.push(&a.target);
                exprs.push(&a.value);
            }
            Stmt::AnnAssign(a) => {
                exprs.push(&a.target);
                if let Some(v) = &a.value {
                    exprs.push(v);
                }
            }
            Stmt::Expr(e) => exprs.push(&e.value),
            Stmt::Return(r) => exprs.extend(r.value.as_deref()),
            Stmt::If(i) => exprs.push(&i.test),
            Stmt::While(w) => exprs.push(&w.test),
            Stmt::For(fo) => {
                exprs.push(&fo.target);
                exprs.push(&fo.iter);
            }
            _ => {}
        }
        for e in exprs {
            walk_expr(e, f);
        }
    });
}

fn norm(m: &Module, e: &Expr) -> String {
    m.text_of(e.range())
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// Is `e` an affine function of the loop index with a non-zero coefficient
/// (`i`, `i + 1`, `2 * i - k`)? Such indices are distinct per iteration.
fn affine_in(e: &Expr, idx: &HashSet<String>, invariant: &dyn Fn(&Expr) -> bool) -> bool {
    match e {
        Expr::Name(n) => idx.contains(n.id.as_str()),
        Expr::BinOp(b) => match b.op {
            ast::Operator::Add | ast::Operator::Sub => {
                (affine_in(&b.left, idx, invariant) && invariant(&b.right))
                    || (invariant(&b.left) && affine_in(&b.right, idx, invariant))
            }
            ast::Operator::Mult => {
                (affine_in(&b.left, idx, invariant)
                    && matches!(b.right.as_ref(), Expr::Constant(_)))
                    || (matches!(b.left.as_ref(), Expr::Constant(_))
                        && affine_in(&b.right, idx, invariant))
            }
            _ => false,
        },
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::USub => affine_in(&u.operand, idx, invariant),
        _ => false,
    }
}

/// The names assigned once, in the loop body, a linear form of the loop
/// variable `i` (`j = i + 1`, `k = 2 * i`), with their forms.
fn affine_aliases(
    body: &[Stmt],
    affine: &HashSet<String>,
    base: &dyn Fn(&str) -> NameKind,
    opaque: &dyn Fn(&Expr) -> Option<String>,
) -> HashMap<String, Lin> {
    let mut count: HashMap<String, usize> = HashMap::new();
    walk_stmts(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            for t in &a.targets {
                walk_expr(t, &mut |e| {
                    if let Expr::Name(n) = e {
                        *count.entry(n.id.to_string()).or_default() += 1;
                    }
                });
            }
        }
    });
    let mut out: HashMap<String, Lin> = HashMap::new();
    for _ in 0..4 {
        walk_stmts(body, &mut |s| {
            let Stmt::Assign(a) = s else { return };
            let [Expr::Name(n)] = a.targets.as_slice() else {
                return;
            };
            let name = n.id.as_str();
            if !affine.contains(name) || count.get(name) != Some(&1) || out.contains_key(name) {
                return;
            }
            let kind = |x: &str| match out.get(x) {
                Some(l) => NameKind::Alias(l.clone()),
                None => base(x),
            };
            let ctx = Ctx {
                name: &kind,
                opaque,
                bounds: &no_bounds,
            };
            if let Some(l) = lin(&a.value, &ctx) {
                out.insert(name.to_string(), l);
            }
        });
    }
    out
}

struct Access<'e> {
    /// The array, one name for parameters that were one array in the
    /// captured call (see [`check_loops`]).
    array: String,
    /// The name the code uses.
    shown: String,
    index: &'e Expr,
    line: u32,
    write: bool,
    /// `a[k] += e` or `-=`: an update a GPU can make with one atomic add.
    atomic: bool,
}

fn check_loop(
    m: &Module,
    f: &ast::StmtFor,
    i: &str,
    env: &HashMap<String, Ty>,
    same: &HashMap<String, String>,
    out: &mut Vec<DepFinding>,
) {
    let first = out.len();
    let loop_line = m.line_of(f.start());

    // Names assigned anywhere in the loop body.
    let mut assigned: HashMap<String, Vec<u32>> = HashMap::new();
    walk_stmts(&f.body, &mut |s| {
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![a.target.as_ref()],
            Stmt::AnnAssign(a) => vec![a.target.as_ref()],
            Stmt::For(fo) => vec![fo.target.as_ref()],
            _ => vec![],
        };
        // The names a target binds: `a`, `a, b`, not the names inside a
        // subscript (`out[n - 1 - k] = …` binds nothing; `n` is read).
        fn bound<'t>(t: &'t Expr, out: &mut Vec<&'t str>) {
            match t {
                Expr::Name(n) => out.push(n.id.as_str()),
                Expr::Tuple(tu) => tu.elts.iter().for_each(|e| bound(e, out)),
                Expr::List(l) => l.elts.iter().for_each(|e| bound(e, out)),
                Expr::Starred(st) => bound(&st.value, out),
                _ => {}
            }
        }
        for t in targets {
            let mut names = Vec::new();
            bound(t, &mut names);
            for n in names {
                assigned
                    .entry(n.to_string())
                    .or_default()
                    .push(m.line_of(s.start()));
            }
        }
    });
    assigned.remove(i);

    // Index-derived names: `j = i + 1` is affine in i; `k = idx[i]` is not.
    let mut affine: HashSet<String> = [i.to_string()].into();
    let mut derived: HashSet<String> = [i.to_string()].into();
    for _ in 0..4 {
        walk_stmts(&f.body, &mut |s| {
            if let Stmt::Assign(a) = s {
                if let [Expr::Name(n)] = a.targets.as_slice() {
                    if mentions(&a.value, &derived) {
                        derived.insert(n.id.to_string());
                        let inv =
                            |e: &Expr| !mentions(e, &derived) && !mentions_assigned(e, &assigned);
                        if affine_in(&a.value, &affine, &inv) {
                            affine.insert(n.id.to_string());
                        }
                    }
                }
            }
        });
    }

    // 1. Scalars live across iterations.
    let mut carried: Vec<String> = Vec::new();
    let mut defined: HashSet<String> = HashSet::new();
    live_in(&f.body, &assigned, &mut defined, &mut carried);
    carried.retain(|v| !env.get(v).is_some_and(|t| t.is_array_ty()));
    for v in carried {
        let lines = assigned.get(&v).cloned().unwrap_or_default();
        if let Some(kind) = reduction_kind(&f.body, &v) {
            out.push(DepFinding {
                code: "PORT402",
                line: lines.first().copied().unwrap_or(loop_line),
                message: format!(
                    "`{v}` is a {kind} across the loop at line {loop_line}: it becomes a reduction kernel"
                ),
            });
        } else {
            let mut all: Vec<u32> = lines.clone();
            all.extend(reads_of(m, &f.body, &v));
            all.sort();
            all.dedup();
            let list: Vec<String> = all.iter().map(|l| l.to_string()).collect();
            out.push(DepFinding {
                code: "PORT204",
                line: lines.first().copied().unwrap_or(loop_line),
                message: format!(
                    "`{v}` carries a value from one iteration of the loop at line {loop_line} to the next (lines {}): a scan or recurrence, not a reduction",
                    list.join(", ")
                ),
            });
        }
    }

    // 2. Arrays written in the loop: which elements each access names, per
    // dimension (`indexset`), and whether two iterations may meet there.
    let mut accesses: Vec<Access> = Vec::new();
    collect_accesses(m, &f.body, &mut accesses);
    for a in &mut accesses {
        if let Some(first) = same.get(&a.array) {
            a.array = first.clone();
        }
    }
    let base_kind = |n: &str| {
        if n == i {
            NameKind::Loop
        } else if derived.contains(n)
            || assigned.contains_key(n)
            || env
                .get(n)
                .is_some_and(|t| !matches!(t, Ty::Int | Ty::Bool | Ty::Unknown))
        {
            NameKind::Variant
        } else {
            NameKind::Invariant
        }
    };
    let opaque = |e: &Expr| {
        (!mentions(e, &derived) && !mentions_assigned(e, &assigned) && is_length(e))
            .then(|| norm(m, e))
    };
    let aliases = affine_aliases(&f.body, &affine, &base_kind, &opaque);
    let name_kind = |n: &str| match aliases.get(n) {
        Some(l) => NameKind::Alias(l.clone()),
        None => base_kind(n),
    };
    // The loop variable's range, for positions compared with ones that
    // do not move with it (`a[i, j]`, `j` from `k + 1`, against `a[i, k]`).
    let plain = Ctx {
        name: &name_kind,
        opaque: &opaque,
        bounds: &no_bounds,
    };
    let range = range_bounds(&f.iter).and_then(|(a, b)| Some((lin(&a, &plain)?, lin(&b, &plain)?)));
    let bounds = |p: &str| if p == i { range.clone() } else { None };
    let ctx = Ctx {
        name: &name_kind,
        opaque: &opaque,
        bounds: &bounds,
    };
    let vars = [i.to_string()];
    let sets: Vec<Option<Vec<Dim>>> = accesses.iter().map(|a| access(a.index, &ctx)).collect();
    let mut written: Vec<String> = accesses
        .iter()
        .filter(|a| a.write)
        .map(|a| a.array.clone())
        .collect();
    written.sort();
    written.dedup();
    let mut reported: HashSet<String> = HashSet::new();
    for arr in written {
        let of = |write: bool| -> Vec<usize> {
            (0..accesses.len())
                .filter(|&k| accesses[k].array == arr && accesses[k].write == write)
                .collect()
        };
        let (writes, reads) = (of(true), of(false));
        for &w in &writes {
            let acc = &accesses[w];
            if !may_meet_in(sets[w].as_deref(), sets[w].as_deref(), &vars, &bounds) {
                continue;
            }
            let text = norm(m, acc.index);
            let shown = &acc.shown;
            let msg = if acc.atomic && reads.is_empty() {
                // `hist[0] += x[i]`, `counts[idx[i]] += 1`: every update is
                // an add, and nothing in the loop reads the array back.
                out.push(DepFinding {
                    code: "PORT402",
                    line: acc.line,
                    message: format!(
                        "`{shown}[{text}]` accumulates across the loop at line {loop_line}: it becomes atomic adds"
                    ),
                });
                continue;
            } else if mentions(acc.index, &derived)
                && sets[w].as_ref().is_none_or(|d| d.contains(&Dim::Unknown))
            {
                format!(
                    "`{shown}[{text}]` is written through an index computed from data: iterations of the loop at line {loop_line} may write the same element"
                )
            } else if mentions(acc.index, &derived) {
                format!(
                    "`{shown}[{text}]` names elements that other iterations of the loop at line {loop_line} write too: the iterations overlap"
                )
            } else {
                format!("every iteration of the loop at line {loop_line} writes `{shown}[{text}]`")
            };
            if reported.insert(arr.clone()) {
                out.push(DepFinding {
                    code: "PORT204",
                    line: acc.line,
                    message: msg,
                });
            }
        }
        if reported.contains(&arr) {
            continue;
        }
        // Another iteration's element, read or written again.
        let others = reads.iter().chain(&writes);
        'found: for &r in others {
            for &w in &writes {
                if w == r || !may_meet_in(sets[w].as_deref(), sets[r].as_deref(), &vars, &bounds) {
                    continue;
                }
                let (ra, wa) = (&accesses[r], &accesses[w]);
                let what = if ra.write { "writes" } else { "reads" };
                reported.insert(arr.clone());
                let (rn, wn) = (&ra.shown, &wa.shown);
                let what = format!(
                    "`{rn}[{}]` (line {}) {what} an element that another iteration writes as `{wn}[{}]` (line {})",
                    norm(m, ra.index),
                    ra.line,
                    norm(m, wa.index),
                    wa.line
                );
                let message = if rn == wn {
                    format!("{what}: a recurrence across the loop at line {loop_line}")
                } else {
                    format!(
                        "the program passes one array as `{rn}` and `{wn}` (its captured call): in place, {what}, a recurrence across the loop at line {loop_line}; pass a separate array, or keep this call on the CPU"
                    )
                };
                out.push(DepFinding {
                    code: "PORT204",
                    line: ra.line,
                    message,
                });
                break 'found;
            }
        }
    }

    if !out[first..].iter().any(|d| d.code == "PORT204") {
        out.push(DepFinding {
            code: "PORT405",
            line: loop_line,
            message: format!(
                "loop at line {loop_line} has independent iterations over `{i}`: it becomes a grid-stride loop"
            ),
        });
    }

    // 3. Too little work to fill a GPU.
    if let Expr::Call(c) = f.iter.as_ref() {
        if let [Expr::Constant(k)] = c.args.as_slice() {
            if let ast::Constant::Int(n) = &k.value {
                let n: u64 = n.try_into().unwrap_or(u64::MAX);
                if n < 1024 {
                    out.push(DepFinding {
                        code: "PORT302",
                        line: loop_line,
                        message: format!(
                            "the parallel loop runs {n} iterations: too few to fill a GPU"
                        ),
                    });
                }
            }
        }
    }
}

/// For a call in place (`same`, see [`check_loops`]): a statement that reads
/// one name of the array after another statement wrote it under the other
/// name, or a loop (other than a loop over elements, which `check_loop`
/// judges with both names as one) whose body writes one and reads the other.
/// The original then reads what the call itself wrote, where port's kernels,
/// given one copy per argument, read it as it was before the call.
fn in_place_order(
    m: &Module,
    body: &[Stmt],
    env: &HashMap<String, Ty>,
    same: &HashMap<String, String>,
) -> Option<DepFinding> {
    let canon = |n: &str| same.get(n).map_or(n, String::as_str).to_string();
    let involved: HashSet<&str> = same
        .iter()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .collect();
    // The names of `involved` a statement reads and writes, itself only
    // (not the statements of its body).
    let touches = |s: &Stmt| -> (Vec<String>, Vec<String>) {
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        // Reading `a.shape` or `len(a)` reads no element.
        let read = |e: &Expr, reads: &mut Vec<String>| {
            let meta: Vec<_> = crate::walk::metadata_uses(e)
                .iter()
                .map(|x| x.range())
                .collect();
            walk_expr(e, &mut |x| {
                if let Expr::Name(n) = x {
                    if involved.contains(n.id.as_str()) && !meta.contains(&x.range()) {
                        reads.push(n.id.to_string());
                    }
                }
            });
        };
        let written = |t: &Expr, writes: &mut Vec<String>, reads: &mut Vec<String>| {
            let mut t = t;
            while let Expr::Subscript(sub) = t {
                read(&sub.slice, reads);
                t = sub.value.as_ref();
            }
            if let Expr::Name(n) = t {
                if involved.contains(n.id.as_str()) {
                    writes.push(n.id.to_string());
                }
            }
        };
        let out_kw = |e: &Expr, writes: &mut Vec<String>| {
            walk_expr(e, &mut |x| {
                if let Expr::Call(c) = x {
                    for k in &c.keywords {
                        if k.arg.as_deref() == Some("out") {
                            if let Expr::Name(n) = &k.value {
                                if involved.contains(n.id.as_str()) {
                                    writes.push(n.id.to_string());
                                }
                            }
                        }
                    }
                }
            });
        };
        match s {
            Stmt::Assign(a) => {
                read(&a.value, &mut reads);
                out_kw(&a.value, &mut writes);
                for t in &a.targets {
                    if matches!(t, Expr::Subscript(_)) {
                        written(t, &mut writes, &mut reads);
                    }
                }
            }
            Stmt::AugAssign(a) => {
                read(&a.value, &mut reads);
                read(&a.target, &mut reads);
                written(&a.target, &mut writes, &mut reads);
            }
            Stmt::Expr(e) => {
                read(&e.value, &mut reads);
                out_kw(&e.value, &mut writes);
            }
            Stmt::Return(r) => {
                if let Some(v) = r.value.as_deref() {
                    read(v, &mut reads);
                }
            }
            Stmt::If(i) => read(&i.test, &mut reads),
            Stmt::While(w) => read(&w.test, &mut reads),
            Stmt::For(f) => read(&f.iter, &mut reads),
            _ => {}
        }
        (reads, writes)
    };
    let message = |r: &str, w: &str, what: String| {
        format!(
            "the program passes one array as `{w}` and `{r}` (its captured call): in place, {what}, where port's kernels, given one copy of each argument, read `{r}` as it was before the call; pass a separate array, or keep this call on the CPU"
        )
    };
    // Straight through, in program order.
    let mut wrote: HashMap<String, (String, u32)> = HashMap::new();
    let mut found = None;
    walk_stmts(body, &mut |s| {
        if found.is_some() {
            return;
        }
        let line = m.line_of(s.start());
        let (reads, writes) = touches(s);
        for r in &reads {
            if let Some((w, wl)) = wrote.get(&canon(r)) {
                if w != r {
                    found = Some(DepFinding {
                        code: "PORT204",
                        line,
                        message: message(
                            r,
                            w,
                            format!("line {line} reads `{r}` after line {wl} wrote `{w}`"),
                        ),
                    });
                    return;
                }
            }
        }
        for w in writes {
            wrote.entry(canon(&w)).or_insert((w, line));
        }
    });
    if found.is_some() {
        return found;
    }
    // Around a loop: what its body writes, a later iteration reads.
    walk_stmts(body, &mut |s| {
        if found.is_some() {
            return;
        }
        let (loop_body, line) = match s {
            Stmt::For(f) if data_loop_index(f, env).is_some() => return,
            Stmt::For(f) => (&f.body, m.line_of(f.start())),
            Stmt::While(w) => (&w.body, m.line_of(w.start())),
            _ => return,
        };
        let (mut reads, mut writes) = (Vec::new(), HashMap::new());
        walk_stmts(loop_body, &mut |t| {
            let (r, w) = touches(t);
            let l = m.line_of(t.start());
            reads.extend(r.into_iter().map(|r| (r, l)));
            for w in w {
                writes.entry(canon(&w)).or_insert((w, l));
            }
        });
        for (r, rl) in reads {
            if let Some((w, wl)) = writes.get(&canon(&r)) {
                if *w != r {
                    found = Some(DepFinding {
                        code: "PORT204",
                        line: rl,
                        message: message(&r, w, format!("each iteration of the loop at line {line} reads `{r}` (line {rl}) after the one before wrote `{w}` (line {wl})")),
                    });
                    return;
                }
            }
        }
    });
    found
}

impl Ty {
    fn is_array_ty(&self) -> bool {
        matches!(self, Ty::Array { .. })
    }
}

fn mentions_assigned(e: &Expr, assigned: &HashMap<String, Vec<u32>>) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let Expr::Name(n) = x {
            if assigned.contains_key(n.id.as_str()) {
                found = true;
            }
        }
    });
    found
}

fn collect_accesses<'e>(m: &Module, body: &'e [Stmt], out: &mut Vec<Access<'e>>) {
    walk_stmts(body, &mut |s| {
        let line = m.line_of(s.start());
        let mut reads: Vec<&Expr> = Vec::new();
        match s {
            Stmt::Assign(a) => {
                for t in &a.targets {
                    push_write(t, line, false, out);
                    if let Expr::Subscript(sub) = t {
                        reads.push(&sub.slice);
                    }
                }
                reads.push(&a.value);
            }
            Stmt::AugAssign(a) => {
                // `+=`/`-=` on a shared element is an atomic add on the GPU.
                let atomic = matches!(a.op, ast::Operator::Add | ast::Operator::Sub);
                push_write(&a.target, line, atomic, out);
                reads.push(&a.value);
                if let Expr::Subscript(sub) = a.target.as_ref() {
                    reads.push(&sub.slice);
                }
            }
            Stmt::AnnAssign(a) => {
                push_write(&a.target, line, false, out);
                reads.extend(a.value.as_deref());
            }
            Stmt::Expr(e) => reads.push(&e.value),
            Stmt::Return(r) => reads.extend(r.value.as_deref()),
            Stmt::If(i) => reads.push(&i.test),
            Stmt::While(w) => reads.push(&w.test),
            Stmt::For(f) => reads.push(&f.iter),
            _ => {}
        }
        for r in reads {
            walk_expr(r, &mut |e| {
                if let Expr::Subscript(sub) = e {
                    if let Expr::Name(n) = sub.value.as_ref() {
                        out.push(Access {
                            array: n.id.to_string(),
                            shown: n.id.to_string(),
                            index: &sub.slice,
                            line,
                            write: false,
                            atomic: false,
                        });
                    }
                }
            });
        }
    });
}

fn push_write<'e>(t: &'e Expr, line: u32, atomic: bool, out: &mut Vec<Access<'e>>) {
    // `t[i][j] = …` writes into row `t[i]`: the innermost subscript names
    // the array, and its index a superset of the elements written (the
    // rewriter, which merges the chain into `t[i, j]`, is exact).
    let mut t = t;
    while let Expr::Subscript(sub) = t {
        if matches!(sub.value.as_ref(), Expr::Subscript(_)) {
            t = sub.value.as_ref();
        } else {
            break;
        }
    }
    if let Expr::Subscript(sub) = t {
        if let Expr::Name(n) = sub.value.as_ref() {
            out.push(Access {
                array: n.id.to_string(),
                shown: n.id.to_string(),
                index: &sub.slice,
                line,
                write: true,
                atomic,
            });
        }
    }
}

/// Walk a body in order; a name read before any assignment in this
/// iteration, and assigned somewhere in the loop, is carried.
fn live_in(
    body: &[Stmt],
    assigned: &HashMap<String, Vec<u32>>,
    defined: &mut HashSet<String>,
    carried: &mut Vec<String>,
) {
    let read = |e: &Expr, defined: &HashSet<String>, carried: &mut Vec<String>| {
        walk_expr(e, &mut |x| {
            if let Expr::Name(n) = x {
                let id = n.id.as_str();
                if assigned.contains_key(id)
                    && !defined.contains(id)
                    && !carried.iter().any(|c| c == id)
                {
                    carried.push(id.to_string());
                }
            }
        });
    };
    for s in body {
        match s {
            Stmt::Assign(a) => {
                read(&a.value, defined, carried);
                for t in &a.targets {
                    match t {
                        Expr::Name(n) => {
                            defined.insert(n.id.to_string());
                        }
                        Expr::Tuple(tu) => {
                            for e in &tu.elts {
                                if let Expr::Name(n) = e {
                                    defined.insert(n.id.to_string());
                                } else {
                                    read(e, defined, carried);
                                }
                            }
                        }
                        other => read(other, defined, carried),
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    read(v, defined, carried);
                    if let Expr::Name(n) = a.target.as_ref() {
                        defined.insert(n.id.to_string());
                    }
                }
            }
            Stmt::AugAssign(a) => {
                read(&a.value, defined, carried);
                read(&a.target, defined, carried);
            }
            Stmt::Expr(e) => read(&e.value, defined, carried),
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    read(v, defined, carried)
                }
            }
            Stmt::Assert(a) => read(&a.test, defined, carried),
            Stmt::If(i) => {
                read(&i.test, defined, carried);
                let mut d1 = defined.clone();
                live_in(&i.body, assigned, &mut d1, carried);
                let mut d2 = defined.clone();
                live_in(&i.orelse, assigned, &mut d2, carried);
                for n in d1.intersection(&d2) {
                    defined.insert(n.clone());
                }
            }
            Stmt::For(f) => {
                read(&f.iter, defined, carried);
                let mut inner = defined.clone();
                walk_expr(&f.target, &mut |e| {
                    if let Expr::Name(n) = e {
                        inner.insert(n.id.to_string());
                    }
                });
                live_in(&f.body, assigned, &mut inner, carried);
                // The inner loop's own accumulators (`acc = 0` before it) are
                // already defined; what it defines may not run at all.
            }
            Stmt::While(w) => {
                read(&w.test, defined, carried);
                let mut inner = defined.clone();
                live_in(&w.body, assigned, &mut inner, carried);
            }
            Stmt::With(w) => live_in(&w.body, assigned, defined, carried),
            Stmt::Try(t) => live_in(&t.body, assigned, defined, carried),
            _ => {}
        }
    }
}

/// If every update of `v` in the loop is `v op= e` / `v = v op e` /
/// `v = max(v, e)` with one associative op and `v` read nowhere else, the
/// kind of reduction.
fn reduction_kind(body: &[Stmt], v: &str) -> Option<&'static str> {
    let names: HashSet<String> = [v.to_string()].into();
    let mut kind: Option<&'static str> = None;
    let mut ok = true;
    let mut update_exprs: Vec<*const Expr> = Vec::new();
    walk_stmts(body, &mut |s| {
        let (target, op, value): (&Expr, Option<ast::Operator>, &Expr) = match s {
            Stmt::AugAssign(a) => (&a.target, Some(a.op), &a.value),
            Stmt::Assign(a) if a.targets.len() == 1 => (&a.targets[0], None, &a.value),
            _ => return,
        };
        let Expr::Name(n) = target else { return };
        if n.id.as_str() != v {
            return;
        }
        let this = match (op, value) {
            (Some(op), e) if !mentions(e, &names) => op_kind(op),
            (None, Expr::BinOp(b)) => {
                let lhs_is_v = matches!(b.left.as_ref(), Expr::Name(x) if x.id.as_str() == v);
                let rhs_is_v = matches!(b.right.as_ref(), Expr::Name(x) if x.id.as_str() == v);
                // `v = v op e`, or `v = e op v` for commutative ops.
                let left_form = lhs_is_v && !mentions(&b.right, &names);
                let right_form = rhs_is_v
                    && !mentions(&b.left, &names)
                    && matches!(b.op, ast::Operator::Add | ast::Operator::Mult);
                if left_form || right_form {
                    op_kind(b.op)
                } else {
                    None
                }
            }
            (None, Expr::Call(c)) => {
                let callee = crate::symbols::dotted(&c.func).unwrap_or_default();
                let last = callee.rsplit('.').next().unwrap_or("");
                let has_v = c
                    .args
                    .iter()
                    .filter(|a| matches!(a, Expr::Name(x) if x.id.as_str() == v))
                    .count()
                    == 1;
                let others_clean = c
                    .args
                    .iter()
                    .filter(|a| !matches!(a, Expr::Name(x) if x.id.as_str() == v))
                    .all(|a| !mentions(a, &names));
                match last {
                    "max" | "maximum" | "fmax" if has_v && others_clean => Some("max-reduction"),
                    "min" | "minimum" | "fmin" if has_v && others_clean => Some("min-reduction"),
                    _ => None,
                }
            }
            _ => None,
        };
        match (this, kind) {
            (Some(t), None) => kind = Some(t),
            (Some(t), Some(k)) if t == k => {}
            _ => ok = false,
        }
        update_exprs.push(value as *const Expr);
    });
    if !ok {
        return None;
    }
    // `v` must not be read anywhere but in its own updates.
    let mut read_elsewhere = false;
    walk_stmts(body, &mut |s| {
        let exprs: Vec<&Expr> = match s {
            Stmt::Assign(a) => {
                let is_update =
                    matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == v);
                if is_update {
                    vec![]
                } else {
                    let mut e: Vec<&Expr> = a.targets.iter().collect();
                    e.push(&a.value);
                    e
                }
            }
            Stmt::AugAssign(a) => {
                if matches!(a.target.as_ref(), Expr::Name(n) if n.id.as_str() == v) {
                    vec![]
                } else {
                    vec![a.target.as_ref(), a.value.as_ref()]
                }
            }
            Stmt::Expr(e) => vec![e.value.as_ref()],
            Stmt::If(i) => vec![i.test.as_ref()],
            Stmt::While(w) => vec![w.test.as_ref()],
            Stmt::Return(r) => r.value.as_deref().into_iter().collect(),
            Stmt::For(f) => vec![f.iter.as_ref()],
            _ => vec![],
        };
        if exprs.iter().any(|e| mentions(e, &names)) {
            read_elsewhere = true;
        }
    });
    if read_elsewhere {
        None
    } else {
        kind
    }
}

fn op_kind(op: ast::Operator) -> Option<&'static str> {
    match op {
        ast::Operator::Add | ast::Operator::Sub => Some("sum-reduction"),
        ast::Operator::Mult => Some("product-reduction"),
        ast::Operator::BitOr | ast::Operator::BitAnd | ast::Operator::BitXor => {
            Some("bitwise reduction")
        }
        _ => None,
    }
}

fn reads_of(m: &Module, body: &[Stmt], v: &str) -> Vec<u32> {
    let names: HashSet<String> = [v.to_string()].into();
    let mut lines = Vec::new();
    walk_stmts(body, &mut |s| {
        let e: Option<&Expr> = match s {
            Stmt::Assign(a) => Some(&a.value),
            Stmt::AugAssign(a) => Some(&a.value),
            Stmt::Expr(e) => Some(&e.value),
            Stmt::If(i) => Some(&i.test),
            _ => None,
        };
        if e.is_some_and(|e| mentions(e, &names)) {
            lines.push(m.line_of(s.start()));
        }
    });
    lines
}
