//! The `_port_*` helpers a migrated module calls: launch configuration,
//! moving arguments to the device and back, the CPU fallback, the aliasing
//! check, library calls. Each is one Python definition; a patched file gets
//! exactly the ones its wrappers and kernels reach (and those reach), once,
//! so a module reads like a hand port rather than a pasted runtime.

/// One helper: its name and its Python source (a `def`, or a decorated one).
pub struct Helper {
    pub name: &'static str,
    pub source: &'static str,
}

/// Every helper, in the order a patched file lists them.
pub const HELPERS: &[Helper] = &[
    Helper {
        name: "_port_use_gpu",
        source: r#"def _port_use_gpu():
    """Whether the kernels run. PORT_DEVICE=gpu says always, =cpu never
    (the original functions run); unset or =auto, they run where a CUDA
    device (or Numba's CUDA simulator) is available, and otherwise the
    originals run, with one warning."""
    import os
    choice = os.environ.get("PORT_DEVICE", "auto").strip().lower()
    if choice == "gpu":
        return True
    if choice == "cpu":
        return False
    if choice not in ("", "auto"):
        raise ValueError(f"PORT_DEVICE={choice!r}: use gpu, cpu or auto")
    if not hasattr(_port_use_gpu, "available"):
        _port_use_gpu.available = cuda.is_available()
        if not _port_use_gpu.available:
            import warnings
            warnings.warn("port: no CUDA device, so the migrated functions run their original "
                          "CPU code (set PORT_DEVICE=cpu to choose that without this warning)",
                          RuntimeWarning, stacklevel=3)
    return _port_use_gpu.available
"#,
    },
    Helper {
        name: "_port_run_original",
        source: r#"def _port_run_original(why, original, *args):
    """`original(*args)`, the function as the user wrote it, for a call its
    kernels would not give the original's results on; says why, once per
    reason."""
    import warnings
    warnings.warn(f"port: {why}; this call runs the original CPU code", RuntimeWarning, stacklevel=3)
    return original(*args)
"#,
    },
    Helper {
        name: "_port_differs",
        source: r#"def _port_differs(args):
    """How this call's arguments differ from the types the kernels were
    built for (None when they do not): an array of another dtype or rank, or
    no array; a scalar of another kind. `args` holds (name, value, dtype,
    ndim, either) per argument; with `either`, a Python number and a NumPy
    scalar of the dtype stand for each other (NumPy 2 promotes them alike
    with this function's arrays)."""
    weak = {np.bool_: bool, np.int64: int, np.float64: float}
    python = {np.bool_: bool, np.int64: int, np.float64: float, np.complex128: complex}
    for name, a, dtype, ndim, either in args:
        if ndim:
            d = cuda.as_cuda_array(a) if _port_on_gpu(a) else a
            if not isinstance(d, np.ndarray) and not _port_on_gpu(a):
                return f"`{name}` is a {type(a).__name__}, not an array"
            if d.dtype != dtype or d.ndim != ndim:
                return f"`{name}` is {d.ndim}-D {d.dtype}"
            continue
        if type(a) is python.get(dtype) and (dtype in weak or either):
            continue
        if isinstance(a, np.generic) and a.dtype == dtype and (dtype not in weak or either):
            continue
        what = f"a {a.dtype} scalar" if isinstance(a, np.generic) else f"of type {type(a).__name__}"
        return f"`{name}` is {what}"
    return None
"#,
    },
    Helper {
        name: "_port_vectorized",
        source: r#"def _port_vectorized(original, otypes, *args):
    """The scalar function `original` applied as the migrated ufunc applies
    it: to every element of its broadcast arguments, a scalar for scalars."""
    if all(np.ndim(a) == 0 for a in args):
        return original(*args)
    return np.vectorize(original, otypes=otypes)(*args)
"#,
    },
    Helper {
        name: "_port_aliased",
        source: r#"def _port_aliased(function, arrays, written, one_array_ok=()):
    """Why the kernels cannot take this call, or None: two arguments share
    memory and one of them is written, where the kernels read each
    argument as it was before the call. Host arrays are compared with
    `np.shares_memory`, and the original then runs; GPU arrays by the bytes
    their CUDA Array Interface spans, an error, as the original cannot run
    on them. A pair in `one_array_ok` (the program's own call passed one
    host array for both, and port verified the kernels on it) may be one
    array."""
    for w in written:
        a = arrays[w]
        for n, b in arrays.items():
            if n == w or _port_on_gpu(a) != _port_on_gpu(b):
                continue
            if ((w, n) in one_array_ok or (n, w) in one_array_ok) and not _port_on_gpu(a) \
                    and isinstance(a, np.ndarray) and isinstance(b, np.ndarray) \
                    and a.__array_interface__ == b.__array_interface__:
                continue
            if _port_on_gpu(a):
                (lo, hi), (lo2, hi2) = _port_span(a), _port_span(b)
                if lo < hi2 and lo2 < hi:
                    raise ValueError(f"{function}: `{w}` and `{n}` share GPU memory and `{w}` is "
                                     "written, which the migrated kernels do not model: pass "
                                     "arrays that do not overlap, or host arrays")
                continue
            if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
                continue
            if np.may_share_memory(a, b):
                try:
                    shared = np.shares_memory(a, b, max_work=100000)
                except Exception:  # too costly to decide exactly: take it as shared
                    shared = True
                if shared:
                    return f"{function}: `{w}` is written and shares memory with `{n}`"
    return None
"#,
    },
    Helper {
        name: "_port_span",
        source: r#"def _port_span(a):
    """The bytes `[lo, hi)` a GPU array spans, from its CUDA Array Interface."""
    i = a.__cuda_array_interface__
    ptr, shape = i["data"][0], tuple(i["shape"])
    itemsize = np.dtype(i["typestr"]).itemsize
    if any(n == 0 for n in shape):
        return ptr, ptr
    strides = i.get("strides") or tuple(
        itemsize * int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape)))
    lo = ptr + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = ptr + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return lo, hi
