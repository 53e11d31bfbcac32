//! **dependences**: may the iterations of a loop run at the same time?
//!
//! For a candidate parallel loop (its variables `pvars`), on the Python AST:
//! - a scalar assigned in the body is *private* when each iteration writes
//!   it before reading it; a *reduction* when every touch is `s += e`,
//!   `s -= e`, `s *= e`, `s = s + e`, `s = max(s, e)` / `min` with `e` free
//!   of `s`; anything else carries a value between iterations (a scan or a
//!   recurrence) and is refused with the variable and its lines;
//! - a store `a[idx] = …` must hit different elements in different
//!   iterations, decided per dimension by the analyzer's `indexset`
//!   (constant, affine and slice indices compared by arithmetic);
//!   `a[k] += e` that does not (a histogram, an accumulator element)
//!   becomes an atomic add; any other store is refused, as are two stores
//!   whose elements other iterations' stores overlap;
//! - an array that is written may be read only where no other iteration
//!   writes (`x[i] = x[i] * 2` and `v[i, :3] = v[i, :3] * v[i, 3]` are
//!   fine, `x[i] = x[i - 1] + …` is a recurrence).
//!
//! The analyzer's own PORT204 findings are checked first by the caller; this
//! is the rewriter's own, stricter, check: it never lets a racing kernel out.
//!
//! Stage invariant: the stage between `shapes` and `lower`, on the Python
//! AST alone — no lowering state, no values; the passes ask it, it asks
//! none of them.

use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
use rustpython_parser::text_size::TextSize;

use port_analyzer::indexset::{
    access, is_length, lin, may_meet_in, no_bounds, Ctx, Dim, Lin, NameKind,
};

use crate::error::{refuse, Lower};
use crate::pyast::{mentions, stmt_exprs, target_names, walk_expr, walk_stmts};
use crate::source::SourceFile;

pub const NAME: &str = "dependences";

/// The operator of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedOp {
    Sum,
    Prod,
    Max,
    Min,
}

impl RedOp {
    pub fn word(self) -> &'static str {
        match self {
            RedOp::Sum => "sum",
            RedOp::Prod => "product",
            RedOp::Max => "max",
            RedOp::Min => "min",
        }
    }
}

/// A scalar reduced across a parallel loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReductionVar {
    pub name: String,
    pub op: RedOp,
    pub line: u32,
}

/// What the loop's iterations share.
#[derive(Clone, Debug, Default)]
pub struct LoopDeps {
    pub reductions: Vec<ReductionVar>,
    /// `a[idx] += e` statements (by start offset) to do atomically.
    pub atomic_stores: HashSet<TextSize>,
}

struct Store<'a> {
    array: String,
    index: &'a Expr,
    line: u32,
    stmt: TextSize,
    augmented: Option<ast::Operator>,
    /// The value stored (`None` for an `out=` target).
    value: Option<&'a Expr>,
}

/// Checks the body of a loop whose iterations over `pvars` would run in
/// parallel. `loop_line` names the loop in messages.
/// The loop variables' ranges, `(start, stop)` of each one's `range`
/// (see [`port_analyzer::indexset::range_bounds`]), where known.
pub type Bounds = [(String, Expr, Expr)];

