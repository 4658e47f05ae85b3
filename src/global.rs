//! The options every command understands, wherever they stand on the command line.
//!
//! They are listed under their own heading, last and in this order, in every command's
//! help: a command's own options come first, and the four that mean the same everywhere
//! read the same everywhere.

use std::path::PathBuf;

use clap::Args;

/// The heading of the global options in every command's help.
pub const HEADING: &str = "Global options";

// Options shared by every command.
#[derive(Debug, Args, Clone)]
pub struct GlobalOpts {
    /// Profile of the config file to use.
    #[arg(
        long,
        global = true,
        env = "BRIDGECTL_PROFILE",
        hide_env_values = true,
        default_value = "default",
        help_heading = HEADING,
        display_order = 1000,
        add = crate::completers::profiles()
    )]
    pub profile: String,

    /// Config file with profiles [default: $XDG_CONFIG_HOME/bridgectl/config.toml].
    #[arg(
        long,
        global = true,
        env = "BRIDGECTL_CONFIG",
        hide_env_values = true,
        value_name = "FILE",
        help_heading = HEADING,
        display_order = 1001
    )]
    pub config: Option<PathBuf>,

    /// Keystore directory [default: $XDG_DATA_HOME/bridgectl/keystore].
    #[arg(
        long,
        global = true,
        env = "BRIDGECTL_KEYSTORE",
        hide_env_values = true,
        value_name = "DIR",
        help_heading = HEADING,
        display_order = 1002
    )]
    pub keystore: Option<PathBuf>,

    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true, help_heading = HEADING, display_order = 1003)]
    pub json: bool,
}
