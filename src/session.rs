//! Everything an online command needs, built once from the profile: the platform
//! client (with its token), the journal, the bridge description, the keystore, and the
//! CLI's approver and progress.

use std::path::PathBuf;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use alloy_signer_local::PrivateKeySigner;
use anyhow::{Context, Result, anyhow, bail};
use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::engine::{
    Approver, Bridge, ChainSide, Flows, Progress, Review, Submitter, WaitOptions,
};
use bridgectl_flow::journal::Journal;
use bridgectl_keystore::{Keystore, SigningLogDb};
use clap::Args;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::cli::{GlobalOpts, PassphraseOpts};
use crate::config::Profile;
use crate::exit::WithCode;
use crate::passphrase::CliPassphrases;

/// Options of every command that talks to the platform (`submit` and `resume` too, which
/// never sign).
#[derive(Debug, Args, Clone, Default)]
pub struct PlatformOpts {
    /// File holding the platform access token [env: BRIDGECTL_TOKEN_FILE, or profile
    /// token_file; BRIDGECTL_ACCESS_TOKEN takes precedence].
    #[arg(
        long,
        env = "BRIDGECTL_TOKEN_FILE",
        value_name = "FILE",
        help_heading = "Platform"
    )]
    pub token_file: Option<PathBuf>,

    /// Give up waiting for results after this many seconds (resume later).
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub timeout: u64,

    /// Journal database [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(long, env = "BRIDGECTL_JOURNAL", value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

/// Options of the commands that talk to the platform and sign.
#[derive(Debug, Args, Clone, Default)]
pub struct FlowOpts {
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,

    /// Sign without asking for confirmation (the summary is still shown).
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Caps on what is signed.
    #[command(flatten)]
    pub caps: crate::trust::CapOpts,

    /// Passphrase source.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
}

/// The built pieces.
pub struct Session {
    /// The profile in force.
    pub profile: Profile,
    /// The platform client.
    pub client: PlatformClient,
    /// The journal.
    pub journal: Journal,
    /// The bridge description (may be partial: see [`Session::bridge`]).
    pub bridge: Option<Bridge>,
    /// The keystore.
    pub keystore: Keystore,
    /// The keystore's signing log.
    pub signing_log: SigningLogDb,
    /// The async runtime the flows run on.
    pub runtime: tokio::runtime::Runtime,
    opts: FlowOpts,
}

/// A cached exchanged token.
#[derive(Serialize, Deserialize)]
struct CachedToken {
    token: String,
    #[serde(rename = "expiryAt")]
    expiry_at: String,
}

impl Drop for CachedToken {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.token);
    }
}

/// Opens the journal named by the option or the default path.
pub fn open_journal(path: Option<&PathBuf>) -> Result<Journal> {
    let path = match path {
        Some(p) => p.clone(),
        None => Journal::default_path()
            .ok_or_else(|| anyhow!("no state directory: set BRIDGECTL_JOURNAL"))?,
    };
    Ok(Journal::open(&path)?)
}

impl Session {
    /// The session of a command that sends but never signs (`submit`, `resume`).
    pub fn for_sending(global: &GlobalOpts, platform: &PlatformOpts) -> Result<Session> {
        Session::new(
            global,
            &FlowOpts {
                platform: platform.clone(),
                ..FlowOpts::default()
            },
        )
    }

    /// Builds the session; fails early and clearly when a required setting is missing.
    pub fn new(global: &GlobalOpts, opts: &FlowOpts) -> Result<Session> {
        let profile = crate::config::load_profile(global)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let base_url = profile.need(&profile.base_url, "base_url")?.clone();
        let token = runtime.block_on(resolve_token(&profile, opts, &base_url))?;
        let client = PlatformClient::new(&base_url, token, client_options()?)?;
        let journal = open_journal(opts.platform.journal.as_ref())?;
        let keystore = crate::cmd::key::open_keystore(global)?;
        let signing_log = keystore.signing_log()?;
        let bridge = bridge_from(&profile).ok();
        Ok(Session {
            profile,
            client,
            journal,
            bridge,
            keystore,
            signing_log,
            runtime,
            opts: opts.clone(),
        })
    }

    /// The bridge description, or the error naming what is missing.
    pub fn bridge(&self) -> Result<&Bridge> {
        match &self.bridge {
            Some(b) => Ok(b),
            None => Err(bridge_from(&self.profile)
                .err()
                .unwrap_or_else(|| anyhow!("profile incomplete"))),
        }
    }

    /// The policy in force: the cap flags over the profile's policy, with the profile's
    /// chains and contracts as the trust root.
    pub fn policy(&self) -> Result<bridgectl_tx::Policy> {
        Ok(crate::trust::trust_root(
            &self.profile,
            self.opts.caps.to_policy()?,
        ))
    }

