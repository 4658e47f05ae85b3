//! Final means final: a flow's end counts only once it is final on its chain, and a
//! chain that takes a fact back (anvil's `anvil_reorg`, through the sandbox) reopens the
//! flow: never `completed` on a fact the chain no longer has.
//!
//! Which guard each test catches (each was tried by removing it):
//! - `a_credit_taken_back_before_it_is_final_completes_no_swap_until_credited_again`: no
//!   look at a fact's block after it was seen (the swap completes on the credit the
//!   reorganisation removed, whose block hash is not the chain's);
//! - `a_reorganisation_deeper_than_finality_reopens_a_completed_redeem`: no look at a
//!   completed flow's facts (`status` says `completed` on a receipt the chain lost);
//! - `a_redeem_whose_transaction_is_taken_back_sends_its_own_bytes_again`: no resend of a
//!   lost transaction (the wait runs out), or a resend by a new signature (a second
//!   entry in the signing log, another hash);
//! - `a_batch_of_mixed_items_ends_right_through_a_reorganisation`: items followed to their
//!   inclusion only (one ends on a receipt the reorganisation took);
//! - `a_redeem_without_a_node_is_never_completed_by_the_platforms_word`: the platform's
//!   `completed` taken without the chain;
//! - `two_journals_of_one_keystore_complete_each_swap_on_a_credit_of_its_own`: credit
//!   claims kept per journal (both swaps complete on the first credit);
//! - `a_side_node_that_serves_the_main_chain_is_refused_before_anything_is_signed`: a node
//!   believed for a chain it does not serve (the MT transfer is signed and sent, then the
//!   swap waits for a credit on the wrong chain).

use alloy_primitives::{Address, B256};
use serde_json::Value;

use crate::ends::{credit_of, eventually, with_peg};
use crate::flow::units;
use crate::live::{Live, block_on};

/// The journal state of flow `tx_id`.
fn state(live: &Live, tx_id: &str) -> String {
    live.journal_rows()
        .into_iter()
        .find(|r| r.0 == tx_id)
        .map(|r| r.1)
        .unwrap_or_default()
}

/// The step names of flow `tx_id`, oldest first.
fn steps(live: &Live, tx_id: &str) -> Vec<String> {
    live.ok(&["history", tx_id])["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["step"].as_str().expect("step").to_owned())
        .collect()
}

/// The txId of the test's one flow, once the journal holds it.
fn only_flow(live: &Live) -> String {
    let mut id = String::new();
    eventually("the flow in the journal", || {
        std::path::Path::new(&live.dir.join("journal.sqlite3")).exists()
            && crate::util::try_journal_rows(&live.dir.join("journal.sqlite3"))
                .ok()
                .and_then(|rows| rows.into_iter().next())
                .map(|r| id = r.0)
                .is_some()
    });
    id
}

/// How many entries the keystore's signing log holds.
fn log_entries(live: &Live) -> i64 {
    let log = rusqlite::Connection::open(live.dir.keystore().join("signing-log.sqlite3"))
        .expect("signing log");
    log.query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
        .expect("count")
}

/// The fact of `kind` in a `status` answer.
fn fact<'a>(status: &'a Value, kind: &str) -> &'a Value {
    status["facts"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["kind"] == kind))
        .unwrap_or_else(|| panic!("no {kind} fact: {status:#}"))
}

/// The hash the side (`side`) or main chain has now at block `number`.
fn block_hash(live: &Live, side: bool, number: u64) -> B256 {
    block_on(
        live.sb
            .node(side)
            .block_facts(bridgectl_flow::node::BlockId::Number(number)),
    )
    .expect("block")
    .expect("a block at that number")
    .hash
}

