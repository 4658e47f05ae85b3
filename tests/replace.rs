//! A stuck transaction is not a dead end: against a sandbox whose side chain holds its
//! blocks (anvil's automine off), a redeem's transaction sits unmined; `replace` signs
//! the call again at its nonce at a higher gas price and `cancel` uses the nonce up with
//! a 0-value self-transfer. Checked on chain from outside: one transaction per nonce is
//! mined, the one the flow ends by; the signing log holds both signatures, and the
//! spending limit counts both.

use alloy_primitives::B256;
use serde_json::{Value, json};

use crate::live::{Live, SUBMIT, block_on, signed_tx_of};

/// Stops (`false`) or restarts (`true`) the side chain mining each transaction as it
/// arrives: with it stopped, a submitted transaction waits in the node's pool.
fn automine(live: &Live, on: bool) {
    live.sb.set_mining(true, on);
}

/// A redeem of `amount` ST from dev whose wait for the redemption runs out (its
/// transaction is in the pool, unmined): exit 8; returns the flow's txId and hash.
fn stuck_redeem(live: &Live, amount: &str) -> (String, String) {
    let mut c = live.cmd();
    c.args([
        "--json",
        "redeem",
        "--from",
        "dev",
        "--amount",
        amount,
        "--yes",
        "--timeout",
        "2",
    ]);
    let out = c.output();
    live.check_secrets(&out);
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flow = live.ok(&["history"])[0].clone();
    assert_eq!(flow["state"], "submitted", "{flow:#}");
    (
        flow["txId"].as_str().expect("txId").to_owned(),
        flow["txHash"].as_str().expect("txHash").to_owned(),
    )
}

/// Whether the side node knows transaction `hash` (pending or mined).
fn in_pool(live: &Live, hash: &str) -> bool {
    !block_on(
        live.sb
            .node(true)
            .call("eth_getTransactionByHash", json!([hash])),
    )
    .expect("eth_getTransactionByHash")
    .is_null()
}

/// Whether the side node has a receipt for `hash` at all (mined, reverted or not).
fn has_receipt(live: &Live, hash: &str) -> bool {
    let hash: B256 = hash.parse().expect("hash");
    block_on(live.sb.node(true).receipt(hash))
        .expect("receipt")
        .is_some()
}

/// The signing log's entries at `nonce`, as `log show --json` prints them.
fn logged_at(live: &Live, nonce: u64) -> Vec<Value> {
    let entries = live.ok(&["log", "show"]);
    entries
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["entry"]["nonce"] == nonce)
        .cloned()
        .collect()
}

