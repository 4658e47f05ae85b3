//! The signing log beside the keys: every kind of tampering is named by `verify`, and
//! the spending limits read their window from it with an injected clock.

use std::collections::BTreeMap;

use alloy_primitives::{Address, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::local_signing::make_entry;
use bridgectl_tx::request::Token;
use bridgectl_tx::signing_log::{Checkpoint, EntryBody, Head, SigningLog};
use bridgectl_tx::{Error, Policy, RawTx, limits, sign_and_log, verify};

const ST: Address = Address::repeat_byte(0x57);
const CHAIN: u64 = 1337;
const DAY: u64 = 86_400;
const T0: u64 = 1_800_000_000;

fn key() -> PrivateKeySigner {
    "4646464646464646464646464646464646464646464646464646464646464646"
        .parse()
        .expect("key")
}

fn redeem(from: Address, nonce: u64, whole_st: u64) -> RawTx {
    let amount = U256::from(whole_st) * U256::from(10u64).pow(U256::from(18));
    let data = bridgectl_tx::calldata::encode(
        "redeem",
        &BTreeMap::from([("_amount".to_string(), amount.to_string())]),
    )
    .expect("calldata");
    RawTx {
        from,
        to: ST,
        data: Bytes::from(data),
        nonce,
        gas_limit: 100_000,
        gas_price: 1_000_000_000,
        chain_id: CHAIN,
        value: U256::ZERO,
    }
}

/// The profile's policy: ST on the side chain, a cap, and `limits`.
fn policy(limits: &str) -> Policy {
    let mut p: Policy =
        toml::from_str(&format!("max-gas-price = 1000000000\n{limits}")).expect("policy toml");
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

/// Verifies `tx` at its own nonce, with what the log says before unlocking (the nonce
/// is free, the window total at `now`).
fn checked(
    log: &SigningLogDb,
    policy: &Policy,
    tx: &RawTx,
    now: u64,
) -> Result<bridgectl_tx::Verified, Error> {
    checked_after(log, policy, tx, now, U256::ZERO)
}

/// [`checked`], with `earlier` (a batch's earlier items) counted in the window too.
fn checked_after(
    log: &SigningLogDb,
    policy: &Policy,
    tx: &RawTx,
    now: u64,
    earlier: U256,
) -> Result<bridgectl_tx::Verified, Error> {
    let spent = limits::read_spent(policy, tx, None, log, now)?.map(|mut s| {
        s.total += earlier;
        s
    });
    let context = bridgectl_tx::Context {
        signer: tx.from,
        gas_price_quote: None,
        nonce: bridgectl_tx::Nonce::Next(bridgectl_tx::NonceFacts {
            fixed: Some(tx.nonce),
            ..Default::default()
        }),
        spent,
    };
    verify(tx, None, policy, &context)
}

/// Verifies (with the log's window total at `now`) and signs with logging.
fn sign(
    log: &SigningLogDb,
    policy: &Policy,
    tx: &RawTx,
    now: u64,
) -> Result<bridgectl_tx::Verified, Error> {
    let verified = checked(log, policy, tx, now)?;
    sign_and_log(&verified, &key(), log, now)?;
    Ok(verified)
}

/// A log of five redeems of 1..=5 ST, an hour apart.
fn five(dir: &tempfile::TempDir) -> SigningLogDb {
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let p = policy("");
    for n in 0..5u64 {
        sign(&log, &p, &redeem(key().address(), n, n + 1), T0 + n * 3600).expect("sign");
    }
    log
}

fn sql(log: &SigningLogDb, statement: &str) {
    let c = rusqlite::Connection::open(log.path()).expect("open raw");
    c.execute_batch(statement).expect(statement);
}

fn first_bad(log: &SigningLogDb, kept: Option<Checkpoint>) -> (u64, String) {
    // One flat Result: a log that does not hold is an error a wallet matches.
    match log.verify(kept) {
        Err(bridgectl_signing_log::Error::Broken { bad, .. }) => (bad.seq, bad.reason),
        other => panic!("tampering must be detected as a broken log: {other:?}"),
    }
}

#[test]
fn an_intact_log_verifies_and_its_checkpoint_is_its_head() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let head = log.verify(None).expect("intact");
    assert_eq!(head.count, 5);
    assert_eq!(head, log.checkpoint().expect("head"));
    assert_eq!(
        log.verify(Some(head)).expect("intact"),
        head,
        "the log holds against its own checkpoint"
    );
    let early = Checkpoint {
        count: 2,
        head: log.show(&Default::default()).expect("show")[1].0.hash,
    };
    assert_eq!(log.verify(Some(early)).expect("intact"), head);
    let text: Checkpoint = head.to_string().parse().expect("round trip");
    assert_eq!(text, head);
}

#[test]
fn an_edited_amount_is_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    sql(
        &log,
        "UPDATE entries SET body = replace(body, '\"amount\":\"3000000000000000000\"', \
         '\"amount\":\"300000000000000000\"') WHERE seq = 3",
    );
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 3, "{why}");
    assert!(why.contains("altered"), "{why}");
}

#[test]
fn a_deleted_middle_entry_is_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    sql(&log, "DELETE FROM entries WHERE seq = 3");
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 3, "{why}");
    assert!(why.contains("missing"), "{why}");
    // Renumbering the rows to hide the gap breaks the link instead.
    sql(&log, "UPDATE entries SET seq = seq - 1 WHERE seq > 3");
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 3, "{why}");
}

#[test]
fn two_reordered_entries_are_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    sql(
        &log,
        "UPDATE entries SET seq = 100 WHERE seq = 2; UPDATE entries SET seq = 2 WHERE seq = 3; \
         UPDATE entries SET seq = 3 WHERE seq = 100;",
    );
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 2, "{why}");
    assert!(why.contains("reordered"), "{why}");
}

#[test]
fn a_truncated_tail_is_named_against_a_kept_checkpoint() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let kept = log.checkpoint().expect("head");
    sql(&log, "DELETE FROM entries WHERE seq >= 4");
    assert!(
        log.verify(None).is_ok(),
        "without a checkpoint a shorter chain still holds: that is what checkpoints are for"
    );
    let (seq, why) = first_bad(&log, Some(kept));
    assert_eq!(seq, 4, "{why}");
    assert!(why.contains("tail was removed"), "{why}");
}

