//! Option groups shared by several commands, and the parsers of their values. The
//! policy flags (caps and expectations) are in `trust.rs`, beside the trust root they
//! feed.

use std::path::PathBuf;

use alloy_primitives::U256;
use anyhow::{Context as _, Result};
use bridgectl_flow::{GasSource, NonceSource, Repricing};
use clap::{Args, ValueEnum};

use crate::exit::{Code, WithCode, coded};

// Where a passphrase comes from, in the documented order: this flag,
// `BRIDGECTL_PASSPHRASE_FILE`, `BRIDGECTL_PASSPHRASE`, then an interactive prompt.
#[derive(Debug, Args, Clone, Default)]
pub struct PassphraseOpts {
    /// Read the passphrase from the first line of this file (keep it 0600).
    #[arg(long, value_name = "FILE", help_heading = "Passphrase")]
    pub passphrase_file: Option<PathBuf>,
}

// Options of every command that talks to the platform (`submit` too, which never
// signs).
#[derive(Debug, Args, Clone, Default)]
pub struct PlatformOpts {
    /// File holding the platform access token [default: the profile's token_file;
    /// BRIDGECTL_ACCESS_TOKEN, when set, is used instead of either].
    #[arg(
        long,
        env = "BRIDGECTL_TOKEN_FILE",
        hide_env_values = true,
        value_name = "FILE",
        help_heading = "Platform"
    )]
    pub token_file: Option<PathBuf>,

    #[command(flatten)]
    pub journal: JournalOpt,
}

// The journal: flows, and the nonces signed on this machine (never signed again). One
// flag for every command that reads or writes it, the platform's or alone.
#[derive(Debug, Args, Clone, Default)]
pub struct JournalOpt {
    /// Journal database: flows, and the nonces signed here [default:
    /// $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(
        long,
        env = "BRIDGECTL_JOURNAL",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub journal: Option<PathBuf>,
}

impl JournalOpt {
    /// Opens the journal this flag names, or the one `BRIDGECTL_STATE_URL` names, or the
    /// default one (see [`open_journal`]).
    pub fn open(&self) -> Result<bridgectl_flow::Journal> {
        open_journal(self.journal.as_deref())
    }
}

/// Opens the journal named by `--journal` (a file, or a `postgres://` URL), else the
/// PostgreSQL database `BRIDGECTL_STATE_URL` names (a journal several signer hosts
/// share), else the default file. On a shared journal `BRIDGECTL_HOST` labels this
/// host [default: its host name], and `BRIDGECTL_BATCH_LEASE` says how long a batch
/// claim of a host that died or paused holds before another host takes it over.
fn open_journal(explicit: Option<&std::path::Path>) -> Result<bridgectl_flow::Journal> {
    let location = match (explicit, shared_state()?) {
        (Some(path), _) => bridgectl_store::Location::parse(&path.to_string_lossy()),
        (None, Some(shared)) => shared,
        (None, None) => bridgectl_store::Location::File(crate::paths::journal(None)?),
    };
    let mut journal = bridgectl_flow::Journal::open_at(location)?;
    if let Ok(host) = std::env::var("BRIDGECTL_HOST") {
        journal = journal.with_host(&host);
    }
    if let Some(lease) = env_window("BRIDGECTL_BATCH_LEASE")? {
        journal = journal.with_batch_lease(lease);
    }
    // How long a nonce reservation holds while a flow waits for its approval.
    match env_window("BRIDGECTL_RESERVATION_LEASE")? {
        Some(lease) => Ok(journal.with_reservation_lease(lease)),
        None => Ok(journal),
    }
}

/// The profile's `state_url`, read once at start ([`remember_profile_state`]).
static PROFILE_STATE_URL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// Reads the profile's `state_url` for [`shared_state`], when `BRIDGECTL_STATE_URL` is
/// not set. A profile that cannot be read is left to the commands that need it to report.
pub fn remember_profile_state(global: &crate::global::GlobalOpts) {
    let set = std::env::var("BRIDGECTL_STATE_URL").is_ok_and(|u| !u.is_empty());
    if !set {
        let url = crate::config::load_profile(global)
            .ok()
            .and_then(|p| p.state_url)
            .filter(|u| !u.is_empty());
        let _ = PROFILE_STATE_URL.set(url);
    }
}

