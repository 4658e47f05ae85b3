//! A clock set ahead cannot reset a spending window. Limit 10 ST a day: two redeems of
//! 8 ST signed under a clock moved 25 h and then 50 h ahead (the injectable clock of the
//! flows) would each have started a new window by that clock alone; the window ends at the
//! chain's newest block time (plus a tolerance) instead, so the second is refused, and the
//! refusal names both times.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::U256;
use bridgectl_flow::clock::Clock;
use bridgectl_flow::{
    ApproveFuture, Approver, Error, Flows, GasPriceCap, PrivateKeySigner, Quiet, Review,
    WaitOptions,
};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_sandbox::{Sandbox, SandboxConfig};

use crate::common;

const PASSPHRASE: &str = "clock passphrase";

/// The system clock moved ahead by a number of seconds the test sets.
#[derive(Debug, Default)]
struct Ahead(AtomicU64);

impl Clock for Ahead {
    fn now(&self) -> u64 {
        bridgectl_tx::signing_log::unix_now() + self.0.load(Ordering::SeqCst)
    }
}

struct Unlocks<'a>(&'a Keystore);

impl Approver for Unlocks<'_> {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            self.0
                .unlock_async(
                    &review.raw_tx().from.to_string(),
                    Passphrase::new(PASSPHRASE.to_owned()),
                )
                .await
                .map_err(Error::unlock_failed)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_set_ahead_of_the_chain_does_not_start_a_new_window() {
    let sandbox = Sandbox::start(SandboxConfig::default())
        .await
        .expect("sandbox");
    let info = sandbox.info().clone();
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, PASSPHRASE);
    let log = Arc::new(common::signing_log(&keystore));
    let journal = Arc::new(bridgectl_flow::Journal::open(dir.path().join("j.sqlite3")).expect("j"));
    let client = bridgectl_flow::client::PlatformClient::new(
        &info.base_url,
        bridgectl_flow::client::AccessToken::new(info.token.expose_secret()),
        bridgectl_flow::client::ClientOptions::default(),
    )
    .expect("client");
    let mut policy = bridgectl_flow::Policy::default();
    policy.limits.insert(
        "ST".into(),
        bridgectl_tx::policy::Limit {
            per: Some(bridgectl_tx::policy::Window(24 * 3600)),
            max: Some("10".into()),
            max_per_tx: None,
        },
    );
    let clock = Arc::new(Ahead::default());
    let flows = Flows::builder(client, journal, log)
        .bridge(common::bridge(&info))
        .policy(policy)
        .clock(clock.clone())
        .wait(WaitOptions {
            interval: std::time::Duration::from_millis(200),
            ..WaitOptions::default()
        })
        .gas_price(GasPriceCap::NodeQuote)
        .build();
    let eight = U256::from(8) * U256::from(10).pow(U256::from(info.side.decimals));
    let from = info.dev.address;
    let mut approver = Unlocks(&keystore);

    clock.0.store(25 * 3600, Ordering::SeqCst);
    let first = flows.redeem(from, eight, &mut approver, &mut Quiet).await;
    assert!(first.is_ok(), "{first:?}");
    clock.0.store(50 * 3600, Ordering::SeqCst);
    let second = flows.redeem(from, eight, &mut approver, &mut Quiet).await;
    let Err(e) = second else {
        panic!("a second 8 ST within the chain's day was signed: {second:?}")
    };
    let refusal = e.refusal().map(ToString::to_string).unwrap_or_default();
    assert!(
        refusal.contains("10 ST per 24h") && refusal.contains("s ahead of it"),
        "{e:#?}"
    );
    sandbox.shutdown().await.expect("shutdown");
}
