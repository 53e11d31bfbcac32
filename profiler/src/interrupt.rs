//! Stopping a profile early: Ctrl-C, or a caller that wants to stop it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::ProfileError;

/// Whether a profile is listening to Ctrl-C right now. Outside a profile,
/// Ctrl-C must still end the program as usual.
static PROFILING: AtomicBool = AtomicBool::new(false);

/// While alive, Ctrl-C stops the profile instead of ending the process.
pub(crate) struct CtrlCScope(());

impl CtrlCScope {
    pub(crate) fn enter() -> Self {
        PROFILING.store(true, Ordering::SeqCst);
        CtrlCScope(())
    }
}

impl Drop for CtrlCScope {
    fn drop(&mut self) {
        PROFILING.store(false, Ordering::SeqCst);
    }
}

/// A flag the sampling loop checks between samples.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the profile to stop; the app is terminated and what was sampled is kept.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Clears a previous stop, so one signal can serve several profiles.
    pub fn reset(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// The process-wide signal raised by Ctrl-C (SIGINT), SIGTERM and SIGHUP
    /// while [`crate::profile`] runs; at any other time these end the process
    /// with status 130, as if no handler were installed. The handler is
    /// installed on the first call; that fails only when another handler was
    /// installed through the `ctrlc` crate first.
    pub fn ctrl_c() -> Result<StopSignal, ProfileError> {
        static CTRL_C: OnceLock<Result<StopSignal, String>> = OnceLock::new();
        CTRL_C
            .get_or_init(|| {
                let signal = StopSignal::new();
                let raised = signal.clone();
                ctrlc::set_handler(move || {
                    if PROFILING.load(Ordering::SeqCst) {
                        raised.stop();
                    } else {
                        std::process::exit(130);
                    }
                })
                .map(|()| signal)
                .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(ProfileError::Interrupt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let a = StopSignal::new();
        let b = a.clone();
        assert!(!b.is_stopped());
        a.stop();
        assert!(b.is_stopped());
        b.reset();
        assert!(!a.is_stopped());
    }
}
