//! Batches end to end against a live sandbox: many redeems across several keys, each key
//! unlocked once, a hostile item refused without stopping the others, and a batch killed
//! at random moments (once between sign and submit) finished by `batch resume` with
//! every redemption on chain exactly once, checked from the chain's own logs.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use serde_json::{Value, json};

use crate::live::{Faults, Live, SUBMIT, block_on};
use crate::util::CountingPassphrase;

const EXIT_INCOMPLETE: i32 = 9;

/// `n` new keys in the test keystore (labels `payer0`...), each funded by the sandbox,
/// with their MT balances before anything is redeemed.
pub(crate) fn payers(live: &mut Live, n: usize) -> Vec<(Address, U256)> {
    payers_with_keys(live, n)
        .into_iter()
        .map(|(a, mt0, _)| (a, mt0))
        .collect()
}

/// [`payers`], with each payer's private key (hex) for a keystore of another machine.
pub(crate) fn payers_with_keys(live: &mut Live, n: usize) -> Vec<(Address, U256, String)> {
    (0..n)
        .map(|i| {
            let account = live.sb.new_account();
            let key = account.private_key.expose_secret().to_owned();
            live.secrets.add("a payer's private key", &key);
            live.import_key(&key, &format!("payer{i}"));
            let mt0 = live.balance(false, account.address);
            (account.address, mt0, key)
        })
        .collect()
}

/// `per` redeem items for each payer, round robin, each with its own amount (so the chain's
/// logs say which item a redemption was): `(file text, amount of each item in base units)`.
pub(crate) fn redeem_items(
    payers: &[(Address, U256)],
    per: usize,
) -> (String, Vec<(Address, U256)>) {
    let mut text = String::from("# payouts\n");
    let mut items = Vec::new();
    for k in 0..payers.len() * per {
        let from = payers[k % payers.len()].0;
        // 0.001001, 0.001002, ... ST: exact in 18 decimals, all different.
        let amount = format!("0.001{:03}", k + 1);
        let base = U256::from(1_000_000_000_000_000u64 + (k as u64 + 1) * 1_000_000_000_000);
        text.push_str(&format!(
            "{}\n",
            json!({"op": "redeem", "from": from, "amount": amount, "id": format!("item-{k}")})
        ));
        items.push((from, base));
    }
    (text, items)
}

/// Every `Redeem(redeemer, amount)` the ST contract emitted, from the side chain's node.
pub(crate) fn redeems_on_chain(live: &Live) -> Vec<(Address, U256)> {
    let topic = bridgectl_sandbox::contracts::redeem_topic();
    let logs = block_on(live.sb.node(true).call(
        "eth_getLogs",
        json!([{
            "address": live.sb.info.side.token_address,
            "fromBlock": "0x0",
            "toBlock": "latest",
            "topics": [topic],
        }]),
    ))
    .expect("eth_getLogs");
    logs.as_array()
        .expect("logs")
        .iter()
        .map(|l| {
            let redeemer: B256 = l["topics"][1]
                .as_str()
                .expect("topic")
                .parse()
                .expect("b256");
            let data = hex::decode(l["data"].as_str().expect("data").trim_start_matches("0x"))
                .expect("hex");
            (
                Address::from_slice(&redeemer[12..]),
                U256::from_be_slice(&data[..32]),
            )
        })
        .collect()
}

/// The redemptions of `payers` on chain, sorted, against the items', sorted: equal means
/// each item was redeemed exactly once (no duplicate, none lost).
pub(crate) fn assert_each_item_redeemed_once(
    live: &Live,
    payers: &[(Address, U256)],
    items: &[(Address, U256)],
) {
    let mut on_chain: Vec<_> = redeems_on_chain(live)
        .into_iter()
        .filter(|(a, _)| payers.iter().any(|(p, _)| p == a))
        .collect();
    let mut expected = items.to_vec();
    on_chain.sort();
    expected.sort();
    if on_chain.len() != expected.len() {
        // What differs, for a run that cannot be repeated: items paid twice, or not.
        let mut extra = on_chain.clone();
        let mut missing = Vec::new();
        for item in &expected {
            match extra.iter().position(|r| r == item) {
                Some(i) => {
                    extra.remove(i);
                }
                None => missing.push(*item),
            }
        }
        panic!(
            "{} redemptions on chain for {} items: on chain but not an item (or twice) \
             {extra:?}; an item not on chain {missing:?}",
            on_chain.len(),
            expected.len()
        );
    }
    assert_eq!(
        on_chain, expected,
        "the chain's redemptions are not the items"
    );
    // ST burned and MT paid (1:1, 18 and 18 decimals) exactly, per payer.
    let mut per: BTreeMap<Address, U256> = BTreeMap::new();
    for (a, v) in items {
        *per.entry(*a).or_default() += *v;
    }
    for (a, sum) in per {
        let mt0 = payers.iter().find(|(p, _)| *p == a).map(|(_, m)| *m);
        assert_eq!(
            live.balance(false, a),
            mt0.unwrap_or_default() + sum,
            "MT paid to {a}"
        );
    }
}

