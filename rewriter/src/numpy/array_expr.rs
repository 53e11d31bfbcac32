//! **array_expr**: NumPy array expressions become element loops.
//!
//! An array-valued expression is kept as an element *template*
//! ([`ArrVal`]): its shape, and one scalar IR expression for the element at
//! placeholder indices `__e0`, `__e1`, … Elementwise arithmetic, ufuncs,
//! casts, `np.where` and comparisons build bigger templates; indexing and
//! slicing (`x[i, :]`, `x[1:-1]`, `x.T`) substitute the placeholders. Scalars
//! broadcast; operands of fewer dimensions broadcast right-aligned (NumPy's
//! rule). Only a literal extent of 1 stretches; other extents are taken to
//! be equal, and [`crate::numpy::extents`] guards that on the host.
//! Materialising a template — storing it into a target — gives a loop over
//! the target's elements: thread-private `for` loops inside a kernel, a
//! grid-stride kernel at the top of the function.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, BinOp, ElemRef, Expr, Literal, ScalarType, Stmt};

use crate::ir_util::{map_expr, subst};

pub const NAME: &str = "array_expr";

/// An operand of an element function: expression, type, weak literal.
pub type Operand = (Expr, ScalarType, bool);

/// A value during lowering.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A scalar expression, its type, and whether it is a *weak* Python
    /// literal (NumPy 2 promotion).
    Scalar(Expr, ScalarType, bool),
    Array(ArrVal),
    Tuple(Vec<Val>),
}

impl Val {
    pub fn scalar(e: Expr, t: ScalarType) -> Val {
        Val::Scalar(e, t, false)
    }
}

/// An array-valued expression as an element template.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrVal {
    /// Extents (`i64` expressions).
    pub shape: Vec<Expr>,
    pub elem: ScalarType,
    /// The element at indices `__e0 … __e{ndim-1}`.
    pub body: Expr,
    /// `false` for a view of a named array (its elements *are* the array's,
    /// and it can be stored to); `true` for a computed value.
    pub computed: bool,
}

/// The placeholder for dimension `k` of a template.
pub fn ph(k: usize) -> String {
    format!("__e{k}")
}

