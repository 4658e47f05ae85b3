//! A wallet paying out a batch of redeems with one approval, its key behind a JSON-RPC
//! signing endpoint (Frame, a hardware wallet; anvil in the test): the batch is checked
//! as the run would check it, approved once, then run, each signature by the endpoint.
//! Settings from the environment: PROFILE, PLATFORM_TOKEN, SIGNER_URL,
//! FROM, LOG_DIR, JOURNAL, COUNT and AMOUNT (each item's).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program owns its terminal
use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions};
use bridgectl_flow::rpc::RpcSigner;
use bridgectl_flow::{BatchItem, BatchOp, BatchOptions, Flows, GasPriceCap, ItemStatus, Profile};
use bridgectl_flow::{Journal, journal::FlowKind};
use bridgectl_keystore::Keystore;
use bridgectl_signing_log::SigningLogDb;
use futures_util::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let profile = Profile::load(env("PROFILE")?, "sandbox")?;
    let from = env("FROM")?.parse()?;
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
    let items: Vec<BatchItem> = (0..env("COUNT")?.parse::<usize>()?)
        .map(|i| BatchItem::new(format!("payout-{i}"), BatchOp::Redeem { from, amount }))
        .collect();
    // What the run would refuse (limits, allowlist, caps, gas) is refused now, unsigned.
    flows.check_batch(&items).await?.verdict()?;
    // The one approval: a wallet shows the plan and asks its person here.
    eprintln!(
        "approved: {} redeems of {amount} base units from {from}",
        items.len()
    );
    let batch = flows.create_batch("example", &items)?;
    let signer = RpcSigner::new(&env("SIGNER_URL")?, from)?;
    let mut results = flows.batch(&batch.batch_id, vec![signer], BatchOptions::default())?;
    let mut completed = 0;
    while let Some(item) = results.next().await {
        completed += usize::from(item.status == ItemStatus::Completed);
    }
    let redeems = flows.journal().list(1_000)?;
    let redeems = redeems
        .iter()
        .filter(|f| f.kind == FlowKind::Redeem)
        .count();
    println!(
        "{} {completed} completed {redeems} journaled",
        batch.batch_id
    );
    Ok(())
}
