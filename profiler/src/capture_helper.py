# port's capture bootstrap: runs the app as __main__ in the one sampled run and,
# for the first call of each of the app's own functions, records the argument
# types, saves the inputs (np.savez) and, when the call returns, the array
# arguments as they are then plus the return value. Shipped inside the port
# binary and run as `python -c BOOTSTRAP APP ARGS...` with its settings as JSON
# in $PORT_CAPTURE_CONFIG:
#   {"app", "app_root", "out_dir", "cap_bytes", "max_functions",
#    "budget_events", "budget_s"}
# It keeps out_dir/manifest.json up to date after every capture (a crash or
# os._exit keeps what was captured), and port reads it back.
#
# The hook switches itself off. On Python 3.12+ it is a sys.monitoring PY_START
# callback that disables itself per code object (so a function costs one event
# in all, and the app's own functions a few more once captured). Before 3.12 it
# is a sys.settrace hook (Python calls only: C calls such as NumPy's cost
# nothing) with an early exit, removed once every function of the app's files
# seen so far has been captured, or when its budget of calls or seconds is
# spent: until then the interpreter runs its slower traced loop.
#
# The app runs in the real __main__ module, with sys.argv, sys.path[0] and
# __file__ as `python APP ARGS` sets them; a traceback leaves out the
# bootstrap's own line.


