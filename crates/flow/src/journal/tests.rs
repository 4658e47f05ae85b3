//! The journal's tests: what each promise of the module docs rests on.

use alloy_primitives::Address;
use serde_json::json;

use super::flows::newest_flows_sql;
use super::nonces::next_nonce_sql;
use super::*;

fn signed_for_test(chain_id: u64, nonce: u64) -> bridgectl_tx::SignedTx {
    bridgectl_tx::SignedTx {
        raw: vec![0xf8, 0x01].into(),
        hash: alloy_primitives::B256::repeat_byte(0xab),
        from: Address::ZERO,
        chain_id,
        nonce,
    }
}

#[test]
fn a_flow_round_trips_with_its_steps() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("j/journal.sqlite3");
    let j = Journal::open(&path).expect("open");
    j.begin(
        "id-1",
        FlowKind::Redeem,
        Some("0xabc"),
        &json!({"amount": "1"}),
    )
    .expect("begin");
    j.record_raw_tx("id-1", &json!({"nonce": "0x1"}))
        .expect("raw");
    j.step("id-1", FlowState::Verified, "verified", &json!({}))
        .expect("verify");
    j.record_signed("id-1", &signed_for_test(31337, u64::MAX))
        .expect("signed");
    drop(j);

    // A new process sees everything that was committed.
    let j = Journal::open(&path).expect("reopen");
    let rec = j.get("id-1").expect("get");
    assert_eq!(rec.state, FlowState::Signed);
    assert_eq!(rec.signed_tx.as_deref(), Some("0xf801"));
    assert_eq!(rec.nonce, Some(u64::MAX));
    assert_eq!(rec.chain_id, Some(31337));
    assert_eq!(rec.raw_tx, Some(json!({"nonce": "0x1"})));
    let steps: Vec<_> = j
        .steps("id-1")
        .expect("steps")
        .into_iter()
        .map(|s| s.step)
        .collect();
    assert_eq!(steps, ["started", "executed", "verified", "signed"]);
    assert_eq!(j.list(10).expect("list").len(), 1);

    // The one flow resolver: txId, a unique start of it, the hash of its signed
    // bytes; a start two flows share names neither.
    for id in ["9a64c6aa-1", "9a64c6bb-2"] {
        j.begin(id, FlowKind::Redeem, None, &json!({}))
            .expect("begin");
    }
    let hash = alloy_primitives::B256::repeat_byte(0xab).to_string();
    for (query, tx_id) in [
        ("id-1", "id-1"),
        (hash.as_str(), "id-1"),
        ("9a64c6aa", "9a64c6aa-1"),
        ("9a64c6bb-2", "9a64c6bb-2"),
    ] {
        assert_eq!(j.find(query).expect(query).tx_id, tx_id, "{query}");
    }
    assert!(matches!(j.find("9a64c6"), Err(Error::AmbiguousTxId { .. })));
    // Replaced: the earlier hash still names the flow.
    let mut again = signed_for_test(31337, u64::MAX);
    again.hash = alloy_primitives::B256::repeat_byte(0xef);
    j.record_replacement("id-1", &again, Purpose::Cancel)
        .expect("replace");
    assert_eq!(j.find(&hash).expect("replaced hash").tx_id, "id-1");
    let unknown = alloy_primitives::B256::repeat_byte(0xcd).to_string();
    assert!(matches!(j.find(&unknown), Err(Error::NotInJournal(_))));

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// `hold_reservation` before signing: the flow's own reservation with lease to spare
/// holds; another flow's is refused; its own whose lease ran out is refused (the
/// reservation is dated back past the lease in the file, so no sleep is needed), and
/// so is its own with less than a tenth of the lease left.
#[test]
fn a_reservation_holds_only_for_its_flow_within_its_lease() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("j.sqlite3");
    let addr = Address::repeat_byte(0x22);
    let j = Journal::open(&path).expect("open");
    for id in ["mine", "other"] {
        j.begin(id, FlowKind::Redeem, Some(&addr.to_string()), &json!({}))
            .expect("begin");
    }
    j.reserve_nonce("mine", addr, 7, 3).expect("reserve");
    j.hold_reservation("mine", addr, 7, 3)
        .expect("its own, fresh");
    let e = j
        .hold_reservation("other", addr, 7, 3)
        .expect_err("another flow's");
    assert!(matches!(e, Error::NonceReserved { .. }), "{e}");
    let date_back = |secs: i64| {
        rusqlite::Connection::open(&path)
            .expect("raw")
            .execute(
                "UPDATE nonces SET reserved_at = ?1 WHERE nonce = 3",
                rusqlite::params![unix_now() - secs],
            )
            .expect("date back");
    };
    // 100 s of a 900 s lease left: more than a tenth, it holds.
    date_back(RESERVATION_LEASE_SECS - 100);
    j.hold_reservation("mine", addr, 7, 3)
        .expect("a ninth left");
    // 80 s left: less than a tenth, refused.
    date_back(RESERVATION_LEASE_SECS - 80);
    let e = j
        .hold_reservation("mine", addr, 7, 3)
        .expect_err("under a tenth left");
    assert!(matches!(e, Error::LeaseExpired { nonce: 3, .. }), "{e}");
    date_back(RESERVATION_LEASE_SECS + 60);
    let e = j
        .hold_reservation("mine", addr, 7, 3)
        .expect_err("the lease ran out");
    assert!(matches!(e, Error::LeaseExpired { nonce: 3, .. }), "{e}");
}

