# Device functions: a scalar helper with a while loop (Horner's rule over a
# coefficient array), one taking a strided 2-D array, and one returning nothing.
device fn horner(c: f64[::1], x: f64) -> f64 {
    let k: i64 = c.shape[0] - 1;
    let acc: f64 = c[k];
    while k > 0 {
        k = k - 1;
        acc = acc * x + c[k];
    }
    return acc;
}

device fn clamp(v: f64, lo: f64, hi: f64) -> f64 {
    if v < lo {
        return lo;
    } else if v > hi {
        return hi;
    }
    return v;
}

device fn row_sum(m: f64[:, :], i: i64) -> f64 {
    let s: f64 = 0.0;
    for j in range(0, m.shape[1], 1) {
        s = s + m[i, j];
    }
    return s;
}

device fn put(out: f64[::1], i: i64, v: f64) {
    out[i] = v;
}

kernel device_call(coef: f64[::1], x: f64[::1], m: f64[:, ::1], lo: f64, hi: f64, out: f64[::1]) {
    parallel for i in range(out.shape[0]) {
        let p: f64 = clamp(horner(coef, x[i]), lo, hi);
        put(out, i, p + row_sum(m, i));
    }
}
