//! **emit** — the last stage: the plan printed for people. [`python`] turns
//! the plan's kernel IR and host steps into Numba-CUDA source (kernels,
//! device functions, a wrapper whose loops and `if`s are the user's), with
//! `calls`' guards first (the calls its kernels would not give the
//! original's results on: other types, other defaults, shared memory);
//! [`patch`] puts that into the user's file and makes the unified diff.
//!
//! Stage invariant: emit reads only the plan (`crate::plan`) and the
//! source file; it never lowers, and prints the one program that codegen
//! compiles and verify runs.

mod calls;
pub mod helpers;
pub mod kernels;
pub mod patch;
pub mod python;
