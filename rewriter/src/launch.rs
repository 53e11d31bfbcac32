//! The launch policy: how many threads and blocks each kind of kernel gets.
//! Grid-stride loops make any grid correct, so the policy is about filling
//! the device: enough blocks to cover the problem, at most
//! [`BLOCKS_PER_SM`] per streaming multiprocessor.

/// Threads per block of 1-D element kernels (the seeds use 128–256).
pub const THREADS_1D: u32 = 256;
/// Block shape of 2-D element kernels: 16 × 16 = 256 threads.
pub const THREADS_2D: u32 = 16;
/// Threads per block of reduction kernels: the size of the shared-memory
/// tree, a power of two.
pub const THREADS_REDUCE: u32 = 128;
/// Threads of the one block of a persistent kernel (a host loop run inside
/// one launch): 256, so that any kernel fits a block's registers.
pub const THREADS_PERSIST: u32 = 256;
/// Blocks per SM of a reduction kernel: fewer than element kernels, as each
/// block ends in an atomic on the same element, but 2048 threads per SM, a
/// full SM: each thread has one load in flight, and at 8 blocks (1024
/// threads) a whole-array sum of 4M float64 read 39% of the H200's peak
/// bandwidth.
pub const REDUCE_BLOCKS_PER_SM: u64 = 16;
/// Most blocks a reduction kernel gets (also the length of the per-block
/// partials array of reductions without a native atomic).
pub const REDUCE_MAX_BLOCKS: u32 = 2048;
/// Blocks per SM beyond which a grid-stride loop does the rest.
pub const BLOCKS_PER_SM: u64 = 32;
/// The SM count the host simulator assumes (a GPU's comes from the device):
/// small, as the simulator runs a reduction block's threads as OS threads.
pub const SIMULATED_SMS: u64 = 2;

/// Blocks for `n` work items at `threads` per block on a device with `sms`
/// multiprocessors: `ceil(n / threads)`, at least 1, at most 32 per SM.
pub fn blocks_for(n: i64, threads: u32, sms: u64) -> u32 {
    let n = n.max(1) as u64;
    let need = n.div_ceil(u64::from(threads));
    need.clamp(1, (BLOCKS_PER_SM * sms.max(1)).min(65_535)) as u32
}

/// Blocks of a reduction kernel: enough to cover `n`, at most
/// [`REDUCE_BLOCKS_PER_SM`] per SM and [`REDUCE_MAX_BLOCKS`] in all.
pub fn reduce_blocks_for(n: i64, sms: u64) -> u32 {
    let n = n.max(1) as u64;
    n.div_ceil(u64::from(THREADS_REDUCE)).clamp(
        1,
        (REDUCE_BLOCKS_PER_SM * sms.max(1)).min(u64::from(REDUCE_MAX_BLOCKS)),
    ) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_the_problem_and_caps() {
        assert_eq!(blocks_for(0, 256, 4), 1);
        assert_eq!(blocks_for(256, 256, 4), 1);
        assert_eq!(blocks_for(257, 256, 4), 2);
        assert_eq!(blocks_for(100_000, 256, 4), 128);
        assert_eq!(blocks_for(100_000, 256, 80), 391);
        assert_eq!(reduce_blocks_for(10_000_000, 132), 2048);
        assert_eq!(reduce_blocks_for(10_000_000, 100), 1600);
        assert_eq!(reduce_blocks_for(100_000, 2), 32);
        assert_eq!(reduce_blocks_for(100, 2), 1);
    }
}
