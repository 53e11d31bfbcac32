//! The types `port analyze` plans a function with when no real call was
//! captured: read from how the body uses each parameter.
//!
//! - an argument that is subscripted, has `.shape`/`.T`/array methods, is
//!   iterated over or is an operand of `@` is an array; its rank is the
//!   most indices it is given (`A[i, j]`, `A[i][j]`), `.shape[k]` (rank
//!   above `k`) or the names unpacked from `.shape` (the matrix of an
//!   `np.linalg` call has at least 2); without any of these, a
//!   capitalised name is taken as a matrix (`A`, `B`: the linear-algebra
//!   convention) and any other as a vector;
//! - an array whose elements index other arrays (`x[col[i]]`, `range(row[i],
//!   …)`) holds `int64`, one a value with a complex literal is stored into
//!   (`psi[1:-1] = … 1j …`) `complex128`, any other `float64`;
//! - a scalar used as a bound (`range(n)`), an index, a size or a slice
//!   bound is `int64`, any other `float64` (a constant default decides
//!   first);
//! - an annotation decides array or number where it is one of NumPy's or
//!   Python's (`x: np.ndarray`, `k: npt.NDArray[np.int64]`, `scale:
//!   float`, as a string too), except that indexing a parameter annotated
//!   as a number still makes it an array.

use std::collections::HashMap;

use port_codegen::ir::{ArrayType, ScalarType, MAX_DIMS};
use rustpython_parser::ast::{self, Constant, Expr, Stmt};

use crate::error::RewriteError;
use crate::numba_declared::numba_declared;
use crate::pyast::{keyword, stmt_exprs, walk_expr, walk_stmts};
use crate::types::ArgType;

const ARRAY_ATTRS: &[&str] = &[
    "shape",
    "size",
    "ndim",
    "T",
    "dtype",
    "copy",
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "std",
    "var",
    "argmax",
    "argmin",
    "reshape",
    "ravel",
    "flatten",
    "transpose",
    "fill",
    "astype",
    "any",
    "all",
    "dot",
    "cumsum",
    "flat",
    "real",
    "imag",
    "conj",
    "item",
];

#[derive(Default, Clone, Copy)]
struct Use {
    array: bool,
    ndim: u8,
    index_elems: bool,
    int: bool,
    /// A complex value is stored into its elements (`psi[1:-1] = … 1j …`).
    complex: bool,
}

impl Use {
    /// What a callee's use of its parameter says of the argument passed.
    fn merge(&mut self, theirs: &Use) {
        if theirs.array {
            self.array = true;
            self.ndim = self.ndim.max(theirs.ndim);
            self.index_elems |= theirs.index_elems;
            self.complex |= theirs.complex;
        } else if theirs.int && !self.array {
            self.int = true;
        }
    }
}

/// One type per parameter of `function` in `source`, as described above.
pub fn assumed_types(
    source: &str,
    file_name: &str,
    function: &str,
) -> Result<Vec<ArgType>, RewriteError> {
    let src = crate::source::SourceFile::parse(file_name, source)?;
    Ok(assumed_types_parsed(&src, function)?.1)
}

/// The parameter names and [`assumed_types`] of `function` in a parsed file.
pub fn assumed_types_parsed(
    src: &crate::source::SourceFile,
    function: &str,
) -> Result<(Vec<String>, Vec<ArgType>), RewriteError> {
    let sites = crate::call_types::CallSites::of(src);
    let (names, types, _) = static_types(src, function, &sites)?;
    Ok((names, types))
}

/// Where the types of [`static_types`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticSource {
    /// Every one from the program's own calls of the function (the line of
    /// the first such call).
    Calls(u32),
    /// Some from the calls (the line of the first), the rest read from the
    /// body.
    Partly(u32),
    /// All read from how the body uses each parameter.
    Body,
    /// The function's own eager Numba signature ([`numba_declared`]).
    Declared,
}

impl StaticSource {
    /// The name `migration_plan.types_from` and `arg_types[].from` use.
    pub fn as_str(self) -> &'static str {
        match self {
            StaticSource::Calls(_) => "calls",
            StaticSource::Partly(_) => "calls+assumed",
            StaticSource::Body => "assumed",
            StaticSource::Declared => "numba",
        }
    }
}

/// The types to plan `function` with when no call was captured and none
/// were given: a parameter's type at the program's own calls of the
/// function ([`crate::call_types`]) when one gives it, else the one its use
/// in the body implies (as described above).
/// `sites` are the file's calls ([`crate::call_types::CallSites::of`],
/// read once per file).
pub fn static_types(
    src: &crate::source::SourceFile,
    function: &str,
    sites: &crate::call_types::CallSites,
) -> Result<(Vec<String>, Vec<ArgType>, StaticSource), RewriteError> {
    let bare = function.rsplit('.').next().unwrap_or(function);
    static_types_keyed(src, function, sites, bare)
}

/// How many of `function`'s last parameters the types read from its body
/// leave to their defaults: those with a number as their default that the
/// body uses where NumPy needs a constant (`axis=axis`, `x.shape[axis]`),
/// as in `def num_zerocross(x, normalize=False, axis=-1)`, and those
/// defaulting to `None` that it passes as a `dtype=`. `typed` says
/// which parameters something better than the body (the program's calls,
/// a constant they pass) already gives; the count stops at the first of
/// those from the end. The plan is then specialised to the defaults, and
/// its wrapper runs the original for other values, as when a signature
/// leaves them out.
pub fn axes_left_to_defaults(
    src: &crate::source::SourceFile,
    function: &str,
    typed: &[bool],
) -> usize {
    let Ok(found) = crate::source::find(src, function) else {
        return 0;
    };
    let def = found.def;
    let mut axes: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut dtypes: std::collections::HashSet<&str> = std::collections::HashSet::new();
    walk_stmts(&def.body, &mut |s: &Stmt| {
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x: &Expr| match x {
                Expr::Call(c) => {
                    axes.extend(keyword(c, "axis").and_then(name_of));
                    dtypes.extend(keyword(c, "dtype").and_then(name_of));
                }
                Expr::Subscript(sub) => {
                    if let (Some(_), Some(n)) = (shape_of(&sub.value), name_of(&sub.slice)) {
                        axes.insert(n);
                    }
                }
                _ => {}
            });
        }
    });
    let rebound = crate::pyast::names_rebound(&def.body);
    def.args
        .args
        .iter()
        .zip(typed)
        .rev()
        .take_while(|(a, typed)| {
            let n = a.def.arg.as_str();
            let default = a.default.as_deref();
            // An axis with an int default, or a dtype defaulting to None
            // (`def create(normal=None, distance=0.0, dtype=None)`): no
            // number a body typing could give it means what it means.
            let axis =
                axes.contains(n) && default.and_then(number_default) == Some(ScalarType::I64);
            let dtype = dtypes.contains(n) && default.is_some_and(crate::pyast::is_none_constant);
            !**typed && (axis || dtype) && !rebound.contains(n)
        })
        .count()
}

