//! The calls the walk hands on: builtins, external functions (NumPy's and
//! their results among them), module attributes, and methods of arrays,
//! strings and containers. Each takes the types of the arguments the walk
//! already inferred and records why nopython mode or a kernel could not
//! take the call.

use std::collections::HashMap;

use rustpython_parser::ast::{self, Expr, Ranged};

use super::state::Checker;
use super::util::{dtype_name, is_container_method, join_arith, scalar_of, short};
use crate::support;
use crate::symbols::Binding;
use crate::ty::Ty;

impl<'a> Checker<'a> {
    /// `module.attr`, for a module by dotted name.
    pub(super) fn module_attr(&mut self, m: &str, attr: &str, line: u32, called: bool) -> Ty {
        let root = m.split('.').next().unwrap_or(m);
        let full = format!("{m}.{attr}");
        if root == "numpy" {
            let np_name = full.strip_prefix("numpy.").unwrap_or(&full).to_string();
            if matches!(
                np_name.as_str(),
                "linalg" | "random" | "fft" | "ma" | "polynomial" | "testing"
            ) {
                return Ty::Module(full);
            }
            if !support::numpy_nopython(&np_name) {
                self.add(
                    "PORT102",
                    line,
                    format!("Use of unsupported NumPy function 'numpy.{np_name}' or unsupported use of the function"),
                );
                return Ty::Opaque(format!("numpy.{np_name}"));
            }
            if !called {
                if matches!(np_name.as_str(), "pi" | "e" | "inf" | "nan" | "euler_gamma") {
                    return Ty::Float;
                }
                if np_name == "float64" || np_name == "double" {
                    self.uses_float64.get_or_insert(line);
                }
            }
            return Ty::External(full);
        }
        if root == "math" || root == "cmath" {
            if !support::math_nopython(attr) {
                self.add(
                    "PORT101",
                    line,
                    format!("Unknown attribute '{attr}' of type Module({m}) in nopython mode"),
                );
                return Ty::Opaque(full);
            }
            if !called {
                return Ty::Float;
            }
            return Ty::External(full);
        }
        if root == "random" {
            if !support::random_nopython(attr) {
                self.add(
                    "PORT101",
                    line,
                    format!("Unknown attribute '{attr}' of type Module(random)"),
                );
                return Ty::Opaque(full);
            }
            return Ty::External(full);
        }
        if support::module_is_nopython(root) {
            return Ty::External(full);
        }
        // `scipy.special`, and those of its functions port maps.
        if full == "scipy.special" {
            return Ty::Module(full);
        }
        if m == "scipy.special" && support::SCIPY_SPECIAL.contains(&attr) {
            return Ty::External(full);
        }
        self.add(
            "PORT101",
            line,
            format!("Unknown attribute '{attr}' of type Module({m})"),
        );
        Ty::Opaque(full.to_string())
    }

    pub(super) fn builtin_call(
        &mut self,
        name: &str,
        args: &[Ty],
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        if support::PYTHON_BUILTINS.contains(&name) {
            self.add(
                "PORT103",
                line,
                format!("Untyped global name '{name}': builtin not supported in nopython mode"),
            );
            return Ty::Opaque(name.to_string());
        }
        match name {
            "list" | "dict" | "set" => {
                self.add("PORT201", line, format!("`{name}()` builds a container"));
            }
            "str" | "repr" | "chr" | "hex" | "bin" | "oct" | "format" => {
                self.note_string(line, &format!("`{name}()` makes a string"));
            }
            "sum" | "any" | "all" if args.first().is_some_and(|t| t.is_array()) => {
                // Python's sum over an array is a reduction port rewrites.
            }
            _ if support::CUDA_BLOCKING_BUILTINS.contains(&name) => {
                self.add(
                    "PORT212",
                    line,
                    format!("`{name}()` is not supported in CUDA kernels"),
                );
            }
            _ => {}
        }
        if name == "print" && c.args.iter().any(|a| matches!(a, Expr::JoinedStr(_))) {
            // Already flagged by the f-string itself.
        }
        match name {
            "len" | "int" | "hash" | "ord" => Ty::Int,
            "float" => Ty::Float,
            "bool" | "isinstance" | "any" | "all" => Ty::Bool,
            "complex" => Ty::Complex,
            "range" => Ty::Range,
            "str" | "repr" | "chr" | "hex" | "bin" | "oct" | "format" => Ty::Str,
            "abs" | "round" | "pow" => args.first().cloned().unwrap_or(Ty::Unknown),
            "min" | "max" => args
                .iter()
                .fold(None, |acc: Option<Ty>, t| {
                    Some(match acc {
                        None => t.clone(),
                        Some(a) => join_arith(&a, t),
                    })
                })
                .map(|t| if t.is_array() { Ty::Float } else { t })
                .unwrap_or(Ty::Unknown),
            "sum" => Ty::Float,
            "tuple" => Ty::Tuple(vec![]),
            "list" => Ty::List,
            "dict" => Ty::Dict,
            "set" => Ty::Set,
            "zip" | "enumerate" => Ty::Unknown,
            "print" => Ty::NoneT,
            _ => Ty::Unknown,
        }
    }

