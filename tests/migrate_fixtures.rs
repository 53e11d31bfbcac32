//! `port migrate` end to end on every fixture of `fixtures/migrate/`: the
//! migration is verified on the simulator, the patch is written (`--write`),
//! and the emitted Numba-CUDA source is checked with real Numba (the oracle
//! venv): every kernel compiles with `numba.cuda.compile_ptx`, and under
//! Numba's CUDA simulator the patched function gives the original's results
//! (for every function with `PORT_CHECK_SIM=all`, `make test-sim`; for half
//! of them, a fixed sample, in `make test`: [`simulated_here`]).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fixture, migrate_in, one_json_document, repo, stderr, stdout};

/// Fixtures whose migrations are also called with arguments on the GPU
/// (a stand-in with `__cuda_array_interface__`), all of them and some.
const DEVICE_PATH_FIXTURES: &[&str] = &[
    "migrate/seeds.py",
    "migrate/kernels.py",
    "migrate/programs_linalg.py",
    "migrate/fusion.py",
];

/// The oracle venv's Python (numba + numba-cuda), made by `make test`.
/// A fresh folder holding `fixtures/migrate/{file}` under its own name.
fn fixture_copy(file: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(&format!("migrate/{file}")), tmp.path().join(file)).unwrap();
    tmp
}

fn oracle_python() -> PathBuf {
    let p = repo().join(".venv-oracle/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run make test (it installs the Numba oracle venv)",
        p.display()
    );
    p
}

/// `function` of `fixtures/migrate/{file}`, with no types given: typed from
/// its body (usage and annotations), it verifies with `signature`.
fn verified_from_body(file: &str, function: &str, signature: &str) {
    let tmp = fixture_copy(file);
    let o = migrate_in(tmp.path(), &[file, "--function", function, "--json"]);
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "verified", "{j}");
    assert_eq!(j["plan"]["signature"], signature, "{j}");
}

/// Migrates `function` of a copy of `file` with `--write --json`, asserts
/// it is verified on generated inputs, then checks the patched file with
/// real Numba.
fn verified(file: &str, function: &str, signature: &str, extra: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    verified_in(&tmp, file, function, signature, extra, "generated");
}

/// [`verified`] in `tmp`, on the inputs `expected` says (`--inputs` among
/// `extra` gives `given` ones); gives the migration's JSON.
fn verified_in(
    tmp: &tempfile::TempDir,
    file: &str,
    function: &str,
    signature: &str,
    extra: &[&str],
    expected: &str,
) -> serde_json::Value {
    let name = Path::new(file).file_name().unwrap().to_str().unwrap();
    let copy = tmp.path().join(name);
    std::fs::copy(fixture(file), &copy).unwrap();
    let mut args = vec![
        "--function",
        function,
        name,
        "--signature",
        signature,
        "--json",
        "--write",
    ];
    args.extend_from_slice(extra);
    let o = migrate_in(tmp.path(), &args);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{function}: exit {:?}\n{out}\n{}",
        o.status.code(),
        stderr(&o)
    );
    let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(j["schema"], "port.migration/1");
    assert_eq!(j["status"], "verified", "{out}");
    assert_eq!(j["verification"]["passed"], true);
    assert_eq!(j["verification"]["backend"], "simulator");
    assert_eq!(j["verification"]["inputs"], expected);
    assert!(!j["kernels"].as_array().unwrap().is_empty());
    for k in j["kernels"].as_array().unwrap() {
        let ptx = tmp.path().join(k["ptx"].as_str().unwrap());
        let text = std::fs::read_to_string(&ptx).unwrap();
        assert!(
            text.contains(&format!(".entry {}", k["name"].as_str().unwrap())),
            "{}",
            ptx.display()
        );
    }
    let patch = std::fs::read_to_string(tmp.path().join(j["patch"].as_str().unwrap())).unwrap();
    assert!(
        patch.starts_with(&format!("--- a/{name}\n+++ b/{name}\n")),
        "{patch}"
    );
    let backup = tmp.path().join(format!("{name}.port-bak"));
    assert_eq!(
        std::fs::read_to_string(&backup).unwrap(),
        std::fs::read_to_string(fixture(file)).unwrap(),
        "the backup holds the original"
    );
    let migration = tmp.path().join(format!(
        ".port/migrations/{}.json",
        function.replace('.', "_")
    ));
    patch_applies(tmp.path(), name, &backup, &patch);
    no_new_pyflakes_findings(tmp.path(), name, &backup);

    let oracle = oracle_python();
    let checker = repo().join("verify/tests/numba_check.py");
    let o = Command::new(&oracle)
        .arg(&checker)
        .args(["ptx".as_ref(), copy.as_os_str(), migration.as_os_str()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{function}: compile_ptx failed:\n{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    // The wrapper's GPU-argument paths run the simulator twice more: on
    // the fixtures of kernels of every shape, not on every one.
    let device_paths = DEVICE_PATH_FIXTURES.contains(&file);
    if !(device_paths || simulated_here(function)) {
        return j;
    }
    let o = Command::new(&oracle)
        .arg(&checker)
        .args([
            "sim".as_ref(),
            backup.as_os_str(),
            copy.as_os_str(),
            migration.as_os_str(),
        ])
        .args(device_paths.then_some("--device-paths"))
        .env("NUMBA_ENABLE_CUDASIM", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{function}: CUDA simulator check failed:\n{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    assert!(stdout(&o).contains("ok cudasim"));
    j
}

/// Whether this function's patched module also runs under Numba's CUDA
/// simulator in this test run: every one with `PORT_CHECK_SIM=all` (`make
/// test-sim`), else half of them, picked by a hash of the name that does
/// not change from run to run (`make test`: the simulator runs each thread
/// as a Python thread, and checking all took about half of the suite's
/// time). Every function's kernels are compiled by `compile_ptx` either way.
fn simulated_here(function: &str) -> bool {
    if std::env::var("PORT_CHECK_SIM").as_deref() == Ok("all") {
        return true;
    }
    // FNV-1a: the same sample on every machine and toolchain.
    let hash = function.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % 2 == 0
}

/// The `.diff` turns the original into exactly the file `--write` wrote,
/// with `patch -p1` and with `git apply`.
fn patch_applies(dir: &Path, name: &str, backup: &Path, diff: &str) {
    let written = std::fs::read_to_string(dir.join(name)).unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("fix.diff"), diff).unwrap();
    for tool in [
        &[
            "patch",
            "-p1",
            "--quiet",
            "--no-backup-if-mismatch",
            "-i",
            "fix.diff",
        ][..],
        &["git", "apply", "fix.diff"][..],
    ] {
        std::fs::copy(backup, work.path().join(name)).unwrap();
        let o = Command::new(tool[0])
            .args(&tool[1..])
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}{}",
            tool[0],
            stdout(&o),
            stderr(&o)
        );
        assert_eq!(
            std::fs::read_to_string(work.path().join(name)).unwrap(),
            written,
            "{} gives another file than --write",
            tool[0]
        );
    }
}

/// `ruff check --select F` (pyflakes: unused imports and names, undefined
/// names, redefinitions) finds nothing in the patched file that it does not
/// find in the original.
fn no_new_pyflakes_findings(dir: &Path, name: &str, backup: &Path) {
    let ruff = repo().join(".venv/bin/ruff");
    assert!(
        ruff.exists(),
        "{} is missing: run make test",
        ruff.display()
    );
    let findings = |file: &Path| -> Vec<String> {
        let o = Command::new(&ruff)
            .args([
                "check",
                "--select",
                "F",
                "--no-cache",
                "--output-format",
                "concise",
                "--quiet",
            ])
            .arg(file)
            .current_dir(dir)
            .output()
            .unwrap();
        let mut v: Vec<String> = stdout(&o)
            .lines()
            // `file:line:col: F401 …`: the finding without its place.
            .filter_map(|l| l.splitn(4, ':').nth(3).map(|m| m.trim().to_string()))
            .collect();
        v.sort();
        v
    };
    let before = findings(backup);
    let after = findings(&dir.join(name));
    let new: Vec<&String> = after.iter().filter(|f| !before.contains(f)).collect();
    assert!(new.is_empty(), "the patch adds pyflakes findings: {new:?}");
}

// The seeds.

#[test]
fn saxpy() {
    verified(
        "migrate/seeds.py",
        "saxpy",
        "float64, float64[:], float64[:], float64[:]",
        &[],
    );
}

#[test]
fn vector_add_float32() {
    verified(
        "migrate/seeds.py",
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
        &[],
    );
}

// The fuse pass: each verified against CPython on the simulator, and its
// one kernel under Numba's CUDA simulator.

fn kernels_of(j: &serde_json::Value) -> usize {
    j["kernels"].as_array().unwrap().len()
}

#[test]
fn fused_game_of_life() {
    let tmp = tempfile::tempdir().unwrap();
    let j = verified_in(
        &tmp,
        "migrate/fusion.py",
        "life",
        "int64[:, :]",
        &[],
        "generated",
    );
    assert_eq!(kernels_of(&j), 1, "{j}");
}

#[test]
fn fused_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let sig = "float64[:], float64[:], float64[:], float64[:]";
    let j = verified_in(&tmp, "migrate/fusion.py", "chain", sig, &[], "generated");
    assert_eq!(kernels_of(&j), 1, "{j}");
}

#[test]
fn unfused_shifted_reuse() {
    let tmp = tempfile::tempdir().unwrap();
    let sig = "float64[:], float64[:], float64[:]";
    let j = verified_in(
        &tmp,
        "migrate/fusion.py",
        "shifted_reuse",
        sig,
        &[],
        "generated",
    );
    assert_eq!(kernels_of(&j), 2, "{j}");
}

#[test]
fn fused_smooth_then_scale() {
    let tmp = tempfile::tempdir().unwrap();
    let sig = "float64[:], float64[:]";
    let j = verified_in(
        &tmp,
        "migrate/fusion.py",
        "smooth_then_scale",
        sig,
        &[],
        "generated",
    );
    assert_eq!(kernels_of(&j), 1, "{j}");
}

#[test]
fn hypot_scalar_function() {
    verified("migrate/seeds.py", "hypot", "float64, float64", &[]);
}

#[test]
fn gaussian_pdf_over_an_array() {
    verified(
        "migrate/seeds.py",
        "gaussian_pdf",
        "float64[:], float64, float64",
        &[],
    );
}

#[test]
fn polar_distance_calls_a_device_function() {
    verified(
        "migrate/seeds.py",
        "polar_distance",
        "float64[:], float64[:], float64[:], float64[:]",
        &[],
    );
}

#[test]
fn normalize_rows() {
    verified("migrate/seeds.py", "normalize", "float64[:, :]", &[]);
}

#[test]
fn go_fast_two_kernels() {
    verified("migrate/seeds.py", "go_fast", "float64[:, :]", &[]);
}

// Softmax, stencils, matmul.

#[test]
fn softmax_rows() {
    verified("migrate/kernels.py", "softmax_rows", "float64[:, :]", &[]);
}

#[test]
fn stencil_1d() {
    verified(
        "migrate/kernels.py",
        "stencil_1d",
        "float64[:], float64[:]",
        &[],
    );
}

#[test]
fn stencil_2d() {
    verified(
        "migrate/kernels.py",
        "stencil_2d",
        "float64[:, :], float64[:, :]",
        &[],
    );
}

#[test]
fn matmul_triple_loop() {
    verified(
        "migrate/kernels.py",
        "matmul",
        "float64[:, :], float64[:, :], float64[:, :]",
        &[],
    );
}

// Beyond the issue's list: generality.

#[test]
fn distance_matrix() {
    verified(
        "migrate/general.py",
        "distance_matrix",
        "float64[:], float64[:], float64[:, :]",
        &[],
    );
}

#[test]
fn clipped_relu() {
    verified(
        "migrate/general.py",
        "clipped_relu",
        "float64[:], float64",
        &[],
    );
}

#[test]
fn dot_reduction_returns_a_scalar() {
    verified("migrate/general.py", "dot", "float64[:], float64[:]", &[]);
}

#[test]
fn variance_two_reductions() {
    verified("migrate/general.py", "variance", "float64[:]", &[]);
}

#[test]
fn row_norms() {
    verified("migrate/general.py", "row_norms", "float64[:, :]", &[]);
}

#[test]
fn max_abs_two_stage_reduction() {
    verified("migrate/general.py", "max_abs", "float64[:]", &[]);
}

#[test]
fn leaky_relu_float32_2d() {
    verified("migrate/general.py", "leaky_relu", "float32[:, :]", &[]);
}

#[test]
fn axpy_on_slices() {
    verified(
        "migrate/general.py",
        "axpy_slices",
        "float64, float64[:], float64[:]",
        &[],
    );
}

#[test]
fn logistic_with_a_branch() {
    verified(
        "migrate/general.py",
        "logistic",
        "float64[:], float64[:]",
        &[],
    );
}

#[test]
fn mandel_early_return() {
    verified(
        "migrate/general.py",
        "mandel",
        "float64, float64, int64",
        &[],
    );
}

#[test]
fn col_center_column_views() {
    verified("migrate/general.py", "col_center", "float64[:, :]", &[]);
}

// --fp32.

#[test]
fn fp32_normalize() {
    verified(
        "migrate/seeds.py",
        "normalize",
        "float64[:, :]",
        &["--fp32"],
    );
}

#[test]
fn fp32_go_fast() {
    verified("migrate/seeds.py", "go_fast", "float64[:, :]", &["--fp32"]);
}

// Whole array programs (fixtures/migrate/programs.py): host schedules that
// launch kernels — time loops, sweeps, convergence loops, offset slices,
// broadcasting, axis reductions, `@`.

macro_rules! program {
    ($($name:ident: $sig:literal,)*) => {
        $(
            #[test]
            fn $name() {
                verified("migrate/programs.py", stringify!($name), $sig, &[]);
            }
        )*
    };
}

mod programs {
    use super::verified;