/// [`static_types`] with the function's key in `sites` given
/// ([`crate::call_types::CallSites::key`]: its module and bare name, when
/// the sites are a whole program's).
pub fn static_types_keyed(
    src: &crate::source::SourceFile,
    function: &str,
    sites: &crate::call_types::CallSites,
    key: &str,
) -> Result<(Vec<String>, Vec<ArgType>, StaticSource), RewriteError> {
    let found = crate::source::find(src, function)?;
    if let Some(types) = numba_declared(src, found.def) {
        let names = crate::pyast::positional_params(&found.def.args);
        return Ok((names, types, StaticSource::Declared));
    }
    let (names, body) = body_types(src, function)?;
    let (at_calls, line) = sites.types(key, &names);
    let from_calls = at_calls.iter().any(Option::is_some);
    let all_from_calls = at_calls.iter().all(Option::is_some);
    let types = body
        .into_iter()
        .zip(at_calls)
        .map(|(b, c)| c.unwrap_or(b))
        .collect();
    let source = match (from_calls, all_from_calls, line) {
        (true, true, Some(l)) => StaticSource::Calls(l),
        (true, false, Some(l)) => StaticSource::Partly(l),
        _ => StaticSource::Body,
    };
    Ok((names, types, source))
}

/// The types of `function`'s parameters from their use in its body alone.
fn body_types(
    src: &crate::source::SourceFile,
    function: &str,
) -> Result<(Vec<String>, Vec<ArgType>), RewriteError> {
    // The helpers it imports from modules beside the file use the
    // arguments passed to them as the file's own helpers do.
    let joined = crate::siblings::with_sibling_helpers(src, function);
    let src = joined.as_deref().unwrap_or(src);
    let found = crate::source::find(src, function)?;
    let def = found.def;
    let names = crate::pyast::positional_params(&def.args);
    let uses = param_uses(
        src,
        def,
        &mut vec![function.to_string()],
        &mut HashMap::new(),
    );
    let defaults: HashMap<&str, &Expr> = def
        .args
        .args
        .iter()
        .filter_map(|a| a.default.as_deref().map(|d| (a.def.arg.as_str(), d)))
        .collect();
    let annotated: HashMap<&str, Annotated> = def
        .args
        .args
        .iter()
        .filter_map(|a| {
            let ann = a.def.annotation.as_deref()?;
            Some((a.def.arg.as_str(), annotated(src, ann)?))
        })
        .collect();
    let types = names
        .iter()
        .map(|n| {
            let mut u = uses.get(n.as_str()).copied().unwrap_or_default();
            // What the author wrote (`x: np.ndarray`, `scale: float`) says
            // array or number where the body alone cannot (`y = x - loc`
            // handed to a helper); an index into a parameter annotated as
            // a number still says array.
            match annotated.get(n.as_str()) {
                Some(Annotated::Array(elem)) => {
                    u.array = true;
                    match elem {
                        Some(ScalarType::I64) => u.index_elems = true,
                        Some(ScalarType::C128) => u.complex = true,
                        _ => {}
                    }
                }
                Some(Annotated::Number(t)) if !(u.array && u.ndim > 0) => {
                    return ArgType::Scalar(*t);
                }
                _ => {}
            }
            let by_default = defaults.get(n.as_str()).and_then(|d| number_default(d));
            // A number as the default (`base=2`) says the parameter is a
            // number, though the body passes it to NumPy (`np.log(base)`);
            // only indexing it (`w[i]`, `w.shape[0]`) says otherwise.
            if u.array && (by_default.is_none() || u.ndim > 0) {
                let guessed = if n.starts_with(|c: char| c.is_ascii_uppercase()) {
                    2
                } else {
                    1
                };
                let ndim = if u.ndim == 0 {
                    guessed
                } else {
                    u.ndim.min(MAX_DIMS)
                };
                ArgType::Array(ArrayType {
                    elem: if u.index_elems {
                        ScalarType::I64
                    } else if u.complex {
                        ScalarType::C128
                    } else {
                        ScalarType::F64
                    },
                    ndim,
                    contiguous: false,
                })
            } else {
                ArgType::Scalar(by_default.unwrap_or(if u.int {
                    ScalarType::I64
                } else {
                    ScalarType::F64
                }))
            }
        })
        .collect();
    Ok((names, types))
}

/// What a parameter's annotation says of it.
enum Annotated {
    /// `np.ndarray`, `npt.NDArray[np.int64]`: an array, of that element
    /// type when the annotation names one.
    Array(Option<ScalarType>),
    /// `float`, `int`, `bool`, `complex`, `np.float32`: a number.
    Number(ScalarType),
}

/// An annotation read as [`Annotated`] (a string annotation too, as
/// `from __future__ import annotations` leaves them); `None` for anything
/// else (`ArrayLike`, a union, a class of the program's).
fn annotated(src: &crate::source::SourceFile, ann: &Expr) -> Option<Annotated> {
    if let Expr::Constant(c) = ann {
        if let Constant::Str(text) = &c.value {
            let parsed =
                rustpython_parser::parse(text, rustpython_parser::Mode::Expression, "<annotation>")
                    .ok()?;
            let ast::Mod::Expression(e) = parsed else {
                return None;
            };
            return annotated(src, &e.body);
        }
    }
    if let Expr::Subscript(sub) = ann {
        // `npt.NDArray[np.float64]`, `NDArray[np.int64]`.
        let base = src.resolve(&sub.value)?;
        if !matches!(base.as_str(), "numpy.typing.NDArray" | "numpy.ndarray") {
            return None;
        }
        let elem = match sub.slice.as_ref() {
            Expr::Tuple(_) => None,
            e => src
                .resolve(e)
                .and_then(|n| crate::types::scalar_from_name(n.rsplit('.').next()?)),
        };
        return Some(Annotated::Array(elem));
    }
    let name = src.resolve(ann)?;
    match name.as_str() {
        "numpy.ndarray" | "numpy.typing.NDArray" => Some(Annotated::Array(None)),
        "float" | "int" | "bool" | "complex" => {
            crate::types::scalar_from_name(&name).map(Annotated::Number)
        }
        n => n
            .strip_prefix("numpy.")
            .filter(|short| !short.contains('.'))
            .and_then(crate::types::scalar_from_name)
            .map(Annotated::Number),
    }
}

