"""port's GPU kernels against numba-cuda, numba @njit and CPython: one GPU,
one run, the same inputs.

Run it through scripts/bench-gpu.sh, which checks for a GPU, builds port and
uses the oracle venv (numba + numba-cuda). For each case below, in a scratch
copy of its fixture:

1. inputs are generated (fixed seed) and saved as inputs.npz;
2. `port migrate --backend gpu --inputs inputs.npz --repeats N --write --json`
   times port's kernels on the GPU and rewrites the file into Numba-CUDA
   kernels plus a host wrapper of the same name;
3. the harness times, in this process: the emitted numba-cuda kernels (GPU
   time only) and the emitted wrapper (end to end), then the original under
   @njit on the CPU, then the CPython original;
4. on a GPU with CuPy installed, what a user could run instead of port: the
   original as written with `import cupy as np` (CuPy as a drop-in, timed
   as scripts/gpu_sweep.py does: checked against NumPy, one warm-up call,
   the median of device-synchronised calls on device data, and end to end
   from host arrays). Without a GPU or CuPy its column says why not run.

Timing rules (the Numba maintainers'):
- compilation is never timed: every JIT contender is called once to compile
  and once more to warm up before the timed calls;
- GPU kernel times are CUDA event times of data already on the device, the
  median of --repeats (at least 10) calls; numba-cuda's host-side launch
  work is kept out of them (see TimedKernel);
- end-to-end and CPU times are time.perf_counter medians, with the device
  synchronised before the clock stops; arguments the function mutates are
  copied fresh before every call, outside the timed region;
- the CPU contenders stop early once their calls have taken --cpu-budget
  seconds (a CPython triple loop over a 512² matrix takes half a minute),
  and the number of calls is reported. CPython is not warmed up (it has nothing to
  compile, and one call can take the whole budget); a CPython call still
  running when the budget ends is dropped, and if no call finished the
  figure is the budget: a lower bound, printed as "> ...".

Under NUMBA_ENABLE_CUDASIM=1 (bench-gpu.sh --simulate) port verifies on its
host simulator and numba-cuda runs on its CUDA simulator: the whole harness
runs, but nothing runs on a GPU, so every GPU figure is null / "n/a".
"""
import argparse
import contextlib
import dataclasses
import importlib.metadata
import inspect
import itertools
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

# print_table is also read from here by run-gpu.sh's summary.
from harness import TimeLimit, load, print_table, time_limit
from gpu_sweep import cupy_case

import numpy as np

# numba-cuda 0.2x registers an overload for np.row_stack when it compiles
# its first kernel; NumPy 2.5 removed that alias of np.vstack, so with both
# (as on the lent H200's image, 2026-11-27: numba-cuda's arrayobj.py raised
# AttributeError) no kernel compiles. Restore the alias before Numba looks.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

import numba  # noqa: E402  (after the alias above)
from numba import config, cuda  # noqa: E402
from numba.core import types as nbtypes

SIMULATED = bool(config.ENABLE_CUDASIM)
REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "migrate"
# Long enough to cover the host side of any numba-cuda launch (tens of µs).
HOLD_NS = 1_000_000
# Simulated figures are n/a: one call proves each timing loop runs.
SIMULATED_REPEATS = 1
PORT_MIN_REPEATS = 10  # port migrate refuses fewer
SEED = 2024


@dataclasses.dataclass(frozen=True)
class Case:
    """One function of fixtures/migrate/ to bench. Every input array holds
    `size // shrink` elements (2-D ones as a square)."""

    function: str
    file: str
    signature: str
    what: str
    shrink: int = 1


CASES = (
    Case("saxpy", "seeds.py", "float64, float64[:], float64[:], float64[:]", "memory-bound elementwise"),
    Case("vector_add", "seeds.py", "float32[::1], float32[::1], float32[::1]", "memory-bound elementwise, float32"),
    Case("polar_distance", "seeds.py", "float64[:], float64[:], float64[:], float64[:]",
         "elementwise with trigonometry (ufunc + device function)"),
    Case("variance", "general.py", "float64[:]", "two whole-array reductions"),
    Case("go_fast", "seeds.py", "float64[:, :]", "diagonal reduction, then 2-D elementwise", shrink=4),
    Case("stencil_2d", "kernels.py", "float64[:, :], float64[:, :]", "5-point stencil", shrink=4),
    # 512² at the default size: port times CPython too (at least 4 calls), and
    # one CPython call of this triple loop over 1024² takes minutes.
    Case("matmul", "kernels.py", "float64[:, :], float64[:, :], float64[:, :]",
         "compute-bound triple loop", shrink=64),
)