    pub(super) fn external_call(
        &mut self,
        full: &str,
        args: &[Ty],
        kw: &HashMap<String, Ty>,
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        self.record_external(full, line);
        let root = full.split('.').next().unwrap_or("");
        if root == "numpy" {
            let name = full.strip_prefix("numpy.").unwrap_or(full);
            if !support::numpy_nopython(name) {
                self.add(
                    "PORT102",
                    line,
                    format!("Use of unsupported NumPy function 'numpy.{name}' or unsupported use of the function"),
                );
                return Ty::Opaque(full.to_string());
            }
            self.argument_gap(name, false, args, c, line);
            if let Some(why) = support::numpy_cuda_blocker(name) {
                self.add("PORT206", line, format!("np.{name}: {why}"));
            }
            return self.numpy_result(name, args, kw, c, line);
        }
        if root == "math" || root == "cmath" {
            let name = full.rsplit('.').next().unwrap_or("");
            return match name {
                "floor" | "ceil" | "trunc" | "gcd" => Ty::Int,
                "isnan" | "isinf" | "isfinite" | "isclose" => Ty::Bool,
                _ if root == "cmath" => Ty::Complex,
                _ => Ty::Float,
            };
        }
        if root == "random" {
            self.add(
                "PORT213",
                line,
                format!("`{full}()`: kernels need per-thread random state (xoroshiro128p)"),
            );
            return if full.ends_with("randint") || full.ends_with("randrange") {
                Ty::Int
            } else {
                Ty::Float
            };
        }
        if root == "operator" {
            return args.first().cloned().unwrap_or(Ty::Unknown);
        }
        if root == "numba" {
            return if full.ends_with("prange") {
                Ty::Range
            } else {
                Ty::Unknown
            };
        }
        // `scipy.special.erf` (however imported): Numba needs numba-scipy;
        // port has an equivalent. Typed as NumPy's float ufuncs are.
        if let Some(name) = full.strip_prefix("scipy.special.") {
            if support::SCIPY_SPECIAL.contains(&name) {
                self.add(
                    "PORT122",
                    line,
                    format!("Untyped global name '{name}' (scipy.special): Numba compiles it only with numba-scipy; port maps it to a CUDA equivalent"),
                );
                return self.numpy_result("sqrt", args, kw, c, line);
            }
        }
        // `from hashlib import md5`, `from scipy.special import erf`.
        let (module, attr) = full.rsplit_once('.').unwrap_or((full, ""));
        self.add(
            "PORT115",
            line,
            format!("Untyped global name '{attr}' (from {module}): Numba cannot compile {full}"),
        );
        Ty::Opaque(full.to_string())
    }

    /// Numba's support at the level of this call's arguments (keywords,
    /// `axis`, list shapes, ranks): a PORT116–PORT121 finding when it refuses.
    fn argument_gap(
        &mut self,
        name: &str,
        method: bool,
        args: &[Ty],
        c: &ast::ExprCall,
        line: u32,
    ) {
        let keywords: Vec<&str> = c
            .keywords
            .iter()
            .filter_map(|k| k.arg.as_ref().map(|a| a.as_str()))
            .collect();
        let list_at = if name == "transpose" { 1 } else { 0 };
        let list_arg = c
            .args
            .get(list_at)
            .is_some_and(|e| matches!(e, Expr::List(_)))
            || args.get(list_at) == Some(&Ty::List);
        let ranks: Vec<Option<u8>> = args
            .iter()
            .map(|t| match t {
                Ty::Array { ndim, .. } => *ndim,
                _ => None,
            })
            .collect();
        if let Some((code, msg)) =
            support::numpy_argument_gap(name, method, &keywords, c.args.len(), list_arg, &ranks)
        {
            self.add(code, line, msg);
        }
    }