/// The type of a default that is a number (`2`, `-1`, `0.5`, `True`).
fn number_default(d: &Expr) -> Option<ScalarType> {
    match d {
        Expr::Constant(c) => match c.value {
            Constant::Int(_) => Some(ScalarType::I64),
            Constant::Float(_) => Some(ScalarType::F64),
            Constant::Bool(_) => Some(ScalarType::Bool),
            _ => None,
        },
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub | ast::UnaryOp::UAdd) => {
            number_default(&u.operand).filter(|t| *t != ScalarType::Bool)
        }
        _ => None,
    }
}

/// How deep calls of the program's own functions are followed.
const MAX_CALL_DEPTH: usize = 4;

/// How the body of `def` uses each of its parameters, calls of the file's
/// own functions included: a parameter passed on to one (`conv2d(input,
/// weights)`) is used as that function uses its parameter (`weights.shape`
/// there makes `weights` an array here). `stack` holds the functions being
/// read, so recursion stops.
fn param_uses(
    src: &crate::source::SourceFile,
    def: &ast::StmtFunctionDef,
    stack: &mut Vec<String>,
    // Each callee's uses, read once per planned function (a helper called
    // from many places is not read again for each).
    memo: &mut HashMap<String, HashMap<String, Use>>,
) -> HashMap<String, Use> {
    let names = crate::pyast::positional_params(&def.args);
    let mut uses: HashMap<&str, Use> = names.iter().map(|n| (n.as_str(), Use::default())).collect();
    walk_stmts(&def.body, &mut |s: &Stmt| {
        if let Stmt::Assign(a) = s {
            // `n, m = A.shape`, `n, m = np.shape(A)`
            if let (Some(Expr::Tuple(t)), Some(base)) = (a.targets.first(), shape_of(&a.value)) {
                if let Some(u) = name_of(base).and_then(|n| uses.get_mut(n)) {
                    u.array = true;
                    u.ndim = u.ndim.max(t.elts.len() as u8);
                }
            }
        }
        // `psi[1:-1] = psi[1:-1] + 1j * dt * …`: a store of a value with a
        // complex literal in it makes the array complex (NumPy refuses to
        // store complex values into a float array).
        let stores: Vec<(&Expr, &Expr)> = match s {
            Stmt::Assign(a) => a.targets.iter().map(|t| (t, a.value.as_ref())).collect(),
            Stmt::AugAssign(a) => vec![(a.target.as_ref(), a.value.as_ref())],
            _ => vec![],
        };
        for (target, value) in stores {
            // `A[:] = np.reshape(…, (NR, NQ, NP))`: an array takes, whole, a
            // value of the rank the shape gives.
            if let (Expr::Subscript(sub), Some(rank)) = (target, reshaped_rank(value)) {
                let whole = matches!(sub.slice.as_ref(), Expr::Slice(sl)
                    if sl.lower.is_none() && sl.upper.is_none() && sl.step.is_none())
                    || matches!(sub.slice.as_ref(), Expr::Constant(c) if matches!(c.value, Constant::Ellipsis));
                if let (true, Some(u)) = (whole, name_of(&sub.value).and_then(|n| uses.get_mut(n)))
                {
                    u.array = true;
                    u.ndim = u.ndim.max(rank);
                }
            }
            if let Expr::Subscript(sub) = target {
                let mut complex = false;
                walk_expr(value, &mut |x: &Expr| {
                    complex |= matches!(x, Expr::Constant(c) if matches!(c.value, Constant::Complex { .. }));
                });
                if let (true, Some(u)) =
                    (complex, name_of(&sub.value).and_then(|n| uses.get_mut(n)))
                {
                    u.complex = true;
                }
            }
        }
        if let Stmt::AugAssign(a) = s {
            if is_bitwise(a.op) {
                mark_bitwise(&a.target, &mut uses);
                mark_bitwise(&a.value, &mut uses);
            }
        }
        if let Stmt::For(f) = s {
            if let Some(u) = name_of(&f.iter).and_then(|n| uses.get_mut(n)) {
                u.array = true;
                u.ndim = u.ndim.max(1);
            }
        }
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x: &Expr| observe(src, x, &mut uses));
        }
    });
    // `assert np.size(r) == 1` (or `np.ndim(r) == 0`, `np.isscalar(r)`):
    // the function says `r` is a number, whatever NumPy call it is given
    // to, unless the body indexes it.
    walk_stmts(&def.body, &mut |s: &Stmt| {
        let Stmt::Assert(a) = s else { return };
        let mut tests: Vec<&Expr> = vec![a.test.as_ref()];
        if let Expr::BoolOp(b) = a.test.as_ref() {
            if b.op == ast::BoolOp::And {
                tests = b.values.iter().collect();
            }
        }
        for t in tests {
            if let Some(u) = asserted_scalar(t).and_then(|n| uses.get_mut(n)) {
                if u.ndim == 0 && !u.index_elems {
                    u.array = false;
                }
            }
        }
    });
    // A local bound to a slice of a parameter (`cols = A_col[a:b]`) and
    // used as an index (`x[cols]`) makes the parameter's elements indices.
    let mut slices_of: HashMap<String, &str> = HashMap::new();
    // Names on either side of `@`.
    let mut matmul_operands: Vec<String> = Vec::new();
    walk_stmts(&def.body, &mut |s: &Stmt| {
        if let Stmt::Assign(a) = s {
            if let ([Expr::Name(t)], Expr::Subscript(sub)) =
                (a.targets.as_slice(), a.value.as_ref())
            {
                if let Some(p) = name_of(&sub.value).and_then(|n| names.iter().find(|x| *x == n)) {
                    slices_of.insert(t.id.to_string(), p.as_str());
                }
            }
        }
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x: &Expr| match x {
                Expr::BinOp(b) if b.op == ast::Operator::MatMult => {
                    for side in [&b.left, &b.right] {
                        matmul_operands.extend(name_of(side).map(str::to_string));
                    }
                }
                _ => {}
            });
        }
    });
    walk_stmts(&def.body, &mut |s: &Stmt| {
        for e in stmt_exprs(s) {
            walk_expr(e, &mut |x: &Expr| {
                if let Expr::Subscript(sub) = x {
                    if let Some(p) = name_of(&sub.slice).and_then(|n| slices_of.get(n)) {
                        if let Some(u) = uses.get_mut(p) {
                            u.array = true;
                            u.index_elems = true;
                        }
                    }
                }
            });
        }
    });
    // `x = relu(input @ w1 + b1)` with `x` an operand of `@` later: the
    // product is an array, so its operands are not two vectors (whose
    // product is a number): the right one, the weights by the usual
    // convention, is a matrix, unless the left one already is.
    walk_stmts(&def.body, &mut |s: &Stmt| {
        let Stmt::Assign(a) = s else { return };
        let [Expr::Name(t)] = a.targets.as_slice() else {
            return;
        };
        if !matmul_operands.iter().any(|m| m == t.id.as_str()) {
            return;
        }
        walk_expr(&a.value, &mut |x: &Expr| {
            let Expr::BinOp(b) = x else { return };
            if b.op != ast::Operator::MatMult {
                return;
            }
            let left_matrix = name_of(&b.left)
                .and_then(|n| uses.get(n))
                .is_some_and(|u| u.ndim >= 2);
            if let (false, Some(u)) = (left_matrix, name_of(&b.right).and_then(|n| uses.get_mut(n)))
            {
                u.array = true;
                u.ndim = u.ndim.max(2);
            }
        });
    });
    // In a function on stacks of matrices (a parameter of 3 or more
    // dimensions), the operands of `@` are matrices too.
    if uses.values().any(|u| u.array && u.ndim >= 3) {
        for n in &matmul_operands {
            if let Some(u) = uses.get_mut(n.as_str()) {
                u.array = true;
                u.ndim = u.ndim.max(2);
            }
        }
    }
    // Parameters passed on to the file's own functions.
    if stack.len() < MAX_CALL_DEPTH {
        let mut calls: Vec<&ast::ExprCall> = Vec::new();
        walk_stmts(&def.body, &mut |s: &Stmt| {
            for e in stmt_exprs(s) {
                walk_expr(e, &mut |x: &Expr| {
                    if let Expr::Call(c) = x {
                        let passes_a_parameter = c
                            .args
                            .iter()
                            .chain(c.keywords.iter().map(|k| &k.value))
                            .any(|a| {
                                let a = match a {
                                    Expr::Subscript(sub) => sub.value.as_ref(),
                                    a => a,
                                };
                                name_of(a).is_some_and(|n| uses.contains_key(n))
                            });
                        if matches!(c.func.as_ref(), Expr::Name(_)) && passes_a_parameter {
                            calls.push(c);
                        }
                    }
                });
            }
        });
        for c in calls {
            let Expr::Name(f) = c.func.as_ref() else {
                continue;
            };
            let callee = f.id.as_str();
            if stack.iter().any(|s| s == callee) {
                continue;
            }
            let Some(found) = src
                .functions_named(callee)
                .into_iter()
                .find(|g| g.qualname == callee)
            else {
                continue;
            };
            let params = crate::pyast::positional_params(&found.def.args);
            let theirs = match memo.get(callee) {
                Some(t) => t.clone(),
                None => {
                    stack.push(callee.to_string());
                    let t = param_uses(src, found.def, stack, memo);
                    stack.pop();
                    memo.insert(callee.to_string(), t.clone());
                    t
                }
            };
            let passed = c
                .args
                .iter()
                .enumerate()
                .filter_map(|(k, a)| Some((params.get(k)?.as_str(), a)))
                .chain(
                    c.keywords
                        .iter()
                        .filter_map(|k| Some((k.arg.as_ref()?.as_str(), &k.value))),
                );
            for (param, arg) in passed {
                let Some(t) = theirs.get(param) else { continue };
                if let Some(u) = name_of(arg).and_then(|n| uses.get_mut(n)) {
                    u.merge(t);
                    continue;
                }
                // `fit(rows[r])` with `fit` using its parameter as a
                // vector: `rows` has one more axis per integer index.
                let Expr::Subscript(sub) = arg else { continue };
                let indices = match sub.slice.as_ref() {
                    Expr::Tuple(t) => t.elts.iter().collect::<Vec<_>>(),
                    one => vec![one],
                };
                if !t.array || indices.iter().any(|i| matches!(i, Expr::Slice(_))) {
                    continue;
                }
                if let Some(u) = name_of(&sub.value).and_then(|n| uses.get_mut(n)) {
                    u.array = true;
                    u.ndim = u.ndim.max(t.ndim.max(1) + indices.len() as u8);
                    u.complex |= t.complex;
                }
            }
        }
    }
    uses.into_iter().map(|(k, u)| (k.to_string(), u)).collect()
}

