//! What Numba supports, as lists: the knowledge the classifier checks calls
//! against. Sources: Numba's "Supported Python features" (`pysupported`),
//! "Supported NumPy features" (`numpysupported`) and "Supported Python
//! features in CUDA Python" (`cudapysupported`), checked against numba 0.68 /
//! numba-cuda 0.30 with the oracle in `scripts/oracle/`.

/// Modules nopython mode can use from inside a compiled function.
pub const NOPYTHON_MODULES: &[&str] = &[
    "numpy", "math", "cmath", "random", "operator", "numba", "enum", "ctypes", "cffi",
];

/// Python builtins nopython mode supports (pysupported "Built-in functions").
pub const NOPYTHON_BUILTINS: &[&str] = &[
    "abs",
    "bool",
    "chr",
    "complex",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "hash",
    "int",
    "isinstance",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "ord",
    "print",
    "range",
    "repr",
    "round",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "dict",
    "set",
    "slice",
    "reversed",
    "pow",
    "any",
    "all",
    "type",
    "hex",
    "bin",
    "oct",
    "format",
];

/// Builtins that exist in nopython mode but not inside a CUDA kernel, or that
/// build containers a kernel cannot hold.
pub const CUDA_BLOCKING_BUILTINS: &[&str] = &[
    "list",
    "dict",
    "set",
    "sorted",
    "str",
    "repr",
    "filter",
    "map",
    "iter",
    "next",
    "hash",
    "hex",
    "bin",
    "oct",
    "format",
    "chr",
    "ord",
    "reversed",
    "sum",
    "any",
    "all",
    "isinstance",
];

/// Every other builtin name: calling one forces object mode.
pub const PYTHON_BUILTINS: &[&str] = &[
    "open",
    "input",
    "eval",
    "exec",
    "compile",
    "getattr",
    "setattr",
    "delattr",
    "hasattr",
    "globals",
    "locals",
    "vars",
    "dir",
    "id",
    "super",
    "object",
    "property",
    "staticmethod",
    "classmethod",
    "callable",
    "issubclass",
    "memoryview",
    "bytearray",
    "bytes",
    "frozenset",
    "breakpoint",
    "help",
    "ascii",
    "__import__",
];