#[test]
fn a_forged_entry_without_the_key_is_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let victim = key().address();
    let forger = PrivateKeySigner::random();
    // A well-formed entry that claims the victim's key, chained onto the real head,
    // signed by another key.
    let head = log.checkpoint().expect("head");
    let tx = redeem(victim, 5, 1);
    let (p, ctx) = bridgectl_tx::verify::exactly(&tx);
    let verified = verify(&tx, None, &p, &ctx).expect("verified");
    let mut signed = bridgectl_tx::sign_legacy(&verified, &key()).expect("signed");
    signed.from = victim;
    let head = Head {
        checkpoint: head,
        time: 0,
        running: None,
    };
    let entry = make_entry(head, &verified, &signed, T0 + DAY, &forger).expect("entry");
    log.append(victim, None, &mut |_| Ok(entry.clone()))
        .expect("append");
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 6, "{why}");
    assert!(why.contains("forged"), "{why}");
    assert!(why.contains(&forger.address().to_string()), "{why}");
}

#[test]
fn an_edited_index_column_is_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    sql(&log, "UPDATE entries SET time = 0 WHERE seq = 5");
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 5, "{why}");
    assert!(why.contains("index columns"), "{why}");
}

#[test]
fn the_daily_limit_refuses_then_the_window_rolls() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let p = policy("[limits]\nst = { per = \"24h\", max = \"10\", max-per-tx = \"8\" }\n");
    let from = key().address();
    let v = sign(&log, &p, &redeem(from, 0, 6), T0).expect("6 of 10");
    assert!(
        v.spending()[0].contains("0 ST of 10 ST"),
        "{:?}",
        v.spending()
    );
    let v = sign(&log, &p, &redeem(from, 1, 3), T0 + 3600).expect("9 of 10");
    assert!(
        v.spending()[0].contains("6 ST of 10 ST"),
        "{:?}",
        v.spending()
    );
    // 9 + 2 > 10 within the day: refused, naming the limit, the total and the amount.
    let e = sign(&log, &p, &redeem(from, 2, 2), T0 + 2 * 3600)
        .expect_err("over the daily limit")
        .to_string();
    assert!(e.contains("10 ST per 24h"), "{e}");
    assert!(e.contains("9 ST signed already"), "{e}");
    assert!(e.contains("2 ST more"), "{e}");
    // Over the per-transaction maximum, whatever the window holds.
    let e = sign(&log, &p, &redeem(from, 2, 9), T0 + 3 * DAY)
        .expect_err("over max-per-tx")
        .to_string();
    assert!(e.contains("8 ST per transaction"), "{e}");
    // A day after the first signature it has left the window; the second has not.
    let v = sign(&log, &p, &redeem(from, 2, 2), T0 + DAY + 1).expect("rolled");
    assert!(
        v.spending()[0].contains("3 ST of 10 ST"),
        "{:?}",
        v.spending()
    );
    // Another key has its own window.
    assert_eq!(log.verify(None).expect("intact").count, 3);
}

#[test]
fn a_limit_without_the_logs_total_is_refused() {
    let p = policy("[limits]\nst = { per = \"24h\", max = \"10\" }\n");
    let tx = redeem(key().address(), 0, 1);
    let context = bridgectl_tx::Context {
        signer: tx.from,
        gas_price_quote: None,
        nonce: bridgectl_tx::Nonce::Next(bridgectl_tx::NonceFacts {
            fixed: Some(0),
            ..Default::default()
        }),
        spent: None,
    };
    let e = verify(&tx, None, &p, &context)
        .expect_err("no total")
        .to_string();
    assert!(
        e.contains("needs this key's total from the signing log"),
        "{e}"
    );
}

#[test]
fn a_broken_window_is_refused_for_limits() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    sql(&log, "DELETE FROM entries WHERE seq = 4");
    let p = policy("[limits]\nst = { per = \"24h\", max = \"100\" }\n");
    let e = sign(&log, &p, &redeem(key().address(), 5, 1), T0 + 5 * 3600)
        .expect_err("a log with a hole is no basis for a limit");
    let text = format!("{:#}", anyhow_chain(&e));
    assert!(text.contains("does not hold"), "{text}");
}

fn anyhow_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

#[test]
fn the_allowlist_refuses_a_transfer_elsewhere() {
    let allowed = Address::repeat_byte(0xa1);
    let p = policy(&format!("allowed-destinations = [\"{allowed}\"]\n"));
    let from = key().address();
    let transfer = |to: Address| RawTx {
        data: Bytes::from(bridgectl_tx::calldata::erc20_transfer(to, U256::from(5))),
        ..redeem(from, 0, 1)
    };
    let context = bridgectl_tx::Context {
        signer: from,
        gas_price_quote: None,
        nonce: bridgectl_tx::Nonce::Next(bridgectl_tx::NonceFacts {
            fixed: Some(0),
            ..Default::default()
        }),
        spent: None,
    };
    verify(&transfer(allowed), None, &p, &context).expect("allowed");
    let elsewhere = Address::repeat_byte(0xbb);
    let e = verify(&transfer(elsewhere), None, &p, &context)
        .expect_err("not allowed")
        .to_string();
    assert!(e.contains("destination"), "{e}");
    assert!(e.contains(&elsewhere.to_string()), "{e}");
}

#[test]
fn the_body_is_what_the_readme_says() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let (entry, body) = log.show(&Default::default()).expect("show").remove(0);
    let body: EntryBody = body.expect("parsed");
    assert_eq!(body.seq, 1);
    assert_eq!(body.function.as_deref(), Some("redeem(uint256)"));
    assert_eq!(body.amount, Some(U256::from(10u64).pow(U256::from(18))));
    assert_eq!(
        entry.hash,
        alloy_primitives::keccak256(entry.body.as_bytes())
    );
    assert!(entry.body.contains("\"amount\":\"1000000000000000000\""));
}

/// A stranger's self-signed entry chained onto the head, dated `time`: what H2 appended
/// (any key, `prev` = head, `time = 1`).
fn append_stranger(log: &SigningLogDb, time: u64) -> PrivateKeySigner {
    let stranger = PrivateKeySigner::random();
    let tx = redeem(stranger.address(), 0, 1);
    let (p, ctx) = bridgectl_tx::verify::exactly(&tx);
    let verified = verify(&tx, None, &p, &ctx).expect("verified");
    let signed = bridgectl_tx::sign_legacy(&verified, &stranger).expect("signed");
    let head = Head {
        checkpoint: log.checkpoint().expect("head"),
        time: 0,
        running: None,
    };
    let entry = make_entry(head, &verified, &signed, time, &stranger).expect("entry");
    insert_raw(log, &entry);
    stranger
}