#[test]
fn a_stuck_redeem_is_replaced_mined_once_and_both_signatures_count_against_the_limit() {
    let live = Live::new("replace_stuck");
    let sym = live.sb.info.side.symbol.clone();
    live.add_to_profile(&format!(
        "\n[profiles.default.policy.limits]\n{} = {{ per = \"24h\", max = \"2.5\" }}\n",
        sym.to_lowercase()
    ));
    let st0 = live.balance(true, live.dev);
    let nonce = live.nonce(true, live.dev);
    automine(&live, false);
    let (tx_id, original) = stuck_redeem(&live, "1");
    assert!(!has_receipt(&live, &original));

    // The replacement takes the original's place in the node's pool; then a block is
    // mined, and the replace, waiting for one of the flow's transactions, sees which.
    let skip = live.sb.state.request_log().len();
    let mut c = live.cmd();
    c.args(["--json", "replace", &tx_id[..8], "--bump", "20%", "--yes"]);
    let child = c.spawn_with_stdin(b"");
    let sent = signed_tx_of(&live.sb.wait_for_request(skip, SUBMIT)).expect("signedTx");
    let sent_hash = alloy_primitives::keccak256(
        alloy_primitives::hex::decode(sent.trim_start_matches("0x")).expect("hex"),
    )
    .to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !in_pool(&live, &sent_hash) {
        assert!(
            std::time::Instant::now() < deadline,
            "the replacement never reached the pool"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !in_pool(&live, &original),
        "the node kept both transactions at one nonce"
    );
    live.sb.mine(true);
    automine(&live, true);
    let out = child.wait_with_output();
    live.check_secrets(&out);
    crate::util::assert_success(&c.cmd, &out);
    // The summary says the price it replaces and the new one, and the words are
    // bridgectl's own, not a request's claim.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "what:      replace flow {tx_id} at a higher gas price"
        )) && err.contains("gas price: ")
            && err.contains(" wei (")
            && !err.contains("not checked"),
        "{err}"
    );
    let replaced = crate::util::strict_json(&String::from_utf8_lossy(&out.stdout));
    let line = err
        .lines()
        .find(|l| l.starts_with("gas price: "))
        .expect("a gas price line");
    let (old, new) = line["gas price: ".len()..]
        .split_once(" wei")
        .and_then(|(prices, _)| prices.split_once(" -> "))
        .expect("old -> new");
    assert_eq!(
        new,
        replaced["gasPrice"].as_str().expect("gasPrice"),
        "{line}"
    );
    let (old, new): (u128, u128) = (old.parse().expect("old"), new.parse().expect("new"));
    assert_eq!(new, (old * 12_000).div_ceil(10_000), "20% more: {line}");
    let new_hash = replaced["txHash"].as_str().expect("txHash").to_owned();
    assert_eq!(new_hash, sent_hash);
    assert_ne!(new_hash, original);
    assert_eq!(replaced["purpose"], "replacement", "{replaced:#}");
    assert_eq!(replaced["replaces"], original.as_str());
    assert_eq!(
        replaced["ended"]["mined"],
        new_hash.as_str(),
        "{replaced:#}"
    );
    assert_eq!(replaced["ended"]["state"], "completed");
    assert_eq!(replaced["ended"]["redemption"]["status"], "completed");

    // On chain: the nonce used once, by the replacement; the original never mined; 1 ST
    // redeemed once.
    assert!(live.mined(true, &new_hash));
    assert!(!has_receipt(&live, &original));
    assert_eq!(live.nonce(true, live.dev), nonce + 1);
    assert_eq!(
        st0 - live.balance(true, live.dev),
        alloy_primitives::U256::from(10u64).pow(alloy_primitives::U256::from(18u64))
    );
    let flow = &live.ok(&["history", &tx_id])["flow"];
    assert_eq!(flow["state"], "completed", "{flow:#}");
    assert_eq!(flow["txHash"], new_hash.as_str());

    // The signing log: both signatures at the nonce, the second naming the first.
    let at = logged_at(&live, nonce);
    assert_eq!(at.len(), 2, "{at:#?}");
    assert_eq!(at[0]["entry"]["txHash"], original.as_str());
    assert_eq!(at[1]["entry"]["txHash"], new_hash.as_str());
    assert_eq!(at[1]["entry"]["replaces"], original.as_str());
    assert_eq!(live.ok(&["log", "verify"])["ok"], true);

    // Counted as if both could be mined: 1 + 1 of 2.5 ST, so another 1 ST is refused.
    let err = live.fails(&["redeem", "--from", "dev", "--amount", "1", "--yes"], 3);
    assert!(
        err.contains(&format!(
            "spending limit 2.5 {sym} per 24h: 2 {sym} signed already in the window"
        )),
        "{err}"
    );
    // A finished flow has nothing to replace.
    let err = live.fails(&["replace", &tx_id, "--yes"], 3);
    assert!(err.contains("it is completed already"), "{err}");
}

