//! Stopping a profile early: Ctrl-C, or a caller that wants to stop it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::ProfileError;

/// While alive, Ctrl-C (and SIGTERM, SIGHUP) stops the profile instead of
/// ending the process: port's signal handling ([`port_reaper`]) hands the
/// signal to the profile's [`StopSignal`].
pub(crate) struct CtrlCScope(#[allow(dead_code)] port_reaper::Interception);

impl CtrlCScope {
    pub(crate) fn enter(stop: &StopSignal) -> Self {
        let raised = stop.clone();
        CtrlCScope(port_reaper::intercept(move |_| raised.stop()))
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
    /// with status 128 + the signal, its children ended and its temporary
    /// folders removed ([`port_reaper`]). Fails only when the signals cannot
    /// be registered.
    pub fn ctrl_c() -> Result<StopSignal, ProfileError> {
        port_reaper::install().map_err(ProfileError::Interrupt)?;
        Ok(StopSignal::new())
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
