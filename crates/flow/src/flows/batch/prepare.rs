//! `batch prepare`: the online half of the air gap at batch scale. Every item of a
//! batch is taken as far as a single flow goes before it signs, and no further: its
//! action executed (a redeem) or its transfer built (a transfer, a swap's MT leg after
//! its swap address was issued), its transaction verified against its intent and the
//! trust root by the one verifier, its nonce reserved in the journal. What comes out is
//! one batch request ([`BatchRequest`]) for the offline signer; the batch is journaled
//! like any batch (its items bound to their flows in advance) and marked prepared, so
//! that `batch submit` later checks the signed batch against exactly these transactions.
//!
//! Nonces are bridgectl's to give: nothing is sent before the offline signer answers,
//! so the platform hands every item of a sender the same next nonce. Each sender's first
//! item takes its next nonce (the node's pending count or the platform's, the journal's
//! floor above it), each later item the one after, in the batch's order; an item the
//! checks refuse takes none (it is reported and left out, the rest stay consecutive).
//! A nonce changed from the platform's is journaled beside the platform's.
//!
//! The nonces are held, not leased: an air gap takes as long as it takes (a walk to the
//! vault, a second approver), so a prepared batch's reservations hold past the
//! reservation lease until each item's signature is taken in (then for good), or the
//! batch is abandoned ([`super::AbandonedBatch::record`]). No other flow of this journal
//! signs at them meanwhile.

use alloy_primitives::Address;
use bridgectl_tx::batch::{BatchOrigin, BatchRequest, BatchRequestItem};
use bridgectl_tx::{Nonce, RawTx};
use futures_util::future::join_all;
use serde_json::json;
use tokio::sync::Semaphore;

use super::items::stored_op;
use super::{BatchItem, BatchOp, RefusedItem};
use crate::Error;
use crate::flows::action::ActionOutcome;
use crate::flows::swap::swap_intent;
use crate::flows::transfer::plain_transfer_intent;
use crate::flows::{Flows, Quiet};
use crate::journal::{BatchItemRecord, BatchRecord, FlowKind};

/// One sender's items on one chain, in batch order.
type Lane = ((Address, u64), Vec<(BatchItemRecord, BatchOp)>);

/// A batch prepared for the air gap ([`Flows::prepare_batch`]).
#[derive(Debug, Clone)]
pub struct PreparedBatch {
    /// The batch as journaled.
    pub batch: BatchRecord,
    /// The request to carry to the offline signer (its file: [`BatchRequest::to_bytes`]).
    pub request: BatchRequest,
    /// The items left out (refused by the checks, or their action failed), in batch
    /// order: `batch status` shows them unsigned.
    pub refused: Vec<RefusedItem>,
}

