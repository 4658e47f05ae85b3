//! `batch submit`: a signed batch from the air gap, checked against the batch it was
//! prepared for before anything of it is sent. Every signed item must be exactly the
//! transaction prepared for it (the same bytes the request asked for, every field), its
//! recovered signer the item's sender, and pass the one verifier again; each sender's
//! items are taken in nonce order, and one refused leaves the rest of its sender's items
//! out (they would wait behind a nonce never mined). What passes is journaled in one
//! durable commit; then [`Flows::batch`] sends it (pipelined per sender, as a resume
//! sends signed items) and follows each item to its end, and finishes an interrupted
//! run the same way.

use std::collections::HashMap;

use alloy_primitives::B256;
use bridgectl_tx::RawTx;
use bridgectl_tx::batch::{SignedBatch, SignedBatchItem};
use bridgectl_tx::text::printable;
use bridgectl_tx::{SignedTx, decode::DecodedTx};
use serde_json::json;

use super::RefusedItem;
use super::items::stored_op;
use crate::Error;
use crate::flows::Flows;
use crate::journal::{BatchItemRecord, Purpose};

/// What the check of a signed batch found ([`Flows::accept_signed_batch`]).
#[derive(Debug, Clone)]
pub struct SignedBatchCheck {
    /// The batch.
    pub batch_id: String,
    /// Whether the signed batch names the request file prepared for it (its SHA-256).
    /// Items are checked one by one against the prepared transactions either way.
    pub request_matches: bool,
    /// Items accepted now: journaled, to be sent.
    pub accepted: usize,
    /// Items accepted by an earlier `batch submit` of the same bytes.
    pub accepted_before: usize,
    /// Signed items refused here, and why (nothing of them is sent).
    pub refused: Vec<RefusedItem>,
    /// Items the offline signer left out, with its reason.
    pub not_signed: Vec<RefusedItem>,
}

impl Flows {
    /// Checks `signed` against the batch it answers (which must have been prepared in
    /// this journal: [`Flows::prepare_batch`]) as the module doc says, and journals the
    /// signed bytes of every item that passes, in one durable commit. Items are sent by
    /// [`Flows::batch`] afterwards. Refused items are reported, not errors; an error is a
    /// signed batch with nothing to check against (another journal's batch) or a failure
    /// to read or write the journal.
    pub async fn accept_signed_batch(
        &self,
        signed: &SignedBatch,
    ) -> Result<SignedBatchCheck, Error> {
        let batch = self.journal.find_batch(&signed.batch_id)?;
        if batch.batch_id != signed.batch_id {
            return Err(Error::NoSuchBatch(signed.batch_id.clone()));
        }
        let Some(prepared) = self.journal.prepared(&batch.batch_id)? else {
            return Err(Error::NotPrepared(batch.batch_id));
        };
        // No run of this batch may send while its items are being taken in (and no
        // `batch abandon` may give their nonces back meanwhile).
        let _lock = self.journal.lock_batch(&batch.batch_id)?;
        if let Some(at) = self.journal.abandoned(&batch.batch_id)? {
            return Err(Error::BatchAbandoned {
                batch_id: batch.batch_id,
                at,
            });
        }
        let records: HashMap<usize, BatchItemRecord> = self
            .journal
            .batch_items(&batch.batch_id)?
            .into_iter()
            .map(|r| (r.index, r))
            .collect();
        let mut check = SignedBatchCheck {
            batch_id: batch.batch_id.clone(),
            request_matches: prepared == signed.request_hash,
            accepted: 0,
            accepted_before: 0,
            refused: Vec::new(),
            not_signed: Vec::new(),
        };
        for r in &signed.refused {
            let record = records.get(&r.index);
            let from = record
                .and_then(|rec| stored_op(rec).ok())
                .map(|op| op.from())
                .unwrap_or_default();
            let reason = printable(&r.reason).into_owned();
            // The item's own flow says why it has no signature (its id and flow the
            // batch's, not only the signed batch's claim).
            if let Some(rec) = record.filter(|rec| rec.item_id == r.id && rec.flow.is_some()) {
                let why = format!("the offline signer left it out: {reason}");
                self.journal
                    .note(&rec.tx_id, "left-out-offline", &json!({ "reason": why }))?;
            }
            check
                .not_signed
                .push(RefusedItem::described(r.index, r.id.clone(), from, reason));
        }
        let mut accepted: Vec<(String, SignedTx)> = Vec::new();
        for ((from, _), lane) in signed.by_sender() {
            let mut blocked: Option<String> = None;
            for item in lane {
                let refuse = |reason: String| {
                    RefusedItem::described(item.index, item.id.clone(), from, reason)
                };
                if let Some(why) = &blocked {
                    self.note_refused(&records, item, why)?;
                    check.refused.push(refuse(why.clone()));
                    continue;
                }
                match self.check_signed_item(item, records.get(&item.index)).await {
                    Ok((s, before)) => {
                        if before {
                            check.accepted_before += 1;
                        } else {
                            accepted.push((item.tx_id.clone(), s));
                        }
                    }
                    Err(e) => {
                        let reason = printable(&crate::chain(&e)).into_owned();
                        self.note_refused(&records, item, &reason)?;
                        blocked = Some(format!(
                            "not sent: item {:?} of the same sender was refused, and this \
                             item's nonce comes after it",
                            printable(&item.id)
                        ));
                        check.refused.push(refuse(reason));
                    }
                }
            }
        }
        check.refused.sort_by_key(|r| r.index);
        let records: Vec<(&str, &SignedTx)> =
            accepted.iter().map(|(t, s)| (t.as_str(), s)).collect();
        self.journal.record_signed_group(&records)?;
        check.accepted = accepted.len();
        Ok(check)
    }

