# Whole-array sum: a grid-stride partial sum per thread, a tree in shared
# memory per block, then one atomic per block. Launch with 256 threads per block.
# Also counts the positive entries with an integer atomic.
kernel reduction(x: f64[::1], total: f64[::1], positives: i64[::1]) {
    shared partial: f64[256];
    shared npos: i64[256];
    let tid: i32 = threadIdx.x;
    let acc: f64 = 0.0;
    let cnt: i64 = 0;
    parallel for i in range(x.shape[0]) {
        acc = acc + x[i];
        if x[i] > 0.0 {
            cnt = cnt + 1;
        }
    }
    partial[tid] = acc;
    npos[tid] = cnt;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            partial[tid] = partial[tid] + partial[tid + stride];
            npos[tid] = npos[tid] + npos[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total[0], partial[0]);
        atomic_add(positives[0], npos[0]);
    }
}