class CaseFailed(Exception):
    """A case that cannot be benched (port refused, a result differs, ...)."""


# Inputs and modules.


def numba_types(signature):
    """Numba types of a signature string such as "float64, float64[:]"."""
    return eval("(" + signature + ",)", dict(vars(nbtypes)))


def make_inputs(case, size, names):
    """Arguments for one call, by name, from a fixed seed: arrays uniform in
    [0.5, 1.5) (no division by values near zero), scalars 0.75. Every case
    here is floating point."""
    rng = np.random.default_rng(SEED)
    args = {}
    for name, t in zip(names, numba_types(case.signature)):
        if isinstance(t, nbtypes.Array):
            n = size // case.shrink
            shape = (n,) if t.ndim == 1 else (max(4, math.isqrt(n)),) * t.ndim
            args[name] = rng.uniform(0.5, 1.5, shape).astype(str(t.dtype))
        else:
            # As port passes scalars: bool, int64 and float64 as Python
            # numbers (weak in NumPy 2), any other dtype as a NumPy scalar;
            # the migrated wrapper runs the original on other kinds.
            v = np.dtype(str(t)).type(0.75)
            args[name] = v.item() if str(t) in ("float64", "int64", "bool", "boolean") else v
    return args


def njit_module(module):
    """@njit on every function the module defines, as a user decorating them
    would: calls between them then go to the compiled versions."""
    for name, value in list(vars(module).items()):
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            setattr(module, name, numba.njit(value))
    return module


def elementwise(function, plan, args, jit):
    """A scalar function applied over arrays, the way port's wrapper applies
    it: np.vectorize for CPython, numba.vectorize for the CPU JIT."""
    outputs = plan["ufunc_outputs"]
    if not jit:
        return np.vectorize(function, otypes=[np.dtype(t) for t in outputs])
    if len(outputs) != 1:
        raise CaseFailed("numba.vectorize takes one output, the function returns %d" % len(outputs))
    inputs = ", ".join(str(np.asarray(a).dtype) for a in args)
    return numba.vectorize(["%s(%s)" % (outputs[0], inputs)])(function.py_func)


def copies(args):
    """Fresh copies of the array arguments."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def outputs(function, args):
    """What a call leaves behind: its return value and every argument."""
    after = copies(args)
    return function(*after), after


def mutates(args, after):
    """Whether a call changed any of its array arguments."""
    return any(isinstance(a, np.ndarray) and not np.array_equal(a, b) for a, b in zip(args, after))


def check_same(expected, actual, f32):
    """The numba-cuda results are the original's (allclose), or CaseFailed."""
    rtol, atol = (1e-4, 1e-6) if f32 else (1e-5, 1e-8)
    (r1, args1), (r2, args2) = expected, actual
    pairs = [("return value", r1, r2)] + [("argument %d" % i, a, b) for i, (a, b) in enumerate(zip(args1, args2))]
    for what, e, a in pairs:
        if e is None and a is None:
            continue
        if not np.allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol, equal_nan=True):
            raise CaseFailed("the numba-cuda %s differs from the original's" % what)


# port.


def run_port(port, workdir, case, repeats):
    """`port migrate` on the copy in `workdir` with inputs.npz: its JSON,
    once the migration is verified (the file is then patched)."""
    command = [
        port, "migrate", "--function", case.function, case.file,
        "--signature", case.signature,
        "--backend", "simulator" if SIMULATED else "gpu",
        "--repeats", str(max(repeats, PORT_MIN_REPEATS)), "--inputs", "inputs.npz",
        "--write", "--json", "--python", sys.executable,
    ]
    r = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                       env=dict(os.environ, NO_COLOR="1"))
    try:
        result = json.loads(r.stdout)
    except json.JSONDecodeError:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise CaseFailed("port migrate exited %d: %s" % (r.returncode, tail)) from None
    if result.get("status") != "verified":
        raise CaseFailed("port migrate: %s" % result.get("status"))
    return result