    program! {
        heat_1d: "float64[:], int64, float64",
        diffusion_1d: "float64[:], int64, float64, float64, float64",
        burgers_1d: "float64[:], int64, float64, float64, float64",
        jacobi_1d: "float64[:], float64[:], int64",
        jacobi_2d: "float64[:,:], float64[:,:], int64",
        heat_3d: "float64[:,:,:], float64[:,:,:], int64",
        convection_2d: "float64[:,:], int64, float64, float64, float64, float64",
        burgers_2d: "float64[:,:], float64[:,:], int64, float64, float64, float64, float64",
        wave_1d: "float64[:], float64[:], float64, int64",
        ping_pong: "float64[:], int64",
        fdtd_2d: "int64, float64[:,:], float64[:,:], float64[:,:], float64[:]",
        heat_1d_float32: "float32[:], int64, float32",
        laplace_2d: "float64[:,:], float64, float64, float64, float64",
        poisson_pressure: "float64[:,:], float64[:,:], float64, float64, int64",
        relax_until: "float64[:,:], float64, int64",
        smooth_to_tolerance: "float64[:], float64",
        line_sweep: "float64[:,:], int64",
        column_march: "float64[:,:], float64[:,:], float64, float64, float64",
        advect_pair: "float64[:,:], float64[:,:], int64",
        softmax: "float64[:,:]",
        softmax_3d: "float32[:,:,:]",
        layer_norm: "float64[:,:], float64[:], float64[:], float64",
        standardize_columns: "float64[:,:]",
        zscore: "float64[:]",
        column_argmax: "float64[:,:]",
        rows_with_negatives: "float64[:,:]",
        frobenius_per_slice: "float64[:,:,:]",
        asian_payoff: "float64[:,:], float64",
        gemm: "float64, float64, float64[:,:], float64[:,:], float64[:,:]",
        gemver: "float64, float64, float64[:,:], float64[:], float64[:], float64[:], float64[:], float64[:], float64[:], float64[:], float64[:]",
        atax: "float64[:,:], float64[:]",
        bicg: "float64[:,:], float64[:], float64[:]",
        mvt: "float64[:], float64[:], float64[:], float64[:], float64[:,:]",
        two_mm: "float64, float64, float64[:,:], float64[:,:], float64[:,:], float64[:,:]",
        covariance: "float64[:,:], float64",
        dense_relu: "float64[:,:], float64[:,:], float64[:]",
        mlp2: "float64[:,:], float64[:,:], float64[:], float64[:,:], float64[:]",
        attention: "float32[:,:], float32[:,:], float32[:,:]",
        power_iteration: "float64[:,:], float64[:], int64",
        rank_one_update: "float64[:,:], float64[:], float64[:], float64",
        nbody_accel: "float64[:,:], float64[:], float64",
        nbody_steps: "float64[:,:], float64[:,:], float64[:], float64, int64",
        arc_distance: "float64[:], float64[:], float64[:], float64[:]",
        pairwise_distances: "float64[:], float64[:]",
        conv2d_valid: "float64[:,:], float64[:,:]",
        box_blur: "float64[:,:], int64",
        sobel_magnitude: "float64[:,:]",
        grayscale: "float64[:,:,:]",
        game_of_life: "int64[:,:], int64",
        xorshift_rounds: "int64[:], int64",
        parity_bits: "int32[:]",
        sine_table: "int64, float64",
        grid_function: "int64",
        shifted_identity: "float64[:,:]",
        pair_sums: "float64[:]",
        mirrored_difference: "float64[:,:]",
        axes_swapped: "float64[:,:,:]",
        countdown: "int64",
        softmax_4d: "float32[:,:,:,:]",
        batch_norm_4d: "float64[:,:,:,:], float64",
        conv2d_nhwc: "float64[:,:,:,:], float64[:,:,:,:], float64[:]",
        like_dtype: "float32[:], int64",
        masks: "float64[:], float64[:]",
        clamp_small: "float64[:], float64[:]",
        corners: "float64[:,:]",
        symmetric_gram: "float64[:,:]",
        batched_attention: "float64[:,:,:], float64[:,:,:], float64[:,:,:]",
        project_channels: "float32[:,:,:,:], float32[:,:]",
        row_normalize: "float64[:,:]",
        radial_profile: "float64[:], float64[:], int64",
        positive_stats: "float64[:]",
        running_totals: "float64[:], float64[:,:]",
        empirical_cdf: "int64[:]",
        trapezoid_integral: "float64[:], float64",
        csr_matvec: "int64[:], int64[:], float64[:], float64[:]",
        permute_columns: "float64[:,:], int64[:]",
        lookup_table: "float64[:], int64[:]",
        center_on_first_column: "float64[:,:], int64",
        kick_drift: "float64[:,:], float64[:,:], float64",
        column_recursive_blur: "float32[:,:,:], float64",
        column_workspace: "float64[:,:], float64[:,:], float64",
        despike_signal: "float64[:], float64, int64",
        softened_inverse_distance: "float64[:,:]",
        escape_time_real: "float64, float64, float64, float64, int64, int64, int64, float64",
        distance_map: "int64, int64, float64, float64",
        gaussian_window_3d: "int64, float64",
        sample_plane: "int64, float64",
        ogrid_stencil_3d: "float64[:,:,:], float64[:,:,:], int64",
        neighbour_average: "float64[:,:], int64[:,:,:]",
        energy_history: "float64[:,:], float64[:,:], float64[:], float64, float64, int64",
        scale_by_pivot_columns: "float64[:,:], float64[:,:]",
    }

