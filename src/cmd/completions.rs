//! `bridgectl completions SHELL`: shell completion scripts on stdout.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Arguments of `bridgectl completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    pub shell: Shell,
}

/// Writes the completion script for `args.shell` to stdout.
pub fn run(args: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = crate::cli::Cli::command();
    // Generated into memory, then written: clap_complete panics on a failed write, and a
    // closed pipe (`| head -1`) is an ordinary end, not a crash.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "bridgectl", &mut script);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
    Ok(())
}
