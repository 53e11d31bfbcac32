//! **schedule** — the host steps around the kernels: what runs on the host
//! (scalars, allocations, loops, `if`s, read-backs) and what each name
//! means there. [`host`] lowers the function's top level statement by
//! statement; [`host_schedule`] keeps the control flow the dependence test
//! refuses as a kernel on the host, launching the kernels of its body, and
//! rebinds device arrays by name; [`app_inline`] copies the program's own
//! helpers into the host schedule.
//!
//! Within the stage, bottom up: `app_inline`, `host_schedule` (on
//! `app_inline`), `host_names` (a `None` binding no statement reads; an
//! index grid updated in place), `host` (on all three).
//!
//! Stage invariant: the schedule builds on the kernel passes
//! ([`crate::lower`]) and never the reverse; a pass that needs a host-level
//! answer (a scalar computed on the host, the statements of a loop body)
//! asks through the context's entry points (`crate::lower::context::Recurse`).

pub mod app_inline;
pub mod bounds;
pub mod fuse;
pub mod host;
pub mod host_names;
pub mod host_schedule;
pub mod persist;
