//! `bridgectl batch status`: where each item of a batch stands, from the journal alone;
//! without an id, the recent batches.

use anyhow::Result;
use bridgectl_flow::BatchStatus;
use clap::Args;
use serde_json::{Value, json};

use crate::global::GlobalOpts;
use crate::output::untrusted;

// Arguments of `bridgectl batch status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The batch id, or the start of it [default: list the recent batches].
    #[arg(add = crate::completers::batch_ids())]
    pub id: Option<String>,
    /// The journal.
    #[command(flatten)]
    pub journal: crate::opts::JournalOpt,
}

/// Runs `bridgectl batch status`.
pub fn run(global: &GlobalOpts, args: &StatusArgs) -> Result<()> {
    let journal = args.journal.open()?;
    let Some(id) = &args.id else {
        let batches = journal
            .list_batches(20)?
            .iter()
            .map(|b| BatchStatus::read(&journal, &b.batch_id))
            .collect::<Result<Vec<_>, _>>()?;
        if global.json {
            let list: Vec<Value> = batches.iter().map(counted).collect();
            return crate::output::json(&list);
        }
        if batches.is_empty() {
            crate::output::note("no batches in the journal");
        }
        for s in batches {
            let (b, n) = (&s.batch, s.counts());
            crate::output::line(format_args!(
                "{}  {}  {:>5} items  {} completed, {} failed, {} open  {}",
                b.batch_id,
                b.created_at,
                b.items,
                n.completed,
                n.failed,
                n.open,
                untrusted(&b.source)
            ))?;
        }
        return Ok(());
    };
    let mut s = BatchStatus::read(&journal, id)?;
    // Items whose end was observed and is not final yet are looked at again on their
    // chains (their facts, by block hash), as `status` would: a reorganisation reopens
    // one, finality completes it.
    let confirming: Vec<String> = s
        .items
        .iter()
        .filter(|i| i.state == bridgectl_flow::ItemState::Confirming)
        .map(|i| i.tx_id.clone())
        .collect();
    if !confirming.is_empty() {
        drop(journal);
        let platform = crate::opts::PlatformOpts {
            journal: args.journal.clone(),
            ..Default::default()
        };
        let looked = crate::session::Session::for_sending(global, &platform).and_then(|session| {
            let flows = session.flows(bridgectl_flow::Submitter::Platform, |_| {})?;
            for tx_id in &confirming {
                session.runtime.block_on(flows.status(tx_id))?;
            }
            Ok(BatchStatus::read(flows.journal(), id)?)
        });
        match looked {
            Ok(again) => s = again,
            Err(e) => crate::output::note(format_args!(
                "{} confirming items not looked at again on their chains: {e:#}",
                confirming.len()
            )),
        }
    }
    if global.json {
        let mut one = counted(&s);
        one["items"] = serde_json::to_value(&s.items)?;
        one["prepared"] = serde_json::to_value(&s.prepared)?;
        return crate::output::json(&one);
    }
    crate::output::line(format_args!(
        "batch {} ({}, {}): {} items",
        s.batch.batch_id,
        untrusted(&s.batch.source),
        s.batch.created_at,
        s.items.len()
    ))?;
    let unsigned_held = s
        .items
        .iter()
        .filter(|i| i.held_nonce.is_some() && i.tx_hash.is_none())
        .count();
    if let Some(p) = &s.prepared {
        match &p.abandoned_at {
            Some(at) => crate::output::line(format_args!(
                "prepared for the air gap (request sha256 {}), abandoned at {at}: its unsigned \
                 items hold no nonce",
                p.request_hash
            ))?,
            None => crate::output::line(format_args!(
                "prepared for the air gap (request sha256 {}): {unsigned_held} unsigned items \
                 hold their nonces until their signed batch is submitted (`bridgectl batch \
                 submit SIGNED`) or the batch is abandoned (`bridgectl batch abandon {}`)",
                p.request_hash, s.batch.batch_id
            ))?,
        }
    }
    for i in &s.items {
        crate::output::line(format_args!(
            "{:>5} {:<16} {:<9} {:<12} {}{}{}",
            i.index,
            untrusted(&i.id),
            i.op.name(),
            i.state.as_str(),
            i.tx_hash.as_deref().unwrap_or(&i.tx_id),
            match (i.held_nonce, &i.tx_hash) {
                (Some(n), None) => format!(" (nonce {n} held)"),
                _ => String::new(),
            },
            i.error
                .as_deref()
                .map(|e| format!(": {}", untrusted(e)))
                .unwrap_or_default()
        ))?;
    }
    let n = s.counts();
    crate::output::line(format_args!(
        "{} completed, {} failed, {} open{}",
        n.completed,
        n.failed,
        n.open,
        if n.open > 0 {
            format!(
                ": `bridgectl batch resume {}` finishes them",
                s.batch.batch_id
            )
        } else {
            String::new()
        }
    ))
}

/// A batch as `batch status --json` lists it: its record (`batchId, source, createdAt,
/// itemCount`) and its counts (`completed, failed, open`).
fn counted(s: &BatchStatus) -> Value {
    let mut v = json!(s.batch);
    let n = s.counts();
    v["completed"] = json!(n.completed);
    v["failed"] = json!(n.failed);
    v["open"] = json!(n.open);
    v
}
