//! The offline signer at batch scale through the library alone (no platform, no node): a
//! batch request checked item by item as single sign requests are (a refused item leaves
//! the rest of its sender out, a spending limit counts the batch's earlier items),
//! signed through any signer per sender in groups, and the same request again giving
//! the same bytes with nothing signed.

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use bridgectl_flow::journal::Journal;
use bridgectl_flow::{BatchSigning, CheckedBatch, ItemCheck, OfflineSigner, PrivateKeySigner};
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::batch::{BatchOrigin, BatchRequest, BatchRequestItem};
use bridgectl_tx::request::{Intent, Token};
use bridgectl_tx::{Policy, RawTx};

const ST: Address = Address::repeat_byte(0x57);
const CHAIN: u64 = 1337;

fn whole(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

fn policy() -> Policy {
    let mut p = Policy {
        max_gas_price: Some(1_000_000_000),
        ..Policy::default()
    };
    p.limits.insert(
        "st".into(),
        bridgectl_tx::policy::Limit {
            per: Some(bridgectl_tx::policy::Window(86_400)),
            max: Some("10".into()),
            max_per_tx: None,
        },
    );
    p.trusted.contract(
        ST,
        CHAIN,
        Some(Token {
            symbol: "ST".into(),
            decimals: 18,
        }),
    );
    p
}

/// A redeem of `amount` whole ST from `from` at `nonce`, its intent asking for `asked`.
fn item(index: usize, from: Address, nonce: u64, amount: u64, asked: u64) -> BatchRequestItem {
    let data = bridgectl_tx::calldata::encode(
        "redeem",
        &BTreeMap::from([("_amount".to_owned(), whole(amount).to_string())]),
    )
    .expect("calldata");
    BatchRequestItem {
        index,
        id: format!("item-{index}"),
        tx_id: uuid::Uuid::new_v4().to_string(),
        raw_tx: RawTx {
            from,
            to: ST,
            data: data.into(),
            nonce,
            gas_limit: 100_000,
            gas_price: 1_000_000_000,
            chain_id: CHAIN,
            value: U256::ZERO,
        },
        intent: Intent::redeem(ST, CHAIN, whole(asked)),
    }
}

fn request(items: Vec<BatchRequestItem>) -> BatchRequest {
    let request = BatchRequest::new(
        uuid::Uuid::new_v4().to_string(),
        BatchOrigin::default(),
        items,
    )
    .expect("request");
    // As read from its file: named by the SHA-256 of its bytes.
    BatchRequest::parse(&request.to_bytes()).expect("reads back")
}

/// The offline machine: its journal, its signing log (of `keys`), its policy.
struct Machine {
    _dir: tempfile::TempDir,
    journal: Journal,
    log: SigningLogDb,
    policy: Policy,
}

impl Machine {
    fn new(keys: &[&PrivateKeySigner]) -> Machine {
        let dir = tempfile::tempdir().expect("tmp");
        let log = SigningLogDb::open(dir.path().join("log.sqlite3"))
            .expect("log")
            .with_known_keys(keys.iter().map(|k| k.address()).collect());
        Machine {
            _dir: dir,
            journal: Journal::in_memory().expect("journal"),
            log,
            policy: policy(),
        }
    }

    fn signer(&self) -> OfflineSigner<'_> {
        OfflineSigner {
            journal: &self.journal,
            signing_log: &self.log,
            policy: &self.policy,
        }
    }
}

