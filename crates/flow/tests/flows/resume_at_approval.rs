//! A redeem that stopped at its approval (the approver said no, as after every
//! passphrase attempt failed) is taken up again by `resume_with_approval` on the sandbox:
//! its journaled rawTx is checked again and signed, and the redemption completes. It
//! stays open (verified) until then, without holding its nonce: one whose nonce a new
//! redeem took meanwhile is refused as stale, and never signed.

use std::sync::Arc;

use alloy_primitives::U256;
use bridgectl_flow::{ApproveFuture, Approver, Error, FlowState, PrivateKeySigner, Quiet, Review};
use bridgectl_keystore::{Keystore, Passphrase};
use bridgectl_sandbox::{Sandbox, SandboxConfig};

use crate::common;

const PASSPHRASE: &str = "resume passphrase";

/// Says yes with the right passphrase, or no (as the CLI does once every attempt at the
/// prompt was wrong); counts how often it was asked.
struct Asks<'a> {
    keystore: &'a Keystore,
    yes: bool,
    asked: usize,
}

impl Approver for Asks<'_> {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            self.asked += 1;
            if !self.yes {
                return Err(Error::Declined("wrong passphrase, three times".into()));
            }
            let mut passphrase = Passphrase::new(PASSPHRASE.to_owned());
            self.keystore
                .unlock(&review.raw_tx().from.to_string(), &mut passphrase)
                .map_err(Error::unlock_failed)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_stopped_at_its_approval_is_resumed_or_refused_as_stale() {
    let sandbox = Sandbox::start(SandboxConfig::default())
        .await
        .expect("sandbox");
    let info = sandbox.info().clone();
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = common::dev_keystore(dir.path(), &info, PASSPHRASE);
    let (flows, journal) =
        common::flows(&info, dir.path(), Arc::new(common::signing_log(&keystore)));
    let from = info.dev.address;
    let amount = U256::from(10).pow(U256::from(info.side.decimals));
    let mut no = Asks {
        keystore: &keystore,
        yes: false,
        asked: 0,
    };
    let mut yes = Asks {
        keystore: &keystore,
        yes: true,
        asked: 0,
    };

    // Stopped at the approval: the error names the flow, nothing is signed.
    let stopped = |r: Result<bridgectl_flow::RedeemOutcome, Error>| match r {
        Err(Error::StoppedAtApproval { tx_id, source }) => {
            assert!(matches!(*source, Error::Declined(_)), "{source:?}");
            tx_id
        }
        other => panic!("expected StoppedAtApproval, got {other:?}"),
    };
    let tx_id = stopped(flows.redeem(from, amount, &mut no, &mut Quiet).await);
    let rec = journal.get(&tx_id).expect("flow");
    // Not over: it stays verified, its transaction journaled for the resume.
    assert_eq!(rec.state, FlowState::Verified);
    assert!(rec.signed_tx.is_none() && rec.raw_tx.is_some(), "{rec:?}");
    assert!(bridgectl_flow::can_resume(&journal, &rec));

    // `resume` never signs: it says the approver is needed.
    assert!(matches!(
        flows.resume(&tx_id, &mut Quiet).await,
        Err(Error::NeedsApproval { .. })
    ));
    // With the approver: checked again, asked once, signed, sent, redeemed.
    let resumed = flows
        .resume_with_approval(&tx_id, &mut yes, &mut Quiet)
        .await
        .expect("resumed");
    assert_eq!(yes.asked, 1);
    assert!(resumed.signed_now);
    assert_eq!(resumed.submitted.tx_id, tx_id);
    let redemption = resumed
        .redemption
        .expect("a redeem waits for its redemption");
    assert!(redemption.is_success(), "{redemption:?}");
    let rec = journal.get(&tx_id).expect("flow");
    assert_eq!(rec.state, FlowState::Completed);
    assert_eq!(
        rec.tx_hash.as_deref(),
        Some(resumed.submitted.tx_hash.to_string().as_str())
    );
    assert!(matches!(
        flows
            .resume_with_approval(&tx_id, &mut yes, &mut Quiet)
            .await,
        Err(Error::AlreadyCompleted { .. })
    ));
    assert_eq!(yes.asked, 1, "a completed flow asks nothing");

    // Stopped again; meanwhile a new redeem signs the same nonce: the old transaction is
    // stale, refused before the approver is asked, and the flow is over.
    let stale_id = stopped(flows.redeem(from, amount, &mut no, &mut Quiet).await);
    let stale_raw = journal.get(&stale_id).expect("flow").raw_tx.expect("rawTx");
    let stale_nonce = bridgectl_tx::RawTx::from_value(&stale_raw)
        .expect("rawTx")
        .nonce;
    let fresh = flows
        .redeem(from, amount, &mut yes, &mut Quiet)
        .await
        .expect("a new redeem");
    assert_eq!(yes.asked, 2);
    assert_eq!(
        fresh.submitted.nonce, stale_nonce,
        "the new redeem took the stopped flow's nonce"
    );
    let err = flows
        .resume_with_approval(&stale_id, &mut yes, &mut Quiet)
        .await
        .expect_err("stale");
    assert!(matches!(err, Error::Stale { .. }), "{err:?}");
    let text = bridgectl_flow::chain(&err);
    assert!(text.contains("run the command again"), "{text}");
    assert!(text.contains("nonce"), "{text}");
    assert_eq!(
        yes.asked, 2,
        "a stale transaction never reaches the approver"
    );
    let rec = journal.get(&stale_id).expect("flow");
    assert!(rec.signed_tx.is_none());
    assert!(!bridgectl_flow::can_resume(&journal, &rec));
    match flows
        .resume_with_approval(&stale_id, &mut yes, &mut Quiet)
        .await
    {
        Err(e @ Error::NothingToResume { .. }) => {
            assert!(e.to_string().contains("`refused`"), "{e}");
        }
        other => panic!("expected NothingToResume, got {other:?}"),
    }
    sandbox.shutdown().await.expect("shutdown");
}