/// Runs a batch command that must end incomplete (exit 9), its output checked for
/// secrets.
fn incomplete(live: &Live, mut c: crate::util::TestCommand) -> std::process::Output {
    let out = c.output();
    live.check_secrets(&out);
    assert_eq!(
        out.status.code(),
        Some(EXIT_INCOMPLETE),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON lines of `batch run|resume --json`: the items' results and the summary (a
/// run that ends incomplete adds the error object as its last line, not an item).
pub(crate) fn parse_results(stdout: &[u8]) -> (Vec<Value>, Value) {
    let mut items = Vec::new();
    let mut summary = Value::Null;
    for line in String::from_utf8_lossy(stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v.get("summary").is_some() {
            summary = v["summary"].clone();
        } else if v["error"].is_object() {
            assert!(summary.is_object(), "the error line comes last: {line}");
        } else {
            items.push(v);
        }
    }
    (items, summary)
}

#[test]
fn a_batch_of_redeems_across_keys_refuses_one_hostile_item_and_resume_finishes_it() {
    let mut live = Live::new("batch_redeems");
    let payers = payers(&mut live, 4);
    let (text, items) = redeem_items(&payers, 10);
    live.dir.write("payouts.jsonl", &text);
    // The platform tampers with the amount of item 20 only.
    let hostile = items[20].1.to_string();
    live.sb
        .state
        .set_hostile_for_input(bridgectl_sandbox::Hostile::OtherAmount, &hostile);

    // The plan: totals per token and address, balances beside them; nothing signed.
    let plan = live.ok(&["batch", "plan", "payouts.jsonl"]);
    assert_eq!(plan["items"], 40, "{plan:#}");
    assert_eq!(plan["accounts"].as_array().expect("accounts").len(), 4);
    assert_eq!(plan["refused"], Value::Null, "{plan:#}");
    // A cap below the total refuses the batch before anything runs.
    let err = live.fails(
        &[
            "batch",
            "run",
            "payouts.jsonl",
            "--max-total",
            "ST=0.01",
            "--yes",
        ],
        3,
    );
    // The library's words, and the CLI's flag in the hint.
    assert!(err.contains("above its maximum total 0.01 ST"), "{err}");
    assert!(err.contains("hint: `--max-total TOKEN=AMOUNT`"), "{err}");

    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args([
        "--json",
        "batch",
        "run",
        "payouts.jsonl",
        "--yes",
    ]);
    let out = incomplete(&live, c);
    assert_eq!(counter.finish(), 4, "each key is unlocked once");
    let (results, summary) = parse_results(&out.stdout);
    assert_eq!(results.len(), 40);
    assert_eq!(summary["completed"], 39, "{summary:#}");
    // Refused before it signed: `unsigned`, as `batch status` says, not `failed`.
    assert_eq!(summary["failed"], 0, "{summary:#}");
    assert_eq!(summary["unsigned"], 1, "{summary:#}");
    let refused = results
        .iter()
        .find(|r| r["status"] == "unsigned")
        .expect("one unsigned item");
    assert_eq!(refused["id"], "item-20", "{refused:#}");
    let why = refused["error"].as_str().unwrap_or_default();
    assert!(why.contains("_amount"), "refused for its amount: {why}");
    assert!(refused["txHash"].is_null(), "the hostile item never signed");
    let batch_id = summary["batchId"].as_str().expect("batch id").to_owned();

    // Nothing of item 20 is on chain; every other item exactly once.
    let mut done = items.clone();
    done.remove(20);
    assert_each_item_redeemed_once(&live, &payers, &done);

    // With the platform honest again, resume runs the refused item only: one key.
    live.sb.state.set_hostile(None);
    let status = live.ok(&["batch", "status", &batch_id]);
    assert_eq!(
        status["items"][20]["state"], "unsigned",
        "{:#}",
        status["items"][20]
    );
    // Counted as the run counted it: not failed, open (a resume runs it).
    assert_eq!(
        (&status["completed"], &status["failed"], &status["open"]),
        (&json!(39), &json!(0), &json!(1)),
        "{status:#}"
    );
    let listed = live.ok(&["batch", "status"]);
    let listed = listed
        .as_array()
        .and_then(|l| l.iter().find(|b| b["batchId"] == batch_id.as_str()))
        .expect("the batch is listed");
    assert_eq!(listed["open"], 1, "{listed:#}");
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args([
        "--json",
        "batch",
        "resume",
        &batch_id[..8],
        "--yes",
    ]);
    let out = live.run_ok(c);
    assert_eq!(
        counter.finish(),
        1,
        "only the refused item's key is unlocked"
    );
    let (results, summary) = parse_results(&out.stdout);
    assert_eq!(summary["completed"], 40, "{summary:#}");
    let earlier = results.iter().filter(|r| r["earlier"] == true).count();
    assert_eq!(earlier, 39, "finished items are reported, not run");
    assert_eq!(summary["ran"], 1, "the rate is of what ran: {summary:#}");
    assert_each_item_redeemed_once(&live, &payers, &items);
}

/// A tiny deterministic generator for the kill moments (the seed is printed).
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

#[test]
fn a_batch_killed_at_random_moments_is_finished_by_resume_exactly_once() {
    let mut live = Live::new("batch_crash");
    let payers = payers(&mut live, 3);
    let (text, items) = redeem_items(&payers, 10);
    live.dir.write("payouts.jsonl", &text);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64);
    let mut moments = Moments(seed);

    let spawn = |args: &[&str]| {
        let mut c = live.cmd();
        c.args(args);
        c.cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bridgectl")
    };
    // 1. Killed between sign and submit: the submission is held at the sandbox (after
    //    the signed bytes were journaled), and the process dies there.
    live.sb.hold("submit");
    let skip = live.sb.state.request_log().len();
    let mut child = spawn(&["batch", "run", "payouts.jsonl", "--yes"]);
    live.sb.wait_for_request(skip, SUBMIT);
    child.kill().expect("kill");
    child.wait().expect("reap");
    live.sb.clear("submit");
    let batches = live.ok(&["batch", "status"]);
    let batch_id = batches[0]["batchId"].as_str().expect("batch id").to_owned();
    let states = |live: &Live| -> Vec<String> {
        live.ok(&["batch", "status", &batch_id])["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["state"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let after_first = states(&live);
    assert!(
        after_first.iter().any(|s| s == "signed"),
        "killed between sign and submit: {after_first:?}"
    );

    // 2. Resumed and killed again at random moments: after a random number of further
    //    signatures (read from the journal as the run goes) plus a random few ms, so
    //    the kills land while items are being signed, sent and awaited.
    let signed = |live: &Live| {
        live.journal_rows()
            .iter()
            .filter(|(_, _, tx)| tx.is_some())
            .count()
    };
    let mut history = Vec::new();
    for _ in 0..5 {
        let target = signed(&live) + 1 + moments.next_ms(4) as usize;
        let mut child = spawn(&["batch", "resume", &batch_id, "--yes"]);
        while signed(&live) < target && child.try_wait().expect("try_wait").is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(moments.next_ms(40)));
        let _ = child.kill();
        child.wait().expect("reap");
        history.push(states(&live));
    }
    // The kills landed mid-run (the test proves nothing about crashes otherwise).
    let mid_run = history
        .iter()
        .filter(|h| h.iter().any(|s| s != "completed"))
        .count();
    assert!(
        mid_run >= 3,
        "seed {seed}: kills after the end: {history:?}"
    );

    // 3. Resumed to the end.
    let mut c = live.cmd();
    c.args(["--json", "batch", "resume", &batch_id, "--yes"]);
    let out = live.run_ok(c);
    let (results, summary) = parse_results(&out.stdout);
    assert_eq!(results.len(), items.len());
    assert_eq!(summary["completed"], items.len(), "{summary:#}");
    let end = states(&live);
    assert!(
        end.iter().all(|s| s == "completed"),
        "seed {seed}: every item completed: {end:?} (after each kill: {history:?})"
    );
    // The chain, not the journal, says each item was redeemed exactly once.
    assert_each_item_redeemed_once(&live, &payers, &items);
}

#[test]
fn a_csv_batch_mixes_transfers_a_swap_and_a_redeem_and_bad_input_is_refused_by_line() {
    // Its own account on the shared sandbox: no fault or hostile mode here.
    let live = Live::shared("batch_csv");
    let to = PrivateKeySigner::random().address();
    live.dir.write(
        "mixed.csv",
        format!(
            "op,from,to,token,amount,id\n\
             transfer,dev,{to},st,1.5,t-st\n\
             transfer,dev,{to},mt,2,t-mt\n\
             swap,dev,,,3,s1\n\
             redeem,dev,,,0.5,r1\n"
        ),
    );
    let mut c = live.cmd();
    c.args(["--json", "batch", "run", "mixed.csv", "--yes"]);
    let out = live.run_ok(c);
    let (results, summary) = parse_results(&out.stdout);
    assert_eq!(summary["completed"], 4, "{results:#?}");
    // Text for people: a resume of a finished batch reports, runs nothing, asks nothing.
    let id = summary["batchId"].as_str().expect("batch id");
    let mut c = live.cmd();
    c.cmd.env_remove("BRIDGECTL_PASSPHRASE_FILE");
    c.args(["batch", "resume", id]);
    let text = c.stdout();
    assert!(text.contains("completed t-st 0x"), "{text}");
    assert!(
        text.contains(": 4 completed, 0 failed, 0 unsigned, 0 pending of 4")
            && text.contains("(none ran in this process: each had ended, or been sent, before)"),
        "{text}"
    );
    let mut c = live.cmd();
    c.args(["batch", "status", &id[..6]]);
    let text = c.stdout();
    assert!(text.contains("4 completed, 0 failed, 0 open"), "{text}");
    assert!(text.contains("r1") && text.contains("redeem"), "{text}");
    let one = U256::from(10u64).pow(U256::from(17u64)); // 0.1 token, 18 decimals
    assert_eq!(live.balance(true, to), one * U256::from(15u64), "ST sent");
    assert_eq!(live.balance(false, to), one * U256::from(20u64), "MT sent");
    let kinds: Vec<String> = live
        .journal_rows()
        .iter()
        .map(|(tx_id, _, _)| live.ok(&["history", tx_id])["flow"]["kind"].to_string())
        .collect();
    for kind in ["\"transfer\"", "\"swap\"", "\"redeem\""] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }

    // An address that cannot cover its items: refused by the plan, nothing runs.
    live.dir
        .write("big.csv", "op,from,amount\nredeem,dev,100000\n");
    let err = live.fails(&["batch", "run", "big.csv", "--yes"], 3);
    assert!(err.contains("less than the 100000 ST asked for"), "{err}");
    // Bad input is refused (3, like any malformed input) naming its line; nothing is
    // recorded.
    live.dir
        .write("bad.csv", "op,from,amount\nredeem,dev,1\nredeem,dev\n");
    let err = live.fails(&["batch", "plan", "bad.csv"], 3);
    assert!(
        err.contains("bad.csv:3: 2 fields, the header has 3"),
        "{err}"
    );
    live.dir.write(
        "bad.jsonl",
        "{\"op\": \"redeem\", \"from\": \"dev\", \"amount\": 1.5}\n",
    );
    let err = live.fails(&["batch", "plan", "bad.jsonl"], 3);
    assert!(
        err.contains("bad.jsonl:1: field \"amount\" must be a string"),
        "{err}"
    );
    live.dir.write(
        "twice.jsonl",
        "{\"op\": \"redeem\", \"from\": \"dev\", \"amount\": \"1\", \"amount\": \"90\"}\n",
    );
    let err = live.fails(&["batch", "plan", "twice.jsonl"], 3);
    assert!(
        err.contains("twice.jsonl:1:") && err.contains("duplicate key"),
        "{err}"
    );
    live.dir
        .write("twice.csv", "op,from,amount,amount\nredeem,dev,1,90\n");
    let err = live.fails(&["batch", "plan", "twice.csv"], 3);
    assert!(err.contains("column \"amount\" is named twice"), "{err}");
    let batches = live.ok(&["batch", "status"]);
    assert_eq!(batches.as_array().map(Vec::len), Some(1), "{batches:#}");
}

#[test]
fn the_plan_lists_every_recipient_against_the_allowlist_and_a_running_batch_refuses_resume() {
    let live = Live::shared("batch_policy");
    live.node_only();
    let allowed = PrivateKeySigner::random().address();
    let stranger = PrivateKeySigner::random().address();
    live.add_to_profile(&format!(
        "\n[profiles.default.policy]\nallowed-destinations = [\"{allowed}\"]\n"
    ));
    // L2: one line in the middle goes elsewhere.
    let mut csv = "op,from,to,token,amount,id\n".to_owned();
    for n in 0..5 {
        let to = if n == 3 { stranger } else { allowed };
        csv.push_str(&format!("transfer,dev,{to},st,0.1,t{n}\n"));
    }
    live.dir.write("payouts.csv", &csv);
    let mut c = live.cmd();
    c.args(["--json", "batch", "plan", "payouts.csv"]);
    let out = c.output();
    assert_eq!(out.status.code(), Some(3), "the plan refuses it");
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan json");
    let recipients = plan["recipients"].as_array().expect("recipients");
    let of = |a: Address| {
        recipients
            .iter()
            .find(|r| r["address"] == json!(a.to_checksum(None)))
            .unwrap_or_else(|| panic!("{a} not in {plan:#}"))
    };
    assert_eq!(of(allowed)["items"], 4, "{plan:#}");
    assert_eq!(of(allowed)["amount"], "400000000000000000");
    assert_eq!(of(allowed)["amountTokens"], "0.4");
    assert_eq!(of(allowed)["allowed"], true);
    assert_eq!(of(stranger)["items"], 1);
    assert_eq!(of(stranger)["allowed"], false);
    let refused = plan["refused"].as_str().expect("refused");
    assert!(refused.contains("one of allowed-destinations"), "{refused}");
    // The text names the line's recipient beside the others.
    let mut c = live.cmd();
    c.args(["batch", "plan", "payouts.csv"]);
    let out = c.output();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("NOT ALLOWED"), "{text}");
    // Gas in ETH, as the signing summary shows a fee, the wei beside it.
    let gas = text
        .lines()
        .find(|l| l.trim_start().starts_with("gas on chain"))
        .unwrap_or_else(|| panic!("no gas line: {text}"));
    let eth_then_wei = |s: &str| {
        let (eth, rest) = s.split_once(" ETH (").unwrap_or_default();
        !eth.is_empty()
            && eth
                .rsplit(' ')
                .next()
                .is_some_and(|n| n.contains('.') || n.parse::<u64>().is_ok())
            && rest
                .split(' ')
                .next()
                .is_some_and(|w| w.parse::<u128>().is_ok())
    };
    let (need, held) = gas.split_once(" of ").expect("need of held");
    assert!(eth_then_wei(need) && need.contains(" gas at "), "{gas}");
    assert!(eth_then_wei(held) && held.ends_with(" wei) held"), "{gas}");
    // The run refuses the batch before any key is unlocked.
    refused_unread(&live, &["run", "payouts.csv", "--yes"]);

    // A batch that runs holds its lock: a resume meanwhile refuses before any unlock.
    live.dir.write(
        "ok.csv",
        format!("op,from,to,token,amount,id\ntransfer,dev,{allowed},st,0.1,a\n"),
    );
    let mut c = live.cmd();
    c.args(["--json", "batch", "run", "ok.csv", "--yes"]);
    let out = live.run_ok(c);
    let (_, summary) = parse_results(&out.stdout);
    let id = summary["batchId"].as_str().expect("batch id").to_owned();
    let lock_path = live
        .dir
        .join("journal.batch-locks")
        .join(format!("{id}.lock"));
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(&lock_path)
        .expect("the run left its lock file");
    held.try_lock()
        .expect("the run released its lock when it ended");
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .args(["batch", "resume", &id, "--yes"]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "{err}");
    assert!(err.contains("is running in another process"), "{err}");
    assert_eq!(counter.finish(), 0);
    drop(held);
    let mut c = live.cmd();
    c.args(["batch", "resume", &id]);
    c.stdout();
}