/// `req` checked by `signer`, each sender's first nonce given by `nonces`, signatures
/// committed `commit_every` at a time.
fn check<'j>(
    signer: &OfflineSigner<'j>,
    req: &BatchRequest,
    nonces: &[(&PrivateKeySigner, u64)],
    commit_every: usize,
) -> CheckedBatch<'j> {
    let nonces: BTreeMap<Address, u64> = nonces.iter().map(|(k, n)| (k.address(), *n)).collect();
    signer
        .check_batch(&BatchSigning {
            request: req,
            input_name: "requests.json",
            nonces: &nonces,
            commit_every,
        })
        .expect("checked")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn a_batch_is_checked_as_single_requests_signed_in_groups_and_given_again_unchanged() {
    let (a, b) = (PrivateKeySigner::random(), PrivateKeySigner::random());
    let machine = Machine::new(&[&a, &b]);
    let (log, signer) = (&machine.log, machine.signer());
    // Item 2 asks for 1 ST and its transaction redeems 3: refused, and item 3 (the same
    // sender's next nonce) with it; the other sender's items are signed.
    let req = request(vec![
        item(0, a.address(), 5, 1, 1),
        item(1, b.address(), 0, 2, 2),
        item(2, a.address(), 6, 3, 1),
        item(3, a.address(), 7, 1, 1),
        item(4, b.address(), 1, 2, 2),
        item(5, a.address(), 8, 1, 1),
    ]);
    let checked = check(&signer, &req, &[(&a, 5), (&b, 0)], 3);
    let outcome: Vec<&str> = checked
        .items
        .iter()
        .map(|i| match &i.check {
            ItemCheck::Sign(_) => "sign",
            ItemCheck::SignedBefore(_) => "before",
            ItemCheck::Refused(_) => "refused",
        })
        .collect();
    assert_eq!(
        outcome,
        ["sign", "sign", "refused", "refused", "sign", "refused"]
    );
    let refused = checked.refused();
    assert!(
        refused[0].reason.contains("_amount"),
        "{}",
        refused[0].reason
    );
    assert!(refused[1].reason.contains("gap"), "{}", refused[1].reason);
    let review = checked.review(&[]);
    assert_eq!((review.signing, review.signed_before), (3, 0));
    let limits: Vec<(Address, U256)> = review.limits.iter().map(|l| (l.key, l.batch)).collect();
    assert!(limits.contains(&(a.address(), whole(1))), "{limits:?}");
    assert!(limits.contains(&(b.address(), whole(4))), "{limits:?}");
    assert_eq!(checked.signers_needed(), [a.address(), b.address()]);

    let signed = block_on(signer.sign_batch(&checked, &[a.clone(), b.clone()])).expect("signed");
    assert_eq!(signed.items.len(), 3);
    assert_eq!(
        signed.refused.iter().map(|r| r.index).collect::<Vec<_>>(),
        [2, 3, 5]
    );
    assert_eq!(log.verify(None).expect("log").count, 3);
    for i in &signed.items {
        let d = bridgectl_tx::decode::decode_signed(&i.signed_tx).expect("decodes");
        assert_eq!((d.sender, d.hash, d.nonce), (i.from, i.tx_hash, i.nonce));
    }

    // The same request again: the same bytes, nothing signed, no key needed.
    let again = check(&signer, &req, &[(&a, 5), (&b, 0)], 3);
    assert!(again.signers_needed().is_empty());
    let none: [PrivateKeySigner; 0] = [];
    let same = block_on(signer.sign_batch(&again, &none)).expect("same");
    assert_eq!(same.to_bytes(), signed.to_bytes());
    assert_eq!(log.verify(None).expect("log").count, 3);
}

#[test]
fn a_limit_counts_the_batch_s_earlier_items_and_a_sender_without_a_known_nonce_is_refused() {
    let (a, b) = (PrivateKeySigner::random(), PrivateKeySigner::random());
    let machine = Machine::new(&[&a, &b]);
    let signer = machine.signer();
    // 4 + 4 ST pass the 10 ST window, the third 4 would cross it: refused and counted
    // nothing; b's first nonce is known to no one here.
    let req = request(vec![
        item(0, a.address(), 0, 4, 4),
        item(1, a.address(), 1, 4, 4),
        item(2, a.address(), 2, 4, 4),
        item(3, b.address(), 3, 1, 1),
    ]);
    let checked = check(&signer, &req, &[(&a, 0)], 256);
    let refused = checked.refused();
    assert_eq!(
        refused.iter().map(|r| r.index).collect::<Vec<_>>(),
        [2, 3],
        "{refused:?}"
    );
    // The window's "signed already" is the batch's own earlier items, and says so.
    assert!(
        refused[0].reason.contains("10 ST per 24h")
            && refused[0]
                .reason
                .contains("(counting 8 ST of this batch's earlier items as signed)"),
        "{}",
        refused[0].reason
    );
    assert!(refused[1].reason.contains("nonce"), "{}", refused[1].reason);
    let review = checked.review(&[]);
    assert_eq!(review.limits[0].batch, whole(8));
}

