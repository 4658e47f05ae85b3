//! The clock the flows read: the time a signature is logged at and a spending window
//! ends at. Injectable ([`crate::FlowsBuilder::clock`]), so a wallet or a test can run the
//! flows at another time. This clock is one witness; online, a window never ends past the
//! chain's newest block time plus [`bridgectl_tx::limits::CLOCK_TOLERANCE`], whatever it
//! says, so a clock set ahead cannot move what was signed out of a window.

/// A clock: seconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in seconds since the Unix epoch.
    fn now(&self) -> u64;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        bridgectl_tx::signing_log::unix_now()
    }
}