/// The rank of `np.reshape(a, (n, m, …))` or `a.reshape(n, m, …)`.
fn reshaped_rank(e: &Expr) -> Option<u8> {
    let Expr::Call(c) = e else { return None };
    let Expr::Attribute(f) = c.func.as_ref() else {
        return None;
    };
    if f.attr.as_str() != "reshape" {
        return None;
    }
    let shape = if is_numpy(&f.value) {
        argument(c, 1, "newshape")?
    } else if c.args.len() == 1 {
        &c.args[0]
    } else {
        return Some(c.args.len() as u8);
    };
    match shape {
        Expr::Tuple(t) => Some(t.elts.len() as u8),
        _ => None,
    }
}

/// A call's argument given at position `k` or as the keyword `name`.
/// The operands of `c` whose rank its constant arguments give, with that
/// rank ([`uses_in`]'s rule for `transpose`, `swapaxes` and `einsum`).
fn ranks_spelled_out<'a>(
    c: &'a ast::ExprCall,
    callee: &str,
    on_numpy: bool,
) -> Vec<(&'a Expr, u8)> {
    let method_of = match c.func.as_ref() {
        Expr::Attribute(a) if !on_numpy => Some(a.value.as_ref()),
        _ => None,
    };
    // The axes as given: one tuple, or (for the method) spread out.
    let axes_of = |given: &'a [Expr]| -> Option<Vec<i64>> {
        match given {
            [Expr::Tuple(t)] => t.elts.iter().map(const_int).collect(),
            [Expr::List(l)] => l.elts.iter().map(const_int).collect(),
            more => more.iter().map(const_int).collect(),
        }
    };
    let rank = |n: i64| {
        u8::try_from(n)
            .ok()
            .filter(|r| (2..=port_codegen::ir::MAX_DIMS).contains(r))
    };
    match (callee, method_of) {
        ("transpose", Some(x)) if !c.args.is_empty() => {
            let axes = axes_of(&c.args).unwrap_or_default();
            rank(axes.len() as i64)
                .map(|r| (x, r))
                .into_iter()
                .collect()
        }
        ("transpose", None) if on_numpy && c.args.len() == 2 => {
            let axes = axes_of(&c.args[1..]).unwrap_or_default();
            rank(axes.len() as i64)
                .map(|r| (&c.args[0], r))
                .into_iter()
                .collect()
        }
        ("swapaxes", Some(x)) if c.args.len() == 2 => {
            let top = c
                .args
                .iter()
                .filter_map(const_int)
                .filter(|k| *k >= 0)
                .max();
            top.and_then(|k| rank(k + 1))
                .map(|r| (x, r))
                .into_iter()
                .collect()
        }
        ("einsum", None) if on_numpy => {
            let Some(Expr::Constant(k)) = c.args.first() else {
                return Vec::new();
            };
            let Constant::Str(spec) = &k.value else {
                return Vec::new();
            };
            let inputs = spec.split("->").next().unwrap_or_default();
            if inputs.contains('.') {
                return Vec::new();
            }
            inputs
                .split(',')
                .zip(&c.args[1..])
                .filter_map(|(term, x)| {
                    let letters = term.chars().filter(|ch| ch.is_ascii_alphabetic()).count();
                    rank(letters as i64).map(|r| (x, r))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn argument<'a>(c: &'a ast::ExprCall, k: usize, name: &str) -> Option<&'a Expr> {
    c.args.get(k).or_else(|| keyword(c, name))
}

fn const_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Constant(c) => match &c.value {
            Constant::Int(i) => i.try_into().ok(),
            _ => None,
        },
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::USub => const_int(&u.operand).map(|v| -v),
        _ => None,
    }
}

