//! `bridgectl completions SHELL`: the shell's completion script on stdout.
//!
//! The script calls back into `bridgectl` (with `COMPLETE=SHELL` set) for every
//! completion, so what is offered is read when it is asked for: the subcommands and
//! flags; for `--from`, `--to` and `--key` the labels of the keystore's keys; for a
//! flow (`resume`, `status`, `replace`, `cancel`, `history`) the journal's txIds, or the
//! hashes its flows signed once `0x` is typed; for a batch (`batch resume`, `batch
//! status`) its ids; for `--profile` the config's profiles; for a chain id (`journal
//! reset-chain`, `--expect-chain-id`) the config's and the journal's chains
//! (`crate::completers`).

use clap::Args;
use clap_complete::Shell;

// Arguments of `bridgectl completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    pub shell: Shell,
}

/// Writes the completion script for `args.shell` to stdout.
pub fn run(args: CompletionsArgs) -> anyhow::Result<()> {
    let name = args.shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| anyhow::anyhow!("no completion support for {name}"))?;
    // Into memory, then written: a closed pipe (`| head -1`) is an ordinary end.
    let mut script = Vec::new();
    completer.write_registration(
        "COMPLETE",
        "bridgectl",
        "bridgectl",
        "bridgectl",
        &mut script,
    )?;
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
    Ok(())
}