/// `entry` written straight into the file, as someone with write access would, its
/// columns as its body says.
fn insert_raw(log: &SigningLogDb, entry: &bridgectl_tx::signing_log::Entry) {
    let body: EntryBody = serde_json::from_str(&entry.body).expect("body");
    let c = rusqlite::Connection::open(log.path()).expect("open raw");
    c.execute(
        "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            entry.seq as i64,
            body.time as i64,
            body.key.to_string(),
            body.chain_id as i64,
            body.to.to_string(),
            entry.body,
            entry.hash.as_slice(),
            entry.sig.as_ref()
        ],
    )
    .expect("insert");
}

const LIMIT: &str = "[limits]\nst = { per = \"24h\", max = \"10\", max-per-tx = \"8\" }\n";

/// 8 of 10 ST signed in the window: the next 8 must be refused.
fn eight_of_ten(dir: &tempfile::TempDir, known: bool) -> SigningLogDb {
    let mut log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    if known {
        log = log.with_known_keys(vec![key().address()]);
    }
    sign(&log, &policy(LIMIT), &redeem(key().address(), 0, 8), T0).expect("8 of 10");
    log
}

fn refusal(log: &SigningLogDb, nonce: u64, now: u64) -> String {
    let e =
        sign(log, &policy(LIMIT), &redeem(key().address(), nonce, 8), now).expect_err("refused");
    anyhow_chain(&e)
}

#[test]
fn a_strangers_entry_dated_long_ago_does_not_reset_the_window() {
    let dir = tempfile::tempdir().expect("tmp");
    // Without the keystore's key list, the stranger's entry is simply not the key's:
    // it neither ends the walk nor starts the window.
    let log = eight_of_ten(&dir, false);
    let stranger = append_stranger(&log, 1);
    let e = refusal(&log, 1, T0 + 60);
    assert!(e.contains("8 ST signed already in the window"), "{e}");
    // With the key list (what `SigningLogDb::open_in` opens), it refuses outright,
    // naming the entry and its key, until acknowledged.
    let log = SigningLogDb::open(log.path())
        .expect("open")
        .with_known_keys(vec![key().address()]);
    let e = refusal(&log, 1, T0 + 60);
    assert!(
        e.contains("entry 2 is signed by") && e.contains(&stranger.address().to_string()),
        "{e}"
    );
    // Acknowledged by a key of the keystore; the log reached its checkpoint, so nothing
    // is carried over and the window holds what the log holds.
    log.acknowledge(&key(), T0 + 60).expect("acknowledged");
    let e = refusal(&log, 1, T0 + 60);
    assert!(e.contains("8 ST signed already in the window"), "{e}");
}

#[test]
fn a_strangers_entry_dated_in_the_future_does_not_move_the_window() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = eight_of_ten(&dir, false);
    append_stranger(&log, T0 + 400 * DAY);
    let e = refusal(&log, 1, T0 + 60);
    assert!(e.contains("8 ST signed already in the window"), "{e}");
}

#[test]
fn a_deleted_or_restored_log_refuses_until_acknowledged() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = eight_of_ten(&dir, true);
    let path = log.path().to_path_buf();
    let older = dir.path().join("older.sqlite3");
    // A copy of the files as a backup takes them (the WAL holds the recent commits).
    let copy = |from: &std::path::Path, to: &std::path::Path| {
        for f in ["", "-wal"] {
            let src = format!("{}{f}", from.display());
            if std::path::Path::new(&src).exists() {
                std::fs::copy(&src, format!("{}{f}", to.display())).expect("copy");
            }
        }
        let _ = std::fs::remove_file(format!("{}-shm", to.display()));
    };
    copy(&path, &older);
    sign(&log, &policy(""), &redeem(key().address(), 1, 1), T0 + 1).expect("one more");
    drop(log);
    // Restored from the older copy: one entry where the checkpoint says two.
    copy(&older, &path);
    let log = SigningLogDb::open(&path)
        .expect("open")
        .with_known_keys(vec![key().address()]);
    let e = refusal(&log, 2, T0 + 60);
    assert!(
        e.contains("does not reach its checkpoint 2:") && e.contains("it has 1 entries"),
        "{e}"
    );
    // No limit configured: still refused, before anything is signed.
    let e = sign(&log, &policy(""), &redeem(key().address(), 2, 1), T0 + 60)
        .expect_err("refused without a limit too");
    assert!(
        anyhow_chain(&e).contains("does not reach its checkpoint"),
        "{e}"
    );
    drop(log);
    // Deleted: an empty log where the checkpoint says two entries.
    for f in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{f}", path.display()));
    }
    let log = SigningLogDb::open(&path)
        .expect("open")
        .with_known_keys(vec![key().address()]);
    let e = refusal(&log, 2, T0 + 60);
    assert!(e.contains("it has 0 entries"), "{e}");
    // A person who knows why acknowledges it, signed by a key: it signs again from
    // there, and what the lost entries spent is carried into the window by the
    // acknowledgement (from the checkpoint kept beside the log), not forgotten.
    log.acknowledge(&key(), T0 + 60).expect("acknowledged");
    let e = refusal(&log, 2, T0 + 60);
    assert!(e.contains("9 ST signed already in the window"), "{e}");
    sign(
        &log,
        &policy(LIMIT),
        &redeem(key().address(), 2, 1),
        T0 + 60,
    )
    .expect("what the window leaves");
    // An export of the acknowledged log still holds for an auditor.
    log.verify(None).expect("the log holds");
}

#[test]
fn a_clock_stepped_back_does_not_push_entries_out_of_the_window() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = eight_of_ten(&dir, true);
    // The clock goes back two days: the entry is dated no earlier than the key's
    // newest, and the window ends no earlier than it either.
    let e = refusal(&log, 1, T0 - 2 * DAY);
    assert!(e.contains("8 ST signed already"), "{e}");
    sign(
        &log,
        &policy(LIMIT),
        &redeem(key().address(), 1, 1),
        T0 - 2 * DAY,
    )
    .expect("1 more");
    let entries = log.show(&Default::default()).expect("show");
    let times: Vec<u64> = entries
        .iter()
        .map(|(_, b)| b.as_ref().expect("body").time)
        .collect();
    assert_eq!(
        times,
        vec![T0, T0],
        "an entry is never older than the key's newest"
    );
    // Corrected a day later, both entries are still in the window: 9 of 10.
    let e = refusal(&log, 2, T0 + DAY - 1);
    assert!(e.contains("9 ST signed already"), "{e}");
}