impl ArrVal {
    /// The whole of a named array.
    pub fn named(name: &str, ty: ArrayType) -> ArrVal {
        let n = ty.ndim as usize;
        ArrVal {
            shape: (0..n).map(|k| shape(name, k as u8)).collect(),
            elem: ty.elem,
            body: load(name, (0..n).map(|k| var(&ph(k))).collect()),
            computed: false,
        }
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// A named array holding `like`'s values: where `like` has a
    /// dimension of literal extent 1 (`keepdims`, `None`), so does the
    /// view, indexed at 0, so that it keeps broadcasting. Other literal
    /// extents are kept too (a filter of 3 taps stays 3 long).
    pub fn named_like(name: &str, ty: ArrayType, like: &ArrVal) -> ArrVal {
        let mut v = ArrVal::named(name, ty);
        for (k, e) in like.shape.iter().enumerate() {
            if matches!(e, Expr::Lit(Literal::I64(_))) && k < v.shape.len() {
                v.shape[k] = e.clone();
            }
        }
        let one = i64(1);
        if !like.shape.contains(&one) {
            return v;
        }
        let idx: Vec<Expr> = (0..v.ndim())
            .map(|k| {
                if like.shape[k] == one {
                    i64(0)
                } else {
                    var(&ph(k))
                }
            })
            .collect();
        for (k, e) in like.shape.iter().enumerate() {
            if *e == one {
                v.shape[k] = one.clone();
            }
        }
        v.body = load(name, idx);
        v
    }

    /// The same elements seen with new indices: `idx[k]` gives the old
    /// dimension `k` as an expression of the new placeholders
    /// (`__e0`, …). The new placeholders go through temporaries, so the
    /// substitution cannot capture the template's own.
    pub fn reindexed(&self, shape: Vec<Expr>, idx: &[Expr]) -> ArrVal {
        let to_tmp: HashMap<String, Expr> =
            (0..shape.len()).map(|k| (ph(k), var(&tmp(k)))).collect();
        let idx: Vec<Expr> = idx.iter().map(|e| subst(e, &to_tmp)).collect();
        let back: HashMap<String, Expr> = (0..shape.len()).map(|k| (tmp(k), var(&ph(k)))).collect();
        ArrVal {
            shape,
            elem: self.elem,
            body: subst(&self.element(&idx), &back),
            computed: self.computed,
        }
    }

    /// A template of constants: literal extents, and elements that read
    /// no array and no variable (`np.array([1., 2., 1.]) / 4`). A name
    /// bound to it can stay the template: nothing it reads can change.
    pub fn is_constant(&self) -> bool {
        if !self.shape.iter().all(|e| matches!(e, Expr::Lit(_))) {
            return false;
        }
        let mut ok = true;
        port_codegen::ir::walk_expr(&self.body, &mut |x| match x {
            Expr::Var(n) => ok &= n.starts_with("__e"),
            Expr::Load(_)
            | Expr::Shape { .. }
            | Expr::Call(..)
            | Expr::Atomic(..)
            | Expr::AtomicCas(..) => ok = false,
            _ => {}
        });
        ok
    }

    /// Whether a dimension has literal extent 1 (a broadcast dimension).
    pub fn has_unit_dims(&self) -> bool {
        self.shape.contains(&i64(1))
    }

    /// The element at `idx` (one index per dimension).
    pub fn element(&self, idx: &[Expr]) -> Expr {
        let map: HashMap<String, Expr> = idx
            .iter()
            .enumerate()
            .map(|(k, e)| (ph(k), e.clone()))
            .collect();
        subst(&self.body, &map)
    }

    /// The element as the trailing `self.ndim()` of `r` result placeholders
    /// (right-aligned broadcasting).
    /// A dimension of literal extent 1 is read at 0 whatever the result's
    /// extent there (it broadcasts), never at the result's position.
    pub fn body_in(&self, r: usize) -> Expr {
        let off = r - self.ndim();
        let idx: Vec<Expr> = (0..self.ndim())
            .map(|k| {
                if self.shape[k] == i64(1) {
                    i64(0)
                } else {
                    var(&ph(k + off))
                }
            })
            .collect();
        self.element(&idx)
    }

    /// For a view: the element reference its template stores to.
    pub fn view_target(&self) -> Option<&ElemRef> {
        match (&self.body, self.computed) {
            (Expr::Load(r), false) => Some(r),
            _ => None,
        }
    }

    /// Arrays whose elements the template reads.
    pub fn reads(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        port_codegen::ir::walk_expr(&self.body, &mut |e| {
            if let Expr::Load(r) = e {
                out.insert(r.array.clone());
            }
        });
        out
    }

    /// Number of elements (`i64`).
    pub fn size(&self) -> Expr {
        let mut it = self.shape.iter().cloned();
        let first = it.next().unwrap_or(i64(1));
        it.fold(first, mul)
    }

    /// A new template applying `f` to each element.
    pub fn map(&self, elem: ScalarType, f: impl FnOnce(Expr) -> Expr) -> ArrVal {
        ArrVal {
            shape: self.shape.clone(),
            elem,
            body: f(self.body.clone()),
            computed: true,
        }
    }

    /// The transposed view (`x.T`).
    pub fn transpose(&self) -> ArrVal {
        let n = self.ndim();
        let map: HashMap<String, Expr> = (0..n).map(|k| (ph(k), var(&tmp(n - 1 - k)))).collect();
        let back: HashMap<String, Expr> = (0..n).map(|k| (tmp(k), var(&ph(k)))).collect();
        ArrVal {
            shape: self.shape.iter().rev().cloned().collect(),
            elem: self.elem,
            body: subst(&subst(&self.body, &map), &back),
            computed: self.computed,
        }
    }
}

fn tmp(k: usize) -> String {
    format!("__t{k}")
}

/// The result shape and the two element bodies of `a op b`: NumPy's
/// broadcasting, right-aligned. A dimension of literal extent 1 (from
/// `None`/np.newaxis or `keepdims=True`) stretches to the other operand's;
/// other extents are taken to agree ([`crate::numpy::extents`] guards it).
pub fn broadcast(a: &ArrVal, b: &ArrVal) -> (Vec<Expr>, Expr, Expr) {
    let r = a.ndim().max(b.ndim());
    (broadcast_shape(&[a, b]), a.body_in(r), b.body_in(r))
}

/// One index of a subscript.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexItem {
    /// A single position (already normalised to be non-negative).
    At(Expr),
    /// `start, start + step, …` (`len` elements).
    Range { start: Expr, step: i64, len: Expr },
    /// `None` / `np.newaxis`: a new dimension of extent 1.
    NewAxis,
}