#[test]
fn two_processes_cannot_reserve_one_nonce() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("j.sqlite3");
    let addr = Address::repeat_byte(0x11);
    // Two journals on one file, as two bridgectl processes would have, racing for
    // the same nonce from eight threads each.
    let journals = [
        Journal::open(&path).expect("open"),
        Journal::open(&path).expect("open"),
    ];
    for i in 0..16 {
        journals[i % 2]
            .begin(
                &format!("flow-{i}"),
                FlowKind::Redeem,
                Some(&addr.to_string()),
                &json!({}),
            )
            .expect("begin");
    }
    let won: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let j = &journals[i % 2];
                scope.spawn(move || {
                    let id = format!("flow-{i}");
                    j.reserve_nonce(&id, addr, 7, 5).map(|()| id)
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("thread").ok())
            .collect()
    });
    assert_eq!(won.len(), 1, "exactly one flow holds nonce 5: {won:?}");
    let holder = &won[0];
    let loser = if holder == "flow-0" {
        "flow-1"
    } else {
        "flow-0"
    };
    match journals[0].reserve_nonce(loser, addr, 7, 5) {
        Err(Error::NonceReserved { nonce: 5, by, .. }) => assert_eq!(&by, holder),
        other => panic!("expected NonceReserved, got {other:?}"),
    }
    assert_eq!(
        journals[0].next_nonce(addr, 7, None).expect("next"),
        Some(6)
    );
    assert_eq!(
        journals[0].next_nonce(addr, 7, Some(holder)).expect("next"),
        None,
        "a flow's own reservation is not a floor under itself"
    );
    assert_eq!(journals[0].next_nonce(addr, 8, None).expect("next"), None);

    // A flow that failed before signing gives its nonce back.
    journals[1]
        .step(holder, FlowState::Failed, "not-approved", &json!({}))
        .expect("fail");
    assert_eq!(journals[0].next_nonce(addr, 7, None).expect("next"), None);
    journals[0]
        .reserve_nonce(loser, addr, 7, 5)
        .expect("taken over from a failed flow");
    assert_eq!(
        journals[0].next_nonce(addr, 7, None).expect("next"),
        Some(6)
    );

    // A flow that signed holds its nonce for good, even once marked failed (a
    // platform reporting "failed" must not free a nonce that can still be mined).
    journals[0]
        .record_signed(loser, &signed_for_test(7, 5))
        .expect("signed");
    journals[0]
        .step(loser, FlowState::Failed, "redemption-failed", &json!({}))
        .expect("failed");
    assert_eq!(
        journals[0].next_nonce(addr, 7, None).expect("next"),
        Some(6)
    );
    // A bystander: neither the race's winner (marked failed above) nor the loser.
    let other = (0..16)
        .map(|i| format!("flow-{i}"))
        .find(|id| id != holder && id != loser)
        .expect("a third flow");
    let other = other.as_str();
    assert!(matches!(
        journals[1].reserve_nonce(other, addr, 7, 5),
        Err(Error::NonceReserved { .. })
    ));

    // An unsigned reservation holds only for its lease: a flow interrupted at its
    // prompt does not block the address for ever.
    journals[1]
        .reserve_nonce(other, addr, 7, 6)
        .expect("next nonce");
    assert_eq!(
        journals[0].next_nonce(addr, 7, None).expect("next"),
        Some(7)
    );
    journals[0]
        .with(|c| c.execute("UPDATE nonces SET reserved_at = 0 WHERE nonce = 6", &[]))
        .expect("age the lease");
    assert_eq!(
        journals[0].next_nonce(addr, 7, None).expect("next"),
        Some(6)
    );
    journals[0]
        .reserve_nonce("flow-4", addr, 7, 6)
        .expect("an expired lease is taken over");
}