def dig(d, *keys):
    """d[k1][k2]..., or None where a level is missing or null."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


# Timing.


def timed_calls(function, make_args, budget_s=math.inf, finish=lambda: None):
    """Yields the perf_counter seconds of successive calls `function(*make_args())`
    then `finish()` (make_args outside the clock), until they have taken
    `budget_s` in all."""
    spent = 0.0
    while spent < budget_s:
        args = make_args()
        start = time.perf_counter()
        function(*args)
        finish()
        seconds = time.perf_counter() - start
        spent += seconds
        yield seconds


def first(n, iterable):
    """The first n items, as a list."""
    return list(itertools.islice(iterable, n))


def cpu_result(times, budget_s):
    """A CPU contender's figure: the median of the calls that finished, or
    the budget when none did (a lower bound, `timed_out`)."""
    if not times:
        return {"s": budget_s, "calls": 0, "timed_out": True}
    return {"s": statistics.median(times), "calls": len(times), "timed_out": False}


def time_njit(function, make_args, repeats, budget_s):
    """@njit on the CPU, already compiled: one warm-up call, then timed calls."""
    function(*make_args())
    return cpu_result(first(repeats, timed_calls(function, make_args, budget_s)), budget_s)


def time_cpython(function, make_args, repeats, budget_s):
    """The CPython original, within the budget (see the module docstring):
    a call still running when the budget ends is dropped."""
    times = []
    with contextlib.suppress(TimeLimit), time_limit(budget_s):
        for seconds in itertools.islice(timed_calls(function, make_args, budget_s), repeats):
            times.append(seconds)
    return cpu_result(times, budget_s)


@cuda.jit
def _hold(ns):
    """Keeps the GPU busy for about `ns` nanoseconds."""
    for _ in range(ns // 1000):
        cuda.nanosleep(1000)


class TimedKernel:
    """Stands in for a @cuda.jit kernel of the patched module, so that the
    wrapper port wrote times its own launches with its own arguments (the
    alternative, rebuilding the device arrays, would re-implement the
    wrapper: its scratch arrays and the host steps between kernels).

    `kernel[grid, block](...)` is bracketed by two CUDA events on the
    default stream, the one the wrapper's transfers use, so the time between
    them is GPU time of data already on the device. Before the start event a
    hold kernel (about 1 ms of nanosleep) is queued: the start event then
    fires after numba-cuda's host-side launch work (argument marshalling,
    tens of µs) is done, so that work is not counted as kernel time. (A hold
    that waits for a host flag would be exact, but deadlocks if the launch
    path synchronises, as a deferred cuMemFree does.)"""

    def __init__(self, kernel, launches):
        self.kernel = kernel
        self.launches = launches

    def __getitem__(self, launch_config):
        launch = self.kernel[launch_config]

        def timed(*args):
            start, end = cuda.event(), cuda.event()
            if not SIMULATED:  # the simulator has no nanosleep, and no time
                _hold[1, 1](HOLD_NS)
            start.record()
            launch(*args)
            end.record()
            self.launches.append((start, end))

        return timed


def event_seconds(launches):
    """GPU seconds between the events of every launch of one call; None on
    the simulator, whose events record no time."""
    if SIMULATED:
        return None
    for _, end in launches:
        end.synchronize()
    return sum(cuda.event_elapsed_time(start, end) for start, end in launches) / 1e3


def time_numba_cuda(module, function, kernels, make_args, repeats):
    """The emitted numba-cuda code, its kernels already compiled: the median
    GPU time of its kernels per call (after one untimed warm-up call), and
    the median end-to-end time of the wrapper called with host arrays
    (allocation, transfers, kernels; synchronised)."""
    wrapper = getattr(module, function)
    launches = []
    saved = {name: getattr(module, name) for name in kernels}
    for name, kernel in saved.items():
        setattr(module, name, TimedKernel(kernel, launches))
    try:
        per_call = []
        for k in range(1 + repeats):
            launches.clear()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                wrapper(*make_args())
            # A call the wrapper hands to the original times the CPU.
            ran_original = [str(w.message) for w in caught if str(w.message).startswith("port:")]
            if k == 0 and ran_original:
                raise SystemExit("%s: the migrated function ran the original: %s" % (function, ran_original[0]))
            cuda.synchronize()
            per_call.append(event_seconds(launches))
    finally:
        for name, kernel in saved.items():
            setattr(module, name, kernel)
    launches_per_call = len(launches)
    end_to_end = first(repeats, timed_calls(wrapper, make_args, finish=cuda.synchronize))
    if SIMULATED:
        return {"kernel_s": None, "end_to_end_s": None, "calls": repeats, "launches": launches_per_call}
    return {
        "kernel_s": statistics.median(per_call[1:]),
        "end_to_end_s": statistics.median(end_to_end),
        "calls": repeats,
        "launches": launches_per_call,
    }


# One case.


def bench_case(case, opts):
    """Benchmarks one case; the JSON entry for it."""
    entry = {"function": case.function, "file": "fixtures/migrate/" + case.file,
             "signature": case.signature, "what": case.what}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        source = Path(tmp) / case.file
        shutil.copy(FIXTURES / case.file, source)
        original = load(source, "_bench_cpython_" + case.function)  # before port patches the file
        names = list(inspect.signature(getattr(original, case.function)).parameters)
        inputs = make_inputs(case, opts.size, names)
        np.savez(Path(tmp) / "inputs.npz", **inputs)
        args = list(inputs.values())
        entry["shape"] = list(max((np.shape(a) for a in args), key=math.prod))

        port = run_port(opts.port, tmp, case, opts.repeats)
        entry["port"] = {k: port.get(k) for k in ("device", "timing", "bandwidth", "projection")}
        plan = port["plan"]
        kernels = [k["name"] for k in port["kernels"]]
        njit = getattr(njit_module(load(str(source) + ".port-bak", "_bench_njit_" + case.function)), case.function)
        cpython = getattr(original, case.function)
        if plan["kind"] == "ufunc":
            njit, cpython = elementwise(njit, plan, args, True), elementwise(cpython, plan, args, False)
        patched = load(source, "_bench_cuda_" + case.function)

        reference = outputs(njit, args)  # compiles the @njit original
        fresh = mutates(args, reference[1])
        make_args = (lambda: copies(args)) if fresh else (lambda: args)
        f32 = any(np.asarray(a).dtype == np.float32 for a in args)
        # The first call of the numba-cuda wrapper compiles its kernels.
        check_same(reference, outputs(getattr(patched, case.function), args), f32)

        entry["arguments_copied_per_call"] = fresh
        entry["numba_cuda"] = time_numba_cuda(patched, case.function, kernels, make_args, opts.repeats)
        entry["njit"] = time_njit(njit, make_args, opts.repeats, opts.cpu_budget)
        entry["cpython"] = time_cpython(cpython, make_args, opts.repeats, opts.cpu_budget)
        entry["cupy"] = time_cupy(Path(str(source) + ".port-bak"), case, Path(tmp) / "inputs.npz", opts)
    entry["ratios"] = ratios(entry)
    entry["pct_of_peak"] = pct_of_peak(entry)
    return entry


def cupy_module():
    """CuPy, or why it does not run here (a string)."""
    if SIMULATED:
        return "not run: no GPU (simulated)"
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception as e:  # not installed, or no device it can use
        return "not run: CuPy unavailable (%s)" % (str(e).splitlines()[0][:80] if str(e) else type(e).__name__)


def cupy_version():
    """The installed CuPy's version (any of its CUDA builds), or None."""
    for dist in ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def time_cupy(original, case, npz, opts):
    """The original with `import cupy as np`: {"kernel_s", "end_to_end_s"}
    (the kernel figure is CuPy's device time of data already on it), or
    {"not_run": why} / {"error": why}."""
    cp = cupy_module()
    if isinstance(cp, str):
        return {"not_run": cp}
    got = cupy_case(cp, np, original, case.function, npz, opts.repeats, opts.cpu_budget, case.signature)
    if "cupy_not_run" in got:
        return {"not_run": "n/a: scalar function", "why": got["cupy_not_run"]}
    if "cupy_past_s" in got:  # a lower bound, as CPython's past its budget
        return {"past_s": got["cupy_past_s"]}
    if "cupy_error" in got:
        return {"error": got["cupy_error"]}
    return {"kernel_s": got["cupy_s"], "end_to_end_s": got["cupy_end_to_end_s"]}


