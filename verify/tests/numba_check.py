"""Checks the Numba-CUDA source `port migrate` emitted, with real Numba
(the oracle venv, numba-cuda):

    numba_check.py ptx PATCHED.py MIGRATION.json
        every kernel compiles with numba.cuda.compile_ptx (cc 8.0, no GPU);
    NUMBA_ENABLE_CUDASIM=1 numba_check.py sim ORIGINAL.py PATCHED.py MIGRATION.json [--device-paths] [--overflow FILE.npz]
        the patched function, run on Numba's CUDA simulator, gives the
        original's results (every mutated argument and the return value,
        allclose) on the inputs the migration was verified on when they
        were given (`--inputs`), else on small generated ones (no larger
        than the migration's `--size`, when it was given, and smaller
        still when its kernels run step after step); and so does
        every other path of its wrapper: no CUDA device (the original runs,
        one warning), PORT_DEVICE=cpu, a written argument passed again as
        another (the original runs), and, with --device-paths (or
        PORT_CHECK_DEVICE_PATHS=1, for a whole test run) and small
        inputs (the simulator runs the kernels twice more), arguments that
        live on the GPU (a stand-in with `__cuda_array_interface__`), all
        or some of them, and GPU arguments that share memory (an error).
        With --overflow FILE.npz (arguments by name), a call on those
        inputs, on which the kernels' Python int arithmetic leaves int64,
        must run the original (its warning) and give its results.

Exit 0 when all is well, 1 with the first problem on stderr. With
PORT_CHECK_LOG=FILE, `sim` appends a line to FILE: the function, the
seconds the check took, the migration's --size and its launches (count,
grid, block): where a test run's time under the simulator goes.
"""
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import types as pytypes

import numpy as np

# Whether `sim` also runs the wrapper's GPU-argument paths (--device-paths).
DEVICE_PATHS = False
# Inputs on which the kernels' Python int arithmetic overflows (--overflow).
OVERFLOW = None


def load(path, name):
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def ieee_math():
    """`math` as the GPU computes it, for kernels run under the simulator.

    The simulator runs a kernel's `math.cos(x)` as CPython's, which raises
    where CUDA's libdevice (and NumPy) give the IEEE result: `cos(inf)` and
    `sqrt(-1)` are NaN, `log(0)` is -inf, `exp(1000)` is inf. Each function
    with a NumPy ufunc of the same meaning falls back to it where CPython's
    raises; the rest (and `floor`, `ceil`, `trunc`, whose integer results
    have no IEEE value) are CPython's."""
    import math
    ns = pytypes.SimpleNamespace(**{k: getattr(math, k) for k in dir(math) if not k.startswith("_")})
    rename = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
              "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}
    for k in vars(ns):
        f, g = getattr(math, k), getattr(np, rename.get(k, k), None)
        if not callable(f) or not isinstance(g, np.ufunc) or k in ("floor", "ceil", "trunc"):
            continue

        def ieee(*a, _f=f, _g=g):
            try:
                return _f(*a)
            except (ValueError, OverflowError):
                with np.errstate(all="ignore"):
                    return float(_g(*a))
        setattr(ns, k, ieee)
    return ns


def patch_no_driver(cc):
    """numba-cuda asks the driver for the device's compute capability when
    it compiles device functions; without libcuda, report `cc` instead
    (the same trick as scripts/oracle/classify.py)."""
    fake = pytypes.SimpleNamespace(compute_capability=cc)
    import numba.cuda.dispatcher as d
    import numba.cuda.compiler as c
    d.get_current_device = lambda: fake
    c.get_current_device = lambda: fake
    try:
        import numba.cuda.memory_management.nrt as n
        n.get_current_device = lambda: fake
    except Exception:
        pass


def numba_types(sig):
    from numba.core import types
    return eval("(" + sig + ",)", dict(vars(types)))


