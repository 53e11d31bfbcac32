#!/usr/bin/env python3
"""Differential fuzzing of `port migrate` (issue 35): random, well-typed
NumPy functions, each migrated on the simulator and verified against
CPython. port's promise is that each is verified or refused, never wrong.

    fuzz_diff.py N [--seed S] [--jobs J] [--port PORT] [--python PY]
                   [--oracle PY] [--numba-every K] [--out DIR] [--keep]

Program k is generated from seed S + k alone, so any program can be made
again: `fuzz_diff.py 1 --seed S+k --keep` writes it to DIR/work/p0/.
Each program is run in CPython while it is generated: every statement is
executed on the program's own inputs as it is chosen, so the program that
reaches port runs, and its types are NumPy's, not the generator's guess.

The run ends with one line

    programs N, verified V, refused R, mismatch M, failed F

(a program whose inputs make the kernels' Python int arithmetic leave
int64 counts as refused: port calls it inconclusive, and the migrated
function runs the original on such inputs) and, for every mismatch and failure, DIR/findings/seed-S.py: the program
minimised (statements removed while port's answer stays the same), with
its seed, port's answer, and the inputs beside it (seed-S.npz). With
--numba-every K, every K-th verified program's patched module is also run
under Numba's CUDA simulator (verify/tests/numba_check.py) against the
original; a disagreement there is a mismatch too.

Exit status: 0 when mismatch and failed are 0, else 1.
"""
import argparse
import collections
import concurrent.futures as cf
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# dtypes of arrays, with their Numba names; weights favour the common ones.
DTYPES = [
    ("float64", 6), ("float32", 3), ("int64", 3), ("int32", 2), ("int16", 1),
    ("int8", 1), ("uint8", 1), ("uint16", 1), ("uint32", 1), ("uint64", 1),
    ("bool", 1), ("complex128", 1),
]
NUMBA_NAME = {"bool": "boolean"}

# ---------------------------------------------------------------------------
# Inputs


