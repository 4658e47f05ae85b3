//! What a wallet matches when a flow does not sign, by type, never by text: a wrong
//! passphrase (the keystore's own error, found by walking `source()`), a "no", a sender
//! short of ST, a gas price over the side chain's cap, and a batch the run would refuse.
//! Nothing is signed. Settings from the environment: PROFILE, PLATFORM_TOKEN, KEYSTORE,
//! FROM, JOURNAL. Prints one line per refusal.
#![allow(clippy::print_stdout)] // a program owns its terminal
use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions};
use bridgectl_flow::tx::Field;
use bridgectl_flow::{ApproveFuture, Approver, BatchItem, BatchOp, Error, Flows, GasPriceCap};
use bridgectl_flow::{Journal, Policy, PrivateKeySigner, Profile, Quiet, Review, U256};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;

/// Unlocks with `passphrase` when it has one, else says no.
struct Wallet(Keystore, Option<Passphrase>);

impl Approver for Wallet {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            let Some(passphrase) = self.1.clone() else {
                return Err(Error::Declined("the person said no".into()));
            };
            let from = review.raw_tx().from.to_string();
            self.0
                .unlock_async(&from, passphrase)
                .await
                .map_err(Error::unlock_failed)
        })
    }
}

/// The keystore's error behind `err`, found as any `std::error::Error` user finds it.
fn keystore_error<'e>(
    err: &'e (dyn std::error::Error + 'static),
) -> Option<&'e bridgectl_keystore::Error> {
    let mut next = Some(err);
    while let Some(cause) = next {
        if let Some(found) = cause.downcast_ref() {
            return Some(found);
        }
        next = cause.source();
    }
    None
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let bridge = profile.bridge()?;
    let keystore = Keystore::open(env("KEYSTORE")?)?;
    let from = keystore.find(&env("FROM")?)?.address;
    let log = Arc::new(SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?);
    let journal = Arc::new(Journal::open(env("JOURNAL")?)?);
    let token = AccessToken::new(env("PLATFORM_TOKEN")?);
    let flows = |side_policy: Policy| -> Result<Flows, bridgectl_flow::ProfileError> {
        let client = profile.client(token.clone(), ClientOptions::default())?;
        Ok(Flows::builder(client, journal.clone(), log.clone())
            .bridge(bridge.clone())
            .chain_policy(bridge.side.chain_id, side_policy)
            .gas_price(GasPriceCap::NodeQuote)
            .build())
    };
    let open = flows(Policy::default())?;
    let one = U256::from(10).pow(U256::from(bridge.side.decimals));

    let mut wrong = Wallet(
        keystore.clone(),
        Some(Passphrase::new("not the passphrase")),
    );
    let e = open
        .redeem(from, one, &mut wrong, &mut Quiet)
        .await
        .expect_err("wrong");
    let found = keystore_error(&e).filter(|k| k.is_wrong_passphrase());
    println!(
        "wrong passphrase: {} (walked source(): {})",
        e.is_wrong_passphrase(),
        found.is_some()
    );

    let e = open
        .redeem(from, one, &mut Wallet(keystore.clone(), None), &mut Quiet)
        .await;
    let e = e.expect_err("declined");
    println!(
        "declined: {:?}, resumable flow: {}",
        e.declined(),
        e.stopped_flow().is_some()
    );

    let all = U256::from(u128::MAX);
    match open
        .redeem(from, all, &mut Wallet(keystore.clone(), None), &mut Quiet)
        .await
    {
        Err(Error::BalanceTooLow(short)) => println!("balance too low: holds {}", short.holds),
        other => return Err(format!("expected BalanceTooLow, got {other:?}").into()),
    }

    let capped = flows(Policy {
        max_gas_price: Some(1),
        ..Policy::default()
    })?;
    let e = capped
        .redeem(from, one, &mut Wallet(keystore.clone(), None), &mut Quiet)
        .await;
    let e = e.expect_err("over the cap");
    let field = e
        .refusal()
        .and_then(bridgectl_flow::tx::Error::refused_field);
    println!(
        "refused: {} (gas price: {})",
        e.is_refusal(),
        field == Some(Field::GasPrice)
    );

    let items = [BatchItem::new(
        "payout-1",
        BatchOp::Redeem { from, amount: one },
    )];
    match capped.check_batch(&items).await?.verdict() {
        Err(Error::BatchRefused { refused, .. }) => {
            // The item's error is the one the single redeem above returned.
            let field = refused[0].error.refusal().and_then(|e| e.refused_field());
            println!(
                "batch refused: {} (gas price: {})",
                refused[0].id,
                field == Some(Field::GasPrice)
            );
        }
        other => return Err(format!("expected BatchRefused, got {other:?}").into()),
    }
    Ok(())
}
