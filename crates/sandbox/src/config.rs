//! [`SandboxConfig`]: everything a sandbox can be told, with defaults that work out of the
//! box, loadable from TOML (`bridgectl sandbox --sandbox-config FILE`).
//!
//! Every key is optional: a missing one takes its default (each field below says it),
//! and a section given in part (`[main]` with only `chain_id`) keeps the defaults of the
//! keys it does not name. Only an action needs its `name` and `function`.
//!
//! ```toml
//! token = "sandbox-token"
//! reserve = "1000000"          # whole MT held by the bridge to pay redemptions
//! dev_mt = "1000"              # whole MT given to the development account
//! [main]
//! chain_id = 31337
//! environment_id = "sandbox-main"
//! symbol = "MT"
//! decimals = 18
//! block_time_ms = 1000         # a block every second (0: none on a timer)
//! automine = false             # a block for every transaction as it arrives
//! confirmations = 2            # final at this depth (what a client's profile is given)
//! [side]
//! chain_id = 31338
//! decimals = 6
//! [relayer]
//! confirmations = 2            # it credits and pays only at this depth
//! [ratio]                      # `mt` whole MT are worth `st` whole ST
//! mt = 1
//! st = 2
//! [[actions]]
//! name = "redeem"
//! contract = "ST"
//! function = "redeem"
//! [faults.submit]
//! latency_ms = 200
//! error_rate = 0.1             # share of requests answered 503 before any work
//! drop_after_work = 0.1        # share answered 502 after the work was done
//! ```

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::secret::Secret;

// Parts of a config that are defined where they are used, kept reachable from here.
pub use crate::amount::Ratio;
pub use crate::contracts::ContractKind;

/// The routes fault knobs can be attached to (keys of `[faults.<route>]`).
pub const FAULT_ROUTES: &[&str] = &[
    "auth",
    "swap",
    "sign",
    "submit",
    "execute",
    "redeems",
    "nonce",
    "raw_tx",
    "balance",
    "fee_delegation",
    "managed_accounts",
    "reorg",
    "webhooks",
];

/// The whole sandbox configuration. `SandboxConfig::default()` starts a working sandbox;
/// each field says its default, which a TOML file's missing key takes too.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// The bearer token every request may carry (issued tokens work too). Default:
    /// `sandbox-token`.
    pub token: Secret,
    /// The access key for `POST /svc/v2/auth-tokens` and the web3 `POST /v1/auth-token`.
    /// Default: `sandbox-access-key`.
    pub access_key: String,
    /// The secret key that goes with `access_key`. Default: `sandbox-secret-key`.
    pub secret_key: Secret,
    /// The main chain (MT). Default: chain id 31337, environment `sandbox-main`, `MT`
    /// ("Main Token", 18 decimals), a block every second; a key a `[main]` section does
    /// not name keeps its default.
    #[serde(deserialize_with = "main_chain")]
    pub main: ChainConfig,
    /// The side chain (ST). Default: chain id 31338, environment `sandbox-side`, `ST`
    /// ("Side Token", 18 decimals), a block for every transaction; a key a `[side]`
    /// section does not name keeps its default.
    #[serde(deserialize_with = "side_chain")]
    pub side: ChainConfig,
    /// The conversion ratio fixed when the tokens were pegged. Default: 1 MT = 1 ST.
    pub ratio: Ratio,
    /// Whole MT held by the bridge account to pay redemptions (a decimal integer).
    /// Default: `1000000`.
    pub reserve: String,
    /// Whole MT given to the development account at start (a decimal integer). Default:
    /// `1000`.
    pub dev_mt: String,
    /// Whole ST minted to the development account at start (a decimal integer). Default:
    /// `100`.
    pub dev_st: String,
    /// How many managed accounts (keys held by the sandbox) exist at start. Default: 1.
    pub managed_accounts: usize,
    /// The transaction actions; empty (the default) means one per ST function, named
    /// after it.
    pub actions: Vec<ActionConfig>,
    /// The relayer (swaps and redemptions). Default: see [`RelayerConfig`].
    pub relayer: RelayerConfig,
    /// Webhook deliveries. Default: see [`WebhookConfig`].
    pub webhooks: WebhookConfig,
    /// Fault knobs per route (keys from [`FAULT_ROUTES`]). Default: none.
    pub faults: BTreeMap<String, FaultConfig>,
    /// The anvil binary; unset means `BRIDGECTL_ANVIL`, then the repository's tools
    /// folder, then `PATH` (see [`crate::anvil::find_anvil`]).
    pub anvil: Option<PathBuf>,
    /// Hostile-platform mode: tamper with every rawTx handed to an EOA (transaction
    /// actions and the raw MT transfer operation), with the next nonce the platform
    /// hands out, and with what operation 2 signs for a managed account, to prove that
    /// clients refuse it before they unlock a key or submit. Off by default.
    pub hostile: Option<Hostile>,
}

