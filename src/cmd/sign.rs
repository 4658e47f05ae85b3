//! `bridgectl sign` (stub, being written).
use clap::Args;

use crate::cli::GlobalOpts;
use crate::exit::Code;

/// Arguments of `bridgectl sign`.
#[derive(Debug, Args)]
pub struct SignArgs {}

/// Runs `bridgectl sign`.
pub fn run(_global: &GlobalOpts, _args: SignArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}

/// Exit code for a tx error.
pub fn exit_code_for(_err: &bridgectl_tx::Error) -> Code {
    Code::Refused
}
