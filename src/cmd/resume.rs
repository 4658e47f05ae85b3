//! `bridgectl resume TXID`: finishes an interrupted flow by resending the SAME signed
//! bytes from the journal (a node's "already known" is success), then waits for the
//! result as the flow would have. Never signs anything, never picks a new nonce.

use bridgectl_flow::Submitter;
use clap::Args;
use serde_json::json;

use crate::approver::StderrProgress;
use crate::cli::GlobalOpts;
use crate::opts::PlatformOpts;
use crate::session::Session;

/// Arguments of `bridgectl resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The flow's txId (see `bridgectl history`).
    pub tx_id: String,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

/// Runs `bridgectl resume`.
pub fn run(global: &GlobalOpts, args: ResumeArgs) -> anyhow::Result<()> {
    let session = Session::for_sending(global, &args.platform)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let resumed = match session
        .runtime
        .block_on(flows.resume(&args.tx_id, &mut StderrProgress))
    {
        // Done already: say so, send nothing.
        Err(e @ bridgectl_flow::Error::AlreadyCompleted { .. }) => {
            return if global.json {
                crate::output::json(&json!({"txId": args.tx_id, "status": "completed",
                                            "resent": false}))
            } else {
                crate::output::line(e)
            };
        }
        other => other?,
    };
    let status = resumed.redemption.as_ref().map(|r| r.status.clone());
    let submitted = &resumed.submitted;
    if global.json {
        crate::output::json(&json!({
            "txId": args.tx_id,
            "kind": resumed.kind,
            "txHash": submitted.tx_hash,
            "alreadyKnown": submitted.already_known,
            "status": status,
        }))
    } else {
        crate::output::line(format_args!(
            "resumed {} {}: tx {}{}{}",
            resumed.kind,
            args.tx_id,
            submitted.tx_hash,
            if submitted.already_known {
                " (already known to the platform)"
            } else {
                ""
            },
            status
                .map(|s| format!(", redemption {s}"))
                .unwrap_or_default()
        ))
    }
}
