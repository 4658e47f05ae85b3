//! `bridgectl batch abandon ID`: a batch prepared for the air gap, given up. Its items
//! hold their nonces from `batch prepare` until they are signed and submitted, however
//! long the air gap takes; this gives back those held unsigned, records the batch
//! abandoned, and a signed batch for it is refused from then on (the library's
//! `AbandonedBatch::record`). Items signed keep their nonces: their bytes can be mined.

use anyhow::Result;
use bridgectl_flow::{AbandonedBatch, BatchStatus, ItemState};
use clap::Args;
use serde_json::json;

use crate::global::GlobalOpts;

// Arguments of `bridgectl batch abandon`.
#[derive(Debug, Args)]
pub struct AbandonArgs {
    /// The batch id, or the start of it.
    #[arg(add = crate::completers::batch_ids())]
    pub id: String,
    /// Do not ask.
    #[arg(long, short)]
    pub yes: bool,
    /// The journal.
    #[command(flatten)]
    pub journal: crate::opts::JournalOpt,
}

/// Runs `bridgectl batch abandon`.
pub fn run(global: &GlobalOpts, args: &AbandonArgs) -> Result<()> {
    let journal = args.journal.open()?;
    let status = BatchStatus::read(&journal, &args.id)?;
    let batch_id = &status.batch.batch_id;
    if status
        .prepared
        .as_ref()
        .is_some_and(|p| p.abandoned_at.is_none())
    {
        let unsigned = status
            .items
            .iter()
            .filter(|i| i.held_nonce.is_some() && i.tx_hash.is_none())
            .count();
        crate::output::note(format_args!(
            "batch {batch_id}: {unsigned} items hold their nonces unsigned, {} signed (they \
             keep theirs). If the offline side signed them, that signed batch is valid bytes \
             wherever it is: abandon only a batch whose signatures will not come back",
            status.count(ItemState::Signed)
                + status.count(ItemState::Submitted)
                + status.count(ItemState::Confirming)
                + status.count(ItemState::Completed)
                + status.count(ItemState::Failed)
        ));
        crate::review::confirm(
            args.yes,
            &format!(
                "abandon batch {batch_id}, give back those nonces and refuse its signed batch?"
            ),
        )?;
    }
    let done = AbandonedBatch::record(&journal, batch_id)?;
    if global.json {
        return crate::output::json(&json!({
            "batchId": done.batch_id,
            "abandonedAt": done.at,
            "before": done.before,
            "released": done.released.iter().map(|r| json!({
                "index": r.index, "txId": r.tx_id, "from": r.from, "chainId": r.chain_id,
                "nonce": r.nonce,
            })).collect::<Vec<_>>(),
        }));
    }
    if done.before {
        return crate::output::line(format_args!(
            "batch {} was abandoned at {}: nothing held to give back",
            done.batch_id, done.at
        ));
    }
    for r in &done.released {
        crate::output::note(format_args!(
            "  item {}: nonce {} of {} on chain {} given back (flow {})",
            r.index, r.nonce, r.from, r.chain_id, r.tx_id
        ));
    }
    crate::output::line(format_args!(
        "batch {} abandoned: {} nonces given back; a signed batch for it is refused",
        done.batch_id,
        done.released.len()
    ))
}