    fn numpy_result(
        &mut self,
        name: &str,
        args: &[Ty],
        kw: &HashMap<String, Ty>,
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        let dtype = kw.get("dtype").and_then(|t| match t {
            Ty::Array { dtype, .. } => dtype.clone(),
            _ => None,
        });
        if support::NUMPY_ALLOCATIONS.contains(&name)
            || matches!(name, "arange" | "linspace" | "eye" | "identity")
        {
            self.allocation_note(line, &format!("np.{name} allocates"));
            if let Some(size) = c.args.first() {
                if !name.ends_with("_like") && self.reads_data(size) {
                    self.add(
                        "PORT205",
                        line,
                        format!(
                            "np.{name}({}): the size is computed from array contents",
                            self.m.text_of(size.range())
                        ),
                    );
                }
            }
            let like = args.first().cloned();
            let ndim = match (name.ends_with("_like"), &like) {
                (true, Some(Ty::Array { ndim, .. })) => *ndim,
                (false, Some(Ty::Tuple(t))) if !t.is_empty() => Some(t.len() as u8),
                (false, Some(Ty::Int)) => Some(1),
                _ => None,
            };
            let dtype = dtype.or_else(|| match (&like, name.ends_with("_like")) {
                (Some(Ty::Array { dtype, .. }), true) => dtype.clone(),
                _ => Some("float64".into()),
            });
            return Ty::Array { ndim, dtype };
        }
        if matches!(
            name,
            "float32" | "float64" | "float16" | "double" | "single"
        ) {
            if matches!(name, "float64" | "double") {
                self.uses_float64.get_or_insert(line);
            }
            return if args.first().is_some_and(|t| t.is_array()) {
                Ty::array(None)
            } else {
                Ty::Float
            };
        }
        if name.starts_with("int") || name.starts_with("uint") {
            return Ty::Int;
        }
        if matches!(name, "array" | "asarray" | "ascontiguousarray" | "copy") {
            return args
                .first()
                .cloned()
                .filter(Ty::is_array)
                .unwrap_or(Ty::array(None));
        }
        if support::NUMPY_KERNEL_REDUCTIONS.contains(&name)
            || matches!(
                name,
                "argmax" | "argmin" | "std" | "var" | "median" | "count_nonzero" | "all" | "any"
            )
        {
            let axis = kw.contains_key("axis") || args.len() > 1;
            if args.first().is_some_and(|t| t.is_array()) && !axis {
                self.add(
                    "PORT402",
                    line,
                    format!("np.{name} over an array becomes a reduction kernel"),
                );
            }
            return if axis { Ty::array(None) } else { Ty::Float };
        }
        if support::NUMPY_KERNEL_ELEMENTWISE.contains(&name) {
            if args.iter().any(Ty::is_array) {
                self.allocation_note(line, &format!("np.{name} over arrays allocates its result"));
                let ndim = args.iter().find_map(|t| match t {
                    Ty::Array { ndim, .. } => Some(*ndim),
                    _ => None,
                });
                return Ty::array(ndim.flatten());
            }
            return match name {
                "isnan" | "isinf" | "isfinite" => Ty::Bool,
                _ => Ty::Float,
            };
        }
        Ty::array(None)
    }