/// `a[items]`: missing trailing items are full slices. Gives a scalar when
/// every dimension gets a position.
pub fn index(a: &ArrVal, items: Vec<IndexItem>) -> Val {
    let n = a.ndim();
    let mut map: HashMap<String, Expr> = HashMap::new();
    let mut new_shape = Vec::new();
    let mut items = items.into_iter().peekable();
    for k in 0..n {
        while items.peek() == Some(&IndexItem::NewAxis) {
            items.next();
            new_shape.push(i64(1));
        }
        match items.next() {
            Some(IndexItem::NewAxis) => unreachable!("taken above"),
            Some(IndexItem::At(e)) => {
                map.insert(ph(k), e.clone());
            }
            Some(IndexItem::Range { start, step, len }) => {
                let r = new_shape.len();
                let pos = if step == 1 {
                    var(&tmp(r))
                } else {
                    mul(var(&tmp(r)), i64(step))
                };
                let pos = match start {
                    Expr::Lit(port_codegen::ir::Literal::I64(0)) => pos,
                    s => add(s.clone(), pos),
                };
                map.insert(ph(k), pos);
                new_shape.push(len.clone());
            }
            None => {
                let r = new_shape.len();
                map.insert(ph(k), var(&tmp(r)));
                new_shape.push(a.shape[k].clone());
            }
        }
    }
    for rest in items {
        if rest == IndexItem::NewAxis {
            new_shape.push(i64(1));
        }
    }
    let back: HashMap<String, Expr> = (0..new_shape.len())
        .map(|r| (tmp(r), var(&ph(r))))
        .collect();
    // A stacked grid taken at a constant (`I, J = np.indices(…)`) keeps
    // only its part.
    let body = fold_constant_selects(&subst(&subst(&a.body, &map), &back));
    if new_shape.is_empty() {
        Val::scalar(body, a.elem)
    } else {
        Val::Array(ArrVal {
            shape: new_shape,
            elem: a.elem,
            body,
            computed: a.computed,
        })
    }
}

/// Whether every read of the target array in `value`, at another element
/// than the one written, is safe, as `safe(read indices)` decides.
fn reads_safe_by(target: &ElemRef, value: &Expr, safe: &dyn Fn(&[Expr]) -> bool) -> bool {
    let mut ok = true;
    port_codegen::ir::walk_expr(value, &mut |e| {
        if let Expr::Load(r) = e {
            if r.array == target.array && r.indices != target.indices {
                ok &= safe(&r.indices);
            }
        }
    });
    ok
}

/// Whether every read of the target array in `value`, at another element
/// than the one written, is apart from the writes in some dimension, as
/// `apart(read index, written index)` decides.
fn reads_apart_by(target: &ElemRef, value: &Expr, apart: &dyn Fn(&Expr, &Expr) -> bool) -> bool {
    reads_safe_by(target, value, &|read| {
        read.iter()
            .zip(&target.indices)
            .any(|(ri, ti)| apart(ri, ti))
    })
}

/// Whether every read of the target array is at another element than any
/// write can reach: in some dimension both indices are fixed for the
/// whole kernel (no element variable of `vars` in them) and a nonzero
/// constant apart. `p[0, :] = p[1, :]` and `p[-1, :] = p[-2, :]` copy
/// between rows that do not overlap; a shift along an element variable
/// (`u[1:] = u[:-1]`) does not qualify.
///
/// Or the read differs from the write only in fixed dimensions: then it
/// is in a plane no write reaches, or it is the very element its
/// iteration writes (`d[:, k] = d[:, k] - d[:, k - 1]`, where `k - 1`
/// counts from the end when negative and may be `k` itself).
pub fn reads_fixed_apart(target: &ElemRef, value: &Expr, vars: &[String]) -> bool {
    let fixed = |e: &Expr| {
        let mut ok = true;
        port_codegen::ir::walk_expr(e, &mut |x| match x {
            Expr::Var(n) if vars.contains(n) => ok = false,
            Expr::Load(_) => ok = false,
            _ => {}
        });
        ok
    };
    let apart = |ri: &Expr, ti: &Expr| {
        fixed(ri) && fixed(ti) && matches!(constant_difference(ri, ti), Some(d) if d != 0)
    };
    reads_safe_by(target, value, &|read| {
        let pairs = || read.iter().zip(&target.indices);
        pairs().any(|(ri, ti)| apart(ri, ti))
            || pairs().all(|(ri, ti)| ri == ti || (fixed(ri) && fixed(ti)))
    })
}

