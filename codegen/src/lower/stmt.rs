//! Statements: a block in its own scope, assignments and stores, `if`,
//! `while`, `break`/`continue`, `return`, serial `for` ranges, the
//! grid-stride `parallel for` (thread indices on the GPU, the simulator's
//! thread context on the host) and barriers.

use std::collections::HashMap;

use inkwell::values::IntValue;
use inkwell::IntPredicate;

use super::{missing, Binding, FnState, LlvmResult, LoopTargets, Lowerer, Target, BARRIER_SYMBOL};
use crate::error::CodegenError;
use crate::ir::*;

impl<'ctx> Lowerer<'ctx, '_> {
    pub(super) fn body(
        &mut self,
        st: &mut FnState<'ctx>,
        body: &[Stmt],
    ) -> Result<(), CodegenError> {
        st.scopes.push(HashMap::new());
        for s in body {
            self.stmt(st, s)?;
        }
        st.scopes.pop();
        Ok(())
    }

    fn stmt(&mut self, st: &mut FnState<'ctx>, s: &Stmt) -> Result<(), CodegenError> {
        match s {
            Stmt::Let { name, ty, init } => {
                let v = self.expr(st, init)?;
                let slot = self.alloca(st, self.value_type(*ty), name)?;
                self.builder.build_store(slot, v.v).ll()?;
                st.bind(name, Binding::Scalar { slot, ty: *ty });
            }
            Stmt::Assign { name, value } => {
                let v = self.expr(st, value)?;
                let Binding::Scalar { slot, .. } = st.lookup(name)?.clone() else {
                    return Err(missing(&format!("scalar `{name}`")));
                };
                self.builder.build_store(slot, v.v).ll()?;
            }
            Stmt::Store { target, value } => {
                let v = self.expr(st, value)?;
                let (ptr, elem) = self.elem_ptr(st, target)?;
                self.store_elem(ptr, elem, v)?;
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.expr(st, cond)?.int();
                let then_bb = self.ctx.append_basic_block(st.function, "then");
                let else_bb = self.ctx.append_basic_block(st.function, "else");
                let merge = self.ctx.append_basic_block(st.function, "endif");
                self.builder
                    .build_conditional_branch(c, then_bb, else_bb)
                    .ll()?;
                for (bb, body) in [(then_bb, then_body), (else_bb, else_body)] {
                    self.builder.position_at_end(bb);
                    self.body(st, body)?;
                    if !self.is_terminated()? {
                        self.builder.build_unconditional_branch(merge).ll()?;
                    }
                }
                self.builder.position_at_end(merge);
            }
            Stmt::While { cond, body } => {
                let head = self.ctx.append_basic_block(st.function, "while.cond");
                let body_bb = self.ctx.append_basic_block(st.function, "while.body");
                let exit = self.ctx.append_basic_block(st.function, "while.end");
                self.builder.build_unconditional_branch(head).ll()?;
                self.builder.position_at_end(head);
                let c = self.expr(st, cond)?.int();
                self.builder
                    .build_conditional_branch(c, body_bb, exit)
                    .ll()?;
                self.builder.position_at_end(body_bb);
                st.loops.push(LoopTargets {
                    continue_to: head,
                    break_to: Some(exit),
                });
                self.body(st, body)?;
                st.loops.pop();
                if !self.is_terminated()? {
                    self.builder.build_unconditional_branch(head).ll()?;
                }
                self.builder.position_at_end(exit);
            }
            Stmt::For {
                var,
                start,
                stop,
                step,
                body,
            } => self.for_range(st, var, start, stop, step, body)?,
            Stmt::ParallelFor(p) => self.parallel_for(st, p)?,
            Stmt::Break | Stmt::Continue => {
                let target = st
                    .loops
                    .last()
                    .and_then(|l| {
                        if matches!(s, Stmt::Break) {
                            l.break_to
                        } else {
                            Some(l.continue_to)
                        }
                    })
                    .ok_or_else(|| missing("enclosing loop"))?;
                self.builder.build_unconditional_branch(target).ll()?;
                self.start_dead_block(st);
            }
            Stmt::Return(value) => {
                match value {
                    Some(e) => {
                        let v = self.expr(st, e)?;
                        self.builder.build_return(Some(&v.v)).ll()?;
                    }
                    None => {
                        self.builder.build_return(None).ll()?;
                    }
                }
                self.start_dead_block(st);
            }
            Stmt::Barrier => self.barrier(st)?,
            Stmt::Eval(e) => match e {
                Expr::Call(name, args) => {
                    self.call(st, name, args)?;
                }
                _ => {
                    self.expr(st, e)?;
                }
            },
        }
        Ok(())
    }

    fn for_range(
        &mut self,
        st: &mut FnState<'ctx>,
        var: &str,
        start: &Expr,
        stop: &Expr,
        step: &Expr,
        body: &[Stmt],
    ) -> Result<(), CodegenError> {
        // Python's range: bounds evaluated once; a hidden counter drives the
        // loop so that assigning to the variable does not change iteration.
        let a = self.expr(st, start)?;
        let b = self.expr(st, stop)?.int();
        let c = self.expr(st, step)?.int();
        let ty = a.ty;
        let counter = self.alloca(st, self.value_type(ty), &format!("{var}.next"))?;
        self.builder.build_store(counter, a.v).ll()?;
        let head = self.ctx.append_basic_block(st.function, "for.cond");
        let body_bb = self.ctx.append_basic_block(st.function, "for.body");
        let latch = self.ctx.append_basic_block(st.function, "for.step");
        let exit = self.ctx.append_basic_block(st.function, "for.end");
        self.builder.build_unconditional_branch(head).ll()?;
        self.builder.position_at_end(head);
        let i = self
            .builder
            .build_load(self.value_type(ty), counter, var)
            .ll()?
            .into_int_value();
        let zero = c.get_type().const_zero();
        let up = self
            .builder
            .build_int_compare(IntPredicate::SGT, c, zero, "up")
            .ll()?;
        let below = self
            .builder
            .build_int_compare(IntPredicate::SLT, i, b, "below")
            .ll()?;
        let above = self
            .builder
            .build_int_compare(IntPredicate::SGT, i, b, "above")
            .ll()?;
        let go = self.builder.build_select(up, below, above, "go").ll()?;
        self.builder
            .build_conditional_branch(go.into_int_value(), body_bb, exit)
            .ll()?;
        self.builder.position_at_end(body_bb);
        st.scopes.push(HashMap::new());
        let slot = self.alloca(st, self.value_type(ty), var)?;
        self.builder.build_store(slot, i).ll()?;
        st.bind(var, Binding::Scalar { slot, ty });
        st.loops.push(LoopTargets {
            continue_to: latch,
            break_to: Some(exit),
        });
        self.body(st, body)?;
        st.loops.pop();
        st.scopes.pop();
        if !self.is_terminated()? {
            self.builder.build_unconditional_branch(latch).ll()?;
        }
        self.builder.position_at_end(latch);
        let cur = self
            .builder
            .build_load(self.value_type(ty), counter, var)
            .ll()?
            .into_int_value();
        let nxt = self.builder.build_int_add(cur, c, "next").ll()?;
        self.builder.build_store(counter, nxt).ll()?;
        self.builder.build_unconditional_branch(head).ll()?;
        self.builder.position_at_end(exit);
        Ok(())
    }

    /// Grid-stride loops: variable `k` of `n` runs over grid axis `n-1-k`,
    /// starting at `blockIdx*blockDim + threadIdx` and stepping by
    /// `blockDim*gridDim` on that axis.
    fn parallel_for(
        &mut self,
        st: &mut FnState<'ctx>,
        p: &ParallelFor,
    ) -> Result<(), CodegenError> {
        let mut extents = Vec::new();
        for e in &p.extents {
            let v = self.expr(st, e)?;
            extents.push(self.to_i64(v)?);
        }
        let n = p.vars.len();
        st.scopes.push(HashMap::new());
        let mut exits = Vec::new();
        let mut latches = Vec::new();
        for (k, var) in p.vars.iter().enumerate() {
            let axis = [Axis::X, Axis::Y, Axis::Z][n - 1 - k];
            let tid = self.special(st, Special::ThreadIdx, axis)?;
            let ctaid = self.special(st, Special::BlockIdx, axis)?;
            let ntid = self.special(st, Special::BlockDim, axis)?;
            let nctaid = self.special(st, Special::GridDim, axis)?;
            let wide = |v: IntValue<'ctx>| {
                self.builder
                    .build_int_z_extend(v, self.ctx.i64_type(), "w")
                    .ll()
            };
            let (tid, ctaid, ntid, nctaid) = (wide(tid)?, wide(ctaid)?, wide(ntid)?, wide(nctaid)?);
            let first = self.builder.build_int_mul(ctaid, ntid, "blk").ll()?;
            let first = self.builder.build_int_add(first, tid, "first").ll()?;
            let stride = self.builder.build_int_mul(ntid, nctaid, "stride").ll()?;
            let counter = self.alloca(st, self.ctx.i64_type().into(), &format!("{var}.next"))?;
            self.builder.build_store(counter, first).ll()?;
            let head = self.ctx.append_basic_block(st.function, "grid.cond");
            let body_bb = self.ctx.append_basic_block(st.function, "grid.body");
            let latch = self.ctx.append_basic_block(st.function, "grid.step");
            let exit = self.ctx.append_basic_block(st.function, "grid.end");
            self.builder.build_unconditional_branch(head).ll()?;
            self.builder.position_at_end(head);
            let i = self
                .builder
                .build_load(self.ctx.i64_type(), counter, var)
                .ll()?
                .into_int_value();
            let go = self
                .builder
                .build_int_compare(IntPredicate::SLT, i, extents[k], "go")
                .ll()?;
            self.builder
                .build_conditional_branch(go, body_bb, exit)
                .ll()?;
            self.builder.position_at_end(latch);
            let cur = self
                .builder
                .build_load(self.ctx.i64_type(), counter, var)
                .ll()?
                .into_int_value();
            let nxt = self.builder.build_int_add(cur, stride, "next").ll()?;
            self.builder.build_store(counter, nxt).ll()?;
            self.builder.build_unconditional_branch(head).ll()?;
            self.builder.position_at_end(body_bb);
            let slot = self.alloca(st, self.ctx.i64_type().into(), var)?;
            self.builder.build_store(slot, i).ll()?;
            st.bind(
                var,
                Binding::Scalar {
                    slot,
                    ty: ScalarType::I64,
                },
            );
            exits.push(exit);
            latches.push(latch);
        }
        let inner_latch = *latches.last().ok_or_else(|| missing("parallel variable"))?;
        st.loops.push(LoopTargets {
            continue_to: inner_latch,
            break_to: None,
        });
        self.body(st, &p.body)?;
        st.loops.pop();
        st.scopes.pop();
        // Close the loops from the inside out: the end of loop k goes to the
        // step of loop k-1.
        for k in (0..n).rev() {
            if !self.is_terminated()? {
                self.builder.build_unconditional_branch(latches[k]).ll()?;
            }
            self.builder.position_at_end(exits[k]);
        }
        Ok(())
    }

    fn barrier(&mut self, st: &FnState<'ctx>) -> Result<(), CodegenError> {
        match self.opts.target {
            Target::Ptx => {
                let f = self.intrinsic_fn("llvm.nvvm.barrier0", None, &[])?;
                self.builder.build_call(f, &[], "").ll()?;
            }
            Target::Host => {
                let f = self.intrinsic_fn(BARRIER_SYMBOL, None, &[self.generic_ptr().into()])?;
                let ctxp = st.host_ctx.ok_or_else(|| missing("host context"))?;
                self.builder.build_call(f, &[ctxp.into()], "").ll()?;
            }
        }
        Ok(())
    }
}