/// A batch of a transfer, a swap and a redeem from one key, stopped in the window
/// between each item's signing-log entry and its journal record (the failpoint
/// `signed-not-journaled`, debug builds): the first run stops at item 0, each resume
/// signs the stopped item again (the same bytes: the signing log records it once) and
/// stops at the next, the last resume finishes. Each item's transaction is the one the
/// signing log recorded, and each chain moved by exactly its items. Without the batch
/// signing a stopped item's journaled transaction again (`Plan::SignAgain`), a resume
/// builds another transaction for the nonce and the signing log refuses it.
#[test]
fn a_batch_stopped_after_each_signature_is_finished_by_resume_with_the_logged_bytes() {
    // Its own sandbox: blocks are mined between the runs.
    let live = Live::new("batch_windows");
    let to = PrivateKeySigner::random().address();
    live.dir.write(
        "windows.csv",
        format!("op,from,to,token,amount,id\ntransfer,dev,{to},mt,1,t\nswap,dev,,,1,s\nredeem,dev,,,0.5,r\n"),
    );
    let (main0, side0) = (live.nonce(false, live.dev), live.nonce(true, live.dev));
    let run = |args: &[&str], failpoint: Option<&str>| {
        let mut c = live.cmd();
        c.args(args);
        if let Some(f) = failpoint {
            c.env("BRIDGECTL_FAILPOINT", f);
        }
        c.output()
    };
    let aborted = |out: &std::process::Output, what: &str| {
        crate::util::assert_aborted(out, what);
        // Empty blocks lower the base fee: a transaction built or fetched again now has
        // another gas price, so it is another transaction at the stopped nonce.
        for side in [false, true] {
            for _ in 0..3 {
                block_on(live.sb.node(side).call("evm_mine", json!([]))).expect("evm_mine");
            }
        }
    };
    let out = run(
        &["batch", "run", "windows.csv", "--yes"],
        Some("signed-not-journaled"),
    );
    aborted(&out, "run");
    let batch_id = live.ok(&["batch", "status"])[0]["batchId"]
        .as_str()
        .expect("batch id")
        .to_owned();
    for n in 1..=2 {
        let out = run(
            &["batch", "resume", &batch_id, "--yes"],
            Some("signed-not-journaled:2"),
        );
        aborted(&out, &format!("resume {n}"));
    }
    let mut c = live.cmd();
    c.args(["--json", "batch", "resume", &batch_id, "--yes"]);
    let (results, summary) = parse_results(&live.run_ok(c).stdout);
    assert_eq!(summary["completed"], 3, "{results:#?}");
    let entries = live.ok(&["log", "show"]);
    let logged: Vec<&str> = entries
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["entry"]["txHash"].as_str().expect("txHash"))
        .collect();
    assert_eq!(logged.len(), 3, "one signature per item: {entries:#}");
    let status = live.ok(&["batch", "status", &batch_id]);
    for item in status["items"].as_array().expect("items") {
        let hash = item["txHash"].as_str().expect("txHash");
        assert!(logged.contains(&hash), "{item:#} not in {logged:?}");
    }
    assert_eq!(live.nonce(false, live.dev), main0 + 2, "transfer and swap");
    assert_eq!(live.nonce(true, live.dev), side0 + 1, "redeem");
    let one = U256::from(10u64).pow(U256::from(18u64));
    assert_eq!(live.balance(false, to), one, "MT sent once");
}

