//! The plan's last passes: the index ranges of the kernels checked
//! ([`crate::schedule::bounds`]), the shape guards placed where the wrapper
//! checks them, [`crate::schedule::fuse`] (which statements share a kernel), the
//! scalars no step reads dropped, the pairs of arguments a captured call
//! passed as one array, and float64 lowered to float32 when asked.

use crate::plan::{KernelPlan, PlanKind};
use crate::request::MigrationRequest;
use crate::{lower, schedule};

/// The pass, on a plan the lowering made of the function at `line`, with
/// the parameters specialised to their `defaults`.
pub fn finish(
    mut plan: KernelPlan,
    defaults: Vec<(String, String)>,
    line: u32,
    req: &MigrationRequest,
) -> KernelPlan {
    plan.defaults = defaults;
    plan.literals = req.literals.to_vec();
    if plan.kind != PlanKind::Kernels {
        plan.unit_dims = Vec::new();
    } else {
        // Only the arguments' axes the plan really read as broadcast.
        let mut steps = lower::shapes::specialisation_guards(&plan.unit_dims, line);
        steps.append(&mut plan.steps);
        plan.steps = steps;
        // Index ranges checked before their launches, then placed (and
        // dropped where they hold by arithmetic) with the other guards.
        let on_trust = schedule::bounds::bound_plan(&mut plan);
        if !on_trust.is_empty() {
            if let Some(r) = plan
                .rewrites
                .iter_mut()
                .find(|r| r.rewrite == lower::shapes::NAME)
            {
                let mut notes: Vec<String> = Vec::new();
                if r.applied && !r.note.is_empty() {
                    notes.push(std::mem::take(&mut r.note));
                }
                notes.extend(on_trust);
                r.applied = true;
                r.note = notes.join("; ");
            }
        }
        lower::shapes::place_guards(&mut plan);
        let fused = schedule::fuse::fuse_plan(&mut plan);
        if !fused.is_empty() {
            for r in &mut plan.rewrites {
                if r.rewrite == schedule::fuse::NAME {
                    r.applied = true;
                    r.note = fused.join("; ");
                }
            }
        }
        let persisted = schedule::persist::persist_plan(&mut plan);
        for r in &mut plan.rewrites {
            if r.rewrite == schedule::persist::NAME {
                if !persisted.converted.is_empty() {
                    r.applied = true;
                    r.note = persisted
                        .converted
                        .iter()
                        .chain(&persisted.kept)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; ");
                } else if !persisted.kept.is_empty() {
                    r.note = format!("not applied: {}", persisted.kept.join("; "));
                }
            }
        }
    }
    plan.drop_unused_scalars();
    // The captured call passed one array for two parameters, and the plan
    // stands (the analysis raises PORT204 where that is unsafe).
    plan.same_array_ok = req
        .report
        .and_then(|r| r.types.as_ref())
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t.same_as.as_ref().map(|f| (t.name.clone(), f.clone())))
                .collect()
        })
        .unwrap_or_default();
    if req.fp32 {
        lower::fp32::lower_plan(&mut plan);
        for r in &mut plan.rewrites {
            if r.rewrite == lower::fp32::NAME {
                r.applied = true;
                r.note =
                    "float64 lowered to float32 (kernels, device arrays); results converted back"
                        .into();
            }
        }
    }
    plan
}