/// The nonce floor is read before every signature: its cost must not grow with the
/// journal. Counted in SQLite's virtual-machine steps (not time), with 10 and with
/// 2,000 signed flows of the sender.
#[test]
fn the_nonce_floor_reads_the_same_rows_whatever_the_journal_size() {
    let addr = Address::repeat_byte(0x11);
    let steps = |flows: u64| {
        let dir = tempfile::tempdir().expect("tmp");
        let j = Journal::open(dir.path().join("journal.sqlite3")).expect("open");
        j.write(|t| {
            for n in 0..flows {
                let id = format!("flow-{n}");
                t.execute(
                    "INSERT INTO flows (tx_id, kind, state, from_addr, intent, signed_tx,
                                        chain_id, nonce, created_at, updated_at)
                     VALUES (?1, 'redeem', 'completed', ?2, '{}', '0xf8', 7, ?3, '', '')",
                    &[&id, &addr.to_string(), &n.to_string()],
                )?;
                t.execute(
                    "INSERT INTO nonces (address, chain_id, nonce, tx_id, reserved_at)
                     VALUES (?1, 7, ?2, ?3, 0)",
                    &[&addr.to_string(), &(n as i64), &id],
                )?;
            }
            Ok(())
        })
        .expect("fill");
        assert_eq!(j.next_nonce(addr, 7, None).expect("next"), Some(flows));
        vm_steps(
            &dir.path().join("journal.sqlite3"),
            &next_nonce_sql(),
            rusqlite::params![addr.to_string(), 7, "", 0],
        )
    };
    flat("the nonce floor", steps);
}

/// The virtual-machine steps SQLite takes to read every row `sql` returns with `args`:
/// a cost that counts the rows read, not time.
/// (SQLite's own counters: read on a connection of the test's own to the journal file.)
fn vm_steps(journal: &std::path::Path, sql: &str, args: impl rusqlite::Params) -> i32 {
    let c = rusqlite::Connection::open(journal).expect("open");
    let mut stmt = c.prepare(sql).expect("prepare");
    stmt.query_map(args, |_| Ok(()))
        .expect("query")
        .for_each(drop);
    stmt.get_status(rusqlite::StatementStatus::VmStep)
}

/// Refuses unless `what` takes about the same steps in a journal of 2,000 flows as in
/// one of 10 (`steps` fills a journal of that many and counts them).
fn flat(what: &str, steps: impl Fn(u64) -> i32) {
    let (small, large) = (steps(10), steps(2_000));
    assert!(
        large <= small + 10,
        "{what} took {large} steps at 2,000 flows and {small} at 10"
    );
}

/// `Journal::list` reads the newest flows: its cost must not grow with the journal
/// (issue 53). Counted in SQLite's virtual-machine steps, with 10 and with 2,000 flows.
#[test]
fn the_newest_flows_read_the_same_rows_whatever_the_journal_size() {
    let steps = |flows: u64| {
        let dir = tempfile::tempdir().expect("tmp");
        let j = Journal::open(dir.path().join("journal.sqlite3")).expect("open");
        j.write(|t| {
            for n in 0..flows {
                t.execute(
                    "INSERT INTO flows (tx_id, kind, state, intent, created_at, updated_at)
                     VALUES (?1, 'redeem', 'completed', '{}', ?2, '')",
                    &[
                        &format!("flow-{n}"),
                        &format!("2026-01-01T00:{:05}Z", n / 2),
                    ],
                )?;
            }
            Ok(())
        })
        .expect("fill");
        let listed = j.list(5).expect("list");
        let ids: Vec<&str> = listed.iter().map(|f| f.tx_id.as_str()).collect();
        let newest: Vec<String> = (flows - 5..flows)
            .rev()
            .map(|n| format!("flow-{n}"))
            .collect();
        assert_eq!(ids, newest, "newest first, ties by insertion");
        vm_steps(
            &dir.path().join("journal.sqlite3"),
            &newest_flows_sql(),
            rusqlite::params![5],
        )
    };
    flat("the newest five flows", steps);
}

#[test]
fn oversized_blobs_are_stored_as_a_marker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = Journal::open(dir.path().join("j.sqlite3")).expect("open");
    j.begin("t1", FlowKind::Redeem, None, &json!({}))
        .expect("begin");
    let huge = json!({"status": "PENDING", "raw": "x".repeat(5 * MAX_BLOB_BYTES)});
    j.observe("t1", None, "status", &huge).expect("observe");
    j.record_result("t1", &huge).expect("result");
    let small = json!({"status": "DONE"});
    j.note("t1", "done", &small).expect("note");
    let steps = j.steps("t1").expect("steps");
    let marker = &steps[steps.len() - 2].detail;
    assert_eq!(marker["truncated"], true, "{marker}");
    assert!(marker["bytes"].as_u64().expect("bytes") > 5 * MAX_BLOB_BYTES as u64);
    assert!(
        marker["head"]
            .as_str()
            .expect("head")
            .starts_with("{\"raw\":\"xxx")
    );
    assert_eq!(steps[steps.len() - 1].detail, small);
    let flow = j.get("t1").expect("get");
    assert_eq!(flow.result.expect("result")["truncated"], true);
}