    /// `a[m] = b[m2]` through another mask has no element-by-element
    /// meaning: refused, naming the selection, the assignment's mask and
    /// the line.
    #[test]
    fn a_masked_assignment_from_another_mask_is_refused() {
        let tmp = crate::fixture_copy("programs.py");
        let o = crate::migrate_in(
            tmp.path(),
            &[
                "--function",
                "fill_from_another_mask",
                "programs.py",
                "--signature",
                "float64[:], float64[:]",
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", crate::stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&crate::stdout(&o)).expect("JSON");
        assert_eq!(j["status"], "refused");
        let r = &j["reasons"][0];
        let text = std::fs::read_to_string(crate::fixture("migrate/programs.py")).unwrap();
        let line = text
            .lines()
            .position(|l| l.trim() == "a[a > 0] = b[b > 0]")
            .unwrap()
            + 1;
        assert_eq!(r["line"], line, "{r}");
        let m = r["message"].as_str().unwrap();
        assert!(
            m.contains("`b[b > 0]` selects through another mask") && m.contains("`[a > 0]`"),
            "{r}"
        );
    }
}

/// float32 Levinson-Durbin is sensitive to rounding: the kernels' tree
/// sums differ from NumPy's float32 answer past any fixed tolerance, and
/// both are judged against a float64 run of the original instead. (48
/// elements: a host loop over them around kernels over them, 48² loop
/// iterations.)
#[test]
fn levinson_durbin_float32_against_a_float64_run() {
    verified(
        "migrate/programs.py",
        "levinson_durbin",
        "float32[:]",
        &["--size", "2304"],
    );
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/programs.py"), tmp.path().join("p.py")).unwrap();
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "levinson_durbin",
            "p.py",
            "--signature",
            "float32[:]",
            "--size",
            "2304",
            "--json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let c = &j["verification"]["float32_exact"];
    assert_eq!(c["passed"], true, "{j}");
    assert!(c["elementwise"].as_str().unwrap().contains("return value"));
    let (ours, theirs) = (
        c["ours_err"].as_f64().unwrap(),
        c["original_err"].as_f64().unwrap(),
    );
    assert!(ours > 0.0 && ours <= 10.0 * theirs, "{c}");
    // Machines read what decided too: the errors beside it are against
    // the original's own float32 results.
    assert!(
        j["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("float32: passed against a float64 run of the original"),
        "{j}"
    );
}

/// Krylov solvers rebind their vectors every iteration (`x = x + a * p`,
/// `p = r`, `p = v = np.zeros_like(b)`): names are bound to device arrays
/// at run time. Small systems keep the host loop short.
#[test]
fn krylov_solvers_rebind_vectors() {
    verified(
        "migrate/programs.py",
        "steepest_descent",
        "float64[:,:], float64[:], float64[:], int64, float64",
        &["--size", "32"],
    );
    verified(
        "migrate/programs.py",
        "bicgstab_spd",
        "float64[:,:], float64[:], int64",
        &["--size", "32"],
    );
}

/// `np.cumsum` over 20 000 elements is a chunked parallel scan: chunk
/// totals, their prefixes, then each chunk scanned from its prefix. The
/// sums associate differently from NumPy's sequential running sum, so the
/// results agree to rounding, not bit for bit.
#[test]
fn cumsum_is_a_chunked_parallel_scan() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("migrate/programs.py"), tmp.path().join("p.py")).unwrap();
    let made = Command::new(repo().join(".venv/bin/python"))
        .current_dir(tmp.path())
        .args([
            "-c",
            "import numpy as np; np.savez('y.npz', y=np.random.default_rng(7).random(20000), dx=np.float64(0.5))",
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let o = migrate_in(
        tmp.path(),
        &[
            "--function",
            "trapezoid_integral",
            "p.py",
            "--signature",
            "float64[:], float64",
            "--inputs",
            "y.npz",
            "--json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(j["status"], "verified", "{j}");
    let launched: Vec<&str> = j["launches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["kernel"].as_str().unwrap())
        .collect();
    for k in [
        "trapezoid_integral_cumsum_chunks",
        "trapezoid_integral_cumsum_prefix",
        "trapezoid_integral_cumsum",
    ] {
        assert!(launched.contains(&k), "{launched:?}");
    }
    let err = j["verification"]["max_rel_err"].as_f64().unwrap();
    assert!(err > 0.0 && err < 1e-12, "{err}");
}

/// A host loop of `n` iterations runs `n` times a few launches on the
/// simulator: small inputs keep it quick.
#[test]
fn levinson_durbin_host_reads_elements() {
    verified(
        "migrate/programs.py",
        "levinson_durbin",
        "float64[:]",
        &["--size", "48"],
    );
}

// Programs that call their own helpers (fixtures/migrate/programs_helpers.py):
// the helpers are inlined into the host schedule.

macro_rules! helper_program {
    ($($name:ident: $sig:literal $(, $extra:literal)*;)*) => {
        $(
            #[test]
            fn $name() {
                verified("migrate/programs_helpers.py", stringify!($name), $sig, &[$($extra),*]);
            }
        )*
    };
}

mod helpers {
    use super::{fixture_copy, migrate_in, stdout, verified};

    helper_program! {
        mlp: "float64[:,:], float64[:,:], float64[:], float64[:,:], float64[:], float64[:,:], float64[:], float64[:,:]";
        cavity_flow: "int64, float64[:,:], float64[:,:], float64[:,:], float64, float64, float64, float64, float64", "--size", "16";
        basic_block: "float64[:,:,:,:], float64[:,:,:,:], float64[:,:,:,:]";
        normalize_pair: "float64[:], float64[:]";
        leapfrog: "float64[:], float64[:], int64", "--size", "16";
        clip_both: "float64[:], float64[:], float64";
        gated_layers: "float64[:,:], float64[:,:], float64[:,:]";
        damped_sweeps: "float64[:], int64";
    }

    /// The emitted wrapper prints the inlined bodies in place, each after a
    /// comment naming the helper and the call site.
    #[test]
    fn the_wrapper_names_each_inlined_helper() {
        let (tmp, _, j) = helper_migration(
            "mlp",
            "float64[:,:], float64[:,:], float64[:], float64[:,:], float64[:], float64[:,:], float64[:], float64[:,:]",
        );
        assert_eq!(j["status"], "verified", "{j}");
        let diff = std::fs::read_to_string(tmp.path().join(j["patch"].as_str().unwrap())).unwrap();
        for c in [
            "# inlined `relu` (line 16), called at line 29",
            "# inlined `relu` (line 16), called at line 30",
            "# inlined `softmax` (line 20), called at line 31",
        ] {
            assert!(diff.contains(c), "{c}\n{diff}");
        }
        // A kernel of a helper's line says whose line it is; one of the
        // caller's line (the argument `x @ w1 + b1`) does not.
        assert!(
            diff.contains("Line 22 of `softmax` (inlined into `mlp`): `max` along axis 1."),
            "{diff}"
        );
        assert!(!diff.contains("Line 29 of `relu`"), "{diff}");
        // The helper's temporaries have names of their own.
        assert!(diff.contains("softmax1_tmp_out"), "{diff}");
    }

    /// `port migrate --json` of `function` in a copy of `programs_helpers.py`:
    /// the folder (kept alive for the patch), the process and its JSON.
    fn helper_migration(
        function: &str,
        signature: &str,
    ) -> (tempfile::TempDir, std::process::Output, serde_json::Value) {
        let file = "programs_helpers.py";
        let tmp = fixture_copy(file);
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                function,
                file,
                "--signature",
                signature,
                "--json",
            ],
        );
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        (tmp, o, j)
    }

    /// The first reason `port migrate --json` gives for `function`.
    fn first_refusal(function: &str, signature: &str) -> serde_json::Value {
        let (_tmp, o, j) = helper_migration(function, signature);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        assert_eq!(j["status"], "refused");
        j["reasons"][0].clone()
    }

    /// An early `return` inside a helper's loop, and a helper that calls
    /// itself, cannot be inlined: each refusal names the call site and the
    /// helper's line.
    #[test]
    fn early_returns_and_recursion_in_helpers_are_refused_at_the_call_site() {
        let r = first_refusal("weigh_by_sign", "float64[:]");
        assert_eq!(r["line"], 205, "{r}");
        let msg = r["message"].as_str().unwrap();
        assert!(
            msg.starts_with(
                "in `negative_weight` (called at line 205), line 200: an early `return`"
            ),
            "{msg}"
        );
        let r = first_refusal("halvings", "float64[:], int64");
        assert_eq!(r["line"], 216, "{r}");
        let msg = r["message"].as_str().unwrap();
        assert!(
            msg.starts_with("in `halve_until_small` (called at line 216), line 210: `halve_until_small` calls itself (recursion)"),
            "{msg}"
        );
    }

    /// A helper whose loop is a recurrence: the refusal names the call site
    /// in the migrated function and the helper's own line, in the user's
    /// names (not the renamed ones).
    #[test]
    fn refusal_inside_a_helper_names_the_call_site_and_the_helper_line() {
        let (_tmp, o, j) = helper_migration("smooth_and_total", "float64[:]");
        assert!(!o.status.success());
        assert_eq!(j["status"], "refused");
        let first = &j["reasons"][0];
        assert_eq!(first["line"], 177, "{first}");
        let msg = first["message"].as_str().unwrap();
        assert!(
            msg.starts_with("in `running_total` (called at line 177), line 171: "),
            "{msg}"
        );
        assert!(msg.contains("`s[i-1]`"), "{msg}");
        assert!(!msg.contains("running_total1_"), "{msg}");
    }
}

/// Like [`program!`], for the functions of another fixture file.
macro_rules! program_in {
    ($file:literal; $($name:ident: $sig:literal,)*) => {
        $(
            #[test]
            fn $name() {
                verified($file, stringify!($name), $sig, &[]);
            }
        )*
    };
}

/// Helpers written with calls Python and NumPy define (`np.append`, `pow`)
/// and with Numba's `type(x)(v)` cast, inlined into the function migrated
/// (fixtures/migrate/helpers_defined.py): each was refused ("calls
/// `np.append`", "calls `type(scale)`") while only the planned function's
/// own body was desugared.
mod helpers_defined {
    use super::verified;

    program_in! {
        "migrate/helpers_defined.py";
        emphasised_energy: "float64[:], float64",
        squared_sums: "float64[:], float64[:]",
        normal_cdf: "float64[:], float64, float64",
        halves: "float32[:], float32[:]",
    }
}

/// Order statistics between kernels (fixtures/migrate/order_stats.py):
/// `np.sort` and `np.median` as library steps of the host schedule, with
/// NumPy's NaNs, axes and result types.
mod order_stats {
    use super::{fixture_copy, migrate_in, precision::make_inputs, stdout, verified, verified_in};

    program_in! {
        "migrate/order_stats.py";
        robust_scale: "float64[:]",
        trimmed_mean: "float64[:], int64",
        row_centred: "float64[:,:]",
        gini: "float64[:]",
        column_spread: "float32[:,:]",
        above_median: "int64[:]",
        spread_of_sorted_rows: "float64[:,:]",
        lorenz_points: "float64[:]",
        largest_first: "float64[:], float64",
    }

    /// A NaN among the values makes the median NaN, as NumPy's is; the
    /// sort puts it last. On the program's own inputs (`--inputs`).
    #[test]
    fn a_nan_makes_the_median_nan_and_sorts_last() {
        let tmp = tempfile::tempdir().unwrap();
        make_inputs(
            tmp.path(),
            "x = rng.random(500)\nx[7] = np.nan\nnp.savez('nan.npz', x=x)\n\
             a = rng.random((40, 9)).astype(np.float32)\na[3, 2] = np.nan\nnp.savez('col.npz', a=a)",
        );
        for (function, sig, npz) in [
            ("robust_scale", "float64[:]", "nan.npz"),
            ("column_spread", "float32[:,:]", "col.npz"),
        ] {
            let j = verified_in(
                &tmp,
                "migrate/order_stats.py",
                function,
                sig,
                &["--inputs", npz],
                "given",
            );
            let sort = j["rewrites"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["rewrite"] == "sort")
                .unwrap();
            assert_eq!(sort["applied"], true, "{j}");
        }
    }

    /// What port does not sort, each refused with its reason.
    #[test]
    fn what_it_does_not_sort_is_refused_with_its_reason() {
        let tmp = fixture_copy("order_stats.py");
        let extra = "\n\ndef complex_sorted(z):\n    return np.sort(z) * 2\n\n\
                     def median_in_place(x):\n    return x - np.median(x, overwrite_input=True)\n\n\
                     def sorted_rows_in_a_loop(a, out):\n    for i in range(a.shape[0]):\n        out[i] = np.sort(a[i]) * 2\n";
        let file = tmp.path().join("order_stats.py");
        let text = std::fs::read_to_string(&file).unwrap() + extra;
        std::fs::write(&file, text).unwrap();
        for (function, sig, want) in [
            (
                "complex_sorted",
                "complex128[:]",
                "NumPy orders complex values by real, then imaginary part",
            ),
            (
                "median_in_place",
                "float64[:]",
                "keyword `overwrite_input` of `np.median` is not supported here",
            ),
            (
                "sorted_rows_in_a_loop",
                "float64[:,:], float64[:,:]",
                "`np.sort` inside a parallel loop",
            ),
        ] {
            let o = migrate_in(
                tmp.path(),
                &[
                    "order_stats.py",
                    "--function",
                    function,
                    "--signature",
                    sig,
                    "--json",
                ],
            );
            let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert_eq!(j["status"], "refused", "{function}: {j}");
            let why = j["reasons"][0]["message"].as_str().unwrap();
            assert!(why.contains(want), "{function}: {why}");
            assert_eq!(j["reasons"][0]["rewrite"], "sort", "{function}: {j}");
        }
    }

    /// Typed from the body alone: `np.sort`'s result is its operand's
    /// type, `np.median`'s a float; what `np.sort` is given, under a sign
    /// too, is an array.
    #[test]
    fn typed_from_the_body() {
        super::verified_from_body("order_stats.py", "gini", "float64[:]");
        super::verified_from_body("order_stats.py", "largest_first", "float64[:], float64");
    }
}

/// Annotated parameters, migrated with no types given
/// (fixtures/migrate/annotated.py): the annotation says array or number
/// where the body cannot, and an `NDArray`'s element type.
mod annotated {
    fn typed_by_annotations(function: &str, signature: &str) {
        super::verified_from_body("annotated.py", function, signature);
    }

    #[test]
    fn an_array_annotation_reaches_a_helper_through_a_local() {
        typed_by_annotations("shifted_erf", "float64[:], float64, float64");
    }

    #[test]
    fn ndarray_element_types_and_string_annotations() {
        typed_by_annotations("weighted_counts", "int64[:], float64");
    }

    #[test]
    fn an_alias_of_type_p_gives_a_dtype() {
        typed_by_annotations("log_weights", "float64[:], float64[:], float64");
    }
}

/// Ordinary code taken by a general rule (fixtures/migrate/general_rules.py):
/// names imported from NumPy and math, a ufunc's `out` given positionally,
/// a lambda bound to a name, a flat index `i * width + j` over rows,
/// `np.arange` with float bounds, `scipy.special` functions, lists of
/// known length, indices computed at run time that go negative, flags
/// given as ints, type limits, a name rebound in both branches of an `if`,
/// helpers that return early, `np.meshgrid`, arrays unpacked into names,
/// parameters specialised to the constant a signature gives them, a
/// reduction's `dtype=`, `isinstance` and `np.isscalar` decided by type, `np.shape` and
/// `np.squeeze`, elementwise functions of a mask selection, `np.signbit`,
/// a procedure's bare `return`s (one inside its loop), `w is None` of an
/// int `w`, module constants that are `np.finfo` limits, builtin
/// `max`/`min`/`sum` of a list written out, `np.count_nonzero`, `np.nansum`,
/// built-in `sum`, `max` and `min` of arrays, ranks that einsum terms and
/// axis permutations spell out, `a.shape != b.shape`.
mod general_rules {
    use super::{verified, verified_from_body};

    program_in! {
        "migrate/general_rules.py";
        gaussian_profile: "float64[:], float64",
        normal_cdf: "float64[:], float64[:]",
        accumulate_in_place: "float64[:, :], float64[:, :], float64",
        smooth_relu: "float32[:]",
        scale_flat_rows: "float64[:], int64, int64, float64",
        damped_ramp: "float64[:], float64, float64",
        rgb_luma: "float64[:, :], float64[:]",
        periodic_difference: "float64[:], float64[:]",
        trailing_window: "float64[:], float64[:]",
        previous_row: "float64[:, :], float64[:, :]",
        squared_distance: "float64[:], float64[:], float64[:]",
        column_shares: "float64[:, :]",
        log_ratio_floor: "float32[:], float64[:], float64[:]",
        weighted_mean_f32: "float64[:], float64[:]",
        signed_power: "float64[:], float64",
        centred_mean: "float64[:], float64",
        radial_field: "float64[:], float64[:]",
        pairwise_min: "float32[:], float32[:]",
        table_ij: "float64[:], float64[:]",
        relative_gap: "float64[:], float64[:], 'l2', None",
        column_skill: "float32[:, :], float32[:, :]",
        as_array_scaled: "float64[:], float64",
        squeezed_energy: "float64[:], float64",
        pair_energy: "float64[:], float64",
        bucket_counts: "float64[:], float64",
        minutes_and_rest: "float64[:], float64",
        gamma_weighted_total: "float64[:], float64",
        softplus_rows: "float64[:], float64",
        radii_and_quadrants: "float64[:], float64[:]",
        halved_offsets: "int64, float64[:]",
        sign_changes: "float64[:]",
        relax_until_unstable: "float64[:], float64[:], int64",
        predict_state: "float64[:], float64[:, :], float64[:], float64",
        rolling_mean: "float64[:], int64",
        safe_ratio: "float32[:], float32[:], float32[:]",
        widest_swing: "float64[:], float64[:]",
        active_share: "float64[:, :], float64",
        builtin_totals: "int8[:], float64[:, :]",
        value_range: "float64[:], int32[:]",
        matched_matrices: "float64[:, :], float64[:, :]",
    }

    /// Returns from an `if` nested in another `if`'s `else`, followed by
    /// more statements and a final `return`: each path returns once, the
    /// early one included (`v == lo` for both 0.5s of these inputs).
    #[test]
    fn split_at_bounds_returns_from_a_nested_branch() {
        let tmp = tempfile::tempdir().unwrap();
        super::precision::make_inputs(
            tmp.path(),
            "np.savez('inputs.npz', v=np.array([0.5, 2.0, -1.0, 0.75, 3.0, 0.5, 1.9]), lo=0.5, hi=2.0)",
        );
        let j = super::verified_in(
            &tmp,
            "migrate/general_rules.py",
            "split_at_bounds",
            "float64[:], float64, float64",
            &["--inputs", "inputs.npz"],
            "given",
        );
        assert_eq!(j["status"], "verified", "{j}");
    }

    /// `np.nansum` counts each NaN as zero (NumPy's definition, desugared
    /// to `np.sum(np.where(np.isnan(x), 0, x))`). It was a plain sum, which
    /// verified on inputs without a NaN and gave NaN on a call with one.
    #[test]
    fn nansum_counts_each_nan_as_zero() {
        let tmp = tempfile::tempdir().unwrap();
        super::precision::make_inputs(
            tmp.path(),
            "x = rng.standard_normal((40, 5)); x[3, 1] = np.nan; x[::7, 4] = np.nan\n\
             np.savez('inputs.npz', x=x)",
        );
        let j = super::verified_in(
            &tmp,
            "migrate/general_rules.py",
            "nan_totals",
            "float64[:, :]",
            &["--inputs", "inputs.npz"],
            "given",
        );
        assert_eq!(j["status"], "verified", "{j}");
    }

    /// Python's `max(x)` of a vector passes over a NaN that is not first
    /// (`y > best` is false), where `np.max` gives NaN: on a series with
    /// NaNs inside, the range is the range of the other values.
    #[test]
    fn builtin_max_of_a_vector_passes_over_a_later_nan() {
        let tmp = tempfile::tempdir().unwrap();
        super::precision::make_inputs(
            tmp.path(),
            "s = rng.standard_normal(300); s[5] = np.nan; s[200] = np.nan\n\
             np.savez('inputs.npz', series=s, counts=rng.integers(-9, 9, 50, dtype=np.int32))",
        );
        let j = super::verified_in(
            &tmp,
            "migrate/general_rules.py",
            "value_range",
            "float64[:], int32[:]",
            &["--inputs", "inputs.npz"],
            "given",
        );
        assert_eq!(j["status"], "verified", "{j}");
    }

    /// `assert isinstance(r, tuple)` of an array fails on every call: a
    /// refusal that says so, not a plan whose verification the original's
    /// exception fails.
    #[test]
    fn an_assert_that_always_fails_is_refused() {
        let tmp = super::fixture_copy("general_rules.py");
        let o = super::migrate_in(
            tmp.path(),
            &[
                "general_rules.py",
                "--function",
                "needs_a_pair",
                "--signature",
                "float64[:], float64[:]",
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", super::stdout(&o));
        let j: serde_json::Value = serde_json::from_str(&super::stdout(&o)).unwrap();
        assert_eq!(j["status"], "refused", "{j}");
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`assert isinstance(r, tuple)` fails for arguments of these types"),
            "{msg}"
        );
    }

    /// With no types given, `homogeneous(v, w=1.0, dtype=None)` is typed
    /// from its body, and `dtype`, passed through as NumPy's `dtype=`, is
    /// left to its default: the plan verifies (typed as a number, the
    /// original raised on the generated inputs).
    #[test]
    fn a_dtype_parameter_is_left_to_its_default() {
        verified_from_body("general_rules.py", "homogeneous", "float64[:], float64");
    }

    /// `rows, cols = np.shape(table)` types `table` as a matrix when no
    /// types are given, as `table.shape` does (read as a vector before, the
    /// plan was refused: "unpacking the wrong number of values").
    #[test]
    fn np_shape_unpacked_gives_the_rank() {
        verified_from_body("general_rules.py", "column_weights", "float64[:, :], int64");
    }

    /// With no types given, ranks spelled out by the body: one per letter
    /// of each einsum term, one per axis of a permutation, more than
    /// `swapaxes`' larger axis (typed as vectors before, each was refused:
    /// "axis 2 is out of bounds", "`a` is not an array of 3 dimensions").
    #[test]
    fn einsum_terms_and_axis_permutations_give_ranks() {
        verified_from_body(
            "general_rules.py",
            "stacked_products",
            "float64[:, :, :], float64[:, :, :]",
        );
        verified_from_body(
            "general_rules.py",
            "swap_last_axes",
            "float64[:, :, :], float64[:, :, :]",
        );
    }

    /// `np.append(x[0], x[1:] - k * x[:-1])` is NumPy's concatenation of
    /// the two flattened, the number as an array of one: a desugaring to
    /// `np.concatenate` and `np.ravel` (refused before: "calls `np.append`").
    #[test]
    fn np_append_is_a_concatenation_of_ravels() {
        verified_from_body(
            "general_rules.py",
            "first_difference",
            "float64[:], float64",
        );
    }

    /// `from numpy import linspace`: the body's uses are read through the
    /// import, so `linspace(…, …, N)` makes `N` an integer count, as
    /// `np.linspace` does (typed as a float, the original raised on the
    /// generated inputs: "'float' object cannot be interpreted as an integer").
    #[test]
    fn numpy_functions_imported_by_name_type_their_arguments() {
        verified_from_body("numpy_names.py", "gaussian_taper", "int64, float64");
    }

    // An array unpacked into names has exactly that many rows: the plan's
    // guard says so, and the generated inputs fit it (Numba's check runs
    // on them, saved: its own generator knows nothing of the guard).
    #[test]
    fn tent() {
        unpacked("tent", "float64[:], float64[:]");
    }

    #[test]
    fn point_radii() {
        unpacked("point_radii", "float64[:, :], float64[:]");
    }

    fn unpacked(function: &str, signature: &str) {
        verified(
            "migrate/general_rules.py",
            function,
            signature,
            &["--save-inputs", "used.npz"],
        );
    }

    // scipy.special, however imported (fixtures/migrate/scipy_special.py).
    program_in! {
        "migrate/scipy_special.py";
        logistic_units: "float32[:], float32, float32",
        gaussian_cdf: "float64[:], float64, float64",
        erf_table: "float64[:], float64[:]",
        gamma_pdf: "float64[:], float64, float64",
        gamma_logpdf: "float32[:], float32, float32",
        log_beta: "float64[:], float64[:], float64[:]",
    }
}

/// Extents related across arguments, and integer arguments that are
/// extents (fixtures/migrate/related_extents.py): verified from the
/// signature alone, on inputs generated to fit the plan's guards and
/// clipped slices.
/// (Numba's check runs on the inputs port generated, saved with
/// `--save-inputs`, whose path the record keeps: Numba's own generator
/// knows nothing of the relations.)
mod related_extents {
    use super::verified;

    fn saved(function: &str, signature: &str) {
        verified(
            "migrate/related_extents.py",
            function,
            signature,
            // Small: the CUDA simulator runs a Python thread per element.
            &["--save-inputs", "used.npz", "--size", "400"],
        );
    }

    #[test]
    fn halo_laplacian() {
        saved("halo_laplacian", "float64[:, :], float64[:, :]");
    }

    #[test]
    fn mix_last_axis() {
        saved(
            "mix_last_axis",
            "int64, int64, int64, float64[:, :, :], float64[:, :]",
        );
    }

    #[test]
    fn jacobi_sweeps() {
        saved(
            "jacobi_sweeps",
            "int64, int64, int64, float64[:, :], float64[:, :]",
        );
    }

    /// A reshape's new shape holds as many elements as the array.
    #[test]
    fn block_means() {
        saved("block_means", "float64[:], int64, int64");
    }

    /// Allocated extents (`len - taps + 1`, twice) are not negative.
    #[test]
    fn valid_smooth() {
        saved("valid_smooth", "float64[:], float64[:]");
    }

    /// A reshape to powers of an integer argument.
    #[test]
    fn radix_passes() {
        saved("radix_passes", "int64, int64, float64[:]");
    }

    /// Both branches of an `if` fit the statement after it.
    #[test]
    fn solve_or_invert() {
        saved(
            "solve_or_invert",
            "int64, int64, float64[:, :], float64[:, :]",
        );
    }
}

/// Every dtype real programs use: uint8 images, int16 audio, uint32 hashes,
/// int8 quantized weights, uint64 counters, with NumPy 2's promotion (Python
/// scalars are weak, integers wrap, `/` of integers is float64). The inputs
/// are generated over the whole range of 8- and 16-bit types, so that a
/// wrong wrap-around or signedness shows as a mismatch.
mod dtypes {
    use super::verified;

    program_in! {
        "migrate/programs_dtypes.py";
        bright_pixel_stats: "uint8[:]",
        threshold_u8: "uint8[:,:], int64",
        box_blur_u8: "uint8[:,:]",
        brighten_u8: "uint8[:,:], int64",
        saturating_brighten_u8: "uint8[:,:], int64",
        invert_and_halve_u8: "uint8[:,:]",
        to_gray_u8: "uint8[:,:,:]",
        audio_gain_i16: "int16[:], float32",
        gain_i8_i32: "int8[:], int32",
        rotate_c64: "complex64[:], complex64",
        mix_i16: "int16[:], int16[:]",
        wrapping_sum_i16: "int16[:], int16[:]",
        widen_i8_u8: "int8[:], uint8[:]",
        hash_u32: "uint32[:], int64",
        crc_like_u32: "uint32[:]",
        count_events_u64: "uint64[:], int64[:]",
        mixed_u64_i64: "uint64[:], int64[:]",
        quantized_dot_i8: "int8[:,:], int8[:], float32",
        requantize_i8: "float32[:], float32",
        relu_i8: "int8[:]",
        histogram_bins_u16: "uint16[:], int64",
        image_stats_u8: "uint8[:,:]",
        csr_spmv_u32: "uint32[:], uint32[:], float64[:], float64[:]",
    }

    /// A uint8 image given as inputs reaches the original as uint8, so
    /// both sides wrap past 255 alike (it used to arrive as int64).
    #[test]
    fn given_uint8_inputs_keep_their_dtype() {
        let tmp = tempfile::tempdir().unwrap();
        let py = super::common::repo().join(".venv/bin/python");
        let o = std::process::Command::new(py)
            .arg("-c")
            .arg("import numpy as np; np.savez('inputs.npz', img=np.arange(240, dtype=np.uint8).reshape(12, 20), delta=np.int64(40))")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", super::stderr(&o));
        super::verified_in(
            &tmp,
            "migrate/programs_dtypes.py",
            "brighten_u8",
            "uint8[:,:], int64",
            &["--inputs", "inputs.npz"],
            "given",
        );
    }
}

/// Scalars given as inputs keep their dtype on the original's side: a
/// 0-d int32 reaches it as `np.int32` (the product with int8 samples is
/// int32, as the plan computes it), a complex64 one whole, imaginary part
/// included (it could not be written before).
#[test]
fn given_scalars_keep_their_dtype() {
    for (function, signature, values) in [
        (
            "gain_i8_i32",
            "int8[:], int32",
            "samples=np.arange(-128, 128, dtype=np.int8), gain=np.int32(3)",
        ),
        (
            "rotate_c64",
            "complex64[:], complex64",
            "z=(np.arange(50) + 1j * np.arange(50)).astype(np.complex64), w=np.complex64(0.6 + 0.8j)",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        precision::make_inputs(tmp.path(), &format!("np.savez('inputs.npz', {values})"));
        let j = verified_in(
            &tmp,
            "migrate/programs_dtypes.py",
            function,
            signature,
            &["--inputs", "inputs.npz"],
            "given",
        );
        assert_eq!(j["status"], "verified", "{j}");
    }
}

/// Idioms around the array code (fixtures/migrate/programs_idioms.py):
/// `np.asarray` of the arguments, `np.empty(image.shape[:2])`, a parallel
/// loop that counts down, loops over an array's rows (`enumerate`) or
/// elements (a host loop over complex points), names holding tuples (a
/// shape, a layer's `cache` returned nested, a pair indexed from the end,
/// two buffers swapped in a time loop), and arithmetic of selections
/// through one mask reduced (`np.mean((p[valid] - t[valid]) ** 2)`).
mod idioms {
    use super::verified;

    program_in! {
        "migrate/programs_idioms.py";
        power_spectrum: "float64[:], float32[:]",
        luminance: "float64[:,:,:]",
        reverse_scaled: "float64[:], float64",
        resolvent_sum: "complex128[:], complex128[:,:], complex128[:,:]",
        row_norms: "float64[:,:]",
        row_peaks: "float64[:,:]",
        outer_table: "float64[:], float64[:]",
        dense_forward: "float64[:,:], float64[:,:], float64[:]",
        rescaled: "float64[:,:]",
        ping_pong_smooth: "float64[:], int64",
        masked_rmse: "float64[:,:], float64[:,:], bool[:,:]",
        weighted_positive: "float64[:], float64[:]",
        positive_spread: "float64[:], float64[:,:]",
    }
}

/// Rows walked with `enumerate` (check_mask of numpy-benchmarks, rewritten):
/// records of a flag and bits, the required bits one shorter than a row.
#[test]
fn flagged_records_over_enumerated_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let py = common::repo().join(".venv/bin/python");
    let o = Command::new(py)
        .arg("-c")
        .arg(
            "import numpy as np; rng = np.random.default_rng(0)\n\
             records = rng.integers(0, 2, size=(500, 4))\n\
             hits = (records[:, 0] == 1) & (records[:, 1] == 1) & (records[:, 3] == 1)\n\
             assert 0 < hits.sum() < 500, 'some records pass, not all'\n\
             np.savez('inputs.npz', records=records, required=np.array([1, 0, 1]))",
        )
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    verified_in(
        &tmp,
        "migrate/programs_idioms.py",
        "flagged_records",
        "int64[:,:], int64[:]",
        &["--inputs", "inputs.npz"],
        "given",
    );
}

/// Rows picked by a boolean mask of fewer dimensions than the array
/// (fixtures/migrate/programs_idioms.py): k-means' update step
/// (`np.sum(X[M == i], axis=0) / len(X[M == i])` per cluster, a host loop
/// launching a masked reduction along the rows), and the counts, extremes
/// and column means of a row selection, `np.count_nonzero` counting the
/// selected values that are not zero (not the selected ones).
#[test]
fn rows_selected_by_a_mask_are_reduced_without_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    let py = common::repo().join(".venv/bin/python");
    let o = Command::new(py)
        .arg("-c")
        .arg(
            "import numpy as np; rng = np.random.default_rng(1)\n\
             X = rng.standard_normal((400, 3)); X[::7, 1] = 0.0\n\
             M = rng.integers(0, 4, size=400)\n\
             np.savez('centers.npz', X=X, C=np.zeros((4, 3)), M=M)\n\
             np.savez('rows.npz', x=X, lo=np.float64(0.25))",
        )
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j = verified_in(
        &tmp,
        "migrate/programs_idioms.py",
        "update_centers",
        "float64[:,:], float64[:,:], int64[:]",
        &["--inputs", "centers.npz"],
        "given",
    );
    let log = j["rewrites"].to_string();
    assert!(
        log.contains("a reduction along axis 0 of the boolean-mask selection"),
        "{log}"
    );
    verified_in(
        &tmp,
        "migrate/programs_idioms.py",
        "selected_rows_summary",
        "float64[:,:], float64",
        &["--inputs", "rows.npz"],
        "given",
    );
}

/// NumPy's ufuncs called by name and their `.outer` forms
/// (fixtures/migrate/programs_ufuncs.py); `xorshift_rounds` gives uint64
/// results past 2**63, compared exactly.
mod ufuncs {
    use super::verified;

    program_in! {
        "migrate/programs_ufuncs.py";
        pairwise_sq_dists: "float64[:,:], float64[:,:]",
        rbf_covariance: "float64[:], float64[:], float64, float64",
        xorshift_rounds: "uint64[:], int64",
        masked_average: "float32[:,:], int32[:,:]",
        pair_extremes: "float64[:], float64[:]",
        relax_in_place: "float64[:], float64[:], float64[:], int64, float64",
    }
}

/// Complex numbers as signal processing and wave physics use them: DFTs,
/// spectra, beamforming, a Schrödinger step, escape-time fractals, in
/// complex128 and complex64, with NumPy 2's promotion (`x_f32 * 1j` is
/// complex64) and `allclose` on the modulus of the difference.
mod complex {
    use super::verified;

    program_in! {
        "migrate/programs_complex.py";
        dft: "complex128[:]",
        nearest_symbol: "complex128[:], complex128[:]",
        cross_spectrum: "complex128[:], complex128[:]",
        modulate_c64: "complex64[:], float64, float32[:]",
        beamform: "complex128[:,:], complex128[:]",
        total_power: "complex128[:]",
        coherence_matrix: "complex128[:,:], complex128[:,:]",
        schrodinger_1d: "complex128[:], float64[:], float64, float64, int64",
        fresnel_phase: "complex128[:,:], float64, float64, float64",
        split_step_c64: "complex64[:], float32[:], float64, int64",
        escape_counts: "float64, float64, float64, float64, int64, int64, int64",
        julia_escape: "complex128[:], complex128, int64",
        phase_rotation: "complex128[:], float64, float64",
    }
}

/// NumPy library routines port composes from its own kernels: `np.cov`
/// (centre, then `@` with the conjugate transpose), `np.inner`, `np.vdot`
/// (flattened, the first conjugated), `np.diagonal`/`np.diag`/`trace`,
/// `np.histogram` (NumPy's bin arithmetic, atomic counts, weights, density).
mod library {
    use super::{fixture, fixture_copy, migrate_in, stdout, verified};

    program_in! {
        "migrate/programs_library.py";
        portfolio_risk: "float64[:,:], float64[:]",
        feature_covariance: "float64[:,:]",
        gram_scores: "float64[:,:], float64[:,:]",
        flat_similarity: "float64[:,:], float64[:,:]",
        radial_profile: "float64[:], float64[:], int64",
        intensity_histogram: "float32[:,:], float64, float64",
        pixel_histogram: "uint8[:,:], int64",
        smooth_signal: "float64[:], float64[:]",
        separable_blur: "float32[:,:]",
        equalize: "uint8[:,:]",
    }

    /// A filter whose length is an argument's cannot be unrolled: the
    /// refusal names `np.convolve`, why, and the line, and the source is
    /// left alone.
    #[test]
    fn convolve_with_a_run_time_filter_is_refused_at_its_line() {
        let file = "programs_library.py";
        let tmp = fixture_copy(file);
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "moving_average",
                file,
                "--signature",
                "float64[:], float64[:]",
                "--json",
                "--write",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(j["status"], "refused");
        let r = &j["reasons"][0];
        assert_eq!(r["line"], 99, "{r}");
        assert!(
            r["message"]
                .as_str()
                .unwrap()
                .starts_with("`np.convolve` with a filter of run-time length"),
            "{r}"
        );
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(file)).unwrap(),
            std::fs::read_to_string(fixture("migrate/programs_library.py")).unwrap(),
            "a refused migration leaves the source alone"
        );
    }
}

/// Tensors of 5 and 6 dimensions (kernel arrays take up to 8): grouped
/// attention, an orbital contraction, complex self-energy blocks.
mod tensors {
    use super::verified;

    program_in! {
        "migrate/programs_tensors.py";
        grouped_attention: "float64[:,:,:,:,:], float64[:,:,:,:,:], float64[:,:,:,:,:]",
        contract_orbitals: "float64[:,:,:,:,:,:], float64[:,:]",
        self_energy_blocks: "complex128[:,:,:,:,:], complex128[:,:,:,:,:], complex128[:,:,:,:,:]",
    }
}

/// Extents port takes to be equal are guarded on the host, and an axis of
/// extent 1 that only the inputs have is planned as a broadcast axis
/// (fixtures/migrate/programs_shapes.py).
mod shapes {
    use super::common::{port_in, repo};
    use super::{fixture, migrate_in, oracle_python, stderr, stdout, verified, verified_in};
    use std::path::Path;
    use std::process::Command;

    /// Writes `inputs.npz` in `dir` with the project's NumPy.
    fn npz(dir: &Path, make: &str) {
        let py = common_python();
        let script = format!(
            "import numpy as np\nrng = np.random.default_rng(3)\nnp.savez('inputs.npz', {make})\n"
        );
        let o = Command::new(py)
            .arg("-c")
            .arg(&script)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }

    fn common_python() -> std::path::PathBuf {
        repo().join(".venv/bin/python")
    }

    /// The kernels one verification launched, by name.
    fn launched(j: &serde_json::Value) -> Vec<String> {
        j["launches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["kernel"].as_str().unwrap().to_string())
            .collect()
    }

    /// A reduction along axes that end with the last one runs one block
    /// per result element when the reduced extent is long (batch norm's
    /// 70 elements per channel), one thread per result element when it is
    /// short (a softmax over 5): both verified on the inputs that pick
    /// them, and the wrapper's `if` runs under Numba's simulator too.
    #[test]
    fn long_reduced_extents_take_a_block_per_result_element() {
        let tmp = tempfile::tempdir().unwrap();
        npz(
            tmp.path(),
            "x=rng.standard_normal((2, 3, 5, 7)), eps=np.float64(1e-5)",
        );
        let j = verified_in(
            &tmp,
            "migrate/programs.py",
            "batch_norm_4d",
            "float64[:,:,:,:], float64",
            &["--inputs", "inputs.npz"],
            "given",
        );
        let k = launched(&j);
        assert!(
            k.contains(&"batch_norm_4d_x_mean_blocks".to_string()),
            "{k:?}"
        );
        assert!(!k.contains(&"batch_norm_4d_x_mean".to_string()), "{k:?}");

        let tmp = tempfile::tempdir().unwrap();
        npz(
            tmp.path(),
            "x=rng.standard_normal((2, 3, 4, 5)).astype(np.float32)",
        );
        let j = verified_in(
            &tmp,
            "migrate/programs.py",
            "softmax_4d",
            "float32[:,:,:,:]",
            &["--inputs", "inputs.npz"],
            "given",
        );
        let k = launched(&j);
        assert!(k.contains(&"softmax_4d_x_max".to_string()), "{k:?}");
        assert!(!k.iter().any(|n| n.ends_with("_blocks")), "{k:?}");
    }

    /// n-body masses as an (N, 1) column: on the inputs, mass.T is a row
    /// that broadcasts, `mass * vel` stretches the column; the plan says
    /// so, and a guard at entry holds it to such inputs.
    #[test]
    fn a_column_of_masses_broadcasts_as_the_inputs_have_it() {
        let tmp = tempfile::tempdir().unwrap();
        npz(
            tmp.path(),
            "mass=rng.random((12, 1)) + 0.5, pos=rng.random((12, 3)), vel=0.1 * rng.random((12, 3)), dt=np.float64(1e-3), steps=np.int64(4)",
        );
        let j = verified_in(
            &tmp,
            "migrate/programs_shapes.py",
            "leapfrog_masses",
            "float64[:,:], float64[:,:], float64[:,:], float64, int64",
            &["--inputs", "inputs.npz"],
            "given",
        );
        assert_eq!(j["plan"]["unit_dims"], serde_json::json!([["mass", 1]]));
        let python = std::fs::read_to_string(tmp.path().join("programs_shapes.py")).unwrap();
        assert!(
            python.contains("if mass.shape[1] != 1:"),
            "the wrapper checks the specialisation first:\n{python}"
        );
        // A call with a full matrix runs the original, which takes it.
        assert!(
            python.contains(
                "leapfrog_masses: line 9: the kernels were built for inputs whose `mass` has extent 1 along axis 1 (it broadcasts); here `mass.shape[1]` differs: the original runs\""
            ),
            "{python}"
        );
    }

    /// The same function on a full matrix of rates: NumPy takes it, the
    /// kernels built for a column do not, and say so before running.
    #[test]
    fn inputs_that_break_the_specialisation_fail_with_the_reason() {
        let tmp = tempfile::tempdir().unwrap();
        npz(
            tmp.path(),
            "w=rng.random((10, 1)), x=rng.random((10, 4)), lr=np.float64(0.1)",
        );
        let name = "programs_shapes.py";
        std::fs::copy(fixture("migrate/programs_shapes.py"), tmp.path().join(name)).unwrap();
        let sig = "float64[:,:], float64[:,:], float64";
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "scale_rows",
                name,
                "--signature",
                sig,
                "--inputs",
                "inputs.npz",
                "--json",
            ],
        );
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(j["status"], "verified", "{}", stdout(&o));
        std::fs::rename(tmp.path().join("inputs.npz"), tmp.path().join("column.npz")).unwrap();
        npz(
            tmp.path(),
            "w=rng.random((10, 4)), x=rng.random((10, 4)), lr=np.float64(0.1)",
        );
        let py = common_python();
        let o = port_in(
            tmp.path(),
            &[
                "verify",
                "--inputs",
                "inputs.npz",
                "--json",
                "--python",
                py.to_str().unwrap(),
            ],
        );
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let r = &j["results"][0];
        // Never a wrong answer: no kernel ran on these inputs.
        assert_eq!(r["status"], "failed", "{out}");
        assert!(
            r["reasons"][0]["message"].as_str().unwrap().contains("the inputs' shapes do not fit the kernels: line 22: the kernels were built for inputs whose `w` has extent 1 along axis 1 (it broadcasts); here `w.shape[1]` is 4"),
            "{out}"
        );
    }

    /// Without inputs, nothing is specialised: generated rates are a full
    /// matrix like `x`.
    #[test]
    fn generated_inputs_specialise_nothing() {
        verified(
            "migrate/programs_shapes.py",
            "scale_rows",
            "float64[:,:], float64[:,:], float64",
            &[],
        );
    }

    /// Vectors of different lengths: the kernels take them to be equal, so
    /// the emitted wrapper runs the original, before any kernel reads past
    /// the shorter one: NumPy raises its own error, and a vector of one
    /// element broadcasts as NumPy broadcasts it.
    #[test]
    fn the_wrapper_runs_the_original_on_shapes_its_kernels_were_not_built_for() {
        let tmp = tempfile::tempdir().unwrap();
        let j = verified_in(
            &tmp,
            "migrate/programs_shapes.py",
            "add_into",
            "float64[:], float64[:], float64[:]",
            &[],
            "generated",
        );
        let _ = j;
        let patched = std::fs::read_to_string(tmp.path().join("programs_shapes.py")).unwrap();
        assert!(patched.contains("the kernels take `a.shape[0]` and `b.shape[0]` to be equal"));
        let script = "import numpy as np, warnings, programs_shapes as m\n\
             warnings.simplefilter('ignore')\n\
             try:\n    m.add_into(np.ones(5), np.ones(7), np.zeros(5))\n\
             except ValueError as e:\n    print('ValueError:', e)\n\
             out = np.zeros(5)\n\
             m.add_into(np.arange(5.0), np.ones(1), out)\n\
             print('broadcast', out.tolist())\n";
        let o = Command::new(oracle_python())
            .arg("-c")
            .arg(script)
            .current_dir(tmp.path())
            .env("NUMBA_ENABLE_CUDASIM", "1")
            .output()
            .unwrap();
        let out = stdout(&o);
        assert!(
            out.contains(
                "ValueError: operands could not be broadcast together with shapes (5,) (7,)"
            ) && out.contains("broadcast [1.0, 2.0, 3.0, 4.0, 5.0]"),
            "{out}\n{}",
            stderr(&o)
        );
    }

    /// `np.tile` and `np.repeat` as element templates: a periodic pairwise
    /// offset matrix (numpy-benchmarks' periodic_dist), and an upsampled
    /// image with its tiled and flattened repeats.
    #[test]
    fn tiled_and_repeated_arrays_are_templates() {
        verified(
            "migrate/programs_shapes.py",
            "periodic_offsets",
            "float64[:], float64",
            &[],
        );
        let tmp = tempfile::tempdir().unwrap();
        npz(tmp.path(), "img=rng.random((5, 7)), k=np.int64(3)");
        let j = verified_in(
            &tmp,
            "migrate/programs_shapes.py",
            "upsample_blocks",
            "float64[:,:], int64",
            &["--inputs", "inputs.npz"],
            "given",
        );
        let log = j["rewrites"].to_string();
        assert!(log.contains("`np.tile` as an element template"), "{log}");
        assert!(log.contains("`np.repeat` as an element template"), "{log}");
    }

    /// `np.diff` along the last axis and down the rows, `n=2`, and of
    /// booleans (where NumPy takes `!=`).
    #[test]
    fn differences_are_shifted_windows() {
        let j = verified_in(
            &tempfile::tempdir().unwrap(),
            "migrate/programs_shapes.py",
            "finite_differences",
            "float64[:,:], float64",
            &[],
            "generated",
        );
        let log = j["rewrites"].to_string();
        assert!(log.contains("`np.diff` as an element template"), "{log}");
    }
}

/// float64 results judged against an extended-precision run of the
/// original (fixtures/migrate/programs_precision.py): a stable program
/// that the elementwise check is too strict for passes against it; a
/// chaotic iteration, whose own float64 answer means nothing, ends
/// `inconclusive` (exit 5), neither verified nor a mismatch; the same
/// iteration on inputs where it converges verifies.
mod precision {
    use super::*;

