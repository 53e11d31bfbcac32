# port's capture bootstrap: runs the app as __main__ in the one sampled run and,
# for the first call of each of the app's own functions, records the argument
# types, saves the inputs (as np.savez does) and, when the call returns, the
# return value's type. (Nothing after the call is saved: verification runs the
# original again on the inputs, so outputs would be bytes written for no one.)
# Shipped inside the port
# binary, written to out_dir/bytecode and run by a small `python -c` loader
# that caches its byte code there (capture.rs: LOADER_SOURCE), as if it were
# `python -c BOOTSTRAP APP ARGS...`, with its settings as JSON in
# $PORT_CAPTURE_CONFIG:
#   {"app", "app_root", "out_dir", "cap_bytes", "max_functions", "hints", "helper_id"}
# It keeps out_dir/manifest.json up to date after every capture (a crash or
# os._exit keeps what was captured), and port reads it back. The
# .npz files are written by a thread of their own from copies of the arrays
# (see `save`): up to cap_bytes more memory while they wait.
#
# With "hints" (a file port's static pass writes while the app starts; see
# `hint_for`), it saves only what a migration reads: not the inputs of a
# call whose types port's planner refused the function with, not an array
# the function only writes.
#
# How a first call is caught depends on the Python (see `_port_capture`):
#
# - 3.12+: a sys.monitoring PY_START callback that disables itself per code
#   object, so a function costs one event in all (its own few more while its
#   first call is recorded).
# - Before 3.12 there is no cheap hook: while a trace or profile function is
#   set, CPython 3.11 runs every Python frame on its slow path. So nothing is
#   hooked. The bootstrap compiles the app's files itself (the main file here,
#   the app's local modules through an import finder) with `@__port_def__`
#   added as the innermost decorator of each function definition. At
#   definition it gives the function a trampoline for its __code__ (same
#   signature, file and first line). The first call runs the trampoline,
#   which puts the original code back, so that every later call, through any
#   name or alias, runs the original with nothing in between; then it records
#   the call, runs it and records what it returned. Nothing else is paid.
#
# The app runs in the real __main__ module, with sys.argv, sys.path[0] and
# __file__ as `python APP ARGS` sets them; a traceback leaves out the
# bootstrap's own frames.


def _port_machinery():
    """importlib.machinery's classes (PathFinder, SourceFileLoader) from the
    module they are defined in, which every CPython has loaded at start:
    importing importlib.machinery would cost an app half a millisecond."""
    import sys

    m = sys.modules.get("_frozen_importlib_external")
    if m is None or not hasattr(m, "SourceFileLoader"):
        import importlib.machinery as m
    return m


