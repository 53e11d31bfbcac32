//! The CI gate: `--fail-under PCT` and `--fail-on-regression`.

pub use crate::report::GateOutcome;
use crate::report::Report;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GateOptions {
    /// Fail when `gpu_eligible_pct` is below this.
    pub fail_under: Option<f64>,
    /// Fail when the comparison with the baseline found a regression.
    pub fail_on_regression: bool,
}

impl GateOptions {
    pub fn is_set(&self) -> bool {
        self.fail_under.is_some() || self.fail_on_regression
    }
}

pub fn check(report: &Report, opts: &GateOptions) -> GateOutcome {
    let mut failures = Vec::new();
    let c = &report.coverage;
    if let Some(min) = opts.fail_under {
        if c.gpu_eligible_pct < min {
            failures.push(format!(
                "GPU-eligible {:.1}% of {} is under --fail-under {min}%",
                c.gpu_eligible_pct,
                c.basis.phrase()
            ));
        }
    }
    if opts.fail_on_regression {
        match &report.baseline {
            Some(b) => failures.extend(b.regressions.iter().cloned()),
            None => failures.push("--fail-on-regression needs --baseline FILE".into()),
        }
    }
    GateOutcome {
        fail_under: opts.fail_under,
        fail_on_regression: opts.fail_on_regression,
        failures,
    }
}
