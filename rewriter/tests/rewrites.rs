//! The rewriter as a library: each named rewrite on the fixtures, the IR it
//! builds (verified by codegen), the Python it prints, and its refusals.

mod common;

use port_codegen::ir::{Expr, Stmt, Type};
use port_rewriter::plan::Fill;
use port_rewriter::{
    migrate, parse_signature, AppFacts, HostStep, MigrationRequest, Outcome, PlanKind,
};
use rustpython_parser::Parse;

use common::{fixture, migrated, refused};

fn applied(m: &port_rewriter::Migration, rewrite: &str) -> bool {
    m.plan
        .rewrites
        .iter()
        .any(|r| r.rewrite == rewrite && r.applied)
}

fn has(body: &[Stmt], pred: &dyn Fn(&Stmt) -> bool) -> bool {
    body.iter().any(|s| {
        pred(s)
            || match s {
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => has(then_body, pred) || has(else_body, pred),
                Stmt::While { body, .. } | Stmt::For { body, .. } => has(body, pred),
                Stmt::ParallelFor(p) => has(&p.body, pred),
                _ => false,
            }
    })
}

/// Every migration's IR verifies and its Python parses.
fn check(m: &port_rewriter::Migration) {
    port_codegen::verify::verify_module(&m.plan.module).expect("valid IR");
    rustpython_parser::ast::Suite::parse(&m.python, "<migrated>").expect("valid Python");
    rustpython_parser::ast::Suite::parse(&m.new_source, "<patched>").expect("valid patched file");
}

fn migrate_src(src: &str, function: &str, sig: &str) -> Outcome {
    let types = parse_signature(sig).unwrap();
    migrate(&MigrationRequest {
        source: src,
        file_name: "t.py",
        function,
        types: &types,
        facts: &AppFacts::default(),
        report: None,
        fp32: false,
        input_shapes: &[],
        literals: &[],
    })
    .unwrap()
}

#[test]
fn grid_stride_loop_for_saxpy() {
    let m = migrated(
        "migrate/seeds.py",
        "saxpy",
        "float64, float64[:], float64[:], float64[:]",
    );
    check(&m);
    assert!(applied(&m, "grid_stride") && applied(&m, "dependences"));
    assert_eq!(m.plan.module.kernels.len(), 1);
    let k = &m.plan.module.kernels[0];
    assert!(matches!(&k.body[0], Stmt::ParallelFor(p) if p.vars == ["i"]));
    assert_eq!(m.plan.mutated, ["out"]);
    assert!(m
        .python
        .contains("for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):"));
    assert!(m.python.contains("_port_copy_back(out, d_out)"));
    // Only what the original mutated is copied back.
    assert!(!m.python.contains("_port_copy_back(x,"));
    // Arrays already on the GPU are used where they are.
    assert!(
        m.python.contains("d_x = _port_to_device(x, np.float64)"),
        "{}",
        m.python
    );
}

#[test]
fn a_nest_of_two_becomes_a_2d_grid() {
    let m = migrated(
        "migrate/kernels.py",
        "matmul",
        "float64[:, :], float64[:, :], float64[:, :]",
    );
    check(&m);
    let k = &m.plan.module.kernels[0];
    let Stmt::ParallelFor(p) = &k.body[0] else {
        panic!()
    };
    assert_eq!(p.vars, ["i", "j"]);
    assert!(
        has(&p.body, &|s| matches!(s, Stmt::For { .. })),
        "the k loop stays in the thread"
    );
    assert!(m.python.contains("start_x, start_y = cuda.grid(2)"));
    // The launch, after the checks that `c`'s extents cover the grid.
    let launch = m
        .plan
        .steps
        .iter()
        .find(|s| !matches!(s, HostStep::Guard(_)))
        .expect("a launch");
    assert!(matches!(
        launch,
        HostStep::Launch {
            shape: port_rewriter::LaunchShape::Grid2 { .. },
            ..
        }
    ));
}