/// Whether storing `value` into `target` element by element (NumPy
/// evaluates the right side first; a loop must not read what it already
/// overwrote), the element loop variable `vars[k]` running over
/// `0..extents[k]`, is safe: a read of the target at another element is
/// harmless when, in some dimension, it is at a constant the
/// writes never reach (`v[i, :3] += v[i, 3] * …` writes columns 0..3 and
/// reads column 3), so no element loop reads what another iteration wrote.
pub fn reads_only_unwritten(
    target: &ElemRef,
    value: &Expr,
    vars: &[String],
    extents: &[Expr],
) -> bool {
    // The constant interval [lo, hi) an index of the target covers, when
    // it is `c + v` or `v` for a loop variable with a constant bound.
    fn bound(e: &Expr) -> Option<i64> {
        match e {
            Expr::Lit(Literal::I64(n)) => Some(*n),
            // `max(…, 0)`: a slice's length is never negative.
            Expr::Binary(BinOp::Max, a, b) if **b == Expr::Lit(Literal::I64(0)) => bound(a),
            Expr::Binary(BinOp::Min, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Lit(Literal::I64(n)), _) | (_, Expr::Lit(Literal::I64(n))) => Some(*n),
                _ => None,
            },
            _ => None,
        }
    }
    let written = |e: &Expr| -> Option<(i64, i64)> {
        let (c, v) = match e {
            Expr::Var(v) => (0, v),
            Expr::Binary(BinOp::Add, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Lit(Literal::I64(c)), Expr::Var(v))
                | (Expr::Var(v), Expr::Lit(Literal::I64(c))) => (*c, v),
                _ => return None,
            },
            _ => return None,
        };
        let k = vars.iter().position(|x| x == v)?;
        let hi = bound(extents.get(k)?)?;
        Some((c, c + hi))
    };
    reads_apart_by(target, value, &|ri, ti| match (ri, written(ti)) {
        (Expr::Lit(Literal::I64(at)), Some((lo, hi))) => *at < lo || *at >= hi,
        _ => false,
    })
}

/// Sequential loops over `shape` with fresh variables `vars`, storing
/// `value(idx)` into `target(idx)` (the element loops of a statement inside
/// a kernel).
pub fn element_loops(vars: &[String], shape: &[Expr], inner: Vec<Stmt>) -> Vec<Stmt> {
    let mut body = inner;
    for (v, n) in vars.iter().zip(shape).rev() {
        body = vec![for_range(v, i64(0), n.clone(), i64(1), body)];
    }
    body
}

/// Substitutes the template's placeholders by loop variables.
pub fn at_vars(e: &Expr, vars: &[String]) -> Expr {
    let map: HashMap<String, Expr> = vars
        .iter()
        .enumerate()
        .map(|(k, v)| (ph(k), var(v)))
        .collect();
    subst(e, &map)
}

/// Whether an expression still holds template placeholders.
pub fn has_placeholders(e: &Expr) -> bool {
    let mut found = false;
    port_codegen::ir::walk_expr(e, &mut |x| {
        if let Expr::Var(n) = x {
            found |= n.starts_with("__e") || n.starts_with("__t");
        }
    });
    found
}

/// Python's index `raw` into an axis of `extent`: a negative one counts
/// from the end (`x[j - 1]` at `j = 0` reads the last element).
pub fn wrap(raw: Expr, extent: Expr) -> Expr {
    crate::ir_util::select(
        cmp(port_codegen::ir::CmpOp::Lt, raw.clone(), i64(0)),
        tidy(&add(raw.clone(), extent)),
        raw,
    )
}