def check_ptx(patched, migration):
    from numba import cuda
    patch_no_driver((8, 0))
    mod = load(patched, "_port_patched")
    if migration["status"] != "verified" or not migration["kernels"]:
        raise SystemExit("the migration is %s, with no kernels to check" % migration["status"])
    for k in migration["kernels"]:
        kernel = getattr(mod, k["name"])
        ptx, _ = cuda.compile_ptx(kernel.py_func, numba_types(k["signature"]), cc=(8, 0))
        if ".entry" not in ptx:
            raise SystemExit("kernel %s: compile_ptx gave no entry point" % k["name"])
        print("ok compile_ptx %s(%s)" % (k["name"], k["signature"]))


def make_inputs(plan, rng, size=None, launches=(), sequential=False):
    sig = numba_types(plan["signature"])
    ndim = max([getattr(t, "ndim", 0) for t in sig] + [1])
    # The rank of the work, not only of the inputs: a kernel launched on a
    # 2-D grid over 1-D inputs (an outer product, `x[:, None] - x`) runs
    # n * n threads, each a Python thread under the simulator.
    # 64 per axis then (4,096 threads; still more than the int arguments'
    # 5 * 5 that index a flat matrix, `a[i * width + j]`).
    work_2d = any(l["block"][1:2] > [1] or l["grid"][1:2] > [1] for l in launches)
    # Fewer points per axis as the rank grows (a 6-D array of 10 per axis
    # is a million elements, slow under the CUDA simulator).
    n = {1: 64 if work_2d else 300, 2: 24}.get(ndim, 10 if ndim <= 4 else 4)
    if sequential:
        # Kernels launched step after step (a host loop, `count` > 1) or
        # a loop run inside one persistent kernel: the steps grow with the
        # extents, and each is a barrier or a launch of Python threads
        # under the simulator (an LU of 24 x 24 by loops took 104 s, a
        # Levinson recursion of 48 steps in one kernel 56 s).
        n = min(n, {1: 16, 2: 8}.get(ndim, 4))
    if size:
        # Never more than the migration was verified at (`port migrate
        # --size S`: S iterations in all, S ** (1 / rank) per axis). A
        # program of 300 sequential steps, each launching kernels that
        # Numba's simulator runs thread by thread in Python, took minutes.
        n = min(n, max(2, round(size ** (1.0 / ndim))))
    lo, hi = plan["input_range"]
    # Axes the plan was specialised to extent 1 (the inputs it was
    # verified on had extent 1 there): its guards refuse other extents.
    units = {}
    for name, axis in plan.get("unit_dims", []):
        units.setdefault(name, set()).add(axis)
    names = migration_params(plan)
    args = []
    for k, t in enumerate(sig):
        if hasattr(t, "ndim"):
            dt = np.dtype(str(t.dtype))
            unit = units.get(names[k] if k < len(names) else None, set())
            shape = tuple(1 if d in unit else n for d in range(t.ndim))
            if dt.kind == "f":
                args.append((lo + (hi - lo) * rng.random(shape)).astype(dt))
            elif dt.kind == "c":
                parts = lo + (hi - lo) * rng.random((2,) + shape)
                args.append((parts[0] + 1j * parts[1]).astype(dt))
            elif dt.kind == "b":
                args.append(rng.random(shape) < 0.5)
            else:
                args.append(rng.integers(0, 8, shape).astype(dt))
            cond = plan.get("linalg_inputs", {}).get(names[k] if k < len(names) else None)
            if cond is not None:
                condition(args[-1], cond)
        else:
            name = str(t)
            if plan["kind"] == "ufunc" and all(not hasattr(u, "ndim") for u in sig):
                # A scalar function: applied over arrays of values.
                dt = np.dtype(name)
                args.append((lo + (hi - lo) * rng.random(n)).astype(dt) if dt.kind == "f"
                            else rng.integers(1, 8, n).astype(dt))
            else:
                # As port passes scalars: bool, int64 and float64 as Python
                # numbers (weak in NumPy 2), any other dtype as a NumPy scalar.
                v = (0.75 if name.startswith("float") else 0.25 + 0.5j if name.startswith("complex")
                     else 5 if name.startswith(("int", "uint")) else True)
                if name not in ("float64", "int64", "bool", "boolean"):
                    v = np.dtype(name).type(v)
                args.append(v)
    return args