    const FILE: &str = "migrate/programs_precision.py";
    const SETTLE: &str = "float64[:,:], float64[:], float64[:], int64";

    /// Runs `script` with the project's Python in `dir` (numpy as `np`, a
    /// seeded generator as `rng`): it writes the inputs.
    pub(crate) fn make_inputs(dir: &Path, script: &str) {
        let made = Command::new(repo().join(".venv/bin/python"))
            .current_dir(dir)
            .arg("-c")
            .arg(format!(
                "import numpy as np\nrng = np.random.default_rng(11)\n{script}"
            ))
            .status()
            .unwrap();
        assert!(made.success());
    }

    /// Event times: the epoch's 1.7e9 s, then 20 000 intervals of 1 ± 0.1 s.
    const JITTER: &str = "s = 1.0 + 0.1 * rng.standard_normal(20000)\ns[0] = 1.7e9\n\
                          np.savez('jitter.npz', stamps=s, nominal=np.float64(1.0))";

    /// A 64-unit network of this gain, saved as `name.npz`.
    /// A chaotic network (gain 3) needs its 200 steps to forget its
    /// rounding; a calm one (gain 0.5) has converged after 40, and each
    /// step is two launches under Numba's CUDA simulator.
    pub(crate) fn network(gain: f64, name: &str) -> String {
        let steps = if gain < 1.0 { 40 } else { 200 };
        format!(
            "m = 64\nnp.savez('{name}.npz', W={gain} * rng.standard_normal((m, m)) / np.sqrt(m), \
             b=0.1 * rng.standard_normal(m), x=rng.standard_normal(m), steps=np.int64({steps}))"
        )
    }