/// `numpy.X` functions (and `numpy.sub.X`) that nopython mode supports.
pub const NUMPY_NOPYTHON: &[&str] = &[
    // array creation
    "empty",
    "zeros",
    "ones",
    "full",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "arange",
    "linspace",
    "eye",
    "identity",
    "array",
    "asarray",
    "ascontiguousarray",
    "asfortranarray",
    "copy",
    "diag",
    "tri",
    "tril",
    "triu",
    "vander",
    "fromstring",
    "frombuffer",
    "geomspace",
    "logspace",
    // manipulation
    "reshape",
    "ravel",
    "transpose",
    "concatenate",
    "stack",
    "vstack",
    "hstack",
    "dstack",
    "column_stack",
    "row_stack",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "expand_dims",
    "squeeze",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "rot90",
    "swapaxes",
    "moveaxis",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_to",
    "broadcast_arrays",
    "repeat",
    "tile",
    "append",
    "delete",
    "insert",
    "resize",
    "trim_zeros",
    "take",
    "take_along_axis",
    "select",
    "where",
    "nonzero",
    "flatnonzero",
    "argwhere",
    "extract",
    "place",
    "put",
    "clip",
    "unique",
    "setdiff1d",
    "union1d",
    "intersect1d",
    "in1d",
    "isin",
    "searchsorted",
    "digitize",
    "bincount",
    "histogram",
    "convolve",
    "correlate",
    "sort",
    "argsort",
    "partition",
    "argpartition",
    "lexsort",
    "count_nonzero",
    "diff",
    "ediff1d",
    "gradient",
    "cross",
    "outer",
    "kron",
    "dot",
    "vdot",
    "inner",
    "matmul",
    "trace",
    "convolve",
    "correlate",
    "interp",
    "polyfit",
    "polyval",
    "roots",
    "cov",
    "corrcoef",
    "ndindex",
    "ndenumerate",
    "nditer",
    "shape",
    "ndim",
    "size",
    "isscalar",
    "iscomplex",
    "isreal",
    "iscomplexobj",
    "isrealobj",
    "result_type",
    "can_cast",
    "finfo",
    "iinfo",
    "allclose",
    "isclose",
    "array_equal",
    "asfarray",
    "real",
    "imag",
    "conj",
    "conjugate",
    "angle",
    "real_if_close",
    "nan_to_num",
    "union1d",
    "unwrap",
    // reductions
    "sum",
    "prod",
    "mean",
    "median",
    "std",
    "var",
    "min",
    "max",
    "amin",
    "amax",
    "argmin",
    "argmax",
    "all",
    "any",
    "cumsum",
    "cumprod",
    "nansum",
    "nanprod",
    "nanmean",
    "nanmedian",
    "nanstd",
    "nanvar",
    "nanmin",
    "nanmax",
    "nanargmin",
    "nanargmax",
    "nancumsum",
    "nancumprod",
    "percentile",
    "nanpercentile",
    "quantile",
    "nanquantile",
    "average",
    "ptp",
    // ufuncs (numpysupported "Math operations" and friends)
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "floor_divide",
    "negative",
    "positive",
    "power",
    "float_power",
    "remainder",
    "mod",
    "fmod",
    "divmod",
    "abs",
    "absolute",
    "fabs",
    "rint",
    "sign",
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "expm1",
    "log1p",
    "sqrt",
    "square",
    "cbrt",
    "reciprocal",
    "gcd",
    "lcm",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "hypot",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "deg2rad",
    "rad2deg",
    "degrees",
    "radians",
    "floor",
    "ceil",
    "trunc",
    "fix",
    "round",
    "around",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "invert",
    "left_shift",
    "right_shift",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "isfinite",
    "isinf",
    "isnan",
    "signbit",
    "copysign",
    "nextafter",
    "modf",
    "ldexp",
    "frexp",
    "spacing",
    "logaddexp",
    "logaddexp2",
    "heaviside",
    "sinc",
    "i0",
    // scalar types and dtype helpers
    "float32",
    "float64",
    "float16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "intp",
    "uintp",
    "bool_",
    "complex64",
    "complex128",
    "double",
    "single",
    "int_",
    "uint",
    "float_",
    "dtype",
    "longlong",
    "ulonglong",
    "byte",
    "ubyte",
    "short",
    "ushort",
    "intc",
    "uintc",
    // constants
    "pi",
    "e",
    "inf",
    "nan",
    "newaxis",
    "euler_gamma",
    "PINF",
    "NINF",
    "NaN",
    "Inf",
    // submodules (their functions are checked one by one)
    "linalg.dot",
    "linalg.inv",
    "linalg.pinv",
    "linalg.solve",
    "linalg.lstsq",
    "linalg.det",
    "linalg.slogdet",
    "linalg.eig",
    "linalg.eigh",
    "linalg.eigvals",
    "linalg.eigvalsh",
    "linalg.svd",
    "linalg.qr",
    "linalg.cholesky",
    "linalg.norm",
    "linalg.cond",
    "linalg.matrix_rank",
    "linalg.matrix_power",
    "random.random",
    "random.rand",
    "random.randn",
    "random.randint",
    "random.uniform",
    "random.normal",
    "random.standard_normal",
    "random.seed",
    "random.shuffle",
    "random.permutation",
    "random.choice",
    "random.random_sample",
    "random.ranf",
    "random.sample",
    "random.exponential",
    "random.standard_exponential",
    "random.gamma",
    "random.standard_gamma",
    "random.beta",
    "random.binomial",
    "random.poisson",
    "random.lognormal",
    "random.laplace",
    "random.logistic",
    "random.gumbel",
    "random.geometric",
    "random.chisquare",
    "random.weibull",
    "random.pareto",
    "random.rayleigh",
    "random.triangular",
    "random.vonmises",
    "random.wald",
    "random.zipf",
    "random.power",
    "random.f",
    "random.hypergeometric",
    "random.negative_binomial",
    "random.multinomial",
    "random.dirichlet",
    "random.standard_cauchy",
    "random.standard_t",
    "random.logseries",
];

