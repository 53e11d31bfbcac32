//! The named rewrites, in the style of Numba's named compiler passes: the
//! list the plan's log reports, in order ([`ALL`]), wherever each lives in
//! the pipeline — `array_expr` and `math_calls` in [`crate::numpy`],
//! `dependences` on its own, `host_schedule` in [`crate::schedule`], the
//! rest in [`crate::lower`]. Each is called where its pattern occurs and
//! records where it applied; one that never applied says why not
//! ([`records`]).
//!
//! The modules are re-exported here under their rewrite's name
//! (`rewrites::grid_stride::NAME`); code inside the crate names them by
//! their stage.

pub use crate::dependences;
pub use crate::lower::{
    app_calls, axis_reduction, convolve, fp32, gather, grid_stride, histogram, hoist_alloc, linalg,
    masked, row_reduction, scalar_function, scan, shapes, sort, whole_reduction,
};
pub use crate::numpy::{array_expr, math_calls};
pub use crate::schedule::{fuse, host_schedule, persist};

use crate::lower::context::RewriteLog;
use crate::plan::RewriteRecord;

/// Every rewrite, in the order they are reported, with what "not
/// applicable" means for each.
pub const ALL: [(&str, &str); 22] = [
    (grid_stride::NAME, "no loop with independent iterations"),
    (array_expr::NAME, "no array expression"),
    (hoist_alloc::NAME, "the function allocates no array"),
    (row_reduction::NAME, "no reduction inside per-thread work"),
    (whole_reduction::NAME, "no reduction across the whole data"),
    (axis_reduction::NAME, "no reduction along an axis"),
    (
        scalar_function::NAME,
        "the function works on arrays, not on one element",
    ),
    (math_calls::NAME, "no math function is called"),
    (
        app_calls::NAME,
        "no other function of the program is called",
    ),
    (dependences::NAME, "no loop to check"),
    (
        host_schedule::NAME,
        "no sequential loop or `if` around the kernels",
    ),
    (fuse::NAME, "no neighbouring kernels over one index space"),
    (
        persist::NAME,
        "no sequential host loop that only launches kernels",
    ),
    (scan::NAME, "no cumsum or cumprod"),
    (masked::NAME, "no reduction of a boolean-mask selection"),
    (gather::NAME, "no read through an array of indices"),
    (histogram::NAME, "no np.histogram"),
    (
        convolve::NAME,
        "no array literal, np.convolve or np.correlate",
    ),
    (linalg::NAME, "no np.linalg library call"),
    (sort::NAME, "no np.sort or np.median"),
    (
        shapes::NAME,
        "no two extents taken to be equal without proof",
    ),
    (fp32::NAME, "not requested (pass --fp32)"),
];

/// One record per rewrite of [`ALL`], in its order: where it applied (the
/// notes joined), or why not.
pub fn records(log: &RewriteLog) -> Vec<RewriteRecord> {
    ALL.iter()
        .map(|(name, why_not)| {
            let notes = log.notes(name);
            if notes.is_empty() {
                RewriteRecord {
                    rewrite: name.to_string(),
                    applied: false,
                    note: format!("not applicable: {why_not}"),
                }
            } else {
                RewriteRecord {
                    rewrite: name.to_string(),
                    applied: true,
                    note: notes.join("; "),
                }
            }
        })
        .collect()
}
