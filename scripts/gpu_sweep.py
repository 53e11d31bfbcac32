"""Every array program of fixtures/migrate/ through `port migrate` on one
backend: its status, and port's times against the original as written
(NumPy, on the CPU), from the same run.

For each fixture file (default: fixtures/migrate/programs*.py), in a
scratch copy of the folder:

1. `port analyze --static FILE --json` lists the functions port can plan,
   with the argument types it read from how each body uses them (the
   `migration_plan` of every `cuda` function): the signature a user who
   gives none gets. Where tests/migrate_fixtures.rs verifies a function
   with a signature of its own (a 3-D image where use alone says 1-D), that
   one is taken, and so are the functions it verifies that the static pass
   does not plan (`signature_from` says which);
2. `port migrate --function F FILE --signature SIG --backend B --size N
   --repeats R --json` verifies each of them on generated inputs and, on a
   GPU, times port's kernels (CUDA events, data on the device), the whole
   wrapper (copies in and out, allocations, launches) and the original
   called once per repeat as the program calls it.

3. with --cupy (on a GPU), the alternative a user has without port: the
   same function with `import cupy as np` (the module's `np` rebound to
   CuPy), on the inputs port verified with (`--save-inputs`), checked
   against the NumPy original's results and timed here: one warm-up call
   (CuPy compiles its kernels), then the median of --repeats calls with the
   inputs already on the device and the device synchronised before the
   clock stops, arguments the function changes copied fresh outside the
   clock. A function CuPy cannot run as written (a Python loop over
   elements, a NumPy-only call) is reported with CuPy's error.

port's figures are port's own: port times the original in its own
CPython process. A case that runs past --case-timeout is reported as such;
cases that would start after --budget seconds are reported as not run.

    gpu_sweep.py --port BIN [--backend gpu|simulator] [--size N] [--cupy]
                 [--repeats N] [--case-timeout S] [--budget S]
                 [--only f,g] [--files a.py,b.py] [--json-out FILE]

Exit: 0 every case ran and verified, 1 any did not, 2 bad usage.
"""
import argparse
import inspect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import TimeLimit, load, print_table, time_limit

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "migrate"
SCHEMA = "port.gpu-sweep/1"


def fmt_time(seconds):
    """"2.38 ms" (µs, ms or s), "—" for None."""
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            break
    return "%.3g %s" % (seconds / scale, unit)


def fmt_ratio(x):
    return "—" if x is None else "%.3gx" % x


def ratio(a, b):
    return a / b if a and b else None


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "no output"


def planned_functions(port, workdir, file, timeout):
    """(qualname, signature) of every function `port analyze --static`
    plans in `file`, or raises RuntimeError with the reason."""
    r = subprocess.run([port, "analyze", "--static", file, "--json"], cwd=workdir,
                       capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, NO_COLOR="1"))
    try:
        analysis = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise RuntimeError("port analyze exited %d: %s" % (r.returncode, last_line(r.stderr))) from None
    found = []
    for f in analysis.get("functions", []):
        plan = f.get("migration_plan") or {}
        if f.get("verdict") == "cuda" and plan.get("status") == "planned":
            found.append((f["qualname"].split(".", 1)[-1], plan["signature"], f.get("line")))
    return found


def test_signatures(path):
    """{(file, function): signature} of the verified fixtures in
    tests/migrate_fixtures.rs: its `program! { name: "sig", ... }` lists
    (programs.py), `program_in! { "migrate/F.py"; ... }` and
    `helper_program! { name: "sig", extra...; ... }` (programs_helpers.py).
    Empty when the file is not there."""
    try:
        text = Path(path).read_text()
    except OSError:
        return {}
    found = {}
    for macro, body in re.findall(r"\b(program|program_in|helper_program)!\s*\{(.*?)\n\s*\}", text, re.S):
        file = {"program": "programs.py", "helper_program": "programs_helpers.py"}.get(macro)
        named = re.match(r'\s*"migrate/([\w.]+)";', body)
        if named:
            file, body = named.group(1), body[named.end():]
        if file is None:
            continue
        for name, sig in re.findall(r'(\w+):\s*"([^"]+)"', body):
            found[(file, name)] = sig
    return found


