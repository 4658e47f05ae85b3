//! Everything an online command needs, built once from the profile: the flows (platform
//! client, journal, signing log, bridge description, trust root), the keystore and the
//! runtime. Commands call one flow and render its result.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use alloy_primitives::Address;
use anyhow::{Context, Result, anyhow};
use bridgectl_flow::client::PlatformClient;
use bridgectl_flow::{Bridge, Flows, GasPriceCap, Journal, Submitter, WaitOptions};
use bridgectl_keystore::Keystore;
use bridgectl_signing_log::SigningLogDb;

use crate::approver::CliApprover;
use crate::config::Profile;
use crate::global::GlobalOpts;
use crate::opts::{FlowOpts, PlatformOpts, WaitOpts};
use crate::passphrase::CliPassphrases;

/// When the process started (set first thing in `main`), for `BRIDGECTL_TIMINGS`.
pub static STARTED: OnceLock<Instant> = OnceLock::new();

/// The built pieces.
pub struct Session {
    /// The profile in force.
    pub profile: Profile,
    /// The keystore.
    pub keystore: Keystore,
    /// The async runtime the flows run on.
    pub runtime: tokio::runtime::Runtime,
    client: PlatformClient,
    journal: Arc<Journal>,
    signing_log: Arc<SigningLogDb>,
    bridge: Option<Bridge>,
    opts: FlowOpts,
}

/// Opens the keystore named by `--keystore` or the default directory.
pub fn open_keystore(global: &GlobalOpts) -> Result<Keystore> {
    Ok(Keystore::open(crate::paths::keystore(
        global.keystore.as_deref(),
    )?)?)
}

/// Opens the signing log of `keystore`'s keys: the file beside them, or the one several
/// signer hosts share in the PostgreSQL database `BRIDGECTL_STATE_URL` names (one nonce
/// guard, one set of spending windows; this host's checkpoint of it stays beside the
/// keys). An entry signed by a key that is not the keystore's (nor one of its external
/// signers) refuses signing until a person acknowledges the log.
pub fn open_signing_log(keystore: &Keystore) -> Result<SigningLogDb> {
    let log = match crate::opts::shared_state()? {
        Some(shared) => SigningLogDb::open_at(shared, keystore.dir())?,
        None => return Ok(SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?),
    };
    Ok(log.with_known_keys(keystore.signers()?))
}

impl Session {
    /// The session of a command that never signs (`balance`, `status`, `action list`).
    pub fn for_sending(global: &GlobalOpts, platform: &PlatformOpts) -> Result<Session> {
        Session::for_waiting(global, platform, &WaitOpts::default())
    }

