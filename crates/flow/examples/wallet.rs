//! What a wallet writes with bridgectl: its own approver over its own keys, a redeem and
//! a swap through the flows, and a transfer signed offline (verified against the
//! wallet's own intent, recorded in the signing log, not sent). Settings from the
//! environment: PLATFORM_URL, PLATFORM_TOKEN, BRIDGE_FILE (a JSON `Bridge`), KEYSTORE,
//! FROM (address or label), PASSPHRASE_FILE, JOURNAL, AMOUNT.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::tx::{self, Context, Nonce, NonceFacts, RawTx, request::Intent};
use bridgectl_flow::{
    Address, ApproveFuture, Approver, Bridge, Error, Flows, GasPriceCap, GasSource, Journal,
};
use bridgectl_flow::{NonceSource, PrivateKeySigner, Quiet, Review, SwapSpec, U256};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;

/// Shows what passed the checks, then unlocks the sender's key off the runtime's threads.
struct Wallet {
    keystore: Keystore,
    passphrase: Passphrase,
}

impl Wallet {
    async fn key(&self, from: Address) -> Result<PrivateKeySigner, bridgectl_keystore::Error> {
        let passphrase = Passphrase::new(self.passphrase.expose_secret().to_owned());
        self.keystore
            .unlock_async(&from.to_string(), passphrase)
            .await
    }
}

impl Approver for Wallet {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            let what = review.intent.description.as_deref().unwrap_or("a call");
            eprintln!("approve: {what}, nonce {}", review.raw_tx().nonce);
            self.key(review.raw_tx().from)
                .await
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
    let log = Arc::new(SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?);
    let token = AccessToken::new(env("PLATFORM_TOKEN")?);
    let client = PlatformClient::new(&env("PLATFORM_URL")?, token, ClientOptions::default())?;
    let flows = Flows::builder(
        client,
        Arc::new(Journal::open(env("JOURNAL")?)?),
        log.clone(),
    )
    .bridge(bridge.clone())
    .gas_price(GasPriceCap::NodeQuote)
    .build();
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(env("PASSPHRASE_FILE")?)?);
    let passphrase = Passphrase::new(text.trim_end().to_owned());
    let mut wallet = Wallet {
        keystore,
        passphrase,
    };

    // A redeem: ST burned on the side chain, MT paid out by the platform.
    let amount = tx::amount::parse_units(&env("AMOUNT")?, bridge.side.decimals)?;
    let redeemed = match flows.redeem(from, amount, &mut wallet, &mut Quiet).await {
        Err(e) if e.is_refusal() => return Err(format!("nothing signed: {e}").into()),
        other => other?,
    };
    let status = redeemed.redemption.map(|r| r.outcome());
    println!("redeem {} {status:?}", redeemed.submitted.tx_hash);

    // A swap: MT sent to the address the platform issues, ST credited.
    let swap = SwapSpec {
        from,
        amount: tx::amount::parse_units(&env("AMOUNT")?, bridge.main.decimals)?,
        nonce: NonceSource::Node,
        gas: GasSource::Node,
        wait: true,
    };
    let swapped = flows.swap(&swap, &mut wallet, &mut Quiet).await?;
    println!("swap {} {:?}", swapped.submitted.tx_hash, swapped.state);

    // Offline: the wallet's own transfer of 1 ST base unit to itself at the next nonce,
    // checked against its intent and the bridge's trust root; signed only once the
    // signing log has it (the log refuses a second signature at that nonce).
    let side = &bridge.side;
    let intent = Intent::transfer(side.token, side.chain_id, from, U256::from(1));
    let raw = RawTx {
        from,
        to: side.token,
        data: tx::calldata::encode("transfer", &intent.args)?.into(),
        nonce: redeemed.submitted.nonce + 1,
        gas_limit: 100_000,
        gas_price: 1_000_000_000,
        chain_id: side.chain_id,
        value: U256::ZERO,
    };
    let mut policy = flows.trust_root();
    policy.max_gas_price = Some(100_000_000_000); // offline: no node to quote
    let now = tx::log::unix_now();
    let context = Context {
        signer: from,
        gas_price_quote: None,
        nonce: Nonce::Next(NonceFacts {
            fixed: Some(raw.nonce),
            ..NonceFacts::default()
        }),
        spent: tx::limits::read_spent(&policy, &raw, None, log.as_ref(), now)?,
    };
    let verified = tx::verify(&raw, Some(&intent), &policy, &context)?;
    let signed = tx::sign_and_log(&verified, &wallet.key(from).await?, log.as_ref(), now)?;
    println!("offline {} in the log, not sent", signed.hash);
    Ok(())
}
