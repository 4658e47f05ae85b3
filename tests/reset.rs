//! A chain reset is not a dead end: a sandbox restarted under the same journal (new
//! anvils, the same chain ids, a new block 0) is named as a reset, not as a nonce
//! conflict; `journal reset-chain` retires the old chain's flows and records the reset in
//! the signing log, signed by the key; then the walkthrough's swap and redeem run again.

use serde_json::Value;

use crate::live::Live;

#[test]
fn a_restarted_sandbox_is_named_a_reset_and_reset_chain_lets_the_walkthrough_run_again() {
    let mut live = Live::new("chain_reset");
    let (main, side) = (live.sb.info.main.chain_id, live.sb.info.side.chain_id);
    let swap = ["swap", "--from", "dev", "--amount", "2", "--yes", "--wait"];
    let redeem = ["redeem", "--from", "dev", "--amount", "1", "--yes"];
    let nonces = (live.nonce(false, live.dev), live.nonce(true, live.dev));
    assert!(live.ok(&swap)["stAfter"].is_string());
    assert_eq!(live.ok(&redeem)["status"], "completed");
    let before: Vec<Value> = live.ok(&["history"]).as_array().expect("flows").clone();
    assert!(
        before.iter().all(|f| f["state"] == "completed"),
        "{before:#?}"
    );

    live.restart_sandbox();
    // The same journal, a new chain: named as such, nothing signed.
    for (args, chain) in [(&redeem[..], side), (&swap[..], main)] {
        let err = live.fails(args, 3);
        assert!(
            err.contains(&format!(
                "chain {chain} was reset since its flows were journaled"
            )) && err.contains(&format!("`bridgectl journal reset-chain {chain}`")),
            "{err}"
        );
    }
    // Not a reset: refused, nothing changed. The side chain's second witness is the
    // platform (no record of its redeem); the main chain's, where no redemption is
    // journaled, a second node of the chain.
    let witness = |chain: &str| format!("{}/sandbox/v1/chains/{chain}/rpc", live.sb.info.base_url);
    let reset = |chain: u64| {
        let name = if chain == main { "main" } else { "side" };
        let chain = chain.to_string();
        let mut args = vec!["journal", "reset-chain", &chain, "--yes"];
        let second = witness(name);
        if name == "main" {
            args.extend(["--witness", &second]);
        }
        let out = live.ok(&args);
        crate::json::assert_schema("journal-reset-chain", &out);
        out
    };
    let err = live.fails(&["journal", "reset-chain", &main.to_string(), "--yes"], 3);
    assert!(err.contains("only the node says so"), "{err}");
    let side_reset = reset(side);
    assert_eq!(
        side_reset["keys"][0],
        live.dev.to_string(),
        "{side_reset:#}"
    );
    assert_eq!(side_reset["retired"].as_array().map(Vec::len), Some(1));
    let err = live.fails(&["journal", "reset-chain", &side.to_string(), "--yes"], 3);
    assert!(err.contains("was not reset"), "{err}");
    assert_eq!(reset(main)["retired"].as_array().map(Vec::len), Some(1));

    // The walkthrough again, at the same nonces as the first time on the old chains: the
    // key's log lets them be signed again on the new ones.
    assert_eq!(
        (live.nonce(false, live.dev), live.nonce(true, live.dev)),
        nonces
    );
    assert!(live.ok(&swap)["stAfter"].is_string());
    assert_eq!(live.ok(&redeem)["status"], "completed");
    let flows: Vec<Value> = live.ok(&["history"]).as_array().expect("flows").clone();
    let states: Vec<&str> = flows.iter().filter_map(|f| f["state"].as_str()).collect();
    // Newest first: the new chain's swap and redeem, the two refused at the reset (failed
    // before anything was signed), the old chain's two.
    assert_eq!(
        states,
        [
            "completed",
            "completed",
            "failed",
            "failed",
            "retired",
            "retired"
        ],
        "{flows:#?}"
    );
    assert!(flows[2..4].iter().all(|f| f["signedTx"].is_null()));
    // A retired flow is never sent again; how it stood on the old chain is on record.
    let old = before[0]["txId"].as_str().expect("txId");
    let steps = live.ok(&["history", old])["steps"].clone();
    let reset_step = steps
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == "chain-reset"))
        .unwrap_or_else(|| panic!("no chain-reset step: {steps:#}"));
    assert_eq!(
        reset_step["detail"]["stateBefore"], "completed",
        "{reset_step:#}"
    );
    let err = live.fails(&["resume", old], 1);
    assert!(err.contains("its chain was reset"), "{err}");
    // The log holds: two resets among the four signatures, each signed by the key.
    let entries = live.ok(&["log", "show"]);
    let resets = entries
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| !e["entry"]["chainReset"].is_null())
        .count();
    assert_eq!(resets, 2, "{entries:#}");
    assert_eq!(live.ok(&["log", "verify"])["ok"], true);
    // The text names each reset as one (not as a call bridgectl does not know).
    let mut c = live.cmd();
    c.args(["log", "show"]);
    let text = String::from_utf8_lossy(&live.run_ok(c).stdout).into_owned();
    assert!(!text.contains("(unknown call)"), "{text}");
    for chain in [live.sb.info.main.chain_id, live.sb.info.side.chain_id] {
        let said = format!("chain {chain} reset: its block 0 is now 0x");
        assert_eq!(text.matches(&said).count(), 1, "{said}: {text}");
    }
}

