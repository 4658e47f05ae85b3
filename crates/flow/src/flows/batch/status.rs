//! Where a batch stands, from the journal alone: each item's state, and the counts.

use alloy_primitives::Address;
use serde::Serialize;

use super::items::{BatchOp, stored_op};
use super::state::ItemState;
use crate::Error;
use crate::journal::{BatchRecord, FlowRecord, FlowState, Journal};

impl ItemState {
    /// Where an item whose current flow is `flow` stands.
    pub(super) fn of(flow: Option<&FlowRecord>) -> ItemState {
        let Some(f) = flow else {
            return ItemState::NotStarted;
        };
        match (f.state, f.signed_tx.is_some()) {
            (FlowState::Completed, _) => ItemState::Completed,
            (FlowState::Confirming, true) => ItemState::Confirming,
            (FlowState::Failed, true) => ItemState::Failed,
            (FlowState::Submitted, true) => ItemState::Submitted,
            (_, true) => ItemState::Signed,
            (_, false) => ItemState::Unsigned,
        }
    }
}

/// One item as `batch status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemView {
    /// Position in the batch.
    pub index: usize,
    /// The item's id.
    pub id: String,
    /// What it does.
    pub op: BatchOp,
    /// The txId of its current flow.
    pub tx_id: String,
    /// How many flows it has had.
    pub attempt: u32,
    /// Where it stands.
    pub state: ItemState,
    /// Its transaction, once signed.
    pub tx_hash: Option<String>,
    /// The last failure recorded for its flow.
    pub error: Option<String>,
    /// The nonce it holds in this journal: the one its flow signed at (for good), or a
    /// reservation that holds (an item of a batch prepared for the air gap until it signs
    /// or the batch is abandoned; any other for its lease).
    pub held_nonce: Option<u64>,
}

/// A batch prepared for the air gap, as `batch status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedView {
    /// The SHA-256 of the request file written for it.
    pub request_hash: alloy_primitives::B256,
    /// When it was abandoned (`batch abandon`): its unsigned items hold nothing since.
    /// `None`: its items hold their nonces until they sign.
    pub abandoned_at: Option<String>,
}

/// Where a batch stands, counted: the words of [`ItemState`], with everything that
/// `batch resume` would still run (not begun, unsigned, signed, submitted) as `open`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchCounts {
    /// Items done.
    pub completed: usize,
    /// Items that failed after they signed: over.
    pub failed: usize,
    /// Items a resume runs or awaits.
    pub open: usize,
}

/// A batch and where each of its items stands.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchStatus {
    /// The batch.
    #[serde(flatten)]
    pub batch: BatchRecord,
    /// Its items, in input order.
    pub items: Vec<ItemView>,
    /// Whether it was prepared for the air gap, and abandoned.
    pub prepared: Option<PreparedView>,
}

impl BatchStatus {
    /// Where each item of batch `batch_id` (or a prefix of it) stands, from `journal`
    /// alone (no platform needed).
    pub fn read(journal: &Journal, batch_id: &str) -> Result<BatchStatus, Error> {
        let batch = journal.find_batch(batch_id)?;
        let held = journal.held_nonces(&batch.batch_id)?;
        let items = journal
            .batch_items(&batch.batch_id)?
            .into_iter()
            .map(|r| {
                let held_nonce = held
                    .iter()
                    .find(|h| h.index == r.index && h.tx_id == r.tx_id)
                    .map(|h| h.nonce);
                let op = stored_op(&r)?;
                let state = ItemState::of(r.flow.as_ref());
                let error = match state {
                    ItemState::Unsigned | ItemState::Failed => last_error(journal, &r.tx_id),
                    _ => None,
                };
                Ok(ItemView {
                    index: r.index,
                    id: r.item_id,
                    op,
                    tx_id: r.tx_id,
                    attempt: r.attempt,
                    state,
                    tx_hash: r.flow.and_then(|f| f.tx_hash),
                    error,
                    held_nonce,
                })
            })
            .collect::<Result<_, Error>>()?;
        let prepared = match journal.prepared(&batch.batch_id)? {
            Some(request_hash) => Some(PreparedView {
                request_hash,
                abandoned_at: journal.abandoned(&batch.batch_id)?,
            }),
            None => None,
        };
        Ok(BatchStatus {
            batch,
            items,
            prepared,
        })
    }

    /// How many items are in `state`.
    pub fn count(&self, state: ItemState) -> usize {
        self.items.iter().filter(|i| i.state == state).count()
    }

    /// How many items are completed, failed, and still open.
    pub fn counts(&self) -> BatchCounts {
        let completed = self.count(ItemState::Completed);
        let failed = self.count(ItemState::Failed);
        BatchCounts {
            completed,
            failed,
            open: self.items.len() - completed - failed,
        }
    }

    /// The accounts whose keys the batch still needs: senders of items that will sign
    /// (not begun, or stopped before signing), in order of first appearance.
    pub fn signers_needed(&self) -> Vec<Address> {
        self.signers_for(false)
    }

    /// The accounts whose keys a run with `replace_stuck` needs: those of
    /// [`BatchStatus::signers_needed`], and with `replace_stuck` also those of items
    /// signed and not finished (each may be re-priced).
    pub fn signers_for(&self, replace_stuck: bool) -> Vec<Address> {
        let mut seen = Vec::new();
        for i in &self.items {
            let from = i.op.from();
            let signs = match i.state {
                ItemState::NotStarted | ItemState::Unsigned => true,
                ItemState::Signed | ItemState::Submitted => replace_stuck,
                _ => false,
            };
            if signs && !seen.contains(&from) {
                seen.push(from);
            }
        }
        seen
    }
}

/// The error of the last failed step of flow `tx_id`, if one was recorded.
pub(super) fn last_error(journal: &Journal, tx_id: &str) -> Option<String> {
    let steps = journal.steps(tx_id).ok()?;
    steps.iter().rev().find_map(|s| {
        s.detail
            .get("error")
            .or_else(|| s.detail.get("reason"))
            .and_then(|e| e.as_str())
            .map(str::to_owned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::FlowKind;
    use serde_json::json;

    #[test]
    fn the_state_of_an_item_follows_its_flow() {
        let flow = |state: FlowState, signed: bool| FlowRecord {
            tx_id: "t".into(),
            kind: FlowKind::Redeem,
            state,
            from: None,
            intent: json!({}),
            raw_tx: None,
            signed_tx: signed.then(|| "0x01".into()),
            tx_hash: None,
            chain_id: None,
            nonce: None,
            result: None,
            created_at: String::new(),
            updated_at: String::new(),
            ending: None,
            host: None,
        };
        assert_eq!(ItemState::of(None), ItemState::NotStarted);
        assert_eq!(
            ItemState::of(Some(&flow(FlowState::Verified, false))),
            ItemState::Unsigned
        );
        assert_eq!(
            ItemState::of(Some(&flow(FlowState::Failed, false))),
            ItemState::Unsigned
        );
        assert_eq!(
            ItemState::of(Some(&flow(FlowState::Signed, true))),
            ItemState::Signed
        );
        assert_eq!(
            ItemState::of(Some(&flow(FlowState::Submitted, true))),
            ItemState::Submitted
        );
        assert_eq!(
            ItemState::of(Some(&flow(FlowState::Failed, true))),
            ItemState::Failed
        );
        assert_eq!(
            ItemState::of(Some(&flow(FlowState::Completed, true))),
            ItemState::Completed
        );
    }
}