def values(rng, dtype, shape, edges):
    """An array of `dtype`: ordinary values, and with `edges` some of the
    values where implementations differ (NaN, ±inf, -0.0, integer
    extremes)."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape)) if shape else 1
    if dt.kind == "b":
        out = np.array([rng.random() < 0.5 for _ in range(size)], dtype=bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (-20, 20) if dt.kind == "i" else (0, 40)
        out = np.array([rng.randint(lo, hi) for _ in range(size)], dtype=np.int64)
        out = out.astype(dt)
        if edges:
            for k in range(size):
                if rng.random() < 0.1:
                    out[k] = rng.choice([info.min, info.max, 0, 1] + ([-1] if dt.kind == "i" else []))
    else:
        real = np.array([rng.uniform(-4, 4) for _ in range(size)])
        if edges:
            for k in range(size):
                if rng.random() < 0.1:
                    real[k] = rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e300, 5e-324])
        with np.errstate(over="ignore"):  # 1e300 as float32 is inf
            if dt.kind == "c":
                imag = np.array([rng.uniform(-4, 4) for _ in range(size)])
                out = (real + 1j * imag).astype(dt)
            else:
                out = real.astype(dt)
    return out.reshape(shape)


# ---------------------------------------------------------------------------
# The generator. Every expression is evaluated as it is chosen (`Gen.ev`),
# so its dtype and shape are NumPy's; a choice NumPy refuses is dropped.


class Reject(Exception):
    pass


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.counter = 0

    def fresh(self, base):
        self.counter += 1
        return "%s%d" % (base, self.counter)

    def ev(self, code, env):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                try:
                    return eval(code, env)
                except Exception as e:
                    raise Reject(str(e))

    def ex(self, code, env):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                try:
                    exec(code, env)
                except Exception as e:
                    raise Reject(str(e))

    # -- the program's frame -------------------------------------------------

    def program(self):
        r = self.rng
        self.ndim = 1 if r.random() < 0.7 else 2
        if self.ndim == 1:
            self.shape = (r.choice([0, 1, 2, 3, 5, 8, 16, 31, 64, 100]),)
        else:
            self.shape = (r.choice([0, 1, 2, 3, 5, 8, 12]), r.choice([1, 2, 4, 7, 9]))
        edges = r.random() < 0.4
        self.params = []
        self.inputs = {}
        for name in ["a", "b", "c"][: r.choice([1, 2, 2, 3])]:
            dt = self.dtype()
            self.params.append((name, dt, self.ndim))
            self.inputs[name] = values(r, dt, self.shape, edges)
        if self.ndim == 2 and r.random() < 0.4:
            dt = self.dtype()
            self.params.append(("row", dt, 1))
            self.inputs["row"] = values(r, dt, self.shape[1:], edges)
        for name in ["s", "t"][: r.choice([0, 1, 1, 2])]:
            if r.random() < 0.15:
                # A NumPy scalar: strong in NumPy 2's promotion.
                dt = r.choice(["float32", "int32", "float64"])
                self.params.append((name, dt, 0))
                self.inputs[name] = np.dtype(dt).type(r.choice([0.5, 2.0, -1.0, 3.0]))
            elif r.random() < 0.6:
                self.params.append((name, "float64", 0))
                self.inputs[name] = float(r.choice([0.5, -1.25, 2.0, 3.0, 0.0, -0.0]))
            else:
                self.params.append((name, "int64", 0))
                self.inputs[name] = int(r.choice([0, 1, 2, 3, -2, 7]))
        self.helpers = []
        if r.random() < 0.4:
            self.helpers.append(self.helper())
        env = self.fresh_env()
        units = []
        for _ in range(r.randint(1, 5)):
            for _try in range(8):
                try:
                    unit = self.statement(env)
                    break
                except Reject:
                    continue
            else:
                continue
            units.append(unit)
        if not units:
            raise Reject("no statement")
        ret = self.return_stmt(env, units)
        return Program(self.params, self.helpers, units, ret, self.inputs)

    def dtype(self):
        names = [d for d, _ in DTYPES]
        weights = [w for _, w in DTYPES]
        return self.rng.choices(names, weights)[0]

    def fresh_env(self):
        env = {"np": np, "math": math}
        for h in self.helpers:
            exec(h, env)
        for k, v in self.inputs.items():
            env[k] = v.copy() if isinstance(v, np.ndarray) else v
        return env

    def helper(self):
        r = self.rng
        name = "h%d" % len(getattr(self, "helpers", []))
        k = r.randint(0, 3)
        if k == 0:
            return "def %s(x, y):\n    return x * y + 0.5\n" % name
        if k == 1:
            return ("def %s(x, y):\n    if x > y:\n        return x - y\n"
                    "    return y * 0.5\n" % name)
        if k == 2:
            return ("def %s(x, y):\n    z = abs(x) + 1.0\n"
                    "    return math.sqrt(z) * y\n" % name)
        return ("def %s(x, y):\n    for k in range(3):\n        if x > 2.0:\n"
                "            return k\n        x = x * 2.0 + y * 0.0 + 1.0\n"
                "    return -1\n" % name)

    # -- names in scope ------------------------------------------------------

    def arrays(self, env, full=True):
        out = []
        for k, v in env.items():
            if isinstance(v, np.ndarray) and k not in ("np", "math"):
                if not full or v.shape == self.shape:
                    out.append(k)
        return sorted(out)

    def scalars(self, env):
        # Loop indices are left out: read after their loop, they are the
        # last iteration's value, which port rightly refuses.
        return sorted(k for k, v in env.items()
                      if k not in ("np", "math", "i", "j", "t") and not callable(v)
                      and not isinstance(v, (np.ndarray, type(np)))
                      and isinstance(v, (int, float, bool, np.generic)))

    # -- expressions ---------------------------------------------------------

    def literal(self, kinds="if"):
        r = self.rng
        if "f" in kinds and (r.random() < 0.5 or "i" not in kinds):
            return r.choice(["0.5", "2.0", "1.5", "3.0", "0.25", "-1.0"])
        return r.choice(["1", "2", "3", "5", "-1"])

    def arr_leaf(self, env):
        r = self.rng
        names = self.arrays(env)
        x = r.choice(names)
        if self.ndim == 1 and r.random() < 0.1:
            return "%s[::-1]" % x
        rows = [k for k in self.arrays(env, full=False)
                if env[k].ndim == 1 and self.ndim == 2 and env[k].shape == self.shape[1:]]
        if rows and r.random() < 0.15:
            return "%s[np.newaxis, :]" % r.choice(rows)
        kept = [k for k in self.arrays(env, full=False)
                if env[k].ndim == self.ndim and env[k].shape != self.shape
                and np.broadcast_shapes(env[k].shape, self.shape) == self.shape]
        if kept and r.random() < 0.3:
            return r.choice(kept)
        return x

    def arr_expr(self, env, depth=0):
        """Code of an array of the program's shape."""
        for _ in range(6):
            code = self.arr_try(env, depth)
            try:
                v = self.ev(code, env)
            except Reject:
                continue
            if isinstance(v, np.ndarray) and v.shape == self.shape and v.dtype.kind in "biufc":
                return code
        return self.arr_leaf(env)

    def operand(self, env, depth):
        r = self.rng
        if r.random() < 0.25:
            sc = self.scalars(env)
            if sc and r.random() < 0.6:
                return r.choice(sc)
            return self.literal()
        return self.arr_expr(env, depth + 1)

    def arr_try(self, env, depth):
        r = self.rng
        if depth >= 3 or r.random() < 0.25:
            return self.arr_leaf(env)
        k = r.random()
        if k < 0.45:
            op = r.choice(["+", "-", "*", "*", "/", "//", "%", "**", "&", "|", "^",
                           "<<", ">>", "<", ">", "==", "!=", "<=", ">="])
            left = self.arr_expr(env, depth + 1)
            if op in ("//", "%"):
                right = self.rng.choice(["3", "2", "-2", "1.5"])
            elif op == "**":
                right = "2"
            elif op in ("<<", ">>"):
                right = self.rng.choice(["1", "2", "3"])
            else:
                right = self.operand(env, depth)
            if r.random() < 0.3 and op not in ("//", "%", "**", "<<", ">>"):
                left, right = right, left
            return "(%s %s %s)" % (left, op, right)
        if k < 0.7:
            f = r.choice(["np.abs", "np.sqrt", "np.exp", "np.sin", "np.cos", "np.tanh",
                          "np.floor", "np.negative", "np.square", "np.log1p", "np.sign",
                          "np.isnan", "np.isfinite", "np.logical_not"])
            inner = self.arr_expr(env, depth + 1)
            if f in ("np.sqrt", "np.log1p"):
                inner = "np.abs(%s)" % inner
            if f == "np.exp":
                inner = "np.minimum(%s, 5.0)" % inner
            return "%s(%s)" % (f, inner)
        if k < 0.85:
            f = r.choice(["np.minimum", "np.maximum", "np.where"])
            if f == "np.where":
                cond = "(%s > %s)" % (self.arr_expr(env, depth + 1), self.literal())
                return "np.where(%s, %s, %s)" % (cond, self.operand(env, depth),
                                                self.operand(env, depth))
            return "%s(%s, %s)" % (f, self.arr_expr(env, depth + 1), self.operand(env, depth))
        if k < 0.92:
            return "(-%s)" % self.arr_expr(env, depth + 1)
        return "%s.astype(np.float64)" % self.arr_expr(env, depth + 1)

    def scalar_expr(self, env, idx, depth=0):
        """Code of a scalar inside a loop over `idx` (element reads)."""
        r = self.rng
        names = self.arrays(env)
        if depth >= 3 or r.random() < 0.3:
            k = r.random()
            if k < 0.6:
                return "%s[%s]" % (r.choice(names), idx)
            sc = self.scalars(env)
            if sc and k < 0.8:
                return r.choice(sc)
            if k < 0.85:
                return "(%s * 0.5)" % idx.split(",")[0]
            return self.literal()
        k = r.random()
        if k < 0.5:
            op = r.choice(["+", "-", "*", "*", "/", "<", ">", "==", "&", "|"])
            return "(%s %s %s)" % (self.scalar_expr(env, idx, depth + 1), op,
                                   self.scalar_expr(env, idx, depth + 1))
        if k < 0.7:
            f = r.choice(["abs", "math.sqrt(abs(%s))", "math.exp(min(%s, 5.0))",
                          "math.floor(%s)", "math.sin", "math.cos", "math.tanh"])
            inner = self.scalar_expr(env, idx, depth + 1)
            return (f % inner) if "%" in f else "%s(%s)" % (f, inner)
        if k < 0.85:
            f = r.choice(["min", "max"])
            return "%s(%s, %s)" % (f, self.scalar_expr(env, idx, depth + 1),
                                   self.scalar_expr(env, idx, depth + 1))
        if self.helpers:
            h = "h%d" % r.randrange(len(self.helpers))
            return "%s(%s, %s)" % (h, self.scalar_expr(env, idx, depth + 1),
                                   self.scalar_expr(env, idx, depth + 1))
        return "(-%s)" % self.scalar_expr(env, idx, depth + 1)

    # -- statements ----------------------------------------------------------

    def statement(self, env):
        r = self.rng
        kinds = ["assign", "assign", "reduce", "loop", "acc", "inplace"]
        if self.ndim == 1 and self.shape[0] >= 3:
            kinds += ["stencil", "sweep", "strided"]
        if self.ndim == 2:
            kinds += ["axis", "loop2"]
            if self.shape[0] >= 3 and self.shape[1] >= 3:
                kinds.append("stencil2")
        kind = r.choice(kinds)
        return getattr(self, "st_" + kind)(env)

    def unit(self, env, code, defines):
        self.ex(code, env)
        for name in defines:
            v = env[name]
            if isinstance(v, np.ndarray) and v.dtype.kind not in "biufc":
                raise Reject("object array")
        return Unit(code, defines)

    def st_assign(self, env):
        name = self.fresh("v")
        return self.unit(env, "%s = %s\n" % (name, self.arr_expr(env)), [name])

    def st_reduce(self, env):
        r = self.rng
        name = self.fresh("r")
        f = r.choice(["np.sum(%s)", "np.max(%s)", "np.min(%s)", "np.mean(%s)",
                      "(%s).sum()", "np.prod(%s)", "np.any(%s)", "np.all(%s)",
                      "np.nansum(%s)", "np.count_nonzero(%s)",
                      "np.dot(%s, %s)" if self.ndim == 1 else "np.sum(%s)"])
        args = tuple(self.arr_expr(env) for _ in range(f.count("%s")))
        code = "%s = %s\n" % (name, f % args)
        unit = self.unit(env, code, [name])
        if isinstance(env[name], np.ndarray):
            raise Reject("array result")
        return unit

    def st_axis(self, env):
        r = self.rng
        name = self.fresh("w")
        f = r.choice(["np.sum", "np.max", "np.min", "np.mean", "np.nansum", "np.count_nonzero"])
        axis = r.choice([0, 1])
        keep = r.random() < 0.5
        code = "%s = %s(%s, axis=%d%s)\n" % (name, f, self.arr_expr(env), axis,
                                            ", keepdims=True" if keep else "")
        return self.unit(env, code, [name])

    def target(self, env, idx_names, expr):
        """A new array to hold `expr` per element: its dtype is the one the
        elements have in CPython (a float never goes into an int array)."""
        vals = []
        shape = self.shape
        for pos in np.ndindex(*shape):
            local = dict(env)
            for n, p in zip(idx_names, pos):
                local[n] = p
            vals.append(self.ev(expr, local))
        if not vals:
            return "np.float64"
        dt = np.result_type(*[np.asarray(v).dtype if isinstance(v, np.generic) else type(v)
                              for v in vals])
        if dt.kind not in "biufc":
            raise Reject("dtype")
        return "np.%s" % ("bool_" if dt.kind == "b" else dt.name)

    def st_loop(self, env):
        r = self.rng
        if self.ndim == 2:
            return self.st_loop2(env)
        name = self.fresh("v")
        x = self.arrays(env)[0]
        if r.random() < 0.5:
            cond = "%s > %s" % (self.scalar_expr(env, "i", 2), self.literal())
            e1, e2 = self.scalar_expr(env, "i"), self.scalar_expr(env, "i")
            dt = self.target(env, ["i"], "(%s) if (%s) else (%s)" % (e1, cond, e2))
            body = ("    if %s:\n        %s[i] = %s\n    else:\n        %s[i] = %s\n"
                    % (cond, name, e1, name, e2))
        else:
            e = self.scalar_expr(env, "i")
            dt = self.target(env, ["i"], e)
            body = "    %s[i] = %s\n" % (name, e)
        code = ("%s = np.zeros(%s.shape[0], dtype=%s)\nfor i in range(%s.shape[0]):\n%s"
                % (name, x, dt, x, body))
        return self.unit(env, code, [name])

    def st_loop2(self, env):
        name = self.fresh("v")
        x = self.arrays(env)[0]
        e = self.scalar_expr(env, "i, j")
        dt = self.target(env, ["i", "j"], e.replace("[i, j]", "[i, j]"))
        code = ("%s = np.zeros(%s.shape, dtype=%s)\nfor i in range(%s.shape[0]):\n"
                "    for j in range(%s.shape[1]):\n        %s[i, j] = %s\n"
                % (name, x, dt, x, x, name, e))
        return self.unit(env, code, [name])

    def st_acc(self, env):
        r = self.rng
        name = self.fresh("acc")
        x = self.arrays(env)[0]
        first = "%s[0]" % x if self.ndim == 1 else "%s[0, 0]" % x
        init = r.choice(["0", "0.0", "1.0", first])
        e = self.scalar_expr(env, "i" if self.ndim == 1 else "i, j")
        op = r.choice(["+=", "+=", "-=", "*=", "max", "min"]) if init != "0" else "+="
        if self.ndim == 1:
            head = "for i in range(%s.shape[0]):\n" % x
            ind = "    "
        else:
            head = ("for i in range(%s.shape[0]):\n    for j in range(%s.shape[1]):\n"
                    % (x, x))
            ind = "        "
        # `acc = max(acc, e)`: Python's max, NaN kept only from `acc`.
        update = ("%s = %s(%s, %s)" % (name, op, name, e) if op in ("max", "min")
                  else "%s %s %s" % (name, op, e))
        if r.random() < 0.4:
            body = "%sif %s > %s:\n%s    %s\n" % (
                ind, self.scalar_expr(env, "i" if self.ndim == 1 else "i, j", 2),
                self.literal(), ind, update)
        else:
            body = "%s%s\n" % (ind, update)
        code = "%s = %s\n%s%s" % (name, init, head, body)
        return self.unit(env, code, [name])

    def st_inplace(self, env):
        r = self.rng
        names = [n for n in self.arrays(env)]
        x = r.choice(names)
        op = r.choice(["+=", "-=", "*="])
        code = "%s %s %s\n" % (x, op, self.operand(env, 1))
        return self.unit(env, code, [])

    def zeros_for(self, env, x):
        """A zero array to hold a float stencil of `x` (never an integer
        one: a float out of an integer's range has no defined cast)."""
        if env[x].dtype.kind in "fc":
            return "np.zeros_like(%s)" % x
        return "np.zeros(%s.shape)" % x

    def st_stencil(self, env):
        r = self.rng
        name = self.fresh("v")
        x = r.choice(self.arrays(env))
        c = [self.literal("f") for _ in range(3)]
        code = ("%s = %s\n%s[1:-1] = %s * %s[:-2] + %s * %s[1:-1] + %s * %s[2:]\n"
                % (name, self.zeros_for(env, x), name, c[0], x, c[1], x, c[2], x))
        return self.unit(env, code, [name])

    def st_stencil2(self, env):
        r = self.rng
        name = self.fresh("v")
        x = r.choice(self.arrays(env))
        code = ("%s = %s\n%s[1:-1, 1:-1] = %s * (%s[:-2, 1:-1] + %s[2:, 1:-1]"
                " + %s[1:-1, :-2] + %s[1:-1, 2:]) - %s[1:-1, 1:-1]\n"
                % (name, self.zeros_for(env, x), name, self.literal("f"), x, x, x, x, x))
        return self.unit(env, code, [name])

    def st_strided(self, env):
        """Strided slices of one array, odd elements against even ones."""
        r = self.rng
        name = self.fresh("r")
        x = r.choice(self.arrays(env))
        f = r.choice(["np.sum", "np.max", "np.min"])
        code = "%s = %s(%s[1::2] %s %s[:-1:2])\n" % (name, f, x, r.choice(["*", "-", "+"]), x)
        return self.unit(env, code, [name])

    def st_sweep(self, env):
        r = self.rng
        name = self.fresh("v")
        x = r.choice(self.arrays(env))
        steps = r.choice([1, 2, 3])
        if r.random() < 0.5:
            inner = "%s[1:-1] = 0.5 * (%s[:-2] + %s[2:])" % (name, name, name)
        else:
            inner = "%s[1:] = %s[1:] + %s[:-1]" % (name, name, name)
        code = "%s = %s * 1.0\nfor t in range(%d):\n    %s\n" % (name, x, steps, inner)
        return self.unit(env, code, [name])

    def return_stmt(self, env, units):
        r = self.rng
        defined = [n for u in units for n in u.defines]
        cands = defined[-2:] if defined else []
        if not cands or r.random() < 0.15:
            # In place only: the mutated arguments are the results.
            arrays = [p for p, _, nd in self.params if nd > 0]
            return "return %s\n" % r.choice(arrays) if r.random() < 0.3 else ""
        if len(cands) == 2 and r.random() < 0.3:
            return "return %s, %s\n" % (cands[0], cands[1])
        return "return %s\n" % cands[-1]


