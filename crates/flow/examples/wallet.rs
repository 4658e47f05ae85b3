//! A wallet's swap (main chain) and redeem (side chain) through one `Flows`: each chain
//! with its own policy, the side chain's node the wallet's own alloy provider, the
//! approver chosen at run time (`Box<dyn Approver>`), the key unlocked off the runtime.
//! Settings from the environment: PROFILE, PLATFORM_TOKEN, KEYSTORE, FROM,
//! PASSPHRASE_FILE, JOURNAL, AMOUNT, and ASK (set: a person approves on stderr/stdin).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::sync::Arc;

use alloy_provider::{Provider, ProviderBuilder};
use bridgectl_flow::client::{AccessToken, ClientOptions};
use bridgectl_flow::{ApproveFuture, Approver, Error, Flows, GasPriceCap, GasSource, Journal};
use bridgectl_flow::{NonceSource, Policy, PrivateKeySigner, Profile, Quiet, Review, SwapSpec};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;

/// The wallet's keys: every approver unlocks through it.
struct Keys(Keystore, Passphrase);

impl Keys {
    async fn unlock(&self, review: &Review<'_>) -> Result<PrivateKeySigner, Error> {
        let from = review.raw_tx().from.to_string();
        let key = self.0.unlock_async(&from, self.1.clone()).await;
        key.map_err(Error::unlock_failed)
    }
}

/// Signs what the wallet pinned itself (its own swap and redeem), nothing else.
struct Unattended(Keys);

impl Approver for Unattended {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            let what = review.intent.description.as_deref().unwrap_or("a call");
            eprintln!("approve: {what}, nonce {}", review.raw_tx().nonce);
            match review.verified.pins_call() {
                true => self.0.unlock(review).await,
                false => Err(Error::Declined("not pinned by this wallet".into())),
            }
        })
    }
}

/// Shows the summary and asks a person.
struct Ask(Keys);

impl Approver for Ask {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            let ctx = review.verified.summary_context();
            eprint!(
                "{}sign? [y/N] ",
                bridgectl_flow::tx::summary::Summary::new(review.raw_tx(), &ctx)
            );
            let mut answer = String::new();
            std::io::stdin()
                .read_line(&mut answer)
                .map_err(Error::unlock_failed)?;
            match answer.trim() {
                "y" => self.0.unlock(review).await,
                _ => Err(Error::Declined("no".into())),
            }
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let bridge = profile.bridge()?;
    let keystore = Keystore::open(env("KEYSTORE")?)?;
    let from = keystore.find(&env("FROM")?)?.address;
    let log = SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?;
    let client = profile.client(
        AccessToken::new(env("PLATFORM_TOKEN")?),
        ClientOptions::default(),
    )?;
    // The wallet's own provider for the side chain (its fillers, layers, auth).
    let side_url = bridge.side.rpc_url.as_deref().ok_or("set side_rpc_url")?;
    let provider = ProviderBuilder::new().connect_http(side_url.parse()?);
    eprintln!(
        "side chain {} via the wallet's provider",
        provider.get_chain_id().await?
    );
    // Each chain's own policy: its chain id, its gas-price cap.
    let on = |chain_id: u64, max_gas_price: u128| Policy {
        expect_chain_id: Some(chain_id),
        max_gas_price: Some(max_gas_price),
        ..Policy::default()
    };
    let flows = Flows::builder(
        client,
        Arc::new(Journal::open(env("JOURNAL")?)?),
        Arc::new(log),
    )
    .bridge(bridge.clone())
    .policy(profile.trust_root(Policy::default()))
    .chain_policy(
        bridge.main.chain_id,
        on(bridge.main.chain_id, 100_000_000_000),
    )
    .chain_policy(
        bridge.side.chain_id,
        on(bridge.side.chain_id, 50_000_000_000),
    )
    .node(bridge.side.chain_id, provider)
    .gas_price(GasPriceCap::NodeQuote)
    .build();
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(env("PASSPHRASE_FILE")?)?);
    let keys = Keys(keystore, Passphrase::new(text.trim_end()));
    let mut approver: Box<dyn Approver<Signer = PrivateKeySigner>> = match env("ASK") {
        Ok(_) => Box::new(Ask(keys)),
        Err(_) => Box::new(Unattended(keys)),
    };

    // A swap: MT sent to the address the platform issues, its own ST credit awaited.
    let swap = SwapSpec {
        from,
        amount: bridgectl_tx::amount::parse_units(&env("AMOUNT")?, bridge.main.decimals)?,
        nonce: NonceSource::Node,
        gas: GasSource::Node,
        wait: true,
    };
    let swapped = flows.swap(&swap, &mut approver, &mut Quiet).await?;
    println!("swap {} {:?}", swapped.submitted.tx_hash, swapped.state);

    // A redeem: ST burned on the side chain, MT paid out by the platform.
    let amount = bridgectl_tx::amount::parse_units(&env("AMOUNT")?, bridge.side.decimals)?;
    let redeemed = flows
        .redeem(from, amount, &mut approver, &mut Quiet)
        .await?;
    let status = redeemed.redemption.map(|r| r.outcome());
    println!("redeem {} {status:?}", redeemed.submitted.tx_hash);
    Ok(())
}