"#,
    },
    Helper {
        name: "_port_blocks",
        source: r#"def _port_blocks(n, threads):
    """Blocks for n work items: enough to cover them, at most 32 per SM of
    this GPU (the kernels' grid-stride loops do the rest)."""
    # The CUDA simulator's device reports no SM count.
    sms = getattr(cuda.get_current_device(), "MULTIPROCESSOR_COUNT", 1)
    return max(1, min((n + threads - 1) // threads, 32 * sms, 65535))
"#,
    },
    Helper {
        name: "_port_reduce_blocks",
        source: r#"def _port_reduce_blocks(n, threads):
    """Blocks of a reduction kernel: enough to cover n items, at most 16
    per SM and 2048 in all (each block ends in one atomic)."""
    sms = getattr(cuda.get_current_device(), "MULTIPROCESSOR_COUNT", 1)
    return max(1, min((n + threads - 1) // threads, 16 * sms, 2048))
"#,
    },
    Helper {
        name: "_port_grid_2d",
        source: r#"def _port_grid_2d(rows, cols):
    """A 2-D grid of 16 x 16 blocks over rows x cols (x runs along cols)."""
    return (max(1, min((cols + 15) // 16, 65535)), max(1, min((rows + 15) // 16, 65535)))
"#,
    },
    Helper {
        name: "_port_simulated",
        source: r#"def _port_simulated():
    """Whether Numba's CUDA simulator runs the kernels: its threads are
    Python threads, and a kernel whose blocks synchronise at every step
    crawls there, so the wrapper takes the other kernel of a choice."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)
"#,
    },
    Helper {
        name: "_port_on_gpu",
        source: r#"def _port_on_gpu(a):
    """Whether `a` already lives on the GPU (CuPy, Numba, PyTorch, ...)."""
    return hasattr(a, "__cuda_array_interface__")
"#,
    },
    Helper {
        name: "_port_to_device",
        source: r#"def _port_to_device(a, dtype, copy=False):
    """`a` as a device array of `dtype`: a GPU array is used where it is,
    with no copy unless `copy` (the kernels then write a copy, and the
    caller's array only gets it at the end); a host array is copied over
    once."""
    if _port_on_gpu(a):
        d = cuda.as_cuda_array(a)
        if d.dtype != dtype:
            raise TypeError(f"a device array of {d.dtype}: the kernels take {np.dtype(dtype)}")
        if copy:
            c = cuda.device_array(d.shape, dtype=d.dtype)
            c.copy_to_device(d)
            return c
        return d
    return cuda.to_device(np.ascontiguousarray(a, dtype=dtype))
"#,
    },
    Helper {
        name: "_port_copy_back",
        source: r#"def _port_copy_back(a, d):
    """The caller's array gets what the kernels wrote into `d` (nothing to
    do when `d` is the caller's own GPU array)."""
    if _port_on_gpu(a):
        if _port_span(a)[0] != _port_span(d)[0]:
            cuda.as_cuda_array(a).copy_to_device(d)
    else:
        a[...] = d.copy_to_host()
"#,
    },
    Helper {
        name: "_port_result",
        source: r#"def _port_result(d, on_gpu):
    """A result: left on the GPU when the arguments were, else brought back."""
    return d if on_gpu else d.copy_to_host()
"#,
    },
    Helper {
        name: "_port_shape_error",
        source: r#"def _port_shape_error(what, lhs, lhs_value, rhs=None, rhs_value=None, error=ValueError):
    """Arrays of shapes the kernels were not built for: NumPy's own error
    (operands that do not broadcast; an index past an extent, `error`
    IndexError), or an extent of 1 the kernels were specialised to (`rhs`
    None). Raised before any kernel reads them."""
    if rhs is None:
        raise error(f"{what}; here `{lhs}` is {lhs_value}: migrate again on inputs of this shape")
    raise error(f"{what}: `{lhs}` is {lhs_value} but `{rhs}` is {rhs_value}")
"#,
    },
    // Filled allocations: the array is made and filled on the device, so
    // an accumulator zeroed in each step of a time loop costs a launch,
    // not a host array and a transfer.
    Helper {
        name: "_port_fill",
        source: r#"@cuda.jit
def _port_fill(flat, value):
    """Every element of the 1-D device array `flat` set to `value`."""
    i = cuda.grid(1)
    while i < flat.size:
        flat[i] = value
        i += cuda.gridsize(1)
"#,
    },
    Helper {
        name: "_port_full",
        source: r#"def _port_full(shape, value, dtype):
    """`np.full(shape, value, dtype=dtype)` made on the device."""
    d = cuda.device_array(shape, dtype=dtype)
    if d.size:
        _port_fill[_port_blocks(d.size, 256), 256](d.reshape(d.size), value)
    return d
"#,
    },
    // Library steps: with CuPy importable and the arrays on a GPU, the
    // routine runs there on the device arrays themselves (the CUDA Array
    // Interface, no copy); else NumPy runs it on host copies and the result
    // is copied back (the path Numba's CUDA simulator takes).
    Helper {
        name: "_port_linalg",
        source: r#"def _port_linalg(f, out, *arrays):
    """`f(xp, *arrays)` written into the device array `out`: with `xp` CuPy
    on the device arrays themselves (no copy) when CuPy is importable and
    they live on a GPU, else NumPy on host copies, the result copied back.
    Raises NumPy's LinAlgError where NumPy would."""
    xp = None
    if all(_port_on_gpu(a) for a in arrays):
        try:
            import cupy as xp
            import cupyx
        except ImportError:
            xp = None
    if xp is None:
        value = f(np, *[a.copy_to_host() for a in arrays])
        out.copy_to_device(np.ascontiguousarray(np.reshape(value, out.shape), dtype=out.dtype))
        return
    with cupyx.errstate(linalg="raise"):
        value = f(xp, *[xp.asarray(a) for a in arrays])
    xp.asarray(out)[...] = xp.asarray(value).reshape(out.shape)
"#,
    },
    Helper {
        name: "_port_cholesky",
        source: r#"def _port_cholesky(a, out):
    """`np.linalg.cholesky(a)` (the lower factor) into `out`."""
    _port_linalg(lambda xp, a: xp.linalg.cholesky(a), out, a)
"#,
    },
    Helper {
        name: "_port_solve",
        source: r#"def _port_solve(a, b, out):
    """`np.linalg.solve(a, b)` into `out`."""
    _port_linalg(lambda xp, a, b: xp.linalg.solve(a, b), out, a, b)
"#,
    },
    Helper {
        name: "_port_inv",
        source: r#"def _port_inv(a, out):
    """`np.linalg.inv(a)` into `out`."""
    _port_linalg(lambda xp, a: xp.linalg.inv(a), out, a)
"#,
    },
    Helper {
        name: "_port_det",
        source: r#"def _port_det(a, out):
    """`np.linalg.det(a)` into `out` (one element, or one per matrix of a stack)."""
    _port_linalg(lambda xp, a: xp.linalg.det(a), out, a)
"#,
    },
    Helper {
        name: "_port_lstsq",
        source: r#"def _port_lstsq(a, b, k, out):
    """`np.linalg.lstsq(a, b, rcond=None)[k]` into `out`: the solution (0),
    the rank (2) or the singular values (3)."""
    _port_linalg(lambda xp, a, b: xp.linalg.lstsq(a, b, rcond=None)[k], out, a, b)
"#,
    },
    Helper {
        name: "_port_matmul",
        source: r#"def _port_matmul(a, b, ta, tb, out):
    """`a @ b` (each operand transposed first where `ta`/`tb` say) into
    `out`: cuBLAS through CuPy on the device arrays, else NumPy."""
    _port_linalg(lambda xp, a, b: xp.matmul(a.T if ta else a, b.T if tb else b), out, a, b)
"#,
    },
    Helper {
        name: "_port_sort",
        source: r#"def _port_sort(a, axis, out):
    """`np.sort(a, axis=axis)` (`axis` None: of the flattened array) into `out`."""
    _port_linalg(lambda xp, a: xp.sort(a, axis=axis), out, a)
"#,
    },
    Helper {
        name: "_port_median",
        source: r#"def _port_median(a, axis, out):
    """`np.median(a, axis=axis)` into `out` (one element for axis None)."""
    _port_linalg(lambda xp, a: xp.median(a, axis=axis), out, a)
"#,
    },
    // The IR's `min`/`max` of floats are NumPy's minimum/maximum: a NaN on
    // either side is the result, where Python's `min(5.0, nan)` is 5.0.
    Helper {
        name: "_port_minimum",
        source: r#"@cuda.jit(device=True)
def _port_minimum(x, y):
    """NumPy's `minimum` of two floats: NaN when either is NaN."""
    return x if x <= y or x != x else y
"#,
    },
    Helper {
        name: "_port_maximum",
        source: r#"@cuda.jit(device=True)
def _port_maximum(x, y):
    """NumPy's `maximum` of two floats: NaN when either is NaN."""
    return x if x >= y or x != x else y
"#,
    },
    // Python's `+`, `-` and `*` of two ints inside kernels: Numba's int64
    // wraps where Python's int grows; an overflow sets the wrapper's flag,
    // and the wrapper then runs the original (`BinOp::CheckedAdd`…).
    Helper {
        name: "_port_checked_int",
        source: r#"@cuda.jit(device=True)
def _port_checked_int(x, overflow):
    """Python's `int(x)` of a float with an integer value, in int64;
    `overflow[0]` is set for NaN, ±inf and values outside int64 (where
    Python raises, or gives an int no int64 holds)."""
    if x >= -9223372036854775808.0 and x < 9223372036854775808.0:
        return int(x)
    overflow[0] = 1
    return 0
"#,
    },
    Helper {
        name: "_port_checked_add",
        source: r#"@cuda.jit(device=True)
def _port_checked_add(x, y, overflow):
    """Python's `x + y` of two ints, in int64; `overflow[0]` is set where
    the sum leaves int64 (Python's ints have no bound)."""
    r = x + y
    if (x >= 0) == (y >= 0) and (r >= 0) != (x >= 0):
        overflow[0] = 1
    return r
"#,
    },
    Helper {
        name: "_port_checked_sub",
        source: r#"@cuda.jit(device=True)
def _port_checked_sub(x, y, overflow):
    """Python's `x - y` of two ints, in int64; `overflow[0]` is set where
    the difference leaves int64 (Python's ints have no bound)."""
    r = x - y
    if (x >= 0) != (y >= 0) and (r >= 0) != (x >= 0):
        overflow[0] = 1
    return r
"#,
    },
    Helper {
        name: "_port_checked_mul",
        source: r#"@cuda.jit(device=True)
def _port_checked_mul(x, y, overflow):
    """Python's `x * y` of two ints, in int64; `overflow[0]` is set where
    the product leaves int64 (Python's ints have no bound)."""
    r = x * y
    if x == -1:
        if y == -9223372036854775808:
            overflow[0] = 1
    elif x != 0 and r // x != y:
        overflow[0] = 1
    return r
"#,
    },
    // `np.rint` inside kernels: Python's `math` has no `rint`, and `round`
    // and `math.floor` give integers, which overflow on large floats.
    Helper {
        name: "_port_rint",
        source: r#"@cuda.jit(device=True)
def _port_rint(x):
    """`x` rounded to the nearest integer, halves to the even one (`np.rint`)."""
    if math.isinf(x) or math.isnan(x):
        return x
    r = x - math.fmod(x, 1.0)
    d = x - r
    if d > 0.5 or (d == 0.5 and math.fmod(r, 2.0) != 0.0):
        r += 1.0
    elif d < -0.5 or (d == -0.5 and math.fmod(r, 2.0) != 0.0):
        r -= 1.0
    return r
"#,
    },
    // `np.floor`/`np.ceil`/`np.trunc` of floats inside kernels: `math.floor`
    // gives an integer in Python and Numba, which NaN and ±inf have not
    // (the CUDA simulator raises) and which overflows past 2**63.
    Helper {
        name: "_port_floor",
        source: r#"@cuda.jit(device=True)
def _port_floor(x):
    """`np.floor(x)` of a float: NaN and ±inf are themselves."""
    if math.isinf(x) or math.isnan(x):
        return x
    t = x - math.fmod(x, 1.0)
    return t - 1.0 if t > x else t
"#,
    },
    Helper {
        name: "_port_ceil",
        source: r#"@cuda.jit(device=True)
def _port_ceil(x):
    """`np.ceil(x)` of a float: NaN and ±inf are themselves."""
    if math.isinf(x) or math.isnan(x):
        return x
    t = x - math.fmod(x, 1.0)
    return t + 1.0 if t < x else t
"#,
    },
    Helper {
        name: "_port_trunc",
        source: r#"@cuda.jit(device=True)
def _port_trunc(x):
    """`np.trunc(x)` of a float: NaN and ±inf are themselves."""
    if math.isinf(x) or math.isnan(x):
        return x
    return x - math.fmod(x, 1.0)
"#,
    },
    // Complex `/` inside kernels: Numba's is CPython's algorithm, which
    // raises by zero and rounds otherwise than NumPy's.
    Helper {
        name: "_port_cdiv",
        source: r#"@cuda.jit(device=True)
def _port_cdiv(a, b):
    """`a / b` of complex numbers as NumPy divides them (Smith's method);
    by zero, each part of `a` over +0.0: inf, -inf or nan."""
    br, bi = b.real, b.imag
    abr, abi = abs(br), abs(bi)
    if abr == 0.0 and abi == 0.0:
        re = math.nan if a.real == 0.0 or math.isnan(a.real) else math.copysign(math.inf, a.real)
        im = math.nan if a.imag == 0.0 or math.isnan(a.imag) else math.copysign(math.inf, a.imag)
        return complex(re, im)
    if abr >= abi:
        r = bi / br
        s = 1.0 / (br + bi * r)
        return complex((a.real + a.imag * r) * s, (a.imag - a.real * r) * s)
    r = br / bi
    s = 1.0 / (bi + br * r)
    return complex((a.real * r + a.imag) * s, (a.imag * r - a.real) * s)
"#,
    },
    Helper {
        name: "_port_unbroadcast",
        source: r#"def _port_unbroadcast(flat, shape):
    """A ufunc result in its broadcast shape; a scalar for scalar arguments."""
    out = flat.reshape(shape)
    return out[()] if out.ndim == 0 else out
"#,
    },
];

/// The helper called `name`.
pub fn helper(name: &str) -> Option<&'static Helper> {
    HELPERS.iter().find(|h| h.name == name)
}

/// Whether `text` names `name` as a whole word (`_port_blocks` is not named
/// by `_port_reduce_blocks`).
pub fn names(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(k, _)| {
        !text[..k].chars().next_back().is_some_and(word)
            && !text[k + name.len()..].chars().next().is_some_and(word)
    })
}

/// The helpers `code` reaches, directly or through other helpers, that
/// `file` does not define yet: their sources, in [`HELPERS`]' order, each
/// followed by two blank lines.
pub fn needed(code: &str, file: &str) -> String {
    let mut wanted = vec![false; HELPERS.len()];
    let mut todo: Vec<&str> = vec![code];
    while let Some(text) = todo.pop() {
        for (k, h) in HELPERS.iter().enumerate() {
            if !wanted[k] && names(text, h.name) {
                wanted[k] = true;
                todo.push(h.source);
            }
        }
    }
    let mut out = String::new();
    for (k, h) in HELPERS.iter().enumerate() {
        if wanted[k] && !defines(file, h.name) {
            out.push_str(h.source);
            out.push_str("\n\n");
        }
    }
    out
}

/// Whether `file` defines `name` at its top level.
fn defines(file: &str, name: &str) -> bool {
    file.lines().any(|l| l.starts_with(&format!("def {name}(")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The emitted wrapper launches as port's own runs do: its launch
    /// helpers carry launch.rs's policy, written out as Python literals.
    #[test]
    fn the_emitted_launch_helpers_follow_the_launch_policy() {
        use crate::launch::{BLOCKS_PER_SM, REDUCE_BLOCKS_PER_SM, REDUCE_MAX_BLOCKS, THREADS_2D};
        for (line, what) in [
            (
                format!("min((n + threads - 1) // threads, {BLOCKS_PER_SM} * sms, 65535)"),
                "_port_blocks",
            ),
            (
                format!(
                    "min((n + threads - 1) // threads, {REDUCE_BLOCKS_PER_SM} * sms, {REDUCE_MAX_BLOCKS})"
                ),
                "_port_reduce_blocks",
            ),
            (
                format!("(cols + {}) // {THREADS_2D}", THREADS_2D - 1),
                "_port_grid_2d",
            ),
        ] {
            let h = helper(what).unwrap();
            assert!(h.source.contains(&line), "{what} lacks `{line}`:\n{}", h.source);
        }
    }

    #[test]
    fn only_the_helpers_code_reaches_and_the_file_lacks() {
        let code =
            "def f(x):\n    d_x = _port_to_device(x, np.float64)\n    _port_copy_back(x, d_x)\n";
        let got = needed(code, "");
        // Reached through _port_to_device and _port_copy_back.
        for h in [
            "_port_to_device",
            "_port_copy_back",
            "_port_on_gpu",
            "_port_span",
        ] {
            assert!(got.contains(&format!("def {h}(")), "{h} missing:\n{got}");
        }
        for h in [
            "_port_blocks",
            "_port_reduce_blocks",
            "_port_simulated",
            "_port_linalg",
        ] {
            assert!(!got.contains(&format!("def {h}(")), "{h} not used:\n{got}");
        }
        // A file that has some already gets only the rest.
        let file = "def _port_on_gpu(a):\n    return True\n";
        let got = needed(code, file);
        assert!(!got.contains("def _port_on_gpu("));
        assert!(got.contains("def _port_span("));
        // Whole words: `_port_reduce_blocks(` does not name `_port_blocks`.
        assert!(!names("_port_reduce_blocks(n, 8)", "_port_blocks"));
        assert!(names("x = _port_blocks(n, 8)", "_port_blocks"));
        assert!(names("_port_fill[b, t](d, v)", "_port_fill"));
    }

    /// Every helper another helper names is in the table.
    #[test]
    fn helpers_name_only_helpers() {
        for h in HELPERS {
            let mut rest = h.source;
            while let Some(k) = rest.find("_port_") {
                let tail = &rest[k..];
                let end = tail
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                let name = &tail[..end];
                assert!(
                    helper(name).is_some(),
                    "{} names {name}, not a helper",
                    h.name
                );
                rest = &tail[end..];
            }
        }
    }
}
