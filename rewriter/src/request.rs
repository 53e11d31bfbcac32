//! What the planner is asked (a [`MigrationRequest`]) and what it answers:
//! a plan or the reasons there is none ([`PlanOutcome`]), and, for
//! `migrate`, the plan printed as Python and as a patch ([`Outcome`]).

use port_analyzer::FunctionReport;

use crate::error::Reason;
use crate::lower::context::AppFacts;
use crate::plan::KernelPlan;
use crate::types::ArgType;

/// What to migrate.
pub struct MigrationRequest<'a> {
    /// The user's file, as text.
    pub source: &'a str,
    /// Its name in messages and in the diff header.
    pub file_name: &'a str,
    /// The function's name in the file: `f` or `Class.method`.
    pub function: &'a str,
    /// One type per parameter.
    pub types: &'a [ArgType],
    /// Verdicts of the program's functions (for calls).
    pub facts: &'a AppFacts,
    /// The analysis of this function, when there is one.
    pub report: Option<&'a FunctionReport>,
    /// Lower float64 to float32.
    pub fp32: bool,
    /// Shapes of the array arguments in the inputs the plan will be
    /// verified on (captured or given), when known: an axis of extent 1
    /// there is planned as a broadcast axis ([`lower::shapes`]).
    pub input_shapes: &'a [(String, Vec<usize>)],
    /// Parameters the plan is specialised to a constant for, which every
    /// call passes (`w=None`, `mode='reflect'`): the name and the constant
    /// as Python writes it. They have no entry in `types`; the wrapper runs
    /// the original when a call passes anything else.
    pub literals: &'a [(String, String)],
}

/// A migrated function: the plan and everything made from it.
#[derive(Clone, Debug)]
pub struct Migration {
    pub plan: KernelPlan,
    /// Device functions, kernels and the wrapper, as Python.
    pub python: String,
    /// The whole file with the function replaced.
    pub new_source: String,
    /// Unified diff from the user's file to `new_source`.
    pub diff: String,
}

/// The result of [`crate::migrate`].
#[derive(Clone, Debug)]
pub enum Outcome {
    Migrated(Box<Migration>),
    /// The function cannot become a correct kernel: every reason, with its line.
    Refused(Vec<Reason>),
}

/// The result of [`crate::plan`]: the plan alone, before any source is printed.
#[derive(Clone, Debug)]
pub enum PlanOutcome {
    Planned(Box<KernelPlan>),
    /// Every reason, with its line; the first is the planner's own.
    Refused(Vec<Reason>),
}
