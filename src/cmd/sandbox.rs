//! `bridgectl sandbox` (stub, being written).
use clap::Args;

use crate::cli::GlobalOpts;

/// Arguments of `bridgectl sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {}

/// Runs the sandbox until Ctrl-C.
pub fn run(_global: &GlobalOpts, _args: SandboxArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