/// How a hostile platform tampers with the rawTx of an EOA transaction action or of the
/// raw MT transfer operation (the nonce kinds also with the next-nonce operation), and
/// with the transaction operation 2 signs for a managed account. Each is something a
/// client must catch by checking the rawTx, or the signed bytes, against what it asked
/// for. In operation 2, `OtherFrom` signs with another key, `MissingChainId` signs
/// without a chain id (pre-EIP-155) and `ExtraField` signs an EIP-1559 transaction.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Hostile {
    /// `from` is another account.
    OtherFrom,
    /// `chainId` is another chain's.
    OtherChainId,
    /// `to` is another contract.
    OtherContract,
    /// The calldata calls another function (same argument layout: `stake` for
    /// `redeem`, `redeem` otherwise).
    OtherSelector,
    /// The amount argument (the last word of the calldata) is one unit more.
    OtherAmount,
    /// `gasPrice` is 1000 times the node's.
    InflatedGasPrice,
    /// `gasLimit` is 30,000,000.
    InflatedGasLimit,
    /// `chainId` is missing (a pre-EIP-155 signature would be replayable anywhere).
    MissingChainId,
    /// An extra field a client does not know (`maxFeePerGas`).
    ExtraField,
    /// The nonce is 1000 above the account's next one: the signed transaction would sit
    /// unmined, and a retry with the right nonce would make two that can both be mined.
    NonceGap,
    /// The nonce is one below the account's next one: a replacement of a transaction
    /// already mined (or pending).
    NonceReplacement,
}

impl Hostile {
    /// Every kind, for tests that go through them all.
    pub const ALL: [Hostile; 11] = [
        Hostile::OtherFrom,
        Hostile::OtherChainId,
        Hostile::OtherContract,
        Hostile::OtherSelector,
        Hostile::OtherAmount,
        Hostile::InflatedGasPrice,
        Hostile::InflatedGasLimit,
        Hostile::MissingChainId,
        Hostile::ExtraField,
        Hostile::NonceGap,
        Hostile::NonceReplacement,
    ];
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            token: Secret::new("sandbox-token"),
            access_key: "sandbox-access-key".into(),
            secret_key: Secret::new("sandbox-secret-key"),
            main: ChainConfig::default_main(),
            side: ChainConfig::default_side(),
            ratio: Ratio::default(),
            reserve: "1000000".into(),
            dev_mt: "1000".into(),
            dev_st: "100".into(),
            managed_accounts: 1,
            actions: Vec::new(),
            relayer: RelayerConfig::default(),
            webhooks: WebhookConfig::default(),
            faults: BTreeMap::new(),
            anvil: None,
            hostile: None,
        }
    }
}

/// One chain of the sandbox.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// EIP-155 chain id (main and side must differ).
    pub chain_id: u64,
    /// The platform's environment id for this chain.
    pub environment_id: String,
    /// The token's symbol.
    pub symbol: String,
    /// The token's name.
    pub name: String,
    /// The token's decimals.
    pub decimals: u8,
    /// Interval mining in milliseconds: a block every so often, with or without
    /// transactions (0: none on a timer).
    pub block_time_ms: u64,
    /// Whether a block is mined for every transaction as it arrives (anvil's automine).
    /// With `block_time_ms` too, both: a transaction is mined at once, and the chain
    /// still grows on its own, so facts in it get deeper (as on a real chain).
    pub automine: bool,
    /// What final means on this chain for a client: the confirmations that
    /// the profile written for it has as `main_finality` / `side_finality`.
    /// The node also answers the `finalized` tag (two blocks behind its head, `safe` one),
    /// for clients that ask it.
    pub confirmations: u64,
}

impl ChainConfig {
    /// The main chain by default: chain id 31337, environment `sandbox-main`, `MT`
    /// ("Main Token", 18 decimals), a block every second (transactions wait for it),
    /// final at 2 confirmations.
    pub fn default_main() -> ChainConfig {
        ChainConfig {
            chain_id: 31337,
            environment_id: "sandbox-main".into(),
            symbol: "MT".into(),
            name: "Main Token".into(),
            decimals: 18,
            block_time_ms: 1000,
            automine: false,
            confirmations: 2,
        }
    }