/// The least value an `i64` index expression can take, where it follows
/// from literals, extents (never negative) and the least values of the
/// loop variables in `floors`; `None` when nothing bounds it.
pub fn least(e: &Expr, floors: &HashMap<String, i64>) -> Option<i64> {
    match e {
        Expr::Lit(Literal::I64(v)) => Some(*v),
        Expr::Lit(Literal::I32(v)) => Some(i64::from(*v)),
        Expr::Lit(Literal::Bool(b)) => Some(i64::from(*b)),
        Expr::Shape { .. } | Expr::Special(..) => Some(0),
        Expr::Var(n) => floors.get(n).copied(),
        Expr::Cast(t, a) if t.is_int() => least(a, floors),
        Expr::Binary(op, a, b) => {
            let (la, lb) = (least(a, floors), least(b, floors));
            match op {
                BinOp::Add => la?.checked_add(lb?),
                BinOp::Sub => match b.as_ref() {
                    Expr::Lit(Literal::I64(k)) => la?.checked_sub(*k),
                    _ => None,
                },
                BinOp::Mul if la? >= 0 && lb? >= 0 => la?.checked_mul(lb?),
                BinOp::FloorDiv if la? >= 0 && lb? > 0 => Some(0),
                BinOp::Min => Some(la?.min(lb?)),
                BinOp::Max => match (la, lb) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                },
                _ => None,
            }
        }
        Expr::Select(_, a, b) => Some(least(a, floors)?.min(least(b, floors)?)),
        _ => None,
    }
}

/// `max(0, e)` for a slice length.
pub fn nonneg(e: Expr) -> Expr {
    match e {
        Expr::Lit(port_codegen::ir::Literal::I64(v)) => i64(v.max(0)),
        e => binary(BinOp::Max, e, i64(0)),
    }
}

/// `p + c` written the way a person would (`p`, `p + 2`, `p - 2`).
fn offset(p: Expr, c: i64) -> Expr {
    match c {
        0 => p,
        c if c > 0 => add(p, i64(c)),
        c => sub(p, i64(-c)),
    }
}

/// An integer expression as `constant + Σ coefficient · atom`, where an
/// atom is any other sub-expression (a shape, a variable, a product of
/// two of them), keyed by its printed form: enough to see that
/// `x.shape[0] - 2` and `(x.shape[0] - 1) - 1` are one extent.
fn linear(e: &Expr) -> (i64, BTreeMap<String, (i64, Expr)>) {
    fn go(e: &Expr, sign: i64, k: &mut i64, terms: &mut BTreeMap<String, (i64, Expr)>) {
        match e {
            Expr::Lit(Literal::I64(v)) => *k += sign * v,
            Expr::Binary(BinOp::Add, a, b) => {
                go(a, sign, k, terms);
                go(b, sign, k, terms);
            }
            Expr::Binary(BinOp::Sub, a, b) => {
                go(a, sign, k, terms);
                go(b, -sign, k, terms);
            }
            Expr::Binary(BinOp::Mul, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Lit(Literal::I64(c)), x) | (x, Expr::Lit(Literal::I64(c))) => {
                    go(x, sign * c, k, terms)
                }
                _ => atom(e, sign, terms),
            },
            _ => atom(e, sign, terms),
        }
    }
    fn atom(e: &Expr, sign: i64, terms: &mut BTreeMap<String, (i64, Expr)>) {
        // `max(n - 2, 0)` and `max(0, (n - 1) - 1)` are one atom: the
        // operands of min/max are keyed by their own linear forms.
        let key = match e {
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                let (a, b) = (canonical(a), canonical(b));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                format!("{op:?}({a}, {b})")
            }
            _ => format!("{e:?}"),
        };
        let slot = terms.entry(key).or_insert((0, e.clone()));
        slot.0 += sign;
    }
    let mut k = 0;
    let mut terms = BTreeMap::new();
    go(e, 1, &mut k, &mut terms);
    terms.retain(|_, (c, _)| *c != 0);
    (k, terms)
}

/// A linear form as text: equal for expressions [`linear`] finds equal.
fn canonical(e: &Expr) -> String {
    let (k, terms) = linear(e);
    let mut s = k.to_string();
    for (key, (c, _)) in terms {
        s.push_str(&format!(" + {c}*{key}"));
    }
    s
}