/// Eight signers, each with its own connection to the log at `path` (as eight
/// processes would be): each verifies `tx(n)` with what the log says before unlocking,
/// then all eight sign together.
fn eight_at_once(
    path: &std::path::Path,
    limits: &'static str,
    tx: fn(u64) -> RawTx,
) -> Vec<Result<bridgectl_tx::SignedTx, Error>> {
    drop(SigningLogDb::open(path).expect("create"));
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8u64)
        .map(|n| {
            let (path, barrier) = (path.to_owned(), barrier.clone());
            std::thread::spawn(move || {
                let log = SigningLogDb::open(&path).expect("open");
                let p = policy(limits);
                let verified = checked(&log, &p, &tx(n), T0).expect("each fits alone");
                barrier.wait();
                sign_and_log(&verified, &key(), &log, T0)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect()
}

#[test]
fn concurrent_signers_never_pass_the_limit_together() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("log.sqlite3");
    // Each read 0 ST before signing 3 of 10: exactly three fit.
    let results = eight_at_once(&path, LIMIT, |n| redeem(key().address(), n, 3));
    let signed = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(signed, 3, "floor(10 / 3) signatures, not {signed}");
    let log = SigningLogDb::open(&path).expect("open");
    assert_eq!(log.verify(None).expect("intact").count, 3);
}

/// One nonce, one signature per keystore: eight signers (as eight processes with eight
/// journals would be) each find nonce 7 free before unlocking, then sign a different
/// redeem at it together: the append's own check, inside its `BEGIN IMMEDIATE`, lets
/// exactly one through. Without the check in the append all eight sign.
#[test]
fn concurrent_signers_at_one_nonce_sign_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("log.sqlite3");
    let results = eight_at_once(&path, "", |n| redeem(key().address(), 7, n + 1));
    let signed = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(signed, 1, "one signature for nonce 7, not {signed}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(
                refused,
                Error::NonceSigned {
                    nonce: 7,
                    seq: 1,
                    ..
                }
            ),
            "{refused}"
        );
    }
    let log = SigningLogDb::open(&path).expect("open");
    assert_eq!(log.verify(None).expect("intact").count, 1);
}

/// The check made before the key is unlocked: a different transaction at a signed
/// nonce is refused by `read_spent` (so no passphrase is asked for), while the very
/// transaction again passes and, signed again, yields the same bytes and adds nothing
/// to the log (a flow that stopped between its signature and its journal finishes).
/// Without the check in `read_spent` the first assertion fails.
#[test]
fn a_signed_nonce_refuses_another_transaction_and_accepts_the_same_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let p = policy("");
    let first = redeem(key().address(), 3, 1);
    let verified = sign(&log, &p, &first, T0).expect("first signature");
    let head = log.checkpoint().expect("head");

    let other = redeem(key().address(), 3, 2);
    let e = limits::read_spent(&p, &other, None, &log, T0 + 1).expect_err("nonce 3 is taken");
    assert!(
        matches!(
            e,
            Error::NonceSigned {
                nonce: 3,
                seq: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("one nonce gets one signature"),
        "{e}"
    );
    // The same nonce on another chain, and the next nonce, are free.
    let mut elsewhere = other.clone();
    elsewhere.chain_id = CHAIN + 1;
    limits::read_spent(&p, &elsewhere, None, &log, T0 + 1).expect("another chain");
    limits::read_spent(&p, &redeem(key().address(), 4, 2), None, &log, T0 + 1).expect("next nonce");

    let signed = bridgectl_tx::sign_legacy(&verified, &key()).expect("sign");
    let again = sign(&log, &p, &first, T0 + 2).expect("the same transaction again");
    let resigned = sign_and_log(&again, &key(), &log, T0 + 2).expect("and again");
    assert_eq!(resigned.raw, signed.raw, "the same bytes");
    assert_eq!(log.checkpoint().expect("head"), head, "recorded once");
    assert_eq!(log.verify(None).expect("intact").count, 1);
}

/// A limit is a maximum, not a bound to stay under: 4 then 6 ST against 10 ST a day both
/// sign (the total is exactly the limit), one wei more does not. Checked where the
/// append re-totals the window (`WindowLimit::check`), not only in the verifier.
#[test]
fn the_limit_itself_can_be_reached_and_not_passed() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let p = policy(LIMIT);
    sign(&log, &p, &redeem(key().address(), 0, 4), T0).expect("4 of 10");
    let six = checked(&log, &p, &redeem(key().address(), 1, 6), T0).expect("6 more fit");
    sign_and_log(&six, &key(), &log, T0).expect("the append agrees: exactly 10");
    let mut wei = redeem(key().address(), 2, 0);
    wei.data = bridgectl_tx::calldata::encode(
        "redeem",
        &BTreeMap::from([("_amount".to_string(), "1".to_string())]),
    )
    .expect("calldata")
    .into();
    let e = checked(&log, &p, &wei, T0).expect_err("one wei over");
    assert!(e.to_string().contains("spending limit"), "{e}");
}

/// The nonce guard reads what the key signed from the signed bodies, not from the
/// columns it finds them by: a row whose `key` column was edited to another address is
/// not that address's signature (the stored key column is an index, not a record).
#[test]
fn an_edited_key_column_does_not_make_a_signature_anothers() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    sign(&log, &policy(""), &redeem(key().address(), 3, 1), T0).expect("sign");
    let stranger = Address::repeat_byte(0x77);
    sql(
        &log,
        &format!("UPDATE entries SET key = '{stranger}' WHERE seq = 1"),
    );
    let found =
        bridgectl_tx::SigningLog::signed_at_nonce(&log, stranger, CHAIN, 3).expect("readable");
    assert_eq!(found, bridgectl_tx::signing_log::AtNonce::default());
}