def _port_capture():
    import json
    import os
    import sys
    import time

    cfg = json.loads(os.environ.pop("PORT_CAPTURE_CONFIG"))
    app = cfg["app"]
    app_root = os.path.realpath(cfg["app_root"])
    out_dir = cfg["out_dir"]
    cap = int(cfg["cap_bytes"])
    max_functions = int(cfg["max_functions"])
    budget_events = int(cfg["budget_events"])
    budget_s = float(cfg["budget_s"])
    main_pid = os.getpid()
    started = time.perf_counter()

    captures = []  # the records, in the order their calls began
    warnings = []
    state = {
        "bytes": 0,
        "np": None,
        "numpy_checked": False,
        "stopped": None,
        "truncated": False,
        "hook_s": None,
    }
    MAX_ATTEMPTS = 3
    SKIP = 0
    expected = set()  # (file, firstlineno, qualname) of candidate functions
    files_seen = set()
    done = set()
    realpaths = {}

    def numpy():
        np = state["np"]
        if np is not None:
            return np
        np = sys.modules.get("numpy")
        if np is None and not state["numpy_checked"]:
            state["numpy_checked"] = True
            try:
                import numpy as np  # noqa: F401
            except Exception:
                np = None
                warnings.append(
                    "numpy not importable in %s: inputs not captured" % sys.executable
                )
        state["np"] = np
        return np

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
            rec["truncated"] = True
            state["truncated"] = True
            return None
        state["bytes"] += arr.nbytes
        return arr

    def safe(name):
        s = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return s or "function"

    def write_manifest():
        if os.getpid() != main_pid:
            return
        doc = {
            "schema": "port-capture/2",
            "python": sys.executable,
            "captures": captures,
            "warnings": warnings,
            "bytes_written": state["bytes"],
            "truncated": state["truncated"],
            "hook_stopped": state["stopped"],
            "hook_s": state["hook_s"],
        }
        tmp = os.path.join(out_dir, "manifest.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
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

    # Generators, coroutines, async generators: their "returns" are yields.
    NOT_FUNCTION = 0x20 | 0x80 | 0x100 | 0x200

    def is_candidate_code(code):
        name = getattr(code, "co_qualname", code.co_name)
        if name.rsplit(".", 1)[-1].startswith("<"):
            return False
        return not (code.co_flags & NOT_FUNCTION)

    def code_key(code):
        return (realpath(code.co_filename), code.co_firstlineno, getattr(code, "co_qualname", code.co_name))

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
                expected.add((path, c.co_firstlineno, getattr(c, "co_qualname", c.co_name)))

    class Target:
        __slots__ = ("key", "attempts", "busy", "rec", "last_raised")

        def __init__(self, key):
            self.key = key
            self.attempts = 0
            self.busy = False
            self.rec = None
            self.last_raised = None

    def classify(code):
        """A Target for a function of the app's own files, else SKIP."""
        if not is_app_file(code.co_filename) or not is_candidate_code(code):
            return SKIP
        key = code_key(code)
        codes_seen[0] = True
        if clock[0] is None:
            # The budget counts from the first call of an app function.
            clock[0] = time.perf_counter()
            arm_timer()
        if key[0] not in files_seen:
            expect_file(key[0])
        expected.add(key)
        if key in done:
            return SKIP
        if len(captures) >= max_functions:
            if state["stopped"] is None:
                warnings.append(
                    "capture stopped at %d functions: later functions have no captured inputs"
                    % max_functions
                )
            stop("functions")
            return SKIP
        return Target(key)

    def begin(target, code, values):
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
            "outputs_npz": None,
            "skipped": [],
            "truncated": False,
            "returned": False,
        }
        stem = "%s-%d" % (safe(rec["function"]), len(captures))
        arrays = {}
        for n in names:
            arr = saveable(n, values.get(n), np, rec, "input")
            if arr is not None:
                arrays[n] = arr
        if arrays:
            path = os.path.join(out_dir, stem + ".inputs.npz")
            np.savez(path, **arrays)
            rec["inputs_npz"] = path
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
        write_manifest()
        return rec, dict((n, values.get(n)) for n in names), np

    def remove_npz(rec):
        for k in ("inputs_npz", "outputs_npz"):
            p = rec.get(k)
            if p:
                try:
                    os.remove(p)
                except OSError:
                    pass

    def key_name(code):
        return getattr(code, "co_qualname", code.co_name)

    def finish(target, rec, values, np, result, raised):
        target.busy = False
        rec["skipped"].remove("the call had not returned when the program ended")
        if raised:
            rec["skipped"].append("every captured call raised an exception; outputs not saved")
            if target.attempts >= MAX_ATTEMPTS:
                complete(target)
            write_manifest()
            return
        rec["returned"] = True
        rec["returns"] = describe(result, np)
        arrays = {}
        for n, v in values.items():
            if np is not None and isinstance(v, np.ndarray):
                arr = saveable(n, v, np, rec, "output")
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
            arr = saveable(name, r, np, rec, "output")
            if arr is not None:
                arrays[name] = arr
        if arrays:
            path = os.path.join(out_dir, rec["stem"] + ".outputs.npz")
            np.savez(path, **arrays)
            rec["outputs_npz"] = path
        complete(target)
        write_manifest()

    def complete(target):
        done.add(target.key)
        if expected <= done:
            stop("all captured")

    def stop(why):
        if state["stopped"] is None:
            state["stopped"] = why
            state["hook_s"] = round(time.perf_counter() - started, 3)
            disarm_timer()
            uninstall()
            # Calls still running keep their types and inputs; the hook does
            # not stay on for their return.
            for target, rec, values, np in active.values():
                note = "the call had not returned when the program ended"
                if note in rec["skipped"] and why != "program ended":
                    rec["skipped"].remove(note)
                    rec["skipped"].append(
                        "the capture hook stopped (%s) before the call returned; outputs not saved" % why
                    )
            active.clear()
            write_manifest()

    # --- the hooks -------------------------------------------------------

    codes = {}
    codes_seen = [False]
    active = {}  # frame -> (target, rec, values, np) for calls being captured
    count = [0]
    next_check = [4096]

    # The budget counts from the first call of an app function: the imports
    # before it are not the app's work.
    clock = [None]

    def over_budget():
        if clock[0] is None:
            if not codes_seen[0]:
                count[0] = 0
                return None
            clock[0] = time.perf_counter()
            arm_timer()
        if time.perf_counter() - clock[0] >= budget_s:
            return "budget of %g s" % budget_s
        if count[0] >= budget_events:
            return "budget of %d events" % budget_events
        return None

    # Before 3.12 the hook is a trace function, and while one is set CPython
    # runs every Python frame on its slow, unspecialised path, whether or
    # not calls happen: an app that spends its time in one long loop or in
    # NumPy makes few call events, and the budget, checked on events, would
    # never end it. So a timer backs the budget up: SIGALRM, whose handler
    # runs in the main thread between bytecodes and stops the hook there,
    # WALL_BUDGETS budgets after the first app call (set-up code before the
    # hot functions gets that long). An app with its own SIGALRM handler
    # keeps it; the event budget still ends the hook then.
    WALL_BUDGETS = 4
    alarm = {"previous": None, "armed": False}

    def on_alarm(signum, frame):
        import signal

        if alarm["armed"]:
            alarm["armed"] = False
            signal.signal(signal.SIGALRM, alarm["previous"] or signal.SIG_DFL)
        if state["stopped"] is None:
            stop("time limit of %g s" % (WALL_BUDGETS * budget_s))

    def arm_timer():
        if sys.version_info >= (3, 12) or alarm["armed"]:
            return
        try:
            import signal
            import threading

            if threading.current_thread() is not threading.main_thread():
                return
            if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
                return  # the app's own alarm: leave it alone
            if signal.getitimer(signal.ITIMER_REAL)[0] > 0:
                return
            alarm["previous"] = signal.signal(signal.SIGALRM, on_alarm)
            alarm["armed"] = True
            signal.setitimer(signal.ITIMER_REAL, WALL_BUDGETS * budget_s)
        except (ImportError, AttributeError, OSError, ValueError):
            pass

    def disarm_timer():
        if not alarm["armed"]:
            return
        try:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, alarm["previous"] or signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        alarm["armed"] = False

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
            warnings.append("%s: saving outputs failed: %s" % (rec["function"], e))
        if target.key in done:
            codes[frame.f_code] = SKIP

    def lookup(code):
        t = codes.get(code)
        if t is None:
            t = codes[code] = classify(code)
        return t

    if sys.version_info >= (3, 12):
        mon = sys.monitoring
        E = mon.events
        tool = None
        for tid in (mon.PROFILER_ID, 3, 4):
            if mon.get_tool(tid) is None:
                tool = tid
                break

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
            if tool is None or mon.get_tool(tool) != "port-capture":
                return
            for frame in active:
                mon.set_local_events(tool, frame.f_code, 0)
            mon.set_events(tool, 0)
            mon.free_tool_id(tool)

    else:
        import dis
        import threading

        RETURN_VALUE = dis.opmap["RETURN_VALUE"]

        # sys.settrace, not sys.setprofile: the global trace function runs
        # for Python calls only (a call into NumPy or any C function costs
        # nothing), so the budget is spent on the app's own calls. A frame
        # being captured gets a local trace function for its return, with
        # line events off.
        def local(frame, event, arg):
            if event == "return" and active and frame in active:
                # A frame left by an exception did not end on a return.
                code = frame.f_code
                raised = code.co_code[frame.f_lasti] != RETURN_VALUE
                end_call(frame, arg, raised)
            return local

        def hook(frame, event, arg):
            if event != "call":
                return None
            count[0] += 1
            if count[0] >= next_check[0]:
                next_check[0] = count[0] + 4096
                if state["stopped"] is None:
                    why = over_budget()
                    if why:
                        stop(why)
            if state["stopped"] is not None:
                sys.settrace(None)
                return None
            code = frame.f_code
            t = codes.get(code)
            if t is None:
                t = codes[code] = classify(code)
            if t is SKIP or t.busy:
                return None
            start_call(frame, code, t)
            if frame not in active:
                return None
            frame.f_trace_lines = False
            return local

        def install():
            threading.settrace(hook)
            sys.settrace(hook)

        def uninstall():
            # Each other thread drops the hook at its next call (see above).
            threading.settrace(None)
            sys.settrace(None)

    os.makedirs(out_dir, exist_ok=True)
    # An app that imports NumPy would do it under the hook: done here first,
    # the hook does not see (and pay for) the calls of the import.
    try:
        with open(app, "rb") as f:
            if b"numpy" in f.read():
                numpy()
    except OSError:
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
        write_manifest()

    atexit.register(at_exit)

    def start_hook():
        if state["stopped"] is None:
            install()

    return start_hook


