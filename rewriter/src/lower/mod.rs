//! **lower** — from values to kernels. [`context`] is the lowering state
//! and the entry points every pass may call; the passes below it each
//! lower one pattern into kernel IR.

pub mod context;