/// A chain reset frees the key's nonces on that chain only, only when the key itself
/// records it, and only for signatures made before it: after `log_chain_reset`, another
/// transaction at a nonce signed on the old chain passes; on another chain, and at a
/// nonce signed after the reset, the guard holds. Spending totals still count the old
/// chain's signatures. Without the filter in `signed_at_nonce` the second assertion
/// fails.
#[test]
fn a_chain_reset_recorded_by_the_key_frees_the_old_chains_nonces() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let mut p = policy(LIMIT);
    p.trusted.contract(
        ST,
        CHAIN + 1,
        Some(Token {
            symbol: "ST".into(),
            decimals: 18,
        }),
    );
    sign(&log, &p, &redeem(key().address(), 0, 1), T0).expect("nonce 0");
    let mut elsewhere = redeem(key().address(), 0, 1);
    elsewhere.chain_id = CHAIN + 1;
    sign(&log, &p, &elsewhere, T0).expect("nonce 0 on another chain");
    let other = redeem(key().address(), 0, 2);
    limits::read_spent(&p, &other, None, &log, T0 + 1).expect_err("nonce 0 is taken");

    // Another key's reset frees only that key's nonces: this key's stays taken.
    let stranger = PrivateKeySigner::random();
    let genesis = alloy_primitives::B256::repeat_byte(7);
    let _ = bridgectl_tx::signing_log::log_chain_reset(&log, &stranger, CHAIN, genesis, T0 + 1);
    limits::read_spent(&p, &other, None, &log, T0 + 1).expect_err("still taken");

    bridgectl_tx::signing_log::log_chain_reset(&log, &key(), CHAIN, genesis, T0 + 1)
        .expect("reset");
    let spent = limits::read_spent(&p, &other, None, &log, T0 + 2)
        .expect("nonce 0 is free on the new chain")
        .expect("a window total");
    assert_eq!(
        spent.total,
        U256::from(10u64).pow(U256::from(18u64)),
        "still counted"
    );
    let mut still = elsewhere.clone();
    still.data = other.data.clone();
    limits::read_spent(&p, &still, None, &log, T0 + 2).expect_err("the other chain was not reset");
    sign(&log, &p, &other, T0 + 2).expect("nonce 0 signed on the new chain");
    limits::read_spent(&p, &redeem(key().address(), 0, 3), None, &log, T0 + 3)
        .expect_err("and held again");
    assert!(log.verify(None).is_ok());
}

/// Verifies each of `txs` as a batch does before anything is unlocked: the window read
/// once, the batch's earlier items counted as signed.
fn checked_group(
    log: &SigningLogDb,
    policy: &Policy,
    txs: &[RawTx],
    now: u64,
) -> Vec<bridgectl_tx::Verified> {
    let mut earlier = U256::ZERO;
    txs.iter()
        .map(|tx| {
            let v = checked_after(log, policy, tx, now, earlier).expect("verified");
            earlier += v.window_limit().map_or(U256::ZERO, |l| l.amount);
            v
        })
        .collect()
}

#[test]
fn a_group_is_one_chain_of_entries_committed_together_and_made_again_adds_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let p = policy("");
    let other: PrivateKeySigner = PrivateKeySigner::random();
    let log = log.with_known_keys(vec![key().address(), other.address()]);
    let txs: Vec<RawTx> = (5..9u64)
        .map(|n| redeem(key().address(), n, 1))
        .chain((0..3u64).map(|n| redeem(other.address(), n, 2)))
        .collect();
    let verified = checked_group(&log, &p, &txs, T0 + DAY);
    let (k, o) = (key(), other.clone());
    let items: Vec<(&bridgectl_tx::Verified, &PrivateKeySigner)> = verified
        .iter()
        .map(|v| {
            (
                v,
                if v.raw_tx().from == k.address() {
                    &k
                } else {
                    &o
                },
            )
        })
        .collect();
    let signed = bridgectl_tx::sign_and_log_keys(&items, &log, T0 + DAY).expect("group");
    assert_eq!(signed.len(), 7);
    let head = log.verify(None).expect("a whole chain");
    assert_eq!(head.count, 12);
    assert_eq!(log.kept().expect("kept").expect("a checkpoint").count, 12);
    // The same group again (a rerun after a crash): the same bytes, nothing appended.
    let again = bridgectl_tx::sign_and_log_keys(&items, &log, T0 + DAY + 60).expect("again");
    assert_eq!(again, signed);
    assert_eq!(log.checkpoint().expect("head").count, 12);

    // Another transaction at a nonce the group signed: the whole group is refused.
    let clash = redeem(key().address(), 9, 1);
    let taken = redeem(key().address(), 6, 3);
    let context = |tx: &RawTx| bridgectl_tx::Context {
        signer: tx.from,
        gas_price_quote: None,
        nonce: bridgectl_tx::Nonce::Next(bridgectl_tx::NonceFacts {
            fixed: Some(tx.nonce),
            ..Default::default()
        }),
        spent: None,
    };
    let v1 = verify(&clash, None, &p, &context(&clash)).expect("v1");
    let v2 = verify(&taken, None, &p, &context(&taken)).expect("v2");
    let e = bridgectl_tx::sign_and_log_keys(&[(&v1, &k), (&v2, &k)], &log, T0 + DAY)
        .expect_err("nonce 6 is signed");
    assert!(e.to_string().contains("nonce 6"), "{e}");
    assert_eq!(
        log.checkpoint().expect("head").count,
        12,
        "nothing of it appended"
    );
}

#[test]
fn a_group_counts_its_own_earlier_entries_against_a_limit_inside_the_append() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let p = policy("[limits]\nst = { per = \"24h\", max = \"5\" }");
    let txs: Vec<RawTx> = (0..3u64).map(|n| redeem(key().address(), n, 2)).collect();
    // Checked one by one against the empty log (as two racing signers would see it),
    // each passes; together they move 6 ST of 5.
    let verified: Vec<_> = txs
        .iter()
        .map(|tx| checked(&log, &p, tx, T0).expect("alone it passes"))
        .collect();
    let k = key();
    let items: Vec<_> = verified.iter().map(|v| (v, &k)).collect();
    let e = bridgectl_tx::sign_and_log_keys(&items, &log, T0).expect_err("over the limit");
    assert!(matches!(e, Error::Limit { .. }), "{e}");
    assert_eq!(log.checkpoint().expect("head").count, 0, "all or nothing");
}

