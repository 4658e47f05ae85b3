//! `bridgectl transfer`: MT or ST to any recipient, signed locally, or for a managed
//! account signed by the platform (operation 2, checked against what was asked) and
//! submitted (operation 3).

use bridgectl_flow::{Submitter, TokenSide, TransferSpec};
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::approver::StderrProgress;
use crate::global::GlobalOpts;
use crate::opts::{BuildOpts, FlowOpts, parse_amount};
use crate::session::Session;

/// Which token.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TokenArg {
    /// The main-network token.
    Mt,
    /// The side-chain token.
    St,
}

// Arguments of `bridgectl transfer`.
#[derive(Debug, Args)]
pub struct TransferArgs {
    /// MT or ST.
    #[arg(long, value_enum)]
    pub token: TokenArg,
    /// The sender: an address or a key label.
    #[arg(long, add = crate::accounts::key_labels())]
    pub from: String,
    /// The recipient: an address or a key label.
    #[arg(long, add = crate::accounts::key_labels())]
    pub to: String,
    /// How much, in token units.
    #[arg(long, allow_hyphen_values = true)]
    pub amount: String,
    /// `from` is a managed account: the platform signs (no local key is used).
    #[arg(long)]
    pub managed: bool,
    /// Submit through the node instead of the platform, and wait for the receipt.
    #[arg(long)]
    pub direct: bool,
    /// Nonce and gas.
    #[command(flatten)]
    pub build: BuildOpts,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl transfer`.
pub fn run(global: &GlobalOpts, args: TransferArgs) -> anyhow::Result<()> {
    let session = Session::new(global, &args.flow)?;
    let from = session.account(&args.from)?;
    let to = session.account(&args.to)?;
    let bridge = session.bridge()?;
    let (which, side) = match args.token {
        TokenArg::Mt => (TokenSide::Mt, &bridge.main),
        TokenArg::St => (TokenSide::St, &bridge.side),
    };
    let amount = parse_amount(&args.amount, side.decimals, "--amount")?;
    let (nonce, gas) = args.build.sources(side.rpc_url.is_some())?;
    let submitter = if args.direct {
        let url = side.rpc_url.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "--direct needs an rpc url for the {} chain in the profile",
                side.symbol
            )
        })?;
        Submitter::Node(bridgectl_flow::rpc::NodeClient::new(url)?)
    } else {
        Submitter::Platform
    };
    let flows = session.flows(submitter, |_| {})?;
    let spec = TransferSpec {
        token: which,
        from,
        to,
        amount,
        nonce,
        gas,
    };
    let submitted = if args.managed {
        session
            .runtime
            .block_on(flows.managed_transfer(&spec, &mut StderrProgress))?
    } else {
        session.check_signer(from)?;
        let mut approver = session.approver();
        session
            .runtime
            .block_on(flows.transfer(&spec, &mut approver, &mut StderrProgress))?
    };
    if global.json {
        crate::output::json(&json!({
            "txId": submitted.tx_id,
            "txHash": submitted.tx_hash,
            "from": submitted.from,
            "to": to,
            "token": side.symbol,
            "amount": amount.to_string(),
            "amountTokens": bridgectl_tx::amount::format_units(amount, side.decimals)?,
            "chainId": submitted.chain_id,
            "nonce": submitted.nonce,
        }))?;
    } else {
        crate::output::line(format_args!(
            "transferred {} {} to {}: tx {} (txId {})",
            args.amount, side.symbol, to, submitted.tx_hash, submitted.tx_id
        ))?;
    }
    Ok(())
}