/// `e` as its linear form, rebuilt: like terms collected and cancelled
/// (`i + k - i` is `k`), the constant last; other operations are atoms.
pub fn collect_linear(e: &Expr) -> Expr {
    let (k, terms) = linear(e);
    let mut out: Option<Expr> = None;
    for (_, (c, atom)) in terms {
        let term = if c == 1 || c == -1 {
            atom
        } else {
            Expr::Binary(BinOp::Mul, Box::new(i64(c.abs())), Box::new(atom))
        };
        out = Some(match out {
            None if c < 0 => Expr::Binary(BinOp::Sub, Box::new(i64(0)), Box::new(term)),
            None => term,
            Some(acc) if c < 0 => Expr::Binary(BinOp::Sub, Box::new(acc), Box::new(term)),
            Some(acc) => Expr::Binary(BinOp::Add, Box::new(acc), Box::new(term)),
        });
    }
    match out {
        None => i64(k),
        Some(e) if k == 0 => e,
        Some(e) if k < 0 => Expr::Binary(BinOp::Sub, Box::new(e), Box::new(i64(-k))),
        Some(e) => Expr::Binary(BinOp::Add, Box::new(e), Box::new(i64(k))),
    }
}

/// `lhs - rhs` as linear forms, as they are: `Some(c)` when it is the
/// constant `c`.
fn linear_difference(lhs: &Expr, rhs: &Expr) -> Option<i64> {
    let (a, ta) = linear(lhs);
    let (b, tb) = linear(rhs);
    let mut terms = ta;
    for (key, (c, e)) in tb {
        let slot = terms.entry(key).or_insert((0, e));
        slot.0 -= c;
    }
    terms.retain(|_, (c, _)| *c != 0);
    terms.is_empty().then_some(a - b)
}

/// Whether `e` is made of array extents and integer constants under 2^40
/// by `+`, `-`, `*`, `min` and `max`: its value cannot wrap around.
fn extent_arithmetic(e: &Expr) -> bool {
    match e {
        Expr::Shape { .. } => true,
        Expr::Lit(Literal::I64(v)) => v.unsigned_abs() < 1 << 40,
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Min | BinOp::Max, a, b) => {
            extent_arithmetic(a) && extent_arithmetic(b)
        }
        _ => false,
    }
}

/// `lhs - rhs`, both tidied (so a `min`/`max` whose operands are a
/// constant apart is the operand it picks): `Some(c)` when it is the
/// constant `c`. The extent of `x[1:-1]`, `max(min(n - 1, n) - 1, 0)`, is
/// `max(n - 2, 0)`.
pub fn constant_difference(lhs: &Expr, rhs: &Expr) -> Option<i64> {
    linear_difference(&tidy(lhs), &tidy(rhs))
}

/// Simplifies index arithmetic — `a + 0`, `a * 1`, `n - 1 - 1` → `n - 2` —
/// so the emitted source reads as written.
pub fn tidy(e: &Expr) -> Expr {
    use port_codegen::ir::Literal::I64;
    map_expr(e, &|x| match x {
        Expr::Binary(op, a, b) => {
            let (a, b) = (tidy(a), tidy(b));
            Some(match (op, &a, &b) {
                (BinOp::Add | BinOp::Sub, _, Expr::Lit(I64(0))) => a,
                (BinOp::Add, Expr::Lit(I64(0)), _) => b,
                (BinOp::Mul, _, Expr::Lit(I64(1))) => a,
                (BinOp::Mul, Expr::Lit(I64(1)), _) => b,
                (BinOp::Add, Expr::Lit(I64(x)), Expr::Lit(I64(y))) => i64(x.wrapping_add(*y)),
                (BinOp::Sub, Expr::Lit(I64(x)), Expr::Lit(I64(y))) => i64(x.wrapping_sub(*y)),
                (BinOp::Add | BinOp::Sub, Expr::Binary(inner, p, q), Expr::Lit(I64(c2))) => {
                    match (inner, q.as_ref()) {
                        (BinOp::Add | BinOp::Sub, Expr::Lit(I64(c1))) => {
                            let c1 = if *inner == BinOp::Add { *c1 } else { -c1 };
                            let c2 = if *op == BinOp::Add { *c2 } else { -c2 };
                            offset((**p).clone(), c1 + c2)
                        }
                        _ => binary(*op, a.clone(), b.clone()),
                    }
                }
                // `min(n - 1, n)` (a slice stop clamped to its extent)
                // is `n - 1`: operands a constant apart pick themselves.
                // Only over extents: a shape and a moderate constant cannot
                // overflow, where `max(x + c, x)` of a variable may wrap.
                (BinOp::Min | BinOp::Max, _, _) => {
                    match (extent_arithmetic(&a) && extent_arithmetic(&b))
                        .then(|| linear_difference(&a, &b))
                        .flatten()
                    {
                        Some(d) => {
                            let a_wins = if *op == BinOp::Min { d <= 0 } else { d >= 0 };
                            if a_wins {
                                a
                            } else {
                                b
                            }
                        }
                        None => binary(*op, a, b),
                    }
                }
                _ => binary(*op, a, b),
            })
        }
        _ => None,
    })
}

