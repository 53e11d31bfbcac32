#!/usr/bin/env python3
"""Persistent kernels against per-iteration launches, on one device.

A sequential host loop whose iterations are small runs inside one kernel
of one block (`persist`, rewriter/src/schedule/persist.rs) instead of
launching its body's kernels once per iteration. This script migrates
each case twice with `port migrate --backend gpu` on the same inputs:
once as planned and once with `PORT_PERSIST=0` (the pass off), and prints
for each the launches per call, port's kernel time (the sum of CUDA event
times of its kernels, launch gaps left out) and the whole call (NumPy
arrays in and out, host clock), each the median of port's timed repeats,
with the ratio per-iteration / persistent (> 1: the persistent kernel
wins).

    bench_persist.py --port BIN [--backend gpu|simulator] [--scale S]
                     [--only f,g] [--json-out F]

The cases are fixtures/migrate/programs.py's time loops at small widths
(each launch covers at most a few thousand elements) and many steps: the
shape of a loop the pass is for. `--scale S` makes each step S times
wider and the steps S times fewer, and raises the pass's bound
(`PORT_PERSIST_MAX_WORK`) as much, so that the persistent kernel runs
where the plan would launch per step: where the two cross is the bound
to choose. On the simulator the run proves the harness works; its times
mean nothing.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from gpu_sweep import fmt_time
from harness import print_table

REPO = Path(__file__).resolve().parent.parent

# (function, inputs at a width the pass takes, what it is)
CASES = [
    ("jacobi_1d", lambda rng, s: dict(A=rng.random(1024 * s), B=rng.random(1024 * s), tsteps=np.int64(2000 // s)),
     "1-D Jacobi, 1022 points, 2 kernels per step"),
    ("heat_1d", lambda rng, s: dict(u=rng.random(2048 * s), nt=np.int64(2000 // s), alpha=np.float64(0.1)),
     "explicit heat equation, 2046 points"),
    ("diffusion_1d", lambda rng, s: dict(u=rng.random(2048 * s), nt=np.int64(2000 // s), nu=np.float64(0.3),
                                         dt=np.float64(0.001), dx=np.float64(0.05)),
     "1-D diffusion with a copy per step, 2046 points"),
    ("column_march", lambda rng, s: dict(S=rng.random((256 * s, 2000 // s)) + 1.0,
                                         z=rng.standard_normal((256 * s, 2000 // s)) * 0.01,
                                         mu=np.float64(0.05), sigma=np.float64(0.2), dt=np.float64(0.001)),
     "256 paths, 2000 time steps, one column per step"),
    ("line_sweep", lambda rng, s: dict(u=rng.random((64, 512 * s)), nt=np.int64(max(1, 20 // s))),
     "Gauss-Seidel line sweep: 20 sweeps of 62 rows of 510"),
]


def run(port, python, backend, fixture, function, npz, persist, timeout, scale):
    env = dict(os.environ, NO_COLOR="1")
    if not persist:
        env["PORT_PERSIST"] = "0"
    elif scale > 1:
        env["PORT_PERSIST_MAX_WORK"] = str(2048 * scale)
    p = subprocess.run([port, "migrate", str(fixture), "--function", function, "--backend", backend,
                        "--inputs", str(npz), "--python", python, "--json"],
                       capture_output=True, text=True, env=env, timeout=timeout, cwd=fixture.parent)
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:200]}
    t = d.get("timing") or {}
    return {
        "status": d.get("status"),
        "launches": sum(l.get("count", 0) for l in d.get("launches") or []),
        "kernels": sorted({l["kernel"] for l in d.get("launches") or []}),
        "kernel_s": t.get("kernel_s"),
        "end_to_end_s": t.get("end_to_end_s"),
        "original_s": t.get("cpython_s"),
        "reason": None if d.get("status") == "verified" else "; ".join(map(str, d.get("reasons") or []))[:200],
    }


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", required=True)
    ap.add_argument("--backend", default="gpu", choices=("gpu", "simulator"))
    ap.add_argument("--only", help="comma-separated functions")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the originals (default: this one)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds for one migration")
    ap.add_argument("--scale", type=int, default=1,
                    help="steps S times wider and S times fewer, the bound raised as much (default 1)")
    ap.add_argument("--json-out")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    # The migrations run in a folder of their own: relative paths (a venv's
    # python, whose symbolic link must not be resolved) made absolute.
    port = os.path.abspath(args.port) if os.sep in args.port else (shutil.which(args.port) or args.port)
    python = os.path.abspath(args.python) if os.sep in args.python else args.python
    rng = np.random.default_rng(0)
    work = Path(tempfile.mkdtemp(prefix="port-persist."))
    fixture = work / "programs.py"
    shutil.copy(REPO / "fixtures" / "migrate" / "programs.py", fixture)
    rows, results = [], []
    try:
        for function, make, what in CASES:
            if only and function not in only:
                continue
            npz = work / (function + ".npz")
            np.savez(npz, **make(rng, args.scale))
            got = {}
            for persist in (True, False):
                try:
                    got[persist] = run(port, python, args.backend, fixture, function, npz, persist, args.timeout,
                                       args.scale)
                except subprocess.TimeoutExpired:
                    got[persist] = {"error": "past %g s" % args.timeout}
                print("bench-persist: %s %s: %s" % (function, "persistent" if persist else "per-iteration",
                                                   got[persist]), file=sys.stderr, flush=True)
            p, q = got[True], got[False]
            ratio = lambda key: (q[key] / p[key]) if p.get(key) and q.get(key) else None
            results.append({"function": function, "what": what, "persistent": p, "per_iteration": q,
                            "kernel_ratio": ratio("kernel_s"), "end_to_end_ratio": ratio("end_to_end_s")})
            rows.append([function, str(p.get("status") or p.get("error")), str(p.get("launches", "—")),
                         str(q.get("launches", "—")), fmt_time(p.get("kernel_s")), fmt_time(q.get("kernel_s")),
                         fmt_time(p.get("end_to_end_s")), fmt_time(q.get("end_to_end_s")),
                         "%.3gx" % ratio("end_to_end_s") if ratio("end_to_end_s") else "n/a",
                         fmt_time(p.get("original_s"))])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = ["function", "status", "launches persistent", "launches per-iteration", "kernels persistent",
            "kernels per-iteration", "e2e persistent", "e2e per-iteration", "per-iteration/persistent (e2e)",
            "original"]
    print_table(head, rows)
    if args.backend == "simulator":
        print("(simulator: the times are not measurements; this only shows the harness runs)")
    print("kernels: the sum of port's kernel event times (a persistent kernel is one launch); e2e: the whole call")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"schema": "port.bench-persist/1", "backend": args.backend, "scale": args.scale,
                                                   "results": results}, indent=2) + "\n")
    failed = [r for r in results if r["persistent"].get("status") != "verified"
              or r["per_iteration"].get("status") != "verified"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
