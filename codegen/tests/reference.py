"""NumPy references for the kernels in tests/kernels/.

Usage: python reference.py KERNEL DIR

DIR/meta.json lists the inputs: arrays (raw little-endian files, C order,
with dtype and shape; a "view" key says how the kernel sees them) and
scalars. The script writes each output array to DIR/<name>.out in C order.
These are written with whole-array NumPy operations, independently of the
kernels' element loops.
"""
import json
import sys
from pathlib import Path

import numpy as np


def load(d, meta):
    arrays = {}
    for name, spec in meta["arrays"].items():
        a = np.fromfile(d / spec["file"], dtype=spec["dtype"]).reshape(spec["shape"])
        view = spec.get("view")
        if view == "every_other":
            a = a[::2]
        elif view == "transpose":
            a = a.T
        arrays[name] = a
    return arrays, meta.get("scalars", {})


def vector_add(a, s):
    return {"c": a["a"] + a["b"]}


def saxpy(a, s):
    return {"y": np.float32(s["a"]) * a["x"] + a["y"]}


def elementwise_2d(a, s):
    x, y = a["x"], a["y"]
    i, j = np.indices(x.shape)
    pos = np.sin(x) * np.exp(-y) + np.sqrt(np.abs(x))
    neg = np.tanh(x) + np.power(y, 2.0)
    return {"out": np.where(x > 0, pos, neg) + i - j}


def row_loop(a, s):
    x = a["x"]
    stop = np.float32(s["stop"])
    reached = np.logical_or.accumulate(x > stop, axis=1)
    terms = ~reached & (x >= 0)
    sums = np.where(terms, np.sqrt(np.where(terms, x, 0)), 0).astype(np.float32).sum(axis=1, dtype=np.float32)
    n = terms.sum(axis=1)
    k = np.array([max(0, int(v).bit_length() - 3) for v in n])
    return {"sums": sums, "counts": (n * 100 + k).astype(np.int32)}


def reduction(a, s):
    x = a["x"]
    return {"total": np.array([x.sum()]), "positives": np.array([(x > 0).sum()], dtype=np.int64)}


def device_call(a, s):
    coef, x, m = a["coef"], a["x"], a["m"]
    p = np.clip(np.polyval(coef[::-1], x), s["lo"], s["hi"])
    return {"out": p + m.sum(axis=1)}


def main():
    kernel, d = sys.argv[1], Path(sys.argv[2])
    meta = json.loads((d / "meta.json").read_text())
    arrays, scalars = load(d, meta)
    outs = globals()[kernel](arrays, scalars)
    for name, v in outs.items():
        np.ascontiguousarray(v).tofile(d / f"{name}.out")


if __name__ == "__main__":
    main()
