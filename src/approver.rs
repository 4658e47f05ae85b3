//! The CLI's side of signing: what the flows call once every check has passed. Shows
//! the summary, asks at the terminal (`--yes` skips the question, never the summary),
//! reads the passphrase and unlocks the key. And progress lines on stderr.

use std::time::Duration;

use bridgectl_flow::rpc::RpcSigner;
use bridgectl_flow::{ApproveFuture, Approver, Error, PrivateKeySigner, Progress, Review};
use bridgectl_keystore::{KeyInfo, Keystore};
use bridgectl_tx::TransactionSigner;

use crate::config::Profile;
use crate::exit::Coded;
use crate::passphrase::CliPassphrases;

/// A CLI failure (no passphrase source, a terminal that went away) as the flows'
/// error, keeping its exit code.
fn approval_error(error: anyhow::Error) -> Error {
    let code = crate::exit::code_for(&error);
    Error::Approval(Box::new(Coded { code, error }))
}

/// The CLI's approver: the summary, the question at the terminal (`--yes` skips the
/// question, never the summary), then the passphrase and the keystore.
pub struct CliApprover<'a> {
    /// The keystore.
    pub keystore: &'a Keystore,
    /// Where passphrases come from.
    pub passphrases: CliPassphrases,
    /// `--yes`.
    pub yes: bool,
    /// Names for chains, contracts and addresses in the summary.
    pub profile: &'a Profile,
    /// Time spent unlocking keys (the KDF), for `BRIDGECTL_TIMINGS`.
    pub unlock_time: Duration,
    /// Set for the offline signer (`bridgectl sign`).
    pub offline: Option<OfflineInput<'a>>,
    /// `--signer rpc:URL`: sign through that endpoint instead of a key of the keystore.
    pub external: Option<String>,
    /// How long the endpoint may take to answer (a person confirms on a device).
    pub external_timeout: Duration,
    /// Set by `replace` and `cancel`: the gas price, in wei, of the transaction signed
    /// again at its nonce. The summary shows it beside the new one, and the description
    /// (the replace flow's, bridgectl's own words) as what is signed, not as a claim.
    pub replacing: Option<u128>,
}

/// What signs for the CLI: a key of the keystore, or an external JSON-RPC signer.
#[derive(Clone)]
pub enum CliSigner {
    /// A key unlocked here.
    Local(PrivateKeySigner),
    /// `--signer rpc:URL`.
    Rpc(RpcSigner),
}

impl TransactionSigner for CliSigner {
    fn address(&self) -> alloy_primitives::Address {
        match self {
            CliSigner::Local(k) => TransactionSigner::address(k),
            CliSigner::Rpc(r) => r.address(),
        }
    }

    async fn sign_transaction(
        &self,
        tx: &bridgectl_tx::signer::TxLegacy,
    ) -> Result<alloy_primitives::Bytes, bridgectl_tx::Error> {
        match self {
            CliSigner::Local(k) => k.sign_transaction(tx).await,
            CliSigner::Rpc(r) => r.sign_transaction(tx).await,
        }
    }

    async fn sign_hash_message(
        &self,
        hash: alloy_primitives::B256,
    ) -> Result<alloy_primitives::Signature, bridgectl_tx::Error> {
        match self {
            CliSigner::Local(k) => k.sign_hash_message(hash).await,
            CliSigner::Rpc(r) => r.sign_hash_message(hash).await,
        }
    }

    fn local_key(&self) -> Option<&PrivateKeySigner> {
        match self {
            CliSigner::Local(k) => Some(k),
            CliSigner::Rpc(_) => None,
        }
    }
}

/// The URL of a `--signer` value: `rpc:URL` is the one kind there is, and the URL must
/// be one a signing endpoint may have (https, or http on loopback): checked before
/// anything is asked of the platform.
pub fn rpc_signer_url(spec: &str) -> anyhow::Result<&str> {
    let url = rpc_url_of(spec)?;
    RpcSigner::check_url(url)?;
    Ok(url)
}

/// [`rpc_signer_url`] for the offline signer, which reaches no network: the endpoint
/// must be on this machine.
pub fn offline_signer_url(spec: &str) -> anyhow::Result<&str> {
    let url = rpc_url_of(spec)?;
    RpcSigner::check_loopback(url)?;
    Ok(url)
}

