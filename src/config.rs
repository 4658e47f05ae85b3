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
//! a malformed one is an error naming the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;

/// The whole file.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Profiles by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// One profile. Every field is optional in the file; commands say which they need.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Platform API base URL.
    pub base_url: Option<String>,
    /// Web3 (webhook) API base URL.
    pub web3_url: Option<String>,
    /// File holding the web3 API token (first line).
    pub web3_token_file: Option<PathBuf>,
    /// Web3 chain path segment (`ethereum`, `polygon`, ...), for `webhook` commands.
    pub web3_chain: Option<String>,
    /// Web3 network path segment (`mainnet`, `sepolia`, ...), for `webhook` commands.
    pub web3_network: Option<String>,
    /// Main-network environment id.
    pub main_environment_id: Option<String>,
    /// Side-chain environment id.
    pub side_environment_id: Option<String>,
    /// MT symbol.
    pub main_symbol: Option<String>,
    /// ST symbol.
    pub side_symbol: Option<String>,
    /// MT decimals.
    pub main_decimals: Option<u8>,
    /// ST decimals.
    pub side_decimals: Option<u8>,
    /// MT token contract.
    pub mt_contract: Option<Address>,
    /// ST token contract.
    pub st_contract: Option<Address>,
    /// Main-network chain id.
    pub main_chain_id: Option<u64>,
    /// Side-chain chain id.
    pub side_chain_id: Option<u64>,
    /// Main-network node RPC URL.
    pub main_rpc_url: Option<String>,
    /// Side-chain node RPC URL.
    pub side_rpc_url: Option<String>,
    /// Name of the transaction action mapped to ST `redeem`.
    pub redeem_action: Option<String>,
    /// The peg, `"MT:ST"` in whole tokens (`"1:2"`: 1 MT is worth 2 ST): with it, a swap
    /// is completed only by a credit of exactly the ST its MT is worth.
    pub peg_ratio: Option<bridgectl_flow::PegRatio>,
    /// Whom a swap's ST comes from [default: the zero address, a mint].
    pub credit_source: Option<Address>,
    /// File holding the platform access token.
    pub token_file: Option<PathBuf>,
    /// Access key for the token exchange (the secret key comes from
    /// `BRIDGECTL_SECRET_KEY` or `BRIDGECTL_SECRET_KEY_FILE`, never from this file).
    pub access_key: Option<String>,
    /// Signing policy: checked before every signature.
    #[serde(default, skip_serializing_if = "bridgectl_tx::Policy::is_empty")]
    pub policy: bridgectl_tx::Policy,
    /// Chain id -> name, for summaries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chains: BTreeMap<String, String>,
    /// Address -> label, for summaries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Where this profile was looked for (not a setting: never read from or written to
    /// the file), so that a missing setting names the file and the profile.
    #[serde(skip)]
    pub origin: Origin,
}

/// Where a profile was looked for: the error of a missing setting says where to put it.
#[derive(Debug, Default, Clone)]
pub struct Origin {
    /// The profile's name (`--profile`, `BRIDGECTL_PROFILE`).
    pub name: String,
    /// The config file looked at (`--config`, `BRIDGECTL_CONFIG`, else the default
    /// path); `None` when there is no config directory to look in.
    pub file: Option<PathBuf>,
    /// Whether that file exists and was read.
    pub found: bool,
}

/// Reads the config file named by `--config`/`BRIDGECTL_CONFIG` or the default path.
/// A missing default file is an empty config; a missing explicit file is an error.
pub fn load_file(global: &GlobalOpts) -> Result<(ConfigFile, Option<PathBuf>)> {
    let (path, explicit) = match &global.config {
        Some(p) => (Some(p.clone()), true),
        None => (crate::paths::config_file(), false),
    };
    let Some(path) = path else {
        return Ok((ConfigFile::default(), None));
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let file: ConfigFile = toml::from_str(&text).map_err(|e| {
                coded(
                    Code::Usage,
                    format!(
                        "config file {} is not valid: {}",
                        path.display(),
                        toml_error(&e, &text)
                    ),
                )
            })?;
            Ok((file, Some(path)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok((ConfigFile::default(), None))
        }
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                Code::NotFound
            } else {
                Code::Failure
            };
            Err(e)
                .with_context(|| format!("cannot read config file {}", path.display()))
                .code(code)
        }
    }
}

/// A TOML parser's error on one line, `line L, column C: what`: its own text draws a
/// caret under the spot over several lines, which an error line would print with
/// literal `\n`s.
fn toml_error(e: &toml::de::Error, text: &str) -> String {
    let at = e.span().map(|span| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
        format!("line {line}, column {column}: ")
    });
    format!(
        "{}{}",
        at.unwrap_or_default(),
        e.message().trim().replace('\n', "; ")
    )
}

