//! The named rewrites, one module each, in the style of Numba's named
//! compiler passes. Each is called by the lowering ([`crate::lower`]) where
//! its pattern occurs; each records where it applied, and a rewrite that
//! never applied says why not ([`records`]).

pub mod app_calls;
pub mod app_inline;
pub mod axis_reduction;
pub mod convolve;
pub mod creation;
pub mod fp32;
pub mod gather;
pub mod grid_stride;
pub mod histogram;
pub mod hoist_alloc;
pub mod host_schedule;
pub mod masked;
pub mod row_reduction;
pub mod scalar_function;
pub mod scan;
pub mod whole_reduction;

pub use crate::dependences;
pub use crate::shapes::{array_expr, math_calls};

use crate::lower::context::RewriteLog;
use crate::plan::RewriteRecord;

/// Every rewrite, in the order they are reported, with what "not
/// applicable" means for each.
pub const ALL: [(&str, &str); 17] = [
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
    (scan::NAME, "no cumsum or cumprod"),
    (masked::NAME, "no reduction of a boolean-mask selection"),
    (gather::NAME, "no read through an array of indices"),
    (histogram::NAME, "no np.histogram"),
    (
        convolve::NAME,
        "no array literal, np.convolve or np.correlate",
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