/// `numpy.X` that a kernel can hold after port's rewrites: elementwise
/// ufuncs become per-element math, reductions become loops or reduction
/// kernels, allocations move to the host wrapper.
pub const NUMPY_KERNEL_ELEMENTWISE: &[&str] = &[
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "floor_divide",
    "negative",
    "positive",
    "power",
    "remainder",
    "mod",
    "fmod",
    "abs",
    "absolute",
    "fabs",
    "rint",
    "sign",
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "expm1",
    "log1p",
    "sqrt",
    "square",
    "cbrt",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "hypot",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "deg2rad",
    "rad2deg",
    "degrees",
    "radians",
    "floor",
    "ceil",
    "trunc",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "isfinite",
    "isinf",
    "isnan",
    "copysign",
    "where",
    "clip",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "float32",
    "float64",
    "int32",
    "int64",
    "pi",
    "e",
    "inf",
    "nan",
    "round",
    "around",
];

/// Reductions a kernel holds as a thread-private loop or a reduction kernel.
pub const NUMPY_KERNEL_REDUCTIONS: &[&str] = &[
    "sum", "mean", "max", "min", "amax", "amin", "prod", "dot", "vdot", "trace",
];

/// Allocations the host wrapper can make instead of the kernel.
pub const NUMPY_ALLOCATIONS: &[&str] = &[
    "empty",
    "zeros",
    "ones",
    "full",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
];

/// `ndarray` methods nopython mode supports.
pub const NDARRAY_METHODS: &[&str] = &[
    "sum",
    "prod",
    "mean",
    "std",
    "var",
    "min",
    "max",
    "argmin",
    "argmax",
    "all",
    "any",
    "cumsum",
    "cumprod",
    "copy",
    "reshape",
    "ravel",
    "flatten",
    "transpose",
    "astype",
    "fill",
    "item",
    "itemset",
    "sort",
    "argsort",
    "nonzero",
    "dot",
    "view",
    "take",
    "repeat",
    "clip",
    "conj",
    "conjugate",
    "squeeze",
    "swapaxes",
    "tobytes",
    "ptp",
];

/// `ndarray` methods a kernel holds after port's rewrites.
pub const NDARRAY_KERNEL_METHODS: &[&str] = &[
    "sum", "prod", "mean", "min", "max", "astype", "fill", "item",
];

/// `ndarray` attributes nopython mode supports.
pub const NDARRAY_ATTRIBUTES: &[&str] = &[
    "shape", "ndim", "size", "dtype", "T", "real", "imag", "strides", "itemsize", "nbytes",
    "flags", "flat", "ctypes",
];

/// `str` methods nopython mode supports (pysupported "str").
pub const STR_METHODS: &[&str] = &[
    "upper",
    "lower",
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "rsplit",
    "join",
    "startswith",
    "endswith",
    "find",
    "rfind",
    "index",
    "rindex",
    "count",
    "replace",
    "isdigit",
    "isalpha",
    "isalnum",
    "isspace",
    "isupper",
    "islower",
    "istitle",
    "isdecimal",
    "isnumeric",
    "isidentifier",
    "isprintable",
    "isascii",
    "center",
    "ljust",
    "rjust",
    "zfill",
    "title",
    "capitalize",
    "casefold",
    "swapcase",
    "expandtabs",
    "splitlines",
    "partition",
    "rpartition",
];

/// Whole-array operations the rewriter's host schedule composes from its
/// own kernels (products as reductions over broadcast products, scans as
/// three-kernel scans) or runs as library steps between them (`sort`,
/// `median`): no static blocker; the planner decides each use.
const NUMPY_HOST_SCHEDULE: &[&str] = &[
    "matmul",
    "dot",
    "vdot",
    "inner",
    "outer",
    "cumsum",
    "cumprod",
    "cov",
    "trace",
    "diagonal",
    "diag",
    "linalg.norm",
    "histogram",
    "convolve",
    "correlate",
    "tile",
    "repeat",
    "diff",
    "sort",
    "median",
];