/// Runs `batch ARGS` with a counting passphrase FIFO as the only source; asserts exit 3
/// (refused) and that no passphrase was read; returns stderr.
fn refused_unread(live: &Live, args: &[&str]) -> String {
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .args(["batch"])
        .args(args);
    let out = c.output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "batch {args:?}: {err}");
    assert_eq!(
        counter.finish(),
        0,
        "batch {args:?} read a passphrase: {err}"
    );
    err
}

/// A spending limit is checked for the whole batch before any key is unlocked, as the
/// run's verifier counts it: from the signing log, plus the batch's earlier items as if
/// signed. With 2.5 ST a day, three 1 ST redeems are refused by `batch plan` and by
/// `batch run` with no passphrase read and nothing recorded; two run; then one more is
/// refused, the log holding the two.
#[test]
fn a_batch_over_a_daily_limit_is_refused_by_plan_and_run_before_any_unlock() {
    let live = Live::shared("batch_limit");
    live.add_to_profile(&format!(
        "\n[profiles.default.policy.limits]\n{} = {{ per = \"24h\", max = \"2.5\" }}\n",
        live.sb.info.side.symbol.to_lowercase()
    ));
    live.dir.write(
        "three.csv",
        "op,from,amount,id\nredeem,dev,1,a\nredeem,dev,1,b\nredeem,dev,1,c\n",
    );
    let side0 = live.nonce(true, live.dev);
    let err = refused_unread(&live, &["plan", "three.csv"]);
    let dev = live.dev.to_string();
    assert!(
        err.contains(&format!("item \"c\" from {dev}")) && err.contains("spending limit 2.5"),
        "{err}"
    );
    assert!(
        err.contains("earlier items"),
        "the batch's own items count: {err}"
    );
    let err = refused_unread(&live, &["run", "three.csv", "--yes"]);
    assert!(err.contains("spending limit 2.5"), "{err}");
    let batches = live.ok(&["batch", "status"]);
    assert_eq!(batches.as_array().map(Vec::len), Some(0), "{batches:#}");

    // Two fit; after them, the log's total refuses one more.
    live.dir.write(
        "two.csv",
        "op,from,amount,id\nredeem,dev,1,a\nredeem,dev,1,b\n",
    );
    let mut c = live.cmd();
    c.args(["--json", "batch", "run", "two.csv", "--yes"]);
    let (results, summary) = parse_results(&live.run_ok(c).stdout);
    assert_eq!(summary["completed"], 2, "{results:#?}");
    live.dir
        .write("one.csv", "op,from,amount,id\nredeem,dev,1,c\n");
    let err = refused_unread(&live, &["run", "one.csv", "--yes"]);
    assert!(
        err.contains("spending limit 2.5") && err.contains("2 ST signed already"),
        "{err}"
    );
    let entries = live.ok(&["log", "show"]);
    assert_eq!(entries.as_array().map(Vec::len), Some(2), "{entries:#}");
    assert_eq!(live.nonce(true, live.dev), side0 + 2, "two redemptions");
}

