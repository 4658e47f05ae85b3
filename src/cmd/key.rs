//! `bridgectl key ...` (stub, being written).
use clap::Subcommand;

use crate::cli::GlobalOpts;
use crate::exit::Code;

/// Key management commands.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// List keys.
    List,
}

/// Runs a key command.
pub fn run(_global: &GlobalOpts, _cmd: KeyCommand) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}

/// Exit code for a keystore error.
pub fn exit_code_for(_err: &bridgectl_keystore::Error) -> Code {
    Code::Failure
}