class Unit:
    def __init__(self, code, defines):
        self.code = code
        self.defines = defines


class Program:
    def __init__(self, params, helpers, units, ret, inputs):
        self.params = params
        self.helpers = helpers
        self.units = units
        self.ret = ret
        self.inputs = inputs

    def source(self, units=None):
        units = self.units if units is None else units
        body = "".join(u.code for u in units) + self.ret
        if not body.strip():
            body = "pass\n"
        lines = ["    " + line if line else line for line in body.splitlines()]
        head = "import math\n\nimport numpy as np\n\n\n"
        helpers = "".join(h + "\n\n" for h in self.helpers)
        sig = ", ".join(p for p, _, _ in self.params)
        return head + helpers + "def kernel(%s):\n%s\n" % (sig, "\n".join(lines))

    def signature(self):
        out = []
        for _, dt, nd in self.params:
            name = NUMBA_NAME.get(dt, dt)
            out.append(name if nd == 0 else "%s[%s]" % (name, ", ".join([":"] * nd)))
        return ", ".join(out)

    def save_inputs(self, path):
        arrays = {k: (v if isinstance(v, np.ndarray) else np.array(v))
                  for k, v in self.inputs.items()}
        np.savez(path, **arrays)

    def runs(self, units):
        """Whether the program made of `units` runs in CPython."""
        env = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with np.errstate(all="ignore"):
                    exec(self.source(units), env)
                    args = [self.inputs[p].copy() if isinstance(self.inputs[p], np.ndarray)
                            else self.inputs[p] for p, _, _ in self.params]
                    env["kernel"](*args)
            return True
        except Exception:
            return False


