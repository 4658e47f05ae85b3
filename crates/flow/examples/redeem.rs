//! A wallet redeeming ST into MT with bridgectl-flow: its own keys, an approver that signs
//! only what the wallet itself pinned, every refusal matched by type. Settings from the
//! environment: PROFILE (bridgectl's profile file, its `sandbox` profile), PLATFORM_TOKEN,
//! KEYSTORE, FROM (address or label), PASSPHRASE_FILE, JOURNAL, AMOUNT.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions};
use bridgectl_flow::{ApproveFuture, Approver, Error, Flows, GasPriceCap, Journal};
use bridgectl_flow::{PrivateKeySigner, Profile, Quiet, Review};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;

/// Signs without asking what the wallet pinned itself (a flow built from its own
/// arguments, as its redeem is), declines anything else; unlocks off the runtime.
struct Unattended {
    keystore: Keystore,
    passphrase: Passphrase,
}

impl Approver for Unattended {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            if !review.verified.pins_call() {
                return Err(Error::Declined("not a call this wallet pinned".into()));
            }
            let tx = review.raw_tx();
            eprintln!(
                "signing: nonce {} to {} on chain {}",
                tx.nonce, tx.to, tx.chain_id
            );
            let from = tx.from.to_string();
            let key = self.keystore.unlock_async(&from, self.passphrase.clone());
            key.await.map_err(Error::unlock_failed)
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    println!("{}", redeem(&env).await?);
    Ok(())
}

/// Redeems AMOUNT ST of FROM as the settings say; "txHash status" once it ended.
pub async fn redeem(
    env: &dyn Fn(&str) -> Result<String, String>,
) -> Result<String, Box<dyn std::error::Error>> {
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let keystore = Keystore::open(env("KEYSTORE")?)?;
    let from = keystore.find(&env("FROM")?)?.address;
    let token = AccessToken::new(env("PLATFORM_TOKEN")?);
    let client = profile.client(token, ClientOptions::default())?;
    let log = SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?;
    let journal = Arc::new(Journal::open(env("JOURNAL")?)?);
    let flows = Flows::builder(client, journal, Arc::new(log))
        .bridge(profile.bridge()?)
        .policy(profile.trust_root(Default::default()))
        .gas_price(GasPriceCap::NodeQuote)
        .build();
    let amount = bridgectl_tx::amount::parse_units(&env("AMOUNT")?, flows.bridge()?.side.decimals)?;
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(env("PASSPHRASE_FILE")?)?);
    let passphrase = Passphrase::new(text.trim_end());
    let mut approver = Unattended {
        keystore,
        passphrase,
    };
    match flows.redeem(from, amount, &mut approver, &mut Quiet).await {
        Ok(done) => {
            let status = done.redemption.map(|r| r.status).unwrap_or_default();
            Ok(format!("{} {status}", done.submitted.tx_hash))
        }
        Err(e) => Err(match (e.refusal(), e.declined(), e.stopped_flow()) {
            (Some(refused), ..) => {
                format!("nothing signed: {refused} ({:?})", refused.refused_field())
            }
            _ if e.is_wrong_passphrase() => "wrong passphrase: nothing signed".into(),
            (_, Some(why), Some(flow)) => format!("declined ({why}): flow {flow} can be resumed"),
            _ if e.is_refusal() => format!("nothing signed: {e}"),
            _ => bridgectl_flow::chain(&e),
        }
        .into()),
    }
}
