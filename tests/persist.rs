//! Persistent kernels (`rewriter/src/schedule/persist.rs`): a host time
//! loop whose iterations are small runs as one launch of one block, the
//! loop inside it; a wide one still launches its kernels per iteration;
//! a loop that needs the host between iterations stays there and the
//! plan's log says why. The emitted numba-cuda kernel runs too.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fixture, migrate_in, repo, stderr, stdout};

/// Writes `name.npz` in `dir` from Python keyword arguments of `np.savez`.
fn npz(dir: &Path, name: &str, entries: &str) -> String {
    let file = format!("{name}.npz");
    let o = Command::new(repo().join(".venv/bin/python"))
        .arg("-c")
        .arg(format!(
            "import numpy as np; rng = np.random.default_rng(1); np.savez({file:?}, {entries})"
        ))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    file
}

/// `port migrate ARGS --json --backend simulator`, with the pass off
/// (`PORT_PERSIST=0`) unless `persist`.
fn migrate_json(dir: &Path, args: &[&str], persist: bool) -> serde_json::Value {
    let python = repo().join(".venv/bin/python");
    let o = Command::new(env!("CARGO_BIN_EXE_port"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("PORT_PERSIST", if persist { "1" } else { "0" })
        .arg("migrate")
        .args(args)
        .args(["--json", "--backend", "simulator", "--python"])
        .arg(&python)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)))
}