#[test]
fn unknown_flows_are_reported() {
    let dir = tempfile::tempdir().expect("tmp");
    let j = Journal::open(dir.path().join("j.sqlite3")).expect("open");
    assert!(matches!(j.get("nope"), Err(Error::NotInJournal(_))));
    // A step of an unknown flow updates no row; a reused txId breaks the flows'
    // primary key: both are refused, never silently merged.
    assert!(matches!(
        j.step("nope", FlowState::Failed, "x", &json!({})),
        Err(Error::Journal {
            source: bridgectl_store::Error::NoRow,
            ..
        })
    ));
    let constraint = |r: Result<(), Error>| match r {
        Err(Error::Journal { source, .. }) => source.is_constraint(),
        _ => false,
    };
    j.begin("a", FlowKind::Swap, None, &json!({}))
        .expect("begin");
    assert!(
        constraint(j.begin("a", FlowKind::Swap, None, &json!({}))),
        "txId reused"
    );
}

#[test]
fn steps_commit_without_fsync_and_signatures_with_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let j = Journal::open(dir.path().join("j.sqlite3")).expect("open");
    let sync = |c: &mut dyn bridgectl_store::Conn| c.query_value("PRAGMA synchronous", &[]);
    let mode: String = j
        .with(|c| c.query_value("PRAGMA journal_mode", &[]))
        .expect("mode");
    assert_eq!(mode, "wal");
    let step: i64 = j.with(sync).expect("pragma");
    assert_eq!(
        step, 1,
        "synchronous = NORMAL: a step survives a crash, not a power cut"
    );
    let durable: i64 = j.write_durable(sync).expect("pragma");
    assert_eq!(
        durable, 2,
        "synchronous = FULL: a signature survives a power cut"
    );
}

/// A batch item keyed by its id, bound to flow `tx_id`.
fn new_item(id: &str, tx_id: &str) -> NewBatchItem {
    NewBatchItem {
        id: id.to_owned(),
        key: id.to_owned(),
        op: json!({"op": "redeem"}),
        tx_id: tx_id.to_owned(),
    }
}

/// An item's key is held by the first batch that records it, for good: a batch with a
/// held key is not recorded at all (none of its items, its other keys neither), and what
/// holds each held key is reported; held keys are found without writing, too.
#[test]
fn a_batch_item_key_is_held_by_one_batch_and_a_batch_with_a_held_key_records_nothing() {
    let j = Journal::in_memory().expect("journal");
    let first = [new_item("p-1", "f-1"), new_item("p-2", "f-2")];
    assert!(
        j.create_batch("b-1", "a.jsonl", &first)
            .expect("first")
            .is_empty()
    );
    let second = [new_item("p-3", "f-3"), new_item("p-2", "f-4")];
    let held = j.create_batch("b-2", "a.jsonl", &second).expect("second");
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!((held[0].index, held[0].batch_id.as_str()), (1, "b-1"));
    assert_eq!(
        (
            held[0].held_by.index,
            held[0].held_by.item_id.as_str(),
            held[0].held_by.tx_id.as_str()
        ),
        (1, "p-2", "f-2")
    );
    assert!(matches!(j.find_batch("b-2"), Err(Error::NoSuchBatch(_))));
    let free = j.held_keys(&["p-3", "p-9"]).expect("read");
    assert!(
        free.is_empty(),
        "p-3 of the refused batch is free: {free:?}"
    );
    let held = j.held_keys(&["p-9", "p-1"]).expect("read");
    assert_eq!(held.len(), 1);
    assert_eq!((held[0].index, held[0].held_by.index), (1, 0));
    assert!(
        j.create_batch("b-3", "b.jsonl", &[new_item("p-3", "f-5")])
            .expect("third")
            .is_empty()
    );
}

