# Kernels with barriers that port's rewriter wrote for programs in
# fixtures/migrate (dot, variance, max_abs, steepest_descent, bicgstab_spd,
# batch_norm_4d, update_centers; port migrate --size 32): the simulator runs
# each as thread loops and as fibers, and both must agree.
kernel batch_norm_4d_x_mean_blocks(x: f64[:, :, :, :], x_mean: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), x.shape[1], i64(gridDim.x)) {
        let j: i64 = item;
        let acc: f64 = 0.0;
        for at in range(i64(threadIdx.x), x.shape[0] * x.shape[2] * x.shape[3], i64(blockDim.x)) {
            let i: i64 = at / (x.shape[2] * x.shape[3]);
            let k: i64 = at / x.shape[3] % x.shape[2];
            let l: i64 = at % x.shape[3];
            acc = acc + x[i, j, k, l];
        }
        partials[tid] = acc;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc = partials[0i32];
            x_mean[j] = acc / f64(x.shape[0] * x.shape[2] * x.shape[3]);
        }
        syncthreads();
    }
}

kernel batch_norm_4d_x_mean_2_blocks(x: f64[:, :, :, :], x_mean_2: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), x.shape[1], i64(gridDim.x)) {
        let j: i64 = item;
        let acc_2: f64 = 0.0;
        for at in range(i64(threadIdx.x), x.shape[0] * x.shape[2] * x.shape[3], i64(blockDim.x)) {
            let i: i64 = at / (x.shape[2] * x.shape[3]);
            let k: i64 = at / x.shape[3] % x.shape[2];
            let l: i64 = at % x.shape[3];
            acc_2 = acc_2 + x[i, j, k, l];
        }
        partials[tid] = acc_2;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc_2 = partials[0i32];
            x_mean_2[j] = acc_2 / f64(x.shape[0] * x.shape[2] * x.shape[3]);
        }
        syncthreads();
    }
}

kernel batch_norm_4d_x_sum_blocks(x: f64[:, :, :, :], x_mean_2: f64[::1], x_sum: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), x.shape[1], i64(gridDim.x)) {
        let j: i64 = item;
        let acc_3: f64 = 0.0;
        for at in range(i64(threadIdx.x), x.shape[0] * x.shape[2] * x.shape[3], i64(blockDim.x)) {
            let i: i64 = at / (x.shape[2] * x.shape[3]);
            let k: i64 = at / x.shape[3] % x.shape[2];
            let l: i64 = at % x.shape[3];
            acc_3 = acc_3 + (x[i, j, k, l] - x_mean_2[j]) * (x[i, j, k, l] - x_mean_2[j]);
        }
        partials[tid] = acc_3;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc_3 = partials[0i32];
            x_sum[j] = acc_3;
        }
        syncthreads();
    }
}

kernel bicgstab_spd_matmul_sum_blocks(M: f64[:, ::1], x: f64[::1], matmul_sum: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), M.shape[0], i64(gridDim.x)) {
        let i: i64 = item;
        let acc: f64 = 0.0;
        for at in range(i64(threadIdx.x), M.shape[1], i64(blockDim.x)) {
            let j: i64 = at;
            acc = acc + M[i, j] * x[j];
        }
        partials[tid] = acc;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc = partials[0i32];
            matmul_sum[i] = acc;
        }
        syncthreads();
    }
}

kernel bicgstab_spd_sum(r0: f64[::1], r: f64[::1], total_acc: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(r0.shape[0]) {
        total = total + r0[i] * r[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc[0], total_block[0i32]);
    }
}

kernel bicgstab_spd_matmul_sum_2_blocks(M: f64[:, ::1], p: f64[::1], matmul_sum_2: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), M.shape[0], i64(gridDim.x)) {
        let i: i64 = item;
        let acc_2: f64 = 0.0;
        for at in range(i64(threadIdx.x), M.shape[1], i64(blockDim.x)) {
            let j: i64 = at;
            acc_2 = acc_2 + M[i, j] * p[j];
        }
        partials[tid] = acc_2;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc_2 = partials[0i32];
            matmul_sum_2[i] = acc_2;
        }
        syncthreads();
    }
}

kernel bicgstab_spd_sum_2(r0: f64[::1], v: f64[::1], total_acc_2: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(r0.shape[0]) {
        total = total + r0[i] * v[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_2[0], total_block[0i32]);
    }
}

kernel bicgstab_spd_matmul_sum_3_blocks(M: f64[:, ::1], s: f64[::1], matmul_sum_3: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), M.shape[0], i64(gridDim.x)) {
        let i: i64 = item;
        let acc_3: f64 = 0.0;
        for at in range(i64(threadIdx.x), M.shape[1], i64(blockDim.x)) {
            let j: i64 = at;
            acc_3 = acc_3 + M[i, j] * s[j];
        }
        partials[tid] = acc_3;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc_3 = partials[0i32];
            matmul_sum_3[i] = acc_3;
        }
        syncthreads();
    }
}

kernel bicgstab_spd_sum_3(t: f64[::1], s: f64[::1], total_acc_3: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(t.shape[0]) {
        total = total + t[i] * s[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_3[0], total_block[0i32]);
    }
}

kernel bicgstab_spd_sum_4(t: f64[::1], total_acc_4: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(t.shape[0]) {
        total = total + t[i] * t[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_4[0], total_block[0i32]);
    }
}

