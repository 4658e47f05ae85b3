//! A wallet redeeming ST into MT whose key never enters this process: a JSON-RPC signing
//! endpoint signs (Frame in front of a hardware wallet; anvil's unlocked accounts in the
//! test). Settings from the environment: PROFILE (bridgectl's profile file, its
//! `sandbox` profile), PLATFORM_TOKEN, SIGNER_URL, FROM (the endpoint's account), LOG_DIR
//! (where the signing log is kept), JOURNAL, AMOUNT.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions};
use bridgectl_flow::rpc::RpcSigner;
use bridgectl_flow::{
    ApproveFuture, Approver, Flows, GasPriceCap, Journal, Profile, Quiet, Review,
};
use bridgectl_keystore::Keystore;
use bridgectl_signing_log::SigningLogDb;

/// Shows what is about to be signed (checked against the intent and the policy already),
/// then hands it to the endpoint, whose device asks its person again.
struct Endpoint(RpcSigner);

impl Approver for Endpoint {
    type Signer = RpcSigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, RpcSigner> {
        Box::pin(async move {
            let tx = review.raw_tx();
            eprintln!(
                "signing on the device: nonce {} to {} on chain {}",
                tx.nonce, tx.to, tx.chain_id
            );
            Ok(self.0.clone())
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let from = env("FROM")?.parse()?;
    // The signing log: the endpoint's account recorded as one that signs into it.
    let keystore = Keystore::open(env("LOG_DIR")?)?;
    keystore.add_external_signer(from)?;
    let token = AccessToken::new(env("PLATFORM_TOKEN")?);
    let client = profile.client(token, ClientOptions::default())?;
    let journal = Arc::new(Journal::open(env("JOURNAL")?)?);
    let flows = Flows::builder(
        client,
        journal,
        Arc::new(SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?),
    )
    .bridge(profile.bridge()?)
    .gas_price(GasPriceCap::NodeQuote)
    .build();
    let amount = bridgectl_tx::amount::parse_units(&env("AMOUNT")?, flows.bridge()?.side.decimals)?;
    let mut approver = Endpoint(RpcSigner::new(&env("SIGNER_URL")?, from)?);
    let outcome = flows
        .redeem(from, amount, &mut approver, &mut Quiet)
        .await?;
    let status = outcome.redemption.map(|r| r.status).unwrap_or_default();
    println!("{} {status}", outcome.submitted.tx_hash);
    Ok(())
}
