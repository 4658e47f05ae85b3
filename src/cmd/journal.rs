//! `bridgectl journal reset-chain CHAIN`: goes on after a chain was reset (a testnet
//! reset, a restarted sandbox). The journal's flows on the old chain hold nonces that mean
//! nothing on the new one, so every new flow would be refused; and the signing log holds
//! the keys' old signatures at those nonces. This retires the old flows (kept, never sent
//! again), and has each key that signed on the chain record the reset in the signing log
//! (signed by the key itself, so its passphrase is asked: nothing but the key can free a
//! nonce the log holds). The checks are the library's (`Flows::plan_chain_reset`): the
//! node's block 0 against the journal's and the signing log's, the chain's transactions
//! asked of the node (and of a second one, `--witness`), the platform's nonce counts; this
//! shows what it will do, with every signed transaction still unmined, and asks.

use alloy_primitives::Address;
use bridgectl_flow::Submitter;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::{PassphraseOpts, PlatformOpts};
use crate::passphrase::CliPassphrases;
use crate::session::Session;

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
    /// Another node of the chain, asked as a second witness: its block 0 must be the
    /// node's, and it must know none of the chain's signed transactions either.
    #[arg(
        long,
        env = "BRIDGECTL_RESET_WITNESS",
        value_name = "URL",
        hide_env_values = true
    )]
    pub witness: Option<String>,
    /// The platform (its next-nonce counts are a witness) and the journal.
    #[command(flatten)]
    pub platform: PlatformOpts,
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
    let session = Session::for_sending(global, &args.platform)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let bridge = flows.bridge()?;
    if ![bridge.main.chain_id, bridge.side.chain_id].contains(&chain_id) {
        return Err(coded(
            Code::Usage,
            format!(
                "chain {chain_id} is neither the profile's main chain ({}) nor its side \
                 chain ({})",
                bridge.main.chain_id, bridge.side.chain_id
            ),
        ));
    }
    let plan = session
        .runtime
        .block_on(flows.plan_chain_reset(chain_id, args.witness.as_deref()))?;
    let ours = session.keystore.signers()?;
    let local: Vec<Address> = session.keystore.list()?.iter().map(|k| k.address).collect();
    let (keys, strangers): (Vec<Address>, Vec<Address>) =
        plan.keys.iter().partition(|k| local.contains(k));
    let external: Vec<Address> = strangers
        .iter()
        .filter(|k| ours.contains(k))
        .copied()
        .collect();
    let strangers: Vec<Address> = strangers
        .into_iter()
        .filter(|k| !ours.contains(k))
        .collect();
    describe(&plan, &keys, &external, &strangers);
    crate::review::confirm(args.yes, &format!("Reset chain {chain_id}?"))?;
    let mut passphrases = CliPassphrases::new(&args.passphrase);
    if !keys.is_empty() {
        passphrases.ensure_available()?;
    }
    let retired = flows.reset_chain(&plan, &keys, |key| {
        passphrases
            .unlock(&session.keystore, &key.to_string())
            .map_err(bridgectl_flow::Error::unlock_failed)
    })?;
    // EIP-55, as every address bridgectl prints.
    let checksummed =
        |keys: &[Address]| -> Vec<String> { keys.iter().map(ToString::to_string).collect() };
    let mut not_reset = strangers.clone();
    not_reset.extend(&external);
    if global.json {
        return crate::output::json(&json!({
            "chainId": chain_id,
            "genesis": plan.genesis,
            "genesisBefore": plan.journaled,
            "retired": retired,
            "keys": checksummed(&keys),
            "notReset": checksummed(&not_reset),
        }));
    }
    crate::output::line(format_args!(
        "chain {chain_id} reset: {} flow(s) retired, the reset recorded for {} key(s); \
         block 0 is now {}",
        retired.len(),
        keys.len(),
        plan.genesis
    ))
}

/// What a reset will do, on stderr before the question: the witnesses, every flow it
/// retires with its state and its signed transactions that no node mined, and what
/// stays true of those bytes.
fn describe(
    plan: &bridgectl_flow::ChainResetPlan,
    keys: &[Address],
    external: &[Address],
    strangers: &[Address],
) {
    let list = |a: &[Address]| {
        a.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let chain_id = plan.chain_id;
    crate::output::note(format_args!(
        "chain {chain_id}: block 0 was {} (journal) / {} (signing log), the node's is {}",
        plan.journaled.as_deref().unwrap_or("not recorded"),
        plan.logged
            .map_or_else(|| "not recorded".to_owned(), |g| g.to_string()),
        plan.genesis
    ));
    crate::output::note(format_args!(
        "the node knows none of the {} transaction(s) signed for the chain{}",
        plan.checked_transactions,
        plan.witnesses
            .iter()
            .map(|w| format!("; {w}"))
            .collect::<String>()
    ));
    crate::output::note(format_args!(
        "{} flow(s) on it will be retired (kept in the journal, never sent again):",
        plan.flows.len()
    ));
    for f in &plan.flows {
        let unmined = if f.unmined.is_empty() {
            "nothing signed".to_owned()
        } else {
            format!(
                "signed, not mined here: {}",
                f.unmined
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        crate::output::note(format_args!(
            "  {} {} ({}): {unmined}",
            f.tx_id,
            f.kind.as_str(),
            f.state.as_str()
        ));
    }
    if plan.flows.iter().any(|f| !f.unmined.is_empty()) {
        crate::output::note(
            "signed bytes stay valid on any chain with this chain id: should the old chain \
             come back (or a copy of it run), what is listed above can still be mined there",
        );
    }
    crate::output::note(format_args!(
        "the signing log records the reset for {} key(s) of this keystore{}",
        keys.len(),
        if keys.is_empty() {
            String::new()
        } else {
            format!(": {} (each key's passphrase is asked)", list(keys))
        }
    ));
    if !external.is_empty() {
        crate::output::note(format_args!(
            "external signers, not reset here (their endpoints sign no reset yet): {}",
            list(external)
        ));
    }
    if !strangers.is_empty() {
        crate::output::note(format_args!(
            "not in this keystore, so not reset here: {}",
            list(strangers)
        ));
    }
}
