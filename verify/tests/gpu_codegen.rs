//! PTX from port-codegen on a real GPU, against the host simulator.
//!
//! Gated: runs only with `PORT_GPU=1` (and then fails, rather than skips,
//! when no GPU can be used). Loads the PTX with cudarc, launches vector add,
//! saxpy over a strided view, the block-tree reduction, and a debug-mode
//! out-of-bounds kernel, and compares each with the simulator.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use port_codegen::ir::Module;
use port_codegen::{
    compile_ptx, kernel_abi, Arch, DebugRecord, PtxOptions, SimArg, SimArray, SimOptions,
    Simulator, ERROR_RECORD_LEN,
};

fn kernel(name: &str) -> Module {
    // $PORT_TEST_REPO: the GPU bundle's copy of the kernels (see common/mod.rs).
    let repo = std::env::var_os("PORT_TEST_REPO")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let path = repo
        .join("codegen/tests/kernels")
        .join(format!("{name}.pir"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    port_codegen::text::parse_module(&src).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The GPU, or `None` (with the reason printed) when the test is not asked for.
fn gpu() -> Option<(Arc<CudaContext>, Arch)> {
    if std::env::var("PORT_GPU").as_deref() != Ok("1") {
        eprintln!("skipped: set PORT_GPU=1 to run the GPU codegen test");
        return None;
    }
    // SAFETY: is_culib_present only tries to dlopen the driver library.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    assert!(
        present,
        "PORT_GPU=1 but libcuda.so cannot be loaded: install the NVIDIA driver or unset PORT_GPU"
    );
    // cudarc panics instead of failing in some no-driver cases; keep that a
    // test failure with a message.
    let ctx = std::panic::catch_unwind(|| CudaContext::new(0))
        .unwrap_or_else(|_| panic!("PORT_GPU=1 but creating a CUDA context panicked"))
        .unwrap_or_else(|e| panic!("PORT_GPU=1 but no CUDA context: {e:?}"));
    let (major, minor) = ctx.compute_capability().expect("compute capability");
    let arch = if major * 10 + minor >= 90 {
        Arch::parse("sm_90").expect("sm_90")
    } else {
        Arch::parse(&format!("sm_{major}{minor}"))
            .unwrap_or_else(|_| Arch::default_for_this_machine())
    };
    Some((ctx, arch))
}

fn load(
    ctx: &Arc<CudaContext>,
    m: &Module,
    arch: Arch,
    debug: bool,
    name: &str,
) -> cudarc::driver::CudaFunction {
    let opts = PtxOptions {
        arch,
        debug,
        ..PtxOptions::default()
    };
    let ptx = compile_ptx(m, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    let module = ctx
        .load_module(Ptx::from_src(ptx))
        .unwrap_or_else(|e| panic!("{name}: the driver rejected the PTX: {e:?}"));
    module
        .load_function(name)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn cfg(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn close(what: &str, gpu: &[f64], sim: &[f64], rtol: f64) {
    assert_eq!(gpu.len(), sim.len(), "{what}");
    for (i, (g, s)) in gpu.iter().zip(sim).enumerate() {
        assert!(
            (g - s).abs() <= rtol * s.abs() + 1e-30,
            "{what}[{i}]: GPU {g}, simulator {s}"
        );
    }
}

fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 1.0
        })
        .collect()
}

fn vector_add(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, arch: Arch) {
    let m = kernel("vector_add");
    assert_eq!(kernel_abi(&m.kernels[0], false).len(), 6);
    let n = 1_000_003usize;
    let a: Vec<f32> = data(n, 1).iter().map(|&v| v as f32).collect();
    let b: Vec<f32> = data(n, 2).iter().map(|&v| v as f32).collect();
    let f = load(ctx, &m, arch, false, "vector_add");
    let a_d = stream.clone_htod(&a).unwrap();
    let b_d = stream.clone_htod(&b).unwrap();
    let mut c_d = stream.alloc_zeros::<f32>(n).unwrap();
    let len = n as i64;
    let mut l = stream.launch_builder(&f);
    l.arg(&a_d)
        .arg(&len)
        .arg(&b_d)
        .arg(&len)
        .arg(&mut c_d)
        .arg(&len);
    // SAFETY: the arguments follow kernel_abi (pointer + shape per array)
    // and each buffer holds `len` elements.
    unsafe { l.launch(cfg(120, 256)) }.expect("launch vector_add");
    let c = stream.clone_dtoh(&c_d).unwrap();

    let mut args = vec![
        SimArg::Array(SimArray::new(a, &[n]).unwrap()),
        SimArg::Array(SimArray::new(b, &[n]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f32; n], &[n]).unwrap()),
    ];
    Simulator::new(&m, SimOptions::default())
        .unwrap()
        .launch("vector_add", 120, 256, &mut args)
        .unwrap();
    assert_eq!(c.as_slice(), args[2].as_array().unwrap().as_f32().unwrap());
}

fn saxpy(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, arch: Arch) {
    let m = kernel("saxpy");
    assert_eq!(kernel_abi(&m.kernels[0], false).len(), 6);
    let n = 300_001usize;
    let big: Vec<f32> = data(2 * n, 3).iter().map(|&v| v as f32).collect();
    let y: Vec<f32> = data(n, 4).iter().map(|&v| v as f32).collect();
    let a = 1.75f32;
    let f = load(ctx, &m, arch, false, "saxpy");
    let x_d = stream.clone_htod(&big).unwrap();
    let mut y_d = stream.clone_htod(&y).unwrap();
    let (len, stride) = (n as i64, 2i64);
    let mut l = stream.launch_builder(&f);
    l.arg(&a)
        .arg(&x_d)
        .arg(&len)
        .arg(&stride)
        .arg(&mut y_d)
        .arg(&len);
    // SAFETY: follows kernel_abi: a, x (pointer, shape, stride in elements),
    // y (pointer, shape); x's buffer holds 2n elements, so stride 2 stays inside.
    unsafe { l.launch(cfg(64, 128)) }.expect("launch saxpy");
    let got: Vec<f64> = stream
        .clone_dtoh(&y_d)
        .unwrap()
        .iter()
        .map(|&v| f64::from(v))
        .collect();

    let mut args = vec![
        SimArg::F32(a),
        SimArg::Array(SimArray::strided(big, &[n], &[2]).unwrap()),
        SimArg::Array(SimArray::new(y, &[n]).unwrap()),
    ];
    Simulator::new(&m, SimOptions::default())
        .unwrap()
        .launch("saxpy", 64, 128, &mut args)
        .unwrap();
    let want: Vec<f64> = args[2]
        .as_array()
        .unwrap()
        .as_f32()
        .unwrap()
        .iter()
        .map(|&v| f64::from(v))
        .collect();
    // The GPU may fuse a*x+y into one FMA (one rounding instead of two).
    close("saxpy y", &got, &want, 1e-6);
}

fn reduction(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, arch: Arch) {
    let m = kernel("reduction");
    let n = 2_000_000usize;
    let x = data(n, 5);
    let f = load(ctx, &m, arch, false, "reduction");
    let x_d = stream.clone_htod(&x).unwrap();
    let mut total_d = stream.alloc_zeros::<f64>(1).unwrap();
    let mut pos_d = stream.alloc_zeros::<i64>(1).unwrap();
    let (len, one) = (n as i64, 1i64);
    let mut l = stream.launch_builder(&f);
    l.arg(&x_d)
        .arg(&len)
        .arg(&mut total_d)
        .arg(&one)
        .arg(&mut pos_d)
        .arg(&one);
    // SAFETY: follows kernel_abi; 256 threads per block, as the kernel's
    // shared arrays expect.
    unsafe { l.launch(cfg(80, 256)) }.expect("launch reduction");
    let total = stream.clone_dtoh(&total_d).unwrap();
    let pos = stream.clone_dtoh(&pos_d).unwrap();

    let mut args = vec![
        SimArg::Array(SimArray::new(x, &[n]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f64], &[1]).unwrap()),
        SimArg::Array(SimArray::new(vec![0i64], &[1]).unwrap()),
    ];
    Simulator::new(&m, SimOptions::default())
        .unwrap()
        .launch("reduction", 80, 256, &mut args)
        .unwrap();
    assert_eq!(
        pos.as_slice(),
        args[2].as_array().unwrap().as_i64().unwrap()
    );
    // Same tree, but the blocks' atomics land in a different order.
    close(
        "total",
        &total,
        args[1].as_array().unwrap().as_f64().unwrap(),
        1e-10,
    );
}