/// Two processes recording one file at once, from eight threads each: the key's
/// uniqueness in the database decides, so exactly one batch is recorded and every other
/// is told which batch holds its items.
#[test]
fn one_file_recorded_by_two_processes_at_once_is_recorded_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("j.sqlite3");
    let journals = [
        Journal::open(&path).expect("open"),
        Journal::open(&path).expect("open"),
    ];
    let outcomes: Vec<Vec<HeldKey>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let j = &journals[i % 2];
                scope.spawn(move || {
                    let items: Vec<NewBatchItem> = (0..3)
                        .map(|k| new_item(&format!("payout-{k}"), &format!("f-{i}-{k}")))
                        .collect();
                    j.create_batch(&format!("b-{i}"), "payouts.jsonl", &items)
                        .expect("no error")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let recorded: Vec<usize> = (0..16).filter(|i| outcomes[*i].is_empty()).collect();
    assert_eq!(
        recorded.len(),
        1,
        "exactly one batch is recorded: {recorded:?}"
    );
    let winner = format!("b-{}", recorded[0]);
    for held in outcomes.iter().filter(|h| !h.is_empty()) {
        assert_eq!(held.len(), 3);
        assert!(held.iter().all(|h| h.batch_id == winner), "{held:?}");
    }
    assert_eq!(journals[1].list_batches(20).expect("list").len(), 1);
}

/// A journal at version 6 (its `ending` column added by that version's `ALTER`) opens
/// at version 7: the `ALTER` is not run twice, and its batches' ids are keys.
#[test]
fn a_version_6_journal_opens_with_its_batch_ids_as_keys() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("j.sqlite3");
    let v6 = format!(
        "{}ALTER TABLE flows ADD COLUMN ending TEXT;",
        &SCHEMA_SQL[..SCHEMA_SQL.find("-- (flows.ending").expect("the marker")]
    );
    {
        let c = rusqlite::Connection::open(&path).expect("raw");
        c.execute_batch(&v6).expect("version 6");
        c.execute_batch(
            "INSERT INTO batches VALUES ('b-old', 'old.jsonl', '2024-01-01T00:00:00Z');
             INSERT INTO batch_items (batch_id, idx, item_id, op, tx_id)
                 VALUES ('b-old', 0, 'invoice-7', '{}', 'f-old'),
                        ('b-old', 1, 'line-2', '{}', 'f-old-2');
             PRAGMA user_version = 6;",
        )
        .expect("a batch");
    }
    let j = Journal::open(&path).expect("opens at version 7");
    let held = j.held_keys(&["invoice-7", "line-2"]).expect("read");
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].batch_id, "b-old");
    j.begin("f-new", FlowKind::Redeem, None, &json!({}))
        .expect("the ending column is there");
    drop(j);
    Journal::open(&path).expect("and again");
}

#[test]
fn a_batch_item_run_again_abandons_its_unsigned_flow_and_frees_its_nonce() {
    let j = Journal::in_memory().expect("journal");
    let from = Address::repeat_byte(7);
    let items = vec![new_item("a", "flow-a"), new_item("b", "flow-b")];
    assert!(
        j.create_batch("ba7c-0001", "payouts.jsonl", &items)
            .expect("create")
            .is_empty()
    );
    // Item a began, reserved nonce 5 and was interrupted before signing; item b
    // signed nonce 6.
    j.begin(
        "flow-a",
        FlowKind::Redeem,
        Some(&from.to_string()),
        &json!({}),
    )
    .expect("begin a");
    j.reserve_nonce("flow-a", from, 1, 5).expect("reserve a");
    j.begin(
        "flow-b",
        FlowKind::Redeem,
        Some(&from.to_string()),
        &json!({}),
    )
    .expect("begin b");
    j.reserve_nonce("flow-b", from, 1, 6).expect("reserve b");
    j.record_signed("flow-b", &signed_for_test(1, 6))
        .expect("signed b");
    let found = j.batch_items("ba7c-0001").expect("items");
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0].flow.as_ref().map(|f| f.state),
        Some(FlowState::Started)
    );
    assert!(
        found[1]
            .flow
            .as_ref()
            .is_some_and(|f| f.signed_tx.is_some())
    );

    j.retry_batch_item("ba7c-0001", 0, "flow-a", "flow-a2")
        .expect("retry");
    let a = j.get("flow-a").expect("old flow");
    assert_eq!(
        a.state,
        FlowState::Failed,
        "the interrupted flow is abandoned"
    );
    assert!(
        j.steps("flow-a")
            .expect("steps")
            .iter()
            .any(|s| s.step == "abandoned")
    );
    let found = j.batch_items("ba7c-0001").expect("items");
    assert_eq!(found[0].tx_id, "flow-a2");
    assert_eq!(found[0].attempt, 2);
    assert!(found[0].flow.is_none(), "the new flow has not begun");
    // Nonce 5 is free again for the new attempt; 6 stays taken (it was signed).
    j.begin(
        "flow-a2",
        FlowKind::Redeem,
        Some(&from.to_string()),
        &json!({}),
    )
    .expect("begin a2");
    j.reserve_nonce("flow-a2", from, 1, 5)
        .expect("nonce 5 is free again");
    assert!(matches!(
        j.reserve_nonce("flow-a2", from, 1, 6),
        Err(Error::NonceReserved { nonce: 6, .. })
    ));
    // A signed flow is never abandoned.
    j.retry_batch_item("ba7c-0001", 1, "flow-b", "flow-b2")
        .expect("retry b");
    assert_ne!(j.get("flow-b").expect("b").state, FlowState::Failed);

    assert_eq!(j.find_batch("ba7c").expect("prefix").items, 2);
    assert!(matches!(j.find_batch("zz"), Err(Error::NoSuchBatch(_))));
    assert_eq!(j.list_batches(5).expect("list").len(), 1);
}

