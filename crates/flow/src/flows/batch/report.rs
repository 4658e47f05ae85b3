//! What a run reports of each item: how it ended in this run, and why it failed or is
//! still pending, for a caller to match.

use alloy_primitives::B256;
use serde::Serialize;

use crate::Error;
use crate::journal::{FlowState, Purpose};

/// How an item ended in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemStatus {
    /// Done: redeemed, mined, credited.
    Completed,
    /// Failed after it signed: reverted, or a redemption the platform failed (`failed`
    /// in `batch status` too). Over: resume does not run it again.
    Failed,
    /// Stopped before it signed in this run: refused by a check, the platform's action
    /// failed. Nothing was sent; `batch status` says `unsigned` too, and `batch resume`
    /// runs it again.
    Unsigned,
    /// Not finished: its result did not come in time, or it did not run because an
    /// earlier item of its address could not be sent. `batch resume` finishes it.
    Pending,
}

/// The result of one item, as the batch reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemResult {
    /// Position in the batch (0-based, input order).
    pub index: usize,
    /// The item's id.
    pub id: String,
    /// The txId of the flow that carried it out.
    pub tx_id: String,
    /// Its transaction, once signed.
    pub tx_hash: Option<B256>,
    /// How it ended.
    pub status: ItemStatus,
    /// Why it failed or is pending (in JSON, its message).
    pub error: Option<ItemError>,
    /// The signed bytes were sent again (a resumed batch), not signed now.
    pub resent: bool,
    /// It had finished in an earlier run; nothing was done now.
    pub earlier: bool,
    /// Milliseconds from the start of its work in this run (the platform's action, or the
    /// resend) to its result; none for an item that did not run.
    pub latency_ms: Option<u64>,
}

/// Why a batch item failed or is pending, for a caller to match; its `Display` (and its
/// JSON form, a string) is the message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    /// This run's error, as a single flow would have returned it: match it with
    /// [`Error::refusal`], [`Error::is_transient`] and the like.
    #[error(transparent)]
    Flow(std::sync::Arc<Error>),
    /// The platform ended the redemption other than completed.
    #[error(
        "the redemption ended {}{}",
        bridgectl_tx::text::printable(status),
        reason.as_deref().map(|m| format!(": {}", bridgectl_tx::text::printable(m))).unwrap_or_default()
    )]
    Redemption {
        /// Its status as the platform spelled it (lowercased).
        status: String,
        /// The platform's `reason`, when it gave one.
        reason: Option<String>,
    },
    /// The flow ended without completing: failed, or cancelled, or replaced at its nonce
    /// by a transaction that was mined instead.
    #[error("{}", ended_text(*state, replaced_by.as_ref()))]
    Ended {
        /// How it ended.
        state: FlowState,
        /// For a flow signed more than once at its nonce: what the mined one was for
        /// and its hash.
        replaced_by: Option<(Purpose, B256)>,
    },
    /// Not run: an earlier item of the same address signed and could not be sent, so
    /// this item's nonce is not free yet. Resuming the batch runs it.
    #[error("item {item} of the same address could not be sent ({reason}); resume the batch")]
    Blocked {
        /// The item whose bytes were not accepted.
        item: String,
        /// Why they were not.
        reason: String,
    },
    /// Recorded in the journal by an earlier run: only its text is kept.
    #[error("{0}")]
    Earlier(String),
    /// Its end cannot be observed here (why, in the flow's words): it stays pending,
    /// never completed on a guess.
    #[error("its end cannot be observed here: {0}")]
    Unobserved(String),
    /// An item of a batch prepared for the air gap that has no signature here: the
    /// offline signer left it out, or its signature was refused, or the batch was
    /// abandoned; it is never signed here.
    #[error(
        "not signed offline: {}; it is never signed online",
        why.as_deref().map_or_else(
            || "no signature for it has come back".into(),
            bridgectl_tx::text::printable
        )
    )]
    NotSignedOffline {
        /// Why, as the journal recorded it: the offline signer's reason for leaving it
        /// out, why its signature was refused here, or the abandonment. `None` when no
        /// signed batch has said anything of it.
        why: Option<String>,
    },
}

impl ItemError {
    /// This run's error for the item as a single flow would have returned it
    /// ([`ItemError::Flow`]), to match as one ([`Error::cause`], [`Error::refusal`]);
    /// `None` for the batch's own reports (a redemption's end, a blocked item, ...).
    pub fn flow(&self) -> Option<&Error> {
        match self {
            ItemError::Flow(e) => Some(e),
            _ => None,
        }
    }
}

fn ended_text(state: FlowState, replaced_by: Option<&(Purpose, B256)>) -> String {
    match replaced_by {
        Some((purpose, mined)) => {
            format!("ended {} by {} {mined}", state.as_str(), purpose.as_str())
        }
        None => format!("the flow ended {}", state.as_str()),
    }
}

impl From<Error> for ItemError {
    fn from(e: Error) -> Self {
        ItemError::Flow(std::sync::Arc::new(e))
    }
}

impl Serialize for ItemError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A wallet matches an item's error as it would a single flow's; JSON keeps the
    /// message, as before the error was typed.
    #[test]
    fn an_item_error_is_matched_and_serialized_as_its_message() {
        let refused: ItemError = Error::Tx(bridgectl_tx::Error::Policy {
            by: bridgectl_tx::CheckedBy::Intent,
            field: bridgectl_tx::Field::Arg("_amount".into()),
            kind: bridgectl_tx::Expectation::Pinned,
            expected: "1".into(),
            found: "2".into(),
        })
        .into();
        match &refused {
            ItemError::Flow(e) => assert!(e.is_refusal(), "{e}"),
            other => panic!("a flow's error, got {other:?}"),
        }
        assert_eq!(
            serde_json::to_value(&refused).expect("json"),
            json!(refused.to_string())
        );
        let redemption = ItemError::Redemption {
            status: "rejected".into(),
            reason: Some("no\u{1b}[2Jliquidity".into()),
        };
        let text = redemption.to_string();
        assert!(
            text.starts_with("the redemption ended rejected: no"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}'),
            "platform text is escaped: {text:?}"
        );
        let replaced = ItemError::Ended {
            state: FlowState::Cancelled,
            replaced_by: Some((Purpose::Cancel, B256::repeat_byte(7))),
        };
        assert!(
            replaced
                .to_string()
                .starts_with("ended cancelled by cancel 0x0707"),
            "{replaced}"
        );
    }
}
