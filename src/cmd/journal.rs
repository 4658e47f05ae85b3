//! `bridgectl journal reset-chain CHAIN`: goes on after a chain was reset (a testnet
//! reset, a restarted sandbox). The journal's flows on the old chain hold nonces that mean
//! nothing on the new one, so every new flow would be refused; and the signing log holds
//! the keys' old signatures at those nonces. This retires the old flows (kept, never sent
//! again), and has each key that signed on the chain record the reset in the signing log
//! (signed by the key itself, so its passphrase is asked: nothing but the key can free a
//! nonce the log holds). Explicit: it checks the node's block 0 against the journal's,
//! shows what it will do and asks.

use alloy_primitives::Address;
use bridgectl_flow::rpc::NodeClient;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::PassphraseOpts;
use crate::passphrase::CliPassphrases;

/// `bridgectl journal ...`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum JournalCommand {
    /// After chain CHAIN was reset (its block 0 changed): retire the journal's flows on
    /// it and record the reset in the signing log for each key that signed there.
    ResetChain(ResetChainArgs),
}

// Arguments of `bridgectl journal reset-chain`.
#[derive(Debug, Args)]
pub struct ResetChainArgs {
    /// The chain id (the profile's main or side chain, whose rpc_url is asked for its
    /// block 0).
    #[arg(add = crate::completers::chain_ids())]
    pub chain_id: u64,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Journal database [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(
        long,
        env = "BRIDGECTL_JOURNAL",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub journal: Option<std::path::PathBuf>,
    /// The passphrase of each key that records the reset.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
}

/// Runs `bridgectl journal ...`.
pub fn run(global: &GlobalOpts, cmd: JournalCommand) -> anyhow::Result<()> {
    match cmd {
        JournalCommand::ResetChain(args) => reset_chain(global, args),
    }
}

fn reset_chain(global: &GlobalOpts, args: ResetChainArgs) -> anyhow::Result<()> {
    let chain_id = args.chain_id;
    let profile = crate::config::load_profile(global)?;
    let bridge = crate::session::bridge_from(&profile)?;
    let side = [&bridge.main, &bridge.side]
        .into_iter()
        .find(|s| s.chain_id == chain_id)
        .ok_or_else(|| {
            coded(
                Code::Usage,
                format!(
                    "chain {chain_id} is neither the profile's main chain ({}) nor its side \
                     chain ({})",
                    bridge.main.chain_id, bridge.side.chain_id
                ),
            )
        })?;
    let url = side.rpc_url.as_deref().ok_or_else(|| {
        coded(
            Code::Usage,
            format!(
                "chain {chain_id} has no rpc_url in the profile: its block 0 is what is checked"
            ),
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let genesis = runtime.block_on(NodeClient::new(url)?.genesis_hash())?;
    let journal = crate::session::open_journal(args.journal.as_deref())?;
    let before = journal.chain_genesis(chain_id)?;
    if before
        .as_deref()
        .is_some_and(|b| b.eq_ignore_ascii_case(&genesis.to_string()))
    {
        return Err(coded(
            Code::Refused,
            format!(
                "chain {chain_id} was not reset: the node's block 0 is {genesis}, the one its \
                 flows were journaled on; nothing was changed"
            ),
        ));
    }
    let flows = journal.flows_on_chain(chain_id)?;
    let keystore = crate::session::open_keystore(global)?;
    let log = crate::session::open_signing_log(&keystore)?;
    let ours: Vec<Address> = keystore.list()?.iter().map(|k| k.address).collect();
    let mut keys: Vec<Address> = log.keys_on_chain(chain_id)?;
    keys.extend(
        flows
            .iter()
            .filter_map(|f| f.from.as_deref().and_then(|a| a.parse::<Address>().ok())),
    );
    keys.sort();
    keys.dedup();
    let (keys, strangers): (Vec<Address>, Vec<Address>) =
        keys.into_iter().partition(|k| ours.contains(k));

    crate::output::note(format_args!(
        "chain {chain_id}: block 0 was {}, the node's is {genesis}\n\
         {} flow(s) on it will be retired (kept in the journal, never sent again)\n\
         the signing log records the reset for {} key(s) of this keystore{}",
        before.as_deref().unwrap_or("not recorded"),
        flows.len(),
        keys.len(),
        if keys.is_empty() {
            String::new()
        } else {
            format!(
                ": {} (each key's passphrase is asked)",
                keys.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    if !strangers.is_empty() {
        crate::output::note(format_args!(
            "not in this keystore, so not reset here: {}",
            strangers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    crate::review::confirm(args.yes, &format!("Reset chain {chain_id}?"))?;
    // The log first: a reset journal with keys still holding the old nonces would be
    // refused at every signature; run again, this is all done again harmlessly.
    let mut passphrases = CliPassphrases::new(&args.passphrase);
    if !keys.is_empty() {
        passphrases.ensure_available()?;
    }
    for key in &keys {
        let signer = passphrases.unlock(&keystore, &key.to_string())?;
        bridgectl_tx::log::log_chain_reset(
            &log,
            &signer,
            chain_id,
            genesis,
            bridgectl_tx::log::unix_now(),
        )?;
    }
    let retired = journal.reset_chain(chain_id, genesis)?;
    // EIP-55, as every address bridgectl prints.
    let checksummed =
        |keys: &[Address]| -> Vec<String> { keys.iter().map(ToString::to_string).collect() };
    if global.json {
        return crate::output::json(&json!({
            "chainId": chain_id,
            "genesis": genesis,
            "genesisBefore": before,
            "retired": retired,
            "keys": checksummed(&keys),
            "notReset": checksummed(&strangers),
        }));
    }
    crate::output::line(format_args!(
        "chain {chain_id} reset: {} flow(s) retired, the reset recorded for {} key(s); \
         block 0 is now {genesis}",
        retired.len(),
        keys.len()
    ))
}