/// A credit completes one swap, once, and a reset chain's credits no longer count (a new
/// chain can repeat the old one's transaction hashes).
#[test]
fn a_credit_is_claimed_once_until_its_chain_is_reset() {
    let j = Journal::in_memory().expect("journal");
    for id in ["swap-a", "swap-b"] {
        j.begin(id, FlowKind::Swap, Some("0xabc"), &json!({"amount": "1"}))
            .expect("begin");
    }
    let credit = Credit {
        chain_id: 31338,
        tx_hash: format!("0x{}", "cd".repeat(32)),
        log_index: 3,
        block: 9,
        amount: "7".into(),
    };
    let claim = |id: &str, c: &Credit| {
        j.conclude_with_credit(id, c, &json!({"txHash": "0x01"}), &[])
            .expect("claim")
    };
    assert!(claim("swap-a", &credit));
    assert!(!claim("swap-b", &credit), "claimed by another swap");
    assert_eq!(j.get("swap-b").expect("b").state, FlowState::Started);
    let mut other = credit.clone();
    other.log_index = 4;
    assert!(!claim("swap-a", &other), "a swap holds one credit");
    assert_eq!(j.credit_of("swap-a").expect("of"), Some(credit.clone()));
    let a = j.get("swap-a").expect("a");
    assert_eq!(
        (a.state, a.ending),
        (FlowState::Confirming, Some(FlowState::Completed)),
        "observed, completed once final"
    );
    assert_eq!(
        j.credit_claimed_by(31338, &credit.tx_hash, 3).expect("by"),
        Some("swap-a".into())
    );
    j.reset_chain(31338, alloy_primitives::B256::repeat_byte(7))
        .expect("reset");
    assert_eq!(
        j.credit_claimed_by(31338, &credit.tx_hash, 3).expect("by"),
        None
    );
    assert!(
        claim("swap-b", &credit),
        "the new chain's credit of the same name"
    );
}

/// A redeem stopped at its approval is not over: it stays verified (resumable) and
/// gives its nonce back, so a new flow of the address is not held up by it; resuming
/// reserves the nonce again. A swap stopped there is over (its transaction is built
/// anew by running it again).
#[test]
fn a_flow_stopped_at_its_approval_stays_open_and_gives_its_nonce_back() {
    let j = Journal::in_memory().expect("journal");
    let addr = Address::repeat_byte(7);
    let from = addr.to_string();
    for (id, kind) in [("redeem-1", FlowKind::Redeem), ("swap-1", FlowKind::Swap)] {
        j.begin(id, kind, Some(&from), &json!({})).expect("begin");
        j.step(id, FlowState::Verified, "verified", &json!({}))
            .expect("verified");
    }
    j.reserve_nonce("redeem-1", addr, 7, 5).expect("reserve");
    j.reserve_nonce("swap-1", addr, 8, 5).expect("reserve");
    assert_eq!(j.next_nonce(addr, 7, None).expect("next"), Some(6));
    for id in ["redeem-1", "swap-1"] {
        j.stop_at_approval(id, "not-approved", &json!({"error": "wrong passphrase"}))
            .expect("stop");
    }
    let redeem = j.get("redeem-1").expect("get");
    assert_eq!(redeem.state, FlowState::Verified);
    assert_eq!(
        j.steps("redeem-1")
            .expect("steps")
            .last()
            .map(|s| s.step.clone()),
        Some("not-approved".into())
    );
    assert_eq!(j.get("swap-1").expect("get").state, FlowState::Failed);
    assert_eq!(
        j.next_nonce(addr, 7, None).expect("next"),
        None,
        "given back"
    );
    assert_eq!(
        j.nonce_holder(addr, 7, 5).expect("holder").map(|r| r.tx_id),
        None
    );
    j.reserve_nonce("redeem-1", addr, 7, 5)
        .expect("reserved again by its resume");
    assert_eq!(j.next_nonce(addr, 7, None).expect("next"), Some(6));
}

