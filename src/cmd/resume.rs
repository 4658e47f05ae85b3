//! `bridgectl resume TXID|HASH`: finishes an interrupted flow, named as every command
//! names one (its txId, a unique start of it, or a hash it signed). A flow that signed is finished
//! by resending the SAME signed bytes from the journal (a node's "already known" is
//! success), never signing anything and never reading a passphrase. A redeem or action
//! that stopped at its approval (declined, every passphrase attempt wrong, the prompt
//! interrupted) has its journaled transaction checked again, shown, and asked for as the
//! original command asked. Then it waits for the flow's observed end (a redeem's
//! redemption, a swap's ST credit, any other transaction's receipt), never calling a
//! flow completed because its transaction was accepted.

use bridgectl_flow::Submitter;
use clap::Args;
use serde_json::json;

use crate::approver::StderrProgress;
use crate::global::GlobalOpts;
use crate::opts::FlowOpts;
use crate::session::Session;

// Arguments of `bridgectl resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The flow: its txId, a unique start of it, or the hash of a transaction it signed
    /// (see `bridgectl history`).
    #[arg(value_name = "TXID|HASH", add = crate::completers::flow_ids())]
    pub tx_id: String,
    /// The platform, and (for a flow that stopped at its approval) how to ask: the
    /// same options as the command that started it.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl resume`.
pub fn run(global: &GlobalOpts, args: ResumeArgs) -> anyhow::Result<()> {
    let session = Session::new(global, &args.flow)?;
    let record = session.flow(&args.tx_id)?;
    let tx_id = record.tx_id.clone();
    let flows = session.flows(Submitter::Platform, |_| {})?;
    // Asked only for a flow that stopped at its approval: a signed flow's bytes are
    // resent without reading a passphrase.
    let mut approver = session.approver();
    let resumed = match session.runtime.block_on(flows.resume_with_approval(
        &tx_id,
        &mut approver,
        &mut StderrProgress,
    )) {
        // Done already: say so, send nothing. The same document as a resume that sent,
        // with nothing sent, nothing signed and nothing observed now.
        Err(e @ bridgectl_flow::Error::AlreadyCompleted { state, .. }) => {
            return if global.json {
                crate::output::json(&json!({
                    "txId": tx_id,
                    "kind": record.kind,
                    "txHash": record.tx_hash,
                    "resent": false,
                    "alreadyKnown": false,
                    "signedNow": false,
                    "status": null,
                    "state": state,
                    "ended": null,
                    "observed": null,
                }))
            } else {
                crate::output::line(e)
            };
        }
        other => other?,
    };
    let status = resumed.redemption.as_ref().map(|r| r.status.clone());
    let submitted = &resumed.submitted;
    let state = match (&resumed.ended, &resumed.followed) {
        (Some(e), _) => Some(e.state),
        (None, Some(f)) => f.state,
        (None, None) => None,
    };
    if global.json {
        crate::output::json(&json!({
            "txId": tx_id,
            "kind": resumed.kind,
            "txHash": submitted.tx_hash,
            "resent": !resumed.signed_now,
            "alreadyKnown": submitted.already_known,
            "signedNow": resumed.signed_now,
            "status": status,
            "state": state,
            "ended": resumed.ended,
            "observed": resumed.followed,
        }))
    } else {
        crate::output::line(format_args!(
            "resumed {} {}: {} tx {}{}{}",
            resumed.kind,
            tx_id,
            if resumed.signed_now {
                "signed and sent"
            } else {
                "resent"
            },
            submitted.tx_hash,
            if submitted.already_known {
                " (already known to the platform)"
            } else {
                ""
            },
            match &resumed.ended {
                Some(e) => format!(
                    ", mined {} ({}) in block {}: flow {}{}",
                    e.mined,
                    e.purpose.as_str(),
                    e.block,
                    e.state.as_str(),
                    status
                        .map(|s| format!(", redemption {s}"))
                        .unwrap_or_default()
                ),
                None => resumed
                    .followed
                    .as_ref()
                    .map(|f| format!(": {}", crate::output::flow_end(f)))
                    .unwrap_or_default(),
            }
        ))
    }
}