def ratio(other_s, port_s):
    """How many times faster port is than the other contender (> 1: port
    wins); None when either time is missing."""
    if other_s is None or not port_s:
        return None
    return other_s / port_s


def ratios(entry):
    """Port against each contender: kernels against kernels, end to end
    against end to end, and port end to end against the CPU (which is what
    replacing the CPU function gives a user)."""
    port_kernel = dig(entry, "port", "timing", "kernel_s")
    port_e2e = dig(entry, "port", "timing", "end_to_end_s")
    return {
        "kernel_vs_numba_cuda": ratio(entry["numba_cuda"]["kernel_s"], port_kernel),
        "end_to_end_vs_numba_cuda": ratio(entry["numba_cuda"]["end_to_end_s"], port_e2e),
        "vs_njit": ratio(entry["njit"]["s"], port_e2e),
        "vs_cpython": ratio(entry["cpython"]["s"], port_e2e),
        "end_to_end_vs_cupy": ratio(entry.get("cupy", {}).get("end_to_end_s", entry.get("cupy", {}).get("past_s")),
                                    port_e2e),
    }


def pct_of_peak(entry):
    """Achieved DRAM bandwidth as % of peak for a memory-bound case, port's
    and numba-cuda's (the same bytes and peak, from port); None otherwise."""
    bandwidth = dig(entry, "port", "bandwidth")
    if not bandwidth or not bandwidth.get("memory_bound"):
        return None
    numba_s, peak = entry["numba_cuda"]["kernel_s"], bandwidth.get("peak_gb_s")
    numba_pct = 100 * bandwidth["bytes"] / numba_s / 1e9 / peak if numba_s and peak else None
    return {"port": bandwidth.get("pct_of_peak"), "numba_cuda": numba_pct}