    /// The flows over this session.
    pub fn flows(&self, submitter: Submitter) -> Result<Flows<'_>> {
        Ok(Flows {
            client: &self.client,
            journal: &self.journal,
            bridge: self.bridge.as_ref(),
            policy: self.policy()?,
            submitter,
            wait: WaitOptions {
                interval: Duration::from_millis(300),
                timeout: Duration::from_secs(self.opts.platform.timeout),
            },
            signing_log: &self.signing_log,
        })
    }

    /// The approver: summary, confirmation, then the keystore.
    pub fn approver(&self) -> CliApprover<'_> {
        CliApprover {
            keystore: &self.keystore,
            passphrases: CliPassphrases::new(&self.opts.passphrase),
            yes: self.opts.yes,
            profile: &self.profile,
            unlock_time: Duration::ZERO,
        }
    }

    /// With `BRIDGECTL_TIMINGS` set, prints where the time went on stderr as one JSON
    /// line: wall time since the process started, HTTP waits, poll sleeps, key unlock
    /// (KDF), and what is left: the client's own work.
    pub fn report_timings(&self, approver: &CliApprover<'_>) {
        if std::env::var_os("BRIDGECTL_TIMINGS").is_none() {
            return;
        }
        let total = crate::STARTED.get().map_or(Duration::ZERO, |t| t.elapsed());
        let t = bridgectl_flow::timing::snapshot();
        let total_us = total.as_micros() as u64;
        let unlock_us = approver.unlock_time.as_micros() as u64;
        let client_us = total_us.saturating_sub(t.http_us + t.sleep_us + unlock_us + t.journal_us);
        crate::output::note(serde_json::json!({
            "timings": {
                "totalUs": total_us,
                "httpUs": t.http_us,
                "httpRequests": t.http_requests,
                "sleepUs": t.sleep_us,
                "unlockUs": unlock_us,
                "journalUs": t.journal_us,
                "clientUs": client_us,
            }
        }));
    }

    /// The account `text` names: an address, or the label or id of a key in the
    /// keystore (`--from dev`).
    pub fn account(&self, text: &str) -> Result<Address> {
        if let Ok(address) = bridgectl_tx::rawtx::parse_address(text) {
            return Ok(address);
        }
        let info = self.keystore.find(text).with_context(|| {
            format!("{text:?} is neither an address (0x + 40 hex digits) nor a key in the keystore")
        })?;
        Ok(info.address)
    }

    /// Checks before any request that `from` has a key here and a passphrase can be
    /// had, so a flow never starts on the platform only to stop at the prompt.
    pub fn check_signer(&self, from: Address) -> Result<()> {
        self.keystore.find(&from.to_string())?;
        CliPassphrases::new(&self.opts.passphrase).ensure_available()?;
        if !self.opts.yes && crate::review::terminal().is_none() {
            return Err(crate::exit::coded(
                crate::exit::Code::Declined,
                "not confirmed: there is no terminal to ask on; pass --yes to sign without asking",
            ));
        }
        Ok(())
    }
}

/// HTTP options; `BRIDGECTL_RETRIES` sets how often a retry-safe request is retried
/// (default 3; 0 turns retries off, e.g. to see every fault).
fn client_options() -> Result<ClientOptions> {
    let mut options = ClientOptions::default();
    if let Ok(v) = std::env::var("BRIDGECTL_RETRIES") {
        options.retries = v
            .parse()
            .map_err(|_| anyhow!("BRIDGECTL_RETRIES={v:?}: expected a small integer"))?;
    }
    Ok(options)
}

/// The bridge from the profile; an error names the first missing setting.
pub fn bridge_from(p: &Profile) -> Result<Bridge> {
    Ok(Bridge {
        main: ChainSide {
            environment_id: p
                .need(&p.main_environment_id, "main_environment_id")?
                .clone(),
            symbol: p.need(&p.main_symbol, "main_symbol")?.clone(),
            decimals: *p.need(&p.main_decimals, "main_decimals")?,
            token: *p.need(&p.mt_contract, "mt_contract")?,
            chain_id: *p.need(&p.main_chain_id, "main_chain_id")?,
            rpc_url: p.main_rpc_url.clone(),
        },
        side: ChainSide {
            environment_id: p
                .need(&p.side_environment_id, "side_environment_id")?
                .clone(),
            symbol: p.need(&p.side_symbol, "side_symbol")?.clone(),
            decimals: *p.need(&p.side_decimals, "side_decimals")?,
            token: *p.need(&p.st_contract, "st_contract")?,
            chain_id: *p.need(&p.side_chain_id, "side_chain_id")?,
            rpc_url: p.side_rpc_url.clone(),
        },
        redeem_action: p.redeem_action.clone().unwrap_or_else(|| "redeem".into()),
    })
}

/// The first line of a token or secret-key file, refused (as key files are) when group
/// or others can read it.
fn read_secret_file(path: &std::path::Path, what: &str) -> Result<String> {
    bridgectl_keystore::check_private_file(path)?;
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {what} file {}", path.display()))?,
    );
    let first = text.lines().next().unwrap_or("").trim().to_owned();
    if first.is_empty() {
        bail!("{what} file {} is empty", path.display());
    }
    Ok(first)
}