#[test]
fn go_fast_is_a_reduction_kernel_then_an_element_kernel() {
    let m = migrated("migrate/seeds.py", "go_fast", "float64[:, :]");
    check(&m);
    for r in [
        "whole_reduction",
        "array_expr",
        "hoist_alloc",
        "math_calls",
        "grid_stride",
    ] {
        assert!(applied(&m, r), "{r}");
    }
    let names = m.plan.kernel_names();
    assert_eq!(names, ["go_fast_trace", "go_fast_result"]);
    let red = &m.plan.module.kernels[0];
    assert!(red.has_barrier() && !red.shared.is_empty());
    let mut atomic = false;
    port_codegen::ir::walk_body_exprs(&red.body, &mut |e| atomic |= matches!(e, Expr::Atomic(..)));
    assert!(atomic, "one atomic per block");
    // The accumulator starts at `trace`'s value before the loop.
    assert!(m.plan.steps.iter().any(|s| matches!(
        s,
        HostStep::Alloc {
            fill: Fill::Value(_),
            ..
        }
    )));
    // The element kernel reads the sum on the device: no copy back in between.
    assert!(!m
        .plan
        .steps
        .iter()
        .any(|s| matches!(s, HostStep::ReadBack { .. })));
}

#[test]
fn normalize_rows_are_thread_private_loops() {
    let m = migrated("migrate/seeds.py", "normalize", "float64[:, :]");
    check(&m);
    assert!(applied(&m, "row_reduction") && applied(&m, "array_expr"));
    let k = &m.plan.module.kernels[0];
    let Stmt::ParallelFor(p) = &k.body[0] else {
        panic!()
    };
    let loops = p
        .body
        .iter()
        .filter(|s| matches!(s, Stmt::For { .. }))
        .count();
    assert_eq!(loops, 2, "the mean, then the division");
}

#[test]
fn scalar_functions_become_device_functions_applied_over_arrays() {
    let m = migrated("migrate/seeds.py", "hypot", "float64, float64");
    check(&m);
    assert_eq!(m.plan.kind, PlanKind::Ufunc);
    assert!(applied(&m, "scalar_function"));
    assert_eq!(m.plan.module.device_functions.len(), 1);
    assert!(m
        .python
        .contains("@cuda.jit(device=True)\ndef hypot_device(x, y):"));
    let m = migrated(
        "migrate/seeds.py",
        "polar_distance",
        "float64, float64, float64, float64",
    );
    check(&m);
    assert!(applied(&m, "app_calls"), "polar_to_cartesian is inlined");
    let m = migrated(
        "migrate/seeds.py",
        "gaussian_pdf",
        "float64[:], float64, float64",
    );
    let k = &m.plan.module.kernels[0];
    let scalars: Vec<&str> = k
        .params
        .iter()
        .filter(|p| matches!(p.ty, Type::Scalar(_)))
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        scalars,
        ["mean", "sigma"],
        "scalar arguments stay one value"
    );
}

#[test]
fn cuda_eligible_callees_become_device_functions() {
    let src = "import math\n\ndef clamp(v, lo, hi):\n    if v < lo:\n        return lo\n    if v > hi:\n        return hi\n    return v\n\n\
               def f(x, out):\n    for i in range(x.shape[0]):\n        out[i] = clamp(math.sin(x[i]), -0.5, 0.5)\n";
    let Outcome::Migrated(m) = migrate_src(src, "f", "float64[:], float64[:]") else {
        panic!()
    };
    check(&m);
    assert_eq!(m.plan.module.device_functions[0].name, "clamp_device");
    assert!(
        m.python
            .contains("out[i] = clamp_device(math.sin(x[i]), -0.5, 0.5)"),
        "{}",
        m.python
    );
}

#[test]
fn callees_that_are_not_cuda_eligible_are_refused_by_name() {
    let src = "def helper(v):\n    return v * 2\n\ndef f(x, out):\n    for i in range(x.shape[0]):\n        out[i] = helper(x[i])\n";
    let types = parse_signature("float64[:], float64[:]").unwrap();
    let mut facts = AppFacts::default();
    std::sync::Arc::make_mut(&mut facts.verdicts).insert(
        "helper".into(),
        (
            port_analyzer::Verdict::Object,
            Some((2, "PORT101 Unknown attribute 'md5'".into())),
        ),
    );
    let out = migrate(&MigrationRequest {
        source: src,
        file_name: "t.py",
        function: "f",
        types: &types,
        facts: &facts,
        report: None,
        fp32: false,
        input_shapes: &[],
        literals: &[],
    })
    .unwrap();
    let Outcome::Refused(r) = out else { panic!() };
    assert_eq!(r[0].rewrite, "app_calls");
    assert_eq!(r[0].line, 6);
    assert!(
        r[0].message
            .contains("calls `helper` (line 6), which is object-mode"),
        "{}",
        r[0].message
    );
}