/// A fact taken back withdraws the flow's end in one commit: the flow is open again
/// (also after it was completed: a reorganisation deeper than finality), the credit's
/// claim is released for another swap, and the reorganisation is a step of its own.
#[test]
fn a_withdrawn_fact_reopens_the_flow_and_releases_its_credit() {
    use crate::journal::{Fact, FactKind};
    use alloy_primitives::B256;
    let j = Journal::in_memory().expect("journal");
    for id in ["swap-a", "swap-b"] {
        j.begin(id, FlowKind::Swap, Some("0xabc"), &json!({"amount": "1"}))
            .expect("begin");
    }
    let credit = Credit {
        chain_id: 31338,
        tx_hash: format!("0x{}", "cd".repeat(32)),
        log_index: 3,
        block: 9,
        amount: "7".into(),
    };
    let fact = |kind, block| Fact {
        kind,
        chain_id: 31338,
        tx_hash: B256::repeat_byte(0xcd),
        log_index: (kind == FactKind::Credit).then_some(3),
        block,
        block_hash: B256::repeat_byte(block as u8),
        is_final: false,
    };
    let facts = [fact(FactKind::Receipt, 5), fact(FactKind::Credit, 9)];
    assert!(
        j.conclude_with_credit("swap-a", &credit, &json!({}), &facts)
            .expect("claim")
    );
    assert_eq!(j.facts("swap-a").expect("facts").len(), 2);
    assert_eq!(
        j.finalize("swap-a").expect("final"),
        Some(FlowState::Completed)
    );
    let done = j.get("swap-a").expect("a");
    assert_eq!((done.state, done.ending), (FlowState::Completed, None));
    assert!(j.facts("swap-a").expect("facts").iter().all(|f| f.is_final));
    assert_eq!(j.finalize("swap-a").expect("again"), None, "only once");
    // Deeper than finality: the completed swap is reopened.
    let gone = j.facts("swap-a").expect("facts")[1].clone();
    let reorg = j.withdraw("swap-a", &gone).expect("withdraw");
    assert!(reorg.deeper_than_final);
    assert_eq!(j.get("swap-a").expect("a").state, FlowState::Submitted);
    assert_eq!(j.credit_of("swap-a").expect("of"), None);
    assert_eq!(
        j.facts("swap-a").expect("facts").len(),
        1,
        "its receipt stays"
    );
    assert_eq!(j.reorgs("swap-a").expect("reorgs").len(), 1);
    assert!(
        j.conclude_with_credit("swap-b", &credit, &json!({}), &[])
            .expect("claim"),
        "released: another swap may claim it"
    );
}

/// A batch prepared for the air gap holds its items' nonces past the reservation lease,
/// however long the signatures take: the floor, the holder and another flow's
/// reservation all see them; abandoning the batch gives back those held unsigned (its
/// flows end failed, with the step `abandoned`) and keeps a signed one's.
#[test]
fn a_prepared_batch_holds_its_nonces_past_the_lease_until_it_is_abandoned() {
    let j = Journal::in_memory()
        .expect("journal")
        .with_reservation_lease(std::time::Duration::from_secs(1));
    let from = Address::repeat_byte(9);
    let items = [
        new_item("p-1", "f-1"),
        new_item("p-2", "f-2"),
        new_item("p-3", "f-3"),
    ];
    assert!(
        j.create_batch("b-prep", "p.jsonl", &items)
            .expect("create")
            .is_empty()
    );
    for (n, tx_id) in ["f-1", "f-2", "f-3"].into_iter().enumerate() {
        j.begin(tx_id, FlowKind::Redeem, Some(&from.to_string()), &json!({}))
            .expect("begin");
        j.reserve_nonce(tx_id, from, 1, 10 + n as u64)
            .expect("reserve");
    }
    j.record_prepared("b-prep", alloy_primitives::B256::repeat_byte(1))
        .expect("prepared");
    // Item 0 came back signed; the lease of the others ran out long ago.
    j.record_signed("f-1", &signed_for_test(1, 10))
        .expect("signed");
    j.with(|c| c.execute("UPDATE nonces SET reserved_at = 0", &[]))
        .expect("age every lease");
    j.begin(
        "online",
        FlowKind::Redeem,
        Some(&from.to_string()),
        &json!({}),
    )
    .expect("begin");
    assert_eq!(j.next_nonce(from, 1, None).expect("floor"), Some(13));
    for nonce in [11, 12] {
        assert!(
            matches!(
                j.reserve_nonce("online", from, 1, nonce),
                Err(Error::NonceReserved { .. })
            ),
            "nonce {nonce} is the prepared batch's"
        );
        assert!(j.nonce_holder(from, 1, nonce).expect("holder").is_some());
    }
    let held: Vec<(usize, u64, bool)> = j
        .held_nonces("b-prep")
        .expect("held")
        .iter()
        .map(|h| (h.index, h.nonce, h.signed))
        .collect();
    assert_eq!(held, [(0, 10, true), (1, 11, false), (2, 12, false)]);

    let (at, now, released) = j
        .abandon_prepared("b-prep", "given up")
        .expect("abandon")
        .expect("prepared");
    assert!(now);
    let released: Vec<u64> = released.iter().map(|h| h.nonce).collect();
    assert_eq!(released, [11, 12]);
    assert_eq!(j.abandoned("b-prep").expect("read"), Some(at.clone()));
    assert_eq!(j.next_nonce(from, 1, None).expect("floor"), Some(11));
    j.reserve_nonce("online", from, 1, 11).expect("free again");
    assert_eq!(j.get("f-2").expect("f-2").state, FlowState::Failed);
    assert!(
        j.steps("f-2")
            .expect("steps")
            .iter()
            .any(|s| s.step == "abandoned")
    );
    assert_ne!(j.get("f-1").expect("f-1").state, FlowState::Failed);
    let again = j.abandon_prepared("b-prep", "again").expect("again");
    assert_eq!(again.map(|(a, n, r)| (a, n, r.len())), Some((at, false, 0)));
    assert!(j.abandon_prepared("no-such", "x").expect("read").is_none());
}

