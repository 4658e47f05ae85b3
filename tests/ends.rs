//! Every flow ends on its own facts. A swap is completed by its MT transfer's receipt and
//! an ST credit that is its own (a mint to its sender after the transfer, of the amount
//! the peg gives, claimed by no other flow), never by a balance that a stranger's transfer
//! raises or the owner's spending lowers. A redeem whose transaction the chain has not
//! mined says so and names `replace` and `cancel`; the platform's `failed` for such a
//! transaction is a claim, not an end. A replaced flow is named by its first hash too.
//!
//! Which break each test catches (each was tried):
//! - `swaps_end_on_their_own_credit_not_a_strangers_nor_each_others`: a swap decided by the
//!   balance (the stranger's 0.1 ST completes it while its MT transfer is unmined), a
//!   credit looked for before the transfer's receipt (a stray mint of the very amount
//!   completes it), or one from before the transfer's block (the stray mint again); then
//!   no amount check (of two swaps mined in one block, the later takes the earlier
//!   one's credit);
//! - `a_credited_swap_completes_though_its_owner_spent_past_the_old_balance` (a profile
//!   without a peg ratio: the first unclaimed mint after the transfer): the balance rule
//!   (the balance is below the one before the swap);
//! - `a_mint_in_the_block_a_swap_began_at_is_never_its_credit`: the credit search starting
//!   at the side block the swap began at, not after it (an account funded the second
//!   before its swap has its funding there: found when tests began to share a sandbox);
//! - `a_batch_of_swaps_and_redeems_completes_every_swap_on_a_credit_of_its_own`: no claim
//!   (two swaps of one amount both take one credit), and the balance rule (the redeems
//!   lower the balance);
//! - `a_redeem_the_chain_has_not_mined_is_named_and_a_platform_failure_is_a_claim`: no
//!   chain check in the redemption wait (it blames the relayer), a platform `failed`
//!   taken without a receipt, `status` resolving only the newest hash.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use serde_json::{Value, json};

use crate::flow::units;
use crate::live::{Live, block_on};

/// Stops (`false`) or restarts (`true`) mining on a chain (`side`), so that transactions
/// wait in its pool; restarting mines what waited.
fn automine(live: &Live, side: bool, on: bool) {
    live.sb.set_mining(side, on);
    if on {
        live.sb.mine(side);
    }
}

/// The profile names the sandbox's peg ratio, as `sandbox --write-profile` writes it: a
/// swap's credit must be exactly what its MT is worth.
pub(crate) fn with_peg(live: &Live) {
    let r = &live.sb.info.ratio;
    live.add_to_profile(&format!("peg_ratio = \"{}:{}\"\n", r.mt, r.st));
}

fn u256(v: &Value) -> U256 {
    v.as_str()
        .unwrap_or_else(|| panic!("not a decimal string: {v}"))
        .parse()
        .expect("u256")
}

/// The ST a swap of `whole` MT is credited at the sandbox's ratio, worked out here.
pub(crate) fn credit_of(live: &Live, mt: U256) -> U256 {
    let info = &live.sb.info;
    mt * units(info.ratio.st, info.side.decimals) / units(info.ratio.mt, info.main.decimals)
}

/// The `Transfer` log at `log_index` of side-chain transaction `hash`, read with a raw
/// `eth_getTransactionReceipt` (not the code under test): (from, to, amount).
fn transfer_log(live: &Live, hash: &str, log_index: u64) -> (Address, Address, U256) {
    let receipt = block_on(
        live.sb
            .node(true)
            .call("eth_getTransactionReceipt", json!([hash])),
    )
    .expect("receipt");
    let log = receipt["logs"]
        .as_array()
        .expect("logs")
        .iter()
        .find(|l| {
            u64::from_str_radix(
                l["logIndex"]
                    .as_str()
                    .expect("index")
                    .trim_start_matches("0x"),
                16,
            )
            .expect("hex")
                == log_index
        })
        .unwrap_or_else(|| panic!("no log {log_index} in {receipt:#}"));
    let topic = |i: usize| -> B256 {
        log["topics"][i]
            .as_str()
            .expect("topic")
            .parse()
            .expect("b256")
    };
    let word = |b: B256| Address::from_slice(&b[12..]);
    let transfer: B256 = alloy_primitives::keccak256("Transfer(address,address,uint256)");
    assert_eq!(topic(0), transfer, "a Transfer log: {log:#}");
    assert_eq!(
        log["address"].as_str().map(str::to_lowercase),
        Some(live.sb.info.side.token_address.to_string().to_lowercase()),
        "of the ST contract"
    );
    let data =
        hex::decode(log["data"].as_str().expect("data").trim_start_matches("0x")).expect("hex");
    (word(topic(1)), word(topic(2)), U256::from_be_slice(&data))
}

