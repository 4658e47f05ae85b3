//! A profile: the TOML file bridgectl's CLI reads (its config file, one profile of it), read the
//! same way here, so a wallet configured like the CLI gets the same [`Bridge`], platform
//! client and [`Policy`] from it, refused with the same messages.
//!
//! ```toml
//! [profiles.default]
//! base_url = "https://platform.example"
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
//! main_finality = "finalized"                  # or "safe", or a number of confirmations
//! side_finality = 12                           # default: "finalized" if the node answers it, else 64
//! redeem_action = "redeem"                     # the default
//! peg_ratio = "1:1"                            # MT:ST; a swap's credit is checked by it
//! credit_source = "0x0000000000000000000000000000000000000000"   # a mint (the default)
//! token_file = "/path/to/token"                # the CLI's; optional
//! state_url = "postgres://desk@db.example/bridgectl"   # shared by several signer hosts; optional
//!
//! [profiles.default.policy]                    # checked before every signature
//! max-gas-price = 100000000000                 # wei
//! max-fee = "10000000000000000"                # wei, gasLimit x gasPrice
//!
//! [profiles.default.chains]                    # names shown in summaries
//! 617317 = "platform testnet"
//!
//! [profiles.default.labels]                    # address labels shown in summaries
//! "0x0000000000000000000000000000000000000001" = "treasury"
//! ```
//!
//! [`Profile::load`] reads a file and picks a profile; [`Profile::with_env`] applies
//! the `BRIDGECTL_<FIELD>` overrides the CLI applies (`BRIDGECTL_BASE_URL`,
//! `BRIDGECTL_SIDE_CHAIN_ID`, ...); [`Profile::bridge`], [`Profile::client`] and
//! [`Profile::trust_root`] give the parts [`crate::Flows::builder`] takes. An unknown
//! field is refused (a typo is not a default), and a missing setting names the file,
//! the profile and how to set it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use bridgectl_tx::Policy;
use bridgectl_tx::request::Token;
use serde::{Deserialize, Serialize};

use crate::client::{AccessToken, ClientOptions, PlatformClient};
use crate::flows::{Bridge, ChainSide, PegRatio, SwapCredit};

/// The whole file: profiles by name.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Profiles by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// One profile. Every field is optional in the file; what a flow needs is asked for by
/// [`Profile::need`] (and so by [`Profile::bridge`] and [`Profile::client`]).
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Platform API base URL.
    pub base_url: Option<String>,
    /// Web3 (webhook) API base URL.
    pub web3_url: Option<String>,
    /// File holding the web3 API token (first line).
    pub web3_token_file: Option<PathBuf>,
    /// Web3 chain path segment (`ethereum`, `polygon`, ...), for webhooks.
    pub web3_chain: Option<String>,
    /// Web3 network path segment (`mainnet`, `sepolia`, ...), for webhooks.
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
    /// What final means on the main chain ([`crate::finality`]): `"finalized"`, `"safe"`
    /// or a number of confirmations [default: `finalized` where the node answers it, else
    /// [`crate::finality::DEFAULT_CONFIRMATIONS`]].
    pub main_finality: Option<crate::Finality>,
    /// What final means on the side chain (as `main_finality`).
    pub side_finality: Option<crate::Finality>,
    /// Name of the transaction action mapped to ST `redeem` [default: `redeem`].
    pub redeem_action: Option<String>,
    /// The peg, `"MT:ST"` in whole tokens (`"1:2"`: 1 MT is worth 2 ST): with it, a swap
    /// is completed only by a credit of exactly the ST its MT is worth.
    pub peg_ratio: Option<PegRatio>,
    /// Whom a swap's ST comes from [default: the zero address, a mint].
    pub credit_source: Option<Address>,
    /// File holding the platform access token (the CLI reads it).
    pub token_file: Option<PathBuf>,
    /// Access key for the CLI's token exchange (its secret key is never in this file).
    pub access_key: Option<String>,
    /// Where the journal and the signing log live when several signer hosts share them:
    /// a `postgres://` URL [default: this machine's SQLite files]. A password is better
    /// left to the environment (`BRIDGECTL_STATE_URL`) than written here.
    pub state_url: Option<String>,
    /// Signing policy: checked before every signature.
    #[serde(default, skip_serializing_if = "Policy::is_empty")]
    pub policy: Policy,
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
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The profile's name.
    pub name: String,
    /// The config file looked at; `None` when there was none to look in.
    pub file: Option<PathBuf>,
    /// Whether that file exists and was read.
    pub found: bool,
}

