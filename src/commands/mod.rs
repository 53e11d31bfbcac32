//! One module per subcommand; each exposes its clap `Args` and a `run`.

pub mod analyze;
pub mod compile;
pub mod explain;
pub mod graph;
pub mod migrate;
pub mod report;
pub mod verify;