def condition(a, how):
    """As port's generated inputs (verify/src/inputs.rs `condition`): every
    trailing square matrix of `a` made Hermitian positive definite
    (`positive_definite`, for np.linalg.cholesky) or strictly diagonally
    dominant (`dominant`, for solve/inv), in place."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        return
    n = a.shape[-1]
    m = a.reshape((-1, n, n))
    for x in m:
        if how == "positive_definite":
            low = np.tril(x, -1)
            x[...] = low + np.conj(low.T)
        off = np.abs(x).sum(axis=1) - np.abs(np.diagonal(x))
        x[np.arange(n), np.arange(n)] = off + 1.0


def migration_params(plan):
    """The argument names, in order (the migration JSON's `params`)."""
    return plan.get("params", [])


def copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def compare(what, expected, actual, rtol, atol):
    if isinstance(expected, int) and not isinstance(expected, bool):
        # A Python int past int64 (the original's, when the kernels' check
        # ran it): compared exactly.
        if expected != actual:
            raise SystemExit("%s: original %r, Numba CUDA simulator %r" % (what, expected, actual))
        return
    e, a = np.asarray(expected), np.asarray(actual)
    if e.shape != a.shape:
        raise SystemExit("%s: shape %s, the original's is %s" % (what, a.shape, e.shape))
    if not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True))[0]
        idx = tuple(int(i) for i in bad)
        raise SystemExit("%s differs at %s: original %r, Numba CUDA simulator %r" % (what, idx, e[idx], a[idx]))


def given_inputs(migration_path, migration, plan):
    """The arguments of `--inputs` (the migration's `inputs_npz`, relative
    to the project holding .port/), or None."""
    p = migration.get("inputs_npz")
    if not p:
        return None
    if not os.path.isabs(p):
        project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(migration_path))))
        p = os.path.join(project, p)
    return npz_args(p, plan)


def npz_args(p, plan):
    """The arguments saved by name in the .npz `p`, as port passes them."""
    d = np.load(p)
    # As port passes them: 0-d bool, int64 and float64 as Python numbers
    # (weak in NumPy 2's promotion), any other dtype as a NumPy scalar.
    def value(a):
        if a.ndim:
            return a
        return a.item() if a.dtype.name in ("bool", "int64", "float64") else a[()]

    return [value(d[n]) for n in migration_params(plan)]


def with_literals(fn, plan, args):
    """`args` (one per planned parameter) with the constants the plan is
    specialised to put in their parameters' places."""
    import ast
    import inspect
    fixed = {n: ast.literal_eval(c) for n, c in plan["literals"]}
    given = dict(zip(migration_params(plan), args))
    out = []
    for p in inspect.signature(fn).parameters:
        if p in fixed:
            out.append(fixed[p])
        elif p in given:
            out.append(given[p])
        else:
            break  # left to its default, as port planned it
    return out


