//! In-process compile latency: IR text → PTX for each kernel of
//! codegen/tests/kernels/, first and median of N runs (milliseconds).
//!
//! `cargo run --release -p port-codegen --example bench_compile -- [ARCH] [N]`

use std::time::Instant;

use port_codegen::{compile_ptx, text, Arch, PtxOptions, SimOptions, Simulator};

const KERNELS: [&str; 6] = [
    "vector_add",
    "saxpy",
    "elementwise_2d",
    "row_loop",
    "reduction",
    "device_call",
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let arch = Arch::parse(&args.next().unwrap_or_else(|| "sm_80".into()))?;
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(21);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels");
    let opts = PtxOptions {
        arch,
        ..PtxOptions::default()
    };
    println!("kernel            ptx_first_ms  ptx_median_ms  sim_jit_median_ms");
    for name in KERNELS {
        let src = std::fs::read_to_string(dir.join(format!("{name}.pir")))?;
        let mut ptx_times = Vec::new();
        for _ in 0..n {
            let t = Instant::now();
            let m = text::parse_module(&src)?;
            let ptx = compile_ptx(&m, &opts)?;
            ptx_times.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(ptx.contains(".entry"));
        }
        let mut sim_times = Vec::new();
        for _ in 0..n.min(5) {
            let t = Instant::now();
            let m = text::parse_module(&src)?;
            let _sim = Simulator::new(&m, SimOptions::default())?;
            sim_times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "{name:<17} {:>12.1}  {:>13.1}  {:>17.1}",
            ptx_times[0],
            median(ptx_times.clone()),
            median(sim_times)
        );
    }
    Ok(())
}