def generate(seed):
    for attempt in range(50):
        g = Gen(seed * 1000 + attempt)
        try:
            p = g.program()
        except Reject:
            continue
        if p.runs(p.units):
            return p
    raise RuntimeError("seed %d: no program in 50 attempts" % seed)


# ---------------------------------------------------------------------------
# Running port


def run_port(args, prog, units, folder, write=False):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "prog.py"), "w") as f:
        f.write(prog.source(units))
    prog.save_inputs(os.path.join(folder, "in.npz"))
    cmd = [args.port, "migrate", "prog.py", "--function", "kernel",
           "--signature", prog.signature(), "--inputs", "in.npz",
           "--backend", "simulator", "--repeats", "10", "--python", args.python, "--json"]
    if write:
        cmd.append("--write")
    try:
        o = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "failed", "timeout after %d s" % args.timeout, None
    try:
        j = json.loads(o.stdout)
    except ValueError:
        tail = (o.stderr.strip().splitlines() or ["no output"])[-1]
        return "failed", "exit %d, no JSON: %s" % (o.returncode, tail), None
    status = j.get("status", "failed")
    reasons = j.get("reasons") or []
    why = "; ".join("line %s: %s" % (r.get("line"), r.get("message")) for r in reasons)
    if j.get("schema") == "port.error/1":
        # port itself could not run (port.error/1): its one-line reason.
        why = j.get("reason", "")
        if j.get("code") == "installation":
            sys.exit("fuzz_diff: port is not installed whole: " + why)
    if status == "verified" and o.returncode != 0:
        return "failed", "verified with exit %d" % o.returncode, j
    if status == "inconclusive" and any("Python int arithmetic" in r.get("message", "")
                                        for r in reasons):
        # The inputs make Python int arithmetic leave int64: the migrated
        # function runs the original on them, so nothing is wrong and
        # nothing verified; counted with the refusals.
        status = "refused"
    elif status in ("inconclusive",):
        status = "failed"
    if status == "refused" and any("bad data" in r.get("message", "") for r in reasons):
        status = "failed"
    v = j.get("verification") or {}
    if status == "mismatch" and v.get("mismatch"):
        why = v["mismatch"]
    return status, why, j


