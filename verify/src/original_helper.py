"""Runs one function of a user's file on saved inputs and saves what it
returns and the arrays it was given (after the call). Written by port's
verify crate to a temporary folder and run with the user's Python.

    python original_helper.py call         FILE QUALNAME INPUT_DIR OUTPUT_DIR [REPEATS BUDGET [extended]]
    python original_helper.py elementwise  FILE QUALNAME INPUT_DIR OUTPUT_DIR [REPEATS BUDGET [extended]]
    python original_helper.py ufunc        FILE QUALNAME INPUT_DIR OUTPUT_DIR [REPEATS BUDGET [extended]]
    python original_helper.py npz    NPZ  NAMES    OUTPUT_DIR

INPUT_DIR/manifest.json lists the arguments in order:
{"args": [{"name": "x", "file": "arg0.npy"} | {"name": "a", "scalar": 1.5, "type": "float"}],
 "otypes": ["float64", ...]}            # ufunc mode: the output dtypes
The module is imported by path under another name, so its
`if __name__ == "__main__":` block does not run.

How the original is called, as the program calls it:
  call         once per run, on the arguments as they are;
  elementwise  a function applied element by element that was given arrays:
               once per run on the whole arrays, as the program calls it;
               only when that raises (code written for one number, typed
               as arrays by a signature) through np.vectorize, and
               result.json says why;
  ufunc        a function of scalars, given arrays of its scalar arguments:
               through np.vectorize (one call per element), and result.json
               says so; given one call's scalars (0-d), its timed calls are
               that call, made directly.
result.json records "via" ("call" or "np.vectorize"), "calls" (how many
times the user's function ran in one run) and "why_vectorized".

With REPEATS, the first call (whose results are saved) is the warm-up, and
REPEATS more calls are timed, each on fresh copies of the inputs (the copy
is not timed); timing stops early once it has taken BUDGET seconds (and
at least 3 calls ran).

`extended` runs the original in extended precision, as a second opinion on
a float64 result: float64 and complex128 arrays and float scalars become
np.longdouble / np.clongdouble before the call (a ufunc's float64 output
types too), and what comes back in those dtypes is narrowed to float64 /
complex128 when saved, so the .npy exchange format is unchanged.
result.json's "extended" records the significand's bits and, per saved
argument and return value, whether it came back wider than float64 (one
that did not was computed in a dtype the function fixes itself). Where
np.longdouble is no wider than float64 (some platforms), it says so and
exits 3 before calling anything.
"""
import importlib.machinery
import importlib.util
import json
import math
import os
import sys
import time
import traceback

import numpy as np


def package_of(folder):
    """The dotted package a folder is (each folder up to the root has an
    `__init__.py`) and the folder above its root; None outside a package."""
    parts = []
    root = folder
    while os.path.isfile(os.path.join(root, "__init__.py")):
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    return (".".join(parts), root) if parts else None


def load_module(path):
    folder = os.path.dirname(os.path.abspath(path))
    name = "_port_original"
    # A module of a package is imported as a member of it, as the program
    # imports it, so that its relative imports (`from .util import f`)
    # resolve; the package's own folder is not put on sys.path, where its
    # modules could hide the standard library's (a package's `random`).
    pkg = package_of(folder)
    package_error = None
    if pkg is not None:
        package, root = pkg
        if root not in sys.path:
            sys.path.insert(0, root)
        try:
            importlib.import_module(package)
            name = package + "._port_original"
        except Exception as e:
            pkg = None  # its __init__ does not import: as a plain file
            package_error = e
    if pkg is None and folder not in sys.path:
        sys.path.insert(0, folder)
    # A loader named explicitly also imports a backup (`x.py.port-bak`).
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except ImportError as e:
        # A relative import needs the package, whose own import failed:
        # that failure is the one to show (a dependency not installed).
        if package_error is not None and "relative import" in str(e):
            raise package_error
        raise
    return mod


def resolve(mod, qualname):
    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def with_literals(fn, manifest):
    """The function with the constants the plan is specialised to
    (`w=None`, `mode='reflect'`) passed, every argument by keyword: a
    constant may stand between two arguments."""
    literals = manifest.get("literals") or {}
    if not literals:
        return fn
    import ast
    import functools

    names = [a["name"] for a in manifest["args"]]
    fixed = {n: ast.literal_eval(c) for n, c in literals.items()}

    @functools.wraps(fn)
    def call(*args):
        return fn(**dict(zip(names, args)), **fixed)

    return call


