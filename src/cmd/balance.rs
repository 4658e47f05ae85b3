//! `bridgectl balance [ADDRESS|LABEL ...]`: MT and ST balances of the keystore's keys
//! (or of the accounts named), exact, with their symbols: from the chains' nodes when
//! the profile names them, else from the platform's balance operation; and the native
//! coin each chain's gas is paid in, from its node (`-` without one).

use alloy_primitives::{Address, U256};
use bridgectl_flow::{Submitter, TokenSide};
use clap::Args;
use serde_json::json;

use crate::global::GlobalOpts;
use crate::opts::PlatformOpts;
use crate::session::Session;

// Arguments of `bridgectl balance`.
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
        let row = session.runtime.block_on(async {
            Ok::<_, bridgectl_flow::Error>(Row {
                mt: flows.token_balance(TokenSide::Mt, address).await?,
                st: flows.token_balance(TokenSide::St, address).await?,
                gas_main: flows.gas_balance(TokenSide::Mt, address).await?,
                gas_side: flows.gas_balance(TokenSide::St, address).await?,
                address,
                label,
            })
        })?;
        rows.push(row);
    }
    let wei = |v: Option<U256>| v.map(|v| v.to_string());
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
            .map(|r| {
                Ok(json!({
                    "address": r.address,
                    "label": r.label,
                    "mt": token(&bridge.main, &r.mt)?,
                    "st": token(&bridge.side, &r.st)?,
                    "gas": {"main": wei(r.gas_main), "side": wei(r.gas_side)},
                }))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        return crate::output::json(&items);
    }
    if rows.is_empty() {
        crate::output::note("no keys in the keystore: name addresses to look up");
        return Ok(());
    }
    let units = |v: U256, decimals: u8| bridgectl_tx::amount::format_units(v, decimals);
    // The native coin has 18 decimals on every EVM chain the platform runs; its columns
    // say it in ETH, the unit every summary gives fees in.
    let gas = |v: Option<U256>| v.map_or_else(|| Ok("-".to_owned()), |v| units(v, 18));
    let mut table = Vec::new();
    for r in &rows {
        table.push(vec![
            r.address.to_string(),
            crate::output::untrusted(r.label.as_deref().unwrap_or("-")).into_owned(),
            units(r.mt, bridge.main.decimals)?,
            units(r.st, bridge.side.decimals)?,
            gas(r.gas_main)?,
            gas(r.gas_side)?,
        ]);
    }
    let mt = crate::output::untrusted(&bridge.main.symbol).into_owned();
    let st = crate::output::untrusted(&bridge.side.symbol).into_owned();
    crate::output::table(
        &[
            "ADDRESS",
            "LABEL",
            &mt,
            &st,
            "GAS (main, ETH)",
            "GAS (side, ETH)",
        ],
        &[2, 3, 4, 5],
        &table,
    )
}

/// One account's balances.
struct Row {
    address: Address,
    label: Option<String>,
    mt: U256,
    st: U256,
    /// Native coin on the main chain, in wei; `None` without a node for it.
    gas_main: Option<U256>,
    /// Native coin on the side chain.
    gas_side: Option<U256>,
}
