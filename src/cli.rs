//! The command line, as clap derive structs. Each subcommand's own arguments live
//! beside its code in `cmd/<name>.rs`; this file only assembles them and hands each
//! subcommand to its `run()`.

use clap::{Parser, Subcommand};

use crate::cmd::{
    self, action, balance, batch, completions, demo, history, journal, key, log, redeem, replace,
    resume, sandbox, sign, state, status, submit, swap, transfer, tx, webhook,
};
use crate::global::GlobalOpts;

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

impl Cli {
    /// Runs the parsed command line: each subcommand's `run()` with the global options.
    pub fn run(self) -> anyhow::Result<()> {
        let global = self.global;
        if !matches!(self.command, Command::Completions(_) | Command::Sign(_)) {
            // Where the shared state lives, for the commands that open the journal or the
            // signing log (the offline signer never reads it: it touches no network).
            crate::opts::remember_profile_state(&global);
        }
        match self.command {
            Command::Key(cmd) => key::run(&global, cmd),
            Command::Sign(args) => sign::run(&global, args),
            Command::Batch(cmd) => batch::run(&global, cmd),
            Command::Tx(cmd) => tx::run(&global, cmd),
            Command::Log(cmd) => log::run(&global, cmd),
            Command::Sandbox(args) => sandbox::run(&global, args),
            Command::Redeem(args) => redeem::run(&global, args),
            Command::Swap(args) => swap::run(&global, args),
            Command::Transfer(args) => transfer::run(&global, args),
            Command::Action(cmd) => action::run(&global, cmd),
            Command::Submit(args) => submit::run(&global, args),
            Command::Resume(args) => resume::run(&global, args),
            Command::Replace(args) => replace::run(&global, args, false),
            Command::Cancel(args) => replace::run(&global, args, true),
            Command::Status(args) => status::run(&global, args),
            Command::History(args) => history::run(&global, args),
            Command::Journal(cmd) => journal::run(&global, cmd),
            Command::State(cmd) => state::run(&global, cmd),
            Command::Balance(args) => balance::run(&global, args),
            Command::Demo(args) => demo::run(&global, args),
            Command::Webhook(cmd) => webhook::run(&global, cmd),
            Command::Completions(args) => completions::run(args),
        }
    }
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
    /// Where the journal and the signing log live: `migrate` copies this machine's into
    /// the PostgreSQL database several signer hosts share.
    #[command(subcommand)]
    State(cmd::state::StateCommand),
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
