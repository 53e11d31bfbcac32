//! Argument types: Numba's type-string syntax (`--signature "float64,
//! float64[:], float64[::1]"`), the analyzer's captured types, and the
//! mapping to port's kernel IR types.

use port_codegen::ir::{ArrayType, ScalarType, Type, MAX_DIMS};
use serde::{Deserialize, Serialize};

use crate::error::RewriteError;

/// The type of one argument of the function being migrated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArgType {
    Scalar(ScalarType),
    /// An array; `contiguous` when the signature promises C order (`[::1]`).
    Array(ArrayType),
}

impl ArgType {
    pub fn ir(self) -> Type {
        match self {
            ArgType::Scalar(s) => Type::Scalar(s),
            ArgType::Array(a) => Type::Array(a),
        }
    }

    pub fn elem(self) -> ScalarType {
        match self {
            ArgType::Scalar(s) => s,
            ArgType::Array(a) => a.elem,
        }
    }

    pub fn is_array(self) -> bool {
        matches!(self, ArgType::Array(_))
    }

    /// Numba's spelling (`float64`, `float64[:, ::1]`).
    pub fn numba(self) -> String {
        match self {
            ArgType::Scalar(s) => numba_scalar(s).to_string(),
            ArgType::Array(a) => {
                let mut dims: Vec<&str> = vec![":"; a.ndim as usize];
                if a.contiguous {
                    if let Some(last) = dims.last_mut() {
                        *last = "::1";
                    }
                }
                format!("{}[{}]", numba_scalar(a.elem), dims.join(", "))
            }
        }
    }
}

impl std::fmt::Display for ArgType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.numba())
    }
}

/// Numba's / NumPy's name of a scalar type.
pub fn numba_scalar(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Bool => "boolean",
        ScalarType::I32 => "int32",
        ScalarType::I64 => "int64",
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
        ScalarType::I8 => "int8",
        ScalarType::I16 => "int16",
        ScalarType::U8 => "uint8",
        ScalarType::U16 => "uint16",
        ScalarType::U32 => "uint32",
        ScalarType::U64 => "uint64",
        ScalarType::C64 => "complex64",
        ScalarType::C128 => "complex128",
    }
}

/// NumPy's dtype name (`np.float64`, `np.bool_`).
pub fn numpy_dtype(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Bool => "np.bool_",
        ScalarType::I32 => "np.int32",
        ScalarType::I64 => "np.int64",
        ScalarType::F32 => "np.float32",
        ScalarType::F64 => "np.float64",
        ScalarType::I8 => "np.int8",
        ScalarType::I16 => "np.int16",
        ScalarType::U8 => "np.uint8",
        ScalarType::U16 => "np.uint16",
        ScalarType::U32 => "np.uint32",
        ScalarType::U64 => "np.uint64",
        ScalarType::C64 => "np.complex64",
        ScalarType::C128 => "np.complex128",
    }
}

/// A scalar type from a Numba or NumPy name; `None` for names port's kernels
/// do not take.
pub fn scalar_from_name(name: &str) -> Option<ScalarType> {
    Some(match name.trim() {
        "float64" | "f8" | "double" | "float" | "float_" => ScalarType::F64,
        "float32" | "f4" | "single" => ScalarType::F32,
        "int64" | "i8" | "int" | "intp" | "int_" | "long" => ScalarType::I64,
        "int32" | "i4" | "intc" => ScalarType::I32,
        "boolean" | "bool" | "bool_" | "b1" => ScalarType::Bool,
        "int16" | "i2" | "short" => ScalarType::I16,
        "int8" | "i1" | "byte" => ScalarType::I8,
        "uint8" | "u1" | "ubyte" => ScalarType::U8,
        "uint16" | "u2" | "ushort" => ScalarType::U16,
        "uint32" | "u4" | "uintc" => ScalarType::U32,
        "uint64" | "u8" | "uint" | "uintp" => ScalarType::U64,
        "complex128" | "c16" | "complex" | "complex_" | "cdouble" => ScalarType::C128,
        "complex64" | "c8" | "csingle" => ScalarType::C64,
        _ => return None,
    })
}

const SUPPORTED: &str = "boolean, int8 to int64, uint8 to uint64, float32, float64, complex64, complex128 and arrays of them";

fn bad(given: &str, why: &str) -> RewriteError {
    RewriteError::BadSignature(format!("`{}`: {why}", given.trim()))
}

/// Why an element type is refused.
fn unsupported_elem(_name: &str) -> String {
    format!("unsupported element type; port takes {SUPPORTED}")
}