fn is_bitwise(op: ast::Operator) -> bool {
    matches!(
        op,
        ast::Operator::BitXor
            | ast::Operator::BitAnd
            | ast::Operator::BitOr
            | ast::Operator::LShift
            | ast::Operator::RShift
    )
}

/// An operand of a bitwise operator holds integers: a scalar parameter is
/// an `int64`, a subscripted one an array of them.
fn mark_bitwise(e: &Expr, uses: &mut HashMap<&str, Use>) {
    match e {
        Expr::Name(n) => {
            if let Some(u) = uses.get_mut(n.id.as_str()) {
                if !u.array {
                    u.int = true;
                }
            }
        }
        Expr::Subscript(s) => {
            if let Some(u) = name_of(&s.value).and_then(|n| uses.get_mut(n)) {
                u.index_elems = true;
            }
        }
        _ => {}
    }
}

/// `np`, `numpy`, `np.linalg`, …
fn is_numpy(e: &Expr) -> bool {
    match e {
        Expr::Name(n) => n.id.as_str() == "np" || n.id.as_str() == "numpy",
        Expr::Attribute(a) => is_numpy(&a.value),
        _ => false,
    }
}

fn name_of(e: &Expr) -> Option<&str> {
    match e {
        Expr::Name(n) => Some(n.id.as_str()),
        _ => None,
    }
}

/// Marks every parameter named directly in `e` (not under a subscript) as
/// used where an integer belongs.
fn mark_int(e: &Expr, uses: &mut HashMap<&str, Use>) {
    walk_expr(e, &mut |x: &Expr| match x {
        Expr::Name(n) => {
            if let Some(u) = uses.get_mut(n.id.as_str()) {
                if !u.array {
                    u.int = true;
                }
            }
        }
        Expr::Subscript(s) => {
            if let Some(u) = name_of(&s.value).and_then(|n| uses.get_mut(n)) {
                u.index_elems = true;
            }
        }
        _ => {}
    });
}

/// `x` of `x.shape` or `np.shape(x)`: the two spellings of one tuple.
fn shape_of(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Attribute(a) if a.attr.as_str() == "shape" => Some(&a.value),
        Expr::Call(c) if c.args.len() == 1 && c.keywords.is_empty() => match c.func.as_ref() {
            Expr::Attribute(f) if f.attr.as_str() == "shape" && is_numpy(&f.value) => {
                c.args.first()
            }
            _ => None,
        },
        _ => None,
    }
}

/// The parameter a test says is a number: `np.size(p) == 1`,
/// `np.ndim(p) == 0`, `np.isscalar(p)`.
fn asserted_scalar(t: &Expr) -> Option<&str> {
    fn call_of<'e>(e: &'e Expr, f: &str) -> Option<&'e str> {
        let Expr::Call(c) = e else { return None };
        let Expr::Attribute(a) = c.func.as_ref() else {
            return None;
        };
        (is_numpy(&a.value) && a.attr.as_str() == f && c.args.len() == 1)
            .then(|| name_of(&c.args[0]))
            .flatten()
    }
    if let Some(n) = call_of(t, "isscalar") {
        return Some(n);
    }
    let Expr::Compare(c) = t else { return None };
    let ([ast::CmpOp::Eq], [rhs]) = (c.ops.as_slice(), c.comparators.as_slice()) else {
        return None;
    };
    match const_int(rhs) {
        Some(1) => call_of(&c.left, "size"),
        Some(0) => call_of(&c.left, "ndim"),
        _ => None,
    }
}