/// A sender with the tokens and no native coin for gas: `batch plan` and `batch run`
/// refuse the batch naming the account and the gas it needs, with no passphrase read.
#[test]
fn a_batch_from_a_sender_without_gas_is_refused_by_plan_and_run_before_any_unlock() {
    let mut live = Live::shared("batch_gas");
    live.node_only();
    let poor = PrivateKeySigner::random();
    let key = hex::encode(poor.to_bytes());
    live.secrets.add("the gasless account's key", &key);
    live.import_key(&key, "poor");
    let mut c = live.cmd();
    c.args([
        "--json",
        "transfer",
        "--token",
        "st",
        "--from",
        "dev",
        "--to",
        &poor.address().to_string(),
        "--amount",
        "5",
        "--yes",
    ]);
    live.run_ok(c);
    live.dir.write(
        "poor.csv",
        "op,from,to,token,amount,id\nredeem,poor,,,1,r\ntransfer,dev,poor,st,1,t\n",
    );
    let mut c = live.cmd();
    c.args(["--json", "batch", "plan", "poor.csv"]);
    let out = c.output();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan json");
    let account = plan["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .find(|a| a["label"] == "poor")
        .unwrap_or_else(|| panic!("poor in {plan:#}"));
    assert_eq!(account["tokens"][0]["covered"], true, "{account:#}");
    // Amounts in base units, as every JSON amount; token units beside them.
    let st = U256::from(10).pow(U256::from(live.sb.info.side.decimals));
    let tokens = &account["tokens"][0];
    assert_eq!(tokens["amount"], st.to_string(), "{account:#}");
    assert_eq!(tokens["amountTokens"], "1", "{account:#}");
    assert_eq!(
        tokens["balance"],
        (st * U256::from(5)).to_string(),
        "{account:#}"
    );
    assert_eq!(tokens["balanceTokens"], "5", "{account:#}");
    assert_eq!(account["gas"][0]["balance"], "0", "{account:#}");
    assert_eq!(account["gas"][0]["covered"], false, "{account:#}");
    let refused = plan["refused"].as_str().expect("refused");
    let who = poor.address().to_string();
    assert!(
        refused.contains(&format!("{who} has 0 wei for gas")),
        "{refused}"
    );
    for args in [&["plan", "poor.csv"][..], &["run", "poor.csv", "--yes"]] {
        let err = refused_unread(&live, args);
        assert!(err.contains(&format!("{who} has 0 wei for gas")), "{err}");
    }
    assert_eq!(live.nonce(true, poor.address()), 0, "nothing sent");
}

/// Two keys with passphrases of their own and one with the command's: `batch run` with
/// `--passphrase-file-for` (by label and by address) runs unattended, reads each key's
/// file once and the command's source once (for the third key), and every item
/// completes.
#[test]
fn a_batch_of_keys_with_different_passphrases_runs_unattended() {
    let mut live = Live::shared("batch_passphrases");
    let mut files = Vec::new();
    let mut owners = Vec::new();
    for name in ["alice", "bob"] {
        let account = live.sb.new_account();
        let key = account.private_key.expose_secret().to_owned();
        let passphrase = format!("{name}-{}", uuid::Uuid::new_v4().simple());
        live.secrets
            .add("a payer's private key", &key)
            .add("a payer's passphrase", &passphrase);
        let file = format!("{name}.passphrase");
        live.dir.write(&file, format!("{passphrase}\n"));
        live.import_key_with(&key, name, &live.dir.join(&file));
        files.push(passphrase);
        owners.push(account.address);
    }
    let to = PrivateKeySigner::random().address();
    live.dir.write(
        "payouts.csv",
        format!(
            "op,from,to,token,amount,id\n\
             redeem,alice,,,0.5,a1\n\
             transfer,bob,{to},st,0.25,b1\n\
             redeem,bob,,,0.5,b2\n\
             transfer,dev,{to},mt,1,d1\n\
             transfer,alice,{to},mt,2,a2\n"
        ),
    );
    let alice = CountingPassphrase::new(&live.dir, &files[0]);
    let bob = CountingPassphrase::new(&live.dir, &files[1]);
    let default = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &default.path).args([
        "--json",
        "batch",
        "run",
        "payouts.csv",
        "--yes",
        "--passphrase-file-for",
        &format!("alice={}", alice.path.display()),
        "--passphrase-file-for",
        &format!("{}={}", owners[1], bob.path.display()),
    ]);
    let out = live.run_ok(c);
    assert_eq!(alice.finish(), 1, "alice's file is read once");
    assert_eq!(bob.finish(), 1, "bob's file is read once");
    assert_eq!(default.finish(), 1, "the command's source, for dev only");
    let (results, summary) = parse_results(&out.stdout);
    assert_eq!(summary["completed"], 5, "{results:#?}");
    let one = U256::from(10u64).pow(U256::from(17u64)); // 0.1 token, 18 decimals
    assert_eq!(live.balance(false, to), one * U256::from(30u64), "MT sent");
    assert_eq!(
        live.balance(true, to),
        one * U256::from(25u64) / U256::from(10u64),
        "ST sent"
    );
}