    #[test]
    fn a_stable_running_sum_passes_against_an_extended_precision_run() {
        let tmp = tempfile::tempdir().unwrap();
        make_inputs(tmp.path(), JITTER);
        let j = verified_in(
            &tmp,
            FILE,
            "timing_jitter",
            "float64[:], float64",
            &["--inputs", "jitter.npz"],
            "given",
        );
        let v = &j["verification"];
        // Elementwise, the kernels' chunked scan and NumPy's sequential sum
        // differ past rtol 1e-5 where the jitter is near zero.
        assert!(v["max_rel_err"].as_f64().unwrap() > 1e-5, "{v}");
        assert!(v["mismatch"].is_null(), "{v}");
        assert!(v["float32_exact"].is_null(), "{v}");
        let c = &v["float64_exact"];
        assert_eq!(c["verdict"], "passed", "{c}");
        assert_eq!(c["passed"], true, "{c}");
        assert!(c["reference"]
            .as_str()
            .unwrap()
            .starts_with("np.longdouble, "));
        assert!(
            c["elementwise"]
                .as_str()
                .unwrap()
                .starts_with("return value"),
            "{c}"
        );
        let (ours, theirs) = (
            c["ours_err"].as_f64().unwrap(),
            c["original_err"].as_f64().unwrap(),
        );
        // The original's own error is rounding, small enough that its
        // answer means something, and the kernels are no further.
        assert!(theirs > 1e-9 && theirs < 1e-4, "{c}");
        assert!(ours > 0.0 && ours <= 10.0 * theirs, "{c}");

        // The text report says which comparison passed, with both errors.
        let text = tempfile::tempdir().unwrap();
        std::fs::copy(fixture(FILE), text.path().join("p.py")).unwrap();
        make_inputs(text.path(), JITTER);
        let o = migrate_in(
            text.path(),
            &[
                "--function",
                "timing_jitter",
                "p.py",
                "--signature",
                "float64[:], float64",
                "--inputs",
                "jitter.npz",
                "--backend",
                "simulator",
            ],
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{out}\n{}", stderr(&o));
        assert!(
            out.contains("passed against an extended-precision run (max abs err"),
            "{out}"
        );
        assert!(out.contains("    float64: passed against an extended-precision run of the original: the kernels' error "), "{out}");
        assert!(
            out.contains("(elementwise against the original's float64 results: return value"),
            "{out}"
        );
    }

    #[test]
    fn a_chaotic_iteration_is_inconclusive() {
        let tmp = tempfile::tempdir().unwrap();
        let name = "programs_precision.py";
        std::fs::copy(fixture(FILE), tmp.path().join(name)).unwrap();
        make_inputs(tmp.path(), &network(3.0, "chaos"));
        let args = [
            "--function",
            "settle",
            name,
            "--signature",
            SETTLE,
            "--inputs",
            "chaos.npz",
            "--backend",
            "simulator",
        ];
        let mut with_json = args.to_vec();
        with_json.extend(["--json", "--write"]);
        let o = migrate_in(tmp.path(), &with_json);
        assert_eq!(o.status.code(), Some(5), "{}\n{}", stdout(&o), stderr(&o));
        let j = one_json_document(&o);
        assert_eq!(j["status"], "inconclusive", "{j}");
        let v = &j["verification"];
        assert_eq!(v["passed"], false, "{v}");
        assert!(v["mismatch"].is_null(), "{v}");
        let c = &v["float64_exact"];
        assert_eq!(c["verdict"], "inconclusive", "{c}");
        assert_eq!(c["passed"], false, "{c}");
        assert!(c["original_err"].as_f64().unwrap() > 1e-4, "{c}");
        assert!(c["elementwise"]
            .as_str()
            .unwrap()
            .starts_with("return value"));
        let why = c["why"].as_str().unwrap();
        assert!(
            why.starts_with(
                "the original itself is not reproducible in float64 here: its result moves by "
            ),
            "{why}"
        );
        assert!(
            why.contains("port cannot tell a right kernel from a wrong one on these inputs — verify on inputs where the computation converges"),
            "{why}"
        );
        assert_eq!(j["reasons"][0]["message"], why, "{j}");
        assert_eq!(j["reasons"][0]["rewrite"], "verify", "{j}");
        // Nothing verified, so nothing written.
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(name)).unwrap(),
            std::fs::read_to_string(fixture(FILE)).unwrap()
        );
        assert!(!tmp.path().join(format!("{name}.port-bak")).exists());
        assert!(
            j["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == "not written: the migration is inconclusive, not verified"),
            "{j}"
        );

        let o = migrate_in(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
        let out = stdout(&o);
        for want in [
            "port migrate: settle (programs_precision.py:",
            ") → inconclusive\n",
            "  reason: line ",
            ": the original itself is not reproducible in float64 here",
            "simulator on given inputs: INCONCLUSIVE (max abs err",
            "    float64: inconclusive against an extended-precision run of the original: the kernels' error ",
        ] {
            assert!(out.contains(want), "`{want}` not in:\n{out}");
        }
        assert!(
            !out.contains("MISMATCH") && !out.contains("passed"),
            "{out}"
        );
    }

    /// The same function where the iteration converges (gain 0.5): the
    /// kernels agree elementwise, no second opinion needed.
    #[test]
    fn the_same_iteration_converging_verifies() {
        let tmp = tempfile::tempdir().unwrap();
        make_inputs(tmp.path(), &network(0.5, "calm"));
        let j = verified_in(
            &tmp,
            FILE,
            "settle",
            SETTLE,
            &["--inputs", "calm.npz"],
            "given",
        );
        assert!(j["verification"]["float64_exact"].is_null(), "{j}");
        assert!(j["verification"]["max_rel_err"].as_f64().unwrap() < 1e-12);
    }
}

/// Constructs the corpus of unseen real kernels showed port refusing
/// (fixtures/migrate/programs_corpus_style.py): `np.roll` (periodic
/// neighbours, run-time and tuple shifts, rolled into itself), `np.indices`
/// (grids updated in place and stored through), dtypes bound to module
/// names, results first bound to `None`, and per-row stores through
/// `np.arange(n)` beside an array of column indices.
mod corpus_style {
    use super::{fixture, migrate_in, stderr, stdout, verified, verified_in};