/// The PostgreSQL database that `BRIDGECTL_STATE_URL`, else the profile's `state_url`,
/// names: the journal and the signing log that several signer hosts share.
pub fn shared_state() -> Result<Option<bridgectl_store::Location>> {
    let (url, name) = match std::env::var("BRIDGECTL_STATE_URL") {
        Ok(url) if !url.is_empty() => (url, "BRIDGECTL_STATE_URL"),
        _ => match PROFILE_STATE_URL.get().cloned().flatten() {
            Some(url) => (url, "the profile's state_url"),
            None => return Ok(None),
        },
    };
    if !bridgectl_store::is_postgres_url(&url) {
        return Err(crate::exit::coded(
            crate::exit::Code::Usage,
            format!("{name}: not a postgres:// or postgresql:// URL"),
        ));
    }
    Ok(Some(bridgectl_store::Location::Postgres(url)))
}

/// A duration (`90s`, `15m`, `1h`) from environment variable `name`, when it is set.
fn env_window(name: &str) -> Result<Option<std::time::Duration>> {
    let Ok(text) = std::env::var(name) else {
        return Ok(None);
    };
    let lease: bridgectl_tx::limits::Window = text
        .parse()
        .map_err(|e| crate::exit::coded(crate::exit::Code::Usage, format!("{name}: {e}")))?;
    Ok(Some(std::time::Duration::from_secs(lease.0)))
}

// How long a command that follows a flow to its end waits for it (the commands that
// only ask once, `balance`, `status`, `action list`, `batch plan`, have no such option).
#[derive(Debug, Args, Clone)]
pub struct WaitOpts {
    /// Give up waiting for the flow's end after this many seconds: exit 8, the flow stays
    /// journaled, and `bridgectl resume TXID` waits again.
    #[arg(long, default_value_t = WaitOpts::DEFAULT_SECS, value_name = "SECS")]
    pub timeout: u64,

    /// How far to wait: until the flow's end is final on its chain (the profile's
    /// `main_finality` / `side_finality`), or until it is included in a block (the flow
    /// is left `confirming`; `status` or `resume` finish it).
    #[arg(long, value_enum, default_value_t = Until::Final, value_name = "WHEN")]
    pub until: Until,
}

/// How far a wait goes (`--until`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Until {
    /// Final on its chain.
    Final,
    /// Included in a block.
    Included,
}

impl Until {
    /// As the flows take it.
    pub fn to_flows(self) -> bridgectl_flow::Until {
        match self {
            Until::Final => bridgectl_flow::Until::Final,
            Until::Included => bridgectl_flow::Until::Included,
        }
    }
}

impl WaitOpts {
    /// The default wait, in seconds.
    pub const DEFAULT_SECS: u64 = 120;
}

impl Default for WaitOpts {
    fn default() -> Self {
        WaitOpts {
            timeout: WaitOpts::DEFAULT_SECS,
            until: Until::Final,
        }
    }
}

// Options of the commands that talk to the platform and sign.
#[derive(Debug, Args, Clone, Default)]
pub struct FlowOpts {
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,

    /// How long to wait for the flow's end.
    #[command(flatten)]
    pub wait: WaitOpts,

    /// Sign without asking for confirmation (the summary is still shown).
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Caps on what is signed.
    #[command(flatten)]
    pub caps: crate::trust::CapOpts,

    /// Passphrase source.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,

    /// Sign through an external signer instead of a key of the keystore: rpc:URL, a
    /// JSON-RPC signing endpoint (Frame, which fronts Ledger, Trezor, Lattice and
    /// Keystone; a node with unlocked accounts), loopback or https. The transaction's
    /// sender must be an account of the endpoint. A URL that carries a token belongs in
    /// BRIDGECTL_SIGNER, not on the command line.
    #[arg(
        long,
        env = "BRIDGECTL_SIGNER",
        value_name = "rpc:URL",
        hide_env_values = true
    )]
    pub signer: Option<String>,

    /// How long the signing endpoint of --signer may take to answer each request (a
    /// person confirms on a device), in seconds.
    #[arg(
        long,
        env = "BRIDGECTL_SIGNER_TIMEOUT",
        hide_env_values = true,
        value_name = "SECS",
        default_value_t = 300
    )]
    pub signer_timeout: u64,
}

