//! What a caller needs to draw a spinner: the profiler reports, the caller draws
//! (and stays quiet when output is not a terminal).

use std::time::Duration;

/// The step a profile is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The app runs under the sampler.
    Sampling,
    /// The app runs a second time to capture argument types and inputs.
    Capturing,
}

/// Sent about ten times a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressTick {
    pub phase: Phase,
    /// Since the current phase's run of the app started.
    pub elapsed: Duration,
    /// Samples counted so far (stays at the final count while capturing).
    pub samples: u64,
}

impl ProgressTick {
    /// "sampling 3.2 s, 318 samples": a spinner message.
    pub fn message(&self) -> String {
        match self.phase {
            Phase::Sampling => format!(
                "sampling {:.1} s, {} sample{}",
                self.elapsed.as_secs_f64(),
                self.samples,
                if self.samples == 1 { "" } else { "s" }
            ),
            Phase::Capturing => format!(
                "capturing argument types and inputs {:.1} s",
                self.elapsed.as_secs_f64()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_time_and_samples() {
        let t = ProgressTick {
            phase: Phase::Sampling,
            elapsed: Duration::from_millis(3210),
            samples: 318,
        };
        assert_eq!(t.message(), "sampling 3.2 s, 318 samples");
    }
}