/// The swap completed on a mint of exactly `expected` to `to`: checked on the chain.
fn assert_own_credit(live: &Live, credit: &Value, to: Address, expected: U256) {
    let (from, recipient, amount) = transfer_log(
        live,
        credit["txHash"].as_str().expect("credit hash"),
        credit["logIndex"].as_u64().expect("log index"),
    );
    assert_eq!(from, Address::ZERO, "a mint: {credit:#}");
    assert_eq!(recipient, to, "to the swap's sender: {credit:#}");
    assert_eq!(amount, expected, "of the peg's amount: {credit:#}");
    assert_eq!(u256(&credit["amount"]), expected, "{credit:#}");
}

/// Waits until `cond` holds (up to 60 s).
pub(crate) fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn swaps_end_on_their_own_credit_not_a_strangers_nor_each_others() {
    let live = Live::new("ends_stranger");
    with_peg(&live);
    let alice = live.sb.new_account();
    live.import_key(alice.private_key.expose_secret(), "alice");
    let mt = units(5, live.sb.info.main.decimals);
    let expected = credit_of(&live, mt);
    // The main chain holds the swap's MT transfer in its pool.
    automine(&live, false, false);
    let mut c = live.cmd();
    c.args([
        "--json",
        "swap",
        "--from",
        "dev",
        "--amount",
        "5",
        "--wait",
        "--yes",
        "--timeout",
        "90",
    ]);
    let mut swap = c.spawn_with_stdin(b"");
    let journal = live.dir.join("journal.sqlite3");
    eventually("the swap's MT transfer to be submitted", || {
        crate::util::try_journal_rows(&journal)
            .is_ok_and(|rows| rows.iter().any(|(_, state, _)| state == "submitted"))
    });
    let tx_id = live.journal_rows()[0].0.clone();
    // A stranger's ST arrives at the swap's sender while its transfer is unmined.
    let st0 = live.balance(true, live.dev);
    live.ok(&[
        "transfer", "--token", "st", "--from", "alice", "--to", "dev", "--amount", "0.1", "--yes",
        "--direct",
    ]);
    assert!(
        live.balance(true, live.dev) > st0,
        "the stranger's ST arrived"
    );
    // And a mint of exactly the swap's amount that no swap paid for (a faucet, another
    // bridge operation): the right source and amount, before the transfer is mined.
    live.sb.mint_st(live.dev, expected);
    let stray_block = block_on(live.sb.node(true).block_number()).expect("head");
    // Long enough for a report of the wait (every 5 s).
    std::thread::sleep(Duration::from_secs(6));
    if swap.try_wait().expect("try_wait").is_some() {
        let out = swap.wait_with_output();
        panic!(
            "the swap ended while its MT transfer was in the pool:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let status = live.ok(&["status", &tx_id]);
    assert_eq!(status["state"], "submitted", "{status:#}");
    assert_eq!(status["txPresence"], "pending", "{status:#}");
    assert_eq!(status["credit"], Value::Null, "{status:#}");
    // Mined, it is credited: its own mint, not the stranger's transfer.
    automine(&live, false, true);
    let out = swap.wait_with_output();
    live.check_secrets(&out);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{stderr}\nthe relayer's swaps: {:#?}\nstatus: {:#}",
        live.sb.state.swaps(),
        live.ok(&["status", &tx_id])
    );
    let done = crate::util::strict_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(done["state"], "completed", "{done:#}");
    assert_eq!(u256(&done["expectedCredit"]), expected, "{done:#}");
    assert_own_credit(&live, &done["credit"], live.dev, expected);
    // The relayer's mint, after the transfer: not the earlier one of the same amount.
    let credit_block = done["credit"]["block"].as_u64().expect("block");
    assert!(
        credit_block > stray_block,
        "{done:#}: the stray mint is in block {stray_block}"
    );

    // Two swaps of different amounts from one address, mined in one block: both credits
    // come after both transfers. The later swap, looked at first, takes the credit of its
    // own amount, not the first one after its transfer.
    let dec = live.sb.info.main.decimals;
    automine(&live, false, false);
    let spawn_swap = |amount: &str| {
        let mut c = live.cmd();
        c.args([
            "--json", "swap", "--from", "dev", "--amount", amount, "--yes",
        ]);
        c.spawn_with_stdin(b"")
    };
    let submitted = |n: usize| {
        crate::util::try_journal_rows(&journal).is_ok_and(|rows| {
            rows.iter()
                .filter(|(_, state, _)| state == "submitted")
                .count()
                == n
        })
    };
    let first = spawn_swap("1");
    eventually("the first swap's transfer in the pool", || submitted(1));
    let second = spawn_swap("2");
    eventually("the second swap's transfer in the pool", || submitted(2));
    let st = live.balance(true, live.dev);
    automine(&live, false, true);
    let ids: Vec<String> = [first, second]
        .into_iter()
        .map(|p| {
            live.finished_ok(p)["txId"]
                .as_str()
                .expect("txId")
                .to_owned()
        })
        .collect();
    let (ca, cb) = (
        credit_of(&live, units(1, dec)),
        credit_of(&live, units(2, dec)),
    );
    eventually("both credits on chain", || {
        live.balance(true, live.dev) == st + ca + cb
    });
    // The later swap is looked at first; each is `confirming` on its credit until both
    // facts are final.
    let final_status = |tx_id: &str| {
        let mut last = Value::Null;
        eventually("the swap final", || {
            last = live.ok(&["status", tx_id]);
            last["state"] != "confirming"
        });
        last
    };
    let sb = final_status(&ids[1]);
    let sa = final_status(&ids[0]);
    assert_eq!(sb["state"], "completed", "{sb:#}");
    assert_eq!(sa["state"], "completed", "{sa:#}");
    assert_own_credit(&live, &sb["credit"], live.dev, cb);
    assert_own_credit(&live, &sa["credit"], live.dev, ca);
    // Every wait said what it waited for.
    assert!(stderr.contains("to be mined: 5 s of 90 s"), "{stderr}");
}

#[test]
fn a_credited_swap_completes_though_its_owner_spent_past_the_old_balance() {
    let live = Live::shared("ends_spent");
    let st0 = live.balance(true, live.dev);
    let swap = live.ok(&["swap", "--from", "dev", "--amount", "1", "--yes"]);
    assert_eq!(swap["state"], "submitted", "{swap:#}");
    let tx_id = swap["txId"].as_str().expect("txId");
    // Spent at once, and more than the swap brings: the balance ends below the one before.
    let redeem = live.ok(&["redeem", "--from", "dev", "--amount", "2", "--yes"]);
    assert_eq!(redeem["status"], "completed", "{redeem:#}");
    let expected = credit_of(&live, units(1, live.sb.info.main.decimals));
    eventually("the swap's credit on chain", || {
        live.balance(true, live.dev) == st0 + expected - units(2, live.sb.info.side.decimals)
    });
    assert!(live.balance(true, live.dev) < st0);
    let status = live.ok(&["status", tx_id]);
    assert_eq!(status["state"], "completed", "{status:#}");
    assert_own_credit(&live, &status["credit"], live.dev, expected);
    // The claim is kept: a second look reports the same credit.
    let again = live.ok(&["status", tx_id]);
    assert_eq!(again["credit"], status["credit"]);
}

/// The side block a swap began at was mined before its transfer existed, so nothing in it
/// pays for the swap: a mint to the owner there (its funding, the second before the swap;
/// dated here after the transfer, as a block of the same second can be) is not the swap's
/// credit, even with no peg ratio to check the amount by. A sandbox of its own: the side
/// chain's clock is moved ahead.
#[test]
fn a_mint_in_the_block_a_swap_began_at_is_never_its_credit() {
    let live = Live::new("ends_head_block");
    let side = live.sb.node(true);
    let ahead = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 30;
    block_on(side.call("evm_setNextBlockTimestamp", json!([ahead]))).expect("timestamp");
    live.sb
        .mint_st(live.dev, units(7, live.sb.info.side.decimals));
    let head = block_on(side.call("eth_blockNumber", json!([]))).expect("head");
    let head = u64::from_str_radix(head.as_str().expect("hex").trim_start_matches("0x"), 16)
        .expect("block number");
    let swap = live.ok(&["swap", "--from", "dev", "--amount", "1", "--yes"]);
    let tx_id = swap["txId"].as_str().expect("txId");
    let expected = credit_of(&live, units(1, live.sb.info.main.decimals));
    eventually("the swap's completion", || {
        live.ok(&["status", tx_id])["state"] == "completed"
    });
    let status = live.ok(&["status", tx_id]);
    let block = status["credit"]["block"].as_u64().expect("credit block");
    assert!(
        block > head,
        "credited in block {block}, the swap began at {head}"
    );
    assert_own_credit(&live, &status["credit"], live.dev, expected);
}

#[test]
fn a_batch_of_swaps_and_redeems_completes_every_swap_on_a_credit_of_its_own() {
    let live = Live::shared("ends_batch");
    with_peg(&live);
    let dec = live.sb.info.main.decimals;
    live.dir.write(
        "mixed.csv",
        "op,from,amount,id\n\
         swap,dev,0.3,s1\n\
         redeem,dev,0.1,r1\n\
         swap,dev,0.3,s2\n\
         redeem,dev,0.2,r2\n\
         swap,dev,0.5,s3\n\
         redeem,dev,0.3,r3\n",
    );
    let mut c = live.cmd();
    c.args(["--json", "batch", "run", "mixed.csv", "--yes"]);
    let out = live.run_ok(c);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(crate::util::strict_json)
        .collect();
    let summary = &lines.last().expect("summary")["summary"];
    assert_eq!(summary["completed"], 6, "{lines:#?}");
    let tenth = units(1, dec) / U256::from(10u8);
    let mut credited = U256::ZERO;
    let mut seen = Vec::new();
    for item in lines
        .iter()
        .filter(|l| l["id"].as_str().is_some_and(|id| id.starts_with('s')))
    {
        let tx_id = item["txId"].as_str().expect("txId");
        let status = live.ok(&["status", tx_id]);
        assert_eq!(status["state"], "completed", "{status:#}");
        let credit = &status["credit"];
        let key = (credit["txHash"].clone(), credit["logIndex"].clone());
        assert!(!seen.contains(&key), "one credit, two swaps: {credit:#}");
        seen.push(key);
        let (from, to, amount) = transfer_log(
            &live,
            credit["txHash"].as_str().expect("hash"),
            credit["logIndex"].as_u64().expect("index"),
        );
        assert_eq!((from, to), (Address::ZERO, live.dev), "{credit:#}");
        credited += amount;
    }
    // What the chain credited is what the three swaps are worth, exactly.
    let sent = tenth * U256::from(3u8 + 3 + 5);
    assert_eq!(credited, credit_of(&live, sent));
}

#[test]
fn a_redeem_the_chain_has_not_mined_is_named_and_a_platform_failure_is_a_claim() {
    let live = Live::new("ends_redeem");
    automine(&live, true, false);
    let err = live.fails(
        &[
            "redeem",
            "--from",
            "dev",
            "--amount",
            "1",
            "--yes",
            "--timeout",
            "15",
        ],
        8,
    );
    let tx_id = live.journal_rows()[0].0.clone();
    let first = live.ok(&["history", &tx_id])["flow"]["txHash"]
        .as_str()
        .expect("hash")
        .to_owned();
    for want in [
        "not mined after",
        "pending in the node's pool",
        &format!("transaction {first} is not mined"),
        &format!("`bridgectl replace {tx_id}`"),
        &format!("`bridgectl cancel {tx_id}`"),
    ] {
        assert!(err.contains(want), "{want:?} not in:\n{err}");
    }
    // The platform says failed; the chain has not mined the transaction: a claim.
    let hash: B256 = first.parse().expect("hash");
    assert!(
        live.sb
            .state
            .claim_redemption_status(hash, "failed", "a platform's word")
    );
    let status = live.ok(&["status", &tx_id]);
    assert_eq!(status["state"], "submitted", "{status:#}");
    assert_eq!(status["redemption"]["status"], "failed", "{status:#}");
    assert_eq!(status["txPresence"], "pending", "{status:#}");
    assert!(
        status["unobserved"]
            .to_string()
            .contains("platform says failed"),
        "{status:#}"
    );
    // Replaced at a higher price: the first hash still names the flow, everywhere.
    let err = live.fails(&["replace", &tx_id, "--yes", "--timeout", "2"], 8);
    assert!(err.contains("transactions to be mined"), "{err}");
    let by_first = live.ok(&["status", &first]);
    assert_eq!(by_first["txId"], tx_id.as_str(), "{by_first:#}");
    assert_eq!(
        live.ok(&["history", &first])["flow"]["txId"],
        tx_id.as_str()
    );
    let err = live.fails(&["replace", &first, "--yes", "--timeout", "2"], 8);
    assert!(err.contains(&format!("flow {tx_id}")), "{err}");
    // Mined again, the relayer redeems it: resumed by its first hash, it completes.
    automine(&live, true, true);
    let resumed = live.resume_unsigned(&first);
    assert_eq!(resumed["txId"], tx_id.as_str(), "{resumed:#}");
    assert_eq!(resumed["state"], "completed", "{resumed:#}");
    let err = live.fails(&["cancel", &first, "--yes"], 3);
    assert!(err.contains(&tx_id), "{err}");
}
