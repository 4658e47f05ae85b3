//! `batch abandon`: a batch prepared for the air gap, given up. A prepared batch holds
//! the nonces of its items from `batch prepare` on, past the reservation lease, however
//! long the signatures take to come back (see [`crate::flows::Flows::prepare_batch`]);
//! abandoning it is the one way to give back those its items hold unsigned. The journal
//! says so (the batch is recorded abandoned, each unsigned flow of it ends failed with
//! the step `abandoned`), and a signed batch for it is refused from then on
//! ([`crate::Error::BatchAbandoned`]).
//!
//! What abandoning cannot undo: an item signed and taken in holds its nonce for good (its
//! bytes can still be mined), and a signed batch made offline is valid bytes wherever it
//! is. Abandon a batch whose signed file will not come back, or was destroyed.

use alloy_primitives::Address;

use crate::Error;
use crate::journal::Journal;

/// What [`AbandonedBatch::record`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AbandonedBatch {
    /// The batch.
    pub batch_id: String,
    /// When it was abandoned (RFC 3339, UTC).
    pub at: String,
    /// Whether an earlier call abandoned it (then nothing was given back now).
    pub before: bool,
    /// The nonces given back: the items' reservations that held.
    pub released: Vec<ReleasedNonce>,
}

/// A nonce an item of an abandoned batch held unsigned, now free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleasedNonce {
    /// The item's position in the batch.
    pub index: usize,
    /// The txId of its flow (ended failed).
    pub tx_id: String,
    /// The sender.
    pub from: Address,
    /// The chain.
    pub chain_id: u64,
    /// The nonce.
    pub nonce: u64,
}

impl AbandonedBatch {
    /// Abandons prepared batch `batch_id` (or the batch an id prefix names) in `journal`,
    /// under its run lock (not while a `batch submit` of it takes its signed items in):
    /// see the module doc. Abandoning it again says when it was, and gives back nothing.
    /// A batch that was not prepared for the air gap is refused
    /// ([`Error::NotPrepared`]): its unsigned items hold their nonces for their lease
    /// only.
    pub fn record(journal: &Journal, batch_id: &str) -> Result<AbandonedBatch, Error> {
        let batch = journal.find_batch(batch_id)?;
        let _lock = journal.lock_batch(&batch.batch_id)?;
        let (at, now, held) = journal
            .abandon_prepared(
                &batch.batch_id,
                "the batch prepared for the air gap was abandoned (`batch abandon`): its \
                 nonce is given back, and nothing signed for it is taken in",
            )?
            .ok_or_else(|| Error::NotPrepared(batch.batch_id.clone()))?;
        Ok(AbandonedBatch {
            batch_id: batch.batch_id,
            at,
            before: !now,
            released: held
                .into_iter()
                .map(|h| ReleasedNonce {
                    index: h.index,
                    tx_id: h.tx_id,
                    from: h.address,
                    chain_id: h.chain_id,
                    nonce: h.nonce,
                })
                .collect(),
        })
    }
}