/// A fresh journal knows nothing of a chain; the keystore's signing log does. A redeem
/// signed and withheld (never sent): `reset-chain` from a fresh journal on the unchanged
/// chain is refused, because the log recorded the chain's block 0 with that signature
/// (no other witness would: the node does not know the withheld transaction, and the
/// platform's and the node's nonce counts agree). A second redeem, from that fresh
/// journal, at the withheld nonce is refused before the passphrase is read.
#[test]
fn a_fresh_journal_cannot_reset_a_chain_the_signing_log_knows() {
    let live = Live::shared("reset_fresh_journal");
    let side = live.sb.info.side.chain_id.to_string();
    let mut c = live.cmd();
    c.args(["redeem", "--from", "dev", "--amount", "1", "--yes"])
        .env("BRIDGECTL_FAILPOINT", "journaled-not-sent");
    crate::util::assert_aborted(&c.output(), "redeem");
    let fresh = live.dir.join("fresh.sqlite3");
    let fresh = fresh.to_str().expect("utf8");
    let err = live.fails(
        &["journal", "reset-chain", &side, "--yes", "--journal", fresh],
        3,
    );
    assert!(
        err.contains(&format!("chain {side} was not reset"))
            && err.contains("the one the signing log recorded"),
        "{err}"
    );
    let counted = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counted.path)
        .env("BRIDGECTL_JOURNAL", fresh)
        .args(["redeem", "--from", "dev", "--amount", "2", "--yes"]);
    let err = c.fails_with(3);
    assert!(err.contains("signed") && err.contains("nonce"), "{err}");
    assert_eq!(counted.finish(), 0, "the passphrase was read");
}

/// A node that lies about block 0 does not free nonces while a transaction signed for
/// the chain is still in its pool: the reset is refused, naming the transaction.
#[test]
fn a_node_lying_about_block_zero_is_refused_while_it_holds_a_signed_transaction() {
    let live = Live::new("reset_lying_node");
    let side = live.sb.info.side.chain_id;
    live.sb.set_mining(true, false);
    let err = live.fails(
        &[
            "redeem",
            "--from",
            "dev",
            "--amount",
            "1",
            "--yes",
            "--timeout",
            "2",
        ],
        8,
    );
    assert!(err.contains("not mined"), "{err}");
    let hash = live.ok(&["history"])[0]["txHash"]
        .as_str()
        .expect("hash")
        .to_owned();
    live.node_taps[1].lie_about_block_zero(&format!("0x{}", "77".repeat(32)));
    let err = live.fails(&["journal", "reset-chain", &side.to_string(), "--yes"], 3);
    assert!(
        err.contains(&format!("chain {side} was not reset"))
            && err.contains(&format!("has transaction {hash}"))
            && err.contains("pending in the node's pool"),
        "{err}"
    );
    assert_eq!(
        live.ok(&["history"])[0]["state"],
        "submitted",
        "nothing retired"
    );
}

/// A node that lies about block 0 and denies every transaction of the keystore (mined
/// ones too), while passing the nonce counts through, is one witness: alone it frees
/// nothing. On the side chain the platform still has the redemption journaled there;
/// on the main chain, where no redemption is journaled, nothing but a second node would
/// do. Nothing is retired, and the keys sign nothing at the nonces they hold.
#[test]
fn a_node_lying_about_the_whole_chain_is_one_witness_and_frees_nothing() {
    let live = Live::new("reset_lying_chain");
    let (main, side) = (live.sb.info.main.chain_id, live.sb.info.side.chain_id);
    live.ok(&["swap", "--from", "dev", "--amount", "1", "--yes", "--wait"]);
    assert_eq!(
        live.ok(&["redeem", "--from", "dev", "--amount", "1", "--yes"])["state"],
        "completed"
    );
    for tap in &live.node_taps {
        tap.lie_about_the_chain(&format!("0x{}", "77".repeat(32)));
    }
    let err = live.fails(&["journal", "reset-chain", &side.to_string(), "--yes"], 3);
    assert!(
        err.contains(&format!("chain {side} was not reset"))
            && err.contains("the platform still has the redemption of flow"),
        "{err}"
    );
    let err = live.fails(&["journal", "reset-chain", &main.to_string(), "--yes"], 3);
    assert!(
        err.contains(&format!("chain {main} was not reset"))
            && err.contains("only the node says so"),
        "{err}"
    );
    let history = live.ok(&["history"]);
    assert!(
        history
            .as_array()
            .expect("flows")
            .iter()
            .all(|f| f["state"] == "completed"),
        "nothing retired: {history:#}"
    );
}
