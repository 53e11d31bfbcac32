//! Helpers shared by the integration tests: the kernel files, the tools from
//! `.venv` (NumPy, ptxas), and NumPy reference runs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use port_codegen::ir::Module;

pub const KERNELS: [&str; 6] = [
    "vector_add",
    "saxpy",
    "elementwise_2d",
    "row_loop",
    "reduction",
    "device_call",
];

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("codegen/ sits in the workspace")
        .to_path_buf()
}

pub fn kernel_text(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kernels")
        .join(format!("{name}.pir"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn kernel_module(name: &str) -> Module {
    port_codegen::text::parse_module(&kernel_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const SETUP_HINT: &str = "run `scripts/setup.sh` (or `make test`) first: it creates .venv with numpy and nvidia-cuda-nvcc-cu12";

fn site_packages() -> Option<PathBuf> {
    let lib = workspace_root().join(".venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
        })
        .map(|p| p.join("site-packages"))
}

/// `$PORT_PTXAS`, else ptxas from `.venv`'s nvidia-cuda-nvcc-cu12. Missing
/// ptxas fails the test: CI runs the set-up first.
pub fn ptxas() -> PathBuf {
    if let Some(p) = std::env::var_os("PORT_PTXAS") {
        return PathBuf::from(p);
    }
    let p = site_packages().map(|s| s.join("nvidia/cuda_nvcc/bin/ptxas"));
    match p {
        Some(p) if p.is_file() => p,
        _ => panic!("ptxas not found (set PORT_PTXAS, or {SETUP_HINT})"),
    }
}

/// `$PORT_PYTHON`, else `.venv/bin/python`, which must have NumPy.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("PORT_PYTHON") {
        return PathBuf::from(p);
    }
    let p = workspace_root().join(".venv/bin/python");
    if !p.is_file() {
        panic!("no Python with NumPy at {} ({SETUP_HINT})", p.display());
    }
    p
}

/// Runs ptxas on `ptx`; returns its stderr on failure.
pub fn run_ptxas(ptx: &str, arch: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("k.ptx");
    std::fs::write(&src, ptx).expect("write ptx");
    let out = Command::new(ptxas())
        .arg(format!("-arch={arch}"))
        .arg(&src)
        .arg("-o")
        .arg(dir.path().join("k.cubin"))
        .output()
        .expect("run ptxas");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// An input array for a NumPy reference: its raw buffer and how Python
/// should view it.
pub struct RefArray<'a> {
    pub name: &'a str,
    pub bytes: Vec<u8>,
    pub dtype: &'a str,
    pub shape: Vec<usize>,
    pub view: Option<&'a str>,
}

pub fn ref_f32<'a>(
    name: &'a str,
    v: &[f32],
    shape: &[usize],
    view: Option<&'a str>,
) -> RefArray<'a> {
    RefArray {
        name,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        dtype: "<f4",
        shape: shape.to_vec(),
        view,
    }
}

pub fn ref_f64<'a>(
    name: &'a str,
    v: &[f64],
    shape: &[usize],
    view: Option<&'a str>,
) -> RefArray<'a> {
    RefArray {
        name,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        dtype: "<f8",
        shape: shape.to_vec(),
        view,
    }
}

/// Runs `tests/reference.py KERNEL` on the inputs; returns a reader of the
/// outputs.
pub fn numpy_reference(
    kernel: &str,
    arrays: &[RefArray<'_>],
    scalars: serde_json::Value,
) -> Outputs {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut meta = serde_json::Map::new();
    let mut arr = serde_json::Map::new();
    for a in arrays {
        let file = format!("{}.bin", a.name);
        std::fs::write(dir.path().join(&file), &a.bytes).expect("write input");
        let mut spec = serde_json::json!({"file": file, "dtype": a.dtype, "shape": a.shape});
        if let Some(v) = a.view {
            spec["view"] = serde_json::Value::from(v);
        }
        arr.insert(a.name.to_string(), spec);
    }
    meta.insert("arrays".into(), serde_json::Value::Object(arr));
    meta.insert("scalars".into(), scalars);
    std::fs::write(
        dir.path().join("meta.json"),
        serde_json::Value::Object(meta).to_string(),
    )
    .expect("write meta");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference.py");
    let out = Command::new(python())
        .arg(&script)
        .arg(kernel)
        .arg(dir.path())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "NumPy reference for {kernel} failed ({}):\n{}",
        SETUP_HINT,
        String::from_utf8_lossy(&out.stderr)
    );
    Outputs { dir }
}

pub struct Outputs {
    dir: tempfile::TempDir,
}

impl Outputs {
    fn bytes(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(format!("{name}.out"))).expect("reference output")
    }
    pub fn f32(&self, name: &str) -> Vec<f32> {
        self.bytes(name)
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    pub fn f64(&self, name: &str) -> Vec<f64> {
        self.bytes(name)
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    pub fn i32(&self, name: &str) -> Vec<i32> {
        self.bytes(name)
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    pub fn i64(&self, name: &str) -> Vec<i64> {
        self.bytes(name)
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

/// NumPy's `allclose`: |a - b| <= atol + rtol * |b|, element-wise.
pub fn assert_allclose<T: Into<f64> + Copy>(
    what: &str,
    got: &[T],
    want: &[T],
    rtol: f64,
    atol: f64,
) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w): (f64, f64) = (g.into(), w.into());
        assert!(
            (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan()),
            "{what}[{i}]: got {g}, NumPy says {w}"
        );
    }
}

/// A small deterministic generator (xorshift), so that the tests need no
/// random-number crate and always see the same data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn f32s(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi) as f32).collect()
    }
    pub fn f64s(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}
