//! `port-backend`: every command of `port`, those that need LLVM
//! (`compile`, `migrate`, `verify`) included. `port` execs it for them.

use std::process::ExitCode;

fn main() -> ExitCode {
    port_cli::cli::main(port_cli::cli::run_backend)
}