/// A batch whose last item waits on a slow relayer says, without a terminal, that it is
/// still going, as a single flow does.
#[test]
fn a_batch_waiting_on_a_slow_relayer_says_it_is_still_going() {
    let live = Live::new("batch_slow_relayer");
    live.dir.write(
        "one.csv",
        "op,from,to,token,amount,id\nredeem,dev,,,0.5,r1\n",
    );
    live.sb.delay("redeems", 6_000);
    let mut c = live.cmd();
    c.args(["batch", "run", "one.csv", "--yes", "--timeout", "60"]);
    let out = live.run_ok(c);
    live.sb.clear("redeems");
    let err = String::from_utf8_lossy(&out.stderr);
    // Said at the first report, 5 s after the last result (6 on a loaded machine).
    let said = err.lines().any(|l| {
        l.strip_prefix("» waiting for 1 of 1 items: ")
            .and_then(|rest| rest.strip_suffix(" s since the last result (each waits up to 60 s)"))
            .and_then(|secs| secs.parse::<u64>().ok())
            .is_some_and(|secs| (5..=6).contains(&secs))
    });
    assert!(said, "{err}");
}

/// `n` redeems from `from`, ids `{prefix}-1`..: `(file text, amount of each in base
/// units)`, each of its own amount (so the chain's logs say which item a redemption was).
fn payout_file(from: Address, prefix: &str, n: u64) -> (String, Vec<(Address, U256)>) {
    let mut text = String::new();
    let mut items = Vec::new();
    for k in 1..=n {
        text.push_str(&format!(
            "{}\n",
            json!({"op": "redeem", "from": from, "amount": format!("0.002{k:03}"),
                   "id": format!("{prefix}-{k}")})
        ));
        items.push((
            from,
            U256::from(2_000_000_000_000_000u64 + k * 1_000_000_000_000),
        ));
    }
    (text, items)
}