def load_args(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    args = []
    names = [a["name"] for a in manifest["args"]]
    for a in manifest["args"]:
        if "same_as" in a:
            # The program passed one array for both: so does this call.
            args.append(args[names.index(a["same_as"])])
        elif "file" in a:
            args.append(np.load(os.path.join(folder, a["file"])))
        else:
            args.append(scalar_arg(a["type"], a["scalar"]))
    return manifest, args


# The scalars a program passes as Python numbers (weak in NumPy 2's
# promotion: `int8_array * 3` stays int8); any other dtype is a NumPy
# scalar of it (`int8_array * np.int32(3)` is int32). Complex values are
# written [re, im].
PYTHON_SCALARS = {"bool": bool, "int": int, "float": float}
DTYPE_WORDS = {"bool": "bool", "int64": "int", "float64": "float"}


def scalar_arg(kind, v):
    if isinstance(v, list):
        v = complex(v[0], v[1])
    if kind in PYTHON_SCALARS:
        return PYTHON_SCALARS[kind](v)
    return np.dtype(kind).type(v)


def scalar_entry(name, v):
    """The manifest's entry for the 0-d array v: its dtype kept."""
    kind = DTYPE_WORDS.get(v.dtype.name, v.dtype.name)
    x = v.item()
    if isinstance(x, complex):
        x = [x.real, x.imag]
    return {"name": name, "scalar": x, "type": kind}


INT64 = (-(2**63), 2**63 - 1)


def save(folder, name, value):
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        # A Python int no int64 holds: kernels that compute it in int64
        # flag the overflow and run the original (python_ints); compared
        # at all, only kernels that missed it are, and a float64 of the
        # value tells them apart from any int64.
        try:
            value = float(value)
        except OverflowError:
            value = math.inf if value > 0 else -math.inf
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or arr.dtype.kind in "iufc":
        # Unsigned arrays keep their dtype: an input converted to int64
        # would compute something else (uint8 wraps at 256), and a uint64
        # result past 2**63 would not survive the conversion.
        np.save(os.path.join(folder, name), np.ascontiguousarray(arr))
        return name + ".npy"
    raise TypeError("cannot compare a value of type %s (dtype %s)" % (type(value).__name__, arr.dtype))


def extended_precision():
    """np.longdouble's significand bits; an error where it is float64."""
    info = np.finfo(np.longdouble)
    if info.eps >= np.finfo(np.float64).eps:
        raise TypeError("np.longdouble is no wider than float64 on this machine (%d-bit significand)" % (info.nmant + 1))
    return info.nmant + 1


def widen(value):
    """A float64 or complex128 value (array or scalar) in extended precision."""
    if isinstance(value, np.ndarray):
        if value.dtype == np.float64:
            return value.astype(np.longdouble)
        if value.dtype == np.complex128:
            return value.astype(np.clongdouble)
        return value
    if isinstance(value, complex):  # np.complex128 included
        return np.clongdouble(value)
    if isinstance(value, float):  # np.float64 included
        return np.longdouble(value)
    return value


def narrow(value):
    """An extended-precision result as float64 / complex128, and whether it was wider."""
    arr = np.asarray(value)
    if arr.dtype == np.longdouble:
        return arr.astype(np.float64), True
    if arr.dtype == np.clongdouble:
        return arr.astype(np.complex128), True
    return value, False


def leaves(value):
    """The items of a (nested) tuple, depth first: `(out, (x, w, b))` gives
    out, x, w, b, in the order port lists the migrated function's."""
    out = []
    for v in value:
        out.extend(leaves(v) if isinstance(v, tuple) else [v])
    return out


def keep_same(f, args):
    """f applied to each argument, once per array: one array passed twice
    stays one."""
    done = {}
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            if id(a) not in done:
                done[id(a)] = f(a)
            out.append(done[id(a)])
        else:
            out.append(f(a))
    return out


def fresh(args):
    return keep_same(lambda a: a.copy() if isinstance(a, np.ndarray) else a, args)


def as_scalar(a):
    """A 0-d array as the number a program passes: a Python number for the
    dtypes Python's own numbers become, else the NumPy scalar."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.name in DTYPE_WORDS:
        return a.item()
    return a[()]


def timed_calls(fn, pristine, repeats, budget):
    times = []
    for _ in range(repeats):
        args = fresh(pristine)
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
        if sum(times) > budget and len(times) >= 3:
            break
    return times


class Counted:
    """The user's function, counting its calls (for the warm-up run only)."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


def vectorized(fn, manifest, extended=False):
    otypes = [np.dtype(t) for t in manifest["otypes"]]
    if extended:
        otypes = [np.dtype(widen(np.zeros(1, t)).dtype) for t in otypes]
    return np.vectorize(fn, otypes=otypes) if otypes else np.vectorize(fn)


def run(mode, path, qualname, inp, out, repeats=0, budget=0.0, extended=False):
    bits = extended_precision() if extended else None
    try:
        mod = load_module(path)
    except Exception as e:
        raise ImportFailed(e) from e
    user_fn = resolve(mod, qualname)
    manifest, args = load_args(inp)
    user_fn = with_literals(user_fn, manifest)
    # Imported: the limit on the call starts now (see python_cmd_limited).
    open(os.path.join(out, "imported"), "w").close()
    if extended:
        args = keep_same(widen, args)
    pristine = fresh(args)
    counted = Counted(user_fn)
    via, why = "call", None
    fn = counted
    if mode == "ufunc":
        via, why = "np.vectorize", "the function takes scalars"
        fn = vectorized(counted, manifest, extended)
    start = time.perf_counter()
    if mode == "elementwise":
        try:
            ret = fn(*args)
        except Exception as e:  # code for one number, given whole arrays
            via = "np.vectorize"
            why = "called on whole arrays it raised %s: %s" % (type(e).__name__, e)
            args = fresh(pristine)
            counted.calls = 0
            fn = vectorized(counted, manifest, extended)
            start = time.perf_counter()
            ret = fn(*args)
    else:
        ret = fn(*args)
    elapsed = time.perf_counter() - start
    calls = counted.calls
    timed = user_fn if via == "call" else vectorized(user_fn, manifest, extended)
    timed_args = pristine
    if mode == "ufunc" and all(np.ndim(a) == 0 for a in pristine):
        # The scalars of one call (captured or given): timed as the program
        # made that call, not through np.vectorize's set-up around it.
        timed = user_fn
        timed_args = [as_scalar(a) for a in pristine]
        via, why = "call", None
    times = timed_calls(timed, timed_args, repeats, budget) if repeats else []
    wider = {"args": [], "returns": []}

    def kept(what, name, value):
        if extended:
            value, w = narrow(value)
            wider[what].append(w)
        return save(out, name, value)

    result = {
        "args": [],
        "returns": None,
        "seconds": elapsed,
        "times": times,
        "via": via,
        "calls": calls,
        "why_vectorized": why,
    }
    for k, a in enumerate(args):
        is_array = isinstance(a, np.ndarray)
        result["args"].append(kept("args", "arg%d" % k, a) if is_array else None)
        if not is_array:
            wider["args"].append(None)
    if ret is not None:
        items = leaves(ret) if isinstance(ret, tuple) else [ret]
        result["returns"] = [kept("returns", "ret%d" % k, v) for k, v in enumerate(items)]
        result["tuple"] = isinstance(ret, tuple)
    if extended:
        result["extended"] = {"significand_bits": bits, "wider": wider}
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f)


