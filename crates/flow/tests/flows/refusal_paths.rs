//! One refusal, one typed answer, whatever the path: an item above its sender's balance
//! is [`Error::BalanceTooLow`] from a single redeem, from `check_batch().verdict()`, from
//! `plan().verdict()` and from a batch run's item, so a wallet matches it once
//! ([`Error::cause`]). On the sandbox, with its node and platform: nothing is signed on
//! any path.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy_primitives::U256;
use bridgectl_flow::{
    ApproveFuture, Approver, BatchItem, BatchOp, BatchOptions, Error, ItemStatus, PrivateKeySigner,
    Quiet, RefusalCause, Review,
};
use bridgectl_sandbox::{Sandbox, SandboxConfig};
use futures_util::StreamExt;

use crate::common;

/// Never reached: every path refuses before a key is asked for.
struct NeverAsked;

impl Approver for NeverAsked {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, _: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async { panic!("a refused redeem asked for its key") })
    }
}

/// The one match a wallet writes: the cause, and the typed balance error behind it.
fn balance_too_low(path: &str, e: &Error, holds: U256) {
    assert_eq!(e.cause(), Some(RefusalCause::Balance), "{path}: {e:?}");
    match e {
        Error::BalanceTooLow(short) => {
            assert_eq!(short.holds.amount, holds, "{path}");
            assert_eq!(short.needs.amount, U256::from(u128::MAX), "{path}");
        }
        other => panic!("{path}: not BalanceTooLow: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_above_the_balance_is_balance_too_low_on_every_path() {
    let sandbox = Sandbox::start(SandboxConfig::default())
        .await
        .expect("sandbox");
    let info = sandbox.info().clone();
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, "paths passphrase");
    let log = Arc::new(common::signing_log(&keystore));
    let (flows, journal) = common::flows(&info, dir.path(), log);
    let from = info.dev.address;
    let holds = flows
        .token_balance(bridgectl_flow::TokenSide::St, from)
        .await
        .expect("balance");
    let amount = U256::from(u128::MAX);
    assert!(holds < amount);
    let items = [BatchItem::new("too-much", BatchOp::Redeem { from, amount })];

    // A single redeem.
    let single = flows
        .redeem(from, amount, &mut NeverAsked, &mut Quiet)
        .await
        .expect_err("above the balance");
    balance_too_low("redeem", &single, holds);

    // The batch's check, then its plan: the batch refused, its item with the same error.
    let refused = |path: &str, verdict: Result<(), Error>| {
        let e = verdict.expect_err(path);
        assert!(matches!(e, Error::BatchRefused { .. }), "{path}: {e:?}");
        assert_eq!(e.refused_items().len(), 1, "{path}: {e:?}");
        balance_too_low(path, &e.refused_items()[0].error, holds);
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
            &mut bridgectl_keystore::Passphrase::new("paths passphrase".to_owned()),
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
    balance_too_low("batch", error.expect("a flow's error"), holds);

    // Nothing signed on any path.
    assert!(
        journal
            .list(100)
            .expect("list")
            .iter()
            .all(|f| f.signed_tx.is_none()),
        "nothing signed"
    );
}