/// Parses one Numba type string: `float64`, `float64[:]`, `float32[:, ::1]`,
/// `array(float64, 2d, C)`.
pub fn parse_type(s: &str) -> Result<ArgType, RewriteError> {
    let t = s.trim();
    if let Some(inner) = t.strip_prefix("array(").and_then(|r| r.strip_suffix(')')) {
        let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
        if parts.len() < 2 || parts.len() > 3 {
            return Err(bad(t, "write `array(float64, 2d, C)`"));
        }
        let elem = scalar_from_name(parts[0]).ok_or_else(|| bad(t, &unsupported_elem(parts[0])))?;
        let ndim: u8 = parts[1]
            .strip_suffix('d')
            .and_then(|n| n.parse().ok())
            .filter(|n| (1..=port_codegen::ir::MAX_DIMS).contains(n))
            .ok_or_else(|| {
                bad(
                    t,
                    &format!("arrays have 1 to {MAX_DIMS} dimensions (`1d` … `{MAX_DIMS}d`)"),
                )
            })?;
        let contiguous = parts.get(2).is_some_and(|l| *l == "C");
        return Ok(ArgType::Array(ArrayType {
            elem,
            ndim,
            contiguous,
        }));
    }
    if let Some(open) = t.find('[') {
        let Some(dims) = t[open + 1..].strip_suffix(']') else {
            return Err(bad(t, "an array type ends with `]`"));
        };
        let elem =
            scalar_from_name(&t[..open]).ok_or_else(|| bad(t, &unsupported_elem(&t[..open])))?;
        let dims: Vec<String> = dims
            .split(',')
            .map(|d| d.chars().filter(|c| !c.is_whitespace()).collect())
            .collect();
        if dims.is_empty() || dims.len() > port_codegen::ir::MAX_DIMS as usize {
            return Err(bad(t, &format!("arrays have 1 to {MAX_DIMS} dimensions")));
        }
        let mut contiguous = false;
        for (k, d) in dims.iter().enumerate() {
            match d.as_str() {
                ":" => {}
                "::1" if k + 1 == dims.len() => contiguous = true,
                _ => {
                    return Err(bad(
                        t,
                        "each dimension is `:`, and the last may be `::1` (C order)",
                    ))
                }
            }
        }
        return Ok(ArgType::Array(ArrayType {
            elem,
            ndim: dims.len() as u8,
            contiguous,
        }));
    }
    scalar_from_name(t).map(ArgType::Scalar).ok_or_else(|| {
        bad(
            t,
            &format!("unknown or unsupported type; port takes {SUPPORTED}"),
        )
    })
}

/// One entry of a signature: a type, or a constant the plan is specialised
/// to (`None`, `'reflect'`), for a parameter every call passes it to.
#[derive(Clone, Debug, PartialEq)]
pub enum SigItem {
    Type(ArgType),
    Literal(String),
}

/// Parses a comma-separated signature, splitting only at top-level commas
/// (`float64[:, :]` holds one).
pub fn parse_signature(sig: &str) -> Result<Vec<ArgType>, RewriteError> {
    parse_signature_items(sig)?
        .into_iter()
        .map(|i| match i {
            SigItem::Type(t) => Ok(t),
            SigItem::Literal(c) => Err(RewriteError::BadSignature(format!(
                "`{c}` is a constant, not a type"
            ))),
        })
        .collect()
}

