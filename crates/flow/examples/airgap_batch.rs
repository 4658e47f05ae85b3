//! A batch of redeems paid out across an air gap. Both halves run in this one program;
//! in a wallet they are two machines, and the two files travel between them on a USB
//! stick or as QR codes:
//! 1. online: the batch is planned (refused here as the run would refuse it), then
//!    prepared: each item's platform rawTx verified against the wallet's own redeem, its
//!    nonce reserved, all of them in one request file;
//! 2. offline (no network, the profile the only trust root): every item of the request
//!    checked as a single sign request is, reviewed once, and signed with the key
//!    unlocked from the keystore, each signature in the keystore's signing log;
//! 3. online again: the signed file checked against what was prepared, then sent and
//!    followed to its end.
//!
//! Settings from the environment: PROFILE, PLATFORM_TOKEN, KEYSTORE, FROM (address or
//! label), PASSPHRASE_FILE, JOURNAL (the online machine's; the offline machine's is
//! beside it), AMOUNT (each of the three items'). Prints "batchId N completed".
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::collections::BTreeMap;
use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions};
use bridgectl_flow::tx::batch::{BatchOrigin, BatchRequest, SignedBatch};
use bridgectl_flow::{BatchItem, BatchOp, BatchOptions, BatchSigning, Flows, GasPriceCap};
use bridgectl_flow::{ItemStatus, Journal, OfflineSigner, Policy, PrivateKeySigner, Profile};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_signing_log::SigningLogDb;
use futures_util::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let keystore = Keystore::open(env("KEYSTORE")?)?;
    let from = keystore.find(&env("FROM")?)?.address;
    let journal = std::path::PathBuf::from(env("JOURNAL")?);

    // 1. Online. This machine holds no key: its signing log is its own, empty, and
    // knows the sender as a key that signs elsewhere.
    let token = AccessToken::new(env("PLATFORM_TOKEN")?);
    let client = profile.client(token, ClientOptions::default())?;
    let online_log = SigningLogDb::open(journal.with_extension("online-log"))?;
    let flows = Flows::builder(
        client,
        Arc::new(Journal::open(&journal)?),
        Arc::new(online_log.with_known_keys(vec![from])),
    )
    .bridge(profile.bridge()?)
    .policy(profile.trust_root(Policy::default()))
    .gas_price(GasPriceCap::NodeQuote)
    .build();
    let amount = bridgectl_tx::amount::parse_units(&env("AMOUNT")?, flows.bridge()?.side.decimals)?;
    let items: Vec<BatchItem> = (0..3)
        .map(|i| BatchItem::new(format!("airgap-{i}"), BatchOp::Redeem { from, amount }))
        .collect();
    // No maximum total of the wallet's own; what the run would refuse is refused now.
    flows.plan(&items, &BTreeMap::new()).await?.verdict()?;
    let prepared = flows
        .prepare_batch("airgap_batch", &items, BatchOrigin::default(), 1)
        .await?;
    // Items the checks refused are left out, each with the error a single redeem gives.
    for refused in &prepared.refused {
        eprintln!("left out: {} ({:?})", refused.reason, refused.error.cause());
    }
    // The sender's first nonce as the operator read it here: offline, its first item
    // must have it.
    let first_nonce = prepared.request.items[0].raw_tx.nonce;
    let request_file = prepared.request.to_bytes();

    // 2. Offline: nothing the file says is trusted. Offline there is no node to quote a
    // gas price: the policy caps it.
    let policy = profile.trust_root(Policy {
        max_gas_price: Some(100_000_000_000),
        ..Policy::default()
    });
    let offline_journal = Journal::open(journal.with_extension("offline"))?;
    let log = SigningLogDb::open_in(keystore.dir(), keystore.signers()?)?;
    let signer = OfflineSigner {
        journal: &offline_journal,
        signing_log: &log,
        policy: &policy,
    };
    let request = BatchRequest::parse(&request_file)?;
    let nonces = BTreeMap::from([(from, first_nonce)]);
    let checked = signer.check_batch(&BatchSigning {
        request: &request,
        input_name: "request file",
        nonces: &nonces,
        commit_every: 10,
    })?;
    // The one review a person confirms before the key is unlocked.
    let review = checked.review(&[]);
    eprintln!(
        "offline: {} to sign, {} refused",
        review.signing,
        review.refused.len()
    );
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(env("PASSPHRASE_FILE")?)?);
    let passphrase = Passphrase::new(text.trim_end());
    let key = keystore.unlock_async(&from.to_string(), passphrase).await?;
    let signed_file = signer.sign_batch(&checked, &[key]).await?.to_bytes();
    drop(checked);

    // 3. Online again: each signed item checked against its prepared transaction and
    // journaled, then sent and followed. Nothing signs here: no keys.
    let accepted = flows
        .accept_signed_batch(&SignedBatch::parse(&signed_file)?)
        .await?;
    eprintln!(
        "online: {} accepted, {} refused",
        accepted.accepted,
        accepted.refused.len()
    );
    let options = BatchOptions {
        air_gapped: true,
        ..BatchOptions::default()
    };
    let no_keys: Vec<PrivateKeySigner> = Vec::new();
    let mut results = flows.batch(&accepted.batch_id, no_keys, options)?;
    let mut completed = 0;
    while let Some(item) = results.next().await {
        completed += usize::from(item.status == ItemStatus::Completed);
    }
    println!("{} {completed} completed", accepted.batch_id);
    Ok(())
}