fn observe(src: &crate::source::SourceFile, x: &Expr, uses: &mut HashMap<&str, Use>) {
    match x {
        Expr::Subscript(s) => {
            // The chain `A[i][j]`: its depth plus the indices at its root.
            let mut depth = 0u8;
            let mut base = x;
            let mut root_slice: &Expr = &s.slice;
            while let Expr::Subscript(inner) = base {
                depth += 1;
                root_slice = &inner.slice;
                base = &inner.value;
            }
            let n_idx = match root_slice {
                Expr::Tuple(t) => {
                    if t.elts.iter().any(
                        |e| matches!(e, Expr::Constant(c) if matches!(c.value, Constant::Ellipsis)),
                    ) {
                        0
                    } else {
                        t.elts
                            .iter()
                            .filter(|e| {
                                // `None` and `np.newaxis` add a dimension to the view, not to the array.
                                !matches!(e, Expr::Constant(c) if matches!(c.value, Constant::None))
                                    && !matches!(e, Expr::Attribute(a) if a.attr.as_str() == "newaxis")
                            })
                            .count() as u8
                    }
                }
                // `C[:] = …`, `x[...]`: the whole array, whatever its rank.
                Expr::Slice(sl)
                    if sl.lower.is_none() && sl.upper.is_none() && sl.step.is_none() =>
                {
                    0
                }
                Expr::Constant(c) if matches!(c.value, Constant::Ellipsis) => 0,
                _ => 1,
            };
            if let Some(u) = name_of(base).and_then(|n| uses.get_mut(n)) {
                u.array = true;
                if n_idx > 0 {
                    u.ndim = u.ndim.max(n_idx + depth - 1);
                }
            }
            // `A.shape[k]`, `np.shape(A)[k]`
            if let (Some(base), Expr::Constant(c)) = (shape_of(&s.value), s.slice.as_ref()) {
                if let (Some(u), Constant::Int(k)) =
                    (name_of(base).and_then(|n| uses.get_mut(n)), &c.value)
                {
                    let k: u8 = k.try_into().unwrap_or(0);
                    u.array = true;
                    u.ndim = u.ndim.max(k + 1);
                }
            }
            // Indices and slice bounds are integers.
            let idx: Vec<&Expr> = match s.slice.as_ref() {
                Expr::Tuple(t) => t.elts.iter().collect(),
                e => vec![e],
            };
            for i in idx {
                match i {
                    Expr::Slice(sl) => {
                        for b in [&sl.lower, &sl.upper, &sl.step].into_iter().flatten() {
                            mark_int(b, uses);
                        }
                    }
                    e => mark_int(e, uses),
                }
            }
        }
        Expr::Attribute(a) if ARRAY_ATTRS.contains(&a.attr.as_str()) => {
            if let Some(u) = name_of(&a.value).and_then(|n| uses.get_mut(n)) {
                u.array = true;
                if a.attr.as_str() == "T" {
                    u.ndim = u.ndim.max(2);
                }
            }
        }
        Expr::BinOp(b) if is_bitwise(b.op) => {
            for side in [&b.left, &b.right] {
                mark_bitwise(side, uses);
            }
        }
        Expr::BinOp(b) if b.op == ast::Operator::MatMult => {
            // `alpha * A @ B` parses as `(alpha * A) @ B`: the operand next
            // to `@` on each side is the array.
            let mut left: &Expr = &b.left;
            while let Expr::BinOp(l) = left {
                left = &l.right;
            }
            let mut right: &Expr = &b.right;
            while let Expr::BinOp(r) = right {
                right = &r.left;
            }
            for side in [left, right] {
                if let Some(u) = name_of(side).and_then(|n| uses.get_mut(n)) {
                    u.array = true;
                }
            }
        }
        Expr::Call(c) => {
            // A NumPy function imported by name (`from numpy import
            // linspace`) is the function `np.linspace` names.
            let resolved = src.resolve(&c.func);
            let imported = resolved
                .as_deref()
                .and_then(|f| f.strip_prefix("numpy."))
                .filter(|f| !f.contains('.'));
            let callee = match (imported, c.func.as_ref()) {
                (Some(f), _) => f,
                (None, Expr::Name(n)) => n.id.as_str(),
                (None, Expr::Attribute(a)) => a.attr.as_str(),
                _ => "",
            };
            // `a.sum(axis=1)`, `np.max(x, axis=(1, 2))`: an array of more
            // dimensions than the axis (and an explicit axis means at least 2).
            let axis = keyword(c, "axis");
            if let Some(axis) = axis {
                let top = match axis {
                    Expr::Tuple(t) => t.elts.iter().filter_map(const_int).max(),
                    e => const_int(e),
                };
                let rank = top.map_or(2, |k| if k < 0 { 2 } else { (k + 1).max(2) }) as u8;
                let operand: Option<&Expr> = match c.func.as_ref() {
                    // `np.max(x, …)`, `np.linalg.norm(x, …)`: a module's function.
                    Expr::Attribute(a) if is_numpy(&a.value) => c.args.first(),
                    Expr::Attribute(a) => Some(&a.value),
                    _ => None,
                };
                if let Some(op) = operand {
                    // A subscripted name (`mass[None, :]`) has its rank from its indices.
                    // So has a name given by keyword inside it
                    // (`np.diff(x, axis=axis).sum(…)`: `axis` is no array).
                    let mut indexed: Vec<&str> = Vec::new();
                    walk_expr(op, &mut |x: &Expr| match x {
                        Expr::Subscript(s) => indexed.extend(name_of(&s.value)),
                        Expr::Call(inner) => {
                            indexed.extend(inner.keywords.iter().filter_map(|k| name_of(&k.value)))
                        }
                        _ => {}
                    });
                    walk_expr(op, &mut |x: &Expr| {
                        if let Some(u) = name_of(x)
                            .filter(|n| !indexed.contains(n))
                            .and_then(|n| uses.get_mut(n))
                        {
                            if !u.int {
                                u.array = true;
                                u.ndim = u.ndim.max(rank);
                            }
                        }
                    });
                }
            }
            let on_numpy = imported.is_some()
                || matches!(c.func.as_ref(), Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(n) if n.id.as_str() == "np" || n.id.as_str() == "numpy"));
            let creation = matches!(
                callee,
                "empty" | "zeros" | "ones" | "full" | "arange" | "linspace" | "eye" | "identity"
            );
            // `np.roll(a, shift, axis)`: the shift is an integer;
            // `np.linspace(a, b, n)`, `num=n`: a count of points.
            let count = match callee {
                "roll" if on_numpy => argument(c, 1, "shift"),
                "linspace" if on_numpy => argument(c, 2, "num"),
                _ => None,
            };
            if let Some(n) = count {
                mark_int(n, uses);
            }
            // Ranks that an axis permutation or an einsum spells out:
            // `a.transpose((0, 2, 1))` and `np.transpose(a, (1, 0, 2))` have
            // one axis each, `a.swapaxes(0, 2)` more than the larger, and
            // `np.einsum('ijk,ikl->ijl', a, b)` one per letter of each term.
            for (operand, rank) in ranks_spelled_out(c, callee, on_numpy) {
                if let Some(u) = name_of(operand).and_then(|n| uses.get_mut(n)) {
                    if !u.int {
                        u.array = true;
                        u.ndim = u.ndim.max(rank);
                    }
                }
            }
            if on_numpy && callee == "indices" {
                // `np.indices((n, m))`: the dimensions are integers.
                if let Some(first) = c.args.first() {
                    mark_int(first, uses);
                }
            }
            // `np.reshape(a, (n, m))`, `a.reshape(n, m)`: a shape is integers.
            if callee == "reshape" {
                let shape: Vec<&Expr> = if on_numpy {
                    argument(c, 1, "newshape")
                        .or_else(|| keyword(c, "shape"))
                        .into_iter()
                        .collect()
                } else {
                    c.args.iter().collect()
                };
                for e in shape {
                    mark_int(e, uses);
                }
            }
            // `np.histogram(a, bins, weights=w)`: a scalar `bins` is a count
            // of bins; the weights are an array like `a`.
            if on_numpy && callee == "histogram" {
                if let Some(bins) = argument(c, 1, "bins") {
                    mark_int(bins, uses);
                }
                if let Some(u) = keyword(c, "weights")
                    .and_then(name_of)
                    .and_then(|n| uses.get_mut(n))
                {
                    u.array = true;
                }
            }
            // `np.transpose(a)`: reversing the axes of a vector does nothing;
            // a program that asks for it has a matrix.
            if on_numpy && callee == "transpose" && c.args.len() == 1 {
                if let Some(u) = c
                    .args
                    .first()
                    .and_then(name_of)
                    .and_then(|n| uses.get_mut(n))
                {
                    u.array = true;
                    u.ndim = u.ndim.max(2);
                }
            }
            // `np.sort(-data)`, `np.median(x)`: NumPy raises for a number,
            // so the name under a sign is an array too.
            if on_numpy && matches!(callee, "sort" | "median") {
                let mut operand = c.args.first();
                while let Some(Expr::UnaryOp(u)) = operand {
                    operand = Some(u.operand.as_ref());
                }
                if let Some(u) = operand.and_then(name_of).and_then(|n| uses.get_mut(n)) {
                    if !u.int {
                        u.array = true;
                    }
                }
            }
            if on_numpy && !creation {
                // `np.sum(a)`, `np.sqrt(x)`: NumPy's functions take arrays.
                for a in &c.args {
                    if let Some(u) = name_of(a).and_then(|n| uses.get_mut(n)) {
                        if !u.int {
                            u.array = true;
                        }
                    }
                }
            }
            // `np.linalg.solve(A, b)`: the first operand a matrix (or a
            // stack), the others arrays whose rank other uses decide.
            let on_linalg = matches!(c.func.as_ref(), Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Attribute(m) if m.attr.as_str() == "linalg" && is_numpy(&m.value)));
            if on_linalg && callee != "norm" {
                for (k, a) in c.args.iter().enumerate() {
                    if let Some(u) = name_of(a).and_then(|n| uses.get_mut(n)) {
                        u.array = true;
                        if k == 0 {
                            u.ndim = u.ndim.max(2);
                        }
                    }
                }
            }
            match callee {
                "range" | "prange" => c.args.iter().for_each(|a| mark_int(a, uses)),
                "empty" | "zeros" | "ones" | "full" | "arange" | "eye" | "identity" => {
                    if let Some(first) = c.args.first() {
                        mark_int(first, uses);
                    }
                }
                "transpose" => {
                    // `np.transpose(A, (1, 0, 2))`: one axis per dimension.
                    if let (Some(u), Some(Expr::Tuple(t))) = (
                        c.args
                            .first()
                            .and_then(name_of)
                            .and_then(|n| uses.get_mut(n)),
                        c.args.get(1),
                    ) {
                        u.array = true;
                        u.ndim = u.ndim.max(t.elts.len() as u8);
                    }
                }
                "swapaxes" | "moveaxis" => {
                    // `np.swapaxes(t, 0, 2)`: more dimensions than either axis.
                    let top = c.args.iter().skip(1).filter_map(const_int).max();
                    if let (Some(u), Some(k)) = (
                        c.args
                            .first()
                            .and_then(name_of)
                            .and_then(|n| uses.get_mut(n)),
                        top,
                    ) {
                        u.array = true;
                        u.ndim = u.ndim.max((k.max(0) + 1) as u8);
                    }
                }
                "len" => {
                    if let Some(u) = c
                        .args
                        .first()
                        .and_then(name_of)
                        .and_then(|n| uses.get_mut(n))
                    {
                        u.array = true;
                        u.ndim = u.ndim.max(1);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(src: &str, f: &str) -> String {
        assumed_types(src, "t.py", f)
            .unwrap()
            .iter()
            .map(|t| t.numba())
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn operands_of_np_linalg_are_matrices_and_arrays() {
        let src = "import numpy as np\ndef f(cov, b, B, lam):\n    return np.linalg.solve(cov, b) + np.linalg.inv(cov) @ B * lam\n";
        assert_eq!(
            sig(src, "f"),
            "float64[:, :], float64[:], float64[:, :], float64"
        );
    }

    #[test]
    fn ranks_come_from_indices_and_shapes() {
        let src = "def k(n, alpha, A, x, idx):\n    m, p = A.shape\n    for i in range(n):\n        x[idx[i]] += alpha * A[i, 0]\n";
        assert_eq!(
            sig(src, "k"),
            "int64, float64, float64[:, :], float64[:], int64[:]"
        );
    }

    #[test]
    fn slices_used_as_indices_and_batched_matmul_operands() {
        let src = "def k(row, col, val, x):\n    for i in range(row.size - 1):\n        c = col[row[i]:row[i + 1]]\n        x[i] = val[0] @ x[c]\n";
        assert_eq!(sig(src, "k"), "int64[:], int64[:], float64[:], float64[:]");
        let src = "def a(q, v):\n    s = q @ q.transpose(0, 2, 1) / q.shape[2]\n    return s @ v\n";
        assert_eq!(sig(src, "a"), "float64[:, :, :], float64[:, :]");
        let src = "def n(X):\n    return X / np.linalg.norm(X, axis=1, keepdims=True)\n";
        assert_eq!(sig(src, "n"), "float64[:, :]");
    }

    /// EntropyHub's membership functions: `assert np.size(r) == 1` says
    /// `r` is a number, though it is handed to `np.size`.
    #[test]
    fn a_parameter_asserted_scalar_is_a_number() {
        let src = "import numpy as np\ndef t(x, r, w):\n    assert np.size(r)==1, 'r must be a scalar'\n    assert np.isscalar(w) and np.size(x) > 1\n    y = np.zeros(np.shape(x))\n    y[x <= r] = 1\n    return y * w\n";
        assert_eq!(sig(src, "t"), "float64[:], float64, float64");
        // Indexed, it stays an array whatever the assertion says.
        let src =
            "import numpy as np\ndef u(x, r):\n    assert np.size(r) == 1\n    return x * r[0]\n";
        assert_eq!(sig(src, "u"), "float64, float64[:]");
    }

    /// antropy's `_xlogx(x, base=2)`: a number as the default says the
    /// parameter is a number, though the body hands it to `np.log`.
    #[test]
    fn a_numeric_default_makes_a_number() {
        let src = "import numpy as np\ndef xlogx(x, base=2):\n    out = np.zeros(x.shape)\n    ok = x > 0\n    out[ok] = x[ok] * np.log(x[ok]) / np.log(base)\n    return out\n";
        assert_eq!(sig(src, "xlogx"), "float64[:], int64");
    }

    /// `axis=-1` used as an axis is left to its default, counted from the
    /// end and only where nothing better types it; a negative default is
    /// a number.
    #[test]
    fn axes_with_number_defaults_are_left_to_them() {
        let src = "import numpy as np\ndef f(x, scale=-0.5, axis=-1):\n    return np.diff(x, axis=axis).sum(axis=axis) * scale / x.shape[axis]\n";
        let file = crate::source::SourceFile::parse("t.py", src).unwrap();
        assert_eq!(axes_left_to_defaults(&file, "f", &[false; 3]), 1);
        assert_eq!(axes_left_to_defaults(&file, "f", &[false, false, true]), 0);
        assert_eq!(sig(src, "f"), "float64[:, :], float64, int64");
    }

    /// pyrr's `create(normal=None, distance=0.0, dtype=None)`: a `None`
    /// default passed as `dtype=` stays the default (typed as a number,
    /// the original raised "Cannot interpret '0.75' as a data type").
    #[test]
    fn a_dtype_defaulting_to_none_is_left_to_it() {
        let src = "import numpy as np\ndef f(v, w=1.0, dtype=None):\n    return np.array([v[0], v[1], w], dtype=dtype)\n";
        let file = crate::source::SourceFile::parse("t.py", src).unwrap();
        assert_eq!(axes_left_to_defaults(&file, "f", &[false; 3]), 1);
        assert_eq!(axes_left_to_defaults(&file, "f", &[false, false, true]), 0);
    }

    /// A row passed to a helper that uses its parameter as a vector makes
    /// the argument a matrix.
    #[test]
    fn a_row_passed_to_a_vector_helper_is_a_matrix_row() {
        let src = "def fit(y):\n    s = 0.0\n    for j in range(y.shape[0]):\n        s += y[j]\n    return s\n\ndef rows(m, out):\n    for r in range(m.shape[0]):\n        out[r] = fit(m[r])\n";
        assert_eq!(sig(src, "rows"), "float64[:, :], float64[:]");
    }

    #[test]
    fn roll_shifts_and_index_dimensions_are_integers() {
        let src = "import numpy as np\ndef k(a, s, n, m):\n    g = np.indices((n, m))\n    return np.roll(a, s, axis=0) + np.roll(a, shift=(s, n), axis=(0, 1)) + g[0]\n";
        assert_eq!(sig(src, "k"), "float64[:, :], int64, int64, int64");
    }

    /// schrodinger_1d of fixtures/migrate/programs_complex.py: a complex
    /// value stored into the wave function makes it complex128.
    #[test]
    fn an_array_a_complex_value_is_stored_into_is_complex() {
        let src = "def s(psi, v, dt, dx, steps):\n    for _ in range(steps):\n        lap = (psi[2:] - 2.0 * psi[1:-1] + psi[:-2]) / dx**2\n        psi[1:-1] = psi[1:-1] + 1j * dt * (0.5 * lap - v[1:-1] * psi[1:-1])\n    return psi\n";
        assert_eq!(
            sig(src, "s"),
            "complex128[:], float64[:], float64, float64, int64"
        );
    }

    /// grid_function of fixtures/migrate/programs.py: a float64 count made
    /// NumPy raise on the generated inputs (seen in the GPU sweep).
    #[test]
    fn the_count_of_linspace_is_an_integer() {
        let src = "import numpy as np\ndef g(n, lo, hi, m):\n    x = np.linspace(0.0, 1.0, n)\n    y = np.linspace(lo, hi, num=m)\n    return x[:, None] ** 2 + y[None, :]\n";
        assert_eq!(sig(src, "g"), "int64, float64, float64, int64");
    }

    #[test]
    fn parameters_passed_on_are_used_as_the_callee_uses_them() {
        let src = "import numpy as np\n\ndef conv(x, w):\n    k = w.shape[0]\n    return x[k:, :]\n\ndef pool(x, n):\n    return x[:n]\n\ndef net(inp, weights, bias, n):\n    return pool(conv(inp, weights), n=n) + bias\n";
        assert_eq!(sig(src, "net"), "float64[:, :], float64[:], float64, int64");
    }

    #[test]
    fn shapes_bins_weights_and_chained_products() {
        let src = "import numpy as np\n\ndef f(NR, NP, A):\n    return np.reshape(A, (NR, NP)) + A.reshape(NP, NR).T\n";
        assert_eq!(sig(src, "f"), "int64, int64, float64[:, :]");
        let src = "import numpy as np\n\ndef g(NR, NQ, NP, A, C4):\n    A[:] = np.reshape(np.reshape(A, (NR, NQ, 1, NP)) @ C4, (NR, NQ, NP))\n";
        assert_eq!(
            sig(src, "g"),
            "int64, int64, int64, float64[:, :, :], float64[:, :]"
        );
        let src = "import numpy as np\n\ndef h(data, radius, npt):\n    return np.histogram(radius, npt, weights=data)[0]\n";
        assert_eq!(sig(src, "h"), "float64[:], float64[:], int64");
        let src = "import numpy as np\n\ndef mlp(inp, w1, b1, w2):\n    x = np.maximum(inp @ w1 + b1, 0)\n    return x @ w2\n";
        assert_eq!(
            sig(src, "mlp"),
            "float64[:], float64[:, :], float64, float64[:]"
        );
        let src = "import numpy as np\n\ndef cov(data):\n    return np.cov(np.transpose(data))\n";
        assert_eq!(sig(src, "cov"), "float64[:, :]");
    }

    #[test]
    fn capitalised_operands_of_matmul_are_matrices() {
        let src = "def k(A, B, x):\n    return A @ B @ x\n";
        assert_eq!(sig(src, "k"), "float64[:, :], float64[:, :], float64[:]");
    }
}
