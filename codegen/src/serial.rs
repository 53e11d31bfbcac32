//! A kernel, with barriers or without, rewritten for the host simulator so
//! that one call runs a whole block: each stretch of code between two barriers becomes a
//! loop over the block's threads (the classic "thread loop" of CPU back ends
//! for CUDA), so `syncthreads()` is the end of one loop and the start of the
//! next, and no thread needs a stack of its own.
//!
//! - A local declared between barriers (at the kernel's top level, or at the
//!   top level of a loop or `if` that holds a barrier) may be read after the
//!   next barrier: it becomes a block-shared array with one element per
//!   thread (`MAX_BLOCK_THREADS`). Inside a thread loop it is a scalar,
//!   loaded from the thread's element first and stored back last (so the
//!   thread's own loops keep it in a register). Locals declared deeper,
//!   inside code between two barriers, stay scalars.
//! - An `if`, `while` or `for` that holds a barrier runs once per block: the
//!   verifier has proved its condition and bounds the same for every thread,
//!   so they are evaluated as thread 0 sees them (`threadIdx` set to 0). Its
//!   loop variable is then one scalar the threads share.
//! - Each thread loop sets the context's `threadIdx` (`SET_TID_SYMBOL`,
//!   lowered to stores into the host context) before the thread's code, so
//!   `threadIdx` and `parallel for` read the thread being run.
//!
//! Threads run in the order a block's fibers are resumed (0, 1, …), between
//! the same barriers, so the result is the fibers' own. Kernels this cannot
//! express keep the fibers: a `return` anywhere, a `break`/`continue` that
//! would leave the code between two barriers, a loop variable of a loop
//! with a barrier assigned by the threads, or a barrier inside a
//! `parallel for`.

use std::collections::HashMap;

use crate::ir::build::{add, call, cast, i64, load, mul, special, var};
use crate::ir::*;
use crate::verify::MAX_BLOCK_THREADS;

/// The name of the host-only call that sets `threadIdx` in the context.
pub(crate) const SET_TID_SYMBOL: &str = "__port_sim_set_tid";

/// The thread loop's flat thread number and its three loop variables.
const T: &str = "__port_thread";
const TX: &str = "__port_thread_x";
const TY: &str = "__port_thread_y";
const TZ: &str = "__port_thread_z";

/// The name of `kernel`'s thread-loop version.
pub(crate) fn serial_name(kernel: &str) -> String {
    format!("__port_serial_{kernel}")
}

/// `k` with its threads run in loops between barriers, or `None` when it
/// uses what the thread loops cannot express. A kernel with no barrier is
/// one thread loop: one call a block instead of one a thread.
pub(crate) fn serial_kernel(k: &Kernel) -> Option<Kernel> {
    if any_stmt(&k.body, &|s| matches!(s, Stmt::Return(_))) {
        return None;
    }
    let mut s = Serial {
        shared: k.shared.clone(),
        scopes: vec![HashMap::new()],
        taken: k
            .shared
            .iter()
            .map(|a| a.name.clone())
            .chain(k.params.iter().map(|p| p.name.clone()))
            .collect(),
        used: Default::default(),
    };
    let body = s.uniform_list(&k.body)?;
    Some(Kernel {
        name: serial_name(&k.name),
        params: k.params.clone(),
        shared: s.shared,
        body,
    })
}

#[derive(Clone)]
enum Name {
    /// A local with one element per thread in this shared array; inside a
    /// thread loop it is the scalar `__port_l_<array>`, loaded from the
    /// array before the thread's code and stored back after it.
    PerThread(String, ScalarType),
    /// One scalar for all threads (the variable of a loop with a barrier).
    Shared,
    /// A scalar of the thread being run (declared between barriers).
    Local,
}

struct Serial {
    shared: Vec<SharedArray>,
    scopes: Vec<HashMap<String, Name>>,
    /// Names of arrays already in the kernel: a per-thread array gets a new one.
    taken: Vec<String>,
    /// The per-thread locals the current thread loop uses.
    used: std::cell::RefCell<Vec<Used>>,
}

/// A per-thread local a thread loop uses: loaded before the thread's code
/// unless declared in it, stored back after it when written.
struct Used {
    array: String,
    ty: ScalarType,
    written: bool,
    declared: bool,
}

/// The scalar that stands for a per-thread array inside a thread loop.
fn scalar_of(array: &str) -> String {
    format!("__port_l_{array}")
}

/// `blockDim` on `axis`, as an `i64`.
fn block_dim(axis: Axis) -> Expr {
    cast(ScalarType::I64, special(Special::BlockDim, axis))
}

fn contains_barrier(s: &Stmt) -> bool {
    any_stmt(std::slice::from_ref(s), &|s| matches!(s, Stmt::Barrier))
}

