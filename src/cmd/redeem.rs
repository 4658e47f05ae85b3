//! `bridgectl redeem`: ST back into MT through the redeem transaction action. The raw
//! transaction the platform returns is checked against this intent before the key is
//! unlocked; the signed transaction is journaled before it is submitted.

use bridgectl_flow::Submitter;
use clap::Args;
use serde_json::json;

use crate::approver::StderrProgress;
use crate::global::GlobalOpts;
use crate::opts::{FlowOpts, parse_amount};
use crate::session::Session;

// Arguments of `bridgectl redeem`.
#[derive(Debug, Args)]
pub struct RedeemArgs {
    /// The account that holds the ST: an address, or the label of a key in the keystore.
    #[arg(long, add = crate::accounts::key_labels())]
    pub from: String,
    /// How much ST, in token units (`1.5`); exact, never rounded.
    #[arg(long, allow_hyphen_values = true)]
    pub amount: String,
    /// Submit through the side chain's node (profile side_rpc_url) instead of the
    /// platform's submit operation.
    #[arg(long)]
    pub direct: bool,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl redeem`.
pub fn run(global: &GlobalOpts, args: RedeemArgs) -> anyhow::Result<()> {
    let session = Session::new(global, &args.flow)?;
    let from = session.account(&args.from)?;
    let bridge = session.bridge()?;
    let amount = parse_amount(&args.amount, bridge.side.decimals, "--amount")?;
    session.check_signer(from)?;
    let submitter = if args.direct {
        session
            .profile
            .need(&session.profile.side_rpc_url, "side_rpc_url")?;
        session.node_submitter(bridge.side.chain_id, "--direct")?
    } else {
        Submitter::Platform
    };
    let flows = session.flows(submitter, |_| {})?;
    let mut approver = session.approver();
    let outcome =
        session
            .runtime
            .block_on(flows.redeem(from, amount, &mut approver, &mut StderrProgress))?;
    session.report_timings(&approver);
    let status = outcome.redemption.as_ref().map(|r| r.status.clone());
    let followed = &outcome.followed;
    if global.json {
        crate::output::json(&json!({
            "txId": outcome.submitted.tx_id,
            "txHash": outcome.submitted.tx_hash,
            "from": outcome.submitted.from,
            "chainId": outcome.submitted.chain_id,
            "nonce": outcome.submitted.nonce,
            "amount": amount.to_string(),
            "amountTokens": bridgectl_tx::amount::format_units(amount, bridge.side.decimals)?,
            "status": status,
            "redemption": outcome.redemption.as_ref().map(|r| &r.raw),
            "state": followed.state,
            "observed": followed,
        }))?;
    } else {
        crate::output::line(format_args!(
            "redeemed {} {}: tx {} (txId {}), {}",
            args.amount,
            bridge.side.symbol,
            outcome.submitted.tx_hash,
            outcome.submitted.tx_id,
            crate::output::flow_end(followed)
        ))?;
        if let Some(paid) = crate::output::payout_line(followed, &bridge.main) {
            crate::output::line(paid)?;
        }
    }
    match &outcome.redemption {
        Some(r) if followed.state == Some(bridgectl_flow::FlowState::Failed) => Err(
            anyhow::anyhow!("redemption {} ended {}", outcome.submitted.tx_id, r.status),
        ),
        _ => Ok(()),
    }
}
