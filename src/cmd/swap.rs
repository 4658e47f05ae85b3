//! `bridgectl swap`: MT into ST. Issues the swap address, builds the MT transfer to it
//! locally (calldata never comes from outside), signs, submits, and with `--wait`
//! waits for its own ST credit, which with its transfer's receipt completes a swap.

use bridgectl_flow::{Submitter, SwapSpec};
use clap::Args;
use serde_json::json;

use crate::approver::StderrProgress;
use crate::global::GlobalOpts;
use crate::opts::{BuildOpts, FlowOpts, parse_amount};
use crate::session::Session;

// Arguments of `bridgectl swap`.
#[derive(Debug, Args)]
pub struct SwapArgs {
    /// The account sending MT and receiving ST: an address or a key label.
    #[arg(long, add = crate::accounts::key_labels())]
    pub from: String,
    /// How much MT, in token units.
    #[arg(long, allow_hyphen_values = true)]
    pub amount: String,
    /// Wait until the MT transfer is mined and the swap's own ST credit is on the side
    /// chain: the flow is completed only then (without it, it stays `submitted`;
    /// `bridgectl status TXID` or `resume` sees the credit later).
    #[arg(long)]
    pub wait: bool,
    /// Nonce and gas.
    #[command(flatten)]
    pub build: BuildOpts,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl swap`.
pub fn run(global: &GlobalOpts, args: SwapArgs) -> anyhow::Result<()> {
    let session = Session::new(global, &args.flow)?;
    let from = session.account(&args.from)?;
    let bridge = session.bridge()?;
    let amount = parse_amount(&args.amount, bridge.main.decimals, "--amount")?;
    let (nonce, gas) = args.build.sources(bridge.main.rpc_url.is_some())?;
    session.check_signer(from)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let mut approver = session.approver();
    let spec = SwapSpec {
        from,
        amount,
        nonce,
        gas,
        wait: args.wait,
    };
    let out = session
        .runtime
        .block_on(flows.swap(&spec, &mut approver, &mut StderrProgress))?;
    if global.json {
        crate::output::json(&json!({
            "txId": out.submitted.tx_id,
            "txHash": out.submitted.tx_hash,
            "swapAddress": out.swap_address,
            "swapAddressData": out.swap_address_raw,
            "amount": amount.to_string(),
            "amountTokens": bridgectl_tx::amount::format_units(amount, bridge.main.decimals)?,
            "stBefore": out.st_before.map(|v| v.to_string()),
            "stAfter": out.st_after.map(|v| v.to_string()),
            "credit": out.credit,
            "expectedCredit": out.expected_credit.map(|v| v.to_string()),
            "state": out.state,
        }))?;
    } else {
        crate::output::line(format_args!(
            "sent {} {} to swap address {}: tx {} (txId {})",
            args.amount,
            bridge.main.symbol,
            out.swap_address,
            out.submitted.tx_hash,
            out.submitted.tx_id
        ))?;
        if let Some(c) = &out.credit {
            let amount: alloy_primitives::U256 = c.amount.parse()?;
            crate::output::line(format_args!(
                "credited {} {} by {} (log {} in block {} of chain {})",
                bridgectl_tx::amount::format_units(amount, bridge.side.decimals)?,
                bridge.side.symbol,
                c.tx_hash,
                c.log_index,
                c.block,
                c.chain_id
            ))?;
        }
        if let (Some(b), Some(a)) = (out.st_before, out.st_after) {
            crate::output::line(format_args!(
                "{} balance {} -> {}",
                bridge.side.symbol,
                bridgectl_tx::amount::format_units(b, bridge.side.decimals)?,
                bridgectl_tx::amount::format_units(a, bridge.side.decimals)?
            ))?;
        }
    }
    if !args.wait {
        crate::output::note(format_args!(
            "the {} credit was not awaited: flow {} stays submitted until `bridgectl status              {}` or `bridgectl resume {}` sees it",
            bridge.side.symbol, out.submitted.tx_id, out.submitted.tx_id, out.submitted.tx_id
        ));
    }
    Ok(())
}