impl Flows {
    /// Prepares `items` (read from `source`) for the air gap: records the batch, takes
    /// each item up to its verified, nonce-reserved transaction (see the module doc),
    /// up to `jobs` senders at once and each sender's items in order, then records the
    /// request's hash with the batch and returns the request. Nothing is signed. The
    /// caller should have planned the batch first ([`Flows::plan`]): what the run would
    /// refuse is refused here item by item, not in advance.
    pub async fn prepare_batch(
        &self,
        source: &str,
        items: &[BatchItem],
        origin: BatchOrigin,
        jobs: usize,
    ) -> Result<PreparedBatch, Error> {
        let batch = self.create_batch(source, items)?;
        let mut lanes: Vec<Lane> = Vec::new();
        for record in self.journal.batch_items(&batch.batch_id)? {
            let op = stored_op(&record)?;
            let (which, _) = op.spends();
            let lane = (op.from(), self.side(which)?.chain_id);
            match lanes.iter_mut().find(|(l, _)| *l == lane) {
                Some((_, list)) => list.push((record, op)),
                None => lanes.push((lane, vec![(record, op)])),
            }
        }
        let jobs = Semaphore::new(jobs.max(1));
        let prepared = join_all(
            lanes
                .into_iter()
                .map(|(_, items)| self.prepare_lane(items, &jobs)),
        )
        .await;
        let (mut ready, mut refused) = (Vec::new(), Vec::new());
        for result in prepared.into_iter().flatten() {
            match result {
                Ok(item) => ready.push(item),
                Err(r) => refused.push(r),
            }
        }
        ready.sort_by_key(|i: &BatchRequestItem| i.index);
        refused.sort_by_key(|r: &RefusedItem| r.index);
        if ready.is_empty() {
            return Err(Error::InvalidBatch(format!(
                "no item could be prepared: {}",
                refused
                    .iter()
                    .take(3)
                    .map(|r| format!("item {:?}: {}", r.id, r.reason))
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        let origin = BatchOrigin {
            base_url: origin
                .base_url
                .or_else(|| Some(self.client.base_url().to_string())),
            source: origin.source.or_else(|| Some(source.to_owned())),
            created_at: origin.created_at.or_else(|| Some(crate::journal::now())),
            ..origin
        };
        let request = BatchRequest::new(batch.batch_id.clone(), origin, ready)?;
        self.journal
            .record_prepared(&batch.batch_id, request.request_hash)?;
        Ok(PreparedBatch {
            batch,
            request,
            refused,
        })
    }

    /// One sender's items on one chain, in order, each taking the nonce after the last
    /// one prepared.
    async fn prepare_lane(
        &self,
        items: Vec<(BatchItemRecord, BatchOp)>,
        jobs: &Semaphore,
    ) -> Vec<Result<BatchRequestItem, RefusedItem>> {
        let _permit = jobs.acquire().await;
        let mut next = None;
        let mut out = Vec::with_capacity(items.len());
        for (record, op) in items {
            match self.prepare_item(&record, &op, next).await {
                Ok(item) => {
                    next = Some(item.raw_tx.nonce + 1);
                    out.push(Ok(item));
                }
                // The error a single flow would return, typed.
                Err(e) => out.push(Err(RefusedItem::new(
                    record.index,
                    record.item_id.clone(),
                    op.from(),
                    e,
                ))),
            }
        }
        out
    }

    /// One item up to its verified transaction at nonce `next` (for a sender's first
    /// item, its next nonce as the chain and the journal know it).
    async fn prepare_item(
        &self,
        record: &BatchItemRecord,
        op: &BatchOp,
        next: Option<u64>,
    ) -> Result<BatchRequestItem, Error> {
        let tx_id = record.tx_id.as_str();
        let (run, raw, intent) = match *op {
            BatchOp::Redeem { from, amount } => {
                let call = self.redeem_call(from, amount)?;
                let run = self.start(Some(tx_id), FlowKind::Redeem, from, &call.journaled())?;
                let raw = match run.execute(&call).await? {
                    ActionOutcome::Eoa { data, .. } => run.parse_raw_tx(&data)?,
                    other => {
                        let e = Error::UnexpectedShape {
                            what: format!("answer to action {}", call.action),
                            expected: format!(
                                "a rawTx for the externally owned account {from} (the \
                                 platform answered as for a managed account or a view)"
                            ),
                            data: serde_json::to_value(&other).unwrap_or_default(),
                        };
                        run.fail("refused", &e);
                        return Err(e);
                    }
                };
                (run, raw, call.full_intent())
            }
            BatchOp::Transfer {
                token,
                from,
                to,
                amount,
            } => {
                let spec = self.transfer_spec(token, from, to, amount, next);
                let (run, raw) = self
                    .start_transfer(FlowKind::Transfer, &spec, Some(tx_id))
                    .await?;
                (
                    run,
                    raw,
                    plain_transfer_intent(self.side(token)?, to, amount),
                )
            }
            BatchOp::Swap { from, amount } => {
                let spec = self.swap_spec(from, amount, next);
                let (run, swap, _, raw) = self.start_swap(&spec, Some(tx_id), &mut Quiet).await?;
                let intent = swap_intent(&self.bridge()?.main, swap.swap_address, amount);
                (run, raw, intent)
            }
        };
        let mut context = run
            .context(raw.chain_id)
            .await
            .inspect_err(|e| run.fail("refused", e))?;
        let mut raw: RawTx = raw;
        if let Nonce::Next(facts) = &mut context.nonce {
            let first = [facts.pending.or(facts.platform), facts.journal_next]
                .into_iter()
                .flatten()
                .max();
            if let Some(nonce) = next.or(first) {
                if raw.nonce != nonce {
                    self.journal.note(
                        tx_id,
                        "nonce-assigned",
                        &json!({"platformNonce": raw.nonce, "nonce": nonce}),
                    )?;
                    raw.nonce = nonce;
                    self.journal
                        .record_raw_tx(tx_id, &serde_json::to_value(&raw).unwrap_or_default())?;
                }
                facts.fixed = Some(nonce);
            }
        }
        let verified = run
            .verify(&raw, &intent, Some((raw.chain_id, context)))
            .await?;
        self.journal
            .note(tx_id, "prepared", &json!({"nonce": raw.nonce}))?;
        Ok(BatchRequestItem {
            index: record.index,
            id: record.item_id.clone(),
            tx_id: tx_id.to_owned(),
            raw_tx: verified.raw_tx().clone(),
            intent,
        })
    }
}
