//! One refusal, one typed answer, whatever the path: an item the run would refuse is
//! refused with the same error by a single redeem, by `check_batch().verdict()`, by
//! `plan().verdict()` and as a batch run's item, so a wallet matches it once
//! ([`Error::cause`]). On the sandbox, with its node and platform, for a balance too low,
//! a gas price over the chain's cap, an amount over a spending limit and a nonce another
//! flow holds: nothing is signed on any path.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy_primitives::{Address, U256};
use bridgectl_flow::{
    ApproveFuture, Approver, BatchItem, BatchOp, BatchOptions, Error, Flows, GasPriceCap,
    ItemStatus, Journal, Policy, PrivateKeySigner, Quiet, RefusalCause, Review,
};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_sandbox::{Sandbox, SandboxConfig, SandboxInfo};
use futures_util::StreamExt;

use crate::common;

const PASSPHRASE: &str = "paths passphrase";

/// Never reached: every path refuses before a key is asked for.
struct NeverAsked;

impl Approver for NeverAsked {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, _: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async { panic!("a refused redeem asked for its key") })
    }
}

/// Flows over the sandbox with `side` as the side chain's policy, the signing log of
/// `keystore`, a journal of their own in `dir`.
fn flows(info: &SandboxInfo, keystore: &Keystore, dir: &std::path::Path, side: Policy) -> Flows {
    let client = common::client(info);
    let journal = Arc::new(Journal::open(dir.join("journal.sqlite3")).expect("journal"));
    let bridge = common::bridge(info);
    Flows::builder(client, journal, Arc::new(common::signing_log(keystore)))
        .bridge(bridge.clone())
        .chain_policy(bridge.side.chain_id, side)
        .gas_price(GasPriceCap::NodeQuote)
        .build()
}

/// Redeems `amount` of `from` on every path; `each` is the one match a wallet writes,
/// given each path's error for the item. Nothing may be signed.
async fn on_every_path(
    flows: &Flows,
    keystore: &Keystore,
    from: Address,
    amount: U256,
    each: impl Fn(&str, &Error),
) {
    let items = [BatchItem::new("item", BatchOp::Redeem { from, amount })];

    let single = flows
        .redeem(from, amount, &mut NeverAsked, &mut Quiet)
        .await
        .expect_err("refused");
    each("redeem", &single);

    // The batch's check, then its plan: the batch refused, its item with the same error.
    let refused = |path: &str, verdict: Result<(), Error>| {
        let e = verdict.expect_err(path);
        assert!(matches!(e, Error::BatchRefused { .. }), "{path}: {e:?}");
        assert_eq!(e.refused_items().len(), 1, "{path}: {e:?}");
        each(path, &e.refused_items()[0].error);
    };
    let check = flows.check_batch(&items).await.expect("checked");
    refused("check_batch", check.verdict());
    let plan = flows.plan(&items, &BTreeMap::new()).await.expect("planned");
    refused("plan", plan.verdict());

    // The run, unchecked: the item fails with the single redeem's error.
    let batch = flows.create_batch("paths", &items).expect("created");
    let key = keystore
        .unlock(
            &from.to_string(),
            &mut Passphrase::new(PASSPHRASE.to_owned()),
        )
        .expect("unlock");
    let results: Vec<_> = flows
        .batch(&batch.batch_id, vec![key], BatchOptions::default())
        .expect("runs")
        .collect()
        .await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_ne!(results[0].status, ItemStatus::Completed, "{results:?}");
    let error = results[0].error.as_ref().and_then(|e| e.flow());
    each("batch", error.expect("a flow's error"));

    let journal = flows.journal().list(100).expect("list");
    assert!(journal.iter().all(|f| f.signed_tx.is_none()), "{journal:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refusal_is_one_typed_error_on_every_path() {
    let sandbox = Sandbox::start(SandboxConfig::default())
        .await
        .expect("sandbox");
    let info = sandbox.info().clone();
    let from = info.dev.address;

    // Above the balance: BalanceTooLow, naming what the sender holds.
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, PASSPHRASE);
    let open = flows(&info, &keystore, dir.path(), Policy::default());
    let holds = open
        .token_balance(bridgectl_flow::TokenSide::St, from)
        .await
        .expect("balance");
    let all = U256::from(u128::MAX);
    assert!(holds < all);
    on_every_path(&open, &keystore, from, all, |path, e| {
        assert_eq!(e.cause(), Some(RefusalCause::Balance), "{path}: {e:?}");
        match e {
            Error::BalanceTooLow(short) => {
                assert_eq!(short.holds.amount, holds, "{path}");
                assert_eq!(short.needs.amount, all, "{path}");
            }
            other => panic!("{path}: not BalanceTooLow: {other:?}"),
        }
    })
    .await;

    // A gas price over the side chain's cap: the verifier's refusal of that field.
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, PASSPHRASE);
    let capped = Policy {
        max_gas_price: Some(1),
        ..Policy::default()
    };
    let capped = flows(&info, &keystore, dir.path(), capped);
    let one = U256::from(10).pow(U256::from(info.side.decimals));
    on_every_path(&capped, &keystore, from, one, |path, e| {
        assert_eq!(e.cause(), Some(RefusalCause::GasCap), "{path}: {e:?}");
        let field = e
            .refusal()
            .and_then(bridgectl_flow::tx::Error::refused_field);
        assert_eq!(
            field,
            Some(bridgectl_flow::tx::Field::GasPrice),
            "{path}: {e:?}"
        );
    })
    .await;

    // Above the most one transaction may move: the verifier's limit refusal.
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, PASSPHRASE);
    let mut limited = Policy::default();
    limited.limits.insert(
        info.side.symbol.clone(),
        bridgectl_flow::tx::policy::Limit {
            per: None,
            max: None,
            max_per_tx: Some("0.5".into()),
        },
    );
    let limited = flows(&info, &keystore, dir.path(), limited);
    on_every_path(&limited, &keystore, from, one, |path, e| {
        assert_eq!(e.cause(), Some(RefusalCause::Limit), "{path}: {e:?}");
        assert!(
            matches!(e.refusal(), Some(bridgectl_flow::tx::Error::Limit { .. })),
            "{path}: {e:?}"
        );
    })
    .await;

    // The next nonce held by a batch prepared for the air gap (held until it is
    // submitted or abandoned): NonceHeld, naming the flow that holds it.
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, PASSPHRASE);
    let held = flows(&info, &keystore, dir.path(), Policy::default());
    let prepared = held
        .prepare_batch(
            "held",
            &[BatchItem::new(
                "first",
                BatchOp::Redeem { from, amount: one },
            )],
            bridgectl_flow::tx::batch::BatchOrigin::default(),
            1,
        )
        .await
        .expect("prepared");
    assert!(prepared.refused.is_empty(), "{:?}", prepared.refused);
    let holder = prepared.request.items[0].tx_id.clone();
    on_every_path(&held, &keystore, from, one, |path, e| {
        assert_eq!(e.cause(), Some(RefusalCause::Nonce), "{path}: {e:?}");
        match e {
            Error::NonceHeld { by, .. } => assert_eq!(*by, holder, "{path}"),
            other => panic!("{path}: not NonceHeld: {other:?}"),
        }
    })
    .await;
}
