//! **scan**: `np.cumsum` / `np.cumprod` (and the methods) as a parallel
//! scan, not one thread walking the whole axis. The axis is cut into
//! `min(n, CHUNKS)` chunks (at least one) and three kernels run on the
//! host schedule:
//!
//! 1. one thread per (row, chunk) reduces its chunk into `partial`;
//! 2. one thread per row turns `partial` into exclusive prefixes
//!    (a sequential scan of the chunk totals);
//! 3. one thread per (row, chunk) scans its chunk again from its prefix
//!    and writes the result.
//!
//! Work is twice the input's, parallelism `rows × min(n, CHUNKS)`: a
//! short axis gets a chunk per element, not threads with nothing to do. A float sum
//! adds in another order than NumPy's sequential `cumsum`, within the
//! usual tolerance. Integers and booleans accumulate in (u)int64, as NumPy's.

use port_codegen::ir::build::*;
use port_codegen::ir::{ArrayType, ElemRef, Expr, ScalarType, Stmt};
use rustpython_parser::ast;

use crate::dependences::RedOp;
use crate::error::{refuse, Lower};
use crate::ir_util::cast_to;
use crate::lower::context::{combine, identity, sanitize, HostBind, Lowerer, Region, RegionKind};
use crate::numpy::array_expr::{ArrVal, Val};
use crate::plan::{Fill, HostStep};
use crate::source::Const;

pub const NAME: &str = "scan";

/// The most chunks per scanned row.
pub const CHUNKS: i64 = 1024;

