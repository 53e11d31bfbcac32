//! `cargo run --release -p port-codegen --example compile -- KERNEL.pir [--arch sm_80]
//! [--fastmath] [--debug] [--emit ptx|llvm|ir] [-o OUT]`
//!
//! A stand-alone copy of `port compile` for benchmarks and for looking at
//! generated code before the CLI is wired in.

use std::process::ExitCode;

use port_codegen::{compile_ptx, emit_llvm_ir, text, Arch, PtxOptions};

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut input = None;
    let mut arch = None;
    let mut out = None;
    let mut emit = "ptx".to_string();
    let mut opts = PtxOptions::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--arch" => arch = Some(args.next().ok_or("--arch needs a value")?),
            "--fastmath" => opts.fastmath = true,
            "--debug" => opts.debug = true,
            "--emit" => emit = args.next().ok_or("--emit needs ptx, llvm or ir")?,
            "-o" => out = Some(args.next().ok_or("-o needs a path")?),
            _ if input.is_none() => input = Some(a),
            _ => return Err(format!("unexpected argument `{a}`")),
        }
    }
    let input = input.ok_or("usage: compile KERNEL.pir [--arch sm_XX] [--fastmath] [--debug] [--emit ptx|llvm|ir] [-o OUT]")?;
    opts.arch = match arch {
        Some(a) => Arch::parse(&a).map_err(|e| e.to_string())?,
        None => Arch::default_for_this_machine(),
    };
    let src = std::fs::read_to_string(&input).map_err(|e| format!("cannot read {input}: {e}"))?;
    let module = text::parse_module(&src).map_err(|e| format!("{input}: {e}"))?;
    let result = match emit.as_str() {
        "ptx" => compile_ptx(&module, &opts),
        "llvm" => emit_llvm_ir(&module, &opts),
        "ir" => port_codegen::verify::verify_module(&module)
            .map(|()| text::print_module(&module))
            .map_err(Into::into),
        other => return Err(format!("unknown --emit `{other}`: use ptx, llvm or ir")),
    }
    .map_err(|e| format!("{input}: {e}"))?;
    match out {
        Some(p) => std::fs::write(&p, result).map_err(|e| format!("cannot write {p}: {e}")),
        None => {
            print!("{result}");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