def _port_capture():
    """Sets capture up; returns (compile_app, start): compile_app(source, path)
    is the app file compiled for capture (None: compile it as Python would),
    start() installs what catches the first calls."""
    import os
    import sys
    import time

    # Only what a plain Python has loaded already, or costs nothing to load:
    # the `json` module, `ast` and `zipfile` would cost an app that does not
    # import them itself some 20 ms (the C modules under them do not).
    import _json

    class JsonContext:
        strict = True
        object_hook = object_pairs_hook = parse_constant = None
        parse_float = float
        parse_int = int

    def to_json(v):
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        t = type(v)
        if t is str:
            return _json.encode_basestring_ascii(v)
        if t is int or t is float:  # the manifest's numbers are finite
            return t.__repr__(v)
        if t is dict:
            return "{%s}" % ", ".join(
                "%s: %s" % (_json.encode_basestring_ascii(k), to_json(x)) for k, x in v.items()
            )
        if t is list or t is tuple:
            return "[%s]" % ", ".join(map(to_json, v))
        raise TypeError("%s in the manifest" % t.__name__)

    scan_json = _json.make_scanner(JsonContext())
    cfg = scan_json(os.environ.pop("PORT_CAPTURE_CONFIG"), 0)[0]
    app = cfg["app"]
    app_root = os.path.realpath(cfg["app_root"])
    out_dir = cfg["out_dir"]
    cap = int(cfg["cap_bytes"])
    max_functions = int(cfg["max_functions"])
    helper_id = cfg.get("helper_id", "")
    hints_path = cfg.get("hints")
    main_pid = os.getpid()
    started = time.perf_counter()
    MONITORING = sys.version_info >= (3, 12)

    captures = []  # the records, in the order their calls began
    warnings = []
    state = {
        "bytes": 0,
        "np": None,
        "numpy_checked": None,
        "stopped": None,
        "truncated": False,
        "hook_s": None,
        "capture_s": 0.0,  # spent recording calls in the app: describing, copying, the manifest
        "write_s": 0.0,  # spent by the writer thread saving .npz files
        "drain_s": 0.0,  # spent at exit waiting for the writer
    }
    MAX_ATTEMPTS = 3
    SKIP = 0
    done = set()  # keys of functions captured (or given up on)
    realpaths = {}

    def numpy():
        """NumPy if the app has imported it, else None: an app that has not
        has no arrays, and its numbers are saved without it (importing NumPy
        would cost a plain Python program a tenth of a second)."""
        np = state["np"]
        if np is None:
            np = state["np"] = sys.modules.get("numpy")
        return np

    def numpy_installed():
        """Whether inputs can be saved for port to read: NumPy is installed."""
        if state["numpy_checked"] is None:
            try:
                import importlib.util

                ok = importlib.util.find_spec("numpy") is not None
            except Exception:
                ok = False
            if not ok:
                warnings.append(
                    "numpy not importable in %s: inputs not captured" % sys.executable
                )
            state["numpy_checked"] = ok
        return state["numpy_checked"]

    def npy_header(descr, fortran, shape):
        """The .npy header np.save writes (format 1.0, padded to 64 bytes)."""
        import struct

        header = "{'descr': %r, 'fortran_order': %r, 'shape': %r, }" % (descr, fortran, shape)
        header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1")

    def npy_number(v):
        """The .npy file np.save(np.asarray(v)) writes for a Python number,
        made without NumPy; None where NumPy would make an object array."""
        import struct

        e = "<" if sys.byteorder == "little" else ">"
        if isinstance(v, bool):
            descr, data = "|b1", struct.pack("?", v)
        elif isinstance(v, int):
            if not -(2**63) <= v < 2**63:
                return None
            descr, data = e + "i8", struct.pack(e + "q", v)
        elif isinstance(v, float):
            descr, data = e + "f8", struct.pack(e + "d", v)
        elif isinstance(v, complex):
            descr, data = e + "c16", struct.pack(e + "dd", v.real, v.imag)
        else:
            return None
        return npy_header(descr, False, ()) + data

    def npy_parts(v, np):
        """The .npy file np.save writes for v, as (header, data): data is the
        array's own memory where it is contiguous (no copy)."""
        if np is None:
            return v, b""
        a = np.asarray(v)
        if a.dtype.hasobject:  # never saved (see saveable)
            raise TypeError("object array")
        fortran = a.ndim > 1 and not a.flags.c_contiguous and a.flags.f_contiguous
        body = a.T if fortran else np.ascontiguousarray(a)
        header = npy_header(np.lib.format.dtype_to_descr(a.dtype), fortran, tuple(int(n) for n in a.shape))
        return header, body.reshape(-1).view(np.uint8)

    def crc32_of(header, data):
        try:
            from zlib import crc32  # without the GIL on large buffers
        except ImportError:
            from binascii import crc32
        return crc32(data, crc32(header)) & 0xFFFFFFFF

    def savez(path, arrays, np):
        """The file np.savez(path, **arrays) writes (and each member's
        CRC-32): a zip archive of .npy
        members, stored (they are under the 256 MiB cap: no Zip64). Written
        here, not by np.savez: its zipfile copies each array in 16 MB pieces
        through Python, at a third of the speed of writing the array's own
        memory; and the app need not import zipfile. Without NumPy the
        members are npy_number's files."""
        import struct

        central = []
        crcs = {}  # each member's CRC-32 (of its .npy: header, then data)
        with open(path, "wb") as f:
            for name, value in arrays.items():
                header, data = npy_parts(value, np)
                size = len(header) + len(data)
                n = (name + ".npy").encode("utf-8")
                flags = 0 if n.isascii() else 0x800  # UTF-8 names
                crc = crc32_of(header, data)
                # version 2.0, stored, 1980-01-01 00:00
                fields = (20, flags, 0, 0, 0x21, crc, size, size, len(n))
                central.append(
                    struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0, f.tell()) + n
                )
                f.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields, 0) + n + header)
                f.write(data)
                crcs[name] = crc
            start = f.tell()
            f.write(b"".join(central))
            size = f.tell() - start
            f.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central), size, start, 0))
        return crcs

    # Large .npz files are written off the app's thread. When a call begins,
    # its arrays are copied (at memory speed, so the app can go on changing
    # them) and one writer thread saves them: savez spends its time in zlib's
    # crc32 and in write(), both without the GIL, so on a second core a
    # snapshot costs the app the copy, not the write. (A forked writer, whose
    # copy-on-write memory needs no copy, measured no better: after a fork
    # the app faults on the first write to every page of its working set.)
    # A record names its file only once the file is complete (a crash leaves
    # no half-written file in the manifest); at exit the writer is drained
    # before the last manifest is written. A forked child of the app saves
    # on its own thread, as does a Python that cannot start one.
    import _thread

    # Below this a file is written at once: a thread would cost an app of
    # many small calls more in GIL hand-overs (savez's own Python code)
    # than the write itself, a few milliseconds.
    SYNC_BYTES = 4 << 20
    pending = []  # (rec, key, path, arrays, np), oldest first
    wlock = _thread.allocate_lock()  # pending, and taking or giving up idle
    idle = _thread.allocate_lock()  # held while the writer runs
    mlock = _thread.allocate_lock()  # one manifest write at a time

    def save(rec, key, path, arrays, np):
        """savez(path, arrays, np), then rec[key] = path: at once when small,
        else later, on the writer thread, from copies of the arrays."""
        small = np is None or sum(getattr(a, "nbytes", 16) for a in arrays.values()) < SYNC_BYTES
        if small or os.getpid() != main_pid:
            saved(path, savez(path, arrays, np))
            rec[key] = path
            return
        copies = {}
        for n, a in arrays.items():
            copies[n] = a.copy(order="A") if isinstance(a, np.ndarray) else a
        with wlock:
            pending.append((rec, key, path, copies, np))
            running = idle.locked()
            if not running:
                idle.acquire()
        if not running:
            try:
                _thread.start_new_thread(write_pending, ())
            except Exception:
                write_pending()

    def write_pending():
        while True:
            with wlock:
                if not pending:
                    idle.release()
                    return
                rec, key, path, arrays, np = pending.pop(0)
            t0 = time.perf_counter()
            try:
                crcs = savez(path, arrays, np)
                if any(c is rec for c in captures):
                    saved(path, crcs)
                    rec[key] = path
                else:  # replaced by a retry meanwhile
                    os.remove(path)
            except Exception as e:
                rec["skipped"].append("%s not saved: %s" % (os.path.basename(path), e))
                try:
                    os.remove(path)
                except OSError:
                    pass
            del arrays
            state["write_s"] += time.perf_counter() - t0
            write_manifest()

    # One array passed to several captured functions (a matrix four of them
    # take) is saved once. A later capture's .npz refers to the earlier
    # file's member (REFS) when the argument is the same array (data
    # pointer, shape, strides, dtype) and its contents still have the CRC-32
    # that file recorded: a pass over the array (crc32 runs without the
    # GIL) where a save costs a copy, a write and the disk. Only a file of a
    # call that returned is referred to: its record is never replaced.
    REF_BYTES = 64 << 10  # below this a copy costs less than the check
    shelf = []  # [identity, path, member, crc or None until written, rec]

    def identity(v):
        return (v.__array_interface__["data"][0], v.shape, v.strides, v.dtype.str)

    def shelvable(v, np):
        """Whether v is worth referring to rather than saving again."""
        return (
            np is not None
            and isinstance(v, np.ndarray)
            and v.nbytes >= REF_BYTES
            and (v.flags.c_contiguous or v.flags.f_contiguous)
        )

    def shelve(path, arrays, rec, np):
        for n, a in arrays.items():
            if shelvable(a, np):
                shelf.append([identity(a), path, n, None, rec])

    def saved(path, crcs):
        for e in shelf:
            if e[1] == path:
                e[3] = crcs.get(e[2])

    def shelved(v, np):
        """The shelf's entry for v's contents in an earlier capture's file,
        or None."""
        if not shelvable(v, np):
            return None
        key = identity(v)
        crc = None
        for e in reversed(shelf):
            if e[0] != key or e[3] is None or not e[4]["returned"] or e[4]["inputs_npz"] != e[1]:
                continue
            if crc is None:
                crc = crc32_of(*npy_parts(v, np))
            if crc == e[3]:
                return e
        return None

    def drain():
        """Waits until every .npz file asked for is written."""
        if os.getpid() == main_pid:
            t0 = time.perf_counter()
            idle.acquire()
            idle.release()
            state["drain_s"] += time.perf_counter() - t0

    def type_name(v):
        t = type(v)
        mod = getattr(t, "__module__", "builtins")
        name = getattr(t, "__qualname__", t.__name__)
        return name if mod in ("builtins", None) else "%s.%s" % (mod, name)

    def describe(v, np):
        if np is not None and isinstance(v, np.ndarray):
            return {
                "kind": "ndarray",
                "dtype": str(v.dtype),
                "ndim": int(v.ndim),
                "shape": [int(s) for s in v.shape],
                "c_contiguous": bool(v.flags["C_CONTIGUOUS"]),
                "f_contiguous": bool(v.flags["F_CONTIGUOUS"]),
            }
        if np is not None and isinstance(v, np.generic) and v.dtype.kind in "biufc":
            return {"kind": "scalar", "type": str(v.dtype)}
        if isinstance(v, bool):
            return {"kind": "scalar", "type": "bool"}
        if type(v) in (int, float, complex):
            return {"kind": "scalar", "type": type(v).__name__}
        return {"kind": "other", "type_name": type_name(v)}

    def mb(n):
        return "%.1f MB" % (n / 1e6)

    def saveable(name, v, np, rec, what):
        """The array to save for v, or None with the reason in rec["skipped"]."""
        skipped = rec["skipped"]
        if np is None:
            if not numpy_installed():
                return None
            if not isinstance(v, (bool, int, float, complex)):
                skipped.append("%s: %s is not an array or a number; not saved (%s)" % (name, type_name(v), what))
                return None
            arr = npy_number(v)
            if arr is None:
                skipped.append("%s: %s does not fit a NumPy scalar; not saved" % (name, type_name(v)))
                return None
            nbytes = 16 if isinstance(v, complex) else 1 if isinstance(v, bool) else 8
        elif isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                skipped.append("%s: object array not saved (%s)" % (name, what))
                return None
            arr = v
        elif isinstance(v, (bool, int, float, complex, np.generic)):
            try:
                arr = np.asarray(v)
            except Exception:
                return None
            if arr.dtype.hasobject:
                skipped.append("%s: %s does not fit a NumPy scalar; not saved" % (name, type_name(v)))
                return None
        else:
            skipped.append("%s: %s is not an array or a number; not saved (%s)" % (name, type_name(v), what))
            return None
        if np is not None:
            nbytes = arr.nbytes
        if state["bytes"] + nbytes > cap:
            skipped.append(
                "%s: %s would pass the capture cap (%s in all, %s left); not saved (%s)"
                % (name, mb(nbytes), mb(cap), mb(max(0, cap - state["bytes"])), what)
            )
            rec["truncated"] = True
            state["truncated"] = True
            return None
        state["bytes"] += nbytes
        return arr

    def fnv1a(data):
        """FNV-1a (32 bits) of bytes: names cache files, without loading
        binascii or zlib for a crc32."""
        h = 0x811C9DC5
        for b in data:
            h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
        return h

    def safe(name):
        s = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return s or "function"

    def write_manifest():
        if os.getpid() != main_pid:
            return
        with mlock:  # the app's thread and the writer's
            doc = {
                "schema": "port-capture/3",
                "python": sys.executable,
                "captures": captures,
                "warnings": warnings,
                "bytes_written": state["bytes"],
                "truncated": state["truncated"],
                "hook_stopped": state["stopped"],
                "hook_s": state["hook_s"],
                "capture_s": round(state["capture_s"], 4),
                "write_s": round(state["write_s"], 4),
                "drain_s": round(state["drain_s"], 4),
            }
            tmp = os.path.join(out_dir, "manifest.json.tmp")
            with open(tmp, "w") as f:
                f.write(to_json(doc))
            os.replace(tmp, os.path.join(out_dir, "manifest.json"))

    def arg_names(code):
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        return code.co_varnames[:n]

    def realpath(f):
        try:
            return realpaths[f]
        except KeyError:
            r = realpaths[f] = os.path.realpath(f)
            return r

    def is_app_file(f):
        if f.startswith("<"):
            return False
        r = realpath(f)
        if not r.startswith(app_root + os.sep):
            return False
        parts = r[len(app_root):].split(os.sep)
        return not any(
            p in ("site-packages", "dist-packages") or p.startswith(".venv") for p in parts
        )

    # The member of an inputs .npz that describes the arrays not saved.
    BLANKS = "__port_blank__"
    # The member that names, for an argument passed as the same array as an
    # earlier one (`f(a, a)`), that one: JSON {name: earlier name}. Its data
    # is saved once, and verification passes one array for both.
    SAME = "__port_same__"
    # The member that names, for an argument an earlier capture saved as it
    # is now, that file and member: JSON {name: {"file", "member"}}, the
    # file in the same folder (see `shelved`).
    REFS = "__port_ref__"

    # Generators, coroutines, async generators: their "returns" are yields.
    NOT_FUNCTION = 0x20 | 0x80 | 0x100 | 0x200

    def is_candidate_code(code):
        name = getattr(code, "co_qualname", code.co_name)
        if name.rsplit(".", 1)[-1].startswith("<"):
            return False
        return not (code.co_flags & NOT_FUNCTION)

    def key_name(code):
        return getattr(code, "co_qualname", code.co_name)

    def code_key(code):
        return (realpath(code.co_filename), code.co_firstlineno, key_name(code))

    class Target:
        """One function of the app (one code object) and its capture."""

        __slots__ = ("key", "code", "attempts", "busy", "rec", "called", "armings")

        def __init__(self, key, code=None):
            self.key = key
            self.code = code
            self.attempts = 0
            self.busy = False
            self.rec = None
            self.called = False  # first calls only: some instance has been called
            self.armings = 0  # first calls only: instances given a trampoline

    def timed(f):
        def run(*a):
            t0 = time.perf_counter()
            try:
                return f(*a)
            finally:
                state["capture_s"] += time.perf_counter() - t0

        return run

    # port's static pass runs while the app starts and then writes hints:
    # per function (its file's real path and qualname), whether its inputs
    # are worth saving ("save": false with "refused_with", the types port's
    # planner refused it with) and which parameters its body never reads
    # ("unread": it only writes them). Read at the
    # first capture after the file appears; until then everything is saved.
    hints = {"table": None}

    def hint_for(code):
        table = hints["table"]
        if table is None:
            if not hints_path:
                return None
            try:
                with open(hints_path, "rb") as f:
                    text = f.read().decode("utf-8")
            except OSError:
                return None  # not written yet
            table = {}
            try:
                for h in scan_json(text, 0)[0]["functions"]:
                    table.setdefault((h["file"], h["qualname"]), []).append(h)
            except Exception:
                warnings.append("the static pass's hints could not be read; every input is saved")
            hints["table"] = table
        found = table.get((realpath(code.co_filename), key_name(code)))
        # Two definitions of one name: which one this is, the hints cannot say.
        return found[0] if found and len(found) == 1 else None

    PY_SCALARS = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}

    def called_as_refused(hint, values, np):
        """Whether the call's types are those port's planner refused the
        function with (`refused_with`): then its inputs are not worth
        saving. Other types may change the planner's answer."""
        expected = hint.get("refused_with")
        if not expected:
            return False
        for e in expected:
            v = values.get(e["name"])
            if e["ndim"] == 0:
                t = PY_SCALARS.get(type(v))
                if t is None and np is not None and isinstance(v, np.generic):
                    t = str(v.dtype)
            elif (
                np is not None
                and isinstance(v, np.ndarray)
                and v.ndim == e["ndim"]
                and (v.flags.c_contiguous or not e.get("contiguous"))
            ):
                t = str(v.dtype)
            else:
                return False
            if t != e["dtype"]:
                return False
        return True

    def shared_arrays(names, values, np):
        """Pairs of array arguments that share memory (`f(a, a)`, a view of
        another argument): the call is in place, which inputs saved one by
        one do not reproduce."""
        if np is None:
            return []
        arrays = [(n, values.get(n)) for n in names if isinstance(values.get(n), np.ndarray)]
        return [
            [n, m]
            for i, (n, v) in enumerate(arrays)
            for m, w in arrays[i + 1 :]
            if np.may_share_memory(v, w)
        ]

    def same_array(v, w):
        """One array passed twice: the same memory, seen the same way (a view
        at an offset, or with other strides, only overlaps)."""
        if v is w:
            return True
        return (
            v.dtype == w.dtype
            and v.shape == w.shape
            and v.strides == w.strides
            and v.__array_interface__["data"][0] == w.__array_interface__["data"][0]
        )

    def blank_spec(v, np):
        """What verification needs to make an array the function never
        reads (its dtype, shape and order), or None when it is not a plain
        array."""
        if np is None or not isinstance(v, np.ndarray) or v.dtype.fields is not None or v.dtype.hasobject:
            return None
        fortran = v.ndim > 1 and not v.flags.c_contiguous and v.flags.f_contiguous
        return {"dtype": v.dtype.str, "shape": [int(k) for k in v.shape], "fortran": fortran}

    @timed
    def begin(target, code, values):
        """Records the call's types and saves its inputs; values maps each
        parameter name to its value."""
        np = numpy()
        names = arg_names(code)
        target.busy = True
        target.attempts += 1
        rec = {
            "function": key_name(code),
            "name": code.co_name,
            "file": target.key[0],
            "line": code.co_firstlineno,
            "args": [{"name": n, "kind": describe(values.get(n), np)} for n in names],
            "returns": None,
            "returns_alias": None,
            "inputs_npz": None,
            "skipped": [],
            "truncated": False,
            "returned": False,
            "aliases": shared_arrays(names, values, np),
            "refers_to": [],  # the earlier .npz files its REFS name
        }
        # Of those, the pairs that are one array (`f(x, x)`): the call is in
        # place, which the analysis judges with both names as one array.
        rec["same_array"] = [[m, k] for m, k in rec["aliases"] if same_array(values.get(m), values.get(k))]
        stem = "%s-%d" % (safe(rec["function"]), len(captures))
        arrays = {}
        hint = hint_for(code)
        if hint is not None and not hint.get("save", True) and called_as_refused(hint, values, np):
            rec["skipped"].append(hint.get("why") or "inputs not saved: port cannot migrate it")
            names_saved = ()
        else:
            names_saved = names
        # An array sharing memory with another argument is saved: the
        # function may read it through that one.
        shared = set(n for pair in rec["aliases"] for n in pair)
        unread = [n for n in hint.get("unread", ()) if n not in shared] if hint is not None else ()
        blanks = {}
        same = {}
        refs = {}
        for n in names_saved:
            first = next((m for m, k in rec["same_array"] if k == n and (m in arrays or m in refs)), None)
            if first is not None:
                same[n] = first
                continue
            if n in unread:
                spec = blank_spec(values.get(n), np)
                if spec is not None:
                    blanks[n] = spec
                    rec["skipped"].append(
                        "%s: only written by the function, never read; not saved "
                        "(verification starts it from zeros)" % n
                    )
                    continue
            entry = shelved(values.get(n), np)
            if entry is not None:
                refs[n] = {"file": os.path.basename(entry[1]), "member": entry[2]}
                rec["refers_to"].append(entry[1])
                continue
            arr = saveable(n, values.get(n), np, rec, "input")
            if arr is not None:
                arrays[n] = arr
        # In the .npz itself, so that any reader of it (`--inputs`) can make
        # the arrays they describe: JSON, as bytes.
        for member, v in ((REFS, refs), (BLANKS, blanks), (SAME, same)):
            if v:
                arrays[member] = np.frombuffer(to_json(v).encode("utf-8"), dtype=np.uint8)
        rec["stem"] = stem
        # The record is kept from the start: a call that never ends (a crash,
        # os._exit, a killed app) still leaves its types and inputs.
        rec["skipped"].append("the call had not returned when the program ended")
        if target.rec is None:
            captures.append(rec)
        else:
            # A retry after a call that raised: replaces the earlier record.
            at = next(i for i, c in enumerate(captures) if c is target.rec)
            captures[at] = rec
            remove_npz(target.rec)
        target.rec = rec
        if arrays:
            path = os.path.join(out_dir, stem + ".inputs.npz")
            shelve(path, arrays, rec, np)
            save(rec, "inputs_npz", path, arrays, np)
        write_manifest()
        return rec, dict((n, values.get(n)) for n in names), np

    def remove_npz(rec):
        p = rec.get("inputs_npz")
        if p:
            try:
                os.remove(p)
            except OSError:
                pass

    @timed
    def finish(target, rec, values, np, result, raised):
        np = np or numpy()  # imported by the call itself
        target.busy = False
        rec["skipped"].remove("the call had not returned when the program ended")
        if raised:
            rec["skipped"].append("every captured call raised an exception; its return type is unknown")
            if target.attempts >= MAX_ATTEMPTS:
                complete(target)
            write_manifest()
            return
        rec["returned"] = True
        rec["returns"] = describe(result, np)
        # Returning an argument (an array updated in place, say): which one.
        alias = next((n for n, v in values.items() if v is result), None)
        if result is not None and alias is not None:
            rec["returns_alias"] = alias
        complete(target)
        write_manifest()

    def complete(target):
        done.add(target.key)
        if MONITORING and expected <= done:
            stop("all captured")

    def at_capacity():
        """True once max_functions calls are captured: later functions are not."""
        if len(captures) < max_functions:
            return False
        if state["stopped"] is None:
            warnings.append(
                "capture stopped at %d functions: later functions have no captured inputs"
                % max_functions
            )
        stop("functions")
        return True

    def stop(why):
        if state["stopped"] is None:
            state["stopped"] = why
            state["hook_s"] = round(time.perf_counter() - started, 3)
            uninstall()
            write_manifest()

    # --- 3.12+: sys.monitoring ---------------------------------------------

    expected = set()  # (file, firstlineno, qualname) of candidate functions
    files_seen = set()

    def expect_file(path):
        """Every function of an app file is a candidate: when all are captured
        the hook can go."""
        files_seen.add(path)
        try:
            with open(path, "rb") as f:
                top = compile(f.read(), path, "exec", dont_inherit=True)
        except Exception:
            return
        stack = [top]
        while stack:
            c = stack.pop()
            for k in c.co_consts:
                if hasattr(k, "co_code"):
                    stack.append(k)
            if c is not top and is_candidate_code(c):
                expected.add(code_key(c))

    if MONITORING:
        codes = {}
        active = {}  # frame -> (target, rec, values, np) for calls being captured
        mon = sys.monitoring
        E = mon.events
        tool = None
        for tid in (mon.PROFILER_ID, 3, 4):
            if mon.get_tool(tid) is None:
                tool = tid
                break

        def classify(code):
            """A Target for a function of the app's own files, else SKIP."""
            if not is_app_file(code.co_filename) or not is_candidate_code(code):
                return SKIP
            key = code_key(code)
            if key[0] not in files_seen:
                expect_file(key[0])
            expected.add(key)
            if key in done or at_capacity():
                return SKIP
            return Target(key)

        def lookup(code):
            t = codes.get(code)
            if t is None:
                t = codes[code] = classify(code)
            return t

        def start_call(frame, code, target):
            if os.getpid() != main_pid:
                return
            try:
                rec, values, np = begin(target, code, frame.f_locals)
            except Exception as e:  # a capture failure must never break the app
                target.busy = False
                codes[code] = SKIP
                warnings.append("%s: capture failed: %s" % (key_name(code), e))
                return
            active[frame] = (target, rec, values, np)

        def end_call(frame, result, raised):
            target, rec, values, np = active.pop(frame)
            try:
                finish(target, rec, values, np, result, raised)
            except Exception as e:
                target.busy = False
                complete(target)
                warnings.append("%s: recording the return failed: %s" % (rec["function"], e))
            if target.key in done:
                codes[frame.f_code] = SKIP

        def on_start(code, offset):
            if state["stopped"] is not None:
                return mon.DISABLE
            t = lookup(code)
            if t is SKIP:
                return mon.DISABLE
            if t.busy:
                return None
            frame = sys._getframe(2)  # past the guard
            start_call(frame, code, t)
            if frame in active:
                mon.set_local_events(tool, code, E.PY_RETURN)
                mon.set_events(tool, E.PY_START | E.PY_UNWIND)
            return None

        def on_return(code, offset, result):
            frame = sys._getframe(2)  # past the guard
            if frame in active:
                end_call(frame, result, False)
                after_end(code)
            return None

        def on_unwind(code, offset, exc):
            if active:
                frame = sys._getframe(2)  # past the guard
                if frame in active:
                    end_call(frame, None, True)
                    after_end(code)
            return None

        def after_end(code):
            if state["stopped"] is not None:
                return
            if not any(f.f_code is code for f in active):
                mon.set_local_events(tool, code, 0)
            if not active and state["stopped"] is None:
                mon.set_events(tool, E.PY_START)

        def guarded(f):
            def callback(*a):
                try:
                    return f(*a)
                except Exception as e:
                    warnings.append("capture hook failed: %s" % e)
                    stop("an error")
                    return None

            return callback

        on_start = guarded(on_start)
        on_return = guarded(on_return)
        on_unwind = guarded(on_unwind)

        def compile_app(source, path):
            return None  # the app's own code, unchanged

        def install():
            if tool is None:
                warnings.append("sys.monitoring has no free tool id: nothing captured")
                return
            mon.use_tool_id(tool, "port-capture")
            mon.register_callback(tool, E.PY_START, on_start)
            mon.register_callback(tool, E.PY_RETURN, on_return)
            mon.register_callback(tool, E.PY_UNWIND, on_unwind)
            mon.set_events(tool, E.PY_START)

        def uninstall():
            if tool is not None and mon.get_tool(tool) == "port-capture":
                for frame in active:
                    mon.set_local_events(tool, frame.f_code, 0)
                mon.set_events(tool, 0)
                mon.free_tool_id(tool)
            # Calls still running keep their types and inputs; the hook does
            # not stay on for their return.
            note = "the call had not returned when the program ended"
            for target, rec, values, np in active.values():
                if note in rec["skipped"] and state["stopped"] != "program ended":
                    rec["skipped"].remove(note)
                    rec["skipped"].append(
                        "the capture hook stopped (%s) before the call returned; its return type is unknown"
                        % state["stopped"]
                    )
            active.clear()

    # --- before 3.12: a trampoline per function, until its first call --------

    else:
        import _thread
        import _weakref as weakref  # weakref.ref itself, without the module's imports
        import builtins
        import itertools

        machinery = _port_machinery()

        lock = _thread.RLock()  # captures in several threads write one manifest
        by_code = {}  # id(code) -> (code, Target or None)
        armed = {}  # key -> [weakref to the function, its trampoline, Target, called]
        templates = {}  # signature shape -> (template code, index of KEY, index of ORIG)
        keys = itertools.count()  # next() is atomic: threads define functions too
        # A nested function whose instances keep being made and never called
        # is cold: after this many it is no longer armed.
        MAX_ARMINGS = 64

        def template_source(posonly, argc, kwonly, varargs, varkw, nfree):
            """A trampoline for functions of one signature shape. Its
            parameters are renamed to the function's own (code.replace), so
            Python binds a call to it exactly as to the function. KEY and
            ORIG are constants filled in per function: the function's entry
            in `armed` and its original code."""
            n = argc + kwonly + varargs + varkw
            p = ["_port_p%d" % i for i in range(n)]
            sig = p[:posonly] + (["/"] if posonly else []) + p[posonly:argc]
            if varargs:
                sig.append("*" + p[argc + kwonly])
            elif kwonly:
                sig.append("*")
            sig += p[argc : argc + kwonly]
            if varkw:
                sig.append("**" + p[n - 1])
            frees = ["_port_v%d" % i for i in range(nfree)]
            positional = "(%s)" % "".join(x + ", " for x in p[:argc])
            if varargs:
                positional += " + " + p[argc + kwonly]
            cells = "(%s)" % "".join("_port_cell(%s), " % v for v in frees) if frees else "None"
            lines = ["def _port_outer():"]
            if frees:
                lines.append("    %s = None" % " = ".join(frees))
            lines += [
                "    def _port_first_call(%s):" % ", ".join(sig),
                "        try:",
                "            _port_how = __port_call__('__PORT_KEY__', (%s))" % "".join(x + ", " for x in p),
                "        except NameError:",
                "            _port_how = None",
                "        if _port_how is None:",
                # No bootstrap here (the function was pickled by value into
                # another process, as cloudpickle does for joblib): the
                # original code, rebuilt from this frame, runs the call.
                "            _port_o = '__PORT_ORIG__'",
                "            _port_k = dict(zip(_port_o.co_varnames[%d:%d], (%s)))"
                % (argc, argc + kwonly, "".join(x + ", " for x in p[argc : argc + kwonly])),
            ]
            if varkw:
                lines.append("            _port_k.update(%s)" % p[n - 1])
            if frees:
                lines.append("            _port_cell = __import__('types').CellType")
            lines += [
                "            _port_f = __import__('types').FunctionType(_port_o, globals(), None, None, %s)" % cells,
                "            _port_how = None, _port_f, %s, _port_k" % positional,
                "        _port_done, _port_f, _port_a, _port_k = _port_how",
                "        try:",
                "            _port_r = _port_f(*_port_a, **_port_k)",
                "        except BaseException as _port_e:",
                "            if _port_done is not None:",
                "                _port_done(None, _port_e)",
                # Out of the caller's sight: the traceback goes from the
                # caller's line straight to the function's (3.11+, where a
                # bare raise takes __traceback__; before, only the
                # bootstrap's handler cleans a traceback nobody caught).
                "            _port_e.__traceback__ = _port_e.__traceback__.tb_next",
                "            raise",
                "        if _port_done is not None:",
                "            _port_done(_port_r, None)",
                "        return _port_r",
                "    return _port_first_call",
            ]
            return "\n".join(lines) + "\n"

        def trampoline(code, key):
            """code's trampoline for the function armed under key."""
            varargs = bool(code.co_flags & 0x04)
            varkw = bool(code.co_flags & 0x08)
            shape = (
                code.co_posonlyargcount,
                code.co_argcount,
                code.co_kwonlyargcount,
                varargs,
                varkw,
                len(code.co_freevars),
            )
            t = templates.get(shape)
            if t is None:
                ns = {}
                exec(compile(template_source(*shape), "<string>", "exec"), ns)
                tc = ns["_port_outer"]().__code__
                t = templates[shape] = (
                    tc,
                    tc.co_consts.index("__PORT_KEY__"),
                    tc.co_consts.index("__PORT_ORIG__"),
                )
            tc, key_at, orig_at = t
            consts = list(tc.co_consts)
            consts[key_at] = key
            consts[orig_at] = code
            n = len(arg_names(code))
            # The sampler drops frames by this name (co_qualname is what it
            # reads from 3.11); co_name stays the function's where it can.
            if hasattr(code, "co_qualname"):
                names = {"co_name": code.co_name, "co_qualname": "_port_first_call"}
            else:
                names = {"co_name": "_port_first_call"}
            return tc.replace(
                co_consts=tuple(consts),
                co_varnames=code.co_varnames[:n] + tc.co_varnames[n:],
                co_freevars=code.co_freevars,
                co_filename=code.co_filename,
                co_firstlineno=code.co_firstlineno,
                **names
            )

        def forget(key):
            return lambda _ref: armed.pop(key, None)

        def define(f):
            """`@__port_def__`, innermost on each function the app defines:
            arms f (gives it a trampoline) until its first call. Returns f
            itself, so every other decorator sees the function as defined."""
            try:
                code = f.__code__
                seen = by_code.get(id(code))
                if seen is None:
                    target = None
                    if is_candidate_code(code) and is_app_file(code.co_filename):
                        target = Target(code_key(code), code)
                    seen = by_code[id(code)] = (code, target)
                target = seen[1]
                if (
                    target is None
                    or target.key in done
                    or state["stopped"] is not None
                    or (not target.called and target.armings >= MAX_ARMINGS)
                ):
                    return f
                target.armings += 1
                key = next(keys)
                tramp = trampoline(code, key)
                armed[key] = [weakref.ref(f, forget(key)), tramp, target, False]
                f.__code__ = tramp
            except Exception as e:  # a capture failure must never break the app
                warnings.append("%s: not captured: %s" % (getattr(f, "__qualname__", "?"), e))
            return f

        def first_call(key, values):
            """`__port_call__`, from the trampoline of the function armed
            under key, with its parameters' values in co_varnames order: puts
            the original code back and starts recording the call. Returns
            (done or None, the function, positional args, keyword args) for
            the trampoline to call it with, and to pass the result or the
            exception to done; None when the trampoline must run the call on
            its own."""
            entry = armed.get(key)
            f = entry[0]() if entry is not None else None
            if f is None:
                return None
            target = entry[2]
            code = target.code
            f.__code__ = code  # from now on, calls go straight to it
            entry[3] = target.called = True
            n = code.co_argcount
            m = n + code.co_kwonlyargcount
            a = values[:n]
            if code.co_flags & 0x04:
                a += values[m]
            k = dict(zip(code.co_varnames[n:m], values[n:m]))
            if code.co_flags & 0x08:
                k.update(values[-1])
            return record(target, entry, f, values), f, a, k

        def record(target, entry, f, values):
            """Starts the record of this call, if it is the one to capture:
            returns what the trampoline calls when the call ends, or None."""
            if os.getpid() != main_pid or state["stopped"] is not None:
                return None
            code = target.code
            with lock:
                if target.busy or target.key in done or at_capacity():
                    return None
                target.busy = True
                try:
                    rec, named, np = begin(target, code, dict(zip(arg_names(code), values)))
                except Exception as e:  # a capture failure must never break the app
                    target.busy = False
                    done.add(target.key)
                    warnings.append("%s: capture failed: %s" % (key_name(code), e))
                    return None

            def ended(result, exc):
                with lock:
                    try:
                        finish(target, rec, named, np, result, exc is not None)
                    except Exception as e:
                        target.busy = False
                        done.add(target.key)
                        warnings.append("%s: recording the return failed: %s" % (rec["function"], e))
                    if target.key not in done and state["stopped"] is None:
                        # The call raised: the next one is captured instead.
                        f.__code__ = entry[1]

            return ended

        JIT_WORDS = frozenset(
            (
                "numba", "jit", "njit", "vectorize", "guvectorize", "cfunc",
                "stencil", "generated_jit", "jitclass", "overload",
                "overload_method", "overload_attribute", "overload_classmethod",
                "register_jitable", "intrinsic", "jit_module",
            )
        )
        JIT_HINTS = (b"jit", b"numba", b"vectorize", b"stencil", b"cfunc", b"overload", b"intrinsic")
        BODIES = ("body", "orelse", "finalbody", "handlers", "cases")

        import marshal

        bytecode_dir = os.path.join(out_dir, "bytecode")

        def compile_app(source, path):
            """transform_app(source, path), cached in out_dir/bytecode: a plain
            run loads a local module from __pycache__ in a millisecond, while
            parsing, transforming and compiling it takes some 10 ms per
            thousand lines. Keyed, as CPython keys its own cache, by the
            file's modification time and size, and by the Python and this
            bootstrap; a file that does not compile is not cached."""
            try:
                st = os.stat(path)
                key = (
                    "%s|%s|%d|%d|%d|%s\n"
                    % (path, sys.version, sys.flags.optimize, st.st_mtime_ns, st.st_size, helper_id)
                ).encode("utf-8", "surrogateescape")
                name = "%s-%08x.bin" % (safe(os.path.basename(path)), fnv1a(key))
                cached = os.path.join(bytecode_dir, name)
            except (OSError, ValueError):
                return transform_app(source, path)
            try:
                with open(cached, "rb") as f:
                    data = f.read()
                if data.startswith(key):
                    data = data[len(key) :]
                    return marshal.loads(data) if data else None
            except (OSError, ValueError, EOFError, TypeError):
                pass
            code = transform_app(source, path)
            if code is None and not syntax_ok.pop(path, False):
                return None  # does not compile: the usual error, never cached
            try:
                os.makedirs(bytecode_dir, exist_ok=True)
                tmp = "%s.%d.tmp" % (cached, os.getpid())
                with open(tmp, "wb") as f:
                    f.write(key + (marshal.dumps(code) if code is not None else b""))
                os.replace(tmp, cached)
            except (OSError, ValueError):
                pass
            return code

        syntax_ok = {}  # path -> True: transform_app's None was "no function"

        def transform_app(source, path):
            """A file of the app compiled with `@__port_def__` innermost on
            each function definition, or None when it has none (or cannot be
            parsed: then it is compiled as Python would, and fails the same).

            Left alone: a function whose decorators name a JIT (Numba reads
            the function's bytecode, which must stay its own) and all inside
            it, a function passed by name to one (`fast = njit(f)`), and a
            module that calls numba.jit_module. Only statements are walked:
            every definition is one, so this costs little per line."""
            try:
                import _ast as ast  # the node classes; the `ast` module is not needed

                tree = compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
                jit = any(h in source for h in JIT_HINTS)

                def walk(node):
                    todo = [node]
                    while todo:
                        node = todo.pop()
                        yield node
                        for name in node._fields:
                            field = getattr(node, name, None)
                            if isinstance(field, ast.AST):
                                todo.append(field)
                            elif type(field) is list:
                                todo.extend(x for x in field if isinstance(x, ast.AST))

                def mentions_jit(node):
                    for n in walk(node):
                        if (type(n) is ast.Name and n.id in JIT_WORDS) or (
                            type(n) is ast.Attribute and n.attr in JIT_WORDS
                        ):
                            return True
                    return False

                handed = set()
                if jit:
                    for node in walk(tree):
                        if type(node) is ast.Call:
                            func = node.func
                            while type(func) is ast.Call:  # njit(cache=True)(f)
                                func = func.func
                            if not mentions_jit(func):
                                continue
                            if any(
                                (type(n) is ast.Attribute and n.attr == "jit_module")
                                or (type(n) is ast.Name and n.id == "jit_module")
                                for n in walk(func)
                            ):
                                syntax_ok[path] = True
                                return None
                            handed.update(a.id for a in node.args if type(a) is ast.Name)
                added = 0
                FunctionDef = ast.FunctionDef
                defs = (FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                stack = [tree.body]
                while stack:
                    for node in stack.pop():
                        kind = type(node)
                        if kind in defs:
                            if jit and any(mentions_jit(d) for d in node.decorator_list):
                                continue
                            if kind is FunctionDef and node.name not in handed:
                                node.decorator_list.append(
                                    ast.Name(
                                        "__port_def__",
                                        ast.Load(),
                                        lineno=node.lineno,
                                        col_offset=node.col_offset,
                                        end_lineno=node.lineno,
                                        end_col_offset=node.col_offset,
                                    )
                                )
                                added += 1
                            stack.append(node.body)
                            continue
                        for field in BODIES:
                            body = getattr(node, field, None)
                            if not body:
                                continue
                            if field in ("handlers", "cases"):
                                stack.extend(h.body for h in body)
                            else:
                                stack.append(body)
                if not added:
                    syntax_ok[path] = True
                    return None
                return compile(tree, path, "exec", dont_inherit=True)
            except SyntaxError:
                return None
            except Exception as e:
                warnings.append("%s: functions not captured: %s" % (path, e))
                return None

        def is_app_module(path):
            return (
                isinstance(path, str)
                and path.startswith(app_root + os.sep)
                and is_app_file(path)
            )

        class AppLoader(machinery.SourceFileLoader):
            """Loads a module of the app compiled by compile_app. Never from
            or to __pycache__: plain runs use those files."""

            def __init__(self, fullname, path, code):
                super().__init__(fullname, path)
                self.port_code = code

            def get_code(self, fullname):
                code, self.port_code = self.port_code, None
                if code is None:
                    code = compile_app(self.get_data(self.path), self.path)
                return code if code is not None else super().get_code(fullname)

        class AppFinder:
            """Just before PathFinder on sys.meta_path: finds what it finds,
            and gives the app's own modules (under the app's directory, not in
            a virtual environment) an AppLoader. The module is compiled here,
            so that a file that does not compile keeps the usual loader, and
            fails with the usual traceback."""

            @staticmethod
            def find_spec(fullname, path=None, target=None):
                spec = machinery.PathFinder.find_spec(fullname, path, target)
                if (
                    spec is not None
                    and type(spec.loader) is machinery.SourceFileLoader
                    and is_app_module(spec.origin)
                ):
                    try:
                        code = compile_app(spec.loader.get_data(spec.origin), spec.origin)
                    except OSError:
                        code = None
                    if code is not None:
                        spec.loader = AppLoader(fullname, spec.origin, code)
                return spec

        def install():
            builtins.__port_def__ = define
            builtins.__port_call__ = first_call
            meta = sys.meta_path
            at = meta.index(machinery.PathFinder) if machinery.PathFinder in meta else len(meta)
            meta.insert(at, AppFinder)

        def uninstall():
            pass  # functions still armed run their original code from now on

    os.makedirs(out_dir, exist_ok=True)
    if MONITORING:
        # An app that imports NumPy would do it in its run: done here first,
        # the hook does not see (and pay for) the functions of the import.
        # (Before 3.12 nothing is hooked, and the app imports what it imports
        # when it does, as alone.)
        try:
            with open(app, "rb") as f:
                if b"numpy" in f.read():
                    # Not `import numpy`: that would bind `numpy` here, in
                    # place of the function of that name.
                    __import__("numpy")
        except Exception:
            pass
        expect_file(realpath(app))
        if not expected:
            state["stopped"] = "no functions"
    write_manifest()

    import atexit

    def at_exit():
        if state["stopped"] is None:
            state["stopped"] = "program ended"
            state["hook_s"] = round(time.perf_counter() - started, 3)
            uninstall()
        drain()
        write_manifest()

    atexit.register(at_exit)

    # os._exit runs no atexit handler: it waits for the writer first, so the
    # arrays of a call already captured are not lost with the process.
    def exit_now(status, _exit=os._exit):
        drain()
        _exit(status)

    os._exit = exit_now

    def start():
        # Before 3.12 the app's code names __port_def__: always installed.
        if state["stopped"] is None or not MONITORING:
            install()

    return compile_app, start


def _port_main():
    import os
    import sys

    loader = _port_machinery().SourceFileLoader
    app = sys.argv[1]
    compile_app, start = _port_capture()
    with open(app, "rb") as f:
        source = f.read()
    code = compile_app(source, app)
    if code is None:
        try:
            code = compile(source, app, "exec", dont_inherit=True)
        except SyntaxError as e:
            # As `python APP` reports it: no traceback, exit status 1.
            sys.excepthook(type(e), e.with_traceback(None), None)
            sys.exit(1)
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(app)
    g = globals()
    for name in ("_port_load", "_port_capture", "_port_main", "_port_machinery"):
        g.pop(name, None)
    g["__file__"] = app
    g["__cached__"] = None
    g["__loader__"] = loader("__main__", app)
    start()
    return code


try:
    exec(_port_main())
except SystemExit:
    raise
except BaseException as _port_e:
    # The traceback as `python APP` prints it: without this bootstrap's
    # frames (its first line, and any of its functions on the way).
    import sys as _port_sys

    def _port_ours(tb):
        c = tb.tb_frame.f_code
        name = getattr(c, "co_qualname", c.co_name)
        return name == "_port_first_call" or (
            c.co_filename == "<string>" and name.startswith("_port_")
        )

    _port_tb = _port_e.__traceback__.tb_next
    while _port_tb is not None and _port_ours(_port_tb):
        _port_tb = _port_tb.tb_next
    _port_at = _port_tb
    while _port_at is not None:
        while _port_at.tb_next is not None and _port_ours(_port_at.tb_next):
            _port_at.tb_next = _port_at.tb_next.tb_next
        _port_at = _port_at.tb_next
    _port_sys.excepthook(type(_port_e), _port_e.with_traceback(_port_tb), _port_tb)
    if isinstance(_port_e, KeyboardInterrupt):
        import atexit as _port_atexit
        import os as _port_os
        import signal as _port_signal

        _port_atexit._run_exitfuncs()
        _port_signal.signal(_port_signal.SIGINT, _port_signal.SIG_DFL)
        _port_os.kill(_port_os.getpid(), _port_signal.SIGINT)
    raise SystemExit(1)
