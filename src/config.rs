//! The config file: named profiles of platform URLs, environments, tokens, chains,
//! node URLs, labels and a signing policy, with `BRIDGECTL_*` environment overrides.
//!
//! ```toml
//! [profiles.default]
//! base_url = "https://platform.example"
//! web3_url = "https://web3.example"
//! main_environment_id = "main-env"
//! side_environment_id = "side-env"
//! main_symbol = "MT"
//! side_symbol = "ST"
//! main_decimals = 18
//! side_decimals = 18
//! mt_contract = "0x..."
//! st_contract = "0x..."
//! main_chain_id = 1
//! side_chain_id = 617317
//! main_rpc_url = "https://main-node.example"   # optional
//! side_rpc_url = "https://side-node.example"   # optional
//! redeem_action = "redeem"
//! peg_ratio = "1:1"                            # MT:ST; a swap's credit is checked by it
//! credit_source = "0x0000000000000000000000000000000000000000"   # a mint (the default)
//! token_file = "/path/to/token"                 # optional, see `bridgectl --help`
//!
//! [profiles.default.policy]                     # checked before every signature
//! max-gas-price = 100000000000                  # wei
//! max-fee = "10000000000000000"                 # wei, gasLimit x gasPrice
//!
//! [profiles.default.chains]                     # names shown in summaries
//! 617317 = "platform testnet"
//!
//! [profiles.default.labels]                     # address labels shown in summaries
//! "0x0000000000000000000000000000000000000001" = "treasury"
//! ```
//!
//! Every scalar field can be overridden by `BRIDGECTL_<FIELD>` in upper case, e.g.
//! `BRIDGECTL_BASE_URL`, `BRIDGECTL_SIDE_CHAIN_ID`. A missing file is an empty config;
//! a malformed one is an error naming the file. The file is read, checked and turned
//! into a bridge description and a policy by `bridgectl_flow::profile` (what a wallet
//! configured like the CLI calls too); here are the CLI's paths and its exit codes.

use std::path::PathBuf;

use anyhow::Result;
use bridgectl_flow::profile::ProfileError;
pub use bridgectl_flow::profile::{ConfigFile, Profile};

use crate::global::GlobalOpts;

/// Reads the config file named by `--config`/`BRIDGECTL_CONFIG` or the default path
/// (`bridgectl_flow::profile` parses it, as a wallet's own loader does). A missing default
/// file is an empty config; a missing explicit file is an error.
pub fn load_file(global: &GlobalOpts) -> Result<(ConfigFile, Option<PathBuf>)> {
    let (path, explicit) = match &global.config {
        Some(p) => (Some(p.clone()), true),
        None => (crate::paths::config_file(), false),
    };
    let Some(path) = path else {
        return Ok((ConfigFile::default(), None));
    };
    match ConfigFile::read(&path) {
        Ok(file) => Ok((file, Some(path))),
        Err(ProfileError::Read { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound && !explicit =>
        {
            Ok((ConfigFile::default(), None))
        }
        Err(e) => Err(e.into()),
    }
}

/// The selected profile with environment overrides applied. An unknown profile name is
/// an error only when the file has profiles or the name is not `default`.
pub fn load_profile(global: &GlobalOpts) -> Result<Profile> {
    let (file, path) = load_file(global)?;
    let mut profile = file.profile(&global.profile, path.as_deref())?.with_env()?;
    // A missing setting names the file looked for, found or not.
    profile.origin.file = path.or_else(|| global.config.clone().or_else(crate::paths::config_file));
    Ok(profile)
}

/// Renders a profile as TOML under `[profiles.<name>]` (for `sandbox --write-profile`).
pub fn render_profile(name: &str, profile: &Profile) -> Result<String> {
    let mut file = ConfigFile::default();
    file.profiles.insert(name.to_owned(), profile.clone());
    Ok(file.to_toml()?)
}
