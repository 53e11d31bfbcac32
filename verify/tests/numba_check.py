"""Checks the Numba-CUDA source `port migrate` emitted, with real Numba
(the oracle venv, numba-cuda):

    numba_check.py ptx PATCHED.py MIGRATION.json
        every kernel compiles with numba.cuda.compile_ptx (cc 8.0, no GPU);
    NUMBA_ENABLE_CUDASIM=1 numba_check.py sim ORIGINAL.py PATCHED.py MIGRATION.json
        the patched function, run on Numba's CUDA simulator, gives the
        original's results (every mutated argument and the return value,
        allclose) on the inputs the migration was verified on when they
        were given (`--inputs`), else on small generated ones.

Exit 0 when all is well, 1 with the first problem on stderr.
"""
import importlib.machinery
import importlib.util
import json
import os
import sys
import types as pytypes

import numpy as np


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


def make_inputs(plan, rng):
    sig = numba_types(plan["signature"])
    ndim = max([getattr(t, "ndim", 0) for t in sig] + [1])
    # Fewer points per axis as the rank grows (a 6-D array of 10 per axis
    # is a million elements, slow under the CUDA simulator).
    n = {1: 300, 2: 24}.get(ndim, 10 if ndim <= 4 else 4)
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
            elif name.startswith("float"):
                args.append(0.75)
            elif name.startswith("complex"):
                args.append(0.25 + 0.5j)
            elif name.startswith("int"):
                args.append(5)
            else:
                args.append(True)
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
    d = np.load(p)
    # Numbers as Python numbers, as port passes them (NumPy weak scalars).
    return [d[n] if d[n].ndim else d[n].item() for n in migration_params(plan)]


def check_sim(original, patched, migration, migration_path):
    from numba import config
    if not config.ENABLE_CUDASIM:
        raise SystemExit("set NUMBA_ENABLE_CUDASIM=1")
    plan = migration["plan"]
    name = migration["function"]
    orig = getattr(load(original, "_port_original"), name)
    new = getattr(load(patched, "_port_patched"), name)
    rng = np.random.default_rng(2020)
    args = given_inputs(migration_path, migration, plan)
    if args is None:
        args = make_inputs(plan, rng)
    if plan["kind"] == "ufunc":
        otypes = [np.dtype(t) for t in plan["ufunc_outputs"]]
        orig = np.vectorize(orig, otypes=otypes)
    a1, a2 = copy(args), copy(args)
    r1 = orig(*a1)
    r2 = new(*a2)
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
        with open(sys.argv[4]) as f:
            check_sim(sys.argv[2], sys.argv[3], json.load(f), sys.argv[4])
    else:
        raise SystemExit("usage: numba_check.py ptx|sim ...")


if __name__ == "__main__":
    main()
