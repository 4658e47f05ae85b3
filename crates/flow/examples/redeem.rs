//! A wallet redeeming ST into MT with bridgectl-flow: its own approver, its own keys.
//! Settings from the environment: PLATFORM_URL, PLATFORM_TOKEN, BRIDGE_FILE (a JSON
//! `Bridge`), KEYSTORE, FROM (address or label), PASSPHRASE_FILE, JOURNAL, AMOUNT.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::sync::Arc;

use bridgectl_flow::PrivateKeySigner;
use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::{
    ApproveFuture, Approver, Bridge, Error, Flows, GasPriceCap, Journal, Quiet, Review,
};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;

/// Shows what is about to be signed (everything in it has been checked against the
/// intent and the policy already), then unlocks the sender's key.
struct Unlock {
    keystore: Keystore,
    passphrase: Passphrase,
}

impl Approver for Unlock {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            let tx = review.raw_tx();
            eprintln!(
                "signing: nonce {} to {} on chain {}",
                tx.nonce, tx.to, tx.chain_id
            );
            let mut passphrase = Passphrase::new(self.passphrase.expose_secret().to_owned());
            self.keystore
                .unlock(&tx.from.to_string(), &mut passphrase)
                .map_err(Error::unlock_failed)
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let bridge: Bridge = serde_json::from_str(&std::fs::read_to_string(env("BRIDGE_FILE")?)?)?;
    let keystore = Keystore::open(env("KEYSTORE")?)?;
    let from = keystore.find(&env("FROM")?)?.address;
    let token = AccessToken::new(env("PLATFORM_TOKEN")?);
    let client = PlatformClient::new(&env("PLATFORM_URL")?, token, ClientOptions::default())?;
    let journal = Arc::new(Journal::open(env("JOURNAL")?)?);
    let log = SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?;
    let flows = Flows::builder(client, journal, Arc::new(log))
        .bridge(bridge)
        .gas_price(GasPriceCap::NodeQuote)
        .build();
    let amount = bridgectl_tx::amount::parse_units(&env("AMOUNT")?, flows.bridge()?.side.decimals)?;
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(env("PASSPHRASE_FILE")?)?);
    let passphrase = Passphrase::new(text.trim_end().to_owned());
    let mut approver = Unlock {
        keystore,
        passphrase,
    };
    let outcome = flows
        .redeem(from, amount, &mut approver, &mut Quiet)
        .await?;
    let status = outcome.redemption.map(|r| r.status).unwrap_or_default();
    println!("{} {status}", outcome.submitted.tx_hash);
    Ok(())
}
