//! One module per subcommand, each with an `*Args` struct and a `run()`.

pub mod action;
pub mod balance;
pub mod batch;
pub mod completions;
pub mod demo;
pub mod history;
pub mod journal;
pub mod key;
pub mod log;
pub mod redeem;
pub mod replace;
pub mod resume;
pub mod sandbox;
pub mod sign;
pub mod status;
pub mod submit;
pub mod swap;
pub mod transfer;
pub mod tx;
pub mod webhook;

use crate::cli::{Cli, Command};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let global = cli.global;
    match cli.command {
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
        Command::Balance(args) => balance::run(&global, args),
        Command::Demo(args) => demo::run(&global, args),
        Command::Webhook(cmd) => webhook::run(&global, cmd),
        Command::Completions(args) => completions::run(args),
    }
}