/// `cumsum` or `cumprod`.
pub fn scan_op(name: &str) -> Option<RedOp> {
    match name.rsplit('.').next().unwrap_or(name) {
        "cumsum" => Some(RedOp::Sum),
        "cumprod" => Some(RedOp::Prod),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// `np.cumsum(x, axis=…)` (`skip` = 1) or `x.cumsum(axis=…)` (`skip`
    /// = 0, `x` given as `subject`).
    pub(crate) fn scan_call(
        &mut self,
        r: &mut Region,
        op: RedOp,
        subject: Val,
        c: &ast::ExprCall,
        skip: usize,
        line: u32,
    ) -> Lower<Val> {
        let word = if op == RedOp::Sum {
            "cumsum"
        } else {
            "cumprod"
        };
        let Val::Array(av) = subject else {
            return refuse(NAME, line, format!("`{word}` of a scalar"));
        };
        crate::lower::whole_reduction::complex_product(op, av.elem, line, "in a running product")?;
        let mut axis: Option<&ast::Expr> = c.args.get(skip);
        if c.args.len() > skip + 1 {
            return refuse(
                NAME,
                line,
                format!("`{word}`: only `axis` may follow the array"),
            );
        }
        for k in &c.keywords {
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("axis") => axis = Some(&k.value),
                other => {
                    return refuse(
                        NAME,
                        line,
                        format!(
                            "`{word}`: keyword `{}` is not supported",
                            other.unwrap_or("**")
                        ),
                    )
                }
            }
        }
        let axis = match axis {
            None => None,
            Some(ast::Expr::Constant(k)) if matches!(k.value, ast::Constant::None) => None,
            Some(e) => match self.src.eval_const(e) {
                Some(Const::Int(k)) => Some(k),
                _ => {
                    return refuse(
                        NAME,
                        line,
                        format!("`{word}`: `axis` must be an integer constant"),
                    )
                }
            },
        };
        if r.kind != RegionKind::Host {
            return refuse(
                NAME,
                line,
                format!("`{word}` inside a parallel loop: move it out of the loop"),
            );
        }
        // axis=None scans the flattened array.
        let (av, a) = match axis {
            None if av.ndim() == 1 => (av, 0),
            None => (crate::lower::creation::reshape(&av, vec![av.size()]), 0),
            Some(k) => {
                let nd = av.ndim() as i64;
                let k = if k < 0 { k + nd } else { k };
                if !(0..nd).contains(&k) {
                    return refuse(NAME, line, format!("`{word}`: axis {k} is out of bounds"));
                }
                (av, k as usize)
            }
        };
        self.scan_kernels(op, &av, a, line)
    }

    fn scan_kernels(&mut self, op: RedOp, av: &ArrVal, a: usize, line: u32) -> Lower<Val> {
        let word = if op == RedOp::Sum {
            "cumsum"
        } else {
            "cumprod"
        };
        let nd = av.ndim();
        let acc_t = if av.elem.is_float() {
            av.elem
        } else if av.elem.is_unsigned() {
            ScalarType::U64
        } else {
            ScalarType::I64
        };
        let n = av.shape[a].clone();
        let rows: Vec<usize> = (0..nd).filter(|&d| d != a).collect();
        if rows.len() + 1 > port_codegen::ir::MAX_DIMS as usize {
            return refuse(NAME, line, format!("`{word}` of a {nd}-D array"));
        }
        let hint = sanitize(word);
        let out = self.fresh(&hint);
        let partial = self.fresh(&format!("{hint}_partial"));
        let out_ty = ArrayType {
            elem: acc_t,
            ndim: nd as u8,
            contiguous: true,
        };
        // As many chunks as elements up to `CHUNKS`, and one for an
        // empty axis (the chunk length divides by the count).
        use port_codegen::ir::BinOp;
        let chunks = crate::numpy::array_expr::tidy(&binary(
            BinOp::Max,
            binary(BinOp::Min, n.clone(), i64(CHUNKS)),
            i64(1),
        ));
        let mut part_shape: Vec<Expr> = rows.iter().map(|&d| av.shape[d].clone()).collect();
        part_shape.push(chunks.clone());
        let part_ty = ArrayType {
            elem: acc_t,
            ndim: part_shape.len() as u8,
            contiguous: true,
        };
        for (name, ty, shape) in [
            (&out, out_ty, av.shape.clone()),
            (&partial, part_ty, part_shape.clone()),
        ] {
            let host_shape: Vec<Expr> = shape.iter().map(|s| self.hostify(s.clone())).collect();
            self.steps.push(HostStep::Alloc {
                name: name.clone(),
                elem: acc_t,
                shape: host_shape,
                fill: Fill::Empty,
            });
            self.host.insert(name.clone(), HostBind::Array(ty));
        }

        let mut seen: Vec<&Expr> = vec![&av.body];
        seen.extend(av.shape.iter());
        // vars[d] indexes dimension d; `chunk` the chunk; vars[a] the
        // position along the axis.
        let vars = self.element_vars(nd + 1, &seen);
        let chunk = vars[nd].clone();
        let j = vars[a].clone();
        let idx: Vec<Expr> = (0..nd).map(|d| var(&vars[d])).collect();
        let x = cast_to(av.element(&idx), av.elem, acc_t);
        let row_idx: Vec<Expr> = rows.iter().map(|&d| var(&vars[d])).collect();
        let mut part_idx = row_idx.clone();
        part_idx.push(var(&chunk));
        // Chunk `chunk` covers [chunk * len, min((chunk + 1) * len, n)).
        let len = binary(
            BinOp::FloorDiv,
            sub(add(n.clone(), chunks.clone()), i64(1)),
            chunks.clone(),
        );
        let lo = mul(var(&chunk), len.clone());
        let hi = binary(BinOp::Min, add(lo.clone(), len), n.clone());
        let acc = self.fresh("acc");
        let fname = self.fn_name.clone();

        // 1. chunk totals.
        let reduce_chunk = vec![
            let_(&acc, acc_t, identity(op, acc_t)),
            for_range(
                &j,
                lo.clone(),
                hi.clone(),
                i64(1),
                vec![assign(&acc, combine(op, var(&acc), x.clone()))],
            ),
            Stmt::Store {
                target: ElemRef {
                    array: partial.clone(),
                    indices: part_idx.clone(),
                },
                value: var(&acc),
            },
        ];
        let mut grid_vars: Vec<String> = rows.iter().map(|&d| vars[d].clone()).collect();
        grid_vars.push(chunk.clone());
        self.launch_over(
            &grid_vars,
            &part_shape,
            reduce_chunk,
            &format!("{hint}_chunks"),
            format!("Line {line} of `{fname}`: `{word}`, step 1 of 3: each chunk's total."),
        )?;

        // 2. exclusive prefixes of the chunk totals, one thread per row.
        let t = self.fresh("t");
        let prefix = vec![
            let_(&acc, acc_t, identity(op, acc_t)),
            let_(&t, acc_t, identity(op, acc_t)),
            for_range(
                &chunk,
                i64(0),
                chunks.clone(),
                i64(1),
                vec![
                    assign(&t, load(&partial, part_idx.clone())),
                    store(&partial, part_idx.clone(), var(&acc)),
                    assign(&acc, combine(op, var(&acc), var(&t))),
                ],
            ),
        ];
        let row_vars: Vec<String> = rows.iter().map(|&d| vars[d].clone()).collect();
        let row_shape: Vec<Expr> = rows.iter().map(|&d| av.shape[d].clone()).collect();
        self.launch_over(&row_vars, &row_shape, prefix, &format!("{hint}_prefix"), format!(
            "Line {line} of `{fname}`: `{word}`, step 2 of 3: exclusive prefixes of the chunk totals."
        ))?;

        // 3. each chunk scanned from its prefix.
        let scan_chunk = vec![
            let_(&acc, acc_t, load(&partial, part_idx.clone())),
            for_range(
                &j,
                lo,
                hi,
                i64(1),
                vec![
                    assign(&acc, combine(op, var(&acc), x)),
                    store(&out, idx.clone(), var(&acc)),
                ],
            ),
        ];
        self.launch_over(
            &grid_vars,
            &part_shape,
            scan_chunk,
            &hint,
            format!(
            "Line {line} of `{fname}`: `{word}`, step 3 of 3: each chunk scanned from its prefix."
        ),
        )?;
        self.log.applied(
            NAME,
            format!(
                "`{word}` at line {line}: a parallel scan (up to {CHUNKS} chunks per row: chunk totals, their prefixes, chunk scans)"
            ),
        );
        Ok(Val::Array(ArrVal::named(&out, out_ty)))
    }

    /// A kernel running `body` once per element of `shape` (one thread for
    /// an empty shape), laid over the grid by [`Lowerer::element_grid`].
    pub(crate) fn launch_over(
        &mut self,
        vars: &[String],
        shape: &[Expr],
        body: Vec<Stmt>,
        what: &str,
        doc: String,
    ) -> Lower<()> {
        let (pfor, launch) = self.element_grid(vars, shape, body);
        let kname = self.kernel_name(what);
        self.add_kernel(kname, vec![pfor], vec![], launch, doc)
    }
}
