//! `bridgectl balance [ADDRESS|LABEL ...]`: MT and ST balances of the keystore's keys
//! (or of the accounts named), exact, with their symbols: from the chains' nodes when
//! the profile names them, else from the platform's balance operation.

use alloy_primitives::Address;
use bridgectl_flow::{Submitter, Which};
use clap::Args;
use serde_json::json;

use crate::cli::GlobalOpts;
use crate::opts::PlatformOpts;
use crate::session::Session;

/// Arguments of `bridgectl balance`.
#[derive(Debug, Args)]
pub struct BalanceArgs {
    /// Addresses or key labels [default: every key in the keystore].
    pub accounts: Vec<String>,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

/// Runs `bridgectl balance`.
pub fn run(global: &GlobalOpts, args: BalanceArgs) -> anyhow::Result<()> {
    let session = Session::for_sending(global, &args.platform)?;
    let bridge = session.bridge()?.clone();
    let accounts: Vec<(Address, Option<String>)> = if args.accounts.is_empty() {
        session
            .keystore
            .list()?
            .into_iter()
            .map(|k| (k.address, Some(k.label)))
            .collect()
    } else {
        args.accounts
            .iter()
            .map(|a| {
                let address = session.account(a)?;
                let label = session.keystore.find(a).ok().map(|k| k.label);
                Ok((address, label))
            })
            .collect::<anyhow::Result<_>>()?
    };
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let mut rows = Vec::new();
    for (address, label) in accounts {
        let (mt, st) = session.runtime.block_on(async {
            Ok::<_, bridgectl_flow::Error>((
                flows.token_balance(Which::Mt, address).await?,
                flows.token_balance(Which::St, address).await?,
            ))
        })?;
        rows.push((address, label, mt, st));
    }
    if global.json {
        // A token's balance in base units, and in token units beside it for people.
        let token = |side: &bridgectl_flow::ChainSide, v: &alloy_primitives::U256| {
            Ok::<_, anyhow::Error>(json!({
                "symbol": side.symbol,
                "decimals": side.decimals,
                "balance": v.to_string(),
                "balanceTokens": bridgectl_tx::amount::format_units(*v, side.decimals)?,
            }))
        };
        let items = rows
            .iter()
            .map(|(address, label, mt, st)| {
                Ok(json!({
                    "address": address,
                    "label": label,
                    "mt": token(&bridge.main, mt)?,
                    "st": token(&bridge.side, st)?,
                }))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        return crate::output::json(&items);
    }
    if rows.is_empty() {
        crate::output::note("no keys in the keystore: name addresses to look up");
        return Ok(());
    }
    for (address, label, mt, st) in rows {
        crate::output::line(format_args!(
            "{address} {:<16} {} {}  {} {}",
            label.unwrap_or_default(),
            bridgectl_tx::amount::format_units(mt, bridge.main.decimals)?,
            bridge.main.symbol,
            bridgectl_tx::amount::format_units(st, bridge.side.decimals)?,
            bridge.side.symbol,
        ))?;
    }
    Ok(())
}
