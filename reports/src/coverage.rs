//! The coverage figures a report shows and the CI gate checks.
//!
//! - `gpu_eligible_pct`: the share of sampled time spent in functions whose
//!   verdict is `cuda`;
//! - `nopython_pct` and `object_pct`: the same for `nopython` and `object`;
//! - `migrated_pct`: the share of sampled time spent in functions that are
//!   already migrated and whose migration verified.
//!
//! A function's time is its *self* time, so the shares add up to at most
//! 100%. The first three come from the analysis as it is; only
//! `migrated_pct` needs the migrations. With a `--static` analysis nothing
//! was sampled and every figure falls back to the share of *functions*;
//! [`Basis`] says which one a figure is.

use std::collections::HashMap;

use port_analyzer::model::{round2, Analysis, FunctionReport};
use serde::{Deserialize, Serialize};

use crate::migration::Migration;

/// What a percentage is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Share of sampled time (a profiled `port analyze APP.py`).
    Samples,
    /// Share of functions (`port analyze --static`).
    Functions,
}

impl Basis {
    /// "of sampled time" / "of functions".
    pub fn phrase(self) -> &'static str {
        match self {
            Basis::Samples => "sampled time",
            Basis::Functions => "functions",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoverageFigures {
    pub basis: Basis,
    pub gpu_eligible_pct: f64,
    pub migrated_pct: f64,
    pub nopython_pct: f64,
    pub object_pct: f64,
}

/// The key other stages name a function by: `module.qualname`.
pub fn function_key(f: &FunctionReport) -> String {
    format!("{}.{}", f.module, f.qualname)
}

/// Which analysed function each migration is about: by `module.qualname`,
/// else by qualname, else by bare name when only one function has it.
pub fn migrations_by_function<'m>(
    analysis: &Analysis,
    migrations: &'m [Migration],
) -> HashMap<String, &'m Migration> {
    let mut out = HashMap::new();
    for m in migrations {
        let by = |pick: &dyn Fn(&FunctionReport) -> String| {
            let hits: Vec<&FunctionReport> = analysis
                .functions
                .iter()
                .filter(|f| pick(f) == m.function)
                .collect();
            (hits.len() == 1).then(|| function_key(hits[0]))
        };
        let key = by(&function_key)
            .or_else(|| by(&|f| f.qualname.clone()))
            .or_else(|| by(&|f| f.name.clone()));
        if let Some(k) = key {
            out.insert(k, m);
        }
    }
    out
}

/// A sum of percentages, rounded to two decimals. (An empty `f64` sum is
/// -0.0, which would print as "-0.0%".)
pub fn sum_pct(values: impl Iterator<Item = f64>) -> f64 {
    round2(values.fold(0.0, |a, b| a + b))
}

impl CoverageFigures {
    pub fn of(analysis: &Analysis, migrations: &[Migration]) -> CoverageFigures {
        let c = &analysis.coverage;
        let basis = if c.basis == "samples" {
            Basis::Samples
        } else {
            Basis::Functions
        };
        let by_fn = migrations_by_function(analysis, migrations);
        let migrated = analysis
            .functions
            .iter()
            .filter(|f| by_fn.get(&function_key(f)).is_some_and(|m| m.is_verified()));
        let migrated_pct = match basis {
            Basis::Samples => sum_pct(migrated.filter_map(|f| f.self_pct)),
            Basis::Functions => {
                let n = analysis.functions.len();
                if n == 0 {
                    0.0
                } else {
                    round2(100.0 * migrated.count() as f64 / n as f64)
                }
            }
        };
        CoverageFigures {
            basis,
            gpu_eligible_pct: c.gpu_eligible_pct,
            migrated_pct,
            nopython_pct: c.nopython_pct,
            object_pct: c.object_pct,
        }
    }
}