/// The selected profile with environment overrides applied. An unknown profile name is
/// an error only when the file has profiles or the name is not `default`.
pub fn load_profile(global: &GlobalOpts) -> Result<Profile> {
    let (file, path) = load_file(global)?;
    let mut profile = match file.profiles.get(&global.profile) {
        Some(p) => p.clone(),
        // No file, or a file without profiles: the default profile is empty. A file
        // that has profiles but not this one is an error naming the ones it has.
        None if global.profile == "default" && file.profiles.is_empty() => Profile::default(),
        None => {
            return Err(coded(
                Code::Usage,
                format!(
                    "no profile {:?} in {} (profiles: {})",
                    global.profile,
                    path.as_deref()
                        .map_or("the config".into(), |p: &Path| p.display().to_string()),
                    file.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    };
    apply_env(&mut profile)?;
    profile.origin = Origin {
        name: global.profile.clone(),
        found: path.is_some(),
        file: path.or_else(|| global.config.clone().or_else(crate::paths::config_file)),
    };
    Ok(profile)
}

fn env(name: &str) -> Option<String> {
    std::env::var(format!("BRIDGECTL_{name}"))
        .ok()
        .filter(|v| !v.is_empty())
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    match env(name) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|e| coded(Code::Usage, format!("BRIDGECTL_{name}={v:?}: {e}"))),
    }
}

fn apply_env(p: &mut Profile) -> Result<()> {
    macro_rules! over_str {
        ($($field:ident => $name:literal),* $(,)?) => {
            $(if let Some(v) = env($name) { p.$field = Some(v.into()); })*
        };
    }
    macro_rules! over_parse {
        ($($field:ident => $name:literal),* $(,)?) => {
            $(if let Some(v) = env_parse($name)? { p.$field = Some(v); })*
        };
    }
    over_str!(
        base_url => "BASE_URL",
        web3_url => "WEB3_URL",
        main_environment_id => "MAIN_ENVIRONMENT_ID",
        side_environment_id => "SIDE_ENVIRONMENT_ID",
        main_symbol => "MAIN_SYMBOL",
        side_symbol => "SIDE_SYMBOL",
        main_rpc_url => "MAIN_RPC_URL",
        side_rpc_url => "SIDE_RPC_URL",
        redeem_action => "REDEEM_ACTION",
        token_file => "TOKEN_FILE",
        access_key => "ACCESS_KEY",
    );
    over_parse!(
        main_decimals => "MAIN_DECIMALS",
        side_decimals => "SIDE_DECIMALS",
        mt_contract => "MT_CONTRACT",
        st_contract => "ST_CONTRACT",
        main_chain_id => "MAIN_CHAIN_ID",
        side_chain_id => "SIDE_CHAIN_ID",
        peg_ratio => "PEG_RATIO",
        credit_source => "CREDIT_SOURCE",
    );
    Ok(())
}

impl Profile {
    /// The name configured for `chain_id`, if any.
    pub fn chain_name(&self, chain_id: u64) -> Option<&str> {
        self.chains.get(&chain_id.to_string()).map(String::as_str)
    }

    /// A required field, or an error saying where it was looked for and how to set it:
    /// the file (or that there is none, and how to name one) and the profile.
    pub fn need<'a, T>(&self, value: &'a Option<T>, field: &str) -> Result<&'a T> {
        value.as_ref().ok_or_else(|| {
            let Origin { name, file, found } = &self.origin;
            let env = format!("BRIDGECTL_{}", field.to_ascii_uppercase());
            let message = match (file, found) {
                (Some(file), true) => format!(
                    "profile setting `{field}` is missing: profile {name:?} of {} does not \
                     set it; set it there ([profiles.{name}] {field} = ...) or as {env} \
                     (--profile or BRIDGECTL_PROFILE selects another profile)",
                    file.display()
                ),
                (file, _) => format!(
                    "profile setting `{field}` is missing: there is no config file{} \
                     (--config or BRIDGECTL_CONFIG names one, --profile or \
                     BRIDGECTL_PROFILE the profile in it, here {name:?}); set it there \
                     ([profiles.{name}] {field} = ...) or as {env}",
                    file.as_ref()
                        .map(|f| format!(" at {}", f.display()))
                        .unwrap_or_default()
                ),
            };
            coded(Code::Usage, message)
        })
    }
}

/// Renders a profile as TOML under `[profiles.<name>]` (for `sandbox --write-profile`).
pub fn render_profile(name: &str, profile: &Profile) -> Result<String> {
    let mut file = ConfigFile::default();
    file.profiles.insert(name.to_owned(), profile.clone());
    toml::to_string_pretty(&file).context("cannot render the profile as TOML")
}
