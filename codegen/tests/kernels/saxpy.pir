# y = a * x + y, where x may be a strided view (x = big[::2]).
kernel saxpy(a: f32, x: f32[:], y: f32[::1]) {
    parallel for i in range(y.shape[0]) {
        y[i] = a * x[i] + y[i];
    }
}
