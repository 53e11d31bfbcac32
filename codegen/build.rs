//! How port-codegen links LLVM 19 (llvm-sys is built with
//! `no-llvm-linking`, so this script is the one place that decides).
//!
//! - By default: the shared `libLLVM-19.so` of the LLVM that
//!   `LLVM_SYS_191_PREFIX` (or Debian's `/usr/lib/llvm-19`) names. Quick to
//!   link, which the many test binaries need.
//! - With `PORT_LLVM_STATIC=1` (what `make wheel` sets): the static
//!   archives of only the components port uses (the NVPTX and x86 back
//!   ends, MCJIT, the pass builder, the bitcode reader and the linker), with
//!   zlib, zstd and libstdc++ static too where their archives exist. The
//!   binary then needs nothing but glibc and libgcc_s, so a wheel can carry
//!   it without libLLVM's 129 MB and the libraries libLLVM pulls in (Z3,
//!   ICU, libxml2) that port never calls.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The LLVM components port calls into (see `codegen::ptx` and `codegen::sim`).
const COMPONENTS: &[&str] = &[
    "nvptx",
    "x86",
    "mcjit",
    "passes",
    "bitreader",
    "linker",
    "ipo",
];

fn main() {
    println!("cargo:rerun-if-env-changed=PORT_LLVM_STATIC");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    let config = llvm_config();
    let libdir = run(&config, &["--libdir"]);
    println!("cargo:rustc-link-search=native={libdir}");
    let static_llvm = std::env::var("PORT_LLVM_STATIC").is_ok_and(|v| !v.is_empty() && v != "0");
    if !static_llvm {
        for lib in run(&config, &["--link-shared", "--libs"]).split_whitespace() {
            println!(
                "cargo:rustc-link-lib=dylib={}",
                lib.trim_start_matches("-l")
            );
        }
        println!("cargo:rustc-link-lib=dylib=stdc++");
        return;
    }
    let mut args = vec!["--link-static", "--libs"];
    args.extend(COMPONENTS);
    for lib in run(&config, &args).split_whitespace() {
        println!(
            "cargo:rustc-link-lib=static:-bundle={}",
            lib.trim_start_matches("-l")
        );
    }
    // zlib and zstd (LLVM's compression), static where -dev ships the
    // archive; libxml2 and Z3 are listed too but only parts port never
    // reaches use them, and the linker drops a library nothing needs.
    for word in run(&config, &["--link-static", "--system-libs"]).split_whitespace() {
        let name = match word.strip_prefix("-l") {
            Some(n) => n.to_string(),
            // A full path (Debian lists libz3.so so): unused, skipped.
            None => continue,
        };
        match name.as_str() {
            "xml2" | "z3" => continue,
            "z" | "zstd" => link_static_or_shared(&name),
            _ => println!("cargo:rustc-link-lib=dylib={name}"),
        }
    }
    link_static_or_shared("stdc++");
}

fn llvm_config() -> PathBuf {
    let prefix = std::env::var_os("LLVM_SYS_191_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-19"));
    let path = prefix.join("bin/llvm-config");
    if !path.is_file() {
        panic!(
            "LLVM 19 not found: {} does not exist (install Debian's llvm-19-dev, or set LLVM_SYS_191_PREFIX)",
            path.display()
        );
    }
    path
}

fn run(config: &Path, args: &[&str]) -> String {
    let out = Command::new(config)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", config.display()));
    if !out.status.success() {
        panic!(
            "{} {} failed: {}",
            config.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `lib{name}.a` where the C compiler (hence the linker) finds it.
fn archive(name: &str) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc)
        .arg(format!("-print-file-name=lib{name}.a"))
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (path.is_absolute() && path.is_file()).then_some(path)
}

/// Links `lib{name}.a` into the final binary (not copied into this rlib)
/// where the C compiler finds it, else the shared library.
fn link_static_or_shared(name: &str) {
    match archive(name).as_deref().and_then(Path::parent) {
        Some(dir) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static:-bundle={name}");
        }
        None => println!("cargo:rustc-link-lib=dylib={name}"),
    }
}
