//! Options the `batch` subcommands share: the journal of those that read or write it
//! alone (`status`, `abandon`: no platform, no key).

use std::path::PathBuf;

use clap::Args;

// The journal of the subcommands that read or write it alone (no platform, no key).
#[derive(Debug, Args)]
pub struct JournalOpt {
    /// Journal database [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(
        long,
        env = "BRIDGECTL_JOURNAL",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub journal: Option<PathBuf>,
}