def _port_main():
    import importlib.machinery
    import os
    import sys

    app = sys.argv[1]
    start_hook = _port_capture()
    with open(app, "rb") as f:
        source = f.read()
    try:
        code = compile(source, app, "exec", dont_inherit=True)
    except SyntaxError as e:
        # As `python APP` reports it: no traceback, exit status 1.
        sys.excepthook(type(e), e.with_traceback(None), None)
        sys.exit(1)
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(app)
    g = globals()
    for name in ("_port_capture", "_port_main"):
        g.pop(name, None)
    g["__file__"] = app
    g["__cached__"] = None
    g["__loader__"] = importlib.machinery.SourceFileLoader("__main__", app)
    start_hook()
    return code


try:
    exec(_port_main())
except SystemExit:
    raise
except BaseException as _port_e:
    # The traceback as `python APP` prints it: without this bootstrap's line.
    import sys as _port_sys

    _port_tb = _port_e.__traceback__.tb_next
    _port_sys.excepthook(type(_port_e), _port_e.with_traceback(_port_tb), _port_tb)
    if isinstance(_port_e, KeyboardInterrupt):
        import atexit as _port_atexit
        import os as _port_os
        import signal as _port_signal

        _port_atexit._run_exitfuncs()
        _port_signal.signal(_port_signal.SIGINT, _port_signal.SIG_DFL)
        _port_os.kill(_port_os.getpid(), _port_signal.SIGINT)
    raise SystemExit(1)