    /// The side chain by default: chain id 31338, environment `sandbox-side`, `ST`
    /// ("Side Token", 18 decimals), a block for every transaction and one every half
    /// second besides, final at 2 confirmations.
    pub fn default_side() -> ChainConfig {
        ChainConfig {
            chain_id: 31338,
            environment_id: "sandbox-side".into(),
            symbol: "ST".into(),
            name: "Side Token".into(),
            decimals: 18,
            block_time_ms: 500,
            automine: true,
            confirmations: 2,
        }
    }
}

/// A `[main]` or `[side]` section as written: any of [`ChainConfig`]'s keys, each
/// optional, laid over that chain's defaults (the two chains' defaults differ, so
/// serde's field defaults alone cannot say it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainSection {
    chain_id: Option<u64>,
    environment_id: Option<String>,
    symbol: Option<String>,
    name: Option<String>,
    decimals: Option<u8>,
    block_time_ms: Option<u64>,
    automine: Option<bool>,
    confirmations: Option<u64>,
}

impl ChainSection {
    fn over(self, base: ChainConfig) -> ChainConfig {
        ChainConfig {
            chain_id: self.chain_id.unwrap_or(base.chain_id),
            environment_id: self.environment_id.unwrap_or(base.environment_id),
            symbol: self.symbol.unwrap_or(base.symbol),
            name: self.name.unwrap_or(base.name),
            decimals: self.decimals.unwrap_or(base.decimals),
            block_time_ms: self.block_time_ms.unwrap_or(base.block_time_ms),
            automine: self.automine.unwrap_or(base.automine),
            confirmations: self.confirmations.unwrap_or(base.confirmations).max(1),
        }
    }
}

fn main_chain<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ChainConfig, D::Error> {
    Ok(ChainSection::deserialize(d)?.over(ChainConfig::default_main()))
}

fn side_chain<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ChainConfig, D::Error> {
    Ok(ChainSection::deserialize(d)?.over(ChainConfig::default_side()))
}

/// A transaction action: a contract function mapped to `POST /tx/v2.0/transactions/{name}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionConfig {
    /// Action name, the last path segment; unique.
    pub name: String,
    /// The contract (`"ST"` or `"MT"`).
    #[serde(default = "default_contract")]
    pub contract: ContractKind,
    /// The Solidity function name.
    pub function: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
}

fn default_contract() -> ContractKind {
    ContractKind::St
}

/// Relayer timing, and how careful it is.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelayerConfig {
    /// How often the relayer looks at both chains, in milliseconds. Default: 100.
    pub poll_ms: u64,
    /// The confirmations an MT transfer to a swap address (on the main chain) or an ST
    /// `Redeem` (on the side chain) must have before the relayer credits or pays for it,
    /// as a careful bridge waits: a reorganisation shallower than this takes back nothing
    /// it acted on. Its own credits and payouts it watches to the same depth, and sends
    /// again any that a reorganisation took back. Default: 2.
    pub confirmations: u64,
}

impl Default for RelayerConfig {
    fn default() -> Self {
        RelayerConfig {
            poll_ms: 100,
            confirmations: 2,
        }
    }
}

/// Webhook delivery policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookConfig {
    /// First retry delay after a failed delivery, doubled on each further failure.
    /// Default: 500.
    pub retry_base_ms: u64,
    /// Upper bound of the retry delay. Default: 30000.
    pub retry_max_ms: u64,
    /// A webhook whose deliveries fail this many times in a row is removed without notice.
    /// Default: 10.
    pub remove_after_failures: u32,
    /// Time allowed to the listener per POST. Default: 5000.
    pub timeout_ms: u64,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            retry_base_ms: 500,
            retry_max_ms: 30_000,
            remove_after_failures: 10,
            timeout_ms: 5_000,
        }
    }
}

/// Faults injected on one route, on purpose, so clients' recovery is tested for real.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Added latency before the request is handled.
    pub latency_ms: u64,
    /// Share (0..=1) of requests answered `503 SERVICE_UNAVAILABLE` before any work.
    pub error_rate: f64,
    /// Share (0..=1) of requests (submit and execute only) whose work is done and whose
    /// answer is then replaced by `502 BAD_GATEWAY`, as when a gateway loses the response.
    pub drop_after_work: f64,
    /// Added latency in the middle of the work (submit only: after the node took the
    /// transaction, before it is linked to its transaction action): the moment a client
    /// that disconnects must not cut the submission short.
    pub latency_mid_work_ms: u64,
    /// Requests wait, already in the request log and before any work, until the route's
    /// hold is lifted (a `set_fault` without `hold`): a test can act at the exact moment
    /// a request has reached the platform, without guessing a latency.
    pub hold: bool,
}

