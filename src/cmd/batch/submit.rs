//! `bridgectl batch submit SIGNED`: the online half after the air gap, at batch scale.
//! The signed batch is checked against the batch prepared here (`Flows::accept_signed_batch`:
//! every item exactly its prepared transaction, signed by its sender, through the
//! verifier again), what passes is journaled in one durable commit, then the batch runs
//! as `batch resume` runs one: pipelined per sender, each item followed to its end (a
//! redeem's redemption, a swap's ST credit, a transfer's receipt), with a line per item
//! and a summary. Submitting the same file again, or `batch resume ID`, finishes an
//! interrupted run; nothing is signed here.

use std::path::PathBuf;

use anyhow::{Context, Result};
use bridgectl_flow::Submitter;
use bridgectl_qr::{Doc, DocKind, Payload};
use bridgectl_tx::batch::{MAX_BATCH_DOC_BYTES, SignedBatch};
use clap::Args;
use serde_json::json;

use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::{PlatformOpts, WaitOpts};
use crate::output::untrusted;
use crate::session::Session;

// Arguments of `bridgectl batch submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The signed batch `bridgectl sign` wrote for a batch request of this machine.
    #[arg(required_unless_present = "from_qr", conflicts_with = "from_qr")]
    pub signed: Option<PathBuf>,
    /// Read the signed batch from QR frames instead: image files, UR text files,
    /// directories of them, or `-` for UR text lines on stdin.
    #[arg(long = "from-qr", value_name = "FILE|DIR|-", num_args = 1.., help_heading = "QR codes")]
    pub from_qr: Vec<PathBuf>,
    /// How many senders submit at once (items of one sender always in nonce order).
    #[arg(long, default_value_t = bridgectl_flow::BatchOptions::default().jobs, value_name = "N")]
    pub jobs: usize,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
    /// How long each item's end is waited for.
    #[command(flatten)]
    pub waiting: WaitOpts,
}

/// Runs `bridgectl batch submit`.
pub fn run(global: &GlobalOpts, args: &SubmitArgs) -> Result<()> {
    if global.json {
        crate::output::json_stream();
    }
    // The profile, the platform and the journal before the signed batch is read: a
    // refusal that needs no input comes before its QR frames are read.
    let session = Session::for_waiting(global, &args.platform, &args.waiting)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let (bytes, name) = read(args)?;
    let signed = SignedBatch::parse(&bytes)
        .with_context(|| format!("refusing signed batch {name}"))
        .code(Code::Refused)?;
    let check = session
        .runtime
        .block_on(flows.accept_signed_batch(&signed))?;
    let refused = |list: &[bridgectl_flow::RefusedItem]| -> Vec<serde_json::Value> {
        list.iter()
            .map(|r| json!({"index": r.index, "id": r.id, "from": r.from, "reason": r.reason}))
            .collect()
    };
    if global.json {
        crate::output::json_line(&json!({"checked": {
            "batchId": check.batch_id,
            "requestMatches": check.request_matches,
            "accepted": check.accepted,
            "acceptedBefore": check.accepted_before,
            "refused": refused(&check.refused),
            "notSigned": refused(&check.not_signed),
        }}))?;
    }
    if !check.request_matches {
        crate::output::note(format_args!(
            "warning: {name} was signed from another request file than the one prepared for \
             batch {} (its sha256 differs): each item is checked against the transaction \
             prepared for it all the same",
            check.batch_id
        ));
    }
    crate::output::note(format_args!(
        "batch {}: {} items accepted now, {} before, {} refused here, {} not signed offline",
        check.batch_id,
        check.accepted,
        check.accepted_before,
        check.refused.len(),
        check.not_signed.len()
    ));
    for r in &check.refused {
        crate::output::note(format_args!(
            "  refused: {} from {}: {}",
            untrusted(&r.id),
            r.from,
            untrusted(&r.reason)
        ));
    }
    let options = bridgectl_flow::BatchOptions {
        jobs: args.jobs.max(1),
        air_gapped: true,
        ..bridgectl_flow::BatchOptions::default()
    };
    super::run::drive(
        global,
        &session,
        &flows,
        &check.batch_id,
        Vec::new(),
        options,
        args.waiting.timeout,
    )
}

/// The signed batch's bytes, from its file or QR frames, and its name.
fn read(args: &SubmitArgs) -> Result<(Vec<u8>, String)> {
    if let Some(path) = &args.signed {
        let input = path.to_string_lossy();
        let bytes = crate::files::read_input_bounded(&input, MAX_BATCH_DOC_BYTES as u64)
            .with_context(|| format!("signed batch {}", path.display()))?;
        return Ok((bytes, path.display().to_string()));
    }
    let frames = crate::qr::read_frames(&args.from_qr)?;
    let name = frames.name;
    match Payload::from_ur(&frames.ur)
        .with_context(|| format!("refusing {name}"))
        .code(Code::Refused)?
    {
        Payload::Doc(Doc {
            kind: DocKind::SignedBatch,
            bytes,
        }) => Ok((bytes, name)),
        other => Err(coded(
            Code::Refused,
            format!(
                "refusing {name}: it holds {}, and `batch submit` reads a bridgectl-doc \
                 signed-batch",
                other.describe()
            ),
        )),
    }
}