/// [`parse_signature`] where an entry may also be `None` or a quoted string:
/// the constant a parameter is specialised to.
pub fn parse_signature_items(sig: &str) -> Result<Vec<SigItem>, RewriteError> {
    let parse_item = |t: &str| -> Result<SigItem, RewriteError> {
        let w = t.trim();
        let quoted = w.len() >= 2
            && ((w.starts_with('\'') && w.ends_with('\''))
                || (w.starts_with('"') && w.ends_with('"')));
        if w == "None" || quoted {
            return Ok(SigItem::Literal(w.to_string()));
        }
        parse_type(t).map(SigItem::Type)
    };
    let mut out = Vec::new();
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    let mut cur = String::new();
    // A return type (`float64(float64, float64[:])`) is allowed and ignored.
    let body = match (sig.find('('), sig.trim_end().strip_suffix(')')) {
        (Some(p), Some(_))
            if !sig[..p].contains('[') && !sig.trim_start().starts_with("array(") =>
        {
            let inner = &sig[p + 1..];
            inner
                .trim_end()
                .strip_suffix(')')
                .unwrap_or(inner)
                .to_string()
        }
        _ => sig.to_string(),
    };
    for c in body.chars() {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (_, Some(_)) => {}
            ('[' | '(', None) => depth += 1,
            (']' | ')', None) => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 && quote.is_none() {
            out.push(parse_item(&cur)?);
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push(parse_item(&cur)?);
    } else if !out.is_empty() || body.trim().is_empty() {
        return Err(RewriteError::BadSignature(format!(
            "`{}`: empty type in the signature",
            sig.trim()
        )));
    }
    Ok(out)
}

/// Why a profiled call gives no type for parameter `index`: it was not
/// captured (`error` is `None`), or captured as a value no kernel takes.
#[derive(Debug)]
pub struct CapturedGap {
    pub index: usize,
    pub error: Option<RewriteError>,
}

/// The types a profiled call gives `params`, in order, each found by name
/// (else by position) among `captured`. Trailing parameters with defaults
/// (`defaulted`, a flag per parameter) that were not captured, or captured
/// as values no kernel takes (a tuple, a function), keep their defaults:
/// the list stops before them, as a `--signature` shorter than the
/// parameters does, and the migrated function runs the original on a call
/// that passes others. `port analyze` and `port migrate` plan with these.
pub fn from_captured_call(
    captured: &[port_analyzer::ArgType],
    params: &[String],
    defaulted: &[bool],
) -> Result<Vec<ArgType>, CapturedGap> {
    let keeps_default =
        |k: usize| k > 0 && defaulted.len() == params.len() && defaulted[k..].iter().all(|d| *d);
    let mut out = Vec::new();
    for (k, p) in params.iter().enumerate() {
        let t = captured
            .iter()
            .find(|t| t.name == *p)
            .or_else(|| captured.get(k));
        match t.map(from_captured) {
            Some(Ok(t)) => out.push(t),
            _ if keeps_default(k) => break,
            Some(Err(e)) => {
                return Err(CapturedGap {
                    index: k,
                    error: Some(e),
                })
            }
            None => {
                return Err(CapturedGap {
                    index: k,
                    error: None,
                })
            }
        }
    }
    Ok(out)
}

/// The type the profiler saw for an argument, as the analysis stores it.
pub fn from_captured(t: &port_analyzer::ArgType) -> Result<ArgType, RewriteError> {
    match t.kind.as_str() {
        "ndarray" => {
            let elem = scalar_from_name(&t.dtype).ok_or_else(|| {
                RewriteError::CapturedType(format!(
                    "argument `{}` was captured as a {} array; port takes {SUPPORTED}",
                    t.name, t.dtype
                ))
            })?;
            let ndim = t.ndim.unwrap_or(1);
            if !(1..=u32::from(port_codegen::ir::MAX_DIMS)).contains(&ndim) {
                return Err(RewriteError::CapturedType(format!(
                    "argument `{}` was captured with {ndim} dimensions; port's kernels take 1 to {MAX_DIMS}",
                    t.name
                )));
            }
            Ok(ArgType::Array(ArrayType {
                elem,
                ndim: ndim as u8,
                contiguous: t.c_contiguous.unwrap_or(false),
            }))
        }
        "scalar" => scalar_from_name(&t.dtype)
            .map(ArgType::Scalar)
            .ok_or_else(|| {
                RewriteError::CapturedType(format!(
                    "argument `{}` was captured as `{}`; port takes {SUPPORTED}",
                    t.name, t.dtype
                ))
            }),
        other => Err(RewriteError::CapturedType(format!(
            "argument `{}` was captured as `{other}` ({}); port takes {SUPPORTED}",
            t.name, t.dtype
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numba_signatures() {
        let sig = parse_signature("float64, float64[:], float32[:, ::1], int64").unwrap();
        assert_eq!(sig.len(), 4);
        assert_eq!(sig[0], ArgType::Scalar(ScalarType::F64));
        assert_eq!(
            sig[2],
            ArgType::Array(ArrayType {
                elem: ScalarType::F32,
                ndim: 2,
                contiguous: true
            })
        );
        assert_eq!(sig[2].numba(), "float32[:, ::1]");
        let with_ret = parse_signature("float64(float64, float64)").unwrap();
        assert_eq!(with_ret.len(), 2);
        let ints = parse_signature("uint8[:, :], int16, uint64[::1], int8").unwrap();
        assert_eq!(ints[0].elem(), ScalarType::U8);
        assert_eq!(ints[1], ArgType::Scalar(ScalarType::I16));
        assert_eq!(ints[2].numba(), "uint64[::1]");
        assert_eq!(ints[3].numba(), "int8");
        let arr = parse_signature("array(float64, 2d, C)").unwrap();
        assert_eq!(arr[0].numba(), "float64[:, ::1]");
    }

    #[test]
    fn rejects_bad_types() {
        let e = parse_signature("int64, float16[:]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("complex128"), "the supported list: {e}");
        assert_eq!(
            parse_signature("complex64, complex128[:, ::1]").unwrap()[1].elem(),
            ScalarType::C128
        );
        assert!(parse_signature("float64[::2]").is_err());
        assert!(parse_signature("float64,, int64").is_err());
        assert!(parse_signature("float64[:").is_err());
        assert!(parse_signature("float16[:]").is_err());
    }
}