/// A journal copied into another (`state migrate`, here into a SQLite file) has every
/// flow with its steps and signature; copied again, the target holds flows and refuses.
#[test]
fn a_journal_copies_into_an_empty_one_only() {
    let dir = tempfile::tempdir().expect("tmp");
    let j = Journal::open(dir.path().join("from.sqlite3")).expect("open");
    j.begin(
        "id-1",
        FlowKind::Redeem,
        Some("0xabc"),
        &json!({"amount": "1"}),
    )
    .expect("begin");
    j.record_signed("id-1", &signed_for_test(31337, 7))
        .expect("signed");
    let target = Journal::open(dir.path().join("to.sqlite3")).expect("target");
    let copied = j.copy_into(&target).expect("copied");
    assert!(copied.contains(&("flows", 1)), "{copied:?}");
    let rec = target.get("id-1").expect("there");
    assert_eq!((rec.state, rec.nonce), (FlowState::Signed, Some(7)));
    assert_eq!(
        target.steps("id-1").expect("steps").len(),
        j.steps("id-1").expect("steps").len()
    );
    let err = j.copy_into(&target).expect_err("refused");
    assert!(matches!(err, Error::MigrationRefused(_)), "{err}");
}

/// A run paused past its claim's lease, whose unsigned item another run bound to a fresh
/// flow meanwhile, is refused at its next write of the old flow: that flow is no longer
/// an item, but it was this run's item, and its claim moved on (a woken host exits
/// "taken over", never on to reserve a nonce the new flow holds).
#[test]
fn a_flow_rebound_away_from_a_taken_over_claim_is_still_fenced() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("journal.sqlite3");
    let (paused, other) = (
        Journal::open(&path).expect("open"),
        Journal::open(&path).expect("open"),
    );
    paused
        .create_batch("b-1", "a.jsonl", &[new_item("p-1", "f-1")])
        .expect("batch");
    let lease = std::time::Duration::from_millis(1);
    let claim = |j: &Journal, run: &str| match j
        .claim_lane("b-1", Address::ZERO, &claims::Owner::this_run(run), lease)
        .expect("claim")
    {
        claims::LaneClaim::Claimed(claim) => claim,
        held => panic!("not claimed: {held:?}"),
    };
    paused.fence_batch(&claim(&paused, "a"));
    paused
        .begin("f-1", FlowKind::Redeem, Some("0xabc"), &json!({}))
        .expect("the item's flow begins under the claim");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let taken = claim(&other, "b");
    assert_eq!(taken.fence, 2, "a takeover raises the token");
    other
        .retry_batch_item("b-1", 0, "f-1", "f-2")
        .expect("the item bound to a fresh flow");
    let addr = Address::repeat_byte(0x11);
    match paused.reserve_nonce("f-1", addr, 7, 5) {
        Err(Error::ClaimTakenOver { batch_id, by }) => {
            assert_eq!(batch_id, "b-1");
            assert!(by.is_some_and(|b| b.contains("b/")), "names the other run");
        }
        other => panic!("expected ClaimTakenOver, got {other:?}"),
    }
    // A flow that never was this run's item is not fenced by the claim.
    paused
        .begin("f-9", FlowKind::Redeem, Some("0xabc"), &json!({}))
        .expect("another flow");
}