# Reporting.


def sig3(x):
    """x to 3 significant figures, without an exponent ("0.0795", "2.38", "1234")."""
    if x == 0:
        return "0"
    return "%.*f" % (max(0, 2 - math.floor(math.log10(abs(x)))), x)


def fmt_time(seconds, lower_bound=False):
    """"2.38 ms" (µs, ms or s), "> ..." for a lower bound, "n/a" for None."""
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            break
    text = "%s %s" % (sig3(seconds / scale), unit)
    return "> " + text if lower_bound else text


def fmt_ratio(x, target=None, lower_bound=False):
    """"12.3x", "> 12.3x" for a lower bound, a trailing "*" below target."""
    if x is None:
        return "n/a"
    text = ("> " if lower_bound else "") + sig3(x) + "x"
    return text + (" *" if target is not None and x < target else "")


def fmt_pct(x):
    """"87%" with a "*" below the 80% target, "n/a" for None."""
    return "n/a" if x is None else "%.0f%%%s" % (x, " *" if x < 80 else "")


def fmt_cupy(cupy, key):
    """A CuPy figure, or in a few words why there is none."""
    if "not_run" in cupy:
        return "not run" if key == "end_to_end_s" else cupy["not_run"].removeprefix("not run: ")
    if "past_s" in cupy:
        return "> " + fmt_time(cupy["past_s"])
    if "error" in cupy:
        return "fails: " + cupy["error"][:40]
    return fmt_time(cupy[key])


def print_report(run):
    """The times and the ratios tables, and what they mean."""
    ok = [e for e in run["results"] if "error" not in e]
    print()
    if run["simulated"]:
        print("SIMULATED RUN: port verified on its host simulator and numba-cuda ran on its CUDA simulator")
        print("(NUMBA_ENABLE_CUDASIM=1). Nothing ran on a GPU: every GPU figure is n/a, and the CPU figures")
        print("are timings of toy inputs. These are not measurements; run without --simulate on a GPU.")
    else:
        print("GPU: %s (cc %s)   CPU: %s" % (run["device"]["name"], run["device"]["compute_capability"], run["cpu"]))
    print("size %d; timed calls per contender: %d, median reported (CPU ones: fewer once they take %g s)"
          % (run["size"], run["repeats"], run["cpu_budget_s"]))
    print()
    print("Median times (kernel = GPU time of data on the device; e2e = the function called with host arrays)")
    print_table(
        ["function", "shape", "port kernel", "numba-cuda kernel", "CuPy drop-in", "port e2e", "numba-cuda e2e",
         "CuPy e2e", "njit (1 core)", "CPython"],
        [[e["function"], "x".join(map(str, e["shape"])),
          fmt_time(dig(e, "port", "timing", "kernel_s")), fmt_time(e["numba_cuda"]["kernel_s"]),
          fmt_cupy(e.get("cupy", {"not_run": "not run"}), "kernel_s"),
          fmt_time(dig(e, "port", "timing", "end_to_end_s")), fmt_time(e["numba_cuda"]["end_to_end_s"]),
          fmt_cupy(e.get("cupy", {"not_run": "not run"}), "end_to_end_s"),
          fmt_time(e["njit"]["s"], e["njit"]["timed_out"]), fmt_time(e["cpython"]["s"], e["cpython"]["timed_out"])]
         for e in ok])
    print()
    print("port's speedup over each contender (their time / port's; * = below target)")
    print_table(
        ["function", "kernel vs numba-cuda (>= 1x)", "e2e vs numba-cuda", "e2e vs CuPy", "e2e vs njit", "e2e vs CPython",
         "% of peak BW port (>= 80%)", "% of peak BW numba-cuda"],
        [[e["function"], fmt_ratio(e["ratios"]["kernel_vs_numba_cuda"], 1.0),
          fmt_ratio(e["ratios"]["end_to_end_vs_numba_cuda"]), fmt_ratio(e["ratios"].get("end_to_end_vs_cupy"), lower_bound="past_s" in e.get("cupy", {})),
          fmt_ratio(e["ratios"]["vs_njit"]),
          fmt_ratio(e["ratios"]["vs_cpython"], lower_bound=e["cpython"]["timed_out"]),
          "-" if e["pct_of_peak"] is None else fmt_pct(e["pct_of_peak"]["port"]),
          "-" if e["pct_of_peak"] is None else fmt_pct(e["pct_of_peak"]["numba_cuda"])]
         for e in ok])
    print("(bandwidth: memory-bound kernels only, '-' otherwise; bytes and peak from port)")
    for e in run["results"]:
        if "error" in e:
            print("FAILED %s: %s" % (e["function"], e["error"]))
    mismatch = [e["function"] for e in ok if not run["simulated"]
                and dig(e, "port", "device", "name") not in (None, run["device"]["name"])]
    if mismatch:
        print("WARNING: port timed %s on another device than numba-cuda's %s" % (", ".join(mismatch), run["device"]["name"]))


