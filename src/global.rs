//! The options every command understands, wherever they stand on the command line.

use std::path::PathBuf;

use clap::Args;

// Options shared by every command.
#[derive(Debug, Args, Clone)]
pub struct GlobalOpts {
    /// Keystore directory [default: $XDG_DATA_HOME/bridgectl/keystore].
    #[arg(long, global = true, env = "BRIDGECTL_KEYSTORE", value_name = "DIR")]
    pub keystore: Option<PathBuf>,

    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Config file with profiles [default: $XDG_CONFIG_HOME/bridgectl/config.toml].
    #[arg(long, global = true, env = "BRIDGECTL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Profile of the config file to use.
    #[arg(
        long,
        global = true,
        env = "BRIDGECTL_PROFILE",
        default_value = "default"
    )]
    pub profile: String,
}