/// The access token: `BRIDGECTL_ACCESS_TOKEN`, then a token file, then the access-key
/// exchange (cached with its expiry, 0600, under the state dir).
async fn resolve_token(profile: &Profile, opts: &FlowOpts, base_url: &str) -> Result<AccessToken> {
    if let Ok(t) = std::env::var("BRIDGECTL_ACCESS_TOKEN")
        && !t.is_empty()
    {
        return Ok(AccessToken::new(t));
    }
    if let Some(path) = opts
        .platform
        .token_file
        .as_ref()
        .or(profile.token_file.as_ref())
    {
        return Ok(AccessToken::new(read_secret_file(path, "token")?));
    }
    let Some(access_key) = &profile.access_key else {
        bail!(
            "no access token: set BRIDGECTL_ACCESS_TOKEN, --token-file (or token_file in the \
             profile), or access_key in the profile with BRIDGECTL_SECRET_KEY(_FILE)"
        );
    };
    let cache = token_cache_path(base_url, access_key);
    let cached = cache
        .as_ref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .map(zeroize::Zeroizing::new)
        .and_then(|text| serde_json::from_str::<CachedToken>(&text).ok())
        .filter(|c| still_valid(&c.expiry_at));
    if let Some(mut c) = cached {
        return Ok(AccessToken::new(std::mem::take(&mut c.token)));
    }
    let secret = match std::env::var("BRIDGECTL_SECRET_KEY") {
        Ok(s) if !s.is_empty() => s,
        _ => match std::env::var_os("BRIDGECTL_SECRET_KEY_FILE") {
            Some(p) => read_secret_file(std::path::Path::new(&p), "secret key")?,
            None => bail!(
                "access_key is set but neither BRIDGECTL_SECRET_KEY nor BRIDGECTL_SECRET_KEY_FILE is"
            ),
        },
    };
    let issued = PlatformClient::issue_token(
        base_url,
        access_key,
        &SecretString::from(secret),
        604_800,
        ClientOptions::default(),
    )
    .await?;
    if let Some(path) = &cache {
        let cached = CachedToken {
            token: issued.token.expose_secret().to_owned(),
            expiry_at: issued.expiry_at.clone(),
        };
        // Best effort: a failed cache write only costs another exchange next time.
        let text = zeroize::Zeroizing::new(serde_json::to_string(&cached)?);
        let _ = crate::files::write_replace(path, text.as_bytes());
    }
    Ok(issued.token)
}

fn still_valid(expiry_at: &str) -> bool {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::parse(expiry_at, &Rfc3339)
        .map(|t| t > time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .unwrap_or(false)
}

fn token_cache_path(base_url: &str, access_key: &str) -> Option<PathBuf> {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{base_url}\n{access_key}").as_bytes());
    dirs::state_dir().or_else(dirs::data_dir).map(|d| {
        d.join("bridgectl")
            .join("tokens")
            .join(format!("{}.json", hex::encode(&digest[..8])))
    })
}

/// The CLI's approver.
pub struct CliApprover<'a> {
    keystore: &'a Keystore,
    passphrases: CliPassphrases,
    yes: bool,
    profile: &'a Profile,
    /// Time spent unlocking keys (the KDF), for `BRIDGECTL_TIMINGS`.
    pub unlock_time: Duration,
}

impl Approver for CliApprover<'_> {
    fn approve(&mut self, review: &Review<'_>) -> Result<PrivateKeySigner, bridgectl_flow::Error> {
        let ctx = crate::review::context(self.profile, review.verified);
        crate::review::show(review.raw_tx(), &ctx);
        crate::review::confirm(self.yes, "sign and submit this transaction?")
            .map_err(|e| bridgectl_flow::Error::Declined(format!("{e:#}")))?;
        let started = std::time::Instant::now();
        let signer = self
            .passphrases
            .unlock(self.keystore, &review.raw_tx().from.to_string());
        self.unlock_time += started.elapsed();
        Ok(signer?)
    }
}

/// Progress lines on stderr.
pub struct StderrProgress;

impl Progress for StderrProgress {
    fn step(&mut self, message: &str) {
        crate::output::note(format_args!("» {message}"));
    }
}

/// Parses an amount of a token with `decimals`, naming the flag in the error.
/// Zero is refused here rather than by the chain: a transaction that moves nothing
/// still costs its fee. (`--amount -1` reaches this parser too, and is refused as
/// negative.)
pub fn parse_amount(text: &str, decimals: u8, flag: &str) -> Result<U256> {
    let amount = bridgectl_tx::amount::parse_units(text, decimals)
        .with_context(|| format!("{flag} {text:?}"))
        .code(crate::exit::Code::Usage)?;
    if amount.is_zero() {
        return Err(crate::exit::coded(
            crate::exit::Code::Usage,
            format!("{flag} {text:?}: the amount must be more than zero"),
        ));
    }
    Ok(amount)
}