/// Removes the log's files, keeping the checkpoint kept beside them (what a person who
/// deletes or moves "the log" leaves behind), and opens it again, empty.
fn deleted(log: SigningLogDb) -> SigningLogDb {
    let path = log.path().to_path_buf();
    drop(log);
    for f in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{f}", path.display()));
    }
    SigningLogDb::open(&path)
        .expect("open")
        .with_known_keys(vec![key().address()])
}

/// What `read_spent` says of `tx`: the nonce guard (and the log's checks) before
/// anything is unlocked.
fn guard(
    log: &SigningLogDb,
    tx: &RawTx,
    replaces: Option<alloy_primitives::B256>,
) -> Result<(), Error> {
    limits::read_spent(&policy(""), tx, replaces, log, T0 + 60).map(|_| ())
}

/// Issue 51, 1: `UPDATE entries SET key = lower(key)` needs no key. The nonce guard
/// finds a key's entries by what their signed bodies say, so the edit hides nothing:
/// another transaction at the signed nonce is refused by the entry itself (signing-log
/// entry 1). Were the guard to look entries up by the column, it would find none here.
#[test]
fn an_edited_key_column_hides_no_signed_nonce() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    sign(&log, &policy(""), &redeem(key().address(), 0, 1), T0).expect("sign");
    sql(&log, "UPDATE entries SET key = lower(key)");
    let e = guard(&log, &redeem(key().address(), 0, 2), None).expect_err("nonce 0 is signed");
    assert!(
        matches!(
            e,
            Error::NonceSigned {
                nonce: 0,
                seq: 1,
                ..
            }
        ),
        "{e}"
    );
    // `log verify` names the edit all the same.
    let (seq, why) = first_bad(&log, None);
    assert_eq!(seq, 1, "{why}");
}

/// Issue 51, 1: a column edited to say another chain, time or contract is a refusal of
/// every signature, found by one lookup (`entries_edited`), not a walk: the log was
/// written by someone without the key, and nothing is signed against it until a person
/// looks. Without the check, the entry would be found by its body and refused as a
/// signed nonce instead (and a signature at another nonce would pass).
#[test]
fn an_edited_column_is_a_refusal() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    sign(&log, &policy(""), &redeem(key().address(), 0, 1), T0).expect("sign");
    for edit in [
        "UPDATE entries SET chain_id = chain_id + 1",
        "UPDATE entries SET time = time - 1",
        "UPDATE entries SET contract = '0x0000000000000000000000000000000000000001'",
        "UPDATE entries SET key = '0x0000000000000000000000000000000000000001'",
    ] {
        let copy = dir.path().join("copy.sqlite3");
        let _ = std::fs::remove_file(&copy);
        rusqlite::Connection::open(log.path())
            .expect("open raw")
            .execute_batch(&format!("VACUUM INTO '{}'", copy.display()))
            .expect("copy");
        let edited = SigningLogDb::open(&copy).expect("open copy");
        sql(&edited, edit);
        for tx in [redeem(key().address(), 0, 2), redeem(key().address(), 1, 1)] {
            let e = guard(&edited, &tx, None).expect_err(edit);
            assert!(matches!(e, Error::LogRefused(_)), "{edit}: {e}");
            let text = anyhow_chain(&e);
            assert!(
                text.contains("entry 1: its index columns disagree"),
                "{text}"
            );
        }
    }
}

/// Issue 51, 2: the log deleted, its checkpoint kept, acknowledged: the nonces it
/// signed stay signed (the checkpoint's watermark, carried into the log by the
/// acknowledgement), also once the checkpoint file is gone too. A nonce above the
/// watermark signs; a replacement naming the lost transaction is the way past at the
/// nonce; the key's record of a chain reset starts the chain over.
#[test]
fn a_deleted_log_keeps_its_nonces_through_an_acknowledgement() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3"))
        .expect("open")
        .with_known_keys(vec![key().address()]);
    let first = sign(&log, &policy(""), &redeem(key().address(), 0, 1), T0).expect("nonce 0");
    sign(&log, &policy(""), &redeem(key().address(), 1, 1), T0).expect("nonce 1");
    let log = deleted(log);
    let plan = log.plan_acknowledgement().expect("a plan");
    assert!(!plan.reaches);
    assert_eq!(plan.watermarks.len(), 1, "{:?}", plan.watermarks);
    assert_eq!(plan.watermarks[0].nonce, 1);
    log.acknowledge_plan(&plan, &key(), T0 + 60)
        .expect("acknowledged");
    for nonce in [0, 1] {
        let e = guard(&log, &redeem(key().address(), nonce, 2), None).expect_err("signed");
        assert!(
            matches!(e, Error::NonceWatermark { watermark: 1, .. }),
            "{nonce}: {e}"
        );
    }
    // The very transaction again has no entry to be found by: refused too.
    guard(&log, first.raw_tx(), None).expect_err("no entry of it");
    guard(&log, &redeem(key().address(), 2, 2), None).expect("above the watermark");
    let lost = bridgectl_tx::sign_legacy(&first, &key())
        .expect("its hash")
        .hash;
    guard(&log, &redeem(key().address(), 0, 2), Some(lost)).expect("a replacement");
    // The acknowledgement carries them: the kept checkpoint deleted too, they hold.
    std::fs::remove_file(log.checkpoint_path()).expect("rm checkpoint");
    let e = guard(&log, &redeem(key().address(), 0, 2), None).expect_err("still signed");
    assert!(matches!(e, Error::NonceWatermark { .. }), "{e}");
    let genesis = alloy_primitives::B256::repeat_byte(9);
    bridgectl_tx::signing_log::log_chain_reset(&log, &key(), CHAIN, genesis, T0 + 61)
        .expect("reset");
    guard(&log, &redeem(key().address(), 0, 2), None).expect("a new chain");
    log.verify(None).expect("the log holds");
}

/// Issue 51, 1 and 2: an entry whose body was edited to another nonce (its hash then
/// breaks, but only a walk that reaches it would see that) is not found at its nonce;
/// the watermark kept beside the log still holds the nonce. Nonces signed out of order
/// leave gaps under the watermark, and a gap is signed as any free nonce.
#[test]
fn the_kept_watermark_holds_a_nonce_whose_entry_is_hidden_and_not_its_gaps() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    for nonce in [0, 3, 1] {
        sign(&log, &policy(""), &redeem(key().address(), nonce, 1), T0).expect("sign");
    }
    guard(&log, &redeem(key().address(), 2, 1), None).expect("nonce 2 is a gap");
    sql(
        &log,
        "UPDATE entries SET body = replace(body, '\"nonce\":0,', '\"nonce\":70,') WHERE seq = 1",
    );
    let e = guard(&log, &redeem(key().address(), 0, 2), None).expect_err("nonce 0 is signed");
    assert!(
        matches!(e, Error::NonceWatermark { watermark: 3, .. }),
        "{e}"
    );
    sign(&log, &policy(""), &redeem(key().address(), 2, 1), T0).expect("the gap signs");
}

