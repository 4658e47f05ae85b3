//! `bridgectl replace TXID` and `bridgectl cancel TXID`: the ways on for a flow whose
//! signed transaction cannot be mined (no gas for its fees, under-priced after a spike).
//! Each signs once more at the flow's own nonce, deliberately: `replace` the same call at
//! a higher gas price, `cancel` a 0-value transfer to the sender itself. Both are checked
//! by the one verifier and shown before the key is unlocked, are recorded in the signing
//! log with the hash they replace, and wait until one of the flow's transactions is
//! mined: that one decides how the flow ends (`cancelled` when the cancel won).

use bridgectl_flow::{Purpose, Replaced, Submitter};
use clap::Args;

use crate::approver::StderrProgress;
use crate::global::GlobalOpts;
use crate::opts::{FlowOpts, PriceOpts};
use crate::session::Session;

// Arguments of `bridgectl replace`.
#[derive(Debug, Args)]
pub struct ReplaceArgs {
    /// The stuck flow: its txId, a unique start of it, or the hash of a transaction it
    /// signed (see `bridgectl history`).
    #[arg(value_name = "TXID|HASH", add = crate::completers::flow_ids())]
    pub tx_id: String,
    /// The new price.
    #[command(flatten)]
    pub price: PriceOpts,
    /// The platform, the key's passphrase, the caps: as for the command that started it.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl replace` (`cancel: false`) or `bridgectl cancel` (`cancel: true`).
pub fn run(global: &GlobalOpts, args: ReplaceArgs, cancel: bool) -> anyhow::Result<()> {
    let repricing = args.price.repricing()?;
    let session = Session::new(global, &args.flow)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    // The price it replaces, as the journal holds the flow's transaction: shown beside
    // the new one.
    let old_price = session
        .flow(&args.tx_id)
        .ok()
        .and_then(|f| f.signed_tx)
        .and_then(|hex| alloy_primitives::hex::decode(hex.trim_start_matches("0x")).ok())
        .and_then(|raw| bridgectl_tx::decode::decode_signed(&raw).ok())
        .and_then(|d| d.gas_price)
        .and_then(|p| u128::try_from(p).ok());
    let mut approver = session.approver();
    approver.replacing = old_price;
    let purpose = if cancel {
        Purpose::Cancel
    } else {
        Purpose::Replacement
    };
    let done = session
        .runtime
        .block_on(flows.replace(
            &args.tx_id,
            purpose,
            repricing,
            &mut approver,
            &mut StderrProgress,
        ))
        .map_err(|e| match (&e, cancel) {
            // A cancel not mined in time: the way on is the cancel again (higher) or more
            // waiting, never a replacement of the call it was to end.
            (
                bridgectl_flow::Error::Timeout {
                    flow: Some(tx_id), ..
                },
                true,
            ) => {
                let hint = format!(
                    "the cancel is not mined yet: `bridgectl cancel {tx_id}` signs it again at a \
                     higher gas price; `bridgectl resume {tx_id}` sends the same bytes again \
                     and waits"
                );
                crate::exit::hinted(e.into(), hint)
            }
            _ => e.into(),
        })?;
    report(global, &done, old_price)
}

fn report(global: &GlobalOpts, done: &Replaced, old_price: Option<u128>) -> anyhow::Result<()> {
    if global.json {
        return crate::output::json(done);
    }
    let ended = &done.ended;
    crate::output::line(format_args!(
        "{} {}: {} replaces {}, gas price {}{} wei; mined {} ({}) in block {}: flow {}{}",
        done.purpose.as_str(),
        done.tx_id,
        done.tx_hash,
        done.replaces,
        old_price.map(|p| format!("{p} -> ")).unwrap_or_default(),
        done.gas_price,
        ended.mined,
        ended.purpose.as_str(),
        ended.block,
        ended.state.as_str(),
        ended
            .redemption
            .as_ref()
            .map(|r| format!(", redemption {}", r.status))
            .unwrap_or_default()
    ))
}