/// The nonces a checked batch reserved are given back however the signer ends (the
/// checked batch's guard, on drop): an error on the way (a sender with no signer) and a
/// batch dropped unsigned (declined) both leave the journal's floor of the unsigned
/// sender where it was, while an item signed before the error keeps its nonce.
#[test]
fn a_checked_batch_gives_back_the_nonces_of_items_not_signed_however_the_signer_ends() {
    let (a, b) = (PrivateKeySigner::random(), PrivateKeySigner::random());
    let machine = Machine::new(&[&a, &b]);
    let (journal, signer) = (&machine.journal, machine.signer());
    let floor = |who: &PrivateKeySigner| {
        journal
            .next_nonce(who.address(), CHAIN, None)
            .expect("floor")
    };
    let req = request(vec![
        item(0, a.address(), 5, 1, 1),
        item(1, b.address(), 0, 1, 1),
    ]);
    let checked = check(&signer, &req, &[(&a, 5), (&b, 0)], 1);
    assert_eq!((floor(&a), floor(&b)), (Some(6), Some(1)), "both reserved");
    // a's item signs and is journaled (its own group), then b has no signer.
    let e = block_on(signer.sign_batch(&checked, std::slice::from_ref(&a)))
        .expect_err("no signer for b");
    assert!(matches!(e, bridgectl_flow::Error::NoSigner { .. }), "{e}");
    drop(checked);
    assert_eq!(
        (floor(&a), floor(&b)),
        (Some(6), None),
        "b's nonce is free, a's signed"
    );

    // Checked, then declined: dropped with nothing signed.
    let req = request(vec![item(0, b.address(), 0, 1, 1)]);
    let checked = check(&signer, &req, &[(&b, 0)], 8);
    assert_eq!(floor(&b), Some(1));
    checked.stopped_by(&bridgectl_flow::Error::Declined("no".into()));
    drop(checked);
    assert_eq!(floor(&b), None, "a declined batch holds nothing");
}

/// Issue 51, 9: an item at a nonce its key signed another transaction at (through
/// another journal: this one has never seen it) is refused by the nonce guard in the
/// check, before any key is unlocked: its key is not among the signers needed, and the
/// other sender's item is signed. Without that check the key would be unlocked and the
/// append's own guard would refuse the whole group, the other sender's item with it.
#[test]
fn an_item_at_a_nonce_signed_elsewhere_is_refused_before_its_key_is_needed() {
    let (a, b) = (PrivateKeySigner::random(), PrivateKeySigner::random());
    let machine = Machine::new(&[&a, &b]);
    let earlier = request(vec![item(0, a.address(), 0, 1, 1)]);
    let signer = machine.signer();
    let checked = check(&signer, &earlier, &[(&a, 0), (&b, 0)], 16);
    block_on(signer.sign_batch(&checked, std::slice::from_ref(&a))).expect("nonce 0 signed");

    // Another journal, the same keystore's log: nonce 0 of `a` again, another amount.
    let other_journal = Journal::in_memory().expect("journal");
    let elsewhere = OfflineSigner {
        journal: &other_journal,
        ..machine.signer()
    };
    let req = request(vec![
        item(0, a.address(), 0, 2, 2),
        item(1, b.address(), 0, 1, 1),
    ]);
    let checked = check(&elsewhere, &req, &[(&a, 0), (&b, 0)], 16);
    let refused = checked.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].index, 0);
    assert!(
        refused[0]
            .reason
            .contains("signed another transaction at nonce 0"),
        "{}",
        refused[0].reason
    );
    assert_eq!(
        checked.signers_needed(),
        [b.address()],
        "a's key is not needed"
    );
    let signed = block_on(elsewhere.sign_batch(&checked, std::slice::from_ref(&b))).expect("b");
    assert_eq!(
        signed.items.iter().map(|i| i.from).collect::<Vec<_>>(),
        [b.address()]
    );
    assert_eq!(machine.log.verify(None).expect("log").count, 2);
}