#[test]
fn a_dropped_redeem_names_its_flow_and_its_cancel_ends_it_cancelled() {
    let live = Live::new("cancel_stuck");
    let st0 = live.balance(true, live.dev);
    let nonce = live.nonce(true, live.dev);
    automine(&live, false);
    let (tx_id, original) = stuck_redeem(&live, "1");
    // The node forgets it (evicted, under-priced, a restart): the chain's next nonce is
    // the flow's again, and the journal refuses a second transaction at it, naming the
    // flow and the ways on.
    block_on(
        live.sb
            .node(true)
            .call("anvil_dropTransaction", json!([original])),
    )
    .expect("anvil_dropTransaction");
    assert_eq!(live.nonce(true, live.dev), nonce);
    let err = live.fails(&["redeem", "--from", "dev", "--amount", "1", "--yes"], 3);
    for hint in [
        format!("nonce {nonce} of"),
        format!("is held by flow {tx_id} (submitted, transaction {original})"),
        format!("`bridgectl resume {tx_id}`"),
        format!("`bridgectl replace {tx_id}`"),
        format!("`bridgectl cancel {tx_id}`"),
    ] {
        assert!(err.contains(&hint), "{hint:?} not in {err}");
    }

    automine(&live, true);
    let cancelled = live.ok(&["cancel", &tx_id, "--yes"]);
    crate::json::assert_schema("replace", &cancelled);
    let cancel_hash = cancelled["txHash"].as_str().expect("txHash").to_owned();
    assert_eq!(cancelled["purpose"], "cancel", "{cancelled:#}");
    assert_eq!(cancelled["ended"]["state"], "cancelled", "{cancelled:#}");
    assert_eq!(cancelled["ended"]["mined"], cancel_hash.as_str());
    assert!(live.mined(true, &cancel_hash));
    assert!(!has_receipt(&live, &original));
    assert_eq!(live.nonce(true, live.dev), nonce + 1);
    assert_eq!(live.balance(true, live.dev), st0, "nothing was redeemed");
    // The cancel on chain is what it says: from dev to dev, nothing sent, no call.
    let tx = block_on(
        live.sb
            .node(true)
            .call("eth_getTransactionByHash", json!([cancel_hash])),
    )
    .expect("transaction");
    let dev = live.dev.to_string().to_lowercase();
    assert_eq!(
        tx["from"].as_str().map(str::to_lowercase),
        Some(dev.clone())
    );
    assert_eq!(tx["to"].as_str().map(str::to_lowercase), Some(dev));
    assert_eq!(tx["value"], "0x0");
    assert_eq!(tx["input"], "0x");

    let flow = &live.ok(&["history", &tx_id])["flow"];
    assert_eq!(flow["state"], "cancelled", "{flow:#}");
    let at = logged_at(&live, nonce);
    assert_eq!(at.len(), 2, "{at:#?}");
    assert_eq!(at[1]["entry"]["replaces"], original.as_str());
    // Over: resume sends nothing, and the next redeem takes the next nonce.
    let resumed = live.resume_unsigned(&tx_id);
    assert_eq!(resumed["resent"], false, "{resumed:#}");
    let out = live.ok(&["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    assert_eq!(live.nonce(true, live.dev), nonce + 2);
}

#[test]
fn batch_resume_replace_stuck_reprices_the_items_that_were_never_mined() {
    let live = Live::new("batch_replace_stuck");
    live.dir.write(
        "stuck.csv",
        "op,from,to,token,amount,id\nredeem,dev,,,1,a\nredeem,dev,,,1,b\n",
    );
    let st0 = live.balance(true, live.dev);
    let nonce = live.nonce(true, live.dev);
    automine(&live, false);
    let out = live
        .cmd()
        .args(["batch", "run", "stuck.csv", "--yes", "--timeout", "2"])
        .output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    let batch_id = live.ok(&["batch", "status"])[0]["batchId"]
        .as_str()
        .expect("batch id")
        .to_owned();
    // The hint names the way past stuck transactions.
    assert!(
        err.contains(&format!(
            "2 sent did not end in time: if their transactions are not mined, `bridgectl \
             batch resume {batch_id} --replace-stuck` signs them again"
        )),
        "{err}"
    );
    let originals: Vec<String> = live.ok(&["batch", "status", &batch_id])["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["txHash"].as_str().expect("txHash").to_owned())
        .collect();
    assert_eq!(originals.len(), 2);
    // The node loses both (evicted, under-priced): resending the same bytes would leave
    // them under-priced; --replace-stuck re-prices each at its nonce.
    for hash in &originals {
        block_on(
            live.sb
                .node(true)
                .call("anvil_dropTransaction", json!([hash])),
        )
        .expect("anvil_dropTransaction");
    }
    automine(&live, true);
    let err = live.fails(&["batch", "resume", &batch_id, "--bump", "20%"], 2);
    assert!(err.contains("--replace-stuck"), "{err}");
    let mut c = live.cmd();
    c.args(["batch", "resume", &batch_id, "--replace-stuck", "--yes"]);
    let out = live.run_ok(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "2 items, 0 completed, 0 failed, 2 signed and not finished (each signed again at \
             its nonce at a higher gas price, unless mined meanwhile), 0 not signed yet"
        ),
        "{err}"
    );
    let items = live.ok(&["batch", "status", &batch_id])["items"].clone();
    for (item, original) in items.as_array().expect("items").iter().zip(&originals) {
        assert_eq!(item["state"], "completed", "{items:#}");
        let hash = item["txHash"].as_str().expect("txHash");
        assert_ne!(hash, original, "re-priced, not resent");
        assert!(live.mined(true, hash));
        assert!(!has_receipt(&live, original), "both at one nonce mined");
    }
    assert_eq!(live.nonce(true, live.dev), nonce + 2);
    assert_eq!(
        st0 - live.balance(true, live.dev),
        alloy_primitives::U256::from(2u64)
            * alloy_primitives::U256::from(10u64).pow(18u64.try_into().expect("18"))
    );
    for n in [nonce, nonce + 1] {
        let at = logged_at(&live, n);
        assert_eq!(at.len(), 2, "{at:#?}");
        assert!(!at[1]["entry"]["replaces"].is_null());
    }
}

/// A cancel bumped from the price the operator approved is allowed above today's cap
/// (here the profile's max-gas-price, lowered after the redeem was signed): it moves
/// nothing, and the nonce would stay stuck. A replacement of the call at that price is
/// still refused by the cap.
#[test]
fn a_cancel_of_a_flow_priced_above_todays_cap_is_allowed_at_its_bump() {
    let live = Live::new("cancel_over_cap");
    automine(&live, false);
    let (tx_id, hash) = stuck_redeem(&live, "1");
    let tx = block_on(
        live.sb
            .node(true)
            .call("eth_getTransactionByHash", json!([hash])),
    )
    .expect("tx");
    let price = u128::from_str_radix(
        tx["gasPrice"]
            .as_str()
            .expect("gasPrice")
            .trim_start_matches("0x"),
        16,
    )
    .expect("hex");
    live.add_to_profile(&format!(
        "\n[profiles.default.policy]\nmax-gas-price = {}\n",
        price / 2
    ));
    let err = live.fails(&["replace", &tx_id, "--yes", "--timeout", "2"], 3);
    assert!(err.contains("gas"), "{err}");
    // Mined by hand once the cancel has taken the redeem's place in the pool.
    let mut c = live.cmd();
    c.args(["--json", "cancel", &tx_id, "--yes", "--timeout", "60"]);
    let child = c.spawn_with_stdin(b"");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while in_pool(&live, &hash) {
        assert!(
            std::time::Instant::now() < deadline,
            "the cancel never replaced the redeem"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    live.sb.mine(true);
    // Then the chain's timer again: the cancel is final two blocks deep.
    automine(&live, true);
    let cancelled = live.finished_ok(child);
    assert_eq!(cancelled["ended"]["state"], "cancelled", "{cancelled:#}");
    let paid: u128 = cancelled["gasPrice"]
        .as_str()
        .expect("gasPrice")
        .parse()
        .expect("decimal");
    assert_eq!(paid, (price * 11_250).div_ceil(10_000), "the default bump");
}

/// A cancel not mined in time names the ways on for a cancel: itself again at a higher
/// price, or more waiting; never a replacement of the call it was to end. Resumed once
/// blocks are mined again, the flow ends cancelled.
#[test]
fn a_cancel_not_mined_in_time_is_not_told_to_replace() {
    let live = Live::new("cancel_timeout");
    automine(&live, false);
    let (tx_id, original) = stuck_redeem(&live, "1");
    let err = live.fails(&["cancel", &tx_id, "--yes", "--timeout", "2"], 8);
    let hint = err
        .lines()
        .find(|l| l.starts_with("hint: "))
        .unwrap_or_else(|| panic!("a hint in {err}"));
    assert!(
        hint.contains(&format!("`bridgectl cancel {tx_id}`"))
            && hint.contains(&format!("`bridgectl resume {tx_id}`"))
            && !hint.contains("bridgectl replace"),
        "{err}"
    );
    automine(&live, true);
    live.sb.mine(true);
    let resumed = live.ok(&["resume", &tx_id]);
    assert_eq!(resumed["state"], "cancelled", "{resumed:#}");
    assert!(!has_receipt(&live, &original));
}

/// A resumed batch whose items an earlier run sent only awaits them: its rate counts
/// none of them as run here.
#[test]
fn a_resumed_batch_counts_as_run_only_what_this_process_did() {
    let live = Live::new("batch_observed");
    live.dir.write(
        "slow.csv",
        "op,from,to,token,amount,id\nredeem,dev,,,1,a\nredeem,dev,,,1,b\n",
    );
    automine(&live, false);
    let err = live.fails(&["batch", "run", "slow.csv", "--yes", "--timeout", "2"], 9);
    assert!(err.contains("--replace-stuck"), "{err}");
    let batch_id = live.ok(&["batch", "status"])[0]["batchId"]
        .as_str()
        .expect("batch id")
        .to_owned();
    automine(&live, true);
    live.sb.mine(true);
    let mut c = live.cmd();
    c.args(["batch", "resume", &batch_id]);
    let text = String::from_utf8(live.run_ok(c).stdout).expect("utf8");
    assert!(
        text.contains(": 2 completed, 0 failed, 0 unsigned, 0 pending of 2")
            && text.contains("(none ran in this process: each had ended, or been sent, before)"),
        "{text}"
    );
}
