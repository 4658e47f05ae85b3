//! Where a batch item stands: the words `batch status` and a run's report use. Plain
//! data (what the crate's error names too), read from the journal by `status`.

use serde::Serialize;

/// Where an item stands in the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItemState {
    /// Its flow has not begun.
    NotStarted,
    /// Its flow began and stopped before signing (interrupted, refused or declined).
    Unsigned,
    /// Signed and journaled; not known to be accepted.
    Signed,
    /// Accepted by the platform or node; its result is awaited.
    Submitted,
    /// Its end was observed; it is done once that is final on its chain.
    Confirming,
    /// Done, and final.
    Completed,
    /// Failed after it signed (reverted, or the platform failed the redemption).
    Failed,
}

impl ItemState {
    /// Its name, as `batch status` and JSON write it (`not-started`, `unsigned`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ItemState::NotStarted => "not-started",
            ItemState::Unsigned => "unsigned",
            ItemState::Signed => "signed",
            ItemState::Submitted => "submitted",
            ItemState::Confirming => "confirming",
            ItemState::Completed => "completed",
            ItemState::Failed => "failed",
        }
    }
}