/// Why a profile could not be read or lacks what is asked of it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The file could not be read (a missing file too: [`std::io::ErrorKind::NotFound`]).
    #[error("cannot read config file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },

    /// The file is not a config file: TOML that does not parse, an unknown field, a
    /// value of the wrong type. `reason` names the line and column.
    #[error("config file {} is not valid: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where and what, on one line.
        reason: String,
    },

    /// The file has profiles, and not this one.
    #[error(
        "no profile {name:?} in {} (profiles: {})",
        file.as_deref().map_or("the config".into(), |p| p.display().to_string()),
        profiles.join(", ")
    )]
    NoSuchProfile {
        /// The name asked for.
        name: String,
        /// The file.
        file: Option<PathBuf>,
        /// The profiles it has.
        profiles: Vec<String>,
    },

    /// A setting a flow needs is not set.
    #[error("{}", missing(field, origin))]
    Missing {
        /// The setting (`base_url`).
        field: String,
        /// Where it was looked for.
        origin: Origin,
    },

    /// The platform client could not be made from `base_url` ([`Profile::client`]).
    #[error("cannot make the platform client")]
    Client(#[source] Box<crate::Error>),

    /// A `BRIDGECTL_<FIELD>` override that does not parse.
    #[error("{name}={value:?}: {reason}")]
    Env {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// Why it does not parse.
        reason: String,
    },
}

fn missing(field: &str, origin: &Origin) -> String {
    let Origin { name, file, found } = origin;
    let env = format!("BRIDGECTL_{}", field.to_ascii_uppercase());
    match (file, found) {
        (Some(file), true) => format!(
            "profile setting `{field}` is missing: profile {name:?} of {} does not set it; \
             set it there ([profiles.{name}] {field} = ...) or as {env}",
            file.display()
        ),
        (file, _) => format!(
            "profile setting `{field}` is missing: there is no config file{}; set it in one \
             ([profiles.{name}] {field} = ...) or as {env}",
            file.as_ref()
                .map(|f| format!(" at {}", f.display()))
                .unwrap_or_default()
        ),
    }
}

impl ConfigFile {
    /// Parses `text`, the contents of `path` (named in errors).
    pub fn parse(text: &str, path: &Path) -> Result<ConfigFile, ProfileError> {
        toml::from_str(text).map_err(|e| ProfileError::Invalid {
            path: path.to_owned(),
            reason: toml_error(&e, text),
        })
    }

    /// Reads and parses the file at `path`; a missing file is [`ProfileError::Read`].
    pub fn read(path: &Path) -> Result<ConfigFile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_owned(),
            source,
        })?;
        ConfigFile::parse(&text, path)
    }

    /// Profile `name` of this file, read from `path` (`None`: no file was found there,
    /// or there was nowhere to look). A file without profiles (or none at all) has an
    /// empty `default` profile; a file that has profiles but not `name` is
    /// [`ProfileError::NoSuchProfile`].
    pub fn profile(&self, name: &str, path: Option<&Path>) -> Result<Profile, ProfileError> {
        let mut profile = match self.profiles.get(name) {
            Some(p) => p.clone(),
            None if name == "default" && self.profiles.is_empty() => Profile::default(),
            None => {
                return Err(ProfileError::NoSuchProfile {
                    name: name.to_owned(),
                    file: path.map(Path::to_owned),
                    profiles: self.profiles.keys().cloned().collect(),
                });
            }
        };
        profile.origin = Origin {
            name: name.to_owned(),
            file: path.map(Path::to_owned),
            found: path.is_some(),
        };
        Ok(profile)
    }

    /// The file as TOML, a profile's settings under `[profiles.<name>]`.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string_pretty(self)
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