fn rpc_url_of(spec: &str) -> anyhow::Result<&str> {
    spec.strip_prefix("rpc:").ok_or_else(|| {
        crate::exit::coded(
            crate::exit::Code::Usage,
            "--signer: expected rpc:URL (a JSON-RPC signing endpoint, loopback or https)",
        )
    })
}

/// The refusal of `--yes` for a call the operator did not pin
/// ([`bridgectl_tx::Verified::pins_call`]), naming what pins one online or offline.
pub fn signing_blind(offline: bool) -> bridgectl_tx::Error {
    let pins = if offline {
        "--expect-function with every argument as --expect-arg, --expect-data, or an \
         auto-approve rule of the profile's policy that covers it; a sign request's intent \
         does not count (it comes from the same machine as the transaction)"
    } else {
        "the function and every argument on the command line (`action exec --function F \
         --input ...`; redeem, swap and transfer pin their own call), or an auto-approve \
         rule of the profile's policy that covers it; a function the platform's action \
         list chose does not count"
    };
    bridgectl_tx::Error::Refused(format!(
        "signing blind: --yes needs the call pinned by you: {pins}; without --yes the \
         summary is shown and you are asked"
    ))
}

/// What the offline signer adds: the key chosen before anything was verified, a line
/// saying what is signed, and `--yes` only for a pinned call.
pub struct OfflineInput<'a> {
    /// The key of the keystore that signs; `None` when a signing endpoint does
    /// (`--signer`), which holds the key.
    pub key: Option<&'a KeyInfo>,
    /// "signing FILE (KIND input, sha256 HASH)", shown first.
    pub what: String,
}

impl Approver for CliApprover<'_> {
    type Signer = CliSigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, CliSigner> {
        Box::pin(async move {
            let mut ctx = crate::review::context(self.profile, review.verified);
            if let Some(old) = self.replacing {
                ctx.previous_gas_price = Some(old);
                ctx.description_by_caller = true;
            }
            let from = review.raw_tx().from;
            let mut question = "sign and submit this transaction?";
            // One rule online and offline: without a question, only what the operator pinned
            // is signed (see `Verified::pins_call`), before any passphrase is asked for.
            if self.yes && !review.verified.pins_call() {
                return Err(signing_blind(self.offline.is_some()).into());
            }
            if let Some(offline) = &self.offline {
                crate::output::note(&offline.what);
                if let Some(key) = offline.key.filter(|k| k.label != from.to_string()) {
                    ctx.labels
                        .entry(key.address)
                        .or_insert_with(|| format!("key {}", key.label));
                }
                question = "sign this transaction?";
            }
            crate::review::show(review.raw_tx(), &ctx);
            crate::review::confirm(self.yes, question)
                .map_err(|e| Error::Declined(format!("{e:#}")))?;
            if let Some(spec) = &self.external {
                let url = rpc_signer_url(spec).map_err(approval_error)?;
                // Its signatures go into this keystore's log as its own.
                self.keystore
                    .add_external_signer(from)
                    .map_err(Error::unlock_failed)?;
                return Ok(CliSigner::Rpc(RpcSigner::with_timeout(
                    url,
                    from,
                    self.external_timeout,
                )?));
            }
            self.passphrases
                .ensure_available()
                .map_err(approval_error)?;
            let started = std::time::Instant::now();
            // The offline signer's key was found before anything was verified: unlocked as
            // found, without listing the keystore again.
            let signer = match self.offline.as_ref().and_then(|o| o.key) {
                Some(key) => self.passphrases.unlock_key(self.keystore, key),
                None => self.passphrases.unlock(self.keystore, &from.to_string()),
            };
            self.unlock_time += started.elapsed();
            Ok(CliSigner::Local(signer.map_err(Error::unlock_failed)?))
        })
    }
}

/// Progress lines on stderr.
pub struct StderrProgress;

impl Progress for StderrProgress {
    fn step(&mut self, message: &str) {
        crate::output::note(format_args!("» {message}"));
    }

    fn waiting(&mut self, what: &str, elapsed: std::time::Duration, deadline: std::time::Duration) {
        crate::output::note(format_args!(
            "» waiting for {what}: {} s of {} s",
            elapsed.as_secs(),
            deadline.as_secs()
        ));
    }
}
