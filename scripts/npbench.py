"""Runs `port migrate` on every NPBench kernel (spcl/npbench), on the
inputs NPBench's own `initialize()` makes at a preset, with no signature:
the inputs give the types. Prints one line per kernel and a summary, and
for each kernel what `port analyze --static` said of it beforehand (no
capture, no inputs): the static verdict agrees with migrate when it is
`cuda` exactly where migrate does not refuse.

    python scripts/npbench.py NPBENCH_CHECKOUT PORT WORKDIR [--preset S] [--only a,b]
        [--signature | --generated]

`--generated` gives port the signature alone (the inputs' dtypes and
ranks): it generates the inputs itself, as for a user with no capture.

NPBench is code nobody here wrote: its figures say what port does on real
array programs. Each kernel runs in WORKDIR/<name>/ (inputs.npz, the copy
of the kernel's file, .port/, migrate.json); nothing is written elsewhere.
"""
import argparse
import ast
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, str(path))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def numba_type(v):
    """The Numba type of one input, as --signature writes it."""
    v = np.asarray(v)
    name = "boolean" if v.dtype == np.bool_ else v.dtype.name
    return name if v.ndim == 0 else name + "[" + ", ".join([":"] * v.ndim) + "]"


def launches_per_call(j):
    """Kernel launches and library calls per call of the function, from
    the migration's `launches` (each with its `count`)."""
    n = 0
    for launch in j.get("launches") or []:
        c = launch.get("count")
        n += c if isinstance(c, int) else 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("npbench")
    ap.add_argument("port")
    ap.add_argument("work")
    ap.add_argument("--preset", default="S")
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--signature", action="store_true",
                    help="also pass --signature, written from the inputs' dtypes and ranks")
    ap.add_argument("--generated", action="store_true",
                    help="pass --signature only: port generates the inputs")
    a = ap.parse_args()
    root, work = Path(a.npbench), Path(a.work)
    only = set(filter(None, a.only.split(",")))
    rows = []
    verdicts = []  # (kernel, static verdict, agrees with migrate)
    for info in sorted((root / "bench_info").glob("*.json")):
        b = json.loads(info.read_text())["benchmark"]
        name = b["short_name"]
        if only and name not in only:
            continue
        d = root / "npbench" / "benchmarks" / b["relative_path"]
        src = d / (b["module_name"] + "_numpy.py")
        if not src.exists():
            continue
        w = work / name
        shutil.rmtree(w, ignore_errors=True)
        w.mkdir(parents=True)
        shutil.copy(src, w / src.name)
        params = b["parameters"][a.preset]
        try:
            env = dict(params)
            if "init" in b:
                init = getattr(load(d / (b["module_name"] + ".py"), "init_" + name), b["init"]["func_name"])
                made = init(*[params[p] for p in b["init"]["input_args"]])
                outs = b["init"]["output_args"]
                if len(outs) == 1:
                    made = (made,)
                env.update(zip(outs, made))
            # else the kernel takes the preset's numbers themselves (mandelbrot)
            # Named by the function's own parameters, which NPBench lists
            # in order (sometimes under other names: `XN` for `xn`).
            tree = ast.parse(src.read_text())
            fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == b["func_name"])
            names = [x.arg for x in fn.args.args]
            args = {names[k]: env[v] for k, v in enumerate(b["input_args"])}
            np.savez(w / "inputs.npz", **args)
            sig = ", ".join(numba_type(v) for v in args.values())
        except Exception as e:  # NPBench's own initialize failed here
            rows.append((name, "no inputs", 0, 0.0, (str(e).splitlines() or [type(e).__name__])[0][:100]))
            print("%-24s %-12s launches %-6s %6.1f s  %s" % rows[-1], flush=True)
            verdicts.append((name, "?", None))
            continue
        # The static verdict first, in a folder of its own (its .port/ is
        # not migrate's).
        static = w / "static"
        static.mkdir()
        verdict = "?"
        try:
            q = subprocess.run([a.port, "analyze", "--static", "--json", str(w / src.name)],
                               cwd=static, capture_output=True, text=True, timeout=a.timeout)
            fs = [f for f in json.loads(q.stdout)["functions"] if f["qualname"] == b["func_name"]]
            verdict = fs[0]["verdict"] if fs else "?"
        except (subprocess.TimeoutExpired, json.JSONDecodeError, KeyError):
            pass
        t = time.time()
        try:
            p = subprocess.run(
                [a.port, "migrate", "--function", b["func_name"], src.name, "--json",
                 "--python", sys.executable]
                + ([] if a.generated else ["--inputs", "inputs.npz"])
                + (["--signature", sig] if a.signature or a.generated else []),
                cwd=w, capture_output=True, text=True, timeout=a.timeout)
            (w / "migrate.json").write_text(p.stdout)
            j = json.loads(p.stdout)
            status = j.get("status", "failed")
            why = (j.get("reasons") or [{}])[0].get("message", j.get("reason", ""))
            rows.append((name, status, launches_per_call(j), time.time() - t, why[:100]))
        except subprocess.TimeoutExpired:
            rows.append((name, "timeout", 0, time.time() - t, ""))
        except json.JSONDecodeError:
            rows.append((name, "failed", 0, time.time() - t, p.stderr.strip().splitlines()[-1][:100] if p.stderr.strip() else ""))
        r = rows[-1]
        agree = (verdict == "cuda") == (r[1] != "refused")
        verdicts.append((name, verdict, agree))
        print("%-24s %-12s launches %-6s %6.1f s  static %-8s %s  %s"
              % (r[:4] + (verdict, "agrees" if agree else "DISAGREES", r[4])), flush=True)
    # The simulator as a reference: its one run of the plan against the
    # original's median CPython call, on the same inputs, in this run.
    ratios = []
    for r in rows:
        try:
            t = json.loads((work / r[0] / "migrate.json").read_text()).get("timing") or {}
        except (OSError, json.JSONDecodeError):
            continue
        if t.get("simulator_s") and t.get("cpython_s"):
            ratios.append(t["simulator_s"] / t["cpython_s"])
    if ratios:
        ratios.sort()
        print("simulator / CPython time on %d kernels: median %.2fx (quartiles %.2fx, %.2fx; target: median <= 1)"
              % (len(ratios), ratios[len(ratios) // 2], ratios[len(ratios) // 4], ratios[3 * len(ratios) // 4]))
    counts = {}
    for r in rows:
        counts[r[1]] = counts.get(r[1], 0) + 1
    print("kernels %d: %s" % (len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    judged = [v for v in verdicts if v[2] is not None]
    print("static verdict agrees with migrate on %d of %d kernels with inputs; disagrees on: %s"
          % (sum(1 for v in judged if v[2]), len(judged),
             ", ".join("%s (%s)" % (v[0], v[1]) for v in judged if not v[2]) or "none"))


if __name__ == "__main__":
    main()