pub fn check(
    src: &SourceFile,
    body: &[Stmt],
    pvars: &[String],
    ranges: &Bounds,
    loop_line: u32,
) -> Lower<LoopDeps> {
    let mut deps = LoopDeps::default();

    // Names assigned in the body; inner loop variables are private.
    let mut assigned: HashMap<String, Vec<u32>> = HashMap::new();
    let mut inner_loop_vars: HashSet<String> = HashSet::new();
    walk_stmts(body, &mut |s| {
        let mut targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![&a.target],
            Stmt::AnnAssign(a) => vec![&a.target],
            Stmt::For(f) => {
                inner_loop_vars.extend(target_names(&f.target));
                vec![]
            }
            _ => vec![],
        };
        // `np.add(a, b, out=c)` writes the whole of `c`.
        targets.extend(
            crate::pyast::out_targets(s)
                .into_iter()
                .filter(|t| matches!(t, Expr::Name(_))),
        );
        for t in targets {
            for n in target_names(t) {
                assigned.entry(n).or_default().push(src.line(s));
            }
        }
    });
    for p in pvars {
        if assigned.contains_key(p) {
            return refuse(
                NAME,
                assigned[p][0],
                format!(
                    "the loop variable `{p}` is reassigned inside the loop at line {loop_line}"
                ),
            );
        }
    }

    let mut names: Vec<&String> = assigned.keys().collect();
    names.sort_by_key(|n| assigned[*n][0]);
    for v in names {
        match first_touch(body, v) {
            Touch::Write | Touch::None => {}
            Touch::Read => match reduction_op(body, v) {
                Some(op) => deps.reductions.push(ReductionVar {
                    name: v.clone(),
                    op,
                    line: assigned[v][0],
                }),
                None => {
                    let mut lines = assigned[v].clone();
                    lines.extend(read_lines(src, body, v));
                    lines.sort_unstable();
                    lines.dedup();
                    let list: Vec<String> = lines.iter().map(u32::to_string).collect();
                    return refuse(
                        NAME,
                        assigned[v][0],
                        format!(
                            "`{v}` carries a value from one iteration of the loop at line {loop_line} to the next (lines {}): a scan or recurrence, not a reduction; its iterations cannot run in parallel",
                            list.join(", ")
                        ),
                    );
                }
            },
        }
    }

    // Loop-invariant means: mentions no name assigned in the loop and no
    // loop variable of an inner loop.
    let variant: HashSet<String> = assigned
        .keys()
        .cloned()
        .chain(inner_loop_vars.iter().cloned())
        .collect();

    let mut stores: Vec<Store> = Vec::new();
    walk_stmts(body, &mut |s| {
        let (mut targets, aug, value): (Vec<&Expr>, _, _) = match s {
            Stmt::Assign(a) => (a.targets.iter().collect(), None, Some(a.value.as_ref())),
            Stmt::AugAssign(a) => (vec![a.target.as_ref()], Some(a.op), Some(a.value.as_ref())),
            _ => (Vec::new(), None, None),
        };
        // `np.add(x[i], y[i], out=z[i])` stores into `z[i]`.
        targets.extend(
            crate::pyast::out_targets(s)
                .into_iter()
                .filter(|t| matches!(t, Expr::Subscript(_))),
        );
        for t in targets {
            let mut ts = vec![t];
            if let Expr::Tuple(tu) = t {
                ts = tu.elts.iter().collect();
            }
            for t in ts {
                if let Expr::Subscript(sub) = t {
                    if let Some(array) = crate::pyast::subscript_base(&sub.value) {
                        stores.push(Store {
                            array,
                            index: &sub.slice,
                            line: src.line(s),
                            stmt: s.start(),
                            augmented: aug,
                            value,
                        });
                    }
                }
            }
        }
    });

    // Which elements each access names, per dimension (the analyzer's
    // `indexset`, so the planner and PORT204 agree).
    let name_kind = |n: &str| {
        if pvars.iter().any(|p| p == n) {
            NameKind::Loop
        } else if variant.contains(n) {
            NameKind::Variant
        } else {
            NameKind::Invariant
        }
    };
    let opaque = |e: &Expr| {
        let invariant =
            !pvars.iter().any(|p| mentions(e, p)) && !variant.iter().any(|v| mentions(e, v));
        (invariant && is_length(e)).then(|| src.norm_text(e))
    };
    let plain = Ctx {
        name: &name_kind,
        opaque: &opaque,
        bounds: &no_bounds,
    };
    let lin_bounds: Vec<(String, Lin, Lin)> = ranges
        .iter()
        .filter_map(|(p, a, b)| Some((p.clone(), lin(a, &plain)?, lin(b, &plain)?)))
        .collect();
    let bounds = |p: &str| {
        lin_bounds
            .iter()
            .find(|(q, _, _)| q == p)
            .map(|(_, a, b)| (a.clone(), b.clone()))
    };
    let ctx = Ctx {
        name: &name_kind,
        opaque: &opaque,
        bounds: &bounds,
    };
    let set = |index: &Expr| access(index, &ctx);

    let mut written: Vec<String> = stores.iter().map(|s| s.array.clone()).collect();
    written.sort();
    written.dedup();
    for arr in written {
        let mine: Vec<&Store> = stores.iter().filter(|s| s.array == arr).collect();
        let sets: Vec<Option<Vec<Dim>>> = mine.iter().map(|st| set(st.index)).collect();
        let mut atomic = false;
        for (st, sst) in mine.iter().zip(&sets) {
            if !may_meet_in(sst.as_deref(), sst.as_deref(), pvars, &bounds) {
                continue;
            }
            let scalar_elem = components(st.index)
                .iter()
                .all(|c| !matches!(c, Expr::Slice(_)));
            if matches!(st.augmented, Some(ast::Operator::Add | ast::Operator::Sub)) && scalar_elem
            {
                atomic = true;
                deps.atomic_stores.insert(st.stmt);
                continue;
            }
            let elem = src.norm_text(st.index);
            // `t[i, j] = max(t[i, j], v)`: each iteration updates the element
            // from its own value, a reduction into it.
            let self_update = st.augmented.is_some()
                || st.value.is_some_and(|v| {
                    let mut reads = false;
                    walk_expr(v, &mut |x| {
                        if let Expr::Subscript(sub) = x {
                            reads |= crate::pyast::subscript_base(&sub.value).as_deref()
                                == Some(arr.as_str())
                                && src.norm_text(sub.slice.as_ref()) == elem;
                        }
                    });
                    reads
                });
            if self_update {
                return refuse(
                    NAME,
                    st.line,
                    format!(
                        "every iteration of the loop at line {loop_line} updates `{arr}[{elem}]` from its own value (line {}): a reduction into one element, which port runs in parallel only as `+=`/`-=` (an atomic add)",
                        st.line
                    ),
                );
            }
            return refuse(
                NAME,
                st.line,
                format!(
                    "every iteration of the loop at line {loop_line} may write `{arr}[{elem}]` (line {}): the iterations would race",
                    st.line
                ),
            );
        }
        // Two stores of one array that other iterations' stores overlap.
        if !atomic {
            for (a, sa) in mine.iter().zip(&sets) {
                for (b, sb) in mine.iter().zip(&sets) {
                    if a.index.range() != b.index.range()
                        && may_meet_in(sa.as_deref(), sb.as_deref(), pvars, &bounds)
                    {
                        return refuse(
                            NAME,
                            b.line,
                            format!(
                                "`{arr}[{}]` (line {}) writes an element another iteration writes as `{arr}[{}]` (line {}): the iterations of the loop at line {loop_line} would race",
                                src.norm_text(b.index),
                                b.line,
                                src.norm_text(a.index),
                                a.line
                            ),
                        );
                    }
                }
            }
        }
        // Reads of a written array: only elements no other iteration writes
        // (with atomic updates, none at all).
        let mut bad: Option<(String, u32, usize)> = None;
        for s in body_stmts(body) {
            for e in stmt_exprs(s) {
                walk_expr(e, &mut |x| {
                    if let Expr::Subscript(sub) = x {
                        if crate::pyast::subscript_base(&sub.value).as_deref() == Some(&arr)
                            && bad.is_none()
                        {
                            let is_store_target = stores
                                .iter()
                                .any(|st| st.array == arr && st.index.range() == sub.slice.range());
                            if is_store_target {
                                return;
                            }
                            let read = set(sub.slice.as_ref());
                            let hit = sets.iter().position(|w| {
                                atomic || may_meet_in(w.as_deref(), read.as_deref(), pvars, &bounds)
                            });
                            if let Some(k) = hit {
                                bad = Some((src.norm_text(sub.slice.as_ref()), src.line(x), k));
                            }
                        }
                    }
                });
            }
        }
        if let Some((t, line, k)) = bad {
            let w = mine[k];
            let why = if atomic {
                "an element other iterations accumulate into"
            } else {
                "an element another iteration writes"
            };
            return refuse(
                NAME,
                line,
                format!(
                    "`{arr}[{t}]` (line {line}) reads {why} as `{arr}[{}]` (line {}): a recurrence across the loop at line {loop_line}",
                    src.norm_text(w.index),
                    w.line
                ),
            );
        }
    }
    Ok(deps)
}