/// Folds `select(a == b, x, y)` where `a` and `b` are integer literals
/// (what indexing a stacked grid at a constant leaves).
pub fn fold_constant_selects(e: &Expr) -> Expr {
    map_expr(e, &|x| match x {
        Expr::Select(c, a, b) => match c.as_ref() {
            Expr::Cmp(op, l, r) => match (l.as_ref(), r.as_ref()) {
                (Expr::Lit(Literal::I64(l)), Expr::Lit(Literal::I64(r))) => {
                    Some(fold_constant_selects(if op.holds(l, r) { a } else { b }))
                }
                _ => None,
            },
            _ => None,
        },
        _ => None,
    })
}

/// Applies a scalar function to a value: directly to a scalar, element by
/// element to an array (a ufunc).
pub fn map1(v: &Val, f: &mut dyn FnMut(Expr, ScalarType) -> (Expr, ScalarType)) -> Option<Val> {
    Some(match v {
        Val::Scalar(e, t, _) => {
            let (e, t) = f(e.clone(), *t);
            Val::scalar(e, t)
        }
        Val::Array(a) => {
            let (body, t) = f(a.body.clone(), a.elem);
            Val::Array(ArrVal {
                shape: a.shape.clone(),
                elem: t,
                body,
                computed: true,
            })
        }
        Val::Tuple(_) => return None,
    })
}

/// Applies a scalar function of two operands, broadcasting arrays and
/// scalars. `f` gets each operand with its type and weakness.
pub fn map2(
    a: &Val,
    b: &Val,
    f: &mut dyn FnMut(Operand, Operand) -> (Expr, ScalarType),
) -> Option<Val> {
    Some(match (a, b) {
        (Val::Scalar(x, tx, wx), Val::Scalar(y, ty, wy)) => {
            let (e, t) = f((x.clone(), *tx, *wx), (y.clone(), *ty, *wy));
            Val::Scalar(e, t, *wx && *wy)
        }
        (Val::Array(x), Val::Scalar(y, ty, wy)) => {
            let (body, t) = f((x.body.clone(), x.elem, false), (y.clone(), *ty, *wy));
            Val::Array(ArrVal {
                shape: x.shape.clone(),
                elem: t,
                body,
                computed: true,
            })
        }
        (Val::Scalar(x, tx, wx), Val::Array(y)) => {
            let (body, t) = f((x.clone(), *tx, *wx), (y.body.clone(), y.elem, false));
            Val::Array(ArrVal {
                shape: y.shape.clone(),
                elem: t,
                body,
                computed: true,
            })
        }
        (Val::Array(x), Val::Array(y)) => {
            let (shape, bx, by) = broadcast(x, y);
            let (body, t) = f((bx, x.elem, false), (by, y.elem, false));
            Val::Array(ArrVal {
                shape,
                elem: t,
                body,
                computed: true,
            })
        }
        _ => return None,
    })
}

/// Applies a scalar function of three operands (`np.where`, `np.clip`).
pub fn map3(
    a: &Val,
    b: &Val,
    c: &Val,
    f: &mut dyn FnMut(Operand, Operand, Operand) -> (Expr, ScalarType),
) -> Option<Val> {
    let parts = [a, b, c];
    let arrays: Vec<&ArrVal> = parts
        .iter()
        .filter_map(|v| match v {
            Val::Array(x) => Some(x),
            _ => None,
        })
        .collect();
    let r = arrays.iter().map(|x| x.ndim()).max().unwrap_or(0);
    let mut ops = Vec::new();
    for v in parts {
        ops.push(match v {
            Val::Scalar(e, t, w) => (e.clone(), *t, *w),
            Val::Array(x) => (x.body_in(r), x.elem, false),
            Val::Tuple(_) => return None,
        });
    }
    let [x, y, z]: [Operand; 3] = ops.try_into().ok()?;
    let (body, t) = f(x, y, z);
    Some(if arrays.is_empty() {
        Val::scalar(body, t)
    } else {
        Val::Array(ArrVal {
            shape: broadcast_shape(&arrays),
            elem: t,
            body,
            computed: true,
        })
    })
}

