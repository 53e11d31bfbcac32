# A thread-private loop per row: sum of sqrt over the non-negative entries,
# stopping at the first entry above `stop`. `counts` gets the number of terms.
# Covers for/range, continue, break, a while loop and int/float casts.
kernel row_loop(x: f32[:, ::1], stop: f32, sums: f32[::1], counts: i32[::1]) {
    parallel for i in range(x.shape[0]) {
        let s: f32 = 0.0f32;
        let n: i32 = 0i32;
        for j in range(0, x.shape[1], 1) {
            let v: f32 = x[i, j];
            if v > stop {
                break;
            }
            if v < 0.0f32 {
                continue;
            }
            s = s + sqrt(v);
            n = n + 1i32;
        }
        # A while loop that halves the count until it is below 8 (n >> k).
        let k: i32 = 0i32;
        while (n >> k) >= 8i32 {
            k = k + 1i32;
        }
        sums[i] = s;
        counts[i] = n * 100i32 + k;
    }
}
