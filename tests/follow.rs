//! Every flow is followed to its observed end, never completed on the acceptance of its
//! transaction: a swap whose wait ran out is completed by `resume` only once its own ST
//! credit is on chain (the side chain holding its blocks until then); an air-gapped redeem sent
//! with `submit` stays `submitted` until `bridgectl status` (by txId, prefix or hash) sees
//! its redemption, and `submit --wait` and `action exec --wait` wait for it.

use std::time::{Duration, Instant};

use alloy_primitives::U256;
use serde_json::Value;

use crate::flow::units;
use crate::live::Live;

/// Stops (`false`) or restarts (`true`) the side chain mining each transaction as it
/// arrives; restarting also mines what waited in the pool.
fn side_automine(live: &Live, on: bool) {
    live.sb.set_mining(true, on);
    if on {
        live.sb.mine(true);
    }
}

fn u256(v: &Value) -> U256 {
    v.as_str()
        .unwrap_or_else(|| panic!("not a decimal string: {v}"))
        .parse()
        .expect("u256")
}

/// The journal's record of flow `tx_id` (`history TXID --json`).
fn flow(live: &Live, tx_id: &str) -> Value {
    live.ok(&["history", tx_id])["flow"].clone()
}

#[test]
fn a_swap_resumed_after_its_timeout_completes_only_with_its_st_credit() {
    let live = Live::new("follow_swap");
    let info = &live.sb.info;
    let credit = units(2, info.main.decimals) * units(info.ratio.st, info.side.decimals)
        / units(info.ratio.mt, info.main.decimals);
    let st0 = live.balance(true, live.dev);
    // The relayer's ST mint waits in the side chain's pool: no credit until it mines.
    side_automine(&live, false);
    let err = live.fails(
        &[
            "swap",
            "--from",
            "dev",
            "--amount",
            "2",
            "--wait",
            "--yes",
            "--timeout",
            "1",
        ],
        8,
    );
    let tx_id = live.ok(&["history"])[0]["txId"]
        .as_str()
        .expect("txId")
        .to_owned();
    assert!(
        err.contains(&format!("`bridgectl resume {tx_id}` continues waiting")),
        "{err}"
    );
    assert_eq!(flow(&live, &tx_id)["state"], "submitted");

    // `status` sees the MT transfer mined, the credit not yet: pending is no error.
    let status = live.ok(&["status", &tx_id]);
    assert_eq!(status["state"], "submitted", "{status:#}");
    assert_eq!(status["endedBy"], "stCredit", "{status:#}");
    assert_eq!(u256(&status["stBefore"]), st0, "{status:#}");
    assert_eq!(status["credit"], Value::Null, "{status:#}");
    assert_eq!(status["receipt"]["success"], true, "{status:#}");

    // `resume` resends the MT transfer (already known) and waits for the credit: still
    // waiting after it has looked for the credit on the side chain twice (two reads of
    // its head through the node stub: with the mint unmined there is no block after the
    // one the swap began at, so no logs to read yet).
    let looked = || {
        live.node_taps[1]
            .requests()
            .iter()
            .filter(|r| r.contains("eth_blockNumber"))
            .count()
    };
    let looked0 = looked();
    let mut c = live.cmd();
    c.args(["--json", "resume", &tx_id, "--timeout", "60"]);
    let mut resume = c.spawn_with_stdin(b"");
    let deadline = Instant::now() + Duration::from_secs(60);
    while looked() < looked0 + 2 {
        assert!(
            resume.try_wait().expect("try_wait").is_none(),
            "resume ended before the ST credit was on chain"
        );
        assert!(
            Instant::now() < deadline,
            "resume never looked for the credit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        resume.try_wait().expect("try_wait").is_none(),
        "resume ended before the ST credit was on chain"
    );
    assert_eq!(live.balance(true, live.dev), st0, "no credit yet");
    assert_eq!(flow(&live, &tx_id)["state"], "submitted");
    side_automine(&live, true);
    let resumed = live.finished_ok(resume);
    assert_eq!(resumed["state"], "completed", "{resumed:#}");
    // The balance resume saw when it called the swap completed has the credit in it.
    let observed = &resumed["observed"];
    assert_eq!(u256(&observed["stBefore"]), st0, "{resumed:#}");
    assert_eq!(u256(&observed["credit"]["amount"]), credit, "{resumed:#}");
    assert!(live.balance(true, live.dev) >= st0 + credit);
    assert_eq!(flow(&live, &tx_id)["state"], "completed");
}

/// A redeem of 1 ST written as a sign request (`action exec --out`) and signed offline
/// at the next nonce: (its txId, the request, the bundle).
fn signed_redeem(live: &Live, offline: &crate::util::Dir, name: &str) -> (String, String, String) {
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let req = live.dir.join(format!("{name}-request.json"));
    let req = req.to_str().expect("utf8").to_owned();
    let out = live.ok(&[
        "action",
        "exec",
        "redeem",
        "--from",
        &live.dev.to_string(),
        "--input",
        &format!("_amount={amount}"),
        "--function",
        "redeem",
        "--out",
        &req,
    ]);
    let signed = live.dir.join(format!("{name}-signed.json"));
    let signed = signed.to_str().expect("utf8").to_owned();
    let nonce = live.nonce(true, live.dev).to_string();
    let mut sign = offline.command();
    sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
        .args(["sign", &req, "--yes", "--nonce", &nonce, "--out", &signed]);
    let o = sign.output();
    live.check_secrets(&o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (out["txId"].as_str().expect("txId").to_owned(), req, signed)
}

#[test]
fn an_air_gapped_redeem_is_followed_by_status_and_by_submit_wait() {
    let live = Live::shared("follow_airgap");
    let offline = crate::flow::offline_signer(&live, "follow_offline");

    // Submitted without waiting: `submitted`, whatever happens on chain meanwhile.
    let (tx_id, req, signed) = signed_redeem(&live, &offline, "first");
    let sub = live.ok(&["submit", &signed, "--request", &req]);
    assert_eq!(sub["txId"], tx_id.as_str());
    assert_eq!(sub["state"], "submitted", "{sub:#}");
    assert!(sub["observed"].is_null(), "{sub:#}");
    let hash = sub["txHash"].as_str().expect("hash").to_owned();
    assert_eq!(flow(&live, &tx_id)["state"], "submitted");

    // `status TXID` asks the node and operation 5 until the redemption is over; every
    // look before that is a pending flow, not an error.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let s = live.ok(&["status", &tx_id]);
        assert_eq!(s["txId"], tx_id.as_str(), "{s:#}");
        assert_eq!(s["endedBy"], "redemption", "{s:#}");
        // Observed, then final on its chain (its receipt, and the payout the record
        // names on the main chain): `confirming` on the way.
        if s["state"] != "submitted" && s["state"] != "confirming" {
            break s;
        }
        assert!(Instant::now() < deadline, "never completed: {s:#}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(status["state"], "completed", "{status:#}");
    assert!(
        ["submitted", "confirming"].contains(&status["previousState"].as_str().unwrap_or("")),
        "{status:#}"
    );
    assert!(
        status["facts"]
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["final"] == true)),
        "{status:#}"
    );
    assert_eq!(status["redemption"]["status"], "completed", "{status:#}");
    assert_eq!(status["receipt"]["success"], true, "{status:#}");
    let journaled = flow(&live, &tx_id);
    assert_eq!(journaled["state"], "completed");
    assert_eq!(journaled["result"]["status"], "completed", "{journaled:#}");

    // By hash and by a prefix of the txId: the same flow, over, left as it is.
    let by_hash = live.ok(&["status", &hash]);
    assert_eq!(by_hash["txId"], tx_id.as_str(), "{by_hash:#}");
    assert_eq!(by_hash["state"], "completed");
    assert_eq!(by_hash["previousState"], "completed");
    let by_prefix = live.ok(&["status", &tx_id[..13]]);
    assert_eq!(by_prefix["txId"], tx_id.as_str(), "{by_prefix:#}");
    let mut c = live.cmd();
    c.args(["status", &hash]);
    let text = String::from_utf8_lossy(&live.run_ok(c).stdout).into_owned();
    assert!(
        text.contains(&format!("flow {tx_id} action: completed")),
        "{text}"
    );
    assert!(text.contains("redemption completed"), "{text}");

    // A hash nobody knows: asked, printed, and the not-found exit.
    let unknown = format!("0x{}", "ab".repeat(32));
    let err = live.fails(&["status", &unknown], 6);
    assert!(err.contains(&unknown), "{err}");

    // `submit --wait`: waits for the redemption, and ends completed.
    let (tx_id, req, signed) = signed_redeem(&live, &offline, "second");
    let sub = live.ok(&["submit", &signed, "--request", &req, "--wait"]);
    assert_eq!(sub["state"], "completed", "{sub:#}");
    assert_eq!(
        sub["observed"]["redemption"]["status"], "completed",
        "{sub:#}"
    );
    assert_eq!(flow(&live, &tx_id)["state"], "completed");
}

#[test]
fn action_exec_wait_of_a_redeem_ends_with_its_redemption() {
    let live = Live::shared("follow_action");
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let out = live.ok(&[
        "action",
        "exec",
        "redeem",
        "--from",
        "dev",
        "--input",
        &format!("_amount={amount}"),
        "--function",
        "redeem",
        "--yes",
        "--wait",
    ]);
    assert_eq!(out["kind"], "eoa", "{out:#}");
    assert_eq!(out["state"], "completed", "{out:#}");
    assert_eq!(out["observed"]["endedBy"], "redemption", "{out:#}");
    assert_eq!(
        out["observed"]["redemption"]["status"], "completed",
        "{out:#}"
    );
    let tx_id = out["txId"].as_str().expect("txId");
    assert_eq!(flow(&live, tx_id)["state"], "completed");
    assert!(live.mined(true, out["txHash"].as_str().expect("hash")));
}

/// A nonce held by a flow whose sign request waits for the offline signer is named as
/// such: the way on is to sign it offline and submit the bundle (resume, replace and
/// cancel have nothing to work with), and the hint says so, not the three.
#[test]
fn a_nonce_held_by_a_sign_request_names_the_offline_way_on() {
    let live = Live::shared("held_by_request");
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let req = live.dir.join("held-request.json");
    let out = live.ok(&[
        "action",
        "exec",
        "redeem",
        "--from",
        &live.dev.to_string(),
        "--input",
        &format!("_amount={amount}"),
        "--function",
        "redeem",
        "--out",
        req.to_str().expect("utf8"),
    ]);
    let tx_id = out["txId"].as_str().expect("txId").to_owned();
    let err = live.fails(&["redeem", "--from", "dev", "--amount", "1", "--yes"], 3);
    assert!(
        err.contains(&format!("held by flow {tx_id}, whose sign request waits")),
        "{err}"
    );
    assert!(err.contains("`bridgectl sign`"), "{err}");
    assert!(!err.contains("bridgectl resume"), "{err}");
}

/// Text for people in token units with their symbol: a redeem says what it pays at the
/// peg before signing and the MT paid by its payout after; a swap's progress and its
/// `status` name its credit in ST (base units stay in `--json`).
#[test]
fn people_read_amounts_in_tokens() {
    let live = Live::shared("tokens_for_people");
    crate::ends::with_peg(&live);
    let mut c = live.cmd();
    c.args(["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    let out = live.run_ok(c);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let r = &live.sb.info.ratio;
    assert_eq!(r.mt, r.st, "the shared sandbox's peg is 1:1");
    assert!(stderr.contains("(pays 1 MT at the peg)"), "{stderr}");
    assert!(stdout.contains("MT paid: 1 MT by payout 0x"), "{stdout}");
    let mut c = live.cmd();
    c.args(["swap", "--from", "dev", "--amount", "1", "--yes", "--wait"]);
    let out = live.run_ok(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let credit = "1 ST";
    assert!(
        stderr.contains(&format!("» credited {credit} by 0x")),
        "{stderr}"
    );
    let tx_id = live.ok(&["history"])[0]["txId"]
        .as_str()
        .expect("txId")
        .to_owned();
    let mut c = live.cmd();
    c.args(["status", &tx_id]);
    let text = String::from_utf8_lossy(&live.run_ok(c).stdout).into_owned();
    assert!(
        text.contains(&format!("ST credit of {credit}: by 0x")),
        "{text}"
    );
    assert!(!text.contains("base units"), "{text}");
}