// Where the web3 API is and how to authenticate (`webhook` commands).
#[derive(Debug, Args, Clone, Default)]
pub struct Web3Api {
    /// Web3 API URL [default: the profile's web3_url].
    #[arg(
        long,
        env = "BRIDGECTL_WEB3_URL",
        hide_env_values = true,
        value_name = "URL",
        help_heading = "Web3 API"
    )]
    pub web3_url: Option<String>,

    /// Read the web3 token from the first line of FILE (keep it 0600).
    #[arg(
        long,
        env = "BRIDGECTL_WEB3_TOKEN_FILE",
        hide_env_values = true,
        value_name = "FILE",
        help_heading = "Web3 API"
    )]
    pub web3_token_file: Option<PathBuf>,
}

// Where the web3 API is, which chain/network, and the webhook signing keys (`webhook`
// commands that manage webhooks).
#[derive(Debug, Args, Clone)]
pub struct Web3Opts {
    /// The web3 API.
    #[command(flatten)]
    pub api: Web3Api,

    /// Chain path segment, e.g. ethereum, polygon [default: the profile's web3_chain].
    #[arg(
        long,
        env = "BRIDGECTL_WEB3_CHAIN",
        hide_env_values = true,
        help_heading = "Web3 API"
    )]
    pub chain: Option<String>,

    /// Network path segment, e.g. mainnet, sepolia [default: the profile's
    /// web3_network].
    #[arg(
        long,
        env = "BRIDGECTL_WEB3_NETWORK",
        hide_env_values = true,
        help_heading = "Web3 API"
    )]
    pub network: Option<String>,

    /// Signing-key file [default: $XDG_STATE_HOME/bridgectl/webhook-keys.json].
    #[arg(
        long,
        env = "BRIDGECTL_WEBHOOK_KEYS",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub keys: Option<PathBuf>,
}

/// Where nonces come from.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NonceFrom {
    /// The node's `pending` count (profile rpc url).
    Node,
    /// The platform's next-nonce operation.
    Platform,
}

/// Where gas limit and price come from.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GasFrom {
    /// The node: estimate + 20%, and its gas price.
    Node,
    /// The platform's raw-transfer operation (MT only).
    Platform,
}

// Nonce and gas options shared by the commands that build transactions locally.
#[derive(Debug, Args, Clone)]
pub struct BuildOpts {
    /// Nonce source [default: node when an rpc url is configured, else platform].
    #[arg(long, value_enum)]
    pub nonce_from: Option<NonceFrom>,
    /// Use this nonce (offline entry).
    #[arg(long, conflicts_with = "nonce_from")]
    pub nonce: Option<u64>,
    /// Gas source [default: node when an rpc url is configured, else platform].
    #[arg(long, value_enum)]
    pub gas_from: Option<GasFrom>,
    /// Gas limit and price as LIMIT:PRICE_WEI (offline entry).
    #[arg(long, value_name = "LIMIT:PRICE", conflicts_with = "gas_from")]
    pub gas: Option<String>,
}

impl BuildOpts {
    /// The sources, defaulting to the node when `has_node`.
    pub fn sources(&self, has_node: bool) -> Result<(NonceSource, GasSource)> {
        let nonce = match (self.nonce, self.nonce_from) {
            (Some(n), _) => NonceSource::Fixed(n),
            (None, Some(NonceFrom::Node)) => NonceSource::Node,
            (None, Some(NonceFrom::Platform)) => NonceSource::Platform,
            (None, None) if has_node => NonceSource::Node,
            (None, None) => NonceSource::Platform,
        };
        let gas = match (&self.gas, self.gas_from) {
            (Some(spec), _) => {
                let (l, p) = spec
                    .split_once(':')
                    .ok_or_else(|| anyhow::anyhow!("--gas {spec:?}: expected LIMIT:PRICE_WEI"))?;
                GasSource::Fixed {
                    limit: l
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--gas: bad limit {l:?}"))?,
                    price: p
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--gas: bad price {p:?}"))?,
                }
            }
            (None, Some(GasFrom::Node)) => GasSource::Node,
            (None, Some(GasFrom::Platform)) => GasSource::Platform,
            (None, None) if has_node => GasSource::Node,
            (None, None) => GasSource::Platform,
        };
        Ok((nonce, gas))
    }
}