/// Is `numpy.<name>` (name may be dotted, e.g. `linalg.inv`) supported in nopython mode?
pub fn numpy_nopython(name: &str) -> bool {
    NUMPY_NOPYTHON.contains(&name)
}

/// Why a nopython-supported NumPy function cannot go into a kernel, if it cannot.
pub fn numpy_cuda_blocker(name: &str) -> Option<&'static str> {
    if NUMPY_KERNEL_ELEMENTWISE.contains(&name)
        || NUMPY_KERNEL_REDUCTIONS.contains(&name)
        || NUMPY_ALLOCATIONS.contains(&name)
        || NUMPY_HOST_SCHEDULE.contains(&name)
    {
        return None;
    }
    Some(if name.starts_with("linalg.") {
        "np.linalg has no CUDA kernel equivalent; keep it on the host or use cuSOLVER/CuPy"
    } else if name.starts_with("random.") {
        "np.random cannot run in a kernel; use numba.cuda.random (xoroshiro128p)"
    } else if matches!(
        name,
        "argsort"
            | "partition"
            | "argpartition"
            | "lexsort"
            | "unique"
            | "percentile"
            | "quantile"
            | "nanmedian"
            | "nanpercentile"
            | "nanquantile"
    ) {
        "sorting has no per-thread kernel form; sort on the host or with CuPy"
    } else if matches!(name, "cumsum" | "cumprod" | "nancumsum" | "nancumprod") {
        "a prefix scan is not element-parallel; use a scan primitive (CuPy)"
    } else if matches!(
        name,
        "nonzero"
            | "flatnonzero"
            | "argwhere"
            | "extract"
            | "unique"
            | "count_nonzero"
            | "setdiff1d"
            | "union1d"
            | "intersect1d"
            | "histogram"
            | "bincount"
            | "append"
            | "delete"
            | "insert"
            | "trim_zeros"
            | "resize"
    ) {
        "the result's size depends on the data; a kernel cannot allocate it"
    } else if matches!(
        name,
        "matmul" | "outer" | "kron" | "inner" | "cross" | "convolve" | "correlate"
    ) {
        "a whole-array linear-algebra operation; write it as explicit loops or use cuBLAS/CuPy"
    } else {
        "a whole-array NumPy operation with no kernel form in port's rewrites"
    })
}

/// Is this an app-level module name that Numba knows nothing about?
pub fn module_is_nopython(root: &str) -> bool {
    NOPYTHON_MODULES.contains(&root)
}

/// Functions of `math` that nopython supports (everything but these few).
pub fn math_nopython(name: &str) -> bool {
    !matches!(
        name,
        "factorial"
            | "comb"
            | "perm"
            | "prod"
            | "fsum"
            | "isqrt"
            | "dist"
            | "lcm"
            | "nextafter"
            | "ulp"
    )
}

/// Functions of `random` that nopython supports.
pub fn random_nopython(name: &str) -> bool {
    matches!(
        name,
        "random"
            | "randint"
            | "randrange"
            | "uniform"
            | "gauss"
            | "normalvariate"
            | "seed"
            | "shuffle"
            | "choice"
            | "betavariate"
            | "expovariate"
            | "gammavariate"
            | "lognormvariate"
            | "paretovariate"
            | "triangular"
            | "vonmisesvariate"
            | "weibullvariate"
            | "getrandbits"
    )
}

// Numba 0.68's nopython mode at the level of arguments ("Supported NumPy
// features": a supported function may still refuse an argument, a keyword
// or a kind of argument). Every row has a fixture in
// `fixtures/classify/numba_args.py` checked against real Numba.

/// Reductions (functions and array methods) that take no `axis` in nopython
/// mode. `sum`, `argmax`, `argmin` and `cumsum` do take one.
pub const NUMPY_NO_AXIS: &[&str] = &[
    "mean",
    "max",
    "amax",
    "min",
    "amin",
    "std",
    "var",
    "prod",
    "any",
    "all",
    "median",
    "nanmean",
    "nanmax",
    "nanmin",
    "nanstd",
    "nanvar",
    "nanprod",
    "nansum",
    "nanmedian",
    "ptp",
    "cumprod",
];

