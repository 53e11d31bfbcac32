//! The profiler: runs the user's program under py-spy's sampler, aggregates
//! samples by function and line, records sampled caller→callee edges, and
//! captures real argument types and one input snapshot per hot function.
//!
//! Nothing is implemented here yet: `port analyze APP.py` is the issue that fills it.
