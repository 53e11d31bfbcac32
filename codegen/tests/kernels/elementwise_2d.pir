# A 2-D element-wise expression with math calls, casts, a comparison and a
# select; x may be any layout (the test passes a transposed view).
#   out = where(x > 0, sin(x) * exp(-y) + sqrt(|x|), tanh(x) + pow(y, 2)) + i - j
kernel elementwise_2d(x: f64[:, :], y: f64[:, ::1], out: f64[:, ::1]) {
    parallel for (i, j) in range(out.shape[0], out.shape[1]) {
        let v: f64 = x[i, j];
        let w: f64 = y[i, j];
        let pos: f64 = sin(v) * exp(-w) + sqrt(fabs(v));
        let neg: f64 = tanh(v) + pow(w, 2.0);
        out[i, j] = select(v > 0.0, pos, neg) + f64(i) - f64(j);
    }
}