    pub(super) fn method_call(
        &mut self,
        base: &Ty,
        a: &ast::ExprAttribute,
        args: &[Ty],
        _kw: &HashMap<String, Ty>,
        c: &ast::ExprCall,
        line: u32,
    ) -> Ty {
        let m = a.attr.as_str();
        let mut base = base.clone();
        if base == Ty::Unknown {
            if support::NDARRAY_METHODS.contains(&m) {
                base = self.assume_array(&a.value, Ty::Unknown, "calls", c.range);
            } else if support::STR_METHODS.contains(&m) && m != "format" {
                if let Expr::Name(n) = a.value.as_ref() {
                    if self.assumed.insert(n.id.to_string()) {
                        self.add(
                            "PORT401",
                            line,
                            format!(
                                "assumes `{}` is a string: calls {}",
                                n.id,
                                short(self.m.text_of(c.range))
                            ),
                        );
                    }
                    self.env.insert(n.id.to_string(), Ty::Str);
                }
                base = Ty::Str;
            } else if !is_container_method(m) {
                self.add(
                    "PORT114",
                    line,
                    format!(
                        "calls `{}`: no array, string or container has a method `{m}` that nopython mode supports",
                        short(self.m.text_of(c.range))
                    ),
                );
                return Ty::Opaque(m.to_string());
            }
        }
        match &base {
            Ty::Array { ndim, dtype } => {
                if !support::NDARRAY_METHODS.contains(&m) {
                    self.add(
                        "PORT114",
                        line,
                        format!("Unknown attribute '{m}' of type array"),
                    );
                    return Ty::Opaque(m.to_string());
                }
                let mut with_self = vec![base.clone()];
                with_self.extend(args.iter().cloned());
                self.argument_gap(m, true, &with_self, c, line);
                if !support::NDARRAY_KERNEL_METHODS.contains(&m) {
                    self.add(
                        "PORT206",
                        line,
                        format!("`.{m}()` on an array has no kernel form in port's rewrites"),
                    );
                }
                match m {
                    "sum" | "prod" | "mean" | "min" | "max" | "std" | "var" | "item" => {
                        if args.is_empty() && c.keywords.is_empty() {
                            if ndim.is_none_or(|n| n >= 1) {
                                self.add(
                                    "PORT402",
                                    line,
                                    format!("`.{m}()` over an array becomes a loop or a reduction kernel"),
                                );
                            }
                            scalar_of(dtype)
                        } else {
                            Ty::array(None)
                        }
                    }
                    "argmax" | "argmin" => Ty::Int,
                    "all" | "any" => Ty::Bool,
                    "astype" => {
                        let d = c.args.first().and_then(dtype_name);
                        if d.as_deref() == Some("float64") {
                            self.uses_float64.get_or_insert(line);
                        }
                        self.allocation_note(line, "`.astype()` allocates");
                        Ty::Array {
                            ndim: *ndim,
                            dtype: d,
                        }
                    }
                    "copy" | "reshape" | "ravel" | "flatten" | "transpose" | "view" | "squeeze" => {
                        Ty::Array {
                            ndim: if m == "copy" || m == "transpose" {
                                *ndim
                            } else {
                                None
                            },
                            dtype: dtype.clone(),
                        }
                    }
                    "fill" | "sort" => Ty::NoneT,
                    _ => Ty::Unknown,
                }
            }
            Ty::Str => {
                if m == "format" {
                    self.add(
                        "PORT107",
                        line,
                        format!(
                            "`{}`: str.format is not supported in nopython mode",
                            self.m.text_of(c.range)
                        ),
                    );
                } else if support::STR_METHODS.contains(&m) {
                    self.note_string(line, &format!("calls str.{m}()"));
                } else {
                    self.add(
                        "PORT114",
                        line,
                        format!("Unknown attribute '{m}' of type unicode_type"),
                    );
                }
                match m {
                    "split" | "rsplit" | "splitlines" => Ty::List,
                    "find" | "rfind" | "index" | "rindex" | "count" => Ty::Int,
                    m if m.starts_with("is")
                        || m.starts_with("starts")
                        || m.starts_with("ends") =>
                    {
                        Ty::Bool
                    }
                    _ => Ty::Str,
                }
            }
            Ty::List | Ty::Dict | Ty::Set => match m {
                "keys" | "values" | "items" => Ty::List,
                _ => Ty::Unknown,
            },
            Ty::LocalModule(i) => match self.syms.lookup(*i, m) {
                Some(Binding::Function(f)) => {
                    if !self.app_calls.iter().any(|(j, _)| *j == f) {
                        self.app_calls.push((f, line));
                    }
                    Ty::Unknown
                }
                Some(Binding::Class(k)) => {
                    self.add(
                        "PORT104",
                        line,
                        format!("instantiates class {}", k.rsplit('.').next().unwrap_or(&k)),
                    );
                    Ty::Instance(k)
                }
                _ => Ty::Unknown,
            },
            Ty::Instance(k) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT104",
                    line,
                    format!(
                        "calls method `{}` of a {} instance",
                        self.m.text_of(c.func.range()),
                        k.rsplit('.').next().unwrap_or(k)
                    ),
                );
                Ty::Unknown
            }
            Ty::Opaque(what) => {
                self.object_use_lines.push(line);
                self.add(
                    "PORT114",
                    line,
                    format!("calls .{m}() on a value nopython mode cannot type ({what})"),
                );
                Ty::Opaque(format!("{what}.{m}()"))
            }
            Ty::Int | Ty::Float | Ty::Complex | Ty::Bool => match m {
                "conjugate" | "real" | "imag" => base.clone(),
                "is_integer" | "bit_length" | "as_integer_ratio" | "hex" => {
                    self.add(
                        "PORT114",
                        line,
                        format!("Unknown attribute '{m}' of number"),
                    );
                    Ty::Unknown
                }
                _ => Ty::Unknown,
            },
            _ => Ty::Unknown,
        }
    }
}
