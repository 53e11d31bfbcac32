//! The rewriter: turns a classified, typed Python function into port's kernel
//! IR — grid-stride loops, array expressions as element loops, per-row and
//! whole-array reductions, hoisted allocations — and into the Python source of
//! the migrated function (Numba-CUDA kernels plus a host wrapper), as a list of
//! named rewrites that can each say "not applicable because …".
//!
//! Nothing is implemented here yet: `port migrate` is the issue that fills it.
