//! The command line, as clap derive structs. Each subcommand's own arguments live
//! beside its code in `cmd/<name>.rs`; this file only assembles them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cmd;

/// Sign and submit token-bridge transactions locally: the private key never leaves
/// this machine.
#[derive(Debug, Parser)]
#[command(name = "bridgectl", version, about, long_about = None)]
pub struct Cli {
    /// Options every command understands.
    #[command(flatten)]
    pub global: GlobalOpts,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

// Options shared by every command.
#[derive(Debug, Args, Clone)]
pub struct GlobalOpts {
    /// Keystore directory [default: $XDG_DATA_HOME/bridgectl/keystore].
    #[arg(long, global = true, env = "BRIDGECTL_KEYSTORE", value_name = "DIR")]
    pub keystore: Option<PathBuf>,

    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Config file with profiles [default: $XDG_CONFIG_HOME/bridgectl/config.toml].
    #[arg(long, global = true, env = "BRIDGECTL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Profile of the config file to use.
    #[arg(
        long,
        global = true,
        env = "BRIDGECTL_PROFILE",
        default_value = "default"
    )]
    pub profile: String,
}

// Where a passphrase comes from, in the documented order: this flag,
// `BRIDGECTL_PASSPHRASE_FILE`, `BRIDGECTL_PASSPHRASE`, then an interactive prompt.
#[derive(Debug, Args, Clone, Default)]
pub struct PassphraseOpts {
    /// Read the passphrase from the first line of this file (keep it 0600).
    #[arg(long, value_name = "FILE", help_heading = "Passphrase")]
    pub passphrase_file: Option<PathBuf>,
}

/// The subcommands. Each one's arguments are built only when it runs (`defer`, here and
/// in every subcommand enum): building all of them cost every run about 0.3 ms. So the
/// argument structs of subcommands carry plain comments, not doc comments: built late,
/// a struct's doc comment would replace the subcommand's description in its `--help`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Manage encrypted private keys.
    #[command(subcommand)]
    Key(cmd::key::KeyCommand),
    /// Verify and sign a raw transaction offline (no network is touched).
    Sign(cmd::sign::SignArgs),
    /// Inspect transactions offline.
    #[command(subcommand)]
    Tx(cmd::tx::TxCommand),
    /// The signing log: every signature made with the keystore's keys, tamper-evident.
    #[command(subcommand)]
    Log(cmd::log::LogCommand),
    /// Run the platform locally over two anvil chains, for trying the whole flow.
    Sandbox(cmd::sandbox::SandboxArgs),
    /// Redeem ST into MT: execute the redeem action, verify, sign locally, submit, wait.
    Redeem(cmd::redeem::RedeemArgs),
    /// Swap MT into ST: send MT to the swap address, signed locally.
    Swap(cmd::swap::SwapArgs),
    /// Transfer MT or ST to any address.
    Transfer(cmd::transfer::TransferArgs),
    /// Transaction actions.
    #[command(subcommand)]
    Action(cmd::action::ActionCommand),
    /// Submit a signed bundle from the offline signer, after checking it.
    Submit(cmd::submit::SubmitArgs),
    /// Many redeems, transfers and swaps from one file: planned, confirmed once,
    /// pipelined, resumable after a crash.
    #[command(subcommand)]
    Batch(cmd::batch::BatchCommand),
    /// Finish an interrupted flow by resending its signed transaction.
    Resume(cmd::resume::ResumeArgs),
    /// Sign a stuck flow's call again at its nonce at a higher gas price, send it, and
    /// wait until one of its transactions is mined.
    Replace(cmd::replace::ReplaceArgs),
    /// Use a stuck flow's nonce up with a 0-value transfer to its sender, and wait until
    /// one of its transactions is mined (the flow ends cancelled if the cancel is).
    Cancel(cmd::replace::ReplaceArgs),
    /// The journal itself: `reset-chain` after a chain was reset.
    #[command(subcommand)]
    Journal(cmd::journal::JournalCommand),
    /// Ask the chain and the platform what became of a flow (by txId or transaction
    /// hash), and journal an end observed.
    Status(cmd::status::StatusArgs),
    /// Show the journal of flows.
    History(cmd::history::HistoryArgs),
    /// MT and ST balances of the keystore's keys or of the accounts named.
    Balance(cmd::balance::BalanceArgs),
    /// Run the whole job on the embedded sandbox: throwaway key, swap, redeem, balances.
    Demo(cmd::demo::DemoArgs),
    /// Webhooks: create/list/get/update/delete, and a listener that never loses an event.
    #[command(subcommand)]
    Webhook(cmd::webhook::WebhookCommand),
    /// Print shell completions.
    Completions(cmd::completions::CompletionsArgs),
}