def migrate(port, workdir, file, function, signature, args, save_inputs=None):
    """One `port migrate --json`: the fields the sweep reports."""
    command = [port, "migrate", "--function", function, file, "--signature", signature,
               "--backend", args.backend, "--repeats", str(args.repeats), "--json",
               "--python", args.python]
    if save_inputs:
        command += ["--save-inputs", str(save_inputs)]
    if args.size:
        command += ["--size", str(args.size)]
    started = time.monotonic()
    try:
        r = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                           timeout=args.case_timeout, env=dict(os.environ, NO_COLOR="1"))
    except subprocess.TimeoutExpired:
        return {"status": "timed out", "reason": "past --case-timeout %g s" % args.case_timeout,
                "seconds": time.monotonic() - started}
    seconds = time.monotonic() - started
    try:
        j = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"status": "crashed", "reason": "exit %d: %s" % (r.returncode, last_line(r.stderr)),
                "seconds": seconds}
    t = j.get("timing") or {}
    v = j.get("verification") or {}
    reasons = j.get("reasons") or []
    reason = j.get("reason") or v.get("mismatch") or (
        "line %s: %s" % (reasons[-1].get("line"), reasons[-1].get("message")) if reasons else None)
    return {
        "status": j.get("status"),
        "reason": reason,
        "exit_code": r.returncode,
        "seconds": seconds,
        "device": (j.get("device") or {}).get("name"),
        "kernels": len(j.get("kernels") or []),
        "launches": sum(l.get("count", 0) for l in (j.get("launches") or [])),
        # What a call costs on any GPU at least (port's projection): launches,
        # library calls, bytes each way, and the floor in seconds.
        "floor": (j.get("projection") or {}).get("floor"),
        "kernel_s": t.get("kernel_s"),
        "end_to_end_s": t.get("end_to_end_s"),
        "original_s": t.get("cpython_s"),
        "compile_s": t.get("compile_s"),
        "max_rel_err": v.get("max_rel_err"),
        "inputs": v.get("inputs"),
        "host_calls": j.get("host_calls"),
    }


def floor_text(f):
    """`12 launches, 1 library call, 16.8 MB: 280 µs`, or — without one."""
    if not f:
        return "—"
    calls = ", %d library call%s" % (f["library_calls"], "" if f["library_calls"] == 1 else "s") \
        if f.get("library_calls") else ""
    moved = f["bytes_to_device"] + f["bytes_to_host"]
    size = "%.1f MB" % (moved / 1e6) if moved >= 100_000 else "%.1f kB" % (moved / 1e3)
    return "%d launch%s%s, %s: %s" % (f["launches"], "" if f["launches"] == 1 else "es", calls, size,
                                     fmt_time(f["seconds"]))


# CuPy as a drop-in: `import cupy as np`.


def leaves(x):
    """The arrays and numbers of a result, depth first through tuples."""
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in leaves(v)]
    return [x]


def signature_constants(signature):
    """The entries of a --signature that are constants (`None`, a quoted
    string), by position: {index: value}."""
    import ast
    entries, depth, quote, cur = [], 0, None, ""
    for ch in signature or "":
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            entries.append(cur.strip())
            cur = ""
        else:
            cur += ch
    entries.append(cur.strip())
    return {k: ast.literal_eval(e) for k, e in enumerate(entries)
            if e == "None" or (len(e) >= 2 and e[0] == e[-1] and e[0] in "'\"")}