def device_info():
    """The GPU numba-cuda runs on."""
    if SIMULATED:
        return {"name": "numba-cuda simulator", "compute_capability": None}
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    return {"name": name, "compute_capability": "%d.%d" % device.compute_capability}


def cpu_model():
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def parse_args(argv):
    """The command line (bench-gpu.sh passes its arguments through)."""
    p = argparse.ArgumentParser(prog="bench-gpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", required=True, help="the port binary")
    p.add_argument("--size", type=int, help="elements per 1-D input (default 2**24; 2-D inputs are"
                   " squares of size/4 elements, matmul's of size/64)")
    p.add_argument("--repeats", type=int, help="timed calls per contender (>= 10, default 20; 1 when simulated)")
    p.add_argument("--quick", action="store_true", help="toy sizes (1024) and 10 repeats: checks the harness runs")
    p.add_argument("--cpu-budget", type=float, default=30.0,
                   help="seconds per CPU contender and case (default 30, as port's own CPython timing)")
    p.add_argument("--only", help="comma-separated functions to bench (default: all)")
    p.add_argument("--json-out", default=str(REPO / "target" / "bench-gpu.json"), help="where the results go")
    opts = p.parse_args(argv)
    opts.size = opts.size or (1024 if opts.quick else 2**24)
    opts.repeats = opts.repeats or (SIMULATED_REPEATS if SIMULATED else 10 if opts.quick else 20)
    if opts.repeats < 10 and not SIMULATED:
        p.error("--repeats must be at least 10")
    known = {c.function for c in CASES}
    opts.only = set(opts.only.split(",")) if opts.only else known
    if not opts.only <= known:
        p.error("unknown function(s) %s; known: %s" % (", ".join(sorted(opts.only - known)), ", ".join(sorted(known))))
    return opts


def main(argv):
    opts = parse_args(argv)
    if not SIMULATED and not cuda.is_available():
        print("bench-gpu: no CUDA GPU here (numba-cuda finds none); run this on a GPU machine,"
              " or --simulate to exercise the harness", file=sys.stderr)
        return 2
    run = {"schema": "port.bench-gpu/1", "simulated": SIMULATED, "device": device_info(), "cpu": cpu_model(),
           "versions": {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
                        "numba-cuda": importlib.metadata.version("numba-cuda"), "cupy": cupy_version()},
           "size": opts.size, "repeats": opts.repeats, "cpu_budget_s": opts.cpu_budget, "results": []}
    cases = [c for c in CASES if c.function in opts.only]
    for i, case in enumerate(cases, 1):
        print("bench-gpu: [%d/%d] %s" % (i, len(cases), case.function), file=sys.stderr, flush=True)
        try:
            run["results"].append(bench_case(case, opts))
        except CaseFailed as e:
            run["results"].append({"function": case.function, "error": str(e)})
    Path(opts.json_out).parent.mkdir(parents=True, exist_ok=True)
    Path(opts.json_out).write_text(json.dumps(run, indent=2) + "\n")
    print_report(run)
    print("\nresults: %s" % opts.json_out)
    return 1 if any("error" in e for e in run["results"]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