def check_sim(original, patched, migration, migration_path):
    from numba import config
    if not config.ENABLE_CUDASIM:
        raise SystemExit("set NUMBA_ENABLE_CUDASIM=1")
    plan = migration["plan"]
    name = migration["function"]
    orig = getattr(load(original, "_port_original"), name)
    patched_mod = load(patched, "_port_patched")
    if hasattr(patched_mod, "math"):
        # The kernels' `math` is CUDA's, not CPython's (ieee_math).
        patched_mod.math = ieee_math()
    new = getattr(patched_mod, name)
    rng = np.random.default_rng(2020)
    args = given_inputs(migration_path, migration, plan)
    if args is None:
        launches = migration.get("launches") or ()
        sequential = (any(l.get("count", 1) > 1 for l in launches)
                      or any(r["rewrite"] == "persist" and r["applied"]
                             for r in migration.get("rewrites") or ()))
        args = make_inputs(plan, rng, migration.get("size"), launches, sequential)
    if plan.get("literals"):
        # Parameters specialised to a constant (`w=None`): both functions
        # are called with it, in its place among the arguments.
        args = with_literals(orig, plan, args)
    if plan["kind"] == "ufunc":
        otypes = [np.dtype(t) for t in plan["ufunc_outputs"]]
        orig = np.vectorize(orig, otypes=otypes)
    a1, a2 = copy(args), copy(args)
    r1 = orig(*a1)
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r2 = new(*a2)
    # A call the wrapper hands to the original checks nothing.
    ran_original = [str(w.message) for w in caught if str(w.message).startswith("port:")]
    if ran_original:
        raise SystemExit("the migrated function ran the original: %s" % ran_original[0])
    f32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
    rtol, atol = (1e-3, 1e-5) if plan.get("fp32") else (1e-4, 1e-6) if f32 else (1e-5, 1e-8)
    try:
        outputs1 = outputs(plan, a1, r1)
        outputs2 = outputs(plan, a2, r2)
        if (r1 is None) != (r2 is None) or len(outputs1) != len(outputs2):
            raise SystemExit("the original gives %d outputs (returns %r), the migrated function %d (returns %r)"
                             % (len(outputs1), type(r1), len(outputs2), type(r2)))
        for (what, x), (_, y) in zip(outputs1, outputs2):
            compare(what, x, y, rtol, atol)
        check_paths(original, patched, plan, orig, new, args, rtol, atol)
        if OVERFLOW:
            check_overflow(plan, orig, new, npz_args(OVERFLOW, plan), rtol, atol)
    except SystemExit as elementwise:
        if plan.get("fp32"):
            raise
        # As port's verify does (verify/src/exact.rs): results that differ
        # elementwise are judged against a wider run of the original —
        # float32 against float64, float64 against np.longdouble — and
        # pass at up to 10x the original's own error.
        f64 = (not f32 and np.finfo(np.longdouble).eps < np.finfo(np.float64).eps
               and any(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args))
        if not (f32 or f64):
            raise
        narrow, wider, floor = (np.float32, np.float64, 1e-4) if f32 else (np.float64, np.longdouble, 1e-15)
        def widen(a):
            if isinstance(a, np.ndarray) and a.dtype == narrow:
                return a.astype(wider)
            if f64 and isinstance(a, np.ndarray) and a.dtype == np.complex128:
                return a.astype(np.clongdouble)
            return a

        wide = [widen(a) for a in copy(args)]
        exact = outputs(plan, wide, orig(*wide))
        ours = max(normwise(e, y) for (_, e), (_, y) in zip(exact, outputs2))
        theirs = max(normwise(e, x) for (_, e), (_, x) in zip(exact, outputs1))
        if not ours <= max(10 * theirs, floor):
            raise SystemExit("%s; against a %s run: error %.2e, the original's own error %.2e"
                             % (elementwise, np.dtype(wider).name, ours, theirs))
    print("ok cudasim %s" % name)


