"""What the GPU benchmark (bench_gpu.py) and the array-program sweep
(gpu_sweep.py) both need: importing a fixture by path, a time limit on
Python code, and a plain-text table. No third-party imports: the sweep
runs where Numba may be broken (bench_gpu.py imports it at load)."""
import contextlib
import importlib.machinery
import importlib.util
import signal
import sys
from pathlib import Path


def load(path, name):
    """Imports the Python file `path` as module `name` (its __main__ block
    does not run); its folder goes on sys.path for local imports."""
    folder = str(Path(path).parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class TimeLimit(Exception):
    """Raised in the main thread when a time limit expires."""


@contextlib.contextmanager
def time_limit(seconds):
    """Interrupts the (pure Python) code inside after `seconds`."""

    def expire(signum, frame):
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def print_table(header, rows):
    """A plain-text table, columns left-aligned to their widest cell."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