/// Issue 51, 4: both slots of the kept checkpoint spoiled. Signing refuses, naming the
/// way on; the acknowledgement is that way: it rebuilds the watermarks from the log (and
/// a chain's nonce count, where one is given), so no signed nonce is freed, and signing
/// goes on above them.
#[test]
fn a_spoiled_checkpoint_is_acknowledged_and_frees_no_signed_nonce() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3"))
        .expect("open")
        .with_known_keys(vec![key().address()]);
    sign(&log, &policy(""), &redeem(key().address(), 0, 1), T0).expect("nonce 0");
    let spoil = |log: &SigningLogDb| {
        let path = log.checkpoint_path();
        let len = std::fs::metadata(&path).expect("kept").len();
        std::fs::write(&path, vec![0u8; usize::try_from(len).expect("len")]).expect("spoil");
    };
    spoil(&log);
    let e = guard(&log, &redeem(key().address(), 1, 1), None).expect_err("refused");
    let text = anyhow_chain(&e);
    assert!(
        text.contains("neither of its two slots") && text.contains("until it is acknowledged"),
        "{text}"
    );
    let plan = log.plan_acknowledgement().expect("a plan");
    assert!(plan.kept.is_err() && !plan.reaches);
    log.acknowledge_plan(&plan, &key(), T0 + 60)
        .expect("acknowledged");
    let e = guard(&log, &redeem(key().address(), 0, 2), None).expect_err("nonce 0 signed");
    assert!(matches!(e, Error::NonceSigned { .. }), "{e}");
    guard(&log, &redeem(key().address(), 1, 1), None).expect("signs on");

    // The log lost too: the chain's nonce count is the witness of what was signed.
    spoil(&log);
    let log = deleted(log);
    let chain = bridgectl_tx::signing_log::Watermark::below(key().address(), CHAIN, 1);
    let plan = log
        .plan_acknowledgement()
        .expect("a plan")
        .witnessed(&chain.into_iter().collect::<Vec<_>>());
    log.acknowledge_plan(&plan, &key(), T0 + 120)
        .expect("acknowledged");
    let e = guard(&log, &redeem(key().address(), 0, 2), None).expect_err("nonce 0 signed");
    assert!(matches!(e, Error::NonceWatermark { .. }), "{e}");
    guard(&log, &redeem(key().address(), 1, 1), None).expect("signs on");
}

/// Issue 51, 3: a window longer than the checkpoint carries spending for (through a lost
/// log and its acknowledgement) could not be enforced: refused, naming both.
#[test]
fn a_window_longer_than_the_checkpoint_carries_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let long = policy("[limits]\nst = { per = \"60d\", max = \"10\" }\n");
    let e = checked(&log, &long, &redeem(key().address(), 0, 1), T0).expect_err("refused");
    let text = e.to_string();
    assert!(
        text.contains("per = \"60d\"") && text.contains("31d"),
        "{text}"
    );
    let month = policy("[limits]\nst = { per = \"31d\", max = \"10\" }\n");
    checked(&log, &month, &redeem(key().address(), 0, 1), T0).expect("31 days are carried");
}

/// The window's total as the log reads it for `key()` at `now` over a day.
fn window(log: &SigningLogDb, now: u64) -> U256 {
    log.window_total(&bridgectl_tx::signing_log::WindowQuery {
        key: key().address(),
        chain_id: CHAIN,
        contract: ST,
        per: DAY,
        now,
        ceiling: None,
        clock: now,
    })
    .expect("window")
    .total
}

fn st(whole: u64) -> U256 {
    U256::from(whole) * U256::from(10u64).pow(U256::from(18))
}

/// Issue 53: a window is read from the running totals of two of the key's entries, not
/// by adding its entries up. Whatever the window's ends fall on (an entry's very time,
/// between two, before the first, past the last) and whoever else signed in between, it
/// is the sum of the key's entries in it.
#[test]
fn a_window_read_from_running_totals_is_the_sum_of_its_entries() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = SigningLogDb::open(dir.path().join("log.sqlite3")).expect("open");
    let p = policy("");
    let mut signed: Vec<(u64, u64)> = Vec::new();
    for n in 0..30u64 {
        let (time, whole) = (T0 + n * 5 * 3600, n % 4 + 1);
        sign(&log, &p, &redeem(key().address(), n, whole), time).expect("sign");
        signed.push((time, whole));
        if n % 3 == 0 {
            append_stranger(&log, time + 1);
        }
    }
    let last = signed.last().expect("signed").0;
    for now in (T0..last + 2 * DAY)
        .step_by(3600 * 7 + 1)
        .chain([T0 + DAY + 5 * 3600])
    {
        let since = now.max(last).saturating_sub(DAY);
        let sum: u64 = signed
            .iter()
            .filter(|(t, _)| *t >= since)
            .map(|(_, w)| w)
            .sum();
        assert_eq!(window(&log, now), st(sum), "at {now}");
    }
}

/// Issue 53: the key's last entry before the window is what its total is read from;
/// deleted, the key's entry after it no longer follows from the one found instead.
#[test]
fn a_deleted_entry_at_the_windows_start_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let p = policy("[limits]\nst = { per = \"24h\", max = \"100\" }\n");
    // At a day and 2.5 hours, entries 4 and 5 are in the window; 3 is the last before.
    let now = T0 + DAY + 2 * 3600 + 1800;
    assert_eq!(window(&log, now), st(4 + 5));
    sql(&log, "DELETE FROM entries WHERE seq = 3");
    let e = sign(&log, &p, &redeem(key().address(), 5, 1), now).expect_err("refused");
    let text = anyhow_chain(&e);
    assert!(text.contains("does not hold"), "{text}");
    assert!(
        text.contains("entry 4") && text.contains("(entry 2)"),
        "{text}"
    );
    assert!(text.contains("removed"), "{text}");
}

