//! `port`: move the hotspots of a Python/NumPy program onto an NVIDIA GPU,
//! safely and measurably. This binary runs `analyze`, `explain`, `graph`
//! and `report`, and hands `compile`, `migrate` and `verify` to
//! `port-backend` beside it: it links no libLLVM, whose loading would cost
//! every profiled run 14 ms (see `port_cli::cli`).

use std::process::ExitCode;

fn main() -> ExitCode {
    port_cli::cli::main(port_cli::cli::exec_backend)
}