/// `set_tid(x, y, z)`: the thread the code after it runs as.
fn set_tid(x: Expr, y: Expr, z: Expr) -> Stmt {
    let args = [x, y, z].map(|e| cast(ScalarType::I32, e));
    Stmt::Eval(call(SET_TID_SYMBOL, args.into()))
}

/// `set_tid(0, 0, 0)`: code run once for the block, as thread 0 sees it.
fn set_tid0() -> Stmt {
    set_tid(i64(0), i64(0), i64(0))
}

impl Serial {
    fn lookup(&self, name: &str) -> Option<&Name> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn declare(&mut self, name: &str, how: Name) {
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), how);
    }

    /// A new shared array of one `ty` per thread, for local `name`.
    fn per_thread(&mut self, name: &str, ty: ScalarType) -> String {
        let mut k = 0;
        let array = loop {
            let a = format!("__port_{name}_{k}");
            if !self.taken.contains(&a) {
                break a;
            }
            k += 1;
        };
        self.taken.push(array.clone());
        self.shared.push(SharedArray {
            name: array.clone(),
            elem: ty,
            shape: vec![MAX_BLOCK_THREADS as u32],
        });
        array
    }

    /// Ends a barrier-free stretch: `run` (one thread's code) becomes a
    /// loop over the block's threads, with the per-thread locals it uses
    /// loaded before and those it writes stored after.
    ///
    /// The loop is three nested ones, z, y and x, x innermost: the threads
    /// in the order of their flat number `T`, with no division per thread
    /// to find each one's `threadIdx` (three 64-bit divisions a thread cost
    /// more than the code of most threads).
    fn flush(&self, run: &mut Vec<Stmt>, out: &mut Vec<Stmt>) {
        let used = std::mem::take(&mut *self.used.borrow_mut());
        if run.is_empty() {
            return;
        }
        let flat = add(
            mul(
                add(mul(var(TZ), block_dim(Axis::Y)), var(TY)),
                block_dim(Axis::X),
            ),
            var(TX),
        );
        let mut body = vec![
            build::let_(T, ScalarType::I64, flat),
            set_tid(var(TX), var(TY), var(TZ)),
        ];
        for u in used.iter().filter(|u| !u.declared) {
            body.push(build::let_(
                &scalar_of(&u.array),
                u.ty,
                load(&u.array, vec![var(T)]),
            ));
        }
        body.append(run);
        for u in used.iter().filter(|u| u.written || u.declared) {
            body.push(build::store(
                &u.array,
                vec![var(T)],
                var(&scalar_of(&u.array)),
            ));
        }
        let x = build::for_range(TX, i64(0), block_dim(Axis::X), i64(1), body);
        let y = build::for_range(TY, i64(0), block_dim(Axis::Y), i64(1), vec![x]);
        out.push(build::for_range(
            TZ,
            i64(0),
            block_dim(Axis::Z),
            i64(1),
            vec![y],
        ));
    }

    /// Statements the whole block runs together: barrier-free stretches
    /// become thread loops, statements with a barrier run once.
    fn uniform_list(&mut self, body: &[Stmt]) -> Option<Vec<Stmt>> {
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        let mut run: Vec<Stmt> = Vec::new();
        for s in body {
            if matches!(s, Stmt::Barrier) {
                self.flush(&mut run, &mut out);
            } else if contains_barrier(s) {
                self.flush(&mut run, &mut out);
                out.extend(self.uniform_stmt(s)?);
            } else if let Stmt::Let { name, ty, init } = s {
                let init = self.thread_expr(init);
                let array = self.per_thread(name, *ty);
                self.declare(name, Name::PerThread(array.clone(), *ty));
                self.used.borrow_mut().push(Used {
                    array: array.clone(),
                    ty: *ty,
                    written: true,
                    declared: true,
                });
                run.push(build::let_(&scalar_of(&array), *ty, init));
            } else {
                run.push(self.thread_stmt(s, 0)?);
            }
        }
        self.flush(&mut run, &mut out);
        self.scopes.pop();
        Some(out)
    }

    /// A statement holding a barrier, run once for the block.
    fn uniform_stmt(&mut self, s: &Stmt) -> Option<Vec<Stmt>> {
        Some(match s {
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => vec![
                set_tid0(),
                Stmt::If {
                    cond: self.thread0_expr(cond),
                    then_body: self.uniform_list(then_body)?,
                    else_body: self.uniform_list(else_body)?,
                },
            ],
            Stmt::While { cond, body } => {
                let stop = Stmt::If {
                    cond: Expr::Unary(UnaryOp::Not, Box::new(self.thread0_expr(cond))),
                    then_body: vec![Stmt::Break],
                    else_body: vec![],
                };
                let mut inner = vec![set_tid0(), stop];
                inner.extend(self.uniform_list(body)?);
                vec![Stmt::While {
                    cond: build::bool(true),
                    body: inner,
                }]
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => {
                let (start, stop, step) = (
                    self.thread0_expr(start),
                    self.thread0_expr(stop),
                    self.thread0_expr(step),
                );
                self.scopes.push(HashMap::new());
                self.declare(var, Name::Shared);
                let body = self.uniform_list(body);
                self.scopes.pop();
                vec![
                    set_tid0(),
                    Stmt::For {
                        var: var.clone(),
                        start,
                        stop,
                        step,
                        body: body?,
                    },
                ]
            }
            _ => return None,
        })
    }

    /// A barrier-free statement of one thread (inside a thread loop);
    /// `loops` counts the loops around it inside the thread loop, which
    /// `break` and `continue` may leave.
    fn thread_stmt(&mut self, s: &Stmt, loops: usize) -> Option<Stmt> {
        Some(match s {
            Stmt::Let { name, ty, init } => {
                let init = self.thread_expr(init);
                self.declare(name, Name::Local);
                Stmt::Let {
                    name: name.clone(),
                    ty: *ty,
                    init,
                }
            }
            Stmt::Assign { name, value } => {
                let value = self.thread_expr(value);
                match self.lookup(name).cloned() {
                    Some(Name::PerThread(a, ty)) => {
                        self.use_local(&a, ty, true);
                        Stmt::Assign {
                            name: scalar_of(&a),
                            value,
                        }
                    }
                    Some(Name::Shared) => return None,
                    _ => Stmt::Assign {
                        name: name.clone(),
                        value,
                    },
                }
            }
            Stmt::Store { target, value } => Stmt::Store {
                target: self.thread_ref(target),
                value: self.thread_expr(value),
            },
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => Stmt::If {
                cond: self.thread_expr(cond),
                then_body: self.thread_block(then_body, loops, &[])?,
                else_body: self.thread_block(else_body, loops, &[])?,
            },
            Stmt::While { cond, body } => Stmt::While {
                cond: self.thread_expr(cond),
                body: self.thread_block(body, loops + 1, &[])?,
            },
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => Stmt::For {
                var: var.clone(),
                start: self.thread_expr(start),
                stop: self.thread_expr(stop),
                step: self.thread_expr(step),
                body: self.thread_block(body, loops + 1, std::slice::from_ref(var))?,
            },
            Stmt::ParallelFor(p) => Stmt::ParallelFor(ParallelFor {
                vars: p.vars.clone(),
                extents: p.extents.iter().map(|e| self.thread_expr(e)).collect(),
                body: self.thread_block(&p.body, loops + 1, &p.vars)?,
            }),
            Stmt::Break | Stmt::Continue if loops > 0 => s.clone(),
            Stmt::Eval(e) => Stmt::Eval(self.thread_expr(e)),
            Stmt::Break | Stmt::Continue | Stmt::Return(_) | Stmt::Barrier => return None,
        })
    }

    /// A nested block of one thread's code, its own scope holding `vars`.
    fn thread_block(&mut self, body: &[Stmt], loops: usize, vars: &[String]) -> Option<Vec<Stmt>> {
        self.scopes.push(HashMap::new());
        for v in vars {
            self.declare(v, Name::Local);
        }
        let out: Option<Vec<Stmt>> = body.iter().map(|s| self.thread_stmt(s, loops)).collect();
        self.scopes.pop();
        out
    }

    /// Records that the current thread loop reads or writes a per-thread local.
    fn use_local(&self, array: &str, ty: ScalarType, written: bool) {
        let mut used = self.used.borrow_mut();
        match used.iter_mut().find(|u| u.array == array) {
            Some(u) => u.written |= written,
            None => used.push(Used {
                array: array.to_string(),
                ty,
                written,
                declared: false,
            }),
        }
    }

    fn thread_ref(&self, r: &ElemRef) -> ElemRef {
        ElemRef {
            array: r.array.clone(),
            indices: r.indices.iter().map(|e| self.thread_expr(e)).collect(),
        }
    }

    /// `e` as the thread being run computes it: a per-thread local is the
    /// thread loop's scalar for it.
    fn thread_expr(&self, e: &Expr) -> Expr {
        map_expr(e, &|x| match x {
            Expr::Var(name) => match self.lookup(name) {
                Some(Name::PerThread(a, ty)) => {
                    self.use_local(a, *ty, false);
                    Some(Expr::Var(scalar_of(a)))
                }
                _ => None,
            },
            _ => None,
        })
    }

    /// `e` as thread 0 computes it, outside any thread loop: a per-thread
    /// local is read from its array at 0.
    fn thread0_expr(&self, e: &Expr) -> Expr {
        map_expr(e, &|x| match x {
            Expr::Var(name) => match self.lookup(name) {
                Some(Name::PerThread(a, _)) => Some(load(a, vec![i64(0)])),
                _ => None,
            },
            _ => None,
        })
    }
}