/// One item id, one payout. `batch run payouts.jsonl` of three redeems (ids
/// `payout-1..3`) completes; the same command again runs none of them (it finds the
/// batch that holds them and reports it: nothing signed, no passphrase read), and the
/// side chain's `Redeem` logs of the sender are the three items, once each. A file that
/// repeats one of those ids beside a new one is refused before any passphrase is read,
/// naming the batch; `--id-suffix` pays the items again on purpose, as new ids. Two runs
/// of one file at once record one batch, and each item is redeemed once.
#[test]
fn a_payout_file_run_twice_or_twice_at_once_pays_each_item_once() {
    let mut live = Live::shared("batch_once");
    let payers = payers(&mut live, 2);
    let (text, items) = payout_file(payers[0].0, "payout", 3);
    live.dir.write("payouts.jsonl", &text);
    let run = |live: &Live, file: &str, extra: &[&str], reads: usize| {
        let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
        let mut c = live.cmd();
        c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
            .args(["--json", "batch", "run", file, "--yes"])
            .args(extra);
        let out = live.run_ok(c);
        assert_eq!(counter.finish(), reads, "passphrase reads");
        parse_results(&out.stdout)
    };
    let (_, first) = run(&live, "payouts.jsonl", &[], 1);
    assert_eq!(first["completed"], 3, "{first:#}");
    let batch_id = first["batchId"].as_str().expect("batch id").to_owned();
    assert_each_item_redeemed_once(&live, &payers[..1], &items);

    // Again: the batch that holds them is reported, nothing runs.
    let (again, summary) = run(&live, "payouts.jsonl", &[], 0);
    assert_eq!(summary["batchId"], batch_id.as_str(), "{summary:#}");
    assert_eq!(
        (&summary["ran"], &summary["completed"]),
        (&json!(0), &json!(3)),
        "{summary:#}"
    );
    assert!(again.iter().all(|r| r["earlier"] == true), "{again:#?}");
    assert_each_item_redeemed_once(&live, &payers[..1], &items);

    // One id run before beside a new one: refused, naming the batch that holds it.
    let (more, _) = payout_file(payers[0].0, "payout", 4);
    live.dir.write(
        "more.jsonl",
        more.lines().skip(2).collect::<Vec<_>>().join("\n"),
    );
    for args in [&["run", "more.jsonl", "--yes"][..], &["plan", "more.jsonl"]] {
        let err = refused_unread(&live, args);
        assert!(
            err.contains("\"payout-3\" is item 2 of batch") && err.contains(&batch_id),
            "{err}"
        );
        assert!(
            err.contains("--id-suffix"),
            "the hint names the flag: {err}"
        );
    }
    let batches = live.ok(&["batch", "status"]);
    assert_eq!(batches.as_array().map(Vec::len), Some(1), "{batches:#}");

    // On purpose, as new ids: paid again.
    let (_, suffixed) = run(&live, "payouts.jsonl", &["--id-suffix=-again"], 1);
    assert_eq!(
        (&suffixed["ran"], &suffixed["completed"]),
        (&json!(3), &json!(3)),
        "{suffixed:#}"
    );
    let twice: Vec<_> = items.iter().chain(&items).copied().collect();
    assert_each_item_redeemed_once(&live, &payers[..1], &twice);

    // Two runs of one file at once: one batch; the other run follows it or is told it
    // is running (exit 11), and the chain has each item once.
    let (race, race_items) = payout_file(payers[1].0, "race", 3);
    live.dir.write("race.jsonl", &race);
    let children: Vec<_> = (0..2)
        .map(|_| {
            let mut c = live.cmd();
            c.args(["--json", "batch", "run", "race.jsonl", "--yes"]);
            c.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            crate::util::KillOnDrop::spawn(&mut c.cmd)
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(crate::util::KillOnDrop::wait_with_output)
        .collect();
    let mut codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    codes.sort();
    for o in &outs {
        live.check_secrets(o);
    }
    assert!(
        codes == [Some(0), Some(0)] || codes == [Some(0), Some(11)],
        "{codes:?}: {}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
    let batches = live.ok(&["batch", "status"]);
    assert_eq!(batches.as_array().map(Vec::len), Some(3), "{batches:#}");
    assert_each_item_redeemed_once(&live, &payers[1..], &race_items);
}