/// Keywords a supported NumPy function refuses in nopython mode.
pub const NUMPY_REFUSED_KEYWORDS: &[(&str, &[&str])] = &[
    ("histogram", &["weights", "density"]),
    ("linspace", &["dtype", "endpoint", "retstep", "axis"]),
];

/// The `scipy.special` functions `port migrate` lowers (PORT122; the
/// rewriter's `math_calls::special` takes each, which its tests check).
pub const SCIPY_SPECIAL: &[&str] = &["erf", "erfc", "expit", "gamma", "gammaln"];

/// Ufuncs: nopython mode accepts no keyword argument when calling them.
pub const NUMPY_UFUNCS: &[&str] = &[
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "floor_divide",
    "power",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "sqrt",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "hypot",
    "sinh",
    "cosh",
    "tanh",
    "absolute",
    "abs",
    "negative",
    "square",
    "reciprocal",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "sign",
];

/// Methods of ufunc objects (`np.add.outer`): none is supported.
pub const UFUNC_METHODS: &[&str] = &["outer", "reduce", "accumulate", "at", "reduceat"];

/// Functions whose shape (first argument) must be an int or a tuple, not a list.
pub const NUMPY_SHAPE_FIRST: &[&str] = &["empty", "zeros", "ones", "full"];

/// A gap of nopython mode at the level of one call's arguments: the finding
/// code and its message, or `None` when Numba takes the call as written.
///
/// `name` is the NumPy function (`mean`) or array method (`method` true);
/// `keywords` the keyword names, `positional` the number of positional
/// arguments (the receiver of a method not counted), `first_is_list`
/// whether the shape/axes argument is a list, `ranks` the known ranks of
/// the array arguments.
pub fn numpy_argument_gap(
    name: &str,
    method: bool,
    keywords: &[&str],
    positional: usize,
    list_arg: bool,
    ranks: &[Option<u8>],
) -> Option<(&'static str, String)> {
    let call = if method {
        format!(".{name}()")
    } else {
        format!("np.{name}")
    };
    if keywords.contains(&"keepdims") {
        return Some((
            "PORT117",
            format!("{call}(..., keepdims=...): nopython mode takes no keepdims"),
        ));
    }
    let axis_at = if method { 1 } else { 2 };
    if NUMPY_NO_AXIS.contains(&name) && (keywords.contains(&"axis") || positional >= axis_at) {
        return Some((
            "PORT116",
            format!(
                "{call}(..., axis=...): nopython mode supports {call} only over the whole array"
            ),
        ));
    }
    if !method {
        if let Some((_, refused)) = NUMPY_REFUSED_KEYWORDS.iter().find(|(f, _)| *f == name) {
            if let Some(k) = keywords.iter().find(|k| refused.contains(k)) {
                return Some((
                    "PORT118",
                    format!("np.{name}(..., {k}=...): nopython mode does not take `{k}`"),
                ));
            }
        }
        if NUMPY_UFUNCS.contains(&name) {
            if let Some(k) = keywords.first() {
                return Some((
                    "PORT118",
                    format!("np.{name}(..., {k}=...): nopython mode passes no keyword to a ufunc"),
                ));
            }
        }
        if list_arg && (NUMPY_SHAPE_FIRST.contains(&name) || name == "transpose") {
            let what = if name == "transpose" { "axes" } else { "shape" };
            return Some((
                "PORT120",
                format!("np.{name} with a list as its {what}: nopython mode wants a tuple"),
            ));
        }
        if name == "matmul" {
            return Some((
                "PORT121",
                "np.matmul: nopython mode implements `@`, not np.matmul".into(),
            ));
        }
    }
    if matches!(name, "dot" | "matmul") && ranks.iter().any(|r| r.is_some_and(|n| n > 2)) {
        return Some(("PORT121", format!("{call} on an array of more than 2 dimensions: nopython mode multiplies vectors and matrices only")));
    }
    None
}