def check_overflow(plan, orig, new, args, rtol, atol):
    """On `args` the kernels' Python int arithmetic leaves int64: the
    migrated function must say so and run the original."""
    import warnings
    a1, a2 = copy(args), copy(args)
    r1 = orig(*a1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r2 = new(*a2)
    said = [str(w.message) for w in caught if str(w.message).startswith("port: Python int")]
    if not said:
        raise SystemExit("--overflow: the migrated function did not run the original "
                         "(warnings: %s)" % [str(w.message) for w in caught])
    for (what, x), (_, y) in zip(outputs(plan, a1, r1), outputs(plan, a2, host(r2))):
        compare("--overflow: " + what, x, y, rtol, atol)


def check_paths(original, patched, plan, orig, new, args, rtol, atol):
    """Every other path of the wrapper gives the original's results."""
    import warnings
    from numba import cuda

    def same(what, a_orig, r_orig, a_new, r_new):
        o1, o2 = outputs(plan, a_orig, r_orig), outputs(plan, a_new, host(r_new))
        if len(o1) != len(o2):
            raise SystemExit("%s: %d outputs, the original's %d" % (what, len(o2), len(o1)))
        for (w, x), (_, y) in zip(o1, o2):
            compare("%s, %s" % (what, w), x, y, rtol, atol)

    def expected(call_args):
        a = copy(call_args)
        return a, orig(*a)

    # No CUDA device: the original runs, with one warning for two calls.
    mod = load(patched, "_port_patched_nodevice")
    fn = getattr(mod, new.__name__)
    real = cuda.is_available
    cuda.is_available = lambda: False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                a = copy(args)
                r = fn(*a)
        ours = [w for w in caught if "no CUDA device" in str(w.message)]
        if len(ours) != 1:
            raise SystemExit("no CUDA device: %d warnings, not one" % len(ours))
        same("no CUDA device", *expected(args), a, r)
    finally:
        cuda.is_available = real
    # PORT_DEVICE=cpu: the original, without a warning.
    os.environ["PORT_DEVICE"] = "cpu"
    try:
        a = copy(args)
        same("PORT_DEVICE=cpu", *expected(args), a, new(*a))
    finally:
        del os.environ["PORT_DEVICE"]
    print("ok paths no-device, PORT_DEVICE=cpu")

    if plan["kind"] != "kernels":
        return
    names = migration_params(plan)
    arrays = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]
    written = [k for k in arrays if k < len(names) and names[k] in plan.get("mutated", [])]
    # A written argument passed again for another of its shape and dtype.
    pairs = [(w, o) for w in written for o in arrays
             if o != w and args[o].shape == args[w].shape and args[o].dtype == args[w].dtype]
    for w, o in pairs:
        def aliased(src):
            a = copy(src)
            a[o] = a[w]
            return a
        a1 = aliased(args)
        r1 = orig(*a1)
        a2 = aliased(args)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            r2 = new(*a2)
        same("`%s` passed as `%s` too" % (names[w], names[o]), a1, r1, a2, r2)
        print("ok aliased %s=%s" % (names[o], names[w]))

    # Arguments on the GPU: small inputs only (the simulator runs again).
    if not DEVICE_PATHS or not arrays or sum(args[k].size for k in arrays) > 20000:
        return
    real_as = getattr(cuda, "as_cuda_array", None)
    cuda.as_cuda_array = lambda a: a.device
    try:
        if plan.get("fp32") and any(args[k].dtype == np.float64 for k in arrays):
            # float64 GPU arrays given to float32 kernels: an error that
            # says so, not a silent copy on the device.
            call = [StandIn(x) if k in arrays else x for k, x in enumerate(copy(args))]
            try:
                new(*call)
            except TypeError as e:
                if "float32" not in str(e):
                    raise SystemExit("fp32 with float64 GPU arrays: %s" % e)
                print("ok fp32 refuses float64 GPU arrays")
                return
            raise SystemExit("fp32 kernels took float64 GPU arrays without a word")
        for what, on_gpu in (("GPU arguments", set(arrays)), ("mixed arguments", set(arrays[::2]))):
            a = copy(args)
            call = [StandIn(x) if k in on_gpu else x for k, x in enumerate(a)]
            r = new(*call)
            back = [x.device.copy_to_host() if isinstance(x, StandIn) else x for x in call]
            same(what, *expected(args), back, r)
            print("ok paths %s" % what)
        for w, o in pairs:
            a = copy(args)
            call = [StandIn(x) if k in arrays else x for k, x in enumerate(a)]
            call[o] = call[w]
            try:
                new(*call)
            except ValueError as e:
                if "`%s`" % names[w] not in str(e) or "`%s`" % names[o] not in str(e):
                    raise SystemExit("GPU aliasing: the error does not name both: %s" % e)
            else:
                raise SystemExit("GPU arguments `%s` and `%s` share memory: no error" % (names[w], names[o]))
            print("ok GPU aliasing refused")
            break
    finally:
        if real_as is None:
            del cuda.as_cuda_array
        else:
            cuda.as_cuda_array = real_as