/// The shape of arrays broadcast together (right-aligned): along each
/// axis the first extent that is not a literal 1, else 1 — the rule of
/// [`broadcast`], for any number of operands.
pub fn broadcast_shape(arrays: &[&ArrVal]) -> Vec<Expr> {
    let r = arrays.iter().map(|a| a.ndim()).max().unwrap_or(0);
    let one = i64(1);
    (0..r)
        .map(|k| {
            arrays
                .iter()
                .filter_map(|a| (k + a.ndim()).checked_sub(r).map(|j| &a.shape[j]))
                .find(|e| **e != one)
                .cloned()
                .unwrap_or_else(|| one.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use port_codegen::ir::ScalarType::F64;

    fn arr2() -> ArrVal {
        ArrVal::named(
            "x",
            ArrayType {
                elem: F64,
                ndim: 2,
                contiguous: true,
            },
        )
    }

    #[test]
    fn row_view_and_element() {
        let Val::Array(row) = index(&arr2(), vec![IndexItem::At(var("i"))]) else {
            panic!()
        };
        assert_eq!(row.ndim(), 1);
        assert_eq!(
            row.element(&[var("j")]),
            load("x", vec![var("i"), var("j")])
        );
        assert!(row.view_target().is_some());
        let s = index(
            &arr2(),
            vec![IndexItem::At(var("i")), IndexItem::At(var("j"))],
        );
        assert!(matches!(s, Val::Scalar(..)));
    }

    #[test]
    fn transpose_swaps_indices() {
        let t = arr2().transpose();
        assert_eq!(
            t.element(&[var("a"), var("b")]),
            load("x", vec![var("b"), var("a")])
        );
    }

    #[test]
    fn broadcasting_is_right_aligned() {
        let Val::Array(row) = index(&arr2(), vec![IndexItem::At(i64(0))]) else {
            panic!()
        };
        let (shape, a, b) = broadcast(&arr2(), &row);
        assert_eq!(shape.len(), 2);
        assert_eq!(a, load("x", vec![var("__e0"), var("__e1")]));
        assert_eq!(b, load("x", vec![i64(0), var("__e1")]));
    }

    #[test]
    fn index_arithmetic_is_folded() {
        let n = shape("x", 0);
        assert_eq!(
            tidy(&sub(sub(n.clone(), i64(1)), i64(1))),
            sub(n.clone(), i64(2))
        );
        assert_eq!(tidy(&add(sub(n.clone(), i64(1)), i64(1))), n);
        assert_eq!(tidy(&mul(add(var("i"), i64(0)), i64(1))), var("i"));
        // `x[1:-1]`: its stop clamped to the extent, then the start taken off.
        let stop = binary(BinOp::Min, add(n.clone(), i64(-1)), n.clone());
        assert_eq!(tidy(&sub(stop, i64(1))), sub(n.clone(), i64(2)));
        assert_eq!(
            tidy(&binary(BinOp::Max, add(n.clone(), i64(3)), n.clone())),
            add(n.clone(), i64(3))
        );
        // Two unknowns stay a min.
        let m = shape("y", 0);
        let both = binary(BinOp::Min, n.clone(), m.clone());
        assert_eq!(tidy(&both), both);
    }

    #[test]
    fn aliasing_is_detected() {
        let t = elem("x", vec![var("i")]);
        let vars = ["i".to_string()];
        assert!(reads_fixed_apart(
            &t,
            &add(load("x", vec![var("i")]), f64(1.0)),
            &vars
        ));
        assert!(!reads_fixed_apart(
            &t,
            &load("x", vec![sub(var("i"), i64(1))]),
            &vars
        ));
        // `d[:, k] = d[:, k] - d[:, k - 1]`: `k - 1` counts from the end
        // when negative, so the planes may be one (one plane in all), and
        // then each element reads itself; a reversed read of that plane
        // would read what other elements wrote.
        let n = shape("d", 1);
        let t = elem("d", vec![var("i"), var("k")]);
        let prev = wrap(sub(var("k"), i64(1)), n.clone());
        assert!(reads_fixed_apart(
            &t,
            &load("d", vec![var("i"), prev.clone()]),
            &vars
        ));
        let reversed = sub(sub(shape("d", 0), i64(1)), var("i"));
        assert!(!reads_fixed_apart(
            &t,
            &load("d", vec![reversed, prev]),
            &vars
        ));
    }
}