fn body_stmts(body: &[Stmt]) -> Vec<&Stmt> {
    let mut out = Vec::new();
    walk_stmts(body, &mut |s| out.push(s));
    out
}

/// The components of a subscript (`i, :` → `[i, :]`).
pub fn components(index: &Expr) -> Vec<&Expr> {
    match index {
        Expr::Tuple(t) => t.elts.iter().collect(),
        e => vec![e],
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Touch {
    Read,
    Write,
    None,
}

/// How an iteration first touches `v`: reading it (its value comes from the
/// previous iteration) or writing it.
fn first_touch(body: &[Stmt], v: &str) -> Touch {
    for s in body {
        match touch_stmt(s, v) {
            Touch::None => {}
            t => return t,
        }
    }
    Touch::None
}

fn reads(e: &Expr, v: &str) -> bool {
    mentions(e, v)
}

fn touch_stmt(s: &Stmt, v: &str) -> Touch {
    match s {
        Stmt::Assign(a) => {
            if reads(&a.value, v) {
                return Touch::Read;
            }
            for t in &a.targets {
                if target_names(t).iter().any(|n| n == v) {
                    return Touch::Write;
                }
                if !matches!(t, Expr::Name(_)) && mentions(t, v) {
                    return Touch::Read;
                }
            }
            Touch::None
        }
        Stmt::AnnAssign(a) => {
            if a.value.as_ref().is_some_and(|x| reads(x, v)) {
                return Touch::Read;
            }
            if target_names(&a.target).iter().any(|n| n == v) && a.value.is_some() {
                return Touch::Write;
            }
            Touch::None
        }
        Stmt::AugAssign(a) => {
            if mentions(&a.target, v) || reads(&a.value, v) {
                Touch::Read
            } else {
                Touch::None
            }
        }
        Stmt::If(i) => {
            if reads(&i.test, v) {
                return Touch::Read;
            }
            let a = first_touch(&i.body, v);
            let b = first_touch(&i.orelse, v);
            match (a, b) {
                (Touch::Read, _) | (_, Touch::Read) => Touch::Read,
                (Touch::Write, Touch::Write) => Touch::Write,
                // Written on one path only (or not at all): a later read may
                // see the previous iteration's value, so keep looking.
                _ => Touch::None,
            }
        }
        Stmt::For(f) => {
            if reads(&f.iter, v) {
                return Touch::Read;
            }
            if target_names(&f.target).iter().any(|n| n == v) {
                return Touch::Write;
            }
            first_touch(&f.body, v)
        }
        Stmt::While(w) => {
            if reads(&w.test, v) {
                return Touch::Read;
            }
            first_touch(&w.body, v)
        }
        other => {
            if stmt_exprs(other).iter().any(|e| reads(e, v)) {
                Touch::Read
            } else {
                Touch::None
            }
        }
    }
}

/// Whether `v` is touched only by reduction updates of one operator.
fn reduction_op(body: &[Stmt], v: &str) -> Option<RedOp> {
    let mut op: Option<RedOp> = None;
    let mut ok = true;
    walk_stmts(body, &mut |s| {
        let touches = stmt_exprs(s).iter().any(|e| mentions(e, v));
        if !touches {
            return;
        }
        let this = match s {
            Stmt::AugAssign(a) => match (a.target.as_ref(), a.op) {
                (Expr::Name(n), o) if n.id.as_str() == v && !mentions(&a.value, v) => match o {
                    ast::Operator::Add | ast::Operator::Sub => Some(RedOp::Sum),
                    ast::Operator::Mult => Some(RedOp::Prod),
                    _ => None,
                },
                _ => None,
            },
            Stmt::Assign(a) => match a.targets.as_slice() {
                [Expr::Name(n)] if n.id.as_str() == v => update_op(&a.value, v),
                _ => None,
            },
            _ => None,
        };
        match (this, op) {
            (Some(t), None) => op = Some(t),
            (Some(t), Some(o)) if t == o => {}
            _ => ok = false,
        }
    });
    if ok {
        op
    } else {
        None
    }
}

/// `v + e`, `e + v`, `v - e`, `v * e`, `max(v, e)`, `min(e, v)`.
fn update_op(value: &Expr, v: &str) -> Option<RedOp> {
    let is_v = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == v);
    match value {
        Expr::BinOp(b) => {
            let (l, r) = (b.left.as_ref(), b.right.as_ref());
            match b.op {
                ast::Operator::Add if is_v(l) && !mentions(r, v) => Some(RedOp::Sum),
                ast::Operator::Add if is_v(r) && !mentions(l, v) => Some(RedOp::Sum),
                ast::Operator::Sub if is_v(l) && !mentions(r, v) => Some(RedOp::Sum),
                ast::Operator::Mult if is_v(l) && !mentions(r, v) => Some(RedOp::Prod),
                ast::Operator::Mult if is_v(r) && !mentions(l, v) => Some(RedOp::Prod),
                _ => None,
            }
        }
        Expr::Call(c) if c.args.len() == 2 && c.keywords.is_empty() => {
            let f = match c.func.as_ref() {
                Expr::Name(n) => n.id.to_string(),
                Expr::Attribute(a) => a.attr.to_string(),
                _ => return None,
            };
            let op = match f.as_str() {
                "max" | "maximum" | "fmax" => RedOp::Max,
                "min" | "minimum" | "fmin" => RedOp::Min,
                _ => return None,
            };
            let (a, b) = (&c.args[0], &c.args[1]);
            ((is_v(a) && !mentions(b, v)) || (is_v(b) && !mentions(a, v))).then_some(op)
        }
        _ => None,
    }
}

fn read_lines(src: &SourceFile, body: &[Stmt], v: &str) -> Vec<u32> {
    let mut out = Vec::new();
    walk_stmts(body, &mut |s| {
        let value_reads = match s {
            Stmt::Assign(a) => mentions(&a.value, v),
            Stmt::AugAssign(a) => mentions(&a.target, v) || mentions(&a.value, v),
            other => stmt_exprs(other).iter().any(|e| mentions(e, v)),
        };
        if value_reads {
            out.push(src.line(s));
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loop_body(src: &str) -> (SourceFile, usize) {
        let f = SourceFile::parse("t.py", src).unwrap();
        (f, 0)
    }

    fn bounds_of(vars: &[String], loops: &[&ast::StmtFor]) -> Vec<(String, Expr, Expr)> {
        vars.iter()
            .zip(loops)
            .filter_map(|(v, l)| {
                let (a, b) = port_analyzer::indexset::range_bounds(&l.iter)?;
                Some((v.clone(), a, b))
            })
            .collect()
    }

    fn check_src(src: &str, pvars: &[&str]) -> Lower<LoopDeps> {
        let (f, _) = loop_body(src);
        let Stmt::FunctionDef(d) = &f.suite[0] else {
            panic!()
        };
        let Stmt::For(l) = d.body.last().unwrap() else {
            panic!()
        };
        let mut body: &[Stmt] = &l.body;
        let mut loops = vec![l];
        if pvars.len() == 2 {
            let Stmt::For(inner) = &l.body[0] else {
                panic!()
            };
            body = &inner.body;
            loops.push(inner);
        }
        let pv: Vec<String> = pvars.iter().map(|s| s.to_string()).collect();
        check(&f, body, &pv, &bounds_of(&pv, &loops), 3)
    }

    #[test]
    fn independent_and_reductions() {
        let d = check_src(
            "def f(x, y):\n    s = 0.0\n    for i in range(x.shape[0]):\n        t = x[i] * 2\n        y[i] = t\n        s += t\n",
            &["i"],
        )
        .unwrap();
        assert_eq!(d.reductions.len(), 1);
        assert_eq!(d.reductions[0].op, RedOp::Sum);
        let d = check_src(
            "def f(x):\n    m = 0.0\n    for i in range(x.shape[0]):\n        m = max(m, x[i])\n",
            &["i"],
        )
        .unwrap();
        assert_eq!(d.reductions[0].op, RedOp::Max);
    }

    #[test]
    fn scans_and_recurrences_are_refused() {
        let e = check_src(
            "def f(x, out):\n    s = 0.0\n    for i in range(x.shape[0]):\n        s += x[i]\n        out[i] = s\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("`s` carries a value"), "{}", e.message);
        assert_eq!(e.line, 4);
        let e = check_src(
            "def f(x):\n    n = 1\n    for i in range(1, x.shape[0]):\n        x[i] = x[i - 1] + x[i]\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("recurrence"), "{}", e.message);
        let e = check_src(
            "def f(x, out):\n    n = 1\n    for i in range(x.shape[0]):\n        out[0] = x[i]\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("race"), "{}", e.message);
    }

    #[test]
    fn scatter_add_becomes_atomic_and_nests_are_checked() {
        let d = check_src(
            "def f(idx, hist):\n    n = 1\n    for i in range(idx.shape[0]):\n        hist[idx[i]] += 1\n",
            &["i"],
        )
        .unwrap();
        assert_eq!(d.atomic_stores.len(), 1);
        check_src(
            "def f(a, b, c):\n    n = 1\n    for i in range(c.shape[0]):\n        for j in range(c.shape[1]):\n            s = 0.0\n            for k in range(a.shape[1]):\n                s += a[i, k] * b[k, j]\n            c[i, j] = s\n",
            &["i", "j"],
        )
        .unwrap();
        let e = check_src(
            "def f(a, c):\n    n = 1\n    for i in range(c.shape[0]):\n        for j in range(c.shape[1]):\n            c[i, 0] = a[i, j]\n",
            &["i", "j"],
        )
        .unwrap_err();
        assert!(e.message.contains("race"), "{}", e.message);
    }

    #[test]
    fn index_sets_are_compared_per_dimension() {
        // n-body: row i's velocity columns 0..3 from its column 3.
        check_src(
            "def f(v, dt):\n    n = 1\n    for i in range(v.shape[0]):\n        v[i, :3] = v[i, :3] * (1.0 - dt * v[i, 3])\n",
            &["i"],
        )
        .unwrap();
        // Disjoint columns, and a row's last column from the others.
        check_src(
            "def f(a):\n    n = 1\n    for i in range(a.shape[0]):\n        a[i, 0] = a[i, 1] + a[0, 2]\n",
            &["i"],
        )
        .unwrap();
        check_src(
            "def f(a):\n    n = 1\n    for i in range(a.shape[0]):\n        a[i, -1] = a[i, :-1].sum()\n",
            &["i"],
        )
        .unwrap();
        // Column 2 of row 0 may be the last column another iteration
        // writes (a 3-column array): not provably apart.
        check_src(
            "def f(a):\n    n = 1\n    for i in range(a.shape[0]):\n        a[i, -1] = a[0, 2]\n",
            &["i"],
        )
        .unwrap_err();
        // Odd elements from even ones.
        check_src(
            "def f(x):\n    n = 1\n    for i in range(x.shape[0] // 2):\n        x[2 * i + 1] = x[2 * i] * 0.5\n",
            &["i"],
        )
        .unwrap();
        // A shifted window within the row, over a 2-D nest: j - 1 is
        // another (i, j) iteration's element.
        let e = check_src(
            "def f(y):\n    n = 1\n    for i in range(y.shape[0]):\n        for j in range(1, y.shape[1]):\n            y[i, j] = y[i, j - 1] + 1.0\n",
            &["i", "j"],
        )
        .unwrap_err();
        assert!(e.message.contains("`y[i,j-1]`"), "{}", e.message);
        assert!(e.message.contains("recurrence"), "{}", e.message);
        // Windows of 3 every 2 elements overlap.
        let e = check_src(
            "def f(x):\n    n = 1\n    for i in range(9):\n        x[2 * i:2 * i + 3] = 1.0\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("race"), "{}", e.message);
        // Two stores of one array that other iterations overlap.
        let e = check_src(
            "def f(x):\n    n = 1\n    for i in range(9):\n        x[i] = 1.0\n        x[i + 1] = 2.0\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("would race"), "{}", e.message);
        // Triangular: the prefix before i is other iterations' elements.
        let e = check_src(
            "def f(x):\n    n = 1\n    for i in range(1, x.shape[0]):\n        x[i] = x[:i].sum()\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("`x[:i]`"), "{}", e.message);
    }

    /// The loops of `fixtures/deps/index_sets.py`, whose truth the
    /// analyzer's `deps_ground_truth` test establishes by running them in
    /// every order: the planner accepts exactly the ones called independent.
    #[test]
    fn the_planner_agrees_with_the_ground_truth_fixture() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/deps/index_sets.py"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let f = SourceFile::parse("index_sets.py", &text).unwrap();
        let table = &text[text.find("CASES = {").unwrap()..];
        let mut n = 0;
        for l in table.lines().skip(1).take_while(|l| !l.starts_with('}')) {
            let parts: Vec<&str> = l.split('"').collect();
            let (name, want) = (parts[1], parts[3]);
            let def = f
                .suite
                .iter()
                .find_map(|s| match s {
                    Stmt::FunctionDef(d) if d.name.as_str() == name => Some(d),
                    _ => None,
                })
                .unwrap();
            // As the planner sees it: `t[i][j]` merged into `t[i, j]`.
            let mut body = def.body.clone();
            crate::pyast::merge_chained_subscripts(&mut body);
            let Some(Stmt::For(l)) = body.iter().find(|s| matches!(s, Stmt::For(_))) else {
                panic!("{name}: no loop")
            };
            let var: Vec<String> = target_names(&l.target);
            let got = check(&f, &l.body, &var, &bounds_of(&var, &[l]), 1);
            assert_eq!(
                got.is_ok(),
                want == "independent",
                "{name}: {:?}",
                got.err()
            );
            n += 1;
        }
        assert!(n >= 10);
    }

    #[test]
    fn conditionally_written_scalar_is_carried() {
        let e = check_src(
            "def f(x, out):\n    m = 0.0\n    for i in range(x.shape[0]):\n        if x[i] > 0:\n            m = x[i]\n        out[i] = m\n",
            &["i"],
        )
        .unwrap_err();
        assert!(e.message.contains("`m`"), "{}", e.message);
    }
}