def cupy_case(cp, np, path, function, npz, repeats, limit, signature=None):
    """The function of `path` with its `np` rebound to CuPy, on the inputs in
    `npz` (and the constants the signature gives): checked against the
    NumPy original, then timed (see the module doc). A dict: `cupy_s`; or
    `cupy_error` (with `cupy_past_s` when CuPy ran past `limit` seconds: a
    Python loop over CuPy arrays pays a device round trip per element); or
    `cupy_not_run` when the function as written does not take whole
    arrays (a scalar function port makes a ufunc of)."""
    data = np.load(npz, allow_pickle=False)
    module = load(path, "_sweep_numpy")
    f = getattr(module, function)
    params = list(inspect.signature(f).parameters)
    constants = signature_constants(signature)
    host = []
    for k, n in enumerate(params):
        if k in constants:
            host.append(constants[k])
        elif n in data.files:
            host.append(data[n] if data[n].ndim else data[n].item())
        else:
            break  # left to its default, as port planned it
    fresh = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in host]
    expected_args = fresh()
    try:
        expected = f(*expected_args)
    except Exception as e:  # a scalar function: NumPy cannot run it on arrays either
        return {"cupy_not_run": "the function as written does not take whole arrays (%s)" % type(e).__name__}
    on_cupy = load(path, "_sweep_cupy")
    on_cupy.np = cp
    g = getattr(on_cupy, function)
    device = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
    fresh_device = lambda: [a.copy() if isinstance(a, cp.ndarray) else a for a in device]
    try:
        with time_limit(limit):
            args = fresh_device()
            got = g(*args)  # the warm-up call: CuPy compiles its kernels
            cp.cuda.Device().synchronize()
            pairs = list(zip(leaves(expected), leaves(got)))
            pairs += [(e, a) for e, a in zip(expected_args, args) if isinstance(e, np.ndarray)]
            for e, a in pairs:
                if e is None and a is None:  # a function that returns nothing
                    continue
                a = cp.asnumpy(a) if isinstance(a, cp.ndarray) else np.asarray(a)
                e = np.asarray(e)
                if e.shape != a.shape or not np.allclose(a, e, rtol=1e-4 if e.dtype in (np.float32, np.complex64) else 1e-6,
                                                         atol=1e-6, equal_nan=True):
                    return {"cupy_error": "CuPy's results differ from NumPy's"}
            times = []
            for _ in range(repeats):
                args = fresh_device()
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                g(*args)
                cp.cuda.Device().synchronize()
                times.append(time.perf_counter() - t)
            # End to end, as port's wrapper is timed: NumPy arrays in, the
            # results and the changed arguments back in NumPy arrays.
            whole = []
            for _ in range(repeats):
                args = fresh()
                t = time.perf_counter()
                on_device = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
                out = g(*on_device)
                [cp.asnumpy(v) for v in leaves(out) + on_device if isinstance(v, cp.ndarray)]
                whole.append(time.perf_counter() - t)
        return {"cupy_s": statistics.median(times), "cupy_end_to_end_s": statistics.median(whole)}
    except TimeLimit:
        return {"cupy_error": "past %g s" % limit, "cupy_past_s": limit}
    except Exception as e:  # CuPy cannot run it as written
        return {"cupy_error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:160] if str(e) else "")}
    finally:
        cp.get_default_memory_pool().free_all_blocks()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", required=True, help="the port binary")
    p.add_argument("--backend", default="gpu", choices=("gpu", "simulator", "auto"))
    p.add_argument("--size", type=int, default=1 << 20,
                   help="loop iterations the generated inputs give (port migrate --size); default 1048576")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--case-timeout", type=float, default=60.0)
    p.add_argument("--budget", type=float, default=float("inf"), help="seconds for the whole sweep")
    p.add_argument("--files", help="fixture files, comma-separated (default: programs*.py)")
    p.add_argument("--only", help="function names, comma-separated")
    p.add_argument("--python", default=sys.executable, help="the Python that runs the originals")
    p.add_argument("--signatures", default=str(REPO / "tests" / "migrate_fixtures.rs"),
                   help="the test file whose signatures win over the static pass's (default: the repo's)")
    p.add_argument("--cupy", action="store_true",
                   help="also time the function as written with `import cupy as np` (needs CuPy and a GPU)")
    p.add_argument("--cupy-timeout", type=float, default=20.0, help="seconds for one function on CuPy")
    p.add_argument("--cupy-budget", type=float, default=float("inf"),
                   help="seconds for all of CuPy's runs; later functions get no CuPy figure")
    p.add_argument("--json-out", help="write the results as JSON here")
    args = p.parse_args()
    # The migrations run in a folder of their own: paths given relative to
    # this one must still name the same files there.
    for attr in ("port", "python"):
        value = getattr(args, attr)
        if os.sep in value:
            setattr(args, attr, os.path.abspath(value))
    cp = None
    if args.cupy:
        try:
            import cupy as cp
            import numpy
            cp.cuda.runtime.getDeviceCount()
        except Exception as e:
            p.error("--cupy: CuPy does not run here: %s" % e)
    if args.repeats < 10:
        p.error("--repeats must be at least 10 (port migrate refuses fewer)")
    files = args.files.split(",") if args.files else sorted(f.name for f in FIXTURES.glob("programs*.py"))
    only = set(args.only.split(",")) if args.only else None
    for f in files:
        if not (FIXTURES / f).is_file():
            p.error("no fixture %s in %s" % (f, FIXTURES))

    start = time.monotonic()
    cupy_spent = 0.0
    results = []
    with tempfile.TemporaryDirectory(prefix="port-sweep.") as tmp:
        work = Path(tmp) / "migrate"
        shutil.copytree(FIXTURES, work, ignore=shutil.ignore_patterns("__pycache__"))
        cases = []
        tested = test_signatures(args.signatures) if args.signatures else {}
        for f in files:
            try:
                planned = planned_functions(args.port, work, f, args.case_timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                results.append({"file": f, "function": "*", "status": "failed", "reason": str(e)})
                planned = []
            seen = set()
            for function, signature, line in planned:
                seen.add(function)
                if (f, function) in tested:
                    cases.append((f, function, tested[(f, function)], line, "test suite"))
                else:
                    cases.append((f, function, signature, line, "assumed"))
            cases += [(f, fn, sig, None, "test suite") for (ff, fn), sig in sorted(tested.items())
                      if ff == f and fn not in seen]
        if only is not None:
            cases = [c for c in cases if c[1] in only]
        print("gpu-sweep: %d functions planned in %d files; backend %s, --size %d"
              % (len(cases), len(files), args.backend, args.size), file=sys.stderr, flush=True)
        def save():
            # After every case: a sweep stopped from outside keeps what it measured.
            if args.json_out:
                tmp_out = args.json_out + ".tmp"
                Path(tmp_out).write_text(json.dumps({
                    "schema": SCHEMA, "backend": args.backend, "size": args.size,
                    "repeats": args.repeats, "seconds": time.monotonic() - start,
                    "device": next((r["device"] for r in results if r.get("device")), None),
                    "complete": len(results) >= len(cases), "results": results,
                }, indent=2) + "\n")
                os.replace(tmp_out, args.json_out)

        for i, (f, function, signature, line, signature_from) in enumerate(cases):
            base = {"file": f, "function": function, "line": line, "signature": signature,
                    "signature_from": signature_from}
            if time.monotonic() - start > args.budget:
                results.append(dict(base, status="not run", reason="past --budget"))
                continue
            npz = work / ("inputs-%d.npz" % i) if cp is not None else None
            r = migrate(args.port, work, f, function, signature, args, npz)
            if cp is not None and r["status"] == "verified" and npz.is_file():
                if cupy_spent < args.cupy_budget:
                    t = time.monotonic()
                    r.update(cupy_case(cp, numpy, work / f, function, npz, args.repeats,
                                       min(args.cupy_timeout, args.cupy_budget - cupy_spent),
                                       signature))
                    cupy_spent += time.monotonic() - t
                else:
                    r["cupy_skipped"] = "past --cupy-budget"
            results.append(dict(base, **r))
            save()
            print("gpu-sweep: [%d/%d] %s:%s %s; kernels %s, end-to-end %s, original %s%s%s" % (
                i + 1, len(cases), f, function, r["status"], fmt_time(r.get("kernel_s")),
                fmt_time(r.get("end_to_end_s")), fmt_time(r.get("original_s")),
                "; CuPy %s, end-to-end %s" % (fmt_time(r["cupy_s"]), fmt_time(r["cupy_end_to_end_s"]))
                if r.get("cupy_s") else "; CuPy: %s" % r["cupy_error"] if r.get("cupy_error") else "",
                "" if r["status"] == "verified" else " (%s)" % (r.get("reason") or "")[:160]),
                file=sys.stderr, flush=True)

    rows = []
    for r in results:
        rows.append([
            "%s:%s" % (r["file"].replace(".py", ""), r["function"]), r["status"],
            fmt_time(r.get("kernel_s")), fmt_time(r.get("end_to_end_s")), fmt_time(r.get("original_s")),
            fmt_ratio(ratio(r.get("original_s"), r.get("kernel_s"))),
            fmt_ratio(ratio(r.get("original_s"), r.get("end_to_end_s"))),
            floor_text(r.get("floor")),
        ] + ([fmt_time(r.get("cupy_s")) if r.get("cupy_s") else ("—" if "cupy_error" not in r else "n/a"),
              fmt_time(r.get("cupy_end_to_end_s")),
              fmt_ratio(ratio(r.get("cupy_end_to_end_s"), r.get("end_to_end_s")))] if cp is not None else []))
    print()
    print_table(["function", "status", "port kernels", "port end-to-end", "original (NumPy)",
                 "kernels vs original", "end-to-end vs original", "launches, library calls, MB moved: floor"]
                + (["CuPy on device", "CuPy end-to-end", "port vs CuPy end-to-end"] if cp is not None else []), rows)
    print()
    print("port kernels: the sum of its kernels' CUDA event times, data on the device, launch gaps and")
    print("host work between launches left out. End-to-end: NumPy arrays in, results out, host clock.")
    print("original: the function as written, called once per repeat on the CPU. CuPy on device: the")
    print("function with `import cupy as np`, data on the device, host clock with the device synchronised.")
    print("floor: what one call takes on any GPU at least (port's projection: 3 µs a launch or library call,")
    print("the bytes moved at 64 GB/s, the bytes the kernels take at 4.8 TB/s).")
    failed_cupy = [r for r in results if "cupy_error" in r]
    if failed_cupy:
        print()
        print("CuPy as a drop-in could not run (n/a above):")
        for r in failed_cupy:
            print("  %s:%s: %s" % (r["file"], r["function"], r["cupy_error"]))
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    speedups = [ratio(r.get("original_s"), r.get("end_to_end_s")) for r in results]
    speedups = [s for s in speedups if s]
    device = next((r["device"] for r in results if r.get("device")), None)
    print()
    print("gpu-sweep: %s on %s, %.0f s: %s" % (
        args.backend, device or "?", time.monotonic() - start,
        ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items()))))
    if speedups:
        print("gpu-sweep: end-to-end vs the original: median %s, %d of %d faster" % (
            fmt_ratio(statistics.median(speedups)), sum(s > 1 for s in speedups), len(speedups)))
    vs_cupy = [ratio(r.get("cupy_end_to_end_s"), r.get("end_to_end_s")) for r in results]
    vs_cupy = [s for s in vs_cupy if s]
    if vs_cupy:
        print("gpu-sweep: port end-to-end vs CuPy as a drop-in end-to-end: median %s, port faster on %d of %d" % (
            fmt_ratio(statistics.median(vs_cupy)), sum(s > 1 for s in vs_cupy), len(vs_cupy)))
    return 0 if counts and set(counts) == {"verified"} else 1


if __name__ == "__main__":
    sys.exit(main())
