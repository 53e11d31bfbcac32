# c = a + b, over C-contiguous float32 vectors.
# Numba: @cuda.jit
#        def vector_add(a, b, c):
#            for i in range(cuda.grid(1), c.shape[0], cuda.gridsize(1)):
#                c[i] = a[i] + b[i]
kernel vector_add(a: f32[::1], b: f32[::1], c: f32[::1]) {
    parallel for i in range(c.shape[0]) {
        c[i] = a[i] + b[i];
    }
}