#[test]
fn scans_are_refused_by_the_rewriter_too() {
    let r = refused(
        "migrate/refused.py",
        "cumulative_sum",
        "float64[:], float64[:]",
    );
    // The loop carries a value, so it would stay on the host; there it
    // would read one element per iteration: refused by the host schedule,
    // naming the dependence.
    assert_eq!(r[0].rewrite, "host_schedule");
    assert_eq!(r[0].line, 10);
    assert!(
        r[0].message.contains("`total`") && r[0].message.contains("lines 10, 11"),
        "{}",
        r[0].message
    );
    let r = refused("migrate/refused.py", "recurrence", "float64[:]");
    assert!(r[0].message.contains("recurrence"), "{}", r[0].message);
}

#[test]
fn aliasing_slices_and_kernel_allocations_are_refused() {
    let src = "import numpy as np\n\ndef rev(x):\n    for i in range(x.shape[0]):\n        x[i, :] = x[i, ::-1]\n\n\
               def alloc(x, out):\n    for i in range(x.shape[0]):\n        t = np.zeros(3)\n        out[i] = t[0]\n";
    let Outcome::Refused(r) = migrate_src(src, "rev", "float64[:, :]") else {
        panic!()
    };
    assert!(
        r[0].message.contains("reads `x` at other elements"),
        "{}",
        r[0].message
    );
    assert_eq!(r[0].line, 5);
    let Outcome::Refused(r) = migrate_src(src, "alloc", "float64[:, :], float64[:]") else {
        panic!()
    };
    assert_eq!(r[0].rewrite, "hoist_alloc");
    assert_eq!(r[0].line, 9);
}

#[test]
fn a_value_read_after_the_loop_is_refused() {
    let src = "def last(x, out):\n    t = 0.0\n    for i in range(x.shape[0]):\n        t = x[i] * 2\n        out[i] = t\n    return t\n";
    let Outcome::Refused(r) = migrate_src(src, "last", "float64[:], float64[:]") else {
        panic!()
    };
    assert!(
        r[0].message.contains("`t` is read after the parallel loop"),
        "{}",
        r[0].message
    );
}

#[test]
fn types_widen_to_a_fixed_point() {
    // `s = 0` then `s += x[i] * w[i]`: s is a float, float32 as the
    // products are (a Python int is weak beside NumPy's float32, NEP 50).
    let src = "def wsum(x, w):\n    s = 0\n    for i in range(x.shape[0]):\n        s += x[i] * w[i]\n    return s\n";
    let Outcome::Migrated(m) = migrate_src(src, "wsum", "float32[:], float32[:]") else {
        panic!()
    };
    check(&m);
    let k = &m.plan.module.kernels[0];
    let acc = k
        .params
        .iter()
        .find(|p| p.name == "s_acc")
        .expect("the accumulator");
    assert!(
        matches!(acc.ty, Type::Array(a) if a.elem.is_float()),
        "{acc:?}"
    );
    // Over an empty `x` the loop never runs and CPython returns the int 0
    // it started as.
    assert!(
        m.python.contains(
            "    s = np.float32(d_s_acc.copy_to_host()[0])\n    return (s if trip > 0 else int(s_start))\n"
        ),
        "{}",
        m.python
    );
}

#[test]
fn fp32_lowers_every_float64() {
    let Outcome::Migrated(m) = common::run("migrate/seeds.py", "go_fast", "float64[:, :]", true)
    else {
        panic!()
    };
    check(&m);
    assert!(m.plan.fp32);
    assert!(applied(&m, "fp32"));
    let text = port_codegen::text::print_module(&m.plan.module);
    assert!(!text.contains("f64"), "{text}");
    assert!(m.python.contains(", np.float32)") && m.python.contains(".astype(np.float64)"));
}