    const FILE: &str = "migrate/programs_corpus_style.py";

    program_in! {
        "migrate/programs_corpus_style.py";
        periodic_upwind: "float64[:], float64, int64",
        torus_laplacian: "float64[:,:], float64",
        minmod_slopes: "float64[:,:], float64",
        flux_update: "float64[:,:], float64[:,:], float64[:,:], float64, float64",
        rolled_into_itself: "float64[:,:], int64",
        diagonal_drift: "float32[:,:], int64",
        backtrace_sample: "float64[:,:], float64[:,:], float64[:,:], float64",
        radial_falloff: "float64[:,:], float64",
        checker_mask: "int32[:,:]",
        escape_counts_named: "float64, float64, float64, float64, int64, int64, int64",
        narrowed: "float64[:], float64",
        two_layer_scores: "float64[:,:], float64[:,:], float64[:], float64[:,:], float64[:]",
        dense_forward: "float64[:,:], float64[:,:], float64[:]",
        hinge_margins: "float64[:,:], int64[:]",
        cross_entropy_grad: "float32[:,:], int32[:]",
        pick_per_column: "float64[:,:], int64[:]",
        column_back_substitution: "float64[:,:], float64[:,:], float64[:,:]",
        normalise_rows: "float64[:,:]",
        decay_steps: "float64[:]",
        row_sweep: "float64[:,:], float64[:,:]",
        row_sweep_chained: "float64[:,:], float64[:,:]",
        radix_spans: "float64[:], int64, int64",
        projected_f32: "float32[:,:], float32[:,:]",
        shape_of_named_tuple: "float64[:,:], float64",
        leapfrog_copyto: "float64[:], float64[:], int64",
        rows_matching: "int64[:,:]",
        neighbour_sum: "float64[:]",
        gated_products: "float64[:], float64[:]",
        gated_lambda: "float64[:], float64[:]",
        flattened_response: "float64[:,:], float64[:,:]",
        nll_of_labels: "float64[:,:], int64[:]",
        quantise_levels: "float64[:], float32[:]",
        life_step: "int64[:,:]",
        item_reliability: "float64[:,:]",
        rows_matching_tuple: "int64[:,:]",
        padded_correlate: "float64[:,:,:], float64[:,:], int64",
        padded_edges: "float64[:,:]",
        unchecked_assert: "float64[:]",
        nan_mean_flat: "float64[:,:]",
        centred_or_zero: "float64[:], float64",
        lu_partial_pivot: "float64[:,:]",
        closest_centre: "float64[:,:], float64[:,:]",
        escape_radius_local_imports: "float64[:], float64[:], int64",
        einsum_forms: "float64[:,:], float64[:,:]",
        batched_attention_scores: "float32[:,:,:], float32[:,:,:], float32[:,:,:]",
        last_plane_update: "float64[:,:,:], float64",
        lu_pivot_by_loops: "float64[:,:]",
        nearest_below: "float64[:], float64",
    }

    /// Constants of the program's own module beside the file (`import
    /// sim_constants as sc`, `sc.G`; `from sim_constants import DT`) are
    /// frozen into the kernels; `np.column_stack` packs the columns.
    #[test]
    fn constants_of_a_module_beside_the_file_are_frozen() {
        let tmp = tempfile::tempdir().unwrap();
        for f in ["nbody_step.py", "sim_constants.py"] {
            std::fs::copy(fixture(&format!("migrate/sibling/{f}")), tmp.path().join(f)).unwrap();
        }
        let py = super::common::repo().join(".venv/bin/python");
        let o = std::process::Command::new(py)
            .arg("-c")
            .arg(
                "import numpy as np; r = np.random.default_rng(3); \
                 np.savez('inputs.npz', pos=r.random((64, 2)), vel=r.random((64, 2)) * 0.1, mass=r.random(64) * 1e9)",
            )
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "leapfrog",
                "nbody_step.py",
                "--signature",
                "float64[:,:], float64[:,:], float64[:]",
                "--inputs",
                "inputs.npz",
                "--json",
            ],
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{out}\n{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(j["status"], "verified", "{out}");
        // Without the module beside it, the constant is unknown.
        std::fs::remove_file(tmp.path().join("sim_constants.py")).unwrap();
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "leapfrog",
                "nbody_step.py",
                "--signature",
                "float64[:,:], float64[:,:], float64[:]",
                "--json",
            ],
        );
        let out = stdout(&o);
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(j["status"], "refused", "{out}");
        assert!(j["reasons"].to_string().contains("sim_constants"), "{out}");
    }

    /// Helpers imported from a module beside the file (`from signal_stats
    /// import slope_and_spread as fit_row`) are inlined as the file's own:
    /// with their module's constant (`TINY`) and the helper they call in
    /// turn (`_centred_energy`). The program's calls type the arguments
    /// (`rng.standard_normal(…)` included). A refusal inside a borrowed
    /// helper names its line in its own file.
    #[test]
    fn helpers_of_a_module_beside_the_file_are_inlined() {
        let tmp = tempfile::tempdir().unwrap();
        for f in ["features.py", "signal_stats.py"] {
            std::fs::copy(fixture(&format!("migrate/sibling/{f}")), tmp.path().join(f)).unwrap();
        }
        let o = migrate_in(
            tmp.path(),
            &["--function", "row_features", "features.py", "--json"],
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{out}\n{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(j["status"], "verified", "{out}");
        let types: Vec<(&str, &str)> = j["arg_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["type"].as_str().unwrap(), t["from"].as_str().unwrap()))
            .collect();
        assert_eq!(
            types,
            [
                ("float64[:]", "calls"),
                ("float64[:, :]", "calls"),
                ("float64[:, :]", "calls")
            ],
            "{out}"
        );
        // The rewrites name the helper's lines in its own file.
        let rewrites = j["rewrites"].to_string();
        assert!(
            rewrites.contains("`math.sqrt` on the device (line 33 of signal_stats.py)"),
            "{rewrites}"
        );
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "first_ratio",
                "features.py",
                "--signature",
                "float64[:]",
                "--json",
            ],
        );
        let out = stdout(&o);
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(j["status"], "refused", "{out}");
        let why = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            why.starts_with("in `ratio_list` (called at line 18), line 39 of signal_stats.py:"),
            "{why}"
        );
        // The user's file is as it was.
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("features.py")).unwrap(),
            std::fs::read_to_string(fixture("migrate/sibling/features.py")).unwrap()
        );
    }

    /// The input checks of the original stay in the patched wrapper: a
    /// `raise` as written (its f-string reads parameters the wrapper has),
    /// an `assert` as the `raise` it is; an `assert` the host cannot
    /// evaluate is left out, and the rewrites say so.
    #[test]
    fn guards_stay_in_the_wrapper() {
        let tmp = tempfile::tempdir().unwrap();
        verified_in(
            &tmp,
            FILE,
            "padded_correlate",
            "float64[:,:,:], float64[:,:], int64",
            &[],
            "generated",
        );
        let patched = std::fs::read_to_string(tmp.path().join("programs_corpus_style.py")).unwrap();
        let wrapper = &patched[patched.find("def padded_correlate(x, w, stride):").unwrap()..];
        assert!(
            wrapper.contains(
                "raise ValueError(f\"filter {w.shape} larger than the images {x.shape}\")"
            ),
            "{wrapper}"
        );
        assert!(
            wrapper.contains(
                "if not stride >= 1:\n        raise AssertionError(\"stride must be positive\")"
            ),
            "{wrapper}"
        );
        let tmp = tempfile::tempdir().unwrap();
        let name = "programs_corpus_style.py";
        std::fs::copy(fixture(FILE), tmp.path().join(name)).unwrap();
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "unchecked_assert",
                name,
                "--signature",
                "float64[:]",
                "--json",
            ],
        );
        let out = stdout(&o);
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(j["status"], "verified", "{out}");
        assert!(
            j["rewrites"]
                .to_string()
                .contains("`assert` at line 469 left out, as `python -O` leaves it out"),
            "{out}"
        );
    }

    /// A batch of images flattened into rows by `x.reshape(n, -1)`, with
    /// the result first bound to `None`, on inputs of the real shapes
    /// (`w` has as many rows as an image has pixels, which generated
    /// inputs cannot know; the table above checks the patch with Numba on
    /// rows that are already flat).
    #[test]
    fn dense_forward_on_image_batches() {
        let tmp = tempfile::tempdir().unwrap();
        let py = super::common::repo().join(".venv/bin/python");
        let o = std::process::Command::new(py)
            .arg("-c")
            .arg(
                "import numpy as np; r = np.random.default_rng(5); \
                 np.savez('inputs.npz', x=r.random((6, 3, 4, 4)), w=r.random((48, 10)), b=r.random(10))",
            )
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let name = "programs_corpus_style.py";
        std::fs::copy(fixture(FILE), tmp.path().join(name)).unwrap();
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "dense_forward",
                name,
                "--signature",
                "float64[:,:,:,:], float64[:,:], float64[:]",
                "--inputs",
                "inputs.npz",
                "--json",
            ],
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{out}\n{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(j["status"], "verified", "{out}");
        assert_eq!(j["verification"]["inputs"], "given", "{out}");
        let log = j["rewrites"].to_string();
        assert!(
            log.contains("`out = None` (line 143) is dead: line 145 binds `out` before any use"),
            "{log}"
        );
    }

    /// The module's dtype names resolve like the dtypes: the counts are
    /// int32 as `count_t` says, in the emitted wrapper too.
    #[test]
    fn module_dtype_names_give_their_dtype() {
        let tmp = tempfile::tempdir().unwrap();
        verified_in(
            &tmp,
            FILE,
            "escape_counts_named",
            "float64, float64, float64, float64, int64, int64, int64",
            &[],
            "generated",
        );
        let patched = std::fs::read_to_string(tmp.path().join("programs_corpus_style.py")).unwrap();
        assert!(patched.contains("np.int32"), "{patched}");
    }

    /// `port migrate --json` of `function`, which must be refused: its
    /// first reason.
    fn refusal(function: &str, signature: &str) -> serde_json::Value {
        let tmp = tempfile::tempdir().unwrap();
        let name = "programs_corpus_style.py";
        std::fs::copy(fixture(FILE), tmp.path().join(name)).unwrap();
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                function,
                name,
                "--signature",
                signature,
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(j["status"], "refused", "{j}");
        j["reasons"][0].clone()
    }

    fn message(r: &serde_json::Value) -> &str {
        r["message"].as_str().unwrap()
    }

    /// `None` that an `if` may leave in place is refused at its binding,
    /// naming the statement it may reach.
    #[test]
    fn none_that_may_reach_a_use_is_refused() {
        let r = refusal("none_may_reach", "float64[:], int64");
        assert_eq!(r["line"], 165, "{r}");
        assert!(
            message(&r).starts_with("`y = None`: line 166 (`if flag > 0:`) may read `y`, or leave it `None` on some path"),
            "{r}"
        );
    }

    /// A store through an index array that may name one element twice
    /// (`acc[idx] += vals`) is a scatter, refused by name.
    #[test]
    fn other_scatters_are_refused_by_name() {
        let r = refusal("scatter_accumulate", "float64[:], int64[:], float64[:]");
        assert_eq!(r["line"], 209, "{r}");
        assert!(
            message(&r).starts_with("a store through index arrays `acc[idx]` (a scatter): "),
            "{r}"
        );
    }

    /// An index grid another name holds cannot be updated by rebinding:
    /// NumPy's `+=` would show through both names.
    #[test]
    fn a_grid_updated_in_place_under_two_names_is_refused() {
        let r = refusal("aliased_grid", "float64[:,:]");
        assert_eq!(r["line"], 110, "{r}");
        assert!(
            message(&r).contains("line 109 may let another name hold the same array"),
            "{r}"
        );
    }

    /// A name bound to a view before a loop, rebound to a new array in
    /// it, and read after it cannot be private to the loop: the view may
    /// survive a loop of no iterations.
    #[test]
    fn a_view_read_after_the_loop_that_rebinds_it_is_refused() {
        let r = refusal("column_kept_after_the_loop", "float64[:,:], float64[:,:]");
        assert_eq!(r["line"], 243, "{r}");
        assert!(
            message(&r).starts_with(
                "`col` is rebound inside a loop or `if` from a view of `d` to a new array"
            ),
            "{r}"
        );
    }

    /// A nested function that reads a local of the function around it is
    /// refused at its `def`, saying what to do; one that reads none is a
    /// helper (`gated_products` above).
    #[test]
    fn a_closure_is_refused_at_its_def() {
        let r = refusal("scaled_by_closure", "float64[:], float64");
        assert_eq!(r["line"], 355, "{r}");
        assert!(
            message(&r).starts_with("a nested function that reads names of the function around it"),
            "{r}"
        );
    }

    /// An axis known only at run time: the refusal names `np.roll`.
    #[test]
    fn roll_along_a_run_time_axis_is_refused() {
        let r = refusal("roll_by_axis_argument", "float64[:,:], int64");
        assert_eq!(r["line"], 215, "{r}");
        assert!(
            message(&r).starts_with("`np.roll`: the axis `k` must be an integer constant"),
            "{r}"
        );
    }

    /// The same through `verified`, so that the analysis' parity test
    /// (`tests/verdict_parity.rs`) sees this file too.
    #[test]
    fn flux_update_in_place() {
        verified(
            "migrate/programs_corpus_style.py",
            "flux_update",
            "float64[:,:], float64[:,:], float64[:,:], float64, float64",
            &[],
        );
    }
}

