//! **lower** — from values to kernels. [`context`] is the lowering state
//! and the entry points (`context::Recurse`) every pass may call; each
//! other module is one named rewrite that lowers one pattern into kernel
//! IR (and the host steps that launch it), logging where it applied.
//!
//! Within the stage, bottom up: `context`; `shapes` (the extents the
//! kernels take to be equal, recorded as they are assumed; guards on the
//! finished plan); `creation` (NumPy's creation
//! and shape functions as element templates: nothing allocated),
//! `row_reduction`, `gather`, `masked`, `axis_reduction`, `app_calls`;
//! `whole_reduction` (on `row_reduction`), `grid_stride` (on
//! `whole_reduction`), `hoist_alloc` (on `creation` and `grid_stride`),
//! `scan`, `convolve` and `rearrange` (`np.roll`, `np.indices`) (on
//! `creation`), `histogram` (on `scan`),
//! `scalar_function` (on `app_calls` and `hoist_alloc`), `linalg` (on
//! `shapes`: library calls as steps of the host schedule), `sort` (on
//! `linalg`: `np.sort` and `np.median` as such steps); `fp32` works on
//! the finished plan; `python_ints` says which Python int arithmetic
//! comes from the data, and is checked for overflow.
//!
//! Stage invariant: a pass depends on the context, on the stages before
//! this one (`numpy`, `dependences`) and on passes below it, never on the
//! schedule or the front end; what it needs from them — the value of a
//! sub-expression, the statements of a body, a scalar on the host — it
//! asks through `context::Recurse`. `tests/layout.rs` checks it.

pub mod context;

pub mod app_calls;
pub mod axis_reduction;
pub mod convolve;
pub mod creation;
pub mod fp32;
pub mod gather;
pub mod grid_stride;
pub mod histogram;
pub mod hoist_alloc;
pub mod linalg;
pub mod masked;
pub mod python_ints;
pub mod rearrange;
pub mod row_reduction;
pub mod scalar_function;
pub mod scan;
pub mod shapes;
pub mod sort;
pub mod whole_reduction;