# The member of a captured .npz that describes the arrays the capture did
# not save because the function never reads them (capture_helper.py): JSON,
# {name: {"dtype", "shape", "fortran"}}. They start as zeros, for the
# original and the migrated function alike.
BLANKS = "__port_blank__"


def json_member(data, member):
    """A JSON member of a captured .npz (stored as bytes), or {}."""
    if member not in data.files:
        return {}
    return json.loads(data[member].tobytes().decode("utf-8"))


def blank(spec):
    order = "F" if spec.get("fortran") else "C"
    return np.zeros(tuple(spec["shape"]), dtype=np.dtype(spec["dtype"]), order=order)


# The member that names, for an argument the program passed as the same
# array as an earlier one (`f(a, a)`), that one: JSON {name: earlier name}.
# The original is called with one array for both, as the program called
# it; the kernels get two copies, as the migrated function's wrapper makes
# them, and its copy-back decides what the caller's array holds.
SAME = "__port_same__"

# The member that names, for an argument an earlier capture of the same run
# saved as it still was (one matrix passed to several functions), that
# .npz (in the same folder) and its member: JSON {name: {"file", "member"}}.
REFS = "__port_ref__"
MEMBERS = (BLANKS, SAME, REFS)


def referred(npz, ref):
    """The path of the .npz a REFS entry names, beside `npz`."""
    return os.path.join(os.path.dirname(os.path.abspath(npz)), os.path.basename(ref["file"]))