/// `np.linalg` calls as library steps of the host schedule
/// (fixtures/migrate/programs_linalg.py): port's runs compute them on the
/// host between the kernels; the emitted wrapper calls CuPy on the device,
/// or NumPy on host copies — the path the Numba simulator check takes.
mod linalg {
    use super::{fixture, migrate_in, oracle_python, stderr, stdout, verified, verified_in};
    use std::process::Command;

    program_in! {
        "migrate/programs_linalg.py";
        gaussian_loglik: "float64[:,:], float64[:], float64[:,:]",
        correlated_noise: "float64[:,:], float64[:,:], float64[:]",
        newton_system: "float64[:,:], float64[:], int64",
        ridge_fit: "float64[:,:], float64[:], float64",
        ridge_inverse: "float64[:,:], float64[:], float64",
        lstsq_refinement: "float64[:,:], float64[:], int64",
        kalman_update: "float64[:], float64[:,:], float64[:], float64[:,:], float64[:,:]",
        stack_inverses: "float64[:,:,:], float64[:]",
        normalise_by_det: "float64[:,:], float64[:,:]",
        resolvent_trace: "complex128[:,:], complex128",
        solve_f32: "float32[:,:], float32[:]",
    }

    /// The report says where the call ran; the emitted module, given a
    /// matrix that is not positive definite, raises NumPy's LinAlgError.
    #[test]
    fn the_report_names_the_host_call_and_the_wrapper_raises_numpys_error() {
        let tmp = tempfile::tempdir().unwrap();
        let j = verified_in(
            &tmp,
            "migrate/programs_linalg.py",
            "gaussian_loglik",
            "float64[:,:], float64[:], float64[:,:]",
            &[],
            "generated",
        );
        let calls = j["host_calls"].as_array().expect("host_calls");
        assert_eq!(calls[0]["call"], "np.linalg.cholesky");
        assert_eq!(calls[0]["line"], 21);
        assert_eq!(calls[0]["bytes_to_host"], 64 * 64 * 8);
        let script = "import numpy as np, programs_linalg as m\n\
             x = np.ones((3, 2)); cov = np.array([[1.0, 2.0], [2.0, 1.0]])\n\
             try:\n    m.gaussian_loglik(x, np.zeros(2), cov)\n\
             except np.linalg.LinAlgError as e:\n    print('LinAlgError:', e)\n";
        let o = Command::new(oracle_python())
            .arg("-c")
            .arg(script)
            .current_dir(tmp.path())
            .env("NUMBA_ENABLE_CUDASIM", "1")
            .output()
            .unwrap();
        let out = stdout(&o);
        assert!(
            out.contains("LinAlgError: Matrix is not positive definite"),
            "{out}\n{}",
            stderr(&o)
        );
        // The text report says it too.
        let copy = tmp.path().join("text");
        std::fs::create_dir(&copy).unwrap();
        std::fs::copy(
            fixture("migrate/programs_linalg.py"),
            copy.join("programs_linalg.py"),
        )
        .unwrap();
        let o = migrate_in(
            &copy,
            &[
                "--function",
                "gaussian_loglik",
                "programs_linalg.py",
                "--signature",
                "float64[:,:], float64[:], float64[:,:]",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).contains(
                "library call: `np.linalg.cholesky` at line 21: on the host (cuSOLVER computes float32/float64 cholesky, solve, inv and det on a GPU that has libcusolver)"
            ),
            "{}",
            stdout(&o)
        );
    }

    /// Given inputs the original raises on: verification says so, with
    /// NumPy's error, and writes nothing.
    #[test]
    fn inputs_the_original_raises_on_are_reported_cleanly() {
        let tmp = tempfile::tempdir().unwrap();
        let file = "programs_linalg.py";
        std::fs::copy(fixture("migrate/programs_linalg.py"), tmp.path().join(file)).unwrap();
        let py = super::common::repo().join(".venv/bin/python");
        let make = "import numpy as np\n\
             np.savez('bad.npz', x=np.ones((4, 3)), mean=np.zeros(3), cov=-np.eye(3))\n";
        let o = Command::new(&py)
            .arg("-c")
            .arg(make)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "gaussian_loglik",
                file,
                "--signature",
                "float64[:,:], float64[:], float64[:,:]",
                "--inputs",
                "bad.npz",
                "--json",
            ],
        );
        assert!(!o.status.success());
        let out = stdout(&o);
        assert!(
            out.contains("Matrix is not positive definite"),
            "{out}\n{}",
            stderr(&o)
        );
    }

    /// A call inside a loop of independent iterations is refused at its
    /// line, and the source is left alone.
    #[test]
    fn a_call_inside_a_kernel_is_refused_at_its_line() {
        let tmp = tempfile::tempdir().unwrap();
        let file = "programs_linalg.py";
        std::fs::copy(fixture("migrate/programs_linalg.py"), tmp.path().join(file)).unwrap();
        let o = migrate_in(
            tmp.path(),
            &[
                "--function",
                "dets_in_a_loop",
                file,
                "--signature",
                "float64[:,:,:], float64[:]",
                "--json",
                "--write",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(j["status"], "refused");
        assert_eq!(j["reasons"][0]["line"], 117);
        assert_eq!(j["reasons"][0]["rewrite"], "linalg");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(file)).unwrap(),
            std::fs::read_to_string(fixture("migrate/programs_linalg.py")).unwrap()
        );
    }
}

/// Rules found broken by differential fuzzing (scripts/fuzz_diff.py),
/// each a function of fixtures/migrate/fuzz_found.py verified on inputs
/// that hold the values where the rule matters, on port's simulator and
/// under Numba's CUDA simulator.
mod fuzz_found {
    use super::{fixture, migrate_in, precision, stdout, verified_in};

    const NAN_INF: &str = "np.array([1.0, np.nan, -0.5, np.inf, -np.inf, 12.0, -0.0, 3.0])";

    fn given(function: &str, signature: &str, values: &str) {
        let tmp = tempfile::tempdir().unwrap();
        precision::make_inputs(tmp.path(), &format!("np.savez('inputs.npz', {values})"));
        let j = verified_in(
            &tmp,
            "migrate/fuzz_found.py",
            function,
            signature,
            &["--inputs", "inputs.npz"],
            "given",
        );
        assert_eq!(j["status"], "verified", "{j}");
    }

    /// `port migrate --json` of `function` in a fresh copy of the fixture
    /// in `dir`, with `extra` arguments.
    fn migrate_copy(
        dir: &std::path::Path,
        function: &str,
        signature: &str,
        extra: &[&str],
    ) -> std::process::Output {
        std::fs::copy(fixture("migrate/fuzz_found.py"), dir.join("fuzz_found.py")).unwrap();
        let mut args = vec![
            "fuzz_found.py",
            "--function",
            function,
            "--signature",
            signature,
            "--json",
        ];
        args.extend_from_slice(extra);
        migrate_in(dir, &args)
    }

    /// `port migrate --json` of `function` in the fixture: refused (exit 1).
    fn refused(function: &str, signature: &str) -> serde_json::Value {
        let tmp = tempfile::tempdir().unwrap();
        let o = migrate_copy(tmp.path(), function, signature, &[]);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(j["status"], "refused", "{j}");
        j
    }

    /// Python int products of elements, and floats made Python ints:
    /// verified where they stay within int64, checked in the kernels;
    /// inputs where one leaves it are inconclusive (exit 5: the migrated
    /// function runs the original), and under Numba's CUDA simulator the
    /// patched function does run it.
    #[test]
    fn python_ints_that_leave_int64_run_the_original() {
        let a = |top: &str| {
            format!(
                "a=np.array([-10, {top}, -7, 3, 0]), \
                 b=np.array([36, 6, 37, 65535, 2], dtype=np.uint16)"
            )
        };
        let out = ", out=np.zeros(5, dtype=np.int64)";
        let x = |top: &str| format!("x=np.array([1.5, -2.25, {top}, -3e7, 0.1]){out}");
        for (function, signature, small, huge) in [
            (
                "floor_products",
                "int64[:], uint16[:]",
                a("2**40"),
                a("2**63 - 1"),
            ),
            (
                "floor_products_into",
                "int64[:], uint16[:], int64[:]",
                a("2**40") + out,
                a("2**63 - 1") + out,
            ),
            (
                "floors_of_large_floats",
                "float64[:], int64[:]",
                x("1e6"),
                x("1e30"),
            ),
            (
                "python_int_total",
                "int64[:]",
                "a=np.array([2**62, 2**62, -2**62, -2**62, 5])".to_string(),
                "a=np.array([2**62, 2**62, 2**62, 5])".to_string(),
            ),
            (
                "python_int_product",
                "int64[:]",
                "a=np.arange(20)".to_string(),
                "a=np.full(100, 6)".to_string(),
            ),
            (
                "python_int_magnitudes",
                "int64[:]",
                "a=np.array([-2**63 + 1, 5, -7, 2**63 - 1])".to_string(),
                "a=np.array([3, -2**63, 4])".to_string(),
            ),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            precision::make_inputs(
                tmp.path(),
                &format!("np.savez('inputs.npz', {small}); np.savez('huge.npz', {huge})"),
            );
            verified_in(
                &tmp,
                "migrate/fuzz_found.py",
                function,
                signature,
                &["--inputs", "inputs.npz"],
                "given",
            );
            let patched = std::fs::read_to_string(tmp.path().join("fuzz_found.py")).unwrap();
            assert!(patched.contains("_port_overflow)"), "{patched}");
            let migration = tmp.path().join(format!(".port/migrations/{function}.json"));
            let o = std::process::Command::new(super::oracle_python())
                .arg(super::repo().join("verify/tests/numba_check.py"))
                .arg("sim")
                .arg(tmp.path().join("fuzz_found.py.port-bak"))
                .arg(tmp.path().join("fuzz_found.py"))
                .arg(&migration)
                .arg("--overflow")
                .arg(tmp.path().join("huge.npz"))
                .env("NUMBA_ENABLE_CUDASIM", "1")
                .output()
                .unwrap();
            assert!(
                o.status.success() && stdout(&o).contains("ok cudasim"),
                "{function}: {}\n{}",
                stdout(&o),
                super::stderr(&o)
            );
            // On the inputs that overflow: nothing verified, nothing wrong.
            let o = migrate_copy(tmp.path(), function, signature, &["--inputs", "huge.npz"]);
            assert_eq!(o.status.code(), Some(5), "{}", stdout(&o));
            let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert_eq!(j["status"], "inconclusive", "{j}");
            assert!(
                j["reasons"][0]["message"]
                    .as_str()
                    .unwrap()
                    .contains("Python int arithmetic"),
                "{j}"
            );
        }
    }

    /// Types that reach the return value through a reduction: the
    /// built-in `abs` of a NumPy bool is a bool, and a Python float summed
    /// across a loop stays a Python number beside a float32 array.
    #[test]
    fn reductions_keep_numpy_and_python_types() {
        given(
            "counts_of_numpy_bools",
            "int8[:]",
            "a=np.array([5, -3, 120, 7, 0, 2], dtype=np.int8)",
        );
        given(
            "python_float_accumulator",
            "float32[:], float64",
            "a=np.array([1.5, -2.0, 3.25, 0.5], dtype=np.float32), s=2.0",
        );
    }

    /// `math.sqrt(max(s, a[i], …))`: the winner's type does not matter to
    /// a float `math` function, so it is taken (a desugaring makes the
    /// arguments floats); an int64 past 2**53 and ties with the Python
    /// float among the inputs.
    #[test]
    fn a_winner_a_math_function_takes_has_one_type() {
        given(
            "winner_taken_by_math",
            "int64[:], float64",
            "a=np.array([0, 3, 9, 2, 100, 2**53 + 1, 1]), s=2.5",
        );
        given(
            "winner_made_a_float",
            "uint32[:], int8[:], float64[:]",
            "a=np.array([0, 3, 4000000000, 2, 7], dtype=np.uint32), \
             b=np.array([-128, 3, 127, 5, 0], dtype=np.int8), out=np.zeros(5)",
        );
    }

    #[test]
    fn python_ints_in_kernels_wrap_beside_unsigned_arrays() {
        given(
            "python_ints_in_kernels_are_weak",
            "uint16[:]",
            "a=np.array([5, 3, 9, 65535, 4, 7], dtype=np.uint16)",
        );
    }

    #[test]
    fn integer_powers_stay_integers_and_float_power_is_float64() {
        given(
            "integer_powers_stay_integers",
            "int64[:], float32[:]",
            "a=np.array([2**20 + 1, -3, 0, 7, 123457, -2**19 - 3]), \
             x32=np.array([0.5, 2, 3, 4, 5, 1e-3], dtype=np.float32)",
        );
    }

    #[test]
    fn bool_arrays_squared_are_int8_and_their_power_int64() {
        given(
            "bool_arrays_squared",
            "float64[:], float64[:]",
            "a=np.array([1.0, 2, 3, -1]), b=np.array([2.0, 1, 3, 0])",
        );
    }