fn debug_out_of_bounds(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, arch: Arch) {
    let m = port_codegen::text::parse_module(
        "kernel oob(x: f32[::1], out: f32[::1]) {
            let i: i32 = threadIdx.x + blockIdx.x * blockDim.x;
            out[i] = x[i] + 1.0f32;
        }",
    )
    .unwrap();
    assert_eq!(kernel_abi(&m.kernels[0], true).len(), 5);
    let f = load(ctx, &m, arch, true, "oob");
    let x_d = stream.clone_htod(&[1f32; 10]).unwrap();
    let mut out_d = stream.alloc_zeros::<f32>(11).unwrap();
    let mut err_d = stream.alloc_zeros::<u64>(ERROR_RECORD_LEN).unwrap();
    let (nx, nout) = (10i64, 11i64);
    let mut l = stream.launch_builder(&f);
    l.arg(&x_d)
        .arg(&nx)
        .arg(&mut out_d)
        .arg(&nout)
        .arg(&mut err_d);
    // SAFETY: follows kernel_abi in debug mode (the error record last, 10 × u64).
    unsafe { l.launch(cfg(1, 11)) }.expect("launch oob");
    let raw: [u64; ERROR_RECORD_LEN] = stream
        .clone_dtoh(&err_d)
        .unwrap()
        .try_into()
        .expect("record length");
    let record = DebugRecord::decode(&raw).expect("the GPU recorded an out-of-bounds access");

    let mut args = vec![
        SimArg::Array(SimArray::new(vec![1f32; 10], &[10]).unwrap()),
        SimArg::Array(SimArray::new(vec![0f32; 11], &[11]).unwrap()),
    ];
    let sim_err = Simulator::new(&m, SimOptions::DEBUG)
        .unwrap()
        .launch("oob", 1, 11, &mut args)
        .unwrap_err();
    assert_eq!(record.to_string(), sim_err.to_string());
    assert_eq!(
        record.to_string(),
        "IndexError: tid=[10,0,0] ctaid=[0,0,0]: index 10 is out of bounds for axis 0 with size 10"
    );
}

#[test]
fn gpu_matches_simulator() {
    let Some((ctx, arch)) = gpu() else { return };
    let stream = ctx.default_stream();
    vector_add(&ctx, &stream, arch);
    saxpy(&ctx, &stream, arch);
    reduction(&ctx, &stream, arch);
    debug_out_of_bounds(&ctx, &stream, arch);
}
