//! One module per subcommand, each with an `*Args` struct and a `run()`.

pub mod completions;
pub mod key;
pub mod sandbox;
pub mod sign;
pub mod tx;

use crate::cli::{Cli, Command};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let global = cli.global;
    match cli.command {
        Command::Key(cmd) => key::run(&global, cmd),
        Command::Sign(args) => sign::run(&global, args),
        Command::Tx(cmd) => tx::run(&global, cmd),
        Command::Sandbox(args) => sandbox::run(&global, args),
        Command::Completions(args) => completions::run(args),
    }
}