    /// Journals on `item`'s flow that its signature was refused here, and why: what its
    /// report and `batch status` say of it. Only for an item that is the batch's (its
    /// index, id and flow), and whose flow began.
    fn note_refused(
        &self,
        records: &HashMap<usize, BatchItemRecord>,
        item: &SignedBatchItem,
        reason: &str,
    ) -> Result<(), Error> {
        let ours = records.get(&item.index).filter(|rec| {
            rec.item_id == item.id
                && rec.tx_id.eq_ignore_ascii_case(&item.tx_id)
                && rec.flow.is_some()
        });
        if let Some(rec) = ours {
            let why = format!("its signature was refused here: {reason}");
            self.journal
                .note(&rec.tx_id, "bundle-refused", &json!({ "error": why }))?;
        }
        Ok(())
    }

    /// One signed item against its batch item: the same item, its flow's journaled
    /// transaction exactly, signed by its sender, through the verifier again, and its
    /// nonce reserved for it. Returns the signed transaction and whether the journal had
    /// these very bytes already.
    async fn check_signed_item(
        &self,
        item: &SignedBatchItem,
        record: Option<&BatchItemRecord>,
    ) -> Result<(SignedTx, bool), Error> {
        let mismatch = |what: String| Error::BundleMismatch(what);
        let record = record
            .ok_or_else(|| mismatch(format!("index {}: the batch has no such item", item.index)))?;
        if record.item_id != item.id || !record.tx_id.eq_ignore_ascii_case(&item.tx_id) {
            return Err(mismatch(format!(
                "item {}: the batch's item is {:?} (flow {}), the signed batch names {:?} \
                 (flow {})",
                item.index,
                printable(&record.item_id),
                record.tx_id,
                printable(&item.id),
                printable(&item.tx_id)
            )));
        }
        let op = stored_op(record)?;
        let flow = record
            .flow
            .as_ref()
            .ok_or_else(|| Error::NotInJournal(record.tx_id.clone()))?;
        let journaled = flow
            .raw_tx
            .as_ref()
            .and_then(|v| RawTx::from_value(v).ok())
            .ok_or_else(|| {
                mismatch(format!(
                    "item {:?}: it was not prepared (its flow holds no verified transaction)",
                    printable(&item.id)
                ))
            })?;
        let decoded = bridgectl_tx::decode::decode_signed(&item.signed_tx)?;
        claims_hold(item, &decoded)?;
        if decoded.sender != op.from() {
            return Err(mismatch(format!(
                "from: item {:?} is sent by {}, its signed transaction by {}",
                printable(&item.id),
                op.from(),
                decoded.sender
            )));
        }
        crate::airgap::check_signed_matches(&decoded, &journaled)?;
        let intent = self.item_intent(&op, &record.tx_id)?;
        self.check_signed(&decoded, Some(&intent), Purpose::Original)
            .await?;
        let signed = SignedTx {
            raw: item.signed_tx.clone(),
            hash: decoded.hash,
            from: decoded.sender,
            chain_id: journaled.chain_id,
            nonce: journaled.nonce,
        };
        if let Some(prev) = &flow.tx_hash {
            return if prev.parse::<B256>().ok() == Some(decoded.hash) {
                Ok((signed, true))
            } else {
                Err(Error::AlreadySigned {
                    tx_id: record.tx_id.clone(),
                    signed: prev.clone(),
                    offered: decoded.hash,
                })
            };
        }
        self.journal.reserve_nonce(
            &record.tx_id,
            decoded.sender,
            journaled.chain_id,
            journaled.nonce,
        )?;
        Ok((signed, false))
    }
}

/// The signed item's own claims (hash, signer, chain, nonce) are those of its bytes.
fn claims_hold(item: &SignedBatchItem, decoded: &DecodedTx) -> Result<(), Error> {
    let claims = [
        ("txHash", item.tx_hash.to_string(), decoded.hash.to_string()),
        ("from", item.from.to_string(), decoded.sender.to_string()),
        (
            "chainId",
            item.chain_id.to_string(),
            decoded.chain_id.map_or("none".into(), |c| c.to_string()),
        ),
        ("nonce", item.nonce.to_string(), decoded.nonce.to_string()),
    ];
    for (field, claimed, actual) in claims {
        if claimed != actual {
            return Err(Error::BundleMismatch(format!(
                "item {:?}: {field}: the signed batch claims {claimed}, its signed \
                 transaction has {actual}",
                printable(&item.id)
            )));
        }
    }
    Ok(())
}