def host(r):
    """A result as NumPy: device arrays (the simulator's) copied back."""
    if isinstance(r, tuple):
        return tuple(host(x) for x in r)
    if isinstance(r, StandIn):
        r = r.device
    if hasattr(r, "copy_to_host"):
        return r.copy_to_host()
    return r


class StandIn:
    """An array that lives "on the GPU" as the wrapper sees it: it has a
    `__cuda_array_interface__` (the simulator's own arrays have none), and
    `cuda.as_cuda_array` gives its device array."""

    def __init__(self, host):
        from numba import cuda
        self.device = SimDevice(cuda.to_device(host)._ary)
        # What every GPU array (CuPy, Numba, PyTorch) has besides.
        a = self.device._ary
        self.shape, self.strides, self.dtype = a.shape, a.strides, a.dtype
        self.ndim, self.size = a.ndim, a.size

    def __len__(self):
        return self.shape[0]

    @property
    def __cuda_array_interface__(self):
        return self.device.__cuda_array_interface__


def SimDevice(ary):
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    class Device(FakeCUDAArray):
        @property
        def __cuda_array_interface__(self):
            a = self._ary
            return {"shape": a.shape, "strides": a.strides, "typestr": a.dtype.str,
                    "data": (a.ctypes.data, False), "version": 3}

    return Device(ary)


def leaves(value):
    """A (nested) tuple's items, depth first, as port compares them."""
    out = []
    for v in value:
        out.extend(leaves(v) if isinstance(v, tuple) else [v])
    return out


def outputs(plan, args, ret):
    """The arrays to compare: the arguments after the call, then the returns."""
    out = []
    for k, x in enumerate(args):
        if isinstance(x, np.ndarray) and plan["kind"] != "ufunc":
            out.append(("argument %d" % k, x))
    if ret is not None:
        items = leaves(ret) if isinstance(ret, tuple) else [ret]
        for k, x in enumerate(items):
            out.append(("return value %d" % k, x))
    return out


def normwise(exact, x):
    e, a = np.asarray(exact), np.asarray(x)
    wide = np.clongdouble if "c" in (e.dtype.kind, a.dtype.kind) else np.longdouble
    e, a = e.astype(wide), a.astype(wide)
    if e.shape != a.shape:
        return np.inf
    if np.any(np.isnan(e) != np.isnan(a)):
        return np.inf
    ok = ~np.isnan(e)
    if not ok.any():
        return 0.0
    return float(np.max(np.abs(a[ok] - e[ok])) / max(np.max(np.abs(e[ok])), 1e-6))


def main():
    mode = sys.argv[1]
    if mode == "ptx":
        with open(sys.argv[3]) as f:
            check_ptx(sys.argv[2], json.load(f))
    elif mode == "sim":
        global DEVICE_PATHS, OVERFLOW
        DEVICE_PATHS = ("--device-paths" in sys.argv[5:]
                        or os.environ.get("PORT_CHECK_DEVICE_PATHS") == "1")
        if "--overflow" in sys.argv[5:]:
            OVERFLOW = sys.argv[sys.argv.index("--overflow") + 1]
        t0 = time.time()
        with open(sys.argv[4]) as f:
            m = json.load(f)
        check_sim(sys.argv[2], sys.argv[3], m, sys.argv[4])
        if os.environ.get("PORT_CHECK_LOG"):
            with open(os.environ["PORT_CHECK_LOG"], "a") as f:
                launches = [(l.get("count"), l["grid"], l["block"]) for l in m.get("launches") or []]
                f.write("%s\t%.1f\t%s\t%s\n" % (m["function"], time.time() - t0, m.get("size"),
                                                  json.dumps(launches)))
    else:
        raise SystemExit("usage: numba_check.py ptx|sim ...")


if __name__ == "__main__":
    main()