/// What a failed run leaves to read: each flow's steps, the side chain's pool and the
/// sender's mined nonce, and the run's output.
fn what_the_chain_says(live: &Live, out: &std::process::Output) -> String {
    let node = live.sb.node(true);
    let mut text = String::new();
    for r in live.journal_rows() {
        text += &format!(
            "{} {}: {:#}\n",
            r.0,
            r.1,
            live.ok(&["history", &r.0])["steps"]
        );
    }
    text += &format!(
        "side pool: {:#}\nsender nonce (mined): {:?}\nstdout:\n{}\nstderr:\n{}",
        block_on(node.call("txpool_content", serde_json::json!([]))).unwrap_or_default(),
        block_on(node.call(
            "eth_getTransactionCount",
            serde_json::json!([live.dev, "latest"])
        ))
        .ok(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The side chain's block time, as the sandbox was started with it.
fn side_timer(live: &Live) -> u64 {
    live.sb.info.side.block_time_ms
}

#[test]
fn a_credit_taken_back_before_it_is_final_completes_no_swap_until_credited_again() {
    let live = Live::new("reorg_credit");
    with_peg(&live);
    let st0 = live.balance(true, live.dev);
    // The side chain mines what arrives and nothing on a timer: the credit stays one
    // block deep (final at two) until the test lets the chain grow.
    live.sb.mining(true, true, 0);
    let mut c = live.cmd();
    c.args([
        "--json",
        "swap",
        "--from",
        "dev",
        "--amount",
        "2",
        "--yes",
        "--wait",
        "--timeout",
        "120",
    ]);
    let child = c.spawn_with_stdin(b"");
    let tx_id = only_flow(&live);
    eventually("the swap confirming on its credit", || {
        state(&live, &tx_id) == "confirming"
    });
    let seen = live.ok(&["status", &tx_id]);
    assert_eq!(seen["state"], "confirming", "{seen:#}");
    assert_eq!(seen["ending"], "completed", "{seen:#}");
    let credit = fact(&seen, "credit").clone();
    assert_eq!(credit["confirmations"], 1, "{seen:#}");
    assert_eq!(credit["needed"], 2, "{seen:#}");
    let old_hash = credit["blockHash"].as_str().expect("hash").to_owned();

    // The chain takes the credit's block back: the credit is gone from the chain. (As
    // deep as its block: under load, a block may have come after it since the look.)
    let credit_block = credit["block"].as_u64().expect("block");
    let head = block_on(
        live.sb
            .node(true)
            .call("eth_blockNumber", serde_json::json!([])),
    )
    .ok()
    .and_then(|h| {
        h.as_str()
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
    })
    .expect("head");
    live.sb.reorg(true, head + 1 - credit_block);
    // (Not the balance: the careful relayer may credit again at once, and under load
    // it has before the balance is read.)
    let old: B256 = old_hash.parse().expect("b256");
    assert_ne!(
        block_hash(&live, true, credit_block),
        old,
        "the credit's block is gone"
    );
    // The swap goes back to waiting; the careful relayer credits it again.
    eventually("the reorganisation noticed", || {
        steps(&live, &tx_id).iter().any(|s| s == "reorg")
    });
    eventually("the credit again", || live.balance(true, live.dev) > st0);
    live.sb.mining(true, true, side_timer(&live));
    let out = live.finished_ok(child);
    assert_eq!(out["state"], "completed", "{out:#}");

    // It completed on a credit the chain has: its block is the chain's at that number.
    let done = live.ok(&["status", &tx_id]);
    assert_eq!(done["state"], "completed", "{done:#}");
    let credit = fact(&done, "credit");
    let block = credit["block"].as_u64().expect("block");
    let hash: B256 = credit["blockHash"]
        .as_str()
        .expect("hash")
        .parse()
        .expect("b256");
    assert_eq!(hash, block_hash(&live, true, block), "{done:#}");
    assert_ne!(hash.to_string(), old_hash, "the credit the chain took back");
    let reorgs = live.ok(&["history", &tx_id])["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["step"] == "reorg")
        .count();
    assert_eq!(reorgs, 1);
    let info = &live.sb.info;
    assert_eq!(
        live.balance(true, live.dev),
        st0 + credit_of(&live, units(2, info.main.decimals)),
        "credited once"
    );
}

#[test]
fn a_reorganisation_deeper_than_finality_reopens_a_completed_redeem() {
    let live = Live::new("reorg_deep");
    let out = live.ok(&["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    assert_eq!(out["state"], "completed", "{out:#}");
    let tx_id = out["txId"].as_str().expect("txId").to_owned();
    let hash = out["txHash"].as_str().expect("hash").to_owned();
    let entries = log_entries(&live);
    let mt_paid = live.balance(false, live.dev);
    let receipt = fact(&out["observed"], "receipt").clone();
    assert_eq!(receipt["final"], true, "{out:#}");
    let block = receipt["block"].as_u64().expect("block");

    // The side chain stands still, then loses every block from the redeem's on: deeper
    // than its finality (2 confirmations).
    live.sb.mining(true, true, 0);
    let head = block_on(live.sb.node(true).block_number()).expect("head");
    assert!(head - block + 1 >= 2, "final before the reorganisation");
    live.sb.reorg(true, head - block + 1);
    assert!(
        !live.mined(true, &hash),
        "the redeem is gone from the chain"
    );

    // `status` of the completed flow looks at its facts (a call each), names the
    // reorganisation as deeper than finality and reopens the flow.
    let mut c = live.cmd();
    c.args(["status", &tx_id]);
    let text = String::from_utf8_lossy(&live.run_ok(c).stdout).into_owned();
    assert!(
        text.contains(&format!("flow {tx_id} redeem: submitted (was completed)")),
        "{text}"
    );
    assert!(text.contains("deeper than the chain's finality"), "{text}");
    let seen = live.ok(&["status", &tx_id]);
    assert_eq!(seen["state"], "submitted", "{seen:#}");
    let reorg = live.ok(&["history", &tx_id])["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["step"] == "reorg")
        .cloned()
        .expect("a reorg step");
    assert_eq!(reorg["detail"]["deeperThanFinal"], true, "{reorg:#}");
    assert_eq!(reorg["detail"]["fact"]["kind"], "receipt", "{reorg:#}");

    // `resume` sends the same bytes again (no passphrase, no new signature), and the
    // redeem completes once they are final again.
    live.sb.mining(true, true, side_timer(&live));
    let resumed = live.resume_unsigned(&tx_id);
    assert_eq!(resumed["state"], "completed", "{resumed:#}");
    assert_eq!(resumed["txHash"], hash.as_str(), "{resumed:#}");
    assert!(live.mined(true, &hash));
    assert_eq!(log_entries(&live), entries, "nothing signed again");
    assert_eq!(
        live.balance(false, live.dev),
        mt_paid,
        "the careful relayer paid once"
    );
}

#[test]
fn a_redeem_whose_transaction_is_taken_back_sends_its_own_bytes_again() {
    let live = Live::new("reorg_redeem");
    // No timer on the side chain: the redeem stays one block deep, and the relayer (two
    // deep) has not acted on it when the chain takes it back.
    live.sb.mining(true, true, 0);
    let mut c = live.cmd();
    c.args([
        "--json",
        "redeem",
        "--from",
        "dev",
        "--amount",
        "1",
        "--yes",
        "--timeout",
        "120",
    ]);
    let child = c.spawn_with_stdin(b"");
    let tx_id = only_flow(&live);
    eventually("the redeem mined", || {
        steps(&live, &tx_id).iter().any(|s| s == "mined")
    });
    let entries = log_entries(&live);
    let hash = live.ok(&["history", &tx_id])["flow"]["txHash"]
        .as_str()
        .expect("hash")
        .to_owned();
    live.sb.reorg(true, 1);
    assert!(!live.mined(true, &hash));
    // The follower finds its receipt gone and sends the journaled bytes again: mined
    // again (the same hash), then the chain grows and the relayer redeems it.
    eventually("the redeem mined again", || live.mined(true, &hash));
    live.sb.mining(true, true, side_timer(&live));
    let out = live.finished_ok(child);
    assert_eq!(out["state"], "completed", "{out:#}");
    assert_eq!(out["txHash"], hash.as_str(), "{out:#}");
    assert_eq!(log_entries(&live), entries, "no second signature");
    let steps = steps(&live, &tx_id);
    assert!(steps.iter().any(|s| s == "reorg"), "{steps:?}");
}

#[test]
fn a_batch_of_mixed_items_ends_right_through_a_reorganisation() {
    let live = Live::new("reorg_batch");
    with_peg(&live);
    let info = &live.sb.info;
    let payee = Address::repeat_byte(0x5a);
    live.dir.write(
        "mixed.jsonl",
        format!(
            "{{\"op\": \"redeem\", \"from\": \"dev\", \"amount\": \"1\", \"id\": \"r1\"}}\n\
             {{\"op\": \"swap\", \"from\": \"dev\", \"amount\": \"1\", \"id\": \"s1\"}}\n\
             {{\"op\": \"transfer\", \"from\": \"dev\", \"to\": \"{payee}\", \"token\": \"st\", \"amount\": \"1\", \"id\": \"t1\"}}\n\
             {{\"op\": \"redeem\", \"from\": \"dev\", \"amount\": \"2\", \"id\": \"r2\"}}\n"
        ),
    );
    // Final at 6 blocks here: the side chain's three items (a block each) are all short
    // of it when the chain takes two blocks back (a reorganisation deeper than finality
    // is not looked for once a flow is over: only `status` asked of it does).
    let profile = live.dir.join("xdg/config/bridgectl/config.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    let deeper = text.replace(
        &format!("side_finality = {}", info.side.confirmations),
        "side_finality = 6",
    );
    assert_ne!(deeper, text, "the profile's side_finality");
    std::fs::write(&profile, deeper).expect("write");
    let st0 = live.balance(true, live.dev);
    live.sb.mining(true, true, 0);
    let mut c = live.cmd();
    c.args([
        "--json",
        "batch",
        "run",
        "mixed.jsonl",
        "--yes",
        "--timeout",
        "120",
    ]);
    let child = c.spawn_with_stdin(b"");
    // Every side-chain item mined (one block each), none final: the chain then takes
    // the newest two back (a reorganisation deeper than finality is not looked for once
    // a flow is over: only `status` asked of it does).
    let mined_on_side = || {
        crate::util::try_journal_rows(&live.dir.join("journal.sqlite3"))
            .unwrap_or_default()
            .iter()
            .filter_map(|r| {
                live.ok(&["history", &r.0])["flow"]["txHash"]
                    .as_str()
                    .map(str::to_owned)
            })
            .filter(|h| live.mined(true, h))
            .count()
    };
    eventually("the side chain's three items mined", || {
        mined_on_side() == 3
    });
    let head = block_on(live.sb.node(true).block_number()).expect("head");
    live.sb.reorg(true, 2);
    assert_eq!(
        block_on(live.sb.node(true).block_number()).expect("head"),
        head
    );
    live.sb.mining(true, true, side_timer(&live));
    let out = child.wait_with_output();
    live.check_secrets(&out);
    assert!(out.status.success(), "{}", what_the_chain_says(&live, &out));
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<Value> = out.lines().map(crate::util::strict_json).collect();
    let summary = &lines.last().expect("summary")["summary"];
    assert_eq!(summary["completed"], 4, "{lines:#?}");
    // On chain, each item once: two Redeem events of the sender, the payee's one ST, the
    // swap's one credit.
    let redeem_topic: B256 = alloy_primitives::keccak256("Redeem(address,uint256)");
    let logs = block_on(live.sb.node(true).logs(
        info.side.token_address,
        &[Some(redeem_topic), Some(live.dev.into_word())],
        0,
        block_on(live.sb.node(true).block_number()).expect("head"),
    ))
    .expect("logs");
    assert_eq!(logs.len(), 2, "{logs:#?}");
    assert_eq!(
        live.balance(true, payee),
        units(1, info.side.decimals),
        "paid once"
    );
    let dec = info.side.decimals;
    assert_eq!(
        live.balance(true, live.dev),
        st0 - units(4, dec) + credit_of(&live, units(1, info.main.decimals)),
        "redeemed 3, sent 1, credited once"
    );
}

#[test]
fn a_redeem_without_a_node_is_never_completed_by_the_platforms_word() {
    let live = Live::new("reorg_no_node");
    // The profile names no node for either chain.
    let profile = live.dir.join("xdg/config/bridgectl/config.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    let stripped: String = text
        .lines()
        .filter(|l| !l.contains("rpc_url"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&profile, stripped).expect("write");
    // The platform takes the transaction and the chain never mines it.
    live.sb.set_mining(true, false);
    let out = live.ok(&[
        "redeem",
        "--from",
        "dev",
        "--amount",
        "1",
        "--yes",
        "--max-fee",
        "0.01eth",
    ]);
    assert_eq!(out["state"], "submitted", "{out:#}");
    let tx_id = out["txId"].as_str().expect("txId").to_owned();
    let hash: B256 = out["txHash"].as_str().expect("hash").parse().expect("b256");
    // ... and says it completed.
    assert!(
        live.sb
            .state
            .claim_redemption_status(hash, "completed", "a platform's word")
    );
    let seen = live.ok(&["status", &tx_id]);
    assert_eq!(seen["state"], "submitted", "{seen:#}");
    assert_eq!(seen["redemption"]["status"], "completed", "{seen:#}");
    assert!(
        seen["unobserved"]
            .to_string()
            .contains("the platform's word alone ends nothing"),
        "{seen:#}"
    );
    let mut c = live.cmd();
    c.args(["--json", "resume", &tx_id, "--max-fee", "0.01eth"]);
    let resumed = live.ok_cmd(c);
    assert_eq!(resumed["state"], "submitted", "{resumed:#}");
    assert_eq!(state(&live, &tx_id), "submitted");
    assert_eq!(live.nonce(true, live.dev), 1, "in the pool, not mined");
    assert!(!live.mined(true, &hash.to_string()));
}

#[test]
fn two_journals_of_one_keystore_complete_each_swap_on_a_credit_of_its_own() {
    let live = Live::new("reorg_two_journals");
    with_peg(&live);
    // Both mints wait in the side chain's pool, to land in one block.
    live.sb.set_mining(true, false);
    let swap = |journal: &str| {
        let mut c = live.cmd();
        c.env("BRIDGECTL_JOURNAL", live.dir.join(journal))
            .args(["--json", "swap", "--from", "dev", "--amount", "1", "--yes"]);
        let out = live.ok_cmd(c);
        assert_eq!(out["state"], "submitted", "{out:#}");
        out["txId"].as_str().expect("txId").to_owned()
    };
    let a = swap("journal.sqlite3");
    let b = swap("journal-b.sqlite3");
    eventually("both mints in the pool", || {
        live.sb
            .state
            .swaps()
            .iter()
            .filter(|s| s.status == "minting")
            .count()
            == 2
    });
    live.sb.mine(true);
    live.sb.mining(true, true, side_timer(&live));
    // Journal B looks first: without a claim per key it would take the first credit,
    // and journal A would take the same one.
    let status = |journal: &str, tx_id: &str| {
        let mut c = live.cmd();
        c.env("BRIDGECTL_JOURNAL", live.dir.join(journal))
            .args(["--json", "status", tx_id]);
        live.ok_cmd(c)
    };
    let mut done = Vec::new();
    for (journal, tx_id) in [("journal-b.sqlite3", &b), ("journal.sqlite3", &a)] {
        let mut last = Value::Null;
        eventually("the swap completed", || {
            last = status(journal, tx_id);
            last["state"] == "completed"
        });
        done.push(last);
    }
    let key = |s: &Value| {
        (
            s["credit"]["txHash"].clone(),
            s["credit"]["logIndex"].clone(),
        )
    };
    assert_ne!(
        key(&done[0]),
        key(&done[1]),
        "one credit, two swaps: {done:#?}"
    );
}

#[test]
fn a_side_node_that_serves_the_main_chain_is_refused_before_anything_is_signed() {
    let live = Live::shared("reorg_wrong_node");
    let profile = live.dir.join("xdg/config/bridgectl/config.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    let main_url = text
        .lines()
        .find_map(|l| l.strip_prefix("main_rpc_url = "))
        .expect("main_rpc_url")
        .to_owned();
    let wrong: String = text
        .lines()
        .map(|l| {
            if l.starts_with("side_rpc_url = ") {
                format!("side_rpc_url = {main_url}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&profile, wrong).expect("write");
    let counter = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    for args in [
        &["swap", "--from", "dev", "--amount", "1", "--yes"][..],
        &["swap", "--from", "dev", "--amount", "1", "--yes", "--wait"][..],
    ] {
        let mut c = live.cmd();
        c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args(args);
        let out = c.output();
        live.check_secrets(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("side_rpc_url"), "{err}");
        assert!(
            err.contains(&format!("serves chain {}", live.sb.info.main.chain_id)),
            "{err}"
        );
    }
    assert_eq!(counter.finish(), 0, "the passphrase was read");
    assert!(
        live.journal_rows().iter().all(|r| r.2.is_none()),
        "nothing signed"
    );
    assert_eq!(live.nonce(false, live.dev), 0, "nothing sent");
}