#[test]
fn every_rewrite_reports_itself() {
    let m = migrated(
        "migrate/seeds.py",
        "saxpy",
        "float64, float64[:], float64[:], float64[:]",
    );
    assert_eq!(m.plan.rewrites.len(), port_rewriter::rewrites::ALL.len());
    assert!(m.plan.rewrites.len() >= 17, "{:?}", m.plan.rewrites);
    let fp32 = record(&m.plan, "fp32");
    assert!(!fp32.applied && fp32.note.starts_with("not applicable: "));
}

#[test]
fn the_patch_replaces_only_the_function_and_adds_imports() {
    let m = migrated("migrate/kernels.py", "stencil_1d", "float64[:], float64[:]");
    let original = std::fs::read_to_string(fixture("migrate/kernels.py")).unwrap();
    assert!(m.diff.contains("+from numba import cuda"));
    // The original stays, under a private name, for calls the kernels
    // cannot take; the wrapper takes its name.
    assert!(m.diff.contains("-def stencil_1d(x, out):"), "{}", m.diff);
    assert!(
        m.diff.contains("+def _port_original_stencil_1d(x, out):"),
        "{}",
        m.diff
    );
    assert!(m.new_source.contains(
        "def _port_original_stencil_1d(x, out):\n    for i in range(1, x.shape[0] - 1):"
    ));
    assert!(m.python.contains(
        "    if not _port_use_gpu():\n        return _port_original_stencil_1d(x, out)\n"
    ));
    // The other functions are untouched.
    let untouched = original.split("def stencil_2d").nth(1).unwrap();
    assert!(m.new_source.contains(untouched));
    assert!(m.new_source.contains("def _port_blocks(n, threads):"));
}

/// The plan's log record of the rewrite `name`.
fn record<'a>(
    plan: &'a port_rewriter::plan::KernelPlan,
    name: &str,
) -> &'a port_rewriter::plan::RewriteRecord {
    plan.rewrites
        .iter()
        .find(|r| r.rewrite == name)
        .unwrap_or_else(|| panic!("no {name} record"))
}

fn guards(steps: &[HostStep]) -> Vec<&port_rewriter::plan::ShapeGuard> {
    let mut out = Vec::new();
    HostStep::walk(steps, &mut |s| {
        if let HostStep::Guard(g) = s {
            out.push(g);
        }
    });
    out
}

/// Extents the kernels take to be equal are checked once, at the start,
/// when they read only the arguments; equal ones need no check.
#[test]
fn broadcast_extents_are_guarded_at_entry() {
    let src =
        "import numpy as np\n\ndef f(a, b, out):\n    out[:] = a + b\n    out[:] = out * 2.0\n";
    let Outcome::Migrated(m) = migrate_src(src, "f", "float64[:], float64[:], float64[:]") else {
        panic!("refused")
    };
    check(&m);
    let all = guards(&m.plan.steps);
    let pairs: Vec<(&str, &str)> = all
        .iter()
        .map(|g| (g.lhs_text.as_str(), g.rhs_text.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("a.shape[0]", "b.shape[0]"), ("out.shape[0]", "a.shape[0]")],
        "{:#?}",
        m.plan.steps
    );
    // Both before anything else.
    assert!(matches!(m.plan.steps[0], HostStep::Guard(_)));
    assert!(matches!(m.plan.steps[1], HostStep::Guard(_)));
    assert!(applied(&m, "shapes"));
}

/// Literal extents that differ are NumPy's error, refused at the line.
#[test]
fn literal_extents_that_differ_are_refused() {
    let src = "import numpy as np\n\ndef f(a):\n    a[:3] = np.ones(3) + np.zeros(4)\n";
    let Outcome::Refused(r) = migrate_src(src, "f", "float64[:]") else {
        panic!("migrated")
    };
    assert_eq!(r[0].line, 4);
    assert!(
        r[0].message
            .contains("operands could not be broadcast together"),
        "{r:?}"
    );
}