/// The running totals an entry says the key's entries reached, with `spent` ST.
fn lying_entry(
    log: &SigningLogDb,
    nonce: u64,
    spent: u64,
    time: u64,
) -> bridgectl_tx::signing_log::Entry {
    let tx = redeem(key().address(), nonce, 1);
    let (p, ctx) = bridgectl_tx::verify::exactly(&tx);
    let verified = verify(&tx, None, &p, &ctx).expect("verified");
    let signed = bridgectl_tx::sign_legacy(&verified, &key()).expect("signed");
    let running = bridgectl_tx::signing_log::Running {
        from: 1,
        spent: vec![bridgectl_tx::signing_log::RunningSum {
            chain_id: CHAIN,
            contract: ST,
            amount: st(spent),
        }],
    };
    let head = Head {
        checkpoint: log.checkpoint().expect("head"),
        time,
        running: Some(running),
    };
    make_entry(head, &verified, &signed, time, &key()).expect("entry")
}

/// Issue 53, must show 3: a summary that lies about the window's sums is refused, even
/// signed by the key itself (a signer that carried the wrong totals on): by the append
/// that would record it, and, written straight into the file, by the next signature
/// that reads the window.
#[test]
fn running_totals_that_lie_about_the_window_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let now = T0 + 5 * 3600;
    // 1 + 2 + 3 + 4 + 5 ST so far; the entry says 1 (its own amount, nothing before).
    let entry = lying_entry(&log, 5, 1, now);
    let e = log
        .append(key().address(), None, &mut |_| Ok(entry.clone()))
        .expect_err("a lie is not recorded");
    assert!(e.to_string().contains("running totals"), "{e}");
    assert_eq!(log.checkpoint().expect("head").count, 5);

    insert_raw(&log, &entry);
    let p = policy("[limits]\nst = { per = \"24h\", max = \"20\" }\n");
    let e = sign(&log, &p, &redeem(key().address(), 6, 10), now).expect_err("refused");
    let text = anyhow_chain(&e);
    assert!(text.contains("does not hold"), "{text}");
    assert!(text.contains("entry 6"), "{text}");
    assert!(text.contains("lie about what the key spent"), "{text}");
}

/// A key moved to a fresh store keeps its guard: the history `export_history` writes
/// (watermarks, recent spending, entries), taken in by an acknowledgement the key signs,
/// holds every nonce the key signed and counts its spending in the new store's windows.
/// A file whose entry was edited is refused, and one whose watermarks were edited down
/// still holds the nonces its entries signed.
#[test]
fn a_history_imported_into_a_fresh_store_keeps_its_nonces_and_its_spending() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir); // nonces 0..=4: 1 + 2 + 3 + 4 + 5 = 15 ST in five hours
    let now = T0 + 5 * 3600;
    let history = log.export_history(&[], now).expect("export");
    assert_eq!(history.keys.len(), 1);
    let mine = &history.keys[0];
    assert_eq!(mine.key, key().address());
    assert_eq!(mine.entries.len(), 5);
    assert_eq!(mine.watermarks.len(), 1);
    assert_eq!(mine.watermarks[0].nonce, 4);
    let text = serde_json::to_string_pretty(&history).expect("json");
    let read: bridgectl_signing_log::History = serde_json::from_str(&text).expect("reads back");
    assert_eq!(read, history);

    // Its watermarks edited away: the entries still say what was signed.
    let mut edited_down = read.clone();
    edited_down.keys[0].watermarks.clear();
    edited_down.keys[0].spending.clear();
    let fresh = SigningLogDb::open(dir.path().join("fresh.sqlite3")).expect("fresh");
    let plan = fresh.plan_import(&edited_down).expect("plan");
    fresh
        .acknowledge_plan(&plan, &key(), now)
        .expect("imported");

    let p = policy("[limits]\nst = { per = \"24h\", max = \"16\" }\n");
    let err = sign(&fresh, &p, &redeem(key().address(), 2, 1), now).expect_err("nonce 2");
    assert!(err.to_string().contains("nonce 2"), "{err}");
    // 15 ST counted in the fresh store's window: 2 more is over 16, 1 fits.
    let err = sign(&fresh, &p, &redeem(key().address(), 5, 2), now).expect_err("over");
    assert!(err.to_string().contains("15 ST signed already"), "{err}");
    sign(&fresh, &p, &redeem(key().address(), 5, 1), now).expect("fits");

    // An entry edited in the file: refused, nothing taken in.
    let mut forged = read;
    forged.keys[0].entries[1].body = forged.keys[0].entries[1]
        .body
        .replace("\"nonce\":1", "\"nonce\":9");
    let other = SigningLogDb::open(dir.path().join("other.sqlite3")).expect("other");
    let err = other.plan_import(&forged).expect_err("forged");
    assert!(
        matches!(err, bridgectl_signing_log::Error::History { .. }),
        "{err}"
    );
}

/// A log copied into another store keeps its chain (the same head, and it verifies
/// there), its nonces stay signed there, a copy made again copies nothing new, and a
/// target that holds another history is refused, naming its key.
#[test]
fn a_log_copied_into_another_store_keeps_its_chain_and_refuses_another_history() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = five(&dir);
    let target = SigningLogDb::open(dir.path().join("target.sqlite3")).expect("target");
    let copied = log.copy_into(&target).expect("copied");
    assert_eq!((copied.present, copied.entries), (0, 5));
    assert_eq!(
        target.verify(None).expect("holds"),
        log.verify(None).expect("holds")
    );
    let err = sign(
        &target,
        &policy(""),
        &redeem(key().address(), 3, 1),
        T0 + DAY,
    )
    .expect_err("nonce 3 was signed");
    assert!(err.to_string().contains("nonce 3"), "{err}");
    // Run again: nothing new.
    let again = log.copy_into(&target).expect("again");
    assert_eq!((again.present, again.entries), (5, 0));
    // Another history: refused.
    let other_dir = tempfile::tempdir().expect("tmp");
    let other = SigningLogDb::open(other_dir.path().join("other.sqlite3")).expect("other");
    sign(&other, &policy(""), &redeem(key().address(), 9, 1), T0).expect("sign");
    let err = other.copy_into(&target).expect_err("conflict");
    assert!(
        matches!(&err, bridgectl_signing_log::Error::Conflict { keys, .. }
            if keys == &[key().address().to_string()]),
        "{err}"
    );
}
