//! `bridgectl batch prepare FILE --out REQUEST`: the online half of the air gap at batch
//! scale. The batch is planned and refused as `batch plan` refuses it, then the library
//! takes every item up to its verified, nonce-reserved transaction
//! (`Flows::prepare_batch`) and this module writes the one batch request file the
//! offline signer reads (`bridgectl sign REQUEST --out SIGNED`), which `batch submit
//! SIGNED` then checks against what was prepared here. Nothing is signed and no key or
//! passphrase is needed: the keys are on the other side of the gap.

use std::path::PathBuf;

use anyhow::Result;
use bridgectl_flow::Submitter;
use bridgectl_qr::{Doc, DocKind};
use bridgectl_tx::batch::BatchOrigin;
use clap::Args;
use serde_json::json;

use super::plan::{InputOpts, Plan};
use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::PlatformOpts;
use crate::output::untrusted;
use crate::session::Session;

// Arguments of `bridgectl batch prepare`.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// The input.
    #[command(flatten)]
    pub input: InputOpts,
    /// Write the batch request here (atomically; an existing file is never overwritten):
    /// the file to carry to the offline signer.
    #[arg(long, short, value_name = "FILE")]
    pub out: PathBuf,
    /// How many senders are prepared at once (each sender's items in order).
    #[arg(long, default_value_t = bridgectl_flow::BatchOptions::default().jobs, value_name = "N")]
    pub jobs: usize,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
    /// Show the request as QR frames too.
    #[command(flatten)]
    pub qr: crate::qr::QrOutOpts,
}

/// Runs `bridgectl batch prepare`.
pub fn run(global: &GlobalOpts, args: &PrepareArgs) -> Result<()> {
    args.qr.check()?;
    if args.out.exists() {
        return Err(coded(
            Code::Exists,
            format!("{} already exists: not overwriting it", args.out.display()),
        ));
    }
    let session = Session::for_sending(global, &args.platform)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let items = super::plan::read_items(&session, &args.input)?;
    super::plan::refuse_held(
        &flows,
        &args.input,
        &items,
        "a signed batch for it is sent with `bridgectl batch submit`",
    )?;
    let plan = Plan::make(&session, &flows, &args.input, items)?;
    plan.show(false)?;
    plan.check()?;
    crate::output::note(format_args!(
        "» preparing {} items: each action executed or transfer built, verified, its nonce \
         reserved; nothing signed",
        plan.items.len()
    ));
    let origin = BatchOrigin {
        profile: Some(global.profile.clone()),
        ..BatchOrigin::default()
    };
    let prepared = session.runtime.block_on(flows.prepare_batch(
        &plan.source,
        &plan.items,
        origin,
        args.jobs,
    ))?;
    let request = &prepared.request;
    let bytes = request.to_bytes();
    crate::files::write_new(&args.out, &bytes)?;
    let batch_id = &prepared.batch.batch_id;
    if global.json {
        crate::output::json(&json!({
            "batchId": batch_id,
            "out": args.out.display().to_string(),
            "requestHash": request.request_hash,
            "items": plan.items.len(),
            "prepared": request.items.len(),
            "senders": request.senders.iter().map(|s| json!({
                "from": s.from, "chainId": s.chain_id, "firstNonce": s.first_nonce,
                "items": s.items,
            })).collect::<Vec<_>>(),
            "refusedItems": prepared.refused.iter().map(|r| json!({
                "index": r.index, "id": r.id, "from": r.from, "reason": r.reason,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        for sender in &request.senders {
            crate::output::note(format_args!(
                "  {} on chain {}: {} items, nonces {} to {} (its next nonce as this machine \
                 found it: offline, `--nonce-for {}={}` the first time)",
                sender.from,
                sender.chain_id,
                sender.items,
                sender.first_nonce,
                sender.last_nonce(),
                sender.from,
                sender.first_nonce
            ));
        }
        for r in &prepared.refused {
            crate::output::note(format_args!(
                "left out: {} from {}: {}",
                untrusted(&r.id),
                r.from,
                untrusted(&r.reason)
            ));
        }
        crate::output::line(format_args!(
            "batch {batch_id}: {} of {} items prepared -> {} (sha256 {})",
            request.items.len(),
            plan.items.len(),
            args.out.display(),
            request.request_hash
        ))?;
        if args.qr.any() {
            crate::output::note(format_args!(
                "next: offline, read its frames (snapshots, or `zbarcam --raw` into `-`) and \
                 answer in frames: `bridgectl sign --from-qr SNAPSHOTS/ --out signed.json \
                 --qr-png answer/` (or --qr); then here `bridgectl batch submit --from-qr \
                 ANSWER-SNAPSHOTS/`"
            ));
        } else {
            crate::output::note(format_args!(
                "next: sign it offline (`bridgectl sign {} --out signed.json`), then \
                 `bridgectl batch submit signed.json` here",
                args.out.display()
            ));
        }
    }
    let doc = Doc {
        kind: DocKind::BatchRequest,
        bytes,
    };
    args.qr.show(&doc.to_ur(), "the batch request")?;
    if prepared.refused.is_empty() {
        return Ok(());
    }
    Err(crate::exit::BatchIncomplete {
        batch_id: batch_id.clone(),
        not_completed: prepared.refused.len(),
        total: plan.items.len(),
        waited_out: 0,
    }
    .into())
}