kernel dot_s(a: f64[:], b: f64[:], s_acc: f64[::1]) {
    shared s_block: f64[128];
    let tid: i32 = threadIdx.x;
    let s: f64 = 0.0;
    parallel for i in range(a.shape[0]) {
        s = s + a[i] * b[i];
    }
    s_block[tid] = s;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            s_block[tid] = s_block[tid] + s_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(s_acc[0], s_block[0i32]);
    }
}

kernel max_abs_max(x: f64[:], largest_blocks: f64[::1]) {
    shared largest_block: f64[128];
    let tid: i32 = threadIdx.x;
    let largest: f64 = -inf;
    parallel for i in range(x.shape[0]) {
        largest = max(largest, fabs(x[i]));
    }
    largest_block[tid] = largest;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            largest_block[tid] = max(largest_block[tid], largest_block[tid + stride]);
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        largest_blocks[blockIdx.x] = largest_block[0i32];
    }
}

kernel max_abs_max_finish(largest_blocks: f64[::1], largest_acc: f64[::1]) {
    shared largest_block: f64[128];
    let tid: i32 = threadIdx.x;
    let largest: f64 = -inf;
    for k in range(i64(tid), largest_blocks.shape[0], i64(blockDim.x)) {
        largest = max(largest, largest_blocks[k]);
    }
    largest_block[tid] = largest;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            largest_block[tid] = max(largest_block[tid], largest_block[tid + stride]);
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        largest_acc[0] = max(largest_acc[0], largest_block[0i32]);
    }
}

kernel steepest_descent_matmul_sum_blocks(x: f64[::1], M: f64[:, ::1], matmul_sum: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), M.shape[0], i64(gridDim.x)) {
        let i: i64 = item;
        let acc: f64 = 0.0;
        for at in range(i64(threadIdx.x), M.shape[1], i64(blockDim.x)) {
            let j: i64 = at;
            acc = acc + M[i, j] * x[j];
        }
        partials[tid] = acc;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc = partials[0i32];
            matmul_sum[i] = acc;
        }
        syncthreads();
    }
}

kernel steepest_descent_matmul_sum_2_blocks(M: f64[:, ::1], d: f64[::1], matmul_sum_2: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), M.shape[0], i64(gridDim.x)) {
        let i: i64 = item;
        let acc_2: f64 = 0.0;
        for at in range(i64(threadIdx.x), M.shape[1], i64(blockDim.x)) {
            let j: i64 = at;
            acc_2 = acc_2 + M[i, j] * d[j];
        }
        partials[tid] = acc_2;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc_2 = partials[0i32];
            matmul_sum_2[i] = acc_2;
        }
        syncthreads();
    }
}

kernel steepest_descent_sum(r: f64[::1], total_acc: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(r.shape[0]) {
        total = total + r[i] * r[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc[0], total_block[0i32]);
    }
}

kernel steepest_descent_sum_2(d: f64[::1], q: f64[::1], total_acc_2: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(d.shape[0]) {
        total = total + d[i] * q[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_2[0], total_block[0i32]);
    }
}

kernel steepest_descent_matmul_sum_3_blocks(x: f64[::1], M: f64[:, ::1], matmul_sum_3: f64[::1]) {
    shared partials: f64[128];
    let tid: i32 = threadIdx.x;
    for item in range(i64(blockIdx.x), M.shape[0], i64(gridDim.x)) {
        let i: i64 = item;
        let acc_3: f64 = 0.0;
        for at in range(i64(threadIdx.x), M.shape[1], i64(blockDim.x)) {
            let j: i64 = at;
            acc_3 = acc_3 + M[i, j] * x[j];
        }
        partials[tid] = acc_3;
        syncthreads();
        let stride: i32 = blockDim.x // 2i32;
        while stride > 0i32 {
            if tid < stride {
                partials[tid] = partials[tid] + partials[tid + stride];
            }
            syncthreads();
            stride = stride // 2i32;
        }
        if tid == 0i32 {
            acc_3 = partials[0i32];
            matmul_sum_3[i] = acc_3;
        }
        syncthreads();
    }
}

kernel steepest_descent_sum_3(r: f64[::1], total_acc_3: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(r.shape[0]) {
        total = total + r[i] * r[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_3[0], total_block[0i32]);
    }
}

kernel steepest_descent_sum_4(b: f64[:], total_acc_4: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(b.shape[0]) {
        total = total + b[i] * b[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_4[0], total_block[0i32]);
    }
}

kernel update_centers_sum(M: i64[:], i: i64, total_acc: i64[::1]) {
    shared total_block: i64[128];
    let tid: i32 = threadIdx.x;
    let total: i64 = 0;
    parallel for i_2 in range(M.shape[0]) {
        total = total + i64(M[i_2] == i);
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc[0], total_block[0i32]);
    }
}

kernel variance_mean(x: f64[:], total_acc: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(x.shape[0]) {
        total = total + x[i];
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc[0], total_block[0i32]);
    }
}

kernel variance_mean_2(x: f64[:], m: f64, total_acc_2: f64[::1]) {
    shared total_block: f64[128];
    let tid: i32 = threadIdx.x;
    let total: f64 = 0.0;
    parallel for i in range(x.shape[0]) {
        total = total + (x[i] - m) * (x[i] - m);
    }
    total_block[tid] = total;
    syncthreads();
    let stride: i32 = blockDim.x // 2i32;
    while stride > 0i32 {
        if tid < stride {
            total_block[tid] = total_block[tid] + total_block[tid + stride];
        }
        syncthreads();
        stride = stride // 2i32;
    }
    if tid == 0i32 {
        atomic_add(total_acc_2[0], total_block[0i32]);
    }
}
