//! **numpy** — array values with NumPy's meaning, before anything is
//! lowered. [`array_expr`] is the array IR: an array value is an element
//! template (a shape and one scalar expression per element) with NumPy's
//! basic indexing, `None`/`...`, views, broadcasting of extent-1
//! dimensions and promotion; [`math_calls`] gives `math`/`cmath`/NumPy
//! functions and ufuncs their element-by-element meaning; [`extents`]
//! says which extents NumPy requires equal (broadcasting, a store into a
//! slice, `@`) and which are equal by arithmetic; [`rearrange`] gives
//! `np.roll` and `np.indices` as templates.
//!
//! Stage invariant: no lowering state — values in, values out. Nothing here
//! allocates, launches or knows which region it is in.

pub mod array_expr;
pub mod extents;
pub mod math_calls;
pub mod rearrange;
