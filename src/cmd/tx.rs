//! `bridgectl tx ...` (stub, being written).
use clap::Subcommand;

use crate::cli::GlobalOpts;

/// Offline transaction tools.
#[derive(Debug, Subcommand)]
pub enum TxCommand {
    /// Decode a signed transaction.
    Decode,
}

/// Runs a tx command.
pub fn run(_global: &GlobalOpts, _cmd: TxCommand) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
