# port's capture helper: runs the app as __main__ and, for the first call of each
# target function, records the argument types, saves the inputs (np.savez) and,
# when the call returns, the array arguments as they are then plus the return
# value. Shipped inside the port binary and run as `python -c HELPER APP ARGS...`
# with its settings as JSON in $PORT_CAPTURE_CONFIG:
#   {"app", "args", "out_dir", "cap_bytes", "stop_when_done",
#    "targets": [{"key", "file", "name"}]}
# It writes out_dir/manifest.json, which port reads back.
#
# Only calls of the targets' code objects are looked at: the global trace
# function sees Python-level calls (not C calls) and returns a local tracer
# for a target's frame only, with line events turned off, so the app runs
# close to normal speed.


def _port_capture():
    import json
    import os
    import runpy
    import signal
    import sys
    import threading

    cfg = json.loads(os.environ.pop("PORT_CAPTURE_CONFIG"))
    app = cfg["app"]
    out_dir = cfg["out_dir"]
    cap = int(cfg["cap_bytes"])
    stop_when_done = bool(cfg.get("stop_when_done", True))
    main_pid = os.getpid()

    wanted = {}
    for t in cfg["targets"]:
        wanted[(os.path.realpath(t["file"]), t["name"])] = t["key"]
    pending = set(wanted.values())
    code_keys = {}  # code object -> key or None
    in_progress = set()
    captures = []
    # A target whose call raised: kept only if no later call returns. After
    # MAX_ATTEMPTS raising calls the target is given up.
    raised_calls = {}
    attempts = {}
    MAX_ATTEMPTS = 3
    warnings = []
    state = {"bytes": 0, "numpy_checked": False, "np": None}

    def numpy():
        np = sys.modules.get("numpy")
        if np is not None:
            return np
        if not state["numpy_checked"]:
            state["numpy_checked"] = True
            try:
                import numpy as np  # noqa: F401
            except Exception:
                warnings.append(
                    "numpy not importable in %s: inputs not captured" % sys.executable
                )
                return None
            return np
        return None

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

    def saveable(name, v, np, skipped, what):
        """The array to save for v, or None with the reason in skipped."""
        if np is None:
            return None
        if isinstance(v, np.ndarray):
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
        if state["bytes"] + arr.nbytes > cap:
            skipped.append(
                "%s: %s would pass the capture cap (%s in all, %s left); not saved (%s)"
                % (name, mb(arr.nbytes), mb(cap), mb(max(0, cap - state["bytes"])), what)
            )
            return None
        state["bytes"] += arr.nbytes
        return arr

    def safe(key):
        s = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
        return s or "function"

    def save(np, path, arrays):
        np.savez(path, **arrays)
        return path

    def write_manifest():
        done = {c["function"] for c in captures}
        fallbacks = [r for k, r in sorted(raised_calls.items()) if k not in done]
        doc = {
            "schema": "port-capture/1",
            "python": sys.executable,
            "captures": captures + fallbacks,
            "missed": sorted(k for k in pending if k not in raised_calls),
            "warnings": warnings,
            "bytes_written": state["bytes"],
        }
        tmp = os.path.join(out_dir, "manifest.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, os.path.join(out_dir, "manifest.json"))

    def arg_names(code):
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        return code.co_varnames[:n]

    def target_key(code):
        try:
            return code_keys[code]
        except KeyError:
            name = getattr(code, "co_qualname", code.co_name)
            key = wanted.get((os.path.realpath(code.co_filename), name))
            if key is None and name != code.co_name:
                key = wanted.get((os.path.realpath(code.co_filename), code.co_name))
            code_keys[code] = key
            return key

    def start(frame, key):
        np = numpy()
        code = frame.f_code
        names = arg_names(code)
        values = {n: frame.f_locals.get(n) for n in names}
        rec = {
            "function": key,
            "file": os.path.realpath(code.co_filename),
            "line": code.co_firstlineno,
            "args": [{"name": n, "kind": describe(values[n], np)} for n in names],
            "returns": None,
            "returns_alias": None,
            "inputs_npz": None,
            "outputs_npz": None,
            "skipped": [],
        }
        arrays = {}
        for n in names:
            arr = saveable(n, values[n], np, rec["skipped"], "input")
            if arr is not None:
                arrays[n] = arr
        if arrays:
            rec["inputs_npz"] = save(np, os.path.join(out_dir, safe(key) + ".inputs.npz"), arrays)
        return rec, values, np

    def finish(rec, values, np, result, raised):
        if raised:
            rec["skipped"].append("every captured call raised an exception; outputs not saved")
            raised_calls[rec["function"]] = rec
            return False
        else:
            rec["returns"] = describe(result, np)
            arrays = {}
            for n, v in values.items():
                if np is not None and isinstance(v, np.ndarray):
                    arr = saveable(n, v, np, rec["skipped"], "output")
                    if arr is not None:
                        arrays[n] = arr
            results = result if isinstance(result, tuple) else (result,)
            for i, r in enumerate(results):
                if r is None:
                    continue
                # Returning an argument (in-place update): say which, save it once.
                alias = next((n for n, v in values.items() if v is r), None)
                if alias is not None and len(results) == 1:
                    rec["returns_alias"] = alias
                    continue
                name = "__return__" if len(results) == 1 else "__return__%d" % i
                arr = saveable(name, r, np, rec["skipped"], "output")
                if arr is not None:
                    arrays[name] = arr
            if arrays:
                rec["outputs_npz"] = save(np, os.path.join(out_dir, safe(rec["function"]) + ".outputs.npz"), arrays)
        raised_calls.pop(rec["function"], None)
        captures.append(rec)
        return True

    def global_trace(frame, event, arg):
        if event != "call" or not pending:
            return None
        key = target_key(frame.f_code)
        if key is None or key not in pending or key in in_progress:
            return None
        if os.getpid() != main_pid:
            return None
        in_progress.add(key)
        try:
            rec, values, np = start(frame, key)
        except Exception as e:  # a capture failure must never break the app
            in_progress.discard(key)
            pending.discard(key)
            warnings.append("%s: capture failed: %s" % (key, e))
            return None
        seen = {"exception": False}

        # Line events stay off except right after an exception: a line event
        # then means the frame handled it; a return straight after means the
        # exception propagated and the call produced no result.
        def local_trace(frame, event, arg):
            if event == "exception":
                seen["exception"] = True
                frame.f_trace_lines = True
            elif event == "line":
                seen["exception"] = False
                frame.f_trace_lines = False
            elif event == "return":
                raised = seen["exception"] and arg is None
                done = True
                try:
                    done = finish(rec, values, np, arg, raised)
                except Exception as e:
                    warnings.append("%s: saving outputs failed: %s" % (key, e))
                in_progress.discard(key)
                attempts[key] = attempts.get(key, 0) + 1
                if done or attempts[key] >= MAX_ATTEMPTS:
                    pending.discard(key)
                write_manifest()
                if not pending and stop_when_done:
                    sys.stdout.flush()
                    os._exit(0)
            return local_trace

        frame.f_trace_lines = False
        return local_trace

    def on_term(signum, frame):
        raise SystemExit(128 + signum)

    os.makedirs(out_dir, exist_ok=True)
    sys.argv = [app] + list(cfg["args"])
    sys.path[0] = os.path.dirname(app)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_term)
    write_manifest()
    threading.settrace(global_trace)
    sys.settrace(global_trace)
    try:
        runpy.run_path(app, run_name="__main__")
    finally:
        sys.settrace(None)
        threading.settrace(None)
        if os.getpid() == main_pid:
            write_manifest()


_port_capture()