/// An input's axis of extent 1 is planned as a broadcast axis and
/// guarded at entry; without the inputs' shapes it is not.
#[test]
fn an_inputs_unit_axis_broadcasts() {
    let src = std::fs::read_to_string(fixture("migrate/programs_shapes.py")).unwrap();
    let types = parse_signature("float64[:,:], float64[:,:], float64").unwrap();
    let shapes = vec![("w".to_string(), vec![8, 1]), ("x".to_string(), vec![8, 4])];
    let out = migrate(&MigrationRequest {
        source: &src,
        file_name: "programs_shapes.py",
        function: "scale_rows",
        types: &types,
        facts: &AppFacts::default(),
        report: None,
        fp32: false,
        input_shapes: &shapes,
        literals: &[],
    })
    .unwrap();
    let Outcome::Migrated(m) = out else {
        panic!("refused")
    };
    check(&m);
    assert_eq!(m.plan.unit_dims, [("w".to_string(), 1)]);
    let HostStep::Guard(g) = &m.plan.steps[0] else {
        panic!("{:#?}", m.plan.steps)
    };
    assert!(g.specialised && g.lhs_text == "w.shape[1]" && g.rhs_text == "1");
    // The kernel reads w at column 0, whatever the column of x.
    let k = &m.plan.module.kernels[0];
    assert!(
        has(
            &k.body,
            &|s| matches!(s, Stmt::Store { value, .. } if format!("{value:?}").contains("Load(ElemRef { array: \"w\", indices: [Var(\"i\"), Lit(I64(0))]"))
        ),
        "{}",
        m.python
    );
    let Outcome::Migrated(plain) =
        migrate_src(&src, "scale_rows", "float64[:,:], float64[:,:], float64")
    else {
        panic!("refused")
    };
    assert!(plain.plan.unit_dims.is_empty());
    assert!(!guards(&plain.plan.steps).iter().any(|g| g.specialised));
}