def numba_sim(args, folder):
    """The patched module under Numba's CUDA simulator, against the
    original (verify/tests/numba_check.py)."""
    checker = os.path.join(REPO, "verify", "tests", "numba_check.py")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    cmd = [args.oracle, checker, "sim", "prog.py.port-bak", "prog.py",
           ".port/migrations/kernel.json"]
    try:
        o = subprocess.run(cmd, cwd=folder, capture_output=True, text=True,
                           timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return "failed", "numba simulator: timeout"
    if o.returncode == 0 and "ok cudasim" in o.stdout:
        return "verified", ""
    tail = (o.stderr.strip().splitlines() or o.stdout.strip().splitlines() or ["?"])[-1]
    return "mismatch", "numba simulator: " + tail


def minimise(args, prog, status, folder):
    """Statements removed, one at a time, while the program still runs in
    CPython and port still answers `status`."""
    units = list(prog.units)
    changed = True
    while changed and len(units) > 1:
        changed = False
        for k in range(len(units)):
            trial = units[:k] + units[k + 1:]
            if not prog.runs(trial):
                continue
            shutil.rmtree(folder, ignore_errors=True)
            s, _, _ = run_port(args, prog, trial, folder)
            if s == status:
                units = trial
                changed = True
                break
    return units


def one(args, k):
    seed = args.seed + k
    t0 = time.time()
    prog = generate(seed)
    folder = os.path.join(args.out, "work", "p%d" % k)
    shutil.rmtree(folder, ignore_errors=True)
    write = args.numba_every > 0 and k % args.numba_every == 0
    status, why, j = run_port(args, prog, prog.units, folder, write=write)
    numba = None
    if write and status == "verified" and args.oracle:
        numba, nwhy = numba_sim(args, folder)
        if numba != "verified":
            status, why = numba, nwhy
    finding = None
    if status in ("mismatch", "failed"):
        mfolder = os.path.join(args.out, "work", "m%d" % k)
        units = prog.units if numba else minimise(args, prog, status, mfolder)
        shutil.rmtree(mfolder, ignore_errors=True)
        finding = os.path.join(args.out, "findings", "seed-%d.py" % seed)
        os.makedirs(os.path.dirname(finding), exist_ok=True)
        with open(finding, "w") as f:
            f.write("# fuzz_diff.py seed %d: %s\n# %s\n# port migrate prog.py --function kernel"
                    " --signature %r --inputs seed-%d.npz --backend simulator\n"
                    % (seed, status, why.replace("\n", " "), prog.signature(), seed))
            f.write(prog.source(units))
        prog.save_inputs(finding[:-3] + ".npz")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    first = (j or {}).get("reasons") or [{}]
    return {"seed": seed, "status": status, "why": why, "numba": numba,
            "reason": first[0].get("message", ""), "seconds": round(time.time() - t0, 2),
            "finding": finding}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--port", default=os.path.join(REPO, "target", "release", "port"))
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--oracle", default=os.path.join(REPO, ".venv-oracle", "bin", "python"))
    ap.add_argument("--numba-every", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", action="store_true", help="keep each program's folder")
    ap.add_argument("--print", action="store_true", help="print the programs, run nothing")
    args = ap.parse_args()
    if args.print:
        for k in range(args.n):
            p = generate(args.seed + k)
            print("# seed %d  signature: %s\n%s" % (args.seed + k, p.signature(), p.source()))
        return 0
    for path, what in ((args.port, "--port"), (args.python, "--python")):
        if not os.path.exists(path):
            print("fuzz_diff: %s %s does not exist (make test builds it)" % (what, path),
                  file=sys.stderr)
            return 2
    if args.numba_every and not os.path.exists(args.oracle):
        args.oracle = None
    args.port = os.path.abspath(args.port)
    args.out = args.out or tempfile.mkdtemp(prefix="port-fuzz-")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    counts = collections.Counter()
    reasons = collections.Counter()
    log = open(os.path.join(args.out, "results.jsonl"), "w")
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(lambda k: one(args, k), range(args.n)):
            counts[r["status"]] += 1
            if r["status"] == "refused":
                reasons[r["reason"].split(":")[0][:70]] += 1
            log.write(json.dumps(r) + "\n")
            log.flush()
            if r["finding"]:
                print("%s: seed %d: %s (%s)" % (r["status"], r["seed"], r["why"][:200],
                                                r["finding"]), flush=True)
    log.close()
    n = sum(counts.values())
    if reasons:
        print("refusals, most common first:")
        for why, c in reasons.most_common(8):
            print("  %4d  %s" % (c, why))
    print("seed %d, %.0f s, results in %s" % (args.seed, time.time() - t0, args.out))
    print("programs %d, verified %d, refused %d, mismatch %d, failed %d"
          % (n, counts["verified"], counts["refused"], counts["mismatch"], counts["failed"]))
    return 0 if counts["mismatch"] == 0 and counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