impl Profile {
    /// Profile `name` of the config file at `path`, as the CLI reads it (without the
    /// environment's overrides: [`Profile::with_env`]).
    pub fn load(path: impl AsRef<Path>, name: &str) -> Result<Profile, ProfileError> {
        let path = path.as_ref();
        ConfigFile::read(path)?.profile(name, Some(path))
    }

    /// This profile with the `BRIDGECTL_<FIELD>` environment overrides applied, as the
    /// CLI applies them (`BRIDGECTL_BASE_URL`, `BRIDGECTL_SIDE_CHAIN_ID`, ...; an empty
    /// variable is unset). One that does not parse is [`ProfileError::Env`].
    pub fn with_env(mut self) -> Result<Profile, ProfileError> {
        macro_rules! over_str {
            ($($field:ident => $name:literal),* $(,)?) => {
                $(if let Some(v) = env($name) { self.$field = Some(v.into()); })*
            };
        }
        macro_rules! over_parse {
            ($($field:ident => $name:literal),* $(,)?) => {
                $(if let Some(v) = env_parse($name)? { self.$field = Some(v); })*
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
            state_url => "STATE_URL",
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
            main_finality => "MAIN_FINALITY",
            side_finality => "SIDE_FINALITY",
        );
        Ok(self)
    }

    /// The name configured for `chain_id`, if any.
    pub fn chain_name(&self, chain_id: u64) -> Option<&str> {
        self.chains.get(&chain_id.to_string()).map(String::as_str)
    }

    /// A required setting, or [`ProfileError::Missing`] saying where it was looked for
    /// and how to set it.
    pub fn need<'a, T>(&self, value: &'a Option<T>, field: &str) -> Result<&'a T, ProfileError> {
        value.as_ref().ok_or_else(|| ProfileError::Missing {
            field: field.to_owned(),
            origin: self.origin.clone(),
        })
    }

    /// The bridge description: both chains (environment, token, decimals, contract,
    /// chain id, node URL), the redeem action and how a swap's credit is told apart. The
    /// first missing setting is the error.
    pub fn bridge(&self) -> Result<Bridge, ProfileError> {
        Ok(Bridge {
            main: ChainSide {
                environment_id: self
                    .need(&self.main_environment_id, "main_environment_id")?
                    .clone(),
                symbol: self.need(&self.main_symbol, "main_symbol")?.clone(),
                decimals: *self.need(&self.main_decimals, "main_decimals")?,
                token: *self.need(&self.mt_contract, "mt_contract")?,
                chain_id: *self.need(&self.main_chain_id, "main_chain_id")?,
                rpc_url: self.main_rpc_url.clone(),
                finality: self.main_finality,
            },
            side: ChainSide {
                environment_id: self
                    .need(&self.side_environment_id, "side_environment_id")?
                    .clone(),
                symbol: self.need(&self.side_symbol, "side_symbol")?.clone(),
                decimals: *self.need(&self.side_decimals, "side_decimals")?,
                token: *self.need(&self.st_contract, "st_contract")?,
                chain_id: *self.need(&self.side_chain_id, "side_chain_id")?,
                rpc_url: self.side_rpc_url.clone(),
                finality: self.side_finality,
            },
            redeem_action: self
                .redeem_action
                .clone()
                .unwrap_or_else(|| "redeem".into()),
            swap_credit: SwapCredit {
                ratio: self.peg_ratio,
                source: self.credit_source.unwrap_or_default(),
            },
        })
    }

    /// A platform client for `base_url` with `token` and `options`
    /// ([`ClientOptions::default`] unless you tune retries and timeouts).
    pub fn client(
        &self,
        token: AccessToken,
        options: ClientOptions,
    ) -> Result<PlatformClient, ProfileError> {
        let base_url = self.need(&self.base_url, "base_url")?;
        PlatformClient::new(base_url, token, options).map_err(|e| ProfileError::Client(Box::new(e)))
    }

    /// The policy to sign by: `flags` (a caller's own caps and expectations for this
    /// run; [`Policy::default`] for none) over the profile's `[policy]`, with the chains
    /// and contracts the profile names (and their tokens) as the trusted facts. The
    /// profile's `[chains]` only names chains for summaries: it trusts none.
    pub fn trust_root(&self, flags: Policy) -> Policy {
        let mut policy = flags.or(&self.policy);
        let sides = [
            (
                self.main_chain_id,
                self.mt_contract,
                &self.main_symbol,
                self.main_decimals,
            ),
            (
                self.side_chain_id,
                self.st_contract,
                &self.side_symbol,
                self.side_decimals,
            ),
        ];
        for (chain, contract, symbol, decimals) in sides {
            let Some(chain) = chain else { continue };
            policy
                .trusted
                .chain(chain, self.chain_name(chain).map(str::to_owned));
            if let Some(address) = contract {
                let token = match (symbol, decimals) {
                    (Some(symbol), Some(decimals)) => Some(Token {
                        symbol: symbol.clone(),
                        decimals,
                    }),
                    _ => None,
                };
                policy.trusted.contract(address, chain, token);
            }
        }
        policy
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(format!("BRIDGECTL_{name}"))
        .ok()
        .filter(|v| !v.is_empty())
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Result<Option<T>, ProfileError>
where
    T::Err: std::fmt::Display,
{
    match env(name) {
        None => Ok(None),
        Some(value) => value.parse::<T>().map(Some).map_err(|e| ProfileError::Env {
            name: format!("BRIDGECTL_{name}"),
            reason: e.to_string(),
            value,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[profiles.work]
base_url = "http://127.0.0.1:9"
main_environment_id = "m"
side_environment_id = "s"
main_symbol = "MT"
side_symbol = "ST"
main_decimals = 18
side_decimals = 6
mt_contract = "0x1111111111111111111111111111111111111111"
st_contract = "0x2222222222222222222222222222222222222222"
main_chain_id = 31337
side_chain_id = 31338
peg_ratio = "1:2"

[profiles.work.policy]
max-gas-price = 7

[profiles.work.chains]
31338 = "side"
"#;

    #[test]
    fn a_profile_gives_the_bridge_and_the_trust_root() {
        let file = ConfigFile::parse(FILE, Path::new("c.toml")).expect("parses");
        let p = file
            .profile("work", Some(Path::new("c.toml")))
            .expect("work");
        let bridge = p.bridge().expect("complete");
        assert_eq!(bridge.side.decimals, 6);
        assert_eq!(bridge.redeem_action, "redeem");
        assert!(bridge.swap_credit.ratio.is_some());
        let policy = p.trust_root(Policy::default());
        assert_eq!(policy.max_gas_price, Some(7));
        assert_eq!(
            policy.trusted.chains.get(&31338),
            Some(&Some("side".into()))
        );
        assert!(policy.trusted.find(bridge.main.token, 31337).is_some());
    }

    #[test]
    fn what_is_wrong_is_named_where_it_is() {
        let e = ConfigFile::parse("[profiles.w]\nbase_url = 7\n", Path::new("bad.toml"))
            .expect_err("a number");
        assert!(
            e.to_string()
                .starts_with("config file bad.toml is not valid: line 2, column 12: invalid type"),
            "{e}"
        );
        let typo = ConfigFile::parse("[profiles.w]\nbase_ulr = \"x\"\n", Path::new("t.toml"));
        assert!(matches!(typo, Err(ProfileError::Invalid { .. })));
        let file = ConfigFile::parse(FILE, Path::new("c.toml")).expect("parses");
        let e = file
            .profile("nope", Some(Path::new("c.toml")))
            .expect_err("no");
        assert_eq!(
            e.to_string(),
            "no profile \"nope\" in c.toml (profiles: work)"
        );
        let empty = ConfigFile::default()
            .profile("default", None)
            .expect("empty");
        let e = empty.bridge().expect_err("nothing set");
        assert!(
            e.to_string().starts_with(
                "profile setting `main_environment_id` is missing: there is no config file; \
                 set it in one ([profiles.default] main_environment_id = ...) or as \
                 BRIDGECTL_MAIN_ENVIRONMENT_ID"
            ),
            "{e}"
        );
    }
}