/// (kernel, launches per call) as the report counts them.
fn launches(d: &serde_json::Value) -> Vec<(String, u64)> {
    d["launches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["kernel"].as_str().unwrap().to_string(),
                l["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Runs `script` with the Numba oracle venv's Python in `dir`, its kernels
/// on Numba's CUDA simulator; its standard output.
fn under_numba(dir: &Path, script: &str) -> String {
    let oracle = repo().join(".venv-oracle/bin/python");
    assert!(
        oracle.exists(),
        "{} is missing: run make test",
        oracle.display()
    );
    let o = Command::new(&oracle)
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("NUMBA_ENABLE_CUDASIM", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    stdout(&o)
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn persist_note(d: &serde_json::Value) -> (bool, String) {
    let r = d["rewrites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rewrite"] == "persist")
        .expect("the log lists persist");
    (
        r["applied"].as_bool().unwrap(),
        r["note"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_small_time_loop_is_one_launch_and_a_wide_one_launches_per_step() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("migrate/programs.py"),
        tmp.path().join("programs.py"),
    )
    .unwrap();
    let small = npz(
        tmp.path(),
        "small",
        "A=rng.random(100), B=rng.random(100), tsteps=np.int64(50)",
    );
    let wide = npz(
        tmp.path(),
        "wide",
        "A=rng.random(5000), B=rng.random(5000), tsteps=np.int64(4)",
    );
    let args = |inputs: &str| -> Vec<String> {
        ["programs.py", "--function", "jacobi_1d", "--inputs", inputs]
            .map(String::from)
            .to_vec()
    };

    let d = migrate_json(tmp.path(), &strs(&args(&small)), true);
    assert_eq!(d["status"], "verified", "{d}");
    assert_eq!(launches(&d), [("jacobi_1d_loop_t".to_string(), 1)], "{d}");
    let (applied, note) = persist_note(&d);
    assert!(applied, "{note}");
    assert!(
        note.contains("the loop over `t` runs in one kernel (jacobi_1d_loop_t, one block of 256 threads) when each of the 2 kernels of its body covers at most 2048 elements"),
        "{note}"
    );

    // 4998 elements per kernel: the launches per step, verified the same.
    let d = migrate_json(tmp.path(), &strs(&args(&wide)), true);
    assert_eq!(d["status"], "verified", "{d}");
    assert_eq!(
        launches(&d),
        [
            ("jacobi_1d_B".to_string(), 3),
            ("jacobi_1d_A".to_string(), 3)
        ],
        "{d}"
    );

    // The pass off: the same small call launches per step.
    let d = migrate_json(tmp.path(), &strs(&args(&small)), false);
    assert_eq!(d["status"], "verified", "{d}");
    assert_eq!(
        launches(&d),
        [
            ("jacobi_1d_B".to_string(), 49),
            ("jacobi_1d_A".to_string(), 49)
        ],
        "{d}"
    );
    assert!(!persist_note(&d).0);
}

#[test]
fn a_loop_the_host_must_see_between_iterations_stays_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("migrate/programs.py"),
        tmp.path().join("programs.py"),
    )
    .unwrap();
    // u_next = np.zeros_like(u) in each step, then u = u_next: a new array
    // per iteration and names rebound.
    let d = migrate_json(
        tmp.path(),
        &["programs.py", "--function", "wave_1d", "--size", "1000"],
        true,
    );
    assert_eq!(d["status"], "verified", "{d}");
    let (applied, note) = persist_note(&d);
    assert!(!applied, "{note}");
    assert_eq!(
        note,
        "not applied: the loop over `t` launches per iteration: the body has rebound arrays"
    );
}

/// The wrapper `--write` keeps runs the persistent kernel it emits
/// (numba-cuda, on its CUDA simulator, with the choice forced: the wrapper
/// itself takes the per-step kernels there) to the original's result.
#[test]
fn the_emitted_persistent_kernel_matches_the_original_under_numba() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("migrate/programs.py"),
        tmp.path().join("programs.py"),
    )
    .unwrap();
    let small = npz(
        tmp.path(),
        "small",
        "A=rng.random(40), B=rng.random(40), tsteps=np.int64(4)",
    );
    let o = migrate_in(
        tmp.path(),
        &[
            "programs.py",
            "--function",
            "jacobi_1d",
            "--inputs",
            &small,
            "--backend",
            "simulator",
            "--write",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let patched = std::fs::read_to_string(tmp.path().join("programs.py")).unwrap();
    assert!(patched.contains("def jacobi_1d_loop_t("), "{patched}");
    assert!(patched.contains("cuda.syncthreads()"), "{patched}");
    let script = r#"
import numpy as np
import programs
programs._port_simulated = lambda: False
class Counted:
    """The persistent kernel's dispatcher, counting its launches."""
    def __init__(self, k):
        self.k, self.n = k, 0
    def __getitem__(self, config):
        self.n += 1
        return self.k[config]
programs.jacobi_1d_loop_t = Counted(programs.jacobi_1d_loop_t)
d = np.load("small.npz")
a, b = d["A"].copy(), d["B"].copy()
programs.jacobi_1d(a, b, int(d["tsteps"]))
ea, eb = d["A"].copy(), d["B"].copy()
programs._port_original_jacobi_1d(ea, eb, int(d["tsteps"]))
assert np.allclose(a, ea) and np.allclose(b, eb), (a - ea, b - eb)
print("same, persistent launches:", programs.jacobi_1d_loop_t.n)
"#;
    let out = under_numba(tmp.path(), script);
    assert!(out.contains("same, persistent launches: 1"), "{out}");
}

/// A loop variable reused by a second loop is each loop's own, and a shape
/// guard of the body the loop does not change is checked once before the
/// persistent kernel, only when the loop runs: the kept wrapper raises
/// NumPy's error where the original did, and returns where the original
/// ran no iteration.
#[test]
fn reused_loop_variables_and_invariant_guards_keep_the_originals_behaviour() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("prog.py"),
        "import numpy as np\n\n\n\
def two_sweeps(u, v, n):\n    for j in range(1, n):\n        u[:, j] = u[:, j - 1] * 0.5 + v[:, j]\n    for j in range(1, n):\n        v[:, j] = v[:, j - 1] * 0.5 + u[:, j]\n    return u, v\n\n\n\
def mix(a, b, nt):\n    c = a[1:] * 1.0\n    d = b[:-1] * 1.0\n    for t in range(nt):\n        c[:] = 0.5 * (c + d)\n    return c\n",
    )
    .unwrap();
    let d = migrate_json(
        tmp.path(),
        &["prog.py", "--function", "two_sweeps", "--size", "1000"],
        true,
    );
    assert_eq!(d["status"], "verified", "{d}");
    assert_eq!(
        launches(&d),
        [
            ("two_sweeps_loop_j".to_string(), 1),
            ("two_sweeps_loop_j_2".to_string(), 1)
        ],
        "{d}"
    );

    // Shapes the loop's guard refuses, on a call that runs no iteration:
    // the original returns, and so does the plan (the guard is not checked).
    let unequal = npz(
        tmp.path(),
        "unequal",
        "a=np.arange(10.0), b=np.arange(12.0), nt=np.int64(0)",
    );
    let d = migrate_json(
        tmp.path(),
        &["prog.py", "--function", "mix", "--inputs", &unequal],
        true,
    );
    assert_eq!(d["status"], "verified", "{d}");
    assert!(persist_note(&d).0, "{d}");

    let o = migrate_in(
        tmp.path(),
        &[
            "prog.py",
            "--function",
            "mix",
            "--signature",
            "float64[:], float64[:], int64",
            "--size",
            "1000",
            "--backend",
            "simulator",
            "--write",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("the loop over `t` runs in one kernel"),
        "{}",
        stdout(&o)
    );
    let script = r#"
import numpy as np
import prog
prog._port_simulated = lambda: False
a, b = np.arange(10.0), np.arange(10.0) + 1
assert np.allclose(prog.mix(a, b, 3), prog._port_original_mix(a, b, 3))
a, b = np.arange(10.0), np.arange(12.0)
def outcome(f, nt):
    try:
        return "returned %s" % (f(a, b, nt).shape,)
    except ValueError as e:
        return "raised ValueError" + (" (broadcast)" if "broadcast" in str(e) else ": %s" % e)
for nt in (3, 0):
    print(nt, "wrapper", outcome(prog.mix, nt), "| original", outcome(prog._port_original_mix, nt))
"#;
    let out = under_numba(tmp.path(), script);
    assert!(
        out.contains(
            "3 wrapper raised ValueError (broadcast) | original raised ValueError (broadcast)"
        ),
        "{out}"
    );
    assert!(
        out.contains("0 wrapper returned (9,) | original returned (9,)"),
        "{out}"
    );
}

/// A shape guard the loop changes (`L[i, :i] @ x[:i]`: both extents are
/// `i`'s) is checked in the persistent kernel at the iteration where the
/// host checked it: a triangular solve runs as one launch, and on a call
/// whose shapes disagree from some row on (`L` narrower than `x` is
/// long), the kept wrapper raises where the original raised.
#[test]
fn a_guard_the_loop_changes_is_checked_in_the_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("tri.py"),
        "import numpy as np\n\n\n\
def trisolve(L, d, x, b):\n    for i in range(b.shape[0]):\n        x[i] = (b[i] - L[i, :i] @ x[:i]) / d[i]\n    return x\n",
    )
    .unwrap();
    let inputs = npz(
        tmp.path(),
        "tri",
        "L=np.tril(rng.random((60, 60))), d=rng.random(60) + 60, x=np.zeros(60), b=rng.random(60)",
    );
    let d = migrate_json(
        tmp.path(),
        &["tri.py", "--function", "trisolve", "--inputs", &inputs],
        true,
    );
    assert_eq!(d["status"], "verified", "{d}");
    assert_eq!(launches(&d), [("trisolve_loop_i".to_string(), 1)], "{d}");

    let o = migrate_in(
        tmp.path(),
        &[
            "tri.py",
            "--function",
            "trisolve",
            "--inputs",
            &inputs,
            "--backend",
            "simulator",
            "--write",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let script = r#"
import numpy as np
import tri
tri._port_simulated = lambda: False
rng = np.random.default_rng(2)
L, d, b = np.tril(rng.random((8, 8))), rng.random(8) + 8, rng.random(8)
assert np.allclose(tri.trisolve(L, d, np.zeros(8), b), tri._port_original_trisolve(L, d, np.zeros(8), b))
def outcome(f):
    try:
        f(L[:, :5].copy(), d, np.zeros(8), b)
        return "returned"
    except (ValueError, IndexError) as e:
        return "raised %s%s" % (type(e).__name__, " (line 6)" if "line 6" in str(e) else "")
print("wrapper", outcome(tri.trisolve), "| original", outcome(tri._port_original_trisolve))
"#;
    let out = under_numba(tmp.path(), script);
    assert!(
        out.contains("wrapper raised ValueError (line 6) | original raised ValueError"),
        "{out}"
    );
}

/// `fixtures/migrate/persist_rules.py` copied into `dir`.
fn rules_fixture(dir: &Path) {
    std::fs::copy(
        fixture("migrate/persist_rules.py"),
        dir.join("persist_rules.py"),
    )
    .unwrap();
}

/// Migrates `function` of `persist_rules.py` on `inputs` with the pass on
/// and off: verified both ways, one launch of `{function}_loop_{var}`
/// with it, and more without it (the total launches per call without it).
fn one_launch_instead_of(dir: &Path, function: &str, inputs: &str, var: &str) -> u64 {
    let args = [
        "persist_rules.py",
        "--function",
        function,
        "--inputs",
        inputs,
    ];
    let d = migrate_json(dir, &args, true);
    assert_eq!(d["status"], "verified", "{d}");
    let kernel = format!("{function}_loop_{var}");
    assert_eq!(launches(&d), [(kernel.clone(), 1)], "{d}");
    let (applied, note) = persist_note(&d);
    assert!(applied, "{note}");
    assert!(
        note.contains(&format!(
            "the loop over `{var}` runs in one kernel ({kernel}, "
        )),
        "{note}"
    );
    let d = migrate_json(dir, &args, false);
    assert_eq!(d["status"], "verified", "{d}");
    let before: u64 = launches(&d).iter().map(|(_, n)| n).sum();
    assert!(before > 1, "{d}");
    before
}

/// `source` written to `file` in `dir` and its `function` migrated on
/// `inputs`: verified, with its loop kept on the host. Gives the pass's
/// note, which says why.
fn kept_on_host(dir: &Path, file: &str, source: &str, function: &str, inputs: &str) -> String {
    std::fs::write(dir.join(file), source).unwrap();
    let d = migrate_json(
        dir,
        &[file, "--function", function, "--inputs", inputs],
        true,
    );
    assert_eq!(d["status"], "verified", "{d}");
    let (applied, note) = persist_note(&d);
    assert!(!applied, "{note}");
    note
}

/// In a folder of its own (`--write` patches the file): `port migrate
/// --write` of `function` in `persist_rules.py` on the inputs `entries`
/// make, then, under Numba's CUDA simulator with the persistent choice
/// forced, the patched function and the original on copies of the
/// inputs: they agree, and `{function}_loop_{var}` was launched once.
fn forced_under_numba(function: &str, entries: &str, var: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    rules_fixture(dir);
    let inputs = &npz(dir, "small", entries);
    let kernel = format!("{function}_loop_{var}");
    let o = migrate_in(
        dir,
        &[
            "persist_rules.py",
            "--function",
            function,
            "--inputs",
            inputs,
            "--backend",
            "simulator",
            "--write",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let script = format!(
        r#"
import numpy as np
import persist_rules as m
m._port_simulated = lambda: False
class Counted:
    """The persistent kernel's dispatcher, counting its launches."""
    def __init__(self, k):
        self.k, self.n = k, 0
    def __getitem__(self, config):
        self.n += 1
        return self.k[config]
m.{kernel} = Counted(m.{kernel})
d = np.load({inputs:?})
def args():
    return [d[k].copy() if d[k].ndim else d[k][()] for k in d.files]
got = m.{function}(*args())
want = m._port_original_{function}(*args())
assert np.allclose(got, want), (got, want)
print("same, persistent launches:", m.{kernel}.n)
"#
    );
    let out = under_numba(dir, &script);
    assert!(out.contains("same, persistent launches: 1"), "{out}");
}

/// A temporary whose extents change with the loop (`np.flip(h[:k])`
/// stored into `h[:k]` needs one of `k` elements) is allocated once at
/// its widest, each iteration using its prefix: growing, shrinking and
/// two-dimensional ones each run as one launch, verified against CPython,
/// and the emitted kernel gives the original's results under Numba.
#[test]
fn a_temporary_whose_extent_changes_is_allocated_at_its_widest() {
    let tmp = tempfile::tempdir().unwrap();
    rules_fixture(tmp.path());
    let dir = tmp.path();
    let h = npz(dir, "h", "h=rng.random(300), c=np.float64(0.25)");
    assert_eq!(one_launch_instead_of(dir, "mirror_relax", &h, "k"), 2 * 298);
    let a = npz(dir, "a", "a=rng.random((30, 30)), c=np.float64(0.5)");
    assert_eq!(
        one_launch_instead_of(dir, "corner_transpose", &a, "k"),
        2 * 30
    );
    let x = npz(dir, "x", "x=rng.random((20, 40)), s=np.float64(0.5)");
    assert!(one_launch_instead_of(dir, "upper_from_columns", &x, "i") >= 2 * 40);

    // An extent that is not monotone in the loop: the loop stays, and
    // the log says why.
    let note = kept_on_host(
        dir,
        "wobble.py",
        "import numpy as np\n\n\n\
def wobble(h, c):\n    for k in range(1, h.shape[0]):\n        h[:k % 5 + 1] = np.flip(h[:k % 5 + 1]) * c\n    return h\n",
        "wobble",
        &h,
    );
    assert_eq!(
        note,
        "not applied: the loop over `k` launches per iteration: the shape of `h_tmp` changes with the loop, not monotonically"
    );

    forced_under_numba("mirror_relax", "h=rng.random(12), c=np.float64(0.25)", "k");
    forced_under_numba(
        "corner_transpose",
        "a=rng.random((6, 6)), c=np.float64(0.5)",
        "k",
    );
}

/// A value the host read back from the device each iteration (a norm, a
/// mean) and used only by the loop's later kernels and host arithmetic
/// becomes a local of every thread, read after the barrier; a host scalar
/// carried from one iteration to the next (`rate = rate / …`) starts from
/// the host's value. Both loops run as one launch, verified against
/// CPython and under Numba; a carried scalar the host reads after the
/// loop keeps it on the host, saying so.
#[test]
fn a_value_read_back_only_for_the_loop_stays_on_the_device() {
    let tmp = tempfile::tempdir().unwrap();
    rules_fixture(tmp.path());
    let dir = tmp.path();
    let v = npz(
        dir,
        "v",
        "v=rng.random(500), w=rng.random(500), steps=np.int64(40)",
    );
    assert_eq!(
        one_launch_instead_of(dir, "rescaled_steps", &v, "t"),
        3 * 40
    );
    let x = npz(
        dir,
        "x",
        "x=rng.random(500), g=rng.random(500), steps=np.int64(40)",
    );
    assert_eq!(
        one_launch_instead_of(dir, "damped_updates", &x, "t"),
        2 * 40
    );

    let note = kept_on_host(
        dir,
        "rate.py",
        "import numpy as np\n\n\n\
def final_rate(x, g, steps):\n    rate = 1.0\n    for t in range(steps):\n        d = np.mean(g * x)\n        rate = rate / (1.0 + abs(d))\n        x[:] = x - rate * g\n    return rate\n",
        "final_rate",
        &x,
    );
    assert_eq!(
        note,
        "not applied: the loop over `t` launches per iteration: `rate` is read after the loop"
    );

    for (function, inputs) in [
        (
            "rescaled_steps",
            "v=rng.random(16), w=rng.random(16), steps=np.int64(3)",
        ),
        (
            "damped_updates",
            "x=rng.random(16), g=rng.random(16), steps=np.int64(3)",
        ),
    ] {
        forced_under_numba(function, inputs, "t");
    }
}

/// A host `if` in the body whose condition reads only the loop's variable
/// and host scalars (the same in every thread) becomes an `if` of the
/// kernel around its branches' phases, barriers included: the loop runs
/// as one launch, verified against CPython and under Numba. An `if` that
/// leaves the loop still keeps it on the host, saying why.
#[test]
fn an_if_on_a_uniform_condition_runs_in_the_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    rules_fixture(tmp.path());
    let dir = tmp.path();
    let u = npz(
        dir,
        "u",
        "u=rng.random(400), w=rng.random(400), steps=np.int64(30)",
    );
    assert!(one_launch_instead_of(dir, "alternating_smooth", &u, "t") >= 2 * 30);

    let note = kept_on_host(
        dir,
        "until.py",
        "import numpy as np\n\n\n\
def until_negative(u, w, steps):\n    for t in range(steps):\n        u[1:-1] = 0.5 * (u[:-2] + u[2:]) - w[1:-1]\n        if u[1] < 0.0:\n            break\n    return u\n",
        "until_negative",
        &u,
    );
    assert!(note.contains("the body has a `break`"), "{note}");

    forced_under_numba(
        "alternating_smooth",
        "u=rng.random(12), w=rng.random(12), steps=np.int64(5)",
        "t",
    );
}