    #[test]
    fn complex_division_by_zero_is_numpys() {
        given(
            "complex_division_by_zero",
            "complex128[:], complex128[:], uint16[:]",
            "a=np.array([1+2j, -1+0j, 0j, 1e300+1e300j, 3-4j, 2j, np.nan+1j]), \
             b=np.array([0j, 0j, 0j, 1e300-1e300j, -0.0+0j, 1e-300+1e-300j, 1+1j]), \
             k=np.array([0, 3, 0, 7, 65535, 1, 0], dtype=np.uint16)",
        );
    }

    #[test]
    fn builtin_max_of_two_types_is_refused_with_its_reason() {
        let j = refused("builtin_max_of_two_types", "float32[:], uint16");
        let why = j.to_string();
        assert!(
            why.contains("returns the winning argument with its own type")
                && why.contains("a Python float, uint16"),
            "{why}"
        );
    }

    #[test]
    fn a_returned_type_that_depends_on_a_branch_is_refused() {
        let j = refused("int_unless_a_branch_runs", "float64[:]");
        let r = &j["reasons"][0];
        assert_eq!(r["line"], 256, "{j}");
        let msg = r["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`acc` is returned as a Python int or as a NumPy float64, depending on whether the binding at line 255 runs")
                && msg.ends_with("start it as a float (`acc = 0.0`)"),
            "{msg}"
        );
    }

    #[test]
    fn a_python_int_that_becomes_int32_only_in_a_branch_is_refused_int64_verifies() {
        let j = refused("int32_unless_a_branch_runs", "int32[:], int64");
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`acc` is returned as a Python int or as a NumPy int32")
                && msg.ends_with("start it as that type (`acc = np.int32(0)`)"),
            "{msg}"
        );
        // Nothing passes the `if` here: CPython returns the int 0, which
        // is what an int64 kernel gives too.
        given(
            "int32_unless_a_branch_runs",
            "int64[:], int64",
            "c=np.array([1, 5, -2, 7]), s=100",
        );
    }

    #[test]
    fn a_returned_winner_of_builtin_max_with_a_python_int_is_refused() {
        let j = refused("winner_keeps_its_type", "int32[:]");
        let r = &j["reasons"][0];
        let msg = r["message"].as_str().unwrap();
        assert_eq!(r["line"], 280, "{j}");
        assert!(
            msg.starts_with("`acc`, returned here, is a Python int or a NumPy int32, depending on which argument of the `min`/`max` at line 279 wins"),
            "{msg}"
        );
        // Negative elements: the Python int 0 wins, so CPython returns an int.
        given(
            "winner_keeps_its_type",
            "int64[:]",
            "a=np.array([-3, -5, -1, -7])",
        );
        given(
            "winner_stored",
            "int32[:], int32[:]",
            "a=np.array([-3, 5, -1, 7], dtype=np.int32), out=np.zeros(4, dtype=np.int32)",
        );
        // A `min` around the `max` passes its winner on.
        let j = refused("nested_winner_keeps_its_type", "float64[:], float64[:]");
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`acc`, returned here, is a Python int or a NumPy float64"),
            "{msg}"
        );
    }

    #[test]
    fn a_winner_of_builtin_min_passed_through_arithmetic_is_refused_where_returned() {
        // Seed 905074: the Python float or the float32 element wins, and a
        // NumPy bool plus each is float64 or float32.
        let j = refused(
            "winner_flows_into_arithmetic",
            "float64[:], float32[:], float64",
        );
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`acc1`, returned here, is a Python float or a NumPy float32, depending on which argument of the `min`/`max` at line"),
            "{msg}"
        );
        // A `min` reduction keeps its Python start until an element beats it.
        let j = refused("minimum_from_a_python_start", "float32[:]");
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`m`, returned here, is a Python float or a NumPy float32"),
            "{msg}"
        );
        // The same starts over float64 elements: one type either way.
        given(
            "minimum_from_a_python_start",
            "float64[:]",
            "b=np.array([0.5, 2.0, 0.25])",
        );
        // Stored, the winner takes the array's dtype, whichever wins.
        given(
            "winner_stored_after_arithmetic",
            "float64[:], float32[:], float64, float32[:]",
            "a=np.array([0.1, 0.9, 0.2, 0.7]), b=np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32), \
             s=0.3, out=np.zeros(4, dtype=np.float32)",
        );
    }

    #[test]
    fn a_conditional_expression_with_branches_of_two_types_is_refused_where_returned() {
        let j = refused("branch_keeps_its_type", "float64[:], float32[:]");
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`x`, returned here, is a Python float or a NumPy float32, depending on which branch of the conditional expression at line"),
            "{msg}"
        );
        given(
            "branch_joined_by_arithmetic",
            "float64[:], float32[:]",
            "a=np.array([0.25, 3.0, 0.75]), b=np.array([1.5, -2.0, 4.0], dtype=np.float32)",
        );
    }

    #[test]
    fn a_reduction_over_an_empty_range_returns_the_python_number_it_started_as() {
        for values in [
            "x=np.zeros(0, dtype=np.uint64), y=np.zeros((0, 3), dtype=np.float32)",
            "x=np.array([3, 2**63, 5], dtype=np.uint64), y=np.ones((2, 3), dtype=np.float32)",
        ] {
            given(
                "sum_of_nothing_is_the_python_start",
                "uint64[:], float32[:, :]",
                values,
            );
        }
    }

    #[test]
    fn a_numpy_scalar_widened_only_in_a_branch_is_refused_and_by_a_loop_verifies() {
        let j = refused("widened_only_where_it_runs", "float32[:], uint64[:]");
        let msg = j["reasons"][0]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("`acc` is returned as a NumPy float32 or as a NumPy float64, depending on whether the binding at line"),
            "{msg}"
        );
        for v in [
            "np.zeros(0, dtype=np.uint64)",
            "np.array([1, 200, 3], dtype=np.uint64)",
        ] {
            given(
                "widened_by_its_loop",
                "float32[:], uint64[:]",
                &format!("a=np.array([0.5, 2], dtype=np.float32), v={v}"),
            );
        }
    }

    #[test]
    fn values_whose_type_or_order_port_cannot_keep_are_refused_with_their_reason() {
        for (function, signature, why) in [
            (
                "negated_winner_beside_unsigned",
                "uint32[:], int64, int64[:]",
                "these differ (uint32, a Python int)",
            ),
            (
                "int64_or_float_helper",
                "int64[:], bool[:]",
                "holds such integers exactly only up to 2**53",
            ),
            (
                "python_numbers_of_two_kinds",
                "int64[:], int64[:]",
                "these differ (a Python float, a Python int)",
            ),
            (
                "python_bool_beside_a_float",
                "float32[:], float64",
                "these differ (float32, a Python bool)",
            ),
            (
                "complex_product",
                "complex128[:]",
                "a product of complex numbers across a parallel loop or a whole array",
            ),
        ] {
            let j = refused(function, signature);
            assert!(j.to_string().contains(why), "{function}: {j}");
        }
    }

    #[test]
    fn complex_tanh_and_tan_are_c99s_at_infinite_and_large_parts() {
        for t in ["complex128", "complex64"] {
            given(
                "complex_tanh_at_infinity",
                &format!("{t}[:], {t}[:]"),
                &format!(
                    "z=np.array([np.inf+3.6j, -np.inf-1j, 30+2j, -25+0.5j, 1+30j, 2-40j, \
                     0.3+0.2j, 19+1j, 23-1j, complex(np.nan, np.inf)], dtype=np.{t}), \
                     w=np.array([complex(3.6, np.inf), complex(-1, -np.inf), 2+30j, 0.5-25j, \
                     30+1j, 40-2j, 0.2+0.3j, 1+19j, -1+23j, complex(np.inf, np.nan)], dtype=np.{t})"
                ),
            );
        }
    }

    #[test]
    fn scattered_adds_into_16_bit_counts_are_refused_32_bit_ones_verify() {
        let j = refused("small_int_histogram", "int64[:], int16[:]");
        assert!(
            j.to_string()
                .contains("atomic update of int16 elements (numba-cuda has no atomic for them"),
            "{j}"
        );
        given(
            "small_int_histogram",
            "int64[:], int32[:]",
            "keys=np.array([3, 1, 3, 0, 3, 2], dtype=np.int64), counts=np.zeros(4, dtype=np.int32)",
        );
    }

    #[test]
    fn dot_of_int16_wraps_and_abs_of_a_python_int_stays_weak() {
        given(
            "dot_of_shorts_wraps",
            "int16[:], boolean[:]",
            "a=np.array([32000, 700, -5, 90], dtype=np.int16), flags=np.array([True, True, False, True])",
        );
        given(
            "abs_of_a_python_int_is_weak",
            "uint8[:], int64",
            "img=np.array([30, 31, 200, 7], dtype=np.uint8), k=np.int64(7)",
        );
    }

    #[test]
    fn floor_ceil_and_trunc_of_infinities_stay_floats_in_the_numba_module() {
        given(
            "floor_ceil_trunc_of_infinities",
            "float64[:]",
            "a=np.array([1.5, -2.5, np.nan, np.inf, -np.inf, -0.0, 3e300, -7.25])",
        );
    }

    #[test]
    fn python_min_keeps_its_first_argument() {
        given(
            "python_min_keeps_first",
            "float64[:], float64",
            &format!("a={NAN_INF}, s=np.float64(1.5)"),
        );
    }

    #[test]
    fn numpy_minimum_propagates_nan_from_either_side() {
        given(
            "numpy_minimum_propagates_nan",
            "float64[:], float64[:]",
            &format!("a={NAN_INF}, b={NAN_INF}[::-1].copy()"),
        );
    }

    #[test]
    fn floor_division_of_floats_is_numpys() {
        given(
            "floor_quotients",
            "float64[:], float64[:]",
            "a=np.array([1.0, np.inf, -np.inf, 7.5, -7.5, 5.0, -0.0, np.nan, 1e300]), \
             d=np.array([0.1, 3.0, 3.0, -2.0, 2.0, 0.0, -3.0, 1.0, 1e-300])",
        );
    }

    #[test]
    fn unsigned_values_compare_with_python_ints_by_value() {
        given(
            "unsigned_against_python_ints",
            "uint16[:], int64",
            "levels=np.array([0, 1, 7, 65535, 300], dtype=np.uint16), step=np.int64(-3)",
        );
    }

    #[test]
    fn uint64_values_stay_unsigned_beside_python_ints() {
        given(
            "huge_unsigned_floor",
            "uint64[:]",
            "b=np.array([0, 5, 2**64 - 1, 2**63, 7], dtype=np.uint64)",
        );
    }

    #[test]
    fn bools_are_ordered_floored_and_reduced() {
        given(
            "ordered_bools",
            "float64[:], float64[:]",
            "a=rng.standard_normal(1000), b=rng.standard_normal(1000)",
        );
    }

    #[test]
    fn a_rebound_helper_parameter_takes_the_wider_type() {
        given(
            "rebound_parameter_widens",
            "int64[:], float64[:]",
            "a=np.array([1, 2, 3, 0, 1, -4]), b=np.array([0.3, 0.6, 0.9, 1.2, 1.5, 2.0])",
        );
    }

    #[test]
    fn complex_values_stored_as_real_keep_the_real_part() {
        given(
            "real_part_of_complex",
            "complex128[:]",
            "z=np.array([1 + 2j, -0.5j, 0j, 3.5 + 0j, np.nan + 1j])",
        );
    }

    #[test]
    fn numpy_bools_add_as_or_and_multiply_as_and() {
        given(
            "bool_arithmetic_is_numpys",
            "float64[:], float64[:]",
            "a=rng.standard_normal(300), b=rng.standard_normal(300)",
        );
    }

    #[test]
    fn reduction_starting_values_keep_every_part_and_bit() {
        given(
            "reductions_started_from_an_element",
            "complex128[:], int64[:]",
            "z=np.array([1 + 2j, -0.5j, 3 - 1j, 0.25 + 0j]), \
             big=np.array([2**62 + 1, 5, 2**61 + 3], dtype=np.int64)",
        );
    }

    #[test]
    fn numpy_floor_of_integers_keeps_their_type() {
        given(
            "floor_of_unsigned_wraps",
            "uint32[:]",
            "a=np.array([13, 40, 0, 4294967295], dtype=np.uint32)",
        );
    }

    #[test]
    fn accumulators_from_python_literals_take_the_added_type() {
        given(
            "python_literal_accumulators",
            "uint8[:], float32[:]",
            "img=np.arange(200, 250, dtype=np.uint8), \
             x32=(rng.standard_normal(50) * 1000).astype(np.float32)",
        );
    }

    #[test]
    fn sign_of_nan_any_of_empty_and_dot_of_bools() {
        given(
            "sign_any_and_bool_dot",
            "float64[:], boolean[:], boolean[:]",
            &format!(
                "a={NAN_INF}, flags=np.array([True, False, True, False]), \
                 other=np.array([False, False, True, True])"
            ),
        );
    }

    #[test]
    fn math_results_are_weak_python_numbers() {
        given(
            "math_results_are_python_numbers",
            "uint8[:]",
            "img=np.array([6, 16, 38, 3, 7], dtype=np.uint8)",
        );
    }

    #[test]
    fn int16_sines_are_float32() {
        given(
            "sine_of_shorts",
            "int16[:]",
            "x=np.arange(-300, 300, dtype=np.int16)",
        );
    }

    #[test]
    fn uint8_sines_are_refused_as_float16() {
        let j = refused("sine_of_bytes", "uint8[:]");
        assert!(
            j["reasons"][0]["message"]
                .as_str()
                .unwrap()
                .contains("float16"),
            "{j}"
        );
    }
}

/// Loops the persist pass runs as one kernel by one of its rules
/// (fixtures/migrate/persist_rules.py; `tests/persist.rs` forces the
/// persistent kernel under Numba, which the wrapper does not choose
/// there).
mod persist_rules {
    use super::verified;

    fn rule(function: &str, signature: &str) {
        verified("migrate/persist_rules.py", function, signature, &[]);
    }

    #[test]
    fn mirror_relax() {
        rule("mirror_relax", "float64[:], float64");
    }

    #[test]
    fn corner_transpose() {
        rule("corner_transpose", "float64[:, :], float64");
    }

    #[test]
    fn upper_from_columns() {
        rule("upper_from_columns", "float64[:, :], float64");
    }

    #[test]
    fn rescaled_steps() {
        rule("rescaled_steps", "float64[:], float64[:], int64");
    }

    #[test]
    fn damped_updates() {
        rule("damped_updates", "float64[:], float64[:], int64");
    }

    #[test]
    fn alternating_smooth() {
        rule("alternating_smooth", "float64[:], float64[:], int64");
    }
}