/// Parses an amount of a token with `decimals`, naming the flag in the error.
/// Zero is refused here rather than by the chain: a transaction that moves nothing
/// still costs its fee. (`--amount -1` reaches this parser too, and is refused as
/// negative.)
pub fn parse_amount(text: &str, decimals: u8, flag: &str) -> Result<U256> {
    let amount = bridgectl_tx::amount::parse_units(text, decimals)
        .map_err(|e| anyhow::anyhow!("{flag} {text:?}: {e}"))
        .code(Code::Usage)?;
    if amount.is_zero() {
        return Err(coded(
            Code::Usage,
            format!("{flag} {text:?}: the amount must be more than zero"),
        ));
    }
    Ok(amount)
}

// How a new transaction is priced (`replace`, `cancel`, `batch resume --replace-stuck`).
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct PriceOpts {
    /// The new gas price: wei, or with a unit (`30gwei`). It must be more than the
    /// replaced transaction's.
    #[arg(long, value_name = "PRICE")]
    pub gas_price: Option<String>,
    /// Raise the replaced transaction's gas price by this much (`12.5%`, the default),
    /// or to the node's going price if that is higher and within the profile's
    /// max-gas-price (without one, the node's quote does not raise it).
    #[arg(long, value_name = "PERCENT")]
    pub bump: Option<String>,
}

impl PriceOpts {
    /// The repricing the flags ask for: an exact price, a raise in percent (up to two
    /// decimals), or the default raise.
    pub fn repricing(&self) -> Result<Repricing> {
        if let Some(text) = &self.gas_price {
            let wei = bridgectl_tx::amount::parse_native(text)
                .context("--gas-price")
                .code(Code::Usage)?;
            let wei = u128::try_from(wei)
                .map_err(|_| coded(Code::Usage, format!("--gas-price {text:?} is above 2^128")))?;
            return Ok(Repricing::GasPrice(wei));
        }
        let Some(text) = &self.bump else {
            return Ok(Repricing::default());
        };
        parse_percent(text)
            .map(|basis_points| Repricing::Bump { basis_points })
            .ok_or_else(|| {
                coded(
                    Code::Usage,
                    format!(
                        "--bump {text:?}: expected a percentage above 0 with at most two \
                         decimals, like 12.5% or 20"
                    ),
                )
            })
    }
}

/// `12.5%` (or `12.5`) as basis points (1250); `None` for anything else, 0 and over
/// 1000% included.
fn parse_percent(text: &str) -> Option<u32> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim());
    let (whole, fraction) = match number.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (number, ""),
    };
    if whole.is_empty()
        || fraction.len() > 2
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || whole.len() > 4
    {
        return None;
    }
    let whole: u32 = whole.parse().ok()?;
    let fraction: u32 = format!("{fraction:0<2}").parse().ok()?;
    let bp = whole * 100 + fraction;
    (bp > 0 && bp <= 100_000).then_some(bp)
}

#[cfg(test)]
mod tests {
    use super::parse_percent;

    #[test]
    fn percentages_read_exactly() {
        assert_eq!(parse_percent("12.5%"), Some(1_250));
        assert_eq!(parse_percent("12.5"), Some(1_250));
        assert_eq!(parse_percent("20%"), Some(2_000));
        assert_eq!(parse_percent("0.01%"), Some(1));
        assert_eq!(parse_percent("1000%"), Some(100_000));
        for bad in [
            "", "%", "0", "0%", "-5%", "1e2", "12.555%", "1001%", ".5", "5.", "x", "10000",
        ] {
            assert_eq!(parse_percent(bad), None, "{bad:?}");
        }
    }
}