impl SandboxConfig {
    /// Loads and validates a TOML file.
    pub fn from_file(path: &Path) -> Result<SandboxConfig, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadConfig {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// Parses and validates TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &Path) -> Result<SandboxConfig, Error> {
        let config: SandboxConfig = toml::from_str(text).map_err(|e| {
            // The parser's own text is several lines (a caret under the spot): the error
            // says where on one line, so that it prints as one.
            let at = e.span().map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
                (line, column)
            });
            Error::ParseConfig {
                path: origin.to_owned(),
                at,
                message: e.message().trim().replace('\n', "; "),
            }
        })?;
        config.validate()?;
        Ok(config)
    }

    /// The actions in force: the configured ones, or one per ST function.
    pub fn effective_actions(&self) -> Vec<ActionConfig> {
        if !self.actions.is_empty() {
            return self.actions.clone();
        }
        crate::contracts::ST_FUNCTIONS
            .iter()
            .map(|f| ActionConfig {
                name: (*f).to_owned(),
                contract: ContractKind::St,
                function: (*f).to_owned(),
                description: None,
            })
            .collect()
    }

    /// Checks everything that parsing alone cannot.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if self.main.chain_id == self.side.chain_id {
            return bad(format!(
                "main.chain_id and side.chain_id must differ (both {})",
                self.main.chain_id
            ));
        }
        if self.main.environment_id == self.side.environment_id {
            return bad("main.environment_id and side.environment_id must differ".into());
        }
        for (which, c) in [("main", &self.main), ("side", &self.side)] {
            if c.decimals > 36 {
                return bad(format!(
                    "{which}.decimals: expected 0..=36, found {}",
                    c.decimals
                ));
            }
            if c.symbol.is_empty() || !c.symbol.chars().all(|ch| ch.is_ascii_alphanumeric()) {
                return bad(format!(
                    "{which}.symbol: expected letters and digits, found {:?}",
                    c.symbol
                ));
            }
        }
        if self.ratio.mt == 0 || self.ratio.st == 0 {
            return bad(format!(
                "ratio: both sides must be positive, found mt = {}, st = {}",
                self.ratio.mt, self.ratio.st
            ));
        }
        for (field, value) in [
            ("reserve", &self.reserve),
            ("dev_mt", &self.dev_mt),
            ("dev_st", &self.dev_st),
        ] {
            crate::amount::whole_tokens(value, 0)
                .map_err(|e| Error::Config(format!("{field}: {e}")))?;
        }
        if self.token.expose_secret().is_empty() {
            return bad("token: must not be empty".into());
        }
        let mut seen = HashSet::new();
        for a in &self.actions {
            if a.name.is_empty()
                || !a
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return bad(format!(
                    "actions: name {:?} must be letters, digits, '-' or '_' (it is a path segment)",
                    a.name
                ));
            }
            if !seen.insert(a.name.as_str()) {
                return bad(format!(
                    "actions: duplicate action name {:?} (names are unique per account)",
                    a.name
                ));
            }
            let abi = crate::contracts::abi(a.contract);
            if abi.function(&a.function).is_none_or(|f| f.is_empty()) {
                return bad(format!(
                    "actions: {:?} maps function {:?}, which the {:?} contract does not have",
                    a.name, a.function, a.contract
                ));
            }
        }
        for (route, f) in &self.faults {
            if !FAULT_ROUTES.contains(&route.as_str()) {
                return bad(format!(
                    "faults.{route}: unknown route; expected one of {}",
                    FAULT_ROUTES.join(", ")
                ));
            }
            for (name, v) in [
                ("error_rate", f.error_rate),
                ("drop_after_work", f.drop_after_work),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return bad(format!("faults.{route}.{name}: expected 0..=1, found {v}"));
                }
            }
        }
        if self.webhooks.remove_after_failures == 0 {
            return bad("webhooks.remove_after_failures: must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<SandboxConfig, Error> {
        SandboxConfig::from_toml(text, Path::new("<test>"))
    }

    #[test]
    fn default_is_valid_and_has_the_ten_actions() {
        let c = SandboxConfig::default();
        c.validate().expect("default valid");
        let names: Vec<_> = c.effective_actions().into_iter().map(|a| a.name).collect();
        assert_eq!(names.len(), 10);
        assert!(names.contains(&"redeem".to_owned()));
        assert!(names.contains(&"transferWithFee".to_owned()));
    }

    #[test]
    fn duplicate_action_names_are_refused() {
        let err = load(
            "[[actions]]\nname = \"r\"\nfunction = \"redeem\"\n[[actions]]\nname = \"r\"\nfunction = \"stake\"\n",
        )
        .expect_err("duplicate");
        assert!(
            err.to_string().contains("duplicate action name \"r\""),
            "{err}"
        );
    }

    #[test]
    fn unknown_function_and_route_and_field_are_refused() {
        let err = load("[[actions]]\nname = \"x\"\nfunction = \"mint2\"\n").expect_err("fn");
        assert!(err.to_string().contains("\"mint2\""), "{err}");
        let err = load("[faults.nope]\nlatency_ms = 1\n").expect_err("route");
        assert!(err.to_string().contains("faults.nope"), "{err}");
        let err = load("tokn = \"x\"\n").expect_err("field");
        assert!(
            format!("{:#}", anyhow_like(&err)).contains("tokn"),
            "{err:?}"
        );
        let err = load("[ratio]\nmt = 0\nst = 1\n").expect_err("ratio");
        assert!(err.to_string().contains("ratio"), "{err}");
    }

    fn anyhow_like(e: &Error) -> String {
        let mut s = e.to_string();
        let mut cur: Option<&dyn std::error::Error> = std::error::Error::source(e);
        while let Some(c) = cur {
            s.push_str(": ");
            s.push_str(&c.to_string());
            cur = c.source();
        }
        s
    }

    /// The docs say every key is optional: a section given in part keeps the defaults
    /// of the keys it does not name, each chain its own.
    #[test]
    fn a_partial_config_is_laid_over_the_defaults() {
        let c = load("[main]\nchain_id = 41337\n[side]\ndecimals = 6\n[ratio]\nst = 2\n")
            .expect("valid");
        let (main, side) = (ChainConfig::default_main(), ChainConfig::default_side());
        assert_eq!(c.main.chain_id, 41337);
        assert_eq!(c.main.environment_id, main.environment_id);
        assert_eq!(c.main.symbol, "MT");
        assert_eq!(c.main.name, main.name);
        assert_eq!(c.main.decimals, 18);
        assert_eq!(c.main.block_time_ms, main.block_time_ms);
        assert_eq!(c.side.chain_id, side.chain_id);
        assert_eq!(c.side.environment_id, side.environment_id);
        assert_eq!(c.side.symbol, "ST");
        assert_eq!(c.side.decimals, 6);
        assert_eq!(c.side.block_time_ms, side.block_time_ms);
        assert_eq!(c.ratio, Ratio { mt: 1, st: 2 });
        let c = load("[faults.submit]\nlatency_ms = 5\n[webhooks]\ntimeout_ms = 9\n[relayer]\n")
            .expect("valid");
        assert_eq!(c.faults["submit"].latency_ms, 5);
        assert_eq!(c.webhooks.timeout_ms, 9);
        assert_eq!(
            c.webhooks.retry_max_ms,
            WebhookConfig::default().retry_max_ms
        );
        assert_eq!(c.relayer.poll_ms, RelayerConfig::default().poll_ms);
        // Unknown keys are still refused, in a section as at the top.
        let err = load("[main]\nchainid = 1\n").expect_err("unknown key");
        assert!(err.to_string().contains("chainid"), "{err}");
    }

    /// An error of the file prints as one line, naming the file, where, and what.
    #[test]
    fn a_parse_error_is_one_line_with_its_place() {
        let err = load("token = \"t\"\n[main]\nchain_id = \"x\"\n").expect_err("bad type");
        let text = anyhow_like(&err);
        assert!(!text.contains('\n'), "{text:?}");
        assert!(
            text.starts_with("invalid sandbox config <test>: line 3, column 12: "),
            "{text}"
        );
        assert!(text.contains("invalid type"), "{text}");
        let err = load("[[actions]]\nname = \"r\"\n").expect_err("no function");
        let text = anyhow_like(&err);
        assert!(!text.contains('\n'), "{text:?}");
        assert!(text.contains("missing field `function`"), "{text}");
    }

    #[test]
    fn toml_overrides_apply() {
        let c = load("dev_mt = \"5\"\n[side]\nchain_id = 9\nenvironment_id = \"s\"\nsymbol = \"XST\"\nname = \"X\"\ndecimals = 6\nblock_time_ms = 0\n[ratio]\nmt = 1\nst = 2\n")
            .expect("valid");
        assert_eq!(c.side.decimals, 6);
        assert_eq!(c.ratio, Ratio { mt: 1, st: 2 });
        assert_eq!(c.dev_mt, "5");
        assert_eq!(c.main.chain_id, 31337);
    }
}