/// A helper's arrays inlined into a time loop are allocated once, before
/// the loop; an array another name is bound to inside the loop is not.
#[test]
fn arrays_of_a_time_loop_are_allocated_once() {
    let m = migrated(
        "migrate/programs_shapes.py",
        "leapfrog_masses",
        "float64[:,:], float64[:,:], float64[:,:], float64, int64",
    );
    check(&m);
    let loop_body = m
        .plan
        .steps
        .iter()
        .find_map(|s| match s {
            HostStep::Loop { body, .. } => Some(body),
            _ => None,
        })
        .expect("a host loop");
    let inside: Vec<&str> = loop_body
        .iter()
        .filter_map(|s| match s {
            HostStep::Alloc {
                name,
                fill: Fill::Empty,
                ..
            } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    // Only the one `acc` is bound to each iteration stays inside.
    let mut aliased = Vec::new();
    HostStep::walk(loop_body, &mut |s| {
        if let HostStep::Rebind { sources, .. } = s {
            aliased.extend(sources.iter().map(String::as_str));
        }
    });
    assert!(
        inside.len() == 1 && aliased.contains(&inside[0]),
        "allocated per iteration: {inside:?}\n{}",
        m.python
    );
    let before: Vec<&str> = m
        .plan
        .steps
        .iter()
        .filter_map(|s| match s {
            HostStep::Alloc { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    for name in ["d", "r2", "inv"] {
        assert!(before.contains(&name), "{name} not hoisted: {before:?}");
    }
}

/// A helper called per element of a comprehension at host level is
/// refused at its line (it was inlined again and again, until the stack
/// overflowed).
#[test]
fn a_helper_inside_a_comprehension_is_refused_not_inlined_forever() {
    let src = "import numpy as np\n\ndef g(x):\n    return x\n\ndef f(X):\n    return np.array([g(x) for x in X])\n";
    let Outcome::Refused(r) = migrate_src(src, "f", "float64[:]") else {
        panic!("migrated")
    };
    assert_eq!(r[0].line, 7, "{r:?}");
    assert!(r[0].message.contains("comprehension"), "{r:?}");
}

/// A name bound to a view in one loop and to a new array in the next is
/// private to each loop when nothing reads it after them (vadv); read
/// after the second loop, it is refused as what it is.
#[test]
fn a_view_rebound_to_a_new_array_says_so() {
    let src = "import numpy as np\n\ndef f(d, out, last):\n    for k in range(d.shape[2]):\n        col = d[:, :, k]\n        last[:] = col\n        out[:, :, k] = col\n    for k in range(d.shape[2]):\n        col = d[:, :, k] - 0.5 * last\n        last[:] = col\n        out[:, :, k] = col\n";
    let sig = "float64[:,:,:], float64[:,:,:], float64[:,:]";
    let Outcome::Migrated(m) = migrate_src(src, "f", sig) else {
        panic!("refused")
    };
    check(&m);
    let read_after = format!("{src}    return col\n");
    let Outcome::Refused(r) = migrate_src(&read_after, "f", sig) else {
        panic!("migrated")
    };
    assert!(
        r[0].message.contains("from a view of `d` to a new array"),
        "{r:?}"
    );
}

/// NumPy evaluates the right-hand side before it assigns: a shifted window
/// of the array written needs a temporary, rows a constant apart do not.
#[test]
fn copies_between_fixed_rows_need_no_temporary_and_shifted_windows_do() {
    let src = r#"
import numpy as np

def edges(p):
    p[0, :] = p[1, :]
    p[-1, :] = p[-2, :]
    p[:, 0] = p[:, 1]
    return p

def shift(u):
    u[1:] = u[:-1]
    return u

def same_row_other_columns(p):
    p[0, 1:] = p[0, :-1]
    return p
"#;
    let Outcome::Migrated(m) = migrate_src(src, "edges", "float64[:,:]") else {
        panic!("edges refused")
    };
    check(&m);
    assert!(!m.python.contains("_tmp"), "{}", m.python);
    assert!(m.python.contains("p[0, i] = p[1, i]"), "{}", m.python);
    for (f, sig) in [
        ("shift", "float64[:]"),
        ("same_row_other_columns", "float64[:,:]"),
    ] {
        let Outcome::Migrated(m) = migrate_src(src, f, sig) else {
            panic!("{f} refused")
        };
        check(&m);
        assert!(m.python.contains("_tmp"), "{f}: {}", m.python);
    }
}

/// The rewrite log lists the shape checks the wrapper really makes: a fact
/// that holds by how its arrays are allocated (`pn = p.copy()`) is counted,
/// not listed as checked.
#[test]
fn the_log_lists_only_the_shape_checks_the_wrapper_makes() {
    let m = migrated(
        "migrate/programs.py",
        "laplace_2d",
        "float64[:,:], float64[:], float64, float64, float64",
    );
    check(&m);
    let mut guards = Vec::new();
    HostStep::walk(&m.plan.steps, &mut |s| {
        if let HostStep::Guard(g) = s {
            guards.push(format!(
                "`{} {} {}`",
                g.lhs_text,
                g.relation.symbol(),
                g.rhs_text
            ));
        }
    });
    let note = &record(&m.plan, "shapes").note;
    assert_eq!(
        note.matches(" checked before ").count(),
        guards.len(),
        "{note}"
    );
    for g in &guards {
        assert!(note.contains(g.as_str()), "{g} not in {note}");
    }
    assert!(!note.contains("pn.shape"), "{note}");
    assert!(
        note.contains("more hold by how the arrays are allocated"),
        "{note}"
    );

    // Nothing taken to be equal; the one check is that `out` is as long
    // as the loop that writes it (`x`'s extent, which bounds `x[i]` itself).
    let src = "def scale(x, out):\n    for i in range(x.shape[0]):\n        out[i] = 2.0 * x[i]\n";
    let Outcome::Migrated(m) = migrate_src(src, "scale", "float64[:], float64[:]") else {
        panic!("scale refused")
    };
    let rec = record(&m.plan, "shapes");
    assert_eq!(
        rec.note, "`x.shape[0] <= out.shape[0]` checked before the kernels of line 2",
        "{rec:?}"
    );
    assert!(
        matches!(&m.plan.steps[0], HostStep::Guard(g) if g.relation == port_rewriter::plan::Relation::Le)
    );

    // With `out` as long as `x`, nothing is checked: the record says so.
    let src = "def scale(x, out):\n    for i in range(min(x.shape[0], out.shape[0])):\n        out[i] = 2.0 * x[i]\n";
    let Outcome::Migrated(m) = migrate_src(src, "scale", "float64[:], float64[:]") else {
        panic!("scale refused")
    };
    let rec = record(&m.plan, "shapes");
    assert!(!rec.applied, "{rec:?}");
    assert!(rec.note.starts_with("not applicable"), "{rec:?}");
}

/// The launches of a plan's steps, host branches included, with the
/// branch they sit in (`None` outside any `if`, `Some(true)` in the `then`).
fn launches(steps: &[HostStep], branch: Option<bool>, out: &mut Vec<(String, Option<bool>)>) {
    for s in steps {
        match s {
            HostStep::Launch { kernel, .. } => out.push((kernel.clone(), branch)),
            HostStep::If { then, orelse, .. } => {
                launches(then, Some(true), out);
                launches(orelse, Some(false), out);
            }
            HostStep::Loop { body, .. } => launches(body, branch, out),
            _ => {}
        }
    }
}

/// A reduction along axes that end with the last one gets a kernel with
/// one block per result element (coalesced reads, and a result of few
/// elements still fills the device); the host picks it when the reduced
/// extent is long, and a constant extent decides when planning.
#[test]
fn axis_reductions_over_the_last_axis_get_a_block_per_result_element() {
    let src = "import numpy as np\n\
def channel_means(x):\n    return x.mean(axis=(0, 2, 3))\n\
def column_sums(x):\n    return x.sum(axis=0)\n\
def wide_rows(x):\n    return (np.ones((6, 512)) * x).max(axis=1)\n\
def short_rows(x):\n    return (np.ones((6, 8)) * x).max(axis=1)\n";
    let plan = |f: &str, sig: &str| {
        let Outcome::Migrated(m) = migrate_src(src, f, sig) else {
            panic!("{f} refused")
        };
        check(&m);
        let mut l = Vec::new();
        launches(&m.plan.steps, None, &mut l);
        (m, l)
    };
    // Extents known only at run time: both kernels, chosen on the host.
    let (m, l) = plan("channel_means", "float64[:,:,:,:]");
    assert_eq!(
        l,
        [
            ("channel_means_x_mean_blocks".to_string(), Some(true)),
            ("channel_means_x_mean".to_string(), Some(false)),
        ]
    );
    assert!(
        m.python
            .contains("if not _port_simulated() and x.shape[0] * x.shape[2] * x.shape[3] >= 64:"),
        "{}",
        m.python
    );
    assert!(m.python.contains("cuda.syncthreads()"));
    // Index arithmetic on values never negative prints as `//` and `%`.
    assert!(m.python.contains("l = at % x.shape[3]"), "{}", m.python);
    // The reduced axis is not the last: one thread per column reads
    // consecutive columns, so no block kernel.
    let (_, l) = plan("column_sums", "float64[:,:]");
    assert_eq!(l, [("column_sums_x_sum".to_string(), None)]);
    // Constant extents: one kernel, chosen now.
    let (m, l) = plan("wide_rows", "float64");
    assert!(
        l.iter().all(|(k, b)| b.is_none() && !k.is_empty())
            && l.iter().any(|(k, _)| k.ends_with("_blocks")),
        "{l:?}"
    );
    assert!(!m.python.contains(">= 64"));
    let (_, l) = plan("short_rows", "float64");
    assert!(
        l.iter()
            .all(|(k, b)| b.is_none() && !k.ends_with("_blocks")),
        "{l:?}"
    );
}

/// A product of two float matrices is a library step (cuBLAS on a GPU):
/// `data.T` is read in place (a flag, no copy), an operand of another type
/// or an expression is stored first, and integer products stay a kernel.
#[test]
fn float_matrix_products_are_library_steps() {
    use port_rewriter::plan::LibraryOp;
    let src = "import numpy as np\n\
def gram(data):\n    return data.T @ data\n\
def mixed(a, b):\n    return (2.0 * a) @ b\n\
def counts(a, b):\n    return a @ b\n";
    let plan = |f: &str, sig: &str| {
        let Outcome::Migrated(m) = migrate_src(src, f, sig) else {
            panic!("{f} refused")
        };
        check(&m);
        m
    };
    let calls = |m: &port_rewriter::Migration| {
        let mut out = Vec::new();
        HostStep::walk(&m.plan.steps, &mut |s| {
            if let HostStep::Library(c) = s {
                out.push(c.clone());
            }
        });
        out
    };
    let m = plan("gram", "float64[:,:]");
    let c = calls(&m);
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].op,
        LibraryOp::Matmul {
            ta: true,
            tb: false
        }
    );
    assert_eq!(c[0].args, ["data", "data"]);
    assert!(m.plan.module.kernels.is_empty(), "no copy of `data.T`");
    assert!(
        m.python
            .contains("_port_matmul(d_data, d_data, True, False, "),
        "{}",
        m.python
    );
    // float32 by float64: NumPy computes in float64; the float32 operand
    // (and the scaled one) is stored first.
    let m = plan("mixed", "float32[:,:], float64[:,:]");
    let c = calls(&m);
    assert_eq!(
        c[0].op,
        LibraryOp::Matmul {
            ta: false,
            tb: false
        }
    );
    assert_eq!(c[0].args[1], "b");
    assert_eq!(m.plan.module.kernels.len(), 1, "the scaled, converted `a`");
    // Integers: port's own kernel.
    let m = plan("counts", "int64[:,:], int64[:,:]");
    assert!(calls(&m).is_empty());
    assert!(!m.plan.module.kernels.is_empty());
}

/// The index checks (`lhs <= rhs`) a plan makes before its kernels, as
/// the log and the wrapper write them, and its notes.
fn index_checks(src: &str, function: &str, sig: &str) -> (Vec<String>, String) {
    let Outcome::Migrated(m) = migrate_src(src, function, sig) else {
        panic!("{function} refused")
    };
    check(&m);
    let checks = guards(&m.plan.steps)
        .into_iter()
        .filter(|g| g.relation == port_rewriter::plan::Relation::Le)
        .map(|g| format!("{} <= {}", g.lhs_text, g.rhs_text))
        .collect();
    (checks, record(&m.plan, "shapes").note.clone())
}

/// Each index a kernel takes into an argument is checked against the
/// argument's extent at entry, as tightly as the kernel's own arithmetic
/// allows: an `if` narrows the index it guards, Python's `x[i - 1]` may go
/// down to `-len(x)`, a window `x[i:i + k]` ties its index to `k`, and what
/// always holds is not checked. An index that moves with a host loop is
/// logged as taken on trust.
#[test]
fn index_ranges_are_checked_at_entry_as_tightly_as_the_arithmetic_allows() {
    let (checks, _) = index_checks(
        "def f(x, y):\n    n = x.shape[0]\n    for i in range(n):\n        if i > 0 and i < n - 1:\n            y[i] = x[i - 1] + x[i + 1]\n",
        "f",
        "float64[:], float64[:]",
    );
    assert_eq!(checks, ["x.shape[0] - 1 <= y.shape[0]"]);

    let (checks, _) = index_checks(
        "def f(x, y):\n    for i in range(y.shape[0]):\n        y[i] = x[i - 1]\n",
        "f",
        "float64[:], float64[:]",
    );
    assert_eq!(
        checks,
        ["y.shape[0] - 1 <= x.shape[0]", "1 <= x.shape[0]"],
        "{checks:?}"
    );

    // The window never passes `k` elements: nothing to check on `taps`.
    let (checks, _) = index_checks(
        "import numpy as np\n\ndef f(signal, taps):\n    k = taps.shape[0]\n    out = np.empty(signal.shape[0] - k + 1)\n    for i in range(out.shape[0]):\n        out[i] = np.sum(signal[i:i + k] * taps)\n    return out\n",
        "f",
        "float64[:], float64[:]",
    );
    assert!(
        checks.iter().all(|c| !c.ends_with("taps.shape[0]")),
        "{checks:?}"
    );

    let (checks, note) = index_checks(
        "def f(a, b):\n    for k in range(a.shape[0]):\n        for j in range(a.shape[1]):\n            a[k, j] = a[k, j] + b[k]\n        b[k + 1] = a[k, 0]\n",
        "f",
        "float64[:, :], float64[:]",
    );
    assert!(
        note.contains("taken on trust: no bound in the arguments' extents"),
        "{checks:?} {note}"
    );
}