def unpack_npz(npz, names, out):
    data = np.load(npz, allow_pickle=False)
    blanks = json_member(data, BLANKS)
    same = json_member(data, SAME)
    refs = json_member(data, REFS)
    others = {}
    args = []
    files = {}
    for k, name in enumerate(names.split(",")):
        if same.get(name) in files:
            args.append({"name": name, "file": files[same[name]], "same_as": same[name]})
            continue
        if name in refs:
            path = referred(npz, refs[name])
            if path not in others:
                others[path] = np.load(path, allow_pickle=False)
            v = others[path][refs[name]["member"]]
        elif name in blanks and name not in data.files:
            v = blank(blanks[name])
        elif name not in data.files:
            have = [f for f in data.files if f not in MEMBERS] + sorted(blanks) + sorted(same) + sorted(refs)
            raise KeyError("the capture has no argument %r (it has %s)" % (name, ", ".join(have)))
        else:
            v = data[name]
        if v.ndim == 0:
            args.append(scalar_entry(name, v))
        else:
            files[name] = save(out, "arg%d" % k, v)
            args.append({"name": name, "file": files[name]})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"args": args, "otypes": []}, f)


def pack_npz(inp, npz):
    """The inputs in `inp` as an .npz named by argument (scalars as 0-d
    arrays), the form `--inputs` reads; written beside `npz`, then renamed."""
    manifest, args = load_args(inp)
    named = {a["name"]: np.asarray(v) for a, v in zip(manifest["args"], args) if "same_as" not in a}
    same = {a["name"]: a["same_as"] for a in manifest["args"] if "same_as" in a}
    if same:
        named[SAME] = np.frombuffer(json.dumps(same).encode("utf-8"), dtype=np.uint8)
    tmp = npz + ".tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **named)
    os.replace(tmp, npz)


def header(z, member):
    """`{"shape", "dtype", "fortran"}` of an .npy member, from its header."""
    with z.open(member) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    return {"shape": list(shape), "dtype": dtype.name, "fortran": bool(fortran)}


def npz_headers(npz):
    """The shape, dtype and order of every array in `npz`, as JSON, from
    the headers alone."""
    import zipfile
    out = {}
    with zipfile.ZipFile(npz) as z:
        names = z.namelist()
        for member in names:
            if member.endswith(".npy") and member[:-4] not in MEMBERS:
                out[member[:-4]] = header(z, member)
    if any(m + ".npy" in names for m in MEMBERS):
        with np.load(npz, allow_pickle=False) as data:
            for name, spec in json_member(data, BLANKS).items():
                out[name] = {"shape": list(spec["shape"]), "dtype": np.dtype(spec["dtype"]).name,
                             "fortran": bool(spec.get("fortran"))}
            for name, ref in json_member(data, REFS).items():
                with zipfile.ZipFile(referred(npz, ref)) as z:
                    out[name] = header(z, ref["member"] + ".npy")
            for name, first in json_member(data, SAME).items():
                if first in out:
                    out[name] = out[first]
    json.dump(out, sys.stdout)


class ImportFailed(Exception):
    """The user's module (or its package) raised while importing."""


def main():
    try:
        if sys.argv[1] == "npz":
            unpack_npz(sys.argv[2], sys.argv[3], sys.argv[4])
        elif sys.argv[1] == "headers":
            npz_headers(sys.argv[2])
        elif sys.argv[1] == "pack":
            pack_npz(sys.argv[2], sys.argv[3])
        else:
            repeats = int(sys.argv[6]) if len(sys.argv) > 6 else 0
            budget = float(sys.argv[7]) if len(sys.argv) > 7 else 0.0
            extended = len(sys.argv) > 8 and sys.argv[8] == "extended"
            run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], repeats, budget, extended)
    except Exception as e:  # the user's code failed: say where
        code = 3
        if isinstance(e, ImportFailed):
            code, e = 4, e.args[0]
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f for f in reversed(tb) if "original_helper" not in f.filename and not f.filename.startswith("<")), None)
        loc = " (%s:%d in %s)" % (os.path.basename(where.filename), where.lineno, where.name) if where else ""
        sys.stderr.write("%s: %s%s\n" % (type(e).__name__, e, loc))
        sys.exit(code)


if __name__ == "__main__":
    main()