    /// The session of a command that never signs and may follow a flow to its end
    /// (`submit --wait`), within `wait`.
    pub fn for_waiting(
        global: &GlobalOpts,
        platform: &PlatformOpts,
        wait: &WaitOpts,
    ) -> Result<Session> {
        Session::new(
            global,
            &FlowOpts {
                platform: platform.clone(),
                wait: wait.clone(),
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
        let token = runtime.block_on(crate::auth::resolve_token(
            &profile,
            &opts.platform,
            &base_url,
        ))?;
        let client = PlatformClient::new(&base_url, token, crate::auth::client_options()?)?;
        let journal = opts.platform.journal.open()?;
        let keystore = open_keystore(global)?;
        let signing_log = open_signing_log(&keystore)?;
        let bridge = profile.bridge().ok();
        Ok(Session {
            profile,
            keystore,
            runtime,
            client,
            journal: Arc::new(journal),
            signing_log: Arc::new(signing_log),
            bridge,
            opts: opts.clone(),
        })
    }

    /// Opens the signing log again, knowing the keystore's signers as they are now: after
    /// an external signer's accounts were added (`Keystore::add_external_signer`), so
    /// that their entries are the log's own for the rest of the run.
    pub fn reopen_signing_log(&mut self) -> Result<()> {
        self.signing_log = Arc::new(open_signing_log(&self.keystore)?);
        Ok(())
    }

    /// The bridge description, or the error naming what is missing.
    pub fn bridge(&self) -> Result<&Bridge> {
        match &self.bridge {
            Some(b) => Ok(b),
            None => Err(self
                .profile
                .bridge()
                .err()
                .map_or_else(|| anyhow!("profile incomplete"), Into::into)),
        }
    }

    /// The flows over this session, sending through `submitter`, with the cap flags
    /// over the profile's policy and the profile's chains and contracts as the trust
    /// root; `adjust` may narrow or extend it with what the user typed for this
    /// command.
    pub fn flows(
        &self,
        submitter: Submitter,
        adjust: impl FnOnce(&mut bridgectl_tx::Policy),
    ) -> Result<Flows> {
        let mut policy = self.profile.trust_root(self.opts.caps.to_policy()?);
        adjust(&mut policy);
        // The user's ceiling (profile policy or --max-gas-price), else ten times what
        // the chain's node quotes.
        let gas_price = policy
            .max_gas_price
            .map_or(GasPriceCap::NodeQuote, GasPriceCap::Max);
        let mut builder = Flows::builder(
            self.client.clone(),
            self.journal.clone(),
            self.signing_log.clone(),
        )
        .policy(policy)
        .submitter(submitter)
        .wait(WaitOptions {
            interval: Duration::from_millis(300),
            timeout: Duration::from_secs(self.opts.wait.timeout),
            until: self.opts.wait.until.to_flows(),
        });
        if let Some(bridge) = &self.bridge {
            builder = builder.bridge(bridge.clone());
        }
        Ok(builder.gas_price(gas_price).build())
    }

    /// A node submitter for the chain `chain_id`, from the profile's rpc urls.
    pub fn node_submitter(&self, chain_id: u64, flag: &str) -> Result<Submitter> {
        let p = &self.profile;
        let url = if Some(chain_id) == p.side_chain_id {
            p.side_rpc_url.as_deref()
        } else if Some(chain_id) == p.main_chain_id {
            p.main_rpc_url.as_deref()
        } else {
            None
        }
        .ok_or_else(|| anyhow!("{flag}: no rpc url in the profile for chain {chain_id}"))?;
        Ok(Submitter::Node(bridgectl_flow::rpc::NodeClient::new(url)?))
    }

    /// The approver: summary, confirmation, then the keystore.
    pub fn approver(&self) -> CliApprover<'_> {
        CliApprover {
            keystore: &self.keystore,
            passphrases: CliPassphrases::new(&self.opts.passphrase),
            yes: self.opts.yes,
            profile: &self.profile,
            unlock_time: Duration::ZERO,
            offline: None,
            external: self.opts.signer.clone(),
            external_timeout: std::time::Duration::from_secs(self.opts.signer_timeout),
            replacing: None,
        }
    }

    /// With `BRIDGECTL_TIMINGS` set, prints where the time went on stderr as one JSON
    /// line: wall time since the process started, HTTP waits, poll sleeps, key unlock
    /// (KDF), and what is left: the client's own work.
    pub fn report_timings(&self, approver: &CliApprover<'_>) {
        if std::env::var_os("BRIDGECTL_TIMINGS").is_none() {
            return;
        }
        let total = STARTED.get().map_or(Duration::ZERO, |t| t.elapsed());
        let t = self.journal.timing().snapshot();
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

    /// The platform client.
    pub fn client(&self) -> &PlatformClient {
        &self.client
    }

    /// The account `text` names: an address, or the label or id of a key in the
    /// keystore (`--from dev`). See [`crate::accounts`].
    pub fn account(&self, text: &str) -> Result<Address> {
        crate::accounts::resolve(&self.keystore, text)
    }

    /// The flow `query` names in the journal: its txId, a unique start of it, or the hash
    /// of a transaction it signed ([`Journal::find`], the one flow resolver).
    pub fn flow(&self, query: &str) -> Result<bridgectl_flow::journal::FlowRecord> {
        Ok(self.journal.find(query)?)
    }

    /// Checks before any request that `from` has a key here and a passphrase can be
    /// had, so a flow never starts on the platform only to stop at the prompt.
    pub fn check_signer(&self, from: Address) -> Result<()> {
        match &self.opts.signer {
            // The endpoint holds the key: nothing to find or unlock here.
            Some(spec) => {
                crate::approver::rpc_signer_url(spec)?;
            }
            None => {
                self.keystore.find(&from.to_string())?;
                CliPassphrases::new(&self.opts.passphrase).ensure_available()?;
            }
        }
        if !self.opts.yes && crate::review::terminal().is_none() {
            return Err(crate::exit::coded(
                crate::exit::Code::Declined,
                "not confirmed: there is no terminal to ask on; pass --yes to sign without asking",
            ));
        }
        Ok(())
    }
}
