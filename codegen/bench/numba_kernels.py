"""The kernels of codegen/tests/kernels/*.pir written for numba-cuda, for the
compile-latency benchmark (scripts/bench-codegen.sh).

    python numba_kernels.py one KERNEL ARCH     # import numba, compile KERNEL once (timed from outside)
    python numba_kernels.py each ARCH N         # in-process: median compile_ptx time per kernel
"""
import math
import statistics
import sys
import time

from numba import cuda, float32, float64, int32, int64, types

f32_1c = types.Array(float32, 1, "C")
f32_1a = types.Array(float32, 1, "A")
f32_2c = types.Array(float32, 2, "C")
f64_1c = types.Array(float64, 1, "C")
f64_2c = types.Array(float64, 2, "C")
f64_2a = types.Array(float64, 2, "A")
i32_1c = types.Array(int32, 1, "C")
i64_1c = types.Array(int64, 1, "C")


def vector_add(a, b, c):
    for i in range(cuda.grid(1), c.shape[0], cuda.gridsize(1)):
        c[i] = a[i] + b[i]


def saxpy(a, x, y):
    for i in range(cuda.grid(1), y.shape[0], cuda.gridsize(1)):
        y[i] = a * x[i] + y[i]


def elementwise_2d(x, y, out):
    j0, i0 = cuda.grid(2)
    sj, si = cuda.gridsize(2)
    for i in range(i0, out.shape[0], si):
        for j in range(j0, out.shape[1], sj):
            v = x[i, j]
            w = y[i, j]
            pos = math.sin(v) * math.exp(-w) + math.sqrt(math.fabs(v))
            neg = math.tanh(v) + math.pow(w, 2.0)
            out[i, j] = (pos if v > 0.0 else neg) + float64(i) - float64(j)


def row_loop(x, stop, sums, counts):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        s = float32(0.0)
        n = int32(0)
        for j in range(x.shape[1]):
            v = x[i, j]
            if v > stop:
                break
            if v < float32(0.0):
                continue
            s += math.sqrt(v)
            n += 1
        k = int32(0)
        while (n >> k) >= 8:
            k += 1
        sums[i] = s
        counts[i] = n * 100 + k


def reduction(x, total, positives):
    partial = cuda.shared.array(256, float64)
    npos = cuda.shared.array(256, int64)
    tid = cuda.threadIdx.x
    acc = 0.0
    cnt = 0
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += x[i]
        if x[i] > 0.0:
            cnt += 1
    partial[tid] = acc
    npos[tid] = cnt
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
            npos[tid] += npos[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, partial[0])
        cuda.atomic.add(positives, 0, npos[0])


@cuda.jit(device=True)
def horner(c, x):
    k = c.shape[0] - 1
    acc = c[k]
    while k > 0:
        k -= 1
        acc = acc * x + c[k]
    return acc


@cuda.jit(device=True)
def clamp(v, lo, hi):
    if v < lo:
        return lo
    elif v > hi:
        return hi
    return v


@cuda.jit(device=True)
def row_sum(m, i):
    s = 0.0
    for j in range(m.shape[1]):
        s += m[i, j]
    return s


@cuda.jit(device=True)
def put(out, i, v):
    out[i] = v


def device_call(coef, x, m, lo, hi, out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        p = clamp(horner(coef, x[i]), lo, hi)
        put(out, i, p + row_sum(m, i))


SIGS = {
    "vector_add": (f32_1c, f32_1c, f32_1c),
    "saxpy": (float32, f32_1a, f32_1c),
    "elementwise_2d": (f64_2a, f64_2c, f64_2c),
    "row_loop": (f32_2c, float32, f32_1c, i32_1c),
    "reduction": (f64_1c, f64_1c, i64_1c),
    "device_call": (f64_1c, f64_1c, f64_2c, float64, float64, f64_1c),
}


def patch_no_driver(cc):
    """numba-cuda asks the driver for the device's compute capability when it
    compiles a device function; without a driver, report `cc` instead (the
    same patch as the Numba oracle's classify.py)."""
    import types as pytypes

    import numba.cuda.compiler as c
    import numba.cuda.dispatcher as d

    fake = pytypes.SimpleNamespace(compute_capability=cc)
    d.get_current_device = lambda: fake
    c.get_current_device = lambda: fake


def compile_one(name, cc):
    if name == "device_call" and not cuda.is_available():
        patch_no_driver(cc)
    ptx, _ = cuda.compile_ptx(globals()[name], SIGS[name], cc=cc)
    return ptx


def main():
    mode = sys.argv[1]
    if mode == "one":
        name, arch = sys.argv[2], sys.argv[3]
        cc = (int(arch[3]), int(arch[4]))
        ptx = compile_one(name, cc)
        assert ".entry" in ptx
    elif mode == "each":
        arch, n = sys.argv[2], int(sys.argv[3])
        cc = (int(arch[3]), int(arch[4]))
        for name in SIGS:
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                compile_one(name, cc)
                times.append(time.perf_counter() - t0)
            print(f"{name} {times[0] * 1e3:.1f} {statistics.median(times[1:] or times) * 1e3:.1f}")


if __name__ == "__main__":
    main()
