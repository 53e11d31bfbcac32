//! Verification and timing: runs the original function under CPython and the
//! migrated kernels on the GPU (cudarc) or on the host simulator, compares the
//! results with `allclose`, and times them the way Numba's maintainers teach
//! (no compile time, warm-up, data on the device, events, median of repeats).
//!
//! Nothing is implemented here yet: `port verify` is the issue that fills it.
